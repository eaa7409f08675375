"""The dashboard through Streamlit's AppTest: every page loads, samples load, runs and errors behave.

The Train page's fits run in child processes (dashboard/procrun.py), other work in background threads
(dashboard/runner.py), so a test waits on the run's own state, never on a fixed number of script reruns.
"""

import gc
import os
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _apptest import APP, _app, _ok  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from bsvm.base import Progress  # noqa: E402
from bsvm.datasets import make_ripley  # noqa: E402
from bsvm.metrics import classification_report  # noqa: E402
from bsvm.samples import SAMPLES  # noqa: E402
from dashboard.methods import METHODS  # noqa: E402
from dashboard.procrun import ProcessRun  # noqa: E402
from dashboard.runner import Job, Registry, Run  # noqa: E402

PAGES = [f"views/{p}.py" for p in ("data", "train", "calibration", "diagnostics", "compare")]



def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label.startswith(label))


def _widget(at: AppTest, key: str):
    return at.get_by_key(key) if hasattr(at, "get_by_key") else at.session_state[key]


def _until(cond, timeout: float = 60.0, at: AppTest | None = None):
    """Wait for ``cond()`` (re-running the app each time when ``at`` is given); fail after ``timeout``."""
    t_end = time.perf_counter() + timeout
    while not cond():
        assert time.perf_counter() < t_end, "condition not reached in time"
        if at is not None:
            at.run()
        else:
            time.sleep(0.02)


def _start_and_run(at: AppTest, records: int = 3) -> Run:
    at.switch_page("views/train.py").run()
    _ok(at)
    _button(at, "Start").click().run()
    _ok(at)
    run = at.session_state["run"]
    _until(lambda: run.records >= records or run.status in ("done", "failed"))
    at.run()
    _ok(at)
    return run


def _run_to_end_then_diagnostics(at: AppTest) -> Run:
    """Start the Train page's run, wait for its end (it must finish), then open Diagnostics."""
    at.switch_page("views/train.py").run()
    _button(at, "Start").click().run()
    run = at.session_state["run"]
    _until(lambda: run.status != "running")
    assert run.status == "done"
    at.switch_page("views/diagnostics.py").run()
    return run


def _workers() -> list:
    return [t for t in threading.enumerate() if t.name.startswith(("bsvm-run", "bsvm-job"))]


def test_every_page_loads_without_exceptions():
    at = _app()
    _ok(at)
    assert at.title[0].value == "Data"
    for page in PAGES[1:]:
        at.switch_page(page).run()
        _ok(at)
        assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_each_sample_loads_and_shows_its_classes(sample):
    at = _app(sample=sample)
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    import pandas as pd

    frame = pd.read_csv(ROOT / "sample_data" / sample)
    assert int(metrics["classes"]) == frame["label"].nunique()
    assert int(metrics["training rows"]) + int(metrics["test rows"]) == len(frame)


def test_short_sbsvm_run_produces_an_elbo_history_and_the_controls_work():
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample="ripley.csv", method="sbsvm", **{"o.max_iter": "100000", "o.tol": "0"})
    run = _start_and_run(at)
    elbo = np.array([r.metrics["elbo"] for r in list(run.history)])
    assert len(elbo) >= 3 and np.isfinite(elbo).all()
    assert elbo[-1] > elbo[0]  # natural-gradient steps from the prior raise the bound
    _button(at, "Pause").click().run()
    assert run.status == "paused"
    assert run.join(5.0)  # the worker leaves after the record it was computing
    at.run()
    it = run.iteration
    _button(at, "Step").click().run()
    _until(lambda: not run.busy, 10)
    assert run.iteration > it and run.status == "paused"
    _button(at, "Continue").click().run()
    assert run.status == "running"
    _button(at, "Stop").click().run()
    assert run.status == "stopped"
    assert run.join(5.0)
    at.run()  # the page as the browser sees it once the worker has left (the fragment reruns the app)
    _ok(at)
    it = run.iteration
    _button(at, "Continue").click().run()  # a stopped run keeps its state and resumes from it
    _until(lambda: run.iteration > it, 10)
    _button(at, "Reset").click().run()
    _ok(at)
    assert "run" not in at.session_state and run.status == "cancelled"
    assert run.join(5.0) and not _workers()


def test_the_live_view_redraws_in_place_inside_one_script_run_until_the_run_ends():
    """The default live view: while the child computes, the fragment redraws its charts again and again
    in the same script run (no DuplicateElementKey), and reruns the page when the run has ended."""
    pytest.importorskip("bsvm.sbsvm")
    # 300 steps run about 1 s (60 ran 0.25 s, about one loop period, and sometimes sent one figure only)
    at = _app(loop=30.0, sample="ripley.csv", method="sbsvm", **{"o.max_iter": "300", "o.tol": "0"})
    at.switch_page("views/train.py").run()
    _button(at, "Start").click().run()  # returns once the run has ended: the loop reran the page
    _ok(at)
    run = at.session_state["run"]
    assert run.status == "done", run.status
    assert at.session_state["_live:live_objective"][0] >= 2  # objective figures sent by the loop
    assert any("Finished" in c.value for c in at.caption)
    assert _button(at, "Start").disabled is False


def _finished_train_run(**query):
    """The Train page after a Start run to its end with ``query``'s settings: (app, run, the page's PNG
    button keys)."""
    at = _app(**query)
    at.switch_page("views/train.py").run()
    _button(at, "Start").click().run()
    run = at.session_state["run"]
    _until(lambda: run.status == "done")
    at.run()
    _ok(at)
    return at, run, [b.key for b in at.get("download_button") if str(b.key).startswith("png:train_")]


def test_the_fits_own_warnings_and_verdict_reach_the_train_page():
    """A fixed-length SubgradientHMC run of 20 draws ended "done: iteration 30 / 30" with accuracy and no
    word of its ConvergenceWarning (R-hat 1.146), which went to the server's log only (a crawl)."""
    pytest.importorskip("bsvm.subgradient")
    at, run, _ = _finished_train_run(sample="ripley.csv", method="subgradient_hmc",
                                     **{"o.n_samples": "20", "o.n_burnin": "10"})
    said = [w.value for w in at.warning if w.value.startswith("The method warned: ")]
    assert any("stopped without meeting its stopping rule" in w for w in said), said
    assert run.warnings and len(said) == len(set(said))
    assert any(p.text.startswith("done: iteration 30 / 30 (stopping rule not met)")
               for p in at.get("progress")), [p.text for p in at.get("progress")]
    # Diagnostics states the rule in the option boxes' words ("n_samples=20" read as code, a crawl)
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    (verdict,) = [w.value for w in at.warning if w.value.startswith("Not converged: ")]
    assert "Draws per chain = 20" in verdict and "Burn-in = 10" in verdict and "n_samples" not in verdict
    at.switch_page("views/train.py").run()
    # a default run converges: said so, with no warning
    at, run, _ = _finished_train_run(sample="ripley.csv", method="subgradient_hmc")
    assert not run.warnings and not [w for w in at.warning if w.value.startswith("The method warned")]
    assert any("(converged) - " in p.text for p in at.get("progress")), [p.text for p in at.get("progress")]


def test_the_page_gets_the_fits_user_warnings_once_each_but_not_its_cost_warning():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from bsvm.cost import CostWarning
    from bsvm.data import DataScaleWarning
    from dashboard.procrun import page_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("scales differ", DataScaleWarning, stacklevel=1)
        warnings.warn("will take roughly 6 minutes", CostWarning, stacklevel=1)
        warnings.warn("overflow", RuntimeWarning, stacklevel=1)
        warnings.warn("scales differ", DataScaleWarning, stacklevel=1)
        warnings.warn("not converged", ConvergenceWarning, stacklevel=1)
    assert page_warnings(caught) == ["scales differ", "not converged"]


def test_a_finished_run_offers_png_downloads_of_its_charts_only():
    """PlattSVM has no curves: its Train page showed four PNG buttons, three under placeholder messages."""
    at, run, pngs = _finished_train_run(sample="ripley.csv", method="platt")
    assert pngs == ["png:train_map"]
    # one line instead of three panels each saying there is nothing to show; the map alone is drawn
    assert any("is fitted in one go" in c.value for c in at.caption)
    assert "_live:live_map" in at.session_state
    assert not any(f"_live:live_{k}" in at.session_state for k in ("objective", "stats", "traces"))
    # a one-shot fit says so (not "iteration 1 - 5 it/s"), and every finished run reports its accuracy
    # (the page was four placeholders and no figure of merit)
    assert any(p.text.startswith("done: fitted in one go") for p in at.get("progress")), \
        [p.text for p in at.get("progress")]
    assert not any("Slow motion" in c.value for c in at.caption)  # nothing to watch in a one-shot fit
    data = at.session_state["data"]
    said = [c.value for c in at.caption if c.value.startswith("Accuracy:")]
    want = run.model.score(data.X_test, data.y_test)
    assert said and f"{want:.3f} on the {len(data.y_test)} test rows" in said[0], said


def test_step_does_not_throw_a_finished_run_away_nor_pause_a_one_shot_fit():
    """A crawl pressed Step on a finished S-BSVM run: a new run replaced it without a word. On PlattSVM the
    first Step paused at "iteration 1" of a fit that has no steps."""
    at, run, _ = _finished_train_run(sample="ripley.csv", method="platt")
    step = _button(at, "Step")
    assert step.disabled and "fitted in one go" in step.help
    at.selectbox(key="w:cfg:method").set_value("gibbs").run()  # another method: Step starts its run
    assert not _button(at, "Step").disabled
    at, run, _ = _finished_train_run(sample="ripley.csv", method="gibbs", **{"o.n_samples": "20"})
    step = _button(at, "Step")
    assert step.disabled and "The run is done" in step.help
    _button(at, "Reset").click().run()
    assert not _button(at, "Step").disabled  # Reset, then Step, goes one record at a time


def test_stop_and_reset_act_within_half_a_second_mid_run():
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample="ripley.csv", method="sbsvm", **{"o.max_iter": "1000000", "o.tol": "0",
                                                       "o.patience": "1000000"})
    run = _start_and_run(at, records=2)
    t0 = time.perf_counter()
    _button(at, "Stop").click().run()
    assert run.status == "stopped"
    # the buttons follow the request at once, whether or not the child has acknowledged the halt yet
    assert not _button(at, "Continue").disabled and not _button(at, "Step").disabled
    assert _button(at, "Stop").disabled and _button(at, "Pause").disabled
    assert run.join(0.5), "the worker was still running 0.5 s after Stop"
    assert time.perf_counter() - t0 < 0.5 + 2.0  # the click's own script run included
    _ok(at)
    at.run()
    _button(at, "Continue").click().run()
    _until(lambda: run.busy)
    t0 = time.perf_counter()
    _button(at, "Reset").click().run()
    assert run.join(0.5) and run.status == "cancelled"
    _ok(at)
    assert not _workers()


def test_leaving_the_page_or_changing_the_data_stops_the_run_visibly():
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample="ripley.csv", method="sbsvm", **{"o.max_iter": "1000000", "o.tol": "0",
                                                       "o.patience": "1000000"})
    run = _start_and_run(at, records=1)
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    assert run.status == "stopped" and "left the Train page" in run.note
    assert run.join(2.0) and not _workers()
    at.switch_page("views/train.py").run()
    _ok(at)
    assert any("left the Train page" in i.value for i in at.info), [i.value for i in at.info]
    _button(at, "Continue").click().run()
    _until(lambda: run.busy)
    at.switch_page("views/data.py").run()
    at.slider[0].set_value(0.4).run()  # a new split: the run was for the old one
    _ok(at)
    assert run.status == "stopped" and run.join(2.0)
    at.switch_page("views/train.py").run()
    _ok(at)
    assert any("data changed" in w.value for w in at.warning), [w.value for w in at.warning]
    at.switch_page("views/diagnostics.py").run()  # it showed the old run without a word
    _ok(at)
    assert any("data changed" in w.value for w in at.warning), [w.value for w in at.warning]


def test_the_registry_never_leaves_workers_behind():
    """Runs and jobs: cancel in every state, failures kept as messages, the session's end cancels all."""
    from bsvm.datasets import make_ripley
    from bsvm.platt import PlattSVM

    X, y = make_ripley(80, random_state=0)
    reg = Registry()
    r = reg.put("fit", Run(PlattSVM(), X, y))
    assert r.join(30) and r.status == "done" and r.fitted
    bad = reg.put("bad", Run(PlattSVM(C=-1.0), X, y))
    assert bad.join(30) and bad.status == "failed" and bad.error
    r2 = reg.put("fit", Run(PlattSVM(), X, y), start=False)  # replaces (cancels) the first
    assert r.status == "done" and r2.status == "idle"
    r2.cancel()
    assert r2.status == "cancelled" and not r2.busy

    def slow(token, n):
        for i in range(n):
            token.progress(i / n, f"step {i}")
            time.sleep(0.01)
        return n

    j = reg.put("job", Job(slow, 10_000))
    _until(lambda: j.fraction > 0)
    j.cancel()
    assert j.join(0.5) and j.status == "cancelled" and j.result is None
    j2 = reg.put("job2", Job(slow, 5))
    assert j2.join(5) and j2.status == "done" and j2.result == 5
    j3 = reg.put("job3", Job(slow, 10_000))
    del reg  # the session goes away: its finaliser cancels what still runs
    import gc

    gc.collect()
    assert j3.join(0.5) and j3.status == "cancelled"
    assert not _workers()


def _fit_on_calibration(at: AppTest) -> None:
    at.switch_page("views/calibration.py").run()
    _button(at, "Fit").click().run()
    _until(lambda: at.dataframe and not _workers(), at=at)
    _ok(at)


def test_calibration_page_reports_the_metrics_of_both_models():
    at = _app(sample="ripley.csv", method="platt")
    _fit_on_calibration(at)
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert {"error", "Brier", "log loss", "ECE", "AUC", "mean |p - p_true|"} <= set(table.columns)
    run = at.session_state["run"]
    data = at.session_state["data"]
    ref = classification_report(data.index(data.y_test), run.estimator.predict_proba(data.X_test),
                                p_true=data.true_proba(data.X_test))
    assert table.iloc[0]["log loss"] == pytest.approx(ref["log_loss"])
    assert table.iloc[0]["mean |p - p_true|"] == pytest.approx(ref["mad_true"])


