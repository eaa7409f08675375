"""Cost guards: estimate a fit's memory and time before it starts, and refuse what cannot fit.

``estimator.estimate_cost(n_samples, n_features, n_classes)`` returns a :class:`Cost` (memory in bytes,
rough CPU seconds, what dominates, and what to use instead). ``fit`` and ``fit_iter`` call
:func:`check_cost` after the data check and before the engine allocates anything:

* past the memory limit -- the available memory (``psutil.virtual_memory().available``) or a ceiling set
  with :func:`set_limits` / the ``BSVM_MAX_MEMORY`` environment variable (bytes), whichever is lower -- it
  raises :class:`CostError` (a ``ValueError``), e.g. "MSBPM needs about 9.6 GB for 20,000 rows (4 N^2
  matrices); use SBSVM, or subsample to 5,000 rows";
* past ``warn_seconds`` (default 300 s) it warns with the time estimate (:class:`CostWarning`);
  ``fit(progress=...)`` then shows a progress bar.

Each method's model below follows its code's largest allocations (named in ``detail``); the coefficients
of the N^2 terms were measured as tracemalloc peaks (numpy reports its allocations to tracemalloc) at
N = 250-2000, and ``tests/test_cost.py`` checks the estimates against measured peaks. Times are single-
thread CPU seconds from the same runs, scaled by the dominant term: right to a factor of a few, enough to
tell a minute from an hour.
"""

from __future__ import annotations

import math
import numbers
import os
from contextlib import contextmanager
from dataclasses import dataclass

from ._userwarn import warn_user

F8 = 8.0  # bytes per float64


class CostWarning(UserWarning):
    """A fit is estimated to run long (the message gives the estimate and what is faster)."""


class CostError(ValueError):
    """A fit would need more memory than the limit allows; raised before anything large is allocated."""


@dataclass(frozen=True)
class Cost:
    """memory_bytes: peak memory the fit allocates (the data passed in not counted); seconds: rough
    single-thread CPU time of the full budget (max_iter, or every sweep; a tolerance test may stop
    sooner; for samplers with n_samples="auto", the typical run to the stopping rule); detail: what
    dominates; hint: what to use instead when it is too much; time_note: what the time cannot know (said
    with the time, not in a memory refusal)."""

    memory_bytes: float
    seconds: float
    detail: str = ""
    hint: str = ""
    time_note: str = ""

    def describe(self) -> str:
        return (f"about {format_bytes(self.memory_bytes)} and {format_seconds(self.seconds)} "
                f"({self.detail}{self.time_note})")


_LIMITS = {"max_memory": None, "warn_seconds": 300.0}


def set_limits(max_memory=None, warn_seconds=None) -> dict:
    """Set the memory ceiling in bytes (None: the available memory only) and the time past which ``fit``
    warns. Returns the previous settings (pass them back to restore). ``limits(...)`` is the context
    manager form."""
    ceiling = None if max_memory is None else _memory_bytes(max_memory)
    seconds = None
    if warn_seconds is not None:
        try:
            seconds = float(warn_seconds)
        except (TypeError, ValueError):
            seconds = math.nan
        if not seconds > 0:
            raise ValueError(f"warn_seconds={warn_seconds!r}: use a positive number of seconds (or None to "
                             "keep the current one).")
    previous = dict(_LIMITS)
    _LIMITS["max_memory"] = ceiling
    if seconds is not None:
        _LIMITS["warn_seconds"] = seconds
    return previous


_UNITS = {"": 1.0, "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "K": 1e3, "M": 1e6, "G": 1e9,
          "T": 1e12, "KIB": 2.0**10, "MIB": 2.0**20, "GIB": 2.0**30, "TIB": 2.0**40}


def _memory_bytes(value) -> float:
    """A memory ceiling in bytes from a positive number or a text such as "2GB" or "500 MB" (a negative
    ceiling was accepted and refused every fit with "even 50 rows do not fit"; "2GB" raised a bare
    float conversion error: a review)."""
    import re

    got = math.nan
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?(?:[iI]?[bB])?)\s*", value)
        if m and m.group(2).upper() in _UNITS:
            got = float(m.group(1)) * _UNITS[m.group(2).upper()]
    elif not isinstance(value, bool):
        try:
            got = float(value)
        except (TypeError, ValueError):
            pass
    if not (math.isfinite(got) and got > 0):
        raise ValueError(f"max_memory={value!r}: use a positive number of bytes or a text such as '2GB' "
                         "or '500MB' (None: the available memory only).")
    return got


