"""A browser tab's runs survive a reload of the tab, and end soon after the tab is closed.

Why: a reload (F5, or the browser reopening the tab) starts a new Streamlit session with an empty
``st.session_state``. The page then showed no run at all, while the old session, kept by Streamlit for a
reconnect that never comes, held its run registry and the fit's child went on computing, unseen: a
run started on the Ripley sample was still at 70 % of a core 10 s after the reload (measured with
``/work/coord/s41/reload.py``). Closing the tab left the run going the same way.

How:

- The tab names itself: a small component keeps a random id in the tab's ``sessionStorage``, which a
  reload keeps and a new tab (or a shared link) does not have, and hands it to Python (:func:`attach`).
- :class:`TabStore` (one per server) maps each tab id to the session that owns it and the references
  that session's state holds under :data:`CARRY` (its run registry, the Train page's last model, the
  uploaded CSV...), refreshed at every script run of that session.
- A new session whose tab id is already known, and whose owner session is no longer connected, takes
  those references over (:meth:`TabStore.claim`): its pages show the runs where they are, still
  running. A duplicated tab (same id, owner still connected) is given a new id instead.
- A janitor thread cancels the runs of a tab whose session has been disconnected for
  :data:`GRACE_SECONDS` (the tab was closed, or the server lost it) and forgets the tab.

Without a browser (Streamlit's AppTest) no id ever arrives and sessions behave as before.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

#: the session-state keys a reloaded tab gets back: the runs and jobs, the models the pages read, and
#: the data they were made for (an uploaded CSV, the playground's edited points)
CARRY = ("_registry", "run", "run_meta", "upload", "playground", "pg_settings", "pg_edits", "compare",
         "_slow_motion_kept", "_train_explained", "cfg")
#: the data settings a reloaded tab takes from its old session when its link was to an uploaded CSV,
#: which the link cannot give (the others come from the link: one edited in the address bar wins)
UPLOAD_SETTINGS = ("sample", "label", "features", "std", "test", "seed", "dropna", "droprare")
#: a tab's runs are cancelled once its session has been disconnected this long: longer than a reload
#: takes to report the tab's id (about 1-3 s), short enough that a closed tab's fit stops soon
GRACE_SECONDS = 30.0
#: the janitor's period
SWEEP_SECONDS = 5.0
#: the key of the id component (its element is hidden by app.py's style block)
KEY = "bsvm_tab"

_JS = """
export default function(component) {
  const { data, setStateValue } = component;
  const KEY = "bsvm-tab";
  let id = null;
  try { id = window.sessionStorage.getItem(KEY); } catch (e) { return; }  // no storage: no id
  if (data && data.assign && data.assign !== id) { id = data.assign; }
  if (!id) {
    id = (window.crypto && crypto.randomUUID) ? crypto.randomUUID()
         : String(Date.now()) + Math.random().toString(16).slice(2);
  }
  try { window.sessionStorage.setItem(KEY, id); } catch (e) { return; }
  setStateValue("tab", id);
}
"""


def _session_active(session_id: str) -> bool:
    try:
        from streamlit.runtime import Runtime

        return Runtime.instance().is_active_session(session_id)
    except Exception:  # noqa: BLE001 - no runtime (tests): nobody is connected
        return False


@dataclass
class _Tab:
    session: str
    carry: dict = field(default_factory=dict)
    gone_since: float | None = None


def _cancel(carry: dict, note: str) -> None:
    reg = carry.get("_registry")
    for item in list(getattr(reg, "items", {}).values()):
        item.cancel(note)


class TabStore:
    """Tab id -> the session owning it and the references it carries (see the module docstring).

    ``is_active(session_id)``: whether a session is connected (Streamlit's runtime by default; tests pass
    their own). ``sweep`` runs in a janitor thread started with the first :meth:`keep` (``janitor=False``:
    tests call it themselves)."""

    def __init__(self, is_active=_session_active, grace: float = GRACE_SECONDS, janitor: bool = True):
        self._tabs: dict[str, _Tab] = {}
        self._lock = threading.Lock()
        self._is_active = is_active
        self.grace = grace
        self._janitor = janitor
        self._thread: threading.Thread | None = None

    def keep(self, tab: str, session: str, carry: dict) -> None:
        """Record ``session``'s current references under ``tab`` (each script run of the owner)."""
        with self._lock:
            t = self._tabs.get(tab)
            if t is None or t.session == session:
                self._tabs[tab] = _Tab(session, dict(carry))
            if self._janitor and self._thread is None:
                self._thread = threading.Thread(target=self._sweep_forever, name="bsvm-tabs", daemon=True)
                self._thread.start()

    def claim(self, tab: str, session: str):
        """``session`` has learnt that it runs in ``tab``. Returns the references to take over (a reload:
        the owner is gone), ``{}`` (a new tab, or one this session owns already), or None when another
        connected session owns the id (a duplicated tab: give this one a new id)."""
        with self._lock:
            t = self._tabs.get(tab)
            if t is None or t.session == session:
                return {}
            if self._is_active(t.session):
                return None
            self._tabs[tab] = _Tab(session, t.carry)
            return dict(t.carry)

    def sweep(self, now: float | None = None) -> list[str]:
        """Cancel the runs of tabs whose session has been gone :attr:`grace` seconds and forget them;
        returns their ids."""
        now = time.monotonic() if now is None else now
        ended = []
        with self._lock:
            for tab, t in list(self._tabs.items()):
                if self._is_active(t.session):
                    t.gone_since = None
                elif t.gone_since is None:
                    t.gone_since = now
                elif now - t.gone_since >= self.grace:
                    ended.append((tab, self._tabs.pop(tab)))
        for _, t in ended:  # outside the lock: a cancel may wait for a child process
            _cancel(t.carry, "its browser tab was closed")
        return [tab for tab, _ in ended]

    def _sweep_forever(self) -> None:  # pragma: no cover - a daemon thread
        while True:
            time.sleep(SWEEP_SECONDS)
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - the janitor must outlive a bad entry
                pass

    def __len__(self) -> int:
        return len(self._tabs)


