"""Tests for benchmarks/oracle.py: its eojeol search, written apart from the engine's, against
a brute force over every choice of words, on texts that share and reorder syllables."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.text import normalize
from neardup.text.units import lcs_units

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from oracle import kept_words  # noqa: E402

# Few syllables, so that words share characters and embed in many ways.
SYLLABLES = "가나다라마바"


def _kept(words: list[str], other: str) -> int:
    """The most words (in order) whose concatenation is a subsequence of ``other``."""

    def embeds(small: str) -> bool:
        rest = iter(other)
        return all(ch in rest for ch in small)

    for size in range(len(words), 0, -1):
        if any(embeds("".join(c)) for c in itertools.combinations(words, size)):
            return size
    return 0


words = st.lists(st.text(SYLLABLES, min_size=1, max_size=4), min_size=1, max_size=7)


@settings(max_examples=300, deadline=None)
@given(words, words)
def test_kept_words_equals_the_brute_force(a, b):
    texts = [" ".join(a), " ".join(b)]
    offsets, codes = lcs_units(texts, "auto")
    x, y = codes[offsets[0] : offsets[1]], codes[offsets[1] : offsets[2]]
    wa = normalize(texts[0]).split()
    assert kept_words(x, y) == _kept(wa, "".join(normalize(texts[1]).split()))


def test_kept_words_of_a_respaced_copy_and_a_changed_particle():
    offsets, codes = lcs_units(
        ["나는 학교에 갔다", "나는 학교 에 갔다", "나는 학교로 갔다"], "auto"
    )
    text = [codes[offsets[i] : offsets[i + 1]] for i in range(3)]
    assert kept_words(text[0], text[1]) == 3
    assert kept_words(text[0], text[2]) == 2
