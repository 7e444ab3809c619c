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
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from neardup.candidates.bounds import read_rows
from neardup.io.files import atomic_write, process_gone
from neardup.io.write import pwrite_all, writing
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
            self._parts.append(values)
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
        _read_spans(self.path, values, offsets * item, starts * item, lengths * item)
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


def _read_spans(
    path: Path, buffer: np.ndarray, at: np.ndarray, starts: np.ndarray, nbytes: np.ndarray
) -> None:
    """Read the ascending, disjoint byte spans ``[starts[i], starts[i] + nbytes[i])`` of the
    file ``path`` into ``buffer`` at bytes ``at[i]`` (``at[i + 1] = at[i] + nbytes[i]``, k + 1
    entries), one ``pread`` per run of adjacent spans; OSError if the file is shorter."""
    first = np.flatnonzero(np.concatenate([[True], starts[1:] != starts[:-1] + nbytes[:-1]]))
    with writing(path), open(path, "rb", buffering=0) as fh:
        short = _read_runs(fh.fileno(), buffer, np.append(at[first], at[-1]), starts[first])
    if short >= 0:
        raise OSError(f"{path} is shorter than written (was it changed?)")


# pread(2) of the C library (POSIX, as the package is), callable from compiled code: a
# Python-level read per range costs twice as much.
_PREAD = ctypes.CDLL(None).pread
_PREAD.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
_PREAD.restype = ctypes.c_ssize_t


@njit(cache=False, nogil=True)  # not cached: it calls a C function by its address
def _read_runs(fd, buffer, at, start):
    """Read run r (file bytes from ``start[r]``, as many as up to the next run's place in
    ``buffer``) into ``buffer`` at byte ``at[r]``; the first run read short, or -1."""
    base = buffer.ctypes.data
    for r in range(start.shape[0]):
        want = at[r + 1] - at[r]
        done = 0
        while done < want:
            got = _PREAD(fd, base + at[r] + done, want - done, start[r] + done)
            if got <= 0:
                return r
            done += got
    return -1


#: :class:`SpilledRows`' mark of a row stored 8 bytes a value.
_WIDE = np.uint32(0xFFFFFFFF)
#: Which of a uint64's two 32-bit words holds its low bits, in memory.
_LOW = 0 if sys.byteorder == "little" else 1


