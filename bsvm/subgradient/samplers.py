"""Sampling engines: subgradient HMC (eq. 9), SSGLD (eq. 13) and SSGNHT (eq. 14) of Hu, Zhu & Zhang
(2016), the exact Gibbs sweep, and the burn-in adaptation they share.

Every engine has the same two methods (BlackJAX style):

    state = engine.init(rng, theta0)
    state, info = engine.step(rng, state, tuning)

``rng`` is a :class:`bsvm.chains.ChainRNG` (each chain draws from its own generator), ``tuning`` a
:class:`Tuning` (step sizes, preconditioner factor, control-variate centre) and ``info`` a
:class:`StepInfo` with the same fields for every engine (NaN where an engine has no such statistic).
Every array carries a leading chain axis, so a group of chains advances in one vectorised call.

``L`` (``Tuning.factor``) is a constant preconditioner factor (``M^-1 = L L^T``): ``None`` (identity, the
paper's form), a (p, p) matrix, or a :class:`Diagonal`. Each engine is the paper's update written in the
whitened coordinates ``theta = L z``, an exact reparametrisation: the target is unchanged, only the
geometry the dynamics sees.

:class:`WindowAdaptation` is the burn-in tuning as its own init/update/final object (modelled on
BlackJAX's ``window_adaptation``): per-chain dual averaging of the HMC step (Hoffman & Gelman 2014),
per-chain AdaGrad statistics, and the windows whose pooled chain states re-estimate the dense metric
(``pool``, a cross-chain step the driver calls at each window's end).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import potential as _potential
from .gibbs import gibbs_step
from .potential import (
    ActiveSet,
    ChainLayout,
    HingeModel,
    Screen,
    binary_active_update,
    binary_batch,
    binary_energy,
    binary_full,
    binary_full_update,
    binary_hinge_sums,
    binary_subgradient,
    cached_screen,
    make_screen,
    potential_and_grad,
    potential_and_grad_cv,
)


class Diagonal(NamedTuple):
    """A diagonal factor, shared (p,) or per chain (C, p)."""

    d: np.ndarray


def apply_factor(L, v: np.ndarray) -> np.ndarray:
    """Rows of ``v`` mapped by L (z-space -> theta-space). Dense: one matrix-vector product per chain
    (stacked matmul), so a chain's values do not depend on the chains sharing the call."""
    if L is None:
        return v
    if isinstance(L, Diagonal):
        return L.d * v
    if np.ndim(L) == 1:
        return L * v
    return np.matmul(L, np.ascontiguousarray(v)[:, :, None])[..., 0]


def apply_factor_t(L, g: np.ndarray) -> np.ndarray:
    """Rows of ``g`` mapped by L^T (theta-space gradient -> z-space gradient)."""
    if L is None:
        return g
    if isinstance(L, Diagonal):
        return L.d * g
    if np.ndim(L) == 1:
        return L * g
    return np.matmul(L.T, np.ascontiguousarray(g)[:, :, None])[..., 0]


def _take_factor(L, idx):
    """The factor for the chains ``idx`` (only a per-chain diagonal has a chain axis)."""
    if isinstance(L, Diagonal) and np.ndim(L.d) == 2:
        return Diagonal(L.d[idx])
    return L


def _col(x, n_chains: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, dtype=float), (n_chains,))[:, None]


class Tuning(NamedTuple):
    step_size: np.ndarray  # (C,) per chain
    factor: object = None  # None, (p, p) matrix or Diagonal
    cv: object = None  # ControlVariate centre of the minibatch estimate (sgld/sgnht), or None
    # (C,) the step from which HMC's step count is set (None: step_size); WindowAdaptation sets it in
    # burn-in to the step each dual-averaging stage started from
    count_step: np.ndarray | None = None
    # (p,) the metric's centre (the pilot's mode, then each metric window's mean): HMC's reference point
    # for screening the hinge activity (potential.Screen); None: no screening
    centre: np.ndarray | None = None
    # the Screen of (centre, factor), built once by the caller and shared with every worker
    # (driver.attach_screen: its sorted copy of the design is one memory map, not one build per process);
    # None: the engine builds it (make_screen). Set to None whenever centre or factor changes.
    screen: Screen | None = None


class StepInfo(NamedTuple):
    """What every engine reports per transition (C,) arrays; NaN where the engine has no such thing."""

    potential: np.ndarray  # U at the new state (hmc, gibbs: full data; sg: minibatch estimate, pre-step)
    accept_prob: np.ndarray
    energy: np.ndarray  # Hamiltonian of the kept state (hmc)
    diverging: np.ndarray  # bool: energy error > 1000 or non-finite
    n_leapfrog: np.ndarray
    step_size: np.ndarray
    xi: np.ndarray  # thermostat (sgnht)
    path: np.ndarray | None = None  # leapfrog positions of chain 0 (hmc, when asked)
    grad_sq: np.ndarray | None = None  # squared stochastic subgradient (sgld/sgnht), for AdaGrad


