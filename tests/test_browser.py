"""Real-browser tests: Playwright drives Debian's chromium against `streamlit run dashboard/app.py`.

Skipped (with the reason) when /usr/bin/chromium or the playwright package is missing; Playwright's own
browser download is never used. Every step waits on a condition of the page (a status text, a chart
drawn, a button enabled), never on a fixed sleep, so a slow machine makes the test slower, not flaky.
Screenshots of every page at 1280x720 and 1920x1080 go to tests/screenshots/ (git-ignored).

The default run is a tour with every control and every page, and odd CSV uploads. ``BSVM_FULL_CRAWL=1``
adds the seeded crawl over every page x every method with random clicks (minutes; the same crawl is
``python -m benchmarks dashboard --crawl``) and the full Compare run.
"""

import importlib.util
import os
import re
from pathlib import Path

import pytest

from benchmarks._browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGES,
    ROOT,
    button,
    crawl,
    dashboard_server,
    exception_texts,
    go,
    progress_text,
    screenshot,
    wait_plotly,
    wait_status,
)

SHOTS = ROOT / "tests" / "screenshots"
SIZES = {"1280x720": (1280, 720), "1920x1080": (1920, 1080)}

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture(scope="module")
def server():
    """The dashboard server; once the module's tests are done and the server is stopped, none of its
    processes (the forkserver, a fit's child) may be left behind."""
    psutil = pytest.importorskip("psutil")
    left = []
    try:
        with dashboard_server() as (url, _, pid):
            yield url
            left = psutil.Process(pid).children(recursive=True)
    except RuntimeError as err:
        pytest.fail(str(err))
    gone, alive = psutil.wait_procs(left, timeout=10)
    assert not alive, f"processes left behind by the stopped server: {[p.cmdline()[:3] for p in alive]}"


@pytest.fixture(scope="module")
def browser():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    pg = browser.new_page(viewport={"width": 1280, "height": 720})
    pg.set_default_timeout(90_000)  # a slow, shared machine: conditions, not sleeps, decide
    sync_api.expect.set_options(timeout=90_000)
    yield pg
    screenshot(pg, SHOTS / f"last_{request.node.name}.png")  # where it ended (or failed)
    pg.close()


def _no_exception(pg, where: str) -> None:
    found = exception_texts(pg)
    assert not found, f"exception shown on {where}: {found}"


def _shots(pg, name: str) -> None:
    """One screenshot per size; the charts are waited for before each."""
    for label, (w, h) in SIZES.items():
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_function(DRAWN)  # the charts have been (re)drawn at this size
        screenshot(pg, SHOTS / f"{name}_{label}.png")
    pg.set_viewport_size({"width": 1280, "height": 720})


# at least one chart, every chart drawn (``every`` of no chart was true: a screenshot of the stopped
# Train page at 1280 x 720 was taken while its charts were being remounted, and showed none)
# (the Data page's charts are SVG of its own, dashboard/quickplot.py: those count as charts there)
DRAWN = """() => { const ps = Array.from(document.querySelectorAll('.js-plotly-plot'));
                   if (!ps.length) return !!document.querySelector('.bsvm-svg');
                   return ps.every(p => p.querySelector('.main-svg')); }"""
STEPPED = r"""(before) => { const p = document.querySelector('[data-testid="stProgress"]');
                             const m = p && p.innerText.match(/iteration (\d+)/);
                             return m && Number(m[1]) > before; }"""


def _iteration(pg) -> int:
    m = re.search(r"iteration (\d+)", progress_text(pg))
    return int(m.group(1)) if m else -1