@st.cache_resource(show_spinner=False)
def store() -> TabStore:
    """The server's one :class:`TabStore`."""
    return TabStore()


@st.cache_resource(show_spinner=False)
def _component():
    try:
        from streamlit.components import v2

        return v2.component("bsvm_tab_id", html="", js=_JS, isolate_styles=False)
    except Exception:  # noqa: BLE001 - another Streamlit: tabs are not tracked, as before
        return None


def _session_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        return ctx.session_id if ctx is not None else None
    except Exception:  # noqa: BLE001
        return None


#: where the component's callback puts the id the tab reported (read by :func:`attach`)
_REPORT = "_tab_report"


def _on_report() -> None:
    """The component's callback: it runs before the script run its report starts, so :func:`attach`,
    at the top of that run, sees the id before the pages read ``st.session_state``."""
    value = st.session_state.get(KEY)
    tab = value.get("tab") if isinstance(value, dict) else getattr(value, "tab", None)
    if tab:
        st.session_state[_REPORT] = str(tab)


def mount() -> None:
    """Mount the tab-id component: at the end of every script run (app.py's ``finally``), after the
    page. Mounted first, its report came while the session's first run was still drawing and cut it
    short: a ``?present=1`` link then opened without presentation mode in 1 of 10 fresh loads (4 of 12
    in a teacher's crawl)."""
    component = _component()
    if component is None or _session_id() is None:
        return
    assign = st.session_state.get("_tab_assign")
    component(key=KEY, data={"assign": assign} if assign else None, on_tab_change=_on_report,
              height="content")


def attach() -> bool:
    """When the tab's id is known, take over a reloaded tab's runs (once per session) and record this
    session's references. Call at the top of every script run, before the pages read
    ``st.session_state`` (the id comes from :func:`mount`'s component, at the end of the runs). True
    when runs were taken over in this script run."""
    session = _session_id()
    if _component() is None or session is None:
        return False
    assign = st.session_state.get("_tab_assign")
    tab = st.session_state.get(_REPORT)
    if not tab or (assign and tab != assign):
        return False  # not known yet, or the new id has not reached the tab yet
    took = False
    st.session_state.pop(_REPORTED, None)
    st.session_state.pop("_seeded_widgets", None)
    if st.session_state.get("_tab") != tab:
        st.session_state["_tab"] = tab
        st.session_state[_REPORTED] = True
        got = store().claim(tab, session)
        if got is None:  # a duplicated tab: it keeps its own runs under a new id (mount hands it over)
            st.session_state["_tab_assign"] = secrets.token_hex(16)
            st.session_state.pop("_tab", None)
            return False
        mine = st.session_state.get("_registry")
        old_cfg = got.pop("cfg", None)
        for k, v in got.items():
            st.session_state[k] = v
        if got.get("upload") is not None and old_cfg and st.session_state.get("_url_upload"):
            _restore_upload_settings(old_cfg)
        if got.get("_registry") is not None and mine is not None and mine is not got["_registry"]:
            # the first script runs' own work (a playground refit, or a Start clicked before the id came,
            # a review) is the newer: it joins the taken-over registry, replacing a run of the same name
            for name, item in list(mine.items.items()):
                got["_registry"].put(name, item, start=False)
            mine.items.clear()  # (moved: the old registry's finaliser must not cancel them)
        took = bool(got.get("_registry") and got["_registry"].items)
    remember()
    return took


def _restore_upload_settings(old: dict) -> None:
    """The link was to an uploaded CSV, which the first run could not open (it showed the first sample
    and said "upload it again"): with the upload back, its data settings come back too, into the settings
    and their widgets (set before the widgets are drawn in this run), and that note goes. Without them
    the page showed Ripley and called the carried run "made for other data" (a review)."""
    from . import state

    c = state.cfg()
    seeded = set()
    for name in UPLOAD_SETTINGS:
        if name in old:
            c[name] = old[name]
            if f"w:cfg:{name}" in st.session_state:
                st.session_state[f"w:cfg:{name}"] = old[name]
                seeded.add(f"w:cfg:{name}")
    st.session_state["_seeded_widgets"] = seeded  # (state.bind then gives these widgets no default)
    shown = st.session_state.get("_url_notes_shown") or []
    st.session_state["_url_notes_shown"] = [n for n in shown if "uploaded CSV" not in n]


_REPORTED = "_tab_reported"


def reported_now() -> bool:
    """Whether this script run is the one the tab's id arrived in: a rerun the browser made by itself
    right after the session's first run, which a message shown once in that first run (a link's notes)
    did not survive. Such a message is shown again in this run."""
    return bool(st.session_state.get(_REPORTED))


def remember() -> None:
    """Record this session's references under its tab (at the start and the end of every script run:
    a click's callback may have replaced one, e.g. the Calibration page's model)."""
    tab, session = st.session_state.get("_tab"), _session_id()
    if tab and session:
        store().keep(tab, session, {k: st.session_state[k] for k in CARRY if k in st.session_state})
