"""Verification on Spark (stage 4): pairs joined with both documents' data and decided by the
run's relation, :class:`neardup.pipeline.Relation`, inside tasks."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pyarrow as pa

from neardup.engines.spark.colocated import relate_colocated
from neardup.engines.spark.frames import BROADCAST_POSITIONS, Frames
from neardup.engines.spark.positions import PositionRows
from neardup.engines.spark.rows import POS_BITS
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import (
    _binary_rows,
    _i64,
    bound_task,
    coarse_task,
    length_task,
    refetched_sets_task,
    relate_task,
    sets_task,
    shared_bound_task,
)
from neardup.lcs import COUNT_BUCKETS
from neardup.settings import Settings

__all__ = [
    "BROADCAST_COARSE",
    "BROADCAST_SKETCHES",
    "PLACES",
    "PairBounds",
    "compared_sets",
    "data_columns",
    "holds_places",
    "relate",
    "related",
    "with_ends",
    "with_shingle_sets",
]


def data_columns(settings: Settings) -> list[str]:
    """The columns of a document's data the relation reads: ``sig``, and ``sset`` (the shingle
    set or LCS units) when verification compares sets. A verified MinHash run decides and
    values every pair by its sets alone, so its data is ``sset`` only: signatures (512 bytes a
    document at 128 permutations) never cross a join. O(1).

    Example:
        >>> data_columns(Settings(method="simhash", hamming_k=3))
        ['sig']
        >>> data_columns(Settings())
        ['sset']
    """
    if settings.method == "minhash" and settings.verify is not None:
        return ["sset"]
    return ["sig", "sset"] if settings.needs_sets else ["sig"]


def with_shingle_sets(
    frames: Frames,
    texts: DataFrame,
    reps: DataFrame,
    pairs: Sequence[DataFrame],
    content: DataFrame,
    settings: Settings,
) -> DataFrame:
    """The data the relation reads (``pos`` and :func:`data_columns`) of the documents that
    can ever be compared, stored: the ends of the pairs ``pairs`` (``a, b``: the candidates
    the bounds leave, and those of the repair round) and the heads of exact-duplicate groups
    ``content``, with their shingle sets built as the local engine builds them, where their
    texts were read (``texts``: ``pos, text``) when the positions fit a broadcast. Every pair
    a later stage relates (a candidate, an original and a member of its group) has both ends
    here. With signatures in the data, every representative (``reps``) is there, the others
    with an empty set (never read): one shuffle of the sets and signatures. Cost: shingling
    the compared texts.

    When the run reads texts back from their files (``frames.refetch``) and the data is
    sets alone, the data is places (``pos, loc, span``, 24 bytes a document): :func:`relate`
    then builds the sets in the tasks that compare them, and :func:`compared_sets` for the
    steps that join them. No set is stored or shuffled. Then, unless center grouping or
    ``pairs="all"`` join the data whole, it is every document's place as stored (``texts``):
    :func:`relate` picks the ends of its pairs from there, and no job runs here.

    Example (needs a Spark session, so not run as a doctest)::

        data = with_shingle_sets(frames, docs.select("pos", "text"), reps, [cand], content, s)
    """
    places = holds_places(texts) and data_columns(settings) == ["sset"]
    if places and settings.grouping != "center" and settings.pairs != "all":
        return texts.select("pos", *PLACES)
    needed = content.select(F.col("rep").alias("pos"))
    for part in pairs:
        needed = needed.unionByName(_ends(part))
    # The texts stay where they were read when the positions fit a broadcast: only the
    # units built from them travel on. They are documents: while those fit, the positions
    # are not stored and counted first.
    needed = needed.distinct()
    fits = frames.stats["documents"] <= BROADCAST_POSITIONS
    if not fits:
        needed = frames.keep(needed)
    if fits or frames.rows(needed) <= BROADCAST_POSITIONS:
        needed = F.broadcast(needed)
    texts = texts.join(needed, ["pos"], "left_semi")
    if places:
        return frames.keep(texts.select("pos", *PLACES))
    sets = compared_sets(frames, texts, settings)
    if "sig" not in data_columns(settings):
        return frames.keep(sets)
    empty = F.lit(b"").cast("binary")
    return frames.keep(
        reps.select("pos", "sig")
        .join(sets, ["pos"], "left")
        .select("pos", "sig", F.coalesce("sset", empty).alias("sset"))
    )


def _ends(pairs: DataFrame) -> DataFrame:
    """``pos``: both ends of every pair of ``pairs`` (``a, b``), once an end of a pair (not
    distinct). No job of its own."""
    return pairs.select(F.col("a").alias("pos")).unionByName(pairs.select(F.col("b").alias("pos")))


PLACES = ("loc", "span")
"""The columns of a document's place in its file, which data of places holds beside ``pos``."""


