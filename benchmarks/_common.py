"""Helpers shared by the benchmark scripts: data loading, timing, peak memory, table printing."""

from __future__ import annotations

import os
import resource
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

RAETSCH_DIR = Path(os.environ.get("BSVM_RAETSCH_DIR",
                                  Path(__file__).resolve().parents[2] / "shared" / "datasets" / "raetsch"))


def load_raetsch(name: str):
    """Load ``Processed_<name>.data`` (features then a +1/-1 label); returns X, y in {0, 1}, or None if
    the folder is absent."""
    path = RAETSCH_DIR / f"Processed_{name}.data"
    if not path.exists():
        return None
    data = np.loadtxt(path, delimiter=",")
    return data[:, :-1], (data[:, -1] > 0).astype(int)


@contextmanager
def timer():
    box = {}
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box["seconds"] = time.perf_counter() - t0


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def print_table(rows: list[dict], columns: list[str] | None = None, floatfmt: str = "{:.4f}") -> None:
    if not rows:
        print("(no rows)")
        return
    columns = columns or list(rows[0])
    cells = [[(floatfmt.format(r.get(c)) if isinstance(r.get(c), float) else str(r.get(c, "")))
              for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[j]) for row in cells)) for j, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
