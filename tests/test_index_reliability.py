"""Reliability of the index and its commands: bad input rows through every reading command,
damaged index files (flip, truncate, delete) compared with a clean index, damaged SQLite,
`index check` / `index recover`, a full disk (ENOSPC), and the service's edges."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from io_helpers import dead_pid

from neardup.ids import MAX_ID_LENGTH, check_id, id_problem
from neardup.index.store import NearDupIndex

# --------------------------------------------------------------------------------------------
# Bad input rows: every command that reads documents or fingerprints, both --on-error modes
# --------------------------------------------------------------------------------------------

GOOD_DOCS = [
    b'{"id": "good0", "text": "the first good document about cats and dogs", "ts": 1}',
    b'{"id": "good1", "text": "a second good document about gardens", "ts": 2}',
]
BAD_DOCS = {
    "malformed JSON": b'{"id": "x", "text": ',
    "not a JSON object": b"[1, 2]",
    "missing id": b'{"text": "a b c d", "ts": 3}',
    "empty id": b'{"id": "", "text": "a b c d", "ts": 3}',
    "bad id": b'{"id": [1], "text": "a b c d", "ts": 3}',
    "missing text": b'{"id": "x", "ts": 3}',
    "text not a string": b'{"id": "x", "text": 5, "ts": 3}',
    "bad timestamp": b'{"id": "x", "text": "a b c d", "ts": "yesterday"}',
    "duplicate id": b'{"id": "good0", "text": "a b c d", "ts": 3}',
    "invalid UTF-8": b'{"id": "x", "text": "a \xff b", "ts": 3}',
    # Over the --max-doc-bytes 1K that _args gives every command reading documents.
    "document too large": b'{"id": "x", "text": "' + b"long " * 400 + b'", "ts": 3}',
}
GOOD_FPS = [b"good0\t00000000000000ff\t1", b"good1\tffff000000000000\t2"]
BAD_FPS = {
    "bad fingerprint": b"x\tnot-a-fingerprint\t3",
    "missing fingerprint": b"x",
    "bad timestamp": b"x\t0000000000000001\tyesterday",
    "duplicate id": b"good0\t0000000000000001\t3",
    "invalid UTF-8": b"x\xff\t0000000000000001\t3",
}
DOC_COMMANDS = ["fingerprint", "dedup", "index build", "index add", "index query-batch"]
FP_COMMANDS = ["pairs", "index build", "index add", "index query-batch"]


def _cases():
    for kind in BAD_DOCS:
        for command in DOC_COMMANDS:
            yield "docs", kind, command
    for kind in BAD_FPS:
        for command in FP_COMMANDS:
            yield "fps", kind, command


def _args(command: str, source: str, inputs: str, tmp: Path) -> list[str]:
    out = str(tmp / "out.tsv")
    if command == "fingerprint":
        return [
            "fingerprint",
            inputs,
            "-o",
            out,
            "--time-field",
            "ts",
            "--workers",
            "1",
            "--max-doc-bytes",
            "1K",
        ]
    if command == "dedup":
        return [
            "dedup",
            inputs,
            "-o",
            out,
            "--time-field",
            "ts",
            "--workers",
            "1",
            "--max-doc-bytes",
            "1K",
        ]
    if command == "pairs":
        return ["pairs", inputs, "-o", out]
    sub = command.split()[1]
    args = ["index", sub, inputs, "-d", str(tmp / ("new.idx" if sub == "build" else "idx"))]
    if sub == "query-batch":
        args += ["-o", out]
    if source == "fps":
        return args + ["--from-fingerprints"]
    return args + ["--time-field", "ts", "--workers", "1", "--max-doc-bytes", "1K"]


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("source,kind,command", list(_cases()))
def test_bad_rows_give_one_line_errors_or_are_skipped(tmp_path, source, kind, command, on_error):
    from neardup.cli import main

    good, bad = (GOOD_DOCS, BAD_DOCS) if source == "docs" else (GOOD_FPS, BAD_FPS)
    inputs = tmp_path / ("rows.jsonl" if source == "docs" else "rows.tsv")
    inputs.write_bytes(b"\n".join([*good, bad[kind]]) + b"\n")
    if command in ("index add", "index query-batch"):
        NearDupIndex.create(tmp_path / "idx", method="simhash").close()
    args = _args(command, source, str(inputs), tmp_path) + ["-q", "--on-error", on_error]
    # catch_exceptions=False: a traceback (TypeError, DatabaseError, ...) fails the test.
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    if on_error == "raise":
        assert result.exit_code == 1, result.output
        lines = [ln for ln in result.output.splitlines() if ln.startswith("neardup: error:")]
        assert len(lines) == 1 and "rows." in lines[0] and "line 3" in lines[0], result.output
    else:
        assert result.exit_code == 0, result.output
        if command == "index add":
            with NearDupIndex(tmp_path / "idx", readonly=True) as index:
                assert sorted(index.groups()) == ["good0", "good1"]


def test_index_add_error_after_added_batches_says_how_many(tmp_path):
    from neardup.cli.index import index as index_cmd

    NearDupIndex.create(tmp_path / "idx", method="simhash").close()
    rows = [json.dumps({"id": f"d{i}", "text": f"document number {i} here"}) for i in range(3)]
    (tmp_path / "in.jsonl").write_text("\n".join(rows + ["{broken"]) + "\n")
    r = CliRunner().invoke(
        index_cmd,
        ["add", str(tmp_path / "in.jsonl"), "-d", str(tmp_path / "idx"), "-q", "--workers", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 1 and "line 4" in r.output and "malformed JSON" in r.output


# --------------------------------------------------------------------------------------------
# ID rules
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,ok",
    [
        ("page-1", True),
        ("a/b c?d=é😀", True),
        ("x" * MAX_ID_LENGTH, True),
        ("x" * (MAX_ID_LENGTH + 1), False),
        ("", False),
        ("two\nlines", False),
        ("tab\there", False),
        ("nul\x00", False),
        ("del\x7f", False),
        ("c1\x85", False),
        ("sep\u2028", False),
        ("lone\ud800", False),
        (5, False),
        (None, False),
    ],
)
def test_id_rules(tmp_path, value, ok):
    assert (id_problem(value) is None) == ok
    with NearDupIndex.create(tmp_path / "idx", method="simhash") as index:
        if ok:
            assert check_id(value) == value
            index.add(value, fingerprint=1)
            assert index.get(value).id == value
        else:
            with pytest.raises(ValueError):
                check_id(value)
            with pytest.raises(ValueError):
                index.add(value, fingerprint=1)
            with pytest.raises(ValueError):
                NearDupIndex.build(tmp_path / "b", [value], fingerprints=np.ones(1, np.uint64))
            assert len(index) == 0


def test_flipped_bytes_in_any_cached_table_file_never_answer_wrong(tmp_path):
    """Every derived file is checked against its checksum when loaded: a flipped byte anywhere
    rebuilds the tables from SQLite, and every stored fingerprint still finds itself."""
    import json

    import numpy as np

    from neardup.index import NearDupIndex

    path = tmp_path / "idx"
    rng = np.random.default_rng(1)
    fps = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    ids = [f"d{i}" for i in range(4000)]
    NearDupIndex.build(path, ids, fingerprints=fps).close()
    manifest = json.loads((path / "tables.json").read_text())
    gen = path / f"tables-{manifest['generation']}"
    files = sorted(p for p in gen.iterdir() if p.is_file())
    assert files
    pristine = {p: p.read_bytes() for p in files}
    for victim in files:
        for where in (0.5, 0.9, 1.0):
            data = bytearray(pristine[victim])
            k = min(len(data) - 1, int(len(data) * where))
            data[k] ^= 0x5A
            victim.write_bytes(bytes(data))
            with NearDupIndex(path, readonly=True) as index:
                assert index.stats()["opened_from"] == "rebuilt", victim.name
                for i in range(0, 4000, 97):
                    match = index.query(fingerprint=int(fps[i])).matches[0]
                    assert (match.id, match.distance) == (f"d{i}", 0)
            victim.write_bytes(pristine[victim])


def test_check_and_recover_an_index(tmp_path):

    import numpy as np

    from neardup.index import NearDupIndex
    from neardup.index.integrity import check_index, recover_index

    path = tmp_path / "idx"
    rng = np.random.default_rng(2)
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    fps[1] = fps[0] ^ np.uint64(1)  # one group of two
    ids = [f"d{i}" for i in range(3000)]
    NearDupIndex.build(path, ids, fingerprints=fps).close()
    clean = check_index(path)
    assert clean["ok"] and clean["problems"] == [] and clean["documents"] == 3000

    recovered = recover_index(path, tmp_path / "copy")
    assert (recovered["recovered"], recovered["lost_positions"]) == (3000, 0)
    with NearDupIndex(tmp_path / "copy", readonly=True) as copy:
        assert len(copy) == 3000
        assert copy.query(fingerprint=int(fps[1])).matches[0].id in ("d0", "d1")

    # A record changed behind the index's back: the full check finds it.
    conn = sqlite3.connect(path / "index.sqlite")
    conn.execute("PRAGMA writable_schema = OFF")
    (table,) = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '%doc%' LIMIT 1"
    ).fetchone()
    conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} LIMIT 5)")
    conn.commit()
    conn.close()
    damaged = check_index(path)
    assert not damaged["ok"] and damaged["problems"]


def test_index_check_and_recover_commands(tmp_path):
    import numpy as np
    from click.testing import CliRunner

    from neardup.cli import main
    from neardup.index import NearDupIndex

    path = tmp_path / "idx"
    fps = np.random.default_rng(3).integers(0, 2**64, 500, dtype=np.uint64)
    NearDupIndex.build(path, [f"d{i}" for i in range(500)], fingerprints=fps).close()
    checked = CliRunner().invoke(main, ["index", "check", "-d", str(path)])
    assert checked.exit_code == 0 and checked.output.startswith("ok: 500 documents")
    recovered = CliRunner().invoke(
        main, ["index", "recover", "-d", str(path), "--to", str(tmp_path / "copy")]
    )
    assert recovered.exit_code == 0 and "recovered 500 of 500 documents" in recovered.output
    (path / "index.sqlite").write_bytes((path / "index.sqlite").read_bytes()[:4096])
    damaged = CliRunner().invoke(main, ["index", "check", "-d", str(path)])
    assert damaged.exit_code == 1 and "Traceback" not in damaged.output


SQLITE_FAULTS = (
    [("flip", f) for f in (0.0, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 0.99)]
    + [("truncate", f) for f in (0.0, 0.02, 0.3, 0.6, 0.95)]
    + [("delete", "tables.json"), ("delete", "index.sqlite")]
)


@pytest.mark.parametrize("fault,where", SQLITE_FAULTS)
def test_damaged_database_answers_right_or_fails_in_one_line(tmp_path, fault, where):
    """15 faults of the database file (16 flipped bytes, truncation, deletion): every command
    either answers as the clean index does or stops with one line naming the file; a write
    never goes into a database that fails its check; `index check` never crashes."""
    import numpy as np
    from click.testing import CliRunner

    from neardup.cli import main

    path = tmp_path / "idx"
    fps = np.random.default_rng(4).integers(0, 2**64, 5000, dtype=np.uint64)
    NearDupIndex.build(path, [f"d{i}" for i in range(5000)], fingerprints=fps).close()
    db = path / "index.sqlite"
    if fault == "flip":
        data = bytearray(db.read_bytes())
        start = int(where * len(data))
        for k in range(start, min(start + 16, len(data))):
            data[k] ^= 0x5A
        db.write_bytes(bytes(data))
    elif fault == "truncate":
        db.write_bytes(db.read_bytes()[: int(where * db.stat().st_size)])
    else:
        (path / where).unlink()
    damaged = db.read_bytes() if db.exists() else None
    docs = tmp_path / "new.jsonl"
    docs.write_text('{"id": "new1", "text": "a new document about nothing"}\n')

    def run(*args):
        # catch_exceptions=False: a traceback fails the test.
        result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output
        if result.exit_code == 1 and args[1] == "check" and db.exists():
            assert result.output.splitlines()[-1].startswith("damaged:"), result.output
        elif result.exit_code == 1:
            errors = [ln for ln in result.output.splitlines() if ln.startswith("neardup: error:")]
            assert len(errors) == 1 and str(path) in errors[0], result.output
        return result

    check = run("index", "check", "-d", path)
    for i in (0, 1234, 4999):
        query = run(
            "index", "query", "-d", path, "--fingerprint", format(int(fps[i]), "016x"), "--json"
        )
        if query.exit_code == 0:
            assert json.loads(query.output)["matches"][0]["id"] == f"d{i}"
    added = run("index", "add", docs, "-d", path, "-q")
    if check.exit_code == 1 and db.exists() and where != "tables.json":  # a damaged database
        assert added.exit_code == 1
        assert db.read_bytes() == damaged  # nothing written into a database that fails its check
    recovered = run("index", "recover", "-d", path, "--to", tmp_path / "copy")
    if recovered.exit_code == 0:
        with NearDupIndex(tmp_path / "copy", readonly=True) as copy:
            assert len(copy) <= 5001


def test_quick_check_runs_unless_the_database_is_as_a_clean_close_left_it(tmp_path):
    """A clean close records the database file; opening skips the quick check only while the
    file is unchanged, a writer is not open, and no writer died: a byte changed behind the
    index's back (times set back included) is still refused."""
    import os

    from neardup.index.errors import IndexDamagedError

    path = tmp_path / "idx"
    fps = np.random.default_rng(5).integers(0, 2**64, 5000, dtype=np.uint64)
    NearDupIndex.build(path, [f"d{i}" for i in range(5000)], fingerprints=fps).close()

    def quick_check_seconds():
        with NearDupIndex(path, readonly=True) as index:
            assert index.query(fingerprint=int(fps[7])).matches[0].id == "d7"
            return index.stats()["quick_check_seconds"]

    assert quick_check_seconds() is None
    writer = NearDupIndex(path)
    assert quick_check_seconds() is not None  # the writer may be writing
    writer.add("new", fingerprint=12345)
    writer.close()
    assert quick_check_seconds() is None
    writer = NearDupIndex(path)
    writer._release()  # as a writer that died: no record of a clean close
    assert quick_check_seconds() is not None
    NearDupIndex(path).close()
    assert quick_check_seconds() is None

    db = path / "index.sqlite"
    before = db.stat()
    data = bytearray(db.read_bytes())
    start = len(data) // 2
    for k in range(start, start + 16):
        data[k] ^= 0x5A
    db.write_bytes(bytes(data))
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert db.stat().st_size == before.st_size
    with pytest.raises(IndexDamagedError, match="quick_check"):
        NearDupIndex(path, readonly=True)


