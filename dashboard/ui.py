"""Streamlit pieces shared by several pages: method option widgets, safe estimator calls, model maps."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from . import state
from .methods import Method

if TYPE_CHECKING:  # analysis and figures import pandas (~0.3 s): app.py's sidebar (presentation_toggle,
    # import_problems) runs before the Data page's first elements and must not wait for it
    from .analysis import Prepared


#: how a select option's None (a library default such as ``features=None``) is shown and kept in its widget
NONE = "none"


def option_widgets(method: Method, disabled: bool = False, n_classes: int | None = None) -> dict:
    """One widget per option the method accepts, bound to the settings dict (and so to the URL). With
    ``n_classes`` = 2 the options only a multi-class sampler reads are left out (their values kept): MS-BPM
    showed its line moves' "Directions" and "Block step" on two-class data, where they change nothing
    (a teacher's crawl)."""
    opts = state.method_options(method.key)
    for o in method.visible_options():
        if o.multiclass_only and n_classes == 2:
            continue
        kw = {"help": o.help, "disabled": disabled}
        scope = f"opt:{method.key}"
        if o.kind == "select" and None in o.choices:
            # a selectbox whose value is None shows its placeholder ("Choose an option"), as if nothing
            # were chosen: the library's None is shown, and kept in the widget, as the word "none"
            choices = [NONE if c is None else c for c in o.choices]
            opts[o.name] = NONE if opts[o.name] is None else opts[o.name]
            state.bind(st.selectbox, o.name, o.label, store=opts, scope=scope, options=choices, **kw)
            opts[o.name] = None if opts[o.name] == NONE else opts[o.name]
        elif o.kind == "select":
            state.bind(st.selectbox, o.name, o.label, store=opts, scope=scope, options=list(o.choices), **kw)
        elif o.kind == "bool":
            state.bind(st.checkbox, o.name, o.label, store=opts, scope=scope, **kw)
        elif o.kind in ("int", "float"):
            cast = int if o.kind == "int" else float
            # None is a library default meaning "automatic" (e.g. a run length chosen by the stopping
            # rule): an empty box keeps it, a number overrides it
            auto = opts[o.name] is None or method.defaults().get(o.name, 0) is None
            opts[o.name] = None if opts[o.name] is None else cast(opts[o.name])
            label = f"{o.label} (empty = automatic)" if auto else o.label
            extra = {"step": 1} if o.kind == "int" else {"format": "%g"}
            # the range in words: a number typed below the minimum was set back with only a red "!" to
            # show for it (a crawl typed 2 chains for MS-BPM, which needs 4)
            # (ints in full, "at most 1,000,000": "%g" wrote 1e+06, a review)
            fmt = (lambda v: f"{int(v):,}") if o.kind == "int" else (lambda v: f"{v:,g}")
            bounds = [b for b in (f"at least {fmt(o.min)}" if o.min is not None else "",
                                  f"at most {fmt(o.max)}" if o.max is not None else "") if b]
            if bounds:
                kw["help"] = f"{kw['help'] or ''} Allowed: {', '.join(bounds)}.".strip()
            state.bind(st.number_input, o.name, label, store=opts, scope=scope,
                       min_value=cast(o.min) if o.min is not None else None,
                       max_value=cast(o.max) if o.max is not None else None, **extra, **kw)
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
    from . import analysis

    return analysis.shown_points(data, max_points)


@st.cache_data(max_entries=16, show_spinner=False)
def _grid_and_truth(key: str, n: int, _data: Prepared):
    from .analysis import make_grid

    grid = make_grid(np.vstack([_data.X_train, _data.X_test]), n)
    return grid, (_data.true_proba(grid.points) if _data.truth else None)


def map_grid(data: Prepared, n: int = 60):
    """The evaluation grid for a data set and the true p(y|x) on it (None if unknown), computed once per
    data set (``st.cache_data``, keyed by the data's key): a live view redraws several times a second and
    the truth does not change."""
    return _grid_and_truth(data.key, n, data)


_MEMO = "_grid_proba_memo"


class _Remembered:
    """A fitted model whose ``predict_proba`` answers a repeated question from memory (everything else
    is the model's own). The Calibration page asks each model for the same grid twice (its map and its
    uncertainty map) and again at every rerun: for a sampler that is every draw at every grid point
    (GibbsSVM on the Ripley sample: about 1 s per call). A sampler's answer averages over the draws
    :func:`dashboard.procrun.map_model` keeps for a map of that many points (all 7,600 draws of MS-BPM on
    5 classes took minutes per map; the page's metrics use every draw)."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def predict_proba(self, X):
        import hashlib

        from .procrun import map_model

        X = np.ascontiguousarray(X)
        key = (X.shape, hashlib.sha1(X.tobytes()).hexdigest())
        return _per_model(_MEMO, self._model, key, lambda: map_model(self._model, X)[0].predict_proba(X),
                          size=16)


def _per_model(slot: str, model, key: tuple, compute, size: int = 8):
    """``compute()`` remembered in the session under ``slot`` per (model, key): the answer is the same
    while the model is (the model is kept with it, so its id is not reused; at most ``size`` answers)."""
    memo = st.session_state.setdefault(slot, {})
    key = (id(model), *key)
    hit = memo.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    value = compute()
    if len(memo) >= size:
        memo.clear()
    memo[key] = (model, value)
    return value


def fit_note_once(model, data: Prepared, retry: str = "and Start again", scaled_badly: bool = False
                  ) -> str | None:
    """analysis.fit_note for a fitted model on the data's training rows, computed once per model (a
    prediction on up to 2,000 rows and a nearest-neighbour check) and shared by the pages."""
    from .analysis import fit_note
    from .procrun import FINAL_DRAWS, thinned

    # a fit that went on (Continue) is the same object with more records: a new question
    key = (len(getattr(model, "history_", None) or ()), data.key, retry, scaled_badly)
    # (its accuracy comparisons, 5 points apart, do not need every draw of a long sampler run)
    def note():
        return fit_note(thinned(model, FINAL_DRAWS)[0], data.X_train, data.y_train, retry=retry,
                        scaled_badly=scaled_badly)

    return _per_model("_fit_notes", model, key, note)


def proba_map(model, data: Prepared, title: str, n: int = 60, truth: bool = True):
    """The map of a fitted 2-D model (figures.model_map: p(y|x) with the true p(y|x) contours where
    known, or classes coloured by confidence); None with an st.error if prediction fails."""
    grid, true_p = map_grid(data, n)
    from . import figures

    return safe(figures.model_map, _Remembered(model), data, grid, title, truth=true_p if truth else None,
                what="Prediction")


def uncertainty_map(model, data: Prepared, name: str, kind: str, n: int = 60):
    """The uncertainty map of one model on the shared scale (see analysis.uncertainty), or None with a
    note when the model has no such quantity."""
    grid, _ = map_grid(data, n)
    from . import analysis, figures

    u = safe(analysis.uncertainty, _Remembered(model), grid.points, kind, what=f"Uncertainty of {name}")
    if u is None:
        return None
    X, y = shown_points(data)
    return figures.value_heatmap(grid, u.values, X, y, data.classes, title=f"{name.split(' (')[0]}: {u.name}",
                                 colorbar_title=u.name.split(" (")[0], zmax=u.zmax,
                                 axis_titles=tuple(data.axis_names))


# ------------------------------------------------------------------------------------------- charts

PRESENTATION_KEY = state.PRESENTATION_KEY


presenting = state.presenting


def presentation_toggle() -> None:
    """The sidebar switch for presentation mode: larger type everywhere, a narrower sidebar and less
    padding, so a page fits a 1280x720 projector. Call once per run (app.py's sidebar)."""
    st.toggle("Presentation mode", key=PRESENTATION_KEY,
              help="Larger type for a projector or a screen share; pages fit 1280x720.")
    if presenting():
        st.html("<style>"
                "html, body, [data-testid='stAppViewContainer'] {font-size: 20px;}"
                "[data-testid='stMarkdownContainer'] p, [data-testid='stMarkdownContainer'] li "
                "{font-size: 1.1rem; line-height: 1.45;}"
                "[data-testid='stMainBlockContainer'] {padding: 3.5rem 1.5rem 2rem 1.5rem; max-width: 100%;}"
                "h1 {font-size: 1.7rem !important; padding-top: 0 !important;"
                " padding-bottom: 0.3rem !important;}"
                "[data-testid='stSidebar'] {min-width: 270px !important; max-width: 270px !important;}"
                "[data-testid='stSidebar'] [data-testid='stMarkdownContainer'] p {font-size: 0.95rem;}"
                "[data-testid='stWidgetLabel'] p {font-size: 1.05rem !important;}"
                # the Train page's six run controls share one row: at 20 px their labels ran past the
                # page's edge at 1280 px ("Reset" cut off)
                "[data-testid='stButton'] button p {font-size: 16px !important;}"
                # a metric's value is a markdown paragraph too: the rule above made "175" smaller than
                # its label "training rows" (a teacher's crawl)
                "[data-testid='stMetricValue'] p, [data-testid='stMetricValue'] div "
                "{font-size: 2.1rem !important; line-height: 1.2;}"
                # the Data page's SVG charts (dashboard/quickplot.py) write their text at fixed sizes
                ".bsvm-svg text {font-size: 17px !important;}"
                "</style>")


def styled(fig):
    """The figure as shown: in presentation mode with larger fonts (a copy; the builder stays pure)."""
    return _presentation_style(fig) if presenting() else fig


def _presentation_style(fig):
    fig = go.Figure(fig)
    # as livechart.js's presentLayout: a legend at the right goes below, and a legend below, one entry per
    # line at this size, grows the figure by those lines (Diagnostics' trace of six series kept its
    # 300 px and left the plot 45 px high, a crawl); two half-width columns do not hold 16 px names
    entries = sum(1 for t in fig.data if t.showlegend is not False and t.name)
    if fig.layout.showlegend is not False and entries:
        if fig.layout.legend.orientation == "v":
            from .figures import LEGEND_BELOW

            fig.update_layout(legend=LEGEND_BELOW)
        if fig.layout.legend.orientation == "h" and entries > 2 and not _square_map(fig):
            fig.update_layout(height=int(fig.layout.height or 320) + LEGEND_LINE_PX * (entries - 2))
        if fig.layout.legend.entrywidthmode == "fraction":
            fig.update_layout(legend_entrywidth=None, legend_entrywidthmode=None)
    fig.update_layout(font={"size": 17}, title_font={"size": 21}, legend_font={"size": 16})
    # Streamlit's chart theme sets its own axis fonts: name the sizes on the axes themselves
    fig.update_xaxes(tickfont_size=15, title_font_size=17)
    fig.update_yaxes(tickfont_size=15, title_font_size=17)
    # subplot titles and notes are annotations with sizes of their own (as livechart.js does)
    fig.for_each_annotation(lambda a: a.update(font_size=max((a.font.size or 12) + 3, 16)))
    # the larger title (and its note, sized relative to it) needs a taller top margin, or its second line
    # sat on the plot
    if fig.layout.margin.t:
        # labels in a strip above the plot (figures.LABEL_STRIP: candidate fits' numbers, "burn-in") grow
        # to 16 px and met the title's notes: room for them, as livechart.js presentLayout gives
        strip = any(a.yref == "paper" and a.y == 1 and a.yanchor == "bottom" for a in fig.layout.annotations)
        grow = PRESENT_STRIP if strip else 0
        fig.update_layout(margin_t=round(fig.layout.margin.t * PRESENT_MARGIN) + grow)
        if strip:
            fig.update_layout(height=int(fig.layout.height or 320) + PRESENT_STRIP)
    # a map's y tick labels and title at 15 and 17 px need about 57 px: plotly.js widened the left margin
    # by itself, and the map, drawn as wide as its margins and square plot (export_width), shrank to fit
    if fig.layout.margin.l and fig.layout.yaxis.scaleanchor:
        fig.update_layout(margin_l=max(fig.layout.margin.l, PRESENT_MAP_LEFT))
    # colour bars and contour labels have fonts of their own too (they stayed at 10-12 px)
    for tr in fig.data:
        if "colorbar" in tr and (tr.showscale is not False):
            tr.update(colorbar_tickfont_size=15, colorbar_title_font_size=16)
        if tr.type == "contour" and tr.contours.showlabels:
            tr.update(contours_labelfont_size=14)
    return fig


#: how much taller a chart's top margin is in presentation mode (its title goes from 15 to 21 px)
PRESENT_MARGIN = 1.35
#: px more at the top (and in height) of a chart with labels in a strip above its plot, in presentation
#: mode (the same in livechart.js presentLayout)
PRESENT_STRIP = 40
#: a legend line's height in presentation mode (16 px type), by which a chart grows per entry past two
LEGEND_LINE_PX = 28
#: a map's left margin in presentation mode (its y axis's labels at 15 px and title at 17 px)
PRESENT_MAP_LEFT = 60
#: how much taller a map drawn by :func:`chart` is in presentation mode: its larger axis type and legend
#: rows took its plot's height, and Calibration's maps were 211 px square in 470 px columns, at 1280 and
#: at 1920 px alike (noticed at stops 39 and 40). 124 px more: 294 px at 1280 (the column's width), 349
#: at 1920
PRESENT_MAP_GROW = 124


@st.cache_resource(show_spinner=False)
def _kaleido_server() -> bool:
    """One long-lived headless Chrome for PNG export (kaleido 1.x): the first image then takes ~8 s, the
    next ones ~0.5 s. kaleido finds Debian's /usr/bin/chromium itself; BROWSER_PATH overrides."""
    import os

    import kaleido

    if os.path.exists("/usr/bin/chromium"):
        os.environ.setdefault("BROWSER_PATH", "/usr/bin/chromium")
    kaleido.start_sync_server(silence_warnings=True)
    return True


#: the PNG downloads' pixels per figure pixel
PNG_SCALE = 2


def png_bytes(fig, width: int = 1200, height: int | None = None) -> bytes:
    """The figure as PNG through kaleido (needs a Chrome/Chromium), drawn with plotly_white in Streamlit's
    colours (livechart's template): inside the server Plotly's default template is Streamlit's, whose
    colours are placeholders only st.plotly_chart's frontend fills in, so kaleido drew every line and
    zero line black, and its axis titles without a standoff, on top of the tick labels."""
    _kaleido_server()
    fig = for_export(fig)
    h = height or int(fig.layout.height or 500)
    with warnings.catch_warnings():
        # plotly passes its kaleido options to the long-lived server too, which ignores them and warned
        # "The kopts argument is ignored if using a server" into the server's log at every PNG
        warnings.filterwarnings("ignore", message="The kopts argument is ignored", category=UserWarning)
        # twice the pixels: at 1x a map came out 380 x 440 px, blocky on a slide (a teacher's crawl)
        return fig.to_image(format="png", width=export_width(fig, h, width), height=h, scale=PNG_SCALE)


def _square_map(fig) -> bool:
    """One heatmap on one pair of axes held square (``figures._map_axes``)."""
    one_axes = not any(k.startswith("xaxis") and k != "xaxis" for k in fig.layout.to_plotly_json())
    return bool(one_axes and fig.layout.yaxis.scaleanchor
                and any(t.type in ("heatmap", "contour") for t in fig.data))


def export_width(fig, height: int, default: int = 1200) -> int:
    """The PNG's width: the figure's own, else ``default``, except for a single map (one heatmap on one
    pair of axes), drawn about as wide as high plus its colour bar: the Train page's map, a half-width
    chart on the page, came out as a 1200 x 430 strip."""
    if fig.layout.width:
        return int(fig.layout.width)
    grid = _grid_width(fig, height)
    if grid is not None:
        return grid
    one_axes = not any(k.startswith("xaxis") and k != "xaxis" for k in fig.layout.to_plotly_json())
    if one_axes and any(t.type in ("heatmap", "contour") for t in fig.data):
        m = fig.layout.margin
        if fig.layout.yaxis.scaleanchor and m.t is not None and m.b is not None:
            # a square map (figures._map_axes): as wide as its plot is high, plus the margins and colour
            # bar; wider, the map sat in a band of white with its colour bar far to its right
            plot = height - m.t - m.b
            return int(round((m.l or 0) + plot + max(m.r or 0, colourbar_px(fig, plot))))
        return int(round(1.25 * height))
    return default


#: the height a one-row legend below a grid of maps takes from its plots (figures.LEGEND_BELOW: plotly.js
#: raises the plots' bottom to make room), measured in chromium at 12 px type: 40 px
LEGEND_BELOW_PX = 40


def _grid_width(fig, height: int) -> int | None:
    """The width of a grid of square maps (several heatmaps on subplots, each y axis anchored to its x
    axis: the Compare page's maps) at which each map fills its cell: at the default 1,200 px three maps
    of 205 px sat in cells of 360 px with white between them (a crawl). None for any other figure."""
    lay = fig.layout.to_plotly_json()
    # the maps' axes (an empty cell after the last map has axes of its own, not anchored)
    ys = [k for k in lay if k.startswith("yaxis") and lay[k].get("scaleanchor")]
    if len(ys) < 2 or not any(t.type == "heatmap" for t in fig.data):
        return None
    m = fig.layout.margin
    below = fig.layout.legend.yref == "container" and (fig.layout.legend.y or 0) == 0
    plot_h = height - (m.t or 0) - (m.b or 0) - (LEGEND_BELOW_PX if below else 0)
    plot_w = cell_h = 0.0
    for yk in ys:
        dx = lay.get("xaxis" + yk[len("yaxis"):], {}).get("domain", (0.0, 1.0))
        dy = lay[yk].get("domain", (0.0, 1.0))
        cell_h = max(cell_h, (dy[1] - dy[0]) * plot_h)
        if dx[1] > dx[0]:
            plot_w = max(plot_w, (dy[1] - dy[0]) * plot_h / (dx[1] - dx[0]))
    if plot_w <= 0:
        return None
    return int(round((m.l or 0) + plot_w + max(m.r or 0, colourbar_px(fig, cell_h))))


def colourbar_px(fig, plot_px: float) -> float:
    """The right margin a map's colour bar takes (plotly.js widens the margin to fit it), from its fonts:
    0 without one. A class map (3+ classes) has none, and the 90 px once kept for every map were white
    after it; a bar's fixed 90 px also left 40 px of white beside the probability map, and were 15-70 px
    short in presentation mode (larger type) or for a title on top of the bar (``figures._colourbar``
    puts it along the bar). Measured in chromium (bars titled along them): 78-92 px at 12 px type, 80-106
    px at presentation mode's 15-16 px; the estimate, 83-88 and 101, leaves the plots within 5 px of
    square."""
    bars = [t for t in fig.data if t.type in ("heatmap", "contour") and t.showscale is not False]
    if not bars:
        return 0.0
    cb = bars[0].colorbar
    base = fig.layout.font.size or 12
    tick = cb.tickfont.size or base
    title = cb.title.font.size or base
    text = str(cb.title.text or "")
    # tick labels such as "0.5" or "1.2k": about 2.4 em; a title along the bar: one line of its type, on
    # top: as wide as its text; plotly.js's own room: the bar at x = 1.02 of the plot, its xpad, and
    # 12 px after it
    ticks = 2.4 * tick
    if cb.title.side == "right":
        titled = 1.5 * title if text else 0.0
    else:
        ticks, titled = max(ticks, 0.6 * title * len(text)), 0.0
    pad = cb.xpad if cb.xpad is not None else 10
    return 0.02 * plot_px + pad + (cb.thickness or 30) + ticks + titled + 12


def for_export(fig) -> go.Figure:
    """A copy of the figure with a template of real colours (see :func:`png_bytes`)."""
    from .figures import HOVER_NOTE, LEGEND_RIGHT, MAP_MARGIN
    from .livechart import _template

    fig = go.Figure(fig)
    fig.update_layout(template=_template())
    # on the page the chart has the page's padding around it; in the PNG a title at the container's
    # left edge sat flush against the image's edge
    if fig.layout.title.text and fig.layout.title.xanchor == "left":
        fig.update_layout(title_pad_l=12)
    # a map keeps room below it for two rows of legend (so maps side by side on a page match): an image
    # has one map, and its legend's one row left a blank band above it
    if fig.layout.margin.b == MAP_MARGIN["b"] and _legend_rows(fig, export_width(fig, fig.layout.height)) < 2:
        fig.update_layout(margin_b=MAP_MARGIN["b"] - 28, height=(fig.layout.height or 430) - 28)
    # lines named on hover only (a trace of many long names, e.g. 'chain 0, w[température]'): an image
    # cannot be hovered, and its subtitle still said "hover a line for its name" above twelve unnamed
    # lines (a crawl's Train-page traces PNG); the 1200 px image has room for a legend at the right
    title = fig.layout.title.text or ""
    if HOVER_NOTE in title and fig.layout.showlegend is False:
        title = title.replace(f"; {HOVER_NOTE}", "").replace(HOVER_NOTE, "")
        title = re.sub(r"<br><span[^>]*></span>$", "", title)  # (a subtitle of the note alone)
        fig.update_layout(title_text=title, showlegend=True, legend=LEGEND_RIGHT)
    return fig


#: one row of a legend below a chart at 12 px type
LEGEND_ROW_PX = 24


def _legend_rows(fig, width: int) -> int:
    """About how many rows a legend below the plot takes in an image ``width`` px wide (generously: a
    symbol, gaps and ~7 px per character of 12 px type)."""
    names = [t.name for t in fig.data if t.name and t.showlegend is not False]
    row, rows = 0.0, 1
    scale = (fig.layout.legend.font.size or 12) / 12  # (presentation mode's legend: 16 px)
    for n in names:
        w = scale * (55 + 7 * len(n))
        if row and row + w > width - 20:
            rows, row = rows + 1, 0.0
        row += w
    return rows


def chart(fig, key: str, *, png: bool = True, name: str | None = None, method: str | None = None, **kw):
    """``st.plotly_chart`` with presentation styling and, under it, a PNG download made on click."""
    from .livechart import PLOTLY_CONFIG

    shown = styled(fig)
    if "width" not in kw and not shown.layout.width and _square_map(shown):
        # as wide as the square plot and its colour bar (at most the column): stretched to a wide
        # column, the plot sat in the middle and its colour bar far off at the right edge
        h = int(shown.layout.height or 430)
        if presenting():
            h += PRESENT_MAP_GROW
            shown.update_layout(height=h)
        width = export_width(shown, h)
        # a legend of more rows than the map's bottom margin holds (two, at 12 px type; presentation
        # mode's 16 px wraps to three) pushed the margin and shrank the square plot (179 px instead of
        # 234 at 1920 px), leaving white between it and its colour bar: the figure grows instead
        # (the legend wraps within the plot's width: the figure's less its margins and colour bar)
        paper = width - (shown.layout.margin.l or 0) - max(shown.layout.margin.r or 0,
                                                            colourbar_px(shown, h)) + 20
        # (presentation mode only: at 12 px type the margin's two rows held every map's legend in the
        # browser, and this estimate, which errs wide, added an empty row)
        extra = max(0, _legend_rows(shown, paper) - 2) * LEGEND_ROW_PX * 16 / 12
        if shown.layout.margin.b and extra and presenting():
            shown.update_layout(height=round(h + extra), margin_b=round(shown.layout.margin.b + extra))
        shown.update_layout(width=width)
        kw["width"] = "content"
    elif "width" not in kw and not shown.layout.width:
        # a grid of square maps (Compare) as wide as its maps fill their cells, at most the column
        # (width "content"): stretched to the column at 1920 px, 200 px maps sat in 450 px cells with
        # their colour bar far off at the right (a crawl)
        grid_w = _grid_width(shown, int(shown.layout.height or 430))
        if grid_w is not None:
            shown.update_layout(width=grid_w)
            kw["width"] = "content"
    st.plotly_chart(shown, key=key, **{"config": PLOTLY_CONFIG, **kw})
    from .figures import is_placeholder  # (lazily: see the TYPE_CHECKING import above)

    # a message in a chart frame ("No step size or acceptance to tune", GibbsSVM's statistics on the
    # Diagnostics page) got a PNG button that downloaded a picture of the sentence (a crawl); the Train
    # page's row of PNG buttons already skips such panels
    if png and not is_placeholder(fig):
        png_button(lambda: shown, key, name, method=method)


def file_name(stem: str, *parts, ext: str = "csv", meta: dict | None = None) -> str:
    """A download's file name: ``stem`` and the data set and method it is about, in plain characters
    ("calibration_metrics_ripley_MS-BPM.csv"): each page's metrics came under one fixed name, so files
    from several runs overwrote each other (a crawl)."""
    _, data = state.run_settings(meta)  # a run's own data set, which may not be the current one
    words = [stem, str(data or "").rsplit(".", 1)[0], *map(str, parts)]
    return "_".join(w for w in map(_plain, words) if w) + f".{ext}"


def _plain(text: str) -> str:
    """``text`` in characters every file system takes (runs of others as one "_")."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


_DOWNLOAD_RUN = "_download_run"


def download_run(meta: dict | None = None, method: str | None = None) -> None:
    """Name this page's figure downloads after a run: its data set (``meta``, else the current data) and
    ``method``. The app resets it before every page, so a page that sets nothing names the current data
    only. Two runs' figures both came as "objective.png" while their draws and metrics were named after
    the run (a crawl)."""
    st.session_state[_DOWNLOAD_RUN] = (meta, method)


def png_button(make_fig, key: str, name: str | None, label: str = "PNG", method: str | None = None) -> None:
    """A PNG download of ``make_fig()`` (the figure as shown), drawn by kaleido only when it is asked
    for, outside the script run. ``label``: the button's text (a row of buttons under a grid of charts
    says which chart each is for). The file is named after the chart, the data set and the page's run
    (:func:`download_run`, or ``method`` for a chart of one method on a page of several), e.g.
    "objective_ripley_SGLD.png"."""
    # a plain file name: a key with a method's label gave "cal_map_main_Subgradient MCMC.png" (a crawl)
    meta, run_method = st.session_state.get(_DOWNLOAD_RUN) or (None, None)
    method = method or run_method
    stem = _plain(name or key) or "figure"
    words = [] if not method or _plain(method) in stem else [method]
    st.download_button(label, data=lambda: _png_or_message(make_fig()),
                       file_name=file_name(stem, *words, ext="png", meta=meta),
                       mime="image/png", key=f"png:{key}", on_click="ignore", icon=":material/download:",
                       type="tertiary", help="Download this figure as a PNG image (drawn by kaleido in a "
                                             "headless Chromium; the first one takes a few seconds).")


_SVG_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  if (!data || !data.svg) return;
  const show = () => {
    let div = parentElement.querySelector("div.bsvm-svg-chart");
    if (!div) {
      div = document.createElement("div");
      div.className = "bsvm-svg-chart";
      parentElement.appendChild(div);
    }
    if (div._svg !== data.svg) { div.innerHTML = data.svg; div._svg = data.svg; }
  };
  // once the browser is idle: the page's widgets (the user's next step) are drawn first
  if (window.requestIdleCallback) window.requestIdleCallback(show, {timeout: 1000});
  else setTimeout(show, 100);
}
"""


