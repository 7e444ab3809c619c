"""Korean measured in words: the eojeol that one text keeps of another, robust to spacing.

Rule 2 of ``NEAR_DUPLICATE.md`` counts words; in Korean those are the eojeol, the
space-separated words (a stem with its particles or endings attached). Korean spacing is
unreliable, though (a particle written apart or not, a word split by a line wrap, two words
run together), and rule 1 says formatting does not count. So the characters of both texts are
aligned with the spaces removed, and a word of the longer text is *kept* when all its
characters are kept in the alignment, in order::

    kept(L, S) = the most words of L whose characters, concatenated in order, are a
                 subsequence of S's characters (spaces removed)
    eojeol resemblance = kept(L, S) / words(L)

with L the text of more characters (spaces are not counted: a spacing change never makes a
text the longer one); when both have as many characters, the lower value of the two
directions (the measure is symmetric). A word split in two or two words run together keep
every character, so they keep their words; a changed particle changes its word.

The maximum runs over every alignment: a set of words of L is kept together exactly when their
concatenation is a subsequence of S, and among the choices of c words of L's first k words the
one whose concatenation embeds in the shortest prefix of S dominates (a later word embeds
after it whenever it does after another). So a dynamic program over L's words keeps, for each
count c, the shortest prefix of S that c of them embed in (:func:`kept_eojeol`); each word is
embedded greedily (the earliest match of each character, found by binary search among S's
positions of that character, grouped once). Time O(W · (W − need + 1) · w̄ · log |S|) with W the
words of L, w̄ their mean length in characters and need the words the threshold asks for;
memory O(|S| + W).

The units are those of :func:`neardup.text.units.lcs_units`: a character unit has its top bit
set (:data:`CHARACTER`), and a character that ends an eojeol of a Korean text also has
:data:`EOJEOL_END`; :func:`unit_key` clears that bit, so a character is the same unit wherever
it stands in its word.

Example:
    >>> from neardup.text.units import lcs_units
    >>> o, c = lcs_units(["나는 학교에 갔다", "나는 학교 에 갔다", "나는 학교로 갔다"], "auto")
    >>> eojeol_pairs(o, c, np.array([0, 0]), np.array([1, 2])).tolist()
    [1.0, 0.6666666666666666]
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "CHARACTER",
    "EOJEOL_END",
    "by_eojeol",
    "eojeol_floor",
    "eojeol_pairs",
    "eojeol_rows",
    "eojeol_resemblance",
    "kept_eojeol",
    "unit_key",
]

CHARACTER = np.uint64(1) << np.uint64(63)
"""The bit of a character unit (:func:`neardup.text.units.lcs_units`, unit ``"auto"``)."""
EOJEOL_END = np.uint64(1) << np.uint64(62)
"""The bit of a character unit that ends an eojeol of a Korean text."""
_BOTH = CHARACTER | EOJEOL_END
_CODE_POINT = np.uint64(0x1FFFFF)  # the code point of a character unit
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # multiplicative hashing (Fibonacci)


@njit(inline="always")
def unit_key(unit):
    """The unit that the LCS compares: ``unit`` without :data:`EOJEOL_END` when it is a
    character (a word hash, top bit clear, is left whole). No branch."""
    u = np.uint64(unit)
    return u & ~((u >> np.uint64(1)) & EOJEOL_END)


@njit(inline="always")
def _ends(unit):
    """1 when ``unit`` is a character that ends an eojeol, else 0."""
    return np.int64((np.uint64(unit) & _BOTH) == _BOTH)


@njit(inline="always")
def by_eojeol(units):
    """Whether a text's units are characters with eojeol ends (a Korean text): its last
    character always ends an eojeol. O(1)."""
    return units.shape[0] > 0 and _ends(units[units.shape[0] - 1]) == 1


@njit(inline="always")
def _embed(lo, hi, start, first, last, positions, far, text, number):
    """The end (one past the last match) of the earliest embedding of the longer text's
    characters ``lo..hi-1`` in the shorter text from its position ``start``, or ``far`` when
    they do not embed. The shorter text's positions are grouped by character, ascending
    within one (:func:`_character_index`); character i of the longer text has its
    character's at ``positions[first[i]:last[i]]`` and its number ``number[i]`` (-1 when the
    shorter text lacks it), so each character costs one binary search, or nothing when the
    shorter text's next character (``text``, their numbers) is that character already."""
    at = start
    for i in range(lo, hi):
        if at < text.shape[0] and text[at] == number[i]:
            at += 1
            continue
        # The first of positions[first[i]:last[i]] at or after `at` (a binary search).
        low = first[i]
        high = last[i]
        while low < high:
            middle = (low + high) >> 1
            if positions[middle] < at:
                low = middle + 1
            else:
                high = middle
        if low >= last[i]:
            return far
        at = positions[low] + 1
    return at


