"""JSON Lines read a block of whole lines at a time, parsed by Arrow where that is exact.

The JSON Lines reader (:class:`~neardup.io.documents.DocumentReader`) takes an uncompressed
input in blocks of :data:`BLOCK_BYTES` ending at a line break (:func:`line_blocks`). A block
whose every line is plain (:func:`scan_block`: strict UTF-8, each line starting with ``{``, no
control byte but the line endings, shallow nesting) is parsed in one call of
:func:`pyarrow.json.read_json` with the GIL released, keeping only the ID, text and time
fields (:meth:`BlockParser.parse`). Its rows are taken only when the result is provably what
the line-by-line reading gives: one row a line, every field present and of the type of the
block's first line (IDs and times strings or integers, texts strings), no empty ID, no text
over the size limit, every time valid. Arrow refuses what the standard parser would read
differently (a field given twice, an unpaired surrogate escape, an integer past 64 bits, a
value of another type); any refusal or doubt sends the whole block through the line-by-line
reading, which reports bad rows as ever. The texts stay an Arrow array, which the canonical
kernels read without a Python str (:class:`~neardup.text.canonical.TextColumn`).

Example:
    >>> block = b'{"id": "a", "text": "x"}\\n{"id": "b", "text": "y"}\\n'
    >>> starts, plain = scan_block(np.frombuffer(block, np.uint8))
    >>> rows = BlockParser("id", "text", None, max_doc_bytes=None).parse(block, starts)
    >>> plain, rows.ids, rows.texts.to_pylist(), rows.line_starts.tolist()
    (True, ['a', 'b'], ['x', 'y'], [0, 25, 50])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from numba import njit

from neardup.ids import FORBIDDEN_RE2, MAX_ID_LENGTH
from neardup.io.values import time_to_us
from neardup.text.canonical import arrow_utf8

#: Bytes read at a time (a block is extended to the end of its last line).
BLOCK_BYTES = 16 << 20

#: Most ``{`` and ``[`` in a line the block path takes (so that it nests no deeper, counting
#: those in strings too): the standard parser refuses very deep nesting (a recursion limit),
#: Arrow does not.
MAX_DEPTH = 256

# Seconds whose microseconds fit in int64 (what time_to_us accepts for an integer).
_MAX_SECONDS = ((1 << 63) - 1) // 1_000_000


def line_blocks(fh: IO[bytes], size: int | None = None) -> Iterator[memoryview]:
    """Blocks of whole lines of about ``size`` bytes (default :data:`BLOCK_BYTES`) over a
    binary stream, the last one maybe without its final line break, read into one reused
    buffer: a block is valid until the next one is asked for. O(size of the stream).

    Example:
        >>> import io
        >>> [bytes(b) for b in line_blocks(io.BytesIO(b"a\\nbc\\nd"), size=3)]
        [b'a\\n', b'bc\\n', b'd']
    """
    buffer = bytearray(size or BLOCK_BYTES)
    filled = 0  # bytes of an unfinished line at the buffer's start
    while True:
        if filled == len(buffer):  # a line longer than the buffer
            buffer = buffer + bytearray(len(buffer))
        read = fh.readinto(memoryview(buffer)[filled:])
        if not read:
            break
        end = filled + read
        cut = buffer.rfind(b"\n", filled, end) + 1
        if not cut:
            filled = end
            continue
        yield memoryview(buffer)[:cut]
        # The block's view may still be held: the buffer keeps its size, the tail moves.
        buffer[: end - cut] = buffer[cut:end]
        filled = end - cut
    if filled:
        yield memoryview(buffer)[:filled]


@njit(inline="always")
def _ascii_after_ascii(buf, lo, hi):
    """Whether ``buf[lo:hi]`` and the byte before it are all ASCII."""
    high = buf[lo - 1] if lo else np.uint8(0)
    for i in range(np.uint64(lo), np.uint64(hi)):
        high |= buf[i]
    return high < 0x80


@njit(cache=True, nogil=True)
def _scan(buf, feeds_at):
    n = buf.shape[0]
    # Strict UTF-8 without a branch a byte: each byte is a continuation byte exactly when one
    # of the three before it starts a sequence that long; the second byte's range after E0,
    # ED, F0 and F4 rules out overlong forms, surrogates and code points past U+10FFFF.
    bad = np.uint8(0)
    controls = 0
    # A chunk of ASCII bytes after an ASCII byte is valid without the test of each byte: only
    # its control bytes are counted (text is mostly ASCII; 1.6 GB/s for the test a byte).
    chunk = 64
    lo = 0
    while lo < n:
        hi = lo
        # The chunks from lo on that are not ASCII are tested in one loop, which vectorises.
        while hi < n and not _ascii_after_ascii(buf, hi, min(hi + chunk, n)):
            hi = min(hi + chunk, n)
        for i in range(lo, hi):
            b = buf[i]
            p1 = buf[i - 1] if i >= 1 else np.uint8(0)
            p2 = buf[i - 2] if i >= 2 else np.uint8(0)
            p3 = buf[i - 3] if i >= 3 else np.uint8(0)
            bad |= ((b & 0xC0) == 0x80) != ((p1 >= 0xC0) | (p2 >= 0xE0) | (p3 >= 0xF0))
            bad |= (b == 0xC0) | (b == 0xC1) | (b >= 0xF5)
            bad |= ((p1 == 0xE0) & (b < 0xA0)) | ((p1 == 0xED) & (b > 0x9F))
            bad |= ((p1 == 0xF0) & (b < 0x90)) | ((p1 == 0xF4) & (b > 0x8F))
            controls += b < 0x20
        if hi < n:  # an ASCII chunk
            end = min(hi + chunk, n)
            for i in range(np.uint64(hi), np.uint64(end)):
                controls += np.int64(buf[i] < 0x20)
            hi = end
        lo = hi
    for k in range(1, 4):  # a sequence the end cuts
        if n >= k and buf[n - k] >= (0xC0, 0xE0, 0xF0)[k - 1]:
            bad = 1
    # Line by line from the line breaks (found by numpy): the count of "{" and "[" of a line
    # is then a loop without a branch, which the compiler vectorises.
    starts = np.empty(feeds_at.shape[0] + 2, dtype=np.int64)
    starts[0] = 0
    lines = 1
    feeds = 0
    for f in feeds_at:
        feeds += 1 + np.int64(f > 0 and buf[f - 1] == 0x0D)
        if f + 1 < n:
            starts[lines] = f + 1
            lines += 1
    starts[lines] = n
    for line in range(lines):
        lo = starts[line]
        if lo < n and buf[lo] != 0x7B:  # "{"
            bad = 1
        opens = 0
        for i in range(np.uint64(lo), np.uint64(starts[line + 1])):
            b = buf[i]
            opens += np.int64((b == 0x7B) | (b == 0x5B))
        if opens > MAX_DEPTH:
            bad = 1
    if controls != feeds:  # a control byte but the line endings
        bad = 1
    return starts[: lines + 1], bad == 0


def scan_block(buf: np.ndarray) -> tuple[np.ndarray, bool]:
    """(line starts int64[lines + 1], plain) of a block of whole lines (uint8): the start of
    each line (the last entry is the block's length) and whether every line is plain, i.e.
    starts with ``{``, is strict UTF-8 (no overlong form, surrogate or code point past
    U+10FFFF), holds no control byte but its ``\\n`` or ``\\r\\n`` ending and holds at
    most :data:`MAX_DEPTH` ``{`` and ``[`` (so it nests no deeper). Compiled, without the GIL
    but for numpy's search for the line breaks. O(len(buf)).

    Example:
        >>> starts, plain = scan_block(np.frombuffer(b'{"a": 1}\\r\\n{}', np.uint8))
        >>> starts.tolist(), plain
        ([0, 10, 12], True)
    """
    return _scan(buf, np.flatnonzero(buf == 0x0A))


@dataclass
class ParsedBlock:
    """The rows of a block whose every line is a good row, one a line, in order.

    Attributes:
        ids: the IDs (strings, non-empty).
        texts: the texts, an Arrow string array.
        text_bytes: int64, UTF-8 bytes of each text.
        timestamps: int64 microseconds since the epoch (0 without a time field).
        raw_timestamps: the time values as the standard parser reads them (None without one).
        line_starts: int64[n + 1], byte offset of each line in the block, then its length.
    """

    ids: list[str]
    texts: pa.Array
    text_bytes: np.ndarray
    timestamps: np.ndarray
    raw_timestamps: list
    line_starts: np.ndarray


#: The Arrow type a column is read as, by the Python type of its value in a block's first line.
_ARROW_TYPES = {str: pa.string(), int: pa.int64()}


class BlockParser:
    """Parses blocks of JSON Lines with Arrow, answering only where the result is exact.

    IDs and times are read as strings or integers, as in the block's first line; a block whose
    other lines differ is read line by line. ``usable`` is False when a field is named twice
    (the time field is the ID or text field): Arrow cannot then read it as two columns.

    Args:
        id_field, text_field, time_field: the fields of :func:`~neardup.io.read_documents`.
        max_doc_bytes: the largest text accepted, in UTF-8 bytes (None: no limit).
    """

    def __init__(
        self, id_field: str, text_field: str, time_field: str | None, max_doc_bytes: int | None
    ) -> None:
        self._fields = (id_field, text_field, time_field)
        self._limit = max_doc_bytes
        self.usable = time_field not in (id_field, text_field)

    def parse(self, block: bytes | memoryview, starts: np.ndarray) -> ParsedBlock | None:
        """The rows of ``block``, whole lines of JSON Lines that :func:`scan_block` found
        plain (``starts`` its line starts), or None where Arrow's reading could differ from the
        line-by-line one (then read the block line by line). The rows hold no reference to
        ``block``. O(len(block)).

        Example:
            >>> block = b'{"id": "a", "text": 5}\\n'
            >>> BlockParser("id", "text", "ts", None).parse(block, np.array([0, 23])) is None
            True
        """
        id_field, text_field, time_field = self._fields
        try:
            first = orjson.loads(block[starts[0] : starts[1]])
        except orjson.JSONDecodeError:
            return None
        if not self.usable or type(first) is not dict:
            return None
        schema = [
            (id_field, _ARROW_TYPES.get(type(first.get(id_field)))),
            (text_field, pa.string()),
        ]
        if time_field is not None:
            schema.append((time_field, _ARROW_TYPES.get(type(first.get(time_field)))))
        if any(kind is None for _, kind in schema):
            return None  # a bad row, or a float time: line by line
        try:
            table = pa_json.read_json(
                pa.BufferReader(pa.py_buffer(block)),
                read_options=pa_json.ReadOptions(use_threads=False, block_size=len(block) + 1),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=pa.schema(schema), unexpected_field_behavior="ignore"
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        lines = starts.shape[0] - 1
        if table.num_rows != lines:
            return None  # two objects on a line, say
        return self._checked(table, lines, starts)

    def parse_lines(self, lines: list[bytes]) -> ParsedBlock | None:
        """The rows of ``lines`` (JSON Lines rows, each with its line break but maybe the
        last line of a file) by :meth:`parse` of them joined, when they are all plain; else
        None. O(bytes).

        Example:
            >>> rows = BlockParser("id", "text", None, None).parse_lines([b'{"id": "a", "text": "x"}'])
            >>> rows.ids, rows.texts.to_pylist()
            (['a'], ['x'])
        """
        block = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
        starts, plain = scan_block(np.frombuffer(block, dtype=np.uint8))
        return self.parse(block, starts) if plain else None

    def _checked(self, table: pa.Table, lines: int, starts: np.ndarray) -> ParsedBlock | None:
        """The block's rows, or None unless every one is good (as the row checks would say)."""
        id_field, text_field, time_field = self._fields
        ids = table.column(id_field).combine_chunks()
        texts = table.column(text_field).combine_chunks()
        if ids.null_count or texts.null_count:
            return None
        text_bytes = np.diff(arrow_utf8(texts)[1])
        if self._limit is not None and text_bytes.max() > self._limit:
            return None
        if pa.types.is_integer(ids.type):
            id_strs = [str(i) for i in ids.to_pylist()]
        elif np.diff(arrow_utf8(ids)[1]).min() == 0:
            return None  # an empty ID
        elif (
            pc.max(pc.utf8_length(ids)).as_py() > MAX_ID_LENGTH
            or pc.any(pc.match_substring_regex(ids, FORBIDDEN_RE2)).as_py()
        ):
            return None  # an ID the rules refuse
        else:
            id_strs = ids.to_pylist()
        if time_field is None:
            return ParsedBlock(
                id_strs, texts, text_bytes, np.zeros(lines, np.int64), [None] * lines, starts
            )
        times = table.column(time_field).combine_chunks()
        if times.null_count:
            return None
        raw = times.to_pylist()
        if pa.types.is_integer(times.type):
            seconds = times.to_numpy()
            if seconds.min() < -_MAX_SECONDS or seconds.max() > _MAX_SECONDS:
                return None
            timestamps = seconds * 1_000_000
        else:
            us = [time_to_us(v) if v != "" else None for v in raw]
            if None in us:
                return None
            timestamps = np.array(us, dtype=np.int64)
        return ParsedBlock(id_strs, texts, text_bytes, timestamps, raw, starts)
