"""Reading fingerprint tables, row by row and in bulk (neardup.io.fingerprints)."""

import doctest
import json
import os
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from io_helpers import US, us_of

import neardup.io.fingerprints as io_fingerprints
from neardup.ids import id_problem
from neardup.io import (
    InputError,
    format_fingerprints,
    parse_timestamp,
    read_fingerprints,
    write_table,
)
from neardup.io.files import Source
from neardup.io.rows import RowChecks


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
    ids = ["a", "sp ace", "é/x", "back\\slash", "C:\\new", 'q"uote,comma']
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


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(min_size=1).filter(lambda i: id_problem(i) is None),
        min_size=1,
        max_size=8,
        unique=True,
    )
)
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


def test_fingerprint_tsv_escaping_only_in_tsv_files(tmp_path):
    (tmp_path / "part-00000").write_text("C:\\new\\x\t1\n")
    (tmp_path / "f.tsv").write_text("C:\\\\new\\\\y\t2\n")
    t = read_fingerprints([tmp_path / "part-00000", tmp_path / "f.tsv"])
    assert t.ids.to_pylist() == ["C:\\new\\x", "C:\\new\\y"]
    # An escaped tab decodes to a tab, which no ID may hold: a bad row.
    (tmp_path / "g.tsv").write_text("a\\tb\t2\n")
    with pytest.raises(InputError, match=r"g.tsv, line 1, field 'id': bad id"):
        read_fingerprints([tmp_path / "g.tsv"])


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


def read_outcome(path, on_error):
    """What a read gives: the columns and counts, or the message of its error."""
    try:
        t = read_fingerprints([path], on_error=on_error)
    except InputError as e:
        return str(e)
    return (
        t.ids.to_pylist(),
        t.fingerprints.tolist(),
        t.timestamps.tolist(),
        t.raw_timestamps.to_pylist(),
        t.stats.documents,
        t.stats.skipped,
    )


_SEED_STAMPS = st.one_of(
    st.just(""),
    st.integers(0, 10**12 - 1).map(str),
    st.datetimes(
        min_value=__import__("datetime").datetime(1970, 1, 1),
        max_value=__import__("datetime").datetime(2200, 1, 1),
    ).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.datetimes().map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")[: 20 + d.microsecond % 7] + "Z"
    ),
    st.sampled_from(
        [
            "2024-02-30T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01",
            " 12 ",
            "1.5",
            "2024-01-01T00:00:00+02:00",
            "x",
        ]
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "é", "long-id-" * 3, "x y", "7", "", "d\\e"]),
            st.one_of(
                st.integers(0, 2**64 - 1).map(lambda v: f"{v:016x}"),
                st.integers(0, 2**64 - 1).map(lambda v: f"{v:016X}"),
                st.sampled_from(["123", "0x00000000000000ff", "zzzzzzzzzzzzzzzz", "fingerprint"]),
            ),
            _SEED_STAMPS,
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["part-00000", "rows.tsv"]),
    st.sampled_from(["raise", "skip"]),
)
def test_seed_rows_in_bulk_equal_row_by_row(
    tmp_path_factory,
    rows,
    name,
    on_error,
):
    """The bulk reader of seed rows gives what the row-by-row reader gives, or leaves the file
    to it: same IDs, fingerprints, timestamps, raw values, counts and errors."""
    path = tmp_path_factory.mktemp("seed") / name
    path.write_text("".join(f"{i}\t{f}\t{t}\n" for i, f, t in rows), encoding="utf-8")

    def read():
        return read_outcome(path, on_error)

    bulk = read()
    original = io_fingerprints._seed_rows_in_bulk
    io_fingerprints._seed_rows_in_bulk = lambda src, rows_: None
    try:
        assert read() == bulk
    finally:
        io_fingerprints._seed_rows_in_bulk = original


