"""A collapsed HMC move for binary MS-BPM with the nugget: the latent coordinates z drawn given the
confusion matrix pi, with the per-point nugget coordinates e integrated out (our addition, not in the paper).

Why. With the nugget, the sampler of :mod:`.engine` alternates e | z, pi (``point_sweep``) and z | f
(``block_update``): a data-augmentation (Albert & Chib) sampler, whose autocorrelation is the fraction of
missing information. On N = 2000 Ripley-like points it needs ~100 sweeps per effective draw of the
predictive probabilities. Integrating e out removes that coupling.

Model (binary, anchor class 0 with score 0): f(x_i) = g_i + s e_i with g = F z, e_i ~ N(0, s0^2),
z ~ N(0, s0^2 I) (s = point_scale, s0 = prior_scale). Given pi (drawn from Dirichlet(M + alpha), sec. 3.2)
the likelihood factorises over examples; with e_i integrated out, sigma = s s0,

    p(y_i | z, pi) = pi[y_i, 1] Phi(g_i / sigma) + pi[y_i, 0] Phi(-g_i / sigma),

a smooth function of z, so its posterior p(z | pi) is sampled by HMC with a Metropolis-Hastings test
(:func:`bsvm.subgradient.samplers.hmc_step`, exact for any step size), preconditioned by a fixed
Gauss-Newton approximation of the posterior precision (:func:`preconditioner`). Then e is drawn exactly
from p(e | z, pi) (``engine.point_sweep`` with the same pi). The block "z then e, given pi" leaves
p(z, e | pi) invariant, and with the Dirichlet draw of pi before it the marginal posterior of (z, e).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import ndtr

from ..subgradient.samplers import HMCState, hmc_step
from . import engine

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _loglik_and_grad(g, pi_y, sigma):
    """sum_i log p(y_i | g_i, pi) and its derivative in g_i. g: (S, N); pi_y: (S, N, 2) = pi[y_i, :].

    p = pi0 + (pi1 - pi0) Phi(t), t = g / sigma, lies between pi0 and pi1, both Dirichlet draws and far
    from 0, so probability space is accurate here (no log-CDF needed: ndtr is cheaper than log_ndtr)."""
    t = g / sigma
    diff = pi_y[..., 1] - pi_y[..., 0]
    p = pi_y[..., 0] + diff * ndtr(t)
    dg = diff * np.exp(-0.5 * t * t - _LOG_SQRT_2PI) / (sigma * p)
    return np.log(p).sum(axis=-1), dg


def potential_fn(problem: engine.Problem, log_pi: np.ndarray):
    """U(z) = ||z||^2 / (2 s0^2) - sum_i log p(y_i | F_i z, pi) and its gradient, for every chain."""
    first = problem.phi.shape[1] - problem.n_point
    F = problem.phi[:, :first]
    sigma = problem.point_scale * problem.prior_scale
    pi_y = np.exp(log_pi[:, problem.y, :])
    inv_var = 1.0 / problem.prior_scale**2

    def fn(z):
        ll, dg = _loglik_and_grad(z @ F.T, pi_y, sigma)
        return 0.5 * inv_var * np.einsum("sp,sp->s", z, z) - ll, inv_var * z - dg @ F

    return fn


def preconditioner(problem: engine.Problem, z: np.ndarray, log_pi: np.ndarray) -> np.ndarray:
    """L with L L^T = H^-1, H = I / s0^2 + F^T W F the Gauss-Newton precision of p(z | pi) at the
    population's mean state (W = the mean over chains of the squared per-example score derivatives, the
    Fisher information of each example's likelihood). Fixed after burn-in, so the HMC kernel is too."""
    first = problem.phi.shape[1] - problem.n_point
    F = problem.phi[:, :first]
    sigma = problem.point_scale * problem.prior_scale
    _, dg = _loglik_and_grad(z @ F.T, np.exp(log_pi[:, problem.y, :]), sigma)
    W = np.mean(dg**2, axis=0)
    H = F.T @ (F * W[:, None]) + np.eye(first) / problem.prior_scale**2
    C = np.linalg.cholesky(H)
    # H^-1 = C^-T C^-1, so L = C^-T
    return solve_triangular(C, np.eye(first), lower=True, trans="T")


def collapsed_step(rng: np.random.Generator, problem: engine.Problem, state: engine.PopulationState,
                   step_size, n_leapfrog: int, L: np.ndarray):
    """pi | M; z | pi by one HMC transition (e integrated out); e | z, pi exactly. Returns (state, info,
    log_pi). Binary problems with the nugget only (``problem.n_point > 0``, two classes)."""
    S, km1, P = state.beta.shape
    first = P - problem.n_point
    log_pi = engine.draw_confusion(rng, problem, state)
    fn = potential_fn(problem, log_pi)
    z = state.beta[:, 0, :first]
    U, grad = fn(z)
    new, info = hmc_step(rng, HMCState(z, U, grad), fn, step_size, n_leapfrog, L)
    beta = state.beta.copy()
    beta[:, 0, :first] = new.theta
    # the scores' e part is redrawn by point_sweep; give it the new g with the old e for its "base"
    g = new.theta @ problem.phi[:, :first].T
    scores = (g + problem.point_scale * beta[:, 0, first:])[..., None]
    state = engine.PopulationState(beta, scores, state.counts, state.log_lik, state.sq_norm)
    return engine.point_sweep(rng, problem, state, log_pi), info, log_pi
