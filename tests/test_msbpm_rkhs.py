"""MSBPM with the feature-space (RKHS) prior of Herbrich et al. (2001): features, conditional part, votes."""

import numpy as np
import pytest
from scipy.special import ndtr
from sklearn.datasets import load_iris

from bsvm.datasets import make_ripley
from bsvm.msbpm import MSBPM, engine
from bsvm.msbpm.estimator import _vote_fractions
from bsvm.msbpm.likelihood import confusion_counts, log_likelihood

FAST = dict(n_chains=16, burn_in=30, n_samples=10, thin=2, record_every=10)


def _fitted(nugget, rank_tol=1e-10, n=60, **kw):
    X, y = make_ripley(n, random_state=5)
    return X, y, MSBPM(prior="rkhs", nugget=nugget, rank_tol=rank_tol, gamma=2.0, bias_scale=0.7,
                       random_state=0, **FAST, **kw).fit(X, y)


@pytest.mark.parametrize("nugget", [0.0, 0.3])
def test_rkhs_features_reproduce_the_gram_matrix(nugget):
    X, y, m = _fitted(nugget)
    F = m._rkhs_features(X)
    G = m.kernel_(X) + 0.7**2
    # kept subspace: the discarded eigenvalues are below rank_tol * trace
    assert F.shape[1] < len(X) + 1
    assert np.abs(F @ F.T - G).max() < 1e-8 * len(X)
    # the sampled features append the nugget's per-point columns: phi phi^T = K + nugget I + bias^2
    phi = engine.make_problem(F, y, 2, point_scale=np.sqrt(m.nugget_)).phi
    assert phi.shape[1] == F.shape[1] + (len(X) if nugget else 0)
    assert np.abs(phi @ phi.T - G - m.nugget_ * np.eye(len(X))).max() < 1e-8 * len(X)
    K = m.kernel_(X)
    assert m.nugget_ == pytest.approx(nugget * (np.mean(np.diag(K)) - np.mean(K)))  # relative to centred K


@pytest.mark.parametrize("blocks", [False, True])
def test_point_sweep_with_line_moves_samples_the_posterior(blocks):
    """4 examples, one weight w on x plus a nugget coordinate per example: MCMC moments vs importance
    sampling from the prior (the posterior is prior x eq. 4). ``blocks``: also the exact Gaussian draw of
    the leading coordinates given the latent scores, and the scale move, as ``MSBPM(block_update=True)``."""
    x = np.array([-1.0, 1.0, 0.3, -0.2])
    y = np.array([0, 1, 0, 1])
    problem = engine.make_problem(x[:, None], y, 2, point_scale=0.8)
    rng = np.random.default_rng(1)
    state = engine.init(rng, problem, 64)
    draws = []
    for sweep in range(1500):
        state, _ = engine.step(rng, problem, state, "hit_and_run")
        state = engine.point_sweep(rng, problem, state)
        if blocks:
            state = engine.scale_move(rng, problem, engine.block_update(rng, problem, state))
        if sweep >= 100:
            draws.append(state.beta[:, 0, :].copy())
    B = np.concatenate(draws)  # (T, 5): w, e_1..e_4
    theta = np.random.default_rng(2).standard_normal((400_000, 5))
    assigned = (theta @ problem.phi.T > 0).astype(int)
    logw = log_likelihood(confusion_counts(y, assigned, 2), problem.alpha)
    wts = np.exp(logw - logw.max())
    wts /= wts.sum()
    for f in (lambda t: t[:, 0], lambda t: t[:, 0] ** 2, lambda t: t[:, 3], lambda t: t[:, 4] * t[:, 0]):
        assert abs(f(B).mean() - wts @ f(theta)) < 0.05, (f(B).mean(), wts @ f(theta))


def test_rkhs_mean_at_training_points_reproduces_the_sampled_latent_values():
    X, _, m = _fitted(0.0)
    F = m._rkhs_features(X)
    Ft = np.hstack([m.kernel_(X, X) @ m.coef_map_, np.full((len(X), 1), 0.7)])
    # test features at the training inputs are the training features (kept subspace)
    np.testing.assert_allclose(Ft, F, atol=1e-6)
    # and the free part of f there is (nearly) nothing
    assert m.conditional_sd(X).max() < 1e-3
    # far from the data the centred kernel's prior variance comes back: k_c(x, x) - k_c(x, X) K_c^+ k_c(X, x)
    # with k(x, .) = 0 there, by the pseudo-inverse of the centred Gram matrix (rank N - 1)
    far = np.array([[50.0, 50.0]])
    kc = m.kernel_(far, X)
    expect = m.kernel_.diag(far) - kc @ np.linalg.pinv(m.kernel_(X), rcond=1e-10) @ kc.T
    # (the pivoted Cholesky and pinv truncate K_c's near-null space, eigenvalues ~1e-10 here, differently)
    np.testing.assert_allclose(m.conditional_sd(far) ** 2, expect.ravel(), atol=5e-3)
    # without centring it is k(x, x) = 1
    _, _, raw = _fitted(0.0, center_kernel=False)
    np.testing.assert_allclose(raw.conditional_sd(far), 1.0, atol=1e-9)


