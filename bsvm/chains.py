"""Independent chains that give the same draws whatever ``n_jobs``, run in parallel with joblib.

Seeds: one ``np.random.SeedSequence`` is built from ``random_state`` and spawned into one child per
chain plus one for the work shared by all chains (pilot, feature maps): :func:`chain_seeds`. Each chain
then draws only from its own generator, so chain k's draws do not depend on which process ran it or on
how the chains were grouped.

Vectorised engines keep a leading chain axis; :class:`ChainRNG` gives them one object whose draws have
that axis while each row comes from its own chain's generator, so an engine written for "all chains at
once" is unchanged when it runs a subset of them.

:class:`ChainPool` runs a picklable function on each of ``n_jobs`` chain groups (contiguous,
:func:`chain_groups`; HMC regroups its chains between segments so that the groups' leapfrog steps even
out, :func:`balanced_groups`, :func:`join_chains`): in-process, one group after another, or through
``joblib.Parallel`` (the default loky processes, or any backend chosen with ``joblib.parallel_config``,
e.g. ``backend="dask"`` for a ``dask.distributed`` cluster). A fit starts in-process and moves its groups
to the workers only when the rest of the run is estimated, at the measured speed, at >=
:func:`set_parallel_threshold`'s seconds (default 1 s); the workers are started in the background
meanwhile (:meth:`ChainPool.offer`). A fit whose whole run is predicted before sampling (``bsvm.cost``) at
>= ``ChainPool.predict_factor`` (3) x that threshold starts the workers at once, while its pilot runs, and
moves from the first segment (:meth:`ChainPool.predict`). Large read-only arrays are shared with process
workers as memory maps (:meth:`ChainPool.share`), so a segment of work ships only the chains' small
states.

What makes two jobs faster than one (issue 13 §4): a worker must do only its own chains' work. The
engines therefore compute every product with the data per chain (``potential._chain_products``), which
also makes a chain's values independent of the chains sharing its process, so the draws are bit-identical
whatever ``n_jobs``. (Padding each group's product to the full chain count, as before, kept them identical
too, but then each worker did all four chains' work.) The products pass over the design in row blocks
that all chains of a call read while cached, and designs beyond ~8 MB are read in float32 first
(``potential._chain_active``, decisions exact): at 100,000 x 50 the pass over the design is most of a
gradient and memory bandwidth is what two processes share, so one process with 4 chains reads the design
once per gradient and two workers read it twice; each worker's 2 chains then take about 60 % of the CPU
time that all 4 take in one process (measured, loaded machine). What stays serial, in the main process:
the Laplace pilot (about 1 s at 100,000 x 50), the metric pooling at window ends and the stopping-rule
checks over all chains (R-hat needs every chain), and one round trip per segment (segments end at window
ends, at the end of burn-in, at scheduled checks and about every 2 s).

Public API: ``chain_seeds``, ``ChainRNG``, ``chain_groups``, ``balanced_groups``, ``take_chains``,
``join_chains``, ``in_chain_order``, ``ChainPool``,
``set_parallel_threshold``, ``parallel_threshold``.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
import threading
import weakref
from contextlib import contextmanager

import joblib
import numpy as np
from joblib.parallel import get_active_backend


def _root_seed(random_state) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2 ** 63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(2 ** 31)))
    raise ValueError(f"random_state must be None, an int, a numpy Generator or RandomState, "
                     f"got {random_state!r}")


def chain_seeds(random_state, n_chains: int) -> tuple[np.random.SeedSequence, list[np.random.SeedSequence]]:
    """(shared seed, per-chain seeds) spawned from ``random_state`` (``SeedSequence.spawn``). Chain k's
    seed does not depend on ``n_chains``, so adding chains keeps the first ones' draws."""
    root = _root_seed(random_state)
    shared, chains = root.spawn(2)
    return shared, chains.spawn(int(n_chains))