def test_calibration_maps_are_larger_in_presentation_mode():
    """In presentation mode Calibration's maps stayed at the normal height while their type and legend
    grew, so the square plot shrank to 211 px in a 470 px column (at 1280 and 1920 px alike): the maps
    are ui.PRESENT_MAP_GROW px taller there (294 px plots at 1280, 349 at 1920, measured in chromium)."""
    import json

    from dashboard import ui

    heights = {}
    for present in ("0", "1"):
        at = _app(sample="ripley.csv", method="platt", present=present)
        _fit_on_calibration(at)
        maps = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")
                if str(getattr(c, "key", "")).startswith("cal_map_")]
        assert maps, "no probability map drawn"
        heights[present] = maps[0]["height"]
    assert heights["1"] >= heights["0"] + ui.PRESENT_MAP_GROW  # (and its legend's extra rows)


def test_calibration_fit_now_is_for_the_data_it_was_asked_on():
    """'Fit ... now', then another data set chosen while it ran: back on the page, nothing is fitted on
    the new data until asked (the request was kept as True and fitted the new data unasked: a crawl)."""
    at = _app(sample="ripley.csv", method="platt")
    at.switch_page("views/calibration.py").run()
    _button(at, "Fit").click().run()
    at.session_state["cfg"]["sample"] = "moons.csv"  # the Data page's choice of another sample
    at.session_state["w:cfg:sample"] = "moons.csv"
    at.switch_page("views/calibration.py").run()
    _until(lambda: not _workers(), at=at)
    at.run()
    _ok(at)
    run = at.session_state["run"] if "run" in at.session_state else None
    assert run is None or run.meta.get("data_key") != at.session_state["data"].key
    assert _button(at, "Fit") is not None and not at.dataframe


def test_calibration_fits_msbpm_on_many_rows_in_a_process_that_cancel_ends():
    """MS-BPM's N x N set-up comes before its first progress record, so a thread job could not stop it:
    after a switch of data set it went on for a minute at 3.3 GB (a crawl). Above PROCESS_ROWS it runs
    in a child process, and Cancel (here: leaving the data) terminates it at once."""
    from dashboard.runner import PROCESS_ROWS

    rng = np.random.default_rng(0)
    n = int(PROCESS_ROWS / 0.7) + 200  # training rows (70 %) above the threshold
    X = rng.normal(size=(n, 2))
    rows = "".join(f"{a:.4f},{b:.4f},{int(a + b > 0)}\n" for a, b in X)
    at = _upload(_app(method="msbpm"), ("x1,x2,label\n" + rows).encode(), name="big.csv")
    _ok(at)
    assert len(at.session_state["data"].y_train) > PROCESS_ROWS
    at.switch_page("views/calibration.py").run()
    _button(at, "Fit").click().run()
    job = at.session_state["_registry"].get("cal_fit")
    assert job is not None and job.process  # a child process, not a thread
    _until(lambda: job.token._proc is not None and job.token._proc.pid is not None, timeout=30)
    proc = job.token._proc
    assert proc.is_alive()  # still setting up (a spawned interpreter imports bsvm first)
    job.cancel("test")
    assert job.join(10.0)
    proc.join(10)
    assert not proc.is_alive() and job.status == "cancelled"


def test_calibration_of_sbsvm_against_platt():
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample="moons.csv", method="sbsvm", **{"o.max_iter": "60"})
    run = _start_and_run(at)
    _until(lambda: run.status == "done")
    at.switch_page("views/calibration.py").run()
    _until(lambda: len(at.dataframe) and len(at.dataframe[0].value) == 2, at=at)
    _ok(at)
    table = at.dataframe[0].value
    assert len(table) == 2 and "PlattSVM" in table.index
    assert table["error"].max() < 0.3  # both separate the moons far better than chance
    # S-BSVM has a latent variance: both uncertainty options are offered
    assert len(at.radio(key="cal_unc_kind_main_1").options) == 2


def test_calibration_offers_latent_variance_only_when_a_model_has_one():
    """A sampler beside PlattSVM: the latent-variance option drew two 'has no latent Gaussian
    predictive' boxes and no map (a crawl); it is not offered then."""
    pytest.importorskip("bsvm.subgradient")
    at, run, _ = _finished_train_run(sample="ripley.csv", method="gibbs", **{"o.n_samples": "100"})
    at.switch_page("views/calibration.py").run()
    _until(lambda: len(at.dataframe) and len(at.dataframe[0].value) == 2, at=at)
    _ok(at)
    # no one-option radio either (it looked like a control that did nothing: a crawl); a caption says
    # which maps these are
    assert not [r for r in at.radio if str(r.key).startswith("cal_unc_kind_main")]
    assert any(c.value.startswith("Uncertainty: predictive entropy") for c in at.caption)
    assert not any("no latent Gaussian predictive" in i.value for i in at.info)


def _upload(at: AppTest, content: bytes, name="bad.csv") -> AppTest:
    import hashlib

    at.session_state["upload"] = {"name": name, "bytes": content, "digest": hashlib.sha1(content).hexdigest()}
    at.session_state["cfg"]["sample"] = "upload"
    at.session_state["w:cfg:sample"] = "upload"
    return at.run()


@pytest.mark.parametrize("content, message", [
    (b"a,b,label\nx,y,0\nz,w,1\nq,r,0\n", "numeric"),
    (b"x1,x2,label\n1,2,0\n3,,1\n4,5,0\n6,7,1\n", "Missing values"),
    (b"x1,x2,label\n1,2,0\n3,4,0\n5,6,0\n", "one class"),
    (b"", "empty"),
    (b"justonecolumn\n1\n2\n", "fewer than two columns"),
    (b"x1,x2,label\n", "no rows of data"),  # a header only: it was told to encode its features as numbers
])
def test_bad_csvs_give_an_error_message_not_an_exception(content, message):
    at = _app()
    at.query_params["label"] = "label"
    at = _upload(at, content)
    _ok(at)
    errors = " ".join(e.value for e in at.error)
    assert message.lower() in errors.lower(), errors
    assert "encode the features" not in errors or message == "numeric", errors
    # the Train page repeats the reason, and does not say "Choose a data set" to a user who just did
    at.switch_page("views/train.py").run()
    _ok(at)
    assert message.lower() in " ".join(e.value for e in at.error).lower()
    assert not any("Choose a data set" in i.value for i in at.info), [i.value for i in at.info]


def test_a_label_column_with_another_name_is_guessed_and_said():
    rows = "\n".join(f"{i},{i % 3},{i % 2}" for i in range(20))
    at = _app()
    at.query_params["label"] = "label"
    at = _upload(at, f"x1,x2,target\n{rows}\n".encode())
    _ok(at)
    assert not at.error
    infos = " ".join(i.value for i in at.info)
    assert "Label column: 'target' (guessed: there is no column called 'label')" in infos


def test_a_measured_column_picked_as_the_label_gets_a_short_error_naming_the_likely_label():
    """A crawl set "Label column" to a measured column: a 4,000-px error listed all 800 values as classes
    and advised leaving out single-row classes, which left 13 "classes" and another error."""
    rng = np.random.default_rng(0)
    rows = "".join(f"{a:.4f},{b:.4f},{'yes' if a > 0 else 'no'}\n" for a, b in rng.normal(size=(800, 2)))
    at = _upload(_app(), ("f0,f1,target\n" + rows).encode())
    _ok(at)
    assert not at.error
    at.selectbox(key="w:cfg:label").set_value("f0").run()
    _ok(at)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and len(errors[0]) < 600, errors
    assert "numbers with fractions" in errors[0] and "'target' has 2 distinct values" in errors[0]
    assert "Leave out classes" not in errors[0]


def test_odd_csvs_load_with_a_note_semicolons_latin1_and_dropped_nan_rows():
    rows = "\n".join(f"{i},5;{i % 3};{i % 2}" for i in range(20))
    text = ("t\xe9mp;b;label\n" + rows + "\n;1;0\n").encode("latin-1")
    at = _upload(_app(), text)
    _ok(at)
    said = " ".join(e.value for e in at.error)
    # the page's words (the option to tick), not the library's (load_csv's dropna=True, a Python list)
    assert "missing values in 1 of 21 rows (columns: t\xe9mp). Tick **Drop rows with missing" in said
    assert "dropna" not in said and "['" not in said
    at.checkbox(key="w:cfg:dropna").check().run()
    _ok(at)
    assert not at.error
    notes = " ".join(i.value for i in at.info)
    assert "semicolons" in notes and "not UTF-8" in notes
    assert "Dropped 1 row with missing values" in notes and "20 rows remain" in notes  # (the caption: 21)
    assert int({m.label: m.value for m in at.metric}["features"]) == 2
    assert not any(c.value.startswith("Constant on the training rows") for c in at.caption)


def test_a_class_too_small_to_split_can_be_left_out():
    """A one-row class refused the whole upload with no way out but editing the file (a crawl): the
    message names the option, and ticking it fits the other classes and says what was left out."""
    rng = np.random.default_rng(0)
    rows = [f"{a:.3f},{b:.3f},{'A' if i % 2 else 'B'}" for i, (a, b) in enumerate(rng.normal(size=(40, 2)))]
    at = _upload(_app(), ("x1,x2,label\n" + "\n".join(rows) + "\n0.5,0.5,C\n").encode())
    _ok(at)
    said = " ".join(e.value for e in at.error)
    assert "class C: 1 row" in said and "Leave out classes with a single row" in said
    assert said.count("add rows") == 1  # the cause's remedy, then the option (it said "add rows" twice)
    at.checkbox(key="w:cfg:droprare").check().run()
    _ok(at)
    assert not at.error
    notes = " ".join(i.value for i in at.info)
    assert "Left out class C (1 row)" in notes and "40 rows remain" in notes
    assert int({m.label: m.value for m in at.metric}["classes"]) == 2
    assert list(at.session_state["data"].classes) == ["A", "B"]
    # too few rows overall (no class below 3 rows) is not the option's to fix: it is not offered
    # a class too small whose removal would leave one class: the option cannot help, so it is not named
    at = _upload(_app(), ("x1,x2,label\n" + "\n".join(f"{i},{i % 5},A" for i in range(40))
                          + "\n1,1,B\n").encode())
    said = " ".join(e.value for e in at.error)
    assert "Too few rows" in said and "Leave out classes" not in said
    at = _app(test="0.5")
    at = _upload(at, b"x1,x2,label\n1,2,A\n2,3,A\n3,4,A\n4,5,B\n5,6,B\n6,7,B\n7,8,C\n8,9,C\n9,1,C\n")
    said = " ".join(e.value for e in at.error)
    assert "Too few rows" in said and "Leave out classes" not in said


def test_a_refused_upload_is_said_beside_its_controls():
    """The refusal of an upload (missing values, too few rows) is in the right column, where the chart
    would be: under the left column's controls it was below the fold at 1280x720 (a crawl)."""
    for content, words in [(b"x1,x2,label\n1,2,0\n3,,1\n4,5,0\n6,7,1\n2,2,1\n5,1,0\n", "missing values"),
                           (b"x1,x2,label\n0.1,1,0\n0.2,2,1\n", "Too few rows")]:
        at = _upload(_app(), content)
        _ok(at)
        left, right = at.columns[0], at.columns[1]
        assert any(words in e.value for e in right.error), [e.value for e in at.error]
        assert not left.error


def test_a_linear_sampler_on_many_inputs_ends_with_its_posterior_weights():
    """No map with 20 inputs: a finished GibbsSVM run shows its weights' posterior (a PNG of it too)
    instead of a placeholder."""
    _, _, pngs = _finished_train_run(sample="twonorm.csv", method="gibbs",
                                     **{"o.n_samples": "60", "o.n_burnin": "20"})
    assert "png:train_weights" in pngs and "png:train_ard_weights" not in pngs, pngs


def test_a_run_of_another_method_is_not_continued_or_drawn_under_the_new_methods_name():
    """A crawl paused a Subgradient MCMC run, chose S-BSVM and pressed Continue: the sampler resumed under
    S-BSVM's name and options. The old run is now named, not drawn, and Continue is off."""
    at = _app(sample="ripley.csv", method="sbsvm")
    at.switch_page("views/train.py").run()
    _button(at, "Step").click().run()
    run = at.session_state["run"]
    _until(lambda: not run.busy)
    at.run()
    assert _button(at, "Continue").disabled is False  # its own method: resumable
    at.selectbox(key="w:cfg:method").set_value("platt").run()
    _ok(at)
    assert _button(at, "Continue").disabled is True
    assert any("The last run here was made by S-BSVM" in i.value for i in at.info), [i.value for i in at.info]
    assert not at.get("progress") and not at.error  # nothing of the old run drawn under PlattSVM's name
    at.selectbox(key="w:cfg:method").set_value("gibbs").run()  # (PlattSVM, one-shot, has no Step)
    _button(at, "Step").click().run()  # Step starts a run of the chosen method instead
    assert at.session_state["run"] is not run
    assert at.session_state["run"].meta["method"] == "gibbs"


def test_a_constant_column_is_named_on_the_data_page():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    rows = "\n".join(f"{a:.4f},5,{b:.4f},{int(a + b > 0)}" for a, b in X)
    at = _upload(_app(), ("u,unit,v,label\n" + rows + "\n").encode())
    _ok(at)
    # the same value in every row: left out (a crawl's 2-D file with one lost its maps), and said
    said = [i.value for i in at.info if "same value in every row" in i.value]
    assert len(said) == 1 and "'unit'" in said[0], [i.value for i in at.info]
    assert int({m.label: m.value for m in at.metric}["features"]) == 2
    # chosen as a feature anyway, or constant on the training rows only: named as before
    at.multiselect(key="w:cfg:features").set_value(["u", "unit", "v"]).run()
    said = [c.value for c in at.caption if c.value.startswith("Constant on the training rows")]
    assert said == ["Constant on the training rows, so no method can learn from it: unit."], said


