"""The linked rows of ``neardup pairs`` out of core: the rows ``0..n-1`` that are an end of a
link, ascending, and the place of any of them among them (its *compact index*), in O(1) a
row, not by a binary search. ``dedup`` out of core places the documents it compares among
them the same way (:meth:`LinkedRows.of_rows`).

A rank directory does it (:mod:`neardup.rank_directory`): a bit a row (set for a linked row)
and the number of linked rows before every 64th row, a quarter of a byte a row in all. The
ends are marked a byte a row first, then the directory and the linked rows are built from the
marks, every kernel on two cores over halves of its input
(:func:`~neardup.candidates.radix.in_halves`).

Example:
    >>> from neardup.engines.spill import MemoryBudget
    >>> budget = MemoryBudget(100)
    >>> rows = LinkedRows(10, budget)
    >>> rows.mark(np.array([3 << 32 | 7, 7 << 32 | 9], dtype=np.uint64))
    >>> rows.finish().tolist()
    [3, 7, 9]
    >>> [x.tolist() for x in rows.compact(np.array([9 << 32 | 3], dtype=np.uint64))]
    [[2], [0]]
    >>> rows.places(np.array([9, 3])).tolist()
    [2, 0]
    >>> budget.free, rows.nbytes
    (76, 24)
    >>> rows.release()
    >>> budget.free
    100
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import in_halves
from neardup.engines.spill import MemoryBudget
from neardup.memory import index_dtype
from neardup.rank_directory import directory_of, listed_rows, rank_of, ranks_of

__all__ = ["LinkedRows"]

_LOW = np.uint64(0xFFFFFFFF)


class LinkedRows:
    """The rows of ``0..n-1`` that any packed pair ``a << 32 | b`` given to :meth:`mark` has
    for an end (module docstring).

    Memory: a byte a row until :meth:`finish`, then a quarter of a byte a row (the
    directory, :attr:`nbytes`) until :meth:`release`, beside the linked rows (8 B each, the
    caller's). Both are charged to ``budget`` while they are held, if one is given, and
    given back when they are let go.
    """

    def __init__(self, n: int, budget: MemoryBudget | None = None):
        self.n = int(n)
        self.budget = budget
        self._marks: np.ndarray | None = np.zeros(self.n, dtype=bool)
        self._words: np.ndarray | None = np.zeros(0, dtype=np.uint64)
        self._before: np.ndarray | None = np.zeros(0, dtype=np.int64)
        self._charge(self._marks.nbytes)

    @property
    def nbytes(self) -> int:
        """Bytes of the directory (0 before :meth:`finish` and after :meth:`release`)."""
        return 0 if self._words is None else self._words.nbytes + self._before.nbytes

    def mark(self, packed: np.ndarray) -> None:
        """Mark both ends of the uint64 packed pairs ``packed``. O(pairs), on two cores."""
        in_halves(_mark_ends, packed.shape[0], packed, self._marks)

    @classmethod
    def of_rows(cls, n: int, rows: np.ndarray) -> LinkedRows:
        """The directory of the ``rows`` (integers in ``0..n-1``) of ``0..n-1``, finished:
        :meth:`places` gives their compact indices. O(n + rows)."""
        directory = cls(n)
        directory._marks[rows] = True
        directory.finish(listed=False)
        return directory

    def finish(self, listed: bool = True) -> np.ndarray | None:
        """The linked rows (int64, ascending; None without ``listed``), the marks let go for
        the directory. O(n), on two cores."""
        self._words, self._before = directory_of(self._marks)
        linked = listed_rows(self._marks, self._before) if listed else None
        self._charge(self.nbytes - self._marks.nbytes)
        self._marks = None
        return linked

    def places(self, rows: np.ndarray) -> np.ndarray:
        """The compact index of each of ``rows`` (linked rows, any integer dtype), in the
        linked rows' :func:`~neardup.memory.index_dtype` (after :meth:`finish`). O(rows), on
        two cores."""
        if self._words is None:
            raise ValueError("the linked rows' directory was released")
        return ranks_of(rows, self._words, self._before, index_dtype(int(self._before[-1])))

    def compact(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The compact indices (int64) of both ends of the uint64 packed pairs ``packed``,
        every end a linked row (after :meth:`finish`, before :meth:`release`). O(pairs), on
        two cores."""
        if self._words is None:
            raise ValueError("the linked rows' directory was released")
        a = np.empty(packed.shape[0], dtype=np.int64)
        b = np.empty(packed.shape[0], dtype=np.int64)
        in_halves(_compact_ends, packed.shape[0], packed, self._words, self._before, a, b)
        return a, b

    def release(self) -> None:
        """Let the directory go and give its bytes back (no :meth:`compact` after). O(1)."""
        self._charge(-self.nbytes)
        self._words = self._before = None

    def _charge(self, nbytes: int) -> None:
        if self.budget is not None:
            self.budget.charge(nbytes)


@njit(cache=True, nogil=True)
def _mark_ends(half, lo, hi, packed, marks):
    for p in range(lo, hi):
        marks[packed[p] >> np.uint64(32)] = True
        marks[packed[p] & _LOW] = True


@njit(cache=True, nogil=True)
def _compact_ends(half, lo, hi, packed, words, before, a, b):
    for p in range(lo, hi):
        a[p] = rank_of(packed[p] >> np.uint64(32), words, before)
        b[p] = rank_of(packed[p] & _LOW, words, before)
