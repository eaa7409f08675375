"""``SBSVM``: the scikit-learn estimator around the S-BSVM engine."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from ..base import BayesianClassifier, binary_proba
from ..data import check_predict_data
from ..kernels import Kernel, make_kernel, sq_dist
from ..params import (
    RANDOM_STATE,
    Interval,
    Real,
    RealNotInt,
    StrOptions,
    non_negative,
    positive,
    positive_int,
)
from . import elbo as E
from .engine import SVIConfig, SVIEngine
from .geometry import features, linear_geometry, sparse_geometry
from .predictive import hinge_quadrature, probit

MAX_BATCH_VARIANT_ROWS = 4000


def kmeans_inducing(X, m, rng, n_lloyd=5, max_rows_per_centre=20):
    """k-means++ seeds refined by a few Lloyd steps on a subsample of at most 20 m rows.

    Inducing inputs need to cover the data, not to be converged cluster centres, and a full k-means
    (scikit-learn's, with its thread pool) would dominate the fit time of small problems.
    """
    n = X.shape[0]
    sub = X if n <= max_rows_per_centre * m else X[rng.choice(n, max_rows_per_centre * m, replace=False)]
    centres, _ = kmeans_plusplus(sub, m, random_state=int(rng.integers(2**31 - 1)))
    for _ in range(n_lloyd):
        assign = np.argmin(sq_dist(sub, centres), axis=1)
        counts = np.bincount(assign, minlength=m)
        sums = np.zeros_like(centres)
        np.add.at(sums, assign, sub)
        filled = counts > 0  # an empty cluster keeps its seed
        centres[filled] = sums[filled] / counts[filled, None]
    return centres


class SBSVM(BayesianClassifier):
    """Bayesian nonlinear SVM by stochastic variational inference with inducing points
    (Wenzel, Galy-Fajou, Deutsch & Kloft 2017).

    Binary only. Labels may be any two values; +1 in the model means ``classes_[1]``.

    Parameters
    ----------
    variant : "svi" (sec. 4.2, inducing points and minibatches), "batch" (sec. 4.1, every training point
        is an inducing point, full-data coordinate ascent; n <= 4000) or "linear" (sec. 4.5, primal
        weights and bias, O(d^3) per step).
    kernel : "rbf", "ard" (one length scale per feature), "linear", or a ``bsvm.kernels.Kernel``.
    lengthscale : initial length scale; None uses the median pairwise distance of (a sample of) X.
    variance : initial kernel variance (the prior scale of f, meaningful because the hinge has margin 1).
    n_inducing : number of inducing points (int), or a fraction of n if a float in (0, 1].
    inducing : "kmeans" (k-means with k-means++ seeding on at most 20,000 rows; best in sec. 5.5) or
        "random" (a random subset of the rows), or an (m, d) array.
    batch_size : minibatch size |S|; a batch of at least n rows means full-batch updates.
    max_iter : cap on steps.
    learning_rate : "auto" (rho = 1 for full batches, else Robbins-Monro), "robbins_monro"
        (rho_t = (t + tau)^-kappa), "adaptive" (Ranganath et al. 2013), or a float (constant rho).
    tau, kappa : Robbins-Monro delay and forgetting rate.
    optimize_hyperparameters : take an ELBO gradient step on the kernel's log-hyperparameters every
        ``hyper_every`` steps (sec. 4.3; Adam with rate ``hyper_lr``). For the linear variant this is an
        exact empirical-Bayes update of the prior variances.
    prior_variance : linear variant: initial prior variance of the weights and the bias.
    elbo_every : compute the reported ELBO every this many steps (on the full data, or on a fixed random
        subset of ``elbo_batch_size`` rows scaled to n).
    tol, patience : stop when the last ``patience`` ELBO evaluations improve on the best value before them
        by at most tol * |ELBO| (a stagnation test that tolerates the jitter of stochastic steps);
        tol=0 disables the test, so the run goes to max_iter.
    predictive : "probit" (Phi(m / sqrt(1 + v))) or "hinge" (Gauss-Hermite average of the normalised hinge
        likelihood); both are corrected forms of eq. 13 (docs/sbsvm.md sec. 6).
    progress_every : steps between progress records of ``fit_iter``.
    random_state : seed for inducing points, minibatches and the ELBO subset.
    stream_size : ``partial_fit`` only: n in the minibatch scale n / |S|, the rows of the whole stream;
        None uses the running count of rows seen (right for one pass; see ``bsvm.sbsvm.stream``).

    ``fit`` also takes a Dask array and streams its blocks (``bsvm.sbsvm.dask_fit``); ``partial_fit``
    takes a stream of in-memory chunks (``bsvm.sbsvm.stream``).

    Attributes
    ----------
    kernel_ : the (possibly tuned) kernel.  inducing_points_ : (m, d) array (None for "linear").
    mean_, cov_ : q(u) = N(mean_, cov_) in the paper's coordinates (primal weights+bias for "linear").
    elbo_ : last computed ELBO.  converged_ : whether the tolerance test stopped the run.
    coef_, intercept_ : posterior mean weights (linear variant only).

    Input scale (:func:`bsvm.data.check_input_scale`): "adaptive". The length scale starts at the median
    pairwise distance and the kernel hyperparameters are bounded relative to their starting values
    (1e-3..1e4 times); the linear variant's weight prior variance is bounded relative to 1 / (mean feature
    variance). So a rescaled copy of the data (x 1e6 or 1e-6) gives the same fit. One length scale serves
    every column with ``kernel="rbf"``, so fit warns (``DataScaleWarning``) when column standard
    deviations differ by more than 1e3: standardise, or use ``kernel="ard"``. A hyperparameter that ends
    the fit at a bound raises a ``ConvergenceWarning``. With a fixed ``lengthscale`` or a kernel object
    the rule is "unit".
    """

    _binary_only = True

    # parameter table (bsvm/params.py), checked before the data; cross-checks stay in _check_params
    _parameter_constraints = {
        "variant": [StrOptions({"svi", "batch", "linear"})],
        "kernel": [StrOptions({"rbf", "ard", "linear"}), Kernel],
        "lengthscale": [None, positive()],
        "variance": [positive()],
        "n_inducing": [positive_int(), Interval(RealNotInt, 0, 1, closed="right")],
        "inducing": [StrOptions({"kmeans", "random"}), "array-like"],
        "batch_size": [positive_int()],
        "max_iter": [positive_int()],
        "learning_rate": [StrOptions({"auto", "robbins_monro", "adaptive"}),
                          Interval(Real, 0, 1, closed="right")],
        "tau": [non_negative()],
        # Robbins-Monro: sum rho = inf and sum rho^2 < inf need kappa in (0.5, 1]
        "kappa": [Interval(Real, 0.5, 1, closed="right")],
        "optimize_hyperparameters": ["boolean"],
        "hyper_every": [positive_int()],
        "hyper_lr": [positive()],
        "prior_variance": [positive()],
        "elbo_every": [positive_int()],
        "elbo_batch_size": [None, positive_int()],
        "tol": [non_negative()],
        "patience": [positive_int()],
        "predictive": [StrOptions({"probit", "hinge"})],
        "progress_every": [positive_int()],
        "random_state": RANDOM_STATE,
        "stream_size": [None, positive_int()],
    }

    def _input_scale_rule(self):
        # the median-heuristic length scale and hyperparameter bounds relative to it (the linear variant:
        # prior-variance bounds relative to the features' variance) adapt to the data's overall scale
        return "adaptive" if self.lengthscale is None and isinstance(self.kernel, str) else "unit"

    def __init__(self, variant="svi", kernel="rbf", lengthscale=None, variance=1.0, n_inducing=100,
                 inducing="kmeans", batch_size=256, max_iter=2000, learning_rate="auto", tau=1.0, kappa=0.6,
                 optimize_hyperparameters=True, hyper_every=5, hyper_lr=0.05, prior_variance=1.0,
                 elbo_every=10, elbo_batch_size=2000, tol=1e-5, patience=5, predictive="probit",
                 progress_every=10, random_state=None, stream_size=None):
        self.variant = variant
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.variance = variance
        self.n_inducing = n_inducing
        self.inducing = inducing
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.tau = tau
        self.kappa = kappa
        self.optimize_hyperparameters = optimize_hyperparameters
        self.hyper_every = hyper_every
        self.hyper_lr = hyper_lr
        self.prior_variance = prior_variance
        self.elbo_every = elbo_every
        self.elbo_batch_size = elbo_batch_size
        self.tol = tol
        self.patience = patience
        self.predictive = predictive
        self.progress_every = progress_every
        self.random_state = random_state
        self.stream_size = stream_size

    # -- set-up ---------------------------------------------------------------------------------------------
    def _check_params(self, n):
        if self.variant not in ("svi", "batch", "linear"):
            raise ValueError(f"variant={self.variant!r}: use 'svi', 'batch' or 'linear'.")
        if self.predictive not in ("probit", "hinge"):
            raise ValueError(f"predictive={self.predictive!r}: use 'probit' or 'hinge'.")
        if self.variant == "batch" and n > MAX_BATCH_VARIANT_ROWS:
            raise ValueError(f"variant='batch' builds {n} x {n} matrices; with more than "
                             f"{MAX_BATCH_VARIANT_ROWS} rows use variant='svi'.")
        for name in ("max_iter", "elbo_every", "progress_every", "hyper_every", "batch_size"):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name}={v!r} must be a positive integer.")

    def _initial_kernel(self, X, rng):
        if not isinstance(self.kernel, str):
            return make_kernel(self.kernel, X.shape[1])
        ls = self.lengthscale
        if ls is None:
            # Median heuristic on a sample: a length scale on the scale of the data, whatever its units.
            sub = X[rng.choice(X.shape[0], min(X.shape[0], 1000), replace=False)]
            d = np.sqrt(sq_dist(sub, sub)[np.triu_indices(len(sub), 1)])
            ls = float(np.median(d[d > 0])) if np.any(d > 0) else 1.0
        return make_kernel(self.kernel, X.shape[1], float(ls), float(self.variance))

    def _select_inducing(self, X, rng):
        n = X.shape[0]
        if self.variant == "batch":
            return X.copy()
        if not isinstance(self.inducing, str):
            Z = np.asarray(self.inducing, dtype=float)
            if Z.ndim != 2 or Z.shape[1] != X.shape[1]:
                raise ValueError(f"inducing must be an (m, {X.shape[1]}) array, got shape {Z.shape}.")
            return Z
        m = self.n_inducing
        m = int(np.ceil(m * n)) if isinstance(m, float) and 0 < m <= 1 else int(m)
        n_unique = len(np.unique(X, axis=0)) if n <= 20000 else n
        m = max(1, min(m, n_unique))
        if self.inducing == "random":
            return X[np.sort(rng.choice(n, m, replace=False))].copy()
        if self.inducing != "kmeans":
            raise ValueError(f"inducing={self.inducing!r}: use 'kmeans', 'random' or an array.")
        return kmeans_inducing(X, m, rng)

    def _config(self, n):
        full = self.variant == "batch" or self.batch_size >= n
        lr = self.learning_rate
        kw = {}
        if lr == "auto":
            kw = {"schedule": "constant", "rho0": 1.0} if full else {"schedule": "robbins_monro"}
        elif lr in ("robbins_monro", "adaptive"):
            kw = {"schedule": lr}
        elif isinstance(lr, (float, int)) and 0 < lr <= 1:
            kw = {"schedule": "constant", "rho0": float(lr)}
        else:
            raise ValueError(f"learning_rate={lr!r}: use 'auto', 'robbins_monro', 'adaptive' "
                             "or a number in (0, 1].")
        return SVIConfig(batch_size=n if full else int(self.batch_size), tau=float(self.tau),
                         kappa=float(self.kappa), optimize_hyper=bool(self.optimize_hyperparameters),
                         hyper_every=int(self.hyper_every), hyper_lr=float(self.hyper_lr),
                         elbo_batch_size=self.elbo_batch_size, **kw)

    # -- fitting --------------------------------------------------------------------------------------------
    def fit_iter(self, X, y):
        from .stream import is_dask_collection
        if is_dask_collection(X) or is_dask_collection(y):
            from .dask_fit import dask_fit_iter
            return dask_fit_iter(self, X, y)
        return super().fit_iter(X, y)

    def partial_fit(self, X, y, classes=None):
        """One pass of SVI steps over a chunk (scikit-learn's out-of-core convention). The first call
        needs ``classes``, unless it continues a ``fit``. ``bsvm.sbsvm.stream`` says what the first call
        fixes and how n is known."""
        from .stream import partial_fit
        return partial_fit(self, X, y, classes)

    def _iterate(self, X, y_index):
        n = X.shape[0]
        self._check_params(n)
        # fit starts afresh; a later partial_fit goes on from it with n = these rows (bsvm.sbsvm.stream)
        self.__dict__.pop("_stream_state", None)
        self._n_fit_rows = int(n)
        y = self._encode_binary(y_index)
        rng = np.random.default_rng(self.random_state)
        if self.variant == "linear":
            geom = linear_geometry(np.full(X.shape[1] + 1, np.sqrt(float(self.prior_variance))))
        else:
            geom = sparse_geometry(self._initial_kernel(X, rng), self._select_inducing(X, rng))
        # A Dask input arrives as a row proxy that brings its own engine (sums over rows as reductions)
        engine = getattr(X, "make_svi_engine", SVIEngine)(X, y, geom, self._config(n), rng)
        state = engine.init(rng)
        elbo = engine.elbo(state)
        self.converged_ = False
        self._store(state, elbo)
        yield 0, self._metrics(state, elbo, rho=np.nan), self._snapshot()
        best_before, recent = -np.inf, [elbo]
        for it in range(1, self.max_iter + 1):
            state, info = engine.step(state, rng)
            if it % self.elbo_every == 0 or it == self.max_iter:
                elbo = engine.elbo(state)
                recent.append(elbo)
                if len(recent) > self.patience and self.tol > 0:
                    best_before = max(best_before, recent.pop(0))
                    # Stagnation: the last `patience` evaluations found no ELBO better than the best
                    # before them by more than tol * |ELBO|. Robust to the jitter of stochastic steps.
                    self.converged_ = max(recent) - best_before <= self.tol * abs(elbo)
            if it % self.progress_every == 0 or self.converged_ or it == self.max_iter:
                self._store(state, elbo)
                yield it, self._metrics(state, elbo, info.rho), self._snapshot()
            if self.converged_:
                break
        pinned = engine.pinned(state)
        if pinned and self.optimize_hyperparameters:
            warnings.warn(f"SBSVM: {', '.join(pinned)} stopped at the bound of its range (1e-3..1e4 times "
                          "its starting value; the linear variant's prior variances 1e-6..1e6 relative to "
                          "the features' variance): the data's scale or the kernel does not suit the "
                          "model; standardise the features or choose another kernel.", ConvergenceWarning,
                          stacklevel=2)

    def _store(self, state, elbo):
        """Expose the state reached as fitted attributes (called before every yield)."""
        geom = state.geom
        post = E.moments(state.eta1, state.P)
        S = E.covariance(post)
        self.geometry_, self.posterior_ = geom, post
        self.elbo_ = float(elbo)
        if geom.kind == "linear":
            self.kernel_, self.inducing_points_ = None, None
            self.mean_ = geom.prior_std * post.m
            self.cov_ = geom.prior_std[:, None] * S * geom.prior_std[None, :]
            self.coef_, self.intercept_ = self.mean_[:-1].copy(), float(self.mean_[-1])
            self.prior_variance_ = geom.prior_std**2
        else:
            self.kernel_, self.inducing_points_ = geom.kernel, geom.inducing
            self.mean_ = geom.L @ post.m
            self.cov_ = geom.L @ S @ geom.L.T

    def _metrics(self, state, elbo, rho):
        out = {"elbo": float(elbo), "rho": float(rho)}
        if state.geom.kind == "sparse":
            out.update(state.geom.kernel.describe())
        else:
            out["prior_variance"] = float(state.geom.prior_std[0] ** 2)
            out["bias_prior_variance"] = float(state.geom.prior_std[-1] ** 2)
        return out

    def _snapshot(self):
        return {"mean": self.mean_[:5].copy()}

    # -- prediction -----------------------------------------------------------------------------------------
    def _latent(self, X, chunk=20000):
        means, variances = [], []
        for start in range(0, X.shape[0], chunk):
            phi, t, _ = features(self.geometry_, X[start:start + chunk])
            a, c = E.marginals(phi, self.posterior_)
            means.append(a)
            variances.append(c + t)
        if not means:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(means), np.concatenate(variances)

    def predict_latent(self, X):
        """Mean and variance of the latent predictive q(f* | x*) (corrected eq. 13): for uncertainty maps."""
        return self._latent(check_predict_data(self, X))

    def decision_function(self, X):
        """Latent predictive mean m*; positive means ``classes_[1]``."""
        return self.predict_latent(X)[0]

    def _predict_proba(self, X):
        mean, var = self._latent(X)
        p1 = probit(mean, var) if self.predictive == "probit" else hinge_quadrature(mean, var)
        return binary_proba(p1)
