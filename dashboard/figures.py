"""Pure Plotly figure builders: arrays, progress records or fitted results in, ``go.Figure`` out.

No Streamlit here, so each builder is tested on its own. Long histories are thinned to a fixed number
of points, which keeps a redraw's cost flat however long a run lasts.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.colors as pcolors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .analysis import (
    _POSITIONAL,
    SNAPSHOT_TITLES,
    Grid,
    class_name,
    feature_label,
    snapshot_names,
    thin_index,
)

MAX_CURVE_POINTS = 600
CLASS_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"]
#: the calibration baseline (``PlattSVM``) and its colour in every chart that compares methods with it
BASELINE_NAME, BASELINE_COLOUR = "PlattSVM", "#9467bd"
#: the probability maps' colours, as an explicit list: the name "RdBu_r" in the maps built from plain dicts
#: (no validation, see _fast_figure) went to plotly.js, whose own "RdBu" is another, brighter scale than
#: plotly.py's ColorBrewer one, so Compare's maps (validated figures) looked unlike Train's and Calibration's
PROBA_SCALE = [[float(v), c] for v, c in pcolors.get_colorscale("RdBu_r")]

#: metrics that are the run's objective (one is plotted as "the" learning curve)
OBJECTIVES = ("elbo", "free_energy", "neg_free_energy", "log_posterior", "log_joint", "potential", "U")
_HYPER = re.compile(r"(lengthscale|variance|amplitude|offset|relevance|^w\[|ard|^C$|^v$)", re.IGNORECASE)
#: counters and flags that describe the run's bookkeeping, not its state (not plotted as curves)
BOOKKEEPING = ("burnin", "n_burnin", "n_draws", "draws_kept", "inner_iterations", "n_support", "stage",
               "stages_planned", "rows", "rhat_target", "ess_target", "converged", "stopped", "next_check",
               "draws", "thin")
#: the stopping rule's numbers in progress records (bsvm.convergence): the worst R-hat and ESS of the last
#: check, drawn against its thresholds (``rhat_target``, ``ess_target``)
CONVERGENCE = ("rhat", "ess_bulk")
#: A horizontal legend under the plot, anchored to the figure's bottom edge: Plotly then shrinks the plot
#: area to make room, so the legend never covers the x-axis title (a legend at a negative paper y does).
MAX_LEGEND_ENTRIES = 12
LEGEND_BELOW = {"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom", "x": 0.0}
#: maps: room below the plot for the axis title and two rows of legend, so maps shown side by side have
#: plots of one size whatever their legends (PlattSVM's "support vectors" wrapped to a second row and
#: shrank its map beside MS-BPM's)
MAP_MARGIN = {"l": 50, "r": 20, "t": 45, "b": 135}
#: many series: a vertical legend right of the plot (Plotly scrolls it when it is taller than the plot)
LEGEND_RIGHT = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1.0, "yanchor": "top",
                "font": {"size": 10}}
#: ... when no name is longer than this
LEGEND_RIGHT_CHARS = 16
#: trace plots name their series in a legend up to this many series (beyond: on hover)
LEGEND_SERIES = 4
#: ... and up to 8 in two columns below the plot when the names are longer than this: at the right,
#: six "chain 0, w[x1]" took 45 % of a 230 px wide chart at 1280 px (a crawl); "chain 7" stays there
LEGEND_SHORT_CHARS = 8
LEGEND_BELOW_2COL = {**LEGEND_BELOW, "entrywidth": 0.5, "entrywidthmode": "fraction", "font": {"size": 10}}
#: Series shorter than this are drawn with markers too: a single point in "lines" mode is invisible.
MARKERS_BELOW = 30
_SAMPLER = re.compile(r"(step_size|acceptance|accept|xi|thermostat|energy|train_error)", re.IGNORECASE)


def _fast_figure(traces: list[dict], title: str, height: int = 320, **layout) -> go.Figure:
    """A figure from plain trace/layout dicts without Plotly's per-property validation (ten times faster,
    which matters for the live view's redraws; the tests validate these figures' dicts separately)."""
    layout = {"title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}}, "height": height,
              "margin": {"l": 50, "r": 20, "t": 45, "b": 40}, "uirevision": "keep",
              **layout}
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


#: the margin of a figure whose title has a second line (:func:`_subtitled`)
SUBTITLE_MARGIN = {"l": 50, "r": 20, "t": 62, "b": 40}
#: the margin of a figure with a one-line title
_MARGIN = {"l": 50, "r": 20, "t": 45, "b": 40}


def _subtitled(title: str, *notes: str) -> str:
    """A title with a note on a second, smaller line: as one line, the note ran off a half-width chart at
    1280 px."""
    # (a size relative to the title's, 12 px under a 15 px title: presentation mode, which enlarges the
    # title, enlarges its note too; at a fixed 12 px it stayed small on a projector)
    # (one span per line: each note its own line)
    return title + "".join(f"<br><span style='font-size:{SUBTITLE_EM}em'>{n}</span>" for n in notes)


#: a title's note's size, relative to the title's
SUBTITLE_EM = 0.8
#: the note of a chart whose lines are named on hover only (no legend on the page); a PNG of it shows a
#: legend instead (``ui.for_export``)
HOVER_NOTE = "hover a line for its name"


def _axis(title: str = "", **kw) -> dict:
    return {"title": {"text": title}, **kw}


def _layout(fig: go.Figure, title: str, height: int = 320, **kw) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)), height=height,
                      margin=dict(l=50, r=20, t=45, b=40), uirevision="keep", **kw)
    return fig


#: characters per line of a chart's message (Plotly does not wrap text: a long line ran off a half-width
#: chart at 1280 px, cut at both ends; at 40 a crawl still saw the right end cut, the plot area's centre
#: being right of the chart's)
MESSAGE_WIDTH = 34


def _wrapped(text: str, width: int = MESSAGE_WIDTH) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


#: ``layout.meta`` of a figure that only says why there is no chart (:func:`is_placeholder`)
PLACEHOLDER = "bsvm-placeholder"


def is_placeholder(fig) -> bool:
    """Whether ``fig`` is an :func:`empty_figure` (a message, no chart: nothing worth a PNG download)."""
    return getattr(getattr(fig, "layout", None), "meta", None) == PLACEHOLDER


#: the uirevision of a placeholder chart (:func:`empty_figure`), of a chart whose y range the server sets
#: (``metric_curves``' y_range), and of every other chart ("keep": a user's zoom survives the redraws)
PLACEHOLDER_REVISION = "placeholder"
RANGED_REVISION = "keep-ranged"


def empty_figure(message: str, height: int = 260, width: int = MESSAGE_WIDTH) -> go.Figure:
    """A chart that only says ``message`` (wrapped at ``width`` characters: a narrow column needs fewer,
    or its lines are cut at the chart's edge)."""
    # its own uirevision: Plotly keeps an axis's state across redraws of one uirevision, and the empty
    # axes' autorange ([-1, 4]) was kept into the next run's learning curve, which then showed no curve
    # (a teacher's crawl: most runs after a tab's first)
    return _fast_figure([], "", height, meta=PLACEHOLDER, xaxis={"visible": False}, yaxis={"visible": False},
                        uirevision=PLACEHOLDER_REVISION,
                        margin={"l": 20, "r": 20, "t": 45, "b": 40},  # the message centred in the chart
                        annotations=[{"text": _wrapped(message, width), "showarrow": False, "x": 0.5,
                                      "y": 0.5, "xref": "paper", "yref": "paper",
                                      "font": {"size": 14, "color": "#666"}}])


# ----------------------------------------------------------------------------------------- Data page


#: above this many points the Data page's scatter is drawn with WebGL (Scattergl); below it as SVG: a
#: WebGL context costs a browser without a GPU (software rendering) about a second of CPU to set up
GL_POINTS = 5000


def data_scatter(X2: np.ndarray, y: np.ndarray, classes, axis_titles=("x1", "x2"), title="Training data"):
    fig = go.Figure()
    kind = go.Scattergl if len(y) > GL_POINTS else go.Scatter
    for k, c in enumerate(classes):
        m = np.asarray(y) == c
        fig.add_trace(kind(x=X2[m, 0], y=X2[m, 1], mode="markers", name=class_name(c),
                                   marker=dict(size=6, color=CLASS_COLOURS[k % len(CLASS_COLOURS)],
                                               line=dict(width=0.5, color="white"))))
    fig.update_xaxes(title=axis_titles[0])
    fig.update_yaxes(title=axis_titles[1])
    return _layout(fig, title, 420)


def playground_figure(X: np.ndarray, y: np.ndarray, click_points: np.ndarray, classes=(0, 1), *,
                      title: str = "Click to edit the data", height: int = 460, proba=None, truth=None,
                      overlay=None, overlay_name: str = "", faded: bool = False):
    """The playground's editable scatter: the data on top of an invisible grid of clickable points
    (``click_points``, an n x n grid as ``playground.click_grid`` makes it), so a click anywhere on the
    canvas reports a position (Plotly selection events).

    ``proba``: a refitted model's p(y = classes[1] | x) at ``click_points``, drawn under the points as in
    TensorFlow Playground, so an edit and its effect are seen in one place (a map under the canvas was
    below the fold at 1280 x 720 and 1920 x 1080, a crawl); the grid's hover then reads it. ``truth``: the
    generator's p(y|x) there (dotted contours); ``overlay``: the method's own points (inducing points,
    support vectors); ``faded``: the map is the previous edit's, while the refit of this one runs. The
    map's traces take no hover, so every click still lands on the grid or on a data point."""
    click_points = np.asarray(click_points, dtype=float)
    traces = []
    hover = {"hoverinfo": "none"}
    if proba is not None:
        n = int(round(np.sqrt(len(click_points))))
        grid = Grid(click_points[:n, 0], click_points[::n, 1])
        heat = {"type": "heatmap", "x": grid.xs, "y": grid.ys, "z": grid.reshape(proba), "zmin": 0.0,
                "zmax": 1.0, "colorscale": PROBA_SCALE, "colorbar": _colourbar("p"), "hoverinfo": "skip",
                # no colour bar on the canvas (the PNG has one): it narrowed the plot when the first map
                # came, and moved every point from under the cursor (the caption gives the scale)
                "showscale": False,
                "zsmooth": "best", "opacity": 0.4 if faded else 1.0}
        traces.append(heat)
        if truth is not None:
            traces += [{**t, "hoverinfo": "skip"} for t in _truth_traces(grid, truth)]
        hover = {"customdata": np.asarray(proba, dtype=float),
                 "hovertemplate": _hover(("x1", "x2"), f"p(y = {classes[1]} | x)=%{{customdata:.3f}}")}
    canvas = {"type": "scatter", "x": click_points[:, 0], "y": click_points[:, 1], "mode": "markers",
              "name": "canvas", "showlegend": False, **hover,
              "marker": {"size": 14, "color": "rgba(0,0,0,0)", "opacity": 0.0},
              "selected": {"marker": {"opacity": 0.0}}, "unselected": {"marker": {"opacity": 0.0}}}
    points = _point_traces(np.asarray(X).reshape(-1, 2), y, classes, outline=proba is not None)
    for tr in points:
        tr["marker"]["size"] = 8
        tr["cliponaxis"] = False  # a point clicked at the canvas's edge was drawn half
        tr["unselected"] = {"marker": {"opacity": 1.0}}
    traces += [canvas, *points]
    if overlay is not None and len(overlay):
        traces.append({**_overlay_trace(np.asarray(overlay), overlay_name), "hoverinfo": "skip"})
    lo, hi = click_points.min(axis=0), click_points.max(axis=0)
    # (a margin for two legend rows: the truth's entry, gone after the first edit, shrank the legend and
    # stretched the plot, moving the points under the cursor)
    # one unit as long on both axes (the plot then keeps the canvas's shape, within the column): 765 x 280
    # px at 1920 px squashed the data's vertical axis 1.8-fold, flattening the boundary (a teacher's crawl)
    return _fast_figure(traces, title, height, xaxis=_axis("x1", range=[lo[0], hi[0]], constrain="domain"),
                        yaxis=_axis("x2", range=[lo[1], hi[1]], constrain="domain", scaleanchor="x",
                                    scaleratio=1),
                        legend=LEGEND_BELOW, margin=MAP_MARGIN,
                        clickmode="event+select", dragmode=False, hovermode="closest", uirevision=None)


def class_balance(y: np.ndarray, classes, title="Class balance"):
    counts = [int(np.sum(np.asarray(y) == c)) for c in classes]
    fig = go.Figure(go.Bar(x=[str(c) for c in classes], y=counts, text=counts, textposition="auto",
                           marker_color=[CLASS_COLOURS[k % len(CLASS_COLOURS)] for k in range(len(classes))]))
    fig.update_xaxes(title="class", type="category")
    fig.update_yaxes(title="rows")
    return _layout(fig, title, 300)


# ----------------------------------------------------------------------------------------- live curves


def no_stats_message(kind: str) -> str:
    """What the empty 'statistics' panel says for a method that records none."""
    if kind == "sampler":
        return "No step size or acceptance to tune: every draw of this sampler is accepted"
    if kind == "baseline":
        return "Fitted in one go: no learning curve or hyperparameter trace"
    return "No hyperparameters or sampler statistics recorded"


def metric_names(history) -> list[str]:
    """The scalar metrics of the newest 50 records and the first, in order; those that are NaN in all of
    them left out (GibbsSVM records ``step_size`` as NaN: it has none, and its statistics chart stayed
    an empty frame)."""
    names: dict[str, bool] = {}
    for rec in history[-50:] + history[:1]:
        for k, v in rec.metrics.items():
            if np.isscalar(v):
                try:
                    finite = bool(np.isfinite(v))
                except TypeError:  # a string or other non-number: kept as before
                    finite = True
                names[k] = names.get(k, False) or finite
    return [k for k, finite in names.items() if finite]


def split_metrics(names) -> dict[str, list[str]]:
    """Sort metric names into the objective, hyperparameters, sampler statistics and the rest."""
    out = {"objective": [], "hyper": [], "sampler": [], "other": []}
    for n in names:
        if n in BOOKKEEPING:
            continue
        if n in OBJECTIVES:
            out["objective"].append(n)
        elif _HYPER.search(n):
            out["hyper"].append(n)
        elif _SAMPLER.search(n):
            out["sampler"].append(n)
        else:
            out["other"].append(n)
    return out


def sampler_statistics(history, height: int = 300, panel: int = 110):
    """A sampler's statistics as stacked panels: its own (step size, acceptance... at most two), then the
    stopping rule's worst R-hat and bulk ESS at each check with the rule's thresholds as dashed lines, so
    a run can be watched converging. (GibbsSVM has no statistics of its own: its panels showed the
    constant thresholds themselves.) None when the records carry none of these."""
    names = metric_names(history)
    groups = split_metrics(names)
    conv = [n for n in CONVERGENCE if n in names]
    # the step size and acceptance first (MS-BPM also records training errors)
    own = sorted(groups["sampler"], key=lambda n: 0 if re.search("step|accept", n) else 1)
    shown = own[:4 - len(conv)] + conv
    if not shown:
        return None
    last = history[-1].metrics
    targets = {"rhat": last.get("rhat_target"), "ess_bulk": last.get("ess_target")}
    lines = []
    for k, name in enumerate(shown):
        t = targets.get(name)
        if t is not None and np.isfinite(t):
            lines.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                          "yref": "y" if k == 0 else f"y{k + 1}", "y0": float(t), "y1": float(t),
                          "line": {"dash": "dash", "color": "#888", "width": 1}})
    title = "Sampler statistics"
    extra: dict = {"shapes": lines} if lines else {}
    if not conv and targets["rhat"] is not None:
        # in burn-in: one unlabelled line, and no word of the R-hat and ESS panels to come (a crawl)
        # (a fixed-length run checks once, at its end: "first check, after burn-in" misled when paused)
        # (short: "R-hat and ESS appear once the stopping rule is first checked" was cut at "first che" on
        # a half-width chart at 1280 px, a crawl)
        title = _subtitled(title, "R-hat and ESS show after the first check")
        extra["margin"] = SUBTITLE_MARGIN
    return metric_curves(history, shown, title, separate_axes=True, height=height, panel=panel, **extra)


