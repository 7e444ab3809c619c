"""Readers and writers at the edge of the pipeline.

Reading documents
    :func:`read_documents` streams :class:`DocumentBatch` objects (ids, texts, timestamps,
    positions) from JSON Lines, CSV, TSV, Parquet, a directory of ``.txt`` files or stdin.
    ``.gz`` / ``.zst`` / ``.zstd`` files are decompressed on the fly.

Reading fingerprints
    :func:`read_fingerprints` loads ``id <TAB> fingerprint [<TAB> timestamp]`` rows (the seed
    map-reduce format) or the tables :func:`write_table` writes.

Writing
    :func:`write_table` writes result columns as TSV, CSV, JSON Lines or Parquet, vectorised with
    pyarrow, atomically and byte-for-byte reproducibly. :func:`write_records` writes whole input
    rows back (for ``--keep``). :func:`format_fingerprints` turns uint64 fingerprints into
    16-digit lowercase hex.

Timestamps
    Every document gets an int64 *ordering key* in microseconds since the Unix epoch (UTC):
    JSON numbers and numeric strings are seconds since the epoch (fractions allowed); other
    strings are ISO 8601 (``2024-01-02``, ``2024-01-02T03:04:05.5Z``, ``…+01:00``; a time without
    a zone is UTC); Parquet timestamp / date columns are converted exactly. Without a time field
    every key is 0 and callers break ties by input position. The value as it appeared in the
    input is kept in ``raw_timestamps`` so it can be written back unchanged.

Bad input
    Row-level problems raise :class:`InputError` (a ``ValueError``) naming the file, the line
    (1-based physical line; CSV/TSV count the header; Parquet counts rows) and the field. With
    ``on_error="skip"`` the row is dropped and counted in ``stats.skipped_reasons``. Problems that
    concern a whole file (a missing file, a header without the ID column, an unreadable Parquet
    file, corrupt compressed data) always raise.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "docs.jsonl").write_text('{"id": 1, "text": "a b c"}\\n{"id": 2, "text": "d"}\\n')
    >>> batch = read_documents([d / "docs.jsonl"]).read_all()
    >>> batch.ids, batch.texts, batch.positions.tolist()
    (['1', '2'], ['a b c', 'd'], [0, 1])
    >>> write_table(d / "out.tsv", {"id": batch.ids, "n": [3, 1]})
    >>> (d / "out.tsv").read_text()
    'id\\tn\\n1\\t3\\n2\\t1\\n'
"""

from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import io
import json
import math
import os
import re
import secrets
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import zstandard
from numba import njit

from neardup.hashing import xxh64_slice

__all__ = [
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "FINGERPRINT_FORMATS",
    "InputError",
    "ReadStats",
    "DocumentBatch",
    "DocumentReader",
    "FingerprintTable",
    "read_documents",
    "read_table",
    "read_fingerprints",
    "parse_fingerprint",
    "parse_timestamp",
    "write_table",
    "write_records",
    "read_tsv_table",
    "tsv_escape",
    "tsv_unescape",
    "format_fingerprints",
    "check_max_doc_bytes",
    "oversized_text",
    "DEFAULT_MAX_DOC_BYTES",
]

#: Input formats of :func:`read_documents` (``txt`` means a directory of ``*.txt`` files).
INPUT_FORMATS = ("jsonl", "csv", "tsv", "parquet", "txt")
#: Output formats of :func:`write_table` and :func:`write_records`.
OUTPUT_FORMATS = ("tsv", "csv", "jsonl", "parquet")
#: How :func:`read_fingerprints` reads a fingerprint written as a string.
FINGERPRINT_FORMATS = ("auto", "hex", "dec")
ON_ERROR = ("raise", "skip")
#: Default of ``max_doc_bytes`` / ``--max-doc-bytes``: a document's text may hold at most this
#: many bytes of UTF-8. Shingling costs about 10-20 bytes of memory per text byte, so one
#: 16 MiB document needs a few hundred MB; web pages and articles are far below it.
DEFAULT_MAX_DOC_BYTES = 16 << 20

_FORMAT_ALIASES = {
    "jsonl": "jsonl",
    "json": "jsonl",
    "ndjson": "jsonl",
    "csv": "csv",
    "tsv": "tsv",
    "parquet": "parquet",
    "txt": "txt",
}
_COMPRESSION_SUFFIXES = {"gz": "gzip", "zst": "zstd", "zstd": "zstd"}
_STDIN_NAME = "<stdin>"
# A document's location packs its input's index above a 48-bit row key (byte offset or row).
_KEY_BITS = 48
_KEY_MASK = (1 << _KEY_BITS) - 1

# Rows of the same dict key pack (file index, line) into one int: 40 bits of line.
_LINE_BITS = 40
_LINE_MASK = (1 << _LINE_BITS) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_U64_MAX = (1 << 64) - 1
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US_PER_DAY = 86_400_000_000

# Rows per vectorised write step: bounds the memory of the intermediate string arrays.
_WRITE_CHUNK_ROWS = 262_144
_READ_BUFFER = 1 << 20


# --------------------------------------------------------------------------------------------
# Errors and result types
# --------------------------------------------------------------------------------------------


class InputError(ValueError):
    """A bad input row (or file), located by file, line and field.

    Attributes:
        path: the file as given (``<stdin>`` for stdin).
        line: 1-based physical line (CSV/TSV include the header; Parquet: 1-based row), or None.
        field: the field involved, or None (e.g. malformed JSON).
        reason: a short category, the key used in ``ReadStats.skipped_reasons``
            (``"malformed JSON"``, ``"missing field 'text'"``, ``"duplicate id"``, …).
        detail: more information, or None.

    Example:
        >>> str(InputError("a.jsonl", 3, "text", "text not a string", "got number"))
        "a.jsonl, line 3, field 'text': text not a string (got number)"
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        field: str | None,
        reason: str,
        detail: str | None = None,
        unit: str = "line",
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.reason = reason
        self.detail = detail
        self.unit = unit
        where = self.path if line is None else f"{self.path}, {unit} {line}"
        if field is not None and f"'{field}'" not in reason:
            where += f", field '{field}'"
        message = f"{where}: {reason}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)

    def __reduce__(self):  # keeps the attributes when pickled across processes
        return (
            type(self),
            (self.path, self.line, self.field, self.reason, self.detail, self.unit),
        )


@dataclass
class ReadStats:
    """Counters of a read.

    Attributes:
        documents: rows accepted.
        bytes: UTF-8 bytes of the accepted texts (0 for fingerprint tables).
        skipped: rows dropped with ``on_error="skip"``.
        skipped_reasons: skipped rows per :attr:`InputError.reason`.
        files: files opened (each ``.txt`` file of a directory counts).
    """

    documents: int = 0
    bytes: int = 0
    skipped: int = 0
    skipped_reasons: Counter[str] = field(default_factory=Counter)
    files: int = 0


@dataclass
class DocumentBatch:
    """A batch of documents, in input order.

    Attributes:
        ids: document IDs as strings.
        texts: document texts.
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

    ids: list[str]
    texts: list[str]
    timestamps: np.ndarray
    raw_timestamps: list
    records: list[dict] | None
    positions: np.ndarray
    locations: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class FingerprintTable:
    """Fingerprint rows read by :func:`read_fingerprints`.

    Attributes:
        ids: document IDs (an Arrow string column: no Python object per row).
        fingerprints: uint64 fingerprints.
        timestamps: int64 ordering key in microseconds since the epoch (0 where absent).
        raw_timestamps: the timestamp values as given, as text (null where absent).
        stats: counters of the read (``bytes`` is 0).
    """

    ids: pa.ChunkedArray
    fingerprints: np.ndarray
    timestamps: np.ndarray
    raw_timestamps: pa.ChunkedArray
    stats: ReadStats

    def __len__(self) -> int:
        return len(self.ids)


# --------------------------------------------------------------------------------------------
# Value parsing
# --------------------------------------------------------------------------------------------

_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"(?:\s*(Z|z|[+-]\d{2}(?::?\d{2})?))?)?"
)
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _iso_to_us(s: str) -> int | None:
    m = _ISO_RE.fullmatch(s)
    if m is None:
        return None
    year, month, day, hh, mm, ss, frac, zone = m.groups()
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    hours = int(hh) if hh else 0
    minutes = int(mm) if mm else 0
    seconds = int(ss) if ss else 0
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    micros = int((frac + "00000")[:6]) if frac else 0
    offset = 0
    if zone and zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:] or 0)
        if oh > 23 or om > 59:
            return None
        offset = (oh * 3600 + om * 60) * (-1 if zone[0] == "-" else 1)
    return (days * 86_400 + hours * 3600 + minutes * 60 + seconds - offset) * 1_000_000 + micros


def _time_to_us(value: Any) -> int | None:
    """Ordering key (µs since the epoch) of a time value, or None if it is not one."""
    kind = type(value)
    if kind is str:
        s = value.strip()
        if s.isdigit() and s.isascii():
            us = int(s) * 1_000_000
        elif (us := _iso_to_us(s)) is None:
            if _INT_RE.fullmatch(s):
                us = int(s) * 1_000_000
            elif _FLOAT_RE.fullmatch(s):
                f = float(s)
                if not math.isfinite(f):
                    return None
                us = round(f * 1_000_000)
            else:
                return None
    elif kind is int or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        us = int(value) * 1_000_000
    elif kind is float or isinstance(value, np.floating):
        if not math.isfinite(value):
            return None
        us = round(float(value) * 1_000_000)
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        delta = value - _EPOCH
        us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    elif isinstance(value, date):
        us = (value.toordinal() - _EPOCH_ORDINAL) * _US_PER_DAY
    else:
        return None
    return us if _I64_MIN <= us <= _I64_MAX else None


