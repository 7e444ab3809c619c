"""An exact upper bound of the LCS resemblance from small per-document summaries, so that a
candidate pair can be ruled out before its text is read.

The LCS resemblance of :mod:`neardup.lcs` (``LCS(A, B) / max(|A|, |B|)``) is at most
``min(|A|, |B|) / max(|A|, |B|)``, and a common subsequence is made of units both texts hold.
A document's *unit sketch* (:func:`unit_sketches`) records, in :data:`SKETCH_BITS` bits,
which buckets of a multiplicative hash its units fall in; the units of A in buckets that B
holds no unit of are in no common subsequence, so ``LCS(A, B)`` is at most the number of A's
units in B's buckets (:func:`lcs_upper_bounds`, with A's units at hand and B known by its size
and sketch). Unrelated long texts of one language share their frequent words, and so a good
part of their buckets, but the rarer words leave enough of them apart: on the benchmark
corpus the 512-bit sketch rules out about 96 % of the band candidates of long English texts
that the lengths leave (the exact multiset bound rules out all of them; 256 bits, a third).

Example:
    >>> o, v = np.array([0, 4, 8]), np.array([1, 2, 3, 4, 1, 2, 3, 9], np.uint64)
    >>> sk = unit_sketches(o, v)
    >>> lcs_upper_bounds(o, v, np.array([0]), np.array([4]), sk, np.array([1]), 0.8) < 0.8
    array([ True])
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.tables import popcount64
from neardup.eojeol import by_eojeol
from neardup.lcs import SKETCH_BITS, add_to_sketch, unit_bucket

__all__ = ["SKETCH_BITS", "lcs_upper_bounds", "unit_sketches"]

_SKETCH_WORDS = SKETCH_BITS // 64


@njit(cache=True, nogil=True)
def _sketch_kernel(offsets, values, rows, out):
    for r in range(rows.shape[0]):
        d = rows[r]
        add_to_sketch(out[r], values[offsets[d] : offsets[d + 1]])


def unit_sketches(
    offsets: np.ndarray, values: np.ndarray, rows: np.ndarray | None = None
) -> np.ndarray:
    """The unit sketch of CSR rows ``rows`` (default all) of LCS units
    (:func:`neardup.text.units.lcs_units`): ``uint64[len(rows), 8]``, bit ``k`` set when some unit of
    the row falls in bucket ``k`` of :data:`SKETCH_BITS` (the top 9 bits of the unit times an
    odd constant). What :func:`lcs_upper_bounds` needs of a stored document, without its
    units. O(units).

    Example:
        >>> o, v = np.array([0, 2, 2]), np.array([5, 5], np.uint64)
        >>> [int(x).bit_count() for x in unit_sketches(o, v).sum(axis=1)]
        [1, 0]
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    rows = (
        np.arange(offsets.shape[0] - 1, dtype=np.int64)
        if rows is None
        else np.ascontiguousarray(rows, np.int64)
    )
    out = np.zeros((rows.shape[0], _SKETCH_WORDS), np.uint64)
    _sketch_kernel(offsets, np.ascontiguousarray(values, np.uint64), rows, out)
    return out


@njit(cache=True, nogil=True)
def _least_reaching(threshold, top):
    """The smallest integer x with x / top >= threshold (top > 0), as the LCS kernel divides;
    top + 1 when none up to top does."""
    x = min(max(np.int64(np.ceil(threshold * top)), 0), top + 1)
    while x > 0 and (x - 1) / top >= threshold:
        x -= 1
    while x <= top and x / top < threshold:
        x += 1
    return x


@njit(inline="always")
def _all_marked(sketch):
    """Whether every bucket of a unit sketch is marked, as a Korean text's is
    (:func:`neardup.lcs.add_to_sketch`)."""
    for w in range(sketch.shape[0]):
        if sketch[w] != ~np.uint64(0):
            return False
    return True


