"""Fingerprint tables: ``id <TAB> fingerprint [<TAB> timestamp]`` rows, or tables with those columns.

:func:`read_fingerprints` reads the seed map-reduce's rows and the tables
:func:`~neardup.io.write_table` writes into a :class:`FingerprintTable`, checked by the rules
of :class:`~neardup.io.rows.RowChecks`. One uncompressed file of the seed's plain rows is parsed
in bulk by Arrow and compiled passes (:func:`_seed_rows_in_bulk`); anything else, or any row
that is not plainly valid, goes row by row.

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from neardup.io.files import (
    FORMAT_OF_EXTENSION,
    STDIN_NAME,
    Source,
    input_paths,
    open_input,
    refuse_compressed_parquet,
    split_name,
)
from neardup.io.rows import (
    BadRow,
    IdTable,
    ReadStats,
    RowChecks,
    missing_column,
    valid_fingerprint,
    valid_fingerprint_time,
    valid_id,
)
from neardup.io.sources import (
    decoded_line,
    delimited_rows,
    iter_lines,
    json_object_line,
    open_parquet,
)
from neardup.io.values import check_fingerprint_format, tsv_unescape


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


class _FingerprintCollector:
    """The rows of a read of fingerprints, checked one by one, in lists."""

    def __init__(self, on_error: str, fingerprint_format: str) -> None:
        self.rows = RowChecks(on_error)
        self.fingerprint_format = fingerprint_format
        self.seen: dict[str, int] = {}  # each ID's first row key
        self.ids: list[str] = []
        self.fps: list[int] = []
        self.times: list[int] = []
        self.raw: list[Any] = []

    def add(self, path: str, line: int, ident: Any, fp_value: Any, time_value: Any) -> None:
        rows = self.rows
        # Fast paths first: this runs once per row.
        if type(ident) is not str or not ident or not ident.isascii():
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
        seen = self.seen
        size = len(seen)
        key = rows.row_key(line)
        first = seen.setdefault(ident, key)
        if len(seen) == size:
            rows.duplicate(ident, first, key, "id")
            return
        self.ids.append(ident)
        self.fps.append(fp)
        self.times.append(us)
        self.raw.append(time_value)
        rows.stats.documents += 1

    def read_plain(self, src: Source, escaped: bool) -> None:
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

    def read_jsonl(self, src: Source) -> None:
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

    def read_csv(self, src: Source) -> None:
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

    def read_parquet(self, src: Source) -> None:
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
    check_fingerprint_format(fingerprint_format)
    collector = _FingerprintCollector(on_error, fingerprint_format)
    plans: list[tuple[Source, str]] = []
    for p in input_paths(paths):
        path = str(p)
        if path != "-" and os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))
            files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        else:
            files = [path]
        for f in files:
            if f != "-" and not os.path.exists(f):
                raise FileNotFoundError(f"input not found: {f}")
            ext, compression = split_name(f) if f != "-" else ("", None)
            fmt = FORMAT_OF_EXTENSION.get(ext, "plain")
            refuse_compressed_parquet(f, fmt, compression)
            display = STDIN_NAME if f == "-" else f
            plans.append((Source(f, display, fmt, compression), fmt))
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
        raw_timestamps=pa.chunked_array(
            [pa.array([None if v is None else str(v) for v in collector.raw], type=pa.string())]
        ),
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
    :func:`~neardup.io.values.time_to_us` reads them; ok=False at the first other value."""
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
        if (
            data[a + 4] != 45
            or data[a + 7] != 45
            or data[a + 10] != 84
            or data[a + 13] != 58
            or data[a + 16] != 58
        ):  # - - T : :
            return micros, absent, False
        y, mo, d = _digits(data, a, 4), _digits(data, a + 5, 2), _digits(data, a + 8, 2)
        h, mi, se = _digits(data, a + 11, 2), _digits(data, a + 14, 2), _digits(data, a + 17, 2)
        if (
            y < 1
            or mo < 1
            or mo > 12
            or d < 1
            or h < 0
            or h > 23
            or mi < 0
            or mi > 59
            or se < 0
            or se > 59
        ):
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
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    data = (
        np.frombuffer(arr.buffers()[2], dtype=np.uint8)
        if arr.buffers()[2]
        else np.zeros(0, np.uint8)
    )
    return data, offsets


def _seed_rows_in_bulk(src: Source, rows: RowChecks) -> FingerprintTable | None:
    """The seed's rows ``id <TAB> 16 hex digits <TAB> timestamp`` of one uncompressed file,
    parsed by Arrow and checked in vectorised passes: O(rows) with no Python per row.

    Returns None, having read nothing into ``rows``, as soon as anything is not plainly valid
    (a bad or missing field, a header, escapes in a ``.tsv`` ID, a BOM, a timestamp that is not
    seconds or ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, a duplicate ID…): the row-by-row reader then reads the
    file and reports each row exactly as it always has. Timestamps of that ISO form are parsed
    and checked by one compiled pass (:func:`_seed_stamps`) that computes exactly what
    :func:`~neardup.io.values.time_to_us` computes for that one form.
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
                strings_can_be_null=False,
            ),
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
    seen = IdTable()
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
