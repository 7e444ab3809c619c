"""The local engine: the pipeline on this machine's cores, behind the
:class:`~neardup.engines.base.Engine` protocol.

Stage 1 (:func:`neardup.pipeline.signatures`) runs batch by batch on worker threads
(:mod:`neardup.engines.workers`), stage 2 (:func:`neardup.pipeline.find_groups`) once over the
collected arrays. A corpus of files is deduplicated out of core
(:class:`~neardup.engines.outofcore.OutOfCoreDedup`): memory is bounded by the engine's
``memory_limit``, not by the corpus. A table is in memory already, so its run stays there.
Either way the outputs are written here, from the same columns, byte for byte alike, a piece of
rows at a time (:func:`write_in_pieces`).

Example:
    >>> from neardup.settings import Settings
    >>> LocalEngine(workers=1).fingerprint(["a b c d", "a b c e"], Settings(method="simhash")).dtype
    dtype('uint64')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from neardup import report as html_report
from neardup._version import __version__
from neardup.engines.base import (
    GROUP_COLUMNS,
    Corpus,
    DedupRun,
    EngineOptions,
    Outputs,
    Progress,
    pair_columns,
    pair_value_column,
)
from neardup.engines.id_file import MappedIds, take_ids
from neardup.engines.outofcore import OutOfCoreDedup
from neardup.engines.pairs_outofcore import OutOfCorePairs
from neardup.engines.spill import WorkDir, input_identity, parse_memory_limit, run_key
from neardup.engines.workers import BATCH_SIZE, check_workers, ordered_map, warm_up
from neardup.io import (
    DocumentBatch,
    FingerprintBatches,
    TableWriter,
    output_set,
    read_documents,
    read_table,
    write_records,
)
from neardup.io.atomic import atomic_write
from neardup.memory import return_freed_memory
from neardup.pipeline import Groups, Signatures, find_groups, signatures
from neardup.settings import Settings

#: Rows of GROUPS and PAIRS built and written at a time (:func:`write_in_pieces`): eight of the
#: text writer's chunks of 65,536 rows, so that both of its threads encode. Their ID columns,
#: the one memory of the writing that grows with the documents, exist for one piece only.
WRITE_PIECE_ROWS = 1 << 19
#: Share of the memory limit that an out-of-core run's check of repeated IDs may hold (beside
#: the budget's half) before the IDs past it go to the work folder
#: (:class:`~neardup.io.id_table.IdTable`): 188 MB by default, 1.5M IDs in its table.
ID_SHARE = 0.125


def _sign_texts(texts: list[str], settings: Settings, keep_sets: bool | None) -> Signatures:
    return signatures(texts, settings, keep_sets)


def _sign_batch(batch, settings: Settings, keep_sets: bool) -> Signatures:
    return signatures(batch.texts, settings, keep_sets)


def signatures_parallel(
    texts: list[str], settings: Settings, workers: int | None = None, keep_sets: bool | None = None
) -> Signatures:
    """Stage 1 over a list of texts, in batches of ``BATCH_SIZE`` spread over ``workers``
    threads (None = all cores); identical for any number of workers. ``keep_sets`` as in
    :func:`neardup.pipeline.signatures`. Cost: that of the kernels, spread over the threads.

    Example:
        >>> signatures_parallel(["a b c d"], Settings(method="simhash"), workers=1).signature.shape
        (1,)
    """
    workers = check_workers(workers)
    warm_up(settings)
    chunks = [texts[i : i + BATCH_SIZE] for i in range(0, len(texts), BATCH_SIZE)]
    parts = [sig for _, sig in ordered_map(_sign_texts, chunks, workers, settings, keep_sets)]
    return Signatures.concat(parts, settings)


@dataclass
class Collection:
    """Everything read and computed for a run's documents, in input order."""

    ids: list[str]
    timestamps: np.ndarray
    raw_timestamps: list
    records: list | None
    signatures: Signatures
    texts: list[str] | None = None

    def __len__(self) -> int:
        return len(self.ids)


