"""MS-BPM: the multi-class soft-margin Bayes point machine with adaptive direction sampling
(Vogt & Ostermann). ``likelihood`` holds eq. 4, ``line`` the exact univariate sampler of sec. 4.2,
``engine`` the population sampler of sec. 4.3, ``estimator`` the scikit-learn estimator."""

from .estimator import MSBPM

__all__ = ["MSBPM"]
