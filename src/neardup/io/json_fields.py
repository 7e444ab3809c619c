"""A compiled reader of up to three fields of one-object-a-line JSON, exact or silent.

:func:`json_fields` reads the lines of a block (their starts from
:func:`~neardup.io.jsonl_blocks.scan_block`) as JSON objects and takes out the values of the
wanted fields: strings unescaped into one UTF-8 buffer a field (a string without a backslash
is copied as it is), integers of up to 18 digits as int64. Every line is checked against the
JSON grammar (RFC 8259) as a whole, nested and extra fields included, so a line it accepts is
one :func:`json.loads` reads, and to the same values. It answers only when every line is such
an object; it gives up on the first line that is not, or that it cannot represent exactly (a
wanted field given twice, a wanted string holding an unpaired surrogate escape, a line nested
deeper than :data:`MAX_NESTING`, ``NaN`` and the other literals the standard library adds to
JSON): the caller then reads the block another way, which reports bad rows. A wanted field
that is missing or of another type is not an error here: its kind says so.

Compiled, without the GIL; one pass over the bytes, the runs between quotes, backslashes and
control bytes found and copied 16 bytes at a time. A 16 MB block with the row checks after
it, one thread, CPU time: english_200k 0.96 GB/s, heavy_200k 0.92 GB/s, where Arrow's JSON
reader gave 0.74-0.78 and 0.71-0.72 GB/s. Copying each run as its chunks are tested, not
byte by byte once its end is found, took a quarter off the kernel's time (one thread, on a
slower day: 268 MB of English 0.37 -> 0.28 s, heavy_200k 0.40 -> 0.30 s).

Example:
    >>> block = b'{"id": 7, "text": "caf\\\\u00e9 \\\\ud83d\\\\ude00", "x": [1, {"y": null}]}\\n'
    >>> got = json_fields(block, np.array([0, len(block)]), [b"id", b"text"])
    >>> got.kinds.tolist(), got.integers[0].tolist(), got.strings(1)
    ([[2], [1]], [7], ['café 😀'])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numba import njit

#: Deepest nesting of arrays and objects in a field's value (the standard parser stops at a
#: recursion limit; a line nested deeper is left to it).
MAX_NESTING = 512

#: The kinds of a wanted field's value in a line.
MISSING, STRING, INTEGER, OTHER = 0, 1, 2, 3

# Where a field was found (_found), and the decoded bytes of a key (_KEY).
_KEY = 3

# The helpers allocate nothing, so they are compiled without numba's reference counting
# (``_nrt=False``): with it, each call of a helper taking an array made an atomic increment
# and decrement of the array's count, 58 % of the kernel's time on short lines
# (410 -> 150 ns a line of 70 bytes, one thread).
_helper = njit(_nrt=False)

# The byte each simple escape stands for (0: not an escape JSON has).
_ESCAPES = np.zeros(256, np.uint8)
for _char, _byte in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    _ESCAPES[_char] = _byte
_TRUE, _FALSE, _NULL = (np.frombuffer(word, np.uint8) for word in (b"true", b"false", b"null"))


@_helper
def _space(b):
    return (b == 0x20) | (b == 0x0A) | (b == 0x0D) | (b == 0x09)


@_helper
def _skip_spaces(buf, i, end):
    while i < end and _space(buf[i]):
        i += 1
    return i


# Bytes tested at once for a quote, backslash or control byte: a loop without a branch,
# which the compiler vectorises (the byte loop alone stops at each byte: 16 MB of English
# JSON Lines 0.6 -> 2.5 GB/s for the search alone).
_CHUNK = 16


@_helper
def _special_in(buf, lo, hi):
    """Whether ``buf[lo:hi]`` holds a quote, backslash or control byte."""
    found = np.uint8(0)
    for k in range(np.uint64(lo), np.uint64(hi)):
        b = buf[k]
        found |= (b == 0x22) | (b == 0x5C) | (b < 0x20)
    return found != 0


@_helper
def _plain_end(buf, i, end):
    """The first position at or after ``i`` holding a quote, backslash or control byte, or
    ``end``: chunks of :data:`_CHUNK` bytes tested at once, then byte by byte."""
    while i + _CHUNK <= end and not _special_in(buf, i, i + _CHUNK):
        i += _CHUNK
    while i < end:
        b = buf[i]
        if b == 0x22 or b == 0x5C or b < 0x20:
            break
        i += 1
    return i


@_helper
def _digits_after(buf, i, end):
    """The position after the decimal digits at ``buf[i]``, or -1 when there is none (a
    fraction or an exponent has at least one)."""
    start = i
    while i < end and 0x30 <= buf[i] <= 0x39:
        i += 1
    return i if i > start else -1


@_helper
def _hex4(buf, i, end):
    """The value of the 4 hex digits at ``buf[i:i + 4]``, or -1."""
    if i + 4 > end:
        return -1
    value = 0
    for k in range(i, i + 4):
        b = np.int64(buf[k])
        if 0x30 <= b <= 0x39:
            digit = b - 0x30
        elif 0x61 <= b <= 0x66:
            digit = b - 0x57
        elif 0x41 <= b <= 0x46:
            digit = b - 0x37
        else:
            return -1
        value = value * 16 + digit
    return value


@_helper
def _put_code_point(out, o, cp):
    """Write ``cp`` as UTF-8 at ``out[o]``; return the position after it."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@_helper
