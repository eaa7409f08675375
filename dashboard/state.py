"""Session state shared by the pages, and its mirror in the URL query string.

All settings live in one plain dict, ``st.session_state["cfg"]``. Widgets are bound to it through
:func:`bind`: a widget's own key is seeded from the dict when the widget (re)appears and its value is
copied back after every run, so settings survive page switches (Streamlit forgets the state of widgets
that are not drawn). :func:`sync_url` writes the dict to ``st.query_params`` and :func:`init` reads it
back on a session's first run, so a shared link opens the same demo.
"""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING

import streamlit as st

from bsvm.samples import SAMPLES, sample_path

from .methods import METHODS
from .runner import DONE, FAILED, Registry, Run

if TYPE_CHECKING:  # imported where used: both import pandas (~0.3 s), which the Data page's first
    # elements (app.py's first run in a new server) must not wait for
    from bsvm.data import LoadedCSV

    from .analysis import Prepared

#: seconds a page change waits for the fits it stopped to hand back their state (see enter_page)
HALT_WAIT = 1.0

UPLOAD = "upload"
PLAYGROUND = "playground"  # generated 2-D points edited by clicks (dashboard/playground.py)
MAX_UPLOAD_MB = 20
DEFAULTS = {"sample": "ripley.csv", "label": "label", "features": [], "std": True, "test": 0.3, "seed": 0,
            "method": "sbsvm", "dropna": False, "droprare": False}
_QP = {"sample": "sample", "label": "label", "features": "features", "std": "std", "test": "test",
       "seed": "seed", "method": "method"}


#: the Data page's test-fraction slider and seed box: links outside them are ignored
TEST_RANGE = (0.1, 0.5)
SEED_MAX = 2**31 - 1


def cfg() -> dict:
    if "cfg" not in st.session_state:
        st.session_state["cfg"] = {**DEFAULTS, "features": [], "opts": {}}
    return st.session_state["cfg"]


def method_options(key: str) -> dict:
    """The chosen options of one method (its defaults filled in)."""
    opts = cfg()["opts"].setdefault(key, {})
    for name, value in METHODS[key].defaults().items():
        opts.setdefault(name, value)
    return opts


# ------------------------------------------------------------------------------------------- URL sync


#: method names a link may use for a sampler of another method's page (``?method=hmc``)
METHOD_ALIASES = {"hmc": ("subgradient_hmc", "hmc"), "sgld": ("subgradient_hmc", "sgld"),
                  "sgnht": ("subgradient_hmc", "sgnht")}


#: the Data page's option to drop unusable rows of an upload (bsvm.data.load_csv's dropna)
DROP_LABEL = "Drop rows with missing or unusable values"
#: ... and the rows of classes too small to split (dashboard.analysis.prepare's drop_rare)
DROP_RARE_LABEL = "Leave out classes with a single row"

#: session-state key of the sidebar's presentation-mode toggle (``ui.presentation_toggle``); ``?present=1``
#: in a link turns it on, so a lecture's prepared links open ready for the projector
PRESENTATION_KEY = "presentation"


def presenting() -> bool:
    """Whether presentation mode is on (larger type for a projector; ``ui.presentation_toggle``)."""
    return bool(st.session_state.get(PRESENTATION_KEY))


