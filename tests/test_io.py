import csv
import doctest
import gzip
import io
import json
import os
import pickle
import sys
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.io as nio
from neardup.io import (
    InputError,
    format_fingerprints,
    parse_fingerprint,
    parse_timestamp,
    read_documents,
    read_fingerprints,
    write_records,
    write_table,
)

US = 1_000_000


def jsonl(path, rows):
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def read_all(paths, **kw):
    reader = read_documents(paths, **kw)
    return reader.read_all(), reader.stats


def us_of(dt):
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)


# ---------------------------------------------------------------------------- formats


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


def test_csv_line_numbers_count_physical_lines(tmp_path):
    c = tmp_path / "d.csv"
    c.write_text('id,text\n1,"a\nb\nc"\n2,x,extra\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_all([c])
    assert e.value.line == 5 and e.value.reason == "malformed CSV row"
    assert "d.csv, line 5" in str(e.value)


def test_csv_missing_column_always_raises(tmp_path):
    c = tmp_path / "d.csv"
    c.write_text("id,body\n1,x\n", encoding="utf-8")
    for on_error in ("raise", "skip"):
        with pytest.raises(InputError, match=r"missing field 'text'.*columns are: id, body"):
            read_all([c], on_error=on_error)


def test_csv_large_field(tmp_path):
    text = "w " * 200_000
    c = tmp_path / "d.csv"
    c.write_text(f"id,text\n1,{text}\n", encoding="utf-8")
    batch, _ = read_all([c])
    assert batch.texts == [text]


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


def test_compressed_inputs(tmp_path):
    body = b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n'
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(body))
    # Two zstd frames, as concatenated or multi-threaded writers produce.
    cctx = zstandard.ZstdCompressor()
    second = body.replace(b'"a"', b'"c"').replace(b'"b"', b'"d"')
    (tmp_path / "e.jsonl.zst").write_bytes(cctx.compress(second[:30]) + cctx.compress(second[30:]))
    (tmp_path / "f.csv.zstd").write_bytes(cctx.compress(b"id,text\ne,z\n"))
    batch, _ = read_all(
        [tmp_path / "d.jsonl.gz", tmp_path / "e.jsonl.zst", tmp_path / "f.csv.zstd"]
    )
    assert batch.ids == ["a", "b", "c", "d", "e"]
    assert batch.positions.tolist() == [0, 1, 2, 3, 4]


def test_corrupt_compressed_input_always_raises(tmp_path):
    p = tmp_path / "d.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"id": "a", "text": "x"}\n' * 100)[:-20])
    with pytest.raises(InputError, match="unreadable input"):
        read_all([p], on_error="skip")


def test_positions_continue_and_batches_span_files(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", [{"id": f"a{i}", "text": "x"} for i in range(3)])
    b = jsonl(tmp_path / "b.jsonl", [{"id": f"b{i}", "text": "y"} for i in range(3)])
    batches = list(read_documents([a, b], batch_size=4))
    assert [b_.ids for b_ in batches] == [["a0", "a1", "a2", "b0"], ["b1", "b2"]]
    assert batches[1].positions.tolist() == [4, 5]


# ---------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, 0),
        (1_700_000_000, 1_700_000_000 * US),
        (-1.25, -1_250_000),
        ("1700000000", 1_700_000_000 * US),
        ("1.5", 1_500_000),
        ("2024-01-02", us_of(datetime(2024, 1, 2, tzinfo=timezone.utc))),
        ("2024-01-02T03:04:05Z", us_of(datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc))),
        ("2024-01-02T03:04:05", us_of(datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc))),
        ("2024-01-02 03:04", us_of(datetime(2024, 1, 2, 3, 4, tzinfo=timezone.utc))),
        (
            "2024-01-02T03:04:05.5+02:00",
            us_of(datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=timezone.utc)),
        ),
        (
            "2024-01-02T03:04:05.123456789-0130",
            us_of(datetime(2024, 1, 2, 4, 34, 5, 123456, tzinfo=timezone.utc)),
        ),
        (datetime(2000, 1, 1), us_of(datetime(2000, 1, 1, tzinfo=timezone.utc))),
        (date(1970, 1, 3), 2 * 86_400 * US),
    ],
)
def test_parse_timestamp(value, expected):
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "yesterday",
        "2024-13-01",
        "2024-02-30",
        "2024-01-02T25:00",
        "2024-01-02T",
        True,
        None,
        [1],
        float("nan"),
        10**20,
    ],
)
def test_parse_timestamp_rejects(value):
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(value)


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


# ---------------------------------------------------------------------------- bad input

