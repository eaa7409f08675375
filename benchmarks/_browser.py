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
def dashboard_server(timeout: float = 60.0):
    """Run ``streamlit run dashboard/app.py`` headless on a free port; yield ``(url, seconds)``, seconds
    from launch until its health endpoint answered; stop it on exit. RuntimeError (with the end of the
    server's output) if it exits or does not come up within ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"),
         "--server.headless", "true", "--server.port", url.rsplit(":", 1)[1], "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"streamlit exited: {out}")
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"streamlit did not come up within {timeout:.0f} s")
            time.sleep(0.1)
        yield url, time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
