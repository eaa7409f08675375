"""The exact univariate sampler of MS-BPM along a search line (Vogt & Ostermann, sec. 4.2).

Along the line beta_t + u d, class scores are straight lines in u: ``f_c(x_i; u) = a_ic + u g_ic`` with
``a = scores at beta_t`` and ``g = scores of d`` (class 1, the anchor, has a = g = 0). The posterior on the
line is piecewise "likelihood x Gaussian":

1. each example's assigned class follows the upper envelope of its K lines, which changes at most K - 1
   times (:func:`upper_envelope`, a vectorised convex-hull walk, O(N K^2));
2. sorting all breakpoints and sweeping the confusion counts M gives the likelihood of eq. 4 on every
   interval (:func:`interval_distribution`);
3. the interval weight is that likelihood times the prior's mass on the interval (eq. 8), in log space;
4. an interval is drawn, then u from the prior truncated to it (:func:`sample_line`).

No step size, no rejection: the draw is from the exact conditional. Every function works on a leading
"chain" axis so a whole half-population moves in one call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import log_ndtr, ndtri_exp


def upper_envelope(a: np.ndarray, g: np.ndarray):
    """Upper envelope of the lines ``a[..., c] + u g[..., c]`` over u in (-inf, inf).

    Returns ``start`` (...): the winning class as u -> -inf; ``breaks`` (..., K-1): the u where the winner
    changes, in increasing order, +inf for unused slots; ``to`` (..., K-1): the winner right after each
    break (equal to the previous winner for unused slots). Ties (parallel lines, several lines crossing at
    one point) are resolved the way ``argmax`` resolves them just beside the point.
    """
    K = a.shape[-1]
    if K == 2:
        return _envelope_two(a, g)
    with np.errstate(invalid="ignore"):
        # as u -> -inf the line with the smallest slope wins; among parallel ones the higher intercept
        gmin = g.min(axis=-1, keepdims=True)
        cur = np.argmax(np.where(g == gmin, a, -np.inf), axis=-1)
    shape = a.shape[:-1]
    breaks = np.full((*shape, K - 1), np.inf)
    to = np.empty((*shape, K - 1), dtype=np.intp)
    start = cur.copy()
    u_cur = np.full(shape, -np.inf)
    for k in range(K - 1):  # at most K - 1 changes per example (loop over classes, not examples)
        ac = np.take_along_axis(a, cur[..., None], axis=-1)
        gc = np.take_along_axis(g, cur[..., None], axis=-1)
        steeper = g > gc
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(steeper, (ac - a) / (g - gc), np.inf)
        umin = cross.min(axis=-1)
        # of the lines overtaking at the same point, the steepest stays on top afterwards
        nxt = np.argmax(np.where(steeper & (cross == umin[..., None]), g, -np.inf), axis=-1)
        valid = np.isfinite(umin)
        umin = np.maximum(umin, u_cur)  # rounding must not reorder one example's own breaks
        breaks[..., k] = np.where(valid, umin, np.inf)
        cur = np.where(valid, nxt, cur)
        to[..., k] = cur
        u_cur = np.where(valid, umin, u_cur)
    return start, breaks, to


def _envelope_two(a, g):
    """Two classes: one break where the score difference a_1 - a_0 + u (g_1 - g_0) changes sign."""
    da = a[..., 1] - a[..., 0]
    dg = g[..., 1] - g[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        brk = np.where(dg != 0, -da / dg, np.inf)
    # as u -> -inf class 1 wins iff its slope is smaller; parallel lines: the higher one throughout
    start = np.where(dg != 0, dg < 0, da > 0).astype(np.intp)
    to = np.where(dg != 0, 1 - start, start)
    return start, brk[..., None], to[..., None]


def log_normal_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log(Phi(hi) - Phi(lo)) for standardised bounds, accurate in both tails (-inf for empty intervals)."""
    return _log_mass_from_tails(lo, hi, log_ndtr(-np.abs(lo)), log_ndtr(-np.abs(hi)))


