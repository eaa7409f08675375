"""The dashboard's pure parts without Streamlit: figure builders, data preparation, chunked runs."""

import copy
import io
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bsvm import metrics  # noqa: E402
from bsvm.base import Progress  # noqa: E402
from bsvm.datasets import GENERATORS  # noqa: E402
from bsvm.metrics import classification_report, reliability_bins  # noqa: E402
from bsvm.platt import PlattSVM  # noqa: E402
from bsvm.samples import load_sample  # noqa: E402
from dashboard import figures  # noqa: E402
from dashboard.analysis import Grid, evaluate, make_grid, pca2, prepare, thin_index  # noqa: E402
from dashboard.methods import METHODS, Option  # noqa: E402


def _history(n, chains=3):
    return [Progress(i, 0.01 * i, {"elbo": -100.0 + i, "lengthscale": 1.0 + 0.01 * i, "rho": 0.5},
                     {"per_chain": np.arange(chains) + i}) for i in range(n)]


# ------------------------------------------------------------------------------------- analysis


def test_prepare_standardises_on_training_rows_and_keeps_the_truth_in_original_units():
    loaded = load_sample("ripley.csv")
    data = prepare(loaded, standardize=True, test_size=0.3, seed=1, truth="ripley")
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data.X_train.std(axis=0), 1.0, atol=1e-12)
    assert len(data.y_test) == int(np.ceil(0.3 * len(loaded.y)))
    # stratified: class shares within one row of the full data's
    share = np.mean(loaded.y == 1)
    assert abs(np.sum(data.y_test == 1) - share * len(data.y_test)) <= 1
    # truth evaluated in the standardised space equals the generator's truth at the raw coordinates
    raw = data.X_test * data.scale + data.center
    np.testing.assert_allclose(data.true_proba(data.X_test), GENERATORS["ripley"].proba(raw))
    # a subset of the features drops the truth (it needs every coordinate)
    assert prepare(loaded, ["x1"], truth="ripley").truth is None
    assert data.subset([1, 0]).truth is None


@pytest.mark.parametrize("kwargs, message", [
    ({"features": ["nope"]}, "not numeric columns"),
    ({"test_size": 0.95}, "test fraction"),
])
def test_prepare_rejects_bad_settings_with_a_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        prepare(load_sample("moons.csv"), **kwargs)


@pytest.mark.parametrize("labels, test_size, says", [
    ([0, 1], 0.3, "classes 0, 1 have a single row"),  # a 2-row file
    ([0] * 5 + [1] * 5 + [2], 0.3, "class 2 has a single row"),
    ([0, 0, 0, 1, 1, 1, 1], 0.05, "leaves 1 test row for 2 classes: raise the test fraction"),
    ([0, 0, 0, 1, 1, 1], 0.8, "leaves 1 training row, and each of the 2 classes needs 2: lower the test"),
    # no fraction works: 0.3 said "lower the test fraction" and 0.1 "raise" it (a crawl's 4 points)
    ([0, 0, 1, 1], 0.3, "2 classes need at least 6 rows (2 training rows and a test row each), whatever"),
    ([0, 0, 1, 1], 0.1, "whatever the test fraction: add rows"),
])
def test_too_few_rows_says_the_cause_and_what_to_do(labels, test_size, says):
    from bsvm.data import LoadedCSV

    X = np.random.default_rng(0).normal(size=(len(labels), 2))
    loaded = LoadedCSV(X, np.asarray(labels), ["a", "b"], "label", pd.DataFrame(X))
    from dashboard.analysis import TooFewRowsError

    with pytest.raises(TooFewRowsError, match="Too few rows") as err:
        prepare(loaded, test_size=test_size)
    assert says in str(err.value) and f"The table has {len(labels)} rows" in str(err.value)
    assert "Is 'label' the label?" not in str(err.value)


def test_too_few_rows_asks_whether_a_many_valued_column_is_the_label():
    """wine's proline (121 whole-number values in 178 rows) taken as the label: "add rows" or "leave out
    the rare classes" pointed away from the fix, picking the class column (a crawl)."""
    from bsvm.data import LoadedCSV
    from dashboard.analysis import TooFewRowsError

    y = np.arange(100) % 40
    X = np.random.default_rng(0).normal(size=(100, 2))
    with pytest.raises(TooFewRowsError, match=r"Is 'proline' the label\? It has 40 distinct values in 100"):
        prepare(LoadedCSV(X, y, ["a", "b"], "proline", pd.DataFrame(X)), test_size=0.3)


def test_pca2_matches_the_eigen_decomposition_of_the_covariance():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5])
    Z, var = pca2(X)
    evals, evecs = np.linalg.eigh(np.cov(X.T))
    order = np.argsort(evals)[::-1]
    np.testing.assert_allclose(var, evals[order[:2]] / evals.sum(), rtol=1e-10)
    for j in range(2):  # same axes up to sign
        ref = (X - X.mean(0)) @ evecs[:, order[j]]
        assert abs(abs(np.corrcoef(Z[:, j], ref)[0, 1]) - 1.0) < 1e-10


def test_grid_points_and_reshape_agree_with_the_heatmap_layout():
    grid = make_grid(np.array([[0.0, -1.0], [2.0, 3.0]]), n=7, pad=0.0)
    assert grid.xs[0] == 0.0 and grid.xs[-1] == 2.0 and grid.ys[0] == -1.0 and grid.ys[-1] == 3.0
    P = grid.points
    Z = grid.reshape(P[:, 0] + 10 * P[:, 1])
    # plotly's Heatmap reads z[i][j] at (x[j], y[i])
    i, j = 4, 2
    assert Z[i, j] == pytest.approx(grid.xs[j] + 10 * grid.ys[i])


def test_thin_index_keeps_the_ends_and_the_bound():
    idx = thin_index(10_000, 600)
    assert len(idx) <= 600 and idx[0] == 0 and idx[-1] == 9_999 and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(thin_index(5, 600), np.arange(5))


def test_evaluate_reports_the_metrics_of_bsvm_metrics():
    data = prepare(load_sample("moons.csv"), seed=0, truth="moons")
    model = PlattSVM(random_state=0).fit(data.X_train, data.y_train)
    res = evaluate(model, data)
    ref = classification_report(data.index(data.y_test), model.predict_proba(data.X_test),
                                p_true=data.true_proba(data.X_test))
    assert res["report"] == ref
    assert set(ref) == {"error", "brier", "log_loss", "ece", "auc", "mad_true"}


# ------------------------------------------------------------------------------------- figures


def test_proba_heatmap_draws_probabilities_truth_points_and_overlay():
    grid = Grid(np.linspace(-1, 1, 5), np.linspace(0, 2, 4))
    p = 1 / (1 + np.exp(-grid.points[:, 0]))
    X = np.array([[0.0, 1.0], [0.5, 0.5], [-0.5, 1.5]])
    y = np.array([0, 1, 1])
    fig = figures.proba_heatmap(grid, p, X, y, [0, 1], overlay=np.array([[0.1, 0.2]]),
                                overlay_name="inducing", truth=p)
    heat = fig.data[0]
    assert heat.type == "heatmap" and heat.zmin == 0.0 and heat.zmax == 1.0
    np.testing.assert_allclose(np.asarray(heat.z), grid.reshape(p))
    contours = [t for t in fig.data if t.type == "contour"]
    # all five levels unlabelled, and the 0.5 level (the Bayes boundary) on top with its label: labels on
    # every level piled up where the levels meet (XOR's centre); one legend entry for the truth
    assert [(t.contours.start, t.contours.end, bool(t.contours.showlabels)) for t in contours] == [
        (0.1, 0.9, False), (0.5, 0.5, True)]
    assert [t.showlegend for t in contours] == [False, True]
    assert {t.legendgroup for t in contours} == {"truth"}
    assert [t.name for t in fig.data].count("inducing") == 1
    light = figures.proba_heatmap(grid, p, X, y, [0, 1], truth=p, light=True)
    assert [bool(t.contours.showlabels) for t in light.data if t.type == "contour"] == [False]
    pts = [t for t in fig.data if t.name == "class 1"][0]
    np.testing.assert_allclose(pts.x, [0.5, -0.5])


def test_objective_and_hyperparameter_curves_follow_the_history_and_stay_bounded():
    hist = _history(5000)
    fig = figures.objective_curve(hist)
    tr = fig.data[0]
    assert tr.name == "ELBO" and len(tr.x) <= figures.MAX_CURVE_POINTS
    assert tr.x[-1] == 4999 and tr.y[-1] == pytest.approx(-100.0 + 4999)
    groups = figures.split_metrics(figures.metric_names(hist))
    assert groups["objective"] == ["elbo"] and groups["hyper"] == ["lengthscale"]
    assert "rho" in groups["other"]
    short = figures.metric_curves(hist[:10], groups["hyper"], "Hyperparameters")
    np.testing.assert_allclose(short.data[0].y, [1.0 + 0.01 * i for i in range(10)])


def test_fast_live_figures_are_valid_plotly():
    """The live builders skip Plotly's validation for speed; rebuilding them with validation must pass."""
    import plotly.graph_objects as go

    hist = _history(30)
    grid = Grid(np.linspace(-1, 1, 5), np.linspace(0, 2, 4))
    p = np.linspace(0, 1, 20)
    figs = [figures.objective_curve(hist), figures.metric_curves(hist, ["lengthscale"], "h", log_y=True),
            figures.snapshot_traces(hist), figures.empty_figure("nothing"),
            figures.proba_heatmap(grid, p, np.zeros((2, 2)), np.array([0, 1]), [0, 1], truth=p,
                                  overlay=np.ones((3, 2)), overlay_name="inducing points"),
            figures.ard_weights(_ard_history(3, 5)),
            figures.metric_curves(_ard_history(3, 30), [f"w[x{j}]" for j in range(30)], "h", log_y=True)]
    for fig in figs:
        go.Figure(fig.to_dict())  # raises ValueError on any invalid property


def _ard_history(n, d):
    """SeegerARD-like records: F and one weight per feature, feature j's weight shrinking unless j < 2."""
    return [Progress(i, 0.1 * i, {"free_energy": 50.0 - i, "C": 2.0, "v": 0.1,
                                  **{f"w[x{j}]": (1.0 if j < 2 else 0.5 ** i) for j in range(d)}}, {})
            for i in range(n)]


def test_ard_weight_axis_has_a_few_upright_ticks_of_the_1_2_5_series():
    """Weights within one decade got a tick every 0.02, turned on end and run together (a crawl)."""
    hist = [Progress(3, 0.1, {f"w[x{j}]": 0.04 + 0.1 * j / 29 for j in range(30)}, {})]
    fig = figures.ard_weights(hist)
    ax = fig.layout.xaxis
    assert ax.type == "log" and ax.tickangle == 0
    # (0.005 and 0.01, 30 px apart on a half-width chart, ran together: decades then, a crawl)
    assert list(ax.tickvals) == [0.01, 0.1] and list(ax.ticktext) == ["0.01", "0.1"]
    # SeegerARD's weights on a 2 %-class upload, 0.005-0.03: "0.0005 0.001 ... 0.01 0.02" overprinted
    w = {"w[x0]": 0.03, "w[x1]": 0.02, **{f"w[x{j}]": 0.0055 for j in (2, 3, 4)}}
    seeger = [Progress(18, 0.1, w, {})]
    assert list(figures.ard_weights(seeger).layout.xaxis.ticktext) == ["0.001", "0.01"]
    # dots, on an axis two decades deep below the largest weight: weights within a factor 3.5 (twonorm's
    # equally relevant features) sit together at its right, none drawn as a sliver of a bar (a crawl)
    assert fig.data[0].type == "scatter" and fig.data[0].mode == "markers"
    assert ax.range[1] - ax.range[0] >= 2.0 and 10 ** ax.range[1] > 0.14 > 0.04 > 10 ** (ax.range[1] - 1)
    # twonorm's weights, 1.9-3.6, all past the decades' last tick "1": "2" is labelled too (a review)
    twonorm = [Progress(3, 0.1, {f"w[x{j}]": 1.9 + 1.7 * j / 19 for j in range(20)}, {})]
    assert list(figures.ard_weights(twonorm).layout.xaxis.ticktext)[-2:] == ["1", "2"]
    assert figures._log_ticks([1e-6, 1e3])["tickvals"] == [1e-6, 1e-3, 1.0, 1e3]  # at most 4, decades
    assert figures._log_ticks([0.05, 0.5])["ticktext"] == ["0.05", "0.1", "0.2", "0.5"]
    assert figures._log_ticks([0.3, 0.35]) == {}  # no two ticks in range: Plotly's own
    assert figures._log_ticks([0.15, 6])["ticktext"] == ["0.5", "1", "5"]  # 1-2-5 too many, decades one


def test_ard_weights_bars_sorted_largest_on_top_and_many_curves_drop_the_legend():
    hist = _ard_history(6, 30)
    fig = figures.ard_weights(hist, max_bars=10)
    bars = fig.data[0]
    assert list(bars.y[-2:]) == ["x1", "x0"] or list(bars.y[-2:]) == ["x0", "x1"]     # relevant ones on top
    assert len(bars.x) == 10 and bars.x[-1] == 1.0 and bars.x[0] == pytest.approx(0.5 ** 5)
    assert "iteration 5" in fig.layout.title.text and "10 largest of 30" in fig.layout.title.text
    assert figures.ard_weights(_history(5)) is None and figures.ard_weights([]) is None
    names = [f"w[x{j}]" for j in range(30)]
    # 30 per-feature curves: one legend entry for them all (hover names each), not a 30-row legend
    crowded = figures.metric_curves(hist, names, "Hyperparameters", log_y=True)
    shown = [t for t in crowded.data if t.showlegend is not False]
    assert len(shown) == 1 and "per feature (30: hover)" in shown[0].name
    # ... and with other curves beside them, those keep their names (SeegerARD's C and v on twonorm
    # were "22 curves: hover to name one", a teacher's crawl)
    other = [Progress(r.iteration, r.elapsed, {**r.metrics, "C": 1.2, "v": 0.8}, r.snapshot) for r in hist]
    beside = figures.metric_curves(other, [*names[:20], "C", "v"], "Hyperparameters", log_y=True)
    assert {t.name for t in beside.data if t.showlegend is not False} >= {"C (kernel amplitude)",
                                                                         "v (kernel offset)"}
    few = figures.metric_curves(hist, names[:3], "Hyperparameters", log_y=True)
    assert few.layout.showlegend is not False and len(few.data) == 3
    # few ticks on a log axis: plotly labelled every digit, "0.3 0.4 ... 0.9 1" overlapping under 1
    assert few.layout.yaxis.type == "log"
    assert few.layout.yaxis.nticks == 3 or 2 <= len(few.layout.yaxis.tickvals) <= 4
    # within a decade, two ticks at least (SeegerARD's C and v, 0.6-1.7, had the one tick "1")
    narrow = [Progress(i, 0.1, {"C": 0.6 + 0.02 * i, "v": 1.7 - 0.01 * i}, {}) for i in range(1, 40)]
    ticks = figures.metric_curves(narrow, ["C", "v"], "H", log_y=True).layout.yaxis.tickvals
    assert ticks is not None and 2 <= len(ticks) <= 4 and all(0.6 <= t <= 1.7 for t in ticks)


