"""Tests for neardup.similarity: the pairwise measures against plain Python statements of them."""

from __future__ import annotations

import math
import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.minhash import jaccard_estimate, minhash
from neardup.simhash import hamming_distance, simhash
from neardup.similarity import (
    COMPARE_KEYS,
    UNITS,
    compare,
    containment,
    containment_sorted,
    cosine,
    hamming,
    intersection_size,
    jaccard,
    jaccard_sorted,
    lcs_length,
    lcs_length_ids,
    lcs_resemblance,
    levenshtein,
    levenshtein_ids,
    levenshtein_similarity,
    minhash_jaccard,
    to_units,
)
from neardup.text import normalize, shingles

# --------------------------------------------------------------------------- references


def ref_units(text: str, unit: str) -> list[str]:
    """The units as strings, stated directly (jamo through unicodedata, not arithmetic)."""
    if unit == "char":
        return list(text)
    if unit == "word":
        return text.split()
    letters = list("".join(text.split()))
    if unit == "syllable":
        return letters
    out: list[str] = []
    for ch in letters:
        if "\uac00" <= ch <= "\ud7a3":
            out.extend(unicodedata.normalize("NFD", ch))
        else:
            out.append(ch)
    return out


def ref_levenshtein(x, y) -> int:
    n, m = len(x), len(y)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(
                d[i - 1][j] + 1,
                d[i][j - 1] + 1,
                d[i - 1][j - 1] + (x[i - 1] != y[j - 1]),
            )
    return d[n][m]


def ref_lcs(x, y) -> int:
    n, m = len(x), len(y)
    t = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if x[i - 1] == y[j - 1]:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    return t[n][m]


def ref_cosine(x, y) -> float:
    if not x or not y:
        return 1.0 if not x and not y else 0.0
    ca, cb = Counter(x), Counter(y)
    dot = sum(ca[u] * cb[u] for u in ca)
    norm_a = math.sqrt(sum(v * v for v in ca.values()))
    norm_b = math.sqrt(sum(v * v for v in cb.values()))
    return dot / (norm_a * norm_b)


def ref_jaccard(sa: set, sb: set) -> float:
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


# A small alphabet so that random strings share units; Hangul with and without a final consonant,
# Latin in both cases, CJK ideographs, spaces and punctuation (a separator after normalisation).
ALPHABET = list("가각간한헌허학교에로 abcAB  中文字,")
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=30)
wide_texts = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4E40),
        st.sampled_from(list("abcxyz ")),
    ),
    max_size=30,
)
units = st.sampled_from(UNITS)

# --------------------------------------------------------------------------- units


def test_to_units_char_and_syllable():
    assert to_units("Ab, 한글", "char").tolist() == [ord(c) for c in "ab 한글"]
    assert to_units("Ab, 한글", "char", normalized=False).tolist() == [ord(c) for c in "Ab, 한글"]
    assert to_units("Ab, 한글", "syllable").tolist() == [ord(c) for c in "ab한글"]
    assert to_units("  ", "char").dtype == np.int64
    assert to_units("", "word").shape == (0,)


def test_to_units_jamo_arithmetic():
    assert to_units("한", "jamo").tolist() == [0x1112, 0x1161, 0x11AB]
    assert to_units("가", "jamo").tolist() == [0x1100, 0x1161]
    assert to_units("힣", "jamo").tolist() == [0x1112, 0x1175, 0x11C2]
    assert to_units("a가 b", "jamo").tolist() == [ord("a"), 0x1100, 0x1161, ord("b")]


@settings(deadline=None, max_examples=150)
@given(wide_texts, units)
def test_to_units_matches_reference(text, unit):
    canon = normalize(text)
    expected = ref_units(canon, unit)
    got = to_units(text, unit)
    assert len(got) == len(expected)
    if unit != "word":
        assert got.tolist() == [ord(c) for c in expected]
    else:
        # Equal words get equal ids and (barring a 64-bit collision) different words differ.
        ids = dict(zip(expected, got.tolist()))
        assert [ids[w] for w in expected] == got.tolist()
        assert len(set(ids.values())) == len(ids)


def test_bad_unit_is_rejected():
    message = "unit must be one of char, word, jamo, syllable; got 'letter'"
    with pytest.raises(ValueError, match=message):
        levenshtein("a", "b", unit="letter")
    with pytest.raises(ValueError, match="unit must be one of"):
        to_units("a", "eojeol")
    for fn in (lcs_length, lcs_resemblance, cosine, levenshtein_similarity):
        with pytest.raises(ValueError, match="got 'x'"):
            fn("a", "b", unit="x")