def test_tour_with_every_control(server, page):
    pg = page
    has_sbsvm = importlib.util.find_spec("bsvm.sbsvm") is not None  # else the page falls back to PlattSVM
    # a session opened from a shared link that sets method options (a run that does not end by itself)
    pg.goto(f"{server}/?sample=moons.csv&method=sbsvm&o.max_iter=1000000&o.tol=0&o.patience=1000000")
    pg.locator("h1", has_text="Data").wait_for()
    pg.locator('[data-testid="stSelectbox"]').first.wait_for()
    pg.get_by_text("300 points on two noisy half circles").wait_for()
    pg.locator(".bsvm-svg").first.wait_for()  # the Data page's charts: SVG (dashboard/quickplot.py)
    _no_exception(pg, "Data")
    _shots(pg, "1_data")

    go(pg, "Train")
    if has_sbsvm:  # the options came from the URL
        sync_api.expect(pg.get_by_role("spinbutton", name="Max steps")).to_have_value("1000000")
    wait_plotly(pg)
    button(pg, "Start").click()
    wait_status(pg, "running")
    # Streamlit's own Stop (it stops the script run, not the fit) is hidden; the page's is the one
    sync_api.expect(pg.locator("[data-testid='stStatusWidget'] button", has_text="Stop")).to_be_hidden()
    # all four live charts drawn in place
    pg.wait_for_function("() => document.querySelectorAll('div.bsvm-live .main-svg').length >= 4")
    if has_sbsvm:
        pg.locator("div.bsvm-live .gtitle", has_text="ELBO").first.wait_for()
        pg.locator("div.bsvm-live .legendtext", has_text="inducing points").first.wait_for()
    _shots(pg, "2_train_running")
    _no_exception(pg, "Train (running)")

    button(pg, "Pause").click()
    wait_status(pg, "paused")
    sync_api.expect(button(pg, "Continue")).to_be_enabled()
    before = _iteration(pg)
    button(pg, "Step").click()
    pg.wait_for_function(STEPPED, arg=before)
    wait_status(pg, "paused")
    button(pg, "Continue").click()
    wait_status(pg, "running")
    button(pg, "Stop").click()
    wait_status(pg, "stopped")
    _shots(pg, "3_train_stopped")
    button(pg, "Continue").click()  # a stopped run resumes from its state
    wait_status(pg, "running")
    _no_exception(pg, "Train (controls)")

    # leaving the page stops the run visibly; the model is used as it stands
    go(pg, "Calibration")
    pg.locator(".js-plotly-plot", has=pg.locator(".gtitle", has_text="PlattSVM")).first.wait_for()
    pg.locator(".js-plotly-plot", has=pg.locator(".gtitle", has_text="Reliability")).first.wait_for()
    _no_exception(pg, "Calibration")
    _shots(pg, "4_calibration")

    go(pg, "Diagnostics")
    pg.get_by_text("Progress records", exact=True).wait_for()
    pg.locator(".js-plotly-plot").first.wait_for()
    _no_exception(pg, "Diagnostics")
    _shots(pg, "5_diagnostics")

    go(pg, "Train")
    # (the status line: the toast "Stopped ...: you left the Train page." can still be up)
    pg.get_by_text("Stopped because you left the Train page").wait_for()
    wait_status(pg, "stopped")
    button(pg, "Reset").click()
    pg.get_by_text("Press **Start**".replace("**", "")).wait_for()
    _no_exception(pg, "Train (reset)")

    go(pg, "Compare")
    button(pg, "Run all methods").click()
    cancel = pg.get_by_role("button", name="Cancel")
    cancel.wait_for()
    screenshot(pg, SHOTS / "6_compare_running_1280x720.png")
    try:  # with its quick settings the comparison may end before the click lands: then it shows results
        cancel.click(timeout=5_000)
        cancelled = True
    except sync_api.TimeoutError:
        cancelled = False
    outcome = re.compile("cancelled|Test-set metrics") if cancelled else "Test-set metrics"
    pg.get_by_text(outcome).first.wait_for()
    _no_exception(pg, "Compare (cancelled or done)")
    if os.environ.get("BSVM_FULL_CRAWL"):  # the whole comparison: on demand (the AppTest suite runs it)
        button(pg, "Run all methods").click()  # (it replaces a cancelled comparison)
        pg.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=300_000)
        _no_exception(pg, "Compare")
        _shots(pg, "7_compare")

    go(pg, "Data")  # settings survived the tour
    pg.get_by_text("300 points on two noisy half circles").wait_for()
    _no_exception(pg, "Data (again)")


