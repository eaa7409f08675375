"""S-BSVM estimator: variants agree where theory says they must, predictive formulas, live progress,
reproducibility, and calibration against Platt scaling on data with a known truth."""

import warnings

import numpy as np
import pytest
from scipy.special import ndtr
from sklearn.exceptions import ConvergenceWarning

from bsvm import PlattSVM
from bsvm.datasets import make_ripley, ripley_log_density, ripley_proba
from bsvm.kernels import Linear
from bsvm.metrics import mean_abs_deviation
from bsvm.sbsvm import SBSVM
from bsvm.sbsvm.predictive import hinge_quadrature, hinge_sigma, probit

X, y = make_ripley(120, random_state=21)
Xt, _ = make_ripley(200, random_state=22)


def test_svi_with_all_points_inducing_reaches_batch_solution():
    fixed = dict(lengthscale=0.5, variance=2.0, optimize_hyperparameters=False, tol=1e-12)
    batch = SBSVM(variant="batch", max_iter=200, **fixed).fit(X, y)
    svi = SBSVM(variant="svi", inducing=X, batch_size=len(X), learning_rate="robbins_monro", kappa=0.6,
                max_iter=3000, **fixed).fit(X, y)
    mb, vb = batch.predict_latent(Xt)
    ms, vs = svi.predict_latent(Xt)
    np.testing.assert_allclose(ms, mb, atol=2e-3 * np.abs(mb).max())
    np.testing.assert_allclose(vs, vb, atol=2e-3 * vb.max())
    assert svi.elbo_ == pytest.approx(batch.elbo_, rel=1e-5)


def test_linear_variant_equals_sparse_model_with_linear_kernel():
    """With a linear kernel and d + 1 inducing inputs in general position the sparse model is exact
    (Ktilde = 0), so the primal variant of sec. 4.5 must give the same bound and predictions."""
    common = dict(optimize_hyperparameters=False, batch_size=len(X), max_iter=300, tol=1e-12)
    lin = SBSVM(variant="linear", prior_variance=2.0, **common).fit(X, y)
    sparse = SBSVM(kernel=Linear(2.0, 2.0), inducing=X[:3], **common).fit(X, y)
    assert lin.elbo_ == pytest.approx(sparse.elbo_, rel=1e-7)
    np.testing.assert_allclose(lin.predict_latent(Xt)[0], sparse.predict_latent(Xt)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin.decision_function(Xt), Xt @ lin.coef_ + lin.intercept_, rtol=1e-10)


def test_predictive_formulas_match_monte_carlo():
    r = np.random.default_rng(0)
    mean = np.array([-2.0, -0.4, 0.0, 0.7, 3.0])
    var = np.array([0.05, 1.0, 4.0, 0.3, 2.0])
    f = mean + np.sqrt(var) * r.standard_normal((400_000, 5))
    np.testing.assert_allclose(probit(mean, var), ndtr(f).mean(0), atol=4e-3)
    np.testing.assert_allclose(hinge_quadrature(mean, var), hinge_sigma(f).mean(0), atol=4e-3)
    # sigma is the normalised pseudo-likelihood exp(-2[1 - f]+) / (that + exp(-2[1 + f]+))
    g = np.linspace(-3, 3, 13)
    num = np.exp(-2 * np.maximum(1 - g, 0))
    np.testing.assert_allclose(hinge_sigma(g), num / (num + np.exp(-2 * np.maximum(1 + g, 0))))


def test_fit_iter_records_and_early_stop():
    est = SBSVM(n_inducing=20, batch_size=30, max_iter=200, progress_every=10, random_state=1)
    records = []
    for rec in est.fit_iter(X, y):
        records.append(rec)
        if rec.iteration >= 50:
            break
    assert [r.iteration for r in records] == [0, 10, 20, 30, 40, 50]
    assert all(np.isfinite(r.metrics["elbo"]) for r in records)
    assert {"rho", "lengthscale", "variance"} <= set(records[-1].metrics)
    assert records[-1].snapshot["mean"].shape == (5,)
    assert est.n_iter_ == 50 and len(est.history_) == 6
    proba = est.predict_proba(Xt)   # fitted with the state reached
    assert proba.shape == (len(Xt), 2) and np.allclose(proba.sum(1), 1)
    assert records[-1].metrics["elbo"] > records[0].metrics["elbo"]


