"""S-BSVM benchmarks against its peers (issue 12), defaults first.

    python -m benchmarks sbsvm                   # every part below
    python -m benchmarks sbsvm --part gp         # ringnorm/twonorm, n = 2k and 20k: vs GPyTorch SVGP
    python -m benchmarks sbsvm --part platt      # twonorm 20k: fit time and Brier vs SVC + Platt
    python -m benchmarks sbsvm --part ripley     # Ripley-like data, 250 rows: |p - p_true| vs Platt
    python -m benchmarks sbsvm --part table1     # the paper's Table 1 (10-fold CV) vs paper and Platt
    python -m benchmarks sbsvm --part small      # twonorm, 300 rows, 5 seeds: convergence
    python -m benchmarks sbsvm --part scale      # features x 1e6 give the same fit

Every row is ``SBSVM(random_state=seed)`` as shipped unless its label says what changed. Peers
(../shared/PEERS.md) run in the same process on the same rows. Times are CPU seconds
(``time.process_time``) with one BLAS thread and one torch thread for everyone. A missing peer prints
"peer not installed". The SVGP costs ~15 s per fit: each (set, n, seed) is fitted once per run and
cached (``--svgp-cache FILE`` keeps the results across runs, for development only).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from benchmarks._common import RAETSCH_DIR, load_raetsch, print_table
from benchmarks._svgp import fit_predict_svgp, svgp_available
from bsvm import PlattSVM
from bsvm.datasets import make_ringnorm, make_ripley, make_twonorm, ripley_log_density, ripley_proba
from bsvm.metrics import brier_score, error_rate, mean_abs_deviation
from bsvm.sbsvm import SBSVM

TABLE1_SETS = ["BreastCancer", "Diabetis", "Flare", "German", "Heart", "Splice", "Waveform"]
# The paper's Table 1 S-BSVM figures (error, Brier), and the paper's spelling of each set
PAPER_TABLE1 = {"BreastCancer": (0.26, 0.18), "Diabetis": (0.22, 0.16), "Flare": (0.36, 0.22),
                "German": (0.24, 0.17), "Heart": (0.16, 0.13), "Splice": (0.13, 0.17),
                "Waveform": (0.09, 0.06)}
MAKERS = {"ringnorm": make_ringnorm, "twonorm": make_twonorm}
NOT_INSTALLED = "peer not installed"


def _cpu_fit(model, X, y):
    """Fit with CPU seconds measured; returns (seconds, ConvergenceWarnings raised)."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.process_time()
        model.fit(X, y)
        seconds = time.process_time() - t0
    return seconds, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def _evaluate(model, X, y, Xte, yte):
    seconds, warns = _cpu_fit(model, X, y)
    proba = model.predict_proba(Xte)
    return {"cpu": seconds, "err": error_rate(yte, proba), "brier": brier_score(yte, proba),
            "warnings": len(warns)}


def print_defaults():
    """What ``SBSVM()`` does, as shipped (the rules are in its docstring; ``defaults_`` per fit)."""
    params = SBSVM().get_params()
    print("SBSVM defaults: " + ", ".join(f"{k}={v!r}" for k, v in params.items()))


class SVGPCache:
    """SVGP results keyed by (set, n, seed): each fitted once per run (optionally kept in a file)."""

    def __init__(self, path=None):
        self.path = Path(path) if path else None
        self.results = json.loads(self.path.read_text()) if self.path and self.path.exists() else {}

    def get(self, name, n, seed, Xtr, ytr, Xte, yte):
        key = f"{name}-{n}-{seed}"
        if key not in self.results:
            cpu, p = fit_predict_svgp(Xtr, ytr, Xte, seed=seed)
            P = np.column_stack([1 - p, p])
            self.results[key] = {"cpu": cpu, "err": error_rate(yte, P), "brier": brier_score(yte, P)}
            if self.path:
                self.path.write_text(json.dumps(self.results))
        return self.results[key]


