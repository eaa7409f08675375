"""Train page: a method fitted live by a background worker; the page only redraws what it published.

The fit runs in the session's run registry (dashboard/runner.py), not in this script: the buttons set
flags through callbacks and return at once. While the run computes, a fragment redraws the newest
progress records every ``LOOP_PERIOD`` in a loop inside its script run, updating its placeholders and
charts in place (dashboard/livechart.py); a click on a control starts a new script run, which
interrupts the loop. The fragment's timer (``TIMER_WHILE_LOOPING``) only restarts a loop that has run
for ``LOOP_SECONDS``. The live map asks the run for a new snapshot of its state only when it is due
(``Run.want_snapshot``): a fit in a child process pickles its state for nobody otherwise."""

import threading
import time

import streamlit as st

from dashboard import figures, state, ui
from dashboard.analysis import (
    BarReading,
    baseline_sentence,
    check_text,
    cost_caption,
    last_check,
    page_warning,
    param_names,
    scale_warned,
    stack_summary,
    staged_text,
)
from dashboard.livechart import can_redraw_in_place, live_charts
from dashboard.methods import SEED_HELP, run_method_name
from dashboard.procrun import FINAL_DRAWS, ProcessRun, map_model, prewarm, thinned, yield_to_fits
from dashboard.runner import (
    DONE,
    FAILED,
    MAP_GRID,
    PAUSED,
    REDRAW_SECONDS,
    RUNNING,
    STOPPED,
    Run,
    trace,
)

PAGE = "train"
#: the live map waits this many times its own computing time before it is recomputed, and at least
#: MAP_SECONDS: each new map costs the server a prediction and the browser a redraw of its heatmap
MAP_SHARE = 5.0
MAP_SECONDS = 2.0
#: a finished run that computed for less than this many seconds suggests Slow motion
QUICK_RUN_SECONDS = 3.0
#: the first live map (and the first statistics and trace charts) of a run come this long after its
#: start: the start is when the browser is busiest (the page redrawn after the click, the first draws),
#: and most of the default fits on the sample data end sooner; those draw these charts once, at the end
#: the final charts' PNG buttons, short enough for a quarter of the width in presentation mode
#: ("learning curve" was cut)
PNG_LABELS = {"ard_weights": "ARD"}
MAP_FIRST_SECONDS = 1.0
#: training points drawn on the live map (a fixed random subset beyond): each is an SVG element that the
#: browser restyles with every new map; the finished run's map shows FINAL_POINTS
LIVE_POINTS = 250
#: grid points per axis of the live map while the run goes on (MAP_GRID once it has finished)
LIVE_GRID = 30
#: while a run goes on, the objective is redrawn with every new record, the statistics and trace charts
#: at most this often (so the browser's and the server's drawing time goes to the learning curve)
SECONDARY_SECONDS = 2.0
FINAL_POINTS = 800
#: while a run goes on, the live view redraws in a loop inside its script run: every LOOP_PERIOD
#: seconds, resting at least LOOP_MIN_REST between two redraws (a slow redraw must not take the whole
#: period), checking every POLL seconds whether the run has ended (then the page is redrawn at once).
#: One script run loops for at most LOOP_SECONDS, then the fragment's timer starts the next.
LOOP_PERIOD = 0.2
LOOP_MIN_REST = 0.05
POLL = 0.01
#: the wait between writing a run's new status and rerunning the page (see rerun_after_flush)
FLUSH_SECONDS = 0.03
LOOP_SECONDS = 60.0
TIMER_WHILE_LOOPING = 1.0

trace("script-start")
st.title("Train")
data = state.require_data()
if data is None:
    st.stop()
method, available = state.method_for(data)
if method is None:
    st.error("No method can run on this data set.")
    st.stop()

reg = state.registry()
# The fits run in processes forked from a forkserver that imports and warms up the estimators once per
# server: start it when this page opens (a Start click is likely), not earlier: its seconds of imports
# would slow the Data page a new user opens first.
prewarm(0)
note_slot = st.empty()  # filled once the method selectbox has taken the user's choice
c = state.cfg()
run: Run | None = reg.get(PAGE)
# busy: the child computes (until it has acknowledged a Pause/Stop): the live view keeps redrawing.
# locked: the user's last request was to run: options and Start/Step/Continue are off. After Stop the
# buttons follow the request at once, not the child's acknowledgement: a Continue or Step sent while
# the child finishes its record is queued behind the halt, and Start replaces the run.
busy = run is not None and (run.status == RUNNING or run.busy)
locked = run is not None and run.status == RUNNING
stale = run is not None and run.meta.get("data_key") != data.key
if run is not None:
    ui.download_run(run.meta, run_method_name(run.meta))

