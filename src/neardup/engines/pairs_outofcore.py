"""``neardup pairs`` out of core: the pairs and groups of N precomputed SimHash fingerprints
under a memory budget, written byte for byte as the in-memory pipeline
(:func:`neardup.pipeline.find_groups`) would write them.

Stages (:class:`OutOfCorePairs`):

1. **read** the rows as a stream of batches (:class:`~neardup.io.FingerprintBatches`): the IDs
   move to the work folder once the budget's free room falls below an eighth of it
   (:class:`~neardup.engines.kept_columns.KeptColumns`), fingerprints and timestamps once the
   budget has no room for them (:class:`~neardup.engines.spill.SpillColumn`);
2. **search** the permutation tables a part at a time
   (:class:`~neardup.engines.pairs_search.PartitionedSearch`): the links that connect
   documents, to a spill column, and, to report every pair, the pairs themselves to sorted
   runs on disk (:class:`~neardup.engines.pair_runs.PairRuns`), merged in order;
3. **group** the *linked* documents only (those in a pair; every other one is its own group of
   one): their positions, links mapped onto them and joined by the package's union-find, their
   timestamps and fingerprints read back in one sequential pass, then the original of each
   group (:func:`~neardup.groups.originals_of` or :func:`~neardup.groups.center_groups`, as in
   memory) and the group sizes;
4. **write** (by the engine, :func:`~neardup.engines.local.write_in_pieces`): PAIRS from the
   merged pairs, GROUPS in input order, a piece at a time, the IDs of the piece read in order
   and those of the linked documents gathered once.

Memory: the budget for what spills, plus what grows with the linked documents (40 to 70 B
and an ID each, held from the grouping on), one byte a row while the linked documents are
found and a quarter of a byte a row from then on (their
:class:`~neardup.engines.linked_rows.LinkedRows`, which gives a linked document's compact
index in O(1), charged to the budget, and let go after the grouping unless every pair is
written). Outputs do not depend on the budget.

Example:
    >>> import tempfile, pathlib
    >>> from neardup.engines.spill import WorkDir
    >>> from neardup.io import FingerprintBatches
    >>> from neardup.settings import Settings
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "fps.tsv"
    >>> _ = p.write_text("a\\t00000000000000ff\\t2\\nb\\t00000000000000fe\\t1\\nc\\t0000ff0000000000\\t3\\n")
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p.tsv") as work:
    ...     job = OutOfCorePairs(FingerprintBatches([p]), Settings(method="simhash"), work, 1 << 20)
    ...     job.run()
    ...     ids, groups = job.groups_piece(0, 3)
    ...     ids.to_pylist(), groups.original.tolist(), job.stats["pairs"]
    (['a', 'b', 'c', 'b', 'b'], [3, 4, 2], 1)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from neardup.engines.base import Progress
from neardup.engines.kept_columns import KeptColumns
from neardup.engines.linked_rows import LinkedRows
from neardup.engines.pair_runs import PackedFile, PairRuns
from neardup.engines.pairs_search import PartitionedSearch, UnitLinks
from neardup.engines.spill import MemoryBudget, SpillColumn, WorkDir
from neardup.group_labels import group_sizes
from neardup.groups import _flattened, _union_pairs, center_groups, document_order, originals_of
from neardup.io import FingerprintBatches
from neardup.pipeline import Groups
from neardup.settings import Settings
from neardup.simhash import hamming_distance

__all__ = ["SEARCH_ROW_BYTES", "OutOfCorePairs"]

#: Bytes a row of a search part takes at the part's peak: the fingerprints and positions read
#: back (16 B), the radix sort of the identical fingerprints (about 40 B), the tables' two
#: buffers (16 B) and the pairs and links found (about 16 B a row of random fingerprints).
SEARCH_ROW_BYTES = 96

#: Values read from a spilled column at a time (8 MB of uint64).
_READ_VALUES = 1 << 20

_EMPTY = np.zeros(0, dtype=np.int64)


class OutOfCorePairs:
    """The out-of-core ``pairs`` job of one run (module docstring).

    Args:
        batches: the fingerprint rows (a :class:`~neardup.io.FingerprintBatches`).
        settings: SimHash settings: ``hamming_k``, ``grouping``, ``pairs`` (no verification).
        work: the run's work folder.
        memory_limit: bytes of the budget.
        progress: told each stage as it starts.

    After :meth:`run`: :attr:`rows`, :attr:`pair_count`, :attr:`stats` (named as
    :class:`~neardup.pipeline.Groups` names them), :attr:`figures`; then
    :meth:`pairs_piece` and :meth:`groups_piece` give the outputs' rows.
    """

    def __init__(
        self,
        batches: FingerprintBatches,
        settings: Settings,
        work: WorkDir,
        memory_limit: int,
        progress: Progress | None = None,
    ):
        if settings.method != "simhash" or settings.verify is not None:
            raise ValueError(
                f"pairs are SimHash fingerprints without verification; got method="
                f"{settings.method!r}, verify={settings.verify!r}"
            )
        self.batches = batches
        self.settings = settings
        self.work = work
        self.limit = int(memory_limit)
        self.progress = progress or Progress()
        self.rows = 0
        self.pair_count = 0
        self.stats: dict = {}
        self.figures: dict[str, float] = {}
        self._fresh_columns()

    def _fresh_columns(self) -> None:
        self.budget = MemoryBudget(self.limit)
        self.kept = KeptColumns(self.work, self.budget, self.budget.charge, self.limit // 8)
        self.fps = SpillColumn(self.work, "fingerprints", np.uint64, self.budget)
        self.times = SpillColumn(self.work, "timestamps", np.int64, self.budget)

    def run(self) -> None:
        """Read, search and group (stages 1–3 of the module docstring)."""
        seconds: dict[str, float] = {}
        clock = time.perf_counter()
        for stage, step in (
            ("reading", self._read),
            ("candidates", self._search),
            ("groups", self._group),
        ):
            self.progress.stage(stage)
            step()
            now = time.perf_counter()
            seconds[stage], clock = now - clock, now
        self.stats["seconds"] = seconds
        spilled = self.kept.disk_bytes + self.fps.disk_bytes + self.times.disk_bytes
        spilled += self._search_disk + self._links.disk_bytes
        spilled += self._runs.disk_bytes if self._runs is not None else 0
        self.figures = {
            "spilled MB": spilled / 1e6,
            "memory limit MB": self.limit / 1e6,
            "search parts a table group": float(self._parts),
        }

    # -- 1. read ---------------------------------------------------------------------------

    def _read(self) -> None:
        self.batches.on_restart = self._restart
        self._reading = self.batches.buffer_bytes()
        self.budget.charge(self._reading)  # the columns spill that much sooner
        for batch in self.batches:
            ids = pa.concat_arrays(batch.ids.chunks) if batch.ids.num_chunks != 1 else None
            ids = (ids if ids is not None else batch.ids.chunk(0)).cast(pa.large_string())
            self.kept.add(ids, None)
            self.fps.append(batch.fingerprints)
            self.times.append(batch.timestamps)
            self.progress.advance(len(batch), self.fps.rows)
        self.budget.charge(-self._reading)
        self.kept.finish()
        with ThreadPoolExecutor(2) as pool:
            # Each column's batches joined into one array (the search and the grouping read
            # them whole; a spilled column is only closed), both at once: numpy's copies
            # release the GIL.
            list(pool.map(SpillColumn.array, (self.fps, self.times)))
        self.rows = self.fps.rows

    def _restart(self) -> None:
        """The stream starts over from the first row: drop what was kept of it."""
        self.kept.finish()
        for column in (self.fps, self.times):
            column.finish()
        for path in (self.kept.ids_path, self.fps.path, self.times.path):
            if path is not None:
                path.unlink(missing_ok=True)
        self._fresh_columns()
        self.budget.charge(self._reading)

    # -- 2. search -------------------------------------------------------------------------

    def _search(self) -> None:
        room = self.budget.room(least=0.25)
        search = PartitionedSearch(
            self.work, self.rows, self.settings.hamming_k, max(1, room // SEARCH_ROW_BYTES)
        )
        self._parts = 1 << search.bits
        self._links = SpillColumn(self.work, "links", np.uint64, self.budget)
        self._runs = None
        if self.settings.pairs == "all":
            self._runs = PairRuns(self.work, max(8, room // 4), name="pairs")
        distinct = near = 0

        def found(unit: UnitLinks) -> None:
            nonlocal distinct, near
            self._links.append(unit.links)
            if self._runs is not None:
                self._runs.add(unit.pairs)
            distinct += unit.distinct
            near += unit.near

        search.run(self._fingerprints, found, self._runs is not None)
        self._links.finish()
        self._search_disk = search.disk_bytes
        self.stats.update(
            documents=self.rows,
            exact_duplicates=self.rows - distinct,
            candidates=near,
            rejected=0,
            linked_untested=0,
        )

    def _fingerprints(self, start: int, stop: int) -> np.ndarray:
        return _values(self.fps, start, stop)

    # -- 3. group --------------------------------------------------------------------------

    def _group(self) -> None:
        n = self.rows
        if self._runs is not None:
            # Merged before the linked documents' arrays exist: its blocks come and go first.
            self._pairs: np.ndarray | PackedFile = self._runs.values()
            self.pair_count = len(self._pairs)
        self._linked_rows = LinkedRows(n, self.budget)
        for packed in _chunks(self._links):
            self._linked_rows.mark(packed)
        #: The linked documents, ascending: the compact index of a document is its place here.
        self.linked = self._linked_rows.finish()
        m = self.linked.shape[0]
        with ThreadPoolExecutor(2) as pool:
            # Three parts that need none of the others, on two cores: the linked documents'
            # IDs, their order in time, and their components (here, the links joined).
            ids = pool.submit(self._linked_ids)
            ranked = pool.submit(self._linked_ranks)
            labels = np.arange(m, dtype=np.int64)
            for packed in _chunks(self._links):
                _union_pairs(*self._linked_rows.compact(packed), labels)
            _flattened(labels)
            self.linked_fps, rank = ranked.result()
            self.linked_ids = ids.result()
        self._links.release()
        if self._runs is None:
            # Only the merged pairs' ends need compact indices after the links.
            self._linked_rows.release()
        if self.settings.grouping == "center":
            original = center_groups(labels, rank, self._near)
        else:
            original = originals_of(labels, rank)
        del labels, rank
        #: Each linked document's original, as a compact index.
        self.original = np.asarray(original, dtype=np.int64)
        del original
        self.sizes = group_sizes(self.original)
        moved = np.flatnonzero(self.original != np.arange(m))
        removed = moved.shape[0]
        if self._runs is None:
            self._pairs = moved
            self.pair_count = removed
        self.stats.update(
            pairs=self.pair_count,
            groups=n - removed,
            duplicates_removed=removed,
            largest_group=int(self.sizes.max()) if m else int(n > 0),
            empty_documents=0,
        )

    def _linked_ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """The linked documents' fingerprints, and their ranks in time
        (:func:`~neardup.groups.document_order`). Every row's fingerprints and timestamps are
        let go as soon as the linked documents' are read from them."""
        linked_fps = _gather(self.fps, self.linked)
        self.fps.release()
        times = _gather(self.times, self.linked)
        self.times.release()
        return linked_fps, document_order(times)

    def _near(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The run's relation between linked documents (compact indices)."""
        distance = hamming_distance(self.linked_fps[x], self.linked_fps[y])
        return distance <= self.settings.hamming_k

    def _linked_ids(self) -> pa.Array:
        """The IDs of the linked documents, in one sequential pass over the IDs."""
        parts = []
        for start, ids in _id_pieces(self.kept):
            lo, hi = np.searchsorted(self.linked, [start, start + len(ids)])
            if hi > lo:
                parts.append(ids.take(pa.array(self.linked[lo:hi] - start)))
        return pa.concat_arrays(parts) if parts else pa.array([], type=pa.large_string())

    # -- 4. the outputs' rows ----------------------------------------------------------------

    def pairs_piece(self, start: int, stop: int) -> tuple[pa.ChunkedArray, Groups]:
        """PAIRS' rows ``start..stop-1``: the IDs of their first ends then of their second ends,
        and a :class:`~neardup.pipeline.Groups` holding those pairs over them (for
        :func:`~neardup.engines.local.pairs_columns`). O(rows)."""
        if self._runs is not None:
            a, b = self._linked_rows.compact(self._pairs[start:stop])
        else:
            b = self._pairs[start:stop]
            a = self.original[b]
        value = hamming_distance(self.linked_fps[a], self.linked_fps[b])
        passed = value <= self.settings.hamming_k
        # The piece's IDs alone, the ends' of its pairs one after the other.
        k = a.shape[0]
        ids = self.linked_ids.take(pa.array(np.concatenate([a, b])))
        groups = Groups(_EMPTY, _EMPTY, _EMPTY, np.arange(k), np.arange(k, 2 * k), value, passed)
        return _strings([ids]), groups

    def groups_piece(self, start: int, stop: int) -> tuple[pa.ChunkedArray, Groups]:
        """GROUPS' rows ``start..stop-1`` (in order: each call must start where the last one
        stopped): their IDs followed by those of the originals of their linked rows, and a
        :class:`~neardup.pipeline.Groups` over those IDs (for
        :func:`~neardup.engines.local.groups_columns`, rows ``0..stop-start-1``). O(rows)."""
        m = stop - start
        ids = self._ids_in_order(start, stop)
        lo, hi = np.searchsorted(self.linked, [start, stop])
        rows = self.linked[lo:hi] - start
        originals = self.original[lo:hi]
        original = np.arange(m, dtype=np.int64)
        original[rows] = m + np.arange(hi - lo)
        is_original = np.ones(m, dtype=bool)
        is_original[rows] = originals == np.arange(lo, hi)
        size = np.ones(m, dtype=np.int64)
        size[rows] = self.sizes[lo:hi]
        taken = self.linked_ids.take(pa.array(originals))
        groups = Groups(original, is_original, size, _EMPTY, _EMPTY, _EMPTY, _EMPTY)
        return _strings([ids, taken]), groups

    def _ids_in_order(self, start: int, stop: int) -> pa.Array:
        if start == 0:
            self._reading = _IdCursor(_id_pieces(self.kept))
        return self._reading.take(stop - start)


class _IdCursor:
    """The IDs read forward, ``count`` at a time, from their pieces in order."""

    def __init__(self, pieces: Iterator[tuple[int, pa.Array]]):
        self.pieces = pieces
        self.current = pa.array([], type=pa.large_string())

    def take(self, count: int) -> pa.Array:
        parts = []
        while count > 0:
            if len(self.current) == 0:
                self.current = next(self.pieces)[1]
            part = self.current.slice(0, count)
            self.current = self.current.slice(len(part))
            parts.append(part)
            count -= len(part)
        return pa.concat_arrays(parts) if parts else pa.array([], type=pa.large_string())


def _id_pieces(kept: KeptColumns) -> Iterator[tuple[int, pa.Array]]:
    """``(first row, IDs)`` of the kept IDs, piece by piece in order: the chunks in memory,
    or the record batches of their file, one read at a time."""
    start = 0
    if kept.ids is not None:
        for chunk in kept.ids.chunks:
            yield start, chunk
            start += len(chunk)
        return
    with pa.OSFile(str(kept.ids_path), "rb") as source:
        reader = pa.ipc.open_file(source)
        for k in range(reader.num_record_batches):
            ids = reader.get_batch(k).column(0)
            yield start, ids
            start += len(ids)


def _strings(parts: list[pa.Array]) -> pa.ChunkedArray:
    """A piece's IDs as one chunk (taken from at once) of Arrow ``string``, as the in-memory
    run writes them (a Parquet output records the type)."""
    return pa.chunked_array([pa.concat_arrays([part.cast(pa.string()) for part in parts])])


def _values(column: SpillColumn, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop-1`` of a one-value column, read with ``pread`` once spilled."""
    if not column.spilled:
        return column.array()[start:stop]
    return column.take_ranges(np.array([start]), np.array([stop]))[1]


def _chunks(column: SpillColumn) -> Iterator[np.ndarray]:
    """The values of ``column`` in order, :data:`_READ_VALUES` at a time."""
    for start in range(0, column.rows, _READ_VALUES):
        yield _values(column, start, min(column.rows, start + _READ_VALUES))


def _gather(column: SpillColumn, positions: np.ndarray) -> np.ndarray:
    """``column[positions]`` for ascending ``positions``: one sequential pass over a spilled
    column, :data:`_READ_VALUES` values at a time. O(rows)."""
    if not column.spilled:
        return column.array()[positions]
    out = np.empty(positions.shape[0], dtype=column.dtype)
    starts = np.arange(0, column.rows + _READ_VALUES, _READ_VALUES)
    bounds = np.searchsorted(positions, starts)
    for k in range(starts.shape[0] - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if hi > lo:
            start = int(starts[k])
            values = _values(column, start, min(column.rows, start + _READ_VALUES))
            out[lo:hi] = values[positions[lo:hi] - start]
    return out
