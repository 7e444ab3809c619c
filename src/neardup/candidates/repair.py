"""Pairs lost to star candidates, found again: a second verification round across components.

Star candidates (:mod:`neardup.candidates.bands`) link each bucket's members to its
representative only. Before verification the star and "all" candidates have the same connected
components; after it they may not: when the representative ``r`` fails against two members
``x`` and ``y`` that pass against each other, and no other verified path joins them, the star
edges lose the pair ``(x, y)``.

The repair, over the buckets without their representatives (kept band by band by the band
search, :class:`neardup.candidates.bucket_lists.BucketParts`):

1. before verification, :func:`~neardup.candidates.bucket_lists.listed_pairs` (or
   :func:`bucket_pairs` for one CSR of buckets) lists the pairs of non-representative members
   of each bucket that the cheap LCS bounds (unit counts, count sketches) leave, a slice of
   buckets at a time; the caller drops the star candidates among them (:func:`mark_among`:
   decided by the star round), and reads the verification data of their ends with that of the
   star candidates';
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
from typing import NamedTuple

import numpy as np
from numba import njit

from neardup.candidates.bounds import BOUND_WORK
from neardup.candidates.bucket_lists import BucketParts, listed_pairs, unpacked
from neardup.candidates.radix import in_halves, sorted_distinct
from neardup.groups import LINK_ROUNDS, accepted_links

__all__ = [
    "BUCKET_MEMBERS",
    "BucketStars",
    "bucket_pairs",
    "bucket_stars",
    "mark_among",
    "repair_links",
    "repair_links_decided",
]

#: Most members (besides the representative) of a bucket whose pairs :func:`bucket_pairs`
#: lists: 16, at most 120 pairs a bucket. 9 buckets in 10 of the benchmark corpus have at most
#: 7; a larger bucket (a hot template, or text common to many documents) is skipped whole and
#: its pairs are counted. On the 1M-document benchmark corpus ``dedup`` takes 9–11 % more CPU
#: time than with star candidates alone (two alternating runs each; docs/methods.md).
BUCKET_MEMBERS = 16


class BucketStars(NamedTuple):
    """The LSH buckets of :func:`bucket_stars` holding two rows or more, by band: bucket ``q``
    (of band ``bands[q]``, ascending) links its head ``heads[q]`` to the members
    ``members[offsets[q]:offsets[q + 1]]`` (int64 positions)."""

    heads: np.ndarray
    members: np.ndarray
    offsets: np.ndarray
    bands: np.ndarray


def bucket_stars(
    band: np.ndarray, h: np.ndarray, ts: np.ndarray | None, pos: np.ndarray
) -> BucketStars:
    """The star of every LSH bucket of band rows in any order: the rows of equal band and
    band hash ``(band, h)`` (a bucket) link every member to their earliest, the *head*
    (smallest ``(ts, pos)``; ``ts`` None: all times equal), as the local engine links a
    bucket. Buckets of one row are left out.

    One compiled pass: the rows by band and part of band (a counting sort by the band and the
    top bits of the mixed hash, parts of about 4,096 rows), then each part's hashes into an
    open-addressing table of its own size (in a core's cache) that keeps each bucket's count
    and head, and the members of the buckets of two rows or more placed together. O(rows), no
    sort: one table a band took 1.5 times as long, and that half the time of radix sorts by
    hash and band. The fields are read where they are (a Spark reduce task's packed rows are
    not copied into arrays of their own first), no time is stored when there is none, and the
    results are views of arrays whose unwritten pages never become resident: a reduce task's
    8.0M band rows of 1M English documents took 0.41-0.54 s, two tasks at once, against
    0.78-1.09 s with those copies (in fresh processes, whose memory is all new: 0.74-0.97 s
    against 1.10-1.35 s). Within a band, buckets come by part, then in the order their first
    rows come, and a bucket's members in the input's order; its head and members do not depend
    on the order.

    Example:
        >>> stars = bucket_stars(np.array([0, 0, 1, 0]), np.array([7, 7, 7, 7]), None,
        ...                      np.array([9, 4, 5, 6]))
        >>> stars.heads.tolist(), stars.members.tolist(), stars.offsets.tolist(), stars.bands.tolist()
        ([4], [9, 6], [0, 2], [0])
    """
    band, h, pos = _integers(band), _integers(h), _integers(pos)
    if band.shape[0] and band.min() < 0:
        raise ValueError(f"bands must be >= 0, got {int(band.min())}")
    timed = ts is not None
    ts = _integers(ts) if timed else np.zeros(0, np.int64)
    n = pos.shape[0]
    # A bucket holds two rows or more: at most n // 2 buckets. Only the pages written become
    # resident, so the results are views of these arrays, not copies.
    heads, bands = np.empty(n // 2 + 1, np.int64), np.empty(n // 2 + 1, np.int64)
    offsets, members = np.empty(n // 2 + 2, np.int64), np.empty(n, np.int64)
    width = int(band.max()) + 1 if n else 0
    # Each row's part, then its table slot (fewer than 4n): 4 bytes a row while they fit.
    part_of = np.empty(n, np.int32 if n < _NARROW_ROWS else np.int64)
    links, buckets = _bucket_stars_kernel(
        band, h, ts, timed, pos, width, part_of, heads, members, offsets, bands
    )
    return BucketStars(heads[:buckets], members[:links], offsets[: buckets + 1], bands[:buckets])


def _integers(values) -> np.ndarray:
    """``values`` as an integer array: as given (any integer dtype, strided fields of a
    structured array too: the kernel reads them in place), else converted to int64."""
    values = np.asarray(values)
    return values if values.dtype.kind in "iu" else values.astype(np.int64)


_MIX = np.uint64(0x9E3779B97F4A7C15)

#: Fewer rows than this: :func:`bucket_stars` numbers their parts and table slots (fewer than
#: four a row) in 4 bytes.
_NARROW_ROWS = 1 << 29


#: Rows a part of a band holds on average (:func:`_bucket_stars_kernel`): its hash table, about
#: 40 bytes a slot and two slots a row, then stays in a core's L2 cache.
_PART_ROWS = 4096


@njit(cache=True, nogil=True)
def _bucket_stars_kernel(band, h, ts, timed, pos, width, part_of, heads, members, offsets, bands):
    """:func:`bucket_stars` over bands ``0 .. width - 1`` (``ts`` read only when ``timed``;
    ``part_of`` a row's scratch). Returns the links and buckets written."""
    n = pos.shape[0]
    counts = np.zeros(width, np.int64)
    for i in range(n):
        counts[band[i]] += 1
    widest = 0
    for b in range(width):
        widest = max(widest, counts[b])
    # Each band in 2^r parts by the top r bits of its mixed hashes (a bucket lies in one part),
    # each part found by a table of its own size: a band's table was tens of MB, one cache
    # miss a row (7.2M rows of a Spark reduce task, two at once: 0.45-0.47 s against 0.65-0.80 s).
    r = 0
    while (widest >> r) > _PART_ROWS:
        r += 1
    parts = width << r
    top = np.uint64(64 - r)
    starts = np.zeros(parts + 1, np.int64)
    for i in range(n):
        part = np.int64(band[i]) << r
        if r:
            part |= np.int64((np.uint64(h[i]) * _MIX) >> top)
        part_of[i] = part
        starts[part + 1] += 1
    most = 0
    for p in range(parts):
        most = max(most, starts[p + 1])
        starts[p + 1] += starts[p]
    # The rows copied in part order (stable): a part's rows are then read in sequence.
    bh, bp = np.empty(n, np.int64), np.empty(n, np.int64)
    bt = np.empty(n if timed else 0, np.int64)
    fill = starts[:parts].copy()
    for i in range(n):
        j = fill[part_of[i]]
        bh[j], bp[j] = h[i], pos[i]
        if timed:
            bt[j] = ts[i]
        fill[part_of[i]] = j + 1
    bits = 4
    while (1 << bits) < 2 * most:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    below = np.uint64(r)
    # A slot's fields side by side (one cache line): the part that stamped it last (the
    # table is reused part after part), the hash, the head's row, the rows, the members' place.
    slots = np.empty((1 << bits, 5), np.int64)
    slots[:, 0] = -1
    slot_of = part_of  # each row's part is read no more
    links = 0
    buckets = 0
    offsets[0] = 0
    for p in range(parts):
        lo, hi = starts[p], starts[p + 1]
        for j in range(lo, hi):  # the slot from the bits below the part's
            s = np.int64(((np.uint64(bh[j]) * _MIX) << below) >> shift)
            while slots[s, 0] == p and slots[s, 1] != bh[j]:
                s = (s + 1) & mask
            if slots[s, 0] != p:
                slots[s, 0], slots[s, 1], slots[s, 2], slots[s, 3], slots[s, 4] = p, bh[j], j, 1, -1
            else:
                slots[s, 3] += 1
                e = slots[s, 2]
                if timed:
                    if bt[j] < bt[e] or (bt[j] == bt[e] and bp[j] < bp[e]):
                        slots[s, 2] = j
                elif bp[j] < bp[e]:
                    slots[s, 2] = j
            slot_of[j] = s
        for j in range(lo, hi):  # each bucket of two rows or more, its room for its members
            s = slot_of[j]
            if slots[s, 3] > 1 and slots[s, 4] < 0:
                slots[s, 4] = links
                links += slots[s, 3] - 1
                heads[buckets] = bp[slots[s, 2]]
                bands[buckets] = p >> r
                buckets += 1
                offsets[buckets] = links
        for j in range(lo, hi):
            s = slot_of[j]
            if slots[s, 3] > 1 and j != slots[s, 2]:
                members[slots[s, 4]] = bp[j]
                slots[s, 4] += 1
    return links, buckets


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
    the buckets (without their representatives) leave out. The buckets as one CSR, the pairs
    unpacked: :func:`neardup.candidates.bucket_lists.listed_pairs` (which the band search's
    buckets, kept band by band, go through).

    Args:
        offsets: int64 ``(buckets + 1,)``; bucket ``q`` holds ``members[offsets[q]:
            offsets[q + 1]]``.
        members: int64 document indices, ``< 2**32``.
        most, sizes, sketches, threshold, block_rows: as
            :func:`~neardup.candidates.bucket_lists.listed_pairs`.

    Returns:
        ``(a, b, stats)``: the distinct pairs, ``a < b``, sorted by ``(a, b)``, and the count
        ``repair_unlisted`` (pairs of the buckets of more than ``most`` members, not listed;
        0: every pair was examined).

    Complexity: O(Σ m² × COUNT_BUCKETS) over the buckets of m <= ``most`` members, O(1) per
    larger bucket, plus a sort of the pairs.

    Raises:
        ValueError: ``most < 2``, or a ``threshold`` > 0 without ``sizes`` and ``sketches``.
    """
    buckets = BucketParts.of_csr(offsets, members)
    keys, stats = listed_pairs(buckets, None, most, sizes, sketches, threshold, block_rows)
    return (*unpacked(keys), stats)


def mark_among(keys: np.ndarray, a: np.ndarray, b: np.ndarray, found: np.ndarray) -> None:
    """Set ``found[i]`` where the sorted distinct packed pair ``keys[i]`` (``min << 32 |
    max``, :func:`~neardup.candidates.bucket_lists.listed_pairs`) is one of the pairs ``(a[p],
    b[p])``, in either orientation. The pairs are looked up one by one in compiled code: no
    temporaries of their number (a slice of 8M candidates took 0.4 GB of them), for few keys
    among many pairs. O(pairs × log keys).

    Example:
        >>> found = np.zeros(2, dtype=bool)
        >>> mark_among(np.array([1 << 32 | 3, 2 << 32 | 4], np.uint64), [3], [1], found)
        >>> found.tolist()
        [True, False]
    """
    if keys.shape[0] and len(a):
        a, b = np.asarray(a), np.asarray(b)
        # Halves of the pairs on two cores: both may only set a place to True. A pair's
        # binary search costs about what a pair's bound does.
        in_halves(
            lambda half, lo, hi: _mark_found(keys, a[lo:hi], b[lo:hi], found),
            a.shape[0],
            size=a.shape[0] * BOUND_WORK,
        )


@njit(cache=True, nogil=True)
def _mark_found(keys, a, b, found):
    """``found[i]`` set for the place ``i`` of the sorted ``keys`` that equals the key
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


def repair_links(
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    labels: np.ndarray,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rounds: int = LINK_ROUNDS,
    step: int = 1 << 23,
    overwrite_labels: bool = False,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The repair round (module docstring): of the bucket pairs ``(a, b)``
    (:func:`bucket_pairs`, without the star candidates: :func:`mark_among`), those across
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
        overwrite_labels: let the union-find start from ``labels`` themselves (of
            :func:`~neardup.memory.index_dtype`), which then hold its forest: 4 bytes a
            document less, for a caller that reads them no more.

    Returns:
        ``(a, b, stats)``: the accepted pairs to add to the star round's, and the counts
        ``repair_listed`` (pairs across components), ``repair_tested`` and
        ``repair_accepted``.

    Complexity: O(pairs) plus :func:`neardup.groups.accepted_links` over the pairs across.
    """
    across = labels[a] != labels[b]
    a, b = a[across], b[across]
    kept, tested = accepted_links(
        n, a, b, accept, rounds, step, linked=labels, overwrite_linked=overwrite_labels
    )
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
    nodes = sorted_distinct(np.concatenate([a, b, label_a, label_b]), in_place=True)
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
