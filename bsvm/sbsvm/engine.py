"""The S-BSVM inference engine: ``init`` and ``step`` over a small immutable state (Algorithm 1).

One step draws a minibatch S, sets alpha_i = B_i for i in S (eq. 11), forms the natural-gradient targets
with the minibatch scale s = n / |S| (docs/sbsvm.md sec. 4; the paper omits s)

    eta1_hat = s phi_S^T Y_S (1 + alpha_S^-1/2),
    P_hat = -2 eta2_hat = I + s phi_S^T diag(alpha_S^-1/2) phi_S

(in whitened coordinates, where Kmm^-1 becomes I; see ``geometry``) and moves
eta <- (1 - rho) eta + rho eta_hat.
Every ``hyper_every`` steps the kernel hyperparameters take an Adam step up the gradient of
ELBO + log p(theta) (sec. 4.3; p(theta) an optional normal prior on the log-hyperparameters, the guard
against ML-II over-fitting the unnormalised hinge pseudo-likelihood) holding q(u) fixed, after which q
is re-expressed in the new whitened coordinates. The gradient is taken at the q(u) the step started
from, with the minibatch features the natural-gradient step already computed. The batch variant is
the same step with all points as inducing inputs, the full data as the batch and rho = 1 (exact
coordinate ascent, sec. 4.1); the linear variant uses primal features (sec. 4.5) and an exact
empirical-Bayes update of the prior variances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..data import column_scales
from ..kernels import accepts_sq_dist, sq_dist
from . import elbo as E
from .geometry import Geometry, features, linear_geometry, sparse_geometry
from .schedules import Adam, AdaptiveRate, adam_ascent, adam_init, adaptive_init, adaptive_step, robbins_monro

THETA_BOUNDS = (np.log(1e-3), np.log(1e4))


class SVIState(NamedTuple):
    t: int                      # steps taken
    eta1: np.ndarray            # P m, whitened
    P: np.ndarray               # precision of q(v)
    geom: Geometry              # kernel, inducing inputs and their Cholesky factor
    rate: AdaptiveRate | None   # adaptive learning-rate state (Ranganath et al.)
    adam: Adam | None           # hyperparameter optimiser state


class StepInfo(NamedTuple):
    rho: float
    batch_data_term: float      # minibatch estimate (scaled to n) of the ELBO's data sum before the step
    hyper_step: bool


@dataclass(frozen=True)
class SVIConfig:
    batch_size: int
    schedule: str = "robbins_monro"     # "robbins_monro" | "adaptive" | "constant"
    rho0: float = 1.0                   # constant rate
    tau: float = 1.0                    # Robbins-Monro delay
    kappa: float = 0.6                  # Robbins-Monro forgetting rate
    optimize_hyper: bool = True
    hyper_every: int = 5
    hyper_lr: float = 0.05
    elbo_batch_size: int | None = 2000   # rows of the fixed subset the reported ELBO is computed on
    prior_mean: np.ndarray | None = None  # normal prior on the log-hyperparameters (None: no prior)
    prior_std: float | np.ndarray = np.inf
    theta_bounds: tuple | None = None     # (lower, upper) for the log-hyperparameters; None: THETA_BOUNDS
    group_idx: np.ndarray | None = None   # log-hyperparameters shrunk towards their own mean (ARD scales)
    group_std: float = np.inf             # ... by a normal prior on their deviations with this std
    accelerate: bool = False              # SQUAREM cycles for full-batch coordinate ascent in q alone


class SVIEngine:
    """Holds the data and configuration; ``init``/``step`` are pure in the state (plus an RNG)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, geom: Geometry, config: SVIConfig, rng):
        self.X, self.y, self.config = X, y, config
        self.n = X.shape[0]
        self.full_batch = config.batch_size >= self.n
        nb = config.elbo_batch_size
        # A fixed subset keeps successive ELBO values comparable, so they can drive the convergence test.
        self.elbo_idx = (None if (nb is None or nb >= self.n)
                         else np.sort(rng.choice(self.n, nb, replace=False)))
        self._geom0 = geom
        # Hyperparameter bounds relative to the starting kernel (whose median-heuristic length scale
        # follows the data's scale), so that rescaled inputs are not pinned at an absolute cap; the linear
        # variant's weight prior variance is bounded relative to 1 / (mean feature variance).
        theta0 = geom.kernel.theta if geom.kind == "sparse" else np.zeros(0)
        self.theta_bounds = (config.theta_bounds if config.theta_bounds is not None
                             else (theta0 + THETA_BOUNDS[0], theta0 + THETA_BOUNDS[1]))
        self.weight_var_scale = 1.0  # (rows held out of core, e.g. Dask: bounds relative to unit scale)
        if geom.kind == "linear" and isinstance(X, np.ndarray) and X.size:
            feature_var = float(np.mean(column_scales(X) ** 2))
            if np.isfinite(feature_var) and feature_var > 0:
                self.weight_var_scale = 1.0 / feature_var
        self._cache = (None, None)  # features of the full data for the current geometry (full-batch runs)
        self._memo = None           # q's moments and marginals at the last full-batch state seen
        self._sq = (None, None)     # squared distances to the inducing inputs (full batch, see below)
        # SQUAREM cycles replace single steps when every step is exact coordinate ascent in q alone.
        self.accelerated = bool(config.accelerate and self.full_batch and not config.optimize_hyper
                                and config.schedule == "constant" and config.rho0 == 1.0)

    # -- features, cached when every step uses all the data (batch variant: an n x n matrix per step)
    def _full_features(self, geom):
        if self._cache[0] is not geom:
            self._cache = (geom, features(geom, self.X, sq=self._full_sq_dist(geom)))
        return self._cache[1]

    def _full_sq_dist(self, geom):
        """Squared distances from the rows to the inducing inputs, kept while hyperparameter steps change
        the kernel every step but not its inputs (full batch, RBF kernels): each step then skips the
        distances and the hyperparameter gradient a log."""
        if not (self.config.optimize_hyper and geom.kind == "sparse" and accepts_sq_dist(geom.kernel)):
            return None
        if self._sq[0] is not geom.inducing:
            self._sq = (geom.inducing, sq_dist(self.X, geom.inducing))
        return self._sq[1]

    def init(self, rng=None) -> SVIState:
        p = self._geom0.size
        adam = adam_init(self._geom0.kernel.theta.size) if self._geom0.kind == "sparse" else None
        state = SVIState(0, np.zeros(p), np.eye(p), self._geom0, None, adam)
        if self.config.schedule == "adaptive":
            # Seed the running averages with natural gradients from a few minibatches at the prior.
            grads = [self._natural_gradient(state, self._batch(rng))[0] for _ in range(5)]
            state = state._replace(rate=adaptive_init(grads))
        return state

    def _batch(self, rng):
        if self.full_batch:
            return None
        return rng.integers(0, self.n, self.config.batch_size)

    def _posterior_and_marginals(self, state: SVIState, phi):
        """q's moments and the marginals (a, c) of the full-data features at ``state`` (full-batch runs).

        The stopping rule's ELBO at a state and the next step from that state need the same n x m x m
        product; the last one is kept (keyed by the identity of the state's arrays, which are never
        modified in place) so that it is computed once."""
        memo = self._memo
        if memo is not None and memo[0] is state.eta1 and memo[1] is state.P and memo[2] is state.geom:
            return memo[3], memo[4]
        post = E.moments(state.eta1, state.P)
        marg = E.marginals(phi, post)
        self._memo = (state.eta1, state.P, state.geom, post, marg)
        return post, marg

    def _natural_gradient(self, state: SVIState, idx):
        if idx is None:
            X, y = self.X, self.y
            phi, t, Knm = self._full_features(state.geom)
            post, (a, c) = self._posterior_and_marginals(state, phi)
        else:
            X, y = self.X[idx], self.y[idx]
            phi, t, Knm = features(state.geom, X)
            post = E.moments(state.eta1, state.P)
            a, c = E.marginals(phi, post)
        s = self.n / X.shape[0]
        B = E.b_terms(y, a, c, t)
        w = 1.0 / np.sqrt(B)  # E_q[1 / lambda_i] with alpha_i = B_i
        eta1_hat = s * (phi.T @ (y * (1.0 + w)))
        # phi^T diag(w) phi as A^T A with A = diag(sqrt w) phi: numpy hands A.T @ A to BLAS syrk (half the
        # flops of a general product, and exactly symmetric).
        A = phi * np.sqrt(w)[:, None]
        P_hat = s * (A.T @ A)
        P_hat[np.diag_indices_from(P_hat)] += 1.0
        g = np.concatenate([eta1_hat - state.eta1, (state.P - P_hat).ravel() * 0.5])
        data_term = s * float(np.sum(-1.0 + y * a - np.sqrt(B)))
        # The hyperparameter gradient's C = phi^T diag(g) phi with g = -s w / 2 is -(P_hat - I) / 2.
        return g, eta1_hat, P_hat, (X, y, phi, t, Knm, s, post, (a, c), P_hat), data_term

    def _weights_at(self, state: SVIState):
        """w = E_q[1 / lambda] = B^-1/2 at q (alpha = B, eq. 11), the ELBO's data sum and the ELBO at q."""
        phi, t, _ = self._full_features(state.geom)
        post, (a, c) = self._posterior_and_marginals(state, phi)
        B = E.b_terms(self.y, a, c, t)
        data = float(np.sum(-1.0 + self.y * a - np.sqrt(B)))
        return 1.0 / np.sqrt(B), data, data - E.kl_to_standard_normal(post)

    def _q_of_weights(self, state: SVIState, w) -> SVIState:
        """The exact q-update given the weights w: eta1 = phi^T (y (1 + w)), P = I + phi^T diag(w) phi."""
        phi = self._full_features(state.geom)[0]
        A = phi * np.sqrt(w)[:, None]
        P = A.T @ A
        P[np.diag_indices_from(P)] += 1.0
        return state._replace(eta1=phi.T @ (self.y * (1.0 + w)), P=P)

    def _squarem_step(self, state: SVIState) -> tuple[SVIState, StepInfo]:
        """One SQUAREM cycle (Varadhan & Roland 2008, scheme S3) of coordinate ascent, written as the map
        of the weights w = E[1 / lambda]: w -> q(w) -> w' = B(q(w))^-1/2.

        Coordinate ascent in q and alpha converges linearly, slowly where many points sit near the margin
        (ringnorm 20k: about 100 full passes). SQUAREM extrapolates along the last two updates,
        w' = w0 - 2 a r + a^2 v with r = G(w0) - w0, v = G(G(w0)) - 2 G(w0) + w0, a = -|r| / |v| <= -1;
        it has the same fixed points. Extrapolating the weights (clipped to stay positive) rather than
        q keeps P = I + phi^T diag(w) phi positive definite. Safeguard: the cycle keeps q(w') only if
        its ELBO is at least that of q(G(w0)), the plain two steps; otherwise it returns those."""
        w0, data0, _ = self._weights_at(state)
        q1 = self._q_of_weights(state, w0)
        w1, _, f1 = self._weights_at(q1)
        q2 = self._q_of_weights(state, w1)
        w2, _, f2 = self._weights_at(q2)
        r, v = w1 - w0, w2 - 2.0 * w1 + w0
        nv = np.sqrt(v @ v)
        alpha = min(-np.sqrt(r @ r) / nv, -1.0) if nv > 0 else -1.0
        new = q2
        if alpha < -1.0:
            w = np.maximum(w0 - 2.0 * alpha * r + alpha**2 * v, 1e-12 * w2.max())
            cand = self._q_of_weights(state, w)
            try:
                fx = self._weights_at(cand)[2]
            except np.linalg.LinAlgError:
                fx = -np.inf
            if np.isfinite(fx) and fx >= f2:
                new = cand
        return new._replace(t=state.t + 1), StepInfo(1.0, data0, False)

    def step(self, state: SVIState, rng) -> tuple[SVIState, StepInfo]:
        cfg = self.config
        if self.accelerated:
            return self._squarem_step(state)
        g, eta1_hat, P_hat, batch, data_term = self._natural_gradient(state, self._batch(rng))
        rate = state.rate
        if cfg.schedule == "adaptive":
            rho, rate = adaptive_step(rate, g)
        elif cfg.schedule == "constant":
            rho = cfg.rho0
        else:
            rho = robbins_monro(state.t, cfg.tau, cfg.kappa)
        hyper = cfg.optimize_hyper and (state.t + 1) % cfg.hyper_every == 0
        # The hyperparameter gradient at the q the step started from (alternating ascent: both blocks
        # move from the same point), reusing this minibatch's features and marginals.
        grad = self._hyper_gradient(state, batch) if hyper and state.geom.kind == "sparse" else None
        eta1 = (1.0 - rho) * state.eta1 + rho * eta1_hat
        P = (1.0 - rho) * state.P + rho * P_hat
        state = SVIState(state.t + 1, eta1, P, state.geom, rate, state.adam)
        if hyper:
            state = self._hyper_step(state, batch, grad)
        return state, StepInfo(rho, data_term, hyper)

    def _hyper_gradient(self, state: SVIState, batch) -> np.ndarray:
        """Gradient of ELBO + log p(theta) w.r.t. the log-hyperparameters at the state's q(u)."""
        X, y, phi, t, Knm, s, post, marg = batch[:8]
        C = None
        if len(batch) > 8:  # the natural-gradient step's P_hat at the same q: C = -(P_hat - I) / 2
            C = -0.5 * batch[8]
            C[np.diag_indices_from(C)] += 0.5
        sq = self._full_sq_dist(state.geom) if X is self.X else None
        grad = E.hyper_gradient(state.geom, X, y, phi, Knm, t, post, s, marg=marg, C=C, sq=sq)
        return self._with_log_prior(grad, state.geom.kernel.theta)

    def _with_log_prior(self, grad: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """grad (of the ELBO) plus the gradient of log p(theta): the normal prior on each log-hyperparameter
        and, for ARD, the shrinkage of the log length scales towards their mean."""
        cfg = self.config
        if cfg.prior_mean is not None:
            grad = grad - (theta - cfg.prior_mean) / np.asarray(cfg.prior_std) ** 2
        if cfg.group_idx is not None and np.isfinite(cfg.group_std):
            # log p = -sum_j (theta_j - mean(theta_group))^2 / (2 s^2), gradient -(theta_j - mean) / s^2
            # (the mean's own dependence on theta_j cancels because the deviations sum to zero).
            dev = theta[cfg.group_idx] - theta[cfg.group_idx].mean()
            grad = grad.copy()
            grad[cfg.group_idx] -= dev / cfg.group_std**2
        return grad

    def _hyper_step(self, state: SVIState, batch, grad=None) -> SVIState:
        geom = state.geom
        if geom.kind == "linear":
            post = E.moments(state.eta1, state.P)
            # Exact maximiser of the ELBO over the prior variances (weights share one, the bias has its
            # own) with q(beta) fixed: sigma^2 = mean_j E_q[beta_j^2].
            S = E.covariance(post)
            second = geom.prior_std**2 * (np.diag(S) + post.m**2)
            new_var = np.append(np.full(second.size - 1, second[:-1].mean()), second[-1])
            lo, hi = self.linear_var_bounds(second.size)
            new_std = np.sqrt(np.clip(new_var, lo, hi))
            # beta = std v = std' v'  =>  v' = R v, R = std / std'; with Q = R^-1: P' = Q P Q, eta1' = Q eta1.
            Q = new_std / geom.prior_std
            return state._replace(eta1=Q * state.eta1, P=Q[:, None] * state.P * Q[None, :],
                                  geom=linear_geometry(new_std))
        if grad is None:
            X, y, phi, t, Knm, s = batch[:6]
            grad = self._hyper_gradient(state, (X, y, phi, t, Knm, s, E.moments(state.eta1, state.P), None))
        step, adam = adam_ascent(state.adam, grad, self.config.hyper_lr)
        theta = np.clip(geom.kernel.theta + step, *self.theta_bounds)
        new = sparse_geometry(geom.kernel.with_theta(theta), geom.inducing)
        # Keep q(u) fixed: u = L v = L' v'  =>  v' = R v with R^-1 = Q = L^-1 L';
        # so P' = Q^T P Q and eta1' = Q^T eta1.
        Q = geom.Linv @ new.L
        P = Q.T @ state.P @ Q
        return state._replace(eta1=Q.T @ state.eta1, P=0.5 * (P + P.T), geom=new, adam=adam)

    def linear_var_bounds(self, size):
        """Bounds of the linear variant's prior variances: weights relative to 1 / feature variance."""
        scale = np.append(np.full(size - 1, self.weight_var_scale), 1.0)
        return 1e-6 * scale, 1e6 * scale

    def pinned(self, state: SVIState) -> list[str]:
        """Hyperparameters that sit at one of their bounds (a sign the data's scale or the kernel is off)."""
        geom = state.geom
        if geom.kind == "linear":
            lo, hi = self.linear_var_bounds(geom.prior_std.size)
            var = geom.prior_std**2
            names = ["prior_variance"] * (var.size - 1) + ["bias_prior_variance"]
            at = np.isclose(var, lo, rtol=1e-9, atol=0.0) | np.isclose(var, hi, rtol=1e-9, atol=0.0)
        else:
            names = list(geom.kernel.describe())  # one name per log-hyperparameter, sums included
            theta = geom.kernel.theta
            at = (np.abs(theta - self.theta_bounds[0]) < 1e-9) | (np.abs(theta - self.theta_bounds[1]) < 1e-9)
        return sorted({n for n, a in zip(names, at) if a})

    def elbo(self, state: SVIState, chunk: int = 20000) -> float:
        """Closed-form ELBO (optimal alpha) on the full data or on the fixed evaluation subset, scaled
        to n points."""
        if self.full_batch:
            phi, t, _ = self._full_features(state.geom)
            post, (a, c) = self._posterior_and_marginals(state, phi)
            return float(np.sum(E.data_terms(self.y, a, c, t)) - E.kl_to_standard_normal(post))
        post = E.moments(state.eta1, state.P)
        idx = np.arange(self.n) if self.elbo_idx is None else self.elbo_idx
        total = 0.0
        for start in range(0, idx.size, chunk):
            rows = idx[start:start + chunk]
            phi, t, _ = features(state.geom, self.X[rows])
            a, c = E.marginals(phi, post)
            total += float(np.sum(E.data_terms(self.y[rows], a, c, t)))
        return self.n / idx.size * total - E.kl_to_standard_normal(post)