def test_bad_max_distance_is_rejected():
    with pytest.raises(ValueError, match="max_distance must be None or an integer >= 0; got -1"):
        levenshtein("a", "b", max_distance=-1)
    with pytest.raises(ValueError, match="max_distance"):
        levenshtein("a", "b", max_distance=1.5)


# --------------------------------------------------------------------------- edit distance / LCS


@settings(deadline=None, max_examples=200)
@given(texts, texts, units, st.booleans())
def test_levenshtein_and_lcs_match_full_table(a, b, unit, normalized):
    ta, tb = (normalize(a), normalize(b)) if normalized else (a, b)
    x, y = ref_units(ta, unit), ref_units(tb, unit)
    d = ref_levenshtein(x, y)
    common = ref_lcs(x, y)
    assert levenshtein(a, b, unit=unit, normalized=normalized) == d
    assert lcs_length(a, b, unit=unit, normalized=normalized) == common
    union = len(x) + len(y) - common
    expected = 1.0 if union == 0 else common / union
    assert lcs_resemblance(a, b, unit=unit, normalized=normalized) == pytest.approx(expected)


@settings(deadline=None, max_examples=150)
@given(wide_texts, wide_texts, units)
def test_levenshtein_and_lcs_wide_alphabet(a, b, unit):
    x, y = ref_units(normalize(a), unit), ref_units(normalize(b), unit)
    assert levenshtein(a, b, unit=unit) == ref_levenshtein(x, y)
    assert lcs_length(a, b, unit=unit) == ref_lcs(x, y)


@settings(deadline=None, max_examples=200)
@given(texts, texts, st.integers(0, 12))
def test_levenshtein_max_distance_is_capped_exact_value(a, b, k):
    d = ref_levenshtein(ref_units(normalize(a), "char"), ref_units(normalize(b), "char"))
    assert levenshtein(a, b, max_distance=k) == min(d, k + 1)


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.integers(0, 3), max_size=25),
    st.lists(st.integers(0, 3), max_size=25),
    st.integers(0, 30),
)
def test_id_kernels_on_small_alphabet(x, y, k):
    # Four symbols make long common runs, prefixes and suffixes: the trimming paths get exercised.
    xa, ya = np.array(x, dtype=np.int64), np.array(y, dtype=np.int64)
    d = ref_levenshtein(x, y)
    assert levenshtein_ids(xa, ya) == d
    assert levenshtein_ids(xa, ya, max_distance=k) == min(d, k + 1)
    assert lcs_length_ids(xa, ya) == ref_lcs(x, y)


@settings(deadline=None, max_examples=100)
@given(texts, texts, units)
def test_symmetry(a, b, unit):
    assert levenshtein(a, b, unit=unit) == levenshtein(b, a, unit=unit)
    assert lcs_length(a, b, unit=unit) == lcs_length(b, a, unit=unit)
    assert cosine(a, b, unit=unit) == pytest.approx(cosine(b, a, unit=unit))
    assert jaccard(a, b, "char:2") == jaccard(b, a, "char:2")
    assert hamming(a, b, "char:2") == hamming(b, a, "char:2")


@settings(deadline=None, max_examples=120)
@given(texts, texts, texts, units)
def test_levenshtein_triangle_inequality(a, b, c, unit):
    ab = levenshtein(a, b, unit=unit)
    bc = levenshtein(b, c, unit=unit)
    ac = levenshtein(a, c, unit=unit)
    assert ac <= ab + bc


@settings(deadline=None, max_examples=100)
@given(texts, units)
def test_identity(a, unit):
    assert levenshtein(a, a, unit=unit) == 0
    assert lcs_resemblance(a, a, unit=unit) == 1.0
    assert levenshtein_similarity(a, a, unit=unit) == 1.0
    assert cosine(a, a, unit=unit) == pytest.approx(1.0)
    assert jaccard(a, a) == 1.0
    assert hamming(a, a) == 0
    assert minhash_jaccard(a, a, num_perm=16) == 1.0


