"""Shingles: canonical text → hashed features.

Shingles are taken from the canonical text (:mod:`neardup.text.canonical`):

``word:k``
    k consecutive tokens joined by one space (the seed's eojeol trigram is ``word:3``).
``char:k``
    k consecutive code points of the canonical text with the spaces removed, so that spacing
    errors and words broken across lines (common in Korean) do not change the features.
``stopword:k[:LIST]``
    the ``word:k`` shingles whose first word is a stop word (Theobald et al.'s SpotSigs idea,
    seed 002's stop-word shingles for news pages): running prose is full of stop words, menus
    and boilerplate are not, so the features come from the prose. ``LIST`` is ``auto`` (English
    and Korean, the default), ``en``, ``ko`` or a file (:func:`stop_words`). A document with no
    anchored shingle keeps all its ``word:k`` shingles, so it is never empty because of the list.
``…:multiset``
    after any of them: the j-th repeat of a shingle is a feature of its own
    (:func:`multiset_hashes`), so set Jaccard over the features is multiset Jaccard.

A document with fewer than k units has one shingle: all its units (joined as above). A document
with no token at all is *empty*: it has no shingles and its signatures are the documented fixed
values of :mod:`neardup.simhash` and :mod:`neardup.minhash`.

Each shingle is hashed (:mod:`neardup.hashing`) over its UTF-8 bytes. A batch of documents becomes
CSR arrays: ``offsets`` (int64, n + 1) and ``hashes`` (uint64, the shingles in document order,
repeats included), computed in numba kernels straight from the canonical bytes.

Example:
    >>> shingles("SimHash 계산 방법을, 간단히 정리하면!", "word:3")[:2]
    ['simhash 계산 방법을', '계산 방법을 간단히']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numba import njit

from neardup.hashing import (
    _MD5_K,
    _MD5_S,
    DEFAULT_HASH_NAME,
    _read64,
    _xxh64_inline,
    _xxh64_padded,
    hash_code,
    md5_64_slice,
    splitmix64,
    xxh64_slice,
)
from neardup.text.canonical import PADDING, Canonical, normalize, normalize_many

__all__ = [
    "CONTENT_SEEDS",
    "DEFAULT_TEXT_SHINGLE",
    "MAX_SHINGLE_SIZE",
    "SHINGLE_UNITS",
    "STOP_WORD_LISTS",
    "Features",
    "Shingling",
    "hash_features",
    "multiset_hashes",
    "shingle_sets",
    "shingles",
    "stop_word_hashes",
    "stop_words",
]

#: The shingles of the functions on texts (:func:`shingles`, :func:`hash_features`, SimHash,
#: MinHash, the measures of :mod:`neardup.similarity`) when none are given: word 3-grams, the
#: seed design's; :mod:`neardup.settings` gives each method of a run its own default.
DEFAULT_TEXT_SHINGLE = "word:3"

SHINGLE_UNITS = ("word", "char", "stopword")
MAX_SHINGLE_SIZE = 64
# Seeds of the two halves of the 128-bit content fingerprint (XXH64 of the canonical text).
CONTENT_SEEDS = (0, 0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Shingling:
    """How a document becomes features: ``unit`` k-grams of ``size`` units, as a set or multiset.

    Units: ``word`` (words), ``char`` (characters, spaces removed) and ``stopword`` (word
    k-grams whose first word is in the stop-word list ``stopwords``, see :func:`stop_words`).
    With ``multiset``, the j-th repeat of a shingle in a document (j ≥ 1) becomes a feature of
    its own (see :func:`multiset_hashes`), so set measures over the features become multiset
    measures: Jaccard = Σ min(count) / Σ max(count).

    The text form, accepted everywhere a shingling is (``--shingle``, ``Settings.shingle``), is
    ``UNIT:K``, then for ``stopword`` optionally ``:LIST`` (``auto``, ``en``, ``ko`` or the path
    of a word list, see :func:`stop_words`; default ``auto``), then optionally ``:multiset``
    (``:set`` is the default). A unit alone means size 3, or 5 for ``char``.

    Example:
        >>> Shingling.parse("char:5")
        Shingling(unit='char', size=5, multiset=False, stopwords=None)
        >>> str(Shingling.parse("word:3:multiset"))
        'word:3:multiset'
        >>> s = Shingling.parse("stopword:4:ko:multiset")
        >>> s.stopwords, s.multiset, str(Shingling.parse("stopword:4"))
        ('ko', True, 'stopword:4')
    """

    unit: str = "word"
    size: int = 3
    multiset: bool = False
    stopwords: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in SHINGLE_UNITS:
            raise ValueError(
                f"shingle unit must be one of {', '.join(SHINGLE_UNITS)}; got {self.unit!r}"
            )
        if not isinstance(self.size, int) or not 1 <= self.size <= MAX_SHINGLE_SIZE:
            raise ValueError(f"shingle size must be in 1..{MAX_SHINGLE_SIZE}; got {self.size!r}")
        if self.unit == "stopword":
            if not self.stopwords:
                object.__setattr__(self, "stopwords", "auto")
        elif self.stopwords is not None:
            raise ValueError(
                f"a stop-word list goes with stopword:K shingles only; got {self.unit}:{self.size} "
                f"with list {self.stopwords!r}"
            )

    @classmethod
    def parse(cls, spec: str | Shingling) -> Shingling:
        """Parse the text form (see the class docstring); ValueError naming the valid forms."""
        if isinstance(spec, Shingling):
            return spec
        text = str(spec).strip()
        unit, _, rest = text.partition(":")
        size, _, tail = rest.partition(":")
        kind = ""
        # The kind is the last part; a stop-word list before it may be a path holding ':'.
        head, _, last = tail.rpartition(":")
        if last in ("set", "multiset"):
            kind, tail = last, head
        if tail and unit != "stopword" or tail in ("set", "multiset"):
            raise ValueError(
                "shingle must look like word:3, char:5 or stopword:3[:auto|en|ko|FILE], "
                f"optionally with :multiset; got {spec!r}"
            )
        if not size:
            value = 5 if unit == "char" else 3
        else:
            try:
                value = int(size)
            except ValueError:
                raise ValueError(
                    f"shingle must look like word:3, char:5 or stopword:3; got {spec!r}"
                ) from None
        return cls(unit, value, kind == "multiset", tail or None)

    def __str__(self) -> str:
        lists = f":{self.stopwords}" if self.stopwords not in (None, "auto") else ""
        return f"{self.unit}:{self.size}{lists}" + (":multiset" if self.multiset else "")


def shingles(text: str, shingle: str | Shingling = DEFAULT_TEXT_SHINGLE) -> list[str]:
    """The shingles of one text as strings, in order, repeats included.

    This is the plain statement of what the kernels hash (used by ``neardup compare`` and the
    tests); :func:`hash_features` computes the same hashes without building strings.

    Example:
        >>> shingles("Ab, cd ef", "char:4")
        ['abcd', 'bcde', 'cdef']
        >>> shingles("only two", "word:3")
        ['only two']
    """
    spec = Shingling.parse(shingle)
    canonical = normalize(text)
    if spec.unit == "char":
        units, joiner = list(canonical.replace(" ", "")), ""
    else:
        units, joiner = canonical.split(), " "
    if not units:
        return []
    if len(units) < spec.size:
        return [joiner.join(units)]
    starts = range(len(units) - spec.size + 1)
    if spec.unit == "stopword":
        stops = set(stop_words(spec.stopwords))
        anchored = [i for i in starts if units[i] in stops]
        starts = anchored or starts
    return [joiner.join(units[i : i + spec.size]) for i in starts]


@njit(cache=True, nogil=True)
def _word_shingle_offsets(canon, offsets, size):
    """CSR offsets (int64[n + 1]) of the word:size shingles of each text."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        count = 0
        if offsets[d + 1] > offsets[d]:
            spaces = 0
            for i in range(offsets[d], offsets[d + 1]):
                spaces += np.int64(canon[np.uint64(i)] == 32)
            count = max(spaces + 1 - size + 1, 1)
        out_offsets[d + 1] = out_offsets[d] + count
    return out_offsets


