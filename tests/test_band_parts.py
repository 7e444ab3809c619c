"""Tests for neardup.candidates.band_parts: a band grouped a partition of its hashes at a time."""

from __future__ import annotations

import builtins
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import band_parts
from neardup.candidates.band_parts import (
    PREFIX_BITS,
    BandColumn,
    StagedBand,
    StagedPart,
    gathered,
    partitions,
    prefix_counts,
)
from neardup.rank_directory import RowSet


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
        subset = RowSet.of_marks(rng.random(n) < 0.6)
    searched = column if subset is None else column[subset.rows()]
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
    keys, order, parts = _sorted_in_parts(column, RowSet.of_marks(np.arange(1000) % 3 == 0), 10)
    assert len(parts) == 1
    assert order.tolist() == list(range(334))


def test_a_column_read_in_blocks_skips_blocks_without_rows(monkeypatch):
    monkeypatch.setattr(band_parts, "BLOCK_ROWS", 3)
    reads = []
    values = np.arange(10, dtype=np.uint64)

    def read(start, stop):
        reads.append((start, stop))
        return values[start:stop]

    blocks = list(BandColumn(10, read).blocks(RowSet.of_marks(np.isin(np.arange(10), [1, 2, 9]))))
    assert reads == [(0, 3), (9, 10)]
    assert [(b.tolist(), r.tolist()) for b, r in blocks] == [([0, 1, 2], [1, 2]), ([9], [0])]


@pytest.mark.parametrize("most", [None, 1, 3])
def test_empty_column_has_no_partition(most):
    assert list(partitions(prefix_counts(BandColumn.of(np.zeros(0, np.uint64)), None), most)) == []


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 3000),
    st.integers(1, 400),
    st.sampled_from([1, 7, 100, 1000]),
    st.booleans(),
    st.sampled_from([64, 1000, band_parts.BLOCK_ROWS]),
)
def test_a_staged_band_gives_each_partition_as_its_column_does(
    tmp_path_factory, seed, n, distinct, most, with_subset, block_rows
):
    """Written once by partition to a staging file, read in blocks of any size, a band gives
    every partition the hashes and indices that gathering it from the column gives; the file
    goes with the last partition taken."""
    column = _column(seed, n, distinct)
    subset = None
    if with_subset:
        subset = RowSet.of_marks(np.random.default_rng(seed + 1).random(n) < 0.6)
    path = tmp_path_factory.mktemp("staged") / "band.staged"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(band_parts, "BLOCK_ROWS", block_rows)
        band = BandColumn.of(column)
        on_disk = BandColumn(band.rows, band.read, staging=path)
        counts = prefix_counts(band, subset)
        ranges = list(partitions(counts, most))
        staged = StagedBand(on_disk, subset, counts, ranges)
        for k, (lo, hi) in enumerate(ranges):
            assert path.exists()
            keys, order = gathered(StagedPart(staged, k), subset, counts, lo, hi)
            want_keys, want_order = gathered(band, subset, counts, lo, hi)
            assert keys.tolist() == want_keys.tolist()
            assert order.dtype == np.uint32 and order.tolist() == want_order.tolist()
    assert not path.exists()


def test_a_truncated_staging_file_is_an_error(tmp_path):
    column = _column(3, 500, 50)
    band = BandColumn.of(column)
    path = tmp_path / "band.staged"
    counts = prefix_counts(band, None)
    ranges = list(partitions(counts, 100))
    staged = StagedBand(BandColumn(band.rows, band.read, staging=path), None, counts, ranges)
    path.write_bytes(path.read_bytes()[:-4])  # the last index cut off
    with pytest.raises(ValueError, match="band.staged ends before the rows of partition"):
        gathered(StagedPart(staged, len(ranges) - 1), None, counts, *ranges[-1])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_while_staging_is_one_clear_error_naming_the_file(tmp_path, monkeypatch):
    def full_disk_open(path, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        return builtins.open("/dev/full" if "w" in mode else path, mode, *args, **kwargs)

    monkeypatch.setattr(band_parts, "open", full_disk_open, raising=False)
    band = BandColumn.of(_column(5, 400, 40))
    on_disk = BandColumn(band.rows, band.read, staging=tmp_path / "band.staged")
    counts = prefix_counts(band, None)
    with pytest.raises(OSError, match="no space left") as error:
        StagedBand(on_disk, None, counts, list(partitions(counts, 100)))
    assert "band.staged" in str(error.value)
