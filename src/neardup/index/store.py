"""The durable embedded near-duplicate index: SQLite records plus in-memory candidate tables.

A crawler that has just fetched a page asks "is a near-duplicate of this already stored?"; this
module answers in microseconds to a few milliseconds, and stores the page if asked, without a
server. :class:`NearDupIndex` is the Python API; ``neardup index ...`` and ``neardup serve`` are
built on it.

This module holds the public operations; the package docstring (:mod:`neardup.index`) tells
the two kinds of index (``method``) apart and lists the modules below it, one concept each.

Concurrency: one writer (``NearDupIndex(DIR)``, holding the writer lock) and any number of
readers, ``NearDupIndex(DIR, readonly=True)``, in other processes. A reader sees committed
writes after :meth:`NearDupIndex.refresh`, which every read-only query calls (a cheap
``PRAGMA data_version`` check). Inside a process, one lock serialises the index's operations,
so threads may share an instance.

Example:
    >>> import tempfile
    >>> path = tempfile.mkdtemp() + "/idx"
    >>> with NearDupIndex.create(path, hamming_k=3) as index:
    ...     a = index.add("a", "the cat sat on the mat near the door", timestamp=10)
    ...     b = index.add("b", "The cat sat on the mat, near the door!", timestamp=20)
    ...     q = index.query("the cat sat on the mat near the door")
    >>> a.status, b.status, b.duplicate_id
    ('new', 'duplicate', 'a')
    >>> [(m.id, m.distance) for m in q.matches]
    [('a', 0), ('b', 0)]
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.ids import check_id
from neardup.index.build import build_index
from neardup.index.cache import OpenInfo, catch_up, load_tables, next_generation, save_generation
from neardup.index.errors import (
    ReadOnlyIndexError,
    batch_inputs,
    check_if_exists,
    check_int,
    lookup_id,
    unique_ids,
)
from neardup.index.grouping import add_batch, remove_ids
from neardup.index.matches import Matcher, Probes, text_list
from neardup.index.results import DEFAULT_LIMIT, AddResult, QueryResult, Record, check_limit
from neardup.index.settings import (
    describe_settings,
    keyword_settings,
    settings_from_meta,
)
from neardup.index.stats import index_stats
from neardup.index.storage import (
    GROUPED,
    RECORD_SQL,
    acquire_writer_lock,
    check_database_file,
    check_synchronous,
    guard_sqlite,
    mark_closed,
    open_records,
    read_snapshot,
    record_of,
    sql_state,
)
from neardup.settings import Settings

__all__ = ["NearDupIndex"]


class NearDupIndex:
    """A persistent near-duplicate index, SimHash or MinHash (see the module docstring).

    Open an existing index with ``NearDupIndex(path)`` (the one writer) or
    ``NearDupIndex(path, readonly=True)`` (any number of readers, in any process); create one
    with :meth:`create` (empty) or :meth:`build` (bulk, from a corpus). Use it as a context
    manager, or call :meth:`close`: closing a writer caches the tables for a fast next open.

    Args:
        path: the index directory.
        readonly: open without the writer lock; writes raise :class:`ReadOnlyIndexError`.
        synchronous: ``"normal"`` (an acknowledged write survives a crash of the process) or
            ``"full"`` (it also survives power loss; every commit is fsynced).

    Raises:
        FileNotFoundError: no index at ``path``.
        IndexLockedError: another writer has the index open.
        ValueError: the index has an unknown format version.

    Complexity: opening is O(n) memory copies of 9 bytes per fingerprint plus the rows added
    since the cache was written (or O(n log n) to rebuild the tables from SQLite).

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/idx"
        >>> NearDupIndex.build(path, ["a", "b", "c"],
        ...                    fingerprints=np.array([0, 1, 2**40], np.uint64), hamming_k=1).close()
        >>> with NearDupIndex(path, readonly=True) as index:
        ...     index.get("b").duplicate_id, len(index)
        ('a', 3)
    """

    @guard_sqlite
    def __init__(
        self, path: str | os.PathLike, *, readonly: bool = False, synchronous: str = "normal"
    ) -> None:
        started = time.perf_counter()
        self.path = Path(path)
        self.readonly = bool(readonly)
        self.synchronous = check_synchronous(synchronous)
        self._lock = threading.RLock()
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        check_database_file(self.path)
        try:
            if not self.readonly:
                self._lock_fd = acquire_writer_lock(self.path)
            self._conn, meta, checked = open_records(self.path, self.readonly, self.synchronous)
            self.settings = settings_from_meta(meta)
            self.created = meta.get("created", "")
            self._open_info = OpenInfo(extra={"quick_check_seconds": checked})
            summaries = self._load_tables()
            self._matcher = Matcher(self.path, self._conn, self._tables, self.settings)
            self._matcher.load_summaries(summaries)
            if not self.readonly and self._dirty:
                self.checkpoint()
            self._data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        except BaseException:
            self._release()
            raise
        self._open_info.seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(
        cls, path: str | os.PathLike, *, synchronous: str = "normal", **settings: Any
    ) -> NearDupIndex:
        """Create an empty index at ``path`` (which must not exist, or be an empty directory)
        and open it for writing. ``settings`` are the keywords of
        :func:`~neardup.index.settings.index_settings` (``method``, ``hamming_k``,
        ``shingle``, ...: ``dedup``'s options, with its defaults for ``method``), validated and
        stored in the index; ``synchronous`` as in the class docstring. O(1).

        Example:
            >>> import tempfile
            >>> index = NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=4)
            >>> index.settings.hamming_k, len(index)
            (4, 0)
            >>> index.close()
            >>> index = NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="minhash")
            >>> index.method, index.settings.shingle, index.settings.bands
            ('minhash', 'char:4', 32)
            >>> index.close()
        """
        return cls._build(
            path, [], keyword_settings(settings, "create"), texts=[], synchronous=synchronous
        )

    @classmethod
    def build(
        cls,
        path: str | os.PathLike,
        ids: Sequence[str],
        *,
        texts: Sequence[str] | None = None,
        fingerprints: np.ndarray | None = None,
        timestamps_us: np.ndarray | None = None,
        workers: int | None = 1,
        overwrite: bool = False,
        synchronous: str = "normal",
        **settings: Any,
    ) -> NearDupIndex:
        """Build an index from a whole corpus in one pass and open it for writing: the groups
        of ``dedup`` with the index's settings, positions 1..n in the given order, written
        beside ``path`` and renamed into place when complete (:mod:`neardup.index.build`).

        Args:
            path: the index directory; it must not exist unless ``overwrite`` (then it is
                replaced once the new index is complete; no writer may have it open).
            ids: unique non-empty document IDs (at most 1,024 characters each).
            texts: the documents (fingerprinted with the settings), or
            fingerprints: their ``uint64`` SimHash fingerprints (exactly one of the two; a
                MinHash index needs the texts, which it stores for verification).
            timestamps_us: ``int64`` microseconds since the epoch (default all 0: input order
                decides the originals).
            workers: processes for fingerprinting texts (None = all cores).
            overwrite: replace an existing index.
            synchronous: see the class docstring.
            settings: the keywords of :func:`~neardup.index.settings.index_settings`
                (``method``, ``hamming_k``, ``shingle``, ``hash_name``, ``weights``,
                ``num_perm``, ``seed``, ``scheme``, ``threshold``, ``bands``, ``rows``, ``verify``:
                ``dedup``'s options, with its defaults; ``method`` defaults to SimHash with
                ``fingerprints``), fixed for the life of the index.

        Complexity: O(total text) to fingerprint, O(n log n) for the groups and the tables,
        O(n) SQLite inserts (about 1-2 µs a row) plus three index sorts.

        Example:
            >>> import tempfile
            >>> path = tempfile.mkdtemp() + "/idx"
            >>> index = NearDupIndex.build(path, ["x", "y"], texts=["a b c d e", "a b c d e!"])
            >>> index.get("y").original_id
            'x'
            >>> index.close()
        """
        if fingerprints is not None:
            settings.setdefault("method", "simhash")  # fingerprints are SimHash's
        return cls._build(
            path,
            ids,
            keyword_settings(settings, "build"),
            texts=texts,
            fingerprints=fingerprints,
            timestamps_us=timestamps_us,
            workers=workers,
            overwrite=overwrite,
            synchronous=synchronous,
        )

    @classmethod
    def _build(
        cls,
        path: str | os.PathLike,
        ids: Sequence[str],
        settings: Settings,
        *,
        synchronous: str,
        **inputs: Any,
    ) -> NearDupIndex:
        """Write a new index with ``settings`` (:mod:`neardup.index.build`) and open it."""
        check_synchronous(synchronous)
        return cls(build_index(Path(path), settings, ids, **inputs), synchronous=synchronous)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> NearDupIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Cache the tables (writer, if anything changed since the last cache), record the file
        a writer leaves (the next open may skip the quick check: storage's ``mark_closed``) and
        release the database and the writer lock. Idempotent. O(table bytes) when it caches.

        Example:
            >>> import tempfile
            >>> index = NearDupIndex.create(tempfile.mkdtemp() + "/idx")
            >>> index.close(); index.close()
        """
        with self._lock:
            if self._closed:
                return
            clean = False
            try:
                if not self.readonly and self._conn is not None and self._dirty:
                    self.checkpoint()
                clean = not self.readonly and self._conn is not None
            finally:
                self._release(clean)

    def _release(self, clean: bool = False) -> None:
        self._closed = True
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                clean = False
            self._conn = None
        if self._lock_fd is not None:
            if clean:
                mark_closed(self.path)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __len__(self) -> int:
        return self._tables.live

    def __contains__(self, ident: object) -> bool:
        if not isinstance(ident, str):
            return False
        return self.get(ident) is not None

    def __repr__(self) -> str:
        mode = "readonly" if self.readonly else "writer"
        return f"NearDupIndex({str(self.path)!r}, {mode}, documents={len(self)})"

    @property
    def method(self) -> str:
        """``"simhash"`` or ``"minhash"`` (fixed at build time)."""
        return self.settings.method

    @property
    def hamming_k(self) -> int | None:
        """The near-duplicate distance in bits of a SimHash index (None for MinHash)."""
        return self.settings.hamming_k if self.method == "simhash" else None

    def check_method(self, method: str | None) -> None:
        """Raise ValueError if ``method`` (None: any) is not the index's, naming the index's
        settings (for commands and requests that say which kind of index they expect). O(1)."""
        if method is not None and method != self.method:
            raise ValueError(
                f"index {self.path} is a {self.method} index ({describe_settings(self.settings)});"
                f" it cannot answer with method {method}"
            )

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"index {self.path} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise ReadOnlyIndexError(f"index {self.path} is open read-only")

    # ------------------------------------------------------------------ tables

    def _load_tables(self) -> dict[str, np.ndarray]:
        """Load the tables (cache or records) and return the summaries cached with them; a
        writer caches them again if they were not used as cached (``_dirty``)."""
        self._tables, state, summaries = load_tables(
            self.path, self._conn, self.settings, self._open_info
        )
        self._max_pos = state["max_pos"]
        self._tomb_seq = state["tomb_seq"]
        self._saved_live = self._tables.live
        self._dirty = self._open_info.source != "cache" or self._open_info.tail_rows > 0
        return summaries

    def limit_verification(self, word_ops: int | None) -> None:
        """MinHash index: bound the time one call (an add or a query, of one text or a batch)
        may spend verifying its long texts (over 4,096 words) against their candidates, in
        word operations of the LCS kernel (⌈m / 64⌉ · n for texts of m ≤ n words once their
        common prefix and suffix are removed; about a nanosecond each): a call that would
        spend more raises :class:`~neardup.index.errors.VerificationTooLongError` and changes
        nothing. None: no limit (the default, as ``dedup`` has none). O(1).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="minhash") as index:
            ...     index.limit_verification(2_000_000_000)
        """
        if word_ops is not None:
            word_ops = check_int("word_ops", word_ops, 0, 2**62)
        if self._matcher.minhash:
            self._matcher.verifier.work_limit = word_ops

    @guard_sqlite
    def checkpoint(self) -> None:
        """Writer: merge the delta and cache the tables under a new generation (written to a
        temporary directory, fsynced, then named in ``tables.json``; older generations are
        deleted). Also run at close. O(n · T) bytes written.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="simhash") as index:
            ...     _ = index.add("a", fingerprint=1)
            ...     index.checkpoint()
            ...     sorted(p.name for p in index.path.glob("tables-*"))
            ['tables-2']
        """
        with self._lock:
            self._check_writable()
            tables = self._tables
            if tables.delta_len or tables._main_dead:
                tables.merge()  # the cache then holds no dead row
            written = save_generation(
                self.path,
                tables,
                next_generation(self.path),
                max_pos=self._max_pos,
                tomb_seq=self._tomb_seq,
                summaries=self._matcher.summaries(self._max_pos + 1),
            )
            self._matcher.cached(written)
            self._dirty = False
            self._saved_live = tables.live

    # ------------------------------------------------------------------ refresh (readers)

    @guard_sqlite
    def refresh(self) -> bool:
        """Reader: apply the writes committed by other processes since the last refresh
        (new rows go to the delta, removals are marked). Cheap when nothing changed (one
        ``PRAGMA data_version``). Returns whether anything was applied.

        Example:
            >>> import tempfile
            >>> path = tempfile.mkdtemp() + "/idx"
            >>> writer = NearDupIndex.create(path, method="simhash")
            >>> reader = NearDupIndex(path, readonly=True)
            >>> _ = writer.add("a", fingerprint=5)
            >>> len(reader), reader.refresh(), len(reader)
            (0, True, 1)
            >>> reader.close(); writer.close()
        """
        with self._lock:
            self._check_open()
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version == self._data_version:
                return False
            self._data_version = version
            with read_snapshot(self._conn):
                state = sql_state(self._conn)
                if state["max_pos"] == self._max_pos and state["tomb_seq"] == self._tomb_seq:
                    return False
                catch_up(self._conn, self.settings, self._tables, self._max_pos, self._tomb_seq)
            if state["tomb_seq"] != self._tomb_seq:  # a removal may have split a group
                self._matcher.forget_groups()
            self._max_pos = state["max_pos"]
            self._tomb_seq = state["tomb_seq"]
            return True

    def _maybe_refresh(self) -> None:
        if self.readonly:
            self.refresh()

    def warm_up(self) -> float:
        """Load the compiled kernels and read the memory-mapped tables once, so that the first
        requests of a service do not pay for it. Returns the seconds spent. O(table bytes).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
            ...     index.warm_up() >= 0
            True
        """
        started = time.perf_counter()
        with self._lock:
            self._check_open()
            self._matcher.warm_up()
        return time.perf_counter() - started

    # ------------------------------------------------------------------ reads

    def fingerprint(self, texts: str | Sequence[str]) -> np.ndarray:
        """The ``uint64[n]`` fingerprints of texts with the index's settings: SimHash
        fingerprints, or for a MinHash index the 64-bit content fingerprints of the normalised
        texts (what its records and results hold). O(total text).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
            ...     two = index.fingerprint(["a b c", "a b c"])
            ...     bool(two[0] == two[1] == index.fingerprint("a b c")[0])
            True
        """
        return self._matcher.prepare(text_list(texts), None).fps

    @guard_sqlite
    def get(self, ident: str) -> Record | None:
        """The stored record of a document ID, or None. O(log n).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="simhash") as index:
            ...     _ = index.add("a", fingerprint="00000000000000ff", timestamp="2024-01-01")
            ...     r = index.get("a")
            >>> r.fingerprint, r.to_dict()["timestamp"], r.is_original
            (255, '2024-01-01T00:00:00Z', True)
        """
        lookup_id(ident)
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            row = self._conn.execute(RECORD_SQL + "WHERE d.id = ?", (ident,)).fetchone()
        if row is None:
            return None
        return record_of(row)

    def query(
        self,
        text: str | None = None,
        *,
        fingerprint: int | str | None = None,
        hamming_k: int | None = None,
        limit: int = DEFAULT_LIMIT,
        count_all: bool = False,
    ) -> QueryResult:
        """Stored near-duplicates of one text or fingerprint (nothing is stored).

        SimHash index: the stored documents within ``hamming_k`` bits. MinHash index: the
        stored documents sharing an LSH band with the text whose verification passes (see
        :mod:`neardup.index.minhash`), each with its ``similarity``.

        Args:
            text: a document (fingerprinted with the index's settings), or
            fingerprint: a SimHash (int, 16 hex digits, ``0x`` hex or decimal string; SimHash
                index only).
            hamming_k: largest distance, ``0..index.hamming_k`` (default the index's; SimHash
                index only).
            limit: matches to list, ``0..1000``.
            count_all: MinHash index: verify every candidate, so that ``match_count`` counts
                every match and the matches listed are the best of all (by default a probe
                with many candidates has each group's verified only until ``limit`` match:
                :attr:`QueryResult.match_count_exact` says which).

        Returns:
            A :class:`QueryResult`; matches ordered by distance (or descending similarity),
            then ID.

        Complexity: SimHash O(T · (log n + g) + delta) for the probe; MinHash
        O(bands · (log n + bucket) + delta) for the probe, O(1) bounds per candidate, and per
        candidate compared a SQLite look-up and decompression (unless cached) and the
        verification (O(its length) for LCS); plus O(log n) SQLite look-ups per listed match.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=2) as index:
            ...     _ = index.add_many(["a", "b"], fingerprints=[0b111, 0b100])
            ...     r = index.query(fingerprint=0b110)
            >>> r.status, [(m.id, m.distance) for m in r.matches], r.duplicate_id
            ('duplicate', [('a', 1), ('b', 1)], 'a')
        """
        texts = None if text is None else [text]
        fps = None if fingerprint is None else [fingerprint]
        return self.query_many(
            texts, fingerprints=fps, hamming_k=hamming_k, limit=limit, count_all=count_all
        )[0]

    @guard_sqlite
    def query_many(
        self,
        texts: Sequence[str] | None = None,
        *,
        fingerprints: Any = None,
        ids: Sequence[str] | None = None,
        hamming_k: int | None = None,
        limit: int = DEFAULT_LIMIT,
        count_all: bool = False,
    ) -> list[QueryResult]:
        """:meth:`query` for many probes at once (one probe call for all). ``ids`` (optional)
        are echoed in the results. Complexity: as :meth:`query`, per probe.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=1) as index:
            ...     _ = index.add("a", fingerprint=0)
            ...     [r.status for r in index.query_many(fingerprints=[1, 3])]
            ['duplicate', 'new']
        """
        k = self._matcher.check_k(hamming_k)
        limit = check_limit(limit)
        probes = self._matcher.prepare(texts, fingerprints)
        if ids is not None:
            ids = [check_id(v, f"ids[{i}]") for i, v in enumerate(ids)]
            if len(ids) != len(probes):
                raise ValueError(
                    f"ids must have one entry per probe ({len(probes)}), got {len(ids)}"
                )
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            return self._matcher.results(probes, k, limit, ids, bool(count_all))

    @guard_sqlite
    def stats(self) -> dict[str, Any]:
        """Counts, settings, table plan, memory and open time of the index. O(groups).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="simhash") as index:
            ...     s = index.stats()
            >>> s["documents"], s["hamming_k"], s["shingle"]
            (0, 3, 'word:3')
        """
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            return index_stats(
                self.path,
                self._conn,
                self.settings,
                self._tables,
                self._matcher.verifier.nbytes if self.method == "minhash" else 0,
                self._open_info,
                mode="readonly" if self.readonly else "writer",
                synchronous=self.synchronous,
                last_position=self._max_pos,
                created=self.created,
            )

    # ------------------------------------------------------------------ writes

    def add(
        self,
        ident: str,
        text: str | None = None,
        *,
        fingerprint: int | str | None = None,
        timestamp: Any = None,
        if_exists: str = "error",
        limit: int = DEFAULT_LIMIT,
    ) -> AddResult:
        """Add one document and say at once whether it is new or a near-duplicate.

        Args:
            ident: the document ID (unique, 1..1024 characters).
            text: the document, or
            fingerprint: its SimHash (int or string, as :meth:`query`).
            timestamp: when it was written: seconds since the epoch, an ISO 8601 string or a
                datetime (None = 0, the epoch; equal timestamps are ordered by position).
            if_exists: ``"error"`` (raise :class:`DocumentExistsError`) or ``"skip"`` (return
                the stored record's group with status ``"exists"``) when the ID is stored.
            limit: matches to list, ``0..1000``.

        Returns:
            :class:`AddResult` (see the module docstring for the grouping rules). The add is
            committed (durable) when this returns.

        Complexity: a probe, O(1) SQLite writes, plus O(size of the smaller groups) when it
        merges groups.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=1) as index:
            ...     _ = index.add("new", fingerprint=2, timestamp=100)
            ...     r = index.add("old", fingerprint=3, timestamp=50)  # older: the new original
            ...     index.get("new").duplicate_id, r.status, r.is_original
            ('old', 'duplicate', True)
        """
        texts = None if text is None else [text]
        fps = None if fingerprint is None else [fingerprint]
        options = {"if_exists": if_exists, "limit": limit, "timestamps": [timestamp]}
        return self.add_many([ident], texts, fingerprints=fps, **options)[0]

    @guard_sqlite
    def add_many(
        self,
        ids: Sequence[str],
        texts: Sequence[str] | None = None,
        *,
        fingerprints: Any = None,
        timestamps: Sequence[Any] | None = None,
        if_exists: str = "error",
        limit: int = DEFAULT_LIMIT,
    ) -> list[AddResult]:
        """Add documents in one transaction, with the same result as adding them one by one in
        the given order (each sees the ones before it). The whole batch is validated before
        anything is written; on any error nothing is written.

        Args:
            ids: unique IDs.
            texts / fingerprints: one per ID (exactly one of the two).
            timestamps: one per ID (see :meth:`add`), or None for all 0.
            if_exists, limit: see :meth:`add`.

        Complexity: one probe per distinct fingerprint, O(b²) comparisons inside a batch of up
        to 2,048 distinct fingerprints (tables above), O(b) SQLite writes.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=1) as index:
            ...     rs = index.add_many(["a", "b", "c"], fingerprints=[0, 1, 3 << 40])
            >>> [(r.status, r.duplicate_id) for r in rs]
            [('new', 'a'), ('duplicate', 'a'), ('new', 'c')]
        """
        ids = list(ids)
        check_if_exists(if_exists)
        limit = check_limit(limit)
        texts, fingerprints, stamps = batch_inputs(ids, texts, fingerprints, timestamps)
        unique_ids(ids, " in a batch")
        probes = self._matcher.prepare(texts, fingerprints, len(ids))
        return self._add(ids, probes, stamps, if_exists, limit)

    @guard_sqlite
    def add_arrays(
        self,
        ids: Sequence[str],
        fingerprints: np.ndarray | None = None,
        timestamps_us: np.ndarray | None = None,
        *,
        texts: Sequence[str] | None = None,
        if_exists: str = "error",
        limit: int = DEFAULT_LIMIT,
    ) -> list[AddResult]:
        """:meth:`add_many` for arrays: ``uint64`` fingerprints (SimHash) or ``texts``, and
        ``int64`` microsecond timestamps (as :func:`neardup.io.read_documents` and
        :func:`neardup.io.read_fingerprints` return them). One transaction.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="simhash") as index:
            ...     rs = index.add_arrays(["a", "b"], np.array([7, 7], np.uint64),
            ...                           np.array([5_000_000, 1_000_000]))
            >>> [(r.id, r.status, r.original_id) for r in rs]
            [('a', 'new', 'a'), ('b', 'duplicate', 'b')]
        """
        ids = list(ids)
        n = len(ids)
        if fingerprints is not None:
            fingerprints = np.ascontiguousarray(fingerprints, dtype=np.uint64).reshape(-1)
        stamps = (
            np.zeros(n, np.int64)
            if timestamps_us is None
            else np.ascontiguousarray(timestamps_us, dtype=np.int64).reshape(-1)
        )
        check_if_exists(if_exists)
        limit = check_limit(limit)
        unique_ids(ids, " in a batch")
        probes = self._matcher.prepare(None if texts is None else list(texts), fingerprints)
        if len(probes) != n or stamps.shape[0] != n:
            raise ValueError(
                f"fingerprints (or texts) and timestamps_us must have one entry per id ({n}), "
                f"got {len(probes)} and {stamps.shape[0]}"
            )
        return self._add(ids, probes, stamps, if_exists, limit)

    def _add(
        self, ids: list[str], probes: Probes, stamps: np.ndarray, if_exists: str, limit: int
    ) -> list[AddResult]:
        """The part of :meth:`add_many` and :meth:`add_arrays` under the lock, once the inputs
        are checked (:func:`neardup.index.grouping.add_batch`)."""
        with self._lock:
            self._check_writable()
            if not ids:
                return []
            results, added = add_batch(
                self._matcher, ids, probes, stamps, if_exists, limit, self._max_pos
            )
            if added:
                self._max_pos += added
                self._after_write()
            return results

    def _after_write(self) -> None:
        self._dirty = True
        # Cache again after large growth, so that reopening does not replay many rows.
        if abs(self._tables.live - self._saved_live) >= max(250_000, self._saved_live // 2):
            self.checkpoint()

    def remove(self, ident: str) -> bool:
        """Remove one document; returns whether it was stored. Its group is re-checked (see the
        module docstring): a new original if it was the original, a split if it was the only
        link. O(log n) plus O(group size).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=1) as index:
            ...     _ = index.add_many(["a", "b", "c"], fingerprints=[0, 1, 3])  # a-b-c chain
            ...     index.remove("b"), index.get("c").duplicate_id
            (True, 'c')
        """
        return self.remove_many([ident]) == 1

    @guard_sqlite
    def remove_many(self, ids: Sequence[str]) -> int:
        """Remove documents in one transaction; returns how many were stored (unknown IDs are
        ignored). Each affected group is re-checked once. O(b log n + Σ affected group sizes).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", method="simhash") as index:
            ...     _ = index.add_many(["a", "b"], fingerprints=[1, 2])
            ...     index.remove_many(["a", "b", "zz"]), len(index)
            (2, 0)
        """
        ids = [lookup_id(v, f"ids[{i}]") for i, v in enumerate(ids)]
        with self._lock:
            self._check_writable()
            if not ids:
                return 0
            removed, tomb_seq = remove_ids(self._matcher, ids)
            if removed:
                self._matcher.forget_groups()  # a removal may have split a group
                self._tomb_seq = tomb_seq
                self._after_write()
            return removed

    @guard_sqlite
    def groups(self) -> dict[str, tuple[str, bool, int]]:
        """Every document's ``(duplicate_id, is_original, group_size)``, keyed by ID. O(n)
        memory; for tests and exports.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=0) as index:
            ...     _ = index.add_many(["a", "b"], fingerprints=[1, 1])
            ...     index.groups()
            {'a': ('a', True, 2), 'b': ('a', False, 2)}
        """
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            rows = self._conn.execute(
                f"SELECT d.id, o.id, g.original = d.pos, g.size {GROUPED}ORDER BY d.pos"
            ).fetchall()
        return {r[0]: (r[1], bool(r[2]), int(r[3])) for r in rows}
