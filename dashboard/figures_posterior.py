"""Pure Plotly figures of posterior draws: boundaries of sampled classifiers, the cloud of draws in weight
space with HMC's leapfrog paths, an ArviZ-style pair plot, the energy plot with BFMI and ESS against the
number of draws. Arrays in, ``go.Figure`` out; no Streamlit, so each is tested on its own
(tests/test_dashboard_figures.py). The numbers come from :mod:`dashboard.analysis` and
:mod:`bsvm.diagnostics`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .analysis import Grid
from .figures import (
    CLASS_COLOURS,
    LEGEND_BELOW,
    MAP_MARGIN,
    SUBTITLE_MARGIN,
    _axis,
    _fast_figure,
    _layout,
    _map_axes,
    _point_traces,
    _subtitled,
    outline_after_first,
)

CHAIN_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
BFMI_MIN = 0.3  # Betancourt (2016): below this the energy is poorly explored


def draw_boundaries(grid: Grid, values: np.ndarray, level: float, X=None, y=None, classes=(), *,
                    title: str = "Boundaries of posterior draws", axis_titles=("x1", "x2"),
                    height: int = 560):
    """One contour line per posterior draw at its decision level (p = 0.5, or w.x + b = 0), over the
    data: where the lines fan out, the posterior is unsure where the boundary lies."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    traces = []
    for i, v in enumerate(values):
        traces.append({"type": "contour", "x": grid.xs, "y": grid.ys, "z": grid.reshape(v),
                       "showscale": False, "hoverinfo": "skip", "name": "draws' boundaries",
                       "legendgroup": "draws", "showlegend": i == 0,
                       "contours": {"coloring": "none", "start": level, "end": level, "size": 1.0},
                       "line": {"color": "rgba(60,60,60,0.35)", "width": 1.2}})
    if X is not None:
        traces += _point_traces(X, y, classes)
    # a short title, the count on a second line: "Decision boundaries of posterior draws (30 draws)" ran
    # under the mode bar (top right, on hover) of a half-width chart at 1280 px (a crawl)
    # the maps' room below the plot (axis title, two rows of legend; ui.chart grows the figure for more),
    # and 40 px taller than a map for the subtitle: with a one-line title's bottom margin the legend, two
    # rows in presentation mode, pushed the plot up and shrank it to 190 px at 1280 px (a crawl); 560 px
    # tall: at 470 its square plot was 273 px, a small bundle of lines beside the weight cloud that filled
    # its half of a 1920 px page (a teacher's crawl; at 1280 px the plot is width-bound near 330 px)
    return _fast_figure(traces, _subtitled(title, f"{len(values)} draws, one grey line each"), height,
                        margin={**SUBTITLE_MARGIN, "b": MAP_MARGIN["b"]},
                        **dict(zip(("xaxis", "yaxis"), _map_axes(grid, axis_titles))),
                        legend=LEGEND_BELOW, plot_bgcolor="white")


