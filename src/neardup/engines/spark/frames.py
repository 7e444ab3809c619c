"""The DataFrame plumbing of a Spark run: stored tables with short plans, skew-safe joins.

:class:`Storage` materialises the tables a run reads more than once (as checkpoints; the two
widest in Spark's columnar cache) and frees them; :class:`Frames` adds the joins and shuffles
that stay balanced when one key holds many rows (see "Skew" in :mod:`neardup.engines.spark`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from neardup.engines.spark.session import (
    Broadcast,
    Column,
    DataFrame,
    F,
    SparkSession,
    StorageLevel,
    is_connect,
)

__all__ = [
    "BROADCAST_POSITIONS",
    "BROADCAST_ROWS",
    "DEFAULT_SKEW_THRESHOLD",
    "SERIALISED_DOCUMENTS",
    "SHIPPED_BYTES",
    "Frames",
    "Shipped",
    "Storage",
    "default_checkpoint",
    "mark",
    "unpersist",
]

DEFAULT_SKEW_THRESHOLD = 20_000
"""Rows above which one key is treated as hot and split (see "Skew" in the package docstring)."""

BROADCAST_POSITIONS = 4_000_000
"""Most document positions (8 bytes each) sent to every task to pick rows where they are
stored (texts to shingle, units of pair ends, repeated IDs), instead of shuffling the rows by
position."""

BROADCAST_ROWS = 1_000_000
"""Most rows of the right-hand side of a skew-safe join (:meth:`Frames.lookup`; a few columns,
tens of bytes a row) sent whole to every task, so that the left side is joined where it is:
no shuffle of it, so no hot key, and no Spark job to look for one."""

SERIALISED_DOCUMENTS = 4_000_000
"""Documents from which a run keeps its stored tables serialised (:attr:`Storage.serialised`).
Measured on ``local[2]`` (8 GB heap, Kryo): 10M short documents 0.86x the run with an object a
stored row (409.8 against 475.6 s), 1M English documents 1.09x (106.8 against 97.6 s); the
threshold lies between, where the stored rows begin to crowd the heap."""

SHIPPED_BYTES = 48 << 20
"""Largest value (pickled) that :meth:`Storage.share` sends inside a Spark Connect run's
tasks: a Connect client has no broadcast, so the value travels in the plan of every query
that reads it (the server takes messages of 128 MB by default, and a query may read two such
values). Beyond, ``share`` gives None and the caller takes another way: coarser sketches, or
joins of the rows."""

ArrowTask = Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]
"""A function ``mapInArrow`` runs on a partition's batches (see :mod:`neardup.engines.spark.tasks`)."""


def mark(df: DataFrame, name: str) -> Any:
    """The attribute ``name`` the run set on the DataFrame ``df`` (its rows counted, its
    stored rows…), or None. Not ``getattr``: a Spark Connect DataFrame answers every name it
    lacks with a column of that name. O(1).

    Example:
        >>> from types import SimpleNamespace
        >>> mark(SimpleNamespace(_neardup_rows=3), "_neardup_rows"), mark(object(), "x")
        (3, None)
    """
    return getattr(df, "__dict__", {}).get(name)


def unpersist(df: DataFrame) -> None:
    """Free the executors' storage of ``df``, a table this engine returned (e.g. the documents
    of :func:`~neardup.engines.spark.read_documents_spark`) or any persisted DataFrame. Most tables
    this engine stores are checkpoints, which ``DataFrame.unpersist`` does not free. O(1) on the
    driver; ``df`` (and anything computed from it) must not be read afterwards.

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats, _ = read_documents_spark(spark, ["docs.jsonl"])
        docs.count()
        unpersist(docs)
    """
    stored = mark(df, "_neardup_stored")
    if stored is not None:
        if not mark(stored, "_neardup_cached"):
            stored.unpersist(False)
        df._neardup_stored = None
    else:
        df.unpersist()


