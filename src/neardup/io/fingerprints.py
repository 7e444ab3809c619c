"""Fingerprint tables: ``id <TAB> fingerprint [<TAB> timestamp]`` rows, or tables with those columns.

:func:`read_fingerprints` reads the seed map-reduce's rows and the tables
:func:`~neardup.io.write_table` writes into a :class:`FingerprintTable`, checked by the rules
of :class:`~neardup.io.rows.RowChecks`. One uncompressed file of the seed's plain rows is parsed
in bulk, in blocks on all cores, by one compiled pass a block (:func:`_seed_rows_in_bulk`);
anything else, or any row that is not plainly valid, goes row by row.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "part-00000"
    >>> _ = p.write_text("a\\t00000000000000ff\\t1700000000\\n")
    >>> t = read_fingerprints([p])
    >>> t.ids.to_pylist(), t.fingerprints.tolist(), t.timestamps.tolist()
    (['a'], [255], [1700000000000000])
"""

from __future__ import annotations

import os
import queue
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.ids import plain_id
from neardup.io.files import (
    FORMAT_OF_EXTENSION,
    STDIN_NAME,
    Source,
    input_not_found,
    input_paths,
    open_input,
    refuse_compressed_parquet,
    split_name,
)
from neardup.io.id_table import IdTable
from neardup.io.rows import (
    BadRow,
    ReadStats,
    RowChecks,
    missing_column,
    valid_fingerprint,
    valid_fingerprint_time,
    valid_id,
)
from neardup.io.seed_rows import SeedBlock, parsed_seed_block
from neardup.io.sources import (
    decoded_line,
    delimited_rows,
    iter_lines,
    json_object_line,
    open_parquet,
)
from neardup.io.values import (
    check_fingerprint_format,
    stamp_texts,
    tsv_unescape,
)


class FingerprintTable:
    """Fingerprint rows read by :func:`read_fingerprints`.

    Attributes:
        ids: document IDs (an Arrow string or large string column: no Python object per row).
        fingerprints: uint64 fingerprints.
        timestamps: int64 ordering key in microseconds since the epoch (0 where absent).
        raw_timestamps: the timestamp values as given, as text (null where absent). Given as
            a function, it is called on first use (the bulk reader writes the text back from
            the microseconds and each value's form, which most runs never need).
        stats: counters of the read (``bytes`` is 0).
    """

    def __init__(
        self,
        ids: pa.ChunkedArray,
        fingerprints: np.ndarray,
        timestamps: np.ndarray,
        raw_timestamps: pa.ChunkedArray | Callable[[], pa.ChunkedArray],
        stats: ReadStats,
    ) -> None:
        self.ids = ids
        self.fingerprints = fingerprints
        self.timestamps = timestamps
        self._raw = raw_timestamps
        self.stats = stats

    @property
    def raw_timestamps(self) -> pa.ChunkedArray:
        """The timestamp values as given (see the class)."""
        if callable(self._raw):
            self._raw = self._raw()
        return self._raw

    def __len__(self) -> int:
        return len(self.ids)


