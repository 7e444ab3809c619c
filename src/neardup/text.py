"""Normalisation and shingles: text → canonical text → hashed features.

Normalisation (the same for every language):

1. Unicode NFKC, then case folding (``str.casefold``), then NFKC again (folding can leave a
   string that NFKC would change); ASCII text takes the equivalent fast path ``str.lower``.
2. Every code point that is not a letter, mark or number (general categories ``L*``, ``M*``,
   ``N*``) is a separator: punctuation, symbols, spaces, line breaks and control characters.
3. Tokens are the runs of non-separators; the canonical text is the tokens joined by one space.

Shingles are taken from the canonical text:

``word:k``
    k consecutive tokens joined by one space (the seed's eojeol trigram is ``word:3``).
``char:k``
    k consecutive code points of the canonical text with the spaces removed, so that spacing
    errors and words broken across lines (common in Korean) do not change the features.

A document with fewer than k units has one shingle: all its units (joined as above). A document
with no token at all is *empty*: it has no shingles and its signatures are the documented fixed
values of :mod:`neardup.simhash` and :mod:`neardup.minhash`.

Each shingle is hashed (:mod:`neardup.hashing`) over its UTF-8 bytes. A batch of documents becomes
CSR arrays: ``offsets`` (int64, n + 1) and ``hashes`` (uint64, the shingles in document order,
repeats included). All the work after step 1 runs in numba kernels over one byte buffer.

Example:
    >>> normalize("SimHash 계산 방법을, 간단히 정리하면!")
    'simhash 계산 방법을 간단히 정리하면'
    >>> shingles("SimHash 계산 방법을, 간단히 정리하면!", "word:3")[:2]
    ['simhash 계산 방법을', '계산 방법을 간단히']
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from neardup.hashing import _MD5_K, _MD5_S, hash_code, hash_slice, xxh64_slice

SHINGLE_UNITS = ("word", "char")
MAX_SHINGLE_SIZE = 64
# Seeds of the two halves of the 128-bit content fingerprint (XXH64 of the canonical text).
CONTENT_SEEDS = (0, 0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Shingling:
    """How a document becomes features: ``unit`` ("word" or "char") k-grams of ``size`` units.

    Example:
        >>> Shingling.parse("char:5")
        Shingling(unit='char', size=5)
        >>> str(Shingling("word", 3))
        'word:3'
    """

    unit: str = "word"
    size: int = 3

    def __post_init__(self) -> None:
        if self.unit not in SHINGLE_UNITS:
            raise ValueError(
                f"shingle unit must be one of {', '.join(SHINGLE_UNITS)}; got {self.unit!r}"
            )
        if not isinstance(self.size, int) or not 1 <= self.size <= MAX_SHINGLE_SIZE:
            raise ValueError(f"shingle size must be in 1..{MAX_SHINGLE_SIZE}; got {self.size!r}")

    @classmethod
    def parse(cls, spec: str | Shingling) -> Shingling:
        """Parse ``"word:3"`` / ``"char:5"`` (``"word"`` alone means size 3, ``"char"`` size 5)."""
        if isinstance(spec, Shingling):
            return spec
        unit, _, size = str(spec).strip().partition(":")
        if not size:
            return cls(unit, 3 if unit == "word" else 5)
        try:
            size_value = int(size)
        except ValueError:
            raise ValueError(f"shingle must look like word:3 or char:5; got {spec!r}") from None
        return cls(unit, size_value)

    def __str__(self) -> str:
        return f"{self.unit}:{self.size}"


@lru_cache(maxsize=1)
def token_table() -> np.ndarray:
    """uint8 table over all code points: 1 for letters, marks and numbers, else 0.

    Built once per process from :mod:`unicodedata` (about 0.2 s).
    """
    table = np.zeros(0x110000, dtype=np.uint8)
    category = unicodedata.category
    keep = [cp for cp in range(0x110000) if category(chr(cp))[0] in "LMN"]
    table[np.asarray(keep, dtype=np.int64)] = 1
    return table


def fold(text: str) -> str:
    """Step 1 of normalisation: NFKC, case folding, NFKC. O(len(text))."""
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


@njit(inline="always")
def _decode(buf, i):
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


@njit(cache=True)
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
            cp, width = _decode(buf, i)
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


def canonical_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Canonical UTF-8 bytes of many texts: (buffer uint8, offsets int64[n+1]). O(total bytes)."""
    buf, offsets = _utf8_batch(texts)
    return _canonicalize(buf, offsets, token_table())


def normalize(text: str) -> str:
    """The canonical text: folded, separators removed, tokens joined by one space.

    Idempotent: ``normalize(normalize(t)) == normalize(t)``. O(len(text)).

    Example:
        >>> normalize("  Ｈｅｌｌｏ,\\n   WORLD — 안녕\\t하세요!! ")
        'hello world 안녕 하세요'
    """
    return normalize_many([text])[0]


def normalize_many(texts: list[str]) -> list[str]:
    """:func:`normalize` over a list, with one kernel call. O(total length)."""
    buf, offsets = canonical_batch(texts)
    raw = buf.tobytes()
    return [raw[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(texts))]


