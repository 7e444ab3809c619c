"""The repair round of MinHash star candidates on Spark, as the local engine runs it
(:mod:`neardup.candidates.repair`, whose functions run inside the tasks).

1. **listing**, in the reduce of the LSH buckets (:func:`bucket_links_task`): besides each
   bucket's star links, the pairs of its other members when it has at most
   :data:`~neardup.candidates.repair.BUCKET_MEMBERS` of them, once per bucket holding the
   pair, and the number of pairs of the larger buckets (not listed). The pairs are made
   distinct, counting their listings (:func:`listed_pairs`).
2. **bounds**, beside the star candidates': the pairs the LCS length and count bounds rule
   out are dropped, and so are the star candidates among them (the star round decides
   those; a listed pair meets the star link of the same documents where the links are made
   distinct, which marks it). While the sketches are broadcast, the listed pairs are
   bounded where they are listed (:func:`bucket_links_task` with ``bounds``) and the links
   where they are made distinct (:func:`distinct_links_task` with ``bounds``), else in a
   pass over the stored pairs (:func:`unbounded_pairs`).
3. **decision** (:func:`repaired_labels`): the pairs whose ends the verified star edges leave
   in different components are verified in tasks, then one task replays the local engine's
   choice over them (:func:`~neardup.candidates.repair.repair_links_decided`), so the links
   it counts are the local engine's, and relabels the components the accepted pairs join.

Only pairs of integers cross the shuffles; units join only the pairs across components.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.candidates.radix import sorted_distinct
from neardup.candidates.repair import (
    BUCKET_MEMBERS,
    bucket_pairs,
    bucket_stars,
    repair_links_decided,
)
from neardup.engines.spark.frames import BROADCAST_POSITIONS, Frames
from neardup.engines.spark.runs import mixed_place, packed_runs, run_rows
from neardup.engines.spark.session import Column, DataFrame, F
from neardup.engines.spark.tasks import (
    _i64,
    band_row_type,
    record_batch,
    shared_bounds,
)
from neardup.engines.spark.verify import PairBounds, relate
from neardup.groups import LINK_ROUNDS, connected_components
from neardup.pipeline import VERIFY_SLICE
from neardup.settings import Settings

__all__ = [
    "BUCKET_LINKS_SCHEMA",
    "LINK",
    "bucket_links_task",
    "distinct_links_task",
    "link_totals",
    "listed_pairs",
    "repair_task",
    "repaired_labels",
    "star_links",
    "unbounded_pairs",
]

STAR, PAIR, UNLISTED, STARS = 0, 1, 2, 3
"""Kinds of the links of :func:`bucket_links_task`, and of the rows of
:func:`distinct_links_task` counting a partition's pairs of the buckets too large to list
(``UNLISTED``) and, when it bounds the links, its star links before the bounds (``STARS``)."""

LINK = np.dtype([("a", "<i8"), ("b", "<i8"), ("kind", "i1")])
"""One link of :func:`bucket_links_task` as it crosses a shuffle packed in a run (17 bytes)."""

BUCKET_LINKS_SCHEMA = "a long, b long, kind byte, star boolean"
"""The rows :func:`distinct_links_task` yields, as a Spark schema."""


def bucket_links_task(
    batches: Iterable[pa.RecordBatch],
    keys: np.ndarray,
    timed: bool = True,
    bounds: Any = None,
    threshold: float = 1.0,
) -> Iterator[pa.RecordBatch]:
    """Reduce side of the MinHash candidates: the runs of band rows ``(band, h, ts, pos)``
    (:func:`~neardup.engines.spark.tasks.band_runs_task`; ``(band, h, pos)`` when not
    ``timed``, all times equal) of a partition holding every row of
    its buckets, in any order -> runs of links (:data:`LINK`; runs as
    :func:`~neardup.engines.spark.tasks.packed_runs` makes them, each link bound for the
    partition of ``(a, b)`` over ``len(keys)``, where :func:`distinct_links_task` makes them
    distinct): every other member
    ``b`` of each LSH bucket linked to its earliest member ``a`` (by time, then position; kind
    ``STAR``), as the local engine links a bucket; the pairs ``a < b`` of the other members of
    each bucket of at most ``BUCKET_MEMBERS`` of them (kind ``PAIR``, by
    :func:`~neardup.candidates.repair.bucket_pairs`, once per bucket: a pair shares a band in
    one bucket at most); and one link ``(-1, pairs, UNLISTED)`` counting the pairs of the
    larger buckets. O(rows + Σ m² over the listed buckets).

    With ``bounds`` (the broadcast table of
    :func:`~neardup.engines.spark.tasks.shared_bounds`), the listed pairs are bounded as they
    are listed, as :func:`distinct_links_task` bounds them: only those whose LCS resemblance
    may reach ``threshold`` leave, so the others (at 1M English documents, 84 MB of the 193
    MB of links shuffled) are neither shuffled nor made distinct. The links :func:`distinct_links_task` keeps are
    the same: it drops a listed pair the bounds rule out, or one that is a star link too,
    and the star link itself stays. O(Σ m² × 128) more.

    The partition's buckets are found here by one compiled pass over a hash table
    (:func:`~neardup.candidates.repair.bucket_stars`), no sort: Spark's sort of these rows
    compares whole rows (its sort prefix is the band alone, shared by a 32nd of them) and
    took several times as long as numpy's sort of the integers, which took twice as long as
    this pass. The links leave packed too: a
    pair linked in many bands would otherwise cross the shuffle of their distinct rows as
    a Spark row each time.

    Example:
        >>> from neardup.engines.spark.tasks import BAND_ROW
        >>> rows = np.zeros(5, dtype=BAND_ROW)
        >>> rows["band"], rows["h"] = [1, 0, 0, 0, 0], 7
        >>> rows["ts"], rows["pos"] = [0, 6, 1, 5, 1], [3, 3, 9, 2, 4]
        >>> one = np.array([0])  # one partition (its key)
        >>> links = list(bucket_links_task([packed_runs(rows, np.zeros(5, int), one)], one))
        >>> [(r["a"], r["b"], r["kind"]) for b in distinct_links_task(links) for r in b.to_pylist()]
        [(4, 2, 0), (4, 3, 0), (4, 9, 0), (2, 3, 1), (2, 9, 1), (3, 9, 1), (-1, 0, 2)]
    """
    parts = [batch for batch in batches if batch.num_rows]
    if not parts:
        return
    rows = run_rows(pa.Table.from_batches(parts), band_row_type(timed))
    stars = bucket_stars(rows["band"], rows["h"], rows["ts"] if timed else None, rows["pos"])
    del rows
    if stars.members.shape[0]:
        yield _links(np.repeat(stars.heads, np.diff(stars.offsets)), stars.members, STAR, keys)
    # bucket_pairs packs its members in 32 bits: positions that fit (those of an input's first
    # 4G lines) are passed as they are, others numbered within the partition, in order (a sort
    # with its inverse: a second of a 1M-document run's tasks, spent only when needed).
    nodes, members = None, stars.members
    if members.shape[0] and int(members.max()) >> 32:
        nodes, members = np.unique(members, return_inverse=True)
    offsets = stars.offsets
    firsts = np.flatnonzero(np.diff(stars.bands, prepend=-1) != 0)  # each band's first
    unlisted = 0
    for first, stop in zip(firsts, np.append(firsts[1:], stars.bands.shape[0])):
        base = offsets[first]
        a, b, stats = bucket_pairs(
            offsets[first : stop + 1] - base, members[base : offsets[stop]], BUCKET_MEMBERS
        )
        unlisted += stats["repair_unlisted"]
        if nodes is not None:
            a, b = nodes[a], nodes[b]
        if bounds is not None and a.shape[0]:
            left = shared_bounds(bounds, a, b, threshold)
            a, b = a[left], b[left]
        if a.shape[0]:
            yield _links(a, b, PAIR, keys)
    yield _links(np.array([-1]), np.array([unlisted]), UNLISTED, keys)


def _links(a: np.ndarray, b: np.ndarray, kind: int, keys: np.ndarray) -> pa.RecordBatch:
    """Runs of :data:`LINK` rows, each bound for the partition of its pair, whichever end
    comes first: a star link and a listed pair of the same documents meet there."""
    links = np.empty(a.shape[0], dtype=LINK)
    links["a"], links["b"], links["kind"] = a, b, kind
    place = mixed_place(a, b, keys.shape[0], unordered=True)
    return packed_runs(links, place, keys)


def distinct_links_task(
    batches: Iterable[pa.RecordBatch], bounds: Any = None, threshold: float = 1.0
) -> Iterator[pa.RecordBatch]:
    """The runs of links of :func:`bucket_links_task` holding every copy of their links (and
    every link of the same two documents) -> rows of :data:`BUCKET_LINKS_SCHEMA`: each
    distinct link with ``star``, whether a ``PAIR`` is a star link too (in either
    orientation: the star round decides it); and one ``(-1, pairs, UNLISTED, false)`` adding
    up the partition's counts of pairs not listed; by kind, then pair. O(links log links).

    With ``bounds`` (the broadcast table of
    :func:`~neardup.engines.spark.tasks.shared_bounds`), the links are bounded here, where
    they are made distinct, as the verification would bound them: only the star links and
    the listed pairs that are no star link whose LCS resemblance may reach ``threshold`` are
    yielded (``star`` false), and one more row ``(-1, star links, STARS, false)`` counts the
    star links before the bounds (the run's candidates). The links the bounds drop (most
    of them: 98 % at 1M English documents) are then never stored. O(links × 128) more.

    Example:
        >>> links = np.zeros(5, dtype=LINK)
        >>> links["a"], links["b"] = [2, 2, 5, -1, -1], [5, 5, 2, 3, 4]
        >>> links["kind"] = [PAIR, PAIR, STAR, UNLISTED, UNLISTED]
        >>> runs = packed_runs(links, np.zeros(5, int), np.array([0]))
        >>> [tuple(r.values()) for b in distinct_links_task([runs]) for r in b.to_pylist()]
        [(5, 2, 0, False), (2, 5, 1, True), (-1, 7, 2, False)]
    """
    parts = [batch for batch in batches if batch.num_rows]
    links = run_rows(pa.Table.from_batches(parts), LINK) if parts else np.zeros(0, LINK)
    counted = links["kind"] == UNLISTED
    unlisted = int(links["b"][counted].sum())
    stars = 0
    links = links[~counted]
    if links.shape[0]:
        a, b, kind = _distinct_links(links)
        star = _listed_star(a, b, kind)
        if bounds is not None:
            stars = int((kind == STAR).sum())
            looked = np.flatnonzero((kind == STAR) | ((kind == PAIR) & ~star))
            left = looked[shared_bounds(bounds, a[looked], b[looked], threshold)]
            a, b, kind, star = a[left], b[left], kind[left], star[left]
        yield _link_rows(a, b, kind, star)
    counts = [(unlisted, UNLISTED)] + ([(stars, STARS)] if bounds is not None else [])
    yield _link_rows(
        np.full(len(counts), -1),
        np.array([count for count, _ in counts]),
        np.array([kind for _, kind in counts]),
        np.zeros(len(counts), dtype=bool),
    )


_LOW31 = (1 << 31) - 1
"""The low 31 bits: one end of a link packed by :func:`_distinct_links`."""


def _in_31_bits(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(a, b, values)``: the non-negative integers ``a`` and ``b`` as int64 below 2**31 in the
    same order and with the same equalities: themselves when they fit (values None), as
    positions of one input of fewer than 2**31 documents do, else their ranks among both
    (``values[rank]`` gives them back). O(n) when they fit, else O(n log n)."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    if not max(int(a.max(initial=0)), int(b.max(initial=0))) >> 31:
        return a, b, None
    values, ranks = np.unique(np.concatenate([a, b]), return_inverse=True)
    return ranks[: a.shape[0]], ranks[a.shape[0] :], values


def _distinct_links(links: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, kind)`` (int64) of the distinct ``STAR`` and ``PAIR`` rows of ``links``
    (:data:`LINK`, positions ``>= 0``), by kind, then ``a``, then ``b``. Each link is one
    63-bit key (kind, then both ends in 31 bits, :func:`_in_31_bits`), so one sort of
    integers makes them distinct: a three-key ``np.lexsort`` took most of this task's time.
    O(links log links)."""
    a, b, values = _in_31_bits(links["a"], links["b"])
    key = (links["kind"].astype(np.int64) << 62) | (a << 31) | b
    key = sorted_distinct(key, in_place=True, scratch=True)
    kind, a, b = key >> 62, (key >> 31) & _LOW31, key & _LOW31
    if values is not None:
        a, b = values[a], values[b]
    return a, b, kind


