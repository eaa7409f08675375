"""Bad input gets a ValueError whose message says what to do (estimators and the CSV loader)."""

import io

import numpy as np
import pandas as pd
import pytest

from bsvm import PlattSVM
from bsvm.data import UnusableRowsError, load_csv
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
        (X, np.where(np.arange(20) == 4, np.nan, y), r"missing labels .* 1 row \(row 4\): drop those rows"),
    ],
    ids=["nan", "inf", "one-class", "one-row-class", "length-mismatch", "non-numeric", "nan-label"],
)
def test_bad_training_input(est, Xb, yb, advice):
    if isinstance(est, PlattSVM) and advice.startswith("at least 2 examples"):
        # PlattSVM fits a class with a single row (the sigmoid on in-sample scores) and says so
        with pytest.warns(UserWarning, match="single training row"):
            est.fit(Xb, yb)
        return
    with pytest.raises(ValueError, match=advice):
        est.fit(Xb, yb)


@pytest.mark.parametrize("rows", [[0, 2, 1], [0, 2, 4, 6, 1], [0, 1]])
def test_platt_fits_a_handful_of_rows(rows):
    # a one-row class below 5 rows hit scikit-learn's "Cannot have number of splits n_splits=5 greater
    # than the number of samples: n_samples=3" (its frozen-estimator calibration cross-validates)
    with pytest.warns(UserWarning, match="single training row"):
        m = PlattSVM().fit(X[rows], y[rows])
    p = m.predict_proba(X)
    assert p.shape == (20, 2) and np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1)


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
        ("a,b,label\n", "label", "no rows of data"),  # (was: "no numeric feature columns")
        ("a,b,label\n", None, "no rows of data"),
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


# ------------------------------------------------------------------------------------- odd CSV files


def test_semicolon_separated_file_with_decimal_commas_is_read_as_numbers():
    data = load_csv(b"a;b;label\n1,5;2;0\n3;4,25;1\n5;6;0\n")
    np.testing.assert_array_equal(data.X, [[1.5, 2.0], [3.0, 4.25], [5.0, 6.0]])
    assert data.feature_names == ["a", "b"]
    assert any("semicolons" in n and "decimal commas" in n for n in data.notes)


def test_one_column_with_decimal_commas_beside_decimal_points_is_read_as_numbers():
    """A crawl's file: column a written 0,126 and column b -0.132 (a column pasted from another
    spreadsheet). a was left out as "not numeric" without a word about its commas."""
    data = load_csv(b"a;b;label\n0,126;-0.25;no\n-1,5;0.5;yes\n2;1.0;no\n")
    np.testing.assert_array_equal(data.X, [[0.126, -0.25], [-1.5, 0.5], [2.0, 1.0]])
    assert any("'a' uses decimal commas" in n for n in data.notes)
    text = load_csv(b"a;b;label\nx,y;1.0;no\nz;2.0;yes\n")  # words with commas stay text
    assert text.feature_names == ["b"]


def test_decimal_comma_columns_with_placeholders_are_numbers_with_missing_values():
    """A European spreadsheet with "?" for missing values: every column with a "?" was left out as not
    numeric (with "?" in all of them, the file was refused as having no features). The numbers are read,
    the "?" entries are missing values (an error naming them, or dropped on request)."""
    rows = "".join(f"{i},5;{i % 3},25;{i % 2}\n" for i in range(20))
    text = ("a;b;label\n1,5;2,0;0\n?;3,5;1\n2,5;?;0\n" + rows).encode()
    with pytest.raises(UnusableRowsError, match=r"2 of 23 rows .*columns: a, b.*'\?'"):
        load_csv(text)
    data = load_csv(text, dropna=True)
    assert data.feature_names == ["a", "b"] and data.X.shape == (21, 2)
    np.testing.assert_array_equal(data.X[:2], [[1.5, 2.0], [0.5, 0.25]])
    # one decimal-comma column with a placeholder beside decimal points
    more = "".join(f"{i}.0;{i},5;{i % 2}\n" for i in range(10))
    mixed = load_csv(("a;b;label\n1.5;2,5;0\n2.5;?;1\n3.0;-1,0;0\n" + more).encode(), dropna=True)
    np.testing.assert_array_equal(mixed.X[:3], [[1.5, 2.5], [3.0, -1.0], [0.0, 0.5]])
    assert any("'b' uses decimal commas" in n for n in mixed.notes)
    # mostly words: still text, left out
    assert load_csv(b"a;b;label\n1.5;x;0\n2.5;?;1\n3.0;1,0;0\n").feature_names == ["a"]


