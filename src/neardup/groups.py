"""Duplicate IDs, originals and the grouping rules.

Documents are indexed ``0 .. n-1`` in input order and carry an integer timestamp (smaller = written
earlier). Near-duplication is not transitive (A≈B and B≈C does not give A≈C), so how verified pairs
become groups is an explicit choice, the ``grouping``:

``components``
    Transitive closure: a group is a connected component of the verified pairs
    (:func:`connected_components`). A chain A≈B≈C puts A, B and C in one group even if A≉C.
``center``
    No chaining: inside each candidate component, documents are taken in time order; a document
    joins the group of the earliest existing *center* it is a near-duplicate of, and if it is a
    near-duplicate of none it becomes a new center (:func:`center_groups`). Every member of a
    group is a near-duplicate of the group's center; a chain A≈B≈C with A≉C gives {A, B} and {C}.

Under both rules the **original** of a group is its earliest document: smallest timestamp, ties
broken by the smaller index. The original's index is the group's **duplicate ID**: documents of
one group share it, and a document with no near-duplicate is its own original.

All functions are pure, deterministic and independent of the order of the input pairs.

Example:
    >>> import numpy as np
    >>> timestamps = np.array([30, 10, 20, 5])
    >>> rank = document_order(timestamps)
    >>> labels = connected_components(4, np.array([0, 1]), np.array([1, 2]))
    >>> originals = originals_of(labels, rank)
    >>> originals.tolist()
    [1, 1, 1, 3]
    >>> [x.tolist() for x in edges_to_original(originals)]
    [[1, 1], [0, 2]]
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
from numba import njit

from neardup.candidates.radix import (
    order_keys,
    stable_argsort,
    stable_lexsort,
)
from neardup.candidates.tables import IdenticalBuckets
from neardup.group_labels import group_sizes, min_rank_members
from neardup.memory import index_dtype

GROUPINGS = ("components", "center")


# --------------------------------------------------------------------------- validation helpers


def _index_array(name: str, x: np.ndarray) -> np.ndarray:
    """``x`` as a 1-D int32 or int64 array (kept as it is: no copy of 4-byte indices; other
    integer dtypes become int64); an empty array of any dtype is accepted."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must have an integer dtype, got {arr.dtype}")
    int64_max = np.iinfo(np.int64).max
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > int64_max:
        raise ValueError(f"{name} values must be in 0..{int64_max}, got {arr.max()}")
    return arr if arr.dtype in (np.int32, np.int64) else arr.astype(np.int64)


def _check_same_length(name: str, x: np.ndarray, other: str, n: int) -> None:
    if x.size != n:
        raise ValueError(f"{name} must have the same length as {other} ({n}), got {x.size}")


def _check_indices(name: str, x: np.ndarray, n: int) -> None:
    if x.size and (x.min() < 0 or x.max() >= n):
        bad = x.min() if x.min() < 0 else x.max()
        raise ValueError(f"{name} must be document indices in 0..{n - 1}, got {bad}")


def _checked_pairs(n: int, a: np.ndarray, b: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``n`` checked to be an integer >= 0, and pairs ``(a[i], b[i])`` of document indices in
    ``0..n-1`` as int32 or int64 arrays of one length (:func:`_index_array`)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise ValueError(f"n must be an integer >= 0, got {n!r}") from None
    if n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n}")
    a = _index_array("a", a)
    b = _index_array("b", b)
    _check_same_length("b", b, "a", a.size)
    _check_indices("a", a, n)
    _check_indices("b", b, n)
    return n, a, b


def _check_originals(originals: np.ndarray) -> np.ndarray:
    originals = _index_array("originals", originals)
    n = originals.size
    _check_indices("originals", originals, n)
    # An original must be its own original, otherwise "the group of d" is ambiguous.
    bad = np.flatnonzero(originals[originals] != originals)
    if bad.size:
        d = int(bad[0])
        raise ValueError(
            f"originals must map every original to itself; document {d} has original "
            f"{originals[d]}, whose original is {originals[originals[d]]}"
        )
    return originals


# --------------------------------------------------------------------------- kernels


