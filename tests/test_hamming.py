"""Tests for neardup.candidates.hamming: the SimHash candidate search against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import radix
from neardup.candidates.hamming import HammingSearch


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=12),
    st.integers(0, 60),
    st.integers(0, 8),
    st.randoms(use_true_random=False),
)
def test_hamming_search_star_edges_and_pairs_equal_brute_force(values, n, k, rnd):
    """Fingerprints with copies and near copies; representatives an arbitrary subset (so a
    fingerprint may be held by none of them) and ranks a permutation."""
    pool = list(values) + [v ^ (1 << rnd.randrange(64)) for v in values]
    fps = np.array([rnd.choice(pool) for _ in range(n)] if pool else [], dtype=np.uint64)
    n = fps.size
    reps = np.array(sorted(rnd.sample(range(n), rnd.randint(0, n))), dtype=np.int64)
    rank = np.arange(n)
    rnd.shuffle(rank)
    search = HammingSearch.of(fps, k)
    a, b = search.star_edges(reps, rank)
    with pytest.MonkeyPatch.context() as patch:  # the buckets' heads in two halves, two threads
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        assert [x.tolist() for x in search.star_edges(reps, rank)] == [a.tolist(), b.tolist()]
    # Brute force: each fingerprint's earliest representative; stars in representative
    # order, then those earliest ones of every two fingerprints within k, by value.
    held = sorted({int(fps[r]) for r in reps})
    head = {v: min((r for r in reps if fps[r] == v), key=lambda r: rank[r]) for v in held}
    want = [(head[int(fps[r])], r) for r in reps if head[int(fps[r])] != r]
    want += [
        (head[x], head[y])
        for i, x in enumerate(held)
        for y in held[i + 1 :]
        if (x ^ y).bit_count() <= k
    ]
    assert list(zip(a.tolist(), b.tolist())) == want
    i, j, dist = search.pairs()
    want_pairs = [
        (p, q, (int(fps[p]) ^ int(fps[q])).bit_count())
        for p in range(n)
        for q in range(p + 1, n)
        if (int(fps[p]) ^ int(fps[q])).bit_count() <= k
    ]
    assert list(zip(i.tolist(), j.tolist(), dist.tolist())) == want_pairs
    with pytest.MonkeyPatch.context() as patch:  # the pairs listed in two halves, two threads
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        i, j, dist = search.pairs()
    assert list(zip(i.tolist(), j.tolist(), dist.tolist())) == want_pairs


def brute_pairs(fps, k):
    return [
        (p, q, (int(fps[p]) ^ int(fps[q])).bit_count())
        for p in range(fps.size)
        for q in range(p + 1, fps.size)
        if (int(fps[p]) ^ int(fps[q])).bit_count() <= k
    ]


@pytest.mark.parametrize("min_keys", [0, radix.PARALLEL_MIN_KEYS])
@pytest.mark.parametrize(
    "fps",
    [
        np.full(70, 0xDEADBEEF, dtype=np.uint64),  # one fingerprint: every pair at distance 0
        # exactly k = 3 bits apart from the first, and 4 (one more than k)
        np.array([0, 0b111, 0b1110000, 0b1111 << 60, 7 << 61, 0b111], dtype=np.uint64),
        # two fingerprints of many copies each, 3 bits apart
        np.array([0, 0b10101] * 20 + [0b1111], dtype=np.uint64),
    ],
)
def test_adversarial_pairs_equal_brute_force(fps, min_keys):
    """Copies of one fingerprint, fingerprints exactly k bits apart and k + 1 apart, many copies
    of two fingerprints within k: every pair, once, on one thread and on two."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", min_keys)
        i, j, dist = HammingSearch.of(fps, 3).pairs()
    assert list(zip(i.tolist(), j.tolist(), dist.tolist())) == brute_pairs(fps, 3)
