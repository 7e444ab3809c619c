"""The records of an index: its SQLite database, the source of truth, and the writer lock.

Layout of an index directory::

    DIR/index.sqlite (+ -wal, -shm)   the records: the source of truth (SQLite, WAL mode)
    DIR/tables.json                   manifest of the cached table arrays (a generation number)
    DIR/tables-<generation>/*.npy     cached sorted tables (fingerprints) and the alive bitmap
    DIR/writer.lock                   held (flock) by the one process that may write
    DIR/closed.json                   the database file as the last writer left it (see below)

The cached tables are :mod:`neardup.index.cache`'s; this module holds the rest.

Records (SQLite)
    ``docs(pos, id, fingerprint, timestamp, gid)``: ``pos`` is the document's **position**, its
    insertion number (1, 2, ...; never reused, also after removals); ``fingerprint`` is the
    64-bit SimHash (a MinHash index: the 64-bit content fingerprint of the normalised text,
    equal for exact duplicates) stored as a signed 64-bit integer (two's complement);
    ``timestamp`` is microseconds since the Unix epoch (0 when not given, as in ``dedup``).
    ``groups(gid, original, size)`` holds one row per group: the position of its original and
    its size. The view ``documents(position, id, fingerprint, timestamp, duplicate_id,
    original_id, group_size)`` joins them. ``tombstones(seq, pos)`` logs removals so that
    readers in other processes can apply them. ``meta`` holds the settings
    (:mod:`neardup.index.settings`) and counters. A MinHash index also has
    ``minhash(pos, keys, units, text)``: band keys, verification data size and compressed text
    per document.

Durability and concurrency
    - Every write is one SQLite transaction (WAL mode, :func:`write_transaction`). With
      ``synchronous="normal"`` (default) a committed add survives a crash of the process
      (``kill -9``): the WAL is in the operating system's hands when the commit returns.
      ``synchronous="full"`` also fsyncs every commit, so an acknowledged add survives power
      loss and operating-system crashes (slower writes).
    - One writer (an exclusive ``flock`` on ``writer.lock``, released by the operating system
      if the process dies) and any number of readers in other processes.

Damage and errors
    ``PRAGMA quick_check`` (:func:`quick_check`: every page and b-tree structure, O(database
    size), without cross-checking the indexes against the table) runs on opening unless the
    database file is exactly as a writer left it when it closed cleanly; a failure refuses to
    open the index, so nothing is ever written into a database that fails it
    (:mod:`neardup.index.integrity` has the full check and the recovery). A writer's
    :func:`mark_closed` records, once its connection is closed (the WAL checkpointed into the
    file and removed), the file's size, inode, modification and status-change times in
    ``closed.json``; opening a writer removes it (:func:`forget_closed`), so a writer that dies
    leaves none. :func:`closed_cleanly` accepts it only if the file still has those values, no
    WAL holds frames and ``closed.json`` is younger than the file's last change (else a change
    in the same tick of the file system's clock could keep the times): any write to the file
    after the close, by any program, changes its status-change time (which no program can set
    back), so a changed file is always checked. SQLite pages carry no checksums: a flipped
    byte inside a record that leaves the page well-formed passes the quick check and is found
    only by the full check. SQLite errors leave as one-line errors naming the file
    (:func:`sqlite_error`, :func:`guard_sqlite`).

Example:
    >>> import tempfile
    >>> from neardup.index.settings import index_settings
    >>> d = Path(tempfile.mkdtemp())
    >>> write_records(d, index_settings(), ["a", "b"], np.array([5, 5], np.uint64),
    ...               np.zeros(2, np.int64), np.array([0, 0]), np.array([2, 2]))
    >>> conn, meta, _ = open_records(d, readonly=True, synchronous="normal")
    >>> meta["documents"], conn.execute("SELECT id, duplicate_id FROM documents").fetchall()
    ('2', [('a', 'a'), ('b', 'a')])
    >>> conn.close()
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from neardup.index.errors import IndexDamagedError, IndexLockedError, IndexWriteError
from neardup.index.minhash import decode_text
from neardup.index.results import Record
from neardup.index.settings import settings_meta
from neardup.io.values import us_to_iso
from neardup.settings import Settings

__all__ = [
    "CLOSED_NAME",
    "DB_NAME",
    "FORMAT_VERSION",
    "GROUPED",
    "LOCK_NAME",
    "NEARLY_FULL_BYTES",
    "RECORD_SQL",
    "SYNCHRONOUS",
    "acquire_writer_lock",
    "bump_counts",
    "check_database_file",
    "check_synchronous",
    "closed_cleanly",
    "connect",
    "forget_closed",
    "fsync_path",
    "free_bytes",
    "grouped_rows",
    "guard_sqlite",
    "install",
    "json_list",
    "key_blobs",
    "keys_of_blobs",
    "mark_closed",
    "open_records",
    "quick_check",
    "read_snapshot",
    "record_of",
    "repair_hint",
    "rows_after",
    "signed",
    "sql_state",
    "sqlite_error",
    "stored_texts",
    "unsigned",
    "write_records",
    "write_transaction",
]

FORMAT_VERSION = 1
DB_NAME = "index.sqlite"
LOCK_NAME = "writer.lock"
CLOSED_NAME = "closed.json"
SYNCHRONOUS = ("normal", "full")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE docs (
    pos INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    fingerprint INTEGER NOT NULL,
    timestamp INTEGER NOT NULL,
    gid INTEGER NOT NULL
);
CREATE TABLE groups (gid INTEGER PRIMARY KEY, original INTEGER NOT NULL, size INTEGER NOT NULL);
CREATE TABLE tombstones (seq INTEGER PRIMARY KEY AUTOINCREMENT, pos INTEGER NOT NULL);
CREATE VIEW documents AS
    SELECT d.pos AS position, d.id AS id, d.fingerprint AS fingerprint, d.timestamp AS timestamp,
           o.id AS duplicate_id, o.id AS original_id, g.size AS group_size
    FROM docs d JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original;
"""