@njit(cache=True, nogil=True)
def find_root(parent, x):
    """The root of ``x`` in the union-find forest ``parent`` (int64 array, ``parent[r] == r``
    for a root); a union links one root under another (``parent[r2] = r1``). Path halving
    (every visited node skips to its grandparent) keeps the trees flat: O(α(n)) amortised with
    union by size, O(log n) when a union links by index. The one union-find of the package:
    :func:`connected_components` runs on it, and so does the index's grouping of a batch of
    adds.

    Example:
        >>> int(find_root(np.array([0, 0, 1]), 2))
        0
    """
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True, nogil=True)
def _union_pairs(a, b, parent):
    # parent = arange(n) on entry (numpy backs large arrays with huge pages). The larger root
    # goes under the smaller, so parent[x] <= x throughout and a root is its tree's smallest
    # node: no sizes and no second pass over the nodes to find each tree's smallest member.
    for e in range(a.size):
        ra = find_root(parent, a[e])
        rb = find_root(parent, b[e])
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb


@njit(cache=True, nogil=True)
def _flattened(parent):
    # parent[x] <= x: ascending, each node's parent already points at its root.
    for x in range(parent.shape[0]):
        parent[x] = parent[parent[x]]


@njit(cache=True, nogil=True)
def _ascending(values):
    for i in range(1, values.shape[0]):
        if values[i] < values[i - 1]:
            return False
    return True


@njit(cache=True, nogil=True)
def _own_labels(labels):
    """Whether every label is a document whose label is itself (no array of n made, as
    ``labels[labels]`` would)."""
    n = labels.shape[0]
    for i in range(n):
        g = labels[i]
        if g < 0 or g >= n or labels[g] != g:
            return False
    return True


def _compact_labels(labels: np.ndarray) -> np.ndarray:
    """Labels mapped into ``0..n-1`` (unchanged if they already are): the rank of each among
    the distinct labels, by one radix sort."""
    n = labels.size
    if n == 0 or (labels.min() >= 0 and labels.max() < n):
        return labels
    return IdenticalBuckets.of(order_keys(labels)).inverse()


# --------------------------------------------------------------------------- public API


def in_time_order(timestamps: np.ndarray) -> bool:
    """Whether the documents are in time order already: ``timestamps`` (one integer a
    document) never decrease, or are one value broadcast (a run without a time field). Then
    :func:`document_order` is the identity. O(n), O(1) for a broadcast value.

    Example:
        >>> in_time_order(np.array([10, 10, 30])), in_time_order(np.array([30, 10]))
        (True, False)
    """
    ts = np.asarray(timestamps)
    return ts.ndim == 1 and (ts.size == 0 or ts.strides[0] == 0 or bool(_ascending(ts)))


def document_order(timestamps: np.ndarray) -> np.ndarray:
    """Rank of every document by ``(timestamp, index)``: rank 0 is the earliest document.

    Args:
        timestamps: integer timestamp per document (any unit; only the order matters), length n.

    Returns:
        array of length n of :func:`~neardup.memory.index_dtype`, a permutation of
        ``0..n-1``. Equal timestamps are ranked by index (the
        earlier input row first).

    Complexity: O(n × significant bytes of the timestamps) time (one stable radix sort), O(n)
    when they are already in order; O(n) memory.

    Example:
        >>> document_order(np.array([30, 10, 30, 10])).tolist()
        [2, 0, 3, 1]
    """
    ts = np.asarray(timestamps)
    if ts.ndim != 1:
        raise ValueError(f"timestamps must be a 1-D array, got shape {ts.shape}")
    if ts.size and ts.dtype.kind not in "iu":
        raise ValueError(f"timestamps must have an integer dtype, got {ts.dtype}")
    index = index_dtype(ts.size)
    # One value broadcast (a run without a time field), or already in time order, as crawls
    # often are.
    if in_time_order(ts):
        return np.arange(ts.size, dtype=index)
    order = stable_argsort(ts)
    rank = np.empty(ts.size, dtype=index)
    rank[order] = np.arange(ts.size, dtype=index)
    return rank