def test_jamo_syllable_and_word_units():
    assert levenshtein("한", "헌", unit="jamo") == 1
    assert levenshtein("한", "헌", unit="syllable") == 1
    assert levenshtein("각", "가", unit="jamo") == 1  # deletion of the final consonant
    assert levenshtein("각", "가", unit="syllable") == 1
    assert levenshtein("한국", "헌국", unit="char") == 1
    a, b = "나는 어제 학교에 갔다", "나는  어제 학교로 갔다."
    assert levenshtein(a, b, unit="word") == 1  # one eojeol differs
    assert levenshtein(a, b, unit="syllable") == 1  # 에 → 로
    assert levenshtein(a, b, unit="jamo") == 2  # 에 → 로
    assert lcs_length(a, b, unit="word") == 3
    assert lcs_resemblance(a, b, unit="word") == pytest.approx(3 / 5)
    # Spacing errors: the syllable sequence ignores them, the eojeol sequence does not.
    assert levenshtein("학교에 갔다", "학교에갔다", unit="syllable") == 0
    assert levenshtein("학교에 갔다", "학교에갔다", unit="word") == 2
    assert levenshtein("학교에 갔다", "학교에갔다", unit="char") == 1


def test_normalized_flag():
    assert levenshtein("Hello, World", "hello world") == 0
    assert levenshtein("Hello, World", "hello world", normalized=False) == 3
    assert levenshtein("a  b", "a b", unit="word", normalized=False) == 0


def test_empty_documents():
    assert levenshtein("", "") == 0
    assert levenshtein("", "abc") == 3
    assert levenshtein("!!", "a b", unit="word") == 2
    assert lcs_resemblance("", "") == 1.0
    assert lcs_resemblance("", "a b") == 0.0
    assert levenshtein_similarity("", "") == 1.0
    assert levenshtein_similarity("", "ab") == 0.0
    assert cosine("", "") == 1.0
    assert cosine("", "a") == 0.0
    assert jaccard("", "") == 1.0
    assert jaccard("...", "a b c") == 0.0
    assert containment("", "") == 1.0
    assert containment("", "a b c") == 0.0
    assert containment("a b c", "") == 0.0


def test_long_inputs_run_in_linear_memory():
    rng = np.random.default_rng(7)
    alphabet = np.array(list("abcdefgh 가나다라"))
    a = "".join(rng.choice(alphabet, 20_000))
    b = "".join(rng.choice(alphabet, 20_000))
    n, m = len(to_units(a, "char")), len(to_units(b, "char"))
    d = levenshtein(a, b)
    assert abs(n - m) <= d <= max(n, m)
    common = lcs_length(a, b, unit="char")
    assert 0 < common <= min(n, m)
    assert n + m - 2 * common >= d  # insert/delete-only distance bounds the edit distance
    # The band stops early: far more than 50 edits apart.
    assert levenshtein(a, b, max_distance=50) == 51


# --------------------------------------------------------------------------- cosine


@settings(deadline=None, max_examples=200)
@given(texts, texts, units)
def test_cosine_matches_counter(a, b, unit):
    x, y = ref_units(normalize(a), unit), ref_units(normalize(b), unit)
    got = cosine(a, b, unit=unit)
    assert got == pytest.approx(ref_cosine(x, y))
    assert 0.0 <= got <= 1.0


def test_cosine_examples():
    assert cosine("a a b", "a b b") == pytest.approx(0.8)
    assert cosine("b a", "a b") == 1.0
    assert cosine("a b", "c d") == 0.0
    assert cosine("가 나 다", "다 나 가") == 1.0


# --------------------------------------------------------------------------- shingle sets


@settings(deadline=None, max_examples=200)
@given(texts, texts, st.sampled_from(["word:1", "word:2", "word:3", "char:1", "char:3"]))
def test_jaccard_and_containment_match_python_sets(a, b, shingle):
    sa, sb = set(shingles(a, shingle)), set(shingles(b, shingle))
    assert jaccard(a, b, shingle) == pytest.approx(ref_jaccard(sa, sb))
    expected = (1.0 if not sb else 0.0) if not sa else (0.0 if not sb else len(sa & sb) / len(sa))
    assert containment(a, b, shingle) == pytest.approx(expected)


@settings(deadline=None, max_examples=200)
@given(
    st.sets(st.integers(0, 2**64 - 1), max_size=30),
    st.sets(st.integers(0, 2**64 - 1), max_size=30),
)
def test_sorted_array_functions(xs, ys):
    x = np.array(sorted(xs), dtype=np.uint64)
    y = np.array(sorted(ys), dtype=np.uint64)
    assert intersection_size(x, y) == len(xs & ys)
    assert jaccard_sorted(x, y) == pytest.approx(ref_jaccard(xs, ys))
    if xs and ys:
        assert containment_sorted(x, y) == pytest.approx(len(xs & ys) / len(xs))


