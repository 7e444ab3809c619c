"""The repair round's buckets, kept band by band, and their pairs listed a slice at a time.

The MinHash band search (:func:`neardup.candidates.bands.packed_pairs_from_band_columns`) keeps,
band by band, the buckets of 3 to ``most + 1`` documents without their representatives
(:mod:`neardup.candidates.repair`): their members, positions among the documents searched
(uint32), and each bucket's number of them (int32). Short texts fill many such buckets by
chance, more a document as N grows: 1.7M members at 1M short documents, about 350M at 50M
(1.8 GB). Every pair of members of a bucket is a pair the repair round may need; the LCS bounds
(unit counts, count sketches) rule most of them out.

:class:`BucketParts` holds the buckets in memory; an out-of-core run writes them to its work
folder past a bound (:class:`neardup.engines.spilled_buckets.SpilledBuckets`). Both give them
back as CSR slices of consecutive buckets of at most a given number of pairs
(:meth:`BucketParts.slices`), and :func:`listed_pairs` lists each slice's pairs that the bounds
leave, packed ``min << 32 | max`` (uint64), sorted and made distinct slice by slice, into a
union: in memory (:class:`~neardup.candidates.bands.DistinctUnion`) or in sorted runs on disk
(:class:`neardup.engines.pair_runs.PairRuns`). Memory: one slice's listing and the union's
bound, not every listing of every bucket at once (3.7 GB at 50M documents).

When the count sketches are in a spill file the listing bounds the pairs by their lengths
alone; the sketches then bound the distinct pairs left, a slice of them per block of rows
(:func:`~neardup.candidates.bounds.possible_by_blocks`).

Example:
    >>> parts = BucketParts()
    >>> parts.append((np.array([1, 2, 3, 1, 2], np.uint32), np.array([3, 2], np.int32), 0))
    >>> keys, stats = listed_pairs(parts, np.array([10, 11, 12, 13]))
    >>> [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in keys], stats["repair_unlisted"]
    ([(11, 12), (11, 13), (12, 13)], 0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import nullcontext

import numpy as np
from numba import njit

from neardup.borrowed import borrowed
from neardup.candidates import radix
from neardup.candidates.bands import DistinctUnion
from neardup.candidates.bounds import BOUND_WORK, possible_by_blocks, scanned_sketches
from neardup.lcs import _ruled_out
from neardup.rank_directory import RowSet, holds

__all__ = ["BucketParts", "csr_slices", "listed_pairs", "unpacked"]

#: Pairs (listings) of a slice of buckets when the caller gives no size: 4M, about 100 MB of
#: the slice's listing, members and sort at most.
SLICE_PAIRS = 1 << 22

_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def csr_slices(
    counts_of: Callable[[int, int], np.ndarray],
    members_of: Callable[[int, int], np.ndarray],
    buckets: int,
    most: int,
    most_pairs: int,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """CSR ``(offsets, members)`` of consecutive buckets whose pairs (those of the buckets of at
    most ``most`` members: larger ones are not listed) number at most ``most_pairs`` in all, or
    of one bucket that has more; ``counts_of(start, stop)`` gives the member counts of buckets
    ``start..stop-1``, ``members_of(start, stop)`` the members ``start..stop-1`` of all
    buckets, in order. Memory: ``most_pairs`` counts (a bucket of pairs has at least one) and
    the slice's members. O(buckets + members).

    Example:
        >>> counts, members = np.array([2, 3, 2]), np.arange(7)
        >>> for offsets, part in csr_slices(lambda s, e: counts[s:e],
        ...                                 lambda s, e: members[s:e], 3, 16, 3):
        ...     print(offsets.tolist(), part.tolist())
        [0, 2] [0, 1]
        [0, 3] [2, 3, 4]
        [0, 2] [5, 6]
    """
    if most_pairs < 1:
        raise ValueError(f"most_pairs must be >= 1; got {most_pairs}")
    bucket = member = 0
    while bucket < buckets:
        counts = np.asarray(counts_of(bucket, min(buckets, bucket + most_pairs)), dtype=np.int64)
        pairs = np.where(counts <= most, counts * (counts - 1) // 2, 0)
        np.cumsum(pairs, out=pairs)
        take = max(1, int(np.searchsorted(pairs, most_pairs, side="right")))
        del pairs
        offsets = np.zeros(take + 1, dtype=np.int64)
        np.cumsum(counts[:take], out=offsets[1:])
        del counts
        end = member + int(offsets[-1])
        yield offsets, np.asarray(members_of(member, end))
        bucket += take
        member = end


class BucketParts:
    """The buckets the band search keeps for the repair round, band by band, in memory.

    The band search adds each band's ``(members, counts, others)`` (:meth:`append`;
    :meth:`extend` adds several): ``members`` uint32 positions among the documents searched,
    bucket after bucket, ``counts`` (int32) the members of each bucket, ``others`` the pairs of
    the band's buckets too large to list. :meth:`slices` gives them back. Memory: 4 bytes a
    member and 4 a bucket.
    """

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        #: Pairs of the buckets of more than ``most`` members, counted, not listed.
        self.others = 0

    @classmethod
    def of_csr(cls, offsets: np.ndarray, members: np.ndarray) -> BucketParts:
        """One part of the buckets of a CSR ``(offsets, members)`` (members ``< 2**32``)."""
        parts = cls()
        offsets = np.asarray(offsets, dtype=np.int64)
        parts.append((np.asarray(members).astype(np.uint32), np.diff(offsets), 0))
        return parts

    def append(self, part: tuple[np.ndarray, np.ndarray, int]) -> None:
        """Add a band's ``(members, counts, others)``."""
        members, counts, others = part
        self.others += int(others)
        self._keep(np.asarray(members, dtype=np.uint32), np.asarray(counts, dtype=np.int32))

    def extend(self, parts: list) -> None:
        """Add several bands' parts, in order."""
        for part in parts:
            self.append(part)

    def _keep(self, members: np.ndarray, counts: np.ndarray) -> None:
        self.parts.append((members, counts))

    def slices(self, most: int, most_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """CSR ``(offsets, members)`` (int64 offsets, uint32 positions) of consecutive buckets
        of at most ``most_pairs`` pairs (:func:`csr_slices`), every bucket once."""
        for members, counts in self.parts:
            yield from csr_slices(
                lambda s, e, c=counts: c[s:e],
                lambda s, e, m=members: m[s:e],
                counts.shape[0],
                most,
                most_pairs,
            )


@njit(inline="always")
def _pair_ruled(x, y, sizes, sketches, unbounded, threshold):
    """Whether the bounds rule out the pair of documents ``x`` and ``y`` at ``threshold`` > 0:
    by their lengths ``sizes`` and count ``sketches`` (:func:`neardup.lcs._ruled_out`), or,
    ``sketches`` None, by the lengths alone unless both are ``unbounded`` (a bit a row; every
    count 255: two such rule nothing out); never with ``sizes`` None (no bounds). The Nones
    choose the test when the kernel is compiled: the pair loop then holds only the test it
    runs, without a binding of an array that the others read (on every pair, an atomic
    reference count of that array: 4x slower on lengths alone, 1.3x with sketches)."""
    if sizes is None:
        return False
    low = min(sizes[x], sizes[y])
    top = max(sizes[x], sizes[y])
    if top == 0:
        return False
    if sketches is None:
        both = holds(np.uint64(x), unbounded) and holds(np.uint64(y), unbounded)
        return not both and low / top < threshold
    return _ruled_out(low, top, threshold, sketches, x, y)[0] >= 0.0


@njit(cache=True, nogil=True)
def _pairs_kernel(lo, hi, offsets, members, sizes, sketches, unbounded, threshold, most):
    """The pairs of buckets ``lo..hi-1`` of at most ``most`` members that :func:`_pair_ruled`
    leaves, packed ``min << 32 | max``, in one pass: the output doubles when full (the bounds
    cost more than a copy, so they run once). Returns (the pairs, the pairs of the larger
    buckets). O(Σ m² over the buckets of m <= ``most`` members)."""
    members = borrowed(members)  # a bucket's slice of it, once a bucket (neardup.borrowed)
    found = 0
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
                if _pair_ruled(x, y, sizes, sketches, unbounded, threshold):
                    continue
                key = (np.uint64(min(x, y)) << _SHIFT) | np.uint64(max(x, y))
                if found == out.shape[0]:
                    grown = np.empty(2 * found, np.uint64)
                    grown[:found] = out
                    out = grown
                out[found] = key
                found += 1
    # A view: the pages past ``found`` were never touched, so they take no memory.
    return out[:found], unexamined


def _in_halves(offsets: np.ndarray, members: np.ndarray, bounds: tuple, most: int) -> list:
    """:func:`_pairs_kernel` over the buckets cut in two halves of about as many pairs to list,
    on two threads (:func:`neardup.candidates.radix.in_halves`), each half's listing then
    sorted and made distinct on its thread: ``[(pairs, unexamined)]``, one or two. The cost
    is the pairs', each bounded as :data:`~neardup.candidates.bounds.BOUND_WORK` keys of a
    sort. O(buckets) to cut."""
    m = np.diff(offsets)
    listed = np.cumsum(np.where(m <= most, m * (m - 1) // 2, 0))
    total = int(listed[-1]) if listed.shape[0] else 0
    return radix.in_halves(
        lambda half, lo, hi: _sorted_listing(
            *_pairs_kernel(lo, hi, offsets, members, *bounds, most)
        ),
        offsets.shape[0] - 1,
        middle=int(np.searchsorted(listed, total // 2)),
        size=total * BOUND_WORK,
    )


def _sorted_listing(pairs: np.ndarray, unexamined: int) -> tuple[np.ndarray, int]:
    """A half's listing sorted and made distinct in its own memory, on its own thread."""
    return radix.sorted_distinct(pairs, in_place=True), unexamined


def unpacked(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two ends (int64) of packed pairs ``a << 32 | b``. O(pairs)."""
    return (keys >> _SHIFT).astype(np.int64), (keys & _LOW).astype(np.int64)


def listed_pairs(
    buckets: BucketParts,
    documents: np.ndarray | RowSet | None,
    most: int = 16,
    sizes: np.ndarray | None = None,
    sketches: np.ndarray | None = None,
    threshold: float = 0.0,
    block_rows: int | None = None,
    union: DistinctUnion | None = None,
    slice_pairs: int = SLICE_PAIRS,
) -> tuple[np.ndarray, dict]:
    """The distinct pairs of members of one bucket that the LCS bounds leave (module
    docstring), packed ``min << 32 | max`` over document indices, sorted.

    Args:
        buckets: the buckets, members as positions in ``documents``.
        documents: the document index of each position, ascending (an index array or a
            :class:`~neardup.rank_directory.RowSet`; None: the positions are the indices).
        most: most members of a bucket whose pairs are listed, ``>= 2``; the pairs of a larger
            bucket are counted, not listed.
        sizes, sketches, threshold: with a ``threshold`` > 0, the LCS unit counts and count
            sketches of the documents (:func:`neardup.lcs.possible_pairs`): pairs they rule out
            at that threshold are dropped; 0 keeps every pair.
        block_rows: when given, at most two blocks of that many rows of ``sketches`` are read
            into memory at once (:func:`~neardup.candidates.bounds.possible_by_blocks`: for
            sketches in a spill file); the pairs are then listed by their lengths and bounded
            by their sketches after.
        union: collects the slices' distinct pairs (default: a
            :class:`~neardup.candidates.bands.DistinctUnion` in memory); one that spills gives
            back an object read by slices (``union.values()[start:stop]``).
        slice_pairs: listings of a slice of buckets (:meth:`BucketParts.slices`), and distinct
            pairs bounded by their sketches at once.

    Returns:
        ``(keys, stats)``: the pairs, and the count ``repair_unlisted`` (pairs of the buckets
        of more than ``most`` members, theirs and ``buckets.others``; 0: every pair was
        examined).

    Complexity: O(Σ m² × COUNT_BUCKETS) over the buckets of m <= ``most`` members plus a sort
    of each slice's pairs and the union's merges; with ``block_rows``, the sketches' blocks
    read as :func:`~neardup.candidates.bounds.possible_by_blocks` reads them.

    Raises:
        ValueError: ``most < 2``, or a ``threshold`` > 0 without ``sizes`` and ``sketches``.
    """
    if most < 2:
        raise ValueError(f"most must be >= 2, got {most}")
    if threshold > 0.0 and (sizes is None or sketches is None):
        raise ValueError("a threshold > 0 needs the sizes and sketches of the documents")
    by_blocks = threshold > 0.0 and block_rows is not None
    # The lengths in the kernel, the sketches by blocks after (their coarse sketches first).
    scan = (
        scanned_sketches(sketches, block_rows)
        if by_blocks
        else nullcontext((np.zeros(0, dtype=np.uint64), None))
    )
    with scan as (unbounded, coarse):
        if by_blocks:
            bounds = (sizes, None, unbounded, float(threshold))
        elif threshold > 0.0:
            bounds = (sizes, sketches, unbounded, float(threshold))
        else:
            bounds = (None, None, unbounded, 0.0)
        union = DistinctUnion() if union is None else union
        unlisted = 0
        for offsets, positions in buckets.slices(most, slice_pairs):
            docs = positions.astype(np.int64) if documents is None else documents.take(positions)
            parts = _in_halves(offsets, docs, bounds, most)
            unlisted += sum(p[1] for p in parts)
            # A pair listed by several buckets (of several bands, or of both halves): once.
            for listing, _ in parts:
                union.add(listing)
            del parts
        keys = union.values()
        if by_blocks:
            keys = _left_by_sketches(
                keys, sizes, sketches, coarse, threshold, block_rows, slice_pairs
            )
        elif not isinstance(keys, np.ndarray):  # spilled: the pairs left are what the caller holds
            keys = keys[0 : len(keys)]
    return keys, {"repair_unlisted": int(unlisted) + buckets.others}


def _left_by_sketches(
    keys,
    sizes: np.ndarray,
    sketches: np.ndarray,
    coarse: np.ndarray | None,
    threshold: float,
    block_rows: int,
    step: int,
) -> np.ndarray:
    """The sorted packed ``keys`` (an array, or read by slices) that the count sketches leave,
    bounded about ``step`` at a time. A slice ends where a block of rows of their smaller ends
    begins: the pairs of each first block are then bounded by one call, which reads that block
    and the later ones once (:func:`~neardup.candidates.bounds.possible_by_blocks`), as one
    call over every pair would, bounding by the ``coarse`` sketches first. O(pairs ×
    COUNT_BUCKETS) plus the reads."""
    kept = []
    start, total = 0, len(keys)
    while start < total:
        part = np.asarray(keys[start : start + step])
        if start + part.shape[0] < total:
            last_block = (int(part[-1] >> _SHIFT) // block_rows) * block_rows
            cut = int(np.searchsorted(part, np.uint64(last_block) << _SHIFT))
            part = part[:cut] if cut else part  # a block of more pairs than a step: cut inside
        a = (part >> _SHIFT).astype(np.uint32)
        b = (part & _LOW).astype(np.uint32)
        keep = possible_by_blocks(sizes, sketches, a, b, threshold, block_rows, coarse)
        kept.append(part[keep])
        del a, b
        start += part.shape[0]
    return np.concatenate(kept) if kept else np.zeros(0, dtype=np.uint64)
