"""Data page: pick a shipped sample, generate and edit a 2-D playground, or upload a CSV; choose columns,
standardisation and the split."""

import contextlib
import hashlib
import inspect

import streamlit as st

st.title("Data")  # first, before the heavier imports: a new session sees the page at once

from bsvm.samples import SAMPLES, sample_path  # noqa: E402
from dashboard import state  # noqa: E402

c = state.cfg()
# (not over the playground in presentation mode: its 4 lines pushed the canvas's lower part, its x axis and
# the refit's status below a 1280 x 720 projector's screen, a teacher's crawl)
if not (state.presenting() and c["sample"] == state.PLAYGROUND):
    st.markdown("Pick a data set to explore. The **samples** marked *truth known* were generated "
                "from a known model, so the Calibration page can show how far each method's probabilities "
                "are from the truth. The **playground** generates 2-D points with the noise you choose; "
                "click on it to add or remove points and watch the model change.")

choices = [*SAMPLES, state.PLAYGROUND, state.UPLOAD]
# short names, in both modes: in presentation mode (larger type) the long ones were cut in the box ("...
# true p(y|x) know"); and names that changed with the mode stayed as they were in the box when the mode
# was switched on ("Playground: generate and click to edit (2-D", a crawl). The caption under the box
# says whether the truth is known.
TITLES = {state.UPLOAD: "Upload a CSV...", state.PLAYGROUND: "Playground (2-D, click to edit)"}
_TRUTH = " - truth known"
left, right = st.columns([2, 3])
with left:
    state.bind(st.selectbox, "sample", "Data set", options=choices,
               format_func=lambda f: TITLES.get(f) or SAMPLES[f].title + (_TRUTH if SAMPLES[f].truth else ""),
               help="Shipped samples live in sample_data/; the playground draws from bsvm.datasets; or "
                    "upload your own CSV (one row per example, a header row, a label column and numeric "
                    "feature columns; commas, semicolons or tabs).")

# The rest imports pandas and plotly (~0.4 s in a new server's first session): after the data-set choice,
# so that a user can pick while they load.
import numpy as np  # noqa: E402

from bsvm.data import guess_label, numeric_columns, read_csv_table, scale_spread  # noqa: E402
from dashboard import figures, livechart, quickplot, ui  # noqa: E402
from dashboard.analysis import pca2, split_csv  # noqa: E402
from dashboard.runner import Job, trace  # noqa: E402

#: uploads above this size are parsed in a background job (smaller ones take well under a second)
BIG_UPLOAD = 2 * 2**20


def _parse_job(token, raw: bytes):
    token.progress(0.0, f"Parsing {len(raw) / 2**20:.1f} MB")
    notes: list[str] = []
    return read_csv_table(raw, notes), notes