#: records' metrics drawn as their negatives, under another name: the potential U as the log posterior
#: -U (the traces, the diagnostics table and the NetCDF's lp call it so; the learning curve above them
#: said "U = -log posterior" at +49 over a trace of the log posterior at -50, a teacher's crawl)
NEGATED = {"potential": "log_posterior", "U": "log_posterior"}


def _series(history, name: str, idx: np.ndarray):
    it = np.array([history[i].iteration for i in idx], dtype=float)
    v = np.array([history[i].metrics.get(name, np.nan) for i in idx], dtype=float)
    v = np.where(np.isfinite(v), v, np.nan)
    return it, v


def _objective_series(history, name: str, idx: np.ndarray):
    """:func:`_series` of an objective, a potential drawn as the log posterior (:data:`NEGATED`)."""
    it, v = _series(history, name, idx)
    return (it, -v) if name in NEGATED else (it, v)


def _line_mode(n_points: int) -> str:
    return "lines+markers" if n_points < MARKERS_BELOW else "lines"


#: a log axis whose tick labels are whole numbers: plotly's default labels the ticks between powers of
#: ten by their first digit alone, so 0.5 read "5" between "1" and "2". At most 3 ticks' worth of spacing
#: (plotly then labels 1-2-5 per decade, or powers of ten only, on 0.9+ decades): on a 300 px chart it
#: labelled every digit, and "0.3 0.4 ... 0.9 1" overlapped below 1 (a crawl's S-BSVM hyperparameters)
#: a log axis; its stacked panels (metric_curves' separate_axes, ~110 px each) also set nticks 3. A
#: single panel's range is often under a decade (SeegerARD's hyperparameters, 0.6-1.7), where nticks 3
#: left one tick, "1", and the values could not be read (a teacher's crawl)
_LOG_AXIS = {"type": "log", "tickformat": "~g"}
_PANEL_LOG_AXIS = {**_LOG_AXIS, "nticks": 3}


#: colours of curves that belong to one input each (an ARD weight, a length scale): the input's position
#: picks the colour, so the same input has the same colour in every chart of a page (SeegerARD's
#: w[temperature] was red in its hyperparameter chart and blue in its weight trace). Plotly's D3 palette
#: and eight darker ones from its Dark24 that D3 does not come close to: more colours than a legend has
#: entries (MAX_LEGEND_ENTRIES), so no two entries of a legend look the same (with D3 alone, w[x0] and
#: w[x10] did)
SERIES_COLOURS = list(pcolors.qualitative.D3) + ["#222A2A", "#B68100", "#00A08B", "#750D86", "#FC0080",
                                                   "#0D2A63", "#6C7C32", "#862A16"]


def _feature_position(name: str) -> int | None:
    """The input a positional metric name is about (``w[x3]``, ``lengthscales[3]``: 3), else None."""
    m = _POSITIONAL.search(str(name))
    return None if m is None else int(m.group(1) if m.group(1) is not None else m.group(2))


#: the colours of a chart's series that are not about one input (S-BSVM's "variance", "bias variance"),
#: in their order: none of the inputs' colours, and the same whether or not inputs are drawn
OTHER_COLOURS = ["#000000", "#A6761D", "#6A3D9A", "#01665E", "#C51B7D", "#666600"]


def _colour_by_input(traces: list[dict], positions: list) -> None:
    """Colour the traces of one input each by the input's position (:data:`SERIES_COLOURS`), the others
    by their order (:data:`OTHER_COLOURS`), so a series keeps its colour when per-input series come or go
    during a run: the others took the colours the inputs left free, and "variance" went from light blue
    to red when S-BSVM's second candidate brought its per-feature length scales (a teacher's crawl). A
    chart of one series keeps the default colour."""
    if len(traces) < 2 and all(p is None for p in positions):
        return
    k = 0
    inputs = any(p is not None for p in positions)
    for tr, pos in zip(traces, positions):
        if pos is None:
            colour, k = OTHER_COLOURS[k % len(OTHER_COLOURS)], k + 1
            if inputs:
                # dashed beside the per-input curves: past ten inputs their colours come near these
                # (black beside the near-black w[x10], a review)
                tr["line"] = {**tr.get("line", {}), "dash": "dash"}
        else:
            colour = SERIES_COLOURS[pos % len(SERIES_COLOURS)]
        tr["line"] = {**tr.get("line", {}), "color": colour}
        tr["marker"] = {**tr.get("marker", {}), "color": colour}


def _floor_at_zero(values, log_y: bool) -> dict:
    """Axis settings that keep a panel of non-negative values at or above 0 (a constant step size of 0.3
    was drawn on an axis from -0.5 to 1, a crawl)."""
    v = np.asarray(values, dtype=float)
    return {"rangemode": "nonnegative"} if not log_y and np.isfinite(v).any() and np.nanmin(v) >= 0 else {}


def _gapped(it: np.ndarray, v: np.ndarray, breaks) -> tuple[np.ndarray, np.ndarray]:
    """The series with a gap (a NaN point, which Plotly does not join) before the first point at or past
    each of ``breaks``: where a fit moves on to another model, its curve is not one trajectory."""
    cut = sorted({int(i) for b in breaks for i in np.flatnonzero((it[1:] >= b) & (it[:-1] < b)) + 1})
    if not cut:
        return it, v
    return (np.insert(it, cut, (it[np.array(cut) - 1] + it[cut]) / 2), np.insert(v, cut, np.nan))


#: below this many iterations between the first and last record the iteration axis gets a tick per
#: iteration: Plotly's automatic ticks split the unit (one Step from a fresh start: "8, 8.5, 9")
INTEGER_TICKS_BELOW = 10


def _iteration_axis(history) -> dict:
    """The x axis of curves over iterations, with whole-number ticks."""
    span = float(history[-1].iteration - history[0].iteration) if history else 0.0
    return {**_axis("iteration"), **({"dtick": 1, "tick0": 0} if span < INTEGER_TICKS_BELOW else {})}


#: characters per line of a stacked panel's axis title (11 px type along a 110 px panel)
PANEL_TITLE_CHARS = 15


