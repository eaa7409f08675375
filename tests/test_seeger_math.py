"""Seeger (2000) ARD: the 1-D expectations, the kernel and the free-energy gradients checked independently
(Monte Carlo, finite differences, 2-D numerical integration of the evidence)."""

import numpy as np
import pytest

from bsvm.seeger import engine
from bsvm.seeger.free_energy import QParams, free_energy, make_prior, objective, theta_gradient, unpack
from bsvm.seeger.kernel import SeegerKernel
from bsvm.seeger.losses import (
    expected_loss,
    gauss_expect,
    hinge_expectation,
    log_z,
    log_z_expectation,
    loss_value,
    predictive_proba,
)

CASES = [(0.0, 1.0), (0.9, 0.05), (-1.5, 4.0), (2.5, 0.3), (0.3, 25.0), (1.0, 1e-4)]


def _mc(f, m, v, t, n=400_000, seed=0):
    y = m + np.sqrt(v) * np.random.default_rng(seed).standard_normal(n)
    vals = f(t, y)
    # dE/dm = E[g (y - m)] / v and dE/dv = E[g ((y - m)^2 / v - 1)] / (2 v): Gaussian score identities,
    # independent of the derivative formulas in the code
    dm = vals * (y - m) / v
    dv = vals * ((y - m) ** 2 / v - 1.0) / (2.0 * v)
    return [(x.mean(), x.std() / np.sqrt(n)) for x in (vals, dm, dv)]


PARTS = {
    "hinge": (lambda t, m, v: hinge_expectation(t, m, v), lambda t, y: np.maximum(1 - t * y, 0.0)),
    "log_z": (lambda t, m, v: log_z_expectation(m, v), lambda t, y: log_z(y)),
    "svc": (lambda t, m, v: expected_loss("svc", t, m, v), lambda t, y: loss_value("svc", t, y)),
    "logistic": (lambda t, m, v: expected_loss("logistic", t, m, v),
                 lambda t, y: loss_value("logistic", t, y)),
}


@pytest.mark.parametrize("part", list(PARTS))
@pytest.mark.parametrize("t", [1.0, -1.0])
def test_expectations_match_monte_carlo(part, t):
    exact, pointwise = PARTS[part]
    for k, (m, v) in enumerate(CASES):
        if v < 1e-3:
            continue                      # the score-identity estimators have huge variance there
        got = exact(np.array(t), np.array(m), np.array(v))
        for what, value, (est, se) in zip(("E", "dE/dm", "dE/dv"), got, _mc(pointwise, m, v, t, seed=k)):
            # 4.5 standard errors: a false alarm has probability < 1e-5 per comparison
            assert abs(float(value) - est) <= 4.5 * se + 1e-12, (part, t, m, v, what, float(value), est, se)


def test_log_z_fast_rule_matches_the_generic_32_node_rule():
    """The specialised 20-node E[log Z] (the inner loop's hot path) against ``gauss_expect`` with 32 nodes
    and log Z's own formula on every node, over a grid of means and variances: within the documented 4e-6."""
    m, v = np.meshgrid(np.linspace(-6, 6, 121), np.logspace(-6, 3, 28))
    fast = log_z_expectation(m, v)
    slow = gauss_expect(log_z, (-1.0, 1.0), m, v)
    assert fast[0].shape == m.shape
    for k, (a, b) in enumerate(zip(fast, slow)):
        scale = v if k == 2 else 1.0                      # dE/dv is compared as v dE/dv (it grows as 1/v)
        assert np.max(np.abs(scale * (a - b))) < 4e-6, k


