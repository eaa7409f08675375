"""The leave-one-out cavity predictive, the calibrated probit link and kernel='auto''s stack of fits
(bsvm/sbsvm/loo.py, SBSVM._choose_kernel), each checked against something computed independently."""

import numpy as np
import pytest
from scipy.special import ndtr

from bsvm.datasets import make_ripley
from bsvm.kernels import RBF, Linear
from bsvm.sbsvm import SBSVM
from bsvm.sbsvm import elbo as E
from bsvm.sbsvm.geometry import features
from bsvm.sbsvm.loo import (
    calibrated_probit,
    cavity_marginals,
    fit_probit_link,
    stacking_objective,
    stacking_weights,
)

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


def test_stacking_weights_maximise_the_loo_log_score_over_a_grid():
    """The EM weights reach the maximum of sum_i log sum_k w_k p_ik over the simplex: no point of a fine
    brute-force grid scores higher, and the maximiser mixes when no fit dominates."""
    rng = np.random.default_rng(4)
    n = 200
    base = rng.normal(size=(n, 1))
    L = np.column_stack([-np.logaddexp(0, -(base[:, 0] + rng.normal(0, 1.0, n))),
                         -np.logaddexp(0, -(base[:, 0] + rng.normal(0, 1.0, n))),
                         np.full(n, np.log(0.5))])
    w = stacking_weights(L)
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
    best = -np.inf
    for a in np.linspace(0, 1, 101):
        for b in np.linspace(0, 1 - a, max(1, int(round((1 - a) * 100)) + 1)):
            best = max(best, stacking_objective(L, [a, b, 1 - a - b]))
    assert stacking_objective(L, w) >= best - 1e-7
    assert np.sum(w > 0.05) >= 2          # no fit dominates: the maximiser is a mixture
    # one fit that predicts every row better gets all the weight
    w1 = stacking_weights(np.column_stack([L[:, 0] + 0.5, L[:, 0]]))
    assert w1[0] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("stacking", ["auto", "loo", "cv"])
def test_stacked_predictive_is_the_weighted_sum_of_its_fits(stacking):
    """kernel='auto' on Ripley's data: the weights recorded in defaults_ are those of components_ (sum 1,
    none below the 0.01 floor), and predict_proba is their weighted sum of each fit's calibrated
    predictive Phi((A m* + B) / sqrt(1 + A^2 v*)), computed here from the fit's own q(u) (the base rate:
    the constant Phi(B) of its link (0, B), the training rows' (n1 + 1) / (n + 2))."""
    Xr, yr = make_ripley(250, random_state=1)
    m = SBSVM(random_state=1, stacking=stacking).fit(Xr, yr)
    d = m.defaults_
    # up to 1000 rows the fixed-hyperparameter fits and the base rate are candidates either way, and
    # (Ripley's two columns' spreads differ, 0.48 and 0.27) the RBF on one scale shared by both
    names = ["rbf", "ard", "linear", "rbf.fixed", "linear.fixed", "rbf.shared.fixed", "rbf.shared.v4.fixed",
             "base_rate"]
    assert d["weighting"] == {"cv": "5-fold cross-validation", "auto": "5-fold q(u) refits, Akaike's charge",
                              "loo": "cavity leave-one-out, Akaike's charge"}[stacking]
    w = np.array([d[f"weight.{k}"] for k in names])
    assert w.sum() == pytest.approx(1.0) and np.all((w == 0) | (w >= 0.01))
    comps = {c[0]: c for c in m.components_}
    assert set(comps) == {k for k, wk in zip(names, w) if wk > 0}
    grid = np.random.default_rng(0).uniform([-1.2, -0.2], [1.0, 1.2], size=(300, 2))
    expect = np.zeros(len(grid))
    for name, wk, geom, post, (A, B) in m.components_:
        assert wk == pytest.approx(d[f"weight.{name}"])
        if name == "base_rate":
            assert A == 0 and ndtr(B) == pytest.approx((yr.sum() + 1) / (len(yr) + 2))
            expect += wk * ndtr(B)
            continue
        phi, t, _ = features(geom, m._scaled(grid))
        mean, var = phi @ post.m, np.einsum("ij,ij->i", phi @ E.covariance(post), phi) + t
        expect += wk * ndtr((A * mean + B) / np.sqrt(1 + A * A * var))
    np.testing.assert_allclose(m.predict_proba(grid)[:, 1], expect, rtol=1e-10, atol=1e-12)
    assert np.array_equal(m.predict(grid) == m.classes_[1], m.decision_function(grid) > 0)
    assert len(m.components_) >= 2, "this set's fits are close: the test needs a mixture"