def _id_column(ids) -> pa.ChunkedArray | MappedIds:
    if isinstance(ids, MappedIds):
        return ids
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        return ids if isinstance(ids, pa.ChunkedArray) else pa.chunked_array([ids])
    return pa.chunked_array([pa.array(ids, type=pa.string())], type=pa.string())


def groups_columns(ids, groups: Groups, start: int = 0, stop: int | None = None) -> dict:
    """GROUPS' columns (:data:`~neardup.engines.base.GROUP_COLUMNS`) of the documents
    ``start..stop-1`` (default: all) in ``groups``, a run's groups over the documents ``ids``
    (a list or an Arrow string column, taken by Arrow, not Python): their originals' IDs are
    looked up for those rows only. O(rows).

    Example:
        >>> from neardup.pipeline import Groups
        >>> g = Groups(np.array([0, 0]), np.array([True, False]), np.array([2, 2]),
        ...            *(np.zeros(0, t) for t in (np.int64, np.int64, np.float32, bool)), stats={})
        >>> groups_columns(["a", "b"], g)["original_id"].to_pylist()
        ['a', 'a']
        >>> groups_columns(["a", "b"], g, 1)["id"].to_pylist()
        ['b']
    """
    ids = _id_column(ids)
    rows = slice(start, len(ids) if stop is None else stop)
    original_ids = take_ids(ids, groups.original[rows])
    values = (
        ids.slice(rows.start, rows.stop - rows.start),
        original_ids,
        original_ids,
        groups.is_original[rows],
        # int64 in every output (a Parquet column's type) whatever width the sizes are held in.
        groups.group_size[rows].astype(np.int64, copy=False),
    )
    return dict(zip(GROUP_COLUMNS, values))


def pairs_columns(
    ids, groups: Groups, method: str, start: int = 0, stop: int | None = None
) -> dict:
    """PAIRS' columns (:func:`~neardup.engines.base.pair_columns`) of the pairs
    ``start..stop-1`` (default: all) of ``groups`` over the documents ``ids``: MinHash
    similarities rounded to 6 digits, ``passed`` decided on the unrounded value. O(rows).

    Example:
        >>> from neardup.pipeline import Groups
        >>> g = Groups(np.array([0, 0]), np.array([True, False]), np.array([2, 2]), np.array([0]),
        ...            np.array([1]), np.array([0.91234567]), np.array([True]), stats={})
        >>> pairs_columns(["a", "b"], g, "minhash")["similarity"].tolist()
        [0.912346]
    """
    ids = _id_column(ids)
    rows = slice(start, groups.pair_a.shape[0] if stop is None else stop)
    values = groups.pair_value[rows]
    if method != "simhash":
        values = np.round(values.astype(np.float64), 6)
    return dict(
        zip(
            pair_columns(method),
            (
                take_ids(ids, groups.pair_a[rows]),
                take_ids(ids, groups.pair_b[rows]),
                values,
                np.asarray(groups.pair_passed[rows], dtype=bool),
            ),
        )
    )


def write_in_pieces(path: str, rows: int, columns_of: Callable[[int, int], dict]) -> int:
    """Write the table of ``rows`` rows whose rows ``start..stop-1`` are
    ``columns_of(start, stop)`` to ``path`` (as :func:`~neardup.io.write_table` would write it
    whole), :data:`WRITE_PIECE_ROWS` rows at a time: the next piece's columns are built (the
    calls one after another, in order, on a thread of their own) while a piece is encoded and
    written, so two pieces' columns exist at most. Returns the number of pieces. O(rows),
    memory O(piece).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "n.csv"
        >>> write_in_pieces(p, 3, lambda start, stop: {"n": list(range(start, stop))})
        1
        >>> p.read_text().split()
        ['n', '0', '1', '2']
    """
    # One piece even of no rows: the header and the Parquet schema are written.
    starts = range(0, max(rows, 1), WRITE_PIECE_ROWS)
    with TableWriter(path) as writer, ThreadPoolExecutor(1) as builder:
        built = builder.submit(columns_of, 0, min(rows, WRITE_PIECE_ROWS))
        for start in starts:
            columns = built.result()
            if start + WRITE_PIECE_ROWS < rows:
                stop = min(rows, start + 2 * WRITE_PIECE_ROWS)
                built = builder.submit(columns_of, start + WRITE_PIECE_ROWS, stop)
            writer.write(columns)
            del columns  # written: only the next piece's columns are held
            # Pieces' buffers are heap blocks (glibc serves blocks of up to 32 MiB from the
            # heap once such blocks were freed), and the two threads' pieces interleave: their
            # freed pages stayed resident, 0.28 GB at 10M documents.
            return_freed_memory()
    return len(starts)


