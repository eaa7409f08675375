"""Fits and other long work in background threads, apart from drawing (no Streamlit here).

A page never computes a fit itself. It asks the session's :class:`Registry` for a :class:`Run` (a fit:
an estimator's ``fit_iter`` consumed by a worker thread) or a :class:`Job` (any callable taking a
:class:`Token`, for CSV loading, Platt refits, the Compare and Calibration pages), and redraws from what
the worker has published so far. The page's controls only set flags and return at once; the worker
checks them between two progress records, so Pause/Stop/Reset act as soon as the record being computed
is done, and the page shows the new status immediately.

Here the worker is a thread. The Train page's fits use :class:`dashboard.procrun.ProcessRun`, the same
interface with the fit in a child process: a thread shares the GIL with the page's redraws, and a
watched Gibbs run took 17.7 s inside the server against 3.2 s for ``fit()``. Threads remain for the
jobs (CSV parsing, Compare, Calibration, the playground's refit), whose results the page needs whole.
A job whose single step cannot be interrupted (one ``SVC.fit`` on many rows) may run in a child process
instead (``process=True``), which Cancel terminates.

Consistency: the generator writes the estimator's fitted attributes just before it yields. After each
record the worker takes a shallow copy (:attr:`Run.view`): a page predicting with the view never sees an
estimator half-way through an update. The estimator itself is the run's result (``history_`` and the
state of the last record, as the base-class contract promises).

Errors never escape: a ValueError's text is what the user should read; other exceptions are kept as
``"TypeName: message"``.
"""

from __future__ import annotations

import copy
import itertools
import multiprocessing
import os
import threading
import time
import weakref
from dataclasses import dataclass, field

IDLE, RUNNING, PAUSED, DONE, STOPPED, FAILED, CANCELLED = (
    "idle", "running", "paused", "done", "stopped", "failed", "cancelled")
#: statuses after which a run can resume (Continue or Step)
RESUMABLE = (IDLE, PAUSED, STOPPED)
FINISHED = (DONE, FAILED, CANCELLED)

#: The Train page's redraw period (its fragment's ``run_every``) and the live map's grid size. The
#: dashboard benchmark uses the same numbers.
REDRAW_SECONDS = 0.2
MAP_GRID = 45

#: A run in the dashboard keeps at most about this many progress records: past 2 x MAX_RECORDS the
#: older ones are thinned evenly to MAX_RECORDS (the first and the newest always kept). An endless
#: S-BSVM run makes ~50 records a second, ~1 KB each; the live figures draw 600 points per curve anyway.
#: ``fit()`` outside the dashboard keeps every record.
MAX_RECORDS = 5000

_ids = itertools.count(1)
_TRACE = os.environ.get("BSVM_DASH_TRACE")


def trace(event: str, **fields) -> None:
    """Append a timestamped event to the file named by the environment variable ``BSVM_DASH_TRACE``
    (unset: nothing happens): set it for the server to see where a watched run's time goes (click,
    child start, first records, end, fragment runs)."""
    if _TRACE:
        with open(_TRACE, "a") as f:
            f.write(" ".join([f"{time.time():.3f}", event, *(f"{k}={v}" for k, v in fields.items())]) + "\n")


def initial_record(rec, count: int) -> bool:
    """A run's first record at iteration 0 (S-BSVM reports its starting state): a Step does not count
    it, so the first Step moves the fit (it showed "iteration 0" and looked like nothing happened)."""
    return count == 1 and getattr(rec, "iteration", None) == 0


def _thin_history(estimator) -> None:
    """Bound a long run's ``history_`` (called by the worker between records, when nothing else
    appends). fit_iter appends to whatever list ``history_`` is, so replacing it is safe."""
    h = getattr(estimator, "history_", None)
    if h is None or len(h) <= 2 * MAX_RECORDS:
        return
    keep = sorted(set(int(round(i * (len(h) - 2) / (MAX_RECORDS - 1))) for i in range(MAX_RECORDS)))
    estimator.history_ = [h[i] for i in keep] + [h[-1]]


def _message(exc: BaseException) -> str:
    if isinstance(exc, ValueError):  # bad settings or data: the message says what to do
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


