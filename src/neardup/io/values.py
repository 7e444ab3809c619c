"""Single values at the edge of the pipeline: timestamps, fingerprints, TSV cells.

Timestamps
    Every document gets an int64 *ordering key* in microseconds since the Unix epoch (UTC):
    numbers and numeric strings are seconds since the epoch (fractions allowed); other strings
    are ISO 8601 (``2024-01-02``, ``2024-01-02T03:04:05.5Z``, ``…+01:00``; a time without a zone
    is UTC); ``datetime`` / ``date`` values are converted exactly (:func:`time_to_us`,
    :func:`parse_timestamp`). :func:`us_to_iso` writes a key back as ISO 8601.

Fingerprints
    uint64 values, read from 16 hex digits, ``0x…`` hex or (signed) decimals
    (:func:`parse_fingerprint`) and written as 16 lowercase hex digits
    (:func:`format_fingerprints`).

TSV cells
    The one escape rule of every TSV the package writes and reads (:func:`tsv_escape`,
    :func:`tsv_unescape`).

Error messages
    :func:`json_type_name` and :func:`short_repr` describe a bad value in a few words.

Example:
    >>> us = parse_timestamp("2024-01-02T03:04:05.5Z")
    >>> us, us_to_iso(us)
    (1704164645500000, '2024-01-02T03:04:05.500000Z')
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit

#: How :func:`parse_fingerprint` reads a fingerprint written as a string.
FINGERPRINT_FORMATS = ("auto", "hex", "dec")

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_U64_MAX = (1 << 64) - 1
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US_PER_DAY = 86_400_000_000


# --------------------------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------------------------

_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"(?:\s*(Z|z|[+-]\d{2}(?::?\d{2})?))?)?"
)
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _iso_to_us(s: str) -> int | None:
    """Microseconds since the epoch of an ISO 8601 date or datetime, or None if ``s`` is not
    one (or names an impossible date or time).

    A missing zone means UTC; fractions past 6 digits are cut. The fixed-form fast path of the
    bulk fingerprint reader computes exactly this. O(len(s)).

    Example:
        >>> _iso_to_us("1970-01-01T00:00:01.5+00:00"), _iso_to_us("2024-02-30")
        (1500000, None)
    """
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


#: Digits of seconds beyond which a time cannot be int64 microseconds (9.2e12 s has 13).
_MAX_SECONDS_DIGITS = 20


def time_to_us(value: Any) -> int | None:
    """Ordering key of a time value in microseconds since the epoch, or None if it is not one.

    The rule of :func:`parse_timestamp` (which raises instead of answering None), for readers
    that report a bad value their own way. O(len(value)).

    Example:
        >>> time_to_us("1970-01-02"), time_to_us(1.5), time_to_us("soon")
        (86400000000, 1500000, None)
    """
    kind = type(value)
    if kind is str:
        s = value.strip()
        if len(s) > _MAX_SECONDS_DIGITS and (digits := s.lstrip("+-")).isdigit():
            # Rare: leading zeros, or past int64 (int() refuses over 4,300 digits).
            digits = digits.lstrip("0") or "0"
            if len(digits) > _MAX_SECONDS_DIGITS:
                return None
            s = s[: len(s) - len(s.lstrip("+-"))] + digits
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
    us = time_to_us(value)
    if us is None:
        raise ValueError(
            f"timestamp must be seconds since the epoch or an ISO 8601 date/datetime, got {value!r}"
        )
    return us


def us_to_iso(us: int, timespec: str = "microseconds") -> str:
    """Microseconds since the epoch as ISO 8601 UTC: ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    ``timespec`` is that of :meth:`datetime.datetime.isoformat`: ``"microseconds"`` (the
    default) writes six fraction digits always, which :func:`parse_timestamp` reads back
    exactly; ``"auto"`` leaves the fraction out when it is zero (``YYYY-MM-DDTHH:MM:SSZ``),
    the form of the index's records. Years 1..9999 only (``datetime``'s range):
    ``OverflowError`` beyond. O(1).

    Example:
        >>> us_to_iso(1_500_000), us_to_iso(-1)
        ('1970-01-01T00:00:01.500000Z', '1969-12-31T23:59:59.999999Z')
        >>> us_to_iso(0, timespec="auto"), us_to_iso(1_500_000, timespec="auto")
        ('1970-01-01T00:00:00Z', '1970-01-01T00:00:01.500000Z')
    """
    # isoformat, unlike strftime("%Y"), pads years below 1000 to four digits.
    stamp = (_EPOCH + timedelta(microseconds=int(us))).isoformat(timespec=timespec)
    return stamp.removesuffix("+00:00") + "Z"


# --------------------------------------------------------------------------------------------
# Fingerprints
# --------------------------------------------------------------------------------------------


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


def fingerprint_value(value: Any, fingerprint_format: str) -> int | None:
    """One fingerprint as an int in 0..2**64-1, or None if ``value`` is not one.

    The rule of :func:`parse_fingerprint` (which raises instead of answering None) for a
    ``fingerprint_format`` already checked. O(len(value)).

    Example:
        >>> fingerprint_value("00000000000000ff", "auto"), fingerprint_value(" 1", "auto")
        (255, None)
    """
    if isinstance(value, str):
        return _str_to_fp(value, fingerprint_format)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _int_to_fp(int(value))
    return None


def check_fingerprint_format(fingerprint_format: str) -> None:
    """Raise ``ValueError`` unless ``fingerprint_format`` is one of :data:`FINGERPRINT_FORMATS`.

    Example:
        >>> check_fingerprint_format("hex")
    """
    if fingerprint_format not in FINGERPRINT_FORMATS:
        raise ValueError(
            f"fingerprint_format must be one of {', '.join(FINGERPRINT_FORMATS)}; "
            f"got {fingerprint_format!r}"
        )


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
    check_fingerprint_format(fingerprint_format)
    fp = fingerprint_value(value, fingerprint_format)
    if fp is None:
        raise ValueError(
            f"fingerprint must be 16 hex digits, 0x-hex or a decimal in -2**63..2**64-1 "
            f"(format {fingerprint_format!r}), got {value!r}"
        )
    return fp


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


# --------------------------------------------------------------------------------------------
# TSV cells
# --------------------------------------------------------------------------------------------


def tsv_escape(s: str) -> str:
    """One TSV cell: ``\\`` → ``\\\\``, tab → ``\\t``, newline → ``\\n``, CR → ``\\r``.

    The one rule of every TSV this package writes (:func:`~neardup.io.write_table`,
    :func:`~neardup.io.write_records`, labelling sheets); :func:`tsv_unescape` reverses it. TSV
    is never quoted: ``"`` is a character like any other. O(len(s)).

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