def metric_curves(history, names, title: str, log_y: bool = False, height: int = 300,
                  separate_axes: bool = False, feature_names=None, panel: int = 110, breaks=(),
                  y_range=None, negate: bool = False, **extra):
    """Scalar metrics over iterations, one line each (at most MAX_CURVE_POINTS points per line).
    ``extra``: more layout (shapes, annotations, margin), set as the figure is made (go.Figure's setters
    validate: eight times the cost of the whole figure, on every live redraw).

    separate_axes: one stacked panel per metric (sharing the iteration axis), for quantities on
    different scales such as a step size next to an acceptance rate; ``panel`` px each.
    feature_names: the data's columns, put in place of positional names (``w[x0]`` -> ``w[radius]``).
    breaks: iterations where the curves are not joined (a new candidate fit starts there).
    y_range: (low, high) of a single panel's y axis, instead of Plotly's autorange.
    negate: draw the values' negatives (a potential U as the log posterior, :data:`NEGATED`).
    """
    if not history or not names:
        return empty_figure(f"{title}: nothing recorded yet", height)
    idx = thin_index(len(history), MAX_CURVE_POINTS)
    names = list(names)
    stacked = separate_axes and len(names) > 1
    traces, axes = [], {}
    n, gap = len(names), 0.1
    share = (1.0 - gap * (n - 1)) / n  # each panel's fraction of the plot's height
    for k, name in enumerate(names):
        it, v = _series(history, name, idx)
        it, v = _gapped(it, -v if negate else v, breaks)
        shown = CURVE_LABELS.get(NEGATED.get(name, name) if negate else name) or feature_label(name,
                                                                                                   feature_names)
        # markers where a series has few values among many records: a fixed-length run's R-hat, checked
        # once at its end, was a lone point drawn as a line of one point, i.e. nothing (a crawl)
        tr = {"type": "scatter", "x": it, "y": v, "mode": _line_mode(int(np.isfinite(v).sum())),
              "name": shown, "marker": {"size": 5}}
        if stacked:  # panel 0 on top; each panel's y axis is titled with its metric
            ax = "" if k == 0 else str(k + 1)
            tr["yaxis"] = f"y{ax}"
            top = 1.0 - k * (share + gap)
            # a long title on two lines: "training error (best chain)" is longer than its 110 px panel
            # and ran into the title of the panel above (MS-BPM on 3 classes, a crawl); automargin makes
            # room at the left for the second line
            axes[f"yaxis{ax}"] = {"domain": [max(0.0, top - share), top],
                                  **(_PANEL_LOG_AXIS if log_y else {}),
                                  "title": {"text": _wrapped(shown, PANEL_TITLE_CHARS), "font": {"size": 11}},
                                  "automargin": True}
            axes[f"yaxis{ax}"].update(_floor_at_zero(v, log_y))
        traces.append(tr)
    _colour_by_input(traces, [_feature_position(name) for name in names])
    if stacked:  # the shared iteration axis sits under the bottom panel
        return _fast_figure(traces, title, max(height, panel * n + 90),
                            xaxis={**_iteration_axis(history), "anchor": f"y{n}"}, showlegend=False,
                            **{**axes, **extra})
    if separate_axes and n == 1:  # one panel: its axis says what it is (no legend for one line)
        extra = {"yaxis": {**(_log_axis_for(traces) if log_y else {}), "title": {"text": traces[0]["name"]},
                           **_floor_at_zero(traces[0]["y"], log_y)}, **extra}
        return _fast_figure(traces, title, height, xaxis=_iteration_axis(history), showlegend=False, **extra)
    positions = [_feature_position(name) for name in names]
    per_input = sum(p is not None for p in positions)
    if n > MAX_LEGEND_ENTRIES and per_input >= 3 and n - per_input + 1 <= MAX_LEGEND_ENTRIES:
        # the per-feature curves under one legend entry (_group_inputs), the others by name: SeegerARD
        # on twonorm showed "22 curves: hover to name one", so C and v had no name on the page (a
        # teacher's crawl)
        _group_inputs(traces, positions, force=True)
        return _fast_figure(traces, title, height, xaxis=_iteration_axis(history),
                            yaxis=_log_axis_for(traces) if log_y else {}, legend=LEGEND_BELOW, **extra)
    if n > MAX_LEGEND_ENTRIES:
        # a 30-feature ARD fit has 32 curves: a legend that size squeezed the plot to a sliver;
        # hovering a line names it
        return _fast_figure(traces, _subtitled(title, f"{n} curves: hover to name one"), height,
                            xaxis=_iteration_axis(history), yaxis=_log_axis_for(traces) if log_y else {},
                            showlegend=False, **{"margin": SUBTITLE_MARGIN, **extra})
    _group_inputs(traces, [_feature_position(name) for name in names])
    yaxis = {**(_log_axis_for(traces) if log_y else {}),
             **({"range": list(y_range)} if y_range is not None else {})}
    if y_range is not None:
        # a range the server sets, and autoranged ones, under different uirevisions: a switch between the
        # two (the outlier cut coming or going) then draws the figure as given, not the other's axis
        extra = {"uirevision": RANGED_REVISION, **extra}
    return _fast_figure(traces, title, height, xaxis=_iteration_axis(history), yaxis=yaxis,
                        legend=LEGEND_BELOW, **extra)


#: metric_curves: past this many curves, those of one input each share one legend entry
GROUP_INPUTS_OVER = 6


def _group_inputs(traces: list[dict], positions: list, force: bool = False) -> None:
    """Past :data:`GROUP_INPUTS_OVER` curves, the curves of one input each (an ARD fit's length scale per
    feature) share one legend entry, "length scale per feature (8: hover)", and keep their own names on
    hover: S-BSVM on 8 features had 11 legend rows below a plot 60 px high (40 in presentation mode, a
    crawl)."""
    per_input = [k for k, p in enumerate(positions) if p is not None]
    if (len(traces) <= GROUP_INPUTS_OVER and not force) or len(per_input) < 3:
        return
    base = re.sub(r"\[.*\]$", "", str(traces[per_input[0]]["name"])).strip() or "series"
    for i, k in enumerate(per_input):
        tr = traces[k]
        tr["hovertemplate"] = f"%{{y:.4g}}<extra>{tr['name']}</extra>"
        tr["legendgroup"] = "inputs"
        tr["showlegend"] = i == 0
        if i == 0:
            tr["name"] = f"{base} per feature ({len(per_input)}: hover)"


def focus_range(values, q: float = 0.05, tail: float = 2.0):
    """A y range that leaves out a curve's far tails, as TensorBoard's "ignore outliers in chart scaling"
    (on by default) does: each side is cut at the ``q`` / 1 - ``q`` quantile when the values beyond it
    reach more than ``tail`` times the central range past it, else kept whole; the newest value is always
    inside. Returns ((low, high), cut_low, cut_high), or None when nothing is cut (too few values, or no
    far tail). S-BSVM's ELBO climbs from -450 to -100 in its first steps: on an axis from -450 its later
    course, where convergence shows, was a flat line (a crawl)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 20:
        return None
    lo_q, hi_q = np.quantile(v, [q, 1.0 - q])
    central = hi_q - lo_q
    if not central > 0:
        return None
    cut_low = lo_q - v.min() > tail * central
    cut_high = v.max() - hi_q > tail * central
    if not (cut_low or cut_high):
        return None
    last = v[-1]
    low = min(lo_q, last) if cut_low else v.min()
    high = max(hi_q, last) if cut_high else v.max()
    pad = 0.08 * (high - low)
    return (float(low - pad), float(high + pad)), bool(cut_low), bool(cut_high)


_ARD_WEIGHT = re.compile(r"^w\[(.+)\]$")


def ard_weights(history, height: int = 300, max_bars: int = 40, feature_names=None):
    """The latest ARD weights (metrics named ``w[feature]``, as SeegerARD records them) as dots, largest
    on top, on a log axis two decades deep at least: which inputs the kernel uses, as the fit goes.
    None if the run records none.
    feature_names: the data's columns, in place of the positional ``x0``, ``x1``, ... (0-based)."""
    if not history:
        return None
    latest = history[-1].metrics
    pairs = [(feature_label(m.group(1), feature_names), float(v)) for k, v in latest.items()
             if (m := _ARD_WEIGHT.match(k))]
    if not pairs:
        return None
    pairs.sort(key=lambda p: -p[1])
    shown = pairs[:max_bars]
    more = f", {len(shown)} largest of {len(pairs)}" if len(pairs) > len(shown) else ""
    names = [p[0] for p in shown][::-1]          # largest on top
    values = [max(p[1], 1e-12) for p in shown][::-1]
    # dots, not bars: a bar on a log axis starts at the axis's edge, and twonorm's 20 equally relevant
    # features (w 1.9-3.6) drawn on an axis from 1.85 made two of them look irrelevant (a crawl). The
    # axis spans two decades at least below the largest w, so equal weights sit together at the right
    # and an irrelevant feature's (w near 0) far left
    top = max(values)
    span = [min(min(values), top / 100.0), top]
    dots = [{"type": "scatter", "mode": "markers", "x": values, "y": names,
             "marker": {"color": "#1f77b4", "size": 9},
             "hovertemplate": "%{y}: w = %{x:.3g}<extra></extra>"}]
    ticks = _log_ticks(span)
    if ticks and max(ticks["tickvals"]) < top / 1.5:
        # (weights all above the last tick, twonorm's 1.9-3.6 past "1", sat on an unlabelled stretch: the
        # largest 1-2-5 value below the top weight is labelled too, a review)
        k = np.floor(np.log10(top))
        extra = float(max(m * 10.0 ** k for m in (1, 2, 5) if m * 10.0 ** k <= top))
        lo, hi = np.log10(span[0]), np.log10(span[1])
        if extra > max(ticks["tickvals"]) and _log_labels_apart([max(ticks["tickvals"]), extra], lo, hi):
            ticks = {"tickvals": [*ticks["tickvals"], extra], "ticktext": [*ticks["ticktext"], f"{extra:g}"]}
    return _fast_figure(dots, f"ARD weights w at iteration {history[-1].iteration}{more}",
                        max(height, 16 * len(shown) + 90),
                        xaxis=_axis("w (log scale)", type="log", tickangle=0,
                                    range=[np.log10(span[0]) - 0.15, np.log10(span[1]) + 0.15], **ticks),
                        yaxis={"automargin": True}, showlegend=False)


def _log_labels_apart(ticks, lo: float, hi: float) -> bool:
    """Whether the labels of log-axis ``ticks`` over decades ``lo``..``hi`` (log10) keep apart on a
    half-width chart (:data:`_PLOT_PX`, 7 px a character): "0.0005 0.001 ... 0.01 0.02" ran together on
    SeegerARD's weights at 1280 px (a crawl)."""
    span = max(hi - lo + 0.3, 1e-9)  # (the axis is padded by 0.15 decade each side)
    for a, b in zip(ticks, ticks[1:]):
        room = (np.log10(b) - np.log10(a)) / span * _PLOT_PX
        if room < (len(f"{a:g}") + len(f"{b:g}")) / 2 * _LABEL_CHAR_PX + 8:
            return False
    return True


