"""bsvm dashboard entry point: ``streamlit run dashboard/app.py``.

A multipage app (``st.navigation``): Data, Train, Calibration, Diagnostics, Compare. Settings live in
``st.session_state`` and are mirrored in the URL query string (see ``dashboard/state.py``).
"""

import sys
import time
from pathlib import Path

_T0 = time.time()  # this script run's start, for the server's event log (BSVM_DASH_TRACE)

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` puts only dashboard/ on the path
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException  # noqa: E402

from dashboard import livechart, procrun, state, tabs, ui  # noqa: E402

# Jobs run in worker threads (dashboard/runner.py; the Train page's fits run in child processes,
# dashboard/procrun.py) and do many small NumPy calls, each releasing and re-taking the GIL; while a page
# redraws (pure Python), every re-take waited up to the default 5 ms switch interval.
sys.setswitchinterval(0.0005)
# the tab's icon from this folder: a ":material/...:" page icon is fetched from fonts.gstatic.com, which
# fails offline (a console error on every page)
st.set_page_config(page_title="bsvm explorer", page_icon=str(Path(__file__).resolve().parent / "icon.png"),
                   layout="wide")
state.init()
state.runner_options()  # fast reruns and post-run collection off, as .streamlit/config.toml says
state.guard_navigation()  # a fragment timer's rerun must not undo a click on a sidebar link

_PAGES = Path(__file__).resolve().parent / "views"  # not "pages/": that name switches on the old MPA mode
pages = [
    # (the default page is served at "/"; its own url_path must not be "data", which the hidden page below
    # takes, see _to_data_page)
    st.Page(_PAGES / "data.py", title="Data", icon=":material/table:", url_path="data_default", default=True),
    st.Page(_PAGES / "train.py", title="Train", icon=":material/play_circle:", url_path="train"),
    st.Page(_PAGES / "calibration.py", title="Calibration", icon=":material/tune:", url_path="calibration"),
    st.Page(_PAGES / "diagnostics.py", title="Diagnostics", icon=":material/monitoring:",
            url_path="diagnostics"),
    st.Page(_PAGES / "compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
]


def _to_data_page():
    """``/data``: the Data page is the default page, served at ``/`` only, and ``/data``, the natural
    guess beside ``/train``, opened a "Page not found" dialog (the browser took "data" for part of the
    server's base path). This hidden page sends the browser to it, the link's settings kept."""
    st.switch_page(pages[0], query_params=st.query_params.to_dict())


pages.append(st.Page(_to_data_page, title="Data", url_path="data", visibility="hidden"))
page = st.navigation(pages)
name = "data" if page in (pages[0], pages[-1]) else page.url_path  # the Data page, however reached
if name != "data":
    # this script run's thread: a fit's child process goes first. Not on the Data page, the first a
    # user opens: no fit of this session runs there, and its start-up must not wait behind others.
    procrun.yield_to_fits()
with st.sidebar:  # (its element is hidden: see the style block below)
    if tabs.attach():  # a reloaded tab gets its runs back (dashboard/tabs.py)
        st.toast("This tab was reloaded: its runs went on, and are shown again.", icon=":material/sync:")
state.enter_page(name)  # leaving a page stops the work it started
# Streamlit's own "Stop" (in the header while a script runs) stops the page's script run, not a fit: the
# Train page's live view runs in one long script run while the fit computes in a child, so that button
# froze the charts and the fit went on (a new user took it for the page's Stop). The page's Stop is the
# one that acts; the running icon stays.
# The header's "Deploy" button (Streamlit Community Cloud) is not part of this app either (the repository's
# .streamlit/config.toml hides it with the menu, when streamlit is started from the repository's root).
st.html("<style>[data-testid='stStatusWidgetRunningIcon'] + span button {display: none;}"
        "[data-testid='stAppDeployButton'] {display: none;}"
        f".st-key-{tabs.KEY} {{display: none;}}</style>")
with st.sidebar:
    ui.presentation_toggle()
    ui.import_problems()
    st.caption("bsvm: Bayesian SVMs as scikit-learn estimators. Settings are kept in the URL, so the link "
               "in the address bar reopens this demo.")
if page is not pages[-1]:  # (the /data redirect's run is thrown away: its notes would never be seen)
    state.url_notes()
    # the settings into the address bar before the page runs as well: a page that stops early (st.stop:
    # Calibration and Diagnostics before any run) left it bare, the sync in the finally below did not
    # reach the browser, and a reload or a shared link lost the data set, seed and method (a crawl)
    state.sync_url()
ui.download_run()  # figures name the current data unless the page names a run
_interrupted = False
try:
    page.run()
except (RerunException, StopException):  # a rerun or stop: a click may be waiting for this run's end
    _interrupted = True
    raise
finally:  # also when a page stops early (st.stop) or reruns
    state.sync_url()
    tabs.remember()
    # The Train page's live charts need plotly.js: fetch it while the user looks around. Mounted after
    # the page's own elements: its component (and the chunks Streamlit loads for it) must not hold up
    # the Data page's first paint.
    with st.sidebar:
        livechart.preload()
        tabs.mount()  # (last: its report must not cut the page's first run short, dashboard/tabs.py)
    procrun.trace("script", start=f"{_T0:.3f}", page=name)
    state.collect_garbage(_interrupted)  # Streamlit's own collection is off: it delayed clicks
