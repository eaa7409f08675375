"""A Plotly chart that is updated in place: for the live views that redraw several times a second.

Why not ``st.plotly_chart``: in Streamlit 1.67 its element id hashes the whole figure (``plotly_spec``),
and the frontend mounts the chart under that id (React ``key``). Every new figure is therefore a new
chart: the old one is removed and the new one drawn from scratch, which blanked the live charts in one
frame out of five. Here a ``st.components.v2`` component, whose identity is its key alone, keeps one
``<div>`` per key and hands each new figure to ``Plotly.react``, which diffs it against the one shown;
with the figures' ``uirevision`` a user's zoom survives the redraws.

plotly.js itself is the copy shipped inside the ``plotly`` Python package, served through a v1
component path (``/component/<name>/plotly.min.js``) and loaded once per browser tab. When any of this
is unavailable, :func:`live_chart` falls back to ``st.plotly_chart``.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

_NAME = "bsvm_live_plotly"
_ASSET = "bsvm_plotlyjs"

_JS = """
const loading = {};
function loadPlotly(url) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading[url]) {
    loading[url] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => { delete loading[url]; reject(new Error("plotly.js did not load from " + url)); };
      document.head.appendChild(s);
    });
  }
  return loading[url];
}
// One draw per animation frame, over all live charts, each drawing only its newest figure: when figures
// arrive faster than the browser can draw them, the older ones are skipped instead of queueing up. A
// chart rests for REST x its last draw's time before it is drawn again, and after each draw the page
// gets about half that time to itself: a costly chart (the map: a heatmap, contours and the points)
// then redraws less often than the cheap curves, and Streamlit's own work (messages, the fragment's
// timer, the progress text) is never stuck behind a queue of Plotly draws on a busy machine.
const REST = 2.0;
const live = window.__bsvmLive = window.__bsvmLive || {dirty: new Set(), scheduled: false, ms: []};
function schedule(delay) {
  if (live.scheduled || !live.dirty.size) return;
  live.scheduled = true;
  setTimeout(() => requestAnimationFrame(() => setTimeout(drawOne, 0)), Math.max(0, delay || 0));
}
function drawOne() {
  live.scheduled = false;
  const now = performance.now();
  let div = null, wait = Infinity;
  for (const d of live.dirty) {  // the chart that has rested longest past its own rest time
    if (!d.isConnected || !d._bsvmPending) { live.dirty.delete(d); continue; }
    const due = (d._bsvmReady || 0) - now;
    if (due <= 0 && (div === null || (d._bsvmReady || 0) < (div._bsvmReady || 0))) div = d;
    else if (due > 0) wait = Math.min(wait, due);
  }
  if (div === null) { if (wait < Infinity) schedule(wait); return; }
  live.dirty.delete(div);
  const job = div._bsvmPending;
  div._bsvmPending = null;
  const fig = JSON.parse(job.spec);
  const layout = fig.layout || {};
  layout.autosize = true;
  delete layout.width;
  const t0 = performance.now();
  window.Plotly.react(div, fig.data || [], layout, {displaylogo: false, responsive: true}).then(() => {
    const ms = performance.now() - t0;
    live.ms.push(ms);  // browser-side cost of a redraw, read by the benchmark
    if (live.ms.length > 1000) live.ms.splice(0, 500);
    div.dataset.drawn = String(job.rev);
    div._bsvmReady = performance.now() + REST * ms;
    live.pause = ms / 2;
  }).catch(() => {}).finally(() => schedule(live.pause || 0));
}
export default function (component) {
  const { data, parentElement } = component;
  const base = window.location.pathname.replace(/\\/[^\\/]*$/, "");
  const url = data ? base + "/component/" + data.asset + "/plotly.min.js" : "";
  if (data && data.preload) {  // after the page has drawn: the 4.7 MB script must not delay it
    setTimeout(() => loadPlotly(url).catch(() => {}), 2500);
    return;
  }
  if (!data || !data.fig) return;
  let div = parentElement.querySelector("div.bsvm-live");
  if (!div) {
    div = document.createElement("div");
    div.className = "bsvm-live";
    parentElement.appendChild(div);
  }
  div.style.height = (data.height || 450) + "px";
  if (div.dataset.drawn === String(data.rev)) return;  // this figure is already shown here
  div.dataset.revision = String(data.rev);
  div._bsvmPending = {spec: data.fig, rev: data.rev};
  loadPlotly(url).then(() => { live.dirty.add(div); schedule(0); })
    .catch((err) => { div.textContent = String(err); });
}
"""


@st.cache_resource(show_spinner=False)
def _component():
    """Register the component and plotly.js's folder once per server process; None if not possible."""
    try:
        import plotly
        from streamlit.components import v1, v2

        folder = Path(plotly.__file__).resolve().parent / "package_data"
        if not (folder / "plotly.min.js").exists():
            return None
        v1.declare_component(_ASSET, path=str(folder))
        return v2.component(_NAME, html="", js=_JS, isolate_styles=False)
    except Exception:  # noqa: BLE001 - an older/newer Streamlit without these APIs: use st.plotly_chart
        return None


#: Streamlit's default categorical colours, so live charts look like the st.plotly_chart ones
_COLOURS = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a",
            "#6d3fc0", "#d5dae5"]


@st.cache_resource(show_spinner=False)
def _template():
    """plotly_white with Streamlit's colours. Needed because Streamlit sets Plotly's default template to
    its own, whose colours are placeholders ("#000001"...) that only st.plotly_chart's frontend replaces:
    drawn by plotly.js directly, every line came out black."""
    import plotly.graph_objects as go
    import plotly.io as pio

    t = go.layout.Template(pio.templates["plotly_white"])
    t.layout.colorway = _COLOURS
    return t


def asset_name() -> str:
    """The name under which plotly.min.js is served (v1 components prefix the module name)."""
    return f"{__name__}.{_ASSET}"


def preload() -> None:
    """Start loading plotly.js in the browser (about 4.7 MB: seconds on a busy machine) before the
    Train page needs it. Draws nothing."""
    mount = _component()
    if mount is not None:
        mount(key="bsvm_live_preload", data={"preload": True, "asset": asset_name()}, height=0)


_SPECS: dict = {}


def _spec(fig) -> str:
    """The figure's JSON, made once per figure object: a live view passes the same figure again while
    it has nothing newer (the map between two predictions), and serialising it is most of a redraw's
    cost on the server."""
    if not hasattr(fig, "to_json"):
        return json.dumps(fig)
    cached = _SPECS.get(id(fig))
    if cached is not None and cached[0] is fig:
        return cached[1]
    fig.layout.template = _template()
    spec = fig.to_json(validate=False)
    if len(_SPECS) > 64:  # only the newest figures are passed again
        _SPECS.clear()
    _SPECS[id(fig)] = (fig, spec)
    return spec


def live_chart(fig, key: str) -> None:
    """Draw ``fig`` (a ``go.Figure``) under ``key``, updating the chart already shown with that key."""
    mount = _component()
    if mount is None:
        st.plotly_chart(fig, key=key)
        return
    spec = _spec(fig)
    # The revision changes with the figure: the browser skips a figure it has already drawn in that
    # chart. The figure is always sent, because a chart remounted by a full rerun starts empty.
    last = st.session_state.get(f"_live:{key}")
    rev = last[0] if last is not None and last[1] == hash(spec) else (last[0] if last else 0) + 1
    st.session_state[f"_live:{key}"] = (rev, hash(spec))
    height = getattr(getattr(fig, "layout", None), "height", None) or 450
    mount(key=key, data={"fig": spec, "rev": rev, "asset": asset_name(), "height": height},
          height="content")