#: the Data page has taken an uploaded file: its caption, or an error naming it
TAKEN = """(name) => { const t = document.body.innerText;
                       return t.includes('Uploaded: ' + name) || t.includes(name + ' cannot be used')
                              || t.includes('could not be used (' + name + ')'); }"""
NOT_STALE = """([name, others]) => !Array.from(document.querySelectorAll('[data-testid="stAlert"]'))
                                        .some(a => others.some(o => a.innerText.includes(o)))"""
REEL = "r\u00e9el"
ODD_CSVS = {
    "semicolons.csv": b"x1;x2;label\n0.1;0.2;0\n0.3;0.1;1\n0.5;0.9;0\n0.7;0.4;1\n0.2;0.8;0\n0.9;0.3;1\n"
                      b"0.4;0.6;0\n0.8;0.2;1\n",
    "latin1.csv": ("gr\u00f6\u00dfe,l\u00e4nge,klasse\n" + "".join(
        f"{i * 0.1:.1f},{(i * 7 % 10) * 0.1:.1f},{REEL if i % 2 else 'faux'}\n" for i in range(12))
    ).encode("latin-1"),
    "nan_rows.csv": b"x1,x2,label\n0.1,0.2,0\n0.3,,1\n0.5,0.9,0\nNaN,0.4,1\n0.2,0.8,0\n0.9,0.3,1\n0.4,0.6,0\n"
                    b"0.8,0.2,1\n0.6,0.5,0\n0.1,0.9,1\n",
    "text_column.csv": b"x1,colour,x2,label\n0.1,red,0.2,0\n0.3,blue,0.1,1\n0.5,red,0.9,0\n0.7,green,0.4,1\n"
                       b"0.2,red,0.8,0\n0.9,blue,0.3,1\n0.4,red,0.6,0\n0.8,green,0.2,1\n",
    "target_column.csv": b"a,b,target\n0.1,0.2,no\n0.3,0.1,yes\n0.5,0.9,no\n0.7,0.4,yes\n0.2,0.8,no\n"
                         b"0.9,0.3,yes\n0.4,0.6,no\n0.8,0.2,yes\n",
}


def test_live_charts_taken_off_the_page_come_back(server, page):
    """A rerun that remounts the live charts while the old instance is still on the page could leave the
    charts' divs in the old one, which is then removed: the charts vanished after a run ended (seen in
    about one run of four of SubgradientHMC on two iris features). Simulated here by moving every chart
    out of the page: the live view puts each back into the slot that wants it within a second or two,
    drawn (``dashboard/livechart.py``: heal, or the next render of the component)."""
    pg = page
    pg.goto(f"{server}/train?sample=ripley.csv&method=platt")
    pg.locator("h1", has_text="Train").wait_for()
    wait_plotly(pg)
    button(pg, "Start").click()
    wait_status(pg, "done")
    pg.get_by_text("Finished:").wait_for()  # the run's last page run has drawn: no rerun comes after
    drawn = "() => document.querySelectorAll('div.bsvm-grid div.bsvm-live .main-svg').length"
    charts = "() => document.querySelectorAll('div.bsvm-grid div.bsvm-live').length"
    pg.wait_for_function(f"{drawn} >= 1")
    n = pg.evaluate(charts)
    # moved and counted in one script, so that no repair (or a late rerun) runs in between
    left = pg.evaluate(f"""() => {{ const away = document.createElement('div');
        document.querySelectorAll('div.bsvm-live').forEach(d => away.appendChild(d));
        return ({charts})(); }}""")
    assert left == 0
    try:
        pg.wait_for_function(f"() => ({charts})() >= {n} && ({drawn})() >= {n}", timeout=10_000)
    except sync_api.TimeoutError:  # what the page held, for the log
        print("charts not back:", n, pg.evaluate("""() => ({
            want: document.querySelectorAll('div[data-bsvm-want]').length,
            grids: document.querySelectorAll('div.bsvm-grid').length,
            keys: Array.from((window.__bsvmLive || {}).divs || []).map(([k, d]) => [k, d.isConnected]),
            healed: (window.__bsvmLive || {}).healed, healer: !!(window.__bsvmLive || {}).healer})"""))
        raise
    _no_exception(pg, "Train")


