"""Reading documents from files, folders and stdin (neardup.io.documents)."""

import doctest
import gzip
import io
import os
import sys
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from io_helpers import US, jsonl, read_all, us_of

import neardup.io.documents as io_documents
from neardup.io import (
    InputError,
    parse_timestamp,
    read_documents,
)


def test_jsonl_basic_and_batches(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"id": i, "text": f"doc {i}", "x": [1]} for i in range(5)])
    reader = read_documents([p], batch_size=2)
    batches = list(reader)
    assert [len(b) for b in batches] == [2, 2, 1]
    assert [i for b in batches for i in b.ids] == ["0", "1", "2", "3", "4"]
    assert np.concatenate([b.positions for b in batches]).tolist() == [0, 1, 2, 3, 4]
    assert all(b.timestamps.dtype == np.int64 and not b.timestamps.any() for b in batches)
    assert batches[0].raw_timestamps == [None, None] and batches[0].records is None
    assert reader.stats.documents == 5 and reader.stats.files == 1 and reader.stats.skipped == 0
    assert reader.stats.bytes == sum(len(f"doc {i}") for i in range(5))
    with pytest.raises(RuntimeError, match="only once"):
        iter(reader)


def test_blank_lines_bom_and_utf8_bytes(tmp_path):
    p = tmp_path / "d.ndjson"
    p.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "h\xc3\xa9"}\n\n   \n{"id": "b", "text": ""}')
    batch, stats = read_all([p])
    assert batch.ids == ["a", "b"] and batch.texts == ["hé", ""]
    assert stats.bytes == 3


@pytest.mark.parametrize("batch_size", [1, 2, 10])
def test_utf8_bytes_of_kept_rows_only(tmp_path, batch_size):
    """Non-ASCII texts are counted with their batch: a skipped row (duplicate ID, unpaired
    surrogate read by the standard library) does not count, whatever the batch size."""
    p = tmp_path / "d.jsonl"
    p.write_text(
        '{"id": "a", "text": "한국어"}\n{"id": "b", "text": "é😀"}\n'
        '{"id": "a", "text": "ü"}\n{"id": "c", "text": "\\ud800"}\n{"id": "d", "text": "x"}\n',
        encoding="utf-8",
    )
    batch, stats = read_all([p], on_error="skip", batch_size=batch_size)
    assert batch.ids == ["a", "b", "d"] and stats.skipped == 2
    assert stats.bytes == sum(len(t.encode("utf-8")) for t in batch.texts) == 16


def test_field_names_and_keep_records(tmp_path):
    rows = [{"doc": "x", "body": "hello", "when": 10, "extra": {"k": 1}}]
    p = jsonl(tmp_path / "d.json", rows)
    batch, _ = read_all(
        [p], id_field="doc", text_field="body", time_field="when", keep_records=True
    )
    assert batch.ids == ["x"] and batch.texts == ["hello"]
    assert batch.timestamps.tolist() == [10 * US] and batch.raw_timestamps == [10]
    assert batch.records == rows


def test_csv_and_tsv(tmp_path):
    c = tmp_path / "d.csv"
    c.write_text('id,text,t\n1,"multi\nline, ""quoted""",2024-01-02\n2,plain,5\n', encoding="utf-8")
    t = tmp_path / "d.tsv"
    t.write_text("id\ttext\tt\n3\ta,b c\t7\n", encoding="utf-8")
    batch, stats = read_all([c, t], time_field="t", keep_records=True)
    assert batch.ids == ["1", "2", "3"]
    assert batch.texts == ['multi\nline, "quoted"', "plain", "a,b c"]
    assert batch.timestamps.tolist() == [
        us_of(datetime(2024, 1, 2, tzinfo=timezone.utc)),
        5 * US,
        7 * US,
    ]
    assert batch.raw_timestamps == ["2024-01-02", "5", "7"]
    assert batch.records[2] == {"id": "3", "text": "a,b c", "t": "7"}
    assert batch.positions.tolist() == [0, 1, 2] and stats.files == 2


def test_parquet(tmp_path):
    p = tmp_path / "d.parquet"
    n = 2500
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "text": [f"t{i}" for i in range(n)],
            "ts": pa.array(
                [datetime(2024, 1, 1) + timedelta(seconds=i) for i in range(n)], pa.timestamp("ms")
            ),
            "other": [i % 2 == 0 for i in range(n)],
        }
    )
    pq.write_table(table, p, row_group_size=1000)
    reader = read_documents([p], time_field="ts", batch_size=1000, keep_records=True)
    batches = list(reader)
    assert [len(b) for b in batches] == [1000, 1000, 500]
    batch = batches[2]
    assert batch.ids[0] == "2000" and batch.texts[0] == "t2000"
    expected = us_of(datetime(2024, 1, 1, tzinfo=timezone.utc)) + 2000 * US
    assert batch.timestamps[0] == expected
    assert batch.records[0]["other"] is True and batch.positions[0] == 2000


