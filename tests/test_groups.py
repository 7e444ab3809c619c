"""Tests for neardup.groups: components, originals, the center rule, group columns."""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import bfs_components
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import groups
from neardup.groups import (
    accepted_links,
    center_groups,
    connected_components,
    document_order,
    edges_to_original,
    group_table,
    in_time_order,
    originals_of,
)
from neardup.memory import index_dtype

# --------------------------------------------------------------------------- references


def sequential_center(n, rank, rel):
    order = sorted(range(n), key=lambda d: (rank[d], d))
    centers = []
    out = [-1] * n
    for d in order:
        for c in centers:
            if rel[d][c]:
                out[d] = c
                break
        else:
            centers.append(d)
            out[d] = d
    return out


def matrix_predicate(rel, calls=None):
    rel = np.asarray(rel, dtype=bool)

    def f(x, y):
        if calls is not None:
            calls.append((x.copy(), y.copy()))
        return rel[x, y]

    return f


def arr(*xs):
    return np.array(xs, dtype=np.int64)


# --------------------------------------------------------------------------- hand-made cases


def test_document_order_ties_by_index():
    assert document_order(arr(5, 3, 5, 1, 3)).tolist() == [3, 1, 4, 0, 2]
    assert document_order(np.zeros(0, dtype=np.int64)).tolist() == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=30), st.booleans())
def test_document_order_is_the_stable_time_order(ts, ascending):
    """Timestamps already in order (the fast path) and any others rank as a stable sort does."""
    ts = np.array(sorted(ts) if ascending else ts, dtype=np.int64)
    want = np.empty(ts.size, dtype=np.int64)
    want[sorted(range(ts.size), key=lambda i: (ts[i], i))] = np.arange(ts.size)
    assert document_order(ts).tolist() == want.tolist()
    # In time order exactly when the order is the identity (then no order is held).
    assert in_time_order(ts) == (want.tolist() == list(range(ts.size)))
    assert in_time_order(np.broadcast_to(np.int64(ts[0] if ts.size else 0), (ts.size,)))


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([0, 1, 50]),
    st.sampled_from(["random", "equal", "sorted", "reversed", "high"]),
    st.integers(0, 2**32 - 1),
)
def test_document_order_of_wide_timestamps_is_numpys_stable_order(n, shape, seed):
    """Timestamps over the whole int64 range, all equal, sorted, reversed, or differing only
    in their top bits (constant low digits, skipped by the radix sort)."""
    rng = np.random.default_rng(seed)
    ts = rng.integers(-(2**63), 2**63, size=n, dtype=np.int64)
    if shape == "equal":
        ts[:] = ts[0] if n else 0
    elif shape == "sorted":
        ts = np.sort(ts)
    elif shape == "reversed":
        ts = np.sort(ts)[::-1].copy()
    elif shape == "high":
        ts = (rng.integers(-4, 4, size=n) << 61).astype(np.int64)
    want = np.empty(n, dtype=np.int64)
    want[np.argsort(ts, kind="stable")] = np.arange(n)
    assert document_order(ts).tolist() == want.tolist()
    assert document_order(ts.astype(np.uint64) if (ts >= 0).all() else ts).tolist() == (
        want.tolist()
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(0, 3)), max_size=40))
def test_originals_of_arbitrary_labels_and_raw_timestamps(rows):
    """Labels of any int64 value (compacted first) and raw timestamps as the rank."""
    labels = np.array([label for label, _ in rows], dtype=np.int64)
    ts = np.array([t for _, t in rows], dtype=np.int64)
    got = originals_of(labels, ts)
    for d in range(len(rows)):
        members = [e for e in range(len(rows)) if labels[e] == labels[d]]
        assert got[d] == min(members, key=lambda e: (ts[e], e))


def test_chain_components_rule():
    # A=0 ≈ B=1 ≈ C=2, A ≉ C; C is written first, so it is the original under transitivity.
    labels = connected_components(3, arr(0, 1), arr(1, 2))
    assert labels.tolist() == [0, 0, 0]
    rank = document_order(arr(20, 30, 10))
    assert originals_of(labels, rank).tolist() == [2, 2, 2]


