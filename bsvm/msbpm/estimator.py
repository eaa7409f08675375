"""``MSBPM``: the multi-class soft-margin Bayes point machine (Vogt & Ostermann) as an estimator."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh, solve_triangular
from scipy.special import ndtr, ndtri

from ..base import BayesianClassifier
from ..data import check_predict_data
from ..kernels import RBF, Kernel, Linear
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
from . import engine


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32))
    return np.random.default_rng(random_state)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)
_GL_NODES = 0.5 * (_GL_X + 1.0)  # Gauss-Legendre on [0, 1]
_GL_WEIGHTS = 0.5 * _GL_W


def _draw_votes(scores, sd):
    """P(argmax_c (scores_c + sd * e_c) = c) for every configuration, e_c i.i.d. N(0, 1) for the
    non-anchor classes and none for the anchor (its score is 0 by construction).

    scores: (n, T, K) with column 0 the anchor; sd: (n,). Returns (n, T, K). sd = 0 gives 0/1 votes. Two
    classes: Phi(s_1 / sd). More classes, with s = scores / sd and z(u) = Phi^-1(u) (Gauss-Legendre in u):
    P(c wins) = int_{Phi(-s_c)}^1 prod_{c' != 0, c} Phi(s_c - s_c' + z(u)) du;
    P(anchor) = prod_c Phi(-s_c)."""
    n, T, K = scores.shape
    hard = sd <= 0
    out = np.empty((n, T, K))
    if hard.any():
        votes = np.argmax(scores[hard], axis=2)
        out[hard] = votes[..., None] == np.arange(K)
    soft = ~hard
    if not soft.any():
        return out
    s = scores[soft] / sd[soft, None, None]  # (m, T, K), standardised
    if K == 2:
        p1 = ndtr(s[..., 1])
        out[soft] = np.stack([1.0 - p1, p1], axis=-1)
        return out
    probs = np.empty(s.shape)
    probs[..., 0] = np.prod(ndtr(-s[..., 1:]), axis=-1)
    for c in range(1, K):
        lo = ndtr(-s[..., c])  # (m, T)
        u = lo[..., None] + (1.0 - lo[..., None]) * _GL_NODES  # (m, T, Q)
        z = ndtri(np.clip(u, 1e-300, 1.0 - 1e-16))
        f = np.ones_like(u)
        for c2 in range(1, K):
            if c2 != c:
                f *= ndtr((s[..., c] - s[..., c2])[..., None] + z)
        probs[..., c] = (1.0 - lo) * (f @ _GL_WEIGHTS)
    probs /= probs.sum(axis=-1, keepdims=True)
    out[soft] = probs
    return out


def _vote_fractions(scores, sd):
    """Mean over configurations of :func:`_draw_votes`, shape (n, K)."""
    return _draw_votes(scores, sd).mean(axis=1)


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
    prior : geometry of the isotropic normal prior of eq. 5 (the likelihood is scale invariant, so only the
        geometry matters). "coefficients": beta ~ N(0, prior_scale^2 I) on the kernel expansion weights,
        i.e. latent values f(X) = K beta with covariance K^2 (``samples_`` fixes f everywhere). "rkhs":
        isotropic in the kernel's feature space, f(x) = w^T phi(x) + bias with w ~ N(0, prior_scale^2 I), as
        in the Bayes point machine of Herbrich et al. (2001) that the paper generalises, i.e. a
        Gaussian-process prior f_c(X) ~ N(0, K) per class. Sampled exactly like the paper's model after a
        change of features: K = U diag(w) U^T (eigenvalues above ``rank_tol * trace K``), training
        features F = [U sqrt(w), bias_scale] on isotropic coordinates z. ``samples_`` holds the kernel
        weights of the conditional mean at new inputs (beta = U w^-1/2 z); the rest of f(x), normal with
        variance k(x, x) - k_x^T K^-1 k_x (+ nugget_), belongs to the configuration too, and each
        configuration's vote in ``predict_proba`` integrates it out exactly (:meth:`conditional_sd`).
    nugget : with ``prior="rkhs"`` (ignored otherwise): Herbrich et al.'s (2001) soft-margin kernel
        K + nugget_ I, an independent N(0, prior_scale^2 nugget_) term of f_c(x) at every input, fresh at
        new inputs; one extra coordinate per training example, all updated at once by
        :func:`engine.point_sweep` while the line moves (ADS etc.) move the other coordinates. Relative:
        nugget_ = nugget * (mean_i k(x_i, x_i) - mean_ij k(x_i, x_j)), the kernel's variance about its mean
        over the training inputs (the constant part is the bias's job; for a wide RBF it dominates). The
        nugget makes the vote fractions probit-smooth instead of 0/1 away from the boundary: without it
        most Ripley test points get unanimous votes, and a wrong unanimous vote costs -log(1e-15) in log
        loss. The default 0.6 is an empirical choice on Ripley-like data (benchmarks/msbpm.py, 0.2-0.6
        tried), not from the paper, which has no nugget; 0 gives the noise-free feature-space prior.
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
        is kept afterwards, so a fit runs burn_in + n_samples * thin sweeps (one line move per chain each,
        then the nugget and block steps). The defaults (16 chains, 300 + 100 x 8 sweeps) give R-hat below
        1.05 for the held-out predictive probabilities on Ripley-like data with N = 500 (``python -m
        benchmarks msbpm``); the paper ran 200 chains of 50 draws after 1000 ADS iterations.
    direction : "ads" (ADS with probability ``ads_prob``, else hit-and-run), "hit_and_run" or "gibbs".
    block_update : with a nugget (``prior="rkhs"``, ``nugget > 0``), follow every sweep of line moves by an
        exact Gaussian draw of all feature-space coordinates given the latent scores
        (:func:`engine.block_update`, an Albert & Chib style two-block Gibbs step; our addition, not in the
        paper). The line moves alone change one direction per chain and sweep and need thousands of sweeps
        to mix over a few hundred dimensions; with the block step R-hat of held-out predictive
        probabilities falls below 1.05 within the default run. False leaves only the paper's line moves
        (to compare mixing, e.g. on the dashboard).
    init : where the chains start. "prior": independent prior draws. "least_squares": independent draws
        from the Gaussian posterior of a least-squares surrogate (targets +-1 per class relative to the
        anchor, unit noise, the same prior), which already separates the classes; this only shortens
        burn-in (the target is unchanged) and matters because from prior draws the chains first settle on
        "always the majority class" and leave it very slowly.
    predictor : "vote" (class with the most votes of the sampled configurations) or "bayes_point"
        (argmax of the mean configuration). ``predict_proba`` always gives the vote fractions (sec. 5.2),
        with ``prior="rkhs"`` averaged over each configuration's free part at x (see ``prior``).
    record_every : sweeps between progress records.
    random_state : seed; the same seed gives the same samples.

    Attributes
    ----------
    samples_ : (n_chains, n_draws, (K-1) * (N+1)) sampled beta, class blocks of N kernel weights then the
        bias coefficient. Before burn-in ends (an early stop of ``fit_iter``) it holds the current states.
    bayes_point_ : ((K-1), N+1) mean configuration.
    log_posterior_, log_likelihood_, train_error_ : (n_chains, n_draws) traces of the kept draws (eq. 4
        plus the log prior of the sampled coordinates, up to a constant; eq. 4; training error of the
        configuration's classifier, without the nugget draws).
    X_fit_ : training inputs (the kernel centres); kernel_ : the kernel (``Linear(bias=0)`` for "linear").
    basis_ : (N+1, r) orthonormal basis of the sampled subspace, or None (``rank_tol=0`` or ``prior="rkhs"``,
        where ``rank_tol`` truncates the eigenvalues of K instead).
    coef_map_ : (N, r) U w^-1/2 mapping the sampled rkhs coordinates to kernel weights (None for
        "coefficients"); nugget_ : the absolute nugget used (0 for "coefficients").

    Input scale (:func:`bsvm.data.check_input_scale`): "adaptive" with ``gamma="scale"`` or the linear
    kernel (gamma follows the data's variance, and eq. 4's likelihood is scale invariant); fit warns when
    column standard deviations differ by more than 1e3, as one gamma serves every column. A numeric gamma:
    "unit".
    """

    # parameter table (bsvm/params.py), checked before the data; cross-checks stay in _check_params
    _parameter_constraints = {
        "kernel": [StrOptions({"rbf", "linear"}), Kernel],
        "gamma": [StrOptions({"scale"}), positive()],
        "nu": [positive()],
        "prior": [StrOptions({"coefficients", "rkhs"})],
        "nugget": [non_negative()],
        "prior_scale": [positive()],
        "bias_scale": [positive()],
        "rank_tol": [Interval(Real, 0, 1, closed="left")],
        "n_chains": [positive_int()],
        "n_samples": [positive_int()],
        "burn_in": [non_negative_int()],
        "thin": [positive_int()],
        "direction": [StrOptions(set(engine.DIRECTIONS))],
        "ads_prob": [Interval(Real, 0, 1, closed="both")],
        "block_update": ["boolean"],
        "init": [StrOptions({"prior", "least_squares"})],
        "predictor": [StrOptions({"vote", "bayes_point"})],
        "record_every": [positive_int()],
        "random_state": RANDOM_STATE,
    }

    def _input_scale_rule(self):
        # gamma="scale" follows the data's variance, and eq. 4's likelihood is scale invariant
        return "adaptive" if self.kernel == "linear" or self.gamma == "scale" else "unit"

    def __init__(self, kernel="rbf", gamma="scale", nu=1.0, prior="rkhs", nugget=0.6, prior_scale=1.0,
                 bias_scale=1.0, rank_tol=1e-10, n_chains=16, n_samples=100, burn_in=300, thin=8,
                 direction="ads", ads_prob=0.85, block_update=True, init="least_squares", predictor="vote",
                 record_every=10, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.prior = prior
        self.nugget = nugget
        self.prior_scale = prior_scale
        self.bias_scale = bias_scale
        self.rank_tol = rank_tol
        self.n_chains = n_chains
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.thin = thin
        self.direction = direction
        self.ads_prob = ads_prob
        self.block_update = block_update
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
        if self.prior not in ("coefficients", "rkhs"):
            raise ValueError(f"prior must be 'coefficients' or 'rkhs', got {self.prior!r}.")
        if not (self.nugget >= 0):
            raise ValueError(f"nugget must be >= 0, got {self.nugget!r}.")
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
            return Linear(variance=1.0, bias=0.0)  # x . x': the bias is the model's own feature
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
        return np.hstack([self.kernel_(X, self.X_fit_), np.full((X.shape[0], 1), float(self.bias_scale))])

    # -- inference ------------------------------------------------------------------------------------------
    def _iterate(self, X, y_index):
        self._check_params()
        rng = _rng(self.random_state)
        self.kernel_ = self._make_kernel(X)
        self.X_fit_ = X
        n_classes = len(self.classes_)
        if self.prior == "rkhs":
            basis, sampled = None, self._rkhs_features(X)
        else:
            self.coef_map_, self.nugget_ = None, 0.0
            phi = self._features(X)
            basis = self._principal_basis(phi)  # (P, r) or None for the full space
            sampled = phi if basis is None else phi @ basis
        problem = engine.make_problem(sampled, y_index, n_classes, self.nu, self.prior_scale,
                                      point_scale=float(np.sqrt(self.nugget_)))
        self.basis_ = basis
        n_chains, n_keep = int(self.n_chains), int(self.n_samples)
        thin, burn = int(self.thin), int(self.burn_in)
        n_params = (n_classes - 1) * (X.shape[0] + 1)  # the paper's beta: N kernel weights and a bias
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
            state = engine.point_sweep(rng, problem, state)  # the nugget coordinates, if any
            if self.block_update:
                state = engine.scale_move(rng, problem, engine.block_update(rng, problem, state))
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

    def _rkhs_features(self, X):
        """Training features of the feature-space isotropic prior (Herbrich et al. 2001): with
        K = U diag(w) U^T (eigenvalues above ``rank_tol * trace(K)`` kept), F = [U sqrt(w), bias_scale], so
        F F^T = K + bias_scale^2 on the kept subspace and z ~ N(0, prior_scale^2 I) makes the latent values
        F z a Gaussian-process prior. Sets ``coef_map_`` = U / sqrt(w), which maps z to the kernel expansion
        of the conditional mean at new inputs, beta = coef_map_ z, and ``nugget_``. The nugget's per-point
        columns are appended by :func:`engine.make_problem`."""
        G = self.kernel_(X)
        # relative to the kernel's variance about its mean over the training inputs (mean diagonal of the
        # centred Gram matrix): the constant part of k is the bias's job, and for a wide RBF it dominates
        self.nugget_ = float(self.nugget) * max(float(np.mean(np.diag(G)) - np.mean(G)), 1e-12)
        threshold = self.rank_tol * np.trace(G)
        w, U = eigh(G, subset_by_value=(max(threshold, 0.0), np.inf), driver="evr")
        pos = w > 0
        w, U = w[pos], U[:, pos]
        self.coef_map_ = U / np.sqrt(w)
        return np.hstack([U * np.sqrt(w), np.full((X.shape[0], 1), float(self.bias_scale))])

    def conditional_sd(self, X) -> np.ndarray:
        """sd of the part of f_c(x) that the sampled coordinates leave free, shape (n_samples,).

        Feature-space prior (``prior="rkhs"``): given the latent values at the training points, f_c(x) is
        normal with the mean ``phi(x) @ beta`` and variance prior_scale^2 (k(x, x) - k_x^T K^-1 k_x + nugget_)
        (the component of the feature vector orthogonal to the kept training features, and a fresh
        nugget). Every sampled configuration votes with its own draw of that part, so ``predict_proba``
        integrates it out exactly. Zero for ``prior="coefficients"`` (beta fixes f everywhere)."""
        X = check_predict_data(self, X)
        return self._conditional_sd(X)

    def _conditional_sd(self, X):
        if getattr(self, "coef_map_", None) is None:
            return np.zeros(X.shape[0])
        proj = self.kernel_(X, self.X_fit_) @ self.coef_map_
        var = self.kernel_.diag(X) - np.einsum("ij,ij->i", proj, proj) + self.nugget_
        return self.prior_scale * np.sqrt(np.maximum(var, 0.0))

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
        if self.coef_map_ is not None:  # rkhs: z -> kernel expansion of the mean, bias unchanged
            r = self.coef_map_.shape[1]  # then the bias, then the nugget coordinates (fresh at new inputs)
            return np.concatenate([beta[..., :r] @ self.coef_map_.T, beta[..., r:r + 1]], axis=-1)
        if self.basis_ is None:
            return beta.copy()
        B = self.basis_
        z = self.prior_scale * rng.standard_normal((*beta.shape[:2], B.shape[0]))
        z -= (z @ B) @ B.T
        return beta @ B.T + z

    @staticmethod
    def _chain_values(problem, state):
        n = len(problem.y)
        if problem.n_point:
            # training error of each configuration's classifier, i.e. without the per-point nugget draws
            # (which absorb nearly every misfit, so the counts of eq. 4 show almost no errors)
            nug = state.beta[..., -problem.n_point:].transpose(0, 2, 1)
            smooth = state.scores - problem.point_scale * nug
            assigned = np.argmax(engine._with_anchor(smooth), axis=2)
            err = np.mean(assigned != problem.y, axis=1)
        else:
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
        """Fraction of the sampled configurations voting for each class (sec. 5.2).

        With ``prior="rkhs"`` a configuration's score at x is normal around ``phi(x) @ beta`` with the sd of
        :meth:`conditional_sd`; its vote is averaged over that part exactly (Rao-Blackwellised)."""
        K = len(self.classes_)
        betas = self.samples_.reshape(-1, self.samples_.shape[-1])
        sd = self._conditional_sd(X)
        out = np.empty((X.shape[0], K))
        nodes = 1 if K == 2 else _GL_NODES.size
        chunk = max(1, int(2**22 // max(1, betas.shape[0] * K * nodes)))  # bound the working block
        for start in range(0, X.shape[0], chunk):
            sl = slice(start, start + chunk)
            out[sl] = _vote_fractions(self._scores(X[sl], betas), sd[sl])
        return out

    def draw_proba(self, X) -> np.ndarray:
        """Each kept configuration's class probabilities at X, shape (n_chains, n_draws, n_samples,
        n_classes): its vote, averaged over its free part at x with ``prior="rkhs"`` (0/1 otherwise).
        ``predict_proba`` is their mean over chains and draws; per chain they are the traces whose R-hat
        and ESS say whether the predictive probabilities have converged."""
        X = check_predict_data(self, X)
        S, D, _ = self.samples_.shape
        votes = _draw_votes(self._scores(X, self.samples_.reshape(S * D, -1)), self._conditional_sd(X))
        return votes.reshape(X.shape[0], S, D, -1).transpose(1, 2, 0, 3)

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
