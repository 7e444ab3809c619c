"""Writing tables and records (neardup.io.write)."""

import csv
import doctest
import io
import json
import os
from datetime import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from io_helpers import read_all

import neardup.io as nio
import neardup.io.write as io_write
from neardup.ids import id_problem
from neardup.io import (
    TableWriter,
    read_documents,
    write_records,
    write_table,
)


def sample_columns():
    return {
        "id": ["a", "b\tc", "d\ne", 'f"g,h', "ünï", "x\\y"],
        "fp": np.array([0, 1, 2**63, 2**64 - 1, 5, 6], dtype=np.uint64),
        "n": np.array([-1, 0, 1, 2, 3, 4], dtype=np.int64),
        "flag": np.array([True, False, True, False, True, False]),
        "score": [0.5, 1.0, None, -2.25, 1e20, 3.0],
        "note": [None, "", "x", "y", "z", "w"],
    }


@pytest.mark.parametrize(
    "name", ["t.tsv", "t.csv", "t.jsonl", "t.parquet", "t.tsv.gz", "t.csv.zst", "t.jsonl.gz"]
)
def test_write_table_deterministic(tmp_path, name):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    write_table(a / name, sample_columns())
    write_table(b / name, sample_columns())
    assert (a / name).read_bytes() == (b / name).read_bytes()
    assert [p.name for p in a.iterdir()] == [name]  # no temporary files left behind


def test_write_table_csv_round_trip(tmp_path):
    p = tmp_path / "t.csv"
    cols = sample_columns()
    write_table(p, cols)
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    assert list(df.columns) == list(cols)
    assert df["id"].tolist() == cols["id"]
    assert df["fp"].tolist() == [str(int(x)) for x in cols["fp"]]
    assert df["flag"].tolist() == ["true", "false"] * 3
    assert df["score"].tolist() == ["0.5", "1.0", "", "-2.25", "1e+20", "3.0"]
    with open(p, newline="", encoding="utf-8") as f:
        assert list(csv.reader(f))[1][0] == "a"  # unquoted when not needed


def test_write_table_tsv_escaping(tmp_path):
    p = tmp_path / "t.tsv"
    cols = sample_columns()
    write_table(p, cols)
    lines = p.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "id\tfp\tn\tflag\tscore\tnote"
    assert len(lines) == 8 and lines[-1] == ""
    rows = [line.split("\t") for line in lines[1:-1]]
    assert all(len(r) == 6 for r in rows)
    assert [r[0] for r in rows] == ["a", "b\\tc", "d\\ne", 'f"g,h', "ünï", "x\\\\y"]
    assert rows[3][1] == "18446744073709551615" and rows[0][3] == "true" and rows[0][5] == ""
    write_table(p, {"id": ["x"]}, header=False)
    assert p.read_bytes() == b"x\n"


def test_write_table_jsonl_and_parquet_round_trip(tmp_path):
    cols = sample_columns()
    write_table(tmp_path / "t.jsonl", cols)
    rows = [
        json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [r["id"] for r in rows] == cols["id"]
    assert [r["fp"] for r in rows] == [int(x) for x in cols["fp"]]
    assert [r["score"] for r in rows] == cols["score"]
    assert [r["flag"] for r in rows] == cols["flag"].tolist()
    assert rows[0]["note"] is None and list(rows[0]) == list(cols)
    assert "ünï" in (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    write_table(tmp_path / "t.parquet", cols)
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.column_names == list(cols)
    assert table.column("fp").type == pa.uint64()
    assert table.column("fp").to_pylist() == [int(x) for x in cols["fp"]]
    assert table.column("id").to_pylist() == cols["id"]


def test_write_table_json_control_characters(tmp_path):
    values = ["\x00\x01\x1f", 'a"b\\c', "\u2028é", None, ""]
    write_table(tmp_path / "t.jsonl", {"v": values, "k": pa.array(values, pa.large_string())})
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").split("\n")
    assert [json.loads(line)["v"] for line in lines[:-1]] == values


def test_write_table_atomic_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "out.tsv"
    p.write_text("previous\n")
    monkeypatch.setattr(io_write, "_TEXT_CHUNK_ROWS", 2)
    bad = ["a", "b", "c", "d", object(), "f"]
    with pytest.raises(TypeError, match=r"column 'id'.*rows 4\.\.5"):
        write_table(p, {"id": bad})
    assert p.read_text() == "previous\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.tsv"]
    q = tmp_path / "new.csv"
    with pytest.raises(TypeError):
        write_table(q, {"id": bad})
    assert not q.exists() and sorted(x.name for x in tmp_path.iterdir()) == ["out.tsv"]


def test_write_table_chunks_match_single_pass(tmp_path, monkeypatch):
    cols = sample_columns()
    write_table(tmp_path / "one.jsonl", cols)
    monkeypatch.setattr(io_write, "_TEXT_CHUNK_ROWS", 4)
    write_table(tmp_path / "two.jsonl", cols)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["t.tsv", "t.csv", "t.jsonl", "t.tsv.gz"])