@contextmanager
def limits(max_memory=None, warn_seconds=None):
    previous = set_limits(max_memory, warn_seconds)
    try:
        yield
    finally:
        _LIMITS.update(previous)


def memory_limit() -> tuple[float, str]:
    """(bytes, what sets it): the lower of the available memory and the configured ceiling."""
    import psutil

    available = float(psutil.virtual_memory().available)
    ceiling = _LIMITS["max_memory"]
    env = os.environ.get("BSVM_MAX_MEMORY")
    source = "bsvm.cost.set_limits"
    if ceiling is None and env:
        source = f"BSVM_MAX_MEMORY={env}"  # (the message named set_limits, never called, a review)
        try:
            ceiling = _memory_bytes(env)
        except ValueError:
            raise ValueError(f"BSVM_MAX_MEMORY={env!r}: use a positive number of bytes or a text such as "
                             "'2GB' (or unset it: the available memory only).") from None
    if ceiling is not None and ceiling < available:
        return ceiling, f"the memory ceiling set with {source}"
    return available, "the available memory"


def format_bytes(b: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b:.0f} bytes"


def format_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "an unknown time"
    if s >= 7200:
        return f"{s / 3600:.0f} hours"
    if s >= 120:
        return f"{s / 60:.0f} minutes"
    if s < 0.95:
        return "under a second"
    n = round(s)
    return f"{n} second{'' if n == 1 else 's'}"


def estimate(estimator, n: int, d: int, k: int) -> Cost:
    """The cost model of ``estimator``'s class (the functions below, registered in ``_MODELS``)."""
    for cls in type(estimator).__mro__:
        model = _MODELS.get(cls.__name__)
        if model is not None:
            return model(estimator, max(int(n), 1), max(int(d), 1), max(int(k), 2))
    return Cost(F8 * n * d * 4, float("nan"), "no cost model for this class")


def _largest_n(estimator, n, d, k, limit) -> int:
    """The largest row count below n whose estimate fits in ``limit`` (bisection; costs grow with n)."""
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if estimate(estimator, mid, d, k).memory_bytes <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def check_cost(estimator, n: int, d: int, k: int) -> Cost:
    """Refuse (:class:`CostError`) or warn (:class:`CostWarning`) before a fit on n x d data with k
    classes. Returns the estimate."""
    cost = estimate(estimator, n, d, k)
    name = type(estimator).__name__
    limit, source = memory_limit()
    if cost.memory_bytes > limit:
        fits = _largest_n(estimator, n, d, k, 0.9 * limit)
        sub = (f", or subsample to {_round_down(fits):,} rows" if fits >= 50
               else "; even 50 rows do not fit")
        raise CostError(
            f"{name} needs about {format_bytes(cost.memory_bytes)} for {n:,} rows x {d:,} features "
            f"({cost.detail}), more than {source} ({format_bytes(limit)}): {cost.hint}{sub}."
        )
    # a time budget caps the run: warn only when the budget itself is long, and say it (GibbsSVM with
    # max_time=1 warned "roughly 8 minutes", then stopped after 1 s, a review)
    budget = getattr(estimator, "max_time", None)
    capped = isinstance(budget, int | float) and not isinstance(budget, bool) and budget < cost.seconds
    seconds = float(budget) if capped else cost.seconds
    if math.isfinite(seconds) and seconds > _LIMITS["warn_seconds"]:
        how = (f"will run until its max_time={budget:g} s (the whole run would take roughly "
               f"{format_seconds(cost.seconds)} of CPU)" if capped else
               f"will take roughly {format_seconds(cost.seconds)} of CPU")
        warn_user(
            f"{name} on {n:,} rows x {d:,} features {how} ({cost.detail}{cost.time_note}): {cost.hint}."
            # (not for a fit in one call, PlattSVM's: it has no steps to show, and the advice was false)
            + (" fit(X, y, progress=True) shows a progress bar." if getattr(estimator, "_stepwise", True)
               else ""),
            CostWarning)
    return cost


def _round_down(n: int) -> int:
    """Two significant digits, rounded down (a subsample size to suggest)."""
    if n < 100:
        return n
    scale = 10 ** (len(str(n)) - 2)
    return n // scale * scale


