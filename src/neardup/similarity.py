"""The pairwise measures between two documents: cosine, Levenshtein, LCS, Jaccard, Hamming.

===============  ======================================  ========  ====  ===========  ========
measure          value                                   order     freq  unit         time
===============  ======================================  ========  ====  ===========  ========
cosine           Σ tf_A(u)·tf_B(u) / (‖tf_A‖·‖tf_B‖)     ignored   yes   ``unit``     n log n
levenshtein      fewest insert/delete/substitute         yes       yes   ``unit``     n·m
lcs_resemblance  |LCS| / (|A| + |B| − |LCS|)             yes       yes   ``unit``     n·m
jaccard          |S_A ∩ S_B| / |S_A ∪ S_B|               shingled  no    ``shingle``  n log n
hamming          popcount(simhash(A) XOR simhash(B))     shingled  no    ``shingle``  n
===============  ======================================  ========  ====  ===========  ========

(n and m are the lengths of the two documents in units or shingles.)

Units of the sequence measures
------------------------------
Cosine, Levenshtein and LCS compare sequences of *units* taken from the canonical text
(:func:`neardup.text.normalize`; ``normalized=False`` uses the raw text instead):

``"char"``
    every code point of the text, spaces included;
``"word"``
    the whitespace-separated tokens (for Korean, the eojeol);
``"syllable"``
    every code point except whitespace: a Hangul syllable block is one unit, and in other
    scripts a unit is one letter (or digit, mark, …);
``"jamo"``
    as ``"syllable"``, but each precomposed Hangul syllable S (U+AC00..U+D7A3) is replaced by its
    conjoining jamo. With s = S − 0xAC00: lead U+1100 + s // 588, vowel U+1161 + (s % 588) // 28,
    and, when s % 28 > 0, tail U+11A7 + s % 28 (the Unicode canonical decomposition). So
    한 → ᄒ ᅡ ᆫ and 헌 → ᄒ ᅥ ᆫ differ in one unit, and 각 → 가 is the deletion of one unit.

Units are int64 ids: code points, or for words the XXH64 of the word's UTF-8 bytes viewed as
int64 (two different words share an id with probability 2^-64). The dynamic programs run in
numba over these arrays and keep one or two rows of the shorter sequence, so memory is linear even
where time is quadratic: two 20,000-character texts take a few hundred kilobytes and on the order
of a second.

Empty documents
---------------
Every similarity in 0..1 follows one rule: two empty documents (no unit, or no shingle) are
identical (1.0), and an empty document against a non-empty one scores 0.0. Distances are what
the definition gives (the Levenshtein distance to an empty sequence is the other's length).

Example:
    >>> a = "나는 어제 학교에 갔다"
    >>> b = "나는 어제 학교로 갔다"
    >>> [levenshtein(a, b, unit=u) for u in ("word", "syllable", "jamo")]
    [1, 1, 2]
    >>> round(lcs_resemblance(a, b, unit="word"), 4)   # 3 / (4 + 4 − 3)
    0.6
    >>> jaccard(a, b, shingle="word:1")                 # {나는 어제 갔다} of 5 words
    0.6
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from neardup.hashing import DEFAULT_HASH_NAME, hash_strings
from neardup.minhash import (
    DEFAULT_NUM_PERM,
    DEFAULT_SCHEME,
    DEFAULT_SEED,
    jaccard_estimate,
    minhash_from_features,
)
from neardup.simhash import hamming_distance, simhash_from_features
from neardup.text import (
    DEFAULT_TEXT_SHINGLE,
    Features,
    Shingling,
    hash_features,
    normalize_many,
    shingle_sets,
)

__all__ = [
    "UNITS",
    "COMPARE_KEYS",
    "check_unit",
    "to_units",
    "levenshtein",
    "levenshtein_ids",
    "levenshtein_similarity",
    "lcs_length",
    "lcs_length_ids",
    "lcs_resemblance",
    "cosine",
    "cosine_ids",
    "jaccard",
    "jaccard_sorted",
    "containment",
    "containment_sorted",
    "intersection_size",
    "hamming",
    "minhash_jaccard",
    "compare",
]

UNITS = ("char", "word", "jamo", "syllable")
COMPARE_KEYS = (
    "cosine",
    "levenshtein",
    "levenshtein_similarity",
    "lcs_resemblance",
    "jaccard",
    "minhash_jaccard",
    "containment_a_in_b",
    "containment_b_in_a",
    "hamming",
)

_HANGUL_FIRST = 0xAC00
_HANGUL_LAST = 0xD7A3
_JAMO_L = 0x1100
_JAMO_V = 0x1161
_JAMO_T = 0x11A7  # tail index 0 means "no tail", so the first tail jamo is U+11A8


# --------------------------------------------------------------------------- units


def check_unit(unit: str) -> str:
    """Validate a sequence unit and return it.

    Example:
        >>> check_unit("jamo")
        'jamo'
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}")
    return unit


