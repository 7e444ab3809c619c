"""MinHash signatures and the Jaccard estimate (Broder 1997; seeds 001, 002, 004).

A signature has ``num_perm`` positions. For two shingle sets A and B, each position is equal in
both signatures with probability J(A, B) = |A ∩ B| / |A ∪ B|, so the share of equal positions
estimates the Jaccard similarity with standard error about sqrt(J(1 − J) / num_perm). Two
schemes make such signatures; the scheme is a setting of a run and is recorded by what keeps
signatures (an index, a signatures file), because the two give different values.

``"oph"`` (default): one-permutation hashing with densification, O(shingles + num_perm)
    One hash per shingle x (a uint64 feature hash) decides its bin and its value:

        h(x)     = ((x XOR s) · 0x9E3779B97F4A7C15) mod 2^64     s = oph_keys(seed)[0]
        bin(x)   = ((h >> 32) · num_perm) >> 32                  (a bin in 0..num_perm−1)
        value(x) = h & 0xFFFFFFFF

    Position i holds the least value of the shingles in bin i (Li, Owen & Zhang, "One
    permutation hashing", NIPS 2012). A bin no shingle fell in takes, by densification, the
    value of the held bin j (one that some shingle fell in) of least key

        key(i, j) = splitmix64(d XOR (i << 32 | j))                d = oph_keys(seed)[1]

    Keys depend only on (seed, i, j), never on the shingles. So for any sets A and B, let j*
    be bin i if A ∪ B holds it, else the bin of A ∪ B of least key: when both A and B hold j*,
    both signatures take position i from j*, and they agree exactly when the least element of
    A ∪ B in j* lies in A ∩ B; when one of them does not, they take it from different bins,
    hence different shingles, and differ. Every element of A ∪ B is equally likely to be that
    least one, so P[equal] = J, as for ``num_perm`` independent hash functions (the collision
    law of optimal densification: Shrivastava, "Optimal densification for fast and accurate
    minwise hashing", ICML 2017). Unlike independent functions, positions are not independent
    of each other: when a set has fewer shingles than bins, copied positions move together
    (tests/test_minhash.py measures the band-collision curve). Cost: one multiply per
    shingle, plus for each empty bin min(held bins, num_perm / held bins) steps, through
    tables of every bin's keys made once per (num_perm, seed) (:func:`densification_tables`).

``"classic"``: ``num_perm`` hash functions, O(shingles × num_perm)
    For a shingle hash x and position p (multiply-add-shift, Dietzfelbinger 1996):

        key(x)  = (x >> 32) XOR (x & 0xFFFFFFFF)                  (a 32-bit key)
        h_p(x)  = ((a_p · key(x) + b_p) mod 2^64) >> 32            (a 32-bit value)

    with ``a_p = splitmix64_stream(seed)[p] | 1`` and ``b_p = splitmix64_stream(seed + 1)[p]``;
    position p holds min over the shingles of h_p. Strongly universal onto 32-bit values for
    32-bit keys, the property the universal ``(a·x + b) mod p`` family of the seeds provides.
    The scheme of signatures and indexes made before ``"oph"`` existed.

Either way a signature depends only on (texts, shingle, hash, num_perm, seed, scheme), on every
machine and version, and an empty document's signature is all ``EMPTY_VALUE`` (0xFFFFFFFF).

Example:
    >>> sig = minhash(["a b c d e f g h", "a b c d e f g x"], num_perm=256, shingle="word:1")
    >>> 0.6 < float(jaccard_estimate(sig[0], sig[1])) < 0.95   # true Jaccard 7/9
    True
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from numba import njit

from neardup.hashing import (
    _MD5_K,
    _MD5_S,
    DEFAULT_HASH_NAME,
    hash_code,
    splitmix64,
    splitmix64_stream,
)
from neardup.text import DEFAULT_TEXT_SHINGLE, Features, Shingling, hash_features
from neardup.text.canonical import Canonical
from neardup.text.features import (
    _char_shingle_hashes,
    _char_shingle_offsets,
    _content_hashes,
)

EMPTY_VALUE = np.uint32(0xFFFFFFFF)
MAX_NUM_PERM = 4096
DEFAULT_SEED = 1
#: Permutations of a signature when none are given.
DEFAULT_NUM_PERM = 128
#: The signature schemes (see the module docstring).
SCHEMES = ("oph", "classic")
#: The scheme of new signatures: one-permutation hashing with densification.
DEFAULT_SCHEME = "oph"
#: The scheme of indexes and signature files written before schemes were recorded.
LEGACY_SCHEME = "classic"


def check_num_perm(num_perm: int) -> int:
    """Validate ``num_perm`` (1..4096) and return it."""
    if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)):
        raise ValueError(f"num_perm must be an integer in 1..{MAX_NUM_PERM}; got {num_perm!r}")
    if not 1 <= num_perm <= MAX_NUM_PERM:
        raise ValueError(f"num_perm must be in 1..{MAX_NUM_PERM}; got {num_perm}")
    return int(num_perm)


def check_scheme(scheme: str) -> str:
    """Validate a signature scheme name (:data:`SCHEMES`) and return it.

    Example:
        >>> check_scheme("perm")
        Traceback (most recent call last):
        ...
        ValueError: scheme must be one of oph, classic; got 'perm'
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {scheme!r}")
    return scheme