def holds_places(data: DataFrame) -> bool:
    """Whether ``data`` holds documents' places (:data:`PLACES`) rather than their texts or
    sets. O(1)."""
    return "loc" in data.columns


def compared_sets(frames: Frames, data: DataFrame, settings: Settings) -> DataFrame:
    """``data`` with its documents' sets (``pos, sset``): itself unless it holds texts
    (``pos, text``) or places (:func:`holds_places`), else their sets, made in the tasks
    (places: the texts read back from their files by ``frames.refetch`` in the same task).
    Not stored. Cost: shingling the texts, each time the result is computed.

    Example (needs a Spark session, so not run as a doctest)::

        sets = compared_sets(frames, data, settings)   # pos, sset
    """
    if holds_places(data):
        task = partial(refetched_sets_task, settings=settings, refetch=frames.refetch)
        data = data.select("pos", *PLACES)
    elif "text" in data.columns:
        task = partial(sets_task, settings=settings)
        data = data.select("pos", "text")
    else:
        return data
    return data.mapInArrow(task, "pos long, sset binary")


def with_ends(
    frames: Frames,
    pairs: DataFrame,
    table: DataFrame,
    columns: Sequence[str],
    hot: DataFrame | None = None,
) -> DataFrame:
    """The rows of ``pairs`` (``a, b, …``) with ``columns`` of ``table`` (``pos, …``, one row
    a position) for both ends, as ``<column>_a`` and ``<column>_b``; pairs with an end not in
    ``table`` are dropped. ``hot``: the hot ends of a table holding at least the pairs' rows,
    counted already (:meth:`~neardup.engines.spark.frames.Frames.end_hot_keys`; default:
    counted on ``pairs``). Cost: two skew-safe joins.

    Example (needs a Spark session, so not run as a doctest)::

        sized = with_ends(frames, cand, sketches, ["size"])   # a, b, size_a, size_b
    """
    ends = []
    for end in ("a", "b"):
        ends.append(
            table.select(F.col("pos").alias(end), *[F.col(c).alias(f"{c}_{end}") for c in columns])
        )
    return frames.lookup_ends(pairs, ends[0], ends[1], hot)


BROADCAST_SKETCHES = 2_000_000
"""Most documents whose unit counts and count sketches (136 bytes a document: 272 MB) are
broadcast, so that the candidates are bounded where they are, without a shuffle; beyond, their
coarse sketches are (:data:`BROADCAST_COARSE`)."""

BROADCAST_COARSE = 12_000_000
"""Most documents whose unit counts and coarse sketches (24 bytes a document: 288 MB) are
broadcast past :data:`BROADCAST_SKETCHES`: the candidates are bounded where they are by those,
and the few they leave (on short texts 1.06 times the pairs the sketches leave) joined to the
sketches of their ends; beyond, both ends' rows are joined to all the pairs (:class:`PairBounds`)."""


