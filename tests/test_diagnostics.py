"""bsvm.diagnostics: R-hat, ESS, MCSE, autocorrelation, acceptance and rank-plot data."""

import numpy as np
import pytest

from bsvm import diagnostics


def _ar1(rng, phi, shape):
    x = np.empty(shape)
    x[..., 0] = rng.normal(size=shape[:-1])
    e = rng.normal(scale=np.sqrt(1 - phi ** 2), size=shape)
    for t in range(1, shape[-1]):  # test-only generator
        x[..., t] = phi * x[..., t - 1] + e[..., t]
    return x


def test_rhat_near_one_for_independent_draws_and_large_for_stuck_chains():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(4, 1000, 3))
    assert np.all(diagnostics.rhat(good) < 1.01)
    stuck = good + np.array([0.0, 0.0, 3.0, 3.0])[:, None, None]  # two chains stuck elsewhere
    assert np.all(diagnostics.rhat(stuck) > 1.1)
    # one chain drifting slowly (non-stationary) is caught by the split halves
    drift = good.copy()
    drift[0] += np.linspace(0, 4, 1000)[:, None]
    assert np.all(diagnostics.rhat(drift) > 1.1)


def test_ess_and_mcse_for_ar1():
    rng = np.random.default_rng(1)
    phi = 0.8
    x = _ar1(rng, phi, (4, 5000))
    expected = x.size * (1 - phi) / (1 + phi)  # the AR(1) integrated autocorrelation time
    assert diagnostics.ess_bulk(x) == pytest.approx(expected, rel=0.2)
    assert diagnostics.ess_tail(x) < x.size
    assert diagnostics.mcse(x) == pytest.approx(np.sqrt(1 / expected), rel=0.15)
    rho = diagnostics.autocorrelation(x, max_lag=3)
    np.testing.assert_allclose(rho, phi ** np.arange(4), atol=0.03)
    iid = rng.normal(size=(4, 2000, 2))
    assert np.all(diagnostics.ess_bulk(iid) > 0.8 * 8000)


def test_acceptance_rank_plot_and_summary():
    a = np.array([[1.0, 0.5, 0.0], [1.0, 1.0, 1.0]])
    s = diagnostics.acceptance_summary(a)
    assert s["mean"] == pytest.approx(0.75) and s["min_chain"] == 0.5 and s["max_chain"] == 1.0
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 400, 2))
    counts = diagnostics.rank_plot_data(x, n_bins=8)
    assert counts.shape == (2, 3, 8) and np.all(counts.sum(-1) == 400)
    shifted = x + np.array([0.0, 0.0, 2.0])[:, None, None]
    top = diagnostics.rank_plot_data(shifted, n_bins=8)[0, 2]
    assert top[-1] > 5 * max(top[0], 1)  # the shifted chain holds the top ranks
    table = diagnostics.summary(x, names=["w", "b"])
    assert list(table.index) == ["w", "b"] and {"r_hat", "ess_bulk", "ess_tail", "mcse_mean"} <= set(table)
    with pytest.raises(ValueError):
        diagnostics.rhat(np.zeros((2, 3, 4, 5)))


def test_diagnostics_take_an_arviz_tree_and_agree_with_the_arrays():
    """rhat, ess_bulk, ess_tail and mcse of ``to_arviz()``'s tree are arviz-stats' own, per variable, and
    equal the array path's per-parameter numbers (they raised a TypeError on a tree, a review)."""
    import warnings

    from bsvm import diagnostics as D
    from bsvm.datasets import make_ripley
    from bsvm.subgradient import SubgradientHMC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC(n_samples=200, random_state=0).fit(*make_ripley(80, random_state=0))
    tree = est.to_arviz()
    for fn in (D.rhat, D.ess_bulk, D.ess_tail, D.mcse):
        on_tree, on_array = fn(tree), np.asarray(fn(est.samples_))
        np.testing.assert_allclose(on_tree["w"].values, on_array[:2], rtol=1e-10)
        np.testing.assert_allclose(float(on_tree["b"].values), on_array[2], rtol=1e-10)
