"""PAIRS on Spark (stage 6): original -> member, or every near-duplicate pair."""

from __future__ import annotations

from neardup.engines.spark.candidates import band_rows
from neardup.engines.spark.frames import Frames
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import bucket_pairs_task
from neardup.engines.spark.verify import relate
from neardup.settings import Settings

__all__ = ["all_pairs", "original_pairs"]


def original_pairs(
    frames: Frames,
    data: DataFrame,
    doc_orig: DataFrame,
    settings: Settings,
    measured: DataFrame | None = None,
) -> DataFrame:
    """Original -> member (``pos_a, pos_b, value, passed``) for every non-original of
    ``doc_orig`` (``pos, rep, orig``), valued on (original, member's representative) with the
    representatives' ``data``. ``measured`` (``a, b, value``): pairs the verification accepted,
    whose values are exact; both measures are symmetric, so such a pair takes its value from
    there, passed, and only the other pairs join the units again, as the local engine
    remembers the values it accepted. Cost: one relation per distinct (original,
    representative) not in ``measured``.

    Example (needs a Spark session, so not run as a doctest)::

        pairs = original_pairs(frames, data, doc_orig, settings)
    """
    members = doc_orig.where("pos != orig")
    rep_pairs = members.select(F.col("orig").alias("a"), F.col("rep").alias("b")).distinct()
    known = None
    if measured is not None:
        ends = [F.least("a", "b").alias("lo"), F.greatest("a", "b").alias("hi")]
        found = rep_pairs.select("a", "b", *ends).join(
            measured.select(*ends, "value"), ["lo", "hi"], "left"
        )
        found = frames.keep(found)
        known = found.where(F.col("value").isNotNull()).select(
            "a", "b", "value", F.lit(True).alias("ok")
        )
        rep_pairs = found.where(F.col("value").isNull()).select("a", "b")
    # A pair per member at most: its ends are at most twice the documents.
    ends_at_most = 2 * frames.stats["documents"]
    valued = relate(frames, data, rep_pairs, ["a", "b"], settings, ends_at_most)
    if known is not None:
        valued = valued.unionByName(known)
    valued = valued.select(
        F.col("a").alias("orig"), F.col("b").alias("rep"), "value", F.col("ok").alias("passed")
    )
    return members.join(valued, ["orig", "rep"]).select(
        F.col("orig").alias("pos_a"), F.col("pos").alias("pos_b"), "value", "passed"
    )


def all_pairs(
    frames: Frames,
    data: DataFrame,
    docrep: DataFrame,
    reps: DataFrame,
    fp_pairs: DataFrame | None,
    fp_rep: DataFrame | None,
    settings: Settings,
) -> DataFrame:
    """Every near-duplicate pair of documents (``pos_a < pos_b``, ``value``, ``passed``), from
    the pairs of representatives the relation accepts, expanded to their exact duplicates
    (``docrep``: ``pos, rep``). SimHash reads the fingerprint pairs and nodes of
    :func:`~neardup.engines.spark.candidates.simhash_candidates`; MinHash pairs every two
    members of an LSH bucket. Only the rows that are not their own head (a copy and its
    representative; a representative and its fingerprint's node) take part in the
    expansions, broadcast in a large run while they are few: a document alone with its
    content, or a representative alone with its fingerprint, costs no join. Cost:
    output-sized, plus the pairs' passes over those rows.

    Example (needs a Spark session, so not run as a doctest)::

        pairs = all_pairs(frames, data, docrep, reps, fp_pairs, fp_rep, settings)
    """
    s = settings
    if s.method == "simhash":
        # Representatives with equal fingerprints, and the representatives of fingerprint
        # pairs: only those that are not their fingerprint's node add rows.
        starred = fp_rep.where("node != pos").select(F.col("node").alias("head"), "pos")
        n_reps = frames.stats["documents"] - frames.stats["exact_duplicates"]
        n_starred = n_reps - int(frames.totals(fp_rep)[0] or 0)
        rep_pairs = frames.keep(
            _within_heads(starred, 0, "dist").unionByName(
                _across_heads(frames, fp_pairs.select("a", "b", "dist"), starred, n_starred)
            )
        )
        if s.verify is not None:
            accepted = relate(frames, data, rep_pairs.select("a", "b"), ["a", "b"], s, exact=False)
            accepted = accepted.where("ok").select("a", "b", "value")
        else:
            accepted = rep_pairs.select("a", "b", F.col("dist").alias("value"))
    else:
        rows = frames.keep(band_rows(reps, s))
        shared = rows.groupBy("band", "h").agg(F.count(F.lit(1)).alias("n")).where("n > 1")
        rows = frames.lookup(rows, shared, ["band", "h"]).select("band", "h", "pos")
        cells = frames.split_cells(rows, ["band", "h"], "pos")
        cand = frames.reduce(
            cells, ["band", "h", "lo", "hi"], ["pos"], bucket_pairs_task, "a long, b long"
        ).distinct()
        accepted = relate(frames, data, frames.keep(cand), ["a", "b"], s, exact=False)
        accepted = accepted.where("ok").select("a", "b", "value")
    accepted = frames.keep(accepted)
    same_value = 0 if s.method == "simhash" else 1.0
    copies = docrep.where("rep != pos").select(F.col("rep").alias("head"), "pos")
    within = _within_heads(copies, same_value, "value")
    across = _across_heads(frames, accepted, copies, frames.stats["exact_duplicates"])
    pairs = within.unionByName(across).select(
        F.col("a").alias("pos_a"), F.col("b").alias("pos_b"), "value"
    )
    # A union's partitions add up (360 at 40 shuffle partitions), each a task for every reader
    # of the stored pairs: merged back to the run's count, without a shuffle.
    pairs = pairs.coalesce(frames.P)
    # Every pair written here was accepted by the relation.
    return pairs.withColumn("passed", F.lit(True))


def _within_heads(others: DataFrame, value: float, name: str) -> DataFrame:
    """``a < b`` and ``name`` = ``value`` for every two members of the same head, from the
    rows ``others`` (``head, pos``) of the members that are not their head: a head with no
    such row has no pair. Cost: a self-join of ``others`` and their heads."""
    members = Frames.with_heads(others, "head")
    return (
        members.alias("x")
        .join(members.alias("y"), "head")
        .where("x.pos < y.pos")
        .select(F.col("x.pos").alias("a"), F.col("y.pos").alias("b"), F.lit(value).alias(name))
    )


def _across_heads(frames: Frames, pairs: DataFrame, others: DataFrame, n_others: int) -> DataFrame:
    """``pairs`` (``a, b``, values) of heads, each expanded to every pair of their members
    (``a < b``): the head itself and its rows of ``others`` (``head, pos``; ``n_others`` of
    them, broadcast when :meth:`~neardup.engines.spark.frames.Frames.broadcasts` says so).
    Cost: a join of the pairs with ``others`` at each end; a head with no row of ``others``
    keeps its pairs as they are."""
    if n_others:
        extra = frames.broadcast_if_few(others, n_others)
        for end in ("a", "b"):
            member = extra.select(F.col("head").alias(end), F.col("pos").alias("_member"))
            moved = pairs.join(member, [end]).drop(end).withColumnRenamed("_member", end)
            pairs = pairs.unionByName(moved)
    values = [c for c in pairs.columns if c not in ("a", "b")]
    return pairs.select(F.least("a", "b").alias("a"), F.greatest("a", "b").alias("b"), *values)
