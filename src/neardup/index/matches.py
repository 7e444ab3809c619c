"""The read side of an index: what a probe (a text, or a SimHash fingerprint) matches among the
stored documents, and the answer that describes it.

A probe is first prepared with the index's settings (:meth:`Matcher.prepare`: its fingerprint,
and for MinHash its band keys and verification data). Its stored near-duplicates are then found
in the in-memory tables (:meth:`Matcher.stored`): SimHash, the positions within ``hamming_k``
bits; MinHash, the band candidates whose stored texts pass the index's verification. Each match
has a **rank** that orders them nearest first: the Hamming distance, or minus the similarity.
Last, SQLite names them and their groups (:meth:`Matcher.results`): the matches listed are the
first ``limit`` by (rank, ID), and the group a probe would join is the one with the earliest
original among its matches' groups. :meth:`neardup.index.store.NearDupIndex.query` is built on
it, and so is the read half of an add (:mod:`neardup.index.grouping`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from neardup.candidates.radix import sorted_distinct
from neardup.index.cache import Tables, mapped_counts
from neardup.index.errors import IndexDamagedError, check_int
from neardup.index.minhash import (
    band_keys,
    take_data,
    verification_data,
)
from neardup.index.results import Match, QueryResult
from neardup.index.settings import describe_settings
from neardup.index.storage import (
    DB_NAME,
    GROUPED,
    grouped_rows,
    json_list,
    read_snapshot,
    signed,
    stored_texts,
)
from neardup.index.verifier import CandidateVerifier
from neardup.io import parse_fingerprint
from neardup.memory import return_freed_memory
from neardup.pipeline import signatures
from neardup.settings import Settings

__all__ = ["Matcher", "Probes", "split_by_query", "text_list"]

_FETCH_ALL = 512
"""A distance level with at most this many matches has all their IDs fetched at once."""

_NAMES = "d.pos, d.id, o.id"
"""Position, ID and original's ID of documents (:data:`~neardup.index.storage.GROUPED`)."""

_TRIM_CANDIDATES = 262_144
"""MinHash: candidates of a probe call from which the heap is given back afterwards (a batch's
millions leave hundreds of MB to the allocator; a template's copy, its 20,000 a few)."""

_GROUPED_FROM = 512
"""MinHash: candidates of a probe call from which each group's are verified only until enough
pass (fewer are all verified, and every match is counted)."""

_LABEL_ROWS = 65_536
"""Records read at a time into the group labels."""


@dataclass
class Probes:
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

    def take(self, rows: list[int]) -> Probes:
        """The probes ``rows``, in that order."""
        if self.keys is None:
            return Probes(self.fps[rows])
        return Probes(
            self.fps[rows],
            self.keys[rows],
            [self.texts[i] for i in rows],
            take_data(self.data, rows),
        )


def text_list(texts: str | Sequence[str]) -> list[str]:
    """One text or several as a list, each checked to be a str.

    Example:
        >>> text_list("a b")
        ['a b']
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"text #{i} must be a str, got {type(text).__name__}")
    return texts


def _parse_fp(value: Any, where: str) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    try:
        return parse_fingerprint(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}: {error}") from None


def _sorted_matches(pos: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One query's (positions, distances), sorted by distance then position."""
    if pos.size > 1:
        order = np.lexsort((pos, dist))
        pos, dist = pos[order], dist[order]
    return pos, dist