def test_posterior_weights_show_mean_and_interval_and_mark_those_clear_of_zero():
    import plotly.graph_objects as go

    rng = np.random.default_rng(0)
    # 2 chains x 500 draws of 3 weights: w[a] ~ N(3, 0.5) (clear of 0), w[b] ~ N(0.2, 1), b ~ N(-1, 0.2)
    S = rng.normal([3.0, 0.2, -1.0], [0.5, 1.0, 0.2], size=(2, 500, 3))
    fig = figures.posterior_weights(S, ["w[a]", "w[b]", "b"], level=0.9)
    go.Figure(fig.to_dict())  # valid Plotly
    pts = fig.data[0]
    # |mean| / sd: w[a] 6, b 5, w[b] 0.2, largest on top (Plotly draws the y categories upwards)
    assert list(pts.y) == ["w[b]", "b", "w[a]"]
    flat = S.reshape(-1, 3)
    np.testing.assert_allclose(pts.x, flat.mean(axis=0)[[1, 2, 0]])
    lo, hi = np.quantile(flat, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(np.asarray(pts.x) + np.asarray(pts.error_x.array), hi[[1, 2, 0]])
    np.testing.assert_allclose(np.asarray(pts.x) - np.asarray(pts.error_x.arrayminus), lo[[1, 2, 0]])
    assert list(pts.marker.color) == ["#1f77b4", "#d62728", "#d62728"]  # w[b]'s interval holds 0
    assert "90% interval" in fig.layout.title.text
    few = figures.posterior_weights(rng.normal(size=(2, 10, 50)), [f"w[{j}]" for j in range(50)], max_rows=30)
    assert len(few.data[0].y) == 30 and "top 30 of 50" in few.layout.title.text
    assert figures.posterior_weights(np.empty((2, 0, 3)), ["a", "b", "c"]) is None
    long = ["w[class_1, od280_od315_of_diluted_wines]", "w[class_2, od280_od315_of_diluted_wines]"]
    fig = figures.posterior_weights(rng.normal(size=(2, 10, 2)), long)
    assert all(len(n) <= figures.NAME_CHARS for n in fig.data[0].y)
    assert set(fig.data[0].customdata) == set(long)
    assert len(set(fig.data[0].y)) == 2  # still told apart


def test_split_metrics_classifies_sampler_statistics():
    g = figures.split_metrics(["free_energy", "w[3]", "step_size", "acceptance", "xi", "train_error", "foo"])
    assert g["objective"] == ["free_energy"] and g["hyper"] == ["w[3]"]
    assert set(g["sampler"]) == {"step_size", "acceptance", "xi", "train_error"} and g["other"] == ["foo"]


def test_snapshot_traces_draw_one_line_per_chain():
    fig = figures.snapshot_traces(_history(20, chains=3))
    assert len(fig.data) == 3
    np.testing.assert_allclose(fig.data[2].y, np.arange(20) + 2)
    assert "nothing" in figures.snapshot_traces([]).layout.annotations[0].text
    many = figures.snapshot_traces(_history(5, chains=12))          # capped at 8 series, and says so
    assert len(many.data) == 8 and "8 of its 12 series shown" in many.layout.title.text
    # a legend of 3 names fits below the plot; one of 8 took most of the chart's height below it (one
    # entry per row): short names at the right, longer ones (up to LEGEND_RIGHT_CHARS) below in two
    # columns (at the right, six "chain 0, w[x1]" took 45 % of a 230 px chart's width at 1280 px)
    assert fig.layout.showlegend is not False and fig.layout.legend.orientation == "h"
    assert many.layout.showlegend is not False and many.layout.legend.orientation == "h"
    assert many.layout.legend.entrywidth == 0.5 and many.layout.legend.entrywidthmode == "fraction"
    short = figures.snapshot_traces(_history(5, chains=12), names=[f"chain {c}" for c in range(12)])
    assert short.layout.legend.orientation == "v"


def test_snapshot_series_are_named_by_chain_and_parameter():
    """The trace chart named its lines coords[0, 1]: now chain and parameter, from the model's own names
    and the data's columns; MS-BPM's confusion counts by class, SeegerARD's weights by input."""
    from dashboard.analysis import snapshot_names

    class Sampler:
        n_chains = 2
        param_names_ = ["w[x0]", "w[x1]", "b"]
        samples_ = np.zeros((2, 5, 3))

    hist = [Progress(1, 0.1, {}, {"coords": np.zeros((2, 2)), "trace_index": np.array([1, 2]),
                                  "potential": np.zeros(2), "confusion": np.zeros((2, 2, 2)),
                                  "w": np.zeros(2), "theta": np.zeros(3)})]
    est = Sampler()
    assert snapshot_names(hist, "coords", est, ["height", "weight"]) == [
        "chain 0, w[weight]", "chain 0, b", "chain 1, w[weight]", "chain 1, b"]
    assert snapshot_names(hist, "potential", est) == ["chain 0", "chain 1"]
    assert snapshot_names(hist, "confusion", est, classes=["no", "yes"])[:2] == [
        "chain 0, true no, predicted no", "chain 0, true no, predicted yes"]
    assert snapshot_names(hist, "w", None, ["height", "weight"]) == ["w[height]", "w[weight]"]
    assert snapshot_names(hist, "theta", None) == ["theta[0]", "theta[1]", "theta[2]"]
    fig = figures.snapshot_traces(hist, "coords", names=snapshot_names(hist, "coords", est, ["h", "w"]),
                                  title="a few coordinates per chain")
    assert [t.name for t in fig.data] == ["chain 0, w[w]", "chain 0, b", "chain 1, w[w]", "chain 1, b"]
    assert "a few coordinates per chain" in fig.layout.title.text
    # the leapfrog path (positions x parameters) is not named by chain when as long as the chain count
    path = [Progress(1, 0.1, {}, {"leapfrog_path": np.zeros((2, 3)), "potential": np.zeros(2)})]
    assert snapshot_names(path, "leapfrog_path", est)[:2] == [
        "step 0, leapfrog_path[0]", "step 0, leapfrog_path[1]"]
    # 4 chains x 3 coordinates, capped at 8 series: whole chains (6 lines), not chain 2 cut in half; long
    # names are not put in a legend that squeezes the plot: hover, and the title says so
    many = [Progress(i, 0.1, {}, {"coords": np.zeros((4, 3)), "trace_index": np.arange(3)}) for i in range(3)]
    long = [f"chain {c}, w[mean concave points {j}]" for c in range(4) for j in range(3)]
    fig = figures.snapshot_traces(many, "coords", names=long)
    assert len(fig.data) == 6 and fig.layout.showlegend is False
    assert "6 of its 12 series shown; hover a line for its name" in fig.layout.title.text
    # a PNG cannot be hovered: it has the legend at the right, and its title no hover note (the Train
    # page's traces PNG said "hover a line for its name" above unnamed lines: a crawl)
    from dashboard import ui

    out = ui.for_export(fig)
    assert out.layout.showlegend is True and out.layout.legend.orientation == "v"
    assert "hover" not in out.layout.title.text and "6 of its 12 series shown" in out.layout.title.text
    assert fig.layout.showlegend is False  # (the page's figure is left as it is)
    only = figures.snapshot_traces(many[:1] * 3, "coords", names=long, max_series=12)
    assert figures.HOVER_NOTE in only.layout.title.text
    assert "<br>" not in ui.for_export(only).layout.title.text


def test_chart_messages_are_wrapped_to_fit_a_half_width_chart():
    """Plotly does not wrap an annotation: a long message ran off both sides of the chart."""
    text = ("The live probability map needs exactly two features: choose two on the Data page (or use the "
            "Calibration page's two-feature option).")
    shown = figures.empty_figure(text).layout.annotations[0].text
    lines = shown.split("<br>")
    assert len(lines) > 1 and max(map(len, lines)) <= figures.MESSAGE_WIDTH
    assert " ".join(lines) == text
    assert figures.empty_figure("nothing").layout.annotations[0].text == "nothing"


def test_a_single_record_is_visible_on_every_live_curve():
    """After one Step a run has one record: a one-point series in "lines" mode draws nothing at all."""
    hist = _history(1)
    figs = [figures.objective_curve(hist), figures.metric_curves(hist, ["lengthscale"], "h"),
            figures.metric_curves(hist, ["lengthscale", "rho"], "s", separate_axes=True),
            figures.snapshot_traces(hist)]
    for fig in figs:
        assert fig.data and all("markers" in t.mode for t in fig.data), fig.layout.title.text
    long = _history(figures.MAX_CURVE_POINTS + 50)
    assert figures.objective_curve(long).data[0].mode == "lines"  # long runs stay light


def test_legends_sit_under_the_axis_title_not_on_it():
    """Legends at a negative paper y overlapped the x-axis title; anchored to the figure's bottom edge
    (yref="container") Plotly shrinks the plot area to make room instead."""
    import plotly.graph_objects as go

    hist = _history(40)
    grid = Grid(np.linspace(-1, 1, 5), np.linspace(0, 2, 4))
    p = np.linspace(0, 1, 20)
    S = np.random.default_rng(0).normal(size=(2, 30, 2))
    b = reliability_bins(np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3]), 5)
    figs = [figures.metric_curves(hist, ["lengthscale", "rho"], "h"), figures.snapshot_traces(hist),
            figures.proba_heatmap(grid, p, np.zeros((2, 2)), np.array([0, 1]), [0, 1]),
            figures.value_heatmap(grid, p, np.zeros((2, 2)), np.array([0, 1]), [0, 1], title="u"),
            figures.reliability_figure({"m": b}), figures.proba_histograms({"m": p}),
            figures.chain_traces(S, 0), figures.running_means(S, 0), figures.autocorrelation_figure(S, 0),
            figures.rank_figure(S, 0), figures.draws_overlay(S, S, 0),
            figures.heatmap_grid({"a": p[:20]}, grid, np.zeros((2, 2)), np.array([0, 1]), [0, 1])]
    for fig in figs:
        go.Figure(fig.to_dict())  # valid Plotly
        leg = fig.layout.legend
        assert leg.yref == "container" and leg.y == 0 and leg.yanchor == "bottom", fig.layout.title.text


def test_heatmap_grid_leaves_room_between_its_title_and_the_subplot_titles():
    grid = Grid(np.linspace(0, 1, 4), np.linspace(0, 1, 3))
    fig = figures.heatmap_grid({"a": np.zeros(12)}, grid, np.zeros((2, 2)), np.array([0, 1]), [0, 1])
    assert fig.layout.margin.t >= 80


def test_sampler_statistics_on_different_scales_get_one_panel_each():
    hist = [Progress(i, 0.01 * i, {"step_size": 1e-3, "xi": 1.0 + 0.1 * np.sin(i)}, {}) for i in range(40)]
    fig = figures.metric_curves(hist, ["step_size", "xi"], "Sampler statistics", separate_axes=True)
    assert [t.yaxis for t in fig.data] == ["y", "y2"]
    d1, d2 = fig.layout.yaxis.domain, fig.layout.yaxis2.domain
    assert d2[1] < d1[0]  # stacked, not overlapping
    assert fig.layout.yaxis.title.text == "step size" and fig.layout.xaxis.anchor == "y2"  # in words
    # a constant, positive step size on an axis that does not run below 0 (it ran from -0.5 to 1)
    assert fig.layout.yaxis.rangemode == "nonnegative" and fig.layout.yaxis2.rangemode == "nonnegative"
    signed = [Progress(i, 0.01 * i, {"step_size": 1e-3, "xi": np.sin(i)}, {}) for i in range(40)]
    fig = figures.metric_curves(signed, ["step_size", "xi"], "Sampler statistics", separate_axes=True)
    assert fig.layout.yaxis2.rangemode is None  # a thermostat can be negative
    alone = figures.metric_curves(hist, ["step_size"], "Sampler statistics", separate_axes=True)
    assert alone.layout.yaxis.rangemode == "nonnegative"  # one panel (before the first R-hat check) too


def test_bookkeeping_counters_and_index_snapshots_are_not_plotted():
    g = figures.split_metrics(["potential", "burnin", "n_draws", "draws_kept", "n_support", "acceptance"])
    assert g == {"objective": ["potential"], "hyper": [], "sampler": ["acceptance"], "other": []}
    hist = [Progress(i, 0.1, {}, {"coords": np.ones((2, 3)), "trace_index": np.arange(3)}) for i in range(3)]
    assert figures.snapshot_keys(hist) == ["coords"]
    assert "trace_index" not in figures.snapshot_traces(hist, "trace_index").layout.title.text


@pytest.mark.parametrize("metric,words", [("potential", "mean over chains; levels off once mixed"),
                                          ("log_posterior", "mean over chains; levels off once mixed"),
                                          ("free_energy", "lower is better"), ("elbo", "higher is better"),
                                          ("neg_free_energy", "higher is better")])
def test_objective_titles_say_which_way_is_better(metric, words):
    """An optimiser's objective has a better direction; a sampler's log posterior settles instead. The
    title's first line stays short ("U = -log posterior (levels off once mixed)" ran off a half-width
    chart in presentation mode at 1280 px): a longer hint goes to a second, smaller line."""
    hist = [Progress(i, 0.1, {metric: float(i)}, {}) for i in range(3)]
    title = figures.objective_curve(hist).layout.title.text
    assert words in title and len(title.split("<br>")[0]) <= 32


def test_a_samplers_potential_is_drawn_as_the_log_posterior():
    """The learning curve of a sampler recording its potential U said "U = -log posterior" at +49 above a
    trace of the log posterior at -50 (a teacher's crawl): it is drawn as the log posterior -U, the name
    the traces, the diagnostics table and the NetCDF use; the outlier cut works on the drawn values."""
    hist = [Progress(i, 0.1 * i, {"potential": 49.0 + (300.0 if i < 2 else np.sin(i))}, {})
            for i in range(60)]
    fig = figures.objective_curve(hist)
    title = fig.layout.title.text
    assert title.startswith("log posterior") and "U" not in title.split("<br>")[0]
    y = np.asarray(fig.data[0].y, dtype=float)
    assert np.nanmax(y) < -47 and np.nanmin(y) < -300
    lo, hi = fig.layout.yaxis.range  # the start's outliers cut off the axis, around -49
    assert -52 < lo < hi < -46


def test_reliability_figure_shows_the_bins_and_their_counts():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    b = reliability_bins(y, p, 10)
    fig = figures.reliability_figure({"model": b})
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_array_equal(bars[0].y, b.count)
    line = [t for t in fig.data if t.name == "model"][0]
    np.testing.assert_allclose(line.y, b.frac_pos[b.count > 0])
    # each bin's 90 % interval as an error bar: wider for the emptier bins
    ok = b.count > 0
    lo, hi = metrics.wilson_interval(b.frac_pos[ok] * b.count[ok], b.count[ok], 0.9)
    np.testing.assert_allclose(line.error_y.array, hi - line.y)
    np.testing.assert_allclose(line.error_y.arrayminus, line.y - lo)
    width = np.asarray(line.error_y.array) + np.asarray(line.error_y.arrayminus)
    assert width[np.argmin(b.count[ok])] > width[np.argmax(b.count[ok])]
    # a bin observed at exactly 0 or 1 sits on the edge of the [0, 1] axes: drawn whole, not cut in half
    assert line.cliponaxis is False and tuple(fig.layout.yaxis.range) == (0, 1)


def test_the_baseline_keeps_its_colour_whatever_it_is_shown_with():
    """PlattSVM's reliability curve and histogram were green alone and purple beside MS-BPM (a crawl)."""
    rng = np.random.default_rng(0)
    p = rng.uniform(size=100)
    b = reliability_bins((rng.uniform(size=100) < p).astype(int), p, 10)

    def colour(fig, name):
        return next(t.line.color for t in fig.data if t.name == name)

    alone = figures.reliability_figure({"PlattSVM (SVC + Platt scaling)": b})  # (the Train page's run)
    both = figures.reliability_figure({"MS-BPM": b, "PlattSVM": b})
    assert colour(alone, "PlattSVM (SVC + Platt scaling)") == figures.BASELINE_COLOUR
    assert colour(both, "PlattSVM") == figures.BASELINE_COLOUR
    assert colour(both, "MS-BPM") != figures.BASELINE_COLOUR
    hist = figures.proba_histograms({"MS-BPM": p, "PlattSVM": p})
    # (the first filled, the second an outline in its colour: outline_after_first)
    assert [hist.data[0].marker.color, hist.data[1].marker.line.color] == [colour(both, "MS-BPM"),
                                                                            figures.BASELINE_COLOUR]


def test_metrics_table_has_one_row_per_model():
    t = figures.metrics_table({"a": {"error": 0.1, "auc": 0.9}, "b": {"error": 0.2, "auc": 0.8}}, {"a": 1.5})
    assert list(t.index) == ["a", "b"] and t.loc["b", "error"] == 0.2 and t.loc["a", "fit time (s)"] == 1.5


def test_autocorrelation_matches_the_direct_sum_and_an_ar1_process():
    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    ac = figures.autocorrelation(x, 5)
    xc = x - x.mean()
    direct = [np.sum(xc[: len(x) - k] * xc[k:]) / np.sum(xc**2) for k in range(6)]
    np.testing.assert_allclose(ac, direct, atol=1e-12)
    phi, n = 0.8, 40_000
    e = rng.normal(size=n)
    z = np.empty(n)
    z[0] = e[0]
    for t in range(1, n):
        z[t] = phi * z[t - 1] + e[t]
    # the lag-1 estimate's standard error is about sqrt((1 - phi^2) / n) = 0.003; allow 5 of them
    assert figures.autocorrelation(z, 1)[1] == pytest.approx(phi, abs=0.015)


def test_rank_counts_are_flat_for_mixed_chains_and_skewed_for_a_stuck_one():
    rng = np.random.default_rng(2)
    S = rng.normal(size=(4, 1000, 1))
    counts = figures.rank_counts(S, 0, n_bins=10)
    assert counts.sum() == 4000 and counts.shape == (4, 10)
    # each bin count ~ Binomial-like around 100 per chain: 6 sd = 60
    assert np.all(np.abs(counts - 100) < 60)
    S[0] += 3.0
    stuck = figures.rank_counts(S, 0, n_bins=10)
    # shifted by 3 sd, chain 0 holds nearly all of the top quarter of ranks (the last 2.5 of 10 bins)
    assert stuck[0, :5].sum() < 20 and stuck[0, 8:].sum() > 700


def test_diagnostics_table_flags_stuck_chains_and_passes_mixed_ones():
    rng = np.random.default_rng(3)
    good = rng.normal(size=(4, 1000, 2))
    t = figures.diagnostics_table(good, ["a", "b"])
    assert list(t.index) == ["a", "b"] and (t["flag"] == "ok").all()
    assert (t["R-hat"] < 1.01).all() and (t["bulk-ESS"] > 400).all()
    np.testing.assert_allclose(t["MCSE(mean)"], 1 / np.sqrt(4000), rtol=0.25)
    bad = good.copy()
    bad[:2] += 2.0
    tb = figures.diagnostics_table(bad)
    assert (tb["R-hat"] > 1.1).all() and tb["flag"].str.contains("R-hat").all()
    # a coordinate that never moves (MS-BPM pins some at 0) has no R-hat: flagged constant, not failed;
    # chains each stuck at their own value are not constant, and fail
    pinned = np.concatenate([good, np.zeros((4, 1000, 1))], axis=2)
    tp = figures.diagnostics_table(pinned)
    assert list(tp["flag"]) == ["ok", "ok", figures.CONSTANT]
    # its ESS and MCSE are undefined too (arviz-stats returned the draw count as its ESS)
    assert tp.iloc[2][["R-hat", "bulk-ESS", "tail-ESS", "MCSE(mean)"]].isna().all()
    # failing rows first, then passing ones, then constants, each group in the parameters' order
    mixed = np.concatenate([np.zeros((4, 1000, 1)), good, bad[:, :, :1]], axis=2)
    order = figures.diagnostics_table(mixed, ["pinned", "a", "b", "stuck"])
    assert list(order.index) == ["stuck", "a", "b", "pinned"]
    apart = np.broadcast_to(np.arange(4.0)[:, None, None], (4, 1000, 1))
    assert figures.diagnostics_table(apart)["flag"].iloc[0] not in ("ok", figures.CONSTANT)