def parse_timestamp(value: Any) -> int:
    """Ordering key of one time value: int microseconds since the Unix epoch (UTC).

    Numbers and numeric strings are seconds since the epoch; other strings are ISO 8601 dates or
    datetimes (a missing zone means UTC); ``datetime`` / ``date`` objects are converted exactly.
    Raises ``ValueError`` for anything else or a result outside int64. O(len(value)).

    Example:
        >>> parse_timestamp("1970-01-02"), parse_timestamp(1.5)
        (86400000000, 1500000)
        >>> parse_timestamp("1970-01-01T01:00+01:00")
        0
    """
    us = _time_to_us(value)
    if us is None:
        raise ValueError(
            f"timestamp must be seconds since the epoch or an ISO 8601 date/datetime, got {value!r}"
        )
    return us


def _int_to_fp(v: int) -> int | None:
    if v < 0:
        return v + (1 << 64) if v >= _I64_MIN else None
    return v if v <= _U64_MAX else None


def _hex_to_fp(body: str) -> int | None:
    # isalnum (on ASCII) rules out the signs, spaces and underscores that int() would accept.
    if 0 < len(body) <= 16 and body.isalnum():
        try:
            return int(body, 16)
        except ValueError:
            return None
    return None


def _str_to_fp(t: str, fingerprint_format: str) -> int | None:
    # No surrounding spaces: " 12 " in a fingerprint column is a damaged row, not 12.
    if not t.isascii() or t != t.strip():
        return None
    if t[:2] in ("0x", "0X"):
        return None if fingerprint_format == "dec" else _hex_to_fp(t[2:])
    if fingerprint_format == "hex":
        return _hex_to_fp(t)
    if fingerprint_format == "auto" and len(t) == 16:
        fp = _hex_to_fp(t)
        if fp is not None:
            return fp
    digits = t[1:] if t[:1] in ("+", "-") else t
    # 2**64 - 1 has 20 digits; checking first keeps int() from parsing (or refusing, past
    # 4,300 digits, with a message about sys.set_int_max_str_digits) a huge string.
    if not digits.isdigit() or len(digits.lstrip("0")) > 20:
        return None
    return _int_to_fp(int(t))


def _fp_value(value: Any, fingerprint_format: str) -> int | None:
    if isinstance(value, str):
        return _str_to_fp(value, fingerprint_format)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _int_to_fp(int(value))
    return None


def parse_fingerprint(value: str | int, fingerprint_format: str = "auto") -> int:
    """One fingerprint as a Python int in 0..2**64-1.

    Strings: ``"auto"`` reads ``0x…`` and exactly-16-hex-digit strings as hex, other all-digit
    strings (optionally signed) as decimal — so a 16-digit all-decimal string is read as hex;
    use ``"dec"`` (``--fingerprint-format dec``) to force decimal or ``"hex"`` to force hex
    (1–16 digits, optional ``0x``). Negative decimals are signed int64 values (as Java/Spark
    write them) and map to two's complement. Ints are taken as they are, whatever the format.
    Raises ``ValueError`` for anything else. Cost: O(len(value)).

    Example:
        >>> parse_fingerprint("00000000000000ff"), parse_fingerprint("255"), parse_fingerprint("-1")
        (255, 255, 18446744073709551615)
        >>> parse_fingerprint("1234567890123456", "dec")
        1234567890123456
    """
    if fingerprint_format not in FINGERPRINT_FORMATS:
        raise ValueError(
            f"fingerprint_format must be one of {', '.join(FINGERPRINT_FORMATS)}; "
            f"got {fingerprint_format!r}"
        )
    fp = _fp_value(value, fingerprint_format)
    if fp is None:
        raise ValueError(
            f"fingerprint must be 16 hex digits, 0x-hex or a decimal in -2**63..2**64-1 "
            f"(format {fingerprint_format!r}), got {value!r}"
        )
    return fp


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _utf8_len(s: str) -> int | None:
    """UTF-8 length of ``s``, or None if it holds an unpaired surrogate (from a JSON escape)."""
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def check_max_doc_bytes(max_doc_bytes: int | None) -> int | None:
    """``max_doc_bytes`` validated: a positive integer, or None (or 0) for no limit."""
    if max_doc_bytes is None or max_doc_bytes == 0:
        return None
    if isinstance(max_doc_bytes, bool) or not isinstance(max_doc_bytes, int) or max_doc_bytes < 0:
        raise ValueError(
            f"max_doc_bytes must be a positive integer, or 0/None for no limit; got {max_doc_bytes!r}"
        )
    return max_doc_bytes


def oversized_text(nbytes: int, max_doc_bytes: int | None) -> str | None:
    """The detail of a "document too large" row when a text of ``nbytes`` UTF-8 bytes
    exceeds ``max_doc_bytes`` (None: no limit), else None. Shared by every reader."""
    if max_doc_bytes is None or nbytes <= max_doc_bytes:
        return None
    return (
        f"{nbytes:,} bytes of text, over the limit of {max_doc_bytes:,}; "
        "--max-doc-bytes raises it, 0 = no limit"
    )


def tsv_escape(s: str) -> str:
    """One TSV cell: ``\\`` → ``\\\\``, tab → ``\\t``, newline → ``\\n``, CR → ``\\r``.

    The one rule of every TSV this package writes (:func:`write_table`, :func:`write_records`,
    labelling sheets); :func:`tsv_unescape` reverses it. TSV is never quoted: ``"`` is a
    character like any other. O(len(s)).

    Example:
        >>> tsv_escape('a\\tb "c"\\\\')
        'a\\\\tb "c"\\\\\\\\'
    """
    if "\\" in s or "\t" in s or "\n" in s or "\r" in s:
        s = s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return s


def tsv_unescape(s: str) -> str:
    """A TSV cell's text: ``\\t`` ``\\n`` ``\\r`` ``\\\\`` become tab, newline, CR, backslash.

    The inverse of :func:`tsv_escape`, used by every TSV reader of the package. Any other
    backslash (an unknown escape, a trailing one) is kept as it is. O(len(s)).

    Example:
        >>> tsv_unescape("C:\\\\\\\\new\\\\tx \\\\q")
        'C:\\\\new\\tx \\\\q'
    """
    if "\\" not in s:
        return s
    out = []
    i = 0
    n = len(s)
    while i < n:
        j = s.find("\\", i)
        if j < 0 or j == n - 1:
            out.append(s[i:])
            break
        out.append(s[i:j])
        nxt = s[j + 1]
        out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
        i = j + 2
    return "".join(out)


_tsv_unescape = tsv_unescape  # the name the Spark engine imports


class _TsvWriter:
    """``writerow`` like :func:`csv.writer`'s, in the TSV rule: cells :func:`tsv_escape`-d,
    joined by tabs, one line per row."""

    def __init__(self, text: IO[str]) -> None:
        self._write = text.write

    def writerow(self, cells: Iterable[Any]) -> None:
        self._write("\t".join([tsv_escape(str(c)) for c in cells]) + "\n")


# --------------------------------------------------------------------------------------------
# Formats and opening files
# --------------------------------------------------------------------------------------------


def _split_name(name: str) -> tuple[str, str | None]:
    """(format extension, compression) of a file name or format spec like ``jsonl.gz``."""
    lower = name.lower()
    compression = None
    for suffix, kind in _COMPRESSION_SUFFIXES.items():
        if lower.endswith("." + suffix):
            compression = kind
            lower = lower[: -len(suffix) - 1]
            break
    _, dot, ext = lower.rpartition(".")
    return (ext if dot else ""), compression


def _parse_format_spec(spec: str, param: str, allowed: Sequence[str]) -> tuple[str, str | None]:
    ext, compression = _split_name("x." + spec)
    fmt = _FORMAT_ALIASES.get(ext)
    if fmt not in allowed:
        raise ValueError(
            f"{param} must be one of {', '.join(allowed)} (optionally with .gz or .zst); "
            f"got {spec!r}"
        )
    return fmt, compression


@dataclass
class _Source:
    path: str  # as given ("-" for stdin)
    display: str
    fmt: str
    compression: str | None
    #: fmt "table": the rows in memory, one list of Python values per column.
    columns: Mapping[str, list] | None = None


def _resolve_input(p: str | Path, input_format: str | None, allowed: Sequence[str]) -> _Source:
    path = str(p)
    if path == "-":
        if input_format is None:
            return _Source(path, _STDIN_NAME, "jsonl", None)
        fmt, compression = _parse_format_spec(input_format, "input_format", allowed)
        if fmt == "txt":
            raise ValueError("input_format 'txt' needs a directory, not stdin")
        return _Source(path, _STDIN_NAME, fmt, compression)
    if not os.path.exists(path):
        raise FileNotFoundError(f"input not found: {path}")
    if os.path.isdir(path):
        if input_format is not None and _FORMAT_ALIASES.get(input_format.lower()) != "txt":
            raise ValueError(
                f"{path} is a directory; directories are read as *.txt files "
                f"(input_format 'txt'), got input_format {input_format!r}"
            )
        return _Source(path, path, "txt", None)
    if input_format is not None:
        fmt, compression = _parse_format_spec(input_format, "input_format", allowed)
        if compression is None:
            compression = _split_name(path)[1]
    else:
        ext, compression = _split_name(path)
        fmt = _FORMAT_ALIASES.get(ext)
        if fmt is None or fmt == "txt" or fmt not in allowed:
            raise ValueError(
                f"cannot tell the format of {path}: supported extensions are .jsonl/.json/.ndjson, "
                f".csv, .tsv, .parquet (text formats optionally .gz/.zst/.zstd) and directories of "
                f"*.txt files; pass input_format to choose one"
            )
    if fmt == "txt":
        raise ValueError(f"{path}: .txt documents are read from a directory; pass the directory")
    if fmt == "parquet" and compression is not None:
        raise ValueError(f"{path}: Parquet is compressed internally; .gz/.zst are not supported")
    if compression is None and fmt != "parquet":
        _refuse_unnamed_compression(path, fmt)
    return _Source(path, path, fmt, compression)


_MAGIC = {b"\x1f\x8b": ("gzip", ".gz"), b"\x28\xb5\x2f\xfd": ("zstd", ".zst")}


