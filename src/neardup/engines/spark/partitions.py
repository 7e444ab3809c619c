"""How many partitions each shuffle of a run gets: sized from the input's bytes unless the
user chose (``--conf spark.sql.shuffle.partitions=N``, ``SparkEngine(partitions=N)``).

Spark's default of 200 partitions costs a few hundred tasks per shuffle whatever the input: on
300 documents most of a run's time went to scheduling empty tasks. Results never depend on the
number of partitions (every stage labels, orders and decides by positions), so the choice
only moves time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from neardup.engines.spark.session import AnalysisException, F, SparkSession, is_connect

__all__ = [
    "ADAPTIVE",
    "BYTES_PER_PARTITION",
    "DOCUMENTS_PER_PARTITION",
    "SHUFFLE_PARTITIONS",
    "adaptive_chosen",
    "default_parallelism",
    "input_bytes",
    "partition_keys",
    "partitions_for",
    "shuffle_partitions_chosen",
    "sized_shuffles",
    "without_adaptive",
]

BYTES_PER_PARTITION = 512 << 20
"""Input bytes per shuffle partition, at most: a partition's tasks hold the texts or units of
the documents they compare."""

DOCUMENTS_PER_PARTITION = 250_000
"""Documents per shuffle partition, at most, once the documents are counted: the rows most
shuffles move grow with the documents, not their bytes (32 band rows a document at the
defaults, 8 million rows of 20 to 28 bytes a partition). Each task costs Spark some 0.1 s
whatever it holds, so partitions of a few MB made the run's tasks mostly that: at 1M
documents of 1.7 KB, 27 partitions (one per 64 MB of input, the rule before) took 92 s where 4
took 72.5 s."""

SMALL_PARTITION_BYTES = 1 << 20
"""Fewest input bytes worth a partition of their own when the partitions are raised to two
per core."""

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
ADAPTIVE = "spark.sql.adaptive.enabled"

_SPARK_DEFAULT = "200"  # Spark's own default for spark.sql.shuffle.partitions


def partitions_for(input_bytes: int, cores: int, documents: int = 0) -> int:
    """Shuffle partitions for an input of ``input_bytes`` holding ``documents`` (0: not yet
    counted): one per :data:`BYTES_PER_PARTITION` and one per :data:`DOCUMENTS_PER_PARTITION`,
    whichever is more, raised to two per core (``cores``: the session's default parallelism)
    while each still gets :data:`SMALL_PARTITION_BYTES`; at least 1. O(1).

    Example:
        >>> partitions_for(600_000, 2), partitions_for(192 << 20, 2), partitions_for(2 << 30, 2)
        (1, 4, 4)
        >>> partitions_for(2 << 30, 2, documents=10_000_000), partitions_for(2 << 30, 100)
        (40, 200)
    """
    if input_bytes < 0 or cores < 1 or documents < 0:
        raise ValueError(
            "need input_bytes >= 0, cores >= 1 and documents >= 0, "
            f"got {input_bytes}, {cores} and {documents}"
        )
    by_size = -(-input_bytes // BYTES_PER_PARTITION)
    by_documents = -(-documents // DOCUMENTS_PER_PARTITION)
    by_cores = min(2 * cores, input_bytes // SMALL_PARTITION_BYTES)
    return max(1, by_size, by_documents, by_cores)


def _murmur3_int(keys: np.ndarray, seed: int) -> np.ndarray:
    """Murmur3 (x86, 32 bits) of each int32 key as Spark computes it for an integer column
    (``Murmur3_x86_32.hashInt``), as signed int32. O(len(keys))."""

    def rotl(x: np.ndarray, r: int) -> np.ndarray:
        return (x << np.uint32(r)) | (x >> np.uint32(32 - r))

    k = keys.astype(np.uint32) * np.uint32(0xCC9E2D51)
    k = rotl(k, 15) * np.uint32(0x1B873593)
    h = rotl(np.uint32(seed) ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
    h ^= np.uint32(4)  # the key's length in bytes
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


def partition_keys(partitions: int) -> np.ndarray:
    """int32 keys, the ``p``-th of which Spark's hash partitioning into ``partitions`` sends to
    partition ``p``: it places a row by the Murmur3 hash (seed 42) of its key modulo the
    partitions, so rows keyed by these values fill the partitions one to one, where keys
    ``0 … partitions - 1`` would collide (a third of the partitions empty, others doubled).
    Expected O(partitions · log(partitions)) hashes.

    Example:
        >>> partition_keys(4).tolist()
        [12, 6, 2, 0]
    """
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    keys = np.full(partitions, -1, dtype=np.int64)
    start, step = 0, 8 * partitions
    while (keys < 0).any():
        candidates = np.arange(start, start + step, dtype=np.int64)
        place = _murmur3_int(candidates, 42).astype(np.int64) % partitions  # pmod
        # np.unique gives each place's first (smallest) candidate.
        places, first = np.unique(place, return_index=True)
        unset = keys[places] < 0
        keys[places[unset]] = candidates[first[unset]]
        start += step
    return keys.astype(np.int32)


def input_bytes(spark: SparkSession, paths: Sequence[str]) -> int:
    """Bytes of the files ``paths`` name (files, directories, globs; on any file system Spark
    reads), by Hadoop's file system listing; a path that names nothing counts 0 (reading it
    reports it). O(listing of the inputs).

    Example (needs a Spark session, so not run as a doctest)::

        input_bytes(spark, ["corpus/*.jsonl"])
    """
    if is_connect(spark):
        return _listed_bytes(spark, paths)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    total = 0
    for path in paths:
        hadoop_path = jvm.org.apache.hadoop.fs.Path(str(path))
        fs = hadoop_path.getFileSystem(conf)
        for status in fs.globStatus(hadoop_path) or []:
            total += int(fs.getContentSummary(status.getPath()).getLength())
    return total


def _listed_bytes(spark: SparkSession, paths: Sequence[str]) -> int:
    """:func:`input_bytes` through a Spark Connect session, which has no file system at hand:
    the server lists the files (Spark's ``binaryFile`` source, its content column left
    unread). O(listing of the inputs), one Spark job a path."""
    total = 0
    for path in paths:
        files = spark.read.format("binaryFile").option("recursiveFileLookup", "true")
        try:
            total += int(files.load(str(path)).agg(F.sum("length")).first()[0] or 0)
        except AnalysisException as error:
            if "PATH_NOT_FOUND" not in str(error):
                raise
    return total


def default_parallelism(spark: SparkSession) -> int:
    """The session's default parallelism (the cores of its executors, unless
    ``spark.default.parallelism`` says otherwise). A Spark Connect session, which cannot ask
    the driver, counts the partitions Spark gives a range of rows by default: one small job.

    Example (needs a Spark session, so not run as a doctest)::

        default_parallelism(spark_session("local[2]"))    # 2
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    parts = spark.range(0, 1 << 20).select(F.spark_partition_id().alias("p"))
    last = parts.agg(F.max("p")).first()[0]
    return int(last) + 1