class _Worker:
    """What Run and Job share: a status and the worker thread that advances it."""

    status: str
    _thread: threading.Thread | None

    @property
    def busy(self) -> bool:
        """A worker thread is alive (computing a record, or about to stop after it)."""
        t = self._thread
        return t is not None and t.is_alive()

    @property
    def active(self) -> bool:
        return self.status not in FINISHED


class Run(_Worker):
    """One fit: ``estimator.fit_iter(X, y)`` consumed by a worker thread.

    Controls (each returns at once; safe to call from any thread, in any state):
    :meth:`start`/:meth:`resume` run on, :meth:`pause` and :meth:`stop` halt after the current record
    (a stopped run can still resume: the generator is kept), :meth:`step` runs exactly one more record,
    :meth:`cancel` ends the run for good and frees the generator. ``min_interval`` > 0 spaces the records
    out (the Train page's slow motion).
    """

    def __init__(self, estimator, X, y, *, max_iter: int | None = None, label: str = "", page: str = "",
                 meta: dict | None = None):
        self.id = next(_ids)
        self.estimator = estimator
        self.view = None  # shallow copy of the estimator at the last record (see the module docstring)
        self.X, self.y = X, y
        self.max_iter = max_iter
        self.label = label or type(estimator).__name__
        self.page = page
        self.meta = dict(meta or {})
        self.status = IDLE
        self.error = ""
        self.note = ""  # why the run was stopped or cancelled by the app (not the user), shown by pages
        self.warnings: list[str] = []  # the fit's own warnings (UserWarning and subclasses), once each
        self.min_interval = 0.0
        self.records = 0
        self.wall = 0.0  # seconds the worker spent pulling records
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._gen = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._want = IDLE  # what the worker should do after the current record: RUNNING or a halt status
        self._steps_left: int | None = None

    @classmethod
    def from_fitted(cls, estimator, **kw) -> Run:
        """A finished run around an estimator fitted elsewhere (e.g. by a job)."""
        r = cls(estimator, None, None, **kw)
        r.status = r._want = DONE
        r.records = len(r.history)
        return r

    # -- what pages read --------------------------------------------------------------------------------
    @property
    def history(self) -> list:
        return getattr(self.estimator, "history_", None) or []

    @property
    def iteration(self) -> int:
        h = self.history
        return h[-1].iteration if h else 0

    @property
    def fitted(self) -> bool:
        return self.view is not None or bool(self.history)

    @property
    def model(self):
        """The estimator to predict with: the consistent view while the worker may write, else itself."""
        if self.busy and self.view is not None:
            return self.view
        return self.estimator

    @property
    def snapshot_id(self) -> int:
        """Changes with every new state to predict with (here: every record; a view is taken each)."""
        return self.records + (self.status == DONE)

    def want_snapshot(self) -> None:
        """Ask for a fresh state to predict with (a no-op here: the view follows every record; a process
        run's child sends one on request)."""

    @property
    def rate(self) -> float:
        """Iterations per second of compute (the estimator's own clock, pauses excluded)."""
        h = self.history
        return h[-1].iteration / h[-1].elapsed if h and h[-1].elapsed > 0 else 0.0

    @property
    def fraction(self) -> float:
        if self.status == DONE:
            return 1.0
        if not self.max_iter:
            return 0.0
        return min(1.0, self.iteration / self.max_iter)

    @property
    def can_resume(self) -> bool:
        return self.status in RESUMABLE

    # -- controls ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self._go(None)

    resume = start

    def step(self, n: int = 1, wait: float = 0.0) -> None:
        """Run ``n`` more records then pause; wait up to ``wait`` seconds for them (so a page can show the
        new record in the same redraw)."""
        before = self.records
        self._go(max(1, int(n)))
        if wait > 0:
            t_end = time.perf_counter() + wait
            while self.busy and self.records < before + n and time.perf_counter() < t_end:
                time.sleep(0.005)

    def pause(self) -> None:
        self._halt(PAUSED)

    def stop(self, note: str = "") -> None:
        self._halt(STOPPED, note)

    def cancel(self, note: str = "") -> None:
        """End the run for good; the estimator keeps the state of its last record."""
        self._halt(CANCELLED, note)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker to exit (tests, benchmarks); True when it has."""
        t = self._thread
        if t is not None:
            t.join(timeout)
        return not self.busy

    def wait(self, timeout: float = 60.0, poll: float = 0.01) -> bool:
        """Wait until the run is no longer running (done, failed, paused after a step...)."""
        t_end = time.perf_counter() + timeout
        while self.status == RUNNING and time.perf_counter() < t_end:
            time.sleep(poll)
        return self.status != RUNNING

    def _go(self, steps: int | None) -> None:
        with self._lock:
            if self.status in FINISHED:
                return
            self._want, self._steps_left = RUNNING, steps
            self.status = RUNNING
            if self.started_at is None:
                self.started_at = time.perf_counter()
            self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=f"bsvm-run-{self.id}", daemon=True)
                self._thread.start()

    def _halt(self, status: str, note: str = "") -> None:
        close = None
        with self._lock:
            if self.status in FINISHED:
                return
            if note:
                self.note = note
            self._want = status
            self.status = status
            self._wake.set()
            alive = self._thread is not None and self._thread.is_alive()
            if status == CANCELLED and not alive:  # nobody is inside the generator: free it here
                close, self._gen = self._gen, None
                self.finished_at = time.perf_counter()
        if close is not None:
            close.close()

    # -- the worker -------------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._lock:
                if self._want != RUNNING:  # pause, stop or cancel: leave; Continue starts a new worker
                    if self._want == CANCELLED:
                        gen, self._gen = self._gen, None
                        self.finished_at = time.perf_counter()
                        if gen is not None:
                            gen.close()
                    self._thread = None if self._thread is threading.current_thread() else self._thread
                    return
                gen = self._gen
            if gen is None:
                # fit_iter checks the parameters, the data and the cost when called (outside the lock:
                # the controls must not wait for it); a refusal ends the run with its message
                try:
                    gen = self.estimator.fit_iter(self.X, self.y)
                except Exception as exc:  # noqa: BLE001 - a refused fit ends the run, not the page
                    with self._lock:
                        self.error = _message(exc)
                        self.status = self._want = FAILED
                        self.finished_at = time.perf_counter()
                        self._thread = None
                    return
                with self._lock:
                    self._gen = gen
            t0 = time.perf_counter()
            try:
                rec = next(gen)
                ended, error = False, ""
            except StopIteration:
                ended, error = True, ""
            except Exception as exc:  # noqa: BLE001 - a failed fit must end the run, not the page
                ended, error = True, _message(exc)
            with self._lock:
                self.wall += time.perf_counter() - t0
                if ended:
                    self._gen = None
                    self.error = error
                    self.status = self._want = FAILED if error else DONE
                    self.finished_at = time.perf_counter()
                    if not error:
                        self.view = None  # the estimator is final: pages use it directly
                    self._thread = None
                    return
                self.records += 1
                _thin_history(self.estimator)
                self.view = copy.copy(self.estimator)
                if self._steps_left is not None and not initial_record(rec, self.records):
                    self._steps_left -= 1
                    if self._steps_left <= 0 and self._want == RUNNING:
                        self._want = self.status = PAUSED
                interval = self.min_interval
            if interval > 0 and self._want == RUNNING:
                self._wake.clear()
                self._wake.wait(interval)  # slow motion; a control change wakes the worker


# ------------------------------------------------------------------------------------------------ jobs


class Cancelled(Exception):
    """Raised by :meth:`Token.check` inside a job whose user pressed Cancel."""


@dataclass
class Token:
    """Handed to a job's callable: report progress, and check for cancellation between steps."""

    cancelled: bool = False
    fraction: float = 0.0
    text: str = ""
    #: what the work has finished so far, for a page to show after a Cancel (the Compare page's finished
    #: methods: a Cancel during the third of six dropped the first two, a crawl); None: nothing to keep
    partial: object = field(default=None, repr=False)
    _proc: object = field(default=None, repr=False)

    def progress(self, fraction: float, text: str = "") -> None:
        self.fraction = float(min(1.0, max(0.0, fraction)))
        if text:
            self.text = text
        self.check()

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled()


