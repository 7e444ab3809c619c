"""The durable embedded near-duplicate index: SQLite records plus in-memory candidate tables.

A crawler that has just fetched a page asks "is a near-duplicate of this already stored?"; this
module answers in microseconds to a few milliseconds, and stores the page if asked, without a
server. :class:`NearDupIndex` is the Python API; ``neardup index ...`` and ``neardup serve`` are
built on it.

Two kinds of index, chosen when it is created (``method``), decide near-duplicates exactly as
``neardup dedup --method M --grouping components`` with the same settings does:

``simhash``
    64-bit SimHash fingerprints within ``hamming_k`` bits, found with permutation tables
    (below). Small (about 90 bytes per document in memory, 150 on disk) and fast, but it
    catches only about a third of light word-level edits (README, "Quality").
``minhash`` (``dedup``'s default)
    MinHash LSH band candidates, each verified on the texts by the run's verification (by
    default the LCS resemblance at 0.8): the groups of ``dedup``'s defaults, which find
    nearly every light edit. Band tables in memory (:mod:`neardup.index.minhash`, 8 bytes per
    band per document: 258 at the default 32 bands) and the texts zstd-compressed in SQLite,
    read only for candidates.

Layout of an index directory::

    DIR/index.sqlite (+ -wal, -shm)   the records: the source of truth (SQLite, WAL mode)
    DIR/tables.json                   manifest of the cached table arrays (a generation number)
    DIR/tables-<generation>/*.npy     cached sorted tables (fingerprints) and the alive bitmap
    DIR/writer.lock                   held (flock) by the one process that may write

Records (SQLite)
    ``docs(pos, id, fingerprint, timestamp, gid)``: ``pos`` is the document's **position**, its
    insertion number (1, 2, ...; never reused, also after removals); ``fingerprint`` is the
    64-bit SimHash (a MinHash index: the 64-bit content fingerprint of the normalised text,
    equal for exact duplicates) stored as a signed 64-bit integer (two's complement);
    ``timestamp`` is microseconds since the Unix epoch (0 when not given, as in ``dedup``).
    ``groups(gid, original, size)`` holds one row per group: the position of its original and
    its size. The view ``documents(position, id, fingerprint, timestamp, duplicate_id,
    original_id, group_size)`` joins them. ``tombstones(seq, pos)`` logs removals so that
    readers in other processes can apply them. ``meta`` holds the settings and counters. A
    MinHash index also has ``minhash(pos, keys, units, text)``: band keys, verification data
    size and compressed text per document.

Settings
    The method and its settings (:func:`index_settings`: ``dedup``'s options and defaults) are
    fixed when the index is created and stored in ``meta``; every text added or queried is
    signed with them (:func:`neardup.pipeline.signatures`). A request that needs other settings
    is refused with a ValueError naming the index's (a fingerprint or ``hamming_k`` for a
    MinHash index; :meth:`NearDupIndex.check_method`). An index written before MinHash indexes
    existed has no ``method`` in ``meta`` and opens as SimHash, unchanged.

Grouping: the index always holds the groups of ``neardup dedup --grouping components`` with
its settings for the documents it currently contains (``build`` runs
:func:`neardup.pipeline.find_groups` itself; adds and removals keep the components of the same
relation). The rules are the same for both methods (one implementation: the method only
decides which pairs match, :meth:`NearDupIndex._add_locked` and :meth:`NearDupIndex._regroup`
do the rest):
    - SimHash: two documents are near-duplicates when their fingerprints differ in at most
      ``hamming_k`` bits. MinHash: when they agree on a whole LSH band and pass verification
      (:func:`neardup.index.minhash.pair_similarity`). Groups are the connected components of
      that relation (transitive, like ``dedup``). ``dedup`` links each band bucket to its
      earliest member only ("star" candidates, :mod:`neardup.candidates.bands`) before
      verifying, while the index verifies every stored candidate: the two differ only when a
      bucket's earliest member fails verification against two members that pass together and
      share no other band with a linked member (not seen in the agreement tests).
    - Two documents are near-duplicates when their fingerprints differ in at most ``hamming_k``
      bits. Groups are the connected components of that relation (transitive, like ``dedup``).
    - The **original** of a group is its earliest document: smallest timestamp, ties broken by
      the smaller position (insertion order, which is input order for ``build``, as in
      ``dedup``). The group's **duplicate ID** is the original's ID, so ``duplicate_id ==
      original_id``, exactly as ``dedup`` writes them.
    - A new document that matches nothing starts a group (status ``new``). One that matches
      stored documents (status ``duplicate``) joins their group; if its matches lie in
      *several* groups, the document bridges them and those groups **merge** into one, whose
      original is the earliest of their originals and the new document.
    - A document that arrives late with an *older* timestamp than its group's original becomes
      the group's new original, and the duplicate ID of **every** member changes to its ID.
      Records are not rewritten for that: each record points at its group row (``gid``) and the
      group row names the original, so moving the original is one row update and readers see
      the new duplicate ID at once.
    - Removing a document re-checks its group: if it was the original, the next earliest member
      becomes the original; if it was the only link between parts of the group, the group
      splits into its new components (each with its own earliest original). Cost O(group size).
    - Hence a ``build`` from a corpus and ``dedup --grouping components`` on that corpus with
      the same settings agree exactly (``build`` runs :func:`neardup.pipeline.find_groups`),
      and so do adds in any order and removals: the result never depends on the order
      documents arrived in, except through positions breaking timestamp ties.

SimHash probing (the online form of Manku et al. 2007): :class:`PermutationTables` keeps, per
table of a :func:`neardup.candidates.tables.plan_tables` plan, the sorted prefix keys (``uint32``:
the table's prefix blocks, the top 32 bits of them if wider) and the positions in that order
(``uint32``), plus the fingerprint of every position (``uint64``) and an alive flag. A probe
binary-searches each table for the query's key, checks the fingerprints found with XOR + popcount
and keeps a match only in the first table whose whole prefix it shares (so no match is reported
twice). Recent adds go to a small unsorted **delta**, scanned linearly, which is merged into the
sorted tables when it grows past ``delta_limit`` (4,096 to 65,536 entries, 1/16 of the index). The
plan is chosen for the number of live fingerprints; when that number has doubled (or fallen to a
quarter) since the plan was made and :func:`plan_tables` now prefers another plan, the tables are
rebuilt with the new plan at the next merge. Memory: ``8 × tables + 9`` bytes per fingerprint (89
bytes for ``hamming_k = 3`` at 10M fingerprints: 10 tables), plus the delta.

Durability and concurrency
    - Every write is one SQLite transaction (WAL mode). With ``synchronous="normal"`` (default) a
      committed add survives a crash of the process (``kill -9``): the WAL is in the operating
      system's hands when the commit returns. ``synchronous="full"`` also fsyncs every commit,
      so an acknowledged add survives power loss and operating-system crashes (slower writes).
    - The tables are derived data. They are cached in ``tables-<generation>/`` (written to a
      temporary name, fsynced, then named in ``tables.json``) when the index is built, when a
      writer closes, and after large growth. Opening loads the cache (memory-mapped), verifies
      it against SQLite (position counter, removal counter, document count, sampled
      fingerprints) and applies the rows added and removed since; if anything does not match,
      the tables are rebuilt from SQLite. A crash therefore never leaves an index that cannot be
      opened.
    - One writer (an exclusive ``flock`` on ``writer.lock``, released by the operating system
      if the process dies) and any number of readers: ``NearDupIndex(DIR, readonly=True)`` in
      other processes. A reader sees committed writes after :meth:`NearDupIndex.refresh`, which
      every read-only query calls (a cheap ``PRAGMA data_version`` check). Inside a process,
      one lock serialises the index's operations, so threads may share an instance.

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

import bisect
import errno
import fcntl
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from neardup.candidates.tables import (
    TablePlan,
    collapse_identical,
    distinct_hamming_pairs,
    plan_tables,
    popcount64,
)
from neardup.groups import connected_components
from neardup.ids import MAX_ID_LENGTH, check_id
from neardup.index.integrity import (
    IndexDamagedError,
    IndexWriteError,
    describe_files,
    guard_sqlite,
    quick_check,
    sqlite_error,
    verify_files,
)
from neardup.index.minhash import (
    BandTables,
    DataCache,
    band_keys,
    band_pairs,
    concat_data,
    data_sizes,
    decode_text,
    encode_texts,
    pair_similarity,
    size_bound,
    take_data,
    verification_data,
    verify_threshold,
)
from neardup.index.sorted_rows import MAX_POSITION, LiveRows, merge_rows, sort_rows
from neardup.io import parse_fingerprint, parse_timestamp
from neardup.pipeline import (
    DEFAULT_SHINGLES,
    MAX_HAMMING_K,
    METHODS,
    Settings,
    Signatures,
    check_method_options,
    find_groups,
    signatures,
)

__all__ = [
    "AddResult",
    "index_settings",
    "DocumentExistsError",
    "IndexDamagedError",
    "IndexLockedError",
    "IndexWriteError",
    "Match",
    "NearDupIndex",
    "PermutationTables",
    "QueryResult",
    "ReadOnlyIndexError",
    "Record",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_ID_LENGTH",
]

FORMAT_VERSION = 1
DB_NAME = "index.sqlite"
MANIFEST_NAME = "tables.json"
LOCK_NAME = "writer.lock"
SYNCHRONOUS = ("normal", "full")
IF_EXISTS = ("error", "skip")
DEFAULT_LIMIT = 10
"""Matches listed per result by default (``match_count`` always counts all of them)."""
MAX_LIMIT = 1000
"""Largest ``limit``: the number of matches listed per result."""
"""Positions are held in ``uint32`` table rows."""
_KEY_BITS = 32
_SMALL_BATCH = 2048
"""Up to this many distinct values, pairs inside a batch are found by direct comparison."""
_FETCH_ALL = 512
"""A distance level with at most this many matches has all their IDs fetched at once."""
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class DocumentExistsError(ValueError):
    """A document ID to add is already in the index (nothing was written)."""


class IndexLockedError(OSError):
    """Another process (or another open instance) holds the index's writer lock."""


class ReadOnlyIndexError(PermissionError):
    """A write was attempted on an index opened with ``readonly=True``."""


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


def _hex(fp: int) -> str:
    return f"{int(fp):016x}"


def _iso(us: int) -> str | None:
    try:
        return (_EPOCH + timedelta(microseconds=int(us))).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return None


@dataclass(frozen=True)
class Match:
    """A stored near-duplicate of a probe.

    Attributes:
        id: the stored document's ID.
        distance: SimHash index: Hamming distance in bits between the two fingerprints;
            MinHash index: None.
        duplicate_id: the duplicate ID of the stored document's group (its original's ID).
        original_id: the original of that group (same as ``duplicate_id``).
        similarity: MinHash index: the verification measure of the pair (LCS resemblance or
            Jaccard, in 0..1; the MinHash estimate of Jaccard with ``verify="none"``);
            SimHash index: None.
    """

    id: str
    distance: int | None
    duplicate_id: str
    original_id: str
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``distance`` (SimHash) or ``similarity`` (MinHash)."""
        out: dict[str, Any] = {"id": self.id}
        if self.similarity is None:
            out["distance"] = self.distance
        else:
            out["similarity"] = self.similarity
        out.update(duplicate_id=self.duplicate_id, original_id=self.original_id)
        return out


@dataclass(frozen=True)
class AddResult:
    """What adding one document decided, as of right after it was added.

    Attributes:
        id: the document's ID.
        status: ``"new"`` (no stored near-duplicate: it starts a group),
            ``"duplicate"`` (it matched stored documents and joined their group) or
            ``"exists"`` (the ID was already stored and ``if_exists="skip"``: nothing changed;
            the other fields describe the stored record).
        fingerprint: its SimHash (``uint64`` value as a Python int); in a MinHash index the
            64-bit content fingerprint of its normalised text (equal for exact duplicates).
        duplicate_id, original_id: its group's original's ID (itself if it is the original).
        is_original: whether it is its group's original.
        group_size: members of its group.
        match_count: stored near-duplicates (all of them; ``matches`` lists at most ``limit``).
        matches: the nearest matches, by distance (or descending similarity) then ID; all are
            in its group now.
    """

    id: str
    status: str
    fingerprint: int
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int
    match_count: int
    matches: tuple[Match, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as 16 hex digits)."""
        return {
            "id": self.id,
            "status": self.status,
            "fingerprint": _hex(self.fingerprint),
            "duplicate_id": self.duplicate_id,
            "original_id": self.original_id,
            "is_original": self.is_original,
            "group_size": self.group_size,
            "match_count": self.match_count,
            "matches": [m.to_dict() for m in self.matches],
        }