@njit(cache=True, nogil=True)
def _word_shingle_hashes(canon, offsets, out_offsets, size, code, s_table, k_table, hashes):
    """word:size shingles into ``hashes``: in the canonical text words are split by exactly
    one space, so a shingle is the slice from its first word's start to its last word's end."""
    n = offsets.shape[0] - 1
    max_len = 0
    for d in range(n):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    # ends[w + 1] is the end of word w of the current text, which starts at ends[w] + 1.
    ends = np.empty(max_len + 2, dtype=np.int64)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        o = out_offsets[d]
        count = out_offsets[d + 1] - o
        if count == 0:
            continue
        if count == 1:
            # At most `size` words: the shingle is the whole text.
            if code == 0:
                hashes[o] = _xxh64_padded(canon, lo, hi)
            else:
                hashes[o] = md5_64_slice(canon, lo, hi, s_table, k_table)
            continue
        # Branch-free word split: every position is written, the count moves on at spaces.
        ends[0] = lo - 1
        words = 1
        for j in range(lo, hi):
            ends[np.uint64(words)] = j
            words += np.int64(canon[np.uint64(j)] == 32)
        ends[words] = hi
        if code == 0:
            for i in range(count):
                hashes[o + i] = _xxh64_padded(
                    canon, ends[np.uint64(i)] + 1, ends[np.uint64(i + size)]
                )
        else:
            for i in range(count):
                hashes[o + i] = md5_64_slice(canon, ends[i] + 1, ends[i + size], s_table, k_table)


