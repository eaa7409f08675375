"""Subgradient MCMC benchmark (issue 13): accuracy at defaults, speed beside NumPyro NUTS, parallel chains.

``python -m benchmarks subgradient [--tables accuracy,speed,parallel] [--sizes 1000x20,20000x20,100000x50]
[--nuts-warmup 1000 --nuts-draws 1000] [--seed 0] [--nuts-cache FILE]``

Table 1 (accuracy at defaults): on Ripley-like data (250 x 2), a 351 x 34 set (generated from the model:
ionosphere's shape, which is not shipped) and 100k x 50 linear data, each subgradient sampler at its
DEFAULT settings (n_samples="auto": run until R-hat <= 1.01 and ESS >= 400) against a long exact
reference: GibbsSVM (4 chains x 4000 sweeps) for the two small sets, MH-corrected full-batch "hmc"
(4 chains x 3000 transitions) at 100k x 50, whose R-hat is reported. Columns: max over parameters of
|mean - ref mean| / ref sd and of the sd ratio (max(s/s_ref, s_ref/s)); targets 0.1 and 1.25.
Table 2 (speed): minimum bulk ESS over parameters per CPU second (whole fit: pilot, burn-in, sampling,
convergence checks), one BLAS thread, beside NumPyro NUTS on the same posterior (../shared/PEERS.md:
N(0, I) prior, hinge potential, 4 chains one after another, float64, JAX on CPU, compile time apart:
NumPyro's NUTS kernel compiled ahead of time once, see ``_nuts.py``). ``--nuts-cache FILE`` keeps the NUTS
results in a JSON file across runs (development only: NUTS at 100k x 50 takes minutes).
Table 3 (parallel chains): wall time of 4 chains with n_jobs=1 and n_jobs=2 (same draws), with the load
average at the time (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from contextlib import contextmanager

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import _nuts
from benchmarks._common import print_table
from bsvm import diagnostics
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
    """Counts the samplers' gradient evaluations (one per chain per call, full data or minibatch) while
    the context is open, by wrapping ``samplers.Potential`` (the count costs nothing measurable)."""
    count = [0]
    call, update = S.Potential.__call__, S.Potential.update

    def counted_call(self, rng, theta, cv=None):
        count[0] += theta.shape[0]
        return call(self, rng, theta, cv)

    def counted_update(self, theta, prev):
        count[0] += theta.shape[0]
        return update(self, theta, prev)

    S.Potential.__call__, S.Potential.update = counted_call, counted_update
    try:
        yield count
    finally:
        S.Potential.__call__, S.Potential.update = call, update


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


def reference(X, y, seed, draws=4000):
    """A long exact run: GibbsSVM for small n, MH-corrected hmc for large n (Gibbs sweeps cost n d^2)."""
    if X.shape[0] * X.shape[1] ** 2 <= 2e7:
        est = GibbsSVM(n_samples=draws, n_burnin=200, random_state=seed + 100)
        name = f"GibbsSVM 4x{draws}"
    else:
        est = SubgradientHMC("hmc", n_samples=3 * draws // 4, random_state=seed + 100)
        name = f"hmc (MH) 4x{3 * draws // 4}"
    est, cpu, _, _ = _fit(est, X, y)
    return name, est.samples_, cpu


def accuracy_table(seed=0, big=(100_000, 50), samplers=("hmc", "sgld", "sgnht"), ref_draws=4000,
                   small_only=False):
    rows = []
    for name, X, y in datasets(seed, big, small_only):
        ref_name, R, ref_cpu = reference(X, y, seed, ref_draws)
        flat = R.reshape(-1, R.shape[-1])
        m0, s0 = flat.mean(0), flat.std(0)
        rows.append({"data": name, "method": ref_name + " (reference)", "cpu_s": ref_cpu,
                     "draws/chain": R.shape[1], "max_rhat": float(diagnostics.rhat(R).max()),
                     "min_ess": float(diagnostics.ess_bulk(R).min()), "max|dm|/sd": 0.0, "max sd ratio": 1.0,
                     "rms MC/sd": float(np.sqrt(np.mean((diagnostics.mcse(R) / s0) ** 2))),
                     "converged": "-"})
        for sampler in samplers:
            est, cpu, _, warns = _fit(SubgradientHMC(sampler, random_state=seed), X, y)
            D = est.samples_
            f = D.reshape(-1, D.shape[-1])
            ratio = f.std(0) / s0
            rows.append({"data": name, "method": f"{sampler} (defaults)", "cpu_s": cpu,
                         "draws/chain": D.shape[1],
                         "max_rhat": float(diagnostics.rhat(D).max()),
                         "min_ess": float(diagnostics.ess_bulk(D).min()),
                         "max|dm|/sd": float(np.max(np.abs(f.mean(0) - m0) / s0)),
                         "max sd ratio": float(np.max(np.maximum(ratio, 1.0 / ratio))),
                         "rms MC/sd": float(np.sqrt(np.mean((diagnostics.mcse(D) / s0) ** 2))),
                         "converged": str(est.converged_) + ("" if not warns else " (warned)")})
    print(f"\nTable 1. Accuracy at default settings against a long exact reference (seed {seed}). Targets: "
          "max|dm|/sd <= 0.1, max sd ratio <= 1.25.\n'rms MC/sd' = rms Monte Carlo error of the means in "
          "reference sds (part of dm that is noise).")
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


def parallel_table(n=20_000, d=20, seed=0, sampler="hmc", n_samples=400):
    X, y = model_data(n, d, seed)
    rows, draws = [], []
    # warm the joblib workers first (their start-up is paid once per session)
    _fit(SubgradientHMC(sampler, n_samples=5, n_burnin=5, n_jobs=2, random_state=seed), X[:200], y[:200])
    for n_jobs in (1, 2):
        load = os.getloadavg()[0]
        est, cpu, wall, _ = _fit(SubgradientHMC(sampler, n_samples=n_samples, n_chains=4, n_jobs=n_jobs,
                                                random_state=seed), X, y)
        draws.append(est.samples_)
        rows.append({"n_jobs": n_jobs, "wall_s": wall, "main-process cpu_s": cpu, "load avg (1 min)": load})
    same = bool(np.array_equal(draws[0], draws[1]))
    for r in rows:
        r["wall / 1-job wall"] = r["wall_s"] / rows[0]["wall_s"]
        r["same draws"] = str(same)
    print(f"\nTable 3. Parallel chains: {sampler}, {n}x{d}, 4 chains x (200 burn-in + {n_samples}), on "
          f"{os.cpu_count()} cores shared with other jobs (load average shown). Target: 2 jobs <= 0.65x.")
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
    ap.add_argument("--ref-draws", type=int, default=4000, help="reference draws per chain (Gibbs; hmc: 3/4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nuts-cache", default=None,
                    help="JSON file keeping NUTS results across runs (development: 100k x 50 takes minutes)")
    args = ap.parse_args(argv)
    tables = args.tables.split(",")
    print("(2-core machine shared with other jobs; speed is CPU seconds of this process, one BLAS thread)")
    big = None if args.big == "none" else tuple(int(v) for v in args.big.split("x"))
    samplers = tuple(args.samplers.split(","))
    if "accuracy" in tables:
        accuracy_table(args.seed, big, tuple(s for s in samplers if s != "gibbs"), args.ref_draws)
    if "speed" in tables:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
        speed_table(sizes, args.nuts_warmup, args.nuts_draws, args.seed, samplers,
                    _nuts.NutsCache(args.nuts_cache))
    if "parallel" in tables:
        parallel_table(seed=args.seed)
    return 0


def smoke():
    accuracy_table(big=None, samplers=("sgld",), ref_draws=300, small_only=True)
    speed_table(((300, 3),), nuts_warmup=0, nuts_draws=0, samplers=("hmc",))  # NUTS: a compile alone is ~20 s