def _code_points(text: str) -> np.ndarray:
    # UTF-32 is one fixed-width code unit per code point: the decode is a single C-level copy.
    data = text.encode("utf-32-le", "surrogatepass")
    return np.frombuffer(data, dtype="<u4").astype(np.int64)


@njit(cache=True)
def _expand_jamo(cps):
    """Replace each precomposed Hangul syllable by its 2 or 3 conjoining jamo."""
    count = 0
    for c in cps:
        if _HANGUL_FIRST <= c <= _HANGUL_LAST:
            count += 3 if (c - _HANGUL_FIRST) % 28 else 2
        else:
            count += 1
    out = np.empty(count, dtype=np.int64)
    o = 0
    for c in cps:
        if _HANGUL_FIRST <= c <= _HANGUL_LAST:
            s = c - _HANGUL_FIRST
            out[o] = _JAMO_L + s // 588
            out[o + 1] = _JAMO_V + (s % 588) // 28
            o += 2
            t = s % 28
            if t:
                out[o] = _JAMO_T + t
                o += 1
        else:
            out[o] = c
            o += 1
    return out


def _units_of(text: str, unit: str) -> np.ndarray:
    """Unit ids of a text already normalised (or deliberately raw); ``unit`` already checked."""
    if unit == "char":
        return _code_points(text)
    if unit == "word":
        words = text.split()
        if not words:
            return np.empty(0, dtype=np.int64)
        return hash_strings(words).view(np.int64)
    squeezed = "".join(text.split())
    if unit == "syllable":
        return _code_points(squeezed)
    return _expand_jamo(_code_points(squeezed))


def _prepare(texts: list[str], normalized: bool) -> list[str]:
    return normalize_many(list(texts)) if normalized else list(texts)


def _pair_units(a: str, b: str, unit: str, normalized: bool) -> tuple[np.ndarray, np.ndarray]:
    check_unit(unit)
    ta, tb = _prepare([a, b], normalized)
    return _units_of(ta, unit), _units_of(tb, unit)


def to_units(text: str, unit: str = "char", normalized: bool = True) -> np.ndarray:
    """The sequence of units of a text as int64 ids (see the module docstring for the units).

    Ids are code points (``"char"``, ``"syllable"``, ``"jamo"``) or, for ``"word"``, the XXH64
    hash of the word viewed as int64. O(len(text)).

    Example:
        >>> to_units("한 글", "syllable").tolist() == [ord("한"), ord("글")]
        True
        >>> [hex(u) for u in to_units("한", "jamo")]
        ['0x1112', '0x1161', '0x11ab']
        >>> len(to_units("Hello,  World!")), len(to_units("Hello,  World!", normalized=False))
        (11, 14)
    """
    check_unit(unit)
    return _units_of(_prepare([text], normalized)[0], unit)


# --------------------------------------------------------------------------- edit distance


@njit(cache=True)
def _trim_common(x, y):
    """Lengths of the common prefix and of the common suffix (not overlapping the prefix)."""
    n = x.shape[0]
    m = y.shape[0]
    p = 0
    while p < n and p < m and x[p] == y[p]:
        p += 1
    s = 0
    while s < n - p and s < m - p and x[n - 1 - s] == y[m - 1 - s]:
        s += 1
    return p, s


