"""bsvm.diagnostics.rank_diagnostics (the stopping rule's vectorised R-hat / bulk / tail ESS) against
arviz-stats, the implementation it must reproduce."""

import numpy as np
import pytest

from bsvm._arviz import array_stats
from bsvm.diagnostics import rank_diagnostics


@pytest.mark.parametrize("shape", [(7, 4, 101), (3, 2, 9), (4, 1, 50), (3, 8, 400)])
def test_rank_diagnostics_equal_arviz(shape):
    rng = np.random.default_rng(sum(shape))
    K, C, D = shape
    # autocorrelated chains with a chain offset (R-hat > 1), ties, and a 0/1 quantity
    x = rng.normal(size=shape).cumsum(axis=-1) * 0.2 + rng.normal(size=shape)
    x += 0.3 * np.arange(C)[None, :, None]
    x[0] = np.round(x[0], 1)
    x[1] = (x[1] > 0.5).astype(float)
    r, b, t = rank_diagnostics(x)
    np.testing.assert_allclose(b, array_stats.ess(x, method="bulk"), rtol=1e-10)
    np.testing.assert_allclose(t, array_stats.ess(x, method="tail", prob=(0.05, 0.95)), rtol=1e-10)
    if C >= 2:
        np.testing.assert_allclose(r, array_stats.rhat(x, method="rank"), rtol=1e-10)
    else:
        assert np.isnan(r).all()
