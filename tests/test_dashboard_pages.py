"""Dashboard content through Streamlit's AppTest (no browser): what the pages draw and compare.

Each test here closes a hole of issue 15: it fails when the named change is made (checked by making the
change, watching the test fail, and reverting):

- the Calibration page comparing the model with itself;
- the method registry hiding a method that fails to import;
- the true-p(y|x) contours never drawn (and drawn on axes they do not describe).
"""

import base64
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _apptest import _app, _ok  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from bsvm.datasets import ripley_proba  # noqa: E402
from bsvm.metrics import classification_report  # noqa: E402
from dashboard import figures  # noqa: E402
from dashboard import methods as M  # noqa: E402
from dashboard.runner import Run  # noqa: E402


def _until(cond, at: AppTest, timeout: float = 90.0) -> None:
    t_end = time.perf_counter() + timeout
    while not cond():
        assert time.perf_counter() < t_end, "condition not reached in time"
        time.sleep(0.05)
        at.run()


def _figures(at: AppTest) -> list[dict]:
    """The Plotly figures the page drew, as plotly JSON dicts."""
    out = []
    for el in at.get("plotly_chart"):
        spec = getattr(el.proto, "spec", "") or getattr(el.proto, "figure", None)
        spec = spec if isinstance(spec, str) else getattr(spec, "spec", "")
        if spec:
            out.append(json.loads(spec))
    return out


def _arr(v) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {"dtype", "bdata"(, "shape")} (base64)."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(k) for k in str(shape).split(",")])
        return a.astype(float)
    return np.asarray(v, dtype=float)


def _with_trained_model(at: AppTest, est, method: str, label: str) -> None:
    """Put a model fitted outside the app where the Train page leaves its run."""
    data = at.session_state["data"]
    meta = {"method": method, "label": label, "options": {}, "data_key": data.key}
    at.session_state["run"] = Run.from_fitted(est, label=label, meta=meta)
    at.session_state["run_meta"] = meta


def _calibration(sample: str, **query):
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample=sample, method="sbsvm", **query)
    _ok(at)
    data = at.session_state["data"]
    est = M.METHODS["sbsvm"].make({"n_inducing": 15, "max_iter": 40}, seed=0).fit(data.X_train, data.y_train)
    _with_trained_model(at, est, "sbsvm", "S-BSVM")
    at.switch_page("views/calibration.py").run()
    _until(lambda: len(at.dataframe) and len(at.dataframe[0].value) == 2, at)
    _ok(at)
    return at, data, est


def test_calibration_page_compares_the_trained_model_with_a_separately_fitted_plattsvm():
    at, data, est = _calibration("moons.csv")
    table = at.dataframe[0].value
    assert list(table.index) == ["S-BSVM", "PlattSVM"]
    y_idx = data.index(data.y_test)
    platt = M.METHODS["platt"].make({}, seed=int(at.session_state["cfg"]["seed"]))
    platt.fit(data.X_train, data.y_train)
    for name, model in (("S-BSVM", est), ("PlattSVM", platt)):
        ref = classification_report(y_idx, model.predict_proba(data.X_test),
                                    p_true=data.true_proba(data.X_test))
        assert table.loc[name, "log loss"] == pytest.approx(ref["log_loss"], rel=1e-9), name
        assert table.loc[name, "Brier"] == pytest.approx(ref["brier"], rel=1e-9), name
    # two different models, two different rows
    assert table.loc["S-BSVM", "log loss"] != pytest.approx(table.loc["PlattSVM", "log loss"], rel=1e-6)


def test_calibration_maps_draw_the_true_contours_on_the_generators_own_axes():
    at, data, _ = _calibration("ripley.csv")
    figs = _figures(at)
    contours = [t for f in figs for t in f["data"]
                if t.get("type") == "contour" and t.get("name") == figures.TRUTH_NAME
                and t.get("showlegend", True)]
    assert len(contours) == 2  # one on each model's map (the labelled 0.5 level; the levels under it)
    c = contours[0]
    gx, gy = np.meshgrid(_arr(c["x"]), _arr(c["y"]))
    raw = np.column_stack([gx.ravel(), gy.ravel()]) * data.scale + data.center
    np.testing.assert_allclose(_arr(c["z"]).ravel(), ripley_proba(raw), atol=1e-9)


def test_no_true_contours_when_the_features_are_reordered():
    at, data, _ = _calibration("ripley.csv", features="x2,x1")
    assert data.feature_names == ["x2", "x1"] and data.truth is None
    figs = _figures(at)
    assert figs and not any(t.get("type") == "contour" for f in figs for t in f["data"])


def test_every_registry_method_imports_in_this_installation():
    broken = {m.label: m.import_error for m in M.METHODS.values() if m.load() is None}
    assert not broken, f"methods that fail to import (the dashboard would not offer them): {broken}"


def test_a_method_that_fails_to_import_is_reported_not_hidden(monkeypatch):
    ghost = M.Method("ghost", "Ghost SVM", "bsvm.no_such_module", "GhostSVM", "sampler", "", "")
    monkeypatch.setitem(M.METHODS, "ghost", ghost)
    assert not ghost.available
    assert "ModuleNotFoundError" in ghost.import_error
    assert "Ghost SVM" in M.import_errors()
    at = _app(sample="ripley.csv")
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert any("Ghost SVM" in w.value and "ModuleNotFoundError" in w.value for w in at.warning), \
        [w.value for w in at.warning]


def test_no_page_has_a_bare_expression_that_streamlit_magic_would_print():
    """Streamlit's "magic" writes the value of a bare expression statement in a page script to the page:
    ``a.error(...) if err else a.empty()`` printed a DeltaGenerator and its whole API help under the Train
    page's prediction error. Page scripts (and app.py) may hold only calls, docstrings and statements."""
    import ast

    root = Path(__file__).resolve().parents[1] / "dashboard"
    bare = []
    for path in [root / "app.py", *sorted((root / "views").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Expr) and not isinstance(node.value, (ast.Call, ast.Constant, ast.Await)):
                bare.append(f"{path.name}:{node.lineno}")
    assert not bare, bare


def test_a_runs_label_names_the_sampler_that_made_it():
    """Diagnostics, the overlay legend and Compare's table said "Subgradient MCMC (HMC, SGLD, SGNHT)"
    whichever sampler had run (a crawl)."""
    from dashboard.methods import METHODS, run_method_name

    sub = METHODS["subgradient_hmc"]
    assert [sub.run_label({"sampler": s}) for s in ("hmc", "sgld", "sgnht")] == [
        "Subgradient HMC (subgradient MCMC)", "SGLD (subgradient MCMC)", "SGNHT (subgradient MCMC)"]
    assert run_method_name({"method": "subgradient_hmc", "options": {"sampler": "sgld"}}) == "SGLD"
    assert sub.run_label({}) == sub.label  # no sampler chosen: the method's own label
    assert METHODS["msbpm"].run_label({"sampler": "hmc"}) == METHODS["msbpm"].label  # no such option
    assert run_method_name({"method": "msbpm", "options": {}}) == "MS-BPM"
