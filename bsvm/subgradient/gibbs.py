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
from scipy.linalg import cho_factor, cho_solve, solve_triangular

_MIN_ABS_A = 1e-8  # |a| below this (probability ~1e-8 per point) is floored to keep P finite


def inverse_gaussian(rng: np.random.Generator, mean: np.ndarray, shape: float = 1.0) -> np.ndarray:
    """Michael, Schucany & Haas (1976) transformation sampler, in a cancellation-free form.

    With t = mean nu^2 / (2 shape), the smaller root mean (1 + t - sqrt(t^2 + 2t)) is computed as
    mean / (1 + t + sqrt(t^2 + 2t)), which stays accurate for the huge means (tiny |a|) that numpy's
    ``wald`` loses to cancellation."""
    mean = np.asarray(mean, dtype=float)
    nu2 = rng.standard_normal(mean.shape) ** 2
    t = mean * nu2 / (2.0 * shape)
    x = mean / (1.0 + t + np.sqrt(t * t + 2.0 * t))
    u = rng.uniform(size=mean.shape)
    return np.where(u * (mean + x) <= mean, x, mean * (mean / x))


def gibbs_step(rng, theta: np.ndarray, X: np.ndarray, y: np.ndarray, c: float, l: float):
    """One sweep per chain: all 1 / lambda_i given beta, then beta given lambda (one Cholesky of P).
    ``rng[k]`` is chain k's generator (a :class:`bsvm.chains.ChainRNG`). Returns (theta (C, p), U (C,)).

    The data are read in place; only O(n) vectors and a (d + 1)^2 matrix are allocated per chain."""
    C, p = theta.shape
    d = p - 1
    thetas = np.empty_like(theta)
    U = np.empty(C)
    for k in range(C):  # chains are few; everything inside is vectorised over the data
        g = rng[k]
        w, b = theta[k, :d], theta[k, d]
        a = 0.5 * c * (l - y * (X @ w + b))
        inv_lam = inverse_gaussian(g, 1.0 / np.maximum(np.abs(a), _MIN_ABS_A))
        q = 0.25 * c * c * inv_lam
        Xq = X * q[:, None]
        P = np.empty((p, p))
        P[:d, :d] = X.T @ Xq
        P[:d, d] = P[d, :d] = Xq.sum(axis=0)
        P[d, d] = q.sum()
        P[np.diag_indices(p)] += 1.0
        v = y * (0.5 * c * (0.5 * c * l * inv_lam + 1.0))
        rhs = np.append(X.T @ v, v.sum())
        R, lower = cho_factor(P, lower=True, check_finite=False)
        mu = cho_solve((R, lower), rhs, check_finite=False)
        beta = mu + solve_triangular(R, g.standard_normal(p), lower=True, trans="T", check_finite=False)
        thetas[k] = beta
        f = X @ beta[:d] + beta[d]
        U[k] = 0.5 * beta @ beta + c * np.maximum(0.0, l - y * f).sum()
    return thetas, U