def write_groups_and_pairs(
    ids, groups: Groups, method: str, groups_out: str | None, pairs_out: str | None
) -> None:
    """Write PAIRS to ``pairs_out`` and GROUPS to ``groups_out`` (either None: not written)
    of a run's ``groups`` over the documents ``ids``, piece by piece (:func:`write_in_pieces`,
    :func:`pairs_columns`, :func:`groups_columns`). O(documents + pairs), memory O(piece).

    Example:
        >>> import tempfile, pathlib
        >>> from neardup.pipeline import Groups
        >>> g = Groups(np.array([0, 0]), np.array([True, False]), np.array([2, 2]), np.array([0]),
        ...            np.array([1]), np.array([1.0]), np.array([True]), stats={})
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "groups.tsv"
        >>> write_groups_and_pairs(["a", "b"], g, "minhash", str(p), None)
        >>> p.read_text().splitlines()[2].split()
        ['b', 'a', 'a', 'false', '2']
    """
    ids = _id_column(ids)
    if pairs_out:
        write_in_pieces(
            pairs_out,
            groups.pair_a.shape[0],
            lambda start, stop: pairs_columns(ids, groups, method, start, stop),
        )
    if groups_out:
        write_in_pieces(
            groups_out,
            groups.original.shape[0],
            lambda start, stop: groups_columns(ids, groups, start, stop),
        )


