"""The dashboard's numerical side, free of Streamlit: preparing a split, evaluation grids, metrics.

Everything here is a plain function of arrays and estimators, so tests and the benchmark call the very
code the pages call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bsvm.data import LoadedCSV

# bsvm.datasets (scipy.special) and bsvm.metrics are imported where they are used: the Data page imports
# this module, and it must be usable within 2 s of the request.


@dataclass
class Prepared:
    """One train/test split as every page sees it (features already standardised if asked)."""

    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    label_name: str
    classes: np.ndarray
    center: np.ndarray
    scale: np.ndarray
    truth: str | None = None  # name in bsvm.datasets.GENERATORS, when p(y = classes[1] | x) is known
    key: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    @property
    def binary(self) -> bool:
        return len(self.classes) == 2

    def index(self, y) -> np.ndarray:
        """Labels as positions in ``classes`` (what bsvm.metrics expects)."""
        return np.searchsorted(self.classes, y)

    def true_proba(self, X) -> np.ndarray | None:
        """True p(y = classes[1] | x) at points given in the (standardised) model space, if known."""
        if self.truth is None:
            return None
        from bsvm.datasets import GENERATORS

        return GENERATORS[self.truth].proba(np.asarray(X) * self.scale + self.center)

    def subset(self, features: list[int]) -> Prepared:
        """The same split restricted to some feature columns (the truth no longer applies)."""
        f = list(features)
        return Prepared(self.X_train[:, f], self.X_test[:, f], self.y_train, self.y_test,
                        [self.feature_names[j] for j in f], self.label_name, self.classes,
                        self.center[f], self.scale[f], None, f"{self.key}|sub{f}", dict(self.meta))


def prepare(loaded: LoadedCSV, features: list[str] | None = None, standardize: bool = True,
            test_size: float = 0.3, seed: int = 0, truth: str | None = None, key: str = "") -> Prepared:
    """Split (stratified) and standardise with the training rows' mean and standard deviation.

    ``truth`` is kept only when every original feature is used in its original order, because the true
    p(y|x) of a generated set is a function of all its coordinates.
    """
    names = list(loaded.feature_names)
    features = list(features) if features else names
    missing = [f for f in features if f not in names]
    if missing:
        raise ValueError(f"Feature columns {missing} are not numeric columns of this table; "
                         f"choose from {names}.")
    cols = [names.index(f) for f in features]
    X = loaded.X[:, cols]
    y = np.asarray(loaded.y)
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"The label column {loaded.label_name!r} has only one class: "
                         "a classifier needs two.")
    if not 0.05 <= test_size <= 0.8:
        raise ValueError("The test fraction must be between 0.05 and 0.8.")
    n_test = int(np.ceil(test_size * len(y)))
    if counts.min() < 2 or n_test < len(classes) or len(y) - n_test < 2 * len(classes):
        table = dict(zip(classes.tolist(), counts.tolist()))
        raise ValueError(f"Too few rows to split: every class needs at least 2 rows in the training part "
                         f"and 1 in the test part (class counts {table}).")
    train, test = stratified_split(y, n_test, seed)
    X_tr, X_te, y_tr, y_te = X[train], X[test], y[train], y[test]
    if standardize:
        center = X_tr.mean(axis=0)
        scale = X_tr.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
    else:
        center, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    keep_truth = truth if features == names else None
    return Prepared((X_tr - center) / scale, (X_te - center) / scale, y_tr, y_te, features,
                    loaded.label_name, classes, center, scale, keep_truth, key)


def stratified_split(y: np.ndarray, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) with ``n_test`` test rows shared among the classes in proportion to their
    sizes (largest remainders), at least one per class and at least two training rows per class left.

    A few lines of NumPy instead of scikit-learn's ``train_test_split``: this runs when the Data page first
    opens, and importing scikit-learn would dominate the time until the page is usable.
    """
    rng = np.random.default_rng(seed)
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    share = n_test * counts / counts.sum()
    take = np.floor(share).astype(int)
    take[np.argsort(take - share)[: n_test - take.sum()]] += 1  # largest remainders first
    take = np.clip(take, 1, counts - 2)
    test = np.concatenate([rng.permutation(np.flatnonzero(y_idx == k))[:take[k]]
                           for k in range(len(classes))])
    test = np.sort(test)
    return np.setdiff1d(np.arange(len(y)), test), test


def pca2(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First two principal components of X (centred) and the fraction of variance each explains."""
    Xc = X - X.mean(axis=0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    var = s**2 / max(np.sum(s**2), 1e-300)
    k = min(2, Vt.shape[0])
    Z = Xc @ Vt[:k].T
    if k == 1:
        Z = np.column_stack([Z, np.zeros(len(Z))])
        var = np.append(var, 0.0)
    return Z, var[:2]


@dataclass(frozen=True)
class Grid:
    xs: np.ndarray
    ys: np.ndarray

    @property
    def points(self) -> np.ndarray:
        gx, gy = np.meshgrid(self.xs, self.ys)
        return np.column_stack([gx.ravel(), gy.ravel()])

    def reshape(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values).reshape(len(self.ys), len(self.xs))


def make_grid(X: np.ndarray, n: int = 60, pad: float = 0.15) -> Grid:
    """An n x n grid covering the 2-D points with a margin of ``pad`` times their range."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    return Grid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))


def positive_proba(model, X: np.ndarray) -> np.ndarray:
    """p(y = classes_[1] | x) for binary models; the top class's probability for multi-class ones."""
    P = model.predict_proba(X)
    return P[:, 1] if P.shape[1] == 2 else P.max(axis=1)


def uncertainty(model, X: np.ndarray) -> tuple[np.ndarray, str]:
    """A map of predictive uncertainty: the latent variance where the model has one, else the entropy."""
    if hasattr(model, "predict_latent"):
        try:
            _, var = model.predict_latent(X)
            return np.asarray(var, dtype=float), "latent variance"
        except (AttributeError, NotImplementedError):
            pass
    P = np.clip(model.predict_proba(X), 1e-12, 1.0)
    return -np.sum(P * np.log(P), axis=1), "predictive entropy (nats)"


def overlay_points(model) -> tuple[np.ndarray | None, str]:
    """Points the method itself learned and that are worth drawing: inducing points or support vectors."""
    for attr, name in (("inducing_points_", "inducing points"), ("support_vectors_", "support vectors")):
        Z = getattr(model, attr, None)
        if Z is not None and np.ndim(Z) == 2 and Z.shape[1] == 2:
            return np.asarray(Z), name
    return None, ""


def evaluate(model, data: Prepared) -> dict:
    """Test-set metrics (error, Brier, log loss, ECE, AUC, and deviation from the truth where known)."""
    from bsvm.metrics import classification_report

    proba = model.predict_proba(data.X_test)
    y_idx = data.index(data.y_test)
    p_true = data.true_proba(data.X_test)
    report = classification_report(y_idx, proba, p_true=p_true)
    return {"proba": proba, "y_index": y_idx, "report": report, "p_true": p_true}


def thin_index(n: int, max_points: int) -> np.ndarray:
    """At most ``max_points`` evenly spaced indices into a series of length n, always keeping the last."""
    if n <= max_points:
        return np.arange(n)
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
    return idx