def _parse(params: dict) -> dict:
    """The settings of a link's query string. What cannot be used is left out and said in ``notes``
    (a link with a mistyped sample or method opened Ripley and S-BSVM without a word)."""
    out: dict = {"opts": {}, "notes": []}
    notes = out["notes"]
    sample = params.get("sample")
    if sample in SAMPLES or sample == PLAYGROUND:
        out["sample"] = sample
    elif sample == UPLOAD:
        notes.append("The link was to an uploaded CSV, which a new session does not have: upload it again "
                     "(Data set: Upload a CSV) - the sample below is shown meanwhile.")
    elif sample:
        notes.append(f"The link's data set {sample!r} is not one of the shipped samples "
                     f"({', '.join(SAMPLES)}): the first sample is shown.")
    # an upload's label and feature columns are the file's: not those of the sample shown instead
    if "label" in params and sample != UPLOAD:
        out["label"] = str(params["label"])
    if params.get("features") and sample != UPLOAD:
        out["features"] = [f for f in str(params["features"]).split(",") if f]
    if "std" in params:
        out["std"] = str(params["std"]) not in ("0", "false", "False")
    if "present" in params:
        out["present"] = str(params["present"]) not in ("0", "false", "False")
    try:
        if "test" in params:
            t = float(params["test"])
            if TEST_RANGE[0] <= t <= TEST_RANGE[1]:  # the Data page's slider (a value outside it raised)
                out["test"] = t
    except ValueError:
        pass
    try:  # (apart: a test fraction that is no number must not lose the seed)
        if "seed" in params:
            seed = int(params["seed"])
            if 0 <= seed <= SEED_MAX:  # the seed box's range (?seed=-1 raised on the Data page)
                out["seed"] = seed
    except ValueError:
        pass
    if "test" in params and "test" not in out:
        notes.append(f"The link's test fraction {params['test']!r} is not between {TEST_RANGE[0]:g} and "
                     f"{TEST_RANGE[1]:g}: the default is used.")
    if "seed" in params and "seed" not in out:
        notes.append(f"The link's seed {params['seed']!r} is not a whole number from 0 to {SEED_MAX:,}: the "
                     "default is used.")
    method = params.get("method")
    alias = METHOD_ALIASES.get(str(method).lower()) if method not in METHODS else None
    if alias is not None:
        method = alias[0]
        params = {**params, "o.sampler": alias[1]}
    elif method is not None and method not in METHODS:
        notes.append(f"The link's method {method!r} is not one of {', '.join(METHODS)}: the default "
                     "method is used.")
    if method in METHODS:
        out["method"] = method
        for opt in METHODS[method].options:
            raw = params.get(f"o.{opt.name}")
            if raw is not None:
                v = opt.parse(raw)
                if v is not None:
                    out["opts"].setdefault(method, {})[opt.name] = v
    return out


def init() -> None:
    """On a session's first run, take the settings from the URL query string."""
    c = cfg()
    if st.session_state.get("_url_read"):
        return
    st.session_state["_url_read"] = True
    params = {k: st.query_params.get(k) for k in st.query_params.keys()}
    parsed = _parse(params)
    # (a reloaded tab gets its upload back from its old session, dashboard/tabs.py: with it the data
    # settings the link could not give)
    st.session_state["_url_upload"] = params.get("sample") == UPLOAD
    opts = parsed.pop("opts")
    st.session_state["_url_notes"] = parsed.pop("notes")  # shown once, by url_notes()
    if parsed.pop("present", False):  # (a widget's key: set before the toggle is drawn, in app.py)
        st.session_state[PRESENTATION_KEY] = True
    c.update(parsed)
    for m, o in opts.items():
        c["opts"].setdefault(m, {}).update(o)
    if c.get("sample") == PLAYGROUND:
        _playground_from_url(params)


def url_notes() -> None:
    """Say, once, what of the link's settings could not be used (app.py, above the page). Again in the
    rerun the tab's id comes with (dashboard/tabs.py), right after the first run: the notes had vanished
    with it before a user could read them."""
    from dashboard import tabs

    notes = st.session_state.pop("_url_notes", None)
    if notes is None and tabs.reported_now():
        notes = st.session_state.get("_url_notes_shown")
    st.session_state["_url_notes_shown"] = notes
    for note in notes or []:
        st.warning(note, icon=":material/link_off:")


def playground_settings() -> dict:
    """The playground's generator (``gen``), points (``n``) and noise per generator (``noise_<gen>``): a
    session's own dict, so they outlive the Data page's widgets (and go into links)."""
    return st.session_state.setdefault("pg_cfg", {"gen": "ripley", "n": 200})


