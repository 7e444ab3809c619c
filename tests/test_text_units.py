"""The LCS units of texts (neardup.text.units): they follow the canonical text, auto picks
characters for Hangul, kana and Han and words otherwise, and the counts equal the units."""

from __future__ import annotations

import numpy as np
import pytest
import xxhash
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup.eojeol import EOJEOL_END
from neardup.index.lcs_bound import unit_sketches
from neardup.lcs import count_sketches, lcs_pairs
from neardup.text import Canonical, hash_features, normalize
from neardup.text.units import lcs_unit_counts, lcs_unit_sketches, lcs_unit_summaries, lcs_units


def test_units_follow_the_canonical_text():
    texts = ["고대 전쟁 실시간\n전략 게임", "고대 전\n쟁 실시간전략 게임!", "Ａb,  C"]
    o, c = lcs_units(texts, "syllable")
    for d, text in enumerate(texts):
        assert "".join(map(chr, c[o[d] : o[d + 1]])) == normalize(text).replace(" ", "")
    # Spacing and a mid-word line break change no syllable.
    assert lcs_pairs(o, c, np.array([0]), np.array([1])).tolist() == [1.0]
    ow, cw = lcs_units(texts, "word")
    f = hash_features(texts, "word:1")
    assert ow.tolist() == f.offsets.tolist() and cw.tolist() == f.hashes.tolist()
    assert lcs_pairs(ow, cw, np.array([0]), np.array([1]))[0] < 0.8
    with pytest.raises(ValueError):
        lcs_units(texts, "jamo")


TOKENS = st.sampled_from(
    ["a", "b", "ab", "가", "나다", "학교에", "학교", "東京", "に", " ", "  ", "\n", "x"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=40).map("".join))
def test_auto_units_are_characters_for_cjk_texts_and_words_otherwise(text):
    """Auto units equal the syllable units (as code points, tagged) of a text holding Hangul,
    kana or Han, with the ends of its eojeol marked when it holds Hangul, and its word units
    otherwise."""
    import re

    o, got = lcs_units([text], "auto")
    if re.search(
        r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]", text
    ):
        want = lcs_units([text], "syllable")[1].astype(np.uint64) | np.uint64(1 << 63)
        if re.search(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]", text):
            ends = np.cumsum([len(w) for w in normalize(text).split(" ")]) - 1
            want[ends] |= np.uint64(EOJEOL_END)
    else:
        want = lcs_units([text], "word")[1] & ~np.uint64(1 << 63)
    assert got.tolist() == want.tolist()


def test_auto_units_forgive_korean_spacing_but_not_changed_english_words():
    texts = [
        "오늘 나는 학교에 갔다",
        "오늘 나는학교에 갔다",
        "one two three four five six seven eight nine ten",
        "one two three four five six seven eight nine extraordinary",
    ]
    o, c = lcs_units(texts, "auto")
    assert lcs_pairs(o, c, np.array([0, 2]), np.array([1, 3])).tolist() == [1.0, 0.9]
    o, c = lcs_units(["alpha beta gamma delta epsilon", "alpha beta gamut delft epsilon"], "auto")
    # 3 of 5 words kept; by letters it would be 23 of 26
    assert lcs_pairs(o, c, np.array([0]), np.array([1])).tolist() == [0.6]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(TOKENS, max_size=30).map("".join), max_size=5))
def test_unit_counts_equal_the_units_built(texts):
    assert lcs_unit_counts(texts).tolist() == np.diff(lcs_units(texts, "auto")[0]).tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(TOKENS, max_size=60).map("".join), max_size=5),
    st.sampled_from(["auto", "word", "syllable"]),
)
def test_unit_sketches_count_the_units_built(texts, unit):
    sizes, sketches = lcs_unit_sketches(texts, unit)
    offsets, codes = lcs_units(texts, unit)
    assert sizes.tolist() == np.diff(offsets).tolist()
    np.testing.assert_array_equal(sketches, count_sketches(offsets, codes))
    # The summaries a MinHash index keeps: the same pass, plus the units' marked buckets.
    more = lcs_unit_summaries(texts, unit)
    np.testing.assert_array_equal(more[0], sizes)
    np.testing.assert_array_equal(more[1], sketches)
    np.testing.assert_array_equal(more[2], unit_sketches(offsets, codes.astype(np.uint64)))


UNSPACED = [
    (0x1100, 0x11FF),
    (0x3040, 0x30FF),
    (0x3130, 0x318F),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FFFF),
]

HANGUL = [(0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7A3)]