def test_seed_rows_in_bulk_are_taken(tmp_path, monkeypatch):
    path = tmp_path / "part-00000"
    path.write_text(
        "a\t00000000000000ff\t2024-01-02T03:04:05Z\nb\tFFFFFFFFFFFFFFFF\t17\n"
        "c\t0000000000000001\t\n"
    )
    monkeypatch.setattr(
        io_fingerprints._FingerprintCollector, "read_plain", None
    )  # must not be needed
    t = read_fingerprints([path])
    assert t.ids.to_pylist() == ["a", "b", "c"]
    assert t.fingerprints.tolist() == [255, 2**64 - 1, 1]
    assert t.timestamps.tolist() == [parse_timestamp("2024-01-02T03:04:05Z"), 17_000_000, 0]
    assert t.raw_timestamps.to_pylist() == ["2024-01-02T03:04:05Z", "17", None]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**64 - 1),
            st.one_of(
                st.just(""),
                st.integers(0, 10**12 - 1).map(str),
                st.tuples(
                    st.datetimes(min_value=__import__("datetime").datetime(1000, 1, 1)),
                    st.integers(0, 6),
                ).map(
                    lambda dp: (
                        dp[0].strftime("%Y-%m-%dT%H:%M:%S")
                        + ("." + dp[0].strftime("%f")[: dp[1]] if dp[1] else "")
                        + "Z"
                    )
                ),
            ),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_valid_seed_rows_take_the_bulk_path_and_agree(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("valid") / "rows.tsv"
    path.write_text("".join(f"id{k}\t{fp:016x}\t{ts}\n" for k, (fp, ts) in enumerate(rows)))
    src = Source(str(path), str(path), "tsv", None)
    bulk = io_fingerprints._seed_rows_in_bulk(src, RowChecks("raise"))
    assert bulk is not None
    original = io_fingerprints._seed_rows_in_bulk
    io_fingerprints._seed_rows_in_bulk = lambda src_, rows_: None
    try:
        slow = read_fingerprints([path])
    finally:
        io_fingerprints._seed_rows_in_bulk = original
    assert bulk.ids.to_pylist() == slow.ids.to_pylist()
    assert bulk.fingerprints.tolist() == slow.fingerprints.tolist()
    assert bulk.timestamps.tolist() == slow.timestamps.tolist()
    assert bulk.raw_timestamps.to_pylist() == slow.raw_timestamps.to_pylist()


_SEED_LINES = st.one_of(
    st.tuples(
        st.sampled_from(["a", "b", "c9", "é", "id-" * 5, "x y", "z\x00", "\\q", "p\rq"]),
        st.integers(0, 2**64 - 1).map(lambda v: f"{v:016x}"),
        st.sampled_from(
            [
                "",
                "17",
                "0017",
                "000000000000",
                "2024-02-29T23:59:59.5Z",
                "2024-02-30T00:00:00Z",
                "0001-01-01T00:00:00.000001Z",
                "1969-12-31T23:59:59.9Z",
                "9999-12-31T23:59:59.999999Z",
                "x",
            ]
        ),
    ).map(lambda r: "\t".join(r).encode()),
    st.sampled_from([b"", b"a\t00000000000000ff", b"a\tb\t00000000000000ff\t1", b"\xff\xfe"]),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_SEED_LINES, min_size=1, max_size=12),
    st.booleans(),
    st.sampled_from([1, 24, 4096]),
    st.booleans(),
)
def test_seed_rows_in_blocks_equal_row_by_row(tmp_path_factory, lines, ascending, block, ending):
    """Any lines, cut into blocks of any size, sorted or not: the bulk reader gives what the
    row-by-row reader gives (blank lines, rows of 2 or 4 fields, CR and backslash in IDs,
    invalid UTF-8, duplicate IDs in the same or another block, no newline at the end), or
    leaves the file to it."""
    if ascending:
        lines = sorted(set(lines))
    path = tmp_path_factory.mktemp("blocks") / "part-00000"
    path.write_bytes(b"\n".join(lines) + (b"\n" if ending else b""))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(io_fingerprints, "_BLOCK_BYTES", block)
        bulk = read_outcome(path, "skip")
        patch.setattr(io_fingerprints, "_seed_rows_in_bulk", lambda src, rows_: None)
        assert read_outcome(path, "skip") == bulk


def test_seed_rows_in_blocks_are_taken(tmp_path, monkeypatch):
    """Rows in many blocks, IDs out of order (the ID table decides) and one absent time."""
    path = tmp_path / "part-00000"
    rows = [f"id{k:03d}\t{k:016x}\t{1700000000 + k}\n" for k in range(200)]
    rows[7] = "id007\t0000000000000007\t\n"
    rows.reverse()
    path.write_text("".join(rows))
    monkeypatch.setattr(io_fingerprints, "_BLOCK_BYTES", 100)
    monkeypatch.setattr(io_fingerprints._FingerprintCollector, "read_plain", None)
    t = read_fingerprints([path])
    assert t.ids.to_pylist() == [f"id{k:03d}" for k in reversed(range(200))]
    assert t.fingerprints.tolist() == list(reversed(range(200)))
    assert t.timestamps.tolist()[-8] == 0 and t.raw_timestamps.to_pylist()[-8] is None
    assert t.raw_timestamps.to_pylist()[0] == "1700000199"


def test_bulk_raw_timestamps_are_the_text_given(tmp_path, monkeypatch):
    """The bulk reader gives the timestamps back from their microseconds: every form it takes."""
    stamps = [
        "",
        "0",
        "0017",
        "999999999999",
        "1970-01-01T00:00:00Z",
        "0001-01-01T00:00:00.000001Z",
        "1969-12-31T23:59:59.9Z",
        "2000-02-29T12:34:56.78Z",
        "9999-12-31T23:59:59.999999Z",
        "2024-06-30T01:02:03.0000Z",
    ]
    path = tmp_path / "part-00000"
    path.write_text("".join(f"d{k}\t{k:016x}\t{ts}\n" for k, ts in enumerate(stamps)))
    monkeypatch.setattr(io_fingerprints._FingerprintCollector, "read_plain", None)
    t = read_fingerprints([path])
    assert t.raw_timestamps.to_pylist() == [ts or None for ts in stamps]
    assert t.timestamps.tolist() == [0] + [parse_timestamp(ts) for ts in stamps[1:]]


def test_csv_fingerprints_share_the_csv_rules(tmp_path):
    c = tmp_path / "f.csv"
    c.write_text('id,fingerprint\na,1\n"b,2\nc,3\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"f\.csv, line 3: malformed CSV row"):
        read_fingerprints([c])
    t = read_fingerprints([c], on_error="skip")
    assert t.ids.to_pylist() == ["a", "c"] and t.stats.skipped == 1


def test_docstring_examples():
    assert doctest.testmod(io_fingerprints).failed == 0