def _playground_from_url(params: dict) -> None:
    """A playground link's generator (``pg``), number of points (``pg_n``) and noise (``noise``), into
    :func:`playground_settings`; values out of range are left out. (The clicked edits are not in a link.)"""
    from dashboard import playground  # SciPy: only for a playground link

    pgc = playground_settings()
    if params.get("pg") in playground.GENERATORS:
        pgc["gen"] = params["pg"]
    gen = pgc["gen"]
    _, _, _, (lo, hi) = playground.GENERATORS[gen]
    try:
        n = int(round(float(params.get("pg_n", "nan")) / 10.0)) * 10  # the slider's steps of 10
        if PG_POINTS[0] <= n <= PG_POINTS[1]:
            pgc["n"] = n
    except (TypeError, ValueError):
        pass
    try:
        noise = round(float(params.get("noise", "nan")), 2)
        if lo <= noise <= hi:
            pgc[f"noise_{gen}"] = noise
    except (TypeError, ValueError):
        pass


def playground_draw(gen: str, n: int, noise: float, seed: int):
    """Draw the playground's points and remember the settings they came from (``pg_settings``): the Data
    page draws afresh only when its settings change."""
    from dashboard import playground

    pg = playground.generate(gen, n, noise, seed)
    st.session_state["playground"] = pg
    st.session_state["pg_settings"] = (gen, n, round(noise, 4), seed)
    return pg


def _playground_draw(c: dict):
    """The playground's points drawn from its settings, when no page has drawn them yet (a link to the
    Train page opens the playground without the Data page: it said "Choose a data set" instead)."""
    from dashboard import playground

    pgc = playground_settings()
    gen = pgc["gen"]
    if gen == "blank":
        return playground_draw(gen, 0, 0.0, int(c["seed"]))
    return playground_draw(gen, int(pgc["n"]), float(pgc.get(f"noise_{gen}", playground.GENERATORS[gen][2])),
                           int(c["seed"]))


#: the playground's number of points: the Data page's slider range
PG_POINTS = (20, 1000)


def _playground_params() -> dict:
    """The playground's settings as query-string values (generator, points, noise; not the edits)."""
    pgc = playground_settings()
    gen = pgc["gen"]
    out = {"pg": str(gen)}
    if gen != "blank":
        out["pg_n"] = str(int(pgc["n"]))
        noise = pgc.get(f"noise_{gen}")
        # only a noise moved from the generator's default (Ripley's, sqrt(0.03), read "noise=0.173205")
        if noise is not None and abs(float(noise) - _default_noise(gen)) > 1e-9:
            out["noise"] = f"{float(noise):g}"
    return out


def _default_noise(gen: str) -> float:
    from dashboard import playground

    return float(playground.GENERATORS[gen][2])


def url_params() -> dict:
    """The settings as query-string values (method options only where they differ from the default)."""
    c = cfg()
    out = {}
    # (an upload too: its link then says, in a new session, that the file must be uploaded again; without
    # it the link opened the first sample with the upload's label column, "Label column 'klasse' not
    # found", a crawl)
    out["sample"] = c["sample"]
    if c["sample"] == PLAYGROUND:
        out.update(_playground_params())
    for k in ("label", "std", "test", "seed", "method"):
        v = c[k]
        out[_QP[k]] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    if c["features"] and c["sample"] not in (UPLOAD, PLAYGROUND):
        out["features"] = ",".join(c["features"])
    if st.session_state.get(PRESENTATION_KEY):
        out["present"] = "1"
    m = METHODS.get(c["method"])
    # Options only once some were chosen (the Train page fills them in): checking m.available imports the
    # method's module, and on the Data page's first run that import would delay the page by a second.
    if m is not None and c["opts"].get(m.key) and m.available:
        defaults = m.defaults()
        for name, v in method_options(m.key).items():
            if name in defaults and v != defaults[name]:
                out[f"o.{name}"] = str(v)
    return out


def sync_url() -> None:
    want = url_params()
    have = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if want != have:
        st.query_params.from_dict(want)


# ------------------------------------------------------------------------------------------- widgets