class _FingerprintCollector:
    """The rows of a read of fingerprints, checked one by one and handed on in batches of
    ``batch_rows`` (None: one batch, at the end) as :class:`FingerprintTable` parts: each
    ``read_*`` method yields the batches that fill up while it reads, :meth:`flush` the rest.

    Repeated IDs are found a batch at a time against every earlier row (an
    :class:`~neardup.io.id_table.IdTable`, 32 to 64 bytes an ID) and reported in input order: before
    any later row's error (``RowChecks.before_raise``), and dropped at the flush with
    ``on_error="skip"``."""

    def __init__(self, on_error: str, fingerprint_format: str, batch_rows: int | None = None):
        self.rows = RowChecks(on_error)
        self.rows.before_raise = self._check_ids
        self.fingerprint_format = fingerprint_format
        self.batch_rows = batch_rows or sys.maxsize
        self._seen = IdTable()
        self._reset()

    def _reset(self) -> None:
        self.ids: list[str] = []
        self.fps: list[int] = []
        self.times: list[int] = []
        self.raw: list[Any] = []
        self._keys: list[int] = []  # each row's key (RowChecks.row_key), for the ID check
        self._checked = 0  # rows whose ID is checked
        self._dropped: list[int] = []  # rows of repeated IDs (on_error="skip")

    def add(self, path: str, line: int, ident: Any, fp_value: Any, time_value: Any) -> None:
        rows = self.rows
        # Fast paths first: this runs once per row.
        if not plain_id(ident):
            ident = rows.checked(valid_id(ident, "id"), path, line)
            if ident is None:
                return
        fp = rows.checked(valid_fingerprint(fp_value, self.fingerprint_format), path, line)
        if fp is None:
            return
        if time_value is None:
            us = 0
        elif type(time_value) is str and len(time_value) <= 12 and time_value.isdigit():
            us = int(time_value) * 1_000_000  # seconds: cannot overflow int64 at this length
        else:
            us = valid_fingerprint_time(time_value)
            if type(us) is BadRow:
                rows.bad(path, line, *us)
                return
            if us is None:
                us, time_value = 0, None  # a blank time is an absent one
        self.ids.append(ident)
        self.fps.append(fp)
        self.times.append(us)
        self.raw.append(time_value)
        self._keys.append(rows.row_key(line))

    def _check_ids(self) -> None:
        """Report the repeated IDs among the rows added since the last check, in order."""
        start, self._checked = self._checked, len(self.ids)
        if start < self._checked:
            repeated = self.rows.repeated_ids(
                self._seen, self.ids[start:], self._keys[start:], "id"
            )
            self._dropped.extend(start + i for i in repeated)

    def full(self) -> bool:
        """Whether a batch's rows are waiting."""
        return len(self.ids) >= self.batch_rows

    def flush(self) -> FingerprintTable:
        """The rows added since the last flush, checked, as a table. O(rows)."""
        self._check_ids()
        keep = np.ones(len(self.ids), dtype=bool)
        keep[self._dropped] = False
        whole = bool(keep.all())
        kept = keep.tolist()
        ids = self.ids if whole else [v for v, k in zip(self.ids, kept) if k]
        raw = self.raw if whole else [v for v, k in zip(self.raw, kept) if k]

        def raw_timestamps() -> pa.ChunkedArray:  # as text only for the callers that ask
            return pa.chunked_array(
                [pa.array([None if v is None else str(v) for v in raw], type=pa.string())]
            )

        table = FingerprintTable(
            ids=pa.chunked_array([pa.array(ids, type=pa.string())]),
            fingerprints=np.array(self.fps, dtype=np.uint64)[keep],
            timestamps=np.array(self.times, dtype=np.int64)[keep],
            raw_timestamps=raw_timestamps,
            stats=self.rows.stats,
        )
        self.rows.stats.documents += len(ids)
        self._reset()
        return table

    def read_plain(self, src: Source, escaped: bool) -> Iterator[FingerprintTable]:
        path = src.display
        rows = self.rows
        rows.start_file(path)
        with open_input(src) as fh:
            for n, raw in iter_lines(fh, path):
                s = decoded_line(raw, n, rows, path)
                if s is None:
                    continue
                fields = rows.checked(fingerprint_line(s, escaped), path, n)
                if fields is not None:
                    self.add(path, n, *fields)
                    if self.full():
                        yield self.flush()

    def read_jsonl(self, src: Source) -> Iterator[FingerprintTable]:
        path = src.display
        rows = self.rows
        rows.start_file(path)
        with open_input(src) as fh:
            for n, raw in iter_lines(fh, path):
                if raw.isspace() or not raw:
                    continue
                s = decoded_line(raw, n, rows, path)
                if s is None:
                    continue
                obj = rows.checked(json_object_line(s, n), path, n)
                if obj is not None:
                    self.add(path, n, obj.get("id"), obj.get("fingerprint"), obj.get("timestamp"))
                    if self.full():
                        yield self.flush()

    def read_csv(self, src: Source) -> Iterator[FingerprintTable]:
        path = src.display
        self.rows.start_file(path)
        lines = delimited_rows(src, self.rows)
        header = next(lines, (1, None))[1]
        if header is None:
            return
        for name in ("id", "fingerprint"):
            if name not in header:
                raise missing_column(path, name, header, "line")
        i_id, i_fp = header.index("id"), header.index("fingerprint")
        i_time = header.index("timestamp") if "timestamp" in header else None
        for start, row in lines:
            self.add(path, start, row[i_id], row[i_fp], row[i_time] if i_time is not None else None)
            if self.full():
                yield self.flush()

    def read_parquet(self, src: Source) -> Iterator[FingerprintTable]:
        path = src.display
        with open_parquet(src) as pf:
            self.rows.start_file(path, unit="row")
            names = pf.schema_arrow.names
            for name in ("id", "fingerprint"):
                if name not in names:
                    raise missing_column(path, name, names, "row")
            has_time = "timestamp" in names
            columns = ["id", "fingerprint"] + (["timestamp"] if has_time else [])
            row = 0
            for rb in pf.iter_batches(batch_size=65_536, columns=columns):
                ids = rb.column("id").to_pylist()
                fps = rb.column("fingerprint").to_pylist()
                times = rb.column("timestamp").to_pylist() if has_time else [None] * rb.num_rows
                for k in range(rb.num_rows):
                    row += 1
                    self.add(path, row, ids[k], fps[k], times[k])
                    if self.full():
                        yield self.flush()