def test_same_seed_same_result_and_different_seed_differs():
    kw = dict(n_inducing=15, batch_size=25, max_iter=60)
    a = SBSVM(random_state=3, **kw).fit(X, y).predict_proba(Xt)
    b = SBSVM(random_state=3, **kw).fit(X, y).predict_proba(Xt)
    c = SBSVM(random_state=4, **kw).fit(X, y).predict_proba(Xt)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-6


def test_hyperparameter_tuning_increases_the_elbo():
    base = dict(kernel="rbf", lengthscale=3.0, variance=0.3, bias=False, batch_size=len(X), max_iter=300,
                random_state=0, n_inducing=30)
    fixed = SBSVM(optimize_hyperparameters=False, **base).fit(X, y)
    tuned = SBSVM(optimize_hyperparameters=True, hyper_lr=0.1, **base).fit(X, y)
    assert tuned.elbo_ > fixed.elbo_ + 5.0
    assert tuned.kernel_.lengthscale < 3.0 and tuned.kernel_.variance > 0.3


RIPLEY_SEEDS = range(100, 104)


def _ripley_mads(seeds=RIPLEY_SEEDS, same_seed=False):
    """Mean absolute deviation from the true p(y=1|x) on a 50 x 50 grid over the region the data cover
    (true input density at least 5% of its peak; far outside it no method has information, and the
    Bayesian model rightly reverts towards 1/2 there), for independent 250-point sets (four by default;
    ``same_seed``: each model's random_state is the data's seed, as in ``benchmarks.sbsvm.ripley_table``)."""
    g = np.array(np.meshgrid(np.linspace(-1.2, 1.0, 50), np.linspace(-0.2, 1.2, 50))).reshape(2, -1).T
    dens = ripley_log_density(g)
    grid = g[dens > dens.max() + np.log(0.05)]
    truth = ripley_proba(grid)
    mad_s, mad_p = [], []
    for seed in seeds:
        Xr, yr = make_ripley(250, random_state=seed)
        rs = seed if same_seed else 0
        mad_s.append(mean_abs_deviation(truth, SBSVM(random_state=rs).fit(Xr, yr).predict_proba(grid)))
        mad_p.append(mean_abs_deviation(truth, PlattSVM(random_state=rs).fit(Xr, yr).predict_proba(grid)))
    return np.array(mad_s), np.array(mad_p)


def test_ripley_calibration_close_to_the_truth():
    mad_s, mad_p = _ripley_mads()
    assert mad_s.mean() < 0.065 and mad_p.mean() < 0.065, (mad_s, mad_p)


def test_ripley_calibration_no_worse_than_platt():
    """Issue 12's target as ``python -m benchmarks sbsvm --part ripley --ripley-seeds 20,...,39`` measures
    it: over 20 sets (four are too few: the seeds' spread is about 0.01), S-BSVM's defaults are at least
    as close to the true p(y|x) as Platt's SVC. On seeds 20-39, which were not looked at while the
    shared-scale candidates were chosen (seeds 0-19 were: .0538 vs .0542, a margin within noise): .0456
    vs .0478; before those candidates .0489 vs .0478."""
    mad_s, mad_p = _ripley_mads(range(20, 40), same_seed=True)
    assert mad_s.mean() <= mad_p.mean(), (mad_s.mean(), mad_p.mean())


@pytest.mark.parametrize("schedule", ["robbins_monro", "adaptive"])
def test_minibatch_svi_approaches_the_full_batch_optimum(schedule):
    """Noisy minibatch natural-gradient steps (with the n/|S| scale) under either learning-rate schedule
    end near the optimum that exact full-batch coordinate ascent reaches for the same inducing inputs."""
    common = dict(lengthscale=0.5, variance=2.0, optimize_hyperparameters=False, inducing=X[::4], tol=0)
    full = SBSVM(batch_size=len(X), max_iter=100, **common).fit(X, y)
    svi = SBSVM(batch_size=20, learning_rate=schedule, max_iter=1500, random_state=0, **common).fit(X, y)
    assert svi.elbo_ == pytest.approx(full.elbo_, rel=0.01)
    assert np.abs(svi.predict_proba(Xt) - full.predict_proba(Xt))[:, 1].mean() < 0.02


