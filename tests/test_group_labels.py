"""Tests for neardup.group_labels: every pass equals a brute force that shares none of its
code (a breadth-first search over the pairs, a dictionary per group), on one thread and with
the documents cut in two halves on two threads."""

from collections import defaultdict
from contextlib import contextmanager

import numpy as np
import pytest
from graph_helpers import bfs_components
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.candidates.radix as radix
from neardup.exact_duplicates import Duplicates
from neardup.group_labels import (
    group_sizes,
    min_rank_members,
    not_own_labels,
    own_labels,
    with_duplicates,
)
from neardup.groups import connected_components, originals_of

HALVES = pytest.mark.parametrize("halves", ["one thread", "two halves"])


@contextmanager
def cut_in(halves):
    """As small inputs run (one call), or with every input cut in two halves on two threads,
    as inputs of a million documents are."""
    with pytest.MonkeyPatch.context() as patch:
        if halves == "two halves":
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 1)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        yield


graphs = st.integers(0, 60).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n)
        if n
        else st.just([]),
    )
)


def edge_arrays(edges):
    a = np.array([x for x, _ in edges], dtype=np.int64)
    b = np.array([y for _, y in edges], dtype=np.int64)
    return a, b


@HALVES
@settings(max_examples=150, deadline=None)
@given(graphs)
def test_components_equal_a_breadth_first_search(halves, graph):
    with cut_in(halves):
        n, edges = graph
        a, b = edge_arrays(edges)
        assert connected_components(n, a, b).tolist() == bfs_components(n, a, b)


@HALVES
@settings(max_examples=150, deadline=None)
@given(graphs, st.data())
def test_originals_are_the_earliest_member_of_each_component(halves, graph, data):
    with cut_in(halves):
        n, edges = graph
        a, b = edge_arrays(edges)
        rank = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), np.int64)
    if data.draw(st.booleans()):  # documents in time order: the labels are the originals
        rank.sort()
        labels = bfs_components(n, a, b)
        earliest = {}
        for d in range(n):  # ascending: "<" keeps the smaller index on equal rank
            g = labels[d]
            if g not in earliest or rank[d] < rank[earliest[g]]:
                earliest[g] = d
        expected = [earliest[labels[d]] for d in range(n)]
        assert originals_of(connected_components(n, a, b), rank).tolist() == expected
        assert min_rank_members(np.array(labels, np.int64), rank).tolist() == expected


@HALVES
@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=60))
def test_group_sizes_count_the_documents_sharing_an_original(halves, picks):
    with cut_in(halves):
        n = len(picks)
        originals = np.array([p % n for p in picks], dtype=np.int64) if n else np.zeros(0, np.int64)
        counts = defaultdict(int)
        for o in originals.tolist():
            counts[o] += 1
        assert group_sizes(originals).tolist() == [counts[o] for o in originals.tolist()]


@HALVES
@settings(max_examples=150, deadline=None)
@given(graphs, st.sampled_from([np.int32, np.int64]))
def test_group_sizes_over_own_originals_are_written_over_the_counts(halves, graph, dtype):
    """Originals that are their own (those of a grouping): the sizes of the general path, from
    one array, whatever the halves."""
    n, pairs = graph
    a = np.array([p for p, _ in pairs], dtype=np.int64)
    b = np.array([q for _, q in pairs], dtype=np.int64)
    originals = originals_of(connected_components(n, a, b), None).astype(dtype)
    counts = defaultdict(int)
    for o in originals.tolist():
        counts[o] += 1
    with cut_in(halves):
        sizes = group_sizes(originals, own_labels(originals))
    assert sizes.dtype == group_sizes(originals).dtype
    assert sizes.tolist() == [counts[o] for o in originals.tolist()]


@HALVES
@pytest.mark.parametrize("order", ["any", "earlier"])
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**31), st.integers(0, 30))
def test_exact_duplicates_join_their_representatives_components(halves, order, n, seed, m):
    """The components of the candidate pairs with each duplicate joined to its representative
    equal those of a search over both lists of pairs: representatives anywhere (a duplicate
    may be the smallest index of its component), or each before its duplicates (documents in
    time order: no label changes)."""
    with cut_in(halves):
        rng = np.random.default_rng(seed)
        rep_of = np.arange(n)
        is_rep = rng.random(n) < 0.6
        is_rep[0 if order == "earlier" else rng.integers(0, n)] = True
        reps = np.flatnonzero(is_rep)
        for d in np.flatnonzero(~is_rep):
            rep_of[d] = rng.choice(reps[reps < d] if order == "earlier" else reps)
        a, b = rng.choice(reps, m), rng.choice(reps, m)
        dup = np.flatnonzero(rep_of != np.arange(n))
        joined = bfs_components(n, np.concatenate([a, rep_of[dup]]), np.concatenate([b, dup]))
        dups = Duplicates.of(rep_of)
        assert with_duplicates(connected_components(n, a, b), dups).tolist() == joined
        # Written over the labels given: the same labels, in their array.
        labels = connected_components(n, a, b)
        assert with_duplicates(labels, dups, overwrite_labels=True) is labels
        assert labels.tolist() == joined


@HALVES
@given(st.lists(st.integers(0, 20), max_size=40))
def test_own_labels_are_the_documents_labelled_by_themselves(halves, picks):
    with cut_in(halves):
        labels = np.array(picks, dtype=np.int32)
        want = [label == i for i, label in enumerate(picks)]
        assert own_labels(labels).tolist() == want


@HALVES
@settings(deadline=None)
@given(st.lists(st.integers(0, 20), max_size=40), st.sampled_from([np.int32, np.int64]))
def test_not_own_labels_are_the_documents_not_labelled_by_themselves(halves, picks, dtype):
    with cut_in(halves):
        labels = np.array(picks, dtype=dtype)
        found = not_own_labels(labels, own_labels(labels))
        assert found.dtype == dtype
        assert found.tolist() == [i for i, label in enumerate(picks) if label != i]


@HALVES
@settings(max_examples=150, deadline=None)
@given(graphs, st.lists(st.integers(0, 59), max_size=60))
def test_without_an_order_the_index_is_the_rank(halves, graph, picks):
    """Documents in time order (rank None): the originals of the index order; components'
    labels, each its group's smallest member, come back themselves, and any other labels are
    ranked by index."""
    with cut_in(halves):
        n, edges = graph
        a, b = edge_arrays(edges)
        identity = np.arange(n, dtype=np.int64)
        components = connected_components(n, a, b)
        want = originals_of(components, identity).tolist()
        if n == 0:
            return
        assert originals_of(components, None) is components
        assert components.tolist() == want
        labels = np.array([p % n for p in picks[:n]] + list(range(len(picks), n)), np.int64)
        got = min_rank_members(labels, None)
        assert got.tolist() == min_rank_members(labels, identity).tolist()
