"""Feature maps that let the linear samplers draw curved decision boundaries.

``features=None`` keeps the raw inputs (parameters = raw weights then the bias). ``"nystroem"`` uses
scikit-learn's Nystroem approximation of the RBF kernel, ``"rff"`` random Fourier features
(``RBFSampler``); the bias is always separate (see ``potential.py``), never a column of the map.
"""

from __future__ import annotations

import numpy as np
from sklearn.kernel_approximation import Nystroem, RBFSampler

FEATURE_MAPS = (None, "nystroem", "rff")


def fit_feature_map(features, X: np.ndarray, n_components: int, gamma, random_state, chosen: bool = True):
    """A fitted transformer for ``features`` (or None for raw inputs). ``gamma=None`` means
    1 / (d Var(X)), scikit-learn's ``gamma="scale"``. ``chosen``: ``n_components`` was set by the user
    (not the estimator's default), so a Nystroem map capped at the row count says so."""
    if features is None:
        return None
    if features not in FEATURE_MAPS:
        raise ValueError(f"features must be one of {FEATURE_MAPS}, got {features!r}")
    if gamma is None:
        var = float(X.var())
        gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    if not (isinstance(n_components, int | np.integer) and n_components >= 1):
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}")
    if features == "nystroem":
        if n_components > X.shape[0] and chosen:
            # (at the default, fewer rows than components is the normal small-data case: the dashboard's
            # playground said so under every refit of a small canvas, about an option it does not show)
            # a Nystroem map has at most one component per training row: say so (the fit had 101
            # parameters for n_components=500 on 100 rows, silently, a review)
            from .._userwarn import warn_user

            warn_user(f"features='nystroem' has at most one component per training row: n_components="
                      f"{n_components} becomes {X.shape[0]} on these {X.shape[0]} rows (so "
                      f"{X.shape[0] + 1} parameters with the bias).", UserWarning)
        fmap = Nystroem(kernel="rbf", gamma=gamma, n_components=int(min(n_components, X.shape[0])),
                        random_state=random_state)
    else:
        fmap = RBFSampler(gamma=gamma, n_components=int(n_components), random_state=random_state)
    return fmap.fit(X)


def transform(fmap, X: np.ndarray) -> np.ndarray:
    return X if fmap is None else np.ascontiguousarray(fmap.transform(X), dtype=float)
