"""Helpers of the benchmark scripts whose logic decides what a table reports."""

import numpy as np
import pytest

from benchmarks.sbsvm import DEFAULT_PRIOR_VARIANCE, PRIOR_VARIANCE_GRID, one_se_towards_default
from benchmarks.seeger import linear_discriminant_error, mass_pima


def _cv_results(scores):
    """A GridSearchCV-like cv_results_ for the prior-variance grid; scores is (folds, grid)."""
    scores = np.asarray(scores, dtype=float)
    out = {"params": [{"variance": v} for v in PRIOR_VARIANCE_GRID]}
    for j, row in enumerate(scores):
        out[f"split{j}_test_score"] = row
    out["mean_test_score"] = scores.mean(axis=0)
    return out


def test_one_se_rule_keeps_the_default_unless_clearly_beaten():
    grid = np.array(PRIOR_VARIANCE_GRID)
    d = int(np.argmin(np.abs(grid - DEFAULT_PRIOR_VARIANCE)))
    other = 0
    fold_level = np.array([-0.20, -0.21, -0.19, -0.22, -0.20])[:, None]
    base = fold_level - 0.05 * (np.arange(grid.size) != d)          # the default is best everywhere...
    noisy = base.copy()
    noisy[:, other] = noisy[:, d] + np.array([0.03, -0.02, 0.02, -0.01, 0.0])   # ...but one: better on
    assert noisy.mean(axis=0).argmax() == other                                 # average, by noise
    assert one_se_towards_default(_cv_results(noisy)) == d
    clear = base.copy()
    clear[:, other] = clear[:, d] + np.array([0.03, 0.025, 0.02, 0.035, 0.03])  # better in every fold
    assert one_se_towards_default(_cv_results(clear)) == other


def test_linear_discriminant_baseline():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")
    assert linear_discriminant_error(X[:100], y[:100], X[100:], y[100:]) <= 0.05
    flipped = np.where(y == "yes", "no", "yes")
    assert linear_discriminant_error(X[:100], y[:100], X[100:], flipped[100:]) >= 0.95


def test_mass_pima_is_ripleys_split():
    data = mass_pima()
    if data is None:
        pytest.skip("../shared/datasets/mass not available")
    X_tr, y_tr, X_te, y_te = data
    # Ripley (1996): Pima.tr 200 cases, 68 diabetic; Pima.te 332 cases, 109 diabetic; 7 inputs
    assert X_tr.shape == (200, 7) and X_te.shape == (332, 7)
    assert int(y_tr.sum()) == 68 and int(y_te.sum()) == 109