def test_jitter_only_when_needed_and_clear_error_when_singular():
    from bsvm.sbsvm.geometry import stable_cholesky

    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    L, jitter = stable_cholesky(A)
    assert jitter == 0.0 and np.allclose(L @ L.T, A)
    ones = np.ones((5, 5))               # rank 1: needs jitter, gets it
    L, jitter = stable_cholesky(ones)
    assert 0 < jitter <= 1e-2 * 1.0 and np.allclose(L @ L.T, ones + jitter * np.eye(5))
    with pytest.raises(ValueError, match="singular.*inducing points"):
        stable_cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))   # indefinite: no jitter can save it
    with pytest.raises(ValueError, match="variance must be positive"):
        stable_cholesky(np.full((2, 2), np.nan))


def test_duplicate_rows_as_inducing_inputs_still_fit():
    Xd = np.repeat(X[:10], 3, axis=0)
    yd = np.repeat(y[:10], 3)
    est = SBSVM(inducing="random", n_inducing=30, max_iter=30, random_state=0).fit(Xd, yd)
    assert est.geometry_.jitter > 0 and np.all(np.isfinite(est.predict_proba(Xt)))


def test_linear_variant_prior_variance_update_is_an_exact_maximiser():
    """With q(beta) fixed, the empirical-Bayes prior-variance update maximises the ELBO: it never lowers
    it, and perturbing the new variances either way lowers it."""
    from bsvm.sbsvm import elbo as E
    from bsvm.sbsvm.engine import SVIConfig, SVIEngine
    from bsvm.sbsvm.geometry import features, linear_geometry

    ypm = np.where(y == 1, 1.0, -1.0)
    eng = SVIEngine(X, ypm, linear_geometry(np.full(3, 0.3)),
                    SVIConfig(batch_size=len(X), schedule="constant", optimize_hyper=False), None)
    state = eng.init()
    for _ in range(5):
        state, _ = eng.step(state, None)
    new = eng._hyper_step(state, None)

    def elbo_with_std(st, std):
        """ELBO for q(beta) of state st (in beta coordinates) under prior std ``std``."""
        post = E.moments(st.eta1, st.P)
        mean_b = st.geom.prior_std * post.m
        cov_b = st.geom.prior_std[:, None] * E.covariance(post) * st.geom.prior_std[None, :]
        m_w, S_w = mean_b / std, cov_b / np.outer(std, std)
        P = np.linalg.inv(S_w)
        phi, t, _ = features(linear_geometry(std), X)
        return E.elbo(ypm, phi, t, E.moments(P @ m_w, 0.5 * (P + P.T)))

    before = elbo_with_std(state, state.geom.prior_std)
    after = elbo_with_std(state, new.geom.prior_std)
    assert after >= before
    assert eng.elbo(new) == pytest.approx(after, rel=1e-9)
    for factor in (0.9, 1.1):
        assert elbo_with_std(state, new.geom.prior_std * factor) < after


def test_latent_predictive_matches_corrected_eq13():
    """predict_latent against eq. 13 as corrected in NOTES.md item 4, computed here with explicit solves
    from the fitted q(u) = N(mean_, cov_) in the paper's coordinates:
    m* = K*m Kmm^-1 mu,  v* = K** - K*m Kmm^-1 Km* + K*m Kmm^-1 Z Kmm^-1 Km*  (the paper prints a minus on
    the last term). A flipped sign on either variance term fails this. (One kernel: a kernel="auto" stack's
    latent is the mixture of its fits', tests/test_sbsvm_loo.py.)"""
    est = SBSVM(kernel="rbf", n_inducing=15, max_iter=40, random_state=0).fit(X, y)
    Xs = (Xt - est.x_mean_) / est.x_scale_
    Zs = (est.inducing_points_ - est.x_mean_) / est.x_scale_
    k = est.kernel_
    Kmm = k(Zs) + est.geometry_.jitter * np.eye(len(Zs))
    Ksm = k(Xs, Zs)
    A = np.linalg.solve(Kmm, Ksm.T).T                      # K*m Kmm^-1
    m_ref = A @ est.mean_
    v_ref = k.diag(Xs) - np.einsum("ij,ij->i", A, Ksm) + np.einsum("ij,jk,ik->i", A, est.cov_, A)
    mean, var = est.predict_latent(Xt)
    np.testing.assert_allclose(mean, m_ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var, v_ref, rtol=1e-6, atol=1e-8)
    # and the variance term is a real contribution here, not a rounding error
    assert np.einsum("ij,jk,ik->i", A, est.cov_, A).min() > 1e-3


