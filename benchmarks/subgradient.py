"""Subgradient MCMC benchmark (issue 4): speed vs the exact Gibbs sampler, accuracy, memory.

``python -m benchmarks subgradient [--n 100000 --d 50 --gibbs-sweeps 300 --folds 5 --skip-raetsch]``

Table 1: a linear problem (n x d, labels drawn from the model). Bulk-ESS per second (minimum over
parameters, whole fit time including pilot and burn-in) of SSGLD and SSGNHT against GibbsSVM in the same
process, and their posterior means against GibbsSVM's in units of the Gibbs posterior sd. The rows
without control variates are the paper's plain minibatch estimate (eq. 7).
Table 2: test error with Nystroem features vs PlattSVM on Waveform and German (stratified CV).
Table 3: memory while keeping 10 chains x 2000 draws x 500 parameters (tracemalloc peak).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from sklearn.model_selection import StratifiedKFold

from benchmarks._common import load_raetsch, print_table
from bsvm import diagnostics
from bsvm.platt import PlattSVM
from bsvm.subgradient import GibbsSVM, SubgradientHMC


def model_data(n, d, seed=0, c=1.0, l=1.0):
    """x ~ N(0, I), w ~ N(0, 4 I / d), b = 0.3; y drawn with p(+1) = psi(+1) / (psi(+1) + psi(-1))."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    f = X @ (2.0 * rng.normal(size=d) / np.sqrt(d)) + 0.3
    lp, lm = -c * np.maximum(0, l - f), -c * np.maximum(0, l + f)
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(lm - lp))).astype(int)


def _timed_fit(est, X, y):
    """Fit and return (est, wall seconds, CPU seconds of this process). ESS per second uses CPU time: the
    machine is shared, and other jobs' load would otherwise bias a ratio of runs made one after another."""
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X, y)
    return est, time.perf_counter() - t0, time.process_time() - c0


def speed_table(n, d, gibbs_sweeps, sg_draws, batch, sg_burnin=1000, seed=0):
    X, y = model_data(n, d, seed)
    gibbs = GibbsSVM(n_samples=gibbs_sweeps, n_burnin=20, n_chains=2, random_state=seed)
    gibbs, wall, cpu = _timed_fit(gibbs, X, y)
    G = gibbs.samples_
    g_flat = G.reshape(-1, G.shape[-1])
    g_mean, g_sd, g_mcse = g_flat.mean(0), g_flat.std(0), diagnostics.mcse(G)
    g_ess = diagnostics.ess_bulk(G)
    g_rate = g_ess.min() / cpu
    rows = [{"method": "GibbsSVM", "cv": "-", "cpu_s": cpu, "wall_s": wall, "draws": G.shape[0] * G.shape[1],
             "min_ess": float(g_ess.min()), "ess/cpu_s": g_rate, "ratio": 1.0,
             "max_rhat": float(diagnostics.rhat(G).max()), "max|dm|/sd": 0.0, "rms|dm|/sd": 0.0,
             "rms MC/sd": float(np.sqrt(np.mean((g_mcse / g_sd) ** 2))), "bias/sd est": 0.0,
             "med sd ratio": 1.0}]
    for sampler in ("sgld", "sgnht"):
        for cv in (True, False):
            est = SubgradientHMC(sampler, n_samples=sg_draws, n_burnin=sg_burnin, n_chains=4,
                                 batch_size=batch, control_variates=cv, random_state=seed)
            est, wall, cpu = _timed_fit(est, X, y)
            D = est.samples_
            flat = D.reshape(-1, D.shape[-1])
            ess = diagnostics.ess_bulk(D)
            z2 = ((flat.mean(0) - g_mean) / g_sd) ** 2
            mc2 = (g_mcse ** 2 + diagnostics.mcse(D) ** 2) / g_sd ** 2
            rows.append({"method": f"SubgradientHMC({sampler})", "cv": str(cv), "cpu_s": cpu, "wall_s": wall,
                         "draws": D.shape[0] * D.shape[1], "min_ess": float(ess.min()),
                         "ess/cpu_s": ess.min() / cpu, "ratio": (ess.min() / cpu) / g_rate,
                         "max_rhat": float(diagnostics.rhat(D).max()), "max|dm|/sd": float(np.sqrt(z2.max())),
                         "rms|dm|/sd": float(np.sqrt(z2.mean())), "rms MC/sd": float(np.sqrt(mc2.mean())),
                         "bias/sd est": float(np.sqrt(max(0.0, z2.mean() - mc2.mean()))),
                         "med sd ratio": float(np.median(flat.std(0) / g_sd))})
    print(f"\nTable 1. Linear problem n={n}, d={d} (+ bias), c=1, l=1; batch {batch}; "
          f"Gibbs 2 chains x (20 + {gibbs_sweeps}) sweeps, SG samplers 4 chains x ({sg_burnin} burn-in + "
          f"{sg_draws}). ratio = (min bulk ESS / CPU s) / Gibbs's.")
    print_table(rows, floatfmt="{:.3f}")
    print("dm = mean - Gibbs mean, in Gibbs posterior sds, over the d + 1 parameters. 'rms MC/sd' is the rms "
          "difference expected\nfrom Monte Carlo error alone (both samplers' MCSE; Gibbs row: its MCSE); "
          "'bias/sd est' = sqrt(max(0, mean dm^2 - mean MC^2)) estimates the rms systematic difference.")
    return rows