def test_parquet_time_types(tmp_path):
    p = tmp_path / "d.parquet"
    utc = datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    pq.write_table(
        pa.table(
            {
                "id": ["a", "b"],
                "text": ["x", "y"],
                "tz": pa.array([utc, utc], pa.timestamp("us", tz="Asia/Tokyo")),
                "d": pa.array([date(1970, 1, 2), date(1969, 12, 31)], pa.date32()),
                "s": [1.5, 2],
            }
        ),
        p,
    )
    assert read_all([p], time_field="tz")[0].timestamps.tolist() == [us_of(utc)] * 2
    assert read_all([p], time_field="d")[0].timestamps.tolist() == [86_400 * US, -86_400 * US]
    assert read_all([p], time_field="s")[0].timestamps.tolist() == [1_500_000, 2 * US]
    with pytest.raises(
        InputError,
        match=r"d.parquet: missing field 'nope' \(no such column; columns are: id, text, tz, d",
    ):
        read_all([p], time_field="nope")


def test_parquet_row_errors(tmp_path):
    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": ["a", None, "c"], "text": ["x", "y", None]}), p)
    with pytest.raises(InputError) as e:
        read_all([p])
    assert (e.value.line, e.value.field, e.value.unit) == (2, "id", "row")
    assert "row 2" in str(e.value)
    batch, stats = read_all([p], on_error="skip")
    assert batch.ids == ["a"] and stats.skipped_reasons == {
        "missing field 'id'": 1,
        "missing field 'text'": 1,
    }


def test_txt_directory(tmp_path):
    root = tmp_path / "corpus"
    (root / "b" / "c").mkdir(parents=True)
    files = {
        "z.txt": "last",
        "b/c/d.txt": "deep",
        "a.txt": "first",
        "b/x.txt": "héllo",
        "b/skip.md": "no",
    }
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    os.utime(root / "a.txt", ns=(0, 1_700_000_000_123_456_789))
    batch, stats = read_all([root])
    assert batch.ids == ["a.txt", "b/c/d.txt", "b/x.txt", "z.txt"]
    assert batch.texts == ["first", "deep", "héllo", "last"]
    assert batch.timestamps[0] == 1_700_000_000_123_456
    assert batch.raw_timestamps[0] == "2023-11-14T22:13:20.123456Z"
    assert parse_timestamp(batch.raw_timestamps[0]) == batch.timestamps[0]
    assert stats.files == 4


def test_txt_directory_invalid_utf8(tmp_path):
    (tmp_path / "ok.txt").write_text("fine")
    (tmp_path / "bad.txt").write_bytes(b"line one\nline \xff two\n")
    with pytest.raises(InputError) as e:
        read_all([tmp_path])
    assert (
        e.value.path.endswith("bad.txt") and e.value.line == 2 and e.value.reason == "invalid UTF-8"
    )
    batch, stats = read_all([tmp_path], on_error="skip")
    assert batch.ids == ["ok.txt"] and stats.skipped_reasons == {"invalid UTF-8": 1}


def fake_stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_stdin(monkeypatch):
    fake_stdin(monkeypatch, b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n')
    batch, _ = read_all(["-"])
    assert batch.ids == ["a", "b"]
    fake_stdin(monkeypatch, b"id,text\nq,z\n")
    assert read_all("-", input_format="csv")[0].ids == ["q"]
    fake_stdin(monkeypatch, gzip.compress(b'{"id": 1, "text": "t"}\n'))
    assert read_all(["-"], input_format="jsonl.gz")[0].ids == ["1"]
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"id": 1, "text": "no buffer"}\n'))
    assert read_all(["-"])[0].texts == ["no buffer"]


def test_stdin_error_names_stdin(monkeypatch):
    fake_stdin(monkeypatch, b'{"id": 1}\n')
    with pytest.raises(InputError, match=r"<stdin>, line 1: missing field 'text'"):
        read_all(["-"])