def _log_ticks(values, most: int = 4) -> dict:
    """At most ``most`` ticks for a log axis over ``values``, the densest of the series 1-2-5, 1-5 and
    decades (then every k-th decade) that has two or more in range: weights within one decade got
    Plotly's tick every 0.02 (0.04, 0.06, ..., 0.14), turned on end and run together on a half-width chart
    beside long feature names (a crawl, 1280 px). Empty (Plotly's own) when none has two in range."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {}
    lo, hi = np.log10(v.min()), np.log10(v.max())
    ticks = [m * 10.0 ** k for k in range(int(np.floor(lo)) - 1, int(np.ceil(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo - 1e-9 <= np.log10(t) <= hi + 1e-9]

    def mantissa(t):
        return round(t / 10.0 ** np.floor(np.log10(t) + 1e-9))

    for series in ((1, 2, 5), (1, 5), (1,)):
        kept = [t for t in ticks if mantissa(t) in series]
        if 2 <= len(kept) <= most and _log_labels_apart(kept, lo, hi):
            break
    else:
        kept = [t for t in ticks if mantissa(t) == 1]
        kept = kept[::-(-len(kept) // most)] if len(kept) > most else []
    if len(kept) < 2 and hi - lo < 1.0:
        # within a decade, 1-2-5 may hold one value: SeegerARD's C and v (0.6-1.7) had the single tick
        # "1" and could not be read (a teacher's crawl); finer steps, thinned until their labels keep apart
        fine = [round(m * 10.0 ** k, 12) for k in range(int(np.floor(lo)) - 1, int(np.ceil(hi)) + 1)
                for m in (1, 1.2, 1.5, 2, 3, 4, 5, 7)]
        fine = [t for t in fine if lo - 1e-9 <= np.log10(t) <= hi + 1e-9]
        for step in (1, 2, 3, 4):
            kept = fine[::step]
            if 2 <= len(kept) <= most and _log_labels_apart(kept, lo, hi):
                break
        else:
            kept = []
    if len(kept) < 2:
        return {}
    return {"tickvals": kept, "ticktext": [f"{t:g}" for t in kept]}


def _log_axis_for(traces: list[dict]) -> dict:
    """A single panel's log axis: :func:`_log_ticks` over the traces' values, else three of Plotly's
    ticks (unlimited, Plotly labelled every digit, "0.3 0.4 ... 0.9 1", overlapping: a crawl)."""
    values = np.concatenate([np.asarray(t.get("y", []), dtype=float).ravel() for t in traces] or [[]])
    ticks = _log_ticks(values)
    return {**_LOG_AXIS, **ticks} if ticks else dict(_PANEL_LOG_AXIS)


#: the longest parameter name the weights chart shows whole
NAME_CHARS = 32


def posterior_weights(samples, names, height: int = 300, max_rows: int = 30, level: float = 0.9):
    """A linear sampler's weights after its run: each parameter's posterior mean and central ``level``
    interval over every chain and draw (``samples`` (chains, draws, params), ``names`` one per column),
    the ``max_rows`` largest in |mean| / sd first. With many inputs there is no probability map: this
    says which inputs the posterior is sure matter (an interval clear of 0) and which it cannot tell.
    None without draws."""
    S = np.asarray(samples, dtype=float)
    if S.ndim != 3 or S.shape[1] == 0 or S.shape[2] != len(names):
        return None
    flat = S.reshape(-1, S.shape[2])
    mean = flat.mean(axis=0)
    lo, hi = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2], axis=0)
    sd = flat.std(axis=0)
    order = np.argsort(-np.abs(mean) / np.where(sd > 0, sd, np.inf), kind="stable")[:max_rows][::-1]
    # (short: "the 30 of 42 largest in |mean| / sd" ran off a half-width chart)
    more = f"; top {len(order)} of {len(names)} by |mean|/sd" if len(names) > len(order) else ""
    clear = (lo[order] > 0) | (hi[order] < 0)
    full = [str(names[j]) for j in order]
    # long names (wine's "w[class_1, od280_od315_of_diluted_wines]") took half a half-width chart: cut in
    # the middle, whole on hover; kept whole if cutting would make two alike
    short = [n if len(n) <= NAME_CHARS else n[:NAME_CHARS - 13] + "…" + n[-12:] for n in full]
    shown = short if len(set(short)) == len(short) else full
    points = [{"type": "scatter", "mode": "markers", "x": mean[order].tolist(), "y": shown,
               "customdata": full,
               "error_x": {"type": "data", "symmetric": False, "array": (hi - mean)[order].tolist(),
                           "arrayminus": (mean - lo)[order].tolist(), "color": "#888", "thickness": 1.5},
               "marker": {"color": ["#d62728" if c else "#1f77b4" for c in clear], "size": 7},
               "hovertemplate": "%{customdata}: mean %{x:.3g}<extra></extra>"}]
    # (the count on the second line: on one line with the title it ran off a half-width chart)
    title = _subtitled(f"Posterior weights: mean and {level:.0%} interval",
                       f"red: interval excludes 0{more}")
    return _fast_figure(points, title, max(height, 16 * len(order) + 110),
                        xaxis=_axis("weight", zeroline=True, zerolinecolor="#999"),
                        yaxis={"automargin": True}, showlegend=False, margin=SUBTITLE_MARGIN)


def objective_curve(history, height: int = 300, stages=None):
    """The learning curve: the ELBO (variational methods) or free energy / log posterior.

    Where a fit moves on to another model or more data its objective jumps, which is not a failure: a
    dotted line marks each such place, from the records' ``stage`` (S-BSVM's kernel="auto" fits its
    candidate kernels one after another, then stacks them; ``stages``: the estimator's ``stages_``, whose
    names label the marks on hover) or ``rows`` (SeegerARD warm-starts on a subset, then refits on all)."""
    if not history:  # (before the first record it said "This method reports no objective", a crawl)
        return empty_figure("The objective appears with the first progress record", height)
    names = split_metrics(metric_names(history))["objective"]
    if not names:
        return empty_figure("This method reports no objective (ELBO / free energy)", height)
    name = names[0]
    labels = {"elbo": "ELBO (higher is better)", "free_energy": "free energy F (lower is better)",
              "neg_free_energy": "-F, negative free energy (higher is better)",
              # (samplers: their log posterior does not improve, it settles: "higher is better" read as if
              # a rise after burn-in were progress)
              # (every sampler records its chains' mean: a crawl compared its range with the per-chain
              # traces' and found them apart)
              "log_posterior": "log posterior (mean over chains; levels off once mixed)",
              "log_joint": "log joint density (higher is better)",
              "potential": "U = -log posterior (mean over chains; levels off once mixed)",
              "U": "U = -log posterior (mean over chains; levels off once mixed)"}
    label = labels.get(NEGATED.get(name, name), name)
    marks = stage_changes(history, stages) + [(it, f" {rows:,} rows", f"from here on all {rows:,} rows")
                                              for it, rows in row_changes(history)]
    numbered = any(text.strip().isdigit() for _, text, _ in marks)
    # (over the points drawn, as metric_curves thins them: not a pass over every record at each redraw)
    values = list(_objective_series(history, name, thin_index(len(history), MAX_CURVE_POINTS))[1])
    focus = focus_range(values)
    sub = []
    if len(label) > 32 and label.endswith(")") and " (" in label:
        # the reading hint on a second, smaller line: "U = -log posterior (levels off once mixed)" ran
        # off a half-width chart in presentation mode at 1280 px (a crawl)
        label, hint = label[:-1].split(" (", 1)
        sub.append(hint)
    if numbered:
        # (at most 42 characters, as the other notes: "dotted: the next candidate fit (hover its number)"
        # was cut at "numbe" on S-BSVM's ELBO in presentation mode at 1280 px, a crawl)
        sub.append("dotted: next candidate fit (hover number)")
    if focus:  # what the focused axis leaves out, and where (double-click the chart to see all)
        far = np.nanmin(values) if focus[1] else np.nanmax(values)
        sub.append(f"outliers off the axis (to {far:.3g})")
    if sub:
        # one note a line: joined on one, "dotted: next candidate fit (hover number); outliers off the
        # axis (to -450)" ran off a half-width chart at 1280 px
        label = _subtitled(label, *sub)
    shapes, notes = [], []
    burn = [rec.iteration for rec in history if rec.metrics.get("burnin") == 1.0]
    if burn:
        # the band says which part of a sampler's curve its kept draws come from (none from burn-in): up
        # to n_burnin, not the last burn-in record (parallel runs record every ~2 s, so the band stopped
        # short), nor past the newest record while burn-in goes on
        end = history[-1].metrics.get("n_burnin", burn[-1])
        end = min(float(end), float(history[-1].iteration)) if np.isfinite(end) else float(burn[-1])
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": history[0].iteration, "x1": end,
                       "y0": 0, "y1": 1, "fillcolor": "#999", "opacity": 0.15, "line": {"width": 0},
                       "layer": "below"})
        span = float(history[-1].iteration - history[0].iteration)
        if end - history[0].iteration >= 0.1 * span:  # (on a narrow band the word covered the curve's start)
            notes.append({**_ABOVE_PLOT, "x": history[0].iteration, "text": "burn-in", "xanchor": "left"})
    if marks:
        # one label for marks whose labels would print over each other (the fixed-hyperparameter fits
        # take a few steps each): "4-6", every name on hover
        groups = _label_groups(sorted(marks), float(history[0].iteration),
                               max(1.0, float(history[-1].iteration - history[0].iteration)))
        shapes += _mark_lines(marks)
        notes += [{**_ABOVE_PLOT, "x": g["x"], "text": g["text"], "hovertext": g["hover"],
                   "xanchor": g["anchor"]} for g in groups]
    extra = {"margin": {**SUBTITLE_MARGIN, "t": SUBTITLE_MARGIN["t"] + NOTE_LINE * (len(sub) - 1)}} \
        if sub else {}
    if notes:  # the labels' strip above the plot
        margin = dict(extra.get("margin", _MARGIN))
        extra["margin"] = {**margin, "t": margin["t"] + LABEL_STRIP}
    if shapes:
        extra.update(shapes=shapes, annotations=notes)
    # (each candidate's ELBO is its own objective: joined, the five fits read as one climbing run, a crawl)
    return metric_curves(history, [name], label, height=height, breaks=[m[0] for m in marks],
                         y_range=focus[0] if focus else None, negate=name in NEGATED, **extra)


#: px of the top margin for each further line of a title's notes (12 px type under a 15 px title)
NOTE_LINE = 14
#: the objective's labels ("burn-in", the candidate fits' numbers) sit in a strip of this many px above
#: the plot: inside it they sat on the curve (S-BSVM's ELBO climbs to the top within a few steps) and
#: "burn-in" beside the top y tick label (a crawl)
LABEL_STRIP = 14
_ABOVE_PLOT = {"y": 1.0, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
               "font": {"size": 11, "color": "#666"}}
#: for telling whether two labels meet: a half-width chart's plot at 1280 px, and the width of one
#: character of the labels' 11 px type (a little more than its average, so that labels keep apart)
_PLOT_PX, _LABEL_CHAR_PX = 230.0, 7.0


def _label_groups(marks, start: float, span: float) -> list[dict]:
    """Marks ``(iteration, short, full)`` gathered into labels that do not overlap: each label's width is
    estimated from its characters (:data:`_PLOT_PX`, :data:`_LABEL_CHAR_PX`), and neighbours whose
    labels would meet are made one ("4-5, stack"), until none meet (two numbers 4 % of the axis apart
    were labelled apart, and "2" and "4-5, stack" printed over each other)."""
    groups = [[m] for m in marks]

    def placed(g):
        x = g[0][0]
        text = _group_label([m[1] for m in g])
        width = (len(text.strip()) * _LABEL_CHAR_PX + 6) / _PLOT_PX * span
        # a label near the right end reads leftwards: to its right it ran past the plot and stretched
        # the axis (S-BSVM's "4-5, stack" took it from 500 to 650, a crawl)
        right = x - start > 0.85 * span
        lo, hi = (x - width, x) if right else (x, x + width)
        return {"x": x, "text": text, "hover": "<br>".join(m[2] for m in g), "anchor": "right" if right else
                "left", "lo": lo, "hi": hi}

    while True:
        shown = [placed(g) for g in groups]
        meet = next((k for k in range(len(shown) - 1) if shown[k]["hi"] > shown[k + 1]["lo"]), None)
        if meet is None:
            return shown
        groups[meet:meet + 2] = [groups[meet] + groups[meet + 1]]


def _group_label(texts: list[str]) -> str:
    """One label for marks too close to label apart: " 4", " 4-5", " 4-5, stack" (the numbered fits as a
    range, other marks after them)."""
    nums = [t.strip() for t in texts if t.strip().isdigit()]
    rest = [t.strip() for t in texts if not t.strip().isdigit()]
    head = "" if not nums else nums[0] if len(nums) == 1 else f"{nums[0]}-{nums[-1]}"
    return " " + ", ".join(([head] if head else []) + rest)


def _mark_lines(marks) -> list[dict]:
    """A dotted vertical line at each mark's iteration (:func:`stage_changes`, row changes)."""
    return [{"type": "line", "xref": "x", "yref": "paper", "x0": it, "x1": it, "y0": 0, "y1": 1,
             "line": {"dash": "dot", "color": "#888", "width": 1}} for it, _, _ in marks]


