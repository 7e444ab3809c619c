"""The repair round's buckets, the band search's pairs and the bounds' blocks past a bound, on disk.

The MinHash band search of an out-of-core run keeps two things that grow faster than the
documents: the distinct candidate pairs (:mod:`neardup.engines.pair_runs`) and, for the repair
round, the members of every band's buckets of 3 to 17 documents
(:mod:`neardup.candidates.bucket_lists`: about 350M members, 1.8 GB, at 50M short documents).
:class:`SpilledBuckets` holds the buckets in memory up to ``limit`` bytes, as
:class:`~neardup.candidates.bucket_lists.BucketParts` does, and past it appends them, band by
band, to two files of the work folder (the members, uint32, and each bucket's count, int32),
read back in order as slices of buckets. :class:`SpilledBlockParts` does the same for the
candidates the lengths leave, held apart by block of sketches until bounded
(:func:`neardup.candidates.chunks.bounded_pairs`: 138M pairs at 50M short documents).
:class:`SpillStores` makes a run's stores of these kinds under one bound and sums what they
wrote.

Example:
    >>> import tempfile
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
    ...     parts = SpilledBuckets(work, limit=8)
    ...     parts.append((np.array([4, 5, 6], np.uint32), np.array([3], np.int32), 0))
    ...     parts.append((np.array([7, 8], np.uint32), np.array([2], np.int32), 10))
    ...     [(o.tolist(), m.tolist()) for o, m in parts.slices(16, 3)], parts.others
    ([([0, 3], [4, 5, 6]), ([0, 2], [7, 8])], 10)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from neardup.candidates.bucket_lists import BucketParts, csr_slices
from neardup.candidates.chunks import BlockParts
from neardup.engines.pair_runs import PairRuns
from neardup.engines.spill import WorkDir, write_array
from neardup.io.write import writing


class SpilledBuckets(BucketParts):
    """:class:`~neardup.candidates.bucket_lists.BucketParts` held in memory up to ``limit``
    bytes, then appended to ``work``'s files ``{name}-members.bin`` and ``{name}-counts.bin``
    (module docstring). Memory: at most ``limit`` bytes and a band's part held; while read,
    one slice. Disk: 4 bytes a member and 4 a bucket."""

    def __init__(self, work: WorkDir, limit: int, name: str = "repair-buckets"):
        super().__init__()
        self.limit = int(limit)
        self.members_path = work.file(f"{name}-members.bin")
        self.counts_path = work.file(f"{name}-counts.bin")
        self.held = 0  # bytes of the parts in memory
        #: Members and buckets written to the files (0: every part stayed in memory).
        self.spilled_members = 0
        self.spilled_buckets = 0

    @property
    def disk_bytes(self) -> int:
        """Bytes written to the work folder."""
        return 4 * (self.spilled_members + self.spilled_buckets)

    def _keep(self, members: np.ndarray, counts: np.ndarray) -> None:
        super()._keep(members, counts)
        self.held += members.nbytes + counts.nbytes
        if self.held > self.limit:
            self._spill()

    def _spill(self) -> None:
        """Append the parts held to the files, in order, and let go of them."""
        for path, column in ((self.members_path, 0), (self.counts_path, 1)):
            with writing(path), open(path, "ab") as fh:
                for part in self.parts:
                    write_array(fh, np.ascontiguousarray(part[column]))
        self.spilled_members += sum(int(members.shape[0]) for members, _ in self.parts)
        self.spilled_buckets += sum(int(counts.shape[0]) for _, counts in self.parts)
        self.parts.clear()
        self.held = 0

    def slices(self, most: int, most_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The buckets on disk, read in order a slice at a time, then those held."""
        if self.spilled_buckets:
            yield from csr_slices(
                lambda s, e: _read(self.counts_path, np.int32, s, e),
                lambda s, e: _read(self.members_path, np.uint32, s, e),
                self.spilled_buckets,
                most,
                most_pairs,
            )
        yield from super().slices(most, most_pairs)


def _read(path: Path, dtype: type, start: int, stop: int) -> np.ndarray:
    """Values ``start..stop-1`` of a file of ``dtype`` values (a positional read, no map)."""
    count = stop - start
    values = np.fromfile(path, dtype=dtype, count=count, offset=start * np.dtype(dtype).itemsize)
    if values.shape[0] != count:
        raise ValueError(f"{path} ends before value {stop}")
    return values