def _child(conn, fn, args):  # runs in the child process of a process job
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", _message(exc)))
    finally:
        conn.close()


class Job(_Worker):
    """Any long piece of work: ``fn(token, *args)`` in a thread (or ``fn(*args)`` in a child process when
    ``process=True``: for one uninterruptible call, which Cancel then terminates)."""

    def __init__(self, fn, *args, label: str = "", page: str = "", process: bool = False,
                 meta: dict | None = None):
        self.id = next(_ids)
        self.fn, self.args = fn, args
        self.label = label or getattr(fn, "__name__", "job")
        self.page = page
        self.meta = dict(meta or {})
        self.process = process
        self.token = Token()
        self.status = IDLE
        self.result = None
        self.error = ""
        self.note = ""
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._thread: threading.Thread | None = None

    @property
    def fraction(self) -> float:
        return 1.0 if self.status == DONE else self.token.fraction

    @property
    def text(self) -> str:
        return self.token.text

    @property
    def elapsed(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.finished_at or time.perf_counter()) - self.started_at

    def start(self) -> Job:
        if self.status == IDLE:
            self.status = RUNNING
            self.started_at = time.perf_counter()
            self._thread = threading.Thread(target=self._work, name=f"bsvm-job-{self.id}", daemon=True)
            self._thread.start()
        return self

    def cancel(self, note: str = "") -> None:
        if self.status in FINISHED:
            return
        if note:
            self.note = note
        self.token.cancelled = True
        self.status = CANCELLED
        self.finished_at = time.perf_counter()
        proc = self.token._proc
        if proc is not None and proc.is_alive():
            proc.terminate()

    stop = cancel

    def join(self, timeout: float | None = None) -> bool:
        t = self._thread
        if t is not None:
            t.join(timeout)
        return not self.busy

    def _work(self) -> None:
        try:
            result = self._run_process() if self.process else self.fn(self.token, *self.args)
        except Cancelled:
            return
        except Exception as exc:  # noqa: BLE001 - shown as a message by the page
            if self.status != CANCELLED:
                self.error, self.status = _message(exc), FAILED
                self.finished_at = time.perf_counter()
            return
        if self.status != CANCELLED:
            self.result, self.token.fraction = result, 1.0
            self.status = DONE
            self.finished_at = time.perf_counter()

    def _run_process(self):
        ctx = multiprocessing.get_context("spawn")  # no fork of a server with threads
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, self.fn, self.args), daemon=True)
        self.token._proc = proc
        proc.start()
        child.close()
        try:
            while proc.is_alive() or parent.poll():
                if self.token.cancelled:
                    raise Cancelled()
                if parent.poll(0.1):
                    kind, value = parent.recv()
                    if kind == "error":
                        raise RuntimeError(value) if ":" in value else ValueError(value)
                    return value
            raise RuntimeError(f"the worker process ended without a result (exit code {proc.exitcode})")
        finally:
            if proc.is_alive():
                proc.terminate()
            proc.join(1)
            parent.close()