def test_unconverged_fit_warns_naming_the_budget():
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        est = SBSVM(max_iter=3, random_state=0).fit(X, y)
    assert not est.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SBSVM(random_state=0).fit(X, y)
    assert est.converged_ and all(s["converged"] for s in est.stages_)


@pytest.mark.parametrize("factor", [np.array([1e6, 1e6]), np.array([1e6, 1.0]), np.array([1e-5, 1.0])])
def test_rescaled_features_give_the_same_fit(factor, monkeypatch):
    """Scale-adaptive defaults: features in other units (all, or one of them, x 1e6) give the same fit.
    The isotropic stage agrees to rounding; the ARD stage's Adam path and its stopping step amplify the
    last-bit differences of the standardised inputs, so the final probabilities agree to 0.02.
    The one exception by design: kernel="auto"'s shared-scale candidates keep the columns' relative
    spreads (as SVC's gamma="scale" does), so a change of one column's units changes them; the rest of
    the fit is unchanged without them (the whole fit with them, when every column is rescaled)."""
    import bsvm.sbsvm.estimator as estimator_module

    if len(set(factor)) > 1:
        monkeypatch.setattr(estimator_module, "SHARED_SCALE_VARIANCES", ())
    ref = SBSVM(random_state=2).fit(X, y)
    est = SBSVM(random_state=2).fit(X * factor, y)
    assert est.defaults_["kernel"] == ref.defaults_["kernel"]
    np.testing.assert_allclose(est.predict_proba(Xt * factor), ref.predict_proba(Xt), atol=2e-2)
    for kw in ({"kernel": "rbf", "predictive": "probit"},):
        r = SBSVM(random_state=2, **kw).fit(X, y)
        e = SBSVM(random_state=2, **kw).fit(X * factor, y)
        np.testing.assert_allclose(e.predict_proba(Xt * factor), r.predict_proba(Xt), atol=1e-6)
    np.testing.assert_allclose(est.inducing_points_, ref.inducing_points_ * factor, rtol=1e-6)