class SpilledRows:
    """Rows of uint64 values (CSR) written once to a file of the work folder and read back
    many times, a few rows at a time (:meth:`take`).

    A row whose values share their high 32 bits (the LCS units of a text counted in
    characters: each is a code point and a tag) is stored as that shared word and then their
    low 32 bits, 4 bytes a value; other rows (word or shingle hashes) 8 bytes a value, marked
    by the lowest bit of the row's place among its put's bytes (a multiple of 4). The rows of
    one :meth:`put` are packed, then appended at the file's end, reserved under a lock: threads
    write their batches at once, in any order. Text counted in characters then takes half the
    disk, the page cache and the reads. Memory: 8 bytes a row (that place, and the length),
    4 when the caller holds the rows' lengths and gives them (``lengths``, int32, filled by
    :meth:`put`: the LCS units counted in pass 1), and 16 bytes a put. :meth:`finish`, then
    :meth:`take`.

    Example:
        >>> import tempfile
        >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="g.tsv") as work:
        ...     rows = SpilledRows(work, "v", 3)
        ...     rows.put(1, np.array([0, 1, 3]), np.array([7, 2**40, 9], dtype=np.uint64))
        ...     rows.put(0, np.array([0, 2]), np.array([5, 6], dtype=np.uint64))
        ...     rows.finish()
        ...     offsets, values = rows.take(np.array([0, 2]))
        ...     offsets.tolist(), values.tolist(), rows.disk_bytes
        ([0, 2, 4], [5, 6, 1099511627776, 9], 36)
    """

    def __init__(self, work: WorkDir, name: str, rows: int, lengths: np.ndarray | None = None):
        if lengths is not None and (lengths.dtype != np.int32 or lengths.shape != (rows,)):
            raise ValueError(
                f"lengths must be int32, one a row ({rows}); got {lengths.dtype} of shape "
                f"{lengths.shape}"
            )
        self.path = work.file(name + ".bin")
        with writing(self.path):
            self._file = open(self.path, "wb", buffering=0)
        # A row's first byte among its put's (+1: stored 8 bytes a value): not a file's 8.
        self._start = np.zeros(rows, dtype=np.uint32)
        # Its values (as pass 1's sizes).
        self._lengths = np.zeros(rows, dtype=np.int32) if lengths is None else lengths
        self._lock = threading.Lock()
        self._puts: list[tuple[int, int]] = []  # each put's first row and byte in the file
        self._put_rows = self._put_starts = np.zeros(0, dtype=np.int64)  # in row order
        #: Bytes written to the file (its end, where the next rows go).
        self.disk_bytes = 0

    def put(self, row: int, offsets: np.ndarray, values: np.ndarray) -> None:
        """Store the rows ``row, row + 1, …`` of the CSR ``(offsets, values)`` (offsets from
        0): one positional write at the file's end, reserved under a lock, which releases the
        GIL (other threads may put other rows meanwhile). ``values`` (uint64, contiguous) are
        packed in place, so they are lost: a batch's units are given away. O(len(values))."""
        if values.dtype != np.uint64 or not values.flags.c_contiguous:
            raise ValueError(f"values must be contiguous uint64; got {values.dtype}")
        if values.nbytes >= 1 << 32:  # a row's place in its put is 4 bytes
            raise ValueError(f"a put holds less than 4 GiB of values; got {values.nbytes:,} bytes")
        rows = slice(row, row + offsets.shape[0] - 1)
        words = values.view(np.uint32)
        offsets = np.asarray(offsets, dtype=np.int64)
        used = _pack_rows(words, offsets, self._start[rows], self._lengths[rows])
        with self._lock:
            at, self.disk_bytes = self.disk_bytes, self.disk_bytes + 4 * used
            self._puts.append((row, at))
        with writing(self.path):
            pwrite_all(self._file.fileno(), words[:used], at)

    def finish(self) -> None:
        """Close the file for writing (every row is put)."""
        with writing(self.path):
            self._file.close()
        self._puts.sort()
        self._put_rows = np.array([row for row, _ in self._puts], dtype=np.int64)
        self._put_starts = np.array([at for _, at in self._puts], dtype=np.int64)
        self._puts = []

    def take(
        self, rows: np.ndarray, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ascending ``rows``, as CSR ``(offsets int64[k + 1], values uint64)``; the values
        are ``out[:n]`` when ``out`` (uint64) holds the n values, else a new array. A buffer
        reused from call to call has its pages mapped once: a fresh array of a gigabyte costs
        a second of page faults on some virtual machines.

        Their packed bytes are read into the end of the values' array, one ``pread`` per run
        of adjacent rows, then widened in place from the front (a value is never written
        over bytes not yet read: each needs at least 4 of them). O(values + runs) time,
        memory O(values).
        """
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self._lengths[rows]
        offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = int(offsets[-1])
        values = out[:n] if out is not None and out.shape[0] >= n else np.empty(n, np.uint64)
        if n == 0:
            return offsets, values
        places = self._start[rows]
        wide = (places & 1).astype(bool)
        put = np.searchsorted(self._put_rows, rows, side="right") - 1
        starts = self._put_starts[put] + (places & ~np.uint32(1))
        del places, put
        # A narrow row (of one value or more) is its shared high word, then its low words.
        nbytes = np.where(wide, 8 * lengths, np.where(lengths > 0, 4 + 4 * lengths, 0))
        packed = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(nbytes, out=packed[1:])
        tail = values.nbytes - int(packed[-1])
        _read_spans(self.path, values, tail + packed, starts, nbytes)
        _unpack_rows(values.view(np.uint32), tail // 4, lengths, wide)
        return offsets, values


@njit(cache=True, nogil=True)
def _pack_rows(words, offsets, start, lengths):
    """Pack in place the CSR rows of uint64 values held as ``words`` (2 a value, native
    order), from the front: a row whose values share their high word (not ``_WIDE``) as that
    word and then their low words, any other row as its values' two words (low, high).
    Records each row's first byte among the packed words (plus 1 for a row of two words a
    value) and length. The words used.

    No word is written before it is read: a row's shared word goes at most where its first
    value's low word lies (read first), and a row of L >= 1 values packs into at most its 2L
    words, so the place written never passes the place read."""
    w = 0
    for r in range(offsets.shape[0] - 1):
        lo, hi = offsets[r], offsets[r + 1]
        lengths[r] = hi - lo
        shared = words[2 * lo + 1 - _LOW] if hi > lo else np.uint32(0)
        narrow = shared != _WIDE
        for i in range(lo, hi):
            if words[2 * i + 1 - _LOW] != shared:
                narrow = False
                break
        start[r] = 4 * w + (0 if narrow else 1)
        if hi == lo:
            continue
        if narrow:
            first = words[2 * lo + _LOW]
            words[w] = shared
            words[w + 1] = first
            w += 2
            for i in range(lo + 1, hi):
                words[w] = words[2 * i + _LOW]
                w += 1
        else:
            for i in range(lo, hi):
                low, top = words[2 * i + _LOW], words[2 * i + 1 - _LOW]
                words[w] = low
                words[w + 1] = top
                w += 2
    return w


@njit(cache=True, nogil=True)
def _unpack_rows(words, read, lengths, wide):
    """Widen packed rows read at ``words[read:]`` into uint64 values over ``words`` (2 words
    a value, native order), front to back: value i is written over words ``2i, 2i + 1`` once
    read, and every later value's words (and a later row's shared word) lie at or after
    ``2i + 2``."""
    i = 0
    for r in range(lengths.shape[0]):
        if lengths[r] == 0:
            continue
        shared = np.uint32(0)
        if not wide[r]:
            shared = words[read]
            read += 1
        for _ in range(lengths[r]):
            low = words[read]
            if wide[r]:
                top = words[read + 1]
                read += 2
            else:
                top = shared
                read += 1
            words[2 * i + _LOW] = low
            words[2 * i + 1 - _LOW] = top
            i += 1
