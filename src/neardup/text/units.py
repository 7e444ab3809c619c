"""The units of the LCS verification (:mod:`neardup.lcs`): each text as a sequence of integer
codes, taken from the package's canonical text (:func:`neardup.text.canonical_batch`: NFKC,
case folding, separators → one space):

``"syllable"``
    every code point of the canonical text except the spaces (a Hangul syllable block, a
    letter, a digit): spacing errors and words broken across lines change nothing (rule 1).
    Codes are the code points (uint32).
``"word"``
    the space-separated tokens (for Korean, the eojeol), each the XXH64 of its UTF-8 bytes
    (uint64, the ids of ``word:1`` shingles; two different words share an id with probability
    2^-64). A missing space or a line break inside a word splits or merges tokens.
``"auto"`` (the unit of ``--verify lcs:T``)
    per text: its characters (``"syllable"``, spaces ignored) when it holds any Hangul, kana or
    Han character, else its words (``"word"``). Words are the definition's unit where they are
    separated by spaces. Chinese and Japanese have no spaces, so their texts count characters.
    Korean has spaces but unreliable ones (spacing errors, particles attached or not, lines
    wrapped inside a word: the Debian Korean descriptions have all three), so a text holding
    Hangul is aligned by characters and measured in its eojeol (:mod:`neardup.eojeol`): each
    character that ends an eojeol (followed by a space or the end of the text) carries
    :data:`~neardup.eojeol.EOJEOL_END`. Letters alone were measured too lenient for English
    (unrelated words share letters in order, so a pair with a fifth of its words changed
    still keeps 80 % of its letters). Characters are their code point with the top bit set,
    words XXH64 values with it cleared (uint64).

Example:
    >>> o, c = lcs_units(["a b c", "한 글"], "auto")
    >>> o.tolist(), lcs_unit_counts(["a b c", "한 글"]).tolist()
    ([0, 3, 5], [3, 2])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from neardup.borrowed import borrowed
from neardup.eojeol import EOJEOL_END
from neardup.hashing import _read64, _xxh64_below16, _xxh64_padded
from neardup.lcs import COUNT_BUCKETS, SKETCH_BITS, add_counts, add_to_sketch
from neardup.text.canonical import Canonical, utf8_code_point

__all__ = [
    "LCS_UNITS",
    "UNITS_VERSION",
    "lcs_unit_counts",
    "lcs_unit_sketches",
    "lcs_unit_summaries",
    "lcs_units",
]

LCS_UNITS = ("auto", "syllable", "word")

UNITS_VERSION = 2
"""The version of the units and of their sketches, kept beside the summaries an index caches:
2 since Korean texts mark the ends of their eojeol and their sketches say nothing
(:mod:`neardup.eojeol`)."""


_TAG = np.uint64(1) << np.uint64(63)
_ALL_BITS = ~np.uint64(0)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
# Bytes decoded per block by _characters_into: the block's code points stay in L1 between the
# decoding loop and the compacting one.
_BLOCK = 1024

# The kernels below index with uint64: numba wraps a negative signed index around, and that
# check keeps LLVM from vectorising a byte loop (it measured 5 times slower).


@njit(inline="always")
def _census(canon, lo, hi):
    """``(characters, spaces, high)`` of the UTF-8 text ``canon[lo:hi]`` (uint64 bounds): its
    code points other than the space, its spaces, and whether a byte is a lead byte of U+1000
    or above (what :func:`_scripts` looks for). No branch, so it vectorises."""
    characters = 0
    spaces = 0
    high = False
    for i in range(lo, hi):
        b = canon[i]
        space = b == 32
        spaces += np.int64(space)
        characters += np.int64((b & 0xC0) != 0x80) - np.int64(space)
        high |= b >= 0xE1
    return characters, spaces, high


@njit(inline="always")
def _code_point_at(canon, i):
    """The code point of the UTF-8 sequence that starts at byte ``i`` (uint64), by the rule of
    :func:`~neardup.text.canonical.utf8_code_point` but without a branch, so that a loop over
    every byte vectorises (a continuation byte gives a value nobody keeps). Reads
    ``canon[i:i + 4]``, which must be in the array."""
    b0 = np.uint64(canon[i])
    c1 = np.uint64(canon[i + _ONE]) & np.uint64(0x3F)
    c2 = np.uint64(canon[i + np.uint64(2)]) & np.uint64(0x3F)
    c3 = np.uint64(canon[i + np.uint64(3)]) & np.uint64(0x3F)
    two = ((b0 & np.uint64(0x1F)) << np.uint64(6)) | c1
    three = ((b0 & np.uint64(0x0F)) << np.uint64(12)) | (c1 << np.uint64(6)) | c2
    four = (
        ((b0 & np.uint64(0x07)) << np.uint64(18))
        | (c1 << np.uint64(12))
        | (c2 << np.uint64(6))
        | c3
    )
    return b0 if b0 < 0x80 else (two if b0 < 0xE0 else (three if b0 < 0xF0 else four))


@njit(inline="always")
def _characters_into(codes, o, canon, lo, hi, tag, ends, decoded, kept):
    """Write the code points of ``canon[lo:hi]`` other than the space, each ``| tag``, and
    ``| ends`` for one followed by a space or the end of the text (the last character of a
    word), to ``codes[o:]`` (uint64 bounds; ``decoded`` and ``kept`` are scratch blocks,
    ``decoded`` of the dtype of ``codes``).

    On a text mixing Hangul (3 bytes) with spaces or ASCII (1 byte), a decoding loop that
    branches on the lead byte mispredicts at almost every word, and one that steps from lead
    byte to lead byte without branches waits on each load. So a block is decoded at every
    byte, without branches (vectorised), and then compacted: every byte writes its value at
    ``codes[o]`` and only a lead byte that is not a space moves ``o`` on; a byte followed by a
    space then marks the character written last as its word's last. (Told at the lead byte
    instead, by the byte after the character, a load at an index computed from the byte, the
    decoding did not vectorise: Korean text went at half the speed.) O(hi - lo).
    """
    written_from = o
    while hi > lo and canon[hi - _ONE] == 32:
        hi -= _ONE
    # The last character goes through the scalar loop at the end: an unkept byte's write at
    # codes[o] is then always overwritten by a character of this text, and reading four bytes
    # from any byte before it stays inside the text.
    fast_end = hi - np.uint64(4) if hi - lo > np.uint64(4) else lo
    start = lo
    while start < fast_end:
        stop = min(start + np.uint64(decoded.shape[0]), fast_end)
        for j in range(stop - start):
            b = canon[start + j]
            decoded[j] = _code_point_at(canon, start + j) | tag
            # A byte followed by a space is the last of a word's last character.
            last = (b != 32) & (canon[start + j + _ONE] == 32)
            kept[j] = (((b & 0xC0) != 0x80) & (b != 32)) | (last << 1)
        for j in range(stop - start):
            codes[o] = decoded[j]
            o += np.uint64(kept[j] & 1)
            # The character that byte j ends is the last one written (o - 1; none yet at the
            # text's first, where no byte of valid UTF-8 ends one, and the slot is rewritten).
            ended = np.uint64(0) - np.uint64(kept[j] >> 1)
            codes[o - np.uint64(o > written_from)] |= ends & ended
        start = stop
    i = start
    while i < hi and (canon[i] & 0xC0) == 0x80:
        i += _ONE
    if i > start and i < hi and canon[i] == 32 and o > written_from:  # begun in a block
        codes[o - _ONE] |= ends
    while i < hi:
        cp, length = utf8_code_point(canon, np.int64(i))
        i += np.uint64(length)
        if cp != 32:
            last = i >= hi or canon[i] == 32
            codes[o] = np.uint64(cp) | tag | (ends if last else _ZERO)
            o += _ONE


@njit(inline="always")
def _words_into(codes, o, canon, lo, hi, bits, ends, heads):
    """Write the XXH64 ``& bits`` of every space-separated token of ``canon[lo:hi]`` (``lo <
    hi``, uint64 bounds) to ``codes[o:]`` (uint64): first the end of each token, in place and
    without a branch per byte, then the hashes over them.

    Most words are shorter than 16 bytes. When the 16 bytes from every word's start are in
    ``canon`` (its padding), :data:`_BLOCK` words at a time have their ends copied to
    ``ends`` (uint64[_BLOCK + 1]) and their first 16 bytes to ``heads`` (uint64[2 · _BLOCK]),
    and a loop
    without a branch hashes them all (:func:`~neardup.hashing._xxh64_below16`), which the
    compiler vectorises (measured on English: a third less time than hashing word by word);
    the longer words are hashed again from ``canon``."""
    last = o
    for i in range(lo, hi):
        codes[last] = i
        last += np.uint64(canon[i] == 32)
    codes[last] = hi
    if hi + np.uint64(16) > np.uint64(canon.shape[0]):
        start = np.int64(lo)
        for j in range(o, last + _ONE):
            end = np.int64(codes[j])
            codes[j] = _xxh64_padded(canon, start, end) & bits
            start = end + 1
        return
    # ends[w + 1] is the end of word w of the block, which starts at ends[w] + 1 (wrapping
    # around for a text at byte 0).
    ends[0] = lo - _ONE
    j = o
    while j <= last:
        count = min(np.uint64(_BLOCK), last + _ONE - j)
        for w in range(count):
            ends[w + 1] = codes[j + w]
        for w in range(count):
            start = np.int64(ends[w] + _ONE)
            heads[2 * w] = _read64(canon, start)
            heads[2 * w + 1] = _read64(canon, start + 8)
        for w in range(count):
            length = ends[w + 1] - ends[w] - _ONE
            codes[j + w] = _xxh64_below16(heads[2 * w], heads[2 * w + 1], length) & bits
        for w in range(count):
            if ends[w + 1] - ends[w] > np.uint64(16):
                start = np.int64(ends[w] + _ONE)
                codes[j + w] = _xxh64_padded(canon, start, np.int64(ends[w + 1])) & bits
        ends[0] = ends[count]
        j += count


@njit(inline="always")
def _unspaced_script(cp):
    """Hangul (syllables and jamo), kana and Han: scripts written without spaces between
    words, or (Hangul) with spacing that writers get wrong."""
    return cp >= 0x1100 and (
        (0xAC00 <= cp <= 0xD7A3)
        or (cp <= 0x11FF)
        or (0x3130 <= cp <= 0x318F)
        or (0x3040 <= cp <= 0x30FF)
        or (0x3400 <= cp <= 0x4DBF)
        or (0x4E00 <= cp <= 0x9FFF)
        or (0xF900 <= cp <= 0xFAFF)
        or (0x20000 <= cp <= 0x2FFFF)
    )


@njit(inline="always")
def _hangul(cp):
    """Hangul syllables and jamo (a Korean text)."""
    return (0xAC00 <= cp <= 0xD7A3) or (0x1100 <= cp <= 0x11FF) or (0x3130 <= cp <= 0x318F)


@njit(inline="always")
def _scripts(canon, lo, hi):
    """``(unspaced, hangul)``: whether the UTF-8 text ``canon[lo:hi]`` holds a character of
    :func:`_unspaced_script`, and one of :func:`_hangul` (only the code points of lead bytes of
    U+1000 and above are decoded, until the first Hangul)."""
    unspaced = False
    i = lo
    while i < hi:
        if canon[i] >= 0xE1:
            cp, length = utf8_code_point(canon, i)
            if _hangul(cp):
                return True, True
            unspaced |= _unspaced_script(cp)
            i += length
        else:
            i += 1
    return unspaced, False


# How _layout tells a text's units apart: :data:`LCS_UNITS` by position.
_AUTO, _SYLLABLE, _WORD = 0, 1, 2


@njit(cache=True, nogil=True)
def _layout(canon, offsets, unit):
    """``(out_offsets, by_character, korean)`` of the units ``unit`` (``_AUTO``, ``_SYLLABLE``
    or ``_WORD``) of the canonical texts: where each text's units start in the CSR
    (int64[n + 1]), whether it is counted in characters and whether (``_AUTO``) it holds Hangul,
    its characters then marking the ends of its eojeol (bool[n] each). For ``_AUTO`` the code
    points are decoded only for a text with a lead byte of U+1000 or above, and only until the
    first Hangul character."""
    canon = borrowed(canon)  # two helpers a text (see _fill)
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    by_character = np.zeros(n, dtype=np.bool_)
    korean = np.zeros(n, dtype=np.bool_)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        characters, spaces, high = _census(canon, np.uint64(lo), np.uint64(hi))
        if unit == _AUTO and high:
            by_character[d], korean[d] = _scripts(canon, lo, hi)
        by_character[d] |= unit == _SYLLABLE
        count = characters if by_character[d] else (spaces + 1 if hi > lo else 0)
        out_offsets[d + 1] = out_offsets[d] + count
    return out_offsets, by_character, korean


@njit(inline="always")
def _text_units_into(
    codes, o, canon, lo, hi, by_character, korean, tag, bits, decoded, kept, ends, heads
):
    """Write the units of the text ``canon[lo:hi]`` to ``codes[o:]``: its code points
    ``| tag`` when ``by_character`` (those that end an eojeol ``| EOJEOL_END`` too when
    ``korean``), else the XXH64 of its words ``& bits`` (``decoded``, ``kept``, ``ends`` and
    ``heads`` are the scratch blocks of :func:`_characters_into` and :func:`_words_into`)."""
    if by_character:
        ends = EOJEOL_END if korean else _ZERO
        _characters_into(codes, o, canon, np.uint64(lo), np.uint64(hi), tag, ends, decoded, kept)
    elif hi > lo:
        _words_into(codes, o, canon, np.uint64(lo), np.uint64(hi), bits, ends, heads)


def _scratch(dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The scratch blocks of :func:`_text_units_into` (``decoded`` of ``dtype``, ``kept``,
    ``ends``, ``heads``): made by the caller of a kernel, which borrows them (below)."""
    return (
        np.empty(_BLOCK, dtype=dtype),
        np.empty(_BLOCK, dtype=np.uint8),
        np.empty(_BLOCK + 1, dtype=np.uint64),
        np.empty(2 * _BLOCK, dtype=np.uint64),
    )


