"""JSON Lines files read by byte ranges inside Spark tasks, without Spark's text source.

Spark's text source reads each line in the JVM, and numbering the lines as the local reader
does takes a job of its own and a join (:func:`neardup.engines.spark.read._positioned`); every
line then crosses from the JVM to a Python worker to be checked and signed. A JSON Lines file
on a local path (which every executor reads, as Spark's own ``file:`` reader needs) is read
here the local engine's way instead: cut into byte ranges of Spark's split size, each read in
one task straight from the file, in blocks of whole lines, into the Arrow arrays that the row
checks (:func:`~neardup.engines.spark.rows.rows_task`) take. The lines of each range are
counted first (by the driver's threads under a local master, else by one small job), so that
each task knows the position and line of its first line.

A line belongs to the range holding its first byte; lines end at ``\\n``, and a ``\\r`` before
it is part of the ending (Spark's text source also ends a line at a lone ``\\r``; the local
reader and this module do not).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.jsonl")
    >>> _ = open(path, "wb").write(b'{"a": 1}\\r\\n\\n{"a": 2}')
    >>> [line_start_at(path, p) for p in (0, 5, 10, 11, 12)], range_lines(path, 0, 19)
    ([0, 10, 10, 11, 19], 3)
    >>> [b.batch().column("value").to_pylist() for b in range_blocks(path, 0, 19, 0, 1, "d")]
    [['{"a": 1}', ''], ['{"a": 2}']]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

from neardup.engines.spark.partitions import default_parallelism
from neardup.engines.spark.session import DataFrame, SparkSession
from neardup.engines.spark.tasks import record_batch
from neardup.engines.spill import parse_size, read_spans
from neardup.io.jsonl_blocks import BLOCK_BYTES, line_blocks

__all__ = [
    "LineBlock",
    "fetched_texts_task",
    "line_start_at",
    "local_path",
    "missing_local_file",
    "range_blocks",
    "range_lines",
    "ranged_rows",
    "reads_by_ranges",
    "split_bytes",
]

OPEN_COST_BYTES = 4 << 20
"""The least bytes a range gets while the cores outnumber the ranges (Spark's
``spark.sql.files.openCostInBytes`` default)."""

_SCAN_BYTES = 1 << 16


def reads_by_ranges(path: str) -> bool:
    """Whether ``path`` names a plain local file (no scheme but ``file:``, no glob), which the
    tasks read by byte ranges. O(1): one ``stat``.

    Example:
        >>> reads_by_ranges("hdfs:///docs.jsonl"), reads_by_ranges("no/such/file.jsonl")
        (False, False)
    """
    local = _plain_local(path)
    return local is not None and os.path.isfile(local)


def missing_local_file(path: str) -> bool:
    """Whether ``path`` names a local path (no scheme but ``file:``, no glob) where nothing
    exists: an input Spark would only report after its session started, among pages of its
    own warnings. O(1): one ``stat``.

    Example:
        >>> missing_local_file("no/such/file.jsonl"), missing_local_file("hdfs:///d.jsonl")
        (True, False)
    """
    local = _plain_local(path)
    return local is not None and not os.path.exists(local)


def _plain_local(path: str) -> str | None:
    """The local path ``path`` names plainly (no scheme but ``file:``, no glob), else None."""
    local = local_path(path)
    return None if "://" in local or any(c in local for c in "*?[{") else local


def local_path(path: str) -> str:
    """``path`` without a ``file:`` or ``file://`` scheme. O(len(path)).

    Example:
        >>> local_path("file:///data/d.jsonl"), local_path("file:d.jsonl"), local_path("d.jsonl")
        ('/data/d.jsonl', 'd.jsonl', 'd.jsonl')
    """
    if path.startswith("file://"):
        return path.removeprefix("file://")
    return path.removeprefix("file:")


def split_bytes(total: int, cores: int, max_partition_bytes: int) -> int:
    """The bytes of one range, by Spark's rule for file splits: ``max_partition_bytes`` at
    most, ``total / cores`` while that is less, and at least :data:`OPEN_COST_BYTES`. O(1).

    Example:
        >>> split_bytes(1_800_000_000, 2, 128 << 20), split_bytes(10_000_000, 2, 128 << 20)
        (134217728, 5000000)
    """
    if total < 0 or cores < 1 or max_partition_bytes < 1:
        raise ValueError(
            f"need total >= 0, cores >= 1, max_partition_bytes >= 1; got {total}, {cores}, "
            f"{max_partition_bytes}"
        )
    return max(1, min(max_partition_bytes, max(OPEN_COST_BYTES, -(-total // cores))))


def line_start_at(path: str, offset: int) -> int:
    """The first line start at or after byte ``offset`` of the file ``path`` (its size when no
    line starts there): ``offset`` itself when it is 0 or follows a ``\\n``. O(bytes to the
    next line break).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "d.jsonl")
        >>> _ = open(path, "wb").write(b"ab\\ncd\\n")
        >>> [line_start_at(path, p) for p in range(7)]
        [0, 3, 3, 3, 6, 6, 6]
    """
    size = os.path.getsize(path)
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    with open(path, "rb") as fh:
        fh.seek(offset - 1)
        at = offset - 1
        while True:
            chunk = fh.read(_SCAN_BYTES)
            if not chunk:
                return size
            found = chunk.find(b"\n")
            if found >= 0:
                return at + found + 1
            at += len(chunk)


def _range_bytes(path: str, start: int, stop: int) -> Iterator[memoryview]:
    """Blocks of whole lines of bytes ``start..stop-1`` (both line starts or the file's size),
    each valid until the next is asked for (:func:`~neardup.io.jsonl_blocks.line_blocks`)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        yield from line_blocks(_Slice(fh, stop - start), BLOCK_BYTES)


class _Slice:
    """The next ``size`` bytes of a binary file, read by ``readinto``."""

    def __init__(self, fh, size: int):
        self.fh = fh
        self.left = size

    def readinto(self, view: memoryview) -> int:
        if self.left <= 0:
            return 0
        read = self.fh.readinto(view[: min(len(view), self.left)]) or 0
        self.left -= read
        return read


def range_lines(path: str, start: int, stop: int) -> int:
    """The number of lines in bytes ``start..stop-1`` of the file ``path`` (line starts, as
    :func:`line_start_at` gives them). O(stop - start) bytes read.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "d.jsonl")
        >>> _ = open(path, "wb").write(b"ab\\ncd\\ne")
        >>> range_lines(path, 0, 3), range_lines(path, 3, 8), range_lines(path, 0, 8)
        (1, 2, 3)
    """
    lines = 0
    for block in _range_bytes(path, start, stop):
        lines += int(np.count_nonzero(np.frombuffer(block, np.uint8) == 10)) + (block[-1] != 10)
    return lines


def _lines(block: np.ndarray, breaks: np.ndarray) -> pa.Array:
    """The lines of a block of whole lines (the last one maybe without its break; its ``\\n``
    at ``breaks``): an Arrow string array of them, each without its ``\\n`` or ``\\r\\n``, as
    Spark's text source gives them (invalid UTF-8 replaced by U+FFFD, as that source does).
    O(bytes)."""
    starts = np.concatenate(([0], breaks + 1))
    if starts[-1] == block.shape[0]:
        starts = starts[:-1]
    ends = np.append(breaks, block.shape[0])[: starts.shape[0]]
    broken = ends < block.shape[0]  # the last line may have no break, so no ending
    returns = broken & (ends > starts) & (block[np.maximum(ends - 1, 0)] == 13)
    kept = np.ones(block.shape[0], dtype=bool)
    kept[breaks] = False
    kept[ends[returns] - 1] = False
    ends = ends - returns
    data = block[kept]
    offsets = np.concatenate(([0], np.cumsum(ends - starts)))
    wide = data.shape[0] >= 1 << 31
    kind, offset_type = (pa.large_string(), np.int64) if wide else (pa.string(), np.int32)
    lines = pa.Array.from_buffers(
        kind,
        starts.shape[0],
        [None, pa.py_buffer(offsets.astype(offset_type)), pa.py_buffer(data)],
    )
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        raw = data.tobytes()
        lines = pa.array(
            [raw[a:b].decode("utf-8", "replace") for a, b in zip(offsets[:-1], offsets[1:])],
            kind,
        )
    return lines


@dataclass
class LineBlock:
    """Whole lines of JSON Lines as read from a file: the input of
    :func:`~neardup.engines.spark.rows.rows_task` of kind ``jsonl``, besides batches of lines.
    The task parses a block whose every line is plain straight from its bytes, as the local
    reader parses its blocks; the lines of any other (:meth:`batch`) are read one by one.
    Splitting the bytes into lines first, as Spark's text source gives them, and joining them
    back for the parser took a fifth of a reading task.

    Attributes:
        data: the lines' bytes (uint8), each with its break but maybe the last.
        pos: each line's position (int64).
        line: each line's number in its file (1-based; 0: not known).
        src: the file's name as given.
        loc: the byte of the file where ``data`` starts.

    Example:
        >>> block = LineBlock(np.frombuffer(b'{"a": 1}\\r\\n\\nx', np.uint8), np.arange(3),
        ...                   np.arange(1, 4), "d.jsonl", 100)
        >>> block.batch().column("value").to_pylist(), block.places()[0].tolist()
        (['{"a": 1}', '', 'x'], [100, 110, 111])
    """

    data: np.ndarray
    pos: np.ndarray
    line: np.ndarray
    src: str
    loc: int = 0
    breaks: np.ndarray = None  # type: ignore[assignment]
    """Where each ``\\n`` of ``data`` is (int64); found from ``data`` when not given."""

    def __post_init__(self) -> None:
        if self.breaks is None:
            self.breaks = np.flatnonzero(self.data == 10)

    def places(self) -> tuple[np.ndarray, np.ndarray]:
        """Each line's first byte in the file and its bytes with its break (int64). O(lines)."""
        starts = np.concatenate(([0], self.breaks + 1))
        if starts[-1] == self.data.shape[0]:
            starts = starts[:-1]
        return self.loc + starts, np.diff(np.append(starts, self.data.shape[0]))

    def batch(self) -> pa.RecordBatch:
        """The lines as a batch: ``_nd_pos``, ``_nd_line``, ``_nd_src`` and ``value`` (each line
        without its break, as Spark's text source gives it), and each line's place,
        ``_nd_loc`` and ``_nd_span`` (:meth:`places`), which the rows task leaves aside.
        O(bytes)."""
        lines = _lines(self.data, self.breaks)
        loc, span = self.places()
        return record_batch(
            {
                "_nd_pos": pa.array(self.pos, pa.int64()),
                "_nd_line": pa.array(self.line, pa.int64()),
                "_nd_src": pa.repeat(pa.scalar(self.src, pa.string()), len(lines)),
                "value": lines,
                "_nd_loc": pa.array(loc),
                "_nd_span": pa.array(span),
            }
        )


def range_blocks(
    path: str, start: int, stop: int, first_pos: int, first_line: int, src: str
) -> Iterator[LineBlock]:
    """The lines of bytes ``start..stop-1`` of ``path`` (line starts, as
    :func:`line_start_at` gives them) in blocks of
    :data:`~neardup.io.jsonl_blocks.BLOCK_BYTES`: positions from ``first_pos``, lines from
    ``first_line``, the file named ``src``. A block's bytes are valid until the next block
    is asked for. O(bytes)."""
    done, offset = 0, start
    for view in _range_bytes(path, start, stop):
        data = np.frombuffer(view, dtype=np.uint8)
        breaks = np.flatnonzero(data == 10)
        n = breaks.shape[0] + int(data[-1] != 10)
        at = np.arange(done, done + n, dtype=np.int64)
        yield LineBlock(data, first_pos + at, first_line + at, src, offset, breaks)
        done += n
        offset += len(view)


def _range_counts(path: str, cuts: list[int], k: int) -> tuple[int, int, int, int]:
    """Range ``k`` (bytes ``cuts[k]..cuts[k + 1]-1``): ``(k, first, end, lines)``, its bounds
    moved to line starts and its lines."""
    first, end = line_start_at(path, cuts[k]), line_start_at(path, cuts[k + 1])
    return k, first, end, range_lines(path, first, end)


def _counted(
    batches: Iterable[pa.RecordBatch], path: str, cuts: list[int]
) -> Iterator[pa.RecordBatch]:
    """Task: :func:`_range_counts` of each range number ``k`` in ``id``."""
    for batch in batches:
        rows = [_range_counts(path, cuts, k) for k in batch.column("id").to_pylist()]
        if rows:
            columns = zip(("k", "first", "end", "lines"), zip(*rows))
            yield record_batch({name: pa.array(values, pa.int64()) for name, values in columns})


def _counts_here(spark: SparkSession) -> bool:
    """Whether the driver counts the ranges' lines itself: a local master's tasks run on this
    machine, where a Spark job for the count cost a few seconds more than the count (its
    Python workers started for it; 5.5 s at 1M documents, 1.8 GB, for about 1 s of work)."""
    return spark.sparkContext.master.startswith("local")


def _ranged_task(
    batches: Iterable[pa.RecordBatch],
    path: str,
    ranges: list[tuple[int, int, int]],
    src: str,
    first_pos: int,
    task: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    placed: bool,
) -> Iterator[pa.RecordBatch]:
    """Task: the rows ``task`` makes of the lines of each range numbered in ``id``; ``placed``:
    each row with its line's place (``loc, span``) and an empty text instead of its text."""
    for batch in batches:
        for k in batch.column("id").to_pylist():
            start, stop, before = ranges[k]
            for block in range_blocks(path, start, stop, first_pos + before, before + 1, src):
                # The rows task checks each block on its own: its rows are those lines'.
                for rows in task([block]):
                    yield _placed(rows, block) if placed else rows


def _placed(rows: pa.RecordBatch, block: LineBlock) -> pa.RecordBatch:
    """``rows`` (made from ``block`` by the rows task) with an empty text and their lines'
    ``loc`` and ``span`` instead."""
    at = rows.column("pos").to_numpy() - block.pos[0]
    loc, span = block.places()
    columns = dict(zip(rows.schema.names, rows.columns))
    columns["text"] = pa.repeat(pa.scalar("", pa.string()), rows.num_rows)
    columns["loc"] = pa.array(loc[at])
    columns["span"] = pa.array(span[at])
    return record_batch(columns)


def fetched_texts_task(
    batches: Iterable[pa.RecordBatch],
    paths: Sequence[str],
    pos_bits: int,
    task: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
) -> Iterator[pa.RecordBatch]:
    """Task: rows ``(pos, loc, span)`` of documents read by :func:`ranged_rows` with their
    places -> ``(pos, text)``: each line read again from its file (``paths[pos >> pos_bits]``)
    at its place and made a row by ``task``, the rows task that read it first, so the text is
    the one read then. O(bytes of the lines), read by one compiled ``pread`` a run of adjacent
    lines (:func:`~neardup.engines.spill.read_spans`).

    Example:
        >>> import tempfile, os
        >>> from functools import partial
        >>> from neardup.engines.spark.rows import rows_task
        >>> path = os.path.join(tempfile.mkdtemp(), "d.jsonl")
        >>> _ = open(path, "wb").write(b'{"id": "a", "text": "x"}\\n{"id": "b", "text": "y z"}')
        >>> rows = pa.record_batch({"pos": [1, 0], "loc": [25, 0], "span": [26, 25]})
        >>> reread = partial(rows_task, kind="jsonl", names=("id", "text", None))
        >>> next(fetched_texts_task([rows], [path], 44, reread))["text"].to_pylist()
        ['x', 'y z']
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        order = np.argsort(batch.column("pos").to_numpy(), kind="stable")
        pos = batch.column("pos").to_numpy()[order]
        loc = batch.column("loc").to_numpy()[order]
        span = batch.column("span").to_numpy()[order]
        pieces = []
        inputs = pos >> pos_bits
        cuts = np.flatnonzero(np.diff(inputs)) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)), np.append(cuts, len(pos))):
            # One input's lines in file order, read by the spill files' compiled reads.
            at = np.concatenate(([0], np.cumsum(span[lo:hi])))
            block = np.empty(int(at[-1]) + 1, dtype=np.uint8)
            path = Path(local_path(paths[int(inputs[lo])]))
            read_spans(path, block, at, loc[lo:hi], span[lo:hi])
            # Only a file's last line may have no break: it gets one, as the lines are split
            # at breaks.
            ended = block[-2] == 10
            block[-1] = 10
            pieces.append(block[:-1] if ended else block)
        # Line 1 where a line starts its file: the rows task drops a BOM there.
        block = LineBlock(np.concatenate(pieces), pos, np.where(loc == 0, 1, 0), "")
        for checked in task([block]):
            yield record_batch({"pos": checked.column("pos"), "text": checked.column("text")})


def ranged_rows(
    spark: SparkSession,
    path: str,
    first_pos: int,
    task: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    schema: str,
    placed: bool = False,
) -> DataFrame:
    """The rows ``task`` (a :func:`~neardup.engines.spark.rows.rows_task` of kind ``jsonl``
    or of a fingerprint kind of lines, or :func:`~neardup.engines.spark.rows.signed_rows_task`)
    makes of the local file of lines ``path`` (:func:`reads_by_ranges`), as Spark rows of
    ``schema``: line ``i`` (0-based) at position ``first_pos + i``, its file named ``path`` as
    given. ``placed``: each row has an empty text and its line's place instead, ``loc`` and
    ``span`` (``schema`` ends with ``loc long, span long``), which :func:`fetched_texts_task`
    reads the text back from, so the texts are not stored in Spark (the task signs them as it
    reads them). One task a range of :func:`split_bytes`; each range's lines counted first, by
    the driver's threads under a local master (:func:`_counts_here`), else by one small job.
    Cost: the file read twice (the count, then the rows), O(bytes) each, spread over the
    cores.

    Example (needs a Spark session, so not run as a doctest)::

        checked = ranged_rows(spark, "docs.jsonl", 0, partial(rows_task, kind="jsonl",
                              names=("id", "text", None)), CHECKED_SCHEMA)
    """
    local = os.path.abspath(local_path(path))  # an executor's working folder is another
    schema += ", loc long, span long" if placed else ""
    size = os.path.getsize(local)
    conf = spark.conf.get("spark.sql.files.maxPartitionBytes", "128m")
    split = split_bytes(size, default_parallelism(spark), parse_size(conf, "split"))
    cuts = list(range(0, size, split)) + [size]
    count = len(cuts) - 1
    if count == 0:
        return spark.createDataFrame([], schema)
    numbers = spark.range(0, count, 1, count)
    if _counts_here(spark):  # on the machine's cores, each range read once
        with ThreadPoolExecutor(min(count, os.cpu_count() or 1)) as pool:
            counted = list(pool.map(partial(_range_counts, local, cuts), range(count)))
    else:  # in the executors, which read the file where they run
        counted = numbers.mapInArrow(
            partial(_counted, path=local, cuts=cuts), "k long, first long, end long, lines long"
        ).collect()
    ranges, before = [], 0
    for _, first, end, lines in sorted(counted):
        ranges.append((int(first), int(end), before))
        before += int(lines)
    return numbers.mapInArrow(
        partial(
            _ranged_task,
            path=local,
            ranges=ranges,
            src=path,
            first_pos=first_pos,
            task=task,
            placed=placed,
        ),
        schema,
    )
