"""Tests for neardup.candidates.tables: exactness against brute force over all N^2 pairs, for
automatic, forced and recursive plans. The plans themselves are tested in test_plan.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from candidates_helpers import ALL_ONES, boundary_bits, mask_of, popcount
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import radix, tables
from neardup.candidates.plan import plan_tables
from neardup.candidates.tables import (
    IdenticalBuckets,
    collapse_identical,
    distinct_hamming_pairs,
    hamming_pairs,
)


def brute_force(fp: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j with popcount(fp[i] ^ fp[j]) <= k, in (i, j) order."""
    fp = np.asarray(fp, dtype=np.uint64)
    dist = popcount(fp[:, None] ^ fp[None, :])
    i, j = np.nonzero(np.triu(dist <= k, 1))
    return i.astype(np.int64), j.astype(np.int64), dist[i, j].astype(np.uint8)


def assert_same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> None:
    i, j, d = got
    assert i.dtype == np.int64 and j.dtype == np.int64 and d.dtype == np.uint8
    assert i.shape == j.shape == d.shape
    assert np.array_equal(i, want[0])
    assert np.array_equal(j, want[1])
    assert np.array_equal(d, want[2])


def check(fp: np.ndarray, k: int, **kwargs: object) -> tuple[np.ndarray, ...]:
    got = hamming_pairs(fp, k, **kwargs)  # type: ignore[arg-type]
    assert_same(got, brute_force(fp, k))
    return got


@st.composite
def clustered_fingerprints(draw: st.DrawFn, max_size: int = 300) -> np.ndarray:
    """Random fingerprints, near copies of a few bases (up to 10 flipped bits) and duplicates."""
    n = draw(st.integers(0, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    num_bases = draw(st.integers(1, 6))
    max_flips = draw(st.integers(0, 10))
    rng = np.random.default_rng(seed)
    bases = rng.integers(0, 2**64, size=num_bases, dtype=np.uint64, endpoint=False)
    kind = rng.integers(0, 4, size=n)
    fp = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)  # kind 0: random
    near = bases[rng.integers(0, num_bases, size=n)]
    for _ in range(max_flips):
        flip = rng.random(n) < 0.5
        near[flip] ^= np.uint64(1) << rng.integers(0, 64, size=n).astype(np.uint64)[flip]
    fp[kind > 0] = near[kind > 0]
    dup = (kind == 3) & (np.arange(n) > 0)  # kind 3: copy of an earlier fingerprint
    fp[dup] = fp[(rng.random(n) * np.maximum(np.arange(n), 1)).astype(np.int64)][dup]
    return fp


# --------------------------------------------------------------------------------------------
# hamming_pairs against brute force
# --------------------------------------------------------------------------------------------


@settings(deadline=None, max_examples=150)
@given(fp=clustered_fingerprints(), k=st.integers(0, 8))
def test_matches_brute_force(fp: np.ndarray, k: int) -> None:
    check(fp, k)


@settings(deadline=None, max_examples=60)
@given(
    fp=clustered_fingerprints(max_size=200),
    k=st.integers(0, 6),
    max_group=st.sampled_from([2, 3, 4, 7]),
)
def test_tiny_max_group_matches_brute_force(fp: np.ndarray, k: int, max_group: int) -> None:
    check(fp, k, max_group=max_group)


@settings(deadline=None, max_examples=80)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 300),
    free_bits=st.integers(1, 14),
    k=st.integers(0, 6),
    max_group=st.sampled_from([2, 4, 16]),
    clusters=st.integers(1, 3),
    offset=st.sampled_from([0, 0, 64]) | st.integers(0, 64),
)
def test_dense_clusters_recursion(
    seed: int, n: int, free_bits: int, k: int, max_group: int, clusters: int, offset: int
) -> None:
    """Dense clusters: fingerprints equal except in one window of ``free_bits`` bits (the
    lowest bits for offset 0, the highest for offset 64), so prefix groups are large."""
    rng = np.random.default_rng(seed)
    shift = np.uint64(min(offset, 64 - free_bits))
    window = np.uint64((1 << free_bits) - 1) << shift
    bases = rng.integers(0, 2**64, size=clusters, dtype=np.uint64, endpoint=False)
    low = rng.integers(0, 1 << free_bits, size=n).astype(np.uint64) << shift
    fp = (bases[rng.integers(0, clusters, size=n)] & ~window) | low
    check(fp, k, max_group=max_group)


