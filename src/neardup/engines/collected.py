"""What pass 1 of the out-of-core dedup (:mod:`neardup.engines.outofcore`) keeps of every
document: :class:`Collected`, its fixed-width columns in memory or in the run's work folder."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from neardup.candidates.band_parts import BandColumn
from neardup.engines.kept import KeptSets
from neardup.engines.spill import ColumnFile, SpillColumn, read_ids
from neardup.io import ReadStats
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
    #: The column of the content fingerprints (None for a resumed run). When it went to disk
    #: :attr:`Signatures.content` may hold no values: pass 2 then reads them back by parts.
    content_column: SpillColumn | None = None
    stats: ReadStats = field(default_factory=ReadStats)
    seconds: float = 0.0
    #: Every document's verification data, when pass 1 built and kept them (else None).
    kept: KeptSets | None = None
    ids_path: Path | None = None  # the IDs' file (Arrow IPC) when ``id_column`` is None

    def __len__(self) -> int:
        return self.timestamps.shape[0]

    @property
    def ids(self) -> pa.ChunkedArray:
        """The IDs (an Arrow string column), read back from their file once if there. O(n)."""
        if self.id_column is None:
            self.id_column = read_ids(self.ids_path)
        return self.id_column

    def locations_at(self, positions: np.ndarray) -> np.ndarray:
        """The input locations of the documents at the ascending ``positions``."""
        if isinstance(self.locations, ColumnFile):
            return self.locations.take(positions)
        return self.locations[positions]

    def band_keys(self, release: bool = False) -> Iterator[BandColumn]:
        """Each band's hash column in turn, read a block at a time (from disk when spilled);
        with ``release`` each column's memory goes back to the budget once given, so that it
        is freed as soon as the reader is done with it (it is not read again)."""
        for column in self.band_columns:
            # Yielded straight from the call: this generator keeps no reference to the column
            # while the caller works, so the column is freed once the caller is done with it.
            yield _read_band(column, release)


def _read_band(column: SpillColumn, release: bool) -> BandColumn:
    """A band's hash column, read a block at a time: a spilled one by positional reads, not
    read whole (8 B a document) nor through its map; with ``release`` its memory goes back
    to the budget (it is not read again)."""
    if column.spilled:
        keys = BandColumn(column.rows, column.read_rows)
    else:
        keys = BandColumn.of(column.array())
    if release:
        column.release()
    return keys