def _nan(C):
    return np.full(C, np.nan)


def _block(A: np.ndarray, start: int, m: int) -> np.ndarray:
    """Rows start, ..., start + m - 1 of A, wrapping past the last row to the first."""
    end = start + m
    return A[start:end] if end <= A.shape[0] else np.concatenate([A[start:], A[:end - A.shape[0]]])


# --------------------------------------------------------------------------- the data term
class Potential:
    """``U(theta)`` and a subgradient for every chain, full data or a minibatch per chain per call
    (eq. 7; with ``tuning.cv`` the control-variate estimate of Baker et al. 2019)."""

    #: entries of Z from which HMC updates the active set instead of recomputing Z^T A (see ``incremental``)
    incremental_min_size = 300_000

    def __init__(self, model: HingeModel, X: np.ndarray, y: np.ndarray, batch_size: int | None = None,
                 layout: ChainLayout | None = None, Z: np.ndarray | None = None,
                 Z_rows: np.ndarray | None = None):
        self.model, self.X, self.y, self.layout = model, X, y, layout
        self.Z = Z if model.n_classes == 2 else None  # the binary fast path (potential.signed_design)
        # Z's row i is the signed design of data row Z_rows[i] (a random permutation; None: Z[i] is row i)
        self.Z_rows = Z_rows if self.Z is not None else None
        n = X.shape[0]
        self.batch_size = None if batch_size is None or batch_size >= n else int(batch_size)
        if self.Z is not None and self.batch_size is not None and not self.Z.flags.c_contiguous:
            # minibatches take rows (__call__): np.take copies a source that is not row-major in full at
            # every call (a 100,000 x 52 column-major Z: 43 MB and 8 ms per step), so once here instead
            self.Z = np.ascontiguousarray(self.Z)

    @property
    def incremental(self) -> bool:
        """Whether :meth:`update` is available (binary, full data, ``signed_design``'s Z) and pays: with a
        screen (``use_screen``), or unscreened from ``incremental_min_size`` entries in Z."""
        # unscreened, below ~3e5 entries in Z the update's bookkeeping costs more than the product it
        # saves (measured per HMC transition: 1,000 x 22 1.8x slower, 5,000 x 22 1.2x slower, 20,000 x 22
        # 1.3x faster)
        return self.screen is not None or (self._update_possible
                                            and self.Z.size >= self.incremental_min_size)

    @property
    def _update_possible(self) -> bool:
        return (self.Z is not None and self.batch_size is None
                and self.Z.shape[1] == self.model.n_params + 1)

    @property
    def hinge_sums_available(self) -> bool:
        """Whether :meth:`hinge_sums` is (binary, full data, ``signed_design``'s Z with its ones)."""
        return (self.Z is not None and self.batch_size is None
                and self.Z.shape[1] == self.model.n_params + 1)

    #: entries of Z from which HMC screens the rows by a movement bound (``potential.Screen``)
    screen_min_size = 200_000
    screen: Screen | None = None

    def use_screen(self, tuning: Tuning, build: bool = True) -> None:
        """Set up (or keep) the screen of ``tuning``'s metric and centre (binary, full data, a dense or no
        metric, a centre, >= ``screen_min_size`` entries in Z). Below that the band's bookkeeping (a dozen
        small array operations per chain and gradient, ~1 us each) costs more than the matrix-vector
        product it saves: CPU s of a 150-draw default fit (4 chains, one thread, with / without the
        screen): 2,000 x 20 0.64 / 0.42, 5,000 x 20 0.62 / 0.51, 5,000 x 50 1.22 / 1.33, 10,000 x 20
        0.66 / 0.86; 20,000 x 20 and 100,000 x 50 in docs/subgradient.md."""
        if (tuning.centre is None or not self._update_possible or self.Z.size < self.screen_min_size
                or (tuning.factor is not None and np.ndim(tuning.factor) != 2)):
            self.screen = None
            return
        src = (tuning.factor, tuning.centre)
        if self.screen is not None and self._screen_src[0] is src[0] and self._screen_src[1] is src[1]:
            return
        given = tuning.screen
        if given is not None and given.Zs.shape[0] == self.Z.shape[0] and np.array_equal(given.centre,
                                                                                           tuning.centre):
            self.screen, self._screen_src = given, src  # built by the caller (driver.attach_screen)
            return
        make = make_screen if build else cached_screen  # build=False: only one this process has
        self.screen = make(self.Z, self.model.n_params, self.model.l, tuning.centre, tuning.factor)
        self._screen_src = src

    def hinge_sums(self, theta, active: ActiveSet | None):
        """(gzc, ActiveSet or None): ``potential.binary_hinge_sums`` at theta, updated from ``active``
        when given (``binary_active_update``, screened by ``self.screen`` if set); ``binary_energy`` /
        ``binary_subgradient`` finish it."""
        if active is not None:
            active = binary_active_update(self.model, theta, self.Z, active, self.screen)
            return active.gzc, active
        return binary_hinge_sums(self.model, theta, self.Z), None

    def update(self, theta, prev: ActiveSet | None):
        """(U, subgradient, ActiveSet) from the previous state's active set (``binary_full_update``)."""
        return binary_full_update(self.model, theta, self.Z, prev, self.screen)

    def subset(self, idx) -> Potential:
        """The same potential for the chains ``idx`` of this group (full data only: HMC's chains whose
        trajectories are still running). Per-chain values are unchanged (see ``ChainLayout``)."""
        if self.layout is None or self.Z is not None:  # the binary path's products are per chain already
            return self
        return Potential(self.model, self.X, self.y, self.batch_size,
                         self.layout._replace(positions=self.layout.positions[idx]), self.Z)

    def __call__(self, rng, theta, cv=None):
        if self.Z is not None:
            if self.batch_size is None:
                return binary_full(self.model, theta, self.Z)
            n, m = self.Z.shape[0], self.batch_size
            if self.Z_rows is not None:
                # Z's rows in a random order: each chain's minibatch is m consecutive rows of it from a
                # uniform start, wrapping at the end, so every data row is in it with probability m / n and
                # eq. 7's estimate stays unbiased (as without replacement from a random permutation). A
                # block is one contiguous copy: at 100,000 x 52, 4 x 1,000 rows and the estimate cost
                # 110-135 us against 230 us for the same from random rows (np.take below: a gather bound
                # by memory latency); sgld there spent 25 % of its fit in that gather
                starts = rng.integers(0, n, size=theta.shape[0])
                Zb = np.stack([_block(self.Z, o, m) for o in starts])
                idx = None if cv is None else np.stack([_block(self.Z_rows, o, m) for o in starts])
                return binary_batch(self.model, theta, Zb, n / m, cv, idx)
            idx = rng.integers(0, n, size=(theta.shape[0], m))
            # np.take on the row-major design (its column of ones too, which binary_batch ignores):
            # fresh random rows are a gather bound by memory latency, and take's row copies cost
            # 130-150 us per 4 x 1,000 rows of 52 against 300-320 us for fancy indexing of the view
            # without the ones (Z[:, :p][idx]) at 100,000 x 52. (np.take on that view copied the whole
            # view first, 4-5 ms a step: why an earlier trial of take was slower.)
            return binary_batch(self.model, theta, np.take(self.Z, idx, axis=0), n / m, cv, idx)
        if self.batch_size is None:
            return potential_and_grad(self.model, theta, self.X, self.y, layout=self.layout)
        n, m = self.X.shape[0], self.batch_size
        idx = rng.integers(0, n, size=(theta.shape[0], m))
        if cv is not None:
            return potential_and_grad_cv(self.model, cv, theta, self.X[idx], self.y[idx], idx, n / m)
        return potential_and_grad(self.model, theta, self.X[idx], self.y[idx], n / m)


