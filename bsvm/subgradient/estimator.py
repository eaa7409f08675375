"""scikit-learn estimators: ``SubgradientHMC`` (subgradient HMC / SSGLD / SSGNHT) and ``GibbsSVM``.

Both sample the same posterior (standard normal prior, pseudo-likelihood exp(-c max(0, l - y f(x)))) and
expose the same layout: ``samples_`` has shape (n_chains, n_draws, n_params) and, with ``features=None``,
a binary model's parameters are the raw features' weights followed by the bias. So their draws can be
overlaid directly.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..base import BayesianClassifier
from ..diagnostics import ess_bulk
from ..params import (
    RANDOM_STATE,
    Interval,
    Real,
    StrOptions,
    non_negative,
    non_negative_int,
    positive,
    positive_int,
)
from . import samplers as S
from .features import fit_feature_map, transform
from .gibbs import gibbs_init, gibbs_step
from .laplace import find_mode, laplace_pilot, per_datum_noise
from .potential import (
    HingeModel,
    control_variate,
    normalised_likelihood,
    potential_and_grad,
    potential_and_grad_cv,
    scores,
)

SAMPLERS = ("hmc", "sgld", "sgnht")
PRECONDITIONERS = (None, "laplace", "adagrad")


def _check_int(name, value, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_pos(name, value, allow_zero=False):
    ok = isinstance(value, numbers.Real) and np.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, "
                         f"got {value!r}")
    return float(value)


class _HingeSampler(BayesianClassifier):
    """Shared data handling, draw storage and posterior predictive of the two samplers."""

    def _input_scale_rule(self):
        # the N(0, I) prior is on the weights of the raw features (features=None) or of a feature map
        # whose RBF width follows the data (gamma=None, scikit-learn's "scale")
        return "adaptive" if self.features is not None and self.gamma is None else "unit"

    def _validate_common(self):
        self._c = _check_pos("c", self.c, allow_zero=True)
        if not (isinstance(self.l, numbers.Real) and np.isfinite(self.l)):
            raise ValueError(f"l (the margin) must be a finite number, got {self.l!r}")
        self._n_samples = _check_int("n_samples", self.n_samples, 1)
        self._n_burnin = _check_int("n_burnin", self.n_burnin, 0)
        self._thin = _check_int("thin", self.thin, 1)
        self._n_chains = _check_int("n_chains", self.n_chains, 1)
        self._n_trace = _check_int("n_trace", self.n_trace, 0)
        if self.record_every is not None:
            _check_int("record_every", self.record_every, 1)

    def _setup(self, X, y_index):
        self.feature_map_ = fit_feature_map(self.features, X, self.n_components, self.gamma,
                                            self.random_state)
        Phi = transform(self.feature_map_, X)
        self.model_ = HingeModel(self._c, float(self.l), len(self.classes_), Phi.shape[1])
        y = self._encode_binary(y_index) if len(self.classes_) == 2 else y_index
        total = self._n_burnin + self._n_samples * self._thin
        self._record_every = self.record_every or max(1, total // 100)
        P = self.model_.n_params
        # draws are written into one preallocated buffer; ``samples_`` is always a view of it
        self._buffer = np.empty((self._n_chains, self._n_samples, P))
        self._potential_buf = np.empty((self._n_chains, self._n_samples))
        self.samples_ = self._buffer[:, :0]
        self.potential_ = self._potential_buf[:, :0]
        self.trace_index_ = np.linspace(0, P - 1, min(self._n_trace, P)).round().astype(int)
        return Phi, y, total

    def _record(self, t, theta, U, n_kept, metrics):
        self.theta_ = theta.copy()
        self.samples_ = self._buffer[:, :n_kept]
        self.potential_ = self._potential_buf[:, :n_kept]
        metrics = {"potential": float(np.mean(U)), "burnin": float(t < self._n_burnin),
                   "n_draws": float(n_kept), **metrics}
        snapshot = {"coords": theta[:, self.trace_index_].copy(), "trace_index": self.trace_index_,
                    "potential": np.array(U, dtype=float)}
        return metrics, snapshot

    def _draws(self):
        D = self.samples_.reshape(-1, self.samples_.shape[-1])
        return D if len(D) else self.theta_

    def predict_proba(self, X):
        """Posterior predictive, averaged over all kept draws of all chains; columns follow ``classes_``.

        Binary: the mean over draws of the normalised pseudo-likelihood
        p(classes_[1] | x, theta) = psi(+1) / (psi(+1) + psi(-1)), psi(y) = exp(-c max(0, l - y f(x))).
        Multi-class: the mean over draws of a softmax over classes y of -c max(0, l + max_{y' != y} f_y'(x)
        - f_y(x)) (the normalised multi-class pseudo-likelihood of eq. 20; equal to the binary rule for
        K = 2). Before any draw is kept (a fit stopped in burn-in), the chains' current states are used."""
        return super().predict_proba(X)

    def _predict_proba(self, X):
        Phi = transform(self.feature_map_, X)
        D = self._draws()
        chunk = max(1, int(2e6 // max(1, Phi.shape[0] * self.model_.n_blocks)))
        total = np.zeros((Phi.shape[0], len(self.classes_)))
        for s in range(0, len(D), chunk):
            total += normalised_likelihood(self.model_, scores(self.model_, D[s:s + chunk], Phi)).sum(axis=0)
        return total / len(D)

    def decision_function(self, X):
        """Scores consistent with ``predict_proba``: binary, the log-odds log(p1 / p0) of the posterior
        predictive (positive means classes_[1]); multi-class, the log predictive probabilities (n, K).
        (The posterior-mean linear score would not be: the predictive averages nonlinear terms.)"""
        proba = np.clip(self.predict_proba(X), 1e-300, None)
        return np.log(proba[:, 1] / proba[:, 0]) if proba.shape[1] == 2 else np.log(proba)


class SubgradientHMC(_HingeSampler):
    """Bayesian SVM by stochastic subgradient MCMC (Hu, Zhu & Zhang 2016, sec. 3).

    Posterior (sec. 3.3): N(0, I) prior on theta = [w, b] (per class for K > 2) times
    prod_d exp(-c max(0, l - y_d f(x_d))) (binary) or eq. 20's multi-class hinge.

    Parameters
    ----------
    sampler : "hmc" (full-batch subgradient HMC, leapfrog + Metropolis-Hastings, eq. 9), "sgld" (SSGLD,
        eq. 13) or "sgnht" (SSGNHT, eq. 14).
    c, l : cost and margin of the pseudo-likelihood (c >= 0; c -> 0 leaves the prior).
    n_samples : draws kept per chain (after thinning). n_burnin : discarded iterations (adaptation happens
        here). thin : keep every thin-th iteration. n_chains : independent chains from dispersed starts.
    batch_size : minibatch size for sgld/sgnht (None: min(n, 1000)); hmc always uses the full data.
    step_size : h (hmc: initial value, None = adapted by dual averaging in burn-in towards
        ``target_accept``; sgld/sgnht: h0 of the schedule h_t = h0 (1 + t / step_decay_b)^-step_decay,
        None = chosen from the estimated minibatch noise with the laplace preconditioner, see
        ``_default_sg_step``; 0.3 with adagrad; 0.01 with the identity).
    n_leapfrog : leapfrog steps per HMC trajectory. target_accept : dual-averaging target.
    step_decay, step_decay_b : gamma and b of the polynomial decay (gamma = 0: constant step).
    diffusion : A of SSGNHT (the thermostat starts at xi_0 = A).
    preconditioner : "laplace" (default: a dense metric started from the mode and the posterior-averaged
        curvature, see ``laplace.py``, then re-estimated twice in burn-in from the chains' covariance; the
        control-variate centre moves to the chains' mean; constant during sampling),
        "adagrad" (diagonal RMS of stochastic subgradients, as in pSGLD, adapted during
        burn-in then frozen so the chain is a valid fixed-metric sampler; for sgld/sgnht only, hmc then
        uses the identity) or None (identity, the paper's literal update).
    control_variates : for minibatches, estimate the data term as its full value at the mode plus the
        minibatch sum of differences from the mode (Baker et al. 2019). Still unbiased, and for the hinge
        only points whose hinge switched activity contribute, so the noise is far smaller. False gives the
        paper's plain estimate (eq. 7).
    features : None (raw inputs), "nystroem" or "rff"; n_components, gamma : of the RBF feature map.
    record_every : iterations between progress records (None: about 100 records). n_trace : number of
        coordinates whose current values are put in each record's snapshot.
    random_state : seed; the same seed gives the same draws.

    Fitted attributes: samples_ (n_chains, n_draws, n_params), potential_ (n_chains, n_draws) (for
    sgld/sgnht the minibatch estimate), xi_ (sgnht), accept_prob_ (hmc), acceptance_rate_ (hmc, per
    chain, sampling phase), step_size_, theta_ (current states), mode_ (pilot mode, laplace only),
    model_ (HingeModel), feature_map_, trace_index_.

    Input scale (:func:`bsvm.data.check_input_scale`): "unit" with ``features=None``. The N(0, I) prior is
    on the raw features' weights, so the model itself depends on the units: fit warns
    (``DataScaleWarning``) when a column's standard deviation lies outside 1e-3..1e3 (the prior swamps the
    data, e.g. accuracy 0.5 on Ripley scaled by 1e-6, or vanishes) or column scales differ by more than
    1e3. It does not standardise for you: the posterior is the one of the features given, which is what
    the comparisons with exact samplers need. With a feature map and ``gamma=None``: "adaptive".
    """

    # parameter table (bsvm/params.py), checked before the data
    _parameter_constraints = {
        "sampler": [StrOptions(set(SAMPLERS))],
        "c": [non_negative()],
        "l": [Interval(Real, None, None, closed="neither")],
        "n_samples": [positive_int()],
        "n_burnin": [non_negative_int()],
        "thin": [positive_int()],
        "n_chains": [positive_int()],
        "batch_size": [None, positive_int()],
        # in whitened coordinates (laplace) a leapfrog or Langevin step beyond ~2 is unstable even on a
        # unit Gaussian; 10 leaves room for the other preconditioners and rejects the absurd (1e6)
        "step_size": [None, Interval(Real, 0, 10, closed="right")],
        "n_leapfrog": [positive_int()],
        "target_accept": [Interval(Real, 0, 1, closed="neither")],
        "step_decay": [non_negative()],
        "step_decay_b": [positive()],
        "diffusion": [positive()],
        "preconditioner": [None, StrOptions({"laplace", "adagrad"})],
        "control_variates": ["boolean"],
        "features": [None, StrOptions({"nystroem", "rff"})],
        "n_components": [positive_int()],
        "gamma": [None, positive()],
        "record_every": [None, positive_int()],
        "n_trace": [non_negative_int()],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, sampler="hmc", c=1.0, l=1.0, n_samples=500, n_burnin=500, thin=1, n_chains=4,
                 batch_size=None, step_size=None, n_leapfrog=10, target_accept=0.8, step_decay=0.0,
                 step_decay_b=1000.0, diffusion=1.0, preconditioner="laplace", control_variates=True,
                 features=None,
                 n_components=100, gamma=None, record_every=None, n_trace=3, random_state=None):
        self.sampler = sampler
        self.c = c
        self.l = l
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.thin = thin
        self.n_chains = n_chains
        self.batch_size = batch_size
        self.step_size = step_size
        self.n_leapfrog = n_leapfrog
        self.target_accept = target_accept
        self.step_decay = step_decay
        self.step_decay_b = step_decay_b
        self.diffusion = diffusion
        self.preconditioner = preconditioner
        self.control_variates = control_variates
        self.features = features
        self.n_components = n_components
        self.gamma = gamma
        self.record_every = record_every
        self.n_trace = n_trace
        self.random_state = random_state

    def _validate(self, n):
        self._validate_common()
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}")
        if self.preconditioner not in PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {self.preconditioner!r}")
        if self.step_size is not None:
            _check_pos("step_size", self.step_size)
        _check_int("n_leapfrog", self.n_leapfrog, 1)
        if not (isinstance(self.target_accept, numbers.Real) and 0 < self.target_accept < 1):
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept!r}")
        _check_pos("step_decay", self.step_decay, allow_zero=True)
        _check_pos("step_decay_b", self.step_decay_b)
        _check_pos("diffusion", self.diffusion)
        if self.batch_size is not None:
            _check_int("batch_size", self.batch_size, 1)
        return n if self.sampler == "hmc" else min(n, self.batch_size or 1000)

    @staticmethod
    def _default_sg_step(sampler, whitened_noise):
        """h0 for sgld/sgnht in whitened coordinates from V, the per-coordinate variance of the minibatch
        subgradient noise at typical posterior points. SSGLD's stationary variance on a unit Gaussian is
        inflated by about 1 + h^2 (V + 1) / 4, so h = sqrt(0.8 / (V + 1)) (capped at 0.5) allows ~20% in
        variance, ~10% in sd: smaller steps cost mixing quadratically (on the benchmark's 100,000 x 50
        problem h = 0.17 gave 12x fewer effective draws than h = 0.35).
        For SSGNHT the thermostat settles at xi ~ A + h V / 2; h = min(0.1, 2 / (V + 1)) keeps it from
        over-damping the dynamics (at h = 0.1 the Euler scheme shrinks a unit-Gaussian variance by ~5%;
        at 0.25 by ~12%)."""
        if sampler == "sgld":
            return float(min(0.5, np.sqrt(0.8 / (whitened_noise + 1.0))))
        return float(min(0.1, 2.0 / (whitened_noise + 1.0)))

    def _adaptation_windows(self):
        """Burn-in windows (start, end, keep-every) whose chain states re-estimate the metric, as in Stan's
        windowed adaptation: the pilot's Gaussian curvature is only a starting point (hinge posteriors are
        often skewed, e.g. when many points sit on the margin at the mode)."""
        B = self._n_burnin
        if B < 100:
            return []
        bounds = [(int(0.15 * B), int(0.4 * B)), (int(0.4 * B), int(0.9 * B))]
        return [(a, b, max(1, (b - a) // 500)) for a, b in bounds]

    @staticmethod
    def _adapted_factor(draws, L_old):
        """New factor L = chol(Sigma) from window draws (W, C, p), returns (L, mean of the draws).

        Sigma = w Sigma_hat + (1 - w) Sigma_old with w = N_eff / (N_eff + p + 5), N_eff the smallest bulk
        ESS of the window: a sample covariance from poorly mixed chains underestimates the slow directions
        and would feed on itself, so it only takes over once the window holds many effective draws
        relative to the dimension. Keeps the old factor if the result is not positive definite."""
        W, C, p = draws.shape
        flat = draws.reshape(-1, p)
        n_eff = float(np.nanmin(ess_bulk(np.swapaxes(draws, 0, 1)))) if W >= 8 else 0.0
        w = max(n_eff, 0.0) / (max(n_eff, 0.0) + p + 5.0)
        Sigma = w * np.cov(flat.T).reshape(p, p) + (1.0 - w) * (L_old @ L_old.T)
        try:
            return np.linalg.cholesky(Sigma), flat.mean(axis=0)
        except np.linalg.LinAlgError:
            return L_old, flat.mean(axis=0)

    def _iterate(self, X, y_index):
        m = self._validate(X.shape[0])
        rng = np.random.default_rng(self.random_state)
        Phi, y, total = self._setup(X, y_index)
        model, C, n, P = self.model_, self._n_chains, Phi.shape[0], self.model_.n_params
        sampler = self.sampler

        L, mode = None, None
        if self.preconditioner == "laplace":
            pilot = laplace_pilot(model, Phi, y, rng=rng)
            L, mode = pilot.factor, pilot.mode
            theta0 = mode + 2.0 * S.apply_factor(L, rng.standard_normal((C, P)))
        else:
            theta0 = rng.standard_normal((C, P))  # the prior: dispersed relative to the posterior
        use_cv = bool(self.control_variates) and m < n
        if use_cv and mode is None:
            mode = find_mode(model, Phi, y)
        if mode is not None:
            self.mode_ = mode
        adagrad = self.preconditioner == "adagrad"
        if adagrad:
            sq_avg, L = None, np.ones(P)

        if m >= n:
            def potential_fn(theta):
                return potential_and_grad(model, theta, Phi, y)
        elif use_cv:
            scale, cv_box = n / m, [control_variate(model, mode, Phi, y)]

            def potential_fn(theta):
                idx = rng.integers(n, size=(C, m))
                return potential_and_grad_cv(model, cv_box[0], theta, Phi[idx], y[idx], idx, scale)
        else:
            scale = n / m

            def potential_fn(theta):
                idx = rng.integers(n, size=(C, m))
                return potential_and_grad(model, theta, Phi[idx], y[idx], scale)

        def noise_level(L, probe, reference):
            """Minibatch noise variance per whitened coordinate at typical posterior points ``probe``."""
            ref = reference if use_cv else None
            return per_datum_noise(model, Phi, y, L, probe, ref, rng=rng) * n * n / m

        V = None
        if sampler != "hmc" and self.preconditioner == "laplace":
            V = noise_level(L, mode + S.apply_factor(L, rng.standard_normal((4, P))), mode)
        windows = self._adaptation_windows() if self.preconditioner == "laplace" else []
        window_draws = []

        if sampler == "hmc":
            h0 = self.step_size or (0.5 if L is not None and not adagrad else 0.05)
            step = np.full(C, float(h0))
            da = S.dual_averaging_init(step) if self.step_size is None else None
            state = S.hmc_init(theta0, potential_fn)
            self._accept_buf = np.empty((C, self._n_samples))
        else:
            fallback = 0.3 if adagrad else 0.01
            h0 = self.step_size or (self._default_sg_step(sampler, V) if V is not None else fallback)
            if sampler == "sgld":
                state = S.sgld_init(theta0)
            else:
                state = S.sgnht_init(rng, theta0, self.diffusion)
                self._xi_buf = np.empty((C, self._n_samples))
        self.step_size_ = np.full(C, float(h0))

        kept, acc_window = 0, []
        U = np.full(C, np.nan)
        for t in range(total):
            if sampler == "hmc":
                state, info = S.hmc_step(rng, state, potential_fn, step, self.n_leapfrog, L)
                U = state.U
                acc_window.append(info.accept_prob)
                if da is not None and t < self._n_burnin:
                    da = S.dual_averaging_update(da, info.accept_prob, self.target_accept)
                    step = np.exp(da.log_step)
                    if t == self._n_burnin - 1:
                        step = np.exp(da.log_step_bar)
                self.step_size_ = step
            else:
                h = S.polynomial_step(h0, t, self.step_decay_b, self.step_decay)
                if adagrad and t < self._n_burnin:
                    _, g = potential_fn(state.theta)
                    g2 = (g * g).mean(axis=0)
                    sq_avg = g2 if sq_avg is None else 0.99 * sq_avg + 0.01 * g2
                    L = 1.0 / np.sqrt(1e-8 + np.sqrt(sq_avg))
                if sampler == "sgld":
                    state, info = S.sgld_step(rng, state, potential_fn, h, L)
                else:
                    state, info = S.sgnht_step(rng, state, potential_fn, h, self.diffusion, L)
                U = info.U
                self.step_size_ = np.full(C, h)
            for start, end, every in windows:
                if start <= t < end and (t - start) % every == 0:
                    window_draws.append(state.theta.copy())
                if t == end - 1 and window_draws:
                    L, centre = self._adapted_factor(np.stack(window_draws), L)
                    window_draws = []
                    if use_cv:
                        cv_box[0] = control_variate(model, centre, Phi, y)
                    if sampler == "hmc":
                        if da is not None:
                            da = S.dual_averaging_init(step)
                        state = S.hmc_init(state.theta, potential_fn)
                    else:
                        V = noise_level(L, state.theta, centre)
                        if self.step_size is None:
                            h0 = self._default_sg_step(sampler, V)
                        if sampler == "sgnht":  # momenta live in z-space, which just changed
                            state = state._replace(r=rng.standard_normal(state.r.shape))
            s = t - self._n_burnin
            if s >= 0 and s % self._thin == self._thin - 1:
                self._buffer[:, kept] = state.theta
                self._potential_buf[:, kept] = U
                if sampler == "hmc":
                    self._accept_buf[:, kept] = info.accept_prob
                elif sampler == "sgnht":
                    self._xi_buf[:, kept] = state.xi
                kept += 1
            if (t + 1) % self._record_every == 0 or t + 1 == total:
                extra = {"step_size": float(np.mean(self.step_size_))}
                if sampler == "hmc":
                    extra["acceptance"] = float(np.mean(acc_window))
                    acc_window = []
                    self.accept_prob_ = self._accept_buf[:, :kept]
                    self.acceptance_rate_ = (self.accept_prob_.mean(axis=1) if kept
                                             else np.full(C, np.nan))
                if sampler == "sgnht":
                    extra["xi"] = float(np.mean(state.xi))
                    self.xi_ = self._xi_buf[:, :kept]
                metrics, snap = self._record(t, state.theta, U, kept, extra)
                if sampler == "sgnht":
                    snap["xi"] = state.xi.copy()
                yield t + 1, metrics, snap


class GibbsSVM(_HingeSampler):
    """Exact data-augmentation Gibbs sampler for the binary Bayesian SVM (Polson & Scott 2011).

    Samples the same posterior as ``SubgradientHMC`` (N(0, I) prior on [w, b], pseudo-likelihood
    exp(-c max(0, l - y f(x)))) exactly, for use as ground truth; conditionals in ``gibbs.py``.
    Parameters and fitted attributes as in ``SubgradientHMC`` (one iteration = one sweep). ``init``:
    "laplace" starts the chains at mode + 2 L z (dispersed on the scale of the smoothed-curvature
    approximation, as SubgradientHMC does), "prior" at N(0, I) draws; the start does not change the target,
    only the burn-in needed (the data-augmentation chain converges slowly from far away when n is large).
    Fitted: samples_, potential_ (full data), theta_, model_, feature_map_, mode_ (laplace init).
    Input scale: "unit", as ``SubgradientHMC`` (fit warns; see there).
    """

    _binary_only = True

    # parameter table (bsvm/params.py), checked before the data; c = 0 (a valid number, but then the
    # posterior is the prior) is refused with its reason in _iterate
    _parameter_constraints = {
        "c": [non_negative()],
        "l": [Interval(Real, None, None, closed="neither")],
        "n_samples": [positive_int()],
        "n_burnin": [non_negative_int()],
        "thin": [positive_int()],
        "n_chains": [positive_int()],
        "init": [StrOptions({"laplace", "prior"})],
        "features": [None, StrOptions({"nystroem", "rff"})],
        "n_components": [positive_int()],
        "gamma": [None, positive()],
        "record_every": [None, positive_int()],
        "n_trace": [non_negative_int()],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, c=1.0, l=1.0, n_samples=500, n_burnin=100, thin=1, n_chains=4, init="laplace",
                 features=None, n_components=100, gamma=None, record_every=None, n_trace=3,
                 random_state=None):
        self.c = c
        self.l = l
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.thin = thin
        self.n_chains = n_chains
        self.init = init
        self.features = features
        self.n_components = n_components
        self.gamma = gamma
        self.record_every = record_every
        self.n_trace = n_trace
        self.random_state = random_state

    def _iterate(self, X, y_index):
        self._validate_common()
        if self.init not in ("laplace", "prior"):
            raise ValueError(f"init must be 'laplace' or 'prior', got {self.init!r}")
        if self._c == 0.0:
            raise ValueError("GibbsSVM needs c > 0 (with c = 0 the posterior is the N(0, I) prior)")
        rng = np.random.default_rng(self.random_state)
        Phi, y, total = self._setup(X, y_index)
        C, P = self._n_chains, self.model_.n_params
        if self.init == "laplace":
            pilot = laplace_pilot(self.model_, Phi, y, rng=rng)
            self.mode_ = pilot.mode
            theta0 = pilot.mode + 2.0 * S.apply_factor(pilot.factor, rng.standard_normal((C, P)))
        else:
            theta0 = rng.standard_normal((C, P))
        state = gibbs_init(theta0, Phi.shape[0])
        kept = 0
        for t in range(total):
            state, info = gibbs_step(rng, state, Phi, y, self.model_.c, self.model_.l)
            s = t - self._n_burnin
            if s >= 0 and s % self._thin == self._thin - 1:
                self._buffer[:, kept] = state.theta
                self._potential_buf[:, kept] = info.U
                kept += 1
            if (t + 1) % self._record_every == 0 or t + 1 == total:
                yield (t + 1, *self._record(t, state.theta, info.U, kept, {}))
