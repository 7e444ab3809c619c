"""Per-document label passes of the grouping, each over the documents cut in two halves on two
threads (:func:`~neardup.candidates.radix.in_halves`): the member of smallest rank of each
group, group sizes, and exact duplicates joined to their representatives' components.

A pass that gathers per group a best member lets each half write its own array, and a second
pass over the documents merges the two; a count is split by group instead, each half counting
the groups of its half of the labels over all documents (one array): the result is that of one
pass over all documents, in the same order, whatever the number of threads.

Example:
    >>> import numpy as np
    >>> group_sizes(np.array([0, 0, 2, 0])).tolist()
    [3, 3, 1, 3]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import in_halves
from neardup.exact_duplicates import Duplicates
from neardup.memory import index_dtype
from neardup.rank_directory import counts_before, holds, rank_of

__all__ = ["group_sizes", "min_rank_members", "not_own_labels", "own_labels", "with_duplicates"]


def min_rank_members(labels: np.ndarray, rank: np.ndarray | None) -> np.ndarray:
    """Per document, the member of its group of smallest ``rank`` (ties: the smaller index;
    None: documents in time order, the index is the rank), of the dtype of ``labels``: int32 or
    int64 group labels in ``0..n-1``. O(n), one array of n beside the result. When every label
    is its group's smallest member (as from :func:`neardup.groups.connected_components`) and
    ``rank`` does not decrease with the index, the labels are the answer: one pass checks it,
    no other, and they come back copied (with ``rank`` None, themselves: no array of n more).

    Example:
        >>> min_rank_members(np.array([0, 0, 2, 0]), np.array([3, 1, 0, 2])).tolist()
        [1, 1, 2, 1]
    """
    n = labels.size
    if n and all(in_halves(_smallest_are_earliest, n, labels, rank)):
        return labels if rank is None else labels.copy()
    if rank is None:
        rank = np.arange(n, dtype=labels.dtype)
    best, best_after = np.full(n, -1, dtype=labels.dtype), np.full(n, -1, dtype=labels.dtype)
    in_halves(_min_rank_members, n, labels, rank, best, best_after)
    in_halves(_earlier_members, n, rank, best, best_after)
    out = best_after  # read no more: each document's original is written over it
    in_halves(_gathered, n, labels, best, out)
    return out


def group_sizes(originals: np.ndarray, own: np.ndarray | None = None) -> np.ndarray:
    """Per document, the number of documents sharing its original (``originals``, integer
    indices in ``0..n-1``), of :func:`~neardup.memory.index_dtype`: one count of n, each half
    of ``0..n-1`` counted on its own thread over all documents, then read back per document,
    in halves too. O(n) time.

    With ``own`` (:func:`own_labels` of ``originals``, when every original is its own, as
    :func:`~neardup.groups.originals_of` and :func:`~neardup.groups.center_groups` give them),
    the sizes are written over the counts: an original's count is its size, and a member's
    count (0) is not read by any document, so no array of n more (0.38 GB at 100M
    documents).

    Example:
        >>> group_sizes(np.array([1, 1, 2, 1])).tolist()
        [3, 3, 1, 3]
        >>> originals = np.array([1, 1, 2, 1])
        >>> group_sizes(originals, own_labels(originals)).tolist()
        [3, 3, 1, 3]
    """
    originals = np.asarray(originals)
    n = originals.size
    counts = np.zeros(n, dtype=index_dtype(n))
    in_halves(_count_originals, n, originals, counts, size=2 * n)
    if own is not None:
        in_halves(_members_sized, n, originals, own, counts)
        return counts
    sizes = np.empty_like(counts)
    in_halves(_gathered, n, originals, counts, sizes)
    return sizes


@njit(cache=True, nogil=True)
def _count_originals(half, lo, hi, originals, counts):
    # Each half counts the originals in its own part of 0..n-1: no two threads write a count.
    for i in range(originals.shape[0]):
        g = originals[i]
        if lo <= g < hi:
            counts[g] += 1


@njit(cache=True, nogil=True)
def _members_sized(half, lo, hi, originals, own, counts):
    # Originals keep their counts, which only members read.
    for i in range(lo, hi):
        if not own[i]:
            counts[i] = counts[originals[i]]


@njit(cache=True, nogil=True)
def _gathered(half, lo, hi, index, values, out):
    """``out[i] = values[index[i]]`` for ``lo <= i < hi``."""
    for i in range(lo, hi):
        out[i] = values[index[i]]


def own_labels(labels: np.ndarray) -> np.ndarray:
    """Whether each document is its own label or original (``labels[i] == i``): bool per
    document, with no array of the indices beside it. O(n), in two halves on two threads.

    Example:
        >>> own_labels(np.array([0, 0, 2, 1])).tolist()
        [True, False, True, False]
    """
    out = np.empty(labels.shape[0], dtype=bool)
    in_halves(_own, labels.shape[0], labels, out)
    return out


@njit(cache=True, nogil=True)
def _own(half, lo, hi, labels, out):
    for i in range(lo, hi):
        out[i] = labels[i] == i


def not_own_labels(labels: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The documents that are not their own label or original (``labels[i] != i``), ascending,
    of the dtype of ``labels``; ``own`` is :func:`own_labels` of them. Written in place by two
    halves on two threads, each from where the first half's members end: no bool array of n
    and no int64 copy beside the result (``np.flatnonzero(~own)`` and its cast held both: 0.3
    GB at 100M documents of which 25M are members). O(n).

    Example:
        >>> labels = np.array([0, 0, 2, 1], dtype=np.int32)
        >>> not_own_labels(labels, own_labels(labels)).tolist()
        [1, 3]
    """
    n = labels.shape[0]
    middle = n // 2
    first = middle - int(np.count_nonzero(own[:middle]))  # members in the first half
    out = np.empty(first + n - middle - int(np.count_nonzero(own[middle:])), dtype=labels.dtype)
    in_halves(_not_own, n, labels, out, first, middle=middle)
    return out


