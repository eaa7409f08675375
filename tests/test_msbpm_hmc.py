"""The collapsed HMC move of MSBPM (bsvm.msbpm.hmc) against exact references."""

import numpy as np
import pytest
from scipy.special import ndtr

from bsvm.msbpm import engine, hmc
from bsvm.msbpm.likelihood import confusion_counts, log_likelihood


def _tiny_problem():
    x = np.array([-1.0, 1.0, 0.3, -0.2])
    y = np.array([0, 1, 0, 1])
    return engine.make_problem(np.column_stack([x, np.full(4, 0.5)]), y, 2, point_scale=0.8)


def test_potential_gradient_matches_finite_differences():
    problem = _tiny_problem()
    rng = np.random.default_rng(0)
    state = engine.init(rng, problem, 3)
    log_pi = engine.draw_confusion(rng, problem, state)
    fn = hmc.potential_fn(problem, log_pi)
    z = rng.standard_normal((3, 2))
    U, g = fn(z)
    # the potential is -log N(z; 0, I) - sum_i log(pi[y,0] Phi(-F z / sigma) + pi[y,1] Phi(F z / sigma))
    pi_y = np.exp(log_pi[:, problem.y, :])
    t = z @ problem.phi[:, :2].T / 0.8
    direct = 0.5 * (z**2).sum(1) - np.log(pi_y[..., 0] * ndtr(-t) + pi_y[..., 1] * ndtr(t)).sum(1)
    np.testing.assert_allclose(U, direct, rtol=1e-12)
    eps = 1e-6
    for j in range(2):
        dz = np.zeros_like(z)
        dz[:, j] = eps
        np.testing.assert_allclose(g[:, j], (fn(z + dz)[0] - fn(z - dz)[0]) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("scale", [False, True])
def test_collapsed_hmc_samples_the_posterior(scale):
    """4 examples, a weight and a bias plus a nugget coordinate per example: moments of the collapsed
    sampler (pi | M, z | pi by HMC with e integrated out, e | z, pi) vs importance sampling from the prior
    (the posterior is prior x eq. 4)."""
    problem = _tiny_problem()
    rng = np.random.default_rng(1)
    S = 64
    state = engine.init(rng, problem, S)
    L = hmc.preconditioner(problem, state.beta[:, 0, :2], engine.draw_confusion(rng, problem, state))
    draws, acc = [], []
    for sweep in range(1200):
        state, info, _ = hmc.collapsed_step(rng, problem, state, 0.6, 3, L)
        acc.append(info.accept_prob.mean())
        if scale:
            state = engine.scale_move(rng, problem, state)
        if sweep >= 100:
            draws.append(state.beta[:, 0, :].copy())
    assert 0.3 < np.mean(acc) < 1.0
    B = np.concatenate(draws)  # (T, 6): w, b, e_1..e_4
    theta = np.random.default_rng(2).standard_normal((400_000, 6))
    assigned = (theta @ problem.phi.T > 0).astype(int)
    logw = log_likelihood(confusion_counts(problem.y, assigned, 2), problem.alpha)
    wts = np.exp(logw - logw.max())
    wts /= wts.sum()
    for f in (lambda t: t[:, 0], lambda t: t[:, 0] ** 2, lambda t: t[:, 1], lambda t: t[:, 3],
              lambda t: t[:, 4] * t[:, 0]):
        assert abs(f(B).mean() - wts @ f(theta)) < 0.05, (f(B).mean(), wts @ f(theta))


def test_hmc_runs_keep_each_draws_transition_for_arviz():
    """sampler="hmc": the acceptance, step size, divergence flag and leapfrog count of the transition
    that made each kept draw, as fitted attributes and in ``to_arviz()``'s sample_stats under ArviZ's
    names (the tree held only lp, the likelihood sum and the training error, a review); no energy (each
    move's Hamiltonian is conditional on its own confusion draw). The line samplers have none. Runs long
    enough for the draw store to halve its draws keep their statistics aligned with them."""
    import warnings

    from bsvm import MSBPM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(120, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MSBPM(random_state=0, n_samples=3000, n_chains=4).fit(X, y)
    assert m.sampler_ == "hmc"
    C, D = m.samples_.shape[:2]
    assert D < 3000  # the store halved its draws (it keeps at most _max_stored per chain)
    assert m.accept_prob_.shape == (C, D) and m.diverging_.shape == (C, D) and m.diverging_.dtype == bool
    assert 0.5 < float(m.accept_prob_.mean()) <= 1.0
    stats = m.to_arviz()["sample_stats"]
    for name in ("acceptance_rate", "step_size", "diverging", "n_steps", "lp"):
        assert stats[name].shape == (C, D), name
    assert "energy" not in stats
    np.testing.assert_array_equal(stats["acceptance_rate"].values, m.accept_prob_)
    assert (stats["n_steps"].values >= 1).all() and (stats["step_size"].values > 0).all()
    lines = MSBPM(random_state=0, sampler="lines", n_samples=50, n_chains=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lines.fit(X, y)
    assert lines.accept_prob_ is None and lines.diverging_ is None
    assert "acceptance_rate" not in lines.to_arviz()["sample_stats"]
