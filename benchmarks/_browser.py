"""The dashboard served headless and Debian's chromium: shared by the browser test and the dashboard
benchmark's start-up measurement."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard_server(timeout: float = 60.0, app: Path | None = None, flags: tuple = ()):
    """Run ``streamlit run dashboard/app.py`` (or another ``app``: the start-up floor's minimal apps)
    headless on a free port; yield ``(url, seconds, pid)``: seconds from launch until its health
    endpoint answered, and the server's process id (for its memory); stop it on exit. RuntimeError
    (with the end of the server's output) if it exits or does not come up within ``timeout``.
    ``flags``: more ``streamlit run`` options (after the defaults, so they override them)."""
    import tempfile

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    # the server's output goes to a file: a pipe that nobody reads fills after 64 KB of warnings, and then
    # every write of the server (or of a fit's child) blocks, and the page with it
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(app or ROOT / "dashboard" / "app.py"),
         "--server.headless", "true", "--server.port", url.rsplit(":", 1)[1], "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *flags],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                log.seek(0)
                out = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"streamlit exited: {out}")
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"streamlit did not come up within {timeout:.0f} s")
            time.sleep(0.1)
        yield url, time.perf_counter() - t0, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# ------------------------------------------------------------------ helpers for the test and benchmark

EXCEPTION_SELECTOR = '[data-testid="stException"]'
PROGRESS_SELECTOR = '[data-testid="stProgress"]'
BUTTONS = ("Start", "Pause", "Step", "Stop", "Continue", "Reset")
PAGES = ("Data", "Train", "Calibration", "Diagnostics", "Compare")


def exception_texts(pg) -> list[str]:
    """Streamlit's exception elements and any raw traceback text on the page (should be empty)."""
    out = [e.inner_text()[:300] for e in pg.locator(EXCEPTION_SELECTOR).all()]
    body = pg.locator("body").inner_text()
    if "Traceback (most recent call last)" in body:
        out.append(body[body.index("Traceback"):][:300])
    return out


def go(pg, title: str, timeout: float = 30_000) -> None:
    """Open a page through the sidebar (the session and its settings are kept) and wait for its title."""
    pg.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    pg.locator("h1", has_text=title).first.wait_for(timeout=timeout)


def button(pg, name: str):
    return pg.locator('[data-testid="stButton"] button', has_text=name).first


def progress_text(pg) -> str:
    loc = pg.locator(PROGRESS_SELECTOR).first
    return loc.inner_text() if loc.count() else ""


def live_revisions(pg) -> dict:
    """For each live chart on the page: the revision drawn and whether it shows a plot (not blank)."""
    return pg.evaluate("""() => Array.from(document.querySelectorAll('div.bsvm-live')).map(d => ({
        drawn: Number(d.dataset.drawn || 0),
        shown: d.querySelectorAll('.main-svg').length > 0 && d.getBoundingClientRect().height > 50}))""")


def wait_plotly(pg, timeout: float = 60_000) -> None:
    """Wait until the browser has loaded plotly.js for the live charts (preloaded by every page) and
    warmed it up (livechart draws two charts off screen once per tab, a second or so after loading)."""
    pg.wait_for_function("() => typeof window.Plotly === 'object' && "
                         "!!(window.__bsvmLive && window.__bsvmLive.warmed)", timeout=timeout)


def wait_status(pg, *words: str, timeout: float = 60_000) -> str:
    """Wait until the Train page's progress text starts with one of ``words``; returns the text."""
    pattern = "|".join(words)
    handle = pg.wait_for_function(  # returns the text it matched (read again later, it may be redrawn)
        f"""() => {{ const p = document.querySelector('{PROGRESS_SELECTOR}');
                    const t = p ? p.innerText.trim() : '';
                    return /^({pattern})/.test(t) ? t : false; }}""",
        timeout=timeout, polling=50)
    return str(handle.json_value())


def screenshot(pg, path, timeout: float = 30_000) -> bool:
    """Save a screenshot as a test artefact; returns whether one was saved.

    Screenshots are for people to look at, not checks: a headless chromium on a loaded machine now and
    then stops producing frames for a while, and Playwright's capture then waits for one until its
    timeout (seen once in CI: 90 s, twice in a row, after every page condition had been met). So one
    retry after a short pause, then a warning instead of a failed test."""
    import warnings

    for attempt in (1, 2):
        try:
            pg.screenshot(path=str(path), timeout=timeout, animations="disabled")
            return True
        except Exception as err:  # playwright's TimeoutError, or a page already closing
            if attempt == 2:
                warnings.warn(f"no screenshot {Path(path).name}: {str(err).splitlines()[0]}", stacklevel=2)
            else:
                pg.wait_for_timeout(1000)
    return False


def crawl(pg, url: str, methods, seed: int = 0, clicks: int = 6, shots=None, log=print) -> list[str]:
    """Every page x every method: on the Train page click the run controls at random moments (seeded),
    then visit every other page; returns the exception texts seen (empty when all is well).

    ``shots``: a folder for one screenshot per method and page."""
    import random

    rng = random.Random(seed)
    problems = []
    for m in methods:
        pg.goto(f"{url}/train?sample=ripley.csv&method={m}")
        pg.locator("h1", has_text="Train").wait_for()
        button(pg, "Start").wait_for()
        done = []
        for _ in range(clicks):
            enabled = [b for b in BUTTONS if button(pg, b).is_enabled()]
            if not enabled:
                break
            name = rng.choice(enabled)
            try:  # the button may have been disabled since (the run ended): a state, not a problem
                button(pg, name).click(timeout=10_000)
            except Exception as err:  # noqa: BLE001 - playwright's TimeoutError
                if button(pg, name).is_enabled():
                    raise
                log(f"  {m}: {name} was disabled before the click ({str(err).splitlines()[0][:60]})")
                continue
            done.append(name)
            pg.wait_for_timeout(rng.uniform(0, 1200))
            problems += [f"{m} after {'/'.join(done)}: {t}" for t in exception_texts(pg)]
        log(f"  {m}: clicked {', '.join(done)}; now {progress_text(pg)[:60]!r}")
        for title in PAGES:
            go(pg, title)
            pg.wait_for_timeout(300)
            problems += [f"{m} on {title}: {t}" for t in exception_texts(pg)]
            if shots is not None:
                screenshot(pg, shots / f"crawl_{m}_{title.lower()}.png")
    return problems


_SHIFTED: dict = {}


def shift_browser_priority() -> int:
    """Shift the nice value of every thread of this process's chromium descendants by this process's
    own nice value; returns how many threads were changed (0 where not permitted, or at nice 0).

    Chromium sets its own threads' priorities (the browser's main thread -8, a renderer 0, a renderer it
    deems in the background +5), ignoring the nice value it was started with. A benchmark started with
    ``nice -n -10`` on a shared machine then measured a browser that ran at the others' priority: a
    live-chart draw of 0.9 CPU seconds took 5.4 s. Shifting keeps chromium's own order and gives the
    browser the benchmark's priority, as the server and the fit's child have. Call it after opening a
    page (renderers start with their pages); threads already shifted are left alone."""
    import psutil

    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base == 0:
        return 0
    changed = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" not in proc.name():
                continue
            for t in proc.threads():
                now = os.getpriority(os.PRIO_PROCESS, t.id)
                if _SHIFTED.get(t.id) == now:
                    continue
                want = max(-20, min(19, now + base))
                os.setpriority(os.PRIO_PROCESS, t.id, want)
                _SHIFTED[t.id] = want
                changed += 1
        except (psutil.Error, OSError):
            continue
    return changed


def share_priority() -> int:
    """Give this process's descendants that run in another scheduling group (chromium starts its own
    session) this process's group priority; returns how many were changed (0 where not possible).

    With Linux's ``kernel.sched_autogroup_enabled=1`` each session shares the CPU as one group and a
    process's own nice value acts only inside its group; a benchmark started with a raised group
    priority (``echo -15 > /proc/self/autogroup``, so that other work on a shared machine does not
    distort its wall-clock times) would otherwise leave the browser it measures at the default share."""
    import psutil

    try:
        mine = open("/proc/self/autogroup").read().split()
        group, nice = mine[0], int(mine[-1])
    except (OSError, ValueError, IndexError):
        return 0
    changed = 0
    for child in psutil.Process().children(recursive=True):
        path = f"/proc/{child.pid}/autogroup"
        try:
            theirs = open(path).read().split()
            if theirs[0] != group and int(theirs[-1]) != nice:
                with open(path, "w") as f:
                    f.write(str(nice))
                changed += 1
        except (OSError, ValueError, IndexError):
            continue
    return changed

