"""Draws out of the package in the standard format: ArviZ's DataTree schema, and predictive draws.

:func:`to_datatree` builds an ``xarray.DataTree`` with ArviZ's groups (arviz-base's ``from_dict``, the
schema of ArviZ 1.x): ``posterior`` (chain, draw, ...), ``sample_stats`` (chain, draw) with ArviZ's
standard names (``acceptance_rate``, ``step_size``, ``energy``, ``diverging``, ``n_steps``, ``lp``) and
``observed_data``. ``arviz_stats.summary`` and arviz-plots read it directly.

:func:`proba_draws_chunked` evaluates a per-draw predictive function over (chain, draw) in chunks, giving
the (chain, draw, row, class) array that every sampler's ``predict_proba_draws`` returns.

Public API: ``to_datatree``, ``pointwise_log_likelihood``, ``proba_draws_chunked``,
``SAMPLE_STATS_NAMES``, ``MAX_LOG_LIKELIHOOD``.
"""

from __future__ import annotations

import numpy as np

#: our progress/engine names -> ArviZ's sample_stats names
SAMPLE_STATS_NAMES = {"accept_prob": "acceptance_rate", "acceptance": "acceptance_rate",
                      "step_size": "step_size", "energy": "energy", "diverging": "diverging",
                      "n_leapfrog": "n_steps", "log_posterior": "lp", "lp": "lp", "xi": "thermostat"}


#: the most numbers (chains x draws x rows x classes) the draws' class probabilities behind a pointwise
#: log-likelihood may hold (160 MB of float64)
MAX_LOG_LIKELIHOOD = 20_000_000


def pointwise_log_likelihood(proba_draws, X, y_index: np.ndarray, n_chains: int, n_draws: int,
                             n_classes: int = 2) -> np.ndarray:
    """log p(y_i | x_i, draw) (chain, draw, row) from ``proba_draws(X)`` ((chain, draw, row, class)) at the
    observed class index of each row. ``proba_draws`` makes the whole (chain, draw, row, class) array
    first, so the size checked is that one's: refused before any work when chains x draws x rows x classes
    exceeds :data:`MAX_LOG_LIKELIHOOD` (with the size and what to do instead); the peak is then about
    (classes + 2) x 8 bytes per (chain, draw, row)."""
    n = int(np.shape(X)[0])
    if n != len(y_index):
        raise ValueError(f"X has {n} rows but the fit had {len(y_index)}: pass the training rows, in the "
                         "order given to fit, for the pointwise log-likelihood")
    size = int(n_chains) * int(n_draws) * n * int(n_classes)
    if size > MAX_LOG_LIKELIHOOD:
        raise ValueError(f"The pointwise log-likelihood needs the draws' class probabilities, "
                         f"{size:,} numbers ({8 * size / 1e9:.1f} GB), more than {MAX_LOG_LIKELIHOOD:,}: "
                         "call to_arviz() without X, or fit with fewer draws (n_samples) or chains.")
    P = proba_draws(X)
    with np.errstate(divide="ignore"):
        return np.log(np.take_along_axis(P, np.asarray(y_index)[None, None, :, None], axis=-1)[..., 0])


def rows_digest(X) -> str:
    """A fingerprint of a checked design (its shape and float64 bytes): lets ``to_arviz(X)`` tell the
    training rows from other rows of the same count without keeping a copy of them."""
    import hashlib

    A = np.ascontiguousarray(X, dtype=np.float64)
    if np.signbit(A).any() and (A == 0).any():
        A = A + 0.0  # -0.0 -> 0.0: equal rows, equal fingerprints (a review)
    h = hashlib.blake2b(repr(A.shape).encode(), digest_size=16)
    h.update(memoryview(A).cast("B"))  # (no copy of the design: tobytes() made two, a review)
    return h.hexdigest()


#: ``to_arviz(X)``'s refusal of rows other than the training rows
NOT_TRAINING_ROWS = ("X is not the training rows this fit was given (in their order): the pointwise "
                     "log-likelihood is of the training rows")


