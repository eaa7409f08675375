"""S-BSVM past memory: stream ringnorm (d = 20) from a Parquet file into ``SBSVM.partial_fit``.

    python -m benchmarks sbsvm_stream                  # 1,000,000 rows, chunks of 50,000
    python -m benchmarks sbsvm_stream --rows 200000 --seed 1

The bench writes the rows to a Parquet file chunk by chunk (pyarrow; the whole set is never in memory),
then reads them back one chunk (row batch) at a time into ``SBSVM().partial_fit`` with the defaults
(``stream_size`` set to the file's row count, ``random_state`` the seed), printing one progress record
per chunk. Then the peer, a GPyTorch SVGP set up as ../shared/PEERS.md says, takes one epoch over the
same stream in minibatches of 1024 rows. Both report test error on 10,000 fresh rows, fit CPU seconds
(``time.process_time``, reading the file excluded, one BLAS/torch thread) and, for S-BSVM, the peak
resident memory of the process (getrusage, measured before the peer runs).

Targets (issue 12 §3): error <= 2 %, peak RSS <= 2 GB, CPU <= 0.5 x the SVGP epoch.
The last row projects the paper's 5M-row SUSY run (d = 18; here simulated with ringnorm's d = 20) from
a least-squares line through S-BSVM's cumulative fit CPU against rows seen.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks._common import peak_rss_mb, print_table
from bsvm.datasets import make_ringnorm
from bsvm.metrics import brier_score, error_rate
from bsvm.sbsvm import SBSVM

D = 20
SUSY_ROWS = 5_000_000


def write_parquet(path, n_rows: int, chunk_rows: int, seed: int) -> None:
    """ringnorm rows written chunk by chunk, each chunk from its own seed (seed, k)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([*(pa.field(f"x{j}", pa.float64()) for j in range(D)), pa.field("y", pa.int8())])
    with pq.ParquetWriter(path, schema) as writer:
        for k, start in enumerate(range(0, n_rows, chunk_rows)):
            X, y = make_ringnorm(min(chunk_rows, n_rows - start), D, random_state=[seed, k])
            cols = [pa.array(X[:, j]) for j in range(D)] + [pa.array(y.astype(np.int8))]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=chunk_rows)


def read_chunks(path, chunk_rows: int):
    """(X, y) NumPy chunks of the file, one row batch at a time."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows):
        X = np.column_stack([batch.column(j).to_numpy() for j in range(D)])
        yield X, batch.column(D).to_numpy().astype(np.int64)


def run_sbsvm(path, n_rows, chunk_rows, Xte, yte, seed, verbose=True, **overrides):
    est = SBSVM(random_state=seed, stream_size=n_rows, **overrides)
    cpu, rows, curve = 0.0, 0, []
    for X, y in read_chunks(path, chunk_rows):
        t0 = time.process_time()
        est.partial_fit(X, y, classes=[0, 1])
        cpu += time.process_time() - t0
        rows += len(y)
        curve.append((rows, cpu))
        rec = est.history_[-1]
        if verbose:
            print(f"  chunk {len(curve):3d}: rows {rows:>9,d}  steps {rec.iteration:6d}  cpu {cpu:7.2f} s  "
                  f"elbo/row {rec.metrics['elbo'] / n_rows:8.4f}  rss {peak_rss_mb():7.0f} MB", flush=True)
    proba = est.predict_proba(Xte)
    return est, cpu, curve, error_rate(yte, proba), brier_score(yte, proba)


def run_svgp(path, n_rows, chunk_rows, Xte, yte, seed, m=200, batch=1024, lr=0.01):
    """PEERS.md's SVGP: one epoch over the stream in minibatches of 1024; inducing points a random subset
    of the first chunk (the rows a stream has at the start). Returns (cpu, error, brier) or None."""
    try:
        import gpytorch
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    torch.manual_seed(seed)

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            dist = gpytorch.variational.CholeskyVariationalDistribution(Z.size(0))
            strat = gpytorch.variational.VariationalStrategy(self, Z, dist, learn_inducing_locations=True)
            super().__init__(strat)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    rng = np.random.default_rng(seed)
    cpu, model = 0.0, None
    for X, y in read_chunks(path, chunk_rows):
        t0 = time.process_time()
        Xt, yt = torch.from_numpy(X.astype(np.float32)), torch.from_numpy(y.astype(np.float32))
        if model is None:
            Z = Xt[torch.from_numpy(rng.choice(len(X), min(m, len(X)), replace=False))].clone()
            model, lik = SVGP(Z), gpytorch.likelihoods.BernoulliLikelihood()
            model.train(), lik.train()
            opt = torch.optim.Adam([*model.parameters(), *lik.parameters()], lr=lr)
            mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=n_rows)
        perm = torch.from_numpy(rng.permutation(len(X)))
        for s in range(0, len(X), batch):
            idx = perm[s:s + batch]
            opt.zero_grad()
            loss = -mll(model(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        cpu += time.process_time() - t0
    model.eval(), lik.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        p1 = lik(model(torch.from_numpy(Xte.astype(np.float32)))).mean.numpy().astype(float)
    proba = np.column_stack([1 - p1, p1])
    return cpu, error_rate(yte, proba), brier_score(yte, proba)


def projected_cpu(curve, rows):
    """Least-squares line of cumulative fit CPU against rows seen, evaluated at ``rows``; the first chunk
    (which also pays for k-means and the initial kernel) is the intercept's business."""
    r, c = np.array(curve, dtype=float).T
    slope, intercept = np.polyfit(r, c, 1) if len(r) > 1 else (c[0] / r[0], 0.0)
    return float(intercept + slope * rows), float(slope)


