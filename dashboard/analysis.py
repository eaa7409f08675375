"""The dashboard's numerical side, free of Streamlit: preparing a split, evaluation grids, metrics.

Everything here is a plain function of arrays and estimators, so tests and the benchmark call the very
code the pages call.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# class_name: the Data page's too-few-rows message read "class class_a: 30 rows" (a crawl)
from bsvm.data import LoadedCSV, class_name, says_class


def _classes(labels, items=None) -> str:
    """``labels`` in a sentence: "class 2", "classes 0, 1", but "class_c" or "class_b, class_c" as they are
    (not "classes class_b, class_c"). ``items``: the text per label (default: the label)."""
    labels = [str(c) for c in labels]
    text = ", ".join(items if items is not None else labels)
    if all(says_class(n) for n in labels):
        return text
    return f"class{'es' if len(labels) > 1 else ''} {text}"


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
    truth_kw: dict = field(default_factory=dict)  # the generator's settings its p(y|x) needs (noise)
    notes: tuple = ()  # what the split left out ("Left out class C (1 row) ...")
    #: the training and the test rows' positions among the file's lines under its header
    #: (``LoadedCSV.rows``: 0 = the first line under it; the table's own order for a table not read from a
    #: file), for :func:`split_csv`
    rows_train: np.ndarray | None = None
    rows_test: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    @property
    def axis_names(self) -> list[str]:
        """Axis titles for the features as plotted: "x1 (standardised)" when the split was standardised
        (the maps and scatters show standardised values; the raw column name alone misread the scale)."""
        std = not (np.all(self.center == 0) and np.all(self.scale == 1))
        return [f"{n} (standardised)" if std else str(n) for n in self.feature_names]

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

        return GENERATORS[self.truth].proba(np.asarray(X) * self.scale + self.center, **self.truth_kw)

    def subset(self, features: list[int]) -> Prepared:
        """The same split restricted to some feature columns (the truth no longer applies)."""
        f = list(features)
        return Prepared(self.X_train[:, f], self.X_test[:, f], self.y_train, self.y_test,
                        [self.feature_names[j] for j in f], self.label_name, self.classes,
                        self.center[f], self.scale[f], None, f"{self.key}|sub{f}", dict(self.meta))


def own_columns(loaded: LoadedCSV) -> list[str]:
    """The table's own feature columns: every numeric column but the label, in the file's order (what a
    generator wrote, whatever subset or order was loaded)."""
    frame = loaded.frame
    if frame is None:
        return list(loaded.feature_names)
    return [str(c) for c in frame.columns
            if str(c) != loaded.label_name and pd.api.types.is_numeric_dtype(frame[c])]


def truth_applies(loaded: LoadedCSV, features: list[str], truth: str | None) -> bool:
    """Whether a generator's true p(y = 1 | x) describes these axes: the features must be the table's own
    columns, all of them, in order (the truth is a function of every coordinate, in the generator's
    order), and the labels the generator's 0/1 (its p is of class 1)."""
    if truth is None or list(features) != own_columns(loaded):
        return False
    return set(np.unique(np.asarray(loaded.y)).tolist()) <= {0, 1}


class TooFewRowsError(ValueError):
    """The table cannot be split; ``rare``: its classes with fewer than :data:`MIN_CLASS_ROWS` rows."""

    def __init__(self, message: str, rare: list, classes_left: int = 0):
        super().__init__(message)
        self.rare = rare
        self.classes_left = classes_left  # classes that would remain without the rare ones


#: rows a class needs for the stratified split: 2 in the training part (bsvm's estimators refuse fewer).
#: A class of exactly 2 rows is kept whole for training (the page says so); from 3 rows on, at least one
#: row goes to the test part.
MIN_CLASS_ROWS = 2


