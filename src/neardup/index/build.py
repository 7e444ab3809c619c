"""A new index from a whole corpus in one pass: :meth:`neardup.index.store.NearDupIndex.build`.

The groups are computed by :func:`neardup.pipeline.find_groups` with the index's settings and
``grouping="components"`` (the code ``dedup`` runs), so the index and ``dedup`` with those
settings agree exactly. Documents get positions 1..n in the given order. The index (its records,
then its first cache generation) is written in a temporary directory beside the target and
renamed into place when complete, so a crash leaves no partial index.

Example:
    >>> import tempfile
    >>> from neardup.index.settings import index_settings
    >>> target = Path(tempfile.mkdtemp()) / "idx"
    >>> path = build_index(target, index_settings(hamming_k=1), ["a", "b"],
    ...                    fingerprints=np.array([0, 1], np.uint64))
    >>> sorted(p.name for p in path.iterdir())
    ['index.sqlite', 'tables-1', 'tables.json']
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

import numpy as np

from neardup.index.cache import new_tables, save_generation
from neardup.index.errors import IndexWriteError, unique_ids
from neardup.index.minhash import band_keys, encode_texts
from neardup.index.sorted_rows import MAX_POSITION
from neardup.index.storage import DB_NAME, install, sqlite_error, write_records
from neardup.index.verifier import summarize
from neardup.io.files import process_gone
from neardup.pipeline import Signatures, find_groups
from neardup.settings import Settings

__all__ = ["build_index"]


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
    signatures_: Signatures | None = None,
) -> Path:
    """Write a new index with ``settings`` at ``target`` and return its path; the arguments
    are :meth:`~neardup.index.store.NearDupIndex.build`'s, checked here.

    Complexity: O(total text) to fingerprint, O(n log n) for the groups and the tables,
    O(n) SQLite inserts (about 1-2 µs a row) plus three index sorts.
    """
    ids = unique_ids(ids)
    n = len(ids)
    if n > MAX_POSITION - 1:
        raise ValueError(f"an index holds at most {MAX_POSITION - 1} documents, got {n}")
    if (texts is None) == (fingerprints is None) and signatures_ is None:
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
    sig = (
        signatures_
        if signatures_ is not None
        else _signatures(n, texts, fingerprints, settings, workers)
    )
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
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        if not overwrite:
            raise FileExistsError(
                f"{target} already exists; choose a new directory or overwrite it"
            )
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
    ids: list[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    original: np.ndarray,
    group_size: np.ndarray,
    minhash_rows: tuple | None,
    summaries: dict[str, np.ndarray] | None,
) -> None:
    """Write the records and the first cache generation (with the verifier's ``summaries``)
    in a temporary directory beside ``target``, then rename it into place; a failure leaves
    nothing behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_builds(target)
    tmp = target.parent / f".{target.name}.building-{os.getpid()}-{time.time_ns()}"
    tmp.mkdir()
    try:
        write_records(tmp, settings, ids, fps, stamps, original, group_size, minhash_rows)
        positions = np.arange(1, len(ids) + 1, dtype=np.int64)
        values = fps if minhash_rows is None else minhash_rows[0]
        tables = new_tables(settings, positions, values)
        save_generation(tmp, tables, 1, max_pos=len(ids), tomb_seq=0, summaries=summaries)
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
