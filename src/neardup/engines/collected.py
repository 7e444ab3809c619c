"""What pass 1 of the out-of-core dedup (:mod:`neardup.engines.outofcore`) keeps of every
document: :class:`Collected`, its fixed-width columns in memory or in the run's work folder,
and its timestamps as :class:`TimestampParts` gathers them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from neardup.candidates.band_parts import BandColumn
from neardup.engines.id_file import MappedIds, read_ids
from neardup.engines.kept import KeptSets
from neardup.engines.spill import ColumnFile, SpillColumn
from neardup.io import ReadStats
from neardup.memory import joined_parts
from neardup.pipeline import Signatures


@dataclass
class Collected:
    """What pass 1 keeps of the documents, in input order. Past the budget, the IDs wait in
    a file of the work folder until they are written (:attr:`ids` reads them back) and the
    input locations are read back by rows (:class:`~neardup.engines.spill.ColumnFile`)."""

    id_column: pa.ChunkedArray | None
    timestamps: np.ndarray
    locations: np.ndarray | ColumnFile | None
    signatures: Signatures
    band_columns: list[SpillColumn] = field(default_factory=list)
    #: The column of :attr:`Signatures.sketches` (LCS verification), or None.
    sketch_column: SpillColumn | None = None
    #: The column of the content fingerprints. When it went to disk :attr:`Signatures.content`
    #: may hold no values: pass 2 then reads them back by parts.
    content_column: SpillColumn | None = None
    stats: ReadStats = field(default_factory=ReadStats)
    seconds: float = 0.0
    #: Every document's verification data, when pass 1 built and kept them (else None).
    kept: KeptSets | None = None
    ids_path: Path | None = None  # the IDs' file (Arrow IPC) when ``id_column`` is None
    #: The columns of :attr:`Signatures.empty` and :attr:`Signatures.sizes`, by those names.
    flag_columns: dict[str, SpillColumn] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.timestamps.shape[0]

    @property
    def ids(self) -> pa.ChunkedArray:
        """The IDs (an Arrow string column), read back from their file once if there. O(n)."""
        if self.id_column is None:
            self.id_column = read_ids(self.ids_path)
        return self.id_column

    def mapped_ids(self) -> pa.ChunkedArray | MappedIds:
        """The IDs to write the outputs from: those in memory, or their file through a map
        whose pages the writer drops as it goes (:class:`~neardup.engines.id_file.MappedIds`):
        not read whole. O(chunks)."""
        return self.id_column if self.id_column is not None else MappedIds(self.ids_path)

    def spill_flags(self, name: str) -> int:
        """Move the column ``name`` of :attr:`flag_columns` to disk: the signatures' array
        becomes a read-only map of its file (the candidates' bounds alone read it whole, and
        their readers drop its pages after: :func:`~neardup.memory.drop_mapped_pages`).
        Returns the bytes moved out of memory. O(its bytes)."""
        column = self.flag_columns[name]
        moved = column.spill()
        setattr(self.signatures, name, column.array())
        return moved

    def locations_at(self, positions: np.ndarray) -> np.ndarray:
        """The input locations of the documents at the ascending ``positions``."""
        if isinstance(self.locations, ColumnFile):
            return self.locations.take(positions)
        return self.locations[positions]

    def band_keys(self, release: bool = False) -> BandKeyColumns:
        """Each band's hash column in turn, read a block at a time (from disk when spilled);
        with ``release`` each column's memory goes back to the budget once given, so that it
        is freed as soon as the reader is done with it, and its file is deleted once every
        band is searched (:meth:`BandKeyColumns.done`): it is not read again."""
        return BandKeyColumns(self.band_columns, release)


class BandKeyColumns:
    """The band hash columns of :meth:`Collected.band_keys`, iterated in order (each a
    :class:`BandColumn`); :meth:`done`, called once every band is searched, deletes the
    spilled bands' files when they are not read again (25.6 GB at 100M short documents,
    held until the grouping ended before)."""

    def __init__(self, columns: list[SpillColumn], release: bool):
        self.columns, self.release = columns, release

    def __iter__(self) -> Iterator[BandColumn]:
        for column in self.columns:
            # Yielded straight from the call: this generator keeps no reference to the column
            # while the caller works, so the column is freed once the caller is done with it.
            yield _read_band(column, self.release)

    def done(self) -> None:
        """Every band was searched: with ``release``, their files are deleted. O(bands)."""
        if self.release:
            for column in self.columns:
                column.remove()


def _read_band(column: SpillColumn, release: bool) -> BandColumn:
    """A band's hash column, read a block at a time: a spilled one by positional reads, not
    read whole (8 B a document) nor through its map; with ``release`` its memory goes back
    to the budget (it is not read again)."""
    if column.spilled:
        keys = BandColumn(column.rows, column.read_rows, column.path.with_suffix(".staged"))
    else:
        keys = BandColumn.of(column.array())
    if release:
        column.release()
    return keys


class TimestampParts:
    """Each batch's timestamps (int64), joined once pass 1 ends. While every timestamp equals
    the first (a run without a time field: all 0) none is held, only their count, and the
    joined column is that value broadcast (no memory: 8 bytes a document, 0.8 GB at 100M
    documents, and as much again while the parts were joined); the first batch that differs
    makes the values so far an array.

    Example:
        >>> stamps = TimestampParts()
        >>> stamps.append(np.zeros(3, np.int64)), stamps.append(np.zeros(2, np.int64))
        (0, 0)
        >>> len(stamps), stamps.joined().tolist(), held_bytes(stamps.joined())
        (5, [0, 0, 0, 0, 0], 0)
        >>> stamps.append(np.array([7])), stamps.joined().tolist()
        (48, [0, 0, 0, 0, 0, 7])
    """

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.value: int | None = None  # the one value while all are equal

    def __len__(self) -> int:
        return self.count

    def append(self, stamps: np.ndarray) -> int:
        """Add a batch's timestamps; returns the bytes this adds to memory. O(batch)."""
        added = 0
        if self.count == 0 and stamps.shape[0]:
            self.value = int(stamps[0])
        if self.value is not None and not np.all(stamps == self.value):
            self.parts.append(np.full(self.count, self.value, dtype=np.int64))
            added += self.parts[-1].nbytes
            self.value = None
        if self.value is None:
            self.parts.append(stamps)
            added += stamps.nbytes
        self.count += stamps.shape[0]
        return added

    def joined(self) -> np.ndarray:
        """Every timestamp, in order (a read-only broadcast while all are equal). O(n)."""
        if self.value is not None or self.count == 0:
            return np.broadcast_to(np.int64(self.value or 0), (self.count,))
        return joined_parts(self.parts, np.int64, (0,))


def held_bytes(values: np.ndarray) -> int:
    """Bytes ``values`` holds in memory: none for a broadcast of one value (``strides`` 0),
    else :attr:`~numpy.ndarray.nbytes`."""
    return 0 if values.ndim == 1 and values.strides[0] == 0 else values.nbytes
