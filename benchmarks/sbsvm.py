"""S-BSVM benchmarks (issue: "The bsvm package, its shared core, and S-BSVM").

    python -m benchmarks sbsvm                 # all three parts
    python -m benchmarks sbsvm --part table1   # Raetsch sets, stratified 10-fold CV vs PlattSVM
    python -m benchmarks sbsvm --part twonorm  # 20,000 training points, fit time vs PlattSVM
    python -m benchmarks sbsvm --part ringnorm # 1,000,000 training points, d = 20

Timings are ratios against PlattSVM fitted in the same process on the same folds.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from benchmarks._common import RAETSCH_DIR, load_raetsch, peak_rss_mb, print_table
from bsvm import PlattSVM
from bsvm.datasets import make_ringnorm, make_twonorm
from bsvm.metrics import brier_score, error_rate
from bsvm.sbsvm import SBSVM

TABLE1_SETS = ["BreastCancer", "Diabetis", "Flare", "German", "Heart", "Splice", "Waveform"]


def sbsvm_for(n_train: int, random_state=0, **overrides) -> SBSVM:
    """Large-data configuration: ML-II tuning of an RBF kernel, 100 inducing points (k-means)."""
    params = dict(n_inducing=100, batch_size=256, random_state=random_state)
    params.update(overrides)
    return SBSVM(**params)


DEFAULT_PRIOR_VARIANCE = 0.5   # C / 2 for SVC's C = 1: S-BSVM's MAP is then the SVC solution
# SVC's C on a half-decade grid around its default, as prior variances C / 2
PRIOR_VARIANCE_GRID = tuple(0.5 * 10.0 ** np.arange(-2.0, 0.75, 0.5))


def one_se_towards_default(cv_results) -> int:
    """``GridSearchCV`` refit rule: keep the default prior variance unless another grid value has a better
    mean CV score by more than one standard error of the paired per-fold differences (the one-standard-
    error rule of Hastie, Tibshirani & Friedman, ESL sec. 7.10, with the default as the parsimonious
    choice)."""
    params = [p["variance"] for p in cv_results["params"]]
    k = len([key for key in cv_results if key.startswith("split") and key.endswith("_test_score")])
    scores = np.array([cv_results[f"split{j}_test_score"] for j in range(k)])      # (folds, grid)
    d = int(np.argmin(np.abs(np.array(params) - DEFAULT_PRIOR_VARIANCE)))
    best = int(np.argmax(scores.mean(axis=0)))
    diff = scores[:, best] - scores[:, d]
    se = diff.std(ddof=1) / np.sqrt(k) if k > 1 else np.inf
    return best if diff.mean() > se else d


def table1_models(name: str, X, n_train: int, random_state: int, prior_cv: str = "none"):
    """The paper's Table 1 protocol: one fixed RBF kernel for all methods. PlattSVM's SVC uses
    C = 1 and gamma = 'scale' = 1 / (d Var(X)); S-BSVM uses the same kernel (length scale
    sqrt(d Var(X) / 2)) and prior variance C / 2, which makes its MAP the SVC's solution, so the comparison
    isolates the inference.

    * Up to 1000 training rows: the batch variant (sec. 4.1, every point an inducing point), which is exact;
      with 100 inducing points German lost ~0.015 in error to the approximation. Full-data coordinate
      ascent converges in tens of steps, so the ELBO is checked every 2 steps.
    * Waveform: 100 inducing points (the paper's choice), minibatches of 256.
    * Splice (60 categorical positions, few relevant): an ARD kernel tuned by ML-II from the same start,
      40 inducing points, minibatches of 128. A frequentist SVC cannot tune 61 kernel parameters without a
      grid search.

    ``prior_cv`` (a diagnostic, not the protocol): for the batch-variant sets choose the prior variance
    from ``PRIOR_VARIANCE_GRID`` by 5-fold CV of the Brier score inside the training fold, either the
    best mean ("best") or by ``one_se_towards_default`` ("one-se"). The hinge pseudo-likelihood has no
    normaliser, so the latent scale, and with it the probit predictive's confidence, is set by the prior
    alone (ML-II pushes it up); this shows what regularising by CV does to Flare and to the other sets.
    """
    ls = float(np.sqrt(X.shape[1] * X.var() / 2.0))
    common = dict(lengthscale=ls, variance=DEFAULT_PRIOR_VARIANCE, random_state=random_state)
    if n_train <= 1000:
        s = SBSVM(variant="batch", optimize_hyperparameters=False, elbo_every=2, patience=3, **common)
        if prior_cv != "none":
            s = GridSearchCV(s, {"variance": list(PRIOR_VARIANCE_GRID)}, scoring="neg_brier_score",
                             cv=StratifiedKFold(5, shuffle=True, random_state=random_state),
                             refit=one_se_towards_default if prior_cv == "one-se" else True)
    elif name == "Splice":
        s = SBSVM(kernel="ard", n_inducing=40, batch_size=128, hyper_every=1, hyper_lr=0.2, **common)
    else:
        s = SBSVM(kernel="rbf", n_inducing=100, optimize_hyperparameters=False, **common)
    return s, PlattSVM(C=1.0, gamma="scale", random_state=random_state)


def _fit_eval(model, Xtr, ytr, Xte, yte):
    gc.collect()
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    seconds = time.perf_counter() - t0
    proba = model.predict_proba(Xte)
    return seconds, error_rate(yte, proba), brier_score(yte, proba)


def table1(n_folds=10, sets=TABLE1_SETS, seed=0, prior_cv="none"):
    rows = []
    for name in sets:
        data = load_raetsch(name)
        if data is None:
            print(f"skipping Table 1: {RAETSCH_DIR} not found (set BSVM_RAETSCH_DIR)")
            return rows
        X, y = data
        folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
        res = {"sbsvm": [], "platt": []}
        chosen = []
        for k, (tr, te) in enumerate(folds.split(X, y)):
            s_model, p_model = table1_models(name, X[tr], len(tr), random_state=k, prior_cv=prior_cv)
            res["sbsvm"].append(_fit_eval(s_model, X[tr], y[tr], X[te], y[te]))
            chosen.append(getattr(s_model, "best_params_", {}).get("variance", DEFAULT_PRIOR_VARIANCE))
            res["platt"].append(_fit_eval(p_model, X[tr], y[tr], X[te], y[te]))
        s, p = np.mean(res["sbsvm"], axis=0), np.mean(res["platt"], axis=0)
        rows.append({
            "set": name, "n": len(y), "d": X.shape[1],
            "err_sbsvm": s[1], "err_platt": p[1], "d_err": s[1] - p[1],
            "brier_sbsvm": s[2], "brier_platt": p[2], "d_brier": s[2] - p[2],
            "fit_s_sbsvm": s[0], "fit_s_platt": p[0], "time_ratio": s[0] / p[0],
            "prior_var": "/".join(f"{v:.3g}" for v in sorted(set(chosen))),
            "ok": bool(s[1] - p[1] <= 0.01 and s[2] - p[2] <= 0.01
                       and (name not in ("Splice", "Waveform") or s[0] <= p[0])),
        })
        print_table(rows[-1:], floatfmt="{:.4f}")
    print(f"\nTable 1 protocol: stratified {n_folds}-fold CV (seed {seed}); PlattSVM = "
          "CalibratedClassifierCV(SVC(C=1, gamma='scale'), sigmoid, ensemble=False); S-BSVM with the same "
          "kernel (ARD + ML-II on Splice); prior_var = the prior variances used across folds "
          f"(prior CV: {prior_cv}). Goal: error and Brier at most 0.01 above Platt's, fit time at "
          "most Platt's on Splice and Waveform.")
    print_table(rows)
    return rows


def twonorm(n_train=20000, n_test=10000, seed=0):
    Xtr, ytr = make_twonorm(n_train, random_state=seed)
    Xte, yte = make_twonorm(n_test, random_state=seed + 1)
    # Table 1's protocol again (the same fixed kernel for both), and a cap of 300 steps: the Brier score
    # settles within ~200 steps; after that the ELBO's slow climb is minibatch noise averaging out of q(u).
    ls = float(np.sqrt(Xtr.shape[1] * Xtr.var() / 2.0))
    model = sbsvm_for(n_train, random_state=seed, lengthscale=ls, variance=0.5,
                      optimize_hyperparameters=False, max_iter=300)
    s = _fit_eval(model, Xtr, ytr, Xte, yte)
    p = _fit_eval(PlattSVM(C=1.0, gamma="scale", random_state=seed), Xtr, ytr, Xte, yte)
    row = {"n_train": n_train, "fit_s_sbsvm": s[0], "fit_s_platt": p[0], "time_ratio": s[0] / p[0],
           "brier_sbsvm": s[2], "brier_platt": p[2], "d_brier": s[2] - p[2], "err_sbsvm": s[1],
           "err_platt": p[1], "ok": bool(s[0] <= 0.2 * p[0] and abs(s[2] - p[2]) <= 0.003)}
    print("\ntwonorm (goal: time_ratio <= 0.2, |d_brier| <= 0.003)")
    print_table([row])
    return row


def ringnorm(n_train=1_000_000, n_test=100_000, seed=0):
    rss0 = peak_rss_mb()
    Xtr, ytr = make_ringnorm(n_train, random_state=seed)
    Xte, yte = make_ringnorm(n_test, random_state=seed + 1)
    # 200 inducing points and a tight stagnation tolerance: ringnorm's quadratic boundary in 20-D needs both.
    model = sbsvm_for(n_train, random_state=seed, n_inducing=200, tol=1e-6)
    s = _fit_eval(model, Xtr, ytr, Xte, yte)
    row = {"n_train": n_train, "d": Xtr.shape[1], "fit_s": s[0], "test_err": s[1], "brier": s[2],
           "iterations": model.n_iter_, "peak_rss_mb": peak_rss_mb(), "rss_before_data_mb": rss0,
           "ok": bool(s[0] <= 120 and s[1] <= 0.02 and peak_rss_mb() < 3072)}
    print("\nringnorm (goal: fit <= 120 s, peak memory < 3 GB, test error <= 2.0%)")
    print_table([row])
    return row


def smoke():
    """A seconds-long run of each part on tiny data (CI keeps the script working)."""
    X, y = make_twonorm(400, random_state=0)
    folds = list(StratifiedKFold(n_splits=2, shuffle=True, random_state=0).split(X, y))
    tr, te = folds[0]
    s = _fit_eval(sbsvm_for(len(tr), max_iter=50), X[tr], y[tr], X[te], y[te])
    p = _fit_eval(PlattSVM(), X[tr], y[tr], X[te], y[te])
    print_table([{"part": "smoke", "err_sbsvm": s[1], "err_platt": p[1], "brier_sbsvm": s[2],
                  "brier_platt": p[2]}])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks sbsvm")
    ap.add_argument("--part", choices=["all", "table1", "twonorm", "ringnorm"], default="all")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--ringnorm-n", type=int, default=1_000_000)
    ap.add_argument("--sets", default=",".join(TABLE1_SETS), help="Table 1 sets, comma-separated")
    ap.add_argument("--prior-cv", choices=["none", "best", "one-se"], default="none",
                    help="diagnostic: pick the batch variant's prior variance by inner CV (table1_models)")
    args = ap.parse_args(argv)
    if args.part in ("all", "table1"):
        table1(args.folds, sets=tuple(args.sets.split(",")), prior_cv=args.prior_cv)
    if args.part in ("all", "twonorm"):
        twonorm()
    if args.part in ("all", "ringnorm"):
        ringnorm(args.ringnorm_n)
    return 0