class ChainRNG:
    """One ``np.random.Generator`` per chain behind the Generator methods the engines use; every draw has
    the chain axis first and row k comes from chain k's generator."""

    def __init__(self, generators):
        self.generators = list(generators)

    @classmethod
    def from_seeds(cls, seeds) -> ChainRNG:
        return cls(np.random.default_rng(s) for s in seeds)

    def __len__(self):
        return len(self.generators)

    def __getitem__(self, k):
        if isinstance(k, slice | list | np.ndarray):
            idx = np.arange(len(self))[k] if isinstance(k, slice) else np.asarray(k)
            return ChainRNG(self.generators[i] for i in idx)
        return self.generators[k]

    def _shape(self, size):
        size = (size,) if isinstance(size, numbers.Integral) else tuple(size)
        if not size or size[0] != len(self):
            raise ValueError(f"draw shape {size} must start with the number of chains {len(self)}")
        return size[1:]

    def standard_normal(self, size):
        rest = self._shape(size)
        return np.stack([g.standard_normal(rest) for g in self.generators])

    def uniform(self, low=0.0, high=1.0, size=None):
        rest = self._shape(size)
        return np.stack([g.uniform(low, high, rest) for g in self.generators])

    def integers(self, low, high=None, size=None):
        rest = self._shape(size)
        return np.stack([g.integers(low, high, rest) for g in self.generators])


def take_chains(obj, idx, n_chains: int):
    """The chains ``idx`` of a per-chain state: every array inside ``obj`` (named tuples, tuples and lists,
    nested; a :class:`ChainRNG`) has the chain axis first and is indexed by ``idx``; None, numbers and
    strings are kept. An array whose first axis is not ``n_chains`` raises (a shared array has no place in
    a per-chain state: pass those apart)."""
    if isinstance(obj, ChainRNG):
        return obj[np.asarray(idx)]
    if isinstance(obj, np.ndarray):
        if obj.ndim == 0:
            return obj
        if obj.shape[0] != n_chains:
            raise ValueError(f"a per-chain array has shape {obj.shape}, not {n_chains} chains first")
        return obj[idx]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(take_chains(o, idx, n_chains) for o in obj))
    if isinstance(obj, tuple | list):
        return type(obj)(take_chains(o, idx, n_chains) for o in obj)
    return obj


def join_chains(parts: list, groups, n_chains: int):
    """The inverse of :func:`take_chains`: the per-chain states of chain ``groups`` (one part per group,
    as ``take_chains`` gives them) joined into one whose row k is chain k's. Arrays are scattered by
    chain, a :class:`ChainRNG`'s generators likewise (the same objects: each chain keeps its stream);
    named tuples, tuples and lists are joined field by field; None, numbers, strings and other objects
    are shared and taken from the first part. A part whose array does not have its group's chain count
    first raises."""
    first = parts[0]
    if isinstance(first, ChainRNG):
        gens = [None] * int(n_chains)
        for part, g in zip(parts, groups, strict=True):
            for k, gen in zip(np.asarray(g), part.generators, strict=True):
                gens[int(k)] = gen
        return ChainRNG(gens)
    if isinstance(first, np.ndarray):
        if first.ndim == 0:
            return first
        for part, g in zip(parts, groups, strict=True):
            if part.shape[0] != len(g):
                raise ValueError(f"a per-chain array has shape {part.shape}, not the group's {len(g)} chains "
                                 "first")
        out = np.empty((int(n_chains), *first.shape[1:]), dtype=np.result_type(*parts))
        for part, g in zip(parts, groups, strict=True):
            out[np.asarray(g)] = part
        return out
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(join_chains([q[i] for q in parts], groups, n_chains) for i in range(len(first))))
    if isinstance(first, tuple | list):
        return type(first)(join_chains([q[i] for q in parts], groups, n_chains) for i in range(len(first)))
    return first


def in_chain_order(blocks, groups, axis: int = 0) -> np.ndarray:
    """Per-group arrays (each group's chains along ``axis``) concatenated with every chain at its own
    index: a no-op reordering for contiguous groups in order (:func:`chain_groups`)."""
    out = np.concatenate(blocks, axis=axis)
    order = np.concatenate([np.asarray(g) for g in groups])
    if np.array_equal(order, np.arange(order.size)):
        return out
    return np.take(out, np.argsort(order), axis=axis)


