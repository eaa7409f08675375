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
