"""The S-BSVM bound and its updates, checked independently:
Monte Carlo for the closed-form ELBO, finite differences for gradients, monotone coordinate ascent."""

import numpy as np
import pytest
from scipy.stats import geninvgauss, multivariate_normal

from bsvm.datasets import make_ripley
from bsvm.kernels import ARDRBF, RBF
from bsvm.sbsvm import elbo as E
from bsvm.sbsvm.engine import SVIConfig, SVIEngine
from bsvm.sbsvm.geometry import features, sparse_geometry

rng = np.random.default_rng(42)
X, y01 = make_ripley(24, random_state=3)
y = np.where(y01 == 1, 1.0, -1.0)
Zind = X[::4].copy()          # 6 inducing inputs
m = len(Zind)


def _random_q(geom, seed=0):
    """An arbitrary q(u) = N(mu, Z) in the paper's coordinates and its whitened form. It is drawn on the
    prior's scale (mu = L m, Z = L S L^T), so Monte Carlo estimates of log p(u) - log q(u) stay precise."""
    r = np.random.default_rng(seed)
    mw = r.normal(size=m)
    A = r.normal(size=(m, m)) * 0.3
    S = A @ A.T + 0.2 * np.eye(m)
    mu, Zcov = geom.L @ mw, geom.L @ S @ geom.L.T
    P = np.linalg.inv(S)
    return mu, Zcov, E.moments(P @ mw, 0.5 * (P + P.T))


def test_whitened_elbo_equals_paper_coordinates():
    kern = RBF(0.6, 1.5)
    geom = sparse_geometry(kern, Zind)
    mu, Zcov, post = _random_q(geom)
    alpha = rng.uniform(0.2, 3.0, size=len(y))
    phi, t, _ = features(geom, X)
    for a in (None, alpha):
        ref = E.reference_elbo_unwhitened(kern, X, y, Zind, mu, Zcov, geom.jitter, a)
        assert E.elbo(y, phi, t, post, alpha=a) == pytest.approx(ref, rel=1e-9)


def test_closed_form_elbo_matches_monte_carlo():
    """Sample u ~ q(u) and lambda_i ~ GIG(1/2, 1, alpha_i) and average the bound's integrand
    L1(u, lambda) + log p(u) - log q(u) - log q(lambda) (eq. 7)."""
    kern = RBF(0.6, 1.5)
    geom = sparse_geometry(kern, Zind)
    mu, Zcov, post = _random_q(geom, seed=1)
    # alpha away from its optimum B (so the check covers the general form), but on its scale: the
    # integrand's variance grows like E[1 / lambda^2], which is large for small alpha.
    phi, t, _ = features(geom, X)
    a, c = E.marginals(phi, post)
    alpha = E.b_terms(y, a, c, t) * rng.uniform(0.6, 1.6, size=len(y))
    closed = E.reference_elbo_unwhitened(kern, X, y, Zind, mu, Zcov, geom.jitter, alpha)

    Kmm = kern(Zind) + geom.jitter * np.eye(m)
    Knm = kern(X, Zind)
    kappa = np.linalg.solve(Kmm, Knm.T).T
    ktil = kern.diag(X) - np.einsum("ij,ij->i", kappa, Knm)
    ns = 200_000
    r = np.random.default_rng(7)
    u = r.multivariate_normal(mu, Zcov, size=ns)
    sa = np.sqrt(alpha)
    lam = sa * geninvgauss.rvs(0.5, sa, size=(ns, len(y)), random_state=r)
    f_mean = u @ kappa.T
    L1 = np.sum(-0.5 * np.log(2 * np.pi * lam) - (ktil + (1 + lam - y * f_mean) ** 2) / (2 * lam), axis=1)
    log_q_lam = np.sum(geninvgauss.logpdf(lam / sa, 0.5, sa) - np.log(sa), axis=1)
    integrand = (L1 + multivariate_normal(np.zeros(m), Kmm).logpdf(u)
                 - multivariate_normal(mu, Zcov).logpdf(u) - log_q_lam)
    est, se = integrand.mean(), integrand.std() / np.sqrt(ns)
    print(est, closed, se)
    assert abs(est - closed) < 4 * se, (est, closed, se)


