"""The rows of each format: JSON lines, CSV and TSV rules, compressed inputs (neardup.io.sources)."""

import doctest
import gzip
import os

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from io_helpers import read_all

import neardup.io as nio
import neardup.io.jsonl_blocks as jsonl_blocks
import neardup.io.sources as io_sources
from neardup.io import (
    InputError,
    read_documents,
)
from neardup.io.files import INPUT_FORMATS, resolve_input


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


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".tsv.gz"])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_damaged_deflate_data_is_unreadable_input_not_a_traceback(tmp_path, suffix, on_error):
    """A gzip header followed by bytes that are no deflate stream: zlib's own error (not an
    OSError) becomes the one-line error naming the file and line."""
    p = tmp_path / ("d" + suffix)
    p.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(7, 47)))
    with pytest.raises(InputError, match="unreadable input") as e:
        read_all([p], on_error=on_error)
    assert e.value.line == 1 and p.name in str(e.value)


def test_json_array_hint(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('[{"id": 1, "text": "x"},\n{"id": 2, "text": "y"}]\n')
    with pytest.raises(InputError, match="JSON Lines"):
        read_all([p])


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
    with pytest.raises(
        InputError,
        match=r"d\.csv, line 956: malformed CSV row \(a quoted field "
        r"opened on this line never closes",
    ):
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
        b"id,text,t\r\n"
        b'1,"two\r\nlines, ""quoted""",5\r\n'
        b'2,"",6\n'
        b'3,"a\n\nb\n",7\n'
        b'4,plain with "inner" quotes,8\n'
    )
    batch, stats = read_all([c], time_field="t")
    assert batch.ids == ["1", "2", "3", "4"]
    assert batch.texts == ['two\r\nlines, "quoted"', "", "a\n\nb\n", 'plain with "inner" quotes']
    assert stats.skipped == 0 and batch.raw_timestamps == ["5", "6", "7", "8"]


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("d.csv", "id,text\n1,a\n2,b,c\n3\n4,d\n", "malformed CSV row"),
        ("d.tsv", 'id\ttext\n1\ta\n2\t"b\tc"\n\n3\n4\td\r\n', "malformed TSV row"),
    ],
)
def test_wrong_field_count_names_the_line(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(
        InputError,
        match=rf"{name}, line 3: {reason} \(expected 2 fields as in the header, got 3\)",
    ):
        read_all([path])
    batch, stats = read_all([path], on_error="skip")
    assert batch.ids == ["1", "4"] and batch.texts == ["a", "d"]
    assert stats.skipped_reasons == {reason: 2}
    assert stats.documents + stats.skipped == 4
    if name.endswith(".tsv"):
        with pytest.raises(InputError, match=rf"{name}, line 3: {reason}"):
            nio.read_tsv_table(path)


def test_csv_wrong_width_row_is_reported_where_its_quote_starts(tmp_path):
    # A quote that closes lines later on a row of the wrong width: the row of the quote is
    # reported, and the rows it swallowed are read.
    c = tmp_path / "d.csv"
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
        "malformed CSV row": 3,
        "empty id": 1,
        "bad timestamp": 1,
        "duplicate id": 1,
    }


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


def test_read_tsv_table(tmp_path):
    t = tmp_path / "t.tsv.zst"
    t.write_bytes(zstandard.compress(b'a\\tb\tc\n"x"\t1\\n2\n\n\t\n'))
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


def test_docstring_examples():
    assert doctest.testmod(io_sources).failed == 0


