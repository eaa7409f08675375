"""Helpers the AppTest-based dashboard tests share (tests/test_dashboard_app.py, test_dashboard_pages.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")


def _app(loop: float = 0.0, **query) -> AppTest:
    """The app after its first script run, with the given query parameters.

    ``loop``: seconds the Train page's live view may redraw in a loop inside one script run while a
    run goes on (the app's default is a minute; here 0, one redraw per script run, so that ``at.run()``
    returns while the run goes on and the tests can click its controls mid-run)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["_live_loop_seconds"] = loop
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _ok(at: AppTest) -> None:
    """No exception reached the page."""
    assert not at.exception, [e.value for e in at.exception]