# --------------------------------------------------------------------------- subgradient HMC with MH (eq. 9)
def design_order(kind: str, shape: tuple) -> str:
    """The memory order of ``potential.signed_design`` for a fit of ``kind`` on features of ``shape``
    (n, d). Row-major ("C") for minibatches, which gather rows, and for HMC on designs beyond the cache
    (``potential._TWIN_MIN_BYTES``, 8 MB): its gradients update the previous state's activity (screened
    where the metric has a centre, reading the band from the screen's own sorted copy) and gather from
    the design only the rows whose hinge switched, which
    from column-major storage costs a cache miss per column and row (300 of 100,000 rows of 52: 30 us
    against 4-6 us row-major). Column-major ("F") for smaller HMC designs, where full per-chain
    matrix-vector products stream contiguous columns and the gathers stay in cache.

    CPU s of a default hmc fit, one thread, 2 chains of 300 draws, column- / row-major (two runs each):
    100,000 x 50 1.95-2.19 / 1.65-1.67 (4 chains at their stopping rule: 3.35-3.40 / 2.78-3.00),
    100,000 x 20 0.70-0.72 / 0.64-0.68, 20,000 x 50 0.59-0.60 / 0.60, 50,000 x 10 0.29 / 0.29,
    20,000 x 20 0.30 / 0.31."""
    n, d = shape
    if kind != "hmc" or 8 * n * (d + 2) >= _potential._TWIN_MIN_BYTES:
        return "C"
    return "F"


