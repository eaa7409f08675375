"""The stopping rule every sampler shares: run until converged, or say so.

Rule (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021, "Rank-normalization, folding, and
localization: an improved R-hat", sec. 4-5): a run has converged when, on every monitored quantity,

    rank-normalised split R-hat <= 1.01   and   bulk ESS >= 400   and   tail ESS >= 400

(ESS summed over chains, as arviz-stats reports it). The monitored quantities are the log posterior
(minus the potential) and p(y | x) at a fixed set of training rows (:func:`monitor_rows`), one column each
of a (chain, draw, quantity) array; SubgradientHMC and GibbsSVM add every model parameter (their weights
can mix more slowly than those summaries). Quantities that do not vary at all (p(y|x) = 1 far from the
boundary) carry no information and are skipped.

Checks are made at geometrically spaced draw counts (:class:`ConvergenceMonitor`), so their total cost is
a constant multiple of the last one. A sampler stops at the first check that passes, or when its
``max_iter`` / ``max_time`` budget is spent; :func:`warn_not_converged` then raises
``sklearn.exceptions.ConvergenceWarning`` naming the budget and what failed.

Progress records carry ``rhat``, ``ess_bulk``, ``ess_tail`` (the worst over the quantities), ``draws``
(kept draws per chain) and the rule's thresholds ``rhat_target``, ``ess_target`` (owners.md).

Public API: ``StoppingRule``, ``ConvergenceStatus``, ``assess``, ``combine``, ``ConvergenceMonitor``,
``monitor_rows``, ``warn_not_converged``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._userwarn import warn_user
from .diagnostics import rank_diagnostics

#: fewest draws per chain for which the split-chain diagnostics are computed at all
MIN_DRAWS = 8


@dataclass(frozen=True)
class StoppingRule:
    """Thresholds of the stopping rule (defaults: Vehtari et al. 2021's recommendation)."""

    rhat: float = 1.01
    ess_bulk: float = 400.0
    ess_tail: float = 400.0

    def describe(self, n_rows: int | None = None, n_params: int | None = None) -> str:
        """The rule in words; ``n_params``: the model's parameters are monitored too (SubgradientHMC,
        GibbsSVM)."""
        where = "p(y|x) at a fixed set of training rows" if n_rows is None else \
            f"p(y|x) at {n_rows} fixed training rows"
        what = f"the log posterior and {where}" if n_params is None else \
            f"the log posterior, {where} and the {n_params} model parameters"
        return (f"stop when rank-normalised split R-hat <= {self.rhat:g} and bulk and tail ESS >= "
                f"{self.ess_bulk:g}/{self.ess_tail:g} on {what} (Vehtari et al. 2021)")

    def metrics(self) -> dict:
        """The thresholds as progress-record metrics, so the dashboard can draw them."""
        return {"rhat_target": float(self.rhat), "ess_target": float(min(self.ess_bulk, self.ess_tail))}


@dataclass(frozen=True)
class ConvergenceStatus:
    """The outcome of one check. ``rhat``/``ess_*`` are the worst over the monitored quantities (NaN when
    they cannot be computed, and ``notes`` then says why). ``failed`` lists the unmet criteria."""

    draws: int
    n_chains: int
    rhat: float = math.nan
    ess_bulk: float = math.nan
    ess_tail: float = math.nan
    converged: bool = False
    failed: tuple = ()
    notes: tuple = ()
    per_quantity: dict = field(default_factory=dict, repr=False)

    def metrics(self) -> dict:
        return {"rhat": float(self.rhat), "ess_bulk": float(self.ess_bulk), "ess_tail": float(self.ess_tail),
                "draws": float(self.draws), "converged": float(self.converged)}

    def explain(self) -> str:
        parts = list(self.failed) + list(self.notes)
        return "; ".join(parts) if parts else "all criteria met"


def assess(quantities, rule: StoppingRule = StoppingRule(), names=None) -> ConvergenceStatus:
    """Check the rule on ``quantities`` of shape (n_chains, n_draws, n_quantities) (or (C, D)).

    One chain: split R-hat (two halves of one chain) cannot detect chains that disagree, so R-hat is
    reported as undefined (NaN), the ESS criteria alone are checked, and ``converged`` is False with a
    note saying why. Non-finite draws (a diverged posterior) make the check fail with a note."""
    q = np.asarray(quantities, dtype=float)
    if q.ndim == 2:
        q = q[..., None]
    if q.ndim != 3:
        raise ValueError(f"quantities must have shape (n_chains, n_draws[, n_quantities]), got {q.shape}")
    C, D, K = q.shape
    names = list(names) if names is not None else [f"q{k}" for k in range(K)]
    if D < MIN_DRAWS:
        return ConvergenceStatus(D, C, notes=("too few draws for any diagnostic",),
                                 failed=(f"only {D} draws per chain (diagnostics need >= {MIN_DRAWS})",))
    finite = np.isfinite(q).all(axis=(0, 1))
    notes = []
    if not finite.all():
        bad = [names[k] for k in np.flatnonzero(~finite)]
        return ConvergenceStatus(D, C, failed=(f"non-finite values in {', '.join(bad)} (the sampler "
                                               "diverged)",), notes=("non-finite draws",))
    # a quantity that never moves (p(y|x) = 1 far from the boundary) has no ESS; it is skipped
    spread = q.max(axis=(0, 1)) - q.min(axis=(0, 1))
    live = spread > 1e-12 * np.maximum(1.0, np.abs(q).max(axis=(0, 1)))
    if not live.any():
        return ConvergenceStatus(D, C, failed=("every monitored quantity is constant",),
                                 notes=("constant draws",))
    x = np.moveaxis(q[..., live], -1, 0)  # (K', C, D): arviz-stats' (..., chain, draw)
    # arviz-stats' numbers, vectorised over the quantities (bsvm.diagnostics.rank_diagnostics: its
    # per-quantity Python loop made these checks a quarter of a 1,000-row SubgradientHMC fit)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_all, ess_b, ess_t = rank_diagnostics(x, prob=(0.05, 0.95))
    ess_b, ess_t = np.where(np.isfinite(ess_b), ess_b, 0.0), np.where(np.isfinite(ess_t), ess_t, 0.0)
    if C >= 2:
        r = np.where(np.isfinite(r_all), r_all, np.inf)
        worst_r = float(r.max())
    else:
        r, worst_r = np.full(len(ess_b), np.nan), math.nan
        notes.append("R-hat is undefined with one chain (it compares chains): run n_chains >= 2 to check "
                     "convergence")
    failed = _criteria_failures(worst_r, float(ess_b.min()), float(ess_t.min()), rule)
    live_names = [n for n, keep in zip(names, live) if keep]
    per = {"names": live_names, "rhat": r, "ess_bulk": ess_b, "ess_tail": ess_t}
    failed = _name_worst(failed, per, (worst_r, float(ess_b.min()), float(ess_t.min())))
    return ConvergenceStatus(D, C, worst_r, float(ess_b.min()), float(ess_t.min()),
                             converged=not failed and C >= 2, failed=tuple(failed), notes=tuple(notes),
                             per_quantity=per)


def _name_worst(failed: list, per: dict, values: tuple) -> list:
    """The rule's failures with the quantity that is worst on each, when there are several (a warning said
    "R-hat 1.017 > 1.01" and left the user to guess among 41 quantities, a library user's review).
    ``values``: the outcome's worst (R-hat, bulk ESS, tail ESS); a name is given only where the table
    ``per`` holds that value (a combined outcome may take its worst from a part without a table)."""
    names = per.get("names") or []
    if len(names) < 2:
        return list(failed)
    worst = {}
    for key, table, pick, value in (("R-hat", per["rhat"], np.nanargmax, values[0]),
                                    ("bulk ESS", per["ess_bulk"], np.nanargmin, values[1]),
                                    ("tail ESS", per["ess_tail"], np.nanargmin, values[2])):
        v = np.asarray(table, dtype=float)
        if v.size == len(names) and not np.all(np.isnan(v)) and v[int(pick(v))] == value:
            worst[key] = names[int(pick(v))]
    return [next((f"{f} (worst: {worst[key]})" for key in worst if f.startswith(key)), f) for f in failed]


def _criteria_failures(rhat: float, ess_bulk: float, ess_tail: float, rule: StoppingRule) -> list[str]:
    """The rule's three criteria that the worst values miss, in words (NaN misses none: R-hat with one
    chain, ESS of an assessment that stopped early, which says why in its own failures)."""
    failed = []
    if rhat > rule.rhat:
        failed.append(f"R-hat {rhat:.3f} > {rule.rhat:g}")
    if ess_bulk < rule.ess_bulk:
        failed.append(f"bulk ESS {ess_bulk:.0f} < {rule.ess_bulk:g}")
    if ess_tail < rule.ess_tail:
        failed.append(f"tail ESS {ess_tail:.0f} < {rule.ess_tail:g}")
    return failed


_CRITERIA = ("R-hat ", "bulk ESS ", "tail ESS ")
_CONSTANT = "every monitored quantity is constant"


def combine(statuses, rule: StoppingRule = StoppingRule(), draws: int | None = None) -> ConvergenceStatus:
    """One outcome from :func:`assess` outcomes on disjoint sets of quantities (e.g. summaries recorded at
    every k-th draw and parameters at every draw): the worst R-hat and ESS over all of them, every failure
    (the rule's three criteria restated from those worst values), the notes and the per-quantity
    diagnostics of each. A set whose quantities are all constant carries no information and is left out,
    as :func:`assess` leaves out a constant quantity. ``draws``: the draws per chain to report (default:
    the largest of the outcomes')."""
    statuses = [st for st in statuses if st is not None]
    live = [st for st in statuses if _CONSTANT not in st.failed] or statuses[:1]
    D = int(draws) if draws is not None else max(st.draws for st in live)

    def worst(values, pick):
        values = [v for v in values if not math.isnan(v)]
        return pick(values) if values else math.nan

    rhat = worst([st.rhat for st in live], max)  # (inf, a non-finite R-hat, stays the worst)
    ess_b, ess_t = worst([st.ess_bulk for st in live], min), worst([st.ess_tail for st in live], min)
    failed = list(dict.fromkeys(f for st in live for f in st.failed if not f.startswith(_CRITERIA)))
    failed += _criteria_failures(rhat, ess_b, ess_t, rule)
    notes = tuple(dict.fromkeys(n for st in live for n in st.notes))
    per = {}
    parts = [st.per_quantity for st in live if st.per_quantity]
    if parts:
        per = {"names": [n for p in parts for n in p["names"]],
               **{k: np.concatenate([np.asarray(p[k], float) for p in parts])
                  for k in ("rhat", "ess_bulk", "ess_tail")}}
        failed = _name_worst(failed, per, (rhat, ess_b, ess_t))
    converged = all(st.converged for st in live) and not failed
    return ConvergenceStatus(D, live[0].n_chains, rhat, ess_b, ess_t, converged=converged,
                             failed=tuple(failed), notes=notes, per_quantity=per)


class ConvergenceMonitor:
    """Decides when to check the rule: at geometrically spaced draw counts per chain.

    The first check is at ``first`` draws (default: enough for the ESS target if the draws were
    independent, ceil(ess / n_chains), at least 20). After a failed check at D draws the next is at
    D * clip(1.1 * predicted / D, 1.25, 1.5), where ``predicted`` = D * ess_target / ess (ESS grows about
    linearly in D once the chains have mixed): never closer than 25 % apart, so the total cost of the
    checks is at most 5x the last one, and at most 1.5x, so the run overshoots the point of convergence
    by at most 1.5x."""

    def __init__(self, n_chains: int, rule: StoppingRule = StoppingRule(), first: int | None = None,
                 min_growth: float = 1.25, max_growth: float = 1.5):
        self.rule = rule
        self.n_chains = int(n_chains)
        target = max(rule.ess_bulk, rule.ess_tail)
        self.next_check = int(first if first is not None else max(20, math.ceil(target / max(1, n_chains))))
        self.min_growth, self.max_growth = float(min_growth), float(max_growth)
        self.status: ConvergenceStatus | None = None

    def due(self, draws: int) -> bool:
        return draws >= self.next_check

    def check(self, quantities, names=None) -> ConvergenceStatus:
        return self.record(assess(quantities, self.rule, names))

    def record(self, st: ConvergenceStatus, draws: int | None = None) -> ConvergenceStatus:
        """Keep ``st`` (e.g. :func:`combine`'s) as the last check's outcome and schedule the next check;
        ``draws``: the count the schedule is kept in (default ``st.draws``)."""
        self.status = st
        D = max(st.draws if draws is None else int(draws), 1)
        ess = min(st.ess_bulk, st.ess_tail)
        target = max(self.rule.ess_bulk, self.rule.ess_tail)
        factor = self.max_growth
        if np.isfinite(ess) and ess > 0 and (np.isnan(st.rhat) or st.rhat <= self.rule.rhat):
            factor = 1.1 * target / ess
        factor = float(np.clip(factor, self.min_growth, self.max_growth))
        self.next_check = max(D + 1, int(math.ceil(D * factor)))
        return st

    def metrics(self) -> dict:
        base = self.rule.metrics()
        if self.status is None:
            base.update({"rhat": math.nan, "ess_bulk": math.nan, "ess_tail": math.nan, "converged": 0.0})
        else:
            base.update(self.status.metrics())
        base["next_check"] = float(self.next_check)
        return base


def monitor_rows(n_samples: int, n_rows: int = 20) -> np.ndarray:
    """The fixed training rows whose p(y|x) is monitored: ``n_rows`` evenly spaced row indices (the same
    for every run on the same data, whatever the seed)."""
    k = min(int(n_rows), int(n_samples))
    return np.unique(np.linspace(0, n_samples - 1, k).round().astype(int))


def warn_single_chain(estimator_name: str, rule: StoppingRule = StoppingRule(), fixed: bool = False) -> None:
    """The ConvergenceWarning of a one-chain run that met every ESS target: R-hat cannot be computed, so
    no budget would have helped (the general warning said "raise the budget"). ``fixed``: a fixed-length
    run (it stopped at its length, its ESS having reached the targets)."""
    how = (f"its bulk and tail ESS reached {rule.ess_bulk:g}" if fixed else
           f"the run stopped when bulk and tail ESS reached {rule.ess_bulk:g}")
    warn_user(f"{estimator_name}: R-hat is undefined with n_chains=1 (it compares chains), so convergence "
              f"cannot be checked; {how}. Use n_chains >= 2 to check it.", ConvergenceWarning)


def ess_targets_met(status: ConvergenceStatus | None, rule: StoppingRule = StoppingRule()) -> bool:
    """Whether a check met its ESS targets on finite draws (what is left unmet is R-hat, or nothing):
    read off the worst bulk and tail ESS, which are NaN when no ESS could be computed (too few draws,
    non-finite draws)."""
    return (status is not None and status.draws >= MIN_DRAWS and bool(np.isfinite(status.ess_bulk))
            and bool(np.isfinite(status.ess_tail)) and status.ess_bulk >= rule.ess_bulk
            and status.ess_tail >= rule.ess_tail
            # nothing else unmet: a combined check (combine) leaves out the ESS of a part it could not
            # assess, "only 7 draws per chain", which the numbers above do not show (a review)
            and all(f.startswith("R-hat") for f in status.failed))


def warn_not_converged(estimator_name: str, status: ConvergenceStatus | None, budget: str,
                       rule: StoppingRule = StoppingRule(), draws: int | None = None,
                       rule_text: str | None = None, cause: str | None = None) -> None:
    """Emit the ConvergenceWarning of a run that stopped without meeting the rule. ``budget`` names what
    ran out, e.g. "max_time=60 s" or "max_iter=20000" or "n_samples=500 (fixed length)"; ``draws`` the
    kept draws per chain (default: the status's count); ``rule_text``: the rule as the estimator checks
    it (default ``rule.describe()``: the samplers that also check their parameters say so); ``cause``:
    what the sampler saw that a larger budget would not mend (then said in place of "raise the budget")."""
    if draws is None:
        draws = 0 if status is None else status.draws
    if status is None:
        what = "no convergence check could be made (the budget ended before the first check)"
    else:
        what = status.explain()
    # (with no draw kept, "the draws kept so far are usable" promised draws that were not there: the
    # predictions then come from the chains' current states, a library user's review)
    if cause:
        after = f"A larger budget would not help: {cause}."
    elif draws:
        after = ("The draws kept so far are usable but not trustworthy; raise the budget or inspect the "
                 "chains.")
    else:
        after = ("No draw was kept (the budget ended in burn-in, or before the first thinned draw): "
                 "predictions use the chains' current states, which are not posterior draws; raise the "
                 "budget.")
    warn_user(f"{estimator_name} stopped without meeting its stopping rule: {budget} ran out after "
              f"{draws} kept draws per chain; {what}. Rule: {rule_text or rule.describe()}. {after}",
              ConvergenceWarning)
