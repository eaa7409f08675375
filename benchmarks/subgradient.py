"""Subgradient MCMC benchmark (issue 13): accuracy at defaults, speed beside NumPyro NUTS, parallel chains.

``python -m benchmarks subgradient [--tables accuracy,speed,parallel] [--sizes 1000x20,20000x20,100000x50]
[--nuts-warmup 1000 --nuts-draws 1000] [--seed 0] [--nuts-cache FILE] [--ref-cache FILE] [--acc-seeds 0,1]
[--data ripley,generated,linear] [--ref-draws 8000]
[--par-sizes 20000x20] [--par-samplers hmc,gibbs] [--par-draws 400] [--par-jobs 1,2] [--par-repeats 1]``

Table 1 (accuracy at defaults): on Ripley-like data (250 x 2), a 351 x 34 set (generated from the model:
ionosphere's shape, which is not shipped) and 100k x 50 linear data, each subgradient sampler at its
DEFAULT settings (``SubgradientHMC(sampler, random_state=s)``, n_samples="auto": run until R-hat <= 1.01
and ESS >= 400) against a long exact reference: GibbsSVM (4 chains x ``--ref-draws`` = 8000 sweeps) for
the two small sets, MH-corrected full-batch "hmc" (4 chains x ref-draws / 2 transitions) at 100k x 50;
the reference's R-hat and minimum bulk ESS over parameters are reported (wanted: <= 1.01 and >= 2000, so
its own MC error is ~0.02 sd). ``--ref-cache FILE`` keeps the references (means, sds, MC errors) in a
JSON file, so the 100k x 50 one is computed once; ``--acc-seeds 0,1,2`` runs each sampler with several
seeds and adds a row with their chains pooled (less Monte Carlo noise: what is left is mostly bias).
Columns: max over parameters of |mean - ref mean| / ref sd (target 0.1), the same in units of the
combined MC error (max|z|; noise alone gives ~2.0-3.3), the mean of z^2 over parameters (~1 without bias),
the noise-corrected rms bias with its 95 % upper bound (``compare``), the largest and smallest sd ratio
(target: within [0.8, 1.25]), CPU s, and whether the run met its own stopping rule. A single run that
stops at ESS 400-800 per parameter has ~sd / 20-28 of MC error per mean, so its max |dm| over 51
parameters is ~0.1 sd from noise alone (the exact hmc's too): the pooled rows' bias columns are what say
whether a sampler is biased.
Table 2 (speed): minimum bulk ESS over parameters per CPU second (whole fit: pilot, burn-in, sampling,
convergence checks), one BLAS thread, beside NumPyro NUTS on the same posterior (../shared/PEERS.md:
N(0, I) prior, hinge potential, 4 chains one after another, float64, JAX on CPU, compile time apart:
NumPyro's NUTS kernel compiled ahead of time once, see ``_nuts.py``). ``--nuts-cache FILE`` keeps the NUTS
results in a JSON file across runs (development only: NUTS at 100k x 50 takes minutes).
Table 3 (parallel chains, ``--par-sizes 20000x20 --par-samplers hmc,gibbs --par-jobs 1,2
--par-repeats 1``): wall time of 4 chains with n_jobs=1 and n_jobs=2 (same draws), at defaults and at a
fixed length, with the CPU seconds of the main process and of each worker, and the load average (the
machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from contextlib import contextmanager

import numpy as np
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from benchmarks import _nuts
from benchmarks._common import print_table
from bsvm import diagnostics
from bsvm.chains import parallel_threshold
from bsvm.datasets import make_ripley
from bsvm.subgradient import GibbsSVM, SubgradientHMC
from bsvm.subgradient import samplers as S


def model_data(n, d, seed=0, c=1.0, l=1.0):
    """x ~ N(0, I), w ~ N(0, 4 I / d), b = 0.3; y drawn with p(+1) = psi(+1) / (psi(+1) + psi(-1))."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    f = X @ (2.0 * rng.normal(size=d) / np.sqrt(d)) + 0.3
    lp, lm = -c * np.maximum(0, l - f), -c * np.maximum(0, l + f)
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(lm - lp))).astype(int)


