"""The normalised hinge likelihood, written once for every method (derivation: docs/shared.md).

The SVM pseudo-likelihood psi(y | f) = exp(-c [l - y f]+) normalised over y = +-1:

    p(y = +1 | f) = e^{-c [l - f]+} / (e^{-c [l - f]+} + e^{-c [l + f]+}) = expit(c ([l + f]+ - [l - f]+)).

Users: S-BSVM's "hinge" predictive (c = 2, l = 1: the model's own exp(-2 [1 - y f]+)), Seeger's normalised
SVC loss (c = 1, l = 1: g(t, y) = [1 - t y]+ + log Z(y)) and the subgradient samplers' predictive
(their c and l). The logistic form never divides 0 by 0, whatever |f|.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def hinge_log_odds(f, c: float = 2.0, l: float = 1.0) -> np.ndarray:
    """log p(+1 | f) - log p(-1 | f) = c ([l + f]+ - [l - f]+): 2 c f inside the margin, c (f +- l)
    outside."""
    f = np.asarray(f, dtype=float)
    return c * (np.maximum(l + f, 0.0) - np.maximum(l - f, 0.0))


def normalised_hinge(f, c: float = 2.0, l: float = 1.0) -> np.ndarray:
    """p(y = +1 | f) under the normalised hinge likelihood (see the module docstring)."""
    return expit(hinge_log_odds(f, c, l))


def log_normaliser(f, c: float = 1.0, l: float = 1.0) -> np.ndarray:
    """log Z(f) = log(e^{-c [l - f]+} + e^{-c [l + f]+}), the log normaliser over y = +-1 (Seeger's log Z
    with c = l = 1)."""
    f = np.asarray(f, dtype=float)
    return np.logaddexp(-c * np.maximum(l - f, 0.0), -c * np.maximum(l + f, 0.0))
