"""Repeated IDs on Spark, counted from their hashes packed in runs.

A run reads every ID to know how many rows repeat an earlier row's ID. Spark's own grouping
of the ID strings (a hash aggregate, its shuffle and a second aggregate, per row) took 22 s of
a 10M-document run on ``local[2]``. Here each task hashes its IDs as the local reader's
:class:`~neardup.io.id_table.IdTable` does (two 64-bit words an ID), and the hashes cross one
shuffle packed in runs (:mod:`neardup.engines.spark.runs`), bound for the partition of their
hash; each reduce task counts its repeats with an ``IdTable``. Two IDs are one ID when both
words are equal, as in the local engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

import numpy as np
import pyarrow as pa

from neardup.engines.spark.partitions import SHUFFLE_PARTITIONS, partition_keys
from neardup.engines.spark.runs import RUNS_SCHEMA, mixed_place, packed_runs, run_rows
from neardup.engines.spark.session import DataFrame
from neardup.engines.spark.tasks import _binary_csr, record_batch
from neardup.io.id_table import IdTable, id_hashes

__all__ = ["ID_HASH", "id_runs_task", "repeat_counts", "repeats_task"]

ID_HASH = np.dtype([("h1", "<u8"), ("h2", "<u8")])
"""An ID's two hash words (:func:`~neardup.io.id_table.id_hashes`) as they cross the shuffle
packed in a run (16 bytes)."""


def id_runs_task(batches: Iterable[pa.RecordBatch], keys: np.ndarray) -> Iterator[pa.RecordBatch]:
    """Rows ``(id)`` (strings, not null) -> runs (:func:`~neardup.engines.spark.runs.packed_runs`)
    of their hashes (:data:`ID_HASH`), each bound for the partition of its hash over
    ``len(keys)``: the hashes of one ID meet in one partition. O(bytes of the IDs).

    Example:
        >>> batch = pa.record_batch({"id": ["a", "b", "a"]})
        >>> runs = list(id_runs_task([batch], np.array([0])))
        >>> hashes = run_rows(runs[0], ID_HASH)
        >>> hashes.shape[0], bool(hashes[0] == hashes[2]), bool(hashes[0] == hashes[1])
        (3, True, False)
    """
    for batch in batches:
        if batch.num_rows:
            offsets, data = _binary_csr(batch.column("id"), np.uint8)
            hashes = id_hashes(data, offsets).view(ID_HASH).reshape(-1)
            place = mixed_place(hashes["h1"], hashes["h2"], keys.shape[0])
            yield packed_runs(hashes, place, keys)


def repeats_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The runs of :func:`id_runs_task` holding every hash of their IDs -> one row ``n``: how
    many of them repeat an earlier one (the hashes less the distinct ones). O(hashes)
    expected, an :class:`~neardup.io.id_table.IdTable` of them in memory (32 to 64 bytes a
    distinct ID).

    Example:
        >>> runs = list(id_runs_task([pa.record_batch({"id": ["a", "b", "a", "a"]})], np.array([0])))
        >>> next(repeats_task(runs))["n"].to_pylist()
        [2]
    """
    parts = [batch for batch in batches if batch.num_rows]
    repeats = 0
    if parts:
        hashes = run_rows(pa.Table.from_batches(parts), ID_HASH)
        words = hashes.view(np.uint64).reshape(-1, 2)
        firsts = IdTable().check_hashes(words, np.zeros(hashes.shape[0], dtype=np.int64))
        repeats = int((firsts >= 0).sum())
    yield record_batch({"n": pa.array([repeats], pa.int64())})


def repeat_counts(rows: DataFrame) -> DataFrame:
    """Rows ``n`` (one a shuffle partition) whose sum is the number of ``rows`` (with a column
    ``id`` of strings, not null) that repeat an earlier row's ID. One shuffle of 16 bytes a row
    packed in runs, over the session's shuffle partitions; no job of its own.

    Example (needs a Spark session, so not run as a doctest)::

        repeated = repeat_counts(good).agg(F.sum("n")).first()[0]
    """
    partitions = int(rows.sparkSession.conf.get(SHUFFLE_PARTITIONS))
    keys = partition_keys(partitions)
    runs = rows.select("id").mapInArrow(partial(id_runs_task, keys=keys), RUNS_SCHEMA)
    return runs.repartition(partitions, "dest").mapInArrow(repeats_task, "n long")
