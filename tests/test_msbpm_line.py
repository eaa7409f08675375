"""MS-BPM building blocks checked against brute force: eq. 4, the envelope of sec. 4.2 and the exact line
sampler (draws vs the conditional density computed on a fine grid)."""

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from bsvm.msbpm.likelihood import (
    confusion_counts,
    count_table,
    dirichlet_alpha,
    log_likelihood,
    log_likelihood_offset,
)
from bsvm.msbpm.line import interval_distribution, log_normal_mass, sample_line, upper_envelope


def _brute_log_lik(counts, alpha):
    """Eq. 4 written out cell by cell, independent of the vectorised version."""
    K = counts.shape[0]
    out = 0.0
    for c in range(K):
        out += sum(gammaln(counts[c, p] + alpha[c, p]) for p in range(K))
        out -= gammaln(sum(counts[c, p] + alpha[c, p] for p in range(K)))
    return out


def _winner_from_envelope(start, breaks, to, u):
    """Class on top at each u (G,) according to the envelope of each example: (G, N)."""
    n_passed = (breaks[None, :, :] <= u[:, None, None]).sum(axis=2)  # (G, N)
    prev = np.concatenate([start[:, None], to], axis=1)  # (N, K): winner after 0, 1, ... breaks
    return np.take_along_axis(prev[None].repeat(len(u), 0), n_passed[..., None], axis=2)[..., 0]


@pytest.mark.parametrize("K", [2, 3, 4])
@pytest.mark.parametrize("parallel", [False, True])
def test_envelope_matches_brute_force_argmax(K, parallel):
    rng = np.random.default_rng(K)
    N = 120
    a = rng.normal(size=(N, K))
    g = rng.normal(size=(N, K))
    a[:, 0] = g[:, 0] = 0.0  # the anchor class
    if parallel:  # as in a Gibbs move on one class: every other class keeps slope 0, like the anchor
        g[:, 2:] = 0.0
        g[::3, 1] = 0.0  # and some examples whose lines are all parallel: no break at all
    start, breaks, to = upper_envelope(a, g)
    finite = breaks[np.isfinite(breaks)]
    with np.errstate(invalid="ignore"):  # inf - inf in unused slots
        assert np.all(np.diff(breaks, axis=1)[np.isfinite(breaks[:, 1:])] >= 0)
    assert np.all(np.isfinite(breaks).sum(axis=1) <= K - 1)
    u = np.linspace(finite.min() - 5, finite.max() + 5, 8001)
    brute = np.argmax(a[None] + u[:, None, None] * g[None], axis=2)
    env = _winner_from_envelope(start, breaks, to, u)
    near_break = (np.abs(u[:, None, None] - breaks[None]) < 1e-9).any(axis=2)
    assert np.array_equal(env[~near_break], brute[~near_break])
    # every break is a real change of winner (no spurious discontinuities)
    rows, cols = np.nonzero(np.isfinite(breaks))
    b = breaks[rows, cols]
    left = np.argmax(a[rows] + (b - 1e-7)[:, None] * g[rows], axis=1)
    right = np.argmax(a[rows] + (b + 1e-7)[:, None] * g[rows], axis=1)
    assert np.all(left != right)
    assert np.array_equal(right, to[rows, cols])


def test_log_likelihood_matches_cell_by_cell_formula():
    rng = np.random.default_rng(0)
    for K in (2, 3, 4):
        alpha = dirichlet_alpha(K, 40, nu=0.7)
        M = rng.integers(0, 12, size=(K, K))
        assert log_likelihood(M, alpha) == pytest.approx(_brute_log_lik(M, alpha), rel=1e-12)
        table = count_table(alpha, 60)
        via_table = table[np.arange(K * K), M.ravel()].sum() + log_likelihood_offset(M.sum(1), alpha)
        assert via_table == pytest.approx(_brute_log_lik(M, alpha), rel=1e-12)
    y = rng.integers(0, 3, 50)
    p = rng.integers(0, 3, (4, 50))
    M = confusion_counts(y, p, 3)
    for s in range(4):
        assert np.array_equal(M[s], np.array([[np.sum((y == c) & (p[s] == q)) for q in range(3)]
                                             for c in range(3)]))


def _confusions(row_sizes):
    """Every confusion matrix with the given class sizes (all ways to split each row)."""
    K = len(row_sizes)
    rows = [[r for r in itertools.product(range(n + 1), repeat=K) if sum(r) == n] for n in row_sizes]
    for combo in itertools.product(*rows):
        yield np.array(combo)


