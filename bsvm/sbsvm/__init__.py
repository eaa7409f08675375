"""S-BSVM: stochastic variational inference for the Bayesian nonlinear SVM (Wenzel et al. 2017).

Parts: ``geometry`` (whitened inducing-point / linear feature maps), ``elbo`` (closed-form bound and its
hyperparameter gradient), ``schedules`` (learning rates and Adam), ``engine`` (init/step), ``predictive``
(probit and hinge-quadrature predictive), ``estimator`` (the scikit-learn ``SBSVM``).
"""

from .estimator import SBSVM

__all__ = ["SBSVM"]
