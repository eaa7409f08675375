"""Helpers the AppTest-based dashboard tests share (tests/test_dashboard_app.py, test_dashboard_pages.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")


def _app(**query) -> AppTest:
    """The app after its first script run, with the given query parameters."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _ok(at: AppTest) -> None:
    """No exception reached the page."""
    assert not at.exception, [e.value for e in at.exception]