class PairBounds:
    """The pairs whose LCS resemblance may reach ``threshold`` by both documents' unit counts
    and count sketches alone (:func:`neardup.lcs.possible_pairs`), as the local engine bounds
    its candidates before it reads units; the units are then built for the pairs left only.

    While the documents number at most :data:`BROADCAST_SKETCHES`, their counts and sketches
    are brought to the driver once and broadcast, and each task bounds the pairs it holds
    (:func:`~neardup.engines.spark.tasks.shared_bound_task`): no pair crosses a shuffle.
    Up to :data:`BROADCAST_COARSE`, the counts and coarse sketches
    (:func:`~neardup.engines.spark.tasks.coarse_task`, an eighth of the bytes) are, and the
    pairs they leave are bounded again by their ends' sketches (:meth:`refine`), joined from
    the rows of those ends alone. Beyond, both ends' rows are joined to the pairs in two
    rounds, the unit counts (9 bytes a document,
    :func:`~neardup.engines.spark.tasks.length_task`), then the count sketches of the pairs
    their lengths leave (:func:`~neardup.engines.spark.tasks.bound_task`). Every way decides
    alike: the coarse sketches rule out no pair the sketches leave.

    Args:
        frames: the run.
        sketches: ``pos, size, sketch`` of the documents, as the first pass made them
            (:func:`~neardup.engines.spark.tasks.sign_task`).
        threshold: the LCS resemblance threshold, in (0, 1].

    Example (needs a Spark session, so not run as a doctest)::

        bound = PairBounds(frames, sig.select("pos", "size", "sketch"), 0.8)
        survivors = bound(cand)   # a, b
    """

    def __init__(self, frames: Frames, sketches: DataFrame, threshold: float):
        self.frames = frames
        self.sketches = sketches
        self.threshold = threshold
        #: The broadcast of the counts and sketches or coarse sketches (None past
        #: :data:`BROADCAST_COARSE`), which tasks may read with
        #: :func:`~neardup.engines.spark.tasks.shared_bounds`.
        self.shared = None
        #: Whether the pairs :attr:`shared` leaves are those the sketches leave (else a
        #: superset, which :meth:`refine` cuts to them).
        self.exact = True
        documents = frames.stats["documents"]
        if documents <= BROADCAST_SKETCHES:
            self.shared = frames.share(_sketch_arrays(sketches.toArrow()))
        # Through Spark Connect the sketches may not fit the tasks where the coarse ones do.
        if self.shared is None and documents <= BROADCAST_COARSE:
            coarse = sketches.mapInArrow(coarse_task, "pos long, size long, sketch binary")
            self.shared = frames.share(_sketch_arrays(coarse.toArrow()))
            self.exact = self.shared is None  # not shared either: the joins decide

    def __call__(self, pairs: DataFrame) -> DataFrame:
        """The rows ``a, b`` of ``pairs`` the bounds leave. Cost: one pass over the pairs
        (broadcast; with coarse sketches, :meth:`refine` too) or four joins of small rows."""
        pairs = pairs.select("a", "b")
        if self.shared is not None:
            task = partial(shared_bound_task, table=self.shared, threshold=self.threshold)
            return self.refine(pairs.mapInArrow(task, "a long, b long"))
        every_count_full = F.lit(bytes([255]) * COUNT_BUCKETS)
        lengths = self.sketches.select(
            "pos", "size", (F.col("sketch") == every_count_full).alias("unbounded")
        )
        frames = self.frames
        # Both rounds salt the hot ends of ``pairs``, counted once: the pairs the lengths leave
        # are among them.
        hot = frames.end_hot_keys(pairs) if frames.skewed else None
        by_length = with_ends(frames, pairs, lengths, ["size", "unbounded"], hot=hot).mapInArrow(
            partial(length_task, threshold=self.threshold), "a long, b long"
        )
        return self._by_sketches(by_length, self.sketches, hot)

    def refine(self, pairs: DataFrame) -> DataFrame:
        """Of ``pairs`` (``a, b, …``) that :attr:`shared` left, those the count sketches leave
        (``pairs`` itself when :attr:`exact`), all columns kept. The sketches of the pairs'
        ends alone are picked where they are stored (the ends broadcast while they fit
        :data:`~neardup.engines.spark.frames.BROADCAST_POSITIONS`) and joined to the pairs.
        Cost: a pass over the stored sketches, two joins of the pairs."""
        if self.exact:
            return pairs
        frames = self.frames
        ends = frames.keep(_ends(pairs).distinct())
        if frames.rows(ends) <= BROADCAST_POSITIONS:
            ends = F.broadcast(ends)
        table = self.sketches.join(ends, ["pos"], "left_semi")
        return self._by_sketches(
            pairs, table, frames.end_hot_keys(pairs) if frames.skewed else None
        )

    def refined(
        self, cand: DataFrame, rest: DataFrame | None
    ) -> tuple[DataFrame, DataFrame | None]:
        """The star candidates ``cand`` and the listed pairs ``rest`` (both ``a, b``) that
        :attr:`shared` left, cut to those the sketches leave by one :meth:`refine` of both,
        stored. Cost: that of :meth:`refine` over both."""
        frames = self.frames
        both = cand.withColumn("star", F.lit(True))
        if rest is not None:
            both = both.unionByName(rest.withColumn("star", F.lit(False)))
        left = frames.keep(self.refine(both), totals=[F.sum(F.col("star").cast("long"))])
        stars = int(frames.totals(left)[0] or 0)
        cand = frames.subset(left, "star", ["a", "b"], stars)
        if rest is not None:
            rest = frames.subset(left, "NOT star", ["a", "b"], frames.rows(left) - stars)
        return cand, rest

    def _by_sketches(self, pairs: DataFrame, table: DataFrame, hot: DataFrame | None) -> DataFrame:
        """The rows of ``pairs`` (``a, b, …``) the count sketches of ``table`` (``pos, size,
        sketch``, holding both ends of every pair) leave: two joins and
        :func:`~neardup.engines.spark.tasks.bound_task`."""
        kinds = [f"{c} {t}" for c, t in pairs.dtypes]
        ends = ["size_a", "sketch_a", "size_b", "sketch_b"]
        # The joins put their key first: the task keeps the pairs' columns in their order.
        joined = with_ends(self.frames, pairs, table, ["size", "sketch"], hot=hot)
        return joined.select(*pairs.columns, *ends).mapInArrow(
            partial(bound_task, threshold=self.threshold), ", ".join(kinds)
        )

    def flag(self, pairs: DataFrame, column: str) -> DataFrame:
        """``pairs`` (``a, b, …``) with a boolean ``column``: whether the bounds leave the pair.
        Cost: one pass over the pairs (broadcast), else the joins of :meth:`__call__` and one
        more of the pairs left."""
        if self.shared is not None and self.exact:
            task = partial(
                shared_bound_task, table=self.shared, threshold=self.threshold, flag=column
            )
            kinds = [f"{c} {t}" for c, t in pairs.dtypes]
            return pairs.mapInArrow(task, ", ".join([*kinds, f"{column} boolean"]))
        left = self(pairs).withColumn(column, F.lit(True))
        return pairs.join(left, ["a", "b"], "left").withColumn(
            column, F.coalesce(F.col(column), F.lit(False))
        )


