"""Subgradients of the hinge potentials against finite differences (eq. 15 binary, eq. 21 multi-class)."""

import numpy as np
import pytest

from bsvm.subgradient.potential import (
    HingeModel,
    hinge_losses,
    normalised_likelihood,
    potential_and_grad,
    scores,
)


def _data(rng, n, d, K):
    X = rng.normal(size=(n, d))
    y = rng.choice([-1.0, 1.0], size=n) if K == 2 else rng.integers(K, size=n)
    return X, y


def _fd_grad(model, theta, X, y, scale, eps=1e-6):
    g = np.empty_like(theta)
    for j in range(theta.shape[1]):  # a handful of coordinates: test-only loop
        e = np.zeros_like(theta)
        e[:, j] = eps
        up = potential_and_grad(model, theta + e, X, y, scale)[0]
        dn = potential_and_grad(model, theta - e, X, y, scale)[0]
        g[:, j] = (up - dn) / (2 * eps)
    return g


def _min_kink_distance(model, theta, X, y):
    """Smallest |hinge argument| (and, multi-class, the gap between the two best wrong classes): FD is
    valid only if the perturbation cannot cross a kink."""
    F = scores(model, theta, X)
    if model.n_classes == 2:
        return np.abs(model.l - y * F[..., 0]).min()
    y_idx = np.broadcast_to(y, F.shape[:-1])
    wrong = F.copy()
    np.put_along_axis(wrong, y_idx[..., None], -np.inf, axis=-1)
    top2 = np.sort(wrong, axis=-1)[..., -2:]
    loss, _ = hinge_losses(model, F, y)
    arg = model.l + top2[..., 1] - np.take_along_axis(F, y_idx[..., None], axis=-1)[..., 0]
    gap = np.where(top2[..., 0] > -np.inf, top2[..., 1] - top2[..., 0], np.inf)
    return min(np.abs(arg).min(), gap.min()) if loss.size else np.inf


@pytest.mark.parametrize("K", [2, 3, 4])
@pytest.mark.parametrize("per_chain", [False, True])
def test_subgradient_matches_finite_differences(K, per_chain):
    rng = np.random.default_rng(K + 10 * per_chain)
    d, n, C = 3, 40, 3
    model = HingeModel(c=1.7, l=0.8, n_classes=K, n_features=d)
    theta = rng.normal(size=(C, model.n_params))
    if per_chain:
        X, y = _data(rng, n, d, K)
        idx = rng.integers(n, size=(C, 15))
        X, y, scale = X[idx], y[idx], n / 15
    else:
        X, y = _data(rng, n, d, K)
        scale = 1.0
    assert _min_kink_distance(model, theta, X, y) > 1e-4  # the seed keeps every point off the kinks
    U, g = potential_and_grad(model, theta, X, y, scale)
    np.testing.assert_allclose(g, _fd_grad(model, theta, X, y, scale), rtol=1e-6, atol=1e-6)
    # some hinges are active and some are not, so both branches of eq. 15 / 21 were exercised
    loss, _ = hinge_losses(model, scores(model, theta, X), y)
    assert (loss > 0).any() and (loss == 0).any()
    # U itself: prior term plus scaled hinge sum, recomputed independently per chain
    for k in range(C):
        Xk = X[k] if per_chain else X
        yk = y[k] if per_chain else y
        Wb = theta[k].reshape(model.n_blocks, d + 1)
        F = Xk @ Wb[:, :d].T + Wb[:, d]
        if K == 2:
            h = np.maximum(0, model.l - yk * F[:, 0])
        else:
            h = np.array([max(0.0, model.l + max(F[i, j] for j in range(K) if j != yk[i]) - F[i, yk[i]])
                          for i in range(len(yk))])
        assert U[k] == pytest.approx(0.5 * theta[k] @ theta[k] + model.c * scale * h.sum(), rel=1e-12)


