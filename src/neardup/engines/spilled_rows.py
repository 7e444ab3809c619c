"""Rows of uint64 values of varying length (CSR), written once to a file of a run's work folder
and read back many times, a few rows at a time: the verification data (LCS units or shingle
sets) of the documents that an out-of-core run reads again (:mod:`neardup.engines.outofcore`)."""

from __future__ import annotations

import sys
import threading

import numpy as np
from numba import njit

from neardup.engines.spill import WorkDir, read_spans
from neardup.io.write import pwrite_all, writing

__all__ = ["SpilledRows"]

#: :class:`SpilledRows`' mark of a row stored 8 bytes a value.
_WIDE = np.uint32(0xFFFFFFFF)
#: Which of a uint64's two 32-bit words holds its low bits, in memory.
_LOW = 0 if sys.byteorder == "little" else 1


class SpilledRows:
    """Rows of uint64 values (CSR) written once to a file of the work folder and read back
    many times, a few rows at a time (:meth:`take`).

    A row whose values share their high 32 bits (the LCS units of a text counted in
    characters: each is a code point and a tag) is stored as that shared word and then their
    low 32 bits, 4 bytes a value; other rows (word or shingle hashes) 8 bytes a value, marked
    by the lowest bit of the row's place among its put's bytes (a multiple of 4). The rows of
    one :meth:`put` are packed, then appended at the file's end, reserved under a lock: threads
    write their batches at once, in any order. Text counted in characters then takes half the
    disk, the page cache and the reads. Memory: 8 bytes a row (that place, and the length),
    4 when the caller holds the rows' lengths and gives them (``lengths``, int32, filled by
    :meth:`put`: the LCS units counted in pass 1), and 16 bytes a put. :meth:`finish`, then
    :meth:`take`.

    Example:
        >>> import tempfile
        >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
        ...     rows = SpilledRows(work, "v", 3)
        ...     rows.put(1, np.array([0, 1, 3]), np.array([7, 2**40, 9], dtype=np.uint64))
        ...     rows.put(0, np.array([0, 2]), np.array([5, 6], dtype=np.uint64))
        ...     rows.finish()
        ...     offsets, values = rows.take(np.array([0, 2]))
        ...     offsets.tolist(), values.tolist(), rows.disk_bytes
        ([0, 2, 4], [5, 6, 1099511627776, 9], 36)
    """

    def __init__(self, work: WorkDir, name: str, rows: int, lengths: np.ndarray | None = None):
        if lengths is not None and (lengths.dtype != np.int32 or lengths.shape != (rows,)):
            raise ValueError(
                f"lengths must be int32, one a row ({rows}); got {lengths.dtype} of shape "
                f"{lengths.shape}"
            )
        self.path = work.file(name + ".bin")
        with writing(self.path):
            self._file = open(self.path, "wb", buffering=0)
        # A row's first byte among its put's (+1: stored 8 bytes a value): not a file's 8.
        self._start = np.zeros(rows, dtype=np.uint32)
        # Its values (as pass 1's sizes).
        self._lengths = np.zeros(rows, dtype=np.int32) if lengths is None else lengths
        self._lock = threading.Lock()
        self._puts: list[tuple[int, int]] = []  # each put's first row and byte in the file
        self._put_rows = self._put_starts = np.zeros(0, dtype=np.int64)  # in row order
        #: Bytes written to the file (its end, where the next rows go).
        self.disk_bytes = 0

    def put(self, row: int, offsets: np.ndarray, values: np.ndarray) -> None:
        """Store the rows ``row, row + 1, …`` of the CSR ``(offsets, values)`` (offsets from
        0): one positional write at the file's end, reserved under a lock, which releases the
        GIL (other threads may put other rows meanwhile). ``values`` (uint64, contiguous) are
        packed in place, so they are lost: a batch's units are given away. O(len(values))."""
        if values.dtype != np.uint64 or not values.flags.c_contiguous:
            raise ValueError(f"values must be contiguous uint64; got {values.dtype}")
        if values.nbytes >= 1 << 32:  # a row's place in its put is 4 bytes
            raise ValueError(f"a put holds less than 4 GiB of values; got {values.nbytes:,} bytes")
        rows = slice(row, row + offsets.shape[0] - 1)
        words = values.view(np.uint32)
        offsets = np.asarray(offsets, dtype=np.int64)
        used = _pack_rows(words, offsets, self._start[rows], self._lengths[rows])
        with self._lock:
            at, self.disk_bytes = self.disk_bytes, self.disk_bytes + 4 * used
            self._puts.append((row, at))
        with writing(self.path):
            pwrite_all(self._file.fileno(), words[:used], at)

    def finish(self) -> None:
        """Close the file for writing (every row is put)."""
        with writing(self.path):
            self._file.close()
        self._puts.sort()
        self._put_rows = np.array([row for row, _ in self._puts], dtype=np.int64)
        self._put_starts = np.array([at for _, at in self._puts], dtype=np.int64)
        self._puts = []

    def take(
        self, rows: np.ndarray, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ascending ``rows``, as CSR ``(offsets int64[k + 1], values uint64)``; the values
        are ``out[:n]`` when ``out`` (uint64) holds the n values, else a new array. A buffer
        reused from call to call has its pages mapped once: a fresh array of a gigabyte costs
        a second of page faults on some virtual machines.

        Their packed bytes are read into the end of the values' array, one ``pread`` per run
        of adjacent rows, then widened in place from the front (a value is never written
        over bytes not yet read: each needs at least 4 of them). O(values + runs) time,
        memory O(values). Rows are taken only after :meth:`finish` (RuntimeError before).
        """
        if not self._file.closed:
            raise RuntimeError(f"rows of {self.path} are taken after finish(), not while put")
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self._lengths[rows]
        offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = int(offsets[-1])
        values = out[:n] if out is not None and out.shape[0] >= n else np.empty(n, np.uint64)
        if n == 0:
            return offsets, values
        places = self._start[rows]
        wide = (places & 1).astype(bool)
        put = np.searchsorted(self._put_rows, rows, side="right") - 1
        starts = self._put_starts[put] + (places & ~np.uint32(1))
        del places, put
        # A narrow row (of one value or more) is its shared high word, then its low words.
        nbytes = np.where(wide, 8 * lengths, np.where(lengths > 0, 4 + 4 * lengths, 0))
        packed = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(nbytes, out=packed[1:])
        tail = values.nbytes - int(packed[-1])
        read_spans(self.path, values, tail + packed, starts, nbytes)
        _unpack_rows(values.view(np.uint32), tail // 4, lengths, wide)
        return offsets, values


@njit(cache=True, nogil=True)
def _pack_rows(words, offsets, start, lengths):
    """Pack in place the CSR rows of uint64 values held as ``words`` (2 a value, native
    order), from the front: a row whose values share their high word (not ``_WIDE``) as that
    word and then their low words, any other row as its values' two words (low, high).
    Records each row's first byte among the packed words (plus 1 for a row of two words a
    value) and length. The words used.

    No word is written before it is read: a row's shared word goes at most where its first
    value's low word lies (read first), and a row of L >= 1 values packs into at most its 2L
    words, so the place written never passes the place read."""
    w = 0
    for r in range(offsets.shape[0] - 1):
        lo, hi = offsets[r], offsets[r + 1]
        lengths[r] = hi - lo
        shared = words[2 * lo + 1 - _LOW] if hi > lo else np.uint32(0)
        narrow = shared != _WIDE
        for i in range(lo, hi):
            if words[2 * i + 1 - _LOW] != shared:
                narrow = False
                break
        start[r] = 4 * w + (0 if narrow else 1)
        if hi == lo:
            continue
        if narrow:
            first = words[2 * lo + _LOW]
            words[w] = shared
            words[w + 1] = first
            w += 2
            for i in range(lo + 1, hi):
                words[w] = words[2 * i + _LOW]
                w += 1
        else:
            for i in range(lo, hi):
                low, top = words[2 * i + _LOW], words[2 * i + 1 - _LOW]
                words[w] = low
                words[w + 1] = top
                w += 2
    return w


@njit(cache=True, nogil=True)
def _unpack_rows(words, read, lengths, wide):
    """Widen packed rows read at ``words[read:]`` into uint64 values over ``words`` (2 words
    a value, native order), front to back: value i is written over words ``2i, 2i + 1`` once
    read, and every later value's words (and a later row's shared word) lie at or after
    ``2i + 2``."""
    i = 0
    for r in range(lengths.shape[0]):
        if lengths[r] == 0:
            continue
        shared = np.uint32(0)
        if not wide[r]:
            shared = words[read]
            read += 1
        for _ in range(lengths[r]):
            low = words[read]
            if wide[r]:
                top = words[read + 1]
                read += 2
            else:
                top = shared
                read += 1
            words[2 * i + _LOW] = low
            words[2 * i + 1 - _LOW] = top
            i += 1