def prepare(loaded: LoadedCSV, features: list[str] | None = None, standardize: bool = True,
            test_size: float = 0.3, seed: int = 0, truth: str | None = None, key: str = "",
            truth_kw: dict | None = None, drop_rare: bool = False) -> Prepared:
    """Split (stratified) and standardise with the training rows' mean and standard deviation.

    ``drop_rare``: leave out the rows of classes with fewer than :data:`MIN_CLASS_ROWS` rows (too few
    to fit) instead of refusing the table; ``notes`` then says which. A class of exactly
    :data:`MIN_CLASS_ROWS` rows has no test rows, and ``notes`` says that too.

    ``truth`` is kept only when the axes are the generator's own (:func:`truth_applies`): every original
    feature in its original order, because the true p(y|x) of a generated set is a function of all its
    coordinates. ``truth_kw`` are the generator settings its p(y|x) needs (e.g. ``noise`` for moons).
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
    rows = getattr(loaded, "rows", None)
    rows = np.arange(len(y)) if rows is None else np.asarray(rows)
    classes, counts = np.unique(y, return_counts=True)
    notes = []
    rare = counts < MIN_CLASS_ROWS
    if drop_rare and rare.any() and (~rare).sum() >= 2:
        keep = ~np.isin(y, classes[rare])
        gone = list(zip(classes[rare].tolist(), counts[rare].tolist()))
        said = _classes([k for k, _ in gone], [f"{k} ({n} row{'' if n == 1 else 's'})" for k, n in gone])
        notes.append(f"Left out {said}: a class needs at least "
                     f"{MIN_CLASS_ROWS} training rows to be fitted. {int(keep.sum())} rows remain.")
        X, y, rows = X[keep], y[keep], rows[keep]
        classes, counts = classes[~rare], counts[~rare]
    if len(classes) < 2:
        raise ValueError(f"The label column {loaded.label_name!r} has only one class: "
                         "a classifier needs two.")
    if not 0.05 <= test_size <= 0.8:
        raise ValueError("The test fraction must be between 0.05 and 0.8.")
    n_test = int(np.ceil(test_size * len(y)))
    if counts.min() < 2 or n_test < len(classes) or len(y) - n_test < 2 * len(classes):
        # in words, not a Python dict ("{0: 2, 1: 1}")
        # (rare classes first, at most 8: a column of near-unique values listed 800 "classes", 4,000 px)
        order = np.argsort(counts, kind="stable") if len(classes) > 8 else np.arange(len(classes))
        table = ", ".join(f"{class_name(classes[j])}: {counts[j]} row{'' if counts[j] == 1 else 's'}"
                          for j in order[:8])
        if len(classes) > 8:
            table += f", and {len(classes) - 8:,} more classes"
        # the cause and what to do, first (a 2-row file read "every class needs at least 2 rows in the
        # training part, and the test part at least 1 row of each class with 3 or more (...)": a crawl
        # found it hard to parse)
        if counts.min() < MIN_CLASS_ROWS:
            few = classes[counts < MIN_CLASS_ROWS]
            cause = (f"{_classes(few[:8].tolist())} "
                     f"ha{'ve' if len(few) > 1 else 's'} a single row, and a class needs at least "
                     f"{MIN_CLASS_ROWS} training rows to be fitted: add rows")
        elif not any(k <= int(np.ceil(f * len(y))) <= len(y) - MIN_CLASS_ROWS * k
                     for k in [len(classes)] for f in np.arange(0.05, 0.8001, 0.05)):
            # no test fraction works (4 playground points, 2 per class: 0.3 said "lower the test
            # fraction", and 0.1 then "raise" it, a crawl)
            cause = (f"{len(classes)} classes need at least {(MIN_CLASS_ROWS + 1) * len(classes)} rows "
                     f"({MIN_CLASS_ROWS} training rows and a test row each), whatever the test fraction: "
                     "add rows")
        elif n_test < len(classes):
            cause = (f"a test fraction of {test_size:g} leaves {n_test} test row{'' if n_test == 1 else 's'} "
                     f"for {len(classes)} classes: raise the test fraction")
        else:
            n_train = len(y) - n_test
            cause = (f"a test fraction of {test_size:g} leaves {n_train} training "
                     f"row{'' if n_train == 1 else 's'}, and each of the {len(classes)} classes needs "
                     f"{MIN_CLASS_ROWS}: lower the test fraction")
        # a label column of many values is more likely a measurement picked as the label than a data set
        # short of rows (wine's proline: "add rows" or "leave out rare classes" pointed away from the fix)
        many = (f" Is {loaded.label_name!r} the label? It has {len(classes):,} distinct values in "
                f"{len(y):,} rows: pick the class column under Label column."
                if len(classes) > 20 and len(classes) > len(y) / 5 else "")
        raise TooFewRowsError(f"Too few rows to split into training and test parts: {cause}. The table has "
                              f"{len(y):,} rows ({table}).{many}",
                              classes[counts < MIN_CLASS_ROWS].tolist(),
                              int((counts >= MIN_CLASS_ROWS).sum()))
    whole = classes[counts == MIN_CLASS_ROWS]
    if len(whole):
        many = len(whole) > 1
        notes.append(f"Class{'es' if many else ''} {', '.join(map(str, whole.tolist()))} "
                     f"ha{'ve' if many else 's'} only {MIN_CLASS_ROWS} rows: all of them are training rows, "
                     f"so the test rows (and the test metrics) have none of {'them' if many else 'it'}.")
    train, test = stratified_split(y, n_test, seed)
    X_tr, X_te, y_tr, y_te = X[train], X[test], y[train], y[test]
    if standardize:
        center = X_tr.mean(axis=0)
        scale = X_tr.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
    else:
        center, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    keep_truth = truth if truth_applies(loaded, features, truth) else None
    return Prepared((X_tr - center) / scale, (X_te - center) / scale, y_tr, y_te, features,
                    loaded.label_name, classes, center, scale, keep_truth, key,
                    truth_kw=dict(truth_kw or {}) if keep_truth else {}, notes=tuple(notes),
                    rows_train=rows[train], rows_test=rows[test])


def split_csv(data: Prepared) -> bytes:
    """The split as a CSV, one line per row used: its number among the file's data rows (1 = the first
    row under the header, as a spreadsheet numbers them less the header), "train" or "test", and its
    label; in the file's order. The split is the dashboard's own (:func:`stratified_split`, not
    scikit-learn's ``train_test_split``): a user could not reproduce the Compare and Calibration
    numbers without it (a crawl)."""
    rows = np.concatenate([data.rows_train, data.rows_test]) + 1
    part = np.array(["train"] * len(data.rows_train) + ["test"] * len(data.rows_test))
    label = np.concatenate([np.asarray(data.y_train), np.asarray(data.y_test)])
    order = np.argsort(rows, kind="stable")
    # (a label column called "set" or "row" overwrote that column, a review)
    name = data.label_name if data.label_name not in ("row", "set") else f"{data.label_name} (label)"
    return pd.DataFrame({"row": rows[order], "set": part[order], name: label[order]}) \
        .to_csv(index=False).encode()


def stratified_split(y: np.ndarray, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) with ``n_test`` test rows shared among the classes in proportion to their
    sizes (largest remainders), at least one per class and at least two training rows per class left.

    A few lines of NumPy instead of scikit-learn's ``train_test_split``: this runs when the Data page first
    opens, and importing scikit-learn would dominate the time until the page is usable.
    """
    # one random key per row, drawn in row order (a generator's first n draws do not depend on how many
    # follow), and each class's test rows are those with the smallest keys: a row added at the end (a
    # playground click) moves at most a row or two, where a permutation of each class reshuffled it (9 of
    # 60 test rows moved for one click, so the refit's change was not the click's alone, a teacher's crawl)
    keys = np.random.default_rng(seed).random(len(y))
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    share = n_test * counts / counts.sum()
    take = np.floor(share).astype(int)
    take[np.argsort(take - share)[: n_test - take.sum()]] += 1  # largest remainders first
    # at least one test row per class, but never fewer than two training rows: a two-row class (which
    # prepare accepts, and says so) gets no test row
    take = np.minimum(np.maximum(take, 1), counts - 2)
    per_class = [np.flatnonzero(y_idx == k) for k in range(len(classes))]
    test = np.concatenate([rows[np.argsort(keys[rows], kind="stable")[:n]]
                           for rows, n in zip(per_class, take, strict=True)])
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


ENTROPY, LATENT_VARIANCE = "entropy", "latent variance"


def predictive_entropy(P: np.ndarray) -> np.ndarray:
    """H[p] = -sum_k p_k log p_k per row (nats): 0 when certain, log K when the K classes are equally
    likely. Every method has predict_proba, so this one scale compares them all."""
    P = np.clip(np.asarray(P, dtype=float), 1e-300, 1.0)
    return -np.sum(P * np.log(P), axis=1)


@dataclass(frozen=True)
class Uncertainty:
    values: np.ndarray
    name: str          # "predictive entropy (nats)" or "latent variance"
    zmax: float | None  # a fixed top of the colour scale (log K for entropy), so maps compare


def uncertainty(model, X: np.ndarray, kind: str = ENTROPY) -> Uncertainty | None:
    """A map of predictive uncertainty on one scale for every method.

    ``kind="entropy"`` (default): the predictive entropy of predict_proba, on the fixed range 0..log K.
    ``kind="latent variance"``: Var q(f(x)) for methods with a Gaussian latent predictive
    (``predict_latent``); None for the others (their maps then say so instead of showing another scale).
    """
    if kind == LATENT_VARIANCE:
        if not hasattr(model, "predict_latent"):
            return None
        _, var = model.predict_latent(X)
        return Uncertainty(np.asarray(var, dtype=float), "latent variance", None)
    if kind != ENTROPY:
        raise ValueError(f"kind must be {ENTROPY!r} or {LATENT_VARIANCE!r}, got {kind!r}")
    P = model.predict_proba(X)
    return Uncertainty(predictive_entropy(P), "predictive entropy (nats)", float(np.log(P.shape[1])))


def shown_points(data: Prepared, max_points: int = 800):
    """Training points to draw on a map (a fixed random subset when there are many)."""
    n = len(data.y_train)
    if n <= max_points:
        return data.X_train, data.y_train
    idx = np.random.default_rng(0).choice(n, max_points, replace=False)
    return data.X_train[idx], data.y_train[idx]


def overlay_points(model) -> tuple[np.ndarray | None, str]:
    """Points the method itself learned and that are worth drawing: inducing points or support vectors."""
    for attr, name in (("inducing_points_", "inducing points"), ("support_vectors_", "support vectors")):
        Z = getattr(model, attr, None)
        if Z is not None and np.ndim(Z) == 2 and Z.shape[1] == 2:
            return np.asarray(Z), name
    return None, ""


@dataclass(frozen=True)
class RawMap:
    """A binary model's map in the data's raw (unstandardised) coordinates, as the playground's canvas
    draws it: p(y = classes[1] | x) and the true p(y|x) (None when unknown) at the raw points, and the
    method's own points (:func:`overlay_points`) moved to raw coordinates."""
    proba: np.ndarray
    truth: np.ndarray | None
    overlay: np.ndarray | None
    overlay_name: str


def raw_map(model, data: Prepared, points: np.ndarray) -> RawMap:
    """:class:`RawMap` at the raw ``points``: they are mapped to the model's space with the data's centre
    and scale (the canvas shows raw coordinates, the model was fitted on standardised ones)."""
    Z = (np.asarray(points, dtype=float) - data.center) / data.scale
    overlay, name = overlay_points(model)
    if overlay is not None:
        overlay = overlay * data.scale + data.center
    return RawMap(model.predict_proba(Z)[:, 1], data.true_proba(Z) if data.truth else None, overlay, name)


def evaluate(model, data: Prepared) -> dict:
    """Test-set metrics (error, Brier, log loss, ECE, AUC, and deviation from the truth where known)."""
    from bsvm.metrics import classification_report

    proba = model.predict_proba(data.X_test)
    y_idx = data.index(data.y_test)
    p_true = data.true_proba(data.X_test)
    report = classification_report(y_idx, proba, p_true=p_true)
    return {"proba": proba, "y_index": y_idx, "report": report, "p_true": p_true}


def paired_comparison(a: dict, b: dict, z: float = 1.96) -> dict:
    """Two models' per-row Brier and log loss on the same test rows (``evaluate`` results ``a`` and
    ``b``), compared row by row: for each, the mean difference a - b and its normal interval at ``z``
    (the rows' paired differences, so the rows' own difficulty cancels). Brier as bsvm.metrics defines it
    (summed over the classes, halved); log loss with p clipped at 1e-15."""
    y = np.asarray(a["y_index"])
    out = {}
    for name, loss in (("Brier", lambda P: 0.5 * np.sum((P - np.eye(P.shape[1])[y]) ** 2, axis=1)),
                       ("log loss", lambda P: -np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1.0)))):
        d = loss(np.asarray(a["proba"], float)) - loss(np.asarray(b["proba"], float))
        half = z * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.inf
        out[name] = (float(d.mean()), float(d.mean() - half), float(d.mean() + half))
    return out