def test_the_dashboards_flags_are_the_samplers_stopping_rule():
    """One rule everywhere: a run that met its stopping rule is not flagged by the Diagnostics page for the
    same quantities (with 100 ESS per chain, MS-BPM's 8 chains were asked for 800)."""
    from bsvm.convergence import StoppingRule, assess

    rule = StoppingRule()
    assert figures.RHAT_MAX == rule.rhat and figures.ESS_MIN == rule.ess_bulk == rule.ess_tail
    rng = np.random.default_rng(5)
    q = rng.normal(size=(8, 80, 3))  # 640 independent draws: ESS ~ 640, within the rule, below 8 x 100
    q[:, :, 2] += np.arange(8)[:, None]  # chains apart: fails
    status = assess(q, names=["log_posterior", "p(y|x)[0]", "p(y|x)[5]"])
    t = figures.stopping_rule_table(status, 8)
    assert list(t.index) == ["p(y|x)[5]", "log_posterior", "p(y|x)[0]"]  # the failing row first
    assert t["flag"].iloc[0].startswith("R-hat") and (t["flag"].iloc[1:] == "ok").all()
    np.testing.assert_allclose(t["R-hat"].to_numpy(), np.asarray(status.per_quantity["rhat"])[[2, 0, 1]])
    assert (figures.diagnostics_table(q[:, :, :2])["flag"] == "ok").all()
    assert figures.stopping_rule_table(assess(q[:, :3]), 8) is None  # too few draws: no check made


def test_chain_figures_draw_the_selected_chains():
    S = np.random.default_rng(4).normal(size=(3, 50, 2))
    assert len(figures.chain_traces(S, 1, [0, 2]).data) == 2
    rm = figures.running_means(S, 0, [1]).data[0].y
    np.testing.assert_allclose(rm[-1], S[1, :, 0].mean())
    assert len(figures.autocorrelation_figure(S, 0).data) == 3
    ov = figures.draws_overlay(S, S + 1, 0)
    np.testing.assert_allclose(ov.data[1].x, (S + 1)[:, :, 0].ravel())
    with pytest.raises(ValueError, match="chains, draws, params"):
        figures.chain_traces(np.zeros(5), 0)


def test_heatmap_grid_puts_every_map_on_one_scale():
    grid = Grid(np.linspace(0, 1, 4), np.linspace(0, 1, 3))
    maps = {"a": np.full(12, 0.2), "b": np.full(12, 0.9), "c": np.full(12, 0.5), "d": np.zeros(12)}
    fig = figures.heatmap_grid(maps, grid, np.zeros((2, 2)), np.array([0, 1]), [0, 1])
    heats = [t for t in fig.data if t.type == "heatmap"]
    assert len(heats) == 4 and all(h.zmin == 0 and h.zmax == 1 for h in heats)
    assert sum(bool(h.showscale) for h in heats) == 1
    # the Compare page's labels: the method's name above its map, its description left out (side by side
    # at 1280 px the full labels ran into each other)
    named = figures.heatmap_grid({"GibbsSVM (exact Gibbs sampler)": np.zeros(12),
                                  "Seeger ARD (variational model selection)": np.ones(12)},
                                 grid, np.zeros((2, 2)), np.array([0, 1]), [0, 1])
    assert [a.text for a in named.layout.annotations] == ["GibbsSVM", "Seeger ARD"]
    # a labelled hover with the method's name ("x: -3.585385 ... trace 20" before, a crawl)
    hovers = [t.hovertemplate for t in named.data if t.type == "heatmap"]
    assert "<extra>GibbsSVM</extra>" in hovers[0] and "p(y = 1 | x)=%{z:.3f}" in hovers[0]
    # the true p(y|x) as contours on every map (one legend entry), and every map's axes named
    truth = np.linspace(0, 1, 12)
    fig = figures.heatmap_grid(maps, grid, np.zeros((2, 2)), np.array([0, 1]), [0, 1], truth=truth,
                               axis_titles=("x1 (standardised)", "x2 (standardised)"))
    contours = [t for t in fig.data if t.type == "contour"]
    assert len(contours) == 4 and sum(bool(t.showlegend) for t in contours) == 1
    np.testing.assert_array_equal(contours[0].z, grid.reshape(truth))
    # x named under the last map of each column, y left of each row's first map (4 maps in 3 columns)
    xs = [fig.layout[k].title.text for k in fig.layout if k.startswith("xaxis")]
    ys = [fig.layout[k].title.text for k in fig.layout if k.startswith("yaxis")]
    assert xs.count("x1 (standardised)") == 3 and ys.count("x2 (standardised)") == 2


# ------------------------------------------------------------------------------------- runs and methods


def test_method_registry_drops_unknown_options_and_parses_url_values():
    m = METHODS["platt"]
    est = m.make({"C": 2.0, "not_an_option": 1}, seed=5)
    assert est.C == 2.0 and est.random_state == 5
    assert [o.name for o in m.visible_options()] == ["C", "gamma", "cv"]
    o = Option("n", "n", "int", 3, "", min=1, max=10)
    assert o.parse("7") == 7 and o.parse("70") is None and o.parse("x") is None
    s = Option("k", "k", "select", "a", "", choices=("a", "b"))
    assert s.parse("b") == "b" and s.parse("c") is None
    assert Option("f", "f", "float", 1.0, "", min=0.0).parse("nan") is None


# ------------------------------------------------------------------------ content (issue 14 §3, §5)

from dashboard import analysis as A  # noqa: E402
from dashboard import figures_posterior as FP  # noqa: E402
from dashboard import playground as PG  # noqa: E402
from dashboard.methods import import_errors  # noqa: E402


def test_model_map_overlay_draws_the_models_inducing_points_column_for_column():
    pytest.importorskip("bsvm.sbsvm")
    data = prepare(load_sample("ripley.csv"), seed=0, truth="ripley")
    est = METHODS["sbsvm"].make({"n_inducing": 12, "max_iter": 20}, seed=0).fit(data.X_train, data.y_train)
    Z = np.asarray(est.inducing_points_)
    assert not np.allclose(Z[:, 0], Z[:, 1])
    grid = make_grid(np.vstack([data.X_train, data.X_test]), 20)
    fig = figures.model_map(est, data, grid, "S-BSVM", truth=data.true_proba(grid.points))
    (ov,) = [t for t in fig.data if t.name == "inducing points"]
    np.testing.assert_allclose(ov.x, Z[:, 0])
    np.testing.assert_allclose(ov.y, Z[:, 1])
    # the axes are the data's columns (standardised, as plotted), and the truth is drawn as contours
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("x1 (standardised)",
                                                                          "x2 (standardised)")
    raw = prepare(load_sample("ripley.csv"), standardize=False, seed=0)
    assert raw.axis_names == ["x1", "x2"]
    assert [t.name for t in fig.data if t.type == "contour" and t.showlegend] == [figures.TRUTH_NAME]


def test_the_truth_is_kept_only_on_the_generators_own_axes_and_labels():
    from bsvm.data import load_csv
    from bsvm.samples import sample_path

    path = sample_path("ripley.csv")
    assert prepare(load_csv(path), truth="ripley").truth == "ripley"
    assert prepare(load_csv(path, features=["x1", "x2"]), truth="ripley").truth == "ripley"
    # reordered or subset columns, loaded that way or chosen in prepare: another function of the axes
    assert prepare(load_csv(path, features=["x2", "x1"]), truth="ripley").truth is None
    assert prepare(load_csv(path), ["x2", "x1"], truth="ripley").truth is None
    assert prepare(load_csv(path, features=["x1"]), truth="ripley").truth is None
    # labels other than the generator's 0/1: its p(y = 1 | x) is not about them
    relabelled = load_csv(path)
    relabelled.y = np.where(relabelled.y == 1, "pos", "neg")
    assert prepare(relabelled, truth="ripley").truth is None


def test_playground_canvas_stays_put_when_points_are_added_near_its_edge():
    """The canvas followed the points: a click near its edge widened the axes, so every point moved from
    under the cursor and a remove-click there missed (a crawl)."""
    pg = PG.generate("ripley", 120, seed=1)
    grid = PG.click_grid(pg)
    corner = grid[0] + 0.01  # the lower-left corner of the canvas
    edited = pg
    for _ in range(3):
        edited = PG.edit(edited, *corner, PG.ADD_1)
    np.testing.assert_array_equal(PG.click_grid(edited), grid)
    removed = PG.edit(edited, *(corner + 0.02), PG.REMOVE)
    assert len(removed.y) == len(edited.y) - 1
    # a point placed outside the canvas (from code, not a click) widens it to take the point in
    outside = PG.edit(pg, grid[-1, 0] + 5.0, 0.0, PG.ADD_0)
    assert PG.canvas(outside)[2] > grid[-1, 0] + 5.0 and PG.canvas(outside)[0] == PG.canvas(pg)[0]
    blank = PG.generate("blank")
    assert len(blank.y) == 0 and PG.canvas(blank) == (-2.0, -2.0, 2.0, 2.0)
    # a playground kept from before bounds existed: its canvas is fixed from its first edit on
    old = PG.Playground("ripley", 120, pg.noise, 1, pg.X, pg.y)
    first = PG.edit(old, *corner, PG.ADD_1)
    assert first.bounds == PG.canvas(old)
    assert PG.click_grid(PG.edit(first, *corner, PG.ADD_1))[0, 0] == grid[0, 0]


def test_playground_noise_reaches_the_truth_and_edits_drop_it():
    pg = PG.generate("ripley", 120, noise=0.3, seed=1)
    data = prepare(pg.loaded(), seed=0, truth=pg.truth[0], truth_kw=pg.truth[1])
    raw = data.X_test * data.scale + data.center
    np.testing.assert_allclose(data.true_proba(data.X_test), GENERATORS["ripley"].proba(raw, noise=0.3))
    assert not np.allclose(data.true_proba(data.X_test), GENERATORS["ripley"].proba(raw))
    added = PG.edit(pg, 5.0, 5.0, PG.ADD_1)
    assert len(added.y) == 121 and added.y[-1] == 1 and added.truth == (None, {})
    removed = PG.edit(added, 5.0, 5.01, PG.REMOVE)
    assert len(removed.y) == 120 and not np.any(np.all(removed.X == [5.0, 5.0], axis=1))
    assert PG.edit(removed, 50.0, 50.0, PG.REMOVE) is removed  # nothing near: nothing removed
    fig = figures.playground_figure(pg.X, pg.y, PG.click_grid(pg, 10))
    assert fig.data[0].name == "canvas" and len(fig.data[0].x) == 100


def test_dashboard_defaults_are_the_librarys_and_quick_settings_say_what_they_change():
    for m in METHODS.values():
        if not m.available:
            continue
        lib = m.library_defaults()
        for name, value in m.defaults().items():  # a rule such as "auto" shows as an empty box (None)
            assert value == lib[name] or (value is None and isinstance(lib[name], str)), (m.key, name)
        made = m.make(m.defaults(), seed=lib.get("random_state")).get_params()
        assert made == lib, m.key  # the estimator the dashboard builds is the library's default one
    note = METHODS["sbsvm"].fast_note()
    lib = METHODS["sbsvm"].library_defaults()
    assert f"Max steps 60 (library {lib['max_iter']})" in note
    # in the option boxes' words, not the parameters' (a crawl read "n_samples 20, n_burnin 100")
    note = METHODS["subgradient_hmc"].fast_note()
    assert "Draws per chain 100" in note and "Burn-in 100" in note and "n_samples" not in note


def test_import_errors_name_the_failing_method(monkeypatch):
    from dashboard.methods import Method

    ghost = Method("ghost", "Ghost", "bsvm.nope", "Ghost", "sampler", "", "")
    monkeypatch.setitem(METHODS, "ghost", ghost)
    assert ghost.load() is None and "No module named 'bsvm.nope'" in import_errors()["Ghost"]


def test_positional_feature_names_become_the_columns():
    cols = ["radius", "texture", "area"]
    assert A.feature_label("w[x0]", cols) == "w[radius]"  # x0 is the first column (0-based)
    assert A.feature_label("w[x2]", cols) == "w[area]"
    assert A.feature_label("w[x7]", cols) == "w[x7]" and A.feature_label("max_x0", cols) == "max_x0"
    # an ARD kernel's length scales (S-BSVM's records) by column too
    assert A.feature_label("lengthscales[1]", cols) == "length scale[texture]"
    assert A.feature_label("k1.lengthscales[0]", cols) == "k1.length scale[radius]"
    assert A.feature_label("lengthscales[9]", cols) == "lengthscales[9]"
    # columns that look like positional names (Ripley's x1, x2) are put in once, not read again
    assert [A.feature_label(f"lengthscales[{j}]", ["x1", "x2"]) for j in (0, 1)] == \
        ["length scale[x1]", "length scale[x2]"]
    assert [A.feature_label(f"w[x{j}]", ["x1", "x2"]) for j in (0, 1)] == ["w[x1]", "w[x2]"]
    hist = [Progress(1, 0.1, {"w[x0]": 2.0, "w[x1]": 0.01, "w[x2]": 0.5}, {})]
    bars = figures.ard_weights(hist, feature_names=cols)
    assert list(bars.data[0].y) == ["texture", "area", "radius"]  # largest on top
    curves = figures.metric_curves(hist, ["w[x0]", "w[x1]"], "ARD", feature_names=cols)
    assert [t.name for t in curves.data] == ["w[radius]", "w[texture]"]

    class Linear:
        features, feature_map_ = None, None

    assert A.param_names(Linear(), ["x1", "x2"], 3) == ["w[x1]", "w[x2]", "b"]
    assert A.param_names(object(), ["x1", "x2"], 5) == [f"param {j}" for j in range(5)]


def test_uncertainty_is_the_predictive_entropy_on_one_scale_with_latent_variance_as_an_option():
    class Fixed:
        def __init__(self, P):
            self.P = np.asarray(P)

        def predict_proba(self, X):
            return self.P

    u = A.uncertainty(Fixed([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1]]), np.zeros((3, 2)))
    np.testing.assert_allclose(u.values, [np.log(2), 0.0, -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))],
                               atol=1e-12)
    assert u.zmax == pytest.approx(np.log(2)) and "entropy" in u.name
    assert A.uncertainty(Fixed([[1 / 3] * 3]), np.zeros((1, 2))).zmax == pytest.approx(np.log(3))
    assert A.uncertainty(Fixed([[0.5, 0.5]]), np.zeros((1, 2)), A.LATENT_VARIANCE) is None
    fig = figures.value_heatmap(Grid(np.arange(3.0), np.arange(1.0)), u.values, title="t", zmax=u.zmax)
    assert fig.data[0].zmin == 0.0 and fig.data[0].zmax == pytest.approx(np.log(2))


def test_multiclass_maps_colour_each_region_by_its_class_with_confidence_as_opacity():
    grid = Grid(np.linspace(0, 1, 4), np.linspace(0, 1, 2))
    P = np.array([[0.8, 0.1, 0.1], [0.4, 0.3, 0.3], [0.1, 0.9, 0.0], [0.2, 0.2, 0.6]] * 2)
    fig = figures.class_map(grid, P, classes=["a", "b", "c"])
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert [t.name for t in heat] == ["class a", "class b", "class c"]
    for k, t in enumerate(heat):
        z = np.asarray(t.z, dtype=float).ravel()
        mine = P.argmax(1) == k
        np.testing.assert_allclose(z[mine], P.max(1)[mine])
        assert np.isnan(z[~mine]).all()
        lo, hi = t.colorscale[0][1], t.colorscale[-1][1]
        assert figures._rgba(figures.CLASS_COLOURS[k], 0)[:-6] in lo  # the class's own colour...
        assert float(lo.rsplit(",", 1)[1][:-1]) < float(hi.rsplit(",", 1)[1][:-1])  # ...more opaque if sure
        assert t.zmin == pytest.approx(1 / 3) and t.zmax == 1.0
    # the Compare grid colours a 3-class map the same way
    grid_fig = figures.heatmap_grid({"m": P}, grid, np.zeros((0, 2)), np.zeros(0), ["a", "b", "c"])
    assert sum(t.type == "heatmap" for t in grid_fig.data) == 3


def test_posterior_draw_figures_and_linear_draw_surfaces():
    class LinearSampler:  # weights (w1, w2, b) per chain and draw, as GibbsSVM with features=None
        features, feature_map_ = None, None
        samples_ = np.stack([np.column_stack([np.full(40, 1.0 + c), np.full(40, -1.0), np.full(40, 0.5)])
                             for c in range(2)])

    est = LinearSampler()
    grid = Grid(np.linspace(-2, 2, 9), np.linspace(-2, 2, 7))
    values, level = A.draw_surfaces(est, grid.points, n_draws=25)
    assert values.shape == (25, 63) and level == 0.0
    w = est.samples_.reshape(-1, 3)
    assert any(np.allclose(values[0], grid.points @ w[i, :2] + w[i, 2]) for i in range(len(w)))
    fig = FP.draw_boundaries(grid, values, level)
    assert sum(t.type == "contour" for t in fig.data) == 25
    assert all(t.contours.start == 0.0 == t.contours.end for t in fig.data if t.type == "contour")
    W, names = A.weight_cloud(est, ["u", "v"])
    assert W.shape == (2, 40, 2) and names == ["w[u]", "w[v]"]
    path = np.array([[0.0, 0.0, 0.0], [0.1, 0.2, 0.0], [0.3, 0.1, 0.0]])
    hist = [Progress(i, 0.0, {}, {"leapfrog_path": path + i}) for i in range(8)]
    hist.append(Progress(9, 0.0, {}, {}))
    paths = A.leapfrog_paths(hist, max_paths=3)
    assert len(paths) == 3 and np.allclose(paths[-1], path + 7)  # the last transitions, oldest first
    assert A.leapfrog_paths([Progress(1, 0.0, {}, {})]) == []  # absent: no path, no error
    cloud = FP.weight_cloud(W, names, paths)
    lines = [t for t in cloud.data if t.mode == "lines+markers"]
    assert len(lines) == 3
    assert np.allclose(lines[-1].x, path[:, 0] + 7) and np.allclose(lines[-1].y, path[:, 1] + 7)
    assert A.weight_cloud(est, ["u", "v", "z"]) is None
    # a selection of the chains keeps their numbers and colours (the cloud ignored the Chains control)
    one = FP.weight_cloud(W[[1]], names, chains=[1])
    pts = [t for t in one.data if t.mode == "markers"]
    assert [t.name for t in pts] == ["chain 1"] and pts[0].marker.color == FP.CHAIN_COLOURS[1]