@pytest.fixture
def small_disk(monkeypatch):
    """Call it to limit writable SQLite connections to 8 pages more than their database holds
    (a page limit stands in for a full disk); it returns the real ``connect``, to undo it."""
    from neardup.index import storage

    real_connect = storage.connect

    def connect(db, readonly):
        conn = real_connect(db, readonly)
        if not readonly:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return conn

    def limit():
        monkeypatch.setattr(storage, "connect", connect)
        return real_connect

    return limit


def test_full_disk_during_add_many_is_the_index_error(tmp_path, small_disk):
    """The Python API's batched add reports a full disk as the CLI does, not as SQLite's error."""
    path = tmp_path / "idx"
    NearDupIndex.create(path, method="simhash").close()
    small_disk()
    with NearDupIndex(path) as index:
        ids = [f"n{i}" for i in range(3_000)]
        fingerprints = np.arange(3_000, dtype=np.uint64) << np.uint64(20)
        with pytest.raises(OSError, match="no space left") as raised:
            index.add_many(ids, fingerprints=fingerprints)
        assert not isinstance(raised.value, sqlite3.Error)


@pytest.mark.parametrize("command", ["add", "build"])
def test_full_disk_during_index_writes_is_one_line_and_loses_nothing(
    tmp_path, monkeypatch, small_disk, command
):
    """SQLite's "database or disk is full" (a page limit stands in for the disk) while adding
    or building: one line naming the file, the adds acknowledged before it kept, no debris."""
    from click.testing import CliRunner

    from neardup.cli import main
    from neardup.index import storage

    path = tmp_path / "idx"
    NearDupIndex.build(path, ["a", "b"], fingerprints=np.array([1, 2 << 40], np.uint64)).close()
    real_connect = small_disk()
    docs = tmp_path / "many.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"id": f"n{i}", "text": f"document {i} " + "w " * (i % 50)}) + "\n"
            for i in range(30_000)
        )
    )
    target = path if command == "add" else tmp_path / "new.idx"
    args = (
        ["index", "add", str(docs), "-d", str(path)]
        if command == "add"
        else ["index", "build", str(docs), "-d", str(target)]
    )
    result = CliRunner().invoke(main, [*args, "-q"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("neardup: error:")]
    assert len(errors) == 1 and "full" in errors[0] and str(tmp_path) in errors[0], result.output
    monkeypatch.setattr(storage, "connect", real_connect)
    with NearDupIndex(path, readonly=True) as index:
        assert {"a", "b"} <= set(index.groups())
    if command == "build":
        assert not target.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "many.jsonl"]


