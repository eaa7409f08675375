"""Compare page: every applicable method on the current split, one table and one grid of maps."""

import math
import warnings

import numpy as np
import streamlit as st

from bsvm.data import DataScaleWarning
from dashboard import figures, state, ui
from dashboard.analysis import (
    cost_range,
    evaluate,
    fit_note,
    metrics_csv,
    page_warning,
    record_fraction,
    seconds_range,
)
from dashboard.methods import METHODS
from dashboard.procrun import FINAL_DRAWS, map_model, thinned
from dashboard.runner import Cancelled, CheckedModel, Job

st.title("Compare")
st.markdown("Runs every method that applies to this data set on the same split, each with the options you "
            "chose on the Train page (or its defaults), and puts their test metrics and maps side by side. "
            "**Good** looks like: low error *and* low log loss / ECE; for the samples with a known truth, "
            "the smallest deviation from the true probabilities.")
data = state.require_data()
if data is None:
    st.stop()
c = state.cfg()
_, methods = state.method_for(data)
#: Quick settings start on only when every method at its chosen options is estimated (bsvm.cost, which
#: errs high: about 12 s for the Ripley sample's 175 rows, which take 3-4 s) to take longer than this: on
#: the small samples the comparison then shows converged fits at the library's defaults, not a warning
#: that every fit is unfinished
QUICK_ABOVE_SECONDS = 60.0
#: with Quick settings on, only a method estimated (high end of its range) above this is capped: S-BSVM's
#: 0.3 s default fit on 5,000 rows capped at 60 steps and 20 inducing points lost to PlattSVM on every
#: column, which it beats at its defaults (Brier .1687 against .1752, a crawl)
QUICK_METHOD_SECONDS = 10.0


def _estimated_seconds(methods, data, seed: int) -> tuple[float, float, float, dict]:
    """bsvm.cost's estimate of every method's fit at its chosen options, summed: (estimate, low, high)
    seconds, the range widened for the samplers that run to their stopping rule as the Train page widens
    it (``analysis.cost_range``; one without an estimate counts 0), and each method's high end. (The
    estimate alone said "about 8 seconds" for a 3-class comparison that took 15.5 s: a crawl.)"""
    n, d, k = len(data.y_train), data.n_features, len(data.classes)
    total = lo = hi = 0.0
    each = {}
    for m in methods:
        try:
            est = m.make(dict(state.method_options(m.key)), seed, n_classes=k)
            if hasattr(est, "estimate_cost"):
                cost = est.estimate_cost(n, d, k)
                a, b = cost_range(cost)
                if np.isfinite(a) and np.isfinite(b):
                    total, lo, hi = total + float(cost.seconds), lo + a, hi + b
                    each[m.key] = b
        except Exception:  # noqa: BLE001 - an estimate that fails must not block the page
            pass
    return total, lo, hi, each


def _quick_chosen() -> None:
    # the choice itself, kept apart: Streamlit forgets a widget's own state when another page runs
    st.session_state["_cmp_quick_choice"] = bool(st.session_state["cmp_quick"])


estimated, estimated_lo, estimated_hi, each_hi = _estimated_seconds(methods, data, int(c["seed"]))
chosen = st.session_state.get("_cmp_quick_choice")  # the user's own choice is kept; else the data decide
st.session_state["cmp_quick"] = chosen if chosen is not None else estimated > QUICK_ABOVE_SECONDS
quick = st.toggle("Quick settings (fewer iterations than the library's defaults)", key="cmp_quick",
                  on_change=_quick_chosen,
                  help=f"Caps the iterations of the methods estimated at more than "
                       f"{QUICK_METHOD_SECONDS:.0f} s, so the comparison takes less long (the others run "
                       "at their options); off, every method runs with the options chosen on the Train "
                       "page (the library's defaults unless changed). On by default only when the whole "
                       f"comparison is estimated at more than {QUICK_ABOVE_SECONDS:.0f} s.")
