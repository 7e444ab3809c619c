import ctypes
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import bounds, radix
from neardup.candidates.bounds import (
    first_block_order,
    gather_rows,
    length_possible,
    possible_by_blocks,
    read_rows,
    reads_rows_only,
    sketch_block_rows,
)
from neardup.lcs import possible_pairs
from neardup.text.units import lcs_unit_sketches

WORDS = "a b c d e f g h".split()


def _texts(draw, n):
    return [
        " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=12))) for _ in range(n)
    ]


def _mapped(tmp_path, array):
    path = tmp_path / "sketches.bin"
    array.tofile(path)
    return np.memmap(path, dtype=array.dtype, mode="r", shape=array.shape)


def _plain_bound(sizes, sketches, a, b, threshold):
    """The two tests of the LCS kernel written out pair by pair: the length ratio, then the
    count bound Σ min over the buckets (none when a bucket holds 255 on both sides, nor for two
    sketches of every count 255)."""
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        low, top = sorted((int(sizes[x]), int(sizes[y])))
        if top == 0:
            out.append(True)
            continue
        if (sketches[x] == 255).all() and (sketches[y] == 255).all():
            out.append(True)
            continue
        need = int(np.ceil(threshold * top - 1e-9))
        least = np.minimum(sketches[x].astype(int), sketches[y].astype(int))
        common = top if (least == 255).any() else int(least.sum())
        out.append(low / top >= threshold and common >= need)
    return np.array(out, dtype=bool)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), threshold=st.sampled_from([0.5, 0.8, 1.0]), two_cores=st.booleans())
def test_pairs_in_halves_decide_as_the_pair_by_pair_bounds(data, threshold, two_cores):
    texts = _texts(data.draw, data.draw(st.integers(1, 12)))
    sizes, sketches = lcs_unit_sketches(texts)
    n = len(texts)
    a = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=40)), dtype=np.int64)
    b = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=len(a), max_size=len(a))))
    with pytest.MonkeyPatch.context() as patch:
        if two_cores:  # two halves of the pairs on two threads, however few
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        got = bounds.possible_in_halves(sizes, sketches, a, b.astype(np.int64), threshold)
    assert got.tolist() == _plain_bound(sizes, sketches, a, b, threshold).tolist()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_blocks_decide_as_the_pair_by_pair_bounds(tmp_path_factory, data):
    n = data.draw(st.integers(1, 40))
    sizes, sketches = lcs_unit_sketches(_texts(data.draw, n))
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80)
    )
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    threshold = data.draw(st.sampled_from([0.3, 0.5, 0.8, 1.0]))
    block_rows = data.draw(st.integers(1, n + 3))
    mapped = _mapped(tmp_path_factory.mktemp("bounds"), sketches)
    want = _plain_bound(sizes, sketches, a, b, threshold)
    assert possible_by_blocks(sizes, mapped, a, b, threshold, block_rows).tolist() == want.tolist()
    assert possible_by_blocks(sizes, sketches, a, b, threshold, block_rows).tolist() == (
        want.tolist()
    )
    # Ends held in 32 bits (as the out-of-core candidates hold them) decide alike.
    narrow = possible_by_blocks(
        sizes, mapped, a.astype(np.uint32), b.astype(np.uint32), threshold, block_rows
    )
    assert narrow.tolist() == want.tolist()
    # Bounded by the coarse sketches first: the same answers.
    with bounds.scanned_sketches(mapped, block_rows) as (_, coarse):
        got = possible_by_blocks(sizes, mapped, a, b, threshold, block_rows, coarse)
    assert got.tolist() == want.tolist()
    coarse = bounds.coarse_sketches(sketches)
    got = possible_by_blocks(sizes, mapped, a, b, threshold, block_rows, coarse)
    assert got.tolist() == want.tolist()