class HMCState(NamedTuple):
    theta: np.ndarray  # (C, p)
    U: np.ndarray  # (C,) potential at theta (full data)
    grad: np.ndarray  # (C, p) subgradient at theta
    active: ActiveSet | None = None  # hinge activity at theta (the binary full-data potential's update)


class HMC:
    """Full-batch subgradient HMC: r ~ N(0, I) in z-space, leapfrog steps of eq. 9 with the subgradient,
    then the Metropolis-Hastings test on H = U + |r|^2 / 2 (the correction that makes the sampler exact up
    to the measure-zero kinks). The step is jittered by +-``jitter`` per transition.

    ``n_leapfrog=None``: each chain takes ceil(trajectory / h_c) steps, h_c its (un-jittered) step size, so
    the integration time is about ``trajectory`` = pi / 2 in the whitened coordinates (at most
    :data:`MAX_LEAPFROG` steps: a shorter trajectory for a step that small). For a unit Gaussian
    (what the laplace metric makes of the posterior) that is a quarter orbit, after which the position is
    the initial momentum: a nearly independent draw for the log posterior too. (A fixed 10 steps of
    h ~ 0.65 is close to a full orbit, 2 pi, and gave 5-20x fewer effective draws; pi gives antithetic
    draws whose log posterior hardly moves.) In burn-in the count follows ``Tuning.count_step`` (the step
    each dual-averaging stage started from) instead of the averaging's current probe. An integer fixes the
    step count. On binary data with >= 3e5 entries in the signed design, each gradient updates the
    previous point's active set (``potential.binary_full_update``) instead of recomputing Z^T A; from
    2e5 entries, with a dense metric and its centre in ``Tuning.centre`` (the estimator's laplace
    preconditioner), it also computes only the margins of the rows whose activity the movement bound
    leaves uncertain (``potential.Screen``). The Metropolis-Hastings test uses the exact potential either
    way (the screen changes no decision)."""

    #: integration time in the whitened coordinates when the step count is not fixed (a quarter orbit)
    TRAJECTORY = 0.5 * np.pi
    #: most leapfrog steps of a transition when the count is not fixed (NUTS's default tree depth of 10
    #: allows 1,023): a posterior so sharply curved that the adapted step is ~1e-7 (c = 1e6 on 150 rows,
    #: a library user's review) asked for ~1e7 steps per transition, and the fit ran for hours unwarned.
    #: Ordinary fits take 3-10 (a step of 0.15-0.6), far below it.
    MAX_LEAPFROG = 1024

    def __init__(self, potential: Potential, n_leapfrog: int | None, jitter: float = 0.2,
                 trajectory: float = TRAJECTORY):
        self.potential, self.jitter, self.trajectory = potential, float(jitter), float(trajectory)
        self.n_leapfrog = None if n_leapfrog is None else int(n_leapfrog)
        self.record_path = False

    @staticmethod
    def leapfrog_counts(tuning: Tuning, n_chains: int, n_leapfrog: int | None = None,
                        trajectory: float = TRAJECTORY) -> np.ndarray:
        """Each chain's leapfrog steps per transition (C,) at ``tuning``: ceil(trajectory / h_c), h_c its
        un-jittered step (``Tuning.count_step`` in burn-in), or the fixed ``n_leapfrog``. What a chain's
        transition costs, which ``bsvm.chains.balanced_groups`` evens out between workers."""
        if n_leapfrog is not None:
            return np.full(n_chains, int(n_leapfrog))
        return np.minimum(HMC.wanted_counts(tuning, n_chains, trajectory), HMC.MAX_LEAPFROG).astype(int)

    @staticmethod
    def wanted_counts(tuning: Tuning, n_chains: int, trajectory: float = TRAJECTORY) -> np.ndarray:
        """ceil(trajectory / h_c) per chain, before the :data:`MAX_LEAPFROG` cap (float: it may be huge)."""
        h = _col(tuning.step_size if tuning.count_step is None else tuning.count_step, n_chains)
        with np.errstate(divide="ignore", over="ignore"):
            return np.maximum(1.0, np.ceil(trajectory / h[:, 0]))

    def init(self, rng, theta0) -> HMCState:
        theta0 = np.asarray(theta0, dtype=float)
        if getattr(self.potential, "incremental", False):
            return HMCState(theta0, *self.potential.update(theta0, None))
        U, g = self.potential(rng, theta0)
        return HMCState(theta0, U, g)

    def _evaluate(self, rng, theta, active, potential=None):
        """(U, grad, active set) at theta; the active set is updated from the previous point's when the
        potential supports it (``potential.binary_full_update``), else None."""
        potential = self.potential if potential is None else potential
        if active is not None:
            return potential.update(theta, active)
        U, g = potential(rng, theta)
        return U, g, None

    def step(self, rng, state: HMCState, tuning: Tuning):
        L = tuning.factor
        C = state.theta.shape[0]
        h0 = _col(tuning.step_size, C)
        h = h0 * rng.uniform(1.0 - self.jitter, 1.0 + self.jitter, size=(C, 1))
        steps = self.leapfrog_counts(tuning, C, self.n_leapfrog, self.trajectory)
        n = int(steps.max())
        r = rng.standard_normal(state.theta.shape)
        H0 = state.U + 0.5 * np.einsum("cp,cp->c", r, r)
        theta, g, U = state.theta, state.grad, state.U
        active = state.active
        if hasattr(self.potential, "use_screen"):
            self.potential.use_screen(tuning)
        if active is None and getattr(self.potential, "incremental", False):  # a state made elsewhere
            active = self.potential.update(theta, None)[2]
        path = [theta[0]] if self.record_path else None
        r = r - 0.5 * h * apply_factor_t(L, g)
        # per-step coefficients, made once per transition; the last step's kick is a half step. Steps
        # i < min(steps) move every chain at once; after that only the chains whose trajectory is still
        # running are moved and evaluated (the others keep their end point), so a process's data work is
        # the sum of its chains' step counts, not its chain count x the longest count
        i_step = np.arange(n)[:, None]
        live = i_step < steps[None, :]  # (n, C)
        pos = (h[:, 0] * live)[..., None]  # (n, C, 1)
        kick = (np.where(i_step == steps[None, :] - 1, 0.5 * h[:, 0], h[:, 0]) * live)[..., None]
        n_all = int(steps.min())
        pot = self.potential
        # binary full data: the inner points need only the subgradient; U (the same formula as
        # binary_full's) is formed once, at the end point
        sums = getattr(pot, "hinge_sums_available", False)
        gzc = None
        with np.errstate(over="ignore", invalid="ignore"):
            for i in range(n):
                if i < n_all:
                    theta = theta + pos[i] * apply_factor(L, r)
                    if sums:
                        gzc, active = pot.hinge_sums(theta, active)
                        g = binary_subgradient(pot.model, theta, gzc)
                    else:
                        U, g, active = self._evaluate(rng, theta, active)
                    r = r - kick[i] * apply_factor_t(L, g)
                else:
                    idx = np.flatnonzero(live[i])
                    L_l = _take_factor(L, idx)
                    theta, g, r = theta.copy(), g.copy(), r.copy()
                    theta[idx] = theta[idx] + pos[i][idx] * apply_factor(L_l, r[idx])
                    act_l = None if active is None else active.take(idx)
                    if sums:
                        gzc_l, act_l = pot.hinge_sums(theta[idx], act_l)
                        g_l = binary_subgradient(pot.model, theta[idx], gzc_l)
                        gzc = gzc.copy()
                        gzc[idx] = gzc_l
                    else:
                        sub = pot.subset(idx) if hasattr(pot, "subset") else pot
                        U_l, g_l, act_l = self._evaluate(rng, theta[idx], act_l, sub)
                        U = U.copy()
                        U[idx] = U_l
                    g[idx] = g_l
                    if act_l is not None:  # the step's own arrays (made by its first evaluation)
                        active = active.put(idx, act_l, inplace=True)
                    r[idx] = r[idx] - kick[i][idx] * apply_factor_t(L_l, g_l)
                if path is not None and i < steps[0]:
                    path.append(theta[0])
            if sums and gzc is not None:
                U = binary_energy(pot.model, theta, gzc)[0]
            H1 = U + 0.5 * np.einsum("cp,cp->c", r, r)
        dH = np.where(np.isfinite(H1), H1 - H0, np.inf)
        accept_prob = np.exp(np.minimum(0.0, -dH))
        accepted = rng.uniform(size=C) < accept_prob
        a = accepted[:, None]
        kept_active = None
        if active is not None:
            old = state.active if state.active is not None else self.potential.update(state.theta, None)[2]
            kept_active = ActiveSet.select(accepted, active, old, inplace=True)  # active: made in this step
        new = HMCState(np.where(a, theta, state.theta), np.where(accepted, U, state.U),
                       np.where(a, g, state.grad), kept_active)
        info = StepInfo(new.U, accept_prob, np.where(accepted, H1, H0), dH > 1000.0, steps.astype(float),
                        h[:, 0], _nan(C), None if path is None else np.array(path))
        return new, info


