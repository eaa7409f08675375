"""Subgradient MCMC for Bayesian SVMs (Hu, Zhu & Zhang 2016) and an exact Gibbs reference sampler."""

from .estimator import GibbsSVM, SubgradientHMC

__all__ = ["SubgradientHMC", "GibbsSVM"]
