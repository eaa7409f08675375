"""The leave-one-out cavity predictive, the calibrated probit link and the kernel='auto' choice
(bsvm/sbsvm/loo.py, SBSVM._choose_kernel), each checked against something computed independently."""

import numpy as np
import pytest
from scipy.special import ndtr

from bsvm.datasets import make_ripley
from bsvm.kernels import RBF, Linear
from bsvm.sbsvm import SBSVM
from bsvm.sbsvm import elbo as E
from bsvm.sbsvm.geometry import features
from bsvm.sbsvm.loo import calibrated_probit, cavity_marginals, fit_probit_link

X, y01 = make_ripley(80, random_state=3)
Y = 2.0 * y01 - 1.0


def _fit(Xf, yf, inducing):
    # fixed kernel, full-batch coordinate ascent run to a tight fixed point
    return SBSVM(kernel=RBF(0.4, 2.0), optimize_hyperparameters=False, inducing=inducing, tol=1e-10,
                 max_iter=400, predictive="probit").fit(Xf, yf)


def _marginals(model, Xr, yr):
    phi, t, _ = features(model.geometry_, model._scaled(Xr))
    a, c = E.marginals(phi, model.posterior_)
    return phi, a, c, t


def test_cavity_equals_removing_the_rows_site_from_the_natural_parameters():
    """At q's fixed point, removing row i's Gaussian site (precision w_i, natural mean y_i (1 + w_i), on
    g_i = phi_i v) from q's natural parameters in full m-dimensional form gives the cavity marginal."""
    model = _fit(X, y01, X[::4])
    phi, a, c, t = _marginals(model, X, y01)
    a_loo, v_loo = cavity_marginals(Y, a, c, t)
    P = model.posterior_.Lp @ model.posterior_.Lp.T
    eta1 = P @ model.posterior_.m
    w = 1.0 / np.sqrt(E.b_terms(Y, a, c, t))
    for i in range(0, len(Y), 7):
        Pi = P - w[i] * np.outer(phi[i], phi[i])
        mi = np.linalg.solve(Pi, eta1 - Y[i] * (1.0 + w[i]) * phi[i])
        assert a_loo[i] == pytest.approx(phi[i] @ mi, rel=1e-6, abs=1e-8)
        assert v_loo[i] == pytest.approx(phi[i] @ np.linalg.solve(Pi, phi[i]) + t[i], rel=1e-6)


def test_cavity_moves_the_latent_towards_a_refit_without_the_row():
    """Against refitting without the row (same inducing inputs and kernel): the cavity mean is closer
    to the refit's latent mean than the full fit's is, and moves in the same direction."""
    Z = X[::4]
    model = _fit(X, y01, Z)
    _, a, c, t = _marginals(model, X, y01)
    a_loo, _ = cavity_marginals(Y, a, c, t)
    rows = range(1, len(Y), 8)
    exact = np.array([_fit(np.delete(X, i, 0), np.delete(y01, i), Z).predict_latent(X[i:i + 1])[0][0]
                      for i in rows])
    full, cav = a[list(rows)], a_loo[list(rows)]
    assert np.all(np.sign(cav - full) == np.sign(exact - full))
    assert np.mean(np.abs(cav - exact)) < 0.6 * np.mean(np.abs(full - exact))


def test_probit_link_recovers_the_link_that_generated_the_labels():
    """Labels drawn from p(y = 1 | f) = Phi(A f + B) with f ~ N(m, v): the MAP link recovers A and B."""
    rng = np.random.default_rng(0)
    n, A, B = 20000, 2.0, -0.5
    m = rng.normal(0.0, 1.5, n)
    v = np.full(n, 0.3)
    f = m + np.sqrt(v) * rng.standard_normal(n)
    yy = np.where(rng.random(n) < ndtr(A * f + B), 1.0, -1.0)
    A_hat, B_hat = fit_probit_link(yy, m, v)
    assert A_hat == pytest.approx(A, abs=0.1) and B_hat == pytest.approx(B, abs=0.05)
    # the predictive integrates the link over N(m, v): Monte Carlo agrees
    p_mc = ndtr(A * (0.7 + np.sqrt(0.3) * rng.standard_normal(200000)) + B).mean()
    assert calibrated_probit(np.array([0.7]), np.array([0.3]), A, B)[0] == pytest.approx(p_mc, abs=3e-3)


def test_constant_latent_is_mapped_to_the_base_rate():
    """A latent that carries no information (the same N(1, 0.01) for every row, as a hinge fit that puts
    f = 1 on the majority class) is mapped to the training base rate, not to Phi(1) = 0.84."""
    yy = np.where(np.arange(300) < 195, 1.0, -1.0)           # base rate 0.65
    A, B = fit_probit_link(yy, np.ones(300), np.full(300, 0.01))
    assert calibrated_probit(np.array([1.0]), np.array([0.01]), A, B)[0] == pytest.approx(0.65, abs=0.01)


def test_auto_kernel_keeps_ard_only_when_features_differ_in_relevance():
    """A circular boundary in features 0 and 1 among 4: kernel='auto' keeps one length scale per feature
    and the two noise features get long ones; a circular boundary in all 4 features keeps the RBF."""
    rng = np.random.default_rng(1)
    Xa = rng.standard_normal((300, 4))
    ya = (np.hypot(Xa[:, 0], Xa[:, 1]) + 0.1 * rng.standard_normal(300) < 1.1).astype(int)
    m = SBSVM(random_state=0).fit(Xa, ya)
    assert m.defaults_["kernel"] == "ard"
    ls = m.kernel_.left.lengthscales
    assert ls[:2].max() < 0.5 * ls[2:].min()
    Xb = rng.standard_normal((300, 4))
    yb = (np.linalg.norm(Xb, axis=1) + 0.1 * rng.standard_normal(300) < 1.9).astype(int)
    m = SBSVM(random_state=0).fit(Xb, yb)
    assert m.defaults_["kernel"] == "rbf" and m.defaults_["loo_log_lik.ard"] is not None


def test_auto_kernel_keeps_the_linear_kernel_by_the_penalised_loo_rule():
    """A linear boundary in 10 features with logistic label noise: kernel='auto' keeps the linear kernel,
    and the choice is the argmax of the recorded leave-one-out scores (summed over the rows) less Akaike's
    charge relative to RBF + bias (ARD d - 1 = 9 nats, linear -1). The linear trial's inducing inputs
    (origin and unit vectors) make its sparse fit exact: zero residual variance at every row."""
    rng = np.random.default_rng(0)
    Xl = rng.standard_normal((300, 10))
    yl = (Xl @ np.linspace(-1.0, 1.0, 10) + rng.logistic(size=300) > 0).astype(int)
    m = SBSVM(random_state=0).fit(Xl, yl)
    d = m.defaults_
    charge = {"rbf": 0.0, "ard": 9.0, "linear": -1.0}
    penalised = {k: 300 * d[f"loo_log_lik.{k}"] - c for k, c in charge.items()}
    assert d["kernel"] == max(penalised, key=penalised.get) == "linear"
    assert isinstance(m.kernel_, Linear) and m.geometry_.inducing.shape == (11, 10)
    _, t, _ = features(m.geometry_, m._scaled(Xl))
    assert np.abs(t).max() < 1e-6
