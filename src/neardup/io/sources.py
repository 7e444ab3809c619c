"""The rows of an input, by format: lines of JSON, CSV and TSV rows, Parquet files.

Each source numbers its rows by the physical line where they start (the header counts), so a
bad row is reported where an editor shows it, and hands bad rows to a
:class:`~neardup.io.rows.RowChecks`, which raises or counts them. Lines are decoded one by one,
so invalid UTF-8 is reported with its line; a UTF-8 BOM is ignored.

CSV is RFC 4180, parsed by the :mod:`csv` module with ``strict=True``. TSV is literal: one row
per line, fields split at tabs, no quoting, each field :func:`~neardup.io.values.tsv_unescape`-d.

Example:
    >>> import tempfile, pathlib
    >>> from neardup.io.files import INPUT_FORMATS, resolve_input
    >>> from neardup.io.rows import RowChecks
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text('id,text\\n1,"two\\nlines"\\n2,x\\n')
    >>> list(delimited_rows(resolve_input(p, None, INPUT_FORMATS), RowChecks("raise")))
    [(1, ['id', 'text']), (2, ['1', 'two\\nlines']), (4, ['2', 'x'])]
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import zlib
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import zstandard
from numba import njit

from neardup.io.files import Source, open_input, resolve_input, stdin_binary
from neardup.io.jsonl_blocks import LineGather, line_blocks
from neardup.io.rows import BadRow, InputError, RowChecks
from neardup.io.values import json_type_name, tsv_unescape

if TYPE_CHECKING:
    import pyarrow.parquet as pq

# --------------------------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------------------------


#: What reading a (decompressing) stream raises when its bytes cannot be read: a failing read,
#: a compressed stream cut short or damaged.
UNREADABLE_ERRORS = (OSError, EOFError, zlib.error, zstandard.ZstdError)


def iter_lines(fh: IO[bytes], path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line) pairs of a binary stream; a decompression failure
    becomes an :class:`InputError` at the line it stopped. O(size of the stream).

    Example:
        >>> list(iter_lines(io.BytesIO(b"a\\nb"), "x"))
        [(1, b'a\\n'), (2, b'b')]
    """
    n = 0
    try:
        for n, line in enumerate(fh, 1):
            yield n, line
    except UNREADABLE_ERRORS as e:
        raise InputError(path, n + 1, None, "unreadable input", str(e)) from e


def decoded_line(raw: bytes, n: int, rows: RowChecks, path: str) -> str | None:
    """Line ``n`` as text without the BOM of a first line; None (reported) if not UTF-8.

    Example:
        >>> decoded_line(b"\\xef\\xbb\\xbfhello\\n", 1, RowChecks("raise"), "x")
        'hello\\n'
    """
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        rows.bad(path, n, None, "invalid UTF-8", f"byte {e.start + 1} of the line")
        return None
    return s[1:] if n == 1 and s.startswith("\ufeff") else s


#: Wanted lines of a plain file less than this many bytes apart are read in one read with the
#: lines between them (a read call costs about as much as copying that many bytes)...
COALESCE_GAP = 64 << 10
#: ... up to this many bytes a read...
COALESCE_BYTES = 4 << 20
#: ... and this many past the run's last wanted line's start, which hold that line's end but
#: for a longer line (read on to its end then).
LINE_TAIL = 64 << 10