def test_a_good_upload_loads():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    rows = "\n".join(f"{a:.4f},{b:.4f},{'yes' if a + b > 0 else 'no'}" for a, b in X)
    at = _upload(_app(), ("u,v,label\n" + rows + "\n").encode())
    _ok(at)
    assert not at.error
    assert int({m.label: m.value for m in at.metric}["features"]) == 2


def test_settings_survive_page_switches_and_reach_the_url():
    at = _app(sample="xor.csv", seed="7", method="platt", **{"o.C": "2.5"})
    assert at.session_state["cfg"]["sample"] == "xor.csv" and at.session_state["cfg"]["seed"] == 7
    at.slider[0].set_value(0.4).run()
    at.switch_page("views/train.py").run()
    assert at.session_state["cfg"]["opts"]["platt"]["C"] == 2.5
    assert at.number_input(key="w:opt:platt:C").value == 2.5
    at.switch_page("views/data.py").run()
    _ok(at)
    assert at.slider[0].value == 0.4
    qp = dict(at.query_params)
    assert qp["sample"] in ("xor.csv", ["xor.csv"])
    flat = {k: (v[0] if isinstance(v, list) else v) for k, v in qp.items()}
    assert flat["test"] == "0.4" and flat["seed"] == "7"
    assert flat["method"] == "platt" and flat["o.C"] == "2.5"


def test_presentation_mode_is_in_the_link():
    """A teacher prepares links for a lecture: ``?present=1`` opens in presentation mode, and turning
    the mode on puts it into the address bar's link."""
    at = _app(present="1")
    _ok(at)
    assert at.toggle(key="presentation").value is True
    flat = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert flat.get("present") == "1"
    at = _app()
    assert at.toggle(key="presentation").value is False
    assert "present" not in dict(at.query_params)
    at.toggle(key="presentation").set_value(True).run()
    _ok(at)
    flat = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert flat.get("present") == "1"


def test_the_data_sets_names_do_not_change_with_presentation_mode():
    """The data-set box kept the names it had when the mode was switched on, so the long playground
    name was cut in presentation mode ("Playground: generate and click to edit (2-D"): one short set."""
    at = _app()
    before = at.selectbox(key="w:cfg:sample").options
    at.toggle(key="presentation").set_value(True).run()
    _ok(at)
    assert at.selectbox(key="w:cfg:sample").options == before
    assert max(len(o) for o in before) <= 42 and "Playground (2-D, click to edit)" in before


def _open_diagnostics(at: AppTest, run) -> AppTest:
    """Show ``run`` (made by a fake sampler on the current data) on the Diagnostics page."""
    at.session_state["run"] = run
    at.session_state["run_meta"] = {"method": "fake", "label": "fake sampler", "options": {},
                                    "data_key": at.session_state["data"].key}
    return at.switch_page("views/diagnostics.py").run()


class _FakeSampler:
    """Stands in for a fitted sampler: the Diagnostics page needs only ``samples_`` and ``history_``."""

    def __init__(self, samples):
        self.samples_ = samples
        self.history_ = [Progress(i, 0.1 * i, {"acceptance": 0.8, "step_size": 0.1},
                                  {"chains": samples[:, min(i, samples.shape[1] - 1), 0]}) for i in range(20)]

    def predict_proba(self, X):
        return np.full((len(X), 2), 0.5)


def test_posterior_draws_of_a_multi_class_fit_say_why_none_are_drawn():
    """A 4-class SubgradientHMC run got a slider and two notes in this tab: "no `predict_proba_draws`" (a
    method's attribute, and it has one) and "for SubgradientHMC ... with features = None" (which it was,
    a crawl); then a tab of one sentence. Now no tab, and a caption with the real reason."""
    rng = np.random.default_rng(0)
    rows = "".join(f"{a:.3f},{b:.3f},{'ABC'[i % 3]}\n" for i, (a, b) in enumerate(rng.normal(size=(60, 2))))
    at = _upload(_app(), ("x1,x2,label\n" + rows).encode())
    _ok(at)
    assert len(at.session_state["data"].classes) == 3
    _open_diagnostics(at, Run.from_fitted(_FakeSampler(rng.normal(size=(4, 100, 6)))))
    assert "Posterior draws" not in [t.label for t in at.tabs]
    at.session_state["diag_tab"] = "Posterior draws"  # (a link or an earlier run's tab)
    at.run()
    _ok(at)
    assert "Posterior draws" not in [t.label for t in at.tabs]
    said = [c.value for c in at.caption if "drawn one by one for two classes" in c.value]
    assert said and "this fit has 3" in said[0]
    assert not at.slider and not any("predict_proba_draws" in i.value for i in at.info)


def test_posterior_draws_say_in_words_why_a_feature_model_has_no_weight_cloud():
    """An S-BSVM fit with random Fourier features: the tab said "its weights are those of features =
    'rff'" (a crawl); it says what those weights are."""
    at = _app(sample="ripley.csv")
    fake = _FakeSampler(np.random.default_rng(0).normal(size=(2, 50, 5)))
    fake.features, fake.feature_map_ = "rff", object()
    _open_diagnostics(at, Run.from_fitted(fake))
    at.session_state["diag_tab"] = "Posterior draws"
    at.run()
    _ok(at)
    said = [i.value for i in at.info if "weight-space cloud" in i.value]
    assert said and "random Fourier features" in said[0] and "features = 'rff'" not in said[0]


def test_diagnostics_page_tables_and_flags_chains():
    at = _app(sample="ripley.csv")
    S = np.random.default_rng(0).normal(size=(4, 300, 3))
    S[0, :, 2] += 5.0  # one chain stuck elsewhere in parameter 2
    _open_diagnostics(at, Run.from_fitted(_FakeSampler(S)))
    _ok(at)
    table = at.dataframe[0].value
    assert list(table["flag"] != "ok") == [True, False, False]  # the failing row first
    assert table["R-hat"].iloc[0] > 1.1
    assert any("1 of the 3 quantities miss the stopping rule" in w.value for w in at.warning)


def test_diagnostics_leaves_out_parameters_the_model_does_not_sample():
    # MS-BPM's kernel weights off the pivot rows are 0 in every draw: 1,895 of 2,001 columns on 2,000
    # rows filled the table, the Quantity list and the CSV with rows that have no diagnostics
    S = np.random.default_rng(0).normal(size=(4, 300, 5))
    S[:, :, 2] = 0.0
    S[:, :, 4] = 0.0
    fake = _FakeSampler(S)
    fake.potential_ = S[:, :, 0] ** 2
    at = _app(sample="ripley.csv")
    # a model that does not say what it samples keeps every parameter: the exact-sampler overlay and the
    # NetCDF's names count on their positions (a review)
    _open_diagnostics(at, Run.from_fitted(fake))
    _ok(at)
    assert len(at.dataframe[0].value) == 6
    fake.sampled_coefficients = lambda: np.array([True, True, False, True, True])
    _open_diagnostics(at, Run.from_fitted(fake))
    _ok(at)
    # potential and the 4 sampled parameters: column 4 is constant in the draws (a chain stuck still)
    # but sampled, so it stays, flagged
    table = at.dataframe[0].value
    assert len(table) == 5 and table["flag"].iloc[-1] == "constant"
    assert any(c.value.startswith("1 of the model's parameters has the same value") for c in at.caption)


def test_a_stopped_runs_failed_check_is_the_diagnostics_verdict():
    """A run stopped before its end has no final verdict (convergence_), and the R-hat table has the
    parameters only: the page said "All 32 quantities within the stopping rule's thresholds" in green for
    a GibbsSVM run whose own last check (on p(y|x)) had just failed. The last check in the progress
    records is shown, and the table's message is not a green all-clear then."""
    S = np.random.default_rng(0).normal(size=(4, 600, 3))  # well-mixed parameters: all within the rule
    fake = _FakeSampler(S)
    fake.potential_ = S[:, :, 0] ** 2  # a per-chain summary: named as a user reads it
    fake.history_[-1].metrics.update(ess_bulk=272.0, ess_tail=310.0, ess_target=400.0, rhat=1.0203,
                                     rhat_target=1.01)
    at = _app(sample="ripley.csv")
    run = Run.from_fitted(fake)
    run.status = "stopped"
    _open_diagnostics(at, run)
    _ok(at)
    (w,) = [w.value for w in at.warning if "last check" in w.value]
    assert "was stopped before a final verdict" in w and "ESS bulk 272" in w and "R-hat 1.0203" in w
    assert not [s.value for s in at.success]
    assert any(i.value.startswith("All 4 quantities in this table") and "check above is not met" in i.value
               for i in at.info)
    assert at.selectbox(key="diag_param").options[0] == "log posterior"  # not the attribute, potential_
    # the same check passed: said, and the table's message is green again
    fake.history_[-1].metrics.update(ess_bulk=900.0, ess_tail=800.0, rhat=1.002)
    at.run()
    _ok(at)
    assert any("That check passed" in i.value for i in at.info) and at.success
    # a fixed-length run paused midway: its records carry no check yet (NaN), which read "too few draws
    # to estimate the ESS" beside 600 draws per chain, and "Continue to let it reach its rule" (a crawl)
    fake.history_[-1].metrics.update(ess_bulk=np.nan, ess_tail=np.nan, rhat=np.nan)
    run.status = "paused"
    at.run()
    _ok(at)
    said = [i.value for i in at.info if "stopping rule was checked" in i.value]
    assert said and "was paused before its stopping rule was checked" in said[0]
    assert not any("too few draws" in t.value or "reach its rule" in t.value for t in [*at.info, *at.warning])
    assert at.success and not any("not met" in i.value for i in at.info)  # the table's own verdict


def test_a_stopped_runs_failed_verdict_is_not_followed_by_a_green_all_clear():
    """MS-BPM stopped before its rule passed keeps its last check as ``convergence_`` (not converged):
    the page said "Not converged" in yellow and, right under it, "The 17 varying quantities in this table
    are within the stopping rule's thresholds" in green (a crawl)."""
    from bsvm.convergence import StoppingRule, assess

    rng = np.random.default_rng(0)
    S = rng.normal(size=(8, 300, 3))  # the table's parameters: well mixed
    fake = _FakeSampler(S)
    q = rng.normal(size=(8, 40, 3))
    q[:4, :, 1] += 1.0  # p(y|x) at a row: chains disagree
    fake.convergence_ = assess(q, names=["log_posterior", "p(y|x[0])", "p(y|x[9])"])
    fake.stopping_rule_ = StoppingRule().describe(2)
    fake.converged_ = False
    assert not fake.convergence_.converged
    at = _app(sample="ripley.csv")
    run = Run.from_fitted(fake)
    run.status = "stopped"
    _open_diagnostics(at, run)
    _ok(at)
    assert any(w.value.startswith("Not converged: ") for w in at.warning)
    assert not [s.value for s in at.success]
    assert any("within the stopping rule's thresholds" in i.value and "check above is not met" in i.value
               for i in at.info)
    # the check's draws and the tables' draws differ: said (a crawl read 929 against 520 as a contradiction)
    assert any("on 40 draws per chain" in c.value
               and "The tables below use the 300 draws per chain" in c.value for c in at.caption)


def test_diagnostics_page_shows_the_stopping_rules_own_check_and_the_same_flags():
    """The sampler's last convergence check (what its run length was decided on) is shown as it computed
    it; the parameter table flags by the same rule (MS-BPM's 8 chains were asked for 800 ESS before), and
    a sampler whose rule does not check its parameters says so next to a flagged parameter."""
    from bsvm.convergence import StoppingRule, assess

    rng = np.random.default_rng(0)
    S = rng.normal(size=(8, 200, 3))
    S[:4, :, 2] += 0.5  # parameter 2 mixes slowly: flagged, but its rule did not check it
    fake = _FakeSampler(S)
    q = rng.normal(size=(8, 200, 3))
    fake.convergence_ = assess(q, names=["log_posterior", "p(y|x[0])", "p(y|x[9])"])
    fake.stopping_rule_ = StoppingRule().describe(2)
    fake.converged_ = fake.convergence_.converged
    assert fake.converged_
    at = _app(sample="ripley.csv")
    _open_diagnostics(at, Run.from_fitted(fake))
    _ok(at)
    rule = at.dataframe[0].value
    # in the page's words (the samplers' names are log_posterior and p(y|x[0]))
    assert list(rule.index) == ["log posterior", "p(y[0] | x[0])", "p(y[9] | x[9])"]
    assert (rule["flag"] == "ok").all() and rule.index.name == "quantity"
    assert any(s.value.startswith("Converged: Stop when") for s in at.success)
    table = at.dataframe[1].value
    assert list(table["flag"] == "ok") == [False, True, True]
    # information, not a warning, under a converged verdict on what the rule did check (a crawl read a
    # green "Converged" over a yellow box as a contradiction)
    assert any("1 of the 3 quantities in this table miss the thresholds" in i.value
               and "parameters the stopping rule does not check" in i.value for i in at.info)
    assert not at.warning
    assert any("does not check its parameters" in c.value for c in at.caption)


