"""The word diff: tokens, segments, and what joining them gives back."""

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.diff import tokens, word_diff


def test_word_diff_counts_case_and_punctuation():
    assert word_diff("The cat sat on the mat.", "the CAT sat on a mat") == [
        ("delete", "The cat"),
        ("insert", "the CAT"),
        ("equal", " sat on "),
        ("delete", "the"),
        ("insert", "a"),
        ("equal", " mat"),
        ("delete", "."),
    ]


def test_word_diff_splits_cjk_per_character_and_keeps_korean_words():
    assert word_diff("東京は晴れ", "東京は雨") == [
        ("equal", "東京は"),
        ("delete", "晴れ"),
        ("insert", "雨"),
    ]
    assert word_diff("서울은 맑음", "서울은 흐림") == [
        ("equal", "서울은 "),
        ("delete", "맑음"),
        ("insert", "흐림"),
    ]


def test_word_diff_of_empty_texts():
    assert word_diff("", "") == []
    assert word_diff("  ", " a") == [("insert", "a")]
    assert word_diff("a", "") == [("delete", "a")]


TEXT = st.text(st.sampled_from(list("ab c,.\n\t東京한 ")), max_size=30)


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_word_diff_gives_the_other_text_back(original, other):
    segments = word_diff(original, other)
    assert "".join(text for op, text in segments if op != "delete") == other.lstrip()
    assert all(text for _, text in segments)
    # Neighbouring segments differ in kind: equal runs are merged.
    assert all(a[0] != b[0] for a, b in zip(segments, segments[1:]))
    # White space alone is no change.
    if [t for t, _ in tokens(original)] == [t for t, _ in tokens(other)]:
        assert all(op == "equal" for op, _ in segments)