def _log1mexp(x):
    """log(1 - exp(x)) for x <= 0, accurate for x near 0 and for very negative x."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    near0 = x > -np.log(2.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out[near0] = np.log(-np.expm1(x[near0]))
        out[~near0] = np.log1p(-np.exp(x[~near0]))
    return out


def _log_mass_from_tails(lo, hi, tail_lo, tail_hi):
    """The mass of [lo, hi] from the log tail probabilities log Phi(-|z|) of its ends: one log_ndtr per end.

    Both ends on one side of 0: difference of the two tails (the nearer end's tail is the larger).
    Straddling 0: one minus both tails. Both forms avoid subtracting numbers close to 1.
    """
    same_side = (lo >= 0) | (hi <= 0)
    near = np.where(lo >= 0, tail_lo, tail_hi)
    far = np.where(lo >= 0, tail_hi, tail_lo)
    with np.errstate(invalid="ignore"):
        one_side = near + _log1mexp(far - near)  # NaN only for empty intervals, masked below
    straddle = np.log1p(-np.minimum(np.exp(tail_lo) + np.exp(tail_hi), 1.0))
    out = np.where(same_side, one_side, straddle)
    # both tails underflow to -inf for astronomically far intervals (a break at u ~ 1e200 when the
    # direction barely moves an example): their mass is 0, not NaN
    return np.where((hi > lo) & ~np.isnan(out), out, -np.inf)


def sample_truncated_normal(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """One N(0, 1) draw truncated to [lo, hi] per element, by inversion in log space (exact in the tails)."""
    flip = lo > 0
    a = np.where(flip, -hi, lo)
    b = np.where(flip, -lo, hi)
    la = log_ndtr(a)
    log_mass = log_normal_mass(a, b)
    log_p = np.logaddexp(la, np.log(rng.random(np.shape(a))) + log_mass)
    x = np.clip(ndtri_exp(np.minimum(log_p, 0.0)), a, b)
    return np.where(flip, -x, x)


class IntervalDistribution(NamedTuple):
    """The discretised line posterior of sec. 4.2 step 2, one row per chain (E = N (K - 1) breaks)."""

    lo: np.ndarray        # (S, E + 1) left end of each interval in u
    hi: np.ndarray        # (S, E + 1) right end
    log_lik: np.ndarray   # (S, E + 1) log l_dm(M) on the interval (eq. 4)
    log_mass: np.ndarray  # (S, E + 1) log prior mass of the interval (eq. 8)
    mean: np.ndarray      # (S,) prior along the line is N(mean, sd^2) in u
    sd: np.ndarray        # (S,)

    @property
    def log_weight(self) -> np.ndarray:
        return self.log_lik + self.log_mass


def interval_distribution(a, g, y, table, offset, mean, sd) -> IntervalDistribution:
    """Interval likelihoods and prior masses along each chain's line.

    a, g:   (S, N, K) class scores at the current point and of the direction, anchor column included.
    y:      (N,) class index of each training example.
    table:  :func:`likelihood.count_table`, lgamma(m + alpha) per confusion cell and count m.
    offset: the constant term of eq. 4 (:func:`likelihood.log_likelihood_offset`).
    mean, sd: (S,) the prior's 1-D Gaussian in u.
    """
    S, N, K = a.shape
    start, breaks, to = upper_envelope(a, g)
    frm = np.concatenate([start[..., None], to[..., :-1]], axis=-1)
    cell_from = (y[None, :, None] * K + frm).reshape(S, -1)
    cell_to = (y[None, :, None] * K + to).reshape(S, -1)
    breaks = breaks.reshape(S, -1)
    order = np.argsort(breaks, axis=1, kind="stable")  # stable: keeps each example's own breaks in order
    u = np.take_along_axis(breaks, order, axis=1)
    cell_from = np.take_along_axis(cell_from, order, axis=1)
    cell_to = np.take_along_axis(cell_to, order, axis=1)
    # counts at u = -inf, then the sweep: each break moves one example from cell_from to cell_to
    start_cells = y[None, :] * K + start
    log_lik = np.full((S, u.shape[1] + 1), float(offset))
    for q in range(K * K):  # loop over confusion cells (K^2), vectorised over chains and events
        m0 = np.count_nonzero(start_cells == q, axis=1)
        inc = (cell_to == q).astype(np.int32) - (cell_from == q)
        run = np.empty_like(log_lik, dtype=np.int64)
        run[:, 0] = m0
        np.cumsum(inc, axis=1, out=run[:, 1:])
        run[:, 1:] += m0[:, None]
        log_lik += table[q][run]
    bounds = np.concatenate([np.full((S, 1), -np.inf), u, np.full((S, 1), np.inf)], axis=1)
    with np.errstate(invalid="ignore"):
        z = (bounds - mean[:, None]) / sd[:, None]
    tails = log_ndtr(-np.abs(z))  # one log-CDF evaluation per breakpoint, shared by its two intervals
    lo, hi = bounds[:, :-1], bounds[:, 1:]
    log_mass = _log_mass_from_tails(z[:, :-1], z[:, 1:], tails[:, :-1], tails[:, 1:])
    return IntervalDistribution(lo, hi, log_lik, log_mass, mean, sd)


def sample_line(rng: np.random.Generator, dist: IntervalDistribution):
    """Draw an interval with probability proportional to its weight (Gumbel-max), then u inside it from
    the truncated prior (sec. 4.2 steps 3-4). Returns (u, interval index), each of shape (S,)."""
    w = dist.log_weight
    gumbel = -np.log(-np.log(rng.random(w.shape)))
    j = np.argmax(w + gumbel, axis=1)[:, None]
    mean, sd = dist.mean, dist.sd
    lo = (np.take_along_axis(dist.lo, j, axis=1)[:, 0] - mean) / sd
    hi = (np.take_along_axis(dist.hi, j, axis=1)[:, 0] - mean) / sd
    z = sample_truncated_normal(rng, lo, hi)
    return mean + sd * z, j[:, 0]