def test_compare_page_quick_settings_follow_the_estimated_cost_until_the_user_chooses():
    """Quick settings were always on: on the 175-row Ripley sample, whose defaults take seconds, every
    fit in the table was an unfinished one, with a warning saying so."""
    at = _app(sample="ripley.csv")
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert at.toggle(key="cmp_quick").value is False
    assert any("so Quick settings start off" in c.value for c in at.caption)
    # twonorm's 700 training rows (estimated ~45 s) still run at the defaults: a comparison of
    # unconverged fits (Quick) is only for data whose defaults would take minutes
    at.switch_page("views/data.py").run()
    at.selectbox[0].set_value("twonorm.csv").run()
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert at.toggle(key="cmp_quick").value is False
    from bsvm.datasets import make_twonorm

    X, y = make_twonorm(3000, random_state=0)  # 2,100 training rows: estimated at minutes
    rows = "\n".join(",".join(f"{v:.5f}" for v in x) + f",{t}" for x, t in zip(X, y))
    header = ",".join(f"x{j}" for j in range(X.shape[1])) + ",label"
    at = _upload(at, f"{header}\n{rows}\n".encode(), name="big.csv")
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert at.toggle(key="cmp_quick").value is True
    # only the slow methods are capped (S-BSVM's ~1 s default fit is not)
    said = " ".join(c.value for c in at.caption)
    assert "Quick settings deviate" in said and "MS-BPM:" in said and "S-BSVM:" not in said, said
    at.toggle(key="cmp_quick").set_value(False).run()  # the user's choice is kept from now on
    at.switch_page("views/data.py").run()
    at.selectbox[0].set_value("ripley.csv").run()
    at.switch_page("views/compare.py").run()
    assert at.toggle(key="cmp_quick").value is False
    assert not any("so Quick settings start" in c.value for c in at.caption)
    # on (the choice the data would not make here), and kept over a visit to another page: Streamlit
    # forgets a widget's state when another page runs, and the toggle came back off
    at.toggle(key="cmp_quick").set_value(True).run()
    at.switch_page("views/data.py").run()
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert at.toggle(key="cmp_quick").value is True


def test_a_cancelled_comparison_keeps_the_methods_it_finished():
    """Cancel during the third of six methods showed only "Comparison: cancelled" and dropped the two
    finished ones (a crawl): their rows stay, marked as a partial comparison."""
    at = _app(sample="ripley.csv")
    at.switch_page("views/compare.py").run()
    _button(at, "Run all").click().run()
    job = at.session_state["_registry"].get("compare")
    _until(lambda: job.token.partial is not None and len(job.token.partial["results"]) >= 2, 120)
    job.cancel("by you")
    at.run()
    _ok(at)
    assert job.status == "cancelled" and at.dataframe
    n_done = job.token.partial["partial"][0]
    assert len(at.dataframe[0].value) == len(job.token.partial["results"]) == n_done
    assert any(f"cancelled after {n_done} of" in c.value for c in at.caption)


def test_compare_page_runs_every_method():
    at = _app(sample="ripley.csv")
    at.switch_page("views/compare.py").run()
    # Quick settings cap only the methods estimated above 10 s: none on Ripley's 175 rows (S-BSVM capped at
    # 60 steps lost to PlattSVM on a crawl's 5,000 rows, which it beats at its defaults)
    at.toggle(key="cmp_quick").set_value(True).run()
    assert any("Quick settings change nothing here" in c.value for c in at.caption)
    _button(at, "Run all").click().run()
    # (six methods' fits and maps: ~50 s on an idle 2-core machine, over a minute under load)
    _until(lambda: at.dataframe, 240, at=at)
    _ok(at)
    table = at.dataframe[0].value
    # short names: the long ones pushed the last column out of sight in presentation mode
    assert "PlattSVM" in table.index and "fit time (s)" in table.columns and "converged" in table.columns
    assert (table["error"] < 0.35).all()
    # each fit's own convergence verdict: Platt has none; a sampler short of its stopping rule is named
    conv = table["converged"]
    assert conv["PlattSVM"] == "-"
    assert all(v in ("yes", "no") for k, v in conv.items() if not k.startswith("PlattSVM"))
    assert all(not v["capped"] for v in at.session_state["compare"]["results"].values())
    # the shaded "best" is read against the test set's size (75 rows here: one row is 1.3 points)
    assert any("On 75 test rows one row is 1.3 points of error" in c.value for c in at.caption)
    results = at.session_state["compare"]["results"]
    gibbs = next(k for k in results if k.startswith("GibbsSVM"))
    results[gibbs]["converged"] = ("no", "R-hat 1.02 > 1.01")
    at.run()
    conv = at.dataframe[0].value["converged"]
    assert conv["GibbsSVM"] == "no"
    assert any("Not converged" in w.value and "GibbsSVM (R-hat" in w.value for w in at.warning)
    # the best values are shaded among the converged fits only (and the page says so); with one such fit
    # there is no comparison: quick settings shaded PlattSVM's whole row green (a crawl)
    assert any("among the converged fits" in c.value for c in at.caption)
    finished = [k for k, v in conv.items() if v != "no"]
    said = any("converged, so none is shaded" in c.value for c in at.caption)
    assert said == (len(finished) == 1), (dict(conv), [c.value for c in at.caption])
    # the case itself: every sampler and variational fit unconverged, only the baseline left
    saved = at.session_state["compare"]
    for name, v in saved["results"].items():
        if not name.startswith("PlattSVM"):
            v["converged"] = ("no", "its iteration budget ran out")
    at.run()
    _ok(at)
    assert any("only PlattSVM converged, so none is shaded" in c.value for c in at.caption), \
        [c.value for c in at.caption]
    # every map was predicted in the job (the page predicted all of them at every rerun) and is drawn
    from dashboard import ui

    grid = ui.map_grid(at.session_state["data"])[0]
    assert all(v["map"].shape == (len(grid.points), 2) for v in saved["results"].values())
    platt = next(v for k, v in saved["results"].items() if k.startswith("PlattSVM"))
    np.testing.assert_allclose(platt["map"], platt["est"].predict_proba(grid.points))
    assert "cmp_grid" in [getattr(c, "key", None) for c in at.get("plotly_chart")]


def test_calibration_offers_two_feature_maps_for_high_dimensional_data():
    at = _app(sample="twonorm.csv", method="platt")
    _fit_on_calibration(at)
    n_charts = len(at.get("plotly_chart"))  # reliability and histograms only: no map for 20-D data
    at.checkbox(key="cal_two").check().run()
    _until(lambda: len(at.get("plotly_chart")) >= n_charts + 2, at=at)
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    # PlattSVM refitted on two features: its probability map and its uncertainty map
    assert len(at.get("plotly_chart")) == n_charts + 2
    at.selectbox(key="cal_f2").set_value(0).run()
    assert any("two different features" in e.value for e in at.error)


def test_a_linear_sampler_on_xor_is_told_its_boundary_cannot_bend():
    """SubgradientHMC on the raw inputs draws a straight line: on the XOR sample the finished run says
    so and names the option for a curved boundary; with RBF features it does not."""
    pytest.importorskip("bsvm.subgradient")
    shown = {}
    for features in ("None", "nystroem"):
        at = _app(sample="xor.csv", method="subgradient_hmc",
                  **{"o.n_samples": "60", "o.n_burnin": "60", "o.n_chains": "2", "o.features": features})
        at.switch_page("views/train.py").run()
        _button(at, "Start").click().run()
        run = at.session_state["run"]
        _until(lambda r=run: r.status != "running")
        at.run()
        _ok(at)
        assert run.status == "done" and any("Finished" in c.value for c in at.caption)
        # the final charts have PNG downloads, as every other page's charts do
        # (each labelled with its chart: they sit in one row under the 2x2 grid)
        assert {b.label for b in at.get("download_button")} >= {
            "PNG: objective", "PNG: statistics", "PNG: traces", "PNG: map"}
        shown[features] = [w.value for w in at.warning if "straight boundary" in w.value]
        if features == "None":  # the Calibration page says it too (error 0.4 beside Platt's 0)
            at.switch_page("views/calibration.py").run()
            _ok(at)
            assert any("straight boundary" in w.value and "on the Train page" in w.value for w in at.warning)
    assert len(shown["None"]) == 1 and "Features: nystroem or rff" in shown["None"][0]
    assert shown["nystroem"] == []


def test_a_sampler_that_runs_until_converged_fills_its_bar_by_its_rules_last_check():
    """GibbsSVM at its defaults runs until its rule is met: no length to count against, so the bar stayed
    empty all run; it now shows the last check's bulk ESS against the ESS wanted, and says so."""
    pytest.importorskip("bsvm.subgradient")
    at = _app(sample="breast_cancer.csv", method="gibbs")  # about 10 s of sweeps: checks before the end
    at.switch_page("views/train.py").run()
    _button(at, "Start").click().run()
    run = at.session_state["run"]

    def checked():  # the checks with a finite ESS (the first ones, on few draws, may have none)
        return [h.metrics for h in list(run.history) if "ess_target" in h.metrics
                and np.isfinite(h.metrics.get("ess_bulk", np.nan))
                and np.isfinite(h.metrics.get("ess_tail", np.nan))]

    _until(lambda: run.status != "running" or checked())
    _button(at, "Pause").click().run()
    assert run.join(10.0)
    at.run()
    _ok(at)
    if run.status == "done":
        pytest.skip("the run converged before the page could pause it")
    (bar,) = at.get("progress")
    last = [h.metrics for h in run.history if "ess_target" in h.metrics][-1]
    assert last is checked()[-1]  # (later checks have more draws)
    assert "last check: ESS bulk" in bar.proto.text and "wanted 400" in bar.proto.text
    assert f"R-hat {last['rhat']:.4f}" in bar.proto.text

    def share(m):  # ESS over the ESS wanted, and R-hat's share (1.01 - 1) / (R-hat - 1): the smaller
        want = min(m["ess_bulk"], m["ess_tail"]) / m["ess_target"]
        if m["rhat"] > 1.01:
            want = min(want, 0.01 / (m["rhat"] - 1.0))
        return min(want, 0.99)

    # the best share of the checks so far: a bar that stepped back when R-hat rose read as a fault
    want = max(share(m) for m in checked())
    assert bar.proto.value == pytest.approx(100 * want, abs=1.0) and bar.proto.value > 0
    _button(at, "Reset").click().run()


def test_the_exact_sampler_tab_says_at_once_when_the_run_has_other_parameters():
    """HMC on Nystroem features (101 parameters on Ripley) was offered the GibbsSVM run, and told only
    after it that the two are not comparable (a crawl): the tab says so first, with no button."""
    pytest.importorskip("bsvm.subgradient")
    at = _app(sample="ripley.csv", method="subgradient_hmc",
              **{"o.n_samples": "40", "o.n_burnin": "40", "o.n_chains": "2", "o.features": "nystroem"})
    _run_to_end_then_diagnostics(at)
    at.session_state["diag_tab"] = "Against the exact sampler"
    at.run()
    _ok(at)
    assert not [b for b in at.button if b.label.startswith("Run GibbsSVM")]
    assert any("cannot be compared" in i.value and "features=None" in i.value for i in at.info), \
        [i.value for i in at.info]


def test_diagnostics_overlays_subgradient_draws_on_exact_gibbs_draws():
    pytest.importorskip("bsvm.subgradient")
    at = _app(sample="ripley.csv", method="subgradient_hmc",
              **{"o.n_samples": "60", "o.n_burnin": "60", "o.n_chains": "2"})
    run = _run_to_end_then_diagnostics(at)
    _ok(at)
    names = at.selectbox(key="diag_param").options
    assert names[-3:] == ["w[x1]", "w[x2]", "b"]  # the weights named by the data's columns
    at.selectbox(key="diag_param").set_value(names.index("w[x1]")).run()  # the first weight
    # lazy tabs: only the open one is drawn (the first, the chain charts)
    assert [t.label for t in at.tabs] == ["Traces and mixing", "ESS, energy and pairs", "Posterior draws",
                                          "Against the exact sampler"]
    top = {"diag_objective", "diag_stats", "diag_snapshot"}  # above the tabs: always drawn
    assert {c.key for c in at.get("plotly_chart")} == top | {"diag_trace", "diag_acf", "diag_running",
                                                              "diag_rank"}
    at.session_state["diag_tab"] = "ESS, energy and pairs"
    at.run()
    _ok(at)
    assert {c.key for c in at.get("plotly_chart")} == top | {"diag_ess", "diag_energy", "diag_pair_plot"}
    n_div = int(run.estimator.diverging_.sum())  # (the page counts the sampler's own flags)
    assert any(f"Divergent transitions (energy error above 1,000) among the kept draws: {n_div:,} of 120"
               in c.value for c in at.caption), [c.value for c in at.caption]
    at.session_state["diag_tab"] = "Posterior draws"
    at.run()
    _ok(at)
    assert {c.key for c in at.get("plotly_chart")} == top | {"diag_boundaries", "diag_cloud"}
    at.session_state["diag_tab"] = "Against the exact sampler"
    at.run()
    _ok(at)
    assert {c.key for c in at.get("plotly_chart")} == top  # no overlay before GibbsSVM has run
    n_charts, n_tables = len(at.get("plotly_chart")), len(at.dataframe)
    _button(at, "Run GibbsSVM").click().run()
    _until(lambda: at.session_state["gibbs_cache"], at=at)
    _ok(at)
    assert not [b for b in at.button if b.label.startswith("Run GibbsSVM")]  # done: no button beside it
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == n_charts + 1
    table = at.dataframe[n_tables].value  # the approximate-vs-exact table: one row per parameter
    assert list(table.index) == ["w[x1]", "w[x2]", "b"] and "sd (exact)" in table.columns
    # read against the noise of two finite runs (short headers: the long ones cut the table at 1280 px)
    assert {"|diff| / sd", "|diff| / MCSE", "sd ratio"} <= set(table.columns)
    assert any("Monte Carlo error" in c.value and "Largest |mean diff|" in c.value for c in at.caption)
    draws = at.session_state["gibbs_cache"]
    (G,) = draws.values()
    assert G.shape[0] == 2 and G.shape[1] == 60  # the approximate sampler's chains and draws
    # with a per-chain quantity chosen (the page's default), the overlay shows the first weight
    at.selectbox(key="diag_param").set_value(0).run()
    _ok(at)
    assert len(at.get("plotly_chart")) == n_charts + 1
    assert any(c.value.startswith("Histograms of w[x1]") for c in at.caption)