def default_checkpoint(spark: SparkSession) -> str:
    """Where a run stores its tables when not told: ``"reliable"`` (the checkpoint directory,
    survives the loss of an executor) when the session has a checkpoint directory, else
    ``"local"`` (the executors' storage). O(1).

    Example (needs a Spark session, so not run as a doctest)::

        default_checkpoint(spark_session("local[2]"))     # 'local'
    """
    if is_connect(spark):
        return "local"  # a client cannot see the driver's checkpoint directory
    return "reliable" if spark.sparkContext.getCheckpointDir() else "local"


class Shipped:
    """A value :meth:`Storage.share` sends inside a Spark Connect run's tasks, read there as a
    broadcast is (``.value``).

    Example:
        >>> Shipped([1, 2]).value
        [1, 2]
    """

    def __init__(self, value: object):
        self.value = value


class Storage:
    """The tables one run stores in the executors, and their release.

    Args:
        spark: the session.
        checkpoint: ``"local"`` (executors' storage; fast, not fault tolerant) or ``"reliable"``
            (the checkpoint directory).

    Example (needs a Spark session, so not run as a doctest)::

        storage = Storage(spark, default_checkpoint(spark))
        table = storage.keep(df.groupBy("k").count())   # computed once, read many times
        storage.release()
    """

    def __init__(self, spark: SparkSession, checkpoint: str):
        self.spark = spark
        self.checkpoint = checkpoint
        #: Keep the tables serialised (:meth:`keep`); see :meth:`size_for`.
        self.serialised = False
        self._held: list[DataFrame] = []  # stored tables of this run
        self._shared: list = []  # broadcasts of this run

    def size_for(self, documents: int | None) -> None:
        """Store the tables of a run over ``documents`` documents serialised from
        :data:`SERIALISED_DOCUMENTS` on; ``None`` (a number not known without a Spark job of
        its own) counts as large. O(1)."""
        self.serialised = documents is None or documents >= SERIALISED_DOCUMENTS

    def keep(
        self, df: DataFrame, totals: Sequence[Column] = (), columnar: bool = False
    ) -> DataFrame:
        """Materialise ``df`` for the stages that read it again, and (but for ``columnar``) cut
        its lineage: a table with a short plan. O(rows of ``df``) on the executors.

        Persisting alone would keep each stored table's whole plan inside the plans that read
        it; tables read twice by the next stage then make plans grow exponentially with the
        stages, and printing them for the UI exhausts the driver. The checkpointed rows are
        wrapped in a fresh DataFrame: a checkpoint keeps the size *estimate* of the plan it
        came from, and Spark estimates a join as the product of its inputs, so in iterative
        stages (components, center rounds) the estimate would square every round until its
        arithmetic alone exhausts the driver's memory. The fresh DataFrame reads the stored
        rows as Spark holds them (its internal rows): wrapped through ``javaRDD`` instead,
        every read of the table converted each row to a ``Row`` object and back in the JVM.

        With :attr:`serialised`, a local checkpoint keeps the rows serialised (pyspark's
        ``StorageLevel.MEMORY_AND_DISK``: a few byte arrays a partition, spilled to disk when
        memory is short), else as Spark's default for it, an object a row. At 10M documents
        the stored tables are millions of objects, which the JVM's collector traced again and
        again (55.8 of 475.6 s in pauses, full collections 29.3 s; about 16 s serialised); at
        1M, reading serialised rows back cost more than the collector saved (see
        :data:`SERIALISED_DOCUMENTS`).

        With ``columnar``, for a table whose plan is short and whose readers each take some of
        its columns (the read rows: their checks, IDs and texts; the signatures), the rows go
        to Spark's in-memory columnar cache instead (``DataFrame.persist``, memory and disk):
        a few buffers a column for each batch of rows, so no object a row for the collector,
        and a reader of some columns leaves the bytes of the others (the texts, the
        signatures) untouched, where a serialised row is read whole. The table keeps its own
        plan (a plan holding a cached one runs it from the cache), hence short plans only.
        With a reliable checkpoint (which survives the loss of an executor), a checkpoint.

        The rows are stored by the job that counts them (what an eager checkpoint does), and
        the count is kept: :meth:`rows` answers it without a Spark job of its own. ``totals``
        (aggregate columns over ``df``'s columns, e.g. ``F.sum("n")``) are computed by that
        same job, and :meth:`totals` answers them: a figure of a stored table then costs no
        job of its own either.
        """
        if columnar and self.checkpoint == "local":
            stored = fresh = df.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        else:
            stored, fresh = self._checkpointed(df)
        if totals:
            # The first job over the marked rows computes and stores them: this one.
            found = fresh.agg(F.count(F.lit(1)), *totals).first()
            count, fresh._neardup_totals = found[0], tuple(found[1:])
        else:
            count = stored.count()  # the job that computes and stores the rows
        # DataFrame.unpersist cannot reach the checkpointed rows under the fresh plan:
        # unpersist() frees them through this handle.
        fresh._neardup_stored = stored
        fresh._neardup_rows = int(count)
        self._held.append(fresh)
        return fresh

    def _checkpointed(self, df: DataFrame) -> tuple[Any, DataFrame]:
        """(the stored rows' RDD, a fresh DataFrame of them) of a checkpoint of ``df``, kept
        as :meth:`keep` says."""
        if self.checkpoint == "reliable":
            done = df.checkpoint(eager=False)
        else:
            level = StorageLevel.MEMORY_AND_DISK if self.serialised else None
            done = df.localCheckpoint(eager=False, storageLevel=level)
        if is_connect(self.spark):
            # The server holds the rows under a short plan of their own (a cached relation),
            # freed when the client lets go of the DataFrame: unpersist cannot reach them.
            done._neardup_cached = True
            return done, done
        jdf = done._jdf
        stored = jdf.queryExecution().logical().rdd()
        fresh = DataFrame(
            self.spark._jsparkSession.internalCreateDataFrame(stored, jdf.schema(), False),
            self.spark,
        )
        return stored, fresh

    @staticmethod
    def subset(stored: DataFrame, where: str, columns: Sequence[str], rows: int) -> DataFrame:
        """The ``columns`` of the rows of a table :meth:`keep` stored that meet ``where``, known
        to number ``rows`` (e.g. a total of that :meth:`keep`): read from the stored rows
        each time, without a copy stored or a job to count them. Valid while ``stored`` is.

        Example (needs a Spark session, so not run as a doctest)::

            links = storage.keep(df, totals=[F.sum(F.when(F.col("kind") == 0, 1))])
            star = storage.subset(links, "kind = 0", ["a", "b"], storage.totals(links)[0] or 0)
        """
        return Storage.counted(stored.where(where).select(*columns), rows)

    @staticmethod
    def counted(df: DataFrame, rows: int) -> DataFrame:
        """``df``, known to number ``rows`` (which :meth:`rows` then answers without a job).
        O(1).

        Example (needs a Spark session, so not run as a doctest)::

            reps = storage.counted(sig.join(copies, ["pos"], "left_anti"), n - n_copies)
        """
        df._neardup_rows = int(rows)
        return df

    @staticmethod
    def rows(df: DataFrame) -> int:
        """The number of rows of ``df``: counted when :meth:`keep` stored it (O(1), no Spark
        job), else by a Spark job (O(rows) on the executors)."""
        count = mark(df, "_neardup_rows")
        return df.count() if count is None else count

    @staticmethod
    def totals(df: DataFrame) -> tuple:
        """The ``totals`` :meth:`keep` computed as it stored ``df``, in order (None where an
        aggregate saw no rows). O(1)."""
        return df._neardup_totals

    def share(self, value: object) -> Broadcast | Shipped | None:
        """``value`` sent once to every executor (a Spark broadcast, read in tasks as
        ``.value``), freed when all the run's tables are released. O(size of ``value``) on the
        driver and once per executor. A Spark Connect session has no broadcast: ``value``
        travels inside the tasks that read it (a :class:`Shipped`), or, past
        :data:`SHIPPED_BYTES` pickled, is not sent: None, and the caller takes the way that
        joins rows instead.

        Example (needs a Spark session, so not run as a doctest)::

            table = storage.share(np.arange(10))
        """
        if is_connect(self.spark):
            packed = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            return Shipped(value) if len(packed) <= SHIPPED_BYTES else None
        shared = self.spark.sparkContext.broadcast(value)
        self._shared.append(shared)
        return shared

    def release(self, *frames: DataFrame, keep: Sequence[DataFrame] = ()) -> None:
        """Free the storage of ``frames`` (all held tables and broadcasts if none are named)
        except ``keep``. A released checkpoint cannot be read again, so only tables whose
        readers have been materialised are released."""
        if not frames:
            for shared in self._shared:
                shared.destroy()
            self._shared = []
        targets = list(frames) if frames else list(self._held)
        spared = {id(df) for df in keep}
        for df in targets:
            if id(df) in spared or not any(df is held for held in self._held):
                continue
            unpersist(df)
            self._held = [held for held in self._held if held is not df]


