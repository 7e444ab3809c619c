"""Exact duplicates on Spark (stage 2): every document's representative, the earliest document
with its content, from the content keys packed in runs across one shuffle.

A Spark aggregation by content, then a skew-safe join of every document with its content's
earliest member, counted the hot contents first and shuffled the documents twice (at 10M
documents three jobs, 46 s on two cores). Here each map task packs its documents' content keys
(16 bytes, with the time and position) into runs bound for the partition of their content
(:func:`~neardup.engines.spark.runs.packed_runs`), and each reduce task names every
document's representative by the local engine's hash table of contents: a content held by
many documents costs its partition linear work, as an LSH bucket does, and needs no salting.
The same shuffle names the earliest row of any other key (:func:`earliest_by`): a SimHash
fingerprint's earliest representative, a component's earliest member.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

import numpy as np
import pyarrow as pa

from neardup.engines.spark.frames import Frames
from neardup.engines.spark.partitions import partition_keys
from neardup.engines.spark.runs import (
    RUNS_SCHEMA,
    mixed_place,
    packed_runs,
    run_rows,
    taken_rows,
)
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import _i64, record_batch
from neardup.exact_duplicates import content_representatives
from neardup.groups import document_order

__all__ = [
    "CONTENT_ROW",
    "content_reps_task",
    "content_runs_task",
    "earliest_by",
    "representatives",
]

CONTENT_ROW = np.dtype([("c0", "<i8"), ("c1", "<i8"), ("ts", "<i8"), ("pos", "<i8")])
"""One document's content key (two 64-bit halves), time and position (32 bytes)."""


def content_runs_task(
    batches: Iterable[pa.RecordBatch], keys: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Map side: rows ``(pos, ts, c0, c1)`` -> runs (:func:`packed_runs`) of
    :data:`CONTENT_ROW`, each bound for the partition of its content (:func:`mixed_place` of
    ``c0, c1`` over ``len(keys)`` partitions): a content's documents meet in one partition.
    O(rows).

    Example:
        >>> batch = pa.record_batch({"pos": [4, 9], "ts": [0, 0], "c0": [7, 7], "c1": [1, 1]})
        >>> runs = next(content_runs_task([batch], np.array([3, 5], np.int32)))
        >>> run_rows(runs, CONTENT_ROW)["pos"].tolist(), len(set(runs["dest"].to_pylist()))
        ([4, 9], 1)
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        rows = np.empty(batch.num_rows, dtype=CONTENT_ROW)
        for column in CONTENT_ROW.names:
            rows[column] = _i64(batch.column(column))
        yield packed_runs(rows, mixed_place(rows["c0"], rows["c1"], keys.shape[0]), keys)


def content_reps_task(
    batches: Iterable[pa.RecordBatch], keyed: bool = False
) -> Iterator[pa.RecordBatch]:
    """Reduce side: the runs of :func:`content_runs_task` of a partition holding every
    document of its contents -> ``(pos, ts, rep)`` of each document (and its key's first half
    ``c0`` when ``keyed``), ``rep`` the position of the earliest document with its content (by
    time, then position), named as the local engine names it:
    :func:`~neardup.exact_duplicates.content_representatives` (one pass over a hash table of
    the content keys) in the order of :func:`~neardup.groups.document_order` over the rows
    sorted by position. O(rows log rows) for that sort, O(rows) after it.

    Example:
        >>> rows = np.zeros(4, dtype=CONTENT_ROW)
        >>> rows["c0"], rows["ts"], rows["pos"] = [7, 2, 7, 7], [5, 0, 1, 1], [3, 8, 9, 6]
        >>> out = next(content_reps_task([packed_runs(rows, np.zeros(4, int), np.array([0]))]))
        >>> sorted(zip(out["pos"].to_pylist(), out["rep"].to_pylist()))
        [(3, 6), (6, 6), (8, 8), (9, 6)]
    """
    parts = [batch for batch in batches if batch.num_rows]
    if not parts:
        return
    rows = run_rows(pa.Table.from_batches(parts), CONTENT_ROW)
    # Ranked by (time, position): time ties go by position.
    rows = taken_rows(rows, np.argsort(rows["pos"]))
    content = np.stack([rows["c0"], rows["c1"]], axis=1).view(np.uint64)
    rep = rows["pos"][content_representatives(content, document_order(rows["ts"]))]
    out = {"pos": pa.array(rows["pos"]), "ts": pa.array(rows["ts"]), "rep": pa.array(rep)}
    if keyed:
        out["c0"] = pa.array(rows["c0"])
    yield record_batch(out)


def representatives(frames: Frames, sig: DataFrame, keyed: bool = False) -> DataFrame:
    """``pos, ts, rep`` (and ``c0`` when ``keyed``) of every document of ``sig`` (``pos, ts,
    c0, c1, …``): ``rep`` the position of the earliest document with its content (``c0,
    c1``), by time then position. Cost: one shuffle of 32-byte rows packed in runs, and a hash
    table inside the reduce tasks.

    Example (needs a Spark session, so not run as a doctest)::

        docrep = frames.keep(representatives(frames, sig))
    """
    keys = partition_keys(frames.P)
    runs = sig.select("pos", "ts", "c0", "c1").mapInArrow(
        partial(content_runs_task, keys=keys), RUNS_SCHEMA
    )
    return runs.repartition(frames.P, "dest").mapInArrow(
        partial(content_reps_task, keyed=keyed),
        "pos long, ts long, rep long" + (", c0 long" if keyed else ""),
    )


def earliest_by(frames: Frames, rows: DataFrame, key: str) -> DataFrame:
    """``pos, ts, rep, c0`` of every row of ``rows`` (``pos, ts`` and the long column
    ``key``): ``rep`` the position of the earliest row with its key (by time, then position),
    ``c0`` the key; found as :func:`representatives` names a content's earliest document, the
    key for the content. Cost: that of :func:`representatives`: one shuffle of 32-byte rows
    packed in runs, no aggregation nor join of Spark's, and a key held by many rows costs its
    task linear work.

    Example (needs a Spark session, so not run as a doctest)::

        nodes = earliest_by(frames, reps.select("pos", "ts", "sig"), "sig")
    """
    by_key = rows.select("pos", "ts", F.col(key).alias("c0"), F.lit(0).cast("long").alias("c1"))
    return representatives(frames, by_key, keyed=True)