@settings(deadline=None, max_examples=40)
@given(fp=clustered_fingerprints(max_size=150), k=st.integers(1, 5), data=st.data())
def test_forced_plans_agree(fp: np.ndarray, k: int, data: st.DataObject) -> None:
    want = brute_force(fp, k)
    nd = np.unique(fp).size
    max_group = data.draw(st.sampled_from([3, 4096]))
    for c in (1, 2, 3):
        plan = plan_tables(nd, k, prefix_blocks=c)
        assert_same(hamming_pairs(fp, k, plan=plan, max_group=max_group), want)
    extra = data.draw(st.integers(1, 3))
    plan = plan_tables(nd, k, prefix_blocks=1, blocks=k + 1 + extra)
    assert_same(hamming_pairs(fp, k, plan=plan, max_group=max_group), want)


@pytest.mark.parametrize("k", range(0, 9))
@pytest.mark.parametrize("prefix_blocks", [None, 1, 2, 3])
@pytest.mark.parametrize("max_group", [2, 4096])
def test_planted_at_block_boundaries(k: int, prefix_blocks: int | None, max_group: int) -> None:
    """Pairs at every distance 0..k+1 from a base, differing exactly at block edges, at the
    ends of the word, and all inside one block."""
    rng = np.random.default_rng(1000 * k + (prefix_blocks or 0))
    plan = plan_tables(64, k, prefix_blocks=prefix_blocks)
    edges = boundary_bits(plan)
    first_start, first_width = plan.blocks[0]
    last_start, last_width = plan.blocks[-1]
    base = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    masks = [0, 0]  # the base twice: an identical pair
    for d in range(0, k + 2):
        for _ in range(6):
            masks.append(mask_of(rng.choice(edges, size=min(d, len(edges)), replace=False)))
        inside = list(range(first_start, first_start + first_width))
        masks.append(mask_of(inside[:d]))
        masks.append(mask_of(inside[-d:] if d else []))
        inside = list(range(last_start, last_start + last_width))
        masks.append(mask_of(rng.choice(inside, size=min(d, len(inside)), replace=False)))
        masks.append(mask_of([0, 63][:d] + list(range(1, max(d - 2, 0) + 1))))
    fp = np.array([base ^ m for m in masks], dtype=np.uint64)
    fp = np.concatenate([fp, rng.integers(0, 2**64, size=20, dtype=np.uint64, endpoint=False)])
    nd = np.unique(fp).size
    forced = plan_tables(nd, k, prefix_blocks=prefix_blocks) if prefix_blocks else None
    i, j, d = check(fp, k, plan=forced, max_group=max_group)
    # Each planted distance up to k is present.
    assert set(range(0, k + 1)) <= set(d.tolist())


@settings(deadline=None, max_examples=60)
@given(
    k=st.integers(0, 8),
    prefix_blocks=st.sampled_from([None, 1, 2, 3]),
    diffs=st.lists(st.lists(st.integers(0, 63), max_size=10), min_size=1, max_size=40),
    edge_only=st.booleans(),
    base=st.integers(0, ALL_ONES),
)
def test_planted_hypothesis(
    k: int,
    prefix_blocks: int | None,
    diffs: list[list[int]],
    edge_only: bool,
    base: int,
) -> None:
    plan = plan_tables(len(diffs) + 1, k, prefix_blocks=prefix_blocks)
    edges = boundary_bits(plan)
    if edge_only:
        diffs = [[edges[b % len(edges)] for b in bits] for bits in diffs]
    fp = np.array([base] + [base ^ mask_of(bits) for bits in diffs], dtype=np.uint64)
    check(fp, k, plan=plan_tables(np.unique(fp).size, k, prefix_blocks=prefix_blocks))
    check(fp, k, max_group=2)