def test_approximate_against_exact_table_reports_means_and_sds():
    rng = np.random.default_rng(0)
    exact = rng.normal([1.0, -2.0], [1.0, 0.5], size=(4, 2000, 2))
    approx = rng.normal([1.1, -2.0], [1.0, 1.0], size=(2, 2000, 2))
    t = A.approx_vs_exact(approx, exact, ["w[a]", "b"])
    assert list(t.index) == ["w[a]", "b"]
    assert t.loc["w[a]", "|mean diff| / sd (exact)"] == pytest.approx(0.1, abs=0.04)
    assert t.loc["b", "sd ratio"] == pytest.approx(2.0, rel=0.05)
    with pytest.raises(ValueError, match="not comparable"):
        A.approx_vs_exact(approx, exact[:, :, :1], ["a"])
    # independent draws: the MC error of the difference is sqrt(1/4000 + 1/8000) sd for w[a] (0.019 sd),
    # so a shift of 0.1 sd is ~5 MC errors away and called off; the bias-free b is within noise
    z = t["|mean diff| / MC error"]
    assert z["w[a]"] == pytest.approx(0.1 / np.sqrt(1 / 4000 + 1 / 8000), rel=0.35) and z["w[a]"] > 3
    assert z["b"] < 3
    verdict = A.approx_vs_exact_verdict(t)
    assert "1 of 2 means differ by more than 3 Monte Carlo errors (w[a])" in verdict
    same = A.approx_vs_exact(rng.normal(size=(2, 500, 3)), rng.normal(size=(4, 500, 3)), ["u", "v", "b"])
    assert "Every mean agrees within 3 Monte Carlo errors" in A.approx_vs_exact_verdict(same)
    short = A.approx_vs_exact(approx[:, :3], exact, ["w[a]", "b"])  # 3 draws per chain: no MC error
    assert "|mean diff| / MC error" not in short and "Too few draws" in A.approx_vs_exact_verdict(short)


def test_ess_grows_with_draws_energy_bfmi_and_pair_plot():
    rng = np.random.default_rng(1)
    S = rng.normal(size=(4, 400, 3))
    table = A.ess_by_draws(S, 0, n_points=5)
    assert table["draws"].iloc[-1] == 400 and np.all(np.diff(table["bulk"]) > 0)
    assert table["bulk"].iloc[-1] == pytest.approx(1600, rel=0.2)  # independent draws: ESS ~ all draws
    fig = FP.ess_evolution(table, "param 0", figures.ESS_MIN)
    assert fig.data[-1].y[0] == 400  # the stopping rule's line
    # BFMI: white-noise energy gives 2 (E[dE^2] = 2 Var E); a slowly moving energy gives a small value
    walk = np.cumsum(rng.normal(size=(2, 2000)), axis=1)
    assert A.bfmi(rng.normal(size=(2, 4000))) == pytest.approx([2.0, 2.0], rel=0.1)
    low = A.bfmi(walk)
    assert (low < 0.3).all()
    efig = FP.energy_plot(walk, low)
    assert "low in chain(s) [0, 1]" in efig.layout.title.text
    pts = A.pair_data(S, [0, 2], max_points=300)
    assert pts.shape == (300, 2)
    pair = FP.pair_plot(pts, ["a", "c"])
    assert [t.type for t in pair.data].count("histogram") == 2
    # tick labels where they cannot overlap a neighbouring panel: x on the bottom row only (columns share
    # x), none for the diagonal's counts, y on the first column only
    three = FP.pair_plot(np.random.default_rng(0).normal(size=(50, 3)), ["a", "b", "c"])
    lay = three.layout
    hidden_x = [lay[f"xaxis{n}"].showticklabels is False for n in ("", 2, 3, 4, 5, 6)]  # rows 1-2
    assert all(hidden_x) and lay.xaxis7.showticklabels is not False
    assert [lay[f"yaxis{n}"].showticklabels is False for n in ("", 5, 9)] == [True, True, True]  # diagonal
    assert lay.yaxis8.showticklabels is False and lay.yaxis7.showticklabels is not False


def test_downloads_draws_csv_and_metrics_csv_round_trip():
    import io

    import pandas as pd

    S = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    frame = pd.read_csv(io.BytesIO(A.draws_csv(S, ["w[a]", "b"])))
    assert list(frame.columns) == ["chain", "draw", "w[a]", "b"] and len(frame) == 6
    np.testing.assert_allclose(frame[["w[a]", "b"]].to_numpy(), S.reshape(6, 2))
    assert frame["chain"].tolist() == [0, 0, 0, 1, 1, 1]
    table = figures.metrics_table({"m": {"error": 0.1, "brier": 0.2}})
    back = pd.read_csv(io.BytesIO(A.metrics_csv(table)), index_col=0)
    assert back.loc["m", "error"] == 0.1


def test_draws_netcdf_round_trips_through_the_estimators_datatree():
    pytest.importorskip("h5netcdf")
    pytest.importorskip("h5py")
    import xarray as xr

    from bsvm.draws import to_datatree

    class Sampler:
        def to_arviz(self):
            return to_datatree({"w": np.arange(24.0).reshape(2, 4, 3)}, {"energy": np.ones((2, 4))})

    blob = A.draws_netcdf(Sampler())
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(blob)
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        np.testing.assert_allclose(tree["posterior"]["w"].values, np.arange(24.0).reshape(2, 4, 3))
    assert A.draws_netcdf(object()) is None


def test_draws_netcdf_names_the_parameters_as_the_page_and_the_csv_do():
    """A SubgradientHMC fit on columns (x1, x2): the library names its weights by position (w[x0], w[x1]);
    the NetCDF download carries the page's names, as the CSV does (its w[x1] was the file's w[x0]), and
    the run's metadata."""
    pytest.importorskip("h5netcdf")
    import tempfile
    import warnings

    import xarray as xr

    from bsvm.subgradient import SubgradientHMC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC(n_samples=30, n_burnin=30, random_state=0).fit(X, y, progress=False)
    names = A.param_names(est, ["x1", "x2"], 3)
    assert names == ["w[x1]", "w[x2]", "b"]
    S = est.samples_
    csv = pd.read_csv(io.BytesIO(A.draws_csv(S, names)))
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(A.draws_netcdf(est, ["x1", "x2"]))
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        post = tree["posterior"]
        assert list(post["feature"].values) == ["x1", "x2"]  # the data's columns, not x0, x1
        for col in ("x1", "x2"):
            np.testing.assert_allclose(post["w"].sel(feature=col).values.ravel(), csv[f"w[{col}]"].values)
        np.testing.assert_allclose(post["b"].values.ravel(), csv["b"].values)
        assert tree.attrs["sampler"] == "hmc" and "stopping_rule" in tree["posterior"].attrs
        assert tree.attrs["estimator"] == "SubgradientHMC" and "group='posterior'" in tree.attrs["note"]
        assert "log_likelihood" not in tree.children  # (no training rows given)
    # with the training rows: the pointwise log-likelihood and the rows, so arviz_stats.loo reads the file
    # (a crawl: it could not), equal to the library's own
    arviz_stats = pytest.importorskip("arviz_stats")
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(A.draws_netcdf(est, ["x1", "x2"], X=X))
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        ll = tree["log_likelihood"]["y"].values
        np.testing.assert_allclose(ll, est.to_arviz(X)["log_likelihood"]["y"].values)
        np.testing.assert_allclose(tree["constant_data"]["X"].values, X)
        assert "log_likelihood" in tree.attrs["note"]
        assert np.isfinite(float(arviz_stats.loo(tree).elpd))
    # past the library's size rule the file is still written, without the group, and says why
    from bsvm import draws

    old, draws.MAX_LOG_LIKELIHOOD = draws.MAX_LOG_LIKELIHOOD, 10
    try:
        blob = A.draws_netcdf(est, ["x1", "x2"], X=X)
    finally:
        draws.MAX_LOG_LIKELIHOOD = old
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(blob)
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        assert "log_likelihood" not in tree.children and "left out" in tree.attrs["note"]
    # what made the draws, for a user putting the weights back on the file's scale (a crawl: the file
    # named neither the method nor the standardisation)
    about = {"method": "Subgradient HMC", "data": "mine.csv", "features": ["x1", "x2"], "standardized": 1,
             "feature_center": np.array([0.5, -1.0]), "feature_scale": np.array([2.0, 3.0]), "skip": None}
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(A.draws_netcdf(est, ["x1", "x2"], about))
        fh.flush()
        attrs = xr.open_datatree(fh.name, engine="h5netcdf").attrs
        assert attrs["method"] == "Subgradient HMC" and attrs["data"] == "mine.csv"
        assert attrs["features_comma_separated"] == "x1, x2" and "skip" not in attrs
        np.testing.assert_allclose(attrs["feature_scale"], [2.0, 3.0])


def test_draws_netcdf_names_a_feature_maps_input_columns_and_keeps_its_coordinates():
    """A feature map's weights are over its own coordinates (f0, f1, ...), which are not the columns; the
    rows' columns (dimension "input") take the data's names (they kept 0, 1, 2, a review). The dataset
    arrays stay the library's own: only coordinates are renamed."""
    pytest.importorskip("h5netcdf")
    import tempfile
    import warnings

    import xarray as xr

    from bsvm import SubgradientHMC

    X = np.random.default_rng(0).normal(size=(60, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC(features="rff", n_components=8, n_samples=20, random_state=0).fit(X, X[:, 0] > 0)
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(A.draws_netcdf(est, ["alc", "mal", "ash"], X=X))
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        assert [str(v) for v in tree["constant_data"]["input"].values] == ["alc", "mal", "ash"]
        assert [str(v) for v in tree["posterior"]["feature"].values] == [f"f{j}" for j in range(8)]
        np.testing.assert_allclose(tree["posterior"]["w"].values, est.to_arviz()["posterior"]["w"].values)


def test_a_chance_level_fit_that_warned_of_scales_names_them_as_the_cause():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)

    class Coin:
        def predict(self, X):
            return np.arange(len(X)) % 2

    assert "found no pattern" in A.fit_note(Coin(), X, y)
    said = A.fit_note(Coin(), X, y, scaled_badly=True)
    assert "found no pattern" not in said and "likely cause is the features' scales" in said
    # the library's own words, for each rule (the page matches them: a rewording must show here)
    import warnings as W

    from bsvm.data import DataScaleWarning, check_input_scale

    wide = np.column_stack([X[:, 0], 1e6 * X[:, 1]])
    for rule in ("adaptive", "unit", "weights"):
        with W.catch_warnings(record=True) as got:
            W.simplefilter("always")
            check_input_scale(Coin(), wide, rule)
        said = [str(w.message) for w in got if issubclass(w.category, DataScaleWarning)]
        assert said and A.scale_warned(said), rule
    with W.catch_warnings(record=True) as got:  # order-1 columns are fine; a tiny one is flagged alone
        W.simplefilter("always")
        check_input_scale(Coin(), 1e-5 * X, "unit")
    assert A.scale_warned([str(w.message) for w in got])
    assert not A.scale_warned(["SBSVM used its max_iter=5 steps"])


def test_page_warning_names_the_files_columns_and_the_pages_remedy():
    text = ("PlattSVM: column scales differ by a factor of 1.05e+06 (standard deviation 0.961 in column 1, "
            "1.01e+06 in column 3), and one scale serves all columns, so the widest decide alone. "
            "Standardise the features (sklearn.preprocessing.StandardScaler) before fitting.")
    said = A.page_warning(text, ["f0", "f1", "f2", "f3"])
    assert "in column 'f1', 1.01e+06 in column 'f3')" in said
    assert "StandardScaler" not in said and "tick **Standardise features**" in said
    assert said.startswith("column scales differ")  # the page names the method, not the class
    assert A.page_warning("holds column 1's effect", ["a", "b"]) == "holds b's effect"
    # a position past the names (not ours to translate) is left as it was
    assert A.page_warning("column 7 is odd", ["a"]) == "column 7 is odd"


def test_playground_map_lines_up_with_the_raw_canvas():
    """The canvas's map: the model (fitted on standardised rows) evaluated at the raw click points, its
    heatmap, hover and the truth's contours on the canvas's own grid, the method's points moved to raw
    coordinates, and no map trace that could take a click from the canvas's grid."""
    from dashboard.analysis import raw_map

    pg = PG.generate("ripley", 120, seed=2)
    data = prepare(pg.loaded(), standardize=True, seed=0, truth=pg.truth[0], truth_kw=pg.truth[1])
    est = METHODS["platt"].make({}, seed=0).fit(data.X_train, data.y_train)
    points = PG.click_grid(pg, 9)
    raw = raw_map(est, data, points)
    model_pts = (points - data.center) / data.scale  # the raw grid in the model's coordinates
    np.testing.assert_allclose(raw.proba, est.predict_proba(model_pts)[:, 1])
    np.testing.assert_allclose(raw.truth, GENERATORS["ripley"].proba(points))
    np.testing.assert_allclose(raw.overlay, est.support_vectors_ * data.scale + data.center)
    fig = figures.playground_figure(pg.X, pg.y, points, proba=raw.proba, truth=raw.truth,
                                    overlay=raw.overlay, overlay_name=raw.overlay_name)
    heat = fig.data[0]
    assert heat.type == "heatmap" and heat.hoverinfo == "skip"
    # row j of the heatmap is the j-th y of the grid, column i its i-th x (the click points' order)
    np.testing.assert_allclose(np.asarray(heat.z), raw.proba.reshape(9, 9))
    np.testing.assert_allclose(heat.x, points[:9, 0])
    np.testing.assert_allclose(heat.y, points[::9, 1])
    truth, half = [t for t in fig.data if t.type == "contour"]
    np.testing.assert_allclose(np.asarray(truth.z), raw.truth.reshape(9, 9))
    assert truth.hoverinfo == half.hoverinfo == "skip"
    (canvas,) = [t for t in fig.data if t.name == "canvas"]
    np.testing.assert_allclose(canvas.customdata, raw.proba)  # its hover reads the map
    (sv,) = [t for t in fig.data if t.name == "support vectors"]
    assert sv.hoverinfo == "skip"
    # only the canvas's grid and the data points take hover (and so clicks)
    takes = [t.name for t in fig.data if t.hoverinfo != "skip"]
    assert takes == ["canvas", "class 0", "class 1"], takes
    faded = figures.playground_figure(pg.X, pg.y, points, proba=raw.proba, faded=True)
    assert faded.data[0].opacity < 1
    assert figures.playground_figure(pg.X, pg.y, points).data[0].name == "canvas"  # no map: no heatmap


def test_live_chart_sends_a_figure_only_when_it_is_new(monkeypatch):
    """Between two new figures a live chart sends only its revision (the browser keeps the figure);
    a full page run (``full``) sends it again, since the chart is remounted."""
    from types import SimpleNamespace

    from dashboard import figures, livechart

    sent = []
    monkeypatch.setattr(livechart, "_component", lambda: (lambda **kw: sent.append(kw["data"])))
    monkeypatch.setattr(livechart, "st", SimpleNamespace(session_state={}))
    a, b = figures.empty_figure("a"), figures.empty_figure("b")
    for fig, full in ((a, False), (a, False), (a, True), (b, False), (b, False)):
        livechart.live_chart(fig, key="k", full=full)
    assert ["fig" in d for d in sent] == [True, False, True, True, False]
    assert [d["rev"] for d in sent] == [1, 1, 1, 2, 2]
    assert sent[3]["fig"] != sent[0]["fig"] and all(d["key"] == "k" for d in sent)


def test_light_live_map_leaves_out_contour_labels_and_point_rims():
    from dashboard.analysis import Grid

    g = Grid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 5))
    p = np.full(25, 0.5)
    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    for light in (False, True):
        fig = figures.proba_heatmap(g, p, X, y, (0, 1), truth=p, light=light).to_dict()
        contours = [t for t in fig["data"] if t["type"] == "contour"]
        points = [t for t in fig["data"] if t.get("mode") == "markers"]
        assert any(t["contours"]["showlabels"] for t in contours) is (not light)
        assert all(("line" in t["marker"]) is (not light) for t in points) and len(points) == 2


def test_live_charts_send_one_element_with_only_the_new_figures(monkeypatch):
    from types import SimpleNamespace

    from dashboard import figures, livechart

    sent = []
    monkeypatch.setattr(livechart, "_component", lambda: (lambda **kw: sent.append(kw)))
    monkeypatch.setattr(livechart, "st", SimpleNamespace(session_state={}))
    a, b = figures.empty_figure("a"), figures.empty_figure("b")
    livechart.live_charts([(a, "x"), (b, "y")], key="grid")
    livechart.live_charts([(a, "x"), (a, "y")], key="grid")
    assert [s["key"] for s in sent] == ["grid", "grid"]
    first, second = (s["data"]["charts"] for s in sent)
    assert [("fig" in c, c["rev"]) for c in first] == [(True, 1), (True, 1)]
    assert [("fig" in c, c["rev"]) for c in second] == [(False, 1), (True, 2)]


