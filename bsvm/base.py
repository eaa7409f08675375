"""The estimator contract every bsvm method follows, and the live-progress record.

A method supplies ``_iterate(X, y_index)``, a generator that advances its inference engine and, every
few iterations, stores the state reached as fitted attributes and yields ``(iteration, metrics,
snapshot)``. ``fit_iter`` wraps it into :class:`Progress` records (with compute time that excludes the
time a consumer spends between records, e.g. a paused dashboard) and keeps them in ``history_``;
``fit`` simply exhausts ``fit_iter``. So the dashboard's live view and ``fit`` run the very same code,
and breaking out of ``fit_iter`` leaves an estimator fitted with the last state it reported.

Before any of that, in this order and before anything large is allocated:

1. the parameter table ``_parameter_constraints`` is checked (:mod:`bsvm.params`), before the data;
2. the data is checked (:mod:`bsvm.data`);
3. the cost guard (:mod:`bsvm.cost`) estimates memory and time from (n, d, classes) and the settings and
   refuses a fit that cannot fit in memory, or warns that it will run long.

A fit that fails (an exception from the checks or from the engine, at any iteration, also while a
``fit_iter`` consumer is iterating) leaves the estimator exactly as it was: unfitted, or with its
previous fit. Stopping ``fit_iter`` early (``break``) is not a failure: the estimator keeps the state of
the last record.
"""

from __future__ import annotations

import copy
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from threadpoolctl import ThreadpoolController

from .data import check_fit_data, check_input_scale, check_predict_data, class_name
from .params import validate_params

# -- BLAS threads ------------------------------------------------------------------------------------------
# BLAS thread counts are process-wide. threadpoolctl's limiter saves the current count on entry and
# restores it on exit, so two threads whose limits overlap (A enters: saves 2, sets 1; B enters: saves 1;
# A exits: restores 2; B exits: restores 1) left the process at one thread for good -- e.g. the dashboard
# predicting in a worker thread while another run trains. One shared, reference-counted limit fixes it:
# the first entrant saves the original counts and sets the limit, the last one out restores them.
_CONTROLLER = None
_BLAS_LOCK = threading.Lock()
_BLAS = {"depth": 0, "limiter": None}