@njit(cache=True, nogil=True)
def _char_shingle_offsets(canon, offsets, size):
    """CSR offsets (int64[n + 1]) of the char:size shingles of each text, and whether each
    text is all ASCII (bool[n])."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    ascii = np.empty(n, dtype=np.bool_)
    for d in range(n):
        units = 0
        high = 0
        for i in range(offsets[d], offsets[d + 1]):
            b = canon[np.uint64(i)]
            units += np.int64((b & 0xC0) != 0x80) & np.int64(b != 32)
            high |= b
        out_offsets[d + 1] = out_offsets[d] + (0 if units == 0 else max(units - size + 1, 1))
        ascii[d] = high < 0x80
    return out_offsets, ascii


@njit(inline="always")
def _fixed_length_hashes(packed, count, size, out, o):
    """out[o + i] = XXH64 of packed[i:i + size] for i < count: the shingles of a text whose
    code points are all one byte."""
    for i in range(count):
        out[o + i] = _xxh64_inline(packed, i, i + size, np.uint64(0))


@njit(inline="always")
def _mostly_fixed_length_hashes(packed, starts, count, size, length, out, o):
    """out[o + i] = XXH64 of packed[starts[i]:starts[i + size]] for i < count, with the
    shingles of ``length`` bytes (a constant) hashed by a copy of the hash specialised to it."""
    for i in range(count):
        start = starts[np.uint64(i)]
        end = starts[np.uint64(i + size)]
        if end - start == length:
            out[o + i] = _xxh64_inline(packed, start, start + length, np.uint64(0))
        else:
            out[o + i] = _xxh64_inline(packed, start, end, np.uint64(0))


@njit(inline="always")
def _common_length_hashes(packed, starts, count, size, length, slots, out, o):
    """:func:`_mostly_fixed_length_hashes` for ``length`` ≤ 16, vectorised: the first 16 bytes
    of every shingle are copied to a 16-byte slot of ``slots`` (uint64[≥ 2 · count]), where a
    loop without a branch hashes them all as ``length`` bytes long, which the compiler
    vectorises. The shingles of another length are then hashed again from ``packed``."""
    for i in range(count):
        start = starts[np.uint64(i)]
        slots[np.uint64(2 * i)] = _read64(packed, start)
        slots[np.uint64(2 * i + 1)] = _read64(packed, start + 8)
    slot_bytes = slots.view(np.uint8)
    for i in range(count):
        out[o + i] = _xxh64_inline(slot_bytes, 16 * i, 16 * i + length, np.uint64(0))
    for i in range(count):
        start = starts[np.uint64(i)]
        end = starts[np.uint64(i + size)]
        if end - start != length:
            out[o + i] = _xxh64_inline(packed, start, end, np.uint64(0))


@njit(cache=True, nogil=True)
def _char_shingle_hashes(canon, offsets, out_offsets, ascii, size, code, s_table, k_table, hashes):
    """char:size shingles into ``hashes``: each text's bytes with the spaces removed are
    copied once, so a shingle is a slice of that copy from one code point's start to another's."""
    n = offsets.shape[0] - 1
    max_len = 0
    for d in range(n):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    # Slack after the packed text, for the hash's word reads; what it holds does not matter.
    packed = np.zeros(max_len + PADDING, dtype=np.uint8)
    starts = np.empty(max(max_len, size) + 1, dtype=np.int64)
    slots = np.empty(2 * max_len + 2, dtype=np.uint64)
    for d in range(n):
        o = out_offsets[d]
        count = out_offsets[d + 1] - o
        if count == 0:
            continue
        m = 0
        if code == 0 and ascii[d]:
            # ASCII: a code point is a byte, so the copy needs no code point starts (measured:
            # a third of the copy's time), and every shingle is `size` bytes: the general
            # hash's branches on the length always go the same way (the branch-free form
            # costs three times more). The default sizes (dedup's char:4, a bare char's 5) as
            # constants: the compiler then drops those branches and vectorises the loop
            # (measured: 45 % less time for this loop).
            for i in range(offsets[d], offsets[d + 1]):
                b = canon[np.uint64(i)]
                packed[np.uint64(m)] = b
                m += np.int64(b != 32)
            if m < size:
                hashes[o] = _xxh64_inline(packed, 0, m, np.uint64(0))
            elif size == 4:
                _fixed_length_hashes(packed, count, 4, hashes, o)
            elif size == 5:
                _fixed_length_hashes(packed, count, 5, hashes, o)
            else:
                _fixed_length_hashes(packed, count, size, hashes, o)
            continue
        units = 0
        # Branch-free: every byte is written and recorded, the counts move on when it counts
        # (a space is overwritten, a continuation byte's start by the next lead byte's).
        for i in range(offsets[d], offsets[d + 1]):
            b = canon[np.uint64(i)]
            keep = np.int64(b != 32)
            packed[np.uint64(m)] = b
            starts[np.uint64(units)] = m
            units += keep & np.int64((b & 0xC0) != 0x80)
            m += keep
        starts[units] = m
        if units < size:
            starts[size] = m
        if code == 0:
            # A code point is 1 to 4 bytes, but a text's shingles are mostly of one length (12
            # bytes: 4 Hangul syllables), so the general hash's branches are mostly predicted
            # and it beats the branch-free form, which runs every round (measured on Korean
            # and mixed text: 40 % less time). For the default sizes, a shingle of 3-byte code
            # points (Hangul, CJK: 86 % of a Korean text's char:4 shingles) takes a copy of the
            # hash with its length as a constant, which has no branch at all: char:4's
            # 12 bytes in a vectorised loop, char:5's 15 (where that loop is slower) one by
            # one (measured on Korean text: 27 % and 24 % less time). With a length that is
            # not a constant, the test costs more than it saves (measured on char:3).
            if size == 4:
                _common_length_hashes(packed, starts, count, 4, 12, slots, hashes, o)
            elif size == 5:
                _mostly_fixed_length_hashes(packed, starts, count, 5, 15, hashes, o)
            else:
                for i in range(count):
                    hashes[o + i] = _xxh64_inline(
                        packed, starts[np.uint64(i)], starts[np.uint64(i + size)], np.uint64(0)
                    )
        else:
            for i in range(count):
                hashes[o + i] = md5_64_slice(packed, starts[i], starts[i + size], s_table, k_table)


def _shingle_hashes(canon, offsets, word, size, code) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64[n + 1], hashes uint64) of the word:size or char:size shingles of the
    canonical texts ``canon[offsets[d]:offsets[d + 1]]``, hash ``code``."""
    if word:
        out_offsets = _word_shingle_offsets(canon, offsets, size)
    else:
        out_offsets, ascii = _char_shingle_offsets(canon, offsets, size)
    # numpy, not the kernel, allocates the hashes: numpy asks Linux for transparent huge pages
    # for large arrays, so writing them costs a page fault each 2 MiB instead of each 4 KiB
    # (measured: 0.19 s → 0.05 s for 460 MB, more than hashing them costs).
    hashes = np.empty(out_offsets[-1], dtype=np.uint64)
    if word:
        _word_shingle_hashes(canon, offsets, out_offsets, size, code, _MD5_S, _MD5_K, hashes)
    else:
        _char_shingle_hashes(canon, offsets, out_offsets, ascii, size, code, _MD5_S, _MD5_K, hashes)
    return out_offsets, hashes


