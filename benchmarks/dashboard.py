"""Dashboard benchmark, in a real browser: does the live view keep up with the fit, and stay put?

    python -m benchmarks dashboard [--methods sbsvm,msbpm] [--minutes 1] [--seconds 10] [--crawl]

Everything is measured against ``streamlit run dashboard/app.py`` served headless on a free port and
driven by Playwright with Debian's /usr/bin/chromium (flags in benchmarks/_browser.py):

1. **Start-click to finished**, per method at its dashboard defaults on the Ripley sample (the Data
   page's default split: 70% of 250 rows, standardised, seed 0): seconds from the click on Start until
   the Train page shows "done", against the wall time of ``fit()`` on the same rows and settings in this
   process (measured just before, while the browser is idle). Target: at most 1.3x. A fit of a few tens
   of milliseconds cannot meet a ratio: one click's round trip and one redraw period (0.2 s) are
   already more, so the absolute overhead is printed too. ``child_s`` is the compute time the page
   shows at the end (the fit's own clock in its child process): ``child_s`` well above ``fit_s`` means
   the fit was slowed by sharing the CPU with the drawing (server and browser), the rest of
   ``overhead_s`` is the dashboard's own (click, start, noticing the end, drawing the final state).
   A second table does the same on ``--n`` uploaded Ripley rows, where fits last longer.
2. **Redraws per second with 2,000 points**: a Ripley CSV with 2,000 training rows is uploaded on the
   Data page, S-BSVM runs without end on the Train page, and the browser counts how often the live
   charts were redrawn (``Plotly.react`` calls, one per new figure) and how often a chart was blank
   (sampled every 0.1 s). Target: at least 4 redraws per second, no blank chart.
3. **Memory**: the server's resident set size (psutil) sampled every 5 s over that run, for
   ``--minutes`` (the issue's soak is 10). Target: flat (growth of the last half within 50 MB).
4. ``--crawl``: every page x every method with the run controls clicked at random (seeded) moments,
   counting exception texts (should be 0).

The machine's load average is printed with each table: the measurements are wall-clock times. On a
shared machine, start the benchmark in its own session with a raised group priority, e.g.
``setsid sh -c 'echo -15 > /proc/self/autogroup; exec python -m benchmarks dashboard'`` (root): with
``kernel.sched_autogroup_enabled=1`` other sessions' nice values do not lower their share, and the
benchmark passes its priority on to the browser it starts (chromium opens a session of its own).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ._browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    button,
    crawl,
    dashboard_server,
    exception_texts,
    go,
    live_revisions,
    progress_text,
    share_priority,
    wait_plotly,
    wait_status,
)
from ._common import print_table

ROOT = Path(__file__).resolve().parents[1]


def _dashboard():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bsvm.samples import sample_path
    from dashboard.analysis import prepare
    from dashboard.methods import METHODS, available_methods

    return sample_path, prepare, METHODS, available_methods


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def ripley_split():
    """The Data page's default data: the Ripley sample, 30% test, standardised, seed 0."""
    from bsvm.data import load_csv

    sample_path, prepare, _, _ = _dashboard()
    return prepare(load_csv(sample_path("ripley.csv")), None, True, 0.3, 0, truth="ripley", key="bench")


def fit_wall(method_key: str, data, seed: int = 0) -> tuple[float, float]:
    """Wall and CPU seconds of ``fit()`` at the dashboard's defaults on ``data``'s training rows."""
    _, _, METHODS, _ = _dashboard()
    m = METHODS[method_key]
    est = m.make(m.defaults(), seed)
    import inspect

    kw = {"progress": False} if "progress" in inspect.signature(est.fit).parameters else {}
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(data.X_train, data.y_train, **kw)  # no terminal bar: the page shows none either
    return time.perf_counter() - t0, time.process_time() - c0


def _rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def _browser(p):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    share_priority()  # the browser starts its own session: give it this benchmark's CPU priority
    return browser


def upload_split(csv: Path):
    """The Data page's default split of an uploaded CSV (label guessed, 30% test, standardised, seed 0)."""
    from bsvm.data import load_csv

    _, prepare, _, _ = _dashboard()
    return prepare(load_csv(csv), None, True, 0.3, 0, truth=None, key="bench-upload")


def _upload(pg, url: str, csv: Path, query: str) -> None:
    """Open a session from a link (``query``), upload ``csv`` on the Data page, open the Train page."""
    pg.goto(f"{url}/?{query}")
    pg.locator('[data-testid="stSelectbox"]').first.click()
    pg.get_by_role("option", name="Upload a CSV...").click()
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(csv))
    pg.get_by_text("Uploaded:").wait_for()
    pg.locator('[data-testid="stMetric"]', has_text="training rows").wait_for()
    go(pg, "Train")