def test_read_rows_reads_a_map_from_its_file_and_a_stored_checkpoint(tmp_path):
    array = np.arange(60, dtype=np.uint8).reshape(20, 3)
    mapped = _mapped(tmp_path, array)
    out = np.empty((4, 3), dtype=np.uint8)
    assert read_rows(mapped, 5, out).tolist() == array[5:9].tolist()
    np.save(tmp_path / "stored.npy", array)
    stored = np.load(tmp_path / "stored.npy", mmap_mode="r")
    assert read_rows(stored, 16, out).tolist() == array[16:20].tolist()
    assert read_rows(array, 0, out).tolist() == array[:4].tolist()
    with pytest.raises(OSError, match="shorter"):
        read_rows(np.memmap(tmp_path / "sketches.bin", np.uint8, "r", shape=(20, 3)), 18, out)


def test_block_rows_fit_two_blocks_in_the_memory_given():
    sketches = np.zeros((1000, 128), dtype=np.uint8)
    assert sketch_block_rows(sketches, None) == 1000
    # 128 bytes of sketch, 16 of coarse sketch and 8 of unit count a row, two blocks.
    assert sketch_block_rows(sketches, 2 * 152 * 10) == 10
    assert sketch_block_rows(sketches, 2 * 152 * 10 - 1) == 9
    assert sketch_block_rows(sketches, 1) == 1
    assert sketch_block_rows(sketches, 1 << 30) == 1000
    with pytest.raises(ValueError, match="block_rows must be >= 1; got 0"):
        possible_by_blocks(np.zeros(1), sketches[:1], np.zeros(1), np.zeros(1), 0.5, 0)


def test_scan_finds_the_sketches_of_every_count_255(tmp_path, monkeypatch):
    every = [2, 7, 10, 63, 64, 129, 149]  # across the words of the bits
    sketches = np.zeros((150, 4), dtype=np.uint8)
    sketches[every] = 255
    sketches[5, :3] = 255  # not every bucket
    mapped = _mapped(tmp_path, sketches)
    monkeypatch.setattr(bounds, "SCAN_ROWS", 3)
    for block_rows in (1, 4, 100):
        for source in (mapped, sketches):
            with bounds.scanned_sketches(source, block_rows) as (unbounded, _):
                flags = np.unpackbits(unbounded.view(np.uint8), bitorder="little")
                assert unbounded.shape == (3,) and np.flatnonzero(flags).tolist() == every


def _coarse_of(sketches):
    """Each run of FOLD buckets summed, 255 for 255 or more, written out row by row."""
    fold = bounds.FOLD
    width = -(-sketches.shape[1] // fold)
    return np.array(
        [[min(255, int(row[c * fold : (c + 1) * fold].sum())) for c in range(width)]
         for row in sketches.astype(int)],
        dtype=np.uint8,
    ).reshape(sketches.shape[0], width)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.sampled_from([0, 1, 2, 7, 40, 100, 254, 255]), min_size=20, max_size=20),
        min_size=1,
        max_size=9,
    ),
    block_rows=st.integers(1, 10),
)
def test_coarse_sketches_sum_runs_of_buckets_in_a_file_removed_after(
    tmp_path_factory, rows, block_rows
):
    sketches = np.array(rows, dtype=np.uint8).reshape(len(rows), 20)
    assert bounds.coarse_sketches(sketches).tolist() == _coarse_of(sketches).tolist()
    folder = tmp_path_factory.mktemp("coarse")
    mapped = _mapped(folder, sketches)
    with bounds.scanned_sketches(mapped, block_rows) as (_, coarse):
        if block_rows >= len(rows):  # one block: read once whatever the pairs
            assert coarse is None
        else:
            assert isinstance(coarse, np.memmap)
            assert coarse.tolist() == _coarse_of(sketches).tolist()
            assert len(list(folder.iterdir())) == 2  # the sketches and their coarse sketches
    assert [p.name for p in folder.iterdir()] == ["sketches.bin"]
    with bounds.scanned_sketches(sketches, block_rows) as (_, in_memory):
        assert in_memory is None  # read in place: nothing to save


