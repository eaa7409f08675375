"""bsvm: Bayesian support vector machines as scikit-learn estimators.

Methods: SBSVM (Wenzel et al. 2017), MSBPM (Vogt & Ostermann), SubgradientHMC and GibbsSVM (Hu, Zhu &
Zhang 2016; Polson & Scott 2011), SeegerARD (Seeger 2000), and the PlattSVM baseline. All follow one
contract: ``fit``, ``fit_iter`` (live progress records), ``predict_proba``, ``history_``.

The estimators are imported on first use (PEP 562), so ``import bsvm.data`` or ``bsvm.datasets`` stays
light: the dashboard's Data page opens without loading scikit-learn or any method.
"""

import importlib

_EXPORTS = {
    "Progress": ".base",
    "PlattSVM": ".platt",
    "SBSVM": ".sbsvm",
    "MSBPM": ".msbpm",
    "SubgradientHMC": ".subgradient",
    "GibbsSVM": ".subgradient",
    "SeegerARD": ".seeger",
}

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bsvm' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
