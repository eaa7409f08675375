"""``MSBPM``: the multi-class soft-margin Bayes point machine (Vogt & Ostermann) as an estimator."""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh, solve_triangular
from scipy.special import ndtr

from .._userwarn import warn_user
from ..base import BayesianClassifier
from ..convergence import (
    ConvergenceMonitor,
    StoppingRule,
    ess_targets_met,
    monitor_rows,
    warn_not_converged,
    warn_single_chain,
)
from ..data import check_predict_data, class_name
from ..draws import NO_DRAWS, NOT_TRAINING_ROWS, pointwise_log_likelihood, proba_draws_chunked, to_datatree
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
from ..quadrature import gauss_hermite
from ..subgradient.samplers import dual_averaging_init, dual_averaging_update
from . import engine, hmc
from .centering import CenteredKernel
from .loo import LooAccumulator


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32))
    return np.random.default_rng(random_state)


# probabilists' Gauss-Hermite rules: E[g(Z)], Z ~ N(0, 1), as sum_q w_q g(x_q). The integrand of
# _gh_win_probs has unit width in Z whatever the scores (they are in units of sd), so the error does not
# grow with them, but it does with the number of classes (a product of K - 1 factors). Max abs error
# against 100 nodes over score spreads 0.3-30 (2,000 rows each): 24 nodes 7e-10 / 2e-8 / 1.2e-7 /
# 2e-6 / 5e-6 for 3 / 4 / 5 / 8 / 10 classes; 32 nodes 2.5e-9 / 1e-7 / 4e-7 for 5 / 8 / 10 classes. A
# prediction averages these over the draws, whose Monte Carlo error is orders of magnitude larger
# (0.5 / sqrt(ESS)), so 24 nodes up to 5 classes and 32 beyond. ndtr calls are the cost: 40 nodes above
# 3 classes (until November 2026) made MS-BPM's map of a 5-class fit cost more than the fit itself.
_GH_NODES, _GH_WEIGHTS = gauss_hermite(32)
_GH_NODES_3, _GH_WEIGHTS_3 = gauss_hermite(24)
_GH_FEW_CLASSES = 5  # up to this many classes: the 24-node rule


def _draw_votes(scores, sd):
    """Each configuration's class probabilities with its free part at x integrated out (sd > 0), or its
    0/1 vote (sd = 0). scores: (n, T, K) with column 0 the anchor (0 by construction); sd: (n,).
    Returns (n, T, K).

    Two classes: the free part is e ~ N(0, sd^2) on the non-anchor score, P(class 1) = Phi(s_1 / sd).
    More classes: the free part is symmetric over the K classes, anchor included: every class gets its
    own independent N(0, sd^2 / 2) term, so each non-anchor score relative to the anchor has variance
    sd^2 as in the binary case (and correlation 1/2 between classes, as under K i.i.d. Gaussian-process
    latents taken relative to the anchor). Why (issue 13): with noise on the non-anchor classes only, a point
    the data say little about goes to the anchor with probability P(all e_c < -s_c), 1/4 instead of 1/3 for
    K = 3, and on 60-D blobs the anchor class was predicted for 6-22 of ~100 held-out rows of it. With
    t = sqrt(2) s / sd and Z ~ N(0, 1) (Gauss-Hermite, 24 or 32 nodes, see _GH_NODES):
    P(c wins) = E[prod_{c' != c} Phi(t_c - t_c' + Z)]."""
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
    t = (np.sqrt(2.0) * s).reshape(-1, K)
    probs = np.empty(t.shape)
    for lo in range(0, len(t), _GH_CHUNK):  # (m T, Q) blocks of a few MB: in cache, not ~100 MB arrays
        probs[lo:lo + _GH_CHUNK] = _gh_win_probs(t[lo:lo + _GH_CHUNK])
    probs /= probs.sum(axis=-1, keepdims=True)
    out[soft] = probs.reshape(s.shape)
    return out


#: ``stop_reason_`` of a one-chain run that met every ESS target (R-hat needs two chains: no longer run helps)
ONE_CHAIN_STOP = "n_chains=1 (ESS targets met; R-hat needs >= 2 chains)"

#: configurations per block of :func:`_gh_win_probs` (x 32 nodes x 8 bytes: 4 MB per array)
_GH_CHUNK = 16384


def _gh_win_probs(t: np.ndarray) -> np.ndarray:
    """P(c wins) = E[prod_{c' != c} Phi(t_c - t_c' + Z)] for rows of t (B, K), by Gauss-Hermite.

    One ndtr array per unordered pair c < c': the nodes are symmetric (z_{Q-1-q} = -z_q), so
    Phi(t_c' - t_c + z_q) = 1 - Phi(t_c - t_c' + z_{Q-1-q}): half the ndtr calls of the ordered pairs,
    which were most of the cost of a multi-class prediction (3 classes, 45 rows x 4,864 draws: 0.80 s with
    ordered pairs, 0.53 s with pairs, 0.37 s with pairs on 24 nodes, see _GH_NODES)."""
    B, K = t.shape
    nodes, weights = (_GH_NODES_3, _GH_WEIGHTS_3) if K <= _GH_FEW_CLASSES else (_GH_NODES, _GH_WEIGHTS)
    f = [np.ones((B, nodes.size)) for _ in range(K)]
    for c in range(K):
        for c2 in range(c + 1, K):
            P = ndtr((t[:, c] - t[:, c2])[:, None] + nodes)
            f[c] *= P
            f[c2] *= 1.0 - P[:, ::-1]
    return np.stack([fc @ weights for fc in f], axis=-1)


def _vote_fractions(scores, sd):
    """Mean over configurations of :func:`_draw_votes`, shape (n, K)."""
    return _draw_votes(scores, sd).mean(axis=1)


def _warn_small_classes(name, classes, y_index):
    """A class with a single training row is accepted, but say what it means (issue 13)."""
    counts = np.bincount(y_index, minlength=len(classes))
    if counts.min() < 2:
        few = np.asarray(classes)[counts < 2].tolist()  # plain labels, not np.str_('x')
        warn_user(f"{name}: class(es) {few} have a single training row; the model fits, but what it "
                  "says about those classes rests on one example (no held-out check is possible).",
                  UserWarning)