def test_coarse_file_removed_when_the_sweep_fails(tmp_path):
    sketches = np.ones((5, 128), dtype=np.uint8)
    mapped = _mapped(tmp_path, sketches)
    with pytest.raises(RuntimeError, match="stop"):
        with bounds.scanned_sketches(mapped, 2) as (_, coarse):
            assert coarse is not None
            raise RuntimeError("stop")
    assert [p.name for p in tmp_path.iterdir()] == ["sketches.bin"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_coarse_bound_never_rules_out_a_pair_the_sketches_leave(data):
    """Adversarial sketches: counts at and around the 255 cap, runs that saturate on one side
    or both, rows of every count 255, texts of any length."""
    n = data.draw(st.integers(2, 12))
    # Mostly empty buckets (short texts), some near the cap so that runs saturate.
    counts = st.sampled_from([0] * 24 + [1, 1, 2, 3, 31, 32, 33, 120, 254, 255])
    rows = [data.draw(st.lists(counts, min_size=128, max_size=128)) for _ in range(n)]
    sketches = np.array(rows, dtype=np.uint8)
    for r in range(n):
        if data.draw(st.booleans()) and data.draw(st.booleans()):
            sketches[r] = 255  # a Korean text
    # Unit counts at least the sketch's sum (a count stops at 255), or any (a lone length).
    sums = sketches.astype(np.int64).sum(axis=1)
    extra = st.sampled_from([0, 0, 0, 1, 5, 300])
    sizes = np.array([s + data.draw(extra) for s in sums.tolist()], np.int64)
    a = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=30)))
    b = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=len(a), max_size=len(a))))
    threshold = data.draw(st.sampled_from([0.1, 0.3, 0.5, 0.8, 0.95, 1.0]))
    coarse_keeps = possible_pairs(sizes, bounds.coarse_sketches(sketches), a, b, threshold)
    sketch_keeps = _plain_bound(sizes, sketches, a, b, threshold)
    assert not (sketch_keeps & ~coarse_keeps).any()
    # A text with itself is never ruled out, when its sketch counts every unit of it (or stops
    # at 255 in a bucket): a lone length past an unsaturated sketch's sum is no text's.
    counted = (sizes == sums) | (sketches == 255).any(axis=1)
    assert sketch_keeps[(a == b) & counted[a]].all()


def test_coarse_bound_rules_out_pairs_of_short_unrelated_texts():
    """Why the sweep bounds by the coarse sketches first: at the default threshold they
    rule out nearly every pair of short unrelated texts, as the sketches do (99 % here)."""
    rng = np.random.default_rng(7)
    vocabulary = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choice(vocabulary, size=30)) for _ in range(400)]
    sizes, sketches = lcs_unit_sketches(texts)
    a, b = np.triu_indices(len(texts), 1)
    coarse_keeps = possible_pairs(sizes, bounds.coarse_sketches(sketches), a, b, 0.8)
    assert possible_pairs(sizes, sketches, a, b, 0.8).sum() == 0
    assert coarse_keeps.sum() <= 0.02 * len(a)


def _stored(tmp_path, array):
    """``array`` saved with ``np.save`` and opened with ``mmap_mode``: its rows start after
    the file's header (128 bytes), so that they need not start on a page."""
    path = tmp_path / "stored.npy"
    np.save(path, array)
    return np.load(path, mmap_mode="r")


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_tiles_read_whole_or_row_by_row_decide_as_the_whole_arrays(tmp_path_factory, data):
    """Each tile is read whole or row by row as hypothesis decides (both, mixed, in any
    order), its map windows as small as a page or as the default: the result is always that
    of possible_pairs over the whole arrays, for any ends (equal ones, both in one block, in
    the last partial block, uint32 or int64) and both kinds of file."""
    n = data.draw(st.integers(1, 60), label="n")
    sizes, sketches = lcs_unit_sketches(_texts(data.draw, n))
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120)
    )
    dtype = data.draw(st.sampled_from([np.int64, np.uint32, np.int32]), label="dtype")
    a = np.array([p[0] for p in pairs], dtype=dtype)
    b = np.array([p[1] for p in pairs], dtype=dtype)
    threshold = data.draw(st.sampled_from([0.3, 0.5, 0.8, 1.0]))
    block_rows = data.draw(st.one_of(st.just(1), st.integers(1, n + 3)), label="block_rows")
    folder = tmp_path_factory.mktemp("tiles")
    file = data.draw(st.sampled_from([_mapped, _stored]), label="file")(folder, sketches)
    want = possible_pairs(sizes, sketches, a, b, threshold).tolist()

    def decide(pairs: int, rows: int, row_bytes: int) -> bool:
        return data.draw(st.booleans(), label="rows only")

    # A tile's pairs bounded a slice at a time, and sketches in memory read in place so.
    slices = mock.patch.object(bounds, "SCAN_ROWS", data.draw(st.integers(1, 50), label="slice"))
    with mock.patch.object(bounds, "reads_rows_only", decide), slices:
        assert possible_by_blocks(sizes, file, a, b, threshold, block_rows).tolist() == want
        with bounds.scanned_sketches(file, block_rows) as (_, coarse):
            got = possible_by_blocks(sizes, file, a, b, threshold, block_rows, coarse)
        assert got.tolist() == want
        assert possible_by_blocks(sizes, sketches, a, b, threshold, block_rows).tolist() == want
    # The ends as given, not copied to int64 whole.
    assert a.dtype == dtype and b.dtype == dtype