def test_tab_separated_file_and_a_label_column_with_another_name_is_guessed():
    data = load_csv(b"a\tb\tOutcome\n1\t2\tyes\n3\t4\tno\n", label=None)
    assert data.label_name == "Outcome" and data.feature_names == ["a", "b"]
    assert list(data.y) == ["yes", "no"]
    assert any("guessed" in n for n in data.notes) and any("tabs" in n for n in data.notes)


def test_a_missing_label_column_names_the_likely_one():
    with pytest.raises(ValueError, match="likely one is 'diagnosis'"):
        load_csv(b"r,t,diagnosis\n1,2,M\n3,4,B\n")


def test_a_label_column_of_measurements_or_identifiers_is_refused_with_the_likely_one():
    # a crawl picked a measured column as the label: every row became its own class, and the error listed
    # all 800 "classes" and advised leaving out single-row classes
    rng = np.random.default_rng(0)
    rows = "".join(f"{i},{a:.4f},{b:.4f},{'yes' if a > 0 else 'no'}\n"
                   for i, (a, b) in enumerate(rng.normal(size=(300, 2))))
    text = ("id,f0,f1,target\n" + rows).encode()
    with pytest.raises(ValueError, match=r"'f0' holds numbers with fractions .*'target' has 2 distinct"):
        load_csv(text, label="f0")
    with pytest.raises(ValueError, match=r"'id' holds a different value in every row \(300 distinct"):
        load_csv(text, label="id")
    # names or codes, one per row, too (a review: "p0".."p29" were 30 classes of one row)
    named = "".join(f"p{i},{a:.3f},{int(a > 0)}\n" for i, a in enumerate(rng.normal(size=40)))
    with pytest.raises(ValueError, match=r"'name' holds a different value in every row .*e\.g\. p0, p1"):
        load_csv(("name,f0,label\n" + named).encode(), label="name")
    assert load_csv(text, label="target").feature_names == ["f0", "f1"]  # (the id: a row number)
    # whole numbers stored as floats (0.0 / 1.0), and small integer-coded sets, are still labels
    assert list(load_csv(b"a,label\n1,0.0\n2,1.0\n3,0.0\n").y) == [0.0, 1.0, 0.0]
    assert len(load_csv(b"a,label\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(12))).y) == 12


def test_a_row_number_column_is_left_out_of_the_default_features_and_said():
    """A crawl: an `id` column (1001..1800) counted as a feature; on a file sorted by class, then
    numbered, GibbsSVM scored 0.99 on test rows through it (0.85 without)."""
    rng = np.random.default_rng(0)
    X0 = rng.normal(size=(300, 2))
    order = np.argsort(X0[:, 0] > 0, kind="stable")  # sorted by class, then numbered
    rows = "".join(f"{1001 + i},{a:.3f},{b:.3f},{int(a > 0)}\n" for i, (a, b) in enumerate(X0[order]))
    text = ("id,f0,f1,label\n" + rows).encode()
    data = load_csv(text)
    assert data.feature_names == ["f0", "f1"]
    assert any("'id' looks like a row number" in n for n in data.notes)
    assert load_csv(text, features=["id", "f0"]).feature_names == ["id", "f0"]  # asked for: kept
    # whole-number measurements that are not a run of consecutive values stay features
    counts = "".join(f"{3 * i + (i % 2)},{a:.3f},{int(a > 0)}\n" for i, a in enumerate(X0[:, 0]))
    assert load_csv(("n,f0,label\n" + counts).encode()).feature_names == ["n", "f0"]
    # a year or rank in no order is each row's measurement, not its position (a review)
    years = rng.permutation(np.arange(1990, 1990 + 300))
    shuffled = "".join(f"{yr},{a:.3f},{int(a > 0)}\n" for yr, a in zip(years, X0[:, 0]))
    assert load_csv(("year,f0,label\n" + shuffled).encode()).feature_names == ["year", "f0"]
    # a row number beside a constant column: the row number stays rather than the constant (a review)
    beside = "".join(f"{i},1,{int(a > 0)}\n" for i, a in enumerate(X0[:, 0]))
    assert load_csv(("id,c,label\n" + beside).encode()).feature_names == ["id"]


def test_the_guessed_label_skips_a_last_column_of_measurements():
    # a file with its class column first: the last column (a measurement) was guessed
    data = load_csv(b"cls,a,b\nx,1.5,2.25\ny,3.5,4.75\nx,5.5,6.125\n", label=None)
    assert data.label_name == "cls" and data.feature_names == ["a", "b"]
    # with no better column the last one (a measurement) stays the guess, and its own error says so
    with pytest.raises(ValueError, match="'b' holds numbers with fractions"):
        load_csv(b"a,b\n1.5,0.25\n2.5,1.5\n3.5,0.75\n", label=None)


def test_a_text_class_column_beats_a_last_column_of_many_whole_numbers():
    """wine with its text cultivar column in the middle: the last column, proline (whole numbers, 121
    values in 178 rows), was guessed, and cultivar set aside as "not numeric" (a crawl). A last column of
    whole numbers with 20 or fewer values stays the guess, and so does one with no text column beside it."""
    rng = np.random.default_rng(0)
    kinds = ["barolo", "grignolino", "barbera"]
    rows = [f"{rng.normal():.3f},{kinds[i % 3]},{300 + i * 7}" for i in range(60)]
    data = load_csv(("alcohol,cultivar,proline\n" + "\n".join(rows) + "\n").encode(), label=None)
    assert data.label_name == "cultivar" and data.feature_names == ["alcohol", "proline"]
    few = [f"{rng.normal():.3f},{['a', 'b'][i % 2]},{i % 3}" for i in range(60)]
    assert load_csv(("x,tag,grade\n" + "\n".join(few) + "\n").encode(), label=None).label_name == "grade"
    # abalone: its target Rings (28 whole-number values in 4,177 rows) stays the guess over the text Sex
    ab = [f"{'MFI'[i % 3]},{rng.normal():.3f},{1 + i % 28}" for i in range(600)]
    assert load_csv(("Sex,length,Rings\n" + "\n".join(ab) + "\n").encode(), label=None).label_name == "Rings"


def test_latin1_file_is_read_and_its_column_names_kept():
    data = load_csv("t\xe9mp\xe9rature,b,label\n1,2,0\n3,4,1\n".encode("latin-1"))
    assert data.feature_names == ["t\xe9mp\xe9rature", "b"]
    assert any("not UTF-8" in n for n in data.notes)
    # a UTF-8 byte-order mark does not end up in the first column's name
    assert load_csv(b"\xef\xbb\xbfa,b,label\n1,2,0\n3,4,1\n").feature_names == ["a", "b"]


def test_rows_with_missing_values_are_an_error_or_dropped_on_request():
    text = b"a,b,label\n1,,0\n3,4,1\n5,6,0\n7,8,1\n,1,\n"
    with pytest.raises(ValueError, match=r"Missing values in 2 of 5 rows \(columns: a, b, label\)\. Drop "):
        load_csv(text)
    data = load_csv(text, dropna=True)
    np.testing.assert_array_equal(data.X, [[3, 4], [5, 6], [7, 8]])
    assert list(data.y) == [1, 0, 1] and any("Dropped 2 rows" in n for n in data.notes)


def test_placeholders_in_a_numeric_column_become_missing_values():
    rows = "\n".join(f"{i},{'?' if i == 3 else i * 2},{i % 2}" for i in range(12))
    text = f"a,b,label\n{rows}\n".encode()
    with pytest.raises(ValueError, match=r"entries \['\?'\] are not numbers"):
        load_csv(text)
    data = load_csv(text, dropna=True)
    assert data.X.shape == (11, 2) and 3.0 not in data.X[:, 0]


def test_non_numeric_columns_are_left_out_and_named_or_refused_when_asked_for():
    data = load_csv(b"a,name,b,label\n1,x,2,0\n3,y,4,1\n")
    assert data.feature_names == ["a", "b"]
    assert any("['name']" in n for n in data.notes)
    with pytest.raises(ValueError, match=r"non-numeric columns \['name'\]"):
        load_csv(b"a,name,b,label\n1,x,2,0\n3,y,4,1\n", features=["a", "name"])


@pytest.mark.parametrize("scales", [[1.0, 3.0, 1e-5, 1e5], [1e-200, 1e90, 0.0, 1.0],
                                    [1e200, 1e-120, 2.0, 1e100]])
def test_column_scales_equal_numpy_std_at_any_magnitude(scales):
    """column_scales (two passes, blockwise) against np.std of each column divided by its largest |x|
    (which neither overflows nor underflows), with more rows than one block and a shifted column."""
    from bsvm.data import _SCALE_BLOCK_ROWS, column_scales

    rng = np.random.default_rng(0)
    shift = np.array([0.0, 0.0, 5e-6, 1e3])  # a column far from zero: the deviations, not the squares
    X = (rng.standard_normal((2 * _SCALE_BLOCK_ROWS + 17, 4)) + shift) * np.array(scales)
    top = np.max(np.abs(X), axis=0)
    safe = np.where(top > 0, top, 1.0)
    np.testing.assert_allclose(column_scales(X), np.std(X / safe, axis=0) * top, rtol=1e-10, atol=0)


def test_infinite_values_in_a_csv_are_named_and_dropped_with_the_missing_ones():
    """An "inf" in an uploaded file gave "X contains 0 NaN and 1 infinite values ... SimpleImputer", with no
    column named and no way on the Data page to drop the row."""
    text = "a,b,label\n" + "\n".join(f"{i},{'inf' if i == 3 else 2 * i},{i % 2}" for i in range(10)) + "\n"
    with pytest.raises(ValueError, match=r"Infinite values in 1 of 10 rows \(columns: b\)"):
        load_csv(text.encode())
    data = load_csv(text.encode(), dropna=True)
    assert data.X.shape == (9, 2) and np.isfinite(data.X).all()
    assert data.notes == ["Dropped 1 row with infinite values (columns: b); 9 rows remain."]


def test_values_beyond_the_accepted_magnitudes_are_named_and_dropped_like_infinite_ones():
    """A 1e300 (a sentinel, or a typo) passed the Data page without a word; the fit then failed on Train
    (and the map never came) and on Calibration: bsvm refuses magnitudes beyond 1e150 (their squares
    overflow). Loading names the rows, and the drop option leaves them out."""
    from bsvm.data import UnusableRowsError

    rows = [f"{i},{'1e300' if i == 3 else 2 * i},{'' if i == 5 else i},{i % 2}" for i in range(10)]
    text = ("a,b,c,label\n" + "\n".join(rows) + "\n").encode()
    said = r"Missing or extreme \(\|x\| > 1e\+150\) values in 2 of 10 rows \(columns: b, c\)"
    with pytest.raises(UnusableRowsError, match=said) as info:
        load_csv(text)
    err = info.value
    assert (err.kinds, err.n_rows, err.columns) == (["missing", "extreme"], 2, ["b", "c"])
    import pickle  # (from a worker process: an exception is pickled, and this one needs its fields)

    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err)
    assert (again.kinds, again.n_total, again.columns) == (err.kinds, 10, err.columns)
    data = load_csv(text, dropna=True)
    assert data.X.shape == (8, 3) and np.abs(data.X).max() < 1e150
    # at the limit itself a value is kept (the estimators accept it)
    assert load_csv(b"a,label\n1e150,0\n1,1\n").X[0, 0] == 1e150


def test_a_header_with_a_repeated_name_is_refused_not_renamed():
    """pandas reads "a,a,label" as columns a and a.1: the Data page showed a feature "a.1" without a word."""
    with pytest.raises(ValueError, match=r"Column names \['a'\] appear more than once"):
        load_csv(b"a,a,label\n1,2,0\n3,4,1\n5,6,0\n")
    with pytest.raises(ValueError, match=r"Column names \['b'\] appear more than once"):
        load_csv(b"b;c; b;label\n1;2;3;0\n4;5;6;1\n")
    assert list(load_csv(b"a,a.1,label\n1,2,0\n3,4,1\n5,6,0\n").feature_names) == ["a", "a.1"]


def test_a_binary_file_is_refused_as_not_a_csv():
    """A binary file was read as latin-1 with tab-separated "columns" of control characters and gave three
    messages (encoding, separator, no numeric features) naming a column '\\x00\\x01...'."""
    with pytest.raises(ValueError, match="not a text CSV file: it holds binary data"):
        load_csv(bytes(range(256)) * 20)
    with pytest.raises(ValueError, match="looks like an Excel workbook"):
        load_csv(b"PK\x03\x04" + bytes(200))
    assert load_csv(b"a\tb\tlabel\n1\t2\t0\n3\t4\t1\n5\t6\t0\n").X.shape == (3, 2)  # tabs are text


def test_a_column_with_one_value_in_every_row_is_left_out_with_a_note():
    """A crawl's file x1, const (5.0 everywhere), x2: the constant counted as a feature, so the 2-D data
    lost its maps (3 features). Left out by default, said in the notes; kept when named."""
    rows = "".join(f"{i % 7},5.0,{(i * 3) % 11},{i % 2}\n" for i in range(30))
    text = ("x1,const,x2,label\n" + rows).encode()
    data = load_csv(text)
    assert data.feature_names == ["x1", "x2"] and data.X.shape == (30, 2)
    assert any("'const'" in n and "same value in every row" in n for n in data.notes)
    said = [n for n in data.notes if "same value in every row" in n][0]
    assert said.startswith("Column 'const' has") and "keep it)" in said  # not "Column ['const']"
    two = load_csv(("x1,c1,c2,label\n" + "".join(f"{i % 7},5.0,1,{i % 2}\n" for i in range(30))).encode())
    said = [n for n in two.notes if "same value in every row" in n][0]
    assert said.startswith("Columns 'c1', 'c2' have") and "keep them)" in said
    assert load_csv(text, features=["x1", "const", "x2"]).feature_names == ["x1", "const", "x2"]
    only = load_csv(b"c,label\n1,0\n1,1\n1,0\n")  # nothing else to use: kept (the page says so)
    assert only.feature_names == ["c"]


def test_a_newcomers_review_data_messages_and_samples(monkeypatch):
    """Tiny values were told to divide by 1e200 (smaller still); the memory ceiling from BSVM_MAX_MEMORY
    was said to be set with set_limits; load_sample("ripley") was an unknown sample, and a LoadedCSV's
    repr printed every row; SeegerARD without standardisation was told "one scale serves all columns"
    (a newcomer's review)."""
    import warnings

    from bsvm import MSBPM, SBSVM, SeegerARD
    from bsvm.cost import CostError
    from bsvm.data import DataScaleWarning
    from bsvm.samples import load_sample

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=r"Multiply those columns .*X\[:, 0\] \* 1e200"):
        SBSVM().fit(X * 1e-200, y)
    with pytest.raises(ValueError, match=r"Divide those columns .*X\[:, 0\] / 1e200"):
        SBSVM().fit(X * 1e200, y)
    monkeypatch.setenv("BSVM_MAX_MEMORY", "1MB")
    with pytest.raises(CostError, match="set with BSVM_MAX_MEMORY=1MB"):
        MSBPM().fit(rng.normal(size=(3000, 2)), rng.integers(0, 2, 3000))
    monkeypatch.delenv("BSVM_MAX_MEMORY")
    data = load_sample("ripley")
    assert data.X.shape[1] == 2 and "array" not in repr(data)
    wide = X * np.array([1.0, 1e4])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        SeegerARD(standardize=False, max_iter=2).fit(wide, y)
    said = [str(w.message) for w in seen if issubclass(w.category, DataScaleWarning)]
    assert said and "relevance weight" in said[0] and "widest decide alone" not in said[0]