BAD_JSONL = [
    # (line content, reason, field, time_field)
    (b'{"id": "x", "text": ', "malformed JSON", None, None),
    (b'["id", "text"]', "not a JSON object", None, None),
    (b'{"text": "t"}', "missing field 'id'", "id", None),
    (b'{"id": null, "text": "t"}', "missing field 'id'", "id", None),
    (b'{"id": "x"}', "missing field 'text'", "text", None),
    (b'{"id": "x", "text": null}', "missing field 'text'", "text", None),
    (b'{"id": "x", "text": 5}', "text not a string", "text", None),
    (b'{"id": "x", "text": "\\ud800"}', "invalid UTF-8", "text", None),
    (b'{"id": [1], "text": "t"}', "bad id", "id", None),
    (b'{"id": "", "text": "t"}', "empty id", "id", None),
    (b'{"id": "x", "text": "caf\xe9"}', "invalid UTF-8", None, None),
    (b'{"id": "x", "text": "t", "ts": "soon"}', "bad timestamp", "ts", "ts"),
    (b'{"id": "x", "text": "t"}', "missing field 'ts'", "ts", "ts"),
    (b'{"id": "good", "text": "dup"}', "duplicate id", "id", None),
]


def bad_file(tmp_path, content):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(
        b'{"id": "good", "text": "ok", "ts": 1}\n\n'
        + content
        + b'\n{"id": "after", "text": "z", "ts": 2}\n'
    )
    return p


@pytest.mark.parametrize("content, reason, field, time_field", BAD_JSONL)
def test_bad_jsonl_raises(tmp_path, content, reason, field, time_field):
    p = bad_file(tmp_path, content)
    with pytest.raises(InputError) as e:
        read_all([p], time_field=time_field)
    err = e.value
    assert (err.path, err.line, err.field, err.reason) == (str(p), 3, field, reason)
    message = str(err)
    assert str(p) in message and "line 3" in message and reason in message
    if field is not None:
        assert f"'{field}'" in message
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("content, reason, field, time_field", BAD_JSONL)
def test_bad_jsonl_skip(tmp_path, content, reason, field, time_field):
    p = bad_file(tmp_path, content)
    batch, stats = read_all([p], time_field=time_field, on_error="skip")
    assert batch.ids == ["good", "after"] and batch.positions.tolist() == [0, 1]
    assert stats.skipped == 1 and stats.skipped_reasons == {reason: 1}
    assert stats.documents == 2