def split_by_query(
    qi: np.ndarray, pos: np.ndarray, dist: np.ndarray, nq: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query ``0..nq-1``, its (positions, ranks), sorted by rank then position, from the
    matches ``(qi, pos, dist)`` of all queries. O(m log m) for m matches.

    Example:
        >>> parts = split_by_query(np.array([1, 0, 1]), np.array([5, 6, 7]), np.array([2, 0, 1]), 2)
        >>> [p.tolist() for p, _ in parts]
        [[6], [7, 5]]
    """
    if qi.size == 0:
        empty_p, empty_d = np.zeros(0, np.int64), np.zeros(0, np.uint8)
        return [(empty_p, empty_d)] * nq
    order = np.lexsort((pos, dist, qi))
    qi, pos, dist = qi[order], pos[order], dist[order]
    bounds = np.searchsorted(qi, np.arange(nq + 1))
    return [(pos[bounds[i] : bounds[i + 1]], dist[bounds[i] : bounds[i + 1]]) for i in range(nq)]


class Matcher:
    """Finds and describes the stored near-duplicates of probes, for one open index: its
    directory ``path`` (for messages), records ``conn``, in-memory ``tables`` and
    ``settings``; MinHash verifies candidates with ``verifier``
    (:class:`~neardup.index.verifier.CandidateVerifier`).

    Not thread-safe: the index calls it under its lock.
    """

    def __init__(
        self, path: Path, conn: sqlite3.Connection, tables: Tables, settings: Settings
    ) -> None:
        self.path = path
        self.conn = conn
        self.tables = tables
        self.settings = settings
        self.minhash = settings.method == "minhash"
        # MinHash: what rules candidates out before their texts are read, and the verification
        # data of candidates that recur (32 MB: a popular template's copies are compared with
        # a few members of its cluster each, not the whole of it).
        self.verifier = CandidateVerifier(
            settings,
            lambda positions: self._minhash_column("units", positions),
            self.stored_texts,
        )
        # MinHash: the group of each position when it was read (4 bytes each, read on the
        # first large probe). Merges since only make groups coarser than these labels, which
        # stay safe to stop by; removals can split a group, so they are read again after one.
        self._groups = np.zeros(0, np.uint32)
        self._groups_read = 0  # positions below it have a label

    # ------------------------------------------------------------------ probes

    def check_k(self, hamming_k: int | None) -> int | None:
        """The checked distance of a SimHash probe, ``0..hamming_k`` of the index (None: the
        index's); a MinHash index refuses one and gets None. O(1)."""
        if self.minhash:
            if hamming_k is not None:
                raise ValueError(
                    f"hamming_k applies to SimHash indexes; index {self.path} is a MinHash "
                    f"index ({describe_settings(self.settings)}): leave it out"
                )
            return None
        k = self.settings.hamming_k if hamming_k is None else hamming_k
        return check_int("hamming_k", k, 0, self.settings.hamming_k)

    def prepare(
        self, texts: list[str] | None, fingerprints: Any, n_expected: int | None = None
    ) -> Probes:
        """What probing and storing need of ``texts`` (checked) or SimHash ``fingerprints``
        (exactly one of the two; ``n_expected`` of them if given). O(total text)."""
        if (texts is None) == (fingerprints is None):
            raise ValueError("give exactly one of text(s) and fingerprint(s)")
        if texts is not None:
            probes = self._sign(text_list(texts))
        elif self.minhash:
            raise ValueError(
                f"index {self.path} is a MinHash index: probe it with texts (fingerprints are "
                "SimHash's; a MinHash index verifies candidates on the texts)"
            )
        elif isinstance(fingerprints, np.ndarray) and fingerprints.dtype == np.uint64:
            probes = Probes(np.ascontiguousarray(fingerprints.reshape(-1)))
        else:
            probes = Probes(
                np.array(
                    [_parse_fp(v, f"fingerprint #{i}") for i, v in enumerate(fingerprints)],
                    dtype=np.uint64,
                )
            )
        if n_expected is not None and len(probes) != n_expected:
            raise ValueError(f"expected {n_expected} texts or fingerprints, got {len(probes)}")
        return probes

    def _sign(self, texts: list[str]) -> Probes:
        """The probes of checked texts, signed with the index's settings."""
        if not texts:
            if not self.minhash:
                return Probes(np.zeros(0, np.uint64))
            return Probes(
                np.zeros(0, np.uint64),
                np.zeros((0, self.settings.bands), np.uint32),
                [],
                (np.zeros(1, np.int64), np.zeros(0, np.uint64)),
            )
        if not self.minhash:
            sig = signatures(texts, self.settings)
            return Probes(np.ascontiguousarray(sig.signature, dtype=np.uint64))
        sig = signatures(texts, self.settings, keep_sets=False)
        return Probes(
            np.ascontiguousarray(sig.content[:, 0]),
            band_keys(sig.signature, self.settings),
            texts,
            verification_data(texts, self.settings, sig.signature),
        )

    # ------------------------------------------------------------------ finding

    def stored(
        self, probes: Probes, hamming_k: int | None = None, enough: int | None = None
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """Per probe, its stored near-duplicates as ``(positions, ranks)`` sorted by rank then
        position (SimHash: within ``hamming_k`` bits, default the index's), and whether each
        probe's list is complete (``bool[n]``).

        MinHash with ``enough``: when a probe call has many candidates, each probe's
        candidates in one group are verified only until ``enough`` pass
        (:meth:`~neardup.index.verifier.CandidateVerifier.matches`): the groups a probe
        matches are exact, its matches may be a part of them (not complete). Complexity: the
        probe of the tables; MinHash adds one SQLite look-up, decompression and verification
        per candidate compared that the bounds do not rule out."""
        n = len(probes)
        if not self.minhash:
            qi, pos, dist = self.tables.probe(probes.fps, hamming_k)
            parts = [_sorted_matches(pos, dist)] if n == 1 else split_by_query(qi, pos, dist, n)
            return parts, np.ones(n, bool)
        qi, pos = self.tables.probe(probes.keys)
        many = qi.shape[0] >= _TRIM_CANDIDATES
        groups = None
        if enough is not None and qi.shape[0] >= _GROUPED_FROM:
            groups = self.group_labels(pos)
        qi, pos, sim, cut = self.verifier.matches(probes.data, qi, pos, groups, max(enough or 1, 1))
        if many:
            return_freed_memory()
        return split_by_query(qi, pos, -sim, n), ~cut

    def group_labels(self, positions: np.ndarray) -> np.ndarray:
        """A label per stored position (``uint32``): the group it was in when last read from the
        records. Positions with one label are in one group (merges since joined groups, never
        parted them; :meth:`forget_groups` after removals). O(1) each, plus reading the
        records added since (all of them, about 0.5 s at 1M, after :meth:`forget_groups`)."""
        need = int(positions.max()) + 1 if positions.size else 0
        if need > self._groups_read:
            cursor = self.conn.execute(
                "SELECT pos, gid FROM docs WHERE pos >= ? ORDER BY pos", (self._groups_read,)
            )
            while rows := cursor.fetchmany(_LABEL_ROWS):
                pos, gid = np.array(rows, np.int64).T
                self._label_room(int(pos[-1]) + 1)
                self._groups[pos] = gid
                self._groups_read = int(pos[-1]) + 1
            # Positions past the records (removed since the tables were read) keep label 0.
            self._label_room(need)
            self._groups_read = max(self._groups_read, need)
            return_freed_memory()
        return self._groups[positions]

    def _label_room(self, size: int) -> None:
        if size > self._groups.shape[0]:
            grown = np.zeros(max(size, int(self._groups.shape[0] * 1.25)), np.uint32)
            grown[: self._groups_read] = self._groups[: self._groups_read]
            self._groups = grown

    def warm_up(self) -> None:
        """Compile the kernels, read the group labels (MinHash) and fault every page of the
        tables in, so that the first requests do not pay for it. O(table bytes)."""
        self.stored(self.prepare(["warm up the text kernels"], None))
        if self.minhash:
            self.group_labels(np.array([max(self.tables.size - 1, 0)]))
        # One element per 4 KiB page faults every page of the tables in.
        if self.tables.keys.size:
            int(self.tables.keys[:, ::1024].sum()) + int(self.tables.rows[:, ::1024].sum())

    def summaries(self, size: int) -> dict[str, np.ndarray] | None:
        """MinHash: what the verifier knows of positions ``0..size-1``, to cache with the
        tables (:meth:`~neardup.index.verifier.CandidateVerifier.summaries`); SimHash: None."""
        return self.verifier.summaries(size) if self.minhash else None

    def load_summaries(self, summaries: dict[str, Any]) -> None:
        """Take the summaries cached with the tables, if any. O(positions)."""
        if self.minhash and "sizes" in summaries:
            self.verifier.load_summaries(
                summaries["sizes"], summaries.get("sketches"), summaries.get("counts")
            )

    def cached(self, generation: Path) -> None:
        """After the tables were cached in the directory ``generation``: read the count
        sketches learnt since the last cache from it instead of memory. O(1)."""
        if self.minhash:
            self.verifier.map_counts(mapped_counts(generation))

    def forget_groups(self) -> None:
        """Read the group labels again when next needed: call it after removals, which may
        split groups. O(1)."""
        self._groups_read = 0

    def _minhash_column(self, column: str, positions: np.ndarray) -> Any:
        """A column of the ``minhash`` rows of ``positions``, in their order: ``units`` (as
        ``int64``) or ``text`` (the compressed blobs). O(log n) each."""
        if positions.size == 0:
            return np.zeros(0, np.int64) if column == "units" else []
        rows = self.conn.execute(
            f"SELECT pos, {column} FROM minhash WHERE pos IN (SELECT value FROM json_each(?))",
            (json_list(positions),),
        ).fetchall()
        if len(rows) != positions.size:
            self._disagree(f"{positions.size - len(rows)} candidate positions have no stored text")
        by_pos = dict(rows)
        values = [by_pos[int(p)] for p in positions]
        return np.array(values, np.int64) if column == "units" else values

    def stored_texts(self, positions: np.ndarray) -> list[str]:
        """The stored texts of ``positions``, in their order, each checked against its
        checksum (:func:`~neardup.index.storage.stored_texts`). O(log n + bytes) each."""
        blobs = self._minhash_column("text", positions)
        return stored_texts(blobs, positions.tolist(), self.path / DB_NAME)

    def _disagree(self, what: str) -> NoReturn:
        raise IndexDamagedError(
            f"index {self.path}: {what} (tables and records disagree); run `neardup index check "
            f"-d {self.path}`"
        )

    # ------------------------------------------------------------------ describing

    def results(
        self,
        probes: Probes,
        hamming_k: int | None,
        limit: int,
        ids: list[str] | None,
        count_all: bool = False,
    ) -> list[QueryResult]:
        """The :class:`~neardup.index.results.QueryResult` of each probe (``ids`` echoed);
        ``count_all``: every MinHash candidate verified (see :meth:`stored`)."""
        results = []
        parts, complete = self.stored(probes, hamming_k, None if count_all else limit)
        for i, (p, d) in enumerate(parts):
            fp = int(probes.fps[i])
            ident = None if ids is None else ids[i]
            if p.size == 0:
                results.append(QueryResult(fp, "new", None, None, 0, (), ident))
                continue
            if p.size <= _FETCH_ALL:
                best, top = self.small_match_set(p, d, limit)
            else:
                groups = self.group_info(p)
                best = min(((g[3], g[1]), g[2]) for g in groups.values())[1]
                top = (
                    self.ranked_top(p, d, limit) if self.minhash else self.top_matches(p, d, limit)
                )
            matches = tuple(self.match(mid, dd, orig) for dd, mid, _, orig in top)
            results.append(
                QueryResult(
                    fp, "duplicate", best, best, int(p.size), matches, ident, bool(complete[i])
                )
            )
        return results

    def match(self, ident: str, rank: float, original_id: str) -> Match:
        """A :class:`~neardup.index.results.Match` from its rank."""
        if self.minhash:
            return Match(ident, None, original_id, original_id, -float(rank))
        return Match(ident, int(rank), original_id, original_id)

    def small_match_set(self, pos: np.ndarray, dist: np.ndarray, limit: int) -> tuple[str, list]:
        """For a few matches, in one SQLite round trip: the earliest original among their
        groups, and the first ``limit`` matches by (rank, ID) as (rank, id, position,
        original_id)."""
        rows = grouped_rows(self.conn, "d.pos, d.id, o.id, o.timestamp, g.original", pos)
        if len(rows) != pos.size:
            self._disagree(f"{pos.size - len(rows)} matched positions are not in the records")
        best = min(rows, key=lambda r: (r[3], r[4]))[2]
        distance = dict(zip(pos.tolist(), dist.tolist()))
        top = sorted((distance[r[0]], r[1], r[0], r[2]) for r in rows)[:limit]
        return best, top

    def _reps(self, positions: np.ndarray) -> np.ndarray:
        """One position per distinct fingerprint among ``positions`` (identical SimHash
        fingerprints are always in one group); MinHash: the distinct positions."""
        if positions.size <= 1:
            return positions
        if self.minhash:
            return sorted_distinct(positions)
        _, first = np.unique(self.tables.fps[positions], return_index=True)
        return positions[first]

    def group_info(self, positions: np.ndarray) -> dict[int, tuple]:
        """For one position per distinct matched fingerprint: (gid, original position,
        original ID, original timestamp, size). Each group is read once, however many of the
        positions it holds (a popular template's thousands of matches share one): O(log n) per
        position and per group."""
        if positions.size == 0:
            return {}
        reps = self._reps(positions)
        snapshot = nullcontext() if self.conn.in_transaction else read_snapshot(self.conn)
        with snapshot:
            doc_gid = dict(
                self.conn.execute(
                    "SELECT pos, gid FROM docs WHERE pos IN (SELECT value FROM json_each(?))",
                    (json_list(reps),),
                ).fetchall()
            )
            groups = {
                r[0]: r[1:]
                for r in self.conn.execute(
                    "SELECT g.gid, g.original, o.id, o.timestamp, g.size FROM groups g JOIN docs o "
                    "ON o.pos = g.original WHERE g.gid IN (SELECT value FROM json_each(?))",
                    (json_list(set(doc_gid.values())),),
                )
            }
        missing = [int(p) for p in reps if doc_gid.get(int(p)) not in groups]
        if missing:
            self._disagree(f"positions {missing[:5]} are in the tables but not in the records")
        return {p: (g, *groups[g]) for p, g in doc_gid.items()}

    def ranked_top(self, pos: np.ndarray, rank: np.ndarray, limit: int) -> list[tuple]:
        """The first ``limit`` matches by (rank, ID) as (rank, id, position, original_id),
        as :meth:`small_match_set` lists them, reading the IDs of only the matches ranked as
        high as the ``limit``-th (all of them on a tie). O(m) plus O(log n) per match read."""
        if limit == 0 or pos.size == 0:
            return []
        k = min(limit, pos.size) - 1
        near = rank <= np.partition(rank, k)[k]
        rows = grouped_rows(self.conn, _NAMES, pos[near])
        if len(rows) != int(np.count_nonzero(near)):
            self._disagree("matched positions are not in the records")
        distance = dict(zip(pos[near].tolist(), rank[near].tolist()))
        return sorted((distance[r[0]], r[1], r[0], r[2]) for r in rows)[:limit]

    def top_matches(self, pos: np.ndarray, dist: np.ndarray, limit: int) -> list[tuple]:
        """The first ``limit`` matches by (distance, ID) as (distance, id, position,
        original_id). Fetches the IDs of a whole distance level when it is small; a large level
        (a skewed template) is read per distinct fingerprint through the (fingerprint, id)
        index, ``limit`` rows each."""
        out: list[tuple] = []
        if limit == 0 or pos.size == 0:
            return out
        for d in np.unique(dist):
            need = limit - len(out)
            rows = sorted(self._level_names(pos[dist == d], need))
            out.extend((int(d), r[0], r[1], r[2]) for r in rows[:need])
            if len(out) >= limit:
                break
        return out

    def _level_names(self, level: np.ndarray, need: int) -> list[tuple]:
        """(id, position, original_id) of the matches at one distance, all of them or, for a
        large level of few distinct fingerprints, at least the first ``need`` by ID."""
        values = None
        if level.size > _FETCH_ALL:
            values = sorted_distinct(self.tables.fps[level], in_place=True)
            if values.size > _FETCH_ALL:
                values = None
        if values is None:
            return [(r[1], r[0], r[2]) for r in grouped_rows(self.conn, _NAMES, level)]
        alive, size = self.tables.alive, self.tables.size
        rows: list[tuple] = []
        for v in values.tolist():
            got = self.conn.execute(
                f"SELECT {_NAMES} {GROUPED}WHERE d.fingerprint = ? ORDER BY d.id LIMIT ?",
                (signed(v), need + 8),
            ).fetchall()
            rows.extend((r[1], r[0], r[2]) for r in got if r[0] < size and alive[r[0]])
        return rows
