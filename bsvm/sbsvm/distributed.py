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

``DaskReduceEngine`` is that engine. ``SBSVM.fit`` uses it for a Dask array's default stage 2 up to
30,000 rows (SQUAREM cycles, five reductions each: the weights w stay on the workers, each block
recomputing them from the m-dimensional q's) and for one-stage fits with ``batch_size >= n``. Beyond
30,000 rows the default stage 2 streams the blocks through minibatch steps on the client instead
(``dask_fit.DaskStreamEngine``): one machine's CPU, but far less work even against a cluster: SVI reaches
the tolerance in about 150 minibatches of 2000 rows (a third of an epoch at 1M rows, the blocks it
visits sent to the client), where exact cycles take 7-15 x 5 passes over every row. A ``batch_size`` of
at least n keeps every step a reduction (one stage, hyperparameters learned jointly). On a cluster, call
``X.persist()`` first if the workers' memory holds X, so the passes do not re-read it.
"""

from __future__ import annotations

import numpy as np

from ..data import _reject_nonfinite
from . import elbo as E
from .engine import StepInfo, SVIEngine, SVIState
from .geometry import features, sparse_geometry
from .schedules import adam_ascent


def _weights(yb, phi, t, post):
    """w = E_q[1 / lambda] = B^-1/2 at q (eq. 11) and the rows' ELBO data terms."""
    a, c = E.marginals(phi, post)
    B = E.b_terms(yb, a, c, t)
    return 1.0 / np.sqrt(B), -1.0 + yb * a - np.sqrt(B)


def _q_sums(yb, phi, w):
    """A block's share of the exact q-update given the weights w: [phi^T y (1 + w), phi^T diag(w) phi]."""
    A = phi * np.sqrt(w)[:, None]
    return np.concatenate([phi.T @ (yb * (1.0 + w)), (A.T @ A).ravel()])


def block_stats(Xb, yb, params):
    """The sums one block contributes (runs on a worker). ``params = (what, geom, post)``:
    "step": [phi^T y (1 + w), phi^T diag(w) phi (raveled), sum of data terms], w = B^-1/2;
    "elbo": [sum of data terms];  "hyper": the block's d ELBO / d theta with the KL term included once.
    A SQUAREM cycle (``DaskReduceEngine._squarem_step``) passes ``post`` = (q0, q1, q2[, alpha, floor])
    with w_k = w(q_k): "sq_norms": [|w1 - w0|^2, |w2 - 2 w1 + w0|^2, sum of q2's data terms, max w2];
    "sq_q": the q-update sums at the extrapolated w = max(w0 - 2 alpha r + alpha^2 v, floor)."""
    what, geom, post = params
    Xb = np.asarray(Xb, dtype=np.float64)
    yb = np.asarray(yb, dtype=np.float64).ravel()
    _reject_nonfinite(Xb)
    phi, t, Knm = features(geom, Xb)
    if what == "hyper":
        return E.hyper_gradient(geom, Xb, yb, phi, Knm, t, post, 1.0)
    if what in ("sq_norms", "sq_q"):
        (w0, _), (w1, _), (w2, d2) = (_weights(yb, phi, t, q) for q in post[:3])
        r, v = w1 - w0, w2 - 2.0 * w1 + w0
        if what == "sq_norms":
            return np.array([r @ r, v @ v, np.sum(d2), np.max(w2, initial=0.0)])
        alpha, floor = post[3], post[4]
        return _q_sums(yb, phi, np.maximum(w0 - 2.0 * alpha * r + alpha**2 * v, floor))
    w, terms = _weights(yb, phi, t, post)
    terms = np.array([np.sum(terms)])
    if what == "elbo":
        return terms
    return np.concatenate([_q_sums(yb, phi, w), terms])


def _add(a, b):
    return a + b


def _add_max(a, b):
    """Sums of all entries but the last, the maximum of the last ("sq_norms")."""
    return np.concatenate([a[:-1] + b[:-1], [max(a[-1], b[-1])]])


def tree_sum(X, y, params, combine=_add):
    """sum over blocks of ``block_stats``: one pass, a binary tree of additions (dask.delayed), computed
    on whatever scheduler is active (a dask.distributed Client if one is)."""
    import dask

    fn = dask.delayed(block_stats, pure=True)
    add = dask.delayed(combine, pure=True)
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
        # the same prior as in memory (it had the normal prior only: kernel="ard" lost its shrinkage)
        return self._with_log_prior(grad, geom.kernel.theta)

    def _hyper_step(self, state: SVIState, batch, grad=None) -> SVIState:
        geom = state.geom
        if geom.kind == "linear":
            return super()._hyper_step(state, batch)  # needs q only, no data
        if grad is None:
            grad = self._hyper_gradient(state)
        # the rest as in SVIEngine._hyper_step: Adam step, then q(u) re-expressed in the new coordinates
        step, adam = adam_ascent(state.adam, grad, self.config.hyper_lr)
        # bounds relative to the starting kernel, as in memory (absolute ones pinned the length scale of
        # unstandardised inputs x 1e5 at 1e4: test error .51 against .03, a review)
        theta = np.clip(geom.kernel.theta + step, *self.theta_bounds)
        new = sparse_geometry(geom.kernel.with_theta(theta), geom.inducing)
        Q = geom.Linv @ new.L
        P = Q.T @ state.P @ Q
        return state._replace(eta1=Q.T @ state.eta1, P=0.5 * (P + P.T), geom=new, adam=adam)

    def _q_from_sums(self, state: SVIState, total) -> SVIState:
        p = state.eta1.size
        P = total[p:p + p * p].reshape(p, p).copy()
        P[np.diag_indices_from(P)] += 1.0
        return state._replace(eta1=np.array(total[:p]), P=P)

    def _squarem_step(self, state: SVIState) -> tuple[SVIState, StepInfo]:
        """``SVIEngine._squarem_step`` (one SQUAREM cycle of coordinate ascent in the weights w) with the
        weights never gathered: each w_k is a function of q_k, so a block recomputes w0, w1, w2 from the
        three m-dimensional q's and only sums leave it. Five passes (the in-memory cycle's three, plus
        the extrapolation's norms and its q), the same arithmetic, so the same cycle up to rounding."""
        geom, kl = state.geom, E.kl_to_standard_normal
        post0 = E.moments(state.eta1, state.P)
        first = tree_sum(self.dX, self.dy, ("step", geom, post0))
        data0 = float(first[-1])
        q1 = self._q_from_sums(state, first)
        post1 = E.moments(q1.eta1, q1.P)
        second = tree_sum(self.dX, self.dy, ("step", geom, post1))
        q2 = self._q_from_sums(state, second)
        post2 = E.moments(q2.eta1, q2.P)
        rr, vv, data2, w2max = tree_sum(self.dX, self.dy, ("sq_norms", geom, (post0, post1, post2)),
                                        combine=_add_max)
        f2 = data2 - kl(post2)
        nv = np.sqrt(vv)
        alpha = min(-np.sqrt(rr) / nv, -1.0) if nv > 0 else -1.0
        new, f_new = q2, f2
        if alpha < -1.0:
            sums = tree_sum(self.dX, self.dy, ("sq_q", geom, (post0, post1, post2, alpha, 1e-12 * w2max)))
            cand = self._q_from_sums(state, sums)
            try:
                post_c = E.moments(cand.eta1, cand.P)
                fx = float(tree_sum(self.dX, self.dy, ("elbo", geom, post_c))[0]) - kl(post_c)
            except np.linalg.LinAlgError:
                fx = -np.inf
            if np.isfinite(fx) and fx >= f2:
                new, f_new = cand, fx
        new = new._replace(t=state.t + 1)
        self._elbo_at = (new.eta1, new.P, new.geom, f_new)  # the stopping rule asks for it next
        return new, StepInfo(1.0, data0, False)

    def elbo(self, state: SVIState, chunk: int = 20000) -> float:
        memo = getattr(self, "_elbo_at", None)
        if memo is not None and memo[0] is state.eta1 and memo[1] is state.P and memo[2] is state.geom:
            return memo[3]
        post = E.moments(state.eta1, state.P)
        total = tree_sum(self.dX, self.dy, ("elbo", state.geom, post))
        return float(total[0]) - E.kl_to_standard_normal(post)