def test_positions_continue_and_batches_span_files(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", [{"id": f"a{i}", "text": "x"} for i in range(3)])
    b = jsonl(tmp_path / "b.jsonl", [{"id": f"b{i}", "text": "y"} for i in range(3)])
    batches = list(read_documents([a, b], batch_size=4))
    assert [b_.ids for b_ in batches] == [["a0", "a1", "a2", "b0"], ["b1", "b2"]]
    assert batches[1].positions.tolist() == [4, 5]


def test_time_field_in_jsonl(tmp_path):
    p = jsonl(
        tmp_path / "d.jsonl",
        [
            {"id": 1, "text": "a", "t": 1.5},
            {"id": 2, "text": "b", "t": "1970-01-01T00:00:02"},
            {"id": 3, "text": "c", "t": "1970-01-01T01:00:03+01:00"},
        ],
    )
    batch, _ = read_all([p], time_field="t")
    assert batch.timestamps.tolist() == [1_500_000, 2 * US, 3 * US]
    assert batch.raw_timestamps == [1.5, "1970-01-01T00:00:02", "1970-01-01T01:00:03+01:00"]


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ("9" * 400, "seconds is out of range"),  # a JSON number past any float
        ("-" + "9" * 400, "seconds is out of range"),
        ("true", "neither seconds since the epoch nor ISO 8601"),
    ],
)
def test_a_time_past_any_float_is_a_bad_timestamp_naming_file_line_and_field(tmp_path, raw, detail):
    """A JSON integer of hundreds of digits as the time is a bad row (file, line, field),
    skippable, not Python's OverflowError out of the reader."""
    p = tmp_path / "d.jsonl"
    p.write_text('{"id": "a", "text": "x", "t": 1}\n{"id": "b", "text": "y", "t": ' + raw + "}\n")
    with pytest.raises(InputError, match=rf"d.jsonl, line 2, field 't': bad timestamp .*{detail}"):
        read_all([p], time_field="t")
    batch, stats = read_all([p], time_field="t", on_error="skip")
    assert batch.ids == ["a"] and stats.skipped == 1


@pytest.mark.parametrize("batch_size", [3, 8])
def test_fetch_gives_the_documents_of_the_first_pass(tmp_path, batch_size):
    """Read again by location, in batches of the reader's size: plain rows through one Arrow
    parse a batch, a batch with a row Arrow could read differently line by line; either way
    what the first pass read, the skipped rows never returned, the last line without its
    line break."""
    lines = [
        f'{{"id": "d{i}", "text": "text {i} é 한", "t": "2020-01-0{1 + i % 9}T00:00:00"}}'
        for i in range(40)
    ]
    lines[7] = '{"id": 7, "text": "integer id", "t": 1700000000}'
    lines[12] = '{"id": "dup", "text": "first", "text": "duplicate keys: the last wins", "t": 5}'
    lines[20] = '{"id": "sur", "text": "a lone surrogate \\ud800", "t": 6}'
    lines[31] = '{"id": "esc", "text": "escapes \\u00e9 \\n end", "t": 1.5}'
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")  # no final line break
    reader = read_documents([path], time_field="t", on_error="skip", batch_size=batch_size)
    first = reader.read_all()
    assert len(first) == 39 and "sur" not in first.ids
    rng = np.random.default_rng(3)
    for trial in range(6):
        rows = np.sort(rng.choice(len(first), int(rng.integers(1, len(first))), replace=False))
        if trial == 0:
            rows = np.arange(len(first))
        ids, texts, times, raw, kinds = [], [], [], [], set()
        for batch in reader.fetch(first.positions[rows], first.locations[rows]):
            ids += batch.ids
            texts += list(batch.texts)
            times += batch.timestamps.tolist()
            raw += batch.raw_timestamps
            kinds.add(type(batch.texts).__name__)
            np.testing.assert_array_equal(
                batch.positions, first.positions[rows][: len(ids)][-len(batch) :]
            )
        assert ids == [first.ids[i] for i in rows]
        assert texts == [first.texts[i] for i in rows]
        assert times == first.timestamps[rows].tolist()
        assert raw == [first.raw_timestamps[i] for i in rows]
        if trial == 0:  # both ways were taken
            assert kinds == {"TextColumn", "list"}


def test_argument_validation(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"id": 1, "text": "x"}])
    with pytest.raises(ValueError, match="on_error must be one of raise, skip; got 'ignore'"):
        read_documents([p], on_error="ignore")
    with pytest.raises(ValueError, match="batch_size"):
        read_documents([p], batch_size=0)
    with pytest.raises(ValueError, match="empty"):
        read_documents([])
    with pytest.raises(ValueError, match="must differ"):
        read_documents([p], id_field="x", text_field="x")
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        read_documents([tmp_path / "nope.jsonl"])
    (tmp_path / "d.xml").write_text("id,text\nq,w\n")
    with pytest.raises(ValueError, match=r"\.jsonl.*\.csv.*\.tsv.*\.parquet"):
        read_documents([tmp_path / "d.xml"])
    with pytest.raises(
        ValueError, match="input_format must be one of jsonl, csv, tsv, parquet, txt"
    ):
        read_documents([p], input_format="xml")
    with pytest.raises(ValueError, match="directory"):
        read_documents([tmp_path], input_format="jsonl")
    # An explicit format overrides the extension.
    assert read_all([tmp_path / "d.xml"], input_format="csv")[0].ids == ["q"]


def test_docstring_examples():
    assert doctest.testmod(io_documents).failed == 0