# --------------------------------------------------------------------------------------------
# MinHash indexes: durability (SIGKILL), damaged caches, check and recover
# --------------------------------------------------------------------------------------------

MINHASH_WRITER = """
import sys
from neardup.index.store import NearDupIndex
path, start = sys.argv[1], int(sys.argv[2])
index = NearDupIndex(path)
i = start
while True:
    batch = [f"w{i + j}" for j in range(1 + i % 3)]
    index.add_many(batch, [f"page {k} of the crawl, with words {k % 7} and {k % 11}"
                           for k in range(i, i + len(batch))])
    for ident in batch:
        print(ident, flush=True)
    i += len(batch)
    if i % 50 < 3:
        index.checkpoint()  # so that some kills land while the cache is being written
"""


def test_minhash_sigkill_keeps_every_acknowledged_add(tmp_path, kill_writer_after):
    path = tmp_path / "idx"
    NearDupIndex.create(path, method="minhash").close()
    acknowledged: list[str] = []
    for round_, want in enumerate((120, 50)):
        acknowledged += kill_writer_after(MINHASH_WRITER, path, 10_000 * round_, want=want)
        with NearDupIndex(path) as index:  # opens (the lock died with the process)
            assert [i for i in acknowledged if index.get(i) is None] == []
            last = int(acknowledged[-1][1:])
            text = f"page {last} of the crawl, with words {last % 7} and {last % 11}"
            match = index.query(text).matches[0]
            assert match.similarity == 1.0 and match.id == acknowledged[-1]