class _FunctionPotential:
    """A plain ``potential_fn(theta) -> (U, grad)`` in the engines' potential interface."""

    layout = None

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, rng, theta, cv=None):
        return self.fn(theta)


def hmc_step(rng, state: HMCState, potential_fn, step_size, n_leapfrog: int, L=None, jitter: float = 0.2):
    """One transition of :class:`HMC` with a plain ``potential_fn(theta) -> (U, grad)`` and a fixed
    number of leapfrog steps (the function form MSBPM's collapsed sampler uses). Returns (state, StepInfo)."""
    engine = HMC(_FunctionPotential(potential_fn), int(n_leapfrog), jitter)
    return engine.step(rng, state, Tuning(np.asarray(step_size, dtype=float), L))


# --------------------------------------------------------------------------- SSGLD (eq. 13)
class SGLDState(NamedTuple):
    theta: np.ndarray  # (C, p)


class SGLD:
    """theta' = theta - (h^2 / 2) L L^T dU~(theta) + h L nu, nu ~ N(0, I).

    The stochastic subgradient is evaluated at theta_t: eq. 13 prints theta_{t+1}, a misprint (the update
    would otherwise be implicit; see docs/subgradient.md)."""

    def __init__(self, potential: Potential):
        self.potential = potential

    def init(self, rng, theta0) -> SGLDState:
        return SGLDState(np.asarray(theta0, dtype=float))

    def step(self, rng, state: SGLDState, tuning: Tuning):
        U, g = self.potential(rng, state.theta, tuning.cv)
        C = g.shape[0]
        h = _col(tuning.step_size, C)
        z_move = -0.5 * h * h * apply_factor_t(tuning.factor, g) + h * rng.standard_normal(g.shape)
        new = SGLDState(state.theta + apply_factor(tuning.factor, z_move))
        return new, StepInfo(U, _nan(C), _nan(C), ~np.isfinite(U), _nan(C), h[:, 0], _nan(C), None, g * g)


