"""The linked rows of ``neardup pairs`` out of core: the rows ``0..n-1`` that are an end of a
link, ascending, and the place of any of them among them (its *compact index*), in O(1) a
row, not by a binary search.

A rank directory does it: a bit a row (set for a linked row) and the number of linked rows
before every 64th row, a quarter of a byte a row in all. The compact index of a linked row
``r`` is the count before its word plus the set bits of its word below ``r``. The ends are
marked a byte a row first (threads may write the same byte at once, not the same word), then
the directory and the linked rows are built from the marks, every kernel on two cores over
halves of its input (:func:`~neardup.candidates.radix.in_halves`).

Example:
    >>> rows = LinkedRows(10)
    >>> rows.mark(np.array([3 << 32 | 7, 7 << 32 | 9], dtype=np.uint64))
    >>> rows.finish().tolist()
    [3, 7, 9]
    >>> [x.tolist() for x in rows.compact(np.array([9 << 32 | 3], dtype=np.uint64))]
    [[2], [0]]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import in_halves
from neardup.candidates.tables import popcount64

__all__ = ["LinkedRows"]

_LOW = np.uint64(0xFFFFFFFF)


class LinkedRows:
    """The rows of ``0..n-1`` that any packed pair ``a << 32 | b`` given to :meth:`mark` has
    for an end (module docstring).

    Memory: a byte a row until :meth:`finish`, then a quarter of a byte a row (the
    directory) beside the linked rows (8 B each).
    """

    def __init__(self, n: int):
        self.n = int(n)
        self._marks: np.ndarray | None = np.zeros(self.n, dtype=bool)
        self._words = np.zeros(0, dtype=np.uint64)
        self._before = np.zeros(0, dtype=np.int64)

    def mark(self, packed: np.ndarray) -> None:
        """Mark both ends of the uint64 packed pairs ``packed``. O(pairs), on two cores."""
        in_halves(_mark_ends, packed.shape[0], packed, self._marks)

    def finish(self) -> np.ndarray:
        """The linked rows (int64, ascending), the marks let go for the directory. O(n), on
        two cores."""
        words = -(-self.n // 64)
        self._words = np.empty(words, dtype=np.uint64)
        counts = np.empty(words, dtype=np.int64)
        in_halves(_directory, words, self._marks, self._words, counts, size=self.n)
        self._before = np.zeros(words + 1, dtype=np.int64)
        np.cumsum(counts, out=self._before[1:])
        linked = np.empty(int(self._before[-1]), dtype=np.int64)
        in_halves(_listed, words, self._marks, self._before, linked, size=self.n)
        self._marks = None
        return linked

    def compact(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The compact indices (int64) of both ends of the uint64 packed pairs ``packed``,
        every end a linked row (after :meth:`finish`). O(pairs), on two cores."""
        a = np.empty(packed.shape[0], dtype=np.int64)
        b = np.empty(packed.shape[0], dtype=np.int64)
        in_halves(_compact_ends, packed.shape[0], packed, self._words, self._before, a, b)
        return a, b


@njit(cache=True, nogil=True)
def _mark_ends(lo, hi, packed, marks):
    for p in range(lo, hi):
        marks[packed[p] >> np.uint64(32)] = True
        marks[packed[p] & _LOW] = True


@njit(cache=True, nogil=True)
def _directory(lo, hi, marks, words, counts):
    n = marks.shape[0]
    for w in range(lo, hi):
        bits = np.uint64(0)
        for i in range(w * 64, min(n, w * 64 + 64)):
            if marks[i]:
                bits |= np.uint64(1) << np.uint64(i - w * 64)
        words[w] = bits
        counts[w] = popcount64(bits)


@njit(cache=True, nogil=True)
def _listed(lo, hi, marks, before, out):
    n = marks.shape[0]
    for w in range(lo, hi):
        r = before[w]
        for i in range(w * 64, min(n, w * 64 + 64)):
            if marks[i]:
                out[r] = i
                r += 1


@njit(cache=True, nogil=True)
def _rank(row, words, before):
    w = row >> np.uint64(6)
    below = (np.uint64(1) << (row & np.uint64(63))) - np.uint64(1)
    return before[w] + popcount64(words[w] & below)


@njit(cache=True, nogil=True)
def _compact_ends(lo, hi, packed, words, before, a, b):
    for p in range(lo, hi):
        a[p] = _rank(packed[p] >> np.uint64(32), words, before)
        b[p] = _rank(packed[p] & _LOW, words, before)