@njit(cache=True, nogil=True)
def _content_hashes(canon, offsets):
    n = offsets.shape[0] - 1
    out = np.empty((n, 2), dtype=np.uint64)
    for d in range(n):
        out[d, 0] = xxh64_slice(canon, offsets[d], offsets[d + 1], np.uint64(CONTENT_SEEDS[0]))
        out[d, 1] = xxh64_slice(canon, offsets[d], offsets[d + 1], np.uint64(CONTENT_SEEDS[1]))
    return out


@dataclass
class Features:
    """Hashed shingles of a batch of documents (CSR) and their content fingerprints.

    Attributes:
        offsets: int64[n + 1]; document d's shingles are ``hashes[offsets[d]:offsets[d + 1]]``.
        hashes: uint64 shingle hashes in document order, repeats included; None when they
            went straight into a signature (:func:`neardup.minhash.minhash_of_canonical`).
        content: uint64[n, 2], the 128-bit content fingerprint (XXH64 of the canonical text with
            the two seeds of ``CONTENT_SEEDS``): equal for texts that normalise to the same text.
        text_bytes: UTF-8 bytes of each text after NFKC and case folding (int64[n]; within a
            few per cent of the input size, used for throughput figures).
    """

    offsets: np.ndarray
    hashes: np.ndarray | None
    content: np.ndarray
    text_bytes: np.ndarray

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def empty(self) -> np.ndarray:
        """bool[n]: documents with no shingle (no letter or number at all)."""
        return np.diff(self.offsets) == 0


