"""Writing tables and records: TSV, CSV, JSON Lines or Parquet, atomically and reproducibly.

:func:`write_table` writes result columns, vectorised with pyarrow (each value encoded as its
text cell, then each row joined, a chunk of rows at a time); :func:`write_records` writes whole
input rows back (for ``--keep``). Both write through :func:`~neardup.io.atomic.atomic_output`,
so the final name never holds a partial file, and the same data always gives the same bytes.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.tsv"
    >>> write_table(p, {"id": ["a", "b"], "n": [3, 1]})
    >>> p.read_text()
    'id\\tn\\na\\t3\\nb\\t1\\n'
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from neardup.io.atomic import atomic_output
from neardup.io.files import compressing, resolve_output
from neardup.io.values import short_repr, tsv_escape

if TYPE_CHECKING:
    import pyarrow.parquet as pq

#: Rows of a Parquet row group.
_WRITE_CHUNK_ROWS = 262_144
#: Rows of a text chunk encoded at once: bounds the intermediate string arrays (each cell and
#: each line a string: about 30 MB for 262,144 rows of GROUPS, 8 MB for these).
_TEXT_CHUNK_ROWS = 65_536
#: Threads encoding chunks of a text table ahead of the one being written.
_ENCODERS = 2


class _TsvWriter:
    """``writerow`` like :func:`csv.writer`'s, in the TSV rule: cells :func:`tsv_escape`-d,
    joined by tabs, one line per row."""

    def __init__(self, text: IO[str]) -> None:
        self._write = text.write

    def writerow(self, cells: Iterable[Any]) -> None:
        self._write("\t".join([tsv_escape(str(c)) for c in cells]) + "\n")


def _prepare_columns(columns: Mapping[str, Any]) -> tuple[list[str], list[Any], int]:
    if not isinstance(columns, Mapping) or not columns:
        raise ValueError("columns must be a non-empty mapping of column name to values")
    names, values = [], []
    for name, col in columns.items():
        if not isinstance(name, str):
            raise TypeError(f"column names must be strings, got {name!r}")
        if hasattr(col, "to_numpy") and not isinstance(
            col, (pa.Array, pa.ChunkedArray, np.ndarray)
        ):
            col = col.to_numpy()  # pandas Series / Index
        elif not isinstance(col, (pa.Array, pa.ChunkedArray, np.ndarray, list, tuple, range)):
            col = list(col)
        if isinstance(col, np.ndarray) and col.ndim != 1:
            raise ValueError(f"column {name!r} must be 1-dimensional, got shape {col.shape}")
        names.append(name)
        values.append(col)
    lengths = {len(c) for c in values}
    if len(lengths) != 1:
        sizes = ", ".join(f"{n}={len(c)}" for n, c in zip(names, values))
        raise ValueError(f"all columns must have the same length, got {sizes}")
    return names, values, lengths.pop()


def _to_arrow(name: str, col: Any, start: int, stop: int) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.slice(start, stop - start).combine_chunks()
    if isinstance(col, pa.Array):
        return col.slice(start, stop - start)
    part = col[start:stop]
    try:
        try:
            return pa.array(part)
        except (OverflowError, pa.ArrowInvalid):
            # Python ints above 2**63 - 1 only fit uint64.
            return pa.array(part, type=pa.uint64())
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise TypeError(
            f"column {name!r}: cannot convert rows {start}..{stop - 1} to a table column: {e}"
        ) from e


_LARGE = pa.large_string()


def _lit(s: str) -> pa.Scalar:
    return pa.scalar(s, _LARGE)


def _any(mask: pa.Array) -> bool:
    return bool(pc.any(mask).as_py())


def _holds_any(s: pa.Array, codes: bytes, below: int = 0) -> bool:
    """Whether the strings of ``s`` (large_string) hold any of the ASCII bytes ``codes`` or a
    byte below ``below``, read from its UTF-8 data: no multi-byte sequence holds an ASCII byte,
    so the test is exact. A pass over the bytes a code, where a regular expression over the
    strings took about 40 times as long. O(bytes × codes)."""
    data = np.frombuffer(_string_bytes(s), np.uint8)
    return bool((below and (data < below).any()) or any((data == c).any() for c in codes))


def _cells(name: str, arr: pa.Array, fmt: str) -> pa.Array:
    """Each value as its encoded text cell (large_string, no nulls)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    null_text = "null" if fmt == "jsonl" else ""
    if pa.types.is_null(t):
        return pa.array([null_text] * len(arr), _LARGE)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return _number_cells(arr, null_text)
    if pa.types.is_floating(t):
        s = arr.cast(_LARGE)
        # Arrow prints 1.0 as "1"; keep it recognisably a float, as Python does.
        s = pc.if_else(
            pc.match_substring_regex(s, r"^-?[0-9]+$"),
            pc.binary_join_element_wise(s, _lit(".0"), _lit("")),
            s,
        )
        if fmt == "jsonl":
            s = pc.if_else(pc.is_finite(arr), s, _lit("null"))
        return pc.fill_null(s, _lit(null_text))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        try:
            s = arr.cast(_LARGE)
        except pa.ArrowInvalid as e:
            raise ValueError(f"column {name!r} holds bytes that are not UTF-8") from e
    elif (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_temporal(t)
        or pa.types.is_decimal(t)
    ):
        s = arr.cast(_LARGE)
    else:
        raise TypeError(f"column {name!r} has type {t}, which a text table cannot hold")
    if fmt == "tsv":
        if _holds_any(s, b"\\\t\n\r"):
            s = pc.replace_substring(s, "\\", "\\\\")
            s = pc.replace_substring(s, "\t", "\\t")
            s = pc.replace_substring(s, "\n", "\\n")
            s = pc.replace_substring(s, "\r", "\\r")
        return pc.fill_null(s, _lit(""))
    if fmt == "csv":
        if _holds_any(s, b',"\r\n'):
            need = pc.match_substring_regex(s, r'[,"\r\n]')
            quoted = pc.binary_join_element_wise(
                _lit('"'), pc.replace_substring(s, '"', '""'), _lit('"'), _lit("")
            )
            s = pc.if_else(need, quoted, s)
        return pc.fill_null(s, _lit(""))
    # JSON string literal
    if _holds_any(s, b'\\"', below=0x20):
        s = pc.replace_substring(s, "\\", "\\\\")
        s = pc.replace_substring(s, '"', '\\"')
        if _holds_any(s, b"", below=0x20):
            for code in range(32):
                ch = chr(code)
                if _any(pc.match_substring(s, ch)):
                    s = pc.replace_substring(s, ch, json.dumps(ch)[1:-1])
    s = pc.binary_join_element_wise(_lit('"'), s, _lit('"'), _lit(""))
    return pc.fill_null(s, _lit("null"))


