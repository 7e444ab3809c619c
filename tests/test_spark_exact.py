"""Exact duplicates on Spark (``neardup.engines.spark.exact``): the tasks composed as Spark runs
them (map tasks packing content keys into runs, one reduce task a partition), against every
document's earliest copy found by brute force."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from neardup.engines.spark.exact import content_reps_task, content_runs_task  # noqa: E402


def _representatives(c0, c1, ts, pos, partitions, batch_rows):
    """``{pos: rep}`` from the tasks: the rows cut into map batches, the runs routed by their
    partition key to one reduce task each."""
    keys = np.arange(100, 100 + partitions, dtype=np.int32)
    batches = [
        pa.record_batch(
            {
                "pos": pos[s : s + batch_rows],
                "ts": ts[s : s + batch_rows],
                "c0": c0[s : s + batch_rows],
                "c1": c1[s : s + batch_rows],
            }
        )
        for s in range(0, pos.shape[0], batch_rows)
    ]
    runs = pa.Table.from_batches([r for b in batches for r in content_runs_task([b], keys)])
    dest = runs.column("dest").to_numpy() if runs.num_rows else np.array([], np.int32)
    out = {}
    for key in keys:
        part = runs.filter(pa.array(dest == key)).to_batches()
        for batch in content_reps_task(part, keyed=True):
            at = [np.flatnonzero(pos == p)[0] for p in batch.column("pos").to_pylist()]
            assert batch.column("ts").to_pylist() == ts[at].tolist()
            assert batch.column("c0").to_pylist() == c0[at].tolist()  # the key, when asked
            out.update(zip(batch.column("pos").to_pylist(), batch.column("rep").to_pylist()))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(-2, 2)),
        min_size=1,
        max_size=80,
    ),
    st.integers(1, 5),
    st.integers(1, 30),
)
def test_every_document_points_to_its_contents_earliest_copy(rows, partitions, batch_rows):
    # Few contents (pairs of them share their first half), negative and repeated times, scattered
    # positions: the earliest copy is the smallest (time, position) of the content.
    n = len(rows)
    content = np.array([r[0] for r in rows], np.int64)
    with np.errstate(over="ignore"):  # contents spread over both signs of the first half
        c0 = ((content // 2).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)
    c1 = content % 2
    ts = np.array([r[1] for r in rows], np.int64)
    pos = np.random.default_rng(n).permutation(n * 3)[:n].astype(np.int64) << 20
    got = _representatives(c0, c1, ts, pos, partitions, batch_rows)
    expected = {}
    for i in range(n):
        same = [j for j in range(n) if c0[j] == c0[i] and c1[j] == c1[i]]
        expected[int(pos[i])] = int(pos[min(same, key=lambda j: (ts[j], pos[j]))])
    assert got == expected


def test_a_content_held_by_most_documents_meets_in_one_task():
    # 5,000 copies of one content among 6,000 documents: one partition holds them all, and
    # the others' contents spread over the rest.
    rng = np.random.default_rng(2)
    n = 6000
    c0 = np.where(np.arange(n) < 5000, 7, rng.integers(8, 1 << 40, n))
    order = rng.permutation(n)
    c0, c1 = c0[order].astype(np.int64), np.zeros(n, np.int64)
    ts, pos = np.zeros(n, np.int64), np.arange(n, dtype=np.int64)
    got = _representatives(c0, c1, ts, pos, 4, 700)
    hot = pos[c0 == 7]
    assert {got[int(p)] for p in hot} == {int(hot.min())}
    assert all(got[int(p)] == p for p in pos[c0 != 7])
