"""The bad-input kit of the fault matrix (``python benchmarks/faults.py badinput``).

Damaged documents, fingerprint rows, texts and arguments through every command that reads
them (``dedup``, ``fingerprint``, ``pairs``, ``compare``, ``index build``, ``add``, ``query``
and ``query-batch``; bad request bodies to ``neardup serve`` are the ``service`` family),
with ``--on-error raise`` and ``skip`` where the command has it. Every case is judged, not
only run:

- no traceback and no exception out of the command (a crash);
- an error is one line, naming the file (and the line of a bad row), with exit status 1
  (2: click's usage error for a bad argument), and leaves no output behind;
- an exit 0 is checked against a reference: with ``skip``, the outputs are byte for byte
  those of the same command on the file without the bad row (or, for a row accepted with
  ``raise``, those of the ``raise`` run); an accepted row keeps every good document; a file
  damaged as a whole read with exit 0 is a wrong answer.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

GOOD_TEXTS = [
    "the quick brown fox jumps over the lazy dog near the river bank this morning",
    "the quick brown fox jumps over the lazy cat near the river bank this morning",
    "a crawler fetches pages and stores every text it finds in a large index of pages",
    "a crawler fetches pages and stores every text it finds in a large index of sites",
    "shingles of words become signatures and signatures become candidate pairs to verify",
    "timestamps decide which document of a group is the original one kept by dedup",
]
GOOD_ROWS = [{"id": f"g{i}", "text": t, "ts": 1000 + i} for i, t in enumerate(GOOD_TEXTS)]
REFUSED = (frozenset(), b"refused")
"""The reference of a command that refuses even the file without its bad row (no rows)."""
BAD_LINE = 4
"""The line of every bad row (after three good ones)."""

BAD_JSONL = {
    "malformed": '{"id": "a", "text": "x"',
    "id-int-huge": '{"id": ' + "9" * 5000 + ', "text": "x y z"}',
    "text-number": '{"id": "a", "text": 5}',
    "text-null": '{"id": "a", "text": null}',
    "text-array": '{"id": "a", "text": ["x", "y"]}',
    "text-object": '{"id": "a", "text": {"x": 1}}',
    "text-bool": '{"id": "a", "text": true}',
    "text-empty": '{"id": "a", "text": ""}',
    "text-surrogate": '{"id": "a", "text": "x \\ud800 y"}',
    "text-bad-escape": '{"id": "a", "text": "x \\u12 y"}',
    "text-raw-control": '{"id": "a", "text": "x \x01 y"}',
    "missing-text": '{"id": "a"}',
    "missing-id": '{"text": "a b c"}',
    "id-null": '{"id": null, "text": "a b c"}',
    "id-float": '{"id": 1.5, "text": "a b c"}',
    "id-bool": '{"id": true, "text": "a b c"}',
    "id-array": '{"id": ["a"], "text": "a b c"}',
    "id-empty": '{"id": "", "text": "a b c"}',
    "id-tab": '{"id": "a\\tb", "text": "a b c"}',
    "id-newline": '{"id": "a\\nb", "text": "a b c"}',
    "id-cr": '{"id": "a\\rb", "text": "a b c"}',
    "id-nul": '{"id": "a\\u0000b", "text": "a b c"}',
    "id-long": '{"id": "' + "i" * 2000 + '", "text": "a b c"}',
    "id-repeated": '{"id": "g0", "text": "another text with the same id"}',
    "id-surrogate": '{"id": "a\\udc00", "text": "a b c"}',
    "ts-bool": '{"id": "a", "text": "a b c", "ts": true}',
    "ts-string": '{"id": "a", "text": "a b c", "ts": "soon"}',
    "ts-huge": '{"id": "a", "text": "a b c", "ts": "' + "9" * 5000 + '"}',
    "ts-huge-number": '{"id": "a", "text": "a b c", "ts": ' + "9" * 400 + "}",
    "ts-nan": '{"id": "a", "text": "a b c", "ts": NaN}',
    "ts-infinity": '{"id": "a", "text": "a b c", "ts": Infinity}',
    "ts-negative": '{"id": "a", "text": "a b c", "ts": -5}',
    "ts-float": '{"id": "a", "text": "a b c", "ts": 1.5}',
    "ts-bad-date": '{"id": "a", "text": "a b c", "ts": "2024-13-45T00:00:00"}',
    "ts-null": '{"id": "a", "text": "a b c", "ts": null}',
    "ts-object": '{"id": "a", "text": "a b c", "ts": {"s": 1}}',
    "array": "[1, 2]",
    "number": "5",
    "string": '"a b c"',
    "null": "null",
    "trailing-garbage": '{"id": "a", "text": "a b c"} junk',
    "two-objects": '{"id": "a", "text": "a b c"}{"id": "b", "text": "d e f"}',
    "deep-nesting": '{"id": "a", "text": "x", "more": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "duplicate-key": '{"id": "a", "id": "b", "text": "a b c"}',
    "extra-fields": '{"id": "a", "text": "a b c", "lang": "en", "n": [1, 2]}',
    "bom": '\ufeff{"id": "a", "text": "a b c"}',
    "blank": "",
    "whitespace": "   \t ",
    "crlf": '{"id": "a", "text": "a b c"}\r',
}
"""One bad row each, inserted as line ``BAD_LINE`` of the good rows (JSONL)."""


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def with_row(data: bytes, row: bytes, line: int = BAD_LINE) -> bytes:
    """``data`` with ``row`` inserted as its line ``line``."""
    lines = data.splitlines(keepends=True)
    return b"".join([*lines[: line - 1], row, *lines[line - 1 :]])


def _cut_short(data: bytes) -> bytes:
    """zstd data of ``data`` in two frames, the second cut short after its header: the data of
    the first end at a line's end, so a reader that takes the cut for the end of the input
    reads half the documents and no bad line."""
    lines = data.splitlines(keepends=True)
    compressor = zstandard.ZstdCompressor(level=1)
    half = compressor.compress(b"".join(lines[: len(lines) // 2]))
    return half + compressor.compress(b"".join(lines[len(lines) // 2 :]))[:12]


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def raw_files() -> dict[str, tuple[bytes, bytes | None]]:
    """name -> (data, the same file without its bad row; None: damaged as a whole, which no
    command may read with exit 0)."""
    good = jsonl(GOOD_ROWS)
    csv_good = "id,text,ts\n" + "".join(f"{r['id']},{r['text']},{r['ts']}\n" for r in GOOD_ROWS)
    tsv_good = "id\ttext\tts\n" + "".join(f"{r['id']}\t{r['text']}\t{r['ts']}\n" for r in GOOD_ROWS)

    def csv_with(row: str) -> bytes:
        return with_row(csv_good.encode(), row.encode(), BAD_LINE + 1)

    def tsv_with(row: str) -> bytes:
        return with_row(tsv_good.encode(), row.encode(), BAD_LINE + 1)

    columns = {k: [r[k] for r in GOOD_ROWS] for k in ("id", "text", "ts")}
    gz = gzip.compress(good * 20)
    return {
        "invalid-utf8.jsonl": (with_row(good, b'{"id": "b", "text": "\xff\xfe"}\n'), good),
        # Every row bad: with skip, no documents and every row counted as skipped.
        "utf16.jsonl": (good.decode().encode("utf-16"), b""),
        "empty.jsonl": (b"", b""),
        "no-final-newline.jsonl": (good.rstrip(b"\n"), good),
        "damaged.jsonl.gz": (b"\x1f\x8b\x08\x00" + bytes(range(7, 47)), None),
        "truncated.jsonl.gz": (gz[: len(gz) // 2], None),
        "damaged.jsonl.zst": (b"\x28\xb5\x2f\xfd" + bytes(range(7, 47)), None),
        # Cut short at a line's end: read as whole, it would be fewer documents and exit 0.
        "truncated.jsonl.zst": (_cut_short(good * 50), None),
        "quotes.csv": (csv_with('"a,"b c d",5\n'), csv_good.encode()),
        "short-row.csv": (csv_with("b\n"), csv_good.encode()),
        "long-row.csv": (csv_with("b,x y z,5,extra\n"), csv_good.encode()),
        "bad-ts.csv": (csv_with("b,x y z,soon\n"), csv_good.encode()),
        "no-text-column.csv": (b"id,body\na,b c d\n", None),
        "header-only.csv": (b"id,text,ts\n", b"id,text,ts\n"),
        "invalid-utf8.csv": (
            with_row(csv_good.encode(), b"b,x \xff y,5\n", BAD_LINE + 1),
            csv_good.encode(),
        ),
        "short-row.tsv": (tsv_with("b\n"), tsv_good.encode()),
        "empty-id.tsv": (tsv_with("\tx y z\t5\n"), tsv_good.encode()),
        "damaged.parquet": (b"PAR1" + bytes(range(64)) + b"PAR1", None),
        "text-int.parquet": (
            _parquet(pa.table({**columns, "text": list(range(6))})),
            _parquet(pa.table({k: pa.array(v[:0]) for k, v in columns.items()})),
        ),
        "id-null.parquet": (
            _parquet(pa.table({**columns, "id": ["g0", None, "g2", "g3", "g4", "g5"]})),
            _parquet(pa.table({k: [v[i] for i in (0, 2, 3, 4, 5)] for k, v in columns.items()})),
        ),
    }


def fingerprint_lines(rows: list[str]) -> dict[str, bytes]:
    """One bad SimHash fingerprint row each (``rows``: the good ones, ``id<TAB>hex<TAB>ts``)."""
    fp = rows[0].split("\t")[1]
    return {
        "fp-short": f"a\t{fp[:15]}\t5",
        "fp-long": f"a\t{fp}0\t5",
        "fp-nonhex": "a\tzzzzzzzzzzzzzzzz\t5",
        "fp-empty": "a\t\t5",
        "fp-negative": "a\t-1\t5",
        "fp-huge": "a\t" + "9" * 5000 + "\t5",
        "fields-1": "a",
        "fields-4": f"a\t{fp}\t5\tmore",
        "ts-string": f"a\t{fp}\tsoon",
        "ts-huge": f"a\t{fp}\t" + "9" * 5000,
        "id-empty": f"\t{fp}\t5",
        "id-repeated": f"{rows[0].split(chr(9))[0]}\t{fp}\t5",
        "id-long": "i" * 2000 + f"\t{fp}\t5",
        "id-nul": f"a\x00b\t{fp}\t5",
        "invalid-utf8": "a\udcff\t" + fp + "\t5",
        "blank": "",
        "crlf": f"a\t{fp}\t5\r",
    }


TEXT_FILES: dict[str, tuple[bytes | None, bool]] = {
    # name -> (bytes; None: a directory), whether a command may read it
    "valid.txt": (GOOD_TEXTS[0].encode(), True),
    "empty.txt": (b"", True),
    "bom.txt": (b"\xef\xbb\xbf" + GOOD_TEXTS[0].encode(), True),
    "crlf.txt": (GOOD_TEXTS[0].replace(" the ", "\r\n").encode(), True),
    "nul.txt": (GOOD_TEXTS[0].encode() + b"\x00 tail", True),
    "invalid-utf8.txt": (GOOD_TEXTS[0].encode() + b" \xff\xfe", False),
    "utf16.txt": (GOOD_TEXTS[0].encode("utf-16"), False),
    "gzip.txt": (gzip.compress(GOOD_TEXTS[0].encode()), False),
    "folder.txt": (None, False),
}

BAD_FINGERPRINT_ARGS = {
    "nonhex": ("zzzz", False),
    "bare-0x": ("0x", False),
    "17-hex": ("abcdef0123456789a", False),
    "negative": ("-1", True),  # two's complement: the help names -2**63..2**64-1
    "2-to-64": (str(2**64), False),
    "5000-digits": ("9" * 5000, False),
    "empty": ("", False),
    "valid-0x": ("0x" + "f" * 16, True),
}


# ------------------------------------------------------------------------------------------
# Outputs and judging
# ------------------------------------------------------------------------------------------


def table_file(path: Path) -> tuple[frozenset[str], bytes] | None:
    """(IDs in the first column, the bytes) of a TSV output; None if it is absent."""
    if not path.exists():
        return None
    data = path.read_bytes()
    lines = data.splitlines()
    if lines and lines[0].split(b"\t", 1)[0] in (b"id", b"id_a"):
        lines = lines[1:]  # a header
    ids = [line.split(b"\t", 1)[0].decode(errors="replace") for line in lines]
    return frozenset(ids), data


def index_rows(path: Path) -> tuple[frozenset[str], bytes] | None:
    """(IDs, every record but its position) of the index at ``path``; None without one."""
    if not (path / "index.sqlite").exists():
        return None
    conn = sqlite3.connect(f"file:{path / 'index.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT id, fingerprint, timestamp, duplicate_id, original_id, group_size "
            "FROM documents ORDER BY position"
        ).fetchall()
    finally:
        conn.close()
    return frozenset(r[0] for r in rows), repr(rows).encode()


class Judge:
    """Judges a case's outcome (see the module docstring) into the family's tally."""

    def __init__(self, tally) -> None:
        self.tally = tally
        self.accepted: dict[str, object] = {}

    def error(self, case: str, code: int, lines: list[str], names: list[str], line: int | None):
        """Record an error exit: one line, naming one of ``names`` (and ``line``), exit 1/2."""
        text = lines[0] if lines else ""
        if code not in (1, 2):
            self.tally.record(case, "wrong exit", f"exit {code}: {text}")
        elif len(lines) != 1:
            self.tally.record(case, "unclear error", " | ".join(lines)[-200:])
        elif not any(name in text for name in names):
            self.tally.record(case, "unclear error", f"names no file: {text}")
        elif line is not None and f"line {line}" not in text:
            self.tally.record(case, "unclear error", f"names no line: {text}")
        else:
            return True
        return False

    def rows(
        self,
        case: str,
        key: str,
        skip: bool,
        result: tuple[int, str, str],
        output: Callable[[], tuple[frozenset[str], bytes] | None],
        reference: tuple[frozenset[str], bytes] | None,
        before: tuple[frozenset[str], bytes] | None,
        names: list[str],
        line: int | None,
    ) -> None:
        """A row-reading command: ``reference`` is its output on the file without the bad row
        (None: the file is damaged as a whole), ``before`` what its output held before it
        ran (an index being added to), ``key`` names the file and command across modes."""
        code, text, crash = result
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        got = output()
        if crash:
            self.tally.record(case, "crash", crash)
        elif code != 0:
            if not self.error(case, code, lines, names, line):
                return
            if got is not None and got != before:
                self.tally.record(case, "WRONG", "an error left a partial output")
            elif skip and reference not in (None, REFUSED):
                self.tally.record(case, "not skipped", lines[0])
            else:
                self.tally.record(case, "clear error", lines[0])
        elif reference is None:
            self.tally.record(case, "WRONG", "a file damaged as a whole read with exit 0")
        elif reference is REFUSED:
            self.tally.record(case, "WRONG", "exit 0 where the file without its bad row fails")
        elif got is None:
            self.tally.record(case, "WRONG", "exit 0 without its output")
        elif not skip:
            self.accepted[key] = got
            good = reference[0] | (before[0] if before else frozenset())
            if not good <= got[0]:
                self.tally.record(case, "WRONG", f"accepted, lost {sorted(good - got[0])[:5]}")
            else:
                self.tally.record(case, "accepted", f"{len(got[0])} documents")
        else:
            expected = self.accepted.get(key, reference)
            if got != expected:
                self.tally.record(case, "WRONG", "skip: output differs from the reference")
            else:
                self.tally.record(case, "skipped" if key not in self.accepted else "accepted")

    def verdict(self, case: str, result: tuple[int, str, str], readable: bool, names: list[str]):
        """A one-text command: ``readable`` says whether exit 0 is right."""
        code, text, crash = result
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if crash:
            self.tally.record(case, "crash", crash)
        elif code == 0:
            self.tally.record(case, "accepted" if readable else "WRONG", (lines or [""])[0])
        elif readable:
            self.tally.record(case, "WRONG", f"a readable input refused: {text[-150:]}")
        elif self.error(case, code, lines, names, None):
            self.tally.record(case, "clear error", lines[0])


# ------------------------------------------------------------------------------------------
# The family
# ------------------------------------------------------------------------------------------


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def badinput_family(work: Path, run, tally) -> bool:
    """Every bad input through every reading command; ``run`` runs the CLI in this process
    ((exit, output, crash)), ``tally`` counts (benchmarks/faults.py's)."""
    judge = Judge(tally)
    base_docs = work / "base.jsonl"
    base_docs.write_bytes(
        jsonl([{"id": f"b{i}", "text": t + " stored", "ts": i} for i, t in enumerate(GOOD_TEXTS)])
    )
    minhash_idx, simhash_idx = work / "base-minhash.idx", work / "base-simhash.idx"
    for idx, method in ((minhash_idx, "minhash"), (simhash_idx, "simhash")):
        shutil.rmtree(idx, ignore_errors=True)
        assert run(["index", "build", base_docs, "-d", idx, "--method", method, "-q"])[0] == 0
    documents = _document_files(work)
    _documents(work, documents, run, judge, minhash_idx)
    _fingerprints(work, run, judge, simhash_idx)
    _texts(work, run, judge, minhash_idx, simhash_idx)
    return tally.summary()


def _with_time(line: str) -> str:
    """A bad row given a valid ``ts`` unless its flaw is about it (the kit runs with
    ``--time-field ts``: a row without one would be refused for that alone)."""
    body = line.rstrip("\r")
    if '"ts"' in line or not body.lstrip("\ufeff").startswith("{") or not body.endswith("}"):
        return line
    return body[:-1] + ', "ts": 7}' + line[len(body) :]


def _document_files(work: Path) -> dict[str, tuple[Path, Path | None, int | None]]:
    """name -> (file, the file without its bad row or None, the bad row's line or None)."""
    folder = _fresh(work / "documents")
    good = jsonl(GOOD_ROWS)
    clean = folder / "clean.jsonl"
    clean.write_bytes(good)
    lines = good.decode().splitlines(keepends=True)
    found = {}
    for name, line in BAD_JSONL.items():
        path = folder / f"{name}.jsonl"
        body = [*lines[: BAD_LINE - 1], _with_time(line) + "\n", *lines[BAD_LINE - 1 :]]
        path.write_bytes("".join(body).encode("utf-8", "surrogatepass"))
        found[name] = (path, clean, BAD_LINE)
    for name, (data, without) in raw_files().items():
        path = folder / name
        path.write_bytes(data)
        reference = None
        if without is not None:
            reference = folder / f"clean-{name}"
            reference.write_bytes(without)
        line = None
        if without is not None and data != without and not name.endswith(".parquet"):
            line = BAD_LINE + 1 if name.endswith((".csv", ".tsv")) else BAD_LINE
        if name.startswith(("no-final-newline", "utf16")):
            line = 1 if name.startswith("utf16") else None
        found[name] = (path, reference, line)
    return found


def _documents(work: Path, documents, run, judge: Judge, idx: Path) -> None:
    out = work / "out"
    target = work / "target.idx"

    def commands(path: Path, flag: list[str]) -> dict[str, tuple[list, Callable]]:
        common = ["--time-field", "ts", "-q", *flag]
        return {
            "dedup": (
                ["dedup", path, "-o", out / "g.tsv", *common],
                lambda: table_file(out / "g.tsv"),
            ),
            "fingerprint": (
                ["fingerprint", path, "-o", out / "f.tsv", *common],
                lambda: table_file(out / "f.tsv"),
            ),
            "index-build": (
                ["index", "build", path, "-d", out / "b.idx", "--method", "minhash", *common],
                lambda: index_rows(out / "b.idx"),
            ),
            "index-add": (
                ["index", "add", path, "-d", target, *common],
                lambda: index_rows(target),
            ),
            "query-batch": (
                ["index", "query-batch", path, "-d", idx, "-o", out / "q.tsv", *common],
                lambda: table_file(out / "q.tsv"),
            ),
        }

    references: dict[tuple[Path, str], object] = {}
    before = index_rows(idx)
    for name, (path, clean, line) in documents.items():
        for command in commands(path, []):
            for on_error in ("raise", "skip"):
                flag = ["--on-error", on_error]
                if clean is not None and (clean, command) not in references:
                    _fresh(out)
                    shutil.rmtree(target, ignore_errors=True)
                    shutil.copytree(idx, target)
                    args, output = commands(clean, flag)[command]
                    code, text, crash = run(args)
                    assert not crash, f"reference {clean} {command}: {crash}"
                    references[clean, command] = output() if code == 0 else REFUSED
                _fresh(out)
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(idx, target)
                args, output = commands(path, flag)[command]
                judge.rows(
                    f"{name}/{command}/{on_error}",
                    f"{name}/{command}",
                    on_error == "skip",
                    run(args),
                    output,
                    references.get((clean, command)) if clean else None,
                    before if command == "index-add" else None,
                    [path.name],
                    line,
                )


def _fingerprints(work: Path, run, judge: Judge, idx: Path) -> None:
    folder = _fresh(work / "fingerprints")
    clean = folder / "clean.tsv"
    code, text, _ = run(
        ["fingerprint", work / "documents" / "clean.jsonl", "-o", clean, "--method", "simhash"]
        + ["--time-field", "ts", "-q"]
    )
    assert code == 0, text
    good = clean.read_text().splitlines(keepends=True)
    out = work / "out"
    target = work / "target.idx"

    def commands(path: Path, flag: list[str]) -> dict[str, tuple[list, Callable]]:
        common = ["-q", *flag]
        fps = ["--from-fingerprints", *common]
        return {
            "pairs": (["pairs", path, "-o", out / "p.tsv", *common], lambda: _pairs(out / "p.tsv")),
            "index-build": (
                ["index", "build", path, "-d", out / "b.idx", *fps],
                lambda: index_rows(out / "b.idx"),
            ),
            "index-add": (["index", "add", path, "-d", target, *fps], lambda: index_rows(target)),
            "query-batch": (
                ["index", "query-batch", path, "-d", idx, "-o", out / "q.tsv", *fps],
                lambda: table_file(out / "q.tsv"),
            ),
        }

    references = {}
    for command in commands(clean, []):
        _fresh(out)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(idx, target)
        args, output = commands(clean, [])[command]
        code, text, _ = run(args)
        assert code == 0, f"reference {command}: {text}"
        references[command] = output()
    before = index_rows(idx)
    for name, line in fingerprint_lines(good).items():
        path = folder / f"{name}.tsv"
        body = [*good[: BAD_LINE - 1], line + "\n", *good[BAD_LINE - 1 :]]
        path.write_bytes("".join(body).encode("utf-8", "surrogateescape"))
        for command in references:
            for on_error in ("raise", "skip"):
                _fresh(out)
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(idx, target)
                args, output = commands(path, ["--on-error", on_error])[command]
                judge.rows(
                    f"fps-{name}/{command}/{on_error}",
                    f"fps-{name}/{command}",
                    on_error == "skip",
                    run(args),
                    output,
                    references[command],
                    before if command == "index-add" else None,
                    [path.name],
                    BAD_LINE,
                )


def _pairs(path: Path) -> tuple[frozenset[str], bytes] | None:
    """``pairs``' output: (IDs it names, bytes); a pair holds two of the good IDs."""
    found = table_file(path)
    if found is None:
        return None
    data = found[1]
    lines = data.splitlines()
    if lines and lines[0].startswith(b"id_a"):
        lines = lines[1:]
    ids = {part.decode(errors="replace") for line in lines for part in line.split(b"\t")[:2]}
    return frozenset(ids), data


def _texts(work: Path, run, judge: Judge, minhash_idx: Path, simhash_idx: Path) -> None:
    """``compare`` (the file as A and as B) and ``index query --file`` / stdin over each text
    file; ``index query --fingerprint`` over bad values."""
    folder = _fresh(work / "texts")
    valid = folder / "valid.txt"
    for name, (data, _) in TEXT_FILES.items():
        path = folder / name
        if data is None:
            path.mkdir()
        else:
            path.write_bytes(data)
    missing = folder / "missing.txt"
    cases = {**TEXT_FILES, "missing.txt": (None, False)}
    for name, (data, readable) in cases.items():
        path = folder / name
        names = [path.name]
        judge.verdict(
            f"text-{name}/compare-a", run(["compare", "--file", path, valid]), readable, names
        )
        judge.verdict(
            f"text-{name}/compare-b", run(["compare", "--file", valid, path]), readable, names
        )
        query = ["index", "query", "-d", minhash_idx, "--json"]
        judge.verdict(f"text-{name}/query-file", run([*query, "--file", path]), readable, names)
        if data is not None and path != missing:
            result = run([*query, "-"], stdin=data)
            names = ["stdin", "standard input"]
            judge.verdict(f"text-{name}/query-stdin", result, readable, names)
    for name, (value, readable) in BAD_FINGERPRINT_ARGS.items():
        args = ["index", "query", "-d", simhash_idx, "--fingerprint", value]
        judge.verdict(f"fingerprint-arg-{name}/query", run(args), readable, ["--fingerprint"])
