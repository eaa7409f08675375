"""Seeger (2000): variational Bayesian model selection with ARD kernels for SVC and GP classifiers.

Modules: ``kernel`` (eq. 8), ``losses`` (1-D expectations of eq. 6), ``free_energy`` (F of sec. 2 and its
gradients), ``engine`` (nested CG / quasi-Newton optimisation), ``estimator`` (``SeegerARD``).
"""

from .estimator import SeegerARD
from .kernel import SeegerKernel

__all__ = ["SeegerARD", "SeegerKernel"]