def _refuse_unnamed_compression(path: str, fmt: str) -> None:
    """Raise if a file read as plain text starts with gzip's or zstd's magic bytes.

    Neither magic is valid UTF-8 at the start of a file, so no text input is refused; without
    this check the user would be told of "invalid UTF-8" on line 1.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return  # reading it will report the problem with its own message
    for magic, (name, suffix) in _MAGIC.items():
        if head.startswith(magic):
            raise ValueError(
                f"{path} is {name}-compressed but its name does not say so: rename it to "
                f"{path}{suffix} (or input_format='{fmt}{suffix}' in Python)"
            )


def _stdin_binary() -> IO[bytes]:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer
    return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))


@contextmanager
def _open_input(src: _Source) -> Iterator[IO[bytes]]:
    """A buffered binary stream of the (decompressed) input; stdin is not closed."""
    if src.path == "-":
        raw: IO[bytes] = _stdin_binary()
        owned = False
    else:
        raw = open(src.path, "rb", buffering=_READ_BUFFER)
        owned = True
    try:
        if src.compression == "gzip":
            with gzip.GzipFile(fileobj=raw, mode="rb") as g:
                yield g
        elif src.compression == "zstd":
            reader = zstandard.ZstdDecompressor().stream_reader(
                raw, read_across_frames=True, closefd=False
            )
            with io.BufferedReader(reader, _READ_BUFFER) as buffered:
                yield buffered
        else:
            yield raw
    finally:
        if owned:
            raw.close()


def _lines_at(src: _Source, offsets: list[int]) -> Iterator[bytes]:
    """The lines of a JSON Lines input that start at ``offsets`` (ascending byte offsets in
    the decompressed stream)."""
    with _open_input(src) as fh:
        if src.compression is None:
            for offset in offsets:
                fh.seek(offset)
                yield fh.readline()
            return
        position = 0
        wanted = iter(offsets)
        target = next(wanted, None)
        for line in fh:
            if position == target:
                yield line
                target = next(wanted, None)
                if target is None:
                    return
            position += len(line)


def _decoded_line(raw: bytes, n: int, rows: _Rows, path: str) -> str | None:
    """Line ``n`` as text without the BOM of a first line; None (reported) if not UTF-8."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        rows.bad(path, n, None, "invalid UTF-8", f"byte {e.start + 1} of the line")
        return None
    return s[1:] if n == 1 and s.startswith("\ufeff") else s


def _iter_lines(fh: IO[bytes], path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line) pairs; decompression failures become InputError."""
    n = 0
    try:
        for n, line in enumerate(fh, 1):
            yield n, line
    except (OSError, EOFError, zstandard.ZstdError) as e:
        raise InputError(path, n + 1, None, "unreadable input", str(e)) from e


def _raise_csv_limit() -> None:
    # Documents can be far longer than the csv module's default 128 KiB field limit.
    if csv.field_size_limit() < 2**31 - 1:
        csv.field_size_limit(2**31 - 1)


def _decoded_lines(fh: IO[bytes], path: str, bad_lines: list[int]) -> Iterator[str]:
    """Decoded lines for the csv module; undecodable line numbers go to ``bad_lines``.

    Such lines are still passed on (with surrogate escapes) so the csv parser keeps its place
    inside multi-line quoted fields; the caller drops the record that contains them.
    """
    for n, raw in _iter_lines(fh, path):
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError:
            bad_lines.append(n)
            s = raw.decode("utf-8", "surrogateescape")
        if n == 1 and s.startswith("\ufeff"):
            s = s[1:]
        yield s


def _delimited_rows(src: _Source, rows, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of a CSV (``delimiter`` ``,``) or TSV (``\\t``) source: its header
    first, then each well-formed row (:func:`_csv_rows`, :func:`_tsv_rows`)."""
    return _tsv_rows(src, rows) if delimiter == "\t" else _csv_rows(src, rows)


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


def _csv_rows(src: _Source, rows) -> Iterator[tuple[int, list[str]]]:
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
    with _open_input(src) as fh:
        bad_lines: deque[int] = deque()
        lines = _CsvLines(_decoded_lines(fh, path, bad_lines))  # type: ignore[arg-type]
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
                        detail += (f"; a quoted field opened on this line runs to line {end}"
                                   " (a stray quote?)")
                elif str(error) == "unexpected end of data":
                    detail = "a quoted field opened on this line never closes (the file ends)"
                elif end == first:
                    detail = str(error)
                else:
                    detail = (f"{error} on line {end}, inside a quoted field opened on this line"
                              " (a stray quote?)")
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