def weight_cloud(W: np.ndarray, names=("w1", "w2"), paths=(), *, title: str = "Posterior draws in weight "
                 "space", max_points: int = 3000, height: int = 430, chains=None):
    """The draws (chains, draws, 2) as a cloud, one colour per chain, with HMC leapfrog paths on top
    (each (steps + 1, >= 2): its first two coordinates, start marked by a circle, end by a star).
    ``chains``: the chain numbers of ``W``'s rows (a selection of the run's chains), for their names and
    colours, as the other chain plots name them."""
    W = np.asarray(W, dtype=float)
    ids = list(range(W.shape[0])) if chains is None else [int(c) for c in chains]
    traces = []
    per_chain = max(1, max_points // max(1, W.shape[0]))
    for c in range(W.shape[0]):
        pts = W[c, -per_chain:]
        colour = CHAIN_COLOURS[ids[c] % len(CHAIN_COLOURS)]
        traces.append({"type": "scattergl", "x": pts[:, 0], "y": pts[:, 1], "mode": "markers",
                       "name": f"chain {ids[c]}", "marker": {"size": 4, "opacity": 0.45, "color": colour}})
    for i, p in enumerate(paths):
        p = np.asarray(p, dtype=float)
        last = i == len(paths) - 1
        traces.append({"type": "scatter", "x": p[:, 0], "y": p[:, 1], "mode": "lines+markers",
                       "name": "leapfrog path (last transitions)", "legendgroup": "path",
                       "showlegend": i == 0, "line": {"color": "black", "width": 2.0 if last else 1.0},
                       "opacity": 1.0 if last else 0.6,
                       # start and end larger than the steps: at size 5 the end's star could not be seen
                       "marker": {"size": [9] + [4] * (len(p) - 2) + [13], "color": "black",
                                  "symbol": ["circle-open"] + ["circle"] * (len(p) - 2) + ["star"]}})
    return _fast_figure(traces, title, height, xaxis=_axis(names[0]), yaxis=_axis(names[1]),
                        legend=LEGEND_BELOW)


def pair_plot(points: np.ndarray, names, *, title: str = "Pair plot of the draws", height: int | None = None):
    """ArviZ-style pair plot: histograms on the diagonal, scatter of draws below it, for a few
    quantities ((points, k) from ``analysis.pair_data``)."""
    points = np.asarray(points, dtype=float)
    k = points.shape[1]
    # a column's panels show the same quantity on x: shared, so only the bottom row has tick labels (each
    # row's labels overlapped the panel below at 1280 px)
    fig = make_subplots(rows=k, cols=k, horizontal_spacing=0.03, vertical_spacing=0.03, shared_xaxes=True)
    for i in range(k):
        for j in range(k):
            if j > i:
                continue
            if i == j:
                fig.add_trace(go.Histogram(x=points[:, i], nbinsx=30, marker_color="#1f77b4", opacity=0.75,
                                           showlegend=False, name=str(names[i])), row=i + 1, col=j + 1)
                # (counts: their tick labels sat over the scatter panel to the left)
                fig.update_yaxes(showticklabels=False, row=i + 1, col=j + 1)
            else:
                fig.add_trace(go.Scattergl(x=points[:, j], y=points[:, i], mode="markers", showlegend=False,
                                           marker=dict(size=3, opacity=0.35, color="#1f77b4"),
                                           name=f"{names[j]} vs {names[i]}"), row=i + 1, col=j + 1)
            if i == k - 1:  # (at most 3 ticks: "0.5" and "-40k" of neighbouring panels ran together)
                fig.update_xaxes(title_text=str(names[j]), nticks=3, row=i + 1, col=j + 1)
            if j == 0 and i > 0:
                fig.update_yaxes(title_text=str(names[i]), row=i + 1, col=j + 1)
            elif i != j:  # a row's scatter panels share its quantity on y: labels on the first only
                fig.update_yaxes(showticklabels=False, matches=f"y{i * k + 1}", row=i + 1, col=j + 1)
    return _layout(fig, title, height or max(360, 170 * k + 80))


def energy_plot(energy: np.ndarray, bfmi: np.ndarray, *, height: int = 340):
    """The marginal energy distribution (centred) against the distribution of energy changes between
    draws (Betancourt 2016); when the second is much narrower, HMC explores the energy levels slowly.
    The title gives the BFMI per chain (flagged below 0.3)."""
    E = np.asarray(energy, dtype=float)
    marginal = (E - E.mean(axis=1, keepdims=True)).ravel()
    transition = np.diff(E, axis=1).ravel()
    fig = go.Figure()
    fig.add_trace(go.Histogram(x=marginal, name="marginal energy (centred)", histnorm="probability density",
                               opacity=0.55, nbinsx=50, marker_color=CLASS_COLOURS[0]))
    fig.add_trace(go.Histogram(x=transition, name="energy transition (E_n - E_n-1)",
                               histnorm="probability density", opacity=0.55, nbinsx=50,
                               marker_color=CLASS_COLOURS[1]))
    fig.update_layout(barmode="overlay")
    outline_after_first(fig)
    fig.update_xaxes(title="energy")
    low = [c for c, b in enumerate(bfmi) if b < BFMI_MIN]
    flag = f" - low in chain(s) {low}" if low else ""
    text = ", ".join(f"{b:.2f}" for b in bfmi[:8]) + (" ..." if len(bfmi) > 8 else "")
    # (the BFMI values on a second line: on one line with the title they ran under the mode bar)
    fig = _layout(fig, _subtitled("Energy", f"BFMI per chain {text} (>= {BFMI_MIN} is good){flag}"), height,
                  legend=LEGEND_BELOW)
    return fig.update_layout(margin=SUBTITLE_MARGIN)


def ess_evolution(table: pd.DataFrame, name: str, threshold: float = 400.0, *, height: int = 340):
    """Bulk and tail ESS against the total number of draws (``analysis.ess_by_draws``): healthy chains
    give lines that rise steadily; the dashed line is the stopping rule's ESS threshold (summed over
    chains, ``bsvm.convergence.StoppingRule``)."""
    x = table["total draws"].to_numpy(dtype=float)
    traces = [{"type": "scatter", "x": x, "y": table[col].to_numpy(dtype=float), "mode": "lines+markers",
               "name": f"{col} ESS", "marker": {"size": 6}} for col in ("bulk", "tail")]
    traces.append({"type": "scatter", "x": [x.min(), x.max()] if len(x) else [0, 1],
                   "y": [float(threshold), float(threshold)], "mode": "lines",
                   "name": f"stopping rule: {threshold:g}",
                   "line": {"color": "grey", "dash": "dash"}})
    return _fast_figure(traces, f"ESS against draws: {name}", height,
                        xaxis=_axis("total draws (all chains)"),
                        yaxis=_axis("effective sample size", rangemode="tozero"), legend=LEGEND_BELOW)