def baseline_sentence(y_train, y_test) -> str:
    """What always predicting the training rows' most frequent class scores on the test rows (the Train
    page's accuracy line): on data with 2 % of one class, 0.983 read as a result when the baseline was
    0.980 (a crawl). Classes of equal size are said to tie (iris's 35/35/35 named the first "the most
    frequent", a review). Empty without test rows."""
    if not len(y_test):
        return ""
    labels, counts = np.unique(np.asarray(y_train), return_counts=True)
    top = labels[np.argmax(counts)]
    rate = float(np.mean(np.asarray(y_test) == top))
    tied = int(np.sum(counts == counts.max()))
    which = (f"{class_name(top)}, the most frequent class," if tied == 1 else
             f"{class_name(top)}, one of the {tied} equally frequent classes,")
    return f"Always predicting {which} would score {rate:.3f} on the test rows."


#: comparison_sentence: fewer test rows than this get the numbers and no verdict
VERDICT_MIN_ROWS = 30


def comparison_sentence(name_a: str, name_b: str, diffs: dict, n_rows: int) -> str:
    """The paired comparison in words: which model has the lower Brier score and log loss on these rows,
    and whether that is beyond the test set's noise (the interval excludes 0)."""
    parts, wins = [], {name_a: [], name_b: []}
    for metric, (d, lo, hi) in diffs.items():
        if lo > 0 or hi < 0:
            better = name_a if d < 0 else name_b
            wins[better].append(metric)
            near, far = (abs(hi), abs(lo)) if d < 0 else (abs(lo), abs(hi))
            parts.append(f"{metric}: {better} lower by {abs(d):.4f} (95 % interval {near:.4f} to {far:.4f})")
        else:
            parts.append(f"{metric}: within noise ({name_a} minus {name_b} {d:+.4f}, 95 % interval "
                         f"{lo:+.4f} to {hi:+.4f})")
    if n_rows < VERDICT_MIN_ROWS:
        # (9 test rows gave "S-BSVM is better calibrated than PlattSVM", both with error 0, a crawl)
        verdict = (f"too few for a verdict (the normal interval needs about {VERDICT_MIN_ROWS}; give the "
                   "test set more rows on the Data page)")
        parts = [f"{metric}: {name_a} minus {name_b} {d:+.4f} (95 % interval {lo:+.4f} to {hi:+.4f})"
                 for metric, (d, lo, hi) in diffs.items()]
    elif wins[name_a] and wins[name_b]:
        verdict = "the two scores disagree"
    elif not wins[name_a] and not wins[name_b]:
        verdict = f"no difference beyond the noise of {n_rows:,} test rows"
    else:
        best, other = (name_a, name_b) if wins[name_a] else (name_b, name_a)
        verdict = f"{best} is better calibrated than {other}" + (
            " on both" if len(wins[best]) == len(diffs) else
            f" by its {' and '.join(wins[best])} (the other score is within noise)")
    return f"Row by row on the {n_rows:,} test rows: {verdict}. " + "; ".join(parts) + "."


class BarReading:
    """What a run's progress bar and its text need from the run's records, read incrementally: each
    redraw reads only the records new since the last (a scan of the whole history cost ~40 ms a redraw at
    10,000 records, a review). Kept on the run; a thinned history (``runner.MAX_RECORDS``) is read again,
    the best check so far kept.

    ``best``: the largest :func:`check_fraction` of the stopping rule's checks (None before the first):
    the bar of a run that stops when its rule is met. A bar that followed the last check alone stepped
    back whenever R-hat rose or an ESS estimate fell between two checks (a crawl), which reads as a
    fault; the text beside the bar says what the last check found (:func:`check_text`).
    ``stage``, ``stage_start``: the current fit of a run of several (S-BSVM's kernel="auto", which fits
    its candidates one after another while the iteration count runs on) and the iteration of its first
    record; ``planned``: the fits its records announce (``stages_planned``). The current fit's share
    alone went 1 % -> 0 % from one fit to the next and then jumped to 100 % (a crawl)."""

    def __init__(self):
        self._n, self._first = 0, None
        self.best, self.stage, self.stage_start, self.planned = None, None, 0, 1

    def update(self, history) -> BarReading:
        n = len(history)
        if not n:
            return self
        start = self._n
        if n < self._n or history[0] is not self._first:  # thinned or replaced: read it all again
            start, self.stage = 0, None
        for h in history[start:]:
            m = h.metrics or {}
            if "ess_target" in m:
                share = check_fraction(m)
                self.best = share if self.best is None else max(self.best, share)
            if "stage" in m and m["stage"] != self.stage:
                self.stage, self.stage_start = m["stage"], h.iteration
            if "stages_planned" in m:
                self.planned = int(m["stages_planned"])
        self._n, self._first = n, history[0]
        return self

    def staged(self, iteration: int) -> tuple[int, int] | None:
        """(fit number from 1, iterations in it) of a run that announces several fits, else None."""
        if self.planned <= 1 or self.stage is None:
            return None
        return int(self.stage) + 1, max(0, int(iteration) - int(self.stage_start))

    def staged_fraction(self, iteration: int, max_iter: int | None) -> float | None:
        """Finished fits plus the current one's share of ``max_iter``, over the fits planned, at most
        0.99 (the stacking comes after the last); None for a run of one fit."""
        staged = self.staged(iteration)
        if staged is None or not max_iter:
            return None
        return float(min(0.99, (staged[0] - 1 + min(1.0, staged[1] / max_iter)) / self.planned))



def staged_text(staged: tuple[int, int], planned: int, max_iter: int | None, done: bool) -> str:
    """The progress text's part for a run of several fits in a row (S-BSVM's kernel="auto"), from
    ``BarReading.staged``: (fit number from 1, its iterations so far)."""
    if done:  # (the last record, the stack, has no steps of its own)
        n_fits = staged[0] - 1 if staged[1] == 0 else staged[0]
        # (each candidate stops when its ELBO levels off: "iteration 502" of "1000" looked cut short)
        return f" ({n_fits} fits, each to its own stopping rule, at most {max_iter} steps)"
    if planned and staged[0] > planned:
        # the record after the last fit: their stacking (a Stop there read "fit 6: 0 / 1000" of a run of
        # five fits, a teacher's crawl)
        return f" (the {planned} fits done; weighing them)"
    of = f" of {planned}" if planned >= staged[0] else ""
    return f" (fit {staged[0]}{of}: {staged[1]} / {max_iter})"


def last_check(history) -> dict | None:
    """The metrics of a sampler's last stopping-rule check in its progress records (those carry
    ``ess_target``), or None."""
    return next((h.metrics for h in reversed(list(history)) if "ess_target" in h.metrics), None)


