"""Generated data sets with a known true p(y = 1 | x), for tests, samples and calibration maps.

Each ``make_*`` returns ``(X, y)`` with y in {0, 1}; the matching ``*_proba(X)`` returns the Bayes
posterior p(y = 1 | x) under the generating model (equal class priors everywhere).
Definitions: Ripley-like mixtures (Ripley 1996), twonorm and ringnorm (Breiman 1996; DELVE), two moons
and XOR; each generator's docstring states its model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp

# ----------------------------------------------------------------------------- helpers


def _labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """Balanced labels in random order (n // 2 of one class, the rest of the other)."""
    y = np.zeros(n, dtype=int)
    y[: n // 2] = 1
    rng.shuffle(y)
    return y


def _log_mix(X: np.ndarray, means: np.ndarray, var: float) -> np.ndarray:
    """log of an equal-weight mixture of isotropic normals N(means_k, var I), up to a shared constant."""
    d2 = ((X[:, None, :] - means[None, :, :]) ** 2).sum(-1)
    return logsumexp(-0.5 * d2 / var, axis=1) - np.log(len(means)) - 0.5 * X.shape[1] * np.log(var)


# ----------------------------------------------------------------------------- Ripley-like mixtures

RIPLEY_MEANS = {0: np.array([[-0.7, 0.3], [0.3, 0.3]]), 1: np.array([[-0.3, 0.7], [0.4, 0.7]])}
RIPLEY_VAR = 0.03


RIPLEY_NOISE = float(np.sqrt(RIPLEY_VAR))


def make_ripley(n_samples: int = 250, random_state=None, noise: float = RIPLEY_NOISE):
    """Ripley (1994)-like: each class an equal mixture of two bivariate normals with covariance
    noise^2 I (noise = sqrt(0.03) by default, Ripley's)."""
    rng = np.random.default_rng(random_state)
    y = _labels(n_samples, rng)
    comp = rng.integers(0, 2, n_samples)
    means = np.where(y[:, None] == 1, RIPLEY_MEANS[1][comp], RIPLEY_MEANS[0][comp])
    X = means + rng.normal(scale=noise, size=(n_samples, 2))
    return X, y


def ripley_log_density(X):
    """log p(x) of the Ripley-like inputs (both classes, equal priors), up to a constant: for masking
    plots and grids to where the data live."""
    X = np.asarray(X, dtype=float)
    return np.logaddexp(_log_mix(X, RIPLEY_MEANS[0], RIPLEY_VAR), _log_mix(X, RIPLEY_MEANS[1], RIPLEY_VAR))


def ripley_proba(X, noise: float = RIPLEY_NOISE):
    X = np.asarray(X, dtype=float)
    var = noise**2
    return expit(_log_mix(X, RIPLEY_MEANS[1], var) - _log_mix(X, RIPLEY_MEANS[0], var))


# ----------------------------------------------------------------------------- twonorm / ringnorm


def make_twonorm(n_samples: int = 1000, n_features: int = 20, random_state=None):
    """Breiman's twonorm: class 1 ~ N(+a 1, I), class 0 ~ N(-a 1, I), a = 2 / sqrt(20).
    Bayes error Phi(-2) = 2.3% for d = 20."""
    rng = np.random.default_rng(random_state)
    a = 2.0 / np.sqrt(20.0)
    y = _labels(n_samples, rng)
    X = rng.standard_normal((n_samples, n_features))
    X += np.where(y == 1, a, -a)[:, None]
    return X, y


def twonorm_proba(X):
    X = np.asarray(X, dtype=float)
    a = 2.0 / np.sqrt(20.0)
    # log N(x; a1, I) - log N(x; -a1, I) = 2 a sum_j x_j
    return expit(2.0 * a * X.sum(axis=1))


def make_ringnorm(n_samples: int = 1000, n_features: int = 20, random_state=None, dtype=np.float64):
    """Breiman's ringnorm (DELVE): class 0 ~ N(0, 4 I), class 1 ~ N(a 1, I), a = 2 / sqrt(20)."""
    rng = np.random.default_rng(random_state)
    a = 2.0 / np.sqrt(20.0)
    y = _labels(n_samples, rng)
    X = rng.standard_normal((n_samples, n_features), dtype=np.float64).astype(dtype, copy=False)
    X[y == 0] *= 2.0
    X[y == 1] += a
    return X, y


def ringnorm_proba(X):
    X = np.asarray(X, dtype=float)
    d = X.shape[1]
    a = 2.0 / np.sqrt(20.0)
    log1 = -0.5 * ((X - a) ** 2).sum(axis=1)
    log0 = -0.5 * (X**2).sum(axis=1) / 4.0 - d * np.log(2.0)
    return expit(log1 - log0)


# ----------------------------------------------------------------------------- two moons

MOONS_NOISE = 0.2
_ARC = np.linspace(0.0, np.pi, 400)


def _moon_arc(label: int) -> np.ndarray:
    if label == 0:
        return np.column_stack([np.cos(_ARC), np.sin(_ARC)])
    return np.column_stack([1.0 - np.cos(_ARC), 0.5 - np.sin(_ARC)])


def make_moons(n_samples: int = 300, noise: float = MOONS_NOISE, random_state=None):
    """Two interleaved half circles (scikit-learn's shape): a uniform angle on the arc plus
    N(0, noise^2 I) noise."""
    rng = np.random.default_rng(random_state)
    y = _labels(n_samples, rng)
    t = rng.uniform(0.0, np.pi, n_samples)
    X = np.where(y[:, None] == 0, np.column_stack([np.cos(t), np.sin(t)]),
                 np.column_stack([1.0 - np.cos(t), 0.5 - np.sin(t)]))
    return X + rng.normal(scale=noise, size=X.shape), y


def moons_proba(X, noise: float = MOONS_NOISE):
    """Class densities are the arcs convolved with the noise; the arc integral uses 400 points."""
    X = np.asarray(X, dtype=float)
    return expit(_log_mix(X, _moon_arc(1), noise**2) - _log_mix(X, _moon_arc(0), noise**2))


# ----------------------------------------------------------------------------- XOR

XOR_CENTRES = {1: np.array([[1.0, 1.0], [-1.0, -1.0]]), 0: np.array([[1.0, -1.0], [-1.0, 1.0]])}
XOR_VAR = 0.5**2
XOR_NOISE = 0.5


def make_xor(n_samples: int = 300, random_state=None, noise: float = XOR_NOISE):
    """XOR: four blobs N(c, noise^2 I) at (+-1, +-1) (noise 0.5 by default); class 1 where the centre's
    coordinates share a sign."""
    rng = np.random.default_rng(random_state)
    y = _labels(n_samples, rng)
    comp = rng.integers(0, 2, n_samples)
    means = np.where(y[:, None] == 1, XOR_CENTRES[1][comp], XOR_CENTRES[0][comp])
    return means + rng.normal(scale=noise, size=(n_samples, 2)), y


def xor_proba(X, noise: float = XOR_NOISE):
    X = np.asarray(X, dtype=float)
    var = noise**2
    return expit(_log_mix(X, XOR_CENTRES[1], var) - _log_mix(X, XOR_CENTRES[0], var))


# ----------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Generator:
    name: str
    make: Callable
    proba: Callable
    description: str


GENERATORS: dict[str, Generator] = {
    "ripley": Generator("ripley", make_ripley, ripley_proba,
                        "Ripley-like: two classes, each a mixture of two Gaussians in 2-D"),
    "twonorm": Generator("twonorm", make_twonorm, twonorm_proba,
                         "Breiman's twonorm: two Gaussians in 20-D, Bayes error 2.3%"),
    "ringnorm": Generator("ringnorm", make_ringnorm, ringnorm_proba,
                          "Breiman's ringnorm: a wide Gaussian around a narrow shifted one, 20-D"),
    "moons": Generator("moons", make_moons, moons_proba, "Two interleaved half circles with Gaussian noise"),
    "xor": Generator("xor", make_xor, xor_proba, "Four Gaussian blobs in an XOR pattern"),
}


def true_proba(name: str, X) -> np.ndarray:
    """p(y = 1 | x) of a generated data set, by generator name."""
    try:
        return GENERATORS[name].proba(X)
    except KeyError:
        raise ValueError(f"No known truth for {name!r}; generated sets are {sorted(GENERATORS)}.") from None