def test_a_finished_run_shows_its_final_charts(server, browser):
    """The live charts send a figure once, then only its revision; a script run that starts drops the
    deltas still queued for the browser, so a finished run's figures could be lost and the charts stayed
    at the placeholders of the run's first second ("The map appears with the first progress record.",
    8 s after the run; 4 of 10 default SubgradientHMC runs on a loaded machine). Three runs, each in a
    fresh tab: every chart must show its final figure."""
    titles = """() => Array.from(document.querySelectorAll('div.bsvm-grid div.bsvm-live')).map(e =>
        ((e.querySelector('.gtitle') || e.querySelector('.annotation-text') || {}).textContent || ''))"""
    for _ in range(3):
        pg = browser.new_page(viewport={"width": 1280, "height": 720})
        try:
            pg.set_default_timeout(120_000)
            pg.goto(f"{server}/train?sample=ripley.csv&method=subgradient_hmc")
            pg.locator("h1", has_text="Train").wait_for()
            wait_plotly(pg)
            button(pg, "Start").click()
            wait_status(pg, "done")
            pg.get_by_text("Finished:").wait_for()
            try:
                pg.wait_for_function(f"() => {{ const t = ({titles})(); return t.length === 4 && "
                                     "t[3].startsWith('Fitted map') && !t.some(x => x.includes('first')); }",
                                     timeout=15_000)
            except sync_api.TimeoutError:
                raise AssertionError(f"the final charts never arrived: {pg.evaluate(titles)}") from None
            _no_exception(pg, "Train")
        finally:
            pg.close()


#: per live chart: [key, finite y values, those inside the chart's y range] (log axes in their units)
CURVES_SHOWN = """() => Array.from(document.querySelectorAll('div.bsvm-live')).map(d => {
  const fl = d._fullLayout || {}; let inside = 0, total = 0;
  (d._fullData || []).forEach(t => {
    if (!t.y || !t.y.length || t.type === 'heatmap' || t.type === 'contour') return;
    const ax = fl['yaxis' + ((t.yaxis || 'y').slice(1))] || fl.yaxis;
    if (!ax || !ax.range) return;
    let [a, b] = ax.range;
    if (ax.type === 'log') { a = Math.pow(10, a); b = Math.pow(10, b); }
    for (const v of t.y) { if (v === null || !isFinite(v)) continue;
                           total++; if (v >= Math.min(a, b) && v <= Math.max(a, b)) inside++; } });
  return [d.dataset.key, total, inside]; })"""


def test_a_second_run_in_a_tab_shows_its_learning_curve(server, page):
    """Plotly keeps an axis's state across redraws of one uirevision: the placeholder chart's empty axes
    ([-1, 4]) were kept into a later run's learning curve, which then showed no curve at all (a teacher's
    crawl: most runs after a tab's first; reproduced on the third S-BSVM run with Reset between). Three
    runs: every chart that has values shows some of them."""
    pg = page
    pg.goto(f"{server}/train?sample=ripley.csv&method=sbsvm")
    pg.locator("h1", has_text="Train").wait_for()
    wait_plotly(pg)
    for k in range(3):
        button(pg, "Start").click()
        wait_status(pg, "done")
        pg.wait_for_timeout(2500)  # the final figures drawn
        shown = pg.evaluate(CURVES_SHOWN)
        screenshot(pg, SHOTS / f"9_second_runs_{k + 1}.png")
        blank = [row for row in shown if row[1] and not row[2]]
        assert not blank, f"run {k + 1}: charts with values and none in view: {blank} (all: {shown})"
        _no_exception(pg, f"Train, run {k + 1}")
        button(pg, "Reset").click()
        pg.wait_for_timeout(2000)