def shingles(text: str, shingle: str | Shingling = "word:3") -> list[str]:
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
    if spec.unit == "word":
        units, joiner = canonical.split(), " "
    else:
        units, joiner = list(canonical.replace(" ", "")), ""
    if not units:
        return []
    if len(units) < spec.size:
        return [joiner.join(units)]
    return [joiner.join(units[i : i + spec.size]) for i in range(len(units) - spec.size + 1)]


@njit(cache=True)
def _unit_bounds(canon, start, end, word, starts, ends):
    """Fill starts/ends with the byte bounds of the document's units; return their count."""
    count = 0
    i = start
    if word:
        while i < end:
            j = i
            while j < end and canon[j] != 32:
                j += 1
            starts[count] = i
            ends[count] = j
            count += 1
            i = j + 1
    else:
        while i < end:
            cp, width = _decode(canon, i)
            if cp != 32:
                starts[count] = i
                ends[count] = i + width
                count += 1
            i += width
    return count


@njit(cache=True)
def _hash_units(canon, starts, ends, first, last, word, scratch, code, s_table, k_table):
    """Hash the shingle made of units first..last (inclusive)."""
    if word:
        # Words are separated by exactly one space in the canonical text: the shingle is a slice.
        return hash_slice(canon, starts[first], ends[last], code, s_table, k_table)
    n = 0
    for u in range(first, last + 1):
        for b in range(starts[u], ends[u]):
            scratch[n] = canon[b]
            n += 1
    return hash_slice(scratch, 0, n, code, s_table, k_table)


@njit(cache=True)
def _shingle_hashes(canon, offsets, word, size, code, s_table, k_table):
    n = offsets.shape[0] - 1
    max_len = 0
    for d in range(n):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    starts = np.empty(max_len + 1, dtype=np.int64)
    ends = np.empty(max_len + 1, dtype=np.int64)
    scratch = np.empty(max(max_len, 1), dtype=np.uint8)
    counts = np.empty(n, dtype=np.int64)
    # Pass 1: shingle counts, so the output is allocated once.
    for d in range(n):
        units = _unit_bounds(canon, offsets[d], offsets[d + 1], word, starts, ends)
        counts[d] = 0 if units == 0 else max(units - size + 1, 1)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        out_offsets[d + 1] = out_offsets[d] + counts[d]
    hashes = np.empty(out_offsets[n], dtype=np.uint64)
    for d in range(n):
        units = _unit_bounds(canon, offsets[d], offsets[d + 1], word, starts, ends)
        o = out_offsets[d]
        if units == 0:
            continue
        if units < size:
            hashes[o] = _hash_units(canon, starts, ends, 0, units - 1, word, scratch, code, s_table, k_table)
            continue
        for i in range(units - size + 1):
            hashes[o + i] = _hash_units(
                canon, starts, ends, i, i + size - 1, word, scratch, code, s_table, k_table
            )
    return out_offsets, hashes


@njit(cache=True)
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
        hashes: uint64 shingle hashes in document order, repeats included.
        content: uint64[n, 2], the 128-bit content fingerprint (XXH64 of the canonical text with
            the two seeds of ``CONTENT_SEEDS``): equal for texts that normalise to the same text.
        text_bytes: UTF-8 bytes of each input text (int64[n]).
    """

    offsets: np.ndarray
    hashes: np.ndarray
    content: np.ndarray
    text_bytes: np.ndarray

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def empty(self) -> np.ndarray:
        """bool[n]: documents with no shingle (no letter or number at all)."""
        return np.diff(self.offsets) == 0


def hash_features(
    texts: list[str], shingle: str | Shingling = "word:3", hash_name: str = "xxh"
) -> Features:
    """Hash the shingles of many texts (see the module docstring for the rules).

    Cost: O(total bytes × shingle size) in compiled code, plus one C-level Unicode fold per text.

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
    buf, raw_offsets = _utf8_batch(list(texts))
    canon, offsets = _canonicalize(buf, raw_offsets, token_table())
    feat_offsets, hashes = _shingle_hashes(
        canon, offsets, spec.unit == "word", spec.size, code, _MD5_S, _MD5_K
    )
    return Features(feat_offsets, hashes, _content_hashes(canon, offsets), np.diff(raw_offsets))


@njit(cache=True)
def _sorted_sets(offsets, hashes):
    n = offsets.shape[0] - 1
    out = np.empty_like(hashes)
    counts = np.empty(hashes.shape[0], dtype=np.int64)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for d in range(n):
        part = np.sort(hashes[offsets[d] : offsets[d + 1]])
        for i in range(part.shape[0]):
            if i > 0 and part[i] == part[i - 1]:
                counts[o - 1] += 1
            else:
                out[o] = part[i]
                counts[o] = 1
                o += 1
        out_offsets[d + 1] = o
    return out_offsets, out[:o].copy(), counts[:o].copy()


def shingle_sets(offsets: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document, the sorted distinct shingle hashes and how often each occurs.

    Returns CSR ``(set_offsets, set_hashes, counts)``. O(total shingles × log shingles per doc).

    Example:
        >>> f = hash_features(["a a a a"], "word:1")
        >>> so, sh, c = shingle_sets(f.offsets, f.hashes)
        >>> so.tolist(), c.tolist()
        ([0, 1], [4])
    """
    return _sorted_sets(offsets, hashes)
