"""dashboard/tabs.py: a reloaded tab gets its runs back; a closed tab's runs are cancelled after the grace
period; a duplicated tab (same id, owner still connected) gets nothing. The browser side (the id kept in
sessionStorage across a reload) is in tests/test_browser.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dashboard.runner import Registry  # noqa: E402
from dashboard.tabs import TabStore  # noqa: E402


class _Item:
    """A registry entry that records its cancel."""

    page, status, busy, meta = "train", "running", True, {}

    def __init__(self):
        self.cancelled = None

    def cancel(self, note=""):
        self.cancelled = note
        self.status = "cancelled"


def _store(active: set) -> TabStore:
    return TabStore(is_active=lambda s: s in active, grace=30.0, janitor=False)


def test_a_reload_takes_over_the_runs_and_a_duplicate_gets_nothing():
    active = {"s1"}
    store = _store(active)
    reg = Registry()
    reg.items["fit"] = item = _Item()
    assert store.claim("tab", "s1") == {}  # a new tab
    store.keep("tab", "s1", {"_registry": reg, "upload": {"name": "a.csv"}})
    # the same id from another connected session: a duplicated tab, which must not take s1's runs
    active.add("s2")
    assert store.claim("tab", "s2") is None
    store.keep("tab", "s2", {"_registry": Registry()})  # (a non-owner's references are not recorded)
    # s1's tab reloads: s1 is gone, s3 connects with the same id and takes over
    active -= {"s1", "s2"}
    active.add("s3")
    got = store.claim("tab", "s3")
    assert got["_registry"] is reg and got["upload"] == {"name": "a.csv"}
    assert store.claim("tab", "s3") == {}  # it owns the tab now
    active.add("s4")
    assert store.claim("tab", "s4") is None  # and a duplicate of it gets nothing
    assert item.cancelled is None
    del reg


def test_a_closed_tabs_runs_are_cancelled_after_the_grace_period_and_a_live_ones_never():
    active = {"s1", "s2"}
    store = _store(active)
    regs = {}
    for s in ("s1", "s2"):
        regs[s] = Registry()
        regs[s].items["fit"] = _Item()
        store.keep(f"tab-{s}", s, {"_registry": regs[s]})
    active.discard("s1")  # s1's tab was closed
    assert store.sweep(now=100.0) == []  # first seen gone
    assert store.sweep(now=129.0) == [] and regs["s1"].items["fit"].cancelled is None
    assert store.sweep(now=130.0) == ["tab-s1"]
    assert regs["s1"].items["fit"].cancelled == "its browser tab was closed"
    assert regs["s2"].items["fit"].cancelled is None and len(store) == 1
    # a session that was gone for a while but came back (a network blip) is not cancelled
    active.discard("s2")
    store.sweep(now=200.0)
    active.add("s2")
    store.sweep(now=220.0)
    active.discard("s2")
    assert store.sweep(now=240.0) == [] and store.sweep(now=265.0) == []  # its clock started again at 240
    assert store.sweep(now=270.0) == ["tab-s2"]


def test_attach_gives_a_reloaded_tab_its_run_and_its_uploaded_data(monkeypatch):
    """tabs.attach in AppTest, with the session id and the store faked and the tab's id put where the
    component's callback puts it (as an independent review did): a run on an uploaded CSV, then a
    reload. The new session's first run cannot open the link's upload (it shows the first sample and
    says so); when the tab's id arrives, it takes over the old session's run, still running, and its
    upload with the data settings, so the run is not "made for other data" and the "upload it again"
    note goes."""
    import hashlib
    import time

    import numpy as np
    from _apptest import _app, _ok

    from dashboard import tabs

    session, active = {"id": "s1"}, {"s1"}
    store = TabStore(is_active=lambda s: s in active, janitor=False)
    monkeypatch.setattr(tabs, "_session_id", lambda: session["id"])
    monkeypatch.setattr(tabs, "store", lambda: store)
    X = np.random.default_rng(0).normal(size=(200, 2))
    content = ("u,v,label\n" + "\n".join(f"{a:.4f},{b:.4f},{'yes' if a + b > 0 else 'no'}" for a, b in X)
               + "\n").encode()
    at = _app(method="sbsvm", **{"o.max_iter": "1000000", "o.tol": "0", "o.patience": "1000000"})
    at.session_state["_tab_report"] = "T"  # (what the component's callback records: the tab's id)
    at.session_state["upload"] = {"name": "mine.csv", "bytes": content,
                                  "digest": hashlib.sha1(content).hexdigest()}
    at.session_state["cfg"]["sample"] = "upload"
    at.session_state["w:cfg:sample"] = "upload"
    at.run()
    at.switch_page("views/train.py").run()
    next(b for b in at.button if b.label.startswith("Start")).click().run()
    _ok(at)
    run = at.session_state["run"]
    t0 = time.time()
    while run.records < 2 and time.time() - t0 < 60:
        time.sleep(0.05)
    url = {k: at.query_params[k] for k in at.query_params}
    assert url["sample"] == "upload"
    try:
        # the reload: s1 is gone, s2 opens the same link; its first run has no tab id yet
        active.discard("s1")
        active.add("s2")
        session["id"] = "s2"
        at2 = _app(**{k: (v[0] if isinstance(v, list) else v) for k, v in url.items()})
        assert any("uploaded CSV" in w.value for w in at2.warning)
        assert at2.session_state["cfg"]["sample"] != "upload"
        at2.session_state["_tab_report"] = "T"
        at2.run()
        _ok(at2)
        assert not any("uploaded CSV" in w.value for w in at2.warning)
        assert at2.session_state["cfg"]["sample"] == "upload"
        assert at2.session_state["w:cfg:sample"] == "upload"
        at2.switch_page("views/train.py").run()
        _ok(at2)
        assert at2.session_state["_registry"].get("train") is run and run.status == "running"
        assert not any("made for other data" in w.value for w in at2.warning)
        # another tab (another id) while s2 is connected: nothing of s2's
        session["id"] = "s3"
        active.add("s3")
        at3 = _app()
        at3.session_state["_tab_report"] = "U"
        at3.run()
        assert at3.session_state["_registry"].get("train") is None
    finally:
        run.cancel()


def test_work_started_before_the_tab_id_came_joins_the_taken_over_registry(monkeypatch):
    """The first script runs of a reloaded tab may start work before its id arrives (a playground refit,
    or a Start clicked at once): it joins the old session's registry instead of being cancelled."""
    from _apptest import _app

    from dashboard import tabs

    session, active = {"id": "s1"}, {"s1"}
    store = TabStore(is_active=lambda s: s in active, janitor=False)
    monkeypatch.setattr(tabs, "_session_id", lambda: session["id"])
    monkeypatch.setattr(tabs, "store", lambda: store)
    at1 = _app()
    at1.session_state["_tab_report"] = "T"
    old = at1.session_state["_registry"]
    old.items["train"] = kept = _Item()
    at1.run()  # (the store records the item's registry)
    active.discard("s1")
    active.add("s2")
    session["id"] = "s2"
    at2 = _app()
    first = at2.session_state["_registry"]
    first.items["compare"] = early = _Item()
    at2.session_state["_tab_report"] = "T"
    at2.run()
    assert at2.session_state["_registry"] is old
    assert old.items["train"] is kept and old.items["compare"] is early and not first.items
    assert kept.cancelled is None and early.cancelled is None
