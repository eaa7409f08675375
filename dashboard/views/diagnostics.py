"""Diagnostics page: is the sampler (or the variational fit) trustworthy?

Works from two generic things every method exposes: ``history_`` (progress records) and, for samplers,
``samples_`` (chains x draws x parameters).
"""

import numpy as np
import streamlit as st

from dashboard import figures, state, ui
from dashboard import figures_posterior as figp
from dashboard.analysis import (
    SNAPSHOT_TITLES,
    approx_vs_exact,
    approx_vs_exact_verdict,
    bfmi,
    chain_arrays,
    check_made,
    check_passed,
    check_text,
    download_size,
    draw_surfaces,
    draws_csv,
    draws_netcdf,
    energy_of,
    ess_by_draws,
    last_check,
    leapfrog_paths,
    metrics_csv,
    pair_data,
    param_names,
    weight_cloud,
)
from dashboard.methods import METHODS, run_method_name
from dashboard.runner import Job, fit_in_job

#: R-hat as figures.rhat_text writes it
R_HAT = {"R-hat": figures.rhat_text}
#: rows of the R-hat/ESS table (MS-BPM's kernel coordinates number in the hundreds)
MAX_TABLE = 200


def _formats(table) -> dict:
    return {**{c: "{:.4g}" for c in table.columns if c != "flag"}, **R_HAT}


def _styled(table):
    """The table's numbers formatted, undefined ones (a constant's R-hat and ESS) as a dash, and the flag
    in red where a threshold is passed."""
    return (table.style.format(_formats(table), na_rep="-")
            .map(lambda v: "" if v in ("ok", figures.CONSTANT) else "color: #c62828; font-weight: bold",
                 subset=["flag"]))

# what each column is, and how to get the same numbers from arviz-stats (a user checking the NetCDF download
# there found other tail-ESS: arviz-stats' summary takes its tail quantiles from its ci_prob, 0.89: the
# 11 % and 89 % quantiles, measured)
_HELP = {
    "R-hat": "Rank-normalised split R-hat (Vehtari et al. 2021): arviz_stats.rhat.",
    "bulk-ESS": "Effective draws of the rank-normalised draws, all chains (Vehtari et al. 2021): "
                "arviz_stats.ess(method='bulk').",
    "tail-ESS": "Effective draws of the 5 % and 95 % quantiles, the smaller of the two (Vehtari et al. 2021, "
                "as in Stan): arviz_stats.ess(method='tail', prob=(0.05, 0.95)). arviz-stats' summary takes "
                "the 11 % and 89 % quantiles (its ci_prob, 0.89), so its tail-ESS differs.",
    "sd": "Standard deviation over all chains' draws (divided by n - 1, as arviz-stats' summary).",
    "MCSE(mean)": "Monte Carlo standard error of the mean: arviz_stats.mcse(method='mean').",
}


def _column_config(table, width: int | None = None) -> dict:
    """Each number column with its help (and ``width``), the flag column wide."""
    return {"flag": st.column_config.TextColumn(width="large"),
            **{c: st.column_config.NumberColumn(help=_HELP.get(c), **({"width": width} if width else {}))
               for c in table.columns if c != "flag"}}


