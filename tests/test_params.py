"""The parameter tables (bsvm/params.py) and the fit contract of bsvm/base.py: parameters checked first
and named, failed fits rolled back, labels printed as written, mixed label types refused."""

import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_param_validation

from bsvm import MSBPM, SBSVM, GibbsSVM, PlattSVM, SeegerARD, SubgradientHMC
from bsvm.datasets import make_ripley

FAST = [
    PlattSVM(random_state=0),
    SBSVM(n_inducing=10, max_iter=20, random_state=0),
    MSBPM(n_chains=4, burn_in=2, n_samples=3, thin=1, random_state=0),
    SubgradientHMC(sampler="sgld", n_samples=10, n_burnin=10, n_chains=2, random_state=0),
    GibbsSVM(n_samples=10, n_burnin=5, n_chains=2, random_state=0),
    SeegerARD(max_iter=2, inner_maxiter=5),
]
IDS = [type(e).__name__ for e in FAST]


@pytest.fixture(scope="module")
def data():
    X, y = make_ripley(40, random_state=3)
    return X, np.where(y == 1, "imL", "other")


@pytest.mark.parametrize("est", FAST, ids=IDS)
def test_table_covers_every_parameter_and_names_bad_values(est):
    # scikit-learn's own check: one entry per parameter, and a wrongly typed or out-of-range value of
    # each raises InvalidParameterError "The 'p' parameter of Name must be ... Got ... instead."
    check_param_validation(type(est).__name__, est)


@pytest.mark.parametrize("est", FAST, ids=IDS)
def test_bad_parameter_named_before_bad_data(est):
    X = np.full((10, 2), np.nan)
    first = next(iter(type(est)._parameter_constraints))
    bad = clone(est).set_params(**{first: object()})
    with pytest.raises((ValueError, TypeError), match=f"'{first}' parameter of {type(est).__name__}"):
        bad.fit(X, [0, 1] * 5)
    with pytest.raises((ValueError, TypeError), match=f"'{first}' parameter"):
        bad.fit_iter(X, [0, 1] * 5)  # raised at the call, before the first record is asked for


@pytest.mark.parametrize("est", FAST, ids=IDS)
def test_a_boolean_is_not_a_count(est):
    """Every integer parameter refuses True (Python's bool is an Integral: n_chains=True passed the table
    and failed after the data check, with a plain ValueError, a review), before bad data is looked at."""
    from bsvm.params import IntInterval

    X = np.full((10, 2), np.nan)
    counts = [k for k, cons in type(est)._parameter_constraints.items()
              if any(isinstance(c, IntInterval) for c in cons)]
    assert counts
    for name in counts:
        with pytest.raises((ValueError, TypeError), match=rf"'{name}' parameter of .* Got True instead"):
            clone(est).set_params(**{name: True}).fit(X, [0, 1] * 5)


@pytest.mark.parametrize(("params", "name"), [
    ({"tau": -1.0}, "tau"), ({"kappa": 2.0}, "kappa"), ({"lengthscale": -1.0}, "lengthscale"),
    ({"elbo_batch_size": 0}, "elbo_batch_size"), ({"n_inducing": 0}, "n_inducing"),
    ({"n_inducing": -5}, "n_inducing"), ({"n_inducing": 1.5}, "n_inducing"),
    ({"kernel": "linear", "prior_variance": 0}, "prior_variance"), ({"max_iter": "10"}, "max_iter"),
    ({"variance": float("nan")}, "variance"), ({"lengthscale": float("inf")}, "lengthscale"),
])
def test_sbsvm_issue_parameters_named(data, params, name):
    X, y = data
    with pytest.raises((ValueError, TypeError), match=rf"'{name}' parameter of SBSVM must be .* Got "):
        SBSVM(**params).fit(X, y)


def test_sgld_huge_step_named(data):
    X, y = data
    with pytest.raises(ValueError, match=r"'step_size' parameter of SubgradientHMC .*\(0\.0, 10\.0\]"):
        SubgradientHMC(sampler="sgld", step_size=1e6).fit(*data)


