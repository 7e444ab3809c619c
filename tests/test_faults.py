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
