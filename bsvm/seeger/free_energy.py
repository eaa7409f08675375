"""The variational free energy of Seeger (2000), sec. 2, and its analytic gradients.

Model: y ~ N(0, K_theta + jitter C I) (eq. 8 kernel plus a nugget relative to its amplitude C),
loss g(t_i, y_i) (``losses``).
Variational family (sec. 2): q(y) = N(mu, Sigma), Sigma = D + sum_{j<=M} c_j c_j^T, D diagonal positive.

    F(q, theta) = sum_i E_q[g(t_i, y_i)] + KL(q || N(0, K))                                    (eq. 5)
    KL = 1/2 [ tr(K^-1 Sigma) + mu' K^-1 mu - n + log|K| - log|Sigma| ]

Matrix algebra (one Cholesky K = L L' per theta, the rest O(n^2 M)):
* log|Sigma| = sum_i log D_i + log|A|, A = I_M + Cf' D^-1 Cf (matrix determinant lemma);
* Sigma^-1 = D^-1 - D^-1 Cf A^-1 Cf' D^-1 (Woodbury), so Sigma^-1 Cf = D^-1 Cf A^-1 and
  diag(Sigma^-1)_i = 1/D_i - (D^-1 Cf)_i A^-1 (D^-1 Cf)_i';
* marginal variances s_i^2 = D_i + sum_j Cf_ij^2.

Parametrisation for the inner optimisation: mu = L a and Cf = L B (``whitened``; the same family, but
the KL's quadratic terms become ||a||^2 and ||B||^2, so conjugate gradients is well conditioned however
ill-conditioned K is), and h = log sqrt(D), the log standard deviations of the diagonal part (in log D
the CG took 1.3-1.5x the evaluations for the same F: twonorm, n = 100-500). The gradient w.r.t. theta
is taken with q fixed in y-space (mu, D, Cf): dF/dK = 1/2 [K^-1 - K^-1 (Sigma + mu mu') K^-1],
contracted with dK/dtheta. At the inner optimum this is the total derivative of min_q F (envelope
theorem), which is what the outer loop needs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dpotri

from .losses import expected_loss

JITTER = 1e-6   # relative to the amplitude C: keeps the Cholesky of a smooth kernel stable


class Prior(NamedTuple):
    """Everything F needs from one kernel setting: computed once per theta."""

    K: np.ndarray           # n x n prior covariance (jitter included)
    L: np.ndarray           # lower Cholesky factor
    Kinv: np.ndarray        # K^-1 (full; for diag(K^-1), the theta gradient and predictions)
    logdet: float           # log|K|


class QParams(NamedTuple):
    """q in y-space: mean, log of the diagonal D, factor loadings Cf (n x M)."""

    mu: np.ndarray
    log_d: np.ndarray
    Cf: np.ndarray


def prior_covariance(kernel, X, jitter=JITTER) -> np.ndarray:
    """K(theta) + jitter * C * I (the nugget: see ``SeegerKernel.nugget``)."""
    K = kernel(X)
    K[np.diag_indices_from(K)] += kernel.nugget(jitter)
    return K


def make_prior(kernel, X, jitter=JITTER) -> Prior:
    K = prior_covariance(kernel, X, jitter)
    L = cholesky(K, lower=True, check_finite=False)
    inv, info = dpotri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri failed with info={info}")
    # dpotri fills the lower triangle and keeps L's zero upper one (``cholesky`` zeroes it): the full
    # K^-1 is inv + inv' less the diagonal counted twice, one n x n temporary (np.tril made three)
    Kinv = inv + inv.T
    Kinv[np.diag_indices_from(Kinv)] = np.diag(inv)
    return Prior(K, L, Kinv, 2.0 * float(np.sum(np.log(np.diag(L)))))


def whiten(prior: Prior, q: QParams):
    """(a, B) with mu = L a, Cf = L B."""
    a = solve_triangular(prior.L, q.mu, lower=True, check_finite=False)
    B = solve_triangular(prior.L, q.Cf, lower=True, check_finite=False)
    return a, B


def pack(a, log_d, B) -> np.ndarray:
    """The inner loop's vector z = (a, h, B), h = log sqrt(D) = log_d / 2."""
    return np.concatenate([a, 0.5 * log_d, B.ravel()])


def unpack(z, n, M):
    """(a, log D, B) from z (the inverse of ``pack``)."""
    return z[:n], 2.0 * z[n:2 * n], z[2 * n:].reshape(n, M)