def _minhash_corpus(n: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(4)
    words = [f"word{i}" for i in range(2000)]
    texts = [" ".join(rng.choice(words, 25)) for _ in range(n)]
    texts[1] = texts[0] + " and one more"  # one group of two
    return [f"d{i}" for i in range(n)], texts


@pytest.mark.parametrize("summary", ["sizes", "sketches", "counts"])
def test_check_finds_cached_summaries_that_contradict_the_texts(tmp_path, summary):
    """A cached summary that passes its checksum but disagrees with a text (as a bug writing
    it would leave) could rule a true match out: ``neardup index check`` compares every one
    with the texts and names the positions."""
    from neardup.index.cache import describe_files
    from neardup.index.integrity import check_index

    path = tmp_path / "idx"
    ids, texts = _minhash_corpus(300)
    NearDupIndex.build(path, ids, texts=texts, method="minhash").close()
    assert check_index(path)["ok"]
    manifest = json.loads((path / "tables.json").read_text())
    gen = path / f"tables-{manifest['generation']}"
    array = np.load(gen / f"{summary}.npy")
    array[7] = array[7] + 1 if summary == "sizes" else array[8]  # position 7 told wrong
    np.save(gen / f"{summary}.npy", array)
    manifest["files"].update(describe_files(gen, [f"{summary}.npy"]))
    (path / "tables.json").write_text(json.dumps(manifest))
    report = check_index(path)
    assert not report["ok"] and report["tables"].startswith("cache")
    assert any("summaries of positions [7]" in p for p in report["problems"]), report


def test_minhash_damaged_cache_is_rebuilt_and_check_recover_work(tmp_path):
    from neardup.index.integrity import check_index, recover_index

    path = tmp_path / "idx"
    ids, texts = _minhash_corpus(600)
    NearDupIndex.build(path, ids, texts=texts, method="minhash").close()
    manifest = json.loads((path / "tables.json").read_text())
    gen = path / f"tables-{manifest['generation']}"
    for victim in sorted(p for p in gen.iterdir() if p.is_file()):
        pristine = victim.read_bytes()
        data = bytearray(pristine)
        data[len(data) // 2] ^= 0x5A
        victim.write_bytes(bytes(data))
        with NearDupIndex(path, readonly=True) as index:
            assert index.stats()["opened_from"] == "rebuilt", victim.name
            for i in range(0, 600, 61):
                assert index.query(texts[i]).matches[0].id == ids[i]
        victim.write_bytes(pristine)
    with NearDupIndex(path) as index:
        index.add("late", texts[5] + " again", timestamp=-1)
        index.remove("d7")
    report = check_index(path)
    assert report["ok"], report["problems"]
    recovered = recover_index(path, tmp_path / "copy")
    assert (recovered["recovered"], recovered["lost_positions"]) == (600, 0)
    with (
        NearDupIndex(tmp_path / "copy", readonly=True) as copy,
        NearDupIndex(path, readonly=True) as index,
    ):
        assert copy.settings == index.settings and copy.groups() == index.groups()
        assert copy.get("d5").duplicate_id == "late"


def test_a_damaged_stored_text_is_never_answered_from_and_check_never_says_ok(tmp_path):
    """A flipped bit inside a stored (compressed) text, which SQLite cannot see: every query
    answers right or fails with one line naming the index, and ``index check`` reports the
    text by position (exit 1) even once the cached tables are deleted and rebuilt from it."""
    from neardup.cli import main
    from neardup.index.errors import IndexDamagedError
    from neardup.index.integrity import check_index

    path = tmp_path / "idx"
    ids, texts = _minhash_corpus(20)
    NearDupIndex.build(path, ids, texts=texts, method="minhash").close()
    conn = sqlite3.connect(path / "index.sqlite")
    ((pos, blob),) = conn.execute(
        "SELECT pos, text FROM minhash WHERE pos = (SELECT pos FROM docs WHERE id = 'd5')"
    ).fetchall()
    wrong = 0
    for offset in range(0, len(blob), 3):
        damaged = bytearray(blob)
        damaged[offset] ^= 0x10
        with conn:
            conn.execute("UPDATE minhash SET text = ? WHERE pos = ?", (bytes(damaged), pos))
        try:
            with NearDupIndex(path, readonly=True) as index:
                answer = [(m.id, m.similarity) for m in index.query(texts[5]).matches]
        except IndexDamagedError as error:
            assert str(path) in str(error) and "index recover" in str(error)
            answer = None
        if answer is not None and answer != [("d5", 1.0)]:
            wrong += 1
        report = check_index(path)
        if answer is None:
            assert not report["ok"]
            assert any(
                f"position {pos}" in p or f"positions [{pos}" in p for p in report["problems"]
            )
        (path / "tables.json").unlink(missing_ok=True)
        if answer is None:
            assert not check_index(path)["ok"]
            result = CliRunner().invoke(main, ["index", "check", "-d", str(path)])
            assert result.exit_code == 1 and "Traceback" not in result.output
    assert wrong == 0


def test_texts_stored_without_a_checksum_still_answer_and_check_says_so(tmp_path):
    """An index whose texts were stored before they carried a checksum opens and answers as
    before; ``index check`` says that damage inside those texts cannot be detected, and an
    index made by ``index recover`` has a checksum on every text."""
    import zstandard

    from neardup.index.integrity import check_index, recover_index

    path = tmp_path / "idx"
    ids, texts = _minhash_corpus(30)
    NearDupIndex.build(path, ids, texts=texts, method="minhash").close()
    conn = sqlite3.connect(path / "index.sqlite")
    old_form = zstandard.ZstdCompressor(level=3)  # what the index wrote before
    with conn:
        for pos, ident in conn.execute("SELECT pos, id FROM docs").fetchall():
            blob = old_form.compress(texts[ids.index(ident)].encode("utf-8"))
            conn.execute("UPDATE minhash SET text = ? WHERE pos = ?", (blob, pos))
    conn.close()
    with NearDupIndex(path, readonly=True) as index:
        assert index.query(texts[3]).matches[0].id == "d3"
    report = check_index(path)
    assert not report["ok"]
    assert any("30 stored texts carry no checksum" in p for p in report["problems"]), report
    recover_index(path, tmp_path / "copy")
    assert check_index(tmp_path / "copy")["ok"]


WAL_LOSER = """
import os, signal, sys
from neardup.index.store import NearDupIndex
index = NearDupIndex(sys.argv[1])
index.add_many([f"late{i}" for i in range(100)], fingerprints=list(range(10**6, 10**6 + 100)))
index.remove("d3")
index.checkpoint()  # a generation of the tables that holds the 100 adds and the removal
print("done", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # before SQLite copies its WAL into the database
"""


def _lose_the_wal(tmp_path, kill_writer_after) -> Path:
    """An index of 200 documents, then 100 adds and a removal committed in the WAL only (a
    generation of the tables written after the adds), then the WAL deleted."""
    path = tmp_path / "idx"
    fps = np.random.default_rng(9).integers(0, 2**63, 200, dtype=np.uint64)
    NearDupIndex.build(path, [f"d{i}" for i in range(200)], fingerprints=fps).close()
    kill_writer_after(WAL_LOSER, path, want=1)
    wal = path / "index.sqlite-wal"
    assert wal.stat().st_size > 0
    wal.unlink()
    (path / "index.sqlite-shm").unlink(missing_ok=True)
    return path


def test_check_finds_committed_adds_lost_with_the_wal(tmp_path, kill_writer_after):
    """The records alone look whole once the WAL is gone; the last generation of the cached
    tables says what was committed: ``index check`` names the missing positions and removals
    (exit 1), and the index refuses to open rather than answer without them."""
    from neardup.cli import main
    from neardup.index.errors import IndexDamagedError
    from neardup.index.integrity import check_index

    path = _lose_the_wal(tmp_path, kill_writer_after)
    report = check_index(path)
    assert not report["ok"]
    lost = "positions 201..300 (100 adds) and 1 removal"
    assert any(lost in p for p in report["problems"]), report
    result = CliRunner().invoke(main, ["index", "check", "-d", str(path)])
    assert result.exit_code == 1 and "positions 201..300" in result.output
    with pytest.raises(IndexDamagedError, match="positions 201..300.*index recover"):
        NearDupIndex(path)
    with pytest.raises(IndexDamagedError, match="positions 201..300"):
        NearDupIndex(path, readonly=True)


def test_recover_reports_against_the_counters(tmp_path, kill_writer_after):
    """After the WAL is lost, ``index recover`` compares what it recovers with what the
    index's counters and last generation say was committed, and says how many are missing."""
    from neardup.cli import main
    from neardup.index.integrity import recover_index

    path = _lose_the_wal(tmp_path, kill_writer_after)
    report = recover_index(path, tmp_path / "copy")
    assert (report["expected"], report["recovered"], report["missing"]) == (299, 200, 99)
    assert (report["lost_positions"], report["dropped_rows"], report["garbled_rows"]) == (0, 0, 0)
    result = CliRunner().invoke(
        main, ["index", "recover", "-d", str(path), "--to", str(tmp_path / "copy2")]
    )
    assert result.exit_code == 0, result.output
    assert "recovered 200 of 299 documents" in result.output
    assert "99 missing" in result.output


def test_recover_drops_garbled_records(tmp_path):
    """A byte changed inside a record's ID, where SQLite's own checks do not look when rows
    are read: the row and its copy in the ID index disagree, and recover drops the row and
    counts it as garbled instead of keeping an ID that was never added."""
    from neardup.index.integrity import recover_index

    path = tmp_path / "idx"
    fps = np.random.default_rng(5).integers(0, 2**63, 500, dtype=np.uint64)
    ids = [f"doc-{i:05d}" for i in range(500)]
    NearDupIndex.build(path, ids, fingerprints=fps).close()
    db = path / "index.sqlite"
    data = bytearray(db.read_bytes())
    at = data.find(b"doc-00123")
    assert at >= 0 and data.find(b"doc-00123", at + 1) > at  # the row and its index entry
    data[at + 4] ^= 0x08  # doc-00123 -> doc-80123: a valid ID, never added
    db.write_bytes(bytes(data))
    report = recover_index(path, tmp_path / "copy")
    assert (report["expected"], report["recovered"], report["garbled_rows"]) == (500, 499, 1)
    assert report["missing"] == 1
    with NearDupIndex(tmp_path / "copy", readonly=True) as copy:
        assert copy.get("doc-80123") is None and copy.get("doc-00124") is not None


@pytest.mark.parametrize("fault", ["truncate keys.npy", "delete keys.npy", "delete tables.json"])
def test_check_fails_on_a_missing_or_truncated_cache_file(tmp_path, fault):
    """Not only a failing checksum: a cache file cut short or gone is a problem too (exit 1),
    though the index still opens (its tables rebuilt from the records)."""
    from neardup.cli import main

    path = tmp_path / "idx"
    fps = np.random.default_rng(6).integers(0, 2**63, 300, dtype=np.uint64)
    NearDupIndex.build(path, [f"d{i}" for i in range(300)], fingerprints=fps).close()
    generation = json.loads((path / "tables.json").read_text())["generation"]
    action, name = fault.split()
    victim = path / (name if name == "tables.json" else f"tables-{generation}/{name}")
    if action == "truncate":
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    else:
        victim.unlink()
    result = CliRunner().invoke(main, ["index", "check", "-d", str(path)])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1].startswith("damaged:")
    with NearDupIndex(path, readonly=True) as index:
        assert len(index) == 300


def test_a_build_removes_what_killed_builds_left(tmp_path):
    """``kill -9`` during ``index build`` leaves its temporary copy (``.idx.building-PID-…``)
    or the replaced index (``.idx.old-PID-…``); the next build of that index removes those of
    dead processes, never a live one's."""
    import os

    dead = dead_pid()
    debris = [tmp_path / f".idx.building-{dead}-1", tmp_path / f".idx.old-{dead}-2"]
    live = tmp_path / f".idx.building-{os.getpid()}-3"
    for folder in (*debris, live):
        folder.mkdir()
        (folder / "index.sqlite").write_bytes(b"x" * 1000)
    fps = np.arange(10, dtype=np.uint64)
    NearDupIndex.build(tmp_path / "idx", [f"d{i}" for i in range(10)], fingerprints=fps).close()
    # Without the index, the replaced one is all there is: only the temporary copy goes.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["idx", live.name, debris[1].name])
    NearDupIndex.build(
        tmp_path / "idx", [f"d{i}" for i in range(10)], fingerprints=fps, overwrite=True
    ).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["idx", live.name])