def _number_cells(arr: pa.Array, null_text: str) -> pa.Array:
    """The cells of a boolean or integer column (large_string): what Arrow's cast to string
    gives (``true``/``false``, decimal digits with ``-`` before a negative number), nulls as
    ``null_text``, laid out by a compiled loop that releases the GIL: the casts took as long
    as the rest of a chunk of GROUPS. O(rows)."""
    n = len(arr)
    # The validity and boolean bits unpacked from their buffers: Arrow's to_numpy of a
    # boolean array imports pandas (0.3 s of a run's writing).
    valid = _bits(arr.buffers()[0], arr.offset, n) if arr.null_count else np.zeros(0, np.bool_)
    null = np.frombuffer(null_text.encode(), np.uint8)
    if pa.types.is_boolean(arr.type):
        offsets, data = _bool_cells(_bits(arr.buffers()[1], arr.offset, n), valid, null)
    else:
        unsigned = pa.types.is_unsigned_integer(arr.type)
        width = np.dtype(f"{'u' if unsigned else 'i'}{arr.type.bit_width // 8}")
        values = np.frombuffer(arr.buffers()[1], width)[arr.offset : arr.offset + n]
        offsets, data = _decimal_cells(
            values.astype(np.uint64 if unsigned else np.int64, copy=False), valid, null
        )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _bits(bitmap: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Bits ``offset..offset+n-1`` of an Arrow bitmap (least significant bit first), as
    bool. O(n)."""
    packed = np.frombuffer(bitmap, np.uint8)[offset // 8 : (offset + n + 7) // 8 + 1]
    start = offset % 8
    return np.unpackbits(packed, bitorder="little")[start : start + n].view(np.bool_)


@njit(inline="always")
def _null_at(valid, i):
    """Whether row ``i`` is null by ``valid`` (bool; empty: no row is)."""
    return valid.shape[0] > 0 and not valid[i]


@njit(inline="always")
def _magnitude(v):
    """|v| as uint64: the magnitude of the most negative int64 does not fit an int64."""
    return np.uint64(0) - np.uint64(v) if v < 0 else np.uint64(v)


@njit(inline="always")
def _digits(magnitude):
    """The decimal digits of ``magnitude`` (uint64 ≥ 0): 1 to 20."""
    # uint64 against uint64: numba does uint64 with a signed literal in float64, which rounds
    # past 2**53 (9999999999999999 counted 17 digits).
    ten = np.uint64(10)
    count = 1
    while magnitude >= ten:
        magnitude //= ten
        count += 1
    return count


@njit(cache=True, nogil=True)
def _decimal_cells(values, valid, null):
    """``(offsets, data)`` of the decimal text of each of ``values`` (int64 or uint64), or of
    ``null`` (uint8) where ``valid`` (bool; empty: all valid) is False. O(rows × digits)."""
    n = values.shape[0]
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    for i in range(n):
        if _null_at(valid, i):
            size = null.shape[0]
        else:
            size = _digits(_magnitude(values[i])) + (values[i] < 0)
        offsets[i + 1] = offsets[i] + size
    data = np.empty(offsets[n], np.uint8)
    for i in range(n):
        if _null_at(valid, i):
            data[offsets[i] : offsets[i + 1]] = null
            continue
        v = values[i]
        m = _magnitude(v)
        p = offsets[i + 1]
        while True:
            p -= 1
            data[p] = np.uint8(48 + m % np.uint64(10))
            m //= np.uint64(10)
            if m == 0:
                break
        if v < 0:
            data[p - 1] = 45  # "-"
    return offsets, data


_TRUE = np.frombuffer(b"true", np.uint8)
_FALSE = np.frombuffer(b"false", np.uint8)


@njit(cache=True, nogil=True)
def _bool_cells(bits, valid, null):
    """``(offsets, data)`` of ``true`` or ``false`` for each of ``bits``, or of ``null`` where
    ``valid`` (empty: all valid) is False. O(rows)."""
    n = bits.shape[0]
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    for i in range(n):
        if _null_at(valid, i):
            offsets[i + 1] = offsets[i] + null.shape[0]
        else:
            offsets[i + 1] = offsets[i] + (_TRUE.shape[0] if bits[i] else _FALSE.shape[0])
    data = np.empty(offsets[n], np.uint8)
    for i in range(n):
        p = offsets[i]
        if _null_at(valid, i):
            data[p : offsets[i + 1]] = null
            continue
        word = _TRUE if bits[i] else _FALSE
        for j in range(word.shape[0]):
            data[p + j] = word[j]
    return offsets, data


def _header_cell(name: str, fmt: str) -> str:
    if fmt == "tsv":
        return tsv_escape(name)
    if any(c in name for c in ',"\r\n'):
        return '"' + name.replace('"', '""') + '"'
    return name


def _string_bytes(arr: pa.Array) -> memoryview | bytes:
    """The concatenated UTF-8 data of a large_string array, without copying."""
    if len(arr) == 0:
        return b""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    begin, end = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    return memoryview(arr.buffers()[2])[begin:end]


def _encode_chunk(names: list[str], arrays: list[pa.Array], fmt: str) -> memoryview | bytes:
    cells = [_cells(name, arr, fmt) for name, arr in zip(names, arrays)]
    if fmt != "jsonl":
        if len(cells) == 1 and fmt == "csv":
            # A lone empty field would read back as a blank line.
            cells = [pc.if_else(pc.equal(cells[0], _lit("")), _lit('""'), cells[0])]
        return memoryview(_joined_lines(cells, b"\t" if fmt == "tsv" else b","))
    parts: list[Any] = []
    for i, (name, cell) in enumerate(zip(names, cells)):
        parts.append(_lit(("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":"))
        parts.append(cell)
    parts.append(_lit("}\n"))
    return _string_bytes(pc.binary_join_element_wise(*parts, _lit("")))


def _joined_lines(cells: list[pa.Array], sep: bytes) -> np.ndarray:
    """The rows' lines (uint8): each row's cells (large_string arrays of one length, no
    nulls) joined by ``sep``, ended by ``\\n``. Sized from the offsets, then laid out row
    after row by a compiled loop (without the GIL, so the encoding threads overlap), where two
    Arrow joins made a string a row twice, and a pass a column wrote each row's line in five
    places. O(bytes)."""
    buffers = [c.buffers() for c in cells]
    offsets = tuple(
        _read_only(np.frombuffer(b[1], np.int64)[c.offset : c.offset + len(c) + 1])
        for c, b in zip(cells, buffers)
    )
    data = tuple(_read_only(np.frombuffer(b[2], np.uint8)) if b[2] else _NO_BYTES for b in buffers)
    size = sum(int(o[-1] - o[0]) for o in offsets) + len(cells) * len(cells[0])
    return _laid_out_rows(offsets, data, sep[0], size)


def _read_only(values: np.ndarray) -> np.ndarray:
    """A read-only view of ``values``. The compiled loop takes the columns as a tuple of
    arrays of one type, and Arrow's buffers are writable or not (a mapped file's are not):
    each a different type to numba."""
    view = values.view()
    view.flags.writeable = False
    return view


_NO_BYTES = _read_only(np.zeros(0, np.uint8))


@njit(cache=True, nogil=True)
def _laid_out_rows(offsets, data, sep, size):
    """``size`` bytes: for each row i, cell i of each column j (``data[j][offsets[j][i] :
    offsets[j][i + 1]]``) followed by the byte ``sep``, the last by a newline instead."""
    out = np.empty(size, np.uint8)
    last = len(offsets) - 1
    p = 0
    for i in range(offsets[0].shape[0] - 1):
        for j in range(last + 1):
            column = data[j]
            for q in range(offsets[j][i], offsets[j][i + 1]):
                out[p] = column[q]
                p += 1
            out[p] = sep if j < last else 10
            p += 1
    return out


def _encoded_chunk(
    names: list[str], values: list[Any], fmt: str, start: int, stop: int
) -> memoryview | bytes:
    arrays = [_to_arrow(name, col, start, stop) for name, col in zip(names, values)]
    return _encode_chunk(names, arrays, fmt)


def _encoded_chunks(
    names: list[str], values: list[Any], n: int, fmt: str
) -> Iterator[memoryview | bytes]:
    """The text of rows ``0..n-1``, chunk by chunk in order, each encoded on one of
    :data:`_ENCODERS` threads (Arrow's kernels release the GIL) while the caller writes the
    chunks before it: at most ``_ENCODERS + 1`` chunks exist at once. O(rows × columns)."""
    starts = range(0, n, _TEXT_CHUNK_ROWS)
    if len(starts) < 2:
        for start in starts:
            yield _encoded_chunk(names, values, fmt, start, min(n, start + _TEXT_CHUNK_ROWS))
        return
    with ThreadPoolExecutor(_ENCODERS) as pool:
        pending: deque[Future] = deque()
        for start in starts:
            stop = min(n, start + _TEXT_CHUNK_ROWS)
            pending.append(pool.submit(_encoded_chunk, names, values, fmt, start, stop))
            if len(pending) > _ENCODERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def write_table(
    path: str | Path,
    columns: Mapping[str, Sequence | np.ndarray],
    *,
    header: bool = True,
    output_format: str | None = None,
) -> None:
    """Write equal-length columns as a table, atomically and reproducibly.

    Args:
        path: output file; the format comes from the extension (``.tsv``, ``.csv``, ``.jsonl`` /
            ``.json`` / ``.ndjson``, ``.parquet``; text formats may end in ``.gz`` or ``.zst``)
            unless ``output_format`` names one. ``-`` is stdout (TSV unless ``output_format``).
        columns: column name → values (list, tuple, numpy array, pyarrow array, pandas Series),
            written in the given order. Values: strings, integers (uint64 stays exact), floats,
            booleans, None (null), dates/datetimes.
        header: write a header row (TSV and CSV only).
        output_format: ``tsv``, ``csv``, ``jsonl`` or ``parquet``, optionally ``.gz``/``.zst``.

    Encoding: integers in decimal (pass :func:`format_fingerprints` output for hex), booleans
    ``true``/``false``, floats like Python (``1.0``, ``nan``), nulls empty in TSV/CSV and
    ``null`` in JSON Lines (so are NaN and infinities there). **TSV is never quoted**; in every
    text value (and header name) ``\\`` → ``\\\\``, tab → ``\\t``, newline → ``\\n``, CR →
    ``\\r``, so each row is one line and :func:`read_fingerprints` reverses it for ``.tsv``
    files. CSV quotes (RFC 4180) only values holding ``,`` ``"`` CR or LF. JSON Lines keeps
    non-ASCII characters as they are.
    Parquet is zstd-compressed, with row groups of 262,144 rows.

    The file is written under a temporary name in the same directory and renamed when complete,
    so the final name never holds a partial file; the same columns always give the same bytes
    (gzip without name and mtime; Parquet without varying metadata).

    Cost: O(rows × columns) in vectorised Arrow kernels, text chunks encoded on two threads
    while the one before is written; memory O(chunk) beyond the inputs for text formats,
    O(table) for Parquet.

    Raises ``ValueError`` for an unknown format, columns of unequal length or no columns,
    ``TypeError`` for values Arrow cannot convert or nested (list/struct) values in a text format,
    ``FileNotFoundError`` if the output's directory does not exist.

    Example:
        >>> import tempfile, pathlib, numpy as np
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "fps.csv"
        >>> write_table(p, {"id": ["a", "b,c"], "fp": np.array([1, 2**64 - 1], np.uint64),
        ...                 "dup": [True, False]})
        >>> print(p.read_text(), end="")
        id,fp,dup
        a,1,true
        "b,c",18446744073709551615,false
    """
    with TableWriter(path, header=header, output_format=output_format) as writer:
        writer.write(columns)


class TableWriter:
    """Write a table piece by piece, in bounded memory: the same bytes as :func:`write_table`
    of all the pieces joined (see it for the formats, encodings and errors), written
    atomically when the ``with`` block ends without an exception.

    Each :meth:`write` takes equal-length columns with the first piece's names, in order.
    Text formats are encoded and written at once; Parquet rows wait until they fill a row
    group of 262,144 rows (or the end), so memory is O(piece + row group), except for Parquet
    on stdout, which is written whole at the end. A Parquet column's type is that of its
    values up to the first row group. ``write_table`` is this with one piece.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.tsv"
        >>> with TableWriter(p) as writer:
        ...     writer.write({"id": ["a"], "n": [3]})
        ...     writer.write({"id": ["b"], "n": [1]})
        >>> p.read_text()
        'id\\tn\\na\\t3\\nb\\t1\\n'
    """

    def __init__(
        self, path: str | Path, *, header: bool = True, output_format: str | None = None
    ) -> None:
        self._target, self._fmt, self._compression = resolve_output(path, output_format)
        self._header = header
        self._names: list[str] | None = None
        self._stack = ExitStack()
        self._out: IO[bytes] | None = None
        self._parquet: pq.ParquetWriter | None = None
        self._sink: pa.BufferOutputStream | None = None
        self._waiting: list[pa.Table] = []
        self._waiting_rows = 0

    def __enter__(self) -> TableWriter:
        try:
            fh = self._stack.enter_context(atomic_output(self._target))
            if self._fmt == "parquet":
                self._out = fh
            else:
                self._out = self._stack.enter_context(compressing(fh, self._compression))
        except BaseException:
            self._stack.close()
            raise
        return self

    def write(self, columns: Mapping[str, Sequence | np.ndarray]) -> None:
        """Append the rows of ``columns`` (as in :func:`write_table`). O(rows × columns)."""
        names, values, n = _prepare_columns(columns)
        if self._names is None:
            self._start(names)
        elif names != self._names:
            raise ValueError(f"columns must be {self._names} as in the first piece, got {names}")
        if self._fmt != "parquet":
            for chunk in _encoded_chunks(names, values, n, self._fmt):
                self._out.write(chunk)
            return
        if n == 0 and (self._waiting or self._parquet is not None):
            return  # the types are set; an empty piece after rows would add an empty row group
        arrays = [_to_arrow(name, col, 0, n) for name, col in zip(names, values)]
        table = pa.Table.from_arrays(arrays, names=names)
        if self._parquet is not None:
            table = table.cast(self._parquet.schema)
        self._waiting.append(table)
        self._waiting_rows += n
        while self._waiting_rows >= _WRITE_CHUNK_ROWS:
            self._write_row_group(_WRITE_CHUNK_ROWS)

    def _start(self, names: list[str]) -> None:
        self._names = names
        if self._header and self._fmt in ("tsv", "csv"):
            sep = "\t" if self._fmt == "tsv" else ","
            self._out.write((sep.join(_header_cell(c, self._fmt) for c in names) + "\n").encode())

    def _write_row_group(self, rows: int) -> None:
        # One chunk a column, as write_table of one table writes it: pages follow chunks.
        # Until the first row group the pieces' types may still widen (a piece of empty or
        # null values infers the null type).
        waiting = pa.concat_tables(self._waiting, promote_options="default").combine_chunks()
        if self._parquet is None:
            import pyarrow.parquet as pq  # here: a text output does not import it (12 ms)

            if self._target == "-":
                self._sink = pa.BufferOutputStream()
            self._parquet = pq.ParquetWriter(
                self._sink if self._sink is not None else self._out,
                waiting.schema,
                compression="zstd",
            )
        self._parquet.write_table(waiting.slice(0, rows), row_group_size=_WRITE_CHUNK_ROWS)
        rest = waiting.slice(rows)
        self._waiting = [rest] if rest.num_rows else []
        self._waiting_rows = rest.num_rows

    def _close_parquet(self, failed: bool) -> None:
        """Write the rows waiting and the footer; after a failure only close the writer (into
        the file about to be discarded, rather than when it is collected)."""
        if failed:
            if self._parquet is not None:
                self._parquet.close()
            return
        if self._parquet is None and not self._waiting:  # nothing written: no columns
            self._waiting = [pa.table({})]
        if self._waiting:
            self._write_row_group(self._waiting_rows)
        self._parquet.close()
        if self._sink is not None:
            self._out.write(self._sink.getvalue())

    def __exit__(self, *exc_info) -> bool | None:
        # The atomic output keeps the file only when everything, the Parquet footer
        # included, was written without an exception.
        try:
            if self._fmt == "parquet":
                self._close_parquet(failed=exc_info[0] is not None)
        except BaseException:
            if not self._stack.__exit__(*sys.exc_info()):
                raise
            return None
        return self._stack.__exit__(*exc_info)


def _write_parquet(table: pa.Table, fh: IO[bytes], target: str) -> None:
    import pyarrow.parquet as pq

    if target == "-":
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd", row_group_size=_WRITE_CHUNK_ROWS)
        fh.write(sink.getvalue())
    else:
        pq.write_table(table, fh, compression="zstd", row_group_size=_WRITE_CHUNK_ROWS)


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise TypeError(
        f"a value of type {type(value).__name__} cannot be written as JSON: {short_repr(value)}"
    )


def _text_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


def write_records(
    path: str | Path, records: Iterable[dict], *, output_format: str | None = None
) -> None:
    """Write whole input rows (e.g. the originals kept by ``--keep``), atomically.

    The format follows the extension as in :func:`write_table` (``-`` = stdout, JSON Lines by
    default here). JSON Lines: one object per line, keys in their order, non-ASCII as is,
    dates as ISO 8601 strings; streams the records. CSV / TSV: the header is the union of the
    keys in first-seen order, missing values are empty, booleans ``true``/``false``, nested
    values as JSON; CSV is quoted as RFC 4180 says, TSV escaped like :func:`write_table`'s (never
    quoted), as :func:`read_documents` reads them back. Parquet: columns from the
    union of the keys, types inferred by pyarrow. CSV, TSV and Parquet hold all records in
    memory. Cost: O(total size of the records) Python work.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "kept.jsonl"
        >>> write_records(p, [{"id": "a", "text": "héllo", "n": 1}])
        >>> p.read_text(encoding="utf-8")
        '{"id": "a", "text": "héllo", "n": 1}\\n'
    """
    target = str(path)
    if target == "-" and output_format is None:
        output_format = "jsonl"
    target, fmt, compression = resolve_output(target, output_format)
    if fmt == "jsonl":
        with atomic_output(target) as fh, compressing(fh, compression) as out:
            chunk: list[str] = []
            for i, rec in enumerate(records):
                if not isinstance(rec, Mapping):
                    raise TypeError(f"record {i} must be a dict, got {type(rec).__name__}")
                chunk.append(json.dumps(rec, ensure_ascii=False, default=_json_default))
                if len(chunk) >= 10_000:
                    out.write(("\n".join(chunk) + "\n").encode("utf-8"))
                    chunk = []
            if chunk:
                out.write(("\n".join(chunk) + "\n").encode("utf-8"))
        return
    rows = list(records)
    keys: dict[str, None] = {}
    for i, rec in enumerate(rows):
        if not isinstance(rec, Mapping):
            raise TypeError(f"record {i} must be a dict, got {type(rec).__name__}")
        for k in rec:
            keys.setdefault(k, None)
    names = list(keys)
    if fmt == "parquet":
        data = {}
        for k in names:
            values = [rec.get(k) for rec in rows]
            try:
                data[k] = pa.array(values)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"field {k!r}: values cannot form one Parquet column: {e}") from e
        table = pa.table(data) if data else pa.table({})
        with atomic_output(target) as fh:
            _write_parquet(table, fh, target)
        return
    with atomic_output(target) as fh, compressing(fh, compression) as out:
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=False)  # type: ignore[arg-type]
        try:
            writer = _TsvWriter(text) if fmt == "tsv" else csv.writer(text, lineterminator="\n")
            if names:
                writer.writerow(names)
            for rec in rows:
                writer.writerow([_text_cell(rec.get(k)) for k in names])
            text.flush()
        finally:
            text.detach()


def disk_error(error: OSError, path: Path | str) -> OSError:
    """A one-line error for a failed write into the work folder (disk full, no permission);
    its ``errno`` is the original one."""
    code = error.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        message = (
            f"no space left on the device of the temp dir, writing {path}; free some "
            "space or point --tmp-dir to a larger disk"
        )
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        message = (
            f"cannot write to the temp dir: {path} is not writable (choose another with --tmp-dir)"
        )
    else:
        message = f"writing {path} in the temp dir failed: {error.strerror or error}"
    result = OSError(message)
    result.errno = code
    return result


@contextlib.contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn an OSError raised while writing ``path`` into :func:`disk_error`'s message."""
    try:
        yield
    except OSError as error:
        raise disk_error(error, path) from error


def pwrite_all(fd: int, values: np.ndarray, offset: int) -> None:
    """Write all of ``values`` (a contiguous array, its bytes) at byte ``offset`` of the open
    file ``fd``: positional writes until every byte is written (one may write fewer). It
    releases the GIL: threads may write other places of one file at once. O(bytes).

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/v.bin"
        >>> with open(path, "wb") as fh:
        ...     pwrite_all(fh.fileno(), np.array([7], np.uint32), 4)
        >>> np.fromfile(path, np.uint32).tolist()
        [0, 7]
    """
    data = memoryview(np.ascontiguousarray(values)).cast("B")
    while data:
        done = os.pwrite(fd, data, offset)
        data, offset = data[done:], offset + done