def test_nugget_is_a_fresh_draw_at_every_input():
    X, _, m = _fitted(0.3)
    sd = m.conditional_sd(X)
    # the smooth part is known at the training inputs: only the fresh nugget is left
    np.testing.assert_allclose(sd, np.sqrt(m.nugget_), atol=1e-3)
    assert m.samples_.shape[-1] == len(X) + 1  # kernel weights and bias; the nugget draws are not kept


def test_rkhs_vote_fractions_integrate_the_free_part():
    X, _, m = _fitted(0.3)
    Xq = X[:9]
    betas = m.samples_.reshape(-1, m.samples_.shape[-1])
    mean = np.hstack([m.kernel_(Xq, m.X_fit_), np.full((9, 1), 0.7)]) @ betas.T  # (9, T)
    p1 = ndtr(mean / m.conditional_sd(Xq)[:, None]).mean(axis=1)
    np.testing.assert_allclose(m.predict_proba(Xq)[:, 1], p1, rtol=1e-10)


def test_multiclass_vote_fractions_match_monte_carlo():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(4, 6, 3))
    s[..., 0] = 0.0
    sd = np.array([0.3, 1.0, 2.5, 0.0])
    p = _vote_fractions(s, sd)
    # the free part is symmetric over the classes, anchor included: each class N(0, sd^2 / 2)
    e = rng.standard_normal((100_000, 1, 1, 3)) / np.sqrt(2.0)
    votes = np.argmax(s[None] + sd[None, :, None, None] * e, axis=-1)
    mc = (votes[..., None] == np.arange(3)).mean(axis=(0, 2))
    np.testing.assert_allclose(p, mc, atol=5e-3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_rkhs_multiclass_fits_iris():
    X, y = load_iris(return_X_y=True)
    m = MSBPM(prior="rkhs", nugget=0.1, random_state=0, **FAST).fit(X, y)
    assert m.samples_.shape == (16, 10, 2 * 151)
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert m.score(X, y) > 0.9


@pytest.mark.parametrize("params, match", [
    (dict(prior="laplace"), "prior"), (dict(prior="rkhs", nugget=-1.0), "nugget"),
])
def test_bad_prior_parameters(params, match):
    X, y = make_ripley(30, random_state=0)
    with pytest.raises(ValueError, match=match):
        MSBPM(**{**FAST, **params}).fit(X, y)


def test_multiclass_win_probabilities_quadrature_is_converged():
    """P(c wins) by Gauss-Hermite on the nodes the estimator uses, against a 100-node rule written out
    here with ordered pairs (no symmetry trick), for score spreads 0.3-30: within 2e-7 for 3-5 classes
    (24 nodes) and 1e-6 for 8 (32 nodes), far below the Monte Carlo error of a vote averaged over draws;
    the cheaper pair-symmetric evaluation changes nothing."""
    from scipy.special import ndtr as Phi

    from bsvm.msbpm.estimator import _GH_NODES_3, _gh_win_probs
    from bsvm.quadrature import gauss_hermite

    x, w = gauss_hermite(100)
    rng = np.random.default_rng(3)
    for K, tol in ((3, 2e-9), (4, 5e-8), (5, 2e-7), (8, 1e-6)):
        for scale in (0.3, 3.0, 30.0):
            t = rng.normal(scale=scale, size=(500, K))
            ref = np.empty_like(t)
            for c in range(K):
                f = np.ones((len(t), x.size))
                for c2 in range(K):
                    if c2 != c:
                        f *= Phi((t[:, c] - t[:, c2])[:, None] + x)
                ref[:, c] = f @ w
            np.testing.assert_allclose(_gh_win_probs(t), ref, atol=tol, rtol=0)
    assert _GH_NODES_3.size <= 24  # the cost up to 5 classes: one ndtr array per pair of classes and node
