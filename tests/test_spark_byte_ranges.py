"""JSON Lines files read by byte ranges in Spark tasks (``neardup.engines.spark.byte_ranges``):
the ranges' lines against a plain split of the file, and the rows read against Spark's text
source (the path the ranges replace) and the local reader."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from neardup.engines.spark import byte_ranges  # noqa: E402
from neardup.engines.spark import read as spark_read  # noqa: E402
from neardup.engines.spark.byte_ranges import (  # noqa: E402
    LineBlock,
    line_start_at,
    missing_local_file,
    range_blocks,
    range_lines,
    reads_by_ranges,
    split_bytes,
)
from neardup.engines.spark.read import read_documents_spark  # noqa: E402
from neardup.engines.spark.rows import _plain_block, rows_task  # noqa: E402
from neardup.io import InputError, read_documents  # noqa: E402
from neardup.settings import Settings  # noqa: E402

_PIECES = [b"{}", b'{"x": "\xc3\xa9"}', b"", b" ", b"\r", b"ab\rcd", b"\xff\xfe", b"\xef\xbb\xbf{}"]


@settings(deadline=None, max_examples=60)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=12),
    ending=st.sampled_from([b"\n", b"\r\n"]),
    last_break=st.booleans(),
    cuts=st.lists(st.integers(0, 120), max_size=4),
)
def test_ranges_hold_each_line_once_in_order(tmp_path_factory, pieces, ending, last_break, cuts):
    data = ending.join(pieces) + (ending if last_break and pieces else b"")
    path = tmp_path_factory.mktemp("r") / "d.jsonl"
    path.write_bytes(data)
    # The reference: the file split at "\n", one "\r" before it dropped, no empty last line.
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    expected = [line[:-1] if line.endswith(b"\r") and i < data.count(b"\n") else line
                for i, line in enumerate(expected)]  # fmt: skip
    expected = [line.decode("utf-8", "replace") for line in expected]
    bounds = sorted({0, len(data), *(min(c, len(data)) for c in cuts)})
    got, lines, places, before = [], [], [], 0
    for start, stop in zip(bounds, bounds[1:]):
        first, end = line_start_at(str(path), start), line_start_at(str(path), stop)
        count = range_lines(str(path), first, end)
        # A block is valid until the next is read: each made a batch at once.
        batches = [
            b.batch() for b in range_blocks(str(path), first, end, 100 + before, before + 1, "d")
        ]
        values = [v for b in batches for v in b.column("value").to_pylist()]
        places += [
            (loc, span)
            for b in batches
            for loc, span in zip(b.column("_nd_loc").to_pylist(), b.column("_nd_span").to_pylist())
        ]
        assert len(values) == count
        got += values
        lines += [v for b in batches for v in b.column("_nd_line").to_pylist()]
        assert [v for b in batches for v in b.column("_nd_pos").to_pylist()] == [
            100 + before + i for i in range(count)
        ]
        before += count
    assert got == expected
    assert lines == list(range(1, len(expected) + 1))
    # Each line's place: where it starts in the file, and its bytes with its break.
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10 and i + 1 < len(data)]
    assert places == [(a, b - a) for a, b in zip(starts, [*starts[1:], len(data)])][: len(got)]


_ROWS = [
    b'{"id": "a", "text": "x y"}',
    b'{"id": 7, "text": "\xc3\xa9 z", "ts": 5}',
    b'{"id": "b", "text": "far too long for the limit"}',
    b'{"id": "c"}',
    b'{"id": "d", "text": "\xff"}',
    b'\xef\xbb\xbf{"id": "e", "text": "w"}',
    b"",
    b"[1]",
]


@settings(deadline=None, max_examples=60)
@given(
    rows=st.lists(st.sampled_from(_ROWS), min_size=1, max_size=8),
    ending=st.sampled_from([b"\n", b"\r\n"]),
    last_break=st.booleans(),
    timed=st.booleans(),
)
def test_a_block_gives_the_rows_of_its_lines(rows, ending, last_break, timed):
    # Parsed from its bytes or read line by line, a block of lines gives the rows its lines
    # give as a batch (each line's own check, a BOM dropped at line 1 only).
    data = ending.join(rows) + (ending if last_break else b"")
    assume(data)  # a file's blocks are never empty
    n = data.count(b"\n") + (not data.endswith(b"\n"))
    block = LineBlock(np.frombuffer(data, np.uint8), np.arange(n) + 7, np.arange(1, n + 1), "d")
    names = ("id", "text", "ts" if timed else None)
    via_block = [
        r for b in rows_task([block], "jsonl", names, max_doc_bytes=12) for r in b.to_pylist()
    ]
    via_lines = [
        r
        for b in rows_task([block.batch()], "jsonl", names, max_doc_bytes=12)
        for r in b.to_pylist()
    ]
    assert via_block == via_lines
    # The rows the block path reads: a text and an ID, and a time when one is asked for.
    lines = data.removesuffix(ending).split(ending)
    good = all(line in _ROWS[1 if timed else 0 : 2] for line in lines)
    assert (_plain_block(block, names, 12) is not None) == (good and data[:3] != b"\xef\xbb\xbf")


def test_split_bytes_follows_sparks_rule_and_refuses_bad_values():
    assert split_bytes(10 << 30, 4, 128 << 20) == 128 << 20
    assert split_bytes(100 << 20, 4, 128 << 20) == 25 << 20
    assert split_bytes(1 << 20, 4, 128 << 20) == 4 << 20
    with pytest.raises(ValueError, match="cores >= 1"):
        split_bytes(10, 0, 128)


def test_only_plain_local_files_are_read_by_ranges(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("{}\n")
    assert reads_by_ranges(str(path)) and reads_by_ranges(f"file:{path}")
    assert not reads_by_ranges(str(tmp_path))
    assert not reads_by_ranges(str(tmp_path / "*.jsonl"))
    assert not reads_by_ranges("s3a://bucket/d.jsonl")


def test_only_plain_local_paths_are_found_missing(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("{}\n")
    assert not missing_local_file(str(path)) and not missing_local_file(f"file:{path}")
    assert not missing_local_file(str(tmp_path))  # a directory: Spark lists it
    assert missing_local_file(str(tmp_path / "nope.jsonl"))
    assert missing_local_file(f"file://{tmp_path}/nope.jsonl")
    assert not missing_local_file(str(tmp_path / "*.jsonl"))  # a glob: Spark expands it
    assert not missing_local_file("s3a://bucket/nope.jsonl")


def _rows(docs):
    rows = docs.orderBy("pos").collect()
    return [tuple(r[c] for c in docs.columns) for r in rows]


def _read_both(spark, monkeypatch, paths, **options):
    """The documents and counters by ranges and by Spark's text source."""
    out = []
    for ranged in (True, False):
        if not ranged:
            monkeypatch.setattr(spark_read, "reads_by_ranges", lambda path: False)
        docs, stats, _ = read_documents_spark(spark, [str(p) for p in paths], **options)
        out.append((docs, stats.documents, stats.bytes, dict(stats.skipped_reasons)))
    return out


