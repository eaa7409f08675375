"""The Data page's playground: a generated 2-D sample (bsvm.datasets) with a noise setting, that the user
edits by clicking (add a point of either class, or remove the nearest one). No Streamlit here: the state
is a plain :class:`Playground` value, and every edit returns a new one.

While the points are exactly a generator's draw, its true p(y|x) (at the chosen noise) stays known and
the Calibration page draws it; once edited, the points are no longer a sample of that model, so the
truth is dropped rather than shown for data it does not describe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from bsvm import datasets
from bsvm.data import LoadedCSV

#: generator -> (title, make(n, random_state, noise), default noise, noise range)
GENERATORS = {
    "ripley": ("Ripley-like mixtures", datasets.make_ripley, datasets.RIPLEY_NOISE, (0.05, 0.6)),
    "moons": ("Two moons", datasets.make_moons, datasets.MOONS_NOISE, (0.02, 0.6)),
    "xor": ("XOR blobs", datasets.make_xor, datasets.XOR_NOISE, (0.1, 1.2)),
    "blank": ("Empty canvas (click to add points)", None, 0.0, (0.0, 0.0)),
}
FEATURES = ("x1", "x2")
ADD_0, ADD_1, REMOVE = "add class 0", "add class 1", "remove"


@dataclass(frozen=True)
class Playground:
    generator: str
    n: int
    noise: float
    seed: int
    X: np.ndarray
    y: np.ndarray
    edited: bool = False

    @property
    def digest(self) -> str:
        h = hashlib.sha1(np.ascontiguousarray(self.X).tobytes())
        h.update(np.ascontiguousarray(self.y).tobytes())
        return f"{self.generator}:{self.noise:.4g}:{h.hexdigest()[:12]}"

    @property
    def truth(self) -> tuple[str | None, dict]:
        """(generator name, its settings) while the points are the generator's own draw, else (None, {})."""
        if self.edited or self.generator not in datasets.GENERATORS:
            return None, {}
        return self.generator, {"noise": float(self.noise)}

    def loaded(self) -> LoadedCSV:
        frame = pd.DataFrame({FEATURES[0]: self.X[:, 0], FEATURES[1]: self.X[:, 1], "label": self.y})
        return LoadedCSV(X=np.asarray(self.X, dtype=float), y=np.asarray(self.y),
                         feature_names=list(FEATURES), label_name="label", frame=frame)

    def counts(self) -> tuple[int, int]:
        return int(np.sum(self.y == 0)), int(np.sum(self.y == 1))


def generate(generator: str = "ripley", n: int = 200, noise: float | None = None,
             seed: int = 0) -> Playground:
    """A fresh draw of ``n`` points (``noise`` = the generator's noise sd; None: its default)."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {generator!r}")
    _, make, default, _ = GENERATORS[generator]
    noise = default if noise is None else float(noise)
    if make is None:  # a blank canvas starts with two points of each class, so a split is possible
        X = np.array([[-1.0, -0.5], [-0.8, 0.6], [1.0, 0.4], [0.8, -0.6]])
        return Playground("blank", 4, 0.0, seed, X, np.array([0, 0, 1, 1]), edited=True)
    X, y = make(int(n), random_state=int(seed), noise=noise)
    return Playground(generator, int(n), noise, int(seed), np.asarray(X, dtype=float), np.asarray(y))


def edit(pg: Playground, x: float, y: float, mode: str, radius: float | None = None) -> Playground:
    """Add a point of class 0 or 1 at (x, y), or remove the point nearest to (x, y) (within ``radius``,
    default 5% of the data's span; nothing happens when none is that close)."""
    if mode in (ADD_0, ADD_1):
        X = np.vstack([pg.X, [[float(x), float(y)]]])
        lab = np.append(pg.y, 0 if mode == ADD_0 else 1)
        return replace(pg, X=X, y=lab, edited=True)
    if mode != REMOVE:
        raise ValueError(f"mode must be {ADD_0!r}, {ADD_1!r} or {REMOVE!r}, got {mode!r}")
    if len(pg.y) == 0:
        return pg
    span = float(np.max(np.ptp(pg.X, axis=0))) if len(pg.y) > 1 else 1.0
    radius = 0.05 * span if radius is None else radius
    d = np.hypot(pg.X[:, 0] - x, pg.X[:, 1] - y)
    j = int(np.argmin(d))
    if d[j] > radius:
        return pg
    keep = np.arange(len(pg.y)) != j
    return replace(pg, X=pg.X[keep], y=pg.y[keep], edited=True)


def click_grid(pg: Playground, n: int = 40, pad: float = 0.25) -> np.ndarray:
    """The (n*n, 2) invisible clickable points that cover the canvas (a click anywhere lands on one)."""
    X = pg.X if len(pg.y) else np.array([[-1.0, -1.0], [1.0, 1.0]])
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    return np.column_stack([gx.ravel(), gy.ravel()])