def stage_changes(history, stages=None) -> list[tuple[float, str, str]]:
    """(iteration, short label, full label) wherever the records' ``stage`` changes: the stage's number
    (2, 3, ...) and, on hover, its name from ``stages`` (``stages_``: dicts with a "stage" name), the one
    past the last being the stacked result."""
    out, prev = [], None
    names = [str(s.get("stage", "")) for s in (stages or [])]
    for rec in history:
        k = rec.metrics.get("stage")
        if k is None:
            continue
        if prev is not None and k != prev:
            k = int(k)
            # past the last fit: not one more fit (the progress said "5 fits" and the marks went to 6),
            # the candidates' stacking. The records' own plan says which stage that is: during a run
            # ``stages_`` holds only the fits already finished, so "stage == len(stages_)" called every
            # new fit "stack" (a teacher's crawl)
            planned = rec.metrics.get("stages_planned")
            last = int(planned) if planned is not None and np.isfinite(planned) else (len(names) or None)
            if last is not None and k == last:
                out.append((float(rec.iteration), " stack", "the candidates stacked"))
            else:
                full = names[k] if k < len(names) else "a candidate fit (named when it ends)"
                out.append((float(rec.iteration), f" {k + 1}", f"{k + 1}: {full}"))
        prev = k
    return out


def row_changes(history) -> list[tuple[float, int]]:
    """(iteration, rows) wherever the progress records' ``rows`` metric (the rows a fit works on) changes."""
    out, prev = [], None
    for rec in history:
        rows = rec.metrics.get("rows")
        if rows is None:
            continue
        if prev is not None and rows != prev:
            out.append((float(rec.iteration), int(rows)))
        prev = rows
    return out


def snapshot_keys(history) -> list[str]:
    """The snapshot arrays worth a trace plot: non-empty, and not index bookkeeping (e.g. ``trace_index``,
    which says which coordinates the ``coords`` snapshot holds and never changes)."""
    if not history:
        return []
    snap = history[-1].snapshot
    return [k for k in snap if np.size(snap[k]) > 0 and not k.endswith("index")]


