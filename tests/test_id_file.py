"""Tests of neardup.engines.id_file: the IDs put away in pass 1, batched, and read through a
map whose pages are dropped."""

import itertools
import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from neardup.engines import id_file
from neardup.engines.id_file import IdFile, MappedIds, read_ids, take_ids


def _resident_file_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile line")


def _ids_file(path, rows: int, parts: int = 4):
    ids = IdFile(path)
    per = rows // parts
    for k in range(parts):
        ids.write(pa.array([f"document-{i:012d}" for i in range(k * per, (k + 1) * per)],
                           type=pa.large_string()))  # fmt: skip
    ids.close()
    return path


def test_the_mapped_column_is_the_file_read_whole(tmp_path):
    path = _ids_file(tmp_path / "ids.arrow", 1000)
    allocated = pa.total_allocated_bytes()
    mapped = MappedIds(path)
    # A copy of nothing: the column's buffers are the map's.
    assert pa.total_allocated_bytes() - allocated < mapped.column.nbytes // 10
    assert len(mapped) == 1000
    assert mapped.column.equals(read_ids(path))
    assert mapped.slice(998, 5).to_pylist() == ["document-000000000998", "document-000000000999"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_release_gives_back_the_pages_a_read_touched(tmp_path):
    path = _ids_file(tmp_path / "ids.arrow", 1_000_000)  # about 29 MB
    size = path.stat().st_size
    mapped = MappedIds(path)
    before = _resident_file_bytes()
    # Touch every page: the map's pages become resident.
    touched = mapped.column.take(pa.array(np.arange(0, len(mapped), 50)))
    assert _resident_file_bytes() - before > size // 2
    mapped.release()
    assert _resident_file_bytes() - before < size // 10
    # The data is still there (read again from the page cache or the file).
    assert touched.to_pylist()[:2] == ["document-000000000000", "document-000000000050"]
    assert mapped.column[len(mapped) - 1].as_py() == "document-000000999999"
    path.unlink()  # removed while mapped: the map still reads it
    assert mapped.slice(7, 1).to_pylist() == ["document-000000000007"]


def test_ids_are_written_in_batches_of_about_a_set_size(tmp_path, monkeypatch):
    monkeypatch.setattr(id_file, "ID_BATCH_BYTES", 1000)
    values = [f"id-{i}" for i in range(700)]
    ids = IdFile(tmp_path / "ids.arrow")
    for start in range(0, len(values), 7):  # parts far smaller than a batch
        ids.write(pa.array(values[start : start + 7], type=pa.large_string()))
    ids.close()
    column = read_ids(tmp_path / "ids.arrow")
    assert column.to_pylist() == values
    sizes = [chunk.nbytes for chunk in column.chunks]
    # Every batch but the last reached the size, none by more than a part.
    assert all(1000 <= size < 1000 + 7 * 20 for size in sizes[:-1]) and len(sizes) > 3
    # Stored whole (as a resumed run does): batched the same way.
    id_file.write_ids(tmp_path / "whole.arrow", column)
    assert read_ids(tmp_path / "whole.arrow").equals(column)


@given(
    chunk_sizes=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 10**6), max_size=40),
)
def test_take_ids_is_a_take_of_the_joined_chunks(chunk_sizes, picks):
    values = [f"id{i}" for i in range(sum(chunk_sizes))]
    starts = np.cumsum([0, *chunk_sizes])
    ids = pa.chunked_array(
        [values[a:b] for a, b in zip(starts[:-1], starts[1:])], type=pa.large_string()
    )
    positions = np.array([p % len(values) for p in picks] if values else [], dtype=np.int64)
    taken = take_ids(ids, positions)
    assert taken.type == pa.large_string()
    assert taken.to_pylist() == [values[p] for p in positions]


@hypothesis_settings(max_examples=30, deadline=None)
@given(
    chunk_sizes=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 10**6), max_size=40),
    take_rows=st.integers(1, 8),
)
def test_take_ids_through_a_map_takes_a_block_at_a_time_and_drops_its_pages(
    tmp_path_factory, chunk_sizes, picks, take_rows
):
    values = [f"id{i}" for i in range(sum(chunk_sizes))]
    path = tmp_path_factory.mktemp("ids") / "ids.arrow"
    with mock.patch.object(id_file, "ID_BATCH_BYTES", 1):  # a batch (a chunk) a part
        ids_file = IdFile(path)
        for a, b in itertools.pairwise(np.cumsum([0, *chunk_sizes]).tolist()):
            ids_file.write(pa.array(values[a:b], type=pa.large_string()))
        ids_file.close()
    mapped = MappedIds(path)
    releases = []
    mapped.release = lambda: releases.append(1)
    positions = np.array([p % len(values) for p in picks] if values else [], dtype=np.int64)
    with mock.patch.object(MappedIds, "TAKE_ROWS", take_rows):
        taken = take_ids(mapped, positions)
    assert taken.type == pa.large_string()
    assert taken.to_pylist() == [values[p] for p in positions]
    assert len(releases) == max(-(-len(positions) // take_rows), 1)
