"""Candidate pairs past a bound go to sorted runs on disk and come back merged: the same
sorted distinct values as the union in memory, whatever the bound and the slices read."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates.bands import DistinctUnion, packed_pairs_from_band_columns
from neardup.candidates.chunks import CandidatePairs, filter_slices
from neardup.engines.pair_runs import PackedFile, PairRuns, merge_runs
from neardup.engines.spill import WorkDir

values = st.integers(0, (1 << 64) - 1)
small_values = st.integers(0, 60)


def _sorted_distinct(part):
    return np.array(sorted(set(part)), dtype=np.uint64)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.lists(st.one_of(small_values, values), max_size=40), max_size=12),
    limit=st.integers(8, 400),
    slice_size=st.integers(1, 50),
)
def test_runs_give_the_sorted_union_of_every_part(tmp_path_factory, parts, limit, slice_size):
    with WorkDir(tmp_path_factory.mktemp("runs"), "k", "out") as work:
        runs = PairRuns(work, limit)
        for part in parts:
            runs.add(_sorted_distinct(part))
        packed = runs.values()
        want = sorted({v for part in parts for v in part})
        held = sum(len(set(p)) for p in parts) * 8
        if runs.spilled_runs == 0:
            assert isinstance(packed, np.ndarray)
        else:
            assert isinstance(packed, PackedFile) and held > limit
            # The runs are merged into one file, then removed.
            names = [p.name for p in work.path.iterdir()]
            assert "candidates.bin" in names and not [n for n in names if "-run-" in n]
        assert packed.shape == (len(want),)
        got = [packed[start : start + slice_size] for start in range(0, len(want), slice_size)]
        assert (np.concatenate(got).tolist() if got else []) == want


@settings(max_examples=100, deadline=None)
@given(
    runs=st.lists(st.lists(values, max_size=30), min_size=1, max_size=6),
    block=st.integers(1, 9),
)
def test_merge_runs_is_the_sorted_distinct_union(tmp_path_factory, runs, block):
    folder = tmp_path_factory.mktemp("merge")
    paths = []
    for i, run in enumerate(runs):
        path = folder / f"r{i}"
        path.write_bytes(_sorted_distinct(run).tobytes())
        paths.append((path, len(set(run))))
    want = sorted({v for run in runs for v in run})
    assert merge_runs(paths, folder / "all", block) == len(want)
    assert np.fromfile(folder / "all", dtype=np.uint64).tolist() == want


def test_band_search_through_runs_gives_the_same_candidates(tmp_path):
    rng = np.random.default_rng(3)
    # Few distinct hashes a band: buckets, and pairs repeated across bands.
    columns = [rng.integers(0, 40, 500).astype(np.uint64) for _ in range(9)]
    positions = rng.permutation(500).astype(np.int64)
    want = packed_pairs_from_band_columns(columns, "star", positions, workers=2)
    with WorkDir(tmp_path, "k", "out") as work:
        runs = PairRuns(work, limit=4096)
        got = packed_pairs_from_band_columns(columns, "star", positions, 2, union=runs)
        assert runs.spilled_runs > 1 and isinstance(got, PackedFile)
        documents = np.arange(500, dtype=np.int64) * 3
        # Read back as candidates, a slice at a time, they unpack to the same document pairs.
        a, b = filter_slices(CandidatePairs.of_packed(got, documents), lambda a, b: a < b, 97)
        wa, wb = filter_slices(CandidatePairs.of_packed(want, documents), lambda a, b: a < b, 97)
        assert a.tolist() == wa.tolist() and b.tolist() == wb.tolist() and a.shape[0] > 100


def test_union_in_memory_below_the_limit(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        runs = PairRuns(work, limit=1 << 20)
        runs.add(np.array([3, 9], dtype=np.uint64))
        runs.add(np.array([1, 3], dtype=np.uint64))
        union = DistinctUnion()
        union.add(np.array([3, 9], dtype=np.uint64))
        union.add(np.array([1, 3], dtype=np.uint64))
        assert runs.values().tolist() == union.values().tolist() == [1, 3, 9]
        assert runs.spilled_runs == 0 and runs.disk_bytes == 0
        assert not [p for p in work.path.iterdir() if p.name.startswith("candidates")]


def test_bad_arguments(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work, pytest.raises(ValueError, match="at least 8"):
        PairRuns(work, 4)
    with pytest.raises(ValueError, match="block_values"):
        merge_runs([], tmp_path / "x", 0)
    path = tmp_path / "p.bin"
    path.write_bytes(np.arange(3, dtype=np.uint64).tobytes())
    with pytest.raises(TypeError, match="slices of step 1"):
        PackedFile(path, 3)[::2]
    with pytest.raises(ValueError, match="ends before"):
        PackedFile(path, 5)[0:5]