def test_the_data_page_answers_at_slash_data_too(server, page):
    """/train, /calibration... open their pages; /data, the natural guess for the first one, opened a
    "Page not found" dialog (the default page is served at / only). It opens the Data page, with the
    link's settings."""
    pg = page
    pg.goto(f"{server}/data?sample=moons.csv&seed=3")
    pg.locator("h1", has_text="Data").wait_for()
    pg.wait_for_function("() => !location.pathname.endsWith('/data')")
    assert "sample=moons.csv" in pg.url and "seed=3" in pg.url
    assert pg.get_by_text("does not seem to exist").count() == 0
    _no_exception(pg, "Data (/data)")
    # a link's notes survive the redirect (they were shown in its thrown-away run: ?sample=upload opened
    # Ripley without a word)
    pg.goto(f"{server}/data?sample=upload")
    pg.wait_for_function("() => !location.pathname.endsWith('/data')")
    pg.locator('[data-testid="stMetric"]', has_text="training rows").wait_for()  # the page's run has ended
    note = pg.get_by_text("uploaded CSV, which a new session does not have")
    note.first.wait_for(timeout=10_000)  # fails when the note never shows
    assert note.count() == 1


def test_every_page_keeps_the_settings_in_its_address(server, page):
    """Calibration and Diagnostics stop early before any run (st.stop): their addresses stayed bare, so
    a reload or a shared link lost the data set, seed and method, against the sidebar's promise that the
    link reopens the demo (a crawl)."""
    pg = page
    pg.goto(f"{server}/train?sample=moons.csv&method=platt&seed=3&test=0.4")
    pg.locator("h1", has_text="Train").wait_for()
    for title in ("Calibration", "Diagnostics", "Compare"):
        pg.get_by_role("link", name=title).first.click()
        pg.locator("h1", has_text=title).wait_for()
        pg.wait_for_function("() => location.search.includes('seed=3')", timeout=10_000)
        assert "sample=moons.csv" in pg.url and "method=platt" in pg.url and "test=0.4" in pg.url, pg.url
        _no_exception(pg, title)


