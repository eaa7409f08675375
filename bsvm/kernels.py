"""Covariance kernels with gradients w.r.t. their (log) hyperparameters.

Kernels are small immutable objects. Hyperparameters are exposed as ``theta``, the natural log of the
positive parameters (so unconstrained optimisers keep them positive), and gradients are returned as
*contractions*: ``grad_contract(X, Y, G)[j] = sum_ab G_ab dK_ab / dtheta_j``. Objectives only ever need
these traces (e.g. tr(A dK)), and contracting avoids storing one n x m matrix per hyperparameter, which
matters for ARD with many features.

Conventions (GP literature, not the S-BSVM paper's footnote, which drops a square and the 1/2):
    RBF:      k(x, x') = s2 exp(-||x - x'||^2 / (2 l^2))
    ARD-RBF:  k(x, x') = s2 exp(-sum_j (x_j - x'_j)^2 / (2 l_j^2))
    Linear:   k(x, x') = s2 x.x' + b2
    Constant: k(x, x') = c
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


def sq_dist(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Pairwise squared Euclidean distances, BLAS-friendly (||x||^2 + ||y||^2 - 2 x.y), clipped at 0."""
    d = np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", Y, Y)[None, :] - 2.0 * (X @ Y.T)
    np.maximum(d, 0.0, out=d)
    return d