@pytest.mark.parametrize("loss", ["svc", "logistic"])
def test_expectation_derivatives_match_finite_differences(loss):
    m = np.array([c[0] for c in CASES])
    v = np.array([c[1] for c in CASES])
    for t in (1.0, -1.0):
        e, dm, dv = expected_loss(loss, t, m, v)
        h = 1e-5
        fd_m = (expected_loss(loss, t, m + h, v)[0] - expected_loss(loss, t, m - h, v)[0]) / (2 * h)
        hv = 1e-4 * v
        fd_v = (expected_loss(loss, t, m, v + hv)[0] - expected_loss(loss, t, m, v - hv)[0]) / (2 * hv)
        np.testing.assert_allclose(dm, fd_m, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(dv, fd_v, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("loss", ["svc", "logistic"])
def test_predictive_probability_matches_monte_carlo(loss):
    rng = np.random.default_rng(3)
    for m, v in CASES:
        y = m + np.sqrt(v) * rng.standard_normal(400_000)
        p1 = np.exp(-loss_value(loss, 1.0, y))        # P(t = +1 | y) for both normalised losses
        se = p1.std() / np.sqrt(y.size)
        assert abs(float(predictive_proba(loss, m, v)) - p1.mean()) <= 4.5 * se + 1e-12


def test_kernel_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((7, 3)), rng.standard_normal((5, 3))
    G = rng.standard_normal((7, 5))
    k = SeegerKernel(w=[0.5, 2.0, 1.3], C=1.7, v=0.3)
    grad = k.grad_contract(X, Y, G)
    h = 1e-6
    fd = [(np.sum(G * k.with_theta(k.theta + h * e)(X, Y)) - np.sum(G * k.with_theta(k.theta - h * e)(X, Y)))
          / (2 * h) for e in np.eye(k.theta.size)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    # the same from the kernel matrix a caller already has (its exponentials read off it)
    np.testing.assert_allclose(k.grad_contract(X, Y, G, K=k(X, Y)), grad, rtol=1e-10, atol=1e-12)
    # eq. 8 directly, one pair
    x, xp = X[0], Y[1]
    direct = 1.7 * (np.exp(-np.sum(k.w * (x - xp) ** 2) / (2 * 3)) + 0.3)
    assert k(X, Y)[0, 1] == pytest.approx(direct, rel=1e-12)


def _problem(seed=0, n=10, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    t = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, t, SeegerKernel(w=rng.uniform(0.5, 2.0, d), C=1.5, v=0.2), rng


@pytest.mark.parametrize("loss", ["svc", "logistic"])
@pytest.mark.parametrize("M", [0, 1, 2, 3])
def test_free_energy_gradient_variational(loss, M):
    X, t, k, rng = _problem()
    n = t.size
    prior = make_prior(k, X)
    z = 0.5 * rng.standard_normal(2 * n + n * M)
    F, g = objective(z, prior, t, loss, M)
    h = 1e-6
    fd = np.array([(objective(z + h * e, prior, t, loss, M)[0] - objective(z - h * e, prior, t, loss, M)[0])
                   / (2 * h) for e in np.eye(z.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", ["svc", "logistic"])
@pytest.mark.parametrize("jitter", [1e-6, 0.05])
def test_free_energy_gradient_kernel_parameters(loss, jitter):
    X, t, k, rng = _problem(seed=1)
    n, M = t.size, 2
    prior = make_prior(k, X, jitter)
    a, log_d, B = unpack(0.5 * rng.standard_normal(2 * n + n * M), n, M)
    q = QParams(prior.L @ a, log_d, prior.L @ B)
    grad = theta_gradient(k, X, prior, q, jitter)
    h = 1e-5

    def F(theta):
        return free_energy(make_prior(k.with_theta(theta), X, jitter), q, t, loss)

    fd = np.array([(F(k.theta + h * e) - F(k.theta - h * e)) / (2 * h) for e in np.eye(k.theta.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def _neg_log_evidence_2d(k, X, t, loss, half_width=9.0, n_grid=1201):
    """-log int exp(-sum_i g(t_i, y_i)) N(y | 0, K) dy on a grid in whitened coordinates y = L u."""
    K = k(X)
    L = np.linalg.cholesky(K)
    u = np.linspace(-half_width, half_width, n_grid)
    U1, U2 = np.meshgrid(u, u, indexing="ij")
    Y1 = L[0, 0] * U1
    Y2 = L[1, 0] * U1 + L[1, 1] * U2
    log_f = -loss_value(loss, t[0], Y1) - loss_value(loss, t[1], Y2) - 0.5 * (U1**2 + U2**2)
    du = u[1] - u[0]
    top = log_f.max()
    return -(top + np.log(np.sum(np.exp(log_f - top)) * du * du / (2 * np.pi)))


@pytest.mark.parametrize("loss", ["svc", "logistic"])
def test_free_energy_bounds_two_point_evidence(loss):
    X = np.array([[0.0, 0.5], [0.8, -0.4]])
    t = np.array([1.0, -1.0])
    cfg = engine.Config(loss=loss, inner_maxiter=2000, inner_gtol=1e-9, jitter=0.0)
    gaps = []
    for C in (4.0, 1.0, 0.25, 0.05):
        k = SeegerKernel(w=[1.0, 1.0], C=C, v=0.1)
        prior = make_prior(k, X, jitter=0.0)
        # M = 1: D + c c' covers every 2 x 2 covariance, so the gap is KL(best Gaussian || posterior)
        q0 = engine.initial_q(prior, 1)
        _, F, _ = engine.optimise_q(prior, t, q0, cfg)
        exact = _neg_log_evidence_2d(k, X, t, loss)
        gaps.append(F - exact)
    gaps = np.array(gaps)
    assert np.all(gaps >= -1e-7), gaps           # F is an upper bound on -log P(D | theta)
    assert np.all(np.diff(gaps) < 0), gaps       # and tightens as the posterior becomes Gaussian
    assert gaps[-1] < 1e-3 and gaps[0] > 10 * gaps[-1], gaps


def test_ard_prior_penalty_gradient_matches_finite_differences():
    theta = np.log(np.array([0.3, 2.0, 5.0, 1.1, 1.7, 0.2]))
    cfg = engine.Config(ard_scale=0.7)
    R, g = engine.theta_penalty(theta, cfg)
    h = 1e-6
    R_at = lambda th: engine.theta_penalty(th, cfg)[0]                  # noqa: E731
    fd = [(R_at(theta + h * e) - R_at(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    # the flat-prior centre integrated out: R is the Gaussian exponent at the mean of the log weights
    lw = theta[:-2]
    assert R == pytest.approx(np.sum((lw - lw.mean()) ** 2) / (2 * 0.7 ** 2))
    assert g[-2:].tolist() == [0.0, 0.0]                         # C and v are not penalised
    assert engine.theta_penalty(theta, engine.Config())[0] == 0.0


def test_extend_q_is_the_gp_conditional_of_the_subset_q():
    X, t, k, rng = _problem(seed=3, n=25, d=2)
    jitter = 0.01
    idx = np.arange(0, 25, 3)
    prior_sub = make_prior(k, X[idx], jitter)
    m = idx.size
    q_sub = QParams(rng.standard_normal(m), rng.standard_normal(m) - 1.0, 0.3 * rng.standard_normal((m, 2)))
    q = engine.extend_q(k, X, idx, q_sub, prior_sub, jitter)
    # dense, independently: y | y_idx is Gaussian with mean A y_idx, A = K_x,idx K_idx^-1 (nugget in K_idx),
    # and variance k(x, x) + nugget - A K_idx,x; under q_sub, y has mean A mu and variance that + A Sigma A'
    K_sub = k(X[idx]) + jitter * k.C * np.eye(m)
    A = np.linalg.solve(K_sub, k(X[idx], X)).T
    Sigma = np.diag(np.exp(q_sub.log_d)) + q_sub.Cf @ q_sub.Cf.T
    var = k.diag(X) + jitter * k.C - np.sum(A * k(X, X[idx]), axis=1) + np.sum((A @ Sigma) * A, axis=1)
    rest = np.setdiff1d(np.arange(25), idx)
    np.testing.assert_allclose(q.mu[rest], (A @ q_sub.mu)[rest], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose((np.exp(q.log_d) + np.sum(q.Cf ** 2, axis=1))[rest], var[rest], rtol=1e-8)
    np.testing.assert_allclose(q.Cf[rest], (A @ q_sub.Cf)[rest], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(q.mu[idx], q_sub.mu)
