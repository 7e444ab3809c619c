"""Normalisation: text → canonical text, the same for every language.

1. Unicode NFKC, then case folding (``str.casefold``), then NFKC again (folding can leave a
   string that NFKC would change); ASCII text takes the equivalent fast path ``str.lower``.
2. Every code point that is not a letter, mark or number (general categories ``L*``, ``M*``,
   ``N*``) is a separator: punctuation, symbols, spaces, line breaks and control characters.
3. Tokens are the runs of non-separators; the canonical text is the tokens joined by one space.

A batch of texts becomes one buffer of canonical UTF-8 bytes with offsets (:class:`Canonical`),
which the shingle hashes (:mod:`neardup.text.features`) and the LCS units (:mod:`neardup.lcs`)
read. The texts come as a list of Python strs or as a :class:`TextColumn` (an Arrow string
array, as the JSON Lines reader makes them), which the kernels read without a Python str.
All the work runs in numba kernels over one buffer per batch; step 1 is a per-code-point
table lookup there, except for the rare texts where folding depends on context (a code point
that could compose with a neighbour, e.g. Hangul compatibility jamo), which take Python's
``unicodedata`` first. Both routes give the same bytes.

Example:
    >>> normalize("SimHash 계산 방법을, 간단히 정리하면!")
    'simhash 계산 방법을 간단히 정리하면'
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache, wraps
from pathlib import Path

import numpy as np
import pyarrow as pa
from numba import njit

__all__ = [
    "PADDING",
    "Canonical",
    "TextColumn",
    "arrow_utf8",
    "canonical_batch",
    "canonical_texts",
    "fold",
    "normalize",
    "normalize_many",
    "token_table",
    "utf8_code_point",
]

PADDING = 32
"""Zero bytes after the canonical text, so that short features hash without a bounds branch
(the hash kernels read 32 bytes from a feature's start)."""


def arrow_utf8(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes (uint8, not copied) and offsets (int64[n + 1], into those bytes) of an
    Arrow ``string`` or ``large_string`` array. O(n).

    Example:
        >>> data, offsets = arrow_utf8(pa.array(["ab", "é"]).slice(1))
        >>> data[offsets[0] : offsets[1]].tobytes().decode(), offsets.tolist()
        ('é', [2, 4])
    """
    _, offsets, data = array.buffers()
    n = len(array)
    if offsets is None:  # an empty array may have no buffers
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    kind = np.int64 if pa.types.is_large_string(array.type) else np.int32
    starts = np.frombuffer(offsets, dtype=kind)[array.offset : array.offset + n + 1]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return raw, starts.astype(np.int64)


class TextColumn(Sequence[str]):
    """Texts held as one Arrow string array (UTF-8), a sequence of Python strs to its readers.

    The canonical kernels read the array's bytes directly (:func:`canonical_texts`); a reader
    that indexes or iterates gets Python strs, made once for the whole column on first use.

    Args:
        array: a ``pa.string()`` or ``pa.large_string()`` array (or chunked array) without nulls.

    Example:
        >>> import pyarrow as pa
        >>> texts = TextColumn(pa.array(["Hello", "세계"]))
        >>> len(texts), texts[1], texts == ["Hello", "세계"], pa.array(texts) is texts.array
        (2, '세계', True, True)
    """

    __slots__ = ("array", "_strs")
    __hash__ = None  # type: ignore[assignment]  # equal to a list of the same strs

    def __init__(self, array: pa.Array | pa.ChunkedArray) -> None:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
            raise ValueError(f"a TextColumn holds Arrow strings, got {array.type}")
        if array.null_count:
            raise ValueError(f"a TextColumn holds no nulls, got {array.null_count}")
        self.array = array
        self._strs: list[str] | None = None

    def strs(self) -> list[str]:
        """The texts as a list of Python strs (made on the first call). O(total bytes)."""
        if self._strs is None:
            self._strs = self.array.to_pylist()
        return self._strs

    def buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The UTF-8 bytes and offsets of the texts (:func:`arrow_utf8`). O(n)."""
        return arrow_utf8(self.array)

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index):  # type: ignore[override]
        return self.strs()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.strs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return self.strs() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self.strs())

    def __arrow_array__(self, type=None) -> pa.Array:  # noqa: A002 (pyarrow's protocol)
        """The column's own Arrow array (cast to ``type`` when given): ``pa.array(column)``
        takes it as it is, without a Python str. O(1), or O(n) for a cast."""
        return self.array if type is None else self.array.cast(type)