def test_json_array_hint(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('[{"id": 1, "text": "x"},\n{"id": 2, "text": "y"}]\n')
    with pytest.raises(InputError, match="JSON Lines"):
        read_all([p])


def test_duplicate_ids_across_files(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", [{"id": 1, "text": "x"}, {"id": 2, "text": "y"}])
    b = tmp_path / "b.csv"
    b.write_text("id,text\n3,z\n2,w\n")
    with pytest.raises(InputError) as e:
        read_all([a, b])
    err = e.value
    assert (err.path, err.line, err.field, err.reason) == (str(b), 3, "id", "duplicate id")
    assert f"{a}, line 2" in str(err) and f"{b}, line 3" in str(err)
    batch, stats = read_all([a, b], on_error="skip")
    assert batch.ids == ["1", "2", "3"] and batch.texts[1] == "y"
    assert stats.skipped_reasons == {"duplicate id": 1}


def test_csv_bad_rows_skip(tmp_path):
    c = tmp_path / "d.csv"
    c.write_bytes(
        b"id,text,t\n"
        b"1,ok,1\n"
        b'2,"multi\nline \xff bad",1\n'  # invalid UTF-8 on physical line 4
        b"3,too,many,fields\n"
        b",empty id,1\n"
        b"5,bad time,never\n"
        b"6,no time,\n"
        b"7,fine,2\n"
    )
    with pytest.raises(InputError) as e:
        read_all([c], time_field="t")
    assert (e.value.line, e.value.reason) == (4, "invalid UTF-8")
    batch, stats = read_all([c], time_field="t", on_error="skip")
    assert batch.ids == ["1", "7"]
    assert stats.skipped_reasons == {
        "invalid UTF-8": 1,
        "malformed CSV row": 1,
        "empty id": 1,
        "bad timestamp": 1,
        "missing field 't'": 1,
    }
    c.write_text("id,text,t\n1,ok,1\n\n5,bad time,never\n")
    with pytest.raises(InputError, match=r"d.csv, line 4, field 't': bad timestamp \('never'"):
        read_all([c], time_field="t")


# ---------------------------------------------------------------------------- validation


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


def test_input_error_pickles():
    err = InputError("f.jsonl", 3, "text", "missing field 'text'")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.field, back.reason, str(back)) == (
        "f.jsonl",
        3,
        "text",
        "missing field 'text'",
        "f.jsonl, line 3: missing field 'text'",
    )


# ---------------------------------------------------------------------------- fingerprints


def test_parse_fingerprint():
    assert parse_fingerprint("00000000000000ff") == 255
    assert parse_fingerprint("FFFFFFFFFFFFFFFF") == 2**64 - 1
    assert parse_fingerprint("0xff") == 255
    assert parse_fingerprint("255") == 255
    assert parse_fingerprint("18446744073709551615") == 2**64 - 1
    assert parse_fingerprint("-1") == 2**64 - 1
    assert parse_fingerprint("-9223372036854775808") == 2**63
    assert parse_fingerprint("1234567890123456") == 0x1234567890123456
    assert parse_fingerprint("1234567890123456", "dec") == 1234567890123456
    assert parse_fingerprint("ff", "hex") == 255
    assert parse_fingerprint(-2) == 2**64 - 2
    for bad in [
        "18446744073709551616",
        "-9223372036854775809",
        "0x",
        "12ab",
        "0x1ffffffffffffffff",
        "",
        "1.5",
    ]:
        with pytest.raises(ValueError):
            parse_fingerprint(bad)
    with pytest.raises(ValueError, match="fingerprint_format"):
        parse_fingerprint("1", "oct")


def test_read_fingerprints_seed_format(tmp_path):
    part = tmp_path / "part-00000"
    part.write_text(
        "id\tfingerprint\ttimestamp\n"
        "a\t00000000000000ff\t1700000000\n"
        "b\t0xFF\t2024-01-02\n"
        "c\t-1\n"
        "d\t12345\t\n",
        encoding="utf-8",
    )
    t = read_fingerprints([part])
    assert t.ids.to_pylist() == ["a", "b", "c", "d"]
    assert t.fingerprints.dtype == np.uint64
    assert t.fingerprints.tolist() == [255, 255, 2**64 - 1, 12345]
    assert t.timestamps.tolist() == [
        1_700_000_000 * US,
        us_of(datetime(2024, 1, 2, tzinfo=timezone.utc)),
        0,
        0,
    ]
    assert t.raw_timestamps.to_pylist() == ["1700000000", "2024-01-02", None, None]
    assert t.stats.documents == 4 and len(t) == 4


def test_read_fingerprints_errors(tmp_path):
    p = tmp_path / "fps.txt"
    p.write_text("a\t00000000000000ff\nb\tzz\nc\t1\t2\t3\na\t1\nd\t2\tlater\ne\t3\n")
    with pytest.raises(InputError) as e:
        read_fingerprints([p])
    assert (e.value.line, e.value.field, e.value.reason) == (2, "fingerprint", "bad fingerprint")
    assert "fps.txt, line 2" in str(e.value)
    t = read_fingerprints([p], on_error="skip")
    assert t.ids.to_pylist() == ["a", "e"]
    assert t.stats.skipped_reasons == {
        "bad fingerprint": 1,
        "malformed row": 1,
        "duplicate id": 1,
        "bad timestamp": 1,
    }
    with pytest.raises(ValueError, match="fingerprint_format"):
        read_fingerprints([p], fingerprint_format="x")


def test_read_fingerprints_directory_and_formats(tmp_path):
    out = tmp_path / "spark"
    out.mkdir()
    (out / "_SUCCESS").write_text("")
    (out / ".part-00000.crc").write_text("junk")
    (out / "part-00001").write_text("b\t2\n")
    (out / "part-00000").write_text("a\t1\n")
    t = read_fingerprints([out])
    assert t.ids.to_pylist() == ["a", "b"] and t.fingerprints.tolist() == [1, 2]
    j = tmp_path / "f.jsonl"
    j.write_text(
        '{"id": 7, "fingerprint": -1, "timestamp": 3}\n'
        '{"id": "x", "fingerprint": "00000000000000aa"}\n'
    )
    t = read_fingerprints([j])
    assert t.ids.to_pylist() == ["7", "x"] and t.fingerprints.tolist() == [2**64 - 1, 0xAA]
    assert t.timestamps.tolist() == [3 * US, 0]
    pq.write_table(
        pa.table({"id": ["p", "q"], "fingerprint": pa.array([-2, 5], pa.int64())}),
        tmp_path / "f.parquet",
    )
    t = read_fingerprints([tmp_path / "f.parquet"])
    assert t.fingerprints.tolist() == [2**64 - 2, 5]


def test_fingerprints_round_trip_through_write_table(tmp_path):
    ids = ["a", "tab\there", "new\nline", "back\\slash", "C:\\new", 'q"uote,comma']
    fps = np.array([0, 1, 2**63, 2**64 - 1, 12345, 0xDEADBEEF], dtype=np.uint64)
    ts = ["2024-01-02", "1700000000", "1", "2", "3", "4"]
    for name in ["f.tsv", "f.tsv.gz", "f.csv", "f.jsonl.zst", "f.parquet"]:
        for fp_col in (format_fingerprints(fps), fps):
            path = tmp_path / name
            write_table(path, {"id": ids, "fingerprint": fp_col, "timestamp": ts})
            t = read_fingerprints([path])
            assert t.ids.to_pylist() == ids, name
            assert t.fingerprints.tolist() == fps.tolist(), name
            assert t.raw_timestamps.to_pylist() == ts


# ---------------------------------------------------------------------------- writing


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


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=1, max_size=8, unique=True))
def test_tsv_and_jsonl_round_trip_property(ids):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        fps = np.arange(len(ids), dtype=np.uint64)
        tsv = os.path.join(d, "f.tsv")
        write_table(tsv, {"id": ids, "fingerprint": format_fingerprints(fps)})
        assert read_fingerprints([tsv]).ids.to_pylist() == ids
        js = os.path.join(d, "f.jsonl")
        write_table(js, {"id": ids})
        with open(js, encoding="utf-8") as f:
            assert [json.loads(line)["id"] for line in f] == ids
        cs = os.path.join(d, "f.csv")
        write_table(cs, {"id": ids, "fingerprint": fps})
        assert read_fingerprints([cs]).ids.to_pylist() == ids


