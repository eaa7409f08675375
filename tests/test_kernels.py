"""Kernel values and hyperparameter gradients, checked against direct formulas and finite differences."""

import numpy as np
import pytest

from bsvm.kernels import ARDRBF, RBF, Constant, Linear, make_kernel

rng = np.random.default_rng(0)
X = rng.normal(size=(7, 3))
Y = rng.normal(size=(5, 3))
G = rng.normal(size=(7, 5))
g = rng.normal(size=7)

KERNELS = [RBF(0.8, 1.7), ARDRBF([0.5, 1.3, 2.0], 0.9), Linear(0.7, 0.4), Constant(2.5),
           RBF(1.1, 0.5) + Linear(0.3, 0.2)]


def test_rbf_matches_formula():
    k = RBF(0.8, 1.7)
    direct = 1.7 * np.exp(-((X[:, None, :] - Y[None]) ** 2).sum(-1) / (2 * 0.8**2))
    np.testing.assert_allclose(k(X, Y), direct, rtol=1e-12)
    ard = ARDRBF([0.8, 0.8, 0.8], 1.7)
    np.testing.assert_allclose(ard(X, Y), direct, rtol=1e-12)


@pytest.mark.parametrize("kern", KERNELS, ids=lambda k: type(k).__name__)
def test_grad_contract_matches_finite_differences(kern):
    theta = kern.theta
    analytic = kern.grad_contract(X, Y, G)
    eps = 1e-6
    for j in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[j] += eps
        tm[j] -= eps
        fd = (np.sum(G * kern.with_theta(tp)(X, Y)) - np.sum(G * kern.with_theta(tm)(X, Y))) / (2 * eps)
        assert analytic[j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("kern", KERNELS, ids=lambda k: type(k).__name__)
def test_diag_and_its_gradient(kern):
    np.testing.assert_allclose(kern.diag(X), np.diag(kern(X, X)), rtol=1e-12)
    theta = kern.theta
    analytic = kern.grad_diag_contract(X, g)
    eps = 1e-6
    for j in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[j] += eps
        tm[j] -= eps
        fd = (g @ kern.with_theta(tp).diag(X) - g @ kern.with_theta(tm).diag(X)) / (2 * eps)
        assert analytic[j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_theta_round_trip_and_describe():
    k = ARDRBF([0.5, 2.0], 3.0)
    k2 = k.with_theta(k.theta)
    np.testing.assert_allclose(k2.lengthscales, [0.5, 2.0])
    assert k2.describe() == pytest.approx({"lengthscales[0]": 0.5, "lengthscales[1]": 2.0, "variance": 3.0})


def test_make_kernel_rejects_unknown_name():
    with pytest.raises(ValueError, match="Unknown kernel"):
        make_kernel("poly", 2)