@st.cache_resource(show_spinner=False)
def _svg_component():
    """A ``st.components.v2`` component that puts an SVG string into the page; None where the API is
    missing (then ``st.image`` shows it)."""
    try:
        from streamlit.components import v2

        return v2.component("bsvm_svg_chart", html="", js=_SVG_JS, isolate_styles=False)
    except Exception:  # noqa: BLE001 - another Streamlit
        return None


def svg_chart(svg: str, key: str, make_fig=None, *, name: str | None = None) -> None:
    """A static chart (an SVG string from dashboard/quickplot.py): no plotly.js, and drawn once the
    browser is idle after the page's widgets. ``make_fig``: builds the Plotly version of the same chart,
    only when the user asks for the PNG download (kaleido draws Plotly figures).

    Measured on the Data page (python -m benchmarks dashboard): the same SVG as markup in
    ``st.markdown`` or as an image (``st.image``) was drawn in the same render passes as the widgets
    and made the first selectbox appear later; put into the page by a small component once the browser
    is idle, it comes just after them."""
    mount = _svg_component()
    if mount is None:
        st.image(svg, width="stretch")
    else:
        mount(key=f"svg:{key}", data={"svg": svg}, height="content")
    if make_fig is not None:
        # the PNG is drawn when the download is asked for, outside this script run: decide the styling now
        style = _presentation_style if presenting() else (lambda fig: fig)
        png_button(lambda: style(make_fig()), key, name)