@njit(cache=True)
def _trimmed_longer_first(x, y):
    """(p, s, longer, shorter): the common prefix and suffix lengths of :func:`_trim_common`,
    then what is left of x and y between them, the longer first (x's on a tie)."""
    p, s = _trim_common(x, y)
    xa = x[p : x.shape[0] - s]
    ya = y[p : y.shape[0] - s]
    if xa.shape[0] >= ya.shape[0]:
        return p, s, xa, ya
    return p, s, ya, xa


@njit(cache=True)
def _levenshtein_full(x, y):
    m = y.shape[0]
    row = np.arange(m + 1, dtype=np.int64)
    for i in range(1, x.shape[0] + 1):
        xi = x[i - 1]
        diag = row[0]  # D[i−1][j−1]
        row[0] = i
        for j in range(1, m + 1):
            up = row[j]
            v = diag + (0 if xi == y[j - 1] else 1)
            if up + 1 < v:
                v = up + 1
            if row[j - 1] + 1 < v:
                v = row[j - 1] + 1
            diag = up
            row[j] = v
    return row[m]


@njit(cache=True)
def _levenshtein_kernel(x_in, y_in, k):
    """min(d(x, y), k + 1), computing only the cells within k of the diagonal (Ukkonen)."""
    # A common prefix or suffix is matched by some optimal alignment, so it costs nothing.
    _, _, x, y = _trimmed_longer_first(x_in, y_in)
    n = x.shape[0]
    m = y.shape[0]  # m <= n: the rows run over the shorter sequence
    if m == 0:
        return min(n, k + 1)
    if n - m > k:
        return k + 1
    if k >= n:
        # The band covers the whole table: the plain program, one row plus a diagonal scalar.
        return min(_levenshtein_full(x, y), k + 1)
    big = k + 1  # every value above k is stored as k + 1; capping commutes with min and +1
    prev = np.empty(m + 1, dtype=np.int64)
    cur = np.empty(m + 1, dtype=np.int64)
    for j in range(m + 1):
        prev[j] = min(j, big)
    for i in range(1, n + 1):
        lo = max(1, i - k)
        hi = min(m, i + k)
        cur[lo - 1] = min(i, big) if lo == 1 else big
        row_min = cur[lo - 1]
        xi = x[i - 1]
        for j in range(lo, hi + 1):
            v = prev[j - 1] + (0 if xi == y[j - 1] else 1)
            t = prev[j] + 1
            if t < v:
                v = t
            t = cur[j - 1] + 1
            if t < v:
                v = t
            if v > big:
                v = big
            cur[j] = v
            if v < row_min:
                row_min = v
        if hi < m:
            cur[hi + 1] = big  # the next row's band reaches one cell further right
        if row_min > k:
            # Every alignment path crosses this row, so the distance is at least row_min.
            return k + 1
        prev, cur = cur, prev
    return min(prev[m], k + 1)


def _check_max_distance(max_distance: int | None) -> int | None:
    if max_distance is None:
        return None
    if isinstance(max_distance, bool) or not isinstance(max_distance, (int, np.integer)):
        raise ValueError(f"max_distance must be None or an integer >= 0; got {max_distance!r}")
    if max_distance < 0:
        raise ValueError(f"max_distance must be None or an integer >= 0; got {max_distance}")
    return int(max_distance)