class LocalEngine:
    """The local engine (see the module's docstring).

    Args:
        workers: threads (None or 0: all cores).
        memory_limit: memory for a run's data (see :func:`~neardup.engines.spill.parse_memory_limit`):
            band hashes beyond half of it spill to ``tmp_dir``, shingle sets are built in blocks
            that fit.
        tmp_dir: folder for spill files (None: the system's temp dir), removed when a run ends,
            fails or is interrupted.
        resume: keep completed stages in ``tmp_dir`` when a run fails, and continue from them
            when the same run comes again (refused when the inputs or options changed).

    Example:
        >>> LocalEngine(workers=2, memory_limit="512M").memory_limit
        536870912
    """

    name = "local"

    def __init__(
        self,
        workers: int | None = None,
        *,
        memory_limit: str | int | None = None,
        tmp_dir: str | None = None,
        resume: bool = False,
    ):
        self.workers = check_workers(workers)
        self.memory_limit = parse_memory_limit(memory_limit)
        self.tmp_dir = tmp_dir
        self.resume = resume

    def fingerprint(self, texts: Sequence[str], settings: Settings) -> np.ndarray:
        """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]) of
        ``texts``, by :func:`signatures_parallel`. O(total bytes + shingles × 64 or num_perm).

        Example:
            >>> LocalEngine(1).fingerprint(["x y z"], Settings(num_perm=16)).shape
            (1, 16)
        """
        return signatures_parallel(list(texts), settings, self.workers).signature

    def collect(
        self,
        batches: Iterable,
        settings: Settings,
        on_batch: Callable[[object], None] | None = None,
        keep_sets: bool = False,
    ) -> Collection:
        """Stage 1 over a stream of document batches (see :mod:`neardup.io`), in memory.

        When verification needs shingle sets, the collection keeps the texts and
        :func:`neardup.pipeline.find_groups` builds the sets of the few documents with candidates;
        ``keep_sets=True`` computes every document's set instead (for repeated runs over the
        same signatures, as a sweep does). Cost: stage 1's, spread over the workers.

        Example:
            >>> batch = read_table({"id": ["a"], "text": ["x y z"]}).read_all()
            >>> LocalEngine(1).collect([batch], Settings(method="simhash")).ids
            ['a']
        """
        texts: list[str] | None = [] if settings.needs_sets and not keep_sets else None
        ids: list[str] = []
        timestamps: list[np.ndarray] = []
        raw: list = []
        records: list | None = None
        parts: list[Signatures] = []
        for batch, sig in self.signed(batches, settings, on_batch, keep_sets):
            ids.extend(batch.ids)
            if texts is not None:
                texts.extend(batch.texts)
            timestamps.append(np.asarray(batch.timestamps, dtype=np.int64))
            raw.extend(batch.raw_timestamps)
            if batch.records is not None:
                if records is None:
                    records = []
                records.extend(batch.records)
            parts.append(sig)
        stamps = np.concatenate(timestamps) if timestamps else np.zeros(0, dtype=np.int64)
        return Collection(ids, stamps, raw, records, Signatures.concat(parts, settings), texts)

    def signed(
        self,
        batches: Iterable,
        settings: Settings,
        on_batch: Callable[[object], None] | None = None,
        keep_sets: bool = False,
    ) -> Iterator[tuple[object, Signatures]]:
        """Stage 1 batch by batch: each batch of ``batches`` with its :class:`Signatures`, in
        input order, as soon as it is signed. ``on_batch`` is called with each batch before it
        is handed on. Memory O(workers × batch), whatever the number of batches; cost: stage
        1's, spread over the workers.

        Example:
            >>> batch = read_table({"id": ["a"], "text": ["x y z"]}).read_all()
            >>> [sig.signature.shape for _, sig in LocalEngine(1).signed([batch],
            ...                                                        Settings(method="simhash"))]
            [(1,)]
        """
        warm_up(settings)
        for batch, sig in ordered_map(_sign_batch, batches, self.workers, settings, keep_sets):
            if on_batch is not None:
                on_batch(batch)
            yield batch, sig

    def dedup(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """Read ``corpus``, find its groups and write ``outputs`` (see
        :meth:`neardup.engines.base.Engine.dedup`): files out of core under the memory limit,
        a table in memory. A table's run keeps GROUPS' columns (``run.groups``); a run over
        files only writes them, piece by piece, and its ``groups`` is None.

        Example:
            >>> run = LocalEngine(1).dedup(Corpus(table={"id": ["a", "b"], "text": ["x y", "x y"]}),
            ...                            Settings(method="simhash"), Outputs())
            >>> run.groups["duplicate_id"].to_pylist(), run.stats["exact_duplicates"]
            (['a', 'a'], 1)
        """
        progress = progress or Progress()
        outputs.check(corpus.inputs)
        if corpus.table is not None:
            return self._dedup_table(corpus, settings, outputs, progress)
        return self._dedup_files(corpus, settings, outputs, progress)

    def _dedup_table(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress
    ) -> DedupRun:
        if outputs.keep:
            raise ValueError(
                "keep writes the input rows of files; a table in memory is its "
                "own: select its originals with GROUPS' is_original"
            )
        started = time.perf_counter()
        reader = read_table(corpus.table, **corpus.reading)
        batch = reader.read_all()
        sig = signatures_parallel(batch.texts, settings, self.workers, keep_sets=False)
        read_seconds = time.perf_counter() - started
        groups = find_groups(
            sig,
            batch.timestamps,
            settings,
            batch.texts,
            on_stage=progress.stage,
            workers=self.workers,
        )
        _write_outputs(
            outputs,
            batch.ids,
            groups,
            settings,
            progress,
            lambda positions: {p: batch.texts[p] for p in positions},
            read_seconds,
        )
        columns = groups_columns(batch.ids, groups)
        return DedupRun(reader.stats, groups.stats, columns, read_seconds)

    def _dedup_files(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress
    ) -> DedupRun:
        with self.work_dir(corpus, settings, outputs.groups or "-") as work:
            job = self.out_of_core(corpus, settings, work, progress)
            collected = job.collect()
            groups = job.group()

            def texts_at(positions: list[int]) -> dict[int, str]:
                wanted = np.unique(np.asarray(positions, dtype=np.int64))
                return {
                    p: text
                    for batch in (job.refetch(wanted) if wanted.size else ())
                    for p, text in zip(batch.positions.tolist(), batch.texts)
                }

            _write_outputs(
                outputs,
                collected.mapped_ids(),
                groups,
                settings,
                progress,
                texts_at,
                collected.seconds,
                originals=lambda rows: job.refetch(rows, records=True),
            )
        figures = dict(job.figures)
        figures["spilled MB"] = figures.pop("spilled bytes") / 1e6
        figures["memory limit MB"] = self.memory_limit / 1e6
        return DedupRun(
            collected.stats,
            groups.stats,
            None,
            collected.seconds,
            figures,
            {"memory_limit": self.memory_limit},
        )

    def work_dir(self, corpus: Corpus, settings: Settings, name_hint: str) -> WorkDir:
        """The work folder of a run over the files of ``corpus`` with ``settings`` under
        ``tmp_dir`` (``name_hint``: the run's first output, which names the folder of a
        resumable run). O(number of input files)."""
        inputs = list(corpus.inputs)
        if self.resume and "-" in inputs:
            raise ValueError("--resume needs input files: standard input cannot be read again")
        key = run_key(
            version=__version__,
            settings=repr(settings),
            reader=dict(corpus.reading),
            inputs=input_identity(inputs) if self.resume else inputs,
        )
        return WorkDir(self.tmp_dir, key, name_hint, resume=self.resume)

    def out_of_core(
        self, corpus: Corpus, settings: Settings, work: WorkDir, progress: Progress
    ) -> OutOfCoreDedup:
        """The out-of-core job (:mod:`neardup.engines.outofcore`) over the files of ``corpus``
        in ``work``, under this engine's memory limit and workers. O(1)."""
        inputs, reading = list(corpus.inputs), dict(corpus.reading)

        def reopen(records: bool):
            return read_documents(inputs, **reading, keep_records=records, batch_size=BATCH_SIZE)

        reader = read_documents(
            inputs,
            **reading,
            spill_dir=str(work.path),
            batch_size=BATCH_SIZE,
            id_memory=int(self.memory_limit * ID_SHARE),
        )
        return OutOfCoreDedup(
            reader, reopen, settings, work, self.memory_limit, self.workers, progress=progress
        )

    def pairs(
        self, corpus: Corpus, settings: Settings, outputs: Outputs, progress: Progress | None = None
    ) -> DedupRun:
        """PAIRS and GROUPS of precomputed SimHash fingerprints (see
        :meth:`neardup.engines.base.Engine.pairs`), out of core under the memory limit
        (:class:`~neardup.engines.pairs_outofcore.OutOfCorePairs`): the rows are read as a
        stream, what does not fit spills to ``tmp_dir``, and the outputs, byte for byte those
        of any limit, are written piece by piece; the run's ``groups`` is None. No ``resume``:
        a failed run starts over.

        Example:
            >>> import tempfile, pathlib
            >>> fps = pathlib.Path(tempfile.mkdtemp()) / "fps.tsv"
            >>> _ = fps.write_text("a\\t00000000000000ff\\nb\\t00000000000000fe\\n")
            >>> run = LocalEngine(1).pairs(Corpus((str(fps),)), Settings(method="simhash"), Outputs())
            >>> run.stats["pairs"], run.stats["groups"]
            (1, 1)
        """
        progress = progress or Progress()
        if self.resume:
            raise ValueError("pairs cannot resume (--resume is dedup's): a failed run starts over")
        outputs.check(corpus.inputs)
        batches = FingerprintBatches(list(corpus.inputs), **corpus.reading)
        with self.work_dir(corpus, settings, outputs.pairs or outputs.groups or "-") as work:
            job = OutOfCorePairs(batches, settings, work, self.memory_limit, progress)
            job.run()
            started = time.perf_counter()
            progress.stage("writing")
            with output_set():
                if outputs.pairs:
                    write_in_pieces(
                        outputs.pairs,
                        job.pair_count,
                        lambda start, stop: pairs_columns(
                            *job.pairs_piece(start, stop), settings.method
                        ),
                    )
                if outputs.groups:
                    write_in_pieces(
                        outputs.groups,
                        job.rows,
                        lambda start, stop: groups_columns(
                            *job.groups_piece(start, stop), 0, stop - start
                        ),
                    )
            job.stats["seconds"]["writing"] = time.perf_counter() - started
        return DedupRun(
            batches.stats, job.stats, None, None, job.figures, {"memory_limit": self.memory_limit}
        )


def open_engine(options: EngineOptions) -> LocalEngine:
    """The local engine as :func:`neardup.engines.engine_named` makes it: ``workers``,
    ``memory_limit``, ``tmp_dir`` and ``resume`` of ``options`` (``spark_master`` is Spark's and
    has no bearing here). O(1).

    Example:
        >>> open_engine(EngineOptions(workers=1, resume=True)).resume
        True
    """
    return LocalEngine(
        options.workers,
        memory_limit=options.memory_limit,
        tmp_dir=options.tmp_dir,
        resume=options.resume,
    )


def _write_outputs(
    outputs: Outputs,
    ids,
    groups: Groups,
    settings: Settings,
    progress: Progress,
    texts_at: Callable[[list[int]], dict[int, str]] | None = None,
    read_seconds: float = 0.0,
    originals: Callable[[np.ndarray], Iterator[DocumentBatch]] | None = None,
) -> None:
    """Write the ``outputs`` of a run's ``groups`` over the documents ``ids`` (GROUPS and PAIRS
    piece by piece (:func:`write_in_pieces`), the originals' rows, fetched by ``originals``, as
    one set; then the report, its texts by position from ``texts_at``)."""
    return_freed_memory()  # the grouping's temporaries, before the IDs are read back
    progress.stage("writing")
    ids = _id_column(ids)
    with output_set():
        write_groups_and_pairs(ids, groups, settings.method, outputs.groups, outputs.pairs)
        if outputs.keep:
            rows = np.flatnonzero(groups.is_original)
            progress.stage("writing originals", int(rows.shape[0]))
            write_records(outputs.keep, _progress_records(originals(rows), progress))
    if outputs.report:
        progress.stage("report")
        _write_report(outputs.report, ids, groups, settings, read_seconds, texts_at)


def _progress_records(batches: Iterable[DocumentBatch], progress: Progress) -> Iterator[dict]:
    for batch in batches:
        yield from batch.records
        progress.advance(len(batch.records))


def _write_report(
    path: str,
    ids: pa.ChunkedArray | MappedIds,
    groups: Groups,
    settings: Settings,
    read_seconds: float,
    texts_at: Callable[[list[int]], dict[int, str]],
) -> None:
    """The page of :mod:`neardup.report` for a run, with its settings and seconds per stage
    (which GROUPS and PAIRS files do not record), written atomically."""
    simhash = settings.method == "simhash"
    stats = {k: v for k, v in groups.stats.items() if not isinstance(v, dict)}
    stats["seconds"] = {"read + signatures": read_seconds, **groups.stats.get("seconds", {})}
    run = html_report.RunData(
        ids=ids.to_numpy(),
        original=groups.original,
        pair_a=groups.pair_a,
        pair_b=groups.pair_b,
        pair_value=np.asarray(groups.pair_value, dtype=np.float64),
        value_name=pair_value_column(settings.method),
        # MinHash pairs are accepted by their verified Jaccard when verification is on.
        threshold=settings.hamming_k if simhash else (settings.verify or settings.threshold),
        settings=html_report.describe_settings(settings),
        stats=stats,
    )
    texts = texts_at(html_report.select(run).positions())
    page = html_report.render(run, texts, "neardup report").encode("utf-8")
    with atomic_write(path) as fh:
        fh.write(page)
