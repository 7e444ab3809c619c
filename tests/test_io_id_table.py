import json
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io import read_documents
from neardup.io.id_table import ENTRY_BYTES, IdTable, id_hashes
from neardup.io.rows import InputError


def _repeats_by_brute_force(ids: list[str]) -> dict[int, int]:
    """Every repeated occurrence's key (its place + 1) → the key of the ID's first one."""
    first: dict[str, int] = {}
    repeats = {}
    for place, ident in enumerate(ids):
        key = place + 1
        if ident in first:
            repeats[key] = first[ident]
        else:
            first[ident] = key
    return repeats


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(
        st.sampled_from([f"id{i}" for i in range(40)] + ["é", "a b", "x" * 300]), max_size=300
    ),
    batch=st.integers(1, 50),
    room=st.sampled_from([None, 0, 1, 16 * ENTRY_BYTES * 2, 64 * ENTRY_BYTES * 2, 10**6]),
    arrow=st.sampled_from([None, pa.string(), pa.large_string()]),
)
def test_finds_every_repeat_with_its_first_occurrence_whatever_the_room(ids, batch, room, arrow):
    """IDs as strs, or as slices of one Arrow string array (hashed from its buffers)."""
    with tempfile.TemporaryDirectory() as spill:
        _check_against_brute_force(ids, batch, room, spill, arrow)


def _check_against_brute_force(ids, batch, room, spill, arrow=None):
    table = IdTable(room, spill)
    column = pa.array(ids, arrow) if arrow is not None else None
    found = {}
    for start in range(0, len(ids), batch):
        keys = np.arange(start + 1, start + 1 + len(ids[start : start + batch]))
        if column is not None:
            firsts = table.check(column.slice(start, len(keys)), keys)
        else:
            firsts = table.check(ids[start : start + batch], keys)
        found.update((int(k), int(f)) for k, f in zip(keys, firsts) if f >= 0)
    repeats, firsts = table.spilled_repeats()
    assert repeats.tolist() == sorted(repeats.tolist())
    assert not set(found) & set(repeats.tolist())  # each repeat reported once
    found.update(zip(repeats.tolist(), firsts.tolist()))
    assert found == _repeats_by_brute_force(ids)
    table.close()
    assert os.listdir(spill) == []


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(
        st.sampled_from([f"id{i}" for i in range(30)] + ["é", "", "x" * 300]), max_size=200
    )
)
def test_ids_checked_by_their_hashes_find_the_repeats_the_strings_do(ids):
    # The Spark engine hashes IDs in one task and checks them in another.
    encoded = [i.encode() for i in ids]
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded], dtype=np.int64)])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    hashes = id_hashes(data, offsets)
    assert hashes.shape == (len(ids), 2) and hashes.dtype == np.uint64
    keys = np.arange(1, len(ids) + 1)
    firsts = IdTable().check_hashes(hashes, keys)
    assert {int(k): int(f) for k, f in zip(keys, firsts) if f >= 0} == _repeats_by_brute_force(ids)
    assert IdTable().check(ids, keys).tolist() == firsts.tolist()


def test_a_full_table_spills_instead_of_growing(tmp_path):
    room = 2 * 1024 * ENTRY_BYTES  # 1,024 slots: 768 IDs before it is full
    table = IdTable(room, str(tmp_path))
    ids = [f"doc-{i}" for i in range(5000)]
    assert (table.check(ids, np.arange(1, 5001)) == -1).all()
    assert table.h1.shape[0] * ENTRY_BYTES <= room // 2
    assert table.size + table.spilled == 5000 and table.spilled > 4000
    # A repeat of an ID held in the table is found at once; one of a spilled ID at the end.
    assert table.check(["doc-0", "doc-4999"], np.array([6001, 6002])).tolist() == [1, -1]
    assert [k.tolist() for k in table.spilled_repeats()] == [[6002], [5000]]
    table.close()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_temp_disk_is_one_clear_error(tmp_path, monkeypatch):
    import builtins

    import neardup.io.id_table as id_table

    def full_disk(path, mode="r", *args, **kwargs):  # every write fails with ENOSPC
        return builtins.open("/dev/full", mode, *args, **kwargs)

    monkeypatch.setattr(id_table, "open", full_disk, raising=False)
    table = IdTable(1, str(tmp_path))
    with pytest.raises(OSError, match="no space left on the device of the temp dir") as caught:
        table.check([f"d{i}" for i in range(100)], np.arange(100))
        table.spilled_repeats()
    assert str(tmp_path) in str(caught.value)
    table.close()
    assert os.listdir(tmp_path) == []


def test_rejects_a_negative_room(tmp_path):
    with pytest.raises(ValueError, match="room must be >= 0 bytes or None; got -1"):
        IdTable(-1, str(tmp_path))


def _write_jsonl(path, ids, bad_line_after=None):
    with open(path, "w") as out:
        for i, ident in enumerate(ids):
            out.write(json.dumps({"id": ident, "text": f"text {i}"}) + "\n")
            if bad_line_after == i:
                out.write("{not json\n")


def _read(path, spill, id_memory):
    reader = read_documents([path], spill_dir=str(spill), id_memory=id_memory, batch_size=100)
    return [ident for batch in reader for ident in batch.ids]


@pytest.mark.parametrize("id_memory", [None, 1, 4096])
def test_reader_reads_the_same_documents_and_leaves_no_spill(tmp_path, id_memory):
    ids = [f"d{i}" for i in range(3000)]
    _write_jsonl(tmp_path / "in.jsonl", ids)
    spill = tmp_path / "spill"
    spill.mkdir()
    assert _read(tmp_path / "in.jsonl", spill, id_memory) == ids
    assert os.listdir(spill) == []


@pytest.mark.parametrize("id_memory", [None, 1, 4096])
def test_reader_reports_the_first_repeat_in_input_order(tmp_path, id_memory):
    # Line 2,502 repeats a late ID (spilled when the memory is small), line 2,503 an early
    # one (held in the table), and line 2,505 is not JSON: the first of them is reported.
    ids = [f"d{i}" for i in range(2500)] + ["x", "d2400", "d3", "y"]
    _write_jsonl(tmp_path / "in.jsonl", ids, bad_line_after=len(ids) - 1)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(InputError) as caught:
        _read(tmp_path / "in.jsonl", spill, id_memory)
    error = caught.value
    assert (error.line, error.field, error.reason) == (2502, "id", "duplicate id")
    assert error.detail.endswith(f"first seen at {tmp_path / 'in.jsonl'}, line 2401")
    assert os.listdir(spill) == []


def test_reader_skipping_repeats_keeps_them_in_memory(tmp_path):
    # Skipped rows are dropped as they are read, so a skipping read never defers its check.
    _write_jsonl(tmp_path / "in.jsonl", ["a", "b", "a", "c"])
    reader = read_documents(
        [tmp_path / "in.jsonl"], spill_dir=str(tmp_path), id_memory=1, on_error="skip"
    )
    assert [i for batch in reader for i in batch.ids] == ["a", "b", "c"]
    assert reader.stats.skipped_reasons == {"duplicate id": 1}
