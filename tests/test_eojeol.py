"""Korean measured in eojeol (neardup.eojeol and its use by neardup.lcs): the kernel against a
brute force over every choice of words, labelled examples written by the rules of
NEAR_DUPLICATE.md, and the bounds that reject pairs before verification."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.eojeol import eojeol_floor, eojeol_pairs, kept_eojeol
from neardup.index.lcs_bound import lcs_upper_bounds, unit_sketches
from neardup.lcs import count_sketches, lcs_pairs, lcs_pairs_one_to_many, possible_pairs
from neardup.text import normalize
from neardup.text.units import lcs_unit_sketches, lcs_units
from neardup.verify import parse_verify


def _subsequence(small: str, large: str) -> bool:
    rest = iter(large)
    return all(ch in rest for ch in small)


def _kept(words: list[str], other: str) -> int:
    """The most words (in order) whose concatenation is a subsequence of ``other``: every
    choice tried, largest first."""
    for size in range(len(words), 0, -1):
        for chosen in itertools.combinations(words, size):
            if _subsequence("".join(chosen), other):
                return size
    return 0


def _lcs(x: str, y: str) -> int:
    table = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i, cx in enumerate(x):
        for j, cy in enumerate(y):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if cx == cy else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def reference(a: str, b: str) -> tuple[float, float]:
    """``(character resemblance, eojeol resemblance)`` of two Korean texts by the rule of
    docs/korean.md, in plain Python: the canonical words, the characters without spaces."""
    wa, wb = normalize(a).split(), normalize(b).split()
    ca, cb = "".join(wa), "".join(wb)
    char = _lcs(ca, cb) / max(len(ca), len(cb))
    forward = _kept(wa, cb) / len(wa)
    backward = _kept(wb, ca) / len(wb)
    if len(ca) != len(cb):
        return char, forward if len(ca) > len(cb) else backward
    return char, min(forward, backward)


def decided(a: str, b: str) -> float:
    """What dedup's verification gives the pair, exactly."""
    o, c = lcs_units([a, b], "auto")
    return float(lcs_pairs(o, c, np.array([0]), np.array([1]))[0])


SYLLABLES = st.sampled_from(["가", "나", "다", "라", "마"])
WORD = st.lists(SYLLABLES, min_size=1, max_size=3).map("".join)
TEXT = st.lists(WORD, min_size=1, max_size=7).map(" ".join)


@st.composite
def edited(draw):
    """A Korean text and a copy with a few words changed, respaced or dropped."""
    words = draw(st.lists(WORD, min_size=1, max_size=7))
    other = list(words)
    for _ in range(draw(st.integers(0, 3))):
        k = draw(st.integers(0, len(other) - 1))
        kind = draw(st.sampled_from(["change", "join", "split", "drop", "add"]))
        if kind == "change":
            other[k] = draw(WORD)
        elif kind == "join" and k + 1 < len(other):
            other[k : k + 2] = [other[k] + other[k + 1]]
        elif kind == "split" and len(other[k]) > 1:
            other[k : k + 1] = [other[k][:1], other[k][1:]]
        elif kind == "drop" and len(other) > 1:
            del other[k]
        elif kind == "add":
            other.insert(k, draw(WORD))
    return " ".join(words), draw(st.sampled_from([" ", "\n"])).join(other)


PAIRS = st.one_of(st.tuples(TEXT, TEXT), edited())


@settings(max_examples=400, deadline=None)
@given(PAIRS)
def test_eojeol_kernel_equals_the_brute_force(pair):
    a, b = pair
    o, c = lcs_units([a, b], "auto")
    got = eojeol_pairs(o, c, np.array([0, 1]), np.array([1, 0]))
    want = reference(a, b)[1]
    assert got.tolist() == pytest.approx([want, want])


@settings(max_examples=400, deadline=None)
@given(PAIRS, st.sampled_from([0.5, 0.7, 0.8, 0.9, 1.0]))
def test_verification_of_korean_texts_is_the_eojeol_resemblance(pair, threshold):
    a, b = pair
    want = reference(a, b)[1]
    assert decided(a, b) == pytest.approx(want)
    o, c = lcs_units([a, b], "auto")
    fast = lcs_pairs(o, c, np.array([0, 1]), np.array([1, 0]), threshold)
    assert ((fast >= threshold) == (want >= threshold - 1e-12)).all()
    if want >= threshold:
        assert fast.tolist() == pytest.approx([want, want])
    many = lcs_pairs_one_to_many(o, c, o, c, np.array([0, 1]), np.array([1, 0]), threshold)
    assert ((many >= threshold) == (fast >= threshold)).all()
    exact = lcs_pairs_one_to_many(o, c, o, c, np.array([0]), np.array([1]), None, 0)
    assert exact.tolist() == pytest.approx([want])


