"""Rows of Spark positions (``neardup.engines.spark.positions``), against a binary search of
the sorted positions, for positions laid out by input, far apart, and negative."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from neardup.engines.spark.positions import SPARSE_FACTOR, PositionRows  # noqa: E402
from neardup.engines.spark.rows import POS_BITS  # noqa: E402


def _positions(layout: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct sorted positions of a layout."""
    if layout == "inputs":  # a subset of the rows of up to 4 inputs, as files give them
        rows = rng.choice(3 * n + 5, n, replace=False)
        return np.sort((rng.integers(0, 4, n) << POS_BITS) | rows)
    if layout == "far":  # too sparse to lay end to end: searched
        return np.sort(rng.choice(1 << 40, n, replace=False)) * 7
    if layout == "negative":  # a DataFrame's own positions may be negative
        return np.sort(rng.choice(1 << 30, n, replace=False) - (1 << 29))
    return np.arange(n, dtype=np.int64)  # "one input, every row"


@settings(deadline=None)  # the first example loads the directory's compiled kernels
@given(
    layout=st.sampled_from(["inputs", "far", "negative", "every"]),
    n=st.integers(0, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_rows_are_the_binary_search_of_the_positions(layout, n, seed):
    rng = np.random.default_rng(seed)
    positions = np.unique(_positions(layout, n, rng))
    table = PositionRows(positions, POS_BITS)
    if positions.shape[0] == 0:
        return
    queries = positions[rng.integers(0, positions.shape[0], 50)]
    got = table.rows(queries)
    assert got.dtype == np.int64
    assert got.tolist() == np.searchsorted(positions, queries).tolist()


def test_dense_layout_uses_the_directory_and_sparse_one_searches():
    inputs = np.array([3, 9, 1 << POS_BITS | 2, 2 << POS_BITS | 0], dtype=np.int64)
    assert PositionRows(inputs, POS_BITS)._directory is not None
    far = np.arange(4, dtype=np.int64) * (SPARSE_FACTOR << 40)
    assert PositionRows(far, POS_BITS)._directory is None
    assert PositionRows(np.array([-5, 3]), POS_BITS)._directory is None
