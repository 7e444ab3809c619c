"""A new index from a whole corpus in one pass: :meth:`neardup.index.store.NearDupIndex.build`
(documents in memory) and :func:`build_from_files` (``neardup index build``: files, streamed).

The groups are computed by :func:`neardup.pipeline.find_groups` with the index's settings and
``grouping="components"`` (the code ``dedup`` runs), so the index and ``dedup`` with those
settings agree exactly. Documents get positions 1..n in the given order. The index (its records,
then its first cache generation) is written in a temporary directory beside the target and
renamed into place when complete, so a crash leaves no partial index.

From files, the texts are never all in memory: the build is ``dedup``'s out-of-core job
(:mod:`neardup.engines.outofcore`, under the same ``--memory-limit`` and ``--tmp-dir``), whose
first pass also hands each batch to the index: its IDs are checked and, for a MinHash index, its
band keys and verifier summaries (sizes, unit and count sketches) go to spill columns
(:class:`~neardup.engines.spill.SpillColumn`: in memory while the run's budget allows, else in
its work folder) and its zstd-compressed texts to a file of the work folder. Once grouped, the
records are written from those into SQLite in chunks, and the band tables are sorted from the
keys one band at a time.

Example:
    >>> import tempfile
    >>> from neardup.index.settings import index_settings
    >>> target = Path(tempfile.mkdtemp()) / "idx"
    >>> path = build_index(target, index_settings(hamming_k=1), ["a", "b"],
    ...                    fingerprints=np.array([0, 1], np.uint64))
    >>> sorted(p.name for p in path.iterdir())
    ['closed.json', 'index.sqlite', 'tables-1', 'tables.json', 'writer.lock']
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from neardup import signals
from neardup.engines.base import Corpus, Progress
from neardup.engines.outofcore import BatchSink
from neardup.engines.spill import MemoryBudget, SpillColumn, WorkDir
from neardup.index.cache import new_tables, save_generation
from neardup.index.errors import IndexWriteError, unique_ids
from neardup.index.minhash import band_keys, encode_texts, keys_of_band_hashes
from neardup.index.sorted_rows import MAX_POSITION
from neardup.index.storage import (
    DB_NAME,
    LOCK_NAME,
    install,
    mark_closed,
    sqlite_error,
    write_records,
)
from neardup.index.verifier import summarize
from neardup.io import ReadStats
from neardup.io.atomic import process_gone
from neardup.pipeline import Signatures, find_groups
from neardup.settings import Settings

if TYPE_CHECKING:
    from neardup.engines.local import LocalEngine

__all__ = ["build_from_files", "build_index"]


def build_index(
    target: Path,
    settings: Settings,
    ids: Sequence[str],
    *,
    texts: Sequence[str] | None = None,
    fingerprints: np.ndarray | None = None,
    timestamps_us: np.ndarray | None = None,
    workers: int | None = 1,
    overwrite: bool = False,
) -> Path:
    """Write a new index with ``settings`` at ``target`` and return its path; the arguments
    are :meth:`~neardup.index.store.NearDupIndex.build`'s, checked here.

    Complexity: O(total text) to fingerprint, O(n log n) for the groups and the tables,
    O(n) SQLite inserts (about 1-2 µs a row) plus three index sorts.
    """
    ids = unique_ids(ids)
    n = len(ids)
    _check_count(n)
    if (texts is None) == (fingerprints is None):
        raise ValueError("give exactly one of texts and fingerprints")
    if settings.method == "minhash" and texts is None:
        raise ValueError(
            "a MinHash index is built from texts (it keeps them to verify "
            "candidates); fingerprints are SimHash's"
        )
    if texts is not None:
        texts = list(texts)
        if len(texts) != n:
            raise ValueError(f"texts must have one entry per id ({n}), got {len(texts)}")
    sig = _signatures(n, texts, fingerprints, settings, workers)
    if len(sig) != n:
        raise ValueError(f"signatures must have one row per id ({n}), got {len(sig)}")
    stamps = np.zeros(n, np.int64) if timestamps_us is None else np.asarray(timestamps_us, np.int64)
    if stamps.shape != (n,):
        raise ValueError(f"timestamps_us must have shape ({n},), got {stamps.shape}")
    groups = find_groups(sig, stamps, settings, texts)
    minhash_rows = summaries = None
    if settings.method == "minhash":
        # The content fingerprint stands in the fingerprint column (exact duplicates).
        fps = np.ascontiguousarray(sig.content[:, 0], dtype=np.uint64)
        summaries = summarize(texts, settings)
        minhash_rows = (
            band_keys(sig.signature, settings),
            summaries["sizes"][1:].astype(np.int64),
            encode_texts(texts),
        )
    else:
        fps = np.ascontiguousarray(sig.signature, dtype=np.uint64)
    _check_target(target, overwrite)
    _write_new_index(
        target,
        settings,
        ids,
        fps,
        stamps,
        groups.original,
        groups.group_size,
        minhash_rows,
        summaries,
    )
    return target


def build_from_files(
    target: Path,
    settings: Settings,
    corpus: Corpus,
    engine: LocalEngine,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> ReadStats:
    """Write a new index with ``settings`` at ``target`` from the documents in the files of
    ``corpus``, streamed (see the module docstring) under ``engine``'s memory limit, temp dir and
    workers; ``progress`` shows the stages (reading, grouping, writing, tables). Returns the
    reading's statistics. The index answers as :func:`build_index` over the same documents does.

    Memory: that of ``dedup``'s out-of-core job (about ``64 + len(id)`` bytes a document plus
    the budget); then, for MinHash, the summaries (196 bytes a document) and the band tables
    being sorted from the keys (``12 · bands`` bytes a document; ``8 · bands + 2`` once built,
    what the index holds open), or SimHash's tables. Temp disk: the compressed texts and what
    the budget does not hold of the band hashes, keys and summaries. Complexity: as
    :func:`build_index`.
    """
    progress = progress or Progress()
    _check_target(target, overwrite)
    with engine.work_dir(corpus, settings, str(target)) as work:
        job = engine.out_of_core(corpus, settings, work, progress)
        sink = _RecordSink(work, settings, job.budget)
        collected = job.collect(sink)
        n = len(collected)
        _check_count(n)
        groups = job.group()
        if collected.kept is not None:
            collected.kept.drop()
        sig = collected.signatures
        minhash_rows = summaries = None
        if settings.method == "minhash":
            fps = np.ascontiguousarray(sig.content[:, 0], dtype=np.uint64)
            summaries = {name: column.array() for name, column in sink.summaries.items()}
            minhash_rows = (
                sink.keys.array(),
                summaries["sizes"][1:].astype(np.int64),
                _StoredTexts(sink.texts, sink.text_ends),
            )
        else:
            fps = np.ascontiguousarray(sig.signature, dtype=np.uint64)
        progress.stage("writing", n, "docs")
        _write_new_index(
            target,
            settings,
            _IdColumn(collected.ids, progress),
            fps,
            collected.timestamps,
            groups.original,
            groups.group_size,
            minhash_rows,
            summaries,
            progress,
        )
    return collected.stats


class _RecordSink(BatchSink):
    """Pass 1 of :func:`build_from_files`: checks each batch's IDs and, for a MinHash index,
    keeps each document's band keys, compressed text (bytes, on disk, and their running end)
    and verifier summaries in spill columns sharing the run's ``budget``. The summaries' columns
    start with row 0 (position 0: unknown), as :func:`~neardup.index.verifier.summarize` gives
    them."""

    def __init__(self, work: WorkDir, settings: Settings, budget: MemoryBudget):
        self.settings = settings
        self.minhash = settings.method == "minhash"
        self.summaries: dict[str, SpillColumn] = {}
        if not self.minhash:
            return

        def column(name: str, like: np.ndarray, budget: MemoryBudget = budget) -> SpillColumn:
            width = like.shape[1] if like.ndim == 2 else 1
            return SpillColumn(work, f"index-{name}", like.dtype, budget, width)

        self.keys = column("keys", np.zeros((0, settings.bands), np.uint32))
        # The texts are read once, in order, when the records are written: they go straight
        # to disk and leave the budget to the columns that grouping reads.
        self.texts = column("texts", np.zeros(0, np.uint8), MemoryBudget(0))
        self.text_ends = column("text-ends", np.zeros(0, np.int64))
        self._text_end = 0
        first = summarize([], settings)
        for name, rows in first.items():
            self.summaries[name] = column(name, rows)
            self.summaries[name].append(rows)

    def prepare(self, batch, sig: Signatures, keys: np.ndarray | None) -> tuple | None:
        # The reader refuses repeated IDs (naming file and line); the index's ID rules are
        # checked here.
        unique_ids(batch.ids, " in the input")
        if not self.minhash:
            return None
        blobs = encode_texts(batch.texts)
        lengths = np.fromiter(map(len, blobs), np.int64, len(blobs))
        return (
            # In rows here, on the worker (``keys`` come band by band): the column's append
            # then copies nothing.
            np.ascontiguousarray(keys_of_band_hashes(keys)),
            np.frombuffer(b"".join(blobs), np.uint8),
            lengths,
            summarize(batch.texts, self.settings),
        )

    def consume(self, batch, prepared: tuple | None) -> None:
        if prepared is None:
            return
        keys, text_bytes, lengths, summaries = prepared
        self.keys.append(keys)
        self.texts.append(text_bytes)
        self.text_ends.append(self._text_end + np.cumsum(lengths))
        self._text_end += text_bytes.shape[0]
        for name, column in self.summaries.items():
            column.append(summaries[name][1:])


class _IdColumn:
    """The IDs of the documents as the records writer takes them: ``len`` and slices (lists of
    ``str``), converted from Arrow one slice at a time; each slice taken advances
    ``progress`` (the writer takes them in order, once)."""

    def __init__(self, ids: pa.ChunkedArray, progress: Progress):
        self.ids = ids
        self.progress = progress

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, rows: slice) -> list[str]:
        start, stop, _ = rows.indices(len(self.ids))
        self.progress.advance(max(0, stop - start))
        return self.ids.slice(start, max(0, stop - start)).to_pylist()


class _StoredTexts:
    """The compressed texts of a :class:`_RecordSink` as the records writer takes them:
    ``len`` and slices (lists of ``bytes``), each slice read back from its column in one
    range."""

    def __init__(self, texts: SpillColumn, ends: SpillColumn):
        self.texts = texts
        self.ends = ends.array()

    def __len__(self) -> int:
        return self.ends.shape[0]

    def __getitem__(self, rows: slice) -> list[bytes]:
        start, stop, _ = rows.indices(len(self))
        if stop <= start:
            return []
        ends = np.asarray(self.ends[start:stop], np.int64)
        first = int(self.ends[start - 1]) if start else 0
        _, values = self.texts.take_ranges(np.array([first]), ends[-1:])
        data = values.tobytes()
        cuts = (ends - first).tolist()
        return [data[a:b] for a, b in zip([0, *cuts[:-1]], cuts)]


def _check_count(n: int) -> None:
    if n > MAX_POSITION - 1:
        raise ValueError(f"an index holds at most {MAX_POSITION - 1} documents, got {n}")


def _check_target(target: Path, overwrite: bool) -> None:
    """Refuse to replace an existing, non-empty ``target`` unless ``overwrite``."""
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        if not overwrite:
            raise FileExistsError(
                f"{target} already exists; choose a new directory, or replace it with --force "
                "(overwrite=True in Python)"
            )


def _signatures(
    n: int,
    texts: list[str] | None,
    fingerprints: np.ndarray | None,
    settings: Settings,
    workers: int | None,
) -> Signatures:
    """The signatures to group with: of the texts (on ``workers`` processes), or standing in
    for SimHash ``fingerprints`` given without texts."""
    if texts is not None:
        from neardup.engines.local import signatures_parallel

        # Verification data is built by find_groups for the documents with candidates only.
        return signatures_parallel(texts, settings, workers, keep_sets=False)
    fps = np.asarray(fingerprints)
    if fps.dtype != np.uint64:
        if fps.size and fps.dtype.kind not in "iu":
            raise ValueError(f"fingerprints must be uint64, got dtype {fps.dtype}")
        fps = fps.astype(np.uint64)
    if fps.shape != (n,):
        raise ValueError(f"fingerprints must have shape ({n},), got {fps.shape}")
    # Without texts, identical fingerprints play the part of identical contents.
    content = np.stack([fps, np.zeros(n, np.uint64)], axis=1)
    return Signatures(content, fps, np.zeros(n, bool), np.zeros(n, np.int64))


def _write_new_index(
    target: Path,
    settings: Settings,
    ids: Sequence[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    original: np.ndarray,
    group_size: np.ndarray,
    minhash_rows: tuple | None,
    summaries: dict[str, np.ndarray] | None,
    progress: Progress | None = None,
) -> None:
    """Write the records and the first cache generation (with the verifier's ``summaries``)
    in a temporary directory beside ``target``, with the files of a clean close, then rename it
    into place; a failure or a signal before the rename leaves nothing behind, one during it
    is raised once the whole index is in place. ``ids`` and the texts of ``minhash_rows`` need
    only ``len`` and slices."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_builds(target)
    tmp = target.parent / f".{target.name}.building-{os.getpid()}-{time.time_ns()}"
    tmp.mkdir()
    try:
        write_records(tmp, settings, ids, fps, stamps, original, group_size, minhash_rows)
        positions = np.arange(1, len(ids) + 1, dtype=np.int64)
        values = fps if minhash_rows is None else minhash_rows[0]
        if progress is not None:
            progress.stage("tables")
        tables = new_tables(settings, positions, values)
        save_generation(tmp, tables, 1, max_pos=len(ids), tomb_seq=0, summaries=summaries)
        # The files a writer's clean close leaves, so that the index is the same whether or not
        # the command gets to open and close it after the rename.
        (tmp / LOCK_NAME).touch()
        mark_closed(tmp)
        # The point of no return: a signal during the renames (two with --force) is raised
        # once the new index is in place, never between them.
        with signals.deferred():
            install(tmp, target)
    except BaseException as error:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(error, sqlite3.Error):
            raise sqlite_error(error, target / DB_NAME) from error
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise IndexWriteError(
                error.errno,
                f"no space left on the device of {target.parent} while building {target}: "
                "nothing was installed (the partial copy was removed); free some space",
            ) from error
        raise


def _remove_dead_builds(target: Path) -> None:
    """Remove what builds of ``target`` killed before they could clean up left beside it:
    their temporary copies (``.NAME.building-PID-…``) and, once ``target`` exists, the indexes
    they replaced (``.NAME.old-PID-…``; without ``target`` it is the last index there is),
    when process PID no longer exists. O(files beside ``target``)."""
    kinds = "building|old" if target.exists() else "building"
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(?:{kinds})-(\d+)-\d+$")
    for path in target.parent.iterdir():
        match = pattern.match(path.name)
        if match and process_gone(int(match[1])):
            shutil.rmtree(path, ignore_errors=True)