def _disk_cached(build: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """Memoise a code-point table builder in the process and in a file beside numba's cache.

    Building a table from :mod:`unicodedata` takes most of a second, loading it a few
    milliseconds, and every run starts a new process. The file name carries Python's Unicode
    version and a digest of this module, so a new Python or an edited builder never reads a stale
    table; an unreadable file is rebuilt, and where nothing can be written the table is built.
    """

    @lru_cache(maxsize=1)
    @wraps(build)
    def cached() -> np.ndarray:
        folder = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).parent / "__pycache__")
        digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
        version = f"py{sys.version_info[0]}{sys.version_info[1]}-u{unicodedata.unidata_version}"
        path = folder / f"text.{build.__name__}-{version}-{digest}.npy"
        try:
            table = np.load(path, allow_pickle=False)
            if table.shape == (0x110000,):
                return table
        except (OSError, ValueError, EOFError):
            pass
        table = build()
        # Imported here: neardup.io's readers import this module, so a module-level import
        # would make importing neardup.text first a cycle.
        from neardup.io.atomic import atomic_write

        with contextlib.suppress(OSError):  # nowhere to keep it: the next process builds it
            folder.mkdir(parents=True, exist_ok=True)
            with atomic_write(path) as fh:  # readers see the whole file or none
                np.save(fh, table)
        return table

    return cached


@_disk_cached
def token_table() -> np.ndarray:
    """uint8 table over all code points: 1 for letters, marks and numbers, else 0.

    Built once from :mod:`unicodedata` (about 0.2 s), then loaded from the cache.

    Example:
        >>> table = token_table()
        >>> int(table[ord("a")]), int(table[ord("한")]), int(table[ord(",")])
        (1, 1, 0)
    """
    table = np.zeros(0x110000, dtype=np.uint8)
    category = unicodedata.category
    keep = [cp for cp in range(0x110000) if category(chr(cp))[0] in "LMN"]
    table[np.asarray(keep, dtype=np.int64)] = 1
    return table


