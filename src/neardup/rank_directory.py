"""A rank directory: a set of the rows ``0..n-1``, and the place of any of its rows among
them (its *rank*), in O(1) a row, not by a binary search.

A bit a row (set for a row of the set) and the number of set rows before every 64th row, a
quarter of a byte a row in all. The rank of a set row ``r`` is the count before its word plus
the set bits of its word below ``r``. The directory is built from marks, a byte a row (threads
may write the same byte at once, not the same word), every kernel on two cores over halves of
its input (:func:`~neardup.candidates.radix.in_halves`). The compiled :func:`rank_of` and
:func:`holds` are called from other kernels.

A :class:`RowSet` also finds the row at a place (a *select*): it keeps the row of every
64th set row, and counts set bits from there to the place's word (where the set is sparse,
it searches the directory's counts up to the next sample instead); the place's bit is found
in its word without a loop (:func:`select_in_word`).

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
from neardup.memory import index_dtype

__all__ = [
    "RowSet",
    "counts_before",
    "directory_of",
    "holds",
    "listed_rows",
    "rank_of",
    "ranks_of",
    "select_in_word",
]

#: A :class:`RowSet` keeps the row of every ``2**_SAMPLE_BITS``-th set row.
_SAMPLE_BITS = 6


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
    return words, _before(counts)


def counts_before(words: np.ndarray) -> np.ndarray:
    """The directory's count of set rows before each word of the bits ``words`` (uint64, a bit
    a row), and the total at the end: the ``before`` of :func:`directory_of` for bits set
    directly. O(len(words)), on two cores.

    Example:
        >>> counts_before(np.array([0b0110, 0b1], dtype=np.uint64)).tolist()
        [0, 2, 3]
    """
    counts = np.empty(words.shape[0], dtype=np.int64)
    in_halves(_popcounts, words.shape[0], words, counts)
    return _before(counts)


def _before(counts: np.ndarray) -> np.ndarray:
    """The count of set rows before each word, from each word's ``counts``, and the total."""
    before = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=before[1:])
    return before


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


