"""A fit in a child process: the Train page's runs compute apart from the server's Python (no Streamlit).

Why a process: a fit in a worker thread of the Streamlit server shares the GIL with the page's redraws
(building Plotly figures, predicting the live map, JSON). Measured in a browser, a Gibbs run took 17.7 s
inside the server against 3.2 s for ``fit()``. In a child process the fit has its own interpreter and
the redraws cost it nothing but the CPU they take.

How:

- Children are forked from a **forkserver** (``multiprocessing``'s "forkserver" context, never a fork of
  the threaded server itself) that imported the estimators once, when the app started
  (:func:`prewarm`): a Start click pays a fork (tens of ms), not the 2-8 s import of scikit-learn/SciPy.
- The child runs ``estimator.fit_iter(X, y)`` and obeys control messages between two records: ``go``
  (run on, or ``n`` more records), ``halt`` (pause/stop: it flushes what it has and waits, keeping the
  generator, so Continue resumes), ``interval`` (slow motion). Cancel terminates the child at once.
- It sends back the new progress records at most every :data:`RECORD_SECONDS`, and a pickled snapshot
  of the estimator (fitted attributes of the last record, ``history_`` left out) only when asked
  (``snap``, :meth:`ProcessRun.want_snapshot`: the live map asks when it is about to be recomputed) and
  with every halt; the final estimator at the end.
  A snapshot sent while the fit runs is for the live map only: a sampler's per-draw arrays in it are
  thinned to :data:`LIVE_DRAWS` draws (:func:`_live_view`). Measured on 2,000 Ripley rows, MS-BPM's
  periodic snapshots (one a second, growing to 36 MB) had the child pickle 110-150 MB over an 8 s fit,
  and each live map voted with all 2,000+ draws (1-1.5 s of the server's CPU per map).
- The child exits when the server goes away (its pipe ends), so it is never orphaned for longer than
  one record.

:class:`ProcessRun` keeps :class:`dashboard.runner.Run`'s interface (status, history, model, controls),
so pages do not care where the fit runs.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import threading
import time
import warnings
from contextlib import contextmanager

from .runner import (
    CANCELLED,
    DONE,
    FAILED,
    FINISHED,
    MAX_RECORDS,
    PAUSED,
    RUNNING,
    Run,
    _message,
    initial_record,
    trace,
)

#: modules the forkserver imports once, so a forked child starts warm (a failed import is ignored here:
#: the Train page reports unavailable methods itself)
PRELOAD = ["numpy", "scipy.linalg", "sklearn.base", "bsvm", "bsvm.sbsvm", "bsvm.msbpm", "bsvm.subgradient",
           "bsvm.seeger", "bsvm.platt", "dashboard.procrun"]
#: the child sends its new records at most this often (they are small)
RECORD_SECONDS = 0.05
#: a live snapshot (sent while the fit runs, for the live map) keeps at most about this many of a
#: sampler's draws (see :func:`_live_view`); the snapshots of a halt and the final estimator keep all
LIVE_DRAWS = 200
#: a finished sampler's map, accuracy line and fit note (dashboard/views/train.py, ui.fit_note_once)
#: average over at most about this many of its draws, evenly spaced (:func:`thinned`): MS-BPM on 5
#: classes (7,600 draws) predicted 50 ms per point, and its final map, accuracy and note held the Train
#: page for 130 s after "done" (a crawl); 1,000 draws put a vote fraction within about
#: 0.5 / sqrt(1000) = 0.016 of the average over all (Calibration's and Compare's metrics use every draw)
FINAL_DRAWS = 1000
#: ... but a finished run's map (a grid of a few thousand points) averages over fewer when predicting
#: FINAL_DRAWS draws there would take longer than this many CPU seconds (:func:`map_model`), and over
#: no fewer than MIN_MAP_DRAWS: MS-BPM on 5 classes, 280 rows, spent 14 s on its 2,025-point map after
#: "done" (24 s before its quadrature was cut to 24 nodes), longer than the fit
FINAL_MAP_SECONDS = 2.0
MIN_MAP_DRAWS = 100

_LOCK = threading.Lock()
_CTX = None


_MAIN_ENV = "BSVM_FORKSERVER_MAIN"


def _adopt_main() -> None:
    """In the forkserver: pose as the parent's main script, so that each forked child skips re-running
    it (multiprocessing re-runs a main script given by path in every child: for ``streamlit run``, an
    import of Streamlit per Start click). Our children never unpickle anything from ``__main__``."""
    import os
    import sys

    path = os.environ.get(_MAIN_ENV)
    main = sys.modules.get("__main__")
    if path and main is not None and getattr(main, "__file__", None) is None:
        main.__file__ = path


def context():
    """The forkserver context, its preload list set (once per server process)."""
    global _CTX
    with _LOCK:
        if _CTX is None:
            import os
            import sys

            main = getattr(sys.modules.get("__main__"), "__file__", None)
            if main and getattr(sys.modules["__main__"].__spec__, "name", None) is None:
                os.environ[_MAIN_ENV] = os.path.normpath(main)  # read by _adopt_main in the forkserver
            os.environ[_IN_FORKSERVER] = "1"  # the forkserver warms up on importing this module
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
            _CTX = ctx
        return _CTX


_TIMER: list = []
#: nice value of the server's drawing threads (script runs, fragments, the live map's thread), see
#: :func:`yield_to_fits`
DRAW_NICE = 5


def yield_to_fits() -> None:
    """Lower the calling thread's CPU priority to :data:`DRAW_NICE` above the server's own (Linux: nice
    is per thread; lowering the priority needs no privilege). Pages call this when they start drawing:
    where the server's redraws and a fit's child process (which has the server's priority) compete for
    a core, the fit goes first and the redraws take what is left, so watching a run does not slow it
    down. Relative, not absolute: a server started at nice -10 (the dashboard benchmark on a shared
    machine) draws at nice -5, not below every other process. No-op where not supported."""
    import os

    try:
        tid = threading.get_native_id()
        want = min(19, _BASE_NICE + DRAW_NICE)
        if os.getpriority(os.PRIO_PROCESS, tid) < want:
            os.setpriority(os.PRIO_PROCESS, tid, want)
    except (AttributeError, OSError):
        pass


def _base_nice() -> int:
    import os

    try:
        return os.getpriority(os.PRIO_PROCESS, os.getpid())  # the main thread's: the server's priority
    except (AttributeError, OSError):
        return 0


_BASE_NICE = _base_nice()


#: seconds between the first page drawn and the forkserver's start: its imports and warm-up take seconds
#: of CPU, which would slow the pages a new user opens first
PREWARM_DELAY = 4.0


def prewarm(delay: float = PREWARM_DELAY) -> None:
    """Start the forkserver (and its imports) in the background after ``delay`` seconds; returns at
    once. Idempotent; ``delay=0`` starts it now (e.g. when the Train page opens). A Start click before
    then starts it itself (and waits for it)."""
    if delay <= 0:
        _START.set()
        return
    with _LOCK:
        if _TIMER or _START.is_set():
            return
        timer = threading.Timer(delay, _START.set)
        timer.name, timer.daemon = "bsvm-prewarm", True
        _TIMER.append(timer)
        timer.start()


def _launcher() -> None:
    """Starts the forkserver when asked (:data:`_START`). A thread of its own, created when this module
    is imported (before any page lowers its thread's priority, see :func:`yield_to_fits`): the
    forkserver, and so every fit's child, inherits the priority of the thread that starts it."""
    from multiprocessing import forkserver

    _START.wait()
    context()
    try:
        with _forkserver_env():
            forkserver.ensure_running()
    except Exception:  # noqa: BLE001 - the Start click that needs it reports the failure
        pass
    _READY.set()


#: the directory that holds ``dashboard/`` (and, in a source checkout, ``bsvm/``): app.py puts it first on
#: the server's sys.path
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: thread-pool variables set to 1 for the forkserver, so for every fit's child, unless the user set them:
#: see :func:`_forkserver_env`
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def _forkserver_env():
    """Start the forkserver with :data:`_ROOT` first on its ``PYTHONPATH`` and one BLAS/OpenMP thread
    (:data:`ONE_THREAD`, where not set already). The variables are set only while it is spawned.

    ``PYTHONPATH``: Python 3.11's forkserver is handed the parent's sys.path but does not apply it before
    its preload: from any working directory but the repository's, the preload of ``dashboard.procrun``
    (so the warm-up) failed there, silently, and so did that of ``bsvm`` where it is used from the
    source tree without being installed (app.py allows that); every Start's child then imported the
    estimators itself (measured: 0.13-0.17 s from Start to the child's first line instead of 0.02 s).

    One thread: a thread pool does not survive a fork, so each child started OpenBLAS's and OpenMP's
    pools anew at its first call, and their new threads spun, looking for work, beside the fit: in
    children forked from a warmed-up forkserver, the first fit took 0.36 / 0.45 / 0.28 / 0.06 s wall
    (S-BSVM / MS-BPM / SubgradientHMC / PlattSVM on the Ripley sample, one more core busy for about 0.1
    s) against 0.31-0.34 / 0.37 / 0.21 / 0.02 s with one thread
    (``/work/coord/s31/mine/child_imports.py``; its second fit, pools running, 0.31 / 0.35 / 0.20 / 0.03
    s). At the sizes the dashboard draws the pools bought nothing: on 2,000 Ripley rows S-BSVM, MS-BPM,
    SubgradientHMC, GibbsSVM and SeegerARD took the same CPU and wall with one thread as with two. That
    core is the browser's and the server's: they draw while the fit runs."""
    keys = ["PYTHONPATH"] + [k for k in ONE_THREAD if k not in os.environ]
    saved = {k: os.environ.get(k) for k in keys}
    old = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT] + ([old] if old else []))
    for k in keys[1:]:
        os.environ[k] = "1"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _ensure_forkserver(timeout: float = 120.0) -> None:
    _START.set()
    _READY.wait(timeout)