def gp_table(sizes=(2000, 20000), sets=("ringnorm", "twonorm"), seeds=(0,), cache=None, tuned=None):
    """SBSVM defaults vs GPyTorch's SVGP (PEERS.md), 10k test rows. Goal per row: err <= 1.1 x SVGP's,
    Brier <= SVGP's + 0.002, CPU <= 0.5 x SVGP's."""
    cache = cache or SVGPCache()
    rows = []
    for name in sets:
        for n in sizes:
            for seed in seeds:
                Xtr, ytr = MAKERS[name](n, random_state=seed)
                Xte, yte = MAKERS[name](10000, random_state=seed + 1000)
                model = SBSVM(random_state=seed)
                s = _evaluate(model, Xtr, ytr, Xte, yte)
                row = {"set": name, "n": n, "seed": seed, "model": "defaults",
                       "m": model.defaults_["n_inducing"],
                       "steps": model.n_iter_, "conv": model.converged_,
                       "err": s["err"], "brier": s["brier"], "cpu_s": s["cpu"]}
                if svgp_available():
                    g = cache.get(name, n, seed, Xtr, ytr, Xte, yte)
                    row.update(svgp_err=g["err"], svgp_brier=g["brier"], svgp_cpu_s=g["cpu"],
                               cpu_ratio=s["cpu"] / g["cpu"],
                               ok=bool(s["err"] <= 1.1 * g["err"] and s["brier"] <= g["brier"] + 0.002
                                       and s["cpu"] <= 0.5 * g["cpu"]))
                else:
                    row["svgp"] = NOT_INSTALLED
                rows.append(row)
                print_table(rows[-1:])
    print("\nSBSVM vs GPyTorch SVGP (goal: err <= 1.1 x svgp_err, brier <= svgp_brier + 0.002, "
          "cpu_ratio <= 0.5)")
    print_table(rows)
    return rows


def platt_table(n=20000, seeds=(0,)):
    """twonorm 20k: SBSVM fit <= 0.2 x SVC+Platt's fit (CPU), Brier <= Platt's."""
    rows = []
    for seed in seeds:
        Xtr, ytr = make_twonorm(n, random_state=seed)
        Xte, yte = make_twonorm(10000, random_state=seed + 1000)
        model = SBSVM(random_state=seed)
        s = _evaluate(model, Xtr, ytr, Xte, yte)
        p = _evaluate(PlattSVM(random_state=seed), Xtr, ytr, Xte, yte)
        rows.append({"set": "twonorm", "n": n, "seed": seed, "model": "defaults", "conv": model.converged_,
                     "err": s["err"], "err_platt": p["err"], "brier": s["brier"], "brier_platt": p["brier"],
                     "cpu_s": s["cpu"], "cpu_platt_s": p["cpu"], "cpu_ratio": s["cpu"] / p["cpu"],
                     "ok": bool(s["cpu"] <= 0.2 * p["cpu"] and s["brier"] <= p["brier"])})
    print("\nSBSVM vs SVC + Platt (PlattSVM) on twonorm (goal: cpu_ratio <= 0.2, brier <= brier_platt)")
    print_table(rows)
    return rows


def ripley_grid():
    """A 50 x 50 grid over the region the Ripley-like data cover (input density >= 5% of its peak)."""
    g = np.array(np.meshgrid(np.linspace(-1.2, 1.0, 50), np.linspace(-0.2, 1.2, 50))).reshape(2, -1).T
    dens = ripley_log_density(g)
    return g[dens > dens.max() + np.log(0.05)]