def snapshot_traces(history, key: str | None = None, max_series: int = 8, height: int = 300,
                    names=None, title: str | None = None, note: str | None = None):
    """Trace plot of the small arrays in progress snapshots (per-chain values or a few coordinates).

    Each snapshot array is flattened; series j is element j over iterations. For samplers whose snapshot
    is (chains,) or (chains, k) this draws one line per chain (per coordinate). ``names``: the series'
    names (:func:`dashboard.analysis.snapshot_names`), else ``key[i, j]``; ``title``: what the array
    holds (else its key).
    """
    if not history:
        return empty_figure("Traces: nothing recorded yet", height)
    keys = snapshot_keys(history)
    if not keys:
        return empty_figure("This method's progress records carry no trace values", height)
    key = key if key in keys else keys[0]
    idx = thin_index(len(history), MAX_CURVE_POINTS)
    rows = [(history[i].iteration, np.ravel(history[i].snapshot.get(key, []))) for i in idx]
    width = max(len(r[1]) for r in rows)
    n_series = min(width, max_series)
    shape = np.shape(history[-1].snapshot[key])
    if len(shape) == 2 and shape[1] <= max_series and n_series < width:
        n_series = (max_series // shape[1]) * shape[1]  # whole rows (chains): not a chain cut in half
    it = np.array([r[0] for r in rows], dtype=float)
    M = np.full((len(rows), n_series), np.nan)
    for i, (_, v) in enumerate(rows):
        k = min(len(v), n_series)
        M[i, :k] = v[:k]
    if names is None or len(names) < n_series:
        # an earlier record's array can be longer than the newest one's (S-BSVM's candidate fits keep
        # different numbers of inducing points): the newest names stay, the extra series are numbered
        # (all of them were numbered, "mean[0]" instead of "inducing point 1")
        numbered = ([f"{key}[{idx2}]" for idx2 in map(str, np.ndindex(shape))] if len(shape) > 1
                    else [f"{key}[{j}]" for j in range(width)])
        numbered = [n.replace("[(", "[").replace(")]", "]") for n in numbered]
        names = list(names or [])[:n_series]
        names += numbered[len(names):n_series]
        names += [f"{key}[{j}]" for j in range(len(names), n_series)]
    mode = _line_mode(len(rows))
    traces = [{"type": "scatter", "x": it, "y": M[:, j], "mode": mode, "name": names[j],
               "marker": {"size": 5}} for j in range(n_series)]
    if key == "w" and len(shape) == 1:  # one weight per input, in the inputs' order
        _colour_by_input(traces, list(range(n_series)))
    title = f"Trace: {title}" if title else f"Trace of '{key}'"
    # a legend below the plot wraps its entries onto as many rows as they need: past LEGEND_SERIES
    # series it took most of the chart's height. Then a legend at the right when its names are short
    # ("chain 3"); long ones ("chain 0, w[mean concave points]") squeezed a half-width plot to 50 px, so
    # they are named on hover only, and the title says so
    notes = [note] if note else []
    if width > n_series:
        notes.append(f"{n_series} of its {width} series shown")
    longest = max(len(str(n)) for n in names[:n_series])
    if n_series <= LEGEND_SERIES:
        legend = {"legend": LEGEND_BELOW}
    elif n_series <= 8 and LEGEND_SHORT_CHARS < longest <= LEGEND_RIGHT_CHARS:
        legend = {"legend": LEGEND_BELOW_2COL}
    elif longest <= LEGEND_RIGHT_CHARS:
        legend = {"legend": LEGEND_RIGHT}
    else:
        legend = {"showlegend": False}
        notes.append(HOVER_NOTE)
    margin = {}
    if notes:
        title = _subtitled(title, "; ".join(notes))
        margin = {"margin": SUBTITLE_MARGIN}
    return _fast_figure(traces, title, height, xaxis=_iteration_axis(history), **legend, **margin)


def statistics_panel(history, kind: str, feature_names=None, height: int = 300, panel: int = 110):
    """The chart beside the objective, chosen alike on the Train and Diagnostics pages: a fit's
    hyperparameters, else the sampler's statistics, else up to four other metrics, else a note saying
    why there is none (``kind``: the method's, for that note). (Diagnostics once put a SeegerARD fit's
    step size up as "Sampler statistics" where the Train page showed its hyperparameters.)"""
    groups = split_metrics(metric_names(history)) if history else {}
    if groups.get("hyper"):
        return metric_curves(history, groups["hyper"], "Hyperparameters", log_y=True, height=height,
                             feature_names=feature_names)
    stats = sampler_statistics(history, height=height, panel=panel)
    if stats is not None:
        return stats
    if groups.get("other"):
        return metric_curves(history, groups["other"][:4], "Statistics", separate_axes=True, height=height,
                             panel=panel)
    return empty_figure(no_stats_message(kind), height)


def named_snapshot_traces(history, key: str | None = None, model=None, feature_names=None,
                          height: int = 300):
    """:func:`snapshot_traces` of ``key`` (default: the first snapshot array) with its lines named by
    chain and parameter (:func:`dashboard.analysis.snapshot_names`, from ``model``, the run's newest
    state) and titled by what the array holds."""
    keys = snapshot_keys(history)
    key = key if key in keys else (keys[0] if keys else None)
    names = (snapshot_names(history, key, model, feature_names, getattr(model, "classes_", None))
             if key else None)
    title = SNAPSHOT_TITLES.get(key)
    m = np.shape(getattr(model, "mean_", ()))
    if key == "mean" and len(m) == 1 and history and m[0] > np.size(history[-1].snapshot.get("mean", ())):
        # (S-BSVM records the first few: "q(u) mean" with 5 lines read as all of q(u), a crawl)
        # (the count on the note line: "Trace: q(u) mean at 5 of its 100 inducing points" was cut at
        # "...inducing poi" in a half-width chart at 1280 px, a crawl)
        note = f"at {np.size(history[-1].snapshot['mean'])} of its {m[0]} inducing points"
    else:
        note = None
    fig = snapshot_traces(history, key, names=names, title=title, height=height, note=note)
    marks = stage_changes(history, getattr(model, "stages_", None)) if key and history else []
    if marks:
        # each candidate fit starts over (S-BSVM's kernel="auto"): its jump back to the start, and the
        # short fits' spikes at the right, had no mark here while the objective above marks them (a crawl)
        fig.update_layout(shapes=[*(fig.layout.shapes or ()), *_mark_lines(marks)])
        text = fig.layout.title.text or ""
        if "dotted:" not in text:
            text = _subtitled(text, "dotted: next candidate fit")
            fig.update_layout(title_text=text, margin_t=max(fig.layout.margin.t or 45, SUBTITLE_MARGIN["t"]
                                                          + NOTE_LINE * (text.count("<br>") - 1)))
    return fig


# ----------------------------------------------------------------------------------------- maps


def _point_traces(X, y, classes, showlegend=True, xaxis=None, yaxis=None, outline=True) -> list[dict]:
    """The data points, one trace per class. ``outline=False``: no white rim (the browser then styles
    each point about twice as fast: for maps redrawn live)."""
    out = []
    for k, c in enumerate(classes):
        m = np.asarray(y) == c
        tr = {"type": "scatter", "x": X[m, 0], "y": X[m, 1], "mode": "markers", "name": class_name(c),
              "legendgroup": f"class{k}", "showlegend": showlegend,
              "marker": {"size": 5, "color": CLASS_COLOURS[k % len(CLASS_COLOURS)],
                         "symbol": ["circle", "x", "diamond", "square"][k % 4]}}
        if outline:
            tr["marker"]["line"] = {"width": 0.6, "color": "white"}
        if xaxis:
            tr.update(xaxis=xaxis, yaxis=yaxis)
        out.append(tr)
    return out


def _points(fig, X, y, classes, row=None, col=None, showlegend=True):
    for tr in _point_traces(X, y, classes, showlegend):
        if row:
            fig.add_trace(go.Scatter(tr), row=row, col=col)
        else:
            fig.add_trace(go.Scatter(tr))


def _hover(axis_titles, what: str = "p=%{z:.3f}") -> str:
    return (f"{axis_titles[0]}=%{{x:.2f}}<br>{axis_titles[1]}=%{{y:.2f}}<br>{what}<extra></extra>")


def _map_axes(grid: Grid, axis_titles, x: str = "x") -> tuple[dict, dict]:
    """The x and y axes of a map over ``grid``, its plot held square (the y axis scaled to the x axis,
    the longer one's domain shrunk): a map as wide as its column was stretched to 3:1 (Calibration with
    one model, Compare at 1920 px, the PNG export)."""
    xs, ys = grid.xs, grid.ys
    ratio = float((xs[-1] - xs[0]) / (ys[-1] - ys[0])) if ys[-1] != ys[0] else 1.0
    return (_axis(axis_titles[0], range=[xs[0], xs[-1]], constrain="domain"),
            _axis(axis_titles[1], range=[ys[0], ys[-1]], constrain="domain", scaleanchor=x, scaleratio=ratio))


def _colourbar(title: str) -> dict:
    """A map's colour bar, its title along the bar (side "right"): a title on top is as wide as its text,
    and "predictive entropy" widened the bar by 80 px, so the square plot beside it shrank (its map was
    smaller than the probability map above it) and a width made for the usual bar did not fit it."""
    return {"title": {"text": title, "side": "right"}, "len": 0.8, "thickness": 14}


#: the legend's name of the true p(y|x) contours, with their levels: the Train page's map (unlabelled, as
#: drawn live) said only "true p(y|x)", and Calibration's caption alone gave the levels (a crawl)
TRUTH_NAME = "true p(y|x) 0.1 to 0.9"


def _truth_trace(grid: Grid, truth) -> dict:
    """The true p(y|x) as dotted contours at 0.1, 0.3, ..., 0.9, unlabelled: for maps redrawn live and for
    grids of small maps (the labels' placement is most of a map's drawing time in the browser, measured:
    200 ms against 60 ms without, for a 45 x 45 grid). :func:`_truth_traces` labels the 0.5 level."""
    return {"type": "contour", "x": grid.xs, "y": grid.ys, "z": grid.reshape(truth),
            "showscale": False, "name": TRUTH_NAME, "showlegend": True, "hoverinfo": "skip",
            "legendgroup": "truth",
            "contours": {"coloring": "none", "showlabels": False, "start": 0.1, "end": 0.9, "size": 0.2},
            "line": {"color": "black", "width": 1.2, "dash": "dot"}}


def _truth_traces(grid: Grid, truth) -> list[dict]:
    """The true p(y|x) for a map that is looked at, not redrawn live: the levels of :func:`_truth_trace`
    (legend hidden, same legend group) under the 0.5 level (the Bayes boundary), drawn a little heavier
    and labelled. With every level labelled, a saddle such as XOR's centre, where all levels meet, piled
    eight labels on one spot (a crawl); the other levels run in order away from the labelled line."""
    levels = {**_truth_trace(grid, truth), "showlegend": False}
    half = {**_truth_trace(grid, truth), "line": {"color": "black", "width": 1.8, "dash": "dot"},
            "contours": {"coloring": "none", "showlabels": True, "start": 0.5, "end": 0.5, "size": 0.2,
                         "labelfont": {"size": 10, "color": "black"}}}
    return [levels, half]


#: most support vectors a map draws (evenly spaced among them; the legend gives the count)
MAX_OVERLAY = 300


def _overlay_trace(overlay, overlay_name: str) -> dict:
    """Inducing points as open black triangles (crosses looked like the second class's red crosses, and
    hid a point a teacher added under them: a crawl); support vectors, which are training points, as
    rings around them (crosses hid the class markers under them: a crawl)."""
    if "support" in overlay_name.lower():
        # hundreds of support vectors (twonorm) drawn as heavy rings buried the map under a black blob;
        # thousands (7,871 of 20,000 churn rows, a crawl) still did: at most MAX_OVERLAY, evenly spaced,
        # and the name says how many there are
        if len(overlay) > MAX_OVERLAY:
            overlay_name = f"{overlay_name} ({MAX_OVERLAY} of {len(overlay):,})"
            overlay = overlay[np.linspace(0, len(overlay) - 1, MAX_OVERLAY).round().astype(int)]
        many = len(overlay) > 60
        marker = {"symbol": "circle-open", "size": 10 if many else 13, "color": "black",
                  "line": {"width": 0.8 if many else 1.5}, "opacity": 0.45 if many else 1.0}
    else:
        marker = {"symbol": "triangle-up-open", "size": 9, "color": "black", "line": {"width": 1.5}}
    return {"type": "scatter", "x": overlay[:, 0], "y": overlay[:, 1], "mode": "markers",
            "name": overlay_name, "marker": marker}


def proba_heatmap(grid: Grid, p: np.ndarray, X=None, y=None, classes=(), *, overlay=None,
                  overlay_name: str = "", truth=None, title: str = "p(y = 1 | x)",
                  colorbar_title: str = "p", height: int = 430, axis_titles=("x1", "x2"),
                  light: bool = False):
    """A map of probabilities on a fixed 0..1 colour scale with the training points on top.

    overlay: (m, 2) points learned by the method (inducing points, support vectors; see _overlay_trace).
    truth: the true p(y|x) on the same grid, drawn as contour lines at 0.1, 0.3, 0.5, 0.7, 0.9.
    light: cheaper to draw in the browser (no contour labels, no rims on the points), for live views.
    """
    traces = [{"type": "heatmap", "x": grid.xs, "y": grid.ys, "z": grid.reshape(p), "zmin": 0.0, "zmax": 1.0,
               "colorscale": PROBA_SCALE, "colorbar": _colourbar(colorbar_title),
               "hovertemplate": _hover(axis_titles)}]
    if truth is not None:
        traces += [_truth_trace(grid, truth)] if light else _truth_traces(grid, truth)
    if X is not None:
        traces += _point_traces(X, y, classes, outline=not light)
    if overlay is not None and len(overlay):
        traces.append(_overlay_trace(overlay, overlay_name))
    xaxis, yaxis = _map_axes(grid, axis_titles)
    return _fast_figure(traces, title, height, xaxis=xaxis, yaxis=yaxis,
                        legend=LEGEND_BELOW, margin=MAP_MARGIN)


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha:.3f})"


def class_map(grid: Grid, P: np.ndarray, X=None, y=None, classes=(), *, overlay=None, overlay_name: str = "",
              title: str = "predicted class", height: int = 430, axis_titles=("x1", "x2")):
    """A multi-class map: each grid cell in its predicted class's colour, with the confidence (the top
    class's probability, from 1/K to 1) as opacity, so pale cells are close calls. One heatmap per class,
    blank outside that class's region; the points' colours match the regions'."""
    P = np.asarray(P, dtype=float)
    K = P.shape[1]
    top, conf = P.argmax(axis=1), P.max(axis=1)
    traces = []
    for k in range(K):
        colour = CLASS_COLOURS[k % len(CLASS_COLOURS)]
        z = np.where(top == k, conf, np.nan)
        name = str(classes[k]) if len(classes) > k else str(k)
        traces.append({"type": "heatmap", "x": grid.xs, "y": grid.ys, "z": grid.reshape(z),
                       "zmin": 1.0 / K, "zmax": 1.0, "showscale": False, "name": class_name(name),
                       "colorscale": [[0.0, _rgba(colour, 0.04)], [1.0, _rgba(colour, 0.85)]],
                       "hoverongaps": False,
                       "hovertemplate": _hover(axis_titles, f"{class_name(name)}, p=%{{z:.3f}}")})
    if X is not None:
        points = _point_traces(X, y, classes)
        for tr in points:  # a dark rim: the points sit on regions of their own colour
            tr["marker"]["line"] = {"width": 0.8, "color": "#222"}
        traces += points
    if overlay is not None and len(overlay):
        traces.append(_overlay_trace(overlay, overlay_name))
    xaxis, yaxis = _map_axes(grid, axis_titles)
    margin = {**MAP_MARGIN, "t": SUBTITLE_MARGIN["t"]} if "<br>" in title else MAP_MARGIN  # (a subtitle)
    return _fast_figure(traces, title, height, xaxis=xaxis, yaxis=yaxis,
                        legend=LEGEND_BELOW, plot_bgcolor="white", margin=margin)


def model_map(model, data, grid: Grid, title: str, *, truth=None, max_points: int = 800, height: int = 430,
              light: bool = False):
    """The map of a fitted 2-D model over ``grid``: binary models as p(y = classes[1] | x) on the 0..1
    scale with the true p(y|x) contours when ``truth`` (its values on the grid) is given; 3+ classes
    coloured by class with confidence as opacity. The method's own points (inducing points, support
    vectors) are drawn from its fitted attribute, in the model's coordinates. ``light``: quicker to
    draw (see :func:`proba_heatmap`), for a map redrawn while a fit runs."""
    from .analysis import overlay_points, shown_points

    P = model.predict_proba(grid.points)
    overlay, overlay_name = overlay_points(model)
    X, y = shown_points(data, max_points)
    axes = tuple(data.axis_names)
    if P.shape[1] == 2:
        return proba_heatmap(grid, P[:, 1], X, y, data.classes, overlay=overlay, overlay_name=overlay_name,
                             truth=truth, title=f"{title}: p(y = {data.classes[1]} | x)", axis_titles=axes,
                             height=height, light=light)
    # (the reading hint on a second line: "MS-BPM: class (opacity = confidence)" ran under the chart's
    # mode bar at 1280 px, a crawl)
    return class_map(grid, P, X, y, data.classes, overlay=overlay, overlay_name=overlay_name,
                     title=_subtitled(f"{title}: predicted class", "opacity = confidence"), axis_titles=axes,
                     height=height)


