"""``SBSVM.fit`` on a Dask array: the same fit (``SBSVM._iterate``, its set-up rules, stages, schedule and
stopping test), with the data reached block by block, so the whole array is never in memory at once.

The estimator receives a :class:`DaskRows` proxy in place of the array (and the labels in memory: one
integer per row). Its set-up rules (column statistics as reductions, median length scale, k-means
inducing points) gather only the rows they sample, with the same random draws as
for a NumPy array (they look at every row only when n <= 20,000, for the duplicate count, and then
gather that small array once). Then, with the defaults (``batch_size="auto"``):

* up to 2000 rows (one full-batch stage with the kernel="auto" stack) the array is gathered and fitted
  in memory: the very same fit (unless those rows take more than 64 MB, d > 4,000: then one stage as
  with a ``batch_size`` given, below);
* above, stage 1 (hyperparameters, the kernel="auto" candidates, their stacking weights and the
  calibrated link) runs in memory on the gathered subset of 2000 rows, drawn as in memory; stage 2 (q(u)
  on all rows, hyperparameters frozen) follows the in-memory rule: up to 30,000 rows, exact SQUAREM
  cycles whose every sum over rows is a Dask reduction over the blocks (``distributed.DaskReduceEngine``,
  in parallel on a ``dask.distributed`` cluster if a Client is active): the in-memory fit up to rounding.
  The column statistics are sums over blocks, and stage 1's Adam steps (normalised by the gradient's
  size) amplify their last-bit differences: probabilities agreed within 2e-13 to 2e-10 on Ripley-like
  data and ringnorm, and within 4e-9 to 4e-8 on twonorm, of 2,101-20,000 rows in blocks of 1,000-5,000
  (one block: 0). Before ``geometry.MIN_JITTER`` (K_mm's condition number reached about 1e10 on
  Ripley-like data, where stage 1's gradient was itself rounding) they differed by up to 0.08.
  Beyond 30,000 rows, minibatch SVI over the blocks (:class:`DaskStreamEngine`): the blocks are
  visited in a random order each epoch, one in memory at a time (blocks smaller than 10,000 rows a few
  at a time, up to that many rows or 64 MB), their rows in a random permutation cut into minibatches of
  ``batch_size`` rows that run on into the next block (s = n / |S| with the array's n). That random path
  differs from the in-memory minibatches (drawn from the whole array), so the two agree statistically,
  not exactly: on ringnorm's 40,000 rows in blocks of 5,000 / 200 / 20, ELBO -5,288 / -5,301 / -5,418
  and test error .0141 / .0141 / .0142 (CPU 2.0 / 3.7 / 16 s: each Dask call costs milliseconds).

With a ``batch_size`` given there is one stage (joint SVI in q(u) and the kernel, as in the paper):
``batch_size >= n`` runs every step as reductions, smaller batches stream the blocks. Its kernel="auto"
is the isotropic RBF (the stack's candidates and weighting read rows in memory); its link is calibrated
on up to 2000 gathered rows, as in memory (and so with ``optimize_hyperparameters=False``).
The ELBO for the stopping test is computed on a fixed random subset of ``elbo_batch_size`` rows
gathered once, as in memory.

``variant="batch"`` (n <= 4000 rows by its own limit) simply computes the array and fits in memory.
"""

from __future__ import annotations

import copy

import numpy as np

from ..base import _DATA_ATTRS, _MISSING, BayesianClassifier
from ..cost import CostError, _largest_n, check_cost, format_bytes, memory_limit
from ..data import (
    MULTICLASS_HINT,
    _label_text,
    _reject_nonfinite,
    check_input_scale,
    missing_labels_message,
    nonfinite_message,
)
from ..params import validate_params
from . import elbo as E
from .distributed import DaskReduceEngine, tree_sum
from .engine import SVIEngine
from .estimator import AUTO_BATCH
from .geometry import features

#: the set-up rules may gather the whole array only below this size (bytes)
MAX_GATHER_BYTES = 64 * 2**20