def test_many_identical_fingerprints() -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, size=3, dtype=np.uint64, endpoint=False)
    fp = np.concatenate(
        [
            np.full(400, base[0]),
            np.full(50, base[1]),
            np.full(30, base[1] ^ np.uint64(0b101)),  # distance 2 from base[1]
            np.full(20, base[0] ^ np.uint64(1 << 63)),  # distance 1 from base[0]
            base[2:],
        ]
    ).astype(np.uint64)
    fp = fp[rng.permutation(fp.size)]
    i, _, d = check(fp, 2)
    expected = math.comb(400, 2) + math.comb(50, 2) + math.comb(30, 2) + 50 * 30 + 400 * 20
    expected += math.comb(20, 2)
    assert i.size == expected
    assert int((d == 0).sum()) == math.comb(400, 2) + math.comb(50, 2) + math.comb(30, 2) + 190


def test_k0_is_exact_match() -> None:
    fp = np.array([5, 4, 5, 5, 1 << 63, 4, 7], dtype=np.uint64)
    i, j, d = hamming_pairs(fp, 0)
    assert list(zip(i.tolist(), j.tolist())) == [(0, 2), (0, 3), (1, 5), (2, 3)]
    assert d.tolist() == [0, 0, 0, 0]
    assert plan_tables(fp.size, 0).num_tables == 1


def test_large_k() -> None:
    rng = np.random.default_rng(3)
    fp = rng.integers(0, 2**64, size=120, dtype=np.uint64, endpoint=False)
    fp[60:] = fp[:60] ^ (rng.integers(0, 2**64, size=60, dtype=np.uint64) & fp[:60])
    for k in (16, 24, 32):
        check(fp, k)
        check(fp, k, max_group=2)


def test_recursion_is_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = tables._search_group

    def spy(group, *args):  # type: ignore[no-untyped-def]
        calls.append(group.size)
        return real(group, *args)

    monkeypatch.setattr(tables, "_search_group", spy)
    rng = np.random.default_rng(5)
    fp = (np.uint64(0xABCDEF) << np.uint64(40)) | rng.integers(0, 1 << 12, 250).astype(np.uint64)
    check(fp, 3, max_group=4)
    assert calls and max(calls) > 4


@settings(deadline=None, max_examples=40)
@given(fp=clustered_fingerprints(max_size=200), k=st.integers(0, 6), data=st.data())
def test_tables_on_all_cores_match_brute_force(fp: np.ndarray, k: int, data: st.DataObject) -> None:
    """The tables run on several threads (forced here for small inputs) give the same pairs."""
    prefix_blocks = data.draw(st.sampled_from([None, 1, 2, 3]))
    plan = (
        plan_tables(np.unique(fp).size, k, prefix_blocks=prefix_blocks) if prefix_blocks else None
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "_PARALLEL_MIN_VALUES", 0)
        check(fp, k, plan=plan, max_group=data.draw(st.sampled_from([2, 4096])))


def test_more_pairs_than_values() -> None:
    """Every pair of a dense cluster is within k: more pairs than values to hold them."""
    rng = np.random.default_rng(2)
    base = rng.integers(0, 2**64, dtype=np.uint64, endpoint=False)
    fp = base ^ (np.uint64(1) << np.arange(40, dtype=np.uint64))
    for max_group in (2, 4096):
        i, _, _ = check(fp, 2, max_group=max_group)
        assert i.size == math.comb(40, 2)