_MINHASH_SCHEMA = """
CREATE TABLE minhash (
    pos INTEGER PRIMARY KEY,
    keys BLOB NOT NULL,
    units INTEGER NOT NULL,
    text BLOB NOT NULL
);
"""
"""MinHash index only: per document its band keys (``uint32[bands]``, little-endian), the size
of its verification data and its zstd-compressed UTF-8 text (:mod:`neardup.index.minhash`)."""

_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs(id);
CREATE INDEX IF NOT EXISTS docs_gid ON docs(gid, timestamp, pos);
CREATE INDEX IF NOT EXISTS docs_fingerprint ON docs(fingerprint, id);
"""

GROUPED = "FROM docs d JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original "
"""Documents ``d``, each with its group row ``g`` and its group's original ``o``."""

RECORD_SQL = "SELECT d.id, d.fingerprint, d.timestamp, d.pos, o.id, g.original, g.size " + GROUPED
"""The columns of :func:`record_of`; append a ``WHERE`` clause on ``d``."""

_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_NOTADB = 26
NEARLY_FULL_BYTES = 1 << 20
"""Free bytes under which an SQLite I/O error is taken for a full disk: SQLite reports a
failure to grow its shared-memory file (``SQLITE_IOERR_SHMSIZE``) or to sync or truncate as an
I/O error without the system's error code, and a full device is by far their commonest cause
(tens of KB to grow the ``-shm`` file and the WAL)."""

F = TypeVar("F", bound=Callable[..., Any])


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def signed(fp: int) -> int:
    """A ``uint64`` fingerprint as the signed 64-bit integer SQLite stores (two's complement).

    Example:
        >>> signed(2**64 - 1), unsigned(-1)
        (-1, 18446744073709551615)
    """
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def unsigned(value: int) -> int:
    """The ``uint64`` fingerprint of a stored signed integer (the inverse of :func:`signed`)."""
    return value + (1 << 64) if value < 0 else value


def json_list(values) -> str:
    """Integers as a JSON list, the argument of ``... IN (SELECT value FROM json_each(?))``.

    Example:
        >>> json_list(np.array([3, 1]))
        '[3, 1]'
    """
    return json.dumps([int(v) for v in values])


def key_blobs(keys: np.ndarray) -> list[bytes]:
    """Each row of ``uint32[n, bands]`` band keys as little-endian bytes (``minhash.keys``).

    Example:
        >>> keys_of_blobs(key_blobs(np.array([[1, 2]], np.uint32)), 2).tolist()
        [[1, 2]]
    """
    keys = np.ascontiguousarray(keys, dtype="<u4")
    return [row.tobytes() for row in keys]


