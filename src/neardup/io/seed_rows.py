"""The seed's plain fingerprint rows, ``ID <TAB> 16 hex digits <TAB> timestamp``, parsed by one
compiled pass over their bytes.

The bulk reader of :mod:`neardup.io.fingerprints` parses a file's blocks with it on all
cores (:func:`parsed_seed_block`), and the Spark engine's reading tasks a batch of lines at
once (:func:`seed_lines`). The pass takes only rows the row-by-row reading would accept with
the same values; at the first other row it gives up, and the caller reads row by row.

Example:
    >>> ids, fps, times = seed_lines(pa.array(["a\\t00000000000000ff\\t1700000000"]))
    >>> ids.to_pylist(), fps.tolist(), times.tolist()
    (['a'], [255], [1700000000000000])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from neardup.ids import FORBIDDEN_RE2, MAX_ID_LENGTH
from neardup.io.jsonl_blocks import lines_block
from neardup.io.values import STAMP_ABSENT, stamp_form

__all__ = ["SeedBlock", "parsed_seed_block", "seed_lines"]

_HEX_DIGITS = np.full(256, 255, dtype=np.uint8)
_HEX_DIGITS[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_DIGITS[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_DIGITS[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)

_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


# Bytes the parser looks for.
_TAB, _LF, _BACKSLASH = 9, 10, 92

_ID_STOPS = np.zeros(256, dtype=np.bool_)
"""The bytes an ID ends at: its tab, or a backslash or any other ASCII control character,
which no ID may hold (no plain seed row)."""
_ID_STOPS[[*range(0x20), 0x7F, _BACKSLASH]] = True


@njit(cache=True, nogil=True)
def _digits(data, start, count):
    """The decimal number of ``count`` ASCII digits at ``start``, or -1."""
    v = 0
    for k in range(count):
        c = data[start + k]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@njit(cache=True, nogil=True)
def _days_from_civil(y, m, d):
    # Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True, nogil=True)
def _stamp_micros(data, a, length, month_days):
    """``(µs, ok)`` of the seed timestamp ``data[a : a + length]``, not empty: 1–12 digits
    (seconds) or exactly ``YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z`` (a valid date, HH ≤ 23, MM and
    SS ≤ 59), as :func:`~neardup.io.values.time_to_us` reads them; ok=False for any other."""
    if length <= 12:
        v = _digits(data, a, length)
        if v >= 0:
            return v * 1_000_000, True
    if length < 20 or length > 27 or length == 21 or data[a + length - 1] != 90:  # 'Z'
        return 0, False
    if (
        data[a + 4] != 45
        or data[a + 7] != 45
        or data[a + 10] != 84
        or data[a + 13] != 58
        or data[a + 16] != 58
    ):  # - - T : :
        return 0, False
    y, mo, d = _digits(data, a, 4), _digits(data, a + 5, 2), _digits(data, a + 8, 2)
    h, mi, se = _digits(data, a + 11, 2), _digits(data, a + 14, 2), _digits(data, a + 17, 2)
    if y < 1 or mo < 1 or mo > 12 or d < 1 or h < 0 or h > 23:
        return 0, False
    if mi < 0 or mi > 59 or se < 0 or se > 59:
        return 0, False
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    if d > month_days[mo - 1] + (1 if mo == 2 and leap else 0):
        return 0, False
    frac = 0
    if length > 20:
        if data[a + 19] != 46:  # '.'
            return 0, False
        digits = length - 21
        frac = _digits(data, a + 20, digits)
        if frac < 0:
            return 0, False
        for _ in range(6 - digits):
            frac *= 10
    seconds = _days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se
    return seconds * 1_000_000 + frac, True


@njit(cache=True, nogil=True)
def _bytes_after(data, a, a_end, b, b_end):
    """Whether ``data[b:b_end]`` sorts strictly after ``data[a:a_end]``, byte by byte."""
    for k in range(min(a_end - a, b_end - b)):
        if data[a + k] != data[b + k]:
            return data[b + k] > data[a + k]
    return b_end - b > a_end - a


@njit(cache=True, nogil=True)
def _parse_seed_block(buf, hex_digits, stops, month_days, fps, micros, forms, ids, id_offsets):
    """Parse the seed rows ``buf`` holds (whole lines) in one pass: fingerprints, timestamps and
    their forms (:func:`~neardup.io.values.stamp_form`) into ``fps``, ``micros``, ``forms``; the IDs' bytes into
    ``ids`` with their Arrow offsets (``rows + 1`` of them, from 0) into ``id_offsets``.
    ``stops`` marks the bytes an ID ends at (:data:`_ID_STOPS`).

    Takes what the Arrow CSV reader (tab-separated, no quoting, three columns) and the
    checks the bulk reader has always made accept: blank lines are skipped; every other line
    is ``ID <TAB> 16 hex digits <TAB> timestamp`` with a non-empty ID free of CR and
    backslash and a timestamp :func:`_stamp_micros` takes, or empty. Returns ``(rows, ok,
    ascending, ascii)``: ``ok`` is False at the first line that is not so; ``ascending``
    whether the IDs increase strictly, byte by byte; ``ascii`` whether their bytes are all
    below 128. O(len(buf)).
    """
    n = buf.shape[0]
    rows = 0
    id_at = 0
    ascending = True
    ascii = True
    prev_start = 0
    id_offsets[0] = 0
    pos = 0
    while pos < n:
        # The ID, copied as it is scanned: up to a byte the parser stops at.
        p = pos
        high = 0
        while p < n and not stops[buf[p]]:
            ids[id_at + p - pos] = buf[p]
            high |= buf[p]
            p += 1
        if p < n and buf[p] == _LF and p == pos:
            pos += 1  # a blank line
            continue
        if p == n or buf[p] != _TAB or p == pos:
            return rows, False, ascending, ascii
        ascii &= high < 128
        id_end = id_at + p - pos
        if rows > 0 and ascending:
            ascending = _bytes_after(ids, prev_start, id_at, id_at, id_end)
        prev_start = id_at
        id_at = id_end
        p += 1
        if p + 16 >= n or buf[p + 16] != _TAB:
            return rows, False, ascending, ascii
        v = np.uint64(0)
        for k in range(16):
            d = hex_digits[buf[p + k]]
            if d == 255:
                return rows, False, ascending, ascii
            v = (v << np.uint64(4)) | np.uint64(d)
        p += 17
        e = p
        while e < n and buf[e] != _LF:
            e += 1
        if e == p:
            micros[rows] = 0
            forms[rows] = STAMP_ABSENT
        else:
            us, ok = _stamp_micros(buf, p, e - p, month_days)
            if not ok:
                return rows, False, ascending, ascii
            micros[rows] = us
            forms[rows] = stamp_form(e - p)
        fps[rows] = v
        rows += 1
        id_offsets[rows] = id_at
        pos = e + 1
    return rows, True, ascending, ascii


@dataclass
class SeedBlock:
    """What a block of seed rows gave: ok=False if the bulk reader does not take it."""

    ok: bool
    rows: int = 0
    ids: pa.StringArray | None = None
    ascending: bool = False


def parsed_seed_block(
    buf: np.ndarray,
    fps: np.ndarray,
    micros: np.ndarray,
    forms: np.ndarray,
    ids: np.ndarray,
    id_offsets: np.ndarray,
) -> SeedBlock:
    """Parse the seed rows of ``buf`` (whole lines) into the given columns
    (:func:`_parse_seed_block`), then check their IDs as the row checks would: length, and
    past ASCII, UTF-8 and the characters no ID may hold. ``ok`` False when the bulk reader
    does not take the block."""
    n, ok, ascending, ascii = _parse_seed_block(
        buf, _HEX_DIGITS, _ID_STOPS, _MONTH_DAYS, fps, micros, forms, ids, id_offsets
    )
    if not ok:
        return SeedBlock(False)
    id_offsets = id_offsets[: n + 1]  # the Arrow column is a view of the arrays
    id_column = pa.StringArray.from_buffers(
        n, pa.py_buffer(id_offsets), pa.py_buffer(ids[: int(id_offsets[-1])])
    )
    if n and np.diff(id_offsets).max() > MAX_ID_LENGTH:
        return SeedBlock(False)  # maybe too long an ID: the row checks count its characters
    if not ascii:
        try:
            id_column.validate(full=True)  # UTF-8, as the Arrow CSV reader requires
        except pa.ArrowInvalid:
            return SeedBlock(False)
        if pc.any(pc.match_substring_regex(id_column, FORBIDDEN_RE2)).as_py():
            return SeedBlock(False)  # a C1 control character or a line separator
    return SeedBlock(True, n, id_column, ascending)


def seed_lines(lines: pa.StringArray) -> tuple[pa.StringArray, np.ndarray, np.ndarray] | None:
    """The IDs, fingerprints (uint64) and times (microseconds since the epoch, 0 when absent)
    of ``lines``, each one seed row ``ID <TAB> 16 hex digits <TAB> timestamp`` without its
    line end, parsed by the bulk reader's compiled pass over the lines joined; None unless
    every line is a row the bulk reader takes (then each is read on its own, as
    :func:`~neardup.io.fingerprints.fingerprint_line` reads it, with the same result for
    these). O(bytes).

    Example:
        >>> ids, fps, times = seed_lines(pa.array(["a\\t00000000000000ff\\t2", "b\\tffffffffffffffff\\t"]))
        >>> ids.to_pylist(), fps.tolist(), times.tolist()
        (['a', 'b'], [255, 18446744073709551615], [2000000, 0])
        >>> seed_lines(pa.array(["id\\tfingerprint\\ttimestamp"])) is None
        True
    """
    n = len(lines)
    if n == 0 or lines.null_count:
        return None
    buf = lines_block(lines)
    fps = np.empty(n + 1, dtype=np.uint64)
    micros = np.empty(n + 1, dtype=np.int64)
    forms = np.empty(n + 1, dtype=np.uint8)
    id_offsets = np.empty(n + 2, dtype=np.int32)
    block = parsed_seed_block(buf, fps, micros, forms, np.empty_like(buf), id_offsets)
    if not block.ok or block.rows != n:
        return None  # a blank line (which the parser skips) or a row it does not take
    return block.ids, fps[:n], micros[:n]
