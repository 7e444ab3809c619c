"""Tests for neardup.rank_directory: membership and ranks equal those of a Python set and a
sorted list, on one thread and with the rows cut in two halves on two threads, across words'
edges."""

import doctest

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numba import njit

import neardup.candidates.radix as radix
import neardup.rank_directory as rank_directory
from neardup.rank_directory import (
    RowSet,
    counts_before,
    directory_of,
    holds,
    listed_rows,
    rank_of,
    ranks_of,
)


@njit(cache=True)
def _lookups(rows, words, before):
    ranks = np.empty(rows.shape[0], dtype=np.int64)
    held = np.empty(rows.shape[0], dtype=np.bool_)
    for i in range(rows.shape[0]):
        ranks[i] = rank_of(np.uint64(rows[i]), words, before)
        held[i] = holds(np.uint64(rows[i]), words)
    return ranks, held


@pytest.mark.parametrize("halves", [False, True])
@settings(max_examples=80, deadline=None)
@given(st.integers(1, 400), st.data())
def test_membership_and_ranks_are_those_of_a_sorted_list(halves, n, data):
    rows = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    marks = np.zeros(n, dtype=bool)
    marks[rows] = True
    with pytest.MonkeyPatch.context() as patch:
        if halves:
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 1)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        words, before = directory_of(marks)
        listed = listed_rows(marks, before)
        # Every set row's rank, in a query order of their own (repeats too), on two cores.
        queries = np.array(data.draw(st.lists(st.sampled_from(rows))) if rows else [], np.int64)
        ranked = ranks_of(queries, words, before, np.int32)
        counted = counts_before(words.copy())  # the same bits, set directly
    assert ranked.dtype == np.int32 and ranked.tolist() == [rows.index(r) for r in queries]
    assert words.shape[0] == -(-n // 64) and before.tolist()[-1] == len(rows)
    assert listed.tolist() == rows
    ranks, held = _lookups(np.arange(n), words, before)
    # The rank of any row, set or not, is the number of set rows below it.
    assert ranks.tolist() == [sum(r < i for r in rows) for i in range(n)]
    assert held.tolist() == [i in set(rows) for i in range(n)]
    # The rows set before each word, then all of them.
    assert counted.tolist() == [sum(r < 64 * w for r in rows) for w in range(words.shape[0])] + [
        len(rows)
    ]


def test_rows_at_the_edges_of_the_words():
    n = 64 * 3 + 1
    rows = [0, 63, 64, 127, 128, 191, 192]
    marks = np.zeros(n, dtype=bool)
    marks[rows] = True
    words, before = directory_of(marks)
    ranks, held = _lookups(np.array(rows), words, before)
    assert ranks.tolist() == list(range(len(rows))) and held.all()
    assert before.tolist() == [0, 2, 4, 6, 7]


def test_no_rows():
    words, before = directory_of(np.zeros(0, dtype=bool))
    assert words.shape == (0,) and before.tolist() == [0]
    assert listed_rows(np.zeros(0, dtype=bool), before).shape == (0,)


def _row_sets(n):
    """Sets of ``n`` rows that a select must cross: none, all, sparse, dense, and few rows far
    apart (long runs of unset words between two samples), beside random ones."""
    return st.one_of(
        st.sets(st.integers(0, n - 1)),
        st.just(set()),
        st.just(set(range(n))),
        st.sets(st.integers(0, n - 1), max_size=3),
        st.builds(lambda step: set(range(0, n, step)), st.integers(1, 300)),
        st.builds(lambda k: set(range(n)) - set(range(k, n, 5)), st.integers(0, 60)),
    )


@pytest.mark.parametrize("halves", [False, True])
@settings(max_examples=120, deadline=None)
@given(st.integers(1, 2000), st.data())
def test_a_row_set_is_its_sorted_rows(halves, n, data):
    """A RowSet, made from marks or as the complement of a directory's words, gives what the
    sorted list of its rows gives: the row at any place (select, in any order, repeated),
    the rows of any range, and values at its rows, in the dtype asked."""
    rows = sorted(data.draw(_row_sets(n)))
    marks = np.zeros(n, dtype=bool)
    marks[rows] = True
    dtype = data.draw(st.sampled_from([None, np.int32, np.int64]))
    places = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=300)) if rows else []
    start, stop = sorted(data.draw(st.lists(st.integers(-3, n + 3), min_size=2, max_size=2)))
    with pytest.MonkeyPatch.context() as patch:
        if halves:
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 1)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        complement = RowSet.complement(directory_of(~marks)[0], n, dtype)
        for row_set in (RowSet.of_marks(marks), complement):
            assert len(row_set) == len(rows)
            assert row_set.rows().tolist() == rows
            taken = row_set.take(np.array(places, dtype=np.int64))
            assert taken.tolist() == [rows[p] for p in places]
            assert row_set.rows(start, stop).tolist() == [r for r in rows if start <= r < stop]
            values = np.arange(n, dtype=np.int64) * 7 + 1
            assert row_set.compress(values).tolist() == [7 * r + 1 for r in rows]
    assert complement.dtype == np.dtype(dtype or np.int32) and taken.dtype == complement.dtype


def test_a_row_set_refuses_what_does_not_fit_it():
    with pytest.raises(ValueError, match="130 rows take 3 words, got 2"):
        RowSet.complement(np.zeros(2, dtype=np.uint64), 130)
    with pytest.raises(ValueError, match=r"one entry a row \(5\), got 4"):
        RowSet.of_marks(np.ones(5, dtype=bool)).compress(np.zeros(4))


def test_docstrings():
    assert doctest.testmod(rank_directory, raise_on_error=True).attempted > 0


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 64) - 1))
@example((1 << 64) - 1)
@example(1)
@example(1 << 63)
@example(0x8000000000000001)
@example(0x0100000000000080)
@example(0xFF00)
def test_select_in_word_finds_each_set_bit(word):
    """The k-th set bit of any word, each k below its count, as the sorted list of its bits
    has it (words of 0 to 64 bits set, high bytes and low bytes alike, and the edge words)."""
    bits = [i for i in range(64) if word >> i & 1]
    found = [int(rank_directory.select_in_word(np.uint64(word), k)) for k in range(len(bits))]
    assert found == bits