@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
def test_no_pairs_and_pairs_of_one_document(tmp_path, dtype):
    sizes, sketches = lcs_unit_sketches(["a b c", "a b c", "d e f g", ""])
    mapped = _mapped(tmp_path, sketches)
    none = np.zeros(0, dtype=dtype)
    assert possible_by_blocks(sizes, mapped, none, none, 0.8, 1).tolist() == []
    same = np.array([3, 0, 2, 0], dtype=dtype)
    with mock.patch.object(bounds, "reads_rows_only", lambda *_: True):
        got = possible_by_blocks(sizes, mapped, same, same[::-1].copy(), 0.8, 1)
    assert got.tolist() == possible_pairs(sizes, sketches, same, same[::-1], 0.8).tolist()


def test_sparse_and_dense_tiles_by_the_cost_rule(tmp_path):
    """Blocks of 32 pages (the last of 29): a tile of at most 8 pairs (7 in the last block)
    reads only its rows, one of more its block whole; a run with both decides as the whole
    arrays."""
    rng = np.random.default_rng(3)
    n, block_rows = 4000, 1024
    # Rows near one of four: the pairs of one kind pass, the others do not.
    kinds = rng.random((4, 128)) < 0.35
    sketches = (kinds[np.arange(n) % 4] ^ (rng.random((n, 128)) < 0.03)).astype(np.uint8)
    sizes = sketches.sum(axis=1, dtype=np.int64)
    assert reads_rows_only(8, block_rows, 128) and not reads_rows_only(9, block_rows, 128)
    assert reads_rows_only(7, 928, 128) and not reads_rows_only(8, 928, 128)
    assert not reads_rows_only(1, 1, 128)  # a row of its own page: the block is as cheap
    # Tiles (0, 1) and (1, 3): sparse; (0, 2): dense; (2, 2) and (3, 3) read nothing more.
    a = np.concatenate([rng.integers(0, 1024, 5), rng.integers(1024, 2048, 7)])
    b = np.concatenate([rng.integers(1024, 2048, 5), rng.integers(3072, 4000, 7)])
    a = np.concatenate([a, rng.integers(0, 1024, 300), [2100, 3500, 3999]])
    b = np.concatenate([b, rng.integers(2048, 3072, 300), [2100, 3072, 3998]])
    order = rng.permutation(a.shape[0])
    a, b = a[order].astype(np.uint32), b[order].astype(np.uint32)
    mapped = _mapped(tmp_path, sketches)
    reads = {"whole": [], "rows": []}
    whole, rows = bounds.read_rows, bounds.gather_rows

    def read_whole(array, start, out, halves=False):
        reads["whole"].append(start)
        assert halves  # the sweep reads its blocks on two threads
        return whole(array, start, out, halves)

    def read_some(array, start, needed, out):
        reads["rows"].append((start, needed.shape[0]))
        return rows(array, start, needed, out)

    with (
        mock.patch.object(bounds, "read_rows", read_whole),
        mock.patch.object(bounds, "gather_rows", read_some),
    ):
        got = possible_by_blocks(sizes, mapped, a, b, 0.8, block_rows)
    want = possible_pairs(sizes, sketches, a, b, 0.8)
    assert got.tolist() == want.tolist() and 0 < want.sum() < want.shape[0]
    # First blocks 0, 1, 2, 3 whole and block 2 as a second one; blocks 1 and 3 row by row.
    assert reads["whole"] == [0, 2048, 1024, 2048, 3072]
    assert [start for start, _ in reads["rows"]] == [1024, 3072]
    assert [count for _, count in reads["rows"]] == [5, 7]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_gather_rows_copies_just_the_rows_named(tmp_path_factory, data):
    """Rows of any width (wider than a page too), at any start, from files whose rows begin
    at a page or not, with the rows' indices of any integer dtype, compiled or through the
    map (where the C library lacks the calls): exactly ``out[rows] = array[start + rows]``, the
    other rows of ``out`` untouched."""
    width = data.draw(st.sampled_from([1, 3, 128, 5000]), label="width")
    n = data.draw(st.integers(1, 50), label="n")
    array = np.arange(n * width, dtype=np.uint32).reshape(n, width) % 251
    start = data.draw(st.integers(0, n - 1), label="start")
    dtype = data.draw(st.sampled_from([np.int64, np.int32, np.uint32]), label="dtype")
    rows = np.array(
        sorted(data.draw(st.sets(st.integers(0, n - start - 1)), label="rows")), dtype=dtype
    )
    folder = tmp_path_factory.mktemp("gather")
    file = data.draw(st.sampled_from([_mapped, _stored]), label="file")(folder, array)
    out = np.full((n - start, width), 7, dtype=np.uint32)
    want = out.copy()
    want[rows] = array[start + rows.astype(np.int64)]
    assert gather_rows(file, start, rows, out).tolist() == want.tolist()
    out[:] = 7
    with mock.patch.object(bounds, "_PREAD", None):
        assert gather_rows(file, start, rows, out).tolist() == want.tolist()
    out[:] = 7
    assert gather_rows(array, start, rows, out).tolist() == want.tolist()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_gather_rows_leaves_no_file_or_map_open(tmp_path):
    """No map of the file is made, and as many file descriptors are open afterwards as
    before (also when it raises)."""
    rng = np.random.default_rng(5)
    array = rng.integers(0, 255, size=(3000, 128), dtype=np.uint8)
    mapped = _mapped(tmp_path, array)

    def maps_of_file() -> int:
        return Path("/proc/self/maps").read_text().count(str(tmp_path / "sketches.bin"))

    fds, maps = len(os.listdir("/proc/self/fd")), maps_of_file()
    rows = np.sort(rng.choice(3000, 200, replace=False))
    out = np.zeros_like(array)
    assert gather_rows(mapped, 0, rows, out)[rows].tolist() == array[rows].tolist()
    assert len(os.listdir("/proc/self/fd")) == fds and maps_of_file() == maps
    with pytest.raises(OSError, match="shorter"):
        gather_rows(mapped, 2999, np.array([0, 1]), out)
    assert len(os.listdir("/proc/self/fd")) == fds and maps_of_file() == maps


