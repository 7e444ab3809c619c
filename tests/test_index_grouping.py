"""The MinHash index and ``dedup`` agree on every document of a corpus of edit chains, where
band buckets hold members that fail against their representative but pass together."""

import json

from click.testing import CliRunner
from synth_helpers import chain_corpus

from neardup.cli.dedup import dedup
from neardup.cli.index import index as index_cmd


def test_index_query_batch_and_dedup_give_every_document_the_same_duplicate_id(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in chain_corpus()))
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
