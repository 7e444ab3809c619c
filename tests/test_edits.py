"""Tests of neardup.quality.edits: each edit does what it says, on the ``synth_corpus`` fixture
(conftest.py): light edits keep the words in order, formatting edits change only formatting,
heavy edits and templates fall clearly below, and the Korean edits touch only spaces or
particles."""

import re

from synth_helpers import KOREAN, derived_pairs

from neardup.quality import synth
from neardup.similarity import lcs_resemblance
from neardup.text import normalize

CONTENT_LIGHT = [e for e in synth.LIGHT_EDITS if e not in synth.FORMATTING_EDITS]


def test_light_edits_keep_the_words_in_order(synth_corpus):
    for edit in CONTENT_LIGHT:
        pairs = derived_pairs(synth_corpus, edit)
        assert pairs, edit
        for base, copy in pairs:
            assert synth.words_kept(base["text"], copy["text"]) >= 0.8, (edit, copy["text"])
            assert lcs_resemblance(base["text"], copy["text"], unit="word") >= 0.75, edit
            assert copy["text"] != base["text"]


def test_formatting_edits_change_only_formatting(synth_corpus):
    for edit in synth.FORMATTING_EDITS:
        for base, copy in derived_pairs(synth_corpus, edit):
            assert copy["text"] != base["text"]
            squeeze = normalize(base["text"]).replace(" ", "")
            assert normalize(copy["text"]).replace(" ", "") == squeeze, edit
    for base, copy in derived_pairs(synth_corpus, "punctuation"):
        assert normalize(copy["text"]) == normalize(base["text"])
    for base, copy in derived_pairs(synth_corpus, "rewrap"):
        if base["lang"] == "en":
            assert copy["text"].split() == base["text"].split()
            assert lcs_resemblance(base["text"], copy["text"], unit="word") == 1.0
        else:  # hard-wrapped at a width: only whitespace moves, words may be split
            assert re.sub(r"\s", "", copy["text"]) == re.sub(r"\s", "", base["text"])
        assert "\n" in copy["text"]


def test_content_edits_change_what_they_say(synth_corpus):
    for base, copy in derived_pairs(synth_corpus, "numbers"):
        a, b = base["text"].split(), copy["text"].split()
        assert len(a) == len(b)
        changed = [(x, y) for x, y in zip(a, b) if x != y]
        assert 1 <= len(changed) <= 3
        assert all(re.search(r"\d", x) and re.search(r"\d", y) for x, y in changed)
        assert [re.sub(r"\d+", "#", x) for x in a] == [re.sub(r"\d+", "#", y) for y in b]
    for base, copy in derived_pairs(synth_corpus, "boilerplate"):
        assert base["text"].strip() in copy["text"]
        assert len(copy["text"].split()) - len(base["text"].split()) <= max(
            2, 0.15 * len(base["text"].split())
        )
    for base, copy in derived_pairs(synth_corpus, "truncate"):
        a, b = base["text"].split(), re.sub(r"(…|\.\.\.)$", "", copy["text"]).split()
        assert b == a[: len(b)] and 1 <= len(a) - len(b) <= 0.1 * len(a)
    for base, copy in derived_pairs(synth_corpus, "sentence"):
        extra = abs(len(copy["text"].split()) - len(base["text"].split()))
        assert 1 <= extra <= max(2, 0.15 * len(base["text"].split()))


def test_heavy_edits_and_templates_fall_clearly_below(synth_corpus):
    for edit in synth.HEAVY_EDITS:
        pairs = derived_pairs(synth_corpus, edit)
        assert pairs, edit
        for base, copy in pairs:
            assert synth.words_kept(base["text"], copy["text"]) <= 0.75, edit
            assert lcs_resemblance(base["text"], copy["text"], unit="word") < 0.7, edit
    for a, b in derived_pairs(synth_corpus, "template"):
        assert synth.words_kept(a["text"], b["text"]) <= 0.6
        assert a["base_id"] != b["base_id"] and a["lang"] == b["lang"]
        # They share one long paragraph, word for word.
        shared = set(a["text"].split("\n\n")) & set(b["text"].split("\n\n"))
        assert any(len(p.split()) >= 15 for p in shared)


def test_korean_spacing_changes_only_spaces(synth_corpus):
    pairs = derived_pairs(synth_corpus, "spacing")
    assert len(pairs) == len(KOREAN)
    for base, copy in pairs:
        assert copy["text"] != base["text"]
        assert copy["text"].replace(" ", "") == base["text"].replace(" ", "")


def test_korean_particles_swap_only_particles(synth_corpus):
    pairs = derived_pairs(synth_corpus, "particles")
    assert len(pairs) == len(KOREAN)
    allowed = {
        ("은", "이"),
        ("는", "가"),
        ("이", "은"),
        ("가", "는"),
        ("을", "은"),
        ("를", "는"),
        ("에", "에서"),
        ("에서", "에"),
    }
    for base, copy in pairs:
        a, b = base["text"].split(), copy["text"].split()
        assert len(a) == len(b)
        changed = [(x, y) for x, y in zip(a, b) if x != y]
        assert 1 <= len(changed) <= max(1, 0.05 * len(a))
        for x, y in changed:
            x, y = x.rstrip(".,"), y.rstrip(".,")
            stem = x[:-2] if x.endswith("에서") else x[:-1]
            assert y.startswith(stem) and (x[len(stem) :], y[len(stem) :]) in allowed, (x, y)