# --------------------------------------------------------------------------- SSGNHT (eq. 14)
class SGNHTState(NamedTuple):
    theta: np.ndarray  # (C, p)
    r: np.ndarray  # (C, p) momentum (z-space)
    xi: np.ndarray  # (C,) thermostat
    grad: np.ndarray | None = None  # (C, p) stochastic subgradient at theta (theta-space), carried
    U: np.ndarray | None = None  # (C,) the potential estimate that came with it


def _ou_variance(xi: np.ndarray, h: np.ndarray) -> np.ndarray:
    """(1 - exp(-2 xi h)) / xi, the variance factor of an exact OU step (-> 2 h as xi -> 0; positive for
    xi < 0 too)."""
    x = 2.0 * xi * h
    small = np.abs(x) < 1e-8
    return np.where(small, 2.0 * h, -np.expm1(-x) / np.where(small, 1.0, xi))


class SGNHT:
    """The SDE of eq. 14 (Ding et al. 2014's thermostat; z-space with theta = L z):

        dz = r dt,  dr = -L^T dU~(theta) dt - xi r dt + sqrt(2 A) dW,  dxi = (r^T r / n - 1) dt,

    integrated by the symmetric splitting "BADODAB" of Leimkuhler & Shang (2016, SIAM J. Sci. Comput.
    38, A712) instead of the paper's Euler scheme: half kick B (r -= h/2 L^T dU~), half drift A
    (theta += h/2 L r), half thermostat D (xi += h/2 (r^T r / n - 1)), the friction and noise O solved
    exactly for fixed xi (r <- e^{-xi h} r + sqrt(A (1 - e^{-2 xi h}) / xi) nu), then D, A, B in reverse.
    One stochastic subgradient per step: the last half kick's is carried to the next step's first.
    Why not eq. 14's Euler update: its invariant law is off by O(h), and on the hinge's skewed posteriors
    that moves the MEANS: on the 351 x 34 accuracy benchmark (full batch, h = 0.1, three 4 x 24,000-step
    runs pooled) Euler's means were 0.097 posterior sd off the exact Gibbs reference (rms 0.048 after
    removing the Monte Carlo error; z^2 averaged 7.8 over the 35 parameters, 1 for no bias), the splitting's
    0.036 (z^2 0.78: no bias detectable), with one subgradient per step as before (12-15 vs 11-12 CPU s
    for 24,000 steps of 4 chains on a loaded machine).
    ``init``: r_0 ~ N(0, I) and xi_0 = A, as in the paper (sec. 2.4)."""

    def __init__(self, potential: Potential, diffusion: float):
        self.potential, self.diffusion = potential, float(diffusion)

    def init(self, rng, theta0) -> SGNHTState:
        theta = np.asarray(theta0, dtype=float)
        return SGNHTState(theta, rng.standard_normal(theta.shape), np.full(theta.shape[0], self.diffusion))

    def step(self, rng, state: SGNHTState, tuning: Tuning):
        L = tuning.factor
        theta, r, xi, g, U0 = state
        if g is None:  # first step, or the state was reset (a new metric)
            U0, g = self.potential(rng, theta, tuning.cv)
        C, n = theta.shape
        h = _col(tuning.step_size, C)
        half = 0.5 * h
        r = r - half * apply_factor_t(L, g)
        r_a = r
        xi = xi + half[:, 0] * (np.einsum("cp,cp->c", r, r) / n - 1.0)
        r = np.exp(-xi[:, None] * h) * r + np.sqrt(self.diffusion * _ou_variance(xi[:, None], h)) \
            * rng.standard_normal(r.shape)
        xi = xi + half[:, 0] * (np.einsum("cp,cp->c", r, r) / n - 1.0)
        # the two half drifts (with the momentum before and after O) in one product
        theta = theta + apply_factor(L, half * (r_a + r))
        U, g = self.potential(rng, theta, tuning.cv)
        r = r - half * apply_factor_t(L, g)
        info = StepInfo(U0, _nan(C), _nan(C), ~np.isfinite(U0), _nan(C), h[:, 0], xi, None, g * g)
        return SGNHTState(theta, r, xi, g, U), info