def _string(buf, i, end, out, o, escapes):
    """Read the JSON string whose opening quote is at ``buf[i - 1]``, writing its UTF-8 at
    ``out[o]``. Returns (the position after the closing quote, the position after the
    written bytes, status): status 0 for a string, 1 for one holding an unpaired surrogate
    escape (valid JSON, no UTF-8: what it wrote is not the value), -1 for no JSON string."""
    status = 0
    while i < end:
        # The run up to the next quote, backslash or control byte is copied as it is: a
        # chunk at a time as each is tested (a copy of fixed length, which the compiler
        # makes one move; see the module docstring), then byte by byte. Not a slice: a
        # view's reference counting costs more.
        while i + _CHUNK <= end and not _special_in(buf, i, i + _CHUNK):
            for k in range(_CHUNK):
                out[o + k] = buf[i + k]
            i += _CHUNK
            o += _CHUNK
        while i < end:
            b = buf[i]
            if b == 0x22 or b == 0x5C or b < 0x20:
                break
            out[o] = b
            o += 1
            i += 1
        if i == end or buf[i] < 0x20:
            return i, o, -1
        if buf[i] == 0x22:
            return i + 1, o, status
        if i + 1 == end:
            return i, o, -1
        e = buf[i + 1]
        if e != 0x75:  # "u"
            if escapes[e] == 0:
                return i, o, -1
            out[o] = escapes[e]
            o += 1
            i += 2
            continue
        cp = _hex4(buf, i + 2, end)
        if cp < 0:
            return i, o, -1
        i += 6
        if 0xD800 <= cp < 0xDC00:
            low = -1
            if i + 1 < end and buf[i] == 0x5C and buf[i + 1] == 0x75:
                low = _hex4(buf, i + 2, end)
            if 0xDC00 <= low < 0xE000:
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            else:
                status = 1
                continue
        elif 0xDC00 <= cp < 0xE000:
            status = 1
            continue
        o = _put_code_point(out, o, cp)
    return i, o, -1


@_helper
def _string_end(buf, i, end, escapes):
    """Skip the JSON string whose opening quote is at ``buf[i - 1]``, writing nothing:
    (the position after its closing quote or -1 for no JSON string, whether it holds an
    escape). Unpaired surrogate escapes are valid JSON: not told here."""
    escaped = False
    while i < end:
        i = _plain_end(buf, i, end)
        if i == end or buf[i] < 0x20:
            return -1, escaped
        if buf[i] == 0x22:
            return i + 1, escaped
        escaped = True
        if i + 1 == end:
            return -1, escaped
        e = buf[i + 1]
        if e == 0x75:  # "u"
            if _hex4(buf, i + 2, end) < 0:
                return -1, escaped
            i += 6
        elif escapes[e] == 0:
            return -1, escaped
        else:
            i += 2
    return -1, escaped


@_helper
def _literal(buf, i, end, word):
    """The position after ``word`` if it is at ``buf[i]``, else -1."""
    if i + len(word) > end:
        return -1
    for k in range(len(word)):
        if buf[i + k] != word[k]:
            return -1
    return i + len(word)


@_helper
def _number(buf, i, end):
    """Read a JSON number at ``buf[i]``: (position after it or -1, whether it is an integer
    of at most 18 digits, its value then)."""
    negative = buf[i] == 0x2D
    if negative:
        i += 1
    if i == end:
        return -1, False, 0
    start = i
    value = 0
    if buf[i] == 0x30:
        i += 1
    elif 0x31 <= buf[i] <= 0x39:
        while i < end and 0x30 <= buf[i] <= 0x39:
            if i - start < 18:
                value = value * 10 + np.int64(buf[i] - 0x30)
            i += 1
    else:
        return -1, False, 0
    small = i - start <= 18
    if i < end and buf[i] == 0x2E:  # "."
        i = _digits_after(buf, i + 1, end)
        if i < 0:
            return -1, False, 0
        small = False
    if i < end and (buf[i] == 0x65 or buf[i] == 0x45):  # "e", "E"
        i += 1
        if i < end and (buf[i] == 0x2B or buf[i] == 0x2D):
            i += 1
        i = _digits_after(buf, i, end)
        if i < 0:
            return -1, False, 0
        small = False
    return i, small, -value if negative else value


