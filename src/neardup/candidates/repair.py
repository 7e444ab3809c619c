"""Pairs lost to star candidates, found again: a second verification round across components.

Star candidates (:mod:`neardup.candidates.bands`) link each bucket's members to its
representative only. Before verification the star and "all" candidates have the same connected
components; after it they may not: when the representative ``r`` fails against two members
``x`` and ``y`` that pass against each other, and no other verified path joins them, the star
edges lose the pair ``(x, y)``.

The repair, over the buckets without their representatives (CSR ``offsets``, ``members``):

1. before verification, :func:`bucket_pairs` lists the pairs of non-representative members of
   each bucket that the cheap LCS bounds (unit counts, count sketches) leave; the caller drops
   the star candidates among them (:func:`without_pairs`: decided by the star round), and
   reads the verification data of their ends with that of the star candidates';
2. after the star round, :func:`repair_links` keeps the pairs whose ends lie in different
   components of the verified star edges and decides them with
   :func:`neardup.groups.accepted_links` started from those components (``linked=``): a pair
   whose ends the accepted pairs link meanwhile is not tested.

Claim: the components of the verified star edges plus the accepted repair pairs equal those of
verifying every candidate pair of every bucket ("all"), when no bucket is too large for step 1 (below).

Proof. Every edge either round accepts joins two members of one bucket and passes
verification, so it is an accepted "all" edge: the repaired components are no coarser than
those of "all". Conversely let ``(u, v)`` be an "all" pair that passes, both in bucket ``q``.
If ``u`` or ``v`` is ``q``'s representative, ``(u, v)`` is a star candidate: the star round
accepted it, or skipped it because its ends were linked already (a star candidate the bounds
drop fails). Otherwise it is a pair of non-representative members: step 1 lists it (the bounds
drop only pairs that fail), unless it is a star candidate of another bucket (decided, as
above). If the star components hold ``u`` and ``v`` together they are connected; else step 2
either tests it (it passes, and is kept) or skips it because accepted pairs link ``u`` and
``v`` already. Components only grow, so in every case ``u`` and ``v`` end connected: the
repaired components are no finer than those of "all". Hence they are equal. The order of the
pairs changes which pairs are tested, never the components.

Cost: the star round tests O(n · bands) pairs; step 1 is quadratic in the members of a
bucket, step 2 linear in the pairs listed. A hot bucket (a shared template, or text common to
many documents: many members that fail one another) would list millions of pairs, and the
bounds (about 50 ns a pair) cost more than the star round itself; so a bucket of more than
``most`` members besides its representative (:data:`BUCKET_MEMBERS`) is skipped whole and its
pairs are counted (``repair_unlisted``): the claim holds exactly when that count is 0.

Example:
    >>> offsets, members = np.array([0, 3]), np.array([1, 2, 3])  # bucket {0, 1, 2, 3}, rep 0
    >>> a, b, _ = bucket_pairs(offsets, members)
    >>> labels = np.array([0, 1, 1, 3])  # after the star round: 0 failed against 1 and 3
    >>> more_a, more_b, _ = repair_links(4, a, b, labels, lambda x, y: x + y == 4)
    >>> list(zip(more_a.tolist(), more_b.tolist()))
    [(1, 3)]
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numba import njit

from neardup.candidates import radix
from neardup.candidates.bounds import possible_by_blocks, unbounded_rows
from neardup.groups import LINK_ROUNDS, accepted_links
from neardup.lcs import _ruled_out

__all__ = [
    "BUCKET_MEMBERS",
    "bucket_csr",
    "bucket_pairs",
    "repair_links",
    "repair_links_decided",
    "without_pairs",
]

#: Most members (besides the representative) of a bucket whose pairs :func:`bucket_pairs`
#: lists: 16, at most 120 pairs a bucket. 9 buckets in 10 of the benchmark corpus have at most
#: 7; a larger bucket (a hot template, or text common to many documents) is skipped whole and
#: its pairs are counted. On the 1M-document benchmark corpus ``dedup`` takes 9–11 % more CPU
#: time than with star candidates alone (two alternating runs each; docs/methods.md).
BUCKET_MEMBERS = 16


@njit(cache=True, nogil=True)
def _bucket_pairs_kernel(offsets, members, sizes, sketches, unbounded, threshold, most, lo, hi):
    """Packed ``min << 32 | max`` of the pairs of buckets ``lo..hi-1`` of at most ``most`` members that
    the bounds leave (all its pairs when ``threshold`` is 0), in one pass: the output doubles
    when full (the bounds cost more than a copy, so they run once). With ``threshold`` > 0 and
    no ``sketches`` (0 rows), only the length ratio rules pairs out, unless both ends are
    ``unbounded`` (every count 255). Returns (the pairs, pairs ruled out by the bounds, pairs
    of the larger buckets). O(Σ m² over the buckets of m <= ``most`` members)."""
    shift = np.uint64(32)
    bounded = threshold > 0.0
    found = 0
    ruled = 0
    unexamined = 0
    out = np.empty(1 << 16, np.uint64)
    for q in range(lo, hi):
        bucket = members[offsets[q] : offsets[q + 1]]
        m = bucket.shape[0]
        if m > most:
            unexamined += m * (m - 1) // 2
            continue
        for i in range(m):
            x = bucket[i]
            for j in range(i + 1, m):
                y = bucket[j]
                low = min(sizes[x], sizes[y]) if bounded else 0
                top = max(sizes[x], sizes[y]) if bounded else 0
                # Two sketches of every count 255 (Korean texts) rule nothing out: _ruled_out.
                if top > 0 and sketches.shape[0] == 0:
                    if not (unbounded[x] and unbounded[y]) and low / top < threshold:
                        ruled += 1
                        continue
                elif top > 0:
                    if _ruled_out(low, top, threshold, sketches, x, y)[0] >= 0.0:
                        ruled += 1
                        continue
                if found == out.shape[0]:
                    grown = np.empty(2 * found, np.uint64)
                    grown[:found] = out
                    out = grown
                out[found] = (np.uint64(min(x, y)) << shift) | np.uint64(max(x, y))
                found += 1
    # A view: the pages past ``found`` were never touched, so they take no memory.
    return out[:found], ruled, unexamined


@njit(cache=True, nogil=True)
def _distinct_ends(packed):
    """The distinct pairs of the sorted packed ``packed`` as two uint32 arrays of their ends,
    and how often each is listed (uint32). O(pairs), 12 bytes a distinct pair."""
    k = 0
    for p in range(packed.shape[0]):
        if p == 0 or packed[p] != packed[p - 1]:
            k += 1
    a = np.empty(k, np.uint32)
    b = np.empty(k, np.uint32)
    listed = np.zeros(k, np.uint32)
    q = -1
    for p in range(packed.shape[0]):
        if p == 0 or packed[p] != packed[p - 1]:
            q += 1
            a[q] = np.uint32(packed[p] >> np.uint64(32))
            b[q] = np.uint32(packed[p] & np.uint64(0xFFFFFFFF))
        listed[q] += 1
    return a, b, listed


def bucket_pairs(
    offsets: np.ndarray,
    members: np.ndarray,
    most: int = BUCKET_MEMBERS,
    sizes: np.ndarray | None = None,
    sketches: np.ndarray | None = None,
    threshold: float = 0.0,
    block_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The pairs of members of one bucket that the LCS bounds leave: those the star edges of
    the buckets (without their representatives: :func:`bucket_csr`) leave out.

    Args:
        offsets: int64 ``(buckets + 1,)``; bucket ``q`` holds ``members[offsets[q]:
            offsets[q + 1]]``.
        members: int64 document indices, ``< 2**32``.
        most: most members of a bucket whose pairs are listed, ``>= 2``; the pairs of a larger
            bucket are counted, not listed.
        sizes, sketches, threshold: with a ``threshold`` > 0, the LCS unit counts and count
            sketches of the documents (:func:`neardup.lcs.possible_pairs`): pairs they rule out
            at that threshold are dropped; 0 keeps every pair.
        block_rows: when given, at most two blocks of that many rows of ``sketches`` are read
            into memory at once (:func:`neardup.candidates.bounds.possible_by_blocks`: for
            sketches in a spill file); the pairs of the buckets are then listed first, each
            once with its count, and bounded after.

    Returns:
        ``(a, b, stats)``: the distinct pairs, ``a < b``, sorted by ``(a, b)``, and the counts
        ``repair_bounded`` (pairs ruled out by the bounds, each as often as buckets list it)
        and ``repair_unlisted`` (pairs of the buckets of more than ``most`` members, not
        listed; 0: every pair was examined).

    Complexity: O(Σ m² × COUNT_BUCKETS) over the buckets of m <= ``most`` members, O(1) per
    larger bucket, plus a sort of the pairs.

    Raises:
        ValueError: ``most < 2``, or a ``threshold`` > 0 without ``sizes`` and ``sketches``.
    """
    if most < 2:
        raise ValueError(f"most must be >= 2, got {most}")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    members = np.ascontiguousarray(members, dtype=np.int64)
    if threshold > 0.0:
        if sizes is None or sketches is None:
            raise ValueError("a threshold > 0 needs the sizes and sketches of the documents")
    bounded = threshold > 0.0 and block_rows is None
    no_sketches = np.zeros((0, 1), dtype=np.uint8)
    unbounded = np.zeros(0, dtype=bool)
    if bounded:
        args = (offsets, members, sizes, sketches, unbounded, float(threshold), most)
    elif threshold > 0.0:  # the lengths in the kernel, the sketches by blocks after
        unbounded = unbounded_rows(sketches, block_rows)
        args = (offsets, members, sizes, no_sketches, unbounded, float(threshold), most)
    else:
        args = (offsets, members, np.zeros(0, np.int64), no_sketches, unbounded, 0.0, most)
    # Two halves of the members on two threads (the bounds dominate; the pairs are sorted
    # below, so the result does not depend on the split).
    parts = radix.in_halves(
        lambda lo, hi: _bucket_pairs_kernel(*args, lo, hi),
        offsets.shape[0] - 1,
        middle=int(np.searchsorted(offsets, offsets[-1] // 2)),
        size=members.shape[0],
    )
    packed = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
    ruled = sum(p[1] for p in parts)
    unlisted = sum(p[2] for p in parts)
    del parts
    packed.sort()  # in place
    # A pair may share several bands: the distinct ones, their ends in 32 bits each until
    # the bounds below leave the few that go on (12 bytes a pair where int64 ends and their
    # sort order took 32).
    a, b, listed = _distinct_ends(packed)
    del packed
    if threshold > 0.0 and not bounded:
        keep = possible_by_blocks(sizes, sketches, a, b, threshold, block_rows)
        ruled += int(listed[~keep].sum())
        a, b = a[keep], b[keep]
    del listed
    a, b = a.astype(np.int64), b.astype(np.int64)
    stats = {"repair_bounded": int(ruled), "repair_unlisted": int(unlisted)}
    return a, b, stats


def without_pairs(
    a: np.ndarray, b: np.ndarray, other_a: np.ndarray, other_b: np.ndarray
) -> np.ndarray:
    """Which pairs ``(a[p], b[p])`` are not among the pairs ``(other_a, other_b)``, in either
    orientation (bool per pair). The pairs are sorted, the others looked up in them: O((p + o)
    log p), for few pairs among many others.

    Example:
        >>> without_pairs(np.array([1, 2]), np.array([3, 4]), np.array([3]), np.array([1])).tolist()
        [False, True]
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    keep = np.ones(a.shape[0], dtype=bool)
    if a.shape[0] == 0 or len(other_a) == 0:
        return keep
    keys = _keys(a, b)
    # bucket_pairs gives its pairs sorted, and this runs once per slice of candidates: the
    # sort only when they are not.
    order = None if bool(np.all(keys[1:] >= keys[:-1])) else np.argsort(keys, kind="stable")
    if order is not None:
        keys = keys[order]
    # The others looked up one by one in compiled code: no temporaries of their number (a
    # slice of 8M candidates took 0.4 GB of them).
    found = np.zeros(keys.shape[0], dtype=bool)
    _mark_found(keys, np.asarray(other_a), np.asarray(other_b), found)
    keep[found if order is None else order[found]] = False  # of repeated pairs one is found
    return keep


@njit(cache=True, nogil=True)
def _mark_found(keys, a, b, found):
    """``found[i]`` set for the first place ``i`` of the sorted ``keys`` that equals the key
    ``min << 32 | max`` of some pair ``(a[p], b[p])``. O(pairs × log keys)."""
    shift = np.uint64(32)
    for p in range(a.shape[0]):
        key = (np.uint64(min(a[p], b[p])) << shift) | np.uint64(max(a[p], b[p]))
        i = np.searchsorted(keys, key)
        if i < keys.shape[0] and keys[i] == key:
            found[i] = True


def _keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``min << 32 | max`` of each pair, as uint64."""
    lo = np.minimum(a, b).astype(np.uint64)
    hi = np.maximum(a, b).astype(np.uint64)
    return (lo << np.uint64(32)) | hi


def bucket_csr(parts: list, reps: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The buckets kept by :func:`neardup.candidates.bands.pairs_from_band_columns` (a list
    of ``(members, counts, others)``, members indexing ``reps``) as one CSR ``(offsets,
    members)`` of document indices, and the pairs of the buckets it left out. The list is
    emptied as its parts are copied, each let go once in place: the parts and the CSR are
    never held whole at once. O(members).

    Example:
        >>> parts = [(np.array([0, 1, 2]), np.array([3]), 45)]
        >>> offsets, members, others = bucket_csr(parts, np.array([4, 6, 9]))
        >>> offsets.tolist(), members.tolist(), others, parts
        ([0, 3], [4, 6, 9], 45, [])
    """
    reps = np.asarray(reps, dtype=np.int64)
    counts = np.concatenate([c for _, c, _ in parts]) if parts else np.zeros(0, np.int64)
    offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    del counts
    members = np.empty(int(offsets[-1]), dtype=np.int64)
    others, at = 0, 0
    parts.reverse()  # popped from the end, in their order
    while parts:
        part, _, more = parts.pop()
        members[at : at + part.shape[0]] = reps[part]
        at += part.shape[0]
        others += int(more)
    return offsets, members, others


def repair_links(
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    labels: np.ndarray,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rounds: int = LINK_ROUNDS,
    step: int = 1 << 23,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The repair round (module docstring): of the bucket pairs ``(a, b)``
    (:func:`bucket_pairs`, without the star candidates: :func:`without_pairs`), those across
    the components ``labels`` of the verified star edges, decided by ``accept`` from those
    components on (:func:`neardup.groups.accepted_links`, in the order of the pairs).

    Args:
        n: number of documents.
        a, b: int64 document indices of the bucket pairs.
        labels: component label of each document after the star round, each the smallest index
            of its component (:func:`neardup.groups.connected_components`).
        accept: the verification, ``f(x, y) -> bool array`` (e.g. a
            :class:`neardup.pipeline.Relation`).
        rounds, step: as :func:`neardup.groups.accepted_links`.

    Returns:
        ``(a, b, stats)``: the accepted pairs to add to the star round's, and the counts
        ``repair_listed`` (pairs across components), ``repair_tested`` and
        ``repair_accepted``.

    Complexity: O(pairs) plus :func:`neardup.groups.accepted_links` over the pairs across.
    """
    across = labels[a] != labels[b]
    a, b = a[across], b[across]
    kept, tested = accepted_links(n, a, b, accept, rounds, step, linked=labels)
    stats = {
        "repair_listed": int(a.shape[0]),
        "repair_tested": int(tested),
        "repair_accepted": int(kept.shape[0]),
    }
    return a[kept], b[kept], stats


def repair_links_decided(
    a: np.ndarray,
    b: np.ndarray,
    label_a: np.ndarray,
    label_b: np.ndarray,
    passed: np.ndarray,
    rounds: int = LINK_ROUNDS,
    step: int = 1 << 23,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """:func:`repair_links` for an engine that decided every pair across components beforehand
    (each in a task of its own): the same accepted pairs and counts as :func:`repair_links` over
    the whole collection, from the pairs and their ends' labels alone.

    The documents the pairs and labels name are numbered in ascending order (a numbering that
    keeps the order of the indices changes no choice of :func:`repair_links`), and the pairs
    taken in the order :func:`bucket_pairs` lists them, by ``(a, b)``.

    Args:
        a, b: int64 document indices of the bucket pairs across components, ``a < b``,
            distinct (any order).
        label_a, label_b: the component labels of their ends after the star round, each the
            smallest index of its component.
        passed: bool per pair, the verification's decision.
        rounds, step: as :func:`neardup.groups.accepted_links`.

    Returns:
        ``(a, b, stats)`` as :func:`repair_links`, the pairs in ``(a, b)`` order.

    Complexity: O(p log p) for p pairs, memory O(p): the collection's size does not matter.

    Example:
        >>> a, b = np.array([3, 1]), np.array([5, 3])  # components {0, 1}, {2, 3}, {5}
        >>> la, lb = np.array([2, 0]), np.array([5, 2])
        >>> more_a, more_b, stats = repair_links_decided(a, b, la, lb, np.array([True, True]))
        >>> list(zip(more_a.tolist(), more_b.tolist())), stats["repair_accepted"]
        ([(1, 3), (3, 5)], 2)
    """
    a, b, label_a, label_b = (np.asarray(x, dtype=np.int64) for x in (a, b, label_a, label_b))
    passed = np.asarray(passed, dtype=bool)
    order = np.lexsort((b, a))
    a, b, label_a, label_b, passed = (x[order] for x in (a, b, label_a, label_b, passed))
    nodes = np.unique(np.concatenate([a, b, label_a, label_b]))
    number = functools.partial(np.searchsorted, nodes)
    labels = np.arange(nodes.shape[0], dtype=np.int64)
    labels[number(a)] = number(label_a)
    labels[number(b)] = number(label_b)
    keys = _keys(number(a), number(b))  # ascending, as the pairs are sorted by (a, b)

    def accept(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return passed[np.searchsorted(keys, _keys(x, y))]

    more_a, more_b, stats = repair_links(
        nodes.shape[0], number(a), number(b), labels, accept, rounds, step
    )
    return nodes[more_a], nodes[more_b], stats