class SpilledBlockParts(BlockParts):
    """:class:`~neardup.candidates.chunks.BlockParts` held in memory up to ``limit`` bytes;
    past it every part held is appended to its block's file in ``work``
    (``{name}-{block}.bin``: records of the two ends and the place), and a block's file is
    read back a piece at a time and deleted when the block is taken. Memory: at most ``limit``
    bytes and one piece of a block's pairs while taken. Disk: 12 bytes a pair of 4-byte ends
    and places."""

    def __init__(self, work: WorkDir, blocks: int, limit: int, name: str = "bounds"):
        super().__init__(blocks)
        self.work, self.limit, self.name = work, int(limit), name
        self.held = 0
        self.record: np.dtype | None = None  # of the first pairs added: their columns' dtypes
        self.written = np.zeros(blocks, dtype=np.int64)  # each block's pairs in its file
        self.disk_bytes = 0

    def _keep(self, block: int, a: np.ndarray, b: np.ndarray, at: np.ndarray) -> None:
        super()._keep(block, a, b, at)
        self.held += a.nbytes + b.nbytes + at.nbytes
        if self.held > self.limit:
            self._spill()

    def _path(self, block: int) -> Path:
        return self.work.file(f"{self.name}-{block}.bin")

    def _spill(self) -> None:
        """Append each block's parts held to its file, in order, and let go of them."""
        for block in range(len(self.parts)):
            self._write(block)

    def _write(self, block: int) -> None:
        """Append the parts of ``block`` held to its file, in order, a part at a time (not
        joined first: the first block, of the stars' centres, holds most of what is held, and
        its join and records were two more copies of it at the candidates' peak), and let go
        of them."""
        parts = self.parts[block]
        if not parts:
            return
        path = self._path(block)
        with writing(path), open(path, "ab") as fh:
            while parts:
                a, b, at = parts.pop(0)
                if self.record is None:
                    self.record = np.dtype([("a", a.dtype), ("b", b.dtype), ("at", at.dtype)])
                rows = np.empty(a.shape[0], dtype=self.record)
                rows["a"], rows["b"], rows["at"] = a, b, at
                write_array(fh, rows)
                self.held -= a.nbytes + b.nbytes + at.nbytes
                self.disk_bytes += rows.nbytes
                self.written[block] += rows.shape[0]
                del a, b, at, rows

    def pieces(self, block: int, size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        if not self.written[block]:
            self.held -= sum(column.nbytes for part in self.parts[block] for column in part)
            yield from super().pieces(block, size)
            return
        # The parts held follow those written, in the file: each piece's columns are then read
        # into arrays of their own, not through the file's records whole (a block of star
        # candidates, whose smaller ends are the buckets' first documents, held 56M pairs at
        # 100M documents: 0.67 GB of records, and as much again in columns).
        self._write(block)
        path, rows = self._path(block), int(self.written[block])
        self.written[block] = 0
        try:
            with open(path, "rb") as fh:
                for start in range(0, rows, size):
                    yield _read_columns(fh, path, self.record, start, min(size, rows - start))
        finally:
            path.unlink()


#: Records of a block's file read at a time into its columns (16 MB of 16-byte records).
TAKE_RECORDS = 1 << 20


def _read_columns(
    fh: BinaryIO, path: Path, record: np.dtype, first: int, rows: int
) -> tuple[np.ndarray, ...]:
    """The columns of the next ``rows`` rows of ``record`` of the open file ``fh`` (of
    ``path``; row ``first`` next), read :data:`TAKE_RECORDS` rows at a time: only the columns
    are held whole. O(rows)."""
    columns = tuple(np.empty(rows, dtype=record[name]) for name in record.names)
    for start in range(0, rows, TAKE_RECORDS):
        count = min(TAKE_RECORDS, rows - start)
        part = np.fromfile(fh, dtype=record, count=count)
        if part.shape[0] != count:
            raise ValueError(f"{path} ends before row {first + start + count}")
        for column, name in zip(columns, record.names):
            column[start : start + count] = part[name]
    return columns


class SpillStores:
    """A run's stores of the band search: the unions of its pairs (:class:`PairRuns`) and the
    repair round's buckets (:class:`SpilledBuckets`), each held in memory up to ``limit``
    bytes, then on disk in ``work``; :meth:`figures` sums what they wrote."""

    def __init__(self, work: WorkDir, limit: int):
        self.work = work
        self.limit = int(limit)
        self.stores: list[PairRuns | SpilledBuckets | SpilledBlockParts] = []

    def pair_union(self) -> PairRuns:
        """A new union of packed pairs (``candidates-{k}`` in the work folder)."""
        union = PairRuns(self.work, self.limit, f"candidates-{len(self.stores)}")
        self.stores.append(union)
        return union

    def bucket_parts(self) -> SpilledBuckets:
        """A new store of buckets (``repair-buckets-{k}`` in the work folder)."""
        parts = SpilledBuckets(self.work, self.limit, f"repair-buckets-{len(self.stores)}")
        self.stores.append(parts)
        return parts

    def block_parts(self, blocks: int) -> SpilledBlockParts:
        """A new store of pairs by block (``bounds-{k}-{block}.bin`` in the work folder)."""
        parts = SpilledBlockParts(self.work, blocks, self.limit, f"bounds-{len(self.stores)}")
        self.stores.append(parts)
        return parts

    def figures(self) -> tuple[int, int]:
        """``(runs of pairs written, bytes written)`` by the stores made since the last call,
        which are then let go."""
        runs = sum(s.spilled_runs for s in self.stores if isinstance(s, PairRuns))
        written = sum(s.disk_bytes for s in self.stores)
        self.stores.clear()
        return runs, written
