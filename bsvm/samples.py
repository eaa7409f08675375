"""The sample CSVs shipped in ``sample_data/`` and what is known about each.

``scripts/make_sample_data.py`` writes the files from :mod:`bsvm.datasets` and scikit-learn's bundled
sets; this module lists them for the dashboard and for scripts, with the generator that knows the true
p(y = 1 | x) where there is one. The repository keeps them in its top-level ``sample_data/``; the wheel
ships that folder as the package ``bsvm.sample_data`` (see pyproject.toml), so they are read with
:mod:`importlib.resources` and load the same from a checkout, an editable or a regular install.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # bsvm.data imports pandas (~0.3 s): listing the samples must not wait for it
    from .data import LoadedCSV


@dataclass(frozen=True)
class Sample:
    file: str
    title: str
    description: str
    label: str = "label"
    truth: str | None = None  # name in bsvm.datasets.GENERATORS, when p(y|x) is known


SAMPLES: dict[str, Sample] = {s.file: s for s in [
    Sample("ripley.csv", "Ripley-like mixtures (2-D)",
           "250 points; each class a mixture of two Gaussians. True p(y|x) known.", truth="ripley"),
    Sample("moons.csv", "Two moons (2-D)", "300 points on two noisy half circles. True p(y|x) known.",
           truth="moons"),
    Sample("xor.csv", "XOR blobs (2-D)", "300 points in four Gaussian blobs. True p(y|x) known.",
           truth="xor"),
    Sample("twonorm.csv", "twonorm (20-D)",
           "1000 points, two Gaussians; Bayes error 2.3%. True p(y|x) known.", truth="twonorm"),
    Sample("ringnorm.csv", "ringnorm (20-D)", "1000 points, a wide and a narrow Gaussian. True p(y|x) known.",
           truth="ringnorm"),
    Sample("breast_cancer.csv", "Breast cancer (Wisconsin, 30-D)",
           "569 tumours, malignant vs benign (scikit-learn's bundled copy)."),
    Sample("iris.csv", "Iris (4-D, 3 classes)", "150 flowers, three species (scikit-learn's bundled copy)."),
    Sample("wine.csv", "Wine (13-D, 3 classes)", "178 wines, three cultivars (scikit-learn's bundled copy)."),
]}


def sample_path(file: str) -> Path:
    if file not in SAMPLES:
        raise ValueError(f"Unknown sample {file!r}; the samples are {sorted(SAMPLES)}.")
    # the wheel installs the package as files (not zipped), so the resource is a real path
    return Path(str(resources.files("bsvm.sample_data") / file))


def load_sample(file: str) -> LoadedCSV:
    """Load a shipped sample with its label column: ``load_sample("ripley.csv")`` (or ``"ripley"``; the
    names are ``SAMPLES``'s keys). ``.X``, ``.y`` and ``.feature_names`` are ready for ``fit``."""
    from .data import load_csv

    if file not in SAMPLES and f"{file}.csv" in SAMPLES:
        file = f"{file}.csv"  # ("ripley" was refused as an unknown sample, a newcomer's review)
    return load_csv(sample_path(file), label=SAMPLES[file].label)