def keys_of_blobs(blobs: Sequence[bytes], bands: int) -> np.ndarray:
    """The ``uint32[n, bands]`` band keys of ``minhash.keys`` values."""
    if not blobs:
        return np.zeros((0, bands), np.uint32)
    return np.frombuffer(b"".join(blobs), dtype="<u4").reshape(len(blobs), bands).astype(np.uint32)


def record_of(row: tuple) -> Record:
    """The :class:`~neardup.index.results.Record` of a :data:`RECORD_SQL` row."""
    ident, fp, ts, pos, orig_id, orig_pos, size = row
    return Record(
        ident, unsigned(fp), int(ts), int(pos), orig_id, orig_id, orig_pos == pos, int(size)
    )


def check_synchronous(synchronous: str) -> str:
    """``synchronous`` checked to be one of :data:`SYNCHRONOUS`.

    Example:
        >>> check_synchronous("full")
        'full'
    """
    if synchronous not in SYNCHRONOUS:
        raise ValueError(
            f"synchronous must be one of {', '.join(SYNCHRONOUS)}; got {synchronous!r}"
        )
    return synchronous


# --------------------------------------------------------------------------------------------
# Errors and checks
# --------------------------------------------------------------------------------------------


def repair_hint(db: Path) -> str:
    """What to run about a damaged database ``db``: the full check, then the recovery."""
    directory = db.parent
    return (
        f"run `neardup index check -d {directory}` for details and `neardup index recover -d "
        f"{directory} --to NEW_DIR` to build a new index from the records that are still readable"
    )


def stored_texts(blobs: Sequence[bytes], positions: Sequence[int], db: Path) -> list[str]:
    """The texts of the compressed ``blobs`` of a MinHash index's ``positions`` (in the
    database ``db``); IndexDamagedError naming the first whose checksum fails or that does
    not decompress: never a text other than the one stored. O(their bytes).

    Example:
        >>> from neardup.index.minhash import encode_texts
        >>> stored_texts(encode_texts(["a b"]), [3], Path("x/index.sqlite"))
        ['a b']
    """
    texts = []
    for position, blob in zip(positions, blobs):
        try:
            texts.append(decode_text(blob))
        except ValueError as error:
            raise IndexDamagedError(
                f"{db}: the stored text of position {position} is damaged ({error}); "
                f"{repair_hint(db)}"
            ) from None
    return texts


def sqlite_error(error: sqlite3.Error, db: Path) -> OSError:
    """The one-line error to raise for an SQLite error on the database ``db``: a full disk or an
    I/O error is an :class:`IndexWriteError` (errno ENOSPC / EIO; an I/O error with less than
    :data:`NEARLY_FULL_BYTES` free on the device is ENOSPC), a damaged file an
    :class:`IndexDamagedError`; anything else an ``OSError`` naming the file. O(1).

    Example:
        >>> e = sqlite_error(sqlite3.OperationalError("database or disk is full"), Path("i/x"))
        >>> e.errno == errno.ENOSPC, type(e).__name__
        (True, 'IndexWriteError')
    """
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(error)
    if primary == _SQLITE_FULL or "disk is full" in text:
        return IndexWriteError(
            errno.ENOSPC,
            f"no space left on the device of {db}: the write was rolled back (nothing of it "
            "is stored); free some space and retry",
        )
    if (
        primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
        or "malformed" in text
        or ("not a database" in text)
    ):
        return IndexDamagedError(f"{db} is damaged ({text}); {repair_hint(db)}")
    if primary == _SQLITE_IOERR or "disk I/O error" in text:
        if free_bytes(db.parent) < NEARLY_FULL_BYTES:
            return IndexWriteError(
                errno.ENOSPC,
                f"no space left on the device of {db} ({text}, {free_bytes(db.parent):,} bytes "
                "free): the write under way was rolled back (nothing of it is stored); free "
                "some space and retry",
            )
        return IndexWriteError(errno.EIO, f"I/O error on {db} ({text}); {repair_hint(db)}")
    return OSError(f"{db}: {text}")


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged process may still write on the device of ``directory``; a very
    large number if it cannot be told. O(1)."""
    try:
        stat = os.statvfs(directory)
    except OSError:
        return 1 << 62
    return stat.f_bavail * stat.f_frsize


def guard_sqlite(method: F) -> F:
    """Decorator for methods of an object with a ``path`` (the index directory): SQLite errors
    leave as :func:`sqlite_error` describes them (one line naming the database), not as
    tracebacks."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            raise sqlite_error(error, Path(self.path) / DB_NAME) from error

    return wrapper  # type: ignore[return-value]


