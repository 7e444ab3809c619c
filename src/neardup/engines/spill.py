"""A run's work folder: spill files under a memory budget, stage checkpoints, cleanup.

An out-of-core run keeps per document only fixed-width columns. Whatever would take more
memory than the run's budget (``--memory-limit``) is appended to files in a folder of its own
under ``--tmp-dir`` and read back later one column at a time (the seeds' map-reduce, on one
machine: the band-hash columns are the map output, each band's sort is one reduce).

The folder is removed when the run ends, fails or is interrupted. With ``resume=True`` its
name is derived from the run's first output, it records which stages completed together with a
key of the inputs and options, and a failed or interrupted run leaves it in place, so that the
same command with ``--resume`` continues after the last completed stage (and refuses, clearly,
when the inputs or options changed).

Example:
    >>> import tempfile
    >>> budget = MemoryBudget(1 << 20)
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="groups.tsv") as work:
    ...     col = SpillColumn(work, "fps", np.uint64, budget)
    ...     col.append(np.arange(3, dtype=np.uint64))
    ...     col.array().tolist()
    [0, 1, 2]
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from neardup.candidates.bounds import read_rows
from neardup.io.atomic import atomic_write, process_gone
from neardup.io.write import writing
from neardup.memory import return_freed_memory

MANIFEST = "manifest.json"
#: Share of the machine's RAM that a run may use when ``--memory-limit`` is not given
#: (1.5 GB on a 24 GB machine), and the least it takes by default.
DEFAULT_MEMORY_SHARE = 1 / 16
DEFAULT_MEMORY_FLOOR = 256 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def machine_memory() -> int:
    """Bytes of RAM of this machine (physical pages × page size); 8 GiB if unknown."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def parse_size(value: str | int, what: str) -> int:
    """Bytes from a size like ``"2G"``, ``"512M"``, ``"64k"`` or ``"1500000000"`` (binary units,
    optional ``iB``/``B``); ``what`` names the option in the error.

    Example:
        >>> parse_size("16M", "--max-doc-bytes")
        16777216
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{what} must be a size >= 0; got {value!r}")
        return value
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([kmgt]?)i?b?", str(value).strip().lower())
    if match is None:
        raise ValueError(f"{what} must be a size like 2G, 512M, 64K or 1500000000; got {value!r}")
    return int(float(match[1]) * _UNITS[match[2]])


def parse_memory_limit(value: str | int | None) -> int:
    """``--memory-limit``: bytes from ``"2G"``, ``"512M"``, ``"1500000000"`` or ``"40%"`` (of the
    machine's RAM); None = :data:`DEFAULT_MEMORY_SHARE` of the RAM, at least 256 MiB. At least
    1 MiB.

    Example:
        >>> parse_memory_limit("512M")
        536870912
    """
    if value is None:
        return max(DEFAULT_MEMORY_FLOOR, int(machine_memory() * DEFAULT_MEMORY_SHARE))
    text = str(value).strip()
    if text.endswith("%"):
        try:
            share = float(text[:-1]) / 100
        except ValueError:
            share = -1.0
        if not 0 < share <= 1:
            raise ValueError(f"memory limit must be a share in (0%, 100%]; got {value!r}")
        limit = int(machine_memory() * share)
    else:
        limit = parse_size(value, "memory limit")
    if limit < 1 << 20:
        raise ValueError(f"memory limit must be at least 1M; got {value!r} ({limit} bytes)")
    return limit


class MemoryBudget:
    """Bytes that spillable columns may still hold in memory (shared by a run's columns).

    What a run must hold in memory whatever the budget (the per-document columns of the
    first pass, the grouping's arrays) is charged to it too (:meth:`charge`): the spillable
    columns then get only the room those leave, and go to disk sooner as the number of
    documents grows, so that the two together stay within the limit as long as the first fit.

    Example:
        >>> budget = MemoryBudget(100)
        >>> budget.charge(80)
        >>> budget.take(30), budget.free, budget.room(least=0.25)
        (False, 20, 25)
    """

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.free = int(limit)

    def take(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` if they fit; False (nothing reserved) if they do not."""
        if nbytes <= self.free:
            self.free -= nbytes
            return True
        return False

    def charge(self, nbytes: int) -> None:
        """Reserve ``nbytes`` that the run holds in any case, even past the limit (``free``
        then goes below 0, and every :meth:`take` fails until they are given back); a
        negative ``nbytes`` gives them back (:meth:`give_back`)."""
        if nbytes < 0:
            self.give_back(-nbytes)
        else:
            self.free -= int(nbytes)

    def give_back(self, nbytes: int) -> None:
        self.free = min(self.limit, self.free + nbytes)

    def room(self, least: float) -> int:
        """Bytes a stage's transient buffers may take: what is free, and at least the share
        ``least`` (0 to 1) of the limit, so that a small budget still works in chunks of a
        useful size."""
        return max(self.free, int(self.limit * least))


def run_key(**parts: Any) -> str:
    """A stable hex key of a run's inputs and options (JSON of ``parts``, SHA-256)."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def input_identity(paths: list[str]) -> list[tuple[str, int, int] | str]:
    """What identifies the inputs for ``--resume``: (absolute path, size, mtime in ns) of each
    file, every ``*.txt`` below a directory; ``-`` stays ``-`` (standard input cannot be
    resumed)."""
    out: list[tuple[str, int, int] | str] = []
    for p in paths:
        if str(p) == "-":
            out.append("-")
            continue
        path = Path(p).resolve()
        files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
        for f in files:
            st = f.stat()
            out.append((str(f), st.st_size, st.st_mtime_ns))
    return out


# A work folder's name carries its process: the next run can judge a folder from the moment
# it exists, even if its owner was killed before writing anything into it.
_WORK_FOLDER = re.compile(r"neardup-tmp-(\d+)-[0-9a-f]{16}")


def _remove_dead_runs(base: Path) -> None:
    """Remove the work folders that runs killed without a chance to clean up (kill -9, power
    loss) left in ``base``: those whose process no longer exists on this machine."""
    for folder in base.glob("neardup-tmp-*"):
        match = _WORK_FOLDER.fullmatch(folder.name)
        if match is not None and process_gone(int(match[1])):
            shutil.rmtree(folder, ignore_errors=True)


def _lock_folder(folder: Path) -> int | None:
    """An exclusive lock on the work folder ``folder`` (``flock`` of its ``lock`` file, freed
    when the descriptor returned is closed, or the process ends), or None if another run
    holds it."""
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class WorkDir:
    """The work folder of one run, under ``tmp_dir``; a context manager that removes it.

    Args:
        tmp_dir: where to create it (None = the system's temp dir); must exist and be writable.
        key: :func:`run_key` of the inputs and options.
        name_hint: the run's first output path: with ``resume`` the folder is
            ``neardup-run-<hash of its absolute path>``, so the same command finds it again.
        resume: keep the folder when the run fails or is interrupted, and continue from its
            completed stages when it exists with the same key.
    """

    def __init__(self, tmp_dir: str | Path | None, key: str, name_hint: str, resume: bool = False):
        import tempfile

        base = Path(tmp_dir) if tmp_dir is not None else Path(tempfile.gettempdir())
        if not base.is_dir():
            raise FileNotFoundError(f"temp dir {base} does not exist (--tmp-dir)")
        if not os.access(base, os.W_OK | os.X_OK):
            raise PermissionError(f"temp dir {base} is not writable (--tmp-dir)")
        self.key = key
        self.resume = resume
        self.stages: list[str] = []
        # The folder a run of this output with --resume keeps: this run's own with resume,
        # else one that this run, once it succeeds, makes useless.
        self._resume_path = None
        if name_hint != "-":
            tag = hashlib.sha256(str(Path(name_hint).resolve()).encode()).hexdigest()[:16]
            self._resume_path = base / f"neardup-run-{tag}"
        if resume and self._resume_path is not None:
            self.path = self._resume_path
        else:
            self.path = base / f"neardup-tmp-{os.getpid()}-{secrets.token_hex(8)}"
        self._lock: int | None = None

    def __enter__(self) -> WorkDir:
        if self.resume:
            with writing(self.path):
                self.path.mkdir(exist_ok=True)
            self._lock = _lock_folder(self.path)
            if self._lock is None:
                raise ValueError(
                    f"--resume: another run is using {self.path}; wait for it to end (two runs "
                    "cannot resume one run at once)"
                )
        try:
            self._open()
        except BaseException:
            # __exit__ does not run when __enter__ fails (an error, or a SIGTERM at any point
            # here): a run's own folder goes with it; a resumed one is the user's to keep.
            if not self.resume:
                self.remove()
            self._unlock()
            raise
        return self

    def _open(self) -> None:
        manifest = self.path / MANIFEST
        if self.resume and manifest.exists():
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                data = {}
            if data.get("key") != self.key:
                raise ValueError(
                    f"--resume: {self.path} holds a run with other inputs or options; run the "
                    "same command as before, or remove that folder to start again"
                )
            self.stages = list(data.get("stages", []))
        else:
            _remove_dead_runs(self.path.parent)
            with writing(self.path):
                self.path.mkdir(exist_ok=self.resume)
                self._write_manifest()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None or not self.resume:
            self.remove()
        self._unlock()
        stale = self._resume_path
        if exc_type is None and not self.resume and stale is not None and stale.is_dir():
            lock = _lock_folder(stale)  # None: a run resuming it is going on
            if lock is not None:
                shutil.rmtree(stale, ignore_errors=True)
                os.close(lock)

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def remove(self) -> None:
        """Delete the folder and everything in it."""
        shutil.rmtree(self.path, ignore_errors=True)

    def file(self, name: str) -> Path:
        return self.path / name

    def _write_manifest(self) -> None:
        target = self.path / MANIFEST
        with writing(target), atomic_write(target) as fh:
            fh.write(json.dumps({"key": self.key, "stages": self.stages}).encode())

    def completed(self, stage: str) -> bool:
        """Whether ``stage`` completed in an earlier attempt of this run (``--resume``)."""
        return stage in self.stages

    def complete(self, stage: str) -> None:
        """Record that ``stage`` completed: its files are final (only with ``resume``)."""
        if self.resume and stage not in self.stages:
            self.stages.append(stage)
            self._write_manifest()

    def save(self, name: str, array: np.ndarray) -> None:
        """Store an array as ``name.npy`` (written under a temporary name, then renamed)."""
        target = self.file(name + ".npy")
        with writing(target), atomic_write(target) as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)

    def load(self, name: str, mmap: bool = False) -> np.ndarray:
        """An array stored by :meth:`save` (memory-mapped with ``mmap``)."""
        return np.load(
            self.file(name + ".npy"), mmap_mode="r" if mmap else None, allow_pickle=False
        )

    def park(self, name: str, values: np.ndarray) -> Callable[[], np.ndarray]:
        """Put ``values`` in ``name.npy`` until the function returned reads them back, once (the
        file is then deleted): an array read again only later stays out of memory meanwhile.
        O(bytes) written and read.

        Example:
            >>> import tempfile
            >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
            ...     back = work.park("order", np.arange(3))
            ...     back().tolist(), work.file("order.npy").exists()
            ([0, 1, 2], False)
        """
        self.save(name, values)

        def back() -> np.ndarray:
            parked = self.load(name)
            self.file(name + ".npy").unlink()
            return parked

        return back

    def save_json(self, name: str, value: Any) -> None:
        """Store ``value`` as ``name.json``, atomically as :meth:`save` (a crash mid-write must
        not leave a checkpoint that ``--resume`` would half read)."""
        target = self.file(name + ".json")
        with writing(target), atomic_write(target) as fh:
            fh.write(json.dumps(value).encode("utf-8"))

    def load_json(self, name: str) -> Any:
        return json.loads(self.file(name + ".json").read_text())


def write_array(fh, values: np.ndarray) -> None:
    """Write a contiguous array's bytes to the binary file ``fh``."""
    # Through Python's write, not ndarray.tofile: a full disk then raises ENOSPC with its errno
    # (tofile reports a short write without one).
    fh.write(memoryview(values).cast("B"))


def checked_size(path: Path, nbytes: int) -> int:
    """``nbytes``, the size a checkpoint recorded for ``path``; ValueError naming the file and
    both sizes if it has another (none: 0 bytes)."""
    found = path.stat().st_size if path.exists() else 0
    if found != nbytes:
        raise ValueError(
            f"--resume: {path} holds {found} bytes, its checkpoint {nbytes}: the work folder "
            f"was changed; remove {path.parent} to start the run again"
        )
    return int(nbytes)


class ColumnFile:
    """A per-document column written to a file of the work folder (whole, or appended batch by
    batch) and read back by rows (:meth:`take`), never through a memory map: an out-of-core run
    puts there the columns of pass 1 that it needs again only for some documents (their input
    locations) once the budget is full. Memory: none between reads.

    Example:
        >>> import tempfile
        >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
        ...     column = ColumnFile(work, "where", np.arange(10, dtype=np.int64).reshape(5, 2))
        ...     column.take(np.array([1, 4])).tolist(), len(column)
        ([[2, 3], [8, 9]], 5)
    """

    #: Rows read at a time (1 MiB of 16-byte rows): documents far apart cost a read each.
    BLOCK_ROWS = 1 << 16

    def __init__(self, work: WorkDir, name: str, array: np.ndarray):
        self.path = work.file(name + ".bin")
        self.dtype = array.dtype
        self.row_shape = array.shape[1:]
        self.rows = int(array.shape[0])
        with writing(self.path), open(self.path, "wb") as fh:
            if array.nbytes:
                write_array(fh, np.ascontiguousarray(array))
        #: Bytes written to the file.
        self.disk_bytes = int(array.nbytes)

    @classmethod
    def reopen(cls, work: WorkDir, name: str, dtype, row_shape: tuple, rows: int) -> ColumnFile:
        """The column whose file ``name.bin`` in ``work`` already holds ``rows`` rows (a
        ``--resume`` checkpoint's); ValueError if the file's size says otherwise. O(1)."""
        column = cls.__new__(cls)
        column.path, column.dtype = work.file(name + ".bin"), np.dtype(dtype)
        column.row_shape, column.rows = tuple(row_shape), int(rows)
        column.disk_bytes = checked_size(
            column.path, rows * column.dtype.itemsize * int(np.prod(row_shape))
        )
        return column

    def __len__(self) -> int:
        return self.rows

    def append(self, array: np.ndarray) -> None:
        """Add ``array``'s rows (same dtype and row shape) at the end of the file. O(rows)."""
        if array.dtype != self.dtype or array.shape[1:] != self.row_shape:
            raise ValueError(
                f"rows of {array.dtype} {array.shape[1:]} appended to a column of "
                f"{self.dtype} {self.row_shape}"
            )
        with writing(self.path), open(self.path, "ab") as fh:
            if array.nbytes:
                write_array(fh, np.ascontiguousarray(array))
        self.rows += int(array.shape[0])
        self.disk_bytes += int(array.nbytes)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The rows at the ascending ``positions``, read in blocks of :data:`BLOCK_ROWS` rows
        (only the blocks that hold one of them), with ``pread``. O(positions + blocks read)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((positions.shape[0], *self.row_shape), dtype=self.dtype)
        if positions.shape[0] == 0:
            return out
        # A map of the file only names its rows: read_rows reads them with pread, so none of
        # its pages stay resident.
        mapped = np.memmap(
            self.path, dtype=self.dtype, mode="r", shape=(self.rows, *self.row_shape)
        )
        block_of = positions // self.BLOCK_ROWS
        firsts = np.flatnonzero(np.concatenate(([True], block_of[1:] != block_of[:-1])))
        ends = [*firsts[1:].tolist(), positions.shape[0]]
        buffer = np.empty((self.BLOCK_ROWS, *self.row_shape), dtype=self.dtype)
        for first, end in zip(firsts.tolist(), ends):
            start = int(block_of[first]) * self.BLOCK_ROWS
            rows = read_rows(mapped, start, buffer[: min(self.BLOCK_ROWS, self.rows - start)])
            out[first:end] = rows[positions[first:end] - start]
        del mapped
        return out


class SpillColumn:
    """An append-only array (rows of ``width`` values) kept in memory while the shared budget
    allows, then appended to a file of the work folder. :meth:`array` gives it back whole (a
    read-only memory map when spilled). Appends cost O(rows); memory O(in-memory part).

    Example:
        >>> import tempfile
        >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
        ...     col = SpillColumn(work, "v", np.uint64, MemoryBudget(0))
        ...     col.append(np.array([6, 7, 8], dtype=np.uint64))
        ...     col.spilled, col.read().tolist()
        (True, [6, 7, 8])
    """

    def __init__(self, work: WorkDir, name: str, dtype, budget: MemoryBudget, width: int = 1):
        self.work = work
        self.path = work.file(name + ".bin")
        self.dtype = np.dtype(dtype)
        self.width = int(width)
        self.budget = budget
        self.rows = 0
        #: Bytes written to the spill file so far.
        self.disk_bytes = 0
        self._parts: list[np.ndarray] = []
        self._held = 0
        self._file = None

    @classmethod
    def reopen(
        cls, work: WorkDir, name: str, dtype, budget: MemoryBudget, rows: int, width: int = 1
    ) -> SpillColumn:
        """The spilled column whose file ``name.bin`` in ``work`` already holds ``rows`` rows
        (a ``--resume`` checkpoint's); ValueError if the file's size says otherwise. O(1)."""
        column = cls(work, name, dtype, budget, width)
        column.disk_bytes = checked_size(column.path, rows * width * column.dtype.itemsize)
        column.rows = int(rows)
        return column

    @property
    def held(self) -> int:
        """Bytes of the column in memory, reserved from the budget."""
        return self._held

    @property
    def spilled(self) -> bool:
        """Whether the column went to disk."""
        return self._file is not None or (self.rows > 0 and not self._parts)

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if not self.spilled and self.budget.take(values.nbytes):
            # A part owns its bytes: a view (a row of the batch's band hashes) would keep its
            # whole base alive, charged for its own bytes alone, and after this column or
            # another spills (3.3 GB at 10M documents under a 1.58 GB limit).
            self._parts.append(values if values.base is None else values.copy())
            self._held += values.nbytes
        else:
            self._to_disk()
            with writing(self.path):
                write_array(self._file, values)
                self.disk_bytes += values.nbytes
        self.rows += values.shape[0]

    def spill(self) -> int:
        """Move the in-memory part to the spill file (reads give the same rows) and give its
        bytes back to the budget; returns them. O(in-memory part)."""
        held = self._held
        if held:
            self._to_disk()
            self.finish()
        return held

    def _to_disk(self) -> None:
        """Open the spill file (once), writing the in-memory part into it first."""
        if self._file is not None:
            return
        with writing(self.path):
            # A file of this column's is appended to (finished, then spilled more); any other
            # (of an earlier run in the same folder) is replaced.
            self._file = open(self.path, "ab" if self.disk_bytes else "wb")
            for part in self._parts:
                write_array(self._file, part)
        self.disk_bytes += self._held
        self.budget.give_back(self._held)
        self._parts, self._held = [], 0
        return_freed_memory()  # heap blocks among others in use (0.7 GB of band hashes at 10M)

    def finish(self) -> None:
        """Flush and close the file (if spilled)."""
        if self._file is not None:
            with writing(self.path):
                self._file.close()
            self._file = None

    def array(self) -> np.ndarray:
        """Everything appended, in order: ``(rows,)`` or ``(rows, width)``."""
        self.finish()
        shape = (self.rows,) if self.width == 1 else (self.rows, self.width)
        if self._parts:
            if len(self._parts) > 1:
                self._parts = [np.concatenate(self._parts)]
            return self._parts[0].reshape(shape)
        if self.rows == 0:
            return np.zeros(shape, dtype=self.dtype)
        return np.memmap(self.path, dtype=self.dtype, mode="r", shape=shape)

    def read(self) -> np.ndarray:
        """Everything appended, in memory (a spilled column read whole, not mapped). O(rows)."""
        return self.read_rows(0, self.rows)

    def read_rows(self, start: int, end: int) -> np.ndarray:
        """The rows ``[start, end)`` in memory: a spilled column's read from its file (one
        ``pread``, not through its map), else a view. O(rows read)."""
        if not self.spilled:
            return self.array()[start:end]
        flat = np.array([start * self.width]), np.array([end * self.width])
        values = self.take_ranges(*flat)[1]
        return values.reshape((end - start,) if self.width == 1 else (end - start, self.width))

    def take_ranges(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values ``[starts[i], ends[i])`` of a one-value-per-row column for ascending,
        disjoint ranges, packed as CSR ``(offsets int64[k + 1], values)``.

        A spilled column is read straight into the result with one ``pread`` per run of
        adjacent ranges, from compiled code, not through its map: scattered reads through a
        map bring whole neighbourhoods of pages into the resident memory. O(values + runs)
        time, memory O(values).
        """
        starts = np.asarray(starts, dtype=np.int64)
        lengths = np.asarray(ends, dtype=np.int64) - starts
        offsets = np.zeros(starts.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = np.empty(int(offsets[-1]), dtype=self.dtype)
        if starts.shape[0] == 0 or not self.spilled:
            _pack(self.array(), starts, lengths, offsets, values)
            return offsets, values
        self.finish()
        item = self.dtype.itemsize
        read_spans(self.path, values, offsets * item, starts * item, lengths * item)
        return offsets, values

    def release(self) -> None:
        """Drop the in-memory part and give its bytes back to the budget."""
        self.budget.give_back(self._held)
        self._parts, self._held = [], 0

    def remove(self) -> None:
        """:meth:`release`, and delete the file of a spilled column (no rows are left)."""
        self.release()
        self.finish()
        self.path.unlink(missing_ok=True)
        self.rows = 0


@njit(cache=True, nogil=True)
def _pack(source, starts, lengths, offsets, out):
    """``out[offsets[i]:offsets[i + 1]] = source[starts[i]:starts[i] + lengths[i]]``."""
    for i in range(starts.shape[0]):
        out[offsets[i] : offsets[i] + lengths[i]] = source[starts[i] : starts[i] + lengths[i]]


def read_spans(
    path: Path, buffer: np.ndarray, at: np.ndarray, starts: np.ndarray, nbytes: np.ndarray
) -> None:
    """Read the ascending, disjoint byte spans ``[starts[i], starts[i] + nbytes[i])`` of the
    file ``path`` into ``buffer`` at bytes ``at[i]`` (``at[i + 1] = at[i] + nbytes[i]``, k + 1
    entries), one ``pread`` per run of adjacent spans; OSError if the file is shorter."""
    first = np.flatnonzero(np.concatenate([[True], starts[1:] != starts[:-1] + nbytes[:-1]]))
    with writing(path), open(path, "rb", buffering=0) as fh:
        short = _read_runs(_PREAD, fh.fileno(), buffer, np.append(at[first], at[-1]), starts[first])
    if short >= 0:
        raise OSError(f"{path} is shorter than written (was it changed?)")


# pread(2) of the C library (POSIX, as the package is), callable from compiled code: a
# Python-level read per range costs twice as much. Passed to the kernel as an argument, not
# read as a global: a kernel holding a C function's address cannot be cached, and compiling
# it took 0.3-0.4 s in each process that read spans (each Spark worker verifying pairs).
_PREAD = ctypes.CDLL(None).pread
_PREAD.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
_PREAD.restype = ctypes.c_ssize_t


@njit(cache=True, nogil=True)
def _read_runs(pread, fd, buffer, at, start):
    """Read run r (file bytes from ``start[r]``, as many as up to the next run's place in
    ``buffer``) into ``buffer`` at byte ``at[r]`` with ``pread``; the first run read short,
    or -1."""
    base = buffer.ctypes.data
    for r in range(start.shape[0]):
        want = at[r + 1] - at[r]
        done = 0
        while done < want:
            got = pread(fd, base + at[r] + done, want - done, start[r] + done)
            if got <= 0:
                return r
            done += got
    return -1