def test_empty_and_tiny_inputs() -> None:
    for n in (0, 1):
        i, j, d = hamming_pairs(np.zeros(n, dtype=np.uint64), 3)
        assert i.size == j.size == d.size == 0
        assert i.dtype == np.int64 and d.dtype == np.uint8
    assert_same(hamming_pairs(np.array([0, 0], dtype=np.uint64), 0), brute_force([0, 0], 0))
    assert_same(hamming_pairs([0, ALL_ONES, 3], 2), brute_force([0, ALL_ONES, 3], 2))


def test_deterministic() -> None:
    rng = np.random.default_rng(11)
    fp = rng.integers(0, 1 << 10, size=300).astype(np.uint64) * np.uint64(0x100000001)
    first = hamming_pairs(fp, 4, max_group=8)
    second = hamming_pairs(fp.copy(), 4, max_group=8)
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()


def test_input_not_modified() -> None:
    fp = np.array([3, 1, 2, 3], dtype=np.uint64)
    before = fp.copy()
    hamming_pairs(fp, 2)
    distinct_hamming_pairs(np.array([3, 1, 2], dtype=np.uint64), 2)
    assert np.array_equal(fp, before)


# --------------------------------------------------------------------------------------------
# distinct_hamming_pairs, collapse_identical
# --------------------------------------------------------------------------------------------


@settings(deadline=None, max_examples=60)
@given(fp=clustered_fingerprints(), k=st.integers(0, 8), max_group=st.sampled_from([2, 4096]))
def test_distinct_matches_brute_force(fp: np.ndarray, k: int, max_group: int) -> None:
    _, first = np.unique(fp, return_index=True)
    values = fp[np.sort(first)]  # distinct, in input (unsorted) order
    assert_same(distinct_hamming_pairs(values, k, max_group=max_group), brute_force(values, k))


@settings(deadline=None, max_examples=60)
@given(
    fp=clustered_fingerprints(max_size=200),
    k=st.integers(0, 6),
    max_group=st.sampled_from([2, 4096]),
    prefix_blocks=st.sampled_from([None, 1, 2, 3]),
    ascending=st.booleans(),
)
def test_distinct_by_first_block_unordered_is_the_whole_search(
    fp: np.ndarray, k: int, max_group: int, prefix_blocks: int | None, ascending: bool
) -> None:
    """The groups of tables by first block, each searched alone without the sort of its pairs,
    find every pair once between them."""
    _, first = np.unique(fp, return_index=True)
    values = np.sort(fp[first]) if ascending else fp[np.sort(first)]
    plan = plan_tables(max(values.size, 2), k, prefix_blocks=prefix_blocks)
    whole = distinct_hamming_pairs(values, k, plan, max_group, ordered=False)
    groups = [
        distinct_hamming_pairs(values, k, plan, max_group, first_block=b, ordered=False)
        for b in sorted({t[0] for t in plan.tables})
    ]
    want = brute_force(values, k)
    for a, b, d in [whole, *[tuple(np.concatenate(x) for x in zip(*groups))]]:
        assert bool(np.all(a < b))
        order = np.lexsort((b, a))
        assert_same((a[order], b[order], d[order]), want)


def test_distinct_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="values must be distinct, got 5"):
        distinct_hamming_pairs(np.array([5, 1, 5], dtype=np.uint64), 1)


@settings(deadline=None, max_examples=60)
@given(fp=clustered_fingerprints())
def test_collapse_identical_matches_unique(fp: np.ndarray) -> None:
    values, inverse, counts = collapse_identical(fp)
    want = np.unique(fp, return_inverse=True, return_counts=True)
    assert np.array_equal(values, want[0])
    assert np.array_equal(inverse, want[1].reshape(-1))
    assert np.array_equal(counts, want[2])
    assert values.dtype == np.uint64 and inverse.dtype == np.int64 and counts.dtype == np.int64


