"""Predictive class probabilities from the latent predictive N(f*; m*, v*).

m* = K*m Kmm^-1 mu and v* = K** - K*m Kmm^-1 Km* + K*m Kmm^-1 Z Kmm^-1 Km* (eq. 13 as corrected in
docs/sbsvm.md sec. 6: the paper prints the wrong sign on the variance term and no square root in the probit).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, ndtr

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(64)
_GH_W = _GH_W / _GH_W.sum()


def probit(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """p(y = 1) = Phi(m* / sqrt(1 + v*))."""
    return ndtr(mean / np.sqrt(1.0 + var))


def hinge_sigma(f: np.ndarray) -> np.ndarray:
    """The normalised hinge likelihood e^{-2[1-f]+} / (e^{-2[1-f]+} + e^{-2[1+f]+}), evaluated piecewise as
    a logistic of the log ratio 2([1+f]+ - [1-f]+) (equal to 4f on [-1, 1] and 2f +- 2 outside)."""
    return expit(2.0 * (np.maximum(1.0 + f, 0.0) - np.maximum(1.0 - f, 0.0)))


def hinge_quadrature(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """E[sigma(f)] for f ~ N(m*, v*) by 64-point Gauss-Hermite quadrature (the authors' later code).
    sigma is bounded and Lipschitz, so 64 nodes are accurate to ~1e-4 even for v* near zero."""
    f = mean[:, None] + np.sqrt(var)[:, None] * _GH_X[None, :]
    return hinge_sigma(f) @ _GH_W
