"""JSON Lines read in blocks (neardup.io.jsonl_blocks) against the line-by-line reading.

Plain and compressed inputs are read in blocks; the reference reads every line by itself (the
reader's block parser turned off): the same lines must give the same batches, counters and
errors every way.
"""

import doctest
import gzip
import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.io.documents as io_documents
import neardup.io.jsonl_blocks as jsonl_blocks
from neardup.candidates import radix
from neardup.io import InputError, read_documents
from neardup.io.jsonl_blocks import BlockParser, line_blocks, scan_block
from neardup.text.canonical import TextColumn

# Good rows: Korean, emoji, escapes, NUL, quotes and backslashes.
TEXTS = st.text(
    st.sampled_from(list('ab 한국어😀é\x00"\\/\t\n,.Ａß') + ["\u1100", "\ufeff", "\u2028"]),
    max_size=12,
)
IDS = st.one_of(st.sampled_from(["a", "b", "문서", "x😀", "0"]), st.integers(-3, 3))
INT_TIMES = st.integers(-(10**13), 10**13)
STR_TIMES = st.sampled_from(["2024-01-02", "2024-01-02T03:04:05Z", "17", " 5 ", "", "soon"])
# A file's times: all integers or all strings (what Arrow reads), or mixed with floats.
TIMES = st.sampled_from(
    [INT_TIMES, STR_TIMES, st.one_of(INT_TIMES, STR_TIMES, st.sampled_from([1.5, 2.0]))]
)
# Lines the Arrow reading must not take, or that are bad rows.
ODD_LINES = st.sampled_from(
    [
        b"",
        b"   ",
        b"[1]",
        b'"just a string"',
        b'{"id": "q", "text": "x"}{"id": "r", "text": "y"}',
        b'{"id": "q", "text": "x", "id": "r"}',
        b'{"id": "q", "text": "x", "text": 5}',
        b'{"id": "q", "text": "lone \\ud800 half"}',
        b'{"id": "q", "text": "pair \\ud83d\\ude00 ok"}',
        b'{"id": "q", "text": "bad \xff byte"}',
        b'{"id": "q", "text": "x", "other": "\xc0\xaf"}',
        b'{"id": "q", "text": "raw\ttab"}',
        b'{"id": "q", "text": "x", "n": 123456789012345678901234}',
        b'{"id": 123456789012345678901234, "text": "x"}',
        b'{"id": "q", "text": "x", "n": NaN}',
        b'{"id": "q", "text": "x"',
        b'{"id": "q", "text": null}',
        b'{"id": "", "text": "x"}',
        b'{"id": true, "text": "x"}',
        b'{"text": "x"}',
        b'{"id": "q", "text": "x", "deep": ' + b"[" * 300 + b"]" * 300 + b"}",
        b' {"id": "q", "text": "leading space"}',
        b'{"id": "q", "text": "x", "ts": 1e3}',
        b'{"id": "q", "text": "x", "ts": 99999999999999}',
        b'{"id": "q", "text": "x", "ts": null}',
        b'{"id": "q", "text": "x", "ts": true}',
        b'{"t\\u0065xt": "escaped key", "id": "e"}',
        b'\xef\xbb\xbf{"id": "bom", "text": "x"}',
    ]
)