def test_write_table_atomic_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "out.tsv"
    p.write_text("previous\n")
    monkeypatch.setattr(nio, "_WRITE_CHUNK_ROWS", 2)
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
    monkeypatch.setattr(nio, "_WRITE_CHUNK_ROWS", 4)
    write_table(tmp_path / "two.jsonl", cols)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


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


# ---------------------------------------------------------------------------- fingerprints as hex


def test_format_fingerprints():
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True)
    fps[:3] = [0, 2**64 - 1, 0xABC]
    out = format_fingerprints(fps)
    assert out.tolist() == [f"{int(x):016x}" for x in fps]
    assert format_fingerprints(np.array([-1], np.int64)).tolist() == ["ffffffffffffffff"]
    assert format_fingerprints(np.array([], np.uint64)).tolist() == []
    with pytest.raises(TypeError):
        format_fingerprints(np.array([1.5]))
    assert [parse_fingerprint(s) for s in out[:3]] == [0, 2**64 - 1, 0xABC]


def test_docstring_examples():
    assert doctest.testmod(nio).failed == 0


def test_fingerprint_tsv_escaping_only_in_tsv_files(tmp_path):
    (tmp_path / "part-00000").write_text("C:\\new\\x\t1\n")
    (tmp_path / "f.tsv").write_text("C:\\\\new\\tx\t2\n")
    t = read_fingerprints([tmp_path / "part-00000", tmp_path / "f.tsv"])
    assert t.ids.to_pylist() == ["C:\\new\\x", "C:\\new\tx"]


def test_fingerprint_table_formats_errors(tmp_path):
    c = tmp_path / "f.csv"
    c.write_text("id,fingerprint\na,1234567890123456\nb,\nc,-5\n")
    with pytest.raises(InputError, match=r"f.csv, line 3: missing field 'fingerprint'"):
        read_fingerprints([c])
    t = read_fingerprints([c], fingerprint_format="dec", on_error="skip")
    assert t.fingerprints.tolist() == [1234567890123456, 2**64 - 5]
    assert t.stats.skipped_reasons == {"missing field 'fingerprint'": 1}
    assert read_fingerprints([c], on_error="skip").fingerprints[0] == 0x1234567890123456
    bad = tmp_path / "f.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_fingerprints([bad])


def test_duplicate_in_parquet_names_rows(tmp_path):
    for name in ("a", "b"):
        pq.write_table(
            pa.table({"id": ["x", name], "text": ["t", "u"]}), tmp_path / f"{name}.parquet"
        )
    with pytest.raises(InputError) as e:
        read_all([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert (
        e.value.line == 1
        and "a.parquet, row 1" in str(e.value)
        and "b.parquet, row 1" in str(e.value)
    )


def test_jsonl_lines_the_fast_parser_refuses_read_as_the_standard_library_does(tmp_path):
    lines = [
        '\ufeff{"id": "bom", "text": "first line with a byte order mark"}',
        '{"id": "big", "text": "an integer past 64 bits", "n": 123456789012345678901234567890}',
        '{"id": "nan", "text": "a NaN literal", "x": NaN}',
        '{"id": "dup", "text": "first", "text": "duplicate keys: the last one wins"}',
        '{"id": "esc", "text": "escapes \\u00e9 \\ud55c \\n end"}',
        '{"id": "sur", "text": "a lone surrogate \\ud800"}',
    ]
    path = tmp_path / "tricky.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reader = read_documents([path], on_error="skip", keep_records=True)
    batch = reader.read_all()
    assert batch.ids == ["bom", "big", "nan", "dup", "esc"]
    assert batch.texts[3] == "duplicate keys: the last one wins"
    assert batch.texts[4] == "escapes é 한 \n end"
    assert batch.records[1]["n"] == 123456789012345678901234567890
    assert reader.stats.skipped == 1  # the lone surrogate, as before
    again = list(reader.fetch(batch.positions, batch.locations, records=True))[0]
    assert again.ids == batch.ids and again.texts == batch.texts
    assert again.records[1]["n"] == 123456789012345678901234567890


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["a", "b", "c", "é", "a\tb", "7"]),
                          st.just("BAD")), min_size=1, max_size=40),
       st.integers(1, 7))