def fold(text: str) -> str:
    """Step 1 of normalisation: NFKC, case folding, NFKC. O(len(text)).

    Example:
        >>> fold("Ｓtraße")
        'strasse'
    """
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def _utf8_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Fold every text and concatenate their UTF-8 bytes: (buffer uint8, offsets int64[n+1])."""
    encoded = [fold(t).encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


# Hangul jamo: the conjoining ones compose algorithmically with their neighbours; the simple
# path below leaves every jamo block to the Python fold.
_JAMO_RANGES = ((0x1100, 0x1200), (0xA960, 0xA980), (0xD7B0, 0xD800))


@_disk_cached
def _fold_table() -> np.ndarray:
    """int64 table over all code points for the compiled fold (step 1 plus step 2's test).

    Terms: a code point c is *clean* when its combining class is 0, it is no Hangul jamo, and
    neither c nor the first code point of NFKD(c) can be the second half of a canonical
    composition: nothing before it can reorder or compose with it. It is *stable* when it is
    clean and NFKC(c) = c. NFKC of a string of clean code points is the concatenation of NFKC of
    each, and a string of stable code points is its own NFKC. So where ``e = casefold(NFKC(c))``
    is made of stable code points for every c of a text, ``fold(text)`` is the concatenation
    of the ``e``: a lookup per code point (Python's ``casefold`` works code point by code point).

    The entry of such a c (*simple*) whose ``e`` is all letters, marks and numbers (at most 4
    UTF-8 bytes) packs the bytes of ``e`` (bits 0–31, first byte lowest), their count (bits 32–34)
    and 1 in bit 40; when ``e`` is all separators (at most 7 bytes) it holds the count only. It is
    ``-1`` for every other code point: a text with one takes the Python :func:`fold`.
    Built once (about 0.7 s), then loaded from the cache (:func:`_disk_cached`).
    """
    tokens = token_table()
    combining = unicodedata.combining
    normalize_ = unicodedata.normalize
    categories = map(unicodedata.category, map(chr, range(0x110000)))
    assigned = [cp for cp, cat in enumerate(categories) if cat not in ("Cn", "Co", "Cs")]
    decompositions = [unicodedata.decomposition(chr(cp)) for cp in assigned]
    # Second halves of canonical pairs; Hangul vowels and trailing consonants compose by rule.
    seconds = {cp for lo, hi in ((0x1161, 0x1176), (0x11A8, 0x11C3)) for cp in range(lo, hi)}
    for parts in map(str.split, decompositions):
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))
    jamo = {cp for lo, hi in _JAMO_RANGES for cp in range(lo, hi)}

    def clean(ch: str) -> bool:
        if ord(ch) in seconds or ord(ch) in jamo or combining(ch) != 0:
            return False
        first = normalize_("NFKD", ch)[0]
        return ord(first) not in seconds and combining(first) == 0

    def stable(ch: str) -> bool:
        return clean(ch) and normalize_("NFKC", ch) == ch

    # Unassigned and private-use code points fold to themselves and are separators.
    table = np.empty(0x110000, dtype=np.int64)
    for lo in range(0, 0x110000, 0x10000):  # by plane: small temporaries
        table[lo : lo + 0x10000] = _utf8_packed(np.arange(lo, lo + 0x10000, dtype=np.int64))
    table[0xD800:0xE000] = -1
    for cp, decomposition in zip(assigned, decompositions):
        ch = chr(cp)
        if (
            not decomposition
            and cp not in seconds
            and cp not in jamo
            and not combining(ch)
            and ch.casefold() == ch
        ):
            # Most code points (CJK, Hangul syllables, ...): no decomposition (a Hangul
            # syllable's decomposes to a leading consonant first, and recomposes), no case.
            table[cp] |= int(tokens[cp]) << 40
            continue
        folded = normalize_("NFKC", ch).casefold()
        entry = -1
        if folded and clean(ch) and all(stable(x) for x in folded):
            data = folded.encode("utf-8")
            kinds = {int(tokens[ord(x)]) for x in folded}
            if kinds == {1} and len(data) <= 4:
                entry = int.from_bytes(data, "little") | (len(data) << 32) | (1 << 40)
            elif kinds == {0} and len(data) <= 7:
                entry = len(data) << 32
        table[cp] = entry
    return table


def _utf8_packed(cp: np.ndarray) -> np.ndarray:
    """UTF-8 bytes of code points (int64 array) packed first byte lowest, count in bits 32–34."""
    c = cp.astype(np.int64)
    one = c
    two = (0xC0 | (c >> 6)) | ((0x80 | (c & 0x3F)) << 8)
    three = (0xE0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3F)) << 8) | ((0x80 | (c & 0x3F)) << 16)
    four = (
        (0xF0 | (c >> 18))
        | ((0x80 | ((c >> 12) & 0x3F)) << 8)
        | ((0x80 | ((c >> 6) & 0x3F)) << 16)
        | ((0x80 | (c & 0x3F)) << 24)
    )
    return np.select(
        [c < 0x80, c < 0x800, c < 0x10000],
        [one | (1 << 32), two | (2 << 32), three | (3 << 32)],
        four | (4 << 32),
    )


def _encode_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The texts as code units for :func:`_fold_canonicalize`.

    ASCII texts are joined and copied as bytes, the others joined as UTF-16 code units (both
    close to a memory copy). A text with a lone surrogate, which UTF-16 cannot carry, is left to
    the Python fold. Returns ``(ascii_buf uint8, wide_buf uint16, kinds int8[n], lengths int64[n])``:
    kind 0 (ASCII), 1 (UTF-16) or 2 (Python fold); each buffer holds its texts in input order,
    ``lengths`` counts code points.
    """
    is_ascii = [t.isascii() for t in texts]
    narrow = [t for t, a in zip(texts, is_ascii) if a]
    wide = [t for t, a in zip(texts, is_ascii) if not a]
    kinds = np.logical_not(np.fromiter(is_ascii, dtype=np.bool_, count=len(texts))).view(np.int8)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    try:
        wide_bytes = "".join(wide).encode("utf-16-le")
    except UnicodeEncodeError:
        # Some text has a lone surrogate: encode one by one and leave those to Python.
        parts = []
        for i in np.flatnonzero(kinds):
            try:
                parts.append(texts[i].encode("utf-16-le"))
            except UnicodeEncodeError:
                kinds[i] = 2
        wide_bytes = b"".join(parts)
    ascii_buf = np.frombuffer("".join(narrow).encode("ascii"), dtype=np.uint8)
    wide_buf = np.frombuffer(wide_bytes, dtype="<u2").astype(np.uint16, copy=False)
    return ascii_buf, wide_buf, kinds, lengths


_NO_UNITS = np.zeros(0, dtype=np.uint16)


@njit(inline="always")
def utf8_code_point(buf, i):
    """(code point, byte length) of the UTF-8 sequence at buf[i]."""
    b0 = np.int64(buf[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F), 2
    if b0 < 0xF0:
        return (
            ((b0 & 0x0F) << 12)
            | ((np.int64(buf[i + 1]) & 0x3F) << 6)
            | (np.int64(buf[i + 2]) & 0x3F)
        ), 3
    return (
        ((b0 & 0x07) << 18)
        | ((np.int64(buf[i + 1]) & 0x3F) << 12)
        | ((np.int64(buf[i + 2]) & 0x3F) << 6)
        | (np.int64(buf[i + 3]) & 0x3F)
    ), 4


@njit(cache=True, nogil=True)
def _canonicalize(buf, offsets, table):
    """Steps 2–3 of normalisation for every document: separators → one space, trimmed."""
    n = offsets.shape[0] - 1
    out = np.empty(buf.shape[0], dtype=np.uint8)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for d in range(n):
        i = offsets[d]
        end = offsets[d + 1]
        doc_start = o
        pending_space = False
        while i < end:
            cp, width = utf8_code_point(buf, i)
            if table[cp]:
                if pending_space and o > doc_start:
                    out[o] = 32
                    o += 1
                pending_space = False
                for j in range(width):
                    out[o] = buf[i + j]
                    o += 1
            else:
                pending_space = True
            i += width
        out_offsets[d + 1] = o
    return out[:o], out_offsets


@njit(inline="always")
def _emit(entry, out, o, prev_token, started):
    """Append one folded code point (a :func:`_fold_table` entry) to the canonical text.

    Branch-free: a space and four bytes are always written and the position advances only over
    what counts (the output buffer has slack for that). A space goes before a token that follows
    a separator, once something was written. Returns (position, is token, started).
    """
    token = (entry >> 40) & 1
    space = token & (1 - prev_token) & started
    # Unsigned indices: numba then skips the negative-index wraparound on every store.
    out[np.uint64(o)] = 32
    p = o + space
    q = np.uint64(p)
    out[q] = entry & 0xFF
    out[q + np.uint64(1)] = (entry >> 8) & 0xFF
    out[q + np.uint64(2)] = (entry >> 16) & 0xFF
    out[q + np.uint64(3)] = (entry >> 24) & 0xFF
    return p + token * ((entry >> 32) & 7), token, started | token


def _fold_capacity(byte_buf, wide_buf, kinds, lengths) -> int:
    """Bytes that :func:`_fold_canonicalize` may write for these texts: folding never
    lengthens ASCII; a UTF-16 unit or a UTF-8 byte becomes at most 4 bytes (plus a space)."""
    utf8 = int(lengths[kinds == 3].sum())
    return byte_buf.shape[0] + 4 * utf8 + 5 * wide_buf.shape[0] + PADDING + 8


@njit(inline="always")
def _emit_ascii(byte, out, o, prev_token, started):
    """:func:`_emit` for an ASCII code point, given as its folded byte (0 for a separator):
    half the instructions, for the commonest text (measured: a fifth less time on English),
    whether the text is all ASCII or UTF-8 with some code points outside it."""
    token = np.int64(byte != 0)
    space = token & (1 - prev_token) & started
    out[np.uint64(o)] = 32
    p = o + space
    out[np.uint64(p)] = byte
    return p + token, token, started | token


@njit(cache=True, nogil=True)
def _fold_canonicalize(byte_buf, wide_buf, kinds, lengths, table, out):
    """Steps 1–3 for the texts whose code points are all simple (see :func:`_fold_table`).

    Each text is in ``byte_buf`` as ASCII (kind 0, ``lengths`` its bytes) or UTF-8 (kind 3,
    ``lengths`` its bytes), or in ``wide_buf`` as UTF-16 (kind 1, ``lengths`` its code points);
    kind 2 is left to Python. ``out`` has :func:`_fold_capacity` bytes. Returns (canonical
    bytes, a view of ``out``; offsets int64[n + 1]; folded UTF-8 bytes int64[n]; python
    bool[n]); a text with ``python[i]`` set (kind 2, or a code point that is not simple) gets
    no bytes here.
    """
    n = kinds.shape[0]
    # An ASCII code point folds to one byte: here that byte for a token, 0 for a separator.
    ascii_tokens = np.empty(0x80, dtype=np.uint8)
    for b in range(0x80):
        ascii_tokens[b] = (table[b] & 0xFF) * ((table[b] >> 40) & 1)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    folded_bytes = np.zeros(n, dtype=np.int64)
    python = np.zeros(n, dtype=np.bool_)
    o = 0
    a = 0  # next text's start in byte_buf
    w = 0  # next text's start in wide_buf
    for d in range(n):
        doc_start = o
        prev_token = np.int64(1)
        started = np.int64(0)
        kind = kinds[d]
        if kind == 3:
            # A UTF-8 text of ASCII only takes the ASCII loop, which has no decoding branch.
            high = 0
            for i in range(a, a + lengths[d]):
                high |= byte_buf[np.uint64(i)]
            kind = 0 if high < 0x80 else 3
        if kind == 0:
            for i in range(a, a + lengths[d]):
                o, prev_token, started = _emit_ascii(
                    ascii_tokens[byte_buf[np.uint64(i)]], out, o, prev_token, started
                )
            a += lengths[d]
            folded_bytes[d] = lengths[d]
        elif kind == 3:
            size = 0
            i = a
            end = a + lengths[d]
            while i < end:
                byte = byte_buf[np.uint64(i)]
                if byte < 0x80:
                    # An ASCII byte is a code point of one folded byte, never left to Python:
                    # the ASCII loop's step instead of a decoding (English with one character
                    # outside ASCII: 532 -> 845 MB/s, benchmarks/bench_canonical.py).
                    o, prev_token, started = _emit_ascii(
                        ascii_tokens[byte], out, o, prev_token, started
                    )
                    size += 1
                    i += 1
                    continue
                cp, width = utf8_code_point(byte_buf, i)
                i += width
                entry = table[np.uint64(cp)]
                if entry < 0:
                    python[d] = True
                    o = doc_start
                    break
                size += (entry >> 32) & 7
                o, prev_token, started = _emit(entry, out, o, prev_token, started)
            if not python[d]:
                folded_bytes[d] = size
            a = end
        elif kind == 1:
            size = 0
            i = w
            # A text's code points, each one or two units (a pair).
            for _ in range(lengths[d]):
                cp = np.int64(wide_buf[np.uint64(i)])
                i += 1
                if cp < 0x80:  # as in a UTF-8 text
                    o, prev_token, started = _emit_ascii(
                        ascii_tokens[cp], out, o, prev_token, started
                    )
                    size += 1
                    continue
                if 0xD800 <= cp < 0xDC00:
                    # A pair (the encoder was strict, so a high surrogate is never alone).
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (np.int64(wide_buf[i]) - 0xDC00)
                    i += 1
                entry = table[np.uint64(cp)]
                if entry < 0:
                    python[d] = True
                    break
                size += (entry >> 32) & 7
                o, prev_token, started = _emit(entry, out, o, prev_token, started)
            if python[d]:
                o = doc_start
                # Skip the rest of the text's units to find the next text.
                i = w
                for _ in range(lengths[d]):
                    cp = np.int64(wide_buf[i])
                    i += 1 + np.int64(0xD800 <= cp < 0xDC00)
            else:
                folded_bytes[d] = size
            w = i
        else:
            python[d] = True
        out_offsets[d + 1] = o
    out[o : o + PADDING] = 0
    return out[: o + PADDING], out_offsets, folded_bytes, python


@njit(inline="always")
def _copy(src, lo, hi, dst, o):
    """dst[o:o + hi - lo] = src[lo:hi] (a plain loop: numba's slice assignment checks for
    overlap and can copy twice)."""
    for k in range(hi - lo):
        dst[np.uint64(o + k)] = src[np.uint64(lo + k)]
    return o + hi - lo


@njit(cache=True, nogil=True)
def _splice(canon, offsets, folded_bytes, python, slow_canon, slow_offsets, slow_bytes, out):
    """Put the Python-folded texts' canonical bytes (in order) into the gaps left for them,
    in ``out`` (``offsets[-1] + slow_offsets[-1] + PADDING`` bytes)."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    sizes = folded_bytes.copy()
    o = 0
    k = 0
    d = 0
    while d < n:
        if python[d]:
            o = _copy(slow_canon, slow_offsets[k], slow_offsets[k + 1], out, o)
            sizes[d] = slow_bytes[k]
            k += 1
            out_offsets[d + 1] = o
            d += 1
            continue
        # A run of texts folded by the kernel is one contiguous block of its output.
        first = d
        while d < n and not python[d]:
            d += 1
        base = o - offsets[first]
        o = _copy(canon, offsets[first], offsets[d], out, o)
        for j in range(first, d):
            out_offsets[j + 1] = offsets[j + 1] + base
    out[o:] = 0
    return out, out_offsets, sizes


def canonical_texts(
    texts: list[str] | TextColumn | pa.Array,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(canonical bytes, offsets int64[n + 1], folded UTF-8 bytes int64[n]) of many texts.

    The bytes end with ``PADDING`` zero bytes after ``offsets[n]`` (see :func:`neardup.hashing._xxh64_padded`).

    Texts of simple code points (nearly all text) are folded by :func:`_fold_canonicalize`; the
    rest take :func:`fold` and :func:`_canonicalize`. Both give the same bytes. Texts given as
    a :class:`TextColumn` (or an Arrow string array) reach the kernel as their UTF-8 bytes,
    without a Python str; only the rare texts that need the Python fold become strs.
    O(total bytes).

    Example:
        >>> import pyarrow as pa
        >>> canon, offsets, folded = canonical_texts(pa.array(["Ａ, b", "한"]))
        >>> canon[: offsets[-1]].tobytes().decode(), offsets.tolist(), folded.tolist()
        ('a b한', [0, 3, 6], [4, 3])
    """
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        texts = TextColumn(texts)
    if isinstance(texts, TextColumn):
        data, starts = texts.buffers()
        kinds = np.full(len(texts), 3, dtype=np.int8)  # UTF-8, read as it is
        encoded = (data[starts[0] : starts[-1]], _NO_UNITS, kinds, np.diff(starts))
    else:
        encoded = _encode_batch(texts)
    # numpy, not the kernels, allocates their output: numpy asks Linux for transparent huge
    # pages for large arrays, so writing them costs a page fault each 2 MiB instead of each
    # 4 KiB (measured: a sixth of the time of canonical_texts on 100k documents).
    out = np.empty(_fold_capacity(*encoded), dtype=np.uint8)
    canon, offsets, folded_bytes, python = _fold_canonicalize(*encoded, _fold_table(), out)
    if not python.any():
        return canon, offsets, folded_bytes
    slow = np.flatnonzero(python)
    if isinstance(texts, TextColumn):
        slow_texts = texts.array.take(pa.array(slow)).to_pylist()
    else:
        slow_texts = [texts[i] for i in slow]
    slow_buf, slow_raw = _utf8_batch(slow_texts)
    slow_canon, slow_offsets = _canonicalize(slow_buf, slow_raw, token_table())
    spliced = np.empty(offsets[-1] + slow_offsets[-1] + PADDING, dtype=np.uint8)
    return _splice(
        canon, offsets, folded_bytes, python, slow_canon, slow_offsets, np.diff(slow_raw), spliced
    )


def canonical_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Canonical UTF-8 bytes of many texts: (buffer uint8, offsets int64[n+1]). O(total bytes).

    Example:
        >>> buf, offsets = canonical_batch(["A, b", "C"])
        >>> buf.tobytes(), offsets.tolist()
        (b'a bc', [0, 3, 4])
    """
    canon, offsets, _ = canonical_texts(list(texts))
    return canon[: offsets[-1]], offsets


def normalize(text: str) -> str:
    """The canonical text: folded, separators removed, tokens joined by one space.

    Idempotent: ``normalize(normalize(t)) == normalize(t)``. O(len(text)).

    Example:
        >>> normalize("  Ｈｅｌｌｏ,\\n   WORLD — 안녕\\t하세요!! ")
        'hello world 안녕 하세요'
    """
    return normalize_many([text])[0]


def normalize_many(texts: list[str]) -> list[str]:
    """:func:`normalize` over a list, with one kernel call. O(total length).

    Example:
        >>> normalize_many(["Hello, World", " !? "])
        ['hello world', '']
    """
    buf, offsets = canonical_batch(texts)
    raw = buf.tobytes()
    return [
        raw[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(texts))
    ]


@dataclass(frozen=True)
class Canonical:
    """The canonical UTF-8 bytes of a batch of texts, made once for every use of them
    (shingles, LCS unit counts).

    Attributes:
        data: uint8 bytes of all texts, text d at ``data[offsets[d]:offsets[d + 1]]``, followed
            by zero padding for the hash kernels.
        offsets: int64[n + 1].
        folded_bytes: int64[n], UTF-8 bytes of each text after NFKC and case folding.
    """

    data: np.ndarray
    offsets: np.ndarray
    folded_bytes: np.ndarray

    @classmethod
    def of(cls, texts: Sequence[str] | TextColumn) -> Canonical:
        """The canonical form of ``texts`` (see :func:`normalize`), a sequence of strs or a
        :class:`TextColumn`. O(total bytes).

        Example:
            >>> c = Canonical.of(["Hello,  World", ""])
            >>> bytes(c.data[: c.offsets[-1]]), c.offsets.tolist()
            (b'hello world', [0, 11, 11])
        """
        return cls(*canonical_texts(texts if isinstance(texts, TextColumn) else list(texts)))
