"""Sampling engines: subgradient HMC (eq. 9), SSGLD (eq. 13) and SSGNHT (eq. 14) of Hu, Zhu & Zhang (2016).

BlackJAX style: ``init`` builds a small immutable state, ``step(rng, state, potential_fn, ...)`` returns
``(state, info)``. Every array carries a leading chain axis, so all chains advance in one vectorised call
(each chain has its own minibatches, momenta and noise, so they stay independent).

``potential_fn(theta) -> (U, grad)`` returns the (possibly minibatch-estimated) potential and a
subgradient for every chain. ``L`` is a constant preconditioner factor (``M^-1 = L L^T``): ``None``
(identity, the paper's form), a vector (diagonal) or a (p, p) matrix. Each engine is the paper's update
written in the whitened coordinates ``theta = L z``, which is an exact reparametrisation: the target is
unchanged, only the geometry the dynamics sees.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def apply_factor(L, v: np.ndarray) -> np.ndarray:
    """Rows of ``v`` mapped by L (z-space -> theta-space)."""
    if L is None:
        return v
    return L * v if np.ndim(L) == 1 else v @ L.T


def apply_factor_t(L, g: np.ndarray) -> np.ndarray:
    """Rows of ``g`` mapped by L^T (theta-space gradient -> z-space gradient)."""
    if L is None:
        return g
    return L * g if np.ndim(L) == 1 else g @ L


def _col(x, n_chains: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, dtype=float), (n_chains,))[:, None]


# --------------------------------------------------------------------------- subgradient HMC with MH (eq. 9)
class HMCState(NamedTuple):
    theta: np.ndarray  # (C, p)
    U: np.ndarray  # (C,) potential at theta (full data)
    grad: np.ndarray  # (C, p) subgradient at theta


class HMCInfo(NamedTuple):
    accept_prob: np.ndarray  # (C,) min(1, exp(-dH))
    accepted: np.ndarray  # (C,) bool
    energy_change: np.ndarray  # (C,) H(proposal) - H(current)
    step_size: np.ndarray  # (C,) step sizes used (after jitter)


def hmc_init(theta: np.ndarray, potential_fn) -> HMCState:
    U, g = potential_fn(theta)
    return HMCState(theta, U, g)


def hmc_step(rng: np.random.Generator, state: HMCState, potential_fn, step_size, n_leapfrog: int,
             L=None, jitter: float = 0.2) -> tuple[HMCState, HMCInfo]:
    """One HMC transition: r ~ N(0, I) in z-space, ``n_leapfrog`` leapfrog steps of eq. 9 with the
    subgradient, then the Metropolis-Hastings test on H = U + |r|^2 / 2 (the correction that makes the
    full-batch sampler exact up to the measure-zero kinks). The step is jittered by +-``jitter`` per
    transition to avoid periodic trajectories."""
    C = state.theta.shape[0]
    h = _col(step_size, C) * rng.uniform(1.0 - jitter, 1.0 + jitter, size=(C, 1))
    r = rng.standard_normal(state.theta.shape)
    H0 = state.U + 0.5 * np.einsum("cp,cp->c", r, r)
    theta, g = state.theta, state.grad
    r = r - 0.5 * h * apply_factor_t(L, g)
    for i in range(n_leapfrog):
        theta = theta + h * apply_factor(L, r)
        U, g = potential_fn(theta)
        r = r - (h if i < n_leapfrog - 1 else 0.5 * h) * apply_factor_t(L, g)
    H1 = U + 0.5 * np.einsum("cp,cp->c", r, r)
    dH = np.where(np.isfinite(H1), H1 - H0, np.inf)
    accept_prob = np.exp(np.minimum(0.0, -dH))
    accepted = rng.uniform(size=C) < accept_prob
    a = accepted[:, None]
    new = HMCState(np.where(a, theta, state.theta), np.where(accepted, U, state.U),
                   np.where(a, g, state.grad))
    return new, HMCInfo(accept_prob, accepted, dH, h[:, 0])


class DualAveraging(NamedTuple):
    """Per-chain dual-averaging step-size adaptation (Hoffman & Gelman 2014, sec. 3.2.1)."""

    log_step: np.ndarray
    log_step_bar: np.ndarray
    h_bar: np.ndarray
    t: int
    mu: np.ndarray


def dual_averaging_init(step_size: np.ndarray) -> DualAveraging:
    s = np.log(np.asarray(step_size, dtype=float))
    return DualAveraging(s, s.copy(), np.zeros_like(s), 0, np.log(10.0) + s)


def dual_averaging_update(da: DualAveraging, accept_prob: np.ndarray, target: float,
                          gamma: float = 0.05, t0: float = 10.0, kappa: float = 0.75) -> DualAveraging:
    t = da.t + 1
    h_bar = (1.0 - 1.0 / (t + t0)) * da.h_bar + (target - accept_prob) / (t + t0)
    log_step = da.mu - np.sqrt(t) / gamma * h_bar
    w = t ** (-kappa)
    return DualAveraging(log_step, w * log_step + (1.0 - w) * da.log_step_bar, h_bar, t, da.mu)


# --------------------------------------------------------------------------- SSGLD (eq. 13)
class SGLDState(NamedTuple):
    theta: np.ndarray  # (C, p)


class SGInfo(NamedTuple):
    U: np.ndarray  # (C,) minibatch estimate of the potential at the pre-step theta
    step_size: float
    xi: np.ndarray | None  # thermostat (SSGNHT only)


def sgld_init(theta: np.ndarray) -> SGLDState:
    return SGLDState(np.asarray(theta, dtype=float))


def sgld_step(rng: np.random.Generator, state: SGLDState, potential_fn, step_size: float,
              L=None) -> tuple[SGLDState, SGInfo]:
    """theta' = theta - (h^2 / 2) L L^T dU~(theta) + h L nu, nu ~ N(0, I).

    The stochastic subgradient is evaluated at theta_t: eq. 13 prints theta_{t+1}, a misprint (the update
    would otherwise be implicit; see docs/subgradient.md)."""
    U, g = potential_fn(state.theta)
    h = float(step_size)
    z_move = -0.5 * h * h * apply_factor_t(L, g) + h * rng.standard_normal(g.shape)
    return SGLDState(state.theta + apply_factor(L, z_move)), SGInfo(U, h, None)


# --------------------------------------------------------------------------- SSGNHT (eq. 14)
class SGNHTState(NamedTuple):
    theta: np.ndarray  # (C, p)
    r: np.ndarray  # (C, p) momentum (z-space)
    xi: np.ndarray  # (C,) thermostat


def sgnht_init(rng: np.random.Generator, theta: np.ndarray, diffusion: float) -> SGNHTState:
    """r_0 ~ N(0, I) and xi_0 = A, as in the paper (sec. 2.4)."""
    theta = np.asarray(theta, dtype=float)
    return SGNHTState(theta, rng.standard_normal(theta.shape), np.full(theta.shape[0], float(diffusion)))


def sgnht_step(rng: np.random.Generator, state: SGNHTState, potential_fn, step_size: float,
               diffusion: float, L=None) -> tuple[SGNHTState, SGInfo]:
    """r' = r - h xi r - h L^T dU~(theta) + sqrt(2 A h) nu;  theta' = theta + h L r';
    xi' = xi + h (r'^T r' / n - 1).

    The thermostat uses the updated momentum r', as in Ding et al. (2014) / the paper's eq. 8 (eq. 14
    prints r_t there; with r_t the thermostat lags one step and the same invariant law is targeted)."""
    U, g = potential_fn(state.theta)
    h = float(step_size)
    n = state.theta.shape[1]
    r = (state.r - h * state.xi[:, None] * state.r - h * apply_factor_t(L, g)
         + np.sqrt(2.0 * diffusion * h) * rng.standard_normal(g.shape))
    theta = state.theta + h * apply_factor(L, r)
    xi = state.xi + h * (np.einsum("cp,cp->c", r, r) / n - 1.0)
    return SGNHTState(theta, r, xi), SGInfo(U, h, xi)


def polynomial_step(h0: float, t: int, b: float, gamma: float) -> float:
    """h_t = h0 (1 + t / b)^-gamma (Welling & Teh 2011's schedule, as used for SSGLD)."""
    return float(h0 * (1.0 + t / b) ** (-gamma))