def test_reads_in_two_halves_read_each_row_once(tmp_path, monkeypatch):
    """With the thresholds lowered so that every read is cut in two: ``gather_rows`` hands each
    half of its rows to the compiled loop once (the second on the other thread), a failed
    read in the second half is read again by Python and the loop goes on after it; and
    ``read_rows(..., halves=True)`` reads each half of the block once. The rows are those of
    one read."""
    rng = np.random.default_rng(11)
    array = rng.integers(0, 255, size=(1000, 24), dtype=np.uint8)
    mapped = _mapped(tmp_path, array)
    monkeypatch.setattr(bounds, "GATHER_WORK", radix.PARALLEL_MIN_KEYS)
    monkeypatch.setattr(bounds, "READ_HALVES_BYTES", 1)
    monkeypatch.setattr(radix.os, "cpu_count", lambda: 2)  # halves on a machine of one core too
    real = bounds._read_rows_at
    loops = []
    rows = np.arange(3, 1000, 3)  # 333 rows: halves of 166 and 167
    first_half, second_half = rows[:166], rows[166:]
    fails = int(second_half[0])

    def second_half_fails_once(
        pread, fadvise, will_need, ask, fd, first, row_bytes, page, rows, out
    ):
        loops.append((int(rows[0]), first.shape[0]))
        if int(rows[0]) == fails and sum(start == fails for start, _ in loops) == 1:
            return 0  # the second half's first row fails in the loop, once
        return real(pread, fadvise, will_need, ask, fd, first, row_bytes, page, rows, out)

    monkeypatch.setattr(bounds, "_read_rows_at", second_half_fails_once)
    out = np.zeros_like(array)
    assert gather_rows(mapped, 0, rows, out)[rows].tolist() == array[rows].tolist()
    assert sorted(loops) == sorted(
        [(int(first_half[0]), len(first_half)), (fails, len(second_half)),
         (int(second_half[1]), len(second_half) - 1)]
    )  # fmt: skip
    halves = []
    real_part = bounds._read_part

    def part(half, lo, hi, *rest):
        halves.append((half, lo, hi))
        return real_part(half, lo, hi, *rest)

    read_bytes = []
    real_preadv = os.preadv

    def counted_preadv(fd, buffers, offset):
        read_bytes.append(real_preadv(fd, buffers, offset))
        return read_bytes[-1]

    monkeypatch.setattr(bounds, "_read_part", part)
    monkeypatch.setattr(bounds.os, "preadv", counted_preadv)
    block = np.zeros((37, 24), dtype=np.uint8)
    assert read_rows(mapped, 900, block, halves=True).tolist() == array[900:937].tolist()
    assert sorted(halves) == [(0, 0, 18), (1, 18, 37)] and sum(read_bytes) == block.nbytes
    halves.clear()
    assert read_rows(mapped, 900, block).tolist() == array[900:937].tolist()
    assert halves == [(0, 0, 37)]  # without halves: one read