def balanced_groups(costs, sizes) -> list[np.ndarray]:
    """Chain groups of the given ``sizes`` with the smallest largest total ``cost`` (per chain, e.g. its
    leapfrog steps per transition): an exact search over assignments, the costliest chain first and a
    branch dropped once it cannot beat the best so far (at most a few ms up to 10 chains); from 11
    chains on, the greedy rule (each chain, costliest first, to the group with the
    least cost that has room, ties to the group with fewer free places). Ties between splits go to
    the first found. Each group sorted, the groups ordered by their first chain, so the group holding
    chain 0 comes first (the sizes may then come in another order). Where the draws do not depend on
    the grouping (every engine here: each chain's values are its own), this moves only where a chain
    runs: two workers whose chains take 5, 5 and 6, 7 leapfrog steps per transition do 10 and 13
    chain-steps, the slowest setting the pace; {7, 5} and {6, 5} do 12 and 11."""
    costs = np.asarray(costs, dtype=float)
    sizes = [int(s) for s in sizes]
    order = sorted(range(costs.size), key=lambda i: (-costs[i], i))
    best = [np.inf, None]
    if costs.size <= 10:
        load, members = [0.0] * len(sizes), [[] for _ in sizes]

        def place(k: int) -> None:
            if k == len(order):
                worst = max(load)
                if worst < best[0]:
                    best[0], best[1] = worst, [list(m) for m in members]
                return
            c, tried = costs[order[k]], set()
            for j in range(len(sizes)):
                key = (load[j], sizes[j] - len(members[j]))  # equal groups: one branch is enough
                if len(members[j]) == sizes[j] or key in tried or load[j] + c >= best[0]:
                    continue
                tried.add(key)
                members[j].append(order[k])
                load[j] += c
                place(k + 1)
                load[j] -= c
                members[j].pop()

        place(0)
    if best[1] is None:
        load, best[1] = [0.0] * len(sizes), [[] for _ in sizes]
        for k in order:
            j = min((j for j in range(len(sizes)) if len(best[1][j]) < sizes[j]),
                    key=lambda j: (load[j], sizes[j] - len(best[1][j]), j))
            best[1][j].append(k)
            load[j] += costs[k]
    groups = [np.sort(np.asarray(m, dtype=int)) for m in best[1] if m]
    return sorted(groups, key=lambda g: int(g[0]))


def chain_groups(n_chains: int, n_jobs: int) -> list[np.ndarray]:
    """Contiguous, near-equal groups of chain indices, one per job (never more groups than chains)."""
    k = max(1, min(int(n_chains), int(n_jobs)))
    return [g for g in np.array_split(np.arange(int(n_chains)), k) if len(g)]


def resolve_n_jobs(n_jobs) -> int:
    """``None`` -> 1 (inside a ``joblib.parallel_config`` block: its n_jobs); -1 -> all cores; as joblib."""
    if n_jobs is None:
        _, configured = get_active_backend()
        n_jobs = configured if configured is not None else 1
    return max(1, int(joblib.effective_n_jobs(n_jobs)))


#: The rule for when worker processes pay off (see :class:`ChainPool`): the chains move to the workers
#: only once the rest of the run, at the speed measured in-process, is estimated at >= this many seconds.
_SETTINGS = {"min_seconds": 1.0}


def set_parallel_threshold(min_seconds: float) -> float:
    """Set the least estimated remaining work (seconds in one process) for which a fit with n_jobs > 1
    moves its chains to worker processes (default 1.0; 0 uses the workers from the start whatever the
    size). Returns the previous value; :func:`parallel_threshold` is the context-manager form."""
    value = float(min_seconds)
    if not (value >= 0.0):
        raise ValueError(f"min_seconds must be a number >= 0 (seconds), got {min_seconds!r}")
    old, _SETTINGS["min_seconds"] = _SETTINGS["min_seconds"], value
    return old


def parallel_threshold_seconds() -> float:
    """The current threshold (:func:`set_parallel_threshold`)."""
    return _SETTINGS["min_seconds"]