# The kernels below call their helpers once a text with six or more arrays: they borrow their
# arrays (:func:`~neardup.borrowed.borrowed`, the caller holds them for the call), so that no
# call counts references (200,000 short texts, one thread, benchmarks/bench_units.py: their
# sketches 59 -> 42 ms, their units 50 -> 41 ms).


@njit(cache=True, nogil=True)
def _fill(canon, offsets, out_offsets, by_character, korean, codes, tag, bits, scratch):
    """Write each text's units (:func:`_text_units_into`) to ``codes`` (uint32 for characters
    alone, else uint64) at ``out_offsets``."""
    canon, codes = borrowed(canon), borrowed(codes)
    decoded, kept, ends, heads = borrowed(scratch)
    for d in range(offsets.shape[0] - 1):
        o = np.uint64(out_offsets[d])
        _text_units_into(
            codes,
            o,
            canon,
            offsets[d],
            offsets[d + 1],
            by_character[d],
            korean[d],
            tag,
            bits,
            decoded,
            kept,
            ends,
            heads,
        )


def lcs_unit_counts(texts: Sequence[str] | Canonical, unit: str = "auto") -> np.ndarray:
    """The number of units of each text (int64[n]), as :func:`lcs_units` would give them
    (``texts`` may be their :class:`~neardup.text.Canonical` form), without building them.
    O(total bytes).

    Example:
        >>> lcs_unit_counts(["a b c", "한 글", ""]).tolist()
        [3, 2, 0]
    """
    canon = texts if isinstance(texts, Canonical) else Canonical.of(texts)
    return np.diff(_layout(canon.data, canon.offsets, _unit_code(unit))[0])


