"""S-BSVM on a Dask array, and so on a ``dask.distributed`` cluster: every sum over rows is a Dask
reduction over the array's blocks.

**Why reductions, not dask-ml's ``Incremental``.** ``Incremental`` calls ``partial_fit`` on one block
after another, shipping the model from worker to worker: the blocks are visited in sequence, so a
cluster of W workers is no faster than one, and the result depends on the block order. The S-BSVM
updates, by contrast, need the data only through sums over rows (docs/sbsvm.md sec. 4, engine docstring):

    eta1_hat = sum_i phi_i y_i (1 + alpha_i^-1/2),       P_hat = I + sum_i alpha_i^-1/2 phi_i^T phi_i,
    ELBO     = sum_i [-1 + y_i a_i - sqrt(B_i)] - KL,    d ELBO / d theta = sum_i (row terms) + KL term,

with phi_i the whitened kappa_i. Each block reduces to m + m^2 + 1 numbers, computed where the block
lives and added up in a tree (only those numbers cross the network), so a step costs one parallel pass
over the data and its result does not depend on how the rows are split. The full-data step with rho = 1
is exact coordinate ascent in q(u) (the engine's full-batch mode), so the distributed fit is the
in-memory full-batch fit, up to the order of floating-point additions.

``DaskReduceEngine`` is that engine; it is what ``SBSVM.fit`` uses for a Dask array when a step sees
all the data (``batch_size >= n``). Smaller batches stream the blocks through minibatch steps on the
client instead (``dask_fit.DaskStreamEngine``): fewer passes, but one machine's CPU. On a cluster, pass
``batch_size`` of at least n and call ``X.persist()`` first if the workers' memory holds X, so the
passes do not re-read it.
"""

from __future__ import annotations

import numpy as np

from ..data import _reject_nonfinite
from . import elbo as E
from .engine import THETA_BOUNDS, SVIEngine, SVIState
from .geometry import features, sparse_geometry
from .schedules import adam_ascent


def block_stats(Xb, yb, params):
    """The sums one block contributes (runs on a worker). ``params = (what, geom, post)``:
    "step": [phi^T y (1 + w), phi^T diag(w) phi (raveled), sum of data terms], w = B^-1/2;
    "elbo": [sum of data terms];  "hyper": the block's d ELBO / d theta with the KL term included once."""
    what, geom, post = params
    Xb = np.asarray(Xb, dtype=np.float64)
    yb = np.asarray(yb, dtype=np.float64).ravel()
    _reject_nonfinite(Xb)
    phi, t, Knm = features(geom, Xb)
    if what == "hyper":
        return E.hyper_gradient(geom, Xb, yb, phi, Knm, t, post, 1.0)
    a, c = E.marginals(phi, post)
    B = E.b_terms(yb, a, c, t)
    terms = np.array([np.sum(-1.0 + yb * a - np.sqrt(B))])
    if what == "elbo":
        return terms
    w = 1.0 / np.sqrt(B)
    return np.concatenate([phi.T @ (yb * (1.0 + w)), (phi.T @ (w[:, None] * phi)).ravel(), terms])


def _add(a, b):
    return a + b


def tree_sum(X, y, params):
    """sum over blocks of ``block_stats``: one pass, a binary tree of additions (dask.delayed), computed
    on whatever scheduler is active (a dask.distributed Client if one is)."""
    import dask

    fn = dask.delayed(block_stats, pure=True)
    add = dask.delayed(_add, pure=True)
    shared = dask.delayed(params, traverse=False)  # one graph key: shipped to each worker once
    parts = [fn(xb, yb, shared) for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel())]
    while len(parts) > 1:
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    (total,) = dask.compute(parts[0])
    return total


class DaskReduceEngine(SVIEngine):
    """The engine's full-batch step (rho = 1 under learning_rate="auto") with the sums over rows
    computed as Dask reductions (module docstring). ``X`` is a ``dask_fit.DaskRows`` proxy."""

    def __init__(self, X, y, geom, config, rng):
        super().__init__(X, y, geom, config, rng)  # uses only n, and draws the same rng as in memory
        self.dX, self.dy = X.X, X.y_pm
        self.n_blocks = len(X.X.chunks[0])

    def _batch(self, rng):
        return None

    def _natural_gradient(self, state: SVIState, idx):
        post = E.moments(state.eta1, state.P)
        p = state.eta1.size
        total = tree_sum(self.dX, self.dy, ("step", state.geom, post))
        eta1_hat = total[:p]
        P_hat = total[p:p + p * p].reshape(p, p)
        P_hat[np.diag_indices_from(P_hat)] += 1.0
        g = np.concatenate([eta1_hat - state.eta1, (state.P - P_hat).ravel() * 0.5])
        return g, eta1_hat, P_hat, None, float(total[-1])

    def _hyper_gradient(self, state: SVIState, batch=None) -> np.ndarray:
        """d (ELBO + log p(theta)) / d theta at the state's q(u), as one reduction over the blocks."""
        geom = state.geom
        post = E.moments(state.eta1, state.P)
        grad = tree_sum(self.dX, self.dy, ("hyper", geom, post))
        # every block's gradient carries the KL term once; keep it once in all
        p, d = post.m.size, geom.inducing.shape[1]
        kl_only = E.hyper_gradient(geom, np.zeros((0, d)), np.zeros(0), np.zeros((0, p)), np.zeros((0, p)),
                                   np.zeros(0), post, 1.0)
        grad = grad - (self.n_blocks - 1) * kl_only
        prior_mean = getattr(self.config, "prior_mean", None)  # a prior on the log-hyperparameters
        if prior_mean is not None:
            grad = grad - (geom.kernel.theta - prior_mean) / np.asarray(self.config.prior_std) ** 2
        return grad

    def _hyper_step(self, state: SVIState, batch, grad=None) -> SVIState:
        geom = state.geom
        if geom.kind == "linear":
            return super()._hyper_step(state, batch)  # needs q only, no data
        if grad is None:
            grad = self._hyper_gradient(state)
        # the rest as in SVIEngine._hyper_step: Adam step, then q(u) re-expressed in the new coordinates
        step, adam = adam_ascent(state.adam, grad, self.config.hyper_lr)
        bounds = getattr(self.config, "theta_bounds", None) or THETA_BOUNDS
        theta = np.clip(geom.kernel.theta + step, *bounds)
        new = sparse_geometry(geom.kernel.with_theta(theta), geom.inducing)
        Q = geom.Linv @ new.L
        P = Q.T @ state.P @ Q
        return state._replace(eta1=Q.T @ state.eta1, P=0.5 * (P + P.T), geom=new, adam=adam)

    def elbo(self, state: SVIState, chunk: int = 20000) -> float:
        post = E.moments(state.eta1, state.P)
        total = tree_sum(self.dX, self.dy, ("elbo", state.geom, post))
        return float(total[0]) - E.kl_to_standard_normal(post)