def _tsv_rows(src: _Source, rows) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of a TSV source: its header first, then each well-formed row.

    TSV is literal: one row per line, fields split at tabs, no quoting (``"`` is an ordinary
    character), each field :func:`tsv_unescape`-d (``\\t`` ``\\n`` ``\\r`` ``\\\\``), as
    :func:`write_table` and :func:`write_records` write it. A line ending ``\\r\\n`` loses both.
    A row holding invalid UTF-8 or whose field count differs from the header's goes to
    ``rows.bad`` with its line; blank lines are skipped; an empty file yields nothing.
    O(size of the file).
    """
    path = src.display
    with _open_input(src) as fh:
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
    :func:`read_documents` reads TSV with: the first line names the columns, then one row per
    line, fields split at tabs, no quoting, every cell and name :func:`tsv_unescape`-d, blank
    lines skipped, empty cells "" (never null).

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

    src = _resolve_input(path, "tsv", ("tsv",))
    rows = _Rows("raise")
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
        with _open_input(src) as fh:
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
    except (pa.ArrowException, OSError, EOFError, zstandard.ZstdError):
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
        if len(column) and _any(pc.match_substring(column, "\\")):
            columns[i] = pa.array([tsv_unescape(s) for s in column.to_pylist()], pa.string())
    return pa.table(columns, names=header)


@contextmanager
def _open_parquet(src: _Source) -> Iterator[pq.ParquetFile]:
    try:
        if src.path == "-":
            pf = pq.ParquetFile(io.BytesIO(_stdin_binary().read()))
        else:
            pf = pq.ParquetFile(src.path)
    except (pa.ArrowException, OSError) as e:
        raise InputError(src.display, None, None, "not a readable Parquet file", str(e)) from e
    try:
        yield pf
    finally:
        pf.close()


_raw_decode = json.JSONDecoder().raw_decode


def _parse_json_line(s: str) -> Any:
    """``json.loads`` of one line, minus its per-call overhead in the common case."""
    try:
        obj, end = _raw_decode(s)
        if end == len(s) or s[end:].isspace():
            return obj
    except (ValueError, RecursionError):
        pass
    # Leading whitespace, trailing data or a real error: json.loads has the exact message.
    return json.loads(s)


_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _fast_json(raw: bytes, whole_record: bool) -> Any:
    """orjson's parse of one JSON line, where it gives what :func:`json.loads` gives.

    orjson reads integers past 64 bits as floats; the standard library keeps them exact. Where
    that could matter (the whole record is kept, or a top-level value came back a float) a line
    holding a run of 19 digits is refused here (``JSONDecodeError``), so the caller's standard
    path reads it."""
    obj = orjson.loads(raw)
    if (whole_record or (type(obj) is dict and any(type(v) is float for v in obj.values()))) \
            and _LONG_NUMBER.search(raw):
        raise orjson.JSONDecodeError("long number", raw.decode("utf-8", "replace"), 0)
    return obj


def _missing_column(path: str, name: str, columns: Sequence[str], unit: str,
                    hint: str = "") -> InputError:
    return InputError(
        path,
        1 if unit == "line" else None,
        name,
        f"missing field '{name}'",
        f"no such column; columns are: {', '.join(map(str, columns))}{hint}",
        unit,
    )


# --------------------------------------------------------------------------------------------
# Row validation shared by the document and fingerprint readers
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _id_hashes(buf, starts, ends):
    out = np.empty((starts.shape[0], 2), dtype=np.uint64)
    for i in range(starts.shape[0]):
        out[i, 0] = xxh64_slice(buf, starts[i], ends[i], np.uint64(0))
        out[i, 1] = xxh64_slice(buf, starts[i], ends[i], np.uint64(0x9E3779B97F4A7C15))
    return out


@njit(cache=True)
def _id_table_insert(h1, h2, first, new1, new2, keys):
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
        if firsts[i] < 0:
            h1[slot], h2[slot], first[slot] = new1[i], new2[i], keys[i]
            added += 1
    return firsts, added


class _IdTable:
    """The IDs read so far, for duplicate detection in bounded memory: each ID as its 128-bit
    hash (XXH64 of its UTF-8 bytes with two seeds; two different IDs collide with probability
    about 2^-128, the standard of the content fingerprint) in an open-addressing table at most
    three quarters full, with the packed position of its first occurrence: 32 to 64 bytes an
    ID, where a dict of the strings took about 150. Checked batch by batch, in input order."""

    def __init__(self) -> None:
        self._alloc(1 << 12)
        self.size = 0

    def _alloc(self, capacity: int) -> None:
        self.h1 = np.zeros(capacity, dtype=np.uint64)
        self.h2 = np.zeros(capacity, dtype=np.uint64)
        self.first = np.full(capacity, -1, dtype=np.int64)

    def check(self, ids: list[str], keys: np.ndarray) -> np.ndarray:
        """For each ID in order: -1 if new (it is added, with its key), else the key of its
        first occurrence (earlier in ``ids`` or in an earlier call). O(len(ids)) expected."""
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        ends = np.cumsum(lengths)
        hashes = _id_hashes(np.frombuffer(b"".join(encoded), dtype=np.uint8), ends - lengths, ends)
        return self._insert(hashes, keys)

    def size_after(self, data: np.ndarray, offsets: np.ndarray) -> int:
        """Add the IDs of an Arrow string column (its bytes and offsets); the number of
        distinct IDs seen so far."""
        hashes = _id_hashes(data, offsets[:-1], offsets[1:])
        self._insert(hashes, np.zeros(hashes.shape[0], dtype=np.int64))
        return self.size

    def _insert(self, hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
        ids = hashes
        if 4 * (self.size + len(ids)) > 3 * self.h1.shape[0]:
            capacity = self.h1.shape[0]
            while 4 * (self.size + len(ids)) > 3 * capacity:
                capacity *= 2
            used = self.first >= 0
            old = (self.h1[used], self.h2[used], self.first[used])
            self._alloc(capacity)
            _id_table_insert(self.h1, self.h2, self.first, *old)
        firsts, added = _id_table_insert(self.h1, self.h2, self.first, hashes[:, 0],
                                         hashes[:, 1], keys)
        self.size += added
        return firsts


class _Rows:
    """Error policy, duplicate-ID detection and counters for one read."""

    def __init__(self, on_error: str) -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}; got {on_error!r}")
        self.raise_errors = on_error == "raise"
        self.stats = ReadStats()
        self.files: list[str] = []
        self.units: list[str] = []
        # An ID's first occurrence is stored as one int: file index << 40 | line.
        self.file_key = 0
        self.seen: dict[str, int] = {}
        self.unit = "line"
        #: Called before an error is raised (the document reader checks its pending IDs).
        self.before_raise: Callable[[], None] | None = None

    def start_file(self, display: str, unit: str = "line") -> None:
        self.file_key = len(self.files) << _LINE_BITS
        self.files.append(display)
        self.units.append(unit)
        self.stats.files += 1
        self.unit = unit

    def bad(
        self, path: str, line: int | None, field: str | None, reason: str, detail: str | None = None
    ) -> None:
        if self.raise_errors:
            if self.before_raise is not None:
                # Earlier rows still waiting for their duplicate-ID check are reported first.
                self.before_raise()
            raise InputError(path, line, field, reason, detail, self.unit)
        self.stats.skipped += 1
        self.stats.skipped_reasons[reason] += 1

    def check_id(self, value: Any, path: str, line: int, field: str) -> str | None:
        if type(value) is str:
            ident = value
        elif value is None:
            self.bad(path, line, field, f"missing field '{field}'")
            return None
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            ident = str(int(value))
        else:
            self.bad(
                path,
                line,
                field,
                "bad id",
                f"expected a string or integer, got {_type_name(value)}",
            )
            return None
        if not ident:
            self.bad(path, line, field, "empty id")
            return None
        if not ident.isascii() and _utf8_len(ident) is None:
            self.bad(path, line, field, "invalid UTF-8", "unpaired surrogate in the id")
            return None
        return ident

    def check_time(self, value: Any, path: str, line: int, field: str) -> int | None:
        if value is None or value == "":
            self.bad(path, line, field, f"missing field '{field}'")
            return None
        us = _time_to_us(value)
        if us is None:
            if isinstance(value, (int, float, np.number)) and math.isfinite(value):
                detail = (f"{_short(value)} seconds is out of range: int64 microseconds span "
                          f"about ±292,000 years")
            else:
                detail = f"{_short(value)} is neither seconds since the epoch nor ISO 8601"
            self.bad(path, line, field, "bad timestamp", detail)
        return us

    def duplicate(self, ident: str, first: int, path: str, line: int | None, field: str) -> None:
        """Report ``ident`` at (path, line), first seen at the packed position ``first``."""
        if not self.raise_errors:
            self.bad(path, line, field, "duplicate id")
            return
        index, first_line = first >> _LINE_BITS, first & _LINE_MASK
        where = self.files[index]
        if first_line:
            where += f", {self.units[index]} {first_line}"
        self.bad(path, line, field, "duplicate id", f"{_short(ident)} first seen at {where}")


# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------


class DocumentReader:
    """Iterable of :class:`DocumentBatch` over the inputs of :func:`read_documents`.

    Single use: inputs (stdin in particular) are streamed once. ``stats`` fills in as batches
    are read and is final when iteration ends.
    """

    def __init__(
        self,
        sources: list[_Source],
        *,
        id_field: str,
        text_field: str,
        time_field: str | None,
        on_error: str,
        batch_size: int,
        keep_records: bool,
        spill_dir: str | None = None,
        max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    ) -> None:
        self._sources = sources
        self._max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
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
        self._rows = _Rows(on_error)
        self._rows.before_raise = self._check_ids
        self._seen = _IdTable()
        self._started = False
        self._position = 0
        self._missing_text = f"missing field '{text_field}'"
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
        )

    # -- reading again -------------------------------------------------------------------------

    def total_bytes(self) -> int | None:
        """Bytes of the inputs when every one is an uncompressed JSON Lines file (what
        :attr:`bytes_consumed` reaches at the end), else None. For progress displays."""
        if any(src.fmt != "jsonl" or src.compression is not None or src.path == "-"
               for src in self._sources):
            return None
        return sum(os.path.getsize(src.path) for src in self._sources)

    @property
    def bytes_consumed(self) -> int:
        """Bytes of JSON Lines read so far (decompressed), over all inputs."""
        return self._consumed + (self._where & _KEY_MASK if self._in_jsonl else 0)

    def can_fetch(self) -> bool:
        """Whether :meth:`fetch` can read documents again by location: every input is JSON Lines
        (from stdin only if it was copied to ``spill_dir`` while read)."""
        return all(src.fmt == "jsonl" and (src.path != "-" or self._spill_dir is not None)
                   for src in self._sources)

    @contextmanager
    def _stdin_spill(self, src: _Source) -> Iterator[IO[bytes] | None]:
        if src.path != "-" or self._spill_dir is None:
            yield None
            return
        self._stdin_copy = os.path.join(self._spill_dir, "stdin.jsonl")
        with open(self._stdin_copy, "wb") as copy:
            yield copy

    def fetch(
        self, positions: np.ndarray, locations: np.ndarray, *, records: bool = False
    ) -> Iterator[DocumentBatch]:
        """The documents at ``positions`` again, read through their ``locations`` (both from
        the batches of a first pass; positions ascending), as batches with the same IDs, texts,
        timestamps and (with ``records``) records. Rows are not validated again: they were in
        the first pass.

        Plain files are read with a seek per document (cheap where they are dense, thanks to
        the read buffer); .gz/.zst inputs are decompressed again up to the last wanted line,
        parsing only the wanted lines. Cost: O(bytes of the wanted lines) plus, for compressed
        inputs, O(decompressed bytes up to the last one).

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
            raise ValueError("fetch reads JSON Lines inputs again (standard input only when "
                             "copied to spill_dir); read the other formats again instead")
        positions = np.asarray(positions, dtype=np.int64)
        locations = np.asarray(locations, dtype=np.int64).reshape(-1, 2)
        for index in np.unique(locations[:, 0]).tolist():
            rows = np.flatnonzero(locations[:, 0] == index)
            src = self._sources[index]
            if src.path == "-":
                src = _Source(self._stdin_copy or "", src.display, "jsonl", None)
            lines = _lines_at(src, locations[rows, 1].tolist())
            for start in range(0, rows.shape[0], self._batch_size):
                chunk = rows[start : start + self._batch_size]
                yield self._parsed_batch(
                    [next(lines) for _ in range(chunk.shape[0])], positions[chunk], records)

    def _parsed_batch(self, lines: list[bytes], positions: np.ndarray,
                      records: bool) -> DocumentBatch:
        ids, texts, times, raw, kept = [], [], [], [], []
        id_field, text_field, time_field = self._id_field, self._text_field, self._time_field
        for line in lines:
            try:
                obj = _fast_json(line, records)
            except orjson.JSONDecodeError:
                obj = _parse_json_line(line.decode("utf-8").lstrip("\ufeff"))
            ident = obj[id_field]
            ids.append(ident if type(ident) is str else str(int(ident)))
            texts.append(obj[text_field])
            value = obj.get(time_field) if time_field is not None else None
            times.append(0 if time_field is None else _time_to_us(value))
            raw.append(value)
            if records:
                kept.append(obj)
        return DocumentBatch(ids, texts, np.array(times, dtype=np.int64), raw,
                             kept if records else None, positions)

    # -- batch assembly ------------------------------------------------------------------------

    def _reset(self) -> None:
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._times: list[int] = []
        self._raw: list[Any] = []
        self._records: list[dict] = []
        self._locs: list[int] = []
        self._keys: list[int] = []
        self._nbytes: list[int] = []
        self._checked = 0
        self._dropped: list[int] = []

    def _check_ids(self) -> None:
        """Find the duplicate IDs among the rows added since the last check, in input order,
        against every earlier row (:class:`_IdTable`): reported as before (the first one raises
        with ``on_error="raise"``), dropped at the next flush with ``"skip"``."""
        start = self._checked
        if start == len(self._ids):
            return
        self._checked = len(self._ids)
        rows = self._rows
        hook, rows.before_raise = rows.before_raise, None  # the report below may raise
        try:
            keys = np.array(self._keys[start:], dtype=np.int64)
            firsts = self._seen.check(self._ids[start:], keys)
            for i in np.flatnonzero(firsts >= 0).tolist():
                key = int(keys[i])
                rows.duplicate(self._ids[start + i], int(firsts[i]),
                               rows.files[key >> _LINE_BITS], (key & _LINE_MASK) or None,
                               self._id_field)
                self._dropped.append(start + i)
        finally:
            rows.before_raise = hook

    def _flush(self) -> DocumentBatch:
        self._check_ids()
        if self._dropped:
            drop = set(self._dropped)
            keep = [i for i in range(len(self._ids)) if i not in drop]
            for name in ("_ids", "_texts", "_times", "_raw", "_locs", "_nbytes") + (
                    ("_records",) if self._keep else ()):
                values = getattr(self, name)
                setattr(self, name, [values[i] for i in keep])
        stats = self._rows.stats
        stats.documents += len(self._ids)
        stats.bytes += sum(self._nbytes)
        n = len(self._ids)
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
    ) -> None:
        """Validate one row and append it to the current batch (or report it)."""
        rows = self._rows
        # Fast paths first: this runs once per document.
        if type(ident) is not str or not ident or not ident.isascii():
            ident = rows.check_id(ident, path, line, self._id_field)  # type: ignore[arg-type]
            if ident is None:
                return
        if type(text) is not str:
            if text is None:
                rows.bad(path, line, self._text_field, self._missing_text)
            else:
                rows.bad(
                    path, line, self._text_field, "text not a string", f"got {_type_name(text)}"
                )
            return
        nbytes = len(text) if text.isascii() else _utf8_len(text)
        if nbytes is None:
            rows.bad(
                path, line, self._text_field, "invalid UTF-8", "unpaired surrogate in the text"
            )
            return
        if self._max_doc_bytes is not None and nbytes > self._max_doc_bytes:
            too_large = oversized_text(nbytes, self._max_doc_bytes)
            rows.bad(path, line, self._text_field, "document too large", too_large)
            return
        if time_us is None:
            if self._time_field is None:
                time_us = 0
            else:
                time_us = _time_to_us(time_value) if time_value is not None else None
                if time_us is None:
                    rows.check_time(time_value, path, line, self._time_field)  # type: ignore[arg-type]
                    return
        # The duplicate-ID check runs on the whole batch at once (see _check_ids).
        self._ids.append(ident)
        self._texts.append(text)
        self._times.append(time_us)
        self._raw.append(time_value)
        self._locs.append(self._where)
        self._keys.append(rows.file_key | (line or 0))
        self._nbytes.append(nbytes)
        if self._keep:
            self._records.append(record)  # type: ignore[arg-type]

    # -- formats -------------------------------------------------------------------------------

    def _generate(self) -> Iterator[DocumentBatch]:
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
        self._seen = _IdTable()  # the IDs were all checked: free the table for later stages

    def _read_jsonl(self, src: _Source) -> Iterator[DocumentBatch]:
        path = src.display
        rows = self._rows
        rows.start_file(path)
        id_field, text_field, time_field = self._id_field, self._text_field, self._time_field
        keep, batch_size, add = self._keep, self._batch_size, self._add
        base, offset = self._source_base, 0
        self._in_jsonl = True
        with _open_input(src) as fh, self._stdin_spill(src) as copy:
            for n, raw in _iter_lines(fh, path):
                self._where = base | offset
                offset += len(raw)
                if copy is not None:
                    copy.write(raw)
                if raw.isspace() or not raw:
                    continue
                try:
                    obj = _fast_json(raw, keep)
                except orjson.JSONDecodeError:
                    # What orjson refuses (a BOM, integers past 64 bits, NaN, lone surrogates,
                    # real errors) goes the standard library's way, with its exact messages.
                    s = _decoded_line(raw, n, rows, path)
                    if s is None:
                        continue
                    try:
                        obj = _parse_json_line(s)
                    except (ValueError, RecursionError) as e:
                        detail = str(e)
                        if n == 1 and s.lstrip().startswith("["):
                            detail += (
                                "; JSON input must be JSON Lines: one object per line, not an array"
                            )
                        rows.bad(path, n, None, "malformed JSON", detail)
                        continue
                if type(obj) is not dict:
                    rows.bad(path, n, None, "not a JSON object", f"got {_type_name(obj)}")
                    continue
                add(
                    path,
                    n,
                    obj.get(id_field),
                    obj.get(text_field),
                    obj.get(time_field) if time_field is not None else None,
                    obj if keep else None,
                )
                if len(self._ids) >= batch_size:
                    yield self._flush()
        self._consumed += offset
        self._in_jsonl = False

    def _read_delimited(self, src: _Source) -> Iterator[DocumentBatch]:
        path = src.display
        self._rows.start_file(path)
        lines = _delimited_rows(src, self._rows, "\t" if src.fmt == "tsv" else ",")
        header = next(lines, (1, None))[1]
        if header is None:
            return  # an empty file holds no documents
        columns = {}
        for i, name in enumerate(header):
            columns.setdefault(name, i)
        wanted = [self._id_field, self._text_field]
        if self._time_field is not None:
            wanted.append(self._time_field)
        for name in wanted:
            if name not in columns:
                raise _missing_column(path, name, header, "line")
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
            if len(self._ids) >= batch_size:
                yield self._flush()

    def _read_parquet(self, src: _Source) -> Iterator[DocumentBatch]:
        with _open_parquet(src) as pf:
            names = pf.schema_arrow.names
            columns = self._check_columns(src.display, names)
            chunks = (
                {name: rb.column(name).to_pylist() for name in rb.schema.names}
                for rb in pf.iter_batches(batch_size=max(1024, min(self._batch_size, 65_536)),
                                          columns=None if self._keep else columns)
            )
            yield from self._read_columns(src.display, chunks)

    def _read_table(self, src: _Source) -> Iterator[DocumentBatch]:
        columns = src.columns or {}
        self._check_columns(src.display, list(columns))
        yield from self._read_columns(src.display, iter([dict(columns)]))

    def _check_columns(self, path: str, names: Sequence[str]) -> list[str]:
        """The columns a row needs, in order; raises when one of them is missing."""
        self._rows.start_file(path, unit="row")
        wanted = [self._id_field, self._text_field]
        if self._time_field is not None:
            wanted.append(self._time_field)
        for name in wanted:
            if name not in names:
                raise _missing_column(path, name, names, "row")
        return list(dict.fromkeys(wanted))

    def _read_columns(self, path: str, chunks: Iterator[dict[str, list]]) -> Iterator[DocumentBatch]:
        """Rows of column chunks (dicts of equal-length lists of Python values): Parquet record
        batches and in-memory tables, validated as every other row. Rows count from 1."""
        keep, batch_size, add = self._keep, self._batch_size, self._add
        row = 0
        for chunk in chunks:
            ids, texts = chunk[self._id_field], chunk[self._text_field]
            n = len(texts)
            times = chunk[self._time_field] if self._time_field is not None else [None] * n
            records = [dict(zip(chunk, values)) for values in zip(*chunk.values())] if keep else None
            for k in range(n):
                row += 1
                self._where = self._source_base | (row - 1)
                add(path, row, ids[k], texts[k], times[k], records[k] if records else None)
                if len(self._ids) >= batch_size:
                    yield self._flush()

    def _read_directory(self, src: _Source) -> Iterator[DocumentBatch]:
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
                too_large = oversized_text(size - 3, self._max_doc_bytes)
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
            raw = _us_to_iso(us)
            record = None
            if self._keep:
                record = {self._id_field: rel, self._text_field: text}
                if self._time_field is not None:
                    record[self._time_field] = raw
            self._add(full, None, rel, text, raw, record, time_us=us)
            if len(self._ids) >= self._batch_size:
                yield self._flush()


