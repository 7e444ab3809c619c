"""The permutation tables searched a partition at a time (neardup.engines.pairs_search): every
pair within k exactly once, the same links' components, whatever the parts."""

import doctest
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.engines.pairs_search as pairs_search
from neardup.candidates.bucket_lists import unpacked
from neardup.candidates.radix import PARALLEL_MIN_KEYS
from neardup.engines.pairs_search import MAX_ROWS, PartitionedSearch, partitioned
from neardup.engines.spill import WorkDir
from neardup.groups import connected_components


def brute_force(fps: np.ndarray, k: int) -> set[tuple[int, int]]:
    x = fps[:, None] ^ fps[None, :]
    dist = np.bitwise_count(x)
    i, j = np.nonzero(np.triu(dist <= k, 1))
    return set(zip(i.tolist(), j.tolist()))


def search(fps: np.ndarray, k: int, row_limit: int, with_pairs: bool = True):
    with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p") as work:
        found = []
        s = PartitionedSearch(work, fps.shape[0], k, row_limit)
        s.run(lambda start, stop: fps[start:stop].copy(), found.append, with_pairs)
        leftover = sorted(p.name for p in work.path.iterdir() if p.name.startswith("part-"))
    return s, found, leftover


def fingerprints(draw_kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**63, size=n).astype(np.uint64) * np.uint64(2)
    if draw_kind == "near":  # copies of earlier rows with a bit or two flipped
        copies = rng.random(n) < 0.5
        sources = (rng.random(n) * np.arange(n)).astype(np.int64)
        flips = (np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)) | (
            np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
        )
        fps[copies] = fps[sources[copies]] ^ flips[copies]
    elif draw_kind == "equal":  # a few values, many copies each
        fps = fps[rng.integers(0, min(3, n), n)]
    elif draw_kind == "within_k":  # every pair within a few bits: one low byte differs
        fps = np.uint64(0xABCD_0000_0000_0000) | rng.integers(0, 8, n).astype(np.uint64)
    elif draw_kind == "hot_prefix":  # the leading 40 bits shared, the rest random
        fps = (fps & np.uint64(0xFFFFFF)) | np.uint64(0x1234567890 << 24)
    return fps


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["random", "near", "equal", "within_k", "hot_prefix"]),
    st.integers(1, 300),
    st.integers(0, 5),
    st.integers(1, 400),
    st.integers(0, 2**32),
)
def test_every_pair_within_k_once_whatever_the_parts(kind, n, k, row_limit, seed):
    fps = fingerprints(kind, n, seed)
    s, found, leftover = search(fps, k, row_limit)
    packed = np.concatenate([unit.pairs for unit in found])
    assert packed.shape[0] == np.unique(packed).shape[0]  # each pair once
    a, b = unpacked(packed)
    assert (a < b).all()
    expected = brute_force(fps, k)
    assert set(zip(a.tolist(), b.tolist())) == expected
    la, lb = unpacked(np.concatenate([unit.links for unit in found]))
    ea = np.array([p[0] for p in expected], dtype=np.int64)
    eb = np.array([p[1] for p in expected], dtype=np.int64)
    assert (connected_components(n, la, lb) == connected_components(n, ea, eb)).all()
    assert sum(unit.distinct for unit in found) == np.unique(fps).shape[0]
    assert leftover == []  # partition files are removed once searched
    assert s.bits == 0 or len(found) == (1 << s.bits) * len({t[0] for t in s.plan.tables})


def test_links_alone_when_pairs_are_not_listed():
    fps = fingerprints("equal", 50, 1)
    _, found, _ = search(fps, 2, row_limit=10, with_pairs=False)
    assert all(unit.pairs is None for unit in found)
    # 3 values at most: each copy linked to its first holder, once.
    links = np.concatenate([unit.links for unit in found])
    assert links.shape[0] == 50 - np.unique(fps).shape[0]


def test_parts_are_as_few_as_the_limit_allows():
    with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p") as work:
        assert PartitionedSearch(work, 1000, 3, 1000, threads=1).bits == 0
        assert PartitionedSearch(work, 1000, 3, 999, threads=1).bits == 1
        assert PartitionedSearch(work, 1000, 3, 250, threads=1).bits == 2
        assert PartitionedSearch(work, 1000, 3, 1, threads=1).bits == 10
        assert PartitionedSearch(work, 10**9, 3, 1, threads=1).bits <= 13  # a block's width
        # Two partitions searched at once share the limit; one part searches on both cores.
        assert PartitionedSearch(work, 1000, 3, 1000, threads=2).bits == 0
        assert PartitionedSearch(work, 1000, 3, 999, threads=2).bits == 2
        assert PartitionedSearch(work, 1000, 3, 250, threads=2).bits == 3


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_same_parts_found_whatever_the_threads(threads):
    fps = fingerprints("near", 300, 7)
    fps[100:200] = fps[150]  # a hundred identical fingerprints: one partition far larger
    with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p") as work:
        runs = []
        for t in (1, threads):
            found = []
            s = PartitionedSearch(work, fps.shape[0], 3, 16 * t, threads=t)
            s.run(lambda start, stop: fps[start:stop].copy(), found.append, True)
            runs.append([(u.links.tolist(), u.pairs.tolist(), u.distinct, u.near) for u in found])
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    "rows, limit, message",
    [
        (-1, 5, "rows must be in 0..4294967295; got -1"),
        (MAX_ROWS, 5, "rows must be in 0..4294967295; got 4294967296"),
        (10, 0, "row_limit must be >= 1; got 0"),
    ],
)
def test_bad_arguments_say_what_is_valid(rows, limit, message):
    with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p") as work:
        with pytest.raises(ValueError, match=message):
            PartitionedSearch(work, rows, 3, limit)


def test_no_rows_no_pairs():
    _, found, _ = search(np.zeros(0, np.uint64), 3, row_limit=5)
    assert [unit.links.shape[0] for unit in found] == [0]


@pytest.mark.parametrize("n", [0, 1, 7, PARALLEL_MIN_KEYS + 3])
@pytest.mark.parametrize("width", [1, 4, 12])
def test_partitioned_rows_are_a_stable_sort_by_partition(n, width):
    # Half the rows hold one value: one partition far larger than the others, spanning the
    # middle where the two cores' halves meet.
    rng = np.random.default_rng(n + width)
    values = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    values[n // 4 : 3 * n // 4] = values[n // 2] if n else 0
    rows, bounds = partitioned(values, 1000, 30, width)
    part = (values >> np.uint64(30)) & np.uint64((1 << width) - 1)
    order = np.argsort(part, kind="stable")
    assert rows.tolist() == np.stack([values[order], order.astype(np.uint64) + 1000], 1).tolist()
    assert bounds.tolist() == np.searchsorted(part[order], np.arange((1 << width) + 1)).tolist()


def test_docstrings():
    assert doctest.testmod(pairs_search).failed == 0
