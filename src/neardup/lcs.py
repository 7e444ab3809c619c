"""Order-aware verification: LCS resemblance as ``NEAR_DUPLICATE.md`` states rule 2.

Rule 2 of the definition: a pair is a near-duplicate when about 80 % or more of the *longer*
text's units appear in the other text in the same order. With A and B the two unit sequences
and LCS(A, B) the length of a longest common subsequence (units in order, gaps allowed)::

    resemblance(A, B) = LCS(A, B) / max(|A|, |B|)          in 0..1

(two empty texts: 1.0, they are identical after normalisation; an empty text against a
non-empty one: 0.0). This is not the symmetric-difference form |LCS| / (|A| + |B| − |LCS|) of
:func:`neardup.similarity.lcs_resemblance`: a text that keeps every word of a 10-word text but
one scores 0.9 here, as the definition says, and 0.82 there.

The units are those of :mod:`neardup.text.units` (:func:`~neardup.text.units.lcs_units`):
words, or characters for Korean, Chinese and Japanese text. Two Korean texts are measured in
eojeol instead (:func:`neardup.eojeol.eojeol_resemblance`): the words of the longer text whose
characters are all kept in order. Character lengths and counts do not bound that (a text may
keep its short words and lose one long one), so the sketches of a Korean text say nothing
(every count 255, every bucket marked): the bounds below never rule out a pair of Korean texts,
and the eojeol kernel applies its own.

The kernel (:func:`lcs_pairs`) is the bit-parallel LCS of Allison–Dix / Hyyrö: with the shorter
sequence A (m units) as the pattern, a vector V of m bits starts all ones; for each unit c of
B, with M(c) the positions of A holding c::

    U = V & M(c)
    V = (V + U) | (V − U)          (V − U = V & ~U, as U ⊆ V; + carries across 64-bit words)

and LCS = m − popcount(V). The units are first renumbered per pair (A's distinct units get
dense ids through a hash table, each unit of B is mapped once to its id or to an id with an
empty mask), so a match mask is one array read. The vector is processed one 64-bit word (64
units of A) at a time over the whole of B, handing the carry of each step to the next word
through an array of |B| bytes, and the memory is O(|A| + |B|), whatever the alphabet.
A common prefix and suffix are removed first (they extend every longest common subsequence).
Cost per pair: O(⌈m / 64⌉ · n) word operations with n = |B| ≥ m, memory O(n).

Example:
    >>> from neardup.text.units import lcs_units
    >>> offsets, codes = lcs_units(["나는 어제 학교에 갔다", "나는 어제\\n학교로 갔다"], "syllable")
    >>> offsets.tolist()
    [0, 9, 18]
    >>> lcs_pairs(offsets, codes, np.array([0]), np.array([1])).tolist()   # 8 of 9 syllables
    [0.8888888888888888]
    >>> o, c = lcs_units(["a b c d e f g h i j", "a b c d e f g h i x"], "word")
    >>> lcs_pairs(o, c, np.array([0]), np.array([1])).tolist()
    [0.9]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.borrowed import borrowed
from neardup.eojeol import by_eojeol, eojeol_resemblance, unit_key
from neardup.similarity import _trim_common

__all__ = [
    "lcs_pairs",
    "lcs_lengths",
    "lcs_length_reference",
    "resemblance_reference",
]

_EMPTY = np.int32(-1)
_MUL = np.uint64(0x9E3779B97F4A7C15)

SKETCH_BITS = 512
"""Buckets of a unit sketch: a unit falls in bucket :func:`unit_bucket` (64 bytes a text)."""
_BUCKET_SHIFT = np.uint64(64 - 9)  # the top 9 bits: SKETCH_BITS buckets


@njit(inline="always")
def unit_bucket(unit):
    """The bucket of an LCS unit in ``0..SKETCH_BITS-1``: the top 9 bits of the unit times an
    odd constant (a multiplicative hash), of its :func:`~neardup.eojeol.unit_key`."""
    return np.int64((unit_key(unit) * _MUL) >> _BUCKET_SHIFT)


@njit(inline="always")
def add_to_sketch(sketch, units):
    """Set in ``sketch`` (``uint64[SKETCH_BITS // 64]``) the bucket bit of every unit of
    the text ``units``; every bit for a Korean text (:func:`~neardup.eojeol.by_eojeol`): its
    units bound no eojeol measure. O(len(units))."""
    if by_eojeol(units):
        sketch[:] = ~np.uint64(0)
        return
    for i in range(units.shape[0]):
        k = unit_bucket(units[i])
        sketch[k >> 6] |= np.uint64(1) << np.uint64(k & 63)


COUNT_BUCKETS = SKETCH_BITS // 4
"""Buckets of a unit count sketch: :func:`unit_bucket` // 4, a count of 0..255 each (128 bytes
a text)."""


@njit(cache=True, nogil=True)
def _count_sketches(offsets, codes, a, b):
    """The count sketches of the texts that the pairs ``(a[p], b[p])`` name: ``(slot, counts)``
    with ``slot`` int32 per text (its row, -1 when no pair names it) and ``counts``
    uint8[named texts, COUNT_BUCKETS], the text's units in each bucket, 255 standing for 255 or
    more. O(texts + the named texts' units)."""
    n = offsets.shape[0] - 1
    slot = np.full(n, -1, dtype=np.int32)
    rows = 0
    for q in range(a.shape[0]):
        if slot[a[q]] < 0:
            slot[a[q]] = rows
            rows += 1
        if slot[b[q]] < 0:
            slot[b[q]] = rows
            rows += 1
    counts = np.zeros((rows, COUNT_BUCKETS), dtype=np.uint8)
    for d in range(n):
        if slot[d] >= 0:
            add_counts(counts[slot[d]], codes[offsets[d] : offsets[d + 1]])
    return slot, counts


@njit(inline="always")
def add_counts(row, units):
    """Count the text ``units`` in the count sketch ``row`` (uint8[COUNT_BUCKETS]): a unit in
    bucket :func:`unit_bucket` // 4, each count stopping at 255; every count 255 for a Korean
    text (:func:`~neardup.eojeol.by_eojeol`), which :func:`_ruled_out` never rules out.
    O(len(units))."""
    if by_eojeol(units):
        row[:] = 255
        return
    for i in range(units.shape[0]):
        k = unit_bucket(units[i]) >> 2
        row[k] += np.uint8(row[k] < 255)


@njit(cache=True, nogil=True)
def _count_sketches_of_all(offsets, codes):
    counts = np.zeros((offsets.shape[0] - 1, COUNT_BUCKETS), dtype=np.uint8)
    for d in range(counts.shape[0]):
        add_counts(counts[d], codes[offsets[d] : offsets[d + 1]])
    return counts


def count_sketches(offsets: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The count sketch of every text of the CSR ``(offsets, codes)`` (:func:`add_counts`):
    uint8[n, COUNT_BUCKETS], 128 bytes a text, from which :func:`possible_pairs` bounds the
    LCS of two texts without their units. O(units).

    Example:
        >>> s = count_sketches(np.array([0, 3, 5]), np.array([7, 7, 9, 7, 9], dtype=np.uint64))
        >>> s.shape, s.sum(axis=1).tolist()
        ((2, 128), [3, 2])
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    return _count_sketches_of_all(offsets, np.ascontiguousarray(codes))


@njit(inline="always")
def _count_bound(sketches, x, y, unknown):
    """An upper bound of the LCS of the texts of rows ``x`` and ``y`` from their count
    ``sketches``: Σ_k min(x[k], y[k]) (the units a common subsequence matches in bucket k are
    at most the fewer text's), or ``unknown`` when a bucket holds 255 or more units in both
    texts. Rows, not views: a view per pair costs an atomic reference count. O(COUNT_BUCKETS)."""
    total = 0
    full = 0
    for k in range(sketches.shape[1]):
        low = min(sketches[x, k], sketches[y, k])
        total += np.int64(low)
        full += np.int64(low == 255)
    return unknown if full else total


@njit(inline="always")
def _all_full(sketches, x):
    """Whether every count of row ``x`` of ``sketches`` is 255 (a Korean text)."""
    full = True
    for k in range(sketches.shape[1]):
        full &= sketches[x, k] == 255
    return full


def lcs_scratch(longest: int) -> tuple:
    """Scratch space of :func:`_lcs_bits` for sequences of up to ``longest`` units."""
    capacity = 16
    while capacity < 2 * longest:
        capacity *= 2
    return (
        np.zeros(capacity, dtype=np.uint64),  # hash table: unit code
        np.full(capacity, -1, dtype=np.int64),  # hash table: the call that owns the slot
        np.zeros(capacity, dtype=np.int32),  # hash table: dense id of the code
        np.zeros(longest + 1, dtype=np.int32),  # dense ids of the pattern
        np.zeros(longest + 1, dtype=np.int32),  # dense ids of the text
        np.zeros(longest + 2, dtype=np.uint64),  # match mask of each id, for one block
        np.zeros(longest + 1, dtype=np.uint8),  # carry of each text position across blocks
        np.zeros(1, dtype=np.int64),  # calls so far
    )


_lcs_scratch = njit(cache=True, nogil=True)(lcs_scratch)


@njit(cache=True, nogil=True)
def _lcs_bits(x, y, scratch, need=0):
    """LCS length of the unit arrays x and y (any integer dtype), bit-parallel, block by block.

    ``scratch`` comes from :func:`lcs_scratch` (at least max(len) units). The pattern's
    distinct units get dense ids through a hash table (slots stamped with the call, so it is
    never cleared) and every text unit is mapped once to its id, or to one id with an empty
    mask when the pattern lacks it; each block then reads its masks by plain indexing. With
    ``need`` > 0 the search stops as soon as the LCS cannot reach ``need`` and returns a value
    below it: after the blocks of pattern units [0, hi), LCS ≤ LCS(a[:hi], b) + (m − hi).
    """
    table_key, table_owner, table_id, aid, bid, peq, carry, calls = scratch
    n0 = x.shape[0]
    m0 = y.shape[0]
    p, s = _trim_common(x, y)
    xa = x[p : n0 - s]
    ya = y[p : m0 - s]
    # The pattern (bit vector) is the shorter sequence.
    if xa.shape[0] <= ya.shape[0]:
        a = xa
        b = ya
    else:
        a = ya
        b = xa
    m = a.shape[0]
    n = b.shape[0]
    if m == 0:
        return p + s
    stamp = calls[0]
    calls[0] = stamp + 1
    mask = table_key.shape[0] - 1
    bits = 0
    while (1 << bits) < table_key.shape[0]:
        bits += 1
    shift = np.uint64(64 - bits)
    distinct = 0
    for i in range(m):
        key = unit_key(a[i])
        h = np.int64((key * _MUL) >> shift)
        while table_owner[h] == stamp and table_key[h] != key:
            h = (h + 1) & mask
        if table_owner[h] != stamp:
            table_owner[h] = stamp
            table_key[h] = key
            table_id[h] = distinct
            distinct += 1
        aid[i] = table_id[h]
    absent = distinct  # the id of text units the pattern lacks: its mask stays 0
    for j in range(n):
        key = unit_key(b[j])
        h = np.int64((key * _MUL) >> shift)
        found = absent
        while table_owner[h] == stamp:
            if table_key[h] == key:
                found = table_id[h]
                break
            h = (h + 1) & mask
        bid[j] = found
        carry[j] = 0
    zeros = 0
    for w in range((m + 63) // 64):
        lo = w * 64
        hi = min(lo + 64, m)
        for i in range(lo, hi):
            peq[aid[i]] |= np.uint64(1) << np.uint64(i - lo)
        v = ~np.uint64(0)
        for j in range(n):
            u = v & peq[bid[j]]
            c = np.uint64(carry[j])
            t = v + u
            c_out = np.uint8(t < v)
            t2 = t + c
            c_out |= np.uint8(t2 < t)
            carry[j] = c_out
            v = t2 | (v & ~u)
        for i in range(lo, hi):
            peq[aid[i]] = 0  # ready for the next block (and the next call)
        bits = hi - lo
        keep = v if bits == 64 else v & ((np.uint64(1) << np.uint64(bits)) - np.uint64(1))
        # Count the zero bits among the block's valid bits.
        ones = 0
        while keep:
            keep &= keep - np.uint64(1)
            ones += 1
        zeros += bits - ones
        if need > 0 and zeros + (m - hi) + p + s < need:
            return zeros + (m - hi) + p + s
    return zeros + p + s


@njit(inline="always")
def _ruled_out(low, top, threshold, sketches, x, y):
    """The first two tests of a pair of texts of ``low`` ≤ ``top`` (> 0) units whose count
    sketches are the rows ``x`` and ``y`` of ``sketches``, at ``threshold`` > 0: ``(bound,
    need)``, ``bound`` an upper bound of their resemblance below the threshold when their
    lengths or sketches rule them out (else -1.0), ``need`` the LCS length the threshold asks
    for. Two sketches of every count 255 (Korean texts, see :func:`add_counts`) rule nothing
    out."""
    if sketches[x, 0] == 255 and sketches[y, 0] == 255:
        if _all_full(sketches, x) and _all_full(sketches, y):
            return -1.0, 0
    if low / top < threshold:
        return low / top, 0  # LCS ≤ the shorter length
    need = np.int64(np.ceil(threshold * top - 1e-9))
    # Unrelated texts of one language fail here, without the hashing of the exact LCS.
    bound = _count_bound(sketches, x, y, top)
    return (bound / top if bound < need else -1.0), need


@njit(cache=True, nogil=True)
def _lcs_pairs_kernel(offsets, codes, a, b, resemblance, threshold):
    pairs = a.shape[0]
    out = np.empty(pairs, dtype=np.float64)
    longest = 0
    for q in range(pairs):
        la = offsets[a[q] + 1] - offsets[a[q]]
        lb = offsets[b[q] + 1] - offsets[b[q]]
        longest = max(longest, la, lb)
    scratch = _lcs_scratch(longest)
    if threshold > 0.0:
        slot, counts = _count_sketches(offsets, codes, a, b)
    else:
        slot = np.zeros(offsets.shape[0] - 1, dtype=np.int32)
        counts = np.zeros((1, COUNT_BUCKETS), dtype=np.uint8)
    _scored_pairs(offsets, codes, a, b, resemblance, threshold, scratch, counts, slot, out)
    return out


@njit(cache=True, nogil=True)
def _scored_pairs(offsets, codes, a, b, resemblance, threshold, scratch, counts, slot, out):
    """``out[q]``: the LCS length of pair ``q``'s texts, or their resemblance (exact at or above
    ``threshold`` > 0, else some value below it; ``slot`` gives their rows of the count
    sketches ``counts``). Called, not inlined: its arrays are borrowed (neardup.borrowed)."""
    codes, counts, scratch = borrowed(codes), borrowed(counts), borrowed(scratch)
    for q in range(a.shape[0]):
        x = codes[offsets[a[q]] : offsets[a[q] + 1]]
        y = codes[offsets[b[q]] : offsets[b[q] + 1]]
        if by_eojeol(x) and by_eojeol(y):
            if resemblance:
                out[q] = eojeol_resemblance(x, y, threshold)
            else:
                out[q] = float(_lcs_bits(x, y, scratch))
            continue
        top, need = max(x.shape[0], y.shape[0]), 0
        if threshold > 0.0 and top > 0:
            low = min(x.shape[0], y.shape[0])
            bound, need = _ruled_out(low, top, threshold, counts, slot[a[q]], slot[b[q]])
            if bound >= 0.0:
                out[q] = bound
                continue
        length = _lcs_bits(x, y, scratch, need)
        out[q] = float(length) if not resemblance else (1.0 if top == 0 else length / top)


def _check_pairs(offsets, codes, a, b):
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    codes = np.ascontiguousarray(codes)
    if codes.dtype.kind not in "iu":
        raise ValueError(f"codes must be an integer array; got {codes.dtype}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-d and of the same length; got {a.shape} and {b.shape}")
    n = offsets.shape[0] - 1
    if a.shape[0] and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise ValueError(f"pair indices must be in 0..{n - 1}")
    return offsets, codes, a, b


@njit(cache=True, nogil=True)
def _possible_kernel(sizes, sketches, a, b, threshold, out):
    sketches = borrowed(sketches)  # bound by _ruled_out once a pair (neardup.borrowed)
    for q in range(a.shape[0]):
        la, lb = np.int64(sizes[a[q]]), np.int64(sizes[b[q]])
        top = max(la, lb)
        out[q] = top == 0 or _ruled_out(min(la, lb), top, threshold, sketches, a[q], b[q])[0] < 0.0


def possible_pairs(
    sizes: np.ndarray, sketches: np.ndarray, a: np.ndarray, b: np.ndarray, threshold: float
) -> np.ndarray:
    """Which pairs ``(a[p], b[p])`` of texts may reach the LCS resemblance ``threshold``, from
    their unit counts ``sizes`` and :func:`count_sketches` alone: bool per pair, False
    exactly where :func:`lcs_pairs` with that threshold would reject the pair by its first two
    tests (the length ratio, then the count bound) without comparing the units. A run that
    knows these per document drops such candidates before it reads any text again.
    O(pairs × COUNT_BUCKETS).

    Example:
        >>> from neardup.text.units import lcs_unit_sketches
        >>> sizes, sketches = lcs_unit_sketches(["a b c d e", "a b c d x", "v w x y z"])
        >>> possible_pairs(sizes, sketches, np.array([0, 0]), np.array([1, 2]), 0.8).tolist()
        [True, False]
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1]; got {threshold}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    out = np.empty(a.shape[0], dtype=bool)
    _possible_kernel(sizes, sketches, a, b, float(threshold), out)
    return out


def length_bounds(len_a: np.ndarray, len_b: np.ndarray) -> np.ndarray:
    """Upper bounds of the LCS resemblance of texts of ``len_a[p]`` and ``len_b[p]`` units from
    their lengths alone (LCS ≤ the shorter length): ``min / max``, 1.0 for two empty texts
    (float64). :func:`lcs_pairs` with a threshold gives a pair below it this value without
    comparing. O(pairs).

    Example:
        >>> length_bounds(np.array([4, 0, 3]), np.array([5, 0, 0])).tolist()
        [0.8, 1.0, 0.0]
    """
    low = np.minimum(len_a, len_b).astype(np.int64)
    top = np.maximum(len_a, len_b).astype(np.int64)
    return np.where(top == 0, 1.0, low / np.maximum(top, 1))


def lcs_pairs(
    offsets: np.ndarray,
    codes: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    threshold: float | None = None,
) -> np.ndarray:
    """LCS resemblance of texts ``a[p]`` and ``b[p]`` for every pair p (float64).

    ``resemblance = LCS / max(len_a, len_b)``: the share of the longer text's units the other
    keeps in the same order (rule 2 of ``NEAR_DUPLICATE.md``). Two empty texts score 1.0 (they
    are identical after normalisation), an empty text against a non-empty one 0.0.

    ``offsets``/``codes`` are the CSR of :func:`neardup.text.units.lcs_units` (any integer
    codes work). The kernel releases the GIL, so callers may run chunks of pairs in threads. Time
    O(Σ ⌈min(len) / 64⌉ · max(len)) per pair after trimming the common prefix and suffix;
    memory O(longest text).

    ``threshold`` (for verification): the values at or above it are exact, a value below it
    is only some number below it (an upper bound of the resemblance). Pairs whose length ratio
    min / max is below it are not compared at all (LCS ≤ the shorter length), nor those whose
    count sketches bound the LCS below it: each text named by a pair gets, once a call, the
    count of its units in each of :data:`COUNT_BUCKETS` buckets (:func:`unit_bucket` // 4),
    and LCS ≤ Σ_k min(count_a[k], count_b[k]), since a common subsequence matches equal units,
    which share a bucket (memory: 128 bytes a named text). Then the search
    stops once the pattern units left cannot lift the LCS to ``threshold · max``: after the
    pattern's first h units, LCS ≤ LCS(A[:h], B) + (|A| − h).
    Accept with ``value >= threshold``.

    Example:
        >>> from neardup.text.units import lcs_units
        >>> o, c = lcs_units(["a b c d", "a x c d", ""], "word")
        >>> lcs_pairs(o, c, np.array([0, 0, 2]), np.array([1, 2, 2])).tolist()
        [0.75, 0.0, 1.0]
        >>> (lcs_pairs(o, c, np.array([0, 0]), np.array([1, 2]), threshold=0.8) >= 0.8).tolist()
        [False, False]
    """
    offsets, codes, a, b = _check_pairs(offsets, codes, a, b)
    if threshold is not None and not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1]; got {threshold}")
    return _lcs_pairs_kernel(offsets, codes, a, b, True, float(threshold or 0.0))


def lcs_lengths(offsets: np.ndarray, codes: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LCS lengths (int64) of texts ``a[p]`` and ``b[p]``; kernel and cost of :func:`lcs_pairs`.

    Example:
        >>> from neardup.text.units import lcs_units
        >>> o, c = lcs_units(["abcbdab", "bdcaba"], "syllable")
        >>> lcs_lengths(o, c, np.array([0]), np.array([1])).tolist()
        [4]
    """
    offsets, codes, a, b = _check_pairs(offsets, codes, a, b)
    return _lcs_pairs_kernel(offsets, codes, a, b, False, 0.0).astype(np.int64)


def lcs_length_reference(x, y) -> int:
    """The textbook dynamic program (for tests): L[i][0] = L[0][j] = 0,
    L[i][j] = L[i−1][j−1] + 1 if x_i = y_j else max(L[i−1][j], L[i][j−1]).
    O(n·m) in Python.

    Example:
        >>> lcs_length_reference("ABCBDAB", "BDCABA")
        4
    """
    x = list(x)
    y = list(y)
    prev = [0] * (len(y) + 1)
    for xi in x:
        row = [0]
        for j, yj in enumerate(y):
            row.append(prev[j] + 1 if xi == yj else max(prev[j + 1], row[j]))
        prev = row
    return prev[-1]


def resemblance_reference(x, y) -> float:
    """LCS / max(len) with :func:`lcs_length_reference` (1.0 for two empty sequences).

    Example:
        >>> resemblance_reference("abcde", "abxde")
        0.8
    """
    top = max(len(x), len(y))
    return 1.0 if top == 0 else lcs_length_reference(x, y) / top


@njit(inline="always")
def _pattern_row(key, table):
    """The mask row of unit ``key`` in the current pattern's hash table, or its ``absent``
    row."""
    table_key, table_owner, table_id, run, shift, mask, absent = table
    h = np.int64((key * _MUL) >> shift)
    while table_owner[h] == run:
        if table_key[h] == key:
            return table_id[h]
        h = (h + 1) & mask
    return absent


@njit(inline="always")
def _advance(v, peq, base, words):
    """One text unit over the whole vector: V = (V + U) | (V − U), U = V & M, carried across
    the words."""
    carry = np.uint64(0)
    for w in range(words):
        vw = v[w]
        u = vw & peq[base + w]
        t = vw + u
        c = np.uint64(t < vw)
        t2 = t + carry
        c |= np.uint64(t2 < t)
        carry = c
        v[w] = t2 | (vw & ~u)


@njit(inline="always")
def _zero_bits(v, words, last_valid):
    """The zero bits among the vector's valid bits: the LCS so far."""
    zeros = 0
    for w in range(words):
        x = ~v[w]
        if w == words - 1:
            x &= last_valid
        while x:
            x &= x - np.uint64(1)
            zeros += 1
    return zeros


@njit(inline="always")
def _needed(m, n, threshold):
    """The LCS a pair of lengths m and n must reach (0: exact wanted), or -1 when the lengths
    decide alone (two empty texts, or a length ratio below ``threshold``)."""
    top = max(m, n)
    if top == 0:
        return -1
    if threshold > 0.0:
        if min(m, n) / top < threshold:
            return -1
        return np.int64(np.ceil(threshold * top - 1e-9))
    return 0


@njit(inline="always")
def _resemblance(m, n, length):
    """The value of a pair of lengths m and n with LCS ``length`` (-1: decided by lengths)."""
    top = max(m, n)
    if length >= 0:
        return length / top
    return 1.0 if top == 0 else min(m, n) / top


@njit(inline="always")
def _finish(v, peq, codes, start, n, first, need, words, last_valid, table):
    """Run text units ``first..n`` over the vector; the LCS, or once it cannot reach
    ``need``, a bound below ``need`` (after text unit j, LCS ≤ LCS so far + n − j − 1)."""
    absent = table[6]
    for j in range(first, n):
        row = _pattern_row(unit_key(codes[start + j]), table)
        if row != absent:
            _advance(v, peq, row * words, words)
        if need > 0 and (j & 31) == 31:
            bound = _zero_bits(v, words, last_valid) + (n - j - 1)
            if bound < need:
                return bound
    return _zero_bits(v, words, last_valid)


LONGEST_MASKED = 4096
"""The longest pattern (units) whose masks :func:`lcs_pairs_one_to_many` builds for all its
units at once: (m + 1) · ⌈m / 64⌉ words, 2 MiB at this length. A longer pattern's pairs go
through :func:`lcs_pairs`'s kernel, whose memory is linear in the texts' lengths."""


@njit(inline="always")
def _linear_pair(x, y, threshold, scratch, budget):
    """One pair through :func:`_lcs_bits` (memory O(len)), valued as the one-to-many kernel
    values its pairs; ``budget[0]`` (if not negative) is what the call may still spend, in
    word operations (⌈m / 64⌉ · n once the common prefix and suffix are removed): a pair
    that would spend more is not compared (NaN), the budget paying for those that are."""
    if by_eojeol(x) and by_eojeol(y):
        return eojeol_resemblance(x, y, threshold)
    m = x.shape[0]
    n = y.shape[0]
    need = _needed(m, n, threshold)
    if need < 0:
        return _resemblance(m, n, -1)
    # The two CSRs may hold different integer types; the kernel compares one.
    same_x = np.empty(m, np.uint64)
    same_x[:] = x
    same_y = np.empty(n, np.uint64)
    same_y[:] = y
    if budget[0] >= 0:
        p, s = _trim_common(same_x, same_y)
        low = min(m, n) - p - s
        cost = (low + 63) // 64 * (max(m, n) - p - s)
        if cost > budget[0]:
            return np.nan
        budget[0] -= cost
    return _resemblance(m, n, _lcs_bits(same_x, same_y, scratch, need))


@njit(cache=True, nogil=True)
def _one_to_many_kernel(
    offsets_a, codes_a, offsets_b, codes_b, a, b, threshold, longest_masked, budget, out
):
    """:func:`lcs_pairs_one_to_many` over pairs sorted by ``a``. Text ``a[q]`` is the
    pattern, its masks (one row of ⌈m / 64⌉ words per distinct unit) built once per run of
    equal ``a``; the texts of two pairs of a run advance side by side, two independent chains
    of dependent word operations that the processor overlaps. Patterns over ``longest_masked``
    units run through :func:`_lcs_bits` instead, within ``budget`` (:func:`_linear_pair`)."""
    pairs = a.shape[0]
    longest = 1
    masked = 1
    for q in range(pairs):
        la = offsets_a[a[q] + 1] - offsets_a[a[q]]
        longest = max(longest, la, offsets_b[b[q] + 1] - offsets_b[b[q]])
        if la <= longest_masked:
            masked = max(masked, la)
    scratch = _lcs_scratch(longest if longest > longest_masked else 0)
    capacity = 16
    while capacity < 2 * longest:
        capacity *= 2
    bits = 0
    while (1 << bits) < capacity:
        bits += 1
    shift = np.uint64(64 - bits)
    table_key = np.zeros(capacity, np.uint64)
    table_owner = np.full(capacity, -1, np.int64)  # the run (pattern) owning the slot
    table_id = np.zeros(capacity, np.int64)
    most = (masked + 63) // 64
    peq = np.zeros((masked + 1) * most, np.uint64)
    v1 = np.zeros(most, np.uint64)
    v2 = np.zeros(most, np.uint64)
    ones = ~np.uint64(0)
    current = -1
    run = -1
    m = 0
    words = 0
    absent = 0
    last_valid = ones
    q = 0
    while q < pairs:
        if offsets_a[a[q] + 1] - offsets_a[a[q]] > longest_masked:
            x = codes_a[offsets_a[a[q]] : offsets_a[a[q] + 1]]
            y = codes_b[offsets_b[b[q]] : offsets_b[b[q] + 1]]
            out[q] = _linear_pair(x, y, threshold, scratch, budget)
            q += 1
            continue
        if a[q] != current:
            peq[: (absent + 1) * words] = 0
            current = a[q]
            run += 1
            start = offsets_a[current]
            m = offsets_a[current + 1] - start
            words = (m + 63) // 64
            distinct = 0
            for i in range(m):
                key = unit_key(codes_a[start + i])
                h = np.int64((key * _MUL) >> shift)
                while table_owner[h] == run and table_key[h] != key:
                    h = (h + 1) & (capacity - 1)
                if table_owner[h] != run:
                    table_owner[h] = run
                    table_key[h] = key
                    table_id[h] = distinct
                    distinct += 1
                peq[table_id[h] * words + (i >> 6)] |= np.uint64(1) << np.uint64(i & 63)
            absent = distinct  # the row of units the pattern lacks: they change nothing
            tail = m & 63
            last_valid = ones if tail == 0 else (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
        x = codes_a[offsets_a[current] : offsets_a[current + 1]]
        y = codes_b[offsets_b[b[q]] : offsets_b[b[q] + 1]]
        if by_eojeol(x) and by_eojeol(y):
            out[q] = eojeol_resemblance(x, y, threshold)
            q += 1
            continue
        table = (table_key, table_owner, table_id, run, shift, capacity - 1, absent)
        lanes = 2 if q + 1 < pairs and a[q + 1] == current else 1
        if lanes == 2 and by_eojeol(x):  # the second pair's text may be Korean too
            lanes = 1 + (not by_eojeol(codes_b[offsets_b[b[q + 1]] : offsets_b[b[q + 1] + 1]]))
        s1 = offsets_b[b[q]]
        n1 = offsets_b[b[q] + 1] - s1
        need1 = _needed(m, n1, threshold)
        s2 = 0
        n2 = 0
        need2 = -1
        if lanes == 2:
            s2 = offsets_b[b[q + 1]]
            n2 = offsets_b[b[q + 1] + 1] - s2
            need2 = _needed(m, n2, threshold)
        for w in range(words):
            v1[w] = ones
            v2[w] = ones
        both = min(n1, n2) if need1 >= 0 and need2 >= 0 else 0
        for j in range(both):
            r1 = _pattern_row(unit_key(codes_b[s1 + j]), table)
            r2 = _pattern_row(unit_key(codes_b[s2 + j]), table)
            if r1 != absent:
                _advance(v1, peq, r1 * words, words)
            if r2 != absent:
                _advance(v2, peq, r2 * words, words)
        length = -1
        if need1 >= 0:
            length = _finish(v1, peq, codes_b, s1, n1, both, need1, words, last_valid, table)
        out[q] = _resemblance(m, n1, length)
        if lanes == 2:
            length = -1
            if need2 >= 0:
                length = _finish(v2, peq, codes_b, s2, n2, both, need2, words, last_valid, table)
            out[q + 1] = _resemblance(m, n2, length)
        q += lanes


def lcs_pairs_one_to_many(
    offsets_a: np.ndarray,
    codes_a: np.ndarray,
    offsets_b: np.ndarray,
    codes_b: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    threshold: float | None = None,
    longest_masked: int = LONGEST_MASKED,
    budget: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`lcs_pairs` of row ``a[p]`` of one CSR of units and row ``b[p]`` of another
    (float64 per pair, the same values: with ``threshold``, exact at or above it and some value
    below it otherwise), for texts compared with many others (a query and its candidates):
    each distinct ``a`` row's bit masks are built once for all its pairs, two of its pairs run
    side by side, and the two CSRs need not be joined. No common prefix or suffix is trimmed
    from the texts whose masks are built.

    Time O(Σ ⌈len_a / 64⌉ · len_b) per pair (a unit of b that the a row lacks costs one
    look-up), plus O(len_a) per distinct ``a`` and a sort of the pairs. Memory: the masks of
    the longest ``a`` row of at most ``longest_masked`` units, O(L · ⌈L / 64⌉) words with L
    that length (2 MiB at the default :data:`LONGEST_MASKED`), plus O(longest text); the pairs
    of longer ``a`` rows go through :func:`lcs_pairs`'s kernel (common prefix and suffix
    trimmed, one 64-unit block of masks at a time), so a text of a million units costs
    megabytes, not the 125 GB of its full masks. Their time, ⌈m / 64⌉ · n word operations once
    the common prefix and suffix are removed (about a nanosecond each on 2 cores), can be
    bounded: ``budget`` (``int64[1]``) holds the operations the call may spend on them, less
    what it spent when it returns; a pair that would overspend is not compared, and is NaN.
    Measured on the benchmark corpus's template
    (266 units, against 3,000 copies): 1.3-1.45 times as fast as :func:`lcs_pairs`.

    Example:
        >>> from neardup.text.units import lcs_units
        >>> oa, ca = lcs_units(["a b c d", ""], "word")
        >>> ob, cb = lcs_units(["a x c d", "", "a b c d e"], "word")
        >>> lcs_pairs_one_to_many(oa, ca, ob, cb, np.array([0, 0, 1, 0]),
        ...                       np.array([0, 1, 1, 2])).tolist()
        [0.75, 0.0, 1.0, 0.8]
    """
    offsets_a, codes_a, a, _ = _check_pairs(offsets_a, codes_a, a, a)
    offsets_b, codes_b, b, _ = _check_pairs(offsets_b, codes_b, b, b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length; got {a.shape} and {b.shape}")
    if threshold is not None and not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1]; got {threshold}")
    if longest_masked < 0:
        raise ValueError(f"longest_masked must be 0 or more units; got {longest_masked}")
    if budget is not None and (budget.dtype != np.int64 or budget.shape != (1,)):
        raise ValueError(f"budget must be an int64 array of one value; got {budget!r}")
    order = np.argsort(a, kind="stable")
    in_order = np.empty(a.shape[0], np.float64)
    _one_to_many_kernel(
        offsets_a,
        codes_a,
        offsets_b,
        codes_b,
        a[order],
        b[order],
        float(threshold or 0.0),
        int(longest_masked),
        np.full(1, -1, np.int64) if budget is None else budget,
        in_order,
    )
    out = np.empty(a.shape[0], np.float64)
    out[order] = in_order
    return out