# --------------------------------------------------------------------------- exact Gibbs (Polson & Scott)
class GibbsState(NamedTuple):
    theta: np.ndarray


class Gibbs:
    """One data-augmentation sweep per step (``gibbs.py``); ``tuning`` is unused."""

    def __init__(self, model: HingeModel, X: np.ndarray, y: np.ndarray):
        self.model, self.X, self.y = model, X, y

    def init(self, rng, theta0):
        return GibbsState(np.atleast_2d(np.asarray(theta0, dtype=float)))

    def step(self, rng, state, tuning=None):
        theta, U = gibbs_step(rng, state.theta, self.X, self.y, self.model.c, self.model.l)
        C = theta.shape[0]
        return GibbsState(theta), StepInfo(U, _nan(C), _nan(C), ~np.isfinite(U), _nan(C), _nan(C), _nan(C))


# --------------------------------------------------------------------------- adaptation
class DualAveraging(NamedTuple):
    """Per-chain dual-averaging step-size adaptation (Hoffman & Gelman 2014, sec. 3.2.1)."""

    log_step: np.ndarray
    log_step_bar: np.ndarray
    h_bar: np.ndarray
    t: int
    mu: np.ndarray


def dual_averaging_init(step_size: np.ndarray) -> DualAveraging:
    s = np.log(np.asarray(step_size, dtype=float))
    return DualAveraging(s, s.copy(), np.zeros_like(s), 0, np.log(10.0) + s)


def dual_averaging_update(da: DualAveraging, accept_prob: np.ndarray, target: float,
                          gamma: float = 0.05, t0: float = 10.0, kappa: float = 0.75) -> DualAveraging:
    t = da.t + 1
    accept_prob = np.where(np.isfinite(accept_prob), accept_prob, 0.0)
    h_bar = (1.0 - 1.0 / (t + t0)) * da.h_bar + (target - accept_prob) / (t + t0)
    log_step = da.mu - np.sqrt(t) / gamma * h_bar
    w = t ** (-kappa)
    return DualAveraging(log_step, w * log_step + (1.0 - w) * da.log_step_bar, h_bar, t, da.mu)


class AdaptState(NamedTuple):
    """Per-chain-group adaptation state (everything has the group's chain axis)."""

    da: DualAveraging | None
    sq_avg: np.ndarray | None  # AdaGrad running mean of squared subgradients (C, p)
    window: list  # chain states collected in the current metric window


