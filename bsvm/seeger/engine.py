"""Nested optimisation of the free energy (Seeger 2000, sec. 2) as ``init`` / ``step``.

Inner loop: conjugate gradients (scipy.optimize, method "CG") over the variational parameters for fixed
theta, warm-started from the current q. Outer loop: one quasi-Newton (BFGS) step on theta per ``step``,
the objective being F*(theta) = min_q F(q, theta) and its gradient dF/dtheta at fixed q (envelope
theorem). The line search is backtracking Armijo; each trial theta warm-starts the inner loop from the
accepted q kept fixed *in y-space*, so F(q_old, theta) already decreases along the search direction for
small steps and the inner loop can only lower it further. The BFGS inverse-Hessian update is skipped when
the curvature condition s'y > 0 fails (inexact inner solutions can break it).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import minimize

from .free_energy import JITTER, Prior, QParams, make_prior, objective, pack, theta_gradient, unpack, whiten


class Config(NamedTuple):
    loss: str = "svc"
    inner_maxiter: int = 200
    # inner_gtol: max |dF/dz|, z = (a, log sqrt D, B). Twonorm, n = 100, 6 seeds: 1e-2 took 1.35x the
    # evaluations for F within 0.05; 1e-3 another 1.3-1.8x (n = 100 and 500)
    inner_gtol: float = 3e-2
    max_step: float = 2.0          # largest change of any log-parameter in one outer step
    armijo: float = 1e-4
    max_backtracks: int = 8
    jitter: float = JITTER
    ard_scale: float | None = None  # s of the hierarchical prior on log w (``theta_penalty``); None = none


def theta_penalty(theta, cfg: Config):
    """-log p(theta) up to a constant, and its gradient: the ARD weights' hierarchical prior.

    log w_i ~ N(m, s^2) independently, s = ``cfg.ard_scale``, and the common centre m integrated out under a
    flat prior, which leaves exactly this quadratic form (up to a constant): the overall length scale stays
    free and only the *spread* of the weights is penalised:
    R = sum_i (log w_i - mean_j log w_j)^2 / (2 s^2),  dR/dlog w_i = (log w_i - mean) / s^2
    (the mean's own derivative sums to zero). C and v are not penalised.
    """
    g = np.zeros_like(theta)
    if cfg.ard_scale is None or theta.size < 3:
        return 0.0, g
    lw = theta[:-2]
    dev = lw - lw.mean()
    g[:-2] = dev / cfg.ard_scale ** 2
    return float(0.5 * dev @ dev / cfg.ard_scale ** 2), g


class SeegerState(NamedTuple):
    theta: np.ndarray              # log kernel parameters (log w_1..log w_d, log C, log v)
    q: QParams                     # variational posterior in y-space
    F: float                       # the outer objective: free energy at (q, theta) + theta_penalty(theta)
    grad: np.ndarray               # dF/dtheta at fixed q (penalty included)
    H: np.ndarray                  # BFGS inverse-Hessian approximation
    prior: Prior                   # Cholesky etc. of K(theta)


class StepInfo(NamedTuple):
    F: float                       # the outer objective (free energy + theta penalty)
    inner_iterations: int          # CG iterations summed over all inner runs of this step
    step_size: float
    n_trials: int                  # kernel settings tried by the line search
    grad_norm: float
    accepted: bool
    # whether H took this step's BFGS update (the curvature condition held): its g'Hg is then a model of
    # F along the latest step, not a stale or reset one
    updated: bool = False
    # CG iterations of the inner run that made the state's q (the accepted trial; 0 when q is unchanged):
    # at cfg.inner_maxiter, that q was cut short
    last_inner: int = 0


def optimise_q(prior: Prior, t, q: QParams, cfg: Config):
    """Inner loop: CG over (a, log sqrt D, B) from the warm start q. Returns (q, F, iterations)."""
    n, M = q.Cf.shape
    a, B = whiten(prior, q)
    res = minimize(objective, pack(a, q.log_d, B), args=(prior, t, cfg.loss, M), jac=True, method="CG",
                   options={"maxiter": cfg.inner_maxiter, "gtol": cfg.inner_gtol})
    a, log_d, B = unpack(res.x, n, M)
    return QParams(prior.L @ a, log_d.copy(), prior.L @ B), float(res.fun), int(res.nit)


def _evaluate(kernel, X, t, theta, q0: QParams, cfg: Config):
    k = kernel.with_theta(theta)
    prior = make_prior(k, X, cfg.jitter)
    q, F, nit = optimise_q(prior, t, q0, cfg)
    return prior, q, F, nit, k


def initial_q(prior: Prior, n_factors: int) -> QParams:
    """A start near the prior: mu = 0, D = diag(K) / 2, factors along K's leading eigenvectors carrying half
    their prior variance. (Cf = 0 is a stationary point of F in Cf, and factors started against the prior's
    correlations can collapse onto it, leaving a diagonal q.)"""
    n = prior.K.shape[0]
    M = min(int(n_factors), n)
    D0 = 0.5 * np.diag(prior.K)
    Cf0 = np.zeros((n, int(n_factors)))
    if M > 0:
        lam, U = eigh(prior.K, subset_by_index=(n - M, n - 1))
        Cf0[:, :M] = U * np.sqrt(0.5 * np.maximum(lam, 0.0))
    return QParams(np.zeros(n), np.log(D0), Cf0)


def extend_q(kernel, X, idx, q_sub: QParams, prior_sub: Prior, jitter: float,
             n_factors: int | None = None) -> QParams:
    """q on all rows of X from q on the rows ``idx`` (a subset), by the GP conditional y | y_idx.

    With V = K_idx^-1 K_idx,x: mu = V' mu_sub, Cf = V' Cf_sub, and D = the rest of q's predictive variance,
    k(x, x) - k' K_idx^-1 k + V' D_sub V (nugget included), so that each row's marginal variance is exactly
    its predictive variance under q_sub. The rows of the subset keep q_sub's values. With ``n_factors`` fewer
    than q_sub's, the leading ones are kept (the rest of the variance goes to D). O(n n_sub^2)."""
    nugget = kernel.nugget(jitter)
    Ks = kernel(X[idx], X)                                        # n_sub x n, no nugget (cross-covariance)
    V = prior_sub.Kinv @ Ks
    mu = V.T @ q_sub.mu
    Cf = V.T @ q_sub.Cf
    D = (kernel.diag(X) + nugget - np.einsum("ij,ij->j", Ks, V)
         + np.exp(q_sub.log_d) @ (V * V))
    D = np.maximum(D, nugget)        # the conditional variance is at least the white noise
    mu[idx], Cf[idx], D[idx] = q_sub.mu, q_sub.Cf, np.exp(q_sub.log_d)
    M = Cf.shape[1] if n_factors is None else int(n_factors)
    if M < Cf.shape[1]:
        # keep the M leading directions of Cf Cf' (its thin SVD) and move the rest of each row's variance
        # into D, so that every marginal variance is unchanged
        U, sv, _ = np.linalg.svd(Cf, full_matrices=False)
        kept = U[:, :M] * sv[:M]
        D += np.sum(Cf ** 2, axis=1) - np.sum(kept ** 2, axis=1)
        Cf = kept
    elif M > Cf.shape[1]:
        Cf = np.column_stack([Cf, np.zeros((Cf.shape[0], M - Cf.shape[1]))])
    return QParams(mu, np.log(D), Cf)


def init(kernel, X, t, cfg: Config, n_factors: int = 2, q0: QParams | None = None):
    """q optimised by the inner loop at the initial theta, from ``q0`` or else ``initial_q``."""
    prior0 = make_prior(kernel, X, cfg.jitter)
    q, F, nit = optimise_q(prior0, t, initial_q(prior0, n_factors) if q0 is None else q0, cfg)
    theta = kernel.theta
    R, gR = theta_penalty(theta, cfg)
    F += R
    grad = theta_gradient(kernel, X, prior0, q, cfg.jitter) + gR
    state = SeegerState(theta, q, F, grad, np.eye(theta.size), prior0)
    return state, StepInfo(F, nit, 0.0, 1, float(np.linalg.norm(grad)), True, last_inner=nit)


def step(state: SeegerState, kernel, X, t, cfg: Config):
    """One outer quasi-Newton step on theta (with its inner CG runs)."""
    g = state.grad
    p = -state.H @ g
    if p @ g >= 0:                       # not a descent direction: restart from steepest descent
        p, H = -g, np.eye(g.size)
    else:
        H = state.H
    big = np.max(np.abs(p))
    if big > cfg.max_step:
        p *= cfg.max_step / big
    slope = float(p @ g)
    alpha, total_nit = 1.0, 0
    trial = 0
    while trial < cfg.max_backtracks:
        trial += 1
        theta_new = state.theta + alpha * p
        try:
            prior, q, F, nit, k = _evaluate(kernel, X, t, theta_new, state.q, cfg)
        except np.linalg.LinAlgError:   # a kernel too ill-conditioned even with jitter: shorten the step
            alpha *= 0.3
            continue
        total_nit += nit
        F += theta_penalty(theta_new, cfg)[0]
        if np.isfinite(F) and F <= state.F + cfg.armijo * alpha * slope:
            break
        alpha *= 0.3
    else:
        # no decrease found: keep theta, reset the curvature estimate (the next step is steepest descent)
        new = state._replace(H=np.eye(g.size))
        return new, StepInfo(state.F, total_nit, 0.0, cfg.max_backtracks, float(np.linalg.norm(g)), False)
    grad = theta_gradient(k, X, prior, q, cfg.jitter) + theta_penalty(theta_new, cfg)[1]
    s, y = theta_new - state.theta, grad - g
    sy = float(s @ y)
    updated = sy > 1e-10
    if updated:
        if np.allclose(H, np.eye(g.size)):
            H = np.eye(g.size) * sy / float(y @ y)   # Nocedal & Wright (6.20) initial scaling
        rho = 1.0 / sy
        V = np.eye(g.size) - rho * np.outer(s, y)
        H = V @ H @ V.T + rho * np.outer(s, s)
    new = SeegerState(theta_new, q, F, grad, H, prior)
    return new, StepInfo(F, total_nit, alpha, trial, float(np.linalg.norm(grad)), True, updated, nit)


#: :func:`finish_q`'s budget, in multiples of ``cfg.inner_maxiter``
FINISH_FACTOR = 10


def finish_q(state: SeegerState, kernel, X, t, cfg: Config):
    """Optimise q once more at the final theta, with :data:`FINISH_FACTOR` times the inner budget, when the
    q that the outer loop converged with was cut short by ``inner_maxiter`` (Ripley, 300 rows, at the
    default 60: F 63.964 -> 63.838, the fully optimised value; breast cancer 71.720 -> 71.68). Returns the
    new state, its StepInfo and whether even this run hit its budget (the caller warns then)."""
    budget = cfg.inner_maxiter * FINISH_FACTOR
    q, F, nit = optimise_q(state.prior, t, state.q, cfg._replace(inner_maxiter=budget))
    k = kernel.with_theta(state.theta)
    pen, dpen = theta_penalty(state.theta, cfg)
    grad = theta_gradient(k, X, state.prior, q, cfg.jitter) + dpen
    new = state._replace(q=q, F=F + pen, grad=grad)
    info = StepInfo(F + pen, nit, 0.0, 1, float(np.linalg.norm(grad)), True, last_inner=nit)
    return new, info, nit >= budget