@dataclass(frozen=True)
class QueryResult:
    """The stored near-duplicates of a probe (nothing is stored).

    Attributes:
        fingerprint: the probe's SimHash (MinHash index: its content fingerprint).
        status: ``"duplicate"`` if at least one stored document is a near-duplicate,
            else ``"new"``.
        duplicate_id, original_id: the group the probe would join if it were added now: the
            earliest original (timestamp, then position) among its matches' groups; None if
            it has no match. (A probe bridging several groups would merge them.)
        match_count: near-duplicates stored (all of them).
        matches: the nearest ``limit`` matches, by distance (or descending similarity) then
            ID, each with its own group.
        id: the probe's ID when one was given (batch queries), else None.
    """

    fingerprint: int
    status: str
    duplicate_id: str | None
    original_id: str | None
    match_count: int
    matches: tuple[Match, ...] = ()
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as 16 hex digits)."""
        out: dict[str, Any] = {} if self.id is None else {"id": self.id}
        out.update(
            status=self.status,
            fingerprint=_hex(self.fingerprint),
            duplicate_id=self.duplicate_id,
            original_id=self.original_id,
            match_count=self.match_count,
            matches=[m.to_dict() for m in self.matches],
        )
        return out


@dataclass(frozen=True)
class Record:
    """One stored document.

    Attributes:
        id: its ID.
        fingerprint: its SimHash (MinHash index: its content fingerprint).
        timestamp_us: microseconds since the Unix epoch (0 if none was given).
        position: insertion number (1, 2, ...), the tie-break between equal timestamps.
        duplicate_id, original_id: its group's original's ID.
        is_original: whether it is its group's original.
        group_size: members of its group.
    """

    id: str
    fingerprint: int
    timestamp_us: int
    position: int
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as hex, timestamp also as ISO 8601 UTC)."""
        return {
            "id": self.id,
            "fingerprint": _hex(self.fingerprint),
            "timestamp": _iso(self.timestamp_us),
            "timestamp_us": self.timestamp_us,
            "position": self.position,
            "duplicate_id": self.duplicate_id,
            "original_id": self.original_id,
            "is_original": self.is_original,
            "group_size": self.group_size,
        }


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _probe_kernel(
    queries,
    max_k,
    keys,
    rows,
    src,
    dst,
    wmask,
    key_shift,
    masks,
    fps,
    alive,
    delta,
    delta_len,
    out_q,
    out_p,
    out_d,
):
    """Every (query, position, distance) with distance <= max_k: tables, then the delta.

    Writes the first ``len(out_q)`` matches into the buffers and returns how many there are
    in all (the caller retries with larger buffers if that is more). Output arrays are never
    reassigned inside the loops, which keeps reference counting out of them.
    """
    num_tables = keys.shape[0]
    n = keys.shape[1]
    nf = src.shape[1]
    cap = out_q.shape[0]
    k = np.uint64(max_k)
    m = 0
    for qi in range(queries.shape[0]):
        q = queries[qi]
        for t in range(num_tables):
            prefix = np.uint64(0)
            for f in range(nf):
                prefix |= ((q >> src[t, f]) & wmask[t, f]) << dst[t, f]
            key = prefix >> key_shift[t]
            lo = 0
            hi = n
            while lo < hi:
                mid = (lo + hi) >> 1
                if np.uint64(keys[t, mid]) < key:
                    lo = mid + 1
                else:
                    hi = mid
            i = lo
            while i < n and np.uint64(keys[t, i]) == key:
                p = rows[t, i]
                i += 1
                if not alive[p]:
                    continue
                x = fps[p] ^ q
                d = popcount64(x)
                if d > k:
                    continue
                # Kept only by the first table whose whole prefix the pair shares (a key of
                # 32 bits may be shorter than the prefix, so check this table's too).
                if (x & masks[t]) != 0:
                    continue
                earlier = False
                for u in range(t):
                    if (x & masks[u]) == 0:
                        earlier = True
                        break
                if earlier:
                    continue
                if m < cap:
                    out_q[m] = qi
                    out_p[m] = p
                    out_d[m] = d
                m += 1
        for j in range(delta_len):
            p = delta[j]
            if not alive[p]:
                continue
            d = popcount64(fps[p] ^ q)
            if d <= k:
                if m < cap:
                    out_q[m] = qi
                    out_p[m] = p
                    out_d[m] = d
                m += 1
    return m


@njit(cache=True)
def _close_pairs_direct(values, max_k, out_a, out_b, out_d):
    """Pairs a < b of ``values`` within ``max_k`` bits, by direct comparison (O(n^2)); writes
    what fits into the buffers and returns the total count (as `_probe_kernel`)."""
    n = values.shape[0]
    cap = out_a.shape[0]
    k = np.uint64(max_k)
    m = 0
    for a in range(n):
        va = values[a]
        for b in range(a + 1, n):
            d = popcount64(va ^ values[b])
            if d <= k:
                if m < cap:
                    out_a[m] = a
                    out_b[m] = b
                    out_d[m] = d
                m += 1
    return m


def _buffers(cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint8)


