"""The local engine's dedup job, out of core: memory bounded by a budget, not by the corpus.

The texts are never all in memory. The job makes three passes over the inputs:

1. **Read and sign** (every document, streamed in batches, signed by worker threads): per
   document only fixed-width columns stay — the timestamp (int64 µs), the SimHash
   fingerprint, where the text lives in its input — and the IDs as an Arrow string column.
   The 128-bit content fingerprints, MinHash band hashes (``bands`` × 8 bytes a document), the
   count sketches of the LCS units (LCS verification: 128 bytes a document), the unit counts
   and empty flags (5 bytes) and, when the MinHash estimate decides (no verification), the
   signatures go to :class:`~neardup.engines.spill.SpillColumn` objects: in memory while the
   budget allows, else appended to files in the run's work folder. When verification needs
   data and the input's size is known, the workers also build every document's verification
   data (LCS units or shingle sets) and keep them (:class:`KeptSets`) while they look like
   fitting the budget beside the rest, judged from the share of the input read; once they do
   not, they are dropped, after a few batches on an input far over the budget.
2. **Group** (:func:`neardup.pipeline.find_groups`, the same code as every engine): exact
   duplicates (content fingerprints that spilled are read back a part of their hashes at a
   time: :func:`neardup.exact_duplicates.representatives_by_parts`), candidates band by band
   (each column read a block at a time, a partition of its hashes at a time past the budget's
   room), those that the unit counts and sketches rule out dropped, then verification over the
   data kept in pass 1; when those were not kept, the texts of the documents that have a
   candidate are **read again** — only those, through their input locations, nearby lines in
   one read — and their data built by the compiled kernels in parallel batches, each written by
   its worker in its final place (LCS units, counted in pass 1), kept in memory or spilled
   (:class:`~neardup.engines.spilled_rows.SpilledRows`); verification, groups, pairs.
3. **Write** (:meth:`neardup.engines.local.LocalEngine.dedup`) GROUPS and PAIRS from the
   columns (Arrow ``take`` on the IDs), and the originals' rows from a third read of just them
   (:meth:`OutOfCoreDedup.refetch`).

Same input and options give the same bytes as :func:`neardup.pipeline.find_groups` over the
whole collection in memory, whatever the budget and the number of workers (tests compare them).

Memory: the budget is half of ``memory_limit``. Charged to it first
(:meth:`MemoryBudget.charge`): the fixed columns, about ``16 + len(id)`` bytes a document (the
IDs and locations go to the work folder while pass 1 reads, once the budget keeps less than
:data:`LEAST_ROOM` of itself free: :mod:`neardup.engines.kept_columns`), and the grouping's
arrays (:data:`GROUPING_BYTES` a document). The spillable part (``8 × bands`` bytes a document
for MinHash band hashes, 128 for the sketches, 16 for the content fingerprints, 5 for the unit
counts and empty flags, the verification data kept from pass 1) gets the room those leave,
spills once N grows, and band hash columns (then the unit counts and empty flags) still in
memory spill when the grouping's arrays are charged; the band
search's temporaries (:mod:`neardup.candidates.band_parts`), the sketches' blocks
(:mod:`neardup.candidates.bounds`) and the verification chunks take the room left (no more
than the limit less the resident memory), at least :data:`LEAST_ROOM`. Not charged: the
candidate pairs in memory (8 bytes a pair, packed, up to :data:`LEAST_ROOM` of the budget,
then sorted runs on disk: :mod:`neardup.engines.pair_runs`) and the pairs the bounds leave; the
repair round's bucket members (4 bytes a member and 4 a bucket, up to :data:`LEAST_ROOM`, then
on disk: :mod:`neardup.engines.spilled_buckets`), their pairs listed a slice at a time into a
union of the same bound, and the pairs the bounds leave (8 bytes a pair).
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from neardup.candidates.bands import band_hash_columns
from neardup.candidates.chunks import chunks_of_pairs
from neardup.engines.base import Progress
from neardup.engines.checkpoint import load_collected, load_groups, save_collected, save_groups
from neardup.engines.collected import Collected, TimestampParts, held_bytes
from neardup.engines.kept import KeptSets, copy_into
from neardup.engines.kept_columns import KeptColumns
from neardup.engines.linked_rows import LinkedRows
from neardup.engines.spill import MemoryBudget, SpillColumn, WorkDir
from neardup.engines.spilled_buckets import SpillStores
from neardup.engines.spilled_rows import SpilledRows
from neardup.engines.workers import check_workers, ordered_map, warm_up
from neardup.exact_duplicates import representatives_by_parts
from neardup.io import DocumentBatch, DocumentReader
from neardup.lcs import COUNT_BUCKETS
from neardup.locality import locality_pair_order
from neardup.memory import (
    index_dtype,
    joined_parts,
    resident_bytes,
    return_freed_memory,
    take_mapped,
)
from neardup.pipeline import Groups, PairSimilarity, Signatures, find_groups, signatures
from neardup.rank_directory import directory_of, listed_rows, ranks_of
from neardup.settings import Settings

#: Share of ``memory_limit`` that spillable columns (band hashes, shingle sets) may hold,
#: beside the per-document columns charged to it (:meth:`MemoryBudget.charge`).
SPILL_SHARE = 0.5
#: Bytes a document that the grouping holds through its stages beside the columns of pass 1
#: (the document order, the representatives' indices, each exact duplicate's index and
#: representative: `~neardup.exact_duplicates.Duplicates`), charged while it runs: 8 bytes each
#: in int64 indices (from 2**31 - 1 documents on), at most 24 whatever the share of
#: duplicates, half of it spare in int32 (:func:`~neardup.memory.index_dtype`).
GROUPING_BYTES = 24
#: The least share of the budget that the sketches' blocks and the verification chunks may
#: take when the per-document state leaves less free (an eighth: 94 MB by default).
LEAST_ROOM = 0.125
#: Bytes a candidate pair holds while it is measured over spilled verification data, beside
#: the chunks' data (measured at 10M short documents, 1.46M pairs: the caller's two ends, the
#: remembered values' keys and places, the pairs' order and their rows in the chunks), and
#: bytes a document of the collection (the rows of the compared documents, the union-find of
#: the accepted links): the chunks get the room these leave.
VERIFY_PAIR_BYTES = 112
VERIFY_DOCUMENT_BYTES = 16
#: Bytes a candidate pair takes while its slice is unpacked and bounded by the units' counts
#: (its two ends, int64, and the bounds' temporaries).
CANDIDATE_BYTES = 48
#: Fewest candidate pairs verified per step of the verify stage's progress bar (a step spreads
#: over every worker; a run with fewer than two steps' worth is measured in one call).
VERIFY_STEP = 1 << 16


#: Why a read again does not find what pass 1 read.
INPUTS_CHANGED = (
    "the inputs changed while the run was reading them (documents differ from the first "
    "pass); run again on inputs that stay put"
)


class BatchSink:
    """What a command that keeps more of each document than ``dedup`` does with the batches of
    pass 1 (``neardup index build`` stores their texts): :meth:`prepare` runs on the worker
    that signed the batch, :meth:`consume` on the reading thread, in input order."""

    def prepare(self, batch: DocumentBatch, sig: Signatures, keys: np.ndarray | None) -> object:
        """The per-batch work that may run in parallel (``keys``: the band hashes of MinHash)."""

    def consume(self, batch: DocumentBatch, prepared: object) -> None:
        """Take :meth:`prepare`'s result for ``batch``; batches arrive in input order."""


