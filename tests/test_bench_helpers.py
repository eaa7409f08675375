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


def test_accuracy_compare_separates_bias_from_monte_carlo_error():
    """benchmarks.subgradient.compare: independent N(ref mean + bias, ref sd) draws. Without bias the
    noise-corrected rms bias is ~0 and z^2 averages ~1; a 0.15 sd bias in 5 of 40 parameters is found
    (rms 0.053; the max-bias bound covers 0.15), in one run and in four pooled runs."""
    from benchmarks.subgradient import compare

    rng = np.random.default_rng(0)
    P, mu = 40, rng.normal(size=40)
    # the reference's own MC error: 0.01 sd, as its mcse says
    ref = {"mean": (mu + 0.02 * rng.normal(size=P)).tolist(), "sd": np.full(P, 2.0).tolist(),
           "mcse": np.full(P, 0.02).tolist()}
    bias = np.zeros(P)
    bias[:5] = 0.15

    def run(b):  # 4 chains x 2000 independent draws: MC error sd / sqrt(8000) ~ 0.011 sd
        return mu + 2.0 * (b + rng.normal(size=(4, 2000, P)))

    clean = compare(run(np.zeros(P)), ref)
    assert clean["rms bias"] < 0.01 and 0.5 < clean["z2 mean"] < 1.5 and clean["max|z|"] < 4
    for runs in (run(bias), [run(bias) for _ in range(4)]):
        r = compare(runs, ref)
        # the true rms bias is 0.15 sqrt(5 / 40) = 0.053
        assert 0.04 < r["rms bias"] < r["rms ub95"] < 0.08 and r["z2 mean"] > 5
        assert 0.15 < r["max bias ub95"] < 0.25 and 0.9 < r["sd ratio min"] <= r["sd ratio max"] < 1.1