def bind(widget, name: str, label: str, store: dict | None = None, scope: str = "cfg", **kw):
    """Draw ``widget(label, key=..., **kw)`` bound to ``store[name]`` (default: the settings dict)."""
    store = cfg() if store is None else store
    wkey = f"w:{scope}:{name}"
    options = kw.get("options")
    if options is not None and store.get(name) not in list(options) and widget is not st.multiselect:
        store[name] = list(options)[0] if len(options) else None
    if options is not None and widget is st.multiselect:
        store[name] = [v for v in (store.get(name) or []) if v in list(options)]
    seeded = False
    if options is not None and wkey in st.session_state:
        have = st.session_state[wkey]
        stale = (any(v not in options for v in have) if widget is st.multiselect else have not in options)
        if stale:
            # the browser still shows the old choice: only a value set through the Session State API
            # is sent to it (a default is not, once the widget exists: its key alone is its identity)
            st.session_state[wkey] = store[name]
            seeded = True
    # Otherwise the setting is the widget's default, on every run, never a value put in st.session_state
    # first: after a full rerun asked for by a fragment (a job that finished, e.g. the playground's refit
    # just after a link opened), the browser showed such widgets at their first option or minimum while
    # the server kept the setting (6 of 8 fresh sessions of a playground link), and the first click sent
    # those values back, replacing the data.
    # (a value put in through the Session State API this run, dashboard/tabs.py: no default beside it)
    seeded = seeded or wkey in st.session_state.get("_seeded_widgets", ())
    initial = {} if seeded else _initial(widget, store[name], options)
    store[name] = widget(label, key=wkey, **kw, **initial)
    return store[name]


def _initial(widget, value, options) -> dict:
    """The keyword that makes ``value`` a widget's initial value."""
    if widget is st.selectbox:
        opts = list(options)
        return {"index": opts.index(value) if value in opts else 0}
    if widget is st.multiselect:
        return {"default": list(value or [])}
    return {"value": value}


# ------------------------------------------------------------------------------------------- data

@st.cache_resource(show_spinner=False, max_entries=32)
def _sample_table(sample: str, label: str, features: tuple) -> LoadedCSV:
    """A shipped sample, parsed once per server (shared read-only by every session)."""
    from bsvm.data import load_csv

    return load_csv(sample_path(sample), label=label, features=list(features) or None)


def loaded_table(c: dict) -> LoadedCSV | None:
    if c["sample"] == PLAYGROUND:
        pg = st.session_state.get("playground") or _playground_draw(c)
        return pg.loaded() if pg is not None else None
    if c["sample"] == UPLOAD:
        up = st.session_state.get("upload")
        if up is None:
            return None
        from bsvm.data import load_csv

        return load_csv(up["bytes"], label=c["label"], features=c["features"] or None,
                        dropna=bool(c.get("dropna")))
    return _sample_table(c["sample"], c["label"], tuple(c["features"]))


# ------------------------------------------------------------------------------------------- runs


def registry() -> Registry:
    """This session's runs and jobs (see dashboard/runner.py)."""
    reg = st.session_state.get("_registry")
    if reg is None:
        reg = st.session_state["_registry"] = Registry()
    return reg


def enter_page(page: str) -> None:
    """Called by app.py on every full run: when the user has left a page, stop what it started there
    (a stopped fit can Continue later) and say so."""
    prev = st.session_state.get("_page")
    st.session_state["_page"] = page
    if prev is None or prev == page:
        return
    halted = registry().halt_page(prev, f"you left the {prev.title()} page")
    # A fit in a child process hands its state back with the halt (it pickles it only when asked, see
    # dashboard/procrun.py): wait for it, one record (usually well under a second, at most HALT_WAIT), so
    # that the page opened shows the model where it stopped.
    t_end = time.perf_counter() + HALT_WAIT
    for item in halted:
        if isinstance(item, Run):
            item.join(max(0.0, t_end - time.perf_counter()))
    for item in halted:
        # a run whose end came before the halt is done, not stopped: the toast said "Stopped ... you left
        # the Train page" while the page said "done (converged)" (a crawl)
        if item.status not in (DONE, FAILED):  # (a failed run says why on its page; it did not stop)
            st.toast(stopped_text(item.label, f"you left the {prev.title()} page"),
                     icon=":material/stop_circle:")


def data_key(c: dict) -> str:
    src = c["sample"]
    if src == UPLOAD and st.session_state.get("upload") is not None:
        src = ("upload:" + st.session_state["upload"]["digest"] + f":na{int(bool(c.get('dropna')))}"
               f":rare{int(bool(c.get('droprare')))}")
    if src == PLAYGROUND and st.session_state.get("playground") is not None:
        src = "playground:" + st.session_state["playground"].digest
    return f"{src}|{c['label']}|{','.join(c['features'])}|{c['std']}|{c['test']}|{c['seed']}"