def _us_to_iso(us: int) -> str:
    seconds, micros = divmod(us, 1_000_000)
    stamp = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{micros:06d}Z"


_URL_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)


def local_paths(path: str | Path) -> list[str]:
    """The local files a path names: itself, a ``file://`` URL's path, or the sorted matches
    of a glob (``*``, ``?``, ``[…]``, ``**`` across folders) when no file has that very name.

    Other URLs (``s3://``, ``hdfs://``, ``gs://`` …) raise ``ValueError``: the local engine
    reads local files and stdin, the Spark engine reads what the cluster's Hadoop file systems
    read. A glob that matches nothing raises ``FileNotFoundError``. O(matches).

    Example:
        >>> local_paths("file:///tmp/a.jsonl"), local_paths("-")
        (['/tmp/a.jsonl'], ['-'])
    """
    name = str(path)
    url = _URL_RE.fullmatch(name)
    if url is not None:
        scheme, rest = url.groups()
        if scheme.lower() != "file":
            raise ValueError(
                f"{name}: the local engine reads local files and stdin; {scheme}:// paths are "
                f"read by the Spark engine (--engine spark, through the cluster's Hadoop file "
                f"systems), or copy the files here first"
            )
        name = rest
    if name != "-" and not os.path.exists(name) and any(c in name for c in "*?["):
        matches = sorted(glob.glob(name, recursive=True))
        if not matches:
            raise FileNotFoundError(f"no input matches the pattern {name}")
        return matches
    return [name]


def _as_path_list(paths: Sequence[str | Path] | str | Path) -> list[str]:
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not given:
        raise ValueError("paths must name at least one input, got an empty list")
    out = [name for p in given for name in local_paths(p)]
    if out.count("-") > 1:
        raise ValueError("paths may name stdin ('-') only once")
    return out


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
        on_error: ``"raise"`` (raise :class:`InputError`) or ``"skip"`` (drop the row, count it
            in ``stats``). File-level problems always raise.
        batch_size: documents per batch (the last one may be smaller).
        keep_records: also return each input row as a dict with all its fields (CSV/TSV values
            are strings), for writing originals back with :func:`write_records`.
        spill_dir: a folder where JSON Lines read from stdin are copied as they are read, so
            that :meth:`DocumentReader.fetch` can read them again.
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
    the rows while iterating. Cost: O(total input size), memory O(batch_size + number of IDs).

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
    _check_fields(id_field, text_field, time_field, on_error, batch_size)
    sources = [_resolve_input(p, input_format, INPUT_FORMATS) for p in _as_path_list(paths)]
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
    )