def _blocks_as_lines(blocks):
    """The lines of :func:`line_blocks_at`'s blocks, and how many each held."""
    lines, sizes = [], []
    for block, starts in blocks:
        data = block.tobytes()  # the block is valid until the next is asked for
        lines += [data[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
        sizes.append(len(starts) - 1)
    return lines, sizes


def _ended(line):
    """A line as a block holds it: with a line break."""
    return line if line.endswith(b"\n") else line + b"\n"


@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=60),
    wanted=st.data(),
    block=st.integers(1, 120),
    last_ends=st.booleans(),
    packing=st.sampled_from(["gz", "zst"]),
    per_block=st.integers(1, 7),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_line_blocks_at_of_a_compressed_input_hold_the_lines_at_those_offsets(
    tmp_path, monkeypatch, lengths, wanted, block, last_ends, packing, per_block
):
    """Decompressed again in blocks (of ``block`` bytes, grown for a longer line), each
    block's wanted lines found where their offsets fall: the lines a line-by-line reading
    gives, ``per_block`` a block."""
    lines = [b"y" * n + (b"\r\n" if n % 3 == 0 else b"\n") for n in lengths]
    if not last_ends:
        lines[-1] = lines[-1].rstrip(b"\r\n")
    data = b"".join(lines)
    path = tmp_path / f"lines.jsonl.{packing}"
    pack = gzip.compress if packing == "gz" else zstandard.ZstdCompressor().compress
    path.write_bytes(pack(data))
    starts = [sum(map(len, lines[:i])) for i in range(len(lines))]
    chosen = sorted(wanted.draw(st.sets(st.sampled_from(range(len(lines))), min_size=1)))
    chosen = [i for i in chosen if lines[i]]  # a document's line is never empty
    monkeypatch.setattr(jsonl_blocks, "BLOCK_BYTES", block)
    src = resolve_input(path, None, INPUT_FORMATS)
    offsets = np.array([starts[i] for i in chosen], dtype=np.int64)
    got, sizes = _blocks_as_lines(io_sources.line_blocks_at(src, offsets, per_block))
    assert got == [_ended(lines[i]) for i in chosen]
    assert sizes == [min(per_block, len(chosen) - k) for k in range(0, len(chosen), per_block)]


def test_line_blocks_at_of_a_compressed_input_cut_short_say_it_changed(tmp_path):
    path = tmp_path / "lines.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n{"b": 2}\n'))
    src = resolve_input(path, None, INPUT_FORMATS)
    with pytest.raises(ValueError, match="ended before byte 40, .*the input changed"):
        list(io_sources.line_blocks_at(src, np.array([9, 40]), 1))


@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=60),
    wanted=st.data(),
    gap=st.integers(1, 100),
    most=st.integers(1, 300),
    tail=st.integers(1, 50),
    last_ends=st.booleans(),
    last_read=st.booleans(),
    per_block=st.integers(1, 7),
)
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_line_blocks_at_read_runs_of_lines_as_a_line_a_read_would(
    tmp_path, monkeypatch, lengths, wanted, gap, most, tail, last_ends, last_read, per_block
):
    """Runs of ``most`` bytes at most, lines ``gap`` apart at most, read ``tail`` bytes past
    their last start (a longer line is read on to its end): the lines a line-by-line reading
    gives, ``per_block`` a block."""
    lines = [b"x" * n + (b"\r\n" if n % 3 == 0 else b"\n") for n in lengths]
    if not last_ends:
        lines[-1] = lines[-1].rstrip(b"\r\n")
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"".join(lines))
    starts = [sum(map(len, lines[:i])) for i in range(len(lines))]
    chosen = sorted(wanted.draw(st.sets(st.sampled_from(range(len(lines))), min_size=1)))
    monkeypatch.setattr(io_sources, "COALESCE_GAP", gap)
    monkeypatch.setattr(io_sources, "COALESCE_BYTES", most)
    monkeypatch.setattr(io_sources, "LINE_TAIL", tail)
    src = resolve_input(path, None, INPUT_FORMATS)
    advised = []
    monkeypatch.setattr(
        os, "posix_fadvise", lambda fd, at, n, advice: advised.append((at, n, advice))
    )
    offsets = np.array([starts[i] for i in chosen], dtype=np.int64)
    got, sizes = _blocks_as_lines(io_sources.line_blocks_at(src, offsets, per_block, last_read))
    assert got == [_ended(lines[i]) for i in chosen]
    assert sizes == [min(per_block, len(chosen) - k) for k in range(0, len(chosen), per_block)]
    # With last_read, the pages of every line read may leave the page cache, and no byte
    # past the last line of a run; else none.
    dropped = {b for at, n, _ in advised for b in range(at, at + n)}
    assert {advice for *_, advice in advised} <= {os.POSIX_FADV_DONTNEED}
    assert bool(advised) == last_read
    if last_read:
        wanted_bytes = {b for i in chosen for b in range(starts[i], starts[i] + len(lines[i]))}
        assert wanted_bytes <= dropped
        assert max(dropped, default=0) == max(wanted_bytes, default=0)


def test_line_blocks_at_refuses_no_lines_a_block(tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"{}\n")
    src = resolve_input(path, None, INPUT_FORMATS)
    with pytest.raises(ValueError, match="lines must be at least 1, got 0"):
        next(io_sources.line_blocks_at(src, np.array([0]), 0))


def test_rows_by_file_are_runs_in_reading_order_else_indices():
    runs = list(io_sources.rows_by_file(np.array([0, 0, 1, 1, 1, 3])))
    assert runs == [(0, slice(0, 2)), (1, slice(2, 5)), (3, slice(5, 6))]
    mixed = [(f, r.tolist()) for f, r in io_sources.rows_by_file(np.array([1, 0, 1]))]
    assert mixed == [(0, [1]), (1, [0, 2])]
    assert list(io_sources.rows_by_file(np.zeros(0, dtype=np.int64))) == []
