"""Potential energies of the Bayesian SVM posteriors and their subgradients (Hu, Zhu & Zhang 2016).

Parameters are stored per chain as rows of ``theta`` with shape (n_chains, n_params). A linear score is
``f(x) = w^T x + b`` with the bias LAST in each block: binary models have ``n_params = d + 1``; multi-class
models have ``K`` blocks ``[w_k, b_k]`` (class-major), ``n_params = K (d + 1)``. The bias is never added to
``X`` as a column, so the data are never copied (a minibatch is gathered by row indices only).

Binary (sec. 3.3, eq. 15), with standard normal prior and per-datum pseudo-likelihood
``psi(y | x, theta) = exp(-c max(0, l - y f(x)))``:

    U(theta) = ||theta||^2 / 2 + c * s * sum_{d in batch} max(0, l - y_d f(x_d)),   s = n / |batch|.

Multi-class (eq. 20-21): ``psi(y_d | x_d) = exp(-c max(0, l + max_{y != y_d} f_y(x_d) - f_{y_d}(x_d)))``;
where the hinge is active, the subgradient of U is ``+c x_d`` in block ``y*`` (the best wrong class) and
``-c x_d`` in block ``y_d`` (eq. 21 gives the signs of log psi = -U's data term).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..likelihoods import normalised_hinge


class HingeModel(NamedTuple):
    """The posterior's constants: cost ``c``, margin ``l``, number of classes (2 means the binary model)."""

    c: float
    l: float
    n_classes: int
    n_features: int

    @property
    def n_blocks(self) -> int:
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def n_params(self) -> int:
        return self.n_blocks * (self.n_features + 1)


