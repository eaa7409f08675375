"""Accuracy and calibration metrics for probabilistic classifiers.

All functions take ``y`` as class indices 0..K-1 (or, for binary problems, 0/1) and ``proba`` either as
an (n, K) matrix whose columns follow the class order or, for binary problems, the vector p(y = 1 | x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_EPS = 1e-15


def _as_matrix(proba) -> np.ndarray:
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        proba = np.column_stack([1.0 - proba, proba])
    return proba


def error_rate(y, proba) -> float:
    """Fraction of points whose most probable class is wrong."""
    return float(np.mean(np.argmax(_as_matrix(proba), axis=1) != np.asarray(y)))


def brier_score(y, proba) -> float:
    """Binary: mean (p1 - y)^2 (the S-BSVM paper's definition). Multi-class: mean sum_k (p_k - [y=k])^2 / 2,
    which equals the binary form for two classes."""
    P = _as_matrix(proba)
    onehot = np.eye(P.shape[1])[np.asarray(y)]
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)) / 2.0)


def log_loss(y, proba) -> float:
    """Mean negative log probability of the true class (probabilities clipped at 1e-15)."""
    P = _as_matrix(proba)
    p_true = P[np.arange(P.shape[0]), np.asarray(y)]
    return float(-np.mean(np.log(np.clip(p_true, _EPS, 1.0))))


@dataclass(frozen=True)
class ReliabilityBins:
    """Equal-width bins of predicted confidence. ``mean_pred`` and ``frac_pos`` are NaN in empty bins."""

    edges: np.ndarray
    count: np.ndarray
    mean_pred: np.ndarray
    frac_pos: np.ndarray


def reliability_bins(y, p1, n_bins: int = 10) -> ReliabilityBins:
    """Binary reliability diagram: for each bin of p(y=1|x), mean prediction and observed frequency."""
    y = np.asarray(y, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.digitize(p1, edges[1:-1]), 0, n_bins - 1)
    count = np.bincount(idx, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = np.bincount(idx, weights=p1, minlength=n_bins) / count
        frac_pos = np.bincount(idx, weights=y, minlength=n_bins) / count
    return ReliabilityBins(edges, count.astype(int), mean_pred, frac_pos)


def wilson_interval(successes, trials, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval for a binomial proportion (Wilson 1927), elementwise: (lower, upper).

    For a reliability diagram's bins: the observed frequency of a bin with few predictions is itself
    uncertain (a bin of two has an interval over most of [0, 1]). Empty bins give NaN."""
    from scipy.special import ndtri

    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = float(ndtri(0.5 + level / 2.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        phat = k / n
        denom = 1.0 + z * z / n
        centre = (phat + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(phat * (1.0 - phat) / n + z * z / (4.0 * n * n)) / denom
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def expected_calibration_error(y, proba, n_bins: int = 10) -> float:
    """ECE: count-weighted mean |accuracy - confidence| over equal-width bins.

    Binary problems bin p(y=1|x) against the observed frequency of y=1; multi-class problems bin the top
    class's probability against whether the top class was right (the usual top-label ECE).
    """
    P = _as_matrix(proba)
    y = np.asarray(y)
    if P.shape[1] == 2:
        b = reliability_bins(y, P[:, 1], n_bins)
    else:
        conf = P.max(axis=1)
        correct = (P.argmax(axis=1) == y).astype(float)
        b = reliability_bins(correct, conf, n_bins)
    ok = b.count > 0
    return float(np.sum(b.count[ok] * np.abs(b.frac_pos[ok] - b.mean_pred[ok])) / b.count.sum())


def roc_auc(y, proba) -> float:
    """ROC AUC (one-vs-rest macro average for more than two classes); NaN if y holds one class only."""
    P = _as_matrix(proba)
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        return float("nan")
    from sklearn.metrics import roc_auc_score  # deferred: keeps `import bsvm.metrics` light

    if P.shape[1] == 2:
        return float(roc_auc_score(y, P[:, 1]))
    return float(roc_auc_score(y, P, multi_class="ovr", labels=np.arange(P.shape[1])))


def mean_abs_deviation(p_true, p_pred) -> float:
    """Mean |p_pred - p_true| over points: deviation of predicted from true class probabilities
    (binary: of p(y = 1|x); multi-class: averaged over classes)."""
    a, b = np.asarray(p_true, dtype=float), np.asarray(p_pred, dtype=float)
    if a.ndim == 2 and a.shape[1] == 2:
        a = a[:, 1]
    if b.ndim == 2 and b.shape[1] == 2:
        b = b[:, 1]
    return float(np.mean(np.abs(a - b)))


def classification_report(y, proba, p_true=None, n_bins: int = 10) -> dict[str, float]:
    """All the metrics above in one dict (``mad_true`` only when the true probabilities are given)."""
    out = {
        "error": error_rate(y, proba),
        "brier": brier_score(y, proba),
        "log_loss": log_loss(y, proba),
        "ece": expected_calibration_error(y, proba, n_bins),
        "auc": roc_auc(y, proba),
    }
    if p_true is not None:
        out["mad_true"] = mean_abs_deviation(p_true, proba)
    return out
