"""The S-BSVM engine's shortcuts give the same numbers as the plain computations they replace:
SQUAREM cycles reach the fixed point of plain coordinate ascent, the hyperparameter gradient built from
the step's P_hat equals the one built from phi, and the full-batch ELBO that reuses the step's marginals
equals the ELBO computed afresh. Plus the two-stage fit's records (hyperparameter budget, stage 2)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from bsvm.datasets import make_ringnorm, make_ripley
from bsvm.kernels import RBF, Constant
from bsvm.sbsvm import SBSVM
from bsvm.sbsvm import elbo as E
from bsvm.sbsvm.engine import SVIConfig, SVIEngine
from bsvm.sbsvm.geometry import features, sparse_geometry

Xd, yd01 = make_ripley(150, random_state=5)
yd = np.where(yd01 == 1, 1.0, -1.0)
KERN = RBF(0.4, 3.0) + Constant(1.0)
INDUCING = Xd[::6].copy()


@pytest.fixture(autouse=True)
def one_blas_thread():
    # many tiny products: OpenBLAS's thread pool would make them much slower on a loaded machine
    with threadpool_limits(1):
        yield


def _engine(accelerate, optimize_hyper=False):
    cfg = SVIConfig(batch_size=len(yd), schedule="constant", rho0=1.0, optimize_hyper=optimize_hyper,
                    hyper_every=1, accelerate=accelerate)
    return SVIEngine(Xd, yd, sparse_geometry(KERN, INDUCING), cfg, np.random.default_rng(0))


def test_squarem_reaches_the_fixed_point_of_plain_coordinate_ascent():
    plain = _engine(False)
    state = plain.init()
    for _ in range(1000):
        state, _ = plain.step(state, None)
    ref_elbo = plain.elbo(state)
    ref_m = E.moments(state.eta1, state.P).m

    fast = _engine(True)
    assert fast.accelerated and not plain.accelerated
    s = fast.init()
    values = [fast.elbo(s)]
    for _ in range(60):
        s, _ = fast.step(s, None)
        values.append(fast.elbo(s))
    # every cycle keeps or raises the ELBO (safeguard), and it ends where plain ascent ends
    assert np.all(np.diff(values) >= -1e-9 * abs(values[-1])), np.diff(values).min()
    assert values[-1] == pytest.approx(ref_elbo, abs=1e-6 * abs(ref_elbo))
    np.testing.assert_allclose(E.moments(s.eta1, s.P).m, ref_m, atol=1e-4)
    # and it gets there in far fewer passes: 60 cycles (at most 3 passes each) vs 1000 steps
    half = plain.init()
    for _ in range(180):
        half, _ = plain.step(half, None)
    assert values[-1] - plain.elbo(half) > -1e-9


def test_full_batch_elbo_with_reused_marginals_equals_fresh_elbo():
    eng = _engine(False)
    state = eng.init()
    for _ in range(3):
        state, _ = eng.step(state, None)
    phi, t, _ = features(state.geom, Xd)
    fresh = E.elbo(yd, phi, t, E.moments(state.eta1, state.P))
    assert eng.elbo(state) == pytest.approx(fresh, rel=1e-12)
    assert eng.elbo(state) == pytest.approx(fresh, rel=1e-12)   # second call served from the memo


def test_hyper_gradient_from_p_hat_equals_gradient_from_phi():
    """C = phi^T diag(g) phi is -(P_hat - I) / 2 at the same q; the gradient itself is checked against
    finite differences in test_sbsvm_elbo.py (the path without C)."""
    eng = _engine(False, optimize_hyper=True)
    state = eng.init()
    state, _ = eng.step(state, None)     # a q away from the prior
    _, _, _, batch, _ = eng._natural_gradient(state, None)
    with_c = eng._hyper_gradient(state, batch)
    without_c = eng._hyper_gradient(state, batch[:8])
    np.testing.assert_allclose(with_c, without_c, rtol=1e-9, atol=1e-9)


def test_two_stage_fit_records_the_hyperparameter_budget_and_converges_on_all_rows():
    X, y = make_ringnorm(2300, random_state=0)
    est = SBSVM(n_inducing=30, random_state=0).fit(X, y)
    first, second = est.stages_[0], est.stages_[-1]   # (kernel="auto" adds an ARD trial stage between)
    assert first["stage"].startswith("hyperparameters on 2000 rows")
    assert first["converged"] or "budget" in first["stopped_by"]
    assert second["stage"].startswith("q(u) on all rows") and second["converged"]
    assert est.converged_
    Xt, yt = make_ringnorm(2000, random_state=1)
    assert est.score(Xt, yt) > 0.95


def test_kernels_with_kept_squared_distances_equal_the_plain_kernels():
    """The full-batch hyperparameter stage keeps sq_dist(X, Z) and passes it to the RBF kernel (value and
    gradient contraction); both must equal the computation from the inputs."""
    from bsvm.kernels import accepts_sq_dist, sq_dist
    Z = INDUCING
    sq = sq_dist(Xd, Z)
    G = np.random.default_rng(1).normal(size=sq.shape)
    for kern in (RBF(0.7, 2.0), RBF(0.7, 2.0) + Constant(0.5)):
        assert accepts_sq_dist(kern)
        K = kern(Xd, Z)
        np.testing.assert_allclose(kern(Xd, Z, sq=sq), K, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(kern.grad_contract(Xd, Z, G, K=K, sq=sq),
                                   kern.grad_contract(Xd, Z, G, K=K), rtol=1e-9)
        phi0, t0, _ = features(sparse_geometry(kern, Z), Xd)
        phi1, t1, _ = features(sparse_geometry(kern, Z), Xd, sq=sq)
        np.testing.assert_allclose(phi1, phi0, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(t1, t0, atol=1e-10)
    # the engine's hyperparameter step with kept distances equals the one without
    eng = _engine(False, optimize_hyper=True)
    state = eng.init()
    state, _ = eng.step(state, None)
    _, _, _, batch, _ = eng._natural_gradient(state, None)
    assert eng._sq[1] is not None
    fast = eng._hyper_gradient(state, batch)
    X_copy = batch[0].copy()   # not the engine's own rows: the plain path
    slow = eng._hyper_gradient(state, (X_copy,) + tuple(batch[1:]))
    np.testing.assert_allclose(fast, slow, rtol=1e-8)


def test_stage_two_by_minibatches_beyond_its_row_limit_agrees_with_the_exact_stage(monkeypatch):
    """Beyond FULL_BATCH_ROWS stage 2 takes minibatch SVI steps instead of exact cycles over all rows (they
    cost less there: the rule in the SBSVM docstring). Both must end at the same fit: the limit lowered
    below the data's 2,600 rows, the predictions agree with the exact stage's within the noise of SVI."""
    import bsvm.sbsvm.estimator as sbsvm_estimator

    X, y = make_ringnorm(2600, random_state=0)
    Xt, _ = make_ringnorm(2000, random_state=1)
    exact = SBSVM(n_inducing=30, kernel="rbf", random_state=0).fit(X, y)
    monkeypatch.setattr(sbsvm_estimator, "FULL_BATCH_ROWS", 2500)
    svi = SBSVM(n_inducing=30, kernel="rbf", random_state=0).fit(X, y)
    assert svi.stages_[-1]["converged"] and exact.stages_[-1]["converged"]
    # exact cycles take a few steps; minibatches of 2,000 rows (rho < 1) take many more
    assert svi.stages_[-1]["steps"] > 3 * exact.stages_[-1]["steps"]
    p_exact, p_svi = exact.predict_proba(Xt)[:, 1], svi.predict_proba(Xt)[:, 1]
    assert np.mean(np.abs(p_exact - p_svi)) < 0.01  # (measured 0.0008)
    assert np.mean((p_exact > 0.5) == (p_svi > 0.5)) > 0.98