def watched_runs(url: str, methods, p, log=print, csv: Path | None = None) -> list[dict]:
    """Table 1: Start-click to finished on the Train page against fit(); on the Ripley sample, or on
    ``csv`` uploaded on the Data page."""
    data = ripley_split() if csv is None else upload_split(csv)
    rows = []
    browser = _browser(p)
    try:
        for key in methods:
            fit_s, fit_cpu = fit_wall(key, data)  # just before: same machine state
            pg = browser.new_page(viewport={"width": 1280, "height": 720})
            pg.set_default_timeout(120_000)
            if csv is None:
                pg.goto(f"{url}/train?sample=ripley.csv&method={key}")
            else:
                _upload(pg, url, csv, f"method={key}")
            pg.locator("h1", has_text="Train").wait_for()
            wait_plotly(pg)
            start = button(pg, "Start")
            start.wait_for()
            t0 = time.perf_counter()
            start.click()
            text = wait_status(pg, "done", "failed", timeout=600_000)
            watched = time.perf_counter() - t0
            errors = exception_texts(pg)
            import re

            m = re.search(r"- ([0-9.]+) s$", text.strip())  # the child's own compute time, as shown
            rows.append({"method": key, "rows": len(data.y_train), "fit_s": fit_s, "fit_cpu_s": fit_cpu,
                         "child_s": float(m.group(1)) if m else float("nan"), "watched_s": watched,
                         "ratio": watched / fit_s, "overhead_s": watched - fit_s,
                         "status": text.split(":")[0], "exceptions": len(errors)})
            log(f"  {key}: fit {fit_s:.2f} s, watched {watched:.2f} s ({text[:70]!r})")
            pg.close()
    finally:
        browser.close()
    return rows


def _ripley_csv(n_train: int, seed: int = 0) -> Path:
    from bsvm.datasets import make_ripley

    X, y = make_ripley(int(np.ceil(n_train / 0.7)) + 1, random_state=seed)
    path = Path(tempfile.mkdtemp()) / f"ripley_{n_train}.csv"
    rows = "\n".join(f"{a:.5f},{b:.5f},{int(c)}" for (a, b), c in zip(X, y))
    path.write_text("x1,x2,label\n" + rows + "\n")
    return path