def check_dask_fit_data(est, X, y):
    """Validate a Dask (X, y) for fit without computing X; sets ``classes_`` and ``n_features_in_``.
    Returns X (one column chunk), y in -1/+1 and the class index of each row, both with X's row chunks."""
    import dask.array as da

    name = type(est).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None: pass the labels.")
    for what, arr in (("X", X), ("y", y)):
        if hasattr(arr, "to_dask_array"):  # a Dask DataFrame or Series
            raise TypeError(f"{what} is a Dask DataFrame/Series: pass {what}.to_dask_array(lengths=True).")
    X = X if isinstance(X, da.Array) else da.asarray(np.asarray(X))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows, features), got a Dask array of shape {X.shape}.")
    for what, arr in (("X", X), ("y", y)):
        chunks = getattr(arr, "chunks", None)
        if chunks is not None and any(np.isnan(c) for c in chunks[0]):
            raise ValueError(
                f"{what} is a Dask array with unknown chunk sizes (shape {arr.shape}; typical after boolean "
                f"indexing or DataFrame.values): call {what} = {what}.compute_chunk_sizes() before fit, "
                "or build it with DataFrame.to_dask_array(lengths=True).")
    rows = tuple(c for c in X.chunks[0] if c)
    if len(rows) < len(X.chunks[0]):
        # empty blocks (typical after filtering and compute_chunk_sizes) made Dask's std NaN, and the
        # fit then went on unstandardised without a word (probabilities up to 0.43 off, a review)
        X = X.rechunk((rows, X.chunks[1]))
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X has dtype {X.dtype}: encode non-numeric columns as numbers before fitting.")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # each block holds whole rows
    X = X.astype(np.float64)
    y = y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=(X.chunks[0],))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row), got shape {y.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}: pass one label per row of X.")
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    classes, counts = (np.asarray(v) for v in da.compute(*da.unique(y, return_counts=True)))
    if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
        # a NaN label is its own "class" to unique (and counted 0): it said "y has 3 classes" or "Class(es)
        # [nan] have fewer than 2 rows" (a review)
        raise ValueError(missing_labels_message(y.compute()))
    if classes.size < 2:
        raise ValueError(f"y has only 1 class ({_label_text(classes[0])}): a classifier needs examples of "
                         "at least two classes.")
    if classes.size > 2:
        raise ValueError(f"Only binary classification is supported. {name} is a binary classifier but y "
                         f"has {classes.size} classes: {MULTICLASS_HINT}.")
    if counts.min() < 2:
        raise ValueError(f"Class(es) {classes[counts < 2].tolist()} have fewer than 2 rows: provide at "
                         "least 2 examples per class.")
    est.classes_ = classes
    est.n_features_in_ = int(X.shape[1])
    is_one = y == classes[1]
    # The labels (one small integer per row) are gathered for the estimator's own rules (subsets, the
    # ELBO rows); X never is. The workers read the -1/+1 labels block by block from the Dask array.
    y_index = np.asarray(is_one.astype(np.int8).compute(), dtype=np.intp)
    return X, da.where(is_one, 1.0, -1.0), y_index


