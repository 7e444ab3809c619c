"""The repair round's bucket pairs listed a slice of buckets at a time: the same distinct pairs
and counts as listing every pair of every bucket at once, whatever the slices, the bands the
buckets come in and where the sketches are (``neardup.candidates.bucket_lists``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import radix
from neardup.candidates.bucket_lists import BucketParts, csr_slices, listed_pairs, unpacked
from neardup.lcs import possible_pairs
from neardup.text.units import lcs_unit_sketches

THRESHOLD = 0.6


def _texts(count: int = 48) -> list[str]:
    """Texts of 2 to 12 words of few (their lengths and counts rule some pairs out, not all),
    and two whose sketches are every count 255 (nothing rules them out, not even their
    lengths: 400 and 840 characters)."""
    rng = np.random.default_rng(11)
    words = "a b c d e f".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(2, 13)))) for _ in range(count)]
    texts[:2] = ["이 패키지는 문서를 담고 있습니다 " * 60, "문서 " * 200]
    return texts


SIZES, SKETCHES = lcs_unit_sketches(_texts())
POOL = SIZES.shape[0]


@pytest.fixture(scope="module")
def mapped_sketches(tmp_path_factory):
    """The sketches in a file, as an out-of-core run holds them once they spill."""
    path = tmp_path_factory.mktemp("sketches") / "sketches.bin"
    SKETCHES.tofile(path)
    return np.memmap(path, dtype=np.uint8, mode="r", shape=SKETCHES.shape)


@st.composite
def bucket_sets(draw):
    """``(documents, buckets, others)``: ascending documents of the pool, and buckets (lists
    of distinct positions among them) of one kind: random sizes, many of 2 members, at the cap
    of 16, above it, or one hot bucket of every document beside small ones; cut into bands of
    consecutive buckets, each band with a count of pairs of larger buckets (``others``)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    documents = np.sort(rng.choice(POOL, draw(st.integers(2, POOL)), replace=False))
    n = documents.shape[0]
    kind = draw(st.sampled_from(["random", "tiny", "cap", "above", "hot"]))
    count = draw(st.integers(0, 60))
    if kind == "random":
        sizes = rng.integers(2, 21, count)
    elif kind == "tiny":
        sizes = np.full(count, 2)
    elif kind == "cap":
        sizes = rng.choice([15, 16, 16, 17], count)
    elif kind == "above":
        sizes = rng.integers(17, 24, count)
    else:
        sizes = np.r_[n, rng.integers(2, 5, count)]
    buckets = [rng.choice(n, int(min(m, n)), replace=False) for m in sizes]
    cuts = np.sort(rng.integers(0, len(buckets) + 1, draw(st.integers(0, 5))))
    bands = np.split(np.arange(len(buckets)), cuts)
    others = [int(rng.integers(0, 50)) for _ in bands]
    return documents, [[buckets[q] for q in band] for band in bands], others


def _parts(bands, others) -> BucketParts:
    """The buckets as the band search adds them: band by band, members and counts."""
    parts = BucketParts()
    for band, more in zip(bands, others):
        members = np.concatenate(band) if band else np.zeros(0)
        counts = np.array([len(b) for b in band])
        parts.append((members.astype(np.uint32), counts.astype(np.int32), more))
    return parts


def _reference(documents, bands, others, most, threshold):
    """Every pair of every bucket of at most ``most`` members, one at a time: the distinct
    pairs the bounds leave, and the pairs not examined."""
    listings = [
        (min(x, y), max(x, y))
        for band in bands
        for bucket in band
        if len(bucket) <= most
        for i, x in enumerate(documents[bucket].tolist())
        for y in documents[bucket[i + 1 :]].tolist()
    ]
    if threshold > 0 and listings:
        a, b = np.array(listings).T
        possible = possible_pairs(SIZES, SKETCHES, a, b, threshold).tolist()
    else:
        possible = [True] * len(listings)
    left = sorted({pair for pair, ok in zip(listings, possible) if ok})
    unlisted = sum(
        len(bucket) * (len(bucket) - 1) // 2
        for band in bands
        for bucket in band
        if len(bucket) > most
    )
    return left, unlisted + sum(others)


@settings(max_examples=150, deadline=None)
@given(
    bucket_sets(), st.integers(1, 300), st.sampled_from([0.0, THRESHOLD]), st.booleans(), st.data()
)
def test_sliced_listing_gives_the_pairs_and_counts_of_every_pair_at_once(
    mapped_sketches, case, slice_pairs, threshold, two_cores, data
):
    documents, bands, others = case
    most = 16
    want, unlisted = _reference(documents, bands, others, most, threshold)
    with pytest.MonkeyPatch.context() as patch:
        if two_cores:  # every slice's buckets in two halves of their pairs, on two threads
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        _check_listing(mapped_sketches, documents, bands, others, most, slice_pairs, threshold,
                       data, (want, unlisted))  # fmt: skip


def _check_listing(
    mapped_sketches, documents, bands, others, most, slice_pairs, threshold, data, expected
):
    want, unlisted = expected
    bounds = (SIZES, SKETCHES, threshold) if threshold else ()
    keys, stats = listed_pairs(
        _parts(bands, others), documents, most, *bounds, slice_pairs=slice_pairs
    )
    assert list(zip(*(x.tolist() for x in unpacked(keys)))) == want
    assert stats == {"repair_unlisted": unlisted}
    if threshold:  # the sketches in a file, two blocks of rows in memory at once
        block_rows = data.draw(st.integers(1, POOL))
        keys, stats = listed_pairs(
            _parts(bands, others),
            documents,
            most,
            SIZES,
            mapped_sketches,
            threshold,
            block_rows=block_rows,
            slice_pairs=slice_pairs,
        )
        assert list(zip(*(x.tolist() for x in unpacked(keys)))) == want
        assert stats == {"repair_unlisted": unlisted}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=40), st.integers(1, 60), st.integers(2, 16))
def test_slices_hold_every_bucket_once_within_their_pairs(counts, most_pairs, most):
    counts = np.array(counts, dtype=np.int32)
    members = np.arange(int(counts.sum()), dtype=np.uint32)
    got_counts, got_members = [], []
    for offsets, part in csr_slices(
        lambda s, e: counts[s:e], lambda s, e: members[s:e], counts.shape[0], most, most_pairs
    ):
        sizes = np.diff(offsets)
        pairs = np.where(sizes <= most, sizes * (sizes - 1) // 2, 0).sum()
        assert pairs <= most_pairs or sizes.shape[0] == 1  # a bucket of more pairs: alone
        assert offsets[-1] == part.shape[0]
        got_counts.extend(sizes.tolist())
        got_members.extend(part.tolist())
    assert got_counts == counts.tolist() and got_members == members.tolist()


def test_a_threshold_needs_the_sizes_and_sketches_and_most_is_at_least_2():
    parts = _parts([[np.array([0, 1, 2])]], [0])
    with pytest.raises(ValueError, match="needs the sizes and sketches"):
        listed_pairs(parts, None, 16, threshold=0.5)
    with pytest.raises(ValueError, match="most must be >= 2, got 1"):
        listed_pairs(parts, None, 1)
    with pytest.raises(ValueError, match="most_pairs must be >= 1"):
        next(csr_slices(lambda s, e: [], lambda s, e: [], 1, 16, 0))
