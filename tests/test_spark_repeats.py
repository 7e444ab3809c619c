"""Repeated IDs counted from their hashes (``neardup.engines.spark.repeats``); the tasks run
without a Spark session, the shuffle between them as Spark's hash partitioning of ``dest``."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from neardup.engines.spark import runs  # noqa: E402
from neardup.engines.spark.repeats import ID_HASH, id_runs_task, repeats_task  # noqa: E402
from neardup.engines.spark.runs import run_rows  # noqa: E402


def _shuffled(out: list[pa.RecordBatch], keys: np.ndarray) -> list[list[pa.RecordBatch]]:
    """The runs of ``out`` by the partition their ``dest`` key names."""
    place = {int(key): p for p, key in enumerate(keys)}
    parts: list[list[pa.RecordBatch]] = [[] for _ in keys]
    for batch in out:
        for i, dest in enumerate(batch["dest"].to_pylist()):
            parts[place[dest]].append(batch.slice(i, 1))
    return parts


@settings(max_examples=80, deadline=None)
@given(
    ids=st.lists(
        st.sampled_from([f"d{i}" for i in range(25)] + ["", "é", "한국어", "x" * 500]),
        max_size=300,
    ),
    batch=st.integers(1, 60),
    partitions=st.integers(1, 5),
    most=st.sampled_from([1, 3, 4096]),
)
def test_the_partitions_counts_add_up_to_the_repeats_of_the_ids(ids, batch, partitions, most):
    runs.RUN_ROWS, before = most, runs.RUN_ROWS
    try:
        keys = np.arange(7, 7 + partitions, dtype=np.int32)
        batches = [
            pa.record_batch({"id": pa.array(ids[i : i + batch], pa.string())})
            for i in range(0, len(ids), batch)
        ]
        out = list(id_runs_task(batches, keys))
    finally:
        runs.RUN_ROWS = before
    hashes = np.concatenate([run_rows(b, ID_HASH) for b in out]) if out else np.zeros(0, ID_HASH)
    assert hashes.shape[0] == len(ids)  # every ID once
    every = Counter(row.tobytes() for row in hashes)
    counts = []
    for part in _shuffled(out, keys):
        rows = np.concatenate([run_rows(b, ID_HASH) for b in part]) if part else hashes[:0]
        held = Counter(row.tobytes() for row in rows)
        assert all(every[h] == n for h, n in held.items())  # all of an ID's hashes, or none
        (counted,) = list(repeats_task(part))
        counts.append(counted["n"].to_pylist()[0])
    expected = sum(n - 1 for n in Counter(ids).values())
    assert sum(counts) == expected


def test_one_id_is_in_one_partition_only():
    keys = np.arange(4, dtype=np.int32)
    ids = [f"id{i % 50}" for i in range(1000)]
    out = list(id_runs_task([pa.record_batch({"id": ids})], keys))
    parts = _shuffled(out, keys)
    seen: dict[bytes, int] = {}
    for p, part in enumerate(parts):
        for batch in part:
            for row in run_rows(batch, ID_HASH):
                assert seen.setdefault(row.tobytes(), p) == p
    assert len(seen) == 50
    assert sum(next(repeats_task(part))["n"][0].as_py() for part in parts) == 950


def test_a_partition_without_runs_counts_no_repeat():
    assert next(repeats_task([]))["n"].to_pylist() == [0]