def _int(v, default):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------------------------------------------------
# Per-method models. Each reads the estimator's parameters; n rows, d features, k classes.


#: S-BSVM steps costed per fit for a run that stops by its ELBO rule (see _sbsvm)
TYPICAL_STEPS = 150
#: S-BSVM: SQUAREM cycles of an exact stage 2 on all rows (6-10 measured), and its passes' flops per row
STAGE2_CYCLES = 10


def _sbsvm_step(rows: int, m: int) -> float:
    """CPU s of one S-BSVM step on ``rows`` rows and m inducing points: the precision update and the
    marginals (~3 rows m^2 flops at the ~10 GFlop/s measured) plus ~0.7 ms of Python and small-matrix
    work (fitted to default fits of 175-2,000 rows: 0.8-6.5 ms a step)."""
    return 7e-4 + 3e-10 * rows * m * m


#: the linear variant's typical number of steps to its stopping rule (measured: 35-255)
LINEAR_STEPS = 150


def _sbsvm(est, n, d, k) -> Cost:
    """S-BSVM (bsvm/sbsvm). "batch": every row is an inducing point; the natural-gradient step works on
    n x n matrices (features, precision, the flattened gradient and their temporaries): measured peak
    ~30 n^2 doubles; O(n^3) per step. "svi": m x m matrices, minibatch and ELBO-subset feature blocks
    (b x m), k-means on <= 20 m rows, and the median heuristic on <= 1000 rows; O((b + m) m^2) per step.
    "linear": (d + 1)^2 matrices and b x (d + 1) blocks.

    Time ("svi"), following the fit's own rules (its class docstring): ``kernel="auto"`` fits three
    kernels with learned hyperparameters (the fixed fits are q(u) alone, a few steps), each until its
    ELBO settles (``tol``), long before ``max_iter``: costed at TYPICAL_STEPS each (with ``tol=0``, at
    max_iter), on all rows when the minibatch holds them (up to 1,000 rows the 5-fold q(u) refits of the
    stacking add about a quarter). Beyond ``AUTO_BATCH`` rows with ``batch_size="auto"``: each fit's
    hyperparameter stage (20 steps on 2,000 rows), then stage 2 on all rows: exact, the n x m features
    once and STAGE2_CYCLES SQUAREM cycles over them (measured ~5e-10 n m^2 CPU s a cycle), up to 30,000
    rows (and n m <= 1e7), else TYPICAL_STEPS minibatch steps. m is the "auto" rule's (the kernel the
    stack picks may have fewer: the linear kernel's d + 1).
    Measured default fits, CPU s (one thread, 28 November 2026; this model's estimate in brackets):
    Ripley (2-D) 175 / 1,000 / 5,000 / 20,000 / 100,000 / 300,000 rows 0.23 / 0.94 / 0.49 / 1.07 / 1.1 /
    1.4 (0.5 / 2.2 / 0.8 / 1.5 / 1.6 / 1.6; the last two by minibatches), twonorm (20-D) 700 / 2,000 /
    20,000 / 100,000 rows 1.75 / 4.7 / 0.43 / 0.52 (1.7 / 3.1 / 1.6 / 2.7: twonorm's stack picks the
    linear kernel, 21 inducing points, whose stages cost a fraction of the estimate's m = 100). The
    previous model (300 steps of ~27 ms at 2,000 rows, whatever n) said 0.6 / 4.5 / 8.3 / 8.3 / 8.3 and
    3.5 / 8.7 / 8.7 / 8.7."""
    steps = _int(est.max_iter, 2000)
    tol = est.tol is not None and float(est.tol) > 0
    capped = min(steps, 300) if tol else steps  # the batch and linear variants' typical run
    if est.variant == "batch":
        return Cost(30 * F8 * n * n + 6 * F8 * n * d, 4e-10 * n**3 * min(capped, 300) + 1.0,
                    "variant='batch': about 30 n x n matrices",
                    "use SBSVM() (variant='svi', inducing points)")
    from .sbsvm.estimator import (  # the "auto" rules
        AUTO_BATCH,
        AUTO_INDUCING,
        AUTO_INDUCING_FRACTION,
        AUTO_INDUCING_MIN,
        CV_MAX_ROWS,
        FULL_BATCH_CELLS,
        FULL_BATCH_ROWS,
        HYPER_STAGE_STEPS,
        KFOLD_MAX_CHARGE,
    )
    b = min(_int(est.batch_size, AUTO_BATCH), n)
    nb = n if est.elbo_batch_size is None else min(int(est.elbo_batch_size), n)
    if est.variant == "linear":
        # a step: b x p features times p x p matrices and a p x p factorisation, ~1e-10 CPU s per
        # multiply-add, plus ~1 ms of overhead; LINEAR_STEPS steps (measured fits with tol: 35-255 steps).
        # Measured, CPU s (one thread, 29 November 2026; this model's estimate in brackets): 1,000 x 50
        # 0.04 (0.2), 2,000 x 200 0.37 (1.5), 301 x 500 2.5 (3.3), 20,000 x 20 0.05 (0.2), 20,000 x 200
        # 0.97 (1.5), 100,000 x 50 0.23 (0.3), 2,000 x 1,000 52 (45). The previous model (2e-8 per
        # multiply-add over 300 steps) said 17, 534, 1208, 6, 534, 33 and 18,000 (a review).
        p = d + 1
        lin_steps = min(steps, LINEAR_STEPS) if tol else steps
        return Cost(F8 * (8 * p * p + 4 * (b + nb) * p + 2 * n * d),
                    lin_steps * (1e-10 * (b * p * p + p**3) + 1e-3) + 0.05,
                    f"variant='linear': {p} x {p} matrices", "lower max_iter, or select fewer features")
    m = est.n_inducing
    if m == "auto":
        m = min(AUTO_INDUCING, max(math.ceil(AUTO_INDUCING_FRACTION * n), AUTO_INDUCING_MIN))
    m = math.ceil(m * n) if isinstance(m, float) else int(m)
    m = max(1, min(m, n))
    r = min(n, 1000)
    # peak of the set-up phase (median heuristic's r x r distances, k-means) or of the steps
    setup = 2.5 * r * r + 20 * m * (m + d)
    steps_mem = 12 * m * m + 5 * (b + nb) * m
    mem = F8 * (max(setup, steps_mem) + 2 * n * d)
    fits = 3 if est.kernel == "auto" else 1
    per_fit = min(steps, TYPICAL_STEPS) if tol else steps
    if est.batch_size == "auto" and n > AUTO_BATCH:  # two stages (hyperparameters on a subset, then q(u))
        secs = fits * min(steps, HYPER_STAGE_STEPS) * _sbsvm_step(AUTO_BATCH, m)
        if n <= FULL_BATCH_ROWS and n * m <= FULL_BATCH_CELLS:  # the n x m features once, then cycles
            secs += 2e-9 * n * m * d + STAGE2_CYCLES * 5e-10 * n * m * m
        else:  # minibatch steps, each computing its rows' features
            secs += per_fit * (_sbsvm_step(AUTO_BATCH, m) + 2e-9 * AUTO_BATCH * m * d)
    else:
        secs = fits * per_fit * (_sbsvm_step(b, m) + (2e-9 * b * m * d if b < n else 0.0))
        if fits > 1 and n <= CV_MAX_ROWS:
            # the stacking's 5-fold q(u) refits; or the whole procedure's 5-fold cross-validation (about
            # 4-5x: 300 rows x 50 / 500 features 0.5 / 0.8 -> 2.0 / 3.5 CPU s), by stacking="cv" or where
            # stacking="auto" takes it for wide data
            wide = (d + 2) / n > KFOLD_MAX_CHARGE and est.stacking == "auto"
            secs *= 5.0 if est.stacking == "cv" or wide else 1.25
    return Cost(mem, secs + 0.1, f"{m} inducing point{'s' if m != 1 else ''}, minibatch {b}",
                "lower n_inducing, batch_size or max_iter")