def fingerprint_line(s: str, escaped: bool) -> tuple[str, str, str | None] | BadRow | None:
    """``(id, fingerprint, timestamp or None)`` of one line of tab-separated fingerprint rows
    (decoded, its BOM removed), None for a blank line or a header (a second field
    ``fingerprint``), or the :class:`~neardup.io.rows.BadRow` of a line without 2 or 3 fields.
    With ``escaped`` (``.tsv`` files) the ID is :func:`tsv_unescape`-d. O(len(s)).

    Example:
        >>> fingerprint_line("a\\\\tb\\t00000000000000ff\\n", True)
        ('a\\tb', '00000000000000ff', None)
        >>> fingerprint_line("id\\tfingerprint", False) is None, fingerprint_line("a", False).reason
        (True, 'malformed row')
    """
    s = s.rstrip("\r\n")
    if not s or s.isspace():
        return None
    parts = s.split("\t")
    if len(parts) not in (2, 3):
        detail = f"expected id<TAB>fingerprint[<TAB>timestamp], got {len(parts)} fields"
        return BadRow(None, "malformed row", detail)
    if parts[1].strip() == "fingerprint":
        return None
    ident = parts[0]
    if escaped and "\\" in ident:
        ident = tsv_unescape(ident)
    return ident, parts[1], parts[2] if len(parts) == 3 else None


def read_fingerprints(
    paths: Sequence[str | Path],
    *,
    on_error: str = "raise",
    fingerprint_format: str = "auto",
) -> FingerprintTable:
    """Load precomputed fingerprints: ``document ID <TAB> fingerprint [<TAB> timestamp]`` rows.

    Files ending in ``.jsonl`` / ``.json`` / ``.ndjson``, ``.csv`` and ``.parquet`` are read as
    tables with columns ``id``, ``fingerprint`` and optionally ``timestamp`` (as
    :func:`write_table` writes them; CSV needs its header). Every other file (``.tsv``, ``.txt``,
    Hadoop/Spark ``part-00000`` files, …; optionally ``.gz`` / ``.zst``) holds tab-separated rows
    without a header; a line whose second field is ``fingerprint`` is taken as a header and
    skipped; the timestamp column may be absent. In ``.tsv`` files the ID is unescaped as
    :func:`write_table` escapes it (``\\t``, ``\\n``, ``\\r``, ``\\\\``); other files are read
    literally. A directory means its files, sorted, except names starting with ``.`` or ``_``
    (``_SUCCESS``, ``.crc``). ``-`` is stdin (tab-separated rows).

    Fingerprints are 16 hex digits, ``0x…`` hex or decimal (see :func:`parse_fingerprint`;
    ``fingerprint_format`` = ``"auto"`` / ``"hex"`` / ``"dec"``), or integers in JSON/Parquet
    (int64 values are two's complement). Timestamps follow :func:`read_documents` (numbers are
    seconds since the epoch); absent ones give 0 and None. IDs must be unique; bad rows raise
    :class:`InputError` or, with ``on_error="skip"``, are counted and dropped.

    Cost: O(rows). One uncompressed file of the seed's rows (hex fingerprints, timestamps in
    seconds or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``) is parsed in bulk, about 0.1 µs a row on
    each core; any other input, or any row that is not plainly valid, goes row by row (a few
    microseconds of Python a row), which reports bad rows as described above. Memory
    O(rows).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "part-00000"
        >>> _ = p.write_text("a\\t00000000000000ff\\t0\\nb\\t-1\\n")
        >>> t = read_fingerprints([p])
        >>> t.ids.to_pylist(), [int(x) for x in t.fingerprints], t.raw_timestamps.to_pylist()
        (['a', 'b'], [255, 18446744073709551615], ['0', None])
    """
    check_fingerprint_format(fingerprint_format)
    sources = fingerprint_sources(paths)
    seed = seed_source(sources, fingerprint_format)
    if seed is not None:
        bulk = _seed_rows_in_bulk(seed, RowChecks(on_error))
        if bulk is not None:
            return bulk
    (table,) = row_batches(sources, on_error, fingerprint_format)
    return table