def levenshtein_ids(x: np.ndarray, y: np.ndarray, max_distance: int | None = None) -> int:
    """Levenshtein distance between two int64 unit arrays (see :func:`levenshtein`).

    Example:
        >>> levenshtein_ids(np.array([1, 2, 3]), np.array([1, 3]))
        1
    """
    max_distance = _check_max_distance(max_distance)
    x = np.ascontiguousarray(x, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    k = max(x.shape[0], y.shape[0]) if max_distance is None else max_distance
    return int(_levenshtein_kernel(x, y, k))


def levenshtein(
    a: str,
    b: str,
    unit: str = "char",
    normalized: bool = True,
    max_distance: int | None = None,
) -> int:
    """Levenshtein edit distance: fewest insertions, deletions and substitutions (cost 1 each).

    Recurrence over the unit sequences x (length n) and y (length m):

        D[i][0] = i,   D[0][j] = j,
        D[i][j] = min(D[i−1][j] + 1, D[i][j−1] + 1, D[i−1][j−1] + [x_i ≠ y_j]),   d = D[n][m].

    Result in units of ``unit`` (``"char"``, ``"word"``, ``"jamo"``, ``"syllable"``). A common
    prefix and suffix are skipped first. Time O(n·m), memory O(min(n, m)) (two rows).

    With ``max_distance`` = k the result is ``min(d, k + 1)``: only the cells with |i − j| ≤ k
    are computed and the program stops as soon as a whole row exceeds k, so time is
    O(k·max(n, m)) — use it when only "within k edits?" matters on long inputs.

    Example:
        >>> levenshtein("kitten", "sitting")
        3
        >>> levenshtein("kitten", "sitting", max_distance=1)
        2
        >>> levenshtein("한", "헌", unit="jamo"), levenshtein("각", "가", unit="jamo")
        (1, 1)
    """
    max_distance = _check_max_distance(max_distance)
    x, y = _pair_units(a, b, unit, normalized)
    return levenshtein_ids(x, y, max_distance)


def levenshtein_similarity(a: str, b: str, unit: str = "char", normalized: bool = True) -> float:
    """1 − d / max(n, m) with d the Levenshtein distance, in 0..1 (1.0 for two empty texts).

    Time O(n·m), memory O(min(n, m)).

    Example:
        >>> round(levenshtein_similarity("kitten", "sitting"), 4)   # 1 − 3/7
        0.5714
    """
    x, y = _pair_units(a, b, unit, normalized)
    return _edit_similarity(levenshtein_ids(x, y), x.shape[0], y.shape[0])


def _jaccard_value(common: int, n: int, m: int) -> float:
    """common / (n + m − common): the Jaccard form shared by sets and LCS; 1.0 when both empty."""
    union = n + m - common
    return 1.0 if union == 0 else common / union


def _edit_similarity(distance: int, n: int, m: int) -> float:
    longest = max(n, m)
    return 1.0 if longest == 0 else 1.0 - distance / longest


# --------------------------------------------------------------------------- LCS


@njit(cache=True)
def _lcs_kernel(x_in, y_in):
    # A common prefix or suffix always extends some longest common subsequence.
    p, s, x, y = _trimmed_longer_first(x_in, y_in)
    n = x.shape[0]
    m = y.shape[0]
    if m == 0:
        return p + s
    row = np.zeros(m + 1, dtype=np.int64)  # one row plus the diagonal kept in a scalar
    for i in range(n):
        xi = x[i]
        diag = 0  # L[i][j−1] before it is overwritten
        for j in range(1, m + 1):
            up = row[j]
            if xi == y[j - 1]:
                v = diag + 1
            else:
                v = up if up >= row[j - 1] else row[j - 1]
            diag = up
            row[j] = v
    return row[m] + p + s


def lcs_length_ids(x: np.ndarray, y: np.ndarray) -> int:
    """Length of a longest common subsequence of two int64 unit arrays (see :func:`lcs_length`).

    Example:
        >>> lcs_length_ids(np.array([1, 2, 3, 4]), np.array([2, 4, 5]))
        2
    """
    x = np.ascontiguousarray(x, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    return int(_lcs_kernel(x, y))


def lcs_length(a: str, b: str, unit: str = "word", normalized: bool = True) -> int:
    """Length of a longest common subsequence (units in order, gaps allowed).

    Recurrence: L[i][0] = L[0][j] = 0;
    L[i][j] = L[i−1][j−1] + 1 if x_i = y_j, else max(L[i−1][j], L[i][j−1]).

    Result in units of ``unit``. Time O(n·m), memory O(min(n, m)) (one row).

    Example:
        >>> lcs_length("a b c d e", "a c x e")
        3
        >>> lcs_length("ABCBDAB", "BDCABA", unit="char")
        4
    """
    x, y = _pair_units(a, b, unit, normalized)
    return lcs_length_ids(x, y)


def lcs_resemblance(a: str, b: str, unit: str = "word", normalized: bool = True) -> float:
    """LCS resemblance |LCS| / (|A| + |B| − |LCS|), in 0..1; 1.0 for two empty texts.

    The Jaccard index of the two sequences with "common" meaning "common in order".
    Time O(n·m), memory O(min(n, m)).

    Example:
        >>> lcs_resemblance("a b c d", "a b x d")   # 3 / (4 + 4 − 3)
        0.6
    """
    x, y = _pair_units(a, b, unit, normalized)
    return _jaccard_value(lcs_length_ids(x, y), x.shape[0], y.shape[0])


# --------------------------------------------------------------------------- cosine


@njit(cache=True)
def _run_length(sorted_ids, i):
    j = i + 1
    while j < sorted_ids.shape[0] and sorted_ids[j] == sorted_ids[i]:
        j += 1
    return j - i


@njit(cache=True)
def _cosine_kernel(x, y):
    if x.shape[0] == 0 or y.shape[0] == 0:
        return 1.0 if x.shape[0] == y.shape[0] else 0.0
    xs = np.sort(x)
    ys = np.sort(y)
    # Squared norms and the dot product in floats: counts squared can exceed int64 for long texts.
    norm_x = 0.0
    i = 0
    while i < xs.shape[0]:
        c = _run_length(xs, i)
        norm_x += float(c) * float(c)
        i += c
    norm_y = 0.0
    j = 0
    while j < ys.shape[0]:
        c = _run_length(ys, j)
        norm_y += float(c) * float(c)
        j += c
    dot = 0.0
    i = 0
    j = 0
    while i < xs.shape[0] and j < ys.shape[0]:
        if xs[i] < ys[j]:
            i += _run_length(xs, i)
        elif xs[i] > ys[j]:
            j += _run_length(ys, j)
        else:
            ci = _run_length(xs, i)
            cj = _run_length(ys, j)
            dot += float(ci) * float(cj)
            i += ci
            j += cj
    value = dot / math.sqrt(norm_x * norm_y)
    return min(value, 1.0)


def cosine_ids(x: np.ndarray, y: np.ndarray) -> float:
    """Cosine of the term-frequency vectors of two int64 unit arrays (see :func:`cosine`).

    Example:
        >>> cosine_ids(np.array([1, 1, 2]), np.array([1, 2, 2]))   # (2 + 2) / (√5 · √5)
        0.8
    """
    x = np.ascontiguousarray(x, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    return float(_cosine_kernel(x, y))


def cosine(a: str, b: str, unit: str = "word", normalized: bool = True) -> float:
    """Cosine similarity of the term-frequency vectors of the units, in 0..1.

        cos(A, B) = Σ_u tf_A(u) · tf_B(u) / (sqrt(Σ_u tf_A(u)²) · sqrt(Σ_u tf_B(u)²))

    where tf_X(u) counts unit u in X. Order is ignored, frequency is not. 1.0 for two empty
    texts, 0.0 when exactly one is empty. Time O((n + m) log(n + m)), memory O(n + m).

    Example:
        >>> cosine("a a b", "a b b")     # (2·1 + 1·2) / (√5 · √5)
        0.8
        >>> cosine("b a", "a b")
        1.0
    """
    x, y = _pair_units(a, b, unit, normalized)
    return cosine_ids(x, y)


# --------------------------------------------------------------------------- shingle sets


@njit(cache=True)
def intersection_size(x, y):
    """|x ∩ y| of two sorted arrays of distinct values, by merging. O(len(x) + len(y))."""
    i = 0
    j = 0
    common = 0
    while i < x.shape[0] and j < y.shape[0]:
        if x[i] < y[j]:
            i += 1
        elif x[i] > y[j]:
            j += 1
        else:
            common += 1
            i += 1
            j += 1
    return common


def _sorted_unique(values: np.ndarray, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(values, dtype=np.uint64)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-d array of sorted distinct uint64; got shape {arr.shape}"
        )
    if arr.shape[0] > 1 and bool(np.any(arr[1:] <= arr[:-1])):
        raise ValueError(f"{name} must be sorted in increasing order without repeats")
    return arr


def jaccard_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """Exact Jaccard |x ∩ y| / |x ∪ y| of two sorted arrays of distinct uint64 (shingle sets).

    1.0 when both are empty, 0.0 when exactly one is. O(len(x) + len(y)) (one merge, plus an
    O(len) check that the inputs are sorted and distinct).

    Example:
        >>> x = np.array([1, 3, 5, 7], dtype=np.uint64)
        >>> jaccard_sorted(x, np.array([3, 4, 5], dtype=np.uint64))   # {3, 5} / {1, 3, 4, 5, 7}
        0.4
    """
    x = _sorted_unique(x, "x")
    y = _sorted_unique(y, "y")
    return _jaccard_value(int(intersection_size(x, y)), x.shape[0], y.shape[0])


def containment_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """Containment of x in y, |x ∩ y| / |x|, for sorted arrays of distinct uint64.

    1.0 when both are empty, 0.0 when only x or only y is. O(len(x) + len(y)).

    Example:
        >>> x = np.array([3, 5], dtype=np.uint64)
        >>> containment_sorted(x, np.array([1, 3, 5, 7], dtype=np.uint64))
        1.0
    """
    x = _sorted_unique(x, "x")
    y = _sorted_unique(y, "y")
    return _containment_value(int(intersection_size(x, y)), x.shape[0], y.shape[0])


def _containment_value(common: int, n: int, m: int) -> float:
    if n == 0 or m == 0:
        return 1.0 if n == m else 0.0
    return common / n


def _pair_sets(features: Features) -> tuple[np.ndarray, np.ndarray]:
    offsets, hashes, _ = shingle_sets(features.offsets, features.hashes)
    return hashes[offsets[0] : offsets[1]], hashes[offsets[1] : offsets[2]]


def jaccard(
    a: str,
    b: str,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
) -> float:
    """Exact Jaccard index of the two shingle sets: |S_A ∩ S_B| / |S_A ∪ S_B|, in 0..1.

    Shingles as in :mod:`neardup.text` (order inside a shingle counts, repeats do not), compared
    by their 64-bit hashes. 1.0 for two texts without shingles, 0.0 when exactly one has none.
    Time O((n + m) log(n + m)) for hashing and sorting, then one merge.

    Example:
        >>> jaccard("a b c d", "a b c e", shingle="word:1")   # {a b c} / {a b c d e}
        0.6
        >>> jaccard("a b c d", "a b c e", shingle="word:3")   # {abc} / {abc bcd bce}
        0.3333333333333333
    """
    sa, sb = _pair_sets(hash_features([a, b], shingle, hash_name))
    return _jaccard_value(int(intersection_size(sa, sb)), sa.shape[0], sb.shape[0])


def containment(
    a: str,
    b: str,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
) -> float:
    """Containment of a in b: |S_A ∩ S_B| / |S_A|, in 0..1 (how much of a appears in b).

    Near 1 when a is (nearly) a part of b, whatever b's length; not symmetric. 1.0 for two texts
    without shingles, 0.0 when exactly one has none. Same cost as :func:`jaccard`.

    Example:
        >>> containment("b c", "a b c d", "word:1"), containment("a b c d", "b c", "word:1")
        (1.0, 0.5)
    """
    sa, sb = _pair_sets(hash_features([a, b], shingle, hash_name))
    return _containment_value(int(intersection_size(sa, sb)), sa.shape[0], sb.shape[0])


# --------------------------------------------------------------------------- signatures


def hamming(
    a: str,
    b: str,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    hash_name: str = DEFAULT_HASH_NAME,
    weights: str = "set",
) -> int:
    """Hamming distance of the 64-bit SimHash fingerprints: popcount(simhash(a) XOR simhash(b)).

    A distance in 0..64 bits (see :mod:`neardup.simhash`; two empty texts are at distance 0).
    Time O((n + m) · 64).

    Example:
        >>> hamming("the same words here", "the same words here")
        0
        >>> 0 <= hamming("one text about cats", "another text about dogs") <= 64
        True
    """
    fps = simhash_from_features(hash_features([a, b], shingle, hash_name), weights)
    return int(hamming_distance(fps[0], fps[1]))


def minhash_jaccard(
    a: str,
    b: str,
    num_perm: int = DEFAULT_NUM_PERM,
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    seed: int = DEFAULT_SEED,
    hash_name: str = DEFAULT_HASH_NAME,
    scheme: str = DEFAULT_SCHEME,
) -> float:
    """MinHash estimate of the Jaccard index: the share of equal signature positions, in 0..1.

    Standard error sqrt(J(1 − J) / num_perm) (see :mod:`neardup.minhash`).
    Time O(n + m + num_perm) (``scheme="oph"``) or O((n + m) · num_perm) (``"classic"``).

    Example:
        >>> minhash_jaccard("a b c d e", "a b c d e")
        1.0
    """
    features = hash_features([a, b], shingle, hash_name)
    sig = minhash_from_features(features, num_perm, seed, scheme)
    return float(jaccard_estimate(sig[0], sig[1]))


# --------------------------------------------------------------------------- all at once


def compare(
    a: str,
    b: str,
    *,
    unit: str = "word",
    shingle: str | Shingling = DEFAULT_TEXT_SHINGLE,
    num_perm: int = DEFAULT_NUM_PERM,
    hash_name: str = DEFAULT_HASH_NAME,
) -> dict[str, float | int]:
    """Every measure between two texts, in the order of ``COMPARE_KEYS``.

    ``cosine``, ``levenshtein`` (int, in units), ``levenshtein_similarity``
    (1 − d / max(n, m)) and ``lcs_resemblance`` use ``unit`` on the normalised texts;
    ``jaccard``, ``minhash_jaccard`` (seed 1), ``containment_a_in_b``, ``containment_b_in_a``
    and ``hamming`` (int, SimHash bits, set weights) use ``shingle`` and ``hash_name``.
    The texts are normalised and hashed once. Time O(n·m) for the edit-distance family plus
    O(n + m + num_perm) for MinHash (the default scheme); memory O(n + m).

    Example:
        >>> r = compare("나는 어제 학교에 갔다", "나는 어제 학교로 갔다", shingle="word:1")
        >>> list(r)[:3], r["levenshtein"], r["jaccard"]
        (['cosine', 'levenshtein', 'levenshtein_similarity'], 1, 0.6)
    """
    x, y = _pair_units(a, b, unit, True)
    features = hash_features([a, b], shingle, hash_name)
    sa, sb = _pair_sets(features)
    common = int(intersection_size(sa, sb))
    distance = levenshtein_ids(x, y)
    sig = minhash_from_features(features, num_perm, DEFAULT_SEED)
    fps = simhash_from_features(features, "set")
    n, m = x.shape[0], y.shape[0]
    values: dict[str, float | int] = {
        "cosine": cosine_ids(x, y),
        "levenshtein": distance,
        "levenshtein_similarity": _edit_similarity(distance, n, m),
        "lcs_resemblance": _jaccard_value(lcs_length_ids(x, y), n, m),
        "jaccard": _jaccard_value(common, sa.shape[0], sb.shape[0]),
        "minhash_jaccard": float(jaccard_estimate(sig[0], sig[1])),
        "containment_a_in_b": _containment_value(common, sa.shape[0], sb.shape[0]),
        "containment_b_in_a": _containment_value(common, sb.shape[0], sa.shape[0]),
        "hamming": int(hamming_distance(fps[0], fps[1])),
    }
    return values