@contextmanager
def _gradient_counter():
    """Counts the samplers' gradient evaluations (one per chain per call, full data or minibatch; HMC's
    leapfrog steps on binary data call ``Potential.hinge_sums``) while
    the context is open, by wrapping ``samplers.Potential`` (the count costs nothing measurable)."""
    count = [0]
    call, update, sums = S.Potential.__call__, S.Potential.update, S.Potential.hinge_sums

    def counted_call(self, rng, theta, cv=None):
        count[0] += theta.shape[0]
        return call(self, rng, theta, cv)

    def counted_update(self, theta, prev):
        count[0] += theta.shape[0]
        return update(self, theta, prev)

    def counted_sums(self, theta, active):
        count[0] += theta.shape[0]
        return sums(self, theta, active)

    S.Potential.__call__, S.Potential.update = counted_call, counted_update
    S.Potential.hinge_sums = counted_sums
    try:
        yield count
    finally:
        S.Potential.__call__, S.Potential.update, S.Potential.hinge_sums = call, update, sums


def _fit(est, X, y):
    """Fit with one BLAS thread; returns (est, CPU s, wall s, warning texts)."""
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c0, t0 = time.process_time(), time.perf_counter()
        est.fit(X, y)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return est, cpu, wall, [str(w.message) for w in caught]


def datasets(seed=0, big=(100_000, 50), small_only=False):
    Xr, yr = make_ripley(250, random_state=seed)
    yield "ripley 250x2", Xr, yr
    if small_only:
        return
    yield "generated 351x34", *model_data(351, 34, seed + 1)
    if big:
        yield f"linear {big[0]}x{big[1]}", *model_data(*big, seed + 2)