def test_a_binary_only_method_on_three_classes_says_why_it_was_replaced():
    """A link (or a remembered choice) with S-BSVM on iris used to switch silently to PlattSVM."""
    if not any(m.available and m.binary_only for m in METHODS.values()):
        pytest.skip("no binary-only method available")
    binary_only = next(m for m in METHODS.values() if m.available and m.binary_only)
    at = _app(sample="iris.csv", method=binary_only.key)
    at.switch_page("views/train.py").run()
    _ok(at)
    assert any("two classes only" in w.value and binary_only.label in w.value for w in at.warning), \
        [w.value for w in at.warning]
    _button(at, "Start").click().run()  # the replacement runs
    run = at.session_state["run"]
    _until(lambda: run.status != "running" and not run.busy)
    at.run()
    _ok(at)
    assert any("two classes only" in w.value for w in at.warning)
    # choosing a multi-class method on purpose ends the note
    ok = [m.key for m in METHODS.values() if m.available and not m.binary_only]
    if len(ok) > 1:
        at.selectbox(key="w:cfg:method").set_value(ok[1]).run()
        _ok(at)
        assert not any("two classes only" in w.value for w in at.warning)
    at.switch_page("views/compare.py").run()
    _ok(at)
    assert any("two classes only" in c.value for c in at.caption)


def test_train_page_shows_the_cost_and_refuses_a_run_that_cannot_fit():
    cost = pytest.importorskip("bsvm.cost")
    at = _app(sample="ripley.csv", method="platt")
    at.switch_page("views/train.py").run()
    _ok(at)
    assert any("Estimated cost" in c.value for c in at.caption), [c.value for c in at.caption]
    assert not _button(at, "Start").disabled
    with cost.limits(max_memory=1):  # a one-byte ceiling: nothing fits
        at.run()
        _ok(at)
        assert any("cannot fit in memory" in e.value for e in at.error), [e.value for e in at.error]
        assert _button(at, "Start").disabled and _button(at, "Step").disabled
        # no "Press Start" under the refusal, and its words are the page's (a crawl)
        assert not any("Press **Start**" in i.value for i in at.info)
    at = _app(sample="ripley.csv", method="msbpm")
    at.switch_page("views/train.py").run()
    with cost.limits(max_memory=3_000_000):  # room for some rows, not all
        at.run()
        _ok(at)
        (said,) = [e.value for e in at.error if "cannot fit in memory" in e.value]
        assert said.split(": ", 1)[1].startswith("MS-BPM needs") and "use S-BSVM" in said, said
        assert "training rows (now 175: a larger Test fraction on the Data page" in said, said
        assert "subsample" not in said and "MSBPM" not in said


def test_a_long_run_keeps_a_bounded_history(monkeypatch):
    import dashboard.runner as runner

    class Endless:
        def fit_iter(self, X, y):
            self.history_ = []
            for i in range(1, 101):
                rec = Progress(i, 0.001 * i, {"elbo": float(i)}, {})
                self.history_.append(rec)
                yield rec

    monkeypatch.setattr(runner, "MAX_RECORDS", 10)
    run = Run(Endless(), None, None)
    run.start()
    assert run.join(10) and run.status == "done" and run.records == 100
    its = [r.iteration for r in run.history]
    assert len(its) <= 20 and its[0] == 1 and its[-1] == 100 and its == sorted(its)


def test_a_big_upload_is_parsed_by_a_background_job():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(110_000, 2))
    rows = "\n".join(f"{a:.6f},{b:.6f},{int(a + b > 0)}" for a, b in X)
    content = ("u,v,label\n" + rows + "\n").encode()
    assert len(content) > 2 * 2**20  # above the Data page's BIG_UPLOAD (2 MB): parsed in the background
    at = _upload(_app(), content, name="big.csv")
    _ok(at)
    job = at.session_state["_registry"].get("csv")
    assert job is not None and job.meta["key"] == at.session_state["upload"]["digest"]
    _until(lambda: job.status == "done")
    _until(lambda: any(m.label == "training rows" for m in at.metric), at=at)
    _ok(at)
    assert int({m.label: m.value for m in at.metric}["features"]) == 2
    assert not _workers()


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_train_run_computes_in_a_child_process_that_never_outlives_its_run():
    """Stop keeps the child (idle, holding the generator for Continue); Reset, the session's end and a
    server that goes away all end it: no child is ever left behind."""
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("bsvm.sbsvm")
    at = _app(sample="ripley.csv", method="sbsvm", **{"o.max_iter": "1000000", "o.tol": "0",
                                                       "o.patience": "1000000"})
    run = _start_and_run(at, records=2)
    assert isinstance(run, ProcessRun) and run.pid not in (None, os.getpid())
    child = psutil.Process(run.pid)
    _button(at, "Stop").click().run()
    assert run.join(0.5) and run.status == "stopped"
    assert not _gone(child.pid)  # kept for Continue ...
    assert child.cpu_percent(interval=0.3) < 20  # ... idle
    _button(at, "Reset").click().run()
    _ok(at)
    _until(lambda: _gone(child.pid), 3)

    X, y = make_ripley(80, random_state=0)
    from bsvm import SBSVM

    reg = Registry()  # a session's registry: its finaliser cancels what still runs
    r = reg.put("fit", ProcessRun(SBSVM(max_iter=10**6, tol=0.0, patience=10**9, random_state=0), X, y))
    _until(lambda: r.records >= 1, 30)
    pid = r.pid
    del reg
    gc.collect()
    _until(lambda: _gone(pid), 3)
    assert r.status == "cancelled"

    r = ProcessRun(SBSVM(max_iter=10**6, tol=0.0, patience=10**9, random_state=0), X, y)
    r.start()
    _until(lambda: r.records >= 1, 30)
    r._conn.close()  # the server's end of the pipe goes away (as when the server dies)
    _until(lambda: _gone(r.pid), 3)
    _until(lambda: r.status == "failed", 5)
    assert "ended unexpectedly" in r.error and not r.busy


def test_stop_in_a_fits_set_up_acts_at_once_and_continue_starts_it_again():
    """MS-BPM's set-up on 5,000 rows comes before its first record (1.4 s here; 7 s on a user's CSV),
    and a Stop used to wait for that record: now the child is ended at once (nothing to keep) and
    Continue starts a new one; a stray message of the ended child never lands on the run."""
    pytest.importorskip("bsvm.msbpm")
    from bsvm import MSBPM

    X, y = make_ripley(5000, random_state=0)
    t_set_up = time.perf_counter()
    next(MSBPM(random_state=0).fit_iter(X, y))
    t_set_up = time.perf_counter() - t_set_up
    r = ProcessRun(MSBPM(random_state=0), X, y)
    r.start()
    _until(lambda: r.pid is not None, 30)
    child = r.pid
    time.sleep(0.1)
    assert r.records == 0 and r.busy  # still setting up
    t0 = time.perf_counter()
    r.stop()
    assert r.join(0.5), "Stop waited for the first record"
    assert time.perf_counter() - t0 < 0.5 and r.status == "stopped" and r.records == 0 and not r.fitted
    _until(lambda: _gone(child), 3)
    time.sleep(min(t_set_up, 2.0))  # past when the ended child would have sent its first record
    assert r.status == "stopped" and r.history == [] and not r.error  # its reader left the run alone
    r.resume()
    _until(lambda: r.records >= 1, 60)
    assert r.pid not in (None, child) and r.status in ("running", "done")
    r.cancel()
    assert r.status in ("cancelled", "done")


def test_a_pause_while_the_child_starts_acts_at_once_and_no_child_is_left(monkeypatch):
    """On a freshly opened server a Start waits for the forkserver's imports (seconds); it did so inside
    the click's callback, and a Pause clicked meanwhile took 1.8-2.8 s (a crawl). The child now starts in
    a thread of its own; a Pause before it exists means it is never started, and Continue starts it."""
    pytest.importorskip("bsvm.sbsvm")
    from bsvm import SBSVM
    from dashboard import procrun

    procrun._ensure_forkserver()  # running (the test's own start is simulated below)
    # a forkserver that is not up yet, and takes 1.5 s to come up
    starting = threading.Event()
    monkeypatch.setattr(procrun, "_READY", starting)
    monkeypatch.setattr(procrun, "_ensure_forkserver",
                        lambda timeout=120.0: (time.sleep(1.5), starting.set()))
    X, y = make_ripley(80, random_state=0)
    r = ProcessRun(SBSVM(max_iter=10**6, tol=0.0, patience=10**9, random_state=0), X, y)
    t0 = time.perf_counter()
    r.start()
    r.pause()
    assert time.perf_counter() - t0 < 0.5 and r.join(0.5) and r.status == "paused"
    time.sleep(2.0)  # past the slow start
    assert r.pid is None and r.records == 0 and not r.busy  # no child was started
    r.resume()
    _until(lambda: r.records >= 1, 60)
    assert r.pid is not None and r.status == "running"
    r.cancel()


def test_a_process_run_steps_pauses_and_hands_back_a_model_that_predicts():
    pytest.importorskip("bsvm.sbsvm")
    from bsvm import SBSVM

    X, y = make_ripley(80, random_state=0)
    r = ProcessRun(SBSVM(random_state=0), X, y)
    r.step(2, wait=30)
    assert r.join(30)
    # two records past S-BSVM's record of its starting state (iteration 0), which a Step does not count
    assert r.status == "paused" and not r.busy and r.records == 3 and r.fitted
    assert r.history[0].iteration == 0 < r.history[1].iteration
    assert r.model.predict_proba(X[:3]).shape == (3, 2)
    r.resume()
    assert r.wait(60) and r.status == "done" and r.join(5)
    ref = SBSVM(random_state=0).fit(X, y)  # the same seed gives the same fit in the child
    np.testing.assert_allclose(r.estimator.predict_proba(X), ref.predict_proba(X), rtol=1e-6, atol=1e-9)
    assert len(r.history) == len(ref.history_) and r.estimator.history_ is r.history
    bad = ProcessRun(SBSVM(tau=-1.0), X, y)
    bad.start()
    assert bad.join(30) and bad.status == "failed" and "tau" in bad.error


def test_the_playground_refit_is_a_registry_job_and_draws_its_map():
    at = _app()
    at.selectbox(key="w:cfg:sample").set_value("playground").run()
    _ok(at)
    job = at.session_state["_registry"].get("playground_refit")
    assert job is not None and job.page == "data"
    # named as the run and saying what it does ("Stopped Fitting Subgradient MCMC (HMC, SGLD, SGNHT): the
    # data changed." was all a user saw while the map was gone, a crawl); no such toast on an edit
    assert job.label.startswith("Refitting ") and "training points" in job.label and "(" not in job.label
    assert job.meta.get("replaced_quietly")
    _until(lambda: job.status in ("done", "failed"), 60)
    assert job.status == "done", job.error
    # the refitted map is drawn under the canvas's points (it was a second chart below the fold)
    _until(lambda: "heatmap" in _canvas_traces(at), 30, at=at)
    _ok(at)
    assert [t for t in at.get("plotly_chart") if getattr(t, "key", None) == "pg_map"] == []
    assert any("Under the points, the refitted model" in c.value for c in at.caption)
    # S-BSVM's black triangles named in the caption too (their legend row is below a projector's fold)
    assert any("Black marks: the model's inducing points, not data points." in c.value for c in at.caption)
    assert _canvas_heat(at)["opacity"] == 1.0
    # an edit: its refit starts in this script run, and meanwhile the last map is drawn faded, so the
    # canvas does not flash white at every click
    from dashboard import playground as PG

    at.session_state["playground"] = PG.edit(at.session_state["playground"], 0.0, 0.0, PG.ADD_1)
    at.run()
    assert _canvas_heat(at)["opacity"] < 1.0
    assert any("faded while the refit runs" in c.value for c in at.caption)
    new = at.session_state["_registry"].get("playground_refit")
    assert new is not job
    _until(lambda: new.status in ("done", "failed"), 60)
    _until(lambda: _canvas_heat(at)["opacity"] == 1.0, 30, at=at)
    _ok(at)


def _canvas_spec(at) -> list[dict]:
    """The playground canvas's traces: the figure its click component (livechart.click_chart) was given."""
    import json

    def find(node):
        for c in getattr(node, "children", {}).values():
            if getattr(c, "key", None) == "pg_canvas" and hasattr(c.proto, "json"):
                return c
            if (found := find(c)) is not None:
                return found
        return None

    el = find(at.main)
    if el is None:
        return []
    return json.loads(json.loads(el.proto.json)["fig"])["data"]


def _canvas_traces(at) -> list[str]:
    return [t.get("type", "scatter") for t in _canvas_spec(at)]


def _canvas_heat(at) -> dict:
    return next((t for t in _canvas_spec(at) if t.get("type") == "heatmap"), {"opacity": None})


def test_a_playground_link_reopens_its_generator_points_and_noise():
    """?sample=playground&pg=moons&pg_n=300&noise=0.25 opens the playground with those settings (a teacher's
    shared demo); out-of-range values are left out; the page's settings go back into the link."""
    at = _app(sample="playground", pg="moons", pg_n="300", noise="0.25", seed="4")
    _ok(at)
    assert not at.warning  # no "default value and Session State" warning from Streamlit
    assert at.session_state["cfg"]["sample"] == "playground"
    pg = at.session_state["playground"]
    assert len(pg.y) == 300 and at.session_state["pg_settings"] == ("moons", 300, 0.25, 4)
    assert {k: at.query_params.get(k) for k in ("sample", "pg", "pg_n", "noise", "seed")} in (
        {"sample": "playground", "pg": "moons", "pg_n": "300", "noise": "0.25", "seed": "4"},
        {"sample": ["playground"], "pg": ["moons"], "pg_n": ["300"], "noise": ["0.25"], "seed": ["4"]})
    # the playground (and its edits) outlives a visit to another page: Streamlit forgets the widgets of a
    # page that did not run, and the Data page used to redraw a default Ripley playground on return
    from dashboard import playground as PG

    edited = PG.edit(pg, 0.0, 0.0, PG.ADD_1)
    at.session_state["playground"] = edited
    at.switch_page("views/train.py").run()
    at.switch_page("views/data.py").run()
    _ok(at)
    assert at.session_state["pg_settings"] == ("moons", 300, 0.25, 4)
    assert len(at.session_state["playground"].y) == 301 and at.session_state["playground"].edited
    odd = _app(sample="playground", pg="spiral", pg_n="5000", noise="9")  # unknown / out of range
    _ok(odd)
    assert odd.session_state["pg_settings"][:2] == ("ripley", 200)
    # the generator's default noise stays out of the link (Ripley's sqrt(0.03) read "noise=0.173205")
    assert "noise" not in odd.query_params and odd.query_params.get("pg") in ("ripley", ["ripley"])


