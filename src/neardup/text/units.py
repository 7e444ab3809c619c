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
    separated by spaces; Chinese and Japanese have no spaces, and Korean spacing is unreliable
    (spacing errors, particles attached or not, lines wrapped inside a word: the Debian Korean
    descriptions have all three), so their texts count characters. Letters alone were measured
    too lenient for English (unrelated words share letters in order, so a pair with a fifth
    of its words changed still keeps 80 % of its letters), and words too strict for Korean.
    Characters are their code point with the top bit set, words XXH64 values with it cleared
    (uint64).

Example:
    >>> o, c = lcs_units(["a b c", "한 글"], "auto")
    >>> o.tolist(), lcs_unit_counts(["a b c", "한 글"]).tolist()
    ([0, 3, 5], [3, 2])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from neardup.hashing import _xxh64_padded
from neardup.text.canonical import Canonical, utf8_code_point

__all__ = ["LCS_UNITS", "lcs_unit_counts", "lcs_units"]

LCS_UNITS = ("auto", "syllable", "word")


@njit(cache=True, nogil=True)
def _syllable_codes(canon, offsets):
    """Code points of the canonical UTF-8 text, spaces dropped (uint32, CSR)."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        count = 0
        for i in range(offsets[d], offsets[d + 1]):
            b = canon[i]
            count += np.int64((b & 0xC0) != 0x80) & np.int64(b != 32)
        out_offsets[d + 1] = out_offsets[d] + count
    codes = np.empty(out_offsets[n], dtype=np.uint32)
    o = 0
    for d in range(n):
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:
            cp, width = utf8_code_point(canon, i)
            i += width
            if cp != 32:
                codes[o] = cp
                o += 1
    return out_offsets, codes


@njit(cache=True, nogil=True)
def _word_codes(canon, offsets):
    """XXH64 of every space-separated token of the canonical text (uint64, CSR)."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        count = 0
        if offsets[d + 1] > offsets[d]:
            count = 1
            for i in range(offsets[d], offsets[d + 1]):
                count += np.int64(canon[i] == 32)
        out_offsets[d + 1] = out_offsets[d] + count
    codes = np.empty(out_offsets[n], dtype=np.uint64)
    o = 0
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        if hi == lo:
            continue
        start = lo
        for i in range(lo, hi + 1):
            if i == hi or canon[i] == 32:
                codes[o] = _xxh64_padded(canon, start, i)
                o += 1
                start = i + 1
    return out_offsets, codes


_TAG = np.uint64(1) << np.uint64(63)


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
def _has_unspaced_script(canon, lo, hi):
    """Whether the UTF-8 text ``canon[lo:hi]`` holds a character of :func:`_unspaced_script`
    (only the code points of lead bytes of U+1000 and above are decoded)."""
    i = lo
    while i < hi:
        if canon[i] >= 0xE1:
            cp, length = utf8_code_point(canon, i)
            if _unspaced_script(cp):
                return True
            i += length
        else:
            i += 1
    return False


@njit(cache=True, nogil=True)
def _auto_codes(canon, offsets):
    """The ``"auto"`` units of the canonical texts (uint64, CSR), in one pass per text."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    codes = np.empty(canon.shape[0], dtype=np.uint64)  # every unit takes at least one byte
    o = 0
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        by_character = _has_unspaced_script(canon, lo, hi)
        if by_character:
            i = lo
            while i < hi:
                cp, length = utf8_code_point(canon, i)
                if cp != 32:
                    codes[o] = np.uint64(cp) | _TAG
                    o += 1
                i += length
        elif hi > lo:
            start = lo
            for i in range(lo, hi + 1):
                if i == hi or canon[i] == 32:
                    codes[o] = _xxh64_padded(canon, start, i) & ~_TAG
                    o += 1
                    start = i + 1
        out_offsets[d + 1] = o
    return out_offsets, codes[:o].copy()


@njit(cache=True, nogil=True)
def _auto_counts(canon, offsets):
    """How many ``"auto"`` units each canonical text has (what :func:`_auto_codes` writes)."""
    n = offsets.shape[0] - 1
    counts = np.zeros(n, dtype=np.int64)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        # Without branches over the bytes (spaces, lead bytes, any lead byte of U+1000 and
        # above); the code points are decoded only for a text that has such a byte.
        characters = 0
        spaces = 0
        high = 0
        for i in range(lo, hi):
            b0 = canon[i]
            space = np.int64(b0 == 32)
            spaces += space
            characters += np.int64((b0 & 0xC0) != 0x80) - space
            high |= np.int64(b0 >= 0xE1)
        if high and _has_unspaced_script(canon, lo, hi):
            counts[d] = characters
        elif hi > lo:
            counts[d] = spaces + 1
    return counts


def lcs_unit_counts(texts: Sequence[str] | Canonical, unit: str = "auto") -> np.ndarray:
    """The number of units of each text (int64[n]), as :func:`lcs_units` would give them
    (``texts`` may be their :class:`~neardup.text.Canonical` form), without building them for
    ``"auto"``. O(total bytes).

    Example:
        >>> lcs_unit_counts(["a b c", "한 글", ""]).tolist()
        [3, 2, 0]
    """
    if unit != "auto":
        return np.diff(lcs_units(texts, unit)[0])
    canonical = texts if isinstance(texts, Canonical) else Canonical.of(texts)
    return _auto_counts(canonical.data, canonical.offsets)


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
    if unit not in LCS_UNITS:
        raise ValueError(f"LCS unit must be one of {', '.join(LCS_UNITS)}; got {unit!r}")
    canon = texts if isinstance(texts, Canonical) else Canonical.of(texts)
    if unit == "auto":
        return _auto_codes(canon.data, canon.offsets)
    if unit == "syllable":
        return _syllable_codes(canon.data, canon.offsets)
    return _word_codes(canon.data, canon.offsets)