def check_fraction(checked: dict) -> float:
    """How far a run that stops when its rule is met has come, by its last check, as a share of the draws
    it needs: ESS grows about in proportion to the draws and R-hat - 1 falls about as their inverse, so
    each criterion's share is the smaller ESS over the ESS wanted and (R-hat wanted - 1) / (R-hat - 1);
    the bar shows the smaller share, at most 0.99 (0 while the ESS cannot be estimated). (On ESS alone,
    a 3-class MS-BPM run sat at 99 % from 5 s to its end at 16 s, held back by R-hat 1.02: a crawl.)"""
    ess = min(checked.get("ess_bulk", np.nan), checked.get("ess_tail", np.inf))
    if not np.isfinite(ess):
        return 0.0
    share = ess / checked["ess_target"]
    rhat, rhat_to = checked.get("rhat", np.nan), checked.get("rhat_target", 1.01)
    if np.isfinite(rhat) and rhat > rhat_to:  # (NaN with one chain: R-hat undefined, ESS alone)
        share = min(share, (rhat_to - 1.0) / (rhat - 1.0))
    return float(np.clip(share, 0.0, 0.99))



def record_fraction(rec, cap: int | None, shown: float = 0.0) -> float:
    """A job's bar after progress record ``rec``: for a run of several fits (records with
    ``stages_planned``) the finished fits' share; else its iteration over ``cap`` for a method with an
    iteration budget; for a sampler run to its stopping rule (no cap) the share of its checks so far;
    never less than ``shown`` (the bar before this record; see :class:`BarReading`) where it counts
    fits or checks. (Compare's S-BSVM bar, iterations over max_iter, filled long before its five fits
    ended: a review.)"""
    metrics = rec.metrics or {}
    planned = int(metrics.get("stages_planned", 1))
    if planned > 1 and "stage" in metrics:  # several fits (S-BSVM's kernel="auto"): the finished ones
        return max(shown, min(0.99, float(metrics["stage"]) / planned))
    if cap:
        return min(1.0, rec.iteration / cap)
    if "ess_target" in metrics:
        return max(shown, check_fraction(metrics))
    return shown


def check_made(checked: dict | None) -> bool:
    """Whether a record's check was made: a rule-driven run's records carry NaN until its first check, a
    fixed-length run's until its end (it checks once, at the end)."""
    return checked is not None and bool(np.isfinite(checked.get("ess_bulk", np.nan)))


def check_passed(checked: dict) -> bool:
    """Whether a recorded check met its rule: R-hat at most its target and both ESS at least theirs."""
    bulk, tail = checked.get("ess_bulk", np.nan), checked.get("ess_tail", np.nan)
    rhat = checked.get("rhat", np.nan)
    return bool(np.isfinite(bulk) and np.isfinite(tail) and np.isfinite(rhat)
                and rhat <= checked.get("rhat_target", 1.01) and min(bulk, tail) >= checked["ess_target"])


def check_text(checked: dict) -> str:
    """The last check in words: both ESS (the bar counts the smaller) and R-hat to four decimals (1.0104
    fails the rule; 1.010 did not say so)."""
    bulk, tail = checked.get("ess_bulk", np.nan), checked.get("ess_tail", np.nan)
    if not np.isfinite(bulk):  # (records before a rule-driven run's first check, or of a fixed-length run)
        return "no check of the stopping rule yet"
    rhat, rhat_to = checked.get("rhat", np.nan), checked.get("rhat_target", 1.01)
    return (f"last check: ESS bulk {bulk:,.0f} / tail {tail:,.0f}, wanted {checked['ess_target']:,.0f}; "
            f"R-hat {rhat:.4f}, wanted <= {rhat_to:g}")


def thin_index(n: int, max_points: int) -> np.ndarray:
    """At most ``max_points`` evenly spaced indices into a series of length n, always keeping the last."""
    if n <= max_points:
        return np.arange(n)
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
    return idx


# ----------------------------------------------------------------------------------------- names

# the estimators' positional names, x0, x1, ..., and an ARD kernel's lengthscales[j] (bsvm.kernels
# describe()), matched in one pass: substituted one after the other, a column called x2 put in for
# lengthscales[1] was read as position 2 again (Ripley's columns are x1, x2)
_POSITIONAL = re.compile(r"\blengthscales\[(\d+)\]|\bx(\d+)\b")


def feature_label(name: str, feature_names) -> str:
    """Replace the estimators' positional names ``x0``, ``x1``, ... (0-based: ``x0`` is the first
    column, as SeegerARD writes ``w[x0]`` for arrays without column names) and an ARD kernel's
    ``lengthscales[j]`` (S-BSVM) by the data's column names: ``length scale[height_cm]`` (spelled as the
    isotropic kernel's ``length scale``)."""
    names = list(feature_names or [])
    if not names:
        return name

    def sub(m):
        ard = m.group(1) is not None
        j = int(m.group(1) if ard else m.group(2))
        if j >= len(names):
            return m.group(0)
        return f"length scale[{names[j]}]" if ard else str(names[j])

    return _POSITIONAL.sub(sub, name)


def param_names(model, feature_names, n_params: int) -> list[str]:
    """Names for the columns of ``samples_``: the estimator's ``param_names_`` (with column names put in),
    else, for a linear model on the raw inputs (weights then the bias), ``w[column]`` and ``b``."""
    names = list(getattr(model, "param_names_", None) or [])
    if len(names) == n_params:
        return [feature_label(str(n), feature_names) for n in names]
    f = list(feature_names or [])
    linear = getattr(model, "features", "none") is None and getattr(model, "feature_map_", None) is None
    if linear and n_params == len(f) + 1:
        return [f"w[{n}]" for n in f] + ["b"]
    return [f"param {j}" for j in range(n_params)]


#: what each estimator's progress snapshot arrays hold (the trace chart's title); others keep their key
SNAPSHOT_TITLES = {
    "mean": "q(u) mean",
    "coords": "coordinates per chain",
    "potential": "potential per chain",
    "log_posterior": "log posterior per chain",
    "train_error": "training error per chain",
    "confusion": "confusion counts per chain",
    "projection": "draws projected on two directions",
    "w": "ARD weight per input",
    "theta": "kernel hyperparameters",
    "leapfrog_path": "last leapfrog path (chain 0)",
    "xi": "thermostat per chain",
}


#: the snapshot arrays that lead with the chain axis (any other array whose first axis happens to be as
#: long, e.g. the leapfrog path of 4 positions with 4 chains, is not named by chain)
PER_CHAIN = frozenset({"coords", "potential", "log_posterior", "train_error", "confusion", "projection",
                       "xi"})


def _chain_count(model, snapshot: dict) -> int | None:
    """How many chains a sampler's snapshot arrays lead with: ``samples_``'s first axis once there are
    draws, else the per-chain scalars' length, else ``n_chains``; None for a model without chains (no
    ``n_chains`` parameter)."""
    s = getattr(model, "samples_", None)
    if isinstance(s, np.ndarray) and s.ndim == 3:
        return int(s.shape[0])
    if not hasattr(model, "n_chains"):  # not a sampler
        return None
    for k in ("potential", "log_posterior"):
        if k in snapshot and np.ndim(snapshot[k]) == 1:
            return int(np.size(snapshot[k]))
    n = getattr(model, "n_chains", None)
    return int(n) if isinstance(n, (int, np.integer)) and n > 0 else None


