"""SimHash fingerprints (Charikar 2002; seed 000 and Manku et al. 2007).

For a document with features f (hashes h_f, weights w_f), 64 counters are summed

    V_i = Σ_f  w_f · (+1 if bit i of h_f is 1 else −1),        i = 0..63

and bit i of the fingerprint is 1 where V_i ≥ 0, else 0 (seed 000's convention). Two documents
are near-duplicates when their fingerprints differ in at most ``hamming_k`` bits; the distance is
``popcount(a XOR b)``.

Weights: ``"set"`` (default) gives each distinct shingle weight 1; ``"tf"`` weights a shingle by
how often it occurs in the document; ``"idf"`` gives each distinct shingle its inverse document
frequency in a corpus (:mod:`neardup.idf`, in fixed point: integer units of 2^-16, summed
exactly), so common features (boilerplate, a template's words) move the fingerprint less than
rare ones. An empty document has all counters 0, so its fingerprint is
``EMPTY_FINGERPRINT`` = 0xFFFFFFFFFFFFFFFF.

Example:
    >>> a, b = simhash(["the quick brown fox jumps over the lazy dog",
    ...                 "the quick brown fox jumped over the lazy dog"])
    >>> int(hamming_distance(a, b)) <= 20
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from neardup.hashing import DEFAULT_HASH_NAME
from neardup.text import DEFAULT_TEXT_SHINGLE, Features, Shingling, hash_features, shingle_sets

WEIGHTS = ("set", "tf", "idf")
EMPTY_FINGERPRINT = np.uint64(0xFFFFFFFFFFFFFFFF)


def _byte_lanes() -> np.ndarray:
    """uint64[256]: byte j of entry b is bit j of b (0 or 1)."""
    b = np.arange(256, dtype=np.uint64)
    table = np.zeros(256, dtype=np.uint64)
    for j in range(8):
        table |= ((b >> np.uint64(j)) & np.uint64(1)) << np.uint64(8 * j)
    return table


_BYTE_LANES = _byte_lanes()
# A lane byte counts at most 255 features before it is flushed to the 64 counters.
_FLUSH = 255
# Documents with more features than this are made distinct by sorting (see _simhash_kernel).
_LONG_DOCUMENT = 1 << 18


@njit(inline="always")
def _flush(lanes, ones):
    for k in range(8):
        lane = lanes[k]
        for j in range(8):
            ones[8 * k + j] += np.int64((lane >> np.uint64(8 * j)) & np.uint64(0xFF))
        lanes[k] = 0


@njit(cache=True, nogil=True)
def _simhash_kernel(offsets, hashes, distinct, byte_lanes, long_document):
    """SimHash of each document's features, each distinct one once (``distinct``, the ``"set"``
    weights) or every occurrence once (``"tf"``: a shingle seen c times adds c times).

    Bit counting: 8 lane words, one per byte of the hash; a feature adds ``byte_lanes[byte]``
    to the lane of each of its 8 bytes, which counts its 8 bits in 8 byte-wide counters at
    once (16 operations per feature instead of 64). Lanes are flushed to the 64 counters before
    a byte could overflow. Distinct features are found with an open-addressing set (at most a
    quarter full, so most probes end at once) whose slots carry the document's number, so it is
    never cleared. A document of more than ``long_document`` features is made distinct by
    sorting a copy instead: 8 bytes per feature rather than the set's 64 or more.
    """
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    ones = np.zeros(64, dtype=np.int64)
    lanes = np.zeros(8, dtype=np.uint64)
    longest = 0
    for d in range(n):
        longest = max(longest, min(offsets[d + 1] - offsets[d], long_document))
    capacity = 16
    while capacity < 4 * longest:
        capacity *= 2
    keys = np.empty(capacity, dtype=np.uint64)
    owner = np.full(capacity, -1, dtype=np.int64)
    byte = np.uint64(0xFF)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        ones[:] = 0
        total = 0
        pending = 0
        bits = 4
        while (1 << bits) < 4 * min(hi - lo, long_document):
            bits += 1
        mask = np.uint64((1 << bits) - 1)
        shift = np.uint64(64 - bits)
        by_sorting = distinct and hi - lo > long_document
        run = np.sort(hashes[lo:hi]) if by_sorting else hashes[lo:lo]
        for f in range(lo, hi):
            if by_sorting:
                h = run[f - lo]
                if f > lo and h == run[f - lo - 1]:
                    continue
            else:
                h = hashes[f]
            if distinct and not by_sorting:
                # Fibonacci hashing spreads the slots even if the low bits of h repeat.
                slot = np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> shift)
                seen = False
                while owner[slot] == d:
                    if keys[slot] == h:
                        seen = True
                        break
                    slot = np.int64(np.uint64(slot + 1) & mask)
                if seen:
                    continue
                owner[slot] = d
                keys[slot] = h
            lanes[0] += byte_lanes[h & byte]
            lanes[1] += byte_lanes[(h >> np.uint64(8)) & byte]
            lanes[2] += byte_lanes[(h >> np.uint64(16)) & byte]
            lanes[3] += byte_lanes[(h >> np.uint64(24)) & byte]
            lanes[4] += byte_lanes[(h >> np.uint64(32)) & byte]
            lanes[5] += byte_lanes[(h >> np.uint64(40)) & byte]
            lanes[6] += byte_lanes[(h >> np.uint64(48)) & byte]
            lanes[7] += byte_lanes[h >> np.uint64(56)]
            total += 1
            pending += 1
            if pending == _FLUSH:
                _flush(lanes, ones)
                pending = 0
        if pending:
            _flush(lanes, ones)
        out[d] = _sign_bits(ones, total)
    return out


@njit(inline="always")
def _sign_bits(ones, total):
    """The fingerprint from the weight of the features with bit i set (``ones[i]``) and the
    total weight: V_i = ones_i − (total − ones_i), bit i is 1 where V_i ≥ 0."""
    fp = np.uint64(0)
    for bit in range(64):
        if 2 * ones[bit] - total >= 0:
            fp |= np.uint64(1) << np.uint64(bit)
    return fp


@njit(cache=True, nogil=True)
def _weighted_simhash_kernel(offsets, hashes, weights):
    """SimHash with an int64 weight per feature (each document's distinct features, the IDF
    weights in fixed point). Integer sums are exact and do not depend on the order of the
    features, so the fingerprint is the same on every machine; the sign rule is the one of
    :func:`_simhash_kernel`. 64 multiply-adds per feature, without branches."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    ones = np.zeros(64, dtype=np.int64)
    one = np.uint64(1)
    for d in range(n):
        ones[:] = 0
        total = 0
        for f in range(offsets[d], offsets[d + 1]):
            h = hashes[f]
            w = weights[f]
            total += w
            for bit in range(64):
                ones[bit] += w * np.int64((h >> np.uint64(bit)) & one)
        out[d] = _sign_bits(ones, total)
    return out


