"""The labelled near-duplicate generator: the same seed gives the same corpus, every edit is
made and labelled as documented, bases are cleaned, bad arguments are refused. What each edit
does is tested in test_edits.py."""

import json
import re

import pytest
from click.testing import CliRunner
from synth_helpers import ENGLISH, KOREAN, by_id, derived_pairs

from neardup.cli.labelling import generate as generate_command
from neardup.quality import synth


def test_same_seed_gives_the_same_corpus(synth_corpus):
    again = synth.generate(
        ENGLISH + KOREAN, seed=7, per_base=len(synth.EDITS), edits="all", hot_template=25
    )
    assert again.docs == synth_corpus.docs
    assert again.pairs.equals(synth_corpus.pairs)
    other = synth.generate(
        ENGLISH + KOREAN, seed=8, per_base=len(synth.EDITS), edits="all", hot_template=25
    )
    assert other.docs != synth_corpus.docs


def test_every_edit_is_made_and_labelled_as_documented(synth_corpus):
    categories = set(synth_corpus.pairs.category)
    assert categories == set(synth.EDITS) | {synth.HOT_CATEGORY}
    for row in synth_corpus.pairs.itertuples():
        assert row.label == synth.EDIT_LABELS[row.category]
    assert set(synth_corpus.pairs.columns) == {"id_a", "id_b", "label", "category"}
    docs = by_id(synth_corpus)
    assert len(docs) == len(synth_corpus.docs)  # unique IDs
    for row in synth_corpus.pairs.itertuples():
        a, b = docs[row.id_a], docs[row.id_b]
        if row.category in synth.EDITS and row.category != "template":
            assert a["edit"] == "base" and b["base_id"] == a["id"] and b["edit"] == row.category
            assert a["ts"] < b["ts"]
    # Korean-only edits only on Korean bases.
    for edit in synth.KOREAN_EDITS:
        assert all(a["lang"] == "ko" for a, _ in derived_pairs(synth_corpus, edit))


def test_hot_template(synth_corpus):
    hot = [d for d in synth_corpus.docs if d["edit"] == synth.HOT_CATEGORY]
    assert len(hot) == 25
    rows = synth_corpus.pairs[synth_corpus.pairs.category == synth.HOT_CATEGORY]
    assert len(rows) == 24 and set(rows.id_a) == {"hot~00000"} and set(rows.label) == {1}
    texts = {d["id"]: d["text"] for d in hot}
    first = texts["hot~00000"].split()
    for doc_id in rows.id_b:
        other = texts[doc_id].split()
        assert len(other) == len(first)
        assert 1 <= sum(x != y for x, y in zip(first, other)) <= 3


def test_short_bases_get_only_formatting_edits():
    c = synth.generate(["Tiny text of five words.", ENGLISH[0]], seed=1, per_base=3, edits="all")
    docs = by_id(c)
    edits = {docs[r.id_b]["edit"] for r in c.pairs.itertuples() if r.id_a == "b000000"}
    assert edits and edits <= set(synth.FORMATTING_EDITS)


def test_bases_are_cleaned():
    texts = [ENGLISH[0], ENGLISH[0].upper() + "!", "  ...  ", ENGLISH[1], ENGLISH[2]]
    c = synth.generate(texts, seed=1, per_base=1, edits="rewrap", max_bases=1)
    s = c.stats
    assert (s["bases_read"], s["skipped_duplicate"], s["skipped_empty"]) == (5, 1, 1)
    assert s["bases_used"] == 1 and s["skipped_sample"] == 2
    kept = synth.generate(
        texts, seed=1, per_base=1, edits="rewrap", distinct_bases=False, min_words=20
    )
    assert kept.stats["bases_used"] == 4


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"per_base": 0}, f"per_base must be an integer 1..{len(synth.EDITS)}; got 0"),
        ({"edits": "light,nope"}, "got 'nope'"),
        ({"language": "fr"}, "language must be one of auto, en, ko; got 'fr'"),
        ({"hot_template": -1}, "hot_template must be an integer"),
        ({"max_bases": 0}, "max_bases must be an integer >= 1; got 0"),
    ],
)
def test_bad_arguments_name_the_value_and_the_range(kwargs, message):
    options = {"edits": "all", **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        synth.generate(ENGLISH, **options)


def test_generate_command_end_to_end(tmp_path):
    bases = tmp_path / "bases.jsonl"
    bases.write_text(
        "".join(
            json.dumps({"id": f"doc{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(ENGLISH + KOREAN)
        ),
        encoding="utf-8",
    )
    outputs = []
    for run in range(2):
        docs, pairs = tmp_path / f"docs{run}.jsonl", tmp_path / f"pairs{run}.tsv"
        result = CliRunner().invoke(
            generate_command,
            [
                str(bases),
                "-o",
                str(docs),
                "--pairs-out",
                str(pairs),
                "--seed",
                "3",
                "--per-base",
                "2",
                "--edits",
                "light,heavy,template",
                "--hot-template",
                "10",
                "--workers",
                "1",
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        outputs.append((docs.read_bytes(), pairs.read_bytes()))
    assert outputs[0] == outputs[1]
    assert "bases used" in result.output and "hot_template" in result.output
    lines = pairs.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id_a\tid_b\tlabel\tcategory"
    rows = [line.split("\t") for line in lines[1:]]
    records = [json.loads(line) for line in docs.read_text(encoding="utf-8").splitlines()]
    ids = {r["id"] for r in records}
    assert all(a in ids and b in ids for a, b, _, _ in rows)
    assert {r["edit"] for r in records} >= {"base", "hot_template"}
    assert len(rows) == 2 * len(ENGLISH + KOREAN) + 9
    assert set(records[0]) == {"id", "text", "ts", "base_id", "edit", "lang"}
    # Bad options are one clear line and exit status 1.
    bad = CliRunner().invoke(
        generate_command,
        [str(bases), "-o", str(docs), "--pairs-out", str(pairs), "--per-base", "0"],
    )
    assert bad.exit_code == 1 and "per_base must be an integer" in bad.output
