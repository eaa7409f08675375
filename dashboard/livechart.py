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
import secrets
from pathlib import Path

import streamlit as st

_NAME = "bsvm_live_plotly"
_ASSET = "bsvm_plotlyjs"

#: Plotly's config for every chart of the dashboard (live ones here, the others through
#: ``st.plotly_chart(config=...)``): the mode bar keeps zoom, pan and reset. Its full row of icons (about
#: 200 px) sat over the titles of half-width charts (the Train page's grid at 1280 px); PNGs have their
#: own buttons under the charts.
PLOTLY_CONFIG = {"displaylogo": False,
                 "modeBarButtonsToRemove": ["toImage", "zoomIn2d", "zoomOut2d", "autoScale2d", "lasso2d",
                                            "select2d", "hoverClosestCartesian", "hoverCompareCartesian",
                                            "toggleSpikelines"]}

_JS = r"""
const CONFIG = __CONFIG__;
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
// arrive faster than the browser can draw them, the older ones are skipped instead of queueing up.
// Pacing, so that watching a fit does not take the CPU the fit needs (on a 2-core machine the browser,
// the server and the fit share it): a chart rests REST x its last draw's time before it is drawn
// again, and after each draw every chart waits DUTY x that draw's time, so that drawing takes at most
// 1 / (1 + DUTY) of one core. A costly chart (the map: a heatmap and the points) then redraws less often
// than the cheap curves, and Streamlit's own work (messages, the fragment's timer, the status text) is
// never stuck behind a queue of Plotly draws.
const REST = 2.0, DUTY = 1.5, MAX_MS = 400;
const live = window.__bsvmLive = window.__bsvmLive ||
  {dirty: new Set(), scheduled: false, ms: [], count: 0, total: 0, specs: new Map(), divs: new Map(),
   pause: 0};
// Once per tab, while the user looks at a page: draw a line chart and a heatmap off screen and throw
// them away. The browser compiles Plotly's drawing code on its first use: the first live draws of a
// run then cost what later ones do (measured under load: 330 ms against 70 ms for a curve).
function warmUp(Plotly) {
  if (!Plotly || live.warm) return;
  live.warm = true;
  const div = document.createElement("div");
  div.style.cssText = "position:absolute;left:-10000px;top:0;width:600px;height:300px;";
  document.body.appendChild(div);
  const x = Array.from({length: 200}, (_, i) => i);
  const z = Array.from({length: 20}, (_, i) => Array.from({length: 20}, (_, j) => (i + j) / 40));
  const pts = {type: "scatter", mode: "markers", x: x.slice(0, 50), y: x.slice(0, 50)};
  Plotly.newPlot(div, [{type: "scatter", mode: "lines", x: x, y: x.map(Math.sqrt)}], {title: {text: "w"}})
    .then(() => Plotly.react(div, [{type: "heatmap", z: z}, {type: "contour", z: z,
      contours: {coloring: "none"}}, pts], {title: {text: "w"}}))
    .then(() => Plotly.react(div, [{type: "scatter", mode: "lines", x: x, y: x}], {}))
    .catch(() => {}).finally(() => { Plotly.purge(div); div.remove(); live.warmed = true; });
}
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
  if (job.present) presentLayout(layout, fig.data || []);
  layout.autosize = true;
  delete layout.width;
  // the div's height follows the figure's: presentLayout may have grown it for a wrapped legend (the
  // div kept the server's height, and the plot of S-BSVM's hyperparameters shrank to 40 px instead)
  if (layout.height) div.style.height = layout.height + "px";
  const t0 = performance.now();
  window.Plotly.react(div, fig.data || [], layout,
                      Object.assign({responsive: true}, CONFIG, job.config || {})).then(() => {
    if (job.clicks && !div._bsvmClickBound) {  // (the div keeps its listener across redraws)
      div._bsvmClickBound = true;
      div.on("plotly_click", (ev) => queueClick(div.dataset.key, ev));
    }
    const ms = performance.now() - t0;
    live.ms.push(ms);  // browser-side cost of a redraw, read by the benchmark
    if (live.ms.length > 1000) live.ms.splice(0, 500);
    live.count += 1;
    live.total += ms;
    live.last = [div.dataset.key, Math.round(ms)];
    const k = live.byKey = live.byKey || {};  // per chart: [draws, ms], read by the benchmark
    k[div.dataset.key] = [((k[div.dataset.key] || [0])[0]) + 1, ((k[div.dataset.key] || [0, 0])[1]) + ms];
    div.dataset.drawn = String(job.rev);
    div._bsvmShown = job.spec;
    div._bsvmPresent = job.present;
    // a draw's wall time, capped: one slow draw (the first in a tab, or a browser starved of CPU for a
    // moment) must not keep its chart, or every chart, still for seconds
    const cost = Math.min(ms, MAX_MS);
    div._bsvmReady = performance.now() + REST * cost;
    live.pause = DUTY * cost;
  }).catch(() => {}).finally(() => schedule(live.pause || 0));
}
// Presentation mode (the sidebar switch): the larger type of ui._presentation_style, applied here so
// that the server's cached JSON of each figure serves both modes.
function presentLayout(layout, data) {
  const size = (o, n) => Object.assign({}, o || {}, {size: n});
  // a legend below the plot wraps into one line per entry at this size on a half-width chart: grow the
  // figure by those lines, or the plot itself shrank (S-BSVM's five hyperparameters left it 70 px high)
  const entries = data.filter((t) => t.showlegend !== false && t.name).length;
  // a legend at the right takes a third of a half-width chart at this size: below it instead
  if ((layout.legend || {}).orientation === "v")
    layout.legend = {orientation: "h", yref: "container", y: 0.0, yanchor: "bottom", x: 0.0};
  if ((layout.legend || {}).orientation === "h" && entries > 2)
    layout.height = (layout.height || 320) + 28 * (entries - 2);
  // two legend columns of half the width each (figures.LEGEND_BELOW_2COL) hold 10 px names, not 16 px
  // ones: "inducing point 1" ran into the next column's line (a crawl at 1280 px); the height above
  // makes room for one entry per line, so the entries wrap as they need
  if ((layout.legend || {}).entrywidthmode === "fraction") {
    layout.legend = Object.assign({}, layout.legend);
    delete layout.legend.entrywidth;
    delete layout.legend.entrywidthmode;
  }
  layout.font = size(layout.font, 17);
  const titled = (t, n) => typeof t === "string" ? {text: t, font: {size: n}} :
    Object.assign({}, t, {font: size(t.font, n)});
  if (layout.title) layout.title = titled(layout.title, 21);
  // the larger title and its note (sized relative to it) need a taller top margin (ui.PRESENT_MARGIN)
  if (layout.margin && layout.margin.t) {
    // labels in a strip above the plot (the candidate fits' numbers, "burn-in": figures.LABEL_STRIP) grow
    // to 16 px, and the title's notes, hung from the margin's middle, reach down to them: S-BSVM's ELBO
    // read "outliers off the axis (to 2 5.01e+03)" with the label "2" over it (a crawl at 1280 px)
    const strip = (layout.annotations || []).some((a) => a.yref === "paper" && a.y === 1 &&
                                                      a.yanchor === "bottom");
    layout.margin = Object.assign({}, layout.margin,
                                  {t: Math.round(layout.margin.t * 1.35) + (strip ? 40 : 0)});
    if (strip) layout.height = (layout.height || 320) + 40;  // (the plot keeps its height)
  }
  // colour bars and contour labels have fonts of their own (as ui._presentation_style)
  data.forEach((t) => {
    if (t.colorbar && t.showscale !== false)
      t.colorbar = Object.assign({}, t.colorbar, {tickfont: size(t.colorbar.tickfont, 15),
        title: titled(t.colorbar.title || {text: ""}, 16)});
    if (t.type === "contour" && t.contours && t.contours.showlabels)
      t.contours = Object.assign({}, t.contours, {labelfont: size(t.contours.labelfont, 14)});
  });
  layout.legend = Object.assign({}, layout.legend, {font: size((layout.legend || {}).font, 16)});
  for (const k of Object.keys(layout)) {
    if (!/^[xy]axis[0-9]*$/.test(k)) continue;
    const ax = layout[k] = Object.assign({}, layout[k]);
    // a stacked panel (a sampler's four statistics) is too short for large type: its titles ran together
    const narrow = Array.isArray(ax.domain) && ax.domain[1] - ax.domain[0] < 0.3;
    ax.tickfont = size(ax.tickfont, narrow ? 12 : 15);
    if (narrow) ax.nticks = 3;
    if (ax.title) ax.title = titled(ax.title, narrow ? 12 : 17);
  }
  // subplot titles and notes are annotations with sizes of their own
  (layout.annotations || []).forEach((a) => {
    a.font = size(a.font, Math.max(((a.font || {}).size || 12) + 3, 16));
  });
}
// A rerun that remounts the component while the previous instance is still on the page can leave a
// chart's div in the old instance, which React then removes: the chart vanished from the page (seen
// after a run's last full page run, in about one run of four). Every slot says which chart it wants;
// twice a second a chart whose div is off the page (or hidden) is put into the shown slot that wants
// it (a div shown on the page is never taken from its slot).
function shown(el) { return el.isConnected && !!(el.offsetWidth || el.offsetHeight); }
function heal() {
  for (const slot of document.querySelectorAll("div[data-bsvm-want]")) {
    if (!shown(slot) || slot.querySelector("div.bsvm-live")) continue;
    const div = live.divs.get(slot.dataset.bsvmWant);
    if (!div || shown(div)) continue;  // (a div in a hidden, stale instance is taken back too)
    slot.appendChild(div);
    live.healed = (live.healed || 0) + 1;  // read by the tests
    if (window.Plotly && div._fullLayout) window.Plotly.Plots.resize(div);
    // a draw that came due while the div was off the page was dropped from the queue (drawOne skips a
    // div that is not connected) but kept on the div: queue it again, or the chart stayed blank
    if (div._bsvmPending && window.Plotly) { live.dirty.add(div); schedule(0); }  // (else start() will)
  }
}
if (!live.healer) live.healer = setInterval(heal, 500);
// A clickable chart (click_chart): every click is queued, numbered, and the whole queue handed to Python,
// so that clicks made while the page reruns are not lost (a selection event carried only the newest).
function queueClick(key, ev) {
  const p = ev && ev.points && ev.points[0];
  if (!p) return;
  live.epoch = live.epoch || (Date.now().toString(36) + Math.random().toString(36).slice(2));
  const queues = live.clicks = live.clicks || {};
  const list = queues[key] = queues[key] || [];
  live.clickN = (live.clickN || 0) + 1;
  list.push({n: live.clickN, x: p.x, y: p.y});
  if (list.length > 100) list.splice(0, list.length - 100);
  const set = (live.setters || new Map()).get(key);
  if (set) set("clicks", {epoch: live.epoch, items: list.slice()});
  // (the clicked point's hover label stayed over the canvas until the mouse moved: a teacher's crawl)
  const div = (live.divs || new Map()).get(key);
  if (div && window.Plotly && window.Plotly.Fx) window.Plotly.Fx.unhover(div);
}
// Show chart ``c`` ({key, rev, fig?, height}) in ``slot``.
function showChart(slot, c, url) {
  slot.dataset.bsvmWant = c.key;
  // The server sends a figure only when it is new (or on a full page run); between two, only its
  // revision, and the figure is taken from this tab's cache (a chart remounted by a rerun starts empty).
  if (c.fig) live.specs.set(c.key, {rev: c.rev, spec: c.fig});
  const known = live.specs.get(c.key);
  if (!known || known.rev !== c.rev) return;  // not received yet: keep what is shown
  let div = slot.querySelector("div.bsvm-live");
  if (div && div.dataset.key !== c.key) { div.remove(); div = null; }  // another chart in this place
  if (!div) {
    // A full page run remounts the component: move this key's chart into the new place instead of
    // drawing a new one, so that Plotly updates it (a first draw in a new div costs 2-3 redraws).
    div = live.divs.get(c.key);
    if (!div) {
      div = document.createElement("div");
      div.className = "bsvm-live";
    }
    slot.appendChild(div);
    live.divs.set(c.key, div);
  }
  div.style.height = (c.height || 450) + "px";
  div.dataset.key = c.key;
  // this figure is already shown here (the same revision of the same figure: a server restarted
  // with this tab open counts revisions from 1 again)
  const present = c.present !== undefined ? !!c.present : live.present;  // (a chart styled on the server)
  if (div.dataset.drawn === String(c.rev) && div._bsvmShown === known.spec &&
      div._bsvmPresent === present) return;
  div.dataset.revision = String(c.rev);
  div._bsvmPending = {spec: known.spec, rev: c.rev, present: present, config: c.config, clicks: !!c.clicks};
  const start = () => loadPlotly(url).then(() => { live.dirty.add(div); schedule(0); })
    .catch((err) => { div.textContent = String(err); });
  // plotly.js not loaded yet (a first page): load it once the page's widgets are drawn and usable
  if (window.Plotly) start();
  else if (window.requestIdleCallback) window.requestIdleCallback(start, {timeout: 1500});
  else setTimeout(start, 300);
}
export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const base = window.location.pathname.replace(/\/[^\/]*$/, "");
  const url = data ? base + "/component/" + data.asset + "/plotly.min.js" : "";
  if (data && data.preload) {  // after the page has drawn: the 4.7 MB script must not delay it
    setTimeout(() => loadPlotly(url).then(warmUp).catch(() => {}), 2500);
    return;
  }
  if (!data) return;
  if (data.present !== undefined) live.present = !!data.present;
  if (data.clicks) {
    (live.setters = live.setters || new Map()).set(data.key, setStateValue);
    // another session on this page (a server restart): its clicks start afresh, or the page would
    // replay the queue's old edits onto data rebuilt from the link (a review)
    if (data.session && live.clickSession !== data.session) {
      live.clickSession = data.session;
      live.clicks = {};
    }
  }
  if (data.charts) {  // several charts in a grid: one element for the page to update, not one each
    let grid = parentElement.querySelector("div.bsvm-grid");
    if (!grid) {
      grid = document.createElement("div");
      grid.className = "bsvm-grid";
      grid.style.cssText = "display:grid;gap:1rem;grid-template-columns:repeat(" + (data.columns || 2) +
        ",minmax(0,1fr));";
      parentElement.appendChild(grid);
    }
    data.charts.forEach((c, i) => {
      let slot = grid.children[i];
      if (!slot) {
        slot = document.createElement("div");
        slot.style.minWidth = "0";
        grid.appendChild(slot);
      }
      showChart(slot, c, url);
    });
    while (grid.children.length > data.charts.length) grid.lastChild.remove();
    return;
  }
  if (data.rev !== undefined) showChart(parentElement, data, url);
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
        return v2.component(_NAME, html="", js=_JS.replace("__CONFIG__", json.dumps(PLOTLY_CONFIG)),
                            isolate_styles=False)
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


def _entry(fig, key: str, full: bool) -> tuple[dict, tuple]:
    """The payload for one chart (its figure only when new or ``full``) and its new (rev, digest)."""
    spec = _spec(fig)
    last = st.session_state.get(f"_live:{key}")
    digest = hash(spec)
    same = last is not None and last[1] == digest
    rev = last[0] if same else (last[0] if last else 0) + 1
    height = getattr(getattr(fig, "layout", None), "height", None) or 450
    entry = {"key": key, "rev": rev, "height": height}
    if full or not same:
        entry["fig"] = spec
    return entry, (rev, digest)


def _presenting() -> bool:
    from .ui import presenting  # (ui imports the method registry: not at this module's import)

    return presenting()


def live_chart(fig, key: str, full: bool = False) -> None:
    """Draw ``fig`` (a ``go.Figure``) under ``key``, updating the chart already shown with that key.

    The figure's JSON goes to the browser only when it differs from the one sent last under ``key`` (a
    live view passes the same figure again until it has a newer one: the map between two predictions,
    the curves between two records), or when ``full`` (a full page run: the charts are remounted).
    Otherwise only its revision goes, and the browser draws the figure it keeps for that revision. A
    redraw then costs the server and the browser almost nothing for the charts that did not change."""
    mount = _component()
    if mount is None:
        st.plotly_chart(fig, key=key, config=PLOTLY_CONFIG)
        return
    entry, state = _entry(fig, key, full)
    mount(key=key, data={**entry, "asset": asset_name(), "present": _presenting()}, height="content")
    # recorded once the element has been queued: a run interrupted before then sends the figure again
    st.session_state[f"_live:{key}"] = state


def click_chart(fig, key: str, config: dict | None = None):
    """Draw ``fig`` as :func:`live_chart` does (updated in place under ``key``, the figure styled on the
    server: no presentation restyling in the browser) and return the clicks made on it that this session
    has not seen yet, oldest first, as (x, y) pairs of the clicked point; None where the component is
    unavailable (the caller then uses ``st.plotly_chart``'s selection).

    Why: ``st.plotly_chart(on_select="rerun")`` hands the page only the newest selection, so a click
    made while the page reran after the previous one replaced it: ten clicks 150-450 ms apart on the
    playground added 3-4 points (a teacher's clicks). Here the browser numbers every click and sends the
    queue (its last 100) with each one; the page applies those past the last one it applied."""
    mount = _component()
    if mount is None:
        return None
    entry, state = _entry(fig, key, full=True)
    session = st.session_state.setdefault("_click_session", secrets.token_hex(8))
    entry.update(clicks=True, present=False, config=config or {}, session=session)
    result = mount(key=key, data={**entry, "asset": asset_name()}, height="content",
                   on_clicks_change=lambda: None)
    st.session_state[f"_live:{key}"] = state
    got = getattr(result, "clicks", None) or {}
    items = [i for i in got.get("items", []) if isinstance(i, dict) and "n" in i]
    if not items:
        return []
    seen_key = f"_clicks:{key}"
    epoch, last = st.session_state.get(seen_key, (None, 0))
    start = last if epoch == got.get("epoch") else 0
    new = [(float(i["x"]), float(i["y"])) for i in sorted(items, key=lambda i: i["n"]) if i["n"] > start]
    # (recorded now; the caller applies them before its next element, where no rerun can cut in)
    st.session_state[seen_key] = (got.get("epoch"), max(i["n"] for i in items))
    return new


def _forget(key: str) -> bool:
    """Let this script run mount the element keyed ``key`` once more (into the same placeholder).

    Streamlit refuses a key twice in one script run (StreamlitDuplicateElementKey). A live view that
    loops inside its script run (dashboard/views/train.py) replaces its charts in one ``st.empty``
    again and again: the same element, updated in place, which is what the key is for. Streamlit has
    no public way to say so, so the key and its element id are taken out of the run's sets of keys
    seen (Streamlit 1.67's ``ThreadSafeSet``). Returns False where that is not possible (another
    Streamlit): the caller then does not loop."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        shared = ctx.shared
        for seen in (shared.widget_user_keys_this_run, shared.widget_ids_this_run):
            with seen._lock:
                seen._data = {v for v in seen._data if v != key and not v.endswith("-" + key)}
        return True
    except Exception:  # noqa: BLE001 - internals moved: no loop
        return False


def can_redraw_in_place() -> bool:
    """Whether :func:`live_charts` can be called again in one script run with ``again=True``."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        shared = get_script_run_ctx().shared
        return all(hasattr(s, "_data") and hasattr(s, "_lock")
                   for s in (shared.widget_user_keys_this_run, shared.widget_ids_this_run))
    except Exception:  # noqa: BLE001
        return False


def _even_rows(figs, columns: int) -> None:
    """Each chart of a grid row as tall as the row's tallest, maps aside (their plot is held square): a
    grid row is as tall as its tallest chart, and the Train page's U chart beside the sampler's three
    stacked statistics left a band of ~280 px blank under it (a crawl)."""
    from .ui import _square_map

    for r in range(0, len(figs), columns):
        row = [f for f in figs[r:r + columns] if getattr(getattr(f, "layout", None), "height", None)]
        if len(row) < 2:
            continue
        tallest = max(int(f.layout.height) for f in row)
        for f in row:
            if int(f.layout.height) < tallest and not _square_map(f):
                f.update_layout(height=tallest)
                _SPECS.pop(id(f), None)  # (its JSON, if made already, had the old height)


def live_charts(charts, key: str, full: bool = False, columns: int = 2, again: bool = False) -> None:
    """Several live charts (``(fig, chart_key)`` pairs) in a grid of ``columns``, as one page element:
    a live view's redraw then updates one element instead of one per chart and its layout columns
    (each update costs the browser a render of the page's element tree). Each chart is sent as
    :func:`live_chart` sends it. ``again``: this script run has mounted ``key`` already and replaces
    it (a looping live view, inside the same ``st.empty``)."""
    mount = _component()
    if not _presenting():
        # (presentation mode's layout, in the browser, grows a chart by its legend's rows: evened here
        # first, the traces stood 84 px taller than the map beside them, a review)
        _even_rows([fig for fig, _ in charts], columns)
    if mount is None:
        cols = st.columns(columns)
        for i, (fig, k) in enumerate(charts):
            with cols[i % columns]:
                st.plotly_chart(fig, key=k, config=PLOTLY_CONFIG)
        return
    made = [_entry(fig, k, full) for fig, k in charts]
    if again:  # the same element once more in this script run (see _forget)
        _forget(key)
    mount(key=key, data={"charts": [e for e, _ in made], "columns": columns, "asset": asset_name(),
                         "present": _presenting()}, height="content")
    for (_, k), (_, state) in zip(charts, made):
        st.session_state[f"_live:{k}"] = state