def _sign_batch(
    batch: DocumentBatch,
    settings: Settings,
    banding: tuple[int, int] | None,
    kept: KeptSets | None,
    sink: BatchSink | None,
):
    sig = signatures(batch.texts, settings, keep_sets=kept is not None and kept.active)
    # Band by band: each band's column is appended to its store as it is.
    columns = band_hash_columns(sig.signature, *banding) if banding is not None else None
    keys = columns.T if columns is not None else None
    return sig, columns, sink.prepare(batch, sig, keys) if sink is not None else None


class OutOfCoreDedup:
    """One ``neardup dedup`` run on this machine under a memory budget.

    Args:
        reader: the inputs (a fresh :class:`neardup.io.DocumentReader`).
        reopen: makes a new reader over the same inputs and options (``keep_records`` as
            asked) for re-reading when the reader cannot fetch by location.
        settings: the run's options.
        work: the run's :class:`~neardup.engines.spill.WorkDir`.
        memory_limit: bytes the run may use (see the module docstring for what counts).
        workers: signing threads (None = all cores).
        progress: a :class:`~neardup.engines.base.Progress` display.
    """

    def __init__(
        self,
        reader: DocumentReader,
        reopen: Callable[[bool], DocumentReader],
        settings: Settings,
        work: WorkDir,
        memory_limit: int,
        workers: int | None = None,
        progress: Progress | None = None,
    ):
        self.reader = reader
        self.reopen = reopen
        self.settings = settings
        self.work = work
        self.memory_limit = int(memory_limit)
        self.budget = MemoryBudget(int(memory_limit * SPILL_SHARE))
        self.workers = check_workers(workers)
        self.progress = progress or Progress()
        self.collected: Collected | None = None
        self._stage: str | None = None  # the stage of find_groups under way
        self._owns_columns = False  # no sink or resume keeps pass 1's columns: see collect
        #: Bytes of per-document state charged to the budget (MemoryBudget.charge) and held.
        self.charged = 0
        #: Figures of the run for its summary: spill written, texts re-read, and the chunks
        #: the verification data were measured in when they exceeded the budget (0: in memory).
        self.figures = {
            "spilled bytes": 0,
            "documents re-read": 0,
            "verification chunks": 0,
            "candidate pair runs": 0,
            "seconds: re-read + shingle sets": 0.0,
        }

    @property
    def _least_room(self) -> int:
        """Bytes of :data:`LEAST_ROOM` of the budget."""
        return int(self.budget.limit * LEAST_ROOM)

    def _room(self) -> int:
        """Bytes a stage's transient buffers may take now: the budget's room, at most
        ``memory_limit`` less the resident memory (after a trim), at least :data:`LEAST_ROOM`.
        The process holds more than the budget was charged (the interpreter, the kernels, the
        document order and representatives once made). O(1) plus a ``malloc_trim``."""
        return_freed_memory()
        resident = resident_bytes()
        free = self.budget.free
        if resident is not None:
            free = min(free, self.memory_limit - resident)
        return max(free, self._least_room)

    def _charge(self, nbytes: int) -> None:
        """Charge ``nbytes`` of per-document state to the budget (give back when negative)."""
        self.charged += nbytes
        self.budget.charge(nbytes)

    # -- pass 1 ------------------------------------------------------------------------------

    def collect(self, sink: BatchSink | None = None) -> Collected:
        """Pass 1: read and sign every document, keeping the fixed-width columns; each batch
        also goes through ``sink`` when given (not with ``--resume``)."""
        if sink is not None and self.work.resume:
            raise ValueError("a batch sink sees every batch: it cannot resume a run")
        # Only writing needs the IDs, and only the re-read the locations of some documents:
        # past the budget both go to the work folder as they are read (not with a batch sink,
        # which stores them itself).
        self._owns_columns = sink is None
        if self.work.completed("collect"):
            c = self.collected = load_collected(self.work, self.settings, self.budget)
            # Charged as pass 1 charges them: MinHash's signatures are a spill column's map.
            simhash = self.settings.method == "simhash"
            self._charge(
                held_bytes(c.timestamps) + (c.signatures.signature.nbytes if simhash else 0)
            )
            return c
        s = self.settings
        started = time.perf_counter()
        warm_up(s)
        minhash = s.method == "minhash"
        banding = s.banding() if minhash else None
        bands = (
            [SpillColumn(self.work, f"band-{j}", np.uint64, self.budget) for j in range(banding[0])]
            if minhash
            else []
        )
        estimate = minhash and s.verify is None
        sig_column = SpillColumn(self.work, "signatures", np.uint32, self.budget, s.num_perm)
        sig_column = sig_column if estimate else None
        # The count sketches of the LCS units (128 bytes a document): candidates they rule out
        # are dropped before any text is read again.
        sketch_column = (
            SpillColumn(self.work, "sketches", np.uint8, self.budget, COUNT_BUCKETS)
            if s.verify is not None and s.verify_measure == "lcs"
            else None
        )
        # The content fingerprints (16 bytes a document) serve only the exact duplicates: past
        # the budget they wait on disk and are read back by parts (exact_duplicates.representatives_by_parts).
        content_column = SpillColumn(self.work, "content", np.uint64, self.budget, 2)
        # Read whole by the candidates' bounds alone: past the budget, or spilled for the
        # grouping, they are read through maps (Collected.spill_flags).
        empty_column = SpillColumn(self.work, "empty", np.bool_, self.budget)
        size_column = SpillColumn(self.work, "sizes", np.int32, self.budget)
        fps: list[np.ndarray] = []
        stamps = TimestampParts()
        kept_columns = KeptColumns(
            self.work, self.budget, self._charge, self._least_room, may_spill=self._owns_columns
        )
        total = self.reader.total_bytes()
        # Without a known total nothing tells early whether the data would fit; a resumed run
        # would have to checkpoint them: both build them from a re-read instead.
        kept = (
            KeptSets(self.budget, total)
            if s.needs_sets and total is not None and not self.work.resume
            else None
        )
        self.progress.stage("reading", total, "B")
        done_bytes = 0
        # The input bytes read when each batch was complete: the workers sign a few batches
        # ahead of the one handled here, and the reader is ahead of them.
        read_by: deque[int] = deque()

        def batches() -> Iterator[DocumentBatch]:
            for batch in self.reader:
                read_by.append(self.reader.bytes_consumed)
                yield batch

        for batch, (sig, band_columns, prepared) in ordered_map(
            _sign_batch, batches(), self.workers, s, banding, kept, sink
        ):
            batch_read_by = read_by.popleft()
            stamp_bytes = stamps.append(np.asarray(batch.timestamps, dtype=np.int64))
            empty_column.append(sig.empty)
            size_column.append(sig.sizes)
            if not minhash:
                fps.append(sig.signature)
            # The fixed columns grow with N whatever the budget: charged to it, they leave the
            # spillable columns below less room (all of them on disk once N is large).
            self._charge(stamp_bytes + (sig.signature.nbytes if not minhash else 0))
            kept_columns.add(
                pa.array(batch.ids, type=pa.large_string()), getattr(batch, "locations", None)
            )
            if sketch_column is not None:
                sketch_column.append(sig.sketches)
            if minhash:
                for j, column in enumerate(bands):
                    column.append(band_columns[j])
                if sig_column is not None:
                    sig_column.append(sig.signature)
            content_column.append(sig.content)
            if kept is not None and sig.set_offsets is not None:
                kept.add(sig.set_offsets, sig.set_hashes, batch_read_by)
            if sink is not None:
                sink.consume(batch, prepared)
            # Input bytes when the total is known (a true share of the work), else text bytes.
            now_bytes = self.reader.bytes_consumed if total is not None else self.reader.stats.bytes
            self.progress.advance(
                now_bytes - done_bytes,
                docs=self.reader.stats.documents,
                spilled=sum(column.disk_bytes for column in bands),
            )
            done_bytes = now_bytes
        n = len(stamps)
        named = {f"band-{j}": column for j, column in enumerate(bands)}
        for column in (sig_column, sketch_column, content_column, empty_column, size_column):
            if column is not None:
                named[column.path.stem] = column
        for column in named.values():
            if self.work.resume:
                column.spill()  # the checkpoint records its file (engines.checkpoint)
            column.finish()
            self.figures["spilled bytes"] += column.disk_bytes
        if content_column.spilled and self._owns_columns:
            content = np.zeros((n, 0), dtype=np.uint64)  # rows without memory: see group
        else:
            content = content_column.read()
            if not self._owns_columns:  # a batch sink keeps them whole
                content_column.release()
                self._charge(content.nbytes)
        # The fingerprints' parts are let go as they are joined: never all held twice.
        if minhash:
            signature = (
                sig_column.array() if sig_column is not None else np.zeros((n, 0), np.uint32)
            )
        else:
            signature = joined_parts(fps, np.uint64, (0,))
        sig = Signatures(
            content=content,
            signature=signature,
            empty=empty_column.array(),
            sizes=size_column.array(),
            sketches=sketch_column.array() if sketch_column is not None else None,
        )
        kept_columns.finish(to_disk=self.work.resume)
        self.figures["spilled bytes"] += kept_columns.disk_bytes
        self.collected = Collected(
            id_column=kept_columns.ids,
            ids_path=kept_columns.ids_path,
            timestamps=stamps.joined(),
            locations=kept_columns.locations,
            signatures=sig,
            band_columns=bands,
            sketch_column=sketch_column,
            content_column=content_column,
            stats=self.reader.stats,
            seconds=time.perf_counter() - started,
            kept=kept if kept is not None and kept.active else None,
            flag_columns={"empty": empty_column, "sizes": size_column},
        )
        return_freed_memory()
        if self.work.resume:
            save_collected(self.work, s, self.collected, named)
        return self.collected

    # -- pass 2 ------------------------------------------------------------------------------

    def refetch(
        self, positions: np.ndarray, records: bool = False, last_read: bool = False
    ) -> Iterator[DocumentBatch]:
        """The documents at ascending ``positions`` again, in order (texts, and the whole
        records with ``records``): by location when the reader can (``last_read``: see
        :meth:`~neardup.io.documents.DocumentReader.fetch`), else by a new scan."""
        c = self.collected
        if c.locations is not None and self.reader.can_fetch():
            yield from self.reader.fetch(
                positions, c.locations_at(positions), records=records, last_read=last_read
            )
            return
        wanted = np.zeros(len(c), dtype=bool)
        wanted[positions] = True
        found = 0
        for batch in self.reopen(records):
            if batch.positions.shape[0] and batch.positions[-1] >= len(c):
                break
            keep = wanted[batch.positions]
            found += int(keep.sum())
            if keep.all():
                yield batch
            elif keep.any():
                yield _subset(batch, np.flatnonzero(keep))
        if found != positions.shape[0]:
            raise ValueError(INPUTS_CHANGED)

    def _sets(
        self, docs: np.ndarray, spill: bool = False, lengths: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray] | SpilledRows:
        """Verification data (shingle sets or LCS units) of the documents ``docs`` (ascending),
        CSR in that order: their texts re-read and prepared by worker threads, batch by batch,
        into one array sized from pass 1 (so a block never exists twice in memory; pages past
        the real size are never touched), or with ``spill`` the
        :class:`~neardup.engines.spilled_rows.SpilledRows` of the work folder that hold them (row i:
        ``docs[i]``; ``lengths``, the caller's int32 counts of the LCS units of ``docs``, are
        their lengths, not held twice, and no place of a row is held: 8 bytes a row)."""
        started = time.perf_counter()
        # Pass 1 counted the LCS units exactly: each worker writes its batch's units, at
        # places known before they are made in memory, checked against the counts. Shingle
        # counts only bound sets: placed here, in order.
        exact, offsets = self.settings.verify_measure == "lcs", None
        if spill:
            target = SpilledRows(self.work, "verification", docs.shape[0], lengths)

            def write(row: int, part_offsets: np.ndarray, part: np.ndarray) -> None:
                given = lengths[row : row + part_offsets.shape[0] - 1] if exact else None
                if exact and not np.array_equal(np.diff(part_offsets), given):
                    raise ValueError(INPUTS_CHANGED)
                target.put(row, part_offsets, part)
        else:
            units = take_mapped(self.collected.signatures.sizes, docs)
            offsets = np.zeros(docs.shape[0] + 1, dtype=np.int64)
            if exact:
                np.cumsum(units, dtype=np.int64, out=offsets[1:])
            target, units = np.empty(int(units.sum(dtype=np.int64)), np.uint64), None

            def write(row: int, part_offsets: np.ndarray, part: np.ndarray) -> None:
                place = offsets[row : row + part_offsets.shape[0]]
                if exact and not np.array_equal(place - place[0], part_offsets):
                    raise ValueError(INPUTS_CHANGED)
                copy_into(target, int(place[0]), part)

        row = 0
        for batch, (part_offsets, part) in ordered_map(
            _batch_sets,
            # Spilled data are read many times, the texts no more: leave the page cache to them.
            self.refetch(docs, last_read=spill),
            self.workers,
            self.settings,
            docs,
            write if exact else None,
        ):
            m = len(batch)
            if not exact:
                if offsets is not None:
                    offsets[row + 1 : row + m + 1] = offsets[row] + part_offsets[1:]
                write(row, part_offsets, part)
            row += m
            self.progress.advance(m, spilled=target.disk_bytes if spill else None)
        self.figures["documents re-read"] += int(docs.shape[0])
        self.figures["seconds: re-read + shingle sets"] += time.perf_counter() - started
        if spill:
            target.finish()
            self.figures["spilled bytes"] += target.disk_bytes
            return target
        return offsets, target[: offsets[-1]]

    def set_source(self, docs: np.ndarray) -> PairSimilarity:
        """The verification measure over the documents ``docs`` (see
        :data:`neardup.pipeline.SetSource`).

        When pass 1 kept every document's data (:class:`KeptSets`), pairs are measured over
        those, nothing read again. Otherwise the texts of ``docs`` are read again once, in
        input order, and their data built by the worker threads. When the data fit the budget
        (estimated from pass 1: their unit counts in the measure's item size) they are kept
        in memory. Otherwise they are spilled to the work folder, and every call works through
        its pairs in chunks, in the reverse Cuthill-McKee order of their documents, each chunk
        reading back the data of at most half a budget's worth of documents
        (:meth:`SpilledRows.take`) in a thread while the chunk before it is measured.
        Cost: none with kept data, else one re-read of ``docs`` and a read of the spill per
        chunk; memory O(budget).
        """
        docs = np.asarray(docs, dtype=np.int64)
        verification = self.settings.verification
        # The candidates are found and filtered by the sketches: their memory goes to the
        # verification data (the band hashes' went back as they were read).
        if self.collected.sketch_column is not None:
            self.collected.signatures.sketches = None
            self.collected.sketch_column.release()
        # The chunks below hold 4 bytes a compared document (unit counts), not its index.
        units, documents = take_mapped(self.collected.signatures.sizes, docs), int(docs.shape[0])
        space = self._room()  # the band hashes and the candidate search's temporaries freed
        self.progress.stage("shingle sets", documents, "docs")
        kept = self.collected.kept
        # Data of ``docs`` alone: the pairs' rows in them by a rank directory, a quarter of a
        # byte a document (a binary search over ``docs`` missed the cache: 6 s, 8M pairs, 10M).
        if kept is None:
            row_of = LinkedRows.of_rows(len(self.collected), docs).places
        # In memory when they fit the room, or the whole process's memory with them and the
        # least room for verification's temporaries stays within the limit (a run of few
        # documents, whose charged columns leave the budget less room than the process has).
        resident = resident_bytes()
        total = verification.itemsize * int(units.sum())
        fits = total <= space or (
            resident is not None and resident + total + self._least_room <= self.memory_limit
        )
        if kept is not None or fits:
            if kept is not None:  # over every document: a document's row is its index
                offsets, values = kept.arrays()
                self.collected.kept = None
                self.progress.advance(documents)
            else:
                offsets, values = self._sets(docs)

            def verified(a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray:
                def measure(x: np.ndarray, y: np.ndarray) -> np.ndarray:
                    return verification.similarity(offsets, values, x, y, exact, self.workers)

                if kept is not None:
                    return self._measured(measure, a, b)
                return self._measured(measure, row_of(a), row_of(b))

            return verified

        # More than the budget: the data of every compared document are built once and
        # spilled to the work folder; pairs are measured in chunks whose documents' data fit
        # the budget, each chunk reading its documents' data back from the spill.
        # The LCS units were counted exactly in pass 1: the rows' lengths are ``units``.
        lcs = self.settings.verify_measure == "lcs"
        sink = self._sets(docs, spill=True, lengths=units if lcs else None)

        def chunked(a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray:
            out = np.empty(a.shape[0], dtype=np.float64)
            if a.shape[0] == 0:
                return out
            # Pairs in the reverse Cuthill-McKee order of their documents: a document's pairs
            # mostly share a chunk, its data read in few chunks (by component alone, 2.5 times
            # at 1M; 1.5 times so). Pairs as positions in ``docs``, resident beside every chunk.
            ia, ib = row_of(a), row_of(b)
            order = locality_pair_order(documents, ia, ib)
            ia, ib = ia[order], ib[order]
            # Two chunks are resident at once (one measured while the next is read), each
            # within half the room that the pairs' own arrays and the documents' maps leave.
            held = VERIFY_PAIR_BYTES * a.shape[0] + VERIFY_DOCUMENT_BYTES * len(self.collected)
            half = max(max(space - held, self._least_room) / 2, 1.0)
            # In units: half / itemsize (a power of two) makes the chunks bytes would.
            chunk_of = chunks_of_pairs(ia, ib, units, half / verification.itemsize)
            bounds = np.flatnonzero(np.diff(chunk_of)) + 1
            del chunk_of
            spans = list(zip([0, *bounds.tolist()], [*bounds.tolist(), a.shape[0]]))
            mark = np.zeros(documents, dtype=bool)

            # Chunk k's data go to buffer k % 2, the next chunk's while this one is measured:
            # two buffers of a chunk's most, their pages mapped once for the whole run (and
            # only those a chunk used: the rest are never touched).
            room = int(half // verification.itemsize)
            buffers = [np.empty(room, np.uint64), np.empty(room, np.uint64)]

            def load(k: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
                """The directory of chunk k's documents and their data (CSR, in row order)."""
                start, end = spans[k]
                mark[ia[start:end]] = True
                mark[ib[start:end]] = True
                # Pairs' rows by the directory, not a slot a document (0.11 GB at 100M).
                directory = directory_of(mark)
                local = listed_rows(mark, directory[1])
                mark[local] = False
                # A pair whose two documents alone exceed the room gets arrays of its own.
                return directory, *sink.take(local, out=buffers[k % 2])

            progress = self._stage == "verify" and a.shape[0] >= 2 * VERIFY_STEP
            if progress:
                self.progress.stage("verify", int(a.shape[0]), "pairs")
            # The next chunk is read (pread, without the GIL) while this one is measured: on
            # a spill larger than the page cache the reads wait on the disk.
            with ThreadPoolExecutor(1) as reader:
                loading = reader.submit(load, 0)
                for k, (start, end) in enumerate(spans):
                    (words, before), chunk_offsets, chunk_values = loading.result()
                    if k + 1 < len(spans):
                        loading = reader.submit(load, k + 1)
                    place = index_dtype(before[-1])
                    out[order[start:end]] = verification.similarity(
                        chunk_offsets,
                        chunk_values,
                        ranks_of(ia[start:end], words, before, place),
                        ranks_of(ib[start:end], words, before, place),
                        exact,
                        self.workers,
                    )
                    self.figures["verification chunks"] += 1
                    if progress:
                        self.progress.advance(end - start)
            buffers.clear()
            return_freed_memory()
            return out

        chunked.reads_spill = True  # each call reads the spill again (pipeline.SetSource)
        return chunked

    def _on_stage(self, name: str) -> None:
        self._stage = name
        c = self.collected
        if name == "exact duplicates" and self._owns_columns:
            # The document order is made (find_groups says so then): nothing after reads the
            # timestamps (an index build, with its sink, keeps them for its table). A view of
            # no memory keeps rows.
            self._charge(-held_bytes(c.timestamps))
            c.timestamps = np.broadcast_to(np.int64(0), (len(c),))
        if name == "candidates" and self._owns_columns:
            # The content keys served the exact duplicates; nothing after reads them.
            c.content_column.release()  # its memory, when it was not spilled
            sig = c.signatures
            sig.content = np.zeros((len(c), 0), dtype=sig.content.dtype)
        return_freed_memory()  # the stage before's temporaries (about 0.5 ms at 1M documents)
        self.progress.stage(name)

    def _measured(
        self, measure: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray
    ) -> np.ndarray:
        """``measure(a, b)``; in the verify stage, in steps of at least ``VERIFY_STEP`` pairs
        that advance the progress display (a bar over the pairs, with rate and time left)."""
        n = a.shape[0]
        if self._stage != "verify" or n < 2 * VERIFY_STEP:
            return measure(a, b)
        self.progress.stage("verify", n, "pairs")
        step = max(VERIFY_STEP, -(-n // 100))
        parts = []
        for start in range(0, n, step):
            parts.append(measure(a[start : start + step], b[start : start + step]))
            self.progress.advance(parts[-1].shape[0])
        return np.concatenate(parts)

    def group(self) -> Groups:
        """Pass 2: :func:`neardup.pipeline.find_groups` over the collected columns."""
        c = self.collected
        if self.work.completed("group"):
            return load_groups(self.work)
        grouping = GROUPING_BYTES * len(c)
        self._charge(grouping)
        self._spill_for_grouping()
        stores = SpillStores(self.work, max(self._least_room, 64))
        on_disk = c.signatures.content.shape[1] == 0  # the content keys: read back by parts
        release_bands = self.settings.pairs != "all" and not self.work.resume
        groups = find_groups(
            c.signatures,
            c.timestamps,
            self.settings,
            # With pairs="all" the band hashes are read again for the pairs, and a
            # checkpoint's files stay until the run ends: neither deletes them once searched.
            band_keys=(lambda: c.band_keys(release=release_bands)) if c.band_columns else None,
            set_source=self.set_source,
            on_stage=self._on_stage,
            workers=self.workers,
            memory=self._room,
            # The band search's pairs and the repair round's buckets, in memory up to the
            # least room each, then on disk (they grow faster than the documents, and the
            # sketches' blocks and the verification data take the room).
            pair_union=stores.pair_union,
            bucket_parts=stores.bucket_parts,
            block_parts=stores.block_parts,
            # A slice's unpacked ends and bounds' temporaries within the least room.
            candidate_slice=max(self._least_room // CANDIDATE_BYTES, 1 << 10),
            exact_duplicates=self._representatives_by_parts if on_disk else None,
            park=functools.partial(self.work.park, "document-order"),
        )
        self._charge(-grouping)
        runs, written = stores.figures()
        self.figures["candidate pair runs"] += runs
        self.figures["spilled bytes"] += written
        for column in c.band_columns:
            column.release()
        if self.work.resume:
            save_groups(self.work, groups)
        return groups

    def _spill_for_grouping(self) -> None:
        """Spill the band hash columns pass 1 left in memory, the last read first, then the
        empty flags and unit counts (0.5 GB at 100M documents, held to the end), until the
        budget, charged the grouping's arrays, has its least room free (at 10M documents the
        band search ran 0.3 GB over the limit beside both). O(bytes spilled)."""
        c = self.collected
        spills = [column.spill for column in reversed(c.band_columns)]
        for spill in spills + [functools.partial(c.spill_flags, name) for name in c.flag_columns]:
            if self.budget.free >= self._least_room:
                return
            self.figures["spilled bytes"] += spill()

    def _representatives_by_parts(self, rank: np.ndarray) -> np.ndarray:
        """The exact duplicates' representatives from the content keys on disk, the parts in
        files of the work folder (:func:`~neardup.exact_duplicates.representatives_by_parts`);
        the keys' file is deleted after."""
        column = self.collected.content_column
        rep = representatives_by_parts(
            column.read_rows,
            column.rows,
            rank,
            self._room(),
            self._content_part,
            self.workers,
        )
        if not self.work.resume:  # a checkpoint's file stays until the run ends
            column.remove()
        return rep

    def _content_part(self, part: int) -> SpillColumn:
        """A part's store of content keys and indices, on disk from its first row."""
        return SpillColumn(self.work, f"content-{part}", np.uint64, MemoryBudget(0), 3)


def _batch_sets(
    batch: DocumentBatch,
    settings: Settings,
    docs: np.ndarray,
    write: Callable[[int, np.ndarray, np.ndarray], None] | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The batch's verification data (CSR); with ``write``, they are written instead (its
    arguments: the batch's first row in ``docs``, the data), and None returned."""
    part_offsets, part = settings.verification.prepare(
        batch.texts, settings.shingle, settings.hash_name
    )
    if write is None:
        return part_offsets, part
    write(int(np.searchsorted(docs, batch.positions[0])), part_offsets, part)
    return part_offsets, None


def _subset(batch: DocumentBatch, rows: np.ndarray) -> DocumentBatch:
    pick = rows.tolist()
    return DocumentBatch(
        ids=[batch.ids[i] for i in pick],
        texts=[batch.texts[i] for i in pick],
        timestamps=batch.timestamps[rows],
        raw_timestamps=[batch.raw_timestamps[i] for i in pick],
        records=[batch.records[i] for i in pick] if batch.records is not None else None,
        positions=batch.positions[rows],
    )