@settings(max_examples=400, deadline=None)
@given(PAIRS, st.sampled_from([0.5, 0.7, 0.8, 0.9]))
def test_bounds_before_verification_stay_upper_bounds(pair, threshold):
    """The length ratio, the count sketches (dedup, Spark) and the unit sketches (index) never
    rule out a pair that the brute force accepts."""
    a, b = pair
    if reference(a, b)[1] < threshold:
        return
    sizes, sketches = lcs_unit_sketches([a, b], "auto")
    assert possible_pairs(sizes, sketches, np.array([0]), np.array([1]), threshold).all()
    o, c = lcs_units([a, b], "auto")
    marks = unit_sketches(o, c)
    bound = lcs_upper_bounds(o, c, np.array([0]), sizes[1:], marks, np.array([1]), threshold)
    assert bound[0] >= threshold


# Characters drawn from all of Hangul as well as from a few: the shorter text's characters are
# numbered by a hash table (eojeol._character_index), which these make probe past collisions.
WIDE_SYLLABLES = st.one_of(SYLLABLES, st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3))
WIDE_WORD = st.lists(WIDE_SYLLABLES, min_size=1, max_size=4).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(WIDE_WORD, min_size=1, max_size=7), st.lists(WIDE_WORD, min_size=1, max_size=7))
def test_eojeol_kernel_over_many_characters_equals_the_brute_force(a, b):
    a, b = " ".join(a), " ".join(b)
    o, c = lcs_units([a, b], "auto")
    got = eojeol_pairs(o, c, np.array([0, 1]), np.array([1, 0]))
    assert got.tolist() == pytest.approx([reference(a, b)[1]] * 2)


def test_every_character_distinct():
    """3,000 distinct characters, one each: a dropped word keeps none of its characters, so
    kept = the words left, whatever the table's collisions."""
    chars = [chr(0xAC00 + 3 * k) for k in range(3000)]
    words = ["".join(chars[k : k + 3]) for k in range(0, 3000, 3)]
    dropped = set(range(0, 1000, 7))
    shorter = " ".join(w for k, w in enumerate(words) if k not in dropped)
    o, c = lcs_units([" ".join(words), shorter], "auto")
    kept = 1000 - len(dropped)
    assert kept_eojeol(c[o[0] : o[1]], c[o[1] : o[2]]) == kept
    assert kept_eojeol(c[o[0] : o[1]], c[o[1] : o[2]], 800) == kept
    assert eojeol_pairs(o, c, np.array([0]), np.array([1]))[0] == pytest.approx(kept / 1000)


@settings(max_examples=200, deadline=None)
@given(PAIRS, st.integers(0, 8))
def test_kept_eojeol_is_exact_at_need_and_below_it_otherwise(pair, need):
    _check_kept_eojeol(*pair, need)


def _check_kept_eojeol(a: str, b: str, need: int) -> None:
    """kept_eojeol(a, b, need) against the brute force: exact at or above ``need``, else below."""
    o, c = lcs_units([a, b], "auto")
    x, y = c[o[0] : o[1]], c[o[1] : o[2]]
    want = _kept(normalize(a).split(), normalize(b).replace(" ", ""))
    got = kept_eojeol(x, y, need)
    assert got == want if want >= need else got < need


@st.composite
def long_edited(draw):
    """A text of 8–16 words and a copy with up to four edits, one of them possibly a passage
    of new words inserted: the one- and two-pass greedy counts that narrow the search differ
    from the best choice here (a changed word embeds far ahead)."""
    words = draw(st.lists(WORD, min_size=8, max_size=16))
    other = list(words)
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.integers(0, len(other) - 1))
        kind = draw(st.sampled_from(["change", "drop", "passage", "join"]))
        if kind == "change":
            other[k] = draw(WORD)
        elif kind == "drop" and len(other) > 1:
            del other[k]
        elif kind == "passage":
            other[k:k] = draw(st.lists(WORD, min_size=2, max_size=6))
        elif kind == "join" and k + 1 < len(other):
            other[k : k + 2] = [other[k] + other[k + 1]]
    return " ".join(words), " ".join(other)


@settings(max_examples=300, deadline=None)
@given(long_edited(), st.integers(0, 16))
def test_kept_eojeol_of_longer_edited_texts(pair, need):
    _check_kept_eojeol(*pair, need)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 3) | st.integers(60, 70), min_size=1, max_size=40),
    st.floats(0.0, 1.0),
)
def test_eojeol_floor_is_the_characters_of_the_shortest_words(lengths, threshold):
    # Words of 64 characters and more are counted apart from the shorter ones.
    o, c = lcs_units([" ".join("가" * length for length in lengths)], "auto")
    need = int(np.ceil(threshold * len(lengths) - 1e-9)) if threshold > 0 else 0
    assert eojeol_floor(c[o[0] : o[1]], threshold) == sum(sorted(lengths)[:need])


