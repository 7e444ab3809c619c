"""Outputs are checked before any work and committed as a set (every command that writes)."""

import json

import pytest
from click.testing import CliRunner
from io_helpers import dead_pid

from neardup.cli import main
from neardup.io import output_set, write_table


@pytest.fixture
def docs(tmp_path):
    path = tmp_path / "docs.jsonl"
    rows = [
        {"id": f"d{i}", "text": f"some words here number {i % 3} and more words"} for i in range(9)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize(
    "command",
    [
        ("dedup", "-o", "{input}"),
        ("dedup", "-o", "{dir}/g.tsv", "--keep", "{input}"),
        ("dedup", "-o", "{dir}/g.tsv", "--pairs-out", "{dir}/./docs.jsonl"),
        ("fingerprint", "-o", "{input}"),
        ("generate", "-o", "{dir}/g.jsonl", "--pairs-out", "{input}"),
        ("sample", "-o", "{dir}/s.tsv", "--strata-out", "{input}"),
        ("sweep", "--truth", "{dir}/truth.tsv", "-o", "{dir}/truth.tsv"),
        ("report", "--groups", "{dir}/groups.tsv", "-o", "{dir}/groups.tsv"),
        ("index", "add", "-d", "{dir}/idx", "-o", "{input}"),
        (
            "index",
            "query-batch",
            "-d",
            "{dir}/idx",
            "-o",
            "{dir}/q.tsv",
            "--matches-out",
            "{input}",
        ),
        ("dedup", "-o", "{dir}/g.tsv", "--summary-out", "{input}"),
        ("fingerprint", "-o", "{dir}/f.tsv", "--summary-out", "{input}"),
        ("index", "add", "-d", "{dir}/idx", "--summary-out", "{input}"),
        (
            "index",
            "query-batch",
            "-d",
            "{dir}/idx",
            "-o",
            "{dir}/q.tsv",
            "--summary-out",
            "{input}",
        ),
        ("index", "build", "-d", "{dir}/new.idx", "--summary-out", "{input}"),
    ],
)
def test_an_output_that_is_an_input_is_refused_before_any_work(docs, command):
    from neardup.index.store import NearDupIndex

    NearDupIndex.create(docs.parent / "idx", method="simhash").close()
    for name, text in (
        ("truth.tsv", "id_a\tid_b\tlabel\nd0\td1\t1\n"),
        ("groups.tsv", "id\toriginal_id\nd0\td0\n"),
    ):
        (docs.parent / name).write_text(text)
    before = {p.name: p.read_bytes() for p in docs.parent.iterdir() if p.is_file()}
    args = [a.format(input=docs, dir=docs.parent) for a in command]
    first = 2 if args[0] == "index" else 1
    result = run(*args[:first], docs, *args[first:])
    assert result.exit_code == 1, result.output
    # report's output must be .html, which no input is: that refusal comes first
    refusal = "name it .html" if args[0] == "report" else "refusing to overwrite"
    assert refusal in result.output
    assert {p.name: p.read_bytes() for p in docs.parent.iterdir() if p.is_file()} == before
    with NearDupIndex(docs.parent / "idx", readonly=True) as index:
        assert len(index) == 0  # index add stopped before adding anything


def test_pairs_refuses_to_overwrite_its_fingerprints(tmp_path):
    fps = tmp_path / "fps.tsv"
    fps.write_text("a\t00000000000000ff\t1\nb\t00000000000000fe\t2\n")
    before = fps.read_bytes()
    for args in (
        ("-o", fps),
        ("-o", tmp_path / "p.tsv", "--groups-out", fps),
        ("-o", tmp_path / "p.tsv", "--summary-out", fps),
    ):
        result = run("pairs", fps, *args)
        assert result.exit_code == 1 and "refusing to overwrite" in result.output
        assert fps.read_bytes() == before


def test_a_hard_link_to_the_input_is_refused(docs):
    link = docs.parent / "link.jsonl"
    link.hardlink_to(docs)
    result = run("dedup", docs, "-o", link)
    assert result.exit_code == 1 and "refusing to overwrite" in result.output


@pytest.mark.parametrize(
    "output, message",
    [
        ("missing/g.tsv", "does not exist"),
        ("docs.jsonl/g.tsv", "is a file, not a directory"),
        (".", "is a directory"),
    ],
)
def test_unwritable_outputs_fail_before_reading(docs, output, message, monkeypatch):
    import neardup.cli.dedup as dedup_command

    def no_reading(*args, **kwargs):
        raise AssertionError("the inputs were read before the outputs were checked")

    monkeypatch.setattr(dedup_command, "read_documents", no_reading)
    monkeypatch.chdir(docs.parent)
    result = run("dedup", docs, "-o", output)
    assert result.exit_code == 1
    assert message in result.output


def test_two_outputs_with_one_path_are_refused(docs, tmp_path):
    result = run("dedup", docs, "-o", tmp_path / "x.tsv", "--pairs-out", tmp_path / "x.tsv")
    assert result.exit_code == 1 and "given twice" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ("dedup", "-o", "{dir}/groups"),
        ("dedup", "-o", "{dir}/g.tsv", "--pairs-out", "{dir}/pairs.txt"),
        ("dedup", "-o", "{dir}/g.tsv", "--keep", "{dir}/kept.jsonl.bz2"),
        ("fingerprint", "-o", "{dir}/fps", "--weights", "idf"),
        ("pairs", "-o", "{dir}/pairs"),
        ("pairs", "-o", "{dir}/p.tsv", "--groups-out", "{dir}/groups.out"),
        ("index", "add", "-d", "{dir}/i", "-o", "{dir}/decisions"),
        ("index", "query-batch", "-d", "{dir}/i", "-o", "{dir}/decisions"),
        ("index", "query-batch", "-d", "{dir}/i", "-o", "{dir}/q.tsv", "--matches-out", "{dir}/m"),
        ("generate", "-o", "{dir}/generated.jsonl", "--pairs-out", "{dir}/pairs"),
        ("sample", "-o", "{dir}/sheet.tsv", "--strata-out", "{dir}/strata"),
        ("sweep", "--truth", "{dir}/truth.tsv", "-o", "{dir}/sweep"),
    ],
)
def test_an_output_of_no_known_format_is_refused_before_reading(tmp_path, command):
    """The input is unreadable: had it been read first, its error would be the one shown (and
    ``index add`` would have added what it read before writing its decisions)."""
    from neardup.index.store import NearDupIndex

    NearDupIndex.create(tmp_path / "i", method="simhash").close()
    bad = tmp_path / ("fps.tsv" if command[0] == "pairs" else "docs.jsonl")
    bad.write_text("not a row\n")
    (tmp_path / "truth.tsv").write_text("id_a\tid_b\tlabel\nd0\td1\t1\n")
    args = [a.format(dir=tmp_path) for a in command]
    first = 2 if args[0] == "index" else 1
    result = run(*args[:first], bad, *args[first:])
    assert result.exit_code == 1
    assert "cannot tell the output format" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([bad.name, "i", "truth.tsv"])


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

    pid = dead_pid()  # a process that has exited
    out = tmp_path / "out"
    out.mkdir()
    (out / "groups.tsv").write_text("new groups\n")  # renamed before the kill
    (out / f".pairs.tsv.{pid}-0123456789ab.tmp").write_text("new pairs\n")
    (out / "pairs.tsv").write_text("OLD pairs\n")
    journal = out / f".neardup-commit.{pid}-0123456789ab.json"
    journal.write_text(
        json.dumps(
            [
                [str(out / f".groups.tsv.{pid}-ba9876543210.tmp"), str(out / "groups.tsv")],
                [str(out / f".pairs.tsv.{pid}-0123456789ab.tmp"), str(out / "pairs.tsv")],
            ]
        )
    )
    (out / f".keep.jsonl.{pid}-00000000000a.tmp").write_text("debris of a dead run")
    live = out / f".other.tsv.{os.getpid()}-00000000000b.tmp"
    live.write_text("a live run's file")
    result = run("fingerprint", docs, "-o", out / "fps.tsv", "-q")
    assert result.exit_code == 0, result.output
    assert (out / "pairs.tsv").read_text() == "new pairs\n"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["fps.tsv", "groups.tsv", "pairs.tsv", live.name]
    )


