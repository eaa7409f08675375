"""The full MS-BPM population sampler on a 2-parameter problem vs the posterior computed on a grid."""

import numpy as np
import pytest
from scipy import stats

from bsvm.msbpm import engine
from bsvm.msbpm.likelihood import confusion_counts, log_likelihood


def _problem():
    """1-D inputs, two overlapping classes, features (x, 1): parameters (w, b), class 1 iff w x + b > 0."""
    rng = np.random.default_rng(3)
    n = 24
    y = np.arange(n) % 2
    x = rng.normal(loc=np.where(y == 1, 0.6, -0.6), scale=1.0)
    phi = np.column_stack([x, np.ones(n)])
    return engine.make_problem(phi, y, 2, nu=1.0, prior_scale=1.0)


def _grid_moments(problem, half_width=6.0, n=801):
    w = np.linspace(-half_width, half_width, n)
    W, B = np.meshgrid(w, w, indexing="ij")
    theta = np.column_stack([W.ravel(), B.ravel()])
    assigned = (theta @ problem.phi.T > 0).astype(int)  # (G, N): argmax of (0, f)
    logp = log_likelihood(confusion_counts(problem.y, assigned, 2), problem.alpha)
    logp = logp + stats.norm.logpdf(theta).sum(axis=1)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return {name: float(p @ f(theta)) for name, f in _MOMENTS.items()}


_MOMENTS = {
    "w": lambda t: t[:, 0], "b": lambda t: t[:, 1], "w2": lambda t: t[:, 0] ** 2,
    "b2": lambda t: t[:, 1] ** 2, "wb": lambda t: t[:, 0] * t[:, 1],
    "angle": lambda t: np.arctan2(t[:, 1], t[:, 0]),  # the scale-free part the likelihood sees
}


@pytest.mark.parametrize("direction", ["ads", "hit_and_run", "gibbs"])
def test_two_parameter_posterior_moments_match_grid(direction):
    problem = _problem()
    exact = _grid_moments(problem)
    # the likelihood must matter, or matching the N(0, I) prior would be enough
    assert abs(exact["w"]) > 0.3
    rng = np.random.default_rng(1)
    S, burn, keep = 200, 30, 100
    state = engine.init(rng, problem, S)
    draws = []
    for sweep in range(burn + keep):
        state, _ = engine.step(rng, problem, state, direction, ads_prob=0.85)
        if sweep >= burn:
            draws.append(state.beta.reshape(S, 2))
    theta = np.stack(draws, axis=1)  # (chains, draws, 2)
    for name, f in _MOMENTS.items():
        per_chain = f(theta.reshape(-1, 2)).reshape(S, keep).mean(axis=1)
        # Monte Carlo standard error from the spread of the chain means (each chain is 100 draws long)
        se = per_chain.std(ddof=1) / np.sqrt(S)
        z = (per_chain.mean() - exact[name]) / se
        assert abs(z) < 4.0, (name, per_chain.mean(), exact[name], se)
