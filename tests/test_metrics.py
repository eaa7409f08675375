"""Metrics against scikit-learn's implementations and known cases."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from bsvm import metrics

rng = np.random.default_rng(3)
p = rng.uniform(size=500)
y = (rng.uniform(size=500) < p).astype(int)  # calibrated by construction


def test_binary_metrics_match_sklearn():
    assert metrics.brier_score(y, p) == pytest.approx(brier_score_loss(y, p))
    assert metrics.log_loss(y, p) == pytest.approx(sk_log_loss(y, np.column_stack([1 - p, p])))
    assert metrics.error_rate(y, p) == pytest.approx(np.mean((p > 0.5) != y))


def test_multiclass_brier_and_log_loss():
    P = rng.dirichlet(np.ones(3), size=200)
    yy = rng.integers(0, 3, 200)
    assert metrics.log_loss(yy, P) == pytest.approx(sk_log_loss(yy, P, labels=[0, 1, 2]))
    assert metrics.brier_score(yy, P) == pytest.approx(np.mean(np.sum((P - np.eye(3)[yy]) ** 2, 1)) / 2)


def test_ece_small_for_calibrated_large_for_overconfident():
    n = 20000
    q = rng.uniform(size=n)
    yy = (rng.uniform(size=n) < q).astype(int)
    assert metrics.expected_calibration_error(yy, q) < 0.02
    overconfident = np.where(q > 0.5, 1.0, 0.0)
    assert metrics.expected_calibration_error(yy, overconfident) > 0.2


def test_reliability_bins_counts_and_means():
    b = metrics.reliability_bins(y, p, n_bins=5)
    assert b.count.sum() == len(y)
    for k in range(5):
        inside = (p >= b.edges[k]) & ((p < b.edges[k + 1]) if k < 4 else (p <= 1))
        assert b.count[k] == inside.sum()
        assert b.mean_pred[k] == pytest.approx(p[inside].mean())
        assert b.frac_pos[k] == pytest.approx(y[inside].mean())


def test_wilson_interval_matches_scipy_and_covers_at_its_level():
    from scipy.stats import binomtest

    k, n = np.array([0, 1, 2, 7, 40]), np.array([1, 2, 2, 10, 40])
    lo, hi = metrics.wilson_interval(k, n, level=0.9)
    for j in range(len(k)):
        ci = binomtest(int(k[j]), int(n[j])).proportion_ci(confidence_level=0.9, method="wilson")
        assert (lo[j], hi[j]) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert hi[1] - lo[1] > 0.7  # a bin of two: most of [0, 1]
    # coverage by simulation near the level (Wilson's is close to nominal for moderate n)
    q, m = 0.3, 50
    draws = np.random.default_rng(0).binomial(m, q, size=20000)
    lo, hi = metrics.wilson_interval(draws, np.full(draws.shape, m), level=0.9)
    assert 0.87 < np.mean((lo <= q) & (q <= hi)) < 0.93
    assert np.isnan(metrics.wilson_interval(0, 0)[0])  # an empty bin


def test_mad_and_report():
    assert metrics.mean_abs_deviation([0.2, 0.8], [0.3, 0.6]) == pytest.approx(0.15)
    rep = metrics.classification_report(y, p, p_true=p)
    assert rep["mad_true"] == 0.0
    assert set(rep) == {"error", "brier", "log_loss", "ece", "auc", "mad_true"}
    assert np.isnan(metrics.roc_auc(np.zeros(4, int), np.full(4, 0.3)))