if chosen is None:
    st.caption(f"Every method at its chosen options: {seconds_range(estimated_lo, estimated_hi)} on these "
               f"{len(data.y_train):,} rows by the sum of their cost estimates (a sampler runs until its "
               "stopping rule is met: one that mixes slowly takes longer). "
               + (f"Over {QUICK_ABOVE_SECONDS:.0f} s, so Quick settings start on." if quick else
                  f"Under {QUICK_ABOVE_SECONDS:.0f} s, so Quick settings start off: each method runs to its "
                  "own stopping rule."))
# the methods Quick settings cap: the slow ones only (a fast method capped only loses accuracy)
capped = frozenset(m.key for m in methods
                   if quick and m.fast_note() and each_hi.get(m.key, math.inf) > QUICK_METHOD_SECONDS)
if quick:
    changes = [f"{m.short_name}: {m.fast_note()}" for m in methods if m.key in capped]
    if changes:
        st.caption("Quick settings deviate from the library's defaults for speed: " + "; ".join(changes)
                   + f". The methods estimated at {QUICK_METHOD_SECONDS:.0f} s or less run at their "
                   "options. Switch Quick settings off for the defaults.")
    else:
        st.caption(f"Quick settings change nothing here: every method is estimated at "
                   f"{QUICK_METHOD_SECONDS:.0f} s or less and runs at its options.")
st.caption("Methods: " + ", ".join(m.label for m in methods))
ui.import_problems(load=True)
if not data.binary:
    skipped = [m.label for m in METHODS.values() if m.available and m.binary_only]
    if skipped:
        st.caption(f"Skipped (two classes only; this data set has {len(data.classes)}): "
                   + ", ".join(skipped))

def compare_job(token, methods, options, data, seed, capped=frozenset(), grid=None):
    """Fit every method to the end (in the session's job registry: progress, Cancel), then evaluate, and
    predict each one's map on ``grid`` (2-D data) here, not in the page: the page predicted every map at
    every rerun, in its script run (MS-BPM on 5 classes: minutes, the page greyed out after the table).
    A sampler's map averages over about ``FINAL_DRAWS`` of its draws (fewer if they would take long:
    ``procrun.map_model``), as the Train page's (its metrics over every draw). ``capped``: the keys of
    the methods Quick settings cap (their ``Method.fast`` options)."""
    results, errors = {}, {}

    def outcome() -> dict:
        return {"key": data.key, "results": dict(results), "errors": dict(errors), "quick": bool(capped)}

    for k, m in enumerate(methods):
        opts = options[m.key]
        name = m.run_label(opts)  # (which sampler ran: "Subgradient MCMC (HMC, SGLD, SGNHT)" did not say)
        fast = m.key in capped  # (Quick settings cap the slow methods only)
        # the method's name from its start: a fit whose first record came 16 s in (MS-BPM on 5,000 rows)
        # ran under the previous method's "its map and notes" (a crawl)
        token.progress(k / len(methods), f"{name} ({k + 1}/{len(methods)}): fitting")
        try:
            est = m.make(dict(opts), seed, fast=fast, n_classes=len(data.classes))
            cap = m.cap({**opts, **(m.fast if fast else {})})
            # the fit's scale warning went to the server's log only, and the page said "It found no
            # pattern" beside a chance-level fit on unstandardised columns (a crawl)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", DataScaleWarning)
                frac = 0.0
                for rec in est.fit_iter(data.X_train, data.y_train):
                    # (a sampler run to its stopping rule sat at half its share: its checks now count)
                    frac = record_fraction(rec, cap, frac)
                    token.progress((k + frac) / len(methods), f"{name} ({k + 1}/{len(methods)}): "
                                                              f"iteration {rec.iteration}")
            scale = next((str(w.message) for w in caught if issubclass(w.category, DataScaleWarning)), "")
            # (the work after the fit checks Cancel every few hundred rows: runner.CheckedModel)
            res = evaluate(CheckedModel(est, token), data)
            after = "its map and notes" if grid is not None else "its notes"
            token.progress((k + 1) / len(methods), f"{name} ({k + 1}/{len(methods)}): {after}")
            some = CheckedModel(thinned(est, FINAL_DRAWS)[0], token)
            note = fit_note(some, data.X_train, data.y_train,
                            retry="on the Train page and run all methods again", scaled_badly=bool(scale))
            token.check()  # (fit_note reads a failed prediction, Cancel's included, as "no note")
            if scale:
                note = f"It warned: {page_warning(scale, data.feature_names)}" + (f" {note}" if note else "")
            proba = None
            if grid is not None:
                try:
                    proba = CheckedModel(map_model(est, grid.points)[0], token).predict_proba(grid.points)
                except Cancelled:
                    raise
                except Exception as exc:  # noqa: BLE001 - the metrics stand; the map is left out, said
                    errors[f"{name}'s map"] = f"{type(exc).__name__}: {exc}"
        except Cancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - one failing method must not end the comparison
            errors[name] = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            continue
        results[name] = {"settings": m.options_note({**opts, **(m.fast if fast else {})})
                         + (" (Quick settings)" if fast else ""),
                         "est": est, "report": res["report"], "time": est.history_[-1].elapsed,
                         "converged": _convergence(est), "note": note, "map": proba, "capped": fast}
        # (kept for a Cancel: the methods finished so far are shown, marked as a partial comparison)
        token.partial = {**outcome(), "partial": (k + 1, len(methods))}
    return outcome()