def test_write_table_many_chunks_encoded_ahead_keep_their_order(tmp_path, monkeypatch, name):
    # More chunks than encoding threads: each is written in its rows' order.
    rng = np.random.default_rng(5)
    cols = {
        "id": [f"d{i}" + "\t," * int(i % 3 == 0) for i in range(97)],
        "v": rng.integers(0, 2**64 - 1, 97, dtype=np.uint64, endpoint=True),
        "s": rng.random(97),
    }
    write_table(tmp_path / ("one." + name), cols)
    monkeypatch.setattr(io_write, "_TEXT_CHUNK_ROWS", 5)
    write_table(tmp_path / ("many." + name), cols)
    one = (tmp_path / ("one." + name)).read_bytes()
    assert (tmp_path / ("many." + name)).read_bytes() == one
    if not name.endswith(".gz"):
        assert one.count(b"\n") == 97 + (name != "t.jsonl")


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    name=st.sampled_from(["t.tsv", "t.csv", "t.jsonl", "t.tsv.zst", "t.csv.gz", "t.parquet"]),
)
def test_table_writer_pieces_give_the_bytes_of_the_whole(tmp_path_factory, rows, cuts, name):
    # A table written in pieces (empty pieces included) is byte for byte the table written
    # whole; Parquet is checked against pyarrow's own writer of the whole table, with row
    # groups small enough that pieces and row groups cross.
    tmp = tmp_path_factory.mktemp("pieces")
    rng = np.random.default_rng(rows)
    cols = {
        "id": [f"d{i}" + "\t," * int(i % 4 == 0) for i in range(rows)],
        "fp": rng.integers(0, 2**64 - 1, rows, dtype=np.uint64, endpoint=True),
        "note": [None if i % 5 == 0 else "é" * (i % 3) for i in range(rows)],
    }
    bounds = [0, *sorted(min(c, rows) for c in cuts), rows]
    group = 7
    io_write._WRITE_CHUNK_ROWS, saved = group, io_write._WRITE_CHUNK_ROWS
    try:
        with TableWriter(tmp / ("pieces." + name)) as writer:
            for a, b in zip(bounds, bounds[1:]):
                writer.write({k: v[a:b] for k, v in cols.items()})
        if name.endswith("parquet"):
            whole = pa.table({k: pa.array(v) for k, v in cols.items()})
            pq.write_table(whole, tmp / name, compression="zstd", row_group_size=group)
        else:
            write_table(tmp / name, cols)
    finally:
        io_write._WRITE_CHUNK_ROWS = saved
    assert (tmp / ("pieces." + name)).read_bytes() == (tmp / name).read_bytes()