def test_chain_center_rule():
    rel = np.zeros((3, 3), dtype=bool)
    rel[0, 1] = rel[1, 0] = rel[1, 2] = rel[2, 1] = True
    labels = connected_components(3, arr(0, 1), arr(1, 2))
    f = matrix_predicate(rel)
    # In time order A, B, C: B joins A, C fails A and becomes a new center.
    assert center_groups(labels, document_order(arr(1, 2, 3)), f).tolist() == [0, 0, 2]
    # C written first: C is a center, B joins C, A fails C and is a center of its own.
    assert center_groups(labels, document_order(arr(3, 2, 1)), f).tolist() == [0, 2, 2]
    # B written first: B takes both A and C.
    assert center_groups(labels, document_order(arr(2, 1, 3)), f).tolist() == [1, 1, 1]


def test_later_index_is_original_and_ties_break_by_index():
    labels = connected_components(4, arr(0, 1, 2), arr(1, 2, 3))
    # Documents 1 and 3 share the earliest timestamp; 1 wins by index.
    ts = arr(50, 7, 9, 7)
    assert originals_of(labels, document_order(ts)).tolist() == [1, 1, 1, 1]
    # Raw timestamps as the ordering key give the same originals.
    assert originals_of(labels, ts).tolist() == [1, 1, 1, 1]
    rel = np.ones((4, 4), dtype=bool)
    assert center_groups(labels, ts, matrix_predicate(rel)).tolist() == [1, 1, 1, 1]


def test_isolated_documents_are_their_own_groups():
    labels = connected_components(5, arr(3), arr(1))
    assert labels.tolist() == [0, 1, 2, 1, 4]
    rank = document_order(arr(0, 9, 0, 1, 0))
    originals = originals_of(labels, rank)
    assert originals.tolist() == [0, 3, 2, 3, 4]
    t = group_table(originals)
    assert t["is_original"].tolist() == [True, False, True, True, True]
    assert t["group_size"].tolist() == [1, 2, 1, 2, 1]
    o, d = edges_to_original(originals)
    assert o.tolist() == [3] and d.tolist() == [1]


def test_empty_inputs():
    empty = np.zeros(0, dtype=np.int64)
    assert connected_components(0, empty, empty).tolist() == []
    assert connected_components(3, empty, empty).tolist() == [0, 1, 2]
    assert connected_components(2, np.array([]), np.array([])).tolist() == [0, 1]
    assert originals_of(empty, empty).tolist() == []
    calls = []
    assert center_groups(empty, empty, matrix_predicate(np.zeros((0, 0)), calls)).tolist() == []
    t = group_table(empty)
    assert all(v.size == 0 for v in t.values())
    o, d = edges_to_original(empty)
    assert o.size == 0 and d.size == 0 and o.dtype == np.int64 and d.dtype == np.int64
    assert calls == []


def test_self_loops_and_duplicate_edges():
    a = arr(2, 2, 1, 4, 4, 1)
    b = arr(2, 4, 4, 2, 2, 1)
    assert connected_components(6, a, b).tolist() == [0, 1, 1, 3, 1, 5]


def test_singletons_never_tested():
    calls = []
    rank = np.arange(10)[::-1].copy()
    out = center_groups(np.arange(10), rank, matrix_predicate(np.ones((10, 10)), calls))
    assert out.tolist() == list(range(10))
    assert calls == []


def test_center_rounds_are_vectorised():
    # Two components, one a chain 0-1-2-3-4 where only neighbours are near-duplicates.
    n = 7
    rel = np.zeros((n, n), dtype=bool)
    for i in range(4):
        rel[i, i + 1] = rel[i + 1, i] = True
    rel[5, 6] = rel[6, 5] = True
    a, b = np.nonzero(np.triu(rel))
    labels = connected_components(n, a, b)
    calls = []
    out = center_groups(labels, np.arange(n), matrix_predicate(rel, calls))
    assert out.tolist() == [0, 0, 2, 2, 4, 5, 5]
    # Round 1 tests both components in one call, round 2 the chain's remainder; in round 3
    # document 4 is alone and becomes a center without a call.
    assert len(calls) == 2
    assert calls[0][0].tolist() == [1, 2, 3, 4, 6] and calls[0][1].tolist() == [0, 0, 0, 0, 5]
    assert calls[1][0].tolist() == [3, 4] and calls[1][1].tolist() == [2, 2]


