"""bsvm.convergence (the shared stopping rule), bsvm.chains (seeds, groups, pool) and bsvm.draws."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bsvm.chains import ChainPool, ChainRNG, chain_groups, chain_seeds
from bsvm.convergence import (
    ConvergenceMonitor,
    ConvergenceStatus,
    StoppingRule,
    assess,
    combine,
    monitor_rows,
    warn_not_converged,
)
from bsvm.draws import to_datatree


def test_assess_passes_iid_and_fails_stuck_or_short_chains():
    rng = np.random.default_rng(0)
    good = rng.normal(size=(4, 400, 3))
    st = assess(good)
    assert st.converged and st.rhat < 1.01 and st.ess_bulk > 1000 and st.failed == ()
    assert set(st.metrics()) == {"rhat", "ess_bulk", "ess_tail", "draws", "converged"}
    stuck = good + np.array([0.0, 0.0, 0.0, 1.0])[:, None, None]
    st = assess(stuck)
    assert not st.converged and any("R-hat" in f for f in st.failed)
    few = assess(good[:, :150])  # 600 iid draws but ESS 400 is met; a smaller target shows the ESS rule
    assert assess(good[:, :60]).failed and "bulk ESS" in " ".join(assess(good[:, :60]).failed)
    assert few.ess_bulk > 400
    assert "too few" in assess(good[:, :3]).notes[0]


def test_assess_one_chain_nan_and_constant_quantities():
    rng = np.random.default_rng(1)
    one = assess(rng.normal(size=(1, 2000, 2)))
    assert np.isnan(one.rhat) and not one.converged and "undefined" in one.notes[0]
    bad = rng.normal(size=(4, 100, 2))
    bad[2, 50, 1] = np.nan
    st = assess(bad)
    assert not st.converged and "non-finite" in st.failed[0]
    const = rng.normal(size=(4, 500, 2))
    const[..., 1] = 1.0  # p(y|x) = 1 far from the boundary: skipped, not a failure
    st = assess(const)
    assert st.converged and st.per_quantity["names"] == ["q0"]


def test_combine_equals_one_assessment_of_all_quantities():
    """combine() of assessments of disjoint quantity sets gives what one assessment of them all gives
    (worst R-hat and ESS, the rule's failures restated from them, the per-quantity table); a set of
    constant quantities is left out as assess() leaves out a constant column."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 300, 5))
    x[1, :, 3] += 0.4  # one chain off in one quantity: R-hat fails there
    x[:, :, 4] = np.cumsum(x[:, :, 4], axis=1) * 0.2 + x[:, :, 4]  # slow: low ESS
    whole = assess(x, names=list("abcde"))
    parts = combine([assess(x[..., :2], names=list("ab")), assess(x[..., 2:], names=list("cde"))])
    assert not whole.converged and not parts.converged
    assert parts.rhat == pytest.approx(whole.rhat) and parts.ess_bulk == pytest.approx(whole.ess_bulk)
    assert parts.ess_tail == pytest.approx(whole.ess_tail) and parts.failed == whole.failed
    assert parts.per_quantity["names"] == whole.per_quantity["names"]
    np.testing.assert_allclose(parts.per_quantity["ess_bulk"], whole.per_quantity["ess_bulk"])
    good = assess(x[..., :3])
    assert good.converged and combine([good, assess(np.ones((4, 300, 2)))]).converged
    # the draws reported are the caller's (summaries every k-th draw, parameters at every draw)
    assert combine([good, assess(x[..., :3][:, ::2])], draws=300).draws == 300
    # a failure outside the three criteria (non-finite draws) is kept
    bad = x[..., :2].copy()
    bad[0, 5, 0] = np.nan
    assert "non-finite" in combine([good, assess(bad)]).failed[0]
    # a non-finite R-hat (assess's inf) stays the worst, not dropped for a finite one
    stuck = ConvergenceStatus(300, 4, np.inf, 500.0, 500.0, failed=("R-hat inf > 1.01",))
    both = combine([good, stuck])
    assert both.rhat == np.inf and both.failed == ("R-hat inf > 1.01",) and not both.converged


def test_monitor_schedule_is_geometric_and_rule_is_described():
    mon = ConvergenceMonitor(4)
    assert mon.next_check == 100 and not mon.due(99) and mon.due(100)
    rng = np.random.default_rng(2)
    checks = []
    x = np.cumsum(rng.normal(size=(4, 5000)), axis=1) * 0.05 + rng.normal(size=(4, 5000))  # slow mixing
    while mon.next_check <= 5000:
        d = mon.next_check
        checks.append(d)
        mon.check(x[:, :d])
    ratios = np.diff(checks) / np.array(checks[:-1])
    assert np.all(ratios >= 0.24) and np.all(ratios <= 0.51)
    assert "R-hat <= 1.01" in StoppingRule().describe() and "ESS >= 400" in StoppingRule().describe()
    assert {"rhat_target", "ess_target", "rhat", "ess_bulk", "next_check"} <= set(mon.metrics())
    with pytest.warns(ConvergenceWarning, match="max_time=1 s ran out.*R-hat"):
        warn_not_converged("X", assess(x[:, :100] + np.arange(4)[:, None]), "max_time=1 s")
    with pytest.warns(ConvergenceWarning, match="no convergence check"):
        warn_not_converged("X", None, "max_iter=3")
    np.testing.assert_array_equal(monitor_rows(100, 5), [0, 25, 50, 74, 99])
    assert len(monitor_rows(3, 20)) == 3


def test_chain_seeds_groups_and_rng_are_independent_of_grouping():
    _, seeds = chain_seeds(7, 4)
    _, seeds6 = chain_seeds(7, 6)
    a = ChainRNG.from_seeds(seeds).standard_normal((4, 3))
    b = ChainRNG.from_seeds(seeds6).standard_normal((6, 3))[:4]
    np.testing.assert_array_equal(a, b)  # chain k's stream does not depend on how many chains there are
    r = ChainRNG.from_seeds(seeds)
    halves = np.concatenate([r[:2].standard_normal((2, 3)), r[2:].standard_normal((2, 3))])
    np.testing.assert_array_equal(ChainRNG.from_seeds(seeds).standard_normal((4, 3)), halves)
    assert [list(g) for g in chain_groups(5, 2)] == [[0, 1, 2], [3, 4]]
    assert len(chain_groups(2, 8)) == 2
    with pytest.raises(ValueError, match="random_state"):
        chain_seeds("x", 2)
    with pytest.raises(ValueError, match="number of chains"):
        r.uniform(size=(3, 2))


def _square(x, shared):
    return float((x * shared).sum())


def test_chain_pool_runs_in_process_and_in_joblib_workers():
    shared = np.ones(300_000)
    out = []
    for n_jobs in (1, 2):
        with ChainPool(n_jobs) as pool:
            s = pool.share(shared)
            out.append(pool.map(_square, [(np.arange(3.0), s[:3]), (np.arange(4.0), s[:4])]))
    assert out[0] == out[1] == [3.0, 6.0]


def test_to_datatree_is_read_by_arviz_stats_summary():
    import arviz_stats

    rng = np.random.default_rng(3)
    dt = to_datatree({"theta": rng.normal(size=(2, 50, 3))},
                     {"accept_prob": rng.uniform(size=(2, 50)), "diverging": np.zeros((2, 50)),
                      "n_leapfrog": np.full((2, 50), 10), "lp": rng.normal(size=(2, 50)), "xi": None},
                     {"y": np.array([0, 1])}, dims={"theta": ["param"]}, coords={"param": ["a", "b", "c"]})
    assert set(dt.children) == {"posterior", "sample_stats", "observed_data"}
    assert set(dt["sample_stats"].data_vars) == {"acceptance_rate", "diverging", "n_steps", "lp"}
    assert dt["sample_stats"]["diverging"].dtype == bool
    # the sampling library is named on every group (a file naming only "ArviZ 0.8.2" read as ArviZ's)
    assert all(dt[g].attrs["inference_library"] == "bsvm" for g in ("posterior", "sample_stats"))
    table = arviz_stats.summary(dt)
    assert len(table) == 3 and "r_hat" in table.columns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from bsvm import diagnostics
        assert len(diagnostics.summary(dt)) == 3


def test_a_failure_names_its_worst_quantity():
    """"R-hat 1.017 > 1.01" left a user to guess among 41 quantities (a library user's review): each
    failed criterion names the quantity that is worst on it; a combined outcome names one only where
    its table holds the worst value."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 300, 3))
    x[1, :, 2] += 0.5  # one chain off in "c"
    st = assess(x, names=["a", "b", "c"])
    assert any(f.startswith("R-hat") and f.endswith("(worst: c)") for f in st.failed), st.failed
    stuck = ConvergenceStatus(300, 4, np.inf, 500.0, 500.0, failed=("R-hat inf > 1.01",))
    assert combine([assess(x[..., :2], names=["a", "b"]), stuck]).failed == ("R-hat inf > 1.01",)


def test_ess_targets_met_reads_the_numbers_not_the_words():
    """One chain with ESS met: True (R-hat is what is missing); too few draws, non-finite or constant
    draws, or an ESS short of its target: False."""
    from bsvm.convergence import ess_targets_met

    rng = np.random.default_rng(0)
    assert ess_targets_met(assess(rng.normal(size=(1, 2000, 2))))
    assert not ess_targets_met(assess(rng.normal(size=(1, 100, 2))))  # ESS ~100 < 400
    assert not ess_targets_met(assess(rng.normal(size=(1, 5, 2))))  # too few draws
    bad = rng.normal(size=(2, 2000, 2))
    bad[0, 10, 0] = np.nan
    assert not ess_targets_met(assess(bad))
    assert not ess_targets_met(assess(np.ones((2, 500, 2))))
    assert not ess_targets_met(None)
    # a combined check whose first part had too few draws to assess: its failure counts (the numbers
    # are the other part's, which met the targets, a review)
    from bsvm.convergence import combine

    both = combine([assess(rng.normal(size=(1, 5, 4))), assess(rng.normal(size=(1, 2000, 3)))])
    assert both.failed and not ess_targets_met(both)