# --------------------------------------------------------------------------------------------- registry


def _cancel_all(items: dict) -> None:
    for item in list(items.values()):
        item.cancel("the session ended")


class Registry:
    """A session's runs and jobs by name (one per name: starting a new one cancels the old one).

    Kept in ``st.session_state``; when the session goes away, a finaliser cancels whatever still runs.
    (Streamlit keeps a disconnected session for a reconnect: dashboard/tabs.py cancels a closed tab's
    runs 30 s after it left, or hands them to the tab when it is reloaded.)
    """

    def __init__(self):
        self.items: dict[str, Run | Job] = {}
        self._finalizer = weakref.finalize(self, _cancel_all, self.items)

    def get(self, name: str):
        return self.items.get(name)

    def put(self, name: str, item: Run | Job, start: bool = True):
        old = self.items.get(name)
        if old is not None and old is not item:
            old.cancel("replaced by a new run")
        self.items[name] = item
        if start:
            item.start()
        return item

    def pop(self, name: str, note: str = "reset"):
        item = self.items.pop(name, None)
        if item is not None:
            item.cancel(note)
        return item

    def halt_page(self, page: str, note: str) -> list:
        """Stop the fits and cancel the jobs started on ``page`` (the user left it); returns them."""
        halted = []
        for item in list(self.items.values()):
            if item.page == page and item.status == RUNNING:
                if (isinstance(item, Run) and item.max_iter and item.iteration >= item.max_iter
                        and "stage" not in (item.history[-1].metrics or {})):
                    # its last iteration is done, only the fit's ending remains (its final check): a
                    # halt then left "stopped: iteration 3100 / 3100" with Continue on (a crawl). Not a
                    # staged run (S-BSVM's kernel="auto": max_iter caps each candidate's fit while the
                    # iteration count runs on, so candidates may be ahead)
                    continue
                (item.stop if isinstance(item, Run) else item.cancel)(note)
                halted.append(item)
        return halted

    def halt_data(self, data_key: str, note: str) -> list:
        """Stop the work made for other data than ``data_key`` (the data changed); returns it."""
        halted = []
        for item in list(self.items.values()):
            key = item.meta.get("data_key")
            if key is not None and key != data_key and item.status == RUNNING:
                (item.stop if isinstance(item, Run) else item.cancel)(note)
                halted.append(item)
        return halted

    def running(self) -> list:
        return [i for i in self.items.values() if i.status == RUNNING or i.busy]

    def cancel_all(self, note: str = "") -> None:
        _cancel_all(self.items)