# --------------------------------------------------------------------------------------------
# Values in error messages
# --------------------------------------------------------------------------------------------


def json_type_name(value: Any) -> str:
    """The JSON name of a value's type (``null``, ``boolean``, ``number``, ``string``,
    ``array``, ``object``; else the Python type's name), for "expected …, got …" messages. O(1).

    Example:
        >>> json_type_name(None), json_type_name(1.5), json_type_name([1])
        ('null', 'number', 'array')
    """
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


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (ending ``...``) so that one huge bad value
    does not flood an error message. O(size of the repr).

    Example:
        >>> short_repr("x" * 100, 10)
        "'xxxxxx..."
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def utf8_length(s: str) -> int | None:
    """UTF-8 length of ``s`` in bytes, or None if it holds an unpaired surrogate (from a JSON
    escape), which no UTF-8 file can hold. O(len(s)).

    Example:
        >>> utf8_length("héllo"), utf8_length("\\ud800")
        (6, None)
    """
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return None


# Seed timestamps written back as given: the bulk seed reader keeps each timestamp's
# microseconds and its form, not its text.

STAMP_ABSENT = 0
"""The form of an absent seed timestamp; 1–12: that many digits (seconds); ``20 + f``: ISO 8601
``YYYY-MM-DDTHH:MM:SS[.f digits]Z``. With the microseconds, a form gives back the text."""
_ISO_FORM = 20


@njit(cache=True, nogil=True)
def stamp_form(length):
    """The form of a seed timestamp of ``length`` characters that the bulk seed reader
    (:mod:`neardup.io.fingerprints`) took: up to 12 it is digits (seconds), 20 an ISO time
    without fraction, else one with ``length - 21`` fraction digits."""
    if length <= 12:
        return length
    return _ISO_FORM + (length - 21 if length > 20 else 0)


@njit(cache=True, nogil=True)
def _civil_from_days(days):
    # The proleptic Gregorian date of days from 1970-01-01 (Howard Hinnant's algorithm).
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if m <= 2 else 0), m, d


@njit(cache=True, nogil=True)
def _put_digits(out, at, value, count):
    """``value`` as ``count`` decimal digits, zero-padded, at ``out[at:]``."""
    for k in range(count - 1, -1, -1):
        out[at + k] = 48 + value % 10
        value //= 10


@njit(cache=True, nogil=True)
def _write_stamps(micros, forms, offsets, out):
    """The text of each timestamp from its microseconds and form (see :data:`STAMP_ABSENT`) at
    ``out[offsets[i]:]``: exactly the text the bulk seed reader read."""
    for i in range(micros.shape[0]):
        form = forms[i]
        at = offsets[i]
        if form == STAMP_ABSENT:
            continue
        seconds = micros[i] // 1_000_000
        if form < _ISO_FORM:
            _put_digits(out, at, seconds, form)
            continue
        days = seconds // 86_400
        clock = seconds - days * 86_400
        y, m, d = _civil_from_days(days)
        _put_digits(out, at, y, 4)
        _put_digits(out, at + 5, m, 2)
        _put_digits(out, at + 8, d, 2)
        _put_digits(out, at + 11, clock // 3600, 2)
        _put_digits(out, at + 14, clock // 60 % 60, 2)
        _put_digits(out, at + 17, clock % 60, 2)
        for k, c in ((4, 45), (7, 45), (10, 84), (13, 58), (16, 58)):  # - - T : :
            out[at + k] = c
        fraction = form - _ISO_FORM
        if fraction:
            out[at + 19] = 46  # '.'
            _put_digits(
                out, at + 20, (micros[i] - seconds * 1_000_000) // 10 ** (6 - fraction), fraction
            )
        out[offsets[i + 1] - 1] = 90  # 'Z'


def stamp_texts(micros: np.ndarray, forms: np.ndarray) -> pa.StringArray:
    """The seed timestamps as given, an Arrow string array (null where absent), written back
    from their microseconds since the epoch and forms (:func:`stamp_form`). O(rows).

    Example:
        >>> micros = np.array([17_000_000, 0, 1_704_164_645_500_000])
        >>> stamp_texts(micros, np.array([2, STAMP_ABSENT, 21], np.uint8)).to_pylist()
        ['17', None, '2024-01-02T03:04:05.5Z']
    """
    form = forms.astype(np.int64)
    iso = _ISO_FORM + (form > _ISO_FORM) * (form - _ISO_FORM + 1)
    lengths = np.where(form < _ISO_FORM, form, iso)
    offsets = np.zeros(len(forms) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    _write_stamps(micros, forms, offsets, out)
    present = forms != STAMP_ABSENT
    bitmap = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.StringArray.from_buffers(len(forms), pa.py_buffer(offsets), pa.py_buffer(out), bitmap)
