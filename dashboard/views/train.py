"""Train page: run a method live, in chunks between redraws, with start / pause / step / stop / continue."""

import streamlit as st

from dashboard import figures, state, ui
from dashboard.methods import SEED_HELP
from dashboard.runner import (
    CHUNK_SECONDS,
    DONE,
    FAILED,
    IDLE,
    MAP_GRID,
    PAUSED,
    REDRAW_SECONDS,
    RUNNING,
    STOPPED,
    LiveRun,
)

st.title("Train")
data = state.require_data()
if data is None:
    st.stop()
method, available = state.method_for(data)
if method is None:
    st.error("No method can run on this data set.")
    st.stop()

note_slot = st.empty()  # filled once the method selectbox has taken the user's choice
c = state.cfg()
run: LiveRun | None = st.session_state.get("run")
meta = st.session_state.get("run_meta", {})
if run is not None and meta.get("data_key") != data.key:
    st.warning("The data changed since this run started: press **Reset** and start again.")
live = run is not None and run.status == RUNNING

left, right = st.columns([1, 3])
with left:
    keys = [m.key for m in available]
    c["method"] = method.key
    state.bind(st.selectbox, "method", "Method", options=keys,
               format_func=lambda k: next(m.label for m in available if m.key == k),
               help="Methods that cannot handle this data set (e.g. binary-only methods on 3 classes) are "
                    "hidden. Each is a scikit-learn estimator in the bsvm package.", disabled=live)
    method = next(m for m in available if m.key == c["method"])
    note = state.fallback_note(data, method)
    if note:
        note_slot.warning(note, icon=":material/info:")
    with st.expander("What am I looking at?", expanded=run is None):
        st.markdown(method.summary)
        st.markdown(f"**What good looks like:** {method.good}")
    st.subheader("Options")
    opts = ui.option_widgets(method, disabled=live)
    st.caption("Changed options take effect at the next **Start**.")
    st.caption(SEED_HELP)


def new_run() -> LiveRun | None:
    est = ui.safe(method.make, dict(opts), int(c["seed"]), what=f"Setting up {method.label}")
    if est is None:
        return None
    r = LiveRun(est, data.X_train, data.y_train, max_iter=method.cap(opts))
    st.session_state["run"] = r
    st.session_state["run_meta"] = {"method": method.key, "label": method.label, "options": dict(opts),
                                    "data_key": data.key}
    return r


with right:
    b = st.columns(6)
    status = run.status if run is not None else IDLE
    if b[0].button("Start", type="primary", icon=":material/play_arrow:", disabled=live,
                   help="Start a new run with the options on the left."):
        if run is not None:
            run.stop()
        run = new_run()
        if run is not None:
            run.status = RUNNING
            st.rerun()
    if b[1].button("Pause", icon=":material/pause:", disabled=not live, help="Pause; Continue resumes."):
        run.status = PAUSED
        st.rerun()
    if b[2].button("Step", icon=":material/skip_next:", disabled=live or status in (DONE, STOPPED, FAILED),
                   help="Advance by one progress record, then pause."):
        run = run if run is not None else new_run()
        if run is not None:
            run.step()
    if b[3].button("Stop", icon=":material/stop:", disabled=status not in (RUNNING, PAUSED),
                   help="End the run now; the model keeps the state it reached (usable on other pages)."):
        run.stop()
        st.rerun()
    if b[4].button("Continue", icon=":material/resume:", disabled=status != PAUSED,
                   help="Resume a paused run."):
        run.status = RUNNING
        st.rerun()
    if b[5].button("Reset", icon=":material/restart_alt:", disabled=run is None,
                   help="Forget the run and its model."):
        run.stop()
        st.session_state.pop("run", None)
        st.session_state.pop("run_meta", None)
        st.rerun()

    st.toggle("Slow motion", key="slow_motion",
              help="One progress record per redraw (about five a second), so a class can follow the run "
                   "step by step; off, the method runs at full speed between redraws.")

    @st.fragment(run_every=REDRAW_SECONDS if live else None)
    def live_view():
        r: LiveRun | None = st.session_state.get("run")
        if r is None:
            st.info("Press **Start** to fit, or **Step** to advance one record at a time.")
            return
        if r.status == RUNNING:
            r.advance(CHUNK_SECONDS, max_records=1 if st.session_state.get("slow_motion") else None)
        if r.status == FAILED:
            st.error(f"The run failed: {r.error}")
        total = f" / {r.max_iter}" if r.max_iter else ""
        st.progress(r.fraction, text=f"{r.status}: iteration {r.iteration}{total} - "
                                     f"{r.rate:,.0f} it/s - {r.wall:.1f} s")
        hist = r.history
        g1, g2 = st.columns(2)
        with g1:
            st.plotly_chart(figures.objective_curve(hist), key="live_objective")
        groups = figures.split_metrics(figures.metric_names(hist)) if hist else {}
        with g2:
            if groups.get("hyper"):
                st.plotly_chart(figures.metric_curves(hist, groups["hyper"], "Hyperparameters", log_y=True,
                                                      feature_names=data.feature_names), key="live_hyper")
            elif groups.get("sampler") or groups.get("other"):
                names = groups.get("sampler") or groups.get("other")
                st.plotly_chart(figures.metric_curves(hist, names[:4], "Sampler statistics",
                                                      separate_axes=True), key="live_stats")
            else:
                st.plotly_chart(figures.empty_figure(figures.no_stats_message(method.kind)), key="live_hyper")
        g3, g4 = st.columns(2)
        with g3:
            st.plotly_chart(figures.snapshot_traces(hist), key="live_traces")
        with g4:
            if data.n_features == 2 and r.fitted:
                fig = ui.proba_map(r.estimator, data, "Live map", n=MAP_GRID)
                if fig is not None:
                    st.plotly_chart(fig, key="live_map")
            elif data.n_features != 2:
                ard = figures.ard_weights(hist, feature_names=data.feature_names)
                if ard is not None:   # with many inputs, which of them the kernel uses is the live view
                    st.plotly_chart(ard, key="live_ard")
                st.info("The live probability map needs exactly two features: choose two on the Data page "
                        "(or use the Calibration page's two-feature option).")
        if r.status != RUNNING and live:
            st.rerun(scope="app")  # the run ended inside the fragment: redraw the buttons, stop re-running

    live_view()