def _running() -> bool:
    """Whether the page's comparison job is running."""
    job = state.registry().get("compare")
    return job is not None and job.status == "running"


def _convergence(est) -> tuple[str, str]:
    """("yes" | "no" | "-", why): "-" for a method without a convergence test (PlattSVM); why a fit did
    not converge: what its last check failed (samplers), else its iteration budget."""
    conv = getattr(est, "converged_", None)
    if conv is None:
        return "-", ""
    if conv:
        return "yes", ""
    status = getattr(est, "convergence_", None)
    return "no", status.explain() if status is not None else "its iteration budget ran out"


if st.button("Run all methods", type="primary", icon=":material/play_arrow:"):
    options = {m.key: dict(state.method_options(m.key)) for m in methods}
    grid = ui.map_grid(data)[0] if data.n_features == 2 else None  # (the Calibration page's grid)
    state.start_job("compare", Job(compare_job, methods, options, data, int(c["seed"]), capped, grid,
                                   label="Comparison", page="compare", meta={"data_key": data.key,
                                                                             "key": data.key}))
done = state.job_view("compare", data.key, retry=False)  # ("Run all methods" above starts it again)
if done is not None and st.session_state.get("compare") is not done:
    st.session_state["compare"] = done
job = state.registry().get("compare")
if done is None and job is not None and job.status == "cancelled" and job.meta.get("key") == data.key:
    kept = job.token.partial
    if kept is not None and kept["results"] and st.session_state.get("compare") is not kept:
        st.session_state["compare"] = kept
for name, err in (done or {}).get("errors", {}).items():
    st.error(f"{name} failed: {err}")

