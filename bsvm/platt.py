"""The frequentist baseline: an SVC with Platt scaling.

``SVC(probability=True)`` is deprecated in scikit-learn 1.9; the same model is
``CalibratedClassifierCV(SVC(...), method="sigmoid", ensemble=False)``: internal cross-validated scores
fit the sigmoid, and one SVC is fitted on all the data.
"""

from __future__ import annotations

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from .base import BayesianClassifier
from .data import check_predict_data
from .params import RANDOM_STATE, Integral, Interval, StrOptions, positive


class PlattSVM(BayesianClassifier):
    """RBF (or other kernel) SVC with Platt-scaled probabilities.

    Parameters
    ----------
    C, gamma, kernel : passed to ``sklearn.svm.SVC``.
    cv : number of internal folds used to fit the sigmoid (at most the smallest class count).
    random_state : seeds the fold shuffling, so the sigmoid is reproducible.
    """

    # parameter table (bsvm/params.py), checked before the data
    _parameter_constraints = {
        "C": [positive()],
        "gamma": [StrOptions({"scale", "auto"}), positive()],
        "kernel": [StrOptions({"linear", "poly", "rbf", "sigmoid"}), callable],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, C=1.0, gamma="scale", kernel="rbf", cv=5, random_state=None):
        self.C = C
        self.gamma = gamma
        self.kernel = kernel
        self.cv = cv
        self.random_state = random_state

    def _iterate(self, X, y_index):
        n_splits = int(max(2, min(self.cv, np.bincount(y_index).min())))
        folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=self.random_state)
        svc = SVC(C=self.C, gamma=self.gamma, kernel=self.kernel)
        model = CalibratedClassifierCV(svc, method="sigmoid", cv=folds, ensemble=False)
        model.fit(X, y_index)
        self.calibrated_ = model
        self.svc_ = model.calibrated_classifiers_[0].estimator
        self.support_vectors_ = self.svc_.support_vectors_
        yield 1, {"n_support": float(len(self.svc_.support_))}, {}

    def _predict_proba(self, X):
        proba = self.calibrated_.predict_proba(X)
        out = np.zeros((X.shape[0], len(self.classes_)))
        out[:, self.calibrated_.classes_] = proba
        return out

    def decision_function(self, X):
        """The SVC's score; positive means ``classes_[1]`` for binary problems."""
        X = check_predict_data(self, X)
        return self.svc_.decision_function(X)
