"""``SBSVM``: the scikit-learn estimator around the S-BSVM engine."""

from __future__ import annotations

import copy
import warnings
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold

from .._userwarn import warn_user
from ..base import BayesianClassifier, binary_proba, warn_if_flat
from ..data import CONSTANT_CHECK_CELLS, check_input_scale, check_predict_data
from ..kernels import ARDRBF, Constant, Kernel, Linear, SumKernel, make_kernel, sq_dist
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
from .loo import (
    calibrated_probit,
    cavity_marginals,
    fit_probit_link,
    link_log_densities,
    link_log_likelihood,
    stacking_objective,
    stacking_weights,
)
from .predictive import hinge_quadrature, probit

MAX_BATCH_VARIANT_ROWS = 4000
AUTO_INDUCING = 100         # n_inducing='auto': 20% of the rows, at most 100 (the paper's sec. 5.1 rule)
AUTO_INDUCING_FRACTION = 0.2
AUTO_INDUCING_MIN = 20      # ... but at least this many (or every row): 20% of a handful of rows is one point
AUTO_BATCH = 2000           # batch_size='auto' cap (and the hyperparameter stage's subset)
HYPER_TOL = 0.05            # stopping rule: largest log-hyperparameter move over the patience window
HYPER_STAGE_STEPS = 20      # steps of the hyperparameter stage when n > AUTO_BATCH (rule in the docstring)
ARD_STAGE_STEPS = 20        # ... and of each of kernel='auto''s ARD and linear trials: 60 steps in all
FULL_BATCH_CELLS = 10**7   # stage 2 is full-batch while the n x m features take at most 80 MB
FULL_BATCH_ROWS = 30_000    # ... and n is at most this (beyond, minibatch steps are cheaper: docstring)
THETA_SPAN = np.log(1e4)    # log-hyperparameters stay within this of their initial values
#: kernel="auto": the shared-scale candidates are fitted when the columns' spreads differ by more than
#: this (the standard deviations of a few hundred rows of identically spread columns differ by 1.1-1.4
#: over 20 columns: twonorm, ringnorm), ...
SHARED_SCALE_MIN_RATIO = 1.5
#: ... and by at most this much (columns 100 times apart are in different units: one scale would ignore
#: the narrow ones)
SHARED_SCALE_MAX_RATIO = 100.0
#: kernel="auto": the shared-scale candidate's kernel variances, as multiples of ``variance``
SHARED_SCALE_VARIANCES = (1, 4)
STACK_MIN_WEIGHT = 0.01      # kernel='auto': stacking weights below this are dropped (renormalised)
LOO_ROWS = 2000             # rows the leave-one-out check and the link fit use (a fixed random subset)
CV_MAX_ROWS = 1000          # kernel="auto": stacking weights by cross-validation up to this many rows
CV_FOLDS = 5                # ... with this many folds (rule in the SBSVM docstring)
#: stacking="auto" cross-validates (as "cv") instead of charging Akaike's nats when the ARD fit's charge
#: would exceed this many nats per row: d + 2 nats on n rows, an approximation for d << n that decided
#: the weights alone on wide data (300 rows x 500 features: 1.67 nats a row, so the ARD fit, best held
#: out by 0.2-0.4 nats a row, got no weight and the stack 2-3.5x its error, a review)
KFOLD_MAX_CHARGE = 0.1


class Trial(NamedTuple):
    """A kernel="auto" candidate: its fit (None for the base rate), stacking weight, calibrated link
    (A, B) and mean cavity leave-one-out log predictive on the rows it was weighed on."""
    state: object
    weight: float
    link: tuple
    loo: float


def kmeans_inducing(X, m, rng, n_lloyd=5, max_rows_per_centre=20):
    """k-means++ seeds refined by a few Lloyd steps on a subsample of at most 20 m rows.

    Inducing inputs need to cover the data, not to be converged cluster centres, and a full k-means
    (scikit-learn's, with its thread pool) would dominate the fit time of small problems.
    """
    n = X.shape[0]
    if n <= max_rows_per_centre * m:
        # all rows; gathered from a row source (a Dask array's ``DaskRows``), which k-means++ cannot read
        # (it failed with "'DaskRows' object has no attribute 'T'" on every Dask fit of <= 2,000 rows)
        sub = X if isinstance(X, np.ndarray) else np.asarray(X[np.arange(n)])
    else:
        sub = X[rng.choice(n, max_rows_per_centre * m, replace=False)]
    centres, _ = kmeans_plusplus(sub, m, random_state=int(rng.integers(2**31 - 1)))
    for _ in range(n_lloyd):
        assign = np.argmin(sq_dist(sub, centres), axis=1)
        counts = np.bincount(assign, minlength=m)
        sums = np.zeros_like(centres)
        np.add.at(sums, assign, sub)
        filled = counts > 0  # an empty cluster keeps its seed
        centres[filled] = sums[filled] / counts[filled, None]
    return centres


def describe_kernel(kern) -> dict[str, float]:
    """Flat hyperparameter names for progress records: the default RBF + Constant kernel reads as
    lengthscale, variance and bias_variance."""
    if isinstance(kern, SumKernel) and isinstance(kern.right, Constant):
        return {**kern.left.describe(), "bias_variance": float(kern.right.value)}
    return kern.describe()


def median_distance(X, rng, scale=1.0) -> float:
    """The median heuristic: the median pairwise distance between (up to 1000, drawn with ``rng``) rows of
    ``X`` times ``scale`` (per column): a length scale on the scale of the data, whatever its units; 1 when
    every row is the same."""
    sub = X[rng.choice(X.shape[0], min(X.shape[0], 1000), replace=False)] * scale
    d = np.sqrt(sq_dist(sub, sub)[np.triu_indices(len(sub), 1)])
    return float(np.median(d[d > 0])) if np.any(d > 0) else 1.0