def _msbpm(est, n, d, k) -> Cost:
    """MS-BPM (bsvm/msbpm). The N x N Gram matrix, its eigendecomposition, the nugget's per-point block
    (N x N) and the least-squares start's (N + r) x (N + r) normal matrix and Cholesky factor: measured
    ~4 N^2 doubles; the kept draws: chains x draws x (K - 1) x (N + 1).

    Time. The default two-class sampler ("hmc": ``prior="rkhs"``, ``nugget > 0``) moves every chain
    through the r-dimensional principal subspace of the kernel (``rank_tol``), so a sweep costs about
    6e-9 s x chains x N x r x n_leapfrog / 4, and the stopping rule's run is longer where r is large
    (more directions to mix: ~200 kept draws at r / N ~ 0.05, ~900 at r = N). r is known only once the
    pivoted Cholesky has run; before the fit it is guessed as min(N, 20 d^2 + 50) (RBF kernel, measured
    rank at the default tolerance: 2-D Ripley-like data 70-90, 20-D twonorm/ringnorm all N up to 2000).
    Measured default fits (CPU s, one thread) against this model, with 8 chains: Ripley-like 175 / 500 /
    1000 / 2000 rows 0.55 / 1.32 / 1.81 / 3.65 (model 1.2 / 1.8 / 2.7 / 4.6); twonorm 500 / 1000 / 2000
    rows 5.8 / 31 / 166, ringnorm 7.1 / 20 / 191 (model 12 / 48 / 192). With the default 4 chains since
    November 2026: Ripley-like 0.51 / 1.04 / 0.80 / 3.61, twonorm 500 / 1000 2.6 / 33 (model 0.75 / 1.05
    / 1.5 / 2.5, 6.3 / 24); 2-D data of 2,100 rows with 5 % flipped labels 8.6 (model 2.5: it mixes
    slowly, which no model of the size alone can know). (The model of the line sampler, below,
    had given 5-40 s for all of them.) The line sampler ("lines", or more classes): O(N^3) set-up, then
    every sweep moves all chains through O(N r) scores."""
    lines = not (k == 2 and est.sampler in ("auto", "hmc") and est.prior == "rkhs"
                 and float(est.nugget) > 0)
    if lines:
        # a sweep: 0.3 ms + 2.2e-7 s x chains x N x (K - 1); runs to the rule take about 3,000 sweeps
        # (fitted November 2026 to default fits, 16 chains, CPU s / sweeps: iris 5.9 / 3,340, wine 3.8 /
        # 1,852, 4 overlapping 2-D classes of 560 rows 123 / 18,492 (a slow mixer). Re-measured on 29
        # November, one thread: standardised iris 4.5 / 3,340 and wine 2.9 / 1,852 (1.35 and 1.57 ms a
        # sweep), the shipped iris.csv 7.9 / 6,244 (1.27 ms): the sweep's fixed part had fallen from
        # 0.76 to 0.3 ms. The model now gives 4.6 s for iris and 5.2 s for wine)
        S = _int(est.n_chains, 16)
        if est.n_samples in (None, "auto"):
            D, thin, sweeps = 350, 1, min(3000, _int(est.max_iter, 3000))
        else:
            D, thin = _int(est.n_samples, 100), _int(est.thin, 8)
            sweeps = _int(est.burn_in, 300) + D * thin
        secs = 3e-10 * n**3 + sweeps * (3.0e-4 + 2.2e-7 * S * n * (k - 1)) + 0.5
    else:
        S = _int(est.n_chains, 4)  # (4 chains since November 2026: MSBPM's n_chains)
        r = min(n, 20 * d * d + 50)
        D, thin = _int(est.n_samples, int(200 + 700 * r / n)), _int(est.thin, 1)
        sweeps = _int(est.burn_in, 100) + D * thin
        secs = 6e-9 * sweeps * S * n * r * _int(est.n_leapfrog, 4) / 4 + 0.3
    draws = S * min(D, 1000) * (k - 1) * (n + 1)
    mem = F8 * (4.5 * n * n + draws + 4 * n * d + 50 * S * n * (k - 1))
    # (the run length to the stopping rule depends on how fast the posterior mixes, as for the other
    # samplers: 2-D data of 2,100 rows with 5 % flipped labels took 1,580 sweeps, the model's guess about 340)
    slow = SLOW_NOTE if est.n_samples in (None, "auto") else ""
    hint = "use SBSVM (inducing points, memory independent of N) or SubgradientHMC(features='nystroem')"
    return Cost(mem, secs, "N^2 kernel: about 4 N x N matrices",
                _fewer_draws(est, D * thin / max(sweeps, 1), hint), slow)