def quick_check(conn: sqlite3.Connection, db: Path) -> float:
    """``PRAGMA quick_check`` on an open connection; returns the seconds it took.

    Raises:
        IndexDamagedError: the check reports a problem (the first ones are quoted).

    Complexity: reads every page once, O(database size): measured 0.04 s for a 200,000-document
    index (34 MB) from the page cache (see the README's reliability section).
    """
    started = time.perf_counter()
    try:
        rows = conn.execute("PRAGMA quick_check(20)").fetchall()
    except sqlite3.DatabaseError as error:
        raise sqlite_error(error, db) from error
    problems = [r[0] for r in rows if r[0] != "ok"]
    if problems:
        raise IndexDamagedError(
            f"{db} is damaged (quick_check: {'; '.join(problems[:3])}"
            f"{'; ...' if len(problems) > 3 else ''}); {repair_hint(db)}"
        )
    return time.perf_counter() - started


# --------------------------------------------------------------------------------------------
# Opening, locking, transactions
# --------------------------------------------------------------------------------------------


def connect(db: Path, readonly: bool) -> sqlite3.Connection:
    """A connection to the database ``db`` in autocommit mode (transactions are explicit),
    shareable between threads (the index serialises its calls), with a 10 s busy timeout."""
    if readonly:
        conn = sqlite3.connect(
            f"file:{db}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    # 8 MB of pages: the b-trees' upper levels; the texts of candidates, read once each, come
    # from the operating system's page cache (a larger cache only held them resident).
    conn.execute("PRAGMA cache_size = -8192")
    return conn


def acquire_writer_lock(path: Path) -> int:
    """Take the writer lock of the index directory ``path``; returns its file descriptor
    (closing it releases the lock). Raises :class:`IndexLockedError` if another writer holds
    it."""
    fd = os.open(str(path / LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise IndexLockedError(
            f"index {path} is open for writing elsewhere (one writer at a time); open it "
            "with readonly=True (--read-only) to read it meanwhile"
        ) from None
    return fd


def open_records(
    path: Path, readonly: bool, synchronous: str
) -> tuple[sqlite3.Connection, dict[str, str], float | None]:
    """Connect to the records of the index at ``path``, checking every page
    (:func:`quick_check`) unless the database is as a writer left it on a clean close
    (:func:`closed_cleanly`); a writer's connection gets WAL mode and ``synchronous``, and
    forgets the clean close (:func:`forget_closed`). Returns the connection, the ``meta`` rows
    and the seconds the check took, rounded to 0.1 ms (None: not needed). O(database size)
    with the check, else O(1).

    Raises:
        FileNotFoundError: no index at ``path``.
        ValueError: an empty database file, or an unknown format version.
        IndexDamagedError: the database fails its check.
    """
    db = path / DB_NAME
    conn = connect(db, readonly)
    try:
        # Every page once unless the file is known unchanged: a damaged database is refused
        # before it is read or written, rather than failing on some later request.
        check_seconds = None if closed_cleanly(path) else round(quick_check(conn, db), 4)
        if not readonly:
            forget_closed(path)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        version = int(meta.get("format_version", "0"))
        if version != FORMAT_VERSION:
            raise ValueError(
                f"{path}: index format version must be {FORMAT_VERSION}, got {version}"
            )
    except BaseException:
        conn.close()
        raise
    return conn, meta, check_seconds


def _file_state(path: Path) -> dict[str, int] | None:
    """What :func:`mark_closed` records of the database of the index at ``path``: its size,
    inode and times (ns), and the bytes of its WAL (0 without one); None without a database."""
    try:
        st = os.stat(path / DB_NAME)
    except FileNotFoundError:
        return None
    try:
        wal = os.stat(path / (DB_NAME + "-wal")).st_size
    except FileNotFoundError:
        wal = 0
    return {
        "bytes": st.st_size,
        "inode": st.st_ino,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "wal_bytes": wal,
    }


def mark_closed(path: Path, max_wait: float = 0.1) -> bool:
    """Record that the writer of the index at ``path`` has closed its connection cleanly:
    the database's :func:`_file_state` in ``closed.json``, which is written so that its own
    modification time is later than the database's last change (waiting up to ``max_wait``
    seconds for the file system's clock to tick; without it, nothing is recorded). Call it
    after the connection is closed and before the writer lock is released. Returns whether it
    recorded: a failure to write (a read-only or full file system) only means that the next
    open runs the check. O(1): a few ``stat`` calls and one small write.

    Example:
        >>> import tempfile
        >>> from neardup.index.settings import index_settings
        >>> d = Path(tempfile.mkdtemp())
        >>> write_records(d, index_settings(), ["a"], np.array([5], np.uint64),
        ...               np.zeros(1, np.int64), np.array([0]), np.array([1]))
        >>> closed_cleanly(d), mark_closed(d), closed_cleanly(d)
        (False, True, True)
    """
    state = _file_state(path)
    if state is None or state["wal_bytes"]:
        return False
    changed = max(state["mtime_ns"], state["ctime_ns"])
    tmp = path / f".{CLOSED_NAME}.{os.getpid()}.tmp"
    deadline = time.monotonic() + max_wait
    try:
        while True:
            tmp.write_text(json.dumps(state))
            if os.stat(tmp).st_mtime_ns > changed:
                os.replace(tmp, path / CLOSED_NAME)
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
    except OSError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def forget_closed(path: Path) -> None:
    """Remove the clean-close record of the index at ``path`` (a writer opening it). O(1)."""
    try:
        os.unlink(path / CLOSED_NAME)
    except FileNotFoundError:
        pass


def closed_cleanly(path: Path) -> bool:
    """Whether the database of the index at ``path`` is exactly as its last writer left it on
    a clean close (:func:`mark_closed`), so that :func:`quick_check` can be skipped: the
    recorded size, inode and times equal the file's, no WAL holds frames, and the record is
    younger than the recorded change. O(1).

    Example:
        >>> import tempfile
        >>> closed_cleanly(Path(tempfile.mkdtemp()))
        False
    """
    marker = path / CLOSED_NAME
    try:
        recorded = json.loads(marker.read_text())
        written = os.stat(marker).st_mtime_ns
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict) or recorded != _file_state(path):
        return False
    return written > max(recorded["mtime_ns"], recorded["ctime_ns"])


def check_database_file(path: Path) -> None:
    """Raise unless ``path`` holds an index database: FileNotFoundError without one,
    ValueError for an empty file (SQLite would take it for a new database and write into it)."""
    db = path / DB_NAME
    if not db.is_file():
        raise FileNotFoundError(
            f"no index at {path} (missing {DB_NAME}); create one with "
            "`neardup index build` or NearDupIndex.create"
        )
    if db.stat().st_size == 0:
        raise ValueError(
            f"{db} is empty: not an index (truncated?); rebuild it with `neardup index build`"
        )


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction: every query inside sees one consistent state of the records."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE``), committed at the end of the block and rolled
    back if it raises: a write is stored whole or not at all."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def fsync_path(path: Path) -> None:
    """fsync a file or directory (a directory: the names in it)."""
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# Reading and counting
# --------------------------------------------------------------------------------------------


def sql_state(conn: sqlite3.Connection) -> dict[str, int]:
    """What the records hold, as counters: ``max_pos`` (the last position given),
    ``tomb_seq`` (the last removal logged) and ``documents``. O(1)."""
    seqs = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    count = conn.execute("SELECT value FROM meta WHERE key = 'documents'").fetchone()
    return {
        "max_pos": int(seqs.get("docs", 0)),
        "tomb_seq": int(seqs.get("tombstones", 0)),
        "documents": int(count[0]) if count else 0,
    }


def rows_after(
    conn: sqlite3.Connection, settings: Settings, max_pos: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Chunks of ``(positions int64, values)`` of the rows after ``max_pos``, in position
    order: what the tables hold of them, fingerprints (``uint64``) or band keys
    (``uint32[m, bands]``). Call it inside :func:`read_snapshot` for a consistent state."""
    minhash = settings.method == "minhash"
    if minhash:
        sql = "SELECT pos, keys FROM minhash WHERE pos > ? ORDER BY pos"
    else:
        sql = "SELECT pos, fingerprint FROM docs WHERE pos > ? ORDER BY pos"
    cur = conn.execute(sql, (max_pos,))
    while chunk := cur.fetchmany(262_144):
        if minhash:
            pos = np.array([r[0] for r in chunk], np.int64)
            yield pos, keys_of_blobs([r[1] for r in chunk], settings.bands)
        else:
            arr = np.array(chunk, dtype=np.int64)
            yield arr[:, 0], arr[:, 1].view(np.uint64)


def grouped_rows(conn: sqlite3.Connection, columns: str, positions) -> list[tuple]:
    """The ``columns`` (of ``d``, ``g`` and ``o``, as in :data:`GROUPED`) of the documents at
    ``positions``, in no particular order. O(log n) each."""
    return conn.execute(
        f"SELECT {columns} {GROUPED}WHERE d.pos IN (SELECT value FROM json_each(?))",
        (json_list(positions),),
    ).fetchall()


def bump_counts(conn: sqlite3.Connection, documents: int, groups: int) -> None:
    """Add to the ``documents`` and ``groups`` counters of ``meta`` (inside a write)."""
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'documents'",
        (documents,),
    )
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'groups'", (groups,)
    )


# --------------------------------------------------------------------------------------------
# A new index
# --------------------------------------------------------------------------------------------


def write_records(
    directory: Path,
    settings: Settings,
    ids: list[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    original: np.ndarray,
    group_size: np.ndarray,
    minhash_rows: tuple[np.ndarray, np.ndarray, list[bytes]] | None = None,
) -> None:
    """Write the SQLite records of a new index into ``directory``, fsynced: documents at
    positions 1..n, ``original`` and ``group_size`` per document (0-based, as
    :func:`neardup.pipeline.find_groups` gives them); ``minhash_rows`` are the band keys,
    verification data sizes and compressed texts of a MinHash index. O(n) inserts (about
    1-2 µs a row) plus three index sorts."""
    n = len(ids)
    db = directory / DB_NAME
    conn = connect(db, readonly=False)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        # The directory only becomes the index after an fsync and a rename, so the bulk load
        # itself needs no per-commit syncs.
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")
        conn.executescript(_SCHEMA)
        if settings.method == "minhash":
            conn.executescript(_MINHASH_SCHEMA)
        conn.execute("BEGIN")
        created = us_to_iso(time.time_ns() // 1000, timespec="seconds")
        is_orig = original == np.arange(n)
        meta = {
            "format_version": str(FORMAT_VERSION),
            **settings_meta(settings),
            "created": created,
            "documents": str(n),
            "groups": str(int(is_orig.sum())),
        }
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", list(meta.items()))
        # The original's position names the group.
        _insert_documents(conn, ids, fps, stamps, original + 1, minhash_rows)
        originals = np.flatnonzero(is_orig)
        conn.executemany(
            "INSERT INTO groups (gid, original, size) VALUES (?, ?, ?)",
            zip((originals + 1).tolist(), (originals + 1).tolist(), group_size[originals].tolist()),
        )
        conn.execute("COMMIT")
        conn.executescript(_INDEXES)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    fsync_path(db)


def _insert_documents(
    conn: sqlite3.Connection,
    ids: list[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    gid: np.ndarray,
    minhash_rows: tuple[np.ndarray, np.ndarray, list[bytes]] | None,
) -> None:
    """Insert the ``docs`` rows of a new index at positions 1..n (and its ``minhash`` rows),
    in chunks that bound the Python objects alive at once."""
    n = len(ids)
    signed_fps = fps.view(np.int64)
    step = 100_000
    for start in range(0, n, step):
        stop = min(n, start + step)
        conn.executemany(
            "INSERT INTO docs (pos, id, fingerprint, timestamp, gid) VALUES (?, ?, ?, ?, ?)",
            zip(
                range(start + 1, stop + 1),
                ids[start:stop],
                signed_fps[start:stop].tolist(),
                stamps[start:stop].tolist(),
                gid[start:stop].tolist(),
            ),
        )
        if minhash_rows is not None:
            keys, sizes, blobs = minhash_rows
            conn.executemany(
                "INSERT INTO minhash (pos, keys, units, text) VALUES (?, ?, ?, ?)",
                zip(
                    range(start + 1, stop + 1),
                    key_blobs(keys[start:stop]),
                    sizes[start:stop].tolist(),
                    blobs[start:stop],
                ),
            )


def install(tmp: Path, target: Path) -> None:
    """Move a complete new index into place (replacing ``target`` if it exists, unless a
    writer has it open)."""
    if target.exists():
        if (target / DB_NAME).exists():
            fd = acquire_writer_lock(target)  # refuse to replace an index a writer has open
            os.close(fd)
        old = target.parent / f".{target.name}.old-{os.getpid()}-{time.time_ns()}"
        os.rename(target, old)
        os.rename(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, target)
    fsync_path(target.parent)