def _factor_terms(D, Cf):
    """log|A| and Sigma^-1 Cf (= D^-1 Cf A^-1), diag(Sigma^-1), via the determinant lemma and Woodbury."""
    M = Cf.shape[1]
    DiC = Cf / D[:, None]
    if M == 0:
        return 0.0, DiC, 1.0 / D
    A = np.eye(M) + Cf.T @ DiC           # M x M, eigenvalues >= 1: plain numpy (scipy's wrappers cost more)
    logdet_A = float(np.linalg.slogdet(A)[1])
    SinvC = DiC @ np.linalg.inv(A)
    sinv_diag = 1.0 / D - np.einsum("ij,ij->i", DiC, SinvC)
    return logdet_A, SinvC, sinv_diag


def lower_product(L: np.ndarray, X: np.ndarray, transpose: bool = False) -> np.ndarray:
    """L X (or L' X with ``transpose``) for the lower-triangular Cholesky factor L: BLAS trmm, which
    reads only L's lower half. Each objective evaluation makes two such passes over the n x n factor,
    and they are most of its cost (n = 3,000, one thread, 2-5 columns: 3.7-4.7 ms against 6.1-6.4 ms
    for the general product). scipy's ``cholesky`` returns L column-major, which trmm reads in place;
    any other layout takes the general product (a copy of L per call would cost more than it saves)."""
    if not (L.flags.f_contiguous and L.dtype == np.float64) or X.ndim == 1 or X.shape[1] == 1:
        # (one column, n_factors=0: the general matrix-vector product is faster, 1.9-2.3 ms against
        # 3.0-3.8 ms for trmm at n = 3,000)
        return (L.T if transpose else L) @ X
    return dtrmm(1.0, L, np.asfortranarray(X, dtype=np.float64), side=0, lower=1,
                 trans_a=int(transpose))


def objective(z, prior: Prior, t, loss: str, M: int):
    """F and its gradient w.r.t. the whitened variational vector z = (a, log sqrt(D), B). O(n^2 M)."""
    n = t.size
    a, log_d, B = unpack(z, n, M)
    L = prior.L
    # one product with L for mu and Cf together, and one with L' for their gradients: at n ~ 1000 these
    # two passes over the n x n factor are most of the cost of an evaluation
    LaB = lower_product(L, np.column_stack([a, B]))
    mu, Cf = LaB[:, 0], LaB[:, 1:]
    D = np.exp(log_d)
    s2 = D + np.einsum("ij,ij->i", Cf, Cf)
    e, dm, dv = expected_loss(loss, t, mu, s2)
    logdet_A, SinvC, sinv_diag = _factor_terms(D, Cf)
    kinv_diag = np.diag(prior.Kinv)
    F = float(np.sum(e)) + 0.5 * (kinv_diag @ D + np.sum(B * B) + a @ a - n + prior.logdet
                                  - np.sum(log_d) - logdet_A)
    g_aB = lower_product(L, np.column_stack([dm, 2.0 * dv[:, None] * Cf - SinvC]), transpose=True)
    g_a = g_aB[:, 0] + a
    g_logd = D * (dv + 0.5 * kinv_diag - 0.5 * sinv_diag)
    g_B = g_aB[:, 1:] + B
    return F, np.concatenate([g_a, 2.0 * g_logd, g_B.ravel()])       # dF/dh = 2 dF/dlog D


def free_energy(prior: Prior, q: QParams, t, loss: str) -> float:
    a, B = whiten(prior, q)
    return objective(pack(a, q.log_d, B), prior, t, loss, q.Cf.shape[1])[0]


def theta_gradient(kernel, X, prior: Prior, q: QParams, jitter=JITTER) -> np.ndarray:
    """dF/dtheta (log parameters) with q fixed in y-space: sum_ab G_ab dK_ab/dtheta,
    G = 1/2 [K^-1 - K^-1 (Sigma + mu mu') K^-1]."""
    Kinv = prior.Kinv
    n, M = q.Cf.shape
    # K^-1 (Sigma + mu mu') K^-1 = W W' with W = [K^-1 D^1/2, K^-1 Cf, K^-1 mu]: one symmetric rank-k
    # product (numpy calls syrk for W @ W.T), half the flops of forming (K^-1 D) K^-1 by gemm
    W = np.empty((n, n + M + 1))
    np.multiply(Kinv, np.exp(0.5 * q.log_d), out=W[:, :n])
    W[:, n:] = Kinv @ np.column_stack([q.Cf, q.mu])
    G = W @ W.T
    np.subtract(Kinv, G, out=G)
    G *= 0.5
    trace_G = float(np.trace(G))
    # prior.K holds the kernel's exponentials (grad_contract reads them off it rather than recomputing
    # them) but also the nugget on its diagonal, which K = kernel(X) has not: read as kernel values it adds
    # nugget * tr(G) to the log C component (dK_aa / dlog C = K_aa), taken out here before the nugget's
    # own gradient is added
    g = kernel.grad_contract(X, X, G, K=prior.K)
    g[-2] -= kernel.nugget(jitter) * trace_G
    return g + kernel.grad_nugget(jitter, trace_G)