def test_stack_of_a_base_rate_component_predicts_it():
    """A stack holding the base rate: predict_proba and predict_latent treat it as the constant
    Phi(B) (latent B, variance 0), whatever the predictive."""
    Xr, yr = make_ripley(100, random_state=3)
    m = SBSVM(random_state=0).fit(Xr, yr)
    name, w, geom, post, link = m.components_[0]
    B = 0.3
    m.components_ = [(name, 0.5, geom, post, link), ("base_rate", 0.5, None, None, (0.0, B))]
    grid = np.random.default_rng(1).uniform([-1.2, -0.2], [1.0, 1.2], size=(50, 2))
    for predictive in ("calibrated", "probit", "hinge"):
        m.set_params(predictive=predictive)
        single = m._component_p1(geom, post, link, grid)
        np.testing.assert_allclose(m.predict_proba(grid)[:, 1], 0.5 * single + 0.5 * ndtr(B), rtol=1e-12)
    mean, var = m.predict_latent(grid)
    m1, v1 = m._latent(grid, geom, post)
    np.testing.assert_allclose(mean, 0.5 * m1 + 0.5 * B, rtol=1e-12)
    np.testing.assert_allclose(var, 0.5 * (v1 + m1**2) + 0.5 * B**2 - mean**2, rtol=1e-9, atol=1e-12)
    # the base rate alone (all the weight): every output is the constant
    m.components_ = [("base_rate", 1.0, None, None, (0.0, B))]
    np.testing.assert_allclose(m.predict_proba(grid)[:, 1], ndtr(B), rtol=1e-12)
    np.testing.assert_allclose(m.decision_function(grid), B, rtol=1e-9)
    mean, var = m.predict_latent(grid)
    np.testing.assert_allclose(mean, B, rtol=1e-12)
    np.testing.assert_allclose(var, 0.0, atol=1e-12)


def test_auto_kernel_weights_ard_when_features_differ_in_relevance():
    """A circular boundary in features 0 and 1 among 4: the stack puts its largest weight on one length
    scale per feature, and the two noise features get long ones."""
    rng = np.random.default_rng(1)
    Xa = rng.standard_normal((300, 4))
    ya = (np.hypot(Xa[:, 0], Xa[:, 1]) + 0.1 * rng.standard_normal(300) < 1.1).astype(int)
    m = SBSVM(random_state=0).fit(Xa, ya)
    assert m.defaults_["kernel"] == "ard" and m.defaults_["weight.ard"] > 0.5
    ls = m.kernel_.left.lengthscales
    assert ls[:2].max() < 0.5 * ls[2:].min()


def test_auto_kernel_weights_the_linear_kernel_on_a_linear_boundary():
    """A linear boundary in 10 features with logistic label noise: the isotropic RBF with learned
    hyperparameters gets (almost) no weight and the linear kernel (learned or fixed) most of it. The
    linear fits' inducing inputs (origin and unit vectors) make their sparse fit exact: zero residual
    variance at every row."""
    rng = np.random.default_rng(0)
    Xl = rng.standard_normal((300, 10))
    yl = (Xl @ np.linspace(-1.0, 1.0, 10) + rng.logistic(size=300) > 0).astype(int)
    m = SBSVM(random_state=0).fit(Xl, yl)
    d = m.defaults_
    assert d["weight.rbf"] < 0.05 and d["weight.linear"] + d["weight.linear.fixed"] > 0.5
    lins = [c for c in m.components_ if c[0].startswith("linear")]
    for lin in lins:
        assert isinstance(lin[2].kernel, Linear) and lin[2].inducing.shape == (11, 10)
        _, t, _ = features(lin[2], m._scaled(Xl))
        assert np.abs(t).max() < 1e-6


