"""Exact duplicates (neardup.exact_duplicates): in memory and by parts read back from disk, against a
brute force that compares every pair of fingerprints."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.candidates.radix as radix
from neardup import exact_duplicates as exact
from neardup.engines.spill import MemoryBudget, SpillColumn, WorkDir
from neardup.exact_duplicates import (
    Duplicates,
    content_representatives,
    representatives_by_parts,
)

#: Fingerprints from a few values of each word: many equal ones, and equal first words with
#: different second words (a probe that meets the tag but not the fingerprint).
fingerprints = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=60)


def brute_force(contents, rank):
    return [
        min((e for e in range(len(contents)) if contents[e] == contents[d]), key=rank.__getitem__)
        for d in range(len(contents))
    ]


def as_array(contents, shift):
    """uint64[n, 2]; shifted left, only the top bits are set (fingerprints that are not
    uniform hashes, e.g. those ``neardup pairs`` reads)."""
    content = np.array(contents, dtype=np.uint64).reshape(len(contents), 2)
    return content << np.uint64(shift)


@settings(max_examples=100, deadline=None)
@given(fingerprints, st.randoms(), st.sampled_from([0, 61]))
def test_content_representatives_is_the_earliest_equal_document(contents, random, shift):
    rank = list(range(len(contents)))
    random.shuffle(rank)
    reps = content_representatives(as_array(contents, shift), np.array(rank, dtype=np.int64))
    assert reps.tolist() == brute_force(contents, rank)


@settings(max_examples=100, deadline=None)
@given(fingerprints, st.randoms(), st.sampled_from([2, 3, 4]), st.sampled_from([0, 61]))
def test_content_representatives_on_several_threads(contents, random, workers, shift):
    """Tables split by the hashes of the fingerprints (forced here for small inputs): the
    same representatives as one table."""
    rank = list(range(len(contents)))
    random.shuffle(rank)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact, "PARALLEL_MIN_DOCUMENTS", 0)
        reps = content_representatives(as_array(contents, shift), np.array(rank), workers)
    assert reps.tolist() == brute_force(contents, rank)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=80), st.integers(0, 2**31), st.booleans())
def test_content_representatives_of_a_fingerprint_view_equal_those_of_stacked_keys(
    picks, seed, parallel
):
    """`neardup pairs` keys each row by its fingerprint twice, through a view with a zero
    stride: the same representatives as the keys (fingerprint, 0) stacked in memory."""
    fps = np.array([p * 0x9E3779B97F4A7C15 % 2**64 for p in picks], dtype=np.uint64)
    n = fps.shape[0]
    view = np.lib.stride_tricks.as_strided(fps, shape=(n, 2), strides=(8, 0), writeable=False)
    stacked = np.stack([fps, np.zeros(n, dtype=np.uint64)], axis=1)
    rank = np.random.default_rng(seed).permutation(n)
    with pytest.MonkeyPatch.context() as patch:
        if parallel:
            patch.setattr(exact, "PARALLEL_MIN_DOCUMENTS", 0)
        got = content_representatives(view, rank, workers=2)
        want = content_representatives(stacked, rank, workers=2)
    assert got.tolist() == want.tolist()


class MemoryPart(list):
    """A part's rows in memory; records that it was removed."""

    removed = False

    def read(self):
        return np.concatenate(self)

    def remove(self):
        self.clear()
        self.removed = True


@settings(max_examples=150, deadline=None)
@given(
    fingerprints,
    st.randoms(),
    st.sampled_from([0, 61]),
    st.sampled_from([0, 200, 1_000, 1 << 30]),
    st.integers(1, 9),
)
def test_representatives_by_parts_equal_the_brute_force(contents, random, shift, room, block):
    """Any room (0: the most parts; a few documents a part; everything in one part), blocks
    of any size read: the brute force's representatives; every part store removed."""
    rank = list(range(len(contents)))
    random.shuffle(rank)
    content = as_array(contents, shift)
    reads, stores = [], []

    def read_rows(start, end):
        reads.append((start, end))
        return content[start:end]

    def part_store(part):
        stores.append(MemoryPart())
        return stores[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact, "MAX_PART_BITS", 3)  # up to 8 parts over these few documents
        patch.setattr(exact, "PART_DOCUMENT_BYTES", 100)
        reps = representatives_by_parts(
            read_rows, len(contents), np.array(rank), room, part_store, workers=2
        )
    assert reps.tolist() == brute_force(contents, rank)
    if len(contents) * 100 > room:
        assert len(stores) > 1, "split into parts"
        assert sorted(reads) == reads and reads[-1][1] == len(contents), "one scan, in order"
    else:
        assert not stores and reads == [(0, len(contents))], "read and solved whole"
    assert all(store.removed for store in stores)


def test_representatives_by_parts_through_spill_files(tmp_path):
    """The engine's part stores, columns of width 3 on disk: the same representatives as in
    memory, and no file left once the parts are solved."""
    rng = np.random.default_rng(5)
    n = 5_000
    content = rng.integers(0, 300, size=(n, 2)).astype(np.uint64)  # many equal fingerprints
    rank = rng.permutation(n)
    expected = content_representatives(content, rank)
    with WorkDir(tmp_path, "key", "out") as work:
        source = SpillColumn(work, "content", np.uint64, MemoryBudget(0), 2)
        for start in range(0, n, 700):
            source.append(content[start : start + 700])

        def part_store(part):
            return SpillColumn(work, f"part-{part}", np.uint64, MemoryBudget(0), 3)

        reps = representatives_by_parts(source.read_rows, n, rank, 20_000, part_store, workers=2)
        source.remove()
        assert not any(work.path.glob("*.bin"))
    np.testing.assert_array_equal(reps, expected)


def test_representatives_by_parts_checks_the_ranks():
    with pytest.raises(ValueError, match=r"one value per document \(3\); got 2"):
        representatives_by_parts(lambda s, e: None, 3, np.arange(2), 0, list)


@pytest.mark.parametrize("halves", [False, True])
@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=200), st.booleans(), st.data())
def test_duplicates_give_each_document_its_representative(halves, contents, wide, data):
    """Duplicates hold the duplicates alone; the representative of any document (duplicate
    or not, in any order, repeated) is that of ``rep_of``, in the dtype of the documents."""
    first = {}
    rep_of = np.array([first.setdefault(c, i) for i, c in enumerate(contents)])
    rep_of = rep_of.astype(np.int64 if wide else np.int32)
    duplicates = Duplicates.of(rep_of)
    assert len(duplicates) == sum(r != i for i, r in enumerate(rep_of.tolist()))
    assert duplicates.members.tolist() == [i for i, r in enumerate(rep_of.tolist()) if r != i]
    own = [i for i, r in enumerate(rep_of.tolist()) if r == i]
    rows = duplicates.representative_rows()
    assert rows.rows().tolist() == own and rows.dtype == rep_of.dtype
    assert rows.take(np.arange(len(own))[::-1]).tolist() == own[::-1]
    docs = np.array(data.draw(st.lists(st.integers(0, len(contents) - 1), max_size=50)))
    docs = docs.astype(data.draw(st.sampled_from([np.int32, np.int64, np.uint64])))
    with pytest.MonkeyPatch.context() as patch:
        if halves:  # as a million documents are: two halves on two threads
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 1)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        found = duplicates.representatives(docs)
    assert found.dtype == docs.dtype
    assert found.tolist() == rep_of[docs.astype(np.int64)].tolist()
