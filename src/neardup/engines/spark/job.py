"""The dedup job on Spark: :class:`SparkEngine` (the :class:`~neardup.engines.base.Engine`
protocol on Spark), its stages, and the entry point on files (:func:`run_dedup`); those on
DataFrames are in :mod:`neardup.engines.spark.dataframes`. The stages are described in
:mod:`neardup.engines.spark`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engines.base import Corpus, DedupRun, Outputs, Progress, pair_value_column
from neardup.engines.spark.byte_ranges import missing_local_file
from neardup.engines.spark.candidates import minhash_candidates, simhash_candidates
from neardup.engines.spark.driver_groups import (
    DEFAULT_GROUPS_LOCAL_MAX,
    Grouping,
    driver_groups,
)
from neardup.engines.spark.exact import earliest_by, representatives
from neardup.engines.spark.frames import (
    BROADCAST_POSITIONS,
    DEFAULT_SKEW_THRESHOLD,
    Frames,
    default_checkpoint,
    mark,
)
from neardup.engines.spark.groups import (
    DEFAULT_COMPONENTS_LOCAL_MAX,
    center,
    components,
    document_groups,
    group_counts,
)
from neardup.engines.spark.monitor import RunMonitor
from neardup.engines.spark.pairs import all_pairs, original_pairs
from neardup.engines.spark.partitions import (
    SHUFFLE_PARTITIONS,
    adaptive_chosen,
    default_parallelism,
    input_bytes,
    partitions_for,
    shuffle_partitions_chosen,
    sized_shuffles,
    without_adaptive,
)
from neardup.engines.spark.read import (
    STDIN_REFUSED,
    estimated_documents,
    read_documents_spark,
    read_fingerprints_spark,
    signs_while_reading,
)
from neardup.engines.spark.repair import listed_pairs, repaired_labels, unbounded_pairs
from neardup.engines.spark.result import SparkResult
from neardup.engines.spark.session import (
    DataFrame,
    F,
    SparkSession,
    memory_hint,
    require_pyspark,
    spark_session,
)
from neardup.engines.spark.tasks import (
    _signature_values,
    holds_band_hashes,
    sign_task,
    sign_task_schema,
    signature_names,
)
from neardup.engines.spark.verify import PairBounds, relate, with_shingle_sets
from neardup.engines.spark.write import single_file_format, write_originals, write_result
from neardup.io import ReadStats, check_outputs, output_set
from neardup.io.files import input_not_found
from neardup.settings import Settings

__all__ = ["DEFAULT_CENTER_LOCAL_MAX", "SparkEngine", "collects_groups", "run_dedup"]

DEFAULT_CENTER_LOCAL_MAX = 5_000
"""Components of at most this many representatives are solved by ``center`` inside one task."""


class SparkEngine:
    """Runs the dedup stages on a Spark session (see :mod:`neardup.engines.spark`): the
    :class:`~neardup.engines.base.Engine` protocol (:meth:`fingerprint`, :meth:`dedup`,
    :meth:`pairs`) and the job on DataFrames (:meth:`dedup_documents`,
    :meth:`dedup_fingerprints`).

    Args:
        spark: the session; None: :func:`~neardup.engines.spark.spark_session` on ``master``,
            started when the first run needs it (it takes seconds).
        master: the master of that session (``local[*]``, ``spark://HOST:7077``, ``yarn``).
        remote: instead of ``master``, the Spark Connect server (``sc://HOST:15002``) whose
            client that session is.
        partitions: partitions of every shuffle (default ``spark.sql.shuffle.partitions`` when
            set; else, on files, sized from their bytes); results do not depend on it.
        skew_threshold: rows above which a key is hot and is split (>= 2).
        center_local_max: largest component ``center`` solves inside one task; larger ones go
            through distributed rounds (>= 1).
        components_local_max: most verified edges whose connected components one task finds
            by union-find (about 64 bytes an edge); more go through distributed large-star /
            small-star rounds (>= 0; 0: always the rounds). Results do not depend on it.
        groups_local_max: most documents of a run writing its outputs to files
            (:meth:`dedup`, :meth:`pairs`; ``pairs="original"``) whose groups and PAIRS the
            driver makes from their collected columns
            (:mod:`~neardup.engines.spark.driver_groups`); more are grouped in Spark (>= 0; 0:
            always in Spark). Results do not depend on it.
        checkpoint: ``"local"`` (executors' storage; fast, not fault tolerant), ``"reliable"``
            (the checkpoint directory) or None (reliable when a checkpoint directory is set).

    Example (needs a Spark session, so not run as a doctest)::

        engine = SparkEngine(spark_session("local[2]"), partitions=4)
    """

    name = "spark"

    def __init__(
        self,
        spark: SparkSession | None = None,
        *,
        master: str | None = None,
        remote: str | None = None,
        partitions: int | None = None,
        skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
        center_local_max: int = DEFAULT_CENTER_LOCAL_MAX,
        components_local_max: int = DEFAULT_COMPONENTS_LOCAL_MAX,
        groups_local_max: int = DEFAULT_GROUPS_LOCAL_MAX,
        checkpoint: str | None = None,
    ):
        require_pyspark()
        if partitions is not None and partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if skew_threshold < 2:
            raise ValueError(f"skew_threshold must be >= 2, got {skew_threshold}")
        if center_local_max < 1:
            raise ValueError(f"center_local_max must be >= 1, got {center_local_max}")
        if components_local_max < 0:
            raise ValueError(f"components_local_max must be >= 0, got {components_local_max}")
        if groups_local_max < 0:
            raise ValueError(f"groups_local_max must be >= 0, got {groups_local_max}")
        if checkpoint not in (None, "local", "reliable"):
            raise ValueError(f"checkpoint must be 'local', 'reliable' or None, got {checkpoint!r}")
        self.master = master
        self.remote = remote
        self.skew_threshold = int(skew_threshold)
        self.center_local_max = int(center_local_max)
        self.components_local_max = int(components_local_max)
        self.groups_local_max = int(groups_local_max)
        self._spark = spark
        self._partitions = None if partitions is None else int(partitions)
        self._checkpoint = checkpoint
        self._sizing: tuple[int, int] | None = None  # (input bytes, cores) of a sized run

    @property
    def spark(self) -> SparkSession:
        """The session, started on :attr:`master` at the first use when none was given."""
        if self._spark is None:
            self._spark = spark_session(self.master, remote=self.remote)
        return self._spark

    def _start_for(self, paths: Sequence[str]) -> None:
        """Start the session, when none was given, for a run on the files ``paths``: a local
        session's JVM is set for the documents they are estimated to hold
        (:func:`~neardup.engines.spark.read.estimated_documents`,
        :func:`~neardup.engines.spark.session.local_java_options`). Before anything starts,
        stdin (``-``) is a ``ValueError`` and a local input that does not exist a
        ``FileNotFoundError``."""
        for path in map(str, paths):
            if path == "-":
                raise ValueError(STDIN_REFUSED)
            if missing_local_file(path):
                raise input_not_found(path)
        if self._spark is None:
            documents = None if self.remote else estimated_documents(paths)
            self._spark = spark_session(self.master, remote=self.remote, documents=documents)

    @property
    def partitions(self) -> int:
        """Partitions of every shuffle (given, or the session's
        ``spark.sql.shuffle.partitions``, which a run on files sizes from its input when nobody
        chose it: :func:`~neardup.engines.spark.partitions.partitions_for`)."""
        if self._partitions is not None:
            return self._partitions
        return int(self.spark.conf.get(SHUFFLE_PARTITIONS))

    def _sized_to(self, paths: Sequence[str]) -> AbstractContextManager:
        """The shuffles of a run on the files ``paths``: their partitions sized from the
        files' bytes unless given or set in the session, and adaptive execution off unless
        set in the session (:func:`~neardup.engines.spark.partitions.without_adaptive`)."""
        plan = ExitStack()
        if not adaptive_chosen(self.spark):
            plan.enter_context(without_adaptive(self.spark))
        if self._partitions is None and not shuffle_partitions_chosen(self.spark):
            cores = default_parallelism(self.spark)
            size = input_bytes(self.spark, paths)
            plan.enter_context(sized_shuffles(self.spark, partitions_for(size, cores)))
            self._sizing = (size, cores)
            plan.callback(setattr, self, "_sizing", None)
        return plan

    def _sized_by(self, documents: int) -> int:
        """The partitions of the run's shuffles after the read, which counted its
        ``documents``: sized again by them too when the run sizes its shuffles."""
        if self._sizing is not None:
            self.spark.conf.set(SHUFFLE_PARTITIONS, str(partitions_for(*self._sizing, documents)))
        return self.partitions

    @property
    def checkpoint_mode(self) -> str:
        """``"local"`` or ``"reliable"`` (given, or reliable when the session has a checkpoint
        directory)."""
        if self._checkpoint is None:
            self._checkpoint = default_checkpoint(self.spark)
        return self._checkpoint

    def fingerprint(self, texts: Sequence[str], settings: Settings) -> np.ndarray:
        """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]) of
        ``texts``, in order, signed in Spark tasks by the local engine's kernels. Cost: the
        signing spread over the cluster, plus sending the texts from the driver and the
        signatures back.

        Example (needs a Spark session, so not run as a doctest)::

            SparkEngine(master="local[2]").fingerprint(["a b c d"], Settings(method="simhash"))
        """
        docs = self.spark.createDataFrame(list(enumerate(texts)), "pos long, text string")
        signed = docs.select("pos", F.lit(0).cast("long").alias("ts"), "text").mapInArrow(
            partial(sign_task, settings=settings), sign_task_schema(settings)
        )
        values = [row.sig for row in signed.orderBy("pos").select("sig").toLocalIterator()]
        kind = pa.int64() if settings.method == "simhash" else pa.binary()
        return _signature_values(pa.array(values, type=kind), settings)

    def dedup(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """``neardup dedup --engine spark``: read the files of ``corpus`` (on any file system
        Spark reads), dedup them and write GROUPS, PAIRS and the originals' rows (see
        :meth:`neardup.engines.base.Engine.dedup`). Outputs naming a file (``.tsv``, ``.csv``,
        ``.jsonl``, ``.parquet``) are written as the local engine writes them; any other path
        becomes a directory written by Spark (:func:`~neardup.engines.spark.write_output`).

        Example (needs a Spark session, so not run as a doctest)::

            SparkEngine(master="local[2]").dedup(Corpus(("docs.jsonl",), {"time_field": "ts"}),
                                                 Settings(), Outputs(groups="groups.tsv"))
        """
        if outputs.report:
            raise ValueError(
                "--report works with the local engine; with --engine spark, run "
                "`neardup report` on the written GROUPS and PAIRS files"
            )
        if corpus.table is not None:
            raise ValueError(
                "the Spark engine reads files; a table in memory goes to Spark as "
                "a DataFrame, through dedup_dataframe"
            )
        # Spark writes GROUPS, PAIRS and the originals on any file system it reaches, and
        # checks them itself; only the files the caller writes beside them are local.
        check_outputs(outputs.beside, corpus.inputs)
        (progress or Progress()).stage("running on Spark")
        self._start_for(corpus.inputs)
        with (
            memory_hint(),
            self._sized_to(corpus.inputs),
            RunMonitor(self.spark, progress) as monitor,
        ):
            clock = time.perf_counter()
            monitor.tag("read")
            fmt = corpus.reading.get("input_format")
            signed = signs_while_reading(self.spark, corpus.inputs, fmt)
            reading = dict(
                corpus.reading, sign=settings if signed else None, records=bool(outputs.keep)
            )
            docs, read_stats, raw = read_documents_spark(self.spark, corpus.inputs, **reading)
            read_seconds = time.perf_counter() - clock
            partitions = self._sized_by(read_stats.documents)
            collect = collects_groups(settings, outputs)
            result = self._run(
                settings, lambda job: job.run_texts(docs, signed), monitor, collect=collect
            )
            result.hold([docs])
            clock = time.perf_counter()
            monitor.tag("write")
            try:
                # The files written from the driver are renamed into place together, as the
                # local engine's; directories that Spark's executors write are not held back.
                with output_set():
                    write_result(result, settings, outputs.groups, outputs.pairs)
                    if outputs.keep:
                        originals = raw.join(
                            result.groups.where("is_original").select("pos"), ["pos"], "left_semi"
                        )
                        write_originals(originals, outputs.keep)
            finally:
                result.release()
        seconds = {"read": read_seconds, **result.stats["seconds"]}
        result.stats["seconds"] = seconds | {"write": time.perf_counter() - clock}
        return DedupRun(read_stats, result.stats, figures=monitor.figures(partitions))

    def pairs(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """``neardup pairs --engine spark``: PAIRS (and GROUPS) of the precomputed fingerprints
        in the files of ``corpus`` (see :meth:`neardup.engines.base.Engine.pairs`), written as
        :meth:`dedup` writes them.

        Example (needs a Spark session, so not run as a doctest)::

            SparkEngine(master="local[2]").pairs(Corpus(("fps.tsv",)), Settings(method="simhash"),
                                                 Outputs(pairs="pairs.tsv"))
        """
        check_outputs([outputs.pairs, outputs.groups, *outputs.beside], corpus.inputs)
        self._start_for(corpus.inputs)
        with (
            memory_hint(),
            self._sized_to(corpus.inputs),
            RunMonitor(self.spark, progress) as monitor,
        ):
            monitor.tag("read")
            rows, stats = read_fingerprints_spark(self.spark, corpus.inputs, **corpus.reading)
            partitions = self._sized_by(stats.documents)
            result = self._run(
                settings,
                lambda job: job.run_fingerprints(rows),
                monitor,
                groups=outputs.groups is not None,
                collect=collects_groups(settings, outputs),
            )
            result.hold([rows])
            monitor.tag("write")
            try:
                with output_set():  # as in dedup
                    write_result(result, settings, outputs.groups, outputs.pairs)
            finally:
                result.release()
        return DedupRun(stats, result.stats, figures=monitor.figures(partitions))

    def dedup_documents(self, docs: DataFrame, settings: Settings) -> SparkResult:
        """The whole job on ``docs`` (columns ``pos`` long unique, ``text`` string, ``ts`` long
        ordering key, ``id`` string)."""
        return self._run(settings, lambda job: job.run_texts(docs))

    def dedup_fingerprints(self, rows: DataFrame, settings: Settings) -> SparkResult:
        """The job on precomputed SimHash fingerprints (``pos``, ``id``, ``fp`` long holding the
        uint64 bits, ``ts``): identical fingerprints play the part of identical contents, as in
        ``neardup pairs``."""
        if settings.method != "simhash" or settings.verify is not None:
            raise ValueError("fingerprint rows need method='simhash' and verify=None")
        return self._run(settings, lambda job: job.run_fingerprints(rows))

    def _run(
        self,
        settings: Settings,
        stages: Callable[[_Job], SparkResult],
        monitor: RunMonitor | None = None,
        groups: bool = True,
        collect: bool = False,
    ) -> SparkResult:
        job = _Job(self, settings, monitor, groups, collect)
        try:
            return stages(job)
        finally:
            job.tag(None)  # the caller's Spark jobs are not the run's


class _Job(Frames):
    """One run: the stages as methods, sharing the settings, counters and tuning. ``groups``:
    whether its GROUPS are read (a run of ``pairs="all"`` that writes none only counts its
    groups, and its result's ``groups`` is None). ``collect``: whether its groups and PAIRS
    may be made on the driver (:func:`collects_groups`), which they are up to the engine's
    ``groups_local_max`` documents (the result then holds them, not DataFrames)."""

    def __init__(
        self,
        engine: SparkEngine,
        settings: Settings,
        monitor: RunMonitor | None = None,
        groups: bool = True,
        collect: bool = False,
    ):
        super().__init__(
            engine.spark,
            engine.checkpoint_mode,
            partitions=engine.partitions,
            skew_threshold=engine.skew_threshold,
        )
        self.engine = engine
        self.settings = settings
        self.groups_read = groups
        self.collect = collect
        #: Whether stages 5 and 6 run on the driver (``collect``, few enough documents).
        self.on_driver = False
        #: The repair round's pairs, when the driver repairs the components (see verify).
        self.repair_rest: DataFrame | None = None
        self.monitor = monitor or RunMonitor(engine.spark)
        self.stats["seconds"] = {}
        self._clock = time.perf_counter()
        #: ``pos, size, sketch`` of every document (LCS verification of texts), else None.
        self.sketches: DataFrame | None = None
        #: ``a, b, value`` of the candidates verification accepted, when it measured them.
        self.measured: DataFrame | None = None
        #: The LCS bounds of the candidates (with sketches), made with the candidates.
        self.bound: PairBounds | None = None
        #: Whether the candidates and listed pairs were bounded as they were made distinct.
        self.links_bounded = False
        #: Whether the documents' times differ (else the band rows leave them out).
        self.timed = True
        #: ``pos, ts`` of every representative (the components' nodes), set by stage 2.
        self.nodes: DataFrame | None = None
        #: Whether the contents are the fingerprints (so the representatives' all differ).
        self.fingerprint_rows = False

    # ------------------------------------------------------------------ plumbing

    def lap(self, name: str) -> None:
        """Record the seconds of stage ``name``; tag the next Spark jobs with the next stage."""
        now = time.perf_counter()
        self.stats["seconds"][name] = now - self._clock
        self._clock = now
        following = {
            "signatures": "exact_duplicates",
            "exact_duplicates": "candidates",
            "candidates": "verify",
            "verify": "groups",
            "groups": "pairs",
        }.get(name)
        self.tag(following)

    def tag(self, stage: str | None) -> None:
        """Spark jobs started from now on belong to job group ``neardup:<stage>`` (None: the
        caller's group again), so the UI, the REST API and the run's monitor see the work and
        shuffles per stage."""
        self.monitor.tag(stage)

    # ------------------------------------------------------------------ the stages

    def run_texts(self, docs: DataFrame, signed: bool = False) -> SparkResult:
        """Stage 1 on documents (``pos, id, text, ts``), then the other stages; ``signed``: they
        hold their signature columns too (``read_documents_spark``'s ``sign``), only counted."""
        s, bounded = self.settings, self.settings.lcs_bounded
        self.tag("signatures")
        self.size_for(mark(docs, "_neardup_rows"))  # counted by neardup's readers
        signature = signature_names(bounded) if signed else ()
        refetch = mark(docs, "_neardup_refetch")
        places = ("loc", "span") if refetch else ()  # where texts are read back, not stored
        typed = {"pos": "long", "id": "string", "text": "string", "ts": "long"}
        docs = docs.select(*[F.col(c).cast(t) for c, t in typed.items()], *signature, *places)
        totals = [F.sum(F.col("empty").cast("long")), F.min("ts"), F.max("ts")]
        if signed:
            # Read from the stored documents' columns (not their texts), no copy of its own.
            sig = docs.select("pos", "ts", *signature)
            n, *found = sig.agg(F.count(F.lit(1)), *totals).first()
        else:
            signing = partial(sign_task, settings=s, bounds=bounded, banded=holds_band_hashes(s))
            sig = docs.select("pos", "ts", "text").mapInArrow(signing, sign_task_schema(s, bounded))
            sig = self.keep(sig, totals=totals, columnar=True)
            n, found = self.rows(sig), self.totals(sig)
        self.stats["documents"] = n
        empty, first, last = found
        self.stats["empty_documents"] = int(empty or 0)
        self.timed = first != last
        self.skewed = n > self.threshold
        ids = self.keep(docs.select("pos", "id"))  # read 5 times: apart from the texts
        self.lap("signatures")
        self.texts, self.refetch = docs.select("pos", *(places or ("text",))), refetch
        if bounded:
            self.sketches = sig.select("pos", "size", "sketch")
        return self.run(ids, sig)

    def run_fingerprints(self, rows: DataFrame) -> SparkResult:
        """The stages on fingerprint rows (``pos, id, fp, ts``): the fingerprint is both the
        content and the signature."""
        self.tag("signatures")
        self.fingerprint_rows = True
        rows = rows.select(
            F.col("pos").cast("long"),
            F.col("id").cast("string"),
            F.col("fp").cast("long"),
            F.col("ts").cast("long"),
        )
        n = rows.count()
        self.stats["documents"] = n
        self.skewed = n > self.threshold
        self.size_for(n)
        sig = rows.select(
            "pos",
            "ts",
            F.col("fp").alias("c0"),
            F.lit(0).cast("long").alias("c1"),
            F.col("fp").alias("sig"),
            F.lit(False).alias("empty"),
        )
        self.stats["empty_documents"] = 0
        self.lap("signatures")
        return self.run(rows.select("pos", "id"), sig)

    def run(self, ids: DataFrame, sig: DataFrame) -> SparkResult:
        """Stages 2 to 6 on the documents' signatures ``sig`` (``pos, ts, c0, c1, sig``); ``ids``
        (``pos, id``) names the documents in the results."""
        self.on_driver = self.collect and self.stats["documents"] <= self.engine.groups_local_max
        content, docrep, reps = self.exact_duplicates(sig)
        cand, fp_pairs, fp_rep = self.candidates(reps)
        edges, n_edges, labels = self.verify(reps, cand, content)
        if self.on_driver:
            ids_and_groups = driver_groups(
                self,
                self.settings,
                ids,
                docrep,
                self.grouping(edges, n_edges, labels),
                self.data,
                self.measured,
                timed=self.timed,
                lap=self.lap,
            )
            self.release()
            return SparkResult(None, None, self.stats, ("pos_b",), collected=ids_and_groups)
        doc_orig, per_orig, groups = self.groups(ids, docrep, edges, n_edges, labels)
        stored_pairs, pairs, order = self.pairs(
            ids, doc_orig, per_orig, docrep, reps, fp_pairs, fp_rep
        )
        # Everything but the tables the results read has been consumed.
        self.release(keep=(ids, doc_orig, per_orig, stored_pairs))
        return SparkResult(groups, pairs, self.stats, order, self.release)

    def exact_duplicates(self, sig: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
        """Stage 2: every document points to the earliest document with its content, its
        representative. Returns the heads of the contents held by more than one document
        (``rep``, once for each other document holding the content), every document's ``pos,
        ts, rep`` (:func:`~neardup.engines.spark.exact.representatives`) and the
        representatives' ``pos, ts, c0, c1, sig``."""
        n = self.stats["documents"]
        docrep = self.keep(
            representatives(self, sig),
            totals=[F.sum((F.col("rep") != F.col("pos")).cast("long"))],
        )
        # The copies; the heads of contents held more than once (repeated: read as distinct).
        copied = docrep.where("rep != pos")
        copies, content = copied.select("pos"), copied.select("rep")
        self.stats["exact_duplicates"] = n_copies = int(self.totals(docrep)[0] or 0)
        # Fitting a broadcast, the signatures stay where they were stored: each reader takes
        # the representatives' rows from them (a stored copy: 4.8 GB, 24 s at 10M).
        fits = n_copies <= BROADCAST_POSITIONS
        reps = sig.join(F.broadcast(copies) if fits else copies, ["pos"], "left_anti")
        reps = reps.select("pos", "ts", "c0", "c1", "sig")
        reps = self.counted(reps, n - n_copies) if fits else self.keep(reps)
        self.data = reps.select("pos", "sig")
        # From docrep's 24-byte rows, not from the signature rows under reps (hundreds of bytes).
        self.nodes = docrep.where("rep = pos").select("pos", "ts")
        self.lap("exact_duplicates")
        return content, docrep, reps

    def candidates(self, reps: DataFrame) -> tuple[DataFrame, DataFrame | None, DataFrame | None]:
        """Stage 3: candidate pairs ``(a, b)`` among the representatives, and for SimHash the
        pairs of distinct fingerprints and each representative's fingerprint node, which
        ``pairs="all"`` reads again (see :mod:`neardup.engines.spark.candidates`)."""
        s = self.settings
        self.listed = None
        if self.sketches is not None:
            self.bound = PairBounds(self, self.sketches, s.verify)
        if s.method == "simhash":
            cand, fp_pairs, fp_rep = simhash_candidates(
                self, reps, s.hamming_k, distinct=self.fingerprint_rows
            )
            self.stats["candidates"] = self.rows(cand)
        else:
            # The local engine's first tests, on the 136 bytes a document the first pass made,
            # where the links are made distinct while their table is broadcast: most candidates
            # stop there and are never stored. Not with pairs="all", which measures every
            # candidate again.
            self.links_bounded = (
                self.bound is not None and self.bound.shared is not None and s.pairs != "all"
            )
            bounds = self.bound if self.links_bounded else None
            cand, links = minhash_candidates(self, reps, s, bounds, self.timed)
            fp_pairs = fp_rep = None
            # The pairs of each bucket's other members, for the repair round (as the local
            # engine, which runs it when there are representatives).
            if self.stats["documents"] > self.stats["exact_duplicates"]:
                self.listed, self.stats["repair_unlisted"] = listed_pairs(self, links)
            # The candidates and the listed pairs are read from the stored links, which stay
            # until the run's end.
            stars = self.totals(links)[3]
            self.stats["candidates"] = int(stars or 0) if self.links_bounded else self.rows(cand)
        self.lap("candidates")
        return cand, fp_pairs, fp_rep

    def verify(
        self, reps: DataFrame, cand: DataFrame, content: DataFrame
    ) -> tuple[DataFrame, int, DataFrame | None]:
        """Stage 4: the candidate pairs the run's relation accepts, and their number; with the
        repair round (MinHash), the components of those pairs joined by the pairs it accepts
        (``pos, ts, label`` of the representatives), else None."""
        s = self.settings
        # The local engine's first tests, on the 136 bytes a document the first pass made: most
        # candidates stop here, before any unit is built (or stopped as they were made).
        bound = self.bound
        rest = None
        if self.listed is not None and self.links_bounded:  # bounded, the star links cut
            rest = self.subset(self.listed, "NOT star", ["a", "b"], self.rows(self.listed))
        elif self.listed is not None:  # before the bounds below, which drop star candidates
            rest = unbounded_pairs(self, bound, self.listed)
        compared = [cand]  # every bucket pair of PAIRS "all" has its ends among them
        if bound is not None:
            if not self.links_bounded:
                cand = self.keep(bound(cand))
            elif not bound.exact:  # bounded by coarse sketches: both sets cut to the bounds'
                cand, rest = bound.refined(cand, rest)
            self.stats["bounded"] = self.stats["candidates"] - self.rows(cand)
            if s.pairs != "all":
                compared = [cand] if rest is None else [cand, rest]
        if s.needs_sets:
            self.data = with_shingle_sets(self, self.texts, reps, compared, content, s)
        if s.method == "minhash" or s.verify is not None:
            n_pairs = self.stats["candidates"] - self.stats.get("bounded", 0)
            checked = self.keep(
                relate(self, self.data, cand, ["a", "b"], s, 2 * n_pairs, exact=False),
                totals=[F.sum(F.col("ok").cast("long"))],
            )
            edges = checked.where("ok").select("a", "b")
            self.measured = checked.where("ok").select("a", "b", "value")
            n_edges = int(self.totals(checked)[0] or 0)
        else:
            edges, n_edges = cand, self.stats["candidates"]
        self.stats["rejected"] = self.stats["candidates"] - n_edges
        self.stats["linked_untested"] = 0  # every candidate is verified
        labels = None
        if self.listed is not None and self.on_driver and s.grouping == "components":
            self.repair_rest = rest  # the driver finds the components and repairs them
        elif self.listed is not None:
            labels = self.components(edges, n_edges)
            labels, repair = repaired_labels(self, self.data, rest, labels, s)
            self.stats.update(repair)
        self.lap("verify")
        return edges, n_edges, labels

    def components(self, edges: DataFrame, n_edges: int) -> DataFrame:
        """``pos, ts, label`` of every representative: the connected components of ``edges``."""
        return components(self, edges, self.nodes, n_edges, self.engine.components_local_max)

    def grouping(self, edges: DataFrame, n_edges: int, labels: DataFrame | None) -> Grouping:
        """What makes each representative's original on the driver (see
        :func:`~neardup.engines.spark.driver_groups.driver_groups`): the ``center`` rule's
        originals (from the components ``labels``, made here when verification did not), else
        the ``edges`` and the repair round's pairs, which verification left to the driver."""
        if self.settings.grouping == "center":
            if labels is None:
                labels = self.components(edges, n_edges)
            centers = center(self, labels, self.data, self.settings, self.engine.center_local_max)
            return Grouping("originals", centers.select("pos", F.col("center").alias("orig")))
        return Grouping("edges", edges, self.repair_rest)

    def groups(
        self,
        ids: DataFrame,
        docrep: DataFrame,
        edges: DataFrame,
        n_edges: int,
        labels: DataFrame | None,
    ) -> tuple[DataFrame, DataFrame, DataFrame]:
        """Stage 5: groups over the representatives (the components ``labels`` when given,
        else those of ``edges``), then every document takes its representative's original
        (:func:`~neardup.engines.spark.groups.document_groups`). Returns every document's
        ``pos, rep, orig``, each group of two documents or more as ``orig, group_size,
        original_id``, and GROUPS; all three None when only the counts are needed: a run
        whose GROUPS are not read and whose PAIRS (``pairs="all"``) need no original
        (:func:`~neardup.engines.spark.groups.group_counts`)."""
        s = self.settings
        unread = not self.groups_read and s.pairs == "all" and s.grouping == "components"
        if unread and labels is None:
            group_counts(self, docrep, edges, n_edges, self.engine.components_local_max)
            self.lap("groups")
            return None, None, None
        if labels is None:
            labels = self.components(edges, n_edges)
        if s.grouping == "center":
            centers = center(self, labels, self.data, self.settings, self.engine.center_local_max)
            rep_orig = centers.select(F.col("pos").alias("rep"), F.col("center").alias("orig"))
        elif self.timed:  # each representative to its component's earliest member
            rep_orig = earliest_by(self, labels, "label").select(
                F.col("pos").alias("rep"), F.col("rep").alias("orig")
            )
        else:  # one time for all: the earliest member is the smallest position, the label
            rep_orig = labels.select(F.col("pos").alias("rep"), F.col("label").alias("orig"))
        doc_orig, per_orig, groups = document_groups(self, ids, docrep, rep_orig)
        self.lap("groups")
        return doc_orig, per_orig, groups

    def pairs(
        self,
        ids: DataFrame,
        doc_orig: DataFrame,
        per_orig: DataFrame,
        docrep: DataFrame,
        reps: DataFrame,
        fp_pairs: DataFrame | None,
        fp_rep: DataFrame | None,
    ) -> tuple[DataFrame, DataFrame, tuple[str, ...]]:
        """Stage 6: PAIRS with the documents' IDs (an original's from ``per_orig``, the groups of
        two documents or more, with ``pairs="original"``). Returns the stored pairs they are
        read from, PAIRS, and the columns PAIRS is sorted by in the local engine's output."""
        s = self.settings
        name = pair_value_column(s.method)
        n = self.stats["documents"]
        if s.pairs == "original":  # each pair's first end is the original of a larger group
            pairs = original_pairs(self, self.data, doc_orig, s, self.measured)
            order = ("pos_b",)
            id_a = per_orig.select(F.col("orig").alias("a"), F.col("original_id").alias("id_a"))
            rows_a = self.rows(per_orig)
        else:
            pairs = all_pairs(self, self.data, docrep, reps, fp_pairs, fp_rep, s)
            order = ("pos_a", "pos_b")
            id_a = ids.select(F.col("pos").alias("a"), F.col("id").alias("id_a"))
            rows_a = n
        stored = self.keep(pairs)
        self.stats["pairs"] = self.rows(stored)
        id_b = ids.select(F.col("pos").alias("b"), F.col("id").alias("id_b"))
        ends = stored.withColumnsRenamed({"pos_a": "a", "pos_b": "b"})
        n_pairs = self.stats["pairs"]
        named = self.lookup_ends(ends, id_a, id_b, rows=(rows_a, n), pair_rows=n_pairs).select(
            F.col("a").alias("pos_a"),
            F.col("b").alias("pos_b"),
            "id_a",
            "id_b",
            F.col("value").alias(name),
            "passed",
        )
        self.lap("pairs")
        return stored, named, order


def collects_groups(settings: Settings, outputs: Outputs) -> bool:
    """Whether a run's groups and PAIRS may be made on the driver: it writes each of GROUPS
    and PAIRS to one file (the local writers'), no originals, and ``pairs="original"``. O(1).

    Example:
        >>> collects_groups(Settings(), Outputs(groups="groups.tsv"))
        True
        >>> collects_groups(Settings(), Outputs(groups="out/groups"))
        False
    """
    written = [path for path in (outputs.groups, outputs.pairs) if path is not None]
    return (
        settings.pairs == "original"
        and not outputs.keep
        and all(single_file_format(path) is not None for path in written)
    )


def run_dedup(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    settings: Settings,
    *,
    pairs_out: str | None = None,
    keep: str | None = None,
    partitions: int | None = None,
    **read_options: Any,
) -> tuple[DedupRun, ReadStats]:
    """:meth:`SparkEngine.dedup` on a session you hold: GROUPS to ``output`` (and PAIRS,
    originals); ``read_options`` are those of :func:`read_documents_spark` (``id_field``,
    ``text_field``, ``time_field``, ``input_format``, ``on_error``, ``max_doc_bytes``). Returns
    the run (its ``stats``: counts and seconds per stage) and the read counters.

    Example (needs a Spark session, so not run as a doctest)::

        run_dedup(spark, ["docs.jsonl"], "groups.tsv", Settings(), time_field="ts")
    """
    run = SparkEngine(spark, partitions=partitions).dedup(
        Corpus(tuple(inputs), read_options),
        settings,
        Outputs(groups=output, pairs=pairs_out, keep=keep),
    )
    return run, run.read
