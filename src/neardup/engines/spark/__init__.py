"""The Spark engine: the whole dedup job as map-reduce stages on Apache Spark (PySpark).

For the same input and options it gives the same GROUPS and PAIRS as the local engine
(:mod:`neardup.engines.local`), for any number of partitions: every stage calls the same kernels
(:func:`neardup.pipeline.signatures`, :func:`neardup.candidates.tables.distinct_hamming_pairs`,
:func:`neardup.candidates.bands.band_hashes`, the run's near-duplicate relation,
:func:`neardup.groups.center_groups`) inside Spark tasks, and every reduction is a minimum or a set,
so the result does not depend on how rows are spread over tasks.

Stages (``pos`` is a document's input position, and "earliest" always means the smallest
``(timestamp, pos)``):

1. **signatures** — ``mapInArrow`` over the documents: content fingerprint, SimHash fingerprint or
   MinHash signature, and with LCS verification each text's unit count and count sketch.
2. **exact duplicates** — group by content fingerprint; every document points to its group's
   earliest member, its *representative*. Only representatives go on: a text repeated 500,000
   times is one row from here on. The content keys cross one shuffle packed in runs, each
   bound for its content's partition, where a reduce task names the representatives by the
   local engine's hash table of contents (:mod:`neardup.engines.spark.exact`): a hot content
   costs its task linear work.
3. **candidates** among representatives —
   SimHash: representatives with the same fingerprint are linked to the earliest of them; each
   distinct fingerprint is emitted once per group of permutation tables (the tables with the
   same first block) under the key ``(group, value of that block)``; after the shuffle by
   key, each task searches its values of each group with
   :func:`~neardup.candidates.tables.distinct_hamming_pairs` over the group's tables of the
   run's plan (``first_block``), which keeps a pair only in the first table whose prefix the
   two values share, so it is reported exactly once.
   MinHash: each representative emits ``(band, band hash, timestamp, pos)`` for every band
   (without the timestamp when all documents have the same time), shuffled once by bucket;
   each reduce task finds its buckets by a hash table (no sort) and links every bucket as a
   star to its earliest member,
   and lists the pairs of its other members for the repair round
   (:mod:`neardup.engines.spark.repair`). Only integers cross this shuffle.
4. **verification** — with LCS verification, candidate pairs are first bounded by both
   documents' unit counts and count sketches, which stage 1 made (broadcast to the tasks up to
   :data:`~neardup.engines.spark.verify.BROADCAST_SKETCHES` documents; up to
   :data:`~neardup.engines.spark.verify.BROADCAST_COARSE`, their coarse sketches, and the
   sketches of the ends of the pairs those leave joined to them; all joined to the pairs
   beyond), and dropped where :func:`neardup.lcs.possible_pairs` rules them out (the LCS
   kernel's own first tests, so no decision changes). The units or shingle sets are then built
   only for documents that can still be compared, in the tasks that read their texts (the
   positions are broadcast; texts never cross a shuffle); the pairs left are joined with both
   documents' units or shingle sets (or signatures, when the relation reads them: not in a
   verified MinHash run), cut first to the pairs' ends, and checked by the run's relation (LCS
   resemblance, exact Jaccard, Hamming distance, MinHash estimate), exactly as
   :class:`neardup.pipeline.Relation` does. MinHash then runs the local engine's repair round
   (:mod:`neardup.engines.spark.repair`) over the bucket pairs across the components of the
   accepted pairs.
5. **groups** — connected components of the accepted pairs: up to ``components_local_max``
   edges in one task by the local engine's union-find
   (:func:`neardup.groups.connected_components`), beyond by the iterative large-star /
   small-star algorithm on DataFrames (Kiveris et al., 2014), with each round checkpointed to
   cut the lineage; both label a component by its smallest ``pos``. ``components``: the
   original is the component's earliest document. ``center``:
   :func:`neardup.groups.center_groups`' round rule; components up to ``center_local_max``
   representatives are solved inside one task each (the same function), larger ones by
   distributed rounds (per round: the earliest unassigned member of every component becomes a
   center, the other unassigned members are tested against it). Duplicates take their
   representative's group. A run whose GROUPS are not read (``neardup pairs`` without
   ``--groups-out``, every pair) only counts its groups, from the components of the edges'
   ends and the exact copies (:func:`neardup.engines.spark.groups.group_counts`).
6. **pairs** — ``original``: original → member for every non-original; ``all``: every
   near-duplicate pair, expanded from representatives to their exact duplicates.

A run of ``pairs="original"`` that writes GROUPS and PAIRS to files (``dedup`` and ``pairs``
on the command line) and holds at most ``groups_local_max`` documents makes stages 5 and 6 on
the driver instead (:mod:`neardup.engines.spark.driver_groups`): it collects each document's
position, time, representative and ID and the accepted pairs with their values (about 40
bytes a document), runs the local engine's grouping (and MinHash's repair round) on them, sends
the pairs that need the documents' data back to Spark to be related, and writes the outputs
with the local writers.

Skew. Exact duplicates (and, for SimHash, identical fingerprints) are collapsed by aggregations
first. A key holding more than ``skew_threshold`` rows is *hot*: a hot permutation-table prefix or
LSH bucket is split into sub-blocks of about ``skew_threshold / 2`` values, and every pair of
sub-blocks is compared in its own task (salting); joins whose key is hot (the original of a huge
group, the center of a star) take the hot keys' few rows from a broadcast table instead of
shuffling all the key's rows into one task, and joins with a table of documents known to hold at
most :data:`~neardup.engines.spark.frames.BROADCAST_ROWS` rows broadcast that table whole, so the
other side is not shuffled at all. Nothing is collected to the driver except counts, the first
bad row of an input, the small table of hot keys, the outputs written to single files and, up
to ``groups_local_max`` documents, the columns the driver groups.

Example (it needs Java and starts a Spark session, so it is not run as a doctest)::

    from neardup.engines.spark import spark_session, dedup_dataframe
    from neardup.settings import Settings

    spark = spark_session("local[2]")
    df = spark.createDataFrame([("a", "the cat sat on the mat today"),
                                ("b", "The cat sat on the mat, today!")], "id string, text string")
    result = dedup_dataframe(df, Settings(method="simhash", hamming_k=3))
    [r.duplicate_id for r in result.groups.orderBy("pos").collect()]     # ['a', 'a']

Command line: ``neardup dedup docs.jsonl -o groups.tsv --engine spark --spark-master local[*]``,
or through ``spark-submit`` with :mod:`neardup.cli.spark_submit`.

Modules, from the bottom: ``session`` (the session; the one import of pyspark), ``tasks`` (the
work inside tasks), ``frames`` (stored tables, skew-safe joins and shuffles), ``monitor`` (the
stages' job groups, progress from Spark's status tracker, shuffle bytes per stage), ``rows`` and
``read`` (inputs), the stages ``candidates``, ``verify``, ``groups`` and ``pairs`` (and
``driver_groups``, the last two on the driver), ``result``
and ``write`` (outputs), and ``job`` (:class:`SparkEngine`, the run and the entry points).
:func:`open_engine` makes the engine that :func:`neardup.engines.engine_named` gives for
``"spark"``.
"""

