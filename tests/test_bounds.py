import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates.bounds import possible_by_blocks, read_rows, sketch_block_rows
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
    assert sketch_block_rows(sketches, 2 * 136 * 10) == 10
    assert sketch_block_rows(sketches, 1) == 1
    assert sketch_block_rows(sketches, 1 << 30) == 1000
    with pytest.raises(ValueError, match="block_rows must be >= 1; got 0"):
        possible_by_blocks(np.zeros(1), sketches[:1], np.zeros(1), np.zeros(1), 0.5, 0)


def test_unbounded_rows_are_the_sketches_of_every_count_255(tmp_path, monkeypatch):
    from neardup.candidates import bounds

    sketches = np.zeros((11, 4), dtype=np.uint8)
    sketches[[2, 7, 10]] = 255
    sketches[5, :3] = 255  # not every bucket
    mapped = _mapped(tmp_path, sketches)
    monkeypatch.setattr(bounds, "SCAN_ROWS", 3)
    for block_rows in (1, 4, 100):
        got = bounds.unbounded_rows(mapped, block_rows)
        assert np.flatnonzero(got).tolist() == [2, 7, 10]
