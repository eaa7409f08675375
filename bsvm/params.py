"""Declarative parameter tables, checked before any data is looked at.

Every estimator declares one class attribute, scikit-learn style::

    _parameter_constraints = {
        "tau": [Interval(Real, 0, None, closed="left")],
        "kernel": [StrOptions({"rbf", "ard", "linear"}), Kernel],
        "lengthscale": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": RANDOM_STATE,
    }

and :meth:`bsvm.base.BayesianClassifier.fit_iter` (so ``fit`` too) calls :func:`validate_params` first.
A value that matches none of a parameter's constraints raises
:class:`~sklearn.utils._param_validation.InvalidParameterError`, which is both a ``ValueError`` and a
``TypeError``, with a message naming the parameter, the accepted values and the value given, e.g.
``The 'tau' parameter of SBSVM must be a float in the range [0.0, inf). Got -1.0 instead.``

Why scikit-learn's ``Interval``/``StrOptions``/``Options`` rather than our own ``check_scalar`` tables:
they are what scikit-learn's own estimators use (the same messages users already know), many third-party
estimators use them, and scikit-learn's own ``check_param_validation`` can then test our tables
(every parameter has an entry; a wrongly typed or out-of-range value is named) -- see
``tests/test_params.py``. The module is private in scikit-learn, so it is imported here only: if it ever
moves, this is the one file to change. Constraint vocabulary (see scikit-learn's
``validate_parameter_constraints``): ``Interval(Real|Integral|RealNotInt, low, high, closed=...)`` (a
``None`` bound is infinite and an open infinite bound rejects inf; NaN never matches),
``StrOptions({...})``, ``Options(type, {...})``, a class (instances of it), ``None``, ``"boolean"``,
``"array-like"``, ``callable``, ``"random_state"``; ``"no_validation"`` skips a parameter.

Rules that involve several parameters or the data (e.g. ``n_chains >= 4`` for ADS, ``variant="batch"``
only up to 4000 rows) stay in the estimators' own checks; they run after this table.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = [
    "HasMethods", "Integral", "IntInterval", "Interval", "InvalidParameterError", "Options", "Real",
    "RealNotInt", "StrOptions", "RANDOM_STATE", "positive", "non_negative", "positive_int",
    "non_negative_int", "validate_params",
]


def positive():
    """A finite number > 0."""
    return Interval(Real, 0, None, closed="neither")


def non_negative():
    """A finite number >= 0."""
    return Interval(Real, 0, None, closed="left")


class IntInterval(Interval):
    """``Interval(Integral, ...)`` that refuses booleans: ``True`` is an ``Integral`` to Python, so
    ``n_chains=True`` passed the table and failed later, after the data had been checked, with another
    error class (a review)."""

    def __init__(self, left, right, *, closed):
        super().__init__(Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, bool | np.bool_) and super().is_satisfied_by(val)


#: ``random_state``: None, a seed in [0, 2**32 - 1] (not a boolean: scikit-learn's "random_state"
#: constraint took True, which then failed after the data check, a review), a ``RandomState`` or a
#: ``numpy.random.Generator``
RANDOM_STATE = [None, IntInterval(0, 2 ** 32 - 1, closed="both"), np.random.RandomState,
                np.random.Generator]


def positive_int():
    """An integer >= 1 (not a boolean)."""
    return IntInterval(1, None, closed="left")


def non_negative_int():
    """An integer >= 0 (not a boolean)."""
    return IntInterval(0, None, closed="left")


def _plain(value):
    """numpy scalars as Python scalars, so messages read ``Got -1.0`` rather than ``np.float64(-1.0)``."""
    return value.item() if isinstance(value, np.generic) else value


def validate_params(estimator) -> None:
    """Check ``estimator.get_params(deep=False)`` against its ``_parameter_constraints`` table.

    Raises :class:`InvalidParameterError` (a ``ValueError`` and a ``TypeError``) naming the first
    parameter that fails, what it accepts and the value given. Estimators without a table pass.
    """
    table = getattr(estimator, "_parameter_constraints", None)
    if not table:
        return
    # a parameter without an entry is not checked here; tests/test_params.py fails on it instead
    params = {k: _plain(v) for k, v in estimator.get_params(deep=False).items()}
    validate_parameter_constraints(table, params, caller_name=type(estimator).__name__)
