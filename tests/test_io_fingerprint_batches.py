"""Fingerprint rows as a stream of batches (neardup.io.fingerprint_batches): the rows, stats and
errors of read_fingerprints, whichever way the stream reads them."""

import doctest
import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.io.fingerprint_batches as batches_module
import neardup.io.fingerprints as io_fingerprints
from neardup.io import FingerprintBatches, InputError, read_fingerprints


def streamed(paths, **options):
    """The stream's rows joined (only those after its last restart), its restarts and stats."""
    restarts = []
    parts = []
    reader = FingerprintBatches(paths, **options)

    def restart():
        restarts.append(len(parts))
        parts.clear()

    reader.on_restart = restart
    for batch in reader:
        parts.append(
            (batch.ids.to_pylist(), batch.fingerprints.tolist(), batch.timestamps.tolist())
        )
    ids = [i for p in parts for i in p[0]]
    fps = [f for p in parts for f in p[1]]
    times = [t for p in parts for t in p[2]]
    return (ids, fps, times), restarts, reader.stats, len(parts)


def whole(paths, **options):
    table = read_fingerprints(paths, **options)
    rows = (table.ids.to_pylist(), table.fingerprints.tolist(), table.timestamps.tolist())
    return rows, table.stats


def write_rows(path, rows):
    path.write_text("".join(f"{i}\t{fp:016x}\t{t}\n" for i, fp, t in rows), encoding="utf-8")
    return path


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 200 bytes: a few rows each, several waves of them."""
    monkeypatch.setattr(io_fingerprints, "_BLOCK_BYTES", 200)


def test_seed_rows_come_block_by_block_in_order(tmp_path, small_blocks):
    rows = [(f"u{k:05d}", k * 7919, 1_700_000_000 + k) for k in range(100)]
    path = write_rows(tmp_path / "part-00000", rows)
    got, restarts, stats, batches = streamed([path])
    want, want_stats = whole([path])
    assert got == want and restarts == [] and batches > 4
    assert stats.documents == want_stats.documents == 100 and stats.files == 1


def test_ids_out_of_order_start_over_with_a_table(tmp_path, small_blocks):
    rows = [(f"u{(k * 37) % 100:05d}", k, k) for k in range(100)]
    path = write_rows(tmp_path / "part-00000", rows)
    got, restarts, stats, _ = streamed([path])
    assert got == whole([path])[0] and len(restarts) == 1 and stats.documents == 100


def test_a_repeated_id_far_down_is_reported_as_read_fingerprints_reports_it(tmp_path, small_blocks):
    rows = [(f"u{k:05d}", k, k) for k in range(60)] + [("u00003", 1, 1)]
    path = write_rows(tmp_path / "part-00000", rows)
    with pytest.raises(InputError) as whole_error:
        read_fingerprints([path])
    with pytest.raises(InputError) as stream_error:
        streamed([path])
    assert str(stream_error.value) == str(whole_error.value)
    assert "line 61" in str(stream_error.value) and "line 4" in str(stream_error.value)


def test_bad_row_names_file_line_and_field(tmp_path, small_blocks):
    rows = [(f"u{k:05d}", k, k) for k in range(40)]
    path = write_rows(tmp_path / "part-00000", rows)
    with open(path, "a") as fh:
        fh.write("u99999\tnot-a-fingerprint\t5\n")
    with pytest.raises(InputError) as error:
        streamed([path])
    message = str(error.value)
    assert str(path) in message and "line 41" in message and "'fingerprint'" in message


def test_skip_keeps_the_good_rows_and_counts_the_bad(tmp_path, small_blocks):
    rows = [(f"u{k:05d}", k, k) for k in range(40)] + [("u00001", 9, 9)]
    path = write_rows(tmp_path / "part-00000", rows)
    with open(path, "a") as fh:
        fh.write("u99999\tnot-a-fingerprint\t5\nu99998\t00000000000000aa\t6\n")
    got, restarts, stats, _ = streamed([path], on_error="skip")
    want, want_stats = whole([path], on_error="skip")
    assert got == want and restarts
    assert (stats.documents, stats.skipped) == (want_stats.documents, want_stats.skipped) == (41, 2)


def test_inputs_read_row_by_row_come_in_batches_of_batch_rows(tmp_path):
    rows = [(f"id{k}", k, k) for k in range(25)]
    plain = write_rows(tmp_path / "rows.tsv", rows)
    packed = tmp_path / "rows.tsv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    got, restarts, stats, batches = streamed([packed], batch_rows=10)
    assert got == whole([plain])[0] and restarts == [] and stats.documents == 25
    assert batches == 3  # 10 + 10 + 5 (the last, at the end)


def test_batch_rows_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="batch_rows must be >= 1; got 0"):
        FingerprintBatches([tmp_path], batch_rows=0)


def test_a_batch_holds_no_view_of_the_parsing_columns(tmp_path, small_blocks):
    rows = [(f"u{k:05d}", k, k) for k in range(30)]
    path = write_rows(tmp_path / "part-00000", rows)
    batch = next(iter(FingerprintBatches([path])))
    assert batch.fingerprints.base is None and batch.timestamps.base is None
    assert batch.raw_timestamps.to_pylist()[:2] == ["0", "1"]


def test_batches_kept_whole_while_later_blocks_are_parsed(tmp_path, small_blocks):
    # Each core parses block after block into the same columns: a batch kept until the end
    # must still hold its own rows (IDs of varied lengths, so that blocks differ).
    rows = [(f"u{k:05d}" + "x" * (k % 7), k * 104729, k) for k in range(400)]
    path = write_rows(tmp_path / "part-00000", rows)
    kept = list(FingerprintBatches([path]))
    assert len(kept) > 4 * (2 * 2)  # more blocks than are parsed ahead
    got = (
        [i for b in kept for i in b.ids.to_pylist()],
        [f for b in kept for f in b.fingerprints.tolist()],
        [t for b in kept for t in b.timestamps.tolist()],
    )
    assert got == whole([path])[0]
    assert [s for b in kept for s in b.raw_timestamps.to_pylist()] == [str(k) for k in range(400)]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 30),  # an ID drawn from few, so that some repeat
            st.integers(0, 2**64 - 1),
            st.one_of(st.just(""), st.integers(0, 10**10).map(str)),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["raise", "skip"]),
    st.booleans(),
)
def test_the_stream_reads_what_read_fingerprints_reads(tmp_path_factory, rows, on_error, broken):
    path = tmp_path_factory.mktemp("rows") / "part-00000"
    lines = [f"i{i}\t{fp:016x}\t{t}\n" for i, fp, t in rows]
    if broken:
        lines.insert(len(lines) // 2, "no tabs here\n")
    path.write_text("".join(lines), encoding="utf-8")
    original = io_fingerprints._BLOCK_BYTES
    io_fingerprints._BLOCK_BYTES = 64
    try:
        try:
            expected = whole([path], on_error=on_error)
        except InputError as error:
            with pytest.raises(InputError) as raised:
                streamed([path], on_error=on_error)
            assert str(raised.value) == str(error)
            return
        got, _, stats, _ = streamed([path], on_error=on_error)
    finally:
        io_fingerprints._BLOCK_BYTES = original
    assert got == expected[0]
    assert (stats.documents, stats.skipped) == (expected[1].documents, expected[1].skipped)
    assert np.array(got[1], dtype=np.uint64).shape == (len(got[0]),)


def test_docstrings():
    assert doctest.testmod(batches_module).failed == 0
