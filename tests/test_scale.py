"""No silent nonsense: input scales (bsvm.data.check_input_scale and each method's rule), bounds that
pin a hyperparameter, non-finite predictions, extreme magnitudes, PlattSVM's consistent outputs."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bsvm import MSBPM, SBSVM, GibbsSVM, PlattSVM, SeegerARD, SubgradientHMC
from bsvm.data import DataScaleWarning
from bsvm.datasets import make_ripley

# default settings where they decide the scale behaviour; shorter runs where only time is saved
METHODS = {
    "PlattSVM": lambda: PlattSVM(random_state=0),
    "SBSVM": lambda: SBSVM(n_inducing=30, max_iter=300, random_state=0),
    "SBSVM-linear": lambda: SBSVM(variant="linear", max_iter=100, random_state=0),
    "MSBPM": lambda: MSBPM(n_chains=8, burn_in=50, n_samples=20, thin=2, random_state=0),
    "SubgradientHMC": lambda: SubgradientHMC(n_samples=200, n_burnin=200, n_chains=2, random_state=0),
    "GibbsSVM": lambda: GibbsSVM(n_samples=200, n_burnin=50, n_chains=2, random_state=0),
    "SeegerARD": lambda: SeegerARD(max_iter=5),
}


@pytest.fixture(scope="module")
def ripley():
    X, y = make_ripley(200, random_state=0)
    Xt, yt = make_ripley(1000, random_state=1)
    return X, y, Xt, yt


@pytest.mark.parametrize("name", METHODS)
def test_scaled_copy_gives_the_same_accuracy(name, ripley):
    X, y, Xt, yt = ripley
    accuracy = {}
    for scale in (1.0, 1e6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataScaleWarning)  # the "unit"-rule methods say so; fine here
            model = METHODS[name]().fit(X * scale, y)
        accuracy[scale] = np.mean(model.predict(Xt * scale) == yt)
    assert accuracy[1.0] > 0.8
    assert abs(accuracy[1e6] - accuracy[1.0]) <= 0.02, accuracy


def _scale_warnings(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, DataScaleWarning)]


def test_scale_rules(ripley):
    X, y, _, _ = ripley
    spread = X * np.array([1.0, 1e5])
    # adaptive methods: only columns on very different scales
    for model in (PlattSVM(), SBSVM(n_inducing=10, max_iter=20, standardize=False),
                  MSBPM(n_chains=4, burn_in=2, n_samples=2)):
        assert _scale_warnings(model, X * 1e-6, y) == []
        (msg,) = _scale_warnings(model, spread, y)
        assert "column scales differ by a factor of" in msg and "column 1" in msg and "Standardise" in msg
    # "unit" methods: a prior on raw weights, so tiny or huge columns are flagged too
    (msg,) = _scale_warnings(GibbsSVM(n_samples=5, n_burnin=5, n_chains=1), X * 1e-6, y)
    assert "prior assumes inputs of order 1" in msg and "sd 4" in msg
    assert _scale_warnings(GibbsSVM(n_samples=5, n_burnin=5, n_chains=1), X, y) == []
    # ... whose spread is a prior's fault, not a shared distance's ("the widest decide alone" was wrong)
    (msg,) = _scale_warnings(GibbsSVM(n_samples=5, n_burnin=5, n_chains=1), X * np.array([1.0, 1e4]), y)
    assert "N(0, 1) prior on every weight holds column 0's effect" in msg and "widest" not in msg
    # SeegerARD and SBSVM (by default) standardise: never warn
    assert _scale_warnings(SeegerARD(max_iter=1, inner_maxiter=3), spread, y) == []
    assert _scale_warnings(SBSVM(n_inducing=10, max_iter=20), spread, y) == []


def test_pinned_hyperparameter_warns(ripley):
    X, y, _, _ = ripley
    model = SBSVM(n_inducing=20, lengthscale=1e-5, max_iter=200, hyper_lr=1.0, hyper_every=1, tol=0,
                  hyper_prior_std=None, standardize=False, random_state=0)   # plain ML-II, raw units
    with pytest.warns(ConvergenceWarning, match="stopped at the bound of its range"):
        model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SBSVM(n_inducing=20, max_iter=200, random_state=0).fit(X, y)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_extreme_magnitudes_refused_clearly(scale, ripley):
    X, y, _, _ = ripley
    for model in (SBSVM(), MSBPM(), PlattSVM(), GibbsSVM()):
        with pytest.raises(ValueError, match="too (large|small) for float64 arithmetic on squares"):
            model.fit(X * scale, y)


def test_non_finite_prediction_names_the_cause(ripley):
    X, y, _, _ = ripley
    model = GibbsSVM(n_samples=10, n_burnin=5, n_chains=2, random_state=0).fit(X, y)
    model.samples_[0, 3, 1] = np.nan  # as a diverged sampler would leave it
    with pytest.raises(ValueError, match=r"GibbsSVM produced non-finite probabilities .* samples_.*diverged"):
        model.predict_proba(X)
    with pytest.raises(ValueError, match="non-finite probabilities"):
        model.predict(X)


def test_platt_outputs_agree(ripley):
    X, y, Xt, _ = ripley
    model = PlattSVM(random_state=0).fit(X, y)
    proba, pred, score = model.predict_proba(Xt), model.predict(Xt), model.decision_function(Xt)
    np.testing.assert_array_equal(pred, model.classes_[(proba[:, 1] > proba[:, 0]).astype(int)])
    np.testing.assert_array_equal(score > 0, pred == model.classes_[1])
    # the SVC margin ranks the same way (the sigmoid is monotone) but its zero is not the threshold
    margin = model.svc_decision_function(Xt)
    assert np.all(np.diff(score[np.argsort(margin)]) >= -1e-9)
