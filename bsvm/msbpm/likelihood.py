"""The Dirichlet-multinomial likelihood of MS-BPM (Vogt & Ostermann, eq. 4), in log space.

With confusion counts ``M[c, p]`` (training examples of class c assigned to partition p) and Dirichlet
parameters ``alpha[c, c] = 1 + N / nu``, ``alpha[c, p] = 1`` (sec. 3.2),

    log l_dm(M) = sum_c [ sum_p lgamma(M_cp + alpha_cp) - lgamma(sum_p M_cp + alpha_cp) ]   (eq. 4).

Row sums ``sum_p M_cp`` are the class sizes, fixed by the data, so along a search line only the
numerator changes; :func:`count_table` tabulates ``lgamma(m + alpha_cp)`` for m = 0..N so the sweep of
sec. 4.2 reads interval likelihoods by table look-up instead of calling lgamma per event.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


def dirichlet_alpha(n_classes: int, n_samples: int, nu: float = 1.0) -> np.ndarray:
    """alpha_cc = 1 + N / nu on the diagonal, 1 elsewhere (sec. 3.2). nu = inf gives the flat prior."""
    alpha = np.ones((n_classes, n_classes))
    alpha[np.diag_indices(n_classes)] += n_samples / float(nu)
    return alpha


def log_likelihood(counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """log l_dm of eq. 4 for confusion counts of shape (..., K, K); returns shape (...)."""
    counts = np.asarray(counts, dtype=float)
    num = gammaln(counts + alpha).sum(axis=(-2, -1))
    den = gammaln(counts.sum(axis=-1) + alpha.sum(axis=-1)).sum(axis=-1)
    return num - den


def count_table(alpha: np.ndarray, n_samples: int) -> np.ndarray:
    """``table[q, m] = lgamma(m + alpha.flat[q])`` for every cell q = c * K + p and m = 0..N."""
    m = np.arange(n_samples + 1, dtype=float)
    return gammaln(m[None, :] + alpha.reshape(-1, 1))


def log_likelihood_offset(counts_rows: np.ndarray, alpha: np.ndarray) -> float:
    """The constant -sum_c lgamma(N_c + sum_p alpha_cp) of eq. 4 for class sizes ``counts_rows``."""
    return float(-gammaln(np.asarray(counts_rows, dtype=float) + alpha.sum(axis=-1)).sum())


def confusion_counts(y: np.ndarray, assigned: np.ndarray, n_classes: int) -> np.ndarray:
    """M[..., c, p] = #{i: y_i = c, assigned_i = p}; ``assigned`` has shape (..., N)."""
    assigned = np.asarray(assigned)
    cells = y * n_classes + assigned  # broadcasts over leading chain axes
    flat = cells.reshape(-1, cells.shape[-1])
    offsets = np.arange(flat.shape[0])[:, None] * n_classes**2
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * n_classes**2)
    return counts.reshape(*cells.shape[:-1], n_classes, n_classes)