@pytest.mark.parametrize("K, sizes", [(2, (7, 5)), (3, (4, 3, 3))])
def test_fewer_errors_never_lower_likelihood_for_nu_at_most_one(K, sizes):
    """Sec. 3.2: moving one example from a wrong cell (c, p) to its right cell (c, c) must not lower eq. 4
    for nu <= 1; exhaustively over all confusion matrices of a small problem. The flat prior (nu = inf)
    violates the property, which shows the check can fail."""
    N = sum(sizes)

    def violations(nu):
        alpha = dirichlet_alpha(K, N, nu)
        bad = 0
        for M in _confusions(sizes):
            ll = log_likelihood(M, alpha)
            for c, p in itertools.product(range(K), repeat=2):
                if c != p and M[c, p] > 0:
                    better = M.copy()
                    better[c, p] -= 1
                    better[c, c] += 1
                    bad += log_likelihood(better, alpha) < ll
        return bad

    for nu in (0.1, 0.5, 1.0):
        assert violations(nu) == 0
    assert violations(np.inf) > 0


def test_log_normal_mass_tails():
    mpmath = pytest.importorskip("mpmath")
    mp, mpf, ncdf, log = mpmath.mp, mpmath.mpf, mpmath.ncdf, mpmath.log
    mp.dps = 50
    lo = np.array([-np.inf, -3.0, -1.0, 0.5, 10.0, 30.0, -40.0, -np.inf, 5.0])
    hi = np.array([np.inf, -2.0, 2.0, 0.6, 11.0, 31.0, -39.0, -50.0, np.inf])
    def exact(a, b):
        if a > 0:  # upper tail: use the mirror image so 50 digits suffice
            a, b = -b, -a
        return float(log(ncdf(mpf(b)) - ncdf(mpf(a))))

    ref = [exact(a, b) for a, b in zip(lo, hi)]
    np.testing.assert_allclose(log_normal_mass(lo, hi), ref, rtol=1e-10)
    assert log_normal_mass(np.array([2.0]), np.array([2.0]))[0] == -np.inf
    # breaks at astronomically large |u| (a direction that barely moves an example): mass 0, never NaN
    far = log_normal_mass(np.array([-np.inf, 1e200, -1e300]), np.array([-1e300, np.inf, -1e299]))
    assert np.all(far == -np.inf)


def _grid_density(a, g, y, K, alpha, mean, sd, u):
    """Unnormalised log conditional density on the line at each u, by brute-force argmax and eq. 4."""
    assigned = np.argmax(a[None] + u[:, None, None] * g[None], axis=2)
    M = confusion_counts(y, assigned, K)
    return log_likelihood(M, alpha) + stats.norm.logpdf(u, mean, sd)


@pytest.mark.parametrize("K", [2, 3])
def test_line_sampler_matches_grid_density(K):
    """Draws of the exact univariate sampler vs the conditional density on a fine grid: KS test on the CDF
    and a chi-square test on the probabilities of the intervals between breaks."""
    rng = np.random.default_rng(10 + K)
    N = 9
    y = np.arange(N) % K
    a = rng.normal(scale=0.5, size=(N, K))
    g = rng.normal(size=(N, K))
    a[:, 0] = g[:, 0] = 0.0
    alpha = dirichlet_alpha(K, N, nu=0.5)
    mean, sd = 0.3, 1.2
    S = 20000  # the same line replicated as S chains: S independent draws in one call
    A = np.broadcast_to(a, (S, N, K))
    G = np.broadcast_to(g, (S, N, K))
    offset = log_likelihood_offset(np.bincount(y, minlength=K), alpha)
    dist = interval_distribution(A, G, y, count_table(alpha, N), offset, np.full(S, mean), np.full(S, sd))
    u, _ = sample_line(np.random.default_rng(0), dist)

    grid = np.linspace(mean - 9 * sd, mean + 9 * sd, 400001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    logp = _grid_density(a, g, y, K, alpha, mean, sd, mid)
    w = np.exp(logp - logp.max()) * np.diff(grid)
    cdf_grid = np.concatenate([[0.0], np.cumsum(w)]) / w.sum()

    # the likelihood must make this line non-trivial, or the test could not tell it from the prior
    assert stats.kstest(u, stats.norm(mean, sd).cdf).pvalue < 1e-6
    assert stats.kstest(u, lambda x: np.interp(x, grid, cdf_grid)).pvalue > 1e-3

    breaks = np.unique(dist.hi[0][np.isfinite(dist.hi[0])])
    edges = np.concatenate([[grid[0]], breaks[(breaks > grid[0]) & (breaks < grid[-1])], [grid[-1]]])
    p_exact = np.diff(np.interp(edges, grid, cdf_grid))
    observed = np.histogram(np.clip(u, grid[0], grid[-1]), edges)[0]
    keep = p_exact * S > 5
    expected = p_exact[keep] * S
    observed = observed[keep]
    chi2 = stats.chisquare(observed, expected * observed.sum() / expected.sum())
    assert chi2.pvalue > 1e-3
    # the sampler's own interval weights agree with the grid integral
    w_int = np.exp(dist.log_weight[0] - dist.log_weight[0].max())
    p_int = w_int / w_int.sum()
    p_grid = np.diff(np.interp(np.clip(np.concatenate([[-np.inf], dist.hi[0]]), grid[0], grid[-1]),
                               grid, cdf_grid))
    np.testing.assert_allclose(p_int, p_grid, atol=2e-5)
