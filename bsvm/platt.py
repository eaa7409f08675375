"""The frequentist baseline: an SVC with Platt scaling.

``SVC(probability=True)`` is deprecated in scikit-learn 1.9; the same model is
``CalibratedClassifierCV(SVC(...), method="sigmoid", ensemble=False)``: internal cross-validated scores
fit the sigmoid, and one SVC is fitted on all the data.

A class with a single training row cannot appear in both a training and a held-out fold, so stratified
cross-validation is impossible. Then (with a ``UserWarning``) the SVC is fitted on all the data and the
sigmoid on its own training scores (``FrozenEstimator``): Platt's original in-sample fit, which is
overconfident because the SVC has seen the points it is calibrated on.
"""

from __future__ import annotations

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from ._userwarn import warn_user
from .base import BayesianClassifier, log_odds_scores
from .data import check_predict_data
from .params import RANDOM_STATE, IntInterval, StrOptions, positive


class PlattSVM(BayesianClassifier):
    """RBF (or other kernel) SVC with Platt-scaled probabilities.

    Parameters
    ----------
    C, gamma, kernel : passed to ``sklearn.svm.SVC``.
    cv : number of internal folds used to fit the sigmoid (at most the smallest class count). When a class
        has a single training row, no folds are possible: the sigmoid is then fitted on the SVC's training
        scores, with a warning (see the module docstring).
    random_state : seeds the fold shuffling, so the sigmoid is reproducible.

    ``predict``, ``predict_proba`` and ``decision_function`` agree: ``predict`` is the most probable class,
    and ``decision_function`` is the log-odds log(p1 / p0) of ``predict_proba`` (multi-class: the log
    probabilities), so its sign is ``predict``'s. The SVC's own margin, :meth:`svc_decision_function`,
    ranks points the same way (Platt's sigmoid is monotone) but its zero is not the 0.5 threshold: the
    sigmoid 1 / (1 + exp(A f + B)) is fitted on cross-validated scores, and B != 0 moves the boundary to
    f = -B / A, so thresholding the margin at 0 disagrees with ``predict`` near the boundary (10 % of
    rows in the issue's example).

    Input scale (:func:`bsvm.data.check_input_scale`): "adaptive" with the default RBF kernel and
    ``gamma="scale"`` (1 / (d Var(X)) follows the data's overall scale), otherwise "unit"; fit warns when
    column scales differ by more than 1e3, as one gamma serves every column.

    Attributes
    ----------
    calibrated_ : the fitted ``CalibratedClassifierCV`` (its sigmoid's A and B in its calibrators).
    svc_ : the SVC fitted on all the training rows.  support_vectors_ : its support vectors.
    classes_, n_features_in_, feature_names_in_ : as in scikit-learn.
    """

    # parameter table (bsvm/params.py), checked before the data
    _parameter_constraints = {
        "C": [positive()],
        "gamma": [StrOptions({"scale", "auto"}), positive()],
        "kernel": [StrOptions({"linear", "poly", "rbf", "sigmoid"}), callable],
        "cv": [IntInterval(2, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def _input_scale_rule(self):
        # gamma="scale" is 1 / (d Var(X)): an RBF kernel that follows the data's overall scale
        return "adaptive" if self.kernel == "rbf" and self.gamma == "scale" else "unit"

    def __init__(self, C=1.0, gamma="scale", kernel="rbf", cv=5, random_state=None):
        self.C = C
        self.gamma = gamma
        self.kernel = kernel
        self.cv = cv
        self.random_state = random_state

    _min_per_class = 1
    _stepwise = False  # one SVC fit: no progress bar

    def _iterate(self, X, y_index):
        smallest = int(np.bincount(y_index).min())
        svc = SVC(C=self.C, gamma=self.gamma, kernel=self.kernel)
        if smallest < 2:
            few = self.classes_[np.bincount(y_index) < 2].tolist()  # plain labels, not np.str_('x')
            warn_user(f"PlattSVM: class(es) {few} have a single training row, so the sigmoid cannot be "
                      "cross-validated; it is fitted on the SVC's own training scores (in-sample, "
                      "overconfident).", UserWarning)
            # one "fold" of all rows: scikit-learn >= 1.8 cross-validates a frozen SVC with its default
            # 5 folds (no-op fits), which fails below 5 rows ("Cannot have number of splits n_splits=5")
            every = np.arange(len(y_index))
            model = CalibratedClassifierCV(FrozenEstimator(svc.fit(X, y_index)), method="sigmoid",
                                           cv=[(every, every)])
        else:
            n_splits = int(max(2, min(self.cv, smallest)))
            folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=self.random_state)
            model = CalibratedClassifierCV(svc, method="sigmoid", cv=folds, ensemble=False)
        model.fit(X, y_index)
        self.calibrated_ = model
        self.svc_ = model.calibrated_classifiers_[0].estimator
        if isinstance(self.svc_, FrozenEstimator):
            self.svc_ = self.svc_.estimator
        self.support_vectors_ = self.svc_.support_vectors_
        yield 1, {"n_support": float(len(self.svc_.support_))}, {}

    def _predict_proba(self, X):
        proba = self.calibrated_.predict_proba(X)
        out = np.zeros((X.shape[0], len(self.classes_)))
        out[:, self.calibrated_.classes_] = proba
        return out

    def decision_function(self, X):
        """Scores consistent with ``predict_proba`` and ``predict``: binary, the log-odds log(p1 / p0)
        (positive means ``classes_[1]``); multi-class, the log probabilities (n, K)."""
        return log_odds_scores(self.predict_proba(X))

    def svc_decision_function(self, X):
        """The underlying SVC's margin (see the class docstring for how it relates to ``predict``)."""
        X = check_predict_data(self, X)
        return self.svc_.decision_function(X)