def close_pairs(values: np.ndarray, hamming_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``a < b`` of distinct ``uint64`` values within ``hamming_k`` bits, with distances.

    Direct comparison for up to 2,048 values (no planning overhead), the permutation tables
    (:func:`neardup.candidates.tables.distinct_hamming_pairs`) above.
    Complexity: O(n²) below the cut-off, about O(n log n) above it.

    Example:
        >>> a, b, d = close_pairs(np.array([0, 1, 7], dtype=np.uint64), 1)
        >>> a.tolist(), b.tolist(), d.tolist()
        ([0], [1], [1])
    """
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if values.shape[0] > _SMALL_BATCH:
        return distinct_hamming_pairs(values, int(hamming_k))
    a, b, d = _buffers(1024)
    m = _close_pairs_direct(values, np.int64(hamming_k), a, b, d)
    if m > a.shape[0]:
        a, b, d = _buffers(m)
        _close_pairs_direct(values, np.int64(hamming_k), a, b, d)
    return a[:m].copy(), b[:m].copy(), d[:m].copy()


# --------------------------------------------------------------------------------------------
# In-memory tables
# --------------------------------------------------------------------------------------------


def _plan_fields(plan: TablePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per table, the bit fields that gather its prefix blocks into a right-aligned value, and
    the right shift that keeps its top 32 bits."""
    c = plan.prefix_blocks
    src = np.zeros((plan.num_tables, c), np.uint64)
    dst = np.zeros((plan.num_tables, c), np.uint64)
    wmask = np.zeros((plan.num_tables, c), np.uint64)
    shift = np.zeros(plan.num_tables, np.uint64)
    for t, table in enumerate(plan.tables):
        width = sum(plan.blocks[b][1] for b in table)
        top = width
        for f, b in enumerate(table):
            start, w = plan.blocks[b]
            top -= w
            src[t, f] = start
            dst[t, f] = top
            wmask[t, f] = (1 << w) - 1
        shift[t] = max(0, width - _KEY_BITS)
    return src, dst, wmask, shift


def _table_keys(values: np.ndarray, fields: tuple, t: int) -> np.ndarray:
    """The ``uint32`` key of ``values`` in table ``t`` (vectorised)."""
    src, dst, wmask, shift = fields
    prefix = np.zeros(values.shape[0], np.uint64)
    for f in range(src.shape[1]):
        prefix |= ((values >> src[t, f]) & wmask[t, f]) << dst[t, f]
    return (prefix >> shift[t]).astype(np.uint32)


def _sorted_tables(
    positions: np.ndarray, values: np.ndarray, fields: tuple, num_tables: int
) -> tuple[np.ndarray, np.ndarray]:
    """Keys and positions of every table, sorted by (key, position)."""
    keys = np.empty((num_tables, positions.shape[0]), np.uint32)
    for t in range(num_tables):
        keys[t] = _table_keys(values, fields, t)
    return sort_rows(keys, positions)


class PermutationTables(LiveRows):
    """Manku permutation tables in memory, for probing one fingerprint at a time (online form).

    Fingerprints are addressed by *position* (a non-negative integer below 2**32, e.g. an
    insertion number). Per table of ``plan``: ``keys`` (``uint32[n]``, the table's prefix blocks,
    their top 32 bits if wider, sorted) and ``rows`` (``uint32[n]``, the positions in that
    order). Recent :meth:`add` calls go to an unsorted delta, scanned linearly and merged into
    the sorted arrays when it exceeds :attr:`delta_limit`. :meth:`discard` marks positions dead;
    they are dropped at the next merge.

    Args:
        hamming_k: largest distance the tables are exact for, ``0..32`` bits.
        plan: tables to use; default ``plan_tables(n, hamming_k)`` for the fingerprints given.
        positions, fingerprints: initial contents (``uint64`` fingerprints, distinct positions).

    Not thread-safe: :class:`NearDupIndex` serialises its calls (probes share result buffers).

    Complexity: building is ``O(T · n log n)`` (one sort per table); a probe costs
    ``O(T · (log n + g) + delta)`` for ``T`` tables and mean prefix group ``g``; memory is
    ``8·T + 9`` bytes per position.

    Example:
        >>> fps = np.array([0, 7, 15], np.uint64)
        >>> t = PermutationTables(3, positions=np.arange(3), fingerprints=fps)
        >>> q, p, d = t.probe(np.array([1], np.uint64))
        >>> sorted(zip(p.tolist(), d.tolist()))
        [(0, 1), (1, 2), (2, 3)]
    """

    def __init__(
        self,
        hamming_k: int,
        plan: TablePlan | None = None,
        *,
        positions: np.ndarray | None = None,
        fingerprints: np.ndarray | None = None,
    ) -> None:
        _check_k(hamming_k, MAX_HAMMING_K)
        self.hamming_k = int(hamming_k)
        positions = np.zeros(0, np.int64) if positions is None else np.asarray(positions)
        values = (
            np.zeros(0, np.uint64) if fingerprints is None else np.asarray(fingerprints, np.uint64)
        )
        if positions.shape != values.shape or positions.ndim != 1:
            raise ValueError(
                f"positions and fingerprints must be 1-D of equal length, got shapes "
                f"{positions.shape} and {values.shape}"
            )
        if positions.size and (positions.min() < 0 or positions.max() > MAX_POSITION):
            raise ValueError(
                f"positions must be in 0..{MAX_POSITION}, got {positions.min()}..{positions.max()}"
            )
        size = int(positions.max()) + 1 if positions.size else 0
        self.fps = np.zeros(max(size, 16), np.uint64)
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.fps[positions] = values
        self.alive[positions] = True
        self.size = size
        self.live = int(self.alive.sum())
        if self.live != positions.shape[0]:
            raise ValueError("positions must be distinct")
        self.delta = np.zeros(1024, np.uint32)
        self.delta_len = 0
        self._set_plan(plan if plan is not None else plan_tables(self.live, self.hamming_k))
        self.planned_n = self.live
        self.keys, self.rows = _sorted_tables(
            positions.astype(np.uint32), values, self._fields, self.plan.num_tables
        )
        self._main_max = int(positions.max()) if positions.size else -1
        self._main_dead = 0
        self.merges = 0
        self.replans = 0
        self._buffers = _buffers(4096)

    @classmethod
    def from_arrays(
        cls,
        hamming_k: int,
        plan: TablePlan,
        keys: np.ndarray,
        rows: np.ndarray,
        fps: np.ndarray,
        alive: np.ndarray,
        planned_n: int,
        main_dead: int | None = None,
    ) -> PermutationTables:
        """Tables from already sorted arrays (e.g. memory-mapped from a cache), holding every
        position below ``len(fps)``; ``main_dead`` is the number of their rows whose position
        is no longer alive (None: count them, O(n)). O(size) to copy ``fps`` and ``alive``
        into growable buffers.

        Example:
            >>> fps = np.arange(4, dtype=np.uint64)
            >>> t = PermutationTables(2, positions=np.arange(4), fingerprints=fps)
            >>> u = PermutationTables.from_arrays(2, t.plan, t.keys, t.rows, fps, t.alive[:4], 4)
            >>> len(u.probe(np.array([0], np.uint64))[1])
            4
        """
        self = cls.__new__(cls)
        self.hamming_k = int(hamming_k)
        self._set_plan(plan)
        if keys.shape != rows.shape or keys.ndim != 2 or keys.shape[0] != plan.num_tables:
            raise ValueError(
                f"keys and rows must both have shape ({plan.num_tables}, n), "
                f"got {keys.shape} and {rows.shape}"
            )
        if fps.shape != alive.shape:
            raise ValueError(f"fps and alive must match, got {fps.shape} and {alive.shape}")
        self.keys = np.asarray(keys)
        self.rows = np.asarray(rows)
        size = fps.shape[0]
        self.fps = np.zeros(max(size, 16), np.uint64)
        self.fps[:size] = fps
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.alive[:size] = alive
        self.size = size
        self.live = int(np.count_nonzero(self.alive[:size]))
        self.delta = np.zeros(1024, np.uint32)
        self.delta_len = 0
        self.planned_n = int(planned_n)
        self._main_max = size - 1
        if main_dead is None:
            main_dead = int(self.rows.shape[1] - np.count_nonzero(self.alive[self.rows[0]]))
        self._main_dead = int(main_dead)
        self.merges = 0
        self.replans = 0
        self._buffers = _buffers(4096)
        return self

    def _set_plan(self, plan: TablePlan) -> None:
        if plan.hamming_k != self.hamming_k or plan.bits != 64:
            raise ValueError(
                f"plan must be for hamming_k={self.hamming_k} over 64 bits, "
                f"got hamming_k={plan.hamming_k}, bits={plan.bits}"
            )
        self.plan = plan
        self._fields = _plan_fields(plan)
        self._masks = plan.masks

    @property
    def delta_limit(self) -> int:
        """Delta size that triggers a merge: 1/16 of the live fingerprints, in 4096..65536."""
        return int(min(max(4096, self.live // 16), 65536))

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays (tables, fingerprints, alive flags, delta buffer)."""
        return int(
            self.keys.nbytes
            + self.rows.nbytes
            + self.fps.nbytes
            + self.alive.nbytes
            + self.delta.nbytes
        )

    def _ensure_capacity(self, size: int) -> None:
        if size <= self.fps.shape[0]:
            return
        cap = max(size, int(self.fps.shape[0] * 1.5) + 16)
        fps = np.zeros(cap, np.uint64)
        fps[: self.size] = self.fps[: self.size]
        alive = np.zeros(cap, np.bool_)
        alive[: self.size] = self.alive[: self.size]
        self.fps, self.alive = fps, alive

    def add(self, positions: np.ndarray, fingerprints: np.ndarray) -> None:
        """Insert new positions (each above every position seen so far) into the delta;
        merges when the delta is full. Amortised O(T · n / delta_limit) per position.

        Example:
            >>> t = PermutationTables(1)
            >>> t.add(np.array([1, 2]), np.array([4, 5], np.uint64))
            >>> t.delta_len, sorted(t.probe(np.array([4], np.uint64))[1].tolist())
            (2, [1, 2])
        """
        positions = np.asarray(positions, np.int64)
        values = np.asarray(fingerprints, np.uint64)
        if positions.shape != values.shape:
            raise ValueError("positions and fingerprints must have equal length")
        if positions.size == 0:
            return
        top = self._check_new(positions)
        self._ensure_capacity(top)
        self.fps[positions] = values
        self.alive[positions] = True
        self.size = top
        self.live += positions.shape[0]
        need = self.delta_len + positions.shape[0]
        if need > self.delta.shape[0]:
            grown = np.zeros(max(need, 2 * self.delta.shape[0]), np.uint32)
            grown[: self.delta_len] = self.delta[: self.delta_len]
            self.delta = grown
        self.delta[self.delta_len : need] = positions
        self.delta_len = need
        if self.delta_len > self.delta_limit:
            self.merge()

    def merge(self, force_plan: TablePlan | None = None) -> None:
        """Merge the delta into the sorted tables (O(T · n)), re-planning when the number of
        live fingerprints has moved far from the one the plan was made for. The caller waits
        for it (about 0.05 s at 1M fingerprints and 2.5 s at 10M with 10 tables, measured on 2
        loaded cores); at most every ``delta_limit`` adds.

        Example:
            >>> t = PermutationTables(1)
            >>> t.add(np.array([1, 2]), np.array([4, 5], np.uint64))
            >>> t.merge()
            >>> t.delta_len, t.keys.shape
            (0, (2, 2))
        """
        desired = force_plan
        if desired is None and (
            self.live >= 2 * max(self.planned_n, 1024) or 4 * self.live <= self.planned_n
        ):
            candidate = plan_tables(self.live, self.hamming_k)
            if (candidate.blocks, candidate.prefix_blocks) != (
                self.plan.blocks,
                self.plan.prefix_blocks,
            ):
                desired = candidate
            else:
                self.planned_n = self.live
        if desired is not None:
            self.rebuild(desired)
            return
        delta = np.sort(self.delta[: self.delta_len])
        delta = delta[self.alive[delta]]
        dkeys, drows = _sorted_tables(delta, self.fps[delta], self._fields, self.plan.num_tables)
        n_out = self.rows.shape[1] - self._main_dead + delta.shape[0]
        out_keys = np.empty((self.plan.num_tables, n_out), np.uint32)
        out_rows = np.empty((self.plan.num_tables, n_out), np.uint32)
        written = merge_rows(
            self.keys, self.rows, dkeys, drows, self.alive, self._main_dead > 0, out_keys, out_rows
        )
        if written != n_out:
            raise RuntimeError(f"merge wrote {written} rows per table, expected {n_out}")
        self.keys, self.rows = out_keys, out_rows
        if delta.size:
            self._main_max = max(self._main_max, int(delta[-1]))
        self._main_dead = 0
        self.delta_len = 0
        self.merges += 1

    def rebuild(self, plan: TablePlan | None = None) -> None:
        """Rebuild every table from the live positions, with ``plan`` (default: the plan
        :func:`plan_tables` picks for the live count). O(T · n log n).

        Example:
            >>> fps = np.arange(3, dtype=np.uint64)
            >>> t = PermutationTables(3, positions=np.arange(3), fingerprints=fps)
            >>> t.rebuild(plan_tables(3, 3, prefix_blocks=2))
            >>> t.plan.num_tables, len(t.probe(np.array([0], np.uint64))[1])
            (10, 3)
        """
        plan = plan if plan is not None else plan_tables(self.live, self.hamming_k)
        self._set_plan(plan)
        positions = np.flatnonzero(self.alive[: self.size]).astype(np.uint32)
        self.keys, self.rows = _sorted_tables(
            positions, self.fps[positions], self._fields, plan.num_tables
        )
        self._main_max = int(positions[-1]) if positions.size else -1
        self._main_dead = 0
        self.delta_len = 0
        self.planned_n = self.live
        self.replans += 1

    def probe(
        self, queries: np.ndarray, hamming_k: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every live position within ``hamming_k`` bits of each query, each once.

        Args:
            queries: ``uint64`` fingerprints.
            hamming_k: ``0..self.hamming_k``; default ``self.hamming_k``.

        Returns:
            ``(query_index int64, position int64, distance uint8)``, unordered.

        Complexity: ``O(T · (log n + g) + delta)`` per query (see the class docstring).

        Example:
            >>> fps = np.array([0, 3, 7], np.uint64)
            >>> t = PermutationTables(2, positions=np.arange(3), fingerprints=fps)
            >>> q, p, d = t.probe(np.array([1, 15], np.uint64), hamming_k=1)
            >>> sorted(zip(q.tolist(), p.tolist(), d.tolist()))
            [(0, 0, 1), (0, 1, 1), (1, 2, 1)]
        """
        k = self.hamming_k if hamming_k is None else hamming_k
        _check_k(k, self.hamming_k)
        queries = np.ascontiguousarray(queries, dtype=np.uint64).reshape(-1)
        src, dst, wmask, shift = self._fields
        buffers = self._buffers
        while True:
            m = _probe_kernel(
                queries,
                np.int64(k),
                self.keys,
                self.rows,
                src,
                dst,
                wmask,
                shift,
                self._masks,
                self.fps,
                self.alive,
                self.delta,
                np.int64(self.delta_len),
                *buffers,
            )
            if m <= buffers[0].shape[0]:
                return buffers[0][:m].copy(), buffers[1][:m].copy(), buffers[2][:m].copy()
            buffers = _buffers(m)


def _check_k(hamming_k: Any, upper: int) -> None:
    if isinstance(hamming_k, bool) or not isinstance(hamming_k, (int, np.integer)):
        raise ValueError(f"hamming_k must be an integer in 0..{upper}, got {hamming_k!r}")
    if not 0 <= hamming_k <= upper:
        raise ValueError(f"hamming_k must be in 0..{upper}, got {hamming_k}")


Tables = PermutationTables | BandTables
"""The in-memory candidate structure of an index: SimHash permutation tables or MinHash band
tables (both sorted (key, position) rows with a delta, :mod:`neardup.index.sorted_rows`)."""


# --------------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------------

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

_RECORD_SQL = (
    "SELECT d.id, d.fingerprint, d.timestamp, d.pos, o.id, g.original, g.size "
    "FROM docs d JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original "
)


def _signed(fp: int) -> int:
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def _unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


def _json_list(values) -> str:
    return json.dumps([int(v) for v in values])


def _connect(db: Path, readonly: bool) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(
            f"file:{db}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA cache_size = -65536")
    return conn


def _fsync_path(path: Path) -> None:
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_synchronous(synchronous: str) -> str:
    if synchronous not in SYNCHRONOUS:
        raise ValueError(
            f"synchronous must be one of {', '.join(SYNCHRONOUS)}; got {synchronous!r}"
        )
    return synchronous


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
        raise ValueError(f"limit must be an integer in 0..{MAX_LIMIT}, got {limit!r}")
    if not 0 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be in 0..{MAX_LIMIT}, got {limit}")
    return int(limit)


def _check_id(value: Any, where: str = "id") -> str:
    # The rules live in neardup.ids so that readers, CLI, index and service share them.
    return check_id(value, where)


def _lookup_id(value: Any, where: str = "id") -> str:
    """An ID to look up or remove: only the type and length are checked, so that records stored
    before the character rules of :mod:`neardup.ids` existed can still be read and removed."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH:
        return _check_id(value, where)  # raises with the rule's message
    return value


def _parse_fp(value: Any, where: str) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    try:
        return parse_fingerprint(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}: {error}") from None


def _parse_ts(value: Any, where: str) -> int:
    if value is None:
        return 0
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}: {error}") from None


# --------------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------------


@dataclass
class _Probes:
    """Documents prepared for probing and storing: ``fps`` (``uint64[n]``, SimHash
    fingerprints or MinHash content fingerprints) and, for MinHash, the band ``keys``
    (``uint32[n, bands]``), the ``texts`` and their verification ``data`` (CSR,
    :func:`neardup.index.minhash.verification_data`)."""

    fps: np.ndarray
    keys: np.ndarray | None = None
    texts: list[str] | None = None
    data: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return self.fps.shape[0]

    @property
    def sizes(self) -> np.ndarray:
        """MinHash: the size of each probe's verification data."""
        return np.diff(self.data[0])

    def take(self, rows: list[int]) -> _Probes:
        """The probes ``rows``, in that order."""
        if self.keys is None:
            return _Probes(self.fps[rows])
        return _Probes(self.fps[rows], self.keys[rows], [self.texts[i] for i in rows],
                       take_data(self.data, rows))


@dataclass
class _GroupState:
    """A group during a write transaction."""

    original: int
    original_ts: int
    original_id: str
    size: int
    stored: bool  # has a row in SQLite (else created in this transaction)


@dataclass
class _Neighbourhood:
    """What the documents of a batch match, read before anything is written, per *unit* (a
    distinct SimHash fingerprint, or one MinHash document): ``inverse`` maps each document to
    its unit; per unit, ``stored_count`` stored matches in the groups ``stored_gids`` (whose
    state is in ``groups``), ``nbr`` the other units of the batch it matches, with their rank
    (distance, or minus the similarity), and ``stored_top`` the first ``limit`` stored matches
    as (rank, id, position, original id)."""

    inverse: np.ndarray
    stored_count: list[int]
    stored_gids: list[set[int]]
    groups: dict[int, _GroupState]
    nbr: list[list[tuple[int, Any]]]
    stored_top: list[list[tuple]]


@dataclass
class _OpenInfo:
    source: str = ""
    seconds: float = 0.0
    tail_rows: int = 0
    detail: str = ""
    extra: dict = field(default_factory=dict)


def index_settings(
    hamming_k: int | None = None,
    shingle: str | None = None,
    hash_name: str = "xxh",
    weights: str | None = None,
    *,
    method: str = "simhash",
    num_perm: int | None = None,
    seed: int | None = None,
    threshold: float | None = None,
    bands: int | None = None,
    rows: int | None = None,
    verify: float | str | None = None,
) -> Settings:
    """The run settings an index decides with: those of ``neardup dedup --method METHOD
    --grouping components`` with the same options. Options left None take ``dedup``'s
    defaults (shingles per method: :data:`neardup.pipeline.DEFAULT_SHINGLES`; MinHash:
    ``verify="auto"``, i.e. LCS resemblance at ``threshold``); an option of the other method
    raises ValueError. SimHash never verifies. MinHash settings come back with their
    effective ``bands`` and ``rows`` (:meth:`neardup.pipeline.Settings.banding`), so an index
    keeps its banding even if the tuning of the defaults changes. O(1).

    Example:
        >>> s = index_settings(method="minhash")
        >>> s.shingle, s.bands, s.rows, str(s.verification)
        ('char:4', 32, 4, 'lcs:0.8')
        >>> index_settings(method="minhash", hamming_k=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: hamming_k applies to method simhash, not minhash; drop it ...
    """
    _choice_method(method)
    options = {"hamming_k": hamming_k, "weights": weights, "num_perm": num_perm, "seed": seed,
               "threshold": threshold, "bands": bands, "rows": rows}
    check_method_options(method, [k for k, v in options.items() if v is not None])
    shingle = DEFAULT_SHINGLES[method] if shingle is None else shingle
    if method == "simhash":
        if verify not in (None, "none", "auto"):
            raise ValueError(f"verify applies to method minhash in an index, not simhash; "
                             f"got {verify!r}")
        return Settings(method="simhash", hamming_k=3 if hamming_k is None else hamming_k,
                        shingle=shingle, hash_name=hash_name, weights=weights or "set",
                        verify=None, grouping="components")
    given = {k: v for k, v in options.items() if v is not None}
    settings = Settings(method="minhash", shingle=shingle, hash_name=hash_name,
                        verify="auto" if verify is None else verify, grouping="components",
                        **given)
    b, r = settings.banding()
    return settings.replace(bands=b, rows=r)


def _choice_method(method: Any) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def _settings_meta(settings: Settings) -> dict[str, str]:
    """The ``meta`` rows that record an index's settings (read back by
    :func:`_settings_from_meta`)."""
    meta = {"method": settings.method, "shingle": settings.shingle,
            "hash_name": settings.hash_name, "grouping": "components"}
    if settings.method == "simhash":
        meta.update(hamming_k=str(settings.hamming_k), weights=settings.weights)
    else:
        verification = settings.verification
        meta.update(num_perm=str(settings.num_perm), seed=str(settings.seed),
                    threshold=repr(settings.threshold), bands=str(settings.bands),
                    rows=str(settings.rows),
                    verify="none" if verification is None else str(verification))
    return meta


def settings_keywords(settings: Settings) -> dict[str, Any]:
    """The keywords of :meth:`NearDupIndex.create` / :meth:`NearDupIndex.build` that give an
    index ``settings`` (e.g. to rebuild an index like another). O(1).

    Example:
        >>> kw = settings_keywords(index_settings(hamming_k=4))
        >>> kw["method"], kw["hamming_k"], kw["shingle"]
        ('simhash', 4, 'word:3')
    """
    out: dict[str, Any] = {"method": settings.method, "shingle": settings.shingle,
                           "hash_name": settings.hash_name}
    if settings.method == "simhash":
        out.update(hamming_k=settings.hamming_k, weights=settings.weights)
    else:
        verification = settings.verification
        out.update(num_perm=settings.num_perm, seed=settings.seed, threshold=settings.threshold,
                   bands=settings.bands, rows=settings.rows,
                   verify="none" if verification is None else str(verification))
    return out


def _settings_from_meta(meta: dict[str, str]) -> Settings:
    """An index's settings from its ``meta`` rows; an index written before MinHash indexes
    existed has no ``method`` row and is SimHash."""
    method = meta.get("method", "simhash")
    if method == "simhash":
        return index_settings(int(meta["hamming_k"]), meta["shingle"], meta["hash_name"],
                              meta["weights"])
    return index_settings(
        None, meta["shingle"], meta["hash_name"], method=method,
        num_perm=int(meta["num_perm"]), seed=int(meta["seed"]),
        threshold=float(meta["threshold"]), bands=int(meta["bands"]), rows=int(meta["rows"]),
        verify=meta["verify"],
    )


def describe_settings(settings: Settings) -> str:
    """The options of ``neardup index create`` that make ``settings``, for messages.

    Example:
        >>> describe_settings(index_settings())
        '--method simhash -k 3 --shingle word:3 --hash xxh --weights set'
    """
    if settings.method == "simhash":
        return (f"--method simhash -k {settings.hamming_k} --shingle {settings.shingle} "
                f"--hash {settings.hash_name} --weights {settings.weights}")
    verification = settings.verification
    return (f"--method minhash --shingle {settings.shingle} --hash {settings.hash_name} "
            f"--num-perm {settings.num_perm} --seed {settings.seed} "
            f"--threshold {settings.threshold:g} --bands {settings.bands} --rows {settings.rows} "
            f"--verify {'none' if verification is None else verification}")


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
        self.synchronous = _check_synchronous(synchronous)
        self._lock = threading.RLock()
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        db = self.path / DB_NAME
        if not db.is_file():
            raise FileNotFoundError(
                f"no index at {self.path} (missing {DB_NAME}); create one with "
                "`neardup index build` or NearDupIndex.create"
            )
        if db.stat().st_size == 0:
            # SQLite takes an empty file for a new database and would write into it.
            raise ValueError(f"{db} is empty: not an index (truncated?); rebuild it with "
                             "`neardup index build`")
        try:
            if not self.readonly:
                self._lock_fd = _acquire_writer_lock(self.path)
            self._conn = _connect(db, self.readonly)
            # Every page once (O(database size)): a damaged database is refused before it
            # is read or written, rather than failing on some later request.
            check_seconds = quick_check(self._conn, db)
            if not self.readonly:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
            meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
            version = int(meta.get("format_version", "0"))
            if version != FORMAT_VERSION:
                raise ValueError(
                    f"{self.path}: index format version must be {FORMAT_VERSION}, got {version}"
                )
            self.settings = _settings_from_meta(meta)
            self.created = meta.get("created", "")
            self._open_info = _OpenInfo()
            # MinHash: the verification data of recent candidates (bounded, 32 MB at most).
            self._data_cache = DataCache()
            self._open_info.extra["quick_check_seconds"] = round(check_seconds, 4)
            self._load_tables()
            self._data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        except BaseException:
            self._release()
            raise
        self._open_info.seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        *,
        method: str = "simhash",
        hamming_k: int | None = None,
        shingle: str | None = None,
        hash_name: str = "xxh",
        weights: str | None = None,
        num_perm: int | None = None,
        seed: int | None = None,
        threshold: float | None = None,
        bands: int | None = None,
        rows: int | None = None,
        verify: float | str | None = None,
        synchronous: str = "normal",
    ) -> NearDupIndex:
        """Create an empty index at ``path`` (which must not exist, or be an empty directory)
        and open it for writing. The settings are :func:`index_settings`'s (``dedup``'s options
        and defaults for ``method``), validated and stored in the index. O(1).

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
        return cls.build(
            path,
            [],
            texts=[],
            method=method,
            hamming_k=hamming_k,
            shingle=shingle,
            hash_name=hash_name,
            weights=weights,
            num_perm=num_perm,
            seed=seed,
            threshold=threshold,
            bands=bands,
            rows=rows,
            verify=verify,
            synchronous=synchronous,
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
        method: str = "simhash",
        hamming_k: int | None = None,
        shingle: str | None = None,
        hash_name: str = "xxh",
        weights: str | None = None,
        num_perm: int | None = None,
        seed: int | None = None,
        threshold: float | None = None,
        bands: int | None = None,
        rows: int | None = None,
        verify: float | str | None = None,
        workers: int | None = 1,
        overwrite: bool = False,
        synchronous: str = "normal",
        signatures_: Signatures | None = None,
    ) -> NearDupIndex:
        """Build an index from a whole corpus in one pass and open it for writing.

        Groups are computed by :func:`neardup.pipeline.find_groups` with the index's settings
        and ``grouping="components"`` (the code ``dedup`` runs), so the index and ``dedup``
        with those settings agree exactly.
        Documents get positions 1..n in the given order. The index is written in a temporary
        directory beside ``path`` and renamed into place when complete, so a crash leaves no
        partial index.

        Args:
            path: the index directory; it must not exist unless ``overwrite`` (then it is
                replaced once the new index is complete; no writer may have it open).
            ids: unique non-empty document IDs (at most 1,024 characters each).
            texts: the documents (fingerprinted with the settings), or
            fingerprints: their ``uint64`` SimHash fingerprints (exactly one of the two; a
                MinHash index needs the texts, which it stores for verification).
            timestamps_us: ``int64`` microseconds since the epoch (default all 0: input order
                decides the originals).
            method, hamming_k, shingle, hash_name, weights, num_perm, seed, threshold, bands,
                rows, verify: settings, as ``dedup``'s (:func:`index_settings`), fixed for the
                life of the index.
            workers: processes for fingerprinting texts (None = all cores).
            overwrite: replace an existing index.
            synchronous: see the class docstring.
            signatures_: precomputed signatures of ``texts`` (internal: the CLI computes them
                while reading).

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
        settings = index_settings(
            hamming_k, shingle, hash_name, weights, method=method, num_perm=num_perm, seed=seed,
            threshold=threshold, bands=bands, rows=rows, verify=verify,
        )
        _check_synchronous(synchronous)
        ids = list(ids)
        n = len(ids)
        seen: set[str] = set()
        for i, ident in enumerate(ids):
            _check_id(ident, f"ids[{i}]")
            if ident in seen:
                raise ValueError(f"ids must be unique; {ident!r} appears more than once")
            seen.add(ident)
        del seen
        if n > MAX_POSITION - 1:
            raise ValueError(f"an index holds at most {MAX_POSITION - 1} documents, got {n}")
        if (texts is None) == (fingerprints is None) and signatures_ is None:
            raise ValueError("give exactly one of texts and fingerprints")
        if settings.method == "minhash" and texts is None:
            raise ValueError("a MinHash index is built from texts (it keeps them to verify "
                             "candidates); fingerprints are SimHash's")
        if texts is not None:
            texts = list(texts)
            if len(texts) != n:
                raise ValueError(f"texts must have one entry per id ({n}), got {len(texts)}")
        if signatures_ is not None:
            sig = signatures_
        elif texts is not None:
            from neardup.engines.local import signatures_parallel

            # Verification data is built by find_groups for the documents with candidates only.
            sig = signatures_parallel(texts, settings, workers, keep_sets=False)
        else:
            fps = np.asarray(fingerprints)
            if fps.dtype != np.uint64:
                if fps.size and fps.dtype.kind not in "iu":
                    raise ValueError(f"fingerprints must be uint64, got dtype {fps.dtype}")
                fps = fps.astype(np.uint64)
            if fps.shape != (n,):
                raise ValueError(f"fingerprints must have shape ({n},), got {fps.shape}")
            # Without texts, identical fingerprints play the part of identical contents.
            content = np.stack([fps, np.zeros(n, np.uint64)], axis=1)
            sig = Signatures(content, fps, np.zeros(n, bool), np.zeros(n, np.int64))
        if len(sig) != n:
            raise ValueError(f"signatures must have one row per id ({n}), got {len(sig)}")
        stamps = (
            np.zeros(n, np.int64) if timestamps_us is None else np.asarray(timestamps_us, np.int64)
        )
        if stamps.shape != (n,):
            raise ValueError(f"timestamps_us must have shape ({n},), got {stamps.shape}")
        groups = find_groups(sig, stamps, settings, texts)
        minhash_rows = None
        if settings.method == "minhash":
            # The content fingerprint stands in the fingerprint column (exact duplicates).
            fps = np.ascontiguousarray(sig.content[:, 0], dtype=np.uint64)
            minhash_rows = (band_keys(sig.signature, settings), data_sizes(texts, settings),
                            encode_texts(texts))
        else:
            fps = np.ascontiguousarray(sig.signature, dtype=np.uint64)

        target = Path(path)
        if target.exists() and not (target.is_dir() and not any(target.iterdir())):
            if not overwrite:
                raise FileExistsError(
                    f"{target} already exists; choose a new directory or overwrite it"
                )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.building-{os.getpid()}-{time.time_ns()}"
        tmp.mkdir()
        try:
            _write_new_index(tmp, settings, ids, fps, stamps, groups.original, groups.group_size,
                             minhash_rows)
            _install(tmp, target)
        except BaseException as error:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(error, sqlite3.Error):
                raise sqlite_error(error, target / DB_NAME) from error
            if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
                raise IndexWriteError(
                    error.errno,
                    f"no space left on the device of {target.parent} while building {target}: "
                    "nothing was installed (the partial copy was removed); free some space",
                ) from error
            raise
        return cls(target, synchronous=synchronous)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> NearDupIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Cache the tables (writer, if anything changed since the last cache) and release the
        database and the writer lock. Idempotent. O(table bytes) when it caches.

        Example:
            >>> import tempfile
            >>> index = NearDupIndex.create(tempfile.mkdtemp() + "/idx")
            >>> index.close(); index.close()
        """
        with self._lock:
            if self._closed:
                return
            try:
                if not self.readonly and self._conn is not None and self._dirty:
                    self.checkpoint()
            finally:
                self._release()

    def _release(self) -> None:
        self._closed = True
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        if self._lock_fd is not None:
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

    # ------------------------------------------------------------------ tables: load and save

    def _load_tables(self) -> None:
        conn = self._conn
        conn.execute("BEGIN")
        try:
            state = self._sql_state()
            try:
                tables, cache_info = self._load_cache(state)
                self._open_info.source = "cache"
                self._open_info.detail = cache_info
            except _CacheMiss as miss:
                tables = self._tables_from_sql()
                self._open_info.source = "rebuilt"
                self._open_info.detail = str(miss)
        finally:
            conn.execute("COMMIT")
        self._tables = tables
        self._max_pos = state["max_pos"]
        self._tomb_seq = state["tomb_seq"]
        self._saved_live = tables.live
        self._dirty = self._open_info.source != "cache" or self._open_info.tail_rows > 0
        if not self.readonly and self._dirty:
            self.checkpoint()

    def _sql_state(self) -> dict[str, int]:
        conn = self._conn
        seqs = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        count = conn.execute("SELECT value FROM meta WHERE key = 'documents'").fetchone()
        return {
            "max_pos": int(seqs.get("docs", 0)),
            "tomb_seq": int(seqs.get("tombstones", 0)),
            "documents": int(count[0]) if count else 0,
        }

    def _rows_after(self, max_pos: int):
        """Chunks of ``(positions int64, values)`` of the rows after ``max_pos``, in position
        order: fingerprints (``uint64``) or band keys (``uint32[m, bands]``). Inside a read
        transaction for a consistent snapshot."""
        if self.method == "minhash":
            sql = "SELECT pos, keys FROM minhash WHERE pos > ? ORDER BY pos"
        else:
            sql = "SELECT pos, fingerprint FROM docs WHERE pos > ? ORDER BY pos"
        cur = self._conn.execute(sql, (max_pos,))
        while chunk := cur.fetchmany(262_144):
            if self.method == "minhash":
                pos = np.array([r[0] for r in chunk], np.int64)
                yield pos, _keys_of_blobs([r[1] for r in chunk], self.settings.bands)
            else:
                arr = np.array(chunk, dtype=np.int64)
                yield arr[:, 0], arr[:, 1].view(np.uint64)

    def _tables_from_sql(self) -> Tables:
        parts = list(self._rows_after(0))
        pos = np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int64)
        if self.method == "minhash":
            keys = (np.concatenate([k for _, k in parts]) if parts
                    else np.zeros((0, self.settings.bands), np.uint32))
            return BandTables(self.settings.bands, positions=pos, keys=keys)
        fps = np.concatenate([f for _, f in parts]) if parts else np.zeros(0, np.uint64)
        return PermutationTables(self.hamming_k, positions=pos, fingerprints=fps)

    def _load_cache(self, state: dict[str, int]) -> tuple[Tables, str]:
        manifest_path = self.path / MANIFEST_NAME
        try:
            manifest = json.loads(manifest_path.read_text())
        except FileNotFoundError:
            raise _CacheMiss("no cached tables") from None
        except (OSError, ValueError) as error:
            raise _CacheMiss(f"unreadable {MANIFEST_NAME}: {error}") from None
        try:
            if manifest.get("format") != FORMAT_VERSION:
                raise _CacheMiss("cache format differs")
            gen_dir = self.path / f"tables-{int(manifest['generation'])}"
            # Every byte against the checksums written with the cache: a damaged file would
            # otherwise give wrong answers (keys, fingerprints) or out-of-range rows (a crash).
            self._open_info.extra["checksum_seconds"] = round(
                verify_files(gen_dir, manifest.get("files"), _CACHE_FILES[self.method]), 4
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
                raise _CacheMiss("cache is newer than the database")
            if self.method == "minhash":
                tables = self._band_cache(manifest, keys, rows, alive)
            else:
                tables = self._permutation_cache(manifest, keys, rows, alive, gen_dir)
        except (KeyError, TypeError, ValueError, OSError) as error:
            if isinstance(error, _CacheMiss):
                raise
            raise _CacheMiss(f"unusable cache: {error}") from None
        tail = self._apply_tail(tables, max_pos, tomb_seq)
        if tables.live != state["documents"]:
            raise _CacheMiss(
                f"cache + {tail} new rows give {tables.live} documents, the database has "
                f"{state['documents']}"
            )
        self._open_info.tail_rows = tail
        return tables, f"generation {manifest['generation']}, {tail} rows since"

    def _spot_check_sample(self, alive: np.ndarray) -> np.ndarray:
        """A few live positions (first, last and a sixteenth spread) to check a cache with."""
        sample = np.flatnonzero(alive)
        if not sample.size:
            return sample
        return np.unique(
            np.concatenate([sample[:4], sample[-4:], sample[:: max(1, sample.size // 16)]])
        )

    def _permutation_cache(self, manifest: dict, keys: np.ndarray, rows: np.ndarray,
                           alive: np.ndarray, gen_dir: Path) -> PermutationTables:
        """SimHash tables from a verified cache generation, spot-checked against SQLite."""
        plan_info = manifest["plan"]
        if plan_info["hamming_k"] != self.hamming_k:
            raise _CacheMiss("cache is for another hamming_k")
        plan = plan_tables(
            0, self.hamming_k, blocks=plan_info["blocks"], prefix_blocks=plan_info["prefix_blocks"]
        )
        fps = np.load(gen_dir / "fps.npy")
        if fps.dtype != np.uint64 or fps.shape != alive.shape:
            raise _CacheMiss("cached fingerprints do not cover the cached positions")
        if keys.shape != (plan.num_tables, int(manifest["entries"])):
            raise _CacheMiss("cached tables have unexpected shape")
        picks = self._spot_check_sample(alive)
        got = self._conn.execute(
            "SELECT pos, fingerprint FROM docs WHERE pos IN (SELECT value FROM json_each(?))",
            (_json_list(picks),),
        ).fetchall()
        for pos, fp in got:
            if np.uint64(_unsigned(fp)) != fps[pos]:
                raise _CacheMiss(f"cached fingerprint of position {pos} differs")
        return PermutationTables.from_arrays(
            self.hamming_k, plan, keys, rows, fps, alive, int(manifest.get("planned_n", 0)),
            manifest.get("main_dead"),
        )

    def _band_cache(self, manifest: dict, keys: np.ndarray, rows: np.ndarray,
                    alive: np.ndarray) -> BandTables:
        """MinHash band tables from a verified cache generation; a few positions are looked up
        in the first band under the keys SQLite holds for them (O(log n) each)."""
        bands = self.settings.bands
        if manifest.get("bands") != bands or keys.shape != (bands, int(manifest["entries"])):
            raise _CacheMiss("cached band tables have unexpected shape")
        picks = self._spot_check_sample(alive)
        got = self._conn.execute(
            "SELECT pos, keys FROM minhash WHERE pos IN (SELECT value FROM json_each(?))",
            (_json_list(picks),),
        ).fetchall()
        for pos, blob in got:
            key = _keys_of_blobs([blob], bands)[0, 0]
            lo, hi = np.searchsorted(keys[0], key, "left"), np.searchsorted(keys[0], key, "right")
            if pos not in rows[0, lo:hi]:
                raise _CacheMiss(f"cached band keys of position {pos} differ")
        return BandTables.from_arrays(keys, rows, alive, manifest.get("main_dead"))

    def _apply_tail(self, tables: Tables, max_pos: int, tomb_seq: int) -> int:
        """Apply rows added after ``max_pos`` and removals after ``tomb_seq``. Inside a read
        transaction for a consistent snapshot."""
        added = 0
        for positions, values in self._rows_after(max_pos):
            tables.add(positions, values)
            added += positions.shape[0]
        removed = self._conn.execute(
            "SELECT pos FROM tombstones WHERE seq > ?", (tomb_seq,)
        ).fetchall()
        if removed:
            tables.discard(np.array([r[0] for r in removed], np.int64))
        return added

    @guard_sqlite
    def checkpoint(self) -> None:
        """Writer: merge the delta and cache the tables under a new generation (written to a
        temporary directory, fsynced, then named in ``tables.json``; older generations are
        deleted). Also run at close. O(n · T) bytes written.

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
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
            manifest_path = self.path / MANIFEST_NAME
            try:
                generation = int(json.loads(manifest_path.read_text())["generation"]) + 1
            except (OSError, ValueError, KeyError, TypeError):
                generation = 1
            _save_generation(
                self.path, tables, generation, max_pos=self._max_pos, tomb_seq=self._tomb_seq
            )
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
            >>> writer = NearDupIndex.create(path)
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
            self._conn.execute("BEGIN")
            try:
                state = self._sql_state()
                if state["max_pos"] == self._max_pos and state["tomb_seq"] == self._tomb_seq:
                    return False
                self._apply_tail(self._tables, self._max_pos, self._tomb_seq)
            finally:
                self._conn.execute("COMMIT")
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
            t = self._tables
            self._stored_matches(self._prepare(["warm up the text kernels"], None))
            # One element per 4 KiB page faults every page of the tables in.
            if t.keys.size:
                int(t.keys[:, ::1024].sum()) + int(t.rows[:, ::1024].sum())
        return time.perf_counter() - started

    # ------------------------------------------------------------------ fingerprints

    @staticmethod
    def _text_list(texts: str | Sequence[str]) -> list[str]:
        texts = [texts] if isinstance(texts, str) else list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"text #{i} must be a str, got {type(text).__name__}")
        return texts

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
        return self._prepare(self._text_list(texts), None).fps

    def _prepare(self, texts: list[str] | None, fingerprints: Any,
                 n_expected: int | None = None) -> _Probes:
        """What probing and storing need of texts (checked) or SimHash fingerprints."""
        if (texts is None) == (fingerprints is None):
            raise ValueError("give exactly one of text(s) and fingerprint(s)")
        if texts is not None:
            texts = self._text_list(texts)
            if not texts:
                probes = _Probes(np.zeros(0, np.uint64))
                if self.method == "minhash":
                    probes = _Probes(probes.fps, np.zeros((0, self.settings.bands), np.uint32),
                                     [], (np.zeros(1, np.int64), np.zeros(0, np.uint64)))
            elif self.method == "minhash":
                sig = signatures(texts, self.settings, keep_sets=False)
                probes = _Probes(np.ascontiguousarray(sig.content[:, 0]),
                                 band_keys(sig.signature, self.settings), texts,
                                 verification_data(texts, self.settings, sig.signature))
            else:
                sig = signatures(texts, self.settings)
                probes = _Probes(np.ascontiguousarray(sig.signature, dtype=np.uint64))
        elif self.method == "minhash":
            raise ValueError(
                f"index {self.path} is a MinHash index: probe it with texts (fingerprints are "
                "SimHash's; a MinHash index verifies candidates on the texts)"
            )
        elif isinstance(fingerprints, np.ndarray) and fingerprints.dtype == np.uint64:
            probes = _Probes(np.ascontiguousarray(fingerprints.reshape(-1)))
        else:
            probes = _Probes(np.array(
                [_parse_fp(v, f"fingerprint #{i}") for i, v in enumerate(fingerprints)],
                dtype=np.uint64,
            ))
        if n_expected is not None and len(probes) != n_expected:
            raise ValueError(f"expected {n_expected} texts or fingerprints, got {len(probes)}")
        return probes

    def _stored_matches(self, probes: _Probes, hamming_k: int | None = None
                        ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per probe, its stored near-duplicates as ``(positions, ranks)`` sorted by rank then
        position; the rank orders matches nearest first: the Hamming distance (SimHash) or
        minus the similarity (MinHash). Under the lock."""
        n = len(probes)
        if self.method == "simhash":
            qi, pos, dist = self._tables.probe(probes.fps, hamming_k)
            return [_sorted_matches(pos, dist)] if n == 1 else _split_by_query(qi, pos, dist, n)
        qi, pos = self._tables.probe(probes.keys)
        upos = np.unique(pos)
        sizes = self._stored_column("units", upos)
        at = np.searchsorted(upos, pos)
        # The sizes alone rule out most false candidates, before any text is read.
        keep = size_bound(probes.sizes[qi], sizes[at], self.settings)
        qi, pos = qi[keep], pos[keep]
        # Rows 0..n-1 are the probes' data, then one row per candidate kept, each read and
        # prepared once (or found in the cache).
        used, at = np.unique(pos, return_inverse=True)
        stored = self._data_cache.rows(used.tolist(), self._stored_data)
        offsets, values = concat_data([probes.data, stored])
        sim = pair_similarity(offsets, values, qi, n + at, self.settings)
        ok = sim >= verify_threshold(self.settings)
        return _split_by_query(qi[ok], pos[ok], -sim[ok], n)

    def _stored_data(self, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The verification data of stored positions, in that order, from their texts."""
        blobs = self._stored_column("text", np.array(positions, np.int64))
        return verification_data([decode_text(b) for b in blobs], self.settings)

    def _stored_column(self, column: str, positions: np.ndarray) -> Any:
        """A column of the ``minhash`` rows of ``positions``, in their order: ``units`` (as
        ``int64``) or ``text`` (the compressed blobs). O(log n) each."""
        if positions.size == 0:
            return np.zeros(0, np.int64) if column == "units" else []
        rows = self._conn.execute(
            f"SELECT pos, {column} FROM minhash WHERE pos IN (SELECT value FROM json_each(?))",
            (_json_list(positions),),
        ).fetchall()
        if len(rows) != positions.size:
            raise IndexDamagedError(
                f"index {self.path}: {positions.size - len(rows)} candidate positions have no "
                f"stored text (tables and records disagree); run `neardup index check -d "
                f"{self.path}`"
            )
        by_pos = dict(rows)
        values = [by_pos[int(p)] for p in positions]
        return np.array(values, np.int64) if column == "units" else values

    # ------------------------------------------------------------------ reads

    @guard_sqlite
    def get(self, ident: str) -> Record | None:
        """The stored record of a document ID, or None. O(log n).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
            ...     _ = index.add("a", fingerprint="00000000000000ff", timestamp="2024-01-01")
            ...     r = index.get("a")
            >>> r.fingerprint, r.to_dict()["timestamp"], r.is_original
            (255, '2024-01-01T00:00:00Z', True)
        """
        _lookup_id(ident)
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            row = self._conn.execute(_RECORD_SQL + "WHERE d.id = ?", (ident,)).fetchone()
        if row is None:
            return None
        return _record(row)

    def query(
        self,
        text: str | None = None,
        *,
        fingerprint: int | str | None = None,
        hamming_k: int | None = None,
        limit: int = DEFAULT_LIMIT,
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
            limit: matches to list, ``0..1000`` (``match_count`` counts all).

        Returns:
            A :class:`QueryResult`; matches ordered by distance (or descending similarity),
            then ID.

        Complexity: SimHash O(T · (log n + g) + delta) for the probe; MinHash
        O(bands · (log n + bucket) + delta) for the probe plus, per candidate, one SQLite
        look-up, decompressing its text and the verification (O(its length) for LCS with
        early exit); plus O(log n) SQLite look-ups per listed match.

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
        return self.query_many(texts, fingerprints=fps, hamming_k=hamming_k, limit=limit)[0]

    @guard_sqlite
    def query_many(
        self,
        texts: Sequence[str] | None = None,
        *,
        fingerprints: Any = None,
        ids: Sequence[str] | None = None,
        hamming_k: int | None = None,
        limit: int = DEFAULT_LIMIT,
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
        k = self._probe_k(hamming_k)
        limit = _check_limit(limit)
        probes = self._prepare(texts, fingerprints)
        fps = probes.fps
        if ids is not None:
            ids = [_check_id(v, f"ids[{i}]") for i, v in enumerate(ids)]
            if len(ids) != fps.shape[0]:
                raise ValueError(
                    f"ids must have one entry per probe ({fps.shape[0]}), got {len(ids)}"
                )
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            per_query = self._stored_matches(probes, k)
            results = []
            for i, (p, d) in enumerate(per_query):
                fp = int(fps[i])
                ident = None if ids is None else ids[i]
                if p.size == 0:
                    results.append(QueryResult(fp, "new", None, None, 0, (), ident))
                    continue
                # A MinHash match set is verified one by one, hence never large.
                if p.size <= _FETCH_ALL or self.method == "minhash":
                    best, top = self._small_match_set(p, d, limit)
                else:
                    groups = self._group_info_of_matches(p)
                    best = min(((g[3], g[1]), g[2]) for g in groups.values())[1]
                    top = self._top_matches(p, d, limit)
                matches = tuple(self._match(mid, dd, orig) for dd, mid, _, orig in top)
                results.append(
                    QueryResult(fp, "duplicate", best, best, int(p.size), matches, ident)
                )
            return results

    def _probe_k(self, hamming_k: int | None) -> int | None:
        """The checked distance of a probe (SimHash); None for a MinHash index, which refuses
        one."""
        if self.method == "minhash":
            if hamming_k is not None:
                raise ValueError(
                    f"hamming_k applies to SimHash indexes; index {self.path} is a MinHash "
                    f"index ({describe_settings(self.settings)}): leave it out"
                )
            return None
        k = self.hamming_k if hamming_k is None else hamming_k
        _check_k(k, self.hamming_k)
        return k

    def _match(self, ident: str, rank: float, original_id: str) -> Match:
        """A :class:`Match` from its rank (distance, or minus the similarity for MinHash)."""
        if self.method == "minhash":
            return Match(ident, None, original_id, original_id, -float(rank))
        return Match(ident, int(rank), original_id, original_id)

    def _small_match_set(self, pos: np.ndarray, dist: np.ndarray, limit: int) -> tuple[str, list]:
        """For a few matches, in one SQLite round trip: the earliest original among their
        groups, and the first ``limit`` matches by (rank, ID) (rank: see
        :meth:`_stored_matches`)."""
        rows = self._conn.execute(
            "SELECT d.pos, d.id, o.id, o.timestamp, g.original FROM docs d "
            "JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original "
            "WHERE d.pos IN (SELECT value FROM json_each(?))",
            (_json_list(pos),),
        ).fetchall()
        if len(rows) != pos.size:
            raise IndexDamagedError(
                f"index {self.path}: {pos.size - len(rows)} matched positions are not in the "
                f"records (tables and records disagree); run `neardup index check -d {self.path}`"
            )
        best = min(rows, key=lambda r: (r[3], r[4]))[2]
        distance = dict(zip(pos.tolist(), dist.tolist()))
        top = sorted((distance[r[0]], r[1], r[0], r[2]) for r in rows)[:limit]
        return best, top

    def _reps(self, positions: np.ndarray) -> np.ndarray:
        """One position per distinct fingerprint among ``positions`` (identical SimHash
        fingerprints are always in one group); MinHash: the distinct positions."""
        if positions.size <= 1:
            return positions
        if self.method == "minhash":
            return np.unique(positions)
        _, first = np.unique(self._tables.fps[positions], return_index=True)
        return positions[first]

    def _group_info_of_matches(self, positions: np.ndarray) -> dict[int, tuple]:
        """For one position per distinct matched fingerprint: (gid, original position,
        original ID, original timestamp, size)."""
        if positions.size == 0:
            return {}
        reps = self._reps(positions)
        rows = self._conn.execute(
            "SELECT d.pos, d.gid, g.original, o.id, o.timestamp, g.size FROM docs d "
            "JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original "
            "WHERE d.pos IN (SELECT value FROM json_each(?))",
            (_json_list(reps),),
        ).fetchall()
        info = {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in rows}
        missing = [int(p) for p in reps if int(p) not in info]
        if missing:
            raise IndexDamagedError(
                f"index {self.path}: positions {missing[:5]} are in the tables but not in the "
                f"records (tables and records disagree); run `neardup index check -d {self.path}`"
            )
        return info

    def _fetch(self, positions) -> list[tuple]:
        return self._conn.execute(
            "SELECT d.pos, d.id, o.id FROM docs d JOIN groups g ON g.gid = d.gid "
            "JOIN docs o ON o.pos = g.original WHERE d.pos IN (SELECT value FROM json_each(?))",
            (_json_list(positions),),
        ).fetchall()

    def _top_matches(self, pos: np.ndarray, dist: np.ndarray, limit: int) -> list[tuple]:
        """The first ``limit`` matches by (distance, ID) as (distance, id, position,
        original_id). Fetches the IDs of a whole distance level when it is small; a large level
        (a skewed template) is read per distinct fingerprint through the (fingerprint, id)
        index, ``limit`` rows each."""
        out: list[tuple] = []
        if limit == 0 or pos.size == 0:
            return out
        fps = self._tables.fps
        alive = self._tables.alive
        for d in np.unique(dist):
            need = limit - len(out)
            level = pos[dist == d]
            rows: list[tuple] = []
            values = None
            if level.size > _FETCH_ALL:
                values = np.unique(fps[level])
                if values.size > _FETCH_ALL:
                    values = None
            if values is None:
                rows = [(r[1], r[0], r[2]) for r in self._fetch(level)]
            else:
                for v in values.tolist():
                    got = self._conn.execute(
                        "SELECT d.pos, d.id, o.id FROM docs d JOIN groups g ON g.gid = d.gid "
                        "JOIN docs o ON o.pos = g.original WHERE d.fingerprint = ? "
                        "ORDER BY d.id LIMIT ?",
                        (_signed(v), need + 8),
                    ).fetchall()
                    rows.extend(
                        (r[1], r[0], r[2]) for r in got if r[0] < self._tables.size and alive[r[0]]
                    )
            rows.sort()
            out.extend((int(d), r[0], r[1], r[2]) for r in rows[:need])
            if len(out) >= limit:
                break
        return out

    @guard_sqlite
    def stats(self) -> dict[str, Any]:
        """Counts, settings, table plan, memory and open time of the index. O(groups) for the
        group counts (one SQLite scan).

        Example:
            >>> import tempfile
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
            ...     s = index.stats()
            >>> s["documents"], s["hamming_k"], s["shingle"]
            (0, 3, 'word:3')
        """
        with self._lock:
            self._check_open()
            self._maybe_refresh()
            groups, largest = self._conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(size), 0) FROM groups"
            ).fetchone()
            t = self._tables
            db_bytes = sum(p.stat().st_size for p in self.path.glob(DB_NAME + "*") if p.is_file())
            return {
                "path": str(self.path),
                "mode": "readonly" if self.readonly else "writer",
                "documents": t.live,
                "groups": int(groups),
                "duplicates": t.live - int(groups),
                "largest_group": int(largest),
                "method": self.method,
                **self._settings_stats(),
                "synchronous": self.synchronous,
                "delta": t.delta_len,
                "delta_limit": t.delta_limit,
                "memory_bytes": t.nbytes,
                "bytes_per_document": round(t.nbytes / t.live, 1) if t.live else None,
                "database_bytes": db_bytes,
                "last_position": self._max_pos,
                "opened_from": self._open_info.source,
                "open_detail": self._open_info.detail,
                "open_seconds": round(self._open_info.seconds, 4),
                "quick_check_seconds": self._open_info.extra.get("quick_check_seconds"),
                "checksum_seconds": self._open_info.extra.get("checksum_seconds"),
                "created": self.created,
                "format_version": FORMAT_VERSION,
            }

    def _settings_stats(self) -> dict[str, Any]:
        """The settings and table layout entries of :meth:`stats`, per method."""
        s, t = self.settings, self._tables
        out: dict[str, Any] = {"shingle": s.shingle, "hash_name": s.hash_name,
                               "grouping": "components"}
        if self.method == "minhash":
            verification = s.verification
            out.update(num_perm=s.num_perm, seed=s.seed, threshold=s.threshold, bands=s.bands,
                       rows=s.rows, verify="none" if verification is None else str(verification))
            return out
        out.update(hamming_k=s.hamming_k, weights=s.weights, tables=t.plan.num_tables,
                   blocks=len(t.plan.blocks), prefix_blocks=t.plan.prefix_blocks,
                   prefix_bits=t.plan.prefix_bits, planned_for=t.planned_n)
        return out

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
        return self.add_many(
            [ident],
            texts,
            fingerprints=fps,
            timestamps=[timestamp],
            if_exists=if_exists,
            limit=limit,
        )[0]

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
        n = len(ids)
        if if_exists not in IF_EXISTS:
            raise ValueError(f"if_exists must be one of {', '.join(IF_EXISTS)}; got {if_exists!r}")
        limit = _check_limit(limit)
        if timestamps is None:
            stamps = np.zeros(n, np.int64)
        else:
            timestamps = list(timestamps)
            if len(timestamps) != n:
                raise ValueError(
                    f"timestamps must have one entry per id ({n}), got {len(timestamps)}"
                )
            stamps = np.array(
                [_parse_ts(v, f"timestamp of {ids[i]!r}") for i, v in enumerate(timestamps)],
                dtype=np.int64,
            )
        if texts is not None:
            texts = list(texts)
            if len(texts) != n:
                raise ValueError(f"texts must have one entry per id ({n}), got {len(texts)}")
        elif fingerprints is not None and not isinstance(fingerprints, np.ndarray):
            fingerprints = list(fingerprints)
        if fingerprints is not None and len(fingerprints) != n:
            raise ValueError(
                f"fingerprints must have one entry per id ({n}), got {len(fingerprints)}"
            )
        self._check_ids(ids)
        probes = self._prepare(texts, fingerprints, n)
        with self._lock:
            self._check_writable()
            if n == 0:
                return []
            return self._add_locked(ids, probes, stamps, if_exists, limit)

    @staticmethod
    def _check_ids(ids: list[str]) -> None:
        seen: set[str] = set()
        for i, ident in enumerate(ids):
            _check_id(ident, f"ids[{i}]")
            if ident in seen:
                raise ValueError(f"ids must be unique in a batch; {ident!r} appears more than once")
            seen.add(ident)

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
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
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
        if if_exists not in IF_EXISTS:
            raise ValueError(f"if_exists must be one of {', '.join(IF_EXISTS)}; got {if_exists!r}")
        limit = _check_limit(limit)
        self._check_ids(ids)
        probes = self._prepare(None if texts is None else list(texts), fingerprints)
        if len(probes) != n or stamps.shape[0] != n:
            raise ValueError(
                f"fingerprints (or texts) and timestamps_us must have one entry per id ({n}), "
                f"got {len(probes)} and {stamps.shape[0]}"
            )
        with self._lock:
            self._check_writable()
            if n == 0:
                return []
            return self._add_locked(ids, probes, stamps, if_exists, limit)

    def _existing(self, ids: list[str]) -> dict[str, Record]:
        rows = self._conn.execute(
            _RECORD_SQL + "WHERE d.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        ).fetchall()
        return {r[0]: _record(r) for r in rows}

    def _add_locked(
        self, ids: list[str], probes: _Probes, stamps: np.ndarray, if_exists: str, limit: int
    ) -> list[AddResult]:
        conn = self._conn
        n = len(ids)
        results: list[AddResult | None] = [None] * n
        existing = self._existing(ids)
        if existing:
            if if_exists == "error":
                first = next(i for i in ids if i in existing)
                raise DocumentExistsError(
                    f"document id {first!r} is already in the index"
                    + (
                        f" (and {len(existing) - 1} more of this batch)"
                        if len(existing) > 1
                        else ""
                    )
                    + "; nothing was added"
                )
            for i, ident in enumerate(ids):
                if ident in existing:
                    r = existing[ident]
                    results[i] = AddResult(
                        ident,
                        "exists",
                        r.fingerprint,
                        r.duplicate_id,
                        r.original_id,
                        r.is_original,
                        r.group_size,
                        0,
                        (),
                    )
        todo = [i for i in range(n) if results[i] is None]
        if not todo:
            return results  # type: ignore[return-value]
        b_ids = [ids[i] for i in todo]
        batch = probes.take(todo)
        b_fps = batch.fps
        b_ts = stamps[todo]
        b = len(todo)
        if self._max_pos + b > MAX_POSITION:
            raise ValueError(f"an index holds at most {MAX_POSITION} positions")

        # Everything the batch needs from the stored documents, read before writing; the
        # method decides what matches, the grouping below is the same for both.
        if self.method == "minhash":
            hood = self._minhash_neighbourhood(batch, limit)
        else:
            hood = self._simhash_neighbourhood(b_fps, limit)
        inverse, stored_count, stored_gids = hood.inverse, hood.stored_count, hood.stored_gids
        state, nbr, stored_top = hood.groups, hood.nbr, hood.stored_top
        nv = len(stored_count)
        same_rank = -1.0 if self.method == "minhash" else 0

        parent: dict[int, int] = {}

        def find(g: int) -> int:
            root = g
            while root in parent:
                root = parent[root]
            while g in parent and parent[g] != root:
                parent[g], g = root, parent[g]
            return root

        first_doc = np.full(nv, -1, np.int64)
        doc_gid = np.zeros(b, np.int64)
        seen_ids: list[list[str]] = [[] for _ in range(nv)]
        seen_count = np.zeros(nv, np.int64)
        merged_away: list[int] = []
        base = self._max_pos + 1
        rows_out = []
        for j in range(b):
            v = int(inverse[j])
            pos = base + j
            ts = int(b_ts[j])
            ident = b_ids[j]
            if first_doc[v] >= 0:
                gids = {find(int(doc_gid[first_doc[v]]))}
            else:
                gids = {find(g) for g in stored_gids[v]}
                for w, _d in nbr[v]:
                    if first_doc[w] >= 0:
                        gids.add(find(int(doc_gid[first_doc[w]])))
                first_doc[v] = j
            batch_count = int(seen_count[v]) + sum(int(seen_count[w]) for w, _ in nbr[v])
            match_count = stored_count[v] + batch_count
            if not gids:
                gid = pos
                state[gid] = _GroupState(pos, ts, ident, 1, False)
                status = "new"
            else:
                status = "duplicate" if match_count else "new"
                ordered = sorted(gids, key=lambda g: (-state[g].size, g))
                gid = ordered[0]
                keep = state[gid]
                for other in ordered[1:]:
                    s = state.pop(other)
                    parent[other] = gid
                    keep.size += s.size
                    if (s.original_ts, s.original) < (keep.original_ts, keep.original):
                        keep.original, keep.original_ts, keep.original_id = (
                            s.original,
                            s.original_ts,
                            s.original_id,
                        )
                    if s.stored:
                        merged_away.append(other)
                keep.size += 1
                if (ts, pos) < (keep.original_ts, keep.original):
                    keep.original, keep.original_ts, keep.original_id = pos, ts, ident
            doc_gid[j] = gid
            g = state[gid]
            # Matches: stored ones (as of the batch start) and earlier documents of the batch.
            cands = [(d, mid) for d, mid, _, _ in stored_top[v]]
            cands.extend((same_rank, mid) for mid in seen_ids[v])
            for w, d in nbr[v]:
                cands.extend((d, mid) for mid in seen_ids[w])
            cands.sort()
            matches = tuple(self._match(mid, d, g.original_id) for d, mid in cands[:limit])
            results[todo[j]] = AddResult(
                ident,
                status,
                int(b_fps[j]),
                g.original_id,
                g.original_id,
                g.original == pos,
                g.size,
                match_count,
                matches,
            )
            if limit:
                bisect.insort(seen_ids[v], ident)
                if len(seen_ids[v]) > limit:
                    seen_ids[v].pop()
            seen_count[v] += 1
            rows_out.append(pos)

        final_gid = [find(int(g)) for g in doc_gid]
        # Results carry the group as of right after each document; finish the later merges'
        # effect on nothing else: results are per-moment by design.
        conn.execute("BEGIN IMMEDIATE")
        try:
            sql_max = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'docs'").fetchone()
            if (int(sql_max[0]) if sql_max else 0) != self._max_pos:
                raise RuntimeError(
                    f"index {self.path} was written by another process while open for writing"
                )
            conn.executemany(
                "INSERT INTO docs (pos, id, fingerprint, timestamp, gid) VALUES (?, ?, ?, ?, ?)",
                [
                    (base + j, b_ids[j], _signed(int(b_fps[j])), int(b_ts[j]), final_gid[j])
                    for j in range(b)
                ],
            )
            if self.method == "minhash":
                conn.executemany(
                    "INSERT INTO minhash (pos, keys, units, text) VALUES (?, ?, ?, ?)",
                    zip(range(base, base + b), _key_blobs(batch.keys), batch.sizes.tolist(),
                        encode_texts(batch.texts)),
                )
            for other in merged_away:
                target = find(other)
                conn.execute("UPDATE docs SET gid = ? WHERE gid = ?", (target, other))
                conn.execute("DELETE FROM groups WHERE gid = ?", (other,))
            conn.executemany(
                "INSERT OR REPLACE INTO groups (gid, original, size) VALUES (?, ?, ?)",
                [(gid, s.original, s.size) for gid, s in state.items()],
            )
            created = sum(1 for s in state.values() if not s.stored)
            self._bump_counts(b, created - len(merged_away))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._tables.add(np.arange(base, base + b, dtype=np.int64),
                         b_fps if batch.keys is None else batch.keys)
        self._max_pos = base + b - 1
        self._after_write()
        return results  # type: ignore[return-value]

    def _simhash_neighbourhood(self, fps: np.ndarray, limit: int) -> _Neighbourhood:
        """SimHash: the units are the batch's distinct fingerprints (identical ones always
        match the same documents); matches are within ``hamming_k`` bits."""
        k = self.hamming_k
        values, inverse, _ = collapse_identical(fps)
        nv = values.shape[0]
        sq, spos, sdist = self._tables.probe(values, k)
        stored = _split_by_query(sq, spos, sdist, nv)
        info = self._group_info_of_matches(spos)
        tables_fps = self._tables.fps
        rep_by_fp = {int(tables_fps[p]): p for p in info}  # one stored position per value
        stored_gids = [
            {info[rep_by_fp[v]][0] for v in set(tables_fps[p].tolist())} if p.size else set()
            for p, _d in stored
        ]
        # Matches inside the batch, between distinct values (a value always matches itself).
        va, vb, vd = close_pairs(values, k)
        return self._neighbourhood(inverse, stored, info, stored_gids, (va, vb, vd),
                                   [self._top_matches(p, d, limit) for p, d in stored])

    def _minhash_neighbourhood(self, batch: _Probes, limit: int) -> _Neighbourhood:
        """MinHash: every document is its own unit; matches are band candidates that pass the
        index's verification, stored ones (:meth:`_stored_matches`) and inside the batch."""
        stored = self._stored_matches(batch)
        spos = np.concatenate([p for p, _ in stored])
        info = self._group_info_of_matches(spos)
        stored_gids = [{info[q][0] for q in p.tolist()} for p, _ in stored]
        ca, cb = band_pairs(batch.keys)
        sizes = batch.sizes
        fit = size_bound(sizes[ca], sizes[cb], self.settings)
        ca, cb = ca[fit], cb[fit]
        sim = pair_similarity(*batch.data, ca, cb, self.settings)
        ok = sim >= verify_threshold(self.settings)
        top = [self._small_match_set(p, d, limit)[1] if p.size else [] for p, d in stored]
        return self._neighbourhood(np.arange(len(batch)), stored, info, stored_gids,
                                   (ca[ok], cb[ok], -sim[ok]), top)

    @staticmethod
    def _neighbourhood(inverse: np.ndarray, stored: list, info: dict, stored_gids: list,
                       pairs: tuple, stored_top: list) -> _Neighbourhood:
        """The method-independent part: the stored groups touched and the batch's own pairs
        as adjacency lists."""
        nv = len(stored)
        groups: dict[int, _GroupState] = {}
        for g in info.values():
            groups.setdefault(g[0], _GroupState(g[1], g[3], g[2], g[4], True))
        nbr: list[list[tuple[int, Any]]] = [[] for _ in range(nv)]
        for a, c, d in zip(*(x.tolist() for x in pairs)):
            nbr[a].append((c, d))
            nbr[c].append((a, d))
        return _Neighbourhood(inverse, [int(p.size) for p, _ in stored], stored_gids, groups,
                              nbr, stored_top)

    def _bump_counts(self, documents: int, groups: int) -> None:
        self._conn.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'documents'",
            (documents,),
        )
        self._conn.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'groups'", (groups,)
        )

    def _after_write(self) -> None:
        self._dirty = True
        saved = getattr(self, "_saved_live", 0)
        # Cache again after large growth, so that reopening does not replay many rows.
        if abs(self._tables.live - saved) >= max(250_000, saved // 2):
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
            >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
            ...     _ = index.add_many(["a", "b"], fingerprints=[1, 2])
            ...     index.remove_many(["a", "b", "zz"]), len(index)
            (2, 0)
        """
        ids = [_lookup_id(v, f"ids[{i}]") for i, v in enumerate(ids)]
        with self._lock:
            self._check_writable()
            if not ids:
                return 0
            conn = self._conn
            rows = conn.execute(
                "SELECT pos, gid FROM docs WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            ).fetchall()
            if not rows:
                return 0
            positions = [r[0] for r in rows]
            affected = sorted({r[1] for r in rows})
            conn.execute("BEGIN IMMEDIATE")
            try:
                for table in ("docs", "minhash") if self.method == "minhash" else ("docs",):
                    conn.execute(
                        f"DELETE FROM {table} WHERE pos IN (SELECT value FROM json_each(?))",
                        (_json_list(positions),),
                    )
                conn.executemany(
                    "INSERT INTO tombstones (pos) VALUES (?)", [(p,) for p in positions]
                )
                group_delta = 0
                for gid in affected:
                    group_delta += self._regroup(gid)
                self._bump_counts(-len(positions), group_delta)
                tomb = conn.execute(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'tombstones'"
                ).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._tables.discard(np.array(positions, np.int64))
            self._tomb_seq = int(tomb[0])
            self._after_write()
            return len(positions)

    def _regroup(self, gid: int) -> int:
        """Recompute the components of group ``gid`` after removals (inside the transaction);
        returns the change in the number of groups."""
        conn = self._conn
        members = conn.execute(
            "SELECT pos, fingerprint, timestamp FROM docs WHERE gid = ? ORDER BY timestamp, pos",
            (gid,),
        ).fetchall()
        if not members:
            conn.execute("DELETE FROM groups WHERE gid = ?", (gid,))
            return -1
        arr = np.array(members, dtype=np.int64)
        pos = arr[:, 0]
        labels = self._member_components(pos, arr[:, 1].view(np.uint64))
        # Members come sorted by (timestamp, position): the first of each label is its original.
        _, first, counts = np.unique(labels, return_index=True, return_counts=True)
        if first.shape[0] == 1:
            conn.execute(
                "UPDATE groups SET original = ?, size = ? WHERE gid = ?",
                (int(pos[0]), int(pos.shape[0]), gid),
            )
            return 0
        conn.execute("DELETE FROM groups WHERE gid = ?", (gid,))
        for label_first, count in zip(first.tolist(), counts.tolist()):
            part = pos[labels == labels[label_first]]
            new_gid = int(part.min())
            conn.execute(
                "UPDATE docs SET gid = ? WHERE pos IN (SELECT value FROM json_each(?))",
                (new_gid, _json_list(part)),
            )
            conn.execute(
                "INSERT INTO groups (gid, original, size) VALUES (?, ?, ?)",
                (new_gid, int(pos[label_first]), int(count)),
            )
        return first.shape[0] - 1

    def _member_components(self, pos: np.ndarray, fps: np.ndarray) -> np.ndarray:
        """The component label of each of the documents ``pos`` (with fingerprints ``fps``)
        under the index's near-duplicate relation. SimHash: O(m²) comparisons of distinct
        fingerprints up to 2,048, tables above; MinHash: band pairs of the members, each
        verified on the stored texts."""
        if self.method == "minhash":
            rows = self._conn.execute(
                "SELECT pos, keys, text FROM minhash WHERE pos IN (SELECT value FROM json_each(?))",
                (_json_list(pos),),
            ).fetchall()
            by_pos = {r[0]: r for r in rows}
            members = [by_pos[int(p)] for p in pos]
            keys = _keys_of_blobs([r[1] for r in members], self.settings.bands)
            a, b = band_pairs(keys)
            data = verification_data([decode_text(r[2]) for r in members], self.settings)
            sim = pair_similarity(*data, a, b, self.settings)
            ok = sim >= verify_threshold(self.settings)
            return connected_components(pos.shape[0], a[ok], b[ok])
        values, inverse, _ = collapse_identical(fps)
        if values.shape[0] == 1:
            return np.zeros(pos.shape[0], np.int64)
        a, b, _ = close_pairs(values, self.hamming_k)
        return connected_components(values.shape[0], a, b)[inverse]

    # ------------------------------------------------------------------ export

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
                "SELECT d.id, o.id, g.original = d.pos, g.size FROM docs d "
                "JOIN groups g ON g.gid = d.gid JOIN docs o ON o.pos = g.original ORDER BY d.pos"
            ).fetchall()
        return {r[0]: (r[1], bool(r[2]), int(r[3])) for r in rows}


_CACHE_FILES = {
    "simhash": ["keys.npy", "rows.npy", "fps.npy", "alive.npy"],
    "minhash": ["keys.npy", "rows.npy", "alive.npy"],
}
"""The files of a cached generation per method, each checksummed in the manifest."""


class _CacheMiss(Exception):
    """The cached tables cannot be used (the reason is the message)."""


def _record(row: tuple) -> Record:
    ident, fp, ts, pos, orig_id, orig_pos, size = row
    return Record(
        ident, _unsigned(fp), int(ts), int(pos), orig_id, orig_id, orig_pos == pos, int(size)
    )


def _sorted_matches(pos: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One query's (positions, distances), sorted by distance then position."""
    if pos.size > 1:
        order = np.lexsort((pos, dist))
        pos, dist = pos[order], dist[order]
    return pos, dist


def _split_by_query(
    qi: np.ndarray, pos: np.ndarray, dist: np.ndarray, nq: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query, its (positions, distances), sorted by distance then position."""
    if qi.size == 0:
        empty_p, empty_d = np.zeros(0, np.int64), np.zeros(0, np.uint8)
        return [(empty_p, empty_d)] * nq
    order = np.lexsort((pos, dist, qi))
    qi, pos, dist = qi[order], pos[order], dist[order]
    bounds = np.searchsorted(qi, np.arange(nq + 1))
    return [(pos[bounds[i] : bounds[i + 1]], dist[bounds[i] : bounds[i + 1]]) for i in range(nq)]


def _acquire_writer_lock(path: Path) -> int:
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


def _write_new_index(
    directory: Path,
    settings: Settings,
    ids: list[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    original: np.ndarray,
    group_size: np.ndarray,
    minhash_rows: tuple[np.ndarray, np.ndarray, list[bytes]] | None = None,
) -> None:
    """Write the SQLite records and the cached tables of a new index into ``directory``;
    ``minhash_rows`` are the band keys, verification data sizes and compressed texts of a
    MinHash index."""
    n = len(ids)
    db = directory / DB_NAME
    conn = _connect(db, readonly=False)
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
        created = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        is_orig = original == np.arange(n)
        meta = {
            "format_version": str(FORMAT_VERSION),
            **_settings_meta(settings),
            "created": created,
            "documents": str(n),
            "groups": str(int(is_orig.sum())),
        }
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", list(meta.items()))
        signed = fps.view(np.int64)
        gid = original + 1  # the original's position names the group
        step = 100_000
        for start in range(0, n, step):
            stop = min(n, start + step)
            conn.executemany(
                "INSERT INTO docs (pos, id, fingerprint, timestamp, gid) VALUES (?, ?, ?, ?, ?)",
                zip(
                    range(start + 1, stop + 1),
                    ids[start:stop],
                    signed[start:stop].tolist(),
                    stamps[start:stop].tolist(),
                    gid[start:stop].tolist(),
                ),
            )
            if minhash_rows is not None:
                keys, sizes, blobs = minhash_rows
                conn.executemany(
                    "INSERT INTO minhash (pos, keys, units, text) VALUES (?, ?, ?, ?)",
                    zip(range(start + 1, stop + 1), _key_blobs(keys[start:stop]),
                        sizes[start:stop].tolist(), blobs[start:stop]),
                )
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
    _fsync_path(db)
    positions = np.arange(1, n + 1, dtype=np.int64)
    if minhash_rows is None:
        tables = PermutationTables(settings.hamming_k, positions=positions, fingerprints=fps)
    else:
        tables = BandTables(settings.bands, positions=positions, keys=minhash_rows[0])
    _save_generation(directory, tables, 1, max_pos=n, tomb_seq=0)


def _key_blobs(keys: np.ndarray) -> list[bytes]:
    """Each row of ``uint32[n, bands]`` band keys as little-endian bytes (``minhash.keys``)."""
    keys = np.ascontiguousarray(keys, dtype="<u4")
    return [row.tobytes() for row in keys]


def _keys_of_blobs(blobs: Sequence[bytes], bands: int) -> np.ndarray:
    """The ``uint32[n, bands]`` band keys of ``minhash.keys`` values."""
    if not blobs:
        return np.zeros((0, bands), np.uint32)
    return np.frombuffer(b"".join(blobs), dtype="<u4").reshape(len(blobs), bands).astype(np.uint32)


def _save_generation(
    directory: Path, tables: Tables, generation: int, *, max_pos: int, tomb_seq: int
) -> None:
    """Cache the tables as ``tables-<generation>/`` and name it in ``tables.json``.

    The arrays are written to a temporary directory and fsynced before it is renamed and the
    manifest is replaced (also fsynced), so the manifest never names incomplete files; older
    generations are deleted afterwards (readers that memory-mapped them keep their mapping).
    """
    try:
        _write_generation(directory, tables, generation, max_pos=max_pos, tomb_seq=tomb_seq)
    except OSError as error:
        shutil.rmtree(directory / f".tables-{generation}.tmp", ignore_errors=True)
        (directory / f".{MANIFEST_NAME}.tmp").unlink(missing_ok=True)
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise IndexWriteError(
                error.errno,
                f"no space left on the device of {directory} while caching the index's tables: "
                "the records are safe (SQLite); the index opens from its previous cache or "
                "rebuilds its tables; free some space",
            ) from error
        raise


def _write_generation(
    directory: Path, tables: Tables, generation: int, *, max_pos: int, tomb_seq: int
) -> None:
    """The body of :func:`_save_generation` (which cleans up after a failure)."""
    tmp = directory / f".tables-{generation}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    size = max_pos + 1
    arrays = [("keys.npy", tables.keys), ("rows.npy", tables.rows)]
    if isinstance(tables, PermutationTables):
        arrays.append(("fps.npy", tables.fps[:size]))
    arrays.append(("alive.npy", tables.alive[:size]))
    for name, array in arrays:
        with open(tmp / name, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array))
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
    tmp_manifest = directory / f".{MANIFEST_NAME}.tmp"
    with open(tmp_manifest, "w") as fh:
        json.dump(manifest, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp_manifest, directory / MANIFEST_NAME)
    _fsync_path(directory)
    for old in directory.glob("tables-*"):
        if old.name != final.name:
            shutil.rmtree(old, ignore_errors=True)


def _install(tmp: Path, target: Path) -> None:
    """Move a complete new index into place (replacing ``target`` if it exists)."""
    if target.exists():
        if (target / DB_NAME).exists():
            fd = _acquire_writer_lock(target)  # refuse to replace an index a writer has open
            os.close(fd)
        old = target.parent / f".{target.name}.old-{os.getpid()}-{time.time_ns()}"
        os.rename(target, old)
        os.rename(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, target)
    _fsync_path(target.parent)