BASE = "이 패키지는 데비안 시스템에서 오디오 파일을 쉽게 변환하는 도구를 제공합니다"
LABELLED = [
    # (other text, near-duplicate of BASE by NEAR_DUPLICATE.md)
    ("이 패키지는 데비안시스템에서 오디오파일을 쉽게 변환 하는 도구를 제공 합니다", True),
    ("이 패키지는 데비안 시스\n템에서 오디오 파일을 쉽게 변환하는\n도구를 제공합니다.", True),
    ("이 패키지는 데비안 시스템에서 오디오 파일로 쉽게 변환하는 도구를 제공합니다", True),
    ("이 패키지가 데비안 시스템에서 오디오 파일로 쉽게 변환하는 도구를 제공합니다", True),
    ("이 패키지는 데비안 시스템에서 비디오 파일을 쉽게 변환하는 도구를 제공합니다", True),
    ("이 패키지는 우분투 시스템에서 비디오 파일을 쉽게 변환하는 도구를 제공합니다", True),
    ("이 패키지는 데비안 시스템에서 오디오 파일을 빠르게 변환하는 도구를 제공합니다", True),
    # three changed particles, three changed words: 7 of 10 kept
    ("이 패키지가 데비안 시스템의 오디오 파일로 쉽게 변환하는 도구를 제공합니다", False),
    ("이 패키지는 우분투 시스템에서 비디오 파일을 빠르게 변환하는 도구를 제공합니다", False),
    ("이 패키지는 데비안 시스템에서 비디오 파일을 빠르게 변환하는 프로그램을 제공합니다", False),
    # the same syllables, other words; a text with the other plus as much new text
    ("데비안 시스템 도구는 오디오 변환 파일을 쉽게 제공하는 이 패키지입니다", False),
    (BASE + " 이 도구는 명령행에서 쓰며 여러 형식의 파일을 한꺼번에 처리할 수 있습니다", False),
]


@pytest.mark.parametrize(("other", "near"), LABELLED)
def test_labelled_korean_examples(other, near):
    value = decided(BASE, other)
    assert (value >= 0.8) == near, value
    assert value == pytest.approx(reference(BASE, other)[1])


def test_character_rule_accepted_what_the_definition_rejects():
    """Three changed particles keep 29 of 33 syllables, but 7 of 10 eojeol."""
    other = LABELLED[7][0]
    char, word = reference(BASE, other)
    assert char == pytest.approx(29 / 33) and word == pytest.approx(0.7)
    o, c = lcs_units([BASE, other], "syllable")
    assert lcs_pairs(o, c, np.array([0]), np.array([1]))[0] == pytest.approx(char)


def test_mixed_texts():
    """English words and Hanja inside a Korean text are eojeol like the others; a Korean text
    against one without Hangul is measured by characters."""
    base = "python3-numpy 패키지는 파이썬 3 용 수치 계산 모듈을 제공합니다"
    assert decided(base, base.replace("numpy", "scipy")) == pytest.approx(0.9)
    assert decided(base, base.replace("numpy", "scipy").replace("3 용", "2 용")) == 0.8
    hanja = "이 文書는 韓國語 文書입니다"
    assert decided(hanja, "이 문서는 韓國語 文書입니다") == pytest.approx(0.75)
    # Chinese stays by characters: one character of eleven changed.
    assert decided("我们今天在学校学习中文", "我们今天在学校学习日文") == pytest.approx(10 / 11)
    o, c = lcs_units(["가나 中文", "中文"], "auto")
    assert np.isnan(eojeol_pairs(o, c, np.array([0]), np.array([1]))[0])
    assert lcs_pairs(o, c, np.array([0]), np.array([1]))[0] == pytest.approx(0.5)


def test_a_long_changed_word_is_one_word():
    """Nine one-syllable words kept and a long one changed: 9 of 23 characters, but 9 of 10
    words, and the bounds before verification (lengths, count and unit sketches) let the
    pair through."""
    a = "가 나 다 라 마 바 사 아 자 차카타파하거너더러머"
    b = "가 나 다 라 마 바 사 아 자 호고노도로모보소오"
    char, word = reference(a, b)
    assert word == pytest.approx(0.9) and char < 0.5
    assert decided(a, b) == pytest.approx(0.9)
    sizes, sketches = lcs_unit_sketches([a, b], "auto")
    assert possible_pairs(sizes, sketches, np.array([0]), np.array([1]), 0.8).all()
    # A Korean text's sketches say nothing; other texts' stay what they were.
    assert (sketches == 255).all()
    o, c = lcs_units([a, b], "auto")
    assert (unit_sketches(o, c) == np.uint64(2**64 - 1)).all()
    o, c = lcs_units(["a b a", "中文"], "auto")
    assert count_sketches(o, c).max() == 2 and unit_sketches(o, c)[0].any()


def test_verification_prepares_eojeol_units():
    v = parse_verify("lcs:0.8")
    offsets, values = v.prepare([BASE, LABELLED[7][0]], "char:5", "xxh")
    got = v.similarity(offsets, values, np.array([0]), np.array([1]), exact=True)
    assert got.tolist() == pytest.approx([0.7])