def test_auto_kernel_on_uninformative_features_predicts_the_base_rate():
    """Labels independent of the features: every fit's calibrated link collapses to the base rate, so
    the stack's probabilities stay near the training base rate instead of fitting noise."""
    rng = np.random.default_rng(2)
    Xn = rng.standard_normal((200, 3))
    yn = (rng.random(200) < 0.3).astype(int)
    m = SBSVM(random_state=0).fit(Xn, yn)
    p = m.predict_proba(rng.standard_normal((500, 3)))[:, 1]
    assert np.abs(p - yn.mean()).max() < 0.05


def test_extra_candidates_only_up_to_1000_rows():
    """Above 1000 rows kernel='auto' stacks the three learned fits only (the fixed fits would cost more
    than they could change there); the base rate's leave-one-out log density is the exact one."""
    Xr, yr = make_ripley(1001, random_state=2)
    d = SBSVM(random_state=0, max_iter=200).fit(Xr, yr).defaults_
    assert {"weight.rbf", "weight.ard", "weight.linear"} <= set(d)
    assert not any(f"weight.{k}" in d for k in ("rbf.fixed", "linear.fixed", "base_rate"))
    Xs, ys = Xr[:300], yr[:300]
    d = SBSVM(random_state=0).fit(Xs, ys).defaults_
    n1, n = int(ys.sum()), len(ys)
    p_loo = (n1 - ys + 1.0) / (n + 1.0)  # each row's base rate without it, p = (n1 + 1) / (n + 2)
    expect = np.mean(np.log(np.where(ys == 1, p_loo, 1.0 - p_loo)))
    assert d["loo_log_lik.base_rate"] == pytest.approx(expect, rel=1e-12)


def test_kfold_weighting_refits_q_on_the_other_folds():
    """stacking='auto''s held-out densities (SBSVM._kfold_log_densities): for each fold, the warm-started
    refit at the fit's hyperparameters agrees with an independent SBSVM fitted from scratch on the other
    folds (same kernel and inducing inputs, hyperparameters fixed), its latent predictive put through the
    fit's link; the base rate's column is each fold's (n1 + 1) / (n + 2) from the other folds."""
    from sklearn.model_selection import StratifiedKFold

    from bsvm.sbsvm.engine import SVIEngine
    from bsvm.sbsvm.estimator import CV_FOLDS
    from bsvm.sbsvm.loo import link_log_densities

    Xr, yr = make_ripley(150, random_state=4)
    m = SBSVM(kernel="rbf", random_state=0).fit(Xr, yr)
    Xs, ys = m._scaled(Xr), 2.0 * yr - 1.0
    geom = m.geometry_
    eng = SVIEngine(Xs, ys, geom, m._config(len(ys), geom.kernel), np.random.default_rng(0))
    P = m.posterior_.Lp @ m.posterior_.Lp.T
    state = eng.init(np.random.default_rng(0))._replace(eta1=P @ m.posterior_.m, P=P, geom=geom)
    m.set_params(tol=1e-10)
    names = ["rbf", "base_rate"]
    out = m._kfold_log_densities(eng, {"rbf": eng}, {"rbf": state, "base_rate": None},
                                 {"rbf": m.link_}, names, np.random.default_rng(7))
    seed = int(np.random.default_rng(7).integers(2**31 - 1))  # the folds' seed, drawn first
    folds = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=seed).split(Xs, yr)
    for train, test in folds:
        ref = SBSVM(kernel=geom.kernel, optimize_hyperparameters=False, inducing=geom.inducing,
                    standardize=False, tol=1e-10, max_iter=2000, predictive="probit")
        ref.fit(Xs[train], yr[train])
        mean, var = ref.predict_latent(Xs[test])
        np.testing.assert_allclose(out[test, 0], link_log_densities(ys[test], mean, var, *m.link_),
                                   rtol=1e-4, atol=1e-6)
        p = (yr[train].sum() + 1.0) / (len(train) + 2.0)
        np.testing.assert_allclose(out[test, 1], np.log(np.where(yr[test] == 1, p, 1.0 - p)), rtol=1e-12)