def _seeger(est, n, d, k) -> Cost:
    """SeegerARD (bsvm/seeger). The prior covariance K, its Cholesky factor, K^-1 and the gradient matrix
    G = K^-1 - K^-1 Sigma K^-1 - a a' with its temporaries: measured ~11 N^2 doubles.

    Time: the fit warm-starts on nested subsets, so its cost grows more slowly than its O(N^2) products
    and O(N^3) factorisations suggest. Default fits, CPU s with one thread (November 2026): Ripley (2-D)
    500 / 1500 rows 3.9 / 15.7; twonorm (20-D) 300 / 700 / 1000 / 1500 / 3000 rows 0.4 / 1.5 / 2.2-2.5 /
    4.9 / 19-22; ringnorm (20-D) 700 / 1000 / 3000 rows 3.7 / 5.1-5.3 / 41-43; 30-D breast cancer 398
    rows 2.4; the dashboard's Ripley sample (175 rows) ~1. The model below follows the slowest of them
    (0.3 + 1.1e-3 N^1.3 s, plus N^3 / 1e10 for the factorisations at large N); the number of features
    hardly matters (the outer steps taken do). It had been 15 steps of the costs before the warm starts,
    5-14x too high (17 s shown for 700 rows that took 1.5-3.7 s)."""
    factors = min(_int(est.n_factors, 3), n)  # (SeegerARD clips M to the rows)
    mem = F8 * (11 * n * n + 6 * n * d + 4 * n * (factors + 2))
    # the model's fits had M <= 16; each inner evaluation costs O(n^2 (M + 1))
    secs = ((0.3 + 1.1e-3 * n ** 1.3 + 1e-10 * n ** 3) * min(1.0, _int(est.max_iter, 50) / 15)
            * max(1.0, (factors + 1) / 17))
    return Cost(mem, secs, "N^2 prior covariance: about 11 N x N matrices",
                "use SBSVM(kernel='ard') (inducing points, memory independent of N)")


