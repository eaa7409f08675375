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
    #: the canvas (x_lo, y_lo, x_hi, y_hi), fixed when the points are drawn: had it followed the points,
    #: a click near an edge would rescale the axes and move every point from under the cursor (a crawl's
    #: remove-click then missed)
    bounds: tuple | None = None

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
    if make is None:  # no points at all (it began with four, and its caption "4 points - an empty canvas")
        return Playground("blank", 0, 0.0, seed, np.empty((0, 2)), np.empty(0, dtype=int), edited=True,
                          bounds=(-2.0, -2.0, 2.0, 2.0))
    X, y = make(int(n), random_state=int(seed), noise=noise)
    X = np.asarray(X, dtype=float)
    return Playground(generator, int(n), noise, int(seed), X, np.asarray(y), bounds=_padded(X))


def _padded(X: np.ndarray, pad: float = 0.25) -> tuple:
    """(x_lo, y_lo, x_hi, y_hi): the points' box widened by ``pad`` of its span on every side."""
    X = X if len(X) else np.array([[-1.0, -1.0], [1.0, 1.0]])
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def canvas(pg: Playground) -> tuple:
    """The canvas box of ``pg``: its fixed bounds, grown only to take in a point placed outside them."""
    bounds = getattr(pg, "bounds", None)  # (a Playground kept from before bounds existed has none)
    box = bounds if bounds is not None else _padded(pg.X)
    if len(pg.y) and bounds is not None:
        lo, hi = pg.X.min(axis=0), pg.X.max(axis=0)
        x0, y0, x1, y1 = box
        m = 0.05 * max(x1 - x0, y1 - y0)  # a point outside gets a margin, not a place on the frame
        box = (min(x0, lo[0] - m) if lo[0] < x0 else x0, min(y0, lo[1] - m) if lo[1] < y0 else y0,
               max(x1, hi[0] + m) if hi[0] > x1 else x1, max(y1, hi[1] + m) if hi[1] > y1 else y1)
    return tuple(float(v) for v in box)


def edit(pg: Playground, x: float, y: float, mode: str, radius: float | None = None) -> Playground:
    """Add a point of class 0 or 1 at (x, y), or remove the point nearest to (x, y) (within ``radius``,
    default 5% of the canvas's span; nothing happens when none is that close)."""
    if getattr(pg, "bounds", None) is None:  # fixed from the first edit on (see Playground.bounds)
        pg = Playground(pg.generator, pg.n, pg.noise, pg.seed, pg.X, pg.y, pg.edited, canvas(pg))
    if mode in (ADD_0, ADD_1):
        X = np.vstack([pg.X, [[float(x), float(y)]]])
        lab = np.append(pg.y, 0 if mode == ADD_0 else 1)
        return replace(pg, X=X, y=lab, edited=True)
    if mode != REMOVE:
        raise ValueError(f"mode must be {ADD_0!r}, {ADD_1!r} or {REMOVE!r}, got {mode!r}")
    if len(pg.y) == 0:
        return pg
    box = canvas(pg)
    radius = 0.05 * max(box[2] - box[0], box[3] - box[1]) if radius is None else radius
    d = np.hypot(pg.X[:, 0] - x, pg.X[:, 1] - y)
    j = int(np.argmin(d))
    if d[j] > radius:
        return pg
    keep = np.arange(len(pg.y)) != j
    return replace(pg, X=pg.X[keep], y=pg.y[keep], edited=True)


def click_grid(pg: Playground, n: int = 40, pad: float = 0.25) -> np.ndarray:
    """The (n*n, 2) invisible clickable points that cover the canvas (a click anywhere lands on one):
    :func:`canvas`, or the points' box widened by ``pad`` for a playground made without bounds."""
    box = canvas(pg) if getattr(pg, "bounds", None) is not None else _padded(pg.X, pad)
    gx, gy = np.meshgrid(np.linspace(box[0], box[2], n), np.linspace(box[1], box[3], n))
    return np.column_stack([gx.ravel(), gy.ravel()])