class RowSet:
    """An ascending set of the rows ``0..n-1`` as a bit a row: the rows at places (its
    :meth:`take`, as an index array's), the rows of a range, and values at its rows, without
    an index a row. A quarter of a byte a row, and 8 bytes every 64 set rows: 36 MB for 87.5M
    of 100M rows, where their indices take 350 MB.

    Example:
        >>> rows = RowSet.complement(np.array([0b0110], dtype=np.uint64), 5)
        >>> len(rows), rows.take(np.array([2, 0])).tolist(), rows.rows(1, 5).tolist()
        (3, [4, 0], [3, 4])
        >>> rows.compress(np.array([10, 11, 12, 13, 14])).tolist()
        [10, 13, 14]
    """

    def __init__(
        self, words: np.ndarray, n: int, dtype: type | None = None, before: np.ndarray | None = None
    ):
        self.n = int(n)
        self.words = words
        if before is None:
            before = counts_before(words)
        #: The directory's count of set rows before each word (:func:`directory_of`).
        self.before = before
        self.samples = np.empty(-(-len(self) >> _SAMPLE_BITS), dtype=np.int64)
        _sample_rows(words, self.before, self.samples)
        #: The dtype of the rows given back (default :func:`~neardup.memory.index_dtype` of
        #: ``n``).
        self.dtype = np.dtype(index_dtype(self.n) if dtype is None else dtype)

    @classmethod
    def of_marks(cls, marks: np.ndarray) -> RowSet:
        """The rows where the bool ``marks`` are set. O(n), on two cores."""
        words, before = directory_of(marks)
        return cls(words, marks.shape[0], before=before)

    @classmethod
    def complement(cls, words: np.ndarray, n: int, dtype: type | None = None) -> RowSet:
        """The rows ``0..n-1`` not set in the bits ``words`` (uint64, a bit a row, as
        :func:`directory_of`'s), given back as ``dtype``. O(n / 64)."""
        if words.shape[0] != -(-int(n) // 64):
            raise ValueError(f"{n} rows take {-(-int(n) // 64)} words, got {words.shape[0]}")
        own = ~words
        if n % 64:
            own[-1] &= (np.uint64(1) << np.uint64(n % 64)) - np.uint64(1)
        return cls(own, n, dtype)

    def __len__(self) -> int:
        return int(self.before[-1])

    def take(self, places: np.ndarray) -> np.ndarray:
        """The set row at each of ``places`` (0 to ``len - 1``, any integer dtype) in
        ascending order, as :attr:`dtype`. A place costs one word where the set is dense (at
        most :data:`_WALK_WORDS` between two samples), else a binary search of the words
        between them; on two cores."""
        places = np.asarray(places)
        out = np.empty(places.shape[0], dtype=self.dtype)
        in_halves(_take, places.shape[0], places, self.words, self.before, self.samples, out)
        return out

    def rows(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The set rows in ``start..stop-1`` (default: all), ascending, as :attr:`dtype`.
        O(stop - start)."""
        stop = self.n if stop is None else min(max(int(stop), 0), self.n)
        start = min(max(int(start), 0), stop)
        count = self._rank(stop) - self._rank(start)
        out = np.empty(count, dtype=self.dtype)
        _rows_between(self.words, start, stop, out)
        return out

    def compress(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one a row) at the set rows, in order: ``values[self.rows()]`` without
        the rows' array. O(n)."""
        if values.shape[0] != self.n:
            raise ValueError(f"values must have one entry a row ({self.n}), got {values.shape[0]}")
        out = np.empty(len(self), dtype=values.dtype)
        _rows_between(self.words, 0, self.n, out, values)
        return out

    def _rank(self, row: int) -> int:
        if row >= self.n:
            return len(self)
        return int(rank_of(np.uint64(row), self.words, self.before))


@njit(cache=True, nogil=True)
def _popcounts(half, lo, hi, words, counts):
    for w in range(lo, hi):
        counts[w] = popcount64(words[w])


def _select_table() -> np.ndarray:
    """``table[byte + 256 * k]``: the index of the ``k``-th set bit of ``byte`` (0 where it
    has no such bit), for :func:`select_in_word`."""
    table = np.zeros(256 * 8, dtype=np.uint8)
    for byte in range(256):
        bits = [bit for bit in range(8) if byte >> bit & 1]
        for k, bit in enumerate(bits):
            table[byte + 256 * k] = bit
    return table


_SELECT_IN_BYTE = _select_table()

_ONES_STEP_8 = np.uint64(0x0101010101010101)
_HIGH_BITS_STEP_8 = np.uint64(0x8080808080808080)


@njit(cache=True, nogil=True)
def select_in_word(word: np.uint64, k: int) -> int:
    """The index of the ``k``-th (from 0) set bit of the uint64 ``word``; ``k`` must be below
    its count of set bits. O(1), no branch: the set bits of each byte counted at once (SWAR),
    their running sums compared with ``k`` at once to find the byte, and the bit found in
    that byte by a table (Vigna's broadword select).

    Example:
        >>> int(select_in_word(np.uint64(0b1011_0000_0000_0100), 2))
        13
    """
    x = np.uint64(word)
    counts = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    counts = (counts & np.uint64(0x3333333333333333)) + (
        (counts >> np.uint64(2)) & np.uint64(0x3333333333333333)
    )
    counts = (counts + (counts >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    # Byte j of sums: the set bits of bytes 0..j (at most 64: its high bit stays clear).
    sums = counts * _ONES_STEP_8
    k = np.uint64(k)
    # The high bit of byte j is set where sums's byte j <= k: these bytes precede k's.
    below = ((k * _ONES_STEP_8) | _HIGH_BITS_STEP_8) - sums
    shift = np.uint64(popcount64(below & _HIGH_BITS_STEP_8) * 8)
    rank = k - (((sums << np.uint64(8)) >> shift) & np.uint64(0xFF))
    byte = (x >> shift) & np.uint64(0xFF)
    return np.int64(shift) + np.int64(_SELECT_IN_BYTE[np.int64(byte + np.uint64(256) * rank)])


@njit(cache=True, nogil=True)
def _sample_rows(words, before, samples):
    for w in range(words.shape[0]):
        first = (before[w] + (1 << _SAMPLE_BITS) - 1) >> _SAMPLE_BITS
        for k in range(first, samples.shape[0]):
            place = k << _SAMPLE_BITS
            if place >= before[w + 1]:
                break
            samples[k] = w * 64 + select_in_word(words[w], place - before[w])


#: Places whose samples :func:`_take` reads before it reads their words.
_TAKE_BATCH = 64

#: Most words between two samples for :func:`_take` to count forward from the first; past
#: them (a sparse set) it searches the counts before the words instead.
_WALK_WORDS = 16


@njit(cache=True, nogil=True)
def _take(half, lo, hi, places, words, before, samples, out):
    # Random places miss the cache at each read, so the reads are few and the places go in
    # batches: first every place's samples (independent reads, whose misses overlap), then
    # their words. The place p is the (p mod 64)-th set row from its sample's row on, that
    # row included: counted forward word by word, no count before a word read (2.4-3.2x faster
    # on random places among 100M rows than a search of those counts between two samples:
    # benchmarks/bench_row_set.py), unless the next sample is more than _WALK_WORDS words
    # away, where the search is kept.
    one = np.uint64(1)
    last = words.shape[0] - 1
    rows = np.empty(_TAKE_BATCH, dtype=np.int64)
    ends = np.empty(_TAKE_BATCH, dtype=np.int64)
    for start in range(lo, hi, _TAKE_BATCH):
        stop = min(hi, start + _TAKE_BATCH)
        for i in range(start, stop):
            k = np.int64(places[i]) >> _SAMPLE_BITS
            rows[i - start] = samples[k]
            ends[i - start] = samples[k + 1] >> 6 if k + 1 < samples.shape[0] else last
        for i in range(start, stop):
            p = np.int64(places[i])
            row = rows[i - start]
            w, end = row >> 6, ends[i - start]
            if end - w > _WALK_WORDS:
                while w < end:  # the last word w..end whose count before is <= p
                    m = (w + end + 1) >> 1
                    if before[m] <= p:
                        w = m
                    else:
                        end = m - 1
                out[i] = w * 64 + select_in_word(words[w], p - before[w])
                continue
            rank = p & ((1 << _SAMPLE_BITS) - 1)
            word = words[w] & ~((one << np.uint64(row & 63)) - one)  # from the row on
            count = popcount64(word)
            while rank >= count:
                rank -= count
                w += 1
                word = words[w]
                count = popcount64(word)
            out[i] = w * 64 + select_in_word(word, rank)


@njit(cache=True, nogil=True)
def _rows_between(words, start, stop, out, values=None):
    r = 0
    one = np.uint64(1)
    for w in range(start >> 6, (stop + 63) >> 6):
        bits = words[w]
        if w == start >> 6:
            bits &= ~((one << np.uint64(start & 63)) - one)
        if w == (stop - 1) >> 6 and stop & 63:
            bits &= (one << np.uint64(stop & 63)) - one
        while bits:
            row = w * 64 + popcount64((bits & (~bits + one)) - one)
            out[r] = row if values is None else values[row]
            r += 1
            bits &= bits - one
