"""Parallel chains (bsvm/chains.py): a chain's draws do not depend on which chains share its process, and
a process running half the chains does half the data work (issue 13 §4)."""

import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bsvm.chains import (
    ChainPool,
    ChainRNG,
    parallel_threshold,
    parallel_threshold_seconds,
    set_parallel_threshold,
)
from bsvm.subgradient import GibbsSVM, SubgradientHMC
from bsvm.subgradient import samplers as S
from bsvm.subgradient.potential import ChainLayout, HingeModel, binary_full, signed_design

GROUPINGS = ([[0, 1, 2, 3]], [[0, 1], [2, 3]], [[0], [1, 2], [3]])


def _problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return HingeModel(1.0, 1.0, 2, d), X, y


@pytest.mark.parametrize("order", ["C", "F"])
def test_binary_full_per_chain_values_do_not_depend_on_the_chains_sharing_the_call(order):
    model, X, y = _problem(3001, 20)
    Z = signed_design(X, y, order)
    theta = np.random.default_rng(1).normal(size=(4, model.n_params)) * 0.2
    U, g = binary_full(model, theta, Z)
    for group in ([0], [1, 3], [2, 3], [3, 0, 1]):
        Ug, gg = binary_full(model, theta[group], Z)
        np.testing.assert_array_equal(Ug, U[group])
        np.testing.assert_array_equal(gg, g[group])
    # the fast path is the potential (against a plain evaluation)
    S_ = (X @ theta[:, :-1].T + theta[:, -1]) * y[:, None]
    U0 = 0.5 * (theta ** 2).sum(1) + np.maximum(0.0, 1.0 - S_).sum(0)
    np.testing.assert_allclose(U, U0, rtol=1e-12)


@pytest.mark.parametrize("order", ["C", "F"])
def test_blocked_chain_products_equal_one_product_per_chain(order):
    """``_chain_products`` passes over the design in row blocks shared by the chains; each chain's margins
    equal its own unblocked matrix-vector product bit for bit (so blocking changes no draw), in any
    grouping, with a ragged last block."""
    from bsvm.subgradient.potential import _BLOCK_ROWS, _chain_products

    model, X, y = _problem(2 * _BLOCK_ROWS + 1237, 12, seed=3)
    Z = signed_design(X, y, order)
    theta = np.random.default_rng(4).normal(size=(4, model.n_params))
    S = _chain_products(Z, theta)
    for c in range(4):
        np.testing.assert_array_equal(S[c], Z[:, :-1] @ theta[c])
    for group in ([0], [1, 3], [3, 0, 1]):
        np.testing.assert_array_equal(_chain_products(Z, theta[group]), S[group])


def test_float32_first_pass_decides_hinge_activity_as_float64():
    """Large designs decide A = [Z theta < l] from a float32 copy, recomputing in float64 the rows whose
    float32 margin is within its error bound of l. Rows put 1e-12..1e-6 from the kink (where float32 alone
    decides wrongly, checked) and random rows: every decision equals the float64 product's, per chain in
    any grouping, also through a memory-mapped design (the copy then a file beside it)."""
    from bsvm.subgradient import potential as pt

    rng = np.random.default_rng(5)
    n, p = pt._TWIN_MIN_BYTES // (8 * 42) + 500, 41
    Z = np.asfortranarray(np.column_stack([rng.normal(size=(n, p)), np.ones(n)]))
    theta = rng.normal(size=(4, p)) * 0.3
    l = 1.0
    rows = rng.choice(n, 4000, replace=False)
    delta = rng.choice([-1e-6, -1e-9, -1e-12, 1e-12, 1e-9, 1e-6], size=rows.size)
    s0 = Z[rows, :p] @ theta[0]
    Z[rows, 0] += (l + delta - s0) / theta[0, 0]  # chain 0's margins at l + delta on these rows
    exact = pt._chain_products(Z, theta) < l
    assert np.abs(pt._chain_products(Z, theta)[0, rows] - l).max() < 2e-6
    S32 = np.asfortranarray(Z[:, :p], dtype=np.float32) @ theta.astype(np.float32).T
    assert (S32.T < np.float32(l)).__ne__(exact).sum() > 0  # float32 alone gets some wrong
    assert pt._twin(Z, p) is not None
    A = pt._chain_active(Z, theta, l)
    np.testing.assert_array_equal(A, exact)
    for group in ([0], [1, 3], [3, 0, 2]):
        np.testing.assert_array_equal(pt._chain_active(Z, theta[group], l), exact[group])
    with ChainPool(2) as pool:  # the workers get a memory map, and make the float32 copy beside it
        pool.share(Z)
        out = pool.map(pt._chain_active, [(Z, theta[:2], l), (Z, theta[2:], l)])
    np.testing.assert_array_equal(np.concatenate(out), exact)


