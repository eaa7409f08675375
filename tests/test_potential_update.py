"""The HMC engine's updated active set (potential.binary_full_update) against the full recomputation."""

import numpy as np

from bsvm.chains import ChainRNG
from bsvm.subgradient import samplers as S
from bsvm.subgradient.potential import (
    ChainLayout,
    HingeModel,
    binary_full,
    binary_full_update,
    signed_design,
)


def _problem(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return HingeModel(1.0, 1.0, 2, d), signed_design(X, y), rng


def test_update_along_a_path_equals_the_full_recomputation():
    model, Z, rng = _problem()
    theta = rng.normal(size=(3, model.n_params))
    active = binary_full_update(model, theta, Z, None)[2]
    for step in range(60):  # small moves (few switches) and, every 20th, a far jump (full recompute)
        theta = theta + (1.0 if step % 20 == 19 else 0.02) * rng.normal(size=theta.shape)
        U, g, active = binary_full_update(model, theta, Z, active)
        U0, g0 = binary_full(model, theta, Z)
        np.testing.assert_allclose(U, U0, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-9)
        assert np.array_equal(active.gzc[:, -1], np.count_nonzero(active.A, axis=1))  # exact count


def test_hmc_with_the_update_keeps_the_draws_of_each_chain_whatever_the_grouping():
    model, Z, _ = _problem()
    X = Z[:, :model.n_features]  # unused by the binary fast path
    C, P = 4, model.n_params
    seeds = np.random.SeedSequence(7).spawn(C)
    theta0 = np.random.default_rng(1).normal(size=(C, P)) * 0.3
    tuning = S.Tuning(np.full(C, 0.15))

    def run(groups):
        out = np.empty((C, 15, P))
        for g in groups:
            pot = S.Potential(model, X, None, None, ChainLayout(np.asarray(g), C), Z)
            pot.incremental_min_size = 0  # force the update on this small problem
            assert pot.incremental
            eng = S.HMC(pot, None)
            rng = ChainRNG.from_seeds([seeds[i] for i in g])
            state = eng.init(rng, theta0[g])
            for t in range(15):
                state, info = eng.step(rng, state, tuning._replace(step_size=tuning.step_size[g]))
                out[g, t] = state.theta
            assert np.all(info.accept_prob > 0.0)
            U0, _ = binary_full(model, state.theta, Z)
            np.testing.assert_allclose(state.U, U0, rtol=1e-12)
        return out

    np.testing.assert_array_equal(run([[0, 1, 2, 3]]), run([[0, 1], [2, 3]]))