class SBSVM(BayesianClassifier):
    """Bayesian nonlinear SVM by stochastic variational inference with inducing points
    (Wenzel, Galy-Fajou, Deutsch & Kloft 2017).

    Binary only. Labels may be any two values; +1 in the model means ``classes_[1]``.

    Defaults and the rule behind each (every one adapts to the data; none is switched per data set):

    * Features are standardised (mean 0, standard deviation 1 per column; a constant column keeps
      scale 1), so all features measured in other units (x 1e6) give the same fit. One feature in
      other units gives the same fit except for ``kernel="auto"``'s shared-scale candidates (below),
      which keep the columns' relative spreads and so depend on them (Ripley's data with one column
      x 2: predictions moved by up to 0.13); with spreads more than 100 apart they are not fitted.
      Kernel hyperparameters (``kernel_``) refer to standardised features; ``inducing_points_`` are
      reported in the original units.
    * Kernel (``kernel="auto"``): RBF plus a constant ``bias`` kernel (a random offset, the role of a
      GP's constant mean: the latent function does not have to return to 0 away from the data). Initial
      length scale: the median pairwise distance of (up to 1000) standardised rows; initial kernel and
      bias variances 1 (the hinge's margin is 1, so f is on that scale). After the isotropic fit (on the
      hyperparameter subset when n > 2000), two more fits are tried on the same rows, each from its own
      start: one length scale per feature (starting at the isotropic value, under the same prior plus
      the ``ard_shrinkage`` prior), and the linear kernel s2 x.x' + b2 (s2 = ``variance``, b2 = 1 to
      start; inducing inputs the origin and the d unit vectors, which make the sparse fit exact, when
      d + 1 <= m). The fits are then combined by stacking of predictive distributions (Yao, Vehtari,
      Simpson & Gelman 2018): simplex weights w maximising sum_i log sum_k w_k p_k(y_i | x_i, -i), where
      p_k(y_i | x_i, -i) is candidate k's predictive density of row i from a fit that did not see it.
      With ``stacking="cv"``, n <= 1000 and each class at least 10 rows, that density is held out: 5-fold
      stratified cross-validation, each fold's rows predicted by the whole procedure (standardisation,
      every candidate from its own start, each link) refitted on the other four folds (about 5 times the
      cost of the candidates' fits, a few seconds at n = 1000). Up to 1000 rows (either weighting) three
      more candidates join: the RBF and the linear kernel with their hyperparameters fixed at the
      initial values (learned ones over-fitted Flare: the fixed linear kernel's cross-validated log
      score beat the learned one's on every training fold), and the training base rate
      p = (n1 + 1) / (n + 2) (its link (0, Phi^-1(p)) on no latent function; its leave-one-out
      predictive is exact); and when the columns' spreads differ by a factor between 1.5 and 100
      (``SHARED_SCALE_MIN_RATIO``, ``SHARED_SCALE_MAX_RATIO``), the RBF on one scale shared by all
      columns (their relative spreads kept, as SVC's gamma="scale" keeps them; per-column
      standardisation is right for columns in different units, wrong for columns in the same ones),
      fixed at the initial kernel variance and at 4 times it (``SHARED_SCALE_VARIANCES``), with the
      median heuristic's length scale in those units (a set ``lengthscale`` is not used there; Ripley's
      p(y|x), seeds 20-39: mean |p - p_true| .0489 -> .0456, Platt .0478; docs/sbsvm.md section 7).
      Below about 100 rows, identically spread columns can differ by more than 1.5 by chance, and the
      candidates then nearly repeat "rbf.fixed" (two cheap extra fits).
      Above 1000 rows the extra fits would cost more than the fit (twonorm 2k).
      By default (``stacking="auto"``), with n <= 1000 and each class at least 10 rows, the weights
      are cross-validated as with ``stacking="cv"`` when the ARD fit's Akaike charge below, d + 2 nats,
      exceeds 0.1 nats a row (``KFOLD_MAX_CHARGE``; d >= 29 on 300 rows, 99 on 1,000: on 300 rows x 500
      features the charge, 1.67 nats a row, outweighed the ARD fit's held-out lead of 0.2-0.4 and the
      stack's error was 0.35 against ARD's 0.10; cross-validated, 0.10). Otherwise each row's
      density is held out from q(u): 5-fold stratified, the q(u) of every kernel fit refitted on the
      other four folds with the fit's kernel, hyperparameters and inducing inputs (exact coordinate
      ascent warm-started from the fit, to ``tol``) and the fold's rows put through the fit's link (the
      base rate: the other folds' (n1 + 1) / (n + 2)); the hyperparameters were learned on every row,
      the held-out ones too, so each learned one is charged Akaike's one nat, spread over the rows
      (densities times exp(-c_k / n): RBF + bias c = 3, ARD d + 2, linear 2; the fixed fits and the
      base rate c = 0). It costs 10-30 % more CPU than the cavity rule below (Ripley 175 / 1,000 rows
      0.28 / 0.67 -> 0.32 / 0.85 s; twonorm 700 rows 1.9 -> 2.1 s), which leaves row i out of q but
      only through its own Gaussian site: on Diabetis the RBF fit's cavity log score was 0.03 nats per
      row above the test folds' (the linear fit's 0.01), which gave the RBF most of the weight and an
      error of .2421 (the held-out rule: .2291). Above 1000 rows, or with ``stacking="loo"``, the fits
      are weighed on (up to 2000 of) the rows by their cavity leave-one-out predictives
      (``bsvm.sbsvm.loo``, each with its own calibrated link) times exp(-c_k / n_rows): the cavity
      leaves each row out of q, not out of the hyperparameters fitted on it, so each learned
      hyperparameter beyond the isotropic kernel's is charged Akaike's one nat, spread over the rows
      (ARD: c = d - 1; linear, one hyperparameter fewer: c = -1; the fixed fits and the base rate,
      which learn none: c = 0, as the isotropic fit). Weights below 0.01 are dropped and the rest
      renormalised. The prediction is the mixture sum_k w_k p_k(y | x) (``components_``);
      when n > 2000, the largest-weight fit gets stage 2 (below) and the others stay as fitted on the
      hyperparameter subset (the fits their weights were computed for): a stack costs one stage 2.
      Features of unequal relevance (Splice's DNA positions) weight ARD; isotropic problems (ringnorm)
      weight the RBF; a linear boundary or categorical codes (Flare) weight the linear kernels; close
      calls (Ripley) mix. ``defaults_`` records the rule used (``weighting``), each candidate's weight
      (``weight.<name>``), its mean cavity leave-one-out log predictive (``loo_log_lik.<name>``), and
      with folds its mean held-out log predictive (``kfold_log_lik.<name>``, or with cross-validation
      ``cv_log_lik.<name>``) and the mixture's (``kfold_log_lik.stacked``, ``cv_log_lik.stacked``;
      else ``loo_log_lik.stacked``); ``kernel`` there and ``kernel_`` are the
      largest-weight kernel fit's (names: rbf, ard, linear, rbf.fixed, linear.fixed, rbf.shared.fixed,
      rbf.shared.v4.fixed, base_rate).
    * Hyperparameters are learned by default (sec. 4.3): an Adam step (rate ``hyper_lr`` = 0.1 on the
      log scale) up the gradient of ELBO + log p(theta) after every natural-gradient step. p(theta) is a
      normal prior on each log-hyperparameter centred on its initial value with standard deviation
      ``hyper_prior_std`` = 2 (with ``kernel="ard"`` the log length scales are also shrunk towards their
      mean with standard deviation ``ard_shrinkage`` = 0.5). The hinge pseudo-likelihood has no
      normaliser, so type-II maximum likelihood alone keeps raising the variances and, with many
      inducing points, shortening the length scale (over-fitting); the prior bounds that drift.
      The hyperparameters are also boxed to 1e-3..1e4 times their initial values.
    * Inducing points (``n_inducing="auto"``): m = min(100, max(ceil(0.2 n), 20), number of distinct
      rows) (the paper's sec. 5.1 rule; more inducing points than that let the learned hyperparameters
      over-fit small sets, and 100 matched the 200 of the GPyTorch peer on ringnorm and twonorm at a
      quarter of the cost), placed by k-means (k-means++ seeding, a few Lloyd steps on at most 20 m rows;
      sec. 5.5 found k-means best). The floor of 20 changes only sets under 100 rows: 20 % of the 4
      training rows of six points clicked on the dashboard's playground was one inducing point at their
      centre, and every kernel then fitted a flat p = 0.5.
    * Minibatch (``batch_size="auto"``): min(n, 2000) rows. When that is all of the data, every step is
      exact coordinate ascent (rho = 1, sec. 4.1 updates with inducing points). When n > 2000 the fit has
      two stages. Stage 1 learns the hyperparameters with full-batch steps on a random subset of 2000
      rows, for a budget of 20 steps per kernel (isotropic, then with ``kernel="auto"`` the ARD and the
      linear trials: 60 steps in all). The budget is not a convergence failure: beyond it the log-
      hyperparameters drift along ridges of the ELBO that do not lower held-out error (twonorm 2k, 3000
      test rows: error .0237 at step 20, .0267 at step 150); ``stages_`` records when the budget ended a
      stage. Stage 2 freezes them and fits q(u) on all rows from the subset's solution scaled up to n
      rows: up to 30,000 rows (and while the n x m features take at most 80 MB, n m <= 1e7), by exact
      coordinate ascent on all rows, the features computed once and the steps accelerated by SQUAREM
      (Varadhan & Roland 2008; each step is one cycle of three passes, ``bsvm.sbsvm.engine``); beyond
      that, by SVI (minibatches of 2000, Robbins-Monro rate rho_t = (t + tau)^-kappa). Each exact cycle
      passes over every row three times and a run takes 7-15 cycles, whereas the minibatch steps to the
      same tolerance cost about the same at any n: measured (default fits, CPU s, exact against SVI,
      10,000 test rows) ringnorm 20,000 rows 1.04 / 1.46, 50,000 2.18 / 1.46, 100,000 4.48 / 2.54 (error
      .0142 / .0145 there); Ripley 40,000 1.93 / 0.78, 100,000 6.6 / 1.1 (error .091 either way).
      (With a batch_size given, one stage: joint SVI in q(u) and the hyperparameters, as in the paper.)
    * Stopping rule: the ELBO is computed every ``elbo_every`` = 5 steps (on at most ``elbo_batch_size``
      rows, scaled to n); a stage stops when the best of the last ``patience`` = 3 values improves on the
      best before them by at most ``tol`` x n nats (``tol`` = 1e-4 nats per training row). An exact,
      SQUAREM-accelerated stage 2 evaluates the ELBO (computed by its passes anyway) after every cycle
      and stops when one cycle gains at most ``tol`` x n: it cannot lose ELBO, so it needs no patience
      window against noise. A stage that reaches ``max_iter`` steps first stops with a
      ``ConvergenceWarning`` naming that budget.
    * Predictive (``predictive="calibrated"``): the hinge latent f is a margin score (a fit that puts
      f = 1 on the majority class of an uninformative set says Phi(1) = 0.84 whatever the base rate), so
      p(y = 1 | f) = Phi(A f + B), integrated over q(f*): Phi((A m* + B) / sqrt(1 + A^2 v*)), with A, B
      fitted by maximum leave-one-out likelihood of (up to 2000) training rows (cavity predictives,
      weak N(0, 1) priors on log A and B; ``bsvm.sbsvm.loo``; ``link_`` = (A, B)). A = 1, B = 0 is
      ``predictive="probit"``. ``partial_fit`` from scratch keeps (1, 0).

    Parameters
    ----------
    variant : "svi" (sec. 4.2, inducing points and minibatches), "batch" (sec. 4.1, every training point
        is an inducing point, full-data coordinate ascent; n <= 4000) or "linear" (sec. 4.5, primal
        weights and bias, O(d^3) per step).
    kernel : "auto" (rule above), "rbf", "ard" (one length scale per feature), "linear" (s2 x.x' + b2), or a
        ``bsvm.kernels.Kernel`` (used as given, on the standardised features if ``standardize``).
        With ``partial_fit``, or a Dask input fitted in one stage (a ``batch_size`` given), "auto" is
        "rbf".
    bias : add a learned constant kernel (a random offset with prior variance 1 to start) to "rbf" and
        "ard" kernels.
    lengthscale : initial length scale; None: the median heuristic above.
    variance : initial kernel variance (the prior scale of f, meaningful because the hinge has margin 1).
    n_inducing : "auto" (rule above), an int, or a fraction of n if a float in (0, 1].
    inducing : "kmeans" or "random" (a random subset of the rows), or an (m, d) array in original units.
    batch_size : "auto" (rule above) or the minibatch size |S|; at least n means full-batch updates.
    max_iter : cap on steps per stage.
    learning_rate : "auto" (rho = 1 for full batches, else Robbins-Monro), "robbins_monro"
        (rho_t = (t + tau)^-kappa), "adaptive" (Ranganath et al. 2013), or a float (constant rho).
    tau, kappa : Robbins-Monro delay and forgetting rate.
    optimize_hyperparameters : learn the kernel's log-hyperparameters (rule above). For the linear
        variant this is an exact empirical-Bayes update of the prior variances.
    hyper_every, hyper_lr : a hyperparameter step every this many steps, Adam's rate.
    hyper_prior_std : standard deviation of the normal prior on each log-hyperparameter (centred on its
        initial value); None or inf: no prior (plain ML-II).
    ard_shrinkage : kernel="auto"'s ARD candidate: standard deviation of the normal prior pulling each
        log length scale towards their mean (rule above); None: no such prior.
    prior_variance : linear variant: initial prior variance of the weights and the bias.
    standardize : standardise the features (rule above).
    elbo_every, elbo_batch_size : ELBO evaluation period and the size of its fixed row subset.
    tol, patience : the stopping rule above; tol=0 disables it, so each stage runs to max_iter.
    predictive : "calibrated" (rule above), "probit" (Phi(m / sqrt(1 + v))) or "hinge" (average of the
        normalised hinge likelihood); all use the corrected latent predictive of eq. 13 (docs/sbsvm.md
        section 6).
    stacking : how ``kernel="auto"`` weighs its candidates (rule above): "auto" (default) by 5-fold
        q(u) refits up to 1000 rows, else cavity leave-one-out; "loo" by cavity leave-one-out with
        Akaike's charge at every size; "cv" by 5-fold cross-validation of the whole procedure when
        n <= 1000. Measured (``python -m benchmarks sbsvm --part table1,ripley --stacking ...``, Table 1
        split seed 0, Ripley seeds 0-19): "auto" meets the paper's Table 1 + 0.01 on all 7 rows
        (Diabetis error .2291, Flare .3700), "loo" on 6 (Diabetis .2421); on Ripley's calibration
        (mean |p - p_true|) "auto" .0538, "loo" .0552, Platt .0542. "cv" refits everything
        five times (Ripley sample, 175 rows: 0.4 -> 3 CPU s; docs/sbsvm.md section 7).
    progress_every : steps between progress records of ``fit_iter``.
    random_state : seed for inducing points, minibatches, the subsets and the ELBO subset.
    stream_size : ``partial_fit`` only: n in the minibatch scale n / |S|, the rows of the whole stream;
        None uses the running count of rows seen (right for one pass; see ``bsvm.sbsvm.stream``).

    ``fit`` also takes a Dask array (``bsvm.sbsvm.dask_fit``): with the defaults it is the same fit as in
    memory (stage 1 and the stack on the gathered subset, stage 2 as Dask reductions or streamed
    blocks); ``partial_fit`` takes a stream of in-memory chunks (``bsvm.sbsvm.stream``).
    Input scale (:func:`bsvm.data.check_input_scale`): "standardizes" when ``standardize`` (the
    default), else "adaptive" (the length scale follows the median distance; bounds are relative to the
    starting values) or, with a fixed ``lengthscale`` or a kernel object, "unit". A hyperparameter that
    ends the fit at a bound raises a ``ConvergenceWarning``.

    Attributes
    ----------
    kernel_ : the (possibly tuned) kernel, on standardised features.  inducing_points_ : (m, d) array in
    original units (None for "linear").  mean_, cov_ : q(u) = N(mean_, cov_) in the paper's coordinates
    (primal weights+bias on standardised features for "linear").  elbo_ : last computed ELBO.
    converged_ : whether every stage stopped by the tolerance test (False while a ``fit_iter`` is under
    way).  stages_ : one dict per fit the run made (its name, steps, whether it converged, its ELBO),
    in order: kernel="auto"'s candidates and stage 2; the last progress record's ``stage``,
    ``len(stages_)``, is their stacking.  defaults_ : the values the "auto"
    rules resolved to.  coef_, intercept_ : posterior mean weights in original units (linear only).
    components_ : kernel="auto": the stack, a list of (name, weight, geometry, q(v), link (A, B)), largest
    weight first (None for other kernels; ``kernel_``, ``mean_``, ``geometry_`` show the largest-weight
    kernel fit); the base rate's geometry and q(v) are None and its link is (0, Phi^-1(p)).
    posterior_ : the largest-weight fit's q(v) (whitened coordinates).  x_mean_, x_scale_ : the
    standardisation's shift and scale per feature (0 and 1 with ``standardize=False``).  n_iter_ : the
    last record's iteration.  fit_time_ : the fit's compute seconds (wall, pauses of ``fit_iter``
    excluded).  history_ : the Progress records.  classes_, n_features_in_, feature_names_in_ : as in
    scikit-learn.
    """

    _binary_only = True

    # parameter table (bsvm/params.py), checked before the data; cross-checks stay in _check_params
    _parameter_constraints = {
        "variant": [StrOptions({"svi", "batch", "linear"})],
        "kernel": [StrOptions({"auto", "rbf", "ard", "linear"}), Kernel],
        "bias": ["boolean"],
        # (1e300 overflowed into a NumericalError that did not name the parameter, a library user's
        # review; the standardised features' scale is about 1)
        "lengthscale": [None, Interval(Real, 1e-100, 1e100, closed="both")],
        "variance": [positive()],
        "n_inducing": [StrOptions({"auto"}), positive_int(), Interval(RealNotInt, 0, 1, closed="right")],
        "inducing": [StrOptions({"kmeans", "random"}), "array-like"],
        "batch_size": [StrOptions({"auto"}), positive_int()],
        "max_iter": [positive_int()],
        "learning_rate": [StrOptions({"auto", "robbins_monro", "adaptive"}),
                          Interval(Real, 0, 1, closed="right")],
        "tau": [non_negative()],
        # Robbins-Monro: sum rho = inf and sum rho^2 < inf need kappa in (0.5, 1]
        "kappa": [Interval(Real, 0.5, 1, closed="right")],
        "optimize_hyperparameters": ["boolean"],
        "hyper_every": [positive_int()],
        "hyper_lr": [positive()],
        "hyper_prior_std": [None, positive()],
        "ard_shrinkage": [None, positive()],
        "prior_variance": [positive()],
        "standardize": ["boolean"],
        "elbo_every": [positive_int()],
        "elbo_batch_size": [None, positive_int()],
        "tol": [non_negative()],
        "patience": [positive_int()],
        "predictive": [StrOptions({"calibrated", "probit", "hinge"})],
        "stacking": [StrOptions({"auto", "loo", "cv"})],
        "progress_every": [positive_int()],
        "random_state": RANDOM_STATE,
        "stream_size": [None, positive_int()],
    }

    def _input_scale_rule(self):
        if self.standardize:
            return "standardizes"
        return "adaptive" if self.lengthscale is None and isinstance(self.kernel, str) else "unit"

    def __init__(self, variant="svi", kernel="auto", bias=True, lengthscale=None, variance=1.0,
                 n_inducing="auto", inducing="kmeans", batch_size="auto", max_iter=1000, learning_rate="auto",
                 tau=1.0, kappa=0.6, optimize_hyperparameters=True, hyper_every=1, hyper_lr=0.1,
                 hyper_prior_std=2.0, ard_shrinkage=0.5, prior_variance=1.0, standardize=True, elbo_every=5,
                 elbo_batch_size=2000, tol=1e-4, patience=3, predictive="calibrated", stacking="auto",
                 progress_every=10, random_state=None, stream_size=None):
        self.variant = variant
        self.kernel = kernel
        self.bias = bias
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
        self.hyper_prior_std = hyper_prior_std
        self.ard_shrinkage = ard_shrinkage
        self.prior_variance = prior_variance
        self.standardize = standardize
        self.elbo_every = elbo_every
        self.elbo_batch_size = elbo_batch_size
        self.tol = tol
        self.patience = patience
        self.predictive = predictive
        self.stacking = stacking
        self.progress_every = progress_every
        self.random_state = random_state
        self.stream_size = stream_size

    # -- set-up ---------------------------------------------------------------------------------------------
    def _check_params(self, n):
        if self.variant not in ("svi", "batch", "linear"):
            raise ValueError(f"variant={self.variant!r}: use 'svi', 'batch' or 'linear'.")
        if self.predictive not in ("calibrated", "probit", "hinge"):
            raise ValueError(f"predictive={self.predictive!r}: use 'calibrated', 'probit' or 'hinge'.")
        if self.variant == "batch" and n > MAX_BATCH_VARIANT_ROWS:
            raise ValueError(f"variant='batch' builds {n} x {n} matrices; with more than "
                             f"{MAX_BATCH_VARIANT_ROWS} rows use variant='svi'.")
        for name in ("max_iter", "elbo_every", "progress_every", "hyper_every", "patience"):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name}={v!r} must be a positive integer.")
        b = self.batch_size
        if not (b == "auto" or (isinstance(b, (int, np.integer)) and b >= 1)):
            raise ValueError(f"batch_size={b!r} must be 'auto' or a positive integer.")
        m = self.n_inducing
        if not (m == "auto" or (isinstance(m, (int, np.integer)) and m >= 1)
                or (isinstance(m, float) and 0 < m <= 1)):
            raise ValueError(f"n_inducing={m!r} must be 'auto', a positive integer or a fraction in (0, 1].")
        hp = self.hyper_prior_std
        if hp is not None and not (isinstance(hp, (int, float)) and hp > 0):
            raise ValueError(f"hyper_prior_std={hp!r} must be a positive number, inf or None.")
        if not (isinstance(self.tol, (int, float)) and self.tol >= 0):
            raise ValueError(f"tol={self.tol!r} must be a non-negative number.")

    def _check_param_rules(self):
        self._check_params(0)  # (the batch variant's row limit waits for the data)
        plain = isinstance(self.kernel, str) and self.kernel in ("auto", "linear")
        if self.variant == "linear" and not plain:
            # (SBSVM(variant="linear", kernel="rbf") fitted the linear model, silently: a newcomer's review)
            warn_user(f"SBSVM: variant='linear' fits a linear model of the features (weights with a Gaussian "
                      f"prior) and does not use kernel={self.kernel!r}; for that kernel use variant='svi' "
                      "(the default).", UserWarning)

    def _check_param_rules_for_data(self, X, n_classes):
        self._check_params(X.shape[0])
        if self.variant == "svi" and not isinstance(self.inducing, str):
            self._given_inducing(X.shape[1])

    def _given_inducing(self, d):
        """The user's inducing inputs as an (m, d) float array, checked: at fit_iter's call, not at the
        first step (an (m, d + 1) array was accepted until then; an empty one fitted a flat 0.5)."""
        try:
            Z = np.asarray(self.inducing, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"inducing must be 'kmeans', 'random' or an (m, {d}) array of numbers, got "
                             f"{type(self.inducing).__name__}.") from None
        if Z.ndim != 2 or Z.shape[1] != d:
            raise ValueError(f"inducing must be an (m, {d}) array (one column per feature of X), got shape "
                             f"{Z.shape}.")
        if Z.shape[0] == 0:
            raise ValueError("inducing holds no points: give at least one inducing input (or "
                             "inducing='kmeans', the default).")
        if not np.all(np.isfinite(Z)):
            raise ValueError("inducing holds NaN or infinite values: give finite inducing inputs.")
        return Z

    def _fit_scaling(self, X):
        self._raw_sd = None
        if self.standardize:
            sd = np.asarray(X.std(axis=0), float)
            # the columns' spreads in the caller's units (a cross-validation refit gets already standardised
            # rows: its caller passes the raw spreads down), for kernel="auto"'s shared-scale candidates
            self._raw_sd = sd * getattr(self, "_outer_sd", 1.0)
            self.x_mean_ = X.mean(axis=0)
            self.x_scale_ = np.where(sd > 0, sd, 1.0)
            # every feature constant: said by fit's own check for an in-memory array of up to
            # CONSTANT_CHECK_CELLS; a larger one or a Dask array (DaskRows) is said here, from this pass
            # (the Dask fit said nothing and predicted the base rate, a review). Not in a CV refit's
            # inner fits (the outer fit has said it)
            if getattr(self, "_outer_sd", None) is None and (
                    not isinstance(X, np.ndarray) or X.shape[0] * X.shape[1] > CONSTANT_CHECK_CELLS):
                check_input_scale(self, X, "standardizes", sd=sd)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])

    def _scaled(self, X):
        return (X - self.x_mean_) / self.x_scale_

    def _initial_kernel(self, X, rng):
        if not isinstance(self.kernel, str):
            return make_kernel(self.kernel, X.shape[1])
        ls = self.lengthscale
        if ls is None:
            ls = median_distance(X, rng)
        # kernel="auto" starts isotropic; _iterate may then release one length scale per feature
        name = "rbf" if self.kernel == "auto" else self.kernel
        kern = make_kernel(name, X.shape[1], float(ls), float(self.variance))
        if self.bias and name != "linear":
            kern = kern + Constant(1.0)
        return kern

    def _inducing_target(self, n):
        """The number of inducing points the rule asks for at n rows (before the cap by distinct rows)."""
        m = self.n_inducing
        if m == "auto":
            m = min(AUTO_INDUCING, max(int(np.ceil(AUTO_INDUCING_FRACTION * n)), AUTO_INDUCING_MIN))
        return int(np.ceil(m * n)) if isinstance(m, float) and 0 < m <= 1 else int(m)

    def _n_inducing(self, X, n=None):
        """The rule at n rows (default: X's), capped by X's distinct rows (the points are placed on X)."""
        rows = X.shape[0]
        n_unique = len(np.unique(X, axis=0)) if rows <= 20000 else rows
        return max(1, min(self._inducing_target(rows if n is None else n), n_unique))

    def _select_inducing(self, X, rng, n=None):
        """Inducing inputs placed on X's rows, as many as the rule asks for at n rows (default: X's)."""
        if self.variant == "batch":
            return X.copy()
        if not isinstance(self.inducing, str):
            return self._scaled(self._given_inducing(X.shape[1]))
        m = self._n_inducing(X, n)
        if self.inducing == "random":
            return X[np.sort(rng.choice(X.shape[0], m, replace=False))].copy()
        if self.inducing != "kmeans":
            raise ValueError(f"inducing={self.inducing!r}: use 'kmeans', 'random' or an array.")
        return kmeans_inducing(X, m, rng)

    def _batch_rows(self, n):
        if self.variant == "batch":
            return n
        b = AUTO_BATCH if self.batch_size == "auto" else int(self.batch_size)
        return min(n, b)

    def _config(self, n, kernel=None):
        b = self._batch_rows(n)
        full = b >= n
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
        if kernel is not None:
            theta0 = kernel.theta
            hp = self.hyper_prior_std
            if hp is not None and np.isfinite(hp):
                kw.update(prior_mean=theta0, prior_std=float(hp))
            base = kernel.left if isinstance(kernel, SumKernel) else kernel
            if isinstance(base, ARDRBF) and self.ard_shrinkage is not None:
                kw.update(group_idx=np.arange(base.lengthscales.size), group_std=float(self.ard_shrinkage))
        return SVIConfig(batch_size=b, tau=float(self.tau), kappa=float(self.kappa),
                         optimize_hyper=bool(self.optimize_hyperparameters),
                         hyper_every=int(self.hyper_every), hyper_lr=float(self.hyper_lr),
                         elbo_batch_size=self.elbo_batch_size, **kw)

    def _planned_iterations(self):
        """Progress-bar total: None (unknown) when the stopping rule ends the fit (``tol > 0``): max_iter
        per stage is only a cap, and a fit that converged at step 60 of a total of 3000 showed 2 % and
        vanished; with ``tol=0``, max_iter per stage plus kernel="auto"'s ARD and linear trial stages."""
        if self.tol > 0:
            return None
        extra = (self.kernel == "auto" and self.optimize_hyperparameters and self.variant != "linear")
        return int(self.max_iter) * (3 if extra else 1)

    # -- fitting --------------------------------------------------------------------------------------------
    def fit_iter(self, X, y):
        """Fit step by step, yielding a :class:`~bsvm.base.Progress` record every ``progress_every``
        steps (see :meth:`bsvm.base.BayesianClassifier.fit_iter`; ``fit`` consumes the same generator).

        With ``kernel="auto"`` the records cover each candidate kernel's fit in turn, then the stack:
        ``metrics["stage"]`` numbers them (0.0, 1.0, ...: every metric is a float) and
        ``metrics["stages_planned"]`` says how many fits there are; ``metrics["elbo"]`` is the current
        fit's ELBO. ``X`` may be a Dask array (a fit
        over its blocks, ``bsvm.sbsvm.dask_fit``). Stopping early (``break``) keeps the state of the last
        record, usable for prediction."""
        from .stream import is_dask_collection
        if is_dask_collection(X) or is_dask_collection(y):
            from .dask_fit import dask_fit_iter
            return dask_fit_iter(self, X, y)
        return super().fit_iter(X, y)

    def partial_fit(self, X, y, classes=None):
        """One pass of SVI steps over a chunk (scikit-learn's out-of-core convention). The first call
        needs ``classes``, unless it continues a ``fit``. Until the stream has its first 500 rows (or
        ``stream_size``), each call starts again from every row so far. ``bsvm.sbsvm.stream`` says what
        the first rows fix and how n is known."""
        from .stream import partial_fit
        return partial_fit(self, X, y, classes)

    def _iterate(self, X, y_index):
        # a fit of several stages (kernel="auto": up to six) warns once, naming every stage whose budget
        # ran out (each stage warned on its own: four warnings for one fit, x folds in cross-validation)
        self._budget_notes = []
        yield from self._iterate_fits(X, y_index)
        # converged only once the fit has ended: a consumer that broke out of fit_iter after two records
        # read converged_ True (a newcomer's review)
        self.converged_ = self._stages_converged
        notes, self._budget_notes = self._budget_notes, []
        if notes:
            fits = len(self.stages_)
            if fits > 1:
                where = f" in {len(notes)} of its {fits} fits: " + "; ".join(notes)
            else:  # ("was met all rows: the ELBO still gained ...", a library user's review)
                stage, _, said = notes[0].partition(": ")
                where = f" ({stage}): {said}"
            warn_user(f"SBSVM used its max_iter={self.max_iter} steps before the stopping rule (the ELBO "
                      f"gaining at most tol * n = {self.tol * X.shape[0]:.3g} nats over its last "
                      f"evaluations) was met{where}. Raise max_iter (or tol) to let it converge.",
                      ConvergenceWarning)
        self._warn_flat(X)

    def _warn_flat(self, X) -> None:
        """:func:`bsvm.base.warn_if_flat`: a user-set ``lengthscale`` of 1e6 (or 1e-6) on standardised data
        made the kernel constant (or diagonal), and the fit predicted 0.500 everywhere, said it converged
        and warned of nothing (a library user's review). Not on a Dask array (the strided rows would cost
        a pass over every block), nor in the cross-validation refits of kernel="auto" (their warnings are
        not the fit's)."""
        if not isinstance(X, np.ndarray) or getattr(self, "_cv_inner", False):
            return
        hint = ("the labels do not depend on these features, or the classes overlap everywhere"
                if self.kernel == "auto" else
                "the classes overlap everywhere, or the kernel does not suit the data (try kernel='auto', "
                "the default)")
        if self.lengthscale is not None and not 1e-2 <= float(self.lengthscale) <= 1e2:
            hint = (f"lengthscale={self.lengthscale:g} is far from the standardised features' scale (about "
                    "1), which makes the kernel constant or diagonal: leave lengthscale=None")
        warn_if_flat(self, X, hint)

    def _iterate_fits(self, X, y_index):
        n = X.shape[0]
        self._check_params(n)
        # fit starts afresh; a later partial_fit goes on from it with n = these rows (bsvm.sbsvm.stream)
        self.__dict__.pop("_stream_state", None)
        self._n_fit_rows = int(n)
        # A Dask input arrives as a row proxy that brings its own engine (sums over rows as reductions)
        make_engine = getattr(X, "make_svi_engine", SVIEngine)
        y = self._encode_binary(y_index)
        rng = np.random.default_rng(self.random_state)
        self.link_ = (1.0, 0.0)  # the plain probit until the fit calibrates it (predictive="calibrated")
        self.components_ = None  # kernel="auto": the stacked fits, set when the fit ends
        self._fit_scaling(X)
        Xs = self._scaled(X)
        self.converged_ = False  # (True when the fit ends with every stage converged: _iterate)
        self._stages_converged = True
        self.stages_ = []
        self._stages_planned = 1
        if self.variant == "linear":
            geom = linear_geometry(np.full(X.shape[1] + 1, np.sqrt(float(self.prior_variance))))
            cfg = self._config(n)
            self.defaults_ = {"batch_size": cfg.batch_size, "schedule": cfg.schedule,
                              "tol_nats": self.tol * n}
            engine = make_engine(Xs, y, geom, cfg, rng)
            yield from self._run(engine, engine.init(rng), 0, "all rows", rng)
            return
        kern = self._initial_kernel(Xs, rng)
        self._theta0 = kern.theta
        geom = sparse_geometry(kern, self._select_inducing(Xs, rng))
        cfg = self._config(n, kern)
        self.defaults_ = {"n_inducing": geom.size, "batch_size": cfg.batch_size, "schedule": cfg.schedule,
                          **{f"init.{k}": v for k, v in describe_kernel(kern).items()},
                          "hyper_prior_std": self.hyper_prior_std, "tol_nats": self.tol * n}
        b = cfg.batch_size
        # kernel="auto": after the isotropic fit, an ARD fit and a linear-kernel fit; the one that predicts
        # held-out rows best (leave-one-out check, Akaike's charge) is kept (_choose_kernel)
        auto = self.kernel == "auto" and cfg.optimize_hyper and Xs.shape[1] > 1
        subset = b < n and cfg.optimize_hyper and self.variant == "svi" and self.batch_size == "auto"
        # the number of fits the records' "stages_planned" announces (a progress bar's denominator):
        # kernel="auto" adds an ARD and a linear fit, and up to CV_MAX_ROWS rows their fixed-hyperparameter
        # twins (_choose_kernel's candidates); a fit on a hyperparameter subset adds its stage 2
        one = auto and (subset or make_engine is SVIEngine)
        fixed = one and not subset and n <= CV_MAX_ROWS
        self._stages_planned = 1 + (2 if one else 0) + (1 if subset else 0) + (
            2 + (len(SHARED_SCALE_VARIANCES) if self._shared_scales() is not None else 0) if fixed else 0)
        if subset:
            # Stage 1: hyperparameters by full-batch steps on a random subset of b rows (exact coordinate
            # ascent in q, so the hyperparameter gradient is not minibatch noise). A Dask input gathers
            # these b rows (the same draw), so stage 1 and the stack are the in-memory fit's.
            sub = np.sort(rng.choice(n, b, replace=False))
            Xsub = Xs[sub]
            cfg1 = replace(cfg, batch_size=b, schedule="constant", rho0=1.0)
            eng1 = SVIEngine(Xsub, y[sub], geom, cfg1, rng)
            state, it = yield from self._run(eng1, eng1.init(rng), 0, f"hyperparameters on {b} rows", rng,
                                             budget=HYPER_STAGE_STEPS)
            if auto:
                state, it, trials = yield from self._choose_kernel(eng1, state, it, rng,
                                                                   budget=ARD_STAGE_STEPS)
            # Stage 2: all rows, hyperparameters frozen, q(u) warm-started from the subset's solution
            # with its data part (P - I and eta1) scaled from b to n rows. With kernel="auto", the
            # largest-weight fit of the stack; the others stay as fitted on the subset (the fits their
            # stacking weights were computed for), so a stack costs one stage 2 as a single fit does.
            state, it = yield from self._stage2(Xs, y, state, cfg, s=n / b, it=it, rng=rng,
                                                label="q(u) on all rows", make_engine=make_engine)
            if auto:
                # only the stage-2 fit's link is new: the others keep the one of their weighting step
                name = self.defaults_["kernel"]
                score, link = self._loo_score(state, Xsub, y[sub])
                trials[name] = trials[name]._replace(state=state, link=link, loo=score)
                self._set_components(trials)
            else:
                self._fit_link(state, Xsub, y[sub])
            return
        # (a one-stage fit on a Dask input learns the isotropic kernel only: the stack's candidates and
        # their weighting read rows in memory)
        auto = auto and make_engine is SVIEngine
        engine = make_engine(Xs, y, geom, cfg, rng)
        first = "rbf kernel" if auto else "all rows"  # (auto: the first of its candidates)
        state, it = yield from self._run(engine, engine.init(rng), 0, first, rng)
        if auto:
            state, it, trials = yield from self._choose_kernel(engine, state, it, rng)
            if getattr(self, "_cv_inner", False):
                self._candidates = trials  # a cross-validation refit (_cv_log_densities reads every fit)
            else:
                self._set_components(trials)  # (each fit's link was fitted on these rows when weighed)
        else:  # (a Dask input gathers these rows: up to 2000)
            rows = self._loo_rows(n, rng)
            self._fit_link(state, Xs[rows], y[rows])

    def _stage2(self, Xs, y, state, cfg, s, it, rng, label, make_engine=SVIEngine):
        """Stage 2 of a fit on a hyperparameter subset (rule in the class docstring). ``make_engine``: a
        Dask input's (its exact cycles are Dask reductions, its SVI steps stream the blocks)."""
        n = Xs.shape[0]
        P = np.eye(state.P.shape[0]) + s * (state.P - np.eye(state.P.shape[0]))
        cfg2 = replace(cfg, optimize_hyper=False)
        if n <= FULL_BATCH_ROWS and n * state.geom.size <= FULL_BATCH_CELLS:
            # exact coordinate ascent on all rows (features computed once), accelerated by SQUAREM
            cfg2 = replace(cfg2, batch_size=n, schedule="constant", rho0=1.0, accelerate=True)
        eng2 = make_engine(Xs, y, state.geom, cfg2, rng)
        start = eng2.init(rng)._replace(eta1=s * state.eta1, P=P, geom=state.geom)
        return (yield from self._run(eng2, start, it, label, rng))

    def _set_components(self, trials):
        """The stacked predictive's components from kernel="auto"'s candidates (``_choose_kernel``):
        (name, weight, geometry, q(u), link) of each with a positive weight, largest weight first; the base
        rate has no geometry or q(u) and the link (0, Phi^-1(p)). ``link_`` and ``loo_log_lik`` are the
        largest-weight kernel fit's (the one ``kernel_`` and ``geometry_`` show)."""
        comps = [(name, t.weight, None if t.state is None else t.state.geom,
                  None if t.state is None else E.moments(t.state.eta1, t.state.P), t.link)
                 for name, t in trials.items() if t.weight > 0]
        self.components_ = sorted(comps, key=lambda c: -c[1])     # largest weight first
        shown = trials[self.defaults_["kernel"]]
        if self.predictive == "calibrated":
            self.link_ = shown.link
            self.defaults_["loo_log_lik"] = shown.loo

    # -- kernel choice and predictive link (bsvm.sbsvm.loo) -----------------------------------------------
    def _loo_rows(self, n, rng):
        return np.arange(n) if n <= LOO_ROWS else np.sort(rng.choice(n, LOO_ROWS, replace=False))

    def _loo_predictive(self, state, X, y):
        """Leave-one-out latent predictive N(a_-i, v_-i) of rows (X, y) under the state's q, and the link
        fitted on it when ``predictive="calibrated"`` (else (1, 0)); returns (a_loo, v_loo, (A, B))."""
        phi, t, _ = features(state.geom, X)
        a, c = E.marginals(phi, E.moments(state.eta1, state.P))
        a_loo, v_loo = cavity_marginals(y, a, c, t)
        link = fit_probit_link(y, a_loo, v_loo) if self.predictive == "calibrated" else (1.0, 0.0)
        return a_loo, v_loo, link

    def _loo_score(self, state, X, y):
        """Mean leave-one-out log predictive of rows (X, y) and the link; returns (score, (A, B))."""
        a_loo, v_loo, link = self._loo_predictive(state, X, y)
        return link_log_likelihood(y, a_loo, v_loo, *link) / len(y), link

    def _fit_link(self, state, X, y):
        if self.predictive == "calibrated" and state.geom.kind == "sparse":
            self.defaults_["loo_log_lik"], self.link_ = self._loo_score(state, X, y)

    def _trial_fit(self, engine, state, kernel, theta0, it, rng, stage, budget, group=None,
                   inducing=None, fixed=False):
        """A trial fit on the engine's rows and inducing inputs (or ``inducing``) with another kernel, from
        its own start ``theta0``, under the same kind of prior (centred on ``theta0``) and bounds as the
        first fit; ``fixed``: the hyperparameters stay at ``theta0`` (q(u) alone, by SQUAREM-accelerated
        coordinate ascent when every step is full-batch). Returns (state, engine, iteration count): the
        engine, for the kept fit's warnings."""
        cfg = engine.config
        kw = {"theta_bounds": (theta0 + np.log(1e-3), theta0 + np.log(1e4)), "group_idx": None,
              "group_std": np.inf}
        if cfg.prior_mean is not None:
            kw["prior_mean"] = theta0
        if group is not None and self.ard_shrinkage is not None:
            kw.update(group_idx=group, group_std=float(self.ard_shrinkage))
        if fixed:
            kw.update(optimize_hyper=False, accelerate=True)
        Z = state.geom.inducing if inducing is None else inducing
        eng = SVIEngine(engine.X, engine.y, sparse_geometry(kernel, Z), replace(cfg, **kw), rng)
        state, it = yield from self._run(eng, eng.init(rng), it, stage, rng, budget=budget, trial=True)
        return state, eng, it

    def _shared_scales(self):
        """The columns' spreads over their root mean square, r_j, for kernel="auto"'s shared-scale
        candidates (:meth:`_shared_scale_kernel`); None when there are none: features not standardised,
        or spreads within ``SHARED_SCALE_MIN_RATIO`` of each other (the candidate would repeat
        "rbf.fixed"), or more than ``SHARED_SCALE_MAX_RATIO`` apart (different units)."""
        sd = getattr(self, "_raw_sd", None)
        if not self.standardize or sd is None:
            return None
        live = sd > 0
        spread = sd[live].max() / sd[live].min() if live.sum() >= 2 else 1.0
        # a cross-validation refit has the candidates its caller has (its folds' spreads differ a little)
        wanted = getattr(self, "_outer_shared", SHARED_SCALE_MIN_RATIO < spread <= SHARED_SCALE_MAX_RATIO)
        if not wanted:
            return None
        return np.where(live, sd / np.sqrt(np.mean(sd[live] ** 2)), 1.0)

    def _shared_scale_kernel(self, Xs, kern, rng, r):
        """kernel="auto"'s RBF on the features with one scale shared by all (their relative spreads r
        kept, as scikit-learn's SVC with gamma="scale" treats them), its length scale l by the median
        heuristic in those units; as an ARD kernel on the standardised rows ``Xs``: l_j = l / r_j.
        Per-column standardisation stretches a column of small spread, which is right for columns in
        different units and wrong for columns in the same ones: the stack's held-out weights choose.
        (On Ripley's data, whose two features share their units, the stack without it was further from
        the true p(y|x) than Platt's SVC, mean |p - p_true| .0600 vs .0542 over 20 seeds; with it
        .0538.)"""
        ard = ARDRBF(median_distance(Xs, rng, scale=r) / r, float(np.exp(self._theta0[1])))
        return SumKernel(ard, kern.right.with_theta(self._theta0[2:])) if isinstance(kern, SumKernel) else ard

    def _weighting(self, y, budget, d):
        """How kernel="auto" weighs its candidates (rule in the class docstring): "cv" (the whole procedure
        cross-validated), "kfold" (q(u) refitted on K - 1 folds at each fit's hyperparameters) or "loo"
        (cavity leave-one-out). The fold rules need n <= CV_MAX_ROWS, no stage budget and each class on
        at least 2 K rows; a cross-validation refit weighs nothing (its caller reads every fit).
        ``stacking="auto"`` takes "cv" where "kfold"'s charge of the ARD fit, d + 2 nats on n rows,
        exceeds :data:`KFOLD_MAX_CHARGE` nats a row (d >= 29 on 300 rows, d >= 99 on 1,000)."""
        counts = np.bincount((y > 0).astype(int), minlength=2)
        folds = (budget is None and y.size <= CV_MAX_ROWS and counts.min() >= 2 * CV_FOLDS
                 and not getattr(self, "_cv_inner", False))
        if folds and self.stacking in ("cv", "auto"):
            wide = (d + 2) / y.size > KFOLD_MAX_CHARGE
            return "cv" if self.stacking == "cv" or wide else "kfold"
        return "loo"

    def _choose_kernel(self, engine, state, it, rng, budget=None):
        """kernel="auto": the candidate fits on the engine's rows and their stacking weights (Yao et al.
        2018, ``bsvm.sbsvm.loo.stacking_weights``). Returns (state, it, trials): the largest-weight kernel
        fit's state, and for every candidate a ``Trial`` (state, weight, link, leave-one-out score).

        Candidates: the isotropic fit (``state``); one with one length scale per feature (all starting at
        the isotropic initial value; the same prior on each log-hyperparameter plus the ``ard_shrinkage``
        prior towards their mean); the linear kernel s2 x.x' + b2 (s2 = ``variance``, b2 = 1 to start;
        inducing inputs the origin and the d unit vectors, which make it exact, when d + 1 is at most m).
        Up to ``CV_MAX_ROWS`` rows (and without a stage budget) three more: the RBF and the linear kernel
        with their hyperparameters fixed at the initial values, and the training base rate.
        Weights (``_weighting``): from K-fold cross-validated log predictive densities (each fold's rows
        predicted by the whole procedure refitted on the other folds, "cv"), from K-fold held-out
        densities of q(u) refitted at each fit's hyperparameters less Akaike's one nat per learned
        hyperparameter ("kfold", ``_kfold_log_densities``), or else from each fit's cavity leave-one-out
        predictive of (up to 2000 of) the engine's rows less Akaike's charge of one nat per hyperparameter
        beyond the isotropic kernel's spread evenly over those rows (the ARD fit pays d - 1 nats, the
        linear kernel, one hyperparameter fewer than RBF + bias, gains one; the fixed fits and the base
        rate pay nothing). Weights below
        ``STACK_MIN_WEIGHT`` are dropped and the rest renormalised. (Warm-starting ARD from the isotropic
        optimum stopped near it: on Splice its error was 2-3x that of the fit from the start.)"""
        kern = state.geom.kernel
        bias = isinstance(kern, SumKernel)
        d = engine.X.shape[1]
        weighting = self._weighting(engine.y, budget, d)
        # up to CV_MAX_ROWS rows the fits at the initial hyperparameters and the base rate are candidates
        # whichever the weighting (above, their extra fits would cost more than the fit: twonorm 2k)
        candidates = budget is None and engine.y.size <= CV_MAX_ROWS
        expand = lambda th: np.concatenate([np.full(d, th[0]), th[1:]])  # noqa: E731 (iso -> ARD theta)
        theta_ard = expand(self._theta0)
        ard = ARDRBF(np.exp(theta_ard[:d]), float(np.exp(theta_ard[d])))
        ard_kernel = SumKernel(ard, kern.right.with_theta(self._theta0[2:])) if bias else ard
        fits, engines = {"rbf": state}, {"rbf": engine}
        fits["ard"], engines["ard"], it = yield from self._trial_fit(
            engine, state, ard_kernel, theta_ard, it, rng, "one length scale per feature", budget,
            group=np.arange(d))
        lin = Linear(float(self.variance), 1.0)
        # The origin and the d unit vectors span the linear kernel's feature space (x, 1): as inducing
        # inputs they make the sparse fit exact (t_i = 0) with d + 1 columns and a well-conditioned Kmm.
        Z = state.geom.inducing
        if d + 1 <= Z.shape[0]:
            Z = np.vstack([np.zeros(d), np.eye(d)])
        fits["linear"], engines["linear"], it = yield from self._trial_fit(
            engine, state, lin, lin.theta, it, rng, "linear kernel", budget, inducing=Z)
        if candidates:
            # Learned hyperparameters can over-fit a small set (Flare: the fixed linear kernel's
            # cross-validated log score beat the learned one's on every fold), so the fits at the
            # initial values are candidates too.
            fits["rbf.fixed"], engines["rbf.fixed"], it = yield from self._trial_fit(
                engine, state, kern.with_theta(self._theta0), self._theta0, it, rng,
                "rbf kernel, hyperparameters fixed", budget, fixed=True)
            fits["linear.fixed"], engines["linear.fixed"], it = yield from self._trial_fit(
                engine, state, lin, lin.theta, it, rng, "linear kernel, hyperparameters fixed", budget,
                inducing=Z, fixed=True)
            # one scale shared by the features, at SHARED_SCALE_VARIANCES; with its own copy of the
            # generator, so that the other fits' random streams are the same with or without it
            r, local = self._shared_scales(), copy.deepcopy(rng)
            shared = None if r is None else self._shared_scale_kernel(engine.X, kern, local, r)
            for grow in (SHARED_SCALE_VARIANCES if shared is not None else ()):
                # the kernel variance multiplied by ``grow`` (a fixed fit cannot learn it)
                name = "rbf.shared.fixed" if grow == 1 else f"rbf.shared.v{grow:g}.fixed"
                theta = shared.theta.copy()
                theta[d] += np.log(grow)
                fits[name], engines[name], it = yield from self._trial_fit(
                    engine, state, shared.with_theta(theta), theta, it, local,
                    f"rbf kernel on a shared scale (variance x {grow:g}), hyperparameters fixed", budget,
                    fixed=True)
        rows = self._loo_rows(engine.n, rng)
        X, y = engine.X[rows], engine.y[rows]
        names = list(fits)
        log_dens, links = [], {}
        for name in names:
            a_loo, v_loo, links[name] = self._loo_predictive(fits[name], X, y)
            log_dens.append(link_log_densities(y, a_loo, v_loo, *links[name]))
        log_dens = np.column_stack(log_dens)
        loo = dict(zip(names, log_dens.mean(axis=0)))
        # the base rate (p = (n1 + 1) / (n + 2)) as the link (0, Phi^-1(p)) on no latent function
        p_base = (np.sum(engine.y > 0) + 1.0) / (engine.n + 2.0)
        if candidates:
            names.append("base_rate")
            fits["base_rate"], links["base_rate"] = None, (0.0, float(ndtri(p_base)))
            # its exact leave-one-out predictive: (n1 - [y_i = 1] + 1) / (n + 1)
            n1 = np.sum(engine.y > 0)
            p_loo = (n1 - (y > 0) + 1.0) / (engine.n + 1.0)
            log_dens = np.column_stack([log_dens, np.log(np.where(y > 0, p_loo, 1.0 - p_loo))])
            loo["base_rate"] = float(log_dens[:, -1].mean())
        if getattr(self, "_cv_inner", False):
            return state, it, {k: Trial(fits[k], 1.0, links[k], loo[k]) for k in names}
        if weighting == "cv":
            scores = self._cv_log_densities(engine.X, engine.y, names, rng)
            weights = stacking_weights(scores)
            self.defaults_["weighting"] = f"{CV_FOLDS}-fold cross-validation" + (
                "" if self.stacking == "cv" else f" (d + 2 = {d + 2} nats of Akaike's charge on "
                f"{engine.n} rows would be over {KFOLD_MAX_CHARGE} a row)")
            for name, v in zip(names, scores.mean(axis=0)):
                self.defaults_[f"cv_log_lik.{name}"] = float(v)
            self.defaults_["cv_log_lik.stacked"] = stacking_objective(scores, weights)
        elif weighting == "kfold":
            scores = self._kfold_log_densities(engine, engines, fits, links, names, rng)
            # q(u) is held out; the hyperparameters were learned on every row, the held-out ones too:
            # Akaike's one nat for each learned hyperparameter (none for the fixed fits and the base rate)
            charge = np.array([0.0 if fits[k] is None or k.endswith(".fixed")
                               else fits[k].geom.kernel.theta.size for k in names], float)
            weights = stacking_weights(scores - charge / engine.n)
            self.defaults_["weighting"] = f"{CV_FOLDS}-fold q(u) refits, Akaike's charge"
            for name, v in zip(names, scores.mean(axis=0)):
                self.defaults_[f"kfold_log_lik.{name}"] = float(v)
            self.defaults_["kfold_log_lik.stacked"] = stacking_objective(scores, weights)
        else:
            # The cavity predictive leaves each row out of q, not out of the hyperparameters fitted on
            # it: each hyperparameter beyond the isotropic kernel's is charged Akaike's one nat, spread
            # evenly over the rows' log densities (ARD pays d - 1 nats, the linear kernel gains one).
            # (Their effective number under the prior, tr((J + Pi)^-1 J) from the ELBO's curvature J,
            # came out close to the raw count: ARD minus RBF 0.98 on Ripley, 6.4 on Diabetis, 18.7 on
            # ringnorm.)
            # The fixed fits and the base rate learn no hyperparameter: they are charged nothing, like
            # the isotropic fit (crediting them the RBF's three instead moved Heart from .1630 to .1741
            # error, 3 rows in 270, docs/sbsvm.md section 7).
            charge = np.array([0.0 if fits[k] is None or k.endswith(".fixed")
                               else fits[k].geom.kernel.theta.size - kern.theta.size for k in names], float)
            weights = stacking_weights(log_dens - charge / len(rows))
            self.defaults_["weighting"] = "cavity leave-one-out, Akaike's charge"
            self.defaults_["loo_log_lik.stacked"] = stacking_objective(log_dens, weights)
        # fits with a negligible weight are dropped (each changes no probability by more than its weight)
        weights = np.where(weights >= STACK_MIN_WEIGHT, weights, 0.0)
        weights /= weights.sum()
        # the kernel shown (kernel_, geometry_) is the largest-weight kernel fit's; ties keep the RBF
        kernel_names = [k for k in names if fits[k] is not None]
        choice = max(kernel_names, key=lambda k: (weights[names.index(k)], -kernel_names.index(k)))
        self.defaults_["kernel"] = choice
        for name, w in zip(names, weights):
            self.defaults_[f"loo_log_lik.{name}"] = float(loo[name])
            self.defaults_[f"weight.{name}"] = float(w)
        trials = {k: Trial(fits[k], float(w), links[k], float(loo[k])) for k, w in zip(names, weights)}
        state = fits[choice]
        for name in kernel_names:
            if trials[name].weight > 0 and name != "rbf":
                self._warn_pinned(engines[name], fits[name])
        elbo = engine.elbo(state)
        self._store(state, elbo)
        yield it, self._metrics(state, elbo, rho=np.nan), self._snapshot()
        return state, it, trials

    def _kfold_log_densities(self, engine, engines, fits, links, names, rng):
        """(n, K) held-out log predictive densities of the K candidates ``names`` at the engine's rows:
        stratified ``CV_FOLDS`` folds; for each fold and kernel fit, q(u) refitted on the other folds with
        the fit's kernel, hyperparameters and inducing inputs fixed (exact coordinate ascent, SQUAREM,
        warm-started from the fit's q(u) with its data part scaled to the rows kept, to ``tol``), and the
        fold's rows predicted through the fit's link; the base rate from the other folds' labels,
        (n1 + 1) / (n + 2). No progress records: the refits take a fraction of the fit (0.04-0.18 CPU s
        measured at 175-1,000 rows), and records at one iteration would make the dashboard's Step button
        seem stuck."""
        X, y = engine.X, engine.y
        folds = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
        out = np.empty((y.size, len(names)))
        tol = self.tol if self.tol > 0 else 1e-4  # (tol=0 runs stages to max_iter; a fold refit stops)
        for train, test in folds.split(X, (y > 0).astype(int)):
            for j, name in enumerate(names):
                fit = fits[name]
                if fit is None:  # the base rate
                    p = (np.sum(y[train] > 0) + 1.0) / (train.size + 2.0)
                    out[test, j] = np.log(np.where(y[test] > 0, p, 1.0 - p))
                    continue
                cfg = replace(engines[name].config, optimize_hyper=False, accelerate=True,
                              batch_size=train.size, schedule="constant", rho0=1.0)
                eng = SVIEngine(X[train], y[train], fit.geom, cfg, rng)
                s = train.size / y.size
                eye = np.eye(fit.P.shape[0])
                st = eng.init(rng)._replace(eta1=s * fit.eta1, P=eye + s * (fit.P - eye), geom=fit.geom)
                elbo = eng.elbo(st)
                for _ in range(self.max_iter):  # each step one SQUAREM cycle; its ELBO never decreases
                    st, _ = eng.step(st, rng)
                    prev, elbo = elbo, eng.elbo(st)
                    if elbo - prev <= tol * train.size:
                        break
                phi, t, _ = features(fit.geom, X[test])
                a, c = E.marginals(phi, E.moments(st.eta1, st.P))
                out[test, j] = link_log_densities(y[test], a, c + t, *links[name])
        return out

    def _cv_log_densities(self, X, y, names, rng):
        """(n, K) log predictive densities of the K candidates ``names`` at each row of (X, y) (standardised
        rows, labels +-1), each row predicted by the candidates of the whole procedure refitted on the
        other folds (stratified ``CV_FOLDS`` folds): the refit standardises its rows, fits each candidate
        from its own start and calibrates each link on its own rows."""
        yi = (y > 0).astype(int)
        folds = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
        out = np.empty((y.size, len(names)))
        for train, test in folds.split(X, yi):
            inner = type(self)(**self.get_params())
            inner.random_state = int(rng.integers(2**31 - 1))
            inner._cv_inner = True
            # X is standardised: the refit's shared scale needs the raw spreads, and its caller's candidates
            inner._outer_sd, inner._outer_shared = self._raw_sd, self._shared_scales() is not None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # the refits' warnings are not the fit's
                for _ in inner._iterate(X[train], yi[train]):
                    pass
            for j, name in enumerate(names):
                t = inner._candidates[name]
                geom = None if t.state is None else t.state.geom
                post = None if t.state is None else E.moments(t.state.eta1, t.state.P)
                p = inner._component_p1(geom, post, t.link, X[test])
                out[test, j] = np.log(np.clip(np.where(y[test] > 0, p, 1.0 - p), 1e-300, 1.0))
        return out

    def _run(self, engine, state, it0, stage, rng, budget=None, trial=False):
        """Run one engine to the stopping rule or ``max_iter``; yields progress, returns (state, it).

        ``budget``: a stage whose length is part of the rule (the hyperparameter stage) stops after that
        many steps without a warning; the stage record says so. ``trial``: a kernel="auto" candidate,
        whose hyperparameters at a bound warn only if it is the fit kept."""
        steps = self.max_iter if budget is None else min(self.max_iter, budget)
        elbo = engine.elbo(state)
        self._store(state, elbo)
        yield it0, self._metrics(state, elbo, rho=np.nan), self._snapshot()
        tol_nats = self.tol * engine.n
        tuning = engine.config.optimize_hyper and state.geom.kind == "sparse"
        best_before, recent, thetas = -np.inf, [elbo], [self._theta(state)]
        converged, gain = False, np.nan
        # An accelerated cycle is three exact passes and its ELBO comes with them: check every cycle. Its
        # ELBO never decreases (SQUAREM's safeguard), so one cycle's gain is the test (no noise window).
        exact = getattr(engine, "accelerated", False)
        every, patience = (1, 1) if exact else (self.elbo_every, self.patience)
        for k in range(1, steps + 1):
            state, info = engine.step(state, rng)
            if k % every == 0 or k == steps:
                elbo = engine.elbo(state)
                recent.append(elbo)
                thetas.append(self._theta(state))
                if len(recent) > patience:
                    best_before = max(best_before, recent.pop(0))
                    thetas.pop(0)
                    # Stagnation: the last `patience` evaluations found no ELBO better than the best
                    # before them by more than tol * n nats (robust to the jitter of stochastic steps),
                    # and, when they are learned, no log-hyperparameter moved by more than HYPER_TOL
                    # over those evaluations (the ELBO is flat in them long before they settle).
                    gain = max(recent) - best_before
                    drift = float(np.max(np.abs(thetas[-1] - thetas[0]))) if tuning else 0.0
                    converged = self.tol > 0 and gain <= tol_nats and drift <= HYPER_TOL
            if k % self.progress_every == 0 or converged or k == steps:
                self._store(state, elbo)
                try:
                    yield it0 + k, self._metrics(state, elbo, info.rho), self._snapshot()
                except GeneratorExit:
                    # the consumer stopped the fit (a break, the dashboard's Reset): not converged; it said
                    # converged_ = True with no stage finished (a library user's review)
                    self.converged_ = False
                    raise
            if converged:
                break
        budgeted = not converged and budget is not None and k == budget < self.max_iter
        self.stages_.append({"stage": stage, "steps": k, "converged": converged, "elbo": float(elbo),
                             **({"stopped_by": f"its budget of {budget} steps"} if budgeted else {})})
        if not trial:
            self._warn_pinned(engine, state)
        if not converged and not budgeted:
            self._stages_converged = False
            if self.tol > 0:
                # (with fewer evaluations than the rule compares there is no gain to report: it said
                # "gained nan nats")
                said = (f"the ELBO still gained {gain:.3g} nats over its last {patience} evaluations"
                        if np.isfinite(gain) else
                        f"{len(recent)} ELBO evaluation{'s' if len(recent) > 1 else ''} in {k} steps "
                        f"(one every {every}), too few for the rule's {patience + 1}")
                notes = getattr(self, "_budget_notes", None)
                if notes is None:  # (a caller of _run outside _iterate)
                    warn_user(f"SBSVM ({stage}) used its max_iter={self.max_iter} steps before the stopping "
                              f"rule was met: {said}. Raise max_iter (or tol) to let it converge.",
                              ConvergenceWarning)
                else:
                    notes.append(f"{stage}: {said}")
        return state, it0 + k

    def _warn_pinned(self, engine, state):
        pinned = engine.pinned(state)
        if pinned and engine.config.optimize_hyper:
            warn_user(f"SBSVM: {', '.join(pinned)} stopped at the bound of its range (1e-3..1e4 times "
                      "its starting value; the linear variant's prior variances 1e-6..1e6 relative to "
                      "the features' variance): the data's scale or the kernel does not suit the "
                      "model; "
                      + ("choose another kernel (kernel='auto' tries several)." if self.standardize else
                         "standardise the features (standardize=True) or choose another kernel."),
                      ConvergenceWarning)

    @staticmethod
    def _theta(state):
        return state.geom.kernel.theta if state.geom.kind == "sparse" else np.zeros(1)

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
            # back to original units: w . (x - mean) / scale + b
            self.coef_ = self.mean_[:-1] / self.x_scale_
            self.intercept_ = float(self.mean_[-1] - self.coef_ @ self.x_mean_)
            self.prior_variance_ = geom.prior_std**2
        else:
            self.kernel_ = geom.kernel
            self.inducing_points_ = geom.inducing * self.x_scale_ + self.x_mean_
            self.mean_ = geom.L @ post.m
            self.cov_ = geom.L @ S @ geom.L.T

    def _metrics(self, state, elbo, rho):
        # "stage": which fit the record belongs to (``stages_[stage]``; kernel="auto" fits its candidates
        # one after another, and the ELBO jumps from one to the next), the last one the stacked result
        # and "stages_planned" how many fits the run makes in all (the stacked result's record is the last)
        out = {"elbo": float(elbo), "rho": float(rho), "stage": float(len(getattr(self, "stages_", ()))),
               "stages_planned": float(getattr(self, "_stages_planned", 1))}
        if state.geom.kind == "sparse":
            out.update(describe_kernel(state.geom.kernel))
        else:
            out["prior_variance"] = float(state.geom.prior_std[0] ** 2)
            out["bias_prior_variance"] = float(state.geom.prior_std[-1] ** 2)
        return out

    def _snapshot(self):
        return {"mean": self.mean_[:5].copy()}

    # -- prediction -----------------------------------------------------------------------------------------
    def _components(self):
        """(weight, geometry, q(u), link) of each fit the prediction averages: the stack of kernel="auto"
        (``components_``), or the one fit (also the state reached when ``fit_iter`` is stopped early)."""
        comps = getattr(self, "components_", None)
        if comps:
            return [(w, g, post, link) for _, w, g, post, link in comps]
        return [(1.0, self.geometry_, self.posterior_, getattr(self, "link_", (1.0, 0.0)))]

    def _latent(self, X, geometry=None, posterior=None, chunk=20000):
        geometry = self.geometry_ if geometry is None else geometry
        posterior = self.posterior_ if posterior is None else posterior
        means, variances = [], []
        for start in range(0, X.shape[0], chunk):
            phi, t, _ = features(geometry, self._scaled(X[start:start + chunk]))
            a, c = E.marginals(phi, posterior)
            means.append(a)
            variances.append(c + t)
        if not means:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(means), np.concatenate(variances)

    def predict_latent(self, X):
        """Mean and variance of the latent predictive q(f* | x*) (corrected eq. 13): for uncertainty maps.
        For a stack (``components_``), the mean and variance of the mixture sum_k w_k N(m_k*, v_k*) (the base
        rate's component is the point Phi^-1(p), on the probit scale)."""
        X = check_predict_data(self, X)
        comps = self._components()
        if len(comps) == 1 and comps[0][1] is not None:  # (a stack of the base rate alone goes below)
            return self._latent(X)
        mean, second = 0.0, 0.0
        for w, geom, post, link in comps:
            # (the base rate: the constant probit-scale value Phi^-1(p), no variance)
            m, v = ((np.full(X.shape[0], float(link[1])), np.zeros(X.shape[0])) if geom is None
                    else self._latent(X, geom, post))
            mean, second = mean + w * m, second + w * (v + m * m)
        return mean, np.maximum(second - mean * mean, 0.0)

    def decision_function(self, X):
        """Positive means ``classes_[1]``, consistent with ``predict``: the latent predictive mean m*, or
        with ``predictive="calibrated"`` (kernel variants) the link argument (A m* + B) / sqrt(1 + A^2 v*);
        for a stack, Phi^-1 of its p(y = 1 | x) (which is that argument for a single fit)."""
        X = check_predict_data(self, X)
        comps = self._components()
        if len(comps) > 1 or comps[0][1] is None:
            return ndtri(np.clip(self._p1(X), 1e-300, 1.0 - 1e-16))
        mean, var = self._latent(X)
        if self.predictive != "calibrated" or self.geometry_.kind != "sparse":
            return mean  # (the linear variant has no link: its probit is the plain one)
        A, B = getattr(self, "link_", (1.0, 0.0))
        return (A * mean + B) / np.sqrt(1.0 + A * A * var)

    def _component_p1(self, geometry, posterior, link, X):
        """p(y = classes_[1] | x) under one fit (``predictive``); the base rate (no geometry) is
        Phi(B) of its link (0, B)."""
        if geometry is None:
            return np.full(X.shape[0], float(ndtr(link[1])))
        mean, var = self._latent(X, geometry, posterior)
        if self.predictive == "hinge":
            return hinge_quadrature(mean, var)
        if self.predictive == "calibrated":
            return calibrated_probit(mean, var, *link)
        return probit(mean, var)

    def _p1(self, X):
        """p(y = classes_[1] | x): each fit's predictive (``predictive``), averaged with the stacking
        weights for a stack."""
        p1 = 0.0
        for w, geom, post, link in self._components():
            p1 = p1 + w * self._component_p1(geom, post, link, X)
        return p1

    def _predict_proba(self, X):
        return binary_proba(self._p1(X))