def _sketch_arrays(table: pa.Table) -> tuple[PositionRows, np.ndarray, np.ndarray]:
    """``(rows, sizes, sketches)`` of a ``pos, size, sketch`` table (sketches of any one
    width), by position (``rows``: the row of each position)."""
    positions = _i64(table.column("pos"))
    sizes = _i64(table.column("size"))
    n = positions.shape[0]
    width = len(table.column("sketch")[0].as_py()) if n else COUNT_BUCKETS
    sketches = _binary_rows(table.column("sketch"), np.uint8, width)
    if n > 1 and not (np.diff(positions) > 0).all():
        order = np.argsort(positions, kind="stable")
        positions, sizes, sketches = positions[order], sizes[order], sketches[order]
    return PositionRows(positions, POS_BITS), sizes, sketches


def relate(
    frames: Frames,
    data: DataFrame,
    pairs: DataFrame,
    keep: list[str],
    settings: Settings,
    ends_at_most: int | None = None,
    exact: bool = True,
) -> DataFrame:
    """Pairs ``(a, b, …)`` with ``ok`` and ``value`` added (see :func:`related`), by joining
    both documents' ``data`` (``pos`` and :func:`data_columns`); ``keep`` names the columns of
    ``pairs`` kept. ``exact=False``: a reader of the values of the pairs that pass alone (a
    verification) lets the others' values be some value below the verification threshold,
    which spares their exact LCS (``ok`` is the same). When the pairs have at most
    ``ends_at_most`` distinct ends (a bound the caller knows, e.g. twice their number) and
    that fits a broadcast, each pair is related
    where it meets its ends' data, copied there from where it is stored
    (:func:`~neardup.engines.spark.colocated.relate_colocated`: one shuffle). Else: two
    skew-safe joins of the pairs. ``data`` of places (:func:`holds_places`) is copied as
    places, the tasks making the sets; for the joins, the sets of the pairs' ends are made
    and stored first. Cost: that, and one relation per pair.

    Example (needs a Spark session, so not run as a doctest)::

        checked = relate(frames, data, cand, ["a", "b"], settings, 2 * n_cand)
    """
    cols = data_columns(settings)
    if ends_at_most is not None and ends_at_most <= BROADCAST_POSITIONS:
        # Data of places goes to the pairs' tasks as places (24 bytes a document), and each
        # task reads back and shingles the texts of the ends it holds.
        placed = holds_places(data)
        chosen = data.select("pos", *(PLACES if placed else cols))
        refetch = frames.refetch if placed else None
        related_here = relate_colocated(frames, chosen, pairs, keep, settings, refetch, exact)
        if related_here is not None:
            return related_here
    if holds_places(data):  # the sets of the pairs' ends alone, made once for both joins
        ends = _ends(pairs).distinct()
        data = frames.keep(compared_sets(frames, data.join(ends, ["pos"], "left_semi"), settings))
    joined = with_ends(frames, pairs, data, cols)
    joined = joined.withColumnsRenamed({"sset_a": "set_a", "sset_b": "set_b"})
    return related(joined, keep, settings, exact)


def related(
    joined: DataFrame, keep: list[str], settings: Settings, exact: bool = True
) -> DataFrame:
    """The columns ``keep`` of rows holding both sides' data (``sig_a, sig_b[, set_a, set_b]``)
    plus ``ok`` (the near-duplicate decision) and ``value`` (the reported similarity), by
    :func:`~neardup.engines.spark.tasks.relate_task` (with its ``exact``). One pass, no
    shuffle.

    Example (needs a Spark session, so not run as a doctest)::

        checked = related(joined, ["a", "b"], settings).where("ok")
    """
    kinds = dict(joined.dtypes)
    value_type = "int" if settings.method == "simhash" else "double"
    schema = ", ".join([f"{c} {kinds[c]}" for c in keep] + ["ok boolean", f"value {value_type}"])
    task = partial(relate_task, settings=settings, keep=keep, exact=exact)
    return joined.mapInArrow(task, schema)
