"""``SeegerARD``: variational Bayesian model selection for kernel classifiers (Seeger 2000).

Fits the eq. 8 kernel's parameters (one ARD weight w_i per feature, amplitude C, offset v) by minimising
the variational free energy F (an upper bound on -log P(D | theta)) with the nested optimisation of
sec. 2 (``engine``), under the normalised SVC loss ("Var. SVM") or the logistic loss ("Var. GP").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from .._userwarn import warn_user
from ..base import BayesianClassifier, binary_proba, log_odds_scores, warn_if_flat
from ..data import check_predict_data
from ..params import (
    IntInterval,
    StrOptions,
    non_negative,
    non_negative_int,
    positive,
    positive_int,
)
from . import engine
from .free_energy import prior_covariance
from .kernel import SeegerKernel
from .losses import LOSSES, likelihood_proba, predictive_proba


def _auto_factors(n):
    """n_factors="auto": round(6400 / n) clipped to [3, 16] (see the class docstring)."""
    return int(np.clip(round(6400 / max(n, 1)), 3, 16))


def _stage_rows(n, warm_start_rows):
    """Row sets of the fit's stages (None = all rows): when there are more rows than ``warm_start_rows``
    (m), nested subsets of m, 2m, 4m, ... rows (each below n), then all rows. The subsets are prefixes of
    one fixed order, the rows sorted by (i * golden ratio) mod 1: each prefix is spread evenly over the row
    range (deterministic, no random_state) and contains the previous one."""
    if warm_start_rows is None or n <= warm_start_rows:
        return [None]
    order = np.argsort((np.arange(n) * 0.6180339887498949) % 1.0, kind="stable")
    sizes, m = [], int(warm_start_rows)
    while m < n:
        sizes.append(m)
        m *= 2
    return [np.sort(order[:m]) for m in sizes] + [None]


class SeegerARD(BayesianClassifier):
    """Variational ARD kernel classifier (Seeger 2000). Binary only.

    Parameters
    ----------
    loss : "svc" (normalised SVC loss, sec. 1) or "logistic" (GP classification).
    n_factors : M, the number of factors in q's covariance D + sum_j c_j c_j' (0 = diagonal), or "auto"
        (default): M = round(6400 / n) clipped to [3, 16] for n training rows (16 up to 400 rows, 6 at 1000,
        3 from 2133 on), i.e. the factor block holds about 6400 numbers. More factors make q closer to the
        posterior and F a tighter bound, and a looser bound biases the kernel parameters (a q that cannot
        follow the posterior's correlations favours kernels with weaker ones): over ringnorm's 5 Table 1
        draws (400 rows) M = 3 / 8 / 16 gave F = 96.6 / 92.8 / 87.5 on average and test error 1.95 / 1.91 /
        1.85 %; on Ripley's Pima split M = 8 gives 67 test errors against 72 with M = 3 (which drives 5 of
        the 7 ARD weights to ~0). Each inner evaluation costs O(n^2 (M + 1)), hence fewer factors for large n.
        M is at most n: more factors than rows add nothing (D + C C' with n factors is already any
        covariance above D), so a larger value is clipped to n (on 120 rows, M = 400 took 6.4 CPU s
        against 0.7 s at M = 120, with the same fit).
    predict_with : "mean" (GP predictive under q, latent mean k*' K^-1 mu) or "mode" (an SVM,
        scikit-learn's SVC with C = 1 on the precomputed adapted kernel: the mode of the SVC-loss posterior
        up to the log Z term).
    integrate_variance : False (default): p(t | x) is the noise model at the latent mean, P(t | y = mean)
        (the paper's mu predictor read as a probability). True: the noise model integrated over q's latent
        predictive N(mean, variance). The default is the better-calibrated of the two on held-out data: on
        ringnorm / twonorm (n = 1000, 10k test rows, seed 0) Brier .0163 / .0215 and log loss .062 / .085
        at the mean, against .0174 / .0244 and .074 / .101 integrated (halving the variance would be
        better still, doubling it worse): q's latent variance (about 12 at test points, the learned C is
        15-20) is larger than this misspecified loss's probabilities can carry, so integrating it makes
        the predictions under-confident. Errors are the same either way.
    max_iter : outer (kernel-parameter) quasi-Newton steps at most. 0 takes none: q is fitted at the
        initial kernel parameters (no relevance determination), without a warning (``converged_`` is
        False, as nothing was tested).
    tol : stop when an outer step lowers F by less than tol * max(1, |F|) and either the step before did
        too or, after a full step with its BFGS update, the quasi-Newton model predicts at most half that
        for the next one (g' H g / 2, H the BFGS inverse Hessian; halved because it under-predicted the
        next step by 1.1-1.6x). 1e-3 is 0.03 nats per step at n = 100 (a Bayes factor of 1.03)
        and ~0.3 at n = 1000; on twonorm the two-quiet-steps rule stopped after 8-9 steps instead of 17-20,
        with F within 0.4 % and test error within 0.3 points (n = 100 and 500, a few seeds each).
    inner_maxiter : conjugate-gradient iterations at most per inner optimisation of q. Each outer step
        warm-starts q from the last one, so capping the early, far-from-optimal inner runs costs nothing at
        the end: on twonorm with n = 1000, 60 instead of 200 gives the same F to 4e-4 in 2/3 of the time.
        When the final q was cut short by it, q is optimised once more at the final kernel with 10 times
        the budget; if that is cut too, the fit warns and ``converged_`` is False. A budget far below
        the default leaves the outer loop's stopping test on inexact free energies, and it can stop
        early: on Ripley's data (300 rows) inner_maxiter = 5 / 10 / 20 ended at F 69.2 / 67.4 / 64.1,
        the default at 63.96 (fully optimised: 63.84), each "converged" (``converged_`` reports the
        outer rule; a review).
    w_init, C_init, v_init : initial kernel parameters (w_init for every feature). On standardised inputs
        E(x_i - x'_i)^2 = 2, so w_init = 1 puts the eq. 8 exponent at -1 on average over pairs of rows
        whatever d is; C_init = 1 is the scale of the SVC loss's margin (|y| = 1); v_init = 0.1 a small
        offset. With standardize=True (default) the rules hold for any feature scales (features scaled by
        1e6 give the same fit: tested).
    ard_scale : s of a hierarchical prior on the ARD weights, log w_i ~ N(m, s^2) with m integrated out under
        a flat prior (``engine.theta_penalty``): the outer loop minimises F + sum_i (log w_i - mean)^2 /
        (2 s^2), so only the weights' spread is penalised, not the overall length scale. It guards the ARD
        learning against buying worse held-out error: on Ripley's Pima split without it (None) the weights
        of 5 of 7 inputs go to ~0 and the test errors rise to 72 (66 with s = 1); on ringnorm's 5 Table 1
        draws (16 factors) 1.85 % without, 1.67 % with s = 1 (1.79 % with s = 2). A 10x ratio between two
        weights costs 2.3 prior standard deviations at s = 1: irrelevant inputs still end well below.
    jitter : a nugget: the prior covariance is K + jitter * C I, i.e. the latent values carry a little
        white noise, a fixed fraction of the varying part's amplitude C, besides the eq. 8 process (Neal 1997
        does the same for GP classification). It is tied to C, not to the prior variance C (1 + v): the
        offset v would otherwise set the noise level too (on ringnorm v grew to ~22 and the nugget to a
        quarter of C, with worse test error: mean 2.14% / mode 2.43% over 10 splits, against 2.09% / 1.97%).
        Besides stabilising the Cholesky, it matters for the variational family: with a nearly singular
        K the diagonal-plus-M-factors q cannot follow the prior's tiny-variance directions, the bound's
        gap then grows with the kernel's smoothness, and minimising F picks far too short length scales
        (on pima, 200 training rows, three random splits: 1e-6 gives 30-34% test error, 0.01 gives
        22-24%). The nugget's D part is matched exactly by q.
    warm_start_rows : m. With more than m training rows the fit runs in stages on nested, evenly spread
        subsets of m, 2m, 4m, ... rows (``_stage_rows``) and then on all rows, each stage starting from the
        last one's kernel parameters, its BFGS curvature (scaled by the ratio of rows) and its q extended
        to the new rows by the GP conditional (``engine.extend_q``). The final stage minimises the same F
        on all rows; only its starting point changes. An outer step on n rows costs O(n^3) (a Cholesky,
        K^-1, the theta gradient) plus up to 60 inner CG iterations of O(n^2 M) each, so the work moves to
        the cheap small stages: twonorm, n = 1000, one thread: 4.7 s CPU with m = 500 against 8.6 s without
        stages, the same test error to 0.03 points; n = 3000 ran > 150 s without stages. None: no stages.
    standardize : scale every input column to zero mean, unit variance first (as the paper did); the
        ARD weights then refer to standardised columns.

    The method is deterministic (no random_state): q starts from the prior's leading eigenvectors.

    Input scale (:func:`bsvm.data.check_input_scale`): "standardizes" (``standardize=True``): every column
    is scaled to unit variance first, so scales never mislead it; with ``standardize=False``, "ard" (as
    "unit": columns outside 1e-3..1e3, or 1e3 apart, are flagged for the relevance weights' common start
    and prior).

    Attributes
    ----------
    relevance_ : a pandas Series of the ARD weights w, one per feature (named by the fitted DataFrame's
        columns, else x0, x1, ...): large means relevant; irrelevant inputs end near 0.
    kernel_ : the fitted kernel (weights ``w``, amplitude ``C``, offset ``v``).  theta_ : its log
        parameters.  free_energy_ : F at the end (eq. 17, without the hyperprior); objective_ : F with it.
    mu_, D_, factors_ : q(u) = N(mu_, diag(D_) + factors_ factors_^T) over the training rows' latent values.
    alpha_ : K^-1 mu_ (the predictive mean's weights).  converged_ : whether the outer test was met.
    n_iter_, history_, fit_time_ : outer steps, progress records, fit seconds.  x_mean_, x_scale_ : the
    standardisation (0 and 1 without it).
    """

    _binary_only = True

    # parameter table (bsvm/params.py), checked before the data
    _parameter_constraints = {
        "loss": [StrOptions(set(LOSSES))],
        "n_factors": [StrOptions({"auto"}), non_negative_int()],
        "predict_with": [StrOptions({"mean", "mode"})],
        "max_iter": [non_negative_int()],
        "tol": [non_negative()],
        "inner_maxiter": [positive_int()],
        "w_init": [positive()],
        "C_init": [positive()],
        "v_init": [positive()],
        "jitter": [positive()],
        "standardize": ["boolean"],
        "warm_start_rows": [None, IntInterval(10, None, closed="left")],
        "integrate_variance": ["boolean"],
        "ard_scale": [None, positive()],
    }

    def _input_scale_rule(self):
        return "standardizes" if self.standardize else "ard"

    def __init__(self, loss="svc", n_factors="auto", predict_with="mean", max_iter=50, tol=1e-3,
                 inner_maxiter=60, w_init=1.0, C_init=1.0, v_init=0.1, jitter=0.01, standardize=True,
                 warm_start_rows=500, integrate_variance=False, ard_scale=1.0):
        self.loss = loss
        self.n_factors = n_factors
        self.predict_with = predict_with
        self.max_iter = max_iter
        self.tol = tol
        self.inner_maxiter = inner_maxiter
        self.w_init = w_init
        self.C_init = C_init
        self.v_init = v_init
        self.jitter = jitter
        self.standardize = standardize
        self.warm_start_rows = warm_start_rows
        self.integrate_variance = integrate_variance
        self.ard_scale = ard_scale

    # -- validation --------------------------------------------------------------------------------------
    def _check_params(self):
        if self.loss not in LOSSES:
            raise ValueError(f"loss={self.loss!r} is not supported: use one of {LOSSES}.")
        if self.predict_with not in ("mean", "mode"):
            raise ValueError(f"predict_with={self.predict_with!r}: use 'mean' or 'mode'.")
        if not (self.n_factors == "auto" if isinstance(self.n_factors, str) else
                (isinstance(self.n_factors, (int, np.integer)) and not isinstance(self.n_factors, bool)
                 and self.n_factors >= 0)):
            raise ValueError(f"n_factors={self.n_factors!r}: use 'auto' or a non-negative integer (e.g. 3).")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 0):
            raise ValueError(f"max_iter={self.max_iter!r}: use a non-negative integer.")
        if not (isinstance(self.inner_maxiter, (int, np.integer)) and self.inner_maxiter >= 1):
            raise ValueError(f"inner_maxiter={self.inner_maxiter!r}: use a positive integer.")
        if not (np.isfinite(self.jitter) and self.jitter > 0):
            raise ValueError(f"jitter={self.jitter!r}: use a small positive number such as 0.01.")
        for name in ("w_init", "C_init", "v_init"):
            val = getattr(self, name)
            if not (np.isfinite(val) and val > 0):
                raise ValueError(f"{name}={val!r}: kernel parameters must be positive numbers.")
        if not (self.warm_start_rows is None or (isinstance(self.warm_start_rows, (int, np.integer))
                                                 and not isinstance(self.warm_start_rows, bool)
                                                 and self.warm_start_rows >= 10)):
            raise ValueError(f"warm_start_rows={self.warm_start_rows!r}: use an integer >= 10, or None to "
                             "fit on all rows from the start.")
        if self.ard_scale is not None and not (isinstance(self.ard_scale, (int, float, np.number))
                                               and np.isfinite(self.ard_scale) and self.ard_scale > 0):
            raise ValueError(f"ard_scale={self.ard_scale!r}: use a positive number (the prior standard "
                             "deviation of the log ARD weights around their mean), or None for no prior.")
        if not isinstance(self.integrate_variance, (bool, np.bool_)):
            raise ValueError(f"integrate_variance={self.integrate_variance!r}: use True or False.")
        if not (np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol={self.tol!r}: use a non-negative number.")

    def _feature_labels(self, d):
        names = getattr(self, "feature_names_in_", None)
        return [str(c) for c in names] if names is not None else [f"x{j}" for j in range(d)]

    # -- fitting -----------------------------------------------------------------------------------------
    def _check_param_rules(self):
        self._check_params()

    def _iterate(self, X, y_index):
        t = self._encode_binary(y_index)
        n, d = X.shape
        if self.standardize:
            self.x_mean_ = X.mean(axis=0)
            scale = X.std(axis=0)
            self.x_scale_ = np.where(scale > 0, scale, 1.0)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(d), np.ones(d)
        Xs = (X - self.x_mean_) / self.x_scale_
        labels = self._feature_labels(d)
        kernel = SeegerKernel(w=np.full(d, float(self.w_init)), C=float(self.C_init), v=float(self.v_init))
        cfg = engine.Config(loss=self.loss, inner_maxiter=int(self.inner_maxiter), jitter=float(self.jitter),
                            ard_scale=None if self.ard_scale is None else float(self.ard_scale))
        self._cfg = cfg
        self.converged_ = False
        rows = _stage_rows(n, self.warm_start_rows)
        k, state = 0, None
        for stage, idx in enumerate(rows):
            Xi, ti = (Xs, t) if idx is None else (Xs[idx], t[idx])
            self.X_fit_, self.y_fit_ = Xi, ti
            M = _auto_factors(Xi.shape[0]) if self.n_factors == "auto" else min(int(self.n_factors),
                                                                                  Xi.shape[0])
            q0 = H_sub = None
            if state is not None:      # continue from the subset: its theta, its q extended to all rows
                kernel = kernel.with_theta(state.theta)
                prev = rows[stage - 1] if idx is None else np.searchsorted(idx, rows[stage - 1])
                q0 = engine.extend_q(kernel, Xi, prev, state.q, state.prior, cfg.jitter, M)
                H_sub = state.H * (state.q.mu.size / Xi.shape[0])
            state, info = engine.init(kernel, Xi, ti, cfg, M, q0)
            cut = info.last_inner >= cfg.inner_maxiter  # the current q's inner run hit its budget
            if H_sub is not None:
                # F's curvature in theta grows about in proportion to the rows: the subset's BFGS
                # inverse-Hessian, scaled by n_sub / n, is a far better first step than steepest descent
                state = state._replace(H=H_sub)
            self._store(state, kernel, labels)
            yield k, self._metrics(info, labels, Xi.shape[0]), self._snapshot()
            quiet, converged = 0, False
            for _ in range(int(self.max_iter)):
                k += 1
                F_old = state.F
                state, info = engine.step(state, kernel, Xi, ti, cfg)
                if info.accepted:
                    cut = info.last_inner >= cfg.inner_maxiter
                self._store(state, kernel, labels)
                yield k, self._metrics(info, labels, Xi.shape[0]), self._snapshot()
                threshold = self.tol * max(1.0, abs(state.F))
                small = F_old - state.F <= threshold
                quiet = quiet + 1 if small else 0
                # the quasi-Newton model's predicted decrease of the next step, g' H g / 2 (the Newton
                # decrement): when it is small too, a second quiet step would only confirm it, at the
                # price of a Cholesky, K^-1 and an n^3 gradient (n = 3,000, with the gradient's reuse of
                # K: twonorm 12.2-15.4 -> 8.9-10.3 CPU s, ringnorm 24-30 -> 16-17). Trusted only after a
                # full step whose BFGS update was made, and halved: the next step's decrease was 1.1-1.6x
                # the prediction
                # (quartiles over 119 late steps; 90 % below 1.9x: the review of 29 November 2026)
                predicted = 0.5 * float(state.grad @ state.H @ state.grad)
                trusted = info.accepted and info.updated and info.step_size == 1.0
                if quiet >= 2 or (small and trusted and 0.0 <= predicted <= 0.5 * threshold):
                    converged = True
                    break
            if not converged and self.max_iter > 0 and stage == len(rows) - 1:
                warn_user(
                    f"SeegerARD: the outer budget max_iter={self.max_iter} ran out on {Xi.shape[0]} rows "
                    f"before the free energy settled (two steps in a row lowering it by less than "
                    f"tol={self.tol} x |F|, or one with the quasi-Newton model predicting less than half "
                    f"that for the next; last F = {state.F:.4g}); raise max_iter or tol.",
                    ConvergenceWarning)
            if converged and stage == len(rows) - 1 and cut:
                # the outer test passed on a q the inner loop had cut short: finish it at the final
                # kernel; if even that is cut (inner_maxiter=1 on Ripley: F 77.7 against 63.8, reported
                # "converged", a review), the fit has not converged, and says so
                # (a record of the same outer iteration, its q finished: a new iteration number went past
                # max_iter, and the progress bar's total, a review)
                state, info, cut = engine.finish_q(state, kernel, Xi, ti, cfg)
                self._store(state, kernel, labels)
                yield k, self._metrics(info, labels, Xi.shape[0]), self._snapshot()
            if converged and stage == len(rows) - 1 and cut:
                converged = False
                warn_user(
                    f"SeegerARD: the inner budget inner_maxiter={self.inner_maxiter} (and "
                    f"{engine.FINISH_FACTOR} times it for a last run at the final kernel) ran out on "
                    f"{Xi.shape[0]} rows, so q(f) was not optimised for the final kernel and the "
                    f"free energy (last F = {state.F:.4g}) may be well above its minimum; raise "
                    "inner_maxiter.", ConvergenceWarning)
        self.converged_ = bool(converged)
        warn_if_flat(self, X, "the labels do not depend on these features, or one class is too rare for "
                     "the model to tell its rows apart (all relevances shrank to "
                     f"{float(np.max(self.relevance_)):.2g} or less)"
                     if float(np.max(self.relevance_)) < 1e-2 else
                     "the labels do not depend on these features, or the classes overlap everywhere")

    def _store(self, state, kernel, labels):
        k = kernel.with_theta(state.theta)
        self.kernel_ = k
        self.theta_ = state.theta.copy()
        self.objective_ = float(state.F)
        self.free_energy_ = float(state.F - engine.theta_penalty(state.theta, self._cfg)[0])
        self.mu_ = state.q.mu
        self.D_ = np.exp(state.q.log_d)
        self.factors_ = state.q.Cf
        self.Kinv_ = state.prior.Kinv
        self.alpha_ = self.Kinv_ @ self.mu_
        self.relevance_ = pd.Series(k.w.copy(), index=labels, name="w")
        # the settings predictions read, as fitted: a later set_params (or a refit that failed on a bad
        # value, which keeps this fit) must not read this latent function through another loss or predictor
        self.loss_, self.predict_with_ = self.loss, self.predict_with
        self.integrate_variance_, self.jitter_ = bool(self.integrate_variance), float(self.jitter)
        if self.predict_with_ == "mode":
            self.svc_ = self._mode_svc(state.prior.K)
        else:
            self.__dict__.pop("svc_", None)

    def _metrics(self, info, labels, rows):
        k = self.kernel_
        out = {"objective": float(info.F), "free_energy": self.free_energy_, "C": float(k.C), "v": float(k.v),
               "rows": int(rows),
               "inner_iterations": int(info.inner_iterations), "step_size": float(info.step_size),
               "grad_norm": float(info.grad_norm)}
        out.update({f"w[{name}]": float(w) for name, w in zip(labels, k.w)})
        return out

    def _snapshot(self):
        return {"w": self.kernel_.w.copy(), "theta": self.theta_.copy()}

    # -- prediction --------------------------------------------------------------------------------------
    def _mode_svc(self, K):
        """The paper's y_hat predictor: scikit-learn's SVC (C = 1) on the precomputed adapted prior
        covariance K (nugget included)."""
        return SVC(kernel="precomputed", C=1.0).fit(K, self.y_fit_)

    def mode_decision_function(self, X):
        """Decision values of the SVM trained with the adapted kernel (the mode prediction, y_hat), whatever
        ``predict_with`` is: positive means ``classes_[1]``. With ``predict_with="mode"`` it is the fitted
        ``svc_``; otherwise the SVM is trained on the spot (nothing is stored)."""
        X = check_predict_data(self, X)
        svc = self.svc_ if self.predict_with_ == "mode" else self._mode_svc(
            prior_covariance(self.kernel_, self.X_fit_, self.jitter_))
        return svc.decision_function(self.kernel_((X - self.x_mean_) / self.x_scale_, self.X_fit_))

    def _latent(self, X):
        Xs = (X - self.x_mean_) / self.x_scale_
        Ks = self.kernel_(self.X_fit_, Xs)                    # n x m
        V = self.Kinv_ @ Ks
        mean = Ks.T @ self.alpha_
        # v* = k** - k*' K^-1 k* + k*' K^-1 Sigma K^-1 k*,  Sigma = D + Cf Cf'
        # k** includes the nugget: a new case's latent value carries its own white noise, as training ones do
        var = (self.kernel_.diag(Xs) + self.kernel_.nugget(self.jitter_) - np.einsum("ij,ij->j", Ks, V)
               + self.D_ @ (V * V)
               + np.sum((self.factors_.T @ V) ** 2, axis=0))
        if self.predict_with_ == "mode":
            mean = self.svc_.decision_function(self.kernel_(Xs, self.X_fit_))
        return mean, np.maximum(var, 1e-12)

    def predict_latent(self, X):
        """Latent predictive mean and variance at X under q (mean from the SVM when predict_with="mode")."""
        X = check_predict_data(self, X)
        return self._latent(X)

    def decision_function(self, X):
        """Scores consistent with ``predict_proba`` and ``predict``: the log-odds log(p1 / p0) of the
        predictive probability (positive means ``classes_[1]``). The latent mean (``predict_latent``) ranks
        the rows alike only when the variance is not integrated (``integrate_variance=False``)."""
        return log_odds_scores(self.predict_proba(X))

    def _predict_proba(self, X):
        mean, var = self._latent(X)
        if self.integrate_variance_:
            return binary_proba(predictive_proba(self.loss_, mean, var))
        return binary_proba(likelihood_proba(self.loss_, mean))