def test_a_playground_link_to_the_train_page_opens_its_points():
    """A shared link straight to the Train page with the playground: its points are drawn from the
    link's settings there (it said "Choose a data set on the Data page first"), and the Data page keeps
    the same draw; an empty canvas asks for points instead of showing an error."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["_live_loop_seconds"] = 0.0
    for k, v in {"sample": "playground", "pg": "xor", "pg_n": "300", "noise": "0.5", "seed": "0",
                 "method": "gibbs"}.items():
        at.query_params[k] = v
    at.switch_page("views/train.py").run()
    _ok(at)
    assert not any("Choose a data set" in i.value for i in at.info)
    pg = at.session_state["playground"]
    assert (pg.generator, len(pg.y), pg.noise) == ("xor", 300, 0.5)
    assert at.session_state["data"].n_features == 2 and _button(at, "Start").disabled is False
    # the data's key names the points: the same at the next rerun (it was computed before the points
    # were drawn, changed then, and the link's first Start was stopped at once as "made for other data")
    key = at.session_state["data"].key
    assert key.startswith("playground:" + pg.digest)
    _button(at, "Start").click().run()
    run = at.session_state["run"]
    _until(lambda: run.status == "done", 120)
    at.run()
    _ok(at)
    assert at.session_state["data"].key == key and run.status == "done"
    assert not any("made for other data" in i.value for i in at.info)
    at.switch_page("views/data.py").run()
    _ok(at)
    assert at.session_state["playground"] is pg  # the same points, not a second draw
    blank = _app(sample="playground", pg="blank")
    _ok(blank)
    assert not blank.error, [e.value for e in blank.error]
    assert any("Click on the canvas to add points" in i.value for i in blank.info)
    assert any("an empty canvas" in c.value for c in blank.caption)
    assert len(blank.session_state["playground"].y) == 0  # empty (it began with four points)
    blank.switch_page("views/train.py").run()
    _ok(blank)
    said = [i.value for i in blank.info]
    assert any("Click on the canvas (on the Data page) to add points" in v for v in said), said
    assert not any("upload" in v or "Choose a data set" in v for v in said), said  # there is no file


@pytest.mark.parametrize("query", [{"seed": "-1"}, {"seed": "3000000000"}, {"test": "0.07"}, {"test": "0.9"}])
def test_a_link_with_a_value_outside_a_widgets_range_is_ignored(query):
    """?seed=-1 raised Streamlit's below-min error on the Data page once the setting became the widget's
    default; values outside the seed box or the test-fraction slider are left out of a link."""
    at = _app(sample="ripley.csv", **query)
    _ok(at)
    c = at.session_state["cfg"]
    assert c["seed"] == 0 and c["test"] == 0.3
    (w,) = [w.value for w in at.warning if "The link's" in w.value]  # said, once
    assert ("seed" if "seed" in query else "test fraction") in w
    at.run()
    assert not [w.value for w in at.warning if "The link's" in w.value]


def test_a_link_with_a_mistyped_sample_or_method_says_what_it_shows_instead():
    """?sample=nonexistent.csv&method=foo opened Ripley and S-BSVM without a word; ?method=hmc, the
    natural name of the subgradient sampler, too; a reloaded upload fell back with a label message."""
    at = _app(sample="nonexistent.csv", method="foo", test="abc", seed="5")
    _ok(at)
    said = " ".join(w.value for w in at.warning)
    assert "'nonexistent.csv' is not one of the shipped samples" in said and "method 'foo'" in said
    assert at.session_state["cfg"]["seed"] == 5  # a test fraction that is no number did not lose the seed
    at = _app(sample="ripley.csv", method="sgld")
    _ok(at)
    c = at.session_state["cfg"]
    assert c["method"] == "subgradient_hmc" and c["opts"]["subgradient_hmc"]["sampler"] == "sgld"
    assert not at.warning
    at = _app(sample="upload")
    _ok(at)
    assert any("uploaded CSV, which a new session does not have" in w.value for w in at.warning)
    # the link of an upload names it (it had no sample=, so a new session opened the first sample) and its
    # label column is the file's: "Label column 'klasse' not found" on the sample shown instead (a crawl)
    at = _app(sample="upload", label="klasse", features="a,b")
    _ok(at)
    assert any("uploaded CSV, which a new session does not have" in w.value for w in at.warning)
    assert not at.error and at.session_state["data"].label_name == "label"
    at = _upload(_app(), b"x1,x2,klasse\n" + b"".join(b"%d,%d,%s\n" % (i, i % 7, b"ab"[i % 2:i % 2 + 1])
                                                      for i in range(30)))
    _ok(at)
    assert at.query_params["sample"] in ("upload", ["upload"]), dict(at.query_params)
    # a link straight to another page with a label column the sample does not have: the likely one, said
    # in the page's words (it read "Label column 'klasse' not found ... Pass label= one of them")
    from _apptest import APP
    from streamlit.testing.v1 import AppTest

    for query in ({"sample": "upload", "label": "klasse"}, {"label": "klasse"}):
        at = AppTest.from_file(APP, default_timeout=60)
        for k, v in query.items():
            at.query_params[k] = v
        at.switch_page("views/calibration.py").run()
        _ok(at)
        assert not at.error, [e.value for e in at.error]
        assert at.session_state["cfg"]["label"] == "label"
    assert any("(from the link) is not a column of this data set" in w.value for w in at.warning)


def test_a_live_snapshot_thins_a_samplers_draws_consistently():
    """The live map's snapshot keeps LIVE_DRAWS evenly spaced draws per run (the newest of each chain
    among them), the same draws of every per-draw array; other attributes are left alone."""
    from types import SimpleNamespace

    from dashboard import procrun

    C, D = 4, 1000
    draws = np.arange(C * D * 3, dtype=float).reshape(C, D, 3)
    view = SimpleNamespace(samples_=draws, potential_=draws[..., 0].copy(), coef_=np.ones((C, 7)),
                           kernel_=np.ones((C, D - 1)))
    procrun._live_view(view)
    kept = view.samples_.shape[1]
    assert view.samples_.shape == (C, kept, 3) and C * kept <= procrun.LIVE_DRAWS and kept >= 10
    np.testing.assert_array_equal(view.samples_[:, -1], draws[:, -1])  # the newest draw is shown
    np.testing.assert_array_equal(view.potential_, view.samples_[..., 0])  # the same draws
    assert view.coef_.shape == (C, 7) and view.kernel_.shape == (C, D - 1)
    few = SimpleNamespace(samples_=draws[:, :10])
    procrun._live_view(few)
    assert few.samples_.shape == (C, 10, 3)  # nothing to thin


def test_a_thinned_sampler_snapshot_predicts_close_to_the_full_one():
    import copy

    from dashboard import procrun

    m = METHODS["gibbs"]
    if not m.available:
        pytest.skip("GibbsSVM unavailable")
    X, y = make_ripley(80, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short chain: not converged, which does not matter here
        est = m.make({**m.defaults(), "n_samples": 300, "n_burnin": 50, "n_chains": 2}, 0)
        est.fit(X, y, progress=False)
    C, D = est.samples_.shape[:2]
    assert C * D > procrun.LIVE_DRAWS  # there is something to thin
    view = copy.copy(est)
    procrun._live_view(view)
    assert view.samples_.shape[0] * view.samples_.shape[1] <= procrun.LIVE_DRAWS
    grid = np.random.default_rng(1).uniform(-1.5, 1.5, (200, 2))
    gap = np.abs(view.predict_proba(grid) - est.predict_proba(grid)).max()
    # Monte Carlo error of a mean over ~LIVE_DRAWS correlated draws: well under 0.1 here (measured 0.03)
    assert gap < 0.1, gap


def test_a_process_run_sends_snapshots_on_request_and_on_halt_only():
    pytest.importorskip("bsvm.sbsvm")
    from bsvm import SBSVM

    X, y = make_ripley(80, random_state=0)
    r = ProcessRun(SBSVM(max_iter=10**6, tol=0.0, patience=10**9, random_state=0), X, y)
    r.start()
    try:
        _until(lambda: r.records >= 20, 30)
        assert r.snapshot_id == 0 and not r.fitted  # none unasked
        r.want_snapshot()
        r.want_snapshot()  # one request outstanding at a time
        _until(lambda: r.snapshot_id == 1, 10)
        assert r.fitted and r.model.predict_proba(X[:3]).shape == (3, 2)
        rec = r.records
        _until(lambda: r.records >= rec + 20, 30)
        assert r.snapshot_id == 1
        r.stop()
        assert r.join(5) and r.status == "stopped"
        assert r.snapshot_id == 2 and r.model.predict_proba(X[:3]).shape == (3, 2)  # the halt's
    finally:
        r.cancel()


def test_the_forkserver_preloads_the_estimators_whatever_the_working_directory_with_one_blas_thread(tmp_path):
    """``streamlit run /path/to/dashboard/app.py`` from another directory: the forkserver must still
    import (and warm up) ``dashboard.procrun`` and the estimators, so a Start click pays a fork only.
    (Python 3.11's forkserver does not apply the parent's sys.path before its preload.)"""
    import subprocess

    probe = ("import sys; sys.exit(0 if {'dashboard.procrun', 'bsvm.sbsvm', 'bsvm.msbpm'} <= set(sys.modules)"
             " else 3)")
    # and a fit's child has one BLAS/OpenMP thread (a pool started anew in each child spun beside its fit),
    # while the server's own environment is left as it was
    threads = ("import numpy as np, threadpoolctl; np.ones((64, 64)) @ np.ones((64, 64)); "
               "import sys; sys.exit(0 if {i['num_threads'] for i in threadpoolctl.threadpool_info()} == {1} "
               "else 4)")
    code = (f"import os, sys; sys.path.insert(0, {str(ROOT)!r})\n"  # as app.py does
            "from dashboard import procrun\n"
            "procrun.prewarm(0); procrun._ensure_forkserver()\n"
            f"p = procrun.context().Process(target=exec, args=({probe!r},))\n"
            "p.start(); p.join(120); print(p.exitcode)\n"
            f"p = procrun.context().Process(target=exec, args=({threads!r},))\n"
            "p.start(); p.join(120); print(p.exitcode)\n"
            "print(sorted(k for k in procrun.ONE_THREAD + ('PYTHONPATH',) if k in os.environ))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.stdout.strip().splitlines()[-3:] == ["0", "0", "[]"], out.stdout + out.stderr[-2000:]


def test_a_select_option_whose_default_is_none_shows_none_not_an_empty_box():
    """SubgradientHMC's ``features=None`` (raw inputs): the selectbox shows "none", not Streamlit's
    "Choose an option" placeholder; choosing another value and back gives the library's None again."""
    pytest.importorskip("bsvm.subgradient")
    from dashboard import ui

    at = _app(sample="ripley.csv", method="subgradient_hmc")
    at.switch_page("views/train.py").run()
    _ok(at)
    box = at.selectbox(key="w:opt:subgradient_hmc:features")
    assert box.value == ui.NONE and box.options[0] == ui.NONE
    assert at.session_state["cfg"]["opts"]["subgradient_hmc"]["features"] is None
    box.set_value("nystroem").run()
    assert at.session_state["cfg"]["opts"]["subgradient_hmc"]["features"] == "nystroem"
    assert at.query_params.get("o.features") in ("nystroem", ["nystroem"])
    at.selectbox(key="w:opt:subgradient_hmc:features").set_value(ui.NONE).run()
    _ok(at)
    assert at.session_state["cfg"]["opts"]["subgradient_hmc"]["features"] is None
    assert "o.features" not in at.query_params


def test_a_job_fit_that_runs_to_its_stopping_rule_shows_how_far_it_has_come():
    """The exact sampler on Diagnostics runs until its rule is met (no length): its job's bar counts the
    effective draws of its last check against those wanted (it stayed empty all run)."""
    from bsvm.subgradient import GibbsSVM
    from dashboard.runner import Token, fit_in_job

    X, y = make_ripley(120, random_state=0)
    seen = []

    class Spy(Token):
        def progress(self, fraction, text=""):
            seen.append((fraction, text))
            super().progress(fraction, text)

    token = Spy()
    est = fit_in_job(token, GibbsSVM(n_chains=2, random_state=0), X, y, None, "GibbsSVM")
    assert est.samples_.shape[1] > 0
    checked = [(f, t) for f, t in seen if "last check" in t]
    assert checked, seen[-3:]
    fractions = [f for f, _ in checked]
    assert 0.0 < max(fractions) <= 0.99
    assert all(b >= a for a, b in zip(fractions, fractions[1:])), fractions  # never steps back
    assert "wanted" in checked[-1][1]


def test_a_run_that_stops_by_its_own_rule_says_it_converged():
    """SeegerARD on the Ripley sample stops after about 9 of its at most 50 outer steps, when its free
    energy settles: "done: iteration 9 / 50" read as cut short."""
    pytest.importorskip("bsvm.seeger")
    at = _app(sample="ripley.csv", method="seeger")
    at.switch_page("views/train.py").run()
    _button(at, "Start").click().run()
    run = at.session_state["run"]
    _until(lambda: run.status == "done", 120)
    at.run()
    _ok(at)
    assert run.model.converged_ and run.iteration < run.max_iter
    texts = [p.text for p in at.get("progress")]
    assert any(f"(converged; at most {run.max_iter})" in t for t in texts), texts