def _jitter_at(geom, kern):
    """Kmm's jitter at another theta: a fixed multiple of its mean diagonal (geometry.MIN_JITTER), so it
    moves with the variance, and the gradient has that part too (held fixed, the variance's component
    was off by 2.6e-4 relative, a review)."""
    return geom.jitter / np.mean(geom.kernel.diag(Zind)) * np.mean(kern.diag(Zind))


@pytest.mark.parametrize("kern", [RBF(0.6, 1.5), ARDRBF([0.4, 0.9], 2.0)], ids=["rbf", "ard"])
@pytest.mark.parametrize("scale", [1.0, 2.5])
def test_hyperparameter_gradient_matches_finite_differences(kern, scale):
    geom = sparse_geometry(kern, Zind)
    mu, Zcov, post = _random_q(geom, seed=2)
    phi, t, Knm = features(geom, X)
    grad = E.hyper_gradient(geom, X, y, phi, Knm, t, post, scale)
    theta, eps = kern.theta, 1e-5

    def f(th):
        return E.reference_elbo_unwhitened(kern.with_theta(th), X, y, Zind, mu, Zcov,
                                           _jitter_at(geom, kern.with_theta(th)), scale=scale)

    for j in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[j] += eps
        tm[j] -= eps
        fd = (f(tp) - f(tm)) / (2 * eps)
        assert grad[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def _full_batch_engine(kern, Xd, yd, inducing):
    cfg = SVIConfig(batch_size=len(yd), schedule="constant", rho0=1.0, optimize_hyper=False)
    return SVIEngine(Xd, yd, sparse_geometry(kern, inducing), cfg, np.random.default_rng(0))


def test_full_batch_updates_never_decrease_the_elbo():
    Xd, yd01 = make_ripley(80, random_state=5)
    yd = np.where(yd01 == 1, 1.0, -1.0)
    eng = _full_batch_engine(RBF(0.4, 3.0), Xd, yd, Xd[::5])
    state = eng.init()
    values = [eng.elbo(state)]
    for _ in range(40):
        state, _ = eng.step(state, None)
        values.append(eng.elbo(state))
    diffs = np.diff(values)
    assert np.all(diffs >= -1e-9 * abs(values[-1])), diffs.min()
    assert values[-1] > values[0] + 1.0   # and it does climb


def test_gradient_is_zero_at_full_batch_fixed_point():
    """At the fixed point of the coordinate-ascent updates, d ELBO / d mu and d ELBO / d Z vanish
    (finite differences of the paper-coordinate bound with optimal alpha)."""
    Xd, yd01 = make_ripley(60, random_state=6)
    yd = np.where(yd01 == 1, 1.0, -1.0)
    kern = RBF(0.5, 2.0)
    inducing = Xd[::6]
    eng = _full_batch_engine(kern, Xd, yd, inducing)
    state = eng.init()
    for _ in range(300):
        state, _ = eng.step(state, None)
    geom = state.geom
    post = E.moments(state.eta1, state.P)
    mu = geom.L @ post.m
    Zcov = geom.L @ E.covariance(post) @ geom.L.T

    def f(mu_, Z_):
        return E.reference_elbo_unwhitened(kern, Xd, yd, inducing, mu_, Z_, geom.jitter)

    eps = 1e-5
    k = len(mu)
    g_mu = np.array([(f(mu + eps * np.eye(k)[i], Zcov) - f(mu - eps * np.eye(k)[i], Zcov)) / (2 * eps)
                     for i in range(k)])
    g_Z = []
    for i in range(k):
        for j in range(i, k):
            D = np.zeros((k, k))
            D[i, j] = D[j, i] = eps
            g_Z.append((f(mu, Zcov + D) - f(mu, Zcov - D)) / (2 * eps))
    # Scale of the gradient away from the optimum, for reference.
    g_far = (f(mu + 0.1, Zcov) - f(mu, Zcov)) / 0.1
    assert np.max(np.abs(g_mu)) < 1e-4 * max(1.0, abs(g_far))
    assert np.max(np.abs(g_Z)) < 1e-4 * max(1.0, abs(g_far))
    assert abs(g_far) > 0.1


def test_bias_kernel_gradient_matches_finite_differences():
    """The default kernel, RBF + Constant (a learned offset): its gradient (the SumKernel contraction that
    reuses K) against finite differences of the paper-coordinate bound."""
    from bsvm.kernels import Constant

    kern = RBF(0.6, 1.5) + Constant(0.7)
    geom = sparse_geometry(kern, Zind)
    mu, Zcov, post = _random_q(geom, seed=4)
    phi, t, Knm = features(geom, X)
    grad = E.hyper_gradient(geom, X, y, phi, Knm, t, post, 1.7)
    theta, eps = kern.theta, 1e-5
    for j in range(theta.size):
        d = np.zeros_like(theta)
        d[j] = eps

        def f(th):
            return E.reference_elbo_unwhitened(kern.with_theta(th), X, y, Zind, mu, Zcov,
                                               _jitter_at(geom, kern.with_theta(th)), scale=1.7)

        fd = (f(theta + d) - f(theta - d)) / (2 * eps)
        assert grad[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_engine_hyper_gradient_with_priors_matches_finite_differences():
    """The engine's hyperparameter gradient adds the log-prior terms (a normal prior around prior_mean and
    the ARD shrinkage towards the mean log length scale): compare with finite differences of
    ELBO + log p(theta) at a fixed q(u)."""
    kern = ARDRBF([0.4, 0.9], 2.0)
    geom = sparse_geometry(kern, Zind)
    mu, Zcov, post = _random_q(geom, seed=5)
    prior_mean, prior_std, group_std = np.log([0.7, 0.5, 1.2]), 1.3, 0.4
    cfg = SVIConfig(batch_size=len(y), optimize_hyper=True, prior_mean=prior_mean, prior_std=prior_std,
                    group_idx=np.arange(2), group_std=group_std)
    eng = SVIEngine(X, y, geom, cfg, np.random.default_rng(0))
    P = np.linalg.inv(E.covariance(post))
    state = eng.init()._replace(eta1=P @ post.m, P=P)
    phi, t, Knm = features(geom, X)
    grad = eng._hyper_gradient(state, (X, y, phi, t, Knm, 1.0, E.moments(state.eta1, state.P), None))

    def objective(th):
        dev = th[:2] - th[:2].mean()
        log_prior = -0.5 * np.sum((th - prior_mean) ** 2) / prior_std**2 - 0.5 * np.sum(dev**2) / group_std**2
        return E.reference_elbo_unwhitened(kern.with_theta(th), X, y, Zind, mu, Zcov,
                                           _jitter_at(geom, kern.with_theta(th))) + log_prior

    theta, eps = kern.theta, 1e-5
    for j in range(theta.size):
        d = np.zeros_like(theta)
        d[j] = eps
        fd = (objective(theta + d) - objective(theta - d)) / (2 * eps)
        assert grad[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_hyperparameter_step_keeps_q_of_u_fixed():
    """After a hyperparameter step q(u) = N(mu, Z) is the same distribution in the paper's coordinates
    (re-expressed in the new whitened coordinates), so the engine's ELBO equals the paper-coordinate bound
    of the *old* mu and Z under the *new* kernel. Skipping the re-expression moves q(u) (mu = L' m != L m)
    and costs tens of nats."""
    Xd, yd01 = make_ripley(80, random_state=8)
    yd = np.where(yd01 == 1, 1.0, -1.0)
    kern = RBF(0.5, 2.0)
    inducing = Xd[::5]
    cfg = SVIConfig(batch_size=len(yd), schedule="constant", rho0=1.0, optimize_hyper=False, hyper_lr=0.3)
    eng = SVIEngine(Xd, yd, sparse_geometry(kern, inducing), cfg, np.random.default_rng(0))
    state = eng.init()
    for _ in range(20):
        state, _ = eng.step(state, None)
    post = E.moments(state.eta1, state.P)
    mu = state.geom.L @ post.m
    Zcov = state.geom.L @ E.covariance(post) @ state.geom.L.T
    new = eng._hyper_step(state, None, grad=np.array([-1.0, 1.0]))   # Adam's first step: -0.3, +0.3 in log
    assert new.geom.kernel.lengthscale == pytest.approx(0.5 * np.exp(-0.3))
    post_new = E.moments(new.eta1, new.P)
    np.testing.assert_allclose(new.geom.L @ post_new.m, mu, rtol=1e-8, atol=1e-10)
    Z_new = new.geom.L @ E.covariance(post_new) @ new.geom.L.T
    np.testing.assert_allclose(Z_new, Zcov, rtol=1e-7, atol=1e-10)
    ref = E.reference_elbo_unwhitened(new.geom.kernel, Xd, yd, inducing, mu, Zcov, new.geom.jitter)
    assert eng.elbo(new) == pytest.approx(ref, rel=1e-8)