def run_data_meta(data: Prepared) -> dict:
    """What a run keeps of the data it is fitted to (in its ``run_meta``): the prepared split itself (the
    same object, not a copy), the settings and the upload's name. The Diagnostics page describes the
    run: after a change of data its posterior-draws chart drew the old fit over the new points, and
    "Run GibbsSVM on the same data" fitted the new rows and called the old run biased (a crawl)."""
    upload = st.session_state.get("upload") or {}
    return {"data": data, "cfg": copy.deepcopy(cfg()), "upload_name": upload.get("name")}


def run_settings(meta: dict | None = None) -> tuple[dict, str | None]:
    """The data settings and the data set's name (a sample's file, an upload's name) that a run was made
    with (its ``run_meta``, :func:`run_data_meta`), else the current ones."""
    if meta and "cfg" in meta:
        c, upload = meta["cfg"], meta.get("upload_name")
    else:
        c, upload = cfg(), (st.session_state.get("upload") or {}).get("name")
    return c, (upload if c.get("sample") == UPLOAD else c.get("sample"))


def current_data() -> Prepared | None:
    """The prepared split for the current settings, or None (with an st.error) when they do not work."""
    from .analysis import prepare

    c = cfg()
    if c["sample"] == PLAYGROUND and st.session_state.get("playground") is None:
        # the key names the points (their digest): drawn after it, they changed the key at the next
        # rerun, and a link's first Start on the Train page was stopped at once as "made for other
        # data" (a crawl)
        _playground_draw(c)
    key = data_key(c)
    cached = st.session_state.get("data")
    if cached is not None and cached.key == key:
        return cached
    st.session_state.pop("_data_said", None)
    try:
        loaded = loaded_table(c)
        if loaded is None:
            return None
        # what loading did to the rows (the Data page shows it: its caption counts the file's rows), and
        # the columns it left out for having one value in every row
        st.session_state["_load_notes"] = [n for n in getattr(loaded, "notes", [])
                                           if n.startswith("Dropped") or "same value in every row" in n
                                           or "like a row number" in n or "like row numbers" in n]
        truth = SAMPLES[c["sample"]].truth if c["sample"] in SAMPLES else None
        truth_kw = {}
        if c["sample"] == PLAYGROUND:
            truth, truth_kw = st.session_state["playground"].truth
        # analysis.prepare keeps the truth only on the generator's own axes (all columns, in order)
        data = prepare(loaded, c["features"] or None, c["std"], float(c["test"]), int(c["seed"]),
                       truth=truth, key=key, truth_kw=truth_kw,
                       drop_rare=c["sample"] == UPLOAD and bool(c.get("droprare")))
    except ValueError as exc:
        if c["sample"] == PLAYGROUND and (str(exc).startswith("Too few rows") or "one class" in str(exc)):
            # the empty canvas (or one with most points removed): a step to take, not a failure
            pg = st.session_state.get("playground")
            n0, n1 = pg.counts() if pg is not None else (0, 0)
            said = (str(exc) if str(exc).startswith("Too few rows") else
                    f"A fit needs points of both classes (now {n0} of class 0 and {n1} of class 1).")
            where = "" if st.session_state.get("_page") == "data" else " (on the Data page)"
            st.info(f"Click on the canvas{where} to add points of each class. {said}",
                    icon=":material/touch_app:")
            st.session_state["_data_said"] = "playground"  # what to do is said: require_data adds nothing
            return None
        if str(exc).startswith("Label column") and "not found" in str(exc) and c.get("label"):
            # a link's label column that this data set does not have (a hand-made or old link): the likely
            # one instead, and say so (it read "... Pass label= one of them", the library's words)
            st.warning(f"The label column {c['label']!r} (from the link) is not a column of this data set: "
                       "the likely one is used instead; choose another on the Data page.",
                       icon=":material/link_off:")
            c["label"] = None  # load_csv guesses it; then the setting (and the link) names the guess
            data = current_data()
            if data is not None:
                c["label"] = data.label_name
            return data
        st.session_state["_data_said"] = "refused"  # require_data does not say "choose one": they did
        up = st.session_state.get("upload") if c["sample"] == UPLOAD else None
        where = f" ({up['name']})" if up else ""
        from bsvm.data import UnusableRowsError  # (imported by the loading that raised exc already)

        if isinstance(exc, UnusableRowsError):  # in the page's words, not the API's
            s = "" if exc.n_total == 1 else "s"
            st.error(f"The data could not be used{where}: {exc.what.lower()} in {exc.n_rows} of "
                     f"{exc.n_total} row{s} (columns: {', '.join(exc.columns)}). Tick **{DROP_LABEL}** "
                     "under the upload to leave those rows out, or fix the file.")
        elif up and getattr(exc, "rare", None) and exc.classes_left >= 2 and not c.get("droprare"):
            # (a one-row class refused the whole file, and only editing the file helped: a crawl)
            # (the message ends "add rows" already: "..., or add rows" said it twice, a crawl)
            st.error(f"The data could not be used{where}: {exc} Or tick **{DROP_RARE_LABEL}** under the "
                     "upload to fit the other classes.")
        else:
            st.error(f"The data could not be used{where}: {exc}")
        return None
    st.session_state["data"] = data
    for item in registry().halt_data(key, "the data changed"):
        if not item.meta.get("replaced_quietly"):  # (the playground's refit: its new one says so itself)
            st.toast(stopped_text(item.label, "the data changed"), icon=":material/stop_circle:")
    return data


