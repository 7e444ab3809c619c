"""A rank directory: a set of the rows ``0..n-1``, and the place of any of its rows among
them (its *rank*), in O(1) a row, not by a binary search.

A bit a row (set for a row of the set) and the number of set rows before every 64th row, a
quarter of a byte a row in all. The rank of a set row ``r`` is the count before its word plus
the set bits of its word below ``r``. The directory is built from marks, a byte a row (threads
may write the same byte at once, not the same word), every kernel on two cores over halves of
its input (:func:`~neardup.candidates.radix.in_halves`). The compiled :func:`rank_of` and
:func:`holds` are called from other kernels.

Example:
    >>> marks = np.zeros(10, dtype=bool)
    >>> marks[[3, 7, 9]] = True
    >>> words, before = directory_of(marks)
    >>> listed_rows(marks, before).tolist()
    [3, 7, 9]
    >>> int(rank_of(np.uint64(9), words, before)), bool(holds(np.uint64(8), words))
    (2, False)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import in_halves
from neardup.candidates.tables import popcount64

__all__ = ["directory_of", "holds", "listed_rows", "rank_of", "ranks_of"]


def directory_of(marks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The directory of the rows where the bool ``marks`` are set: ``(words, before)``, a
    uint64 bit a row and the int64 count of set rows before each word (one more, the total,
    at the end). O(n), on two cores.

    Example:
        >>> [x.tolist() for x in directory_of(np.array([0, 1, 1], dtype=bool))]
        [[6], [0, 2]]
    """
    n = marks.shape[0]
    count = -(-n // 64)
    words = np.empty(count, dtype=np.uint64)
    counts = np.empty(count, dtype=np.int64)
    in_halves(_directory, count, marks, words, counts, size=n)
    before = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(counts, out=before[1:])
    return words, before


def listed_rows(marks: np.ndarray, before: np.ndarray) -> np.ndarray:
    """The rows where ``marks`` are set, ascending (int64), from the directory's counts
    ``before``. O(n), on two cores.

    Example:
        >>> marks = np.array([0, 1, 1], dtype=bool)
        >>> listed_rows(marks, directory_of(marks)[1]).tolist()
        [1, 2]
    """
    out = np.empty(int(before[-1]), dtype=np.int64)
    in_halves(_listed, before.shape[0] - 1, marks, before, out, size=marks.shape[0])
    return out


def ranks_of(rows: np.ndarray, words: np.ndarray, before: np.ndarray, dtype) -> np.ndarray:
    """The rank of each of ``rows`` (set rows of the directory ``(words, before)``, any integer
    dtype), as ``dtype``. O(rows), on two cores.

    Example:
        >>> words, before = directory_of(np.array([0, 1, 0, 1], dtype=bool))
        >>> ranks_of(np.array([3, 1]), words, before, np.int32).tolist()
        [1, 0]
    """
    out = np.empty(rows.shape[0], dtype=dtype)
    in_halves(_ranks, rows.shape[0], rows, words, before, out)
    return out


@njit(cache=True, nogil=True)
def _ranks(half, lo, hi, rows, words, before, out):
    for p in range(lo, hi):
        out[p] = rank_of(np.uint64(rows[p]), words, before)


@njit(cache=True, nogil=True)
def _directory(half, lo, hi, marks, words, counts):
    n = marks.shape[0]
    for w in range(lo, hi):
        bits = np.uint64(0)
        for i in range(w * 64, min(n, w * 64 + 64)):
            if marks[i]:
                bits |= np.uint64(1) << np.uint64(i - w * 64)
        words[w] = bits
        counts[w] = popcount64(bits)


@njit(cache=True, nogil=True)
def _listed(half, lo, hi, marks, before, out):
    n = marks.shape[0]
    for w in range(lo, hi):
        r = before[w]
        for i in range(w * 64, min(n, w * 64 + 64)):
            if marks[i]:
                out[r] = i
                r += 1


@njit(cache=True, nogil=True)
def rank_of(row: np.uint64, words: np.ndarray, before: np.ndarray) -> int:
    """The number of set rows below ``row`` (a uint64) in the directory ``(words, before)``:
    its rank, if it is set. O(1).

    Example:
        >>> words, before = directory_of(np.array([1, 0, 1, 1], dtype=bool))
        >>> int(rank_of(np.uint64(3), words, before))
        2
    """
    w = row >> np.uint64(6)
    below = (np.uint64(1) << (row & np.uint64(63))) - np.uint64(1)
    return before[w] + popcount64(words[w] & below)


@njit(cache=True, nogil=True)
def holds(row: np.uint64, words: np.ndarray) -> bool:
    """Whether ``row`` (a uint64) is set in the directory's ``words``. O(1).

    Example:
        >>> words, _ = directory_of(np.array([1, 0, 1], dtype=bool))
        >>> bool(holds(np.uint64(1), words)), bool(holds(np.uint64(2), words))
        (False, True)
    """
    return (words[row >> np.uint64(6)] >> (row & np.uint64(63))) & np.uint64(1) == np.uint64(1)