def test_group_table_columns():
    t = group_table(arr(0, 0, 2, 0, 2, 5))
    assert t["original"].tolist() == [0, 0, 2, 0, 2, 5]
    assert t["is_original"].tolist() == [True, False, True, False, False, True]
    assert t["group_size"].tolist() == [3, 3, 2, 3, 2, 1]
    assert t["group_size"].dtype == np.int64


def test_validation_errors():
    with pytest.raises(ValueError, match="n must be"):
        connected_components(-1, arr(), arr())
    with pytest.raises(ValueError, match=r"a must be document indices in 0\.\.2, got 3"):
        connected_components(3, arr(3), arr(0))
    with pytest.raises(ValueError, match=r"b must be document indices in 0\.\.2, got -1"):
        connected_components(3, arr(0), arr(-1))
    with pytest.raises(ValueError, match="same length"):
        connected_components(3, arr(0, 1), arr(0))
    with pytest.raises(ValueError, match="integer dtype"):
        connected_components(3, np.array([0.5]), arr(0))
    with pytest.raises(ValueError, match="same length"):
        originals_of(arr(0, 0), arr(0))
    with pytest.raises(ValueError, match="integer dtype"):
        document_order(np.array([1.5, 2.0]))
    with pytest.raises(ValueError, match="map every original to itself"):
        group_table(arr(1, 2, 2))
    with pytest.raises(ValueError, match=r"0\.\.2, got 3"):
        edges_to_original(arr(0, 3, 2))
    with pytest.raises(ValueError, match="shape"):
        center_groups(arr(0, 0, 0), arr(0, 1, 2), lambda x, y: np.ones(1, dtype=bool))
    with pytest.raises(ValueError, match="bool"):
        center_groups(arr(0, 0), arr(0, 1), lambda x, y: np.ones(x.size))


# --------------------------------------------------------------------------- properties


@st.composite
def graphs(draw, max_n=30, max_m=60):
    n = draw(st.integers(0, max_n))
    if n == 0:
        return 0, [], []
    m = draw(st.integers(0, max_m))
    a = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    b = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    return n, a, b