def stopped_text(label: str, why: str) -> str:
    """A halted item's toast: "Stopped S-BSVM: the data changed." for a run, "Fitting S-BSVM: stopped,
    the data changed." for a job whose label says what it does ("Stopped Fitting ..." read oddly, a
    crawl)."""
    first = label.split(" ", 1)[0]
    if first.endswith("ing") and first[:1].isupper():
        return f"{label}: stopped, {why}."
    return f"Stopped {label}: {why}."


def require_data() -> Prepared | None:
    data = current_data()
    if data is None:
        # after a refused file the user did choose one: "choose a data set first" read as if they had not
        said = st.session_state.get("_data_said")
        if said == "refused":
            st.info("The **Data** page has the upload's options and the other data sets.")
        elif said is None:
            st.info("Choose a data set on the **Data** page first.")
    return data


def method_for(data: Prepared | None):
    """The chosen method if it can run on this data, else the first that can."""
    from .methods import available_methods

    ok = available_methods(binary=data.binary if data is not None else True)
    chosen = METHODS.get(cfg()["method"])
    if chosen in ok:
        return chosen, ok
    fallback = ok[0] if ok else None
    if chosen is not None and chosen.available and fallback is not None and data is not None:
        # remembered (or linked) method that cannot handle this many classes: say so, see fallback_note
        st.session_state["method_fallback"] = {"wanted": chosen.key, "got": fallback.key, "data": data.key}
    return fallback, ok


def fallback_note(data: Prepared | None, method) -> str | None:
    """Why the page shows ``method`` rather than the one the user picked (a binary-only method on a
    data set with 3+ classes), while that is still the case; None otherwise."""
    fb = st.session_state.get("method_fallback")
    if not fb or data is None or method is None or fb["data"] != data.key or fb["got"] != method.key:
        return None
    wanted = METHODS[fb["wanted"]]
    classes = ", ".join(map(str, data.classes))
    return (f"**{wanted.label}** handles two classes only, and this data set has {len(data.classes)} "
            f"({classes}), so **{method.label}** is selected instead. Methods for 3+ classes: "
            + ", ".join(m.label for m in available_methods_for(data))
            + ". Or pick a two-class data set on the **Data** page.")


def available_methods_for(data: Prepared | None):
    from .methods import available_methods

    return available_methods(binary=data.binary if data is not None else True)


def start_job(name: str, job) -> None:
    """Start ``job`` under ``name`` (cancelling the previous job of that name)."""
    registry().put(name, job)


