"""bsvm: Bayesian support vector machines as scikit-learn estimators.

Methods: SBSVM (Wenzel et al. 2017) and the PlattSVM baseline; MSBPM, SubgradientHMC, GibbsSVM and
SeegerARD follow the same contract (``fit``, ``fit_iter``, ``predict_proba``, ``history_``).
"""

from .base import Progress
from .msbpm import MSBPM
from .platt import PlattSVM
from .sbsvm import SBSVM
from .subgradient import GibbsSVM, SubgradientHMC

__all__ = ["Progress", "PlattSVM", "SBSVM", "MSBPM", "SubgradientHMC", "GibbsSVM"]
__version__ = "0.1.0"
