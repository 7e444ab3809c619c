"""SimHash fingerprints (Charikar 2002; seed 000 and Manku et al. 2007).

For a document with features f (hashes h_f, weights w_f), 64 counters are summed

    V_i = Σ_f  w_f · (+1 if bit i of h_f is 1 else −1),        i = 0..63

and bit i of the fingerprint is 1 where V_i ≥ 0, else 0 (seed 000's convention). Two documents
are near-duplicates when their fingerprints differ in at most ``hamming_k`` bits; the distance is
``popcount(a XOR b)``.

Weights: ``"set"`` (default) gives each distinct shingle weight 1; ``"tf"`` weights a shingle by
how often it occurs in the document. An empty document has all counters 0, so its fingerprint is
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

from neardup.text import Features, Shingling, hash_features, shingle_sets

WEIGHTS = ("set", "tf")
EMPTY_FINGERPRINT = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True)
def _simhash_kernel(offsets, hashes, weights, use_weights):
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    ones = np.zeros(64, dtype=np.int64)
    for d in range(n):
        ones[:] = 0
        total = 0
        for f in range(offsets[d], offsets[d + 1]):
            h = hashes[f]
            w = weights[f] if use_weights else 1
            total += w
            for bit in range(64):
                ones[bit] += w * np.int64((h >> np.uint64(bit)) & np.uint64(1))
        # V_i = ones_i − (total − ones_i); bit i is set where V_i ≥ 0.
        fp = np.uint64(0)
        for bit in range(64):
            if 2 * ones[bit] - total >= 0:
                fp |= np.uint64(1) << np.uint64(bit)
        out[d] = fp
    return out


def simhash_from_features(features: Features, weights: str = "set") -> np.ndarray:
    """SimHash fingerprints (uint64[n]) of already hashed features.

    Cost: O(total shingles × 64) in compiled code (plus a per-document sort for ``"set"``).
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}; got {weights!r}")
    set_offsets, set_hashes, counts = shingle_sets(features.offsets, features.hashes)
    return _simhash_kernel(set_offsets, set_hashes, counts, weights == "tf")


def simhash(
    texts: Sequence[str],
    shingle: str | Shingling = "word:3",
    hash_name: str = "xxh",
    weights: str = "set",
) -> np.ndarray:
    """SimHash fingerprints of texts, as uint64[n]. See the module docstring for the formula.

    Example:
        >>> fp = simhash(["hello world again"])
        >>> fp.dtype, fp.shape
        (dtype('uint64'), (1,))
    """
    return simhash_from_features(hash_features(list(texts), shingle, hash_name), weights)


def hamming_distance(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """Number of differing bits between 64-bit fingerprints: popcount(a XOR b), elementwise.

    Example:
        >>> int(hamming_distance(0b1011, 0b0001))
        2
    """
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    return np.bitwise_count(x).astype(np.uint8)
