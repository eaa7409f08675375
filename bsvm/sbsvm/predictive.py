"""Predictive class probabilities from the latent predictive N(f*; m*, v*).

m* = K*m Kmm^-1 mu and v* = K** - K*m Kmm^-1 Km* + K*m Kmm^-1 Z Kmm^-1 Km* (eq. 13 as corrected in
docs/sbsvm.md sec. 6: the paper prints the wrong sign on the variance term and no square root in the probit).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from ..likelihoods import normalised_hinge
from ..quadrature import expect_normal_piecewise


def probit(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """p(y = 1) = Phi(m* / sqrt(1 + v*))."""
    return ndtr(mean / np.sqrt(1.0 + var))


def hinge_sigma(f: np.ndarray) -> np.ndarray:
    """The normalised hinge likelihood e^{-2[1-f]+} / (e^{-2[1-f]+} + e^{-2[1+f]+}) (the model's own c = 2
    pseudo-likelihood; ``bsvm.likelihoods``, docs/shared.md)."""
    return normalised_hinge(f, c=2.0)


def hinge_quadrature(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """E[sigma(f)] for f ~ N(m*, v*), integrated piecewise between sigma's kinks at f = +-1
    (``bsvm.quadrature.expect_normal_piecewise``). The authors' later code used 64-point Gauss-Hermite,
    whose error reaches 0.03 in probability when v* is large (docs/shared.md)."""
    return expect_normal_piecewise(hinge_sigma, (-1.0, 1.0), mean, np.maximum(var, 1e-300),
                                   derivatives=False)