def _check_seed(seed: int) -> None:
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in 0..2**63-1; got {seed}")


def coefficients(num_perm: int, seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) uint64 coefficient arrays of the ``num_perm`` hash functions of the
    ``"classic"`` scheme.

    Example:
        >>> a, b = coefficients(4)
        >>> bool((a % 2 == 1).all()), a.shape
        (True, (4,))
    """
    num_perm = check_num_perm(num_perm)
    _check_seed(seed)
    a = splitmix64_stream(np.uint64(seed), num_perm) | np.uint64(1)
    b = splitmix64_stream(np.uint64(seed + 1), num_perm)
    return a, b


def oph_keys(seed: int = DEFAULT_SEED) -> tuple[np.uint64, np.uint64]:
    """The two uint64 keys of the ``"oph"`` scheme: ``s`` (XORed into each shingle hash
    before it is mixed) and ``d`` (of the densification offers). O(1).

    Example:
        >>> s, d = oph_keys(1)
        >>> hex(s), hex(d)
        ('0x910a2dec89025cc1', '0xbeeb8da1658eec67')
    """
    _check_seed(seed)
    stream = splitmix64_stream(np.uint64(seed), 2)
    return stream[0], stream[1]


@njit(cache=True, nogil=True)
def _classic_kernel(offsets, hashes, a, b):
    n = offsets.shape[0] - 1
    num_perm = a.shape[0]
    out = np.empty((n, num_perm), dtype=np.uint32)
    low = np.uint64(0xFFFFFFFF)
    shift = np.uint64(32)
    row = np.empty(num_perm, dtype=np.uint64)
    for d in range(n):
        # The row keeps the minima of the whole 64-bit values and shifts them once at the end:
        # a shift keeps order, so min(x >> 32) = min(x) >> 32, and the loops below do a
        # multiply, an add and a min per value instead of four operations (measured: a tenth
        # less time, the same signatures). An empty document gets 0xFFFFFFFF = EMPTY_VALUE.
        row[:] = np.uint64(0xFFFFFFFFFFFFFFFF)
        f, end = offsets[d], offsets[d + 1]
        # Four shingles per pass over the permutations: the row of minima is loaded and stored
        # once for four keys, which halves the time of this loop (measured; same minima).
        while f + 4 <= end:
            x0, x1, x2, x3 = hashes[f], hashes[f + 1], hashes[f + 2], hashes[f + 3]
            k0 = (x0 >> shift) ^ (x0 & low)
            k1 = (x1 >> shift) ^ (x1 & low)
            k2 = (x2 >> shift) ^ (x2 & low)
            k3 = (x3 >> shift) ^ (x3 & low)
            for p in range(num_perm):
                ap, bp = a[p], b[p]
                m01 = min(ap * k0 + bp, ap * k1 + bp)
                m23 = min(ap * k2 + bp, ap * k3 + bp)
                row[p] = min(row[p], min(m01, m23))
            f += 4
        while f < end:
            x = hashes[f]
            key = (x >> shift) ^ (x & low)
            for p in range(num_perm):
                row[p] = min(row[p], a[p] * key + b[p])
            f += 1
        for p in range(num_perm):
            out[d, p] = np.uint32(row[p] >> shift)
    return out


@njit(cache=True)
def _densification_tables(num_perm, d):
    # order[i] lists the bins j != i by their key splitmix64(d ^ (i << 32 | j)), least first;
    # rank[i, j] is j's place in that list (rank[i, i] = -1: a bin keeps its own shingles).
    k = num_perm
    order = np.empty((k, max(k - 1, 1)), dtype=np.uint16)
    rank = np.empty((k, k), dtype=np.int16)
    keys = np.empty(k, dtype=np.uint64)
    shift = np.uint64(32)
    for i in range(k):
        for j in range(k):
            keys[j] = splitmix64(d ^ ((np.uint64(i) << shift) | np.uint64(j)))
        by_key = np.argsort(keys, kind="mergesort")  # equal keys (about 2^-64): by bin
        place = 0
        for p in range(k):
            j = by_key[p]
            if j == i:
                rank[i, j] = -1
                continue
            order[i, place] = j
            rank[i, j] = place
            place += 1
    return order, rank


@njit(cache=True, nogil=True)
def _oph_kernel(offsets, hashes, num_perm, s, top, order, rank):
    n = offsets.shape[0] - 1
    out = np.empty((n, num_perm), dtype=np.uint32)
    empty = np.uint64(0xFFFFFFFFFFFFFFFF)
    low = np.uint64(0xFFFFFFFF)
    shift = np.uint64(32)
    k = np.uint64(num_perm)
    row = np.empty(num_perm, dtype=np.uint64)
    mix = np.uint64(0x9E3779B97F4A7C15)
    holders = np.empty(num_perm, dtype=np.int64)
    for doc in range(n):
        row[:] = empty
        if top:
            # The same bins: ((h >> 32) · 2^b) >> 32 = h >> (64 − b), one shift fewer.
            for f in range(offsets[doc], offsets[doc + 1]):
                h = (hashes[f] ^ s) * mix
                bin_ = h >> top
                row[bin_] = min(row[bin_], h & low)
        else:
            for f in range(offsets[doc], offsets[doc + 1]):
                h = (hashes[f] ^ s) * mix
                bin_ = ((h >> shift) * k) >> shift
                row[bin_] = min(row[bin_], h & low)
        count = 0
        for j in range(num_perm):
            count += row[j] != empty
            out[doc, j] = np.uint32(row[j] & low)
        if count == 0 or count == num_perm:
            continue
        # Each empty bin takes the value of the held bin of least key: the same function
        # computed the cheaper way for the number of held bins. Many held: scan the bin's
        # order until a held one (about num_perm / count steps). Few: the least rank among
        # the held bins (count steps).
        if count * (count + 1) >= num_perm:
            for i in range(num_perm):
                if row[i] == empty:
                    p = 0
                    while row[order[i, p]] == empty:
                        p += 1
                    out[doc, i] = np.uint32(row[order[i, p]])
            continue
        held = 0
        for j in range(num_perm):
            if row[j] != empty:
                holders[held] = j
                held += 1
        for i in range(num_perm):
            if row[i] == empty:
                source = holders[0]
                for c in range(1, held):
                    if rank[i, holders[c]] < rank[i, source]:
                        source = holders[c]
                out[doc, i] = np.uint32(row[source])
    return out


@functools.lru_cache(maxsize=8)
def densification_tables(num_perm: int, seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The ``"oph"`` scheme's densification tables, made once per (num_perm, seed) and kept:
    every bin i's other bins by increasing key(i, j) (uint16[num_perm, num_perm − 1]) and the
    place of bin j in bin i's list (int16[num_perm, num_perm], −1 for j = i). O(num_perm² ·
    log num_perm) time, 4 · num_perm² bytes (64 KB at 128, 64 MB at 4096).

    Example:
        >>> order, rank = densification_tables(4)
        >>> sorted(order[0].tolist()), int(rank[0, 0])
        ([1, 2, 3], -1)
    """
    _, d = oph_keys(seed)
    order, rank = _densification_tables(check_num_perm(num_perm), d)
    order.setflags(write=False)
    rank.setflags(write=False)
    return order, rank