def job_view(name: str, key=None, retry: bool = True):
    """Show the job ``name``: while it runs, a progress bar and a Cancel button redrawn by a fragment;
    afterwards its result (returned, when it finished for ``key``), a failure or a cancellation note
    (with a "Run again" button unless ``retry`` is False: the page has its own start button).
    Returns the job's result once it is done (and its ``meta["key"]`` equals ``key``), else None."""
    job = registry().get(name)
    if job is None or (key is not None and job.meta.get("key") != key):
        return None
    if job.status == "done":
        return job.result
    if job.status == "failed":
        st.error(f"{job.label} failed: {job.error}")
        return None
    if job.status == "cancelled":
        why = f" ({job.note})" if job.note and job.note != "reset" else ""
        where = st
        if retry:
            where, b = st.columns([5, 1])
            b.button("Run again", key=f"retry:{name}", on_click=_forget_job, args=(name,))
        where.info(f"{job.label}: cancelled{why}.", icon=":material/cancel:")
        return None
    _job_progress(name)
    return None


def rerun_app() -> None:
    """``st.rerun(scope="app")``, unless the user's own request is waiting (a click on a sidebar link).
    With fast reruns off (:func:`runner_options`) a click waits for the running script, and Streamlit
    merges two waiting requests keeping the newer one's page: the page's own rerun, asked for just after
    the click (the Train page's, when a run ends), would rerun the page the user left. The waiting request
    is let run from a yield point (an element) instead, and this run ends there."""
    if rerun_waiting():
        st.empty()  # the waiting full-app request preempts here (RerunException with its page)
    st.rerun(scope="app")  # nothing waiting, or only a fragment's timer, which a full rerun covers


def guard_navigation() -> bool:
    """Keep a user's page change when a fragment's timer asks for a rerun behind it (once per server).

    With fast reruns off (:func:`runner_options`) a click that arrives while a script or fragment runs
    waits, and Streamlit 1.67 merges it with any later request, keeping the newer one's page. A timer
    (``st.fragment(run_every=...)``: the Train page's live view, the jobs' progress at 0.3 s) ticking
    just after a click on a sidebar link carries the page the browser still shows, and would send the user
    back. A timer's request now keeps the waiting request's page; two clicks still end on the second.
    Returns whether the guard is in place (False where Streamlit's internals differ: nothing changed)."""
    try:
        import dataclasses

        from streamlit.runtime.scriptrunner_utils import script_requests as sr

        cls = sr.ScriptRequests
        if getattr(cls, "_bsvm_guarded", False):
            return True
        original = cls._request_rerun_locked

        def request(self, new_data):
            pending = self._rerun_data
            if (_tab_report(self, new_data) and pending.page_script_hash
                    and new_data.page_script_hash != pending.page_script_hash):
                # The tab's id, reported by its component right after a session's first run
                # (dashboard/tabs.py), is no page change: it carries the page the browser showed when
                # it was sent, and a click on a sidebar link just before it was undone (a browser test
                # under load). It keeps the page waiting to run (and its link), or else the one that
                # ran last (with the browser's link, which the server may have rewritten since).
                waiting = self._state == sr.ScriptRequestType.RERUN
                new_data = dataclasses.replace(
                    new_data, page_script_hash=pending.page_script_hash, page_name=pending.page_name,
                    query_string=pending.query_string if waiting else new_data.query_string)
            elif (self._state == sr.ScriptRequestType.RERUN and new_data.is_auto_rerun
                    and not pending.is_auto_rerun and not pending.is_fragment_scoped_rerun
                    and not pending.fragment_id_queue and pending.page_script_hash
                    and new_data.page_script_hash != pending.page_script_hash):
                new_data = dataclasses.replace(new_data, page_script_hash=pending.page_script_hash,
                                               page_name=pending.page_name, query_string=pending.query_string)
            return original(self, new_data)

        cls._request_rerun_locked = request
        cls._bsvm_guarded = True
        return True
    except Exception:  # noqa: BLE001 - internals moved: Streamlit's own merging
        return False


