"""Documents: the rows of JSON Lines, CSV, TSV, Parquet, ``.txt`` folders or tables in memory.

:func:`read_documents` streams :class:`DocumentBatch` objects (ids, texts, timestamps,
positions) from files, directories or stdin; :func:`~neardup.io.tables.read_table` does so
for a DataFrame, an Arrow table or a mapping of columns. Both check every row by the rules of
:class:`~neardup.io.rows.RowChecks`. Without a time field every timestamp is 0 and callers
break ties by input position; the time value as it appeared in the input is kept in
``raw_timestamps`` so it can be written back unchanged.

JSON Lines (``.gz`` and ``.zst`` ones decompressed as they are read) are read in blocks of
whole lines; a block of plain lines is parsed by a compiled reader with the GIL released, and
its texts stay one Arrow string array (a :class:`~neardup.text.canonical.TextColumn`) that the
canonical kernels read directly. Where that reading could differ from the line-by-line one,
the block is read line by line (:mod:`neardup.io.jsonl_blocks`): the batches are the same
either way.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "b.txt").write_text("second"), (d / "a.txt").write_text("first")
    >>> batch = read_documents([d]).read_all()
    >>> batch.ids, batch.texts, batch.positions.tolist()
    (['a.txt', 'b.txt'], ['first', 'second'], [0, 1])
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson
import pyarrow as pa

from neardup.ids import plain_id
from neardup.io.files import INPUT_FORMATS, Source, input_paths, open_input, resolve_input
from neardup.io.id_table import IdTable
from neardup.io.jsonl_blocks import BlockParser, ParsedBlock, read_blocks
from neardup.io.rows import (
    DEFAULT_MAX_DOC_BYTES,
    InputError,
    ReadStats,
    RowChecks,
    check_reading_options,
    missing_column,
    oversized_text,
    utf8_bytes,
    valid_id,
    valid_text,
    valid_time,
)
from neardup.io.sources import (
    UNREADABLE_ERRORS,
    decoded_line,
    delimited_rows,
    fast_json,
    iter_lines,
    json_object_line,
    line_blocks_at,
    open_parquet,
    parse_json_line,
    rows_by_file,
)
from neardup.io.values import time_to_us, us_to_iso
from neardup.text.canonical import TextColumn

# A document's location packs its input's index above a 48-bit row key (byte offset or row).
_KEY_BITS = 48
_KEY_MASK = (1 << _KEY_BITS) - 1


@dataclass
class DocumentBatch:
    """A batch of documents, in input order.

    Attributes:
        ids: document IDs as strings: a list of strs, or for JSON Lines read in blocks a
            :class:`~neardup.text.canonical.TextColumn` (a sequence of strs held as one Arrow
            array, which ``pa.array`` takes as it is).
        texts: document texts: a list of strs, or a :class:`~neardup.text.canonical.TextColumn`
            for JSON Lines read in blocks.
        timestamps: int64 ordering key, microseconds since the Unix epoch (0 without a time field).
        raw_timestamps: the time value as it appeared in the input (None without a time field;
            for directories an ISO 8601 UTC string of the file's mtime).
        records: the full input rows (dicts with all their fields) when ``keep_records=True``,
            else None.
        positions: int64 global input position of each document (0..N-1 over all files).
        locations: int64[n, 2], where each document is in its input: (index of the input in
            the reader's list, row key), the row key being the byte offset of its line in the
            (decompressed) stream for JSON Lines and its row number otherwise; see
            :meth:`DocumentReader.fetch`. None when not recorded.
    """

    ids: list[str] | TextColumn
    texts: list[str] | TextColumn
    timestamps: np.ndarray
    raw_timestamps: list
    records: list[dict] | None
    positions: np.ndarray
    locations: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)


class DocumentReader:
    """Iterable of :class:`DocumentBatch` over the inputs of :func:`read_documents`.

    Single use: inputs (stdin in particular) are streamed once. ``stats`` fills in as batches
    are read and is final when iteration ends.
    """

    def __init__(
        self,
        sources: list[Source],
        *,
        id_field: str,
        text_field: str,
        time_field: str | None,
        on_error: str,
        batch_size: int,
        keep_records: bool,
        spill_dir: str | None = None,
        max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
        id_memory: int | None = None,
        id_spill_dir: str | None = None,
    ) -> None:
        self._sources = sources
        self._spill_dir = spill_dir
        self._stdin_copy: str | None = None
        self._where = 0
        self._consumed = 0
        self._in_jsonl = False
        self._id_field = id_field
        self._text_field = text_field
        self._time_field = time_field
        self._batch_size = batch_size
        self._keep = keep_records
        self._rows = RowChecks(on_error, max_doc_bytes)
        self._parser = BlockParser(id_field, text_field, time_field, self._rows.max_doc_bytes)
        self._rows.before_raise = self._check_earlier_ids
        # Skipped repeats are dropped as they are read: only a raising read defers them.
        self._id_memory = id_memory if on_error == "raise" else None
        self._seen = IdTable(self._id_memory, id_spill_dir or spill_dir)
        self._started = False
        self._position = 0
        self._reset()

    @property
    def stats(self) -> ReadStats:
        """Counters of the read so far."""
        return self._rows.stats

    def __iter__(self) -> Iterator[DocumentBatch]:
        if self._started:
            raise RuntimeError(
                "a DocumentReader can be iterated only once; call read_documents again"
            )
        self._started = True
        return self._generate()

    def read_all(self) -> DocumentBatch:
        """Every document as a single batch (positions 0..N-1).

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.jsonl"
            >>> _ = p.write_text('{"id": "a", "text": "x"}\\n')
            >>> len(read_documents([p]).read_all())
            1
        """
        batches = list(self)
        if not batches:
            return DocumentBatch(
                [], [], np.zeros(0, np.int64), [], [] if self._keep else None, np.zeros(0, np.int64)
            )
        if len(batches) == 1:
            return batches[0]
        return DocumentBatch(
            ids=[i for b in batches for i in b.ids],
            texts=[t for b in batches for t in b.texts],
            timestamps=np.concatenate([b.timestamps for b in batches]),
            raw_timestamps=[r for b in batches for r in b.raw_timestamps],
            records=[r for b in batches for r in b.records] if self._keep else None,  # type: ignore[union-attr]
            positions=np.concatenate([b.positions for b in batches]),
            locations=None
            if any(b.locations is None for b in batches)
            else np.concatenate([b.locations for b in batches]),
        )

    # -- reading again -------------------------------------------------------------------------

    def total_bytes(self) -> int | None:
        """Bytes of the inputs when every one is an uncompressed JSON Lines file (what
        :attr:`bytes_consumed` reaches at the end), else None. For progress displays."""
        if any(
            src.fmt != "jsonl" or src.compression is not None or src.path == "-"
            for src in self._sources
        ):
            return None
        return sum(os.path.getsize(src.path) for src in self._sources)

    @property
    def bytes_consumed(self) -> int:
        """Bytes of JSON Lines read so far (decompressed), over all inputs."""
        return self._consumed + (self._where & _KEY_MASK if self._in_jsonl else 0)

    def can_fetch(self) -> bool:
        """Whether :meth:`fetch` can read documents again by location: every input is JSON Lines
        (from stdin only if it was copied to ``spill_dir`` while read)."""
        return all(
            src.fmt == "jsonl" and (src.path != "-" or self._spill_dir is not None)
            for src in self._sources
        )

    @contextmanager
    def _stdin_spill(self, src: Source) -> Iterator[IO[bytes] | None]:
        if src.path != "-" or self._spill_dir is None:
            yield None
            return
        self._stdin_copy = os.path.join(self._spill_dir, "stdin.jsonl")
        with open(self._stdin_copy, "wb") as copy:
            yield copy

    def fetch(
        self,
        positions: np.ndarray,
        locations: np.ndarray,
        *,
        records: bool = False,
        last_read: bool = False,
    ) -> Iterator[DocumentBatch]:
        """The documents at ``positions`` again, read through their ``locations`` (both from
        the batches of a first pass; positions ascending), as batches with the same IDs, texts,
        timestamps and (with ``records``) records. Rows are not validated again: they were in
        the first pass. ``last_read``: the caller will not read them again, their pages may
        leave the page cache (:func:`~neardup.io.sources.line_blocks_at`).

        Plain files are read in runs of nearby wanted lines, one read a run
        (:func:`~neardup.io.sources.line_blocks_at`); .gz/.zst inputs are decompressed again up to
        the last wanted line, parsing only the wanted lines. Cost: O(bytes of the wanted lines
        and of the short gaps between them) plus, for compressed inputs, O(decompressed bytes
        up to the last one).

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.jsonl"
            >>> _ = p.write_text('{"id": "a", "text": "x"}\\n\\n{"id": "b", "text": "y"}\\n')
            >>> reader = read_documents([p])
            >>> first = next(iter(reader))
            >>> again = next(reader.fetch(first.positions[1:], first.locations[1:]))
            >>> again.ids, again.texts
            (['b'], ['y'])
        """
        if not self.can_fetch():
            raise ValueError(
                "fetch reads JSON Lines inputs again (standard input only when "
                "copied to spill_dir); read the other formats again instead"
            )
        positions = np.asarray(positions, dtype=np.int64)
        locations = np.asarray(locations, dtype=np.int64).reshape(-1, 2)
        for index, rows in rows_by_file(locations[:, 0]):
            src = self._sources[index]
            if src.path == "-":
                src = Source(self._stdin_copy or "", src.display, "jsonl", None)
            size = self._batch_size
            blocks = line_blocks_at(src, locations[rows, 1], size, last_read)
            wanted = positions[rows]  # a view when the file's rows are one run
            for start, (block, starts) in zip(range(0, wanted.shape[0], size), blocks):
                chunk = wanted[start : start + size]
                # In a block where that is exact (records need every field: line by line).
                got = None if records else self._parser.parse_block(block, starts)
                if got is None:
                    lines = [block[a:b].tobytes() for a, b in zip(starts[:-1], starts[1:])]
                    yield self._parsed_batch(lines, chunk, records)
                else:
                    ids, texts = TextColumn(got.ids), TextColumn(got.texts)
                    yield DocumentBatch(ids, texts, got.timestamps, got.raw_timestamps, None, chunk)

    def _parsed_batch(
        self, lines: list[bytes], positions: np.ndarray, records: bool
    ) -> DocumentBatch:
        ids, texts, times, raw, kept = [], [], [], [], []
        id_field, text_field, time_field = self._id_field, self._text_field, self._time_field
        for line in lines:
            try:
                obj = fast_json(line, records)
            except orjson.JSONDecodeError:
                obj = parse_json_line(line.decode("utf-8").lstrip("\ufeff"))
            ident = obj[id_field]
            ids.append(ident if type(ident) is str else str(int(ident)))
            texts.append(obj[text_field])
            value = obj.get(time_field) if time_field is not None else None
            times.append(0 if time_field is None else time_to_us(value))
            raw.append(value)
            if records:
                kept.append(obj)
        return DocumentBatch(
            ids, texts, np.array(times, dtype=np.int64), raw, kept if records else None, positions
        )

    # -- batch assembly ------------------------------------------------------------------------

    def _reset(self) -> None:
        # IDs and texts: one str a row, or an Arrow array for the rows of a block (see
        # _column). The other lists hold one entry a row: the length of _keys counts the rows.
        self._ids: list[str | pa.Array] = []
        self._texts: list[str | pa.Array] = []
        self._times: list[int] = []
        self._raw: list[Any] = []
        self._records: list[dict] = []
        self._locs: list[int] = []
        self._keys: list[int] = []
        self._nbytes: list[int | None] = []
        self._checked = 0  # rows whose IDs were checked (see _check_ids)
        self._checked_pieces = 0  # the pieces of _ids that hold them
        self._dropped: list[int] = []

    def _check_ids(self) -> None:
        """Find the duplicate IDs among the rows added since the last check, in input order,
        against every earlier row (:class:`~neardup.io.id_table.IdTable`): reported as before (the
        first one raises with ``on_error="raise"``), dropped at the next flush with ``"skip"``."""
        start = self._checked
        if start == len(self._keys):
            return
        self._checked = len(self._keys)
        ids = _column(self._ids[self._checked_pieces :])
        self._checked_pieces = len(self._ids)
        ids = ids.array if isinstance(ids, TextColumn) else ids  # hashed from its buffers
        repeated = self._rows.repeated_ids(self._seen, ids, self._keys[start:], self._id_field)
        self._dropped.extend(start + i for i in repeated)

    def _check_earlier_ids(self) -> None:
        """Before a bad row raises: the repeated IDs of the rows before it, pending ones and
        those of the table's spill (:meth:`~neardup.io.rows.RowChecks.report_spilled`)."""
        self._check_ids()
        self._rows.report_spilled(self._seen, self._id_field)

    def _flush(self) -> DocumentBatch:
        self._check_ids()
        self._texts = _column(self._texts)  # type: ignore[assignment]
        self._ids = _column(self._ids)  # type: ignore[assignment]
        if self._dropped:
            drop = set(self._dropped)
            keep = [i for i in range(len(self._keys)) if i not in drop]
            for name in ("_ids", "_texts", "_times", "_raw", "_locs", "_nbytes") + (
                ("_records",) if self._keep else ()
            ):
                values = getattr(self, name)
                setattr(self, name, [values[i] for i in keep])
        n = len(self._times)  # the rows kept
        stats = self._rows.stats
        stats.documents += n
        # None: a non-ASCII text of a parser that refuses unpaired surrogates (see _add).
        counted = [b for b in self._nbytes if b is not None]
        stats.bytes += sum(counted)
        if len(counted) < len(self._nbytes):
            stats.bytes += utf8_bytes([t for t, b in zip(self._texts, self._nbytes) if b is None])
        packed = np.array(self._locs, dtype=np.int64)
        batch = DocumentBatch(
            ids=self._ids,
            texts=self._texts,
            timestamps=np.array(self._times, dtype=np.int64),
            raw_timestamps=self._raw,
            records=self._records if self._keep else None,
            positions=np.arange(self._position, self._position + n, dtype=np.int64),
            locations=np.stack([packed >> _KEY_BITS, packed & _KEY_MASK], axis=1),
        )
        self._position += n
        self._reset()
        return batch

    def _add(
        self,
        path: str,
        line: int | None,
        ident: Any,
        text: Any,
        time_value: Any,
        record: dict | None,
        time_us: int | None = None,
        scalar_text: bool = False,
    ) -> None:
        """Validate one row and append it to the current batch (or report it). ``scalar_text``:
        a string ``text`` holds no unpaired surrogate (orjson refuses them)."""
        rows = self._rows
        # Fast paths first: this runs once per document.
        if not plain_id(ident):
            ident = rows.checked(valid_id(ident, self._id_field), path, line)
            if ident is None:
                return
        limit = rows.max_doc_bytes
        if type(text) is str and text.isascii() and (limit is None or len(text) <= limit):
            nbytes = len(text)
        elif scalar_text and type(text) is str and (limit is None or 4 * len(text) <= limit):
            # At most 4 bytes a code point: within the limit. Counted with the batch, at once.
            nbytes = None
        else:
            nbytes = rows.checked(valid_text(text, self._text_field, limit), path, line)
            if nbytes is None:
                return
        if time_us is None:
            if self._time_field is None:
                time_us = 0
            else:
                time_us = rows.checked(valid_time(time_value, self._time_field), path, line)
                if time_us is None:
                    return
        # The duplicate-ID check runs on the whole batch at once (see _check_ids).
        self._ids.append(ident)
        self._texts.append(text)
        self._times.append(time_us)
        self._raw.append(time_value)
        self._locs.append(self._where)
        self._keys.append(rows.row_key(line))
        self._nbytes.append(nbytes)
        if self._keep:
            self._records.append(record)  # type: ignore[arg-type]

    # -- formats -------------------------------------------------------------------------------

    def _generate(self) -> Iterator[DocumentBatch]:
        try:
            for index, src in enumerate(self._sources):
                self._source_base = index << _KEY_BITS
                if src.fmt == "jsonl":
                    yield from self._read_jsonl(src)
                elif src.fmt in ("csv", "tsv"):
                    yield from self._read_delimited(src)
                elif src.fmt == "parquet":
                    yield from self._read_parquet(src)
                elif src.fmt == "table":
                    yield from self._read_table(src)
                else:
                    yield from self._read_directory(src)
            if self._ids:
                yield self._flush()
            self._rows.report_spilled(self._seen, self._id_field)
        finally:
            self._seen.close()  # its spill files, also when the read stops early
        self._seen = IdTable()  # the IDs were all checked: free the table for later stages

    def _read_jsonl(self, src: Source) -> Iterator[DocumentBatch]:
        path = src.display
        self._rows.start_file(path)
        self._in_jsonl = True
        parser = self._parser
        with open_input(src) as fh, self._stdin_spill(src) as copy:
            # Records need every field: those are read line by line.
            if self._keep or not parser.usable:
                offset = yield from self._jsonl_lines(path, iter_lines(fh, path), 0, copy)
            else:
                offset = yield from self._jsonl_blocks(path, fh, parser, copy)
        self._consumed += offset
        self._in_jsonl = False

    def _jsonl_blocks(
        self, path: str, fh: IO[bytes], parser: BlockParser, copy: IO[bytes] | None
    ) -> Iterator[DocumentBatch]:
        """Read an input in blocks (:mod:`neardup.io.jsonl_blocks`; a compressed one
        decompressed as it is read): a block read exactly by the block parser is added whole,
        any other line by line. A stream that cannot be read on (a failing read, a compressed
        stream cut short or damaged) is an error at the first line of the block it was reading.
        Returns the input's size in bytes (decompressed)."""
        blocks = read_blocks(fh, parser, copy)
        line, offset = 1, 0
        try:
            while True:
                try:
                    block = next(blocks, None)
                except UNREADABLE_ERRORS as e:  # as iter_lines reports it
                    raise InputError(path, line, None, "unreadable input", str(e)) from e
                if block is None:
                    return offset
                if block.parsed is not None:
                    yield from self._add_block(block.parsed, line, offset)
                    offset += block.size
                else:
                    data, bounds = block.data or b"", block.starts.tolist()
                    lines = (data[a:b] for a, b in zip(bounds, bounds[1:]))
                    offset = yield from self._jsonl_lines(
                        path, enumerate(lines, line), offset, None
                    )
                line += block.starts.shape[0] - 1
        finally:
            blocks.close()  # the block read ahead ends before the input closes

    def _add_block(self, parsed: ParsedBlock, first: int, offset: int) -> Iterator[DocumentBatch]:
        """Append the rows of a block (all good, one a line from line ``first`` at byte
        ``offset``), flushing at the batch size as row by row would."""
        n = len(parsed.ids)
        starts = parsed.line_starts[:n]
        locs = (self._source_base | (offset + starts)).tolist()
        keys = (self._rows.row_key(first) + np.arange(n, dtype=np.int64)).tolist()
        times, nbytes = parsed.timestamps.tolist(), parsed.text_bytes.tolist()
        done = 0
        while done < n:
            stop = min(n, done + self._batch_size - len(self._keys))
            self._ids.append(parsed.ids.slice(done, stop - done))
            self._texts.append(parsed.texts.slice(done, stop - done))
            self._times.extend(times[done:stop])
            self._raw.extend(parsed.raw_timestamps[done:stop])
            self._locs.extend(locs[done:stop])
            self._keys.extend(keys[done:stop])
            self._nbytes.extend(nbytes[done:stop])
            self._where = locs[stop - 1]
            done = stop
            if len(self._keys) >= self._batch_size:
                yield self._flush()

    def _jsonl_lines(
        self,
        path: str,
        lines: Iterator[tuple[int, bytes]],
        offset: int,
        copy: IO[bytes] | None,
    ) -> Iterator[DocumentBatch]:
        """Read (line number, raw line) pairs one by one from byte ``offset``: each line is
        parsed, checked and added, bad rows reported. Returns the offset after them."""
        rows = self._rows
        id_field, text_field, time_field = self._id_field, self._text_field, self._time_field
        keep, batch_size, add = self._keep, self._batch_size, self._add
        base = self._source_base
        for n, raw in lines:
            self._where = base | offset
            offset += len(raw)
            if copy is not None:
                copy.write(raw)
            if raw.isspace() or not raw:
                continue
            try:
                obj = fast_json(raw, keep)
            except orjson.JSONDecodeError:
                obj = None
            scalar_text = type(obj) is dict
            if not scalar_text:
                # What orjson refuses (a BOM, integers past 64 bits, NaN, lone surrogates,
                # real errors) or reads as no object goes the standard library's way, with
                # its exact messages.
                s = decoded_line(raw, n, rows, path)
                if s is None:
                    continue
                obj = rows.checked(json_object_line(s, n), path, n)
                if obj is None:
                    continue
            add(
                path,
                n,
                obj.get(id_field),
                obj.get(text_field),
                obj.get(time_field) if time_field is not None else None,
                obj if keep else None,
                scalar_text=scalar_text,
            )
            if len(self._keys) >= batch_size:
                yield self._flush()
        return offset

    def _read_delimited(self, src: Source) -> Iterator[DocumentBatch]:
        path = src.display
        self._rows.start_file(path)
        lines = delimited_rows(src, self._rows)
        header = next(lines, (1, None))[1]
        if header is None:
            return  # an empty file holds no documents
        columns = {}
        for i, name in enumerate(header):
            columns.setdefault(name, i)
        self._check_columns(path, header, "line")
        i_id, i_text = columns[self._id_field], columns[self._text_field]
        i_time = columns[self._time_field] if self._time_field is not None else None
        keep, batch_size, add = self._keep, self._batch_size, self._add
        for row_number, (start, row) in enumerate(lines):
            self._where = self._source_base | row_number
            add(
                path,
                start,
                row[i_id],
                row[i_text],
                row[i_time] if i_time is not None else None,
                dict(zip(header, row)) if keep else None,
            )
            if len(self._keys) >= batch_size:
                yield self._flush()

    def _read_parquet(self, src: Source) -> Iterator[DocumentBatch]:
        with open_parquet(src) as pf:
            self._rows.start_file(src.display, unit="row")
            columns = self._check_columns(src.display, pf.schema_arrow.names, "row")
            chunks = (
                {name: rb.column(name).to_pylist() for name in rb.schema.names}
                for rb in pf.iter_batches(
                    batch_size=max(1024, min(self._batch_size, 65_536)),
                    columns=None if self._keep else columns,
                )
            )
            yield from self._read_columns(src.display, chunks)

    def _read_table(self, src: Source) -> Iterator[DocumentBatch]:
        columns = src.columns or {}
        self._rows.start_file(src.display, unit="row")
        self._check_columns(src.display, list(columns), "row")
        yield from self._read_columns(src.display, iter([dict(columns)]))

    def _check_columns(self, path: str, names: Sequence[str], unit: str) -> list[str]:
        """The columns a row needs, in order; raises when one of them is missing."""
        wanted = [self._id_field, self._text_field]
        if self._time_field is not None:
            wanted.append(self._time_field)
        for name in wanted:
            if name not in names:
                raise missing_column(path, name, names, unit)
        return list(dict.fromkeys(wanted))

    def _read_columns(
        self, path: str, chunks: Iterator[dict[str, list]]
    ) -> Iterator[DocumentBatch]:
        """Rows of column chunks (dicts of equal-length lists of Python values): Parquet record
        batches and in-memory tables, validated as every other row. Rows count from 1."""
        keep, batch_size, add = self._keep, self._batch_size, self._add
        row = 0
        for chunk in chunks:
            ids, texts = chunk[self._id_field], chunk[self._text_field]
            n = len(texts)
            times = chunk[self._time_field] if self._time_field is not None else [None] * n
            records = (
                [dict(zip(chunk, values)) for values in zip(*chunk.values())] if keep else None
            )
            for k in range(n):
                row += 1
                self._where = self._source_base | (row - 1)
                add(path, row, ids[k], texts[k], times[k], records[k] if records else None)
                if len(self._keys) >= batch_size:
                    yield self._flush()

    def _read_directory(self, src: Source) -> Iterator[DocumentBatch]:
        root = src.path
        found: list[str] = []
        for dirpath, _dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            for name in filenames:
                if name.endswith(".txt"):
                    rel = name if rel_dir == "." else os.path.join(rel_dir, name)
                    found.append(rel.replace(os.sep, "/"))
        found.sort()
        rows = self._rows
        for file_number, rel in enumerate(found):
            self._where = self._source_base | file_number
            full = os.path.join(root, *rel.split("/"))
            rows.start_file(full)
            with open(full, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                # Refused before reading, so a huge file costs no memory (3 bytes: a BOM).
                too_large = oversized_text(size - 3, rows.max_doc_bytes)
                if too_large is not None:
                    rows.bad(full, None, self._text_field, "document too large", too_large)
                    continue
                data = f.read()
                mtime_ns = os.fstat(f.fileno()).st_mtime_ns
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                line = data.count(b"\n", 0, e.start) + 1
                rows.bad(full, line, None, "invalid UTF-8", f"byte {e.start + 1} of the file")
                continue
            if text.startswith("\ufeff"):
                text = text[1:]
            us = mtime_ns // 1000
            raw = us_to_iso(us)
            record = None
            if self._keep:
                record = {self._id_field: rel, self._text_field: text}
                if self._time_field is not None:
                    record[self._time_field] = raw
            self._add(full, None, rel, text, raw, record, time_us=us)
            if len(self._keys) >= self._batch_size:
                yield self._flush()


def _column(pieces: list[str | pa.Array]) -> list[str] | TextColumn:
    """Pending IDs or texts, a str a row (read line by line) or an Arrow string array a
    block's rows: one :class:`TextColumn` when every piece is Arrow, else a list of strs.
    O(rows)."""
    kinds = set(map(type, pieces))
    if str not in kinds and pieces:
        return TextColumn(pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces))
    if len(kinds) <= 1:
        return pieces  # type: ignore[return-value]
    strs: list[str] = []
    for piece in pieces:
        if type(piece) is str:
            strs.append(piece)
        else:
            strs.extend(piece.to_pylist())
    return strs


def read_documents(
    paths: Sequence[str | Path],
    *,
    id_field: str = "id",
    text_field: str = "text",
    time_field: str | None = None,
    input_format: str | None = None,
    on_error: str = "raise",
    batch_size: int = 10_000,
    keep_records: bool = False,
    spill_dir: str | None = None,
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    id_memory: int | None = None,
    id_spill_dir: str | None = None,
) -> DocumentReader:
    """Stream documents from files, directories or stdin as :class:`DocumentBatch` objects.

    Args:
        paths: inputs, read in the given order; positions continue across them. ``-`` is
            stdin (JSON Lines unless ``input_format`` says otherwise). A directory yields every
            ``*.txt`` file below it, sorted by relative path; the ID is that path with ``/``
            separators, the text the file's content, the timestamp its mtime (always, whatever
            ``time_field`` is). A single path (str or Path) is accepted too.
        id_field: field / column holding the ID. Strings and integers are accepted (an integer
            5 becomes ``"5"``); IDs must be non-empty and unique over all inputs.
        text_field: field / column holding the text (a string; null counts as missing).
        time_field: field / column holding the time, or None (all timestamps 0). See the module
            docstring for the accepted forms; a missing or unparseable time is a bad row.
        input_format: ``jsonl`` (also ``json``, ``ndjson``), ``csv``, ``tsv``, ``parquet`` or
            ``txt``, optionally with ``.gz`` / ``.zst``; default: from each file's extension
            (after stripping ``.gz`` / ``.zst`` / ``.zstd``).
        on_error: ``"raise"`` (raise :class:`~neardup.io.rows.InputError`) or ``"skip"`` (drop the row, count it
            in ``stats``). File-level problems always raise.
        batch_size: documents per batch (the last one may be smaller).
        keep_records: also return each input row as a dict with all its fields (CSV/TSV values
            are strings), for writing originals back with :func:`write_records`.
        spill_dir: a folder where JSON Lines read from stdin are copied as they are read, so
            that :meth:`DocumentReader.fetch` can read them again, and where the check of
            repeated IDs spills past ``id_memory``.
        id_memory: bytes the check of repeated IDs may hold (None: it grows with the IDs, 32
            to 64 bytes each). With a folder and ``on_error="raise"``, the IDs past it go to
            ``id_spill_dir`` (default ``spill_dir``; :class:`~neardup.io.id_table.IdTable`,
            24 bytes an ID) and a repeat among them is found when the reading ends or before
            another bad row raises, reported with both rows but without the ID's value.
        id_spill_dir: that folder, when stdin should not be copied to ``spill_dir``.
        max_doc_bytes: the largest text accepted, in UTF-8 bytes (default
            :data:`DEFAULT_MAX_DOC_BYTES`, 16 MiB; None or 0: no limit). A longer text is a
            bad row ("document too large"), raised or skipped as ``on_error`` says; a ``.txt``
            file over it is refused before it is read.

    CSV and TSV need a header row. CSV is RFC 4180, parsed by the :mod:`csv` module with
    ``strict=True``: a quoted field may span lines, but one that never closes, or a row whose
    field count differs from the header's, is a bad row reported at the line where it (its
    quote) starts, and reading goes on with the next line, so a stray quote does not swallow the
    rows after it. TSV is literal: one row per line, fields split at tabs, no quoting (``"`` is
    an ordinary character), ``\\t`` ``\\n`` ``\\r`` ``\\\\`` unescaped (the rule of
    :func:`write_table`, :func:`tsv_escape`); a row with the wrong number of fields is a bad row.
    Lines are decoded one by one so that invalid UTF-8 is reported with its line; a UTF-8 BOM is
    ignored.

    Returns a single-use :class:`DocumentReader`; the inputs are checked (existence, format) now,
    the rows while iterating. Cost: O(total input size), memory O(batch_size + number of IDs) (O(batch_size +
    id_memory) with ``id_memory``).

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a.csv").write_text("doc,body,date\\nx,hello,2024-01-02\\n")
        >>> reader = read_documents([d / "a.csv"], id_field="doc", text_field="body",
        ...                         time_field="date")
        >>> batch = next(iter(reader))
        >>> batch.ids, batch.timestamps.tolist(), batch.raw_timestamps, reader.stats.documents
        (['x'], [1704153600000000], ['2024-01-02'], 1)
    """
    check_reading_options(id_field, text_field, time_field, on_error, batch_size)
    sources = [resolve_input(p, input_format, INPUT_FORMATS) for p in input_paths(paths)]
    return DocumentReader(
        sources,
        id_field=id_field,
        text_field=text_field,
        time_field=time_field,
        on_error=on_error,
        batch_size=batch_size,
        keep_records=keep_records,
        spill_dir=spill_dir,
        max_doc_bytes=max_doc_bytes,
        id_memory=id_memory,
        id_spill_dir=id_spill_dir,
    )