def test_index_add_with_an_unwritable_output_adds_nothing(docs, tmp_path):
    from neardup.index.store import NearDupIndex

    NearDupIndex.create(tmp_path / "idx", method="simhash").close()
    result = run("index", "add", docs, "-d", tmp_path / "idx", "-o", tmp_path / "missing" / "d.tsv")
    assert result.exit_code == 1 and "does not exist" in result.output
    with NearDupIndex(tmp_path / "idx", readonly=True) as index:
        assert len(index) == 0


# --summary-out: the end-of-run summary as one JSON object, for pipelines.


def stderr_summary(text):
    """The summary lines of stderr as {label: number}."""
    import re

    rows = {}
    for line in text.splitlines():
        match = re.fullmatch(r"(\S.*?)\s{2,}([-\d,.]+)", line.rstrip())
        if match:
            rows[match[1]] = float(match[2].replace(",", ""))
    return rows


def test_summary_out_counts_equal_the_groups_file_and_the_stderr_summary(docs, tmp_path):
    import pandas as pd

    bad = tmp_path / "more.jsonl"
    bad.write_text('{"id": "x1", "text": "fine words"}\nnot json\n{"id": "x2"}\n')
    groups, summary = tmp_path / "g.tsv", tmp_path / "run.json"
    result = run(
        "dedup",
        docs,
        bad,
        "-o",
        groups,
        "--summary-out",
        summary,
        "--on-error",
        "skip",
        "--method",
        "simhash",
        "-k",
        "4",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(summary.read_text())
    assert list(data) == [
        "command",
        "version",
        "inputs",
        "outputs",
        "settings",
        "counts",
        "rates",
        "seconds",
        "exit",
    ]
    assert data["command"] == "dedup" and data["exit"] == "ok"
    from neardup import __version__

    assert data["version"] == __version__
    assert data["inputs"] == [str(docs), str(bad)]
    assert data["outputs"]["output"] == str(groups) and data["outputs"]["pairs_out"] is None
    assert data["outputs"]["summary_out"] == str(summary)
    table = pd.read_csv(groups, sep="\t")
    counts = data["counts"]
    assert counts["documents"] == len(table) == 10
    assert counts["groups"] == int(table["is_original"].sum())
    assert counts["documents_removed"] == len(table) - counts["groups"]
    assert counts["largest_group"] == int(table["group_size"].max())
    assert counts["skipped_rows"] == 2
    assert sum(counts["skipped_reasons"].values()) == 2
    shown = stderr_summary(result.stderr)
    for label, key in [
        ("documents", "documents"),
        ("skipped rows", "skipped_rows"),
        ("exact duplicates", "exact_duplicates"),
        ("candidate pairs", "candidate_pairs"),
        ("rejected by verification", "rejected"),
        ("pairs written", "pairs_written"),
        ("groups", "groups"),
        ("largest group", "largest_group"),
        ("documents removed", "documents_removed"),
    ]:
        assert shown[label] == counts[key], label
    every = [counts, data["rates"], data["seconds"]]
    assert all(
        isinstance(v, (int, float)) and not isinstance(v, bool)
        for d in every
        for k, v in d.items()
        if k != "skipped_reasons"
    )
    assert all(k == k.lower() and " " not in k for d in [data, *every, data["settings"]] for k in d)
    seconds = data["seconds"]
    assert abs(seconds["total"] - shown["seconds"]) < 1e-3
    assert {"reading", "candidates", "groups", "writing"} <= set(seconds)
    assert 0 <= seconds["candidates"] <= seconds["total"]


def test_summary_out_settings_are_the_values_used(docs, tmp_path):
    from neardup.settings import DEFAULT_SHINGLES, Settings

    def settings(*args):
        out = tmp_path / "run.json"
        result = run("dedup", docs, "-o", tmp_path / "g.tsv", "--summary-out", out, *args)
        assert result.exit_code == 0, result.output
        return json.loads(out.read_text())["settings"]

    minhash = settings()  # dedup's defaults: MinHash, LCS verification at 0.8
    bands, rows = Settings(method="minhash").banding()
    assert minhash["method"] == "minhash"
    assert minhash["shingle"] == DEFAULT_SHINGLES["minhash"]
    assert (minhash["num_perm"], minhash["seed"], minhash["threshold"]) == (128, 1, 0.8)
    assert (minhash["bands"], minhash["rows"]) == (bands, rows)
    assert (minhash["verify"], minhash["verify_threshold"]) == ("lcs", 0.8)
    assert (minhash["grouping"], minhash["pairs"]) == ("components", "original")
    assert minhash["hash_name"] == "xxh"
    assert minhash["engine"] == "local" and minhash["on_error"] == "raise"
    assert minhash["max_doc_bytes"] == 16 * 2**20
    assert isinstance(minhash["memory_limit"], int) and minhash["memory_limit"] > 0
    assert minhash["workers"] >= 1  # 0 = all cores, resolved
    assert "output" not in minhash and "quiet" not in minhash and "summary_out" not in minhash

    simhash = settings("--method", "simhash")
    assert simhash["shingle"] == DEFAULT_SHINGLES["simhash"] != minhash["shingle"]
    assert simhash["hamming_k"] == 3
    assert (simhash["verify"], simhash["verify_threshold"]) == ("none", None)
    assert simhash["bands"] is None

    given = settings(
        "--shingle",
        "word:2",
        "--threshold",
        "0.7",
        "--verify",
        "jaccard",
        "--grouping",
        "center",
        "--pairs",
        "all",
        "--num-perm",
        "64",
        "--memory-limit",
        "256M",
        "--workers",
        "1",
        "--max-doc-bytes",
        "1M",
    )
    assert given["shingle"] == "word:2" and given["threshold"] == 0.7
    assert (given["verify"], given["verify_threshold"]) == ("jaccard", 0.7)
    assert (given["grouping"], given["pairs"], given["num_perm"]) == ("center", "all", 64)
    assert given["bands"] * given["rows"] <= 64
    assert (given["memory_limit"], given["workers"]) == (256 * 2**20, 1)
    assert given["max_doc_bytes"] == 2**20


def test_summary_out_is_written_with_quiet(docs, tmp_path):
    out = tmp_path / "run.json"
    result = run("dedup", docs, "-o", tmp_path / "g.tsv", "-q", "--summary-out", out)
    assert result.exit_code == 0 and result.stderr == "" and result.stdout == ""
    data = json.loads(out.read_text())
    assert data["counts"]["documents"] == 9 and data["settings"]["method"] == "minhash"


@pytest.mark.parametrize(
    "command, keys",
    [
        (("fingerprint", "-o", "{dir}/f.tsv"), {"documents": 9, "skipped_rows": 0}),
        (
            ("fingerprint", "-o", "{dir}/f.tsv", "--weights", "idf", "--shingle", "word:1"),
            {"documents": 9},
        ),
        (("index", "build", "-d", "{dir}/idx"), {"documents": 9, "skipped_rows": 0}),
    ],
)
def test_summary_out_of_the_other_commands(docs, tmp_path, command, keys):
    out = tmp_path / "run.json"
    args = [a.format(dir=tmp_path) for a in command]
    first = 2 if args[0] == "index" else 1
    result = run(*args[:first], docs, *args[first:], "--summary-out", out, "-q")
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["command"] == " ".join(args[:first]) and data["inputs"] == [str(docs)]
    assert data["counts"].items() >= keys.items()
    # --weights implies SimHash; else dedup's MinHash over char:4.
    method = "simhash" if "--weights" in args else "minhash"
    assert data["seconds"]["total"] > 0 and data["settings"]["method"] == method
    assert data["settings"]["shingle"] == ("word:1" if "word:1" in args else "char:4")
    if "idf" in args:  # the IDF table saved beside the output is an output too
        assert data["outputs"]["idf_out"] == str(tmp_path / "f.tsv.idf.parquet")
        assert (tmp_path / "f.tsv.idf.parquet").exists()


def test_summary_out_of_pairs_and_the_index_commands(docs, tmp_path):
    fps = tmp_path / "fps.tsv"
    assert run("fingerprint", docs, "-o", fps, "--method", "simhash", "-q").exit_code == 0
    out = tmp_path / "pairs.json"
    result = run(
        "pairs",
        fps,
        "-o",
        tmp_path / "p.tsv",
        "--groups-out",
        tmp_path / "g.tsv",
        "--summary-out",
        out,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    written = len((tmp_path / "p.tsv").read_text().splitlines()) - 1
    assert data["counts"]["fingerprints"] == 9 and data["counts"]["pairs_written"] == written
    assert data["settings"] == {
        **data["settings"],
        "method": "simhash",
        "hamming_k": 3,
        "pairs": "all",
        "grouping": "components",
    }
    assert data["outputs"]["groups_out"] == str(tmp_path / "g.tsv")

    idx = tmp_path / "idx"
    assert run("index", "build", docs, "-d", idx, "-q", "-k", "4").exit_code == 0
    out = tmp_path / "add.json"
    result = run("index", "add", docs, "-d", idx, "--if-exists", "skip", "--summary-out", out, "-q")
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["command"] == "index add" and data["counts"]["skipped_already_stored"] == 9
    assert data["settings"]["hamming_k"] == 4  # the index's
    out = tmp_path / "query.json"
    result = run(
        "index",
        "query-batch",
        docs,
        "-d",
        idx,
        "-o",
        tmp_path / "q.tsv",
        "--summary-out",
        out,
        "-q",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["counts"]["probes"] == 9 and data["settings"]["hamming_k"] == 4


def test_a_failed_run_leaves_no_summary(docs, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\nnot json\n')
    out = tmp_path / "out"
    out.mkdir()
    result = run("dedup", docs, bad, "-o", out / "g.tsv", "--summary-out", out / "run.json")
    assert result.exit_code == 1 and "bad.jsonl" in result.output
    assert list(out.iterdir()) == []
    (out / "run.json").write_text("the previous run's summary")
    result = run("dedup", docs, bad, "-o", out / "g.tsv", "--summary-out", out / "run.json", "-q")
    assert result.exit_code == 1
    assert [p.name for p in out.iterdir()] == ["run.json"]
    assert (out / "run.json").read_text() == "the previous run's summary"


def test_progress_stages_show_a_total_when_it_is_known(tmp_path, monkeypatch):
    """Reading a JSON Lines file (dedup, fingerprint) and verifying candidates are bars over a
    known total (the share done, the rate and the time left), not spinners."""
    import neardup.engines.outofcore as outofcore
    from neardup.cli.options import Reporter

    base = "the quick brown fox jumps over the lazy dog near the river bank today {}"
    rows = [{"id": f"d{i}", "text": base.format(i % 7) + " extra" * (i % 3)} for i in range(60)]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = []
    stage, advance = Reporter.stage, Reporter.advance

    def record_stage(self, name, total=None, unit="docs"):
        calls.append(["stage", name, total, unit, 0])
        stage(self, name, total, unit)

    def record_advance(self, amount, docs=None, spilled=None):
        calls[-1][4] += amount
        advance(self, amount, docs, spilled)

    monkeypatch.setattr(Reporter, "stage", record_stage)
    monkeypatch.setattr(Reporter, "advance", record_advance)
    monkeypatch.setattr(outofcore, "VERIFY_STEP", 3)
    out = tmp_path / "run.json"
    result = run("dedup", path, "-o", tmp_path / "g.tsv", "--summary-out", out, "--workers", "1")
    assert result.exit_code == 0, result.output
    counts = json.loads(out.read_text())["counts"]
    size = path.stat().st_size
    assert ["stage", "reading", size, "B", size] in calls
    verify = [c for c in calls if c[1] == "verify" and c[2] is not None]
    assert counts["candidate_pairs"] >= 6
    # One bar per round of verification (groups.accepted_links), each over the pairs it
    # measures and completed; candidates linked already are not measured.
    assert verify and all(c[2:] == [c[2], "pairs", c[2]] for c in verify)
    measured = sum(c[2] for c in verify)
    assert measured <= counts["candidate_pairs"] - counts["linked_untested"]
    calls.clear()
    result = run("fingerprint", path, "-o", tmp_path / "f.tsv")
    assert result.exit_code == 0, result.output
    assert ["stage", "reading", size, "B", size] in calls