@njit(cache=True, nogil=True)
def _upper_bounds_kernel(offsets, values, a, sizes, sketches, sketch_of, threshold, out):
    counts = np.zeros(SKETCH_BITS, np.int64)
    # Bit j of the row's count in each bucket, as sketches: the row's units in the buckets a
    # sketch holds are Σ_j 2^j · popcount(sketch & planes[j]), a few dozen word operations.
    planes = np.zeros((64, _SKETCH_WORDS), np.uint64)
    depth = 0
    current = -1
    la = 0
    for p in range(a.shape[0]):
        if a[p] != current:
            current = a[p]
            counts[:] = 0
            for i in range(offsets[current], offsets[current + 1]):
                counts[unit_bucket(values[i])] += 1
            la = offsets[current + 1] - offsets[current]
            korean = by_eojeol(values[offsets[current] : offsets[current + 1]])
            planes[:depth] = 0
            depth = 0
            for k in range(SKETCH_BITS):
                c = counts[k]
                j = 0
                while c:
                    if c & 1:
                        planes[j, k >> 6] |= np.uint64(1) << np.uint64(k & 63)
                    c >>= 1
                    j += 1
                depth = max(depth, j)
        lb = sizes[p]
        top = max(la, lb)
        if top == 0:
            out[p] = 1.0  # two empty texts are identical
            continue
        low = min(la, lb)
        t = sketch_of[p]
        if korean and (t < 0 or _all_marked(sketches[t])):
            out[p] = 1.0  # maybe a Korean pair, measured in eojeol: no bound from these
            continue
        if low < _least_reaching(threshold, top) or t < 0:
            out[p] = low / top
            continue
        # Units of the row in buckets the stored document holds no unit of are in no common
        # subsequence.
        found = 0
        for j in range(depth):
            shared = 0
            for w in range(_SKETCH_WORDS):
                shared += popcount64(sketches[t, w] & planes[j, w])
            found += shared << j
        out[p] = min(found, low) / top


def lcs_upper_bounds(
    offsets: np.ndarray,
    values: np.ndarray,
    a: np.ndarray,
    sizes: np.ndarray,
    sketches: np.ndarray,
    sketch_of: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """Upper bounds of the LCS resemblance (:mod:`neardup.lcs`) of row ``a[p]`` of LCS units
    (CSR ``offsets``, ``values``) and a document known by its size ``sizes[p]`` and, when
    ``sketch_of[p] >= 0``, its :func:`unit_sketches` row ``sketches[sketch_of[p]]``
    (float64 per pair). Exact for deciding: a pair whose value is below ``threshold`` has a
    resemblance below it (the value bounds it), so it can be dropped before its text is even
    read; a value at or above ``threshold`` only says the pair may reach it.

    An LCS is at most the shorter length, and at most the number of units of ``a[p]`` falling
    in buckets the other document holds a unit of (a common subsequence is made of shared
    units). Two Korean texts are measured in eojeol, which these do not bound: a Korean row
    against a document whose sketch is unknown or marks every bucket (a Korean text's) gets
    1. O(units of each distinct ``a`` row + 512) plus O(8 log(longest row)) word
    operations per pair.

    Example:
        >>> o, v = np.array([0, 4, 8]), np.array([1, 2, 3, 4, 1, 2, 3, 9], np.uint64)
        >>> sk = unit_sketches(o, v)
        >>> lcs_upper_bounds(o, v, np.array([0, 0]), np.array([4, 4]), sk, np.array([0, 1]),
        ...                  0.8).tolist()
        [1.0, 0.75]
    """
    a = np.asarray(a, np.int64)
    out = np.empty(a.shape[0], np.float64)
    if a.shape[0] == 0:
        return out
    # Pairs sharing a row are taken together: the row's bucket counts are computed once.
    order = np.argsort(a, kind="stable")
    out[order] = _bounds_in_order(
        offsets,
        values,
        a[order],
        np.asarray(sizes)[order],
        sketches,
        np.asarray(sketch_of)[order],
        threshold,
    )
    return out


def _bounds_in_order(offsets, values, a, sizes, sketches, sketch_of, threshold):
    out = np.empty(a.shape[0], np.float64)
    _upper_bounds_kernel(
        np.ascontiguousarray(offsets, np.int64),
        np.ascontiguousarray(values, np.uint64),
        a,
        np.ascontiguousarray(sizes, np.int64),
        np.ascontiguousarray(sketches, np.uint64),
        np.ascontiguousarray(sketch_of, np.int64),
        float(threshold),
        out,
    )
    return out
