"""Outputs written to disk while they are written (neardup.io.write_back)."""

import doctest
import os
import sys

import pytest

import neardup.io.atomic as io_atomic
import neardup.io.write_back as write_back


def test_docstring_examples():
    assert doctest.testmod(write_back).failed == 0


def test_atomic_write_starts_writing_back_each_stretch_of_bytes(tmp_path, monkeypatch):
    # Each request covers the bytes written since the last one, from the start of the file,
    # once a stretch's worth has been written and flushed: the closing fsync then waits only
    # for the tail.
    calls = []
    monkeypatch.setattr(write_back, "WRITE_BACK_BYTES", 1000)
    monkeypatch.setattr(
        write_back,
        "start_write_back",
        lambda fd, offset, size: calls.append((offset, size, os.fstat(fd).st_size)),
    )
    pieces = [bytes([65 + i % 26]) * (150 + 37 * i) for i in range(40)]
    target = tmp_path / "out.bin"
    with io_atomic.atomic_write(target) as fh:
        for piece in pieces:
            fh.write(piece)
    assert target.read_bytes() == b"".join(pieces)
    assert calls, "no write-back was requested"
    ends = [offset + size for offset, size, _ in calls]
    assert [offset for offset, _, _ in calls] == [0, *ends[:-1]]
    assert all(size >= 1000 for _, size, _ in calls)
    assert all(on_disk >= end for (_, _, on_disk), end in zip(calls, ends))
    assert sum(map(len, pieces)) - ends[-1] < 1000 + max(map(len, pieces))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_start_write_back_reaches_the_system(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10_000)
    fd = os.open(path, os.O_RDWR)
    try:
        assert write_back._SYNC_RANGE is not None
        assert write_back._SYNC_RANGE(fd, 0, 10_000, write_back._SYNC_FILE_RANGE_WRITE) == 0
        write_back.start_write_back(fd, 0, 10_000)
    finally:
        os.close(fd)
