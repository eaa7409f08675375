"""The Data page's static SVG charts (dashboard/quickplot.py): well-formed, escaped, bounded, and
placing each point where its coordinates say."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from dashboard import quickplot

NS = "{http://www.w3.org/2000/svg}"


def _points(svg: str) -> dict:
    """Class name -> the (x, y) drawing coordinates of its markers (one arc path per class)."""
    root = ET.fromstring(svg)
    out = {}
    for path in root.iter(f"{NS}path"):
        starts = re.findall(r"M([-0-9.]+),([-0-9.]+)", path.get("d"))
        assert len(starts) == int(path.get("data-n"))
        out[path.get("fill")] = [(float(x) + quickplot._R, float(y)) for x, y in starts]
    return out


def test_ticks_are_round_and_cover_the_range():
    for lo, hi in [(-1.23, 2.5), (0, 175), (1e-3, 7e-3), (-50, -3)]:
        t = quickplot.nice_ticks(lo, hi)
        assert lo - 1e-12 <= t[0] and t[-1] <= hi + 1e-12 and 3 <= len(t) <= 11
        steps = np.diff(t)
        assert np.allclose(steps, steps[0])
        mant = steps[0] / 10 ** np.floor(np.log10(steps[0]))
        assert min(abs(mant - m) for m in (1, 2, 5, 10)) < 1e-9
    assert quickplot.nice_ticks(3, 3) == [3.0]
    assert quickplot.nice_ticks(0, float("nan")) == []


def test_scatter_places_points_by_their_coordinates_and_colours_them_by_class():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array(["a", "b", "a", "b"])
    svg = quickplot.scatter_svg(X, y, ["a", "b"], ("width <cm>", "height & more"), "All rows")
    ET.fromstring(svg)  # well-formed XML: user column names are escaped
    assert "width &lt;cm&gt;" in svg and "height &amp; more" in svg
    pts = _points(svg)
    assert len(pts) == 2  # one colour per class
    (a00, a01), (b10, b11) = pts.values()  # class a: (0, 0), (0, 1); class b: (1, 0), (1, 1)
    assert b10[0] > a00[0] and b10[1] == pytest.approx(a00[1])  # x grows to the right
    assert a01[1] < a00[1] and a01[0] == pytest.approx(a00[0])  # y grows upwards
    assert "class a" in svg and "class b" in svg  # the legend


def test_scatter_draws_a_bounded_subset_of_a_big_table_and_says_so():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 2))
    y = (X[:, 0] > 0).astype(int)
    X[5] = np.nan  # a non-finite row is left out, not drawn at NaN
    svg = quickplot.scatter_svg(X, y, [0, 1], title="All rows")
    n = sum(len(p) for p in _points(svg).values())
    assert quickplot.MAX_POINTS - 1 <= n <= quickplot.MAX_POINTS  # the NaN row, if drawn, is left out
    assert "3,000 of 20,000 rows shown" in svg and "nan" not in svg.lower()
    assert len(svg) < 400_000  # small enough to send with the page
    # a title with its own parenthesis gets one, not two in a row (a crawl)
    svg = quickplot.scatter_svg(X, y, [0, 1], title="All rows (first two principal components)")
    assert "All rows (first two principal components; 3,000 of 20,000 rows shown)" in svg


def test_bars_show_the_counts():
    svg = quickplot.bars_svg(["0", "1"], [120, 55], "Class balance")
    ET.fromstring(svg)
    heights = [float(h) for h in re.findall(r'<rect [^>]*height="([0-9.]+)"', svg)]
    assert heights[0] == pytest.approx(heights[1] * 120 / 55, rel=1e-2)
    assert ">120<" in svg and ">55<" in svg


def test_a_count_on_a_bar_that_reaches_the_top_is_white():
    """A bar as tall as the plot has no room above it: its count goes inside, in white (dark text on the
    dark bar could not be read); a shorter bar's count stays above it in the text colour."""
    svg = quickplot.bars_svg(["0", "1"], [88, 20], "Class balance")
    texts = {m.group(2): m.group(1) for m in re.finditer(r'<text [^>]*fill="([^"]+)"[^>]*>(\d+)<', svg)}
    assert texts["88"] == "white" and texts["20"] != "white"
