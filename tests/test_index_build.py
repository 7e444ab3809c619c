"""Tests for neardup.index.build: the streamed build (``neardup index build``) writes the index
that the in-memory build writes, whatever the memory limit; a full temp disk is one clear error
that leaves nothing behind; the build shows its stages."""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import random
import signal
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import signals
from neardup.cli import main
from neardup.engines import local, outofcore, spill
from neardup.engines.base import Corpus, Progress
from neardup.engines.local import LocalEngine
from neardup.index import NearDupIndex, index_settings
from neardup.index import build as build_module
from neardup.index.build import build_from_files

WORDS = (
    "crawl page index near duplicate text shingle band signature verify group original copy "
    "edit word title tweet short long corpus memory disk spill sort table query answer"
).split()

SETTINGS = {
    "simhash": {},
    "minhash": {"method": "minhash"},
    "minhash-jaccard": {"method": "minhash", "verify": "jaccard:0.6"},
}


def make_docs(n: int, seed: int = 3) -> list[dict]:
    """Originals, exact copies, light edits of earlier documents (chains) and a template."""
    rng = random.Random(seed)
    docs: list[dict] = []
    for i in range(n):
        kind = rng.random()
        if docs and kind < 0.15:
            text = rng.choice(docs)["text"].upper()
        elif docs and kind < 0.45:
            words = rng.choice(docs)["text"].split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            text = " ".join(words)
        elif kind < 0.55:
            text = f"notice {rng.choice(WORDS)} the package " + " ".join(WORDS[:20])
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
        docs.append({"id": f"d{i}", "text": text, "ts": rng.randint(0, 50)})
    return docs


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory) -> tuple[Path, list[dict]]:
    docs = make_docs(700)
    path = tmp_path_factory.mktemp("build") / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path, docs


def contents(path: Path) -> dict[str, str]:
    """A digest of every record (SQLite rows, but the creation time) and every cached array of
    the index at ``path``: equal digests, equal answers."""
    conn = sqlite3.connect(path / "index.sqlite")
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {}
    for table in sorted(tables):
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
        if table == "meta":
            rows = [r for r in rows if r[0] != "created"]
        out[table] = hashlib.sha256(repr(rows).encode()).hexdigest()
    conn.close()
    generation = json.loads((path / "tables.json").read_text())["generation"]
    for array in sorted((path / f"tables-{generation}").glob("*.npy")):
        out[array.name] = hashlib.sha256(np.load(array).tobytes()).hexdigest()
    return out


def build_cli(docs: Path, target: Path, options: dict, *extra: str):
    args = ["index", "build", str(docs), "-d", str(target), "--time-field", "ts", "-q", *extra]
    args += ["--workers", "2"]
    for name, value in options.items():
        args += [f"--{name}", value]
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_streamed_build_equals_in_memory_build_at_any_memory_limit(
    docs_file, tmp_path, monkeypatch, name
):
    docs, rows = docs_file
    options = SETTINGS[name]
    reference = tmp_path / "memory.idx"
    NearDupIndex.build(
        reference,
        [r["id"] for r in rows],
        texts=[r["text"] for r in rows],
        timestamps_us=np.array([r["ts"] for r in rows], np.int64) * 1_000_000,
        **options,
    ).close()
    default = tmp_path / "default.idx"
    assert build_cli(docs, default, options).exit_code == 0
    # Small batches and a budget of nothing: every column spills, across many batches.
    monkeypatch.setattr(local, "BATCH_SIZE", 37)
    monkeypatch.setattr(outofcore, "SPILL_SHARE", 0.0)
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    tiny = tmp_path / "tiny.idx"
    result = build_cli(docs, tiny, options, "--memory-limit", "1M", "--tmp-dir", str(spill_dir))
    assert result.exit_code == 0, result.output
    assert list(spill_dir.iterdir()) == []
    expected = contents(reference)
    assert contents(default) == expected
    assert contents(tiny) == expected
    with NearDupIndex(tiny, readonly=True) as a, NearDupIndex(reference, readonly=True) as b:
        groups = a.groups()
        assert groups == b.groups()
        assert max(size for _, _, size in groups.values()) > 2
        probes = [r["text"] for r in rows[::50]] + ["nothing like any document here at all"]
        answers = [q.matches for q in a.query_many(probes)]
        assert answers == [q.matches for q in b.query_many(probes)]
        assert any(answers)