def test_a_waiting_click_is_seen_and_fast_reruns_are_off(monkeypatch):
    """A click on a sidebar link just after a run ended reran the Train page: with Streamlit's fast reruns
    a second script thread ran beside the old one and the old one's st.navigation set the page back.
    The dashboard turns fast reruns off, so a click waits for the running script's next element; the
    Train page's live loop looks for one (state.rerun_waiting) and gives way at once."""
    from streamlit import config
    from streamlit.runtime.scriptrunner_utils import script_run_context as src
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    from dashboard import state as S

    before = config.get_option("runner.fastReruns")
    try:
        config._set_option("runner.fastReruns", True, "test")
        S.runner_options()
        assert config.get_option("runner.fastReruns") is False
    finally:
        config._set_option("runner.fastReruns", before, "test")

    class Ctx:
        script_requests = ScriptRequests()

    monkeypatch.setattr(src, "get_script_run_ctx", lambda *a, **k: Ctx)
    assert not S.rerun_waiting()
    Ctx.script_requests.request_rerun(RerunData(page_script_hash="train", fragment_id="live",
                                                is_auto_rerun=True))
    assert not S.rerun_waiting()  # a fragment's timer does not stop the running script
    Ctx.script_requests = ScriptRequests()
    Ctx.script_requests.request_rerun(RerunData(page_script_hash="data"))
    assert S.rerun_waiting()  # a click does


def test_a_timers_rerun_does_not_undo_a_click_on_another_page():
    """With fast reruns off, Streamlit merges a waiting click with a later request and keeps the newer
    one's page: a fragment timer ticking just after a click on a sidebar link would send the user back.
    With state.guard_navigation the timer's request keeps the click's page; two clicks still end on the
    second, and a timer alone reruns its own page."""
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    from dashboard import state as S

    assert S.guard_navigation()
    click = ScriptRequests()
    click.request_rerun(RerunData(page_script_hash="data", query_string="sample=a"))
    click.request_rerun(RerunData(page_script_hash="train", fragment_id="live", is_auto_rerun=True))
    assert click._rerun_data.page_script_hash == "data" and click._rerun_data.query_string == "sample=a"
    two = ScriptRequests()
    two.request_rerun(RerunData(page_script_hash="data"))
    two.request_rerun(RerunData(page_script_hash="compare"))
    assert two._rerun_data.page_script_hash == "compare"
    timer = ScriptRequests()
    timer.request_rerun(RerunData(page_script_hash="train", fragment_id="live", is_auto_rerun=True))
    assert timer._rerun_data.page_script_hash == "train"
    # the tab's id (dashboard/tabs.py), reported with the page the browser showed: never a page change,
    # whether the click on a link waits (queued) or has started running (consumed)
    from streamlit.proto.WidgetStates_pb2 import WidgetStates

    def report(page):
        states = WidgetStates()
        states.widgets.add(id="$$ID-abc-bsvm_tab", json_value='{"tab": "t1"}')
        return RerunData(page_script_hash=page, widget_states=states)

    queued = ScriptRequests()
    queued.request_rerun(RerunData(page_script_hash="calibration", query_string="sample=a"))
    queued.request_rerun(report("train"))
    assert queued._rerun_data.page_script_hash == "calibration"
    running = ScriptRequests()
    running.request_rerun(RerunData(page_script_hash="calibration"))
    running.on_scriptrunner_ready()  # the click's run has started
    running.request_rerun(report("train"))
    assert running._rerun_data.page_script_hash == "calibration"
    first = ScriptRequests()  # a session's first report, on the page it opened: no change
    first.request_rerun(report("train"))
    assert first._rerun_data.page_script_hash == "train"
    # once reported, the id rides along with every request: a click on a link after a fragment's timer
    # rerun (no widget states) is a click, not a report (Diagnostics never opened after a stopped run)
    later = ScriptRequests()
    later.request_rerun(report("train"))
    later.on_scriptrunner_ready()
    later.request_rerun(RerunData(page_script_hash="train", fragment_id="live", is_auto_rerun=True))
    later.on_scriptrunner_ready()
    later.request_rerun(report("diagnostics"))  # the link's click, the same id among its widget states
    assert later._rerun_data.page_script_hash == "diagnostics"


def test_garbage_is_collected_at_a_page_runs_end_not_when_a_click_interrupts_it():
    """Streamlit's full collection after every script run (runner.postScriptGC) also ran after a run that a
    click interrupted, and the click waited for it (0.1-0.5 s). It is off; app.py collects at the end of a
    page run that was not interrupted (state.collect_garbage). A closed session is still freed (its run
    registry sits in reference cycles, and its finaliser cancels the fits it left running) at the next page
    run of any session: gc.freeze, tried first, kept it alive."""
    import gc
    import weakref

    from streamlit import config

    from dashboard import state as S

    class Node:
        pass

    was_enabled = gc.isenabled()
    gc.disable()  # only the collections asked for happen
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        S.collect_garbage(interrupted=True)  # a click is waiting: nothing is collected
        assert gone() is not None
        S.collect_garbage(interrupted=False)
        assert gone() is None

        first = _app(sample="ripley.csv")
        assert config.get_option("runner.postScriptGC") is False  # app.py turned Streamlit's off
        reg = weakref.ref(first.session_state["_registry"])
        del first  # the tab is closed
        assert reg() is not None  # in cycles: reference counting alone does not free it
        _app(sample="ripley.csv")  # another session's page run
        assert reg() is None
    finally:
        if was_enabled:
            gc.enable()


def test_leaving_a_page_lets_a_run_that_has_done_its_last_iteration_finish():
    """A run halted by a page change after its last record but before its fit ended (its final check)
    showed "stopped: iteration 3100 / 3100" with Continue on (a crawl): a run whose budget is done is left
    to finish; one with iterations to go is stopped, and named."""

    class _Stub(Run):
        def __init__(self, it, max_iter, metrics=None):
            super().__init__(object(), None, None, max_iter=max_iter, page="train")
            self.status = "running"
            self._hist = [Progress(it, 0.1, dict(metrics or {}), {})]
            self.stopped = None

        @property
        def history(self):
            return self._hist

        def stop(self, note=""):
            self.stopped, self.status = note, "stopped"

    reg = Registry()
    # S-BSVM's kernel="auto": max_iter caps each candidate's fit while the count runs on (a review)
    ending, going, staged = _Stub(3100, 3100), _Stub(3007, 3100), _Stub(1200, 1000, {"stage": 2.0})
    reg.items.update(ending=ending, going=going, staged=staged)
    halted = reg.halt_page("train", "you left the Train page")
    assert halted == [going, staged] and going.stopped == "you left the Train page"
    assert ending.stopped is None and ending.status == "running"


def test_msbpms_pair_plot_starts_with_its_summaries_not_kernel_weights():
    """MS-BPM's parameters are kernel weights of +-50,000 that trade off against each other: its default
    pair plot showed three of them (a crawl). It starts with the log posterior, log likelihood and
    training error; a linear sampler's starts with its weights (see the overlay test above)."""
    pytest.importorskip("bsvm.msbpm")
    at = _app(sample="ripley.csv", method="msbpm", **{"o.n_samples": "40"})
    _run_to_end_then_diagnostics(at)
    at.session_state["diag_tab"] = "ESS, energy and pairs"
    at.run()
    _ok(at)
    pair = at.multiselect(key="diag_pair")
    assert [pair.options[j] for j in pair.value] == ["log posterior", "log likelihood", "train error"]


def test_the_explanation_stays_open_through_the_first_run_and_closed_after():
    """'What am I looking at?' closed at the Start click (the browser re-laid out the column while the fit
    ran); now it closes once the first run has ended, a later Start does not reopen it, Reset does."""
    pytest.importorskip("bsvm.sbsvm")
    at = _app(loop=0.0, sample="ripley.csv", method="sbsvm",
              **{"o.max_iter": "1000000", "o.tol": "0", "o.patience": "1000000000"})
    at.switch_page("views/train.py").run()
    opened = lambda: at.expander[0].proto.expanded  # noqa: E731
    assert opened()
    _button(at, "Start").click().run()
    run = at.session_state["run"]
    assert run.status == "running" and opened()  # (the first run: still open)
    _button(at, "Stop").click().run()
    _until(lambda: run.status == "stopped" and not run.busy)
    at.run()
    _ok(at)
    assert not opened()
    _button(at, "Start").click().run()
    assert at.session_state["run"].status == "running" and not opened()
    _button(at, "Reset").click().run()
    _ok(at)
    assert opened()


def test_a_finished_samplers_final_map_uses_at_most_final_draws_evenly_spaced():
    """MS-BPM on 5 classes (7,600 draws, 50 ms per predicted point) held the Train page 130 s after "done"
    for its final map and accuracy line: they now average over about FINAL_DRAWS draws (per-draw arrays
    thinned together); a model with fewer draws is used as it is."""
    from types import SimpleNamespace

    from dashboard.procrun import thinned

    s = np.arange(4 * 500 * 3, dtype=float).reshape(4, 500, 3)
    model = SimpleNamespace(samples_=s, potential_=s[..., 0].copy(), classes_=np.array([0, 1]))
    view, had = thinned(model, 1000)
    assert had == 2000 and view is not model and model.samples_ is s  # the fitted model is untouched
    assert view.samples_.shape == (4, 250, 3) and view.samples_[:, -1].tolist() == s[:, -1].tolist()
    np.testing.assert_array_equal(view.potential_, view.samples_[..., 0])  # the same draws of each array
    same, none = thinned(model, 5000)
    assert same is model and none is None


def test_a_finished_samplers_map_takes_fewer_draws_when_they_would_take_long():
    """MS-BPM on 5 classes spent 14-24 s on its 1,000-draw final map after "done", longer than its fit:
    a map's draws are cut to what fits FINAL_MAP_SECONDS (timed on a probe), never below MIN_MAP_DRAWS;
    a cheap model keeps FINAL_DRAWS; a model without draws is used as it is."""
    from types import SimpleNamespace

    from dashboard.procrun import FINAL_DRAWS, MIN_MAP_DRAWS, map_model

    class Voter:  # predicting costs CPU in proportion to draws x points, as a sampler's vote does
        classes_ = np.array([0, 1])

        def __init__(self, draws, chains=4):
            self.samples_ = np.linspace(0, 1, chains * draws).reshape(chains, draws, 1)

        def predict_proba(self, X):
            a = np.tanh(np.outer(self.samples_.ravel(), X[:, 0]))
            p = 0.5 + 0.4 * a.mean(axis=0)
            return np.column_stack([1 - p, p])

    X = np.zeros((2000, 2))
    model = Voter(2000)
    slow, used = map_model(model, X, seconds=1e-9)
    assert used == slow.samples_.size and MIN_MAP_DRAWS <= used < 2 * MIN_MAP_DRAWS
    fast, used = map_model(model, X, seconds=1e9)  # not cut: the FINAL_DRAWS thinning
    assert used is None and FINAL_DRAWS <= fast.samples_.size < 2 * FINAL_DRAWS
    assert model.samples_.size == 8000  # the fitted model is untouched
    plain = SimpleNamespace(classes_=np.array([0, 1]))
    assert map_model(plain, X) == (plain, None)
    # the budget holds for a model with no more than FINAL_DRAWS draws too (thinned keeps it whole)
    few, used = map_model(Voter(200), X, seconds=1e-9)
    assert MIN_MAP_DRAWS <= used < 800 and few.samples_.size == used
    # whole draws per chain, never below the floor (8 chains kept 8 x 12 = 96 draws, a review)
    for chains in (3, 8, 32):
        _, used = map_model(Voter(500, chains), X, seconds=1e-9)
        assert MIN_MAP_DRAWS <= used < MIN_MAP_DRAWS + chains, (chains, used)


def test_a_run_too_quick_to_follow_suggests_slow_motion():
    """Default runs on the samples end within a few seconds, before Pause or Step can be pressed (a crawl
    as a teacher): the finished run says how to watch it record by record."""
    pytest.importorskip("bsvm.subgradient")
    at, run, _ = _finished_train_run(sample="ripley.csv", method="subgradient_hmc")
    if run.history[-1].elapsed >= 3.0:  # a loaded machine: the page rightly says nothing (a review)
        pytest.skip(f"the run took {run.history[-1].elapsed:.1f} s here, not a quick run")
    assert any("Too quick to follow? Turn on **Slow motion**" in c.value for c in at.caption)


def test_slow_motion_stays_on_after_a_visit_to_another_page():
    """A crawl: Slow motion, turned on, was off again after a trip to the Data page (Streamlit drops a
    widget's value on a page that does not draw it), and the next run finished before it could be seen."""
    at = _app(sample="ripley.csv")
    at.switch_page("views/train.py").run()
    at.toggle(key="slow_motion").set_value(True).run()
    at.switch_page("views/data.py").run()
    _ok(at)
    at.switch_page("views/train.py").run()
    _ok(at)
    assert at.toggle(key="slow_motion").value is True
    at.toggle(key="slow_motion").set_value(False).run()
    at.switch_page("views/data.py").run()
    at.switch_page("views/train.py").run()
    assert at.toggle(key="slow_motion").value is False


def test_slow_motion_says_its_rate_is_the_methods():
    """In slow motion the page shows one record per redraw, about 25 iterations a second, while the
    status line said "1,488 it/s" (a crawl): the line now says that rate is the method's computing."""
    pytest.importorskip("bsvm.subgradient")
    at = _app(loop=0.0, sample="ripley.csv", method="subgradient_hmc", **{"o.n_samples": "50000"})
    at.switch_page("views/train.py").run()
    at.toggle(key="slow_motion").set_value(True).run()
    run = _start_and_run(at, records=2)
    texts = [p.text for p in at.get("progress")]
    assert run.status == "running" and any("it/s computing (slow motion" in t for t in texts), texts
    _button(at, "Stop").click().run()
    _until(lambda: run.status == "stopped" and not run.busy)
    at.run()
    assert not any("slow motion" in p.text for p in at.get("progress"))


def test_diagnostics_offers_continue_only_for_a_run_the_train_page_can_resume():
    """After the data changed, Diagnostics said "Continue on the Train page" while Train had Continue off
    for that run (a crawl): it now says to press Start."""
    pytest.importorskip("bsvm.subgradient")
    at = _app(loop=0.0, sample="ripley.csv", method="subgradient_hmc", **{"o.n_samples": "50000"})
    run = _start_and_run(at, records=3)
    _button(at, "Stop").click().run()
    _until(lambda: run.status == "stopped" and not run.busy)
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    text = " ".join(i.value for i in at.info)
    assert "**Continue** on the Train page finishes the run" in text, text
    at.switch_page("views/data.py").run()
    at.number_input(key="w:cfg:seed").set_value(5).run()  # another split: other data
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    text = " ".join(i.value for i in at.info)
    assert "Continue" not in text and "press **Start** on the Train page" in text, text



