"""Leave-one-out latent predictives of a fitted S-BSVM, and the probit link calibrated on them.

**Cavity (leave-one-out) marginals.** With alpha_i at its optimum B_i, the augmented likelihood of row i
is, as a function of its latent value g_i = phi_i v, the Gaussian site exp(h_i g_i - w_i g_i^2 / 2) with
w_i = E_q[1 / lambda_i] = B_i^-1/2 and h_i = y_i (1 + w_i) (docs/sbsvm.md sec. 4: the rows' terms in
eta1_hat and P_hat). The site depends on v only through g_i, so removing it from q(v) changes the
marginal of g_i = phi_i v from N(a_i, c_i) (precision 1 / c_i, natural mean a_i / c_i) to

    precision 1 / c_i - w_i,   natural mean a_i / c_i - h_i,

and the leave-one-out latent predictive of row i is N(a_-i, c_-i + t_i) (t_i = Ktilde_ii). This is
exact for q's fixed point with the other rows' alpha held fixed (the usual cavity approximation to
refitting without row i; Opper & Winther 2000, Vehtari et al. 2016); ``tests/test_sbsvm_loo.py`` checks
it against refits without the row.

**Calibrated probit link.** The hinge latent f is a margin score (its margin is at |f| = 1), not a probit:
a fit that puts a constant f = 1 on the majority class says Phi(1) = 0.84 whatever the base rate.
The link p(y = 1 | f) = Phi(A f + B) has a scale A > 0 and an offset B fitted by maximising the
leave-one-out log likelihood sum_i log Phi(y_i (A a_-i + B) / sqrt(1 + A^2 v_-i)), with weak normal
priors log A ~ N(0, 1) and B ~ N(0, 1) (so separable data cannot push A to infinity). A = 1, B = 0 is
the plain probit predictive, so the family contains it. Integrated against N(f; m*, v*) the link gives
Phi((A m* + B) / sqrt(1 + A^2 v*)).

**Stacking of predictive distributions** (Yao, Vehtari, Simpson & Gelman 2018, eq. 4). Given K fits and
the leave-one-out predictive density p_k(y_i | x_i, -i) of each training row under each fit, the
stacking weights are the point of the simplex that maximises the leave-one-out log score of the mixture,

    w = argmax_{w >= 0, sum w = 1}  sum_i log sum_k w_k p_k(y_i | x_i, -i),

and the stacked predictive is sum_k w_k p_k(y | x). The objective is concave in w, so a local
maximum on the simplex is the global one.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr, logsumexp, ndtr

from . import elbo as E

LINK_PRIOR_STD = 1.0
STACKING_TOL = 1e-12        # SLSQP's tolerance on the mean log score
STACKING_MAX_ITER = 200


def cavity_marginals(y, a, c, t):
    """Leave-one-out latent mean and variance (a_-i, c_-i + t_i) from the fitted marginals a = phi m,
    c = diag(phi S phi^T), t = Ktilde_ii and the labels y in {-1, +1} (module docstring)."""
    B = E.b_terms(y, a, c, t)
    w = 1.0 / np.sqrt(B)
    c = np.maximum(c, 1e-300)
    # A row's site never exceeds the posterior precision at its fixed point; the floor only guards
    # states away from it (a stopped SVI run).
    prec = np.maximum(1.0 / c - w, 1e-12)
    c_loo = 1.0 / prec
    a_loo = c_loo * (a / c - y * (1.0 + w))
    return a_loo, c_loo + t


def link_log_likelihood(y, mean, var, A, B):
    """sum_i log Phi(y_i (A m_i + B) / sqrt(1 + A^2 v_i))."""
    return float(np.sum(log_ndtr(y * (A * mean + B) / np.sqrt(1.0 + A * A * var))))


def fit_probit_link(y, mean, var, prior_std=LINK_PRIOR_STD):
    """MAP (A, B) of the link Phi(A f + B) given latent predictives N(mean, var) and labels y = +-1."""
    y, mean, var = (np.asarray(v, dtype=float) for v in (y, mean, var))

    def objective(p):
        logA, B = p
        A = np.exp(logA)
        s = np.sqrt(1.0 + A * A * var)
        z = y * (A * mean + B) / s
        lp = log_ndtr(z)
        r = np.exp(-0.5 * z * z - lp) / np.sqrt(2.0 * np.pi)      # d log Phi(z) / dz, stable in the tail
        dz_dA = y * (mean / s - (A * mean + B) * A * var / s**3)
        dz_dB = y / s
        f = -np.sum(lp) + 0.5 * (logA**2 + B**2) / prior_std**2
        g = np.array([-np.sum(r * dz_dA) * A + logA / prior_std**2, -np.sum(r * dz_dB) + B / prior_std**2])
        return f, g

    res = minimize(objective, np.zeros(2), jac=True, method="L-BFGS-B",
                   bounds=[(-10 * prior_std, 10 * prior_std), (-10 * prior_std, 10 * prior_std)])
    return float(np.exp(res.x[0])), float(res.x[1])


def calibrated_probit(mean, var, A=1.0, B=0.0):
    """p(y = 1) = Phi((A m* + B) / sqrt(1 + A^2 v*)): the link Phi(A f + B) integrated over N(m*, v*)."""
    return ndtr((A * mean + B) / np.sqrt(1.0 + A * A * var))


def link_log_densities(y, mean, var, A, B):
    """Per-row log Phi(y_i (A m_i + B) / sqrt(1 + A^2 v_i)): the log predictive density of each label."""
    return log_ndtr(y * (A * mean + B) / np.sqrt(1.0 + A * A * var))


def stacking_objective(log_dens, w):
    """Mean over rows of log sum_k w_k p_ik, from log densities (n, K) and weights (K,) (zeros allowed)."""
    with np.errstate(divide="ignore"):
        return float(np.mean(logsumexp(log_dens + np.log(np.asarray(w, dtype=float)), axis=1)))


def stacking_weights(log_dens):
    """Stacking weights (module docstring) from the (n, K) leave-one-out log predictive densities.

    The objective is concave on the simplex; SLSQP with its analytic gradient reaches the maximum in a
    few iterations even when it lies on an edge or a vertex (where the EM fixed point crawls)."""
    L = np.asarray(log_dens, dtype=float)
    L = L - L.max(axis=1, keepdims=True)            # a common factor per row cancels in the weights
    P = np.exp(L)
    K = P.shape[1]
    if K == 1:
        return np.ones(1)

    def objective(w):
        mix = np.maximum(P @ w, 1e-300)
        return -float(np.mean(np.log(mix))), -(P / mix[:, None]).mean(axis=0)

    res = minimize(objective, np.full(K, 1.0 / K), jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * K,
                   constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1.0,
                                 "jac": lambda w: np.ones(K)}],
                   options={"ftol": STACKING_TOL, "maxiter": STACKING_MAX_ITER})
    w = np.clip(res.x, 0.0, None)
    return w / w.sum()

