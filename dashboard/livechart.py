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
export default function (component) {
  const { data, parentElement } = component;
  if (!data || !data.fig) return;
  let div = parentElement.querySelector("div.bsvm-live");
  if (!div) {
    div = document.createElement("div");
    div.className = "bsvm-live";
    parentElement.appendChild(div);
  }
  const fig = JSON.parse(data.fig);
  const layout = fig.layout || {};
  div.style.height = (layout.height || 450) + "px";
  div.dataset.revision = String(data.rev);
  const base = window.location.pathname.replace(/\\/[^\\/]*$/, "");
  loadPlotly(base + "/component/" + data.asset + "/plotly.min.js").then((Plotly) => {
    if (Number(div.dataset.revision) !== data.rev) return;  // a newer figure has arrived meanwhile
    layout.autosize = true;
    delete layout.width;
    Plotly.react(div, fig.data || [], layout, {displaylogo: false, responsive: true});
    div.dataset.drawn = String(data.rev);
  }).catch((err) => { div.textContent = String(err); });
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


def asset_name() -> str:
    """The name under which plotly.min.js is served (v1 components prefix the module name)."""
    return f"{__name__}.{_ASSET}"


def live_chart(fig, key: str) -> None:
    """Draw ``fig`` (a ``go.Figure``) under ``key``, updating the chart already shown with that key."""
    mount = _component()
    if mount is None:
        st.plotly_chart(fig, key=key)
        return
    rev = st.session_state.get(f"_live_rev:{key}", 0) + 1
    st.session_state[f"_live_rev:{key}"] = rev
    spec = fig.to_json(validate=False) if hasattr(fig, "to_json") else json.dumps(fig)
    mount(key=key, data={"fig": spec, "rev": rev, "asset": asset_name()}, height="content")
