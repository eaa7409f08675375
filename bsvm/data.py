"""Input validation and CSV loading shared by every estimator.

Every check raises ``ValueError`` with a message that says what to do, so scripts and the dashboard
can show it as is (the dashboard never shows a traceback).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._userwarn import warn_user

MULTICLASS_HINT = (
    "use bsvm.MSBPM or bsvm.SubgradientHMC, which are multi-class natively, or wrap this estimator in "
    "scikit-learn's OneVsRestClassifier"
)


def _reject_non_numeric(X, what: str = "X", fitting: bool = True) -> None:
    """Name the offending columns of a DataFrame instead of letting numpy fail on a string."""
    when = "before fitting" if fitting else "before predicting (as for the training data)"
    if isinstance(X, pd.DataFrame):
        bad = [str(c) for c in X.columns
               if not (pd.api.types.is_numeric_dtype(X[c].dtype) or pd.api.types.is_bool_dtype(X[c].dtype))]
        if bad:
            raise ValueError(
                f"{what} has non-numeric columns {bad}: encode them as numbers "
                f"(e.g. pandas.get_dummies) or drop them {when}."
            )
    else:
        arr = np.asarray(X) if not hasattr(X, "toarray") else None
        if arr is not None and arr.dtype.kind in "OUS":
            try:
                arr.astype(np.float64)
            except ValueError as exc:  # strings; a TypeError (dicts, objects) is a programming error
                raise ValueError(
                    f"{what} contains non-numeric values ({exc}): encode categorical columns as numbers "
                    f"or drop them {when}."
                ) from None


def nonfinite_message(n_nan: int, n_inf: int, what: str = "X", fitting: bool = True) -> str:
    return (f"{what} contains {n_nan} NaN and {n_inf} infinite values: drop or impute those rows "
            f"(e.g. sklearn.impute.SimpleImputer) {'before fitting' if fitting else 'before predicting'}.")


def _reject_nonfinite(X: np.ndarray, what: str = "X", fitting: bool = True) -> None:
    if not np.all(np.isfinite(X)):
        raise ValueError(nonfinite_message(int(np.isnan(X).sum()), int(np.isinf(X).sum()), what, fitting))


#: feature magnitudes bsvm accepts: squares and sums of squares (distances, variances) of larger or
#: smaller values overflow or underflow float64 (about 1e308 and 1e-308)
MAGNITUDE_RANGE = (1e-150, 1e150)


def _rescale_advice(top, big, tiny) -> str:
    """Divide the huge columns and multiply the tiny ones by a power of ten near their size, with the
    power of the first one named (the advice said "X[:, j] / 1e200" for values of 1e-200 too, which
    makes them smaller still: a newcomer's review)."""
    j = int([*big, *tiny][0])
    power = f"1e{int(round(abs(np.log10(top[j]))))}"
    what = "those columns" if len(big) + len(tiny) > 1 else "that column"
    how = "Divide" if j in set(np.asarray(big).tolist()) else "Multiply"
    their = "their" if len(big) + len(tiny) > 1 else "its"
    return (f"{how} {what} by a power of ten near {their} size (e.g. X[:, {j}] "
            f"{'/' if how == 'Divide' else '*'} {power}) before fitting.")


def _reject_extreme(X: np.ndarray, what: str = "X", fitting: bool = True) -> None:
    """Refuse magnitudes whose squares float64 cannot hold: beyond 1e150 (any row), or, when fitting, a
    varying column whose every value is below 1e-150 (it would vanish from every distance)."""
    if X.size == 0:
        return
    hi, lo = np.max(X, axis=0), np.min(X, axis=0)  # (two passes, no n x d temporary such as |X|)
    top = np.maximum(hi, -lo)
    big = np.flatnonzero(top > MAGNITUDE_RANGE[1])
    tiny = np.flatnonzero((top < MAGNITUDE_RANGE[0]) & (hi > lo)) if fitting else []
    if len(big) or len(tiny):
        cols = ", ".join(f"column {j} (largest |x| = {top[j]:.3g})" for j in [*big, *tiny][:4])
        raise ValueError(
            f"{what} has values too {'large' if len(big) else 'small'} for float64 arithmetic on squares, "
            f"in {cols}: bsvm accepts magnitudes between {MAGNITUDE_RANGE[0]:g} and {MAGNITUDE_RANGE[1]:g}. "
            # (StandardScaler is no remedy here: its variance of 1e200 values overflows to NaN, and values
            # of 1e-200 keep scale 1 as a zero variance; a review followed that advice both ways)
            + (_rescale_advice(top, big, tiny) if fitting
               else "Rescale them as the training data were scaled before the fit.")
        )


class UnusableRowsError(ValueError):
    """Rows of a CSV whose label is missing or a feature is missing, infinite or beyond the magnitudes
    bsvm accepts (``MAGNITUDE_RANGE``). ``kinds`` names what was found ("missing", "infinite", "extreme"),
    ``n_rows`` / ``n_total`` count the rows, ``columns`` the columns involved: a caller (the dashboard)
    can say it in its own words."""

    def __init__(self, message: str, kinds: list[str], n_rows: int, n_total: int, columns: list[str]):
        super().__init__(message)
        self.kinds, self.n_rows, self.n_total, self.columns = kinds, n_rows, n_total, columns

    def __reduce__(self):  # (an exception is pickled from its args alone: these are needed too)
        return type(self), (str(self), self.kinds, self.n_rows, self.n_total, self.columns)

    @property
    def what(self) -> str:
        return _unusable_values(self.kinds)


def _unusable_values(kinds: list[str]) -> str:
    """'Missing values', 'Missing or infinite values', 'Extreme values (|x| > 1e+150)', ..."""
    words = {"missing": "missing", "infinite": "infinite",
             "extreme": f"extreme (|x| > {MAGNITUDE_RANGE[1]:g})"}
    parts = [words[k] for k in kinds]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    return text[0].upper() + text[1:] + " values"


def says_class(label) -> bool:
    """Whether a class label names itself a class ("class_1", "Class A"): text then shows it as it is,
    not as "class class_1" (the dashboard's messages and legends, MS-BPM's parameter names)."""
    return str(label).lower().startswith("class")


def class_name(label) -> str:
    """A class's name in text: "class 1", but "class_0" as it is."""
    return str(label) if says_class(label) else f"class {label}"


def _label_text(value) -> str:
    """A label as the user wrote it: 'imL', not np.str_('imL'); 3, not np.int64(3)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _reject_mixed_labels(y) -> None:
    """Labels mixing strings and numbers (e.g. ["a", 1]) are ambiguous: numpy would silently turn the
    numbers into strings (a list) or fail to sort them (an object array). Ask for one type."""
    if isinstance(y, pd.Series | pd.Index):
        values = y.to_numpy()
    elif isinstance(y, list | tuple):
        values = y
    else:
        values = np.asarray(y) if not hasattr(y, "toarray") else None
        if values is None or values.dtype != object:
            return
    values = np.ravel(np.asarray(values, dtype=object))
    missing = [v is None or (isinstance(v, float | np.floating) and not np.isfinite(v)) for v in values]
    if any(missing):
        # missing labels among strings: "y mixes label types (number nan, string 'a') ... y = [str(v) for
        # v in y]" would have made "nan" a class (a review)
        raise ValueError(missing_labels_message(np.where(missing, np.nan, 0.0)))
    first = {}
    for v in values:
        first.setdefault(_label_kind(v), v)
    if len(first) > 1:
        examples = ", ".join(f"{kind} {_label_text(v)}" for kind, v in sorted(first.items()))
        raise ValueError(f"y mixes label types ({examples}): use one type for all labels, e.g. "
                         "y = [str(v) for v in y].")


def _label_kind(v) -> str:
    if isinstance(v, str | bytes | np.str_ | np.bytes_):
        return "string"
    if isinstance(v, int | float | np.number | bool | np.bool_):
        return "number"
    return type(v).__name__


def missing_labels_message(y) -> str:
    """What to say of labels that are NaN or infinite (missing labels, as a CSV reader leaves them)."""
    try:
        bad = np.flatnonzero(~np.isfinite(np.asarray(y, dtype=np.float64).ravel()))
    except (TypeError, ValueError):
        bad = np.zeros(0, dtype=np.intp)
    where = ""
    if bad.size:
        rows = ", ".join(str(int(i)) for i in bad[:5]) + (", ..." if bad.size > 5 else "")
        plural = "s" if bad.size > 1 else ""
        where = f" in {bad.size} row{plural} (row{plural} {rows})"
    return (f"y has missing labels (NaN or infinite){where}: drop those rows from X and y, or fill in "
            "their labels, before fitting.")


def check_fit_data(estimator, X, y, *, binary_only: bool = False, min_per_class: int = 2):
    """Validate training data for a classifier and set ``classes_`` and ``n_features_in_``.

    Returns ``(X, y_index)`` with ``X`` a C-contiguous float64 array and ``y_index`` the position of each
    label in ``classes_`` (0..K-1).
    """
    # scikit-learn is imported here, not at module level: the dashboard's Data page reads CSVs through
    # this module and should open without paying for scikit-learn's import
    from sklearn.utils.multiclass import type_of_target
    from sklearn.utils.validation import validate_data

    name = type(estimator).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None: pass the labels.")
    _reject_non_numeric(X)
    _reject_mixed_labels(y)
    try:
        X, y = validate_data(estimator, X, y, ensure_all_finite=False, dtype=np.float64, order="C",
                             ensure_min_samples=1, y_numeric=False)
    except ValueError as exc:
        msg = str(exc)
        if "inconsistent numbers of samples" in msg:
            raise ValueError(f"X and y have different numbers of rows ({msg}): "
                             "pass one label per row of X.") from None
        if msg.startswith("Input y contains"):  # scikit-learn's "Input y contains NaN." says no more
            raise ValueError(missing_labels_message(y)) from None
        raise
    _reject_nonfinite(X)
    _reject_extreme(X)
    target = type_of_target(y, input_name="y")
    if target in ("continuous", "continuous-multioutput", "multilabel-indicator", "multiclass-multioutput"):
        raise ValueError(
            f"Unknown label type: {target}. {name} needs one discrete class label per row "
            "(integers or strings); for a continuous target use a regressor."
        )
    classes, y_index = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"y has only 1 class ({_label_text(classes[0])}): a classifier needs examples of at least two "
            "classes."
        )
    if binary_only and len(classes) > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} is a binary classifier but y has "
            f"{len(classes)} classes: {MULTICLASS_HINT}."
        )
    counts = np.bincount(y_index, minlength=len(classes))
    if counts.min() < min_per_class:
        few = ", ".join(_label_text(classes[k]) for k in np.flatnonzero(counts < min_per_class))
        raise ValueError(
            f"Class(es) [{few}] have fewer than {min_per_class} rows (1 sample is not enough): "
            f"provide at least {min_per_class} examples per class."
        )
    estimator.classes_ = classes
    return X, y_index.astype(np.intp)


class DataScaleWarning(UserWarning):
    """The inputs' scales are likely to mislead the method (the message says why and what to do)."""


#: column scales more than this far apart (largest / smallest sd) are flagged
SCALE_SPREAD = 1e3
#: methods whose prior assumes inputs of order 1 flag columns with sd outside this range
UNIT_RANGE = (1e-3, 1e3)


#: rows per block of :func:`column_scales`' second pass (a block's deviations stay in the cache)
_SCALE_BLOCK_ROWS = 8192


def column_scales(X: np.ndarray) -> np.ndarray:
    """Per-column standard deviations (``np.std(X, axis=0)``), without overflow or underflow even for
    values near 1e300 or 1e-300 (then each column is divided by its largest |x| first). Otherwise two
    passes over X (the mean, then the squared deviations block by block) and no n x d temporary: at
    1,000,000 x 20, 0.13 CPU s against 0.4 s for ``np.std`` of the rescaled array (every fit's checks
    call it)."""
    if X.size == 0:
        return np.zeros(X.shape[1])
    if not isinstance(X, np.ndarray):  # e.g. the rows of a Dask array (sbsvm.dask_fit.DaskRows)
        top = np.max(np.abs(X), axis=0)
        return np.std(X / np.where(top > 0, top, 1.0), axis=0) * top
    top = np.maximum(np.max(X, axis=0), -np.min(X, axis=0))
    if not np.all((top <= 1e100) & ((top >= 1e-100) | (top == 0))):  # (NaN too) squares could over- or
        # underflow: rescale
        safe = np.where(top > 0, top, 1.0)
        return np.std(X / safe, axis=0) * top
    mean = np.mean(X, axis=0)
    ss = np.zeros(X.shape[1])
    for s in range(0, X.shape[0], _SCALE_BLOCK_ROWS):
        dev = X[s:s + _SCALE_BLOCK_ROWS] - mean
        ss += np.einsum("ij,ij->j", dev, dev)
    return np.sqrt(ss / X.shape[0])


#: check_input_scale: for a method that standardises its inputs, the largest array (cells) whose columns
#: are checked for being all constant (one pass over it)
CONSTANT_CHECK_CELLS = 50_000_000


def scale_spread(sd: np.ndarray) -> tuple[int, int] | None:
    """(narrowest, widest) of the non-constant columns, by standard deviation ``sd``, when the two are
    more than ``SCALE_SPREAD`` apart; else None. (The methods' warning below, and the dashboard's Data
    page before any fit.)"""
    sd = np.asarray(sd, dtype=float)
    live = np.flatnonzero(np.isfinite(sd) & (sd > 0))
    if live.size < 2:
        return None
    lo, hi = live[np.argmin(sd[live])], live[np.argmax(sd[live])]
    return (int(lo), int(hi)) if sd[hi] / sd[lo] > SCALE_SPREAD else None


def check_input_scale(estimator, X: np.ndarray, rule: str, sd: np.ndarray | None = None) -> None:
    """Warn (:class:`DataScaleWarning`) when the inputs' scales would silently mislead the method.

    The rule is the method's (each estimator's docstring says which it follows):

    * ``"standardizes"``: the method standardises every column itself; nothing to check.
    * ``"adaptive"``: the method adapts to the overall scale (a length scale or ``gamma`` from the data),
      but one scale serves every column, so columns whose standard deviations differ by more than
      ``SCALE_SPREAD`` (1e3) are flagged: the widest columns would decide alone.
    * ``"unit"``: the prior assumes inputs of order 1 (e.g. a fixed kernel width), so besides the spread,
      any column with a standard deviation outside ``UNIT_RANGE`` (1e-3..1e3) is flagged: there the
      prior dominates the data (tiny scales) or vanishes (huge ones).
    * ``"ard"``: as "unit", for a kernel with a learned relevance weight per feature (SeegerARD without
      its standardisation): the spread is flagged for the weights' common start and prior.
    * ``"weights"``: as "unit", for N(0, I) on the weights of the raw features (a linear model): the
      spread is then flagged for what it does there, one prior holding the narrow columns' effects
      tighter than the wide ones' (not "the widest decide alone", which is a shared distance's fault).

    Constant columns are ignored, unless every column is constant: then, whatever the rule, the warning
    says the fit can learn only the class frequencies (the samplers ran such a fit, said they converged
    and predicted the base rate everywhere, silently; a review). The remedy is otherwise the same in every
    case: standardise the features (``sklearn.preprocessing.StandardScaler``, or the dashboard's
    standardise option). ``sd``: the columns' standard deviations when the caller has them (a Dask
    array's, from one pass over its blocks).
    """
    if X.shape[0] < 2:
        return
    if rule == "standardizes" and sd is None and X.shape[0] * X.shape[1] > CONSTANT_CHECK_CELLS:
        return  # (a large array the method standardises: its own pass finds a constant design)
    sd = column_scales(X) if sd is None else np.asarray(sd, dtype=float)
    live = np.flatnonzero(np.isfinite(sd) & (sd > 0))
    if live.size == 0 and np.isfinite(sd).all():
        warn_user(f"{type(estimator).__name__}: every feature is constant on the training rows, so the fit "
                  "can learn only the class frequencies (the same probabilities for every row). Check "
                  "the feature columns.", DataScaleWarning)
        return
    if rule == "standardizes" or live.size == 0:
        return
    names = getattr(estimator, "feature_names_in_", None)

    def col(j):
        return str(names[j]) if names is not None else f"column {j}"

    problems = []
    if (pair := scale_spread(sd)) is not None:
        lo, hi = pair
        spread = f"column scales differ by a factor of {sd[hi] / sd[lo]:.3g} (standard deviation " \
                 f"{sd[lo]:.3g} in {col(lo)}, {sd[hi]:.3g} in {col(hi)})"
        if rule == "ard":  # (SeegerARD: a learned weight per feature; "the widest decide alone" was wrong)
            problems.append(f"{spread}, and every column's relevance weight starts at one value under a "
                            "prior for inputs of order 1, so the narrow columns start far from their optimum")
        elif rule == "weights":  # (a linear model: one prior per weight, not one distance for all columns)
            problems.append(f"{spread}, and the same N(0, 1) prior on every weight holds {col(lo)}'s effect "
                            f"{sd[hi] / sd[lo]:.3g} times tighter than {col(hi)}'s")
        else:
            problems.append(f"{spread}, and one scale serves all columns, so the widest decide alone")
    if rule in ("unit", "weights", "ard"):
        off = [j for j in live if not UNIT_RANGE[0] <= sd[j] <= UNIT_RANGE[1]]
        if off:
            shown = ", ".join(f"{col(j)} (sd {sd[j]:.3g})" for j in off[:3])
            shown += " ..." if len(off) > 3 else ""
            problems.append(f"the prior assumes inputs of order 1, but {shown} "
                            f"{'lies' if len(off) == 1 else 'lie'} outside "
                            f"{UNIT_RANGE[0]:g}..{UNIT_RANGE[1]:g}, where the prior swamps the data (tiny "
                            "scales) or vanishes (huge ones)")
    if problems:
        warn_user(f"{type(estimator).__name__}: {'; '.join(problems)}. Standardise the features "
                  "(sklearn.preprocessing.StandardScaler) before fitting.", DataScaleWarning)


def check_predict_data(estimator, X) -> np.ndarray:
    """Validate inputs at predict time: fitted, numeric, finite, same number of features."""
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    _reject_non_numeric(X, fitting=False)
    X = validate_data(estimator, X, reset=False, ensure_all_finite=False, dtype=np.float64, order="C")
    _reject_nonfinite(X, fitting=False)
    _reject_extreme(X, fitting=False)
    return X


# ---------------------------------------------------------------------------------------------------------
# CSV loading


@dataclass
class LoadedCSV:
    """A table split into numeric features and a label column. ``notes`` says what the loader did that the
    user should know (encoding, separator, guessed label, skipped columns, dropped rows)."""

    X: np.ndarray = field(repr=False)  # (its repr printed every row, a newcomer's review)
    y: np.ndarray = field(repr=False)
    feature_names: list[str]
    label_name: str
    frame: pd.DataFrame = field(repr=False)
    notes: list[str] = field(default_factory=list)
    #: each row's position among the file's lines under its header (0 = the first line under it): blank
    #: lines and rows with unusable values dropped (``dropna``) leave gaps; None when the table did not
    #: come from a file
    rows: np.ndarray | None = field(default=None, repr=False)


MAX_CSV_BYTES = 200 * 1024 * 1024
#: separators tried when sniffing (comma first: the default when the sample is ambiguous)
SEPARATORS = (",", ";", "\t", "|")
#: label column names recognised when ``label=None`` (case-insensitive), before falling back to the last
LABEL_NAMES = ("label", "class", "target", "y", "outcome", "diagnosis", "species")


def _raw_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    elif isinstance(source, (str, os.PathLike)):
        if not os.path.exists(source):
            raise ValueError(f"No such file: {source}. Check the path.")
        if os.path.getsize(source) > MAX_CSV_BYTES:
            raise ValueError(f"The file is larger than {MAX_CSV_BYTES // 2**20} MB: subsample it first.")
        with open(source, "rb") as fh:
            data = fh.read()
    elif hasattr(source, "read"):
        data = source.read()
        data = data.encode() if isinstance(data, str) else bytes(data)
    else:
        raise TypeError(f"source must be a path, bytes or a file-like object, got {type(source).__name__}")
    if len(data) > MAX_CSV_BYTES:
        raise ValueError(f"The file is larger than {MAX_CSV_BYTES // 2**20} MB: subsample it first.")
    return data


def _decode(data: bytes, notes: list[str]) -> str:
    """UTF-8 (with or without a byte-order mark), else Windows-1252 / Latin-1, which every byte decodes:
    spreadsheets on Windows write the latter."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    for enc in ("cp1252", "latin-1"):
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            continue
        notes.append(f"The file is not UTF-8; it was read as {enc} (Latin-1 family).")
        return text
    raise ValueError("The file's text encoding is not recognised: save it as UTF-8.")  # unreachable


def _sniff_separator(text: str) -> str:
    """The separator that splits the first lines into the same number (> 1) of fields most often."""
    lines = [ln for ln in text[:65536].splitlines()[:50] if ln.strip()]
    if not lines:
        return ","
    best, best_score = ",", (0, 0)
    for sep in SEPARATORS:
        counts = [ln.count(sep) for ln in lines]
        if counts[0] == 0:
            continue
        agree = sum(c == counts[0] for c in counts)
        score = (agree, counts[0])
        if score > best_score:
            best, best_score = sep, score
    return best


def read_csv_table(source, notes: list[str] | None = None) -> pd.DataFrame:
    """Read a CSV (path, bytes or file-like) into a DataFrame with a clear error for unreadable files.

    Handles the usual odd files: a UTF-8 byte-order mark or Latin-1/Windows-1252 text, separators other
    than commas (semicolon, tab, bar; sniffed from the first lines) and, with semicolons, decimal commas
    ("1,5"). What was done is appended to ``notes`` when given.
    """
    notes = [] if notes is None else notes
    raw = _raw_bytes(source)
    head = raw[:65536]
    # text has no NUL bytes and few control characters; a spreadsheet (.xlsx is a zip), an image or a
    # NumPy file has many: it was read as latin-1 "columns" of control characters, with three messages
    controls = sum(b < 32 and b not in (9, 10, 13) for b in head)
    if head and (b"\x00" in head or controls > 0.01 * len(head)):
        kind = " (it looks like an Excel workbook)" if head[:2] == b"PK" else ""
        raise ValueError(f"This is not a text CSV file{kind}: it holds binary data. Save it as CSV (comma-"
                         "separated text with a header row) and upload that.")
    text = _decode(raw, notes)
    if not text.strip():
        raise ValueError("The file is empty: it needs a header row and at least a few data rows.")
    sep = _sniff_separator(text)
    decimal = "."
    if sep == ";" and re.search(r"\d,\d", text[:65536]) and not re.search(r"\d\.\d", text[:65536]):
        decimal = ","  # a European spreadsheet: 1,5 is one and a half
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, decimal=decimal)
    except pd.errors.EmptyDataError:
        raise ValueError("The file is empty: it needs a header row and at least a few data rows.") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"The file could not be read as CSV ({exc}): save it as comma-separated text "
                         "with a header row and the same number of fields on every line.") from None
    # each row's position among the file's lines under the header (pandas skips blank lines, and a row
    # number counted from its table was off by one after each blank line: a review of the split download);
    # left out when the lines cannot be matched to the rows (a quoted field over several lines)
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    filled = [i - first - 1 for i in range(first + 1, len(lines)) if lines[i].strip()]
    if len(filled) == len(frame):
        frame.attrs["file_rows"] = np.asarray(filled)
    if sep != ",":
        name = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}[sep]
        tail = " and numbers use decimal commas." if decimal == "," else "."
        notes.append(f"Columns are separated by {name}{tail}")
    if sep == ";":
        # Semicolon files only: there a comma is a European decimal mark; in tab files it is more often a
        # thousands mark. Two cases pandas leaves as text: a column written with decimal commas beside
        # others with points (one column pasted from another spreadsheet), and, in a decimal-comma file,
        # a column with a few placeholders ("?", "NA") for missing values. Both were left out as "not
        # numeric" (a European file with '?' in every column was refused as having no features). Their
        # numbers are read here; the placeholders stay text, for load_csv to treat as missing values.
        for col in [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]:
            read = _decimal_comma_numbers(frame[col], need_comma=decimal == ".")
            if read is not None:
                frame[col] = read
                if decimal == ".":
                    notes.append(f"Column {str(col).strip()!r} uses decimal commas: read as numbers.")
    # duplicates as written in the header: pandas renames a second "a" to "a.1" before anyone sees it
    header = [h.strip() for h in next(csv.reader([text.lstrip("\n").splitlines()[0]], delimiter=sep), [])]
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise ValueError(f"Column names {twice} appear more than once: give every column its own name.")
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.shape[1] < 2:
        raise ValueError("The CSV has fewer than two columns: it needs a label column and at least one "
                         "feature column, separated by commas (or semicolons or tabs).")
    if frame.columns.duplicated().any():
        dup = sorted(set(frame.columns[frame.columns.duplicated()]))
        raise ValueError(f"Column names {dup} appear more than once: give every column its own name.")
    return frame


def _decimal_comma_numbers(col: pd.Series, need_comma: bool, share: float = 0.9):
    """``col`` with its entries written as decimal-comma numbers ("1,5", "-3", "2,5e-3") read as floats,
    the other entries (placeholders) left as they are; None unless at least ``share`` of the present
    entries are such numbers (as :func:`_mostly_numeric` asks), and, with ``need_comma``, some have a
    comma (in a file with decimal points, only a column that shows a decimal comma is one)."""
    present = col.dropna()
    v = present.astype(str).str.strip()
    is_num = v.str.fullmatch(r"[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?")
    if not len(v) or is_num.mean() < share or (need_comma and not v[is_num].str.contains(",").any()):
        return None
    out = col.astype(object).copy()
    out.loc[is_num[is_num].index] = pd.to_numeric(v[is_num].str.replace(",", ".", regex=False)).to_numpy()
    return pd.to_numeric(out) if is_num.all() else out  # all numbers (and gaps): a float column


def guess_label(frame: pd.DataFrame) -> str:
    """The likely label column: one named like a label (``LABEL_NAMES``, case-insensitive), else the
    last column, unless that holds measurements (:func:`_measurement_kind`): then the column of whole
    numbers or text with the fewest distinct values (2 to 20), if there is one. A last column of whole
    numbers with more than 20 distinct values, over a tenth of the rows, gives way to a text column of 2
    to 20 values."""
    lower = {str(c).strip().lower(): str(c) for c in frame.columns}
    for name in LABEL_NAMES:
        if name in lower:
            return lower[name]
    last = str(frame.columns[-1])
    col = frame[frame.columns[-1]]
    if _measurement_kind(col) is None:
        # whole numbers of many values (wine's proline, 121 values in 178 rows) are a measurement rather
        # than classes when a text column of 2 to 20 values is there to be the label (wine's cultivar,
        # which the page had set aside as "not numeric", a crawl)
        # (only when the values are many for the rows too: abalone's Rings, 28 values in 4,177 rows, is its
        # target and stays the guess over the text column Sex, a review)
        k = col.nunique()
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col) and k > 20 and \
                k > 0.1 * len(col):
            text = _fewest_valued(frame[[c for c in frame.columns
                                         if not pd.api.types.is_numeric_dtype(frame[c])]])
            if text:
                return text[1]
        return last
    # the last column is a measurement (a file with its class column first)
    few = _fewest_valued(frame)
    return few[1] if few else last


def _fewest_valued(frame: pd.DataFrame, exclude=None) -> tuple[int, str] | None:
    """(distinct values, name) of the column, other than ``exclude``, that looks most like class labels:
    whole numbers or text with the fewest distinct values, 2 to 20 (the first such on ties); None if
    there is none."""
    found = None
    for c in frame.columns:
        if c == exclude:
            continue
        k = int(frame[c].nunique())
        if 2 <= k <= 20 and (found is None or k < found[0]) and _measurement_kind(frame[c]) is None:
            found = (k, str(c))
    return found


def _measurement_kind(col: pd.Series) -> str | None:
    """Why a column cannot be class labels: "numbers with fractions" (scikit-learn's "continuous"
    target, which its classifiers refuse too), "a different value in every row" (an identifier, over
    20 rows), or None when it can be."""
    if pd.api.types.is_bool_dtype(col):
        return None
    if not pd.api.types.is_numeric_dtype(col):
        # text: names or codes, one per row (p0, p1, ...), are identifiers too (a review)
        present = col.dropna()
        return "a different value in every row" if len(present) > 20 and present.nunique() == len(present) \
            else None
    v = col.dropna().to_numpy(dtype=np.float64)
    if np.any(v != np.round(v)):
        return "numbers with fractions"
    if len(v) > 20 and pd.unique(v).size == len(v):
        return "a different value in every row"
    return None


def _mostly_numeric(col: pd.Series, share: float = 0.9) -> tuple[bool, list[str]]:
    """Whether a text column is numbers with a few placeholders ("?", "NA", "-"): those become missing
    values. Returns (mostly numeric, the distinct non-numeric entries)."""
    if pd.api.types.is_numeric_dtype(col):
        return True, []
    present = col.dropna()
    num = pd.to_numeric(present, errors="coerce")
    bad = present[num.isna()]
    ok = len(present) > 0 and (1 - len(bad) / len(present)) >= share
    return ok, sorted(map(str, bad.unique()))[:5]


def numeric_columns(frame: pd.DataFrame, label: str) -> list[str]:
    """The columns :func:`load_csv` can use as features: numeric ones, and text columns that are numbers
    with a few placeholders (read as missing values)."""
    return [str(c) for c in frame.columns if str(c) != str(label) and _mostly_numeric(frame[c])[0]]


def _row_number(col: pd.Series) -> bool:
    """Whether a column is a row number: over 20 rows of whole numbers going up by one from row to row
    (1001, 1002, ..., in the file's order). A column of the same values shuffled (a year, a rank) is
    a measurement of each row, not its position: it stays."""
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col) or len(col) <= 20:
        return False
    v = col.to_numpy(dtype=np.float64)
    return bool(np.all(np.isfinite(v)) and np.all(np.diff(v) == 1.0) and v[0] == np.round(v[0]))


def _reject_measurement_label(frame: pd.DataFrame, label: str) -> None:
    """Refuse a label column of measurements or identifiers (:func:`_measurement_kind`): it made every
    row its own class, and the error then listed all 800 "classes" (a crawl)."""
    what = _measurement_kind(frame[label])
    if what is None:
        return
    col = frame[label]
    v = col.to_numpy(dtype=np.float64) if pd.api.types.is_numeric_dtype(col) else col.to_numpy()
    few = _fewest_valued(frame, exclude=label)
    hint = f" Column {few[1]!r} has {few[0]} distinct values: is it the label?" if few else ""
    sample = ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in pd.unique(v)[:3])
    raise ValueError(f"The label column {label!r} holds {what} ({pd.unique(v).size:,} distinct values in "
                     f"{len(v):,} rows, e.g. {sample}): it looks like a measurement or an identifier, not "
                     f"class labels. Pick the column that holds the classes.{hint}")


def load_csv(source, label: str | None = "label", features: list[str] | None = None,
             dropna: bool = False) -> LoadedCSV:
    """Load a CSV and pick the label column by name.

    label: the label column's name (matched case-insensitively); None picks a column named like a label
    (``LABEL_NAMES``) or else the last one, and says so in ``notes``.
    features: defaults to every numeric column other than the label; non-numeric columns are left out
    (named in ``notes``), and a text column that is numbers with a few placeholders such as "?" is read
    as numbers with those entries missing. Row numbers (:func:`_row_number`) and columns with one value
    in every row are left out too, and named, unless nothing else would be left. Named features that
    are not numeric are an error. A label column of measurements or identifiers (numbers with fractions,
    or a different number in every row) is refused, with the likely label named.
    dropna: drop rows with a missing label or a missing, infinite or extreme (beyond ``MAGNITUDE_RANGE``,
    1e150) feature value (counted in ``notes``); otherwise such values are an ``UnusableRowsError`` (a
    ``ValueError``) that says how many rows and which columns.
    Raises ``ValueError`` for a missing label column, no numeric feature columns, missing values (unless
    ``dropna``), or a single class.
    """
    notes: list[str] = []
    frame = read_csv_table(source, notes)
    # the file's data rows the table keeps (LoadedCSV.rows): their positions under the header
    kept = np.asarray(frame.attrs.get("file_rows", np.arange(len(frame))))
    columns = list(map(str, frame.columns))
    if frame.shape[0] == 0:  # (else every column reads as non-numeric: "encode features as numbers")
        raise ValueError(f"The CSV has a header line (columns {columns}) but no rows of data: add rows under "
                         "its header.")
    if label is None:
        label = guess_label(frame)
        notes.append(f"Label column: {label!r} (guessed; pick another if it is wrong).")
    elif label not in frame.columns:
        matches = [c for c in frame.columns if str(c).strip().lower() == str(label).strip().lower()]
        if not matches:
            raise ValueError(f"Label column {label!r} not found; the columns are {columns}. Pass label= one "
                             f"of them (the likely one is {guess_label(frame)!r}).")
        label = matches[0]
    others = [c for c in frame.columns if c != label]
    if features is None:
        features, skipped = [], []
        for c in others:
            ok, bad = _mostly_numeric(frame[c])
            if not ok:
                skipped.append(c)
                continue
            if bad:
                frame[c] = pd.to_numeric(frame[c], errors="coerce")
                notes.append(f"Column {c!r}: entries {bad} are not numbers and were read as missing values.")
            features.append(c)
        if not features:
            raise ValueError(f"The CSV has no numeric feature columns besides the label {label!r} (columns "
                             f"{columns}): encode features as numbers.")
        if skipped:
            notes.append(f"Non-numeric columns left out of the features: {skipped} (encode them as numbers "
                         "to use them).")
        # a row number (an export's id: whole numbers, a different one in every row, in a run of
        # consecutive values) is no measurement, and on a file sorted by class it leaks the label:
        # GibbsSVM scored 0.99 on test rows with one, 0.85 without (a crawl). Left out, and said
        # (constants counted with them: dropping the id first left a constant column as the only feature)
        ids = [c for c in features if _row_number(frame[c])]
        still = [c for c in features if c not in ids
                 and pd.to_numeric(frame[c], errors="coerce").nunique(dropna=False) > 1]
        if ids and still:
            features = [c for c in features if c not in ids]
            many = len(ids) > 1
            said = ", ".join(repr(str(c)) for c in ids)
            them = "them" if many else "it"
            notes.append(f"Column{'s' if many else ''} {said} look{'' if many else 's'} like "
                         f"{'row numbers' if many else 'a row number'} (whole numbers going up by one from "
                         "row to row): left out of the features, where a file sorted by class would "
                         f"leak the label through {them} (choose {them} among the feature columns to keep "
                         f"{them}).")
        # a column with one value in every row (a unit, an export's constant) carries nothing to learn
        # from, yet it counted as a feature: a 2-D data set with one became 3-D, without its maps
        constant = [c for c in features
                    if pd.to_numeric(frame[c], errors="coerce").nunique(dropna=False) <= 1]
        if constant and len(constant) < len(features):
            features = [c for c in features if c not in constant]
            many = len(constant) > 1
            them = "them" if many else "it"
            # names quoted as the row-number note quotes them ("Column ['const']" printed a Python list)
            said = ", ".join(repr(str(c)) for c in constant)
            notes.append(f"Column{'s' if many else ''} {said} ha{'ve' if many else 's'} the same value "
                         f"in every row, so no method can learn from {them}: left out of the features "
                         f"(choose {them} among the feature columns to keep {them}).")
    else:
        missing = [f for f in features if f not in frame.columns]
        if missing:
            raise ValueError(f"Feature columns {missing} not found; the columns are {columns}.")
        if label in features:
            raise ValueError(f"The label column {label!r} is also listed as a feature: remove it from "
                             "features.")
    sub = frame[list(features)]
    _reject_non_numeric(sub)
    # an infinite feature ("inf" in the file) is as unusable as a missing one, and so is one beyond the
    # magnitudes bsvm accepts (a 1e300 sentinel): each is dropped with them, or named in the error
    values = sub.to_numpy(dtype=np.float64) if len(sub.columns) else np.zeros((len(sub), 0))
    with np.errstate(invalid="ignore"):
        infinite = np.isinf(values)
        extreme = np.abs(np.where(infinite, 0.0, values)) > MAGNITUDE_RANGE[1]
    missing = sub.isna().to_numpy()
    unusable = missing | infinite | extreme
    incomplete = unusable.any(axis=1) | frame[label].isna().to_numpy()
    if incomplete.any():
        cols = [str(c) for j, c in enumerate(features) if unusable[:, j].any()]
        cols += [str(label)] if frame[label].isna().any() else []
        kinds = [k for k, m in (("missing", missing.any() or frame[label].isna().any()),
                                ("infinite", infinite.any()), ("extreme", extreme.any())) if m]
        k = int(incomplete.sum())
        what = _unusable_values(kinds)
        if not dropna:
            placeholders = "".join(f" {n}" for n in notes if "read as missing" in n)  # (each ends in ".")
            raise UnusableRowsError(
                f"{what} in {k} of {len(frame)} rows (columns: {', '.join(cols)}).{placeholders} Drop "
                "those rows (load_csv(..., dropna=True)) or fix or impute them first.", kinds, k, len(frame),
                cols)
        kept = kept[~incomplete]
        frame = frame.loc[~incomplete].reset_index(drop=True)
        sub = frame[list(features)]
        notes.append(f"Dropped {k} row{'' if k == 1 else 's'} with {what.lower()} (columns: "
                     f"{', '.join(cols)}); {len(frame)} rows remain.")
        if len(frame) == 0:
            raise ValueError(f"Every row has {what.lower()}: nothing is left to train on.")
    y = frame[label].to_numpy()
    if len(np.unique(y)) < 2:
        raise ValueError(f"The label column {label!r} has only one class: a classifier needs two or more.")
    _reject_measurement_label(frame, label)
    X = sub.to_numpy(dtype=np.float64)
    _reject_nonfinite(X)
    return LoadedCSV(X=X, y=y, feature_names=[str(f) for f in features], label_name=str(label), frame=frame,
                     notes=notes, rows=kept)
