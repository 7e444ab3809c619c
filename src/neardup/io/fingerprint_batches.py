"""Fingerprint rows as a stream of batches: :func:`read_fingerprints`' rows, checks and errors,
for runs whose memory must not grow with the rows (``neardup pairs`` out of core).

One uncompressed file of the seed's plain rows is parsed in bulk, a block of about 32 MB on
each core at a time (the blocks of :func:`read_fingerprints`' bulk reader, a few ahead of the
one handed on instead of the whole file), each block handed on as a batch. Its IDs are checked
for repeats without a table while they ascend (as the rows of a map-reduce part sorted by key
do). Where :func:`read_fingerprints` would read the file row by row instead (a row that is not
plainly valid, a repeated ID), or would check the IDs in a table (IDs out of order), it has
read the whole file first; a stream has handed on batches by then, so it starts over: it
calls its ``on_restart`` (the reader of the batches drops what it kept of them), then reads
again from the first row, row by row (:func:`~neardup.io.fingerprints.row_batches`), or in
bulk with every ID in an :class:`~neardup.io.id_table.IdTable` (32 to 64 bytes an ID). Any other
input is read row by row at once.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "part-00000"
    >>> _ = p.write_text("a\\t00000000000000ff\\t1700000000\\nb\\t0000000000000001\\t\\n")
    >>> batches = FingerprintBatches([p])
    >>> [(t.ids.to_pylist(), t.fingerprints.tolist()) for t in batches]
    [(['a', 'b'], [255, 1])]
    >>> batches.stats.documents
    2
"""

from __future__ import annotations

import os
import queue
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

import neardup.io.fingerprints as io_fingerprints
from neardup.io.files import Source
from neardup.io.fingerprints import (
    FingerprintTable,
    _block_spans,
    _read_seed_block,
    _SeedColumns,
    fingerprint_sources,
    row_batches,
    seed_source,
)
from neardup.io.id_table import IdTable
from neardup.io.rows import ReadStats, RowChecks
from neardup.io.seed_rows import SeedBlock
from neardup.io.values import check_fingerprint_format, stamp_texts

__all__ = ["BATCH_ROWS", "FingerprintBatches"]

#: Rows of a batch read row by row (a bulk batch is one block of the file).
BATCH_ROWS = 1 << 18

#: Blocks a core parsed or being parsed ahead of the batch handed on.
_AHEAD = 2


class _StartOver(Exception):
    """The bulk stream stops: ``with_table`` to read in bulk again with a table of the IDs,
    else row by row."""

    def __init__(self, with_table: bool = False):
        super().__init__()
        self.with_table = with_table


class FingerprintBatches:
    """The rows of :func:`~neardup.io.read_fingerprints` over ``paths``, as an iterable of
    :class:`~neardup.io.fingerprints.FingerprintTable` batches in input order (see the module
    docstring), each its own copy: nothing of a batch stays once it is dropped.

    Args:
        paths, on_error, fingerprint_format: as :func:`~neardup.io.read_fingerprints` takes them.
        batch_rows: rows of a batch read row by row.

    Attributes:
        on_restart: called when the stream starts over from the first row (module docstring):
            every batch handed on before is void.
        stats: the read's counters, final once the iteration ends.

    Memory: about 100 MB a core for the bulk blocks, or ``batch_rows`` rows of Python values;
    plus the table of IDs where one is needed. O(rows).
    """

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        on_error: str = "raise",
        fingerprint_format: str = "auto",
        batch_rows: int = BATCH_ROWS,
    ):
        check_fingerprint_format(fingerprint_format)
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1; got {batch_rows}")
        self.sources = fingerprint_sources(paths)
        self.on_error = on_error
        self.fingerprint_format = fingerprint_format
        self.batch_rows = int(batch_rows)
        self.on_restart: Callable[[], None] | None = None
        self.stats = ReadStats()

    def __iter__(self) -> Iterator[FingerprintTable]:
        seed = self._bulk_source()
        with_table = False
        while seed is not None:
            rows = RowChecks(self.on_error)
            try:
                for batch in _seed_batches(seed, rows, with_table):
                    self.stats = rows.stats
                    yield batch
                return
            except _StartOver as stop:
                self._start_over()
                seed = seed if stop.with_table and not with_table else None
                with_table = True
        for batch in row_batches(
            self.sources, self.on_error, self.fingerprint_format, self.batch_rows
        ):
            self.stats = batch.stats
            yield batch

    def buffer_bytes(self) -> int:
        """Bytes the stream's own buffers may hold while it reads, whatever the rows: about
        three blocks a core in bulk (the bytes read, the columns parsed and the batches
        copied ahead), or a batch of rows read one by one (about 200 B a row in Python values).
        O(1).

        Example:
            >>> FingerprintBatches(["-"], batch_rows=1000).buffer_bytes()
            200000
        """
        if self._bulk_source() is None:
            return 200 * self.batch_rows
        return 3 * io_fingerprints._BLOCK_BYTES * (os.cpu_count() or 1)

    def _bulk_source(self) -> Source | None:
        """The file the bulk reader tries: one uncompressed file of tab-separated rows (stdin
        and compressed files are read once, as they come: row by row)."""
        seed = seed_source(self.sources, self.fingerprint_format)
        if seed is None or seed.path == "-" or seed.compression is not None:
            return None
        return seed

    def _start_over(self) -> None:
        self.stats = ReadStats()
        if self.on_restart is not None:
            self.on_restart()