def snapshot_names(history, key: str, model=None, feature_names=None, classes=None) -> list[str]:
    """Names of the series of the snapshot array ``key`` as :func:`dashboard.figures.snapshot_traces`
    draws them (the array flattened in C order): ``chain 1, w[x2]`` rather than ``coords[1, 1]``.
    A leading axis as long as the chain count is the chain (``chain 0``, ``chain 1``..., the indices the
    Diagnostics page's chain picker and trace plots use); ``coords`` name the parameters at
    ``trace_index``; MS-BPM's ``confusion`` its classes; SeegerARD's ``w`` the
    inputs. Anything else is numbered by position."""
    snap = history[-1].snapshot if history else {}
    value = np.asarray(snap.get(key, []))
    shape = value.shape
    if value.size == 0:
        return []
    chains = _chain_count(model, snap) if key in PER_CHAIN else None
    rest = shape
    lead: list[str] = [""]
    if key == "leapfrog_path" and len(shape) == 2:  # chain 0's last trajectory: one row per position
        lead, rest = [f"step {i}" for i in range(shape[0])], shape[1:]
    elif chains and len(shape) >= 1 and shape[0] == chains:
        lead, rest = [f"chain {c}" for c in range(chains)], shape[1:]
    if key == "coords" and "trace_index" in snap and len(rest) == 1:
        idx = np.asarray(snap["trace_index"]).astype(int).ravel()
        n_params = None
        s = getattr(model, "samples_", None)
        if isinstance(s, np.ndarray) and s.ndim == 3:
            n_params = s.shape[2]
        names_ = list(getattr(model, "param_names_", None) or [])
        n_params = n_params or len(names_) or (int(idx.max()) + 1 if idx.size else 0)
        pnames = param_names(model, feature_names, n_params) if n_params else []
        inner = [pnames[j] if 0 <= j < len(pnames) else f"param {j}" for j in idx]
    elif key == "confusion" and len(rest) == 2 and classes is not None and len(classes) == rest[0] == rest[1]:
        inner = [f"true {a}, predicted {b}" for a in classes for b in classes]
    elif key == "mean" and len(rest) == 1:  # S-BSVM: q(u)'s mean at its first inducing points
        # as many as the widest record holds: S-BSVM's candidate fits keep different numbers of inducing
        # points, and with the newest one's 3 the legend read "inducing point 1-3, mean[3], mean[4]"
        # (a crawl, presentation mode at 1280 px)
        widest = max([rest[0]] + [np.size(r.snapshot.get("mean", ())) for r in history
                                  if np.ndim(r.snapshot.get("mean", ())) == 1])
        inner = [f"inducing point {j + 1}" for j in range(widest)]
    elif key == "projection" and len(rest) == 1:
        inner = [f"direction {j + 1}" for j in range(rest[0])]
    elif key == "w" and len(rest) == 1 and feature_names is not None and len(feature_names) == rest[0]:
        inner = [f"w[{f}]" for f in feature_names]
    elif rest:
        inner = [f"{key}[{', '.join(map(str, i))}]" for i in np.ndindex(rest)]
    else:
        inner = [""]
    names = [", ".join(p for p in (a, b) if p) for a in lead for b in inner]
    return [n or key for n in names]


# ----------------------------------------------------------------------------------------- draws


def chain_arrays(model) -> tuple[np.ndarray | None, list[str], int]:
    """The draws as (chains, draws, quantities): the per-chain scalars the sampler keeps beside its draws
    (log posterior, potential, thermostat: any fitted (chains, draws) array) first, then the model's
    parameters. Returns (array or None, names of the extra quantities, number of model parameters)."""
    samples = getattr(model, "samples_", None)
    if samples is None:
        return None, [], 0
    S = np.asarray(samples, dtype=float)
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3:
        return None, [], 0
    extra = {a: np.asarray(v, dtype=float) for a, v in vars(model).items()
             if a.endswith("_") and not a.startswith("_") and a != "samples_" and isinstance(v, np.ndarray)
             and v.shape == S.shape[:2] and np.issubdtype(v.dtype, np.number)}
    n_model = S.shape[2]
    # the potential U as the log posterior -U: the stopping rule's table, the NetCDF (lp) and MS-BPM name
    # that quantity so, and the page showed "potential" and "log_posterior" for it one above the other
    # (a crawl); R-hat and ESS are those of U
    if "potential_" in extra:
        extra = {("log_posterior_" if a == "potential_" else a): (-v if a == "potential_" else v)
                 for a, v in extra.items()}
    if extra:
        S = np.concatenate([np.stack(list(extra.values()), axis=2), S], axis=2)
    # named as a user reads them (the attribute names, potential_ and log_posterior_, showed on the page).
    # SGLD/SGNHT keep each draw's minibatch estimate of the potential: noisier (sd 3.0 against 1.2 for the
    # exact samplers on the same data) and so with a far larger ESS (16,580 against the rule's 2,577 on the
    # full-data log posterior), which read as the same quantity (a crawl)
    minibatch = getattr(model, "sampler", None) in ("sgld", "sgnht") and hasattr(model, "potential_")
    names = [a.rstrip("_").replace("_", " ") + (" (minibatch estimate)" if minibatch and a == "log_posterior_"
                                                 else "") for a in extra]
    return S, names, n_model


def draw_surfaces(model, X: np.ndarray, n_draws: int = 30, seed: int = 0):
    """Per-draw surfaces for a posterior-draws view: ``(values (n, rows), level)`` where the decision
    boundary of draw i is ``values[i] == level``; None when the model keeps no draws.

    In order: ``predict_proba_draws`` (the samplers' shared API; p of classes_[1], level 0.5), MSBPM's
    ``draw_proba`` (same layout), else a linear model's raw weights (w.x + b, level 0).
    At most ``n_draws`` draws, chosen evenly over all chains with a fixed seed.
    """
    samples = getattr(model, "samples_", None)
    if samples is None:
        return None
    S = np.asarray(samples)
    S = S[None] if S.ndim == 2 else S
    n_total = S.shape[0] * S.shape[1]
    if n_total == 0:
        return None
    pick = np.sort(np.random.default_rng(seed).choice(n_total, min(n_draws, n_total), replace=False))
    for attr in ("predict_proba_draws", "draw_proba"):
        if getattr(model, attr, None) is None:
            continue
        # only the picked draws: a shallow copy holding them as one chain (the samplers' per-draw
        # predictions read samples_ only). Every draw was evaluated and 30 kept: a fifth of the
        # Diagnostics page's server time after a SubgradientHMC run on the Ripley sample.
        thin = copy.copy(model)
        thin.samples_ = S.reshape(n_total, *S.shape[2:])[pick][None]
        try:
            P = np.asarray(getattr(thin, attr)(X))  # (chain, draw, row, class)
        except Exception:  # noqa: BLE001 - a model whose draws are more than samples_: all of them
            P = np.asarray(getattr(model, attr)(X))
            P = P.reshape(-1, P.shape[2], P.shape[3])[pick][None]
        P = P.reshape(-1, P.shape[2], P.shape[3])
        if P.shape[0] != len(pick) or P.shape[2] != 2:
            return None
        return P[:, :, 1], 0.5
    flat = S.reshape(n_total, -1)[pick]
    if flat.shape[1] == X.shape[1] + 1 and getattr(model, "feature_map_", "none") is None:
        return flat[:, :-1] @ X.T + flat[:, -1:], 0.0
    return None


def weight_cloud(model, feature_names) -> tuple[np.ndarray, list[str]] | None:
    """The draws of a linear model on 2 raw inputs as points in weight space: ((chains, draws, 2), names);
    None for other models (a cloud needs a 2-D weight vector to be drawn as it is)."""
    samples = getattr(model, "samples_", None)
    if samples is None or getattr(model, "feature_map_", "none") is not None:
        return None
    S = np.asarray(samples, dtype=float)
    S = S[None] if S.ndim == 2 else S
    f = list(feature_names)
    if S.ndim != 3 or len(f) != 2 or S.shape[2] != 3 or S.shape[1] == 0:
        return None
    return S[:, :, :2], [f"w[{f[0]}]", f"w[{f[1]}]"]