def _check_fields(id_field: str, text_field: str, time_field: str | None, on_error: str,
                  batch_size: int) -> None:
    for name, value in (("id_field", id_field), ("text_field", text_field)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if time_field is not None and (not isinstance(time_field, str) or not time_field):
        raise ValueError(f"time_field must be a non-empty string or None, got {time_field!r}")
    if id_field == text_field:
        raise ValueError(f"id_field and text_field must differ, both are {id_field!r}")
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}; got {on_error!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


#: The name of a table in memory in :class:`InputError` messages.
TABLE_NAME = "<table>"


def _python_values(column: Any) -> list:
    """A pandas / Arrow column as Python values, missing values (None, NaN, NaT) as None."""
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column.to_pylist()
    try:
        return pa.array(column, from_pandas=True).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # Values of several types in one object column (1 and "1"): kept as they are, so the
        # row checks see them as the file readers would.
        return column.astype(object).where(column.notna(), None).tolist()


def read_table(
    data: Any,
    *,
    id_field: str | None = "id",
    text_field: str = "text",
    time_field: str | None = None,
    on_error: str = "raise",
    batch_size: int = 10_000,
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
) -> DocumentReader:
    """Documents of a table in memory, checked by the rules of :func:`read_documents`.

    ``data`` is a pandas DataFrame, a pyarrow Table or a mapping of column name to sequence.
    Every row is validated as a row of a file would be: IDs are non-empty strings or integers and
    unique (``1`` and ``"1"`` are the same ID), texts are strings, times are seconds since the
    epoch, ISO 8601 strings or datetimes (naive ones are UTC, aware ones converted), and a
    missing value (None, NaN, NaT) or an out-of-range time is a bad row. Errors name the table as
    ``<table>`` and the row counting from 1 (row k is ``df.iloc[k - 1]``). ``id_field=None``
    numbers the rows from 0 instead of reading IDs. A column named by a field but absent from
    the table is an error that lists the columns.

    Returns a single-use :class:`DocumentReader`. Cost: O(rows), one Python value per cell.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"],
        ...                    "ts": ["2024-01-02", "2024-01-01T00:00:00+01:00"]})
        >>> read_table(df, time_field="ts").read_all().timestamps.tolist()
        [1704153600000000, 1704063600000000]
        >>> read_table(pd.DataFrame({"id": [1, "1"], "text": ["x", "y"]})).read_all()
        Traceback (most recent call last):
        ...
        neardup.io.InputError: <table>, row 2, field 'id': duplicate id ('1' first seen at <table>, row 1)
    """
    columns: dict[str, list] = {}
    if hasattr(data, "column_names") and hasattr(data, "column"):  # pyarrow.Table
        names = list(data.column_names)
        get = data.column
    elif hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas.DataFrame
        names = [str(c) for c in data.columns]
        get = data.__getitem__
    elif isinstance(data, Mapping):
        names = [str(c) for c in data]
        get = data.__getitem__
    else:
        raise TypeError(
            f"data must be a pandas DataFrame, a pyarrow Table or a mapping of columns; "
            f"got {type(data).__name__}"
        )
    row_numbers = id_field is None
    if row_numbers:
        id_field = "\0row"  # a name no table holds: IDs are the row positions
    _check_fields(id_field, text_field, time_field, on_error, batch_size)  # type: ignore[arg-type]
    if not row_numbers and id_field not in names:
        raise _missing_column(TABLE_NAME, id_field, names, "row",  # type: ignore[arg-type]
                              "; name the ID column None to number the rows")
    for name in (id_field, text_field, time_field):
        if name is not None and name in names:
            values = get(name)
            columns[name] = values if isinstance(values, list) else _python_values(values)
    if row_numbers and text_field in columns:
        columns[id_field] = [str(i) for i in range(len(columns[text_field]))]  # type: ignore[index]
    return DocumentReader(
        [_Source(TABLE_NAME, TABLE_NAME, "table", None, columns)],
        id_field=id_field,  # type: ignore[arg-type]
        text_field=text_field,
        time_field=time_field,
        on_error=on_error,
        batch_size=batch_size,
        keep_records=False,
        max_doc_bytes=max_doc_bytes,
    )


# --------------------------------------------------------------------------------------------
# Fingerprints
# --------------------------------------------------------------------------------------------


class _FingerprintCollector:
    def __init__(self, on_error: str, fingerprint_format: str) -> None:
        self.rows = _Rows(on_error)
        self.fingerprint_format = fingerprint_format
        self.ids: list[str] = []
        self.fps: list[int] = []
        self.times: list[int] = []
        self.raw: list[Any] = []

    def add(self, path: str, line: int, ident: Any, fp_value: Any, time_value: Any) -> None:
        rows = self.rows
        # Fast paths first: this runs once per row.
        if type(ident) is not str or not ident or not ident.isascii():
            ident = rows.check_id(ident, path, line, "id")
            if ident is None:
                return
        fp = None
        if (
            type(fp_value) is str
            and len(fp_value) == 16
            and self.fingerprint_format != "dec"
            and fp_value.isalnum()
            and fp_value.isascii()
        ):
            try:
                fp = int(fp_value, 16)
            except ValueError:
                pass
        if fp is None:
            if fp_value is None or fp_value == "":
                rows.bad(path, line, "fingerprint", "missing field 'fingerprint'")
                return
            fp = _fp_value(fp_value, self.fingerprint_format)
            if fp is None:
                rows.bad(
                    path,
                    line,
                    "fingerprint",
                    "bad fingerprint",
                    f"{_short(fp_value)} is not a 64-bit fingerprint "
                    f"(format {self.fingerprint_format!r})",
                )
                return
        if time_value is None:
            us = 0
        elif type(time_value) is str and len(time_value) <= 12 and time_value.isdigit():
            us = int(time_value) * 1_000_000  # seconds: cannot overflow int64 at this length
        elif isinstance(time_value, str) and not time_value.strip():
            us, time_value = 0, None
        else:
            us = _time_to_us(time_value)
            if us is None:
                rows.bad(
                    path,
                    line,
                    "timestamp",
                    "bad timestamp",
                    f"{_short(time_value)} is neither seconds since the epoch nor ISO 8601",
                )
                return
        seen = rows.seen
        size = len(seen)
        first = seen.setdefault(ident, rows.file_key | line)
        if len(seen) == size:
            rows.duplicate(ident, first, path, line, "id")
            return
        self.ids.append(ident)
        self.fps.append(fp)
        self.times.append(us)
        self.raw.append(time_value)
        rows.stats.documents += 1

    def read_plain(self, src: _Source, escaped: bool) -> None:
        path = src.display
        rows = self.rows
        rows.start_file(path)
        with _open_input(src) as fh:
            for n, raw in _iter_lines(fh, path):
                s = _decoded_line(raw, n, rows, path)
                if s is None:
                    continue
                s = s.rstrip("\r\n")
                if not s or s.isspace():
                    continue
                parts = s.split("\t")
                if len(parts) not in (2, 3):
                    rows.bad(
                        path,
                        n,
                        None,
                        "malformed row",
                        f"expected id<TAB>fingerprint[<TAB>timestamp], got {len(parts)} fields",
                    )
                    continue
                if parts[1].strip() == "fingerprint":
                    continue  # a header line
                ident = parts[0]
                if escaped and "\\" in ident:
                    ident = tsv_unescape(ident)
                self.add(path, n, ident, parts[1], parts[2] if len(parts) == 3 else None)

    def read_jsonl(self, src: _Source) -> None:
        path = src.display
        rows = self.rows
        rows.start_file(path)
        with _open_input(src) as fh:
            for n, raw in _iter_lines(fh, path):
                if raw.isspace() or not raw:
                    continue
                s = _decoded_line(raw, n, rows, path)
                if s is None:
                    continue
                try:
                    obj = _parse_json_line(s.lstrip("\ufeff") if n == 1 else s)
                except (ValueError, RecursionError) as e:
                    rows.bad(path, n, None, "malformed JSON", str(e))
                    continue
                if type(obj) is not dict:
                    rows.bad(path, n, None, "not a JSON object", f"got {_type_name(obj)}")
                    continue
                self.add(path, n, obj.get("id"), obj.get("fingerprint"), obj.get("timestamp"))

    def read_csv(self, src: _Source) -> None:
        path = src.display
        self.rows.start_file(path)
        lines = _delimited_rows(src, self.rows, ",")
        header = next(lines, (1, None))[1]
        if header is None:
            return
        for name in ("id", "fingerprint"):
            if name not in header:
                raise _missing_column(path, name, header, "line")
        i_id, i_fp = header.index("id"), header.index("fingerprint")
        i_time = header.index("timestamp") if "timestamp" in header else None
        for start, row in lines:
            self.add(
                path, start, row[i_id], row[i_fp], row[i_time] if i_time is not None else None
            )

    def read_parquet(self, src: _Source) -> None:
        path = src.display
        with _open_parquet(src) as pf:
            self.rows.start_file(path, unit="row")
            names = pf.schema_arrow.names
            for name in ("id", "fingerprint"):
                if name not in names:
                    raise _missing_column(path, name, names, "row")
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
    seconds or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``) is parsed in bulk by Arrow with vectorised checks; any
    other input, or any row that is not plainly valid, goes row by row (a few microseconds of
    Python a row), which reports bad rows as described above. Memory O(rows).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "part-00000"
        >>> _ = p.write_text("a\\t00000000000000ff\\t0\\nb\\t-1\\n")
        >>> t = read_fingerprints([p])
        >>> t.ids.to_pylist(), [int(x) for x in t.fingerprints], t.raw_timestamps.to_pylist()
        (['a', 'b'], [255, 18446744073709551615], ['0', None])
    """
    if fingerprint_format not in FINGERPRINT_FORMATS:
        raise ValueError(
            f"fingerprint_format must be one of {', '.join(FINGERPRINT_FORMATS)}; "
            f"got {fingerprint_format!r}"
        )
    collector = _FingerprintCollector(on_error, fingerprint_format)
    plans: list[tuple[_Source, str]] = []
    for p in _as_path_list(paths):
        path = str(p)
        if path != "-" and os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))
            files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        else:
            files = [path]
        for f in files:
            if f != "-" and not os.path.exists(f):
                raise FileNotFoundError(f"input not found: {f}")
            ext, compression = _split_name(f) if f != "-" else ("", None)
            fmt = _FORMAT_ALIASES.get(ext, "plain")
            if fmt == "parquet" and compression is not None:
                raise ValueError(
                    f"{f}: Parquet is compressed internally; .gz/.zst are not supported"
                )
            display = _STDIN_NAME if f == "-" else f
            plans.append((_Source(f, display, fmt, compression), fmt))
    if len(plans) == 1 and plans[0][1] in ("plain", "tsv") and fingerprint_format != "dec":
        bulk = _seed_rows_in_bulk(plans[0][0], collector.rows)
        if bulk is not None:
            return bulk
    for src, fmt in plans:
        if fmt == "jsonl":
            collector.read_jsonl(src)
        elif fmt == "csv":
            collector.read_csv(src)
        elif fmt == "parquet":
            collector.read_parquet(src)
        else:
            collector.read_plain(src, escaped=fmt == "tsv")
    return FingerprintTable(
        ids=pa.chunked_array([pa.array(collector.ids, type=pa.string())]),
        fingerprints=np.array(collector.fps, dtype=np.uint64),
        timestamps=np.array(collector.times, dtype=np.int64),
        raw_timestamps=pa.chunked_array([pa.array(
            [None if v is None else str(v) for v in collector.raw], type=pa.string())]),
        stats=collector.rows.stats,
    )


_HEX_DIGITS = np.full(256, 255, dtype=np.uint8)
_HEX_DIGITS[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_DIGITS[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_DIGITS[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)

@njit(cache=True)
def _digits(data, start, count):
    """The decimal number of ``count`` ASCII digits at ``start``, or -1."""
    v = 0
    for k in range(count):
        c = data[start + k]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@njit(cache=True)
def _days_from_civil(y, m, d):
    # Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True)
def _seed_stamps(data, offsets):
    """Timestamps of seed rows: "" (absent), 1–12 digits (seconds) or exactly
    ``YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z`` (a valid date, HH ≤ 23, MM and SS ≤ 59), as
    :func:`_time_to_us` reads them; ok=False at the first other value."""
    n = offsets.shape[0] - 1
    micros = np.zeros(n, dtype=np.int64)
    absent = np.zeros(n, dtype=np.bool_)
    month_days = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    for i in range(n):
        a, length = offsets[i], offsets[i + 1] - offsets[i]
        if length == 0:
            absent[i] = True
            continue
        if length <= 12:
            v = _digits(data, a, length)
            if v >= 0:
                micros[i] = v * 1_000_000
                continue
        if length < 20 or length > 27 or length == 21 or data[a + length - 1] != 90:  # 'Z'
            return micros, absent, False
        if (data[a + 4] != 45 or data[a + 7] != 45 or data[a + 10] != 84
                or data[a + 13] != 58 or data[a + 16] != 58):  # - - T : :
            return micros, absent, False
        y, mo, d = _digits(data, a, 4), _digits(data, a + 5, 2), _digits(data, a + 8, 2)
        h, mi, se = _digits(data, a + 11, 2), _digits(data, a + 14, 2), _digits(data, a + 17, 2)
        if y < 1 or mo < 1 or mo > 12 or d < 1 or h < 0 or h > 23 or mi < 0 or mi > 59 \
                or se < 0 or se > 59:
            return micros, absent, False
        leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
        if d > month_days[mo - 1] + (1 if mo == 2 and leap else 0):
            return micros, absent, False
        frac = 0
        if length > 20:
            if data[a + 19] != 46:  # '.'
                return micros, absent, False
            digits = length - 21
            frac = _digits(data, a + 20, digits)
            if frac < 0:
                return micros, absent, False
            for _ in range(6 - digits):
                frac *= 10
        seconds = _days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se
        micros[i] = seconds * 1_000_000 + frac
    return micros, absent, True


@njit(cache=True)
def _hex16(data, offsets, table):
    """The 16-hex-digit strings of an Arrow column as uint64; ok=False if one is not."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        start = offsets[i]
        if offsets[i + 1] - start != 16:
            return out, False
        v = np.uint64(0)
        for k in range(16):
            d = table[data[start + k]]
            if d == 255:
                return out, False
            v = (v << np.uint64(4)) | np.uint64(d)
        out[i] = v
    return out, True


