"""SimHash candidates on Spark: the permutation tables' rows, packed in runs.

The tables are taken in their groups by first block, as the local engine's search in parts
takes them (:mod:`neardup.engines.pairs_search`): each distinct fingerprint crosses the
shuffle once per group (not once per table), as a 20-byte row (group, fingerprint, node) in a
run bound for the partition of the value of the group's first block
(:mod:`neardup.engines.spark.runs`): Spark moves a few thousand binary values instead of a row
each, and sorts nothing. Two fingerprints that a table of the group pairs agree on its whole
prefix, so on that block: they meet in one reduce task, which searches its rows of the group
with the local engine's kernel and the run's plan
(:func:`~neardup.candidates.tables.distinct_hamming_pairs` with ``first_block``): the group's
tables only, each pair kept by the first table whose prefix it shares, so every pair within
``hamming_k`` bits is reported once over all groups. A block value held by many fingerprints
costs its task the kernel's time on them (it recurses over the bits they do not share), not
quadratic work, so no key is split.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from neardup.candidates.plan import TablePlan
from neardup.candidates.tables import distinct_hamming_pairs
from neardup.engines.spark.runs import mixed_place, packed_runs, run_rows
from neardup.engines.spark.tasks import _i64, _u64, record_batch

__all__ = [
    "TABLE_PAIRS_SCHEMA",
    "TABLE_ROW",
    "first_blocks",
    "table_pairs_task",
    "table_runs_task",
]

TABLE_ROW = np.dtype([("t", "<i4"), ("fp", "<u8"), ("node", "<i8")])
"""One row of a group of permutation tables (20 bytes): the group (its first block), the
fingerprint, its node (the earliest representative holding it)."""

TABLE_PAIRS_SCHEMA = "a long, b long, dist int"
"""What :func:`table_pairs_task` yields, as a Spark schema: two nodes and their distance."""


def first_blocks(plan: TablePlan) -> np.ndarray:
    """The first blocks of the tables of ``plan``, ascending (int32): one group of tables
    each. O(tables).

    Example:
        >>> from neardup.candidates.plan import plan_tables
        >>> first_blocks(plan_tables(1_000_000, 3, prefix_blocks=2)).tolist()
        [0, 1, 2, 3]
    """
    return np.array(sorted({table[0] for table in plan.tables}), dtype=np.int32)


def table_runs_task(
    batches: Iterable[pa.RecordBatch], plan: TablePlan, keys: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Map side of the table stage: rows ``(fp, node)`` of distinct fingerprints -> runs
    (:func:`~neardup.engines.spark.runs.packed_runs`) of :data:`TABLE_ROW`, each fingerprint
    once per group of tables ``t`` (:func:`first_blocks`), bound for the partition of the
    value of block ``t`` (:func:`~neardup.engines.spark.runs.mixed_place` of group and block
    value over ``len(keys)`` partitions). O(rows × groups).

    Example:
        >>> from neardup.candidates.plan import plan_tables
        >>> rows = pa.record_batch({"fp": [0x1234], "node": [5]})
        >>> plan = plan_tables(1_000_000, 3, prefix_blocks=2)
        >>> out = run_rows(next(table_runs_task([rows], plan, np.array([12, 6]))), TABLE_ROW)
        >>> sorted(out["t"].tolist()), out["node"].tolist()
        ([0, 1, 2, 3], [5, 5, 5, 5])
    """
    groups = first_blocks(plan)
    shifts = np.array([plan.blocks[b][0] for b in groups], dtype=np.uint64)
    widths = np.array([(1 << plan.blocks[b][1]) - 1 for b in groups], dtype=np.uint64)
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        rows = np.empty(n * groups.shape[0], dtype=TABLE_ROW)
        rows["t"] = np.repeat(groups, n)
        rows["fp"] = np.tile(_u64(batch.column("fp")), groups.shape[0])
        rows["node"] = np.tile(_i64(batch.column("node")), groups.shape[0])
        block = (rows["fp"] >> np.repeat(shifts, n)) & np.repeat(widths, n)
        yield packed_runs(rows, mixed_place(rows["t"], block, keys.shape[0]), keys)


def table_pairs_task(
    batches: Iterable[pa.RecordBatch], plan: TablePlan, hamming_k: int
) -> Iterator[pa.RecordBatch]:
    """Reduce side of the table stage: the runs of :func:`table_runs_task` of one partition,
    which holds every row of its block values, in any order -> rows of
    :data:`TABLE_PAIRS_SCHEMA`, the pairs of nodes whose fingerprints are within
    ``hamming_k`` bits and whose first shared table (of ``plan``) is one of group ``t``. The
    rows of each group are searched at once by
    :func:`~neardup.candidates.tables.distinct_hamming_pairs` with ``first_block=t``, as the
    local engine searches a part. Memory: the partition's rows (20 bytes each) and one group's
    search. Cost: the kernel's on each group's rows, over that group's tables.

    Example:
        >>> from neardup.candidates.plan import plan_tables
        >>> plan = plan_tables(3, 1)
        >>> rows = pa.record_batch({"fp": [0x1234, 0x1235, 0x9935], "node": [3, 9, 4]})
        >>> runs = list(table_runs_task([rows], plan, np.array([0])))
        >>> [r for b in table_pairs_task(runs, plan, 1) for r in b.to_pylist()]
        [{'a': 3, 'b': 9, 'dist': 1}]
    """
    parts = [batch for batch in batches if batch.num_rows]
    if not parts:
        return
    rows = run_rows(pa.Table.from_batches(parts), TABLE_ROW)
    groups = first_blocks(plan)
    # A stable sort of small integers is numpy's radix sort.
    order = np.argsort(rows["t"].astype(np.uint16), kind="stable")
    bounds = np.searchsorted(rows["t"][order], np.append(groups, groups[-1] + 1))
    for g, first in enumerate(groups.tolist()):
        members = order[bounds[g] : bounds[g + 1]]
        if members.shape[0] < 2:
            continue
        ia, ib, dist = distinct_hamming_pairs(
            rows["fp"][members], hamming_k, plan, first_block=first, ordered=False
        )
        if ia.shape[0]:
            node = rows["node"][members]
            yield record_batch(
                {
                    "a": pa.array(node[ia]),
                    "b": pa.array(node[ib]),
                    "dist": pa.array(dist.astype(np.int32)),
                }
            )