def _tab_report(requests, new) -> bool:
    """Whether rerun request ``new`` is the tab-id component's report: its value differs from the last
    one this session's ``requests`` saw (kept on them). Compared with the pending or last request instead,
    a fragment's timer rerun, which carries no widget states, made the next click on a sidebar link look
    like a report, and the link was undone (Diagnostics never opened after a stopped run)."""
    try:
        from dashboard.tabs import KEY

        states = new.widget_states.widgets if new.widget_states else []
        values = [w for w in states if w.id == KEY or w.id.endswith(f"-{KEY}")]
        if not values:
            return False
        value = values[0].SerializeToString()
        seen = getattr(requests, "_bsvm_tab_seen", None)
        requests._bsvm_tab_seen = value
        return value != seen
    except Exception:  # noqa: BLE001 - another Streamlit's request format
        return False


def runner_options() -> None:
    """``runner.fastReruns = false`` and ``runner.postScriptGC = false`` for this server, also when it was
    started from another folder than the repository's root (whose .streamlit/config.toml sets them; see
    there for why; app.py collects garbage itself, :func:`collect_garbage`). Streamlit reads the options
    on every rerun but refuses ``st.set_option`` for them, hence its internal setter; where that moved, the
    server keeps its own settings."""
    try:
        from streamlit import config

        for option in ("runner.fastReruns", "runner.postScriptGC"):
            if config.get_option(option):
                config._set_option(option, False, "dashboard/state.py")
    except Exception:  # noqa: BLE001 - internals moved
        pass


def collect_garbage(interrupted: bool) -> None:
    """The full garbage collection Streamlit would run after every script run (``runner.postScriptGC``,
    turned off by :func:`runner_options`), run here at the end of a page's run, unless the run ``interrupted``
    is ending for a rerun or a stop (a click waiting: it would wait for the collection).

    With streamlit, plotly, scipy, scikit-learn and bsvm loaded that collection walks ~180,000 objects:
    90 ms on a quiet core, 0.15-0.5 s on this 2-core machine under load, traced as the gap between the
    Train page's live loop giving way to a click and the click's callback. Collecting here keeps what the
    collection is for: a session Streamlit has let go of (its run registry is in reference cycles) is
    freed, and its registry's finaliser cancels the fits it left running, at the next page run of any
    session. (Streamlit keeps a closed tab's session for a reconnect, 2 minutes or more: the runs of a
    closed tab are cancelled sooner by dashboard/tabs.py's janitor.)
    (gc.freeze made the collection cheap too, but it kept every session alive at a freeze: a review.)"""
    if interrupted:
        return
    import gc

    gc.collect()


def rerun_waiting() -> bool:
    """Whether a request waits that would stop this script run at its next element: a click (a full-app
    rerun) or a stop, not a fragment's timer. With ``runner.fastReruns = false`` (.streamlit/config.toml)
    a click is served only at the next element of the running script, so a loop that draws nothing for a
    while looks here and makes an element when it is true (Stop took 0.4-0.6 s instead of 0.3-0.45 s)."""
    try:
        from streamlit.runtime.scriptrunner_utils import script_requests as sr
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        reqs = get_script_run_ctx().script_requests
        if reqs is None:
            return False
        if reqs._state == sr.ScriptRequestType.STOP:
            return True
        data = reqs._rerun_data
        return reqs._state == sr.ScriptRequestType.RERUN and not sr._fragment_run_should_not_preempt_script(
            data.fragment_id_queue, data.is_fragment_scoped_rerun)
    except Exception:  # noqa: BLE001 - internals moved: the loop's own pace
        return False


@st.fragment(run_every=0.3)
def _job_progress(name: str) -> None:
    job = registry().get(name)
    if job is None:
        return
    if job.status != "running":
        rerun_app()  # finished, failed or cancelled: let the page show the outcome
    a, b = st.columns([5, 1])
    text = job.text or f"{job.label}: working"
    a.progress(job.fraction, text=f"{text} ({job.elapsed:.1f} s)")
    b.button("Cancel", key=f"cancel:{name}", icon=":material/cancel:", on_click=_cancel_job, args=(name,))


def _forget_job(name: str) -> None:
    registry().items.pop(name, None)


def _cancel_job(name: str) -> None:
    job = registry().get(name)
    if job is not None:
        job.cancel("cancelled by you")