class Frames(Storage):
    """:class:`Storage` plus the joins and shuffles of one run, safe against hot keys.

    Args:
        spark, checkpoint: as for :class:`Storage`.
        partitions: partitions of every shuffle.
        skew_threshold: rows above which a key is hot and is split (>= 2).

    Attributes:
        skewed: whether any key can be hot (set by the run once it knows the number of rows:
            below ``skew_threshold`` rows in all, plain joins are taken).
        stats: the run's counters; ``split_keys`` counts the hot keys split.
        refetch: the task reading documents' texts back from their files (``pos, loc, span``
            -> ``pos, text``), when the run stores their places instead of their texts
            (:func:`~neardup.engines.spark.byte_ranges.fetched_texts_task`), else None.

    Example (needs a Spark session, so not run as a doctest)::

        frames = Frames(spark, "local", partitions=8, skew_threshold=20_000)
        joined = frames.lookup(rows, per_key, ["key"])
    """

    def __init__(
        self, spark: SparkSession, checkpoint: str, *, partitions: int, skew_threshold: int
    ):
        super().__init__(spark, checkpoint)
        self.P = partitions
        self.threshold = skew_threshold
        self.skewed = False
        self.stats: dict = {}
        self.refetch: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None

    def hot_keys(self, rows: DataFrame, keys: list[str], per_block: int) -> DataFrame:
        """Keys of ``rows`` holding more than ``skew_threshold`` rows, with ``_S``, the number of
        blocks of about ``per_block`` rows to cut each into.

        The table is small (at most rows / ``skew_threshold`` keys), so it is brought to the
        driver and handed back as a local table: a join with it then does not carry ``rows``'
        plan a second time. Kept as a plan, every skew-safe join would double the plan of its
        input, and plans nested through the stages would grow exponentially.
        """
        counts = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("_n"))
        hot = counts.where(F.col("_n") > self.threshold).select(
            *keys, F.ceil(F.col("_n") / F.lit(per_block)).cast("int").alias("_S")
        )
        return self.spark.createDataFrame(hot.collect(), hot.schema)

    def broadcasts(self, rows: int) -> bool:
        """Whether a table of at most ``rows`` rows is broadcast to the joins that read it, as
        :meth:`lookup` broadcasts a right-hand side (the other side then joined where it
        lies): in a run past the skew threshold, while ``rows`` is at most
        :data:`BROADCAST_ROWS`. A smaller run keeps a plain join, with no job for a
        broadcast. O(1)."""
        return self.skewed and rows <= BROADCAST_ROWS

    def broadcast_if_few(self, df: DataFrame, rows: int) -> DataFrame:
        """``df``, of at most ``rows`` rows, marked to be broadcast when :meth:`broadcasts`
        says so, else as it is. O(1).

        Example (needs a Spark session, so not run as a doctest)::

            nodes = nodes.join(frames.broadcast_if_few(labels, 2 * n_edges), ["pos"], "left")
        """
        return F.broadcast(df) if self.broadcasts(rows) else df

    @staticmethod
    def with_heads(others: DataFrame, key: str) -> DataFrame:
        """``key, pos`` of every member of a group that has members other than its head:
        ``others`` (``key, pos``: the members that are not their head, ``key`` the head's
        position) and each of those heads' own row (``pos`` = ``key``). A head with no row
        in ``others`` has none here. Cost: a distinct of the keys of ``others``.

        Example (needs a Spark session, so not run as a doctest)::

            members = Frames.with_heads(copies.select("rep", "pos"), "rep")
        """
        heads = others.select(key, F.col(key).alias("pos")).distinct()
        return others.select(key, "pos").unionByName(heads)

    def lookup(
        self,
        left: DataFrame,
        right: DataFrame,
        keys: list[str],
        how: str = "inner",
        right_rows: int | None = None,
    ) -> DataFrame:
        """``left`` joined with ``right`` (at most one row per key) on ``keys``, skew-safe.

        A key holding more than ``skew_threshold`` rows of ``left`` is salted: its rows get a
        salt in ``0..S-1`` (a hash of the row) and its right-hand row is repeated S times, so
        the key's rows spread over S tasks instead of one. No key can be hot below
        ``skew_threshold`` rows in all, so small inputs take a plain join. ``right_rows``: a bound on
        the rows of ``right`` the caller knows (e.g. the documents); at most
        :data:`BROADCAST_ROWS`, ``right`` is broadcast instead, and nothing is counted.
        """
        if not self.skewed:
            return left.join(right, keys, how)
        if right_rows is not None and self.broadcasts(right_rows):
            return left.join(F.broadcast(right), keys, how)
        return self._salted_join(left, right, keys, how, self.hot_keys(left, keys, self.threshold))

    def end_hot_keys(self, pairs: DataFrame) -> DataFrame:
        """The hot ends of ``pairs`` (``a, b, …``), as :meth:`lookup_ends` salts them: a local
        table of ``_end`` (0: ``a``, 1: ``b``), ``_key`` and ``_S``. One Spark job, whose
        result serves every lookup of the ends of ``pairs`` or of any subset of them."""
        ends = pairs.select(F.lit(0).alias("_end"), F.col("a").alias("_key")).unionByName(
            pairs.select(F.lit(1).alias("_end"), F.col("b").alias("_key"))
        )
        return self.hot_keys(ends, ["_end", "_key"], self.threshold)  # local: no job to split

    def lookup_ends(
        self,
        pairs: DataFrame,
        end_a: DataFrame,
        end_b: DataFrame,
        hot: DataFrame | None = None,
        rows: tuple[int | None, int | None] = (None, None),
        pair_rows: int | None = None,
    ) -> DataFrame:
        """``pairs`` (``a, b, …``) joined with ``end_a`` on ``a``, then with ``end_b`` on ``b``
        (each at most one row per key): the two skew-safe joins of :meth:`lookup`, whose hot
        keys at both ends are counted by one Spark job over ``pairs``, or given (``hot``, from
        :meth:`end_hot_keys` of a table holding ``pairs``' rows: a key counted too high is only
        salted more than it needs). ``rows``: bounds on the rows of ``end_a`` and ``end_b``
        the caller knows, as :meth:`lookup`'s ``right_rows``: an end of at most
        :data:`BROADCAST_ROWS` is broadcast, and needs no hot keys. Counting both ends' hot
        keys on ``pairs`` spares the second join's count a run of the first join.
        ``pair_rows``: a bound on the rows of ``pairs``; while it is at most
        :data:`BROADCAST_ROWS`, an end too large to broadcast is joined by broadcasting the
        pairs instead (each join keeps at most their number of rows): the end's rows are read
        where they are stored and none of them is shuffled (the IDs of 10M seed rows for
        931,701 pairs: two shuffles of 99.7 MB before)."""
        if not self.skewed:
            return pairs.join(end_a, ["a"]).join(end_b, ["b"])
        small = [bound is not None and self.broadcasts(bound) for bound in rows]
        broadcast_pairs = pair_rows is not None and self.broadcasts(pair_rows)
        if hot is None and not broadcast_pairs and not all(small):
            hot = self.end_hot_keys(pairs)
        joined = pairs
        for end, (key, table) in enumerate((("a", end_a), ("b", end_b))):
            if small[end]:
                joined = joined.join(F.broadcast(table), [key])
                continue
            if broadcast_pairs:
                joined = F.broadcast(joined).join(table, [key])
                continue
            hot_end = hot.where(F.col("_end") == end).select(F.col("_key").alias(key), "_S")
            joined = self._salted_join(joined, table, [key], "inner", hot_end)
        return joined

    def _salted_join(
        self, left: DataFrame, right: DataFrame, keys: list[str], how: str, hot: DataFrame
    ) -> DataFrame:
        """``left`` joined with ``right`` on ``keys``, the keys of ``hot`` (a local table of
        :meth:`hot_keys`) salted: see :meth:`lookup`."""
        hot = F.broadcast(hot)
        salt = F.pmod(F.xxhash64(*[F.col(f"`{c}`") for c in left.columns]), F.col("_S"))
        salted_left = (
            left.join(hot, keys, "left")
            .withColumn("_salt", F.when(F.col("_S").isNull(), F.lit(0)).otherwise(salt).cast("int"))
            .drop("_S")
        )
        salted_right = (
            right.join(hot, keys, "left")
            .withColumn(
                "_salt", F.explode(F.sequence(F.lit(0), F.coalesce(F.col("_S"), F.lit(1)) - 1))
            )
            .drop("_S")
        )
        return salted_left.join(salted_right, [*keys, "_salt"], how).drop("_salt")

    def earliest(self, df: DataFrame, keys: list[str], name: str) -> DataFrame:
        """Per key: the earliest row's ``pos`` (as ``name``) and the row count ``n``."""
        return df.groupBy(*keys).agg(
            F.min(F.struct("ts", "pos")).getField("pos").alias(name), F.count(F.lit(1)).alias("n")
        )

    def split_cells(self, rows: DataFrame, keys: list[str], salt_col: str) -> DataFrame:
        """Cells (lo, hi) of each key: one cell for ordinary keys; a hot key of m rows is cut
        into S = ceil(2m / skew_threshold) sub-blocks ``blk`` (by a hash of ``salt_col``) and each
        row goes to the S cells (min(blk, c), max(blk, c)), c = 0..S-1, so every pair of
        sub-blocks meets in exactly one cell of about ``skew_threshold`` rows."""
        if self.skewed:
            hot = self.hot_keys(rows, keys, max(1, self.threshold // 2))
            self.stats["split_keys"] = self.stats.get("split_keys", 0) + hot.count()
            rows = rows.join(F.broadcast(hot), keys, "left")
            rows = rows.withColumn("S", F.coalesce(F.col("_S"), F.lit(1))).drop("_S")
        else:
            rows = rows.withColumn("S", F.lit(1))
        salt = F.pmod(F.xxhash64(salt_col), F.col("S"))
        rows = rows.withColumn("blk", F.when(F.col("S") > 1, salt).otherwise(F.lit(0)).cast("int"))
        rows = rows.withColumn("c", F.explode(F.sequence(F.lit(0), F.col("S") - 1)))
        return (
            rows.withColumn("lo", F.least("blk", "c"))
            .withColumn("hi", F.greatest("blk", "c"))
            .drop("c")
        )

    def reduce(
        self, df: DataFrame, keys: list[str], order: list[str], task: ArrowTask, schema: str
    ) -> DataFrame:
        """Shuffle by ``keys``, sort each partition by keys and ``order``, run ``task`` on it
        (its output has Spark's DDL ``schema``). One shuffle of ``df``."""
        return (
            df.repartition(self.P, *keys)
            .sortWithinPartitions(*keys, *order)
            .mapInArrow(task, schema)
        )