left, right = st.columns([1, 3])
with left:
    keys = [m.key for m in available]
    c["method"] = method.key
    # the short names in the list, the description under it: at 1280 px this quarter-width column cut
    # the full labels ("S-BSVM (stochastic variat")
    state.bind(st.selectbox, "method", "Method", options=keys,
               format_func=lambda k: next(m.short_name for m in available if m.key == k),
               help="Methods that cannot handle this data set (e.g. binary-only methods on 3 classes) are "
                    "hidden. Each is a scikit-learn estimator in the bsvm package.", disabled=locked)
    method = next(m for m in available if m.key == c["method"])
    if " (" in method.label:
        about = method.label.split(" (", 1)[1].rstrip(")")
        st.caption(about[0].upper() + about[1:])
    note = state.fallback_note(data, method)
    if note:
        note_slot.warning(note, icon=":material/info:")
    # open until the first run has ended (not closed by the Start click: the browser then re-laid out the
    # column while the fit ran, 0.08 CPU s of a 0.6 s S-BSVM run on the Ripley sample, measured with
    # /work/coord/s31/mine/startcost.py; and "what good looks like" is read while watching); closed from
    # then on, so a later Start does not open it again; Reset starts over
    if run is not None and not busy:
        st.session_state["_train_explained"] = True
    explain = run is None or (busy and not st.session_state.get("_train_explained", False))
    with st.expander("What am I looking at?", expanded=explain):
        st.markdown(method.summary)
        st.markdown(f"**What good looks like:** {method.good}")
    st.subheader("Options")
    opts = ui.option_widgets(method, disabled=locked, n_classes=len(data.classes))
    st.caption("Changed options take effect at the next **Start**.")
    st.caption(SEED_HELP)


def cost_estimate():
    """The estimator's cost estimate for this data (bsvm.cost, the same check ``fit`` makes before it
    allocates anything): (cost or None, refusal message or "", warning or "")."""
    est = ui.safe(method.make, dict(opts), int(c["seed"]), what=f"Setting up {method.label}")
    if est is None or not hasattr(est, "estimate_cost"):  # a library without cost guards
        return None, "", ""
    n, d, k = len(data.y_train), data.n_features, len(data.classes)
    try:
        import warnings

        from bsvm.cost import check_cost

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cost = check_cost(est, n, d, k)
        return cost, "", " ".join(str(w.message) for w in caught)
    except ImportError:
        pass
    except ValueError as exc:  # CostError: fit would refuse, with the estimate and what to do instead
        try:
            return est.estimate_cost(n, d, k), str(exc), ""
        except Exception:  # noqa: BLE001
            return None, str(exc), ""
    except Exception as exc:  # noqa: BLE001 - an estimate that fails must not block the page
        return None, "", f"No cost estimate: {type(exc).__name__}: {exc}"
    try:
        return est.estimate_cost(n, d, k), "", ""
    except Exception as exc:  # noqa: BLE001
        return None, "", f"No cost estimate: {type(exc).__name__}: {exc}"


def page_words(refused: str) -> str:
    """A memory refusal (bsvm.cost.CostError) in this page's words: method labels instead of class names,
    and the page's way to fewer training rows (it said "subsample", which the dashboard has no control
    for, a crawl)."""
    import re

    said = refused.replace("SubgradientHMC(features='nystroem')", "Subgradient MCMC with Features: nystroem")
    said = re.sub(r"\buse SBSVM\b", "use S-BSVM", said)
    said = re.sub(r"^\w+ needs", f"{method.short_name} needs", said)
    return re.sub(r"subsample to ([\d,]+) rows",
                  rf"use at most \1 training rows (now {len(data.y_train):,}: a larger Test fraction on the "
                  "Data page leaves fewer)", said)


# -- controls: callbacks run before the script, so the buttons are drawn with the new state ------------

def _safe(fn):
    def wrapped():
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a control must never show a traceback
            st.session_state["train_msg"] = f"{type(exc).__name__}: {exc}"
    return wrapped


def _new_run() -> Run | None:
    try:
        est = method.make(dict(opts), int(c["seed"]), n_classes=len(data.classes))
    except Exception as exc:  # noqa: BLE001
        st.session_state["train_msg"] = f"Setting up {method.label} failed: {exc}"
        return None
    label = method.run_label(opts)  # (the sampler's own name where the method has several)
    meta = {"method": method.key, "label": label, "options": dict(opts), "data_key": data.key,
            **state.run_data_meta(data)}
    # the fit runs in a child process (dashboard/procrun.py): the page's redraws cannot slow it down
    r = ProcessRun(est, data.X_train, data.y_train, max_iter=method.cap(opts), label=label,
                   page=PAGE, meta=meta)
    r.min_interval = REDRAW_SECONDS if st.session_state.get("slow_motion") else 0.0
    st.session_state["run"], st.session_state["run_meta"] = r, meta  # what the other pages read
    return r


@_safe
def on_start():
    trace("on_start")
    r = _new_run()
    if r is not None:
        reg.put(PAGE, r)


@_safe
def on_step():
    r = reg.get(PAGE)
    if (r is None or not r.can_resume or r.meta.get("data_key") != data.key
            or r.meta.get("method") != method.key):
        r = _new_run()
        if r is None:
            return
        reg.put(PAGE, r, start=False)
    r.step(wait=0.3)


@_safe
def on_pause():
    if (r := reg.get(PAGE)) is not None:
        r.pause()


@_safe
def on_stop():
    if (r := reg.get(PAGE)) is not None:
        r.stop()