def test_a_handful_of_points_gets_enough_inducing_points_to_separate():
    # 20 % of the 4 training rows of six points clicked on the dashboard's playground was one inducing
    # point at their centre: every kernel fitted a flat p = 0.5. The auto rule keeps at least 20 (or
    # every row), so two columns of points get a boundary between them
    X = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 0.0]])
    y = np.array([0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SBSVM(random_state=0).fit(X, y)
    assert m.defaults_["n_inducing"] == 4
    p = m.predict_proba([[-1.0, 0.0], [1.0, 0.0]])[:, 1]
    assert p[0] < 0.2 and p[1] > 0.8
    assert SBSVM().estimate_cost(50, 2, 2).detail.startswith("20 inducing points")


def test_a_fit_stopped_by_its_consumer_is_not_converged():
    # breaking out of fit_iter left converged_ = True with no stage finished (a library user's review)
    import warnings

    from bsvm.datasets import make_ripley

    X, y = make_ripley(200, random_state=0)
    m = SBSVM(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rec in m.fit_iter(X, y):
            if rec.iteration >= 30:
                break
    assert m.converged_ is False and m.stages_ == []
    assert SBSVM(random_state=0).fit(X, y).converged_  # a whole fit still converges


def test_inducing_kernel_matrix_gets_a_relative_jitter_so_the_fit_does_not_follow_rounding():
    """Kmm's condition number reached ~1e10 on Ripley-like data, and the fit followed its inputs' last
    bits: a 1e-15 relative change of X moved the probabilities by up to 5e-7 (and a Dask fit's blocked
    sums by 0.03-0.07). Kmm now carries MIN_JITTER x its mean diagonal (not for a finite-rank kernel,
    whose d + 1 inducing points are exact)."""
    from bsvm.datasets import make_ripley
    from bsvm.kernels import RBF, Linear
    from bsvm.sbsvm.geometry import MIN_JITTER, sparse_geometry

    Z = np.random.default_rng(0).normal(size=(30, 2))
    g = sparse_geometry(RBF(1.0, 2.0), Z)
    assert g.jitter == pytest.approx(MIN_JITTER * 2.0)
    np.testing.assert_allclose(g.L @ g.L.T, RBF(1.0, 2.0)(Z) + g.jitter * np.eye(30), atol=1e-12)
    assert sparse_geometry(Linear(1.0, 1.0), Z[:3]).jitter == 0.0
    Xr, yr = make_ripley(250, random_state=3)
    G = np.random.default_rng(1).uniform(-1.2, 1.0, size=(500, 2))
    p0 = SBSVM(random_state=0).fit(Xr, yr).predict_proba(G)[:, 1]
    p1 = SBSVM(random_state=0).fit(Xr * (1 + 1e-15), yr).predict_proba(G)[:, 1]
    assert np.abs(p0 - p1).max() < 1e-9  # (4.5e-7 without the jitter)


@pytest.mark.parametrize("kw, n", [({}, 175), ({}, 1500), ({}, 5000), ({"kernel": "rbf"}, 175),
                                   ({"variant": "linear"}, 175), ({"variant": "batch"}, 175)])
def test_progress_records_announce_the_number_of_fits_the_run_makes(kw, n):
    """The records' ``stages_planned`` (a progress bar's denominator) is the number of fits ``stages_``
    ends with: kernel="auto"'s candidates (with fixed-hyperparameter twins up to CV_MAX_ROWS rows) and a
    subset fit's stage 2 included."""
    from bsvm.datasets import make_ripley, make_twonorm

    Xn, yn = make_ripley(n, random_state=0) if n < 1000 else make_twonorm(n, random_state=0)
    est = SBSVM(random_state=0, max_iter=60, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = {r.metrics["stages_planned"] for r in est.fit_iter(Xn, yn)}
    assert planned == {float(len(est.stages_))}


def test_a_fit_that_predicts_one_value_everywhere_says_so():
    """lengthscale=1e6 on standardised data makes the kernel constant: the fit predicted 0.500 on every row,
    said it converged and warned of nothing (a library user's review). It now warns, naming the cause; an
    ordinary fit does not; 1e300, which overflowed into an error naming no parameter, is refused by name.
    A single fit's budget warning names its stage in brackets ("was met all rows: ..." before)."""
    import warnings

    from sklearn.datasets import make_moons
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils._param_validation import InvalidParameterError

    from bsvm import SBSVM

    X, y = make_moons(150, noise=0.25, random_state=1)
    with pytest.warns(ConvergenceWarning, match=r"same probabilities on every training row.*=1e\+06"):
        flat = SBSVM(lengthscale=1e6, kernel="rbf", random_state=0).fit(X, y)
    assert np.ptp(flat.predict_proba(X)[:, 1]) < 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert SBSVM(random_state=0).fit(X, y).score(X, y) > 0.9
    # a rare class predicted at 1e-4 to 2e-3 is a pattern, not a flat fit (an absolute spread of 0.01 called
    # it flat, a review)
    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(5000, 2))
    yr = (rng.uniform(size=5000) < 1 / (1 + np.exp(8 - 1.5 * Xr[:, 0]))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        rare = SBSVM(random_state=0).fit(Xr, yr)
    p1 = rare.predict_proba(Xr)[:, 1]
    assert 0 < yr.sum() < 50 and p1.max() / p1.min() > 3
    with pytest.raises(InvalidParameterError, match="'lengthscale' parameter"):
        SBSVM(lengthscale=1e300, kernel="rbf").fit(X, y)
    with pytest.warns(ConvergenceWarning, match=r"was met \(all rows\): the ELBO"):
        SBSVM(kernel="rbf", max_iter=20, random_state=0).fit(X, y)


def test_a_newcomers_review_converged_only_at_the_end_and_linear_ignores_a_kernel():
    """converged_ read True after two records of a fit_iter the consumer broke out of; variant="linear"
    ignored kernel="rbf" silently (a newcomer's review)."""
    est = SBSVM(random_state=0)
    steps = est.fit_iter(X, y)
    for k, _ in enumerate(steps):
        if k == 1:
            break
    assert est.converged_ is False
    for _ in steps:  # the rest of the fit
        pass
    assert est.converged_ is True
    with pytest.warns(UserWarning, match="variant='linear' .* does not use kernel='rbf'"):
        SBSVM(variant="linear", kernel="rbf", random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        SBSVM(variant="linear", random_state=0).fit(X, y)