@pytest.mark.parametrize("incremental", [False, True])
def test_hmc_draws_of_each_chain_whatever_the_grouping(incremental):
    """Per-chain step sizes differ, so trajectories have different lengths (the branch that evaluates only
    the chains still moving); dense metric; each chain's path is bit-identical in every grouping, and the
    gradient count is the sum of the chains' own step counts (a finished chain costs nothing)."""
    model, X, y = _problem(700, 6)
    Z = signed_design(X, y, "F")
    C, P = 4, model.n_params
    seeds = np.random.SeedSequence(11).spawn(C)
    theta0 = np.random.default_rng(2).normal(size=(C, P)) * 0.3
    L = np.linalg.cholesky(np.eye(P) * 0.05 + 0.01)
    steps = np.array([0.11, 0.23, 0.17, 0.3])  # ceil(pi / 2 / h): 15, 7, 10, 6 leapfrog steps

    class Counting(S.Potential):
        n_grads = 0  # chain-gradients evaluated

        def __call__(self, rng, theta, cv=None):
            Counting.n_grads += theta.shape[0]
            return super().__call__(rng, theta, cv)

        def update(self, theta, prev):
            Counting.n_grads += theta.shape[0]
            return super().update(theta, prev)

        def hinge_sums(self, theta, active):  # the leapfrog's inner points on binary full data
            Counting.n_grads += theta.shape[0]
            return super().hinge_sums(theta, active)

    def run(groups):
        out = np.empty((C, 12, P))
        Counting.n_grads = 0
        for g in groups:
            pot = Counting(model, X, y, None, ChainLayout(np.asarray(g), C), Z)
            pot.incremental_min_size = 0 if incremental else 10 ** 12
            assert pot.incremental == incremental
            eng = S.HMC(pot, None)
            rng = ChainRNG.from_seeds([seeds[i] for i in g])
            state = eng.init(rng, theta0[g])
            for t in range(12):
                state, info = eng.step(rng, state, S.Tuning(steps[g], L))
                out[g, t] = state.theta
            assert np.all(info.n_leapfrog == [15, 7, 10, 6][g[0]:g[-1] + 1])
        return out, Counting.n_grads

    ref, n_grads = run(GROUPINGS[0])
    assert n_grads == C + 12 * (15 + 7 + 10 + 6)  # not C * 15 per transition
    for groups in GROUPINGS[1:]:
        out, n = run(groups)
        np.testing.assert_array_equal(out, ref)
        assert n == n_grads


def _describe(a):
    a = a[0] if isinstance(a, tuple) else a  # a shared array inside a tuple argument is swapped too
    return type(a).__name__, bool(a.flags.f_contiguous), float(a[:, 1].sum())


def test_chain_pool_sends_shared_arrays_to_process_workers_as_column_major_memory_maps():
    F = np.asfortranarray(np.arange(300_000.0).reshape(50_000, 6))
    small = np.ones((3, 2))
    with ChainPool(2) as pool:  # min_seconds=0: in the workers from the first call
        assert pool.in_workers
        assert pool.share(F) is F  # in-process calls get the array itself
        out = pool.map(_describe, [(F,), ((F, small),)])
    assert out == [("memmap", True, float(F[:, 1].sum()))] * 2
    with ChainPool(2, min_seconds=5.0) as pool:  # in-process until an estimate reaches 5 s
        pool.share(F)
        assert not pool.offer(4.9) and pool.map(_describe, [(F,)]) == [("ndarray", True, F[:, 1].sum())]


