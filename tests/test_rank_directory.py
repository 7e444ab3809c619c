"""Tests for neardup.rank_directory: membership and ranks equal those of a Python set and a
sorted list, on one thread and with the rows cut in two halves on two threads, across words'
edges."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import neardup.candidates.radix as radix
import neardup.rank_directory as rank_directory
from neardup.rank_directory import directory_of, holds, listed_rows, rank_of, ranks_of


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
    assert ranked.dtype == np.int32 and ranked.tolist() == [rows.index(r) for r in queries]
    assert words.shape[0] == -(-n // 64) and before.tolist()[-1] == len(rows)
    assert listed.tolist() == rows
    ranks, held = _lookups(np.arange(n), words, before)
    # The rank of any row, set or not, is the number of set rows below it.
    assert ranks.tolist() == [sum(r < i for r in rows) for i in range(n)]
    assert held.tolist() == [i in set(rows) for i in range(n)]


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


def test_docstrings():
    assert doctest.testmod(rank_directory, raise_on_error=True).attempted > 0
