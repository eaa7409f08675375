"""A starting preconditioner for the samplers from the posterior's mode and its averaged curvature.

The hinge posterior has no second derivative, but its curvature averaged over the posterior's own
uncertainty is well defined: with a Gaussian approximation N(theta_hat, Sigma) around the mode,

    H = I + c sum_i N(m_i; 0, s_i^2) u_i u_i^T,   m_i = hinge argument of point i at the mode,
    u_i = d m_i / d theta,  s_i^2 = u_i^T Sigma u_i,  Sigma = H^-1 (iterated to the fixed point from I),

i.e. E[delta(m_i(theta))] under the approximation. (A fixed smoothing width fails when many points sit
exactly on the margin at the mode, which the hinge posterior often has: the width must be the posterior
spread of each margin.) The samplers then run in coordinates theta = L z with L L^T = H^-1, which only
changes the geometry (see ``samplers.py``); ``SubgradientHMC`` refines L in burn-in from the chains, since
a Gaussian approximation is poor for skewed posteriors (most points on one side of a margin "wall").
The mode is found by L-BFGS on a softplus-smoothed hinge (smoothing 1e-3 l), close to the exact mode.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import minimize
from scipy.special import expit

from .potential import HingeModel, _contract, _linear, data_terms


class Pilot(NamedTuple):
    mode: np.ndarray  # (p,)
    factor: np.ndarray  # (p, p) upper-triangular factor L = R^-T with L L^T = H^-1 (H = R R^T)


def _arguments(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray):
    """Hinge arguments m (n,) and the coefficient array E (n, B) with d m / d theta = E[:, b] [x, 1]."""
    B = model.n_blocks
    F = _linear(theta.reshape(1, B, model.n_features + 1), X)[0]
    if model.n_classes == 2:
        return model.l - y * F[:, 0], -y[:, None].astype(float)
    rows = np.arange(len(y))
    wrong = F.copy()
    wrong[rows, y] = -np.inf
    y_star = np.argmax(wrong, axis=1)
    m = model.l + F[rows, y_star] - F[rows, y]
    k = np.arange(B)
    return m, (y_star[:, None] == k).astype(float) - (y[:, None] == k)


def find_mode(model: HingeModel, X: np.ndarray, y: np.ndarray, max_iter: int = 500) -> np.ndarray:
    p = model.n_params
    s = 1e-3 * max(model.l, 1e-3)

    def fun(theta):
        m, E = _arguments(model, theta, X, y)
        z = m / s
        # softplus(z) and its slope expit(z) are computed only where |z| <= 40: beyond, softplus is z (or
        # 0) and expit 1 (or 0) in float64 up to e^-40 = 4e-18 per row, and with s = 1e-3 l nearly every
        # row is beyond (the transcendental functions over all n rows were half of an evaluation: at
        # 100,000 x 50 an evaluation took 8.4 ms, and the pilot's 15 are serial work before the chains)
        mid = np.flatnonzero(np.abs(z) <= 40.0)
        soft = np.maximum(z, 0.0)
        slope = (z > 0.0).astype(float)
        if mid.size:
            zm = z[mid]
            soft[mid] = np.logaddexp(0.0, zm)
            slope[mid] = expit(zm)
        val = 0.5 * theta @ theta + model.c * s * soft.sum()
        G = (model.c * slope)[:, None] * E
        return val, theta + _contract(G[None], X).reshape(p)

    res = minimize(fun, np.zeros(p), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return res.x


def laplace_pilot(model: HingeModel, X: np.ndarray, y: np.ndarray, max_points: int = 5000,
                  rng: np.random.Generator | None = None, max_iter: int = 50) -> Pilot:
    """Mode and preconditioner factor. The curvature is estimated on at most ``max_points`` rows (a random
    subset, rescaled)."""
    n = X.shape[0]
    mode = find_mode(model, X, y)
    if n > max_points:
        rng = rng or np.random.default_rng(0)
        idx = np.sort(rng.choice(n, max_points, replace=False))
        Xs, ys, scale = X[idx], y[idx], n / max_points
    else:
        Xs, ys, scale = X, y, 1.0
    m, E = _arguments(model, mode, Xs, ys)
    Xt = np.hstack([Xs, np.ones((Xs.shape[0], 1))])
    Ud = (E[:, :, None] * Xt[:, None, :]).reshape(len(m), -1)  # u_i = d m_i / d theta
    Sigma = np.eye(model.n_params)
    for _ in range(max_iter):
        # the hinge's curvature averaged over the Gaussian uncertainty of m_i: N(m_i; 0, s_i^2),
        # s_i^2 = u_i^T Sigma u_i; iterated to the fixed point Sigma = H(Sigma)^-1
        s2 = np.maximum(((Ud @ Sigma) * Ud).sum(axis=1), 1e-300)
        kern = np.exp(-0.5 * m * m / s2) / np.sqrt(2.0 * np.pi * s2)
        H = np.eye(model.n_params) + Ud.T @ (Ud * (model.c * scale * kern)[:, None])
        R = cholesky(H, lower=True)
        Rinv = solve_triangular(R, np.eye(model.n_params), lower=True)
        new = Rinv.T @ Rinv
        done = np.allclose(new, Sigma, rtol=1e-3, atol=1e-12 * np.abs(new).max())
        Sigma = new
        if done:
            break
    factor = Rinv.T  # L = R^-T, L L^T = H^-1
    return Pilot(mode, factor)


def per_datum_noise(model: HingeModel, X: np.ndarray, y: np.ndarray, factor, thetas: np.ndarray,
                    reference: np.ndarray | None = None, max_points: int = 2000,
                    rng: np.random.Generator | None = None) -> float:
    """Variance over data points of the whitened per-datum data-term subgradient L^T g_d(theta) (or of
    g_d(theta) - g_d(reference) with a control variate), averaged over coordinates and over ``thetas``.
    A minibatch of size m then adds noise of variance about n^2 / m times this to each z-coordinate."""
    n = X.shape[0]
    if n > max_points:
        idx = (rng or np.random.default_rng(0)).choice(n, max_points, replace=False)
        X, y = X[idx], y[idx]
    _, G = data_terms(model, thetas, X, y)
    if reference is not None:
        G = G - data_terms(model, reference[None], X, y)[1]
    Xt = np.hstack([X, np.ones((X.shape[0], 1))])
    out = 0.0
    for Gk in G:  # a few thetas
        grads = (Gk[:, :, None] * Xt[:, None, :]).reshape(len(Gk), -1)
        grads = grads if factor is None else grads @ factor
        out += grads.var(axis=0).mean()
    return float(out / len(G))