@njit(inline="always")
def _greedy(longer, index, far):
    """The words of ``longer`` that one left-to-right pass keeps, each embedded at its earliest
    after the last kept, and only when it ends within its length plus a slack of the last kept
    word's end, the slack doubling (plus the word's length and 4) after each word skipped (so
    an inserted passage is crossed). Every count it returns is reached by some choice of
    words. ``index`` is :func:`_character_index`'s. O(m log n)."""
    text, positions, first, last, number, _ = index
    kept = 0
    at = 0
    start = 0
    slack = 4
    for i in range(longer.shape[0]):
        if _ends(longer[i]):
            end = _embed(start, i + 1, at, first, last, positions, far, text, number)
            if end < far and end - at <= i + 1 - start + slack:
                kept += 1
                at = end
                slack = 4
            else:
                slack = 2 * slack + i + 1 - start + 4
            start = i + 1
    return kept


@njit(inline="always")
def _character_index(longer, shorter):
    """The shorter text's positions grouped by character, for :func:`_embed`: ``(text,
    positions, first, last, number, words)``, ``text[j]`` a dense number of the shorter
    text's character j (numbered by first appearance), ``positions`` its positions grouped by
    that number and ascending within it (a counting sort), ``positions[first[i]:last[i]]``
    those of the longer text's character i (empty when the shorter text lacks it),
    ``number[i]`` that character's number (-1 when the shorter text lacks it) and ``words``
    the longer text's eojeol. O(m + n) expected: the characters are numbered by an
    open-addressing table of at least 2n slots, where a sort and two binary searches a
    character took 60 % of a Korean near-duplicate's time. Positions and numbers are int32,
    as the dense ids of :func:`neardup.lcs._lcs_bits` are: half the memory of int64."""
    n = shorter.shape[0]
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    table = np.full(mask + 1, -1, np.int64)  # (code point << 32) | number, -1 when empty
    text = np.empty(n, np.int32)
    distinct = 0
    for j in range(n):
        key = np.int64(unit_key(shorter[j]) & _CODE_POINT)
        h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while table[h] >= 0 and (table[h] >> 32) != key:
            h = (h + 1) & mask
        if table[h] < 0:
            table[h] = (key << 32) | distinct
            distinct += 1
        text[j] = table[h] & 0xFFFFFFFF
    start = np.zeros(distinct + 1, np.int32)
    for j in range(n):
        start[text[j] + 1] += 1
    for d in range(distinct):
        start[d + 1] += start[d]
    fill = start[:distinct].copy()
    positions = np.empty(n, np.int32)
    for j in range(n):
        positions[fill[text[j]]] = j
        fill[text[j]] += 1
    m = longer.shape[0]
    first = np.zeros(m, np.int32)
    last = np.zeros(m, np.int32)
    number = np.full(m, -1, np.int32)
    words = 0
    for i in range(m):
        key = np.int64(unit_key(longer[i]) & _CODE_POINT)
        h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while table[h] >= 0:
            if (table[h] >> 32) == key:
                number[i] = table[h] & 0xFFFFFFFF
                first[i] = start[number[i]]
                last[i] = start[number[i] + 1]
                break
            h = (h + 1) & mask
        words += _ends(longer[i])
    return text, positions, first, last, number, words