WRITE_PAST_A_FILE_SIZE_LIMIT = """
import resource, signal, sys
import numpy as np
from neardup.index.cache import write_npy
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
try:
    with open(sys.argv[1], "wb") as fh:
        write_npy(fh, np.arange(50_000, dtype=np.uint64))
except OSError as error:
    print(error.errno)
"""


def test_a_short_cache_write_keeps_its_errno(tmp_path):
    """A cache file cut short by the disk (here by a file size limit, as a full disk cuts
    it) raises OSError with its errno, which the full-disk message is chosen by."""
    import errno
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", WRITE_PAST_A_FILE_SIZE_LIMIT, str(tmp_path / "a.npy")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert out.strip() == str(errno.EFBIG)


@pytest.mark.parametrize("dtype", [np.uint64, np.int32, np.bool_, np.float32])
def test_write_npy_writes_what_np_save_writes(tmp_path, dtype):
    from neardup.index.cache import write_npy

    array = (np.arange(24).reshape(3, 8) % 5).astype(dtype)
    with open(tmp_path / "a.npy", "wb") as fh:
        write_npy(fh, array[:, ::1])
    np.save(tmp_path / "b.npy", array)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


def _io_error(code: int = 4874) -> sqlite3.OperationalError:
    """SQLite's "disk I/O error" with its extended code (4874: SQLITE_IOERR_SHMSIZE, what a
    full tmpfs gives when the ``-shm`` file cannot grow)."""
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = code
    return error


