"""Calibration page: the trained model against PlattSVM on the same split."""

import math

import numpy as np
import streamlit as st

from dashboard import figures, state, ui
from dashboard.analysis import (
    ENTROPY,
    LATENT_VARIANCE,
    Prepared,
    calibration_models,
    comparison_sentence,
    evaluate,
    metrics_csv,
    paired_comparison,
    reliability_curves,
)
from dashboard.methods import METHODS, run_method_name
from dashboard.runner import DONE, FINISHED, PROCESS_ROWS, Job, Run, fit_in_job, fit_plain

st.title("Calibration")
data = state.require_data()
if data is None:
    st.stop()
st.markdown(
    "Are the predicted probabilities honest? "
    + (f"Among test points given p(y = {data.classes[1]} | x) = 0.8, about 80% should be of class "
       f"{data.classes[1]}. " if data.binary else
       "Among test points whose predicted class gets probability 0.8, about 80% should be of that class. ")
    + "**Good** looks like: reliability curves near the diagonal, low Brier score, log loss and ECE, and "
    "(where the truth is known) a small mean deviation from the true p(y|x). Bayesian methods should also "
    "be *less sure where the data say little*: the uncertainty map should light up where the boundary "
    "could run in several ways (beyond its ends, in gaps between the points), though not everywhere far "
    "away: along a clear trend (far out on one side of the classes) a model that extends the trend stays "
    "confident.")
c = state.cfg()


#: methods whose work before their first progress record grows faster than the rows: one SVC fit
#: (PlattSVM), MS-BPM's N x N kernel and its eigendecomposition, SeegerARD's n^3 steps. A thread job can
#: only stop between records, so above PROCESS_ROWS they run in a child process, which Cancel terminates
#: (a crawl: "Fit MS-BPM now" on a 20,000-row upload went on for a minute at 100 % CPU and 3.3 GB after
#: the data set was switched). The price: a start of about a second and no progress bar.
PROCESS_METHODS = ("platt", "msbpm", "seeger")


def fit_job(name: str, method, options, d: Prepared, seed: int):
    """Fit ``method`` to the end as a registry job (progress bar, Cancel; a big PlattSVM fit in a child
    process, since one SVC fit cannot be interrupted otherwise). Returns the fitted estimator once done,
    None while it runs or when it failed (the job view says why)."""
    key = (d.key, method.key, repr(sorted(options.items())), seed)
    reg = state.registry()
    job = reg.get(name)
    left = job is not None and job.status == "cancelled" and job.note.startswith("you left")
    if job is None or job.meta.get("key") != key or left:  # (re)start; also after the user came back
        est = ui.safe(method.make, dict(options), seed, what=f"Setting up {method.label}")
        if est is None:
            return None
        if method.key in PROCESS_METHODS and len(d.y_train) > PROCESS_ROWS:
            job = Job(fit_plain, est, d.X_train, d.y_train, label=f"Fitting {method.label}", process=True)
        else:
            job = Job(fit_in_job, est, d.X_train, d.y_train, method.cap(options), method.label,
                      label=f"Fitting {method.label}")
        # (a job cannot resume: say why the progress starts from zero, for as long as this fit runs; said
        # only on the page run that restarted it, the caption went at the next rerun)
        job.page, job.meta = "calibration", {"key": key, "data_key": data.key, "restarted": left}
        state.start_job(name, job)
    if job.meta.get("restarted") and job.status not in FINISHED:
        st.caption(f"{method.short_name}: fitting again from the start; the earlier fit stopped when "
                   "you left this page.")
    return state.job_view(name, key)


def platt_for(d: Prepared):
    return fit_job(f"cal_platt:{d.key == data.key}", METHODS["platt"], {}, d, int(c["seed"]))


run = st.session_state.get("run")
meta = st.session_state.get("run_meta", {})
model, label = None, None
if run is not None and run.fitted and meta.get("data_key") == data.key:
    # the short name ("Subgradient MCMC"): the long one's map titles ran under the charts' mode bar
    model, label = run.model, run_method_name(meta)
    if run.status != DONE:
        kept = np.shape(getattr(model, "samples_", None))
        if len(kept) == 3 and kept[1] == 0:
            # stopped in burn-in: the predictions come from the chains' current states, which a metrics
            # table read as the sampler's (ECE .11 against .09 once finished, a crawl)
            st.warning(f"The Train page's run was {run.status} in its burn-in (iteration {run.iteration}), "
                       "before it kept any draw: these predictions use the chains' current states, not "
                       "posterior draws. **Continue** it on the Train page for the sampler's own results.",
                       icon=":material/info:")
        else:
            st.caption(f"Using the Train page's run as it stands ({run.status}, iteration {run.iteration}).")
