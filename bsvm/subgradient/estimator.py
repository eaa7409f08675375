"""scikit-learn estimators: ``SubgradientHMC`` (subgradient HMC / SSGLD / SSGNHT) and ``GibbsSVM``.

Both sample the same posterior (standard normal prior, pseudo-likelihood exp(-c max(0, l - y f(x)))) and
expose the same layout: ``samples_`` has shape (n_chains, n_draws, n_params) and, with ``features=None``,
a binary model's parameters are the raw features' weights followed by the bias. So their draws can be
overlaid directly.

The estimators only wire parts together: an engine and the burn-in adaptation (``samplers.py``), the
segment runner (``driver.py``), independent per-chain seeds and joblib workers (:mod:`bsvm.chains`), the
stopping rule (:mod:`bsvm.convergence`) and the ArviZ output (:mod:`bsvm.draws`).
"""

from __future__ import annotations

import math
import numbers
import time

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._userwarn import warn_user
from ..base import BayesianClassifier, NumericalError, log_odds_scores
from ..chains import (
    ChainPool,
    ChainRNG,
    balanced_groups,
    chain_groups,
    chain_seeds,
    in_chain_order,
    join_chains,
    parallel_threshold_seconds,
    resolve_n_jobs,
    take_chains,
)
from ..convergence import (
    ConvergenceMonitor,
    StoppingRule,
    assess,
    combine,
    ess_targets_met,
    monitor_rows,
    warn_not_converged,
    warn_single_chain,
)
from ..cost import estimate
from ..data import check_predict_data
from ..diagnostics import rank_diagnostics
from ..draws import NOT_TRAINING_ROWS, pointwise_log_likelihood, proba_draws_chunked, rows_digest, to_datatree
from ..params import (
    RANDOM_STATE,
    Interval,
    IntInterval,
    Real,
    StrOptions,
    non_negative,
    non_negative_int,
    positive,
    positive_int,
)
from . import samplers as S
from .driver import (
    STAT_NAMES,
    Carry,
    EngineSpec,
    GrowingDraws,
    Plan,
    PreparedDesign,
    attach_screen,
    run_segment,
)
from .features import fit_feature_map, transform
from .laplace import find_mode, laplace_pilot, per_datum_noise
from .potential import (
    ChainLayout,
    HingeModel,
    control_variate,
    normalised_likelihood,
    scores,
    signed_design,
)

SAMPLERS = ("hmc", "sgld", "sgnht")
#: caps of the default sgld / sgnht step in whitened coordinates (SubgradientHMC._default_sg_step)
_SGHMC_CAPS = {"sgld": 0.35, "sgnht": 0.3}
PRECONDITIONERS = (None, "laplace", "adagrad")
RULE = StoppingRule()

#: default max_iter after burn-in when n_samples="auto": transitions (hmc), sweeps (gibbs), steps (sg)
_DEFAULT_MAX_ITER = {"hmc": 50_000, "gibbs": 50_000, "sgld": 1_000_000, "sgnht": 1_000_000}


