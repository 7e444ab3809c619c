"""Tests for neardup.locality: the reverse Cuthill–McKee order and the pairs' order by it."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import locality, memory
from neardup.groups import connected_components
from neardup.locality import locality_order, locality_pair_order


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60), st.sampled_from(["any", "equal", "reversed"]))
def test_vertices_by_degree_is_a_stable_argsort(degrees, shape):
    degree = np.array(degrees, dtype=np.int64)
    if shape == "equal" and degree.size:
        degree[:] = degree[0]
    elif shape == "reversed":
        degree = np.sort(degree)[::-1].copy()
    # A CSR adjacency's offsets with these degrees: the degrees are read from them.
    indptr = np.concatenate(([0], np.cumsum(degree))).astype(np.int32)
    order = np.empty(degree.shape[0], dtype=np.int32)
    locality._by_degree(indptr, order)
    assert order.tolist() == np.argsort(degree, kind="stable").tolist()


@st.composite
def graphs(draw):
    """(n, a, b): up to 3n edges (a[p], b[p]) over vertices 0..n-1, loops and repeats included."""
    n = draw(st.integers(1, 60))
    m = draw(st.integers(0, 3 * n))
    ends = st.lists(st.integers(0, n - 1), min_size=m, max_size=m)
    return n, np.array(draw(ends), np.int64), np.array(draw(ends), np.int64)


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_locality_order_is_a_permutation_keeping_components_together(graph):
    n, a, b = graph
    order = locality_order(n, a, b)
    assert sorted(order.tolist()) == list(range(n))
    assert np.array_equal(order, locality_order(n, a, b))  # deterministic
    # The same graph given in another edge order, its edges reversed: the same order.
    shuffle = np.random.default_rng(n).permutation(a.shape[0])
    assert np.array_equal(order, locality_order(n, b[shuffle], a[shuffle]))
    # Each component takes consecutive places.
    labels = connected_components(n, a, b)[order]
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    assert len(starts) == len(set(labels.tolist()))


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_locality_pair_order_sorts_pairs_by_their_places(graph):
    n, a, b = graph
    m = a.shape[0]
    order = locality_pair_order(n, a, b)
    assert order.dtype == np.int32 and sorted(order.tolist()) == list(range(m))
    # The places of the named vertices in their locality order, the nearer end first.
    named = np.unique(np.concatenate([a, b]))
    la, lb = np.searchsorted(named, a), np.searchsorted(named, b)
    place = np.empty(named.shape[0], np.int64)
    place[locality_order(named.shape[0], la, lb)] = np.arange(named.shape[0])
    keys = list(
        zip(np.minimum(place[la], place[lb]).tolist(), np.maximum(place[la], place[lb]).tolist())
    )
    # Sorted by them, equal keys in input order (Python's sort is stable).
    assert order.tolist() == sorted(range(m), key=keys.__getitem__)


def test_locality_order_recovers_a_shuffled_path():
    n = 500
    shuffle = np.random.default_rng(4).permutation(n)
    a, b = shuffle[:-1], shuffle[1:]  # a path through the vertices in a random order
    place = np.empty(n, np.int64)
    place[locality_order(n, a, b)] = np.arange(n)
    assert np.abs(place[a] - place[b]).max() == 1  # every edge between neighbouring places


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_locality_order_in_8_byte_indices_equals_the_4_byte_one(graph):
    """Past 2**31 - 1 vertices or edges the graph is held in 8-byte integers: the same order."""
    n, a, b = graph
    narrow = locality_order(n, a, b)
    assert narrow.dtype == np.int32
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "INDEX32_BELOW", 0)
        wide = locality_order(n, a, b)
    assert wide.dtype == np.int64 and wide.tolist() == narrow.tolist()


def test_bad_pairs_are_refused() -> None:
    with pytest.raises(ValueError, match=r"b must have the same length as a \(2\), got 1"):
        locality_pair_order(3, np.array([0, 1]), np.array([2]))
    with pytest.raises(ValueError, match=r"a must be document indices in 0..2, got 3"):
        locality_order(3, np.array([3]), np.array([0]))


def test_docstring_examples() -> None:
    assert doctest.testmod(locality).failed == 0