@settings(deadline=None, max_examples=200)
@given(st.sets(st.integers(0, 40), max_size=20), st.sets(st.integers(0, 40), max_size=20))
def test_sorted_array_functions_overlapping(xs, ys):
    x = np.array(sorted(xs), dtype=np.uint64)
    y = np.array(sorted(ys), dtype=np.uint64)
    assert jaccard_sorted(x, y) == pytest.approx(ref_jaccard(xs, ys))


def test_jaccard_sorted_rejects_unsorted():
    with pytest.raises(ValueError, match="x must be sorted"):
        jaccard_sorted(np.array([3, 1], dtype=np.uint64), np.array([1], dtype=np.uint64))
    with pytest.raises(ValueError, match="y must be sorted"):
        containment_sorted(np.array([1], dtype=np.uint64), np.array([2, 2], dtype=np.uint64))


def test_containment_one_inside_the_other():
    short = "학교에 갔다 그리고 집에 왔다"
    long = "어제는 비가 왔다 " + short + " 오늘은 맑다"
    assert containment(short, long) == 1.0
    assert containment(long, short) < 1.0
    assert jaccard(short, long) < 1.0


# --------------------------------------------------------------------------- signatures


@settings(deadline=None, max_examples=100)
@given(texts, texts, st.sampled_from(["word:3", "char:2"]), st.sampled_from(["set", "tf"]))
def test_hamming_is_simhash_distance(a, b, shingle, weights):
    expected = int(
        hamming_distance(
            simhash([a], shingle, weights=weights)[0], simhash([b], shingle, weights=weights)[0]
        )
    )
    assert hamming(a, b, shingle, weights=weights) == expected
    assert 0 <= expected <= 64


@settings(deadline=None, max_examples=50)
@given(texts, texts)
def test_minhash_jaccard_is_signature_estimate(a, b):
    sa = minhash([a], num_perm=32, shingle="char:2", seed=3)[0]
    sb = minhash([b], num_perm=32, shingle="char:2", seed=3)[0]
    expected = float(jaccard_estimate(sa, sb))
    assert minhash_jaccard(a, b, num_perm=32, shingle="char:2", seed=3) == expected


def test_minhash_jaccard_close_to_exact():
    a = " ".join(f"w{i}" for i in range(200))
    b = " ".join(f"w{i}" for i in range(50, 250))
    exact = jaccard(a, b, "word:1")  # 150 / 250
    assert exact == pytest.approx(0.6)
    assert abs(minhash_jaccard(a, b, num_perm=512, shingle="word:1") - exact) < 0.1


# --------------------------------------------------------------------------- compare


@settings(deadline=None, max_examples=60)
@given(texts, texts, st.sampled_from(UNITS))
def test_compare_keys_ranges_and_agreement(a, b, unit):
    r = compare(a, b, unit=unit, shingle="char:2", num_perm=32)
    assert tuple(r) == COMPARE_KEYS
    assert isinstance(r["levenshtein"], int) and isinstance(r["hamming"], int)
    assert r["levenshtein"] >= 0
    assert 0 <= r["hamming"] <= 64
    for key in COMPARE_KEYS:
        if key not in ("levenshtein", "hamming"):
            assert isinstance(r[key], float)
            assert 0.0 <= r[key] <= 1.0, key
    assert r["cosine"] == cosine(a, b, unit=unit)
    assert r["levenshtein"] == levenshtein(a, b, unit=unit)
    assert r["levenshtein_similarity"] == levenshtein_similarity(a, b, unit=unit)
    assert r["lcs_resemblance"] == lcs_resemblance(a, b, unit=unit)
    assert r["jaccard"] == jaccard(a, b, "char:2")
    assert r["minhash_jaccard"] == minhash_jaccard(a, b, num_perm=32, shingle="char:2")
    assert r["containment_a_in_b"] == containment(a, b, "char:2")
    assert r["containment_b_in_a"] == containment(b, a, "char:2")
    assert r["hamming"] == hamming(a, b, "char:2")


def test_compare_defaults():
    r = compare("SimHash 계산 방법을 간단히 정리하면", "SimHash 계산 방법을 간단하게 정리하면")
    assert list(r) == list(COMPARE_KEYS)
    assert r["levenshtein"] == 1
    assert r["levenshtein_similarity"] == pytest.approx(1 - 1 / 5)
    assert r["lcs_resemblance"] == pytest.approx(4 / 6)
    assert r["jaccard"] == pytest.approx(1 / 5)  # word:3 — {simhash 계산 방법을} of 5 trigrams
    with pytest.raises(ValueError, match="unit must be one of"):
        compare("a", "b", unit="letters")
