"""Tests for neardup.candidates.band_parts: a band grouped a partition of its hashes at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import band_parts
from neardup.candidates.band_parts import (
    PREFIX_BITS,
    BandColumn,
    gathered,
    partitions,
    prefix_counts,
)


def _column(seed: int, n: int, distinct: int) -> np.ndarray:
    """``n`` hashes drawn from ``distinct`` values, some sharing their prefix (the leading
    bits) with another value, some all but their lowest byte, so that partitions split
    prefixes' neighbours and units hold several runs."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64 - 1, max(distinct, 1), dtype=np.uint64, endpoint=True)
    near = base ^ rng.integers(0, 1 << 40, base.shape[0]).astype(np.uint64)
    values = np.concatenate([base, near, base ^ np.uint64(1)])
    return values[rng.integers(0, values.shape[0], n)]


def _sorted_in_parts(column, subset, most):
    band = BandColumn.of(column)
    counts = prefix_counts(band, subset)
    parts = [gathered(band, subset, counts, lo, hi) for lo, hi in partitions(counts, most)]
    keys = np.concatenate([k for k, _ in parts]) if parts else np.zeros(0, np.uint64)
    order = np.concatenate([o for _, o in parts]) if parts else np.zeros(0, np.uint32)
    return keys, order, parts


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 3000),
    st.integers(1, 400),
    st.sampled_from([None, 1, 7, 100, 1 << 40]),
    st.booleans(),
)
def test_partitions_in_order_are_the_stable_sort(seed, n, distinct, most, with_subset):
    column = _column(seed, n, distinct)
    subset = None
    if with_subset:
        rng = np.random.default_rng(seed + 1)
        subset = np.flatnonzero(rng.random(n) < 0.6)
    searched = column if subset is None else column[subset]
    keys, order, parts = _sorted_in_parts(column, subset, most)
    want = np.argsort(searched, kind="stable")
    assert order.dtype == np.uint32
    assert order.astype(np.int64).tolist() == want.tolist()
    assert keys.tolist() == searched[want].tolist()
    # A partition holds at most ``most`` rows unless it is one prefix alone.
    for part_keys, _ in parts:
        prefixes = np.unique(part_keys >> np.uint64(64 - PREFIX_BITS))
        assert most is None or part_keys.shape[0] <= most or prefixes.shape[0] == 1


def test_equal_hashes_share_a_partition_whatever_their_positions(monkeypatch):
    # Blocks of 4 rows: a bucket's rows lie in different blocks, far apart; partitions of 2
    # rows would cut it if they were taken by position.
    monkeypatch.setattr(band_parts, "BLOCK_ROWS", 4)
    a, b = np.uint64(5 << 48), np.uint64((5 << 48) | 1)  # one prefix, two buckets
    column = np.array([a, 9, b, 1 << 63, 3, a, b, 9, 1 << 63, a, 7], dtype=np.uint64)
    keys, order, parts = _sorted_in_parts(column, None, 2)
    assert order.tolist() == np.argsort(column, kind="stable").tolist()
    bucket = [o.tolist() for k, o in parts if a in k]
    assert bucket == [[0, 5, 9, 2, 6]]  # the prefix of a and b whole, a's bucket first
    assert [k.shape[0] for k, _ in parts] == [4, 5, 2]


def test_one_bucket_of_every_document_is_one_partition():
    column = np.full(1000, 12345, dtype=np.uint64)
    keys, order, parts = _sorted_in_parts(column, np.arange(0, 1000, 3), 10)
    assert len(parts) == 1
    assert order.tolist() == list(range(334))


def test_a_column_read_in_blocks_skips_blocks_without_rows(monkeypatch):
    monkeypatch.setattr(band_parts, "BLOCK_ROWS", 3)
    reads = []
    values = np.arange(10, dtype=np.uint64)

    def read(start, stop):
        reads.append((start, stop))
        return values[start:stop]

    blocks = list(BandColumn(10, read).blocks(np.array([1, 2, 9])))
    assert reads == [(0, 3), (9, 10)]
    assert [(b.tolist(), r.tolist()) for b, r in blocks] == [([0, 1, 2], [1, 2]), ([9], [0])]


@pytest.mark.parametrize("most", [None, 1, 3])
def test_empty_column_has_no_partition(most):
    assert list(partitions(prefix_counts(BandColumn.of(np.zeros(0, np.uint64)), None), most)) == []
