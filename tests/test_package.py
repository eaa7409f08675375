"""A clean library: what ``import bsvm`` pulls in, declared dependencies, BLAS threads after threaded
calls, shipped sample data, and the derivations the docstrings cite."""

import ast
import os
import pathlib
import re
import subprocess
import sys
import threading
import tomllib

import numpy as np
import pytest
from threadpoolctl import threadpool_info

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("streamlit", "plotly", "dashboard", "benchmarks", "playwright", "torch", "jax", "gpytorch")


@pytest.mark.parametrize("stmt", [
    "import bsvm",
    "import bsvm.data, bsvm.datasets, bsvm.samples, bsvm.metrics",
    "from bsvm import SBSVM, MSBPM, SubgradientHMC, GibbsSVM, SeegerARD, PlattSVM",
])
def test_import_pulls_in_no_dashboard_or_plotting(stmt):
    code = (f"import sys; {stmt}\n"
            f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{stmt} imported {out.stdout.strip()}"


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_every_import_of_the_library_is_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = {re.split(r"[<>=\[; ]", d)[0].lower().replace("-", "_")
                for d in meta["project"]["dependencies"] + meta["project"]["optional-dependencies"]["dask"]}
    dist_to_module = {"scikit_learn": "sklearn", "arviz_stats": "arviz_stats", "dask": "dask"}
    modules = {dist_to_module.get(d, d) for d in declared} | {"distributed"}  # dask[distributed]
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    # bsvm/bench.py is the command-line forwarder to a checkout's benchmarks/ (not installed): only it may
    # name that package, and only where it is run
    used = {m for p in (ROOT / "bsvm").rglob("*.py") if p.name != "bench.py" for m in _imports(p)}
    missing = sorted(used - modules - stdlib - {"bsvm"})
    assert not missing, f"bsvm imports undeclared packages: {missing}"
    assert set(_imports(ROOT / "bsvm" / "bench.py")) <= stdlib | {"benchmarks"}


def test_python_m_bsvm_bench_runs_the_checkouts_benchmarks_or_says_where_they_are(tmp_path, monkeypatch,
                                                                                 capsys):
    """The issues name ``python -m bsvm.bench NAME``: from a checkout (any working directory) it is
    ``python -m benchmarks NAME``; without one (an installed wheel) a message, exit code 2."""
    out = subprocess.run([sys.executable, "-m", "bsvm.bench", "--help"], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and "usage: python -m benchmarks {" in out.stdout and "sbsvm" in out.stdout
    from bsvm import bench

    monkeypatch.setattr(bench, "_import_runner", lambda: None)
    assert bench.main(["sbsvm"]) == 2
    assert "python -m benchmarks NAME" in capsys.readouterr().err


def _blas_threads():
    return {(i["filepath"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}


def test_blas_threads_restored_after_threaded_calls():
    from bsvm import SBSVM
    from bsvm.datasets import make_ripley

    X, y = make_ripley(400, random_state=0)
    model = SBSVM(n_inducing=10, max_iter=20, random_state=0).fit(X, y)
    before = _blas_threads()
    assert before, "no BLAS library found"
    errors = []

    def work():
        try:
            for _ in range(30):
                model.predict_proba(X)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    # overlapping limits in several threads used to leave the process at one BLAS thread for good
    threads = [threading.Thread(target=work) for _ in range(3)] + [
        threading.Thread(target=lambda: SBSVM(n_inducing=10, max_iter=40, random_state=1).fit(X, y))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _blas_threads() == before


def test_sample_data_read_through_importlib_resources():
    from bsvm.samples import SAMPLES, load_sample, sample_path

    for name in SAMPLES:
        assert sample_path(name).is_file()
    data = load_sample("iris.csv")
    assert data.X.shape == (150, 4) and len(np.unique(data.y)) == 3
    src = (ROOT / "bsvm" / "samples.py").read_text()
    assert "importlib" in src and "__file__" not in src


def test_docstrings_cite_files_that_exist():
    cited = set()
    for path in (ROOT / "bsvm").rglob("*.py"):
        text = path.read_text()
        assert "NOTES.md" not in text, f"{path} cites NOTES.md, which the repository does not have"
        cited |= set(re.findall(r"docs/[\w./-]+\.md", text))
    assert cited, "no docstring cites docs/"
    for ref in cited:
        assert (ROOT / ref).is_file(), f"a docstring cites {ref}, which does not exist"


def test_the_readmes_python_quick_start_runs_as_written(capsys):
    """A new user pastes it first: it crashed with KeyError 'lengthscale' (kernel="auto"'s later
    candidates have other hyperparameters)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## From Python", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "brier" in out and "stage" in out
