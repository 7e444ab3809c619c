"""Repeated document IDs found in bounded memory, in input order.

Each ID is kept as its 128-bit hash (XXH64 of its UTF-8 bytes with two seeds; two different IDs
collide with probability about 2^-128, the standard of the content fingerprint) and the row key
of its first occurrence (:meth:`~neardup.io.rows.RowChecks.row_key`: the file's index and the
line, so keys ascend in input order), in an open-addressing table at most three quarters full:
32 to 64 bytes an ID, where a dict of the strings took about 150.

With a ``room`` and a ``spill_dir``, the table stops growing once its arrays would pass half the
room (at 100M IDs it would hold 3.2 GB, and 4.8 GB while it doubles). From then on each new ID
is still looked up in the table, so a repeat of an ID seen before that point is found at once,
and the IDs not found there are appended, 24 bytes each, to one of :data:`PARTITIONS` files by
the leading bits of their hash (buffered in the other half of the room). A repeat of such an ID
is found by :meth:`IdTable.spilled_repeats`, one partition at a time: the memory of a
partition (about N / 256 × 24 bytes, 94 MB at 1B IDs), the time of a sort of its hashes.

Example:
    >>> table = IdTable()
    >>> table.check(["a", "b", "a"], np.array([1, 2, 3])).tolist()
    [-1, -1, 1]
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
from numba import njit

from neardup.hashing import xxh64_slice
from neardup.io.write import writing
from neardup.text.canonical import arrow_utf8

__all__ = ["PARTITIONS", "IdTable", "id_hashes"]

_PARTITION_BITS = 8
#: Files the IDs past a full table are spread over, by the leading bits of their hash.
PARTITIONS = 1 << _PARTITION_BITS
#: Bytes of a table slot and of a spilled ID: the two hash words and the row key.
ENTRY_BYTES = 24
_ENTRY = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("key", "<i8")])


@njit(cache=True, nogil=True)
def _id_hashes(buf, starts, ends):
    out = np.empty((starts.shape[0], 2), dtype=np.uint64)
    for i in range(starts.shape[0]):
        out[i, 0] = xxh64_slice(buf, starts[i], ends[i], np.uint64(0))
        out[i, 1] = xxh64_slice(buf, starts[i], ends[i], np.uint64(0x9E3779B97F4A7C15))
    return out


def id_hashes(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The two 64-bit words by which an :class:`IdTable` knows each ID of a string column
    (``data``, its UTF-8 bytes; ``offsets``, int64, one more than the IDs): XXH64 of the bytes
    with seeds 0 and 0x9E3779B97F4A7C15, as ``uint64[n, 2]``. Two IDs are the same ID when
    both words are equal (distinct IDs share them with probability 2**-128). O(bytes).

    Example:
        >>> data = np.frombuffer(b"abab", np.uint8)
        >>> words = id_hashes(data, np.array([0, 2, 4]))
        >>> words.shape, bool((words[0] == words[1]).all())
        ((2, 2), True)
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    return _id_hashes(data, offsets[:-1], offsets[1:])


@njit(cache=True, nogil=True)
def _id_table_insert(h1, h2, first, new1, new2, keys, add):
    """For each new hash: the key of its slot's holder, or -1 (and, with ``add``, it takes a
    free slot). Linear probing; the table has a free slot. O(len(new1)) expected."""
    mask = h1.shape[0] - 1
    firsts = np.full(new1.shape[0], -1, dtype=np.int64)
    added = 0
    for i in range(new1.shape[0]):
        slot = new1[i] & mask
        while first[slot] >= 0:
            if h1[slot] == new1[i] and h2[slot] == new2[i]:
                firsts[i] = first[slot]
                break
            slot = (slot + 1) & mask
        if firsts[i] < 0 and add:
            h1[slot], h2[slot], first[slot] = new1[i], new2[i], keys[i]
            added += 1
    return firsts, added


class IdTable:
    """The IDs read so far, for duplicate detection (module docstring).

    Args:
        room: bytes the table and its spill buffer may hold (None: the table grows with the
            IDs). Only with ``spill_dir``.
        spill_dir: a folder for the IDs past a full table (a subfolder of its own is made in
            it, and removed by :meth:`close`).

    Example:
        >>> import tempfile
        >>> table = IdTable(room=1, spill_dir=tempfile.mkdtemp())   # full at once
        >>> table.check(["a", "b", "a"], np.array([1, 2, 3])).tolist()
        [-1, -1, -1]
        >>> [keys.tolist() for keys in table.spilled_repeats()]
        [[3], [1]]
        >>> table.close()
    """

    def __init__(self, room: int | None = None, spill_dir: str | None = None) -> None:
        if room is not None and room < 0:
            raise ValueError(f"room must be >= 0 bytes or None; got {room}")
        self.room = room if spill_dir is not None else None
        self._spill_dir = spill_dir
        self._folder: str | None = None  # made at the first spill, a new one each table
        capacity = 1 << 12
        if self.room is not None:
            capacity = min(capacity, _capacity_within(self.room // 2))
        self._alloc(max(capacity, 16))
        self.size = 0
        #: IDs written to (or waiting for) the partition files.
        self.spilled = 0
        self._full = capacity < 16
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0

    def _alloc(self, capacity: int) -> None:
        self.h1 = np.zeros(capacity, dtype=np.uint64)
        self.h2 = np.zeros(capacity, dtype=np.uint64)
        self.first = np.full(capacity, -1, dtype=np.int64)

    def check(self, ids: list[str] | pa.Array, keys: np.ndarray) -> np.ndarray:
        """For each ID in order: -1 if new to the table (it is added with its key, or spilled
        once the table is full), else the key of its first occurrence (earlier in ``ids`` or
        in an earlier call). ``ids``: strs, or an Arrow string array (hashed from its UTF-8
        buffers, no Python str made). O(len(ids)) expected."""
        if isinstance(ids, pa.Array):
            return self._insert(id_hashes(*arrow_utf8(ids)), np.asarray(keys, dtype=np.int64))
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        ends = np.cumsum(lengths)
        hashes = _id_hashes(np.frombuffer(b"".join(encoded), dtype=np.uint8), ends - lengths, ends)
        return self._insert(hashes, np.asarray(keys, dtype=np.int64))

    def size_after(self, data: np.ndarray, offsets: np.ndarray) -> int:
        """Add the IDs of an Arrow string column (its bytes and offsets); the number of
        distinct IDs seen so far. O(len(offsets)) expected. Not for a table with a ``room``."""
        if self.room is not None:
            raise ValueError("size_after counts the IDs in memory: use a table without a room")
        hashes = id_hashes(data, offsets)
        self._insert(hashes, np.zeros(hashes.shape[0], dtype=np.int64))
        return self.size

    def check_hashes(self, hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """:meth:`check` of IDs given by their hashes (:func:`id_hashes`, ``uint64[n, 2]``).
        O(n) expected.

        Example:
            >>> words = id_hashes(np.frombuffer(b"abab", np.uint8), np.array([0, 2, 4]))
            >>> IdTable().check_hashes(words, np.array([7, 8])).tolist()
            [-1, 7]
        """
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1, 2)
        return self._insert(hashes, np.asarray(keys, dtype=np.int64))

    def _insert(self, hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
        if not self._full and 4 * (self.size + len(hashes)) > 3 * self.h1.shape[0]:
            capacity = self.h1.shape[0]
            while 4 * (self.size + len(hashes)) > 3 * capacity:
                capacity *= 2
            if self.room is not None and capacity * ENTRY_BYTES > self.room // 2:
                capacity = max(_capacity_within(self.room // 2), self.h1.shape[0])
            if capacity > self.h1.shape[0]:
                used = self.first >= 0
                old = (self.h1[used], self.h2[used], self.first[used])
                self._alloc(capacity)
                _id_table_insert(self.h1, self.h2, self.first, *old, True)
        # Past three quarters of the largest table the room allows, IDs are looked up only.
        fit = 0 if self._full else min(len(hashes), 3 * self.h1.shape[0] // 4 - self.size)
        firsts = np.empty(len(hashes), dtype=np.int64)
        for part, add in ((slice(0, fit), True), (slice(fit, None), False)):
            firsts[part], added = _id_table_insert(
                self.h1, self.h2, self.first, hashes[part, 0], hashes[part, 1], keys[part], add
            )
            self.size += added
        if fit < len(hashes):
            self._full = True
            self._spill(hashes[fit:], keys[fit:], firsts[fit:] < 0)
        return firsts

    def _spill(self, hashes: np.ndarray, keys: np.ndarray, new: np.ndarray) -> None:
        entries = np.empty(int(new.sum()), dtype=_ENTRY)
        entries["h1"], entries["h2"], entries["key"] = hashes[new, 0], hashes[new, 1], keys[new]
        self._pending.append(entries)
        self._pending_rows += entries.shape[0]
        self.spilled += entries.shape[0]
        if self._pending_rows * ENTRY_BYTES >= self.room // 2:
            self._flush()

    def _flush(self) -> None:
        """Append the buffered IDs to their partitions' files, in input order within each."""
        if not self._pending:
            return
        entries = np.concatenate(self._pending)
        self._pending, self._pending_rows = [], 0
        part = (entries["h1"] >> np.uint64(64 - _PARTITION_BITS)).astype(np.intp)
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange(PARTITIONS + 1))
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="ids-seen-", dir=self._spill_dir)
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            with writing(self._partition(p)), open(self._partition(p), "ab") as out:
                # Not ndarray.tofile: its buffered stdio writes can fail unseen (a full disk).
                out.write(entries[order[bounds[p] : bounds[p + 1]]].view(np.uint8))

    def _partition(self, p: int) -> str:
        return os.path.join(self._folder, f"part-{p:03d}.bin")

    def spilled_repeats(self) -> tuple[np.ndarray, np.ndarray]:
        """The repeats among the spilled IDs: the key of each repeated occurrence and the key
        of the ID's first one (int64 arrays, in input order of the repeats). Reads each
        partition once, sorting it by hash: O(spilled log spilled) time, the memory of one
        partition (24 B an ID)."""
        self._flush()
        repeats, firsts = [], []
        for p in range(PARTITIONS if self.spilled else 0):
            if not os.path.exists(self._partition(p)):
                continue
            entries = np.fromfile(self._partition(p), dtype=_ENTRY)
            # Stable: the entries of equal hashes keep input order, so a run's head is the first.
            order = np.lexsort((entries["h2"], entries["h1"]))
            h1, h2 = entries["h1"][order], entries["h2"][order]
            same = (h1[1:] == h1[:-1]) & (h2[1:] == h2[:-1])
            if not same.any():
                continue
            # Each entry's run head: the last place at or before it where a new hash starts.
            starts = np.where(np.r_[True, ~same], np.arange(h1.shape[0]), 0)
            head = np.maximum.accumulate(starts)
            again = np.flatnonzero(same) + 1
            keys = entries["key"][order]
            repeats.append(keys[again])
            firsts.append(keys[head[again]])
        if not repeats:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        repeat_keys, first_keys = np.concatenate(repeats), np.concatenate(firsts)
        order = np.argsort(repeat_keys, kind="stable")
        return repeat_keys[order], first_keys[order]

    def close(self) -> None:
        """Remove the partition files: the spilled IDs are forgotten (the table stays usable)."""
        self._pending, self._pending_rows, self.spilled = [], 0, 0
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _capacity_within(nbytes: int) -> int:
    """The largest power-of-two number of slots that take at most ``nbytes`` (0 if none)."""
    capacity = 1
    while 2 * capacity * ENTRY_BYTES <= nbytes:
        capacity *= 2
    return capacity if capacity * ENTRY_BYTES <= nbytes else 0