else:
    method, _ = state.method_for(data)
    note = state.fallback_note(data, method)
    if note:
        st.warning(note, icon=":material/info:")
    if run is not None and run.fitted:
        # (it said "No trained model for this data yet" to a user who had just trained, while Train and
        # Diagnostics warned of a run made for other data: a crawl)
        st.warning(f"The Train page's run ({run_method_name(meta)}) was made for other data (the data "
                   "changed since it started), so it is not compared here: train again on the **Train** "
                   "page, or fit here with the current options (that fit then becomes the run the other "
                   "pages show).",
                   icon=":material/warning:")
    else:
        st.info("No trained model for this data yet: train one on the **Train** page, or fit here with the "
                "current options.")
    if method is not None:
        opts = state.method_options(method.key)
        if st.button(f"Fit {method.label} now", type="primary"):
            st.session_state["cal_fit_now"] = data.key
        # the request holds for the data it was made on: a True flag outlived a switch of data set, and
        # coming back the page fitted the method on the new data unasked (a crawl: "Fit MS-BPM now" on
        # an upload, then a sample picked on the Data page while it ran)
        if st.session_state.get("cal_fit_now") == data.key:
            est = fit_job("cal_fit", method, opts, data, int(c["seed"]))
            if est is not None:
                st.session_state.pop("cal_fit_now", None)
                meta = {"method": method.key, "label": method.run_label(opts), "options": dict(opts),
                        "data_key": data.key, **state.run_data_meta(data)}
                st.session_state["run"] = Run.from_fitted(est, label=meta["label"], meta=meta)
                st.session_state["run_meta"] = meta
                st.rerun()
    st.stop()

platt = platt_for(data)
models = calibration_models(model, label, platt)  # never the trained model against itself

results = {}
for name, est in models.items():
    res = ui.safe(evaluate, est, data, what=f"Evaluating {name}")
    if res is not None:
        results[name] = res
if not results:
    st.stop()

st.subheader("Metrics on the test set")
table = figures.metrics_table({k: v["report"] for k, v in results.items()})
st.dataframe(table.style.format("{:.4f}"))
if len(results) == 2:
    # a verdict, with the test set's noise: the table alone left a user to judge 0.0090 against 0.0228 (a
    # crawl); the differences are paired row by row, so the rows' own difficulty cancels
    (name_a, res_a), (name_b, res_b) = results.items()
    st.info(comparison_sentence(name_a.split(" (")[0], name_b.split(" (")[0], paired_comparison(res_a, res_b),
                                len(res_a["y_index"])), icon=":material/balance:")
if (note := ui.fit_note_once(model, data, retry="on the Train page and train again")):
    st.warning(f"**{label}**: {note}", icon=":material/lightbulb:")
st.download_button("Metrics (CSV)", data=metrics_csv(table),
                   file_name=ui.file_name("calibration_metrics", label or ""), mime="text/csv",
                   icon=":material/download:", on_click="ignore", key="cal_metrics_csv")
# (multi-class: the sum over classes halved, so that it equals the binary form; a crawl compared it with
# scikit-learn's multi-class brier_score_loss, twice it, and read the gap as a better model)
brier = ("Brier: mean over rows of the squared errors of p summed over the classes, halved (equal to the "
         "two-class (p - y)^2; scikit-learn's multi-class brier_score_loss is twice it)"
         if not data.binary else "Brier: mean squared error of p")
st.caption(f"error: misclassified fraction; {brier}; "
           "log loss: mean -log p(true class); ECE: count-weighted gap between confidence and accuracy "
           "over 10 bins; AUC: ranking quality" + ("" if data.binary else
                                                   " (one-vs-rest, averaged over the classes)")
           + ("; mean |p - p_true|: deviation from the true probabilities." if data.truth else "."))


def _png_stem(chart: str, where: str) -> str:
    """A map's PNG name ahead of the data set and method: "calibration_map", and for the maps of the
    model on two chosen features "calibration_map_two_features" (it was "cal_map_main_S-BSVM_ripley",
    the method before the data set and an internal word, a crawl)."""
    return f"calibration_{chart}" + ("" if where == "main" else "_two_features")


