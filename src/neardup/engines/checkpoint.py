"""The checkpoints of ``--resume``: what the out-of-core dedup
(:class:`~neardup.engines.outofcore.OutOfCoreDedup`) records in its work folder after pass 1
and after the grouping, and how a resumed run takes them up again.

Pass 1's checkpoint copies no column. A resumable run moves every per-document column to its
file of the work folder when pass 1 ends (the spill columns' in-memory parts written out:
band hashes, signatures of the estimate, sketches, content keys, unit counts, empty flags;
the IDs and input locations by :class:`~neardup.engines.kept_columns.KeptColumns`), and the
checkpoint records each file's name, type and rows beside the read statistics. A resumed run
reopens the same files as spilled columns (:meth:`~neardup.engines.spill.SpillColumn.reopen`),
so it holds in memory what the run that wrote them held, within the same budget, and the
folder holds each column once: the band hashes, 8 bytes a document a band, are most of it
(25.6 GB at 100M documents with 32 bands). Written whole are only what pass 1 holds in memory
whatever the budget: the timestamps (none when all are equal) and SimHash's fingerprints.
The stages after pass 1 of a resumable run delete none of the recorded files (those of a run
without ``--resume`` go once read for the last time); they go with the folder when the run
succeeds.

Crash safety: the recorded files are flushed to the disk (``fsync``) before the record is
written (atomically, :meth:`~neardup.engines.spill.WorkDir.save_json`), and the record before
the manifest names the stage complete, so a crash at any point leaves a whole checkpoint or
none (pass 1 then runs again). A resumed run checks every file's size against its record.

Example:
    >>> import tempfile
    >>> from neardup.engines.spill import MemoryBudget, WorkDir
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
    ...     column = SpillColumn(work, "sizes", np.int32, MemoryBudget(1 << 20))
    ...     column.append(np.arange(3, dtype=np.int32))
    ...     _ = column.spill()
    ...     again = SpillColumn.reopen(work, "sizes", np.int32, MemoryBudget(0), **recorded(column))
    ...     again.spilled, again.read().tolist()
    (True, [0, 1, 2])
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import numpy as np

from neardup.engines.collected import Collected, held_bytes
from neardup.engines.spill import ColumnFile, MemoryBudget, SpillColumn, WorkDir, checked_size
from neardup.io import ReadStats
from neardup.pipeline import Groups, Signatures
from neardup.settings import Settings

__all__ = ["load_collected", "load_groups", "recorded", "save_collected", "save_groups"]

#: The arrays of :class:`~neardup.pipeline.Groups` that the grouping's checkpoint holds (all
#: but its statistics).
GROUP_ARRAYS = tuple(f.name for f in fields(Groups) if f.name != "stats")


def recorded(column: SpillColumn) -> dict:
    """What a checkpoint records of a spilled column to reopen it: rows and row width."""
    return {"rows": column.rows, "width": column.width}


def save_collected(
    work: WorkDir, settings: Settings, collected: Collected, columns: dict[str, SpillColumn]
) -> None:
    """Record pass 1 in ``work`` as complete: ``columns`` (by name: the band hashes as
    ``band-{j}``, and ``signatures``, ``sketches``, ``content``, ``empty``, ``sizes`` where the
    run has them), every one spilled, and the IDs and input locations in their files, as the
    run left them; the timestamps and SimHash fingerprints written whole. O(files) beside those
    two arrays."""
    c = collected
    if c.id_column is not None or isinstance(c.locations, np.ndarray):
        raise ValueError("a checkpoint records the IDs and input locations in their files")
    unspilled = [name for name, column in columns.items() if column.held]
    if unspilled:
        raise ValueError(f"a checkpoint records spilled columns; {unspilled} are in memory")
    files = [column.path for column in columns.values() if column.rows] + [c.ids_path]
    if c.locations is not None:
        files.append(c.locations.path)
    stamps = c.timestamps
    constant = held_bytes(stamps) == 0
    if not constant:
        work.save("timestamps", stamps)
    if settings.method == "simhash":  # the fingerprints are held in memory whatever N
        work.save("fingerprints", c.signatures.signature)
    _flush_to_disk(files)
    stats = c.stats
    work.save_json(
        "collect",
        {
            "rows": len(c),
            "documents": stats.documents,
            "bytes": stats.bytes,
            "skipped": stats.skipped,
            "skipped_reasons": dict(stats.skipped_reasons),
            "files": stats.files,
            "seconds": c.seconds,
            "bands": len(c.band_columns),
            "columns": {
                name: {"dtype": column.dtype.str, **recorded(column)}
                for name, column in columns.items()
            },
            "timestamp": int(stamps[0]) if constant and len(stamps) else None,
            "locations": c.locations.rows if c.locations is not None else None,
            "ids_bytes": c.ids_path.stat().st_size,
        },
    )
    work.complete("collect")


def load_collected(work: WorkDir, settings: Settings, budget: MemoryBudget) -> Collected:
    """Pass 1 as :func:`save_collected` recorded it: the columns reopened from their files
    (none read), the timestamps and SimHash fingerprints read whole. ValueError when a file
    is not as recorded. O(files) beside those two arrays."""
    info = work.load_json("collect")
    n = info["rows"]
    columns = {
        name: SpillColumn.reopen(work, name, spec["dtype"], budget, spec["rows"], spec["width"])
        for name, spec in info["columns"].items()
    }
    stats = ReadStats(
        documents=info["documents"],
        bytes=info["bytes"],
        skipped=info["skipped"],
        files=info["files"],
    )
    stats.skipped_reasons.update(info["skipped_reasons"])
    if info["timestamp"] is None and n:
        timestamps = work.load("timestamps")
    else:
        timestamps = np.broadcast_to(np.int64(info["timestamp"] or 0), (n,))
    if settings.method == "simhash":
        signature = work.load("fingerprints")
    elif "signatures" in columns:
        signature = columns["signatures"].array()
    else:
        signature = np.zeros((n, 0), np.uint32)
    content = columns["content"]
    sketches = columns.get("sketches")
    flags = {name: columns[name] for name in ("empty", "sizes")}
    sig = Signatures(
        # Spilled content keys are read back by parts in the grouping (OutOfCoreDedup.group).
        content=content.read() if not content.spilled else np.zeros((n, 0), np.uint64),
        signature=signature,
        empty=flags["empty"].array(),
        sizes=flags["sizes"].array(),
        sketches=sketches.array() if sketches is not None else None,
    )
    located = info["locations"]
    checked_size(work.file("ids.arrow"), info["ids_bytes"])
    return Collected(
        id_column=None,
        timestamps=timestamps,
        locations=ColumnFile.reopen(work, "locations", np.int64, (2,), located)
        if located is not None
        else None,
        signatures=sig,
        band_columns=[columns[f"band-{j}"] for j in range(info["bands"])],
        sketch_column=sketches,
        content_column=content,
        stats=stats,
        seconds=info["seconds"],
        ids_path=work.file("ids.arrow"),
        flag_columns=flags,
    )


def save_groups(work: WorkDir, groups: Groups) -> None:
    """Record the grouping in ``work`` as complete: its arrays and statistics. O(n)."""
    for name in GROUP_ARRAYS:
        work.save(name, getattr(groups, name))
    work.save_json("group", groups.stats)
    work.complete("group")


def load_groups(work: WorkDir) -> Groups:
    """The grouping :func:`save_groups` recorded. O(n)."""
    return Groups(*(work.load(name) for name in GROUP_ARRAYS), stats=work.load_json("group"))


def _flush_to_disk(paths: list[Path]) -> None:
    """``fsync`` every file of ``paths``, then their folders: their bytes are on the disk
    before a record names them."""
    for path in [*paths, *sorted({path.parent for path in paths})]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