def _hinge_params(est, n, d):
    p = d if est.features is None else min(_int(est.n_components, 100), n if est.features == "nystroem"
                                           else 10**9)
    return p, _int(est.n_chains, 4)


#: Typical kept draws per chain when ``n_samples="auto"`` (the run stops at the convergence rule), from
#: default fits on linear data (CPU s, one thread; 2k x 20, 20k x 20, 100k x 50): hmc 225-340 draws, sgld
#: 10,000-13,000 steps, sgnht 1,350-5,650 steps, GibbsSVM 1,700-8,700 sweeps. (Run lengths to the rule,
#: burn-in included, for the time estimates are in the methods' models below.)
_AUTO_DRAWS = {"hmc": 300, "sgld": 12000, "sgnht": 4000, "gibbs": 4000}
_BURNIN = {"hmc": 200, "sgld": 500, "sgnht": 500, "gibbs": 100}


def _iterations(est, kind: str, typical: float | None = None) -> int:
    """Iterations the run is expected to take: burn-in plus kept draws (x thin); when n_samples="auto",
    the typical length to the stopping rule (``typical``, from the method's measured runs; else burn-in
    plus ``_AUTO_DRAWS``); capped by max_iter (which counts burn-in too)."""
    burn = _int(est.n_burnin, _BURNIN[kind])
    if est.n_samples == "auto":
        total = int(typical) if typical is not None else burn + _AUTO_DRAWS[kind]
    else:
        total = burn + _int(est.n_samples, 500) * _int(est.thin, 1)
    return min(total, _int(est.max_iter, total))


SLOW_NOTE = "; a typical run to the convergence rule: a posterior that mixes slowly takes a few times longer"


def _fewer_draws(est, share: float, hint: str) -> str:
    """A sampler's remedy: first fewer draws when an explicit ``n_samples`` makes most of the run (the
    advice for MSBPM(n_samples=10**6) on 300 rows was only "use SBSVM", a review)."""
    if isinstance(est.n_samples, numbers.Integral) and share > 0.5:
        return f"lower n_samples ({int(est.n_samples):,} draws per chain asked), or {hint}"
    return hint


def _auto_note(est) -> str:
    """What an estimate of a run that stops at its convergence rule cannot know: how fast the posterior
    mixes (GibbsSVM on breast cancer, 569 x 30: 7,329 sweeps run in November 2026, where an earlier model
    said about 4,100)."""
    return SLOW_NOTE if est.n_samples == "auto" else ""


