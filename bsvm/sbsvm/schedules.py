"""Step sizes: learning-rate schedules for the natural-gradient steps and Adam for hyperparameters."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class AdaptiveRate(NamedTuple):
    """State of the adaptive learning rate of Ranganath et al. (2013):
    rho_t = gbar^T gbar / hbar, with running averages of the natural gradient g and of g^T g over a
    memory tau that shrinks when steps are large (tau <- tau (1 - rho) + 1)."""

    gbar: np.ndarray
    hbar: float
    tau: float


def robbins_monro(t: int, tau: float, kappa: float) -> float:
    """rho_t = (t + tau)^-kappa; sum rho = inf and sum rho^2 < inf for kappa in (0.5, 1]."""
    return float((t + tau) ** (-kappa))


def adaptive_init(grads: list[np.ndarray], tau0: float = 10.0) -> AdaptiveRate:
    """Initialise the averages from a few natural-gradient samples (Ranganath et al., sec. 3)."""
    G = np.stack(grads)
    return AdaptiveRate(G.mean(axis=0), float(np.mean(np.sum(G**2, axis=1))), float(tau0))


def adaptive_step(state: AdaptiveRate, grad: np.ndarray) -> tuple[float, AdaptiveRate]:
    w = 1.0 / state.tau
    gbar = (1.0 - w) * state.gbar + w * grad
    hbar = (1.0 - w) * state.hbar + w * float(grad @ grad)
    rho = float(np.clip(gbar @ gbar / hbar, 1e-6, 1.0)) if hbar > 0 else 1.0
    return rho, AdaptiveRate(gbar, hbar, state.tau * (1.0 - rho) + 1.0)


class Adam(NamedTuple):
    m: np.ndarray
    v: np.ndarray
    t: int


def adam_init(size: int) -> Adam:
    return Adam(np.zeros(size), np.zeros(size), 0)


def adam_ascent(state: Adam, grad: np.ndarray, lr: float, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step *up* the gradient; returns (step, new_state). Adam's per-coordinate scaling keeps
    the noisy minibatch hyperparameter gradients (whose size grows with n) from taking wild steps."""
    t = state.t + 1
    m = b1 * state.m + (1 - b1) * grad
    v = b2 * state.v + (1 - b2) * grad**2
    step = lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return step, Adam(m, v, t)