def test_ranges_read_the_rows_sparks_text_source_reads(spark, monkeypatch, tmp_path):
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta", "말", "글", "été"]
    lines = []
    for i in range(3000):
        text = " ".join(rng.choice(words, int(rng.integers(1, 30))))
        lines.append(json.dumps({"id": f"d{i}", "text": text, "ts": int(i)}, ensure_ascii=i % 2))
        if i % 997 == 0:
            lines.append("")  # blank lines keep their place in the positions
    lines[0] = "\ufeff" + lines[0]  # a BOM, dropped from the first line
    first = tmp_path / "a.jsonl"
    first.write_text("\r\n".join(lines[:1500]) + "\r\n", encoding="utf-8")
    second = tmp_path / "b.jsonl"
    second.write_text("\n".join(lines[1500:]), encoding="utf-8")  # no final break
    # Small splits: many ranges, most starting inside a line.
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(37_000))
    try:
        # The ranges' lines counted by a Spark job (as under a cluster's master), then by the
        # driver's threads (as under a local master): the same positions and lines.
        for sign, counts_here in ((None, False), (Settings(), True)):
            monkeypatch.setattr(byte_ranges, "_counts_here", lambda spark, here=counts_here: here)
            ranged, text_source = _read_both(
                spark, monkeypatch, [first, second], time_field="ts", sign=sign
            )
            monkeypatch.undo()
            assert ranged[1:] == text_source[1:]
            assert ranged[1] == 3000
            docs = ranged[0]
            if sign is None:  # texts kept: the very rows
                assert _rows(docs) == _rows(text_source[0])
                continue
            # Signed as read: each row holds its line's place instead of its text, and the
            # text read back from there is the one Spark's text source read.
            columns = [c for c in text_source[0].columns if c != "text"]
            assert _rows(docs.select(*columns)) == _rows(text_source[0].select(*columns))
            assert {r["text"] for r in docs.select("text").distinct().collect()} == {""}
            fetched = docs.select("pos", "loc", "span").mapInArrow(
                docs._neardup_refetch, "pos long, text string"
            )
            assert _rows(fetched) == _rows(text_source[0].select("pos", "text"))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_ranges_skip_and_report_bad_rows_as_the_local_reader(spark, monkeypatch, tmp_path):
    path = tmp_path / "bad.jsonl"
    rows = [
        '{"id": "a", "text": "one two", "ts": 1}',
        '{"id": "b", "text": null, "ts": 2}',
        '{"id": "a", "text": "a repeated id", "ts": 3}',
        '{"id": "c", "text": "three',
        "",
        '{"id": "d", "text": "four", "ts": "later"}',
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ranged, text_source = _read_both(spark, monkeypatch, [path], time_field="ts", on_error="skip")
    assert ranged[1:] == text_source[1:]
    assert _rows(ranged[0]) == _rows(text_source[0])
    assert sum(ranged[3].values()) == 4
    monkeypatch.undo()
    with pytest.raises(InputError) as local:
        read_documents([str(path)], time_field="ts").read_all()
    with pytest.raises(InputError) as remote:
        read_documents_spark(spark, [str(path)], time_field="ts")
    assert str(remote.value) == str(local.value)


def _near_duplicate_lines(n, seed):
    """JSON Lines of ``n`` documents: texts of 30–60 words, a third exact copies and a third
    a few words changed of an earlier one."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)] + ["말", "글", "été"]
    texts = []
    for i in range(n):
        kind = i % 3 if i else 0
        if kind == 0:
            texts.append(" ".join(rng.choice(words, int(rng.integers(30, 60)))))
            continue
        base = texts[int(rng.integers(0, i))].split()
        if kind == 2:
            for at in rng.choice(len(base), 3, replace=False):
                base[int(at)] = str(rng.choice(words))
        texts.append(" ".join(base))
    return "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))


@pytest.mark.parametrize(
    "options, colocated",
    [((), True), (("--grouping", "center", "--pairs", "all"), True), ((), False)],
    ids=["colocated", "center-all", "joined"],
)
def test_ranged_runs_verify_from_the_texts_read_back(
    spark, monkeypatch, tmp_path, options, colocated
):
    # Read by ranges, the run stores the compared documents' places, not their sets: the
    # tasks relating pairs read their texts back and shingle them, and the steps that join
    # sets (past the broadcast of positions, center grouping, every pair) make them from the
    # places. Every way gives the local engine's bytes.
    from click.testing import CliRunner

    from neardup.cli import main
    from neardup.engines.spark import groups as spark_groups
    from neardup.engines.spark import verify as spark_verify

    path = tmp_path / "d.jsonl"
    path.write_text(_near_duplicate_lines(600, seed=5), encoding="utf-8")
    if not colocated:
        monkeypatch.setattr(spark_verify, "BROADCAST_POSITIONS", 0)
    seen = {"colocated": [], "sets": []}
    relate_colocated, compared_sets = spark_verify.relate_colocated, spark_verify.compared_sets

    def colocated_spy(*args):
        seen["colocated"].append(args[5] is not None)  # the refetch task
        return relate_colocated(*args)

    def sets_spy(frames, data, settings):
        seen["sets"].append(spark_verify.holds_places(data))
        return compared_sets(frames, data, settings)

    monkeypatch.setattr(spark_verify, "relate_colocated", colocated_spy)
    monkeypatch.setattr(spark_verify, "compared_sets", sets_spy)
    monkeypatch.setattr(spark_groups, "compared_sets", sets_spy)
    outputs = {}
    for engine in ("local", "spark"):
        groups, pairs = tmp_path / f"g_{engine}.tsv", tmp_path / f"p_{engine}.tsv"
        args = ["dedup", str(path), "-o", str(groups), "--pairs-out", str(pairs), *options]
        result = CliRunner().invoke(
            main, [*args, "--engine", engine, "--workers", "1"], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        outputs[engine] = (groups.read_bytes(), pairs.read_bytes())
    assert outputs["spark"] == outputs["local"]
    assert outputs["local"][1].count(b"\n") > 100
    if colocated:
        assert seen["colocated"] and all(seen["colocated"])
    else:
        assert not seen["colocated"]
    if options or not colocated:
        assert True in seen["sets"]  # sets made from places for the joins


def test_the_driver_counts_the_lines_under_a_local_master_only(spark):
    assert byte_ranges._counts_here(spark)  # the tests' session: local[2]
    for master, here in (("local[*]", True), ("spark://127.0.0.1:7077", False), ("yarn", False)):
        session = SimpleNamespace(sparkContext=SimpleNamespace(master=master))
        assert byte_ranges._counts_here(session) == here, master