def ripley_table(seeds=range(5), n=250, params=None):
    """Mean |p - p_true| on the grid: SBSVM defaults (calibrated link), the plain probit and hinge
    predictives of the same fit (tuned rows, labelled), and Platt."""
    grid = ripley_grid()
    truth = ripley_proba(grid)
    rows = []
    for seed in seeds:
        X, y = make_ripley(n, random_state=seed)
        model = SBSVM(random_state=seed, **(params or {}))
        _cpu_fit(model, X, y)
        mad = mean_abs_deviation(truth, model.predict_proba(grid))
        d = model.defaults_
        # kernel="auto" stacks its fits: the weight of each (bsvm.sbsvm.loo.stacking_weights)
        kernel = " ".join(f"{k[7:]}:{v:.2f}" for k, v in d.items()
                          if k.startswith("weight.") and v > 0) or d.get("kernel", model.kernel)
        mad_probit = mean_abs_deviation(truth, model.set_params(predictive="probit").predict_proba(grid))
        mad_hinge = mean_abs_deviation(truth, model.set_params(predictive="hinge").predict_proba(grid))
        platt = PlattSVM(random_state=seed).fit(X, y)
        col = "mad (tuned)" if params else "mad (defaults)"
        rows.append({"seed": seed, col: mad, "mad_probit": mad_probit, "mad_hinge": mad_hinge,
                     "mad_platt": mean_abs_deviation(truth, platt.predict_proba(grid)), "kernel": kernel,
                     "conv": model.converged_})
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k.startswith("mad")}
    rows.append({"seed": "mean", **mean, "kernel": "", "conv": all(r["conv"] for r in rows)})
    print(f"\nRipley-like data, {n} training rows: mean |p - p_true| over the data region "
          f"(goal: SBSVM <= Platt){_label(params)}")
    print_table(rows)
    return rows


def _label(params) -> str:
    """A tuned table's label: what changed from the defaults."""
    if not params:
        return ""
    return "; TUNED, not the defaults: " + ", ".join(f"{k}={v!r}" for k, v in params.items())


def table1(n_folds=10, sets=TABLE1_SETS, seed=0, params=None):
    """Paper Table 1 protocol: stratified 10-fold CV. SBSVM defaults vs the paper's S-BSVM figures
    (goal: <= paper + 0.01, every fold converged) and vs PlattSVM (goal: mean Brier over the rows <=)."""
    rows = []
    for name in sets:
        data = load_raetsch(name)
        if data is None:
            print(f"skipping Table 1: {RAETSCH_DIR} not found (set BSVM_RAETSCH_DIR)")
            return rows
        X, y = data
        folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
        res = {"s": [], "p": []}
        conv = 0
        for k, (tr, te) in enumerate(folds.split(X, y)):
            model = SBSVM(random_state=k, **(params or {}))
            res["s"].append(_evaluate(model, X[tr], y[tr], X[te], y[te]))
            conv += bool(model.converged_)
            res["p"].append(_evaluate(PlattSVM(random_state=k), X[tr], y[tr], X[te], y[te]))
        s = {k: float(np.mean([r[k] for r in res["s"]])) for k in ("err", "brier", "cpu")}
        p = {k: float(np.mean([r[k] for r in res["p"]])) for k in ("err", "brier", "cpu")}
        pe, pb = PAPER_TABLE1[name]
        rows.append({"set": name, "n": len(y), "d": X.shape[1], "err": s["err"], "err_paper": pe,
                     "err_platt": p["err"], "brier": s["brier"], "brier_paper": pb, "brier_platt": p["brier"],
                     "converged": f"{conv}/{n_folds}", "cpu_s": s["cpu"], "cpu_platt_s": p["cpu"],
                     "ok": bool(s["err"] <= pe + 0.01 and s["brier"] <= pb + 0.01 and conv == n_folds)})
        print_table(rows[-1:])
    mean_s = float(np.mean([r["brier"] for r in rows]))
    mean_p = float(np.mean([r["brier_platt"] for r in rows]))
    print(f"\nPaper Table 1, stratified {n_folds}-fold CV (seed {seed}), SBSVM defaults; "
          "err_paper/brier_paper = the paper's S-BSVM figures (goal: <= paper + 0.01, every fold "
          f"converged); PlattSVM as shipped.{_label(params)}")
    print_table(rows)
    print(f"Brier averaged over the {len(rows)} rows: SBSVM {mean_s:.4f}, PlattSVM {mean_p:.4f} "
          f"(goal: SBSVM <= PlattSVM: {mean_s <= mean_p})")
    return rows


def small_table(n=300, seeds=range(5)):
    """twonorm with few rows: every seed converges, and no silent max_iter stop."""
    rows = []
    Xte, yte = make_twonorm(10000, random_state=999)
    for seed in seeds:
        X, y = make_twonorm(n, random_state=seed)
        model = SBSVM(random_state=seed)
        s = _evaluate(model, X, y, Xte, yte)
        rows.append({"seed": seed, "converged": model.converged_, "steps": model.n_iter_,
                     "convergence_warnings": s["warnings"], "err": s["err"], "brier": s["brier"],
                     "cpu_s": s["cpu"]})
    print(f"\ntwonorm, {n} training rows (goal: every seed converged; a max_iter stop always warns)")
    print_table(rows)
    return rows