class DaskRows:
    """What ``SBSVM._iterate`` sees in place of a Dask array: a shape, row gathering for its sampled
    set-up rules, and ``make_svi_engine``, the engine that reaches the data block by block."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, X, y_pm):
        self.X, self.y_pm = X, y_pm
        self.shape = tuple(int(s) for s in X.shape)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return np.asarray(self.X[idx].compute(), dtype=np.float64)
        uniq, inverse = np.unique(np.asarray(idx), return_inverse=True)
        return np.asarray(self.X[uniq].compute(), dtype=np.float64)[inverse]

    @property
    def size(self):
        return self.shape[0] * self.shape[1]

    # column statistics (np.mean/np.std/np.max call these), |X| and the affine standardisation the
    # estimator or an error message may apply: Dask reductions and lazy maps, never a gathered array
    def mean(self, axis=None, dtype=None, out=None, **kwargs):
        m = np.asarray(self.X.mean(axis=axis).compute(), dtype=np.float64)
        if not np.all(np.isfinite(m)):  # (a NaN or an infinity anywhere shows in its column's mean)
            import dask
            import dask.array as da

            n_nan, n_inf = dask.compute(da.isnan(self.X).sum(), da.isinf(self.X).sum())
            if n_nan or n_inf:
                raise ValueError(nonfinite_message(int(n_nan), int(n_inf)))
        return m

    def std(self, axis=None, dtype=None, out=None, ddof=0, **kwargs):
        return np.asarray(self.X.std(axis=axis, ddof=ddof).compute(), dtype=np.float64)

    def max(self, axis=None, out=None, **kwargs):
        return np.asarray(self.X.max(axis=axis).compute(), dtype=np.float64)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.absolute and method == "__call__" and len(inputs) == 1:
            return DaskRows(abs(self.X), self.y_pm)
        return NotImplemented

    def __sub__(self, other):
        return DaskRows(self.X - np.asarray(other), self.y_pm)

    def __truediv__(self, other):
        return DaskRows(self.X / np.asarray(other), self.y_pm)

    def __array__(self, dtype=None, copy=None):
        size = self.shape[0] * self.shape[1] * 8
        if size > MAX_GATHER_BYTES:
            raise ValueError(f"Refusing to load the whole {self.shape} Dask array ({size / 2**20:.0f} MB) "
                             "into memory: pass an inducing='random' or an (m, d) inducing array, or a "
                             "smaller n_inducing.")
        return np.asarray(self.X.compute(), dtype=dtype or np.float64)

    def make_svi_engine(self, X, y, geom, config, rng) -> SVIEngine:
        cls = DaskReduceEngine if config.batch_size >= self.shape[0] else DaskStreamEngine
        return cls(X, y, geom, config, rng)


class DaskStreamEngine(SVIEngine):
    """Minibatch SVI steps over the blocks of a Dask array (module docstring): the parent's step reads
    ``self.X[idx]``, so ``self.X``/``self.y`` hold the current block, and ``self.n`` stays the array's n."""

    def __init__(self, X, y, geom, config, rng):
        super().__init__(X, y, geom, config, rng)  # n, and the ELBO subset drawn as in memory
        self.rows = X
        self._xb = X.X.to_delayed().ravel()
        self._yb = X.y_pm.to_delayed().ravel()
        self._sizes = [int(c) for c in X.X.chunks[0]]
        # (at most 64 MB of them, the gathering bound, beyond the one block the cost check admitted)
        self._fetch = max(1, min(self.FETCH_ROWS, MAX_GATHER_BYTES // (8 * max(1, X.X.shape[1]))))
        self._queue: list[int] = []
        self._order, self._pos = np.zeros(0, dtype=np.intp), 0
        self._eval = None
        self.X = self.y = None

    #: rows fetched per Dask call: small blocks are taken several at a time (in the epoch's random block
    #: order), since each call costs milliseconds of scheduling: 2,000 blocks of 20 rows, one per call,
    #: took 78 CPU s for a fit that takes 2 s in blocks of 5,000
    FETCH_ROWS = 10_000

    def _next_block(self, rng):
        import dask

        if not self._queue:
            self._queue = [int(b) for b in rng.permutation(len(self._xb))]  # a new epoch
        take = [self._queue.pop(0)]
        rows = self._sizes[take[0]]
        while self._queue and rows + self._sizes[self._queue[0]] <= self._fetch:
            rows += self._sizes[self._queue[0]]
            take.append(self._queue.pop(0))
        got = dask.compute(*[self._xb[b] for b in take], *[self._yb[b] for b in take])
        xs, ys = got[:len(take)], got[len(take):]
        xb = np.ascontiguousarray(xs[0] if len(xs) == 1 else np.vstack(xs), dtype=np.float64)
        _reject_nonfinite(xb)
        self._bx = xb
        self._by = np.asarray(ys[0] if len(ys) == 1 else np.concatenate(ys), dtype=np.float64)
        self._order, self._pos = rng.permutation(xb.shape[0]), 0

    def _batch(self, rng):
        """A minibatch of ``batch_size`` rows, taken from as many blocks as it needs (``self.X``/``self.y``
        become its rows). It was cut at each block's end: blocks of 20 rows made every step one of 20
        rows, ten times noisier, and the stopping rule, which reads the ELBO's gain per step, stopped at
        75 steps "converged" with the ELBO at -8,771 against -5,325 (ringnorm 40,000 rows, test error
        .024 against .014, a review)."""
        m = self.config.batch_size
        xs, ys, got = [], [], 0
        while got < m:
            while self._pos >= self._order.size:  # (skips empty blocks)
                self._next_block(rng)
            idx = self._order[self._pos:self._pos + (m - got)]
            self._pos += idx.size
            xs.append(self._bx[idx])
            ys.append(self._by[idx])
            got += idx.size
        self.X = xs[0] if len(xs) == 1 else np.vstack(xs)
        self.y = ys[0] if len(ys) == 1 else np.concatenate(ys)
        return np.arange(got)

    def elbo(self, state, chunk: int = 20000) -> float:
        post = E.moments(state.eta1, state.P)
        if self.elbo_idx is None:  # n <= elbo_batch_size: every row, as a reduction
            return float(tree_sum(self.rows.X, self.rows.y_pm, ("elbo", state.geom, post))[0]) \
                - E.kl_to_standard_normal(post)
        if self._eval is None:
            self._eval = (self.rows[self.elbo_idx],
                          np.asarray(self.rows.y_pm[self.elbo_idx].compute(), dtype=np.float64))
        Xe, ye = self._eval
        phi, t, _ = features(state.geom, Xe)
        a, c = E.marginals(phi, post)
        total = float(np.sum(E.data_terms(ye, a, c, t)))
        return self.n / ye.size * total - E.kl_to_standard_normal(post)


def dask_fit_iter(est, X, y):
    """``fit_iter`` for Dask input, as ``BayesianClassifier.fit_iter`` does it: the parameter table, the
    data checks (here without computing X), the cost guard, then the shared loop ``_fit_steps`` (progress
    records, roll-back on failure) over the estimator's own ``_iterate`` on a :class:`DaskRows` proxy."""
    validate_params(est)
    probe = copy.copy(est)  # the checks set classes_ etc.; the fit copies them over when it starts
    X, y_pm, y_index = check_dask_fit_data(probe, X, y)
    n, d = X.shape
    if not est.standardize:
        # with standardize=True the column means (the fit's first pass) find a NaN; without them the first
        # reader of X was k-means, whose message is scikit-learn's bare "Input contains NaN." (a review)
        DaskRows(X, y_pm).mean(axis=0)
    # Up to AUTO_BATCH rows a default fit is one full-batch stage with the kernel="auto" stack, whose
    # candidates and weighting read rows in memory: such an array (at most 2000 rows) is gathered and
    # fitted in memory, the very same fit. Above it, stage 1 gathers its subset and stage 2 reduces.
    # (whatever its width: the other path gathers those rows for stage 1 too, and a wide array of at most
    # 2,000 rows was refused with advice about inducing points, a review; the cost check below refuses
    # one that cannot fit, before anything is gathered)
    small = est.variant == "svi" and est.batch_size == "auto" and n <= AUTO_BATCH
    if est.variant == "batch" or small:
        if est.variant == "batch":
            est._check_params(n)  # its own n <= 4000 limit, before anything is computed
        check_cost(est, n, d, len(probe.classes_))
        import dask

        Xc, yc = dask.compute(X, y)
        return BayesianClassifier.fit_iter(est, Xc, yc)
    data_attrs = {k: probe.__dict__.get(k, _MISSING) for k in _DATA_ATTRS}
    rule = est._input_scale_rule()
    if rule != "standardizes":
        # the in-memory fit's scale warning (columns 1e6 apart, unstandardised): the Dask route skipped it
        # (a review). One pass over the blocks, only when the fit does not standardise them itself
        check_input_scale(probe, X, rule, sd=X.std(axis=0).compute())
    # memory: the engine holds one block (or one block's reduction) at a time, so the block is the "n"
    block = max(X.chunks[0])
    try:
        check_cost(est, block, X.shape[1], len(probe.classes_))
    except CostError as exc:
        # its "subsample to N rows" is advice for an in-memory array: here the block is what must shrink
        limit, _ = memory_limit()
        fits = _largest_n(est, block, X.shape[1], len(probe.classes_), 0.9 * limit)
        raise CostError(
            f"{str(exc).split(' rows x ')[0]} rows x {X.shape[1]:,} features: the fit holds one block of the "
            f"Dask array in memory at a time, and this array's largest block has {block:,} rows, more than "
            f"fits ({format_bytes(limit)}). Rechunk it into blocks of at most {max(fits, 1):,} rows, e.g. "
            f"X = X.rechunk(({max(fits, 1)}, -1)), or lower n_inducing or batch_size.") from None
    return est._fit_steps(DaskRows(X, y_pm), y_index, data_attrs)
