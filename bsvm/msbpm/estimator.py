"""``MSBPM``: the multi-class soft-margin Bayes point machine (Vogt & Ostermann) as an estimator."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh, solve_triangular

from ..base import BayesianClassifier
from ..data import check_predict_data
from ..kernels import RBF, Kernel
from . import engine


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32))
    return np.random.default_rng(random_state)


class MSBPM(BayesianClassifier):
    """Multi-class soft-margin Bayes point machine, sampled by exact line moves over a chain population.

    Model (sec. 3): f_c(x) = sum_i beta_{c,i} k(x_i, x) + bias_scale * beta_{c,0} for classes
    c = 1..K-1 (``classes_[c]``), f_0 = 0 for the anchor ``classes_[0]``; prediction argmax_c f_c;
    Dirichlet-multinomial likelihood of the confusion counts (eq. 4) with alpha_cc = 1 + N / nu; isotropic
    normal prior N(0, prior_scale^2 I) (eq. 5). Sampler: :mod:`bsvm.msbpm.engine`.

    Parameters
    ----------
    kernel : "rbf", "linear" or a :class:`bsvm.kernels.Kernel`.
    gamma : RBF k(x, x') = exp(-gamma ||x - x'||^2); "scale" = 1 / (n_features * X.var()) as in SVC.
    nu : soft-margin parameter of alpha_cc = 1 + N / nu (sec. 3.2); nu -> 0 is the hard-margin BPM.
    prior_scale : sigma of the prior. The likelihood is scale invariant, so it only scales beta.
    bias_scale : the bias feature's value, i.e. the prior sd of the bias relative to the weights
        (1 = the paper's isotropic prior).
    rank_tol : the sampler works in the principal subspace of the training features phi (N x (N+1)):
        a unit direction v whose squared singular value is below ``rank_tol * trace(phi phi^T)`` moves the
        training scores by ||phi v|| <= sqrt(rank_tol) ||phi||_F, so there the posterior is taken to be the
        prior and drawn exactly from it (fresh for every kept draw). For smooth kernels on low-dimensional
        data this cuts the dimension the chains explore from N + 1 to a few dozen (Ripley, gamma 7.5: 67-82
        for N = 250-2000); wide-spectrum kernels keep nearly all of it. 0 keeps every direction (the
        paper's model exactly).
    n_chains : population size (split in halves for ADS; at least 4).
    n_samples : draws kept per chain; ``burn_in`` sweeps are discarded first and every ``thin``-th sweep
        is kept afterwards, so a fit runs burn_in + n_samples * thin sweeps (one line move per chain each).
    direction : "ads" (ADS with probability ``ads_prob``, else hit-and-run), "hit_and_run" or "gibbs".
    init : where the chains start. "prior": independent prior draws. "least_squares": independent draws
        from the Gaussian posterior of a least-squares surrogate (targets +-1 per class relative to the
        anchor, unit noise, the same prior), which already separates the classes; this only shortens
        burn-in (the target is unchanged) and matters because from prior draws the chains first settle on
        "always the majority class" and leave it very slowly.
    predictor : "vote" (class with the most votes of the sampled configurations) or "bayes_point"
        (argmax of the mean configuration). ``predict_proba`` always gives the vote fractions.
    record_every : sweeps between progress records.
    random_state : seed; the same seed gives the same samples.

    Attributes
    ----------
    samples_ : (n_chains, n_draws, (K-1) * (N+1)) sampled beta, class blocks of N kernel weights then the
        bias coefficient. Before burn-in ends (an early stop of ``fit_iter``) it holds the current states.
    bayes_point_ : ((K-1), N+1) mean configuration.
    log_posterior_, log_likelihood_, train_error_ : (n_chains, n_draws) traces of the kept draws (eq. 4
        plus the log prior of the sampled coordinates, up to a constant; eq. 4; training error).
    X_fit_ : training inputs (the kernel centres); kernel_ : the kernel used (None for "linear").
    basis_ : (N+1, r) orthonormal basis of the sampled subspace, or None (``rank_tol=0``).
    """

    def __init__(self, kernel="rbf", gamma="scale", nu=1.0, prior_scale=1.0, bias_scale=1.0, rank_tol=1e-10,
                 n_chains=64, n_samples=50, burn_in=200, thin=2, direction="ads", ads_prob=0.85,
                 init="least_squares", predictor="vote", record_every=10, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.prior_scale = prior_scale
        self.bias_scale = bias_scale
        self.rank_tol = rank_tol
        self.n_chains = n_chains
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.thin = thin
        self.direction = direction
        self.ads_prob = ads_prob
        self.init = init
        self.predictor = predictor
        self.record_every = record_every
        self.random_state = random_state

    # -- set-up ----------------------------------------------------------------------------------------------
    def _check_params(self):
        if self.direction not in engine.DIRECTIONS:
            raise ValueError(f"direction must be one of {engine.DIRECTIONS}, got {self.direction!r}.")
        if self.init not in ("prior", "least_squares"):
            raise ValueError(f"init must be 'prior' or 'least_squares', got {self.init!r}.")
        if self.predictor not in ("vote", "bayes_point"):
            raise ValueError(f"predictor must be 'vote' or 'bayes_point', got {self.predictor!r}.")
        if not (self.nu > 0):
            raise ValueError(f"nu must be positive (sensible values lie in (0, 1]), got {self.nu!r}.")
        if not (0.0 <= self.rank_tol < 1.0):
            raise ValueError(f"rank_tol must lie in [0, 1), got {self.rank_tol!r}.")
        for name in ("prior_scale", "bias_scale"):
            if not (getattr(self, name) > 0):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}.")
        if not (0.0 <= self.ads_prob <= 1.0):
            raise ValueError(f"ads_prob is a probability in [0, 1], got {self.ads_prob!r}.")
        min_chains = 4 if self.direction == "ads" else 1
        if int(self.n_chains) < min_chains:
            raise ValueError(f"n_chains must be at least {min_chains} for direction={self.direction!r} "
                             f"(ADS moves one half of the population along differences of the other half).")
        if min(int(self.n_samples), int(self.thin), int(self.record_every)) < 1 or int(self.burn_in) < 0:
            raise ValueError("n_samples, thin and record_every must be >= 1 and burn_in >= 0.")

    def _make_kernel(self, X) -> Kernel | None:
        if isinstance(self.kernel, Kernel):
            return self.kernel
        if self.kernel == "linear":
            return None
        if self.kernel != "rbf":
            raise ValueError(f"kernel must be 'rbf', 'linear' or a bsvm.kernels.Kernel, got {self.kernel!r}.")
        gamma = self.gamma
        if isinstance(gamma, str):
            if gamma != "scale":
                raise ValueError(f"gamma must be a positive number or 'scale', got {gamma!r}.")
            var = X.var()
            gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if not (gamma > 0):
            raise ValueError(f"gamma must be positive, got {gamma!r}.")
        return RBF(lengthscale=float(np.sqrt(0.5 / gamma)), variance=1.0)

    def _features(self, X) -> np.ndarray:
        """phi(x) = [k(x_1, x), ..., k(x_N, x), bias_scale] (sec. 3.1 with the kernel trick)."""
        K = X @ self.X_fit_.T if self.kernel_ is None else self.kernel_(X, self.X_fit_)
        return np.hstack([K, np.full((X.shape[0], 1), float(self.bias_scale))])

    # -- inference ------------------------------------------------------------------------------------------
    def _iterate(self, X, y_index):
        self._check_params()
        rng = _rng(self.random_state)
        self.kernel_ = self._make_kernel(X)
        self.X_fit_ = X
        n_classes = len(self.classes_)
        phi = self._features(X)
        basis = self._principal_basis(phi)  # (P, r) or None for the full space
        problem = engine.make_problem(phi if basis is None else phi @ basis, y_index, n_classes, self.nu,
                                      self.prior_scale)
        self.basis_ = basis
        n_chains, n_keep = int(self.n_chains), int(self.n_samples)
        thin, burn = int(self.thin), int(self.burn_in)
        n_params = (n_classes - 1) * phi.shape[1]
        n_sampled = (n_classes - 1) * problem.phi.shape[1]
        self.projection_basis_ = np.linalg.qr(rng.standard_normal((n_sampled, 2)))[0]
        draws = np.empty((n_chains, n_keep, n_params))
        traces = np.empty((3, n_chains, n_keep))
        kept = 0
        state = engine.init(rng, problem, n_chains)
        if self.init == "least_squares":
            start = self._least_squares_start(rng, problem, state)
            state = engine.refresh(problem, state._replace(beta=start))
        n_sweeps = burn + n_keep * thin
        kinds = []
        for sweep in range(1, n_sweeps + 1):
            state, info = engine.step(rng, problem, state, self.direction, self.ads_prob)
            kinds.append(info.kind)
            if sweep % 50 == 0:
                state = engine.refresh(problem, state)
            if sweep > burn and (sweep - burn) % thin == 0:
                draws[:, kept] = self._full_beta(rng, state.beta).reshape(n_chains, -1)
                traces[:, :, kept] = self._chain_values(problem, state)
                kept += 1
            if sweep % int(self.record_every) == 0 or sweep == n_sweeps:
                self._store(problem, state, draws, traces, kept)
                metrics = self._metrics(problem, state, np.concatenate(kinds), kept)
                yield sweep, metrics, self._snapshot(problem, state)
                kinds = []

    def _least_squares_start(self, rng, problem, state):
        """Draws from N(m, A^-1), the Gaussian posterior of the sampled coordinates for the least-squares
        surrogate: targets +1 for the example's class and -1 otherwise, minus the anchor's column; unit
        noise; the N(0, prior_scale^2 I) prior. A = F^T F + I / prior_scale^2, m = A^-1 F^T T."""
        F = problem.phi
        K = problem.n_classes
        T = np.where(problem.y[:, None] == np.arange(K), 1.0, -1.0)
        T = T[:, 1:] - T[:, :1]  # (N, K-1), relative to the anchor like the scores
        A = F.T @ F + np.eye(F.shape[1]) / problem.prior_scale**2
        c, low = cho_factor(A, lower=True)
        mean = cho_solve((c, low), F.T @ T).T  # (K-1, P)
        z = rng.standard_normal(state.beta.shape)
        # x = L^-T z has covariance A^-1
        noise = solve_triangular(c, z.reshape(-1, F.shape[1]).T, lower=True, trans="T").T
        return mean[None] + noise.reshape(state.beta.shape)

    def _principal_basis(self, phi):
        """Orthonormal (P, r) basis of the leading right singular vectors of phi (see ``rank_tol``)."""
        if self.rank_tol == 0:
            return None
        gram = phi @ phi.T
        threshold = self.rank_tol * np.trace(gram)
        # only the eigenpairs above the threshold are computed
        w, U = eigh(gram, subset_by_value=(threshold, np.inf), driver="evr")
        return (phi.T @ U) / np.sqrt(w)

    def _full_beta(self, rng, beta):
        """Map reduced coordinates (S, K-1, r) to the paper's beta (S, K-1, P), adding an exact prior draw
        in the discarded directions (orthogonal complement of the basis)."""
        if self.basis_ is None:
            return beta.copy()
        B = self.basis_
        z = self.prior_scale * rng.standard_normal((*beta.shape[:2], B.shape[0]))
        z -= (z @ B) @ B.T
        return beta @ B.T + z

    @staticmethod
    def _chain_values(problem, state):
        n = len(problem.y)
        err = 1.0 - np.trace(state.counts, axis1=1, axis2=2) / n
        return np.stack([engine.log_posterior(problem, state), state.log_lik, err])

    def _store(self, problem, state, draws, traces, kept):
        """Fitted attributes from the draws kept so far, or the current population during burn-in."""
        if kept:
            self.samples_ = draws[:, :kept]
            self.log_posterior_, self.log_likelihood_, self.train_error_ = traces[:, :, :kept]
        else:
            self.samples_ = self._full_beta(np.random.default_rng(0), state.beta).reshape(
                state.beta.shape[0], 1, -1)
            self.log_posterior_, self.log_likelihood_, self.train_error_ = self._chain_values(problem, state)[
                :, :, None]
        self.bayes_point_ = self.samples_.mean(axis=(0, 1)).reshape(len(self.classes_) - 1, -1)

    def _metrics(self, problem, state, kinds, kept):
        lp, _, err = self._chain_values(problem, state)
        return {"log_posterior": float(lp.mean()), "log_posterior_max": float(lp.max()),
                "log_likelihood": float(state.log_lik.mean()), "train_error": float(err.mean()),
                "train_error_min": float(err.min()), "ads_fraction": float(np.mean(kinds == engine.ADS)),
                "draws_kept": float(kept)}

    def _snapshot(self, problem, state):
        lp, _, err = self._chain_values(problem, state)
        return {"log_posterior": lp, "train_error": err, "confusion": state.counts.copy(),
                "projection": state.beta.reshape(state.beta.shape[0], -1) @ self.projection_basis_}

    # -- prediction -----------------------------------------------------------------------------------------
    def _scores(self, X, betas) -> np.ndarray:
        """Class scores (n, T, K) for T configurations ``betas`` of shape (T, (K-1) * (N+1))."""
        K = len(self.classes_)
        phi = self._features(X)
        T = betas.shape[0]
        s = phi @ betas.reshape(T * (K - 1), -1).T
        return np.concatenate([np.zeros((X.shape[0], T, 1)), s.reshape(-1, T, K - 1)], axis=2)

    def _predict_proba(self, X):
        """Fraction of the sampled configurations voting for each class (sec. 5.2)."""
        K = len(self.classes_)
        betas = self.samples_.reshape(-1, self.samples_.shape[-1])
        out = np.empty((X.shape[0], K))
        chunk = max(1, int(2**22 // max(1, betas.shape[0] * K)))  # bound the (rows x draws x K) block
        for start in range(0, X.shape[0], chunk):
            votes = np.argmax(self._scores(X[start:start + chunk], betas), axis=2)
            out[start:start + chunk] = (votes[..., None] == np.arange(K)).mean(axis=1)
        return out

    def bayes_point_scores(self, X) -> np.ndarray:
        """Class scores f_c(x) of the Bayes point (the mean configuration), shape (n_samples, n_classes);
        column 0 (the anchor) is 0."""
        X = check_predict_data(self, X)
        return self._scores(X, self.bayes_point_.reshape(1, -1))[:, 0, :]

    def decision_function(self, X) -> np.ndarray:
        """Scores consistent with ``predict``: the vote fractions (binary: p(classes_[1]) - p(classes_[0]),
        1-D), or with ``predictor="bayes_point"`` the Bayes point's class scores (binary: f_1, 1-D)."""
        if self.predictor == "bayes_point":
            scores = self.bayes_point_scores(X)
        else:
            scores = self.predict_proba(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict(self, X):
        if self.predictor == "bayes_point":
            return self.classes_[np.argmax(self.bayes_point_scores(X), axis=1)]
        return super().predict(X)