def test_repeated_id_across_batches_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "BATCH_SIZE", 4)
    docs = tmp_path / "docs.jsonl"
    rows = [
        {"id": f"d{i % 9}" if i < 10 else f"e{i}", "text": f"text {i}", "ts": i} for i in range(12)
    ]
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = build_cli(docs, tmp_path / "idx", {"method": "minhash"})
    assert result.exit_code == 1
    assert "line 10, field 'id': duplicate id ('d0' first seen" in result.output
    assert not (tmp_path / "idx").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_is_one_clear_error_and_leaves_nothing(docs_file, tmp_path, monkeypatch):
    docs, _ = docs_file
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()

    def full_disk_open(path, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        if "w" in mode and str(path).endswith(".bin"):
            return builtins.open("/dev/full", mode, *args, **kwargs)
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(spill, "open", full_disk_open, raising=False)
    monkeypatch.setattr(outofcore, "SPILL_SHARE", 0.0)
    target = tmp_path / "out" / "idx"
    result = build_cli(
        docs, target, {"method": "minhash"}, "--memory-limit", "1M", "--tmp-dir", str(spill_dir)
    )
    assert result.exit_code == 1
    errors = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(errors) == 1 and "no space left" in errors[0] and "--tmp-dir" in errors[0], errors
    assert list(spill_dir.iterdir()) == []
    assert not target.exists()
    assert not target.parent.exists() or list(target.parent.iterdir()) == []


class Recorder(Progress):
    def __init__(self):
        self.stages: list[tuple[str, int | None, str]] = []
        self.done: dict[str, int] = {}

    def stage(self, name, total=None, unit="docs"):
        self.stages.append((name, total, unit))
        self.done[name] = 0

    def advance(self, amount, docs=None, spilled=None):
        self.done[self.stages[-1][0]] += amount


def test_build_shows_reading_grouping_and_writing(docs_file, tmp_path):
    docs, rows = docs_file
    progress = Recorder()
    stats = build_from_files(
        tmp_path / "idx",
        index_settings(method="minhash"),
        Corpus((str(docs),), {}),
        LocalEngine(2),
        progress=progress,
    )
    assert stats.documents == len(rows)
    names = [name for name, _, _ in progress.stages]
    assert names[0] == "reading" and names[-2:] == ["writing", "tables"]
    assert progress.stages[0][1] == docs.stat().st_size
    assert progress.done["reading"] == docs.stat().st_size
    assert progress.stages[-2][1:] == (len(rows), "docs")
    assert progress.done["writing"] == len(rows)


@pytest.mark.parametrize("budget", [0, 1 << 20])
def test_stored_texts_give_back_every_slice(tmp_path, budget):
    from neardup.engines.spill import MemoryBudget, SpillColumn, WorkDir
    from neardup.index.build import _StoredTexts

    blobs = [bytes([i % 251]) * (i % 7) for i in range(50)]
    with WorkDir(str(tmp_path), key="k", name_hint="-") as work:
        texts = SpillColumn(work, "texts", np.uint8, MemoryBudget(budget))
        ends = SpillColumn(work, "ends", np.int64, MemoryBudget(budget))
        end = 0
        for start in range(0, 50, 8):  # appended in batches, as the sink does
            part = blobs[start : start + 8]
            texts.append(np.frombuffer(b"".join(part), np.uint8))
            ends.append(end + np.cumsum([len(b) for b in part]))
            end += sum(len(b) for b in part)
        stored = _StoredTexts(texts, ends)
        assert len(stored) == 50
        assert [b for start in range(0, 50, 6) for b in stored[start : start + 6]] == blobs
        assert stored[10:10] == []


def test_id_column_gives_back_every_slice_and_counts_it():
    import pyarrow as pa

    from neardup.index.build import _IdColumn

    ids = [f"id{i}" for i in range(23)]
    progress = Recorder()
    progress.stage("writing", 23)
    column = _IdColumn(pa.chunked_array([ids[:10], ids[10:]], pa.large_string()), progress)
    assert len(column) == 23
    assert [i for start in range(0, 23, 4) for i in column[start : start + 4]] == ids
    assert progress.done["writing"] == 23


def _file_set(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def _answers(target: Path, rows: list[dict]) -> list[str]:
    """``index query --json`` of a few stored texts: what a user sees of the index."""
    runner = CliRunner()
    return [
        runner.invoke(main, ["index", "query", "-d", str(target), "--json", row["text"]]).output
        for row in rows[:40:7]
    ]


@pytest.fixture
def signal_after(monkeypatch):
    """``signal_after(module, name)``: the function ``name`` of ``module`` receives SIGTERM
    (neardup's handler, as the console entry installs it) right after it returns."""
    monkeypatch.setattr(signals, "_received", None)
    monkeypatch.setattr(signals, "_deferring", 0)

    def patch(module, name: str, when=lambda *a, **k: True):
        original = getattr(module, name)

        def hooked(*args, **kwargs):
            result = original(*args, **kwargs)
            if when(*args, **kwargs):
                signals._on_signal(signal.SIGTERM, None)
            return result

        monkeypatch.setattr(module, name, hooked)

    return patch


@pytest.mark.parametrize(
    "point", ["install", "stats", "between-renames", "between-renames-fingerprints"]
)
def test_sigterm_at_the_end_of_a_build_leaves_the_whole_index_of_a_clean_build(
    docs_file, tmp_path, signal_after, point
):
    """SIGTERM at the build's end (as the index is renamed into place, between the renames
    replacing an index with --force, or while the command reads the new index's counts)
    stops the command, and DIR holds an index with a clean build's files and answers, which
    `index check` passes; never no index, nor one left open."""
    docs, rows = docs_file
    source = docs
    if point.endswith("fingerprints"):
        source = tmp_path / "fps.tsv"
        fingerprint = ["fingerprint", str(docs), "-o", str(source), "--time-field", "ts"]
        fingerprint += ["--method", "simhash"]
        assert CliRunner().invoke(main, fingerprint).exit_code == 0
    extra = ("--from-fingerprints",) if point.endswith("fingerprints") else ()
    clean = tmp_path / "clean.idx"
    assert build_cli(source, clean, {}, *extra).exit_code == 0
    target = tmp_path / "idx"
    if point.startswith("between-renames"):
        assert build_cli(source, target, {"hamming-k": "1"}, *extra).exit_code == 0
        signal_after(os, "rename", lambda src, dst: ".old-" in str(dst))
        extra = (*extra, "--force")
    elif point == "install":
        signal_after(build_module, "install")
    else:
        signal_after(NearDupIndex, "stats")
    with pytest.raises(signals.Interrupted):
        build_cli(source, target, {}, *extra)
    assert _file_set(target) == _file_set(clean)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".idx.")]
    check = CliRunner().invoke(main, ["index", "check", "-d", str(target)])
    assert check.exit_code == 0, check.output
    assert contents(target) == contents(clean)
    assert _answers(target, rows) == _answers(clean, rows)
