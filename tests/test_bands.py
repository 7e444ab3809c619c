"""Tests for neardup.candidates.bands: band hashes, buckets and candidate pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import band_parts, radix
from neardup.candidates import bands as bands_module
from neardup.candidates.bands import (
    DistinctUnion,
    _grouped_by_hash,
    band_buckets,
    band_columns,
    band_hash_columns,
    band_hashes,
    candidate_pairs,
    packed_pairs_from_band_columns,
    pairs_from_band_columns,
    rank_positions,
)
from neardup.lsh import candidate_probability
from neardup.rank_directory import RowSet

# --------------------------------------------------------------------------- references


def brute_force_pairs(sig: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    n = sig.shape[0]
    out = set()
    for i in range(n):
        for j in range(i + 1, n):
            for b in range(bands):
                cols = slice(b * rows, (b + 1) * rows)
                if np.array_equal(sig[i, cols], sig[j, cols]):
                    out.add((i, j))
                    break
    return out


def components(n: int, left, right) -> list[int]:
    """Union-find; returns the smallest member of each node's component."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(left, right):
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [find(x) for x in range(n)]


@st.composite
def planted_signatures(draw):
    """Small signature matrices with many equal bands: a tiny alphabet plus copied bands."""
    n = draw(st.integers(0, 14))
    bands = draw(st.integers(1, 4))
    rows = draw(st.integers(1, 4))
    extra = draw(st.integers(0, 3))  # unused trailing columns
    alphabet = draw(st.sampled_from([2, 3, 1000, 2**32]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = (n, bands * rows + extra)
    sig = rng.integers(0, alphabet, size=shape, dtype=np.uint64).astype(np.uint32)
    if n >= 2:
        for _ in range(draw(st.integers(0, 6))):  # plant: copy a band of document a into b
            a, b = rng.integers(0, n, size=2)
            band = rng.integers(0, bands)
            cols = slice(band * rows, (band + 1) * rows)
            sig[b, cols] = sig[a, cols]
    if n >= 1 and draw(st.booleans()):  # make some values the extremes of uint32
        sig[rng.integers(0, n), rng.integers(0, sig.shape[1])] = np.uint32(0xFFFFFFFF)
    rank = None
    if draw(st.booleans()):
        rank = rng.integers(0, 4, size=n)  # many ties, broken by index
        if draw(st.booleans()):
            rank = rank.astype(np.float64) - 0.5
    return sig, bands, rows, rank


# --------------------------------------------------------------------------- exactness


@settings(max_examples=300, deadline=None)
@given(planted_signatures())
def test_all_mode_equals_brute_force(case):
    sig, bands, rows, rank = case
    left, right = candidate_pairs(sig, bands, rows, rank=rank, mode="all")
    assert left.dtype == right.dtype == np.int64
    pairs = list(zip(left.tolist(), right.tolist()))
    assert all(i < j for i, j in pairs)
    assert pairs == sorted(set(pairs))  # each pair once, sorted by (i, j)
    assert set(pairs) == brute_force_pairs(sig, bands, rows)


@settings(max_examples=300, deadline=None)
@given(planted_signatures())
def test_star_mode_has_the_components_of_all_mode(case):
    sig, bands, rows, rank = case
    n = sig.shape[0]
    all_l, all_r = candidate_pairs(sig, bands, rows, mode="all")
    star_l, star_r = candidate_pairs(sig, bands, rows, rank=rank, mode="star")
    edges = list(zip(star_l.tolist(), star_r.tolist()))
    assert edges == sorted(set(edges))  # deduplicated and sorted
    assert components(n, star_l, star_r) == components(n, all_l, all_r)
    # Every star edge is a candidate pair, and its first end is the better-ranked one.
    all_pairs = set(zip(all_l.tolist(), all_r.tolist()))
    key = (lambda d: (d,)) if rank is None else (lambda d: (rank[d], d))
    for rep, d in edges:
        assert rep != d
        assert (min(rep, d), max(rep, d)) in all_pairs
        assert key(rep) < key(d)
    # No more edges than a spanning forest per bucket: at most (n - 1) per band.
    assert len(edges) <= bands * max(n - 1, 0)


@settings(max_examples=150, deadline=None)
@given(planted_signatures())
def test_buckets_hold_equal_bands(case):
    sig, bands, rows, _ = case
    bb = band_buckets(sig, bands, rows)
    assert bb.offsets[0] == 0 and bb.offsets[-1] == bb.members.size
    assert np.all(np.diff(bb.band) >= 0)
    pairs = set()
    for j, a, z in zip(bb.band.tolist(), bb.offsets[:-1].tolist(), bb.offsets[1:].tolist()):
        members = bb.members[a:z].tolist()
        assert len(members) >= 2 and members == sorted(members)
        block = sig[members, j * rows : (j + 1) * rows]
        assert np.all(block == block[0])
        pairs.update((x, y) for k, x in enumerate(members) for y in members[k + 1 :])
    assert pairs == brute_force_pairs(sig, bands, rows)
    # Each document is in exactly one bucket per band when singletons are kept.
    every = band_buckets(sig, bands, rows, min_size=1)
    for j in range(bands):
        sel = every.band == j
        sizes = np.diff(every.offsets)[sel]
        assert sizes.sum() == sig.shape[0]


# --------------------------------------------------------------------------- band hashes


def test_band_hashes_shape_equality_and_unused_columns():
    rng = np.random.default_rng(7)
    sig = rng.integers(0, 2**32, size=(50, 12), dtype=np.uint64).astype(np.uint32)
    sig[10, 0:3] = sig[3, 0:3]
    h = band_hashes(sig, 3, 3)  # uses columns 0..8 only
    assert h.shape == (50, 3) and h.dtype == np.uint64
    assert h[10, 0] == h[3, 0]
    assert len(set(h[:, 0].tolist())) == 49
    changed = sig.copy()
    changed[:, 9:] = 0
    np.testing.assert_array_equal(band_hashes(changed, 3, 3), h)
    # The same values in different bands hash differently (each band has its own key).
    same = np.tile(np.arange(3, dtype=np.uint32), (1, 2))
    hs = band_hashes(same, 2, 3)
    assert hs[0, 0] != hs[0, 1]
    # Fortran-ordered and sliced inputs give the same hashes.
    np.testing.assert_array_equal(band_hashes(np.asfortranarray(sig), 3, 3), h)
    np.testing.assert_array_equal(band_hashes(sig[::2], 3, 3), h[::2])


@pytest.mark.parametrize("n, bands, rows", [(0, 3, 3), (1, 1, 1), (37, 3, 3), (200, 32, 4)])
def test_band_hash_columns_are_the_band_hashes_band_by_band(n, bands, rows):
    rng = np.random.default_rng(n + bands)
    sig = rng.integers(0, 2**32, size=(n, 128), dtype=np.uint64).astype(np.uint32)
    columns = band_hash_columns(sig, bands, rows)
    assert columns.shape == (bands, n) and columns.flags.c_contiguous
    np.testing.assert_array_equal(columns, band_hashes(sig, bands, rows).T)
    with pytest.raises(ValueError):
        band_hash_columns(sig, 200, 1)  # more values than a signature holds


def test_band_hashes_are_injective_for_two_rows():
    # For rows <= 2 the hash is a bijection of the 64-bit band, so all distinct bands differ.
    rng = np.random.default_rng(11)
    sig = rng.integers(0, 2**32, size=(20_000, 4), dtype=np.uint64).astype(np.uint32)
    sig[:100, :2] = np.arange(200, dtype=np.uint32).reshape(100, 2)  # structured values too
    for rows in (1, 2):
        h = band_hashes(sig, 2, rows)
        for j in range(2):
            band = sig[:, j * rows : (j + 1) * rows]
            assert len(np.unique(h[:, j])) == len(np.unique(band, axis=0))


def test_band_hash_reference_value():
    # A fixed value pins the documented definition (splitmix64 chain over two-value lanes).
    mask = (1 << 64) - 1

    def mix64(z):
        z ^= z >> 30
        z = (z * 0xBF58476D1CE4E5B9) & mask
        z ^= z >> 27
        z = (z * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    values = [1, 2, 3, 4, 5]
    sig = np.array([values * 2], dtype=np.uint32)
    got = band_hashes(sig, 2, 5)
    for j in range(2):
        h = mix64(((j + 1) * 0x9E3779B97F4A7C15) & mask)
        for k in range(0, 4, 2):
            h = mix64(h ^ (values[k] | (values[k + 1] << 32)))
        h = mix64(h ^ values[4])
        assert int(got[0, j]) == h


# --------------------------------------------------------------------------- skew and edge cases


def test_skewed_bucket_star_is_linear():
    n = 20_000
    sig = np.tile(np.arange(16, dtype=np.uint32), (n, 1))
    left, right = candidate_pairs(sig, 4, 4, mode="star")
    assert left.size == n - 1
    assert np.all(left == 0)
    np.testing.assert_array_equal(right, np.arange(1, n))
    # A later document with the best rank becomes the representative.
    rank = np.arange(n)[::-1].copy()
    left, right = candidate_pairs(sig, 4, 4, mode="star", rank=rank)
    assert left.size == n - 1 and np.all(left == n - 1)
    np.testing.assert_array_equal(right, np.arange(n - 1))


def test_all_mode_small_clique():
    sig = np.zeros((60, 8), dtype=np.uint32)
    left, right = candidate_pairs(sig, 2, 4)
    assert left.size == 60 * 59 // 2
    iu = np.triu_indices(60, 1)
    np.testing.assert_array_equal(left, iu[0])
    np.testing.assert_array_equal(right, iu[1])


def test_empty_and_single():
    for n in (0, 1):
        sig = np.zeros((n, 8), dtype=np.uint32)
        for mode in ("all", "star"):
            left, right = candidate_pairs(sig, 2, 4, mode=mode)
            assert left.size == right.size == 0 and left.dtype == np.int64
        bb = band_buckets(sig, 2, 4)
        assert bb.band.size == 0 and bb.offsets.tolist() == [0] and bb.members.size == 0


def test_deterministic():
    rng = np.random.default_rng(3)
    sig = rng.integers(0, 3, size=(300, 6), dtype=np.uint64).astype(np.uint32)
    rank = rng.random(300)
    for mode in ("all", "star"):
        a = candidate_pairs(sig, 3, 2, rank=rank, mode=mode)
        b = candidate_pairs(sig.copy(), 3, 2, rank=rank.copy(), mode=mode)
        assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


# --------------------------------------------------------------------------- the S-curve


@pytest.mark.parametrize("bands, rows, s", [(10, 4, 0.5), (10, 4, 0.7), (20, 5, 0.3), (9, 13, 0.8)])
def test_candidate_rate_matches_formula(bands, rows, s):
    # Pairs (2k, 2k+1) whose positions agree independently with probability s.
    pairs = 20_000
    num_perm = bands * rows
    rng = np.random.default_rng(int(s * 1000) + bands)
    a = rng.integers(0, 2**32, size=(pairs, num_perm), dtype=np.uint64).astype(np.uint32)
    flip = rng.integers(1, 2**32, size=(pairs, num_perm), dtype=np.uint64).astype(np.uint32)
    b = np.where(rng.random((pairs, num_perm)) < s, a, a ^ flip)  # xor with nonzero: differs
    sig = np.empty((2 * pairs, num_perm), dtype=np.uint32)
    sig[0::2], sig[1::2] = a, b
    left, right = candidate_pairs(sig, bands, rows)
    planted = (left % 2 == 0) & (right == left + 1)
    assert planted.all()  # random unrelated signatures never share a whole band
    observed = planted.sum() / pairs
    p = candidate_probability(s, bands, rows)
    se = math.sqrt(p * (1 - p) / pairs)
    assert abs(observed - p) <= 4 * se, (observed, p, se)


# --------------------------------------------------------------------------- validation


def test_validation_messages():
    sig = np.zeros((4, 8), dtype=np.uint32)
    with pytest.raises(ValueError, match="signatures must have dtype uint32, got int64"):
        candidate_pairs(sig.astype(np.int64), 2, 4)
    with pytest.raises(ValueError, match="2-D uint32"):
        candidate_pairs(sig[0], 2, 4)
    with pytest.raises(ValueError, match="2-D uint32"):
        band_hashes(sig.tolist(), 2, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"bands \* rows must be in 1..8 .*got 3 \* 3 = 9"):
        candidate_pairs(sig, 3, 3)
    with pytest.raises(ValueError, match="bands must be an integer >= 1, got 0"):
        band_hashes(sig, 0, 4)
    with pytest.raises(ValueError, match="rows must be an integer >= 1, got 2.5"):
        band_buckets(sig, 2, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_size must be an integer >= 1, got 0"):
        band_buckets(sig, 2, 4, min_size=0)
    with pytest.raises(ValueError, match="mode must be one of all, star; got 'pairs'"):
        candidate_pairs(sig, 2, 4, mode="pairs")
    with pytest.raises(ValueError, match=r"rank must have shape \(4,\)"):
        candidate_pairs(sig, 2, 4, rank=np.arange(3), mode="star")
    with pytest.raises(ValueError, match="rank must not contain NaN, got NaN at index 1"):
        candidate_pairs(sig, 2, 4, rank=np.array([0.0, np.nan, 1.0, 2.0]), mode="star")
    with pytest.raises(ValueError, match="rank must be an integer or float array"):
        candidate_pairs(sig, 2, 4, rank=np.array(["a", "b", "c", "d"]), mode="star")


def _search(columns, mode, positions, workers, subset, room):
    """Packed pairs and the repair buckets (members, counts, others summed) of a search."""
    buckets = [] if mode == "star" else None
    packed = packed_pairs_from_band_columns(
        columns, mode, positions, workers, buckets, 3, subset=subset, room=room
    )
    if buckets is None:
        return packed.tolist(), None
    members = np.concatenate([m for m, _, _ in buckets] or [np.zeros(0, np.uint32)])
    counts = np.concatenate([c for _, c, _ in buckets] or [np.zeros(0, np.int32)])
    return packed.tolist(), (members.tolist(), counts.tolist(), sum(o for _, _, o in buckets))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 300),
    st.integers(1, 6),
    st.sampled_from(["all", "star"]),
    st.integers(1, 4),
    st.sampled_from([None, 1, 200, 2000]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_bands_side_by_side_and_in_partitions_give_the_pairs_of_whole_bands(
    n, bands, mode, workers, room, with_subset, seed
):
    """Threads search several bands at once, also when the columns come from band_columns
    (each column must stay valid while later ones are made); a room of a few documents
    splits every band into partitions by the leading bits of its hashes. The pairs, and the
    buckets in their order, are those of each band sorted whole, one at a time."""
    rng = np.random.default_rng(seed)
    sig = rng.integers(0, 4, size=(n, bands * 2), dtype=np.uint32)  # small values: buckets
    marks = rng.random(n) < 0.7
    subset = np.flatnonzero(marks) if with_subset else None
    searched = n if subset is None else subset.shape[0]
    positions = rng.permutation(searched).astype(np.int64) if mode == "star" else None
    whole = [c if subset is None else c[subset] for c in band_columns(sig, bands, 2)]
    want = _search(whole, mode, positions, 1, None, None)
    want_by_index = _search(whole, mode, None, 1, None, None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bands_module, "MIN_PART_ROWS", 1)  # partitions of a few documents
        columns = band_columns(sig, bands, 2)
        rows = RowSet.of_marks(marks) if with_subset else None
        assert _search(columns, mode, positions, workers, rows, room) == want
        assert _search(whole, mode, None, workers, None, room) == want_by_index
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        pairs_from_band_columns(band_columns(sig, bands, 2), mode, None, 0)


@pytest.mark.parametrize("workers", [1, 2])
def test_one_bucket_of_every_document_in_partitions(workers, monkeypatch):
    """Every document equal on every band: each band is one bucket, one partition however
    small the room, its star and buckets those of the whole band."""
    monkeypatch.setattr(bands_module, "MIN_PART_ROWS", 1)
    columns = [np.full(500, 77 + j, dtype=np.uint64) for j in range(3)]
    positions = np.arange(500)[::-1].copy()
    want = _search(columns, "star", positions, 1, None, None)
    assert _search(columns, "star", positions, workers, None, 64) == want
    assert len(want[0]) == 499  # one star, the same in every band
    assert (
        _search(columns, "all", None, workers, None, 64)[0]
        == _search(columns, "all", None, 1, None, None)[0]
    )


def test_buckets_far_apart_in_the_column_are_found_in_partitions(monkeypatch):
    """Buckets whose documents are far apart, read in different blocks, each bucket whole
    in one partition of two documents' room (partitions by position would cut them)."""
    monkeypatch.setattr(band_parts, "BLOCK_ROWS", 4)
    monkeypatch.setattr(bands_module, "MIN_PART_ROWS", 1)
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)
    column = values[np.concatenate([np.arange(40), np.arange(40)[::-1], np.arange(0, 40, 5)])]
    room = 2 * band_parts.ROW_BYTES
    assert _search([column], "star", None, 1, None, room) == _search(
        [column], "star", None, 1, None, None
    )
    got = _search([column], "all", None, 2, None, room)[0]
    n = column.shape[0]
    want = {(i, j) for i in range(n) for j in range(i + 1, n) if column[i] == column[j]}
    assert [(p >> 32, p & 0xFFFFFFFF) for p in got] == sorted(want)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([0, 1, 40]),
    st.sampled_from(["int64", "uint32", "float64", "float32"]),
    st.sampled_from(["random", "equal", "sorted", "reversed", "zeros"]),
    st.integers(0, 2**32 - 1),
)
def test_rank_positions_are_the_places_in_rank_then_index_order(n, dtype, shape, seed):
    """Integer and float ranks (signed zeros and infinities among them), with ties."""
    rng = np.random.default_rng(seed)
    pool = np.array([-np.inf, -2.5, -0.0, 0.0, 1.0, 1.0, 7.0, np.inf, 2**40, -(2**40)])
    if dtype.startswith("float"):
        rank = pool[rng.integers(0, pool.size, size=n)].astype(dtype)
    else:
        rank = rng.integers(0, 2**31, size=n).astype(dtype)
    if shape == "equal":
        rank[:] = rank[0] if n else 0
    elif shape == "sorted":
        rank = np.sort(rank)
    elif shape == "reversed":
        rank = np.sort(rank)[::-1].copy()
    elif shape == "zeros" and dtype.startswith("float"):
        rank = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
    want = np.empty(n, dtype=np.int64)
    want[sorted(range(n), key=lambda i: (rank[i], i))] = np.arange(n)
    assert rank_positions(rank, n).tolist() == want.tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=300),
    st.integers(0, 5),
    st.integers(0, 2**32 - 1),
)
def test_grouped_by_hash_is_the_stable_argsort(pool, repeats, seed):
    # Values drawn from a small pool (many equal hashes), some sharing their leading byte or
    # all but their lowest byte, so that partitions hold several runs and passes are skipped.
    rng = np.random.default_rng(seed)
    base = np.array(pool or [0], dtype=np.uint64)
    near = base ^ rng.integers(0, 256, base.shape[0]).astype(np.uint64)
    values = np.concatenate([base, near])
    keys = values[rng.integers(0, values.shape[0], values.shape[0] * (repeats + 1))]
    sorted_keys, order = _grouped_by_hash(keys)
    want = np.argsort(keys, kind="stable")
    assert order.dtype == np.uint32
    assert order.astype(np.int64).tolist() == want.tolist()
    assert sorted_keys.tolist() == keys[want].tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=20), st.booleans())
def test_distinct_union_is_the_union_of_sets(parts, two_cores):
    with pytest.MonkeyPatch.context() as patch:
        if two_cores:  # every merge in two halves of the values, on two threads
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        union = DistinctUnion()
        for part in parts:
            union.add(radix.sorted_distinct(np.array(part, dtype=np.uint64)))
            # The levels stay a stack of unions each more than twice the next.
            sizes = [level.shape[0] for level in union.levels]
            assert all(big > 2 * small for big, small in zip(sizes, sizes[1:]))
        values = union.values()
    want = sorted({v for part in parts for v in part})
    assert values.tolist() == want