@settings(deadline=None, max_examples=60)
@given(fp=clustered_fingerprints())
def test_buckets_found_in_halves_are_those_of_one_pass(fp: np.ndarray) -> None:
    """Runs of identical values found by two halves of the sorted values, a run across the
    middle too (forced here for small inputs)."""
    whole = IdenticalBuckets.of(fp)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        halves = IdenticalBuckets.of(fp)
    for got, want in zip(
        (halves.values, halves.offsets, halves.members),
        (whole.values, whole.offsets, whole.members),
    ):
        assert got.tolist() == want.tolist()
    counts = np.unique(fp, return_counts=True)[1]
    assert whole.offsets.tolist() == [0, *np.cumsum(counts).tolist()]


@st.composite
def ranked_fingerprints(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprints (empty, one, all equal, few distinct or spread), a rank per input (all
    equal, ascending, descending or random with ties) and a mask of the inputs that count."""
    n = draw(st.sampled_from([0, 1, draw(st.integers(0, 80))]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    distinct = draw(st.sampled_from([1, 3, 1000]))
    fp = rng.integers(0, 2**64, size=distinct, dtype=np.uint64)[rng.integers(0, distinct, n)]
    rank = {
        "equal": np.zeros(n, np.int64),
        "ascending": np.arange(n, dtype=np.int64),
        "descending": np.arange(n, dtype=np.int64)[::-1].copy(),
        "ties": rng.integers(-3, 3, size=n),
    }[draw(st.sampled_from(["equal", "ascending", "descending", "ties"]))]
    among = rng.random(n) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    return fp, rank, among


@settings(deadline=None, max_examples=150)
@given(ranked_fingerprints())
def test_earliest_is_the_smallest_rank_then_index(case) -> None:
    """On one thread, and on two (each a half of the buckets; forced here for small inputs)."""
    fp, rank, among = case
    buckets = IdenticalBuckets.of(fp)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        in_halves = [buckets.earliest(rank), buckets.earliest(rank, among)]
    for got, allowed in (
        (buckets.earliest(rank), np.ones(fp.size, bool)),
        (buckets.earliest(rank, among), among),
        (in_halves[0], np.ones(fp.size, bool)),
        (in_halves[1], among),
    ):
        want = []
        for value in buckets.values.tolist():
            holders = [i for i in range(fp.size) if fp[i] == value and allowed[i]]
            want.append(min(holders, key=lambda i: (rank[i], i)) if holders else -1)
        assert got.tolist() == want
        assert got.dtype == np.int64


def test_earliest_checks_its_arguments() -> None:
    buckets = IdenticalBuckets.of(np.array([3, 3], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"shape \(2,\), got \(3,\)"):
        buckets.earliest(np.arange(3))
    with pytest.raises(ValueError, match="integer dtype, got float64"):
        buckets.earliest(np.zeros(2))
    with pytest.raises(ValueError, match="bool array of shape"):
        buckets.earliest(np.arange(2), np.array([1, 0]))


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: hamming_pairs(np.array([1, 2], dtype=np.int64), 1), "dtype uint64, got int64"),
        (lambda: hamming_pairs(np.zeros((2, 2), dtype=np.uint64), 1), "must be 1-D"),
        (lambda: hamming_pairs(np.zeros(3, dtype=np.uint64), 40), r"0\.\.32, got 40"),
        (lambda: hamming_pairs(np.zeros(3, dtype=np.uint64), 1, max_group=1), ">= 2, got 1"),
        (
            lambda: hamming_pairs(np.zeros(3, dtype=np.uint64), 1, plan=plan_tables(3, 2)),
            "plan.hamming_k must equal hamming_k=1, got 2",
        ),
        (lambda: distinct_hamming_pairs(np.zeros(3, dtype=np.float64), 1), "dtype uint64"),
        (
            lambda: distinct_hamming_pairs(np.arange(3, dtype=np.uint64), 1, first_block=99),
            "first_block must be one of .*, got 99",
        ),
    ],
)
def test_search_validation(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()
