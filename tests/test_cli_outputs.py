"""Outputs are checked before any work and committed as a set (every command that writes)."""

import json

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.io import output_set, write_table


@pytest.fixture
def docs(tmp_path):
    path = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "text": f"some words here number {i % 3} and more words"} for i in range(9)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("command", [
    ("dedup", "-o", "{input}"),
    ("dedup", "-o", "{dir}/g.tsv", "--keep", "{input}"),
    ("dedup", "-o", "{dir}/g.tsv", "--pairs-out", "{dir}/./docs.jsonl"),
    ("fingerprint", "-o", "{input}"),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(docs, command):
    before = docs.read_bytes()
    args = [a.format(input=docs, dir=docs.parent) for a in command]
    result = run(args[0], docs, *args[1:])
    assert result.exit_code == 1
    assert "refusing to overwrite" in result.output
    assert docs.read_bytes() == before
    assert sorted(p.name for p in docs.parent.iterdir()) == ["docs.jsonl"]


def test_a_hard_link_to_the_input_is_refused(docs):
    link = docs.parent / "link.jsonl"
    link.hardlink_to(docs)
    result = run("dedup", docs, "-o", link)
    assert result.exit_code == 1 and "refusing to overwrite" in result.output


@pytest.mark.parametrize("output, message", [
    ("missing/g.tsv", "does not exist"),
    ("docs.jsonl/g.tsv", "is a file, not a directory"),
    (".", "is a directory"),
])
def test_unwritable_outputs_fail_before_reading(docs, output, message, monkeypatch):
    import neardup.cli as cli

    def no_reading(*args, **kwargs):
        raise AssertionError("the inputs were read before the outputs were checked")

    monkeypatch.setattr(cli, "_reader", no_reading)
    monkeypatch.chdir(docs.parent)
    result = run("dedup", docs, "-o", output)
    assert result.exit_code == 1
    assert message in result.output


def test_two_outputs_with_one_path_are_refused(docs, tmp_path):
    result = run("dedup", docs, "-o", tmp_path / "x.tsv", "--pairs-out", tmp_path / "x.tsv")
    assert result.exit_code == 1 and "given twice" in result.output


def test_output_set_renames_all_or_nothing(tmp_path):
    with output_set():
        write_table(tmp_path / "a.tsv", {"x": [1]})
        write_table(tmp_path / "b.tsv", {"x": [2]})
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv", "b.tsv"]
    with pytest.raises(KeyboardInterrupt):
        with output_set():
            write_table(tmp_path / "c.tsv", {"x": [3]})
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv", "b.tsv"]