def hash_features(
    texts: Sequence[str] | Canonical,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
) -> Features:
    """Hash the shingles of many texts (see the module docstring for the rules): strs, a
    :class:`~neardup.text.canonical.TextColumn`, or their :class:`Canonical` form when it is
    needed for something else too.

    Cost: O(total bytes × shingle size) in compiled code (plus a C-level Unicode fold for the
    rare texts that need one, see the module docstring).

    Example:
        >>> f = hash_features(["a b c d", ""], "word:3")
        >>> f.offsets.tolist()
        [0, 2, 2]
        >>> from neardup.hashing import hash_strings
        >>> bool((f.hashes == hash_strings(["a b c", "b c d"])).all())
        True
    """
    spec = Shingling.parse(shingle)
    code = hash_code(hash_name)
    canonical = texts if isinstance(texts, Canonical) else Canonical.of(texts)
    canon, offsets, text_bytes = canonical.data, canonical.offsets, canonical.folded_bytes
    feat_offsets, hashes = _shingle_hashes(canon, offsets, spec.unit != "char", spec.size, code)
    if spec.unit == "stopword":
        word_offsets, word_hashes = _shingle_hashes(canon, offsets, True, 1, code)
        is_stop = np.isin(word_hashes, stop_word_hashes(spec.stopwords, code))
        feat_offsets, hashes = _anchored(feat_offsets, hashes, word_offsets, is_stop)
    if spec.multiset:
        hashes = multiset_hashes(feat_offsets, hashes)
    return Features(feat_offsets, hashes, _content_hashes(canon, offsets), text_bytes)