def _png_or_message(fig) -> bytes:
    try:
        return png_bytes(fig)
    except Exception as exc:  # noqa: BLE001 - a missing browser must not break the page
        return (f"PNG export failed ({type(exc).__name__}: {exc}). It needs the kaleido package and "
                "Chromium (apt-get install chromium), see the README.").encode()


def import_problems(load: bool = False) -> None:
    """Say which methods could not be imported and why (a broken module is reported, never hidden).
    ``load=False``: only the imports tried so far (the Train page tries every method's)."""
    from .methods import import_errors

    errors = import_errors(load)
    if errors:
        st.warning("Not available: " + "; ".join(f"**{k}** ({v})" for k, v in errors.items()),
                   icon=":material/error:")


PLAYGROUND_JOB = "playground_refit"


def playground_refit(data: Prepared) -> tuple[str, str] | None:
    """With the playground's settings: the toggle that refits the current method on the edited points
    (its library defaults, or the options chosen on the Train page), and that refit started as a registry
    job (progress, Cancel; replaced when the points change, cancelled when the user leaves the page),
    never a fit inside this script run. Returns (the job's key, the run's short name), or None when
    there is no refit (toggle off, no method, a setup that failed)."""
    method, _ = state.method_for(data)
    if method is None:
        return None
    opts = dict(state.method_options(method.key))
    # the run's short name ("Subgradient HMC"): "Subgradient MCMC (HMC, SGLD, SGNHT): p(y = 1 | x)" was
    # cut at the map's edge in presentation mode (the map is as wide as its square plot; a crawl)
    name = method.run_label(opts).split(" (")[0]
    on = st.toggle(f"Refit {name} after each edit", value=True, key="pg_refit",
                   help="Fits the method chosen on the Train page, with its options there (the library's "
                        "defaults unless changed), on the training rows of the edited data, and draws its "
                        "p(y|x) under the points.")
    if not on:
        return None
    seed = int(state.cfg()["seed"])
    from .runner import Job, fit_in_job

    key = f"{data.key}|{method.key}|{sorted(opts.items())!r}|{seed}"
    job = state.registry().get(PLAYGROUND_JOB)
    if job is None or job.meta.get("key") != key:
        est = safe(method.make, opts, seed, what=f"Setting up {method.label}")
        if est is None:
            return None
        # named as the run (SGLD, not "Subgradient MCMC (HMC, SGLD, SGNHT)"), and saying what it does: an
        # edit's new refit replaces the old one without a "Stopped ...: the data changed" toast, which was
        # all a user saw while the map was gone (a crawl)
        meta = {"key": key, "data_key": data.key, "replaced_quietly": True}
        label = f"Refitting {name} on {len(data.y_train)} training points"
        state.start_job(PLAYGROUND_JOB, Job(fit_in_job, est, data.X_train, data.y_train, method.cap(opts),
                                            name, label=label, page="data", meta=meta))
    return key, name


