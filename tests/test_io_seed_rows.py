"""The seed rows' compiled parser (neardup.io.seed_rows), against the row-by-row checks of
neardup.io.fingerprints and neardup.io.rows, which parse each field in Python."""

import numpy as np
import pyarrow as pa
import pytest

from neardup.io.fingerprints import fingerprint_line
from neardup.io.rows import BadRow, valid_fingerprint, valid_fingerprint_time, valid_id
from neardup.io.seed_rows import seed_lines


def _row_by_row(line: str) -> tuple[str, int, int] | None:
    """What the row-by-row reading makes of one line: (id, fingerprint, time) or None."""
    fields = fingerprint_line(line, escaped=True)
    if fields is None or type(fields) is BadRow:
        return None
    ident, value, time_value = fields
    ident, fp = valid_id(ident, "id"), valid_fingerprint(value, "auto")
    us = valid_fingerprint_time(time_value)
    if BadRow in (type(ident), type(fp), type(us)):
        return None
    return ident, fp, 0 if us is None else us


def _good_lines(rng: np.random.Generator, n: int) -> list[str]:
    lines = []
    for i in range(n):
        ident = f"u{i:06d}" if i % 3 else f"é-{i}"  # ASCII and not
        fp = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
        digits = f"{fp:016x}" if i % 2 else f"{fp:016X}"
        stamp = [
            "",
            str(int(rng.integers(0, 2**31))),
            f"2024-0{1 + i % 9}-1{i % 10}T0{i % 10}:3{i % 10}:59Z",
            f"1999-12-31T23:59:59.{int(rng.integers(0, 10**6)):06d}Z",
        ][i % 4]
        lines.append(f"{ident}\t{digits}\t{stamp}")
    return lines


def test_plain_rows_parse_as_row_by_row():
    lines = _good_lines(np.random.default_rng(5), 400)
    parsed = seed_lines(pa.array(lines))
    assert parsed is not None
    ids, fps, times = parsed
    expected = [_row_by_row(line) for line in lines]
    assert None not in expected
    assert list(zip(ids.to_pylist(), fps.tolist(), times.tolist())) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "",  # a blank line
        "id\tfingerprint\ttimestamp",  # a header
        "a\\tb\t00000000000000ff\t1",  # an escaped tab in the ID
        "a\t00000000000000ff",  # two fields
        "a\t00000000000000fg\t1",  # not hex
        "a\t0000000000000ff\t1",  # 15 digits
        "a\t00000000000000ff\tsoon",
        "a\t00000000000000ff\t2024-01-02",  # a date the rows read one by one
        "\t00000000000000ff\t2",  # an empty ID
        "a\u0085b\t00000000000000ff\t1",  # a C1 control character
        "x" * 1025 + "\t00000000000000ff\t1",  # too long an ID
        "a\t00000000000000ff\t1\r",  # a carriage return
    ],
)
def test_any_other_row_gives_the_batch_up(bad):
    # One row the compiled pass does not take sends the whole batch row by row.
    lines = _good_lines(np.random.default_rng(6), 20)
    lines.insert(7, bad)
    assert seed_lines(pa.array(lines)) is None


def test_empty_and_null_batches():
    assert seed_lines(pa.array([], pa.string())) is None
    assert seed_lines(pa.array(["a\t00000000000000ff\t1", None])) is None
    # A slice of a larger array: its own rows only.
    lines = pa.array(_good_lines(np.random.default_rng(7), 10))
    ids, _, _ = seed_lines(lines.slice(3, 4))
    assert ids.to_pylist() == [line.split("\t")[0] for line in lines.slice(3, 4).to_pylist()]
