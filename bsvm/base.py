"""The estimator contract every bsvm method follows, and the live-progress record.

A method supplies ``_iterate(X, y_index)``, a generator that advances its inference engine and, every
few iterations, stores the state reached as fitted attributes and yields ``(iteration, metrics,
snapshot)``. ``fit_iter`` wraps it into :class:`Progress` records (with compute time that excludes the
time a consumer spends between records, e.g. a paused dashboard) and keeps them in ``history_``;
``fit`` simply exhausts ``fit_iter``. So the dashboard's live view and ``fit`` run the very same code,
and breaking out of ``fit_iter`` leaves an estimator fitted with the last state it reported.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from threadpoolctl import ThreadpoolController

from .data import check_fit_data, check_predict_data

_CONTROLLER = None


def _blas_limit(threads):
    """A context limiting BLAS threads. The controller (which inspects the loaded libraries, several ms)
    is built once; entering its ``limit`` afterwards is cheap enough to do around every chunk."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads, user_api="blas")


@dataclass(frozen=True)
class Progress:
    """One live-progress record.

    iteration: iterations done so far (the method's own unit: SVI steps, sweeps, leapfrog trajectories).
    elapsed:   seconds of computation so far (time spent by the consumer between records excluded).
    metrics:   scalar diagnostics, e.g. ``elbo``, ``lengthscale``, ``step_size``, ``acceptance``.
    snapshot:  small arrays for trace plots (a few coordinates, per-chain values).
    """

    iteration: int
    elapsed: float
    metrics: Mapping[str, float] = field(default_factory=dict)
    snapshot: Mapping[str, np.ndarray] = field(default_factory=dict)


def history_metric(history, name: str) -> np.ndarray:
    """The series of one scalar metric over a list of :class:`Progress` records (NaN where absent)."""
    return np.array([rec.metrics.get(name, np.nan) for rec in history], dtype=float)


class BayesianClassifier(ClassifierMixin, BaseEstimator):
    """Base class: validation, ``fit``/``fit_iter``, labels, ``predict`` from ``predict_proba``."""

    #: methods that only handle two classes say so here; validation then points to multi-class options
    _binary_only = False
    #: fewest training rows per class that ``fit`` accepts (MSBPM and PlattSVM accept 1, with a warning)
    _min_per_class = 2
    #: BLAS threads while the engine runs (see fit_iter); None leaves the library default
    _blas_threads = 1

    # -- to be provided by each method -------------------------------------------------------------------
    def _iterate(self, X: np.ndarray, y_index: np.ndarray) -> Iterator[tuple[int, dict, dict]]:
        raise NotImplementedError

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- the shared contract --------------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._binary_only
        return tags

    def fit(self, X, y):
        """Fit to ``X`` (n_samples, n_features) and labels ``y`` (any two or more values). Returns self."""
        for _ in self.fit_iter(X, y):
            pass
        return self

    def fit_iter(self, X, y) -> Iterator[Progress]:
        """Fit step by step, yielding a :class:`Progress` record every few iterations.

        The consumer may stop at any point; the estimator is then fitted with the state of the last
        record and predicts normally.
        """
        X, y_index = check_fit_data(self, X, y, binary_only=self._binary_only,
                                    min_per_class=self._min_per_class)
        self.history_ = []
        self.n_iter_ = 0
        compute = 0.0
        steps = self._iterate(X, y_index)
        while True:
            resumed = time.perf_counter()
            # Our engines do many small dense operations (m x m factorisations, minibatch products);
            # OpenBLAS's thread pool makes those up to 30x slower on a loaded 2-core machine, so the
            # engine runs with one BLAS thread (scoped to each chunk: the consumer's code is unaffected).
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

    def _encode_binary(self, y_index: np.ndarray) -> np.ndarray:
        """Labels as -1/+1, +1 meaning ``classes_[1]``."""
        return np.where(y_index == 1, 1.0, -1.0)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes); columns follow ``classes_``."""
        X = check_predict_data(self, X)
        with _blas_limit(self._blas_threads):
            return self._predict_proba(X)

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def binary_proba(p1: np.ndarray) -> np.ndarray:
    """Stack p(y = classes_[1]) into the two-column ``predict_proba`` layout."""
    p1 = np.clip(np.asarray(p1, dtype=float), 0.0, 1.0)
    return np.column_stack([1.0 - p1, p1])
