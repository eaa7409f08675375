import pytest

from bsvm.datasets import make_ripley


@pytest.fixture(scope="session")
def ripley_small():
    """A small Ripley-like training set (60 points) for fast exact checks."""
    return make_ripley(60, random_state=11)