@st.composite
def good_line(draw, times):
    row = {"id": draw(IDS), "text": draw(TEXTS)}
    if draw(st.integers(0, 5)):
        row["ts"] = draw(times)
    if draw(st.booleans()):
        row["extra"] = draw(st.sampled_from([[1, {"a": None}], "é", 3.5, {"id": 9}]))
    keys = draw(st.permutations(list(row)))
    text = json.dumps({k: row[k] for k in keys}, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8")


@st.composite
def jsonl_file(draw):
    times = draw(TIMES)
    good = good_line(times)
    # Half the files hold only good rows, so that whole blocks go to Arrow.
    kinds = good if draw(st.booleans()) else st.one_of(good, good, ODD_LINES)
    lines = draw(st.lists(kinds, max_size=14))
    ends = [draw(st.sampled_from([b"\n", b"\r\n"])) for _ in lines]
    data = b"".join(line + end for line, end in zip(lines, ends))
    if lines and draw(st.booleans()):
        data = data.rstrip(b"\r\n")  # no final line break
    return data


def _outcome(path, time_field, on_error, batch_size):
    """What reading ``path`` gives: the batches and counters, or the error's message."""
    reader = read_documents([path], time_field=time_field, on_error=on_error, batch_size=batch_size)
    try:
        batches = [
            (
                b.ids,
                list(b.texts),
                b.timestamps.tolist(),
                [(type(r).__name__, r) for r in b.raw_timestamps],
                b.positions.tolist(),
                b.locations.tolist(),
            )
            for b in reader
        ]
    except InputError as e:
        return str(e).replace(str(path), "<input>")
    stats = reader.stats
    return batches, stats.documents, stats.skipped, dict(stats.skipped_reasons), stats.bytes


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


class _LineByLine(BlockParser):
    """A block parser the reader may not use: every line is read by itself."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.usable = False


def _three_ways(data, time_field, on_error, batch_size):
    """The outcomes of ``data`` read plain, gzip-compressed, then plain line by line."""
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "d.jsonl"
        plain.write_bytes(data)
        packed = Path(folder) / "d.jsonl.gz"
        packed.write_bytes(gzip.compress(data))
        read = [_outcome(path, time_field, on_error, batch_size) for path in (plain, packed)]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(io_documents, "BlockParser", _LineByLine)
            return (*read, _outcome(plain, time_field, on_error, batch_size))


@settings(max_examples=150, deadline=None)
@given(
    data=jsonl_file(),
    time_field=st.sampled_from([None, "ts"]),
    on_error=st.sampled_from(["skip", "raise"]),
    batch_size=st.integers(1, 6),
    block=st.integers(1, 300),
)
def test_blocks_read_as_lines(data, time_field, on_error, batch_size, block):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl_blocks, "BLOCK_BYTES", block)
        blocks, compressed, lines = _three_ways(data, time_field, on_error, batch_size)
    assert blocks == lines
    assert compressed == lines


@pytest.mark.parametrize("time_field", [None, "ts"])
def test_clean_input_is_read_by_arrow(tmp_path, monkeypatch, time_field):
    rows = [{"id": f"d{i}", "text": f"문서 {i} 😀", "ts": 1_700_000_000 + i} for i in range(50)]
    rows[7]["ts"] = -5
    data = "".join(json.dumps(r, ensure_ascii=i % 2 == 0) + "\n" for i, r in enumerate(rows))
    monkeypatch.setattr(jsonl_blocks, "BLOCK_BYTES", 300)
    path = tmp_path / "d.jsonl"
    path.write_text(data, encoding="utf-8")
    batches = list(read_documents([path], time_field=time_field, batch_size=16))
    assert [len(b) for b in batches] == [16, 16, 16, 2]
    assert all(isinstance(b.texts, TextColumn) for b in batches)
    assert all(pa.array(b.ids) is b.ids.array for b in batches)  # IDs in Arrow, not strs
    assert batches[0].texts[3] == "문서 3 😀" and batches[3].ids == ["d48", "d49"]
    if time_field:
        assert batches[0].raw_timestamps[7] == -5
        assert batches[0].timestamps[7] == -5_000_000
    blocks, compressed, lines = _three_ways(data.encode(), time_field, "skip", 16)
    assert blocks == compressed == lines
    for name, pack in (("d.jsonl.gz", gzip.compress), ("d.jsonl.zst", _zstd)):
        (tmp_path / name).write_bytes(pack(data.encode()))
        packed = list(read_documents([tmp_path / name], time_field=time_field, batch_size=16))
        assert all(isinstance(b.texts, TextColumn) for b in packed)  # read in blocks too


@pytest.mark.parametrize("ids", [("a", "b"), ("a", 7)])
def test_parsed_ids_hold_their_own_bytes_not_the_block(ids):
    """The batches keep the IDs for the whole run: they must not keep the block's buffer."""
    block = "".join(json.dumps({"id": i, "text": "x" * 500_000}) + "\n" for i in ids).encode()
    rows = BlockParser("id", "text", None, None).parse(
        block, scan_block(np.frombuffer(block, np.uint8))[0]
    )
    assert rows.ids.to_pylist() == [str(i) for i in ids]
    assert rows.ids.get_total_buffer_size() < 100 < 1_000_000 < rows.texts.get_total_buffer_size()


def test_iso_times_are_read_by_arrow_after_integers(tmp_path):
    lines = [{"id": "a", "text": "x", "ts": 5}, {"id": "b", "text": "y", "ts": "2024-01-02"}]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    batch = read_documents([path], time_field="ts").read_all()
    assert batch.raw_timestamps == [5, "2024-01-02"]
    assert batch.timestamps.tolist() == [5_000_000, 1704153600000000]


def test_scan_block_plain_lines():
    def plain(data):
        return scan_block(np.frombuffer(data, np.uint8))[1]

    assert plain(b'{"a": "\xed\x9f\xbf \xf4\x8f\xbf\xbf"}\r\n{}')
    for bad in (
        b'{"a": "\xed\xa0\x80"}',  # a surrogate
        b'{"a": "\xc0\xaf"}',  # overlong
        b'{"a": "\xf4\x90\x80\x80"}',  # past U+10FFFF
        b'{"a": "\xe4\xb8"}',  # cut
        b'{"a": 1}\r{"b": 2}',
        b'{"a": 1}\n\n',
        b'{"a": "\x01"}',
        b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}",
    ):
        assert not plain(bad), bad


