"""Import-and-fit smoke test of an installed (non-editable) bsvm, run by .ci/run from a fresh venv.

Run it from a directory outside the repository, so ``import bsvm`` finds the installed wheel only.
Checks: the package imports no dashboard, plotting or browser code; the shipped sample CSVs load through
``importlib.resources``; every estimator fits a sample and returns valid probabilities.
"""

import sys

import numpy as np

import bsvm
from bsvm.samples import SAMPLES, load_sample

assert "site-packages" in bsvm.__file__, f"bsvm imported from {bsvm.__file__}, not the installed wheel"
from bsvm import MSBPM, SBSVM, GibbsSVM, PlattSVM, SeegerARD, SubgradientHMC  # noqa: E402

heavy = sorted({m.split(".")[0] for m in sys.modules} & {"streamlit", "plotly", "dashboard", "playwright",
                                                          "benchmarks", "torch", "jax"})
assert not heavy, f"import bsvm pulled in {heavy}"
for name in SAMPLES:
    load_sample(name)
data = load_sample("ripley.csv")
X, y = np.asarray(data.X)[:120], np.asarray(data.y)[:120]
for cls in [SBSVM, MSBPM, SubgradientHMC, GibbsSVM, SeegerARD, PlattSVM]:
    est = cls()
    if "random_state" in est.get_params():  # SeegerARD is deterministic
        est.set_params(random_state=0)
    p = est.fit(X, y).predict_proba(X)
    assert p.shape == (len(X), 2) and np.all(np.isfinite(p)) and np.allclose(p.sum(1), 1.0), type(est)
    print(f"{type(est).__name__}: training accuracy {np.mean(est.predict(X) == y):.3f}")
print(f"wheel smoke test passed: {len(SAMPLES)} samples, 6 estimators")
