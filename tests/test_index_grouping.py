"""The MinHash index and ``dedup`` agree on every document of a corpus of edit chains, where
band buckets hold members that fail against their representative but pass together."""

import json

import numpy as np
from click.testing import CliRunner

from neardup.cli.dedup import dedup
from neardup.cli.index import index as index_cmd


def _chain_corpus(seed: int = 3, bases: int = 24) -> list[dict]:
    """Per base text of 240 words: first a rotation of it (the same shingles but two, so it
    shares nearly every band, yet keeps about half its words in order: not a near-duplicate),
    then the text, then a copy with 1 word in 10 changed and one with 2 in 10 (the threshold),
    then a chain of copies each changing 2 more words of the one before."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{k}x{rng.integers(1000)}" for k in range(3000)]
    docs = []
    for base in range(bases):
        words = [vocabulary[k] for k in rng.integers(0, len(vocabulary), 240)]
        cut = int(rng.integers(100, 140))
        texts = [words[cut:] + words[:cut], words]
        for changed in (24, 48):  # 10 % and 20 % of the words
            edited = list(words)
            for at in rng.choice(240, changed, replace=False):
                edited[at] = vocabulary[int(rng.integers(len(vocabulary)))]
            texts.append(edited)
        edited = list(words)
        for _ in range(4):
            edited = list(edited)
            for at in rng.choice(240, 2, replace=False):
                edited[at] = vocabulary[int(rng.integers(len(vocabulary)))]
            texts.append(edited)
        for k, text in enumerate(texts):
            docs.append({"id": f"b{base:02d}-{k}", "text": " ".join(text)})
    return docs


def test_index_query_batch_and_dedup_give_every_document_the_same_duplicate_id(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in _chain_corpus()))
    groups = tmp_path / "groups.tsv"
    runner = CliRunner()
    r = runner.invoke(dedup, [str(docs), "-o", str(groups), "--workers", "1", "-q"])
    assert r.exit_code == 0, r.output
    lines = groups.read_text().splitlines()
    assert lines[0].startswith("id\tduplicate_id\t")
    by_dedup = {row.split("\t")[0]: row.split("\t")[1] for row in lines[1:]}
    d = str(tmp_path / "idx")
    r = runner.invoke(
        index_cmd, ["build", str(docs), "-d", d, "--method", "minhash", "--workers", "1", "-q"]
    )
    assert r.exit_code == 0, r.output
    answers = tmp_path / "answers.tsv"
    r = runner.invoke(
        index_cmd,
        ["query-batch", str(docs), "-d", d, "-o", str(answers), "--workers", "1", "-q"],
    )
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in answers.read_text().splitlines()]
    header = rows[0]
    by_index = {row[0]: row[header.index("duplicate_id")] for row in rows[1:]}
    assert by_index.keys() == by_dedup.keys()
    differ = sorted(k for k in by_dedup if by_dedup[k] != by_index[k])
    assert differ == []
    # The corpus does link documents: the copies join their base.
    assert len(set(by_dedup.values())) < len(by_dedup) / 2