STOP_WORD_LISTS = ("auto", "en", "ko")


def stop_words(source: str = "auto") -> tuple[str, ...]:
    """The stop words of ``stopword:k`` shingles, normalised (:func:`normalize`) and sorted.

    ``source``: ``en`` or ``ko`` (the built-in lists ``neardup/data/stopwords_en.txt`` and
    ``stopwords_ko.txt``), ``auto`` (both: their words do not collide, so a mixed corpus needs no
    language detection and a monolingual one gets the same shingles as with its own list), or
    the path of a UTF-8 file with one word per line (``#`` starts a comment line; a file named
    like a built-in list is given as ``./en``). A file is read again when its size or
    modification time changes. O(size of the list).

    Korean words are matched as whole eojeol (space-separated words): particles attached to a
    noun do not make it an anchor (measured: anchoring on eojeol that end with a particle scored
    lower than whole eojeol; docs/features.md).

    Example:
        >>> "the" in stop_words() and "그리고" in stop_words() and "그리고" not in stop_words("en")
        True
    """
    if source in STOP_WORD_LISTS:
        return _built_in_stop_words(source)
    try:
        info = os.stat(source)
    except (OSError, ValueError):
        raise ValueError(
            f"stop-word list must be one of {', '.join(STOP_WORD_LISTS)} or a readable file; "
            f"got {source!r}"
        ) from None
    return _stop_word_file(source, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4)
def _built_in_stop_words(source: str) -> tuple[str, ...]:
    names = ("en", "ko") if source == "auto" else (source,)
    path = Path(__file__).parent.parent / "data"
    return _parse_stop_words(
        "\n".join((path / f"stopwords_{name}.txt").read_text("utf-8") for name in names), source
    )


@lru_cache(maxsize=16)
def _stop_word_file(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    # size and mtime_ns are part of the cache key only: an edited file is read again.
    try:
        content = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"stop-word list {path!r} cannot be read: {error}") from None
    return _parse_stop_words(content, path)


def _parse_stop_words(content: str, source: str) -> tuple[str, ...]:
    lines = [line for line in content.splitlines() if line.strip() and not line.startswith("#")]
    words = {w for w in normalize_many(lines) if w}
    if not words:
        raise ValueError(f"stop-word list {source!r} holds no word")
    for word in words:
        if " " in word:
            raise ValueError(
                f"stop-word list {source!r}: {word!r} is more than one word after normalisation"
            )
    return tuple(sorted(words))


def stop_word_hashes(source: str, code: int) -> np.ndarray:
    """Sorted uint64 hashes of :func:`stop_words` ``(source)`` with the feature hash ``code``
    (:func:`neardup.hashing.hash_code`); cached, O(size of the list) on first use.

    Example:
        >>> from neardup.hashing import hash_code, hash_strings
        >>> int(hash_strings(["the"])[0]) in stop_word_hashes("en", hash_code("xxh"))
        True
    """
    return _stop_word_hashes(stop_words(source), code)


@lru_cache(maxsize=16)
def _stop_word_hashes(words: tuple[str, ...], code: int) -> np.ndarray:
    canonical = Canonical.of(list(words))
    _, hashes = _shingle_hashes(canonical.data, canonical.offsets, True, 1, code)
    hashes = np.unique(hashes)
    hashes.flags.writeable = False  # shared by every caller of the cache
    return hashes


def _anchored(offsets, hashes, word_offsets, is_stop) -> tuple[np.ndarray, np.ndarray]:
    """Keep the word k-grams whose first word is a stop word (k-gram j of a document starts at
    its word j); a document with none keeps all its k-grams, so it still has features."""
    n = offsets.shape[0] - 1
    counts = np.diff(offsets)
    doc = np.repeat(np.arange(n), counts)
    first_word = word_offsets[doc] + (np.arange(hashes.shape[0]) - offsets[doc])
    keep = is_stop[first_word]
    kept_per_doc = np.bincount(doc, weights=keep, minlength=n).astype(np.int64)
    keep |= (kept_per_doc == 0)[doc]
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc[keep], minlength=n), out=new_offsets[1:])
    return new_offsets, hashes[keep]


