"""The closed-form S-BSVM evidence lower bound and its gradient w.r.t. kernel hyperparameters.

Per data point, with q(u) = N(mu, Z), q(lambda_i) = GIG(1/2, 1, alpha_i), a_i = kappa_i mu and
B_i = (1 - y_i a_i)^2 + kappa_i Z kappa_i^T + Ktilde_ii (docs/sbsvm.md sec. 2, correcting eq. 8):

    ELBO = sum_i [ -1 + y_i a_i - (B_i + alpha_i) / (2 sqrt(alpha_i)) ] - KL(q(u) || p(u)).

This is exact, constants included: the GIG normaliser is sqrt(2 pi) exp(-sqrt(alpha)) because
K_1/2(z) = sqrt(pi / (2z)) e^-z, and E[1/lambda] = alpha^-1/2, E[lambda] = sqrt(alpha) + 1.
The optimal alpha_i = B_i (eq. 11) collapses the term to -1 + y_i a_i - sqrt(B_i).

Everything here works in whitened coordinates (see ``geometry``): q(v) = N(m, S) with S = P^-1, so the
KL is to N(0, I). The variational family is stored by its natural parameters (eta1 = P m, P = -2 eta2).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from .geometry import Geometry


class Posterior(NamedTuple):
    """Moments of q(v) derived from its natural parameters."""

    m: np.ndarray       # mean (p,)
    Lp: np.ndarray      # lower Cholesky factor of the precision P
    Lp_inv: np.ndarray  # its inverse, so S = Lp_inv^T Lp_inv and variances are one GEMM per batch


def moments(eta1: np.ndarray, P: np.ndarray) -> Posterior:
    Lp = cholesky(P, lower=True, check_finite=False)
    Lp_inv = solve_triangular(Lp, np.eye(Lp.shape[0]), lower=True, check_finite=False)
    return Posterior(Lp_inv.T @ (Lp_inv @ eta1), Lp, Lp_inv)


def covariance(post: Posterior) -> np.ndarray:
    """S = P^-1 (explicit; only the hyperparameter gradient and the parameter snapshots need it)."""
    return post.Lp_inv.T @ post.Lp_inv


def marginals(phi: np.ndarray, post: Posterior) -> tuple[np.ndarray, np.ndarray]:
    """Mean a = phi m and variance c = diag(phi S phi^T) of phi v under q."""
    V = phi @ post.Lp_inv.T
    return phi @ post.m, np.einsum("ij,ij->i", V, V)


def b_terms(y, a, c, t) -> np.ndarray:
    """B_i = E_q[(1 - y_i f_i)^2] = (1 - y_i a_i)^2 + c_i + t_i."""
    return (1.0 - y * a) ** 2 + c + t


def data_terms(y, a, c, t, alpha=None) -> np.ndarray:
    """Per-point ELBO terms; alpha=None means the optimal alpha = B."""
    B = b_terms(y, a, c, t)
    if alpha is None:
        return -1.0 + y * a - np.sqrt(B)
    return -1.0 + y * a - (B + alpha) / (2.0 * np.sqrt(alpha))


def kl_to_standard_normal(post: Posterior) -> float:
    """KL(N(m, P^-1) || N(0, I)) = (tr S + m^T m - p - log|S|) / 2."""
    p = post.m.size
    return 0.5 * (np.sum(post.Lp_inv**2) + post.m @ post.m - p + 2.0 * np.sum(np.log(np.diag(post.Lp))))


def elbo(y, phi, t, post: Posterior, scale: float = 1.0, alpha=None) -> float:
    """ELBO with the data sum over the given rows multiplied by ``scale`` (n / |S| for a minibatch)."""
    a, c = marginals(phi, post)
    return float(scale * np.sum(data_terms(y, a, c, t, alpha)) - kl_to_standard_normal(post))


def hyper_gradient(geom: Geometry, X, y, phi, Knm, t, post: Posterior, scale: float = 1.0,
                   marg: tuple[np.ndarray, np.ndarray] | None = None,
                   C: np.ndarray | None = None, sq: np.ndarray | None = None) -> np.ndarray:
    """d ELBO / d log-hyperparameters with q(u) = N(mu, Z) held fixed in the *unwhitened* coordinates
    (the paper's sec. 4.3 / appendix A.3; its printed gradient is garbled, this is derived afresh) and
    alpha at its optimum (so, by the envelope theorem, alpha's dependence on h drops out).

    With A = Kmm^-1, kappa = Knm A, beta = A mu, g_i = dELBO/dB_i = -1 / (2 sqrt B_i) and
    r_i = dELBO/da_i = y_i (1 + (1 - y_i a_i) / sqrt B_i), the differential is
        tr(G_nm^T dKnm) + tr(G_mm^T dKmm) + sum_i g_i dk_ii
    with G_nm = r beta^T + 2 diag(g) (kappa Z A - kappa) and
         G_mm = -(kappa^T r) beta^T - (Q Z A + A Z Q) + Q + (A Z A + beta beta^T - A) / 2,
    where Q = kappa^T diag(g) kappa.
    In whitened terms (Kmm = L L^T, mu = L m, Z = L S L^T) G_nm = H L^-1 and G_mm = L^-T J L^-1 with
        H = r m^T + 2 diag(g) phi (S - I),
        J = -(phi^T r) m^T - (C S + S C) + C + (S + m m^T - I) / 2, C = phi^T diag(g) phi.
    ``marg`` = (a, c), the marginals of phi under ``post``, and ``C``, if the caller has them (the
    natural-gradient step's P_hat = I + s phi^T diag(B^-1/2) phi gives C = -(P_hat - I) / 2), and ``sq``,
    the squared distances behind Knm, for kernels that take them.
    """
    a, c = marginals(phi, post) if marg is None else marg
    B = b_terms(y, a, c, t)
    sqB = np.sqrt(B)
    g = scale * (-0.5 / sqB)
    r = scale * y * (1.0 + (1.0 - y * a) / sqB)
    S = covariance(post)
    m = post.m
    p = m.size
    gphi = g[:, None] * phi
    Linv = geom.Linv
    S_minus_I = S - np.eye(p)
    # G_nm = H L^-1 = r (L^-T m)^T + 2 diag(g) phi ((S - I) L^-1): one n x m x m product instead of two.
    G_nm = np.outer(r, Linv.T @ m) + 2.0 * (gphi @ (S_minus_I @ Linv))
    if C is None:
        C = phi.T @ gphi
    CS = C @ S
    J = -np.outer(phi.T @ r, m) - (CS + CS.T) + C + 0.5 * (S_minus_I + np.outer(m, m))
    G_mm = Linv.T @ J @ Linv
    kern, Z = geom.kernel, geom.inducing
    extra = {} if sq is None else {"sq": sq}
    grad = (kern.grad_contract(X, Z, G_nm, K=Knm, **extra) + kern.grad_contract(Z, Z, 0.5 * (G_mm + G_mm.T))
            + kern.grad_diag_contract(X, g))
    if geom.jitter:
        # Kmm carries jitter I = rel x mean(diag Kmm(theta)) I (geometry.stable_cholesky), which moves
        # with the kernel's variance: its part of tr(G_mm^T dKmm) is tr(G_mm) rel / m d sum(diag Kmm)
        diag = kern.diag(Z)
        rel = geom.jitter / float(np.mean(diag))
        grad = grad + np.trace(G_mm) * rel / Z.shape[0] * kern.grad_diag_contract(Z, np.ones(Z.shape[0]))
    return grad


def reference_elbo_unwhitened(kernel, X, y, inducing, mu, Zcov, jitter=0.0, alpha=None, scale=1.0) -> float:
    """Direct transcription of the closed form in the paper's coordinates (q(u) = N(mu, Z)), with
    explicit solves. Slow and less stable; used by the tests as an independent check."""
    Kmm = kernel(inducing) + jitter * np.eye(len(inducing))
    Knm = kernel(X, inducing)
    kappa = np.linalg.solve(Kmm, Knm.T).T
    a = kappa @ mu
    c = np.einsum("ij,jk,ik->i", kappa, Zcov, kappa)
    t = kernel.diag(X) - np.einsum("ij,ij->i", kappa, Knm)
    m = len(mu)
    _, logdet_K = np.linalg.slogdet(Kmm)
    _, logdet_Z = np.linalg.slogdet(Zcov)
    Kinv_mu = np.linalg.solve(Kmm, mu)
    kl = 0.5 * (np.trace(np.linalg.solve(Kmm, Zcov)) + mu @ Kinv_mu - m + logdet_K - logdet_Z)
    return float(scale * np.sum(data_terms(y, a, c, t, alpha)) - kl)
