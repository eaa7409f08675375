"""Streamlit pieces shared by several pages: method option widgets, safe estimator calls, model maps."""

from __future__ import annotations

import numpy as np
import streamlit as st

from . import figures, state
from .analysis import Prepared, make_grid, overlay_points, positive_proba
from .methods import Method


def option_widgets(method: Method, disabled: bool = False) -> dict:
    """One widget per option the method accepts, bound to the settings dict (and so to the URL)."""
    opts = state.method_options(method.key)
    for o in method.visible_options():
        kw = {"help": o.help, "disabled": disabled}
        scope = f"opt:{method.key}"
        if o.kind == "select":
            state.bind(st.selectbox, o.name, o.label, store=opts, scope=scope, options=list(o.choices), **kw)
        elif o.kind == "bool":
            state.bind(st.checkbox, o.name, o.label, store=opts, scope=scope, **kw)
        elif o.kind == "int":
            opts[o.name] = int(opts[o.name])
            state.bind(st.number_input, o.name, o.label, store=opts, scope=scope, step=1,
                       min_value=int(o.min) if o.min is not None else None,
                       max_value=int(o.max) if o.max is not None else None, **kw)
        else:
            opts[o.name] = float(opts[o.name])
            state.bind(st.number_input, o.name, o.label, store=opts, scope=scope, format="%g",
                       min_value=float(o.min) if o.min is not None else None,
                       max_value=float(o.max) if o.max is not None else None, **kw)
    return opts


def safe(fn, *args, what: str = "The method", **kw):
    """Call an estimator method; on a user-facing error show it with st.error and return None."""
    try:
        return fn(*args, **kw)
    except ValueError as exc:
        st.error(f"{what} failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the dashboard shows a message, never a traceback
        st.error(f"{what} failed: {type(exc).__name__}: {exc}")
    return None


def shown_points(data: Prepared, max_points: int = 800):
    """Training points to draw on a map (a fixed random subset when there are many)."""
    n = len(data.y_train)
    if n <= max_points:
        return data.X_train, data.y_train
    idx = np.random.default_rng(0).choice(n, max_points, replace=False)
    return data.X_train[idx], data.y_train[idx]


_MAP_CACHE: dict = {}


def map_grid(data: Prepared, n: int = 60):
    """The evaluation grid for a data set and the true p(y|x) on it (None if unknown), computed once:
    a live view redraws several times a second and the truth does not change."""
    key = (data.key, n)
    if key not in _MAP_CACHE:
        if len(_MAP_CACHE) > 16:
            _MAP_CACHE.clear()
        grid = make_grid(np.vstack([data.X_train, data.X_test]), n)
        _MAP_CACHE[key] = (grid, data.true_proba(grid.points) if data.truth else None)
    return _MAP_CACHE[key]


def proba_map(model, data: Prepared, title: str, n: int = 60, truth: bool = True):
    """The probability heatmap of a fitted 2-D model (None with an st.error if prediction fails)."""
    grid, true_p = map_grid(data, n)
    p = safe(positive_proba, model, grid.points, what="Prediction")
    if p is None:
        return None
    overlay, overlay_name = overlay_points(model)
    X, y = shown_points(data)
    label = f"p(y = {data.classes[1]} | x)" if data.binary else "p(predicted class | x)"
    t = true_p if truth else None
    return figures.proba_heatmap(grid, p, X, y, data.classes, overlay=overlay, overlay_name=overlay_name,
                                 truth=t, title=f"{title}: {label}", axis_titles=tuple(data.feature_names))
