"""Rows packed in runs across Spark's shuffles (``neardup.engines.spark.runs``); the tasks run
without a Spark session."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from neardup.candidates.bands import band_hashes  # noqa: E402
from neardup.engines.spark import runs, tasks  # noqa: E402
from neardup.engines.spark.runs import band_runs_task, run_rows  # noqa: E402
from neardup.engines.spark.tasks import BAND_ROW  # noqa: E402
from neardup.settings import Settings  # noqa: E402


@pytest.mark.parametrize("most", [1, 5, 64, 4096])
@pytest.mark.parametrize("partitions", [1, 3, 16])
@pytest.mark.parametrize("timed", [True, False])
@pytest.mark.parametrize("banded", [True, False])
def test_band_runs_hold_every_band_row_once_each_run_bound_for_its_buckets_partition(
    monkeypatch, most, partitions, timed, banded
):
    # banded: a verified run's documents hold their band hashes, not their signatures.
    monkeypatch.setattr(runs, "RUN_ROWS", most)
    verify = {} if banded else {"verify": None}
    settings = Settings(method="minhash", num_perm=16, bands=4, rows=4, **verify)
    assert tasks.holds_band_hashes(settings) == banded
    rng = np.random.default_rng(partitions * most)
    batches, signatures = [], []
    for first, n in ((0, 37), (37, 0), (37, 120)):
        sig = rng.integers(0, 6, (n, 16)).astype(np.uint32)  # few values: shared buckets
        signatures.append(sig)
        stored = tasks._rows_binary(band_hashes(sig, 4, 4) if banded else sig)
        binary = stored if n else pa.array([], pa.binary())
        batches.append(
            pa.record_batch(
                {"pos": np.arange(first, first + n), "ts": rng.integers(0, 3, n), "sig": binary}
            )
        )
    keys = np.arange(100, 100 + partitions, dtype=np.int32)
    out = list(band_runs_task(batches, settings, keys, timed))
    assert len(out) == 2  # an empty batch yields nothing
    row_type = tasks.band_row_type(timed)
    assert row_type == BAND_ROW if timed else row_type.itemsize == 20
    got = np.concatenate([run_rows(b, row_type) for b in out])
    expected = []
    for batch, sig in zip(batches[::2], signatures[::2]):
        h = band_hashes(sig, 4, 4)
        for i, (pos, ts) in enumerate(zip(batch["pos"].to_pylist(), batch["ts"].to_pylist())):
            times = (ts,) if timed else ()  # untimed rows leave the (equal) times out
            expected += [(band, int(h[i, band].view(np.int64)), *times, pos) for band in range(4)]
    assert sorted(map(tuple, got.tolist())) == sorted(expected)
    bucket_place = {}
    for batch in out:
        offsets, rows = tasks._binary_csr(batch.column("rows"), row_type)
        sizes = np.diff(offsets)
        assert (sizes >= 1).all() and (sizes <= most).all()
        for dest, lo, hi in zip(batch["dest"].to_pylist(), offsets[:-1], offsets[1:]):
            assert dest in keys
            for row in rows[lo:hi]:
                # Every row of a bucket goes to one partition, in every batch.
                bucket = (int(row["band"]), int(row["h"]))
                assert bucket_place.setdefault(bucket, dest) == dest
    assert len(set(bucket_place.values())) == min(partitions, len(bucket_place))


def test_a_verified_run_signs_its_documents_with_their_band_hashes():
    texts = pa.array(["one two three four five", "one two three four six", ""])
    settings = Settings()  # MinHash, LCS verification: 32 bands of 4 rows
    plain = tasks.signature_columns(texts, settings)
    banded = tasks.signature_columns(texts, settings, banded=True)
    signatures = tasks._signature_values(plain["sig"], settings)
    assert (
        banded["sig"].to_pylist() == tasks._rows_binary(band_hashes(signatures, 32, 4)).to_pylist()
    )
    assert {k: v for k, v in banded.items() if k != "sig"} == {
        k: v for k, v in plain.items() if k != "sig"
    }
    assert len(banded["sig"][0].as_py()) == 32 * 8 < len(plain["sig"][0].as_py()) == 128 * 4


@pytest.mark.parametrize(
    "dtype",
    [BAND_ROW, np.dtype([("a", "<i8"), ("b", "<i8"), ("kind", "i1")]), np.dtype([("x", "<u2")])],
)
def test_taken_rows_equal_fancy_indexing(dtype):
    # Whole rows copied as opaque items: the same rows as numpy's field-by-field indexing,
    # for unaligned row sizes, repeated and empty orders, and a strided (non-contiguous) input.
    rng = np.random.default_rng(len(dtype.names))
    rows = np.zeros(500, dtype=dtype)
    for name in dtype.names:
        rows[name] = rng.integers(0, 1 << 15, rows.shape[0])
    for order in (rng.integers(0, 500, 2000), np.arange(500)[::-1], np.zeros(0, np.int64)):
        assert (runs.taken_rows(rows, order) == rows[order]).all()
        assert runs.taken_rows(rows, order).dtype == dtype
    strided = rows[::3]
    order = rng.integers(0, strided.shape[0], 300)
    assert (runs.taken_rows(strided, order) == strided[order]).all()


@settings(deadline=None, max_examples=80)
@given(
    chunks=st.lists(
        st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=3), max_size=5), max_size=4
    ),
    sliced=st.booleans(),
    wide=st.booleans(),
)
def test_binary_csr_reads_every_value_of_every_chunk_once(chunks, sliced, wide):
    # Chunks of packed uint64 values (empty chunks and values, slices with an offset, binary
    # and large binary) read back as one CSR: each row's values as packed, in order, aligned.
    kind = pa.large_binary() if wide else pa.binary()
    arrays = [
        pa.array([np.array(row, dtype=np.uint64).tobytes() for row in rows], kind)
        for rows in chunks
    ]
    if sliced:
        arrays = [a.slice(1) if len(a) > 1 else a for a in arrays]
    column = pa.chunked_array(arrays, type=kind)
    offsets, values = tasks._binary_csr(column, np.uint64)
    assert values.dtype == np.uint64 and values.flags.aligned
    expected = column.to_pylist()
    assert offsets.shape == (len(expected) + 1,) and offsets[0] == 0
    got = [values[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(expected))]
    assert got == expected
    if len(arrays) == 1:  # a plain array reads the same
        alone = tasks._binary_csr(arrays[0], np.uint64)
        assert [x.tolist() for x in alone] == [offsets.tolist(), values.tolist()]


def _numpy_place(first, second, partitions):
    """The place of each key as numpy's operators compute it, a reference apart from the
    compiled loop."""
    m1, m2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
    with np.errstate(over="ignore"):
        mixed = first.astype(np.uint64) * m1 ^ second.astype(np.uint64) * m2
    return ((mixed >> np.uint64(17)) % np.uint64(partitions)).astype(np.int64)


_EXTREMES = [0, 1, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_EXTREMES) | st.integers(-(2**63), 2**63 - 1),
            st.sampled_from(_EXTREMES) | st.integers(-(2**63), 2**63 - 1),
        ),
        max_size=40,
    ),
    st.sampled_from(["int64", "int32", "uint64", "uint8"]),
    st.integers(1, 70_000),
)
def test_mixed_place_equals_the_mixing_formula(keys, dtype, partitions):
    first = np.array([k[0] for k in keys], dtype=np.int64).astype(dtype)
    second = np.array([k[1] for k in keys], dtype=np.int64)
    assert runs.mixed_place(first, second, partitions).tolist() == (
        _numpy_place(first, second, partitions).tolist()
    )
    # A pair and its reverse: one place, that of (smaller end, larger end).
    a, b = np.array([k[0] for k in keys], np.int64), second
    low, high = np.minimum(a, b), np.maximum(a, b)
    expected = _numpy_place(low, high, partitions).tolist()
    assert runs.mixed_place(a, b, partitions, unordered=True).tolist() == expected
    assert runs.mixed_place(b, a, partitions, unordered=True).tolist() == expected