@settings(max_examples=200, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_components_match_bfs_and_ignore_edge_order(g, rnd):
    n, a, b = g
    labels = connected_components(n, np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
    assert labels.dtype == index_dtype(n)
    assert labels.tolist() == bfs_components(n, a, b)
    edges = [(x, y) if rnd.random() < 0.5 else (y, x) for x, y in zip(a, b)]
    rnd.shuffle(edges)
    a2 = np.array([e[0] for e in edges], dtype=np.int64)
    b2 = np.array([e[1] for e in edges], dtype=np.int64)
    assert connected_components(n, a2, b2).tolist() == labels.tolist()


@settings(max_examples=200, deadline=None)
@given(graphs(), st.data())
def test_originals_are_min_rank_members(g, data):
    n, a, b = g
    ts = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64)
    labels = connected_components(n, np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
    rank = document_order(ts)
    assert sorted(rank.tolist()) == list(range(n))
    originals = originals_of(labels, rank)
    for d in range(n):
        members = [e for e in range(n) if labels[e] == labels[d]]
        assert originals[d] == min(members, key=lambda e: (ts[e], e))
    assert originals_of(labels, ts).tolist() == originals.tolist()
    # Arbitrary (non-compact) labels describe the same groups.
    assert originals_of(labels * 1000 - 7, rank).tolist() == originals.tolist()


@st.composite
def relations(draw, max_n=25):
    n = draw(st.integers(0, max_n))
    p = draw(st.sampled_from([0.05, 0.15, 0.4, 0.8]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, 1)
    rel = upper | upper.T
    # Some candidate pairs that are not near-duplicates, as LSH would produce.
    extra = np.triu(rng.random((n, n)) < p / 2, 1)
    ts = rng.integers(0, 6, size=n)
    return n, rel, extra, ts


@settings(max_examples=200, deadline=None)
@given(relations())
def test_center_groups_match_sequential_greedy(r):
    n, rel, extra, ts = r
    a, b = np.nonzero(np.triu(rel) | extra)
    labels = connected_components(n, a, b)
    rank = document_order(ts)
    calls = []
    out = center_groups(labels, rank, matrix_predicate(rel, calls))
    assert out.tolist() == sequential_center(n, rank.tolist(), rel.tolist())
    # Every group's center is its original, and every member is a near-duplicate of it.
    assert originals_of(out, rank).tolist() == out.tolist()
    assert all(out[d] == d or rel[d, out[d]] for d in range(n))
    # Only candidate pairs (same component, never a document with itself) are tested.
    for x, y in calls:
        assert x.size > 0
        assert (labels[x] == labels[y]).all() and (x != y).all()
    # Edge order of the candidates does not matter.
    perm = np.random.default_rng(n).permutation(a.size)
    labels2 = connected_components(n, b[perm], a[perm])
    assert center_groups(labels2, rank, matrix_predicate(rel)).tolist() == out.tolist()
    # Labels of any value and raw timestamps (ties by index) decide the same groups.
    wide = labels.astype(np.int64) * (2**40) - 2**61
    assert center_groups(wide, ts, matrix_predicate(rel)).tolist() == out.tolist()


@settings(max_examples=100, deadline=None)
@given(relations())
def test_group_table_partitions_documents(r):
    n, rel, extra, ts = r
    a, b = np.nonzero(np.triu(rel) | extra)
    rank = document_order(ts)
    labels = connected_components(n, a, b)
    by_components = originals_of(labels, rank)
    by_center = center_groups(labels, rank, matrix_predicate(rel))
    for originals in (by_components, by_center):
        t = group_table(originals)
        is_orig = t["is_original"]
        # Every document is in exactly one group, named by exactly one original.
        assert is_orig[originals].all()
        assert int(t["group_size"][is_orig].sum()) == n
        for d in range(n):
            assert t["group_size"][d] == int((originals == originals[d]).sum())
        o, dup = edges_to_original(originals)
        assert dup.tolist() == [d for d in range(n) if not is_orig[d]]
        assert (o == originals[dup]).all()
        assert o.size + int(is_orig.sum()) == n


# --------------------------------------------------------------------------- accepted_links


def _verdicts(pairs: list[tuple[int, int, bool]], step: int, dtype: type):
    """The ends of ``pairs`` (``(x, y, accepted)``) as two arrays of ``dtype``, one verdict per
    unordered pair (the first given, as a symmetric measure gives), the pairs asked so far, and
    the ``accept`` that answers and records them, in calls of 1 to ``step`` pairs."""
    a = np.array([p[0] for p in pairs], dtype=dtype)
    b = np.array([p[1] for p in pairs], dtype=dtype)
    verdict: dict[tuple[int, int], bool] = {}
    for x, y, ok in pairs:
        verdict.setdefault((min(x, y), max(x, y)), ok)
    asked: list[tuple[int, int]] = []

    def accept(x, y):
        assert 0 < x.size <= step
        asked.extend(zip(x.tolist(), y.tolist()))
        return np.array([verdict[(min(i, j), max(i, j))] for i, j in asked[-x.size :]], bool)

    return a, b, verdict, asked, accept


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29), st.booleans()), max_size=120),
    st.integers(0, 3),
    st.integers(1, 8),
)
def test_accepted_links_give_the_components_of_all_accepted_pairs(n, pairs, rounds, step):
    """Against brute force: the kept pairs are accepted ones, link exactly what all accepted
    pairs link, and no pair is tested twice."""
    pairs = [(x % n, y % n, ok) for x, y, ok in pairs]
    a, b, verdict, asked, accept = _verdicts(pairs, step, np.int64)
    kept, tested = accepted_links(n, a, b, accept, rounds, step)
    assert tested == len(asked)
    assert all(verdict[(min(x, y), max(x, y))] for x, y in zip(a[kept], b[kept]))
    everything = np.array([verdict[(min(x, y), max(x, y))] for x, y in zip(a, b)], dtype=bool)
    want = connected_components(n, a[everything], b[everything])
    assert connected_components(n, a[kept], b[kept]).tolist() == want.tolist()
    assert len(asked) <= len(pairs)