def test_wide_data_cross_validates_the_stack_instead_of_charging_d_nats():
    """300 rows x 100 features (10 informative): the ARD fit's Akaike charge, 102 nats, was 0.34 a row and
    decided the weights alone: the stack (rbf.fixed 0.60, linear.fixed 0.37) made 0.179 test error
    against the ARD fit's 0.080 (a review). stacking="auto" now cross-validates there, and the ARD fit
    leads the stack. Checked against the ARD kernel fitted alone on the same rows."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(n_samples=1300, n_features=100, n_informative=10, random_state=3)
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=300, random_state=0, stratify=y)
    auto = SBSVM(random_state=0).fit(Xtr, ytr)
    ard = SBSVM(random_state=0, kernel="ard").fit(Xtr, ytr)
    assert auto.defaults_["weighting"].startswith("5-fold cross-validation (d + 2 = 102 nats")
    assert auto.defaults_["weight.ard"] > 0.5
    err = lambda m: np.mean(m.predict(Xte) != yte)  # noqa: E731
    assert err(auto) <= err(ard) + 0.02 and err(ard) < 0.12
    # (d + 2) / n at most 0.1 keeps the q(u) refits with the charge
    small = SBSVM(random_state=0).fit(Xtr[:, :20], ytr)
    assert small.defaults_["weighting"] == "5-fold q(u) refits, Akaike's charge"


def test_shared_scale_candidates_keep_the_columns_relative_spreads():
    """kernel="auto"'s shared-scale candidates: an ARD kernel on the standardised rows that is the RBF on
    the raw columns divided by one scale (their root mean square spread), with the median pairwise
    distance in those units as its length scale (computed here with scipy, apart from the fit). They join
    the stack when the spreads differ by a factor in (1.5, 100], at the initial variance and 4 times it;
    not when the spreads are equal (they would repeat "rbf.fixed") or 1e3 apart (different units)."""
    from scipy.spatial.distance import pdist

    from bsvm.sbsvm.estimator import SHARED_SCALE_VARIANCES

    Xr, yr = make_ripley(250, random_state=4)
    m = SBSVM(random_state=0).fit(Xr, yr)
    names = ["rbf.shared.fixed", "rbf.shared.v4.fixed"]
    assert len(SHARED_SCALE_VARIANCES) == 2 and all(f"weight.{k}" in m.defaults_ for k in names)
    assert sum(m.defaults_[f"weight.{k}"] for k in names) > 0.5  # Ripley's columns share their units
    r = m._shared_scales()
    sd = Xr.std(axis=0)
    np.testing.assert_allclose(r, sd / np.sqrt(np.mean(sd**2)))
    Xs = (Xr - m.x_mean_) / m.x_scale_
    kern = m._shared_scale_kernel(Xs, m.kernel_ if hasattr(m.kernel_, "right") else None,
                                  np.random.default_rng(0), r)
    ard = kern.left
    c = np.sqrt(np.mean(sd**2))
    U = (Xr - Xr.mean(axis=0)) / c
    ls = np.median(pdist(U))
    K_ref = RBF(ls, ard.variance)(U[:50])
    np.testing.assert_allclose(ard(Xs[:50]), K_ref, rtol=1e-10, atol=1e-12)
    # equal spreads: no candidate; one column in other units (x 1e3): none either
    for X2 in ((Xr - Xr.mean(axis=0)) / sd, Xr * np.array([1e3, 1.0])):
        m2 = SBSVM(random_state=0).fit(X2, yr)
        assert not any(f"weight.{k}" in m2.defaults_ for k in names)
        assert m2._shared_scales() is None
