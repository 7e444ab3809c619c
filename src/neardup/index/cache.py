"""The in-memory tables of an index, and their cache on disk: derived from the records, written
so that opening is fast, and never trusted further than it is checked.

The tables are SimHash permutation tables (:mod:`neardup.index.tables`) or MinHash band tables
(:mod:`neardup.index.minhash`), by the index's method. They are cached in
``tables-<generation>/`` (written to a temporary name, fsynced, then named in ``tables.json``:
:func:`save_generation`) when the index is built, when a writer closes, and after large growth.
Opening (:func:`load_tables`) loads the cache (memory-mapped), verifies it against SQLite
(position counter, removal counter, document count, sampled fingerprints or band keys) and
applies the rows added and removed since (:func:`catch_up`); if anything does not match, the
tables are rebuilt from SQLite. A crash therefore never leaves an index that cannot be opened.

Checksums: every cached file's size and XXH64 checksum (of all its bytes, header included) are
stored in ``tables.json`` when the generation is written (:func:`describe_files`), and verified
before the file is loaded (:func:`verify_files`); a missing file, a short file, a wrong size, a
wrong checksum or a bad ``.npy`` header makes the index rebuild its tables from SQLite. XXH64 is
the hash :mod:`neardup.hashing` already compiles (same values as the reference implementation,
tested against the ``xxhash`` package), so no runtime dependency is added; it runs at memory
speed (about 20 GB/s measured on one core from the page cache, so disk reads dominate), and a
64-bit checksum misses a random corruption with probability 2^-64, as XXH3-64 would.

Example:
    >>> import tempfile
    >>> from neardup.index.settings import index_settings
    >>> d = Path(tempfile.mkdtemp())
    >>> tables = new_tables(index_settings(hamming_k=1), np.array([1, 2]),
    ...                     np.array([4, 5], np.uint64))
    >>> save_generation(d, tables, 1, max_pos=2, tomb_seq=0).name
    'tables-1'
    >>> sorted(p.name for p in (d / "tables-1").iterdir())
    ['alive.npy', 'fps.npy', 'keys.npy', 'rows.npy']
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from neardup.candidates.plan import plan_tables
from neardup.hashing import xxh64_slice
from neardup.index.errors import IndexDamagedError, IndexWriteError
from neardup.index.lcs_bound import SKETCH_BITS
from neardup.index.minhash import BandTables
from neardup.index.storage import (
    DB_NAME,
    FORMAT_VERSION,
    fsync_path,
    json_list,
    keys_of_blobs,
    read_snapshot,
    repair_hint,
    rows_after,
    sql_state,
    unsigned,
)
from neardup.index.tables import PermutationTables
from neardup.io.atomic import atomic_write, finish_dead_writes
from neardup.lcs import COUNT_BUCKETS
from neardup.settings import Settings
from neardup.text.units import UNITS_VERSION

__all__ = [
    "CHECKSUM",
    "MappedRows",
    "MANIFEST_NAME",
    "OpenInfo",
    "Tables",
    "catch_up",
    "describe_files",
    "file_checksum",
    "load_tables",
    "lost_writes",
    "mapped_counts",
    "new_tables",
    "next_generation",
    "save_generation",
    "verify_files",
]

MANIFEST_NAME = "tables.json"
CHECKSUM = "xxh64"
"""Name of the checksum stored in the manifest (``"files": {name: {"bytes", "xxh64"}}``)."""

_CACHE_FILES = {
    "simhash": ["keys.npy", "rows.npy", "fps.npy", "alive.npy"],
    "minhash": ["keys.npy", "rows.npy", "alive.npy"],
}
"""The files of a cached generation per method, each checksummed in the manifest."""

_SUMMARIES = {"sizes": np.uint32, "sketches": np.uint64, "counts": np.uint8}
"""MinHash: what the verifier knows of each position, cached beside the tables when given
(:meth:`neardup.index.verifier.CandidateVerifier.summaries`; older generations lack them).
The count sketches are not loaded but mapped (:class:`MappedRows`)."""


_GIVE_BACK = getattr(mmap, "MADV_DONTNEED", None)
"""How a map's pages are given back (Linux, macOS; elsewhere they stay mapped)."""