def test_duplicate_ids_found_in_batches_as_row_by_row(tmp_path_factory, ids, batch_size):
    """The batched duplicate check reports what a row-by-row check of a dict reports: the first
    bad row in input order raises; skipping keeps each ID's first row."""
    path = tmp_path_factory.mktemp("dups") / "d.jsonl"
    lines = ['{"id": 1, "text": 5}' if i == "BAD" else json.dumps({"id": i, "text": "t"})
             for i in ids]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen, expected, first_error = {}, [], None
    for n, ident in enumerate(ids, 1):
        if ident == "BAD":
            first_error = first_error or (n, "text not a string")
        elif ident in seen:
            first_error = first_error or (n, f"first seen at {path}, line {seen[ident]}")
        else:
            seen[ident] = n
            expected.append(ident)
    reader = read_documents([path], on_error="skip", batch_size=batch_size)
    batches = list(reader)
    assert [i for b in batches for i in b.ids] == expected
    assert [p for b in batches for p in b.positions.tolist()] == list(range(len(expected)))
    assert reader.stats.documents == len(expected)
    assert reader.stats.skipped == len(ids) - len(expected)
    if first_error is None:
        return
    with pytest.raises(InputError) as info:
        list(read_documents([path], batch_size=batch_size))
    assert f"line {first_error[0]}," in str(info.value)
    assert first_error[1] in str(info.value)


_SEED_STAMPS = st.one_of(
    st.just(""),
    st.integers(0, 10**12 - 1).map(str),
    st.datetimes(min_value=__import__("datetime").datetime(1970, 1, 1),
                 max_value=__import__("datetime").datetime(2200, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")[: 20 + d.microsecond % 7]
                       + "Z"),
    st.sampled_from(["2024-02-30T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:60Z",
                     "2024-01-01", " 12 ", "1.5", "2024-01-01T00:00:00+02:00", "x"]),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["a", "b", "c", "é", "long-id-" * 3, "x y", "7", "", "d\\e"]),
    st.one_of(st.integers(0, 2**64 - 1).map(lambda v: f"{v:016x}"),
              st.integers(0, 2**64 - 1).map(lambda v: f"{v:016X}"),
              st.sampled_from(["123", "0x00000000000000ff", "zzzzzzzzzzzzzzzz", "fingerprint"])),
    _SEED_STAMPS), min_size=1, max_size=12), st.sampled_from(["part-00000", "rows.tsv"]),
    st.sampled_from(["raise", "skip"]))
def test_seed_rows_in_bulk_equal_row_by_row(tmp_path_factory, rows, name, on_error, ):
    """The bulk reader of seed rows gives what the row-by-row reader gives, or leaves the file
    to it: same IDs, fingerprints, timestamps, raw values, counts and errors."""
    import neardup.io as nio

    path = tmp_path_factory.mktemp("seed") / name
    path.write_text("".join(f"{i}\t{f}\t{t}\n" for i, f, t in rows), encoding="utf-8")

    def read():
        try:
            t = read_fingerprints([path], on_error=on_error)
        except InputError as e:
            return str(e)
        return (t.ids.to_pylist(), t.fingerprints.tolist(), t.timestamps.tolist(),
                t.raw_timestamps.to_pylist(), t.stats.documents, t.stats.skipped)

    bulk = read()
    original = nio._seed_rows_in_bulk
    nio._seed_rows_in_bulk = lambda src, rows_: None
    try:
        assert read() == bulk
    finally:
        nio._seed_rows_in_bulk = original


def test_seed_rows_in_bulk_are_taken(tmp_path, monkeypatch):
    import neardup.io as nio

    path = tmp_path / "part-00000"
    path.write_text("a\t00000000000000ff\t2024-01-02T03:04:05Z\nb\tFFFFFFFFFFFFFFFF\t17\n"
                    "c\t0000000000000001\t\n")
    monkeypatch.setattr(nio._FingerprintCollector, "read_plain", None)  # must not be needed
    t = read_fingerprints([path])
    assert t.ids.to_pylist() == ["a", "b", "c"]
    assert t.fingerprints.tolist() == [255, 2**64 - 1, 1]
    assert t.timestamps.tolist() == [parse_timestamp("2024-01-02T03:04:05Z"), 17_000_000, 0]
    assert t.raw_timestamps.to_pylist() == ["2024-01-02T03:04:05Z", "17", None]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.integers(0, 2**64 - 1),
    st.one_of(st.just(""), st.integers(0, 10**12 - 1).map(str),
              st.tuples(st.datetimes(min_value=__import__("datetime").datetime(1000, 1, 1)),
                        st.integers(0, 6)).map(
                  lambda dp: dp[0].strftime("%Y-%m-%dT%H:%M:%S")
                  + ("." + dp[0].strftime("%f")[: dp[1]] if dp[1] else "") + "Z"))),
    min_size=1, max_size=30))