@njit(cache=True, nogil=True)
def _multiset_kernel(offsets, hashes):
    out = hashes.copy()
    for d in range(offsets.shape[0] - 1):
        lo = offsets[d]
        order = np.argsort(hashes[lo : offsets[d + 1]], kind="mergesort") + lo
        repeat = 0
        for i in range(1, order.shape[0]):
            if hashes[order[i]] == hashes[order[i - 1]]:
                repeat += 1
                out[order[i]] = splitmix64(hashes[order[i]] ^ splitmix64(np.uint64(repeat)))
            else:
                repeat = 0
    return out


def multiset_hashes(offsets: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Shingle hashes with repeats made distinct: the j-th repeat (j ≥ 1, in document order) of
    hash h in a document becomes ``splitmix64(h XOR splitmix64(j))``; first occurrences keep
    their hash. The set of the result is then the multiset of the input, so set Jaccard of
    two documents equals their multiset Jaccard Σ min / Σ max (up to 64-bit collisions).
    O(total shingles × log shingles per document).

    Example:
        >>> h = np.array([5, 5, 7], dtype=np.uint64)
        >>> m = multiset_hashes(np.array([0, 3]), h)
        >>> int(m[0]) == 5 and int(m[1]) != 5 and int(m[2]) == 7
        True
    """
    return _multiset_kernel(
        np.asarray(offsets, dtype=np.int64), np.asarray(hashes, dtype=np.uint64)
    )


@njit(cache=True, nogil=True)
def _sort_hashes(x, out, counts):
    """Sort the uint64 hashes ``x`` into ``out``: a counting pass on their top bits (one
    bucket a value on average, since the hashes are uniform) then an insertion sort that only
    moves values inside their bucket. Expected O(len(x)), about 5x quicker than a comparison
    sort on the sets of real documents; ``counts`` is scratch space of at least
    2 · len(x) + 2 slots."""
    n = x.shape[0]
    bits = 1
    while (1 << bits) < n:
        bits += 1
    shift = np.uint64(64 - bits)
    buckets = 1 << bits
    for i in range(buckets + 1):
        counts[i] = 0
    for i in range(n):
        counts[(x[i] >> shift) + 1] += 1
    for i in range(buckets):
        counts[i + 1] += counts[i]
    for i in range(n):
        b = x[i] >> shift
        out[counts[b]] = x[i]
        counts[b] += 1
    for i in range(1, n):
        v = out[i]
        j = i - 1
        while j >= 0 and out[j] > v:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = v


@njit(cache=True, nogil=True)
def _sorted_sets(offsets, hashes):
    n = offsets.shape[0] - 1
    out = np.empty_like(hashes)
    counts = np.empty(hashes.shape[0], dtype=np.int64)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    part = np.empty(longest, dtype=hashes.dtype)
    scratch = np.empty(2 * longest + 2, dtype=np.int64)
    o = 0
    for d in range(n):
        m = offsets[d + 1] - offsets[d]
        _sort_hashes(hashes[offsets[d] : offsets[d + 1]], part, scratch)
        for i in range(m):
            if i > 0 and part[i] == part[i - 1]:
                counts[o - 1] += 1
            else:
                out[o] = part[i]
                counts[o] = 1
                o += 1
        out_offsets[d + 1] = o
    return out_offsets, out[:o].copy(), counts[:o].copy()


def shingle_sets(
    offsets: np.ndarray, hashes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document, the sorted distinct shingle hashes and how often each occurs.

    Returns CSR ``(set_offsets, set_hashes, counts)``. O(total shingles × log shingles per doc).

    Example:
        >>> f = hash_features(["a a a a"], "word:1")
        >>> so, sh, c = shingle_sets(f.offsets, f.hashes)
        >>> so.tolist(), c.tolist()
        ([0, 1], [4])
    """
    return _sorted_sets(offsets, hashes)