#: session-state key of the canvas's newest refitted map: (job key, its method and draw, click points,
#: analysis.RawMap, model)
_PG_MAP = "_pg_map"


def playground_map(data: Prepared, refit: tuple[str, str] | None, points: np.ndarray):
    """The map drawn under the canvas at its click ``points``: (analysis.RawMap, model, faded) for this
    edit's refit once it is done, else the previous edit's (faded: shown while the new refit runs, so
    the canvas does not flash white at every click), else None. A map is computed once per refit."""
    if refit is None:
        return None
    from . import analysis

    key, _ = refit
    # an earlier map is shown faded only for an edit of the same draw, fitted by the same method and
    # options: after "Start over", another generator or another method it would describe other data
    family = (key.split("|", 1)[1], st.session_state.get("pg_settings"))
    kept = st.session_state.get(_PG_MAP)
    if kept is not None and (kept[1] != family or not np.array_equal(kept[2], points)):
        kept = None
    fresh = kept is not None and kept[0] == key
    job = state.registry().get(PLAYGROUND_JOB)
    # (one read of the status: the job finishes while this runs, and two reads could see "running" for
    # the map and "done" for the fade, and draw no map at all, a review)
    status = job.status if job is not None and job.meta.get("key") == key else None
    if not fresh and status == "done":
        raw = safe(analysis.raw_map, job.result, data, points, what="Prediction")
        if raw is not None:
            kept = (key, family, points, raw, job.result)
            st.session_state[_PG_MAP] = kept
            fresh = True
    # (an earlier map stays only while this refit runs: after a failure or a Cancel, a faded map titled
    # "refitting" would wait for nothing)
    from .runner import FINISHED

    running = status is not None and status not in FINISHED
    return None if kept is None or not (fresh or running) else (kept[3], kept[4], not fresh)