@pytest.fixture
def free_space(monkeypatch):
    """``free_space(path, n)``: the device of ``path`` reports ``n`` free bytes."""
    import os

    real = os.statvfs

    def set_free(path: Path, n: int):
        def statvfs(p):
            stat = real(p)
            if not str(p).startswith(str(path)):
                return stat
            return os.statvfs_result((*stat[:4], n // stat.f_frsize, *stat[5:]))

        monkeypatch.setattr(os, "statvfs", statvfs)

    return set_free


@pytest.mark.parametrize("free", [0, 4096])
def test_an_io_error_on_a_full_device_is_no_space_naming_the_file(tmp_path, free_space, free):
    """SQLite reports a full device as an I/O error when its ``-shm`` file cannot grow, or a
    sync or truncation fails: with (almost) nothing free, that is "no space" naming the file,
    not damage to check; with room left, still an I/O error with the repair hint."""
    import errno

    from neardup.index.storage import sqlite_error

    db = tmp_path / "idx" / "index.sqlite"
    db.parent.mkdir()
    roomy = sqlite_error(_io_error(), db)
    assert roomy.errno == errno.EIO and "index check" in str(roomy)
    free_space(tmp_path, free)
    full = sqlite_error(_io_error(), db)
    assert full.errno == errno.ENOSPC
    assert f"no space left on the device of {db} (" in str(full)
    assert "index check" not in str(full)


def test_a_full_device_during_index_add_names_it_and_counts_the_adds(
    tmp_path, monkeypatch, free_space
):
    """`index add` whose second batch meets a full device (SQLite's I/O error): one line
    naming the index's file and the documents added before it, which are kept."""
    from neardup.cli import main
    from neardup.index import store
    from neardup.index.storage import guard_sqlite

    path = tmp_path / "idx"
    NearDupIndex.create(path, method="simhash").close()
    rows = tmp_path / "fps.tsv"
    rows.write_text("".join(f"f{i}\t{i << 24:016x}\n" for i in range(10_005)))
    real_add = NearDupIndex.add_arrays
    calls = []

    @guard_sqlite
    def add_arrays(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            free_space(tmp_path, 0)
            raise _io_error()
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(store.NearDupIndex, "add_arrays", add_arrays)
    args = ["index", "add", str(rows), "--from-fingerprints", "-d", str(path), "-q"]
    result = CliRunner().invoke(main, args)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert f"no space left on the device of {path / 'index.sqlite'}" in lines[0]
    assert "(10,000 documents were added before it)" in lines[0]
    with NearDupIndex(path, readonly=True) as index:
        assert len(index) == 10_000