st.title("Diagnostics")
st.markdown(
    "For **samplers**: several chains started in different places should end up exploring the same "
    "distribution. **Good** looks like overlapping traces without trends, running means that settle on "
    "one level, autocorrelation that drops to zero quickly, flat rank histograms, R-hat at most 1.01 and at "
    "least 400 effective draws over all chains (the samplers' own stopping rule, Vehtari et al. 2021; rows "
    "past it are flagged). For "
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
ui.download_run(meta, run_method_name(meta, type(est).__name__))
kind = METHODS[meta["method"]].kind if meta.get("method") in METHODS else ""
records = f"{len(hist)} progress record{'' if len(hist) == 1 else 's'}"
st.caption(f"Model: {meta.get('label', type(est).__name__)} - {run.status}"
           + ("." if kind == "baseline" else f", iteration {run.iteration}, {records}."))
current = data
if meta.get("data_key") != current.key:
    # (a run made before runs kept their data has only the current data to draw its points on)
    where = ", on its own data" if "data" in meta else "; its points are drawn on the current data"
    st.warning("This run was made for other data (the data changed since it started): these diagnostics "
               f"describe that fit{where}. Press **Start** on the Train page for a run on the current "
               "data.", icon=":material/warning:")
# from here on, the run's own data (state.run_data_meta): its points, names and rows for the exact sampler
data = meta.get("data", current)

if kind == "baseline":
    # (two empty chart frames said "no objective" and "fitted in one go", each under a mode bar)
    st.info(f"{run_method_name(meta, type(est).__name__)} is fitted in one go: it has no "
            "learning curve, progress records or posterior draws to diagnose. The **Calibration** page "
            "compares its probabilities with the Bayesian methods'.")
    st.stop()
st.subheader("Progress records")
a, b = st.columns(2)
stats_fig = figures.statistics_panel(hist, kind, data.feature_names)
# as tall as the statistics beside it (the sampler's four stacked panels: 530 px against 300, which left a
# blank block under the objective, a crawl)
row_height = max(300, int(stats_fig.layout.height or 300))
with a:
    ui.chart(figures.objective_curve(hist, stages=getattr(est, "stages_", None), height=row_height),
             key="diag_objective", name="objective")
with b:
    ui.chart(stats_fig, key="diag_stats", name="statistics")
    if not figures.split_metrics(figures.metric_names(hist))["hyper"] and \
            any(n in figures.CONVERGENCE for n in figures.metric_names(hist)):
        st.caption("R-hat and bulk ESS: the worst over the quantities the stopping rule monitors, at "
                   "each of its checks; dashed: its thresholds (the run stops once R-hat is below and "
                   "ESS above them).")
snap_keys = figures.snapshot_keys(hist)
if snap_keys:
    key = st.selectbox("Live trace values", snap_keys, key="diag_snap",
                       format_func=lambda k: SNAPSHOT_TITLES.get(k, k),
                       help="Small arrays the method records every few iterations (per-chain values or a "
                            "few coordinates).")
    # (at 300 px its title, note and three legend rows left the plot 90 px high at 1920 px, a crawl)
    ui.chart(figures.named_snapshot_traces(hist, key, est, data.feature_names, height=440),
             key="diag_snapshot",
             name="traces")

S, extra, n_model_par = chain_arrays(est)
if S is None:
    st.info("This method keeps no posterior draws, so chain diagnostics do not apply."
            + (" For a variational fit, check that the objective above has flattened and the "
               "hyperparameters have settled." if kind == "variational" else ""))
    st.stop()
# (MS-BPM in burn-in holds its chains' current states as one "draw": the page said "1 draw kept per
# chain" for a run stopped at sweep 20 of its 300 burn-in sweeps, a crawl)
in_burnin = bool(getattr(est, "_burnin_states", False))
if S.shape[1] < 4 or in_burnin:
    kept = 0 if in_burnin else S.shape[1]
    burn = hist[-1].metrics.get("n_burnin") if hist else None
    where = (f" (the run stopped at iteration {hist[-1].iteration} of its {burn:.0f} burn-in iterations)"
             if burn and hist and hist[-1].metrics.get("burnin") == 1.0 else "")
    st.info(f"No chain diagnostics yet: {'no draw' if kept == 0 else kept} kept per chain{where}, and they "
            f"need at least 4{' draws' if kept == 0 else ''}. A sampler keeps no draws during its burn-in "
            "(the first iterations of a run): **Continue** or **Step** on the Train page, then come back.")
    st.stop()
all_params = param_names(est, data.feature_names, n_model_par)  # in sample order, all of them
names = [*extra, *all_params]
# (only where the zeros are the model's own: MS-BPM's structural ones. Elsewhere a parameter's position
# is its meaning: the exact-sampler overlay and the NetCDF's names count on every one, a review)
constant = 0
keep = est.sampled_coefficients() if hasattr(est, "sampled_coefficients") else None
if keep is not None and keep.size == n_model_par and not keep.all():
    # what the model does not sample (MS-BPM's structural zeros), by the model's own account: a column
    # that is merely constant in the draws (a chain stuck still) stays, and is flagged
    idx = np.r_[np.arange(len(extra)), len(extra) + np.flatnonzero(keep)]
    S, names, constant = S[:, :, idx], [names[i] for i in idx], int(np.sum(~keep))
    n_model_par -= constant
n_chains, n_draws, n_par = S.shape

status = getattr(est, "convergence_", None)
rule_table = figures.stopping_rule_table(status, n_chains) if status is not None else None
# besides the log posterior and p(y|x), SubgradientHMC and GibbsSVM check every parameter; MS-BPM does not
monitors_params = rule_table is not None and any(
    not (q == "log_posterior" or q.startswith("p(y|x")) for q in rule_table.index)
if rule_table is not None:
    # in the page's words: its tables said "log_posterior" here and "theta[3]" for what the table below
    # calls w[x3] (a crawl)
    rule_table = rule_table.rename(index=dict(zip(rule_table.index, figures.rule_quantity_names(
        rule_table.index, all_params))))
if rule_table is not None:
    st.subheader("The stopping rule's last check")
    said = getattr(est, "stopping_rule_", "")
    m = METHODS.get(meta.get("method"))
    for opt in m.options if m is not None else ():
        # the option boxes' words ("Draws per chain = 20"), not the parameters' ("n_samples=20", a crawl)
        said = said.replace(f"{opt.name}=", f"{opt.label} = ")
    ok = bool(getattr(est, "converged_", False))
    (st.success if ok else st.warning)(
        ("Converged: " if ok else "Not converged: ") + (said[0].upper() + said[1:] if said else "") +
        ("." if said else "") + ("" if ok else f" Failed: {status.explain()}."))
    # narrow number columns: at 1280 px the flag column ("R-hat > 1.01; bulk-ESS < 400; tail-ESS ...") was
    # cut off past the table's edge (a crawl)
    st.dataframe(_styled(rule_table), height=min(400, 38 + 35 * len(rule_table)),
                 column_config=_column_config(rule_table, width=90))
    since = "" if status.draws == n_draws else (
        f" The tables below use the {n_draws} draws per chain the run keeps now"
        + (" (it thins its draws to every other one past its memory cap, so they can be fewer)"
           if n_draws < status.draws else "") + ": their numbers differ a little from these.")
    # (a crawl read "on 929 draws per chain" above "8 chains x 520 draws" as a contradiction)
    k = int(getattr(est, "monitor_every_", 1) or 1)
    # (sgld/sgnht on large data: the log posterior and p(y|x) need a pass over all rows, so they are
    # computed at every k-th draw only; a review read "on 9000 draws" as true of those rows too)
    every = (f"; the log posterior and p(y|x) at one in {k} of them, each needing a pass over all the data"
             if k > 1 else "")
    st.caption(f"The numbers the sampler computed at its last check, on {status.draws} draws per chain "
               f"({status.n_chains} chains{every}): the quantities its run length was decided on "
               "(p(y[i] | x[i]): the predictive probability of training row i's own class). Failing "
               f"rows come first.{since}")
# A run stopped or paused before its end has no final verdict (convergence_ is set by the end of the fit),
# but its progress records carry every check it made: the last one is the verdict so far. Without it the
# table below, which has the parameters only, said "All 32 quantities within the thresholds" for a Gibbs
# run whose own check had just failed (bulk ESS 272 of 400 on p(y|x)).
last = last_check(hist) if rule_table is None else None
pending_fail = check_made(last) and not check_passed(last)
# what the Train page's Continue resumes: this run, on the current data and the chosen method (a run on
# data changed since was told "Continue" here while Train had Continue off, a crawl)
resumable = (run.can_resume and meta.get("data_key") == current.key
             and meta.get("method") == state.cfg().get("method"))
again = "; press **Start** on the Train page for a run on the current data and method"
if last is not None and not check_made(last):
    # A fixed-length run checks its rule once, at its end: its records before then carry no check, and
    # "too few draws to estimate the ESS" stood beside a table of 6,880 draws per chain (a crawl)
    st.subheader("The stopping rule")
    st.info(f"The run {'ended' if run.status == 'done' else 'was ' + run.status} before its stopping "
            "rule was checked (a run of fixed length checks it once, at its end; one that runs until "
            "converged, at growing draw counts). The table below is computed on the draws kept so far"
            + ("; **Continue** on the Train page finishes the run." if resumable else
               again + "." if run.can_resume else "."))
elif last is not None:
    st.subheader("The stopping rule's last check")
    (st.warning if pending_fail else st.info)(
        f"The run {'ended' if run.status == 'done' else 'was ' + run.status} before a final verdict; "
        f"its {check_text(last)}, on the log posterior and p(y|x) at a fixed set of training rows. "
        + (("Not converged yet: **Continue** on the Train page to let it reach its rule." if resumable
            else f"Not converged yet{again}.") if pending_fail else "That check passed."))

st.subheader("R-hat, ESS and MCSE")
if constant:
    st.caption(f"{constant:,} of the model's parameters {'has' if constant == 1 else 'have'} the same value "
               "in every draw of every chain "
               "(MS-BPM: the kernel weights off the pivot rows of its kernel's factor are 0 by "
               f"construction): {'it has' if constant == 1 else 'they have'} no chain diagnostics and "
               f"{'is' if constant == 1 else 'are'} left out here, in the charts and in the downloads.")
# The table costs about 5 ms per quantity per 1,000 draws (arviz-stats' rank-normalised R-hat and ESS),
# so a long MS-BPM run's hundreds of kernel weights are checked only on request: a crawl read the green
# "All 200 quantities ..." over the first 200 of 560 as a verdict on all of them, and the CSV stopped there.
every = st.session_state.get("_diag_all_run") == run.id
shown = n_par if every else min(n_par, MAX_TABLE)
if shown < n_par:
    t1, t2 = st.columns([3, 1], vertical_alignment="center")
    t1.caption(f"Checked: the first {shown} of the {n_par} quantities (the per-chain summaries, then the "
               f"model's parameters in order); the other {n_par - shown:,} are not in this table, its "
               "verdict or its download.")
    if t2.button(f"Check all {n_par:,}", key="diag_check_all", icon=":material/checklist:",
                 help=f"Compute R-hat and ESS for every quantity (about "
                      f"{max(1, round(0.005 * n_par * n_chains * n_draws / 1000))} s)."):
        st.session_state["_diag_all_run"] = run.id
        st.rerun()
# (kept for the run as it is: the page reruns at every widget change, and all 560 quantities cost ~3 s)
memo_key = (run.id, run.iteration, S.shape, shown, tuple(names[:shown]))
memo = st.session_state.get("_diag_table")
if memo is not None and memo[0] == memo_key:
    table = memo[1]
else:
    table = ui.safe(figures.diagnostics_table, S[:, :, :shown], names[:shown], what="The diagnostics")
    st.session_state["_diag_table"] = (memo_key, table)
if table is not None:
    n_const = int((table["flag"] == figures.CONSTANT).sum())
    n_bad = int((~table["flag"].isin(["ok", figures.CONSTANT])).sum())
    checked = shown - n_const
    fixed = (f" The other {n_const} {'has' if n_const == 1 else 'have'} the same value in every draw of "
             "every chain, so R-hat is undefined (flagged 'constant', listed last): a coordinate the model "
             "fixes, or chains that never moved." if n_const else "")
    rule = f"R-hat > {figures.RHAT_MAX:g}, or bulk or tail ESS < {figures.ESS_MIN:g}"
    # green only when nothing else says otherwise: the rule's own check watches p(y|x), which this table
    # does not have. Flags on parameters a converged run's rule did not check (MS-BPM's kernel weights)
    # are information, not a warning: a green "Converged" over a yellow box read as a contradiction.
    varying = "varying " if n_const else ""
    unchecked = rule_table is not None and not monitors_params and bool(getattr(est, "converged_", False))
    # (a crawl read "All 82 quantities in this table ..." beside "118 have the same value ..." in a table
    # of 200, and a green "Converged" above "1 of the 104 quantities miss ..." as two verdicts)
    # the rule's own check failed: at a stop or pause (no verdict yet, pending_fail), or as the verdict of
    # a run stopped with its convergence_ set (a green "within the thresholds" sat under a yellow "Not
    # converged" after Stop, a crawl)
    rule_failed = pending_fail or (rule_table is not None and not bool(getattr(est, "converged_", False)))
    (st.info if n_bad and unchecked else st.warning if n_bad else st.info if rule_failed else st.success)(
        (f"{n_bad} of the {checked} {varying}quantities in this table miss the thresholds ({rule}): "
         "parameters the stopping rule does not check (the run converged on what it checks, above); they "
         f"are listed first.{fixed}" if unchecked else
         f"{n_bad} of the {checked} {varying}quantities miss the stopping rule's thresholds ({rule}); they "
         f"are listed first.{fixed}") if n_bad else
        (f"The {checked} varying quantities in this table are" if n_const else
         f"All {checked} quantities in this table are") + f" within the stopping rule's thresholds.{fixed}"
        + (f" The other {n_par - shown:,} quantities are not checked yet." if shown < n_par else "")
        + (" The rule's own check above is not met: it also watches p(y|x) at training rows, which this "
           "table does not have." if rule_failed and not n_bad else ""))
    if n_bad and rule_table is not None and not monitors_params:
        st.caption(f"{run_method_name(meta, type(est).__name__)}'s stopping rule does not "
                   "check its parameters "
                   "one by one (the table above is what it checked): a flagged parameter mixes more slowly "
                   "than the predictions it determines. A longer run (more draws per chain on the Train "
                   "page) lets it catch up.")
    st.dataframe(_styled(table), column_config=_column_config(table))
    if meta.get("method") == "msbpm":
        st.caption("MS-BPM's parameters are the kernel weights beta of its latent functions, f(x) = sum_i "
                   "beta_i k(x_i, x) + bias. Its likelihood depends only on which class scores highest, not "
                   "on f's scale, and the weights of nearby rows trade off against each other, so single "
                   "weights can be large and wander while f, and the predictions its stopping rule checks, "
                   "have settled. Rows whose kernel column the sampler's low-rank factor did not keep have "
                   "a weight fixed at 0 (constant)."
                   + (f" With {len(est.classes_)} classes each class but the first has its own weights "
                      f"(beta[class c, ...]); the first, {est.classes_[0]}, is the reference: its score is "
                      "0, so it has none." if len(getattr(est, "classes_", [])) > 2 else ""))


st.subheader(f"Chains: {n_chains} chains x {n_draws} draws x {n_par} quantities")
c1, c2 = st.columns([1, 2])
param = c1.selectbox("Quantity", range(n_par), format_func=lambda j: names[j], key="diag_param",
                     help="Per-chain summaries the sampler keeps (log posterior, training error, ...) come "
                          "first, then the model's parameters.")
chains = c2.multiselect("Chains", list(range(n_chains)), default=list(range(min(n_chains, 8))),
                        key="diag_chains", help="Pick chains to compare; the tables above use every chain.")
chains = chains or list(range(n_chains))

#: why a model with kernel features has no weight-space cloud, per ``features`` option
FEATURE_WORDS = {
    "rff": "its weights belong to random Fourier features (random cosine waves of the inputs, which "
           "bend its boundary), not to the two inputs themselves, so there are no two weights to plot",
    "nystroem": "its weights belong to Nystroem kernel features (one per chosen training point, which bend "
                "its boundary), not to the two inputs themselves, so there are no two weights to plot",
}
gibbs = METHODS["gibbs"]
# Only SubgradientHMC shares GibbsSVM's parameters (raw-feature weights then the bias, with features=None).
against_exact = meta.get("method") == "subgradient_hmc" and gibbs.available and data.binary
# the draws' boundaries and weight cloud are for two classes: with more, the tab held one sentence (a crawl)
draws_tab = data.n_features == 2 and len(data.classes) == 2
TABS = ["Traces and mixing", "ESS, energy and pairs", *(["Posterior draws"] if draws_tab else []),
        *(["Against the exact sampler"] if against_exact else [])]
if st.session_state.get("diag_tab") not in TABS:  # (another run or data set: another set of tabs)
    st.session_state.pop("diag_tab", None)
# Lazy tabs: only the open one is computed and sent. All at once, the page built and the browser drew
# twelve Plotly charts on every visit and every change of quantity (0.9-4.5 s in the browser).
tabs = dict(zip(TABS, st.tabs(TABS, key="diag_tab", on_change="rerun")))
gibbs_job = state.registry().get("diag_gibbs")
if against_exact and not tabs["Against the exact sampler"].open and gibbs_job is not None \
        and gibbs_job.status == "running":  # it goes on while another tab is open: say so, with Cancel
    state.job_view("diag_gibbs")

if tabs["Traces and mixing"].open:
    with tabs["Traces and mixing"]:
        t1, t2 = st.columns(2)
        with t1:
            ui.chart(figures.chain_traces(S, param, chains, names[param]), key="diag_trace", name="trace")
            ui.chart(figures.autocorrelation_figure(S, param, chains, name=names[param]),
                     key="diag_acf", name="autocorrelation")
        with t2:
            ui.chart(figures.running_means(S, param, chains, names[param]),
                     key="diag_running", name="running_means")
            ui.chart(figures.rank_figure(S, param, chains, name=names[param]),
                     key="diag_rank", name="rank_plot")

if tabs["ESS, energy and pairs"].open:
    with tabs["ESS, energy and pairs"]:
        e1, e2 = st.columns(2)
        with e1:
            ess = ui.safe(ess_by_draws, S, param, what="ESS against draws")
            if ess is not None and len(ess):
                ui.chart(figp.ess_evolution(ess, names[param], figures.ESS_MIN),
                         key="diag_ess", name="ess_vs_draws")
                st.caption("Bulk and tail ESS from the first n draws of every chain (bsvm.diagnostics): "
                           "lines that rise steadily mean the chains keep adding information; flat lines "
                           "mean they are stuck.")
        with e2:
            energy = energy_of(est)
            if energy is not None:
                b = ui.safe(bfmi, energy, what="BFMI")
                if b is not None:
                    ui.chart(figp.energy_plot(energy, b), key="diag_energy", name="energy_plot")
                    # (an HMC user looks for divergences first; the sampler recorded them, the page
                    # showed none, a crawl)
                    div = getattr(est, "diverging_", None)
                    said = ""
                    if div is not None and np.size(div):
                        n_div = int(np.sum(np.asarray(div, dtype=bool)))
                        said = (f" Divergent transitions (energy error above 1,000) among the kept draws: "
                                f"{n_div:,} of {np.size(div):,}"
                                + (" - the posterior has regions the step size cannot follow: lower c or "
                                   "standardise the features." if n_div else "."))
                    st.caption("When the energy changes between draws (red) are much narrower than the "
                               "energy's spread (blue), HMC explores the posterior's tails slowly: BFMI "
                               "(the Bayesian fraction of missing information, the variance of the energy "
                               "changes over that of the energy) below 0.3." + said)
            elif meta.get("method") == "msbpm" and getattr(est, "sampler_", None) == "hmc":  # (a crawl read
                # "for HMC samplers: this run has none" beside MS-BPM's two-class run, whose sampler is HMC)
                st.info("The energy plot and BFMI need the Hamiltonian of each draw. MS-BPM's HMC moves "
                        "sample the weights given a confusion matrix drawn afresh before each move, so "
                        "each move has a Hamiltonian of its own, not the posterior's, and none is "
                        "recorded. SubgradientHMC with sampler=\"hmc\" records it.")
            else:
                st.info("The energy plot and BFMI are for HMC samplers (the Hamiltonian of each draw): "
                        "this run has none. SubgradientHMC with sampler=\"hmc\" records it.")
        # the first three parameters that move (MS-BPM's first weights can be fixed at 0: their panels
        # were a solid bar and a single dot), else the first quantities
        moving = [j for j in range(len(extra), n_par) if np.ptp(S[:, :, j]) > 0][:3]
        summaries = [j for j in range(len(extra)) if np.ptp(S[:, :, j]) > 0][:3]
        if meta.get("method") == "msbpm" and len(summaries) >= 2:
            # MS-BPM's parameters are kernel weights of +-50,000 that trade off against each other (the
            # caption under the table): its log posterior, log likelihood and training error say more
            default_pair = summaries
        else:
            default_pair = moving if len(moving) >= 2 else list(range(min(n_par, 3)))
        pair = st.multiselect("Pair plot of", list(range(n_par)), default=default_pair, max_selections=4,
                              format_func=lambda j: names[j], key="diag_pair",
                              help="Two to four quantities: histograms on the diagonal, draws below it.")
        if len(pair) >= 2:
            ui.chart(figp.pair_plot(pair_data(S, pair), [names[j] for j in pair]),
                     key="diag_pair_plot", name="pair_plot")


if data.n_features == 2 and not draws_tab:
    st.caption(f"Posterior draws are drawn one by one for two classes: this fit has {len(data.classes)}, so "
               "each draw has one boundary per pair of classes and one weight vector per class. The class "
               "map on the Train page shows where the draws disagree (opacity = confidence).")
if "Posterior draws" in tabs and tabs["Posterior draws"].open:
    with tabs["Posterior draws"]:
        n_show = st.slider("Draws to show", 20, 50, 30, 5, key="diag_n_draws")
        grid, _ = ui.map_grid(data, 50)
        surf = ui.safe(draw_surfaces, est, grid.points, n_show, what="Posterior draws")
        d1, d2 = st.columns(2)
        with d1:
            if surf is not None:
                X, y = ui.shown_points(data, 400)
                ui.chart(figp.draw_boundaries(grid, surf[0], surf[1], X, y, data.classes,
                                              axis_titles=tuple(data.axis_names)),
                         key="diag_boundaries", name="posterior_draws")
                st.caption("Each grey line is the decision boundary of one posterior draw: where they fan "
                           "out, the posterior does not know where the boundary lies."
                           + (" Far from the data a kernel model's latent function fades to about 0, so a "
                              "single draw's sign there turns on tiny values: the small closed loops out "
                              "there are where one draw's f crosses 0, not a boundary the data support."
                              if meta.get("method") == "msbpm" else ""))
            else:
                st.info("This model's draws cannot be evaluated one by one.")
        with d2:
            cloud = weight_cloud(est, data.feature_names)
            if cloud is not None:
                # the chains picked above, as in the other chain plots (the cloud showed all: a crawl); the
                # leapfrog path is chain 0's
                recorded = leapfrog_paths(hist)
                paths = recorded if 0 in chains else []
                ui.chart(figp.weight_cloud(cloud[0][chains], cloud[1], paths, chains=chains, height=560),
                         key="diag_cloud", name="weight_cloud")
                st.caption("The draws as points in weight space, one colour per chain (the chains picked "
                           "above)"
                           + (f"; black: the leapfrog path of the last {len(paths)} HMC transitions of "
                              "chain 0 (start: open circle, end: star)." if paths else
                              "; pick chain 0 to see its leapfrog path." if recorded else
                              ". (HMC runs also draw the leapfrog path of their last transitions.)"))
            else:
                fmap = getattr(est, "feature_map_", "none")
                feats = getattr(est, "features", None)
                # (in words: "its weights are those of features = 'rff'" meant nothing to a new user)
                what = ("its draws are kernel expansions, one weight per training row" if fmap == "none"
                        else FEATURE_WORDS.get(feats, f"its weights are those of its {feats!r} features, not "
                                                      "of the two inputs"))
                st.info("The weight-space cloud is for linear models on the two raw inputs "
                        f"(SubgradientHMC or GibbsSVM with features = None): {what}.")


if "Against the exact sampler" in tabs and tabs["Against the exact sampler"].open:
    with tabs["Against the exact sampler"]:
        st.caption("GibbsSVM samples the same linear Bayesian SVM exactly; an approximate sampler's draws "
                   "should match its means, sds and histograms (only when both have the same parameters: raw "
                   "features and bias).")
        cache = st.session_state.setdefault("gibbs_cache", {})
        gkey = (data.key, n_model_par)
        job = state.registry().get("diag_gibbs")
        # (no button while its run goes on or once it has finished: it stayed on the page beside the result)
        busy = job is not None and job.meta.get("key") == gkey and job.status in ("running", "done")
        # GibbsSVM's parameters: the raw features' weights and the bias. A run on kernel features
        # (features="nystroem": 101 parameters on Ripley) was offered the Gibbs run, and told only after
        # it that the two were not comparable (a crawl)
        comparable = n_model_par == data.n_features + 1
        if not comparable and gkey not in cache:
            feats = meta.get("options", {}).get("features")
            why = (f"on {feats} features, {n_model_par} parameters" if feats not in (None, "", "none")
                   else f"{n_model_par} parameters")
            st.info(f"This run's model ({why}) does not have GibbsSVM's parameters, the {data.n_features} "
                    "raw features' weights and a bias, so the two cannot be compared: rerun the "
                    f"{run_method_name(meta, 'sampler')} on the Train page with features=None (and a bias) "
                    "to compare it with the exact sampler.", icon=":material/info:")
        elif gkey not in cache and not busy and st.button("Run GibbsSVM on the same data"):
            opts = {k: v for k, v in meta.get("options", {}).items() if k in ("c", "n_chains", "n_samples")}
            g = ui.safe(gibbs.make, opts, 0, what="GibbsSVM")
            if g is not None:  # a registry job: progress bar and Cancel, stopped when the user leaves
                job = Job(fit_in_job, g, data.X_train, data.y_train, gibbs.cap(opts), "GibbsSVM",
                          label="The exact Gibbs sampler", page="diagnostics",
                          meta={"key": gkey, "data_key": data.key})
                state.start_job("diag_gibbs", job)
        if gkey not in cache:
            g = state.job_view("diag_gibbs", gkey)
            if g is not None:
                cache[gkey] = np.asarray(g.samples_, dtype=float)
        if gkey in cache:
            G = cache[gkey]
            G = G[None] if G.ndim == 2 else G
            j = param - len(extra)  # the chosen quantity's column among the model's own parameters
            model_names = names[len(extra):]
            if G.shape[2] != n_model_par:
                st.info(f"GibbsSVM has {G.shape[2]} parameters and this model {n_model_par}: they are not "
                        "comparable (use features=None for the approximate sampler).")
            else:
                cmp = approx_vs_exact(S[:, :, len(extra):], G, model_names)
                # short headers, the long ones on hover, three significant digits: presentation mode at
                # 1280 px cut the last column, the sd ratio, to "sd rati" (a crawl)
                short = {"|mean diff| / sd (exact)": "|diff| / sd", "|mean diff| / MC error": "|diff| / MCSE"}
                helps = {"|diff| / sd": "|mean (approx.) - mean (exact)| / sd (exact)",
                         "|diff| / MCSE": "|mean (approx.) - mean (exact)| / its Monte Carlo error (within "
                                          "about 3 is noise)",
                         "sd ratio": "sd (approx.) / sd (exact): near 1 when the spreads agree"}
                shown = cmp.rename(columns=short)
                st.dataframe(shown.style.format("{:.3g}"),
                             column_config={k: st.column_config.NumberColumn(help=v) for k, v in helps.items()
                                            if k in shown.columns})
                st.caption("Means and sds of every parameter under both samplers. Two correct runs differ "
                           "by Monte Carlo noise (about 0.07 sd with 400 effective draws each), so read "
                           "the difference of the means against its Monte Carlo error (|diff| / MCSE): "
                           "within about 3 is noise; an sd ratio near 1 means the spreads agree. "
                           + approx_vs_exact_verdict(cmp))
                if j < 0:  # a per-chain quantity is chosen above (the default): overlay the first weight
                    j = 0
                    st.caption(f"Histograms of {model_names[0]} (the Quantity chosen above, "
                               f"{names[param]}, is a per-chain summary GibbsSVM does not have): pick one of "
                               "the model's parameters there to overlay its draws.")
                labels = (run_method_name(meta, "approximate"), "exact GibbsSVM")
                ui.chart(figures.draws_overlay(S[:, :, len(extra):], G, j, labels, model_names[j]),
                         key="diag_overlay", name="approx_vs_exact")

st.subheader("Downloads")
k1, k2, k3 = st.columns(3)
run_name = run_method_name(meta, type(est).__name__)  # (in the files' names, with the run's data set)
k1.download_button(f"Draws (CSV){download_size(S, 'csv')}", data=lambda: draws_csv(S, names), mime="text/csv",
                   file_name=ui.file_name("draws", run_name, meta=meta),
                   icon=":material/download:", on_click="ignore", key="dl_draws_csv",
                   help="One row per chain and draw, one column per quantity.")
if hasattr(est, "to_arviz"):
    c, data_name = state.run_settings(meta)  # the settings the run was made with
    std = bool(c.get("std"))
    about = {"method": meta.get("label", type(est).__name__),
             "data": data_name,
             "label_column": data.label_name, "classes": [str(k) for k in data.classes],
             "features": [str(f) for f in data.feature_names],
             "standardized": int(std),
             "standardization": ("each feature was (x - feature_center) / feature_scale, with the training "
                                 "rows' mean and standard deviation: the weights are on that scale"
                                 if std else "none: the weights are on the file's own scale"),
             "seed": int(c.get("seed", 0)), "test_fraction": float(c.get("test", 0.0)),
             "rows": " ".join(["observed_data holds the training rows of the dashboard's stratified split "
                               "(seed, test_fraction), in the file's order.",
                               *[n for n in st.session_state.get("_load_notes", [])
                                 if n.startswith("Dropped")],
                               *data.notes]),
             "feature_center": np.asarray(data.center, dtype=float) if std else None,
             "feature_scale": np.asarray(data.scale, dtype=float) if std else None}
    k2.download_button(f"Draws (NetCDF, ArviZ){download_size(S, 'nc', len(data.y_train), len(data.classes))}",
                       data=lambda: draws_netcdf(est, data.feature_names, about, X=data.X_train),
                       file_name=ui.file_name("draws", run_name, ext="nc", meta=meta),
                       mime="application/x-netcdf", icon=":material/download:", on_click="ignore",
                       key="dl_draws_nc",
                       help="The estimator's to_arviz() DataTree: posterior, sample_stats, "
                            "observed_data, log_likelihood (per training row, up to 20 million "
                            "class probabilities and where no draw gives a row probability 0: "
                            "arviz_stats.loo reads it) and constant_data as groups "
                            "(the root holds only what made them: method, data, "
                            "standardisation). xarray.open_datatree and ArviZ read it; "
                            "xarray.open_dataset needs group='posterior'.")
else:
    k2.caption("NetCDF needs the estimator's `to_arviz()` (not available for this method yet).")
if table is not None:
    k3.download_button("Diagnostics table (CSV)", data=metrics_csv(table), mime="text/csv",
                       file_name=ui.file_name("diagnostics", run_name, meta=meta),
                       icon=":material/download:", on_click="ignore", key="dl_diag_csv")