class MappedRows:
    """The rows of a ``.npy`` file read through a read-only memory map whose pages are given
    back to the page cache after each :meth:`take`, so that reading scattered rows (a
    probe's candidates) leaves the process's resident memory as it was.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "a.npy"
        >>> np.save(path, np.arange(12, dtype=np.uint8).reshape(4, 3))
        >>> MappedRows(path).take(np.array([3, 0])).tolist()
        [[9, 10, 11], [0, 1, 2]]
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            shape, fortran, dtype = (
                np.lib.format.read_array_header_1_0(fh)
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0(fh)
            )
            if fortran or len(shape) != 2:
                raise ValueError(f"{path} is not a C-ordered two-dimensional array")
            offset = fh.tell()
            self._map = (
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if shape[0] * shape[1] else None
            )
        self.dtype = dtype
        self.shape = shape
        self._rows = (
            np.frombuffer(self._map, dtype, shape[0] * shape[1], offset).reshape(shape)
            if self._map is not None
            else np.zeros(shape, dtype)
        )

    def __len__(self) -> int:
        return self.shape[0]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """A copy of ``rows``. O(their bytes), plus a page fault per page touched."""
        out = self._rows[rows]
        if self._map is not None and _GIVE_BACK is not None:
            self._map.madvise(_GIVE_BACK)
        return out


Tables = PermutationTables | BandTables
"""The in-memory candidate structure of an index: SimHash permutation tables or MinHash band
tables (both sorted (key, position) rows with a delta, :mod:`neardup.index.sorted_rows`)."""


@dataclass
class OpenInfo:
    """How an index's tables were opened: ``source`` (``"cache"`` or ``"rebuilt"``), ``detail``
    (the generation, or why the cache was not used), ``tail_rows`` (rows applied on top of the
    cache), ``seconds`` (the whole open) and ``extra`` timings (``quick_check_seconds``,
    ``checksum_seconds``; the quick check's is None when the database was as a writer left
    it on a clean close and needed none)."""

    source: str = ""
    seconds: float = 0.0
    tail_rows: int = 0
    detail: str = ""
    extra: dict = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        """The entries of :meth:`~neardup.index.store.NearDupIndex.stats` about the open."""
        return {
            "opened_from": self.source,
            "open_detail": self.detail,
            "open_seconds": round(self.seconds, 4),
            "quick_check_seconds": self.extra.get("quick_check_seconds"),
            "checksum_seconds": self.extra.get("checksum_seconds"),
        }


class _CacheMiss(Exception):
    """The cached tables cannot be used (the reason is the message)."""


# --------------------------------------------------------------------------------------------
# Checksums of the cached files
# --------------------------------------------------------------------------------------------


def file_checksum(path: str | os.PathLike) -> tuple[int, str]:
    """``(size in bytes, XXH64 of the bytes as 16 hex digits)`` of a file. O(size), memory
    mapped (nothing copied).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "f"
        >>> _ = p.write_bytes(b"abc")
        >>> file_checksum(p)
        (3, '44bc2cf5ad770999')
    """
    size = os.path.getsize(path)
    if size == 0:
        buf = np.zeros(0, np.uint8)
    else:
        buf = np.memmap(path, dtype=np.uint8, mode="r")
    value = int(xxh64_slice(buf, 0, size, np.uint64(0)))
    del buf
    return size, f"{value:016x}"


def describe_files(directory: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    """The manifest entry of each file: ``{name: {"bytes": size, "xxh64": hex}}``. O(bytes)."""
    out = {}
    for name in names:
        size, digest = file_checksum(directory / name)
        out[name] = {"bytes": size, CHECKSUM: digest}
    return out


def verify_files(directory: Path, entries: Any, names: list[str]) -> float:
    """Check that every file of ``names`` in ``directory`` has the size and checksum that
    ``entries`` (the manifest's ``"files"``) records. Returns the seconds spent.

    Raises:
        ValueError: no checksums recorded (a cache written before they existed), a missing
            file, a different size or a different checksum; the message says which.

    Complexity: O(total bytes), at memory speed once the files are in the page cache.
    """
    started = time.perf_counter()
    if not isinstance(entries, dict):
        raise ValueError("the cache records no checksums")
    for name in names:
        entry = entries.get(name)
        if not isinstance(entry, dict) or CHECKSUM not in entry or "bytes" not in entry:
            raise ValueError(f"the cache records no checksum for {name}")
        path = directory / name
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            raise ValueError(f"cached {name} is missing") from None
        if size != int(entry["bytes"]):
            raise ValueError(f"cached {name} has {size} bytes, the manifest says {entry['bytes']}")
        _, digest = file_checksum(path)
        if digest != entry[CHECKSUM]:
            raise ValueError(f"cached {name} fails its checksum (damaged)")
    return time.perf_counter() - started


# --------------------------------------------------------------------------------------------
# Tables from the records
# --------------------------------------------------------------------------------------------


def new_tables(settings: Settings, positions: np.ndarray, values: np.ndarray) -> Tables:
    """The tables of an index with ``settings`` holding ``positions`` with their ``values``:
    fingerprints (SimHash) or band keys (MinHash). O(T · n log n)."""
    if settings.method == "minhash":
        return BandTables(settings.bands, positions=positions, keys=values)
    return PermutationTables(settings.hamming_k, positions=positions, fingerprints=values)


def _tables_from_records(conn: sqlite3.Connection, settings: Settings) -> Tables:
    parts = list(rows_after(conn, settings, 0))
    pos = np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int64)
    if settings.method == "minhash":
        empty = np.zeros((0, settings.bands), np.uint32)
    else:
        empty = np.zeros(0, np.uint64)
    values = np.concatenate([v for _, v in parts]) if parts else empty
    return new_tables(settings, pos, values)


def catch_up(
    conn: sqlite3.Connection, settings: Settings, tables: Tables, max_pos: int, tomb_seq: int
) -> int:
    """Apply to ``tables`` the rows added after position ``max_pos`` and the removals logged
    after ``tomb_seq``; returns the rows added. Call it inside
    :func:`~neardup.index.storage.read_snapshot` for a consistent state. O(rows since)."""
    added = 0
    for positions, values in rows_after(conn, settings, max_pos):
        tables.add(positions, values)
        added += positions.shape[0]
    removed = conn.execute("SELECT pos FROM tombstones WHERE seq > ?", (tomb_seq,)).fetchall()
    if removed:
        tables.discard(np.array([r[0] for r in removed], np.int64))
    return added


def load_tables(
    path: Path, conn: sqlite3.Connection, settings: Settings, info: OpenInfo
) -> tuple[Tables, dict[str, int], dict[str, np.ndarray]]:
    """The tables of the index at ``path``: from the cache if it checks out (plus the rows
    since), else rebuilt from the records; ``info`` says which. Returns the tables, the
    records' :func:`~neardup.index.storage.sql_state` they match and the summaries cached
    with them (MinHash, possibly none: see :func:`save_generation`).

    Complexity: O(n) memory copies of 9 bytes per fingerprint plus the rows since the cache,
    or O(n log n) to rebuild.
    """
    with read_snapshot(conn):
        state = sql_state(conn)
        summaries: dict[str, np.ndarray] = {}
        try:
            tables, info.detail = _load_cache(path, conn, settings, state, info, summaries)
            info.source = "cache"
        except _CacheMiss as miss:
            tables = _tables_from_records(conn, settings)
            summaries.clear()
            info.source = "rebuilt"
            info.detail = str(miss)
    return tables, state, summaries


# --------------------------------------------------------------------------------------------
# Reading a cached generation
# --------------------------------------------------------------------------------------------


def lost_writes(
    conn: sqlite3.Connection, state: dict[str, int], max_pos: int, alive: np.ndarray
) -> str | None:
    """What the records lack of a cached generation written after position ``max_pos``, with
    the live flags ``alive`` (both checked against the cache's checksums), given the records'
    :func:`~neardup.index.storage.sql_state`: the adds after the records' last position, and
    the removals of positions the records still hold (``"positions 201..300 (100 adds) and 1
    removal"``), or None when they lack nothing. O(n): the records' positions are read."""
    parts = []
    if state["max_pos"] < max_pos:
        adds = max_pos - state["max_pos"]
        parts.append(f"positions {state['max_pos'] + 1}..{max_pos} ({adds} add{'s' * (adds != 1)})")
    revived = 0
    cur = conn.execute("SELECT pos FROM docs WHERE pos <= ?", (max_pos,))
    while chunk := cur.fetchmany(262_144):
        positions = np.array(chunk, np.int64).ravel()
        revived += int(np.count_nonzero(~alive[positions]))
    if revived:
        parts.append(f"{revived} removal{'s' * (revived != 1)}")
    return " and ".join(parts) or None


def _load_cache(
    path: Path,
    conn: sqlite3.Connection,
    settings: Settings,
    state: dict[str, int],
    info: OpenInfo,
    summaries: dict[str, np.ndarray],
) -> tuple[Tables, str]:
    manifest_path = path / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise _CacheMiss("no cached tables") from None
    except (OSError, ValueError) as error:
        raise _CacheMiss(f"unreadable {MANIFEST_NAME}: {error}") from None
    lost = None
    try:
        if manifest.get("format") != FORMAT_VERSION:
            raise _CacheMiss("cache format differs")
        gen_dir = path / f"tables-{int(manifest['generation'])}"
        # Every byte against the checksums written with the cache: a damaged file would
        # otherwise give wrong answers (keys, fingerprints) or out-of-range rows (a crash).
        names = [f"{name}.npy" for name in manifest.get("summaries", [])]
        if any(name[:-4] not in _SUMMARIES for name in names):
            raise _CacheMiss("unknown cached summaries")
        if names and manifest.get("units", 1) != UNITS_VERSION:
            raise _CacheMiss("summaries of older LCS units")
        info.extra["checksum_seconds"] = round(
            verify_files(gen_dir, manifest.get("files"), _CACHE_FILES[settings.method] + names),
            4,
        )
        # Copy-on-write maps: shared page cache, nothing copied (the tables are never
        # written in place), and the same array type as built tables for the kernels.
        keys = np.load(gen_dir / "keys.npy", mmap_mode="c")
        rows = np.load(gen_dir / "rows.npy", mmap_mode="c")
        alive = np.load(gen_dir / "alive.npy")
        max_pos = int(manifest["max_pos"])
        tomb_seq = int(manifest["tomb_seq"])
        if alive.dtype != np.bool_ or keys.dtype != np.uint32 or rows.dtype != np.uint32:
            raise _CacheMiss("cached arrays have unexpected types")
        if alive.shape != (max_pos + 1,):
            raise _CacheMiss("cached flags do not cover the cached positions")
        if state["max_pos"] < max_pos or state["tomb_seq"] < tomb_seq:
            lost = lost_writes(conn, state, max_pos, alive)
            if lost is None:
                raise _CacheMiss("cache is newer than the database")
        if settings.method == "minhash":
            tables = _band_cache(conn, settings, manifest, keys, rows, alive)
            summaries.update(_summaries(conn, gen_dir, names, alive))
        else:
            tables = _permutation_cache(conn, settings, manifest, keys, rows, alive, gen_dir)
    except (KeyError, TypeError, ValueError, OSError) as error:
        if isinstance(error, _CacheMiss):
            raise
        raise _CacheMiss(f"unusable cache: {error}") from None
    if lost is not None:
        db = path / DB_NAME
        raise IndexDamagedError(
            f"{db}: committed writes are missing from its records: {lost}, which the cached "
            f"tables of generation {manifest['generation']} hold (was {DB_NAME}-wal deleted or "
            f"damaged?); {repair_hint(db)}; if the database is an older copy on purpose, "
            f"delete {path / MANIFEST_NAME}"
        )
    tail = catch_up(conn, settings, tables, max_pos, tomb_seq)
    if tables.live != state["documents"]:
        raise _CacheMiss(
            f"cache + {tail} new rows give {tables.live} documents, the database has "
            f"{state['documents']}"
        )
    info.tail_rows = tail
    return tables, f"generation {manifest['generation']}, {tail} rows since"


def _spot_check_rows(conn: sqlite3.Connection, alive: np.ndarray, select: str) -> list[tuple]:
    """The rows of ``select`` (``SELECT pos, ... FROM table``) for a few live positions of a
    cache (first, last and a sixteenth spread), to check it against the records."""
    sample = np.flatnonzero(alive)
    if sample.size:
        sample = np.unique(
            np.concatenate([sample[:4], sample[-4:], sample[:: max(1, sample.size // 16)]])
        )
    return conn.execute(
        f"{select} WHERE pos IN (SELECT value FROM json_each(?))", (json_list(sample),)
    ).fetchall()


def _permutation_cache(
    conn: sqlite3.Connection,
    settings: Settings,
    manifest: dict,
    keys: np.ndarray,
    rows: np.ndarray,
    alive: np.ndarray,
    gen_dir: Path,
) -> PermutationTables:
    """SimHash tables from a verified cache generation, spot-checked against SQLite."""
    hamming_k = settings.hamming_k
    plan_info = manifest["plan"]
    if plan_info["hamming_k"] != hamming_k:
        raise _CacheMiss("cache is for another hamming_k")
    plan = plan_tables(
        0, hamming_k, blocks=plan_info["blocks"], prefix_blocks=plan_info["prefix_blocks"]
    )
    fps = np.load(gen_dir / "fps.npy")
    if fps.dtype != np.uint64 or fps.shape != alive.shape:
        raise _CacheMiss("cached fingerprints do not cover the cached positions")
    if keys.shape != (plan.num_tables, int(manifest["entries"])):
        raise _CacheMiss("cached tables have unexpected shape")
    for pos, fp in _spot_check_rows(conn, alive, "SELECT pos, fingerprint FROM docs"):
        if np.uint64(unsigned(fp)) != fps[pos]:
            raise _CacheMiss(f"cached fingerprint of position {pos} differs")
    return PermutationTables.from_arrays(
        hamming_k,
        plan,
        keys,
        rows,
        fps,
        alive,
        int(manifest.get("planned_n", 0)),
        manifest.get("main_dead"),
    )


def _band_cache(
    conn: sqlite3.Connection,
    settings: Settings,
    manifest: dict,
    keys: np.ndarray,
    rows: np.ndarray,
    alive: np.ndarray,
) -> BandTables:
    """MinHash band tables from a verified cache generation; a few positions are looked up
    in the first band under the keys SQLite holds for them (O(log n) each)."""
    bands = settings.bands
    if manifest.get("bands") != bands or keys.shape != (bands, int(manifest["entries"])):
        raise _CacheMiss("cached band tables have unexpected shape")
    for pos, blob in _spot_check_rows(conn, alive, "SELECT pos, keys FROM minhash"):
        key = keys_of_blobs([blob], bands)[0, 0]
        lo, hi = np.searchsorted(keys[0], key, "left"), np.searchsorted(keys[0], key, "right")
        if pos not in rows[0, lo:hi]:
            raise _CacheMiss(f"cached band keys of position {pos} differ")
    return BandTables.from_arrays(keys, rows, alive, manifest.get("main_dead"))


def _summaries(
    conn: sqlite3.Connection, gen_dir: Path, names: list[str], alive: np.ndarray
) -> dict[str, np.ndarray]:
    """The cached summaries ``names``, checked for type and shape, and the sizes of a few
    positions against the records."""
    out: dict[str, Any] = {}
    for name in names:
        key = name[:-4]
        array = MappedRows(gen_dir / name) if key == "counts" else np.load(gen_dir / name)
        if array.dtype != _SUMMARIES[key] or array.shape[0] != alive.shape[0]:
            raise _CacheMiss(f"cached {key} have unexpected type or shape")
        out[key] = array
    if "sketches" in out and out["sketches"].shape[1:] != (SKETCH_BITS // 64,):
        raise _CacheMiss("cached sketches have unexpected shape")
    if "counts" in out and out["counts"].shape[1:] != (COUNT_BUCKETS,):
        raise _CacheMiss("cached count sketches have unexpected shape")
    if "sizes" in out:
        for pos, size in _spot_check_rows(conn, alive, "SELECT pos, units FROM minhash"):
            if out["sizes"][pos] not in (size, np.iinfo(np.uint32).max):  # or unknown
                raise _CacheMiss(f"cached size of position {pos} differs")
            if "counts" in out:
                row = out["counts"].take(np.array([pos]))[0]
                if row.any() and int(row.sum()) != size and row.max() < 255:
                    raise _CacheMiss(f"cached count sketch of position {pos} differs")
    return out


def mapped_counts(generation: Path) -> MappedRows | None:
    """The count sketches cached in the generation directory ``generation`` (None if it has
    none), mapped: what a writer reads after caching its tables again."""
    path = generation / "counts.npy"
    return MappedRows(path) if path.exists() else None


# --------------------------------------------------------------------------------------------
# Writing a generation
# --------------------------------------------------------------------------------------------


def next_generation(path: Path) -> int:
    """The number of the next cache generation of the index at ``path`` (1 without a readable
    manifest). O(1).

    Example:
        >>> import tempfile
        >>> next_generation(Path(tempfile.mkdtemp()))
        1
    """
    try:
        return int(json.loads((path / MANIFEST_NAME).read_text())["generation"]) + 1
    except (OSError, ValueError, KeyError, TypeError):
        return 1


def save_generation(
    directory: Path,
    tables: Tables,
    generation: int,
    *,
    max_pos: int,
    tomb_seq: int,
    summaries: dict[str, np.ndarray] | None = None,
) -> Path:
    """Cache the tables as ``tables-<generation>/`` and name it in ``tables.json``; they hold
    the records up to position ``max_pos`` and removal ``tomb_seq``. MinHash ``summaries``
    (``sizes``, ``sketches``, ``counts``: one row per position ``0..max_pos``) are cached
    beside them. Returns the generation's directory. O(table bytes).

    The arrays are written to a temporary directory and fsynced before it is renamed and the
    manifest is replaced (also fsynced), so the manifest never names incomplete files; older
    generations are deleted afterwards (readers that memory-mapped them keep their mapping).
    """
    try:
        _write_generation(directory, tables, generation, max_pos, tomb_seq, summaries or {})
        return directory / f"tables-{generation}"
    except OSError as error:
        shutil.rmtree(directory / f".tables-{generation}.tmp", ignore_errors=True)
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise IndexWriteError(
                error.errno,
                f"no space left on the device of {directory} while caching the index's tables: "
                "the records are safe (SQLite); the index opens from its previous cache or "
                "rebuilds its tables; free some space",
            ) from error
        raise


def write_npy(fh: BinaryIO, array: np.ndarray) -> None:
    """Write ``array`` to ``fh`` as ``np.save`` does (.npy format 1.0). O(array bytes).

    The data goes through the file object, not ``ndarray.tofile``: a short write on a full
    disk then raises ``OSError`` with its errno (ENOSPC), where ``tofile`` raises one without
    any ("N requested and M written"), which no caller could tell from another failure."""
    array = np.ascontiguousarray(array)
    np.lib.format.write_array_header_1_0(fh, np.lib.format.header_data_from_array_1_0(array))
    fh.write(memoryview(array.reshape(-1)).cast("B"))


def _write_generation(
    directory: Path,
    tables: Tables,
    generation: int,
    max_pos: int,
    tomb_seq: int,
    summaries: dict[str, np.ndarray],
) -> None:
    """The body of :func:`save_generation` (which cleans up after a failure)."""
    tmp = directory / f".tables-{generation}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    size = max_pos + 1
    arrays = [("keys.npy", tables.keys), ("rows.npy", tables.rows)]
    if isinstance(tables, PermutationTables):
        arrays.append(("fps.npy", tables.fps[:size]))
    arrays.append(("alive.npy", tables.alive[:size]))
    arrays += [(f"{key}.npy", summaries[key][:size]) for key in _SUMMARIES if key in summaries]
    for name, array in arrays:
        with open(tmp / name, "wb") as fh:
            write_npy(fh, array)
            fh.flush()
            os.fsync(fh.fileno())
    final = directory / f"tables-{generation}"
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    manifest = {
        "format": FORMAT_VERSION,
        "generation": generation,
        "max_pos": max_pos,
        "tomb_seq": tomb_seq,
        "entries": int(tables.keys.shape[1]),
        "live": tables.live,
        "main_dead": tables._main_dead,
        # Read back from the page cache just written: what a later open will verify.
        "files": describe_files(final, [name for name, _ in arrays]),
    }
    if isinstance(tables, PermutationTables):
        manifest["planned_n"] = tables.planned_n
        manifest["plan"] = {
            "hamming_k": tables.hamming_k,
            "blocks": len(tables.plan.blocks),
            "prefix_blocks": tables.plan.prefix_blocks,
        }
    else:
        manifest["bands"] = tables.bands
        manifest["summaries"] = [key for key in _SUMMARIES if key in summaries]
        manifest["units"] = UNITS_VERSION
    # The temporary manifests of killed writers go first: their names are not reused.
    finish_dead_writes(directory)
    with atomic_write(directory / MANIFEST_NAME) as fh:
        fh.write(json.dumps(manifest).encode("ascii"))
    fsync_path(directory)
    for old in directory.glob("tables-*"):
        if old.name != final.name:
            shutil.rmtree(old, ignore_errors=True)