def _string_parts(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, int64 offsets) of a string column without nulls, zero-copy where it can."""
    arr = column.combine_chunks().cast(pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] else np.zeros(0, np.uint8)
    return data, offsets


def _seed_rows_in_bulk(src: _Source, rows: _Rows) -> FingerprintTable | None:
    """The seed's rows ``id <TAB> 16 hex digits <TAB> timestamp`` of one uncompressed file,
    parsed by Arrow and checked in vectorised passes: O(rows) with no Python per row.

    Returns None, having read nothing into ``rows``, as soon as anything is not plainly valid
    (a bad or missing field, a header, escapes in a ``.tsv`` ID, a BOM, a timestamp that is not
    seconds or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, a duplicate ID…): the row-by-row reader then reads the
    file and reports each row exactly as it always has. Timestamps of that ISO form are parsed
    and checked by one compiled pass (:func:`_seed_stamps`) that computes exactly what
    :func:`_iso_to_us` computes for that one form.
    """
    import pyarrow.csv as pacsv

    if src.path == "-" or src.compression is not None or os.path.getsize(src.path) == 0:
        return None
    with open(src.path, "rb") as fh:
        if fh.read(3) == b"\xef\xbb\xbf":
            return None
    try:
        table = pacsv.read_csv(
            src.path,
            read_options=pacsv.ReadOptions(column_names=["id", "fp", "ts"]),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types={"id": pa.string(), "fp": pa.string(), "ts": pa.string()},
                strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, OSError):
        return None
    ids, fps_text, stamps = table.column("id"), table.column("fp"), table.column("ts")
    n = table.num_rows
    id_data, id_offsets = _string_parts(ids)
    fp_data, fp_offsets = _string_parts(fps_text)
    ts_data, ts_offsets = _string_parts(stamps)
    if n == 0 or (np.diff(id_offsets) == 0).any():
        return None
    for data in (id_data, fp_data, ts_data):
        # CRs, and backslashes (escapes in .tsv IDs): the row reader decides.
        if (data == 13).any() or (data == 92).any():
            return None
    fingerprints, ok = _hex16(fp_data, fp_offsets, _HEX_DIGITS)
    if not ok:
        return None
    micros, absent, ok = _seed_stamps(ts_data, ts_offsets)
    if not ok:
        return None
    seen = _IdTable()
    if seen.size_after(id_data, id_offsets) != n:
        return None  # a duplicate ID: reported by the row reader with both lines
    rows.start_file(src.display)
    rows.stats.documents += n
    return FingerprintTable(
        ids=ids,
        fingerprints=fingerprints,
        timestamps=micros,
        raw_timestamps=pc.if_else(pa.array(absent), pa.scalar(None, pa.string()), stamps),
        stats=rows.stats,
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _resolve_output(path: str | Path, output_format: str | None) -> tuple[str, str, str | None]:
    target = str(path)
    if output_format is not None:
        fmt, compression = _parse_format_spec(output_format, "output_format", OUTPUT_FORMATS)
        if compression is None and target != "-":
            compression = _split_name(target)[1]
    elif target == "-":
        fmt, compression = "tsv", None
    else:
        ext, compression = _split_name(target)
        fmt = _FORMAT_ALIASES.get(ext)
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(
                f"cannot tell the output format of {target} from its extension: name it "
                f".tsv, .csv, .jsonl (also .json/.ndjson) or .parquet; text formats may add "
                f".gz or .zst (in Python, output_format chooses one for any name)"
            )
    if fmt == "parquet" and compression is not None:
        raise ValueError(f"{target}: Parquet is compressed internally; .gz/.zst are not supported")
    return target, fmt, compression  # type: ignore[return-value]


_OUTPUT_SET = threading.local()


@contextmanager
def output_set() -> Iterator[None]:
    """Commit the files written inside the block as one set.

    Each output is still written under a temporary name beside its target, but the renames
    into place wait until the block ends without error; on any error (or Ctrl-C) every
    temporary file is removed. A run therefore leaves all its outputs or none of them.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> try:
        ...     with output_set():
        ...         write_table(d / "a.tsv", {"x": [1]})
        ...         raise RuntimeError("the second output failed")
        ... except RuntimeError:
        ...     pass
        >>> sorted(p.name for p in d.iterdir())
        []
    """
    pending: list[tuple[str, str]] = []
    outer = getattr(_OUTPUT_SET, "pending", None)
    _OUTPUT_SET.pending = pending
    try:
        yield
    except BaseException:
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _OUTPUT_SET.pending = outer
    if len(pending) < 2:
        for tmp, target in pending:
            os.replace(tmp, target)
        return
    # A kill between two renames would leave part of the set: the journal, written before
    # the first rename, lets the next run that writes here finish the renames (see
    # _finish_dead_commits), so the set ends complete.
    journal = _unique_temp(os.path.dirname(pending[0][1]), ".neardup-commit", ".json")
    with os.fdopen(journal[1], "w", encoding="utf-8") as fh:
        json.dump([[os.path.abspath(t), os.path.abspath(g)] for t, g in pending], fh)
        fh.flush()
        os.fsync(fh.fileno())
    for tmp, target in pending:
        os.replace(tmp, target)
    os.unlink(journal[0])


def _unique_temp(directory: str, stem: str, suffix: str) -> tuple[str, int]:
    """A new file ``<stem>.<pid>-<random>.<suffix>`` in ``directory``: (path, fd). The pid
    lets a later run tell the files of dead processes from those of live ones."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        path = os.path.join(directory, f"{stem}.{os.getpid()}-{secrets.token_hex(6)}{suffix}")
        try:
            return path, os.open(path, flags, 0o666)
        except FileExistsError:
            continue


_TEMP_OWNER = re.compile(r"\.(\d+)-[0-9a-f]{12}\.(?:tmp|json)$")


