"""Candidate pairs on disk: the band search's distinct pairs past a bound, merged back in order.

The MinHash band search (:func:`neardup.candidates.bands.packed_pairs_from_band_columns`)
collects the distinct candidate pairs of every band, packed ``left << 32 | right`` (uint64,
8 bytes a pair), into one sorted union. Their number grows faster than the documents (random
pairs of short texts reach a band collision by chance): 39M at 10M short documents, 313M at
50M. :class:`PairRuns` is that union under a bound: while its pairs take at most ``limit``
bytes they stay in memory, exactly as before; past it, the union's levels (each sorted and
distinct) are written to the work folder as runs, and once the search ends the runs are
merged (:func:`merge_runs`, a k-way merge by blocks) into one file of the sorted distinct
pairs, read back a slice at a time (:class:`PackedFile`). The pairs and their order are those
of the union in memory.

Example:
    >>> import tempfile
    >>> from neardup.engines.spill import WorkDir
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
    ...     runs = PairRuns(work, limit=16)
    ...     for band in ([1, 5, 9], [2, 5], [9, 12]):
    ...         runs.add(np.array(band, dtype=np.uint64))
    ...     packed = runs.values()
    ...     packed.shape, packed[0:3].tolist(), packed[3:5].tolist(), runs.spilled_runs
    ((5,), [1, 2, 5], [9, 12], 2)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from neardup.candidates.bands import DistinctUnion
from neardup.candidates.radix import compact_distinct
from neardup.engines.spill import WorkDir, write_array
from neardup.io.write import writing

#: Bytes a value (a packed pair).
_VALUE_BYTES = 8


def _read_values(fd: int, start: int, count: int) -> np.ndarray:
    """``count`` uint64 values of the file ``fd`` from value ``start`` (positional reads,
    no memory map: a map would leave the whole file resident once read)."""
    out = np.empty(count, dtype=np.uint64)
    view = memoryview(out).cast("B")
    done = 0
    while done < view.nbytes:
        got = os.preadv(fd, [view[done:]], (start * _VALUE_BYTES) + done)
        if got == 0:
            raise ValueError(f"spilled pairs: the file ends before value {start + count}")
        done += got
    return out


class PackedFile:
    """A file of sorted distinct packed pairs read back as an array by slices:
    ``packed[start:stop]`` is a new uint64 array read from disk (only slices with a step of
    one). Memory: none between reads.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "p.bin"
        >>> _ = path.write_bytes(np.arange(5, dtype=np.uint64).tobytes())
        >>> PackedFile(path, 5)[3:9].tolist()
        [3, 4]
    """

    dtype = np.dtype(np.uint64)

    def __init__(self, path: Path, count: int):
        self.path = Path(path)
        self.shape = (int(count),)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError(f"a PackedFile is read by slices of step 1; got {key!r}")
        start, stop, _ = key.indices(self.shape[0])
        if stop <= start:
            return np.zeros(0, dtype=np.uint64)
        with open(self.path, "rb", buffering=0) as fh:
            return _read_values(fh.fileno(), start, stop - start)


class _Run:
    """One sorted distinct run on disk, read a block at a time."""

    def __init__(self, path: Path, count: int):
        self.path = path
        self.count = count
        self.read = 0  # values read from the file so far
        self.block = np.zeros(0, dtype=np.uint64)  # read and not yet merged

    def refill(self, fd: int, block_values: int) -> None:
        """Read the next block when the current one is used up and the run has more."""
        if self.block.shape[0] == 0 and self.read < self.count:
            size = min(block_values, self.count - self.read)
            self.block = _read_values(fd, self.read, size)
            self.read += size

    @property
    def done(self) -> bool:
        return self.block.shape[0] == 0 and self.read >= self.count


def merge_runs(runs: list[tuple[Path, int]], target: Path, block_values: int) -> int:
    """Merge the sorted distinct runs ``(path, values)`` into ``target``: their sorted distinct
    union; returns its length. Each run is read ``block_values`` values at a time; each round
    takes, from every run's block, the values up to the smallest of the blocks' last values
    (so that no later value of any run can precede them), merges and deduplicates them, and
    writes them. Memory: a block a run and one round's merge (at most twice the blocks, and
    the merge sort's buffer of half a round). O(V log runs) for V values in all, one read of
    each run and one write.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> parts = [[1, 4, 7], [2, 4, 8, 9], [4]]
        >>> runs = []
        >>> for i, part in enumerate(parts):
        ...     _ = (folder / f"r{i}").write_bytes(np.array(part, dtype=np.uint64).tobytes())
        ...     runs.append((folder / f"r{i}", len(part)))
        >>> merge_runs(runs, folder / "all", block_values=2)
        6
        >>> np.fromfile(folder / "all", dtype=np.uint64).tolist()
        [1, 2, 4, 7, 8, 9]
    """
    if block_values < 1:
        raise ValueError(f"block_values must be >= 1; got {block_values}")
    readers = [_Run(path, count) for path, count in runs]
    files = [open(r.path, "rb", buffering=0) for r in readers]
    written = 0
    last: np.uint64 | None = None
    try:
        with writing(target), open(target, "wb") as out:
            while True:
                for r, fh in zip(readers, files):
                    r.refill(fh.fileno(), block_values)
                live = [r for r in readers if not r.done]
                if not live:
                    break
                # Every value up to the smallest last value of the blocks is final: any value
                # a run has not read yet is larger than its block's last.
                cutoff = min(r.block[-1] for r in live)
                parts = []
                for r in live:
                    take = int(np.searchsorted(r.block, cutoff, side="right"))
                    parts.append(r.block[:take])
                    r.block = r.block[take:]
                merged = np.concatenate(parts)
                del parts
                # Sorted runs one after the other: numpy's stable sort (a merge sort that
                # finds the runs) merges them in a fifth to a fifteenth of its quicksort's
                # time (4M values in 2-18 runs: 0.02-0.06 s against 0.25-0.35 s).
                merged.sort(kind="stable")
                merged = compact_distinct(merged)
                if last is not None and merged.shape[0] and merged[0] == last:
                    merged = merged[1:]  # written at the end of the round before
                if merged.shape[0]:
                    write_array(out, merged)
                    written += int(merged.shape[0])
                    last = merged[-1]
    finally:
        for fh in files:
            fh.close()
    return written


class PairRuns:
    """The sorted distinct union of the band search's packed pairs
    (:class:`~neardup.candidates.bands.DistinctUnion`), held in memory up to ``limit`` bytes and
    written to ``work`` as sorted runs past it; pass it as ``union`` to
    :func:`~neardup.candidates.bands.packed_pairs_from_band_columns`.

    :meth:`values` returns the union in memory when nothing was spilled, else a
    :class:`PackedFile` of the runs merged (:func:`merge_runs`): the same values, in the same
    order. Memory: at most ``limit`` bytes of pairs held, about twice that while a band's pairs
    merge into them (two and a half times when the merge runs on two threads:
    :class:`~neardup.candidates.bands.DistinctUnion`), and ``limit`` bytes of blocks while the
    runs merge. Disk: the runs and the merged file (8 bytes a pair each; the runs are removed
    once merged).
    """

    def __init__(self, work: WorkDir, limit: int, name: str = "candidates"):
        if limit < _VALUE_BYTES:
            raise ValueError(f"limit must be at least {_VALUE_BYTES} bytes; got {limit}")
        self.work = work
        self.limit = int(limit)
        self.name = name
        self.union = DistinctUnion()
        self.runs: list[tuple[Path, int]] = []
        #: Runs written so far (0: every pair stayed in memory).
        self.spilled_runs = 0
        #: Bytes written to the work folder (runs and merged file).
        self.disk_bytes = 0

    def add(self, values: np.ndarray | None) -> None:
        """Merge a band's sorted distinct packed pairs in; past the limit, the union so far
        goes to disk. O(len(values) · log(bands)) amortised, plus the writes."""
        self.union.add(values)
        if sum(level.nbytes for level in self.union.levels) > self.limit:
            self._spill()

    def _spill(self) -> None:
        """Write each level of the union as a run (each is sorted and distinct) and let go of
        them."""
        levels = self.union.levels
        while levels:
            level = levels.pop()
            path = self.work.file(f"{self.name}-run-{self.spilled_runs}.bin")
            with writing(path), open(path, "wb") as fh:
                write_array(fh, np.ascontiguousarray(level))
            self.runs.append((path, int(level.shape[0])))
            self.spilled_runs += 1
            self.disk_bytes += int(level.nbytes)
            del level

    def values(self) -> np.ndarray | PackedFile:
        """The sorted distinct union of every pair added: an array when it stayed in memory,
        else a :class:`PackedFile` (the runs merged, then removed)."""
        if not self.runs:
            return self.union.values()
        self._spill()
        target = self.work.file(f"{self.name}.bin")
        block = max(1, self.limit // (2 * _VALUE_BYTES * len(self.runs)))
        count = merge_runs(self.runs, target, block)
        for path, _ in self.runs:
            path.unlink(missing_ok=True)
        self.runs.clear()
        self.disk_bytes += count * _VALUE_BYTES
        return PackedFile(target, count)