def _launch_setting(spark: SparkSession, key: str) -> bool:
    """Whether Spark setting ``key`` was given when the session's driver started (a Spark
    Connect client cannot tell: only what its session sets shows)."""
    return not is_connect(spark) and spark.sparkContext.getConf().contains(key)


def shuffle_partitions_chosen(spark: SparkSession) -> bool:
    """Whether the session's ``spark.sql.shuffle.partitions`` was set (at launch: ``--conf``,
    ``spark-defaults.conf``, the session builder; or at run time to another value than
    Spark's default). O(1)."""
    if _launch_setting(spark, SHUFFLE_PARTITIONS):
        return True
    return spark.conf.get(SHUFFLE_PARTITIONS) != _SPARK_DEFAULT


@contextmanager
def sized_shuffles(spark: SparkSession, partitions: int) -> Iterator[None]:
    """Every shuffle of the session gets ``partitions`` partitions inside the block (Spark's
    joins and aggregations as well as the engine's own reduces); the session's setting is
    restored after."""
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    try:
        yield
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)


def adaptive_chosen(spark: SparkSession) -> bool:
    """Whether the session's ``spark.sql.adaptive.enabled`` was set (at launch: ``--conf``,
    ``spark-defaults.conf``, the session builder; or at run time to another value than
    Spark's default, true). O(1)."""
    if _launch_setting(spark, ADAPTIVE):
        return True
    return spark.conf.get(ADAPTIVE) != "true"


@contextmanager
def without_adaptive(spark: SparkSession) -> Iterator[None]:
    """Adaptive query execution off inside the block; the session's setting is restored after.

    Adaptive execution runs every shuffle of a query as a Spark job of its own and plans the
    query again between them: on 300 documents a run took 117 jobs with it and 41 without,
    each job and the planning before it costing 0.2 to 0.8 s. A run needs none of what it
    adds: the run sizes its shuffles (:func:`partitions_for`), broadcasts the tables it
    knows to be small, and splits hot keys itself; results never depend on it."""
    before = spark.conf.get(ADAPTIVE)
    spark.conf.set(ADAPTIVE, "false")
    try:
        yield
    finally:
        spark.conf.set(ADAPTIVE, before)