def reference_units(text: str, unit: str) -> list[int]:
    """The units of ``text`` by the rule of the module docstring, in plain Python."""
    characters = [ord(c) for c in text if c != " "]
    words = [xxhash.xxh64_intdigest(w.encode()) for w in text.split(" ")] if text else []
    if unit == "syllable":
        return characters
    if unit == "word":
        return words
    if any(lo <= ord(c) <= hi for c in text for lo, hi in HANGUL):
        # A Korean text: the last character of each eojeol marked.
        return [
            ord(c) | 1 << 63 | (1 << 62 if k == len(w) - 1 else 0)
            for w in text.split(" ")
            for k, c in enumerate(w)
        ]
    if any(lo <= ord(c) <= hi for c in text for lo, hi in UNSPACED):
        return [c | 1 << 63 for c in characters]
    return [w & ~(1 << 63) for w in words]


# Every width of UTF-8 (é 2 bytes, € and the CJK 3, 𠀀 and 😀 4), the edges of the unspaced
# scripts (ᄀ U+1100, ㄱ U+3131, 豈 U+F900, 𠀀 U+20000) and characters just outside them (€, —,
# 😀), words longer than the 32 bytes of the short hash, and spaces alone or in runs.
PIECES = st.sampled_from(
    ["a", "ab", "x", "é", "€", "—", "😀", "가", "나다", "학교에", "東京", "に", "ア", "ᄀ", "ㄱ"]
    + ["豈", "𠀀", "w" * 31, "long" * 9, " ", " ", "  ", "   "]
)
TEXTS = st.lists(st.lists(PIECES, max_size=40).map("".join), max_size=6)
EDGES = [
    ["가나다라마바사", "   "],  # a character text then only spaces, to the buffer's end
    ["  가 나 ", " a  b "],
    ["", " ", ""],
    ["😀", "𠀀"],
    ["w" * 40],
    ["a" * 31 + " " + "가" * 11],
]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_units_of_canonical_texts_follow_the_documented_rule(texts):
    canonical = [normalize(t) for t in texts]
    for unit in ("auto", "syllable", "word"):
        o, c = lcs_units(texts, unit)
        got = [c[o[d] : o[d + 1]].tolist() for d in range(len(texts))]
        assert got == [reference_units(t, unit) for t in canonical]
    assert lcs_unit_counts(texts).tolist() == [len(reference_units(t, "auto")) for t in canonical]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
@example(EDGES[0])
@example(EDGES[1])
@example(EDGES[2])
@example(EDGES[3])
@example(EDGES[4])
@example(EDGES[5])
def test_units_of_any_spacing_follow_the_documented_rule_to_the_buffer_end(texts):
    """Bytes given as they are (spaces leading, trailing, doubled or alone), with no padding
    after the last text: every unit still follows the rule, and nothing reads past the end."""
    encoded = [t.encode() for t in texts]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    given_as_is = Canonical(data, offsets, np.diff(offsets))
    for unit in ("auto", "syllable", "word"):
        o, c = lcs_units(given_as_is, unit)
        got = [c[o[d] : o[d + 1]].tolist() for d in range(len(texts))]
        assert got == [reference_units(t, unit) for t in texts]
    counts = lcs_unit_counts(given_as_is).tolist()
    assert counts == [len(reference_units(t, "auto")) for t in texts]


def test_korean_word_ends_on_every_side_of_the_decoding_edges():
    """A Korean word's last character marked wherever its bytes fall: across the edge of the
    kernel's decoding blocks (1,024 bytes), and across the start of a text's last four bytes,
    which are decoded one character at a time."""
    texts = [
        "a" * shift + "가" * count + " 나" + tail
        for shift in range(3)
        for count in (0, 1, 2, *range(338, 345))
        for tail in ("", "다", " 다", "다 라", "다라 마", " a", " ab", "다 a", "다 ab")
    ]
    o, c = lcs_units(texts, "auto")
    for d, text in enumerate(texts):
        assert c[o[d] : o[d + 1]].tolist() == reference_units(text, "auto"), text


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 40), min_size=1, max_size=2600).map(
            lambda lengths: " ".join(
                "".join("abcdefghé"[(w * 7 + k) % 9] for k in range(n))
                for w, n in enumerate(lengths)
            )
        ),
        min_size=1,
        max_size=3,
    )
)
def test_word_units_across_hash_blocks_equal_the_hash_of_each_word(texts):
    """Texts of up to 2,600 words (more than two blocks of the kernel's word hashing) of 0 to
    40 bytes (the hash of words shorter than 16 bytes and the general one), each unit the
    XXH64 of its word."""
    o, c = lcs_units(texts, "word")
    for d, text in enumerate(texts):
        words = normalize(text).split(" ") if normalize(text) else []
        assert c[o[d] : o[d + 1]].tolist() == [xxhash.xxh64_intdigest(w.encode()) for w in words]