def minhash_from_features(
    features: Features,
    num_perm: int = DEFAULT_NUM_PERM,
    seed: int = DEFAULT_SEED,
    scheme: str = DEFAULT_SCHEME,
) -> np.ndarray:
    """MinHash signatures, uint32[n, num_perm], of already hashed features, by ``scheme``
    (see the module docstring).

    Repeated shingles do not change a minimum, so sets and multisets give the same signature.
    Cost in compiled code, a document: ``"oph"`` O(shingles + empty bins · min(h, num_perm / h))
    for h bins holding shingles (at most about num_perm^1.5, none once shingles well exceed
    num_perm); ``"classic"`` O(shingles × num_perm).
    """
    num_perm = check_num_perm(num_perm)
    if check_scheme(scheme) == "classic":
        a, b = coefficients(num_perm, seed)
        return _classic_kernel(features.offsets, features.hashes, a, b)
    return _oph_kernel(features.offsets, features.hashes, *_oph_args(num_perm, seed))


def _oph_args(num_perm: int, seed: int) -> tuple:
    """The OPH kernels' arguments after the hashes: ``(num_perm, s, top, order, rank)``."""
    s, _ = oph_keys(seed)
    order, rank = densification_tables(num_perm, seed)
    # With 2^b bins a bin is h >> (64 − b); top = 0 takes the general product.
    power_of_two = num_perm > 1 and num_perm & (num_perm - 1) == 0
    top = np.uint64(65 - num_perm.bit_length() if power_of_two else 0)
    return num_perm, s, top, order, rank