with left:
    frame, notes = None, []
    if c["sample"] == state.UPLOAD:
        # the drop zone states the limit itself ("20MB per file") where Streamlit takes it per widget; the
        # label said "at most 20 MB" above a zone saying "200MB per file" (the server's default, a crawl)
        per_widget = "max_upload_size" in inspect.signature(st.file_uploader).parameters
        up = st.file_uploader("CSV file" if per_widget else f"CSV file (at most {state.MAX_UPLOAD_MB} MB)",
                              type=["csv", "txt", "tsv"], key="uploader",
                              **({"max_upload_size": state.MAX_UPLOAD_MB} if per_widget else {}))
        if up is not None:
            raw = up.getvalue()
            if len(raw) > state.MAX_UPLOAD_MB * 2**20:
                st.error(f"The file is {len(raw) / 2**20:.1f} MB; the limit is {state.MAX_UPLOAD_MB} MB. "
                         "Subsample it first.")
            else:
                digest = hashlib.sha1(raw).hexdigest()[:12]
                old = st.session_state.get("upload")
                if old is None or old["digest"] != digest:
                    st.session_state["upload"] = {"name": up.name, "bytes": raw, "digest": digest}
                    c["features"] = []
        if st.session_state.get("upload") is None:
            st.info("Upload a CSV to continue, or pick a shipped sample.")
        else:
            up = st.session_state["upload"]
            try:
                if len(up["bytes"]) <= BIG_UPLOAD:
                    frame = read_csv_table(up["bytes"], notes)
                else:  # a big file is parsed by a registry job: progress, Cancel, no frozen page
                    job = state.registry().get("csv")
                    if job is None or job.meta.get("key") != up["digest"]:
                        state.start_job("csv", Job(_parse_job, up["bytes"], label=f"Reading {up['name']}",
                                                   page="data", meta={"key": up["digest"]}))
                    parsed = state.job_view("csv", up["digest"])
                    if parsed is not None:
                        frame, notes = parsed[0], list(parsed[1])
                if frame is not None:
                    st.caption(f"Uploaded: {up['name']} ({frame.shape[0]} rows, {frame.shape[1]} columns in "
                               "the file)")
                if frame is not None and frame.shape[0] == 0:
                    # (otherwise every column read as non-numeric: "encode the features as numbers")
                    st.error(f"{up['name']} has a header line but no rows of data: upload a file with rows "
                             "under its header.")
                    frame = None
            except ValueError as exc:
                st.error(f"{up['name']} cannot be used: {exc}")
        state.bind(st.checkbox, "dropna", state.DROP_LABEL,
                   help="Rows with an empty label, or a feature that is empty, not a number (such as '?'), "
                        "infinite or beyond ±1e150 (bsvm cannot square it), are dropped instead of "
                        "refusing the file.")
        state.bind(st.checkbox, "droprare", state.DROP_RARE_LABEL,
                   help="A class with a single row cannot be fitted (a class needs 2 training rows). With "
                        "this ticked, such classes' rows are left out and the other classes are fitted. "
                        "(A class of 2 rows is kept, both as training rows: the test rows have none of "
                        "it.)")
        # what the drop did ("Dropped 3 rows ..."), beside the option (known once the data are prepared)
        drop_notes = st.container()
    elif c["sample"] == state.PLAYGROUND:
        from dashboard import playground  # imports SciPy (bsvm.datasets): only when the playground is used

        # the settings live in state.playground_settings(), not only in the widgets: Streamlit forgets a
        # widget's value once a page without it has run, and the playground (with its clicked edits) was
        # redrawn from the defaults when the user came back from the Train page
        pgc = state.playground_settings()
        names = list(playground.GENERATORS)
        gen = state.bind(st.selectbox, "gen", "Generator", store=pgc, scope="pg", options=names,
                         format_func=lambda g: playground.GENERATORS[g][0])
        _, _, noise0, (lo, hi) = playground.GENERATORS[gen]
        if gen != "blank":
            n = state.bind(st.slider, "n", "Points", store=pgc, scope="pg", min_value=state.PG_POINTS[0],
                           max_value=state.PG_POINTS[1], step=10)
            pgc.setdefault(f"noise_{gen}", float(noise0))
            noise = state.bind(st.slider, f"noise_{gen}", "Noise (standard deviation)", store=pgc, scope="pg",
                               min_value=float(lo), max_value=float(hi), step=0.01,
                               help="The generator's noise: more noise, more overlap between the classes "
                                    "and a softer true p(y|x).")
        else:
            n, noise = 0, 0.0
        settings = (gen, n, round(noise, 4), int(c["seed"]))
        if st.session_state.get("pg_settings") != settings or st.session_state.get("playground") is None:
            state.playground_draw(gen, n, noise, int(c["seed"]))
        if st.button("Start over", icon=":material/refresh:", help="Forget the clicked edits: a fresh draw."):
            state.playground_draw(gen, n, noise, int(c["seed"]))
        # the refit's toggle (filled once the data are prepared, by playground_editor): here, with the
        # playground's other settings, it left the click mode a row of its own above the canvas
        refit_slot = st.container()
        c["label"], c["features"] = "label", []
        pg = st.session_state["playground"]
        n0, n1 = pg.counts()
        st.caption(f"{len(pg.y)} point{'' if len(pg.y) == 1 else 's'} ({n0} of class 0, {n1} of class 1)"
                   + (" - an empty canvas: click to add points of either class."
                      if gen == "blank" and not len(pg.y) else
                      " - clicked points: click to add more of either class, or to remove one."
                      if gen == "blank" else
                      " - edited: the generator's true p(y|x) no longer describes them, and moving Points or "
                      "Noise draws afresh (the edits are lost)." if pg.edited else
                      " - a draw of the generator: its true p(y|x) is known.")
                   + " A link to this page reopens the generator, points, noise and seed, not the edits.")
        frame = pg.loaded().frame
    else:
        sample = SAMPLES[c["sample"]]
        st.caption(sample.description)
        frame = read_csv_table(sample_path(c["sample"]))
    for note in notes:
        st.info(note, icon=":material/info:")

    if frame is not None and c["sample"] != state.PLAYGROUND:
        columns = [str(col) for col in frame.columns]
        if c["label"] not in columns:
            guess = guess_label(frame)
            # a shipped sample has its own label column: picking one after an upload whose label was
            # called otherwise said "guessed: the earlier choice, 'klasse', is not a column" (a crawl)
            if c["sample"] == state.UPLOAD or guess != state.DEFAULTS["label"]:
                why = (f"there is no column called {c['label']!r}" if c["label"] == state.DEFAULTS["label"]
                       else f"the earlier choice, {c['label']!r}, is not a column of this data")
                st.info(f"Label column: {guess!r} (guessed: {why}). Pick the right column below if that "
                        "is wrong.", icon=":material/info:")
            c["label"] = guess
        state.bind(st.selectbox, "label", "Label column", options=columns,
                   help="The column holding the class of each row (any values: numbers or names).")
        numeric = numeric_columns(frame, c["label"])
        skipped = [col for col in columns if col != c["label"] and col not in numeric]
        if not numeric:
            st.error("This table has no numeric feature columns besides the label: encode the features as "
                     "numbers (e.g. one-hot) and upload again.")
        elif skipped:
            st.caption(f"Not numeric, so not offered as features: {', '.join(skipped)}.")
        c["features"] = [f for f in c["features"] if f in numeric]
        state.bind(st.multiselect, "features", "Feature columns (empty = all numeric but a row number)",
                   options=numeric,
                   help="Pick exactly two features to see probability heatmaps of the raw features. The "
                        "true p(y|x) of a generated sample is drawn only with all its columns in order.")
    if frame is not None:
        # (the label's "(training mean 0, standard deviation 1)" was cut off in the column at 1280 px)
        state.bind(st.checkbox, "std", "Standardise features",
                   help="Each feature to mean 0 and standard deviation 1 on the training rows (the test rows "
                        "with the same shift and scale). Recommended: kernels use one length scale for all "
                        "features.")
        state.bind(st.slider, "test", "Test fraction", min_value=state.TEST_RANGE[0],
                   max_value=state.TEST_RANGE[1], step=0.05,
                   help="Held-out rows for the Calibration and Compare pages (stratified split; "
                        "**Download the split** under the chart lists which rows).")
        state.bind(st.number_input, "seed", "Seed", min_value=0, max_value=state.SEED_MAX, step=1,
                   help="Seeds the split and every method (and the playground's draw), so a shared link "
                        "reproduces the same run.")