def reference(X, y, seed, draws=8000):
    """A long exact run: GibbsSVM (``draws`` sweeps per chain) for small n, MH-corrected full-batch hmc
    (``draws // 2`` transitions per chain; its draws are nearly independent) for large n, where a Gibbs
    sweep costs n d^2. Returns a dict of what the accuracy table needs (means, sds, MC errors, R-hat, ESS,
    CPU s), so it can be cached as JSON."""
    if X.shape[0] * X.shape[1] ** 2 <= 2e7:
        est = GibbsSVM(n_samples=draws, n_burnin=500, random_state=seed + 100)
        name = f"GibbsSVM 4x{draws}"
    else:
        est = SubgradientHMC("hmc", n_samples=draws // 2, n_burnin=300, random_state=seed + 100)
        name = f"hmc (MH) 4x{draws // 2}"
    est, cpu, _, _ = _fit(est, X, y)
    R = est.samples_
    flat = R.reshape(-1, R.shape[-1])
    return {"name": name, "mean": flat.mean(0).tolist(), "sd": flat.std(0).tolist(),
            "mcse": np.asarray(diagnostics.mcse(R)).tolist(), "draws": int(R.shape[1]),
            "max_rhat": float(np.max(diagnostics.rhat(R))), "min_ess": float(np.min(diagnostics.ess_bulk(R))),
            "min_ess_tail": float(np.min(diagnostics.ess_tail(R))), "cpu_s": cpu}


def reference_key(name, X, seed, draws):
    return f"{name}|{X.shape[0]}x{X.shape[1]}|seed={seed}|draws={draws}"


def cached_reference(name, X, y, seed, draws, cache=None, wait=0.0):
    """``reference`` read from / written to the JSON file ``cache`` (keyed by data set, shape, seed and
    length), so the expensive 100k x 50 reference is computed once. ``wait``: seconds to wait for another
    process to write the entry before computing it here."""
    key = reference_key(name, X, seed, draws)
    store = {}
    deadline = time.perf_counter() + wait
    while cache:
        if os.path.exists(cache):
            with open(cache) as fh:
                store = json.load(fh)
        if key in store or time.perf_counter() >= deadline:
            break
        time.sleep(10)
    if key not in store:
        store[key] = reference(X, y, seed, draws)
        if cache:
            with open(cache, "w") as fh:
                json.dump(store, fh)
    return store[key]


def compare(runs, ref):
    """Accuracy of one run's draws (C, S, P), or of several independent runs pooled (a list of them),
    against a reference dict. All in reference posterior sds:

    - ``max|dm|/sd``: max over parameters of |mean - ref mean| (the issue's target, <= 0.1); pooled: of the
      average of the runs' means (each run weighted equally, none cut).
    - ``max|z|``: the same in units of the combined Monte Carlo error se_j = sqrt(MCSE_run_j^2 +
      MCSE_ref_j^2) (MCSE from bulk ESS; pooled: sqrt(sum MCSE_k^2) / K). Noise alone: ~2.0-3.3 over 35-51
      parameters.
    - ``z2 mean``: mean over parameters of z_j^2: 1 +- 2 sqrt(2 / P) (95 %) when the sampler has no bias;
      larger says a bias is detected.
    - ``rms bias``: the bias's rms over parameters with the noise removed, sqrt(max(0, mean(dm^2 - se^2))),
      and ``rms ub95``: its one-sided 95 % upper bound, sqrt(max(0, mean) + 1.645 sd(mean)) (normal
      approximation, var(dm_j^2 - se_j^2) ~ 2 se_j^4 + 4 b_j^2 se_j^2; a negative estimate counts as 0,
      which keeps the bound conservative). This, not a single run's max|dm|, is
      what separates a sampler's bias from the Monte Carlo error of a run that stopped at ESS 400: that
      error is ~sd / 20 per parameter, so its max over 51 parameters alone is ~0.1-0.15 sd.
    - ``max bias ub95``: max_j (|dm_j| + k se_j), k = Phi^-1(1 - 0.025 / P): with 95 % confidence no
      parameter's bias exceeds it (Bonferroni over the P parameters). It is >= k x the reference's own
      MC error, so it can only prove the 0.1 target when run and reference errors are both below ~0.03.
    - ``rms MC/sd``: rms of the run's (pooled: the pool's) MCSE; ``sd ratio max/min``: of the pooled sds.
    """
    runs = [runs] if isinstance(runs, np.ndarray) else list(runs)
    m0, s0, e0 = (np.asarray(ref[k]) for k in ("mean", "sd", "mcse"))
    K = len(runs)
    dm = np.mean([D.reshape(-1, D.shape[-1]).mean(0) for D in runs], axis=0) - m0
    mc = np.sqrt(np.sum([np.asarray(diagnostics.mcse(D)) ** 2 for D in runs], axis=0)) / K
    var = np.mean([D.reshape(-1, D.shape[-1]).var(0) + (D.reshape(-1, D.shape[-1]).mean(0) - m0 - dm) ** 2
                   for D in runs], axis=0)
    ratio = np.sqrt(var) / s0
    dm, se = np.abs(dm) / s0, np.sqrt(mc ** 2 + e0 ** 2) / s0
    z = dm / se
    excess = dm ** 2 - se ** 2
    b2 = float(np.mean(excess))
    b2_sd = float(np.sqrt(np.sum(2 * se ** 4 + 4 * np.maximum(excess, 0.0) * se ** 2)) / len(dm))
    k = float(norm.ppf(1 - 0.025 / len(dm)))  # Bonferroni: a two-sided 95 % band for all P at once
    return {"max|dm|/sd": float(np.max(dm)), "max|z|": float(np.max(z)), "z2 mean": float(np.mean(z ** 2)),
            "max bias ub95": float(np.max(dm + k * se)),
            "rms bias": float(np.sqrt(max(b2, 0.0))),
            "rms ub95": float(np.sqrt(max(b2, 0.0) + 1.645 * b2_sd)),
            "rms MC/sd": float(np.sqrt(np.mean((mc / s0) ** 2))),
            "sd ratio max": float(ratio.max()), "sd ratio min": float(ratio.min())}


def accuracy_table(seed=0, big=(100_000, 50), samplers=("hmc", "sgld", "sgnht"), ref_draws=8000,
                   small_only=False, ref_cache=None, seeds=None, data=None, ref_wait=0.0):
    """``seeds``: the samplers' seeds (default: just ``seed``), each a row; the data and the reference
    use ``seed``. ``data``: names of the sets to run (prefixes, e.g. ("ripley",)); default all. The
    samplers run first, then the reference is read from ``ref_cache`` (waiting up to ``ref_wait`` s for
    another process to write it) or computed."""
    rows = []
    for name, X, y in datasets(seed, big, small_only):
        if data and not any(name.startswith(d) for d in data):
            continue
        fits = {}
        for sampler in samplers:
            for s in (seeds or (seed,)):
                fits[sampler, s] = _fit(SubgradientHMC(sampler, random_state=s), X, y)
        ref = cached_reference(name, X, y, seed, ref_draws, ref_cache, ref_wait)
        ref_mc = np.asarray(ref["mcse"]) / np.asarray(ref["sd"])
        rows.append({"data": name, "method": ref["name"] + " (reference)", "seed": seed + 100,
                     "cpu_s": ref["cpu_s"], "draws/chain": ref["draws"], "max_rhat": ref["max_rhat"],
                     "min_ess": ref["min_ess"], "max|dm|/sd": 0.0, "max|z|": 0.0, "z2 mean": float("nan"),
                     "max bias ub95": float("nan"),
                     "rms bias": 0.0, "rms ub95": float("nan"),
                     "rms MC/sd": float(np.sqrt(np.mean(ref_mc ** 2))),
                     "sd ratio max": 1.0, "sd ratio min": 1.0, "converged": "-"})
        for sampler in samplers:
            runs = []
            for s in (seeds or (seed,)):
                est, cpu, _, warns = fits[sampler, s]
                D = est.samples_
                runs.append((D, cpu))
                rows.append({"data": name, "method": f"{sampler} (defaults)", "seed": s, "cpu_s": cpu,
                             "draws/chain": D.shape[1], "max_rhat": float(np.max(diagnostics.rhat(D))),
                             "min_ess": float(np.min(diagnostics.ess_bulk(D))), **compare(D, ref),
                             "converged": str(est.converged_) + ("" if not warns else " (warned)")})
                print(rows[-1], flush=True)
            if len(runs) > 1:
                # the seeds' runs pooled: their Monte Carlo errors average out, so what is left of |dm| is
                # mostly the sampler's bias (R-hat/ESS: every seed's chains side by side, cut to the shortest)
                k = min(D.shape[1] for D, _ in runs)
                P = np.concatenate([D[:, D.shape[1] - k:] for D, _ in runs], axis=0)
                rows.append({"data": name, "method": f"{sampler} (defaults, {len(runs)} seeds pooled)",
                             "seed": "all", "cpu_s": float(np.mean([c for _, c in runs])),
                             "draws/chain": int(np.mean([D.shape[1] for D, _ in runs])),
                             "max_rhat": float(np.max(diagnostics.rhat(P))),
                             "min_ess": float(np.min(np.sum([diagnostics.ess_bulk(D) for D, _ in runs], 0))),
                             **compare([D for D, _ in runs], ref), "converged": "-"})
    print(f"\nTable 1. Accuracy at default settings against a long exact reference (data seed {seed}). "
          "Targets: max|dm|/sd <= 0.1, sd ratios in [0.8, 1.25].\nmax|z| = max |dm| / combined Monte Carlo "
          "error of run and reference (noise alone: ~2.0-3.3 over 35-51 parameters); z2 mean = mean z^2 over "
          "parameters (1 +- 2 sqrt(2/P) without bias); max bias ub95 = max_j |dm_j| + k se_j (every "
          "parameter's bias is below it with 95% confidence, Bonferroni); rms bias = rms over parameters of "
          "|dm| with the noise removed, rms ub95 its one-sided 95% upper bound (pooled rows: the seeds' runs "
          "averaged, so the noise shrinks and what is left is the sampler's bias); 'rms MC/sd' = rms MC "
          "error of the means; "
          "min_ess = min bulk ESS over parameters; reference: max_rhat / min bulk ESS over parameters.")
    print_table(rows, floatfmt="{:.3f}")
    return rows


def _nuts_summary(r):
    ess = diagnostics.ess_bulk(r["draws"])
    return {"cpu_s": r["cpu_s"], "compile_s": r["compile_s"], "min_ess": float(ess.min()),
            "max_rhat": float(diagnostics.rhat(r["draws"]).max()), "n_grad": r["n_grad"],
            "draws/chain": int(r["draws"].shape[1])}


def speed_table(sizes=((1000, 20), (20_000, 20), (100_000, 50)), nuts_warmup=1000, nuts_draws=1000, seed=0,
                samplers=("hmc", "sgld", "sgnht", "gibbs"), nuts_cache=None):
    """``nuts_cache``: a :class:`benchmarks._nuts.NutsCache` (JSON file of NUTS results, for development)."""
    rows = []
    cache = nuts_cache or _nuts.NutsCache(None)
    # the diagnostics' first call imports arviz-stats (~0.5-0.9 CPU s, once per process); paid here, before
    # any timed fit, as NUTS's compile is (with cached NUTS results it would otherwise fall in the first fit)
    diagnostics.ess_bulk(np.random.default_rng(0).normal(size=(2, 20, 2)))
    for n, d in sizes:
        X, y = model_data(n, d, seed)
        base = None
        if nuts_draws > 0 and _nuts.available():
            with threadpool_limits(1):
                r = cache.get(X, y, _nuts_summary, num_warmup=nuts_warmup, num_samples=nuts_draws, seed=seed)
            base = r["min_ess"] / r["cpu_s"]
            rows.append({"n x d": f"{n}x{d}", "method": f"NumPyro NUTS ({nuts_warmup}+{nuts_draws})"
                         + (" [cached]" if r["cached"] else ""),
                         "cpu_s": r["cpu_s"], "compile_s": r["compile_s"], "draws/chain": r["draws/chain"],
                         "grads/chain": r["n_grad"] / 4, "min_ess": r["min_ess"], "max_rhat": r["max_rhat"],
                         "ess/cpu_s": base, "x NUTS": 1.0, "converged": "-"})
        elif nuts_draws > 0:
            print("(NumPyro/JAX not installed: NUTS rows skipped)")
        for sampler in samplers:
            est = (GibbsSVM(random_state=seed) if sampler == "gibbs"
                   else SubgradientHMC(sampler, random_state=seed))
            with _gradient_counter() as grads:
                est, cpu, _, warns = _fit(est, X, y)
            ess = float(diagnostics.ess_bulk(est.samples_).min())
            grads = grads[0] if sampler != "gibbs" else None
            rows.append({"n x d": f"{n}x{d}", "method": f"{sampler} (defaults)", "cpu_s": cpu,
                         "compile_s": 0.0, "draws/chain": est.samples_.shape[1],
                         "grads/chain": float("nan") if grads is None else grads / est.samples_.shape[0],
                         "min_ess": ess,
                         "max_rhat": float(diagnostics.rhat(est.samples_).max()), "ess/cpu_s": ess / cpu,
                         "x NUTS": (ess / cpu) / base if base else float("nan"),
                         "converged": str(est.converged_) + ("" if not warns else " (warned)")})
    print("\nTable 2. Minimum bulk ESS over parameters per CPU second (one thread), defaults vs NumPyro NUTS "
          f"(compile time apart). Linear model data, seed {seed}. grads/chain: gradient evaluations per "
          "chain (whole fit; sgld/sgnht: minibatch gradients).")
    print_table(rows, floatfmt="{:.2f}")
    return rows


def _cpu_now():
    """(this process's CPU s, {pid: CPU s} of its child processes: the joblib/loky workers)."""
    import psutil

    kids = {}
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            kids[child.pid] = t.user + t.system
        except psutil.Error:
            pass
    return time.process_time(), kids


def _timed_fit(est, X, y):
    """Fit with one BLAS thread in every process; returns (est, wall s, main CPU s, [worker CPU s])."""
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0, k0 = _cpu_now()
        t0 = time.perf_counter()
        est.fit(X, y)
        wall = time.perf_counter() - t0
        c1, k1 = _cpu_now()
    workers = sorted((k1[p] - k0.get(p, 0.0) for p in k1 if k1[p] - k0.get(p, 0.0) > 0.05), reverse=True)
    return est, wall, c1 - c0, workers


def _parallel_estimator(sampler, n_jobs, seed, n_samples):
    kw = dict(n_jobs=n_jobs, random_state=seed, n_chains=4)
    if n_samples is not None:
        kw["n_samples"] = n_samples
    return GibbsSVM(**kw) if sampler == "gibbs" else SubgradientHMC(sampler, **kw)


def parallel_table(sizes=((20_000, 20),), samplers=("hmc", "gibbs"), seed=0, n_samples=400, jobs=(1, 2),
                   repeats=1):
    """Wall time of 4 chains with n_jobs = 1 and 2 (joblib's default loky processes), same draws.

    For each size and sampler: a defaults row (n_samples="auto", the run length decided by the stopping
    rule over all chains) and a fixed-length row (``n_samples`` draws after the default burn-in); each
    n_jobs in ``jobs``, interleaved, ``repeats`` times. Columns: wall s; CPU s of the main process and of
    each worker process (psutil), so the work per process can be compared with the one-job run; draws per
    chain; the iteration at which the chains moved to the workers (``parallel_start_``; "-": the rule of
    ``bsvm.chains`` kept them in-process, the work being estimated under 1 CPU s); whether the draws
    equal the one-job run's (bit-identical); the 1-minute load average before and after the fit (the
    machine is shared: wall times mean little when the load exceeds the core count); and wall / one-job
    wall (the mean over repeats of the one-job walls). Worker start-up (first use of the
    loky processes) and the first fit's imports are paid in a warm-up fit before any timed one."""
    rows = []
    with parallel_threshold(0):  # warm-up: start the loky workers (a fit this small would stay in-process)
        _timed_fit(_parallel_estimator("hmc", max(jobs), seed, 20), *model_data(300, 3, seed))
    _timed_fit(_parallel_estimator("hmc", 1, seed, 20), *model_data(300, 3, seed))
    for n, d in sizes:
        X, y = model_data(n, d, seed)
        for sampler in samplers:
            for length in ("auto", n_samples):
                label = f"{sampler} (defaults)" if length == "auto" else f"{sampler}, n_samples={length}"
                ref, block = None, []
                for _ in range(repeats):
                    for nj in jobs:
                        load0 = os.getloadavg()[0]
                        fixed = None if length == "auto" else length
                        est = _parallel_estimator(sampler, nj, seed, fixed)
                        est, wall, cpu, workers = _timed_fit(est, X, y)
                        if ref is None:
                            ref = est.samples_
                        block.append({"n x d": f"{n}x{d}", "method": label, "n_jobs": nj, "wall_s": wall,
                                      "main cpu_s": cpu,
                                      "worker cpu_s": " ".join(f"{w:.2f}" for w in workers) or "-",
                                      "draws/chain": est.samples_.shape[1],
                                      "workers from": "-" if est.parallel_start_ is None
                                      else f"it. {est.parallel_start_}",
                                      "same draws": str(bool(np.array_equal(est.samples_, ref))),
                                      "load before": load0, "load after": os.getloadavg()[0]})
                        # (a line of progress while the table is made: the raw dict read as a stray, a review)
                        print(f"  {n}x{d} {label}, n_jobs={nj}: {wall:.2f} s wall, {cpu:.2f} CPU s in the "
                              "main process", flush=True)
                one = [r["wall_s"] for r in block if r["n_jobs"] == 1]
                for r in block:
                    r["wall / 1-job"] = r["wall_s"] / np.mean(one) if one else float("nan")
                rows.extend(block)
    print(f"\nTable 3. Parallel chains: 4 chains, n_jobs = {', '.join(map(str, jobs))} (joblib loky "
          f"processes, one BLAS thread each), seed {seed}, on {os.cpu_count()} cores shared with other jobs "
          "(1-min load average before/after each fit).\nTarget: n_jobs=2 wall <= 0.65x the one-job wall. "
          "worker cpu_s: CPU s of each worker process during the fit.")
    print_table(rows, floatfmt="{:.2f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks subgradient")
    ap.add_argument("--tables", default="accuracy,speed,parallel")
    ap.add_argument("--sizes", default="1000x20,20000x20,100000x50")
    ap.add_argument("--big", default="100000x50", help="the large set of Table 1 ('none' to skip)")
    ap.add_argument("--samplers", default="hmc,sgld,sgnht,gibbs")
    ap.add_argument("--nuts-warmup", type=int, default=1000)
    ap.add_argument("--nuts-draws", type=int, default=1000)
    ap.add_argument("--ref-draws", type=int, default=8000, help="reference draws per chain (Gibbs; hmc: 1/2)")
    ap.add_argument("--ref-cache", default=None, help="JSON file caching the accuracy references")
    ap.add_argument("--acc-seeds", default=None, help="comma-separated sampler seeds for the accuracy table")
    ap.add_argument("--ref-wait", type=float, default=0.0,
                    help="seconds to wait for another process to write the reference into --ref-cache")
    ap.add_argument("--data", default=None, help="accuracy table: comma-separated data-set prefixes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nuts-cache", default=None,
                    help="JSON file keeping NUTS results across runs (development: 100k x 50 takes minutes)")
    ap.add_argument("--par-sizes", default="20000x20", help="parallel table: n x d sizes")
    ap.add_argument("--par-samplers", default="hmc,gibbs",
                    help="parallel table: hmc, sgld, sgnht, gibbs (gibbs's sweeps are compute-bound; "
                         "hmc's gradients at 100000x50 are bound by memory bandwidth, which two "
                         "processes share)")
    ap.add_argument("--par-draws", type=int, default=400, help="parallel table: fixed-length draws")
    ap.add_argument("--par-jobs", default="1,2", help="parallel table: n_jobs values (interleaved)")
    ap.add_argument("--par-repeats", type=int, default=1, help="parallel table: repeats of each n_jobs")
    args = ap.parse_args(argv)
    tables = args.tables.split(",")
    print("(2-core machine shared with other jobs; speed is CPU seconds of this process, one BLAS thread)")
    big = None if args.big == "none" else tuple(int(v) for v in args.big.split("x"))
    samplers = tuple(args.samplers.split(","))
    if "accuracy" in tables:
        seeds = None if args.acc_seeds is None else tuple(int(v) for v in args.acc_seeds.split(","))
        accuracy_table(args.seed, big, tuple(s for s in samplers if s != "gibbs"), args.ref_draws,
                       ref_cache=args.ref_cache, seeds=seeds,
                       data=None if args.data is None else tuple(args.data.split(",")),
                       ref_wait=args.ref_wait)
    if "speed" in tables:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
        speed_table(sizes, args.nuts_warmup, args.nuts_draws, args.seed, samplers,
                    _nuts.NutsCache(args.nuts_cache))
    if "parallel" in tables:
        parallel_table(tuple(tuple(int(v) for v in z.split("x")) for z in args.par_sizes.split(",")),
                       tuple(args.par_samplers.split(",")), args.seed, args.par_draws,
                       tuple(int(v) for v in args.par_jobs.split(",")), args.par_repeats)
    return 0


def smoke():
    # hmc: a defaults sgld fit is ~10 CPU s even on 250 rows (its run to ESS 400 at the capped step)
    accuracy_table(big=None, samplers=("hmc",), ref_draws=300, small_only=True, data=("ripley",))
    speed_table(((300, 3),), nuts_warmup=0, nuts_draws=0, samplers=("hmc",))  # NUTS: a compile alone is ~20 s
    # the parallel table's code path (workers start in its warm-up; a fit this small stays in-process)
    parallel_table(sizes=((300, 3),), n_samples=20, repeats=1)