def _subgradient(est, n, d, k) -> Cost:
    """SubgradientHMC (bsvm/subgradient). The feature matrix (n x p), per-chain scores (chains x n per
    potential evaluation, minibatch rows for sgld/sgnht), the draws buffer, and the Laplace pilot's p x p
    metric. Binary hmc with the laplace metric screens the rows from 2e5 entries in the signed design
    (``potential.Screen``: a sorted copy of the design, and each gradient reads ~20 % of its rows).

    Time. hmc: per transition, the full-data subgradient about 5 times (the adaptive trajectory), each
    O(chains n P) for P parameters (P = p + 1 per class block), plus the whitening's O(P^2) and a fixed
    cost per class block. Runs to the stopping rule take about 400 + 15 P min(1, 1000 / n)^(1/2)
    transitions (more rows, a more nearly Gaussian posterior). Fitted to default fits (CPU s, one thread,
    November 2026; transitions): Ripley-like 175 / 2,000 rows 0.18 / 0.16 (425); linear 2k x 20 0.38
    (538), 20k x 20 0.56 (425, screened); breast cancer 569 x 30 0.50 (707); iris (3 classes, P = 15)
    1.00 (538); wine (3 classes, P = 42) 3.0 (1235); 28 x 60 1.3 (1342). The model gives 0.2 / 0.2 /
    0.5 / 0.9 / 0.6 / 1.2 / 2.2 / 1.0 s for these, and 9 s at 100k x 50 (5.3 measured there, November
    2026). (The earlier model, fitted before the trajectory and the gradient got cheaper, said 1.3 s for
    every small data set.) sgld/sgnht: one minibatch of b rows per step, a fixed cost per class block and
    O(chains b P); runs to the rule take about 500 + 12,000 blocks^(3/4) steps (sgld) and 3,000 (sgnht).
    Fitted to default fits (CPU s, one thread, November 2026; steps), sgld / sgnht: Ripley-like 175 rows
    2.5 (9175) / 0.50 (2213); linear 2k x 20 7.5 (13513) / 2.4 (4355), 20k x 20 6.1 (10780) / 1.2 (1852);
    breast cancer 569 x 30 5.1 (13513) / 1.2 (3070); iris (3 classes) 17.4 (29780) / 1.6 (3070). The model
    gives 3.1 / 0.8; 6.8 / 1.7, 6.9 / 1.9; 6.2 / 1.5; 16.2 / 1.8 s. (The earlier model, 0.5 ms + O(chains
    b P) per step and 4,500 sgnht steps, said 17 s and 6.7 s at 20k x 20.)"""
    p, C = _hinge_params(est, n, d)
    blocks = 1 if k == 2 else k
    P = (p + 1) * blocks
    hmc = est.sampler == "hmc"
    screened = hmc and k == 2 and est.preconditioner == "laplace" and n * (P + 1) >= 200_000
    rows = n if hmc else min(n, _int(est.batch_size, 1000) if est.batch_size else 1000)
    n_draws = _int(est.n_samples, _AUTO_DRAWS[est.sampler])
    mem = F8 * (3 * n * p + 6 * C * n * blocks + C * n_draws * P * 1.2 + 8 * P * P + 4 * n * d)
    if screened:
        mem += F8 * n * (P + 2.2)  # the sorted copy, its keys and order
    if hmc:
        # the posterior is closer to Gaussian (easier to mix) the more rows there are
        iters = _iterations(est, "hmc", 400 + 15 * P * math.sqrt(min(1.0, 1000 / max(n, 1))))
        leap = _int(est.n_leapfrog, 5) / 5  # the coefficients below are for the adaptive ~5 per transition
        per_iter = leap * (3.5e-4 * blocks**1.5 + 2.1e-9 * C * rows * P * (0.3 if screened else 1.0)
                           + 1e-7 * P * P)
        secs = iters * per_iter + 1e-8 * n * P * 50 + 0.05
        what = f"about {iters:,} transitions of {C} chains on {rows:,} rows"
    else:
        typical = 500 + (12000 * blocks**0.75 if est.sampler == "sgld" else 2500)
        iters = _iterations(est, est.sampler, typical)
        secs = iters * (2.4e-4 * blocks**0.75 + 3.5e-9 * C * rows * P) + 1e-8 * n * P * 50 + 0.05
        what = f"about {iters:,} minibatch steps of {C} chains on {rows:,} rows"
    slow = ("use sampler='sgld' (minibatches) or fewer n_samples/n_burnin" if hmc
            else "lower n_samples/n_burnin, or use SBSVM")
    return Cost(mem, secs, f"{est.sampler}: {what}", slow, _auto_note(est))


