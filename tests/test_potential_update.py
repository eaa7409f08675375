"""The HMC engine's updated active set (potential.binary_full_update) against the full recomputation."""

import numpy as np
import pytest

from bsvm.chains import ChainRNG
from bsvm.subgradient import samplers as S
from bsvm.subgradient.potential import (
    ChainLayout,
    HingeModel,
    binary_full,
    binary_full_update,
    signed_design,
)


def _problem(n=400, d=5, seed=0, order="C"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return HingeModel(1.0, 1.0, 2, d), signed_design(X, y, order=order), rng


def _hmc_draws(model, Z, groups, seeds, theta0, tuning, steps, screen_min_size=10 ** 9):
    """(C, steps, P) HMC states with the chains run in ``groups`` (each group one Potential, as the
    workers of ``n_jobs`` would), the incremental update forced on; after each group's run its U is
    checked against the full recomputation. Returns the draws and the last group's Potential."""
    C, P = len(seeds), model.n_params
    X = Z[:, :model.n_features]  # unused by the binary fast path
    out = np.empty((C, steps, P))
    for g in groups:
        pot = S.Potential(model, X, None, None, ChainLayout(np.asarray(g), C), Z)
        pot.incremental_min_size, pot.screen_min_size = 0, screen_min_size
        assert pot.incremental
        eng = S.HMC(pot, None)
        rng = ChainRNG.from_seeds([seeds[i] for i in g])
        state = eng.init(rng, theta0[g])
        for t in range(steps):
            state, info = eng.step(rng, state, tuning._replace(step_size=tuning.step_size[g]))
            out[g, t] = state.theta
        assert np.all(info.accept_prob > 0.0)
        np.testing.assert_allclose(state.U, binary_full(model, state.theta, Z)[0], rtol=1e-12)
    return out, pot


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
    C, P = 4, model.n_params
    seeds = np.random.SeedSequence(7).spawn(C)
    theta0 = np.random.default_rng(1).normal(size=(C, P)) * 0.3
    tuning = S.Tuning(np.full(C, 0.15))

    def run(groups):
        return _hmc_draws(model, Z, groups, seeds, theta0, tuning, 15)[0]

    np.testing.assert_array_equal(run([[0, 1, 2, 3]]), run([[0, 1], [2, 3]]))


def _screen_problem(n=3000, d=6, seed=3, order="C"):
    """A design, a metric (L, centre) and states near the centre, with rows placed 1e-12..1e-6 from the
    kink at the last state."""
    rng = np.random.default_rng(seed)
    model, Z, _ = _problem(n, d, seed, order)
    P = model.n_params
    L = np.tril(rng.normal(size=(P, P))) * 0.05 + 0.1 * np.eye(P)
    centre = rng.normal(size=P) * 0.5
    thetas = [centre + (L @ rng.normal(size=(P, 3)) * s).T for s in (0.5, 1.0, 2.0, 0.3)]
    theta = thetas[-1]
    rows = rng.choice(n, 40, replace=False)
    gaps = np.repeat(10.0 ** -np.arange(6, 13), 6)[:40] * rng.choice([-1.0, 1.0], 40)
    # row i's first feature chosen so that z_i . theta[0] = l + gap (chain 0; the others are random)
    rest = Z[rows, 1:P] @ theta[0, 1:]
    Z[rows, 0] = (model.l + gaps - rest) / theta[0, 0]
    return model, Z, L, centre, thetas, rows


@pytest.mark.parametrize("order", ["C", "F"], ids=["row-major design", "column-major design"])
@pytest.mark.parametrize("single", [False, True], ids=["float64 copy", "float32 copy"])
def test_screened_update_decides_every_row_as_the_float64_margins(single, order, monkeypatch):
    from bsvm.subgradient import potential as pt
    from bsvm.subgradient.potential import _chain_products, binary_active_update, make_screen

    if single:  # the float32 copy of large designs (>= 8 MB), here on a small one; rows at 1e-6..1e-12
        monkeypatch.setattr(pt, "_TWIN_MIN_BYTES", 0)  # of the kink must be recomputed in float64
    model, Z, L, centre, thetas, rows = _screen_problem(order=order)
    assert Z.flags[f"{order}_CONTIGUOUS"]  # samplers.design_order picks either for HMC
    screen = make_screen(Z, model.n_params, model.l, centre, L)
    assert screen.Zs.dtype == (np.float32 if single else np.float64)
    k = np.searchsorted(screen.q, screen.threshold(thetas[0]), side="right")
    assert 0 < k.max() < Z.shape[0]  # a real band: neither empty nor the whole design
    active = binary_active_update(model, thetas[0], Z, None, screen)
    for theta in thetas[1:]:
        active = binary_active_update(model, theta, Z, active, screen)
        exact = _chain_products(Z, theta) < model.l
        assert np.array_equal(active.in_order(None).A, exact)
        full = binary_active_update(model, theta, Z, None)
        np.testing.assert_allclose(active.gzc, full.gzc, rtol=1e-12, atol=1e-9)
        assert np.array_equal(active.gzc[:, -1], np.count_nonzero(exact, axis=1))
    margins = _chain_products(Z, thetas[-1])[0, rows]
    assert np.all(np.abs(margins - model.l) < 2e-6)  # the placed rows are at the kink...
    assert (margins < model.l).any() and (margins > model.l).any()  # ...on both sides


def test_hmc_with_the_screen_keeps_the_draws_of_each_chain_and_of_the_unscreened_run():
    model, Z, L, centre, _, _ = _screen_problem(n=1500, d=4, seed=5)
    C, P = 4, model.n_params
    seeds = np.random.SeedSequence(11).spawn(C)
    theta0 = centre + 0.5 * (L @ np.random.default_rng(2).normal(size=(P, C))).T
    tuning = S.Tuning(np.full(C, 0.3), L, centre=centre)

    def run(groups, screen=True):
        draws, pot = _hmc_draws(model, Z, groups, seeds, theta0, tuning, 12,
                                screen_min_size=0 if screen else 10 ** 9)
        assert (pot.screen is not None) == screen
        return draws

    ref = run([[0, 1, 2, 3]], screen=False)
    np.testing.assert_array_equal(run([[0, 1, 2, 3]]), ref)
    np.testing.assert_array_equal(run([[0, 1], [2, 3]]), ref)


def test_active_set_select_and_put_leave_their_inputs_unchanged_unless_in_place():
    from bsvm.subgradient.potential import ActiveSet

    rng = np.random.default_rng(0)

    def make():
        return ActiveSet(rng.uniform(size=(3, 50)) < 0.5, rng.normal(size=(3, 4)), rng.integers(0, 50, 3))

    new, old = make(), make()
    keep = [a.copy() for a in (*new[:3], *old[:3])]
    mask = np.array([True, False, True])
    out = ActiveSet.select(mask, new, old)
    for a, b in zip((*new[:3], *old[:3]), keep):
        np.testing.assert_array_equal(a, b)
    for field in range(3):
        np.testing.assert_array_equal(out[field], np.where(mask.reshape((-1,) + (1,) * (out[field].ndim - 1)),
                                                           new[field], old[field]))
    part = old.take([1])
    put = new.put([1], part)
    np.testing.assert_array_equal(new.A, keep[0])
    np.testing.assert_array_equal(put.A[[0, 2]], new.A[[0, 2]])
    np.testing.assert_array_equal(put.A[1], old.A[1])
    assert ActiveSet.select(mask, new, old, inplace=True).A is new.A  # in place: no copy