def connected_components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected-component label of every document, given the pairs ``(a[i], b[i])``.

    The pairs may come in any order and orientation and may repeat or be self-loops. The label of
    a component is its smallest document index, so the result does not depend on the pair order;
    a document in no pair is its own component.

    Args:
        n: number of documents, ``n >= 0``.
        a, b: integer arrays of equal length m, document indices in ``0..n-1``.

    Returns:
        array of length n of :func:`~neardup.memory.index_dtype`: ``labels[d]`` is the
        smallest index in d's component.

    Complexity: O(n + m log n) time in the worst case, near O(n + m) in practice (union-find
    linking the larger root under the smaller, with path halving, then one pass that points
    every node at its root); memory: the labels alone (the forest becomes them).

    Example:
        >>> connected_components(5, np.array([4, 1, 3]), np.array([1, 1, 3])).tolist()
        [0, 1, 2, 3, 1]
    """
    n, a, b = _checked_pairs(n, a, b)
    labels = np.arange(n, dtype=index_dtype(n))
    _union_pairs(a, b, labels)
    _flattened(labels)
    return labels


#: Rounds of :func:`accepted_links` that test only a spanning forest of the pairs left; the
#: pairs still undecided after them are tested at once. One: on the benchmark corpus at 1M,
#: 8 rounds test 3 % fewer pairs than 1 but read the spilled verification data in 12 chunks
#: instead of 5 (a round is one more pass over the data of its pairs).
LINK_ROUNDS = 1

_DONE, _ACCEPTED, _PENDING, _TEST = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _link_round(a, b, state, parent, scratch, everything):
    """One round of :func:`accepted_links`: pending pairs whose documents are linked already
    are done; of the others, those that join two trees of ``scratch`` (the accepted forest plus
    the pairs picked this round) are picked for testing, all of them when ``everything``.
    Returns the number picked. O(pairs log n)."""
    picked = 0
    for e in range(a.shape[0]):
        if state[e] != _PENDING:
            continue
        ra = find_root(parent, a[e])
        rb = find_root(parent, b[e])
        if ra == rb:
            state[e] = _DONE
            continue
        if not everything:
            sa = find_root(scratch, ra)
            sb = find_root(scratch, rb)
            if sa == sb:
                continue
            scratch[sb] = sa
        state[e] = _TEST
        picked += 1
    return picked


@njit(cache=True, nogil=True)
def _picked_pairs(a, b, state, start, most):
    """Up to ``most`` pairs picked for testing, in input order from pair ``start``: their
    (a, b) (of the dtype of ``a``), and the pair after the last one taken. No index array: at
    10M documents a round picks tens of millions. O(pairs scanned)."""
    pa = np.empty(most, dtype=a.dtype)
    pb = np.empty(most, dtype=a.dtype)
    t = 0
    e = start
    while e < a.shape[0] and t < most:
        if state[e] == _TEST:
            pa[t] = a[e]
            pb[t] = b[e]
            t += 1
        e += 1
    return pa[:t], pb[:t], e


@njit(cache=True, nogil=True)
def _link_tested(a, b, start, stop, ok, state, parent):
    """Records the outcome ``ok`` (in input order) of the pairs picked among pairs
    ``start..stop-1``: an accepted pair is kept and joins its documents' trees (the smaller
    root under the larger: path halving alone keeps the trees flat enough, and no array of
    sizes is held), a rejected one is done. O(pairs log n)."""
    t = -1
    for e in range(start, stop):
        if state[e] != _TEST:
            continue
        t += 1
        if not ok[t]:
            state[e] = _DONE
            continue
        state[e] = _ACCEPTED
        ra = find_root(parent, a[e])
        rb = find_root(parent, b[e])
        if ra < rb:
            parent[ra] = rb
        elif rb < ra:
            parent[rb] = ra


def _every_pair_tested(
    a: np.ndarray, b: np.ndarray, accept: Callable[[np.ndarray, np.ndarray], np.ndarray], step: int
) -> tuple[np.ndarray, int]:
    """:func:`accepted_links` without rounds or labels before: nothing links two documents
    before the tests, so every pair of two documents is tested, ``step`` pairs a call, and no
    union-find (4 bytes a document: 0.4 GB at 100M) or state a pair is held. O(m) besides
    the tests."""
    kept: list[np.ndarray] = []
    tested = 0
    for start in range(0, a.shape[0], step):
        pa, pb = a[start : start + step], b[start : start + step]
        apart = np.flatnonzero(pa != pb)
        ok = np.zeros(pa.shape[0], dtype=bool)
        if apart.shape[0]:
            ok[apart] = np.asarray(accept(pa[apart], pb[apart]), dtype=bool)
        tested += int(apart.shape[0])
        kept.append(np.flatnonzero(ok) + start)
    return (np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)), tested


def accepted_links(
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rounds: int = LINK_ROUNDS,
    step: int = 1 << 23,
    linked: np.ndarray | None = None,
    overwrite_linked: bool = False,
) -> tuple[np.ndarray, int]:
    """Which candidate pairs to keep so that the connected components of the kept pairs are
    those of every pair ``accept`` would accept, testing as few pairs as it can.

    A pair whose documents are already linked by accepted pairs cannot change the components,
    so it is not tested. Each round tests a spanning forest of the pairs still undecided (over
    the components found so far), in input order and in calls of ``accept`` of at most ``step``
    pairs; a pair that joins two documents the accepted pairs link meanwhile is dropped
    untested. After ``rounds`` such rounds, the undecided pairs are tested at once (in calls of
    ``step`` pairs too). A component whose candidates all
    pass is then decided by about one test per document instead of one per candidate pair; the
    worst case (many rejected pairs) tests every pair, as without it.

    Args:
        n: number of documents.
        a, b: int32 or int64 document indices of the candidate pairs (equal lengths m).
        accept: vectorised predicate ``f(x, y) -> bool array`` of the pairs ``(x[i], y[i])``,
            called with non-empty arrays only (e.g. a :class:`neardup.pipeline.Relation`).
        rounds: rounds that test a spanning forest before the rest is tested at once (>= 0).
        step: most pairs handed to one call of ``accept`` (its temporaries stay bounded).
        linked: optional component labels (int, length n, each the smallest index of its
            component, as :func:`connected_components` gives) of links accepted before: the
            pairs are then decided on top of them, and a pair inside one of those components is
            not tested.
        overwrite_linked: the union-find starts from ``linked`` itself when it is of
            :func:`~neardup.memory.index_dtype` (no copy: it then holds the forest, labels no
            more); else from a copy.

    Returns:
        ``(kept, tested)``: ascending int64 indices into ``a``/``b`` of the accepted pairs that
        were tested, and the number of pairs tested. ``connected_components(n, a[kept],
        b[kept])`` equals the components of all accepted pairs (joined with ``linked``'s
        components when given).

    Complexity: O(rounds · (m log n + n)) time besides the tests, O(n + m) memory (one byte
    of state a pair, two int32 arrays of n, and ``step`` pairs handed to ``accept``).

    Example:
        >>> a, b = np.array([0, 1, 0, 2]), np.array([1, 2, 2, 3])
        >>> kept, tested = accepted_links(4, a, b, lambda x, y: y != 3)
        >>> kept.tolist(), tested
        ([0, 1], 3)
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    n, a, b = _checked_pairs(n, a, b)
    if rounds == 0 and linked is None:
        return _every_pair_tested(a, b, accept, step)
    state = np.full(a.size, _PENDING, dtype=np.int8)
    # 4 bytes a document when they fit: at 10M documents these are held beside the pairs.
    index_type = index_dtype(n)
    if linked is None:
        parent = np.arange(n, dtype=index_type)
    else:
        # A label is the smallest index of its component, so it is its own label: the labels
        # are a forest of depth one, a valid start for the union-find.
        parent = np.asarray(linked).astype(index_type, copy=not overwrite_linked)
        if parent.shape != (n,) or not _own_labels(parent):
            raise ValueError(
                f"linked must hold one label per document ({n}), each its own label; "
                f"got shape {parent.shape}"
            )
    # The forest rounds' copy of the forest (none when every pair is tested at once).
    scratch = np.empty(n if rounds else 0, dtype=index_type)
    tested = 0
    for r in range(rounds + 1):
        scratch[:] = parent[: scratch.shape[0]]
        picked = _link_round(a, b, state, parent, scratch, r == rounds)
        if picked == 0:
            break
        start = 0
        for _ in range(0, picked, step):
            pa, pb, stop = _picked_pairs(a, b, state, start, step)
            ok = np.asarray(accept(pa, pb), dtype=bool)
            del pa, pb
            _link_tested(a, b, start, stop, ok, state, parent)
            start = stop
        tested += picked
    return np.flatnonzero(state == _ACCEPTED), tested


