"""SimHash candidates on Spark: the permutation tables' rows, packed in runs.

Each distinct fingerprint crosses the shuffle once per permutation table, as a 20-byte row
(table, fingerprint, node) in a run bound for the partition of its prefix key in that table
(:mod:`neardup.engines.spark.runs`): Spark moves a few thousand binary values instead of a
row each, and sorts nothing. Every fingerprint sharing a table's prefix meets in one reduce
task, which searches its rows of that table with the local engine's kernel
(:func:`~neardup.candidates.tables.distinct_hamming_pairs`) and keeps a pair only in the first
table whose prefix it shares (:func:`~neardup.candidates.plan.first_shared_table`): every pair
within ``hamming_k`` bits is reported once. A prefix held by many fingerprints costs its task
the kernel's time on them (it recurses over the bits they do not share), not quadratic work,
so no key is split.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from neardup.candidates.plan import first_shared_table
from neardup.candidates.tables import distinct_hamming_pairs
from neardup.engines.spark.runs import mixed_place, packed_runs, run_rows
from neardup.engines.spark.tasks import _i64, _u64, record_batch

__all__ = ["TABLE_PAIRS_SCHEMA", "TABLE_ROW", "table_pairs_task", "table_runs_task"]

TABLE_ROW = np.dtype([("t", "<i4"), ("fp", "<u8"), ("node", "<i8")])
"""One permutation table row (20 bytes): the table, the fingerprint, its node (the earliest
representative holding it)."""

TABLE_PAIRS_SCHEMA = "a long, b long, dist int"
"""What :func:`table_pairs_task` yields, as a Spark schema: two nodes and their distance."""


def table_runs_task(
    batches: Iterable[pa.RecordBatch], masks: np.ndarray, keys: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Map side of the table stage: rows ``(fp, node)`` of distinct fingerprints -> runs
    (:func:`~neardup.engines.spark.runs.packed_runs`) of :data:`TABLE_ROW`, each fingerprint
    once per table ``t``, bound for the partition of its prefix ``fp & masks[t]``
    (:func:`~neardup.engines.spark.runs.mixed_place` of table and prefix over ``len(keys)``
    partitions; ``masks`` from :attr:`neardup.candidates.plan.TablePlan.masks`). O(rows ×
    tables).

    Example:
        >>> rows = pa.record_batch({"fp": [0x1234], "node": [5]})
        >>> masks = np.array([0xFF00, 0x00FF], dtype=np.uint64)
        >>> out = run_rows(next(table_runs_task([rows], masks, np.array([12, 6]))), TABLE_ROW)
        >>> sorted(out["t"].tolist()), out["node"].tolist()
        ([0, 1], [5, 5])
    """
    tables = masks.shape[0]
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        rows = np.empty(n * tables, dtype=TABLE_ROW)
        rows["t"] = np.repeat(np.arange(tables, dtype=np.int32), n)
        rows["fp"] = np.tile(_u64(batch.column("fp")), tables)
        rows["node"] = np.tile(_i64(batch.column("node")), tables)
        prefix = rows["fp"] & np.repeat(masks.astype(np.uint64), n)
        yield packed_runs(rows, mixed_place(rows["t"], prefix, keys.shape[0]), keys)


def table_pairs_task(
    batches: Iterable[pa.RecordBatch], masks: np.ndarray, hamming_k: int
) -> Iterator[pa.RecordBatch]:
    """Reduce side of the table stage: the runs of :func:`table_runs_task` of one partition,
    which holds every row of its prefix keys, in any order -> rows of
    :data:`TABLE_PAIRS_SCHEMA`, the pairs of nodes whose fingerprints are within
    ``hamming_k`` bits and share table ``t``'s prefix, ``t`` being the first table they
    share. The rows of each table are searched at once by
    :func:`~neardup.candidates.tables.distinct_hamming_pairs` (a pair of two prefixes never
    shares that table's). Memory: the partition's rows (20 bytes each) and one table's search.
    Cost: the kernel's on each table's rows.

    Example:
        >>> masks = np.array([0xFF00, 0x00FF], dtype=np.uint64)
        >>> rows = pa.record_batch({"fp": [0x1234, 0x1235, 0x9935], "node": [3, 9, 4]})
        >>> runs = list(table_runs_task([rows], masks, np.array([0])))
        >>> [r for b in table_pairs_task(runs, masks, 1) for r in b.to_pylist()]
        [{'a': 3, 'b': 9, 'dist': 1}]
    """
    parts = [batch for batch in batches if batch.num_rows]
    if not parts:
        return
    rows = run_rows(pa.Table.from_batches(parts), TABLE_ROW)
    tables = masks.shape[0]
    # A stable sort of small integers is numpy's radix sort.
    small = np.uint16 if tables <= 1 << 16 else np.int64
    order = np.argsort(rows["t"].astype(small), kind="stable")
    bounds = np.searchsorted(rows["t"][order], np.arange(tables + 1))
    for table in range(tables):
        members = order[bounds[table] : bounds[table + 1]]
        if members.shape[0] < 2:
            continue
        values = rows["fp"][members]
        ia, ib, dist = distinct_hamming_pairs(values, hamming_k, ordered=False)
        keep = first_shared_table(values[ia], values[ib], masks) == table
        if keep.any():
            node = rows["node"][members]
            yield record_batch(
                {
                    "a": pa.array(node[ia[keep]]),
                    "b": pa.array(node[ib[keep]]),
                    "dist": pa.array(dist[keep].astype(np.int32)),
                }
            )
