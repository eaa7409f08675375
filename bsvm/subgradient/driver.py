"""Runs an engine's chains in segments between synchronisation points.

A segment advances one group of chains (in this process or a joblib worker) from iteration t0 to t1 with
its own generators (:func:`run_segment`), keeping the draws, the per-draw sample statistics and the
monitored quantities (log posterior and p(y|x) at fixed rows). Between segments the estimator pools the
groups: metric windows, convergence checks, progress records. Segment boundaries depend only on the
iteration schedule and on time budgets, never on ``n_jobs``, so a seed gives the same draws whatever
``n_jobs`` (time budgets only decide where a run stops).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ..base import _blas_limit
from .potential import (
    ChainLayout,
    HingeModel,
    binary_potential,
    normalised_likelihood,
    potential,
    scores,
    signed_design,
    write_twin,
)
from .samplers import HMC, SGLD, SGNHT, Gibbs, Potential, WindowAdaptation, design_order

STAT_NAMES = ("potential", "accept_prob", "step_size", "energy", "diverging", "n_leapfrog", "xi")


class EngineSpec(NamedTuple):
    kind: str  # "hmc", "sgld", "sgnht" or "gibbs"
    model: HingeModel
    batch_size: int | None = None
    n_leapfrog: int | None = None
    diffusion: float = 1.0


def build_engine(spec: EngineSpec, X, y, layout: ChainLayout | None = None, Z=None, Z_rows=None):
    if spec.kind == "gibbs":
        return Gibbs(spec.model, X, y)
    pot = Potential(spec.model, X, y, None if spec.kind == "hmc" else spec.batch_size, layout, Z, Z_rows)
    if spec.kind == "hmc":
        return HMC(pot, spec.n_leapfrog)
    return SGLD(pot) if spec.kind == "sgld" else SGNHT(pot, spec.diffusion)


class PreparedDesign:
    """The signed design of a binary HMC fit whose chains go to the workers from the first segment, with
    what the workers need of it made in a thread while the caller's pilot runs (the workers are idle
    then, and the pilot uses one core): the memory maps of the features and the design
    (``ChainPool.prepare``), and the design's float32 copy (``potential.write_twin``), which each worker
    would otherwise make for itself at its first gradient (at 100,000 x 50 ~0.13 s, the same work in
    both). Only files are made, from the same arrays, so no draw changes. :meth:`design` waits for the
    thread and re-raises its error, if any; :meth:`discard` removes the files of a fit that ended by an
    exception (the pool's finaliser would, but only once the pool is collected)."""

    def __init__(self, pool, kind: str, Phi: np.ndarray, y: np.ndarray, p: int):
        self._Z = signed_design(Phi, y, order=design_order(kind, Phi.shape))
        self._pool, self._error = pool, None

        def work():
            try:
                pool.prepare(Phi)
                write_twin(pool.prepare(self._Z), p)
            except BaseException as e:  # re-raised by design()
                self._error = e

        self._thread = threading.Thread(target=work, daemon=True)
        self._thread.start()

    def discard(self) -> None:
        """The fit ended by an exception (its pilot failed, an interrupt, a closed ``fit_iter``): the
        files go now (``ChainPool``'s exit, which may already have run), not when the pool is
        collected."""
        self._thread.join()
        self._pool.__exit__(None, None, None)

    def design(self) -> np.ndarray:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._Z


def attach_screen(spec: EngineSpec, data, carries: list, share) -> list:
    """The carries with their tuning's :class:`~.potential.Screen` when this process has built it already
    (``cached_screen``: the chains ran here with that metric before moving to the workers), its sorted
    copy of the design registered with ``share`` (``ChainPool.share``: one memory map for every worker),
    so the workers do not each sort and copy the design again (~0.13 s per metric and process at
    100,000 x 50). A metric this process has not used (a window end while the chains are in the workers,
    or chains that move at the first segment) is left to the workers: built here it would be serial work
    while both workers wait (the same ~0.13 s, plus ~0.03 s to write the map), built there it runs on
    both cores at once. HMC only, where ``Potential.use_screen`` would screen; the screen is the one the
    engine would build itself (``make_screen`` of the same Z, centre and factor), so no draw changes."""
    if spec.kind != "hmc" or not carries or carries[0].tuning.centre is None:
        return carries
    X, y, Z, _ = data
    out = []
    for c in carries:
        tun = c.tuning
        if tun.screen is None or not np.array_equal(tun.screen.centre, tun.centre):
            pot = Potential(spec.model, X, y, None, None, Z)
            pot.use_screen(tun._replace(screen=None), build=False)
            if pot.screen is None:
                return carries
            tun = tun._replace(screen=pot.screen._replace(Zs=share(pot.screen.Zs)))
        out.append(c._replace(tuning=tun))
    return out


class Plan(NamedTuple):
    n_burnin: int
    thin: int
    monitor_every: int  # monitored quantities at every k-th kept draw
    rows: np.ndarray  # training rows whose p(y|x) is monitored
    record_path: bool  # HMC leapfrog path of chain 0 (d <= 3)
    decay: tuple = (1000.0, 0.0)  # (b, gamma) of the sgld/sgnht step schedule


class Carry(NamedTuple):
    """What a chain group carries from one segment to the next."""

    state: object  # engine state (None before init)
    rng: object  # ChainRNG
    astate: object  # AdaptState
    tuning: object  # Tuning (for sgld/sgnht: step_size is h0 of the schedule)
    kept: int  # kept draws per chain so far
    theta0: np.ndarray | None = None  # start, consumed by the first segment


class SegmentOut(NamedTuple):
    carry: Carry
    draws: np.ndarray  # (C_g, k, P)
    stats: dict  # name -> (C_g, k)
    quantities: np.ndarray  # (C_g, k_m, 1 + len(rows))
    path: np.ndarray | None
    diverged_at: int | None  # first iteration with a non-finite state (the run must stop), else None
    t_end: int  # iterations done
    # (C_g,) full-data U at the last state: when no draw was kept (burn-in), and always for the minibatch
    # samplers, whose stats hold a minibatch estimate; else None (the last kept draw's U is exact)
    potential: np.ndarray | None = None


def monitored(spec: EngineSpec, theta, U_full, X_rows, y_rows, layout=None):
    """(C, 1 + R): log posterior -U (full data) and p(y_obs | x) at the monitored rows."""
    F = scores(spec.model, theta, X_rows, layout)
    p = normalised_likelihood(spec.model, F)  # (C, R, K)
    p_obs = np.take_along_axis(p, y_rows[None, :, None], axis=-1)[..., 0]
    return np.column_stack([-U_full, p_obs])


def run_segment(spec: EngineSpec, data, y_index_rows, adaptation: WindowAdaptation, plan: Plan,
                carry: Carry, t0: int, t1: int, path_wanted: bool, layout: ChainLayout) -> SegmentOut:
    """``data`` = (X, y, Z, Z_rows): features, labels (+-1 binary), the signed design (binary, else None)
    and the data row of each of its rows (None: the same order)."""
    # a diverging chain overflows on its way to a non-finite state, which the segment detects and the
    # estimator reports (numpy's own overflow warnings, dozens of them, only repeated it, a review)
    with _blas_limit(1), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _run_segment(spec, data, y_index_rows, adaptation, plan, carry, t0, t1, path_wanted, layout)


def _run_segment(spec, data, y_index_rows, adaptation, plan, carry, t0, t1, path_wanted, layout):
    X, y, Z, Z_rows = data
    engine = build_engine(spec, X, y, layout, Z, Z_rows)
    rng, astate, tuning, kept = carry.rng, carry.astate, carry.tuning, carry.kept
    state = carry.state if carry.state is not None else engine.init(rng, carry.theta0)
    C = len(rng)
    P = spec.model.n_params
    X_rows = X[plan.rows]
    sg = spec.kind in ("sgld", "sgnht")
    b, gamma = plan.decay
    n_keep_max = max(0, (t1 - max(t0, plan.n_burnin) + plan.thin - 1) // plan.thin + 1)
    draws = np.empty((C, n_keep_max, P))
    stats = {k: np.empty((C, n_keep_max)) for k in STAT_NAMES}
    quants = []
    k = 0
    path, info = None, None
    diverged = None
    t = t0
    for t in range(t0, t1):
        tun = tuning
        if sg and gamma > 0.0:
            tun = tuning._replace(step_size=tuning.step_size * (1.0 + t / b) ** (-gamma))
        if path_wanted and t == t1 - 1 and spec.kind == "hmc":
            engine.record_path = True
        state, info = engine.step(rng, state, tun)
        if not np.all(np.isfinite(state.theta)):
            diverged = t
            break
        if t < plan.n_burnin:
            astate, tuning = adaptation.update(astate, t, state.theta, info, tuning)
            if t == plan.n_burnin - 1:
                tuning = adaptation.final(astate, tuning)
            continue
        if (t - plan.n_burnin) % plan.thin != plan.thin - 1:
            continue
        draws[:, k] = state.theta
        for name in STAT_NAMES:
            stats[name][:, k] = getattr(info, name)
        if kept % plan.monitor_every == 0:
            if not sg:
                U = info.potential
            elif Z is not None:
                U = binary_potential(spec.model, state.theta, Z)
            else:
                U = potential(spec.model, state.theta, X, y, layout)
            quants.append(monitored(spec, state.theta, U, X_rows, y_index_rows, layout))
        kept += 1
        k += 1
    if info is not None and info.path is not None:
        path = info.path
    t_end = (diverged if diverged is not None else t + 1) if t1 > t0 else t0
    U_last = None
    if (k == 0 or sg) and info is not None and diverged is None:
        # in burn-in no kept draw carries a potential, yet the potential is how a user watches burn-in (the
        # dashboard said "no objective" until the first kept draw); stochastic-gradient info holds a
        # minibatch estimate (records of it jumped at the end of burn-in, a review found), so those
        # samplers pay one full-data pass per segment here
        if not sg:
            U_last = np.asarray(info.potential, dtype=float).copy()
        elif Z is not None:
            U_last = binary_potential(spec.model, state.theta, Z)
        else:
            U_last = potential(spec.model, state.theta, X, y, layout)
    q = np.stack(quants, axis=1) if quants else np.empty((C, 0, 1 + len(plan.rows)))
    # the screen goes back to the caller as None (attach_screen finds it again in its cache): a worker
    # would otherwise send its sorted copy of the design back with every segment
    new = Carry(state, rng, astate, tuning._replace(screen=None) if hasattr(tuning, "screen") else tuning,
                kept, None)
    return SegmentOut(new, draws[:, :k], {n: v[:, :k] for n, v in stats.items()}, q, path, diverged, t_end,
                      U_last)


class GrowingDraws:
    """Per-chain arrays (C, n, ...) that grow by doubling; ``view(name)`` is the filled part."""

    def __init__(self):
        self.arrays, self.n = {}, {}

    def append(self, name: str, block: np.ndarray) -> None:
        block = np.asarray(block)
        a, n = self.arrays.get(name), self.n.get(name, 0)
        k = block.shape[1]
        if a is None or n + k > a.shape[1]:
            cap = max(64, 2 * (n + k))
            new = np.empty((block.shape[0], cap, *block.shape[2:]), dtype=block.dtype)
            if a is not None:
                new[:, :n] = a[:, :n]
            self.arrays[name] = a = new
        a[:, n:n + k] = block
        self.n[name] = n + k

    def view(self, name: str, shape_if_empty=None) -> np.ndarray:
        if name not in self.arrays:
            return np.empty(shape_if_empty) if shape_if_empty is not None else None
        return self.arrays[name][:, :self.n[name]]

    def truncate(self, name: str, n: int) -> None:
        if name in self.n:
            self.n[name] = min(self.n[name], n)
