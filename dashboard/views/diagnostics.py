"""Diagnostics page: is the sampler (or the variational fit) trustworthy?

Works from two generic things every method exposes: ``history_`` (progress records) and, for samplers,
``samples_`` (chains x draws x parameters).
"""

import numpy as np
import streamlit as st

from dashboard import figures, state, ui
from dashboard.methods import METHODS
from dashboard.runner import Job, fit_in_job

st.title("Diagnostics")
st.markdown(
    "For **samplers**: several chains started in different places should end up exploring the same "
    "distribution. **Good** looks like overlapping traces without trends, running means that settle on "
    "one level, autocorrelation that drops to zero quickly, flat rank histograms, R-hat at most 1.01 and at "
    "least 100 effective draws per chain (Stan's thresholds; rows past them are flagged). For "
    "**variational** fits there are no draws: convergence means a flat objective and settled "
    "hyperparameters.")

data = state.require_data()
if data is None:
    st.stop()
run = st.session_state.get("run")
meta = st.session_state.get("run_meta", {})
if run is None or not run.fitted:
    st.info("Train a model on the **Train** page first; its diagnostics appear here.")
    st.stop()
est = run.model
hist = run.history
st.caption(f"Model: {meta.get('label', type(est).__name__)} - {run.status}, iteration {run.iteration}, "
           f"{len(hist)} progress records.")

groups = figures.split_metrics(figures.metric_names(hist))
st.subheader("Progress records")
a, b = st.columns(2)
with a:
    st.plotly_chart(figures.objective_curve(hist), key="diag_objective")
with b:
    if groups["sampler"]:
        st.plotly_chart(figures.metric_curves(hist, groups["sampler"][:4], "Sampler statistics",
                                              separate_axes=True), key="diag_sampler_stats")
    elif groups["hyper"]:
        st.plotly_chart(figures.metric_curves(hist, groups["hyper"], "Hyperparameters", log_y=True),
                        key="diag_hyper")
    else:
        kind = METHODS[meta["method"]].kind if meta.get("method") in METHODS else ""
        st.plotly_chart(figures.empty_figure(figures.no_stats_message(kind)), key="diag_none")
snap_keys = figures.snapshot_keys(hist)
if snap_keys:
    key = st.selectbox("Live trace values", snap_keys, key="diag_snap",
                       help="Small arrays the method records every few iterations (per-chain values or a "
                            "few coordinates).")
    st.plotly_chart(figures.snapshot_traces(hist, key), key="diag_snapshot")

samples = getattr(est, "samples_", None)
if samples is None:
    st.info("This method keeps no posterior draws (`samples_`), so chain diagnostics do not apply. For a "
            "variational fit, check that the objective above has flattened.")
    st.stop()
S = np.asarray(samples, dtype=float)
if S.ndim == 2:
    S = S[None]
if S.ndim != 3 or S.shape[1] < 4:
    st.warning(f"`samples_` has shape {S.shape}: need chains x draws x parameters with at least 4 draws.")
    st.stop()
names = list(getattr(est, "param_names_", []) or [])
if len(names) != S.shape[2]:
    names = [f"param {j}" for j in range(S.shape[2])]
# Per-chain quantities the sampler keeps beside its draws (log posterior, potential, thermostat, ...):
# any fitted (chains x draws) array. They lead the list: they summarise all parameters at once.
extra = {a: np.asarray(v, dtype=float) for a, v in vars(est).items()
         if a.endswith("_") and not a.startswith("_") and a != "samples_" and isinstance(v, np.ndarray)
         and v.shape == S.shape[:2] and np.issubdtype(v.dtype, np.number)}
n_model_par = S.shape[2]
if extra:
    S = np.concatenate([np.stack(list(extra.values()), axis=2), S], axis=2)
    names = [*extra, *names]
n_chains, n_draws, n_par = S.shape

st.subheader(f"Chains: {n_chains} chains x {n_draws} draws x {n_par} parameters")
c1, c2 = st.columns([1, 2])
param = c1.selectbox("Parameter", range(n_par), format_func=lambda j: names[j], key="diag_param")
chains = c2.multiselect("Chains", list(range(n_chains)), default=list(range(min(n_chains, 8))),
                        key="diag_chains", help="Pick chains to compare; all chains enter the table below.")
chains = chains or list(range(n_chains))
t1, t2 = st.columns(2)
with t1:
    st.plotly_chart(figures.chain_traces(S, param, chains, names[param]), key="diag_trace")
    st.plotly_chart(figures.autocorrelation_figure(S, param, chains, name=names[param]), key="diag_acf")
with t2:
    st.plotly_chart(figures.running_means(S, param, chains, names[param]), key="diag_running")
    st.plotly_chart(figures.rank_figure(S, param, chains, name=names[param]), key="diag_rank")

st.subheader("R-hat, ESS and MCSE")
shown = min(n_par, 200)
table = ui.safe(figures.diagnostics_table, S[:, :, :shown], names[:shown], what="The diagnostics")
if table is not None:
    n_bad = int((table["flag"] != "ok").sum())
    (st.warning if n_bad else st.success)(
        f"{n_bad} of {shown} parameters past Stan's thresholds (R-hat > {figures.RHAT_MAX}, "
        f"ESS < {figures.ESS_PER_CHAIN_MIN} per chain)." if n_bad else
        f"All {shown} parameters within Stan's thresholds.")
    st.dataframe(table.style.format({c: "{:.4g}" for c in table.columns if c != "flag"})
                 .map(lambda v: "color: #c62828; font-weight: bold" if v != "ok" else "", subset=["flag"]))

gibbs = METHODS["gibbs"]
# Only SubgradientHMC shares GibbsSVM's parameters (raw-feature weights then the bias, with features=None).
if meta.get("method") == "subgradient_hmc" and gibbs.available and data.binary:
    st.subheader("Against the exact sampler")
    st.caption("GibbsSVM samples the same linear Bayesian SVM exactly; an approximate sampler's draws should "
               "match its histogram (only when both have the same parameters: raw features and bias).")
    cache = st.session_state.setdefault("gibbs_cache", {})
    gkey = (data.key, S.shape[2])
    if gkey not in cache and st.button("Run GibbsSVM on the same data"):
        opts = {k: v for k, v in meta.get("options", {}).items() if k in ("c", "n_chains", "n_samples")}
        g = ui.safe(gibbs.make, opts, 0, what="GibbsSVM")
        if g is not None:  # a registry job: progress bar and Cancel, stopped when the user leaves
            state.start_job("diag_gibbs", Job(fit_in_job, g, data.X_train, data.y_train, gibbs.cap(opts),
                                              "GibbsSVM", label="The exact Gibbs sampler", page="diagnostics",
                                              meta={"key": gkey, "data_key": data.key}))
    if gkey not in cache:
        g = state.job_view("diag_gibbs", gkey)
        if g is not None:
            cache[gkey] = np.asarray(g.samples_, dtype=float)
    if gkey in cache:
        G = cache[gkey]
        G = G[None] if G.ndim == 2 else G
        j = param - len(extra)  # the chosen parameter's column among the model's own parameters
        if G.shape[2] != n_model_par:
            st.info(f"GibbsSVM has {G.shape[2]} parameters and this model {n_model_par}: they are not "
                    "comparable (use features=None for the approximate sampler).")
        elif j < 0:
            st.info("Pick one of the model's parameters (not a per-chain quantity) above to compare draws.")
        else:
            labels = (meta.get("label", "approximate"), "exact GibbsSVM")
            st.plotly_chart(figures.draws_overlay(S[:, :, len(extra):], G, j, labels, names[param]),
                            key="diag_overlay")
