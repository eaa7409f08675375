"""Data page: pick a shipped sample or upload a CSV, choose columns, standardisation and the split."""

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from bsvm.data import read_csv_table
from bsvm.samples import SAMPLES, sample_path
from dashboard import figures, state
from dashboard.analysis import pca2
from dashboard.runner import Job

#: uploads above this size are parsed in a background job (smaller ones take well under a second)
BIG_UPLOAD = 2 * 2**20


def _parse_job(token, raw: bytes):
    token.progress(0.0, f"Parsing {len(raw) / 2**20:.1f} MB")
    return read_csv_table(raw)


st.title("Data")
st.markdown("Pick a data set to explore. The **samples** marked *true p(y|x) known* were generated from a "
            "known model, so the Calibration page can show how far each method's probabilities are from "
            "the truth.")

c = state.cfg()
choices = [*SAMPLES, state.UPLOAD]
left, right = st.columns([2, 3])
with left:
    state.bind(st.selectbox, "sample", "Data set", options=choices,
               format_func=lambda f: "Upload a CSV..." if f == state.UPLOAD else SAMPLES[f].title,
               help="Shipped samples live in sample_data/; or upload your own CSV (one row per example, a "
                    "header row, a label column and numeric feature columns).")
    frame = None
    if c["sample"] == state.UPLOAD:
        up = st.file_uploader(f"CSV file (at most {state.MAX_UPLOAD_MB} MB)", type=["csv", "txt"],
                              key="uploader")
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
                    frame = read_csv_table(up["bytes"])
                else:  # a big file is parsed by a registry job: progress, Cancel, no frozen page
                    job = state.registry().get("csv")
                    if job is None or job.meta.get("key") != up["digest"]:
                        state.start_job("csv", Job(_parse_job, up["bytes"], label=f"Reading {up['name']}",
                                                   page="data", meta={"key": up["digest"]}))
                    frame = state.job_view("csv", up["digest"])
                if frame is not None:
                    st.caption(f"Uploaded: {up['name']} ({frame.shape[0]} rows, {frame.shape[1]} columns)")
            except ValueError as exc:
                st.error(f"{up['name']} cannot be used: {exc}")
    else:
        sample = SAMPLES[c["sample"]]
        st.caption(sample.description)
        frame = read_csv_table(sample_path(c["sample"]))

    if frame is not None:
        columns = [str(col) for col in frame.columns]
        if c["label"] not in columns:
            fallback = "label" if "label" in columns else columns[-1]
            st.error(f"Label column {c['label']!r} not found in this file (its columns are {columns}); "
                     f"using {fallback!r} instead: pick the right column below.")
            c["label"] = fallback
        state.bind(st.selectbox, "label", "Label column", options=columns,
                   help="The column holding the class of each row (any values: numbers or names).")
        numeric = [col for col in columns if col != c["label"] and pd.api.types.is_numeric_dtype(frame[col])]
        if not numeric:
            st.error("This table has no numeric feature columns besides the label: encode the features as "
                     "numbers (e.g. one-hot) and upload again.")
        c["features"] = [f for f in c["features"] if f in numeric]
        state.bind(st.multiselect, "features", "Feature columns (empty = all numeric columns)",
                   options=numeric,
                   help="Pick exactly two features to see probability heatmaps of the raw features.")
        state.bind(st.checkbox, "std", "Standardise features (training mean 0, standard deviation 1)",
                   help="Recommended: kernels use one length scale for all features.")
        state.bind(st.slider, "test", "Test fraction", min_value=0.1, max_value=0.5, step=0.05,
                   help="Held-out rows for the Calibration and Compare pages (stratified split).")
        state.bind(st.number_input, "seed", "Seed", min_value=0, max_value=2**31 - 1, step=1,
                   help="Seeds the split and every method, so a shared link reproduces the same run.")

data = state.current_data() if frame is not None else None

with right:
    if data is not None:
        d = data.n_features
        X_all = np.vstack([data.X_train, data.X_test])
        y_all = np.concatenate([data.y_train, data.y_test])
        if d == 1:
            X2, axes = np.column_stack([X_all[:, 0], np.zeros(len(X_all))]), (data.feature_names[0], "")
        elif d == 2:
            X2, axes = X_all, tuple(data.feature_names)
        else:
            X2, var = pca2(X_all)
            axes = (f"PC1 ({var[0]:.0%} of variance)", f"PC2 ({var[1]:.0%})")
        title = "All rows" + (" (first two principal components)" if d > 2 else "")
        st.plotly_chart(figures.data_scatter(X2, y_all, data.classes, axes, title), key="data_scatter")
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("training rows", len(data.y_train))
        m2.metric("test rows", len(data.y_test))
        m3.metric("features", d)
        m4.metric("classes", len(data.classes))
        st.plotly_chart(figures.class_balance(data.y_train, data.classes, "Class balance (training rows)"),
                        key="data_balance")
        if data.truth:
            st.success("True p(y|x) known for this sample: the Calibration page draws its contours and "
                       "measures each method's deviation from it.")
        if not data.binary:
            st.info(f"{len(data.classes)} classes: binary-only methods (S-BSVM, SubgradientHMC, GibbsSVM, "
                    "Seeger ARD) are hidden; use PlattSVM or MS-BPM, or pick a two-class data set.")
        st.page_link("views/train.py", label="Next: train a model", icon=":material/arrow_forward:")
