"""Groups and PAIRS made on the driver (stages 5 and 6 of a run of at most
``groups_local_max`` documents): the run's per-document columns collected once as Arrow, and
the local engine's grouping kernels (:mod:`neardup.groups`, :mod:`neardup.group_labels`) on
them, so its outputs are written by the local writers from a
:class:`~neardup.pipeline.Groups`.

Over DataFrames the two stages and the writing are a dozen small Spark jobs (joins and
aggregations of tables of a row a document, each job a fraction of a second of scheduling and
the JVM's work on every row): 7.4 to 8.4 s of a 44 to 45 s million-document run on
``local[2]``, where the local engine groups and pairs the same documents in a tenth of a
second. What they need is small: a document's position, time and representative (24 bytes),
its ID, the pairs the verification accepted and their values. The components, and MinHash's
repair round over them, are found here too. Only the pairs that need the documents' data go
back to Spark, to be related where the data are (:func:`~neardup.engines.spark.verify.relate`):
the repair round's pairs across components, and the pairs of an original and a member (other
than a copy of the original) whose value was not measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from neardup.candidates.radix import argsort64, sorted_distinct
from neardup.candidates.repair import repair_links_decided
from neardup.engines.spark.frames import Frames
from neardup.engines.spark.session import DataFrame
from neardup.engines.spark.verify import relate
from neardup.group_labels import group_sizes, not_own_labels, own_labels
from neardup.groups import LINK_ROUNDS, connected_components, document_order, originals_of
from neardup.memory import index_dtype
from neardup.pipeline import VERIFY_SLICE, Groups
from neardup.settings import Settings

__all__ = ["DEFAULT_GROUPS_LOCAL_MAX", "Grouping", "Positions", "driver_groups", "pair_lookup"]

DEFAULT_GROUPS_LOCAL_MAX = 5_000_000
"""Most documents whose groups and PAIRS the driver makes itself (its columns are about 100
bytes a document: 0.5 GB at this many; at 1M the driver's peak stayed that of its start, 0.60
GB); a larger run makes them in Spark."""


@dataclass(frozen=True)
class Grouping:
    """What makes each representative's original on the driver.

    Attributes:
        kind: ``"edges"``: ``table`` holds the accepted pairs ``a, b`` of representatives, whose
            components are found on the driver; ``"originals"``: the representatives' ``pos,
            orig`` (the ``center`` rule's, made in Spark).
        table: that table.
        repair: with ``"edges"``, the bucket pairs ``a, b`` of MinHash's repair round (not
            star candidates, bounded), or None: the pairs across the edges' components are
            related in Spark and the local engine's choice replayed over them
            (:func:`~neardup.candidates.repair.repair_links_decided`).
    """

    kind: str
    table: DataFrame
    repair: DataFrame | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("edges", "originals"):
            raise ValueError(f"kind must be 'edges' or 'originals', got {self.kind!r}")
        if self.repair is not None and self.kind != "edges":
            raise ValueError("a repair round needs the edges, not the originals")


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


class Positions:
    """The documents' positions in input order: document ``i`` of the outputs is the one of the
    ``i``-th smallest position (positions need not be ``0..n-1``: a file's index is in their
    high bits, a skipped row leaves a gap).

    Args:
        pos: every document's position (distinct, non-negative int64), in any order.

    Example:
        >>> p = Positions(np.array([7, 3, 1 << 40]))
        >>> p.index(np.array([1 << 40, 3])).tolist(), p.order.tolist()
        ([2, 0], [1, 0, 2])
    """

    def __init__(self, pos: np.ndarray):
        pos = np.ascontiguousarray(pos, dtype=np.int64)
        if pos.size < 2 or bool(np.all(pos[1:] > pos[:-1])):
            self.sorted, self.order = pos, None
        else:
            keys, order = argsort64(pos.view(np.uint64))
            self.sorted, self.order = keys.view(np.int64), order
        if self.order is not None and self.order.size:
            self.order = self.order.astype(np.int64, copy=False)

    def __len__(self) -> int:
        return int(self.sorted.shape[0])

    def in_order(self, values: np.ndarray | pa.ChunkedArray) -> np.ndarray | pa.ChunkedArray:
        """``values`` given in the order of the positions passed in, now in input order. O(n)."""
        if self.order is None:
            return values
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            return values.take(pa.array(self.order))
        return values[self.order]

    def index(self, pos: np.ndarray) -> np.ndarray:
        """The document index of each position of ``pos`` (each one of the documents'), of
        :func:`~neardup.memory.index_dtype`. O(len(pos) log n); ValueError for a position that
        is no document's."""
        n = len(self)
        found = np.searchsorted(self.sorted, pos)
        if found.size and (
            int(found.max()) >= n or not np.array_equal(self.sorted[found], np.asarray(pos))
        ):
            raise ValueError("a position of the run's tables is not among its documents'")
        return found.astype(index_dtype(n), copy=False)


def pair_lookup(
    n: int, a: np.ndarray, b: np.ndarray, known_a: np.ndarray, known_b: np.ndarray
) -> np.ndarray:
    """For each pair ``(a[i], b[i])`` of document indices in ``0..n-1``, the index of the same
    unordered pair among ``(known_a, known_b)`` (distinct), or -1. O((pairs + known) log known),
    the known pairs sorted by a radix sort.

    Example:
        >>> pair_lookup(5, np.array([1, 4, 0]), np.array([3, 2, 4]),
        ...             np.array([2, 3]), np.array([4, 1])).tolist()
        [1, 0, -1]
    """
    keys, order = argsort64(_unordered_keys(n, known_a, known_b))
    query = _unordered_keys(n, a, b)
    at = np.searchsorted(keys, query)
    hit = at < keys.shape[0]
    hit[hit] = keys[at[hit]] == query[hit]
    out = np.full(query.shape[0], -1, dtype=np.int64)
    out[hit] = order[at[hit]]
    return out


def _unordered_keys(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    return np.minimum(a, b) * np.uint64(n) + np.maximum(a, b)


def driver_groups(
    frames: Frames,
    settings: Settings,
    ids: DataFrame,
    docrep: DataFrame,
    grouping: Grouping,
    data: DataFrame,
    measured: DataFrame | None,
    timed: bool = True,
    lap: Callable[[str], None] = lambda stage: None,
) -> tuple[pa.ChunkedArray, Groups]:
    """GROUPS and PAIRS (``pairs="original"``) of a run, made on the driver: returns the
    documents' IDs and their :class:`~neardup.pipeline.Groups` in input order, as the local
    engine gives them (its writers then write the same bytes), and sets the run's counts
    ``groups``, ``largest_group``, ``duplicates_removed`` and ``pairs``.

    Args:
        frames: the run's tables and counters.
        settings: the run's settings.
        ids: ``pos, id`` of every document.
        docrep: ``pos, ts, rep`` of every document (``rep``: its exact-duplicate
            representative).
        grouping: what makes each representative's original (:class:`Grouping`); its repair
            round's counts (``repair_listed``, ``repair_tested``, ``repair_accepted``) join
            the run's.
        data: the representatives' data, for the pairs related in Spark.
        measured: ``a, b, value`` of the pairs the verification accepted (exact values), or
            None.
        timed: whether the documents' times differ (else the earliest is the first in input
            order).
        lap: called with ``"groups"`` once the groups are made, ``"pairs"`` once the pairs are.

    Cost: the collected columns (about 40 bytes a document and its ID), a radix sort of the
    positions when they do not come in order, O(n) grouping, and a Spark job relating the
    repair round's pairs across components, and one relating the distinct (original,
    representative) pairs not in ``measured``, when there are any.
    """
    table = docrep.select("pos", "ts", "rep").toArrow()
    where = Positions(_column(table, "pos"))
    n = len(where)
    reps = where.index(where.in_order(_column(table, "rep")))
    timestamps = where.in_order(_column(table, "ts"))
    del table
    original = _originals(frames, settings, where, reps, timestamps, grouping, data, timed)
    is_original = own_labels(original)
    group_size = group_sizes(original, is_original)
    lap("groups")

    pair_b = not_own_labels(original, is_original)
    pair_a = original[pair_b]
    pair_value, pair_passed = _original_values(
        frames, settings, where, pair_a, reps[pair_b], data, measured
    )
    named = ids.select("pos", "id").toArrow()
    id_order = Positions(_column(named, "pos"))
    if not np.array_equal(id_order.sorted, where.sorted):
        raise ValueError("the run's IDs and documents differ")
    doc_ids = id_order.in_order(named.column("id"))
    groups = int(np.count_nonzero(is_original))
    frames.stats.update(
        groups=groups,
        duplicates_removed=n - groups,
        largest_group=int(group_size.max()) if n else 0,
        pairs=int(pair_b.shape[0]),
    )
    lap("pairs")
    stats = dict(frames.stats)
    groups_of = Groups(
        original, is_original, group_size, pair_a, pair_b, pair_value, pair_passed, stats
    )
    return doc_ids, groups_of


def _originals(
    frames: Frames,
    settings: Settings,
    where: Positions,
    reps: np.ndarray,
    timestamps: np.ndarray,
    grouping: Grouping,
    data: DataFrame,
    timed: bool,
) -> np.ndarray:
    """Every document's original (an index), its group that of its representative."""
    n = len(where)
    if grouping.kind == "originals":
        table = grouping.table.select("pos", "orig").toArrow()
        of_rep = np.arange(n, dtype=index_dtype(n))
        of_rep[where.index(_column(table, "pos"))] = where.index(_column(table, "orig"))
        return of_rep[reps]
    a, b = _pairs_of(where, grouping.table)
    labels = connected_components(n, a, b)
    if grouping.repair is not None:
        more_a, more_b = _repair_links(frames, settings, where, grouping.repair, labels, data)
        if more_a.size:
            labels = connected_components(n, np.append(a, more_a), np.append(b, more_b))
    # A copy is in its representative's group; the earliest member is a representative.
    labels = labels[reps]
    return originals_of(labels, document_order(timestamps) if timed else None)


def _pairs_of(where: Positions, pairs: DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``a, b`` (positions) of a Spark table as document indices."""
    return _ends(where, pairs.select("a", "b").toArrow())


def _ends(where: Positions, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The ends ``a, b`` (positions) of the pairs of an Arrow table as document indices."""
    return where.index(_column(table, "a")), where.index(_column(table, "b"))


def _repair_links(
    frames: Frames,
    settings: Settings,
    where: Positions,
    listed: DataFrame,
    labels: np.ndarray,
    data: DataFrame,
) -> tuple[np.ndarray, np.ndarray]:
    """The repair round over the star components ``labels`` (each the smallest index of its
    component): the listed pairs across components related in Spark, then the links the
    local engine's choice accepts among them; sets the round's counts."""
    a, b = _pairs_of(where, listed)
    across = labels[a] != labels[b]
    a, b = a[across], b[across]
    stats = {"repair_listed": int(a.shape[0]), "repair_tested": 0, "repair_accepted": 0}
    more = np.zeros(0, dtype=a.dtype), np.zeros(0, dtype=a.dtype)
    if a.size:
        table, at = _related(frames, settings, where, data, a, b, a, b, exact=False)
        ok = _column(table, "ok")[at]
        *more, decided = repair_links_decided(
            a, b, labels[a], labels[b], ok, rounds=LINK_ROUNDS, step=VERIFY_SLICE
        )
        stats.update(
            repair_tested=decided["repair_tested"], repair_accepted=decided["repair_accepted"]
        )
    frames.stats.update(stats)
    return more[0].astype(a.dtype, copy=False), more[1].astype(a.dtype, copy=False)


def _original_values(
    frames: Frames,
    settings: Settings,
    where: Positions,
    orig: np.ndarray,
    rep: np.ndarray,
    data: DataFrame,
    measured: DataFrame | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The value and decision of each pair (original, member), valued on the member's
    representative ``rep``: a copy of its original compares its own content, which every
    measure finds the same (distance 0, similarity 1.0, empty texts too: as the relation
    gives); else from ``measured`` when the verification accepted that pair (both measures
    are symmetric); else related in Spark once for each distinct pair."""
    n = len(where)
    simhash = settings.method == "simhash"
    value = np.zeros(orig.shape[0], dtype=np.uint8 if simhash else np.float64)
    copies = orig == rep
    value[copies] = 0 if simhash else 1.0
    passed = copies.copy()
    todo = np.flatnonzero(~copies)
    if measured is not None and todo.size:
        table = measured.select("a", "b", "value").toArrow()
        known = pair_lookup(n, orig[todo], rep[todo], *_ends(where, table))
        hit = known >= 0
        value[todo[hit]] = _column(table, "value")[known[hit]]
        passed[todo[hit]] = True
        todo = todo[~hit]
    if todo.size:
        keys = sorted_distinct(orig[todo].astype(np.int64) * n + rep[todo], in_place=True)
        table, at = _related(
            frames, settings, where, data, keys // n, keys % n, orig[todo], rep[todo]
        )
        value[todo] = _column(table, "value")[at]
        passed[todo] = _column(table, "ok")[at]
    return value, passed


def _related(
    frames: Frames,
    settings: Settings,
    where: Positions,
    data: DataFrame,
    a: np.ndarray,
    b: np.ndarray,
    wanted_a: np.ndarray,
    wanted_b: np.ndarray,
    exact: bool = True,
) -> tuple[pa.Table, np.ndarray]:
    """The distinct pairs ``(a, b)`` (document indices) related in Spark, where their data are
    (:func:`~neardup.engines.spark.verify.relate`): its rows ``a, b, value, ok`` as Arrow and,
    for each pair ``(wanted_a, wanted_b)``, the row of that pair."""
    pairs = frames.spark.createDataFrame(pa.table({"a": where.sorted[a], "b": where.sorted[b]}))
    checked = relate(frames, data, pairs, ["a", "b"], settings, 2 * a.shape[0], exact=exact)
    table = checked.select("a", "b", "value", "ok").toArrow()
    at = pair_lookup(len(where), wanted_a, wanted_b, *_ends(where, table))
    if at.size and int(at.min()) < 0:
        raise ValueError("a pair sent to Spark to be related did not come back")
    return table, at