def reference_scan(data: bytes) -> tuple[list[int], bool]:
    """scan_block's answer by its definition, line by line with Python's strict decoder."""
    breaks = [i + 1 for i, b in enumerate(data) if b == 0x0A and i + 1 < len(data)]
    starts = [0, *breaks, len(data)]
    try:
        data.decode("utf-8")
        plain = True
    except UnicodeDecodeError:
        plain = False
    for lo, hi in zip(starts, starts[1:]):
        line = data[lo:hi]
        body = line.removesuffix(b"\n").removesuffix(b"\r") if line.endswith(b"\n") else line
        if line[:1] not in (b"", b"{") or any(b < 0x20 for b in body):
            plain = False
        if line.count(b"{") + line.count(b"[") > jsonl_blocks.MAX_DEPTH:
            plain = False
    return starts, plain


BLOCK_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b'"a"', b"\n", b"\r\n", b"\r", b"\x01", b"\t", b" ", b"\xc3\xa9"]
    + [b"\xe4\xb8\xad", b"\xe4\xb8", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\xf4\x90\x80\x80"]
    + [b"\xc0\xaf", b"\xff", b'{"a": 1}\n', b"[" * 130]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(BLOCK_PIECES, max_size=120).map(b"".join))
def test_scan_block_follows_its_definition(data):
    buf = np.frombuffer(data, np.uint8)
    starts, plain = scan_block(buf)
    assert (starts.tolist(), plain) == reference_scan(data)
    # The same with its line breaks given, as a caller that found them already passes them.
    given_breaks = scan_block(buf, np.flatnonzero(buf == 10))
    assert (given_breaks[0].tolist(), given_breaks[1]) == reference_scan(data)


def test_parsed_rows_do_not_share_the_block():
    block = bytearray(b'{"id": "a", "text": "first"}\n')
    starts, _ = scan_block(np.frombuffer(block, np.uint8))
    rows = BlockParser("id", "text", None, None).parse(memoryview(block), starts)
    block[21:26] = b"XXXXX"
    assert rows.texts.to_pylist() == ["first"]


def test_time_field_named_twice_reads_line_by_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "5", "text": "x"}\n')
    batch = read_documents([path], time_field="id").read_all()
    assert batch.timestamps.tolist() == [5_000_000] and batch.texts == ["x"]


def test_long_line_grows_the_buffer():
    blocks = [bytes(b) for b in line_blocks(io.BytesIO(b"abcdefgh\nij\nk"), size=3)]
    assert b"".join(blocks) == b"abcdefgh\nij\nk" and blocks[0].startswith(b"abcdefgh\n")
    assert all(b.endswith(b"\n") for b in blocks[:-1]) and blocks[-1] == b"k"


def test_read_errors_pass_through():
    class Failing(io.RawIOBase):
        def readinto(self, buffer):
            raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        next(line_blocks(Failing()))


def test_text_column_sequence():
    texts = TextColumn(pa.chunked_array([["a", "한"], ["😀"]]))
    assert len(texts) == 3 and list(texts) == ["a", "한", "😀"] and texts[-1] == "😀"
    assert texts == ["a", "한", "😀"] and ["a", "한", "😀"] == texts and texts != ["a"]
    with pytest.raises(ValueError, match="no nulls"):
        TextColumn(pa.array(["a", None]))
    with pytest.raises(ValueError, match="Arrow strings"):
        TextColumn(pa.array([1]))


def test_doctests():
    assert doctest.testmod(jsonl_blocks).failed == 0


@pytest.mark.parametrize(
    "times",
    [
        [9223372036854, -9223372036854, 0],
        [1, 9223372036855, 2],
        [1, -9223372036855, 2],
        ["2024-01-02", "", "1970-01-01T00:00:01Z"],
        ["2024-01-02", "soon", "3"],
    ],
)
def test_times_at_the_edges(times):
    data = "".join(
        json.dumps({"id": f"d{i}", "text": "x", "ts": t}) + "\n" for i, t in enumerate(times)
    ).encode()
    for on_error in ("skip", "raise"):
        blocks, compressed, lines = _three_ways(data, "ts", on_error, 2)
        assert blocks == compressed == lines


