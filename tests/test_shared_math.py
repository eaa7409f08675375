"""The shared normalised-hinge likelihood and Gauss-Hermite quadrature (bsvm/likelihoods.py,
bsvm/quadrature.py) against mpmath references, and a check that they are written once."""

import pathlib

import mpmath as mp
import numpy as np
import pytest

from bsvm.likelihoods import hinge_log_odds, log_normaliser, normalised_hinge
from bsvm.quadrature import expect_normal, expect_normal_piecewise, gauss_hermite

ROOT = pathlib.Path(__file__).resolve().parents[1]
mp.mp.dps = 30


def _ref_p1(f, c, l):
    a = mp.e ** (-c * max(l - f, 0))
    b = mp.e ** (-c * max(l + f, 0))
    return a / (a + b)


@pytest.mark.parametrize(("c", "l"), [(2.0, 1.0), (1.0, 1.0), (0.5, 2.0)])
def test_normalised_hinge_matches_its_definition(c, l):
    f = np.array([-1e3, -40.0, -3.0, -1.0, -0.3, 0.0, 0.7, 1.0, 2.5, 40.0, 1e3])
    ours = normalised_hinge(f, c=c, l=l)
    ref = np.array([float(_ref_p1(mp.mpf(v), c, l)) for v in f])
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-300)
    logz = np.array([float(mp.log(mp.e ** (-c * max(l - v, 0)) + mp.e ** (-c * max(l + v, 0))))
                     for v in map(mp.mpf, f)])
    np.testing.assert_allclose(log_normaliser(f, c=c, l=l), logz, rtol=1e-12, atol=1e-12)
    # log odds: 2 c f inside the margin, c (f +- l) outside
    np.testing.assert_allclose(hinge_log_odds(np.array([0.5, 3.0, -3.0]), c, l),
                               [2 * c * 0.5, c * (3.0 + l), c * (-3.0 - l)])  # l >= 1 here


@pytest.mark.parametrize(("m", "v"), [(0.0, 1.0), (-2.0, 0.05), (0.7, 0.3), (3.0, 4.0), (0.2, 1e-6),
                                     (-0.75, 50.0)])
def test_hinge_expectation_matches_mpmath(m, v):
    def integrand(f):
        return _ref_p1(f, 2, 1) * mp.npdf(f, m, mp.sqrt(v))

    s = np.sqrt(v)
    ref = mp.quad(integrand, [m - 12 * s, -1, 1, m + 12 * s] if -1 > m - 12 * s and m + 12 * s > 1
                  else [m - 12 * s, m + 12 * s])
    got = expect_normal_piecewise(normalised_hinge, (-1.0, 1.0), np.array([m]), np.array([v]),
                                  derivatives=False)[0]
    assert abs(got - float(ref)) < 1e-9


def test_gauss_hermite_is_not_enough_for_the_kinked_hinge():
    # why the hinge uses the piecewise rule: 64-point Gauss-Hermite is off by 0.03 at large variance
    m, v = -0.75, 50.0
    ref = mp.quad(lambda f: _ref_p1(f, 2, 1) * mp.npdf(f, m, mp.sqrt(v)), [m - 100, -1, 1, m + 100])
    gh = expect_normal(normalised_hinge, np.array(m), np.array(v), n=64)
    pw = expect_normal_piecewise(normalised_hinge, (-1.0, 1.0), np.array([m]), np.array([v]),
                                 derivatives=False)[0]
    assert abs(gh - float(ref)) > 0.01 and abs(pw - float(ref)) < 1e-9


def test_gauss_hermite_is_exact_for_polynomials():
    x, w = gauss_hermite(8)
    assert abs(w.sum() - 1) < 1e-14
    # E[f^k] of N(m, v): exact up to degree 2 n - 1 = 15
    m, v = 0.3, 2.0
    for k in range(0, 15):
        ref = mp.quad(lambda f, k=k: f**k * mp.npdf(f, m, mp.sqrt(v)), [-mp.inf, mp.inf])
        got = expect_normal(lambda f, k=k: f**k, np.array(m), np.array(v), n=8)
        assert abs(got - float(ref)) <= 1e-9 * max(1.0, abs(float(ref))), k


def test_callers_use_the_shared_pieces():
    from bsvm.sbsvm.predictive import hinge_quadrature, hinge_sigma
    from bsvm.seeger.losses import _svc_p1, log_z

    f = np.linspace(-4, 4, 17)
    np.testing.assert_array_equal(hinge_sigma(f), normalised_hinge(f, c=2.0))
    np.testing.assert_array_equal(_svc_p1(f), normalised_hinge(f, c=1.0))
    np.testing.assert_array_equal(log_z(f), log_normaliser(f, c=1.0))
    m, v = np.array([0.1, -1.0]), np.array([0.5, 2.0])
    np.testing.assert_array_equal(hinge_quadrature(m, v), expect_normal_piecewise(
        hinge_sigma, (-1.0, 1.0), m, v, derivatives=False))
    # written once: the Hermite rule and the hinge normaliser appear only in the shared modules
    for path in (ROOT / "bsvm").rglob("*.py"):
        if path.name in ("likelihoods.py", "quadrature.py"):
            continue
        text = path.read_text()
        assert "hermegauss" not in text and "hermgauss" not in text, f"{path}: use bsvm.quadrature"
        assert "logaddexp(-np.maximum(1.0 - " not in text, f"{path}: use bsvm.likelihoods"