def _pivoted_cholesky(G: np.ndarray, rank_tol: float):
    """Greedy pivoted Cholesky G ~ F F^T (Harbrecht, Peters & Schneider 2012): pick the largest remaining
    diagonal, stop when the remaining trace is at most ``rank_tol * trace(G)`` (or the largest remaining
    diagonal is at rounding level). Returns F (N, r) and the pivots (r,); F[pivots] is lower triangular.
    The remainder G - F F^T is positive semi-definite with that trace, so every entry is below it too."""
    n = G.shape[0]
    diag = np.diag(G).astype(float).copy()
    total = float(diag.sum())
    floor = 1e-13 * max(float(diag.max()), 1e-300) * n
    F = np.zeros((n, min(n, 128)))  # grown by doubling: the rank is usually far below n
    pivots = []
    for j in range(n):
        if j == F.shape[1]:
            F = np.hstack([F, np.zeros((n, min(n - j, j)))])
        i = int(np.argmax(diag))
        if diag.sum() <= rank_tol * total or diag[i] <= floor:
            break
        col = (G[:, i] - F[:, :j] @ F[i, :j]) / np.sqrt(diag[i])
        col[pivots] = 0.0  # already exact there (rounding aside)
        F[:, j] = col
        diag -= col**2
        diag[i] = 0.0
        np.maximum(diag, 0.0, out=diag)
        pivots.append(i)
    return F[:, :len(pivots)].copy(), np.array(pivots, dtype=np.intp)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class _DrawStore:
    """Kept draws of a run whose length is not known in advance. Above ``cap`` draws per chain it keeps
    every other draw and doubles ``stride`` (the caller then keeps every ``thin * stride``-th sweep), so
    memory stays bounded and the kept draws stay equally spaced.

    The draws live in preallocated buffers that double when full, and the accessors return views of
    the filled part: the fitted attributes are refreshed at every record, and stacking a list of every
    draw each time made a run's bookkeeping quadratic in its length (a fifth of a default fit on iris).
    A view stays valid: a new draw goes to a slot past every earlier view's end, and growing or halving
    moves the draws to a new buffer."""

    #: the per-draw statistics of the HMC sampler (``add``'s ``stats`` rows), as SubgradientHMC keeps them,
    #: but no energy: each move's Hamiltonian is conditional on a confusion matrix drawn afresh before it,
    #: not the posterior's, so an energy plot and BFMI of them would mislead
    STATS = ("accept_prob", "step_size", "diverging", "n_leapfrog")

    def __init__(self, cap: int):
        self.cap, self.stride, self.n = int(cap), 1, 0
        self._beta = self._traces = self._mon = self._stats = None
        self._beta_sum = None  # sum of the kept draws over chains and draws (for the Bayes point)

    def add(self, beta, traces, p_rows, stats=None):
        """One draw of every chain: ``beta`` (chains, params), ``traces`` (3, chains), ``p_rows``
        (chains, rows); ``stats`` (len(STATS), chains): the HMC transition that made the draw (None for
        the line samplers, which have no such statistics)."""
        if self._beta is None:
            size = min(self.cap + 1, 64)
            self._beta = np.empty((beta.shape[0], size, beta.shape[1]))
            self._traces = np.empty((traces.shape[0], traces.shape[1], size))
            self._mon = np.empty((p_rows.shape[0], size, 1 + p_rows.shape[1]))
            if stats is not None:
                self._stats = np.empty((stats.shape[0], stats.shape[1], size))
            self._beta_sum = np.zeros(beta.shape[1])
        elif self.n == self._beta.shape[1]:
            self._resize(min(self.cap + 1, 2 * self.n), slice(None))
        i = self.n
        self._beta[:, i] = beta
        self._traces[..., i] = traces
        if self._stats is not None:
            self._stats[..., i] = stats
        self._mon[:, i, 0] = traces[0]
        self._mon[:, i, 1:] = p_rows
        self._beta_sum += beta.sum(axis=0)
        self.n += 1
        if self.n > self.cap:
            self._resize(self._beta.shape[1], slice(1, None, 2))
            self._beta_sum = self.samples().sum(axis=(0, 1))
            self.stride *= 2

    def _resize(self, size: int, keep: slice):
        """Move the kept draws ``keep`` of the filled part to new buffers of ``size`` draws per chain."""
        beta, traces, mon = self.samples()[:, keep], self.traces()[..., keep], self.monitored()[:, keep]
        stats = None if self._stats is None else self.stats()[..., keep]
        self.n = beta.shape[1]
        self._beta = np.empty((beta.shape[0], size, beta.shape[2]))
        self._traces = np.empty((*traces.shape[:2], size))
        self._mon = np.empty((mon.shape[0], size, mon.shape[2]))
        self._beta[:, :self.n], self._traces[..., :self.n], self._mon[:, :self.n] = beta, traces, mon
        if stats is not None:
            self._stats = np.empty((*stats.shape[:2], size))
            self._stats[..., :self.n] = stats

    @staticmethod
    def _view(a):
        # read-only: the fitted attributes are these views during a run, and a consumer writing into one
        # would change later records and the final draws (a review)
        a.flags.writeable = False
        return a

    def samples(self):
        return self._view(self._beta[:, :self.n])  # (chains, draws, params)

    def traces(self):
        return self._view(self._traces[..., :self.n])  # (3, chains, draws)

    def stats(self):
        """(len(STATS), chains, draws), or None (no HMC statistics kept)."""
        return None if self._stats is None else self._view(self._stats[..., :self.n])

    def monitored(self):
        """(chains, draws, 1 + rows): the log posterior, then p(y_i | x_i) at the monitored rows."""
        return self._view(self._mon[:, :self.n])

    def mean(self):
        """The kept draws' mean over chains and draws (params,)."""
        return self._beta_sum / (self.n * self._beta.shape[0])