def test_normalised_likelihood_binary_equals_two_class_rule():
    rng = np.random.default_rng(3)
    f = rng.normal(scale=2.0, size=(5, 7))
    binary = normalised_likelihood(HingeModel(1.3, 1.0, 2, 1), f[..., None])
    # K = 2 multi-class form with f_0 = 0, f_1 = f
    two = normalised_likelihood(HingeModel(1.3, 1.0, 3, 1), np.stack([np.zeros_like(f), f], -1))
    np.testing.assert_allclose(binary, two, atol=1e-12)
    np.testing.assert_allclose(binary.sum(-1), 1.0)
    # explicit ratio psi(+1) / (psi(+1) + psi(-1))
    psi_p, psi_m = np.exp(-1.3 * np.maximum(0, 1 - f)), np.exp(-1.3 * np.maximum(0, 1 + f))
    np.testing.assert_allclose(binary[..., 1], psi_p / (psi_p + psi_m), rtol=1e-12)


def test_signed_design_fast_path_equals_the_general_one():
    """binary_full / binary_batch (on Z = y [X, 1]) give the general path's U and subgradient."""
    from bsvm.subgradient.potential import (
        binary_batch,
        binary_full,
        control_variate,
        potential_and_grad_cv,
        signed_design,
    )

    rng = np.random.default_rng(5)
    X, y = _data(rng, 300, 4, 2)
    model = HingeModel(1.3, 0.7, 2, 4)
    theta = rng.normal(size=(3, 5))
    Z = signed_design(X, y)
    U, g = potential_and_grad(model, theta, X, y)
    U2, g2 = binary_full(model, theta, Z)
    np.testing.assert_allclose(U2, U, rtol=1e-12)
    np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-12)
    # U alone (the minibatch samplers' monitor): the same, on either design, and per chain
    from bsvm.subgradient.potential import binary_potential

    np.testing.assert_allclose(binary_potential(model, theta, Z), U, rtol=1e-12)
    np.testing.assert_allclose(binary_potential(model, theta, np.ascontiguousarray(Z[:, :5])), U, rtol=1e-12)
    np.testing.assert_array_equal(binary_potential(model, theta[1:2], Z),
                                  binary_potential(model, theta, Z)[1:2])
    idx = rng.integers(0, 300, size=(3, 40))
    U, g = potential_and_grad(model, theta, X[idx], y[idx], 300 / 40)
    U2, g2 = binary_batch(model, theta, Z[idx], 300 / 40)
    np.testing.assert_allclose(U2, U, rtol=1e-12)
    np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-12)
    cv = control_variate(model, rng.normal(size=5), X, y)
    U, g = potential_and_grad_cv(model, cv, theta, X[idx], y[idx], idx, 300 / 40)
    U2, g2 = binary_batch(model, theta, Z[idx], 300 / 40, cv, idx)
    np.testing.assert_allclose(U2, U, rtol=1e-12)
    np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("with_cv", [False, True])
def test_block_minibatches_of_a_shuffled_design_are_unbiased(with_cv):
    """sgld/sgnht's binary minibatches: m consecutive rows (wrapping) of the signed design with its rows
    permuted. Averaged over every start the estimate is exactly the full-data U and subgradient (every row
    is in m of the n blocks), and each block's estimate equals the general path's on the same data rows,
    control variate included (its per-row terms are indexed through the permutation)."""
    from bsvm.chains import ChainRNG
    from bsvm.subgradient.potential import control_variate, potential_and_grad_cv, signed_design
    from bsvm.subgradient.samplers import Potential

    rng = np.random.default_rng(11)
    n, m = 53, 10  # m does not divide n: blocks wrap past the end
    X, y = _data(rng, n, 3, 2)
    model = HingeModel(1.3, 0.7, 2, 3)
    theta = rng.normal(size=(1, 4))
    order = rng.permutation(n)
    cv = control_variate(model, rng.normal(size=4), X, y) if with_cv else None
    pot = Potential(model, X, y, m, None, signed_design(X[order], y[order]), order)

    class Starts:  # a ChainRNG stand-in whose integers() gives the starts asked for, one per chain
        def __init__(self, starts):
            self.starts = np.asarray(starts)

        def integers(self, low, high, size):
            assert (low, high, size) == (0, n, len(self.starts))
            return self.starts

    Us, gs = [], []
    for s in range(n):
        starts = [s, (s + 17) % n, (s + 40) % n]  # three chains, three different blocks (one wraps)
        U, g = pot(Starts(starts), np.repeat(theta, 3, axis=0), cv)
        for c, o in enumerate(starts):
            rows = order[(o + np.arange(m)) % n]
            if with_cv:
                U_ref, g_ref = potential_and_grad_cv(model, cv, theta, X[rows][None], y[rows][None],
                                                     rows[None], n / m)
            else:
                U_ref, g_ref = potential_and_grad(model, theta, X[rows], y[rows], n / m)
            np.testing.assert_allclose(U[c:c + 1], U_ref, rtol=1e-12)
            np.testing.assert_allclose(g[c:c + 1], g_ref, rtol=1e-12, atol=1e-12)
        Us.append(U[0])
        gs.append(g[0])
    U_full, g_full = potential_and_grad(model, theta, X, y)
    np.testing.assert_allclose(np.mean(Us), U_full[0], rtol=1e-12)
    np.testing.assert_allclose(np.mean(gs, axis=0), g_full[0], rtol=1e-12, atol=1e-12)
    # with a real per-chain generator: one start per chain, from that chain's own stream
    U3, _ = pot(ChainRNG.from_seeds([1, 2, 3]), np.repeat(theta, 3, axis=0), cv)
    assert U3.shape == (3,)


