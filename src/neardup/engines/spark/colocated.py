"""Verification where the pairs and their documents meet: every pair, and the data of both its
ends (units or shingle sets, signatures), go to one task, which relates them with the local
engine's kernels (:class:`neardup.pipeline.Relation`).

A pair goes to a partition chosen from both its ends (:func:`~neardup.engines.spark.runs.mixed_place`),
so the pairs of a document linked to thousands spread over every partition. The positions
each partition needs are brought to the driver and broadcast (two a pair at most, the run's
bound :data:`~neardup.engines.spark.frames.BROADCAST_POSITIONS`); each document's data is then
copied where it is stored, once to every partition that needs it, and meets its pairs there
in one shuffle (a cogroup by partition). The two joins this replaces moved the data twice and
carried one end's data with every pair through the second: at 1M documents the
verification's shuffle was 0.8 times the input. When the documents' texts can be read back
from their files, the data copied is their places (24 bytes a document), and the task makes
the units of its ends itself: at 1M documents that shuffle fell from 0.5 GB to 5 MB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial

import numpy as np
import pyarrow as pa

from neardup.candidates.radix import sorted_distinct
from neardup.engines.spark.frames import Frames
from neardup.engines.spark.partitions import partition_keys
from neardup.engines.spark.runs import mixed_place
from neardup.engines.spark.session import DataFrame
from neardup.engines.spark.tasks import (
    _batch_signatures,
    _binary_csr,
    _i64,
    _local_signatures,
    record_batch,
    refetched_sets_task,
)
from neardup.pipeline import Relation
from neardup.settings import Settings

__all__ = [
    "REFETCH_ROWS",
    "colocated_relate_task",
    "copies_task",
    "pair_places_task",
    "placed_pairs_task",
    "relate_colocated",
    "wanted_by_place",
]


REFETCH_ROWS = 4_096
"""Documents whose texts a task reads back and shingles at once: a few MB of texts, whatever
the partition holds."""

_SETS_SCHEMA = pa.schema([("pos", pa.int64()), ("sset", pa.binary())])


def _found_in(known: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each value, its index in the sorted array ``known`` (any index when absent) and
    whether it is there. O(values × log(known))."""
    if known.shape[0] == 0:
        return np.zeros(values.shape[0], dtype=np.int64), np.zeros(values.shape[0], dtype=bool)
    at = np.minimum(np.searchsorted(known, values), known.shape[0] - 1)
    return at, known[at] == values


def pair_places_task(
    batches: Iterable[pa.RecordBatch], partitions: int
) -> Iterator[pa.RecordBatch]:
    """Rows ``(a, b, …)`` -> ``(pos, place)``: both ends of every pair with the partition the
    pair goes to (:func:`~neardup.engines.spark.runs.mixed_place` of its ends), distinct within
    the batch. O(pairs log pairs).

    Example:
        >>> pairs = pa.record_batch({"a": [1, 1], "b": [5, 5]})
        >>> next(pair_places_task([pairs], 1)).to_pydict()
        {'pos': [1, 5], 'place': [0, 0]}
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        a, b = _i64(batch.column("a")), _i64(batch.column("b"))
        place = mixed_place(a, b, partitions)
        wanted = sorted_distinct(
            np.concatenate([a, b]) * partitions + np.concatenate([place, place]),
            in_place=True,
            scratch=True,
        )
        yield record_batch(
            {
                "pos": pa.array(wanted // partitions),
                "place": pa.array((wanted % partitions).astype(np.int32)),
            }
        )


def wanted_by_place(places: pa.Table, partitions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of :func:`pair_places_task` as a directory: ``(positions, offsets, places)``,
    the distinct positions in order and, for ``positions[i]``, the partitions
    ``places[offsets[i]:offsets[i + 1]]`` that need its data. O(rows log rows).

    Example:
        >>> table = pa.table({"pos": [5, 1, 5, 5], "place": [1, 0, 0, 1]})
        >>> [x.tolist() for x in wanted_by_place(table, 2)]
        [[1, 5], [0, 1, 3], [0, 0, 1]]
    """
    key = sorted_distinct(
        _i64(places.column("pos")) * partitions + _i64(places.column("place")),
        in_place=True,
        scratch=True,
    )
    pos = key // partitions
    heads = np.flatnonzero(np.diff(pos, prepend=-1) != 0)
    offsets = np.append(heads, key.shape[0])
    return pos[heads], offsets, (key % partitions).astype(np.int32)