class MSBPM(BayesianClassifier):
    """Multi-class soft-margin Bayes point machine, sampled by exact line moves over a chain population.

    Model (sec. 3): f_c(x) = sum_i beta_{c,i} k(x_i, x) + bias_scale_ * beta_{c,0} for classes
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
        change of features: a pivoted Cholesky factor K ~ F_k F_k^T (stopped at a remaining trace of
        ``rank_tol * trace K``), training features F = [F_k, bias_scale] on isotropic coordinates z.
        ``samples_`` holds the kernel weights of the conditional mean at new inputs (beta = coef_map_ z);
        the rest of f(x), normal with variance k(x, x) - k_x^T K^-1 k_x (+ nugget_), belongs to the
        configuration too, and each configuration's vote in ``predict_proba`` integrates it out exactly
        (:meth:`conditional_sd`).
    nugget : with ``prior="rkhs"`` (ignored otherwise): Herbrich et al.'s (2001) soft-margin kernel
        K + nugget_ I, an independent N(0, prior_scale^2 nugget_) term of f_c(x) at every input, fresh at
        new inputs; one extra coordinate per training example, all updated at once by
        :func:`engine.point_sweep` while the line moves (ADS etc.) move the other coordinates. Relative:
        nugget_ = nugget * (mean_i k(x_i, x_i) - mean_ij k(x_i, x_j)), the kernel's variance about its mean
        over the training inputs (the constant part is the bias's job; for a wide RBF it dominates). The
        nugget makes the vote fractions probit-smooth instead of 0/1 away from the boundary: without it
        most Ripley test points get unanimous votes, and a wrong unanimous vote costs -log(1e-15) in log
        loss. The nugget is not in the paper (0 gives the noise-free feature-space prior); the default 0.3
        is an empirical choice. 0.6, the default until November 2026 (chosen on Ripley-like data, seeds
        0-4), made the votes too soft where the classes separate well: out of fold (3 folds, defaults)
        the Brier score went from .0581 to .0505 (Platt .0347) on an imbalanced 600 x 10 set
        (make_classification, 10 % minority) and from .0299 to .0275 (Platt .0235) on scikit-learn's
        breast cancer, log loss likewise; on Ripley-like data (``python -m benchmarks msbpm``, 10 seeds)
        the mean |p - p_true| went from .0460 to .0434 and the log loss from .2432 to .2428. Accuracy
        (the small-data table: +3.48 -> +3.45 points over SVC+Platt at 10 %, none collapsed) and the
        time to convergence at N = 2000 (6 seeds: 2.95 -> 3.18 CPU s on average, at most 24x Platt's)
        hardly moved. 0.2 was better calibrated still but one of 6 N = 2000 runs took 32x Platt's time.
    prior_scale : sigma of the prior. The likelihood is scale invariant, so it only scales beta.
    bias_scale : the bias feature's value, i.e. the prior sd of the bias relative to the weights
        (1 = the paper's isotropic prior). "auto" (default): with ``prior="rkhs"``, 0.1 times the kernel's
        sd about its mean over the training inputs, sqrt(mean_i k(x_i, x_i) - mean_ij k(x_i, x_j)) (the
        scale the nugget uses too, so the rule is free of the kernel's units); with
        ``prior="coefficients"``, 1. The value used is ``bias_scale_``. Why small (issue 13): on 20-40
        rows in up to 60 dimensions the Gram matrix is nearly the identity plus a constant (Splice, gamma
        "scale": off-diagonal 0.15 +- 0.06), so the latent values at new inputs carry little of the data
        (their spread over held-out rows was ~0.2) while a unit-sd bias absorbed the training sample's class
        imbalance (posterior mean -0.6): every held-out row went to the training majority (Splice, Heart,
        blobs60 repeats of the Table 1 protocol). A plain SVC does the same on those repeats; Platt's
        cross-validated sigmoid moves its threshold back. The kernel width is not the cause: gamma / 10,
        gamma / 3 and 3 gamma collapsed on the same repeat. With the centred kernel (``center_kernel``) and
        bias 0.1 the posterior still learns the class balance from the data, as the bias prior's weight
        falls with N (N bias^2 against the per-point variance), and the 10 % repeats no longer collapse;
        0.1 was chosen over 0.3 and 1 on the small-data table of ``python -m benchmarks msbpm`` (0.3
        still collapsed one BreastCancer repeat). The cost: so small a bias cannot carry the class prior,
        so where the kernel part says little the vote is near 1/2 whatever the class balance. On BreastCancer
        (29 % minority, noisy labels) MSBPM then gives 41 % of held-out rows to the minority class at 10 %
        bootstrap samples and trails SVC+Platt (which gives it 15 % and predicts one class on 4 of 10
        repeats); bias_scale=0.3 gained there (+3.7 / +2.8 points at 10 % / 50 %) but lost 2.5 on Heart and
        3.3 on Splice at 10 % and collapsed one Splice repeat (issue 13, session 3).
        "loo" (our addition; needs ``prior="rkhs"`` and ``nugget > 0``): chosen among 0.1, 0.3 and 1 times
        that kernel sd by leave-one-out on the training rows. The reference 0.1 is sampled first; its kept
        draws give every row's LOO vote (``loo_log_vote_``, :mod:`bsvm.msbpm.loo`) and, reweighted by the
        ratio of the two bias priors (only the bias term's prior differs), each other candidate's. A
        candidate gets a run of its own unless those weights keep at least 50 % effective draws and show it
        no better than the reference by 2 standard errors; it replaces the reference only if its LOO elpd
        (the sum over rows of the log LOO vote) beats the reference's by more than 2 standard errors of the
        pointwise difference (the usual LOO model comparison, Vehtari, Gelman & Gabry 2017), the best such
        if several do. ``max_iter`` and ``max_time`` are budgets for all runs together; ``bias_selection_``
        records the comparison. Not the default, measured (issue 13, session 4; Table 1 protocol, 10 runs,
        ``python -m benchmarks msbpm --small-msbpm bias_scale=loo``): at 10 % it kept 0.1 on 70 of the 80
        repeats and switched on the rest, where it mostly lost: mean +2.66 points over SVC+Platt against
        +3.48 for "auto", blobs60 80.1 % against 85.7 %, Heart 77.9 against 78.9, and one BreastCancer
        repeat collapsed to the majority (63.9 against 64.1); at 50 % BreastCancer 67.6 % against 66.4 %
        (SVC+Platt 70.8 %), Heart the same 81.1 %. Imbalanced bootstrap samples make the training rows'
        own class balance look real to any criterion computed from them; a plain argmax of the LOO elpd
        (no se rule) gained 2.9 points on BreastCancer 10 % but lost 2.8 on Splice and 4.6 on Heart. It
        costs up to three runs on small data.
    center_kernel : with ``prior="rkhs"``, centre the kernel on the training inputs
        (:class:`bsvm.msbpm.centering.CenteredKernel`, k(x, x') - m(x) - m(x') + mean, m(x) = mean_j
        k(x, x_j)), default True. The constant part of an uncentred kernel (for a wide RBF, or any isotropic
        kernel in many dimensions, most of k) is a second bias outside ``bias_scale``'s control: a small
        bias prior alone did not stop the collapse described under ``bias_scale``, the two together did.
    rank_tol : the sampler works in the principal subspace of the training features phi (N x (N+1)):
        a unit direction v whose squared singular value is below ``rank_tol * trace(phi phi^T)`` moves the
        training scores by ||phi v|| <= sqrt(rank_tol) ||phi||_F, so there the posterior is taken to be the
        prior and drawn exactly from it (fresh for every kept draw). For smooth kernels on low-dimensional
        data this cuts the dimension the chains explore from N + 1 to a few dozen (Ripley, gamma 7.5: 67-82
        for N = 250-2000); wide-spectrum kernels keep nearly all of it. 0 keeps every direction (the
        paper's model exactly). With ``prior="rkhs"`` it is the remaining trace at which the pivoted
        Cholesky factorisation of K stops (Ripley, N = 2000, gamma "scale": rank ~90).
    sampler : "auto" (default), "hmc" or "lines". "lines": the paper's exact line moves (``direction``,
        every ``line_every`` sweeps), with the nugget the exact per-point sweep and ``block_update``.
        "hmc": the collapsed move of :mod:`bsvm.msbpm.hmc` (our addition): the confusion matrix pi is drawn
        from its Dirichlet conditional, the kernel coordinates by one Metropolis-corrected HMC transition
        of their posterior given pi with the nugget integrated out (Gauss-Newton preconditioned, step size
        tuned by dual averaging towards acceptance 0.8 during burn-in and fixed afterwards), then the
        nugget exactly (``engine.point_sweep``), then the exact scale move. It needs two classes,
        ``prior="rkhs"`` and ``nugget > 0``. "auto" uses "hmc" when those hold, "lines" otherwise.
        Measured on Ripley-like data, N = 2000: the line/nugget sampler needs ~100 sweeps per effective
        draw of p(y|x) at training points, the collapsed move about one.
    n_chains : population size; None: 4 for "hmc", 16 for "lines" (ADS splits the population in halves, so
        it needs at least 4). Why 4 for "hmc" (8 until November 2026): split R-hat <= 1.01 asks each split
        chain for an ESS of about 50 whatever their number, so 8 chains ran until a total ESS of about 800,
        twice the rule's 400, at twice the cost per sweep. Measured (``python -m benchmarks msbpm``,
        Ripley-like N = 2000, 4 draws of the data x 3 seeds): 14-28x (mean 18x) SVC+Platt's CPU time to
        convergence against 17-27x (mean 22x) with 8; one ad-hoc draw of the data took 92x with 8 and 26x
        with 4. The calibration table (10 seeds; mean |p - p_true| .0435 both) and the small-data table
        hardly moved. With one chain R-hat is undefined: an adaptive run stops once the ESS targets
        are met and warns (``ConvergenceWarning``) that convergence could not be checked.
    n_samples : None (default; "auto" says the same, as the other samplers spell it): the run length is
        decided by the shared stopping rule
        (:mod:`bsvm.convergence`): after ``burn_in`` sweeps every ``thin``-th sweep is kept, and at
        geometrically spaced numbers of kept draws (1.25x apart) the rule is checked on the log posterior of
        each chain and on p(y_i | x_i, configuration) at 20 fixed training rows (``monitor_rows_``; each
        configuration's Rao-Blackwellised vote, as in ``predict_proba_draws``): the run stops when
        rank-normalised split R-hat <= 1.01 and bulk and tail ESS >= 400 on all of them, or when
        ``max_iter`` / ``max_time`` is spent, and then emits a ``ConvergenceWarning`` naming the budget and
        what failed. An integer gives a fixed-length run (burn_in + n_samples * thin sweeps), checked once at
        the end (a ``ConvergenceWarning`` if it fails the rule). Long runs keep at most 1000 draws per chain:
        beyond that every other draw is dropped and the thinning doubled; the run length and the check
        schedule count draws at the base thinning, so such runs still end by the rule or at n_samples.
        R-hat over chains: with ``sampler="hmc"`` (the default for two classes) the chains do not interact
        after burn-in (each draws its own pi, momenta and nugget; the preconditioner and step size, set from
        the population during burn-in, are then fixed), so they are independent chains in the usual sense.
        With ``sampler="lines"`` the chains of MS-BPM are one ADS population (a chain's direction is the
        difference of two others), not independent chains. The population as a whole is a Markov chain
        whose invariant law is the product of the posteriors, so each member is marginally a chain
        targeting the posterior, started from its own independent draw; R-hat and ESS are computed over the
        members as if they were separate chains (arviz-stats, summed over chains). The coupling through
        the directions can make the members more alike than independent chains would be, so R-hat and ESS
        can both be optimistic there; the nugget and block moves, which do not couple chains, do most of
        the mixing. ``n_jobs`` does not apply to either sampler: all chains move as one batch of matrix
        products (BLAS-friendly), not as separate jobs.
    burn_in, thin : None: 100 and 1 for "hmc" (its draws are nearly independent), 300 and 8 for "lines".
    n_leapfrog : leapfrog steps per HMC transition (``sampler="hmc"``). 4 with the adapted step (~0.4 in
        whitened units) moves ~1.6 posterior sd per transition; 8 gave no more ESS per CPU-second.
    max_iter : most sweeps in all (burn-in included) before an adaptive run stops; None: no limit.
    max_time : most CPU seconds (``time.process_time``) before the run stops, checked after every sweep;
        None: no limit. The set-up before the first sweep (the N x N kernel and its eigendecomposition)
        is not cut short: at 20,000 rows it alone took 18 s, so max_time=1 stopped after 18 s.
        ``max_time=0`` stops after the first sweep with a ``ConvergenceWarning``; the estimator then
        predicts with the population reached (the draws kept so far stay usable).
    line_every : sweeps between the exact line moves of ``direction`` (every sweep has the nugget and
        block steps). Default 5: at N = 2000 on Ripley-like data the line move costs more than the other
        steps together, and doing it every 5th sweep gave more ESS per CPU-second than every sweep
        (measured in ``python -m benchmarks msbpm``). 1 gives the line move every sweep; 0 never.
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
        with ``prior="rkhs"`` averaged over each configuration's free part at x (see ``prior``; with more
        than two classes that part is symmetric over all classes, anchor included: ``_draw_votes``).
    record_every : sweeps between progress records.
    random_state : seed; the same seed gives the same samples.

    Attributes
    ----------
    samples_ : (n_chains, n_draws, (K-1) * (N+1)) sampled beta, class blocks of N kernel weights then the
        bias coefficient. Before burn-in ends (an early stop of ``fit_iter``) it holds the current states.
    bayes_point_ : ((K-1), N+1) mean configuration.
    param_names_ : the names of ``samples_``'s columns: ``beta[row i]`` (the weight of training row i's
        kernel) and ``beta[bias]``; with 3+ classes ``beta[class c, row i]`` and ``beta[class c, bias]`` for
        each class c of ``classes_[1:]`` (``classes_[0]`` is the anchor, f = 0, with no parameters).
    log_posterior_, log_likelihood_, train_error_ : (n_chains, n_draws) traces of the kept draws (eq. 4
        plus the log prior of the sampled coordinates, up to a constant; eq. 4; training error of the
        configuration's classifier, without the nugget draws).
    accept_prob_, diverging_ : with ``sampler="hmc"``, the acceptance probability and the divergence flag
        of the transition that made each kept draw, (n_chains, n_draws); None with the line samplers.
    X_fit_ : training inputs (the kernel centres); kernel_ : the kernel (``Linear(bias=0)`` for "linear"),
        wrapped in :class:`~bsvm.msbpm.centering.CenteredKernel` when ``center_kernel`` applies.
    basis_ : (N+1, r) orthonormal basis of the sampled subspace, or None (``rank_tol=0`` or ``prior="rkhs"``,
        where ``rank_tol`` stops the pivoted Cholesky factorisation of K instead).
    bias_scale_ : the bias feature's value used (see ``bias_scale``). bias_selection_ : with
        ``bias_scale="loo"``, the comparison: "chosen" and "reference" multiples, "elpd_reference", and per
        candidate its multiple, the reweighted estimate "elpd_diff_is" / "se_is" and its weights' ESS
        fraction "is_ess", whether it was "run", and then its own "elpd_diff" / "se"; None otherwise.
    coef_map_ : (N, r) mapping the sampled rkhs coordinates to kernel weights (nonzero on the r pivot rows;
        None for "coefficients"); nugget_ : the absolute nugget used (0 for "coefficients").
    loo_log_vote_, loo_ess_ : (N,) with ``bias_scale="loo"`` (None otherwise, to keep default fits fast): the
        log of each training row's leave-one-out vote for its own class, i.e. the probability
        ``predict_proba`` would give it had the row been left out, estimated from the kept draws by integrated
        importance sampling (:mod:`bsvm.msbpm.loo`, Vehtari et al. 2016), and the effective sample size of
        each row's weights. ``np.exp(loo_log_vote_).mean()`` and ``(loo_log_vote_ > log 0.5).mean()`` are
        held-out estimates of the mean vote and the accuracy from the training rows alone.
    converged_ : whether the stopping rule was met. convergence_ : the last check
        (:class:`bsvm.convergence.ConvergenceStatus`, None if none could be made); stop_reason_ : "converged"
        or the budget that ran out; stopping_rule_ : the rule in words; monitor_rows_ : the training rows
        whose p(y|x) the rule watches. Progress records carry ``rhat``, ``ess_bulk``, ``ess_tail``,
        ``draws`` (kept per chain), ``converged`` and the rule's thresholds, and ``burnin`` (1 until
        ``burn_in`` sweeps are done; the records' ``n_burnin`` is that count, as the other samplers name
        it).

    Input scale (:func:`bsvm.data.check_input_scale`): "adaptive" with ``gamma="scale"`` or the linear
    kernel (gamma follows the data's variance, and eq. 4's likelihood is scale invariant); fit warns when
    column standard deviations differ by more than 1e3, as one gamma serves every column. A numeric gamma:
    "unit".
    """

    _min_per_class = 1  # a single row per class is accepted, with a warning (issue 13)

    # parameter table (bsvm/params.py), checked before the data; cross-checks stay in _check_params
    _parameter_constraints = {
        "kernel": [StrOptions({"rbf", "linear"}), Kernel],
        "gamma": [StrOptions({"scale"}), positive()],
        "nu": [positive()],
        "prior": [StrOptions({"coefficients", "rkhs"})],
        "nugget": [non_negative()],
        "prior_scale": [positive()],
        "bias_scale": [StrOptions({"auto", "loo"}), positive()],
        "center_kernel": ["boolean"],
        "rank_tol": [Interval(Real, 0, 1, closed="left")],
        "sampler": [StrOptions({"auto", "hmc", "lines"})],
        "n_chains": [positive_int(), None],
        # "auto" as the other samplers spell it (MSBPM(n_samples="auto") was refused, a review): None's rule
        "n_samples": [positive_int(), None, StrOptions({"auto"})],
        "burn_in": [non_negative_int(), None],
        "thin": [positive_int(), None],
        "max_iter": [positive_int(), None],
        "max_time": [non_negative(), None],
        "n_leapfrog": [positive_int()],
        "line_every": [non_negative_int()],
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

    def __init__(self, kernel="rbf", gamma="scale", nu=1.0, prior="rkhs", nugget=0.3, prior_scale=1.0,
                 bias_scale="auto", center_kernel=True, rank_tol=1e-10, sampler="auto", n_chains=None,
                 n_samples=None, burn_in=None, thin=None, max_iter=20000, max_time=None, n_leapfrog=4,
                 line_every=5, direction="ads", ads_prob=0.85, block_update=True, init="least_squares",
                 predictor="vote", record_every=10, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.prior = prior
        self.nugget = nugget
        self.prior_scale = prior_scale
        self.bias_scale = bias_scale
        self.center_kernel = center_kernel
        self.rank_tol = rank_tol
        self.sampler = sampler
        self.n_chains = n_chains
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.thin = thin
        self.max_iter = max_iter
        self.max_time = max_time
        self.line_every = line_every
        self.n_leapfrog = n_leapfrog
        self.direction = direction
        self.ads_prob = ads_prob
        self.block_update = block_update
        self.init = init
        self.predictor = predictor
        self.record_every = record_every
        self.random_state = random_state

    # -- set-up ----------------------------------------------------------------------------------------------
    def _check_params(self):
        if self.sampler not in ("auto", "hmc", "lines"):
            raise ValueError(f"sampler must be 'auto', 'hmc' or 'lines', got {self.sampler!r}.")
        if not (_is_int(self.n_leapfrog) and self.n_leapfrog >= 1):
            raise ValueError(f"n_leapfrog must be an integer >= 1, got {self.n_leapfrog!r}.")
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
        if not (self.prior_scale > 0):
            raise ValueError(f"prior_scale must be positive, got {self.prior_scale!r}.")
        if not (self.bias_scale in ("auto", "loo") or (isinstance(self.bias_scale, (int, float, np.number))
                                                       and self.bias_scale > 0)):
            raise ValueError("bias_scale must be 'auto', 'loo' or a positive number, got "
                             f"{self.bias_scale!r}.")
        if self.bias_scale == "loo" and not (self.prior == "rkhs" and self.nugget > 0):
            raise ValueError("bias_scale='loo' needs prior='rkhs' and nugget > 0 (its leave-one-out vote "
                             f"integrates the nugget); got prior={self.prior!r}, nugget={self.nugget!r}.")
        if not (0.0 <= self.ads_prob <= 1.0):
            raise ValueError(f"ads_prob is a probability in [0, 1], got {self.ads_prob!r}.")
        if self.n_chains is not None and not (_is_int(self.n_chains) and self.n_chains >= 1):
            raise ValueError(f"n_chains must be None or an integer >= 1, got {self.n_chains!r}.")
        if self.n_samples not in (None, "auto") and not (_is_int(self.n_samples) and self.n_samples >= 1):
            raise ValueError(f"n_samples must be None or 'auto' (run until the stopping rule is met) or an "
                             f"integer >= 1 (a fixed-length run), got {self.n_samples!r}.")
        for name, low, none_ok in (("thin", 1, True), ("record_every", 1, False), ("burn_in", 0, True),
                                   ("line_every", 0, False)):
            value = getattr(self, name)
            if not ((value is None and none_ok) or (_is_int(value) and value >= low)):
                raise ValueError(f"{name} must be {'None or ' if none_ok else ''}an integer >= {low}, "
                                 f"got {value!r}.")
        if self.max_iter is not None and not (_is_int(self.max_iter) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be None or an integer >= 1 (sweeps), got {self.max_iter!r}.")
        if self.max_time is not None and not (isinstance(self.max_time, (int, float, np.number))
                                              and np.isfinite(self.max_time) and self.max_time >= 0):
            raise ValueError(f"max_time must be None or a number of seconds >= 0, got {self.max_time!r}.")

    def _sampler(self, n_classes: int) -> str:
        """The ``sampler="auto"`` rule: collapsed HMC when it applies (two classes, ``prior="rkhs"``,
        ``nugget > 0``), the line moves otherwise."""
        applies = n_classes == 2 and self.prior == "rkhs" and self.nugget > 0
        if self.sampler == "hmc" and not applies:
            raise ValueError("sampler='hmc' needs two classes, prior='rkhs' and nugget > 0 (the nugget is "
                             f"what it integrates out); got {n_classes} classes, prior={self.prior!r}, "
                             f"nugget={self.nugget!r}. Use sampler='lines' or 'auto'.")
        if self.sampler == "auto":
            return "hmc" if applies else "lines"
        return self.sampler

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
        """phi(x) = [k(x_1, x), ..., k(x_N, x), bias_scale_] (sec. 3.1 with the kernel trick)."""
        return np.hstack([self.kernel_(X, self.X_fit_), np.full((X.shape[0], 1), float(self.bias_scale_))])

    def _check_param_rules(self):
        self._check_params()
        if self.sampler == "lines":  # ("auto" resolves with the number of classes: after the data)
            self._check_chains_for("lines")

    def _check_param_rules_for_data(self, X, n_classes):
        sampler = self._sampler(n_classes)  # "auto" resolves with the number of classes
        self._check_chains_for(sampler)

    def _check_chains_for(self, sampler):
        if sampler == "lines" and self.direction == "ads" and self.n_chains is not None and self.n_chains < 4:
            raise ValueError(f"n_chains must be at least 4 for sampler='lines' with direction='ads' (ADS "
                             f"moves one half of the population along differences of the other half), got "
                             f"{self.n_chains!r}.")

    # -- inference ------------------------------------------------------------------------------------------
    #: ``bias_scale="loo"``: the candidate bias prior scales, in units of the kernel's sd
    #: about its mean over the training inputs; the first is the reference (see ``bias_scale``)
    _bias_candidates = (0.1, 0.3, 1.0)
    #: a candidate replaces the reference only if its LOO elpd is higher by more than this many standard
    #: errors of the difference
    _bias_z = 2.0
    #: the reference run's draws stand in for a candidate (no run of its own) when the importance weights
    #: between the two bias priors keep at least this fraction of the draws as effective sample size
    _bias_is_ess = 0.5

    def _iterate(self, X, y_index):
        # (the parameters were checked by fit_iter: _check_param_rules and _check_param_rules_for_data)
        _warn_small_classes(type(self).__name__, self.classes_, y_index)
        if self.bias_scale != "loo":
            result = yield from self._run(X, y_index)
            self.bias_selection_ = None
            self._finish(result)
            return
        cands = self._bias_candidates
        ref = yield from self._run(X, y_index, cands[0], cands[1:])
        ref_vote = ref["loo"].log_vote()
        kept = {cands[0]: (self._fit_attrs(), ref, ref_vote)}
        table, offset, used = [], ref["sweeps"], ref["busy"]
        n = len(ref_vote)
        for mult, acc in zip(cands[1:], ref["alt_loo"]):
            d = acc.log_vote() - ref_vote
            diff, se = float(d.sum()), float(d.std(ddof=1) * np.sqrt(n)) if n > 1 else np.inf
            ess = acc.weight_ess() / max(acc.n_draws, 1)
            row = {"multiple": mult, "elpd_diff_is": diff, "se_is": se, "is_ess": ess, "run": False}
            table.append(row)
            if ess >= self._bias_is_ess and not diff > self._bias_z * se:
                continue  # the reference's draws, reweighted, show it is not clearly better: no run
            if ((self.max_time is not None and used >= float(self.max_time))
                    or (self.max_iter is not None and offset >= int(self.max_iter))):
                continue  # the budgets are for the whole fit
            res = yield from self._run(X, y_index, mult, (), offset, used)
            offset, used = offset + res["sweeps"], used + res["busy"]
            kept[mult] = (self._fit_attrs(), res, res["loo"].log_vote())
            row["run"] = True
        best, best_diff = cands[0], 0.0
        for row in table:
            if row["run"]:
                d = kept[row["multiple"]][2] - ref_vote
                row["elpd_diff"], row["se"] = float(d.sum()), float(d.std(ddof=1) * np.sqrt(n))
                if row["elpd_diff"] > self._bias_z * row["se"] and row["elpd_diff"] > best_diff:
                    best, best_diff = row["multiple"], row["elpd_diff"]
        attrs, result, _ = kept[best]
        self.__dict__.update(attrs)
        self.bias_selection_ = {"chosen": best, "reference": cands[0], "candidates": table,
                                "elpd_reference": float(ref_vote.sum())}
        if len(kept) > 1:  # the last record describes the fit kept, not the last candidate run
            metrics, snapshot = result["last"]
            yield offset, {**metrics, "bias_multiple": float(best)}, snapshot
        self._finish(result)

    def _fit_attrs(self) -> dict:
        """The fitted attributes of the run just ended (not the records, which span every run)."""
        skip = set(self._get_param_names()) | {"history_", "n_iter_", "fit_time_"}
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def _finish(self, result):
        self.stop_reason_ = result["budget"]
        one_chain = self.convergence_ is not None and self.convergence_.n_chains == 1
        if not self.converged_ and result["budget"] == ONE_CHAIN_STOP:
            warn_single_chain(type(self).__name__, result["rule"])
        elif not self.converged_ and one_chain and ess_targets_met(self.convergence_):
            # a fixed length that met the ESS targets: R-hat is what is missing, and no budget gives it
            warn_single_chain(type(self).__name__, result["rule"], fixed=True)
        elif not self.converged_:
            warn_not_converged(type(self).__name__, self.convergence_, result["budget"], result["rule"])

    def _run(self, X, y_index, bias_mult=None, alt_mults=(), offset=0, used=0.0):
        """One sampler run with the bias prior scale ``bias_mult`` (a multiple of the kernel's sd about its
        mean; None: ``bias_scale`` as given). ``alt_mults``: other multiples whose LOO is estimated from
        this run's draws by importance sampling. ``offset``/``used``: sweeps and CPU seconds of earlier
        runs (records count on; ``max_time`` is the total). Returns a dict: the budget that ended the run,
        the rule, sweeps, CPU seconds and the LOO accumulators."""
        rng = _rng(self.random_state)
        self.kernel_ = self._make_kernel(X)
        if self.prior == "rkhs" and self.center_kernel:
            # the kernel's constant part would be a second, uncontrolled bias (see bsvm/msbpm/centering.py)
            self.kernel_ = CenteredKernel(self.kernel_, X)
        self.X_fit_ = X
        self._y_fit_index = y_index
        n_classes = len(self.classes_)
        if self.prior == "rkhs":
            basis, sampled = None, self._rkhs_features(X, bias_mult)
        else:
            self.coef_map_, self.nugget_ = None, 0.0
            self.bias_scale_ = 1.0 if self.bias_scale in ("auto", "loo") else float(self.bias_scale)
            phi = self._features(X)
            basis = self._principal_basis(phi)  # (P, r) or None for the full space
            sampled = phi if basis is None else phi @ basis
        problem = engine.make_problem(sampled, y_index, n_classes, self.nu, self.prior_scale,
                                      point_scale=float(np.sqrt(self.nugget_)))
        self.basis_ = basis
        sampler = self._sampler(n_classes)
        self.sampler_ = sampler
        hmc_run = sampler == "hmc"
        # the line moves' options away from their defaults (read off the signature, not restated)
        unused = self._changed_params(("direction", "ads_prob", "block_update", "line_every"))
        if hmc_run and unused:
            # (on two classes the default sampler is "hmc": MSBPM(direction="gibbs") gave the default's
            # draws bit for bit, with no word, a newcomer's review)
            warn_user(f"MSBPM: {', '.join(unused)} {'is an option' if len(unused) == 1 else 'are options'} "
                      f"of sampler='lines', and this fit uses sampler='hmc' (sampler={self.sampler!r} on "
                      f"{n_classes} classes), which ignores {'it' if len(unused) == 1 else 'them'}: pass "
                      f"sampler='lines' to use {'it' if len(unused) == 1 else 'them'}.", UserWarning)
        n_chains = int(self.n_chains) if self.n_chains is not None else (4 if hmc_run else 16)
        fixed = self.n_samples not in (None, "auto")
        n_keep = int(self.n_samples) if fixed else None
        thin = int(self.thin) if self.thin is not None else (1 if hmc_run else 8)
        burn = int(self.burn_in) if self.burn_in is not None else (100 if hmc_run else 300)
        self._resolved_run = {"burn": burn, "thin": thin}  # (the progress bar's total)
        max_iter = None if self.max_iter is None else int(self.max_iter) - offset
        max_time = None if self.max_time is None else float(self.max_time) - used
        n_sampled = (n_classes - 1) * problem.phi.shape[1]
        self.projection_basis_ = np.linalg.qr(rng.standard_normal((n_sampled, 2)))[0]
        # the stopping rule's quantities: the log posterior and p(y|x) at fixed training rows
        rule = StoppingRule()
        # checks 1.25x apart (the shared default allows 2x): a run overshoots the first passing check by
        # less, and a check (arviz-stats on 21 quantities) costs far less than the sweeps between them. At
        # N = 2000 (Ripley-like, seeds 0-2) R-hat is the last criterion met (ESS is ~700 by then): 1.5x
        # stopped at 355 sweeps on every seed, 1.25x at 294, 224 and 294
        monitor = ConvergenceMonitor(n_chains, rule, max_growth=1.25)
        rows = monitor_rows(X.shape[0])
        self.monitor_rows_ = rows
        self.stopping_rule_ = rule.describe(len(rows))
        sd_rows = self._conditional_sd(X[rows])
        phi_rows = self._features(X[rows])
        # (named as SubgradientHMC and GibbsSVM name theirs: the stopping-rule table of the Diagnostics
        # page read p(y|x)[0] for MS-BPM and p(y|x[33]) for the subgradient samplers, a crawl)
        names = ["log_posterior"] + [f"p(y|x[{i}])" for i in rows]
        store = _DrawStore(self._max_stored)
        self.converged_, self.convergence_ = False, None
        # the LOO vote on the training rows (bsvm/msbpm/loo.py), from its own stream so that the draws are
        # those of the same seed without it
        loo_rng = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])
        first = problem.phi.shape[1] - problem.n_point
        lead = problem.phi[:, :first]
        # only when asked for (bias_scale="loo"): it costs about 10 % of a default fit at N = 2000
        loo = (LooAccumulator(lead, problem.point_scale, problem.prior_scale, y_index, n_classes)
               if problem.n_point and self.bias_scale == "loo" else None)
        alt_loo, alt_tau = [], []
        for mult in alt_mults if loo is not None else ():
            # the same model with another bias prior scale tau: its LOO from these draws, reweighted by
            # the ratio of the two priors of the bias term (the kernel and nugget parts are unchanged)
            tau = mult * self._kernel_spread**0.5
            alt_tau.append(tau)
            alt_loo.append(LooAccumulator(np.hstack([lead[:, :-1], np.full((len(y_index), 1), tau)]),
                                          problem.point_scale, problem.prior_scale, y_index, n_classes))
        self.loo_log_vote_ = self.loo_ess_ = None
        state = engine.init(rng, problem, n_chains)
        if self.init == "least_squares":
            start = self._least_squares_start(rng, problem, state)
            state = engine.refresh(problem, state._replace(beta=start))
        clock = time.process_time()
        busy = 0.0  # CPU seconds spent in this generator (time in the consumer between records excluded)
        kinds, sweep, budget = [], 0, None
        step_size, adapt, precond, accept = np.full(n_chains, 0.3), None, None, []
        if hmc_run:
            adapt = dual_averaging_init(step_size)
        while True:
            sweep += 1
            if hmc_run:
                if sweep - 1 in (0, 20, 50) and (sweep <= burn or precond is None):
                    # the Gauss-Newton precision at the population's current state; fixed after burn-in
                    lead = state.beta[:, 0, :problem.phi.shape[1] - problem.n_point]
                    precond = hmc.preconditioner(problem, lead, engine.draw_confusion(rng, problem, state))
                state, info, _ = hmc.collapsed_step(rng, problem, state, step_size, int(self.n_leapfrog),
                                                    precond)
                hmc_info = info
                accept.append(info.accept_prob)
                if sweep <= burn:  # dual averaging (Hoffman & Gelman 2014) towards acceptance 0.8
                    adapt = dual_averaging_update(adapt, info.accept_prob, 0.8)
                    step_size = np.exp(adapt.log_step_bar if sweep == burn else adapt.log_step)
                state = engine.scale_move(rng, problem, state)
            else:
                if self.line_every and (sweep - 1) % int(self.line_every) == 0:
                    state, info = engine.step(rng, problem, state, self.direction, self.ads_prob)
                    kinds.append(info.kind)
                state = engine.point_sweep(rng, problem, state)  # the nugget coordinates, if any
                if self.block_update:
                    state = engine.scale_move(rng, problem, engine.block_update(rng, problem, state))
            if sweep % 50 == 0:
                state = engine.refresh(problem, state)
            if sweep > burn and (sweep - burn) % (thin * store.stride) == 0:
                beta = self._full_beta(rng, state.beta).reshape(n_chains, -1)
                votes = _draw_votes(self._scores(None, beta, phi_rows), sd_rows)  # (rows, chains, K)
                p_rows = votes[np.arange(len(rows)), :, y_index[rows]].T  # (chains, rows)
                stats = None
                if hmc_run:  # the transition that made this draw (as Stan and SubgradientHMC record it)
                    stats = np.stack([np.broadcast_to(np.asarray(getattr(hmc_info, k), dtype=float),
                                                      (n_chains,)) for k in _DrawStore.STATS])
                store.add(beta, self._chain_values(problem, state), p_rows, stats)
                if loo is not None:
                    log_pi = engine.draw_confusion(loo_rng, problem, state)
                    loo.add(state.scores, log_pi)
                    self.loo_log_vote_, self.loo_ess_ = loo.log_vote(), loo.ess()
                    if alt_loo:
                        # log N(b0; 0, s0^2 tau^2) - log N(b0; 0, s0^2 tau_ref^2) summed over classes,
                        # b0 = tau_ref * (bias coordinate) the bias term of each class
                        b0_sq = np.sum((self.bias_scale_ * state.beta[:, :, first - 1])**2, axis=1)
                        for acc, tau in zip(alt_loo, alt_tau):
                            log_w = (-0.5 * b0_sq / problem.prior_scale**2 * (tau**-2 - self.bias_scale_**-2)
                                     - (n_classes - 1) * np.log(tau / self.bias_scale_))
                            acc.add(state.scores, log_pi, log_w)
            kept = store.n
            # draws at the base thinning so far: the store keeps at most _max_stored per chain (it thins
            # itself as it grows), so run lengths and the check schedule count these, not the stored ones
            equiv = max(0, sweep - burn) // thin
            elapsed = busy + time.process_time() - clock
            status = None
            if fixed and equiv >= n_keep:
                budget = f"n_samples={n_keep} (fixed length)"
            elif not fixed and kept and monitor.due(equiv):
                status = monitor.check(store.monitored(), names)
                # the monitor schedules the next check in stored draws: rescale to base-thinning draws
                monitor.next_check = max(equiv + 1, math.ceil(monitor.next_check * equiv / status.draws))
                if status.converged:
                    self.converged_, budget = True, "converged"
                elif status.n_chains == 1 and not status.failed:
                    # every ESS target is met and R-hat cannot be computed from one chain: running on
                    # cannot make the rule pass, so stop here and say so (the warning below)
                    budget = ONE_CHAIN_STOP
            if budget is None and max_iter is not None and sweep >= max_iter:
                budget = f"max_iter={max_iter} sweeps"
            if budget is None and max_time is not None and elapsed >= max_time:
                budget = f"max_time={max_time:g} s"
            done = budget is not None
            if done and not self.converged_:
                # a last check on everything kept, so the warning and converged_ say where the run stands
                status = monitor.check(store.monitored(), names) if kept else None
                self.converged_ = bool(status is not None and status.converged)
            if status is not None:
                self.convergence_ = status
            if done or sweep % int(self.record_every) == 0:
                self._store(problem, state, store, final=done)
                # burn-in as the samplers of bsvm.subgradient record it (the dashboard shades it)
                metrics = {**self._metrics(problem, state, kinds, kept), "burnin": float(sweep <= burn),
                           "n_burnin": float(burn)}
                if accept:
                    metrics["acceptance"] = float(np.mean(accept))
                    metrics["step_size"] = float(np.mean(step_size))
                    accept = []
                metrics.update(monitor.metrics())
                metrics["draws"] = float(kept)
                metrics["thin"] = float(thin * store.stride)
                metrics["bias_scale"] = float(self.bias_scale_)
                busy += time.process_time() - clock
                last = (metrics, self._snapshot(problem, state))
                try:
                    yield sweep + offset, *last
                except GeneratorExit:
                    # stopped by the consumer (the dashboard's Stop, a break): keep compact copies, not
                    # views of buffers with up to as much spare room as draws
                    self._store(problem, state, store, final=True)
                    raise
                clock = time.process_time()
                kinds = []
            if done:
                break
        return {"budget": budget, "rule": rule, "sweeps": sweep, "busy": busy, "loo": loo,
                "alt_loo": alt_loo, "last": last}

    #: kept draws per chain above which the store halves them (every other draw) and doubles the thinning,
    #: so an adaptive run's memory stays bounded; diagnostics on the thinned draws stay valid
    _max_stored = 1000

    def _least_squares_start(self, rng, problem, state):
        """Draws from N(m, A^-1), the Gaussian posterior of the sampled coordinates for the least-squares
        surrogate: targets +1 for the example's class and -1 otherwise, minus the anchor's column; unit
        noise; the N(0, prior_scale^2 I) prior. A = F^T F + I / prior_scale^2, m = A^-1 F^T T. With the
        nugget, F is the leading block only (an r x r system, not N x N) and the per-point coordinates start
        at 0: the first nugget sweep draws them."""
        F = problem.phi[:, :problem.phi.shape[1] - problem.n_point]
        K = problem.n_classes
        T = np.where(problem.y[:, None] == np.arange(K), 1.0, -1.0)
        T = T[:, 1:] - T[:, :1]  # (N, K-1), relative to the anchor like the scores
        A = F.T @ F + np.eye(F.shape[1]) / problem.prior_scale**2
        c, low = cho_factor(A, lower=True)
        mean = cho_solve((c, low), F.T @ T).T  # (K-1, P)
        z = rng.standard_normal((*state.beta.shape[:2], F.shape[1]))
        # x = L^-T z has covariance A^-1
        noise = solve_triangular(c, z.reshape(-1, F.shape[1]).T, lower=True, trans="T").T
        lead = mean[None] + noise.reshape(z.shape)
        return np.concatenate([lead, np.zeros((*z.shape[:2], problem.n_point))], axis=-1)

    def _rkhs_features(self, X, bias_mult=None):
        """Training features of the feature-space isotropic prior (Herbrich et al. 2001): a pivoted
        Cholesky factorisation K ~ F_k F_k^T (:func:`_pivoted_cholesky`, stopped when the trace left over is
        below ``rank_tol * trace(K)``), F = [F_k, bias_scale], so F F^T = K + bias_scale^2 up to that
        remainder and z ~ N(0, prior_scale^2 I) makes the latent values F z a Gaussian-process prior. With
        pivots I, F_k = K[:, I] L^-T (L = chol(K[I, I])), so the kernel expansion of the conditional mean at
        new inputs is beta = coef_map_ z with ``coef_map_`` = L^-T on the rows I and 0 elsewhere. O(N r^2)
        instead of an eigendecomposition's O(N^3): 20x faster at N = 2000. Sets ``coef_map_`` and
        ``nugget_``. The nugget's per-point columns are appended by :func:`engine.make_problem`."""
        G = self.kernel_(X)
        # relative to the kernel's variance about its mean over the training inputs (mean diagonal of the
        # centred Gram matrix): the constant part of k is the bias's job, and for a wide RBF it dominates
        spread = max(float(np.mean(np.diag(G)) - np.mean(G)), 1e-12)
        self.nugget_ = float(self.nugget) * spread
        self._kernel_spread = spread
        # "auto": a multiple of the kernel's sd about its mean (see ``bias_scale``)
        if bias_mult is None:
            bias_mult = self._bias_candidates[0] if self.bias_scale in ("auto", "loo") else None
        self.bias_scale_ = bias_mult * np.sqrt(spread) if bias_mult is not None else float(self.bias_scale)
        Fk, pivots = _pivoted_cholesky(G, self.rank_tol)
        L = Fk[pivots]  # lower triangular: row j of the pivot block has entries in columns <= j
        coef = np.zeros((X.shape[0], len(pivots)))
        coef[pivots] = solve_triangular(L, np.eye(len(pivots)), lower=True, trans="T")
        self.coef_map_ = coef
        return np.hstack([Fk, np.full((X.shape[0], 1), float(self.bias_scale_))])

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

    def _store(self, problem, state, store, final=False):
        """Fitted attributes from the draws kept so far, or the current population during burn-in. Read-only
        views of the store's buffers during the run; at the end or a stop (``final``) copies, so a fitted
        model does not hold the buffers' unused room."""
        self._burnin_states = not store.n  # samples_ then holds the current states, not draws
        self._hmc_stats = None
        if store.n:
            self.samples_ = store.samples()
            traces = store.traces()
            if final:
                self.samples_, traces = self.samples_.copy(), traces.copy()
            self.log_posterior_, self.log_likelihood_, self.train_error_ = traces
            stats = store.stats()
            self._hmc_stats = None if stats is None else dict(zip(_DrawStore.STATS, stats.copy() if final
                                                                  else stats, strict=True))
            bayes_point = store.mean()
        else:
            self.samples_ = self._full_beta(np.random.default_rng(0), state.beta).reshape(
                state.beta.shape[0], 1, -1)
            self.log_posterior_, self.log_likelihood_, self.train_error_ = self._chain_values(problem, state)[
                :, :, None]
            bayes_point = self.samples_.mean(axis=(0, 1))
        self.bayes_point_ = bayes_point.reshape(len(self.classes_) - 1, -1)
        n_rows = self.bayes_point_.shape[1] - 1
        # ("class": a class called "beta" read beta[beta, row 0]; but a label that says so already as it
        # is: wine's class_1 read beta[class class_1, row 0], a crawl)
        blocks = [""] if len(self.classes_) == 2 else [f"{class_name(c)}, " for c in self.classes_[1:]]
        key = (tuple(blocks), n_rows)
        if getattr(self, "_param_names_key", None) != key or not getattr(self, "param_names_", None):
            # (once per run: the names of every record; the key holds every class, so a refit on other
            # classes renames)
            self.param_names_ = [f"beta[{b}{part}]" for b in blocks
                                 for part in [*(f"row {i}" for i in range(n_rows)), "bias"]]
            self._param_names_key = key

    def _metrics(self, problem, state, kinds, kept):
        lp, _, err = self._chain_values(problem, state)
        kinds = np.concatenate(kinds) if kinds else np.zeros(0)
        return {"log_posterior": float(lp.mean()), "log_posterior_max": float(lp.max()),
                "log_likelihood": float(state.log_lik.mean()), "train_error": float(err.mean()),
                "train_error_min": float(err.min()),
                "ads_fraction": float(np.mean(kinds == engine.ADS)) if kinds.size else 0.0,
                "draws_kept": float(kept)}

    def _snapshot(self, problem, state):
        lp, _, err = self._chain_values(problem, state)
        return {"log_posterior": lp, "train_error": err, "confusion": state.counts.copy(),
                "projection": state.beta.reshape(state.beta.shape[0], -1) @ self.projection_basis_}

    # -- prediction -----------------------------------------------------------------------------------------
    def _scores(self, X, betas, phi=None) -> np.ndarray:
        """Class scores (n, T, K) for T configurations ``betas`` of shape (T, (K-1) * (N+1)); ``phi``: the
        features of X if already known."""
        K = len(self.classes_)
        if phi is None:
            phi = self._features(X)
        T = betas.shape[0]
        s = phi @ betas.reshape(T * (K - 1), -1).T
        return np.concatenate([np.zeros((phi.shape[0], T, 1)), s.reshape(-1, T, K - 1)], axis=2)

    def _predict_proba(self, X):
        """Fraction of the sampled configurations voting for each class (sec. 5.2).

        With ``prior="rkhs"`` a configuration's score at x is normal around ``phi(x) @ beta`` with the sd of
        :meth:`conditional_sd`; its vote is averaged over that part exactly (Rao-Blackwellised)."""
        K = len(self.classes_)
        betas = self.samples_.reshape(-1, self.samples_.shape[-1])
        sd = self._conditional_sd(X)
        out = np.empty((X.shape[0], K))
        nodes = 1 if K == 2 else _GH_NODES.size
        chunk = max(1, int(2**22 // max(1, betas.shape[0] * K * nodes)))  # bound the working block
        for start in range(0, X.shape[0], chunk):
            sl = slice(start, start + chunk)
            out[sl] = _vote_fractions(self._scores(X[sl], betas), sd[sl])
        return out

    def predict_proba_draws(self, X) -> np.ndarray:
        """Each kept configuration's class probabilities at X, shape (n_chains, n_draws, n_samples,
        n_classes): its vote, averaged over its free part at x with ``prior="rkhs"`` (0/1 otherwise).
        ``predict_proba`` is their mean over chains and draws; per chain they are the traces whose R-hat
        and ESS say whether the predictive probabilities have converged."""
        X = check_predict_data(self, X)
        S, D, P = self.samples_.shape
        K = len(self.classes_)
        sd = self._conditional_sd(X)

        def per_draw(betas):  # (T, P) -> (T, rows, K)
            return _draw_votes(self._scores(X, betas), sd).transpose(1, 0, 2)

        nodes = 1 if K == 2 else _GH_NODES.size
        return proba_draws_chunked(per_draw, self.samples_.reshape(S * D, P), S, X.shape[0], K,
                                   budget=2e6 / nodes)

    def draw_proba(self, X) -> np.ndarray:
        """Alias of :meth:`predict_proba_draws` (the name the benchmarks and dashboard used first)."""
        return self.predict_proba_draws(X)

    def sampled_coefficients(self) -> np.ndarray:
        """(P,) bool over ``samples_``' last axis ((K - 1) blocks of N kernel weights then a bias): the
        coefficients the sampler moves. With ``prior="rkhs"`` a row's kernel weight is sampled only where
        it is a pivot row of K's factor (``coef_map_``); every other one is 0 by construction. The one
        source for ``to_arviz`` and the dashboard's Diagnostics, which had each worked it out (from the
        map, and from the draws' constant columns, which would also have hidden a chain stuck still)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "samples_")
        K = len(self.classes_)
        per = self.samples_.shape[-1] // (K - 1)
        block = np.ones(per, dtype=bool)
        if getattr(self, "coef_map_", None) is not None:
            block[:-1] = np.any(self.coef_map_ != 0, axis=1)
        return np.tile(block, K - 1)

    def to_arviz(self, X=None):
        """The kept draws as an ArviZ DataTree (:func:`bsvm.draws.to_datatree`): ``posterior`` holds beta
        as (chain, draw, class, coef) (class = the non-anchor classes ``classes_[1:]``, whose scores are
        relative to the anchor class ``classes_[0]``, f = 0, named in the ``anchor_class`` attribute;
        coef = the N kernel weights then the bias; with ``prior="rkhs"`` only the weights of the pivot
        rows, the others being 0 in every draw), ``sample_stats`` the log posterior (``lp``), eq. 4's
        log likelihood summed over the rows (``log_likelihood_sum``: ArviZ keeps the name log_likelihood
        for its pointwise group) and each configuration's training error, and with ``sampler="hmc"`` the
        transition that made each draw (``acceptance_rate``, ``step_size``, ``diverging``, ``n_steps``, as
        SubgradientHMC's tree; no ``energy``: each move's Hamiltonian is conditional on a confusion matrix
        drawn before it, not the posterior's, so BFMI of it would mislead), ``observed_data`` the training
        labels.

        ``X``: the training rows given to ``fit`` (checked against ``X_fit_``). Then ``log_likelihood``
        ``y`` (chain, draw, row) holds the log of each configuration's predictive probability of the
        observed class (``predict_proba_draws``, what ``predict_proba`` averages) and ``constant_data``
        ``X`` the rows. This is not a leave-one-out of MS-BPM's posterior: its likelihood (eq. 4) is a
        function of the confusion counts, not a product over rows, so ``arviz_stats.loo`` on it is only a
        heuristic check of the predictive. With ``prior="rkhs"`` and ``nugget`` > 0 the probabilities are
        smooth; otherwise they are 0/1 votes, the log is -inf for a draw that misclassifies a row, and
        ``loo`` fails. Refused when the draws' class probabilities would exceed
        ``bsvm.draws.MAX_LOG_LIKELIHOOD`` numbers.

        ``converged_`` is the stopping rule's verdict on the log posterior and p(y|x) at ``monitor_rows_``,
        not on each coefficient (unlike ``SubgradientHMC``, which also checks every parameter): the
        coefficients of a kernel expansion are many and weakly identified, so ``arviz_stats.summary`` of
        this tree may flag a few ``beta`` above R-hat 1.01 after a converged run (a review: 3 of 80 at
        1.02 on 200 Ripley rows), while the predictions the rule checks have mixed."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "samples_")
        if getattr(self, "_burnin_states", False):
            # (the chains' current states exported as a one-draw posterior, while the warning said "0
            # kept draws": the other samplers refuse, a library user's review)
            raise ValueError(NO_DRAWS)
        ll, const = None, None
        if X is not None and self.samples_.shape[1]:  # (no draws: to_datatree says so, before any work)
            Xc = check_predict_data(self, X)
            if Xc.shape != np.shape(self.X_fit_) or not np.array_equal(Xc, self.X_fit_):
                raise ValueError(NOT_TRAINING_ROWS)
            # (X as given: the checked array lost a DataFrame's column names, and predict_proba_draws then
            # warned "X does not have valid feature names" on the very frame the fit was given, a review)
            ll = {"y": pointwise_log_likelihood(self.predict_proba_draws, X, self._y_fit_index,
                                                *self.samples_.shape[:2], len(self.classes_))}
            const = {"X": Xc}
        S, D, _ = self.samples_.shape
        K = len(self.classes_)
        beta = self.samples_.reshape(S, D, K - 1, -1)
        rows = np.arange(beta.shape[-1] - 1)
        extra = {}
        if getattr(self, "coef_map_", None) is not None:
            # prior="rkhs": only the pivot rows of K's factor carry weights; every other row's is 0 in
            # every draw, which gave arviz_stats.summary 231 "invalid value" warnings and NaN R-hats for
            # a 150-row fit (a review)
            keep = self.sampled_coefficients()[:beta.shape[-1]]
            rows = np.flatnonzero(keep[:-1])
            beta = beta[..., keep]
            extra = {"coef_rows": "the pivot rows of K's pivoted Cholesky factor; every other training "
                                  "row's kernel weight is 0 by construction"}
        # coefficient and row names as in ``param_names_`` and the other samplers' trees ("k0", dim "obs"
        # and no stopping rule made MS-BPM's file the odd one out, a crawl)
        coef = [f"row {i}" for i in rows] + ["bias"]
        stats = {"log_posterior": self.log_posterior_, "log_likelihood_sum": self.log_likelihood_,
                 "train_error": self.train_error_}
        hmc_stats = getattr(self, "_hmc_stats", None)
        if hmc_stats is not None:  # sampler="hmc": its transitions, as SubgradientHMC's tree has them
            stats.update({k: hmc_stats[k] for k in ("accept_prob", "step_size", "n_leapfrog")})
            stats["diverging"] = hmc_stats["diverging"].astype(bool)
        return to_datatree(
            {"beta": beta}, stats,
            {"y": self.classes_[self._y_fit_index]},
            dims={"beta": ["class", "coef"], "y": ["row"], "X": ["row", "feature"]},
            coords={"class": [str(c) for c in self.classes_[1:]], "coef": coef},
            attrs={"sampler": self.sampler_, "stopping_rule": self.stopping_rule_,
                   "converged": int(bool(self.converged_)), "anchor_class": str(self.classes_[0]),
                   **extra},
            log_likelihood=ll, constant_data=const)

    @property
    def accept_prob_(self):
        """sampler="hmc": the Metropolis-Hastings acceptance probability of the transition that made each
        kept draw, (n_chains, n_draws); None for the line samplers, which have no acceptance test."""
        stats = getattr(self, "_hmc_stats", None)
        return None if stats is None else stats["accept_prob"]

    @property
    def diverging_(self):
        """sampler="hmc": whether the transition that made each kept draw diverged (energy error above
        1000, as Stan and NumPyro flag it), (n_chains, n_draws) bool; None for the line samplers."""
        stats = getattr(self, "_hmc_stats", None)
        return None if stats is None else stats["diverging"].astype(bool)

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