def fingerprint_sources(paths: Sequence[str | Path]) -> list[Source]:
    """The files :func:`read_fingerprints` reads for ``paths``, in order, each with its format
    and compression; FileNotFoundError for a missing one. O(files).

    Example:
        >>> [s.fmt for s in fingerprint_sources(["-"])]
        ['plain']
    """
    sources: list[Source] = []
    for p in input_paths(paths):
        path = str(p)
        if path != "-" and os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))
            files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        else:
            files = [path]
        for f in files:
            if f != "-" and not os.path.exists(f):
                raise input_not_found(f)
            ext, compression = split_name(f) if f != "-" else ("", None)
            fmt = FORMAT_OF_EXTENSION.get(ext, "plain")
            refuse_compressed_parquet(f, fmt, compression)
            sources.append(Source(f, STDIN_NAME if f == "-" else f, fmt, compression))
    return sources


def seed_source(sources: list[Source], fingerprint_format: str) -> Source | None:
    """The one source of ``sources`` whose rows the bulk seed reader may take (a single file
    of tab-separated rows read as hex), else None. O(1)."""
    if len(sources) == 1 and sources[0].fmt in ("plain", "tsv") and fingerprint_format != "dec":
        return sources[0]
    return None


def row_batches(
    sources: list[Source], on_error: str, fingerprint_format: str, batch_rows: int | None = None
) -> Iterator[FingerprintTable]:
    """The rows of ``sources`` read and checked row by row, as :func:`read_fingerprints`
    reads them, in tables of ``batch_rows`` rows (None: one table of every row); the last may
    be shorter, or empty. Memory: a batch of rows, and 32 to 64 bytes an ID for the check of
    repeated IDs. O(rows)."""
    collector = _FingerprintCollector(on_error, fingerprint_format, batch_rows)
    for src in sources:
        if src.fmt == "jsonl":
            yield from collector.read_jsonl(src)
        elif src.fmt == "csv":
            yield from collector.read_csv(src)
        elif src.fmt == "parquet":
            yield from collector.read_parquet(src)
        else:
            yield from collector.read_plain(src, escaped=src.fmt == "tsv")
    yield collector.flush()


_BLOCK_BYTES = 32 << 20
"""Bytes of seed rows one task of the bulk reader parses: enough blocks to keep every core
busy to the end of a large file, few enough that a task's overhead does not count."""

_MIN_ROW_BYTES = 20
"""The shortest seed row the bulk reader takes: a 1-byte ID, a tab, 16 hex digits, a tab and
the newline (the last row may lack it); it bounds a block's rows by its size."""