def _linear(theta_blocks: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Scores (C, m, B) for theta_blocks (C, B, d + 1) and X (m, d) shared or (C, m, d) per chain."""
    W, b = theta_blocks[..., :-1], theta_blocks[..., -1]
    if X.ndim == 2:
        C, B, d = W.shape
        F = (X @ W.reshape(C * B, d).T).reshape(X.shape[0], C, B).transpose(1, 0, 2)
    else:
        F = np.matmul(X, np.swapaxes(W, -1, -2))
    return F + b[:, None, :]


def _contract(G: np.ndarray, X: np.ndarray) -> np.ndarray:
    """sum_m G[c, m, b] [x_m, 1]  -> (C, B, d + 1): the chain rule through the linear score."""
    if X.ndim == 2:
        C, m, B = G.shape
        gw = (G.transpose(0, 2, 1).reshape(C * B, m) @ X).reshape(C, B, X.shape[1])
    else:
        gw = np.matmul(np.swapaxes(G, -1, -2), X)
    return np.concatenate([gw, G.sum(axis=1)[..., None]], axis=-1)


def scores(model: HingeModel, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Linear scores (C, m, n_blocks)."""
    theta = np.atleast_2d(theta)
    return _linear(theta.reshape(theta.shape[0], model.n_blocks, model.n_features + 1), X)


def hinge_losses(model: HingeModel, F: np.ndarray, y: np.ndarray):
    """Per-datum hinge ``max(0, .)`` (C, m), and for multi-class the best wrong class y* (C, m).

    ``y`` is -1/+1 for the binary model, class indices 0..K-1 otherwise (shape (m,) or (C, m))."""
    if model.n_classes == 2:
        return np.maximum(0.0, model.l - y * F[..., 0]), None
    y_idx = np.broadcast_to(y, F.shape[:-1])
    f_true = np.take_along_axis(F, y_idx[..., None], axis=-1)[..., 0]
    wrong = F.copy()
    np.put_along_axis(wrong, y_idx[..., None], -np.inf, axis=-1)
    y_star = np.argmax(wrong, axis=-1)
    f_star = np.take_along_axis(F, y_star[..., None], axis=-1)[..., 0]
    return np.maximum(0.0, model.l + f_star - f_true), y_star


def data_terms(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray):
    """Per-datum c * hinge (C, m) and the per-datum subgradient coefficients G (C, m, n_blocks): the
    data-term subgradient of point d is sum_b G[:, d, b] e_b (x) [x_d, 1] (eq. 15 / 21, sign of U)."""
    theta = np.atleast_2d(theta)
    C = theta.shape[0]
    B, p = model.n_blocks, model.n_features + 1
    F = _linear(theta.reshape(C, B, p), X)
    loss, y_star = hinge_losses(model, F, y)
    active = loss > 0.0
    if model.n_classes == 2:
        G = (-model.c * active * y)[..., None]
    else:
        y_idx = np.broadcast_to(y, F.shape[:-1])
        k = np.arange(B)
        G = (model.c * active)[..., None] * ((y_star[..., None] == k).astype(float) - (y_idx[..., None] == k))
    return model.c * loss, G


def potential_and_grad(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                       scale: float = 1.0):
    """U(theta) and a subgradient, for every chain: returns (U (C,), grad (C, n_params)).

    ``X``/``y`` are the full data (scale 1) or a minibatch with ``scale = n / |batch|`` (eq. 7), given
    either shared by all chains ((m, d), (m,)) or one per chain ((C, m, d), (C, m)). At a kink the
    subgradient chosen is the one-sided value with the hinge inactive (eq. 15's convention)."""
    theta = np.atleast_2d(theta)
    loss, G = data_terms(model, theta, X, y)
    U = 0.5 * np.einsum("cp,cp->c", theta, theta) + scale * loss.sum(axis=1)
    grad = theta + scale * _contract(G, X).reshape(theta.shape)
    return U, grad


class ControlVariate(NamedTuple):
    """Data-term values at a fixed point theta_hat (the mode): full sums and per-datum pieces."""

    theta_hat: np.ndarray  # (p,)
    loss_sum: float  # sum_d c * hinge_d(theta_hat)
    grad_sum: np.ndarray  # (p,) data-term subgradient at theta_hat, full data
    loss: np.ndarray  # (n,) per-datum c * hinge at theta_hat
    G: np.ndarray  # (n, n_blocks) per-datum coefficients at theta_hat


def control_variate(model: HingeModel, theta_hat: np.ndarray, X: np.ndarray, y: np.ndarray) -> ControlVariate:
    loss, G = data_terms(model, theta_hat[None], X, y)
    grad = _contract(G, X).reshape(-1)
    return ControlVariate(np.asarray(theta_hat, float), float(loss.sum()), grad, loss[0], G[0])


def potential_and_grad_cv(model: HingeModel, cv: ControlVariate, theta: np.ndarray, X: np.ndarray,
                          y: np.ndarray, idx: np.ndarray, scale: float):
    """Minibatch estimate with a control variate (Baker et al. 2019, "Control variates for stochastic
    gradient MCMC"): data term = full sum at theta_hat + scale * sum_{d in batch} [term_d(theta) -
    term_d(theta_hat)]. Unbiased like eq. 7; for the hinge the bracket is zero except for points whose
    hinge changed activity between theta_hat and theta, so the noise is far smaller near the posterior."""
    theta = np.atleast_2d(theta)
    loss, G = data_terms(model, theta, X, y)
    U = (0.5 * np.einsum("cp,cp->c", theta, theta) + cv.loss_sum
         + scale * (loss - cv.loss[idx]).sum(axis=1))
    grad = theta + cv.grad_sum + scale * _contract(G - cv.G[idx], X).reshape(theta.shape)
    return U, grad


def potential(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """U(theta) on the full data, (C,)."""
    return potential_and_grad(model, theta, X, y)[0]


def normalised_likelihood(model: HingeModel, F: np.ndarray) -> np.ndarray:
    """psi(y | x) / sum_y' psi(y' | x) for every class, (..., m, n_classes).

    Binary: p(+1) = psi(+1) / (psi(+1) + psi(-1)) (the rule of the paper's sec. 5.1.1 data generator).
    Multi-class: a softmax over classes of -c max(0, l + max_{y' != y} f_y' - f_y), which equals the binary
    rule when K = 2 and f = f_1 - f_0."""
    if model.n_classes == 2:
        p1 = normalised_hinge(F[..., 0], c=model.c, l=model.l)  # bsvm.likelihoods (docs/shared.md)
        return np.stack([1.0 - p1, p1], axis=-1)
    K = F.shape[-1]
    logits = np.empty_like(F)
    for k in range(K):  # K is small; each pass is vectorised over chains, samples and points
        others = np.delete(F, k, axis=-1).max(axis=-1)
        logits[..., k] = -model.c * np.maximum(0.0, model.l + others - F[..., k])
    logits -= logits.max(axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=-1, keepdims=True)