def test_a_metric_that_is_nan_in_every_record_is_not_plotted():
    """GibbsSVM records step_size as NaN (it has none): its statistics chart says so instead of showing
    an empty frame."""
    hist = [Progress(i, 0.1 * i, {"potential": 50.0 - i, "step_size": np.nan,
                                  "rhat": np.nan if i < 3 else 1.1}) for i in range(1, 6)]
    names = figures.metric_names(hist)
    assert "step_size" not in names and "rhat" in names and "potential" in names
    assert figures.split_metrics(names)["sampler"] == []


def test_the_objective_curve_marks_where_a_fit_moves_to_more_rows():
    """SeegerARD warm-starts on 500 rows, then refits on all 700: the free energy jumps up there. A dotted
    line and "700 rows" say it is a change of data, not a failure; fits that keep their rows get none.
    A long title note (many curves) goes on a line of its own instead of running off the chart."""
    hist = [Progress(i, 0.1 * i, {"free_energy": 130.0 - i if i < 8 else 190.0 - i,
                                  "rows": 500 if i < 8 else 700}) for i in range(12)]
    assert figures.row_changes(hist) == [(8.0, 700)]
    fig = figures.objective_curve(hist)
    assert [sh.x0 for sh in fig.layout.shapes] == [8.0]
    assert [a.text.strip() for a in fig.layout.annotations] == ["700 rows"]
    # the curve breaks there (one gap, between iterations 7 and 8) instead of joining the two fits
    x, y = np.asarray(fig.data[0].x, dtype=float), np.asarray(fig.data[0].y, dtype=float)
    assert np.isnan(y).sum() == 1 and x[np.isnan(y)][0] == 7.5 and len(x) == 13
    assert not figures.objective_curve(_history(10)).layout.shapes
    assert not np.isnan(np.asarray(figures.objective_curve(_history(10)).data[0].y, dtype=float)).any()
    many = figures.metric_curves(hist, [f"w[{j}]" for j in range(30)], "Hyperparameters")
    assert many.layout.title.text.startswith("Hyperparameters<br>") and "30 curves" in many.layout.title.text


def test_the_objective_curve_numbers_sbsvms_candidate_fits():
    """kernel="auto" fits its candidates one after another (the ELBO jumps between them), then stacks
    them: each new fit is marked and numbered, its name on hover; the records' stage is not a curve."""
    from bsvm import SBSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(120, random_state=0)
    est = SBSVM(random_state=0).fit(X, y)
    stages = [s["stage"] for s in est.stages_]
    assert len(stages) >= 3 and stages[1] == "one length scale per feature"
    fig = figures.objective_curve(est.history_, stages=est.stages_)
    # every candidate after the first, and the stacking; marks closer than 4 % of the axis share a label
    assert len(fig.layout.shapes) == len(stages)
    texts = [a.text.strip() for a in fig.layout.annotations]
    # the fits are numbered 2..len(stages) (the progress text counts len(stages) fits) and the stacking is
    # "stack", not one fit more
    assert texts[-1].endswith("stack")
    nums = [t.replace(", stack", "").replace("stack", "") for t in texts]
    shown = [k for t in nums if t for k in (range(int(t.split("-")[0]), int(t.split("-")[1]) + 1) if "-" in t
                                             else [int(t)])]
    assert shown == list(range(2, len(stages) + 1))
    hover = "<br>".join(a.hovertext for a in fig.layout.annotations).split("<br>")
    assert hover[0] == "2: one length scale per feature" and hover[-1] == "the candidates stacked"
    assert "candidate fit" in fig.layout.title.text
    # each candidate's ELBO is a curve of its own: a gap at every mark (they were joined into one line)
    assert np.isnan(np.asarray(fig.data[0].y, dtype=float)).sum() == len(stages)
    assert "stage" not in sum(figures.split_metrics(figures.metric_names(est.history_)).values(), [])
    # one kernel, one fit: no marks
    assert not figures.objective_curve(SBSVM(kernel="rbf", random_state=0).fit(X, y).history_).layout.shapes


def test_sampler_statistics_draw_the_stopping_rule_against_its_thresholds():
    """R-hat and ESS at each check, with the rule's thresholds dashed; the thresholds themselves are not
    panels (GibbsSVM's chart showed two constant lines); a sampler's own statistics come first."""
    def rec(i, **extra):
        return Progress(i, 0.1 * i, {"potential": 50.0, "rhat_target": 1.01, "ess_target": 400.0,
                                     "rhat": 1.2 - 0.01 * i, "ess_bulk": 30.0 * i, "ess_tail": 25.0 * i,
                                     "draws": 10.0 * i, "converged": 0.0, **extra}, {})

    gibbs = figures.sampler_statistics([rec(i) for i in range(1, 20)])
    axes = [gibbs.layout[a].title.text for a in ("yaxis", "yaxis2")]
    assert axes == ["R-hat", "bulk ESS"] and len(gibbs.data) == 2  # (figures.CURVE_LABELS)
    assert sorted((sh.yref, sh.y0) for sh in gibbs.layout.shapes) == [("y", 1.01), ("y2", 400.0)]
    hmc = figures.sampler_statistics([rec(i, step_size=0.3, acceptance=0.8) for i in range(1, 20)])
    assert [tr.name for tr in hmc.data] == ["step size", "acceptance", "R-hat", "bulk ESS"]
    assert sorted(sh.yref for sh in hmc.layout.shapes) == ["y3", "y4"]
    assert figures.sampler_statistics(_history(5)) is None  # a variational fit: none of these


def test_stack_summary_names_each_stacked_fit_with_its_weight():
    """The Train page's words for an S-BSVM kernel='auto' fit: every component of components_, largest
    weight first, the weights summing to 100 %, and how they were weighed; nothing for other models."""
    from bsvm import SBSVM, PlattSVM
    from bsvm.datasets import make_ripley

    Xr, yr = make_ripley(150, random_state=2)
    m = SBSVM(random_state=0).fit(Xr, yr)
    text = A.stack_summary(m)
    names = [c[0] for c in m.components_]
    assert text.startswith(f"The prediction mixes {len(names)} fits" if len(names) > 1 else
                           "The prediction uses one fit")
    listed = text.split(": ", 1)[1].split(" (weights by stacking")[0]
    assert listed == ", ".join(f"{A.STACK_NAMES[n]} {w:.0%}" for n, w, *_ in m.components_)
    assert [w for _, w, *_ in m.components_] == sorted((w for _, w, *_ in m.components_), reverse=True)
    shares = [int(v) for v in re.findall(r" (\d+)%", text)]
    assert len(shares) == len(names) and abs(sum(shares) - 100) <= len(names)
    assert m.defaults_["weighting"] in text
    # the candidates with no weight are named as such (the learning curves show them too)
    dropped = [A.STACK_NAMES[k[7:]] for k, w in m.defaults_.items()
               if k.startswith("weight.") and w == 0 and k != "weight.base_rate"]
    assert dropped and all(name in text.split("The other fits")[1] for name in dropped)
    # one candidate with all the weight: "uses one fit" (it said "mixes 1 fit")
    one = copy.copy(m)
    one.components_ = [(names[0], 1.0, *m.components_[0][2:])]
    assert A.stack_summary(one).startswith(f"The prediction uses one fit: {A.STACK_NAMES[names[0]]} 100%")
    assert A.stack_summary(SBSVM(kernel="rbf", random_state=0).fit(Xr, yr)) is None
    assert A.stack_summary(PlattSVM().fit(Xr, yr)) is None


