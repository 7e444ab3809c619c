"""JSON Lines read a block of whole lines at a time, by a compiled reader where that is exact.

The JSON Lines reader (:class:`~neardup.io.documents.DocumentReader`) takes an input (a
compressed one as it is decompressed) in blocks of :data:`BLOCK_BYTES` ending at a line break
(:func:`line_blocks`). A block whose every line is plain (:func:`scan_block`: strict UTF-8,
each line starting with ``{``, no control byte but the line endings, shallow nesting) is read
in one compiled pass without the GIL, keeping only the ID, text and time fields
(:meth:`BlockParser.parse`, :func:`~neardup.io.json_fields.json_fields`, which checks each
whole line against the JSON grammar). Its rows are taken only when the result is provably
what the line-by-line reading gives: every line one JSON object, every field present once and
of a type the rows take (IDs and times strings or integers, texts strings without an unpaired
surrogate escape), no empty or refused ID, no text over the size limit, every time valid. Any
doubt sends the whole block through the line-by-line reading, which reports bad rows as ever.
The texts stay one Arrow array over the UTF-8 the reader wrote, which the canonical kernels
read without a Python str (:class:`~neardup.text.canonical.TextColumn`).

Example:
    >>> block = b'{"id": "a", "text": "x"}\\n{"id": "b", "text": "y"}\\n'
    >>> starts, plain = scan_block(np.frombuffer(block, np.uint8))
    >>> rows = BlockParser("id", "text", None, max_doc_bytes=None).parse(block, starts)
    >>> plain, rows.ids.to_pylist(), rows.texts.to_pylist(), rows.line_starts.tolist()
    (True, ['a', 'b'], ['x', 'y'], [0, 25, 50])
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from neardup.candidates import radix
from neardup.hashing import _read64
from neardup.ids import FORBIDDEN_RE2, MAX_ID_LENGTH
from neardup.io.json_fields import INTEGER, STRING, Fields, json_fields
from neardup.io.values import time_to_us

#: Bytes read at a time (a block is extended to the end of its last line).
BLOCK_BYTES = 16 << 20

#: Most ``{`` and ``[`` in a line the block path takes (so that it nests no deeper, counting
#: those in strings too): the standard parser refuses very deep nesting (a recursion limit).
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


@dataclass
class ReadBlock:
    """A block of whole lines as :func:`read_blocks` gives it.

    Attributes:
        size: its length in bytes.
        starts: int64[lines + 1], the start of each line, then ``size``.
        parsed: its rows when :class:`BlockParser` read it exactly, else None.
        data: its bytes when ``parsed`` is None (to be read line by line), else None.
    """

    size: int
    starts: np.ndarray
    parsed: ParsedBlock | None
    data: bytes | None


def read_blocks(
    fh: IO[bytes], parser: BlockParser, copy: IO[bytes] | None = None
) -> Iterator[ReadBlock]:
    """The blocks of :func:`line_blocks` over ``fh``, each scanned and parsed by ``parser``
    where plain, the next one read and parsed in a thread while the caller handles this one
    (the kernels release the GIL: the reading overlaps the work on the rows). Each block's
    bytes are written to ``copy`` when given. A read error is raised when its block is asked
    for. O(size of the stream).

    Example:
        >>> import io
        >>> data = io.BytesIO(b'{"id": "a", "text": "x"}\\n')
        >>> parser = BlockParser("id", "text", None, None)
        >>> [b.parsed.ids.to_pylist() for b in read_blocks(data, parser)]
        [['a']]
    """
    blocks = line_blocks(fh)

    def next_block() -> ReadBlock | None:
        block = next(blocks, None)
        if block is None:
            return None
        if copy is not None:
            copy.write(block)
        starts, plain = scan_block(np.frombuffer(block, dtype=np.uint8))
        parsed = parser.parse(block, starts) if plain else None
        # line_blocks reuses its buffer: what outlives the next read is copied.
        return ReadBlock(len(block), starts, parsed, None if parsed is not None else bytes(block))

    with ThreadPoolExecutor(1) as reader:
        ahead = reader.submit(next_block)
        while True:
            got = ahead.result()
            if got is None:
                return
            ahead = reader.submit(next_block)
            yield got


@njit(inline="always")
def _ascii_after_ascii(buf, lo, hi):
    """Whether ``buf[lo:hi]`` and the byte before it are all ASCII."""
    high = buf[lo - 1] if lo else np.uint8(0)
    for i in range(np.uint64(lo), np.uint64(hi)):
        high |= buf[i]
    return high < 0x80


@njit(inline="always")
def _utf8_error(b, p1, p2, p3):
    """1 when byte ``b``, after the bytes ``p1``, ``p2``, ``p3`` (0 before a block's start),
    breaks strict UTF-8, else 0. No branch."""
    error = np.uint8(((b & 0xC0) == 0x80) != ((p1 >= 0xC0) | (p2 >= 0xE0) | (p3 >= 0xF0)))
    error |= np.uint8((b == 0xC0) | (b == 0xC1) | (b >= 0xF5))
    error |= np.uint8(((p1 == 0xE0) & (b < 0xA0)) | ((p1 == 0xED) & (b > 0x9F)))
    return error | np.uint8(((p1 == 0xF0) & (b < 0x90)) | ((p1 == 0xF4) & (b > 0x8F)))


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
        # The block's first three bytes have fewer than three before them; past them the
        # loop reads the three before each byte without a test, and vectorises (twice the
        # bytes a second on heavy_200k's).
        head = min(max(lo, 3), hi)
        for i in range(lo, head):
            p1 = buf[i - 1] if i >= 1 else np.uint8(0)
            p2 = buf[i - 2] if i >= 2 else np.uint8(0)
            bad |= _utf8_error(buf[i], p1, p2, np.uint8(0))
            controls += np.int64(buf[i] < 0x20)
        for i in range(np.uint64(head), np.uint64(hi)):
            b = buf[i]
            bad |= _utf8_error(
                b, buf[i - np.uint64(1)], buf[i - np.uint64(2)], buf[i - np.uint64(3)]
            )
            controls += np.int64(b < 0x20)
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


def scan_block(buf: np.ndarray, breaks: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """(line starts int64[lines + 1], plain) of a block of whole lines (uint8; ``breaks``:
    where its ``\\n`` are, when known): the start of each line (the last entry is the
    block's length) and whether every line is plain, i.e. starts with ``{``, is strict UTF-8
    (no overlong form, surrogate or code point past U+10FFFF), holds no control byte but its
    ``\\n`` or ``\\r\\n`` ending and holds at most :data:`MAX_DEPTH` ``{`` and ``[`` (so it
    nests no deeper). Compiled, without the GIL but for numpy's search for the line breaks.
    O(len(buf)).

    Example:
        >>> starts, plain = scan_block(np.frombuffer(b'{"a": 1}\\r\\n{}', np.uint8))
        >>> starts.tolist(), plain
        ([0, 10, 12], True)
    """
    return _scan(buf, np.flatnonzero(buf == 0x0A) if breaks is None else breaks)


@njit(cache=True, nogil=True)
def _lines_joined(offsets, data, out):
    w = 0
    for i in range(offsets.shape[0] - 1):
        length = offsets[i + 1] - offsets[i]
        out[w : w + length] = data[offsets[i] : offsets[i + 1]]
        w += length
        out[w] = 0x0A
        w += 1


def lines_block(lines: pa.Array) -> np.ndarray:
    """The lines of an Arrow string or binary array without nulls (lines without their
    breaks, as Spark's text reader gives them) back to back, each ended by ``\\n``, as one
    uint8 block for :func:`scan_block` and :meth:`BlockParser.parse`. Read from the array's
    own buffers and written once (compiled, without the GIL): a block built by numpy's
    masked assignment took most of a Spark reading task. O(bytes).

    Example:
        >>> bytes(lines_block(pa.array(['{"a": 1}', "{}"])))
        b'{"a": 1}\\n{}\\n'
    """
    if lines.null_count:
        raise ValueError(f"lines must hold no null, got {lines.null_count}")
    n = len(lines)
    wide = pa.types.is_large_string(lines.type) or pa.types.is_large_binary(lines.type)
    buffers = lines.buffers()
    offsets = np.frombuffer(buffers[1], np.int64 if wide else np.int32)
    offsets = offsets[lines.offset : lines.offset + n + 1]
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    out = np.empty(int(offsets[-1] - offsets[0]) + n if n else 0, dtype=np.uint8)
    _lines_joined(offsets, data, out)
    return out


_FEEDS = np.uint64(0x0A0A0A0A0A0A0A0A)  # eight line breaks
_LOW_BITS = np.uint64(0x0101010101010101)
_HIGH_BITS = np.uint64(0x8080808080808080)


@njit(inline="always")
def _line_end(buf, at, n):
    """The place of the first line break in ``buf[at:n]``, else ``n``: eight bytes a step while
    none is one (a word XOR eight breaks has a zero byte exactly where a break is, and
    ``(w - 0x01…) & ~w & 0x80…`` is nonzero exactly when ``w`` has a zero byte), then byte by
    byte."""
    end = at
    while end + 8 <= n:
        word = _read64(buf, end) ^ _FEEDS
        if (word - _LOW_BITS) & ~word & _HIGH_BITS:
            break
        end += 8
    while end < n and buf[end] != 0x0A:
        end += 1
    return end


@njit(cache=True, nogil=True)
def _gather_lines(buf, starts, out, at, places):
    """Copy each line of ``buf`` that starts at ``starts[k]`` (ascending), with its line
    break, to ``out`` from byte ``at`` on, its place there in ``places[k]``, up to the first
    whose break ``buf`` does not hold: (lines copied, bytes of ``out`` then used)."""
    for k in range(starts.shape[0]):
        start = starts[k]
        end = _line_end(buf, start, buf.shape[0])
        if end == buf.shape[0]:
            return k, at
        size = end + 1 - start
        out[at : at + size] = buf[start : end + 1]
        places[k] = at
        at += size
    return starts.shape[0], at


class LineGather:
    """Lines copied back to back, each with its line break, into one buffer used again: a
    block in the form :func:`scan_block` and :meth:`BlockParser.parse_block` read, gathered
    from buffers that hold them among other lines (the runs of a file read again,
    :func:`~neardup.io.sources.line_blocks_at`) by a compiled loop, without a Python object
    a line.

    Example:
        >>> gather = LineGather()
        >>> gather.add(np.frombuffer(b'ab\\ncd\\nef', np.uint8), np.array([0, 6]))
        1
        >>> gather.add_line(b"ef")
        >>> block, starts = gather.take()
        >>> bytes(block), starts.tolist()
        (b'ab\\nef\\n', [0, 3, 6])
    """

    def __init__(self) -> None:
        self._out = np.empty(1 << 16, np.uint8)
        self._places = np.empty(1 << 10, np.int64)
        self._lines = 0
        self._bytes = 0

    def add(self, buf: np.ndarray, starts: np.ndarray) -> int:
        """Copy the lines of ``buf`` (uint8) that start at ``starts`` (ascending int64), in
        order, while ``buf`` holds their line break; returns how many it copied. O(their
        bytes)."""
        # The lines copied lie in buf from the first start on.
        self._reserve(starts.shape[0], buf.shape[0] - int(starts[0]) if starts.shape[0] else 0)
        done, self._bytes = _gather_lines(
            buf, starts, self._out, self._bytes, self._places[self._lines :]
        )
        self._lines += done
        return done

    def add_line(self, line: bytes) -> None:
        """Copy one line, given a line break when it has none (a stream's last line). O(its
        bytes)."""
        data = line if line.endswith(b"\n") else line + b"\n"
        self._reserve(1, len(data))
        self._out[self._bytes : self._bytes + len(data)] = np.frombuffer(data, np.uint8)
        self._places[self._lines] = self._bytes
        self._lines += 1
        self._bytes += len(data)

    @property
    def last_line_bytes(self) -> int:
        """Bytes of the line copied last since the last take (with its line break), 0 when
        none was. O(1)."""
        return self._bytes - int(self._places[self._lines - 1]) if self._lines else 0

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """The block of the lines copied since the last take (uint8, valid until the next
        copy: its buffer is used again) and where each begins, then its length (int64[k +
        1], the caller's own). O(lines)."""
        starts = np.append(self._places[: self._lines], self._bytes)
        block = self._out[: self._bytes]
        self._lines = self._bytes = 0
        return block, starts

    def _reserve(self, lines: int, nbytes: int) -> None:
        """Room for ``lines`` more lines of ``nbytes`` bytes in all (the buffers doubled)."""
        if self._bytes + nbytes > self._out.shape[0]:
            grown = np.empty(max(2 * self._out.shape[0], self._bytes + nbytes), np.uint8)
            grown[: self._bytes] = self._out[: self._bytes]
            self._out = grown
        if self._lines + lines > self._places.shape[0]:
            places = np.empty(max(2 * self._places.shape[0], self._lines + lines), np.int64)
            places[: self._lines] = self._places[: self._lines]
            self._places = places


@dataclass
class ParsedBlock:
    """The rows of a block whose every line is a good row, one a line, in order.

    Attributes:
        ids: the IDs, an Arrow ``large_string`` array (non-empty; an integer 5 is ``"5"``).
        texts: the texts, an Arrow string array.
        text_bytes: int64, UTF-8 bytes of each text.
        timestamps: int64 microseconds since the epoch (0 without a time field).
        raw_timestamps: the time values as the standard parser reads them (None without one).
        line_starts: int64[n + 1], byte offset of each line in the block, then its length.
    """

    ids: pa.Array
    texts: pa.Array
    text_bytes: np.ndarray
    timestamps: np.ndarray
    raw_timestamps: list
    line_starts: np.ndarray


class BlockParser:
    """Parses blocks of JSON Lines by :func:`~neardup.io.json_fields.json_fields`, answering
    only where the result is exact.

    IDs and times may be strings or integers, line by line. ``usable`` is False when a field
    is named twice (the time field is the ID or text field) or a name is no UTF-8: the block
    path cannot then read it.

    Args:
        id_field, text_field, time_field: the fields of :func:`~neardup.io.read_documents`.
        max_doc_bytes: the largest text accepted, in UTF-8 bytes (None: no limit).
    """

    def __init__(
        self, id_field: str, text_field: str, time_field: str | None, max_doc_bytes: int | None
    ) -> None:
        self._fields = (id_field, text_field, time_field)
        self._limit = max_doc_bytes
        names = [id_field, text_field] + ([time_field] if time_field is not None else [])
        try:
            self._names = [name.encode("utf-8") for name in names]
        except UnicodeEncodeError:
            self._names = []
        self.usable = time_field not in (id_field, text_field) and bool(self._names)

    def parse(
        self, block: bytes | memoryview | np.ndarray, starts: np.ndarray
    ) -> ParsedBlock | None:
        """The rows of ``block``, whole lines of JSON Lines that :func:`scan_block` found
        plain (``starts`` its line starts), or None where the reading could differ from the
        line-by-line one or a row is bad (then read the block line by line, which reports
        it). The rows hold no reference to ``block``. O(len(block)).

        Example:
            >>> block = b'{"id": "a", "text": 5}\\n'
            >>> BlockParser("id", "text", "ts", None).parse(block, np.array([0, 23])) is None
            True
        """
        if not self.usable:
            return None
        fields = json_fields(block, starts, self._names)
        if fields is None:
            return None
        return self._checked(fields, starts)

    def parse_block(self, block: np.ndarray, starts: np.ndarray) -> ParsedBlock | None:
        """The rows of the lines ``block[starts[i]:starts[i + 1]]`` (JSON Lines rows, each
        with its line break, as :class:`LineGather` makes them) by :meth:`parse`, when they
        are all plain (:func:`scan_block`); else None. From
        :data:`~neardup.candidates.radix.PARALLEL_MIN_KEYS` bytes on, the two halves of the
        lines are parsed on two threads (:func:`~neardup.candidates.radix.in_halves`) and
        their rows joined (every check is a line's own: the same result). O(bytes).

        Example:
            >>> block = np.frombuffer(b'{"id": "a", "text": "x"}\\n', np.uint8)
            >>> rows = BlockParser("id", "text", None, None).parse_block(block, np.array([0, 25]))
            >>> rows.ids.to_pylist(), rows.texts.to_pylist()
            (['a'], ['x'])
        """
        if starts.shape[0] < 3:
            return self._parse_plain(block)
        parts = radix.in_halves(
            lambda half, lo, hi: self._parse_plain(block[starts[lo] : starts[hi]]),
            starts.shape[0] - 1,
            size=int(starts[-1]),
        )
        if any(part is None for part in parts):
            return None
        return parts[0] if len(parts) == 1 else _joined_blocks(*parts)

    def _parse_plain(self, block: np.ndarray) -> ParsedBlock | None:
        starts, plain = scan_block(block)
        return self.parse(block, starts) if plain else None

    def _checked(self, fields: Fields, starts: np.ndarray) -> ParsedBlock | None:
        """The block's rows, or None unless every one is good (as the row checks would say)."""
        kinds = fields.kinds
        lines = kinds.shape[1]
        ids, texts = kinds[0], kinds[1]
        if (texts != STRING).any() or ((ids != STRING) & (ids != INTEGER)).any():
            return None  # a missing text or ID, or one of another type
        text_bytes = np.diff(fields.offsets[1])
        if self._limit is not None and text_bytes.max(initial=0) > self._limit:
            return None
        id_array = _ids(fields, ids)
        if id_array is None:
            return None
        texts_array = fields.arrow(1)
        if self._fields[2] is None:
            return ParsedBlock(
                id_array, texts_array, text_bytes, np.zeros(lines, np.int64), [None] * lines, starts
            )
        times = kinds[2]
        numbers = times == INTEGER
        if ((times != STRING) & ~numbers).any():
            return None  # a missing time, or one of another type
        seconds = fields.integers[2]
        if np.abs(seconds[numbers]).max(initial=0) > _MAX_SECONDS:
            return None
        if numbers.all():
            return ParsedBlock(
                id_array, texts_array, text_bytes, seconds * 1_000_000, seconds.tolist(), starts
            )
        strings = fields.strings(2)
        raw = [s if kind == STRING else int(t) for s, kind, t in zip(strings, times, seconds)]
        us = [time_to_us(v) if v != "" else None for v in raw]
        if None in us:
            return None
        return ParsedBlock(id_array, texts_array, text_bytes, np.array(us, np.int64), raw, starts)


def _joined_blocks(first: ParsedBlock, second: ParsedBlock) -> ParsedBlock:
    """The rows of ``first``'s lines then ``second``'s, as if parsed from one block. O(rows +
    text bytes)."""
    return ParsedBlock(
        pa.concat_arrays([first.ids, second.ids]),
        pa.concat_arrays([first.texts, second.texts]),
        np.concatenate([first.text_bytes, second.text_bytes]),
        np.concatenate([first.timestamps, second.timestamps]),
        first.raw_timestamps + second.raw_timestamps,
        np.concatenate([first.line_starts[:-1], second.line_starts + first.line_starts[-1]]),
    )


def _ids(fields: Fields, kinds: np.ndarray) -> pa.Array | None:
    """The IDs of a block's lines as an Arrow ``large_string`` array (an integer 5 is ``"5"``,
    as ``str`` writes it), or None if one is empty or one the rules of :mod:`neardup.ids`
    refuse. In Arrow: no Python str an ID."""
    if (kinds == INTEGER).all():
        return _decimal(fields.integers[0])
    strings = fields.arrow(0, copy=True)  # the batches keep the IDs, not the block's buffer
    lengths = np.diff(fields.offsets[0])
    if (lengths[kinds == STRING] == 0).any():
        return None  # an empty ID
    if (
        pc.max(pc.utf8_length(strings)).as_py() > MAX_ID_LENGTH
        or pc.any(pc.match_substring_regex(strings, FORBIDDEN_RE2)).as_py()
    ):
        return None  # an ID the rules refuse
    if (kinds == STRING).all():
        return strings
    return pc.if_else(pa.array(kinds == STRING), strings, _decimal(fields.integers[0]))


def _decimal(numbers: np.ndarray) -> pa.Array:
    """int64 values as the strings ``str`` makes of them, ``large_string``. O(n)."""
    return pa.array(numbers).cast(pa.large_string())