@_safe
def on_continue():
    if (r := reg.get(PAGE)) is not None and r.meta.get("method") == method.key:
        r.resume()


@_safe
def on_reset():
    st.session_state.pop("_train_explained", None)
    reg.pop(PAGE)
    st.session_state.pop("run", None)
    st.session_state.pop("run_meta", None)


@_safe
def on_slow():
    st.session_state["_slow_motion_kept"] = bool(st.session_state.get("slow_motion"))
    if (r := reg.get(PAGE)) is not None:
        seconds = REDRAW_SECONDS if st.session_state.get("slow_motion") else 0.0
        if hasattr(r, "set_interval"):
            r.set_interval(seconds)
        else:
            r.min_interval = seconds


with right:
    if msg := st.session_state.pop("train_msg", None):
        st.error(msg)
    # no estimate while the child still computes (a Stop's own rerun stays quick): the options have not
    # changed since the run started, so it fits
    # (the estimate shown then is the one made before Start). Its two places are always there, filled or
    # empty: an element that comes and goes would shift the live charts' places at the run's end, and the
    # charts would vanish while the page computes the final figures.
    cost_slot, warn_slot = st.empty(), st.empty()
    if busy:
        cost, refused, warned = None, "", ""
        if shown := st.session_state.get("_train_cost_caption"):
            cost_slot.caption(shown)
    else:
        cost, refused, warned = cost_estimate()
        st.session_state.pop("_train_cost_caption", None)
    fits = not refused
    if refused:
        cost_slot.error(f"This run cannot fit in memory, so Start is off: {page_words(refused)}",
                        icon=":material/block:")
    elif cost is not None:
        # (presentation mode: one line, the details in brackets pushed the charts below a projector's fold)
        shown = st.session_state["_train_cost_caption"] = \
            cost_caption(cost, len(data.y_train), short=ui.presenting())
        cost_slot.caption(shown)
    if warned:
        warn_slot.warning(warned, icon=":material/schedule:")
    status = run.status if run is not None else None
    # (a run of another method, when the Method was changed after it paused or ended, is not continued
    # from this method's options: Continue resumed the old sampler under S-BSVM's name, a crawl found)
    can_resume = run is not None and run.can_resume and not stale and run.meta.get("method") == method.key
    # widths follow the labels ("Continue" is the longest), so none is cut short ("Con…") at 1280 px; and
    # a label Streamlit measures a pixel or two short ("Pause" became "Pa…") is drawn whole, not cut
    st.html("<style>[data-testid='stButton'] [data-testid='stMarkdownContainer'],"
            "[data-testid='stButton'] [data-testid='stMarkdownContainer'] p"
            "{overflow: visible !important; text-overflow: clip !important;}</style>")
    b = st.columns([1, 1.05, 1, 1, 1.5, 1.05], gap="small")
    # a paused or stopped run: Continue is the button to press, and Start says it begins again (a crawl
    # pressed the red Start on a paused run at iteration 420 and was back at iteration 1, unwarned)
    resumable = can_resume and not locked and status in (PAUSED, STOPPED)
    # (keys: without them the type and help are part of a button's identity, and a click sent just as
    # they change could be dropped, a review)
    b[0].button("Start", type="secondary" if resumable else "primary", icon=":material/play_arrow:",
                disabled=locked or not fits, on_click=on_start, width="stretch", key="train_start",
                help=("Start a new run from the beginning with the options on the left: the paused or "
                      "stopped run is replaced (Continue resumes it)." if resumable else
                      "Start a new run with the options on the left."))
    b[1].button("Pause", icon=":material/pause:", disabled=status != RUNNING, on_click=on_pause,
                width="stretch", help="Pause after the current progress record; Continue or Step resume.")
    # Step on a finished run started a new one and threw the finished run away without a word (a crawl);
    # a one-shot fit (PlattSVM) has no records to step through (its first Step paused at "iteration 1")
    finished = run is not None and status == DONE and not stale and run.meta.get("method") == method.key
    one_shot = method.kind == "baseline"
    step_help = (f"{method.short_name} is fitted in one go: there are no steps to go through; press Start."
                 if one_shot else
                 "The run is done: Start begins a new run (or Reset, then Step, to go one record at a time)."
                 if finished else
                 "Advance by one progress record, then pause (starts a run if there is none).")
    b[2].button("Step", icon=":material/skip_next:", disabled=locked or not fits or finished or one_shot,
                on_click=on_step, width="stretch", help=step_help)
    b[3].button("Stop", icon=":material/stop:", disabled=status not in (RUNNING, PAUSED), on_click=on_stop,
                width="stretch",
                help="Stop now; the model keeps the state it reached (usable on other pages), and "
                     "Continue can still resume it.")
    b[4].button("Continue", type="primary" if resumable else "secondary", icon=":material/resume:",
                disabled=not can_resume or locked or status is None, key="train_continue",
                on_click=on_continue, width="stretch", help="Resume a paused or stopped run.")
    b[5].button("Reset", icon=":material/restart_alt:", disabled=run is None, on_click=on_reset,
                width="stretch", help="Forget the run and its model.")
    # Streamlit forgets a widget's value on a page that does not draw it: a teacher who went to the Data
    # page and back found Slow motion off (a crawl). Its value is kept apart and given back here.
    st.session_state["slow_motion"] = bool(st.session_state.get("_slow_motion_kept", False))
    st.toggle("Slow motion", key="slow_motion", on_change=on_slow,
              help="One progress record per redraw (about four a second), so a class can follow the run "
                   "step by step; off, the method runs at full speed while the page redraws.")
    # (always shown: an element that came and went would move the live charts; new users asked how Stop
    # differs from Pause, and found a run stopped when they came back from another page. Not in
    # presentation mode, where the charts must reach the top of a 1280x720 screen; the buttons' help says it)
    if not ui.presenting():
        st.caption("Pause and Stop halt after the current record and keep the model for the other pages; "
                   "Continue resumes either. Going to another page stops a run too; Reset forgets it.")

    # While the live view loops inside its script run, the fragment's timer is only the fallback that
    # restarts a loop past LOOP_SECONDS: each tick is a rerun request from the browser (all the page's
    # widget states, ~3 KB), queued by the server behind the loop, so it ticks every TIMER_WHILE_LOOPING
    # instead of every redraw. Without the loop (another Streamlit, or tests that switch it off) the
    # timer redraws, every REDRAW_SECONDS.
    looping = float(st.session_state.get("_live_loop_seconds", LOOP_SECONDS)) > 0 and can_redraw_in_place()
    timer = (TIMER_WHILE_LOOPING if looping else REDRAW_SECONDS) if busy else None

    @st.fragment(run_every=timer)
    def live_view():
        yield_to_fits()  # a fragment rerun has its own thread
        r: Run | None = reg.get(PAGE)
        trace("fragment", status=r.status if r else None, busy=busy)
        if r is None:
            if fits:  # (it said "Press Start" under a memory refusal, with Start and Step off: a crawl)
                st.info("Press **Start** to fit." if method.kind == "baseline" else
                        "Press **Start** to fit, or **Step** to advance one record at a time.")
            return
        other_data = r.meta.get("data_key") != data.key
        other_method = r.meta.get("method") != method.key
        if other_data:
            st.warning("This run was made for other data (the data changed since it started): press "
                       "**Start** for a new run on the current data.")
        elif other_method:
            st.info(f"The last run here was made by {run_method_name(r.meta)}; "
                    f"press **Start** to run {method.short_name} (**Reset** forgets the old one).")
        if (other_data or other_method) and not (busy or r.status == RUNNING or r.busy):
            # Its charts would be drawn with this page's method and data: the other data's column names
            # on its curves, this method's wording ("fitted in one go" under an ELBO), and its map
            # predicted on inputs of another width ("Prediction failed: X has 2 features, but ...
            # expecting 4"). Its model stays for the other pages until a new run replaces it.
            return
        if busy and not (r.status == RUNNING or r.busy):
            # The run ended or paused since the page was drawn: show the new status at once, then
            # rerun the whole page (buttons, timer off) instead of building the figures twice.
            st.progress(progress_fraction(r), text=progress_text(r))
            trace("fragment-saw-end", status=r.status)
            rerun_after_flush()
        if r.status == DONE and not other_data:  # at the top, where it is seen (not below the charts)
            note = ui.fit_note_once(r.model, data, scaled_badly=scale_warned(r.warnings))
            if note:
                st.warning(note, icon=":material/lightbulb:")
        if r.warnings and not other_data:
            # the fit's own warnings (unstandardised scales, a stopping rule not met...): they went to the
            # server's log only, and the page said "done" beside an unconverged fixed-length run (a crawl)
            said = list(r.warnings)  # (a copy: the reader thread appends)
            for text in said[:3]:
                st.warning(f"The method warned: {page_warning(text, data.feature_names)}",
                           icon=":material/warning:")
            if len(said) > 3:
                more = len(said) - 3
                st.caption(f"... and {more} more warning{'s' if more > 1 else ''} from the method.")
        if r.status == FAILED:
            st.error(f"The run failed: {r.error}")
        elif r.status in (STOPPED, PAUSED) and r.records == 0 and not r.busy and not other_data:
            # (a halt in the set-up ends the child: dashboard.procrun.ProcessRun._halt)
            why = f" because {r.note}" if r.note else ""
            st.info(f"{r.status.capitalize()}{why} during the method's set-up, before its first progress "
                    "record: nothing was kept. **Continue** starts the run again from the beginning.",
                    icon=":material/stop_circle:")
        elif r.note and r.status in (STOPPED, PAUSED):
            # (a run on other data cannot be continued: the warning above says what to do instead)
            st.info(f"Stopped because {r.note}." + ("" if other_data else " **Continue** resumes it."),
                    icon=":material/stop_circle:")
        slots: list = []  # progress, charts, prediction error: made by slot() when first written
        # a full page run remounts the charts: send every figure; a fragment run sends only new ones
        full = st.session_state.pop("_live_full", False)
        draw_live(r, slots, full=full, again=False)
        if not (r.status == RUNNING or r.busy):
            if busy:
                # The run ended while this view was drawn (a fit shorter than one draw: PlattSVM's 0.1 s):
                # the page's buttons and timer still say running, and the page said "done" only when the
                # fragment's timer came, TIMER_WHILE_LOOPING later (end to "done" 1.0 s, measured)
                slot(slots, 0).progress(progress_fraction(r), text=progress_text(r))
                trace("drawn-saw-end", status=r.status)
                rerun_after_flush()
            return
        # While the child computes, redraw here, in this script run, until the run ends or pauses (the
        # browser's fragment timer, REDRAW_SECONDS, is only the fallback): each redraw then costs one
        # update of the elements in place, not a browser round trip and a fragment run (the timer fired
        # late, 2-2.5 redraws a second; each fragment run cost the browser a page render). A click on
        # a control starts a new script run, which interrupts this loop at its next element (the fit
        # runs in a child process: nothing is lost).
        loop_s = float(st.session_state.get("_live_loop_seconds", LOOP_SECONDS))
        if loop_s <= 0 or not can_redraw_in_place():
            return
        t_end = time.perf_counter() + loop_s
        tick = time.perf_counter()
        shown = _news(r)
        while time.perf_counter() < t_end:
            tick = max(tick + LOOP_PERIOD, time.perf_counter() + LOOP_MIN_REST)
            while time.perf_counter() < tick:  # the run's end is seen within POLL seconds
                if not (r.status == RUNNING or r.busy) or reg.get(PAGE) is not r:
                    break
                if state.rerun_waiting():  # a click: an element, where the script run gives way to it
                    st.empty()
                time.sleep(POLL)
            if reg.get(PAGE) is not r:
                state.rerun_app()
            if not (r.status == RUNNING or r.busy):
                slot(slots, 0).progress(progress_fraction(r), text=progress_text(r))
                trace("loop-saw-end", status=r.status)
                rerun_after_flush()  # buttons, final figures, timer off
            if _news(r) == shown:
                # no new record and no new map since the last redraw: nothing would change on the page,
                # so nothing is sent (each redraw costs the browser a render of two elements)
                continue
            draw_live(r, slots, full=False, again=True)
            shown = _news(r)

    def _news(r: Run) -> tuple:
        """What a redraw would show that can change while a run goes on: its records, status and map."""
        box = st.session_state.get("_live_map_box") or {}
        # before the first record the text counts the seconds since Start ("setting up ... - 3.2 s"): from
        # the first second on, each new second is news (the text stood at "0.1 s" through a 12 s set-up,
        # a crawl); not sooner, so that a short set-up costs no redraw
        waiting = None
        if not r.history and r.status == RUNNING and getattr(r, "started_at", None):
            waiting = int(time.perf_counter() - r.started_at) or None
        return r.records, r.status, id(box.get("fig")), box.get("error"), waiting

    def rerun_after_flush():
        """Rerun the whole page once the status just written (done, paused...) has gone to the browser.
        A full script run drops the messages still queued for the browser when it starts (Streamlit's
        ForwardMsgQueue, flushed every 5 ms): a rerun called at once often dropped the new status, and
        the page said "done" only once the whole rerun had been drawn (measured: 0.4-0.6 s later)."""
        time.sleep(FLUSH_SECONDS)
        state.rerun_app()

    def slot(slots: list, i: int):
        """The i-th placeholder of the live view, made when first written: an ``st.empty`` sent to the
        browser just before its content, not before the figures are computed (an empty placeholder
        replaces the chart shown at its place: the charts blanked while a page run built them)."""
        while len(slots) <= i:
            slots.append(st.empty())
        return slots[i]

    def bar_reading(r: Run) -> BarReading:
        """The run's records as its bar reads them, kept on the run and read on from the last redraw."""
        reading = getattr(r, "_bar_reading", None)
        if reading is None:
            reading = r._bar_reading = BarReading()
        return reading.update(r.history)

    def progress_text(r: Run) -> str:
        if r.status == DONE and method.kind == "baseline":  # (PlattSVM: "iteration 1 - 5 it/s" meant nothing)
            return f"done: fitted in one go - {r.wall:.1f} s"
        if r.status == RUNNING and not r.history and getattr(r, "started_at", None):
            # before the first record (MS-BPM's set-up on 5,000 rows: 16 s) the text stood at "iteration 0
            # - 0 it/s - 0.0 s", its clock still (a crawl): the time since Start, ticking
            return (f"running: setting up, before the first progress record - "
                    f"{time.perf_counter() - r.started_at:.1f} s")
        if r.status in (PAUSED, STOPPED) and not r.history and not r.busy:
            return f"{r.status} during the set-up, before the first progress record"
        total = f" / {r.max_iter}" if r.max_iter else ""
        reading = bar_reading(r)
        planned = reading.planned
        # (a run of several fits: its current fit from all its records; the last 200 missed the start of a
        # long fit, and the text said "fit 1 of 5" while the bar stood at fit 2, a review)
        staged = reading.staged(r.iteration)
        if staged is not None:
            total = staged_text(staged, planned, r.max_iter, done=r.status == DONE)
        shown = "finishing the current step" if r.status in (PAUSED, STOPPED) and r.busy else r.status
        if (staged is None and r.status == DONE and r.max_iter and r.iteration < r.max_iter
                and getattr(r.model, "converged_", False)):
            # SeegerARD's "done: iteration 9 / 50" read as cut short: it stopped by its own rule
            total = f" (converged; at most {r.max_iter})"
        model = r.model if r.status == DONE else None
        verdict = getattr(model, "converged_", None) if hasattr(model, "samples_") else None
        if staged is None and verdict is not None:
            # a sampler's run ended "done: iteration 2374" after a failing check was last shown (a crawl):
            # say which way its stopping rule went (the warning above says why, when it was not met)
            total += " (converged)" if verdict else " (stopping rule not met)"
        checked = last_check(r.history[-200:]) if not r.max_iter and r.status != DONE else None
        if checked:  # what the bar counts (progress_fraction)
            total = f" ({check_text(checked)})"
        # in slow motion the page shows one record per redraw: the rate is the method's, not the page's
        # (a class read "1,488 it/s" while the page moved at about 25 iterations a second)
        slow = " computing (slow motion: one record per redraw)" if (
            st.session_state.get("slow_motion") and r.status == RUNNING) else ""
        # (in slow motion the seconds are the method's compute, which barely moved while the run played on
        # for many seconds: a teacher's crawl; they say so)
        spent = f"{r.wall:.1f} s of computing" if slow else f"{r.wall:.1f} s"
        return f"{shown}: iteration {r.iteration}{total} - {r.rate:,.0f} it/s{slow} - {spent}"

    def progress_fraction(r: Run) -> float:
        if not r.max_iter and r.status != DONE:
            # a sampler that runs until its rule is met (no length to count against): the share of the
            # effective draws it wants that its last check had (the bar stayed empty all run)
            shown = bar_reading(r).best  # the best check so far: never back (analysis.BarReading)
            if shown is not None:
                return shown
        if r.status == DONE:
            return r.fraction
        planned = bar_reading(r).staged_fraction(r.iteration, r.max_iter)
        # (S-BSVM's candidate fits: finished fits plus the current one's share)
        return planned if planned is not None else r.fraction

    def draw_live(r: Run, slots, full: bool, again: bool):
        """One redraw of the live view into ``slots`` (progress, charts, error placeholders)."""
        t_frag = time.perf_counter()
        status, fraction = r.status, progress_fraction(r)
        text = progress_text(r)
        moving = status == RUNNING or r.busy
        if not moving:  # a finished run: its status first, then the final figures (computed once)
            slot(slots, 0).progress(fraction, text=text)
        # While it runs: compute everything first, then emit the elements in one quick burst (an element
        # waiting for its new version while the page computes is shown faded, stale, by Streamlit).
        hist = list(r.history)  # a copy: the worker appends while we draw
        # the curves change only with new records: between two, the same figures are passed again (and
        # livechart sends the JSON it made for them)
        curves_key = (r.id, data.key, len(hist), hist[-1].iteration if hist else -1, moving)
        cached = st.session_state.get("_live_curves")
        if cached is not None and cached[0] == curves_key:
            objective, stats, traces = cached[1]
        else:
            # the objective with every new record; the statistics and traces (each one more chart for
            # the server to build and the browser to draw) at most every SECONDARY_SECONDS while running
            now = time.perf_counter()
            objective = figures.objective_curve(hist, stages=getattr(r.estimator, "stages_", None))
            if moving and (cached is None or cached[3] != curves_key[:2]):  # a new run: first ones later
                stats, traces = live_pending()
                built = (r.started_at or now) + MAP_FIRST_SECONDS - SECONDARY_SECONDS
            elif not moving or now - cached[2] >= SECONDARY_SECONDS:
                stats, traces = live_secondary(hist, r.model)
                built = now
            else:
                stats, traces = cached[1][1:]
                built = cached[2]
            st.session_state["_live_curves"] = (curves_key, (objective, stats, traces), built, curves_key[:2])
        last_name = "map" if data.n_features == 2 else "ard_weights"  # (the PNG's name)
        if data.n_features == 2:
            last = live_map(r, final=not moving)
            if last is None:
                last = figures.empty_figure("The map appears with the first progress record.")
        else:  # with many inputs, which of them the kernel uses is the live view
            last = figures.ard_weights(hist, feature_names=data.feature_names)
            if last is None and not moving:  # a linear sampler's finished run: its weights' posterior
                last, last_name = posterior_weights(r.model), "weights"
            if last is None:
                # (the third column at 1280 px is ~250 px wide: 26 characters a line, 17 px type in
                # presentation mode; at 34 its lines were cut at the chart's edge, "choose tw", a crawl)
                last = figures.empty_figure("The live probability map needs exactly two features: choose "
                                            "two on the Data page (or use the Calibration page's "
                                            "two-feature option).", width=26)
        if moving:
            slot(slots, 0).progress(fraction, text=text)
        with slot(slots, 1):
            # A finished run's figures go whole with every run of the page, never as "the revision you
            # have": a script run that starts drops the deltas still queued for the browser (Streamlit's
            # ForwardMsgQueue.clear on SCRIPT_STARTED, a fragment's own included), so a figure recorded
            # as sent may never have arrived. While the run goes on, the next new figure heals that; at
            # the end nothing newer comes, and the charts stayed at the placeholders of the run's first
            # second (4 of 10 default SubgradientHMC runs in a browser on a loaded machine).
            charts = [(objective, "live_objective"), (stats, "live_stats"), (traces, "live_traces"),
                      (last, "live_map" if data.n_features == 2 else "live_ard")]
            if method.kind == "baseline":
                # fitted in one go: no curve, statistic or trace exists, and three panels each saying so
                # (four with many inputs) told a user less than one line; the map stays when there is one
                charts = [c for c in charts if not figures.is_placeholder(c[0])]
            if charts:
                live_charts(charts, key="live_grid", full=full or not moving, again=again)
        err = st.session_state.get("_live_map_box", {}).get("error")
        if err or len(slots) > 2:
            # (statements, not a conditional expression: Streamlit's "magic" writes a bare expression's
            # value to the page, and this one printed a DeltaGenerator's whole API help under the error)
            if err:
                slot(slots, 2).error(f"Prediction failed: {err}")
            else:
                slot(slots, 2).empty()
        if not moving:  # the final charts: a PNG of each, as every other page's charts have
            with slot(slots, 3).container():
                if method.kind == "baseline":  # (its panels were left out above)
                    st.caption(f"{method.short_name} is fitted in one go: it has no learning "
                               "curve, sampler statistics or traces to watch"
                               + (" (its probability map is above). " if data.n_features == 2 else
                                  "; a probability map needs exactly two features (choose two on the Data "
                                  "page). ")
                               + "**Calibration** and **Compare** show how its probabilities hold up.")
                named = [(objective, "objective"), (stats, "statistics"), (traces, "traces"),
                         (last, last_name)]
                # one row under the 2x2 grid, each button as wide as its label (in equal columns
                # presentation mode's type cut "PNG: objecti..."): each says which chart it is for
                with st.container(horizontal=True, gap="medium"):
                    for fig, name in named:
                        if figures.is_placeholder(fig):  # a message, not a chart (PlattSVM has no curves)
                            continue
                        shown = ui.styled(fig)  # (presentation mode is read here, in the script run)
                        ui.png_button(lambda shown=shown: shown, f"train_{name}", name,
                                      label=f"PNG: {PNG_LABELS.get(name, name.replace('_', ' '))}")
        trace("fragment-drawn", status=status, records=r.records, s=f"{time.perf_counter() - t_frag:.4f}")

    def posterior_weights(model):
        """The weights chart of a linear sampler on the raw inputs (None for any other model)."""
        samples = getattr(model, "samples_", None)
        if samples is None or getattr(model, "feature_map_", "none") is not None:
            return None
        names = param_names(model, data.feature_names, samples.shape[-1])
        return figures.posterior_weights(samples, names)

    def live_pending():
        """The statistics and trace charts of a run in its first MAP_FIRST_SECONDS."""
        if "_live_pending" not in st.session_state:  # the same figures each time: their JSON is made once
            st.session_state["_live_pending"] = (
                figures.empty_figure("Statistics: drawn from the first second of a run on"),
                figures.empty_figure("Traces: drawn from the first second of a run on"))
        return st.session_state["_live_pending"]

    def live_secondary(hist: list, model):
        """The hyperparameter or sampler statistics, and the snapshot traces (their series named from
        ``model``, the run's newest state)."""
        # (presentation mode: four panels of 110 px ran below a 720 px screen; 70 px keep the first row on it)
        return (figures.statistics_panel(hist, method.kind, data.feature_names,
                                         panel=70 if ui.presenting() else 110),
                figures.named_snapshot_traces(hist, model=model, feature_names=data.feature_names))

    def live_map(r: Run, final: bool):
        """The probability map of the run's newest state. While the run goes on, a background thread
        predicts on the grid (the redraws never wait for it: they show the newest finished map), no
        sooner than MAP_SHARE x its own cost after the last one, so that predicting (costly for
        samplers: every draw votes) takes at most a sixth of a CPU. A finished run's map is computed
        here, once."""
        key = (r.id, data.key)
        box = st.session_state.get("_live_map_box")
        if box is None or box.get("key") != key:
            # a plain dict: the thread writes it. The first live map is due MAP_FIRST_SECONDS after the
            # start: a run shorter than that draws its map once, at the end.
            start = r.started_at if r.started_at is not None else time.perf_counter()
            box = {"key": key, "end": start + MAP_FIRST_SECONDS - MAP_SECONDS}
            st.session_state["_live_map_box"] = box
        fig = box.get("fig")
        snap = r.snapshot_id
        if final:
            if not r.fitted or (box.get("snap") == snap and box.get("final")):
                return fig
        else:
            if box.get("busy") or not _map_rested(box):
                return fig
            if not r.fitted or box.get("snap") == snap:
                # due, and the newest state has been drawn already (or there is none yet): ask the run for
                # a newer one (a process run's child pickles its state only when asked), drawn when it
                # arrives
                r.want_snapshot()
                return fig
        # while the run goes on, a coarser grid (a sampler's map costs one prediction per draw and
        # point); the finished run's map has the full resolution
        grid, truth = ui.map_grid(data, MAP_GRID if final else LIVE_GRID)
        fitted = r.model  # (the snapshot this map is of: the run may bring a newer one meanwhile)

        def work():
            yield_to_fits()
            t0 = time.perf_counter()
            map_draws = None
            try:
                # a finished sampler's map: about FINAL_DRAWS draws, fewer if they would take long
                model, map_draws = map_model(fitted, grid.points) if final else (fitted, None)
                new = figures.model_map(model, data, grid, "Fitted map" if final else "Live map", truth=truth,
                                        max_points=FINAL_POINTS if final else LIVE_POINTS, light=not final)
                error = ""
            except Exception as exc:  # noqa: BLE001 - shown under the charts, never as a traceback
                error = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                new = None
            t1 = time.perf_counter()
            trace("map", s=f"{t1 - t0:.4f}", final=final)
            box.update(fig=new if new is not None else box.get("fig"), snap=snap, final=final, error=error,
                       cost=t1 - t0, end=t1, busy=False, draws=map_draws)

        if final:
            with st.spinner("Drawing the final map..."):  # (the page sat greyed out without a word)
                work()
            return box.get("fig")
        box["busy"] = True
        threading.Thread(target=work, name="bsvm-map", daemon=True).start()
        return fig

    def accuracy_text(r: Run) -> str:
        """The finished fit's accuracy on the training and the test rows, computed once per run: a result
        for every method (PlattSVM's page was four placeholders and no figure of merit)."""
        memo = st.session_state.get("_train_accuracy")
        if memo is not None and memo[0] == (r.id, data.key):
            return memo[1]

        model, had = thinned(r.model, FINAL_DRAWS)

        def measure():
            return (float(model.score(data.X_train, data.y_train)),
                    float(model.score(data.X_test, data.y_test)) if len(data.y_test) else float("nan"))

        got = ui.safe(measure, what="The accuracy")
        text = "" if got is None else (
            f"Accuracy: {got[0]:.3f} on the {len(data.y_train):,} training rows"
            + (f", {got[1]:.3f} on the {len(data.y_test):,} test rows" if len(data.y_test) else "")
            + (f" ({_draws_said(r, had)})" if had else "")
            + f". {baseline_sentence(data.y_train, data.y_test)} **Calibration** and **Compare** measure "
              "more (Brier score, log loss, reliability).")
        st.session_state["_train_accuracy"] = ((r.id, data.key), text)
        return text

    def _draws_said(r: Run, had: int) -> str:
        """How many of the ``had`` draws the accuracy and the final map averaged over (the map's may be
        fewer), in one parenthesis (a crawl read "(these ..., the map (to draw it in seconds) ...)")."""
        box = st.session_state.get("_live_map_box") or {}
        shown = box.get("draws") if box.get("key") == (r.id, data.key) and box.get("final") else None
        of = f"about {FINAL_DRAWS:,} of the {had:,} posterior draws, evenly spaced"
        if shown is None:
            # (no map is drawn unless the data have two features: it read "the map and these" beside a
            # panel saying a map needs two, a crawl)
            return f"the map and these from {of}" if data.n_features == 2 else f"from {of}"
        return f"these from {of}; the map, to draw in seconds, from about {shown:,}"

    def _map_rested(box: dict) -> bool:
        """The live map has rested MAP_SHARE x its last computing time, and at least MAP_SECONDS."""
        rest = max(MAP_SECONDS, MAP_SHARE * box.get("cost", 0))
        return time.perf_counter() - box.get("end", -1e9) >= rest

    st.session_state["_live_full"] = True  # read by the fragment: this is a full page run
    live_view()
    # (only for a run of this method on this data: after a switch the live view says whose run it was,
    # and below it stood that run's "Too quick? Turn on Slow motion" for a one-shot PlattSVM, and its
    # "The prediction mixes 2 fits" on data changed since, a crawl)
    if run is not None and run.status == DONE and run.finished_at is not None \
            and run.meta.get("method") == method.key and run.meta.get("data_key") == data.key:
        seconds = f"{run.history[-1].elapsed if run.history else 0:.2f} s"
        # (a one-shot fit has no progress records to speak of: "1 progress record" beside "fitted in one go")
        # a default run on a sample ends within a few seconds, before Pause or Step can be pressed (a
        # crawl as a teacher): say how to watch it step by step
        quick = (method.kind != "baseline" and not st.session_state.get("slow_motion")
                 and run.history and run.history[-1].elapsed < QUICK_RUN_SECONDS)
        st.caption((f"Finished: the fit computed for {seconds}." if method.kind == "baseline" else
                    f"Finished: {run.records} progress record{'' if run.records == 1 else 's'}; the fit "
                    f"computed for {seconds}.")
                   + (" Too quick to follow? Turn on **Slow motion** and press **Start** to watch it one "
                      "record at a time, with Pause and Step." if quick else ""))
        said = accuracy_text(run)
        if said:
            st.caption(said)
        stack = stack_summary(run.model)
        if stack:
            st.caption(stack)