@njit(cache=True, nogil=True)
def _not_own(half, lo, hi, labels, out, first):
    j = 0 if half == 0 else first
    for i in range(lo, hi):
        if labels[i] != i:
            out[j] = i
            j += 1


def with_duplicates(
    labels: np.ndarray, duplicates: Duplicates, overwrite_labels: bool = False
) -> np.ndarray:
    """The component labels of every document once each exact duplicate of ``duplicates``
    joins the component of its representative: ``labels`` are those of
    :func:`connected_components` over pairs among representatives (each the smallest index of
    its component), and so is the result, without joining the duplicates' links to those pairs
    (0.8 GB at 10M documents); of the dtype of ``labels`` (int32 or int64). With
    ``overwrite_labels`` the result is written over ``labels`` (no array of n beside them: the
    duplicates first, which read only representatives' labels, then the representatives).

    A component's label changes only where one of its duplicates has a smaller index than all
    its representatives (a duplicate earlier in the input than its representative, which is
    the earliest in time). Those labels are marked first, a bit a document with the count of
    marks before each word (:mod:`neardup.rank_directory`), and the new label of each marked
    one is kept for it alone: a quarter of a byte a document instead of an index a document
    (0.38 GB at 100M). When none changes (documents in time order), the representatives are not read
    again. O(n + duplicates); the relabelling passes in two halves on two threads.

    Example:
        >>> dups = Duplicates.of(np.array([0, 1, 2, 1]))
        >>> with_duplicates(np.array([0, 0, 2, 3]), dups).tolist()
        [0, 0, 2, 0]
        >>> dups = Duplicates.of(np.array([2, 1, 2]))  # document 0 copies document 2
        >>> with_duplicates(np.array([0, 1, 1]), dups).tolist()
        [0, 0, 0]
    """
    labels = np.asarray(labels)
    members, reps = duplicates.members, duplicates.reps
    n = labels.shape[0]
    words = np.zeros(-(-n // 64), dtype=np.uint64)
    lowered = _mark_lowered(labels, members, reps, words)
    out = labels if overwrite_labels else labels.copy()
    if lowered == 0:
        in_halves(_duplicates_joined, members.shape[0], labels, members, reps, out)
        return out
    before = counts_before(words)
    smallest = np.empty(lowered, dtype=labels.dtype)
    _smallest_of_lowered(labels, members, reps, words, before, smallest)
    in_halves(
        _duplicates_relabelled, members.shape[0], labels, members, reps, words, before,
        smallest, out,
    )  # fmt: skip
    in_halves(
        _representatives_relabelled, n, labels, duplicates.words, words, before, smallest, out
    )
    return out


@njit(cache=True, nogil=True)
def _mark_lowered(labels, members, reps, words):
    """Set the bit of each label that a duplicate smaller than it lowers; their number."""
    lowered = 0
    for j in range(members.shape[0]):
        root = np.uint64(labels[reps[j]])
        if members[j] < labels[reps[j]] and not holds(root, words):
            words[root >> np.uint64(6)] |= np.uint64(1) << (root & np.uint64(63))
            lowered += 1
    return lowered


@njit(cache=True, nogil=True)
def _smallest_of_lowered(labels, members, reps, words, before, smallest):
    # A label is the smallest index of its component; a duplicate may be smaller still.
    for k in range(smallest.shape[0]):
        smallest[k] = labels.shape[0]
    for j in range(members.shape[0]):
        root = np.uint64(labels[reps[j]])
        if holds(root, words):
            k = rank_of(root, words, before)
            smallest[k] = min(smallest[k], members[j])


@njit(cache=True, nogil=True, inline="always")
def _new_label(label, words, before, smallest):
    root = np.uint64(label)
    return smallest[rank_of(root, words, before)] if holds(root, words) else label


@njit(cache=True, nogil=True)
def _duplicates_joined(half, lo, hi, labels, members, reps, out):
    for j in range(lo, hi):
        out[members[j]] = labels[reps[j]]


@njit(cache=True, nogil=True)
def _duplicates_relabelled(half, lo, hi, labels, members, reps, words, before, smallest, out):
    for j in range(lo, hi):
        out[members[j]] = _new_label(labels[reps[j]], words, before, smallest)


@njit(cache=True, nogil=True)
def _representatives_relabelled(
    half, lo, hi, labels, duplicate_words, words, before, smallest, out
):
    # After the duplicates' pass: a representative's label is still as given.
    for i in range(lo, hi):
        if not holds(np.uint64(i), duplicate_words):
            out[i] = _new_label(labels[i], words, before, smallest)


@njit(cache=True, nogil=True)
def _smallest_are_earliest(half, lo, hi, labels, rank):
    """Whether, for ``lo <= i < hi``, ``labels[i]`` is a member of ``i``'s group (its own
    label) no larger than ``i``, and ``rank`` does not decrease at ``i``: then every label is
    its group's smallest member, which has the smallest rank."""
    for i in range(lo, hi):
        g = labels[i]
        if g > i or labels[g] != g:
            return False
        if rank is not None:
            if i > 0 and rank[i] < rank[i - 1]:
                return False
    return True


@njit(cache=True, nogil=True)
def _min_rank_members(half, lo, hi, labels, rank, best, best_after):
    """``best[g]`` (first ``half``, 0) or ``best_after[g]`` (the other): the member of
    group ``g`` of smallest rank among ``lo <= i < hi``, -1 if none. Labels are compact
    (0..n-1); the strict "<" keeps the smaller index on equal rank."""
    out = best if half == 0 else best_after
    for i in range(lo, hi):
        g = labels[i]
        j = out[g]
        if j < 0 or rank[i] < rank[j]:
            out[g] = i


@njit(cache=True, nogil=True)
def _earlier_members(half, lo, hi, rank, best, best_after):
    """``best[g]`` becomes the earlier of the two halves' best members of group ``g`` (the
    first half's on equal rank: its index is smaller)."""
    for g in range(lo, hi):
        first, second = best[g], best_after[g]
        if first < 0 or (second >= 0 and rank[second] < rank[first]):
            best[g] = second