@njit(cache=True, nogil=True)
def kept_eojeol(longer, shorter, need=0):
    """The most eojeol of ``longer`` whose characters are all kept, in order, in ``shorter``
    (character units of :func:`neardup.text.units.lcs_units`; see the module docstring). With
    ``need`` > 0 the value is exact when it reaches ``need``, else some value below ``need``
    (the search stops once ``need`` is out of reach). Time O(W · (K − max(need, g + 1) + 1) · w̄ ·
    log n) plus O(m + n) expected, memory O(m + n): W words and m characters of ``longer``, w̄
    their mean length, n units of ``shorter``, K the words whose characters all occur in
    ``shorter`` (an upper bound), g the most that a greedy pass keeps (a lower bound). A
    character that follows its predecessor's match in ``shorter`` costs O(1), not a binary
    search, so a near-copy costs about O(W · (K − g) · w̄).
    """
    index = _character_index(longer, shorter)
    text, positions, first, last, number, words = index
    m = longer.shape[0]
    far = shorter.shape[0] + 1
    # A word with a character that shorter lacks is never kept: the words without one bound
    # the count from above, and the search below passes over the others. (Whether a word
    # embeds at all, a binary search a character, made a fifth of a Korean near-duplicate's
    # time for a bound that was rarely lower.)
    keepable = np.zeros(words, np.bool_)
    present = True
    w = 0
    for i in range(m):
        present &= first[i] < last[i]
        if _ends(longer[i]):
            keepable[w] = present
            present = True
            w += 1
    possible = np.int64(keepable.sum())
    if possible < need:
        return possible
    # Words taken greedily, each near where the last kept one ends: a count that the best
    # choice reaches, so the search below may drop every state that cannot beat it (on a
    # near-duplicate it keeps all words but a few, and the search is a narrow band). A pass
    # that took each word wherever it first embeds kept no more on 99.7 % of heavy_200k's
    # Korean near-duplicates (a changed word often embeds far ahead, and taking it there
    # loses every word between); where it kept more, the search finds those words too, in a
    # wider band. The search looks only for more words than the pass keeps, which most
    # near-duplicates do not have (one state a word fewer); stopped short, it returns best +
    # words left, an upper bound of what is kept, so then the pass's count.
    greedy = _greedy(longer, index, far)
    if greedy == possible:
        return greedy
    need = max(need, greedy + 1)
    # reach[c]: the shortest prefix of shorter that c of the words so far embed in.
    reach = np.full(words + 1, far, np.int64)
    reach[0] = 0
    best = 0
    start = 0
    w = 0
    for i in range(m):
        if not _ends(longer[i]):
            continue
        if keepable[w]:
            # A count below `low` cannot reach `need` with the keepable words from this one on.
            low = max(0, need - possible)
            from_at = -1
            end = far
            for c in range(best, low - 1, -1):
                if reach[c] != from_at:  # states at one position embed the word alike
                    from_at = reach[c]
                    end = _embed(start, i + 1, from_at, first, last, positions, far, text, number)
                if end < reach[c + 1]:
                    reach[c + 1] = end
            if reach[best + 1] < far:
                best += 1
            possible -= 1
            if best + possible < need:
                return best + possible
        w += 1
        start = i + 1
    return best


@njit(inline="always")
def _word_count(units):
    words = 0
    for i in range(units.shape[0]):
        words += _ends(units[i])
    return words


@njit(inline="always")
def _needed_words(words, threshold):
    return np.int64(np.ceil(threshold * words - 1e-9)) if threshold > 0.0 else 0


#: Word lengths (characters) that :func:`eojeol_floor` counts one by one; longer words are few
#: and sorted.
_SHORT_WORDS = 64