def test_odd_csv_uploads_give_messages_not_exceptions(server, page, tmp_path):
    pg = page
    pg.goto(server)
    pg.locator("h1", has_text="Data").wait_for()
    pg.locator('[data-testid="stSelectbox"]').first.click()
    pg.get_by_role("option", name="Upload a CSV...").click()
    seen = {}
    for name, content in ODD_CSVS.items():
        path = tmp_path / name
        path.write_bytes(content)
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
        # the page has taken this file when its caption or an error about it is shown
        pg.wait_for_function(TAKEN, arg=name)
        pg.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
        # and the previous file's message is gone (a rerun shows the old elements until it replaces them)
        pg.wait_for_function(NOT_STALE, arg=[name, [n for n in ODD_CSVS if n != name]])
        _no_exception(pg, f"Data with {name}")
        # the outcome can be drawn a moment after the file's caption (once, in CI, neither was there yet
        # when read): wait for the rows counted or a message, at most 20 s; the assertion below decides
        try:
            pg.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMetric"]')]
                                    .some(m => m.textContent.includes('training rows')) ||
                                  [...document.querySelectorAll('[data-testid="stAlert"]')]
                                    .some(a => a.textContent.trim().length > 20)""", timeout=20_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the assertion says what was seen
            pass
        alerts = [a.inner_text().strip() for a in pg.locator('[data-testid="stAlert"]').all()]
        loaded = pg.locator('[data-testid="stMetric"]', has_text="training rows").count() > 0
        seen[name] = (loaded, alerts)
        # a clear outcome: the data loaded (its rows counted), or a message says what is wrong
        assert loaded or any(len(a) > 20 for a in alerts), (name, alerts)
        if name == "text_column.csv":  # loaded without the text column, and the page says so
            pg.get_by_text("Not numeric, so not offered as features: colour").wait_for()
        screenshot(pg, SHOTS / f"8_upload_{name.removesuffix('.csv')}.png")
    print({k: (v[0], [a[:120] for a in v[1]]) for k, v in seen.items()})
    # the label column is not called "label": the page says so and offers the right one
    assert any("target" in a for a in seen["target_column.csv"][1]) or seen["target_column.csv"][0]


@pytest.mark.skipif(not os.environ.get("BSVM_FULL_CRAWL"),
                    reason="on demand (minutes): BSVM_FULL_CRAWL=1 or python -m benchmarks dashboard --crawl")
def test_seeded_crawl_over_pages_and_methods(server, page):
    from dashboard.methods import available_methods

    methods = [m.key for m in available_methods(binary=True)]
    problems = crawl(page, server, methods, seed=int(os.environ.get("BSVM_CRAWL_SEED", "0")), clicks=6,
                     shots=SHOTS)
    assert not problems, problems
    assert set(PAGES) == {"Data", "Train", "Calibration", "Diagnostics", "Compare"}


def test_pages_request_nothing_outside_the_server(server, page):
    """The dashboard works offline: no page asks another host for anything (a ":material/...:" page icon
    was fetched from fonts.gstatic.com, a failed request and a console error on every page offline)."""
    pg = page
    outside = []
    pg.on("request", lambda r: outside.append(r.url) if not r.url.startswith((server, "data:", "blob:"))
          else None)
    for title in PAGES:
        pg.goto(f"{server}/{'' if title == 'Data' else title.lower()}?sample=ripley.csv")
        pg.locator("h1", has_text=title).wait_for()
        pg.wait_for_timeout(500)
    assert outside == []


def test_presentation_mode_enlarges_the_live_charts_type(server, page):
    """The live charts are drawn in the browser from JSON the server caches for both modes: presentation
    mode's larger type is applied there (livechart.js presentLayout), and switched back off."""
    pg = page
    has_sbsvm = importlib.util.find_spec("bsvm.sbsvm") is not None
    # S-BSVM: its hyperparameter chart has five series in a legend below the plot
    pg.goto(f"{server}/train?sample=ripley.csv&method={'sbsvm' if has_sbsvm else 'platt'}")
    pg.locator("h1", has_text="Train").wait_for()
    wait_plotly(pg)
    button(pg, "Start").click()
    wait_status(pg, "done")
    ticks = ("() => Array.from(document.querySelectorAll('div.bsvm-live .xtick text'))"
             ".map(t => t.style.fontSize)")
    pg.wait_for_function(f"() => ({ticks})().length > 0")
    assert set(pg.evaluate(ticks)) == {"12px"}
    pg.get_by_text("Presentation mode").click()
    pg.wait_for_function(f"() => ({ticks})().length > 0 && ({ticks})().every(s => s === '15px')")
    # every chart keeps a plot area a class can read (the legend's lines grew the figure, not shrank the
    # plot: S-BSVM's hyperparameters were left 70 px high)
    plots = ("() => Array.from(document.querySelectorAll('div.bsvm-live')).map(p => {"
             " const r = p.querySelector('.nsewdrag'); return r ? r.getBoundingClientRect().height : 0 })")
    # (the divs follow their figures' new heights a moment after the type changes: on a loaded machine
    # one read straight away found a plot still at 94 px, twice)
    try:
        settled = f"() => {{ const h = ({plots})(); return h.length > 0 && Math.min(...h) >= 120 }}"
        pg.wait_for_function(settled, timeout=10_000)
    except sync_api.TimeoutError:  # the assertion below says what was found
        pass
    heights = pg.evaluate(plots)
    assert heights and min(heights) >= 120, heights  # (68 px before)
    pg.get_by_text("Presentation mode").click()
    pg.wait_for_function(f"() => ({ticks})().length > 0 && ({ticks})().every(s => s === '12px')")
    _no_exception(pg, "Train")