def test_valid_seed_rows_take_the_bulk_path_and_agree(tmp_path_factory, rows):
    import neardup.io as nio

    path = tmp_path_factory.mktemp("valid") / "rows.tsv"
    path.write_text("".join(f"id{k}\t{fp:016x}\t{ts}\n" for k, (fp, ts) in enumerate(rows)))
    src = nio._Source(str(path), str(path), "tsv", None)
    bulk = nio._seed_rows_in_bulk(src, nio._Rows("raise"))
    assert bulk is not None
    original = nio._seed_rows_in_bulk
    nio._seed_rows_in_bulk = lambda src_, rows_: None
    try:
        slow = read_fingerprints([path])
    finally:
        nio._seed_rows_in_bulk = original
    assert bulk.ids.to_pylist() == slow.ids.to_pylist()
    assert bulk.fingerprints.tolist() == slow.fingerprints.tolist()
    assert bulk.timestamps.tolist() == slow.timestamps.tolist()
    assert bulk.raw_timestamps.to_pylist() == slow.raw_timestamps.to_pylist()


# ------------------------------------------------------------------------------------------
# max_doc_bytes: one document's size is bounded in every format


def _oversized_inputs(tmp_path):
    """The same three documents (the middle one 40 bytes of UTF-8) in every input format."""
    rows = [("a", "short one"), ("b", "é" * 20), ("c", "short two")]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), "utf-8")
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in rows), "utf-8")
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows]}), parquet)
    folder = tmp_path / "txt"
    folder.mkdir()
    for i, t in rows:
        (folder / f"{i}.txt").write_text(t, "utf-8")
    return [jsonl, csv_path, parquet, folder]


@pytest.mark.parametrize("kind", range(4))
def test_max_doc_bytes_refuses_or_skips_long_texts(tmp_path, kind):
    path = _oversized_inputs(tmp_path)[kind]
    with pytest.raises(InputError) as error:
        read_documents([path], max_doc_bytes=39).read_all()
    message = str(error.value)
    assert "document too large" in message and "40 bytes" in message and "39" in message
    assert ["line 2", "line 3", "row 2", "b.txt"][kind] in message
    reader = read_documents([path], max_doc_bytes=39, on_error="skip")
    assert [i.removesuffix(".txt") for i in reader.read_all().ids] == ["a", "c"]
    assert reader.stats.skipped_reasons == {"document too large": 1}
    assert reader.stats.documents + reader.stats.skipped == 3
    for limit in (40, 0, None):  # at the limit, or no limit
        assert len(read_documents([path], max_doc_bytes=limit).read_all()) == 3


