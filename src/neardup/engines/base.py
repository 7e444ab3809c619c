"""What every engine does and writes: the :class:`Engine` protocol, the columns of GROUPS and
PAIRS, and the plain values a run is given (:class:`Corpus`, :class:`Outputs`,
:class:`EngineOptions`) and gives back (:class:`DedupRun`).

An engine runs the pipeline over a corpus: ``local`` (:mod:`neardup.engines.local`, the cores of
this machine) or ``spark`` (:mod:`neardup.engines.spark`, Apache Spark). The command line and the
Python API find one by its name (:func:`neardup.engines.engine_named`) and call it only through
this protocol; every engine writes the columns defined here, so a corpus and its settings give
the same bytes whichever engine runs them (``tests/test_spark.py`` compares them).

Example:
    >>> GROUP_COLUMNS
    ('id', 'duplicate_id', 'original_id', 'is_original', 'group_size')
    >>> pair_columns("minhash")
    ('id_a', 'id_b', 'similarity', 'passed')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from neardup.io import ReadStats, check_outputs
from neardup.settings import Settings

#: The columns of GROUPS, in order: one row per document read, in input order, naming the
#: document, its group's duplicate ID (the ID of the group's original), that original again,
#: whether the document is its group's original, and how many documents the group holds.
GROUP_COLUMNS = ("id", "duplicate_id", "original_id", "is_original", "group_size")


def pair_value_column(method: str) -> str:
    """The column of PAIRS that holds a pair's value: SimHash's Hamming ``distance`` (bits),
    MinHash's ``similarity`` (the verified measure, else the estimate). O(1).

    Example:
        >>> pair_value_column("simhash"), pair_value_column("minhash")
        ('distance', 'similarity')
    """
    return "distance" if method == "simhash" else "similarity"


def pair_columns(method: str) -> tuple[str, str, str, str]:
    """The columns of PAIRS, in order, for a run of ``method``: the two documents' IDs, the
    pair's value (:func:`pair_value_column`) and ``passed``, whether the pair itself meets the
    run's rule (a member of a group of ``components`` may reach its original only through other
    members). O(1).

    Example:
        >>> pair_columns("simhash")
        ('id_a', 'id_b', 'distance', 'passed')
    """
    return ("id_a", "id_b", pair_value_column(method), "passed")


class EngineUnavailable(ImportError):
    """An engine that cannot run here: an optional dependency of it is missing; the message
    says how to install it.

    Example:
        >>> str(EngineUnavailable("the Spark engine needs pyspark: pip install 'neardup[spark]'"))
        "the Spark engine needs pyspark: pip install 'neardup[spark]'"
    """


class EngineMemoryError(MemoryError):
    """An engine's run ran out of the memory its runtime was given (e.g. a Spark driver's or
    executor's Java heap); the message says which and what to configure.

    Example:
        >>> str(EngineMemoryError("Spark ran out of memory (Java heap space): ..."))
        'Spark ran out of memory (Java heap space): ...'
    """


class Progress:
    """What an engine tells a progress display while it runs; this one shows nothing.

    Example:
        >>> Progress().stage("reading", 1_000, "B")
    """

    def stage(self, name: str, total: int | None = None, unit: str = "docs") -> None:
        """A new stage starts; ``total`` in ``unit`` (``"B"``, ``"docs"``, ``"pairs"``) when
        known."""

    def advance(self, amount: int, docs: int | None = None, spilled: int | None = None) -> None:
        """``amount`` more ``unit`` of the current stage are done (``docs`` read and bytes
        ``spilled`` to disk so far, when known)."""


@dataclass(frozen=True)
class Corpus:
    """What a run reads: input files, or a table already in memory.

    Attributes:
        inputs: files, directories or globs (``-``: standard input). Documents for
            :meth:`Engine.dedup`, read as :func:`neardup.io.read_documents` reads them (Spark: on
            any file system it reads); fingerprint rows for :meth:`Engine.pairs`, read as
            :func:`neardup.io.read_fingerprints` reads them.
        reading: that reader's keywords: ``id_field``, ``text_field``, ``time_field``,
            ``input_format``, ``on_error``, ``max_doc_bytes`` for documents; ``on_error`` and
            ``fingerprint_format`` for fingerprints.
        table: instead of ``inputs``, documents in a pandas DataFrame, an Arrow table or a
            mapping of columns, read as :func:`neardup.io.read_table` reads them (``reading``:
            its keywords). A table is in memory already, so the local engine keeps the run there.

    Example:
        >>> Corpus(("docs.jsonl",), {"time_field": "ts"}).inputs
        ('docs.jsonl',)
    """

    inputs: tuple[str, ...] = ()
    reading: Mapping[str, Any] = field(default_factory=dict)
    table: Any = None


@dataclass(frozen=True)
class Outputs:
    """Where a run writes; None: not written.

    Attributes:
        groups: GROUPS (:data:`GROUP_COLUMNS`).
        pairs: PAIRS (:func:`pair_columns`).
        keep: the originals' input rows, all their fields (the deduplicated corpus).
        report: the self-contained HTML report of the run (:mod:`neardup.report`).
        beside: files the caller writes next to these (a summary): checked with them before any
            work, so that none overwrites an input and no path is given twice.

    Example:
        >>> Outputs(groups="groups.tsv", beside=("summary.json",)).groups
        'groups.tsv'
    """

    groups: str | None = None
    pairs: str | None = None
    keep: str | None = None
    report: str | None = None
    beside: tuple[str | None, ...] = ()

    def check(self, inputs: Sequence[str]) -> None:
        """:func:`neardup.io.check_outputs` of every output, GROUPS, PAIRS and the kept rows
        as tables whose names must tell their formats: what the local engine writes (Spark
        writes a Parquet directory where a name has no extension). Called before any work.
        O(number of paths + files in their folders).

        Example:
            >>> Outputs(groups="groups.out").check([])  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: cannot tell the output format of groups.out from its extension: ...
        """
        check_outputs(
            [self.report, *self.beside], inputs, tables=[self.groups, self.pairs, self.keep]
        )


@dataclass
class DedupRun:
    """What a run reports once its outputs are written.

    Attributes:
        read: the read's counters (documents, bytes, skipped rows and why).
        stats: the groups' counters, named as :class:`neardup.pipeline.Groups` names them
            (``exact_duplicates``, ``candidates``, ``rejected``, ``pairs``, ``groups``,
            ``largest_group``, ``duplicates_removed``, ``empty_documents``, and ``seconds`` of
            each stage).
        groups: GROUPS' columns (:data:`GROUP_COLUMNS`) when the engine holds them in memory
            (the local engine's run over a table); None when they are only written (Spark, and
            the local engine over files, which writes them a piece at a time).
        read_seconds: seconds spent reading and signing, when the engine measures them apart.
        figures: the engine's own figures for a summary, by label (``"spilled MB"`` …).
        resolved: engine options as the run resolved them (``memory_limit`` in bytes).

    Example:
        >>> DedupRun(ReadStats(documents=3), {"groups": 2}).stats["groups"]
        2
    """

    read: ReadStats
    stats: dict
    groups: dict | None = None
    read_seconds: float | None = None
    figures: dict[str, float] = field(default_factory=dict)
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EngineOptions:
    """How an engine runs, beside the run's :class:`~neardup.settings.Settings` (which decide
    what it finds). Each engine takes what applies to it and refuses what contradicts it.

    Attributes:
        workers: the local engine's threads (None or 0: all cores).
        memory_limit: the local engine's memory for a run's data: bytes, or ``"4G"``,
            ``"512M"``, ``"40%"`` (of RAM); None: :func:`neardup.engines.spill.parse_memory_limit`'s
            default.
        tmp_dir: the local engine's folder for spill files (None: the system's temp dir).
        resume: the local engine keeps completed stages in ``tmp_dir`` and continues from them.
        spark_master: the Spark engine's master (``local[*]``, ``spark://HOST:7077``, ``yarn``;
            None: the running session's or ``local[*]``).
        spark_remote: the Spark engine's Spark Connect server (``sc://HOST:15002``), instead of
            a master: the run is a client of that server's session.

    Example:
        >>> EngineOptions(workers=2).memory_limit is None
        True
    """

    workers: int | None = None
    memory_limit: str | int | None = None
    tmp_dir: str | None = None
    resume: bool = False
    spark_master: str | None = None
    spark_remote: str | None = None


class Engine(Protocol):
    """What runs the pipeline: the operations the command line and the Python API call.

    Every operation gives, for the same input and settings, the same result on every engine
    (GROUPS and PAIRS byte for byte); only time, memory and where the data may live differ.

    Example:
        >>> from neardup.engines import engine_named
        >>> engine_named("local", workers=1).fingerprint(["a b c d"], Settings(method="simhash")).dtype
        dtype('uint64')
    """

    #: The name the registry knows the engine by (``"local"``, ``"spark"``).
    name: str

    def fingerprint(self, texts: Sequence[str], settings: Settings) -> np.ndarray:
        """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]) of
        ``texts``, in their order. Cost: O(total bytes) plus O(shingles × 64) (SimHash) or
        O(shingles × num_perm) (MinHash)."""
        ...

    def dedup(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """Read ``corpus``, find its groups of near-duplicates under ``settings`` and write
        ``outputs``, checked before any work; ``progress`` hears of each stage. Cost: the
        pipeline's, about linear in the corpus plus the candidate pairs."""
        ...

    def pairs(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """The near-duplicate pairs of precomputed SimHash fingerprints (``corpus``: fingerprint
        rows; ``settings``: SimHash without verification) and their groups: PAIRS to
        ``outputs.pairs``, GROUPS to ``outputs.groups``. Identical fingerprints are pairs at
        distance 0. Cost: O(n × tables) plus the pairs."""
        ...