def _seed_batches(src: Source, rows: RowChecks, with_table: bool) -> Iterator[FingerprintTable]:
    """The blocks of the seed rows of the uncompressed file ``src`` parsed in bulk, each a
    batch; :class:`_StartOver` where :func:`read_fingerprints`' bulk reader would not take the
    file. ``with_table``: check the IDs in a table, not by their order.

    Each core reads and parses a block into its own columns, reused from block to block, and
    copies the rows out as the block's batch (:func:`_parsed`); :data:`_AHEAD` blocks a core
    are under way while the batches before them are handed on, so that no core waits for the
    reader of the batches, nor for the slower block of a wave."""
    with open(src.path, "rb") as fh:
        fd = fh.fileno()
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 3, 0) == b"\xef\xbb\xbf":
            raise _StartOver
        spans = _block_spans(fd, size)
        workers = min(len(spans), os.cpu_count() or 1)
        longest = max(e - s for s, e in spans)
        spare: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(workers):
            spare.put((np.empty(longest, dtype=np.uint8), _SeedColumns([(0, longest)])))

        def read(span: tuple[int, int]) -> _Parsed:
            buf, out = spare.get()
            try:
                out.base = span[0]  # the block's bytes and rows at the start of the columns
                return _parsed(_read_seed_block(fd, 0, span, buf, out), out, rows)
            finally:
                spare.put((buf, out))

        seen = IdTable() if with_table else None
        last: bytes | None = None
        rows.start_file(src.display)
        with ThreadPoolExecutor(workers) as pool:
            pending = deque(pool.submit(read, span) for span in spans[: _AHEAD * workers])
            try:
                for k in range(len(spans)):
                    block = pending.popleft().result()
                    if k + len(pending) + 1 < len(spans):
                        pending.append(pool.submit(read, spans[k + len(pending) + 1]))
                    if not block.ok:
                        raise _StartOver
                    if block.batch is None:
                        continue
                    if seen is None:
                        if not block.ascending or (last is not None and block.first <= last):
                            raise _StartOver(with_table=True)
                        last = block.last
                    elif not _all_new(seen, block.batch.ids.chunk(0)):
                        raise _StartOver
                    rows.stats.documents += len(block.batch)
                    yield block.batch
            finally:
                for future in pending:
                    future.cancel()  # a start over or a reader that stopped: parse no more
    if rows.stats.documents == 0:
        raise _StartOver


def _all_new(seen: IdTable, ids: pa.LargeStringArray) -> bool:
    """Add ``ids`` to ``seen``; whether none was there before (nor twice among them)."""
    data = np.frombuffer(ids.buffers()[2], dtype=np.uint8)
    offsets = np.frombuffer(ids.buffers()[1], dtype=np.int64)[
        ids.offset : ids.offset + len(ids) + 1
    ]
    before = seen.size
    return seen.size_after(data, offsets) == before + len(ids)


@dataclass
class _Parsed:
    """A block as :func:`_parsed` hands it on: ``ok`` False if the bulk reader does not take
    it; its batch (None: no rows), whether its IDs ascend, and its first and last ID."""

    ok: bool
    batch: FingerprintTable | None = None
    ascending: bool = False
    first: bytes = b""
    last: bytes = b""


def _parsed(block: SeedBlock, out: _SeedColumns, rows: RowChecks) -> _Parsed:
    """``block`` (parsed at the start of ``out``) as a batch of its own arrays: ``out`` is
    the next block's."""
    if not block.ok or block.rows == 0:
        return _Parsed(block.ok)
    n = block.rows
    buffers = block.ids.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[: n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8)[: int(offsets[-1])]
    # 64-bit offsets, made by the copy that the batch needs anyway, on this worker: the IDs
    # as the reader of the batches keeps them (its column of every ID outgrows 32-bit
    # offsets), not cast batch by batch on its one thread (0.22 processor-s at 10M rows).
    ids = pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(data.copy())
    )
    micros, forms = out.micros[:n].copy(), out.forms[:n].copy()
    batch = FingerprintTable(
        ids=pa.chunked_array([ids]),
        fingerprints=out.fps[:n].copy(),
        timestamps=micros,
        raw_timestamps=lambda: pa.chunked_array([stamp_texts(micros, forms)]),
        stats=rows.stats,
    )
    first, last = (ids[i].as_buffer().to_pybytes() for i in (0, n - 1))
    return _Parsed(True, batch, block.ascending, first, last)
