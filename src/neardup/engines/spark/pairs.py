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
    members of an LSH bucket. Cost: output-sized.

    Example (needs a Spark session, so not run as a doctest)::

        pairs = all_pairs(frames, data, docrep, reps, fp_pairs, fp_rep, settings)
    """
    s = settings
    if s.method == "simhash":
        # representatives with equal fingerprints, and the reps of fingerprint pairs
        same = (
            fp_rep.alias("x")
            .join(fp_rep.alias("y"), "node")
            .where("x.pos < y.pos")
            .select(F.col("x.pos").alias("a"), F.col("y.pos").alias("b"), F.lit(0).alias("dist"))
        )
        ra = fp_rep.select(F.col("node").alias("a"), F.col("pos").alias("ra"))
        rb = fp_rep.select(F.col("node").alias("b"), F.col("pos").alias("rb"))
        cross = (
            fp_pairs.join(ra, ["a"])
            .join(rb, ["b"])
            .select(F.least("ra", "rb").alias("a"), F.greatest("ra", "rb").alias("b"), "dist")
        )
        rep_pairs = frames.keep(same.unionByName(cross))
        if s.verify is not None:
            accepted = relate(frames, data, rep_pairs.select("a", "b"), ["a", "b"], s)
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
        accepted = relate(frames, data, frames.keep(cand), ["a", "b"], s)
        accepted = accepted.where("ok").select("a", "b", "value")
    accepted = frames.keep(accepted)
    same_value = 0 if s.method == "simhash" else 1.0
    members = docrep.select("pos", "rep")
    within = (
        members.alias("x")
        .join(members.alias("y"), "rep")
        .where("x.pos < y.pos")
        .select(
            F.col("x.pos").alias("pos_a"),
            F.col("y.pos").alias("pos_b"),
            F.lit(same_value).cast("int" if s.method == "simhash" else "double").alias("value"),
        )
    )
    ma = members.select(F.col("rep").alias("a"), F.col("pos").alias("pa"))
    mb = members.select(F.col("rep").alias("b"), F.col("pos").alias("pb"))
    across = (
        accepted.join(ma, ["a"])
        .join(mb, ["b"])
        .select(F.least("pa", "pb").alias("pos_a"), F.greatest("pa", "pb").alias("pos_b"), "value")
    )
    # Every pair written here was accepted by the relation.
    return within.unionByName(across).withColumn("passed", F.lit(True))