def test_max_doc_bytes_default_and_bad_values(tmp_path):
    path = tmp_path / "d.jsonl"
    big = "word " * (nio.DEFAULT_MAX_DOC_BYTES // 5 + 1)
    path.write_text(json.dumps({"id": "x", "text": big}) + "\n", "utf-8")
    with pytest.raises(InputError, match="document too large"):
        read_documents([path]).read_all()
    for bad in (-1, 1.5, "16M", True):
        with pytest.raises(ValueError, match="max_doc_bytes must be"):
            read_documents([path], max_doc_bytes=bad)


@pytest.mark.parametrize("compress,suffix", [(gzip.compress, ".gz"),
                                             (lambda b: zstandard.compress(b), ".zst")])
def test_compressed_input_without_its_suffix_names_the_cause(tmp_path, compress, suffix):
    plain = b'{"id": "a", "text": "one two"}\n'
    path = tmp_path / "docs.jsonl"
    path.write_bytes(compress(plain))
    with pytest.raises(ValueError, match=f"compressed but its name does not say so.*docs.jsonl{suffix}"):
        read_documents([path])
    assert read_documents([path], input_format=f"jsonl{suffix}").read_all().ids == ["a"]
    renamed = path.rename(tmp_path / f"docs.jsonl{suffix}")
    assert read_documents([renamed]).read_all().ids == ["a"]


@pytest.mark.parametrize("value", [" 12", "12 ", " 00000000000000ff", "1" * 10_000,
                                   "9" * 21, "-" + "9" * 20, "f" * 17])
def test_fingerprint_strings_with_spaces_or_too_many_digits_are_refused(value):
    with pytest.raises(ValueError, match="fingerprint must be") as error:
        parse_fingerprint(value)
    assert "set_int_max_str_digits" not in str(error.value)


def test_fingerprint_digit_count_boundaries():
    assert parse_fingerprint(str(2**64 - 1), "dec") == 2**64 - 1
    assert parse_fingerprint("0" * 30 + "255") == 255
    with pytest.raises(ValueError):
        parse_fingerprint(str(2**64), "dec")


# ---------------------------------------------------------------------------- CSV and TSV rules


def numbered_csv(path, n, *, stray=None, quoted_every=None):
    """``n`` rows ``d<i>,<text>,<ts>`` after a header; row ``stray`` has a quote that never
    closes; every ``quoted_every``-th row has a properly quoted text holding a comma."""
    lines = ["id,text,ts"]
    for i in range(n):
        text = f"document {i} about topic {i % 7}"
        if i == stray:
            text = '"' + text
        elif quoted_every and i % quoted_every == 3:
            text = f'"quoted, {text}"'
        lines.append(f"d{i},{text},{1_700_000_000 + i}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_csv_unmatched_quote_mid_file_names_its_line(tmp_path):
    # The quote of row 44 (line 46) runs on to the quoted field of row 103 (line 105).
    c = numbered_csv(tmp_path / "d.csv", 1000, stray=44, quoted_every=100)
    with pytest.raises(InputError) as e:
        read_all([c], time_field="ts")
    assert (e.value.line, e.value.reason) == (46, "malformed CSV row")
    assert f"{c}, line 46" in str(e.value) and "line 105" in str(e.value)
    batch, stats = read_all([c], time_field="ts", on_error="skip")
    assert batch.ids == [f"d{i}" for i in range(1000) if i != 44]
    assert batch.texts[batch.ids.index("d103")] == "quoted, document 103 about topic 5"
    assert stats.skipped == 1 and stats.skipped_reasons == {"malformed CSV row": 1}
    assert stats.documents + stats.skipped == 1000


def test_csv_quote_open_to_the_end_of_the_file(tmp_path):
    c = numbered_csv(tmp_path / "d.csv", 1000, stray=954)  # no other quote after it
    with pytest.raises(InputError, match=r"d\.csv, line 956: malformed CSV row \(a quoted field "
                                         r"opened on this line never closes"):
        read_all([c])
    batch, stats = read_all([c], on_error="skip")
    assert batch.ids == [f"d{i}" for i in range(1000) if i != 954]
    assert (stats.documents, stats.skipped) == (999, 1)
    c.write_text('id,text\n1,one\n2,"two\n', encoding="utf-8")  # on the last line
    with pytest.raises(InputError, match=r"line 3: malformed CSV row \(a quoted field"):
        read_all([c])


def test_csv_multi_line_quoted_fields_stay_valid(tmp_path):
    c = tmp_path / "d.csv"
    c.write_bytes(
        b'id,text,t\r\n'
        b'1,"two\r\nlines, ""quoted""",5\r\n'
        b'2,"",6\n'
        b'3,"a\n\nb\n",7\n'
        b'4,plain with "inner" quotes,8\n'
    )
    batch, stats = read_all([c], time_field="t")
    assert batch.ids == ["1", "2", "3", "4"]
    assert batch.texts == ['two\r\nlines, "quoted"', "", "a\n\nb\n", 'plain with "inner" quotes']
    assert stats.skipped == 0 and batch.raw_timestamps == ["5", "6", "7", "8"]


def test_csv_wrong_field_count_is_reported_where_the_row_or_its_quote_starts(tmp_path):
    c = tmp_path / "d.csv"
    c.write_text("id,text\n1,a\n2,b,c\n3\n4,d\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.csv, line 3: malformed CSV row \(expected 2 "
                                         r"fields as in the header, got 3\)"):
        read_all([c])
    batch, stats = read_all([c], on_error="skip")
    assert batch.ids == ["1", "4"] and stats.skipped_reasons == {"malformed CSV row": 2}
    # A quote that closes lines later on a row of the wrong width: the row of the quote is
    # reported, and the rows it swallowed are read.
    c.write_text('id,text\n1,"a\n2,b\n3,c",x,y\n4,d\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_all([c])
    assert e.value.line == 2 and "runs to line 4" in str(e.value)
    batch, stats = read_all([c], on_error="skip")
    assert batch.ids == ["2", "4"] and stats.skipped == 2  # line 4 is bad on its own too


def test_csv_rows_read_equal_documents_plus_skipped(tmp_path):
    c = tmp_path / "d.csv"
    rows = [
        "1,fine,1",
        '2,"stray quote,2',
        "3,fine,3",
        "4,too,many,4",
        ",empty id,5",
        "6,bad time,never",
        '7,"closed ""quote""",7',
        '8,"a quoted, field" then text,8',
        "1,duplicate id,9",
        "10,fine,10",
    ]
    c.write_text("id,text,t\n" + "\n".join(rows) + "\n", encoding="utf-8")
    batch, stats = read_all([c], time_field="t", on_error="skip")
    assert batch.ids == ["1", "3", "7", "10"]
    assert stats.documents == len(batch.ids)
    assert stats.documents + stats.skipped == len(rows)
    assert sum(stats.skipped_reasons.values()) == stats.skipped
    assert stats.skipped_reasons == {
        "malformed CSV row": 3, "empty id": 1, "bad timestamp": 1, "duplicate id": 1,
    }


def test_csv_fingerprints_share_the_csv_rules(tmp_path):
    c = tmp_path / "f.csv"
    c.write_text('id,fingerprint\na,1\n"b,2\nc,3\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"f\.csv, line 3: malformed CSV row"):
        read_fingerprints([c])
    t = read_fingerprints([c], on_error="skip")
    assert t.ids.to_pylist() == ["a", "c"] and t.stats.skipped == 1


def test_tsv_is_literal(tmp_path):
    t = tmp_path / "d.tsv"
    t.write_text(
        'id\ttext\n"1"\t"a quote\n2\tsays "hi", then\n3\t"\n4\ttab\\there\\\\n\\q\\\n',
        encoding="utf-8",
    )
    batch, stats = read_all([t], keep_records=True)
    assert batch.ids == ['"1"', "2", "3", "4"]
    assert batch.texts == ['"a quote', 'says "hi", then', '"', "tab\there\\n\\q\\"]
    assert batch.records[0] == {"id": '"1"', "text": '"a quote'} and stats.skipped == 0


def test_tsv_wrong_field_count_names_the_line(tmp_path):
    t = tmp_path / "d.tsv"
    t.write_text('id\ttext\n1\ta\n2\t"b\tc"\n\n3\n4\td\r\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.tsv, line 3: malformed TSV row \(expected 2 "
                                         r"fields as in the header, got 3\)"):
        read_all([t])
    batch, stats = read_all([t], on_error="skip")
    assert batch.ids == ["1", "4"] and batch.texts == ["a", "d"]
    assert stats.skipped_reasons == {"malformed TSV row": 2}
    assert stats.documents + stats.skipped == 4
    with pytest.raises(InputError, match=r"d\.tsv, line 3: malformed TSV row"):
        nio.read_tsv_table(t)


def test_tsv_escape_rule():
    assert nio.tsv_escape('a\tb\nc\rd\\e"f') == 'a\\tb\\nc\\rd\\\\e"f'
    assert nio.tsv_unescape('a\\tb\\nc\\rd\\\\e"f') == 'a\tb\nc\rd\\e"f'
    assert nio.tsv_unescape("\\x \\") == "\\x \\"  # unknown and trailing: kept
    import neardup.evaluate as ev
    import neardup.sampling as sa

    assert sa.tsv_unescape is nio.tsv_unescape and not hasattr(ev, "_tsv_unescape")
    assert not hasattr(sa, "_tsv_unescape")


def test_write_records_tsv_is_escaped_not_quoted(tmp_path):
    p = tmp_path / "k.tsv"
    write_records(p, [{"id": "1", "text": 'tab\tnew\nline "q" back\\slash\r'}])
    assert p.read_text(encoding="utf-8") == 'id\ttext\n1\ttab\\tnew\\nline "q" back\\\\slash\\r\n'
    assert read_all([p])[0].texts == ['tab\tnew\nline "q" back\\slash\r']


TRICKY = st.text(st.sampled_from(list('\t\n\r\\"\',; ab\\tnr\x00é한\u2028\x85'))
                 | st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(TRICKY.filter(bool), TRICKY), min_size=1, max_size=8,
                unique_by=lambda r: r[0]))
def test_tsv_and_csv_write_read_round_trip_property(rows):
    import tempfile

    from neardup.evaluate import read_table

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


def test_read_tsv_table(tmp_path):
    t = tmp_path / "t.tsv.zst"
    t.write_bytes(zstandard.compress('a\\tb\tc\n"x"\t1\\n2\n\n\t\n'.encode()))
    table = nio.read_tsv_table(t)
    assert table.column_names == ["a\tb", "c"]
    assert table.to_pylist() == [{"a\tb": '"x"', "c": "1\n2"}, {"a\tb": "", "c": ""}]
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"a\tb\n1\t2\n3\t\xff\n")
    with pytest.raises(InputError, match=r"bad\.tsv, line 3: invalid UTF-8"):
        nio.read_tsv_table(bad)
    bad.write_bytes(b"")
    with pytest.raises(InputError, match="empty TSV file"):
        nio.read_tsv_table(bad)


def test_cli_reports_the_bad_csv_row_or_skips_it(tmp_path):
    from click.testing import CliRunner

    from neardup.cli import main

    bad = numbered_csv(tmp_path / "bad.csv", 200, stray=44, quoted_every=50)
    out = tmp_path / "out.tsv"
    result = CliRunner().invoke(main, ["dedup", str(bad), "-o", str(out), "--workers", "1"])
    assert result.exit_code == 1
    assert f"{bad}, line 46: malformed CSV row" in result.output and not out.exists()
    result = CliRunner().invoke(
        main, ["dedup", str(bad), "-o", str(out), "--workers", "1", "--on-error", "skip"]
    )
    assert result.exit_code == 0, result.output
    summary = {
        key.strip(): value
        for key, value in (line.rsplit(None, 1) for line in result.output.splitlines() if line)
    }
    assert summary["documents"] == "199" and summary["skipped rows"] == "1"
    assert summary["skipped: malformed CSV row"] == "1"