def bench(n_rows=1_000_000, chunk_rows=50_000, n_test=10_000, seed=0, peer=True, verbose=True, tuned=None):
    Xte, yte = make_ringnorm(n_test, D, random_state=[seed, 10**6])
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        path = os.path.join(tmp, "ringnorm.parquet")
        t0 = time.process_time()
        write_parquet(path, n_rows, chunk_rows, seed)
        write_cpu = time.process_time() - t0
        if verbose:
            print(f"wrote {n_rows:,d} rows to Parquet ({os.path.getsize(path) / 2**20:.0f} MB, "
                  f"{write_cpu:.1f} s CPU); streaming into SBSVM().partial_fit:")
        est, cpu, curve, err, brier = run_sbsvm(path, n_rows, chunk_rows, Xte, yte, seed, verbose)
        rss = peak_rss_mb()
        if tuned:
            if verbose:
                print(f"tuned: {tuned}")
            tuned_res = run_sbsvm(path, n_rows, chunk_rows, Xte, yte, seed, verbose, **tuned)
            rss_tuned = peak_rss_mb()  # the process's peak so far: both SBSVM runs, before the peer
        peer_res = run_svgp(path, n_rows, chunk_rows, Xte, yte, seed) if peer else None
    proj, slope = projected_cpu(curve, SUSY_ROWS)
    rows = [{"model": "SBSVM defaults (partial_fit)", "rows": n_rows, "test_err": err, "brier": brier,
             "fit_cpu_s": cpu, "peak_rss_mb": rss, "cpu_vs_svgp": "",
             "ok": ""}]
    if peer_res is None:
        rows.append({"model": "GPyTorch SVGP, 1 epoch, batch 1024", "rows": n_rows,
                     "test_err": "peer not installed" if peer else "skipped"})
    else:
        rows.append({"model": "GPyTorch SVGP, 1 epoch, batch 1024", "rows": n_rows, "test_err": peer_res[1],
                     "brier": peer_res[2], "fit_cpu_s": peer_res[0]})
        rows[0]["cpu_vs_svgp"] = cpu / peer_res[0]
    ratio_ok = peer_res is None or cpu <= 0.5 * peer_res[0]
    rows[0]["ok"] = bool(err <= 0.02 and rss <= 2048 and ratio_ok)
    if tuned:
        label = ", ".join(f"{k}={v}" for k, v in tuned.items())
        t_cpu = tuned_res[1]
        rows.insert(1, {"model": f"SBSVM tuned: {label}", "rows": n_rows, "test_err": tuned_res[3],
                        "brier": tuned_res[4], "fit_cpu_s": t_cpu, "peak_rss_mb": rss_tuned,
                        "cpu_vs_svgp": "" if peer_res is None else t_cpu / peer_res[0],
                        "ok": bool(tuned_res[3] <= 0.02
                                   and (peer_res is None or t_cpu <= 0.5 * peer_res[0]))})
    rows.append({"model": f"SBSVM projected to {SUSY_ROWS:,d} rows (SUSY size, simulated)", "rows": SUSY_ROWS,
                 "fit_cpu_s": proj, "test_err": f"slope {slope * 1e6:.2f} s per 1M rows"})
    print(f"\nringnorm d={D} streamed from Parquet, chunks of {chunk_rows:,d}, seed {seed} "
          "(goal: test_err <= 0.02, peak_rss_mb <= 2048, cpu_vs_svgp <= 0.5)")
    print_table(rows, ["model", "rows", "test_err", "brier", "fit_cpu_s", "cpu_vs_svgp", "peak_rss_mb", "ok"])
    return rows


def smoke():
    """Seconds: 20,000 rows in chunks of 5,000; the peer takes its epoch too."""
    bench(n_rows=20_000, chunk_rows=5_000, n_test=2_000, seed=0, verbose=False)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks sbsvm_stream")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--test", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-peer", action="store_true", help="skip the GPyTorch SVGP epoch")
    ap.add_argument("--tuned", default="", help="a labelled extra row, e.g. 'n_inducing=200,batch_size=1024'")
    args = ap.parse_args(argv)
    tuned = {}
    for item in filter(None, args.tuned.split(",")):
        key, value = item.split("=")
        tuned[key.strip()] = float(value) if "." in value else int(value)
    bench(args.rows, args.chunk, args.test, args.seed, peer=not args.no_peer, tuned=tuned or None)
    return 0