#: the refusal of an export with no kept draw (``to_datatree``, and MS-BPM, whose ``samples_`` then holds
#: the chains' current states)
NO_DRAWS = ("No draws kept yet: the run ended during burn-in (or before the first thinned draw), because "
            "its budget (max_iter / max_time) ran out or the caller stopped fit_iter. Fit with a larger "
            "budget, or fewer burn-in iterations, to export draws.")


def to_datatree(posterior: dict, sample_stats: dict | None = None, observed_data: dict | None = None,
                dims: dict | None = None, coords: dict | None = None, attrs: dict | None = None,
                log_likelihood: dict | None = None, constant_data: dict | None = None):
    """An ArviZ DataTree from arrays with (chain, draw) leading axes.

    posterior: name -> (n_chains, n_draws, ...); sample_stats: name -> (n_chains, n_draws) (our names are
    renamed to ArviZ's via ``SAMPLE_STATS_NAMES``; entries that are None are dropped); observed_data:
    name -> array; log_likelihood: name -> (n_chains, n_draws, rows), the pointwise log-likelihood of the
    observed variable of the same name (what ``arviz_stats.loo`` reads); constant_data: name -> array (the
    inputs); dims/coords as in ``arviz_base.from_dict``; attrs go on the tree's root and on every group (so
    a NetCDF file keeps them), after ``inference_library`` ("bsvm") and its version."""
    from arviz_base import from_dict  # imported on use: xarray is heavy and only needed here

    data = {"posterior": {k: np.asarray(v) for k, v in posterior.items()}}
    if any(v.ndim >= 2 and v.shape[1] == 0 for v in data["posterior"].values()):
        # (an empty posterior made arviz_stats.summary fail with "IndexError: index -1 is out of bounds",
        # a library user's review)
        raise ValueError(NO_DRAWS)
    if sample_stats:
        stats = {}
        for k, v in sample_stats.items():
            if v is None:
                continue
            v = np.asarray(v)
            stats[SAMPLE_STATS_NAMES.get(k, k)] = v.astype(bool) if k == "diverging" else v
        data["sample_stats"] = stats
    if observed_data:
        data["observed_data"] = {k: np.asarray(v) for k, v in observed_data.items()}
    if log_likelihood:
        data["log_likelihood"] = {k: np.asarray(v) for k, v in log_likelihood.items()}
    if constant_data:
        data["constant_data"] = {k: np.asarray(v) for k, v in constant_data.items()}
    # ArviZ's attributes for the sampling library (arviz-base adds its own as creation_library: a file
    # that named only "ArviZ 0.8.2" read as written by a package the user does not have, a crawl)
    from . import __version__

    attrs = {"inference_library": "bsvm", "inference_library_version": __version__, **(attrs or {})}
    # arviz-base takes attrs per group ("/" = the tree's root); a flat dict was dropped with a warning
    per_group = {group: dict(attrs) for group in ("/", *data)}
    import warnings

    with warnings.catch_warnings():
        # our arrays' leading axes are (chain, draw) by construction: arviz-base's guess that they are
        # swapped when a run kept fewer draws than chains (n_samples=1) was eight warnings (a review)
        warnings.filterwarnings("ignore", message="Found chain dimension to be longer than draw dimension")
        return from_dict(data, dims=dims or {}, coords=coords or {}, attrs=per_group)


def proba_draws_chunked(per_draw, flat_draws: np.ndarray, n_chains: int, n_rows: int, n_classes: int,
                        budget: float = 2e6) -> np.ndarray:
    """(chain, draw, row, class) from ``per_draw(draws (S, P)) -> (S, rows, classes)`` evaluated on
    chunks of the (chain * draw, P) draws, about ``budget`` numbers per chunk."""
    S = flat_draws.shape[0]
    out = np.empty((S, n_rows, n_classes))
    chunk = max(1, int(budget // max(1, n_rows * n_classes)))
    for s in range(0, S, chunk):
        out[s:s + chunk] = per_draw(flat_draws[s:s + chunk])
    return out.reshape(n_chains, S // max(1, n_chains), n_rows, n_classes)
