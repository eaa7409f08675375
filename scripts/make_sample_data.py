"""Write the CSVs in sample_data/ (run from the repository root: python scripts/make_sample_data.py).

Generated sets come from bsvm.datasets with fixed seeds; the real sets are scikit-learn's bundled copies.
"""

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_iris, load_wine

from bsvm import datasets

OUT = Path(__file__).resolve().parent.parent / "sample_data"


def _write(name, X, y, columns):
    frame = pd.DataFrame(np.round(X, 5), columns=columns)
    frame["label"] = y
    frame.to_csv(OUT / name, index=False)
    print(f"wrote {name}: {X.shape[0]} rows, {X.shape[1]} features")


def main():
    OUT.mkdir(exist_ok=True)
    for name, n, seed in [("ripley", 250, 0), ("moons", 300, 1), ("xor", 300, 2),
                          ("twonorm", 1000, 3), ("ringnorm", 1000, 4)]:
        X, y = datasets.GENERATORS[name].make(n, random_state=seed)
        _write(f"{name}.csv", X, y, [f"x{j + 1}" for j in range(X.shape[1])])
    for name, loader in [("breast_cancer", load_breast_cancer), ("iris", load_iris), ("wine", load_wine)]:
        bunch = loader()
        labels = np.asarray(bunch.target_names)[bunch.target]
        cols = [str(c).replace(" ", "_").replace("(", "").replace(")", "").replace("/", "_")
                for c in bunch.feature_names]
        _write(f"{name}.csv", bunch.data, labels, cols)


if __name__ == "__main__":
    main()
