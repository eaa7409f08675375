"""The exact Gibbs sampler: its inverse-Gaussian draws, and its posterior against a 2-D grid."""

import numpy as np
import pytest
from scipy import stats

from bsvm import diagnostics
from bsvm.subgradient import GibbsSVM
from bsvm.subgradient.gibbs import inverse_gaussian


@pytest.mark.parametrize("mean", [0.3, 2.0, 50.0])
def test_inverse_gaussian_matches_scipy(mean):
    rng = np.random.default_rng(0)
    x = inverse_gaussian(rng, np.full(40000, mean), 1.0)
    # Kolmogorov-Smirnov against scipy's IG(mean, shape 1) = invgauss(mu=mean, scale=1)
    assert stats.kstest(x, stats.invgauss(mu=mean).cdf).pvalue > 1e-3


def test_inverse_gaussian_huge_mean_is_levy():
    # as mean -> inf, IG(mean, 1) tends to the Levy law of 1 / nu^2 (no cancellation blow-up)
    rng = np.random.default_rng(1)
    x = inverse_gaussian(rng, np.full(40000, 1e7), 1.0)
    assert np.all(np.isfinite(x)) and np.all(x > 0)
    assert stats.kstest(x, stats.levy().cdf).pvalue > 1e-3


def _grid_moments(X, y, c, l, center, half_width, n=601):
    """Posterior mean and covariance of (w, b) for 1-D inputs, by brute force on a grid."""
    w = np.linspace(center[0] - half_width[0], center[0] + half_width[0], n)
    b = np.linspace(center[1] - half_width[1], center[1] + half_width[1], n)
    W, B = np.meshgrid(w, b, indexing="ij")
    s = 2 * y - 1.0
    F = W[..., None] * X[:, 0] + B[..., None]
    U = 0.5 * (W ** 2 + B ** 2) + c * np.maximum(0.0, l - s * F).sum(-1)
    p = np.exp(-(U - U.min()))
    p /= p.sum()
    assert p[0].sum() + p[-1].sum() + p[:, 0].sum() + p[:, -1].sum() < 1e-8  # the grid holds the mass
    mean = np.array([(p * W).sum(), (p * B).sum()])
    dW, dB = W - mean[0], B - mean[1]
    cov = np.array([[(p * dW * dW).sum(), (p * dW * dB).sum()], [(p * dW * dB).sum(), (p * dB * dB).sum()]])
    return mean, cov


@pytest.mark.parametrize("c, l", [(1.0, 1.0), (2.5, 0.6)])
def test_gibbs_matches_grid_posterior(c, l):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 1))
    y = (X[:, 0] + 0.8 * rng.normal(size=40) > 0.3).astype(int)
    est = GibbsSVM(c=c, l=l, n_samples=2000, n_burnin=50, n_chains=4, record_every=10 ** 6,
                   random_state=0).fit(X, y)
    draws = est.samples_
    assert draws.shape == (4, 2000, 2)
    flat = draws.reshape(-1, 2)
    m, cov = flat.mean(0), np.cov(flat.T)
    g_mean, g_cov = _grid_moments(X, y, c, l, m, 9 * np.sqrt(np.diag(cov)))
    assert np.all(diagnostics.rhat(draws) < 1.01)
    # means within 4 MCSE; sds within 4 MCSE of the sd
    assert np.all(np.abs(m - g_mean) < 4 * diagnostics.mcse(draws))
    assert np.all(np.abs(np.sqrt(np.diag(cov)) - np.sqrt(np.diag(g_cov))) < 4 * diagnostics.mcse(draws, "sd"))
    # the correlation (MC error of a correlation ~ (1 - rho^2) / sqrt(ESS))
    rho, g_rho = cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]), g_cov[0, 1] / np.sqrt(g_cov[0, 0] * g_cov[1, 1])
    ess = diagnostics.ess_bulk(draws).min()
    assert abs(rho - g_rho) < 4 * (1 - g_rho ** 2) / np.sqrt(ess) + 1e-3


def test_gibbs_rejects_multiclass_and_zero_cost():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError):
        GibbsSVM(n_samples=5, n_burnin=0).fit(X, np.arange(30) % 3)
    with pytest.raises(ValueError, match="c > 0"):
        GibbsSVM(c=0.0, n_samples=5, n_burnin=0).fit(X, np.arange(30) % 2)


def test_a_run_without_kept_draws_says_so_when_exported():
    # a budget spent in burn-in exported an empty posterior, and arviz_stats.summary failed with an
    # IndexError (a library user's review)
    import warnings

    import pytest

    from bsvm import GibbsSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GibbsSVM(random_state=0, max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="No draws kept yet: the run ended during burn-in"):
        m.to_arviz()
