"""The generators' true p(y=1|x) checked by Monte Carlo: among points with p_true near q, a fraction q
is of class 1; twonorm's Bayes error is Phi(-2)."""

import numpy as np
import pytest
from scipy.stats import norm

from bsvm import datasets


@pytest.mark.parametrize("name", sorted(datasets.GENERATORS))
def test_true_proba_is_calibrated(name):
    gen = datasets.GENERATORS[name]
    X, y = gen.make(40000, random_state=5)
    p = gen.proba(X)
    assert np.all((p >= 0) & (p <= 1))
    bins = np.clip((p * 10).astype(int), 0, 9)
    for k in range(10):
        sel = bins == k
        if sel.sum() < 300:
            continue
        se = np.sqrt(p[sel].mean() * (1 - p[sel].mean()) / sel.sum())
        assert abs(y[sel].mean() - p[sel].mean()) < 4.5 * se + 1e-3, (name, k)


def test_twonorm_bayes_error():
    X, y = datasets.make_twonorm(100000, random_state=1)
    err = np.mean((datasets.twonorm_proba(X) > 0.5) != y)
    assert err == pytest.approx(norm.cdf(-2), abs=0.003)


def test_generators_are_reproducible_and_balanced():
    a = datasets.make_moons(101, random_state=4)
    b = datasets.make_moons(101, random_state=4)
    np.testing.assert_array_equal(a[0], b[0])
    assert abs(a[1].mean() - 0.5) < 0.01
    with pytest.raises(ValueError, match="No known truth"):
        datasets.true_proba("iris", a[0])