def originals_of(labels: np.ndarray, rank: np.ndarray | None) -> np.ndarray:
    """Index of the original (the member of smallest rank) of every document's group.

    Args:
        labels: integer group label per document, length n (any values; documents with equal
            labels form one group), e.g. from :func:`connected_components`.
        rank: integer ordering key per document, length n, usually :func:`document_order`.
            Raw timestamps work too: equal keys are broken by the smaller index. None: the
            documents are in time order (the index is the rank); labels that are each their
            group's smallest member, as :func:`connected_components` gives, are then returned
            themselves (no copy).

    Returns:
        array of length n, int32 or int64 as ``labels``: ``originals[d]`` is the index of d's
        group original.

    Complexity: O(n) time and memory when labels are in ``0..n-1`` (as from
    :func:`connected_components`), else O(n × significant bytes of the labels) (compacted
    first, by a radix sort).

    Example:
        >>> originals_of(np.array([0, 0, 2, 0]), np.array([3, 1, 0, 2])).tolist()
        [1, 1, 2, 1]
    """
    labels = _index_array("labels", labels)
    if rank is not None:
        rank = _index_array("rank", rank)
        _check_same_length("rank", rank, "labels", labels.size)
    return min_rank_members(_compact_labels(labels), rank)


def center_groups(
    labels: np.ndarray,
    rank: np.ndarray,
    is_near_duplicate: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """The ``center`` grouping rule: groups that do not chain.

    Rule: inside each candidate component (``labels``), documents are taken in rank order; a
    document joins the group of the earliest existing center it is a near-duplicate of; if it is a
    near-duplicate of none, it becomes a new center, the original of a new group. Every member of
    a group is therefore a near-duplicate of its center, and the center is the group's earliest
    document. Only pairs inside one candidate component are ever tested.

    The rule is evaluated in vectorised rounds. Round r: in every component that still has
    unassigned documents, the earliest unassigned one becomes a center, and all other unassigned
    documents of that component are tested against it in one call for all components,
    ``is_near_duplicate(docs, centers)``; those that pass join it. The predicate is called once
    per round (never with empty arrays), and the number of rounds is the largest number of
    groups in one component. Components of size 1 are never tested.

    Args:
        labels: integer candidate-component label per document, length n, e.g.
            :func:`connected_components` over the candidate pairs.
        rank: integer ordering key per document, length n, usually :func:`document_order`
            (equal keys are broken by the smaller index).
        is_near_duplicate: vectorised symmetric predicate ``f(x, y) -> bool array``: for int
            index arrays of equal length m, element i says whether documents ``x[i]`` and
            ``y[i]`` are near-duplicates (e.g. Hamming distance of their fingerprints
            ``<= hamming_k``, or exact Jaccard ``>= threshold``). Must return shape ``(m,)``.

    Returns:
        array of length n of :func:`~neardup.memory.index_dtype`: the center (= original)
        index of every document's group.

    Complexity: O(n + p + T) time, where p is the number of documents in components of
    size > 1 (sorted by a radix sort) and T the number of predicate tests, T = Σ over rounds
    of the unassigned documents. A component of s documents that splits into g groups costs
    at most s·g tests, so the worst case is O(s²) tests and s rounds: a long candidate chain in
    which few candidate pairs pass (every document its own center). A component that is one
    group costs s - 1 tests.

    Example:
        >>> near = {(0, 1), (1, 2)}  # 0≈1, 1≈2, but 0≉2
        >>> f = lambda x, y: np.array([(min(i, j), max(i, j)) in near for i, j in zip(x, y)],
        ...                           dtype=bool)
        >>> labels = connected_components(3, np.array([0, 1]), np.array([1, 2]))
        >>> center_groups(labels, np.arange(3), f).tolist()
        [0, 0, 2]
    """
    labels = _index_array("labels", labels)
    rank = _index_array("rank", rank)
    n = labels.size
    _check_same_length("rank", rank, "labels", n)
    center = np.arange(n, dtype=index_dtype(n))
    if n == 0:
        return center

    compact = _compact_labels(labels)
    # Each document's component size in the labels' width: bincount would copy 4-byte labels
    # to 8 bytes and count in 8, and its gather back per document be 8 bytes a document more.
    pending = np.flatnonzero(group_sizes(compact) > 1)
    # The sort is stable, so equal (label, rank) keep index order: ties broken by index.
    pending = pending[stable_lexsort((rank[pending], compact[pending]))]
    plab = compact[pending]

    # Why the rounds equal the sequential greedy (loop over documents in rank order, each joining
    # the first center in creation order it passes, else becoming a center). Induction on r,
    # per component: suppose after r rounds both have created the same centers c1..cr in the same
    # order and the unassigned set U is exactly the documents that failed every one of c1..cr.
    # In the greedy, any document earlier than min(U) passed one of c1..cr, so no center is made
    # between cr and min(U); min(U) fails c1..cr and becomes c(r+1) -- the same new center the
    # round picks. Every other u in U comes later than c(r+1), so c(r+1) exists when the greedy
    # reaches u; u has failed all earlier centers, so u joins c(r+1) iff it passes c(r+1), which
    # is the round's single test. Those that fail form the new U, restoring the invariant.
    # The greedy runs per candidate component: pairs across components are not candidates and
    # are never tested, so components are independent and can share one call per round.
    while pending.size:
        head = np.empty(pending.size, dtype=bool)
        head[0] = True
        np.not_equal(plab[1:], plab[:-1], out=head[1:])
        run = np.cumsum(head) - 1
        heads = pending[head]
        rest = ~head
        docs = pending[rest]
        if docs.size == 0:
            break
        centers = heads[run[rest]]
        ok = np.asarray(is_near_duplicate(docs, centers))
        if ok.shape != docs.shape:
            raise ValueError(
                f"is_near_duplicate must return one value per pair, shape {docs.shape}, "
                f"got shape {ok.shape}"
            )
        if ok.dtype != np.bool_:
            raise ValueError(f"is_near_duplicate must return a bool array, got dtype {ok.dtype}")
        center[docs[ok]] = centers[ok]
        fail = ~ok
        pending = docs[fail]
        plab = plab[rest][fail]
    return center


def group_table(originals: np.ndarray) -> dict[str, np.ndarray]:
    """Per-document group columns from the original of every document.

    Args:
        originals: int array of length n, ``originals[d]`` the index of d's group original, e.g.
            from :func:`originals_of` or :func:`center_groups`. Every original must be its own
            original.

    Returns:
        ``{"original": int64, "is_original": bool, "group_size": int64}``, each of length n.
        ``original`` is the group's duplicate ID; ``group_size`` counts the documents sharing it
        (1 for a document with no near-duplicate).

    Complexity: O(n) time and memory.

    Example:
        >>> t = group_table(np.array([1, 1, 2, 1]))
        >>> t["is_original"].tolist(), t["group_size"].tolist()
        ([False, True, True, False], [3, 3, 1, 3])
    """
    originals = _check_originals(originals)
    n = originals.size
    return {
        "original": originals.astype(np.int64),  # a copy: the caller's array stays its own
        "is_original": originals == np.arange(n, dtype=originals.dtype),
        "group_size": group_sizes(originals).astype(np.int64),
    }


def edges_to_original(originals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The duplicate pairs ``(original, d)`` for every non-original document d, ordered by d.

    Args:
        originals: int array of length n, as for :func:`group_table`.

    Returns:
        ``(orig, dup)``: two int64 arrays of length n - (number of groups).

    Complexity: O(n) time and memory.

    Example:
        >>> [x.tolist() for x in edges_to_original(np.array([1, 1, 2, 1]))]
        [[1, 1], [0, 3]]
    """
    originals = _check_originals(originals)
    dup = np.flatnonzero(originals != np.arange(originals.size, dtype=originals.dtype))
    return originals[dup].astype(np.int64, copy=False), dup
