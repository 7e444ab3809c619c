"""The verification data rows that an out-of-core run spills and reads back (engines/spilled_rows):
every row exactly, in any put order, narrow or wide; the caller's lengths; truncated files."""

import builtins
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from neardup.engines import spilled_rows
from neardup.engines.spill import WorkDir
from neardup.engines.spilled_rows import SpilledRows


def _rows_of_every_kind(rng, n):
    """CSR rows: characters (a shared high word: the tag, none, or all ones, which must stay
    wide), hashes, rows mixing both, single values and empty rows."""
    rows = []
    for i in range(n):
        length = int(rng.integers(0, 40)) if i % 7 else 0
        kind = i % 5
        if kind == 0:  # code points with the top bit set, as the LCS units of characters
            row = rng.integers(0, 0x110000, length, dtype=np.uint64) | np.uint64(1 << 63)
        elif kind == 1:
            row = rng.integers(0, 1 << 32, length, dtype=np.uint64)
        elif kind == 2:  # the high word of "wide" shared by every value
            row = rng.integers(0, 1 << 32, length, dtype=np.uint64) | np.uint64(0xFFFFFFFF << 32)
        elif kind == 3:
            row = rng.integers(0, 1 << 64, length, dtype=np.uint64)
        else:  # one value's high word differs from the others'
            row = rng.integers(0, 1 << 20, length, dtype=np.uint64) | np.uint64(5 << 32)
            if length:
                row[int(rng.integers(0, length))] ^= np.uint64(1 << 40)
        rows.append(row)
    return rows


def test_spilled_rows_give_back_every_row_exactly(tmp_path):
    rng = np.random.default_rng(11)
    rows = _rows_of_every_kind(rng, 300)
    place = np.concatenate([[0], np.cumsum([r.shape[0] for r in rows])])
    with WorkDir(tmp_path, "k", "x") as work:
        store = SpilledRows(work, "v", len(rows))
        # Batches put in any order, as worker threads do.
        cuts = [0, *np.sort(rng.choice(np.arange(1, len(rows)), 20, replace=False)), len(rows)]
        batches = list(zip(cuts[:-1], cuts[1:]))

        def put(batch: int) -> None:
            lo, hi = batches[batch]
            part = rows[lo:hi]
            offsets = np.concatenate([[0], np.cumsum([r.shape[0] for r in part])])
            store.put(int(lo), offsets, np.concatenate([rows[0][:0], *part]))

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(put, rng.permutation(len(batches))))
        store.finish()
        assert store.path.stat().st_size == store.disk_bytes  # appended: no holes
        # Where the values share a high word other than all ones, that word and 4 bytes a
        # value, else 8 bytes a value; nothing for an empty row.
        highs = [set((r >> np.uint64(32)).tolist()) for r in rows]
        assert store.disk_bytes == sum(
            (4 + 4 * r.shape[0] if len(h) == 1 and h != {0xFFFFFFFF} else 8 * r.shape[0])
            for h, r in zip(highs, rows)
            if r.shape[0]
        )
        assert store.disk_bytes < 8 * int(place[-1])
        for trial in range(30):
            wanted = np.sort(rng.choice(len(rows), int(rng.integers(0, 60)), replace=False))
            if trial == 0:
                wanted = np.arange(len(rows))
            if trial in (1, 2):  # no rows; empty rows only
                wanted = np.arange(0, len(rows) if trial == 2 else 0, 7)
            # Into a reused buffer when it is large enough, else a new array.
            buffer = np.full(int(rng.integers(0, 2000)), 7, dtype=np.uint64)
            offsets, values = store.take(wanted, out=buffer if trial % 2 else None)
            assert np.shares_memory(values, buffer) == (
                trial % 2 == 1 and buffer.shape[0] >= values.shape[0] > 0
            )
            expected = [rows[i] for i in wanted]
            assert offsets.tolist() == [0, *np.cumsum([len(e) for e in expected]).tolist()]
            np.testing.assert_array_equal(values, np.concatenate([rows[0][:0], *expected]))


def test_spilled_rows_hold_the_lengths_they_are_given(tmp_path):
    """Rows whose lengths the caller holds (the LCS units counted in pass 1) are read back
    through that very array, filled by the puts; lengths of another type or size are refused."""
    rows = [np.arange(3, dtype=np.uint64), np.zeros(0, np.uint64), np.array([2**40], np.uint64)]
    lengths = np.array([3, 0, 1], dtype=np.int32)
    with WorkDir(tmp_path, "k", "x") as work:
        store = SpilledRows(work, "v", 3, lengths)
        store.put(0, np.array([0, 3, 3, 4]), np.concatenate(rows))
        store.finish()
        assert store._lengths is lengths and lengths.tolist() == [3, 0, 1]
        offsets, values = store.take(np.array([0, 2]))
        assert offsets.tolist() == [0, 3, 4] and values.tolist() == [0, 1, 2, 2**40]
        for wrong in (np.zeros(3, np.int64), np.zeros(2, np.int32)):
            with pytest.raises(ValueError, match="lengths must be int32, one a row"):
                SpilledRows(work, "w", 3, wrong)


def test_spilled_rows_are_taken_only_once_finished(tmp_path):
    with WorkDir(tmp_path, "k", "x") as work:
        store = SpilledRows(work, "v", 2)
        store.put(0, np.array([0, 2, 3]), np.arange(3, dtype=np.uint64))
        with pytest.raises(RuntimeError, match="taken after finish"):
            store.take(np.array([0]))
        store.finish()
        assert store.take(np.array([1]))[1].tolist() == [2]


def test_spilled_rows_of_a_truncated_file_are_an_error(tmp_path):
    with WorkDir(tmp_path, "k", "x") as work:
        store = SpilledRows(work, "v", 2)
        store.put(0, np.array([0, 100, 200]), np.arange(200, dtype=np.uint64))
        store.finish()
        os.truncate(store.path, 500)
        with pytest.raises(OSError, match="shorter than written"):
            store.take(np.array([0, 1]))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_while_spilling_verification_data_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(
        spilled_rows,
        "open",
        lambda path, mode="r", **kw: builtins.open("/dev/full", mode, **kw),
        raising=False,
    )
    with WorkDir(tmp_path, "k", "x") as work:
        rows = SpilledRows(work, "verification", 1)
        with pytest.raises(OSError, match="no space left") as caught:
            rows.put(0, np.array([0, 3]), np.arange(3, dtype=np.uint64))
        assert str(rows.path) in str(caught.value)