def _check_int(name, value, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_pos(name, value, allow_zero=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value) and \
        (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, "
                         f"got {value!r}")
    return float(value)


def _slice_tuning(tuning: S.Tuning, g: np.ndarray) -> S.Tuning:
    f = tuning.factor
    if isinstance(f, S.Diagonal) and np.ndim(f.d) == 2:
        f = S.Diagonal(f.d[g])
    count = None if tuning.count_step is None else np.asarray(tuning.count_step)[g]
    return tuning._replace(step_size=np.asarray(tuning.step_size)[g], factor=f, count_step=count)


def _split_carry(carry: Carry, groups, n_chains: int) -> list[Carry]:
    """One group's carry split into the given groups (when a fit's chains move to the workers): the
    tuning by ``_slice_tuning`` (its metric and control variate are shared), the rest per chain."""
    return [Carry(take_chains(carry.state, g, n_chains), carry.rng[g], take_chains(carry.astate, g, n_chains),
                  _slice_tuning(carry.tuning, g), carry.kept,
                  None if carry.theta0 is None else carry.theta0[g]) for g in groups]


def _join_tunings(tunings: list, groups, n_chains: int) -> S.Tuning:
    """The inverse of ``_slice_tuning``: per-chain step sizes (and a per-chain diagonal metric) joined
    by chain; the shared parts (a dense metric, centre, control variate, screen) from the first."""
    t0 = tunings[0]

    def per_chain(values):
        return join_chains([np.broadcast_to(np.asarray(v, dtype=float), (len(g),)) for v, g in
                            zip(values, groups, strict=True)], groups, n_chains)

    f = t0.factor
    if isinstance(f, S.Diagonal) and np.ndim(f.d) == 2:
        f = S.Diagonal(join_chains([t.factor.d for t in tunings], groups, n_chains))
    count = None if t0.count_step is None else per_chain([t.count_step for t in tunings])
    return t0._replace(step_size=per_chain([t.step_size for t in tunings]), factor=f, count_step=count)


def _regroup(carries: list, groups, new_groups, n_chains: int) -> list:
    """The chains of ``carries`` (one per group of ``groups``) moved into ``new_groups``: joined by chain
    (``bsvm.chains.join_chains``; the active sets first brought to one row order), then split. No
    chain's values change: each chain's state, generator and adaptation go with it."""
    states = [c.state for c in carries]
    if getattr(states[0], "active", None) is not None:  # (one screen's order for all: normally a no-op)
        order = states[0].active.order
        states = [st._replace(active=st.active.in_order(order)) for st in states]
    joined = Carry(join_chains(states, groups, n_chains),
                   join_chains([c.rng for c in carries], groups, n_chains),
                   join_chains([c.astate for c in carries], groups, n_chains),
                   _join_tunings([c.tuning for c in carries], groups, n_chains), carries[0].kept, None)
    return _split_carry(joined, new_groups, n_chains)


def _window_ess(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS per parameter of window draws (C, W, p), vectorised over the parameters
    (``diagnostics.rank_diagnostics``: arviz-stats' numbers to ~1e-13; its own ``ess`` loops over them in
    Python: 12.1 vs 5.6 ms per window of 4 x 100 draws of 21 parameters, measured, two windows per fit)."""
    return rank_diagnostics(np.moveaxis(draws, -1, 0))[1]


class _HingeSampler(BayesianClassifier):
    """Shared data handling, the run loop, draw storage, the posterior predictive and ArviZ output."""

    _sampler_kind = "gibbs"

    def _default_burnin(self) -> int:
        return 100

    def _input_scale_rule(self):
        # the N(0, I) prior is on the weights of the raw features (features=None) or of a feature map
        # whose RBF width follows the data (gamma=None, scikit-learn's "scale")
        if self.features is None:
            return "weights"
        return "adaptive" if self.gamma is None else "unit"

    def _validate_common(self):
        self._c = _check_pos("c", self.c, allow_zero=True)
        if not (isinstance(self.l, numbers.Real) and np.isfinite(self.l)):
            raise ValueError(f"l (the margin) must be a finite number, got {self.l!r}")
        if isinstance(self.n_samples, str):
            if self.n_samples != "auto":
                raise ValueError("n_samples must be 'auto' (run until the stopping rule holds) or an "
                                 f"integer >= 1 (a fixed-length run), got {self.n_samples!r}")
            self._n_samples = None
        else:
            self._n_samples = _check_int("n_samples", self.n_samples, 1)
        self._n_burnin = (self._default_burnin() if self.n_burnin is None
                          else _check_int("n_burnin", self.n_burnin, 0))
        self._thin = _check_int("thin", self.thin, 1)
        self._resolved_run = {"burn": self._n_burnin, "thin": self._thin}  # (the progress bar's total)
        self._n_chains = _check_int("n_chains", self.n_chains, 1)
        self._n_trace = _check_int("n_trace", self.n_trace, 0)
        if self.record_every is not None:
            _check_int("record_every", self.record_every, 1)
        self._max_iter = None if self.max_iter is None else _check_int("max_iter", self.max_iter, 1)
        self._max_time = None if self.max_time is None else _check_pos("max_time", self.max_time,
                                                                        allow_zero=True)
        nj = self.n_jobs
        if nj is not None and (not isinstance(nj, numbers.Integral) or nj == 0 or isinstance(nj, bool)):
            raise ValueError(f"n_jobs must be None, a positive integer or -1 (all cores), got {nj!r}")

    def _setup(self, X, y_index, shared_rng):
        self.feature_map_ = fit_feature_map(self.features, X, self.n_components, self.gamma,
                                            int(shared_rng.integers(2 ** 31)),
                                            chosen=bool(self._changed_params(("n_components",))))
        Phi = transform(self.feature_map_, X)
        self.model_ = HingeModel(self._c, float(self.l), len(self.classes_), Phi.shape[1])
        y = self._encode_binary(y_index) if len(self.classes_) == 2 else y_index
        self._y_obs = np.asarray(y_index)
        self._X_digest = rows_digest(X)  # to_arviz(X) checks its rows are these
        P = self.model_.n_params
        self.trace_index_ = np.linspace(0, P - 1, min(self._n_trace, P)).round().astype(int)
        self.samples_ = np.empty((self._n_chains, 0, P))
        self.param_names_ = self.param_names()
        self.potential_ = np.empty((self._n_chains, 0))
        self.converged_ = False
        self.convergence_ = None
        self.stopping_rule_ = RULE.describe(len(monitor_rows(X.shape[0])), P) if self._n_samples is None \
            else f"fixed length: n_samples={self._n_samples} draws per chain after n_burnin={self._n_burnin}"
        return Phi, y

    # -- the run loop ------------------------------------------------------------------------------------
    def _chain_pool(self) -> ChainPool:
        """The fit's :class:`ChainPool`: one group per job (``chain_groups``), the threshold of
        ``bsvm.chains.set_parallel_threshold``."""
        return ChainPool(len(chain_groups(self._n_chains, resolve_n_jobs(self.n_jobs))),
                         parallel_threshold_seconds())

    def _drive(self, spec, Phi, y, y_index, seeds, theta0_rng_fn, tuning0, adaptation, monitor_every,
               window_hook=None, pool=None, row_order=None, prepared=None):
        """Generator of progress records; runs the chains in segments (see ``driver.py``). ``pool``: a
        :class:`ChainPool` made (and perhaps started, ``ChainPool.predict``) by the caller, else a new one.
        ``row_order``: a permutation of the rows, the order of the signed design's rows (binary minibatches:
        ``samplers.Potential`` then takes each minibatch as consecutive rows of it)."""
        C, n = self._n_chains, Phi.shape[0]
        B, thin = self._n_burnin, self._thin
        chain_rng = ChainRNG.from_seeds(seeds)
        theta0 = theta0_rng_fn(chain_rng)
        # one group in this process; the n_jobs groups once the chains move to the workers (ChainPool)
        final_groups = chain_groups(C, resolve_n_jobs(self.n_jobs))
        groups = [np.arange(C)]
        rows = monitor_rows(n)
        P = self.model_.n_params
        plan = Plan(B, thin, int(monitor_every), rows, spec.kind == "hmc" and P <= 3,
                    (float(getattr(self, "step_decay_b", 1000.0)), float(getattr(self, "step_decay", 0.0))))
        carries = [Carry(None, chain_rng[g], adaptation.init(_slice_tuning(tuning0, g)),
                         _slice_tuning(tuning0, g), 0, theta0[g]) for g in groups]
        store = GrowingDraws()
        monitor = ConvergenceMonitor(C, RULE)
        self._monitor_every = self.monitor_every_ = int(monitor_every)
        auto = self._n_samples is None
        if auto:
            end = B + (self._max_iter if self._max_iter is not None else _DEFAULT_MAX_ITER[spec.kind])
            budget_name = (f"max_iter={self._max_iter}" if self._max_iter is not None
                           else f"max_iter (default {_DEFAULT_MAX_ITER[spec.kind]} after burn-in)")
        else:
            end = B + self._n_samples * thin
            budget_name = f"n_samples={self._n_samples} (fixed length)"
            if self._max_iter is not None and self._max_iter < end:
                end, budget_name = self._max_iter, f"max_iter={self._max_iter}"
        if auto and self._max_iter is not None:
            end = self._max_iter  # max_iter counts every iteration, burn-in included
        planned = end if not auto else B + 4 * monitor.next_check * monitor_every * thin
        every = self.record_every or max(1, planned // 100)
        sync = adaptation.sync_points()
        compute, rate, t = 0.0, None, 0
        chains_cpu = 0.0  # CPU s of the chains' segments run in this process
        status, stop_reason, path = None, None, None
        self._stats = {}
        acc_since = []
        self.n_jobs_, self.parallel_start_ = 1, None
        self._regroups = 0  # times the chains were moved between workers to even out their work
        self._leapfrog_capped = None  # the wanted leapfrog count past samplers.HMC.MAX_LEAPFROG, if any
        with pool if pool is not None else self._chain_pool() as pool:
            Z = None
            if prepared is not None:  # made while the pilot ran (driver.PreparedDesign)
                Z = prepared.design()
            elif self.model_.n_classes == 2 and spec.kind != "gibbs":
                if row_order is None:
                    Z = signed_design(Phi, y, order=S.design_order(spec.kind, Phi.shape))
                else:
                    Z = signed_design(Phi, y, rows=row_order)
            data = (pool.share(Phi), y, None if Z is None else pool.share(Z),
                    None if Z is None or row_order is None else pool.share(row_order))
            y_rows = np.asarray(y_index)[rows]
            while True:
                resumed = time.perf_counter()
                t_prev = t
                parallel = pool.poll()  # the workers, once started (predict / offer) and answering
                if parallel and self.parallel_start_ is None:
                    carries, groups = _split_carry(carries[0], final_groups, C), final_groups
                    self.n_jobs_, self.parallel_start_ = len(groups), t
                # workers gather only where the window hook needs every chain (a gather costs a round
                # trip and the wait for the slowest group), and for hmc at the end of burn-in (below)
                stops = [end] + [s for s in sync if s > t and (not parallel or adaptation.window_end(s - 1))]
                if parallel and spec.kind == "hmc" and len(groups) > 1 and t < B:
                    stops.append(B)  # the sampling phase's step counts differ: even the groups out there
                if parallel:
                    # workers: records only at sync points and about every 2 s (each dispatch costs
                    # ~20 ms), which never changes the draws
                    if rate is not None:
                        stops.append(t + max(1, int(max(2.0, 0.1 * compute) / rate)))
                else:
                    stops.append((t // every + 1) * every)
                if auto:
                    stops.append(B + monitor.next_check * monitor_every * thin)
                t1 = max(t + 1, min(s for s in stops if s > t))
                if self._max_time is not None:
                    left = self._max_time - compute
                    span = min(max(left, 0.0), max(1.0, 0.1 * compute))
                    cap = 5 if rate is None else max(1, int(span / rate))
                    t1 = min(t1, t + cap)
                if parallel:  # the metric's screen built once here, not once per worker
                    carries = attach_screen(spec, data, carries, pool.share)
                cpu0 = time.process_time()
                outs = pool.map(run_segment, [
                    (spec, data, y_rows, adaptation, plan, carries[i], t, t1, i == 0 and plan.record_path,
                     ChainLayout(groups[i], C)) for i in range(len(groups))])
                chains_cpu += time.process_time() - cpu0
                carries = [o.carry for o in outs]
                for name in ("draws", "quantities"):
                    block = in_chain_order([getattr(o, name) for o in outs], groups)
                    if block.shape[1]:
                        store.append(name, block)
                for name in STAT_NAMES:
                    block = in_chain_order([o.stats[name] for o in outs], groups)
                    if block.shape[1]:
                        store.append(name, block)
                if outs[0].path is not None:
                    path = outs[0].path
                U_now = in_chain_order([o.potential for o in outs], groups) \
                    if all(o.potential is not None for o in outs) else None
                acc = in_chain_order([o.stats["accept_prob"] for o in outs], groups)
                if acc.size:
                    # every kept draw since the last record counts once, whatever the segments were
                    # (today each segment ends in a record, so this equals the segment's mean)
                    acc_since.append(acc.ravel())
                t_new = min(o.t_end for o in outs)
                diverged = [o.diverged_at for o in outs if o.diverged_at is not None]
                if diverged:
                    kept = min(o.carry.kept for o in outs)
                    for name in ("draws", "quantities", *STAT_NAMES):
                        store.truncate(name, kept if name != "quantities" else -(-kept // monitor_every))
                    stop_reason = "diverged"
                    t_new = min(diverged)
                elif window_hook is not None and adaptation.window_end(t_new - 1) and t_new <= B:
                    carries = window_hook(t_new - 1, carries, groups, Phi, y, pool.share)
                if parallel and not diverged and spec.kind == "hmc" and len(groups) > 1:
                    # each chain's leapfrog count follows its own step size, so contiguous groups can
                    # leave one worker a third more work (5 + 5 against 6 + 7 steps per transition at
                    # 100,000 x 50); even them out (the draws do not change)
                    # (the counts the next iterations use: a window end has just restarted the step's stage)
                    counts = in_chain_order([S.HMC.leapfrog_counts(
                        adaptation.stage_tuning(c.astate, c.tuning), len(c.rng), spec.n_leapfrog)
                        for c in carries], groups)
                    even = balanced_groups(counts, [len(g) for g in final_groups])
                    if max(counts[g].sum() for g in even) < max(counts[g].sum() for g in groups):
                        carries, groups = _regroup(carries, groups, even, C), even
                        self._regroups += 1
                if spec.kind == "hmc" and spec.n_leapfrog is None and t < B <= t_new and not diverged:
                    self._warn_capped(carries, True)
                t = t_new
                self._publish(store, carries, groups, C, P)
                checked = False
                if not diverged:
                    Q = store.view("quantities")
                    # only at the scheduled draw count: with monitor_every > 1 the quantities reach
                    # next_check up to monitor_every - 1 draws earlier, and a segment ending there (a
                    # record, a worker's time slice) would stop the run at a length that depends on
                    # the segmentation, i.e. on n_jobs and timing
                    if auto and Q is not None and monitor.due(Q.shape[1]) and \
                            self.samples_.shape[1] >= monitor.next_check * monitor_every:
                        def passes(st):
                            return st.converged or (C == 1 and not [f for f in st.failed if "ESS" in f]
                                                    and st.draws >= 4)
                        # the summaries first; the parameters only once those pass (a check costs about
                        # linearly in the quantities, and most checks fail on the summaries)
                        status = monitor.check(Q, self._quantity_names(rows, False))
                        if passes(status):
                            status = monitor.record(self._assess_all(store, rows, status), Q.shape[1])
                        checked = True
                        if passes(status):
                            stop_reason = "converged"
                    if stop_reason is None and t >= end:
                        stop_reason = "budget"
                seg_time = time.perf_counter() - resumed
                compute += seg_time
                rate = seg_time / max(1, t - t_prev)
                if stop_reason is None and self._max_time is not None and compute >= self._max_time:
                    stop_reason = "time"
                    budget_name = f"max_time={self._max_time:g} s"
                if stop_reason is None:
                    # the chains move to the workers once the rest of the run, at the CPU time per iteration
                    # their segments took in this process so far, is estimated at >= bsvm.chains' threshold
                    # (auto runs: up to twice the next check's draws); CPU, not wall, time, so the load does
                    # not decide it
                    todo = end if not auto else min(end, B + 2 * monitor.next_check * monitor_every * thin)
                    left = chains_cpu / max(1, t) * max(0, todo - t)
                    if self._max_time is not None:
                        left = min(left, self._max_time - compute)
                    pool.offer(left)
                if stop_reason is not None:
                    status = self._final_status(store, status, checked, rows)
                metrics = self._metrics(t, store, carries, groups, acc_since, monitor, status, stop_reason,
                                        U_now)
                acc_since = []
                snap = self._snapshot(carries, groups, path)
                yield t, metrics, snap
                if stop_reason is not None:
                    break
        if spec.kind == "hmc" and spec.n_leapfrog is None and t < B and stop_reason in ("budget", "time"):
            # a budget spent in burn-in: the step size reached so far (c=1e6 with max_time=2 said only "no
            # draw was kept", a review)
            self._warn_capped(carries, False)
        self._finish(status, stop_reason, budget_name, C)

    def _final_status(self, store, status, checked, rows):
        if checked and status is not None:
            return status
        Q = store.view("quantities")
        if Q is None or Q.shape[1] == 0:
            return status
        return self._assess_all(store, rows)

    def _assess_all(self, store, rows, summaries=None):
        """The rule on every monitored quantity: the log posterior and p(y|x) at the monitored rows
        (recorded at every ``monitor_every``-th kept draw) and every model parameter, at every kept draw.
        The parameters are monitored too because the log posterior and p(y|x) can look converged while
        slow directions of the weights are not: on 100,000 x 50 linear data, runs that met the rule on
        those quantities alone stopped with the weights' R-hat up to 1.016-1.021 (10-12 of 51 above 1.01)
        and bulk ESS down to 302 (docs/subgradient.md). The run loop checks the parameters only once the
        summaries pass (most checks fail on those, and a check's cost grows with the quantities).
        (The parameters were once checked at the summaries' draws only: with sgld's k = 40 at
        100,000 x 50 that capped their measured ESS near 4 chains x the summaries' count, and runs went
        on 1.3-2.2x longer for it.) ``summaries``: their assessment on the stored quantities, when the
        caller has just made it."""
        Q = store.view("quantities")
        draws = store.view("draws")[:, :Q.shape[1] * self._monitor_every]
        if summaries is None:
            summaries = assess(Q, RULE, self._quantity_names(rows, False))
        return combine([summaries,
                        assess(draws, RULE, self._quantity_names(rows)[Q.shape[-1]:])], RULE,
                       draws=draws.shape[1])

    def _quantity_names(self, rows, params=True):
        # the parameters by their names (param_names_, as to_arviz and arviz-stats' summary call them: the
        # warnings said "worst: theta[1]" for w[x1], a review)
        return ["log_posterior", *[f"p(y|x[{r}])" for r in rows], *(self.param_names_ if params else ())]

    def _warn_capped(self, carries, adapted: bool) -> None:
        """At the end of burn-in (``adapted``), or when the budget ends during it: say at once when the
        step needs more leapfrog steps than ``samplers.HMC.MAX_LEAPFROG`` for its quarter orbit (a run
        that then mixes slowly would otherwise be silent until its budget ran out: c = 1e6 on 150 rows
        ran for hours, a library user's review)."""
        h = np.concatenate([np.ravel(c.tuning.step_size) for c in carries])
        wanted = np.concatenate([S.HMC.wanted_counts(c.tuning, len(c.rng)) for c in carries])
        self._leapfrog_capped = float(wanted.max()) if wanted.max() > S.HMC.MAX_LEAPFROG else None
        if self._leapfrog_capped is None:
            return
        how = ("burn-in adapted the step size to" if adapted else
               "burn-in, stopped by the budget, had the step size at")
        warn_user(f"{type(self).__name__}: {how} {h.min():.2g}, so a transition "
                  f"would take {self._leapfrog_capped:,.0f} leapfrog steps; they are capped at "
                  f"{S.HMC.MAX_LEAPFROG:,}, so each transition moves little and the chains will mix slowly "
                  f"(the run may use its whole budget). The posterior is very sharply curved: c={self.c:g} "
                  "is large for this data, or the features are far from unit scale. Lower c, standardise "
                  "the features, or set max_time.", ConvergenceWarning)

    def _finish(self, status, stop_reason, budget_name, C):
        self.convergence_ = status
        self.converged_ = bool(status is not None and status.converged and stop_reason != "diverged")
        name = type(self).__name__
        if stop_reason == "diverged":
            h = getattr(self, "step_size", None)  # (GibbsSVM has none)
            curved = (f"this posterior is extremely curved (c={self.c:g} is large for this data, or the "
                      "features are far from unit scale): standardise the features or lower c.")
            if h is not None:
                advice = (f"step_size={h:g} is too large for this posterior: lower it, or leave "
                          "step_size=None (the sampler's own choice).")
            elif getattr(self, "_sampler_kind", "") == "hmc" and self._n_burnin > 0:
                advice = "The step size adapted in burn-in could not follow it: " + curved
            else:
                advice = "The sampler's default step could not follow it: " + curved
            if self.samples_.shape[1] == 0:
                # no draw to keep: a fit that raises leaves the estimator as it was (it kept (C, 0, P)
                # samples and could not predict, a review)
                raise NumericalError(f"{name}: the sampler diverged (a non-finite state) before keeping any "
                                     f"draw, so the fit failed and the estimator is as it was. {advice}")
            warn_user(f"{name}: the sampler diverged (a non-finite state); the run stopped and keeps the "
                      f"{self.samples_.shape[1]} draws per chain made before it. {advice}",
                      ConvergenceWarning)
            return
        if self.converged_:
            return
        # one chain: R-hat cannot be had at any budget; when the ESS targets were met (a run to the rule,
        # or a fixed length that reached them), say that, not "raise the budget" (a review)
        if C == 1 and status is not None and (stop_reason == "converged" or ess_targets_met(status)):
            warn_single_chain(name, RULE, fixed=stop_reason != "converged")
            return
        checked = RULE.describe(len(monitor_rows(len(self._y_obs))), self.samples_.shape[-1])
        warn_not_converged(name, status, budget_name, RULE, draws=self.samples_.shape[1], rule_text=checked,
                           cause=self._stuck_cause())

    def _stuck_cause(self) -> str | None:
        """hmc: why the chains hardly moved, when the kept draws show it (mean acceptance under 0.1, or a
        divergence in over a tenth of the transitions): a fixed ``step_size`` too large (it is not
        adapted when given), else a posterior too curved for the adapted one. The warning only said
        "raise the budget" after 50,000 iterations at acceptance 0.009 (a review)."""
        acc, div = self.accept_prob_, self.diverging_
        if acc is None or acc.size == 0:
            return None
        rate, share = float(np.mean(acc)), float(np.mean(div)) if div is not None and div.size else 0.0
        if rate >= 0.1 and share <= 0.1:
            return None
        seen = (f"the mean acceptance was {rate:.3f} and {share:.0%} of the kept transitions diverged, so "
                "the chains hardly moved")
        if self.step_size is not None:
            return (f"{seen}: step_size={self.step_size:g} is used as given (it is adapted only when None) "
                    f"and is too large for this posterior; lower it or leave step_size=None")
        if self._n_burnin == 0:
            # (no burn-in: the step was never adapted, and "too curved for the adapted step" sent the user
            # to c and the features, a review; with a burn-in the same c = 1e4 ran at acceptance 0.2-0.3)
            return (f"{seen}: with n_burnin=0 the step size was never adapted; give the run a burn-in "
                    "(n_burnin=None, the default, adapts it)")
        return (f"{seen}: the posterior is too sharply curved for the adapted step (c={self.c:g} is "
                "large for this data, or the features are far from unit scale); standardise the features or "
                "lower c")

    def _publish(self, store, carries, groups, C, P):
        """Fitted attributes from the run so far (views of the growing buffers)."""
        if carries[0].state is not None:
            self.theta_ = in_chain_order([c.state.theta for c in carries], groups)
        self.samples_ = store.view("draws", (C, 0, P))
        self.potential_ = store.view("potential", (C, 0))
        self._stats = {k: store.view(k, (C, 0)) for k in STAT_NAMES}
        self.log_posterior_quantities_ = store.view("quantities")
        self.step_size_ = in_chain_order([np.broadcast_to(c.tuning.step_size, (len(c.rng),))
                                          for c in carries], groups)

    def _metrics(self, t, store, carries, groups, acc_since, monitor, status, stop_reason, U_now=None):
        """``U_now``: the chains' full-data potential at their current states, sent by segments that kept
        no draw (burn-in) and by the minibatch samplers' segments (driver.SegmentOut.potential); else the
        last kept draw's, which is exact for hmc and gibbs."""
        if U_now is not None and np.all(np.isfinite(U_now)):
            U = float(np.mean(U_now))
        else:
            U = float(np.mean(self.potential_[:, -1])) if self.potential_.shape[1] else math.nan
        m = {"potential": U, "n_burnin": float(self._n_burnin),
             "burnin": float(t <= self._n_burnin), "n_draws": float(self.samples_.shape[1]),
             "step_size": float(np.mean(self.step_size_))}
        m.update(RULE.metrics())
        st = status if status is not None else monitor.status
        if st is not None:
            m.update(st.metrics())
        else:
            m.update({"rhat": math.nan, "ess_bulk": math.nan, "ess_tail": math.nan, "converged": 0.0})
        m["draws"] = float(self.samples_.shape[1])
        acc = np.concatenate(acc_since) if acc_since else np.empty(0)
        if acc.size and np.isfinite(acc.mean()):
            m["acceptance"] = float(acc.mean())
        if carries[0].state is not None and hasattr(carries[0].state, "xi"):
            m["xi"] = float(np.mean(in_chain_order([c.state.xi for c in carries], groups)))
        if stop_reason is not None:
            m["stopped"] = {"converged": 1.0, "budget": 2.0, "time": 3.0, "diverged": 4.0}[stop_reason]
        return m

    def _snapshot(self, carries, groups, path):
        theta = self.theta_
        snap = {"coords": theta[:, self.trace_index_].copy(), "trace_index": self.trace_index_}
        U = self._stats.get("potential")
        if U is not None and U.shape[1]:
            snap["potential"] = U[:, -1].copy()
        if path is not None:
            snap["leapfrog_path"] = np.asarray(path)
        if carries[0].state is not None and hasattr(carries[0].state, "xi"):
            snap["xi"] = in_chain_order([c.state.xi for c in carries], groups)
        return snap

    # -- draws out -----------------------------------------------------------------------------------------
    def _draws(self):
        D = self.samples_.reshape(-1, self.samples_.shape[-1])
        return D if len(D) else self.theta_

    def predict_proba(self, X):
        """Posterior predictive, averaged over all kept draws of all chains; columns follow ``classes_``.

        Binary: the mean over draws of the normalised pseudo-likelihood
        p(classes_[1] | x, theta) = psi(+1) / (psi(+1) + psi(-1)), psi(y) = exp(-c max(0, l - y f(x))).
        Multi-class: the mean over draws of a softmax over classes y of -c max(0, l + max_{y' != y} f_y'(x)
        - f_y(x)) (the normalised multi-class pseudo-likelihood of eq. 20; equal to the binary rule for
        K = 2). Before any draw is kept (a fit stopped in burn-in), the chains' current states are used."""
        return super().predict_proba(X)

    def _predict_proba(self, X):
        Phi = transform(self.feature_map_, X)
        D = self._draws()
        chunk = max(1, int(2e6 // max(1, Phi.shape[0] * self.model_.n_blocks)))
        total = np.zeros((Phi.shape[0], len(self.classes_)))
        for s in range(0, len(D), chunk):
            total += normalised_likelihood(self.model_, scores(self.model_, D[s:s + chunk], Phi)).sum(axis=0)
        return total / len(D)

    def predict_proba_draws(self, X) -> np.ndarray:
        """p(class | x, theta) for every kept draw: shape (n_chains, n_draws, n_rows, n_classes), columns
        following ``classes_`` (``predict_proba`` is its mean over chains and draws). Before any draw is
        kept, the chains' current states are the one draw per chain."""
        X = check_predict_data(self, X)
        Phi = transform(self.feature_map_, X)
        C = self.samples_.shape[0]
        D = self.samples_.reshape(-1, self.samples_.shape[-1]) if self.samples_.shape[1] else self.theta_
        return proba_draws_chunked(lambda d: normalised_likelihood(self.model_, scores(self.model_, d, Phi)),
                                   D, C, Phi.shape[0], len(self.classes_))

    def _feature_labels(self) -> list[str]:
        """The weights' feature names: the fitted DataFrame's columns (``feature_names_in_``), else ``x0``,
        ``x1``, ... by position; ``f0``, ... for a feature map's coordinates (they are not the columns).
        (Positional names only: an iris DataFrame's tree read w[setosa, x0], a library user's review.)"""
        d = self.model_.n_features
        if self.feature_map_ is not None:
            return [f"f{j}" for j in range(d)]
        names = getattr(self, "feature_names_in_", None)
        if names is not None and len(names) == d:
            return [str(n) for n in names]
        return [f"x{j}" for j in range(d)]

    def param_names(self) -> list[str]:
        """Names of ``samples_``'s columns (``param_names_``): the weight of each input column, ``w[x0]``
        (0-based, or the fitted DataFrame's column name; ``w[f0]`` for a feature map's coordinates), then
        the bias ``b``; with 3+ classes one block per class, ``w[<class>, x0]`` ... ``b[<class>]``."""
        names = self._feature_labels()
        if self.model_.n_blocks == 1:
            return [f"w[{n}]" for n in names] + ["b"]
        return [name for k in range(self.model_.n_blocks)
                for name in [f"w[{self.classes_[k]}, {n}]" for n in names] + [f"b[{self.classes_[k]}]"]]

    def to_arviz(self, X=None):
        """The kept draws as an ArviZ DataTree (arviz-base schema = ArviZ 1.x): ``posterior`` ``w``
        (chain, draw, feature) and ``b`` (chain, draw), with 3+ classes ``w`` (chain, draw, class, feature)
        and ``b`` (chain, draw, class), the features named as the fitted DataFrame's columns, else ``x0``,
        ``x1``, ... by position (``f0`` ... for a feature map's coordinates), as in ``param_names_``;
        ``sample_stats``
        ``lp`` (the log posterior -U; sgld/sgnht: its minibatch estimate), ``acceptance_rate``,
        ``step_size``, ``energy``, ``diverging``, ``n_steps`` (hmc), ``thermostat`` (sgnht);
        ``observed_data`` ``y`` (the training labels). ``arviz_stats.summary(est.to_arviz())`` works.

        ``X``: the training rows, in the order given to ``fit`` (checked against a fingerprint of them:
        the fit keeps no copy). Then ``log_likelihood`` ``y`` (chain, draw, row) holds log p(y_i | x_i, theta)
        under the normalised likelihood the predictions use (``predict_proba_draws``), and
        ``constant_data`` ``X`` the rows, so ``arviz_stats.loo`` runs on the tree. It is approximate:
        the posterior's own factor is the unnormalised hinge pseudo-likelihood exp(-c [l - y f]+), and
        the normalised one divides it by Z(f) = e^{-c [l - f]+} + e^{-c [l + f]+}, which lies in
        [2 e^{-c l}, 1 + e^{-2 c l}] and varies between draws (a review measured a max / min over draws of
        1.54 at c = 1 and 56 at c = 5 on Ripley-like data), so PSIS treats the posterior as if its
        likelihood were the normalised one; the smaller c l, the closer. Refused when the draws' class
        probabilities would exceed ``bsvm.draws.MAX_LOG_LIKELIHOOD`` numbers."""
        check_is_fitted(self, "samples_")
        ll, const = None, None
        if X is not None and self.samples_.shape[1]:  # (no draws: to_datatree says so, before any work)
            C, D = self.samples_.shape[:2]
            Xc = check_predict_data(self, X)
            # other rows of the same count were scored against the training labels, silently (a review)
            # (a fit pickled before the fingerprint existed has none: its rows are taken on trust, as then)
            digest = getattr(self, "_X_digest", None)
            if Xc.shape[0] == len(self._y_obs) and digest is not None and rows_digest(Xc) != digest:
                raise ValueError(NOT_TRAINING_ROWS)
            ll = {"y": pointwise_log_likelihood(self.predict_proba_draws, X, self._y_obs, C, D,
                                                len(self.classes_))}
            const = {"X": Xc}
        st = self._stats
        stats = {"lp": -self.potential_}
        kind = self._sampler_kind
        if kind == "hmc":
            stats.update({k: st[k] for k in ("accept_prob", "step_size", "energy", "n_leapfrog")})
            stats["diverging"] = st["diverging"].astype(bool)
        elif kind in ("sgld", "sgnht"):
            stats["step_size"] = st["step_size"]
            if kind == "sgnht":
                stats["xi"] = st["xi"]
        # named variables, as a PyMC or NumPyro model's: one "theta" with a text "param" coordinate made
        # var_names=["w"] impossible in arviz-plots (a crawl)
        C, D, P = self.samples_.shape
        K, d = self.model_.n_blocks, self.model_.n_features
        blocks = self.samples_.reshape(C, D, K, d + 1)
        feature = self._feature_labels()
        if K == 1:
            posterior = {"w": blocks[:, :, 0, :d], "b": blocks[:, :, 0, d]}
            dims = {"w": ["feature"], "b": []}
            coords = {"feature": feature}
        else:
            posterior = {"w": blocks[..., :d], "b": blocks[..., d]}
            dims = {"w": ["class", "feature"], "b": ["class"]}
            coords = {"feature": feature, "class": list(self.classes_[:K])}
        X_dims = ["row", "feature"] if self.feature_map_ is None else ["row", "input"]
        return to_datatree(posterior, stats, {"y": np.asarray(self.classes_)[self._y_obs]},
                           dims={**dims, "y": ["row"], "X": X_dims},
                           coords=coords,
                           attrs={"sampler": kind, "stopping_rule": self.stopping_rule_,
                                  "converged": int(bool(self.converged_))},
                           log_likelihood=ll, constant_data=const)

    def decision_function(self, X):
        """Scores consistent with ``predict_proba``: binary, the log-odds log(p1 / p0) of the posterior
        predictive (positive means classes_[1]); multi-class, the log predictive probabilities (n, K).
        (The posterior-mean linear score would not be: the predictive averages nonlinear terms.)"""
        return log_odds_scores(self.predict_proba(X))

    @property
    def accept_prob_(self):
        """hmc's Metropolis-Hastings acceptance probability at each kept draw (n_chains, n_draws); None
        for the samplers without that test (sgld, sgnht, Gibbs), as ``energy_`` (a NaN array made
        ``hasattr`` useless to tell the samplers apart, a library user's review)."""
        return self._stats["accept_prob"] if self._sampler_kind == "hmc" else None

    @property
    def energy_(self):
        """The Hamiltonian's value at each kept draw, (n_chains, n_draws), for the energy plot and BFMI;
        None for the minibatch samplers, which have no Hamiltonian to record."""
        return self._stats["energy"] if self._sampler_kind == "hmc" and "energy" in self._stats else None

    @property
    def diverging_(self):
        """hmc's divergent transitions at each kept draw, (n_chains, n_draws) bool: an energy error above
        1000 or a non-finite one (as Stan and NumPyro flag them); None for the other samplers."""
        if self._sampler_kind != "hmc" or "diverging" not in self._stats:
            return None
        return np.asarray(self._stats["diverging"], dtype=bool)

    @property
    def acceptance_rate_(self):
        """hmc's mean acceptance per chain over the kept draws; None for the other samplers."""
        a = self.accept_prob_
        if a is None:
            return None
        return a.mean(axis=1) if a.shape[1] else np.full(a.shape[0], np.nan)

    @property
    def xi_(self):
        """sgnht's thermostat at each kept draw (n_chains, n_draws); None for the other samplers."""
        return self._stats["xi"] if self._sampler_kind == "sgnht" else None


_RUN_DOC = """
    Run length (the stopping rule, shared by every bsvm sampler; :mod:`bsvm.convergence`):
    n_samples="auto" (default) runs burn-in, then keeps draws until rank-normalised split R-hat <= 1.01 and
    bulk and tail ESS >= 400 (Vehtari et al. 2021, arviz-stats) hold on the log posterior, on p(y|x) at
    20 fixed training rows (evenly spaced row indices) and on every model parameter (the weights can mix
    more slowly than those summaries; sgld/sgnht compute the log posterior and p(y|x), a pass over all
    the data, at every k-th kept draw, k = ceil(n / (2.5 m)) for minibatches of m rows, so those passes
    cost about a quarter of the fit, and check the parameters at every draw; ``monitor_every_`` = k).
    The rule is checked at geometrically spaced draw
    counts (x1.25 to x1.5 apart), so checks stay cheap. It stops there, or when ``max_iter`` (iterations,
    burn-in included; default: burn-in + {max_iter}) or ``max_time`` (seconds of computation; default
    None, no limit) is spent; then a ``ConvergenceWarning`` names the budget and what failed. An integer
    n_samples is a fixed-length run (draws per chain after thinning); it is checked once at its end and
    warns the same way when the rule does not hold. With n_chains=1, R-hat is undefined: the run stops on
    ESS alone and warns that convergence was not checked. A diverging run (non-finite state) stops with a
    warning and keeps the draws made before. Progress records carry rhat, ess_bulk, ess_tail (worst over
    the monitored quantities), draws, converged and the thresholds rhat_target, ess_target; potential,
    the chains' mean full-data U at their current states (burn-in included, so a user sees the chains
    settle); burnin (1 until n_burnin iterations are done) and n_burnin.
    n_jobs : chains run in n_jobs groups, in joblib workers (None: 1; -1: all cores;
    ``joblib.parallel_config`` chooses the backend, e.g. "dask" for a dask.distributed cluster). Each chain
    has its own seed (``SeedSequence.spawn``) and its own products with the data, so the same random_state
    gives the same draws whatever n_jobs and wherever a group runs. When workers pay off (the rule,
    :class:`bsvm.chains.ChainPool`): a fit starts in this process and moves its chains to the workers
    only once the rest of the run, at the CPU time per iteration that the chains took so far in this
    process, is estimated at >= 1 CPU s
    (``bsvm.chains.set_parallel_threshold``; 0 = from the start); the workers start in the background
    meanwhile. A fit that ``bsvm.cost`` predicts at >= 3x that threshold (``ChainPool.predict_factor``;
    e.g. 100,000 x 50 hmc, ~7 s predicted; not 20,000 x 20, ~1.8 s) starts them before its pilot and
    moves from the first segment. The rest of the run is the budget left (n_samples, max_iter,
    max_time) or, for n_samples="auto", the iterations up to twice the next scheduled check's draws.
    Small fits therefore stay in one process (worker start-up and a round trip per segment would cost
    more than they save).
    Fitted: ``n_jobs_`` (processes the chains ran in at the end: 1 = this process) and
    ``parallel_start_`` (the iteration at which they moved, None if they never did).
"""


# The posterior, run-length, feature-map and recording entries both samplers of this module share
# (bsvm/params.py tables)
_RUN_CONSTRAINTS = {
        "c": [non_negative()],
        "l": [Interval(Real, None, None, closed="neither")],
        "n_samples": [StrOptions({"auto"}), positive_int()],
        "n_burnin": [None, non_negative_int()],
        "thin": [positive_int()],
        "n_chains": [positive_int()],
        "max_iter": [None, positive_int()],
        "max_time": [None, non_negative()],
        "n_jobs": [None, IntInterval(1, None, closed="left"), IntInterval(None, -1, closed="right")],
        "features": [None, StrOptions({"nystroem", "rff"})],
        "n_components": [positive_int()],
        "gamma": [None, positive()],
        "record_every": [None, positive_int()],
        "n_trace": [non_negative_int()],
        "random_state": RANDOM_STATE,
}


class SubgradientHMC(_HingeSampler):
    __doc__ = """Bayesian SVM by stochastic subgradient MCMC (Hu, Zhu & Zhang 2016, sec. 3).

    Posterior (sec. 3.3): N(0, I) prior on theta = [w, b] (per class for K > 2) times
    prod_d exp(-c max(0, l - y_d f(x_d))) (binary) or eq. 20's multi-class hinge.

    Parameters
    ----------
    sampler : "hmc" (full-batch subgradient HMC, leapfrog + Metropolis-Hastings, eq. 9), "sgld" (SSGLD,
        eq. 13) or "sgnht" (SSGNHT, eq. 14). sgld and sgnht have no Metropolis correction: their
        discretisation bias is invisible to the stopping rule, which checks mixing. Against GibbsSVM none
        was detectable at c = 1 and 100, but on a very sharp posterior it shows: Ripley's 250 rows at
        c = 1e4 (8 seeds pooled), sgld's means up to 0.13 and sgnht's up to 0.09 posterior sd off, sgnht's
        sds 8-10 % small, while hmc's were within 0.04 sd and 3 %. Use "hmc" for sharply curved
        posteriors (large c, few rows).
    c, l : cost and margin of the pseudo-likelihood (c >= 0; c -> 0 leaves the prior).
    n_samples : "auto" or draws kept per chain (after thinning), see "Run length". n_burnin : discarded
        iterations (adaptation happens here); None: 200 (hmc) or 500 (sgld/sgnht). thin : keep every
        thin-th iteration. n_chains : independent
        chains from dispersed starts. max_iter, max_time, n_jobs : see "Run length".
    batch_size : minibatch size for sgld/sgnht (None: min(n, 1000)); hmc always uses the full data. On
        two classes a minibatch is batch_size consecutive rows, from a uniform start (wrapping), of the
        training rows in an order shuffled once per fit from ``random_state``: every row is in it with
        probability batch_size / n, so eq. 7's estimate is unbiased, and a contiguous block costs half a
        gather of scattered rows. More classes: batch_size rows drawn with replacement.
    step_size : h (hmc: None = adapted per chain by dual averaging in burn-in towards ``target_accept``;
        a number is used as given, fixed for the whole run, and ``target_accept`` is then unused;
        sgld/sgnht: h0 of the schedule h_t = h0 (1 + t / step_decay_b)^-step_decay,
        None = chosen from the estimated minibatch noise with the laplace preconditioner, see
        ``_default_sg_step``; 0.3 with adagrad; 0.01 with the identity).
    n_leapfrog : leapfrog steps per HMC trajectory; None (default): ceil((pi / 2) / h) per chain, an
        integration time of a quarter orbit in the whitened coordinates (see ``samplers.HMC``).
        target_accept : dual-averaging target.
    step_decay, step_decay_b : gamma and b of the polynomial decay (gamma = 0: constant step).
    diffusion : A of SSGNHT (the thermostat starts at xi_0 = A).
    preconditioner : "laplace" (default: a dense metric started from the mode and the posterior-averaged
        curvature, see ``laplace.py``, then re-estimated twice in burn-in from the chains' pooled
        covariance; the control-variate centre moves to the chains' mean; constant during sampling),
        "adagrad" (per-chain diagonal RMS of stochastic subgradients, as in pSGLD, adapted during
        burn-in then frozen so the chain is a valid fixed-metric sampler; for sgld/sgnht only, hmc then
        uses the identity) or None (identity, the paper's literal update).
    control_variates : for minibatches, estimate the data term as its full value at the mode plus the
        minibatch sum of differences from the mode (Baker et al. 2019). Still unbiased, and for the hinge
        only points whose hinge switched activity contribute, so the noise is far smaller. False gives the
        paper's plain estimate (eq. 7).
    features : None (raw inputs), "nystroem" or "rff"; n_components, gamma : of the RBF feature map.
    record_every : iterations between progress records (None: about 100 records over the planned run).
        n_trace : number of coordinates whose current values are put in each record's snapshot.
    random_state : seed; the same seed gives the same draws.
    """ + _RUN_DOC.format(max_iter="50,000 (hmc) or 1,000,000 (sgld/sgnht)") + """
    Fitted attributes: samples_ (n_chains, n_draws, n_params), param_names_ (its columns' names,
    ``param_names``), potential_ (n_chains, n_draws) (for
    sgld/sgnht the minibatch estimate), xi_ (sgnht; None otherwise), accept_prob_ (hmc; None otherwise),
    acceptance_rate_ (hmc, per
    chain, sampling phase), step_size_, theta_ (current states), mode_ (pilot mode, laplace only),
    converged_, convergence_ (the last :class:`bsvm.convergence.ConvergenceStatus`), stopping_rule_,
    model_ (HingeModel), feature_map_, trace_index_. Records of hmc with n_params <= 3 carry
    ``snapshot["leapfrog_path"]`` (n_leapfrog + 1, n_params): the last transition of chain 0.

    Input scale (:func:`bsvm.data.check_input_scale`): "weights" with ``features=None``. The N(0, I) prior is
    on the raw features' weights, so the model itself depends on the units: fit warns
    (``DataScaleWarning``) when a column's standard deviation lies outside 1e-3..1e3 (the prior swamps the
    data, e.g. accuracy 0.5 on Ripley scaled by 1e-6, or vanishes) or column scales differ by more than
    1e3 (one prior then holds the narrow columns' effects that much tighter). It does not standardise for
    you: the posterior is the one of the features given, which is what the comparisons with exact
    samplers need. With a feature map: "adaptive" with ``gamma=None``, else "unit".
    """

    # parameter table (bsvm/params.py), checked before the data
    _parameter_constraints = {
        "sampler": [StrOptions(set(SAMPLERS))],
        **_RUN_CONSTRAINTS,
        "batch_size": [None, positive_int()],
        # in whitened coordinates (laplace) a leapfrog or Langevin step beyond ~2 is unstable even on a
        # unit Gaussian; 10 leaves room for the other preconditioners and rejects the absurd (1e6)
        "step_size": [None, Interval(Real, 0, 10, closed="right")],
        "n_leapfrog": [None, positive_int()],
        "target_accept": [Interval(Real, 0, 1, closed="neither")],
        "step_decay": [non_negative()],
        "step_decay_b": [positive()],
        "diffusion": [positive()],
        "preconditioner": [None, StrOptions({"laplace", "adagrad"})],
        "control_variates": ["boolean"],
    }

    def __init__(self, sampler="hmc", c=1.0, l=1.0, n_samples="auto", n_burnin=None, thin=1, n_chains=4,
                 max_iter=None, max_time=None, n_jobs=None,
                 batch_size=None, step_size=None, n_leapfrog=None, target_accept=0.8, step_decay=0.0,
                 step_decay_b=1000.0, diffusion=1.0, preconditioner="laplace", control_variates=True,
                 features=None,
                 n_components=100, gamma=None, record_every=None, n_trace=3, random_state=None):
        self.sampler = sampler
        self.c = c
        self.l = l
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.thin = thin
        self.n_chains = n_chains
        self.max_iter = max_iter
        self.max_time = max_time
        self.n_jobs = n_jobs
        self.batch_size = batch_size
        self.step_size = step_size
        self.n_leapfrog = n_leapfrog
        self.target_accept = target_accept
        self.step_decay = step_decay
        self.step_decay_b = step_decay_b
        self.diffusion = diffusion
        self.preconditioner = preconditioner
        self.control_variates = control_variates
        self.features = features
        self.n_components = n_components
        self.gamma = gamma
        self.record_every = record_every
        self.n_trace = n_trace
        self.random_state = random_state

    @property
    def _sampler_kind(self):
        return self.sampler

    def _default_burnin(self) -> int:
        """n_burnin=None: 200 transitions for hmc (dual averaging settles in ~100 from the laplace pilot's
        start; the two metric windows need >= 100), 500 steps for sgld/sgnht (their smaller moves)."""
        return 200 if self.sampler == "hmc" else 500

    def _validate(self, n):
        self._validate_common()
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}")
        if self.preconditioner not in PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {self.preconditioner!r}")
        if self.step_size is not None:
            _check_pos("step_size", self.step_size)
        if self.n_leapfrog is not None:
            _check_int("n_leapfrog", self.n_leapfrog, 1)
        if not (isinstance(self.target_accept, numbers.Real) and 0 < self.target_accept < 1):
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept!r}")
        _check_pos("step_decay", self.step_decay, allow_zero=True)
        _check_pos("step_decay_b", self.step_decay_b)
        _check_pos("diffusion", self.diffusion)
        if self.batch_size is not None:
            _check_int("batch_size", self.batch_size, 1)
        self._warn_unused_options()
        return n if self.sampler == "hmc" else min(n, self.batch_size or 1000)

    #: which samplers read each sampler-specific option
    _READ_BY = {"batch_size": "sgld/sgnht", "step_decay": "sgld/sgnht", "step_decay_b": "sgld/sgnht",
                "control_variates": "sgld/sgnht", "diffusion": "sgnht", "n_leapfrog": "hmc",
                "target_accept": "hmc"}

    def _warn_unused_options(self) -> None:
        """Say when options away from their defaults are ones this sampler ignores (hmc ignored
        preconditioner="adagrad" and the minibatch options silently, a review; MSBPM says the same of
        its line options). diffusion is sgnht's alone."""
        unused = [f"{changed} (read by {who})" for k, who in self._READ_BY.items()
                  if self.sampler not in who.split("/") for changed in self._changed_params((k,))]
        if self.sampler == "hmc" and self.preconditioner == "adagrad":
            unused.append("preconditioner='adagrad' (read by sgld/sgnht; hmc then uses the identity metric)")
        if unused:
            warn_user(f"{type(self).__name__}: sampler={self.sampler!r} ignores {', '.join(unused)}.",
                      UserWarning)

    @staticmethod
    def _default_sg_step(sampler, whitened_noise):
        """h0 for sgld/sgnht in whitened coordinates from V, the per-coordinate variance of the minibatch
        subgradient noise at typical posterior points (V = 0 when the batch is the whole data set).

        SSGLD: its stationary variance on a unit Gaussian is inflated by about 1 + h^2 (V + 1) / 4, so
        h = sqrt(0.8 / (V + 1)) allows ~20% in variance, ~10% in sd (smaller steps cost mixing
        quadratically: on the benchmark's 100,000 x 50 problem h = 0.17 gave 12x fewer effective draws
        than h = 0.35), capped at 0.35. The cap is for the skewed hinge posteriors, where the
        discretisation moves the MEANS too: on the 351 x 34 accuracy benchmark (full batch, V = 0) the
        former cap 0.5 put the means 0.09 posterior sd off the exact Gibbs reference (4 MC errors, long
        run), 0.35 within 0.06 (2.3 MC errors), at half the effective draws per second.
        SSGNHT: the thermostat settles at xi ~ A + h V / 2, and h = min(0.3, 2 / (V + 1)) keeps it from
        over-damping the dynamics. The engine integrates eq. 14's SDE by a symmetric splitting
        (``samplers.SGNHT``), whose bias is O(h^2), not the Euler scheme's O(h). Measured on the 351 x 34
        accuracy benchmark (full batch, V = 0; long fixed runs of 4 chains pooled over seeds; bias in
        posterior sds with the Monte Carlo error removed, z^2 mean ~1 when no bias is detectable):
        Euler h = 0.1: max |dm| 0.097, rms bias 0.048, z^2 mean 7.8 (3 seeds x 24,000 steps); Euler
        h = 0.05: rms bias 0.030, z^2 2.4 (1 seed); splitting h = 0.1 / 0.2 / 0.3 / 0.45 (3 / 2 / 2 / 1
        seeds): max |dm| 0.036 / 0.049 / 0.036 / 0.051, z^2 mean 0.78 / 1.25 / 0.86 / 0.63 (no bias
        detectable), sd ratios 0.98-1.03, with effective draws per CPU second 163 / 329 / 532 / 659.
        At defaults (4 seeds pooled, benchmark Table 1) 0.031 sd. The cap 0.3 takes most of that speed and
        stays below the largest step measured unbiased."""
        cap = _SGHMC_CAPS[sampler]
        if sampler == "sgld":
            return float(min(cap, np.sqrt(0.8 / (whitened_noise + 1.0))))
        return float(min(cap, 2.0 / (whitened_noise + 1.0)))

    def _adaptation_windows(self):
        """Burn-in windows (start, end, keep-every) whose chain states re-estimate the metric, as in Stan's
        windowed adaptation: the pilot's Gaussian curvature is only a starting point (hinge posteriors are
        often skewed, e.g. when many points sit on the margin at the mode)."""
        B = self._n_burnin
        if B < 100:
            return []
        bounds = [(int(0.15 * B), int(0.4 * B)), (int(0.4 * B), int(0.9 * B))]
        return [(a, b, max(1, (b - a) // 500)) for a, b in bounds]

    def _iterate(self, X, y_index):
        m = self._validate(X.shape[0])
        shared_seed, seeds = chain_seeds(self.random_state, self.n_chains)
        rng = np.random.default_rng(shared_seed)
        Phi, y = self._setup(X, y_index, rng)
        model, C, n, P = self.model_, self._n_chains, Phi.shape[0], self.model_.n_params
        sampler = self.sampler
        sg = sampler != "hmc"
        # fits that bsvm.cost predicts well above the parallel threshold start their workers now, while the
        # pilot runs, and move the chains from the first segment (ChainPool.predict)
        pool = self._chain_pool()
        early = pool.predict(estimate(self, X.shape[0], X.shape[1], len(self.classes_)).seconds)
        # ... and meanwhile make what the workers will read of the design (driver.PreparedDesign)
        prepared = PreparedDesign(pool, sampler, Phi, y, P) if early and not sg and model.n_classes == 2 \
            else None
        try:
            L, mode = None, None
            if self.preconditioner == "laplace":
                pilot = laplace_pilot(model, Phi, y, rng=rng)
                L, mode = pilot.factor, pilot.mode

                def start(crng):
                    return mode + 2.0 * S.apply_factor(L, crng.standard_normal((C, P)))
            else:
                def start(crng):  # the prior: dispersed relative to the posterior
                    return crng.standard_normal((C, P))
            use_cv = sg and bool(self.control_variates) and m < n
            if use_cv and mode is None:
                mode = find_mode(model, Phi, y)
            if mode is not None:
                self.mode_ = mode
            adagrad = self.preconditioner == "adagrad"
            factor = L
            if adagrad:
                factor = S.Diagonal(np.ones((C, P))) if sg else None

            def noise_level(L_, probe, reference):
                """Minibatch noise variance per whitened coordinate at typical posterior points ``probe``
                (0 when the batch is the whole data set: the engines then use the exact full sum)."""
                if m >= n:
                    return 0.0
                ref = reference if use_cv else None
                return per_datum_noise(model, Phi, y, L_, probe, ref, rng=rng) * n * n / m

            cv = control_variate(model, mode, Phi, y) if use_cv else None
            if sg:
                V = None
                if self.preconditioner == "laplace":
                    V = noise_level(L, mode + S.apply_factor(L, rng.standard_normal((4, P))), mode)
                fallback = 0.3 if adagrad else 0.01
                h0 = self.step_size or (self._default_sg_step(sampler, V) if V is not None else fallback)
            else:
                h0 = self.step_size or (0.5 if L is not None else 0.05)
            # hmc: the metric's centre is the reference point of the screened hinge activity
            # (potential.Screen)
            tuning0 = S.Tuning(np.full(C, float(h0)), factor, cv, centre=None if sg else mode)
            windows = self._adaptation_windows() if self.preconditioner == "laplace" else []
            adaptation = S.WindowAdaptation(self._n_burnin, float(self.target_accept),
                                            adapt_step=(not sg and self.step_size is None),
                                            adagrad=adagrad and sg, windows=windows)
            n_leap = None if self.n_leapfrog is None else int(self.n_leapfrog)
            spec = EngineSpec(sampler, model, m if sg else None, n_leap, float(self.diffusion))
            # sgld/sgnht: the monitored log posterior needs a full-data pass; computing it at every k-th kept
            # draw with k = ceil(n / (2.5 m)) keeps that to about a quarter of the fit's CPU (100,000 x 50,
            # m = 1,000: k = 40; with n / (5 m) it was a third once the minibatch gather got faster). The
            # parameters are checked at every kept draw (_assess_all), so k thins only the log posterior and
            # p(y|x), whose count at the first check is then ConvergenceMonitor's (100 per chain for 4 chains)
            monitor_every = max(1, math.ceil(n / (2.5 * m))) if sg else 1

            def window_hook(t, carries, groups, Phi_, y_, share):
                W = [np.stack(c.astate.window) for c in carries if c.astate.window]
                if not W or len(W) != len(carries) or any(len(w) != len(W[0]) for w in W):
                    return carries
                # in chain order: the pooled metric's sums then run as in one process, whatever the grouping
                draws = in_chain_order(W, groups, axis=1)  # (W, C, p)
                old = carries[0].tuning.factor
                L_new, centre = S.WindowAdaptation.pool(draws, old, _window_ess)
                new_cv = None
                if use_cv:
                    new_cv = control_variate(model, centre, Phi_, y_)
                    new_cv = new_cv._replace(loss=share(new_cv.loss), G=share(new_cv.G),
                                              active=None if new_cv.active is None else share(new_cv.active))
                theta = in_chain_order([c.state.theta for c in carries], groups)
                h_new = None
                if sg and self.step_size is None:
                    h_new = self._default_sg_step(sampler, noise_level(L_new, theta, centre))
                out = []
                for c in carries:
                    tun = c.tuning._replace(factor=L_new, cv=new_cv if use_cv else c.tuning.cv,
                                            centre=None if sg else centre, screen=None)
                    if h_new is not None:
                        tun = tun._replace(step_size=np.full(len(c.rng), h_new))
                    state = c.state
                    if sampler == "sgnht":  # momenta live in z-space, which just changed
                        state = state._replace(r=c.rng.standard_normal(state.r.shape))
                    out.append(c._replace(state=state, tuning=tun,
                                          astate=adaptation.restart_step(c.astate, tun)))
                return out

            # binary minibatches come from the signed design with its rows in a random order, as m consecutive
            # rows from a random start (samplers.Potential): drawn here, after the pilot's and the step size's
            # draws of the shared generator, so those did not move (the metric windows' noise estimates draw
            # after it)
            row_order = rng.permutation(n) if sg and m < n and model.n_classes == 2 else None
            yield from self._drive(spec, Phi, y, y_index, seeds, start, tuning0, adaptation, monitor_every,
                                   window_hook if windows else None, pool, row_order, prepared)
        except BaseException:
            # the files made for the workers go now, whatever ended the fit before its pool's context did
            # (the pilot, an interrupt, a consumer closing fit_iter): held by a traceback (a REPL's
            # sys.last_traceback) the pool, and its /dev/shm files, outlived the fit (a review)
            if prepared is not None:
                prepared.discard()
            raise


class GibbsSVM(_HingeSampler):
    __doc__ = """Exact data-augmentation Gibbs sampler for the binary Bayesian SVM (Polson & Scott 2011).

    Samples the same posterior as ``SubgradientHMC`` (N(0, I) prior on [w, b], pseudo-likelihood
    exp(-c max(0, l - y f(x)))) exactly, for use as ground truth; conditionals in ``gibbs.py``.
    Parameters and fitted attributes as in ``SubgradientHMC`` (one iteration = one sweep), except
    ``n_burnin``, whose default here is 100 sweeps, and the step-size, minibatch and sampler options, which
    a Gibbs sampler has none of. ``init``:
    "laplace" starts the chains at mode + 2 L z (dispersed on the scale of the smoothed-curvature
    approximation, as SubgradientHMC does), "prior" at N(0, I) draws; the start does not change the target,
    only the burn-in needed (the data-augmentation chain converges slowly from far away when n is large).
    """ + _RUN_DOC.format(max_iter="50,000 sweeps") + """
    Fitted: samples_, param_names_, potential_ (full data), theta_, model_, feature_map_, mode_ (laplace
    init), converged_, convergence_, stopping_rule_.
    Input scale: as ``SubgradientHMC`` ("weights" with ``features=None``; fit warns; see there).
    """

    _binary_only = True
    _sampler_kind = "gibbs"

    # parameter table (bsvm/params.py), checked before the data; c = 0 (a valid number, but then the
    # posterior is the prior) is refused with its reason by _check_param_rules, also before the data
    _parameter_constraints = {
        **_RUN_CONSTRAINTS,
        "init": [StrOptions({"laplace", "prior"})],
    }

    def _check_param_rules(self):
        if self.c == 0:
            raise ValueError("GibbsSVM needs c > 0 (with c = 0 the posterior is the N(0, I) prior)")

    def __init__(self, c=1.0, l=1.0, n_samples="auto", n_burnin=100, thin=1, n_chains=4, max_iter=None,
                 max_time=None, n_jobs=None, init="laplace", features=None, n_components=100, gamma=None,
                 record_every=None, n_trace=3, random_state=None):
        self.c = c
        self.l = l
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.thin = thin
        self.n_chains = n_chains
        self.max_iter = max_iter
        self.max_time = max_time
        self.n_jobs = n_jobs
        self.init = init
        self.features = features
        self.n_components = n_components
        self.gamma = gamma
        self.record_every = record_every
        self.n_trace = n_trace
        self.random_state = random_state

    def _iterate(self, X, y_index):
        self._validate_common()
        if self.init not in ("laplace", "prior"):
            raise ValueError(f"init must be 'laplace' or 'prior', got {self.init!r}")
        if self._c == 0.0:
            raise ValueError("GibbsSVM needs c > 0 (with c = 0 the posterior is the N(0, I) prior)")
        shared_seed, seeds = chain_seeds(self.random_state, self.n_chains)
        rng = np.random.default_rng(shared_seed)
        Phi, y = self._setup(X, y_index, rng)
        C, P = self._n_chains, self.model_.n_params
        if self.init == "laplace":
            pilot = laplace_pilot(self.model_, Phi, y, rng=rng)
            self.mode_ = pilot.mode

            def start(crng):
                return pilot.mode + 2.0 * S.apply_factor(pilot.factor, crng.standard_normal((C, P)))
        else:
            def start(crng):
                return crng.standard_normal((C, P))
        spec = EngineSpec("gibbs", self.model_)
        tuning0 = S.Tuning(np.full(C, np.nan))
        adaptation = S.WindowAdaptation(self._n_burnin)
        yield from self._drive(spec, Phi, y, y_index, seeds, start, tuning0, adaptation, 1)