def _gibbs(est, n, d, k) -> Cost:
    """GibbsSVM (bsvm/subgradient/gibbs.py). Every sweep draws n latent scales per chain and solves a
    (p + 1) x (p + 1) system from X^T diag(1/lambda) X; memory: the features, n x p temporaries of the
    weighted product, the draws buffer.

    Time per sweep: a fixed 0.4 ms, O(chains n p) for the weighted product and O(chains p^3) for the
    factorisations. Sweeps to the stopping rule: data augmentation mixes more slowly as the data grow
    (the latent scales hold more of the information), about max(1000, 800 log2(n / 50)) + 60 min(p, n / 10).
    Fitted to default fits (CPU s, one thread, November 2026; sweeps): Ripley-like 140 / 175 / 2,000 rows
    0.69 (1242) / 1.1 (2670) / 3.0 (3955); linear 28 x 60 0.77 (1242), 300 x 5 1.2 (2670), 1k x 10 2.6
    (3955), 2k x 40 18 (8775), 5k x 20 20 (8775), 20k x 20 48 (5883); breast cancer 569 x 30 5.4 (7329).
    The model gives 0.6 / 0.7 / 2.3; 0.9, 1.1, 2.5, 13, 14, 62; 3.5 s. (The earlier model, 4,100 sweeps
    of at least 1.8 ms, said 8 s for every small data set.)"""
    p, C = _hinge_params(est, n, d)
    n_draws = _int(est.n_samples, _AUTO_DRAWS["gibbs"])
    mem = F8 * (4 * n * p + 4 * C * n + C * n_draws * (p + 1) * 1.2 + 4 * (p + 1) ** 2 + 4 * n * d)
    typical = max(1000.0, 800 * math.log2(max(n, 1) / 50)) + 60 * min(p, n / 10)
    total = _iterations(est, "gibbs", typical)
    secs = total * (4e-4 + 4.3e-9 * C * n * (p + 1) + 3e-10 * C * (p + 1) ** 3) + 0.05
    kept = 0.0 if est.n_samples == "auto" else _int(est.n_samples, 500) * _int(est.thin, 1) / max(total, 1)
    return Cost(mem, secs, f"about {total:,} sweeps of {C} chains over {n:,} rows",
                _fewer_draws(est, kept, "use SubgradientHMC(sampler='sgld') (minibatches) or SBSVM"),
                _auto_note(est))


def _platt(est, n, d, k) -> Cost:
    """PlattSVM (bsvm/platt.py): libsvm's SVC fitted cv + 1 times (the sigmoid's folds, then all rows).
    libsvm keeps a kernel cache (200 MB) and the data; its time grows like n^2 (more when many points are
    support vectors). Measured (``cv=5``, one thread, 29 November 2026): noisy two moons (noise 0.3, d = 2,
    a fifth of the rows support vectors) 0.08 / 0.40 / 1.57 / 6.51 CPU s at n = 2k / 5k / 10k / 20k, which
    this follows within 10 %; twonorm and ringnorm (d = 20, fewer support vectors) 0.07-0.08 / 0.28-0.32
    / 0.87-1.02 / 2.81-3.52 s, over-estimated up to 4x; a review's wide data, 3,000 x 300 and 3,000 x 784,
    2.79 and 7.47 s, which the d term follows (the kernel's cost per pair). (The former model,
    3.3e-9 n^2 max(d, 10) per fit, was 8-34x over on the first two sets, and said 80 minutes for a 93 s
    fit at 200,000 rows.)"""
    cv = _int(est.cv, 5)
    mem = F8 * 4 * n * d + min(200e6, 4.0 * n * n) + F8 * 4 * n * k  # the cache holds float32 columns
    secs = (cv + 1) * n**2 * (2.5e-9 + 1.6e-10 * d) + 0.05
    return Cost(mem, secs, f"libsvm fitted {cv + 1} times, O(n^2) each",
                "use SBSVM (minibatch inference) or subsample")


_MODELS = {"SBSVM": _sbsvm, "MSBPM": _msbpm, "SeegerARD": _seeger, "SubgradientHMC": _subgradient,
           "GibbsSVM": _gibbs, "PlattSVM": _platt}