class WindowAdaptation:
    """Burn-in adaptation, as an init / update / final object.

    - ``adapt_step`` (hmc): per-chain dual averaging towards ``target_accept``; the sampling phase uses
      each chain's averaged step exp(log_step_bar). In burn-in HMC's leapfrog count follows the step the
      current stage started from (``Tuning.count_step`` = exp(mu) / 10), not the averaging's probes.
    - ``adagrad`` (sgld/sgnht): per-chain diagonal RMS of stochastic subgradients (as in pSGLD), frozen at
      the end of burn-in so the chain is a valid fixed-metric sampler.
    - ``windows`` [(start, end, every)]: chain states of iterations start <= t < end (every ``every``-th)
      are kept; at t = end - 1 the driver pools every chain's window (``pool``) into a new dense factor,
      as in Stan's windowed adaptation."""

    def __init__(self, n_burnin: int, target_accept: float = 0.8, adapt_step: bool = False,
                 adagrad: bool = False, windows=()):
        self.n_burnin, self.target_accept = int(n_burnin), float(target_accept)
        self.adapt_step, self.adagrad, self.windows = bool(adapt_step), bool(adagrad), list(windows)

    def init(self, tuning: Tuning) -> AdaptState:
        da = dual_averaging_init(tuning.step_size) if self.adapt_step else None
        return AdaptState(da, None, [])

    def window_end(self, t: int) -> bool:
        return any(t == end - 1 for _, end, _ in self.windows)

    def sync_points(self) -> list[int]:
        """Iterations after which the driver must gather all chains (window ends, end of burn-in)."""
        return sorted({end for _, end, _ in self.windows} | {self.n_burnin})

    def update(self, astate: AdaptState, t: int, theta: np.ndarray, info: StepInfo, tuning: Tuning):
        """After iteration t (in burn-in): returns (astate, tuning)."""
        if t >= self.n_burnin:
            return astate, tuning
        da, sq, window = astate
        if da is not None:
            da = dual_averaging_update(da, info.accept_prob, self.target_accept)
            # the step count stays that of the stage's starting step (exp(mu) / 10): the dual averaging's
            # early probes of small steps would otherwise take many leapfrog steps, and a group of chains
            # integrates as long as its longest trajectory (at 20,000 x 20, 1.5x the mean in burn-in)
            tuning = tuning._replace(step_size=np.exp(da.log_step), count_step=np.exp(da.mu) / 10.0)
        if self.adagrad and info.grad_sq is not None:
            sq = info.grad_sq if sq is None else 0.99 * sq + 0.01 * info.grad_sq
            tuning = tuning._replace(factor=Diagonal(1.0 / np.sqrt(1e-8 + np.sqrt(sq))))
        for start, end, every in self.windows:
            if start <= t < end and (t - start) % every == 0:
                window = window + [theta.copy()]
        return AdaptState(da, sq, window), tuning

    def stage_tuning(self, astate: AdaptState, tuning: Tuning) -> Tuning:
        """``tuning`` with the leapfrog count's step of the current stage (exp(mu) / 10, what ``update``
        sets from the next iteration on; after ``restart_step`` ``tuning`` still holds the old stage's),
        for predicting what the chains' next iterations cost."""
        if astate.da is None or tuning.count_step is None:  # no dual averaging, or the sampling phase's
            return tuning
        return tuning._replace(count_step=np.exp(astate.da.mu) / 10.0)

    def restart_step(self, astate: AdaptState, tuning: Tuning) -> AdaptState:
        """After a metric change the step size is re-adapted from its current value."""
        if astate.da is None:
            return astate._replace(window=[])
        return AdaptState(dual_averaging_init(tuning.step_size), astate.sq_avg, [])

    def final(self, astate: AdaptState, tuning: Tuning) -> Tuning:
        """The tuning of the sampling phase."""
        if astate.da is not None:
            tuning = tuning._replace(step_size=np.exp(astate.da.log_step_bar), count_step=None)
        return tuning

    @staticmethod
    def pool(window_draws: np.ndarray, L_old, ess_fn):
        """New factor L = chol(Sigma) from window draws (W, C, p), returns (L, mean of the draws).

        Sigma = w Sigma_hat + (1 - w) Sigma_old with w = N_eff / (N_eff + p + 5), N_eff the smallest bulk
        ESS of the window: a sample covariance from poorly mixed chains underestimates the slow directions
        and would feed on itself, so it only takes over once the window holds many effective draws
        relative to the dimension. Keeps the old factor if the result is not positive definite."""
        W, C, p = window_draws.shape
        flat = window_draws.reshape(-1, p)
        n_eff = float(np.nanmin(ess_fn(np.swapaxes(window_draws, 0, 1)))) if W >= 8 and C >= 1 else 0.0
        n_eff = max(n_eff, 0.0) if np.isfinite(n_eff) else 0.0
        w = n_eff / (n_eff + p + 5.0)
        Sigma = w * np.cov(flat.T).reshape(p, p) + (1.0 - w) * (L_old @ L_old.T)
        try:
            return np.linalg.cholesky(Sigma), flat.mean(axis=0)
        except np.linalg.LinAlgError:
            return L_old, flat.mean(axis=0)


def polynomial_step(h0: float, t: int, b: float, gamma: float) -> float:
    """h_t = h0 (1 + t / b)^-gamma (Welling & Teh 2011's schedule, as used for SSGLD)."""
    return float(h0 * (1.0 + t / b) ** (-gamma))
