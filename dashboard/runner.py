"""A fit that advances in short chunks, so a page can redraw between them (no Streamlit here).

``LiveRun`` holds an estimator and its ``fit_iter`` generator. ``advance(budget)`` pulls progress
records until the time budget is spent, ``step()`` pulls exactly one. Stopping is just not calling
them again; the estimator then predicts with its last reported state (the base-class contract).
Errors are kept as a message, never raised: a ValueError's text is what the user should read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

IDLE, RUNNING, PAUSED, DONE, STOPPED, FAILED = "idle", "running", "paused", "done", "stopped", "failed"

#: The Train page's live view: seconds of fitting per redraw, the redraw period (fitting then drawing fit
#: in one period) and the live map's grid size. The dashboard benchmark uses the same numbers.
CHUNK_SECONDS = 0.1
REDRAW_SECONDS = 0.2
MAP_GRID = 45


@dataclass
class LiveRun:
    estimator: object
    X: object
    y: object
    max_iter: int | None = None
    status: str = IDLE
    error: str = ""
    wall: float = 0.0  # seconds spent inside advance/step
    _gen: object = field(default=None, repr=False)

    @property
    def history(self) -> list:
        return getattr(self.estimator, "history_", None) or []

    @property
    def iteration(self) -> int:
        h = self.history
        return h[-1].iteration if h else 0

    @property
    def fitted(self) -> bool:
        return bool(self.history)

    @property
    def rate(self) -> float:
        """Iterations per second of compute (the estimator's own clock, pauses excluded)."""
        h = self.history
        return h[-1].iteration / h[-1].elapsed if h and h[-1].elapsed > 0 else 0.0

    @property
    def fraction(self) -> float:
        if not self.max_iter:
            return 1.0 if self.status == DONE else 0.0
        return 1.0 if self.status == DONE else min(1.0, self.iteration / self.max_iter)

    @property
    def active(self) -> bool:
        return self.status in (RUNNING, PAUSED, IDLE)

    def _pull(self) -> bool:
        """One record; False when the run ended (finished or failed)."""
        if self._gen is None:
            self._gen = self.estimator.fit_iter(self.X, self.y)
        try:
            next(self._gen)
            return True
        except StopIteration:
            self.status = DONE
        except ValueError as exc:  # bad settings or data: the message says what to do
            self.status, self.error = FAILED, str(exc) or type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - a numerical failure must end the run, not the page
            self.status, self.error = FAILED, f"{type(exc).__name__}: {exc}"
        self._gen = None
        return False

    def advance(self, budget: float = 0.15, max_records: int | None = None) -> int:
        """Pull records for about ``budget`` seconds, or until ``max_records`` were pulled (slow motion);
        returns how many were pulled."""
        if self.status in (DONE, STOPPED, FAILED):
            return 0
        t0 = time.perf_counter()
        n = 0
        while self._pull():
            n += 1
            if time.perf_counter() - t0 >= budget or (max_records is not None and n >= max_records):
                break
        self.wall += time.perf_counter() - t0
        return n

    def step(self) -> int:
        if self.status in (DONE, STOPPED, FAILED):
            return 0
        t0 = time.perf_counter()
        n = int(self._pull())
        self.wall += time.perf_counter() - t0
        if self.status not in (DONE, FAILED):
            self.status = PAUSED
        return n

    def stop(self) -> None:
        """End the run for good (the estimator keeps its last state); frees the generator."""
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        if self.status not in (DONE, FAILED):
            self.status = STOPPED