# A refused upload's error ("missing values in 4 of 120 rows ... Tick Drop rows ...", "Too few rows")
# is said at the top of the right column, where the data's chart would be: under the left column's
# controls it came below the fold at 1280x720, beside an empty right half (a crawl). The playground's
# hint keeps its place (its canvas fills the right column).
with right if c["sample"] != state.PLAYGROUND else contextlib.nullcontext():
    data = state.current_data() if frame is not None else None
if data is not None and c["sample"] == state.UPLOAD:
    with drop_notes:
        # "Dropped 3 rows with missing values ...", "Left out class C (1 row) ..."
        for note in [*st.session_state.get("_load_notes", []), *data.notes]:
            st.info(note, icon=":material/filter_alt:")


def playground_editor(data, slot) -> None:
    """The clickable canvas: a click adds a point of the chosen class or removes the nearest point; the
    refitted model's p(y|x) is drawn under the points (``ui.playground_map``); ``slot``: where the refit's
    toggle goes (the left column, with the playground's settings)."""
    from dashboard import playground

    pg = st.session_state["playground"]
    mode = st.radio("Click to", [playground.ADD_0, playground.ADD_1, playground.REMOVE], horizontal=True,
                    key="pg_mode", format_func=lambda m: m.capitalize())
    with slot:
        refit = ui.playground_refit(data) if data is not None else None
    n_edit = st.session_state.get("pg_edits", 0)
    points = playground.click_grid(pg)
    shown = ui.playground_map(data, refit, points)
    title = "Click to edit (raw coordinates)"
    kw = {}
    if shown is not None:
        raw, _, faded = shown
        title = f"Click to edit: {refit[1]}'s p(y = 1 | x)" + (" (refitting...)" if faded else "")
        kw = {"proba": raw.proba, "truth": raw.truth, "overlay": raw.overlay,
              "overlay_name": raw.overlay_name, "faded": faded}
    fig = figures.playground_figure(pg.X, pg.y, points, classes=(0, 1), title=title, **kw)
    shown_fig = ui.styled(fig)
    if ui.presenting():
        # presentation mode grows a figure by its legend's entries: the canvas's plot then changed size
        # when the map came (its contours' entry) and after the first edit (gone), moving the points from
        # under the cursor (a review); room for the most entries (4: classes, truth, the method's points)
        extra = ui.LEGEND_LINE_PX * 2
        shown_fig.update_layout(height=fig.layout.height + extra, margin_b=fig.layout.margin.b + extra)
    # every click, queued in the browser (livechart.click_chart): a selection event carried only the newest,
    # and clicks made while the page reran after an edit were lost (3-4 points added of 10 clicks)
    clicks = livechart.click_chart(shown_fig, "pg_canvas", config={"displayModeBar": False})
    if clicks is None:  # (another Streamlit: the selection event, one click per rerun)
        event = st.plotly_chart(shown_fig, key=f"pg_canvas_{n_edit}", on_select="rerun",
                                selection_mode="points", config={"displayModeBar": False})
        clicks = [(float(p["x"]), float(p["y"])) for p in
                  (event.get("selection", {}).get("points", []) if event else [])[:1]]
    if clicks:  # (applied and kept before any element: a rerun cutting in there would lose them)
        edited = pg
        for x, y in clicks:
            before, edited = edited, playground.edit(edited, x, y, mode)
            missed = edited is before
        st.session_state["_pg_missed"] = missed
        st.session_state["playground"] = edited
        st.session_state["pg_edits"] = n_edit + 1  # (a new key clears the fallback's selection)
        st.rerun()
    if st.session_state.pop("_pg_missed", False):
        # (a remove click with no point near it did nothing, and nothing said why)
        st.toast("No point near that click: click on a point to remove it.", icon=":material/touch_app:")
    ui.playground_status(refit, shown)
    # (not for a faded map: it is the previous edit's model under this edit's points, a review)
    if shown is not None and not shown[2]:  # (the picture's title says what it shows, not "Click to edit")
        # (575 x 460 px with a 70 px blank band above the legend was small for a slide, a teacher's crawl:
        # the canvas keeps room for two legend rows so that its plot does not move; a picture need not)
        export = type(fig)(fig).update_layout(title_text=f"{refit[1]}: p(y = 1 | x)", width=720, height=540,
                                              margin_b=90)
        export.update_traces(showscale=True, selector={"type": "heatmap"})
        ui.png_button(lambda: ui.styled(export), "pg_canvas_png", "playground_map", method=refit[1])


