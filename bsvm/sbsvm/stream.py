"""Out-of-core S-BSVM: ``SBSVM.partial_fit`` over a stream of chunks, and the minibatch ``fit`` of a
Dask array, one block in memory at a time.

The SVI update (engine docstring, docs/sbsvm.md sec. 4) is a minibatch step already: a chunk is cut into
minibatches of ``batch_size`` rows (a random permutation of the chunk, so every row is used once) and each
takes one natural-gradient step. The learning-rate schedule, the Adam state of the kernel
hyperparameters and the step count carry over from chunk to chunk, so a stream of chunks is one SVI run.

**n in a stream.** The targets scale a minibatch's sums by s = n / |S|, where n is the size of the data
set the posterior is about. ``stream_size`` (an ``SBSVM`` parameter) gives n when it is known (e.g. the
rows of a Parquet file, or of the training set over which several epochs are streamed). When it is
None, n is the running count of rows passed to ``partial_fit`` so far: after k rows the posterior is
the one for those k rows, which is right for a single pass over a stream whose end is unknown. Over
several epochs of a fixed set, a running count would count every row once per epoch and make the
posterior too narrow: set ``stream_size`` then.

**What the first rows fix.** The first call fixes ``classes`` (required: a chunk may hold one class
only, which is normal in a stream) and the number of features. The first ``warmup_rows`` rows (500, or
``stream_size`` when smaller) fix the per-feature standardisation (mean and standard deviation of their
columns, so features whose scales differ by 1e6 get one length scale that fits them all), the initial
kernel (the estimator's rule, on the standardised rows) and the inducing points (k-means on them; as
many as the estimator's rule asks for at n = ``stream_size``, or at n = max(rows, 500) when it is None:
"auto" gives 100). Until the stream has that many rows, each call starts again from every row so far
(kept in memory) with the same seed, so a stream whose first chunks are small ends as one whose first
chunk held those rows. Rows with fewer distinct values than the rule asks for cap the inducing points
and warn.
When the estimator standardises its inputs itself (``_fit_scaling``/``_scaled``), its rule is applied
to the first rows; otherwise the standardisation is carried by the kernel (:class:`Standardized`), so
prediction needs no extra step and the inducing points stay in the data's units.

**Hyperparameters** (with ``optimize_hyperparameters``) take the estimator's steps until
``STREAM_HYPER_STEPS`` = 100 hyperparameter steps have been taken (checked at the start of each chunk),
then stay fixed, as ``fit`` learns them on a subset and then freezes them: the rest of a long stream
pays for the natural-gradient steps alone, and noisy minibatch gradients cannot drift the kernel.
100 Adam steps move a log-hyperparameter by up to 100 x ``hyper_lr``; on 300k ringnorm rows the test
error was the same as when stepping them on every chunk, for 15-35 % less CPU.

**After fit.** As in scikit-learn, ``partial_fit`` on an estimator fitted by ``fit`` goes on from that
fit (its classes, kernel, inducing points and q(u); n counts the fit's rows too).

**Failure leaves the model as it was.** ``partial_fit`` works on copies and restores the estimator's
attributes on any exception (bad input, a singular matrix, a keyboard interrupt).

This module imports nothing from Dask unless the input is a Dask collection.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import NamedTuple

import numpy as np

from .._userwarn import warn_user
from ..base import _NUMERICAL, NumericalError, Progress, _blas_limit, _numerical_message
from ..data import MULTICLASS_HINT, _reject_non_numeric, _reject_nonfinite, missing_labels_message
from ..kernels import Kernel
from ..params import validate_params
from . import elbo as E
from .engine import SVIEngine, SVIState
from .geometry import linear_geometry, sparse_geometry
from .schedules import adam_init


# ----------------------------------------------------------------------------- Dask detection
def is_dask_collection(obj) -> bool:
    """True for a Dask array/dataframe, without importing Dask: if ``dask`` is not imported yet, ``obj``
    cannot be one."""
    if "dask" not in sys.modules:
        return False
    from dask.base import is_dask_collection as _is
    return bool(_is(obj))


# ----------------------------------------------------------------------------- standardising kernel
@dataclasses.dataclass(frozen=True)
class Standardized(Kernel):
    """k((x - shift) / scale, (x' - shift) / scale) for an inner kernel k: per-feature standardisation
    as part of the kernel, so the inducing points, ``predict`` and the hyperparameter gradients all work
    in the data's own units. ``theta`` is the inner kernel's (shift and scale are fixed)."""

    inner: Kernel = None
    shift: np.ndarray = None
    scale: np.ndarray = None

    def _t(self, X):
        return (X - self.shift) / self.scale

    @property
    def theta(self):
        return self.inner.theta

    @property
    def finite_rank(self) -> bool:
        return bool(self.inner.finite_rank)

    def with_theta(self, theta):
        return dataclasses.replace(self, inner=self.inner.with_theta(theta))

    def __call__(self, X, Y=None):
        return self.inner(self._t(X), None if Y is None else self._t(Y))

    def diag(self, X):
        return self.inner.diag(self._t(X))

    def grad_contract(self, X, Y, G, K=None):
        return self.inner.grad_contract(self._t(X), None if Y is None else self._t(Y), G, K=K)

    def grad_diag_contract(self, X, g):
        return self.inner.grad_diag_contract(self._t(X), g)

    def describe(self):
        return self.inner.describe()

    def __getattr__(self, name):
        # ``kernel_.lengthscale`` and friends read through to the inner kernel
        if name.startswith("__") or name in ("inner", "shift", "scale"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def standardizer(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations (1 where a column is constant)."""
    shift = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[~(scale > 0)] = 1.0
    return shift, scale


# ----------------------------------------------------------------------------- one chunk of SVI steps
class ChunkEngine(SVIEngine):
    """``SVIEngine`` over one chunk of a larger data set: the minibatches walk a random permutation of
    the chunk (each row used once per pass), and the minibatch scale s = n / |S| uses the data set's n
    (``n_total``), not the chunk's size."""

    def __init__(self, X, y, geom, config, n_total: float, order: np.ndarray):
        super().__init__(X, y, geom, dataclasses.replace(config, elbo_batch_size=None), rng=None)
        self.n = float(n_total)
        self.full_batch = False
        self._order, self._pos = order, 0

    def _batch(self, rng):
        if self._pos >= self._order.size:
            self._pos = 0
        idx = self._order[self._pos:self._pos + self.config.batch_size]
        self._pos += idx.size
        return idx

    def n_steps(self) -> int:
        """Steps for one pass over the chunk."""
        return -(-self._order.size // self.config.batch_size)


#: hyperparameter steps a stream takes before it freezes the kernel (module docstring)
STREAM_HYPER_STEPS = 100


def hyper_steps(state: SVIState, est) -> int:
    """Hyperparameter steps taken so far: Adam's count (kernel), or steps / hyper_every (linear)."""
    if state.adam is not None:
        return int(state.adam.t)
    return int(state.t) // max(int(getattr(est, "hyper_every", 1)), 1)


class StreamState(NamedTuple):
    """What ``partial_fit`` carries from call to call (stored as ``SBSVM._stream_state``)."""

    svi: SVIState
    rng_state: dict        # bit-generator state: a fresh Generator is rebuilt from it on every call
    n_seen: int            # rows passed to partial_fit so far
    n_chunks: int
    kernel0: Kernel | None = None   # the initial kernel (a hyperparameter prior may be centred on it)
    # the rows so far (X as given, y in -1/+1) while the stream is warming up (warmup_rows), else None
    buffer: tuple | None = None


def own_scaling(est) -> bool:
    """Whether the estimator standardises its inputs itself (``_fit_scaling``/``_scaled``); otherwise the
    stream's standardisation is carried by a :class:`Standardized` kernel."""
    return hasattr(est, "_fit_scaling") and hasattr(est, "_scaled")


def engine_input(est, X):
    """X as the engine sees it (standardised by the estimator's own rule, if it has one)."""
    return est._scaled(X) if own_scaling(est) else X


def stream_config(est, kernel0):
    """The estimator's minibatch configuration (n unbounded: never a full batch), with the kernel it
    centres a hyperparameter prior on when its ``_config`` takes one."""
    import inspect

    if kernel0 is not None and "kernel" in inspect.signature(est._config).parameters:
        return est._config(np.inf, kernel=kernel0)
    return est._config(np.inf)


def run_chunk(est, X, y, state: SVIState, rng, n_total: float, kernel0=None, learn_hyper=True):
    """One pass of SVI steps over a chunk (y in -1/+1). Returns the new state and the chunk's ELBO
    estimate: the mean of the minibatch data-term estimates (each evaluated before its step, scaled to
    n) minus the KL at the end."""
    config = stream_config(est, kernel0)
    if not learn_hyper:
        config = dataclasses.replace(config, optimize_hyper=False)
    engine = ChunkEngine(X, y, state.geom, config, n_total, rng.permutation(X.shape[0]))
    data_terms, info = [], None
    for _ in range(engine.n_steps()):
        state, info = engine.step(state, rng)
        data_terms.append(info.batch_data_term)
    post = E.moments(state.eta1, state.P)
    elbo = float(np.mean(data_terms)) - E.kl_to_standard_normal(post)
    return state, elbo, (np.nan if info is None else info.rho)


# ----------------------------------------------------------------------------- validation
def check_partial_fit_params(est):
    validate_params(est)  # the parameter table first (bsvm/params.py), before the chunk is looked at
    est._check_params(1)
    if est.variant == "batch":
        raise ValueError("variant='batch' puts an inducing point at every training row, so it cannot take "
                         "its data in chunks: use variant='svi' (or 'linear') with partial_fit.")


def check_classes(est, classes) -> np.ndarray:
    name = type(est).__name__
    if classes is None:
        raise ValueError(
            f"The first call to {name}.partial_fit needs classes=...: every label the stream can hold, "
            "e.g. partial_fit(X_chunk, y_chunk, classes=[0, 1]) or classes=np.unique(y_all). A single "
            "chunk may hold one class only, so the labels cannot be learnt from it.")
    arr = np.asarray(classes)
    if arr.ndim != 1:
        raise ValueError(f"classes must be a 1-D list of labels, got an array of shape {arr.shape}.")
    try:
        uniq = np.unique(arr)
    except TypeError:
        raise ValueError(f"classes={arr.tolist()!r} mixes strings and numbers: give labels of one kind, "
                         "as they appear in y.") from None
    if uniq.size != arr.size:
        raise ValueError(f"classes={arr.tolist()!r} lists a label twice: list each label once.")
    if uniq.size != 2:
        hint = MULTICLASS_HINT if uniq.size > 2 else "give both labels, e.g. classes=[0, 1]"
        raise ValueError(f"classes={arr.tolist()!r}: {name} is a binary classifier and needs exactly 2 "
                         f"classes; {hint}.")
    return uniq


def check_chunk(est, X, y, first: bool):
    """Validate one chunk: numeric, finite, consistent width; y 1-D with one label per row and every
    label in ``classes_``. Returns (X float64, y in -1/+1). Sets ``n_features_in_`` on the first call
    (partial_fit restores it if anything fails later)."""
    from sklearn.utils.validation import column_or_1d, validate_data

    if y is None:
        raise ValueError(f"{type(est).__name__}.partial_fit requires y: pass the labels of the chunk.")
    _reject_non_numeric(X)
    X = validate_data(est, X, reset=first, ensure_all_finite=False, dtype=np.float64, order="C",
                      ensure_min_samples=1)
    _reject_nonfinite(X)
    y = column_or_1d(y, warn=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels: pass one label per row.")
    classes = est.classes_
    try:
        known = np.isin(y, classes)
    except TypeError:
        known = np.array([v in set(classes.tolist()) for v in y.tolist()])
    if not np.all(known):
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):  # missing labels, not a new class
            raise ValueError(missing_labels_message(y))
        bad = np.unique(y[~known].astype(object)).tolist()
        if first:  # (the message below blamed "the first partial_fit call" on that very call)
            raise ValueError(f"y holds label(s) {bad[:5]!r} that are not in classes={classes.tolist()!r}: "
                             "pass the labels y uses in classes (all the labels of the stream).")
        raise ValueError(
            f"y holds label(s) {bad[:5]!r} that are not in classes={classes.tolist()!r} fixed by the first "
            "partial_fit call: map them to one of those classes, or start again (a new estimator, or "
            "fit()) with classes that include them.")
    return X, np.where(y == classes[1], 1.0, -1.0)


# ----------------------------------------------------------------------------- partial_fit
#: with no stream_size, the first rows take the inducing-point rule ("auto", or a fraction of n) at no
#: fewer rows than this ("auto"'s 100 points at 20 %), and a stream gathers this many before they stay
RULE_ROWS = 500


def warmup_rows(est) -> int:
    """Rows a stream gathers before its standardisation, initial kernel and inducing points stay fixed:
    RULE_ROWS, or ``stream_size`` when smaller. Until then each call starts again from the estimator's
    rules on every row so far (at most this many plus the last chunk, kept in memory): a first chunk of
    5 rows standardised the stream and placed its inducing points for good, and ringnorm streamed in
    chunks of 500 after it ended at 16 % test error against 1.4 % (twonorm 11 % against 2.1 %)."""
    return min(RULE_ROWS, int(est.stream_size)) if est.stream_size else RULE_ROWS


def first_state(est, X, y, rng, warn_cap: bool = True):
    """Standardisation, kernel and inducing points from the rows so far (module docstring). Returns the
    initial SVI state and the initial kernel (None for the linear variant). ``warn_cap``: warn when the
    rows cap the inducing points (not while the stream warms up: more rows are coming)."""
    kernel0 = None
    if warn_cap and np.unique(y).size < 2:
        # a stream sorted by label: its first rows, one class, placed the inducing points and the scaling
        # for good (0.29 test error against 0.15 shuffled, 10k rows in chunks of 1,000; a review)
        warn_user(f"The stream's first {X.shape[0]} rows, which fix its standardisation, initial kernel and "
                  "inducing points for the whole stream, hold one class only: the model will fit the other "
                  "class poorly. Shuffle the rows before streaming them (chunks in random order), or fit "
                  "on a first chunk that holds both classes.", UserWarning)
    if own_scaling(est):
        est._fit_scaling(X)  # the estimator's own rule, on the rows so far
    if est.variant == "linear":
        geom = linear_geometry(np.full(X.shape[1] + 1, np.sqrt(float(est.prior_variance))))
    else:
        # the inducing-point rule at the stream's n: stream_size, or at least RULE_ROWS (a stream is
        # longer than its first chunk: a first chunk of 3 rows gave a model of 3 inducing points)
        n_rule = int(est.stream_size) if est.stream_size else max(X.shape[0], RULE_ROWS)
        if own_scaling(est):
            Xs = est._scaled(X)
            kernel0 = est._initial_kernel(Xs, rng)
            Z = est._select_inducing(Xs, rng, n_rule)
        else:
            shift, scale = standardizer(X)
            Xs = (X - shift) / scale
            inner = est._initial_kernel(Xs, rng)
            kernel0 = inner if isinstance(inner, Standardized) else Standardized(inner, shift, scale)
            Z = est._select_inducing(Xs, rng, n_rule) * scale + shift
        geom = sparse_geometry(kernel0, Z)
        target = est._inducing_target(n_rule) if isinstance(est.inducing, str) else len(Z)
        if len(Z) < target and warn_cap:
            rule = f"n_inducing={est.n_inducing!r}"
            if isinstance(est.n_inducing, str) or isinstance(est.n_inducing, float):  # a rule of n
                rule += (f" at n = {n_rule:,} rows ("
                         + ("stream_size" if est.stream_size else f"at least {RULE_ROWS} in a stream") + ")")
            distinct = "" if len(Z) >= X.shape[0] else f" ({len(Z)} distinct)"
            warn_user(f"The stream's first {X.shape[0]} rows{distinct} fix its inducing points: this "
                      f"stream's model has {len(Z)} of the {target} that {rule} asks for, for the whole "
                      f"stream. Pass at least {target} distinct rows in the first chunks (the first "
                      f"{warmup_rows(est)} rows place them; a few times {target} place them better), or "
                      "give inducing= an array of points.", UserWarning)
    # (the adaptive learning rate's init draws a few minibatches of this chunk; n is only a scale there)
    engine = ChunkEngine(engine_input(est, X), y, geom, stream_config(est, kernel0),
                         float(est.stream_size or X.shape[0]), rng.permutation(X.shape[0]))
    return engine.init(rng), kernel0


def state_from_fit(est) -> StreamState:
    """Continue a ``fit``: its q(u), geometry and step count; n is the fit's row count until more rows
    arrive (or ``stream_size``); a fresh Adam state and random stream from ``random_state``."""
    post = est.posterior_
    P = post.Lp @ post.Lp.T
    geom = est.geometry_
    # the fit learned the kernel: count its hyperparameter budget as spent, so the kernel stays as fitted
    adam = adam_init(geom.kernel.theta.size)._replace(t=STREAM_HYPER_STEPS) if geom.kind == "sparse" else None
    svi = SVIState(int(getattr(est, "n_iter_", 0)), P @ post.m, P, geom, None, adam)
    rng = np.random.default_rng(est.random_state)
    kernel0 = geom.kernel if geom.kind == "sparse" else None  # the fit's kernel centres any prior now
    config = stream_config(est, kernel0)
    if config.schedule == "adaptive":  # the adaptive rate needs its running averages
        engine = ChunkEngine(np.zeros((1, est.n_features_in_)), np.ones(1), geom, config, 1.0,
                             np.zeros(1, dtype=np.intp))
        svi = svi._replace(rate=engine.init(rng).rate)
    return StreamState(svi, rng.bit_generator.state, int(getattr(est, "_n_fit_rows", 0)), 0, kernel0)


def _say_stack_dropped(est) -> None:
    """A stream goes on from one fit: after fit(kernel="auto") with several fits in its stack, the
    largest-weight one alone (the others would not see the new rows). Ten rows after a breast-cancer
    stack of rbf.fixed 0.61 / linear.fixed 0.39 moved p by up to 0.23, silently, and ``defaults_``
    still listed the weights (a review): say so, and record it in ``defaults_``."""
    comps = getattr(est, "components_", None) or []
    if len(comps) < 2:
        return
    (top, w), rest = comps[0][:2], comps[1:]
    others = ", ".join(f"{c[0]} {c[1]:.2f}" for c in rest)
    warn_user(f"SBSVM.partial_fit after fit(kernel='auto') goes on from the stack's largest-weight fit, "
              f"{top} (weight {w:.2f}), alone: the others ({others}) are dropped, so predictions change "
              "by more than the new rows explain. To keep a stack, fit again on all the rows.",
              UserWarning)
    d = dict(getattr(est, "defaults_", {}) or {})
    for k in [k for k in d if k.startswith("weight.")]:
        d.pop(k)
    d["partial_fit"] = f"goes on from {top} alone (its stack weight was {w:.2f})"
    est.defaults_ = d


def partial_fit(est, X, y, classes=None):
    """``SBSVM.partial_fit``: see the module docstring. Returns ``est``."""
    validate_params(est)  # the parameter table first, before the data
    # deep=False: every attribute is rebound, never mutated in place, so a shallow copy restores the model
    with est._rollback_on_error(deep=False):
        try:
            _partial_fit(est, X, y, classes)
        except _NUMERICAL as exc:  # a factorisation or overflow: name the likely cause, as fit does
            try:
                Xa = np.asarray(X, dtype=np.float64)
            except (TypeError, ValueError):
                Xa = np.zeros((0, 1))
            raise NumericalError(_numerical_message(est, exc, Xa)) from exc
    return est


def _partial_fit(est, X, y, classes):
    started = time.perf_counter()
    if is_dask_collection(X) or is_dask_collection(y):
        raise TypeError("partial_fit takes in-memory chunks (NumPy arrays or DataFrames); for a Dask array "
                        "call fit(X, y), which streams its blocks.")
    check_partial_fit_params(est)
    stream = getattr(est, "_stream_state", None)
    if stream is None and hasattr(est, "posterior_"):
        stream = state_from_fit(est)  # scikit-learn's convention: partial_fit after fit goes on from it
        _say_stack_dropped(est)
    first = stream is None
    if first:
        est.classes_ = check_classes(est, classes)
    elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), est.classes_):
        raise ValueError(f"classes={np.asarray(classes).tolist()!r} differs from classes="
                         f"{est.classes_.tolist()!r} given on the first partial_fit call: pass the same "
                         "classes (or none) on later calls.")
    X, y = check_chunk(est, X, y, first)
    # a stream is one fit that goes on: its records announce no further fits (after fit(kernel="auto")
    # they still said 5 of 5 planned, and a bar built on that sat at its end)
    est._stages_planned = 1
    warming = first or stream.buffer is not None
    buffer = None
    with _blas_limit(est._blas_threads):
        if warming:
            # start again from every row so far (warmup_rows): the same seed, the same rules as fit's
            history, spent = ([], 0.0) if first else (est.history_, est.fit_time_)
            n_chunks = 0 if first else stream.n_chunks
            if not first:
                X, y = np.vstack([stream.buffer[0], X]), np.concatenate([stream.buffer[1], y])
            warmed = X.shape[0] >= warmup_rows(est)
            rng = np.random.default_rng(est.random_state)
            svi, kernel0 = first_state(est, X, y, rng, warn_cap=warmed)
            n_seen = 0
            # (a copy: validate_data hands back the caller's own array, which a caller that refills one
            # array for every chunk overwrites: the first chunk was lost from the buffer, a review)
            buffer = None if warmed else (np.array(X, copy=True), y)
        else:
            rng = np.random.default_rng()
            rng.bit_generator.state = stream.rng_state
            svi, n_seen, n_chunks, kernel0 = stream.svi, stream.n_seen, stream.n_chunks, stream.kernel0
            history, spent = est.history_, est.fit_time_
        n_seen += X.shape[0]
        n_total = float(est.stream_size) if est.stream_size is not None else float(n_seen)
        svi, elbo, rho = run_chunk(est, engine_input(est, X), y, svi, rng, n_total, kernel0,
                                   learn_hyper=hyper_steps(svi, est) < STREAM_HYPER_STEPS)
        if not np.isfinite(elbo):
            raise FloatingPointError("The ELBO became non-finite on this chunk; the model is left as it "
                                     "was. Standardise the features or lower learning_rate.")
        est._store(svi, elbo)
        # a stream goes on from one fit (after a kernel="auto" fit, the stack's largest-weight fit, the
        # one state_from_fit takes): the other fits of a stack would not see the new rows
        est.components_ = None
    spent += time.perf_counter() - started
    metrics = {**est._metrics(svi, elbo, rho), "rows_seen": float(n_seen), "n": n_total}
    est.history_ = [*history, Progress(int(svi.t), spent, metrics, est._snapshot())]
    est.n_iter_, est.fit_time_ = int(svi.t), spent
    est._stream_state = StreamState(svi, rng.bit_generator.state, n_seen, n_chunks + 1, kernel0, buffer)


def elbo_of(est, X, y, n: float | None = None, chunk: int = 20000) -> float:
    """The closed-form ELBO (optimal alpha) of a fitted SBSVM's q(u) on rows (X, y) (labels as given to
    fit), with the data sum scaled to ``n`` rows (default: len(X)). For comparing fits on the same data."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est)
    X = engine_input(est, np.asarray(X, dtype=float))
    yy = np.where(np.asarray(y) == est.classes_[1], 1.0, -1.0)
    total = 0.0
    from .geometry import features
    for start in range(0, X.shape[0], chunk):
        phi, t, _ = features(est.geometry_, X[start:start + chunk])
        a, c = E.marginals(phi, est.posterior_)
        total += float(np.sum(E.data_terms(yy[start:start + chunk], a, c, t)))
    scale = 1.0 if n is None else n / X.shape[0]
    return scale * total - E.kl_to_standard_normal(est.posterior_)