def line_blocks_at(
    src: Source, offsets: np.ndarray, lines: int, last_read: bool = False
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The lines of a JSON Lines input that start at ``offsets`` (ascending byte offsets in
    the decompressed stream), ``lines`` of them at a time, each time as one block: ``(block,
    starts)``, the lines back to back (uint8), each with its line break (the stream's last line
    is given one when it has none), and where each begins, then the block's length
    (int64[k + 1]): what :meth:`~neardup.io.jsonl_blocks.BlockParser.parse_block` reads. A
    block is valid until the next one is asked for (:class:`~neardup.io.jsonl_blocks.LineGather`
    uses its buffer again).

    A plain file is read in runs of nearby lines, one read a run into one buffer
    (:data:`COALESCE_GAP`, :data:`COALESCE_BYTES`, :data:`LINE_TAIL`); a compressed one is
    decompressed again up to the last offset, in blocks of whole lines. Either way the wanted
    lines are copied out of what was read by a compiled loop, without a Python object a line.
    ValueError when a compressed input ends before an offset (it changed). O(bytes read).

    With ``last_read`` (the caller will not read these lines again), the operating system is
    told that it may drop the plain file's pages read from its page cache
    (``POSIX_FADV_DONTNEED``), to leave the cache to the files that will be read again.

    Example:
        >>> import tempfile, pathlib
        >>> from neardup.io.files import INPUT_FORMATS
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.jsonl"
        >>> _ = p.write_text('{"a": 1}\\n{"b": 2}\\n{"c": 3}')
        >>> src = resolve_input(p, None, INPUT_FORMATS)
        >>> [(bytes(b), s.tolist()) for b, s in line_blocks_at(src, np.array([9, 18]), 1)]
        [(b'{"b": 2}\\n', [0, 9]), (b'{"c": 3}\\n', [0, 9])]
    """
    if lines < 1:
        raise ValueError(f"lines must be at least 1, got {lines}")
    offsets = np.asarray(offsets, dtype=np.int64)
    with open_input(src) as fh:
        if src.compression is None:
            yield from _plain_blocks(fh, offsets, lines, last_read)
            return
        yield from _decompressed_blocks(fh, offsets, lines, src.display)


def _plain_blocks(
    fh: IO[bytes], offsets: np.ndarray, lines: int, last_read: bool
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`line_blocks_at` of a plain file: each run of nearby offsets (:func:`_run_ends`)
    read into one buffer used again, with :data:`LINE_TAIL` bytes more. O(bytes of the runs)."""
    gather = LineGather()
    buffer = np.empty(0, np.uint8)
    for first in range(0, offsets.shape[0], lines):
        part = offsets[first : first + lines]
        lo = 0
        for hi in _run_ends(part, COALESCE_GAP, COALESCE_BYTES).tolist():
            start = int(part[lo])
            span = int(part[hi - 1]) - start + LINE_TAIL
            if buffer.shape[0] < span:
                buffer = np.empty(span, np.uint8)
            fh.seek(start)
            got = fh.readinto(memoryview(buffer)[:span])
            done = lo + gather.add(buffer[:got], part[lo:hi] - start)
            # A run's last line may end past what was read (of an input that stays put, no
            # other line can): read on to its end.
            for offset in part[done:hi].tolist():
                fh.seek(offset)
                gather.add_line(fh.readline())
            if last_read and hasattr(os, "posix_fadvise"):
                # Up to the end of the run's last line, as copied or as read on.
                end = int(part[hi - 1]) + gather.last_line_bytes if done == hi else fh.tell()
                os.posix_fadvise(fh.fileno(), start, end - start, os.POSIX_FADV_DONTNEED)
            lo = hi
        yield gather.take()


def _decompressed_blocks(
    fh: IO[bytes], offsets: np.ndarray, lines: int, display: str
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`line_blocks_at` of a stream read in blocks of whole lines
    (:func:`~neardup.io.jsonl_blocks.line_blocks`), each block's wanted lines found where
    their offsets fall in it. O(bytes up to the last offset)."""
    gather = LineGather()
    taken, position = 0, 0
    for block in line_blocks(fh):
        end = position + len(block)
        stop = taken + int(np.searchsorted(offsets[taken:], end))
        buf = np.frombuffer(block, dtype=np.uint8)
        while taken < stop:
            upto = min(stop, (taken // lines + 1) * lines)
            starts = offsets[taken:upto] - position
            done = gather.add(buf, starts)
            if done < upto - taken:  # the stream's last line, without a break
                gather.add_line(bytes(buf[starts[done] :]))
            taken = upto
            if taken % lines == 0 or taken == offsets.shape[0]:
                yield gather.take()
        if taken == offsets.shape[0]:
            return
        position = end
    if taken < offsets.shape[0]:
        raise ValueError(
            f"{display} ended before byte {int(offsets[taken])}, where a line was read before: "
            "the input changed"
        )


@njit(cache=True, nogil=True)
def _run_ends(offsets, gap, most):
    """Where each run of ``offsets`` (ascending) ends: a run goes on while the next offset is
    at most ``gap`` bytes past the one before and ``most`` past the run's first."""
    ends = np.empty(offsets.shape[0], np.int64)
    runs = 0
    i = 0
    while i < offsets.shape[0]:
        j = i + 1
        while (
            j < offsets.shape[0]
            and offsets[j] - offsets[j - 1] <= gap
            and offsets[j] - offsets[i] <= most
        ):
            j += 1
        ends[runs] = j
        runs += 1
        i = j
    return ends[:runs]


def rows_by_file(files: np.ndarray) -> Iterator[tuple[int, slice | np.ndarray]]:
    """``(file, rows)`` for each input file named in ``files`` (the file index of each row),
    in ascending file order: ``rows`` a slice when the file's rows are one run (rows in
    reading order, as positions ascend), else their indices. O(rows), no index array for runs.

    Example:
        >>> [(f, r) for f, r in rows_by_file(np.array([0, 0, 2]))]
        [(0, slice(0, 2, None)), (2, slice(2, 3, None))]
    """
    if files.shape[0] and bool(np.all(files[1:] >= files[:-1])):
        starts = np.r_[0, np.flatnonzero(files[1:] != files[:-1]) + 1, files.shape[0]].tolist()
        for first, stop in zip(starts[:-1], starts[1:]):
            yield int(files[first]), slice(first, stop)
        return
    for index in np.unique(files).tolist():
        yield index, np.flatnonzero(files == index)


# --------------------------------------------------------------------------------------------
# JSON Lines
# --------------------------------------------------------------------------------------------

_raw_decode = json.JSONDecoder().raw_decode


def parse_json_line(s: str) -> Any:
    """``json.loads`` of one line, minus its per-call overhead in the common case: the same
    value, or the same ``ValueError``. O(len(s)).

    Example:
        >>> parse_json_line('{"id": 1}\\n')
        {'id': 1}
    """
    try:
        obj, end = _raw_decode(s)
        if end == len(s) or s[end:].isspace():
            return obj
    except (ValueError, RecursionError):
        pass
    # Leading whitespace, trailing data or a real error: json.loads has the exact message.
    return json.loads(s)


def json_object_line(s: str, line: int) -> dict | BadRow:
    """The JSON object of line ``line`` of a JSON Lines input (decoded, its BOM removed, with
    or without its line ending), or the :class:`~neardup.io.rows.BadRow` of a line that is not
    JSON ("malformed JSON", with :func:`json.loads`'s message) or not an object. Every JSON
    Lines reader, on every engine, reports its lines by this rule. O(len(s)).

    Example:
        >>> json_object_line('{"id": 1}\\n', 1), json_object_line("[1]", 2).detail
        ({'id': 1}, 'got array')
    """
    # Without its ending, so that json.loads places an error the same way whether the reader
    # kept the ending (a file read here) or not (Spark's text source).
    s = s.rstrip("\r\n")
    try:
        obj = parse_json_line(s)
    except (ValueError, RecursionError) as e:
        detail = str(e)
        if line == 1 and s.lstrip().startswith("["):
            detail += "; JSON input must be JSON Lines: one object per line, not an array"
        return BadRow(None, "malformed JSON", detail)
    if type(obj) is not dict:
        return BadRow(None, "not a JSON object", f"got {json_type_name(obj)}")
    return obj


_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def fast_json(raw: bytes, whole_record: bool) -> Any:
    """orjson's parse of one JSON line, where it gives what :func:`json.loads` gives.

    orjson reads integers past 64 bits as floats; the standard library keeps them exact. Where
    that could matter (the whole record is kept, or a top-level value came back a float) a line
    holding a run of 19 digits is refused here (``JSONDecodeError``), so the caller's standard
    path (:func:`parse_json_line`) reads it. O(len(raw)).

    Example:
        >>> fast_json(b'{"id": "a", "n": 2}', whole_record=True)
        {'id': 'a', 'n': 2}
    """
    obj = orjson.loads(raw)
    # ``float in map(type, ...)`` runs in C, at half the cost of a generator (once a line).
    if (whole_record or (type(obj) is dict and float in map(type, obj.values()))) and (
        _LONG_NUMBER.search(raw)
    ):
        raise orjson.JSONDecodeError("long number", raw.decode("utf-8", "replace"), 0)
    return obj


# --------------------------------------------------------------------------------------------
# CSV and TSV
# --------------------------------------------------------------------------------------------


def _raise_csv_limit() -> None:
    # Documents can be far longer than the csv module's default 128 KiB field limit.
    if csv.field_size_limit() < 2**31 - 1:
        csv.field_size_limit(2**31 - 1)


def _decoded_lines(fh: IO[bytes], path: str, bad_lines: list[int] | deque[int]) -> Iterator[str]:
    """Decoded lines for the csv module; undecodable line numbers go to ``bad_lines``.

    Such lines are still passed on (with surrogate escapes) so the csv parser keeps its place
    inside multi-line quoted fields; the caller drops the record that contains them.
    """
    for n, raw in iter_lines(fh, path):
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError:
            bad_lines.append(n)
            s = raw.decode("utf-8", "surrogateescape")
        if n == 1 and s.startswith("\ufeff"):
            s = s[1:]
        yield s


def delimited_rows(src: Source, rows: RowChecks) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of a CSV or TSV source (by ``src.fmt``): its header first, then each
    well-formed row, numbered by the physical line where it starts. Bad rows go to
    ``rows.bad``; blank lines are skipped; an empty file yields nothing. O(size of the file).

    Example:
        >>> import tempfile, pathlib
        >>> from neardup.io.files import INPUT_FORMATS
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
        >>> _ = p.write_text('id\\ttext\\n1\\ta\\\\tb "c"\\n')
        >>> list(delimited_rows(resolve_input(p, None, INPUT_FORMATS), RowChecks("raise")))
        [(1, ['id', 'text']), (2, ['1', 'a\\tb "c"'])]
    """
    return _tsv_rows(src, rows) if src.fmt == "tsv" else _csv_rows(src, rows)


class _CsvLines:
    """The decoded lines of a CSV source for the csv module (:meth:`feed`), keeping in
    ``record`` those of the record being parsed (the caller clears it before each), so that the
    lines after a bad record's first one can be fed again (:meth:`again_after_first`)."""

    __slots__ = ("_lines", "_again", "record")

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._again: list[str] = []  # lines to feed again, the next one last
        self.record: list[str] = []

    def feed(self) -> Iterator[str]:
        """The lines to feed again, then those not read yet (a fresh iterator after each
        :meth:`again_after_first`: a csv reader that reached the end of the file is done)."""
        record, again = self.record, self._again
        while again:
            text = again.pop()
            record.append(text)
            yield text
        for text in self._lines:
            record.append(text)
            yield text

    def again_after_first(self) -> None:
        self._again.extend(reversed(self.record[1:]))


def _csv_rows(src: Source, rows: RowChecks) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of a CSV source (RFC 4180, the csv module with ``strict=True``): its
    header first, then each well-formed row, numbered by the physical line where it starts.

    Bad rows go to ``rows.bad`` (which raises or counts them) with that line: a row the csv
    module refuses (a quoted field that never closes before the end of the file, a closing
    quote followed by text), one holding invalid UTF-8, one whose field count differs from the
    header's. A quoted field may hold newlines (the row then spans lines); a bad row that spans
    lines did so because a quote opened on its first line and ran past it, so it is reported
    at that line and parsing resumes on the next one: a stray quote costs its own row, not the
    rows it swallowed. Blank lines are skipped; an empty file yields nothing. O(size of the
    file): only the lines of a bad row that spans lines are parsed a second time.
    """
    path = src.display
    _raise_csv_limit()
    with open_input(src) as fh:
        bad_lines: deque[int] = deque()
        lines = _CsvLines(_decoded_lines(fh, path, bad_lines))
        record = lines.record
        reader = csv.reader(lines.feed(), strict=True)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(path, 1, None, "malformed CSV header", str(e)) from e
        if bad_lines:
            raise InputError(path, bad_lines[0], None, "invalid UTF-8", "in the header")
        yield 1, header
        width = len(header)
        start = len(record) + 1  # the line where the next record starts
        while True:
            record.clear()
            try:
                row = next(reader)
                error = None
            except StopIteration:
                break
            except csv.Error as e:
                row, error = [], e
            end = start + len(record) - 1
            first, start = start, end + 1
            if error is not None or (row and len(row) != width):
                if error is None:
                    detail = f"expected {width} fields as in the header, got {len(row)}"
                    if end != first:
                        detail += (
                            f"; a quoted field opened on this line runs to line {end}"
                            " (a stray quote?)"
                        )
                elif str(error) == "unexpected end of data":
                    detail = "a quoted field opened on this line never closes (the file ends)"
                elif end == first:
                    detail = str(error)
                else:
                    detail = (
                        f"{error} on line {end}, inside a quoted field opened on this line"
                        " (a stray quote?)"
                    )
                if end != first:
                    # Read again from the line after the quote: the rows it swallowed.
                    lines.again_after_first()
                    reader = csv.reader(lines.feed(), strict=True)
                    start = first + 1
                while bad_lines and bad_lines[0] < first:
                    bad_lines.popleft()
                if error is None and bad_lines and bad_lines[0] == first:
                    rows.bad(path, first, None, "invalid UTF-8")
                else:
                    rows.bad(path, first, None, "malformed CSV row", detail)
                continue
            while bad_lines and bad_lines[0] < first:
                bad_lines.popleft()
            if bad_lines and bad_lines[0] <= end:
                # Drop the record if any of its physical lines failed to decode.
                rows.bad(path, bad_lines[0], None, "invalid UTF-8")
                continue
            if not row:
                continue  # blank line
            yield first, row


def _tsv_rows(src: Source, rows: RowChecks) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of a TSV source: its header first, then each well-formed row.

    TSV is literal: one row per line, fields split at tabs, no quoting (``"`` is an ordinary
    character), each field :func:`tsv_unescape`-d (``\\t`` ``\\n`` ``\\r`` ``\\\\``), as
    :func:`~neardup.io.write_table` and :func:`~neardup.io.write_records` write it. A line
    ending ``\\r\\n`` loses both. A row holding invalid UTF-8 or whose field count differs from
    the header's goes to ``rows.bad`` with its line; blank lines are skipped; an empty file
    yields nothing. O(size of the file).
    """
    path = src.display
    with open_input(src) as fh:
        bad_lines: list[int] = []
        width = 0
        for n, line in enumerate(_decoded_lines(fh, path, bad_lines), 1):
            if bad_lines and bad_lines[-1] == n:
                if n == 1:
                    raise InputError(path, 1, None, "invalid UTF-8", "in the header")
                rows.bad(path, n, None, "invalid UTF-8")
                continue
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            fields = line.split("\t")
            if "\\" in line:
                fields = [tsv_unescape(f) for f in fields]
            if n == 1:
                width = len(fields)
                yield 1, fields
                continue
            if not line:
                continue  # blank line
            if len(fields) != width:
                rows.bad(
                    path,
                    n,
                    None,
                    "malformed TSV row",
                    f"expected {width} fields as in the header, got {len(fields)}",
                )
                continue
            yield n, fields


def read_tsv_table(path: str | Path) -> pa.Table:
    """A TSV file (optionally ``.gz`` / ``.zst``) as a table of string columns, by the rules
    :func:`~neardup.io.read_documents` reads TSV with: the first line names the columns, then
    one row per line, fields split at tabs, no quoting, every cell and name
    :func:`tsv_unescape`-d, blank lines skipped, empty cells "" (never null).

    A row whose field count differs from the header's, or that holds invalid UTF-8, raises
    :class:`InputError` naming the file and the line; so does an empty file. Cost: O(file size),
    parsed by Arrow; when Arrow refuses the file, the row reader reads it again to find the bad
    line (Python, about a microsecond a row). Memory O(table).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
        >>> _ = p.write_text('id\\tnote\\na\\t"q"\\\\tx\\n')
        >>> read_tsv_table(p).to_pylist()
        [{'id': 'a', 'note': '"q"\\tx'}]
    """
    import pyarrow.csv as pacsv

    src = resolve_input(path, "tsv", ("tsv",))
    rows = RowChecks("raise")
    rows.start_file(src.display)
    lines = _tsv_rows(src, rows)
    try:
        header = next(lines, (1, None))[1]
    finally:
        lines.close()
    if header is None:
        raise InputError(src.display, None, None, "empty TSV file", "no header line")
    names = [f"c{i}" for i in range(len(header))]
    try:
        with open_input(src) as fh:
            table = pacsv.read_csv(
                fh,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
                parse_options=pacsv.ParseOptions(
                    delimiter="\t",
                    quote_char=False,
                    double_quote=False,
                    escape_char=False,
                    newlines_in_values=False,
                    ignore_empty_lines=True,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=dict.fromkeys(names, pa.string()),
                    strings_can_be_null=False,
                ),
            )
        columns = [table.column(i).combine_chunks() for i in range(len(names))]
    except (pa.ArrowException, *UNREADABLE_ERRORS):
        # Arrow's messages name no line: the row reader reports the bad row (or reads the file,
        # if only Arrow refused it).
        values: list[list[str]] = [[] for _ in names]
        lines = _tsv_rows(src, rows)
        next(lines)
        for _, fields in lines:
            for column, value in zip(values, fields):
                column.append(value)
        return pa.table([pa.array(v, pa.string()) for v in values], names=header)
    for i, column in enumerate(columns):
        if len(column) and pc.any(pc.match_substring(column, "\\")).as_py():
            columns[i] = pa.array([tsv_unescape(s) for s in column.to_pylist()], pa.string())
    return pa.table(columns, names=header)


# --------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------


@contextmanager
def open_parquet(src: Source) -> Iterator[pq.ParquetFile]:
    """The Parquet file of a source (stdin is read whole first); an :class:`InputError` if
    it is not one, whatever ``on_error`` says. Opening reads the footer only.

    Example:
        >>> import tempfile, pathlib
        >>> from neardup.io.files import INPUT_FORMATS
        >>> import pyarrow.parquet as pq
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"id": ["a"]}), p)
        >>> with open_parquet(resolve_input(p, None, INPUT_FORMATS)) as pf:
        ...     pf.schema_arrow.names
        ['id']
    """
    import pyarrow.parquet as pq  # here: a run that reads no Parquet does not import it (12 ms)

    try:
        if src.path == "-":
            pf = pq.ParquetFile(io.BytesIO(stdin_binary().read()))
        else:
            pf = pq.ParquetFile(src.path)
    except (pa.ArrowException, OSError) as e:
        raise InputError(src.display, None, None, "not a readable Parquet file", str(e)) from e
    try:
        yield pf
    finally:
        pf.close()