@njit(cache=True, nogil=True)
def _sketch(canon, offsets, out_offsets, by_character, korean, tag, bits, sketches, marks, units,
            scratch):  # fmt: skip
    """Count each text's units (as :func:`_fill` writes them) in its row of ``sketches`` and,
    when ``marks`` has columns, mark their buckets in its row of ``marks``
    (:func:`neardup.lcs.add_to_sketch`), through ``units``, a scratch array of the longest
    text's units."""
    canon, units = borrowed(canon), borrowed(units)
    sketches, marks = borrowed(sketches), borrowed(marks)
    decoded, kept, ends, heads = borrowed(scratch)
    for d in range(offsets.shape[0] - 1):
        _text_units_into(
            units,
            _ZERO,
            canon,
            offsets[d],
            offsets[d + 1],
            by_character[d],
            korean[d],
            tag,
            bits,
            decoded,
            kept,
            ends,
            heads,
        )
        row = units[: out_offsets[d + 1] - out_offsets[d]]
        add_counts(sketches[d], row)
        if marks.shape[1]:
            add_to_sketch(marks[d], row)


def lcs_unit_sketches(
    texts: Sequence[str] | Canonical, unit: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """The number of units of each text (int64[n], as :func:`lcs_unit_counts`) and the count
    sketch of its units (uint8[n, COUNT_BUCKETS], as :func:`neardup.lcs.count_sketches` of
    :func:`lcs_units`), without keeping the units: each text's are made in one scratch array
    and counted. O(total bytes); memory 128 bytes a text.

    Example:
        >>> sizes, sketches = lcs_unit_sketches(["a b a", "中 文"])
        >>> sizes.tolist(), sketches.shape, sketches.max(axis=1).tolist()
        ([3, 2], (2, 128), [2, 1])
        >>> lcs_unit_sketches(["한 글"])[1].min()  # a Korean text's sketch says nothing
        np.uint8(255)
    """
    sizes, sketches, _ = _sketched(texts, unit, 0)
    return sizes, sketches


def lcs_unit_summaries(
    texts: Sequence[str] | Canonical, unit: str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`lcs_unit_sketches` and, in the same pass, each text's units marked in
    SKETCH_BITS buckets (uint64[n, SKETCH_BITS // 64], as
    ``neardup.index.lcs_bound.unit_sketches`` of :func:`lcs_units`): what a MinHash index
    keeps of each document to rule candidates out. O(total bytes); memory 192 bytes a text.

    Example:
        >>> sizes, counts, marks = lcs_unit_summaries(["a b a", ""])
        >>> sizes.tolist(), [int(m).bit_count() for m in marks.sum(axis=1)]
        ([3, 0], [2, 0])
    """
    return _sketched(texts, unit, SKETCH_BITS // 64)


def _sketched(texts: Sequence[str] | Canonical, unit: str, words: int) -> tuple:
    canon, offsets, by_character, korean, tag, bits, _ = _laid_out(texts, unit)
    n = offsets.shape[0] - 1
    sketches = np.zeros((n, COUNT_BUCKETS), dtype=np.uint8)
    marks = np.zeros((n, words), dtype=np.uint64)
    sizes = np.diff(offsets)
    units = np.empty(int(sizes.max(initial=0)) + 1, dtype=np.uint64)
    _sketch(canon.data, canon.offsets, offsets, by_character, korean, tag, bits, sketches, marks,
            units, _scratch(np.uint64))  # fmt: skip
    return sizes, sketches, marks


def lcs_units(
    texts: Sequence[str] | Canonical, unit: str = "syllable"
) -> tuple[np.ndarray, np.ndarray]:
    """The unit sequences of many texts, CSR: ``(offsets int64[n + 1], codes)``.

    Text d's units are ``codes[offsets[d]:offsets[d + 1]]``, taken from the canonical text of
    :mod:`neardup.text` (``texts`` may be given as it, a ``Canonical``). ``unit`` is ``"syllable"``
    (code points with the spaces removed, uint32) or ``"word"`` (XXH64 of each token, uint64);
    see the module docstring. O(total bytes).

    Example:
        >>> o, c = lcs_units(["Ab, c", "", "한 글"], "syllable")
        >>> o.tolist(), [chr(x) for x in c]
        ([0, 3, 3, 5], ['a', 'b', 'c', '한', '글'])
        >>> lcs_units(["x y", "z"], "word")[0].tolist()
        [0, 2, 3]
    """
    canon, offsets, by_character, korean, tag, bits, code = _laid_out(texts, unit)
    codes = np.empty(int(offsets[-1]), dtype=np.uint32 if code == _SYLLABLE else np.uint64)
    _fill(canon.data, canon.offsets, offsets, by_character, korean, codes, tag, bits,
          _scratch(codes.dtype))  # fmt: skip
    return offsets, codes


def _laid_out(texts: Sequence[str] | Canonical, unit: str) -> tuple:
    """``(canonical, out_offsets, by_character, korean, tag, bits, code)``: the texts'
    canonical form, :func:`_layout` of their units ``unit`` and what :func:`_text_units_into`
    needs to make them."""
    code = _unit_code(unit)
    canon = texts if isinstance(texts, Canonical) else Canonical.of(texts)
    offsets, by_character, korean = _layout(canon.data, canon.offsets, code)
    # "auto" tells characters from words by the top bit; one unit alone needs no tag.
    tag, bits = (_TAG, ~_TAG) if code == _AUTO else (np.uint64(0), _ALL_BITS)
    return canon, offsets, by_character, korean, tag, bits, code


def _unit_code(unit: str) -> int:
    """The position of ``unit`` in :data:`LCS_UNITS`, or ``ValueError``."""
    if unit not in LCS_UNITS:
        raise ValueError(f"LCS unit must be one of {', '.join(LCS_UNITS)}; got {unit!r}")
    return LCS_UNITS.index(unit)