@contextmanager
def _blas_limit(threads):
    """Limit BLAS to ``threads`` threads while the block runs (None: leave BLAS alone).

    Re-entrant and thread-safe: overlapping uses share one limit, and the original thread counts are
    restored when the last one exits. The controller (which inspects the loaded libraries, several ms)
    is built once."""
    global _CONTROLLER
    if threads is None:
        yield
        return
    with _BLAS_LOCK:
        if _CONTROLLER is None:
            _CONTROLLER = ThreadpoolController()
        if _BLAS["depth"] == 0:
            _BLAS["limiter"] = _CONTROLLER.limit(limits=threads, user_api="blas")
        _BLAS["depth"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS["depth"] -= 1
            if _BLAS["depth"] == 0:
                _BLAS["limiter"].restore_original_limits()
                _BLAS["limiter"] = None


@dataclass(frozen=True)
class Progress:
    """One live-progress record.

    iteration: iterations done so far (the method's own unit: SVI steps, sweeps, leapfrog trajectories).
    elapsed:   seconds of computation so far (time spent by the consumer between records excluded).
    metrics:   scalar diagnostics, e.g. ``elbo``, ``lengthscale``, ``step_size``, ``acceptance``;
               samplers report ``rhat``, ``ess_bulk``, ``ess_tail``, ``draws`` when they have them.
    snapshot:  small arrays for trace plots (a few coordinates, per-chain values).
    """

    iteration: int
    elapsed: float
    metrics: Mapping[str, float] = field(default_factory=dict)
    snapshot: Mapping[str, np.ndarray] = field(default_factory=dict)


def history_metric(history, name: str) -> np.ndarray:
    """The series of one scalar metric over a list of :class:`Progress` records (NaN where absent)."""
    return np.array([rec.metrics.get(name, np.nan) for rec in history], dtype=float)


#: attributes that the data check sets (``check_fit_data`` via scikit-learn's ``validate_data``)
_DATA_ATTRS = ("classes_", "n_features_in_", "feature_names_in_")
_MISSING = object()
#: metrics the progress bar shows when a record has them
_BAR_METRICS = ("elbo", "free_energy", "rhat", "ess_bulk", "log_posterior")


class BayesianClassifier(ClassifierMixin, BaseEstimator):
    """Base class: parameter and data checks, cost guard, ``fit``/``fit_iter`` with roll-back on failure,
    progress bar, labels, ``predict`` from ``predict_proba``."""

    #: methods that only handle two classes say so here; validation then points to multi-class options
    _binary_only = False
    #: BLAS threads while the engine runs (see fit_iter); None leaves the library default
    _blas_threads = 1
    #: the fewest training rows a class may have (methods that cope with fewer lower it)
    _min_per_class = 2
    #: False for a fit in one go (no steps to count: its bar read "0it [00:00, ?it/s]")
    _stepwise = True
    #: the parameter table (bsvm/params.py); every estimator overrides it with one entry per parameter
    _parameter_constraints: dict = {}
    #: how the method treats the scale of its inputs: "adaptive", "unit", "weights", "ard" or "standardizes"
    #: (bsvm.data.check_input_scale says what each means and when fit warns); see _input_scale_rule
    _input_scale = "adaptive"

    # -- to be provided by each method -------------------------------------------------------------------
    def _iterate(self, X: np.ndarray, y_index: np.ndarray) -> Iterator[tuple[int, dict, dict]]:
        raise NotImplementedError

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_param_rules(self) -> None:
        """Rules between parameters that the table cannot state (e.g. a sampler that needs more chains),
        checked right after the table, before the data: a method with such rules overrides this."""

    def _check_param_rules_for_data(self, X: np.ndarray, n_classes: int) -> None:
        """Rules that need the data's shape (e.g. given inducing inputs as wide as X), checked after
        the data checks and before the cost guard: a method with such rules overrides this."""

    # -- the shared contract --------------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._binary_only
        return tags

    def fit(self, X, y, progress=None):
        """Fit to ``X`` (n_samples, n_features) and labels ``y`` (any values: two classes for the binary
        estimators, SBSVM, SeegerARD and GibbsSVM; two or more for the others). Returns self.

        progress : None (default) shows a progress bar (tqdm: terminal or notebook) if the fit is still
            running after 2 seconds and the session is interactive (a terminal or a notebook, not a log
            file or a test run); True shows it at once, anywhere; False never.
        """
        bar = self._progress_bar(progress)
        if bar is None:
            for _ in self.fit_iter(X, y):
                pass
            return self
        # the fit's warnings are printed through the bar (cleared, the warning written, the bar redrawn):
        # printed over it, a ConvergenceWarning began on the bar's own line ("MSBPM: 119it [...]/work/...:
        # ConvergenceWarning: ...", a review); held until the bar closed, a CostWarning came after the fit
        # it was about, and none came at all when the fit raised (a review of that)
        shown = warnings.showwarning

        def through_bar(message, category, filename, lineno, file=None, line=None):
            with bar.external_write_mode():
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = through_bar
        try:
            for record in self.fit_iter(X, y):
                if bar.total is None and (total := self._planned_iterations()) is not None:
                    bar.total = total  # (known once the fit has resolved its defaults)
                _update_bar(bar, record)
            if bar.total is not None and bar.n != bar.total:
                # a fit that stopped by its own rule before its budget: the bar ends full, at the count
                # reached (SeegerARD's stood at "20/50, 40 %" after converging, a review)
                bar.total = bar.n
                bar.refresh()
        finally:
            warnings.showwarning = shown
            bar.close()
        return self

    def fit_iter(self, X, y) -> Iterator[Progress]:
        """Fit step by step, yielding a :class:`Progress` record every few iterations.

        The parameters, the data and the cost are checked when ``fit_iter`` is called, before the first
        record is asked for, so a bad parameter or unusable data raise here. The consumer may stop at any
        point; the estimator is then fitted with the state of the last record and predicts normally. If
        the fit fails instead (an exception at any iteration), the estimator is restored to what it was
        before: unfitted, or its previous fit.
        """
        validate_params(self)  # the table first: a bad parameter is named even if the data is bad too
        self._check_param_rules()
        # The data check sets classes_ etc.; run it on a shallow copy so a caller that never iterates
        # leaves this estimator untouched, and copy those attributes over when the fit starts.
        probe = copy.copy(self)
        X, y_index = check_fit_data(probe, X, y, binary_only=self._binary_only,
                                    min_per_class=self._min_per_class)
        data_attrs = {k: probe.__dict__.get(k, _MISSING) for k in _DATA_ATTRS}
        self._check_param_rules_for_data(X, len(probe.classes_))
        check_input_scale(probe, X, self._input_scale_rule())
        from .cost import check_cost
        check_cost(self, X.shape[0], X.shape[1], len(probe.classes_))
        return self._fit_steps(X, y_index, data_attrs)

    def _fit_steps(self, X, y_index, data_attrs) -> Iterator[Progress]:
        saved = self._fitted_state()
        try:
            for key, value in data_attrs.items():
                if value is _MISSING:
                    self.__dict__.pop(key, None)
                else:
                    setattr(self, key, value)
            self.history_ = []
            self.n_iter_ = 0
            compute = 0.0
            steps = self._iterate(X, y_index)
            while True:
                resumed = time.perf_counter()
                # Our engines do many small dense operations (m x m factorisations, minibatch products);
                # OpenBLAS's thread pool makes those up to 30x slower on a loaded 2-core machine, so the
                # engine runs with one BLAS thread (scoped to each chunk: the consumer's code is
                # unaffected).
                with _blas_limit(self._blas_threads):
                    try:
                        iteration, metrics, snapshot = next(steps)
                    except StopIteration:
                        return
                compute += time.perf_counter() - resumed
                record = Progress(int(iteration), compute, dict(metrics), dict(snapshot))
                self.n_iter_ = record.iteration
                self.fit_time_ = compute
                self.history_.append(record)
                yield record
        except GeneratorExit:
            raise  # the consumer stopped early: keep the state reached (the fit_iter contract)
        except _NUMERICAL as exc:
            self._restore_fitted_state(saved)
            raise NumericalError(_numerical_message(self, exc, X)) from exc
        except BaseException:
            self._restore_fitted_state(saved)
            raise

    def _input_scale_rule(self) -> str:
        """The input-scale rule for the current parameters (methods whose rule depends on a parameter
        override this)."""
        return self._input_scale

    def _changed_params(self, names) -> list[str]:
        """``name=value`` for each of ``names`` away from its default (read off ``__init__``'s signature,
        not restated): options a run ignores are named with these."""
        import inspect

        defaults = inspect.signature(type(self).__init__).parameters
        return [f"{k}={getattr(self, k)!r}" for k in names if getattr(self, k) != defaults[k].default]

    # -- roll-back -----------------------------------------------------------------------------------------
    def _fitted_state(self, deep=False) -> dict:
        """Everything but the constructor parameters (fitted attributes and private working state)."""
        params = set(self._get_param_names())
        state = {k: v for k, v in self.__dict__.items() if k not in params}
        return copy.deepcopy(state) if deep else state

    def _restore_fitted_state(self, state: dict) -> None:
        params = set(self._get_param_names())
        for key in [k for k in self.__dict__ if k not in params]:
            del self.__dict__[key]
        self.__dict__.update(state)

    @contextmanager
    def _rollback_on_error(self, deep=True):
        """For methods that update a fit in place (``partial_fit``): on any exception inside the block,
        restore the estimator as it was on entry. ``deep`` copies the state first (in-place updates of
        arrays would otherwise leak into the saved state)."""
        saved = self._fitted_state(deep=deep)
        try:
            yield
        except BaseException:
            self._restore_fitted_state(saved)
            raise

    # -- cost --------------------------------------------------------------------------------------------
    def estimate_cost(self, n_samples, n_features, n_classes=2):
        """Rough memory (bytes) and time (seconds) a ``fit`` with these settings needs for data of this
        size, and a hint of what to use instead when it is too much: a :class:`bsvm.cost.Cost`.
        See :mod:`bsvm.cost` for the models behind each method's estimate."""
        from .cost import estimate
        validate_params(self)
        self._check_param_rules()
        return estimate(self, int(n_samples), int(n_features), int(n_classes))

    # -- progress bar ----------------------------------------------------------------------------------------
    def _planned_iterations(self):
        """The number of iterations a full fit runs (for the progress bar's total), or None if unknown.
        Sampler budgets are burn-in + draws x thin; optimisers stop at ``max_iter`` at most."""
        p = self.get_params(deep=False)
        # the burn-in and thinning a fit resolved from their None defaults (``_resolved_run``, set when
        # the fit starts): with the defaults the bar had no total, a count only (a library user's review)
        resolved = getattr(self, "_resolved_run", None) or {}
        try:
            if "n_samples" in p and "thin" in p:
                burn = p.get("n_burnin", p.get("burn_in", 0))
                burn = resolved.get("burn") if burn is None else burn
                thin = resolved.get("thin") if p["thin"] is None else p["thin"]
                return int(burn) + int(p["n_samples"]) * int(thin)
            if "max_iter" in p:
                return int(p["max_iter"])
        except (TypeError, ValueError):
            pass
        return None

    def _progress_bar(self, progress):
        if not (progress is None or isinstance(progress, (bool, np.bool_))):
            raise ValueError(f"progress={progress!r}: use None (a bar in a terminal or notebook after 2 s), "
                             "True or False.")
        if progress is False or not self._stepwise or (progress is None and not _interactive()):
            return None
        from tqdm.auto import tqdm

        return tqdm(total=self._planned_iterations(), desc=type(self).__name__, unit="it", leave=False,
                    delay=0.0 if progress else 2.0, dynamic_ncols=True)

    # -- prediction ------------------------------------------------------------------------------------------
    def _encode_binary(self, y_index: np.ndarray) -> np.ndarray:
        """Labels as -1/+1, +1 meaning ``classes_[1]``."""
        return np.where(y_index == 1, 1.0, -1.0)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes); columns follow ``classes_``.

        Raises ``ValueError`` naming the cause if any probability is NaN or infinite."""
        X = check_predict_data(self, X)
        with _blas_limit(self._blas_threads):
            proba = self._predict_proba(X)
        check_finite_prediction(self, proba, X, "probabilities")
        return proba

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class NumericalError(ValueError):
    """An engine failed numerically (a factorisation, an overflow); the message names the likely cause."""


_NUMERICAL = (np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError, OverflowError)


def _numerical_message(estimator, exc: BaseException, X: np.ndarray) -> str:
    """Say what failed and what in the data most likely caused it (checked: magnitudes, column spread)."""
    from .data import column_scales

    name = type(estimator).__name__
    sd = column_scales(X) if X.size else np.zeros(0)
    live = sd[np.isfinite(sd) & (sd > 0)]
    top = float(np.max(np.abs(X))) if X.size else 0.0
    hints = []
    if top > 1e3 or (live.size and live.min() < 1e-3):
        spread = f" and column scales range from {live.min():.3g} to {live.max():.3g}" if live.size else ""
        hints.append(f"the features reach |x| = {top:.3g}{spread}")
    elif live.size and live.max() / live.min() > 1e3:
        hints.append(f"column scales differ by a factor of {live.max() / live.min():.3g}")
    if X.shape[0] <= X.shape[1] + 1:
        hints.append(f"there are only {X.shape[0]} rows for {X.shape[1]} features")
    cause = (f"likely cause: {'; '.join(hints)}. Standardise the features (sklearn.preprocessing."
             "StandardScaler) and use more rows than features" if hints else
             "the data looked ordinary (standardised scales, more rows than features): please report this "
             "as a bug with the data and settings")
    return f"{name} failed numerically ({type(exc).__name__}: {exc}); {cause}."


def _interactive() -> bool:
    """A terminal or a Jupyter kernel: where a progress bar is read rather than logged."""
    import sys

    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


def _finite(v) -> bool:
    return isinstance(v, (int, float, np.floating)) and bool(np.isfinite(v))


def _update_bar(bar, record: Progress) -> None:
    bar.update(max(0, record.iteration - bar.n))
    m = record.metrics
    if _finite(m.get("rhat_target")):
        # a sampler's stopping rule: the draws so far and where R-hat and ESS stand against the rule's
        # targets (a bare "rhat=1.01, ess_bulk=672.6" said neither the target nor the tail ESS)
        shown = {"draws": f"{m['draws']:.0f}"} if _finite(m.get("draws")) else {}
        if _finite(m.get("rhat")):
            # ("1.031 (<= 1.01)" read as if the value met the bound, a review)
            shown["R-hat"] = f"{m['rhat']:.3f} (target <= {m['rhat_target']:g})"
        ess = min(m.get("ess_bulk", np.nan), m.get("ess_tail", np.nan))
        if _finite(ess) and _finite(m.get("ess_target")):
            shown["ESS"] = f"{ess:.0f}/{m['ess_target']:.0f}"
    else:
        shown = {k: f"{m[k]:.4g}" for k in _BAR_METRICS if _finite(m.get(k))}
    if shown:
        bar.set_postfix(shown, refresh=False)


#: a fit predicts "one value everywhere" when every class's p(y|x) stays within this fraction of
#: min(its mean, 1 - its mean) on the training rows checked: relative, so that a rare class predicted at
#: 0.0001 to 0.002 (13 positives in 20,000 rows, a test AUC of 0.73) is not called flat (a review)
FLAT_SPREAD = 0.05
#: rows checked (evenly spaced)
FLAT_ROWS = 2000


def warn_if_flat(estimator, X: np.ndarray, hint: str) -> None:
    """A ConvergenceWarning when the fitted p(y|x) is the same on the training rows ``X`` (within
    :data:`FLAT_SPREAD`, on at most :data:`FLAT_ROWS` evenly spaced ones): such a fit said it converged
    and warned of nothing (SBSVM with lengthscale=1e6: 0.500 everywhere; SeegerARD on 1 % positives: every
    relevance shrank to 1e-4 and p was 0.0079-0.0080 on every row; library reviews). ``hint``: the
    likely cause, in the estimator's terms."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from ._userwarn import warn_user

    rows = X[:: -(-X.shape[0] // FLAT_ROWS)]
    if np.all(rows == rows[:1]):
        return  # every feature constant: check_input_scale said so before the fit (one warning, a review)
    with warnings.catch_warnings():
        # X is the fit's validated array: a fit on a DataFrame must not warn "X does not have valid
        # feature names" here (the user passed names; under warnings-as-errors the fit failed, a review)
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        P = estimator.predict_proba(rows)
    mean = P.mean(axis=0)
    spread = np.max(np.abs(P - mean), axis=0)
    if np.any(spread >= FLAT_SPREAD * np.minimum(mean, 1.0 - mean)):
        return
    where = "every training row" if len(rows) == X.shape[0] else f"{len(rows):,} evenly spaced training rows"
    said = ", ".join(f"{class_name(c)} {m:.3g}" for c, m in zip(estimator.classes_, mean))
    warn_user(f"{type(estimator).__name__} predicts nearly the same probabilities on {where} (mean p: "
              f"{said}; no row's differs by {FLAT_SPREAD:.0%} of it or more): the fit found no pattern. "
              f"Likely cause: {hint}.", ConvergenceWarning)


def check_finite_prediction(estimator, values: np.ndarray, X: np.ndarray, what: str) -> None:
    """Raise ``ValueError`` if ``values`` (a prediction for ``X``) has NaN or inf, naming the likely
    cause: fitted arrays that are not finite (a diverged fit), or inputs too large for the model."""
    values = np.asarray(values)
    if values.dtype.kind not in "fc" or np.all(np.isfinite(values)):
        return
    rows = values.reshape(len(values), -1) if values.ndim else values.reshape(1, 1)
    n_bad = int(np.sum(~np.all(np.isfinite(rows), axis=1)))
    name = type(estimator).__name__
    bad_attrs = []
    for key, value in vars(estimator).items():
        if key.endswith("_") and not key.startswith("_") and isinstance(value, np.ndarray) \
                and value.dtype.kind == "f" and value.size and not np.all(np.isfinite(value)):
            bad_attrs.append(key)
    if bad_attrs:
        cause = (f"the fitted state has non-finite values in {', '.join(bad_attrs)}: the fit diverged "
                 "(e.g. a step size or learning rate too large, or features on extreme scales); refit with "
                 "smaller steps or standardised features")
    else:
        big = float(np.max(np.abs(X))) if X.size else 0.0
        cause = (f"the inputs overflow the model (largest |x| = {big:.3g}); standardise the features "
                 "(e.g. sklearn.preprocessing.StandardScaler) to the scale the model was fitted on")
    raise ValueError(f"{name} produced non-finite {what} for {n_bad} of {len(rows)} rows: {cause}.")


def log_odds_scores(proba: np.ndarray) -> np.ndarray:
    """``decision_function`` scores consistent with ``predict_proba`` (and so with ``predict``): binary,
    the log-odds log(p1 / p0), positive meaning ``classes_[1]``; multi-class, the log probabilities (n, K)."""
    proba = np.clip(proba, 1e-300, None)
    return np.log(proba[:, 1] / proba[:, 0]) if proba.shape[1] == 2 else np.log(proba)


def binary_proba(p1: np.ndarray) -> np.ndarray:
    """Stack p(y = classes_[1]) into the two-column ``predict_proba`` layout."""
    p1 = np.clip(np.asarray(p1, dtype=float), 0.0, 1.0)
    return np.column_stack([1.0 - p1, p1])
