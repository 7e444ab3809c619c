"""Pass 1's IDs and locations, in memory or moved to disk while they are read: the same
columns either way, the budget charged only for what stays in memory."""

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.engines.kept_columns import KeptColumns
from neardup.engines.spill import ColumnFile, MemoryBudget, WorkDir

batches = st.lists(
    st.lists(st.text(max_size=6), max_size=9),  # the IDs of one batch
    max_size=8,
)


def _locations(start, rows):
    return np.stack([np.zeros(rows, np.int64), np.arange(start, start + rows)], axis=1) * 3


@settings(max_examples=120, deadline=None)
@given(
    parts=batches,
    limit=st.integers(0, 600),
    least_room=st.integers(0, 400),
    located=st.booleans(),
    may_spill=st.booleans(),
)
def test_the_columns_are_those_read_wherever_they_are_kept(
    tmp_path_factory, parts, limit, least_room, located, may_spill
):
    with WorkDir(tmp_path_factory.mktemp("kept"), "k", "out") as work:
        budget = MemoryBudget(limit)
        kept = KeptColumns(work, budget, budget.charge, least_room, may_spill)
        start = 0
        for ids in parts:
            where = _locations(start, len(ids)) if located else None
            kept.add(pa.array(ids, type=pa.large_string()), where)
            start += len(ids)
        kept.finish()
        every = [i for ids in parts for i in ids]
        assert kept.read_ids().to_pylist() == every
        on_disk = kept.ids_path is not None
        # On disk exactly when the budget's room fell short (and the caller let them go): the
        # room only shrinks while they are held, so the end decides.
        held = sum(pa.array(ids, type=pa.large_string()).nbytes for ids in parts)
        held += start * 16 if located else 0
        assert on_disk == (may_spill and limit - held < least_room)
        # What stays in memory is charged; what went to disk is given back.
        assert budget.free == (limit if on_disk else limit - held)
        if not located and parts:
            assert kept.locations is None
        elif located:
            assert isinstance(kept.locations, ColumnFile) == on_disk
            everywhere = np.arange(start, dtype=np.int64)
            got = (
                kept.locations.take(everywhere)
                if on_disk
                else np.asarray(kept.locations)[everywhere]
            )
            np.testing.assert_array_equal(got, _locations(0, start))


def test_a_batch_without_locations_drops_those_kept(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        budget = MemoryBudget(1 << 20)
        kept = KeptColumns(work, budget, budget.charge, 0)
        kept.add(pa.array(["a"], type=pa.large_string()), _locations(0, 1))
        kept.add(pa.array(["b"], type=pa.large_string()), None)
        kept.add(pa.array(["c"], type=pa.large_string()), _locations(2, 1))
        kept.finish()
        assert kept.locations is None and kept.read_ids().to_pylist() == ["a", "b", "c"]
        assert budget.free == (1 << 20) - kept.ids.nbytes


def test_later_batches_go_straight_to_disk(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        budget = MemoryBudget(100)
        kept = KeptColumns(work, budget, budget.charge, 90)
        kept.add(pa.array(["first"], type=pa.large_string()), _locations(0, 1))
        assert kept.ids_path is not None  # 16 + 5 + 16 bytes leave less than 90 free
        kept.add(pa.array(["second"], type=pa.large_string()), _locations(1, 1))
        assert budget.free == 100  # nothing of the second batch is held either
        kept.finish()
        assert kept.read_ids().to_pylist() == ["first", "second"]
        assert kept.disk_bytes == kept.ids_path.stat().st_size + 32


def test_column_file_append_checks_the_rows(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        column = ColumnFile(work, "where", np.zeros((2, 2), np.int64))
        column.append(np.ones((3, 2), np.int64))
        assert len(column) == 5 and column.disk_bytes == 80
        assert column.take(np.array([1, 2])).tolist() == [[0, 0], [1, 1]]
        with pytest.raises(ValueError, match="appended to a column of int64"):
            column.append(np.ones((1, 3), np.int64))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_while_moving_them_is_one_clear_error(tmp_path, monkeypatch):
    with WorkDir(tmp_path, "k", "out") as work:
        monkeypatch.setattr(work, "file", lambda name: Path("/dev/full"))
        budget = MemoryBudget(10)
        kept = KeptColumns(work, budget, budget.charge, 5)
        with pytest.raises(OSError, match="no space left"):
            kept.add(pa.array(["x" * 5000] * 50, type=pa.large_string()), None)
            kept.finish()
