"""The LCS units of texts (neardup.text.units): they follow the canonical text, auto picks
characters for Hangul, kana and Han and words otherwise, and the counts equal the units."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.lcs import lcs_pairs
from neardup.text import hash_features, normalize
from neardup.text.units import lcs_unit_counts, lcs_units


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
    kana or Han, and its word units otherwise."""
    import re

    o, got = lcs_units([text], "auto")
    if re.search(
        r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]", text
    ):
        want = lcs_units([text], "syllable")[1].astype(np.uint64) | np.uint64(1 << 63)
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
