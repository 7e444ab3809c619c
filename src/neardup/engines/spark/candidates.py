"""Candidate pairs on Spark (stage 3): SimHash by Manku permutation tables, MinHash by LSH
bands, among the representatives of exact-duplicate groups."""

from __future__ import annotations

from functools import partial

from neardup.candidates.plan import TablePlan, plan_tables
from neardup.engines.spark.exact import earliest_by
from neardup.engines.spark.frames import Frames
from neardup.engines.spark.partitions import partition_keys
from neardup.engines.spark.repair import (
    BUCKET_LINKS_SCHEMA,
    bucket_links_task,
    distinct_links_task,
    link_totals,
    star_links,
)
from neardup.engines.spark.runs import RUNS_SCHEMA, band_runs_task
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tables import TABLE_PAIRS_SCHEMA, table_pairs_task, table_runs_task
from neardup.engines.spark.tasks import band_rows_task
from neardup.engines.spark.verify import PairBounds
from neardup.settings import Settings

__all__ = ["band_rows", "minhash_candidates", "simhash_candidates"]


def simhash_candidates(
    frames: Frames, reps: DataFrame, hamming_k: int, distinct: bool = False
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Candidate pairs ``(a, b)`` of SimHash representatives (``pos, ts, sig``): each one to
    the earliest representative with its fingerprint, its *node*, and the pairs of distinct
    fingerprints within ``hamming_k`` bits by the permutation tables. Returns the candidates,
    the fingerprint pairs (nodes ``a, b`` and ``dist``) and every representative's
    ``pos, fp, node``, which ``pairs="all"`` reads again. Cost: O(distinct fingerprints ×
    groups of tables by first block) rows of 20 bytes shuffled once, packed in runs, and
    :func:`~neardup.candidates.tables.distinct_hamming_pairs` on each partition's rows of each
    group, over the group's tables (:mod:`neardup.engines.spark.tables`). ``distinct``: the
    representatives' fingerprints are known to differ (they were the content keys of the
    exact duplicates), so each is its own node, with no shuffle.

    Example (needs a Spark session, so not run as a doctest)::

        cand, fp_pairs, fp_rep = simhash_candidates(frames, reps, 3)
    """
    if distinct:
        nodes = reps.select("pos", F.col("sig").alias("fp"), F.col("pos").alias("node"))
    else:
        nodes = earliest_by(frames, reps, "sig").select(
            "pos", F.col("c0").alias("fp"), F.col("rep").alias("node")
        )
    fp_rep = frames.keep(nodes, totals=[F.sum((F.col("node") == F.col("pos")).cast("long"))])
    star = fp_rep.where("node != pos").select(F.col("node").alias("a"), F.col("pos").alias("b"))
    heads = fp_rep.where("node = pos").select("fp", "node")
    n_distinct = int(frames.totals(fp_rep)[0] or 0)
    plan: TablePlan = plan_tables(max(n_distinct, 2), hamming_k)
    # Packed in runs: Spark's work per row was most of this shuffle's cost (see the module
    # neardup.engines.spark.tables).
    keys = partition_keys(frames.P)
    runs = heads.mapInArrow(partial(table_runs_task, plan=plan, keys=keys), RUNS_SCHEMA)
    frames.stats["tables"] = plan.num_tables
    fp_pairs = frames.keep(
        runs.repartition(frames.P, "dest").mapInArrow(
            partial(table_pairs_task, plan=plan, hamming_k=hamming_k), TABLE_PAIRS_SCHEMA
        )
    )
    return star.unionByName(fp_pairs.select("a", "b")), fp_pairs, fp_rep


def band_rows(reps: DataFrame, settings: Settings) -> DataFrame:
    """``band, h, pos, ts``: every LSH band hash of every MinHash representative (``pos, ts,
    sig``). One pass, no shuffle.

    Example (needs a Spark session, so not run as a doctest)::

        rows = band_rows(reps, Settings(method="minhash"))
    """
    return reps.select("pos", "ts", "sig").mapInArrow(
        partial(band_rows_task, settings=settings), "band int, h long, pos long, ts long"
    )


def minhash_candidates(
    frames: Frames,
    reps: DataFrame,
    settings: Settings,
    bounds: PairBounds | None = None,
    timed: bool = True,
) -> tuple[DataFrame, DataFrame]:
    """Candidate pairs ``(a, b)`` of MinHash representatives: every member of an LSH bucket
    to its earliest member, read from the stored distinct links of the buckets' reduce
    (``a, b, kind, times``), which also list the pairs of the buckets' other members for the
    repair round (:func:`~neardup.engines.spark.repair.bucket_links_task`), stored with
    :func:`~neardup.engines.spark.repair.link_totals`; and those links. Cost: O(representatives × bands) rows of
    four integers (28 bytes) shuffled once by bucket, packed in runs of up to
    :data:`~neardup.engines.spark.tasks.RUN_ROWS` rows a partition (the shuffle moves a few
    thousand values, not a row each; 20 bytes a row without the times when the documents'
    are all equal: not ``timed``); grouped by a hash table and linked inside the reduce tasks (a
    partition's rows in memory at once, 28 bytes each), and the links, packed the same way,
    made distinct by the pair in a second shuffle. With ``bounds`` (a
    :class:`~neardup.engines.spark.verify.PairBounds` whose table is broadcast), the listed
    pairs are bounded where they are listed and the distinct links where they are made
    distinct: only the candidates and listed pairs the bounds leave are stored (the
    verification's own first tests). A
    bucket's rows meet in one task, but the work there is linear in them (quadratic only in
    buckets of at most 17 members) and the rows are 28 bytes: a hot bucket costs its task
    time, not quadratic work.

    Example (needs a Spark session, so not run as a doctest)::

        cand, links = minhash_candidates(frames, reps, Settings(method="minhash"))
    """
    # The band rows cross the shuffle packed in runs, each run routed whole to its buckets'
    # partition by its key; each task finds its buckets itself (see bucket_links_task),
    # and its links cross the next shuffle packed too, to be made distinct.
    keys = partition_keys(frames.P)
    runs = reps.select("pos", "ts", "sig").mapInArrow(
        partial(band_runs_task, settings=settings, keys=keys, timed=timed), RUNS_SCHEMA
    )
    shared = {}
    if bounds is not None and bounds.shared is not None:
        shared = {"bounds": bounds.shared, "threshold": bounds.threshold}
    link_runs = runs.repartition(frames.P, "dest").mapInArrow(
        partial(bucket_links_task, keys=keys, timed=timed, **shared), RUNS_SCHEMA
    )
    task = partial(distinct_links_task, **shared)
    links = frames.keep(
        link_runs.repartition(frames.P, "dest").mapInArrow(task, BUCKET_LINKS_SCHEMA),
        totals=link_totals(),
    )
    return star_links(frames, links), links
