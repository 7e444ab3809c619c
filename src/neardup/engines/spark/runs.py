"""Rows crossing a Spark shuffle packed in runs: many rows of a structured numpy dtype in one
binary value, each run bound for one partition.

Spark's shuffle does per-row work (its rows built from Arrow, hashed, serialised, read back
and turned into Arrow again); for rows of a few integers that work is most of a shuffle's
cost. A task that packs its rows into runs, keyed so that Spark's hash partitioning sends
each run to the partition its rows belong to
(:func:`~neardup.engines.spark.partitions.partition_keys`), moves a few thousand values
instead; the receiving task unpacks them (:func:`run_rows`) and works on numpy arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
from numba import njit

from neardup.engines.spark.tasks import _binary_csr, _csr_binary, band_rows, record_batch
from neardup.settings import Settings

__all__ = [
    "RUNS_SCHEMA",
    "RUN_ROWS",
    "band_runs_task",
    "mixed_place",
    "packed_runs",
    "run_rows",
    "taken_rows",
]

RUN_ROWS = 4096
"""Rows a run holds at most (115 KB of band rows): Spark hands a reduce task's runs to Python
in Arrow batches of up to 10,000 values, whose binary column must stay under 2 GB."""

RUNS_SCHEMA = "dest int, rows binary"
"""The rows of a task that packs its output in runs (:func:`packed_runs`), as a Spark schema."""

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def mixed_place(
    first: np.ndarray, second: np.ndarray, partitions: int, unordered: bool = False
) -> np.ndarray:
    """A partition in ``0 … partitions - 1`` for each key ``(first, second)`` (integers), the
    same for equal keys in every task: the two (as unsigned 64-bit integers) mixed by odd
    multipliers, ``((first × m1 ⊕ second × m2) >> 17) mod partitions``. With ``unordered``,
    the key of a pair is ``(min, max)`` of its two ends: a pair and its reverse go to one
    partition. One compiled pass, no temporary array. O(len(first)).

    Example:
        >>> mixed_place(np.array([5, 5, 6]), np.array([1, 1, 1]), 4).tolist()
        [0, 0, 1]
        >>> mixed_place(np.array([1, 6]), np.array([6, 1]), 4, unordered=True).tolist()
        [3, 3]
    """
    first, second = np.asarray(first), np.asarray(second)
    if unordered:  # ends compared as the signed integers they are
        first, second = first.astype(np.int64, copy=False), second.astype(np.int64, copy=False)
    place = np.empty(first.shape[0], dtype=np.int64)
    _mixed_place(first, second, np.uint64(partitions), unordered, place)
    return place


@njit(cache=True, nogil=True)
def _mixed_place(first, second, partitions, unordered, place):
    shift = np.uint64(17)
    for i in range(place.shape[0]):
        if unordered:
            low, high = min(first[i], second[i]), max(first[i], second[i])
            mixed = np.uint64(low) * _MIX[0] ^ np.uint64(high) * _MIX[1]
        else:
            mixed = np.uint64(first[i]) * _MIX[0] ^ np.uint64(second[i]) * _MIX[1]
        place[i] = np.int64((mixed >> shift) % partitions)


def packed_runs(rows: np.ndarray, place: np.ndarray, keys: np.ndarray) -> pa.RecordBatch:
    """Rows of :data:`RUNS_SCHEMA`: the structured ``rows`` packed into runs of at most
    :data:`RUN_ROWS`, each run's rows all bound for one partition ``place`` (an index into
    ``keys``), ``dest`` that partition's key from
    :func:`~neardup.engines.spark.partitions.partition_keys`. Repartitioned by ``dest``, a
    shuffle then moves a few thousand values instead of a row each: Spark's work per row (its
    rows built from Arrow, hashed, serialised, read back) is spent per run. O(rows).

    Example:
        >>> rows = np.zeros(3, dtype=[("pos", "<i8")])
        >>> rows["pos"] = [4, 9, 7]
        >>> runs = packed_runs(rows, np.array([1, 0, 1]), np.array([12, 6], np.int32))
        >>> runs["dest"].to_pylist(), run_rows(runs, rows.dtype)["pos"].tolist()
        ([12, 6], [9, 4, 7])
    """
    # A stable sort of small integers is numpy's radix sort.
    small = np.uint16 if keys.shape[0] <= 1 << 16 else np.int64
    order = np.argsort(place.astype(small), kind="stable")
    rows, place = taken_rows(rows, order), place[order]
    bounds = np.searchsorted(place, np.arange(keys.shape[0] + 1))
    cuts = np.unique(np.concatenate([bounds, np.arange(0, rows.shape[0], RUN_ROWS)]))
    return record_batch(
        {"dest": pa.array(keys[place[cuts[:-1]]].astype(np.int32)), "rows": _csr_binary(cuts, rows)}
    )


def taken_rows(rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``rows[order]`` for a contiguous structured array, each row copied whole: numpy's
    ``take`` of the rows seen as opaque items of their size, where its fancy indexing copies
    field by field (17 ns a 20-byte band row against 2 ns). O(len(order)).

    Example:
        >>> rows = np.array([(1, 10), (2, 20)], dtype=[("a", "<i4"), ("b", "<i8")])
        >>> taken_rows(rows, np.array([1, 0, 1]))["b"].tolist()
        [20, 10, 20]
    """
    opaque = np.dtype((np.void, rows.dtype.itemsize))
    return np.take(np.ascontiguousarray(rows).view(opaque), order).view(rows.dtype)


def run_rows(runs: pa.RecordBatch | pa.Table, dtype: np.dtype) -> np.ndarray:
    """The rows (structured ``dtype``) of the runs of :func:`packed_runs`, in order. O(rows).

    Example:
        >>> rows = np.array([4, 9], dtype=[("pos", "<i8")])
        >>> run_rows(packed_runs(rows, np.zeros(2, int), np.array([0])), rows.dtype)["pos"].tolist()
        [4, 9]
    """
    return _binary_csr(runs.column("rows"), dtype)[1]


def band_runs_task(
    batches: Iterable[pa.RecordBatch], settings: Settings, keys: np.ndarray, timed: bool = True
) -> Iterator[pa.RecordBatch]:
    """Map side of the band stage: rows ``(pos, ts, sig)`` -> runs (:func:`packed_runs`) of
    the LSH band rows (:func:`~neardup.engines.spark.tasks.band_rows`, without their times
    when the documents' times are all equal: not ``timed``) of every MinHash signature, each
    bound for the partition of its bucket (:func:`mixed_place` of band and band hash, over
    ``len(keys)`` partitions): the rows of a bucket meet in one partition. O(rows ×
    num_perm) for the hashes, O(rows) for the runs.

    Example:
        >>> settings = Settings(method="minhash", num_perm=4, bands=2, rows=2, verify=None)
        >>> sig = pa.array([np.arange(4, dtype=np.uint32).tobytes()], pa.binary())
        >>> batch = pa.record_batch({"pos": [0], "ts": [0], "sig": sig})
        >>> from neardup.engines.spark.tasks import BAND_ROW
        >>> out = run_rows(next(band_runs_task([batch], settings, np.array([12, 6]))), BAND_ROW)
        >>> sorted(out["band"].tolist()), out["pos"].tolist()
        ([0, 1], [0, 0])
    """
    for batch in batches:
        if batch.num_rows:
            rows = band_rows(batch, settings, timed)
            place = mixed_place(rows["band"], rows["h"], keys.shape[0])
            yield packed_runs(rows, place, keys)