@njit(cache=True, nogil=True)
def eojeol_floor(units, threshold):
    """The characters of the ``ceil(threshold · W)`` shortest of the W eojeol of a Korean
    text's units: keeping that many of its words keeps at least that many of its characters,
    so a text that shares fewer characters with it cannot reach ``threshold`` against it.
    O(W) in one pass (a count of the words of each length, where a sort of the lengths took a
    sixth of a Korean near-duplicate's time), plus a sort of the words of
    :data:`_SHORT_WORDS` characters or more when they are needed."""
    counts = np.zeros(_SHORT_WORDS, np.int64)
    longer = np.empty(units.shape[0] // _SHORT_WORDS + 1, np.int64)
    k = 0
    run = 0
    for i in range(units.shape[0]):
        run += 1
        if _ends(units[i]):
            if run < _SHORT_WORDS:
                counts[run] += 1
            else:
                longer[k] = run
                k += 1
            run = 0
    left = _needed_words(counts.sum() + k, threshold)
    floor = 0
    for length in range(1, _SHORT_WORDS):
        taken = min(left, counts[length])
        floor += taken * length
        left -= taken
    if left > 0:
        longer = np.sort(longer[:k])
        floor += longer[:left].sum()
    return floor


_BAG = 64  # buckets of the character bag of :func:`_shared_characters`


@njit(inline="always")
def _shared_characters(x, y):
    """An upper bound of the characters a common subsequence of ``x`` and ``y`` can match:
    Σ over 64 buckets of their unit keys of the fewer units of the two. O(|x| + |y|)."""
    bag = np.zeros(_BAG, np.int64)
    for i in range(x.shape[0]):
        bag[(unit_key(x[i]) * _GOLDEN) >> np.uint64(58)] += 1
    shared = 0
    for j in range(y.shape[0]):
        k = (unit_key(y[j]) * _GOLDEN) >> np.uint64(58)
        if bag[k] > 0:
            bag[k] -= 1
            shared += 1
    return shared


@njit(inline="always")
def _direction(longer, shorter, threshold, shared):
    """kept(longer, shorter) / words(longer); with ``threshold`` > 0, first the floor of the
    longer text's characters against ``shared`` (:func:`eojeol_floor`): a pair it rules out
    gets (need − 1) / words, a value below the threshold."""
    words = _word_count(longer)
    need = _needed_words(words, threshold)
    if need > 0 and eojeol_floor(longer, threshold) > shared:
        return (need - 1) / words
    return kept_eojeol(longer, shorter, need) / words


@njit(inline="always")
def eojeol_resemblance(x, y, threshold=0.0):
    """kept(L, S) / words(L) of two Korean texts' units (both :func:`by_eojeol`), L the one of
    more characters, the lower of both directions when they have as many. With ``threshold``
    > 0, exact at or above it, some value below it otherwise: the characters of the longer
    text's ``ceil(threshold · words)`` shortest words must fit in the characters the two can
    share (:func:`eojeol_floor`, :func:`_shared_characters`), then the search stops once the
    threshold is out of reach (:func:`kept_eojeol`)."""
    shared = _shared_characters(x, y) if threshold > 0.0 else 0
    if x.shape[0] > y.shape[0]:
        return _direction(x, y, threshold, shared)
    if y.shape[0] > x.shape[0]:
        return _direction(y, x, threshold, shared)
    forward = _direction(x, y, threshold, shared)
    if threshold > 0.0 and forward < threshold:
        return forward
    return min(forward, _direction(y, x, threshold, shared))


@njit(cache=True, nogil=True)
def _eojeol_rows_kernel(offsets, codes, out):
    for d in range(out.shape[0]):
        out[d] = by_eojeol(codes[offsets[d] : offsets[d + 1]])


def eojeol_rows(offsets: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Which rows of a CSR of LCS units are Korean texts, measured in eojeol (bool[n]). O(n).

    Example:
        >>> from neardup.text.units import lcs_units
        >>> eojeol_rows(*lcs_units(["한 글", "a b", "中文"], "auto")).tolist()
        [True, False, False]
    """
    out = np.zeros(np.asarray(offsets).shape[0] - 1, np.bool_)
    _eojeol_rows_kernel(np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(codes), out)
    return out


@njit(cache=True, nogil=True)
def _eojeol_pairs_kernel(offsets, codes, a, b):
    out = np.full(a.shape[0], np.nan)
    for q in range(a.shape[0]):
        x = codes[offsets[a[q]] : offsets[a[q] + 1]]
        y = codes[offsets[b[q]] : offsets[b[q] + 1]]
        if by_eojeol(x) and by_eojeol(y):
            out[q] = eojeol_resemblance(x, y)
    return out


def eojeol_pairs(
    offsets: np.ndarray, codes: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """The exact eojeol resemblance (float64) of texts ``a[p]`` and ``b[p]`` of the CSR
    ``(offsets, codes)`` of :func:`neardup.text.units.lcs_units` (unit ``"auto"`` or
    ``"eojeol"``), NaN for a pair whose texts are not both Korean (measured otherwise).
    Cost per pair: see :func:`kept_eojeol`.

    Example:
        >>> from neardup.text.units import lcs_units
        >>> o, c = lcs_units(["가 나 다 라 마", "가 나 다 라 바", "a b"], "auto")
        >>> eojeol_pairs(o, c, np.array([0, 0]), np.array([1, 2])).tolist()
        [0.8, nan]
    """
    return _eojeol_pairs_kernel(
        np.ascontiguousarray(offsets, np.int64),
        np.ascontiguousarray(codes),
        np.ascontiguousarray(a, np.int64),
        np.ascontiguousarray(b, np.int64),
    )