@contextmanager
def parallel_threshold(min_seconds: float):
    """``with parallel_threshold(0): est.fit(X, y)`` runs the chains in workers whatever the work."""
    old = set_parallel_threshold(min_seconds)
    try:
        yield
    finally:
        _SETTINGS["min_seconds"] = old


def _warm_up() -> int:
    """A worker's first task: the import of the engines (paid while the main process keeps sampling)."""
    import bsvm.subgradient.driver  # noqa: F401

    return os.getpid()


class ChainPool:
    """Runs one function per chain group, in-process or through ``joblib.Parallel``.

    Use as a context manager: the joblib workers are reused across calls, and the memory maps made for
    them are deleted on exit. ``map(fn, args_list)`` calls ``fn(*args)`` for each entry and returns the
    results in order: in this process, one group after another, until the chains move to the workers.

    When they move (the rule, measured rather than guessed): with ``min_seconds=0`` from the first call;
    otherwise the caller reports, between calls, its estimate of the remaining run in seconds of this
    process (:meth:`offer`: measured time per iteration x iterations still planned). Once an estimate
    reaches ``min_seconds``, the workers are started in the background (the default loky backend: a
    first task imports the engines there, which takes seconds on a loaded machine, while this process
    goes on sampling), and the next call after they have answered runs in them. A small run therefore
    never waits for worker start-up (on 2,000 x 20 data, 4 hmc chains took 4.2 s with two workers
    against 0.9 s in one process). The chains' draws are the same either way: each chain draws from its
    own generator and its products with the data are per chain, so which process runs a group, and when
    the groups move, never changes a draw.

    Read-only arrays passed through :meth:`share` are sent to process workers as memory maps (each pickles
    as a file reference, no copy per call), so a call ships only the chains' small states."""

    def __init__(self, n_jobs: int, min_seconds: float = 0.0):
        self.n_jobs = int(n_jobs)
        self.min_seconds = float(min_seconds)
        self._parallel = None
        self._ready = None  # threading.Event: the background warm-up has finished
        self._warm_error = None
        self._workers = False
        self._shared = {}  # id(array) -> [array, memory map or None]
        self._tmp = None
        backend, _ = get_active_backend()
        self.backend_name = type(backend).__name__

    @property
    def in_workers(self) -> bool:
        """Whether ``map`` runs in the workers (from now on)."""
        return self._workers

    def __enter__(self):
        if self.n_jobs > 1 and self.min_seconds <= 0.0:
            self._open()
            self._workers = True
        return self

    def __exit__(self, *exc):
        if self._parallel is not None:
            self._parallel.__exit__(*exc)
            self._parallel = None
        if self._tmp is not None:
            self._cleanup()  # shutil.rmtree, once
            self._tmp = None
        self._shared.clear()
        return False

    def _open(self):
        self._parallel = joblib.Parallel(n_jobs=self.n_jobs)
        self._parallel.__enter__()

    #: a prediction (:meth:`predict`) must reach this many times ``min_seconds`` to start the workers
    #: before any measurement: bsvm.cost's SubgradientHMC model over-predicts small fits (2,000 x 20:
    #: 1.4 s predicted, ~0.6 s measured; 20,000 x 20: 1.8 s, ~1.0 s; 100,000 x 50: 7.4 s, 6.7-7.0 s), so
    #: at the default threshold (1 s) only fits predicted at >= 3 s start their workers early
    predict_factor = 3.0

    def predict(self, seconds: float) -> bool:
        """A prediction of the whole run (seconds in one process, before sampling: ``bsvm.cost``). If it
        reaches ``predict_factor`` x ``min_seconds``, the workers start now, in the background (e.g. while
        the caller's pilot runs), and the chains move at the first :meth:`offer` or :meth:`poll` after
        they have answered, i.e. from the first segment when they are already up. Returns whether they
        were started."""
        if self.n_jobs == 1 or self._workers or self._ready is not None:
            return self._ready is not None
        if not seconds >= self.predict_factor * self.min_seconds:
            return False
        self._start()
        return True

    def poll(self) -> bool:
        """Whether the next ``map`` runs in the workers: moves there if they were started (:meth:`offer`,
        :meth:`predict`) and have answered; never starts them."""
        if self.n_jobs == 1 or self._workers or self._ready is None:
            return self._workers
        return self.offer(0.0)

    def _start(self):
        self._ready = threading.Event()
        if self.backend_name == "LokyBackend":
            # joblib's loky executor is one per process and reused by every Parallel with the same
            # settings: a Parallel of our own, in a thread, starts it and imports the engines there
            threading.Thread(target=self._warm, daemon=True).start()
        else:  # threads, dask, ...: the chosen backend (a thread-local setting) starts on first use
            self._ready.set()

    def offer(self, remaining_seconds: float) -> bool:
        """The caller's estimate of the remaining run (seconds in this process). Starts the workers once it
        reaches ``min_seconds``; returns whether the next ``map`` runs in them."""
        if self.n_jobs == 1 or self._workers:
            return self._workers
        if self._ready is None:
            if not remaining_seconds >= self.min_seconds:
                return False
            self._start()
        if self._ready.is_set():
            if self._warm_error is not None:
                raise self._warm_error
            self._open()
            self._workers = True
        return self._workers

    def _warm(self):
        try:
            with joblib.Parallel(n_jobs=self.n_jobs) as par:
                par(joblib.delayed(_warm_up)() for _ in range(self.n_jobs))
        except BaseException as e:  # re-raised in the main thread by offer
            self._warm_error = e
        finally:
            self._ready.set()

    def share(self, array: np.ndarray) -> np.ndarray:
        """Registers a read-only array that calls pass to the workers (returns it): process workers on this
        machine then receive a memory map of it instead of a copy; threads, dask and in-process calls the
        array itself."""
        if isinstance(array, np.ndarray) and id(array) not in self._shared:
            self._shared[id(array)] = [array, None]
        return array

    def prepare(self, array: np.ndarray) -> np.ndarray:
        """:meth:`share` ``array`` and make its memory map now rather than at the first ``map`` (e.g. in a
        thread while the caller's pilot runs, the workers being idle then); returns the map (the array
        itself where calls would pass it as is: threads, dask, in-process, small arrays)."""
        self.share(array)
        return self._mapped(self._shared[id(array)])

    def _mapped(self, entry) -> np.ndarray:
        array, mm = entry
        if mm is None:
            if self.backend_name not in ("LokyBackend", "MultiprocessingBackend") or array.nbytes < 1 << 20:
                mm = array
            else:
                if self._tmp is None:
                    shm = "/dev/shm"  # memory-backed where available (what joblib itself prefers)
                    self._tmp = tempfile.mkdtemp(prefix="bsvm-chains-",
                                                 dir=shm if os.path.isdir(shm) and os.access(shm, os.W_OK)
                                                 else None)
                    # also when the pool is dropped without __exit__ (maps made by prepare() before a
                    # fit failed in its pilot)
                    self._cleanup = weakref.finalize(self, shutil.rmtree, self._tmp, True)
                path = os.path.join(self._tmp, f"a{len(os.listdir(self._tmp))}.npy")
                np.save(path, array)  # keeps a column-major array column-major (np.load maps it so)
                mm = np.load(path, mmap_mode="r")
            entry[1] = mm
        return mm

    def _swap(self, obj):
        """``obj`` with every shared array (in tuples, named tuples and lists) replaced by its map."""
        if isinstance(obj, np.ndarray):
            entry = self._shared.get(id(obj))
            return self._mapped(entry) if entry is not None and entry[0] is obj else obj
        if isinstance(obj, tuple | list):
            items = [self._swap(o) for o in obj]
            if all(a is b for a, b in zip(items, obj)):
                return obj
            if isinstance(obj, list):
                return items
            return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
        return obj

    def map(self, fn, args_list):
        if not self._workers:
            return [fn(*args) for args in args_list]
        return self._parallel(joblib.delayed(fn)(*self._swap(tuple(args))) for args in args_list)