def simhash_from_features(features: Features, weights: str = "set", idf=None) -> np.ndarray:
    """SimHash fingerprints (uint64[n]) of already hashed features.

    ``idf`` (a :class:`neardup.idf.IdfTable`) is needed with ``weights="idf"``.
    Cost: O(total shingles) in compiled code (about 16 operations and one hash-set probe per
    shingle; with IDF weights a per-document sort, a binary search in the table and 64
    multiply-adds per distinct shingle).

    Example:
        >>> from neardup.idf import IdfTable
        >>> f = hash_features(["a b c", "a b d"], "word:1")
        >>> table = IdfTable.from_features([f], "word:1", "xxh")
        >>> simhash_from_features(f, "idf", table).shape
        (2,)
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}; got {weights!r}")
    if weights == "idf":
        if idf is None:
            raise ValueError("weights='idf' needs an IDF table (neardup.idf.IdfTable)")
        offsets, hashes, _ = shingle_sets(features.offsets, features.hashes)
        return _weighted_simhash_kernel(offsets, hashes, idf.weights(hashes))
    return _simhash_kernel(
        features.offsets, features.hashes, weights == "set", _BYTE_LANES, _LONG_DOCUMENT
    )


def simhash(
    texts: Sequence[str],
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
    weights: str = "set",
    idf=None,
) -> np.ndarray:
    """SimHash fingerprints of texts, as uint64[n]. See the module docstring for the formula;
    ``idf`` is the :class:`neardup.idf.IdfTable` of ``weights="idf"``.

    Example:
        >>> fp = simhash(["hello world again"])
        >>> fp.dtype, fp.shape
        (dtype('uint64'), (1,))
    """
    return simhash_from_features(hash_features(list(texts), shingle, hash_name), weights, idf)


def hamming_distance(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """Number of differing bits between 64-bit fingerprints: popcount(a XOR b), elementwise.

    Example:
        >>> int(hamming_distance(0b1011, 0b0001))
        2
    """
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    return np.bitwise_count(x).astype(np.uint8)