def test_fit_note_says_when_a_straight_boundary_holds_a_fit_back():
    """A linear fit on XOR or moons gets a note naming the option that bends its boundary (the nearest-
    neighbour vote beats it out of fold); the same method with RBF features, or on data a line suits
    (Ripley), gets none; a fit that only predicts the majority class is called so."""
    import warnings

    from bsvm.datasets import make_moons, make_ripley, make_xor
    from bsvm.subgradient import SubgradientHMC

    Xx, yx = make_xor(200, random_state=0)
    Xm, ym = make_moons(200, random_state=0)
    Xr, yr = make_ripley(250, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: convergence is not the point here
        hmc = dict(n_samples=100, n_burnin=100, n_chains=2, random_state=0)
        note = A.fit_note(SubgradientHMC(**hmc).fit(Xx, yx, progress=False), Xx, yx)
        assert note is not None and "Features: nystroem or rff" in note and "Start again" in note
        acc, knn = (int(v) for v in re.findall(r"(\d+)%", note))
        assert knn - acc >= 8 and knn >= 85
        assert "Features" in A.fit_note(SubgradientHMC(**hmc).fit(Xm, ym, progress=False), Xm, ym)
        curved = SubgradientHMC(features="nystroem", **hmc).fit(Xx, yx, progress=False)
        assert A.fit_note(curved, Xx, yx) is None
        assert A.fit_note(SubgradientHMC(**hmc).fit(Xr, yr, progress=False), Xr, yr) is None
        note = A.fit_note(PlattSVM(kernel="linear").fit(Xx, yx), Xx, yx, retry="and run it again")
        assert "Kernel: rbf and run it again" in note
        assert A.fit_note(PlattSVM().fit(Xx, yx), Xx, yx) is None

    class Majority:  # predicts the most frequent class everywhere
        def predict(self, X):
            return np.zeros(len(X), int)

    y = np.r_[np.zeros(70, int), np.ones(30, int)]
    note = A.fit_note(Majority(), np.zeros((100, 2)), y)
    assert "right 70% of the time" in note and "most frequent class (70%)" in note


def test_the_bar_counts_the_current_fit_of_a_multi_fit_run():
    """S-BSVM's kernel="auto" fits its candidates one after another while the iteration count runs on:
    the Train page showed "iteration 1423 / 1000". The current fit's steps are counted from its first
    record; a run that announces one fit has no stages."""
    def recs(stages, planned=5):  # (iteration, stage) pairs
        return [Progress(it, 0.0, {"elbo": 0.0, "stage": float(s), "stages_planned": float(planned)})
                for it, s in stages]

    assert A.BarReading().update(recs([(10, 0), (20, 0)], planned=1)).staged(20) is None
    assert A.BarReading().update([Progress(5, 0.0, {"objective": 1.0})]).staged(1500) is None  # no stages
    assert A.BarReading().update(recs([(10, 0), (600, 0), (610, 1), (900, 1)])).staged(900) == (2, 290)

def test_remembered_model_answers_a_repeated_grid_from_memory(monkeypatch):
    """ui._Remembered: the same question (same model, same points) is computed once; another model or
    other points are computed afresh; every other attribute is the model's own."""
    from dashboard import ui

    monkeypatch.setattr(ui.st, "session_state", {})

    class Counting:
        classes_ = np.array([0, 1])

        def __init__(self):
            self.calls = 0

        def predict_proba(self, X):
            self.calls += 1
            p = 1.0 / (1.0 + np.exp(-X[:, 0]))
            return np.column_stack([1.0 - p, p])

    a, b = Counting(), Counting()
    X = np.random.default_rng(0).standard_normal((50, 2))
    P = ui._Remembered(a).predict_proba(X)
    np.testing.assert_array_equal(ui._Remembered(a).predict_proba(X.copy()), P)
    assert a.calls == 1
    ui._Remembered(a).predict_proba(X[:10])
    ui._Remembered(b).predict_proba(X)
    assert (a.calls, b.calls) == (2, 1)
    assert ui._Remembered(a).classes_ is a.classes_ and not hasattr(ui._Remembered(a), "predict_latent")


def test_png_export_gets_real_colours_not_streamlits_placeholders():
    """Inside the server Plotly's default template is Streamlit's, whose colours are placeholders that
    only st.plotly_chart's frontend fills in: exported as they were, every chain's line was black."""
    import plotly.io as pio

    from dashboard import livechart, ui

    before = pio.templates.default
    try:
        import streamlit.elements.lib.streamlit_plotly_theme  # noqa: F401 - registers Streamlit's template

        pio.templates.default = "streamlit"
        fig = figures.chain_traces(np.random.default_rng(0).normal(size=(4, 50, 2)), 0, None, "w")
        shown = fig.to_plotly_json()["layout"]["template"]["layout"]
        assert all(str(c).startswith("#0000") for c in shown["colorway"])  # placeholders: #000001 ...
        out = ui.for_export(fig).to_plotly_json()["layout"]
        assert list(out["template"]["layout"]["colorway"]) == livechart._COLOURS
        assert out["title"]["text"] == fig.layout.title.text and len(ui.for_export(fig).data) == 4
    finally:
        pio.templates.default = before


def test_draw_surfaces_evaluates_only_the_picked_draws_and_energy_needs_no_datatree():
    """The posterior-draws view evaluates its 30 picked draws only (every draw was evaluated, then 30
    kept): the same values as picking from predict_proba_draws; the energy plot reads ``energy_``."""
    import warnings

    from bsvm.subgradient import SubgradientHMC

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubgradientHMC(n_samples=40, n_burnin=40, random_state=0).fit(X, y, progress=False)
        sgld = SubgradientHMC("sgld", n_samples=20, n_burnin=20, random_state=0).fit(X, y, progress=False)
    grid = Grid(np.linspace(-2, 2, 6), np.linspace(-2, 2, 5))
    values, level = A.draw_surfaces(est, grid.points, n_draws=12, seed=1)
    full = est.predict_proba_draws(grid.points).reshape(-1, 30, 2)[:, :, 1]
    pick = np.sort(np.random.default_rng(1).choice(full.shape[0], 12, replace=False))
    np.testing.assert_allclose(values, full[pick], rtol=1e-12)
    assert level == 0.5
    np.testing.assert_array_equal(A.energy_of(est), est.to_arviz()["sample_stats"]["energy"].values)
    assert A.energy_of(sgld) is None and sgld.energy_ is None


def test_a_samplers_last_check_in_words_and_as_a_fraction():
    """The Train page's bar for a run that stops when its rule is met: the smaller of ESS over the ESS
    wanted and R-hat's share (never full before the end), both ESS and a four-decimal R-hat in words."""
    hist = [Progress(10, 0.1, {"log_posterior": -5.0}, {}),
            Progress(20, 0.2, {"ess_bulk": np.nan, "ess_tail": np.nan, "ess_target": 400.0}, {}),
            Progress(30, 0.3, {"ess_bulk": 405.0, "ess_tail": 343.0, "ess_target": 400.0, "rhat": 1.0104,
                               "rhat_target": 1.01}, {}),
            Progress(31, 0.31, {"log_posterior": -4.0}, {})]
    checked = A.last_check(hist)
    assert checked["ess_bulk"] == 405.0 and A.last_check(hist[:1]) is None
    assert A.check_fraction(checked) == pytest.approx(343 / 400)
    assert A.check_text(checked) == ("last check: ESS bulk 405 / tail 343, wanted 400; R-hat 1.0104, "
                                     "wanted <= 1.01")
    early = A.last_check(hist[:2])
    assert A.check_fraction(early) == 0.0 and A.check_text(early) == "no check of the stopping rule yet"
    # records without a check (before the first, or a fixed-length run's before its end) are told apart
    assert not A.check_made(early) and A.check_made(checked) and not A.check_made(None)
    assert A.check_fraction({"ess_bulk": 900.0, "ess_tail": 800.0, "ess_target": 400.0}) == 0.99
    # R-hat holds the run back: its share of the draws, (1.01 - 1) / (R-hat - 1), not a full bar
    held = {"ess_bulk": 793.0, "ess_tail": 1574.0, "ess_target": 400.0, "rhat": 1.0198, "rhat_target": 1.01}
    assert A.check_fraction(held) == pytest.approx(0.01 / 0.0198)
    assert A.check_fraction({**held, "rhat": np.nan}) == 0.99  # one chain: ESS alone
    # the bar never steps back: a later check with a higher R-hat leaves it at the best share so far
    worse = Progress(40, 0.4, {**held, "rhat": 1.05}, {})
    assert A.BarReading().update(hist[:1]).best is None and A.BarReading().update(hist[:2]).best == 0.0
    assert A.BarReading().update(hist + [worse]).best == pytest.approx(343 / 400)
    assert A.check_fraction(worse.metrics) == pytest.approx(0.2)  # what the last check alone says
    # a job's bar (Compare, Calibration, Diagnostics): iterations over a cap, else the checks, never back
    assert A.record_fraction(Progress(50, 0.5, {}, {}), 200) == 0.25
    # several fits: the finished ones count, not the iterations over max_iter
    staged = Progress(500, 0.5, {"stage": 2.0, "stages_planned": 5.0}, {})
    assert A.record_fraction(staged, 1000, 0.1) == pytest.approx(0.4)
    assert A.record_fraction(Progress(900, 0.9, {"stage": 5.0, "stages_planned": 5.0}, {}), 1000) == 0.99
    shown = 0.0
    for rec in hist + [worse]:
        shown = A.record_fraction(rec, None, shown)
    assert shown == pytest.approx(343 / 400)


def test_time_ranges_read_as_words():
    """Train's and Compare's estimates of runs to a stopping rule are ranges; one starting under a second
    says "up to" (it said "under a second to 2 seconds": a crawl)."""
    assert A.seconds_range(0.3, 2.0) == "up to 2 seconds"
    assert A.seconds_range(3.0, 19.0) == "3 to 19 seconds"
    assert A.seconds_range(0.2, 0.9) == "under a second"
    assert A.seconds_range(30.0, 150.0) == "30 seconds to 2 minutes"


def test_the_statistics_panel_is_chosen_alike_on_both_pages():
    """Train and Diagnostics draw the chart beside the objective with one rule: hyperparameters first (a
    SeegerARD fit records a step size too, and Diagnostics showed it as "Sampler statistics"), then the
    sampler's statistics, then other metrics, else a note."""
    hyper = [Progress(i, 0.1 * i, {"free_energy": -i, "w[x0]": 1.0 + i, "step_size": 0.5}) for i in range(5)]
    sampler = [Progress(i, 0.1 * i, {"acceptance": 0.8, "step_size": 0.1}) for i in range(5)]
    other = [Progress(i, 0.1 * i, {"foo": float(i)}) for i in range(5)]
    assert "Hyperparameters" in figures.statistics_panel(hyper, "variational", ["height"]).layout.title.text
    shown = figures.statistics_panel(sampler, "sampler").to_dict()
    assert shown == figures.sampler_statistics(sampler).to_dict()
    assert "Statistics" in figures.statistics_panel(other, "sampler").layout.title.text
    assert figures.is_placeholder(figures.statistics_panel([Progress(1, 0.1, {})], "baseline"))


def test_shade_best_marks_every_value_that_reads_as_the_best():
    import pandas as pd

    table = pd.DataFrame({"error": [0.1, 0.2, 0.1000001], "AUC": [0.91, 0.95, 0.9500004]})
    styled = table.style.apply(figures.shade_best, subset=["error", "AUC"], higher=("AUC",))
    ctx = styled._compute().ctx  # {(row, col): [(property, value)]}: the cells that got a style
    shaded = {(r, c) for (r, c), props in ctx.items() if props}
    assert shaded == {(0, 0), (2, 0), (1, 1), (2, 1)}
    assert figures.shade_best(pd.Series([np.nan, np.nan], name="error")) == ["", ""]


def test_a_single_map_is_exported_about_square_and_a_grid_of_maps_wide():
    """The Train page's map came out of the PNG download as a 1200 x 430 strip."""
    from dashboard import ui
    from dashboard.analysis import make_grid

    X = np.random.default_rng(0).normal(size=(50, 2))
    grid = make_grid(X, 10)
    one = figures.value_heatmap(grid, np.zeros(len(grid.points)), X, np.arange(50) % 2, [0, 1], title="t")
    h = int(one.layout.height)
    m = figures.MAP_MARGIN  # a square plot, its margins and its colour bar
    plot = h - m["t"] - m["b"]
    assert ui.export_width(one, h) == round(m["l"] + plot + ui.colourbar_px(one, plot))
    assert ui.export_width(figures.class_balance(np.array([0, 1]), [0, 1]), 300) == 1200
    maps = figures.heatmap_grid({"a": np.full(len(grid.points), 0.5), "b": np.full(len(grid.points), 0.4)},
                                grid, X, np.arange(50) % 2, [0, 1])
    # a grid of square maps: as wide as its maps fill their cells (at 1,200 px three maps of 205 px sat
    # in cells of 360 px: a crawl); each cell's plot then as wide as it is high
    H = int(maps.layout.height)
    w = ui.export_width(maps, H)
    lay, mm = maps.layout, maps.layout.margin
    plot_h = H - mm.t - mm.b - 40  # the legend row below the maps: 40 px, measured in chromium
    plot_w = w - mm.l - max(mm.r, ui.colourbar_px(maps, plot_h))
    for ax in ("", "2"):
        cell_w = (lay[f"xaxis{ax}"].domain[1] - lay[f"xaxis{ax}"].domain[0]) * plot_w
        cell_h = (lay[f"yaxis{ax}"].domain[1] - lay[f"yaxis{ax}"].domain[0]) * plot_h
        assert cell_w == pytest.approx(cell_h, abs=1.0)
    assert w < 1000
    five = figures.heatmap_grid({k: np.full(len(grid.points), 0.5) for k in "abcde"}, grid, X,
                                np.arange(50) % 2, [0, 1])  # the empty sixth cell's axes do not count
    assert ui.export_width(five, int(five.layout.height)) < 1200
    assert ui.export_width(figures.chain_traces(np.zeros((2, 10, 3)), 0), 300) == 1200
    assert ui.export_width(figures.empty_figure("nothing"), 300) == 1200


def test_every_probability_map_has_the_same_explicit_colours():
    """Maps built from plain dicts passed the colour scale's name to plotly.js, whose "RdBu" differs from
    plotly.py's (ColorBrewer): Compare's maps looked unlike Train's and Calibration's."""
    from bsvm.datasets import make_ripley
    from dashboard.analysis import make_grid

    X, y = make_ripley(60, random_state=0)
    grid = make_grid(X, 10)
    p = np.linspace(0, 1, len(grid.points))
    one = figures.proba_heatmap(grid, p, X, y, [0, 1]).to_plotly_json()["data"][0]["colorscale"]
    many = figures.heatmap_grid({"a": p}, grid, X, y, [0, 1]).to_plotly_json()["data"][0]["colorscale"]
    as_lists = [[list(map(str, c)) for c in s] for s in (one, many)]
    assert as_lists[0] == as_lists[1] and len(as_lists[0]) > 2 and not isinstance(one, str)


def test_too_few_rows_to_split_are_counted_in_words():
    """Three rows said "(class counts {0: 2, 1: 1})": a Python dict on the Data page."""
    from bsvm.data import load_csv

    loaded = load_csv(b"a,b,label\n1,2,0\n3,4,0\n5,6,1\n")
    with pytest.raises(ValueError, match=r"\(class 0: 2 rows, class 1: 1 row\)\.$"):
        prepare(loaded, None, True, 0.3, 0)
    # many classes: the rare ones first, 8 in all, and a count of the rest (800 filled 4,000 px, a crawl)
    rows = b"".join(b"%d,%d\n" % (i, i // 2 if i < 40 else 100 + i) for i in range(60))
    with pytest.raises(ValueError, match=r"\(class 140: 1 row, .*, and 32 more classes\)\. Is ") as err:
        prepare(load_csv(b"a,label\n" + rows), None, True, 0.3, 0)
    assert len(re.findall(r"class \d+: \d+ rows?\b", str(err.value))) == 8


def test_a_two_row_class_is_kept_whole_for_training_and_the_page_says_so():
    """The split accepted a two-row class (both rows to training) while the page's rule said three rows
    (a review): the rule is now two, the note says the test rows lack that class, and the option to leave
    out small classes drops only the one-row ones."""
    from bsvm.data import load_csv

    rng = np.random.default_rng(0)
    body = "".join(f"{a:.3f},{b:.3f},{'A' if i % 2 else 'B'}\n"
                   for i, (a, b) in enumerate(rng.normal(size=(30, 2))))
    loaded = load_csv(("x1,x2,label\n" + body + "0,0,C\n1,1,C\n").encode())
    prep = prepare(loaded, None, True, 0.3, 0)
    assert list(prep.y_train).count("C") == 2 and "C" not in list(prep.y_test)
    assert any("C has only 2 rows" in n and "none of it" in n for n in prep.notes), prep.notes
    loaded = load_csv(("x1,x2,label\n" + body + "0,0,C\n1,1,C\n2,2,D\n").encode())
    with pytest.raises(ValueError, match="class D: 1 row"):
        prepare(loaded, None, True, 0.3, 0)
    prep = prepare(loaded, None, True, 0.3, 0, drop_rare=True)
    assert list(prep.classes) == ["A", "B", "C"]
    assert any("Left out class D (1 row)" in n for n in prep.notes), prep.notes


def test_rhat_is_written_so_that_its_flag_can_be_read_from_it():
    """1.01004 showed as "1.0100" beside its flag "R-hat > 1.01"."""
    assert figures.rhat_text(1.0098) == "1.0098" and figures.rhat_text(1.0234) == "1.0234"
    assert figures.rhat_text(1.01004) == "1.010040" and figures.rhat_text(1.01) == "1.0100"


def test_a_minibatch_potential_is_named_as_one():
    """SGLD's per-draw potential is a minibatch estimate (its ESS 16,580 beside the rule's 2,577 on the
    full-data log posterior): named so on Diagnostics. Every sampler's potential U is shown as the log
    posterior -U, the name the stopping rule's table, the NetCDF (lp) and MS-BPM use ("potential" and
    "log_posterior" stood one above the other for the same quantity: a crawl)."""
    from types import SimpleNamespace

    from dashboard.analysis import chain_arrays

    S = np.zeros((2, 5, 3))
    U = np.arange(10.0).reshape(2, 5)
    for sampler, want in (("sgld", "log posterior (minibatch estimate)"), ("hmc", "log posterior")):
        model = SimpleNamespace(samples_=S, potential_=U, sampler=sampler)
        A, names, n_model = chain_arrays(model)
        assert names == [want] and n_model == 3
        np.testing.assert_array_equal(A[:, :, 0], -U)


def test_a_lone_check_is_drawn_as_a_marker():
    """A fixed-length run checks its rule once, at its end: that R-hat was one value among 30 records,
    drawn as a line of one point, i.e. nothing (a crawl saw empty R-hat and ESS panels)."""
    hist = [Progress(i, 0.1 * i, {"step_size": 0.5, "rhat": np.nan if i < 40 else 1.15,
                                  "ess_bulk": np.nan if i < 40 else 27.0, "rhat_target": 1.01,
                                  "ess_target": 400.0}, {}) for i in range(1, 41)]
    fig = figures.sampler_statistics(hist)
    modes = {t.name: t.mode for t in fig.data}
    assert modes["R-hat"] == modes["bulk ESS"] == "lines+markers" and modes["step size"] == "lines"


def test_stacked_panels_get_their_height():
    """Four stacked statistics get ``panel`` px each (a local variable named like the argument once
    overwrote it, and four panels were squeezed into 300 px)."""
    hist = [Progress(i, 0.1, {"step_size": 0.5, "acceptance": 0.8, "rhat": 1.02, "ess_bulk": 300.0,
                              "rhat_target": 1.01, "ess_target": 400.0}, {}) for i in range(1, 6)]
    assert figures.statistics_panel(hist, "sampler").layout.height == 4 * 110 + 90
    assert figures.statistics_panel(hist, "sampler", panel=70).layout.height == 4 * 70 + 90


def test_an_input_has_one_colour_in_every_chart_of_a_fit():
    # SeegerARD's w[temperature] was red in its hyperparameter chart and blue in its weight trace (the
    # charts coloured their lines by their own order)
    import warnings

    from bsvm import SeegerARD
    from bsvm.datasets import make_ripley

    X, y = make_ripley(120, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SeegerARD(max_iter=5)
        hist = list(est.fit_iter(X, y))
    names = ["temp", "hum"]
    hyper = figures.metric_curves(hist, figures.split_metrics(figures.metric_names(hist))["hyper"], "H",
                                  log_y=True, feature_names=names)
    trace = figures.named_snapshot_traces(hist, "w", est, names)
    colour = {t.name: t.line.color for t in hyper.data}
    assert {t.name: t.line.color for t in trace.data} == {n: colour[n] for n in ("w[temp]", "w[hum]")}
    assert len(set(colour.values())) == len(colour)  # C and v take colours no input uses
    # a legend's entries never share a colour: 11 inputs and one other curve (D3's ten colours repeated)
    assert len(figures.SERIES_COLOURS) > figures.MAX_LEGEND_ENTRIES
    traces = [{"name": f"w[x{i}]"} for i in range(11)] + [{"name": "C"}]
    figures._colour_by_input(traces, [*range(11), None])
    assert len({t["line"]["color"] for t in traces}) == 12
    assert not set(figures.OTHER_COLOURS) & set(figures.SERIES_COLOURS)
    # the other curves keep their colours when per-input curves come (S-BSVM's second candidate brings
    # its per-feature length scales: "variance" went from light blue to red mid-run, a teacher's crawl)
    before = [{"name": n} for n in ("length scale", "variance", "bias variance")]
    after = [{"name": n} for n in ("length scale", "variance", "bias variance", "length scale[x1]",
                                   "length scale[x2]")]
    figures._colour_by_input(before, [None] * 3)
    figures._colour_by_input(after, [None] * 3 + [0, 1])
    assert [t["line"]["color"] for t in before] == [t["line"]["color"] for t in after[:3]]


def test_one_step_gives_whole_iteration_ticks():
    """After one Step the charts hold one record: Plotly's automatic ticks split the unit (8, 8.5, 9)."""
    one = [Progress(9, 0.1, {"potential": 49.0, "step_size": 0.5, "rhat_target": 1.01}, {"w": np.ones(2)})]
    for fig in (figures.objective_curve(one), figures.statistics_panel(one, "sampler"),
                figures.snapshot_traces(one)):
        assert fig.layout.xaxis.dtick == 1, fig.layout.title.text
    assert figures.objective_curve(_history(50)).layout.xaxis.dtick is None  # long runs: automatic


def test_stacked_panel_titles_fit_their_panels():
    """MS-BPM on three classes: "training error (best chain)" is longer than its panel and ran into the
    title of the panel above; long titles go on two lines, with room made for them at the left."""
    hist = [Progress(i, 0.1, {"train_error": 0.03, "train_error_min": 0.01, "rhat_target": 1.01,
                              "ess_target": 400.0}, {}) for i in range(1, 30)]
    fig = figures.sampler_statistics(hist)
    titles = [fig.layout[a].title.text for a in ("yaxis", "yaxis2")]
    assert titles == ["training error", "training error<br>(best chain)"]
    assert all(len(line) <= figures.PANEL_TITLE_CHARS for t in titles for line in t.split("<br>"))
    assert fig.layout.yaxis2.automargin
    # the note on the title's second line fits a half-width chart (it was cut at "first che")
    note = fig.layout.title.text.split("<br>")[1]
    assert len(re.sub("<[^>]+>", "", note)) <= 42


def test_the_objectives_labels_sit_above_the_plot_and_apart():
    """S-BSVM's candidate labels ("2", "4-5, stack") sat on the ELBO curve and on each other, and
    "burn-in" beside the top y tick label: they go in a strip above the plot, and neighbours whose
    labels would meet share one."""
    from bsvm import SBSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(175, random_state=0)
    est = SBSVM(random_state=0).fit(X, y)
    fig = figures.objective_curve(est.history_, stages=est.stages_)
    notes = fig.layout.annotations
    assert notes and all(a.y == 1.0 and a.yanchor == "bottom" for a in notes)
    assert fig.layout.margin.t == figures.SUBTITLE_MARGIN["t"] + figures.LABEL_STRIP
    # each label's estimated extent, in iterations, is clear of the next one's
    groups = figures._label_groups(sorted(figures.stage_changes(est.history_, est.stages_)),
                                   float(est.history_[0].iteration),
                                   float(est.history_[-1].iteration - est.history_[0].iteration))
    assert all(a["hi"] <= b["lo"] for a, b in zip(groups, groups[1:]))
    assert [a.text for a in notes] == [g["text"] for g in groups]
    # the title's note fits a half-width chart in presentation mode at 1280 px (it was cut at "numbe")
    note = fig.layout.title.text.split("<br>")[1]
    assert "candidate" in note and len(re.sub("<[^>]+>", "", note)) <= 42
    # marks far apart keep their own labels
    far = figures._label_groups([(0.0, " 2", "2"), (50.0, " 3", "3"), (100.0, " stack", "s")], 0.0, 100.0)
    assert [g["text"].strip() for g in far] == ["2", "3", "stack"]
    close = figures._label_groups([(0.0, " 2", "2"), (5.0, " 3", "3"), (98.0, " stack", "s")], 0.0, 100.0)
    assert [g["text"].strip() for g in close] == ["2-3", "stack"]
    burn = [Progress(i * 10, 0.1, {"log_posterior": -240.0, "burnin": float(i < 15), "n_burnin": 150}, {})
            for i in range(1, 23)]
    label = figures.objective_curve(burn).layout.annotations[0]
    assert label.text == "burn-in" and label.yanchor == "bottom"


def test_maps_keep_a_square_plot():
    """A map as wide as its column was stretched to 3:1 (Calibration with one model, Compare at 1920 px,
    the PNG): the y axis is scaled to the x axis so the plot stays square, whatever the grid's ranges."""
    from dashboard import figures_posterior as figp

    grid = Grid(np.linspace(-2, 2, 20), np.linspace(-1, 5, 30))
    p = np.full(grid.points.shape[0], 0.5)
    P3 = np.tile([0.2, 0.3, 0.5], (grid.points.shape[0], 1))
    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    for fig in (figures.proba_heatmap(grid, p), figures.class_map(grid, P3),
                figures.value_heatmap(grid, p, title="u"), figp.draw_boundaries(grid, p[None], 0.5)):
        ya = fig.layout.yaxis
        assert ya.scaleanchor == "x" and ya.constrain == fig.layout.xaxis.constrain == "domain"
        assert ya.scaleratio == pytest.approx(4 / 6)  # x span / y span: equal lengths on screen
    grid_fig = figures.heatmap_grid({"a": p, "b": p, "c": p, "d": p}, grid, X, y, (0, 1))
    for k, ax in enumerate(["", "2", "3", "4"]):
        assert grid_fig.layout[f"yaxis{ax}"].scaleanchor == f"x{ax}", k


def test_presentation_mode_scales_every_chart_text():
    """Presentation mode enlarged the page's type and the charts' titles and ticks, but a title's note
    stayed at 12 px, and colour bars and contour labels at 10-12 px; the larger title ran into the plot."""
    from dashboard import ui

    grid = Grid(np.linspace(-2, 2, 20), np.linspace(-2, 2, 20))
    fig = figures.proba_heatmap(grid, np.full(400, 0.5), truth=np.full(400, 0.5), title="t")
    shown = ui._presentation_style(fig)
    assert shown.layout.title.font.size == 21 and shown.layout.xaxis.tickfont.size == 15
    assert shown.data[0].colorbar.tickfont.size == 15 and shown.data[2].contours.labelfont.size == 14
    assert shown.layout.margin.t == round(figures.MAP_MARGIN["t"] * ui.PRESENT_MARGIN)
    # a note's size is relative to its title's: it grows with it (no fixed px size left in titles)
    note = figures.sampler_statistics([Progress(i, 0.1, {"step_size": 0.5, "rhat_target": 1.01}, {})
                                       for i in range(1, 5)]).layout.title.text
    assert f"font-size:{figures.SUBTITLE_EM}em" in note and "px" not in note
    assert fig.layout.margin.t == figures.MAP_MARGIN["t"]  # the builder's figure is left as it was


def test_a_maps_png_has_its_title_off_the_edge_and_no_blank_band():
    """The PNG of a map: the title sat flush against the image's left edge, and room for a second legend
    row (kept on the page so maps side by side match) was a blank band under a one-row legend."""
    from dashboard import ui

    grid = Grid(np.linspace(-2, 2, 20), np.linspace(-2, 2, 20))
    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    one_row = ui.for_export(figures.proba_heatmap(grid, np.full(400, 0.5), X, y, (0, 1), title="t"))
    assert one_row.layout.title.pad.l > 0
    assert one_row.layout.margin.b < figures.MAP_MARGIN["b"]
    # (plot 250 px high, so ~430 px wide: four entries take two rows)
    two_rows = ui.for_export(figures.proba_heatmap(grid, np.full(400, 0.5), X, y, (0, 1), title="t",
                                                   truth=np.full(400, 0.5), overlay=X,
                                                   overlay_name="support vectors"))
    assert two_rows.layout.margin.b == figures.MAP_MARGIN["b"]


def test_a_map_is_as_wide_as_its_square_plot_and_the_colour_bar_it_has():
    """At 1920 px a class map (3+ classes, no colour bar) kept 90 px of white for a bar it does not have,
    a probability map 40 px beside its plot, and the entropy map's bar (its title on top) took 80 px more
    than kept, so its plot shrank below the probability map's; in presentation mode the larger type did
    not fit either. Widths measured in chromium: see ui.colourbar_px."""
    from dashboard import ui
    from dashboard.analysis import make_grid

    X = np.random.default_rng(0).normal(size=(60, 2))
    y = np.arange(60) % 3
    grid = make_grid(X, 10)
    n = len(grid.points)
    h, m = 430, figures.MAP_MARGIN
    plot = h - m["t"] - m["b"]
    three = figures.class_map(grid, np.full((n, 3), 1 / 3), X, y, [0, 1, 2])
    assert ui.colourbar_px(three, plot) == 0
    assert ui.export_width(three, h) == m["l"] + plot + m["r"]  # no room for a bar it does not have
    p = figures.proba_heatmap(grid, np.full(n, 0.5), X, y % 2, [0, 1])
    entropy = figures.value_heatmap(grid, np.zeros(n), X, y % 2, [0, 1], title="t",
                                    colorbar_title="predictive entropy", zmax=0.69)
    # a bar's title runs along it, so a long title does not widen it: the maps stacked on Calibration
    # are one width, with plots of one size
    assert entropy.data[0].colorbar.title.side == "right"
    assert ui.export_width(entropy, h) == ui.export_width(p, h)
    assert 75 <= ui.colourbar_px(p, plot) <= 95  # plotly.js took 78-92 px for these bars at 12 px type
    shown = ui._presentation_style(p)  # larger type: a wider bar and left margin, the plot still square
    assert ui.colourbar_px(shown, plot) > ui.colourbar_px(p, plot)
    assert shown.layout.margin.l == ui.PRESENT_MAP_LEFT
    assert ui.export_width(shown, h) > ui.export_width(p, h) - (shown.layout.margin.t - m["t"])


def test_a_class_maps_pale_cell_is_the_models_close_call():
    """The crawl's "stray pale patch" in the top-right corner of PlattSVM's 3-class map was the model: a
    pocket where the SVC's one-vs-one votes go round (a beats b, b beats c, c beats a), so its calibrated
    probabilities are close, e.g. (0.21, 0.41, 0.38). The map must show it so: the top class's colour at
    that confidence (pale), in that class's layer only, never a gap or another class's colour."""
    grid = Grid(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    P = np.array([[0.05, 0.9, 0.05], [0.21, 0.41, 0.38], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    fig = figures.class_map(grid, P, classes=["a", "b", "c"])
    z = [np.asarray(t.z, dtype=float).ravel() for t in fig.data if t.type == "heatmap"]
    assert len(z) == 3
    assert z[1][1] == pytest.approx(0.41) and np.isnan(z[0][1]) and np.isnan(z[2][1])
    assert all(np.isfinite(np.nansum([zk[i] for zk in z])) for i in range(4))  # every cell drawn once
    assert [int(np.isfinite(zk).sum()) for zk in z] == [1, 2, 1]
    # its opacity: near the pale end of the scale (1/K is fully pale, 1 fully coloured)
    lo, hi = fig.data[1].zmin, fig.data[1].zmax
    assert (0.41 - lo) / (hi - lo) < 0.15


def test_a_run_to_its_stopping_rule_is_estimated_as_a_range():
    """MS-BPM on 3 classes: the Train page said "about 6 s" and the run took 11-16 s (its sweeps to the
    stopping rule depend on how fast the posterior mixes). Such an estimate is a range with the reason;
    a fixed-length fit keeps its one number; presentation mode keeps the range and drops the brackets."""
    from bsvm.cost import SLOW_NOTE, Cost
    from dashboard.analysis import AUTO_LENGTH_RANGE, cost_caption

    auto = Cost(19.1e6, 6.48, "N^2 kernel", "", SLOW_NOTE)
    text = cost_caption(auto, 175)
    lo, hi = (round(f * 6.48) for f in AUTO_LENGTH_RANGE)
    assert f"{lo} to {hi} seconds" in text and "stopping rule" in text and "about 6 s" not in text
    assert hi >= 16  # the runs seen, 11 and 16 s, are inside it
    short = cost_caption(auto, 175, short=True)
    assert short == f"Estimated cost on 175 rows: about 19.1 MB and {lo} to {hi} seconds."
    fixed = cost_caption(Cost(1.5e5, 0.2, "libsvm"), 175)
    assert fixed == "Estimated cost on 175 rows: about 150.0 kB and under a second (libsvm)."


def test_sbsvm_mean_traces_are_named_after_inducing_points_across_candidate_fits():
    """S-BSVM's candidate fits keep different numbers of inducing points: with the newest record's 3 and
    earlier ones' 5, the legend read "inducing point 1, 2, 3, mean[3], mean[4]" (a crawl); every series
    is named after its inducing point."""
    hist = [Progress(i, 0.1, {}, {"mean": np.arange(5.0 if i < 6 else 3.0)}) for i in range(1, 10)]
    fig = figures.named_snapshot_traces(hist, "mean")
    assert [t.name for t in fig.data] == [f"inducing point {j}" for j in range(1, 6)]


def test_presentation_mode_drops_the_two_column_legend():
    """A half-width live chart's two legend columns (LEGEND_BELOW_2COL) hold 10 px names: at
    presentation mode's 16 px "inducing point 1" ran into the next column (a crawl at 1280 px), so
    livechart.js's presentLayout lets the entries wrap, one a line (the height it adds assumes that)."""
    from dashboard import livechart

    assert figures.LEGEND_BELOW_2COL["entrywidthmode"] == "fraction"
    js = livechart._JS[livechart._JS.index("function presentLayout"):]
    assert 'entrywidthmode === "fraction"' in js and "delete layout.legend.entrywidth;" in js


def test_too_few_rows_message_does_not_double_class():
    """Labels that already say "class" (class_a, class_b) are not named "class class_a" in the Data
    page's too-few-rows message (a crawl); other labels keep their "class " prefix."""
    import pandas as pd

    from bsvm.data import load_csv
    from dashboard.analysis import class_name, prepare

    assert class_name("class_0") == "class_0" and class_name(1) == "class 1"
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"f1": rng.normal(size=40), "f2": rng.normal(size=40),
                       "kind": ["class_a"] * 20 + ["class_b"] * 19 + ["class_c"]})
    with pytest.raises(ValueError) as err:
        prepare(load_csv(df.to_csv(index=False).encode(), label="kind"), None, True, 0.3, 0)
    text = str(err.value)
    assert "class_c has a single row" in text and "class_a: 20 rows" in text
    assert "class class" not in text


def test_a_staged_runs_bar_counts_the_fits_it_plans():
    """S-BSVM's kernel="auto" fits its candidates one after another: the bar showed the current fit's
    share (1 % -> 0 % from one fit to the next, then 100 %); it now counts finished fits over the fits
    the records announce (``stages_planned``), never full before the end."""
    def rec(it, stage, planned=5):
        return Progress(it, 0.1, {"elbo": -1.0, "stage": float(stage), "stages_planned": float(planned)}, {})

    def staged(records, iteration, max_iter):
        return A.BarReading().update(records).staged_fraction(iteration, max_iter)

    hist = [rec(10, 0), rec(20, 0), rec(30, 1), rec(40, 1)]
    assert staged(hist[:2], 20, 1000) == pytest.approx(0.01 / 5)  # (from its first record)
    assert staged(hist, 40, 1000) == pytest.approx((1 + 0.01) / 5)  # fit 2 began at 30
    shares = [staged(hist[:k], h.iteration, 1000) for k, h in enumerate(hist, 1)]
    assert shares == sorted(shares)
    assert staged([rec(90, 5)], 90, 1000) == 0.99  # the stacking record: not full yet
    assert staged([rec(10, 0, planned=1)], 10, 1000) is None  # one fit: iterations count
    assert staged(hist, 40, None) is None


def test_bar_reading_reads_new_records_only_and_survives_thinning():
    """The Train page's bar and text read a run's records incrementally (BarReading); the text took the
    last 200 records and said "fit 1 of 5" during a long second fit (a review)."""
    def rec(it, stage):
        return Progress(it, 0.1, {"elbo": -1.0, "stage": float(stage), "stages_planned": 5.0}, {})

    hist = [rec(i, 0) for i in range(0, 100, 10)] + [rec(100 + i, 1) for i in range(400)]
    reading = A.BarReading().update(hist[:50])
    assert reading.staged(140) == (2, 40) and reading.planned == 5
    reading.update(hist)  # 360 new records of fit 2: its start is kept, not the last 200's
    assert reading.staged(499) == (2, 399)
    assert reading.staged_fraction(499, 1000) == pytest.approx((1 + 0.399) / 5)
    # checks: the best share so far, also after the history was thinned (replaced by a shorter list)
    checks = [Progress(i, 0.1, {"ess_bulk": e, "ess_tail": e, "ess_target": 400.0}, {})
              for i, e in enumerate([100.0, 300.0, 200.0])]
    r2 = A.BarReading().update(checks)
    assert r2.best == pytest.approx(0.75)
    assert r2.update([checks[0], checks[2]]).best == pytest.approx(0.75)  # thinned: the best is kept
    assert A.BarReading().update([]).best is None


def test_objective_axis_leaves_out_the_first_steps_far_tail_and_says_so():
    """S-BSVM's ELBO climbs from -450 to -100 in its first steps: on an axis from -450 the rest, where
    convergence shows, was a flat line (a crawl). Like TensorBoard's "ignore outliers in chart scaling",
    the axis is cut at the 5 % quantile when the tail beyond is far, and the subtitle says how far."""
    rng = np.random.default_rng(0)
    v = -100 - 350 * np.exp(-np.arange(300) / 3.0) + rng.normal(0, 0.2, 300)
    fig = figures.objective_curve([Progress(i, 0.1, {"elbo": float(x)}, {}) for i, x in enumerate(v)])
    lo, hi = fig.layout.yaxis.range
    assert lo > -110 and hi >= v.max() and lo <= v[-1] <= hi  # the converged part fills the axis
    assert "outliers off the axis (to -450)" in fig.layout.title.text
    go_fig = __import__("plotly.graph_objects", fromlist=["Figure"]).Figure(fig.to_dict())  # valid
    assert go_fig.layout.yaxis.range == fig.layout.yaxis.range
    # a curve without a far tail keeps Plotly's autorange; a free energy's tail is cut at the top
    calm = figures.objective_curve([Progress(i, 0.1, {"elbo": -100 + 0.01 * i}, {}) for i in range(50)])
    assert calm.layout.yaxis.range is None and "outliers" not in calm.layout.title.text
    F = 40 + 300 * np.exp(-np.arange(100) / 2.0)
    rng_F = figures.focus_range(F)
    assert rng_F is not None and rng_F[2] and not rng_F[1] and rng_F[0][1] < 100
    assert figures.focus_range(F[:10]) is None  # too few values to tell a tail


def test_a_multiclass_model_map_puts_its_reading_hint_on_a_second_line():
    """"MS-BPM: class (opacity = confidence)" ran under the chart's mode bar at 1280 px (a crawl): the
    title is "<name>: predicted class", the hint a subtitle, with the subtitle's top margin."""
    from types import SimpleNamespace

    grid = Grid(np.linspace(0, 1, 4), np.linspace(0, 1, 2))
    P = np.array([[0.8, 0.1, 0.1], [0.4, 0.3, 0.3], [0.1, 0.9, 0.0], [0.2, 0.2, 0.6]] * 2)
    model = SimpleNamespace(predict_proba=lambda Z: P[:len(Z)])
    data = SimpleNamespace(axis_names=["x1", "x2"], classes=["a", "b", "c"], X_train=np.zeros((3, 2)),
                           y_train=np.array(["a", "b", "c"]), feature_names=["x1", "x2"])
    fig = figures.model_map(model, data, grid, "MS-BPM")
    assert fig.layout.title.text.startswith("MS-BPM: predicted class<br>")
    assert "opacity = confidence" in fig.layout.title.text
    assert fig.layout.margin.t == figures.SUBTITLE_MARGIN["t"]


def test_an_objectives_notes_each_take_a_line():
    """Joined on one line, "dotted: next candidate fit (hover number); outliers off the axis (to -450)" ran
    off a half-width chart at 1280 px: each note is a line of its own, and the top margin grows by one
    line for the second."""
    rng = np.random.default_rng(0)
    v = -100 - 350 * np.exp(-np.arange(300) / 3.0) + rng.normal(0, 0.2, 300)
    hist = [Progress(i, 0.1, {"elbo": float(x), "stage": float(i >= 200), "stages_planned": 2.0}, {})
            for i, x in enumerate(v)]
    fig = figures.objective_curve(hist)
    text = fig.layout.title.text
    assert text.count("<br><span") == 2 and "dotted: next candidate fit" in text and "outliers off" in text
    one = figures.objective_curve([Progress(i, 0.1, {"elbo": float(x)}, {}) for i, x in enumerate(v)])
    assert one.layout.title.text.count("<br><span") == 1
    assert fig.layout.margin.t - one.layout.margin.t >= figures.NOTE_LINE


def test_the_stopping_rules_quantities_are_named_as_the_page_names_them():
    """The rule's table said "log_posterior" and "theta[3]" where the table below said "potential" and
    "w[x3]"; with three classes "p(y|x[12])" did not say which class (a crawl)."""
    names = figures.rule_quantity_names(["log_posterior", "p(y|x[12])", "theta[0]", "theta[2]", "theta[9]",
                                         "other"], ["w[x1]", "w[x2]", "b"])
    assert names == ["log posterior", "p(y[12] | x[12])", "w[x1]", "b", "theta[9]", "other"]


def test_the_diagnostics_table_agrees_with_bsvm_diagnostics_summary():
    """The page's sd divided by n, bsvm.diagnostics.summary (and arviz-stats) by n - 1: 0.1783 against
    0.178381 in the fourth digit the page prints (a crawl). Every shared column now agrees."""
    from bsvm import diagnostics as D

    S = np.random.default_rng(0).normal(size=(4, 50, 3)) * [1.0, 2.0, 0.5]
    t = figures.diagnostics_table(S, ["a", "b", "c"]).loc[["a", "b", "c"]]
    ref = D.summary(S)
    np.testing.assert_allclose(t["sd"], ref["sd"], rtol=1e-12)
    np.testing.assert_allclose(t["mean"], ref["mean"], rtol=1e-12)
    np.testing.assert_allclose(t["tail-ESS"], ref["ess_tail"], rtol=1e-12)
    np.testing.assert_allclose(t["R-hat"], ref["r_hat"], rtol=1e-12)


def test_to_arviz_with_the_training_rows_gives_the_pointwise_log_likelihood():
    """log_likelihood y (chain, draw, row) = log p(observed class | x_i, draw) from predict_proba_draws,
    for the subgradient samplers and MS-BPM; a size past MAX_LOG_LIKELIHOOD or other rows are refused
    before any work; MS-BPM's summed likelihood no longer takes ArviZ's group name in sample_stats."""
    import warnings

    from bsvm import MSBPM, draws
    from bsvm.subgradient import SubgradientHMC

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = np.array(["no", "yes"])[(X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hmc = SubgradientHMC(n_samples=20, n_burnin=20, random_state=0).fit(X, y, progress=False)
        bpm = MSBPM(n_samples=20, random_state=0).fit(X, y)
    for est in (hmc, bpm):
        tree = est.to_arviz(X)
        ll = tree["log_likelihood"]["y"].values
        P = est.predict_proba_draws(X)
        obs = np.searchsorted(est.classes_, y)
        np.testing.assert_allclose(np.exp(ll), np.take_along_axis(P, obs[None, None, :, None], -1)[..., 0])
        assert ll.shape == est.samples_.shape[:2] + (60,) and np.isfinite(ll).all()
        np.testing.assert_array_equal(tree["constant_data"]["X"].values, X)
        with pytest.raises(ValueError, match="X has 59 rows but the fit had 60|not the training rows"):
            est.to_arviz(X[:59])
    # other rows of the same count: MS-BPM keeps its rows and compares them; the subgradient samplers keep a
    # fingerprint (they took any 60 rows and scored them against the training labels, a review)
    for est in (hmc, bpm):
        with pytest.raises(ValueError, match="not the training rows"):
            est.to_arviz(X[::-1])
        with pytest.raises(ValueError, match="not the training rows"):
            est.to_arviz(X + 1e-9)
    tree = bpm.to_arviz()
    assert "log_likelihood_sum" in tree["sample_stats"] and tree.attrs["anchor_class"] == "no"
    old = draws.MAX_LOG_LIKELIHOOD
    try:
        draws.MAX_LOG_LIKELIHOOD = 10
        with pytest.raises(ValueError, match=r"class probabilities, 9,600 numbers .* without X"):
            hmc.to_arviz(X)
    finally:
        draws.MAX_LOG_LIKELIHOOD = old


def test_a_live_grid_row_is_evened_out_except_for_maps():
    """The U chart beside the sampler's stacked statistics left ~280 px blank under it (a crawl): a row's
    charts take its tallest height; a map keeps its own (its plot is held square)."""
    import plotly.graph_objects as go

    from dashboard.livechart import _even_rows

    short, tall = go.Figure(layout={"height": 300}), go.Figure(layout={"height": 520})
    square = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]), layout={"height": 430, "yaxis": {"scaleanchor": "x"}})
    trace = go.Figure(layout={"height": 250})
    _even_rows([short, tall, trace, square], 2)
    assert (short.layout.height, tall.layout.height) == (520, 520)
    assert (trace.layout.height, square.layout.height) == (430, 430)
    lone = go.Figure(layout={"height": 200})
    _even_rows([lone], 2)
    assert lone.layout.height == 200


def test_a_netcdf_of_votes_leaves_the_log_likelihood_out_and_says_why():
    """MS-BPM without the soft-margin nugget predicts 0/1 votes per draw: a draw that misclassifies a row
    gives log 0, and arviz_stats.loo failed on the file ("All tail values are the same", a review)."""
    pytest.importorskip("h5netcdf")
    import tempfile
    import warnings

    import xarray as xr

    from bsvm import MSBPM

    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MSBPM(nugget=0.0, n_samples=20, random_state=0).fit(X, y)
    assert not np.isfinite(est.to_arviz(X)["log_likelihood"]["y"].values).all()  # the library's: as is
    with tempfile.NamedTemporaryFile(suffix=".nc") as fh:
        fh.write(A.draws_netcdf(est, None, X=X))
        fh.flush()
        tree = xr.open_datatree(fh.name, engine="h5netcdf")
        assert "log_likelihood" not in tree.children and "constant_data" in tree.children
        assert "probability 0" in tree.attrs["note"]


def test_presentation_mode_grows_a_static_chart_by_its_legend_lines():
    """As the live charts' presentLayout: Diagnostics' trace of six series kept its 300 px in presentation
    mode, and the legend's lines at 16 px left the plot 45 px high (a crawl). A map keeps its height."""
    import plotly.graph_objects as go

    from dashboard import ui

    f = go.Figure([go.Scatter(y=[1, 2], name=f"chain {i}") for i in range(6)],
                  layout={"height": 300, "legend": figures.LEGEND_BELOW_2COL})
    g = ui._presentation_style(f)
    assert g.layout.height == 300 + 4 * ui.LEGEND_LINE_PX and f.layout.height == 300  # a copy
    assert g.layout.legend.entrywidthmode is None  # one entry per line
    right = go.Figure([go.Scatter(y=[1], name=f"s{i}") for i in range(3)],
                      layout={"height": 300, "legend": {"orientation": "v"}})
    assert ui._presentation_style(right).layout.legend.orientation == "h"
    square = go.Figure([go.Heatmap(z=[[0, 1], [1, 0]]), *[go.Scatter(y=[0], name=f"c{i}") for i in range(4)]],
                       layout={"height": 430, "yaxis": {"scaleanchor": "x"}, "legend": figures.LEGEND_BELOW})
    assert ui._presentation_style(square).layout.height == 430


def test_sbsvm_traces_say_how_many_inducing_points_and_mark_each_candidate_fit():
    """S-BSVM's "Trace: q(u) mean" drew 5 lines without saying they are 5 of its inducing points, and its
    jumps back at each candidate fit had no mark while the objective above had dotted lines (a crawl)."""
    import warnings

    from bsvm import SBSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(150, random_state=0)
    est = SBSVM(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hist = list(est.fit_iter(X, y))
    fig = figures.named_snapshot_traces(hist, "mean", est)
    m = est.mean_.shape[0]
    # (the count on the note's line: on the title's it was cut at "inducing poi" at 1280 px, a crawl)
    assert fig.layout.title.text.startswith("Trace: q(u) mean<br>")
    assert f"at 5 of its {m} inducing points" in fig.layout.title.text
    assert "dotted: next candidate fit" in fig.layout.title.text
    assert len(fig.layout.shapes) == len(figures.stage_changes(hist, est.stages_)) > 0


def test_a_row_added_at_the_end_moves_at_most_two_rows_of_the_split():
    """The playground's click adds a row at the end: a per-class permutation reshuffled the split (9 of
    60 test rows moved, a teacher's crawl), so the refit's change was not the click's alone. Now only
    the new row and the rows that the classes' test quotas (one more test row in all) move change sides,
    at most four; the split stays stratified and seeded."""
    from dashboard.analysis import stratified_split

    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    train, test = stratified_split(y, 60, 0)
    assert len(test) == 60 and len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == 200
    for label in (0, 1):
        y2 = np.append(y, label)
        _, test2 = stratified_split(y2, 61, 0)
        assert len(set(test) ^ set(test2)) <= 4
    np.testing.assert_array_equal(stratified_split(y, 60, 0)[1], test)
    assert not np.array_equal(stratified_split(y, 60, 1)[1], test)
    share = np.bincount(y[test]) / 60
    np.testing.assert_allclose(share, np.bincount(y) / 200, atol=1 / 60)


def test_placeholders_and_server_ranged_curves_do_not_share_a_uirevision_with_autoranged_ones():
    """Plotly keeps an axis's state across redraws of one uirevision: the placeholder's empty axes
    ([-1, 4], autorange off) were kept into a later run's learning curve, which showed no curve (a
    teacher's crawl; in chromium: 2 of 6 three-run sequences before, none of 6 after). The placeholder,
    a curve whose y range the server cuts, and an autoranged curve each have their own uirevision."""
    hist = [Progress(i, 0.01 * i, {"elbo": -500.0 + 40 * np.sqrt(i)}, {}) for i in range(1, 60)]
    spiky = [Progress(i, 0.01 * i, {"elbo": (-5000.0 if i < 3 else -100.0 + np.sqrt(i))}, {})
             for i in range(1, 60)]
    auto, ranged = figures.objective_curve(hist), figures.objective_curve(spiky)
    empty = figures.objective_curve([])
    assert auto.layout.yaxis.range is None and ranged.layout.yaxis.range is not None
    revisions = {auto.layout.uirevision, ranged.layout.uirevision, empty.layout.uirevision}
    assert len(revisions) == 3


def test_candidate_marks_mid_run_do_not_call_a_new_fit_the_stack():
    """During a run ``stages_`` holds only the fits already finished: the mark of each new fit read
    "stack" (a teacher's crawl). The records' ``stages_planned`` says which stage is the stacking; the
    marks of the finished run are unchanged."""
    import warnings

    from bsvm import SBSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(175, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SBSVM(random_state=0).fit(X, y)
    hist = est.history_
    whole = figures.stage_changes(hist, est.stages_)
    assert [m[1] for m in whole][-1] == " stack" and sum(m[1] == " stack" for m in whole) == 1
    cut = next(i for i, r in enumerate(hist) if r.metrics.get("stage") == 2) + 3
    mid = figures.stage_changes(hist[:cut], est.stages_[:2])  # as the live view sees it in fit 3
    assert [m[1] for m in mid] == [" 2", " 3"]
    assert mid[0][2] == whole[0][2]  # a finished fit keeps its name


def test_a_halted_jobs_toast_reads_as_a_sentence():
    from dashboard.state import stopped_text

    assert stopped_text("Fitting S-BSVM", "the data changed") == "Fitting S-BSVM: stopped, the data changed."
    assert stopped_text("SGLD (subgradient MCMC)", "you left the Train page") == \
        "Stopped SGLD (subgradient MCMC): you left the Train page."


def test_thousands_of_support_vectors_are_thinned_on_a_map():
    """7,871 support vectors of 20,000 rows buried the Calibration page's two-feature map (a crawl)."""
    sv = np.random.default_rng(0).normal(size=(7871, 2))
    tr = figures._overlay_trace(sv, "support vectors")
    assert len(tr["x"]) == figures.MAX_OVERLAY and tr["name"] == "support vectors (300 of 7,871)"
    assert len(figures._overlay_trace(sv[:50], "support vectors")["x"]) == 50


def test_the_calibration_verdict_pairs_the_rows_and_knows_its_noise():
    """The Calibration page left a user to judge ECE 0.0090 against 0.0228 with no verdict (a crawl): the
    per-row Brier and log-loss differences, with a normal interval, against the library's own metrics."""
    from bsvm.metrics import brier_score, log_loss

    rng = np.random.default_rng(0)
    n = 4000
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(int)
    good = {"proba": np.column_stack([1 - p, p]), "y_index": y}
    worse = {"proba": np.column_stack([1 - p ** 0.5, p ** 0.5]), "y_index": y}
    d = A.paired_comparison(good, worse)
    assert d["Brier"][0] == pytest.approx(brier_score(y, good["proba"]) - brier_score(y, worse["proba"]))
    assert d["log loss"][0] == pytest.approx(log_loss(y, good["proba"]) - log_loss(y, worse["proba"]))
    said = A.comparison_sentence("S-BSVM", "PlattSVM", d, n)
    assert "S-BSVM is better calibrated than PlattSVM on both" in said
    noise = {"Brier": (0.001, -0.002, 0.004), "log loss": (-0.003, -0.01, 0.004)}
    said = A.comparison_sentence("a", "b", noise, 100)
    assert "no difference beyond the noise of 100 test rows" in said and "Brier: within noise" in said
    one = {"Brier": (-0.0068, -0.0164, 0.0028), "log loss": (-0.0431, -0.0799, -0.0063)}  # (Ripley, 75 rows)
    assert "a is better calibrated than b by its log loss (the other score is within noise)" in \
        A.comparison_sentence("a", "b", one, 75)
    split = {"Brier": (-0.004, -0.006, -0.002), "log loss": (0.01, 0.004, 0.016)}
    said = A.comparison_sentence("a", "b", split, 100)
    assert "the two scores disagree" in said
    assert "Brier: a lower by 0.0040 (95 % interval 0.0020 to 0.0060)" in said
    # 9 test rows: the numbers, signed, and no verdict (a crawl saw "better calibrated" on 9 rows)
    said = A.comparison_sentence("a", "b", split, 9)
    assert "too few for a verdict" in said and "better" not in said and "disagree" not in said
    assert "Brier: a minus b -0.0040 (95 % interval -0.0060 to -0.0020)" in said


def test_the_split_download_names_the_files_rows():
    """Download the split (Data page): each row's number among the file's data rows, its part and its
    label; rows dropped for missing values leave gaps; the test rows are those the pages measure on (the
    split could not be reproduced with scikit-learn's train_test_split, a crawl)."""
    from bsvm.data import load_csv

    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                          "outcome": np.where(rng.uniform(size=n) < 0.4, "yes", "no")})
    frame.loc[[3, 17], "a"] = np.nan
    loaded = load_csv(frame.to_csv(index=False).encode(), label="outcome", dropna=True)
    data = A.prepare(loaded, standardize=False, test_size=0.3, seed=1)
    table = pd.read_csv(io.BytesIO(A.split_csv(data)))
    assert list(table.columns) == ["row", "set", "outcome"] and len(table) == n - 2
    assert not set(table["row"]) & {4, 18} and table["row"].is_monotonic_increasing  # (1-based)
    test = table[table["set"] == "test"]
    assert len(test) == len(data.y_test)
    # the file's own values at those rows are the split's test rows (as standardize=False keeps them)
    file_a = frame.loc[test["row"] - 1, "a"].to_numpy()
    np.testing.assert_allclose(np.sort(file_a), np.sort(data.X_test[:, 0]))
    assert (frame.loc[table["row"] - 1, "outcome"].to_numpy() == table["outcome"].to_numpy()).all()
    # blank lines in the file count as rows, as a spreadsheet numbers them (pandas skips them, and the
    # numbers after each one were one short, a review); a label called "set" keeps the part column
    lines = frame.to_csv(index=False).splitlines()
    blank = "\n".join(lines[:6] + ["", ""] + lines[6:30] + [""] + lines[30:]) + "\n"
    data = A.prepare(load_csv(blank.encode(), label="outcome", dropna=True), standardize=False,
                     test_size=0.3, seed=1)
    table = pd.read_csv(io.BytesIO(A.split_csv(data)))
    file_lines = blank.splitlines()[1:]  # the lines under the header, row 1 first
    for r, label in zip(table["row"], table["outcome"]):
        assert file_lines[r - 1].rsplit(",", 1)[1] == label
    assert {6, 7, 32} & set(table["row"]) == set()  # the blank lines' numbers
    renamed = A.prepare(load_csv(frame.rename(columns={"outcome": "set"}).to_csv(index=False).encode(),
                                 label="set", dropna=True), standardize=False, test_size=0.3, seed=1)
    cols = list(pd.read_csv(io.BytesIO(A.split_csv(renamed))).columns)
    assert cols == ["row", "set", "set (label)"]


def test_the_baseline_sentence_and_the_settings_note():
    """The Train page's baseline (a crawl read 0.983 as a result beside a 0.980 baseline), with ties said
    (iris's 35/35/35, a review); Compare's settings note says "library defaults" for the defaults (the
    page's None for "auto" read "automatic (library automatic)", a review)."""
    y_tr, y_te = np.array(["ok"] * 98 + ["fault"] * 2), np.array(["ok"] * 49 + ["fault"])
    assert A.baseline_sentence(y_tr, y_te) == ("Always predicting class ok, the most frequent class, would "
                                               "score 0.980 on the test rows.")
    tied = A.baseline_sentence(np.repeat(["a", "b", "c"], 35), np.repeat(["a", "b", "c"], 15))
    assert "one of the 3 equally frequent classes" in tied and "0.333" in tied
    assert A.baseline_sentence(y_tr, y_te[:0]) == ""
    for m in METHODS.values():
        assert m.options_note(m.defaults()) == "library defaults", m.key
        if m.fast and m.fast_note():
            assert "automatic (library automatic)" not in m.options_note({**m.defaults(), **m.fast})


def test_presentation_mode_makes_room_for_the_label_strip():
    """A chart with labels in a strip above its plot (the candidate fits' numbers) is 40 px taller at the
    top in presentation mode, in the PNGs and Diagnostics (ui) as in the live charts (livechart.js): its
    labels met the title's notes (a crawl, then a review of the first fix, made in the browser only)."""
    from dashboard import ui

    hist = [Progress(i, 0.1, {"elbo": -100.0 + i, "stage": float(i >= 5)}, {}) for i in range(10)]
    marked = figures.objective_curve(hist, stages=[{"stage": "a"}, {"stage": "b"}])
    plain = figures.objective_curve(hist[:5])
    grown = ui._presentation_style(copy.deepcopy(marked))
    assert grown.layout.margin.t == round(marked.layout.margin.t * ui.PRESENT_MARGIN) + ui.PRESENT_STRIP
    assert grown.layout.height == (marked.layout.height or 320) + ui.PRESENT_STRIP
    same = ui._presentation_style(copy.deepcopy(plain))
    assert same.layout.margin.t == round(plain.layout.margin.t * ui.PRESENT_MARGIN)


def test_many_hyperparameter_curves_share_one_legend_entry_per_input_and_sizes_are_said():
    """S-BSVM on 8 features: 11 curves had 11 legend rows under a plot 60 px high (a crawl); the length
    scales per feature share one entry and keep their names on hover. And a big draws download says its
    size on the button, close to the file's."""
    names = ["lengthscale", "variance", "bias_variance"] + [f"lengthscales[{j}]" for j in range(8)]
    hist = [Progress(i, 0.1, {n: 1.0 + 0.1 * i + k for k, n in enumerate(names)}, {}) for i in range(5)]
    fig = figures.metric_curves(hist, names, "Hyperparameters", log_y=True,
                                feature_names=[f"sensor_{j}" for j in range(8)])
    shown = [t for t in fig.data if t.showlegend is not False]
    assert len(shown) == 4 and shown[-1].name.endswith("per feature (8: hover)")
    grouped = [t for t in fig.data if t.legendgroup == "inputs"]
    assert len(grouped) == 8 and all("sensor_" in t.hovertemplate for t in grouped)
    few = figures.metric_curves(hist, names[:5], "Hyperparameters", log_y=True)
    assert all(t.showlegend is not False for t in few.data)  # (5 curves: each its own entry)
    S = np.random.default_rng(0).normal(size=(4, 2000, 151))
    said = A.download_size(S, "csv")
    size = float(re.search(r"~([\d.]+) MB", said).group(1)) * 1e6
    assert 0.8 < size / len(A.draws_csv(S, [f"q{j}" for j in range(151)])) < 1.25
    assert A.download_size(S[:, :10], "csv") == ""


def test_overlaid_histograms_draw_the_second_as_an_outline():
    """Two filled translucent histograms blend to a third colour where they overlap (grey from green
    over purple, which the legend did not explain: a teacher's crawl): the first is filled, the others are
    outlines in their own colours, in every overlaid histogram of the dashboard."""
    from dashboard import figures_posterior as figp

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 200, 3)), rng.normal(0.3, 1, size=(2, 200, 3))
    E = rng.normal(size=(2, 200)).cumsum(axis=1)
    for fig in (figures.draws_overlay(a, b, 0), figures.proba_histograms({"A": rng.random(50),
                                                                           "B": rng.random(50)}),
                figp.energy_plot(E, np.array([0.8, 0.9]))):
        first, second = fig.data[0], fig.data[1]
        assert first.marker.color != "rgba(0,0,0,0)" and first.opacity < 1
        assert second.marker.color == "rgba(0,0,0,0)" and second.marker.line.width >= 1.5
        assert second.marker.line.color not in (None, "rgba(0,0,0,0)")