def test_table_writer_parquet_pages_are_those_of_the_whole_table(tmp_path, monkeypatch):
    # Pieces of more than a page (1 MB) of text: Arrow starts a page at the end of each
    # chunk it is given, so a row group must be one chunk, as in the whole table.
    monkeypatch.setattr(io_write, "_WRITE_CHUNK_ROWS", 1000)
    text = [f"{i:08x}" * 512 for i in range(2500)]
    with TableWriter(tmp_path / "pieces.parquet") as writer:
        for start in range(0, 2500, 300):
            writer.write({"text": text[start : start + 300]})
    pq.write_table(
        pa.table({"text": text}), tmp_path / "whole.parquet", compression="zstd",
        row_group_size=1000,
    )  # fmt: skip
    assert (tmp_path / "pieces.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


@pytest.mark.parametrize("pieces", [[0, 7, 0], [7, 0], [3, 0, 4, 0, 7, 0]])
def test_table_writer_parquet_empty_pieces_add_no_row_group(tmp_path, monkeypatch, pieces):
    monkeypatch.setattr(io_write, "_WRITE_CHUNK_ROWS", 7)
    ids = [f"d{i}" for i in range(sum(pieces))]
    with TableWriter(tmp_path / "pieces.parquet") as writer:
        start = 0
        for size in pieces:
            writer.write({"id": ids[start : start + size]})
            start += size
    pq.write_table(
        pa.table({"id": ids}), tmp_path / "whole.parquet", compression="zstd", row_group_size=7
    )
    assert (tmp_path / "pieces.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


@pytest.mark.parametrize("name", ["t.tsv", "t.parquet"])
def test_table_writer_keeps_nothing_when_the_block_fails(tmp_path, name):
    target = tmp_path / name
    with pytest.raises(RuntimeError, match="stop"):
        with TableWriter(target) as writer:
            writer.write({"id": ["a", "b"]})
            raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=r"columns must be \['id'\].*got \['key'\]"):
        with TableWriter(target) as writer:
            writer.write({"id": ["a"]})
            writer.write({"key": ["b"]})
    assert list(tmp_path.iterdir()) == []


def test_write_table_validation_and_stdout(tmp_path, capsysbinary):
    with pytest.raises(ValueError, match="same length"):
        write_table(tmp_path / "t.tsv", {"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match=r"\.tsv, \.csv, \.jsonl"):
        write_table(tmp_path / "t.xlsx", {"a": [1]})
    with pytest.raises(ValueError, match="Parquet"):
        write_table(tmp_path / "t.parquet.gz", {"a": [1]})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_table(tmp_path / "missing" / "t.tsv", {"a": [1]})
    with pytest.raises(TypeError, match="column 'a' has type"):
        write_table(tmp_path / "t.tsv", {"a": [[1], [2]]})
    write_table("-", {"id": ["x", "y"], "v": [1, 2]})
    assert capsysbinary.readouterr().out == b"id\tv\nx\t1\ny\t2\n"
    write_table("-", {"id": ["x"]}, output_format="jsonl")
    assert capsysbinary.readouterr().out == b'{"id":"x"}\n'
    write_table(tmp_path / "empty.csv", {"id": []})
    assert (tmp_path / "empty.csv").read_text() == "id\n"


def test_write_records_round_trip(tmp_path):
    records = [
        {"id": "1", "text": "plain", "meta": {"k": [1, 2]}},
        {"id": "2", "text": 'tab\tnew\nline "q"', "extra": True},
        {"id": "3", "text": "ünï", "when": datetime(2024, 1, 2, 3, 4, 5)},
    ]
    write_records(tmp_path / "k.jsonl", records)
    back = [
        json.loads(line) for line in (tmp_path / "k.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert back[:2] == records[:2] and back[2]["when"] == "2024-01-02T03:04:05"
    for name in ["k.csv", "k.tsv", "k.tsv.gz"]:
        write_records(tmp_path / name, records)
        batch, _ = read_all([tmp_path / name], keep_records=True)
        assert batch.texts == [r["text"] for r in records]
        assert list(batch.records[0]) == ["id", "text", "meta", "extra", "when"]
        assert batch.records[0]["meta"] == '{"k": [1, 2]}' and batch.records[1]["extra"] == "true"
        assert batch.records[0]["extra"] == ""
    kept = read_all([tmp_path / "k.jsonl"], keep_records=True)[0].records
    write_records(tmp_path / "again.jsonl", kept)
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "k.jsonl").read_bytes()
    flat = [{"id": "1", "text": "a"}, {"id": "2", "text": "b", "n": 3}]
    write_records(tmp_path / "k.parquet", flat)
    assert pq.read_table(tmp_path / "k.parquet").to_pylist() == [
        {"id": "1", "text": "a", "n": None},
        {"id": "2", "text": "b", "n": 3},
    ]
    with pytest.raises(TypeError, match="record 1 must be a dict"):
        write_records(tmp_path / "x.jsonl", [{"a": 1}, [1]])
    assert not (tmp_path / "x.jsonl").exists()


def test_write_records_tsv_is_escaped_not_quoted(tmp_path):
    p = tmp_path / "k.tsv"
    write_records(p, [{"id": "1", "text": 'tab\tnew\nline "q" back\\slash\r'}])
    assert p.read_text(encoding="utf-8") == 'id\ttext\n1\ttab\\tnew\\nline "q" back\\\\slash\\r\n'
    assert read_all([p])[0].texts == ['tab\tnew\nline "q" back\\slash\r']


TRICKY = st.text(
    st.sampled_from(list("\t\n\r\\\"',; ab\\tnr\x00é한\u2028\x85")) | st.characters(codec="utf-8"),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        # IDs by the ID rules; the texts hold any character the writer must escape.
        st.tuples(TRICKY.filter(lambda i: id_problem(i) is None), TRICKY),
        min_size=1,
        max_size=8,
        unique_by=lambda r: r[0],
    )
)
def test_tsv_and_csv_write_read_round_trip_property(rows):
    import tempfile

    from neardup.quality import read_table

    ids, texts = [r[0] for r in rows], [r[1] for r in rows]
    with tempfile.TemporaryDirectory() as d:
        for name in ("t.tsv", "t.tsv.gz", "t.csv"):
            path = os.path.join(d, name)
            write_table(path, {"id": ids, "text": texts})
            batch = read_documents([path]).read_all()
            assert (batch.ids, batch.texts) == (ids, texts)
        path = os.path.join(d, "r.tsv")
        write_records(path, [{"id": i, "text": t} for i, t in rows])
        batch = read_documents([path], keep_records=True).read_all()
        assert (batch.ids, batch.texts) == (ids, texts)
        assert nio.read_tsv_table(path).to_pydict() == {"id": ids, "text": texts}
        frame = read_table(os.path.join(d, "t.tsv"))
        assert frame["id"].tolist() == ids and frame["text"].tolist() == texts
        for s in ids + texts:
            assert nio.tsv_unescape(nio.tsv_escape(s)) == s
            assert not any(c in nio.tsv_escape(s) for c in "\t\n\r")


def test_docstring_examples():
    assert doctest.testmod(io_write).failed == 0


def _reference_lines(columns: list[list], fmt: str) -> bytes:
    """Rows encoded one cell at a time by the standard library (csv) or the TSV rule."""

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    rows = [[cell(v) for v in row] for row in zip(*columns)]
    if fmt == "tsv":
        return "".join("\t".join(map(nio.tsv_escape, r)) + "\n" for r in rows).encode()
    lines = []
    for r in rows:  # ended by "\r\n", so that the writer quotes a lone "\r" too
        out = io.StringIO()
        csv.writer(out, lineterminator="\r\n").writerow(r)
        lines.append(out.getvalue()[:-2] + "\n")
    return "".join(lines).encode()


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda k: st.tuples(
            st.lists(st.sampled_from(["text", "int", "bool"]), min_size=k, max_size=k),
            st.integers(0, 12),
            st.integers(0, 3),
            st.randoms(use_true_random=False),
        )
    )
)
def test_encoded_chunk_is_each_row_encoded_on_its_own(spec):
    # Columns of strings (any character to escape), integers and booleans, with nulls, as
    # arrays sliced from a larger one (a chunk of a table starts inside its buffers).
    kinds, n, skip, rnd = spec
    values = []
    for kind in kinds:
        # Some columns hold nothing to escape, so their cells are the arrays as given.
        chars = rnd.choice(['\t\n\r\\",; abé한\x00\x85', "ab é한"])
        make = {
            "text": lambda chars=chars: "".join(
                rnd.choice(chars) for _ in range(rnd.randint(0, 5))
            ),
            "int": lambda: rnd.randint(-(2**40), 2**40),
            "bool": lambda: rnd.random() < 0.5,
        }[kind]
        nulls = rnd.choice([0, 0.2])
        values.append([None if rnd.random() < nulls else make() for _ in range(n + skip)])
    # Large strings are taken as they are, offsets and all.
    types = [pa.large_string() if k == "text" and rnd.random() < 0.5 else None for k in kinds]
    arrays = [pa.array(v, t).slice(skip) for v, t in zip(values, types)]
    names = [f"c{j}" for j in range(len(kinds))]
    columns = [v[skip:] for v in values]
    for fmt in ("tsv", "csv"):
        got = bytes(io_write._encode_chunk(names, arrays, fmt))
        assert got == _reference_lines(columns, fmt)


_INTEGER_TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
]


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from([*_INTEGER_TYPES, pa.bool_()]),
    st.integers(0, 40),
    st.integers(0, 9),
    st.sampled_from(["", "null"]),
    st.randoms(use_true_random=False),
)
def test_number_cells_are_arrows_casts_to_text(kind, n, skip, null_text, rnd):
    # Arrow's own cast is the reference: the compiled cells must be its bytes, for every
    # integer width (its extremes included), booleans, nulls or none, and an array sliced
    # from a larger one.
    if pa.types.is_boolean(kind):
        draw = lambda: rnd.random() < 0.5  # noqa: E731
    else:
        info = np.iinfo(kind.to_pandas_dtype())
        picks = [int(info.min), int(info.max), 0, -1 if info.min < 0 else 1, 9, 10]
        draw = lambda: (  # noqa: E731
            rnd.choice(picks) if rnd.random() < 0.3 else rnd.randint(int(info.min), int(info.max))
        )
    nulls = rnd.choice([0.0, 0.3])
    values = [None if rnd.random() < nulls else draw() for _ in range(n + skip)]
    arr = pa.array(values, kind).slice(skip)
    got = io_write._number_cells(arr, null_text)
    want = pc.fill_null(arr.cast(pa.large_string()), null_text)
    assert got.type == pa.large_string()
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("kind", [pa.int64(), pa.uint64()])
def test_number_cells_count_the_digits_of_every_power_of_ten_exactly(kind):
    # Past 2**53 a digit count done in floating point rounds 10**k - 1 up to 10**k.
    top = np.iinfo(kind.to_pandas_dtype()).max
    values = [v for k in range(1, 20) for v in (10**k - 1, 10**k) if v <= top] + [top]
    arr = pa.array(values + ([] if kind == pa.uint64() else [-(10**17 - 1)]), kind)
    want = arr.cast(pa.large_string())
    assert io_write._number_cells(arr, "").to_pylist() == want.to_pylist()


