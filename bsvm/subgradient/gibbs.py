"""Exact data-augmentation Gibbs sampler for the binary Bayesian SVM (Polson & Scott 2011).

Target: p(beta | D) ∝ N(beta; 0, I) prod_i exp(-c max(0, l - y_i f_i)), f_i = w^T x_i + b, beta = [w, b].
With a_i = (c / 2)(l - y_i f_i) each factor is exp(-2 max(0, a_i)), and Polson & Scott's mixture
(papers/wenzel2017-s-bsvm.md eq. 3-4) gives

    exp(-2 max(0, a)) = ∫ (2 pi lambda)^-1/2 exp(-(a + lambda)^2 / (2 lambda)) d lambda.

Conditionals (derived by completing the square in beta; checked against a grid posterior in the tests):

    1 / lambda_i | beta  ~  InverseGaussian(mean 1 / |a_i|, shape 1)
    beta | lambda        ~  N(mu, P^-1),  P = I + (c^2 / 4) Xt^T diag(1 / lambda) Xt,
                            P mu = (c / 2) Xt^T (y * ((c / 2) l / lambda + 1)),   Xt = [X, 1].

(For c = 2, l = 1 this is Polson & Scott's P = I + Xt^T Lambda^-1 Xt, P mu = Xt^T y (1 + 1 / lambda).)
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotrs, dtrtrs

_MIN_ABS_A = 1e-8  # |a| below this (probability ~1e-8 per point) is floored to keep P finite


def inverse_gaussian(rng: np.random.Generator, mean: np.ndarray, shape: float = 1.0) -> np.ndarray:
    """Michael, Schucany & Haas (1976) transformation sampler, in a cancellation-free form.

    With t = mean nu^2 / (2 shape), the smaller root mean (1 + t - sqrt(t^2 + 2t)) is computed as
    mean / (1 + t + sqrt(t^2 + 2t)), which stays accurate for the huge means (tiny |a|) that numpy's
    ``wald`` loses to cancellation."""
    mean = np.asarray(mean, dtype=float)
    nu = rng.standard_normal(mean.shape)
    return _inverse_gaussian(mean, nu, rng.uniform(size=mean.shape), shape)


def _inverse_gaussian(mean: np.ndarray, nu: np.ndarray, u: np.ndarray, shape: float = 1.0) -> np.ndarray:
    """:func:`inverse_gaussian` from its standard normal ``nu`` and uniform ``u`` drawn beforehand."""
    t = mean * (nu * nu) / (2.0 * shape)
    x = mean / (1.0 + t + np.sqrt(t * t + 2.0 * t))
    return np.where(u * (mean + x) <= mean, x, mean * (mean / x))


def _cholesky_solves(P: np.ndarray, rhs: np.ndarray, z: np.ndarray) -> np.ndarray:
    """mu + R^-T z with P = R R^T, P mu = rhs: a draw of N(P^-1 rhs, P^-1). LAPACK directly: SciPy's
    wrappers cost 11-13 us a call here, four times the factorisation of a 31 x 31 matrix."""
    R, info = dpotrf(P, lower=1, clean=0)
    if info != 0:  # P = I + a PSD matrix: only non-finite inputs get here
        raise np.linalg.LinAlgError(f"Gibbs: the precision matrix is not positive definite (info {info})")
    mu, _ = dpotrs(R, rhs, lower=1)
    e, _ = dtrtrs(R, z, lower=1, trans=1)
    return mu + e


def gibbs_step(rng, theta: np.ndarray, X: np.ndarray, y: np.ndarray, c: float, l: float):
    """One sweep per chain: all 1 / lambda_i given beta, then beta given lambda (one Cholesky of P).
    ``rng[k]`` is chain k's generator (a :class:`bsvm.chains.ChainRNG`). Returns (theta (C, p), U (C,)).

    Each chain draws its normals and uniforms first, in the order a sweep uses them. Products with the
    data are taken one chain at a time (a matrix-vector product's rounding does not depend on how many
    chains a process holds, so the draws are bit-identical whatever ``n_jobs``); the elementwise work is
    done for all chains at once. Only O(C n) vectors and one n x d temporary are allocated."""
    C, p = theta.shape
    n, d = X.shape
    nu, u, z = np.empty((C, n)), np.empty((C, n)), np.empty((C, p))
    for k in range(C):
        g = rng[k]
        nu[k], u[k], z[k] = g.standard_normal(n), g.uniform(size=n), g.standard_normal(p)
    F = _margins(theta, X)
    a = 0.5 * c * (l - y * F)
    inv_lam = _inverse_gaussian(1.0 / np.maximum(np.abs(a), _MIN_ABS_A), nu, u)
    Q = 0.25 * c * c * inv_lam
    V = y * (0.5 * c * (0.5 * c * l * inv_lam + 1.0))
    thetas = np.empty_like(theta, dtype=float)
    P, rhs = np.empty((p, p)), np.empty(p)
    for k in range(C):
        P[:d, :d] = X.T @ (X * Q[k][:, None])
        P[:d, d] = P[d, :d] = Q[k] @ X
        P[d, d] = Q[k].sum()
        P[np.diag_indices(p)] += 1.0
        rhs[:d], rhs[d] = V[k] @ X, V[k].sum()
        thetas[k] = _cholesky_solves(P, rhs, z[k])
    hinge = np.maximum(0.0, l - y * _margins(thetas, X)).sum(axis=1)
    return thetas, 0.5 * (thetas * thetas).sum(axis=1) + c * hinge


def _margins(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """f = X w + b for each chain's theta = [w, b], as a (C, n) array, one matrix-vector product each."""
    d = X.shape[1]
    F = np.empty((theta.shape[0], X.shape[0]))
    for k in range(theta.shape[0]):
        np.matmul(X, theta[k, :d], out=F[k])
        F[k] += theta[k, d]
    return F