def copies_task(
    batches: Iterable[pa.RecordBatch], wanted, keys: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Rows of a document's data ``(pos, …)`` -> ``(dest, pos, …)``: each document the
    broadcast directory ``wanted`` (of :func:`wanted_by_place`) names, once for every
    partition that needs it, ``dest`` that partition's key (``keys``, of
    :func:`~neardup.engines.spark.partitions.partition_keys`). O(rows + copies).

    Example:
        >>> from types import SimpleNamespace
        >>> wanted = SimpleNamespace(value=wanted_by_place(pa.table({"pos": [7, 7], "place": [0, 1]}), 2))
        >>> rows = pa.record_batch({"pos": [3, 7], "sset": [b"x", b"y"]})
        >>> next(copies_task([rows], wanted, np.array([10, 20]))).to_pydict()
        {'dest': [10, 20], 'pos': [7, 7], 'sset': [b'y', b'y']}
    """
    positions, offsets, places = wanted.value
    if positions.shape[0] == 0:  # no pairs: no document is wanted
        return
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pos = _i64(batch.column("pos"))
        at, found = _found_in(positions, pos)
        counts = np.where(found, offsets[at + 1] - offsets[at], 0)
        rows = np.repeat(np.arange(pos.shape[0]), counts)
        if rows.shape[0] == 0:
            continue
        # The k-th copy of a row goes to the k-th partition listed for its position.
        first = np.repeat(offsets[at] - (np.cumsum(counts) - counts), counts)
        place = places[first + np.arange(rows.shape[0])]
        copies = batch.take(pa.array(rows))
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys[place].astype(np.int32)), *copies.columns],
            names=["dest", *copies.schema.names],
        )


def placed_pairs_task(
    batches: Iterable[pa.RecordBatch], keys: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Rows ``(a, b, …)`` -> ``(dest, a, b, …)``: each pair with the key of its partition, as
    :func:`pair_places_task` places it. O(pairs).

    Example:
        >>> pairs = pa.record_batch({"a": [1], "b": [5]})
        >>> next(placed_pairs_task([pairs], np.array([10]))).to_pydict()
        {'dest': [10], 'a': [1], 'b': [5]}
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        place = mixed_place(_i64(batch.column("a")), _i64(batch.column("b")), keys.shape[0])
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys[place].astype(np.int32)), *batch.columns],
            names=["dest", *batch.schema.names],
        )


def colocated_relate_task(
    pairs: pa.Table,
    data: pa.Table,
    settings: Settings,
    keep: Sequence[str],
    refetch: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None,
    exact: bool = True,
) -> pa.Table:
    """One partition's pairs ``(dest, a, b, …)`` and the data of their ends ``(dest, pos, …)``
    -> ``(keep…, ok, value)``, as :func:`~neardup.engines.spark.tasks.relate_task` decides
    and values pairs (with its ``exact``; the local engine's
    :class:`~neardup.pipeline.Relation`); a pair with an end without data is dropped, as a
    join would. With ``refetch``, the data are the ends' places (``dest, pos, loc, span``):
    their texts are read back and made sets here
    (:func:`~neardup.engines.spark.tasks.refetched_sets_task`), :data:`REFETCH_ROWS` at a
    time. Cost: the relation of the pairs, O(rows log rows) to find each end's data, and
    with ``refetch`` reading and shingling the ends' texts.

    Example:
        >>> pairs = pa.table({"dest": [0, 0], "a": [4, 4], "b": [9, 2]})
        >>> data = pa.table({"dest": [0, 0], "pos": [9, 4], "sig": [0b0111, 0b1111]})
        >>> out = colocated_relate_task(pairs, data, Settings(method="simhash", hamming_k=3), ["a", "b"])
        >>> out.to_pydict()
        {'a': [4], 'b': [9], 'ok': [True], 'value': [1]}
    """
    value_type = pa.int32() if settings.method == "simhash" else pa.float64()
    if refetch is not None:
        places = data.select(["pos", "loc", "span"]).to_batches(max_chunksize=REFETCH_ROWS)
        made = refetched_sets_task(places, settings, refetch)
        data = pa.Table.from_batches(list(made), schema=_SETS_SCHEMA)
    a, b = _i64(pairs.column("a")), _i64(pairs.column("b"))
    positions = _i64(data.column("pos"))
    order = np.argsort(positions, kind="stable")
    (at_a, found_a), (at_b, found_b) = (_found_in(positions[order], end) for end in (a, b))
    found = found_a & found_b
    ends = [order[at_a], order[at_b]] if order.shape[0] else [at_a, at_b]
    if not found.all():
        pairs = pairs.filter(pa.array(found))
        ends = [end[found] for end in ends]
    ok = np.zeros(0, dtype=bool)
    value = np.zeros(0)
    if pairs.num_rows:
        signature = _batch_signatures(data, "sig", settings)
        sets = _binary_csr(data.column("sset"), np.uint64) if settings.needs_sets else None
        relation = Relation(_local_signatures(signature, sets), settings)
        value = relation.similarity(ends[0], ends[1], exact)
        ok = np.asarray(relation.passes(ends[0], ends[1], value), dtype=bool)
    columns = {name: pairs.column(name) for name in keep}
    columns["ok"] = pa.array(ok, type=pa.bool_())
    columns["value"] = pa.array(np.asarray(value), type=value_type)
    return pa.table(columns)


def relate_colocated(
    frames: Frames,
    data: DataFrame,
    pairs: DataFrame,
    keep: list[str],
    settings: Settings,
    refetch: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None,
    exact: bool = True,
) -> DataFrame | None:
    """Pairs ``(a, b, …)`` with ``ok`` and ``value`` added, ``keep`` naming the columns of
    ``pairs`` kept: what :func:`~neardup.engines.spark.verify.relate` gives (with its
    ``exact``), each pair related where it meets the data of its ends (``data``: ``pos`` and
    the columns the relation reads, or with ``refetch`` the places ``pos, loc, span`` of the
    texts the task reads back and shingles: see :func:`colocated_relate_task`), as the module
    docstring says. For pairs whose ends' places fit a broadcast (two a pair). Cost: one Spark
    job collecting the places, a copy of each document's data per partition needing it, one
    shuffle of the pairs and copies, the relation of the pairs. None when the places'
    directory cannot be sent to the tasks (:meth:`~neardup.engines.spark.frames.Storage.share`
    through Spark Connect): the caller joins instead.

    Example (needs a Spark session, so not run as a doctest)::

        checked = relate_colocated(frames, data, cand, ["a", "b"], settings)
    """
    partitions = frames.P
    keys = partition_keys(partitions)
    places = pairs.select("a", "b").mapInArrow(
        partial(pair_places_task, partitions=partitions), "pos long, place int"
    )
    wanted = frames.share(wanted_by_place(places.toArrow(), partitions))
    if wanted is None:
        return None  # too large to send without a broadcast (Spark Connect)
    kinds = dict(data.dtypes) | dict(pairs.dtypes)
    copies = data.mapInArrow(
        partial(copies_task, wanted=wanted, keys=keys),
        ", ".join(["dest int"] + [f"{c} {kinds[c]}" for c in data.columns]),
    )
    placed = pairs.mapInArrow(
        partial(placed_pairs_task, keys=keys),
        ", ".join(["dest int"] + [f"{c} {kinds[c]}" for c in pairs.columns]),
    )
    value_type = "int" if settings.method == "simhash" else "double"
    schema = ", ".join([f"{c} {kinds[c]}" for c in keep] + ["ok boolean", f"value {value_type}"])
    return (
        placed.groupBy("dest")
        .cogroup(copies.groupBy("dest"))
        .applyInArrow(
            partial(
                colocated_relate_task, settings=settings, keep=keep, refetch=refetch, exact=exact
            ),
            schema,
        )
    )