def process_gone(pid: int) -> bool:
    """True if no process ``pid`` exists on this machine (a run killed without cleaning up);
    False if it runs, whoever owns it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, but another user's
    return False


def _process_gone(name: str) -> bool:
    """True if the temp file ``name`` was made by a process that no longer exists here."""
    match = _TEMP_OWNER.search(name)
    return match is not None and process_gone(int(match[1]))


def _finish_dead_commits(directory: str) -> None:
    """Complete the output sets that killed runs were renaming into ``directory``, then remove
    the temporary files those runs left there. O(files in the directory)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in sorted(names):
        if name.startswith(".neardup-commit.") and _process_gone(name):
            path = os.path.join(directory, name)
            try:
                with open(path, encoding="utf-8") as fh:
                    renames = json.load(fh)
            except (OSError, ValueError):
                renames = []  # killed while writing the journal: no rename had started
            for tmp, target in renames:
                if os.path.exists(tmp):
                    os.replace(tmp, target)
            with contextlib.suppress(OSError):
                os.unlink(path)
    for name in names:
        if name.startswith(".") and name.endswith(".tmp") and _process_gone(name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def check_outputs(outputs: Iterable[str | Path | None], inputs: Iterable[str | Path]) -> None:
    """Check, before any work, that each output can be written and overwrites no input.

    Raises ``ValueError`` for an output that is one of the inputs (same file, or same path
    before it exists) or that two outputs share, ``FileNotFoundError`` / ``NotADirectoryError`` /
    ``IsADirectoryError`` / ``PermissionError`` naming the path otherwise. ``-`` and None are
    skipped. In each output directory, the output sets that killed runs were committing are
    completed and their temporary files removed. O(number of paths + files in their folders).
    """
    sources = []
    for p in inputs:
        try:
            names = local_paths(p)
        except (ValueError, FileNotFoundError):  # reported by the reader, or read by Spark
            names = [str(p)]
        for name in names:
            if name != "-":
                path = Path(name)
                sources.append((path.resolve(), path.stat() if path.exists() else None))
    seen: dict[Path, str] = {}
    for out in outputs:
        if out is None or str(out) == "-":
            continue
        target = Path(out)
        resolved = target.resolve()
        if resolved in seen:
            raise ValueError(f"output {out} is given twice (also as {seen[resolved]})")
        seen[resolved] = str(out)
        st = target.stat() if target.exists() else None
        for path, src in sources:
            if resolved == path or (st is not None and src is not None
                                    and (st.st_dev, st.st_ino) == (src.st_dev, src.st_ino)):
                raise ValueError(f"output {out} is the input {path}: refusing to overwrite it")
        if target.is_dir():
            raise IsADirectoryError(f"output {out} is a directory")
        parent = resolved.parent
        for ancestor in (parent, *parent.parents):
            if ancestor.exists():
                if not ancestor.is_dir():
                    raise NotADirectoryError(f"cannot write {out}: {ancestor} is a file, not a directory")
                break
        if not parent.is_dir():
            raise FileNotFoundError(f"output directory {parent} does not exist (writing {out})")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PermissionError(f"output directory {parent} is not writable (writing {out})")
        _finish_dead_commits(str(parent))


@contextmanager
def _atomic_output(target: str) -> Iterator[IO[bytes]]:
    """A binary file that appears under ``target`` only once completely written.

    The data goes to a hidden temporary file in the same directory, which is flushed, synced
    and renamed over ``target`` on success and removed on any error. ``-`` is stdout.
    """
    if target == "-":
        out = getattr(sys.stdout, "buffer", None)
        if out is not None:
            yield out
            out.flush()
        else:
            sink = io.BytesIO()
            yield sink
            sys.stdout.write(sink.getvalue().decode("utf-8"))
            sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"output directory {directory} does not exist (writing {target})")
    if os.path.isdir(target):
        raise IsADirectoryError(f"output {target} is a directory")
    tmp, fd = _unique_temp(directory, f".{os.path.basename(target)}", ".tmp")
    f = os.fdopen(fd, "wb", buffering=_READ_BUFFER)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        pending = getattr(_OUTPUT_SET, "pending", None)
        if pending is None:
            os.replace(tmp, target)
        else:
            pending.append((tmp, target))
    except BaseException:
        # Closing can fail again (a full disk): the temporary file must go all the same.
        with contextlib.suppress(OSError):
            f.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextmanager
def _compressed(fh: IO[bytes], compression: str | None) -> Iterator[IO[bytes]]:
    if compression is None:
        yield fh
    elif compression == "gzip":
        # No file name and mtime 0 in the header, so equal data gives equal bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, compresslevel=6, mtime=0) as g:
            yield g  # type: ignore[misc]
    else:
        writer = zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=False)
        try:
            yield writer  # type: ignore[misc]
        finally:
            writer.close()


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
        return pc.fill_null(arr.cast(_LARGE), _lit(null_text))
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
        if _any(pc.match_substring_regex(s, r"[\\\t\n\r]")):
            s = pc.replace_substring(s, "\\", "\\\\")
            s = pc.replace_substring(s, "\t", "\\t")
            s = pc.replace_substring(s, "\n", "\\n")
            s = pc.replace_substring(s, "\r", "\\r")
        return pc.fill_null(s, _lit(""))
    if fmt == "csv":
        need = pc.match_substring_regex(s, r'[,"\r\n]')
        if _any(need):
            quoted = pc.binary_join_element_wise(
                _lit('"'), pc.replace_substring(s, '"', '""'), _lit('"'), _lit("")
            )
            s = pc.if_else(need, quoted, s)
        return pc.fill_null(s, _lit(""))
    # JSON string literal
    if _any(pc.match_substring_regex(s, r'[\\"\x00-\x1f]')):
        s = pc.replace_substring(s, "\\", "\\\\")
        s = pc.replace_substring(s, '"', '\\"')
        if _any(pc.match_substring_regex(s, r"[\x00-\x1f]")):
            for code in range(32):
                ch = chr(code)
                if _any(pc.match_substring(s, ch)):
                    s = pc.replace_substring(s, ch, json.dumps(ch)[1:-1])
    s = pc.binary_join_element_wise(_lit('"'), s, _lit('"'), _lit(""))
    return pc.fill_null(s, _lit("null"))


def _header_cell(name: str, fmt: str) -> str:
    if fmt == "tsv":
        return (
            name.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )
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
    if fmt == "jsonl":
        parts: list[Any] = []
        for i, (name, cell) in enumerate(zip(names, cells)):
            parts.append(
                _lit(("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":")
            )
            parts.append(cell)
        parts.append(_lit("}\n"))
        lines = pc.binary_join_element_wise(*parts, _lit(""))
    else:
        sep = "\t" if fmt == "tsv" else ","
        if len(cells) == 1:
            only = cells[0]
            if fmt == "csv":
                # A lone empty field would read back as a blank line.
                only = pc.if_else(pc.equal(only, _lit("")), _lit('""'), only)
            row = only
        else:
            row = pc.binary_join_element_wise(*cells, _lit(sep))
        lines = pc.binary_join_element_wise(row, _lit(""), _lit("\n"))
    return _string_bytes(lines)


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

    Cost: O(rows × columns) in vectorised Arrow kernels; memory O(chunk) beyond the inputs for
    text formats, O(table) for Parquet.

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
    target, fmt, compression = _resolve_output(path, output_format)
    names, values, n = _prepare_columns(columns)
    if fmt == "parquet":
        arrays = [_to_arrow(name, col, 0, n) for name, col in zip(names, values)]
        table = pa.Table.from_arrays(arrays, names=names)
        with _atomic_output(target) as fh:
            _write_parquet(table, fh, target)
        return
    with _atomic_output(target) as fh, _compressed(fh, compression) as out:
        if header:
            sep = "\t" if fmt == "tsv" else ","
            if fmt != "jsonl":
                out.write((sep.join(_header_cell(c, fmt) for c in names) + "\n").encode("utf-8"))
        for start in range(0, n, _WRITE_CHUNK_ROWS):
            stop = min(n, start + _WRITE_CHUNK_ROWS)
            arrays = [_to_arrow(name, col, start, stop) for name, col in zip(names, values)]
            out.write(_encode_chunk(names, arrays, fmt))


def _write_parquet(table: pa.Table, fh: IO[bytes], target: str) -> None:
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
        f"a value of type {type(value).__name__} cannot be written as JSON: {_short(value)}"
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
    target, fmt, compression = _resolve_output(target, output_format)
    if fmt == "jsonl":
        with _atomic_output(target) as fh, _compressed(fh, compression) as out:
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
        with _atomic_output(target) as fh:
            _write_parquet(table, fh, target)
        return
    with _atomic_output(target) as fh, _compressed(fh, compression) as out:
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


# --------------------------------------------------------------------------------------------
# Fingerprint formatting
# --------------------------------------------------------------------------------------------

_HEX_PAIRS = np.frombuffer(
    "".join(f"{i:02x}" for i in range(256)).encode("ascii"), dtype=np.uint8
).reshape(256, 2)


def format_fingerprints(fps: np.ndarray) -> np.ndarray:
    """Fingerprints as 16 lowercase hex digits each (numpy ``<U16`` array), vectorised.

    ``int64`` input is read as two's complement; other integer dtypes must be non-negative.
    Cost: O(n) numpy work, no Python loop.

    Example:
        >>> format_fingerprints(np.array([255, 2**64 - 1], dtype=np.uint64)).tolist()
        ['00000000000000ff', 'ffffffffffffffff']
    """
    a = np.asarray(fps)
    if a.ndim != 1:
        raise ValueError(f"fps must be 1-dimensional, got shape {a.shape}")
    if a.dtype == np.int64:
        a = a.view(np.uint64)
    elif a.dtype != np.uint64:
        if a.dtype.kind not in "iu" and a.size:
            raise TypeError(f"fps must be an integer array (uint64), got dtype {a.dtype}")
        if a.dtype.kind == "i" and a.size and int(a.min()) < 0:
            raise ValueError("fps must be non-negative unless they are int64 (two's complement)")
        a = a.astype(np.uint64)
    digits = _HEX_PAIRS[a.astype(">u8").view(np.uint8).reshape(-1, 8)].reshape(-1, 16)
    return np.ascontiguousarray(digits).view("S16").reshape(-1).astype("U16")
