"""The shared run machinery on SubgradientHMC / GibbsSVM: stopping rule, budgets, bad input, parallel
chains (joblib, dask), draws out (predict_proba_draws, to_arviz)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bsvm.chains import parallel_threshold
from bsvm.subgradient import GibbsSVM, SubgradientHMC

QUIET = 10 ** 6


def _data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X @ np.array([1.5, -1.0]) + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_auto_run_stops_when_the_rule_holds_and_records_say_so():
    X, y = _data()
    est = SubgradientHMC("hmc", n_burnin=200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a converged run must not warn
        records = list(est.fit_iter(X, y))
    st = est.convergence_
    assert est.converged_ and st.rhat <= 1.01 and st.ess_bulk >= 400 and st.ess_tail >= 400
    last = records[-1].metrics
    assert last["rhat"] == st.rhat and last["draws"] == est.samples_.shape[1]
    assert last["rhat_target"] == 1.01 and last["ess_target"] == 400 and last["converged"] == 1.0
    assert "R-hat <= 1.01" in est.stopping_rule_
    # the rule really holds on the stored quantities (log posterior + p(y|x) at the fixed rows)
    from bsvm import diagnostics
    Q = est.log_posterior_quantities_
    assert Q.shape[:2] == (4, est.samples_.shape[1]) and np.all(diagnostics.rhat(Q) <= 1.01)
    # ... and on every model parameter (hmc: at every kept draw), by its name in param_names_
    assert "3 model parameters" in est.stopping_rule_ and "b" in st.per_quantity["names"]
    D = est.samples_
    assert np.all(diagnostics.rhat(D) <= 1.01) and np.all(diagnostics.ess_bulk(D) >= 400)
    # hmc in 3 dimensions: the leapfrog path of chain 0's last transition, for the teaching view
    path = records[-1].snapshot["leapfrog_path"]
    n_steps = est.to_arviz()["sample_stats"]["n_steps"].values[0, -1]
    assert path.shape == (n_steps + 1, 3)


def test_budgets_and_bad_input_warn_and_keep_usable_draws():
    X, y = _data()
    # max_time=0: stops at once, says which budget, predicts from the chains' current states
    with pytest.warns(ConvergenceWarning, match="max_time=0 s ran out.*no convergence check"):
        est = SubgradientHMC("hmc", max_time=0, random_state=0).fit(X, y)
    assert est.samples_.shape[1] == 0 and est.predict_proba(X).shape == (len(X), 2)
    assert est.predict_proba_draws(X[:3]).shape == (4, 1, 3, 2)
    # a budget too small for any diagnostic
    with pytest.warns(ConvergenceWarning, match="max_iter=5 ran out.*too few draws"):
        est = SubgradientHMC("sgld", n_burnin=0, max_iter=5, random_state=0).fit(X, y)
    assert est.samples_.shape == (4, 5, 3) and not est.converged_
    # a fixed-length run that is too short says so too
    with pytest.warns(ConvergenceWarning, match=r"n_samples=20 \(fixed length\).*R-hat"):
        GibbsSVM(n_samples=20, n_burnin=5, random_state=0).fit(X, y)
    # one chain: R-hat undefined, stops on ESS, warns, never crashes
    with pytest.warns(ConvergenceWarning, match="R-hat is undefined with n_chains=1"):
        est = GibbsSVM(n_chains=1, random_state=0).fit(X, y)
    assert np.isnan(est.convergence_.rhat) and est.convergence_.ess_bulk >= 400 and not est.converged_
    # a diverging run (step far too large: the state overflows to inf/NaN)
    with pytest.warns(ConvergenceWarning, match="diverged"):
        est = SubgradientHMC("sgld", step_size=10.0, preconditioner=None, n_burnin=0, random_state=0)
        est.fit(X, y)
    assert np.all(np.isfinite(est.samples_)) and est.predict_proba(X).shape == (len(X), 2)
    # diverging in burn-in, before any draw is kept: the fit fails and the estimator keeps its last fit
    # (it returned normally with (4, 0, 3) samples and could not predict, and said "Lower step_size or use
    # the default step size" when the default was in use, a review)
    before = est.samples_.copy()
    with pytest.raises(ValueError, match=r"diverged .* before keeping any draw.*estimator is as it was.*"
                                         r"step_size=10 is too large"):
        est.set_params(n_burnin=200).fit(X, y)
    np.testing.assert_array_equal(est.samples_, before)
    assert est.predict_proba(X).shape == (len(X), 2)
    # GibbsSVM has no step size: its advice must not need one (it raised AttributeError, a review)
    gibbs = GibbsSVM(random_state=0)
    gibbs._n_burnin, gibbs.samples_ = 10, np.empty((4, 0, 3))
    with pytest.raises(ValueError, match="default step could not follow"):
        gibbs._finish(None, "diverged", None, 4)
    with pytest.raises(ValueError, match="default step could not follow it: this posterior is extremely "
                                         "curved.*standardise the features"):
        SubgradientHMC("sgnht", random_state=0).fit(X * 1e100, y)
    with pytest.raises(ValueError, match="n_samples"):
        SubgradientHMC(n_samples="long").fit(X, y)
    for bad in ({"max_time": -1.0}, {"max_iter": 0}, {"n_jobs": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SubgradientHMC(**bad).fit(X, y)


_MAKERS = [
    lambda nj: SubgradientHMC("sgnht", n_samples=50, n_burnin=120, batch_size=30, n_chains=3,
                              record_every=QUIET, random_state=4, n_jobs=nj),
    lambda nj: SubgradientHMC("hmc", n_samples=30, n_burnin=120, n_chains=3, record_every=QUIET,
                              random_state=4, n_jobs=nj),
    lambda nj: GibbsSVM(n_samples=30, n_chains=3, record_every=QUIET, random_state=4, n_jobs=nj),
]


@pytest.mark.parametrize("make", _MAKERS)
def test_same_seed_same_draws_whatever_n_jobs(make):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = make(1).fit(X, y)
        with parallel_threshold(0):  # a fit this small would otherwise stay in-process (bsvm.chains)
            b = make(2).fit(X, y)
        assert b.parallel_start_ == 0 and b.n_jobs_ == 2  # the chains did run in the workers
    # bit-identical: products with the data are computed at the full chain count (potential.ChainLayout)
    np.testing.assert_array_equal(a.samples_, b.samples_)
    np.testing.assert_array_equal(a.potential_, b.potential_)


def test_dask_backend_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    import joblib

    X, y = _data(80)
    kw = dict(n_samples=20, n_burnin=10, n_chains=2, record_every=QUIET, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = GibbsSVM(**kw).fit(X, y)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, distributed.Client(cluster):
            with joblib.parallel_config(backend="dask"), parallel_threshold(0):
                est = GibbsSVM(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(est.samples_, ref.samples_)


def test_predict_proba_draws_and_to_arviz():
    import arviz_stats

    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = SubgradientHMC("hmc", n_samples=40, n_burnin=50, record_every=QUIET, random_state=0).fit(X, y)
    P = est.predict_proba_draws(X[:5])
    assert P.shape == (4, 40, 5, 2)
    np.testing.assert_allclose(P.mean(axis=(0, 1)), est.predict_proba(X[:5]), rtol=1e-12)
    np.testing.assert_allclose(P.sum(-1), 1.0)
    dt = est.to_arviz()
    assert {"posterior", "sample_stats", "observed_data"} <= set(dt.children)
    # named variables (as a PyMC or NumPyro model's), each the matching columns of samples_
    assert dt["posterior"]["w"].shape == (4, 40, 2) and dt["posterior"]["b"].shape == (4, 40)
    assert list(dt["posterior"]["feature"].values) == ["x0", "x1"]
    assert est.param_names_ == ["w[x0]", "w[x1]", "b"]
    np.testing.assert_array_equal(dt["posterior"]["w"].values, est.samples_[..., :2])
    np.testing.assert_array_equal(dt["posterior"]["b"].values, est.samples_[..., 2])
    stats = set(dt["sample_stats"].data_vars)
    assert {"acceptance_rate", "step_size", "energy", "diverging", "n_steps", "lp"} <= stats
    np.testing.assert_array_equal(dt["observed_data"]["y"].values, y)
    table = arviz_stats.summary(dt)
    assert len(table) == 3 and np.all(np.isfinite(table["r_hat"]))
    # the run's metadata on the root and on each group (arviz-base wants attrs per group: a flat dict
    # was dropped with a warning), so a NetCDF file keeps it
    for node in (dt, dt["posterior"], dt["sample_stats"]):
        assert node.attrs["sampler"] == "hmc" and node.attrs["converged"] == int(est.converged_)
        assert node.attrs["stopping_rule"] == est.stopping_rule_
    g = GibbsSVM(n_samples=20, n_burnin=5, record_every=QUIET, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        g.fit(X, y)
    assert set(g.to_arviz()["sample_stats"].data_vars) == {"lp"}
    assert g.predict_proba_draws(X[:2]).shape == (4, 20, 2, 2)


def test_a_sharply_curved_posterior_caps_the_leapfrog_count_and_says_so():
    """c = 1e6 adapts a step of ~1e-6: a quarter orbit would take ~1e6 leapfrog steps per transition (a
    library user's fit ran for hours, unwarned). The count is capped at samplers.HMC.MAX_LEAPFROG and the
    end of burn-in warns at once; an ordinary c takes a few steps and does not warn."""
    from bsvm.subgradient.samplers import HMC

    X, y = _data(60)
    with pytest.warns(ConvergenceWarning, match=r"capped at 1,024.*c=1e\+06 is large"):
        est = SubgradientHMC(c=1e6, max_iter=210, record_every=QUIET, random_state=0).fit(X, y)
    # a budget spent in burn-in says so too (it said only "no draw was kept", a review)
    with pytest.warns(ConvergenceWarning, match=r"stopped by the budget, had the step size at .*capped"):
        SubgradientHMC(c=1e8, max_iter=120, record_every=QUIET, random_state=0).fit(X, y)
    steps = est._stats["n_leapfrog"]
    assert steps.max() == HMC.MAX_LEAPFROG and est.step_size_.max() < 1e-3 and est._leapfrog_capped > 1024
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # neither the cap's warning nor another
        ok = SubgradientHMC(c=1.0, record_every=QUIET, random_state=0).fit(X, y)
    assert ok.converged_ and ok._stats["n_leapfrog"].max() < 20


def test_named_columns_progress_totals_and_per_sampler_attributes():
    """A DataFrame's column names reach param_names_ and the tree (iris read w[setosa, x0]); a default
    fixed-length run's progress bar has its total (burn-in None gave a count only); attributes of one
    sampler are None for the others, as energy_ (NaN arrays, a library user's review)."""
    import pandas as pd

    X, y = _data()
    df = pd.DataFrame(X, columns=["height", "width"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = SubgradientHMC("hmc", n_samples=30, record_every=QUIET, random_state=0).fit(df, y)
        sgld = SubgradientHMC("sgld", n_samples=30, record_every=QUIET, random_state=0).fit(X, y)
    assert est.param_names_ == ["w[height]", "w[width]", "b"]
    tree = est.to_arviz(df)
    assert list(tree["posterior"]["feature"].values) == ["height", "width"]
    assert est._planned_iterations() == 200 + 30 and est.n_iter_ == 230
    assert est.accept_prob_.shape == (4, 30) and est.xi_ is None
    assert sgld.accept_prob_ is None and sgld.acceptance_rate_ is None and sgld.xi_ is None
    # divergences: hmc's flags, as its ArviZ sample_stats hold them; none for the minibatch samplers
    assert est.diverging_.dtype == bool and est.diverging_.shape == (4, 30) and sgld.diverging_ is None
    np.testing.assert_array_equal(est.diverging_, tree["sample_stats"]["diverging"].values)


def test_a_stuck_hmc_run_says_why_and_no_numpy_warning_leaks():
    """step_size=5 on Ripley (used as given, never adapted): acceptance ~0 and most transitions diverge.
    The warning said only "raise the budget" (a review); it now names the cause and the remedy, and the
    R-hat of chains that never moved leaks no numpy "divide by zero" warning."""
    from bsvm.datasets import make_ripley

    X, y = make_ripley(250, random_state=0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        est = SubgradientHMC(step_size=5.0, max_iter=1500, random_state=0).fit(X, y)
    assert float(est.acceptance_rate_.mean()) < 0.1
    texts = [str(w.message) for w in seen if issubclass(w.category, ConvergenceWarning)]
    assert len(texts) == 1 and "A larger budget would not help" in texts[0]
    assert "step_size=5 is used as given" in texts[0] and "raise the budget" not in texts[0]
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]
    # no burn-in: the step was never adapted, and the advice says so (it blamed c and the features)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        SubgradientHMC(c=1e4, preconditioner=None, n_burnin=0, n_samples=300, random_state=0).fit(X, y)
    texts = [str(w.message) for w in seen if issubclass(w.category, ConvergenceWarning)]
    assert any("with n_burnin=0 the step size was never adapted" in t for t in texts), texts
    # an adapted run on the same data says nothing of the kind
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        SubgradientHMC(max_iter=300, random_state=0).fit(X, y)
    assert not any("would not help" in str(w.message) for w in seen)


@pytest.mark.parametrize("make", ["hmc", "msbpm"])
def test_one_fixed_length_chain_that_met_the_ess_targets_is_not_told_to_raise_the_budget(make):
    """n_chains=1 with n_samples=2000: the ESS targets are met, R-hat cannot be had with one chain, so
    the warning says that (it said "raise the budget", which cannot help)."""
    from bsvm import MSBPM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(250, random_state=0)
    est = (SubgradientHMC(n_chains=1, n_samples=2000, random_state=0) if make == "hmc"
           else MSBPM(n_chains=1, n_samples=2000, random_state=0))
    with pytest.warns(ConvergenceWarning, match="R-hat is undefined with n_chains=1") as seen:
        est.fit(X, y)
    assert not any("raise the budget" in str(w.message) for w in seen)


@pytest.mark.parametrize(("kw", "said"), [
    ({"preconditioner": "adagrad"}, "ignores preconditioner='adagrad'"),
    ({"batch_size": 50, "step_decay": 0.5},
     r"ignores batch_size=50 \(read by sgld/sgnht\), step_decay=0.5 \(read by sgld/sgnht\)"),
    ({"sampler": "sgld", "n_leapfrog": 5}, "ignores n_leapfrog=5"),
    ({"sampler": "sgld", "diffusion": 2.0}, r"ignores diffusion=2.0 \(read by sgnht\)"),
    ({"diffusion": 2.0}, r"ignores diffusion=2.0 \(read by sgnht\)"),
])
def test_options_the_chosen_sampler_ignores_are_named(kw, said):
    """hmc silently used the identity metric for preconditioner="adagrad" and ignored the minibatch
    options (a review); the sampler now says which of the options given it does not read. Options it
    reads, at their defaults or not, say nothing."""
    from bsvm.datasets import make_ripley

    X, y = make_ripley(80, random_state=0)
    with pytest.warns(UserWarning, match=said):
        SubgradientHMC(n_samples=20, random_state=0, **kw).fit(X, y)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        SubgradientHMC("sgnht", diffusion=2.0, batch_size=40, n_samples=20, random_state=0).fit(X, y)
    assert not any("ignores" in str(w.message) for w in seen)


def test_a_run_with_fewer_draws_than_chains_converts_without_arviz_warnings():
    """n_samples=1 (4 chains, 1 draw): arviz-base guessed the axes swapped and warned eight times; the
    tree's leading axes are (chain, draw) by construction."""
    from bsvm.datasets import make_ripley

    X, y = make_ripley(80, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC(n_samples=1, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tree = est.to_arviz()
    assert tree["posterior"]["w"].shape[:2] == (4, 1)
    assert not [str(w.message) for w in seen]


def test_nystroem_says_when_it_caps_the_components_the_user_chose():
    """n_components=500 on 100 rows became 100 silently (a review); at the default, fewer rows than
    components is the normal small-data case and says nothing (the dashboard's small playgrounds showed
    the warning about an option the page does not show, a review)."""
    from bsvm.datasets import make_ripley

    X, y = make_ripley(70, random_state=0)
    with pytest.warns(UserWarning, match="n_components=500 becomes 70"):
        SubgradientHMC(features="nystroem", n_components=500, n_samples=20, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        est = SubgradientHMC(features="nystroem", n_samples=20, random_state=0).fit(X, y)
    assert not any("n_components" in str(w.message) for w in seen)
    assert est.samples_.shape[-1] == 71