saved = st.session_state.get("compare")
if saved and saved["key"] == data.key and saved["results"]:
    res = saved["results"]
    st.subheader("Test-set metrics")
    if saved.get("partial"):
        n_done, n_all = saved["partial"]
        st.caption(f"A partial comparison: cancelled after {n_done} of {n_all} methods; the table shows the "
                   "finished ones. **Run all methods** runs every one again.")
    table = figures.metrics_table({k: v["report"] for k, v in res.items()},
                                  {k: v["time"] for k, v in res.items()})
    numeric = list(table.columns)
    table["converged"] = [res[k].get("converged", ("-", ""))[0] for k in table.index]
    # the methods by their short names (the list above has the long ones): with the long ones the index
    # took a third of the width and, in presentation mode at 1280 px, pushed "converged" out of sight
    long_names = list(table.index)
    table.index = [k.split(" (")[0].split(" / ")[0] for k in long_names]
    table.index.name = "method"
    # the best of each column shaded among the fits that finished (an unconverged fit's figures are of an
    # unfinished fit: shading them as the best said the wrong thing when Quick settings cut every run short)
    finished = [k for k in table.index if table.loc[k, "converged"] != "no"]
    styled = table.style.format("{:.4f}", subset=numeric)
    if len(finished) >= 2:  # one qualifying fit (Quick settings: only the baseline) is no comparison
        styled = styled.apply(figures.shade_best, higher=("AUC",),
                              subset=(finished, [col for col in numeric if col != "fit time (s)"]))
    st.dataframe(styled)
    if not data.binary:  # (as the Calibration page says: not scikit-learn's multi-class Brier)
        st.caption("Brier with 3+ classes: the squared errors summed over the classes, halved (equal to the "
                   "two-class form; scikit-learn's multi-class brier_score_loss is twice it). AUC: "
                   "one-vs-rest, averaged over the classes (scikit-learn's roc_auc_score with "
                   "multi_class='ovr').")
    n_test = len(data.y_test)
    # (a teacher's crawl: MS-BPM's 0.1067 shaded the winner over 0.1200 on 75 test rows, one row apart,
    # while the Calibration page calls such a gap noise)
    noise = (f" On {n_test:,} test rows one row is {100 / n_test:.1f} points of error: a difference of a "
             "few rows is within noise (the Calibration page compares two models row by row, with 95 % "
             "intervals).")
    if len(finished) < len(table):
        st.caption("Green: the best value of each column among the converged fits"
                   + (" (none converged, so none is shaded)." if not finished else
                      f" (only {finished[0]} converged, so none is shaded: there is nothing to compare it "
                      "with)." if len(finished) == 1 else "." + noise))
    elif len(finished) >= 2:
        st.caption("Green: the best value of each column." + noise)
    unconverged = [f"{k.split(' (')[0]} ({res[k]['converged'][1]})" for k in long_names
                   if res[k].get("converged", ("-", ""))[0] == "no"]
    if unconverged:
        st.warning("Not converged, so these figures are of unfinished fits: " + "; ".join(unconverged) + "."
                   + (" Switch Quick settings off to run every method to its defaults." if saved.get("quick")
                      else ""), icon=":material/warning:")
    for k in long_names:
        if res[k].get("note"):
            st.info(f"**{k.split(' (')[0]}**: {res[k]['note']}", icon=":material/lightbulb:")
    # the file says what each row was fitted with and on which rows (a crawl's file held Quick settings'
    # 20-draw MS-BPM with nothing to say so)
    csv_table = table.copy()
    csv_table["settings"] = [res[k].get("settings", "") for k in long_names]
    csv_table["test rows"], csv_table["split seed"] = n_test, int(c["seed"])
    csv_table["test fraction"] = float(c["test"])
    st.download_button("Metrics (CSV)", data=metrics_csv(csv_table),
                       file_name=ui.file_name("compare_metrics"), mime="text/csv",
                       icon=":material/download:", on_click="ignore", key="cmp_metrics_csv",
                       help="The table, with each method's settings and the split (test rows, seed, test "
                            "fraction; the Data page's **Download the split** lists the rows).")
    if data.n_features == 2:
        grid, true_p = ui.map_grid(data)  # the Calibration page's grid and extent (and its cached truth)
        maps = {name: v["map"] for name, v in res.items() if v.get("map") is not None}
        X, y = ui.shown_points(data, 400)
        label = (f"p(y = {data.classes[1]} | x)" if data.binary else
                 "predicted class (colour) and its probability (opacity)")
        ui.chart(figures.heatmap_grid(maps, grid, X, y, data.classes, subtitle=label,
                                      truth=true_p,
                                      axis_titles=data.axis_names), key="cmp_grid")
    else:
        st.caption("Maps need exactly two features (choose two on the Data page).")
elif saved and saved["key"] != data.key and not _running():
    # (not while the new comparison runs: it said "run it again" beside the bar of that very run, a crawl)
    st.info("The data changed since the last comparison: run it again.")
