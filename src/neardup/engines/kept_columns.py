"""The IDs and input locations that pass 1 keeps for later: in memory while the budget has
room, else in the work folder, written batch by batch as they are read.

Only the writing needs the IDs, and only the re-read the input locations of some documents.
Both grow with N (about 35 B a document for short IDs), so an out-of-core run
(:class:`neardup.engines.outofcore.OutOfCoreDedup`) charges them to its budget as they are
read; once the budget's free room falls below its least share, everything held so far goes to
the work folder and every later batch is written there directly: the IDs to an Arrow IPC file
(read back whole when the outputs are written), the locations to a
:class:`~neardup.engines.spill.ColumnFile` read back by rows. Writing them while reading, not
after, keeps them out of the reading stage's peak as well. Outputs do not depend on where
they were kept.

Example:
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from neardup.engines.spill import MemoryBudget, WorkDir
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
    ...     budget = MemoryBudget(64)
    ...     kept = KeptColumns(work, budget, budget.charge, least_room=32)
    ...     for start in (0, 2):
    ...         ids = pa.array(["a", "b"], type=pa.large_string())
    ...         kept.add(ids, np.array([[0, start], [0, start + 1]]))
    ...     kept.finish()
    ...     kept.ids_path is not None, kept.read_ids().to_pylist(), kept.locations.take([3])
    (True, ['a', 'b', 'a', 'b'], array([[0, 3]]))
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from neardup.engines.id_file import IdFile, read_ids
from neardup.engines.spill import ColumnFile, MemoryBudget, WorkDir
from neardup.memory import joined_parts

__all__ = ["KeptColumns"]


class KeptColumns:
    """Pass 1's IDs and input locations, batch by batch (module docstring).

    Args:
        work: the run's work folder.
        budget: the run's budget; its free room decides when the columns move to disk.
        charge: charges bytes to the budget (negative: gives them back); the caller's
            accounting, called for what is held in memory.
        least_room: bytes of free room below which the columns move to disk.
        may_spill: False keeps everything in memory (a caller that stores them itself).
    """

    def __init__(
        self,
        work: WorkDir,
        budget: MemoryBudget,
        charge: Callable[[int], None],
        least_room: int,
        may_spill: bool = True,
    ):
        self.work = work
        self.budget = budget
        self.charge = charge
        self.least_room = int(least_room)
        self.may_spill = may_spill
        self._ids: list[pa.Array] = []
        self._locations: list[np.ndarray] = []
        self._located = True  # every batch so far had locations (else none are kept)
        self._held = 0  # bytes charged for what is held in memory
        self._id_file: IdFile | None = None
        #: The IDs once pass 1 ends: in memory (None when on disk).
        self.ids: pa.ChunkedArray | None = None
        #: The IDs' Arrow IPC file when they went to disk (else None).
        self.ids_path: Path | None = None
        #: The input locations once pass 1 ends: an array, a ColumnFile, or None (some batch
        #: had none).
        self.locations: np.ndarray | ColumnFile | None = None
        #: Bytes written to the work folder.
        self.disk_bytes = 0

    def add(self, ids: pa.Array, locations: np.ndarray | None) -> None:
        """Keep one batch's IDs (an Arrow string array) and locations (int64[rows, 2], or None
        when the reader has none). O(rows)."""
        if locations is None:
            self._drop_locations()
        elif self._located:
            locations = np.asarray(locations, dtype=np.int64)
            if isinstance(self.locations, ColumnFile):
                self.locations.append(locations)
            else:
                self._locations.append(locations)
                self._hold(locations.nbytes)
        if self._id_file is not None:
            self._id_file.write(ids)
            return
        self._ids.append(ids)
        self._hold(ids.nbytes)
        if self.may_spill and self.budget.free < self.least_room:
            self._to_disk()

    def finish(self, to_disk: bool = False) -> None:
        """End of pass 1: move the columns to disk if the budget's room is short now, or
        ``to_disk`` asks (a ``--resume`` checkpoint records their files), and set :attr:`ids`,
        :attr:`ids_path` and :attr:`locations`."""
        short = self.may_spill and self.budget.free < self.least_room
        if self._id_file is None and (short or to_disk):
            self._to_disk()
        if self._id_file is not None:
            self._id_file.close()
            self.disk_bytes = self.ids_path.stat().st_size
            if isinstance(self.locations, ColumnFile):
                self.disk_bytes += self.locations.disk_bytes
            return
        self.ids = pa.chunked_array(self._ids, type=pa.large_string())
        if self._located:
            self.locations = joined_parts(self._locations, np.int64, (0, 2))
        self._ids, self._locations = [], []

    def read_ids(self) -> pa.ChunkedArray:
        """The IDs, read back from their file when they went to disk. O(n)."""
        return self.ids if self.ids_path is None else read_ids(self.ids_path)

    def _hold(self, nbytes: int) -> None:
        self._held += int(nbytes)
        self.charge(int(nbytes))

    def _drop_locations(self) -> None:
        """A batch without locations: the reader fetches by other means, none are kept."""
        if self._located:
            self._hold(-sum(part.nbytes for part in self._locations))
            self._located, self._locations, self.locations = False, [], None

    def _to_disk(self) -> None:
        """Write what is held and give its bytes back; later batches go straight to disk."""
        self.ids_path = self.work.file("ids.arrow")
        self._id_file = IdFile(self.ids_path)
        for part in self._ids:
            self._id_file.write(part)
        if self._located:
            parts = self._locations or [np.zeros((0, 2), np.int64)]
            self.locations = ColumnFile(self.work, "locations", parts[0])
            for part in parts[1:]:
                self.locations.append(part)
        self._ids, self._locations = [], []
        self.charge(-self._held)
        self._held = 0