def leapfrog_paths(history, max_paths: int = 5) -> list[np.ndarray]:
    """The leapfrog positions of the last transitions (HMC records ``snapshot["leapfrog_path"]``, shape
    (n_steps + 1, d), for weight dimension d <= 3); [] when the run records none."""
    paths = []
    for rec in reversed(history or []):
        p = (rec.snapshot or {}).get("leapfrog_path")
        if p is None:
            continue
        p = np.asarray(p, dtype=float)
        if p.ndim == 2 and p.shape[1] >= 2 and len(p) >= 2:
            paths.append(p)
        if len(paths) >= max_paths:
            break
    return paths[::-1]


def approx_vs_exact(approx: np.ndarray, exact: np.ndarray, names) -> pd.DataFrame:
    """Posterior means and sds of an approximate sampler against the exact sampler's, per parameter (draws
    as (chains, draws, params)): the difference of the means in units of the exact sd, and, with at least
    4 draws per chain in both, that difference in units of its Monte Carlo error (the two runs' MCSEs of
    the mean combined: sqrt(mcse_a^2 + mcse_e^2)). Two correct runs of 400 effective draws each differ by
    about 0.07 sd from noise alone, so the first column is read against the second: a difference within
    about 3 MC errors is noise, not bias."""
    from bsvm import diagnostics

    A3, E3 = (np.asarray(a, dtype=float) for a in (approx, exact))
    A3, E3 = (a[None] if a.ndim == 2 else a for a in (A3, E3))
    A, E = A3.reshape(-1, A3.shape[-1]), E3.reshape(-1, E3.shape[-1])
    if A.shape[1] != E.shape[1]:
        raise ValueError(f"The samplers have {A.shape[1]} and {E.shape[1]} parameters: not comparable "
                         "(use features=None for both).")
    ma, sa, me, se = A.mean(0), A.std(0, ddof=1), E.mean(0), E.std(0, ddof=1)
    se_safe = np.where(se > 0, se, np.nan)
    table = {"mean (approx.)": ma, "mean (exact)": me, "sd (approx.)": sa, "sd (exact)": se,
             "|mean diff| / sd (exact)": np.abs(ma - me) / se_safe}
    if min(A3.shape[1], E3.shape[1]) >= 4:
        with np.errstate(invalid="ignore", divide="ignore"):
            mc = np.hypot(np.atleast_1d(diagnostics.mcse(A3)), np.atleast_1d(diagnostics.mcse(E3)))
            table["|mean diff| / MC error"] = np.abs(ma - me) / np.where(mc > 0, mc, np.nan)
    table["sd ratio"] = sa / se_safe
    return pd.DataFrame(table, index=pd.Index(list(names)[:A.shape[1]], name="parameter"))


def approx_vs_exact_verdict(table: pd.DataFrame, z: float = 3.0) -> str:
    """The table of :func:`approx_vs_exact` in one sentence: how many means differ by more than ``z``
    Monte Carlo errors (noise alone puts about 0.3 % of parameters there), and the largest difference."""
    worst = table["|mean diff| / sd (exact)"]
    text = (f"Largest |mean diff|: {np.nanmax(worst):.3g} sd ({worst.idxmax()})." if worst.notna().any()
            else "")
    if "|mean diff| / MC error" not in table:
        return text + " Too few draws per chain to estimate the Monte Carlo error."
    zs = table["|mean diff| / MC error"]
    far = [str(k) for k in zs.index[zs > z]]
    if not far:
        return (text + f" Every mean agrees within {z:g} Monte Carlo errors: the differences are what "
                "finite runs give, no sign of bias.")
    return (text + f" {len(far)} of {len(zs)} means differ by more than {z:g} Monte Carlo errors ("
            + ", ".join(far[:6]) + (", ..." if len(far) > 6 else "") + "): more than noise explains, so the "
            "approximate sampler is off there (or one of the runs has not converged: see its R-hat).")


def ess_by_draws(S: np.ndarray, param: int, n_points: int = 12) -> pd.DataFrame:
    """Bulk and tail ESS of one quantity using the first n draws of every chain, for growing n (ArviZ's
    ESS-evolution plot): ESS should grow linearly with the draws. Uses bsvm.diagnostics."""
    from bsvm.diagnostics import ess_bulk, ess_tail

    S = np.asarray(S, dtype=float)
    n = S.shape[1]
    ns = np.unique(np.linspace(min(n, 20), n, n_points).round().astype(int))
    ns = ns[ns >= 4]
    rows = []
    with np.errstate(all="ignore"):
        for k in ns:
            x = S[:, :k, param]
            rows.append({"draws": int(k), "total draws": int(k * S.shape[0]),
                         "bulk": float(np.asarray(ess_bulk(x))), "tail": float(np.asarray(ess_tail(x)))})
    return pd.DataFrame(rows)


def energy_of(model) -> np.ndarray | None:
    """The Hamiltonian energy per chain and draw (chains, draws) of an HMC run: ``energy_`` or the
    ``energy`` in ``to_arviz()``'s sample_stats; None when the sampler records none."""
    E = getattr(model, "energy_", None)  # (SubgradientHMC's; to_arviz() builds a whole DataTree)
    if E is None and hasattr(model, "to_arviz"):
        try:
            stats = model.to_arviz()["sample_stats"]
            E = stats["energy"].values if "energy" in stats else None
        except Exception:  # noqa: BLE001 - no sample_stats group: no energy plot
            E = None
    if E is None:
        return None
    E = np.asarray(E, dtype=float)
    return E if E.ndim == 2 and E.shape[1] >= 2 else None


def bfmi(energy: np.ndarray) -> np.ndarray:
    """Bayesian fraction of missing information per chain (Betancourt 2016, eq. 3.1):
    E[(E_n - E_{n-1})^2] / Var(E). Below 0.3 the momentum resampling explores the energy levels poorly."""
    from arviz_stats.base import array_stats

    return np.atleast_1d(np.asarray(array_stats.bfmi(np.asarray(energy, dtype=float)), dtype=float))


def pair_data(S: np.ndarray, params, max_points: int = 2000, seed: int = 0) -> np.ndarray:
    """A random subset of the draws of some quantities, (points, len(params)), for a pair plot."""
    S = np.asarray(S, dtype=float)
    flat = S[:, :, list(params)].reshape(-1, len(params))
    if len(flat) > max_points:
        flat = flat[np.sort(np.random.default_rng(seed).choice(len(flat), max_points, replace=False))]
    return flat


# ----------------------------------------------------------------------------------------- calibration


def calibration_models(trained, trained_label: str, platt) -> dict:
    """The models the Calibration page compares: the trained one and, when it is not PlattSVM itself,
    the separately fitted PlattSVM baseline. Never the same object twice (a model against itself would
    show two identical rows and curves)."""
    models = {trained_label: trained}
    if platt is not None and platt is not trained and type(trained).__name__ != "PlattSVM":
        models["PlattSVM"] = platt
    return models


def reliability_curves(results: dict, binary: bool, n_bins: int = 10) -> tuple[dict, dict, str]:
    """Reliability bins and the probabilities to histogram, per model, from ``evaluate`` results.
    Binary: p(classes[1]); 3+ classes: top-label confidence against whether the top label was right."""
    from bsvm.metrics import reliability_bins

    curves, probas = {}, {}
    for name, res in results.items():
        P, y_idx = res["proba"], res["y_index"]
        if binary:
            curves[name] = reliability_bins(y_idx, P[:, 1], n_bins)
            probas[name] = P[:, 1]
        else:
            curves[name] = reliability_bins((P.argmax(1) == y_idx).astype(float), P.max(1), n_bins)
            probas[name] = P.max(1)
    xlabel = "predicted probability" if binary else "confidence (probability of the predicted class)"
    return curves, probas, xlabel


# ----------------------------------------------------------------------------------------- exports


