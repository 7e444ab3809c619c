"""The linked rows of `neardup pairs` (neardup.engines.linked_rows): the rows that are an end of
a link, and each one's place among them, as a sort and binary searches give them, whether the
kernels run on one core or on two."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.candidates.radix as radix
import neardup.engines.linked_rows as linked_rows
from neardup.engines.linked_rows import LinkedRows
from neardup.engines.spill import MemoryBudget


def packed(a, b) -> np.ndarray:
    a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
    return (np.minimum(a, b) << np.uint64(32)) | np.maximum(a, b)


def check(n: int, chunks: list[np.ndarray]) -> None:
    rows = LinkedRows(n)
    for chunk in chunks:
        rows.mark(chunk)
    linked = rows.finish()
    ends = np.concatenate([np.zeros(0, np.uint64), *chunks])
    a, b = (ends >> np.uint64(32)).astype(np.int64), (ends & np.uint64(0xFFFFFFFF)).astype(np.int64)
    want = np.union1d(a, b)
    assert linked.dtype == np.int64 and linked.tolist() == want.tolist()
    for chunk in chunks:
        x, y = rows.compact(chunk)
        ends_a = (chunk >> np.uint64(32)).astype(np.int64)
        ends_b = (chunk & np.uint64(0xFFFFFFFF)).astype(np.int64)
        assert x.tolist() == np.searchsorted(want, ends_a).tolist()
        assert y.tolist() == np.searchsorted(want, ends_b).tolist()


@pytest.mark.parametrize("halves", [False, True])
@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(
        st.lists(st.tuples(st.integers(0, 299), st.integers(0, 299)), max_size=40), max_size=4
    ),
)
def test_ranks_are_those_of_a_binary_search(halves, n, chunks):
    chunks = [packed([a % n for a, _ in c], [b % n for _, b in c]) for c in chunks]
    with pytest.MonkeyPatch.context() as patch:
        if halves:
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        check(n, chunks)


def test_one_row_linked_to_every_other_and_the_words_edges():
    # A star over every row (as many identical fingerprints give), rows at the ends of words.
    n = 64 * 5 + 1
    check(n, [packed(np.zeros(n - 1, np.int64), np.arange(1, n))])
    check(n, [packed([63, 64, 127], [128, n - 1, 0])])


def test_many_rows_on_two_cores():
    rng = np.random.default_rng(5)
    n = 3 * radix.PARALLEL_MIN_KEYS + 17
    a, b = rng.integers(0, n, 400_000), rng.integers(0, n, 400_000)
    a[:1000] = 7  # one row in many links
    check(n, [packed(a[:250_000], b[:250_000]), packed(a[250_000:], b[250_000:])])


def test_no_links_no_rows():
    rows = LinkedRows(0)
    assert rows.finish().tolist() == []
    assert [x.tolist() for x in rows.compact(np.zeros(0, np.uint64))] == [[], []]
    rows = LinkedRows(100)
    assert rows.finish().tolist() == []


def test_the_marks_then_the_directory_are_charged_to_the_budget_while_held():
    n = 1000
    budget = MemoryBudget(10_000)
    rows = LinkedRows(n, budget)
    assert budget.free == 10_000 - n  # a byte a row
    rows.mark(packed([3, 500], [999, 64]))
    linked = rows.finish()
    words = -(-n // 64)
    assert rows.nbytes == 8 * words + 8 * (words + 1)  # a bit a row, a count a word
    assert budget.free == 10_000 - rows.nbytes
    rows.compact(packed([3], [999]))
    rows.release()
    assert budget.free == 10_000 and rows.nbytes == 0
    with pytest.raises(ValueError, match="released"):
        rows.compact(packed([3], [999]))
    assert linked.tolist() == [3, 64, 500, 999]


def test_docstrings():
    assert doctest.testmod(linked_rows).failed == 0


@pytest.mark.parametrize("halves", [False, True])
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.sets(st.integers(0, 299)), st.data())
def test_places_of_given_rows_are_those_of_a_binary_search(halves, n, rows, data):
    """The rows dedup compares, placed among themselves (outofcore.set_source)."""
    rows = np.array(sorted({r % n for r in rows}), dtype=np.int64)
    asked = np.array(data.draw(st.lists(st.sampled_from(rows.tolist()))) if rows.size else [])
    with pytest.MonkeyPatch.context() as patch:
        if halves:
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        directory = LinkedRows.of_rows(n, rows)
        got = directory.places(asked.astype(np.int32))
    assert got.dtype == np.int32  # 4 bytes a place below 2**31 - 1 rows
    assert got.tolist() == np.searchsorted(rows, asked).tolist()
    assert directory.nbytes == 8 * (-(-n // 64)) + 8 * (-(-n // 64) + 1)
