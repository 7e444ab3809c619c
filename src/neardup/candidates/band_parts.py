"""A band's documents grouped by band hash, one partition of the hashes' leading bits at a time.

The MinHash band search (:func:`neardup.candidates.bands.packed_pairs_from_band_columns`) sorts
each band's hashes to find its buckets, the runs of equal hashes. A band searched whole holds
about :data:`ROW_BYTES` bytes a document at once (the sorted hashes and the documents' indices,
the runs, the star edges), and two bands are searched at once: 2.7 GB at 50M documents. Here
a band is split by its hashes' leading :data:`PREFIX_BITS` bits instead:

1. a counting pass over the column gives the documents of every prefix (:func:`prefix_counts`);
2. consecutive prefixes are grouped into partitions of at most a given number of documents
   (:func:`partitions`), the number chosen from the memory a search may take;
3. each partition is gathered by one more pass over the column, which keeps only its rows, each
   written among those of its hash's leading byte, and sorted there (:func:`gathered`).

Equal hashes share their prefix, so every bucket lies in one partition, and the partitions in
the order of their prefixes give the buckets in the order of one sort over the whole band: the
candidates and buckets do not depend on the partition. A prefix of more documents than a
partition may hold (a band on which most documents agree) is a partition alone.

The column is read a block of :data:`BLOCK_ROWS` rows at a time (:class:`BandColumn`): from
memory, or from the work folder of an out-of-core run by positional reads, not through a map
whose pages would stay resident. A band in P partitions held in memory is read P + 1 times.
One on disk is read twice: the pass after the counting one writes its rows by partition to a
staging file (:class:`StagedBand`), and each partition is gathered from its own region of
that file. Read P + 1 times, the band hashes of 100M documents in 27 partitions a band were
700 GB of reads, and the band search grew as N².

Example:
    >>> column = BandColumn.of(np.array([9, 3 << 60, 9, 3 << 60, 5], dtype=np.uint64))
    >>> counts = prefix_counts(column, None)
    >>> [(lo, hi) for lo, hi in partitions(counts, 2)]
    [(0, 12288), (12288, 65536)]
    >>> [(keys.tolist(), order.tolist()) for keys, order in
    ...  (gathered(column, None, counts, lo, hi) for lo, hi in partitions(counts, 2))]
    [([5, 9, 9], [4, 0, 2]), ([3458764513820540928, 3458764513820540928], [1, 3])]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from numba import njit

from neardup.io.write import pwrite_all, writing
from neardup.rank_directory import RowSet

__all__ = [
    "BLOCK_ROWS",
    "MIN_PART_ROWS",
    "PREFIX_BITS",
    "ROW_BYTES",
    "BandColumn",
    "StagedBand",
    "StagedPart",
    "gathered",
    "partitions",
]

#: Leading bits of a band hash that decide its partition: 65,536 prefixes, so that a partition
#: can be a 65,536th of a band (15K documents a partition at 1B documents).
PREFIX_BITS = 16
#: Leading bits whose documents are sorted together, by least-significant-digit radix passes
#: of 8 bits over the other 56: a unit's sort stays in cache and needs scratch of its size.
_UNIT_BITS = 8
#: Rows of the column read at a time (8 MB).
BLOCK_ROWS = 1 << 20
#: Bytes a document of a partition holds at most while it is searched: its hash and index
#: (12 bytes) beside the runs of equal hashes (16 bytes a run, at most one run for two
#: documents), then its index beside the runs and the star edges (8 bytes an edge).
ROW_BYTES = 28

#: Fewest documents a partition is given (1.8 MB at :data:`ROW_BYTES`): below, the pairs of
#: many partitions would reach an out-of-core run's union of pairs in pieces smaller than its
#: bound, each spilled as a run of its own, and the runs' merge reads a few values a run at
#: a time.
MIN_PART_ROWS = 1 << 16

_PREFIX_SHIFT = np.uint64(64 - PREFIX_BITS)


class BandColumn:
    """One band's hash column (``uint64``, one value a document), read a block at a time:
    ``read(start, stop)`` gives rows ``start..stop-1``. A column on disk names a ``staging``
    file where a band searched in several partitions is written by partition first
    (:class:`StagedBand`; None: each partition is gathered from the column). O(1)."""

    def __init__(
        self, rows: int, read: Callable[[int, int], np.ndarray], staging: Path | None = None
    ):
        self.rows = int(rows)
        self.read = read
        self.staging = staging

    @classmethod
    def of(cls, column: np.ndarray | BandColumn) -> BandColumn:
        """``column`` itself when a :class:`BandColumn`, else the array's rows (as ``uint64``:
        a copy only when of another type). O(1)."""
        if isinstance(column, BandColumn):
            return column
        values = np.ascontiguousarray(column, dtype=np.uint64)
        return cls(values.shape[0], lambda start, stop: values[start:stop])

    def blocks(self, subset: RowSet | None) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """``(block, rows)`` over the column in order: ``rows`` the ``subset`` rows in the
        block, ascending, as offsets into it (None: every row). O(rows read)."""
        for start in range(0, self.rows, BLOCK_ROWS):
            stop = min(start + BLOCK_ROWS, self.rows)
            if subset is None:
                yield np.ascontiguousarray(self.read(start, stop), dtype=np.uint64), None
                continue
            rows = subset.rows(start, stop)
            if rows.shape[0]:
                block = np.ascontiguousarray(self.read(start, stop), dtype=np.uint64)
                yield block, rows - rows.dtype.type(start)


@njit(cache=True, nogil=True)
def _count_prefixes(block, rows, counts):
    """Adds to ``counts`` the rows of ``block`` (those at ``rows``, or all) of each prefix."""
    if rows is None:
        for i in range(block.shape[0]):
            counts[np.int64(block[i] >> _PREFIX_SHIFT)] += 1
    else:
        for i in range(rows.shape[0]):
            counts[np.int64(block[rows[i]] >> _PREFIX_SHIFT)] += 1


@njit(cache=True, nogil=True)
def _gather(block, rows, given, first, lo, hi, at, keys, order):
    """Writes the rows of prefixes ``lo..hi-1`` (of ``block``, those at ``rows`` or all) at
    their unit's next place ``at[unit - lo's unit]``: hash to ``keys``, index to ``order``
    (``given[i]``, or ``first`` and the row's rank in the block). A row goes to one of at
    most 256 units, not of 65,536 prefixes, whose places the writes would miss in the cache."""
    n = block.shape[0] if rows is None else rows.shape[0]
    base = lo >> (PREFIX_BITS - _UNIT_BITS)
    for i in range(n):
        h = block[i] if rows is None else block[rows[i]]
        f = np.int64(h >> _PREFIX_SHIFT)
        if lo <= f < hi:
            u = (f >> (PREFIX_BITS - _UNIT_BITS)) - base
            k = at[u]
            keys[k] = h
            order[k] = given[i] if given is not None else np.uint32(first + i)
            at[u] = k + 1


@njit(cache=True, nogil=True)
def _by_partition(block, rows, first, part_of, parts, keys, order):
    """The rows of ``block`` (those at ``rows``, or all) grouped by the partition of their
    prefix (``part_of``), in block order within each: hashes to ``keys``, indices (``first``
    and the row's rank) to ``order``; returns each partition's start (``parts + 1``). A
    counting sort, O(rows + parts)."""
    n = block.shape[0] if rows is None else rows.shape[0]
    bounds = np.zeros(parts + 1, np.int64)
    for i in range(n):
        h = block[i] if rows is None else block[rows[i]]
        bounds[part_of[np.int64(h >> _PREFIX_SHIFT)] + 1] += 1
    for p in range(parts):
        bounds[p + 1] += bounds[p]
    at = bounds[:-1].copy()
    for i in range(n):
        h = block[i] if rows is None else block[rows[i]]
        p = part_of[np.int64(h >> _PREFIX_SHIFT)]
        keys[at[p]] = h
        order[at[p]] = np.uint32(first + i)
        at[p] += 1
    return bounds


@njit(cache=True, nogil=True)
def _sort_units(keys, order, unit_bounds):
    """Sorts each unit ``unit_bounds[u]..unit_bounds[u+1]-1`` of ``keys`` (with ``order``),
    whose hashes share their leading :data:`_UNIT_BITS` bits, by least-significant-digit radix
    passes of 8 bits over the other bits, stable (a pass whose digit is one value is skipped).
    Scratch: 12 bytes a row of the largest unit. O(rows × 7)."""
    largest = 0
    for u in range(unit_bounds.shape[0] - 1):
        largest = max(largest, unit_bounds[u + 1] - unit_bounds[u])
    scratch_keys = np.empty(largest, np.uint64)
    scratch_order = np.empty(largest, np.uint32)
    counts = np.empty(257, np.int64)
    for u in range(unit_bounds.shape[0] - 1):
        s, e = unit_bounds[u], unit_bounds[u + 1]
        if e - s < 2:
            continue
        src_k, src_o = keys[s:e], order[s:e]
        dst_k, dst_o = scratch_keys[: e - s], scratch_order[: e - s]
        moved = False
        for shift in range(0, 64 - _UNIT_BITS, 8):
            sh = np.uint64(shift)
            counts[:] = 0
            for i in range(e - s):
                counts[np.int64((src_k[i] >> sh) & np.uint64(255)) + 1] += 1
            if counts[np.int64((src_k[0] >> sh) & np.uint64(255)) + 1] == e - s:
                continue
            for c in range(256):
                counts[c + 1] += counts[c]
            for i in range(e - s):
                c = np.int64((src_k[i] >> sh) & np.uint64(255))
                dst_k[counts[c]] = src_k[i]
                dst_o[counts[c]] = src_o[i]
                counts[c] += 1
            src_k, dst_k = dst_k, src_k
            src_o, dst_o = dst_o, src_o
            moved = not moved
        if moved:  # the last pass wrote the scratch
            keys[s:e] = src_k
            order[s:e] = src_o


@njit(cache=True, nogil=True)
def _partition_ends(counts, most):
    """Ends of the runs of consecutive prefixes of at most ``most`` rows each (a prefix of
    more alone), empty prefixes joined to the run before them. O(prefixes)."""
    ends = np.empty(counts.shape[0], np.int64)
    k = 0
    held = 0
    for f in range(counts.shape[0]):
        if held > 0 and counts[f] > 0 and held + counts[f] > most:
            ends[k] = f
            k += 1
            held = 0
        held += counts[f]
    if held > 0:
        ends[k] = counts.shape[0]
        k += 1
    return ends[:k]


def prefix_counts(column: BandColumn, subset: RowSet | None) -> np.ndarray:
    """Rows of ``column`` (those at the ``subset``, None: all) of each of the
    ``2**PREFIX_BITS`` leading-bit prefixes (int64). One pass over the column, O(rows)."""
    counts = np.zeros(1 << PREFIX_BITS, dtype=np.int64)
    for block, rows in column.blocks(subset):
        _count_prefixes(block, rows, counts)
    return counts


def partitions(counts: np.ndarray, most: int | None) -> Iterator[tuple[int, int]]:
    """Ranges ``(lo, hi)`` of consecutive prefixes, ascending, that cover every row of
    ``counts`` (:func:`prefix_counts`) in partitions of at most ``most`` rows (None: one); a
    prefix of more than ``most`` rows is a range alone. O(prefixes)."""
    if int(counts.sum()) == 0:
        return
    if most is None:
        yield 0, counts.shape[0]
        return
    lo = 0
    for hi in _partition_ends(counts, max(int(most), 1)).tolist():
        yield lo, hi
        lo = hi


class StagedBand:
    """A band's rows written once by partition to the column's staging file: the hashes
    (8 bytes a row) then the rows' indices (4 bytes), each partition's rows in a region of
    their own, in column order; :meth:`part` gives partition ``k``'s rows back, and the file is
    deleted once every partition's are taken. One pass over the column, a block at a time,
    each partition's rows of a block written with one positional write of each kind.
    Disk: 12 bytes a row. Memory: 12 bytes a row of a block.

    Example:
        >>> import tempfile
        >>> values = np.array([9, 3 << 60, 9, 3 << 60, 5], dtype=np.uint64)
        >>> staging = Path(tempfile.mkdtemp()) / "band.staged"
        >>> column = BandColumn(5, lambda start, stop: values[start:stop], staging)
        >>> counts = prefix_counts(column, None)
        >>> staged = StagedBand(column, None, counts, list(partitions(counts, 2)))
        >>> [o.tolist() for _, o in (staged.part(0), staged.part(1))], staging.exists()
        ([[0, 2, 4], [1, 3]], False)
    """

    def __init__(
        self,
        column: BandColumn,
        subset: RowSet | None,
        counts: np.ndarray,
        ranges: list[tuple[int, int]],
    ):
        if column.staging is None:
            raise ValueError("a band is staged in its column's staging file: the column has none")
        self.path = column.staging
        part_of = np.empty(counts.shape[0], dtype=np.int32)
        sizes = np.empty(len(ranges), dtype=np.int64)
        for k, (lo, hi) in enumerate(ranges):
            part_of[lo:hi] = k
            sizes[k] = counts[lo:hi].sum()
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = int(self.starts[-1])
        self._left = len(ranges)
        self._lock = threading.Lock()
        written = self.starts[:-1].copy()
        keys = np.empty(BLOCK_ROWS, np.uint64)
        order = np.empty(BLOCK_ROWS, np.uint32)
        first = 0
        with writing(self.path), open(self.path, "wb") as fh:
            for block, block_rows in column.blocks(subset):
                bounds = _by_partition(block, block_rows, first, part_of, len(ranges), keys, order)
                for k in np.flatnonzero(np.diff(bounds)).tolist():
                    s, e = int(bounds[k]), int(bounds[k + 1])
                    pwrite_all(fh.fileno(), keys[s:e], 8 * int(written[k]))
                    pwrite_all(fh.fileno(), order[s:e], 8 * rows + 4 * int(written[k]))
                    written[k] += e - s
                first += int(bounds[-1])
        self._rows = rows
        if not ranges:  # no partition will take the file away
            self.path.unlink()

    def part(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Partition ``k``'s hashes and indices, in column order; the file goes with the last
        partition taken. O(its rows)."""
        start, count = int(self.starts[k]), int(self.starts[k + 1] - self.starts[k])
        with open(self.path, "rb") as fh:
            keys = np.fromfile(fh, np.uint64, count, offset=8 * start)
            fh.seek(0)
            order = np.fromfile(fh, np.uint32, count, offset=8 * self._rows + 4 * start)
        if keys.shape[0] != count or order.shape[0] != count:
            raise ValueError(f"{self.path} ends before the rows of partition {k}")
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self.path.unlink()
        return keys, order


class StagedPart:
    """Partition ``k`` of a :class:`StagedBand`, gathered by :func:`gathered` from the
    band's staging file instead of its column."""

    def __init__(self, band: StagedBand, k: int):
        self.band, self.k = band, k


def gathered(
    column: BandColumn | StagedPart,
    subset: RowSet | None,
    counts: np.ndarray,
    lo: int,
    hi: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted hashes, order)`` of the rows of prefixes ``lo..hi-1`` of ``column`` (those at
    the ``subset``, None: all): a stable sort, ``order`` (uint32) the rows' indices
    (positions in ``subset`` when given), ascending among equal hashes. One pass over the
    column, or a read of a staged partition's rows; memory 12 bytes a row of the partition,
    and 12 a row of its largest unit. O(rows of the column (or the partition) + 7 × rows of
    the partition)."""
    # Units: the prefixes that share their leading _UNIT_BITS bits, within the partition.
    unit = np.arange(lo, hi) >> (PREFIX_BITS - _UNIT_BITS)
    starts = np.flatnonzero(np.diff(unit, prepend=-1))
    bounds = np.zeros(starts.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.add.reduceat(counts[lo:hi], starts), out=bounds[1:])
    keys = np.empty(int(bounds[-1]), dtype=np.uint64)
    order = np.empty(int(bounds[-1]), dtype=np.uint32)
    at = bounds[:-1].copy()
    if isinstance(column, StagedPart):
        block, given = column.band.part(column.k)
        _gather(block, None, given, 0, lo, hi, at, keys, order)
        del block, given
    else:
        first = 0
        for block, rows in column.blocks(subset):
            _gather(block, rows, None, first, lo, hi, at, keys, order)
            first += block.shape[0] if rows is None else rows.shape[0]
    _sort_units(keys, order, bounds)
    return keys, order