def download_size(S: np.ndarray, kind: str, n_rows: int = 0, n_classes: int = 2) -> str:
    """" (~92 MB)" for a draws download over 5 MB, else "": its size before it is built (a crawl's
    MS-BPM draws were 92 MB of CSV and took 21 s, with nothing said beforehand). CSV: about 19 characters
    a number; NetCDF ("nc"): 8 bytes a number, and the pointwise log-likelihood (chains x draws x rows)
    when it stays within ``bsvm.draws.MAX_LOG_LIKELIHOOD`` class probabilities."""
    from bsvm.cost import format_bytes
    from bsvm.draws import MAX_LOG_LIKELIHOOD

    C, D, P = np.shape(S)
    if kind == "csv":
        size = C * D * (19 * P + 8)
    else:
        size = 8 * C * D * P
        if 0 < C * D * n_rows * n_classes <= MAX_LOG_LIKELIHOOD:
            size += 8 * C * D * n_rows
    return f" (~{format_bytes(size)})" if size > 5e6 else ""


def draws_csv(S: np.ndarray, names) -> bytes:
    """Draws as a long CSV: one row per chain and draw, one column per quantity."""
    S = np.asarray(S, dtype=float)
    C, D, P = S.shape
    frame = pd.DataFrame(S.reshape(C * D, P), columns=list(names)[:P])
    frame.insert(0, "draw", np.tile(np.arange(D), C))
    frame.insert(0, "chain", np.repeat(np.arange(C), D))
    return frame.to_csv(index=False).encode()


def draws_netcdf(model, feature_names=None, about: dict | None = None, X=None) -> bytes | None:
    """The estimator's ``to_arviz()`` DataTree as NetCDF-4 bytes (``xarray.open_datatree`` and ArviZ read it);
    None when the estimator has no ``to_arviz``. ``feature_names``: the data's column names, put on the
    ``feature`` coordinate (of ``w`` and of the rows; ``input`` for the rows of a feature map's fit) when
    it has one of that length (the library names inputs x0, x1, ... by position: the CSV's w[x1] was the
    file's w[x0]; a feature map's coordinates, f0, f1, ..., are not the columns and keep their names).
    ``about``: attributes for the file's root (the method, the data, the standardisation's centre and
    scale), so the file says what made it. ``X``: the training rows the model was fitted on; then the file
    also holds the pointwise ``log_likelihood`` and the rows (``constant_data``), so ``arviz_stats.loo``
    runs on it (a crawl: without them it could not), unless they would pass
    ``bsvm.draws.MAX_LOG_LIKELIHOOD`` numbers (the file's ``note`` then says so). Needs the h5netcdf
    package (the dashboard extra)."""
    if not hasattr(model, "to_arviz"):
        return None
    import os
    import tempfile

    left_out, tree = "", None
    if X is not None:
        try:  # the library's own size rule, which refuses before any work
            tree = model.to_arviz(X)
        except (TypeError, ValueError) as exc:  # (TypeError: a to_arviz that takes no rows)
            left_out = f" The pointwise log-likelihood is left out: {exc}"
    if tree is None:
        tree = model.to_arviz()
    if "log_likelihood" in tree.children and not np.isfinite(tree["log_likelihood"]["y"].values).all():
        # 0/1 votes (MS-BPM without the soft-margin nugget, or prior="coefficients"): a draw that
        # misclassifies a row gives it log 0, and arviz_stats.loo fails on the file (a review)
        del tree["log_likelihood"]
        left_out = (" The pointwise log-likelihood is left out: some draws give a training row's class "
                    "probability 0 (votes of 0 or 1), where arviz_stats.loo cannot work.")
    if feature_names is not None:
        names = [str(n) for n in feature_names]
        positions = ([f"x{j}" for j in range(len(names))], [str(j) for j in range(len(names))])
        for group in ("posterior", "constant_data"):
            ds = tree[group].to_dataset() if group in tree.children else None
            # (positions: the library's x0, x1, ... or arviz-base's default 0, 1, ...; the rows of a
            # feature map's fit have their columns as "input", its weights "feature" f0, f1, ...)
            for dim in ("feature", "input"):
                if ds is not None and dim in ds.coords and ds.sizes[dim] == len(names) and \
                        [str(v) for v in ds[dim].values] in positions:
                    ds = ds.assign_coords({dim: names})
                    tree[group] = ds
    # who made the draws and on what inputs: the file said only "sampler: hmc" (MS-BPM's), and a user
    # could not put the weights back on the original scale (a crawl)
    # (a list of one string came back from NetCDF as a plain string, a review: lists are joined, with the
    # separator named in the attribute's name)
    tree.attrs.update({(f"{k}_comma_separated" if isinstance(v, (list, tuple)) else k):
                       (", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
                       for k, v in (about or {}).items() if v is not None})
    tree.attrs.setdefault("estimator", type(model).__name__)
    groups = ", ".join(tree.children)
    tree.attrs["note"] = (f"ArviZ layout: the draws are in the groups ({groups}); open with "
                          "xarray.open_datatree(path) or xarray.open_dataset(path, group='posterior')."
                          + left_out)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "draws.nc")
        tree.to_netcdf(path, engine="h5netcdf")
        with open(path, "rb") as fh:
            return fh.read()


#: the library's remedy for a DataScaleWarning, and the dashboard's
_LIBRARY_REMEDY = "Standardise the features (sklearn.preprocessing.StandardScaler) before fitting."
_PAGE_REMEDY = "On the Data page, tick **Standardise features**."


def page_warning(text: str, feature_names) -> str:
    """A method's warning in the page's words: the dashboard fits arrays, so the library names columns
    by position ("column 3", 0-based among the features) where the page has the file's names, and its
    remedy names scikit-learn's StandardScaler where the page has a checkbox (a crawl read "column 3"
    for the file's f3, and looked for StandardScaler)."""
    names = [str(n) for n in feature_names] if feature_names is not None else []

    def name(m: re.Match) -> str:
        j = int(m.group(1))
        if j >= len(names):
            return m.group(0)
        # (a possessive after a quoted name read "column 'f1''s effect", a crawl)
        return f"{names[j]}'s" if m.group(2) else f"column '{names[j]}'"

    # the library's class name leads its message ("MSBPM: ..."): the page names the method already
    # ("MS-BPM: It warned: MSBPM: ...", a crawl)
    text = re.sub(r"^[A-Z][A-Za-z]+: ", "", text)
    return re.sub(r"\bcolumn (\d+)\b('s)?", name, text).replace(_LIBRARY_REMEDY, _PAGE_REMEDY)


def metrics_csv(table: pd.DataFrame) -> bytes:
    return table.to_csv().encode()


#: kernel="auto"'s candidate names (``SBSVM.components_``) in words
STACK_NAMES = {"rbf": "RBF", "ard": "RBF with one length scale per feature", "linear": "linear kernel",
               "rbf.fixed": "RBF at its starting hyperparameters",
               "linear.fixed": "linear kernel at its starting hyperparameters",
               "rbf.shared.fixed": "RBF on one scale for all features, at its starting hyperparameters",
               "rbf.shared.v4.fixed": "RBF on one scale for all features, 4x the starting variance",
               "base_rate": "the training base rate"}


def stack_summary(est) -> str | None:
    """What an S-BSVM ``kernel="auto"`` fit predicts with, in words: its stacked fits with their weights,
    largest first, and how they were weighed (``defaults_["weighting"]``); None for any other model."""
    comps = getattr(est, "components_", None)
    if not comps:
        return None
    parts = ", ".join(f"{STACK_NAMES.get(name, name)} {weight:.0%}" for name, weight, *_ in comps)
    how = getattr(est, "defaults_", {}).get("weighting")
    d = getattr(est, "defaults_", {})
    # the candidates left out: the learning curves show every fit, so say which ones do not count
    dropped = [STACK_NAMES.get(k[7:], k[7:]) for k, w in d.items()
               if k.startswith("weight.") and w == 0 and k != "weight.base_rate"]  # (no curve of its own)
    # ("The prediction mixes 1 fit" when stacking gave one candidate all the weight, a crawl)
    out = (f"The prediction mixes {len(comps)} fits: {parts}" if len(comps) > 1 else
           f"The prediction uses one fit: {parts}") + (f" (weights by stacking: {how})." if how else ".")
    if dropped:
        out += (f" The other fits shown in the learning curves ({', '.join(dropped)}) predicted held-out "
                "rows no better, so they get no weight.")
    return out