def live_soak(url: str, pid: int, p, n_train: int = 2000, seconds: float = 10.0, minutes: float = 1.0,
              log=print) -> dict:
    """Tables 2 and 3: an endless S-BSVM run on n_train uploaded points; redraws, blanks and memory."""
    csv = _ripley_csv(n_train)
    browser = _browser(p)
    try:
        pg = browser.new_page(viewport={"width": 1920, "height": 1080})
        pg.set_default_timeout(120_000)
        # a session opened from a link: S-BSVM with a run that does not stop by itself
        _upload(pg, url, csv, "method=sbsvm&o.max_iter=1000000&o.tol=0&o.patience=1000000000")
        wait_plotly(pg)
        button(pg, "Start").click()
        wait_status(pg, "running")
        pg.wait_for_function("() => document.querySelectorAll('div.bsvm-live .main-svg').length >= 4")
        pg.wait_for_timeout(1000)
        # redraws: sample the charts every 0.1 s for `seconds`
        first = live_revisions(pg)
        blanks, samples = 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            revs = live_revisions(pg)
            samples += len(revs)
            blanks += sum(not r["shown"] for r in revs)
            pg.wait_for_timeout(100)
        elapsed = time.perf_counter() - t0
        last = live_revisions(pg)
        per_chart = [(b["drawn"] - a["drawn"]) / elapsed for a, b in zip(first, last)]
        it_text = progress_text(pg)
        draw_ms = pg.evaluate("() => (window.__bsvmLive ? window.__bsvmLive.ms : []).slice(-200)")
        redraw = {"n_train": n_train, "seconds": elapsed, "charts": len(per_chart),
                  "redraws_per_s_max": max(per_chart), "redraws_per_s_objective": per_chart[0],
                  "redraws_per_s_map": per_chart[-1], "blank_samples": blanks, "samples": samples,
                  "draw_ms_median": float(np.median(draw_ms)) if draw_ms else float("nan"),
                  "draw_ms_p90": float(np.percentile(draw_ms, 90)) if draw_ms else float("nan"),
                  "progress": it_text[:60]}
        # memory over the soak
        rss = [(0.0, _rss_mb(pid))]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < minutes * 60:
            pg.wait_for_timeout(5000)
            rss.append((time.perf_counter() - t0, _rss_mb(pid)))
            if len(rss) % 12 == 0:
                log(f"  {rss[-1][0]:.0f} s: RSS {rss[-1][1]:.0f} MB, {progress_text(pg)[:50]!r}")
        mem = np.array([r for _, r in rss])
        half = mem[len(mem) // 2:]
        memory = {"minutes": rss[-1][0] / 60, "rss_start_mb": mem[0], "rss_end_mb": mem[-1],
                  "rss_max_mb": mem.max(), "growth_mb": mem[-1] - mem[0],
                  "growth_last_half_mb": half[-1] - half[0], "progress": progress_text(pg)[:60],
                  "exceptions": len(exception_texts(pg))}
        button(pg, "Reset").click()
        pg.close()
    finally:
        browser.close()
        csv.unlink(missing_ok=True)
    return {"redraw": redraw, "memory": memory}


def startup(url: str, p) -> dict:
    """Seconds from the request to a usable Data page (title and first selectbox), two sessions."""
    out = {}
    browser = _browser(p)
    try:
        for name in ("data_page_first_s", "data_page_next_s"):
            pg = browser.new_page(viewport={"width": 1280, "height": 720})
            pg.set_default_timeout(180_000)  # a loaded machine: measure, do not give up
            t0 = time.perf_counter()
            pg.goto(url)
            pg.locator("h1", has_text="Data").wait_for()
            pg.locator('[data-testid="stSelectbox"]').first.wait_for()
            out[name] = time.perf_counter() - t0
            pg.close()
    finally:
        browser.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks dashboard", description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default="", help="comma-separated method keys (default: all available)")
    ap.add_argument("--minutes", type=float, default=1.0, help="memory soak length (the issue's: 10)")
    ap.add_argument("--seconds", type=float, default=10.0, help="redraw-rate window (default 10)")
    ap.add_argument("--n", type=int, default=2000, help="training points for the redraw/memory run")
    ap.add_argument("--crawl", action="store_true", help="also crawl every page x method (random clicks)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the crawl's clicks")
    ap.add_argument("--long-methods", default="sbsvm,subgradient_hmc,gibbs,msbpm",
                    help="methods for the second watched table, on --n uploaded Ripley rows (where a fit "
                         "lasts long enough for a ratio to mean something)")
    ap.add_argument("--skip", default="",
                    help="comma-separated parts to skip: startup,watched,long,live")
    args = ap.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed: nothing measured")
        return 1
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is not installed: nothing measured")
        return 1
    _, _, METHODS, available_methods = _dashboard()
    methods = [m for m in args.methods.split(",") if m] or [m.key for m in available_methods(binary=True)]
    skip = set(args.skip.split(","))
    with dashboard_server() as (url, server_up, pid), sync_playwright() as p:
        if "startup" not in skip:
            print(f"\nStart-up (server up after {server_up:.1f} s; {_load()})")
            print_table([startup(url, p)], floatfmt="{:.2f}")
        if "watched" not in skip:
            print(f"\nStart-click to finished on the Train page vs fit(), dashboard defaults, Ripley sample "
                  f"({_load()} at start)")
            rows = watched_runs(url, methods, p)
            print_table(rows, floatfmt="{:.2f}")
            print(f"({_load()} at end) target ratio <= 1.3: met by "
                  f"{sum(r['ratio'] <= 1.3 for r in rows)} of {len(rows)}")
        if "long" not in skip and args.long_methods:
            csv = _ripley_csv(args.n)
            try:
                print(f"\nStart-click to finished vs fit(), library defaults, {args.n} uploaded Ripley "
                      f"training rows ({_load()} at start)")
                rows = watched_runs(url, [m for m in args.long_methods.split(",") if m], p, csv=csv)
            finally:
                csv.unlink(missing_ok=True)
            print_table(rows, floatfmt="{:.2f}")
            print(f"({_load()} at end) target ratio <= 1.3: met by "
                  f"{sum(r['ratio'] <= 1.3 for r in rows)} of {len(rows)}")
        if "live" not in skip:
            print(f"\nLive view: S-BSVM without end on {args.n} uploaded training points ({_load()})")
            live = live_soak(url, pid, p, args.n, args.seconds, args.minutes)
            print_table([live["redraw"]], floatfmt="{:.2f}")
            met = live["redraw"]["redraws_per_s_max"] >= 4
            print(f"target >= 4 redraws/s: {'met' if met else 'NOT met'}; "
                  f"blank chart samples: {live['redraw']['blank_samples']}")
            print(f"\nServer memory over {args.minutes:g} min of that run ({_load()} at end)")
            print_table([live["memory"]], floatfmt="{:.1f}")
        if args.crawl:
            print(f"\nCrawl: every page x {len(methods)} methods, random clicks (seed {args.seed})")
            browser = _browser(p)
            try:
                pg = browser.new_page(viewport={"width": 1280, "height": 720})
                pg.set_default_timeout(60_000)
                problems = crawl(pg, url, methods, seed=args.seed)
            finally:
                browser.close()
            print(f"exception texts seen: {len(problems)}")
            for line in problems:
                print("  " + line)
    return 0


def smoke():
    """Seconds: the run registry fits S-BSVM (fast settings) in a worker while figures are built, and
    Stop acts between records; no browser."""
    sample_path, prepare, METHODS, _ = _dashboard()
    from dashboard import figures
    from dashboard.runner import Run

    data = ripley_split()
    m = METHODS["sbsvm"] if METHODS["sbsvm"].available else METHODS["platt"]
    run = Run(m.make({**m.defaults(), **m.fast}, 0), data.X_train, data.y_train)
    run.start()
    redraws = 0
    while run.busy:
        figures.objective_curve(list(run.history)).to_json(validate=False)
        redraws += 1
        time.sleep(0.05)
    assert run.status == "done" and not run.error, (run.status, run.error)
    print(f"smoke: {run.records} records, {redraws} redraws while fitting, fit wall {run.wall:.2f} s")