def value_heatmap(grid: Grid, values: np.ndarray, X=None, y=None, classes=(), *, title: str,
                  colorbar_title: str = "", height: int = 430, zmax=None, axis_titles=("x1", "x2")):
    """A map of a non-negative quantity (entropy, latent variance) on a colour scale from 0 to ``zmax``
    (a fixed top such as log K makes maps of different methods comparable)."""
    traces = [{"type": "heatmap", "x": grid.xs, "y": grid.ys, "z": grid.reshape(values),
               "colorscale": "Viridis", "zmin": 0.0, "zmax": zmax,
               "colorbar": _colourbar(colorbar_title),
               "hovertemplate": _hover(axis_titles, f"{colorbar_title}=%{{z:.3g}}")}]
    if X is not None:
        traces += _point_traces(X, y, classes)
    xaxis, yaxis = _map_axes(grid, axis_titles)
    return _fast_figure(traces, title, height, xaxis=xaxis, yaxis=yaxis, legend=LEGEND_BELOW,
                        margin=MAP_MARGIN)


# ----------------------------------------------------------------------------------------- calibration


#: the level of the intervals drawn on reliability diagrams
RELIABILITY_LEVEL = 0.9


def reliability_figure(curves: dict, height: int = 420, xlabel: str = "predicted probability"):
    """Reliability diagrams for several models: observed frequency vs mean prediction per bin with its
    :data:`RELIABILITY_LEVEL` Wilson interval, and the bin counts as bars underneath. ``curves`` maps a
    model name to ``bsvm.metrics.ReliabilityBins``."""
    from bsvm.metrics import wilson_interval

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28], vertical_spacing=0.06)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                             line=dict(color="grey", dash="dash")), row=1, col=1)
    colours = model_colours(curves)
    for k, (name, b) in enumerate(curves.items()):
        colour = colours[name]
        ok = b.count > 0
        # 90 % Wilson intervals of each bin's observed frequency: on a small test set a bin of one or two
        # points swings between 0 and 1, and the bar says it could be anywhere there
        lo, hi = wilson_interval(b.frac_pos[ok] * b.count[ok], b.count[ok], RELIABILITY_LEVEL)
        # (cliponaxis=False: a bin observed at 0 or 1 sits on the axis edge, and was drawn half cut off)
        fig.add_trace(go.Scatter(x=b.mean_pred[ok], y=b.frac_pos[ok], mode="lines+markers", name=name,
                                 cliponaxis=False, line=dict(color=colour),
                                 customdata=np.column_stack([b.count[ok], lo, hi]),
                                 error_y=dict(type="data", symmetric=False, array=hi - b.frac_pos[ok],
                                              arrayminus=b.frac_pos[ok] - lo, thickness=1, width=3,
                                              color=colour),
                                 hovertemplate="mean p=%{x:.3f}<br>observed=%{y:.3f}<br>n=%{customdata[0]}"
                                               "<br>90% interval %{customdata[1]:.2f}-%{customdata[2]:.2f}"),
                      row=1, col=1)
        centres = 0.5 * (b.edges[:-1] + b.edges[1:])
        fig.add_trace(go.Bar(x=centres, y=b.count, name=f"{name}: bin counts", marker_color=colour,
                             opacity=0.6, showlegend=False, width=np.diff(b.edges) * 0.45,
                             offset=(k - 0.5) * 0.045 if len(curves) > 1 else None), row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(title=xlabel, range=[0, 1], row=2, col=1)
    fig.update_yaxes(title="observed frequency", range=[0, 1], row=1, col=1)
    fig.update_yaxes(title="count", row=2, col=1)
    return _layout(fig, "Reliability diagram (test set)", height, legend=LEGEND_BELOW)


#: the background of a table's best values
BEST_SHADE = "background-color: #c8e6c9"


def shade_best(column, higher=(), decimals: int = 4) -> list[str]:
    """Styles for ``pandas.Styler.apply``: shade the best value of a metrics column (the largest for the
    columns named in ``higher``, such as AUC, else the smallest), compared as shown, to ``decimals``
    places, so every value that reads the same as the best is shaded too (a tie at 0.9876 was shaded
    once, or, for AUC, not at all)."""
    v = np.round(np.asarray(column, dtype=float), decimals)
    if not np.isfinite(v).any():
        return [""] * len(v)
    best = np.nanmax(v) if column.name in higher else np.nanmin(v)
    return [BEST_SHADE if x == best else "" for x in v]


def model_colours(names) -> dict:
    """Each model's colour in the charts that compare models: the baseline (:data:`BASELINE_NAME`) always
    :data:`BASELINE_COLOUR`, the others the remaining colours in turn (PlattSVM's curve was green alone
    and purple beside a method that then took the green, a crawl)."""
    others = iter([c for c in CLASS_COLOURS[2:] if c != BASELINE_COLOUR] * 4)
    # (a PlattSVM run is labelled "PlattSVM (SVC + Platt scaling)")
    return {name: BASELINE_COLOUR if str(name).split(" (")[0] == BASELINE_NAME else next(others)
            for name in names}


def outline_after_first(fig: go.Figure) -> go.Figure:
    """Overlaid histograms: the first filled, the others drawn as outlines in their colours. Two filled
    translucent histograms blend to a third colour where they overlap (green over purple showed grey,
    which the two-entry legend did not explain: a teacher's crawl)."""
    for k, tr in enumerate(fig.data):
        if k == 0:
            tr.update(opacity=0.5)
        else:
            colour = tr.marker.color
            tr.update(opacity=1.0, marker={"color": "rgba(0,0,0,0)", "line": {"color": colour, "width": 2}})
    return fig


def proba_histograms(probas: dict, title="Predicted probabilities (test set)", height: int = 320,
                     xlabel: str = "predicted probability"):
    fig = go.Figure()
    colours = model_colours(probas)
    for name, p in probas.items():
        fig.add_trace(go.Histogram(x=np.asarray(p), name=name, xbins=dict(start=0, end=1, size=0.05),
                                   opacity=0.6, marker_color=colours[name]))
    fig.update_layout(barmode="overlay")
    outline_after_first(fig)
    fig.update_xaxes(title=xlabel, range=[0, 1])
    fig.update_yaxes(title="count")
    return _layout(fig, title, height, legend=LEGEND_BELOW)


#: progress-record names in words for the learning curves (the rule's R-hat and ESS are the worst over
#: the quantities it monitors; "_min"/"_max" are the best chain's)
CURVE_LABELS = {"rhat": "R-hat", "ess_bulk": "bulk ESS", "ess_tail": "tail ESS", "step_size": "step size",
                "acceptance": "acceptance", "log_posterior": "log posterior",
                "log_posterior_max": "log posterior (best chain)", "train_error": "training error",
                "train_error_min": "training error (best chain)", "elbo": "ELBO",
                "free_energy": "free energy",
                "potential": "potential U", "ads_fraction": "ADS moves", "bias_variance": "bias variance",
                "lengthscale": "length scale", "xi": "thermostat xi",
                # SeegerARD's eq. 8 kernel, C (exp(...) + v): named, "C" and "v" were unexplained (a crawl)
                "C": "C (kernel amplitude)", "v": "v (kernel offset)"}

METRIC_LABELS = {"error": "error", "brier": "Brier", "log_loss": "log loss", "ece": "ECE", "auc": "AUC",
                 "mad_true": "mean |p - p_true|"}


def metrics_table(reports: dict, fit_times: dict | None = None) -> pd.DataFrame:
    """One row per model: its metrics (and fit time in seconds when given)."""
    rows = []
    for name, rep in reports.items():
        row = {"method": name, **{METRIC_LABELS.get(k, k): float(v) for k, v in rep.items()}}
        if fit_times is not None and name in fit_times:
            row["fit time (s)"] = float(fit_times[name])
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")


# ----------------------------------------------------------------------------------------- chains


def _as_chains(samples) -> np.ndarray:
    S = np.asarray(samples, dtype=float)
    if S.ndim == 2:  # draws x params from a single chain
        S = S[None]
    if S.ndim != 3:
        raise ValueError(f"samples_ must be (chains, draws, params), got shape {S.shape}.")
    return S


def chain_traces(samples, param: int, chains=None, name: str = "", height: int = 300):
    S = _as_chains(samples)
    chains = range(S.shape[0]) if chains is None else chains
    fig = go.Figure()
    idx = thin_index(S.shape[1], 2000)
    for c in chains:
        fig.add_trace(go.Scatter(x=idx, y=S[c, idx, param], mode="lines", name=f"chain {c}",
                                 line=dict(width=1)))
    fig.update_xaxes(title="draw")
    return _layout(fig, f"Trace: {name or f'param {param}'}", height, legend=LEGEND_BELOW)


def running_means(samples, param: int, chains=None, name: str = "", height: int = 300):
    """Cumulative mean per chain: chains that agree settle on one level."""
    S = _as_chains(samples)
    chains = range(S.shape[0]) if chains is None else chains
    fig = go.Figure()
    idx = thin_index(S.shape[1], 2000)
    for c in chains:
        rm = np.cumsum(S[c, :, param]) / np.arange(1, S.shape[1] + 1)
        fig.add_trace(go.Scatter(x=idx, y=rm[idx], mode="lines", name=f"chain {c}"))
    fig.update_xaxes(title="draw")
    return _layout(fig, f"Running mean: {name or f'param {param}'}", height,
                   legend=LEGEND_BELOW)


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation of a 1-D series at lags 0..max_lag (bsvm.diagnostics, i.e. arviz-stats)."""
    from bsvm.diagnostics import autocorrelation as acf

    x = np.asarray(x, dtype=float)
    if np.ptp(x) == 0:
        return np.zeros(max_lag + 1)
    return np.asarray(acf(x[None, :], max_lag), dtype=float)


def autocorrelation_figure(samples, param: int, chains=None, max_lag: int = 50, name: str = "",
                           height: int = 300):
    S = _as_chains(samples)
    chains = range(S.shape[0]) if chains is None else chains
    max_lag = int(min(max_lag, S.shape[1] - 1))
    fig = go.Figure()
    for c in chains:
        fig.add_trace(go.Scatter(x=np.arange(max_lag + 1), y=autocorrelation(S[c, :, param], max_lag),
                                 mode="lines+markers", marker=dict(size=3), name=f"chain {c}"))
    fig.update_xaxes(title="lag")
    fig.update_yaxes(range=[-0.3, 1.05])
    return _layout(fig, f"Autocorrelation: {name or f'param {param}'}", height,
                   legend=LEGEND_BELOW)


def rank_counts(samples, param: int, n_bins: int = 20) -> np.ndarray:
    """Histogram per chain of the ranks of its draws among all chains' draws (Vehtari et al. 2021), via
    bsvm.diagnostics.rank_plot_data."""
    from bsvm.diagnostics import rank_plot_data

    return np.asarray(rank_plot_data(_as_chains(samples)[:, :, param], n_bins))


def rank_figure(samples, param: int, chains=None, n_bins: int = 20, name: str = "", height: int = 300):
    """Rank plot: flat histograms mean the chains explore the same distribution."""
    counts = rank_counts(samples, param, n_bins)
    chains = range(counts.shape[0]) if chains is None else chains
    fig = go.Figure()
    for c in chains:
        fig.add_trace(go.Scatter(x=np.arange(n_bins), y=counts[c], mode="lines", line_shape="hvh",
                                 name=f"chain {c}"))
    expected = counts.sum(axis=1).mean() / n_bins
    fig.add_hline(y=expected, line=dict(color="grey", dash="dash"))
    fig.update_xaxes(title="rank bin")
    fig.update_yaxes(title="count", rangemode="tozero")
    return _layout(fig, f"Rank plot: {name or f'param {param}'}", height,
                   legend=LEGEND_BELOW)


#: the flags use the samplers' own stopping rule (bsvm.convergence.StoppingRule: R-hat <= 1.01, bulk and
#: tail ESS >= 400 summed over chains, Vehtari et al. 2021), so a run that met its rule is not flagged for
#: the same quantities (Stan's "100 per chain" is that rule for 4 chains, but asked MS-BPM's 8-16 chains
#: for 800-1600)
RHAT_MAX = 1.01
ESS_MIN = 400.0
#: the flag of a quantity with the same value in every draw of every chain (nothing to diagnose)
CONSTANT = "constant"


def _flag(rhat: float, bulk: float, tail: float, n_chains: int) -> str:
    bad = []
    if n_chains > 1 and not (rhat <= RHAT_MAX):
        bad.append(f"R-hat > {RHAT_MAX:g}")
    if not (bulk >= ESS_MIN):
        bad.append(f"bulk-ESS < {ESS_MIN:g}")
    if not (tail >= ESS_MIN):
        bad.append(f"tail-ESS < {ESS_MIN:g}")
    return "; ".join(bad) if bad else "ok"


def stopping_rule_table(status, n_chains: int) -> pd.DataFrame | None:
    """The sampler's own last convergence check (``convergence_``, a ``bsvm.convergence.ConvergenceStatus``)
    quantity by quantity: what its stopping rule monitored (the log posterior, p(y|x) at fixed training
    rows and, for some samplers, every parameter), with the numbers it computed and the same flags as
    :func:`diagnostics_table`; failing rows first. None when the run made no check."""
    per = getattr(status, "per_quantity", None) or {}
    if not per.get("names"):
        return None
    rows = pd.DataFrame({"quantity": list(per["names"]), "R-hat": np.asarray(per["rhat"], dtype=float),
                         "bulk-ESS": np.asarray(per["ess_bulk"], dtype=float),
                         "tail-ESS": np.asarray(per["ess_tail"], dtype=float)})
    values = rows[["R-hat", "bulk-ESS", "tail-ESS"]].to_numpy()
    rows["flag"] = [_flag(r, b, t, n_chains) for r, b, t in values]
    order = np.argsort((rows["flag"] == "ok").to_numpy(), kind="stable")
    return rows.iloc[order].set_index("quantity")


def rule_quantity_names(names, params) -> list[str]:
    """A stopping rule's quantity names (``bsvm.convergence``: "log_posterior", "p(y|x[12])", a parameter's
    name, or "theta[3]" from a fit made before the samplers named their parameters) in the Diagnostics
    page's words: "log posterior", "p(y[12] | x[12])" (the predictive probability of row 12's observed
    class: with three classes "p(y|x)" did not say which), and the parameter's own name from ``params``
    (the model's parameters in sample order)."""
    out = []
    for q in map(str, names):
        if q == "log_posterior":
            q = "log posterior"
        elif (m := re.fullmatch(r"p\(y\|x\[(\d+)\]\)", q)) is not None:
            q = f"p(y[{m[1]}] | x[{m[1]}])"
        elif (m := re.fullmatch(r"theta\[(\d+)\]", q)) is not None and int(m[1]) < len(params):
            q = str(params[int(m[1])])
        out.append(q)
    return out


def rhat_text(v) -> str:
    """R-hat with four decimals (at three significant digits 1.0098, within the rule, showed as 1.01), and
    six where four would hide why a value is flagged (1.01004 showed as "1.0100" beside "R-hat > 1.01")."""
    text = f"{v:.4f}"
    if v > RHAT_MAX and float(text) <= RHAT_MAX:
        text = f"{v:.6f}"
    return text


def diagnostics_table(samples, names=None) -> pd.DataFrame:
    """R-hat (rank-normalised split), bulk and tail ESS and MCSE of the mean per parameter, from
    bsvm.diagnostics (arviz-stats, Vehtari et al. 2021), flagged where the stopping rule's thresholds
    (:data:`RHAT_MAX`, :data:`ESS_MIN`) are passed; a parameter that never moves is flagged
    :data:`CONSTANT`, its statistics NaN. Failing rows first, then passing ones, then constants."""
    from bsvm import diagnostics as D

    S = _as_chains(samples)
    n_chains, n_draws, n_par = S.shape
    names = list(names) if names is not None else [f"param {j}" for j in range(n_par)]
    with np.errstate(all="ignore"):
        rhat = np.atleast_1d(np.asarray(D.rhat(S), dtype=float))
        bulk = np.atleast_1d(np.asarray(D.ess_bulk(S), dtype=float))
        tail = np.atleast_1d(np.asarray(D.ess_tail(S), dtype=float))
        mcse = np.atleast_1d(np.asarray(D.mcse(S), dtype=float))
    # a quantity that never moves (e.g. a coordinate the model pins at 0) has no R-hat (0 / 0): it is
    # flagged CONSTANT, not as a failed check (it was shown as "R-hat > 1.01" on MS-BPM's default runs)
    constant = np.all(S == S[:1, :1, :], axis=(0, 1))
    flags = [CONSTANT if constant[j] else _flag(rhat[j], bulk[j], tail[j], n_chains) for j in range(n_par)]
    # ... and its ESS and MCSE are undefined too (arviz-stats gave the draw count as its ESS: "1552")
    for v in (rhat, bulk, tail, mcse):
        v[constant] = np.nan
    # sd over all draws divided by n - 1, as arviz-stats' summary and bsvm.diagnostics.summary (a crawl
    # saw 0.1783 here and 0.178381 there)
    table = pd.DataFrame({"parameter": names[:n_par], "mean": S.mean(axis=(0, 1)),
                          "sd": S.std(axis=(0, 1), ddof=1),
                          "R-hat": rhat, "bulk-ESS": bulk, "tail-ESS": tail, "MCSE(mean)": mcse,
                          "flag": flags}).set_index("parameter")
    # failing rows first, as in the stopping rule's table, then the passing ones, then the constants (a
    # stable sort: each group keeps the parameters' order)
    rank = np.where(constant, 2, np.where(table["flag"].to_numpy() == "ok", 1, 0))
    return table.iloc[np.argsort(rank, kind="stable")]


def draws_overlay(approx, exact, param: int, names=("approximate", "exact GibbsSVM"), name: str = "",
                  height: int = 320):
    """Histograms of one parameter's draws from two samplers on one axis."""
    fig = go.Figure()
    for k, (label, S) in enumerate(zip(names, (approx, exact))):
        v = _as_chains(S)[:, :, param].ravel()
        fig.add_trace(go.Histogram(x=v, name=label, histnorm="probability density", opacity=0.55, nbinsx=50,
                                   marker_color=CLASS_COLOURS[k + 2]))
    fig.update_layout(barmode="overlay")
    outline_after_first(fig)
    return _layout(fig, f"Posterior draws: {name or f'param {param}'}", height,
                   legend=LEGEND_BELOW)


def heatmap_grid(maps: dict, grid: Grid, X, y, classes, cols: int = 3, height_per_row: int = 330,
                 subtitle: str = "p(y = 1 | x)", truth=None, axis_titles=None):
    """Several maps side by side (the Compare page). ``maps`` holds each model's predict_proba on the
    grid, (points, K): two classes on one 0..1 scale of p(classes[1]); 3+ classes coloured by class with
    confidence as opacity (as :func:`class_map`). A 1-D array is taken as p(classes[1]). ``truth``: the
    true p(y|x) on the grid, dotted contours on every two-class map (unlabelled: six maps of labels are
    clutter; the Calibration page labels them); ``axis_titles``: the two features' names."""
    names = list(maps)
    rows = max(1, int(np.ceil(len(names) / cols)))
    # a method's name without its description in brackets: at 1280 px the full labels of neighbouring
    # maps ran into each other, and a second row's titles sat on the first row's tick labels
    titles = [n.split(" (")[0] for n in names]
    # (0.17 between rows: at 0.14 a first row's tick labels touched the second row's titles in
    # presentation mode, a crawl)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.05,
                        vertical_spacing=0.17 if rows > 1 else 0.1)
    fig.update_annotations(font_size=13)
    for k, name in enumerate(names):
        r, c = k // cols + 1, k % cols + 1
        P = np.asarray(maps[name], dtype=float)
        if P.ndim == 2 and P.shape[1] > 2:
            for tr in class_map(grid, P, classes=classes).data:
                fig.add_trace(tr, row=r, col=c)
        else:
            p1 = P[:, 1] if P.ndim == 2 else P
            # (a labelled hover: Plotly's default read "x: -3.585385 / y: 1.041812 / z: 0.0690 / trace 20",
            # a crawl)
            hover_axes = tuple(axis_titles) if axis_titles is not None else ("x1", "x2")
            fig.add_trace(go.Heatmap(x=grid.xs, y=grid.ys, z=grid.reshape(p1), zmin=0, zmax=1,
                                     colorscale=PROBA_SCALE, showscale=(k == 0), name=titles[k],
                                     hovertemplate=f"{hover_axes[0]}=%{{x:.2f}}<br>{hover_axes[1]}=%{{y:.2f}}"
                                                   f"<br>{subtitle}=%{{z:.3f}}<extra>{titles[k]}</extra>",
                                     colorbar=dict(title="p", len=0.8)), row=r, col=c)
        if truth is not None and not (P.ndim == 2 and P.shape[1] > 2):
            fig.add_trace(go.Contour({**_truth_trace(grid, truth), "showlegend": k == 0}),
                          row=r, col=c)
        for tr in _point_traces(X, y, classes, showlegend=(k == 0)):
            if P.ndim == 2 and P.shape[1] > 2:  # a dark rim on regions of the points' own colour
                tr["marker"]["line"] = {"width": 0.8, "color": "#222"}
            fig.add_trace(go.Scatter(tr), row=r, col=c)
        if axis_titles is not None:  # (every map has the same axes: named at the bottom and on the left;
            # y titles between the maps ran into the neighbouring map)
            if k + cols >= len(names):
                fig.update_xaxes(title_text=axis_titles[0], title_font_size=11, row=r, col=c)
            if c == 1:
                fig.update_yaxes(title_text=axis_titles[1], title_font_size=11, row=r, col=c)
    for k in range(len(names)):  # each map square in its cell (at 1920 px a cell was 500 x 230 px)
        ax = "" if k == 0 else str(k + 1)
        _, square = _map_axes(grid, ("", ""), x=f"x{ax}")
        fig.layout[f"yaxis{ax}"].update(scaleanchor=square["scaleanchor"], scaleratio=square["scaleratio"],
                                        constrain="domain")
        fig.layout[f"xaxis{ax}"].update(constrain="domain")
    fig = _layout(fig, f"{subtitle}, one colour scale", rows * height_per_row + 40, legend=LEGEND_BELOW)
    fig.update_layout(margin=dict(t=85), plot_bgcolor="white")  # subplot titles sit under the figure title
    return fig