def scale_table(n=2000, seed=0):
    """Features x 1e6 (and one feature x 1e6 only) give the same fit as the original units."""
    Xtr, ytr = make_twonorm(n, random_state=seed)
    Xte, yte = make_twonorm(10000, random_state=seed + 1000)
    rows = []
    ref = None
    for label, f in [("original", np.ones(20)), ("all x 1e6", np.full(20, 1e6)),
                     ("feature 0 x 1e6", np.r_[1e6, np.ones(19)])]:
        model = SBSVM(random_state=seed)
        s = _evaluate(model, Xtr * f, ytr, Xte * f, yte)
        p = model.predict_proba(Xte * f)[:, 1]
        ref = p if ref is None else ref
        rows.append({"features": label, "err": s["err"], "brier": s["brier"],
                     "max_abs_dp_vs_original": float(np.abs(p - ref).max()), "warnings": s["warnings"]})
    print("\nScale: twonorm 2k with rescaled features (goal: the same fit)")
    print_table(rows)
    return rows


def smoke():
    """A seconds-long run on tiny data (CI keeps the script working)."""
    print_defaults()
    X, y = make_twonorm(400, random_state=0)
    Xte, yte = make_twonorm(400, random_state=1)
    s = _evaluate(SBSVM(max_iter=50, random_state=0), X, y, Xte, yte)
    p = _evaluate(PlattSVM(random_state=0), X, y, Xte, yte)
    print_table([{"part": "smoke", "err_sbsvm": s["err"], "err_platt": p["err"], "brier_sbsvm": s["brier"],
                  "brier_platt": p["brier"], "svgp": "installed" if svgp_available() else NOT_INSTALLED}])


PARTS = ("gp", "platt", "ripley", "table1", "small", "scale")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks sbsvm")
    ap.add_argument("--part", default="all", help="comma-separated subset of " + ",".join(PARTS))
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--sets", default=",".join(TABLE1_SETS), help="Table 1 sets, comma-separated")
    ap.add_argument("--gp-sizes", default="2000,20000")
    ap.add_argument("--gp-sets", default="ringnorm,twonorm")
    ap.add_argument("--seeds", default="0", help="seeds for the gp and platt parts")
    ap.add_argument("--ripley-seeds", default="0,1,2,3,4", help="seeds for the ripley part")
    ap.add_argument("--stacking", default=None, choices=["loo", "cv"],
                    help="SBSVM(stacking=...) for the ripley and table1 parts: a tuned table, labelled, "
                         "after the defaults' one")
    ap.add_argument("--svgp-cache", default=None, help="JSON file keeping SVGP results across runs (dev)")
    args = ap.parse_args(argv)
    parts = PARTS if args.part == "all" else tuple(args.part.split(","))
    seeds = tuple(int(s) for s in args.seeds.split(","))
    tuned = {"stacking": args.stacking} if args.stacking else None
    with threadpool_limits(1):
        try:
            import torch
            torch.set_num_threads(1)
        except ImportError:
            pass
        print_defaults()
        if "gp" in parts:
            gp_table(tuple(int(v) for v in args.gp_sizes.split(",")), tuple(args.gp_sets.split(",")), seeds,
                     SVGPCache(args.svgp_cache))
        if "platt" in parts:
            platt_table(seeds=seeds)
        # a tuned setting (--stacking) gets its own table, after the defaults' one
        if "ripley" in parts:
            for params in (None, tuned)[:2 if tuned else 1]:
                ripley_table(tuple(int(s) for s in args.ripley_seeds.split(",")), params=params)
        if "table1" in parts:
            for params in (None, tuned)[:2 if tuned else 1]:
                table1(args.folds, sets=tuple(args.sets.split(",")), params=params)
        if "small" in parts:
            small_table()
        if "scale" in parts:
            scale_table()
    return 0