def test_signed_design_of_permuted_rows_equals_the_design_of_the_permuted_data():
    """``signed_design(X, y, rows=perm)`` (gathered in chunks of 65,536 rows) is the design of X[perm]."""
    from bsvm.subgradient.potential import signed_design

    rng = np.random.default_rng(2)
    n = 70_000  # more than one chunk
    X, y = rng.normal(size=(n, 3)), np.where(rng.random(n) < 0.5, -1.0, 1.0)
    perm = rng.permutation(n)
    Z = signed_design(X, y, rows=perm)
    np.testing.assert_array_equal(Z, signed_design(X[perm], y[perm]))
    assert Z.flags.c_contiguous


def test_the_fits_shuffled_design_holds_each_data_rows_signed_row():
    """In a real sgld fit the engine's design row i is the signed row Z_rows[i] of the data: the
    permutation the estimator drew is the one the minibatches and the control variate are indexed by."""
    from bsvm import SubgradientHMC
    from bsvm.subgradient import driver

    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=3000) > 0).astype(int)
    X, y = X[np.argsort(y, kind="stable")], np.sort(y)  # sorted by class: the order must not matter
    seen = []
    build = driver.build_engine

    def spy(spec, X_, y_, layout=None, Z=None, Z_rows=None):
        engine = build(spec, X_, y_, layout, Z, Z_rows)
        seen.append(engine.potential)
        return engine

    driver.build_engine = spy
    try:
        SubgradientHMC("sgld", random_state=0, batch_size=100, n_samples=20, n_burnin=20).fit(X, y)
    finally:
        driver.build_engine = build
    pot = seen[-1]
    assert pot.Z_rows is not None and sorted(pot.Z_rows.tolist()) == list(range(3000))
    signed = np.where(y == 1, 1.0, -1.0)[pot.Z_rows, None]
    np.testing.assert_array_equal(pot.Z[:, :3], signed * X[pot.Z_rows])
    np.testing.assert_array_equal(pot.Z[:, 3], signed[:, 0])


def test_the_pilots_mode_equals_the_one_from_softplus_over_every_row():
    """find_mode computes softplus and its slope only where |z| <= 40 (beyond, they equal z or 0 and 1 or
    0 in float64 up to e^-40): the mode is the one of the plain objective over every row."""
    from scipy.optimize import minimize
    from scipy.special import expit

    from bsvm.subgradient.laplace import _arguments, find_mode
    from bsvm.subgradient.potential import HingeModel, _contract

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4))
    y = np.where(X @ np.array([1.0, -0.5, 0.2, 0.0]) + 0.3 * rng.normal(size=3000) > 0, 1.0, -1.0)
    for model in (HingeModel(1.0, 1.0, 2, 4), HingeModel(2.0, 0.5, 2, 4)):
        s = 1e-3 * max(model.l, 1e-3)

        def plain(theta, model=model, s=s):
            m, E = _arguments(model, theta, X, y)
            z = m / s
            G = (model.c * expit(z))[:, None] * E
            return (0.5 * theta @ theta + model.c * s * np.logaddexp(0.0, z).sum(),
                    theta + _contract(G[None], X).reshape(model.n_params))

        ref = minimize(plain, np.zeros(model.n_params), jac=True, method="L-BFGS-B",
                       options={"maxiter": 500}).x
        np.testing.assert_allclose(find_mode(model, X, y), ref, rtol=1e-9, atol=1e-9)