def test_accepted_links_skip_pairs_already_linked():
    # A triangle of accepted pairs: the third pair is linked by the first two.
    kept, tested = accepted_links(3, np.array([0, 1, 0]), np.array([1, 2, 2]), lambda x, y: x >= 0)
    assert kept.tolist() == [0, 1] and tested == 2
    # All rejected: every pair is tested once, over the rounds.
    a, b = np.array([0, 0, 1, 0]), np.array([1, 2, 2, 3])
    kept, tested = accepted_links(4, a, b, lambda x, y: x < 0, rounds=1)
    assert kept.tolist() == [] and tested == 4


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.booleans()), max_size=60),
    st.integers(1, 8),
)
def test_accepted_links_without_rounds_test_every_pair_of_two_documents(pairs, step):
    """With no forest rounds and no labels before, nothing is linked before the tests: every
    pair of two documents is tested once, in order, and every accepted one is kept."""
    a, b, verdict, asked, accept = _verdicts(pairs, step, np.int32)
    kept, tested = accepted_links(10, a, b, accept, rounds=0, step=step)
    apart = [i for i, (x, y, _) in enumerate(pairs) if x != y]
    assert asked == [pairs[i][:2] for i in apart] and tested == len(asked)
    assert kept.dtype == np.int64
    assert kept.tolist() == [i for i in apart if verdict[tuple(sorted(pairs[i][:2]))]]


def test_accepted_links_bad_input():
    with pytest.raises(ValueError, match="rounds must be >= 0"):
        accepted_links(2, np.array([0]), np.array([1]), lambda x, y: x >= 0, rounds=-1)
    with pytest.raises(ValueError, match="document indices"):
        accepted_links(2, np.array([0]), np.array([2]), lambda x, y: x >= 0)
    with pytest.raises(ValueError, match="step must be >= 1"):
        accepted_links(2, np.array([0]), np.array([1]), lambda x, y: x >= 0, step=0)


@pytest.mark.parametrize(
    "linked",
    [[0, 0, 1], [0, 3, 2], [0, -1, 2], [1, 1], [0, 0, 2, 3]],
    ids=["label-not-its-own", "past-the-end", "negative", "a-document-short", "one-too-many"],
)
def test_accepted_links_refuses_labels_that_are_not_their_own(linked):
    with pytest.raises(ValueError, match="each its own label"):
        accepted_links(3, arr(0), arr(2), lambda x, y: np.ones(x.shape, bool), linked=arr(*linked))


def test_accepted_links_starts_from_valid_labels():
    kept, tested = accepted_links(
        4, arr(0, 1, 2), arr(1, 2, 3), lambda x, y: np.ones(x.shape, bool), linked=arr(0, 0, 2, 3)
    )
    # 0-1 are linked already: untested; 1-2 and 2-3 join the rest.
    assert kept.tolist() == [1, 2] and tested == 2


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=40),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=15),
    st.integers(0, 2**32 - 1),
)
def test_accepted_links_over_the_labels_themselves_decide_the_same(n, pairs, before, seed):
    """With overwrite_linked the union-find starts from the labels given (no copy): the same
    pairs are kept and tested; without it the labels are left as they were."""
    a, b = (np.array([p[k] % n for p in pairs], dtype=np.int64) for k in (0, 1))
    la, lb = (np.array([p[k] % n for p in before], dtype=np.int64) for k in (0, 1))
    rejected = np.random.default_rng(seed).random((n, n)) < 0.3

    def accept(x, y):
        return ~rejected[np.minimum(x, y), np.maximum(x, y)]

    linked = connected_components(n, la, lb)
    kept = accepted_links(n, a, b, accept, linked=linked)
    assert np.array_equal(linked, connected_components(n, la, lb))  # untouched
    own = linked.copy()
    kept_own = accepted_links(n, a, b, accept, linked=own, overwrite_linked=True)
    assert kept_own[0].tolist() == kept[0].tolist() and kept_own[1] == kept[1]
    # The given labels became the forest: their roots are the components with the kept pairs.
    roots = np.array([groups.find_root(own, x) for x in range(n)])
    want = connected_components(
        n, np.concatenate([la, a[kept[0]]]), np.concatenate([lb, b[kept[0]]])
    )
    assert np.array_equal(connected_components(n, np.arange(n), roots), want)