def test_numpy_scalars_print_plainly(data):
    with pytest.raises(ValueError, match=r"Got -1\.0 instead"):
        SBSVM(tau=np.float64(-1.0)).fit(*data)


def _state(est):
    return {k: v for k, v in vars(est).items() if k not in est.get_params(deep=False)}


def _same_state(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] is b[k], k  # the very objects of the previous fit, not a half-built new one


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("est", FAST, ids=IDS)
def test_failed_refit_restores_previous_fit(est, data, monkeypatch):
    X, y = data
    est = clone(est).fit(X, y)
    before = _state(est)
    proba = est.predict_proba(X)
    inner = type(est)._iterate

    def failing(self, X, y_index):  # fails after the first record: attributes are half replaced
        yield next(inner(self, X, y_index))
        raise _Boom("engine failure")

    monkeypatch.setattr(type(est), "_iterate", failing)
    X2 = np.hstack([X, X])  # a different feature count: n_features_in_ would change too
    with pytest.raises(_Boom):
        est.fit(X2, y)
    _same_state(before, _state(est))
    # and a fit_iter consumer that meets the failure mid-way
    records = []
    with pytest.raises(_Boom):
        for rec in est.fit_iter(X2, y):
            records.append(rec)
    assert len(records) == 1
    _same_state(before, _state(est))
    np.testing.assert_array_equal(est.predict_proba(X), proba)
    # a failing data check leaves it alone too
    with pytest.raises(ValueError, match="mixes label types"):
        est.fit(X, np.array(["a", 1] * 20, dtype=object))
    _same_state(before, _state(est))


@pytest.mark.parametrize("est", FAST, ids=IDS)
def test_failed_first_fit_leaves_unfitted(est, data, monkeypatch):
    X, y = data
    est = type(est)(**est.get_params())

    def failing(self, X, y_index):
        raise _Boom("engine failure")
        yield

    monkeypatch.setattr(type(est), "_iterate", failing)
    with pytest.raises(_Boom):
        est.fit(X, y)
    assert _state(est) == {}
    with pytest.raises(NotFittedError):
        est.predict(X)


def test_break_keeps_the_state_reached(data):
    X, y = data
    est = SBSVM(n_inducing=10, max_iter=50, progress_every=5, random_state=0)
    for rec in est.fit_iter(X, y):
        if rec.iteration >= 10:
            break
    assert est.n_iter_ == 10 and len(est.history_) == 3
    assert est.predict_proba(X).shape == (len(X), 2)


def test_labels_printed_as_written():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError) as info:  # SBSVM needs two rows per class (PlattSVM and MSBPM accept one)
        SBSVM().fit(X, np.array(["imL"] * 19 + ["x"]))
    assert "['x']" in str(info.value) and "np.str_" not in str(info.value)
    with pytest.raises(ValueError, match=re.escape("only 1 class ('imL')")):
        PlattSVM().fit(X, np.array(["imL"] * 20))


@pytest.mark.parametrize("y", [
    np.array(["a"] * 10 + [1] * 10, dtype=object), ["a"] * 10 + [1] * 10, [2.0] * 10 + ["b"] * 10,
])
def test_mixed_label_types_refused(y):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match=r"y mixes label types \(number .*, string .*\)"):
        SBSVM().fit(X, y)