@_helper
def _scalar(buf, i, end, escapes):
    """Skip the string, number or literal at ``buf[i]``: the position after it, or -1."""
    b = buf[i]
    if b == 0x22:
        return _string_end(buf, i + 1, end, escapes)[0]
    if b == 0x2D or 0x30 <= b <= 0x39:
        return _number(buf, i, end)[0]
    if b == 0x74:
        return _literal(buf, i, end, _TRUE)
    if b == 0x66:
        return _literal(buf, i, end, _FALSE)
    if b == 0x6E:
        return _literal(buf, i, end, _NULL)
    return -1


@_helper
def _key_colon(buf, i, end, escapes):
    """Read an object's key (its quote at ``buf[i]``) and the colon after it, writing
    nothing: (position after the colon or -1, whether the key holds an escape); the key's
    bytes as written are ``buf[i + 1 : its closing quote]``."""
    if i >= end or buf[i] != 0x22:
        return -1, False
    i, escaped = _string_end(buf, i + 1, end, escapes)
    if i < 0:
        return -1, False
    i = _skip_spaces(buf, i, end)
    if i >= end or buf[i] != 0x3A:  # ":"
        return -1, False
    return i + 1, escaped


@_helper
def _value(buf, i, end, stack, escapes):
    """Skip one JSON value of any nesting at ``buf[i]`` (spaces before it skipped): the
    position after it, or -1."""
    depth = 0
    while True:
        i = _skip_spaces(buf, i, end)
        if i >= end:
            return -1
        b = buf[i]
        if b == 0x7B or b == 0x5B:  # "{", "["
            if depth == stack.shape[0]:
                return -1  # nested deeper than MAX_NESTING
            i = _skip_spaces(buf, i + 1, end)
            if i < end and buf[i] == b + 2:  # "}" or "]": empty
                i += 1
            else:
                stack[depth] = b
                depth += 1
                if b == 0x7B:
                    i = _key_colon(buf, i, end, escapes)[0]
                    if i < 0:
                        return -1
                continue
        else:
            i = _scalar(buf, i, end, escapes)
            if i < 0:
                return -1
        # After a value: close what it ends, or go on after a comma.
        while depth:
            i = _skip_spaces(buf, i, end)
            if i >= end:
                return -1
            b = buf[i]
            if b == 0x2C:  # ","
                i += 1
                if stack[depth - 1] == 0x7B:
                    i = _key_colon(buf, _skip_spaces(buf, i, end), end, escapes)[0]
                    if i < 0:
                        return -1
                break
            if b != stack[depth - 1] + 2:
                return -1
            i += 1
            depth -= 1
        if depth == 0:
            return i