def raetsch_table(names=("Waveform", "German"), n_folds=5, n_components=300, n_draws=500, seed=0):
    rows = []
    for name in names:
        data = load_raetsch(name)
        if data is None:
            print(f"({name}: data folder absent, skipped)")
            continue
        X, y = data
        errs = {"PlattSVM": [], "SubgradientHMC(sgnht, nystroem)": []}
        t = {k: 0.0 for k in errs}
        for tr, te in StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed).split(X, y):
            for key, est in (("PlattSVM", PlattSVM(random_state=seed)),
                             ("SubgradientHMC(sgnht, nystroem)",
                              SubgradientHMC("sgnht", features="nystroem", n_components=n_components,
                                             n_samples=n_draws, n_burnin=n_draws, batch_size=200,
                                             random_state=seed))):
                est, secs, _ = _timed_fit(est, X[tr], y[tr])
                t[key] += secs
                errs[key].append(np.mean(est.predict(X[te]) != y[te]))
        base = np.mean(errs["PlattSVM"])
        for key, e in errs.items():
            rows.append({"dataset": name, "method": key, "test_error": float(np.mean(e)),
                         "sd_over_folds": float(np.std(e)), "minus_platt": float(np.mean(e) - base),
                         "fit_s": t[key]})
    print(f"\nTable 2. Test error, stratified {n_folds}-fold CV; Nystroem RBF features ({n_components} "
          "components, gamma = 1/(d var X) as SVC's 'scale'), c = 1 ~ SVC C = 1.")
    print_table(rows, floatfmt="{:.4f}")
    return rows


def memory_table(n=20000, d=499, chains=10, draws=2000, seed=0):
    X, y = model_data(n, d, seed)
    est = SubgradientHMC("sgnht", n_samples=draws, n_burnin=50, n_chains=chains, batch_size=100,
                         random_state=seed)
    tracemalloc.start()
    t0 = time.perf_counter()
    est.fit(X, y)
    secs = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    mb = 1024.0 ** 2
    samples_mb, data_mb = est.samples_.nbytes / mb, X.nbytes / mb
    rows = [{"chains x draws x params": "x".join(map(str, est.samples_.shape)), "samples_MB": samples_mb,
             "dataset_MB": data_mb, "peak_alloc_MB": peak / mb,
             "peak - samples (in datasets)": (peak / mb - samples_mb) / data_mb,
             "per-chain copies would add (datasets)": float(chains), "fit_s": secs}]
    print("\nTable 3. Memory during fit (tracemalloc peak of new allocations; the dataset itself was "
          "allocated before).")
    print_table(rows, floatfmt="{:.1f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks subgradient")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--gibbs-sweeps", type=int, default=3000)
    ap.add_argument("--sg-draws", type=int, default=16000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--skip-raetsch", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args(argv)
    print("(2-core machine shared with other jobs; timings are noisy, ratios are measured in one run)")
    speed_table(args.n, args.d, args.gibbs_sweeps, args.sg_draws, args.batch)
    if not args.skip_raetsch:
        raetsch_table(n_folds=args.folds)
    if not args.skip_memory:
        memory_table()
    return 0


def smoke():
    speed_table(2000, 3, 40, 200, 200, sg_burnin=200)
    raetsch_table(names=("German",), n_folds=2, n_components=30, n_draws=150)
    memory_table(n=300, d=19, chains=3, draws=50)