from neardup.engines.base import EngineOptions, EngineUnavailable
from neardup.engines.spark.dataframes import dedup_dataframe, pairs_dataframe
from neardup.engines.spark.frames import DEFAULT_SKEW_THRESHOLD, unpersist
from neardup.engines.spark.job import DEFAULT_CENTER_LOCAL_MAX, SparkEngine, run_dedup
from neardup.engines.spark.read import read_documents_spark, read_fingerprints_spark
from neardup.engines.spark.result import SparkResult
from neardup.engines.spark.session import (
    HAVE_PYSPARK,
    INSTALL_HINT,
    require_pyspark,
    spark_session,
)
from neardup.engines.spark.write import write_output, write_result

__all__ = [
    "DEFAULT_CENTER_LOCAL_MAX",
    "DEFAULT_SKEW_THRESHOLD",
    "HAVE_PYSPARK",
    "INSTALL_HINT",
    "SparkEngine",
    "SparkResult",
    "dedup_dataframe",
    "pairs_dataframe",
    "read_documents_spark",
    "read_fingerprints_spark",
    "require_pyspark",
    "open_engine",
    "run_dedup",
    "spark_session",
    "unpersist",
    "write_output",
    "write_result",
]


def open_engine(options: EngineOptions) -> SparkEngine:
    """The Spark engine as :func:`neardup.engines.engine_named` makes it, on the master
    ``options.spark_master`` or as a client of the Spark Connect server
    ``options.spark_remote``; its session starts when the first run needs it. The options of the
    local engine's memory (``memory_limit``, ``tmp_dir``, ``resume``) are refused: Spark manages
    its own; ``workers`` has no bearing. :class:`~neardup.engines.base.EngineUnavailable`, with
    the install command, when pyspark is missing. O(1).

    Example (needs pyspark, so not run as a doctest)::

        open_engine(EngineOptions(spark_master="local[2]")).master    # 'local[2]'
    """
    local_only = [
        flag
        for flag, value in (
            ("--memory-limit", options.memory_limit),
            ("--tmp-dir", options.tmp_dir),
            ("--resume", options.resume),
        )
        if value
    ]
    if local_only:
        raise ValueError(
            f"{', '.join(local_only)} apply to the local engine; Spark manages "
            "its own memory and spill (spark.executor.memory, spark.local.dir)"
        )
    if not HAVE_PYSPARK:
        raise EngineUnavailable(INSTALL_HINT)
    return SparkEngine(master=options.spark_master, remote=options.spark_remote)