@pytest.mark.skipif(not os.environ.get("BSVM_FULL_CRAWL"),
                    reason="on demand (BSVM_FULL_CRAWL=1): its own server with the file watcher on timed out "
                           "waiting for the refit in 3 of 12 runs (intermittent, cause not found)")
def test_a_playground_link_shows_its_settings_after_the_refit(browser):
    """A playground link in a fresh session: the refit of the canvas finishes and reruns the page (a
    fragment asks for it); the controls must still show the link's settings. With a widget's value put
    in st.session_state before the widget, they showed the first option of each select (Ripley) in 4-6
    of 8 fresh browsers, and the user's first click sent those back, replacing the data. The race needs
    a slower first run than the test server's: Streamlit's file watcher on (its default, which the
    repository's .streamlit/config.toml turns off), on a server of its own. Fails on the old bind()
    (checked); on demand only, see the skip reason."""
    with dashboard_server(flags=("--server.fileWatcherType", "auto")) as (url, _, _pid):
        for _ in range(4):  # fresh browsers (the race is intermittent; a warm browser's new page hid it)
            fresh = browser.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                pg = fresh.new_page(viewport={"width": 1280, "height": 720})
                pg.set_default_timeout(90_000)
                pg.goto(f"{url}/?sample=playground&pg=moons")
                pg.get_by_text("The refitted model on the canvas's coordinates").wait_for()  # after the rerun
                pg.wait_for_timeout(1500)  # the browser's widgets settle after the rerun (what a user sees)
                shown = pg.locator("input[role='combobox']").evaluate_all("els => els.map(e => e.value)")
                assert shown[:2] == ["Playground (2-D, click to edit)", "Two moons"], shown
                _no_exception(pg, "Data (playground link)")
            finally:
                fresh.close()


def test_a_feature_choice_that_no_longer_fits_is_cleared_in_the_browser_too(server, page):
    """Features x1, x5 of ringnorm, then the Ripley sample (no x5): the server keeps x1, and the browser
    must show that too (it kept showing x1, x5, and a choice added then was dropped on the server)."""
    pg = page
    pg.goto(f"{server}/?sample=ringnorm.csv&features=x1,x5")
    box = pg.locator('[data-testid="stMultiSelect"]')
    box.wait_for()
    sync_api.expect(box).to_contain_text("x5")
    pg.locator("input[role='combobox']").first.click()
    pg.get_by_role("option", name="Ripley", exact=False).first.click()
    pg.get_by_text("250 points").wait_for()
    sync_api.expect(box).not_to_contain_text("x5")
    sync_api.expect(box).to_contain_text("x1")
    box.locator("input").click()
    pg.get_by_role("option", name="x2", exact=True).click()
    pg.keyboard.press("Escape")
    pg.wait_for_url(re.compile(r"features=x1(%2C|,)x2"))
    sync_api.expect(box).to_contain_text("x2")
    _no_exception(pg, "Data")


