import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates.chunks import (
    CandidatePairs,
    bound_possible,
    bounded_pairs,
    chunks_of_pairs,
    filter_slices,
)
from neardup.lcs import length_bounds, possible_pairs
from neardup.text.units import lcs_unit_sketches


@st.composite
def packed_pairs(draw):
    m = draw(st.integers(1, 30))
    documents = np.array(sorted(draw(st.sets(st.integers(0, 10**6), min_size=m, max_size=m))))
    ends = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)), max_size=60))
    packed = np.array([x << 32 | y for x, y in ends], dtype=np.uint64)
    return packed, documents, ends


@settings(max_examples=60, deadline=None)
@given(packed_pairs(), st.integers(1, 70), st.booleans())
def test_slices_filtered_give_the_pairs_a_whole_filter_gives(case, size, filtered):
    packed, documents, ends = case
    pairs = CandidatePairs.of_packed(packed, documents)
    want = [(int(documents[x]), int(documents[y])) for x, y in ends]
    assert len(pairs) == len(want)
    seen = []

    def keep(a, b):
        return (a + b) % 3 != 0

    a, b = filter_slices(
        pairs, keep if filtered else None, size, lambda a, b: seen.extend(zip(a, b))
    )
    assert seen == want  # every slice visited once, in order
    kept = [p for p in want if (p[0] + p[1]) % 3 != 0] if filtered else want
    assert list(zip(a.tolist(), b.tolist())) == kept
    assert a.dtype == b.dtype == np.int64


def test_pairs_held_as_arrays_are_not_copied_when_all_are_kept():
    a, b = np.array([3, 1]), np.array([4, 2])
    pairs = CandidatePairs.of_arrays(a, b)
    got_a, got_b = filter_slices(pairs, None, 1)
    assert got_a is pairs.arrays[0] and got_b.tolist() == [4, 2]
    empty = CandidatePairs.of_packed(np.zeros(0, np.uint64), np.arange(3))
    assert [x.tolist() for x in filter_slices(empty, lambda a, b: a > 0, 4)] == [[], []]


@pytest.mark.parametrize("with_sketches", [False, True])
def test_bound_possible_is_the_lcs_kernels_first_tests(with_sketches):
    rng = np.random.default_rng(2)
    words = "a b c d e f g".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 15)))) for _ in range(50)]
    sizes, sketches = lcs_unit_sketches(texts)
    a, b = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    got = bound_possible(a, b, sizes, sketches if with_sketches else None, 0.7, slice_size=13)
    if with_sketches:
        assert got.tolist() == possible_pairs(sizes, sketches, a, b, 0.7).tolist()
    else:
        assert got.tolist() == (length_bounds(sizes[a], sizes[b]) >= 0.7).tolist()
    assert 0 < got.sum() < 400


@settings(max_examples=30, deadline=None)
@given(packed_pairs(), st.integers(1, 70), st.integers(1, 40), st.sampled_from([0.5, 0.8]))
def test_bounded_pairs_by_blocks_of_spilled_sketches_keep_the_same_pairs(
    tmp_path_factory, case, size, block_rows, threshold
):
    packed, documents, _ = case
    rng = np.random.default_rng(int(documents.sum()) % 1000)
    texts = [" ".join(rng.choice(list("abcdef"), int(rng.integers(1, 12)))) for _ in range(40)]
    texts[:2] = ["이 패키지는 문서를 담고 있습니다 " * 60, "문서 " * 300]  # sketches of 255s
    sizes, sketches = lcs_unit_sketches(texts)
    documents = documents % 40
    path = tmp_path_factory.mktemp("chunks") / "sketches.bin"
    sketches.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", shape=sketches.shape)
    pairs = CandidatePairs.of_packed(packed, documents)
    want = bounded_pairs(pairs, sizes, sketches, threshold, size)
    swept = CandidatePairs.of_packed(packed, documents)
    got = bounded_pairs(swept, sizes, mapped, threshold, size, block_rows)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]
    assert len(swept) == 0  # released before the sweep of blocks
    a, b = pairs.slice(0, len(pairs))
    keep = possible_pairs(sizes, sketches, a, b, threshold)
    assert want[0].tolist() == a[keep].tolist() and want[1].tolist() == b[keep].tolist()


@pytest.mark.parametrize("seed", range(5))
def test_pair_chunks_hold_their_documents_within_the_limit(seed):
    """Each chunk's distinct documents cost at most the limit (unless one pair alone exceeds
    it), every pair is in one chunk, and chunks follow the pair order."""
    rng = np.random.default_rng(seed)
    n = 200
    cost = rng.integers(1, 50, n).astype(np.float64)
    a = rng.integers(0, n, 2000)
    b = rng.integers(0, n, 2000)
    limit = 400.0
    chunk = chunks_of_pairs(a, b, cost, limit)
    assert (np.diff(chunk) >= 0).all()
    for c in np.unique(chunk):
        pairs = np.flatnonzero(chunk == c)
        docs = np.unique(np.concatenate([a[pairs], b[pairs]]))
        assert cost[docs].sum() <= limit or pairs.shape[0] == 1


def _greedy_chunks(a, b, cost, limit):
    """The definition, pair by pair: a set of the current chunk's documents."""
    out, current, used, docs = [], 0, 0.0, set()
    for x, y in zip(a.tolist(), b.tolist()):
        extra = sum(float(cost[d]) for d in {x, y} - docs)
        if used > 0 and used + extra > limit:
            current, used, docs = current + 1, 0.0, set()
            extra = sum(float(cost[d]) for d in {x, y})
        out.append(current)
        docs |= {x, y}
        used += extra
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float64])
def test_pair_chunks_are_the_greedy_packing_for_any_cost_dtype(seed, dtype):
    """Chunks equal a set-based greedy packing, whatever the costs' dtype (read in place):
    repeated documents, self-pairs, pairs over the limit alone, documents past a word's end."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    cost = rng.integers(0, 60, n).astype(dtype)
    m = int(rng.integers(0, 3000))
    a = rng.integers(0, n, m)
    b = np.where(rng.random(m) < 0.05, a, rng.integers(0, n, m))
    limit = float(rng.choice([0.0, 30.0, 200.0, 5000.0]))
    assert chunks_of_pairs(a, b, cost, limit).tolist() == _greedy_chunks(a, b, cost, limit)


def test_pair_chunks_reject_costs_that_are_not_numbers():
    with pytest.raises(ValueError, match="dtype bool"):
        chunks_of_pairs(np.array([0]), np.array([1]), np.ones(2, dtype=bool), 1.0)