def _listed_star(a: np.ndarray, b: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """For each distinct link, whether it is a ``PAIR`` (``a < b``) whose documents are also
    linked by a ``STAR`` link, in either orientation. O(links log links), O(links) when every
    star link runs from its smaller end to its larger one."""
    lo, hi, _ = _in_31_bits(np.minimum(a, b), np.maximum(a, b))
    documents = (lo << 31) | hi  # each unordered pair of documents as one integer
    found = np.zeros(a.shape[0], dtype=bool)
    pair, star = kind == PAIR, kind == STAR
    if pair.any() and star.any():
        stars = documents[star]
        # The links come ordered by (a, b): so are these when every star's center is its
        # earliest position (no time field), and their sort was a fifth of this task's time.
        if (stars[1:] < stars[:-1]).any():
            stars = np.sort(stars)
        wanted = documents[pair]
        found[pair] = stars[np.searchsorted(stars, wanted).clip(max=stars.shape[0] - 1)] == wanted
    return found


def _link_rows(a, b, kind, star) -> pa.RecordBatch:
    """Rows of :data:`BUCKET_LINKS_SCHEMA`."""
    return record_batch(
        {
            "a": pa.array(a.astype(np.int64)),
            "b": pa.array(b.astype(np.int64)),
            "kind": pa.array(kind.astype(np.int8)),
            "star": pa.array(star, type=pa.bool_()),
        }
    )


def link_totals() -> list[Column]:
    """The aggregates over the rows of :func:`distinct_links_task` that the table of those
    rows is stored with (:meth:`~neardup.engines.spark.frames.Storage.keep`), so they cost no
    Spark job of their own: the pairs of the buckets too large to list, the star links, the
    listed pairs and the star links before the bounds (None when the links were not bounded).

    Example (needs a Spark session, so not run as a doctest)::

        links = frames.keep(rows, totals=link_totals())
    """
    kind = F.col("kind")
    return [
        F.sum(F.when(kind == UNLISTED, F.col("b"))),
        F.sum(F.when(kind == STAR, F.lit(1))),
        F.sum(F.when(kind == PAIR, F.lit(1))),
        F.sum(F.when(kind == STARS, F.col("b"))),
    ]


def star_links(frames: Frames, links: DataFrame) -> DataFrame:
    """The star links ``a, b`` of ``links`` (the rows of :func:`distinct_links_task`, stored
    with :func:`link_totals`), read from the stored links. O(1) here.

    Example (needs a Spark session, so not run as a doctest)::

        cand = star_links(frames, links)
    """
    return frames.subset(links, f"kind = {STAR}", ["a", "b"], frames.totals(links)[1] or 0)


def listed_pairs(frames: Frames, links: DataFrame) -> tuple[DataFrame, int]:
    """The distinct pairs the buckets list, ``a, b, star`` (whether the pair is a star
    candidate too), read from the stored ``links`` (the rows
    of :func:`distinct_links_task`, stored with :func:`link_totals`), and the number of pairs
    of the buckets too large to list (``repair_unlisted``). O(1) here.

    Example (needs a Spark session, so not run as a doctest)::

        pairs, unlisted = listed_pairs(frames, links)
    """
    unlisted, _, listed, _ = frames.totals(links)
    pairs = frames.subset(links, f"kind = {PAIR}", ["a", "b", "star"], listed or 0)
    return pairs, int(unlisted or 0)


def unbounded_pairs(frames: Frames, bound: PairBounds | None, pairs: DataFrame) -> DataFrame:
    """Of the listed ``pairs`` (``a, b, star``, from :func:`listed_pairs`), those the LCS
    bounds leave (``bound``, a :class:`~neardup.engines.spark.verify.PairBounds`; None: no
    bounds) and that are no star candidate (``star`` false), as ``a, b``. Cost: one pass over
    the pairs, stored with the pairs left flagged.

    Example (needs a Spark session, so not run as a doctest)::

        rest = unbounded_pairs(frames, PairBounds(frames, sketches, 0.8), pairs)
    """
    if bound is None:
        return frames.keep(pairs.where(~F.col("star")).select("a", "b"))
    left = F.col("left") & ~F.col("star")
    # One stored table answers both: the pairs left and their number.
    flagged = frames.keep(bound.flag(pairs, "left"), totals=[F.sum(F.when(left, F.lit(1)))])
    (rest,) = frames.totals(flagged)
    return frames.subset(flagged, "left AND NOT star", ["a", "b"], rest or 0)


def repaired_labels(
    frames: Frames,
    data: DataFrame,
    rest: DataFrame,
    labels: DataFrame,
    settings: Settings,
) -> tuple[DataFrame, dict]:
    """The components ``pos, ts, label`` of the star round (``labels``) joined by the pairs of
    ``rest`` (``a, b``) the repair accepts, and the local engine's counts ``repair_listed``,
    ``repair_tested`` and ``repair_accepted``. Every pair across components is verified
    (:func:`~neardup.engines.spark.verify.relate`); :func:`repair_task` then keeps those the
    local engine keeps. Cost: the joins of the pairs with the labels, and the units of the
    pairs across components.

    Example (needs a Spark session, so not run as a doctest)::

        labels, stats = repaired_labels(frames, data, rest, labels, settings)
    """
    end_a = labels.select(F.col("pos").alias("a"), F.col("label").alias("label_a"))
    end_b = labels.select(F.col("pos").alias("b"), F.col("label").alias("label_b"))
    across = frames.keep(rest.join(end_a, ["a"]).join(end_b, ["b"]).where("label_a != label_b"))
    stats = {"repair_listed": frames.rows(across), "repair_tested": 0, "repair_accepted": 0}
    if stats["repair_listed"] == 0:
        return labels, stats
    keep = ["a", "b", "label_a", "label_b"]
    checked = relate(frames, data, across, keep, settings, 2 * stats["repair_listed"], exact=False)
    # Exactly one partition, which adaptive execution does not change: the replay sees every
    # pair, in the local engine's order.
    # The counts are on the one row of label -1 (0 on the others): totals of the stored rows.
    decided = frames.keep(
        checked.select(*keep, "ok")
        .repartition(1)
        .mapInArrow(
            partial(repair_task, rounds=LINK_ROUNDS, step=VERIFY_SLICE),
            "label long, merged long, tested long, accepted long",
        ),
        totals=[F.sum("tested"), F.sum("accepted")],
    )
    tested, accepted = frames.totals(decided)
    stats["repair_tested"], stats["repair_accepted"] = int(tested), int(accepted)
    merged = decided.where("label >= 0").select("label", "merged")
    if 2 * stats["repair_accepted"] <= BROADCAST_POSITIONS:
        merged = F.broadcast(merged)
    joined = labels.join(merged, ["label"], "left")
    return joined.select("pos", "ts", F.coalesce("merged", "label").alias("label")), stats


def repair_task(
    batches: Iterable[pa.RecordBatch], rounds: int, step: int
) -> Iterator[pa.RecordBatch]:
    """All the pairs across star components ``(a, b, label_a, label_b, ok)`` in one task ->
    ``(label, merged, 0, 0)`` for every star component the accepted pairs join to one of a
    smaller label (``merged``: the smallest label joined), then ``(-1, -1, tested,
    accepted)``: the counts of :func:`~neardup.candidates.repair.repair_links_decided` with
    ``rounds`` and ``step``. O(p log p) for p pairs.

    Example:
        >>> rows = pa.record_batch({"a": [3, 1], "b": [5, 3], "label_a": [2, 0],
        ...                         "label_b": [5, 2], "ok": [True, False]})
        >>> [tuple(r.values()) for b in repair_task([rows], 1, 8) for r in b.to_pylist()]
        [(5, 2, 0, 0), (-1, -1, 2, 1)]
    """
    table = pa.Table.from_batches(list(batches))
    a, b, label_a, label_b = (_i64(table.column(c)) for c in ("a", "b", "label_a", "label_b"))
    ok = table.column("ok").to_numpy().astype(bool)
    more_a, more_b, stats = repair_links_decided(a, b, label_a, label_b, ok, rounds, step)
    # The labels of the accepted pairs' ends, then the components they join (smallest first).
    ends = np.concatenate([a, b])
    end_labels = np.concatenate([label_a, label_b])
    order = np.argsort(ends, kind="stable")
    ends, end_labels = ends[order], end_labels[order]
    star = sorted_distinct(end_labels)
    number = partial(np.searchsorted, star)
    joined = connected_components(
        star.shape[0],
        number(end_labels[np.searchsorted(ends, more_a)]),
        number(end_labels[np.searchsorted(ends, more_b)]),
    )
    moved = joined != np.arange(star.shape[0])
    zeros = np.zeros(int(moved.sum()), dtype=np.int64)
    yield record_batch(
        {
            "label": pa.array(np.append(star[moved], -1)),
            "merged": pa.array(np.append(star[joined[moved]], -1)),
            "tested": pa.array(np.append(zeros, stats["repair_tested"])),
            "accepted": pa.array(np.append(zeros, stats["repair_accepted"])),
        }
    )
