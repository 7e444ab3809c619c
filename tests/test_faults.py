"""Smoke runs of benchmarks/faults.py, the fault matrix: a few cases of each family, which
must end without a crash, a wrong answer or a lost add (the full matrix is a long run)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import faults  # noqa: E402


def test_damage_smoke(tmp_path, capsys):
    assert faults.damage_family(tmp_path, limit=12)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("damage\t")]
    assert len(lines) >= 12 * 3  # query, add and recover per case


def test_damages_cover_every_kind():
    names = [name for name, _ in faults.damages(10_000)]
    assert names == [
        "delete",
        "truncate-0",
        "truncate-half",
        "truncate-1",
        "flip-head",
        "flip-mid",
        "flip-end",
        "zero-page",
        "swap",
    ]


def test_kill_smoke(tmp_path, capsys):
    assert faults.kill_family(tmp_path, limit=1, only=["fingerprint"])
    assert "kill\tfingerprint/call-1-of-" in capsys.readouterr().out


def test_badinput_judge_counts_a_partial_or_different_output_as_wrong(capsys):
    """The bad-input kit's verdicts: an exit 0 missing a good document, or (with skip) not
    equal to the run without the bad row, is a wrong answer; an error must be one line naming
    the file and the line."""
    import faults_badinput

    tally = faults.Tally("badinput")
    judge = faults_badinput.Judge(tally)
    reference = (frozenset({"g0", "g1"}), b"g0\ng1\n")
    partial = (frozenset({"g0"}), b"g0\n")

    def rows(case, skip, result, got):
        judge.rows(case, case, skip, result, lambda: got, reference, None, ["f.jsonl"], 4)

    rows("partial", False, (0, "", ""), partial)
    rows("skip-differs", True, (0, "", ""), partial)
    rows("skip-same", True, (0, "", ""), reference)
    rows("error", False, (1, "neardup: error: f.jsonl, line 4: bad id\n", ""), None)
    rows("no-line", False, (1, "neardup: error: f.jsonl: bad id\n", ""), None)
    rows("left-output", False, (1, "neardup: error: f.jsonl, line 4: x\n", ""), partial)
    rows("crash", False, (1, "", "ValueError: x"), None)
    outcomes = [line.split("\t")[2] for line in capsys.readouterr().out.splitlines()]
    assert outcomes == [
        "WRONG",
        "WRONG",
        "skipped",
        "clear error",
        "unclear error",
        "WRONG",
        "crash",
    ]
    assert not tally.summary()


def test_kill_loop_smoke(tmp_path, capsys):
    """Batched adds SIGKILLed at random moments: no acknowledged add lost, whole batches."""
    assert faults.kill_loop_family(tmp_path, rounds=2)
    assert capsys.readouterr().out.count("killloop\tround-") == 2