# ------------------------------------------------------------------------------------- job callables


def fit_in_job(token: Token, estimator, X, y, cap: int | None = None, label: str = ""):
    """A job body: fit ``estimator`` to the end, reporting progress and honouring Cancel between
    records. Returns the fitted estimator."""
    from .analysis import check_text, record_fraction

    name = label or type(estimator).__name__
    token.progress(0.0, f"{name}: starting")
    checked, fraction = None, 0.0
    for rec in estimator.fit_iter(X, y):
        if cap:
            token.progress(rec.iteration / cap, f"{name}: iteration {rec.iteration}")
            continue
        # a sampler that runs until its stopping rule is met has no length to count against: the bar
        # shows the share of the effective draws wanted that its last check had (as on the Train page)
        if "ess_target" in (rec.metrics or {}):
            checked = rec.metrics
        said = f" ({check_text(checked)})" if checked else ""
        fraction = record_fraction(rec, None, fraction)  # the best share so far (analysis.BarReading)
        token.progress(fraction, f"{name}: iteration {rec.iteration}{said}")
    return estimator


class CheckedModel:
    """A fitted model whose ``predict_proba`` / ``predict`` / ``decision_function`` run over ``rows`` rows
    at a time with a Cancel check (``token.check``) between blocks; any other attribute is the model's.
    A job's work after the fit (test metrics, the map, the fit's note) has no progress records: Compare's
    Cancel on a 20,000-row MS-BPM fit left 6-10 s of full CPU in that stage (a crawl). Each row's
    prediction is its own, so the blocks change values only by rounding (at most 1.5e-13 measured, in the
    BLAS products), and cost about what one call does (6,000 rows after 2,000: 0.6-1.4x per method)."""

    def __init__(self, model, token: Token, rows: int = 256):
        self._model, self._token, self._rows = model, token, int(rows)

    def __getattr__(self, name):
        return getattr(self._model, name)

    def _blocks(self, method: str, X):
        self._token.check()
        fn = getattr(self._model, method)
        n = len(X)
        if n <= self._rows:
            return fn(X)
        import numpy as np  # (lazily, as the rest of this module's numerics)

        parts = []
        for s in range(0, n, self._rows):
            parts.append(fn(X[s:s + self._rows]))
            self._token.check()
        return np.concatenate(parts, axis=0)

    def predict_proba(self, X):
        return self._blocks("predict_proba", X)

    def predict(self, X):
        return self._blocks("predict", X)

    def decision_function(self, X):
        return self._blocks("decision_function", X)


def fit_plain(estimator, X, y):
    """A process-job body (no token: the process is terminated on Cancel). Returns the fitted
    estimator, pickled back to the server."""
    return estimator.fit(X, y)


#: above this many training rows a PlattSVM refit runs in a child process (one SVC fit cannot be
#: interrupted in a thread; starting the process costs about a second, negligible at that size)
PROCESS_ROWS = 5000