def test_gather_rows_reports_a_failed_read_with_the_system_error(tmp_path, monkeypatch):
    """A read that fails inside the compiled loop (here: the first row's) is read again by
    Python, which raises the system's error, or goes on with the other rows when it succeeds."""
    array = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16)
    mapped = _mapped(tmp_path, array)
    rows = np.array([3, 9, 40])
    real = bounds._read_rows_at
    calls = []

    def first_read_fails(pread, fadvise, will_need, ask, fd, first, *rest):
        calls.append(first.shape[0])
        return 0 if len(calls) == 1 else real(pread, fadvise, will_need, ask, fd, first, *rest)

    monkeypatch.setattr(bounds, "_read_rows_at", first_read_fails)
    out = np.zeros_like(array)
    assert gather_rows(mapped, 0, rows, out)[rows].tolist() == array[rows].tolist()
    assert calls == [3, 2]  # the loop again after the row Python read

    def broken(fd, length, offset):
        raise OSError(5, "Input/output error")

    calls.clear()
    monkeypatch.setattr(bounds.os, "pread", broken)
    with pytest.raises(OSError, match="Input/output error"):
        gather_rows(mapped, 0, rows, out)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="needs posix_fadvise")
def test_gather_rows_asks_for_the_pages_only_when_the_page_cache_lacks_them(tmp_path, monkeypatch):
    """Pages dropped from the page cache are found missing and asked for; pages read a moment
    ago are found held, and not asked for; the rows are the same either way."""
    array = np.arange(4096 * 64, dtype=np.uint8).reshape(4096, 64)
    mapped = _mapped(tmp_path, array)
    asked = []
    real = bounds._read_rows_at

    def reads(pread, fadvise, will_need, ask, *rest):
        asked.append(ask)
        return real(pread, fadvise, will_need, ask, *rest)

    monkeypatch.setattr(bounds, "_read_rows_at", reads)
    rows = np.arange(0, 4096, 97)
    with open(tmp_path / "sketches.bin", "rb") as fh:
        os.fsync(fh.fileno())  # written pages are dropped only once on the disk
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    held = np.zeros(1, dtype=np.uint8)  # the map's first page: the file's first (offset 0)
    ctypes.CDLL(None).mincore(
        ctypes.c_void_p(mapped.ctypes.data), 1, held.ctypes.data_as(ctypes.c_void_p)
    )
    if held[0] & 1:
        pytest.skip("the page cache kept the file's pages")
    out = np.zeros_like(array)
    assert gather_rows(mapped, 0, rows, out)[rows].tolist() == array[rows].tolist()
    (tmp_path / "sketches.bin").read_bytes()
    assert (
        gather_rows(mapped, 7, rows[:-1], out)[rows[:-1]].tolist() == array[rows[:-1] + 7].tolist()
    )
    assert asked == [True, False]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=80),
    st.integers(1, 120),
)
def test_first_block_order_groups_pairs_by_the_block_of_their_smaller_end(ends, block_rows):
    a = np.array([x for x, _ in ends], dtype=np.int32)
    b = np.array([y for _, y in ends], dtype=np.int32)
    blocks = -(-100 // block_rows)
    order, starts = first_block_order(a, b, block_rows, blocks)
    for i in range(blocks):
        want = [p for p, (x, y) in enumerate(ends) if min(x, y) // block_rows == i]
        assert order[starts[i] : starts[i + 1]].tolist() == want
    assert starts[-1] == len(ends)


def test_sweep_stops_bounding_by_coarse_sketches_that_do_not_pay(tmp_path):
    """Pairs that the coarse sketches all leave (equal texts): after eight tiles the sweep
    reads each later block once, trying the coarse sketches again every sixteenth tile; the
    answers do not change. Pairs they rule out keep them in use."""
    texts = ["a b c d e f g h"] * 40 + [f"w{i} x{i} y{i} z{i}" for i in range(40)]
    sizes, sketches = lcs_unit_sketches(texts)
    mapped = _mapped(tmp_path, sketches)
    coarse = bounds.coarse_sketches(sketches)
    for ends, paying in (((0, np.arange(1, 40)), False), ((40, np.arange(41, 80)), True)):
        a = np.full(39, ends[0], dtype=np.int64)
        b = ends[1].astype(np.int64)
        sweep = bounds.BlockSweep(sizes, mapped, 0.8, 1, coarse)
        keep = np.empty(a.shape[0], dtype=bool)
        with mock.patch.object(bounds, "reads_rows_only", lambda *args: False):
            sweep.bound(ends[0], a, b, keep, a.shape[0])
        assert keep.tolist() == _plain_bound(sizes, sketches, a, b, 0.8).tolist()
        assert sweep._dense_tiles == 39
        # Paying: every tile; not: the first eight and the 16th and 32nd.
        assert sweep._tried == (39 if paying else 10)


@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
@pytest.mark.parametrize("count", [0, 5, (radix.PARALLEL_MIN_KEYS // bounds.LENGTH_WORK) + 7])
def test_length_possible_is_the_length_ratio_unless_both_are_unbounded(dtype, count):
    """The length ratio of each pair against the threshold, a pair of two texts without
    units or of two unbounded rows kept, for ends of either dtype, in one call or in two
    halves (the last count: on two threads), each half's answers at its own pairs."""
    rng = np.random.default_rng(count)
    n = 1000
    sizes = rng.integers(0, 60, n).astype(np.uint32)
    flags = rng.random(n) < 0.1
    unbounded = np.zeros((n + 63) // 64, dtype=np.uint64)
    for row in np.flatnonzero(flags):
        unbounded[row >> 6] |= np.uint64(1) << np.uint64(row & 63)
    a, b = rng.integers(0, n, count).astype(dtype), rng.integers(0, n, count).astype(dtype)
    low = np.minimum(sizes[a], sizes[b]).astype(float)
    top = np.maximum(sizes[a], sizes[b]).astype(float)
    want = (top == 0) | (flags[a] & flags[b]) | (low >= 0.8 * top)
    assert length_possible(sizes, unbounded, a, b, 0.8).tolist() == want.tolist()
