"""Static charts as SVG strings: the Data page's overview (a scatter of the rows, the class balance),
put into the page by a small component once the browser is idle (``ui.svg_chart``; ``st.image`` where
that component API is missing), with no plotly.js at all.

Why: the Data page is the first a user opens, and it must be usable within 2 s of the request (issue 14
sec. 4). A Plotly chart there made the browser fetch and evaluate plotly.js (4.7 MB; 1.4 s of the
browser's main thread in a trace) before the first chart appeared, 4-6 s after the request (now: with
the page's widgets). The figures stay pure functions of arrays (no Streamlit here); the Plotly versions
(dashboard/figures.py) are still built for the PNG download, on click.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

#: the Plotly figures' class colours (dashboard/figures.py), so both kinds of chart agree
from .figures import CLASS_COLOURS
from .figures import class_name as _class_name

#: at most this many points are drawn (a fixed random subset above it): an SVG element per point
MAX_POINTS = 3000
_R = 3.5  # marker radius
_W = 480  # the drawing's own units, about the Data page's chart column at 1280 px; scaled to fit
# an SVG shown as an image cannot use the page's web fonts: a system sans-serif (a family name with a
# digit must be quoted, or the whole list is ignored and the text falls back to serif)
_FONT = 'font-family="\'Source Sans 3\', \'Source Sans Pro\', Arial, sans-serif"'
_GRID = "#ebf0f8"  # plotly_white's grid and text colours: like the Plotly charts on the other pages
_TEXT = "#2a3f5f"


def nice_ticks(lo: float, hi: float, n: int = 7) -> list[float]:
    """About ``n`` round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi]."""
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = first
    while t <= hi + 1e-9 * step:
        ticks.append(0.0 if abs(t) < 1e-12 * step else t)
        t += step
    return ticks


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _title(title: str, width: int) -> str:
    return (f'<text x="8" y="22" font-size="15" fill="{_TEXT}" {_FONT}>{escape(title)}</text>'
            if title else "")


def _svg(body: str, height: int, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="bsvm-svg" role="img" '
            f'aria-label="{escape(label)}" viewBox="0 0 {_W} {height}" width="100%" '
            # up to 1.4x its drawing size in a wide column (at 1920 px it sat in the middle of blank
            # space), and from the column's left edge as the other charts are
            f'preserveAspectRatio="xMinYMin meet" style="max-height:{round(1.4 * height)}px;display:block">'
            f"{body}</svg>")


def _subset(n: int, max_points: int, seed: int = 0) -> np.ndarray:
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))


def scatter_svg(X2, y, classes, axis_titles=("x1", "x2"), title: str = "", height: int = 420,
                max_points: int = MAX_POINTS) -> str:
    """A scatter of the rows ``X2`` (n, 2) coloured by class, with axes, grid and legend (no tooltips:
    the Train page's charts are the interactive ones). Above ``max_points`` rows a fixed random subset
    is drawn and the title says so. Non-finite coordinates are left out."""
    X2 = np.asarray(X2, dtype=float).reshape(-1, 2)
    y = np.asarray(y)
    n_all = len(y)
    keep = _subset(n_all, max_points)
    X2, y = X2[keep], y[keep]
    ok = np.all(np.isfinite(X2), axis=1)
    X2, y = X2[ok], y[ok]
    if len(keep) < n_all:
        shown = f"{len(keep):,} of {n_all:,} rows shown"
        # one parenthesis: the Data page's PCA title read "All rows (first two principal components)
        # (3,000 of 20,000 rows shown)" (a crawl, a 20,000-row upload)
        title = (f"{title[:-1]}; {shown})" if title.endswith(")") else f"{title} ({shown})")
    legend_w = min(160, 30 + 7 * max((len(_class_name(c)) for c in classes), default=7))
    left, right, top, bottom = 52, 10 + legend_w, 36, 48
    pw, ph = _W - left - right, height - top - bottom
    if len(y):
        lo, hi = X2.min(axis=0), X2.max(axis=0)
    else:
        lo, hi = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - 0.05 * span, hi + 0.05 * span

    def sx(v):
        return left + (v - lo[0]) / (hi[0] - lo[0]) * pw

    def sy(v):
        return top + ph - (v - lo[1]) / (hi[1] - lo[1]) * ph

    parts = [_title(title, _W)]
    for t in nice_ticks(lo[0], hi[0]):
        x = sx(t)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="{_GRID}"/>'
                     f'<text x="{x:.1f}" y="{top + ph + 16}" font-size="12" text-anchor="middle" '
                     f'fill="{_TEXT}" {_FONT}>{_fmt(t)}</text>')
    for t in nice_ticks(lo[1], hi[1]):
        v = sy(t)
        parts.append(f'<line x1="{left}" y1="{v:.1f}" x2="{left + pw}" y2="{v:.1f}" stroke="{_GRID}"/>'
                     f'<text x="{left - 6}" y="{v + 4:.1f}" font-size="12" text-anchor="end" '
                     f'fill="{_TEXT}" {_FONT}>{_fmt(t)}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" font-size="13" text-anchor="middle" '
                 f'fill="{_TEXT}" {_FONT}>{escape(str(axis_titles[0]))}</text>')
    parts.append(f'<text x="14" y="{top + ph / 2:.1f}" font-size="13" text-anchor="middle" fill="{_TEXT}" '
                 f'transform="rotate(-90 14 {top + ph / 2:.1f})" {_FONT}>'
                 f'{escape(str(axis_titles[1]))}</text>')
    ly = top + 10
    for k, c in enumerate(classes):
        colour = CLASS_COLOURS[k % len(CLASS_COLOURS)]
        pts = X2[y == c]
        name = escape(_class_name(c))
        # one <path> of arcs per class, not an element per point: st.markdown turns every element of
        # this markup into a React node, rendered in the same passes as the page's widgets (with a
        # <circle> and a <title> per point, the widgets appeared later than with Plotly's deferred chart)
        d = "".join(f"M{sx(a) - _R:.1f},{sy(b):.1f}a{_R},{_R} 0 1,0 {2 * _R},0a{_R},{_R} 0 1,0 -{2 * _R},0"
                    for a, b in pts)
        parts.append(f'<path class="bsvm-svg-class" data-n="{len(pts)}" fill="{colour}" stroke="white" '
                     f'stroke-width="0.5" d="{d}"/>')
        lx = left + pw + 18
        parts.append(f'<circle cx="{lx}" cy="{ly}" r="4" fill="{colour}"/>'
                     f'<text x="{lx + 10}" y="{ly + 4}" font-size="12" fill="{_TEXT}" {_FONT}>{name}</text>')
        ly += 19
    return _svg("".join(parts), height, title or "scatter")


def bars_svg(labels, counts, title: str = "", height: int = 300, axis_titles=("class", "rows")) -> str:
    """Vertical bars, one per label, coloured like the classes, with the count on each bar."""
    counts = [int(v) for v in counts]
    left, right, top, bottom = 52, 10, 46, 48
    pw, ph = _W - left - right, height - top - bottom
    ticks = nice_ticks(0, max(counts + [1]))
    ymax = max(ticks[-1] if ticks else 1, max(counts + [1]))

    def sy(v):
        return top + ph - v / ymax * ph

    parts = [_title(title, _W)]
    for t in ticks:
        v = sy(t)
        parts.append(f'<line x1="{left}" y1="{v:.1f}" x2="{left + pw}" y2="{v:.1f}" stroke="{_GRID}"/>'
                     f'<text x="{left - 6}" y="{v + 4:.1f}" font-size="12" text-anchor="end" '
                     f'fill="{_TEXT}" {_FONT}>{_fmt(t)}</text>')
    slot = pw / max(len(counts), 1)
    for k, (lab, v) in enumerate(zip(labels, counts)):
        x = left + k * slot + 0.1 * slot
        y0 = sy(v)
        colour = CLASS_COLOURS[k % len(CLASS_COLOURS)]
        # the count above its bar, or inside a bar that reaches the top, in white (dark text on the dark
        # bar could not be read)
        inside = y0 - 5 < top + 12
        parts.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{0.8 * slot:.1f}" height="{top + ph - y0:.1f}" '
                     f'fill="{colour}"><title>{escape(str(lab))}: {v}</title></rect>'
                     f'<text x="{x + 0.4 * slot:.1f}" y="{y0 + 16 if inside else y0 - 5:.1f}" font-size="13" '
                     f'text-anchor="middle" fill="{"white" if inside else _TEXT}" {_FONT}>{v}</text>'
                     f'<text x="{x + 0.4 * slot:.1f}" y="{top + ph + 16}" font-size="12" '
                     f'text-anchor="middle" fill="{_TEXT}" {_FONT}>{escape(str(lab))}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" font-size="13" text-anchor="middle" '
                 f'fill="{_TEXT}" {_FONT}>{escape(axis_titles[0])}</text>')
    parts.append(f'<text x="14" y="{top + ph / 2:.1f}" font-size="13" text-anchor="middle" fill="{_TEXT}" '
                 f'transform="rotate(-90 14 {top + ph / 2:.1f})" {_FONT}>{escape(axis_titles[1])}</text>')
    return _svg("".join(parts), height, title or "bars")
