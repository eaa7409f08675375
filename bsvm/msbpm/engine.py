"""The population MCMC engine of MS-BPM (Vogt & Ostermann, sec. 4.3), BlackJAX style: ``init`` and
``step`` over an immutable :class:`PopulationState`.

Parameters: one block per non-anchor class, beta[c] in R^P with P = N + 1 (a weight per kernel column and
a bias), so class c + 1 scores ``phi(x) @ beta[c]`` and the anchor class 0 scores 0 (sec. 3.1). Prior:
isotropic N(0, prior_scale^2 I) (eq. 5). Likelihood: eq. 4 on the confusion counts of the argmax rule.

Each chain moves along a line with the exact sampler of :mod:`.line`. Directions:

* ``"ads"``: with probability ``ads_prob`` the difference of two other chains (parallel adaptive
  direction sampling, Gilks et al. 1994), otherwise a uniformly random direction (hit-and-run).
  The population is split at random into two halves; one half moves using differences of chains from
  the other half, which stay fixed meanwhile, then the roles swap. Given the fixed half the direction does
  not depend on the moving chain, so the exact line draw leaves the product posterior invariant, and a
  whole half moves in one batch of matrix products.
* ``"hit_and_run"``: uniformly random directions for every chain.
* ``"gibbs"``: a random coordinate axis for every chain (one kernel weight or bias of one class).

Optional per-point columns (``make_problem(point_scale=...)``, the nugget of ``MSBPM(prior="rkhs")``): the
line moves above leave them fixed and :func:`point_sweep` redraws them all exactly after every sweep.

The scores ``phi @ beta`` of every chain on the training set are cached and updated by ``u * (phi @ d)``,
so a move costs one O(N P K) product per chain (all chains in one GEMM) plus an O(N K log N) sweep;
``refresh`` recomputes them from beta now and then to remove the accumulated rounding.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.special import log_ndtr, ndtri_exp

from .likelihood import confusion_counts, count_table, dirichlet_alpha, log_likelihood, log_likelihood_offset
from .line import interval_distribution, sample_line

DIRECTIONS = ("ads", "hit_and_run", "gibbs")
ADS, HIT_AND_RUN, GIBBS = 0, 1, 2


class Problem(NamedTuple):
    """Everything fixed during sampling."""

    phi: np.ndarray      # (N, P) features of the training points: kernel columns and the bias column
    y: np.ndarray        # (N,) class index 0..K-1
    n_classes: int
    alpha: np.ndarray    # (K, K) Dirichlet parameters of eq. 4
    table: np.ndarray    # lgamma(m + alpha) per confusion cell, m = 0..N
    offset: float        # constant term of eq. 4
    prior_scale: float
    n_point: int = 0     # trailing per-point columns: phi[:, P - N:] = point_scale * I (a nugget, see below)
    point_scale: float = 0.0
    block_chol: np.ndarray | None = None  # Cholesky factor of I + F^T F / point_scale^2, F = leading phi


class PopulationState(NamedTuple):
    beta: np.ndarray      # (S, K - 1, P)
    scores: np.ndarray    # (S, N, K - 1) = phi @ beta[c] for every chain and class
    counts: np.ndarray    # (S, K, K) confusion counts M of every chain
    log_lik: np.ndarray   # (S,) eq. 4
    sq_norm: np.ndarray   # (S,) ||beta||^2


class StepInfo(NamedTuple):
    u: np.ndarray         # (S,) the distance moved along each chain's direction
    kind: np.ndarray      # (S,) ADS, HIT_AND_RUN or GIBBS
    n_breaks: np.ndarray  # (S,) number of discontinuities found on each line


def make_problem(phi, y, n_classes: int, nu: float = 1.0, prior_scale: float = 1.0,
                 point_scale: float = 0.0) -> Problem:
    """``point_scale > 0`` appends N per-point columns ``point_scale * I`` to ``phi`` (an independent
    N(0, point_scale^2 prior_scale^2) term of each training score: the nugget of Herbrich et al.'s
    soft-margin kernel K + lambda I); :func:`point_sweep` updates them one by one."""
    phi = np.asarray(phi, dtype=float)
    y = np.asarray(y, dtype=np.intp)
    n = len(y)
    n_point, block_chol = 0, None
    if point_scale > 0:
        F = phi
        block_chol = np.linalg.cholesky(np.eye(F.shape[1]) + (F.T @ F) / point_scale**2)
        phi = np.hstack([phi, float(point_scale) * np.eye(n)])
        n_point = n
    phi = np.ascontiguousarray(phi)
    alpha = dirichlet_alpha(n_classes, n, nu)
    offset = log_likelihood_offset(np.bincount(y, minlength=n_classes), alpha)
    return Problem(phi, y, int(n_classes), alpha, count_table(alpha, n), offset, float(prior_scale), n_point,
                   float(point_scale), block_chol)


def log_posterior(problem: Problem, state: PopulationState) -> np.ndarray:
    """Unnormalised log posterior of every chain: eq. 4 plus the log of the normal prior (eq. 5)."""
    return state.log_lik - 0.5 * state.sq_norm / problem.prior_scale**2


def _with_anchor(scores: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((*scores.shape[:-1], 1)), scores], axis=-1)


def _evaluate(problem: Problem, beta: np.ndarray, scores: np.ndarray) -> PopulationState:
    assigned = np.argmax(_with_anchor(scores), axis=-1)
    counts = confusion_counts(problem.y, assigned, problem.n_classes)
    return PopulationState(beta, scores, counts, log_likelihood(counts, problem.alpha),
                           np.einsum("skp,skp->s", beta, beta))


def direction_scores(problem: Problem, d: np.ndarray) -> np.ndarray:
    """phi @ d[c] for every chain and class: (S, K-1, P) -> (S, N, K-1), one GEMM (the per-point block
    ``point_scale * I`` by an elementwise product)."""
    S, km1, P = d.shape
    first = P - problem.n_point
    out = (d[..., :first].reshape(S * km1, first) @ problem.phi[:, :first].T).reshape(S, km1, -1)
    if problem.n_point:
        out += problem.point_scale * d[..., first:]
    return out.transpose(0, 2, 1)


def init(rng: np.random.Generator, problem: Problem, n_chains: int) -> PopulationState:
    """Start every chain from an independent prior draw."""
    km1, P = problem.n_classes - 1, problem.phi.shape[1]
    beta = problem.prior_scale * rng.standard_normal((n_chains, km1, P))
    return _evaluate(problem, beta, direction_scores(problem, beta))


def move(rng: np.random.Generator, problem: Problem, state: PopulationState, d: np.ndarray,
         g: np.ndarray | None = None) -> tuple[PopulationState, np.ndarray, np.ndarray]:
    """Draw every chain of ``state`` exactly from the posterior restricted to its line beta + u d.

    ``d``: (S, K-1, P) directions; ``g``: their training scores if already known. Returns the new state,
    u and the number of breaks per chain.
    """
    if g is None:
        g = direction_scores(problem, d)
    dd = np.einsum("skp,skp->s", d, d)
    ok = dd > 0  # a zero direction (two identical chains) cannot move its chain
    dd_safe = np.where(ok, dd, 1.0)
    mean = -np.einsum("skp,skp->s", state.beta, d) / dd_safe
    sd = problem.prior_scale / np.sqrt(dd_safe)
    dist = interval_distribution(_with_anchor(state.scores), _with_anchor(g), problem.y, problem.table,
                                 problem.offset, mean, sd)
    u, _ = sample_line(rng, dist)
    u = np.where(ok & np.isfinite(u), u, 0.0)  # a guard: a non-finite draw would kill the chain
    beta = state.beta + u[:, None, None] * d
    scores = state.scores + u[:, None, None] * g
    n_breaks = np.count_nonzero(np.isfinite(dist.hi[:, :-1]), axis=1)
    return _evaluate(problem, beta, scores), u, n_breaks


def _leading(state: PopulationState, n_point: int) -> PopulationState:
    """The state restricted to the leading coordinates, the per-point part held fixed: its scores
    contribution is a constant offset of every training score, which the line sampler takes as given."""
    lead = state.beta[..., :-n_point]
    return state._replace(beta=lead, sq_norm=np.einsum("skp,skp->s", lead, lead))


def _take(state: PopulationState, idx: np.ndarray) -> PopulationState:
    return PopulationState(*(x[idx] for x in state))


def _put(state: PopulationState, idx: np.ndarray, part: PopulationState) -> PopulationState:
    out = []
    for whole, sub in zip(state, part):
        whole = whole.copy()
        whole[idx] = sub
        out.append(whole)
    return PopulationState(*out)


def _random_directions(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape)  # isotropic; the line sampler does not care about the length


def _gibbs_directions(rng, problem: Problem, n: int):
    km1, P = problem.n_classes - 1, problem.phi.shape[1]
    c = rng.integers(km1, size=n)
    p = rng.integers(P, size=n)
    d = np.zeros((n, km1, P))
    d[np.arange(n), c, p] = 1.0
    g = np.zeros((n, problem.phi.shape[0], km1))
    g[np.arange(n), :, c] = problem.phi[:, p].T
    return d, g


def step(rng: np.random.Generator, problem: Problem, state: PopulationState, direction: str = "ads",
         ads_prob: float = 0.85) -> tuple[PopulationState, StepInfo]:
    """One sweep: every chain makes one exact line move."""
    S = state.beta.shape[0]
    if problem.n_point:  # the per-point coordinates are left to point_sweep; lines move the rest
        new, info = step(rng, problem._replace(phi=problem.phi[:, :-problem.n_point], n_point=0),
                         _leading(state, problem.n_point), direction, ads_prob)
        beta = np.concatenate([new.beta, state.beta[..., -problem.n_point:]], axis=-1)
        return _evaluate(problem, beta, new.scores), info
    if direction == "gibbs":
        d, g = _gibbs_directions(rng, problem, S)
        new, u, nb = move(rng, problem, state, d, g)
        return new, StepInfo(u, np.full(S, GIBBS), nb)
    if direction == "hit_and_run":
        new, u, nb = move(rng, problem, state, _random_directions(rng, state.beta.shape))
        return new, StepInfo(u, np.full(S, HIT_AND_RUN), nb)
    if direction != "ads":
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}.")
    perm = rng.permutation(S)
    halves = (perm[: S // 2], perm[S // 2:])
    u_all, kind_all, nb_all = np.zeros(S), np.zeros(S, dtype=np.intp), np.zeros(S, dtype=np.intp)
    for moving, fixed in (halves, halves[::-1]):
        m, f = len(moving), len(fixed)
        i1 = rng.integers(f, size=m)
        i2 = (i1 + 1 + rng.integers(f - 1, size=m)) % f  # a second, different chain of the fixed half
        d = state.beta[fixed[i1]] - state.beta[fixed[i2]]
        use_ads = rng.random(m) < ads_prob
        hr = np.flatnonzero(~use_ads)
        d[hr] = _random_directions(rng, (hr.size, *d.shape[1:]))
        # g = phi @ d by a fresh product: differencing cached scores instead would feed each chain's
        # rounding error into others, multiplied by u, and that error grows geometrically over sweeps
        part, u, nb = move(rng, problem, _take(state, moving), d)
        state = _put(state, moving, part)
        u_all[moving], kind_all[moving], nb_all[moving] = u, np.where(use_ads, ADS, HIT_AND_RUN), nb
    return state, StepInfo(u_all, kind_all, nb_all)


def draw_confusion(rng: np.random.Generator, problem: Problem, state: PopulationState) -> np.ndarray:
    """log pi ~ its conditional Dirichlet(M + alpha), row-wise, for every chain: (S, K, K) (sec. 3.2)."""
    gam = rng.standard_gamma(state.counts + problem.alpha)  # (S, K, K)
    return np.log(gam) - np.log(gam.sum(axis=2, keepdims=True))


def point_sweep(rng: np.random.Generator, problem: Problem, state: PopulationState,
                log_pi: np.ndarray | None = None) -> PopulationState:
    """Exact Gibbs update of all per-point (nugget) coordinates, every chain and class at once.

    Eq. 4 is the confusion matrix pi marginalised out (sec. 3.2). Drawing pi from its conditional
    Dirichlet(M + alpha) (row-wise), updating the per-point coordinates given pi, then discarding pi leaves
    the marginal posterior of beta invariant (data augmentation), and given pi the likelihood factorises
    over examples, so all N coordinates of a class update in parallel. Coordinate e of example i and class
    c moves only f_c(x_i) = base + point_scale * e, so its line has one break: class c wins example i iff
    e > u* = (max of the other classes' scores - base) / point_scale. The two sides are weighted by
    pi[y_i, winner] times the N(0, prior_scale^2) prior mass and e is drawn from the truncated prior.
    O(S N K) per class. ``log_pi``: a confusion matrix already drawn (:func:`draw_confusion`) for the
    block "pi, then (z, e) given pi" of :func:`bsvm.msbpm.hmc.collapsed_step`; None draws it here.
    """
    if problem.n_point == 0:
        return state
    S, km1, P = state.beta.shape
    N = problem.n_point
    first = P - N
    s, ps = problem.point_scale, problem.prior_scale
    if log_pi is None:
        log_pi = draw_confusion(rng, problem, state)
    log_pi_y = log_pi[:, problem.y, :]  # (S, N, K): log pi[y_i, p]
    beta, scores = state.beta.copy(), state.scores.copy()
    for c in range(km1):
        full = _with_anchor(scores)
        base = full[..., c + 1] - s * beta[:, c, first:]
        if km1 == 1:  # two classes: the only other class is the anchor, score 0
            best_other = 0.0
            lp_other = log_pi_y[..., 0]
        else:
            full[..., c + 1] = -np.inf
            other = np.argmax(full, axis=2)  # (S, N)
            best_other = np.take_along_axis(full, other[..., None], axis=2)[..., 0]
            lp_other = np.take_along_axis(log_pi_y, other[..., None], axis=2)[..., 0]
        u_star = (best_other - base) / (s * ps)  # in prior sd units
        # prior masses of e < u* and e > u*: one log-CDF for the smaller tail, log1p for the larger
        tail = log_ndtr(-np.abs(u_star))
        big = np.log1p(-np.exp(tail))
        below = np.where(u_star < 0, tail, big)
        above = np.where(u_star < 0, big, tail)
        lw_o = lp_other + below
        lw_c = log_pi_y[..., c + 1] + above
        wins = np.log(rng.random((S, N))) < lw_c - np.logaddexp(lw_o, lw_c)
        # one-sided truncated normal by inversion in log space: z <= b with P = U Phi(b), b = +-u*
        b = np.where(wins, -u_star, u_star)
        z = np.minimum(ndtri_exp(np.log(rng.random((S, N))) + np.where(wins, above, below)), b)
        e = ps * np.where(wins, -z, z)
        scores[..., c] = base + s * e
        beta[:, c, first:] = e
    return _evaluate(problem, beta, scores)


def block_update(rng: np.random.Generator, problem: Problem, state: PopulationState) -> PopulationState:
    """Exact Gibbs draw of all leading coordinates z of every chain and class at once, given the latent
    scores f = F z + point_scale * e (needs the per-point nugget columns).

    Write the state as (z, f) instead of (z, e): a linear change of variables with unit Jacobian. The
    likelihood (eq. 4) depends on f only, so given f the posterior of z is the Gaussian
    N(z; 0, s0^2 I) N(f; F z, s0^2 point_scale^2 I) (s0 = prior_scale): precision A / s0^2 with
    A = I + F^T F / point_scale^2, mean A^-1 F^T f / point_scale^2. Drawing z from it, f held fixed, and
    setting e = (f - F z) / point_scale moves every chain through the whole leading space in one step
    (the line moves change one direction per sweep), leaving the scores, the confusion counts and the
    posterior unchanged. Together with :func:`point_sweep` (f given z) this is a two-block Gibbs sampler,
    like Albert & Chib's (1993) for probit regression. Cost: two triangular solves with K-1 right-hand
    sides per chain, O(S K r^2 + S K N r).
    """
    if problem.n_point == 0 or problem.block_chol is None:
        return state
    S, km1, P = state.beta.shape
    first = P - problem.n_point
    s, ps, L = problem.point_scale, problem.prior_scale, problem.block_chol
    F = problem.phi[:, :first]
    f = state.scores.transpose(0, 2, 1).reshape(S * km1, -1)  # (S(K-1), N)
    rhs = (f @ F).T / s**2  # (r, S(K-1))
    mean = cho_solve((L, True), rhs, check_finite=False)
    noise = solve_triangular(L, rng.standard_normal(rhs.shape), lower=True, trans="T", check_finite=False)
    z = (mean + ps * noise).T  # (S(K-1), r)
    e = (f - z @ F.T) / s
    beta = np.concatenate([z, e], axis=1).reshape(S, km1, P)
    sq_norm = np.einsum("skp,skp->s", beta, beta)
    return PopulationState(beta, state.scores, state.counts, state.log_lik, sq_norm)


def scale_move(rng: np.random.Generator, problem: Problem, state: PopulationState) -> PopulationState:
    """Exact draw of each chain's overall scale (a group move, Liu & Wu 1999): beta <- g beta.

    The likelihood (eq. 4) depends on the argmax only, so it is invariant under g > 0 (sec. 3.3), and the
    conditional of g under the isotropic normal prior, with the Haar measure dg / g, is
    p(g) ~ g^(D-1) exp(-g^2 ||beta||^2 / (2 s0^2)): g^2 ~ Gamma(D / 2, rate ||beta||^2 / (2 s0^2)).
    Scores scale with beta; counts and likelihood do not change. Cheap, and it removes the slow radial
    drift that the data-augmentation steps (f given z, z given f) share with Albert & Chib's sampler.
    """
    S = state.beta.shape[0]
    D = state.beta[0].size
    rate = state.sq_norm / (2.0 * problem.prior_scale**2)
    g = np.sqrt(rng.standard_gamma(D / 2.0, size=S) / rate)
    return PopulationState(state.beta * g[:, None, None], state.scores * g[:, None, None], state.counts,
                           state.log_lik, state.sq_norm * g**2)


def refresh(problem: Problem, state: PopulationState) -> PopulationState:
    """Recompute the cached scores from beta, removing the rounding drift of many additive updates."""
    return _evaluate(problem, state.beta, direction_scores(problem, state.beta))