def test_integer_ids_are_read_by_arrow(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": i - 2, "text": "x"}) + "\n" for i in range(4)))
    batch = read_documents([path]).read_all()
    assert isinstance(batch.texts, TextColumn) and batch.ids == ["-2", "-1", "0", "1"]


def test_read_blocks_copies_and_keeps_unparsed_bytes(monkeypatch):
    monkeypatch.setattr(jsonl_blocks, "BLOCK_BYTES", 30)
    data = b'{"id": "a", "text": "x"}\n' + b"not json\n" + b'{"id": "b", "text": "y"}\n'
    copy = io.BytesIO()
    parser = BlockParser("id", "text", None, None)
    blocks = list(jsonl_blocks.read_blocks(io.BytesIO(data), parser, copy))
    assert copy.getvalue() == data and sum(b.size for b in blocks) == len(data)
    assert [b.parsed.ids.to_pylist() if b.parsed else b.data for b in blocks] == [
        ["a"],
        b"not json\n",
        ["b"],
    ]


def test_read_blocks_raises_a_read_error_at_its_block():
    class FailingLater(io.RawIOBase):
        calls = 0

        def readinto(self, buffer):
            self.calls += 1
            if self.calls > 1:
                raise OSError("disk gone")
            line = b'{"id": "a", "text": "x"}\n'
            buffer[: len(line)] = line
            return len(line)

    blocks = jsonl_blocks.read_blocks(FailingLater(), BlockParser("id", "text", None, None))
    assert next(blocks).parsed.ids.to_pylist() == ["a"]  # read while the next read fails
    with pytest.raises(OSError, match="disk gone"):
        next(blocks)


def _parsed(rows):
    if rows is None:
        return None
    return (
        rows.ids.to_pylist(),
        rows.texts.to_pylist(),
        rows.text_bytes.tolist(),
        rows.timestamps.tolist(),
        [(type(r).__name__, r) for r in rows.raw_timestamps],
        rows.line_starts.tolist(),
    )


@settings(max_examples=150, deadline=None)
@given(data=jsonl_file(), time_field=st.sampled_from([None, "ts"]))
def test_a_block_parsed_in_halves_as_in_one_pass(data, time_field):
    # Lines as a LineGather holds them: each with its line break.
    block = np.frombuffer(data if data.endswith(b"\n") or not data else data + b"\n", np.uint8)
    starts, plain = scan_block(block)
    parser = BlockParser("id", "text", time_field, None)
    whole = _parsed(parser.parse(block, starts) if plain else None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        patch.setattr(radix.os, "cpu_count", lambda: 2)
        halves = _parsed(parser.parse_block(block, starts))
    assert halves == whole


@settings(deadline=None)
@given(
    st.lists(
        st.text(
            st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12
        ),
        max_size=20,
    ),
    st.integers(0, 3),
    st.sampled_from([pa.string(), pa.large_string(), pa.binary()]),
)
def test_lines_block_is_the_lines_each_ended_by_a_break(lines, skip, kind):
    array = pa.array(lines, pa.string()).cast(kind)[skip:]  # a slice: the array's offset
    expected = b"".join(line.encode() + b"\n" for line in lines[skip:])
    assert bytes(jsonl_blocks.lines_block(array)) == expected


def test_lines_block_refuses_nulls():
    with pytest.raises(ValueError, match="no null, got 1"):
        jsonl_blocks.lines_block(pa.array(["{}", None]))


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    data=st.data(),
    pad=st.integers(0, 20),
)
def test_line_gather_copies_the_lines_whose_break_a_buffer_holds(lines, data, pad):
    """Lines gathered from buffers (with other bytes between them, the last one maybe cut
    before its break) are the lines; a cut line stops the copy, and its rest comes as a
    line of its own; the buffers grow past their first size."""
    gather = jsonl_blocks.LineGather()
    expected = []
    for _ in range(3):  # three blocks from the same gather, its buffers used again
        chosen = sorted(data.draw(st.sets(st.sampled_from(range(len(lines))))) if lines else [])
        buf, starts = bytearray(), []
        for i, line in enumerate(lines):
            if i in chosen:
                starts.append(len(buf))
            buf += line + b"\n" + b"x" * pad
        cut = data.draw(st.booleans()) and bool(chosen)
        if cut:  # the buffer ends inside the last chosen line: no break for it
            buf = buf[: starts[-1] + len(lines[chosen[-1]])]
        done = gather.add(np.frombuffer(bytes(buf), np.uint8), np.array(starts, np.int64))
        assert done == len(chosen) - cut
        if cut:
            gather.add_line(lines[chosen[-1]])
        block, places = gather.take()
        expected = [lines[i] + b"\n" for i in chosen]
        assert [block.tobytes()[a:b] for a, b in zip(places[:-1], places[1:])] == expected
        assert places[-1] == block.shape[0] == sum(map(len, expected))


def test_line_gather_names_the_bytes_of_its_last_line():
    gather = jsonl_blocks.LineGather()
    assert gather.last_line_bytes == 0
    gather.add(np.frombuffer(b"ab\ncde\n", np.uint8), np.array([0, 3]))
    assert gather.last_line_bytes == 4
    gather.add_line(b"xy")
    assert gather.last_line_bytes == 3
    gather.take()
    assert gather.last_line_bytes == 0
