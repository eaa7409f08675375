"""Compare page: every applicable method on the current split, one table and one grid of maps."""

import numpy as np
import streamlit as st

from dashboard import figures, state, ui
from dashboard.analysis import evaluate, make_grid, metrics_csv
from dashboard.methods import METHODS
from dashboard.runner import RUNNING, LiveRun

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
quick = st.toggle("Quick settings (fewer iterations than the library's defaults)", value=True,
                  key="cmp_quick", help="Caps every method's iterations so the comparison takes seconds; "
                                        "off, every method runs with the options chosen on the Train page "
                                        "(the library's defaults unless changed).")
if quick:
    changes = [f"{m.label.split(' (')[0]}: {m.fast_note()}" for m in methods if m.fast_note()]
    if changes:
        st.caption("Quick settings deviate from the library's defaults for speed: " + "; ".join(changes)
                   + ". Switch them off for the defaults.")
st.caption("Methods: " + ", ".join(m.label for m in methods))
ui.import_problems(load=True)
if not data.binary:
    skipped = [m.label for m in METHODS.values() if m.available and m.binary_only]
    if skipped:
        st.caption(f"Skipped (two classes only; this data set has {len(data.classes)}): "
                   + ", ".join(skipped))

if st.button("Run all methods", type="primary", icon=":material/play_arrow:"):
    results = {}
    for m in methods:
        opts = state.method_options(m.key)
        bar = st.progress(0.0, text=f"{m.label}: starting")
        est = ui.safe(m.make, dict(opts), int(c["seed"]), fast=quick, what=f"Setting up {m.label}")
        if est is None:
            continue
        cap = m.cap({**opts, **(m.fast if quick else {})})
        r = LiveRun(est, data.X_train, data.y_train, max_iter=cap, status=RUNNING)
        while r.status == RUNNING:
            r.advance(0.2)
            bar.progress(r.fraction, text=f"{m.label}: iteration {r.iteration} ({r.status})")
        if r.error:
            st.error(f"{m.label} failed: {r.error}")
            continue
        bar.progress(1.0, text=f"{m.label}: done in {r.history[-1].elapsed:.2f} s")
        res = ui.safe(evaluate, est, data, what=f"Evaluating {m.label}")
        if res is not None:
            results[m.label] = {"est": est, "report": res["report"], "time": r.history[-1].elapsed}
    st.session_state["compare"] = {"key": data.key, "results": results}

saved = st.session_state.get("compare")
if saved and saved["key"] == data.key and saved["results"]:
    res = saved["results"]
    st.subheader("Test-set metrics")
    table = figures.metrics_table({k: v["report"] for k, v in res.items()},
                                  {k: v["time"] for k, v in res.items()})
    st.dataframe(table.style.format("{:.4f}").highlight_min(
        subset=[col for col in table.columns if col not in ("AUC", "fit time (s)")], color="#c8e6c9"))
    st.download_button("Metrics (CSV)", data=metrics_csv(table), file_name="compare_metrics.csv",
                       mime="text/csv", icon=":material/download:", on_click="ignore", key="cmp_metrics_csv")
    if data.n_features == 2:
        grid = make_grid(np.vstack([data.X_train, data.X_test]), 50)
        maps = {}
        for name, v in res.items():
            p = ui.safe(v["est"].predict_proba, grid.points, what=f"Prediction of {name}")
            if p is not None:
                maps[name] = p
        X, y = ui.shown_points(data, 400)
        label = (f"p(y = {data.classes[1]} | x)" if data.binary else
                 "predicted class (colour) and its probability (opacity)")
        ui.chart(figures.heatmap_grid(maps, grid, X, y, data.classes, subtitle=label), key="cmp_grid")
    else:
        st.caption("Maps need exactly two features (choose two on the Data page).")
elif saved and saved["key"] != data.key:
    st.info("The data changed since the last comparison: run it again.")