@_helper
def _is_name(key, lo, hi, name):
    """Whether ``key[lo:hi]`` is ``name``."""
    if hi - lo != len(name):
        return False
    for k in range(hi - lo):
        if key[lo + k] != name[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _read_fields(buf, starts, names, escapes, out):
    lines = starts.shape[0] - 1
    wanted = len(names)
    kinds = np.zeros((wanted, lines), np.int8)
    integers = np.zeros((wanted, lines), np.int64)
    offsets = np.zeros((wanted, lines + 1), np.int64)
    scratch = np.empty(buf.shape[0], np.uint8)
    stack = np.empty(MAX_NESTING, np.uint8)
    o = np.zeros(wanted, np.int64)
    for line in range(lines):
        i, end = starts[line], starts[line + 1]
        i = _skip_spaces(buf, i, end)
        if i >= end or buf[i] != 0x7B:
            return False, kinds, integers, offsets
        i = _skip_spaces(buf, i + 1, end)
        closed = i < end and buf[i] == 0x7D
        if closed:
            i += 1
        while not closed:
            key = i + 1
            i, escaped = _key_colon(buf, i, end, escapes)
            if i < 0:
                return False, kinds, integers, offsets
            field = -1
            if escaped:  # decoded to be compared (rare)
                _, length, status = _string(buf, key, end, scratch, 0, escapes)
                for f in range(wanted):
                    if status == 0 and _is_name(scratch, 0, length, names[f]):
                        field = f
            else:
                quote = key
                while buf[quote] != 0x22:
                    quote += 1
                for f in range(wanted):
                    if _is_name(buf, key, quote, names[f]):
                        field = f
            i = _skip_spaces(buf, i, end)
            if i >= end:
                return False, kinds, integers, offsets
            if field < 0:
                i = _value(buf, i, end, stack, escapes)
            elif kinds[field, line] != MISSING:
                return False, kinds, integers, offsets  # named twice: the last counts
            elif buf[i] == 0x22:
                i, after, status = _string(buf, i + 1, end, out[field], o[field], escapes)
                if status != 0:  # not UTF-8 (1), or no JSON string (-1)
                    return False, kinds, integers, offsets
                kinds[field, line] = STRING
                o[field] = after
            elif buf[i] == 0x2D or 0x30 <= buf[i] <= 0x39:
                i, small, value = _number(buf, i, end)
                kinds[field, line] = INTEGER if small else OTHER
                integers[field, line] = value
            else:
                i = _value(buf, i, end, stack, escapes)
                kinds[field, line] = OTHER
            if i < 0:
                return False, kinds, integers, offsets
            i = _skip_spaces(buf, i, end)
            if i < end and buf[i] == 0x2C:
                i = _skip_spaces(buf, i + 1, end)
            elif i < end and buf[i] == 0x7D:
                i += 1
                closed = True
            else:
                return False, kinds, integers, offsets
        if _skip_spaces(buf, i, end) != end:
            return False, kinds, integers, offsets
        for f in range(wanted):
            offsets[f, line + 1] = o[f]
    return True, kinds, integers, offsets


@dataclass
class Fields:
    """The wanted fields of a block's lines (from :func:`json_fields`).

    Attributes:
        kinds: int8[fields, lines]: :data:`MISSING`, :data:`STRING`, :data:`INTEGER` (of at
            most 18 digits) or :data:`OTHER` (any other value) for each field and line.
        integers: int64[fields, lines], the integers (0 elsewhere).
        offsets: int64[fields, lines + 1], where each line's string is in ``data[field]``
            (an empty span where the value is no string).
        data: the strings' UTF-8, one uint8 array of the block's length a field.
    """

    kinds: np.ndarray
    integers: np.ndarray
    offsets: np.ndarray
    data: tuple[np.ndarray, ...]

    def arrow(self, field: int, copy: bool = False) -> pa.Array:
        """The strings of ``field`` as an Arrow ``large_string`` array sharing ``data`` (a
        line whose value is no string has an empty one). O(1); with ``copy``, buffers of its
        own holding only its strings' bytes, for an array that outlives the block (each
        array of ``data`` is the block's size): O(its bytes).

        Example:
            >>> got = json_fields(b'{"a": "x"}\\n{"a": 1}\\n', np.array([0, 11, 20]), [b"a"])
            >>> got.arrow(0).to_pylist(), got.arrow(0, copy=True).to_pylist()
            (['x', ''], ['x', ''])
        """
        offsets, data = self.offsets[field], self.data[field]
        if copy:
            offsets, data = offsets.copy(), data[: offsets[-1]].copy()
        return pa.LargeStringArray.from_buffers(
            offsets.shape[0] - 1, pa.py_buffer(offsets), pa.py_buffer(data)
        )

    def strings(self, field: int) -> list[str]:
        """The strings of ``field`` as Python strs (see :meth:`arrow`). O(bytes)."""
        return self.arrow(field).to_pylist()


def json_fields(
    block: bytes | memoryview | np.ndarray, starts: np.ndarray, names: list[bytes]
) -> Fields | None:
    """The values of the fields ``names`` (their UTF-8 names, at most 3) in each line of
    ``block`` (``starts``: int64[lines + 1], each line's start, then the block's length), or
    None unless every line is a JSON object that :func:`json.loads` reads to the values
    given (see the module's docstring). A line may end with spaces and a line break. The
    result holds no reference to ``block``. O(len(block)), compiled, without the GIL.

    Example:
        >>> json_fields(b'{"a": 1} x\\n', np.array([0, 11]), [b"a"]) is None
        True
    """
    if not 1 <= len(names) <= 3:
        raise ValueError(f"json_fields reads 1 to 3 fields, got {len(names)}")
    buf = block if isinstance(block, np.ndarray) else np.frombuffer(block, dtype=np.uint8)
    wanted = tuple(np.frombuffer(name, dtype=np.uint8) for name in names)
    # An array a field, not one of (fields, block bytes): a 16 MB block's two or three fields
    # made that one 32-48 MB, past the size (32 MB at most) from which glibc maps each
    # allocation afresh and unmaps it when freed, so every block's strings were written into
    # new pages, a page fault every 4 KB; below it freed blocks' memory is used again (the
    # blocks of english_1m checked and read, one thread: 220-258k -> 141-157k page faults,
    # 3.56-3.68 -> 3.40-3.42 s).
    data = tuple(np.empty(buf.shape[0], np.uint8) for _ in names)
    ok, kinds, integers, offsets = _read_fields(buf, starts, wanted, _ESCAPES, data)
    if not ok:
        return None
    return Fields(kinds, integers, offsets, data)