def _fit(make, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make(**kw).fit(*_ripley())


def _ripley(n=150):
    from bsvm.datasets import make_ripley

    return make_ripley(n, random_state=0)


_SAMPLERS = {
    "hmc": lambda **kw: SubgradientHMC("hmc", n_samples=30, n_burnin=60, n_chains=3, random_state=4, **kw),
    "sgnht": lambda **kw: SubgradientHMC("sgnht", n_samples=40, n_burnin=60, batch_size=30, n_chains=3,
                                         random_state=4, **kw),
    "gibbs": lambda **kw: GibbsSVM(n_samples=30, n_burnin=20, n_chains=3, random_state=4, **kw),
}


@pytest.mark.parametrize("name", list(_SAMPLERS))
def test_small_fits_stay_in_process_and_moved_chains_keep_their_draws(name, monkeypatch):
    """The rule: a fit estimated under the threshold (here 60 CPU s) never starts the workers, and says
    so (n_jobs_ = 1); with the threshold at 0 the chains run in loky workers from the start; a
    SubgradientHMC fit that bsvm.cost predicts at >= ChainPool.predict_factor x the threshold starts them
    before sampling and moves at the first segment (threads: ready at once); with the prediction out of
    play and a threshold that the first measured segment passes they move mid-run. Same draws every way."""
    make = _SAMPLERS[name]
    ref = _fit(make)
    with parallel_threshold(60.0):
        small = _fit(make, n_jobs=2)
    assert small.n_jobs_ == 1 and small.parallel_start_ is None
    with parallel_threshold(0):
        loky = _fit(make, n_jobs=2)
    assert loky.n_jobs_ == 2 and loky.parallel_start_ == 0
    with joblib.parallel_config(backend="threading"), parallel_threshold(1e-12):
        early = _fit(make, n_jobs=2)
    assert early.n_jobs_ == 2
    if name != "gibbs":  # GibbsSVM has no time model here: the measured rule alone
        assert early.parallel_start_ == 0
    monkeypatch.setattr(ChainPool, "predict_factor", np.inf)
    with joblib.parallel_config(backend="threading"), parallel_threshold(1e-12):
        moved = _fit(make, n_jobs=-1)
    assert moved.n_jobs_ == joblib.effective_n_jobs(-1) or moved.n_jobs_ == 3
    assert moved.parallel_start_ is not None and moved.parallel_start_ > 0
    for est in (small, loky, early, moved):
        np.testing.assert_array_equal(est.samples_, ref.samples_)
        np.testing.assert_array_equal(est.potential_, ref.potential_)


def test_parallel_threshold_is_checked_and_restored():
    before = parallel_threshold_seconds()
    with parallel_threshold(2.5):
        assert parallel_threshold_seconds() == 2.5
    assert parallel_threshold_seconds() == before
    with pytest.raises(ValueError, match="min_seconds"):
        set_parallel_threshold(-1)


def test_hmc_chains_on_a_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    make = _SAMPLERS["hmc"]
    ref = _fit(make)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with joblib.parallel_config(backend="dask"), parallel_threshold(0), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dask's own notices about the local cluster
            est = make(n_jobs=2).fit(*_ripley())
    assert est.n_jobs_ == 2 and est.parallel_start_ == 0
    np.testing.assert_array_equal(est.samples_, ref.samples_)


def test_run_length_does_not_depend_on_where_segments_end():
    """sgld monitors every monitor_every-th draw (here ceil(100 / (2.5 * 5)) = 8) and the stopping rule is
    checked only at its scheduled draw counts (multiples of 8 draws), even when segments end elsewhere
    (records every 3 iterations here; with n_jobs > 1, the workers' time slices). Before, such a run
    stopped up to k - 1 draws early, so the run length depended on n_jobs and timing."""
    from bsvm.datasets import make_ripley

    X, y = make_ripley(100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC("sgld", batch_size=5, random_state=0, record_every=3).fit(X, y)
        ref = SubgradientHMC("sgld", batch_size=5, random_state=0).fit(X, y)
    assert est._monitor_every == 8
    assert est.converged_ and est.samples_.shape[1] % est._monitor_every == 0
    np.testing.assert_array_equal(est.samples_, ref.samples_)


def test_take_chains_slices_every_per_chain_array_and_refuses_shared_ones():
    from bsvm.chains import take_chains
    from bsvm.subgradient.samplers import AdaptState, DualAveraging, HMCState

    rng = ChainRNG.from_seeds(np.random.SeedSequence(0).spawn(3))
    da = DualAveraging(np.arange(3.0), np.arange(3.0) + 1, np.zeros(3), 7, np.ones(3))
    state = (HMCState(np.arange(6.0).reshape(3, 2), np.arange(3.0), np.ones((3, 2))),
             AdaptState(da, None, [np.zeros((3, 2)), np.ones((3, 2))]), rng)
    st, ad, r = take_chains(state, np.array([0, 2]), 3)
    np.testing.assert_array_equal(st.theta, [[0.0, 1.0], [4.0, 5.0]])
    assert st.active is None and ad.da.t == 7 and ad.sq_avg is None and len(ad.window) == 2
    np.testing.assert_array_equal(ad.da.log_step_bar, [1.0, 3.0])
    assert r.generators == [rng.generators[0], rng.generators[2]]
    with pytest.raises(ValueError, match="3 chains first"):
        take_chains((np.eye(4),), [0], 3)


def test_join_chains_undoes_take_chains_and_balanced_groups_even_out_the_work():
    from bsvm.chains import balanced_groups, in_chain_order, join_chains, take_chains
    from bsvm.subgradient.samplers import AdaptState, DualAveraging, HMCState

    rng = ChainRNG.from_seeds(np.random.SeedSequence(0).spawn(4))
    da = DualAveraging(np.arange(4.0), np.arange(4.0) + 1, np.zeros(4), 7, np.ones(4))
    state = (HMCState(np.arange(12.0).reshape(4, 3), np.arange(4.0), -np.arange(12.0).reshape(4, 3)),
             AdaptState(da, None, [np.ones((4, 3)), 2 * np.ones((4, 3))]), rng)
    groups = [np.array([0, 3]), np.array([1, 2])]
    parts = [take_chains(state, g, 4) for g in groups]
    st, ad, r = join_chains(parts, groups, 4)
    np.testing.assert_array_equal(st.theta, state[0].theta)
    np.testing.assert_array_equal(st.grad, state[0].grad)
    np.testing.assert_array_equal(ad.da.log_step_bar, da.log_step_bar)
    assert ad.da.t == 7 and len(ad.window) == 2
    assert [g is h for g, h in zip(r.generators, rng.generators)] == [True] * 4  # each chain keeps its stream
    with pytest.raises(ValueError, match="group's 2 chains"):
        join_chains([np.zeros((3, 2)), np.zeros((2, 2))], groups, 4)
    blocks = [np.array([[0.0], [3.0]]), np.array([[1.0], [2.0]])]
    np.testing.assert_array_equal(in_chain_order(blocks, groups)[:, 0], [0.0, 1.0, 2.0, 3.0])
    # leapfrog steps per transition 5, 5, 6, 7: contiguous halves do 10 and 13 chain-steps; even 12 and 11
    even = balanced_groups([5, 5, 6, 7], [2, 2])
    assert [g.tolist() for g in even] == [[0, 3], [1, 2]]
    # the best split, also with unequal sizes (a greedy rule gave 14 for the first two: the costliest
    # chain never got the group of one); checked against all assignments
    for costs, sizes, best in (([5, 9, 5], [2, 1], 10), ([9, 5, 5], [2, 1], 10),
                               ([6, 6, 5, 5, 9], [2, 2, 1], 11), ([5, 6, 4, 9, 1], [3, 2], 13)):
        groups = balanced_groups(costs, sizes)
        assert sorted(map(len, groups)) == sorted(sizes)
        assert sorted(np.concatenate(groups).tolist()) == list(range(len(costs)))
        assert max(sum(costs[i] for i in g) for g in groups) == best
    assert balanced_groups([5, 9, 5], [2, 1])[1].tolist() == [1]
    # from 11 chains the greedy rule: sizes kept, every chain once
    groups = balanced_groups(list(range(20, 0, -1)), [10, 10])
    assert sorted(map(len, groups)) == [10, 10] and sorted(np.concatenate(groups).tolist()) == list(range(20))


@pytest.mark.parametrize("screened, seed", [(None, 3), ("float64", 3), ("float32", 4)],
                         ids=["full products", "active sets and screen", "float32 screen"])
def test_hmc_chains_moved_between_workers_keep_their_draws(screened, seed, monkeypatch):
    """Each chain's leapfrog count follows its own step size; with n_jobs = 2 the chains are regrouped
    so the workers' chain-steps even out (here 5 + 6 against 5 + 4 steps per transition: the contiguous
    halves do 11 and 9, with seed 3). The draws, potentials, step sizes and last states are those of one
    process; with ``screened`` the active sets (kept in a screen's row order) travel between groups too."""
    from bsvm.subgradient import samplers as S

    if screened:
        monkeypatch.setattr(S.Potential, "incremental_min_size", 0)
        monkeypatch.setattr(S.Potential, "screen_min_size", 0)
    if screened == "float32":  # the float32 twin and sorted copy of large designs, here on a small one
        from bsvm.subgradient import potential as pt

        monkeypatch.setattr(pt, "_TWIN_MIN_BYTES", 0)
    rng = np.random.default_rng(0)
    rng.normal(size=(300, 5)), rng.normal(size=5), rng.normal(size=300)  # (draws of another data set)
    X = rng.normal(size=(200, 10))  # seeds whose chains end with uneven counts (e.g. 5, 6, 5, 4)
    y = (X @ rng.normal(size=10) + 0.5 * rng.normal(size=200) > 0).astype(int)
    kw = dict(n_samples=30, n_burnin=60, n_chains=4, random_state=seed)
    ref = SubgradientHMC("hmc", **kw).fit(X, y)
    with joblib.parallel_config(backend="threading"), parallel_threshold(0):
        est = SubgradientHMC("hmc", n_jobs=2, **kw).fit(X, y)
    assert est.n_jobs_ == 2 and est._regroups >= 1
    np.testing.assert_array_equal(est.samples_, ref.samples_)
    np.testing.assert_array_equal(est.potential_, ref.potential_)
    np.testing.assert_array_equal(est.step_size_, ref.step_size_)
    np.testing.assert_array_equal(est.theta_, ref.theta_)


def test_stage_tuning_gives_the_leapfrog_count_of_the_iterations_to_come():
    """After a window end restarts the step's stage, the tuning still holds the old stage's count step;
    ``stage_tuning`` gives the one the next update sets (what the regrouping of chains must weigh)."""
    from types import SimpleNamespace

    from bsvm.subgradient import samplers as S

    ad = S.WindowAdaptation(100, adapt_step=True)
    tun = S.Tuning(np.array([0.1, 0.2, 0.3]))
    st = ad.init(tun)
    info = SimpleNamespace(accept_prob=np.array([0.95, 0.5, 0.2]), grad_sq=None)
    for t in range(5):
        st, tun = ad.update(st, t, np.zeros((3, 2)), info, tun)
    st = ad.restart_step(st, tun)  # a new stage from the current (probed) steps
    assert not np.allclose(ad.stage_tuning(st, tun).count_step, tun.count_step)
    _, after = ad.update(st, 5, np.zeros((3, 2)), info, tun)
    np.testing.assert_allclose(ad.stage_tuning(st, tun).count_step, after.count_step)
    final = ad.final(st, after)
    assert ad.stage_tuning(st, final) is final  # the sampling phase counts from its own steps


def _chain_dirs():
    import glob
    import tempfile

    return set(glob.glob("/dev/shm/bsvm-chains-*")) | set(glob.glob(f"{tempfile.gettempdir()}/bsvm-chains-*"))


def test_parallel_hmc_prepares_the_workers_files_while_the_pilot_runs(monkeypatch):
    """A binary HMC fit whose chains go to the workers from the first segment makes the memory maps of
    its features and design, and the design's float32 copy, in a thread while its pilot runs (the copy
    is what each worker made for itself before, the same work twice). The workers then find the copy
    (they do not write it), the draws equal one process's, and no file is left after the fit. A design
    past the copy's 8 MB threshold (it is read in the worker processes, where a monkeypatch does not
    reach): 21,000 x 48."""
    import os

    from bsvm.subgradient import driver as D
    from bsvm.subgradient import potential as pt

    written = []
    real = D.write_twin

    def spy(Z, p):
        path = real(Z, p)
        written.append((path, os.path.getmtime(path)))
        return path

    monkeypatch.setattr(D, "write_twin", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(21_000, 48))
    y = (X @ rng.normal(size=48) + rng.normal(size=21_000) > 0).astype(int)
    assert 8 * X.shape[0] * (X.shape[1] + 2) >= pt._TWIN_MIN_BYTES
    kw = dict(n_samples=10, n_burnin=20, n_chains=4, random_state=1)
    before = _chain_dirs()
    ref = SubgradientHMC("hmc", **kw).fit(X, y)
    copies = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with parallel_threshold(0):
            est = SubgradientHMC("hmc", n_jobs=2, **kw)
            for _ in est.fit_iter(X, y):  # mid-run, after the workers' first segment: the copies on disk
                import glob

                copies = copies or [f for d in _chain_dirs() - before for f in glob.glob(f"{d}/*.f32-*")]
    assert est.n_jobs_ == 2 and est.parallel_start_ == 0
    assert len(written) == 1 and written[0][0] is not None
    # one float32 copy, the main process's: a worker that made its own would add a file (for another
    # column count) or rewrite this one after the main process's write
    assert [os.path.basename(f) for f in copies] == [os.path.basename(written[0][0])]
    np.testing.assert_array_equal(est.samples_, ref.samples_)
    np.testing.assert_array_equal(est.potential_, ref.potential_)
    assert _chain_dirs() == before  # the maps and the copy are gone with the fit


@pytest.mark.parametrize("where", ["pilot", "after the pilot"])
def test_a_fit_that_fails_before_its_chains_leaves_no_prepared_files(monkeypatch, where):
    """The maps made for the workers before the pilot go at once when the fit fails there or before its
    chains start (e.g. an interrupt while the run is set up), even while the exception, and so the
    pool, is still held (a REPL keeps the last traceback): no directory of them is left."""
    from bsvm.subgradient import estimator as E

    def broken(*a, **k):
        raise RuntimeError("set-up failed")

    if where == "pilot":
        monkeypatch.setattr(E, "laplace_pilot", broken)
    else:
        monkeypatch.setattr(E.S, "WindowAdaptation", broken)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6_000, 30))  # 1.4 MB of features: mapped for the workers (>= 1 MB)
    y = (X[:, 0] > 0).astype(int)
    before = _chain_dirs()
    with parallel_threshold(0), pytest.raises(RuntimeError, match="set-up failed") as held:
        SubgradientHMC("hmc", n_jobs=2, n_chains=4, n_samples=10, random_state=0).fit(X, y)
    assert held.value is not None  # (the traceback, with the fit's frames, is still held here)
    assert _chain_dirs() == before
