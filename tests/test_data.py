"""Bad input gets a ValueError whose message says what to do (estimators and the CSV loader)."""

import io

import numpy as np
import pandas as pd
import pytest

from bsvm import PlattSVM
from bsvm.data import load_csv
from bsvm.samples import SAMPLES, load_sample
from bsvm.sbsvm import SBSVM

X = np.random.default_rng(0).normal(size=(20, 2))
y = np.array([0, 1] * 10)

ESTIMATORS = [PlattSVM(), SBSVM(max_iter=3)]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    ("Xb", "yb", "advice"),
    [
        (np.where(np.eye(20, 2) == 1, np.nan, X), y, "impute"),
        (np.where(np.eye(20, 2) == 1, np.inf, X), y, "impute"),
        (X, np.zeros(20, int), "at least two classes"),
        (X, np.array([0] * 19 + [1]), "at least 2 examples per class"),
        (X, y[:15], "one label per row"),
        (pd.DataFrame({"a": X[:, 0], "colour": ["red"] * 20}), y, "encode them as numbers"),
    ],
    ids=["nan", "inf", "one-class", "one-row-class", "length-mismatch", "non-numeric"],
)
def test_bad_training_input(est, Xb, yb, advice):
    with pytest.raises(ValueError, match=advice):
        est.fit(Xb, yb)


def test_binary_only_method_given_three_classes_points_to_multiclass_options():
    with pytest.raises(ValueError, match="MSBPM.*SubgradientHMC.*OneVsRestClassifier"):
        SBSVM(max_iter=2).fit(X, np.arange(20) % 3)


def test_predict_checks_feature_count_and_finiteness():
    est = SBSVM(max_iter=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="impute"):
        est.predict(np.full((3, 2), np.nan))


def test_string_labels_follow_classes_order():
    labels = np.array(["spam", "ham"])[y]
    est = SBSVM(max_iter=20, random_state=0).fit(X, labels)
    assert list(est.classes_) == ["ham", "spam"]
    assert set(est.predict(X)) <= {"ham", "spam"}


def _csv(text):
    return io.BytesIO(text.encode())


@pytest.mark.parametrize(
    ("text", "label", "advice"),
    [
        ("a,b,label\n1,2,x\n3,4,y\n", "target", "Label column 'target' not found"),
        ("name,label\nfoo,x\nbar,y\n", "label", "no numeric feature columns"),
        ("a,b,label\n1,,x\n3,4,y\n", "label", "Missing values"),
        ("a,b,label\n1,2,x\n3,4,x\n", "label", "only one class"),
        ("", "label", "empty"),
        ("just one column\n1\n2\n", "label", "fewer than two columns"),
    ],
)
def test_bad_csv(text, label, advice):
    with pytest.raises(ValueError, match=advice):
        load_csv(_csv(text), label=label)


def test_csv_label_by_name_case_insensitive_and_numeric_features_only():
    data = load_csv(_csv("x1,Name,x2,Class\n1,a,2,pos\n3,b,4,neg\n"), label="class")
    assert data.label_name == "Class"
    assert data.feature_names == ["x1", "x2"]
    np.testing.assert_array_equal(data.X, [[1, 2], [3, 4]])


@pytest.mark.parametrize("file", sorted(SAMPLES))
def test_every_shipped_sample_loads(file):
    data = load_sample(file)
    assert data.X.shape[0] >= 100 and len(np.unique(data.y)) >= 2
