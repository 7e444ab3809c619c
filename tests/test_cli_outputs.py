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
    ("generate", "-o", "{dir}/g.jsonl", "--pairs-out", "{input}"),
    ("sample", "-o", "{dir}/s.tsv", "--strata-out", "{input}"),
    ("sweep", "--truth", "{dir}/truth.tsv", "-o", "{dir}/truth.tsv"),
    ("report", "--groups", "{dir}/groups.tsv", "-o", "{dir}/groups.tsv"),
    ("index", "add", "-d", "{dir}/idx", "-o", "{input}"),
    ("index", "query-batch", "-d", "{dir}/idx", "-o", "{dir}/q.tsv", "--matches-out", "{input}"),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(docs, command):
    from neardup.index.store import NearDupIndex

    NearDupIndex.create(docs.parent / "idx").close()
    for name, text in (("truth.tsv", "id_a\tid_b\tlabel\nd0\td1\t1\n"),
                       ("groups.tsv", "id\toriginal_id\nd0\td0\n")):
        (docs.parent / name).write_text(text)
    before = {p.name: p.read_bytes() for p in docs.parent.iterdir() if p.is_file()}
    args = [a.format(input=docs, dir=docs.parent) for a in command]
    first = 2 if args[0] == "index" else 1
    result = run(*args[:first], docs, *args[first:])
    assert result.exit_code == 1, result.output
    assert "refusing to overwrite" in result.output
    assert {p.name: p.read_bytes() for p in docs.parent.iterdir() if p.is_file()} == before
    with NearDupIndex(docs.parent / "idx", readonly=True) as index:
        assert len(index) == 0  # index add stopped before adding anything


def test_pairs_refuses_to_overwrite_its_fingerprints(tmp_path):
    fps = tmp_path / "fps.tsv"
    fps.write_text("a\t00000000000000ff\t1\nb\t00000000000000fe\t2\n")
    before = fps.read_bytes()
    for args in (("-o", fps), ("-o", tmp_path / "p.tsv", "--groups-out", fps)):
        result = run("pairs", fps, *args)
        assert result.exit_code == 1 and "refusing to overwrite" in result.output
        assert fps.read_bytes() == before


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


def test_a_commit_cut_by_a_kill_is_completed_by_the_next_run(docs, tmp_path):
    """A run killed between its renames left a journal: the next run writing there finishes
    the set, and removes the temporary files of dead runs (never those of live ones)."""
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)  # a process that has exited
    out = tmp_path / "out"
    out.mkdir()
    (out / "groups.tsv").write_text("new groups\n")  # renamed before the kill
    (out / f".pairs.tsv.{pid}-0123456789ab.tmp").write_text("new pairs\n")
    (out / "pairs.tsv").write_text("OLD pairs\n")
    journal = out / f".neardup-commit.{pid}-0123456789ab.json"
    journal.write_text(json.dumps([
        [str(out / f".groups.tsv.{pid}-ba9876543210.tmp"), str(out / "groups.tsv")],
        [str(out / f".pairs.tsv.{pid}-0123456789ab.tmp"), str(out / "pairs.tsv")],
    ]))
    (out / f".keep.jsonl.{pid}-00000000000a.tmp").write_text("debris of a dead run")
    live = out / f".other.tsv.{os.getpid()}-00000000000b.tmp"
    live.write_text("a live run's file")
    result = run("fingerprint", docs, "-o", out / "fps.tsv", "-q")
    assert result.exit_code == 0, result.output
    assert (out / "pairs.tsv").read_text() == "new pairs\n"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["fps.tsv", "groups.tsv", "pairs.tsv", live.name])


def test_index_add_with_an_unwritable_output_adds_nothing(docs, tmp_path):
    from neardup.index.store import NearDupIndex

    NearDupIndex.create(tmp_path / "idx").close()
    result = run("index", "add", docs, "-d", tmp_path / "idx", "-o", tmp_path / "missing" / "d.tsv")
    assert result.exit_code == 1 and "does not exist" in result.output
    with NearDupIndex(tmp_path / "idx", readonly=True) as index:
        assert len(index) == 0