# Shingle hashes per block of the fused char-shingle kernel: 128 KiB, which stays in the L2 cache.
_FUSED_BLOCK = 16384


@njit(cache=True, nogil=True)
def _char_oph_kernel(canon, offsets, size, code, s_table, k_table, num_perm, s, top, order, rank):
    # The documents go by blocks of about _FUSED_BLOCK shingles: a block's hashes are made
    # into a buffer still in cache and binned from there, so the batch's hashes (8 bytes a
    # shingle) are never written to memory (measured, 20k documents, one thread: 14 % less
    # time than the two passes on English, 8-10 % on heavy_200k).
    out_offsets, ascii = _char_shingle_offsets(canon, offsets, size)
    n = offsets.shape[0] - 1
    out = np.empty((n, num_perm), dtype=np.uint32)
    buffer = np.empty(_FUSED_BLOCK, dtype=np.uint64)
    first = 0
    while first < n:
        end = first + 1
        base = out_offsets[first]
        while end < n and out_offsets[end + 1] - base <= _FUSED_BLOCK:
            end += 1
        local = out_offsets[first : end + 1] - base
        if local[-1] > buffer.shape[0]:  # one document with more shingles than a block
            buffer = np.empty(local[-1], dtype=np.uint64)
        _char_shingle_hashes(
            canon, offsets[first : end + 1], local, ascii[first:end], size, code, s_table,
            k_table, buffer,
        )  # fmt: skip
        out[first:end] = _oph_kernel(local, buffer, num_perm, s, top, order, rank)
        first = end
    return out_offsets, out


def minhash_of_canonical(
    canonical: Canonical,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
    num_perm: int = DEFAULT_NUM_PERM,
    seed: int = DEFAULT_SEED,
    scheme: str = DEFAULT_SCHEME,
    keep_hashes: bool = True,
) -> tuple[Features, np.ndarray]:
    """The features and MinHash signatures of canonical texts: the same values as
    :func:`~neardup.text.hash_features` then :func:`minhash_from_features`.

    Without ``keep_hashes``, ``char:k`` set shingles and the ``"oph"`` scheme, the shingle hashes
    go straight into the bins without being kept (``Features.hashes`` is then None): one pass,
    O(total bytes × k + num_perm) a document, in compiled code.
    """
    spec = Shingling.parse(shingle)
    fused = spec.unit == "char" and not spec.multiset and check_scheme(scheme) == "oph"
    if keep_hashes or not fused:
        features = hash_features(canonical, spec, hash_name)
        return features, minhash_from_features(features, num_perm, seed, scheme)
    canon, offsets = canonical.data, canonical.offsets
    feature_offsets, signatures = _char_oph_kernel(
        canon, offsets, spec.size, hash_code(hash_name), _MD5_S, _MD5_K,
        *_oph_args(check_num_perm(num_perm), seed),
    )  # fmt: skip
    content = _content_hashes(canon, offsets)
    return Features(feature_offsets, None, content, canonical.folded_bytes), signatures


def minhash(
    texts: Sequence[str],
    num_perm: int = DEFAULT_NUM_PERM,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
    seed: int = DEFAULT_SEED,
    scheme: str = DEFAULT_SCHEME,
) -> np.ndarray:
    """MinHash signatures of texts, uint32[n, num_perm]. See the module docstring.

    Example:
        >>> minhash(["some text here"], num_perm=16).shape
        (1, 16)
    """
    features = hash_features(list(texts), shingle, hash_name)
    return minhash_from_features(features, num_perm, seed, scheme)


def jaccard_estimate(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Share of equal positions of two signatures (or of rows of two signature matrices).

    Standard error sqrt(J(1 − J) / num_perm). Example:
        >>> float(jaccard_estimate(np.array([1, 2, 3, 4]), np.array([1, 2, 0, 4])))
        0.75
    """
    sig_a = np.asarray(sig_a)
    sig_b = np.asarray(sig_b)
    if sig_a.shape[-1] != sig_b.shape[-1]:
        raise ValueError(
            f"signatures must have the same num_perm; got {sig_a.shape[-1]} and {sig_b.shape[-1]}"
        )
    return np.mean(sig_a == sig_b, axis=-1)