def test_encoded_chunk_takes_columns_over_read_only_buffers(tmp_path):
    # IDs read through a map of an Arrow file sit in read-only buffers, the integer and
    # boolean cells in writable ones: the rows' lines are laid out from both.
    ids = ["a", "b\tc", "", "ünï"]
    path = tmp_path / "ids.arrow"
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_file(sink, pa.schema([("id", pa.large_string())])) as writer,
    ):
        writer.write_table(pa.table({"id": pa.array(ids, pa.large_string())}))
    with pa.memory_map(str(path)) as source:
        mapped = pa.ipc.open_file(source).read_all().column("id").chunk(0)
    assert not mapped.buffers()[2].is_mutable
    frozen = pa.LargeStringArray.from_buffers(
        4, pa.py_buffer(np.array([0, 1, 1, 2, 3], np.int64).tobytes()), pa.py_buffer(b"xyz")
    )
    columns = [ids, [1, -2, None, 40], [True, None, False, True], ["x", "", "y", "z"]]
    arrays = [mapped, pa.array(columns[1]), pa.array(columns[2]), frozen]
    for fmt in ("tsv", "csv"):
        got = bytes(io_write._encode_chunk(["a", "b", "c", "d"], arrays, fmt))
        assert got == _reference_lines(columns, fmt)