def _in_forkserver() -> bool:
    import os
    import sys

    return bool(os.environ.get(_IN_FORKSERVER)) and sys.argv[:1] == ["-c"] and \
        "multiprocessing.forkserver" in sys.modules


_IN_FORKSERVER = "BSVM_IN_FORKSERVER"
_START, _READY = threading.Event(), threading.Event()
_LAUNCHER = threading.Thread(target=_launcher, name="bsvm-forkserver-launcher", daemon=True)
if not _in_forkserver():  # the forkserver forks children: it must stay single-threaded
    _LAUNCHER.start()


def _draw_index(n_chains: int, n_draws: int, keep: int):
    """Indices of at most about ``keep`` draws in all (per chain: evenly spaced, the newest included), or
    None when there are not more than that."""
    import numpy as np

    per_chain = max(1, keep // max(1, n_chains))
    if n_draws <= per_chain:
        return None
    return np.unique(np.linspace(n_draws - 1, 0, per_chain).round().astype(int))


def thinned(model, keep: int):
    """``model`` (a fitted sampler) as a shallow copy whose per-draw arrays keep about ``keep`` evenly
    spaced draws (see :func:`_live_view`), and the number of draws it had; ``model`` itself when it has
    no more than that (or no draws)."""
    s = _samples(model)
    if s is None or _draw_index(s.shape[0], s.shape[1], keep) is None:
        return model, None
    view = copy.copy(model)
    _live_view(view, keep)
    return view, int(s.shape[0] * s.shape[1])


def map_model(model, points, seconds: float = FINAL_MAP_SECONDS):
    """``model`` thinned for a map at ``points`` (the grid's rows): about :data:`FINAL_DRAWS` of a
    sampler's draws (:func:`thinned`), fewer (at least :data:`MIN_MAP_DRAWS`) when those would take more
    than ``seconds`` of CPU, as timed on a probe (about 20 draws at up to 100 of the points, this
    thread's CPU). Returns (model, the number of draws when the budget cut them, else None); a model
    without draws is returned as it is. A vote fraction over D draws is within about 0.5 / sqrt(D) of the
    average over all (0.05 at 100), smooth across the map: each draw's vote is."""
    if _samples(model) is None or _n_draws(model) == 0:
        return model, None  # no draws: a prediction costs what it costs
    # (thinned returns the model itself up to FINAL_DRAWS draws: its budget applies to those too, e.g. a
    # fixed-length or stopped MS-BPM run of 992 draws on 5 classes)
    final, _ = thinned(model, FINAL_DRAWS)
    probe, _ = thinned(model, 20)
    rows = points[:: max(1, len(points) // 100)]
    t0 = time.thread_time()
    probe.predict_proba(rows)
    per = (time.thread_time() - t0) / (_n_draws(probe) * len(rows))  # CPU s per draw and point
    keep = int(seconds / max(per * len(points), 1e-12))
    if keep >= _n_draws(final):
        return final, None
    chains = _samples(model).shape[0]
    # whole draws per chain, rounded up: rounded down, the floor of MIN_MAP_DRAWS was 96 with 8 chains
    cut, _ = thinned(model, -(-max(MIN_MAP_DRAWS, keep) // chains) * chains)
    return cut, _n_draws(cut)


def _samples(model):
    """A fitted sampler's ``samples_`` (chains, draws, ...), or None for a model without draws."""
    import numpy as np

    s = getattr(model, "__dict__", {}).get("samples_")
    return s if isinstance(s, np.ndarray) and s.ndim >= 2 else None


def _n_draws(model) -> int:
    s = _samples(model)
    return 0 if s is None else int(s.shape[0] * s.shape[1])


def _live_view(view, keep: int = LIVE_DRAWS) -> None:
    """Thin a snapshot's per-draw arrays for the live map: ``samples_`` (n_chains, n_draws, ...) and every
    array attribute with the same two leading axes (``potential_``, ``log_posterior_``...), the same
    draws of each, so the snapshot stays consistent. A sampler's ``predict_proba`` averages over its
    draws: a live map from LIVE_DRAWS evenly spaced draws costs the server and the pipe a fixed amount
    however long the run, and differs from the full average by the draws' Monte Carlo error
    (sd <= 0.5 / sqrt(LIVE_DRAWS) = 0.035 for a vote fraction). A finished run's map uses about
    :data:`FINAL_DRAWS` (:func:`thinned`)."""
    import numpy as np

    s = view.__dict__.get("samples_")
    if not isinstance(s, np.ndarray) or s.ndim < 2:
        return
    idx = _draw_index(s.shape[0], s.shape[1], keep)
    if idx is None:
        return
    lead = s.shape[:2]
    for name, value in list(view.__dict__.items()):
        if isinstance(value, np.ndarray) and value.ndim >= 2 and value.shape[:2] == lead:
            view.__dict__[name] = value[:, idx]


def _snapshot_bytes(estimator, live: bool = False) -> bytes:
    """The estimator pickled without ``history_`` (the parent keeps the records itself); ``live``: for
    the live map only (its per-draw arrays thinned, :func:`_live_view`)."""
    view = copy.copy(estimator)  # fit_iter writes the fitted attributes before it yields: consistent
    view.__dict__.pop("history_", None)
    if live:
        _live_view(view)
    return pickle.dumps(view, protocol=pickle.HIGHEST_PROTOCOL)


class _Outbox:
    """The child's messages to the parent, sent by a thread of their own: the fit never waits for the
    server to read (a busy server drains the pipe late). What piles up meanwhile is coalesced into one
    message: all new records, only the newest snapshot; control answers follow in order."""

    def __init__(self, conn):
        self.conn = conn
        self.cv = threading.Condition()
        self.records: list = []
        self.count, self.wall = 0, 0.0
        self.snapshot = None
        self.tail: list = []
        self.closed = False
        self.thread = threading.Thread(target=self._send_loop, daemon=True)
        self.thread.start()

    def put(self, records, count, wall, snapshot=None, tail=None) -> None:
        with self.cv:
            self.records.extend(records)
            self.count, self.wall = count, wall
            if snapshot is not None:
                self.snapshot = snapshot
            if tail is not None:
                self.tail.append(tail)
            self.cv.notify()

    def close(self) -> None:
        """Send what is left, then stop the thread."""
        with self.cv:
            self.closed = True
            self.cv.notify()
        self.thread.join()

    def _send_loop(self) -> None:
        while True:
            with self.cv:
                while not (self.records or self.snapshot is not None or self.tail or self.closed):
                    self.cv.wait()
                records, snapshot, tail = self.records, self.snapshot, self.tail
                count, wall, closed = self.count, self.wall, self.closed
                self.records, self.snapshot, self.tail = [], None, []
            try:
                if records or snapshot is not None:
                    self.conn.send(("records", records, count, wall, snapshot))
                for msg in tail:
                    self.conn.send(msg)
            except (OSError, ValueError):  # the server has gone
                return
            if closed and not (records or snapshot is not None or tail):
                return


def page_warnings(caught) -> list[str]:
    """The messages of recorded warnings a user of the page should see, in order, once each: the fit's
    UserWarnings (DataScaleWarning, ConvergenceWarning...), not its CostWarning (the page shows the
    estimate beside Start, and the warning's advice, ``fit(progress=True)``, is for scripts)."""
    try:
        from bsvm.cost import CostWarning
    except ImportError:  # pragma: no cover - a library without cost guards
        CostWarning = ()  # noqa: N806
    said = [str(w.message) for w in caught
            if issubclass(w.category, UserWarning) and not issubclass(w.category, CostWarning)]
    return list(dict.fromkeys(said))


def _child_main(conn, estimator, X, y, steps, interval, seq) -> None:  # pragma: no cover - runs in a child
    """The child's loop (see the module docstring). Messages to the parent:
    ("records", [Progress...], records_so_far, wall, snapshot bytes or None), ("halted", seq),
    ("done", bytes of the final estimator without history_, records, wall), ("failed", message).
    From the parent: ("go", steps, seq), ("halt", seq), ("interval", seconds), ("snap",)."""
    out = _Outbox(conn)
    # The fit's warnings (DataScaleWarning, ConvergenceWarning...) went to the server's log only, never
    # to the page (a crawl): recorded here (this process runs nothing else) and sent to the parent
    caught = warnings.catch_warnings(record=True).__enter__()
    warnings.simplefilter("always")
    sent: list[str] = []

    def forward() -> None:
        new = [m for m in page_warnings(caught) if m not in sent]
        caught.clear()
        if new:
            sent.extend(new)
            out.put([], count, wall, tail=("warnings", new))

    count, wall = 0, 0.0
    try:
        gen = estimator.fit_iter(X, y)
    except Exception as exc:  # noqa: BLE001 - a refused fit ends the run with its message
        out.put([], 0, 0.0, tail=("failed", _message(exc)))
        out.close()
        return
    running = True
    pending, count, wall = [], 0, 0.0
    last_rec = -1e9
    want = False  # a live snapshot with the next record: when the parent asks (the live map is due)

    def flush(snapshot: bool, tail=None, live: bool = False) -> None:
        nonlocal pending, last_rec
        blob = _snapshot_bytes(estimator, live=live) if snapshot and count else None
        out.put(pending, count, wall, blob, tail)
        pending, last_rec = [], time.perf_counter()

    while True:
        # control messages: between two records only (a record is never cut in half)
        while not running or conn.poll():
            try:
                msg = conn.recv()
            except (EOFError, OSError):  # the server has gone: so do we
                return
            kind = msg[0]
            if kind == "go":
                running, steps, seq = True, msg[1], msg[2]
            elif kind == "halt":
                running, seq = False, msg[1]
                flush(True, ("halted", seq))
            elif kind == "interval":
                interval = msg[1]
            elif kind == "snap":
                want = True
        t0 = time.perf_counter()
        try:
            rec = next(gen)
        except StopIteration:
            wall += time.perf_counter() - t0
            forward()
            final = copy.copy(estimator)
            final.__dict__.pop("history_", None)
            flush(False, ("done", pickle.dumps(final, protocol=pickle.HIGHEST_PROTOCOL), count, wall))
            out.close()
            return
        except Exception as exc:  # noqa: BLE001 - a failed fit ends the run, not the page
            forward()
            flush(False, ("failed", _message(exc)))
            out.close()
            return
        wall += time.perf_counter() - t0
        count += 1
        pending.append(rec)
        if caught:
            forward()
        now = time.perf_counter()
        if steps is not None and not initial_record(rec, count):
            steps -= 1
            if steps <= 0:  # Step: this many records, then pause
                running = False
                flush(True, ("halted", seq))
                continue
        if want or interval > 0 or now - last_rec >= RECORD_SECONDS:
            # slow motion: a snapshot with every record (one record per redraw; the map follows each)
            flush(want or interval > 0, live=True)
            want = False
        if interval > 0 and conn.poll(interval):  # slow motion; a control message ends the wait
            continue


def _thin(records: list) -> list:
    """Bound a long run's records as :func:`dashboard.runner._thin_history` does."""
    if len(records) <= 2 * MAX_RECORDS:
        return records
    keep = sorted({int(round(i * (len(records) - 2) / (MAX_RECORDS - 1))) for i in range(MAX_RECORDS)})
    return [records[i] for i in keep] + [records[-1]]


class ProcessRun(Run):
    """A :class:`~dashboard.runner.Run` whose fit runs in a child process (see the module docstring).

    ``estimator`` is the newest snapshot received (a fresh object each time, never written to by anyone,
    so pages predict with it safely), the final estimator once done; ``history`` the records received.
    ``busy`` is true while the child computes (after Start/Continue/Step until it has halted or ended).
    Stop and Pause halt the child after its current record; the generator stays in the child, so
    Continue resumes. Cancel (Reset, a replacing run, the session's end) terminates the child at once.
    """

    def __init__(self, estimator, X, y, **kw):
        super().__init__(estimator, X, y, **kw)
        self._records: list = []
        self._proc = None
        self._conn = None
        self._reader: threading.Thread | None = None
        self._computing = False
        self._seq = 0
        self._spawning = False  # a thread is starting the child (see _go)
        self._steps = None  # the steps the child is to run when it starts (None: to the end)
        self._snapshots = 0
        self._asked = 0  # the snapshot count a request is outstanding for (want_snapshot)

    # -- what pages read --------------------------------------------------------------------------------
    @property
    def history(self) -> list:
        return self._records

    @property
    def fitted(self) -> bool:
        return self._snapshots > 0 or (self.status == DONE and self._records != [])

    @property
    def model(self):
        return self.estimator

    @property
    def busy(self) -> bool:
        return self._computing

    @property
    def snapshot_id(self) -> int:
        """Changes with every new estimator (snapshot or final): what the live map was drawn from."""
        return self._snapshots + (self.status == DONE)

    def want_snapshot(self) -> None:
        """Ask the child for a snapshot with its next record (the live map is about to be redrawn); at
        most one request is outstanding."""
        with self._lock:
            if self._asked <= self._snapshots and self._computing and self._conn is not None:
                self._asked = self._snapshots + 1
                self._send(("snap",))

    @property
    def pid(self) -> int | None:
        p = self._proc
        return p.pid if p is not None else None

    # -- controls ---------------------------------------------------------------------------------------
    def _send(self, msg) -> None:
        try:
            self._conn.send(msg)
        except (OSError, ValueError, AttributeError):  # the child has ended: the reader reports why
            pass

    def _go(self, steps: int | None) -> None:
        with self._lock:
            if self.status in FINISHED:
                return
            self._seq += 1
            self.status = self._want = RUNNING
            self._computing = True
            if self.started_at is None:
                self.started_at = time.perf_counter()
            if self._proc is not None:
                self._send(("go", steps, self._seq))
                return
            self._steps = steps
            if self._spawning:
                return
            self._spawning = True
        # (outside the lock: a control clicked meanwhile must not wait for the child's start)
        if _READY.is_set():  # the forkserver is up: the child starts here, in tens of ms
            self._spawn()
        else:
            # Not yet (a freshly opened server: its imports take seconds): the child starts in a thread
            # of its own, not in the click's callback, where a Pause clicked meanwhile waited behind it,
            # 1.8-2.8 s (a crawl). A halt before the child exists means no child is started.
            threading.Thread(target=self._spawn, name=f"bsvm-spawn-{self.id}", daemon=True).start()

    def _spawn(self) -> None:
        _ensure_forkserver()
        with self._lock:
            if self.status != RUNNING or self._proc is not None:
                self._spawning = False
                return
            steps, seq = self._steps, self._seq
        ctx = context()
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_child_main, name=f"bsvm-fit-{self.id}", daemon=True,
                           args=(child, self.estimator, self.X, self.y, steps, self.min_interval, seq))
        try:
            proc.start()  # (outside the lock: it may wait for the forkserver's preload)
        except Exception as exc:  # noqa: BLE001 - e.g. an estimator that cannot be pickled
            with self._lock:
                self._spawning = False
                if self.status not in FINISHED:
                    self.error = f"The fit could not start in a worker process: {_message(exc)}"
                    self.status = self._want = FAILED
                    self.finished_at = time.perf_counter()
                self._computing = False
            parent.close()
            return
        finally:
            child.close()
        with self._lock:
            self._spawning = False
            if self.status != RUNNING:  # halted or cancelled while it started: it holds nothing yet
                proc.terminate()
                parent.close()
                if self.status != CANCELLED:
                    self.started_at = None
                self._computing = False
                return
            self._proc, self._conn = proc, parent
            trace("spawned", run=self.id, pid=proc.pid)
            self._reader = threading.Thread(target=self._read, name=f"bsvm-reader-{self.id}", daemon=True)
            self._reader.start()
            if self._seq != seq:  # a Step or Continue (after a Pause) came while it started
                self._send(("go", self._steps, self._seq))

    def _halt(self, status: str, note: str = "") -> None:
        with self._lock:
            if self.status in FINISHED:
                return
            if note:
                self.note = note
            self.status = self._want = status
            self._seq += 1
            if status == CANCELLED:
                self.finished_at = time.perf_counter()
                self._terminate()
            elif self._computing and self.records == 0 and not self._records:
                # Still in the fit's set-up (MS-BPM's on 5,000 rows: 7 s), which has no record to halt
                # after, so a halt waited for the first one: the child is ended instead (it holds
                # nothing worth keeping) and Continue starts a new one, set-up and all.
                self._discard()
            elif self._computing:
                self._send(("halt", self._seq))

    def _discard(self) -> None:
        """End a child that has made no record yet and forget it (see :meth:`_halt`); its reader sees
        that it is no longer this run's child and leaves the run's status alone. Called under the lock."""
        proc = self._proc
        self._proc = self._conn = None
        self._computing = False
        self.started_at = None
        trace("discarded", run=self.id, pid=proc.pid if proc is not None else None)
        if proc is not None and proc.is_alive():
            proc.terminate()  # its pipe ends with it: the reader's recv returns and it closes the pipe

    def _terminate(self) -> None:
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.terminate()  # SIGTERM ends a child inside NumPy at once; the reader joins it
        if proc is None:
            self._computing = False

    def set_interval(self, seconds: float) -> None:
        """Slow motion: at least ``seconds`` between two records."""
        self.min_interval = float(seconds)
        if self._conn is not None:
            self._send(("interval", self.min_interval))

    def join(self, timeout: float | None = None) -> bool:
        t_end = None if timeout is None else time.perf_counter() + timeout
        while self.busy and (t_end is None or time.perf_counter() < t_end):
            time.sleep(0.005)
        return not self.busy

    def alive(self) -> bool:
        """The child process exists (computing, or halted with its generator)."""
        p = self._proc
        return p is not None and p.is_alive()

    # -- the reader thread ------------------------------------------------------------------------------
    def _read(self) -> None:
        conn, proc = self._conn, self._proc
        ended = False
        try:
            while not ended:
                try:
                    msg = conn.recv()
                except (EOFError, OSError, TypeError, ValueError):  # the pipe has ended or was closed
                    break
                ended = self._handle(msg, proc)
        finally:
            proc.join(2)
            if proc.is_alive():
                proc.kill()
                proc.join(1)
            conn.close()
            with self._lock:
                if self._proc is proc:  # (not a child discarded in its set-up: that is not this run's news)
                    self._computing = False
                    if self.status not in FINISHED:  # the child died without a word (killed, out of memory)
                        self.error = (f"The worker process ended unexpectedly (exit code {proc.exitcode}); "
                                      "the model keeps the state of its last record.")
                        self.status = self._want = FAILED
                        self.finished_at = time.perf_counter()
                    if self.status == DONE and self.finished_at is None:
                        self.finished_at = time.perf_counter()

    def _adopt(self, blob: bytes):
        est = pickle.loads(blob)
        est.history_ = self._records
        return est

    def _handle(self, msg, proc) -> bool:
        """Apply one message of child ``proc``; True when it was the last. A discarded child's
        (:meth:`_discard`) are dropped, under the lock, so none lands after the discard."""
        kind = msg[0]
        if kind == "records":
            _, recs, count, wall, blob = msg
            if count and count == len(recs):
                trace("first-records", run=self.id, n=count, wall=f"{wall:.3f}")
            t0 = time.perf_counter()
            est = self._adopt(blob) if blob is not None else None
            if blob is not None:
                trace("snapshot", run=self.id, kb=len(blob) // 1024, s=f"{time.perf_counter() - t0:.4f}")
            with self._lock:
                if self._proc is not proc:
                    return True
                if recs:
                    self._records = _thin(self._records + recs)
                    if est is not None:
                        est.history_ = self._records
                    elif self._snapshots:
                        self.estimator.history_ = self._records
                self.records, self.wall = count, wall
                if est is not None and self.status != CANCELLED:
                    self.estimator = self.view = est
                    self._snapshots += 1
            return False
        if kind == "warnings":
            with self._lock:
                if self._proc is not proc:
                    return True
                self.warnings.extend(m for m in msg[1] if m not in self.warnings)
            return False
        if kind == "halted":
            with self._lock:
                if self._proc is not proc:
                    return True
                if msg[1] == self._seq:  # the answer to the newest control, not an older one
                    self._computing = False
                    if self.status == RUNNING:  # a Step's records are done
                        self.status = self._want = PAUSED
            return False
        if kind == "done":
            trace("child-done", run=self.id, wall=f"{msg[3]:.3f}")
            est = self._adopt(msg[1])
            with self._lock:
                if self._proc is not proc:
                    return True
                self.records, self.wall = msg[2], msg[3]
                if self.status != CANCELLED:
                    self.estimator, self.view = est, None
                    self.status = self._want = DONE
                    self.finished_at = time.perf_counter()
                self._computing = False
            return True
        if kind == "failed":
            with self._lock:
                if self._proc is not proc:
                    return True
                if self.status != CANCELLED:
                    self.error = msg[1]
                    self.status = self._want = FAILED
                    self.finished_at = time.perf_counter()
                self._computing = False
            return True
        return False


def _warm_up() -> None:
    """In the forkserver, once: fit each method briefly (its quick settings, 40 points), so that the
    modules a fit imports lazily and any first-call set-up are paid here, not by each forked child
    (measured: about 0.6 s of a child's start)."""
    import warnings

    try:
        from bsvm.datasets import make_ripley

        from .methods import METHODS

        X, y = make_ripley(40, random_state=0)
        for m in METHODS.values():
            if not m.available:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = m.make({**m.defaults(), **m.fast}, 0)
                    for i, _ in enumerate(est.fit_iter(X, y)):
                        if i >= 2:
                            break
                    est.predict_proba(X[:5])
            except Exception:  # noqa: BLE001 - warming is best effort; a real fit reports errors
                pass
    except Exception:  # noqa: BLE001
        pass


if __name__ == "dashboard.procrun":  # imported by the forkserver's preload (and by the server: harmless)
    _adopt_main()
    if _in_forkserver():
        _warm_up()
