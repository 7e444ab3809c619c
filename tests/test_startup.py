"""Tests for neardup.startup: the ``neardup`` process and a Spark run's Python daemon load
neither pandas nor scipy.linalg for a job that needs neither, and pyarrow's pandas conversions
and numba's kernels work as before once something imports pandas or scipy."""

from __future__ import annotations

import subprocess
import sys


def run_python(code: str, *arguments: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_dedup_loads_neither_pandas_nor_scipy_linalg(tmp_path):
    # Two near-duplicates: GROUPS and PAIRS then hold integer and boolean cells, whose
    # encoding must not go through Arrow's to_numpy of booleans (it imports pandas).
    docs = tmp_path / "docs.jsonl"
    text = "the cat sat on the mat " * 5
    docs.write_text(
        f'{{"id": "a", "text": "{text}"}}\n{{"id": "b", "text": "{text}too"}}\n',
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "from neardup.cli import main\n"
        "startup.install()\n"
        "main(sys.argv[1:], standalone_mode=False)\n"
        "print([m for m in ('pandas', 'scipy.linalg', 'numba', 'pyarrow') if m in sys.modules])\n"
    )
    pairs = tmp_path / "pairs.tsv"
    lines = run_python(
        code, "dedup", str(docs), "-o", str(tmp_path / "groups.tsv"), "--pairs-out", str(pairs),
        "--quiet",
    )  # fmt: skip
    assert lines[-1] == "['numba', 'pyarrow']"
    assert (tmp_path / "groups.tsv").read_text().count("\n") == 3  # header and the documents
    assert pairs.read_text().splitlines()[1].split("\t")[:2] == ["a", "b"]


def test_pyarrow_converts_pandas_objects_once_pandas_is_imported():
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "startup.install()\n"
        "import numpy as np, pyarrow as pa\n"
        "pa.array(['x', 'y'], type=pa.large_string()), pa.array(np.arange(3))\n"
        "print('pandas' in sys.modules)\n"
        "import pandas as pd\n"
        "series = pd.Series([1.0, None, float('nan')])\n"
        "print(pa.array(series).null_count, pa.array(series, from_pandas=True).null_count)\n"
        "print(pa.array(pd.Categorical(['a', 'b', 'a'])).type.index_type)\n"
        "print(pa.table(pd.DataFrame({'a': [1, 2]})).num_rows)\n"
        "print(pa.table({'a': [1, None]}).to_pandas()['a'].isna().sum())\n"
    )
    # As pyarrow does without the finder: NaN is null only for pandas objects, a categorical
    # becomes a dictionary array, a data frame a table.
    assert run_python(code) == ["False", "2 2", "int8", "2", "1"]


def test_numba_kernels_and_scipy_work_after_the_hidden_set_up():
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "startup.install()\n"
        "import numba, numpy as np\n"
        "total = numba.njit(lambda x: x.sum())\n"
        "print(total(np.arange(4)), 'scipy.linalg' in sys.modules)\n"
        "import scipy.linalg\n"
        "print(float(scipy.linalg.det(np.eye(2))))\n"
    )
    assert run_python(code) == ["6 False", "1.0"]