with right:
    if c["sample"] == state.PLAYGROUND and st.session_state.get("playground") is not None:
        playground_editor(data, refit_slot)
    elif data is not None:
        d = data.n_features
        X_all = np.vstack([data.X_train, data.X_test])
        y_all = np.concatenate([data.y_train, data.y_test])
        if d == 1:
            X2, axes = np.column_stack([X_all[:, 0], np.zeros(len(X_all))]), (data.axis_names[0], "")
        elif d == 2:
            X2, axes = X_all, tuple(data.axis_names)
        else:
            X2, var = pca2(X_all)
            axes = (f"PC1 ({var[0]:.0%} of variance)", f"PC2 ({var[1]:.0%})")
        title = "All rows" + (" (first two principal components)" if d > 2 else "")
        # inline SVG, not Plotly: shown with the page's first paint (see dashboard/quickplot.py)
        ui.svg_chart(quickplot.scatter_svg(X2, y_all, data.classes, axes, title), "data_scatter",
                     lambda: figures.data_scatter(X2, y_all, data.classes, axes, title))
        trace("data_chart")  # the first chart is queued (the start-up benchmark's breakdown)
    if data is not None:
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("training rows", len(data.y_train))
        m2.metric("test rows", len(data.y_test))
        m3.metric("features", data.n_features)
        m4.metric("classes", len(data.classes))
        if c["sample"] != state.PLAYGROUND:
            # which rows are test rows: the split is the dashboard's own, so a user could not reproduce
            # the Compare and Calibration numbers in their own code (a crawl)
            st.download_button("Download the split (CSV)", data=lambda: split_csv(data),
                               file_name=f"split_seed{int(c['seed'])}_test{float(c['test']):g}.csv",
                               mime="text/csv", icon=":material/download:", key="split_csv",
                               on_click="ignore",
                               help="One line per row used: its number among the file's data rows (1 = the "
                                    "first row under the header), train or test, and its label. The split "
                                    "is stratified by class and seeded by Seed (the dashboard's own, not "
                                    "scikit-learn's train_test_split).")
        constant = [name for name, spread in zip(data.feature_names, np.ptp(data.X_train, axis=0))
                    if spread == 0]
        if constant:  # (a user's CSV with an ID-like or unit column: kept, but worth knowing)
            st.caption(f"Constant on the training rows, so no method can learn from "
                       f"{'it' if len(constant) == 1 else 'them'}: {', '.join(map(str, constant))}.")
        if not c["std"]:
            # (a crawl: a 1e6-scale column left three methods at chance level, and this page, whose PCA
            # read "PC1 (100% of variance)", said nothing; the methods' warnings came only after a fit)
            sd = data.X_train.std(axis=0)
            if (pair := scale_spread(sd)) is not None:
                lo, hi = pair
                st.warning(f"The features' scales differ by a factor of {sd[hi] / sd[lo]:.3g} (standard "
                           f"deviation {sd[lo]:.3g} in '{data.feature_names[lo]}', {sd[hi]:.3g} in "
                           f"'{data.feature_names[hi]}'): a kernel's one length scale, or one prior on every "
                           "weight, would let the widest columns decide alone. Tick **Standardise features** "
                           "above.", icon=":material/straighten:")
        if c["sample"] != state.PLAYGROUND:
            counts = [int(np.sum(data.y_train == k)) for k in data.classes]
            balance = "Class balance (training rows)"
            ui.svg_chart(quickplot.bars_svg([str(k) for k in data.classes], counts, balance), "data_balance",
                         lambda: figures.class_balance(data.y_train, data.classes, balance))
        if data.truth:
            st.success("True p(y|x) known for this data: the Calibration page draws its contours and "
                       "measures each method's deviation from it.")
        elif c["sample"] in SAMPLES and SAMPLES[c["sample"]].truth:
            st.info("This sample's true p(y|x) is a function of all its columns in their order: with a "
                    "subset or another order of the features (or another label column) it is not drawn.")
        if not data.binary:
            from dashboard.methods import METHODS  # (names only: no estimator is imported)

            hidden = [m.short_name for m in METHODS.values() if m.binary_only]
            offered = [m.short_name for m in METHODS.values() if not m.binary_only]
            st.info(f"{len(data.classes)} classes: the two-class methods ({', '.join(hidden)}) are "
                    f"hidden; {', '.join(offered[:-1])} and {offered[-1]} handle them (or pick a two-class "
                    "data set).")
        st.page_link("views/train.py", label="Next: train a model", icon=":material/arrow_forward:")
