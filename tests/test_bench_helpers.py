"""Helpers of the benchmark scripts whose logic decides what a table reports."""

import numpy as np
import pytest

from benchmarks.seeger import linear_discriminant_error, mass_pima


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
