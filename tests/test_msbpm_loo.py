"""The integrated-IS LOO of MS-BPM's vote (bsvm/msbpm/loo.py) against exact leave-one-out by Monte Carlo."""

import numpy as np

from bsvm.msbpm.likelihood import dirichlet_alpha
from bsvm.msbpm.loo import LooAccumulator, held_out_votes


def test_held_out_votes_match_monte_carlo():
    rng = np.random.default_rng(0)
    mu = np.array([[[0.3, -0.5]], [[1.0, 0.8]]])  # (T=2, N=1, K-1=2)
    sd = np.array([0.7])
    got = np.exp(held_out_votes(mu, sd))
    f = mu[..., None, :] + sd[0] * rng.standard_normal((2, 1, 400_000, 2))
    full = np.concatenate([np.zeros((*f.shape[:-1], 1)), f], axis=-1)
    ref = np.stack([np.mean(np.argmax(full, -1) == c, axis=-1) for c in range(3)], axis=-1)
    assert np.allclose(got.sum(-1), 1.0, atol=1e-6)
    assert np.allclose(got, ref, atol=4e-3)
    # binary: Phi(mu / sd)
    b = np.exp(held_out_votes(np.array([[[0.5]]]), np.array([2.0])))
    assert np.allclose(b[0, 0], [0.5 - 0.0987063, 0.5 + 0.0987063], atol=1e-6)


def test_loo_vote_matches_exact_leave_one_out():
    """A 5-row binary problem small enough for exact posteriors by importance sampling from the prior:
    f = F z + s e ~ N(0, C), pi rows ~ Dirichlet(alpha), likelihood prod_i pi[y_i, h(f_i)]. The reference
    LOO vote of row i weights the prior draws by the likelihood of the other rows only; the accumulator
    sees draws from the full posterior (resampled) and must recover it."""
    rng = np.random.default_rng(1)
    N, s, s0 = 5, 0.6, 1.3
    F = np.hstack([rng.normal(size=(N, 2)), np.full((N, 1), 0.4)])
    y = np.array([0, 1, 1, 0, 1])
    alpha = dirichlet_alpha(2, N, 1.0)
    M = 400_000
    C = s0**2 * (F @ F.T + s**2 * np.eye(N))
    f = rng.standard_normal((M, N)) @ np.linalg.cholesky(C).T
    gam = rng.standard_gamma(alpha, size=(M, 2, 2))
    pi = gam / gam.sum(-1, keepdims=True)
    h = (f > 0).astype(int)
    lik_i = pi[:, y, :][np.arange(M)[:, None], np.arange(N), h]  # (M, N): pi[y_i, h_i]
    full = lik_i.prod(axis=1)
    ref = np.empty(N)
    for i in range(N):
        w = full / lik_i[:, i]  # likelihood of the other rows
        ref[i] = np.sum(w * (h[:, i] == y[i])) / w.sum()
    pick = rng.choice(M, size=60_000, p=full / full.sum())  # draws from the full posterior
    acc = LooAccumulator(F, s, s0, y, 2)
    for chunk in np.array_split(pick, 3):  # in batches, as the sampler feeds it
        acc.add(f[chunk][..., None], np.log(pi[chunk]))
    got = np.exp(acc.log_vote())
    assert acc.n_draws == 60_000 and np.all(acc.ess() > 10_000)
    assert np.max(np.abs(got - ref)) < 0.02, (got, ref)
    # and it is not the in-sample vote: row i's own label moves its in-sample vote away from the LOO one
    insample = np.array([np.mean(h[pick, i] == y[i]) for i in range(N)])
    assert np.max(insample - ref) > 0.05
