"""Tests of neardup.ids: which document IDs are accepted and refused, the messages that say why,
and the rule against an independent definition (Unicode categories) over random strings."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.ids import MAX_ID_LENGTH, check_id, id_problem

# Characters next to the edges of the rule: the C0 and C1 control ranges, DEL, the two Unicode
# line breaks and the surrogates, each with its allowed neighbours.
EDGE_CHARACTERS = "\x00\x1f \x7e\x7f\x80\x9f\xa0\u2027\u2028\u2029\u202a\ud7ff\ud800\udfff\ue000"


def expected_problem(value: str) -> str | None:
    """The rule of neardup.ids written from its definition, one character at a time: length in
    code points, then the first control character (category Cc) or line / paragraph separator,
    then the first lone surrogate (category Cs)."""
    if not 1 <= len(value) <= MAX_ID_LENGTH:
        return f"must have 1..{MAX_ID_LENGTH} characters, got {len(value)}"
    for i, ch in enumerate(value):
        if unicodedata.category(ch) == "Cc" or ch in ("\u2028", "\u2029"):
            return f"must not contain control characters (found {ch!r} at index {i})"
    for i, ch in enumerate(value):
        if unicodedata.category(ch) == "Cs":
            return f"must be valid Unicode (lone surrogate at index {i})"
    return None


@pytest.mark.parametrize(
    "value",
    [
        "page-17/a b",
        "a/b c?d=é😀",
        "0",
        " ",
        "  spaces  around  ",
        "한국어 문서",
        "x" * MAX_ID_LENGTH,
        "😀" * MAX_ID_LENGTH,  # the length is in code points, not UTF-8 bytes nor UTF-16 units
        "~\xa0\u2027\u202a\ud7ff\ue000",  # the neighbours of the refused ranges
        "zero\u200bwidth",  # a format character (Cf), not a control character
    ],
)
def test_accepted_ids(value):
    assert id_problem(value) is None
    assert check_id(value) is value


@pytest.mark.parametrize(
    "value,problem",
    [
        (5, "must be a string of 1..1024 characters, got int"),
        (None, "must be a string of 1..1024 characters, got NoneType"),
        (b"page-1", "must be a string of 1..1024 characters, got bytes"),
        ("", "must have 1..1024 characters, got 0"),
        ("x" * (MAX_ID_LENGTH + 1), "must have 1..1024 characters, got 1025"),
        ("two\nlines", r"must not contain control characters (found '\n' at index 3)"),
        ("a\tb", r"must not contain control characters (found '\t' at index 1)"),
        ("cr\r", r"must not contain control characters (found '\r' at index 2)"),
        ("\x00nul", r"must not contain control characters (found '\x00' at index 0)"),
        ("us\x1f", r"must not contain control characters (found '\x1f' at index 2)"),
        ("del\x7f", r"must not contain control characters (found '\x7f' at index 3)"),
        ("c1\x80", r"must not contain control characters (found '\x80' at index 2)"),
        ("nel\x85", r"must not contain control characters (found '\x85' at index 3)"),
        ("c1\x9f", r"must not contain control characters (found '\x9f' at index 2)"),
        ("line\u2028", r"must not contain control characters (found '\u2028' at index 4)"),
        ("para\u2029", r"must not contain control characters (found '\u2029' at index 4)"),
        ("lone\ud800", "must be valid Unicode (lone surrogate at index 4)"),
        ("\udfffx", "must be valid Unicode (lone surrogate at index 0)"),
    ],
)
def test_refused_ids_and_why(value, problem):
    assert id_problem(value) == problem
    with pytest.raises(ValueError) as refused:
        check_id(value)
    assert str(refused.value).startswith(f"id {problem}: ")


def test_the_first_problem_is_the_one_named():
    # The length before the characters, a control character before a surrogate, and of several
    # control characters the first.
    assert id_problem("\n" * (MAX_ID_LENGTH + 1)) == "must have 1..1024 characters, got 1025"
    assert id_problem("\ud800\n") == r"must not contain control characters (found '\n' at index 1)"
    assert id_problem("a\tb\nc") == r"must not contain control characters (found '\t' at index 1)"


def test_check_id_names_where_and_shows_the_value_cut_to_80_characters():
    with pytest.raises(ValueError) as refused:
        check_id("a\tb", "ids[0]")
    assert str(refused.value) == (
        r"ids[0] must not contain control characters (found '\t' at index 1): 'a\tb'"
    )
    with pytest.raises(ValueError) as refused:
        check_id("x" * (MAX_ID_LENGTH + 1))
    assert str(refused.value) == "id must have 1..1024 characters, got 1025: '" + "x" * 79


@st.composite
def candidate_ids(draw: st.DrawFn) -> str:
    """Any short text with up to three characters from the edges of the rule put in at random
    places, sometimes padded to about the length limit."""
    chars = list(draw(st.text(max_size=12)))
    for _ in range(draw(st.integers(0, 3))):
        chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(EDGE_CHARACTERS)))
    padding = draw(st.just(0) | st.integers(MAX_ID_LENGTH - 15, MAX_ID_LENGTH + 1))
    return "".join(chars) + "x" * padding


@settings(max_examples=300, deadline=None)
@given(value=candidate_ids())
def test_the_rule_matches_its_definition(value):
    problem = expected_problem(value)
    assert id_problem(value) == problem
    if problem is None:
        assert check_id(value, "doc") is value
    else:
        with pytest.raises(ValueError, match="^doc ") as refused:
            check_id(value, "doc")
        assert str(refused.value) == f"doc {problem}: {value!r:.80}"