def _weighted_sq_dist_per_dim(X: np.ndarray, Y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """sum_ab W_ab (X_aj - Y_bj)^2 for every feature j, without forming the n x m x d tensor."""
    r = W.sum(axis=1)
    c = W.sum(axis=0)
    return (X * X).T @ r + (Y * Y).T @ c - 2.0 * np.einsum("aj,aj->j", X, W @ Y)


class Kernel:
    """Interface. Subclasses are frozen dataclasses of positive parameters."""

    param_names: tuple[str, ...] = ()
    #: a finite-dimensional feature space (linear, constant): d + 1 inducing points represent the kernel
    #: exactly, and S-BSVM's jitter on their kernel matrix would leave a residual variance it does not have
    finite_rank = False

    def __call__(self, X, Y=None) -> np.ndarray:
        raise NotImplementedError

    def diag(self, X) -> np.ndarray:
        raise NotImplementedError

    @property
    def theta(self) -> np.ndarray:
        values = [np.atleast_1d(getattr(self, p)).astype(float) for p in self.param_names]
        return np.log(np.concatenate(values))

    def with_theta(self, theta) -> Kernel:
        theta = np.asarray(theta, dtype=float)
        values, k = {}, 0
        for p in self.param_names:
            cur = np.atleast_1d(getattr(self, p))
            size = cur.size
            v = np.exp(theta[k:k + size])
            values[p] = v if np.ndim(getattr(self, p)) else float(v[0])
            k += size
        return replace(self, **values)

    def grad_contract(self, X, Y, G, K=None) -> np.ndarray:
        """sum_ab G_ab dK_ab / dtheta_j; ``K`` = self(X, Y) if the caller already has it."""
        raise NotImplementedError

    def grad_diag_contract(self, X, g) -> np.ndarray:
        """sum_a g_a d k(x_a, x_a) / dtheta_j."""
        raise NotImplementedError

    def __add__(self, other: Kernel) -> Kernel:
        return SumKernel(self, other)

    def describe(self) -> dict[str, float]:
        """Flat name -> value map for progress records and tables."""
        out = {}
        for p in self.param_names:
            v = getattr(self, p)
            if np.ndim(v):
                out.update({f"{p}[{j}]": float(x) for j, x in enumerate(np.ravel(v))})
            else:
                out[p] = float(v)
        return out


@dataclass(frozen=True)
class RBF(Kernel):
    lengthscale: float = 1.0
    variance: float = 1.0
    param_names = ("lengthscale", "variance")

    def __call__(self, X, Y=None, sq=None):
        """``sq``: sq_dist(X, Y) if the caller keeps it (fixed inputs, changing hyperparameters)."""
        Y = X if Y is None else Y
        K = sq_dist(X, Y) if sq is None else sq.copy()
        K *= -0.5 / self.lengthscale**2
        np.exp(K, out=K)
        K *= self.variance
        return K

    def diag(self, X):
        return np.full(X.shape[0], float(self.variance))

    def grad_contract(self, X, Y, G, K=None, sq=None):
        Y = X if Y is None else Y
        if K is None:
            K = self(X, Y, sq=sq)
        GK = G * K
        d_var = GK.sum()
        if sq is not None:  # dK/dlog l = K r^2 / l^2, with r^2 at hand
            return np.array([np.sum(GK * sq) / self.lengthscale**2, d_var])
        # dK/dlog l = K * r^2 / l^2, and r^2 / l^2 = -2 log(K / s2): recovered from K instead of a second
        # pass over the distances. Where K underflows, K log K -> 0, so the floor changes nothing.
        d_len = -2.0 * np.sum(GK * np.log(np.maximum(K / self.variance, 1e-300)))
        return np.array([d_len, d_var])

    def grad_diag_contract(self, X, g):
        return np.array([0.0, float(np.sum(g)) * self.variance])


@dataclass(frozen=True)
class ARDRBF(Kernel):
    lengthscales: np.ndarray = None  # one per feature
    variance: float = 1.0
    param_names = ("lengthscales", "variance")

    def __post_init__(self):
        if self.lengthscales is None:
            raise ValueError("ARDRBF needs lengthscales, one per feature.")
        object.__setattr__(self, "lengthscales", np.asarray(self.lengthscales, dtype=float).ravel())

    def __call__(self, X, Y=None):
        Y = X if Y is None else Y
        return RBF(1.0, self.variance)(X / self.lengthscales, Y / self.lengthscales)

    def diag(self, X):
        return np.full(X.shape[0], float(self.variance))

    def grad_contract(self, X, Y, G, K=None):
        Y = X if Y is None else Y
        Xs, Ys = X / self.lengthscales, Y / self.lengthscales
        GK = G * (RBF(1.0, self.variance)(Xs, Ys) if K is None else K)
        # dK/dlog l_j = K (x_j - y_j)^2 / l_j^2
        d_len = _weighted_sq_dist_per_dim(Xs, Ys, GK)
        return np.concatenate([d_len, [GK.sum()]])

    def grad_diag_contract(self, X, g):
        return np.concatenate([np.zeros(self.lengthscales.size), [float(np.sum(g)) * self.variance]])


@dataclass(frozen=True)
class Linear(Kernel):
    variance: float = 1.0
    bias: float = 1.0
    param_names = ("variance", "bias")
    finite_rank = True

    def __call__(self, X, Y=None):
        Y = X if Y is None else Y
        return self.variance * (X @ Y.T) + self.bias

    def diag(self, X):
        return self.variance * np.einsum("ij,ij->i", X, X) + self.bias

    def grad_contract(self, X, Y, G, K=None):
        Y = X if Y is None else Y
        return np.array([self.variance * np.einsum("ij,ij->", G @ Y, X), self.bias * G.sum()])

    def grad_diag_contract(self, X, g):
        return np.array([self.variance * g @ np.einsum("ij,ij->i", X, X), self.bias * np.sum(g)])


@dataclass(frozen=True)
class Constant(Kernel):
    value: float = 1.0
    param_names = ("value",)
    finite_rank = True

    def __call__(self, X, Y=None):
        Y = X if Y is None else Y
        return np.full((X.shape[0], Y.shape[0]), float(self.value))

    def diag(self, X):
        return np.full(X.shape[0], float(self.value))

    def grad_contract(self, X, Y, G, K=None):
        return np.array([self.value * G.sum()])

    def grad_diag_contract(self, X, g):
        return np.array([self.value * np.sum(g)])


@dataclass(frozen=True)
class SumKernel(Kernel):
    left: Kernel = None
    right: Kernel = None

    @property
    def finite_rank(self) -> bool:
        return bool(self.left.finite_rank and self.right.finite_rank)

    @property
    def theta(self):
        return np.concatenate([self.left.theta, self.right.theta])

    def with_theta(self, theta):
        k = self.left.theta.size
        return SumKernel(self.left.with_theta(theta[:k]), self.right.with_theta(theta[k:]))

    def __call__(self, X, Y=None, **kw):
        # keyword options (an RBF's precomputed ``sq``) go to the left kernel only
        K = self.left(X, Y, **kw)
        if type(self.right) is Constant:
            K += self.right.value
            return K
        return K + self.right(X, Y)

    def diag(self, X):
        return self.left.diag(X) + self.right.diag(X)

    def grad_contract(self, X, Y, G, K=None, **kw):
        # Given the sum's K, the left part is K minus the right part (cheap when the right part is a
        # Constant, the usual bias term), so the left kernel is not evaluated again.
        if K is None:
            KL = None
        elif type(self.right) is Constant:
            KL = K - self.right.value
        else:
            KL = K - self.right(X, Y)
        return np.concatenate([self.left.grad_contract(X, Y, G, K=KL, **kw),
                               self.right.grad_contract(X, Y, G)])

    def grad_diag_contract(self, X, g):
        return np.concatenate([self.left.grad_diag_contract(X, g), self.right.grad_diag_contract(X, g)])

    def describe(self):
        return {**{f"k1.{k}": v for k, v in self.left.describe().items()},
                **{f"k2.{k}": v for k, v in self.right.describe().items()}}


def accepts_sq_dist(kernel: Kernel) -> bool:
    """Whether ``kernel(X, Y, sq=...)`` and ``grad_contract(..., sq=...)`` take precomputed squared
    distances: an RBF, alone or plus a Constant."""
    if isinstance(kernel, SumKernel):
        return isinstance(kernel.left, RBF) and type(kernel.right) is Constant
    return type(kernel) is RBF


def make_kernel(spec, n_features: int, lengthscale: float | None = None, variance: float = 1.0) -> Kernel:
    """Build a kernel from a name ("rbf", "ard", "linear") or pass a Kernel instance through.

    The default length scale is sqrt(n_features), a sensible scale for standardised inputs.
    """
    if isinstance(spec, Kernel):
        return spec
    ls = float(np.sqrt(n_features)) if lengthscale is None else float(lengthscale)
    if spec == "rbf":
        return RBF(ls, variance)
    if spec in ("ard", "ard_rbf", "ardrbf"):
        return ARDRBF(np.full(n_features, ls), variance)
    if spec == "linear":
        return Linear(variance, 1.0)
    raise ValueError(f"Unknown kernel {spec!r}: use 'rbf', 'ard', 'linear' or a "
                     "bsvm.kernels.Kernel instance.")