def maps_for(d: Prepared, fitted: dict, where: str):
    # at least two columns: one model's map across the whole page was stretched to 3:1 (a crawl)
    cols = st.columns(max(2, len(fitted)))
    for col, (name, est) in zip(cols, fitted.items()):
        with col:
            fig = ui.proba_map(est, d, name)
            if fig is not None:
                ui.chart(fig, key=f"cal_map_{where}_{name}", name=_png_stem("map", where),
                         method=name)
    scale = (f"blue = {d.classes[0]}, red = {d.classes[1]}, white = 50/50" if d.binary else
             "each region in its predicted class's colour, more transparent where the top class is less "
             f"sure, that is, where the {len(d.classes)} classes are a close call")
    both = "Both maps use the same colour scale" if len(fitted) > 1 else "The colour scale"
    # a crawl took PlattSVM's pale pocket in a corner of a 3-class map for a drawing fault: it is the
    # model's (bsvm.platt: the SVC's one-vs-one votes tie there, each class beating one other, and its
    # calibrated probabilities are close, e.g. 0.41 / 0.38 / 0.21)
    votes = (" PlattSVM's regions meet along sharp edges, and it can show a pale pocket where its "
             "one-vs-one votes tie (each class beats one other): there its probabilities are close."
             if not d.binary and any(hasattr(e, "svc_decision_function") for e in fitted.values()) else "")
    st.caption(f"{both}: {scale}"
               + ("; dotted black lines: contours of the true p(y|x) at 0.1, 0.3, 0.5, 0.7, 0.9." if d.truth
                  else ".") + votes)
    kinds = {ENTROPY: "predictive entropy (every method, one scale)",
             LATENT_VARIANCE: "latent variance (Gaussian-posterior methods)"}
    # offered only when a model here has one: the option drew two "has no latent Gaussian predictive"
    # boxes and no map for a sampler beside PlattSVM (a crawl)
    latent = any(hasattr(est, "predict_latent") for est in fitted.values())
    if latent:
        kind = st.radio("Uncertainty", list(kinds), horizontal=True, key=f"cal_unc_kind_{where}_1",
                        format_func=kinds.get,
                        help="Predictive entropy -sum p log p of each model's probabilities, from 0 "
                             "(certain) to log K (a coin toss), on one fixed scale, so the maps compare. "
                             "The latent variance Var q(f(x)) exists only for methods with a Gaussian "
                             "latent posterior (S-BSVM, Seeger ARD) and has its own scale.")
    else:
        # (a radio with its one option looked like a control that did nothing: a crawl)
        kind = ENTROPY
        st.caption("Uncertainty: predictive entropy -sum p log p of each model's probabilities, from 0 "
                   "(certain) to log K (a coin toss), one scale for every map. (Latent variance is offered "
                   "for S-BSVM and Seeger ARD, whose latent posterior is Gaussian.)")
    cols = st.columns(max(2, len(fitted)))
    for col, (name, est) in zip(cols, fitted.items()):
        with col:
            fig = ui.uncertainty_map(est, d, name, kind)
            if fig is not None:
                ui.chart(fig, key=f"cal_unc_{where}_{name}", name=_png_stem("uncertainty", where),
                         method=name)
            else:
                st.info(f"{name} has no latent Gaussian predictive, so no latent variance: choose "
                        "predictive entropy to compare it.")
    st.caption("Predictive entropy is largest near the boundary and, for a Bayesian model, where the data "
               "leave the boundary's course open (beyond its ends, in gaps); far out along a clear trend a "
               "model can stay sure. " + ("Both maps share" if len(fitted) > 1 else "The map uses")
               + f" the scale 0 to log K = {math.log(len(d.classes)):.2f} nats ({len(d.classes)} classes: "
               "every class equally likely)."
               if kind == ENTROPY else
               "Latent variance: how unsure the model is about f(x) itself; it grows away from the data.")


st.subheader("Probability maps")
if data.n_features == 2:
    maps_for(data, models, "main")
else:
    st.caption(f"The data have {data.n_features} features, so there is no single map. Train "
               + ("both models" if len(models) > 1 else "the model") + " on two chosen features to see one:")
    on = st.checkbox("Train on two chosen features for the heatmaps", key="cal_two")
    if on:
        f1, f2 = st.columns(2)
        names = data.feature_names
        a = f1.selectbox("First feature", range(len(names)), format_func=lambda j: names[j], key="cal_f1")
        b = f2.selectbox("Second feature", range(len(names)), index=1, format_func=lambda j: names[j],
                         key="cal_f2")
        if a == b:
            st.error("Choose two different features.")
        else:
            sub = data.subset([a, b])
            method = METHODS.get(meta.get("method"))
            fitted = {}
            if method is not None and method.key != "platt":
                m2 = fit_job("cal_two", method, meta.get("options", {}), sub, int(c["seed"]))
                if m2 is not None:
                    fitted[label] = m2
            p2 = platt_for(sub)
            if p2 is not None:
                fitted["PlattSVM"] = p2
            if fitted:
                maps_for(sub, fitted, "two")

st.subheader("Reliability")
curves, probas, xlabel = reliability_curves(results, data.binary)
r1, r2 = st.columns(2)
with r1:
    ui.chart(figures.reliability_figure(curves, xlabel=xlabel), key="cal_reliability", name="reliability")
    st.caption("Each point is a bin of test predictions: x = mean predicted probability, y = observed "
               "frequency, with its 90% interval (Wilson): a bin of a few points could lie anywhere along "
               "it, so only a point whose interval misses the diagonal is evidence of miscalibration; bars "
               "below show how many test points fell in each bin."
               + ("" if data.binary else " (3+ classes: confidence of the predicted class vs accuracy.)"))
with r2:
    ui.chart(figures.proba_histograms(probas, xlabel=xlabel), key="cal_hist", name="probability_histograms")
    st.caption(("Over-confident models pile up at 0 and 1" if data.binary else
                "Over-confident models pile up at 1 (the predicted class's probability)")
               + "; a Bayesian model keeps mass in between where the classes overlap.")
