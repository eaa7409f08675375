"""Leave-one-out predictive of MS-BPM's vote on the training rows, from the posterior draws (integrated
importance sampling, Vehtari et al. 2016, "Bayesian leave-one-out cross-validation approximations for
Gaussian latent variable models", JMLR 17, sec. 3.2). Our addition, not in the paper.

Model (``MSBPM(prior="rkhs")`` with the nugget): the latent scores of class c at the training rows are
f_c = F z_c + s e_c, z_c ~ N(0, s0^2 I), e_c ~ N(0, s0^2 I), so f_c ~ N(0, C) with
C = s0^2 (F F^T + s^2 I) (F: the kernel factor and the bias column; s = point_scale, s0 = prior_scale),
independently over the non-anchor classes; the anchor scores 0. Given the confusion matrix pi (sec. 3.2)
the likelihood factorises: p(y_i | f_i, pi) = pi[y_i, h(f_i)], h = argmax with the anchor at 0.

Leave row i out. Given the other rows' scores f_{-i}, the prior gives f_{c,i} ~ N(mu_ci, v_i) with
v_i = 1 / Q_ii and mu_ci = f_ci - (Q f_c)_i / Q_ii, Q = C^-1 (Gaussian conditioning by the precision
matrix; Q by Woodbury, O(N r) per draw). So

    P_i(h) = P(h(f_i) = h | f_{-i})           (the model's vote at x_i from the other rows),
    p(y_i | f_{-i}, pi) = sum_h pi[y_i, h] P_i(h),

and the posterior draws of (f_{-i}, pi), reweighted by w = 1 / p(y_i | f_{-i}, pi), are draws from the
posterior without row i (the exact identity behind importance-sampling LOO, with f_i integrated out
analytically, which keeps the weights bounded by 1 / min_h pi[y_i, h] instead of the heavy tails of
plain IS-LOO). The LOO vote for the row's own class is sum_s w_s P_is(y_i) / sum_s w_s, the held-out
probability ``predict_proba`` would give row i had it not been in the training set.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import log_ndtr, ndtr, ndtri

# Gauss-Legendre rule on (-1, 1) for the multi-class vote integral (see held_out_votes)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(40)


def held_out_votes(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """P(h = c) for scores f_c ~ N(mu_c, sd^2) independent over the non-anchor classes and the anchor's 0.
    mu: (..., N, K-1); sd: (N,). Returns log-probabilities (..., N, K).

    Binary: P(h = 1) = Phi(mu / sd). More classes, with t = mu / sd: P(h = 0) = prod_c Phi(-t_c), and for
    c >= 1, writing f_c = mu_c + sd Z, class c beats the anchor iff Z > -t_c and beats c' with probability
    Phi(t_c - t_c' + Z), so P(h = c) = int_{-t_c}^inf phi(z) prod_{c' != c} Phi(t_c - t_c' + z) dz; with
    u = Phi(z) this is an integral of a smooth function over (Phi(-t_c), 1), taken by 40-node
    Gauss-Legendre."""
    t = mu / sd[:, None]
    if t.shape[-1] == 1:
        return np.concatenate([log_ndtr(-t), log_ndtr(t)], axis=-1)
    km1 = t.shape[-1]
    out = np.empty((*t.shape[:-1], km1 + 1))
    out[..., 0] = log_ndtr(-t).sum(axis=-1)
    for c in range(km1):
        low = ndtr(-t[..., c])[..., None]  # u from Phi(-t_c) to 1
        half = 0.5 * (1.0 - low)
        z = ndtri(low + half * (_NODES + 1.0))
        f = np.ones(z.shape)
        for c2 in range(km1):
            if c2 != c:
                f = f * ndtr((t[..., c] - t[..., c2])[..., None] + z)
        out[..., c + 1] = np.log(np.maximum((f * half) @ _WEIGHTS, 1e-300))
    return out


class LooAccumulator:
    """Running sums of the integrated-IS LOO of the vote over posterior draws (module docstring).

    ``F``: (N, r) leading training features (kernel factor and bias column); ``point_scale`` s > 0;
    ``prior_scale`` s0; ``y``: (N,) class indices. ``add(f, log_pi)`` takes the scores of a batch of
    draws, (T, N, K-1), and their confusion matrices, (T, K, K) in log space."""

    def __init__(self, F, point_scale: float, prior_scale: float, y, n_classes: int):
        F = np.asarray(F, dtype=float)
        self.F, self.y, self.K = F, np.asarray(y, dtype=np.intp), int(n_classes)
        s2, self.scale = point_scale**2, prior_scale**2 * point_scale**2
        # Q = C^-1 = (I - F A^-1 F^T) / (s0^2 s^2), A = s^2 I + F^T F (Woodbury)
        self._W = cho_solve(cho_factor(s2 * np.eye(F.shape[1]) + F.T @ F, lower=True), F.T)  # A^-1 F^T
        self.q_diag = (1.0 - np.einsum("ij,ji->i", F, self._W)) / self.scale
        self.sd = 1.0 / np.sqrt(self.q_diag)
        # running sums in linear space, every weight scaled by exp(-shift): sum_s w_s, sum_s w_s^2,
        # sum_s w_s P_s(y_i) per row, and the draws' own weights r_s (sum r, sum r^2)
        n = len(self.y)
        self._s1, self._s2, self._sp = np.zeros(n), np.zeros(n), np.zeros(n)
        self._r1 = self._r2 = 0.0
        self._shift = -np.inf
        self.n_draws = 0

    def conditional(self, f):
        """mu (T, N, K-1) of each row's scores given the other rows' (module docstring); sd is ``self.sd``."""
        T, n, km1 = f.shape
        g = np.ascontiguousarray(f.transpose(0, 2, 1)).reshape(T * km1, n)
        qf = (g - (g @ self.F) @ self._W) / self.scale
        return (g - qf / self.q_diag).reshape(T, km1, n).transpose(0, 2, 1)

    def add(self, f, log_pi, log_w=None):
        """``log_w``: (T,) log importance weights of the draws themselves, when they come from another
        posterior (the same model with another bias prior scale: the weights are the ratio of the two
        bias priors); the LOO weights multiply them."""
        f = np.asarray(f, dtype=float)
        T = f.shape[0]
        mu = self.conditional(f)
        if mu.shape[-1] == 1:  # binary: P(h = 1) = Phi(mu / sd), both tails by ndtr for accuracy
            t = mu[..., 0] / self.sd
            P = np.stack([ndtr(-t), ndtr(t)], axis=-1)
        else:
            P = np.exp(held_out_votes(mu, self.sd))  # (T, N, K)
        rows = np.arange(len(self.y))
        pi_y = np.exp(log_pi[:, self.y, :])  # (T, N, K): pi[y_i, h]
        lik = np.einsum("tnk,tnk->tn", pi_y, P)  # p(y_i | f_{-i}, pi) >= min_h pi[y_i, h] > 0
        log_w = np.zeros(T) if log_w is None else np.asarray(log_w, dtype=float)
        shift = max(self._shift, float(log_w.max()))
        if shift > self._shift:  # rescale the sums so far to the new shift
            scale = np.exp(self._shift - shift) if np.isfinite(self._shift) else 0.0
            self._s1 *= scale
            self._sp *= scale
            self._s2 *= scale**2
            self._r1 *= scale
            self._r2 *= scale**2
            self._shift = shift
        r = np.exp(log_w - shift)
        w = r[:, None] / lik
        self._s1 += w.sum(axis=0)
        self._s2 += (w * w).sum(axis=0)
        self._sp += (w * P[:, rows, self.y]).sum(axis=0)
        self._r1 += float(r.sum())
        self._r2 += float((r * r).sum())
        self.n_draws += T

    def log_vote(self) -> np.ndarray:
        """(N,) log of each row's LOO vote for its own class."""
        return np.log(self._sp) - np.log(self._s1)

    def ess(self) -> np.ndarray:
        """(N,) effective sample size of each row's importance weights."""
        return self._s1**2 / self._s2

    def weight_ess(self) -> float:
        """Effective sample size of the draws' own weights (``add(log_w=...)``); the number of draws if
        none were given."""
        return self._r1**2 / self._r2 if self._r2 > 0 else 0.0

    def elpd(self) -> float:
        """Sum over rows of the log LOO vote (the expected log predictive density of the vote)."""
        return float(self.log_vote().sum())