def test_a_reloaded_tab_gets_its_run_back_and_a_duplicated_one_does_not(server, browser):
    """A reload started a new session that showed no run while the old session's fit went on computing,
    unseen (dashboard/tabs.py). Now the reloaded tab shows the run, still running, and its controls act;
    a tab opened with the same id while the first is connected (a duplicated tab) shows no run and gets
    an id of its own."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(90_000)
        url = f"{server}/train?sample=ripley.csv&method=sbsvm&o.max_iter=1000000&o.tol=0&o.patience=1000000"
        pg.goto(url)
        pg.locator("h1", has_text="Train").wait_for()
        button(pg, "Start").click()
        wait_status(pg, "running: iteration")
        before = _iteration(pg)
        tab = pg.evaluate("sessionStorage.getItem('bsvm-tab')")
        assert tab
        pg.reload()
        pg.locator("h1", has_text="Train").wait_for()
        wait_status(pg, "running: iteration")  # the same run, shown again
        assert _iteration(pg) > before and pg.evaluate("sessionStorage.getItem('bsvm-tab')") == tab
        pg.get_by_text("This tab was reloaded").first.wait_for()
        button(pg, "Stop").click()
        wait_status(pg, "stopped")
        _no_exception(pg, "Train after a reload")

        dup = ctx.new_page()
        dup.set_default_timeout(90_000)
        dup.add_init_script(f"sessionStorage.setItem('bsvm-tab', '{tab}')")
        dup.goto(url)
        dup.locator("h1", has_text="Train").wait_for()
        dup.wait_for_function(f"() => sessionStorage.getItem('bsvm-tab') !== '{tab}'")
        assert progress_text(dup) == "" and button(dup, "Continue").is_disabled()
        assert progress_text(pg).startswith("stopped")  # the first tab keeps its run
        _no_exception(dup, "Train in a duplicated tab")
    finally:
        ctx.close()


def test_rapid_clicks_on_the_playground_all_land(server, page):
    """Ten clicks 150-450 ms apart on the playground's canvas, each made while the page may still rerun
    after the one before: Streamlit's selection event carried only the newest, and 3-4 of 10 landed.
    The canvas's clicks are queued in the browser (livechart.click_chart): all ten land."""
    pg = page
    pg.goto(f"{server}/?sample=playground&method=sbsvm")
    pg.get_by_text("Under the points, the refitted model").wait_for()
    plot = pg.locator("div.bsvm-live .nsewdrag").first
    plot.wait_for()
    box = plot.bounding_box()
    for k in range(10):
        pg.mouse.click(box["x"] + (0.1 + 0.07 * k) * box["width"], box["y"] + 0.9 * box["height"])
        pg.wait_for_timeout(150 + 100 * (k % 4))
    pg.get_by_text(re.compile(r"^210 points")).first.wait_for(timeout=30_000)
    _no_exception(pg, "Data (playground)")


def test_a_presentation_link_opens_in_presentation_mode_every_time(server, browser):
    """A teacher's ``?present=1`` link opened without presentation mode, the flag gone from the address,
    in 1 of 10 fresh loads (4 of 12 in a crawl): the tab-id component, mounted first, reported while the
    session's first run was drawing and cut it short. It is mounted last now. Five fresh tabs."""
    for _ in range(5):
        ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        try:
            pg = ctx.new_page()
            pg.set_default_timeout(90_000)
            pg.goto(f"{server}/?sample=ripley.csv&present=1")
            pg.locator("h1", has_text="Data").wait_for()
            pg.wait_for_function("() => !!sessionStorage.getItem('bsvm-tab')")  # the id was reported
            pg.wait_for_timeout(1000)  # (and its rerun drawn)
            switch = pg.locator('[data-testid="stSidebar"] [role="switch"], '
                                '[data-testid="stSidebar"] input[type="checkbox"]').first
            assert switch.is_checked() and "present=1" in pg.url, pg.url
        finally:
            ctx.close()


def test_a_sidebar_link_opens_its_page_after_a_live_run(server, page):
    """After a run watched live (its fragment's timer reruns carry no widget states), a click on a
    sidebar link was taken for the tab id's report and undone: Diagnostics never opened after a stopped
    run. The link opens its page."""
    pg = page
    pg.goto(f"{server}/train?sample=ripley.csv&method=subgradient_hmc&o.n_samples=100000")
    pg.locator("h1", has_text="Train").wait_for()
    button(pg, "Start").click()
    wait_status(pg, "running: iteration")
    pg.wait_for_timeout(2000)
    button(pg, "Stop").click()
    wait_status(pg, "stopped")
    pg.get_by_role("link", name="Diagnostics").first.click()
    pg.locator("h1", has_text="Diagnostics").wait_for(timeout=30_000)
    _no_exception(pg, "Diagnostics after a stopped run")