def test_compare_shows_a_methods_scale_warning_next_to_its_fit():
    """A crawl: on unstandardised columns of very different scales PlattSVM and MS-BPM were at chance
    level, and Compare only said "It found no pattern"; their DataScaleWarning went to the server's log."""
    Xr, yr = make_ripley(120, random_state=0)
    rows = "".join(f"{a:.5f},{b * 1e6:.1f},{c}\n" for (a, b), c in zip(Xr, yr))
    at = _upload(_app(), ("x1,big,label\n" + rows).encode())
    at.session_state["cfg"]["std"] = False
    at.session_state["w:cfg:std"] = False
    at.run()
    _ok(at)
    # the Data page says it before any fit (it said nothing, over a PCA of "PC1 (100% of variance)")
    said = [w.value for w in at.warning if "scales differ" in w.value]
    assert said and "in 'big'" in said[0] and "Standardise features" in said[0]
    at.switch_page("views/compare.py").run()
    _ok(at)
    at.toggle(key="cmp_quick").set_value(True).run()
    _button(at, "Run all").click().run()
    _until(lambda: at.dataframe, at=at)
    _ok(at)
    said = [i.value for i in at.info if "It warned:" in i.value]
    assert any(s.startswith("**PlattSVM**") and "column scales differ" in s and "Standardise features" in s
               for s in said), [i.value for i in at.info]
    # in the file's column names and the page's remedy (it said "column 1" and StandardScaler)
    assert any("in column 'big'" in s and "column 1" not in s and "StandardScaler" not in s for s in said)
    # a chance-level fit blamed the features ("It found no pattern"): the scales are the likely cause
    assert not any("found no pattern" in s for s in said), said


def test_diagnostics_checks_every_quantity_on_request():
    """The R-hat table stops at MAX_TABLE quantities (the check costs ~5 ms each per 1,000 draws); a crawl
    read the green "All 200 quantities ..." over the first 200 of 560 as a verdict on all of them, and the
    CSV stopped there too. The page now says the rest are not checked, and one click checks them all:
    a stuck quantity past the cap then shows up in the table and the verdict."""
    cap = 200  # the page's MAX_TABLE (importing the page would run it)
    at = _app(sample="ripley.csv")
    n = cap + 30
    S = np.random.default_rng(0).normal(size=(4, 400, n))
    S[0, :, n - 1] += 5.0  # stuck, past the cap
    _open_diagnostics(at, Run.from_fitted(_FakeSampler(S)))
    _ok(at)
    assert len(at.dataframe[0].value) == cap
    assert any(f"The other {n - cap} quantities are not checked yet" in s.value for s in at.success)
    assert any(f"first {cap} of the {n} quantities" in c.value for c in at.caption)
    at.button(key="diag_check_all").click().run()
    _ok(at)
    table = at.dataframe[0].value
    assert len(table) == n and table["flag"].iloc[0] != "ok"
    assert any(f"1 of the {n} quantities miss" in w.value for w in at.warning)
    assert not any(b.key == "diag_check_all" for b in at.button)


def test_number_options_state_their_range_in_their_help():
    """A crawl typed 2 chains for MS-BPM (it needs 4): the box set it back with only a red "!"."""
    at = _app(sample="ripley.csv", method="msbpm")
    at.switch_page("views/train.py").run()
    _ok(at)
    assert at.number_input(key="w:opt:msbpm:n_chains").help.endswith("Allowed: at least 4, at most 1,000.")


def test_diagnostics_leaves_out_what_ms_bpm_does_not_sample_from_the_model_itself():
    """The page took MS-BPM's structural zeros from the draws' constant columns, which would also have
    hidden a chain stuck still; it now asks the model (``sampled_coefficients``), as ``to_arviz`` does."""
    from bsvm.msbpm import MSBPM

    at = _app(sample="ripley.csv")
    data = at.session_state["data"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MSBPM(random_state=0, n_samples=20, burn_in=10).fit(data.X_train, data.y_train)
    keep = m.sampled_coefficients()
    assert 0 < (~keep).sum() < keep.size
    at.session_state["run"] = Run.from_fitted(m)
    at.session_state["run_meta"] = {"method": "msbpm", "label": "MS-BPM", "options": {}, "data_key": data.key}
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    assert any(c.value.startswith(f"{(~keep).sum():,} of the model's parameters") for c in at.caption)


def _chart_png_script():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path.cwd()))
    from dashboard import figures, ui

    ui.chart(figures.empty_figure("No step size or acceptance to tune"), key="msg", name="statistics")
    ui.chart(figures.class_balance([0, 1, 1], [0, 1]), key="bars", name="balance")


def test_chart_of_a_message_has_no_png_button():
    """A message in a chart frame (GibbsSVM's statistics panel on Diagnostics) is no picture to download:
    no PNG button under it (a crawl saw one); a real chart keeps its button."""
    at = AppTest.from_function(_chart_png_script, default_timeout=60)
    at.run()
    _ok(at)
    assert [b.key for b in at.get("download_button")] == ["png:bars"]


def test_diagnostics_of_a_run_made_for_other_data_use_that_runs_own_data():
    """After the data changed, "Run GibbsSVM on the same data" fitted the new rows and its table called
    the old run biased (1.88 sd), and the posterior draws were drawn over the new points (a crawl): the
    page describes the run, on the data it was fitted to."""
    pytest.importorskip("bsvm.subgradient")
    at, run, _ = _finished_train_run(sample="ripley.csv", method="subgradient_hmc",
                                     **{"o.n_samples": "60", "o.n_burnin": "60", "o.n_chains": "2",
                                        "o.sampler": "sgnht"})
    fitted = at.session_state["data"]
    assert at.session_state["run_meta"]["data"] is fitted
    at.session_state["cfg"]["seed"] = 7  # another split: other training rows
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    assert at.session_state["data"].key != fitted.key
    assert any("made for other data" in w.value for w in at.warning)
    # the run says which sampler made it ("Subgradient MCMC (HMC, SGLD, SGNHT)" did not)
    assert any(c.value.startswith("Model: SGNHT (subgradient MCMC)") for c in at.caption)
    at.session_state["diag_tab"] = "Against the exact sampler"
    at.run()
    _button(at, "Run GibbsSVM").click().run()
    job = at.session_state["_registry"].get("diag_gibbs")
    assert job.meta["data_key"] == fitted.key and job.meta["key"][0] == fitted.key
    _until(lambda: at.session_state["gibbs_cache"], at=at)
    _ok(at)
    (key,) = at.session_state["gibbs_cache"]
    assert key[0] == fitted.key


def test_job_work_after_a_fit_checks_cancel_between_blocks_of_rows():
    """Compare's Cancel left 6-10 s of full CPU in the work after a 20,000-row MS-BPM fit (its metrics,
    map and note have no progress records): CheckedModel predicts a few hundred rows at a time and
    checks Cancel between them, with the same values as one call."""
    from sklearn.linear_model import LogisticRegression

    from dashboard.runner import Cancelled, CheckedModel, Token

    X, y = make_ripley(300, random_state=0)
    model = LogisticRegression().fit(X, y)
    token = Token()
    checked = CheckedModel(model, token, rows=64)
    np.testing.assert_array_equal(checked.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(checked.predict(X), model.predict(X))
    assert checked.classes_ is model.classes_  # anything else is the model's

    calls = []

    class Slow:
        def predict_proba(self, X):
            calls.append(len(X))
            if len(calls) == 2:
                token.cancelled = True  # the user presses Cancel while the second block runs
            return np.zeros((len(X), 2))

    with pytest.raises(Cancelled):
        CheckedModel(Slow(), token, rows=64).predict_proba(X)
    assert calls == [64, 64]  # stopped after the block that was running, not after all five


def test_calibration_names_a_run_made_for_other_data_and_downloads_name_their_data():
    """After the data changed, Calibration said "No trained model for this data yet" to a user who had
    just trained, while Train and Diagnostics warned of a run on other data; and every page's metrics
    came as one file name, so downloads from several runs overwrote each other (a crawl)."""
    at, _, _ = _finished_train_run(sample="ripley.csv", method="platt")
    at.switch_page("views/calibration.py").run()
    _until(lambda: not _workers(), at=at)
    at.run()
    _ok(at)
    from dashboard import ui

    # the file names carry the data set and the method (the run's own data set, from its meta)
    meta = at.session_state["run_meta"]
    assert ui.file_name("draws", "SGLD", meta=meta) == "draws_ripley_SGLD.csv"
    assert ui.file_name("draws", "Subgradient HMC", ext="nc",
                        meta={"cfg": {"sample": "upload"}, "upload_name": "my data (v2).csv"}) \
        == "draws_my_data_v2_Subgradient_HMC.nc"
    at.session_state["cfg"]["seed"] = 7  # another split
    at.switch_page("views/calibration.py").run()
    _ok(at)
    said = [w.value for w in at.warning]
    assert any("was made for other data" in w and "PlattSVM" in w for w in said), said
    assert not any("No trained model" in i.value for i in at.info)


def test_figure_downloads_are_named_after_the_chart_the_data_and_the_run(monkeypatch):
    """Two runs' figures both came as "objective.png" while their draws and metrics were named after the
    run (a crawl): a PNG's name now carries the chart, the run's data set and the run's method."""
    import streamlit

    pytest.importorskip("bsvm.subgradient")
    names = []
    real = streamlit.download_button

    def recording(label, *a, **kw):
        names.append(kw.get("file_name"))
        return real(label, *a, **kw)

    monkeypatch.setattr(streamlit, "download_button", recording)
    at, _, _ = _finished_train_run(sample="ripley.csv", method="subgradient_hmc")
    names.clear()
    at.run()  # the Train page with its finished run
    train = [n for n in names if n and n.endswith(".png")]
    names.clear()
    at.switch_page("views/diagnostics.py").run()
    _ok(at)
    diag = [n for n in names if n and n.endswith(".png")]
    assert train and diag
    for n in train + diag:
        assert n.endswith("_ripley_Subgradient_HMC.png") and not n.startswith("_ripley"), n
    assert len(set(diag)) == len(diag), diag  # one name per chart
    # the same chart under the same name on both pages (Train said learning_curve, Diagnostics objective)
    assert "objective_ripley_Subgradient_HMC.png" in train and "objective_ripley_Subgradient_HMC.png" in diag
    assert not any(n.startswith("diag_") for n in diag), diag  # no internal key words
    names.clear()
    at.switch_page("views/data.py").run()  # a page that names no run: the current data only
    assert all(n.endswith("_ripley.png") for n in names if n and n.endswith(".png")), names
    names.clear()
    at.switch_page("views/calibration.py").run()  # a map per method: data set, then the map's method
    _until(lambda: not _workers(), at=at)
    at.run()
    maps = [n for n in names if n and n.startswith("calibration_map")]
    assert maps and all(n.startswith("calibration_map_ripley_") for n in maps), maps
    assert "calibration_map_ripley_Subgradient_HMC.png" in maps, maps


def test_calibration_says_when_a_sampler_run_stopped_in_burn_in():
    """A SubgradientHMC run stopped during burn-in has no draws; Calibration showed a full metrics table
    from the chains' current states with only "Using the Train page's run as it stands" (a crawl)."""
    import warnings

    pytest.importorskip("bsvm.subgradient")
    from bsvm import SubgradientHMC

    at = _app(sample="ripley.csv")
    data = at.session_state["data"]
    est = SubgradientHMC(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        next(iter(est.fit_iter(data.X_train, data.y_train)))  # one record, in burn-in
    assert est.samples_.shape[1] == 0
    run = Run.from_fitted(est)
    run.status = "stopped"
    at.session_state["run"] = run
    at.session_state["run_meta"] = {"method": "subgradient_hmc", "label": "Subgradient HMC", "options": {},
                                    "data_key": data.key}
    at.switch_page("views/calibration.py").run()
    _until(lambda: not _workers(), at=at)
    at.run()
    _ok(at)
    assert any("before it kept any draw" in w.value for w in at.warning), [w.value for w in at.warning]


def test_a_shipped_sample_opens_with_its_label_column_without_a_guess_note():
    """After an upload whose label column was "klasse", picking Breast cancer said "Label column: 'label'
    (guessed: the earlier choice, 'klasse', is not a column of this data)" (a crawl)."""
    at = _app(sample="ripley.csv")
    at.session_state["cfg"]["label"] = "klasse"  # what an upload left behind
    at.selectbox(key="w:cfg:sample").set_value("breast_cancer.csv").run()
    _ok(at)
    assert not any("guessed" in i.value for i in at.info), [i.value for i in at.info]
    assert at.session_state["cfg"]["label"] == "label"


def test_msbpm_shows_its_line_options_only_for_three_or_more_classes():
    """Two classes are sampled by MS-BPM's HMC move: its line moves' "Directions" and "Block step" were
    shown there, where they change nothing (a teacher's crawl). They appear for three classes."""
    for sample, shown in (("ripley.csv", False), ("iris.csv", True)):
        at = _app(sample=sample, method="msbpm")
        at.switch_page("views/train.py").run()
        _ok(at)
        labels = [w.label for w in at.selectbox] + [w.label for w in at.checkbox]
        assert ("Directions" in labels) is shown and ("Block step" in labels) is shown, (sample, labels)
        assert "Nugget" in [w.label for w in at.number_input]
    # a value set on three classes does not reach a two-class fit, where the page does not show it
    from dashboard.methods import METHODS

    msbpm = METHODS["msbpm"]
    default = msbpm.library_defaults()["direction"]
    assert msbpm.make({"direction": "gibbs"}, 0, n_classes=2).direction == default != "gibbs"
    assert msbpm.make({"direction": "gibbs"}, 0, n_classes=3).direction == "gibbs"
