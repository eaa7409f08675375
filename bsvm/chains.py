"""Independent chains that give the same draws whatever ``n_jobs``, run in parallel with joblib.

Seeds: one ``np.random.SeedSequence`` is built from ``random_state`` and spawned into one child per
chain plus one for the work shared by all chains (pilot, feature maps): :func:`chain_seeds`. Each chain
then draws only from its own generator, so chain k's draws do not depend on which process ran it or on
how the chains were grouped.

Vectorised engines keep a leading chain axis; :class:`ChainRNG` gives them one object whose draws have
that axis while each row comes from its own chain's generator, so an engine written for "all chains at
once" is unchanged when it runs a subset of them.

:class:`ChainPool` splits the chains into ``n_jobs`` contiguous groups and runs a picklable function on
each group through ``joblib.Parallel`` (the default loky processes, or any backend chosen with
``joblib.parallel_config``, e.g. ``backend="dask"`` for a ``dask.distributed`` cluster). With
``n_jobs=1`` everything runs in-process with no joblib overhead. Large read-only arrays are shared with
process workers as memory maps (:meth:`ChainPool.share`), so a segment of work ships only the chains'
small states.

What makes two jobs faster than one (measured at 20,000 x 20, 4 chains, issue 13 §4): a worker must do
only its own chains' work. The engines therefore compute every product with the data per chain (one
BLAS matrix-vector product per chain, ``potential._chain_products``), which also makes a chain's values
independent of the chains sharing its process, so the draws are bit-identical whatever ``n_jobs``.
(Padding each group's product to the full chain count, as before, kept them identical too, but then each
worker did all four chains' work: 3.0-3.2 CPU s per worker against 2.5 s for the whole one-job run; and a
joint (n, k) product is no cheaper per chain at k = 2 than at k = 4, since BLAS gemm copies the data into
its packed panels on every call.) What stays serial, in the main process: the pilot, the metric pooling
at window ends and the stopping-rule checks over all chains (R-hat needs every chain), and one round
trip per segment (records are sent about every 2 s, and at sync points and scheduled checks).

Public API: ``chain_seeds``, ``ChainRNG``, ``chain_groups``, ``ChainPool``.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile

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


class ChainPool:
    """Runs one function per chain group, in-process (one job) or through ``joblib.Parallel``.

    Use as a context manager: the joblib workers are reused across calls, and the memory maps made by
    :meth:`share` are deleted on exit. ``map(fn, args_list)`` calls ``fn(*args)`` for each entry and
    returns the results in order."""

    def __init__(self, n_jobs: int):
        self.n_jobs = int(n_jobs)
        self._parallel = None
        self._tmp = None
        backend, _ = get_active_backend()
        self.backend_name = type(backend).__name__

    def __enter__(self):
        if self.n_jobs > 1:
            self._parallel = joblib.Parallel(n_jobs=self.n_jobs)
            self._parallel.__enter__()
        return self

    def __exit__(self, *exc):
        if self._parallel is not None:
            self._parallel.__exit__(*exc)
            self._parallel = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        return False

    def share(self, array: np.ndarray) -> np.ndarray:
        """The array itself, or for process workers on this machine a read-only memory map of it, which
        pickles as a file reference (no copy per call). Other backends (threads, dask) get the array."""
        if self.n_jobs == 1 or self.backend_name not in ("LokyBackend", "MultiprocessingBackend") \
                or array.nbytes < 1 << 20:
            return array
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="bsvm-chains-")
        path = os.path.join(self._tmp, f"a{len(os.listdir(self._tmp))}.npy")
        np.save(path, array)  # keeps a column-major array column-major (np.load maps it so)
        return np.load(path, mmap_mode="r")

    def map(self, fn, args_list):
        if self._parallel is None:
            return [fn(*args) for args in args_list]
        return self._parallel(joblib.delayed(fn)(*args) for args in args_list)