def test_progress_bar(data, monkeypatch, capsys):
    import tqdm.auto

    bars = []

    class Recorder(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "mininterval": 0.0, "leave": True})
            self.postfixes = []
            bars.append(self)

        def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
            self.postfixes.append(dict(ordered_dict))
            super().set_postfix(ordered_dict, refresh=refresh, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    X, y = data
    SBSVM(n_inducing=10, max_iter=20, kernel="rbf", tol=0, random_state=0).fit(X, y, progress=True)
    (bar,) = bars  # one stage of max_iter steps (tol=0: no stopping rule)
    assert bar.total == 20 and bar.n == 20 and "elbo" in bar.postfixes[-1]
    assert "SBSVM" in capsys.readouterr().err
    SBSVM(n_inducing=10, max_iter=20, tol=0, random_state=0).fit(X, y, progress=False)
    assert len(bars) == 1 and capsys.readouterr().err == ""
    # the stopping rule decides the length: no total (max_iter is a cap; "2 %" then vanished), a count
    SBSVM(n_inducing=10, max_iter=1000, random_state=0).fit(X, y, progress=True)
    assert bars[-1].total is None and 0 < bars[-1].n < 1000
    PlattSVM().fit(X, y, progress=True)  # fitted in one go: no bar ("0it [00:00, ?it/s]")
    assert len(bars) == 2
    # a sampler's rule: draws so far, R-hat and the worse ESS against the rule's targets
    GibbsSVM(random_state=0).fit(X, y, progress=True)
    last = bars[-1].postfixes[-1]
    assert set(last) == {"draws", "R-hat", "ESS"} and last["R-hat"].endswith("(target <= 1.01)")
    assert last["ESS"].endswith("/400") and int(last["draws"]) > 0
    with pytest.raises(ValueError, match="progress='yes'"):
        PlattSVM().fit(X, y, progress="yes")
    # a fit's warnings go out while the bar is open, through it, and the display is put back after
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    shown = warnings.showwarning
    with pytest.warns(ConvergenceWarning, match="n_samples=20"):
        GibbsSVM(n_samples=20, random_state=0).fit(X, y, progress=True)
    assert warnings.showwarning is shown


@pytest.mark.parametrize("est, match", [
    (GibbsSVM(c=0), "GibbsSVM needs c > 0"),
    (MSBPM(sampler="lines", n_chains=2), "n_chains must be at least 4"),
], ids=["gibbs c=0", "msbpm lines n_chains=2"])
def test_rules_between_parameters_are_checked_at_the_call_before_the_data(data, est, match):
    """A rule the table cannot state was checked at the first step, after the data: fit_iter returned a
    generator, and with a NaN in X the data was blamed instead of the parameter."""
    X, y = data
    bad = X.copy()
    bad[0, 0] = np.nan
    for Xi in (X, bad):
        with pytest.raises(ValueError, match=match):
            est.fit_iter(Xi, y)  # at the call, not at next()


@pytest.mark.parametrize("inducing, match", [
    ([[0.0, 0.0, 0.0]], r"inducing must be an \(m, 2\) array"),
    (np.zeros((0, 2)), "inducing holds no points"),
    ([[0.0, np.nan]], "NaN or infinite"),
], ids=["too wide", "empty", "nan"])
def test_given_inducing_inputs_are_checked_with_the_data_at_the_call(data, inducing, match):
    """An empty array fitted a flat 0.5 everywhere; a wrong width raised only at the first step."""
    with pytest.raises(ValueError, match=match):
        SBSVM(inducing=inducing).fit_iter(*data)


def test_warnings_point_at_the_users_line_and_sbsvm_warns_once_per_fit(data):
    """Warnings carried bsvm's own file and line (base.py, the estimator), whichever way the fit was
    called; a kernel="auto" fit out of budget warned once per candidate (four times), with "gained nan
    nats" where the ELBO had been evaluated too rarely for the rule."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SBSVM(max_iter=3, random_state=0).fit(X, y)
        for _ in GibbsSVM(n_samples=5, n_burnin=2, random_state=0).fit_iter(X, y):
            pass
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert [str(w.message).split(" ")[0] for w in conv] == ["SBSVM", "GibbsSVM"]
    assert all(w.filename == __file__ for w in conv), {w.filename for w in conv}
    text = str(conv[0].message)
    assert "nan" not in text and "too few for the rule" in text and "of its" in text


def test_to_arviz_before_fit_and_predict_messages(data):
    X, y = data
    for est in (SubgradientHMC(), GibbsSVM()):
        with pytest.raises(NotFittedError):
            est.to_arviz()
    model = PlattSVM(random_state=0).fit(X, y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="before predicting"):
        model.predict(bad)
