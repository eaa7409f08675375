"""MCMC diagnostics: a thin layer over arviz-stats for draws stored as (n_chains, n_draws) or
(n_chains, n_draws, n_params), or as an ArviZ DataTree (``estimator.to_arviz()``; ``rhat``, ``ess_bulk``,
``ess_tail``, ``mcse`` and ``summary`` then return arviz-stats' own result for its posterior: its
variables' values as an xarray tree, and for ``summary`` a DataFrame).

Split rank-normalised R-hat, bulk and tail ESS and MCSE come from arviz-stats (Vehtari et al. 2021,
"Rank-normalization, folding, and localization: an improved R-hat"), through its numpy ``array_stats``
interface; here they are only reshaped to our layout. ``summary`` of a DataTree is arviz-stats' own.
Autocorrelation, acceptance summaries and rank-plot histograms are small helpers for the dashboard. The
stopping rule built on these diagnostics is :mod:`bsvm.convergence`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._arviz import array_stats  # imported on first use: see bsvm/_arviz.py


def _is_tree(samples) -> bool:
    """An ArviZ DataTree with a posterior (``estimator.to_arviz()``)."""
    return hasattr(samples, "children") and "posterior" in getattr(samples, "children", {})


def _on_tree(fn: str, samples, **kw):
    """arviz-stats' own function on a DataTree's posterior: one value per variable and coordinate (the
    module docstring promised DataTrees and these functions refused them, a review)."""
    import arviz_stats  # xarray-based; imported on use

    _check_draws(samples["posterior"].sizes.get("draw", 0))  # (as the arrays: arviz-stats gave NaN, a review)
    return getattr(arviz_stats, fn)(samples, **kw)


def _params_first(samples) -> np.ndarray:
    """(C, D) -> (C, D); (C, D, P) -> (P, C, D), the (..., chain, draw) layout arviz-stats expects."""
    x = np.asarray(samples, dtype=float)
    if x.ndim == 2:
        return x
    if x.ndim == 3:
        return np.moveaxis(x, -1, 0)
    raise ValueError(f"samples must have shape (n_chains, n_draws[, n_params]), got {x.shape}")


def _check_draws(n_draws: int, minimum: int = 4) -> None:
    if n_draws < minimum:
        raise ValueError(f"need at least {minimum} draws per chain for this diagnostic, got {n_draws}")


def rhat(samples):
    """Split rank-normalised R-hat (max of bulk and folded), per parameter. ~1 means the chains agree;
    above 1.01 (strictly) or 1.1 (loosely) means they have not mixed."""
    if _is_tree(samples):
        return _on_tree("rhat", samples, method="rank")
    x = _params_first(samples)
    _check_draws(x.shape[-1])
    return array_stats.rhat(x, method="rank")


def ess_bulk(samples):
    """Bulk effective sample size (rank-normalised split chains), summed over chains."""
    if _is_tree(samples):
        return _on_tree("ess", samples, method="bulk")
    x = _params_first(samples)
    _check_draws(x.shape[-1])
    return array_stats.ess(x, method="bulk")


def ess_tail(samples, prob=(0.05, 0.95)):
    """Tail ESS: the smaller of the ESS of the indicator draws <= q_0.05 and <= q_0.95."""
    if _is_tree(samples):
        return _on_tree("ess", samples, method="tail", prob=prob)
    x = _params_first(samples)
    _check_draws(x.shape[-1])
    return array_stats.ess(x, method="tail", prob=prob)


def mcse(samples, method: str = "mean"):
    """Monte Carlo standard error of the posterior mean (``method="mean"``) or sd (``"sd"``)."""
    if _is_tree(samples):
        return _on_tree("mcse", samples, method=method)
    x = _params_first(samples)
    _check_draws(x.shape[-1])
    return array_stats.mcse(x, method=method)


def autocorrelation(samples, max_lag: int | None = None) -> np.ndarray:
    """Autocorrelation by lag averaged over chains: shape (max_lag + 1,) or (n_params, max_lag + 1)."""
    x = _params_first(samples)
    rho = array_stats.autocorr(x, axis=-1).mean(axis=-2)
    return rho if max_lag is None else rho[..., :max_lag + 1]


def acceptance_summary(accept_prob) -> dict:
    """Mean Metropolis-Hastings acceptance probability overall and per chain (from ``accept_prob_``)."""
    a = np.asarray(accept_prob, dtype=float)
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError("accept_prob must have shape (n_chains, n_draws) with at least one draw")
    per_chain = a.mean(axis=1)
    return {"mean": float(a.mean()), "per_chain": per_chain, "min_chain": float(per_chain.min()),
            "max_chain": float(per_chain.max())}


def rank_plot_data(samples, n_bins: int = 20) -> np.ndarray:
    """Histogram counts of each chain's draws' ranks among all draws (Vehtari et al.'s rank plot):
    shape (n_chains, n_bins) or (n_params, n_chains, n_bins). Uniform bars mean the chains mixed."""
    x = _params_first(samples)
    ranks = array_stats.compute_ranks(x, axis=(-2, -1))
    n_total = x.shape[-1] * x.shape[-2]
    bins = np.minimum((ranks - 1) * n_bins // n_total, n_bins - 1).astype(int)
    onehot = bins[..., None] == np.arange(n_bins)
    return onehot.sum(axis=-2)


def summary(samples, names=None) -> pd.DataFrame:
    """One row per parameter: mean, sd, mcse_mean, mcse_sd, ess_bulk, ess_tail, r_hat.

    ``samples`` may also be an ArviZ DataTree (e.g. ``estimator.to_arviz()``): then this is
    ``arviz_stats.summary`` of its posterior, unchanged; its ``ess_tail`` is then that of the 11 % and
    89 % quantiles (its ``ci_prob``, 0.89), not the 5 % and 95 % of :func:`ess_tail` (Vehtari et al.
    2021) that the arrays get here and the stopping rule uses."""
    if _is_tree(samples):
        return _on_tree("summary", samples)
    x = np.asarray(samples, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    flat = x.reshape(-1, x.shape[-1])
    table = pd.DataFrame({
        "mean": flat.mean(axis=0), "sd": flat.std(axis=0, ddof=1),
        "mcse_mean": np.atleast_1d(mcse(x)), "mcse_sd": np.atleast_1d(mcse(x, "sd")),
        "ess_bulk": np.atleast_1d(ess_bulk(x)), "ess_tail": np.atleast_1d(ess_tail(x)),
        "r_hat": np.atleast_1d(rhat(x)),
    })
    table.index = list(names) if names is not None else [f"theta[{j}]" for j in range(x.shape[-1])]
    return table


# ------------------------------------------------------------------ the stopping rule's three numbers at once
def _split_chains(x: np.ndarray) -> np.ndarray:
    """(K, C, D) -> (K, 2C, D // 2): first and last halves as separate chains (the middle draw of an odd
    D dropped), as arviz-stats splits."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., x.shape[-1] - half:]], axis=-2)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalise each of the K (chain, draw) blocks over all its values: average ranks r, then
    Phi^-1((r - 3/8) / (N + 1/4)) (Blom's offsets, as arviz-stats)."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    K = x.shape[0]
    r = rankdata(x.reshape(K, -1), method="average", axis=1)
    return ndtri((r - 0.375) / (r.shape[1] + 0.25)).reshape(x.shape)


def _rhat_basic(x: np.ndarray) -> np.ndarray:
    """Gelman-Rubin R-hat of each (chain, draw) block of x (K, M, N)."""
    N = x.shape[-1]
    between = N * np.var(x.mean(axis=-1), axis=-1, ddof=1)
    within = np.var(x, axis=-1, ddof=1).mean(axis=-1)
    # chains that never moved (within = 0: a step that no proposal passes) give inf or NaN, which the
    # callers report; numpy's "divide by zero" warnings leaked to the user beside that report (a review)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + N - 1) / N)


def _ess_basic(x: np.ndarray) -> np.ndarray:
    """ESS of each (chain, draw) block of x (K, M, N): FFT autocovariances for all blocks at once, then
    Geyer's initial positive and monotone sequences per block exactly as arviz-stats' ``_ess`` (a scalar
    loop over lags, ~N / 2 steps at most, on precomputed autocorrelations)."""
    from scipy.fft import irfft, next_fast_len, rfft

    K, M, N = x.shape
    out = np.empty(K)
    const = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    c = x - x.mean(axis=-1, keepdims=True)
    m = next_fast_len(2 * N)
    f = rfft(c, n=m, axis=-1)
    f *= np.conjugate(f)
    acov = irfft(f, n=m, axis=-1)[..., :N] / N
    mean_var = acov[:, :, 0].mean(axis=1) * N / (N - 1.0)
    var_plus = mean_var * (N - 1.0) / N
    if M > 1:
        var_plus = var_plus + np.var(x.mean(axis=-1), axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho_all = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]  # (K, N)
    for k in range(K):
        if const[k]:
            out[k] = M * N
            continue
        rho = rho_all[k].tolist()
        rt = [0.0] * N
        rt[0] = even = 1.0
        rt[1] = odd = rho[1]
        t = 1
        while t < N - 3 and even + odd > 0.0:
            even, odd = rho[t + 1], rho[t + 2]
            if even + odd >= 0:
                rt[t + 1], rt[t + 2] = even, odd
            t += 2
        max_t = t - 2
        if even > 0:
            rt[max_t + 1] = even
        t = 1
        while t <= max_t - 2:
            if rt[t + 1] + rt[t + 2] > rt[t - 1] + rt[t]:
                rt[t + 1] = rt[t + 2] = (rt[t - 1] + rt[t]) / 2.0
            t += 2
        rt = np.asarray(rt)
        tau = -1.0 + 2.0 * np.sum(rt[:max_t + 1]) + np.sum(rt[max_t + 1:max_t + 2])
        tau = max(tau, 1.0 / np.log10(M * N))
        out[k] = np.nan if np.isnan(rt).any() else M * N / tau
    return out


def rank_diagnostics(x, prob=(0.05, 0.95)):
    """Rank-normalised split R-hat, bulk ESS and tail ESS of every quantity at once: ``x`` (K, C, D) ->
    three (K,) arrays. The same numbers as ``rhat``, ``ess_bulk`` and ``ess_tail`` (arviz-stats; tested
    equal to 1e-10), computed vectorised over the K quantities: arviz-stats loops over them in Python,
    ~3 ms each, which made the stopping rule's checks a quarter of a 1,000-row SubgradientHMC fit.
    Needs finite draws, D >= 4 and, for R-hat, C >= 2 (else NaN)."""
    x = np.asarray(x, dtype=float)
    K, C, D = x.shape
    split = _split_chains(x)
    z = _z_scale(split)
    ess_b = _ess_basic(z)
    flat = x.reshape(K, -1)
    ess_t = None
    for p in prob:
        q = np.quantile(flat, p, axis=1)
        e = _ess_basic(_split_chains((x <= q[:, None, None]).astype(float)))
        ess_t = e if ess_t is None else np.minimum(ess_t, e)
    if C < 2:
        return np.full(K, np.nan), ess_b, ess_t
    folded = np.abs(split - np.median(split.reshape(K, -1), axis=1)[:, None, None])
    r = np.maximum(_rhat_basic(z), _rhat_basic(_z_scale(folded)))
    return r, ess_b, ess_t