def _straight_boundary(est) -> str | None:
    """How to get a curved boundary from an estimator whose options make it linear (the option to change,
    in the Train page's words), or None when its boundary can already bend."""
    try:
        p = est.get_params(deep=False)
    except Exception:  # noqa: BLE001 - not an estimator: say nothing
        return None
    if "features" in p and p["features"] is None:
        return "Features: nystroem or rff (RBF features)"
    if p.get("variant") == "linear":
        return "Variant: svi or batch"
    if p.get("kernel") == "linear":
        return "Kernel: rbf"
    return None


def neighbour_accuracy(X: np.ndarray, y: np.ndarray, k: int = 15, folds: int = 5, seed: int = 0) -> float:
    """Out-of-fold accuracy of a k-nearest-neighbour vote (stratified folds): a reference that can bend,
    to tell whether a straight boundary is what holds a fit back."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    _, counts = np.unique(y, return_counts=True)
    folds = int(min(folds, counts.min()))
    if folds < 2:
        return float("nan")
    k = int(min(k, max(1, len(y) * (folds - 1) // folds - 1)))
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    return float(np.mean(cross_val_score(KNeighborsClassifier(k), X, y, cv=cv)))


#: the end of :func:`fit_note`'s "hardly better than the most frequent class" when the fit warned of its
#: inputs' scales: that, not the features, is the likely cause (a crawl read "It found no pattern in these
#: features" above the scale warning, and stopped there)
SCALE_CAUSE = (" The likely cause is the features' scales (the method's warning says which columns): "
               "on the Data page, tick **Standardise features**.")


def scale_warned(texts) -> bool:
    """Whether a fit's warnings include a DataScaleWarning (``bsvm.data.check_input_scale``'s words)."""
    return any("column scales differ" in t or "the prior assumes inputs of order 1" in t for t in texts)


def fit_note(est, X: np.ndarray, y: np.ndarray, max_rows: int = 2000,
             retry: str = "and Start again", scaled_badly: bool = False) -> str | None:
    """What a finished fit misses on its own training rows (up to ``max_rows`` evenly spaced ones), in
    words, or None when nothing stands out:

    * a straight boundary (SubgradientHMC and GibbsSVM on the raw inputs, a linear kernel) that a
      15-nearest-neighbour vote beats by at least 5 points of accuracy even out of fold: the classes want
      a curved boundary, and the option that gives one. On the shipped samples (the dashboard's split)
      XOR (line 63 %, neighbours 97 %) and moons (87 %, 94 %) get it; Ripley (89 %, 91 %), twonorm,
      ringnorm (76 %, 52 %: neighbours fail in 20 dimensions), breast cancer, iris and wine do not;
    * any fit hardly better than always predicting the most frequent class (error >= 0.9 x that
      rule's).

    The maps show a poor boundary only to a reader who knows what to expect; this says it. ``retry``
    ends the advice (the page's way to try again); ``scaled_badly``: the fit warned of its inputs'
    scales, the likely cause (:data:`SCALE_CAUSE`). None also when prediction fails (the maps report
    that)."""
    X, y = np.asarray(X), np.asarray(y)
    if len(y) == 0:
        return None
    idx = thin_index(len(y), max_rows)
    X, y = X[idx], y[idx]
    try:
        pred = np.asarray(est.predict(X))
    except Exception:  # noqa: BLE001 - a prediction failure is reported where the maps are drawn
        return None
    _, counts = np.unique(y, return_counts=True)
    base_error = 1.0 - counts.max() / counts.sum()
    acc = float(np.mean(pred == y))
    fix = _straight_boundary(est)
    if fix and len(counts) > 1:
        knn = neighbour_accuracy(X, y)
        if np.isfinite(knn) and knn - acc >= 0.05:
            return (f"A straight boundary gets {acc:.0%} of the training rows right; a nearest-neighbour "
                    f"vote, which can bend, gets {knn:.0%} right even on rows it did not see: these classes "
                    f"want a curved boundary. Choose {fix} {retry}.")
    if base_error > 0 and 1 - acc >= 0.9 * base_error:
        return (f"On its own training rows this fit is right {acc:.0%} of the time, hardly better than "
                f"always predicting the most frequent class ({1 - base_error:.0%})."
                + (SCALE_CAUSE if scaled_badly else
                   f" Its boundary is a straight line with these options: choose {fix} for a curved one."
                   if fix else " It found no pattern in these features with these settings."))
    return None


#: A sampler that runs until its stopping rule is met (its estimate's ``time_note``, bsvm.cost.SLOW_NOTE)
#: takes as many sweeps as its posterior needs to mix, which no model of the data's size knows: the Train
#: page gives its time as this range around the estimate. Measured against MS-BPM's estimate on 3 classes
#: (CPU s of the fit, or seconds on the page): wine 0.6x, iris 1.0x, three 2-D Gaussian blobs of 250
#: rows 1.3x (8.2 s, 6,244 sweeps against the model's 3,000; 11 s on the page), a crawl's 600 rows with 6
#: chains 2.7x on the page ("about 6 s", 16 s); four overlapping classes, a slow mixer, 5.9x; two classes
#: of 2,089 rows x 8 noisy features (30 % error), a crawl's upload, 4.0x (202 CPU s against 50 s, 2,414
#: sweeps against the model's 745; the page had said "25 seconds to 2 minutes" with the 3.0x bound).
AUTO_LENGTH_RANGE = (0.5, 5.0)


def seconds_range(lo: float, hi: float) -> str:
    """A time range in words: "3 to 19 seconds", "up to 2 seconds" when it starts under a second ("under
    a second to 2 seconds" read badly: a crawl), "under a second", "2 to 5 minutes"."""
    from bsvm.cost import format_seconds

    a, b = format_seconds(lo), format_seconds(hi)
    if a == b:
        return a
    if a == "under a second":
        return f"up to {b}"
    for unit in (" seconds", " minutes", " hours"):
        if a.endswith(unit) and b.endswith(unit):
            return f"{a.removesuffix(unit)} to {b}"
    return f"{a} to {b}"


def cost_range(cost) -> tuple[float, float]:
    """(low, high) seconds of a ``bsvm.cost.Cost``: :data:`AUTO_LENGTH_RANGE` times its estimate for a run
    to a stopping rule (its ``time_note``), else the estimate itself (NaN: no estimate)."""
    seconds = float(cost.seconds)
    if getattr(cost, "time_note", "") and np.isfinite(seconds):
        return AUTO_LENGTH_RANGE[0] * seconds, AUTO_LENGTH_RANGE[1] * seconds
    return seconds, seconds


def cost_caption(cost, rows: int, short: bool = False) -> str:
    """The Train page's cost line for a ``bsvm.cost.Cost``. An estimate of a run to a stopping rule is
    given as a range (:data:`AUTO_LENGTH_RANGE`) and says why: "about 6 s" read as a promise, and the
    3-class MS-BPM run it described took 11-16 s. ``short``: one line (presentation mode), the range
    kept and the details in brackets left out."""
    from bsvm.cost import format_bytes

    memory = format_bytes(float(cost.memory_bytes))
    detail = getattr(cost, "detail", "")
    text = f"about {memory} and {seconds_range(*cost_range(cost))}"
    why = ("; the sampler runs until its stopping rule is met, so the time depends on how fast the "
           "posterior mixes: a slow mixer takes longer") if getattr(cost, "time_note", "") else ""
    if not short and (detail or why):
        text += f" ({detail}{why})"
    return f"Estimated cost on {rows:,} rows: {text}."