def _block_spans(fd: int, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` byte ranges of about :data:`_BLOCK_BYTES` covering a file of ``size``
    bytes, each ending just after a newline (the last at the end of the file)."""
    spans = []
    start = 0
    while start < size:
        end = min(size, start + _BLOCK_BYTES)
        while end < size:
            tail = os.pread(fd, 1 << 16, end)
            at = tail.find(b"\n")
            if at >= 0:
                end += at + 1
                break
            end += len(tail)
        spans.append((start, end))
        start = end
    return spans


_ALIGN = 16
"""Each block's rows start at a multiple of 16 in the column arrays: 64-byte aligned offsets."""


class _SeedColumns:
    """The columns of all blocks of a file of seed rows, each block in its own stretch: a
    block of ``b`` bytes holds at most ``b // _MIN_ROW_BYTES + 1`` rows, and at most ``b``
    bytes of IDs. Allocated once for the spans (the file's, or a run of them from byte
    ``base``) and filled in place (fresh memory costs a page fault a page; numpy backs these
    large arrays with huge pages); the pages a block does not fill are never touched. The
    blocks' ID columns are views of these arrays."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        rooms = [-(-((e - s) // _MIN_ROW_BYTES + 2) // _ALIGN) * _ALIGN for s, e in spans]
        self.row_at = np.concatenate([[0], np.cumsum(rooms)]).astype(np.int64)
        self.base = spans[0][0] if spans else 0
        rows, size = int(self.row_at[-1]), spans[-1][1] - self.base if spans else 0
        self.fps = np.empty(rows, dtype=np.uint64)
        self.micros = np.empty(rows, dtype=np.int64)
        self.forms = np.empty(rows, dtype=np.uint8)
        self.id_offsets = np.empty(rows, dtype=np.int32)
        self.ids = np.empty(size, dtype=np.uint8)


def _read_seed_block(
    fd: int, k: int, span: tuple[int, int], buf: np.ndarray, out: _SeedColumns
) -> SeedBlock:
    """Read the bytes ``span`` of ``fd`` into ``buf`` (a worker's, reused from block to
    block) and parse its seed rows (:func:`~neardup.io.seed_rows.parsed_seed_block`) into block ``k``'s stretch of
    ``out``."""
    start, end = span
    size = end - start
    if size >= 1 << 31:
        return SeedBlock(False)  # no newline for 2 GB: offsets of 32 bits could not say
    buf = buf[:size]
    got = 0
    while got < size:
        read = os.preadv(fd, [memoryview(buf)[got:]], start + got)
        if read == 0:
            return SeedBlock(False)  # the file shrank while being read
        got += read
    rows = slice(out.row_at[k], out.row_at[k + 1])
    return parsed_seed_block(
        buf,
        out.fps[rows],
        out.micros[rows],
        out.forms[rows],
        out.ids[start - out.base : end - out.base],
        out.id_offsets[rows],
    )


def _distinct_ids(blocks: list[SeedBlock]) -> bool:
    """Whether the IDs of all ``blocks`` are distinct: at once when they ascend (as the rows
    of a map-reduce part sorted by key do), else through an :class:`IdTable`."""
    ids = [b.ids for b in blocks if len(b.ids)]
    ascending = all(b.ascending for b in blocks) and all(
        x[len(x) - 1].as_buffer().to_pybytes() < y[0].as_buffer().to_pybytes()
        for x, y in zip(ids, ids[1:])
    )
    if ascending:
        return True
    seen = IdTable()
    total = 0
    for column in ids:
        data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int32).astype(np.int64)
        total += len(column)
        if seen.size_after(data, offsets) != total:
            return False
    return True


def _seed_rows_in_bulk(src: Source, rows: RowChecks) -> FingerprintTable | None:
    """The seed's rows ``id <TAB> 16 hex digits <TAB> timestamp`` of one uncompressed file,
    parsed in blocks of about :data:`_BLOCK_BYTES` on all cores by one compiled pass each
    (:func:`_parse_seed_block`): O(file bytes) with no Python per row.

    Returns None, having read nothing into ``rows``, as soon as anything is not plainly valid
    (a bad or missing field, a header, escapes in a ``.tsv`` ID, a BOM, a timestamp that is not
    seconds or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, a duplicate ID…): the row-by-row reader then
    reads the file and reports each row exactly as it always has. Timestamps of that ISO form
    are computed exactly as :func:`~neardup.io.values.time_to_us` computes them for that form.
    """
    if src.path == "-" or src.compression is not None:
        return None
    with open(src.path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0 or os.pread(fh.fileno(), 3, 0) == b"\xef\xbb\xbf":
            return None
        spans = _block_spans(fh.fileno(), size)
        out = _SeedColumns(spans)
        workers = min(len(spans), os.cpu_count() or 1)
        spare: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(workers):
            spare.put(np.empty(max(e - s for s, e in spans), dtype=np.uint8))

        def read(k: int) -> SeedBlock:
            buf = spare.get()
            try:
                return _read_seed_block(fh.fileno(), k, spans[k], buf, out)
            finally:
                spare.put(buf)

        with ThreadPoolExecutor(workers) as pool:
            blocks = list(pool.map(read, range(len(spans))))
            n = sum(b.rows for b in blocks)
            if n == 0 or not all(b.ok for b in blocks) or not _distinct_ids(blocks):
                return None
            joined = _SeedTable(blocks, out, spans)
            list(pool.map(joined.copy_block, range(len(blocks))))
    rows.start_file(src.display)
    rows.stats.documents += n
    timestamps, forms = joined.micros, joined.forms
    ends = joined.row_at[1:].tolist()

    def raw_timestamps() -> pa.ChunkedArray:
        chunks = [stamp_texts(timestamps[a:b], forms[a:b]) for a, b in zip([0] + ends[:-1], ends)]
        return pa.chunked_array(chunks, type=pa.string())

    return FingerprintTable(
        ids=joined.ids(),
        fingerprints=joined.fps,
        timestamps=timestamps,
        raw_timestamps=raw_timestamps,
        stats=rows.stats,
    )


class _SeedTable:
    """The columns of all blocks of a file of seed rows joined into whole-file arrays, each
    block copied into its place by :meth:`copy_block` on a worker thread (numpy's copies
    release the GIL): no serial concatenation after the parallel parse. The IDs become one
    Arrow chunk when their bytes fit its 32-bit offsets (taking rows by index, as the outputs'
    columns do, is then many times faster), else stay one chunk a block."""

    def __init__(self, blocks: list[SeedBlock], out: _SeedColumns, spans: list[tuple[int, int]]):
        self.blocks, self.out, self.spans = blocks, out, spans
        counts = [b.rows for b in blocks]
        self.row_at = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        id_bytes = [b.ids.buffers()[2].size for b in blocks]
        self.byte_at = np.concatenate([[0], np.cumsum(id_bytes)]).astype(np.int64)
        n = int(self.row_at[-1])
        self.fps = np.empty(n, dtype=np.uint64)
        self.micros = np.empty(n, dtype=np.int64)
        self.forms = np.empty(n, dtype=np.uint8)
        self.one_chunk = int(self.byte_at[-1]) < 1 << 31
        if self.one_chunk:
            self.id_offsets = np.empty(n + 1, dtype=np.int32)
            self.id_offsets[n] = self.byte_at[-1]
            self.id_data = np.empty(int(self.byte_at[-1]), dtype=np.uint8)

    def copy_block(self, k: int) -> None:
        """Copy block ``k``'s rows into their place. O(its rows and ID bytes)."""
        rows = self.blocks[k].rows
        src = slice(int(self.out.row_at[k]), int(self.out.row_at[k]) + rows)
        dst = slice(int(self.row_at[k]), int(self.row_at[k + 1]))
        self.fps[dst] = self.out.fps[src]
        self.micros[dst] = self.out.micros[src]
        self.forms[dst] = self.out.forms[src]
        if self.one_chunk:
            byte_at = int(self.byte_at[k])
            np.add(self.out.id_offsets[src], byte_at, out=self.id_offsets[dst])
            start = self.spans[k][0]
            size = int(self.byte_at[k + 1]) - byte_at
            self.id_data[byte_at : byte_at + size] = self.out.ids[start : start + size]

    def ids(self) -> pa.ChunkedArray:
        """The IDs, once every block is copied."""
        if not self.one_chunk:
            return pa.chunked_array([b.ids for b in self.blocks], type=pa.string())
        n = self.fps.shape[0]
        column = pa.StringArray.from_buffers(
            n, pa.py_buffer(self.id_offsets), pa.py_buffer(self.id_data)
        )
        return pa.chunked_array([column])