def playground_status(refit: tuple[str, str] | None, shown) -> None:
    """Under the canvas: the refit's progress (or its failure), and what the map shows."""
    if refit is None:
        return
    from . import analysis

    key, _ = refit
    done = state.job_view(PLAYGROUND_JOB, key) is not None
    if shown is None:
        return
    raw, model, faded = shown
    if faded and done:
        # the refit finished after the canvas took the faded map, and job_view, which then shows no
        # progress fragment, asks for no rerun: the stale map stayed, titled "refitting" (a review)
        st.rerun()
    # S-BSVM's kernel="auto" may weigh other fits after an edit: the map changed shape from one click to
    # the next and nothing said why (a crawl)
    comps = getattr(model, "components_", None) or []
    mix = ", ".join(f"{analysis.STACK_NAMES.get(n, n)} {w:.0%}" for n, w, *_ in comps)
    st.caption(("The previous edit's map, faded while the refit runs. " if faded else "")
               + "Under the points, the refitted model's p(y = 1 | x) from blue (0) through white (0.5) "
               "to red (1); hover for its value"
               + (", dotted lines the generator's true p(y|x)." if raw.truth is not None else ".")
               # (the legend's row that names them is below a 1280x720 projector's fold in presentation
               # mode, and the marks read as a third class: a teacher's crawl)
               + (f" Black marks: the model's {raw.overlay_name}, not data points."
                  if getattr(raw, "overlay", None) is not None and len(raw.overlay) and raw.overlay_name
                  else "")
               + (f" It mixes {mix}: an edit can change which fits the points favour, and with them the "
                  "map's shape." if len(comps) > 1 else ""))


