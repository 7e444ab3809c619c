"""The write side of an index: the groups of ``neardup dedup --grouping components``, kept up to
date as documents are added and removed.

The index always holds the groups of ``neardup dedup --grouping components`` with its settings
for the documents it currently contains (``build`` runs :func:`neardup.pipeline.find_groups`
itself; adds and removals keep the components of the same relation). The rules are the same for
both methods (one implementation: the method only decides which pairs match, in
:func:`neighbourhood` and :func:`regroup`; :func:`group_batch` and :func:`regroup` do the rest):

- SimHash: two documents are near-duplicates when their fingerprints differ in at most
  ``hamming_k`` bits. MinHash: when they agree on a whole LSH band and pass verification
  (:func:`neardup.index.minhash.pair_similarity`). Groups are the connected components of that
  relation (transitive, like ``dedup``). ``dedup`` links each band bucket to its earliest member
  only ("star" candidates, :mod:`neardup.candidates.bands`) before verifying, while the index
  verifies every stored candidate. When a bucket's earliest member fails against two members
  that pass together, the star edges alone lose that pair; ``dedup`` then verifies the pairs of
  the bucket's other members that lie in different components
  (:mod:`neardup.candidates.repair`), which gives the components of verifying every pair of
  every bucket, so the two agree. Only a bucket of more than
  :data:`neardup.candidates.repair.BUCKET_MEMBERS` members besides its earliest is not
  repaired; ``dedup`` counts its pairs (``repair_unlisted``, "bucket pairs not examined
  (cap)"), and the two may differ only when that count is not 0.
- The **original** of a group is its earliest document: smallest timestamp, ties broken by the
  smaller position (insertion order, which is input order for ``build``, as in ``dedup``). The
  group's **duplicate ID** is the original's ID, so ``duplicate_id == original_id``, exactly as
  ``dedup`` writes them.
- A new document that matches nothing starts a group (status ``new``). One that matches stored
  documents (status ``duplicate``) joins their group; if its matches lie in *several* groups,
  the document bridges them and those groups **merge** into one, whose original is the earliest
  of their originals and the new document.
- A document that arrives late with an *older* timestamp than its group's original becomes the
  group's new original, and the duplicate ID of **every** member changes to its ID. Records are
  not rewritten for that: each record points at its group row (``gid``) and the group row names
  the original, so moving the original is one row update and readers see the new duplicate ID
  at once.
- Removing a document re-checks its group: if it was the original, the next earliest member
  becomes the original; if it was the only link between parts of the group, the group splits
  into its new components (each with its own earliest original). Cost O(group size).
- Hence a ``build`` from a corpus and ``dedup --grouping components`` on that corpus with the
  same settings agree exactly (``build`` runs :func:`neardup.pipeline.find_groups`), and so do
  adds in any order and removals: the result never depends on the order documents arrived in,
  except through positions breaking timestamp ties.

:func:`add_batch` adds a batch in one transaction, decided before anything is written:
:func:`neighbourhood` reads what its documents match (stored documents, and each other),
:func:`group_batch` takes the documents in order, each seeing the ones before it, and
:func:`write_batch` stores the outcome. :func:`remove_ids` removes documents and re-checks
their groups (:func:`regroup`).
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from neardup.candidates.tables import collapse_identical
from neardup.eojeol import eojeol_rows
from neardup.groups import connected_components, find_root
from neardup.index.errors import DocumentExistsError
from neardup.index.matches import Matcher, Probes, split_by_query
from neardup.index.minhash import (
    band_pairs,
    encode_texts,
    pair_similarity,
    size_bound,
    verification_data,
    verify_threshold,
)
from neardup.index.results import AddResult
from neardup.index.sorted_rows import MAX_POSITION
from neardup.index.storage import (
    RECORD_SQL,
    bump_counts,
    json_list,
    key_blobs,
    keys_of_blobs,
    record_of,
    signed,
    stored_texts,
    write_transaction,
)
from neardup.index.tables import close_pairs
from neardup.settings import Settings

__all__ = [
    "BatchGroups",
    "GroupState",
    "Neighbourhood",
    "add_batch",
    "group_batch",
    "neighbourhood",
    "regroup",
    "remove_ids",
    "write_batch",
    "write_removal",
]


@dataclass
class GroupState:
    """A group during a write transaction."""

    original: int
    original_ts: int
    original_id: str
    size: int
    stored: bool  # has a row in SQLite (else created in this transaction)


@dataclass
class Neighbourhood:
    """What the documents of a batch match, read before anything is written, per *unit* (a
    distinct SimHash fingerprint, or one MinHash document): ``inverse`` maps each document to
    its unit. The stored groups touched are ``gids`` (ascending) with their ``groups``; per
    unit, ``stored_count`` stored matches in the groups ``stored_groups`` (indices into
    ``gids``), ``nbr`` the other units of the batch it matches, with their rank (distance, or
    minus the similarity), ``stored_top`` the first ``limit`` stored matches as (rank, id,
    position, original id), and ``stored_exact`` whether ``stored_count`` counts them all
    (see :meth:`Matcher.stored`)."""

    inverse: np.ndarray
    gids: list[int]
    groups: list[GroupState]
    stored_count: list[int]
    stored_groups: list[set[int]]
    nbr: list[list[tuple[int, Any]]]
    stored_top: list[list[tuple]]
    stored_exact: np.ndarray


@dataclass
class BatchGroups:
    """What :func:`group_batch` decided: the ``results``, each document's final group
    ``doc_gids``, the ``groups`` that remain (gid → state), the stored groups ``merged`` into
    another (gid → the gid it joined) and the change in the number of groups."""

    results: list[AddResult]
    doc_gids: list[int]
    groups: dict[int, GroupState]
    merged: dict[int, int]
    group_delta: int


# --------------------------------------------------------------------------------------------
# Reading what a batch matches
# --------------------------------------------------------------------------------------------


def neighbourhood(matcher: Matcher, batch: Probes, limit: int) -> Neighbourhood:
    """Everything a batch needs from the stored documents and from itself, with the
    near-duplicate relation of the index's method. Complexity: one probe per unit, plus the
    pairs inside the batch (SimHash: O(b²) comparisons up to 2,048 distinct fingerprints,
    tables above; MinHash: band pairs, each verified)."""
    if matcher.minhash:
        return _minhash_neighbourhood(matcher, batch, limit)
    return _simhash_neighbourhood(matcher, batch.fps, limit)


def _simhash_neighbourhood(matcher: Matcher, fps: np.ndarray, limit: int) -> Neighbourhood:
    """SimHash: the units are the batch's distinct fingerprints (identical ones always match
    the same documents); matches are within ``hamming_k`` bits."""
    k = matcher.settings.hamming_k
    values, inverse, _ = collapse_identical(fps)
    nv = values.shape[0]
    sq, spos, sdist = matcher.tables.probe(values, k)
    stored = split_by_query(sq, spos, sdist, nv)
    info = matcher.group_info(spos)
    tables_fps = matcher.tables.fps
    rep_by_fp = {int(tables_fps[p]): p for p in info}  # one stored position per value
    stored_gids = [
        {info[rep_by_fp[v]][0] for v in set(tables_fps[p].tolist())} if p.size else set()
        for p, _d in stored
    ]
    # Matches inside the batch, between distinct values (a value always matches itself).
    pairs = close_pairs(values, k)
    top = [matcher.top_matches(p, d, limit) for p, d in stored]
    return _neighbourhood(inverse, stored, info, stored_gids, pairs, top, np.ones(nv, bool))


def _minhash_neighbourhood(matcher: Matcher, batch: Probes, limit: int) -> Neighbourhood:
    """MinHash: every document is its own unit; matches are band candidates that pass the
    index's verification, stored ones (:meth:`Matcher.stored`) and inside the batch."""
    settings = matcher.settings
    stored, exact = matcher.stored(batch, enough=limit)
    spos = np.concatenate([p for p, _ in stored])
    info = matcher.group_info(spos)
    stored_gids = [{info[q][0] for q in p.tolist()} for p, _ in stored]
    ca, cb = band_pairs(batch.keys)
    sizes = batch.sizes
    fit = size_bound(sizes[ca], sizes[cb], settings)
    verification = settings.verification
    if verification is not None and verification.measure == "lcs":
        # Korean pairs are measured in eojeol, which the sizes do not bound.
        korean = eojeol_rows(*batch.data)
        fit |= korean[ca] & korean[cb]
    ca, cb = ca[fit], cb[fit]
    sim = pair_similarity(*batch.data, ca, cb, settings)
    ok = sim >= verify_threshold(settings)
    top = [matcher.ranked_top(p, d, limit) for p, d in stored]
    return _neighbourhood(
        np.arange(len(batch)), stored, info, stored_gids, (ca[ok], cb[ok], -sim[ok]), top, exact
    )


def _neighbourhood(
    inverse: np.ndarray,
    stored: list,
    info: dict,
    stored_gids: list,
    pairs: tuple,
    stored_top: list,
    stored_exact: np.ndarray,
) -> Neighbourhood:
    """The method-independent part: the stored groups touched and the batch's own pairs as
    adjacency lists."""
    states: dict[int, GroupState] = {}
    for g in info.values():
        states.setdefault(g[0], GroupState(g[1], g[3], g[2], g[4], True))
    gids = sorted(states)
    index = {gid: i for i, gid in enumerate(gids)}
    nbr: list[list[tuple[int, Any]]] = [[] for _ in range(len(stored))]
    for a, c, d in zip(*(x.tolist() for x in pairs)):
        nbr[a].append((c, d))
        nbr[c].append((a, d))
    return Neighbourhood(
        inverse,
        gids,
        [states[g] for g in gids],
        [int(p.size) for p, _ in stored],
        [{index[g] for g in unit} for unit in stored_gids],
        nbr,
        stored_top,
        stored_exact,
    )


# --------------------------------------------------------------------------------------------
# Deciding a batch
# --------------------------------------------------------------------------------------------


class _Grouping:
    """The groups while a batch is taken document by document. Groups are numbered: first the
    stored ones touched (``hood.gids`` order), then one per document of the batch, for the
    group it would start, so that the numbers sort as the gids do (a new group's gid is its
    first document's position, above every stored one). Merged groups are linked in a
    union-find forest (:func:`neardup.groups.find_root`) and their states dropped."""

    def __init__(self, hood: Neighbourhood, base: int, size: int) -> None:
        self.hood = hood
        self.base = base
        self.stored = len(hood.gids)
        self.parent = np.arange(self.stored + size, dtype=np.int64)
        self.states: list[GroupState | None] = list(hood.groups) + [None] * size
        units = len(hood.stored_count)
        self.first_doc = np.full(units, -1, np.int64)  # each unit's first document
        self.doc_group = np.zeros(size, np.int64)

    def gid(self, group: int) -> int:
        """The gid of group number ``group``."""
        return self.hood.gids[group] if group < self.stored else self.base + group - self.stored

    def find(self, group: int) -> int:
        return int(find_root(self.parent, group))

    def met(self, j: int, unit: int) -> set[int]:
        """The groups (roots) that document ``j`` of unit ``unit`` matches."""
        if self.first_doc[unit] >= 0:
            # Its unit's first document has joined everything the unit matches.
            return {self.find(self.doc_group[self.first_doc[unit]])}
        roots = {self.find(g) for g in self.hood.stored_groups[unit]}
        for other, _rank in self.hood.nbr[unit]:
            if self.first_doc[other] >= 0:
                roots.add(self.find(self.doc_group[self.first_doc[other]]))
        self.first_doc[unit] = j
        return roots

    def join(self, j: int, roots: set[int], ts: int, ident: str) -> GroupState:
        """Put document ``j`` (timestamp ``ts``) into the groups ``roots``, merged into the
        largest (on a tie, the smallest gid), or into a new group without any."""
        pos = self.base + j
        if not roots:
            group = self.stored + j
            self.states[group] = GroupState(pos, ts, ident, 1, False)
            self.doc_group[j] = group
            return self.states[group]
        ordered = sorted(roots, key=lambda g: (-self.states[g].size, g))
        keep = self.states[ordered[0]]
        for other in ordered[1:]:
            s = self.states[other]
            self.states[other] = None
            self.parent[other] = ordered[0]
            keep.size += s.size
            if (s.original_ts, s.original) < (keep.original_ts, keep.original):
                keep.original, keep.original_ts, keep.original_id = (
                    s.original,
                    s.original_ts,
                    s.original_id,
                )
        keep.size += 1
        if (ts, pos) < (keep.original_ts, keep.original):
            keep.original, keep.original_ts, keep.original_id = pos, ts, ident
        self.doc_group[j] = ordered[0]
        return keep

    def outcome(self, results: list[AddResult]) -> BatchGroups:
        """The final groups, once every document is placed."""
        groups = {self.gid(g): s for g, s in enumerate(self.states) if s is not None}
        merged = {
            self.gid(g): self.gid(self.find(g))
            for g in range(self.stored)
            if self.states[g] is None
        }
        created = sum(1 for s in groups.values() if not s.stored)
        return BatchGroups(
            results,
            [self.gid(self.find(g)) for g in self.doc_group],
            groups,
            merged,
            created - len(merged),
        )


def group_batch(
    matcher: Matcher,
    hood: Neighbourhood,
    ids: list[str],
    fps: np.ndarray,
    stamps: np.ndarray,
    base: int,
    limit: int,
) -> BatchGroups:
    """Take the documents of a batch in order (positions ``base``, ``base + 1``, ...), each
    joining, merging or starting groups as the rules say and seeing the documents before it.
    Each result describes its document's group right after it was added, with its first
    ``limit`` matches (named by ``matcher``). O(b · limit) plus the merges.

    Example:
        >>> import tempfile
        >>> from neardup.index.store import NearDupIndex
        >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx", hamming_k=1) as index:
        ...     rs = index.add_many(["a", "b", "c"], fingerprints=[0, 3, 1])  # c bridges a, b
        >>> [(r.status, r.duplicate_id, r.group_size) for r in rs]
        [('new', 'a', 1), ('new', 'b', 1), ('duplicate', 'a', 3)]
    """
    grouping = _Grouping(hood, base, len(ids))
    units = len(hood.stored_count)
    seen_ids: list[list[str]] = [[] for _ in range(units)]  # first `limit` IDs by unit
    seen_count = np.zeros(units, np.int64)
    same_rank = -1.0 if matcher.minhash else 0  # an identical document: similarity 1, distance 0
    match = matcher.match
    results = []
    for j, ident in enumerate(ids):
        unit = int(hood.inverse[j])
        roots = grouping.met(j, unit)
        match_count = (
            hood.stored_count[unit]
            + int(seen_count[unit])
            + sum(int(seen_count[w]) for w, _ in hood.nbr[unit])
        )
        status = "duplicate" if roots and match_count else "new"
        g = grouping.join(j, roots, int(stamps[j]), ident)
        # Matches: stored ones (as of the batch start) and earlier documents of the batch.
        candidates = [(d, mid) for d, mid, _, _ in hood.stored_top[unit]]
        candidates.extend((same_rank, mid) for mid in seen_ids[unit])
        for w, d in hood.nbr[unit]:
            candidates.extend((d, mid) for mid in seen_ids[w])
        candidates.sort()
        matches = tuple(match(mid, d, g.original_id) for d, mid in candidates[:limit])
        results.append(
            AddResult(
                ident,
                status,
                int(fps[j]),
                g.original_id,
                g.original_id,
                g.original == base + j,
                g.size,
                match_count,
                matches,
                bool(hood.stored_exact[unit]),
            )
        )
        if limit:
            bisect.insort(seen_ids[unit], ident)
            if len(seen_ids[unit]) > limit:
                seen_ids[unit].pop()
        seen_count[unit] += 1
    return grouping.outcome(results)


# --------------------------------------------------------------------------------------------
# Adding
# --------------------------------------------------------------------------------------------


def add_batch(
    matcher: Matcher,
    ids: list[str],
    probes: Probes,
    stamps: np.ndarray,
    if_exists: str,
    limit: int,
    max_pos: int,
) -> tuple[list[AddResult], int]:
    """Add checked documents (unique ``ids``, their ``probes`` and ``stamps``) after position
    ``max_pos`` in one transaction: the IDs already stored are refused or skipped
    (``if_exists``), the others grouped in order (:func:`group_batch`), written
    (:func:`write_batch`) and put in the tables. Returns the results, in the order of ``ids``,
    and how many documents were added.

    Complexity: one probe per unit, the pairs inside the batch, O(b) SQLite writes, plus
    O(size of the smaller groups) per merge.
    """
    results, todo = _existing_results(matcher.conn, ids, if_exists)
    if not todo:
        return results, 0
    batch = probes.take(todo)
    b = len(todo)
    if max_pos + b > MAX_POSITION:
        raise ValueError(f"an index holds at most {MAX_POSITION} positions")
    b_ids = [ids[i] for i in todo]
    b_ts = stamps[todo]
    base = max_pos + 1
    grouped = group_batch(
        matcher, neighbourhood(matcher, batch, limit), b_ids, batch.fps, b_ts, base, limit
    )
    conn = matcher.conn
    with write_transaction(conn):
        last = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'docs'").fetchone()
        if (int(last[0]) if last else 0) != max_pos:
            raise RuntimeError(
                f"index {matcher.path} was written by another process while open for writing"
            )
        write_batch(conn, base, b_ids, batch, b_ts, grouped)
    positions = np.arange(base, base + b, dtype=np.int64)
    matcher.tables.add(positions, batch.fps if batch.keys is None else batch.keys)
    if batch.keys is not None:
        # After the commit: a rolled-back batch must leave nothing known of its positions.
        matcher.verifier.record(positions, batch.data)
    for i, result in zip(todo, grouped.results):
        results[i] = result
    return results, b


def _existing_results(
    conn: sqlite3.Connection, ids: list[str], if_exists: str
) -> tuple[list[AddResult | None], list[int]]:
    """The results of the IDs already stored (status ``exists``; or
    :class:`~neardup.index.errors.DocumentExistsError` with ``if_exists="error"``) and the
    indices of the others, to add."""
    rows = conn.execute(
        RECORD_SQL + "WHERE d.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
    ).fetchall()
    existing = {r[0]: record_of(r) for r in rows}
    if existing and if_exists == "error":
        first = next(i for i in ids if i in existing)
        more = f" (and {len(existing) - 1} more of this batch)" if len(existing) > 1 else ""
        raise DocumentExistsError(
            f"document id {first!r} is already in the index{more}; nothing was added "
            "(--if-exists skip, if_exists='skip' in Python, adds the others)"
        )
    results: list[AddResult | None] = [None] * len(ids)
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
    return results, [i for i, r in enumerate(results) if r is None]


def write_batch(
    conn: sqlite3.Connection,
    base: int,
    ids: list[str],
    batch: Probes,
    stamps: np.ndarray,
    grouped: BatchGroups,
) -> None:
    """Store a decided batch (inside the open write transaction): its documents at positions
    ``base``, ``base + 1``, ... (MinHash: with their band keys, data sizes and texts), the
    merged groups folded into the groups they joined, and the rows of the remaining groups.
    O(b) inserts plus O(members) updates per merged group."""
    b = len(ids)
    conn.executemany(
        "INSERT INTO docs (pos, id, fingerprint, timestamp, gid) VALUES (?, ?, ?, ?, ?)",
        [
            (base + j, ids[j], signed(int(batch.fps[j])), int(stamps[j]), grouped.doc_gids[j])
            for j in range(b)
        ],
    )
    if batch.keys is not None:
        conn.executemany(
            "INSERT INTO minhash (pos, keys, units, text) VALUES (?, ?, ?, ?)",
            zip(
                range(base, base + b),
                key_blobs(batch.keys),
                batch.sizes.tolist(),
                encode_texts(batch.texts),
            ),
        )
    for old, new in grouped.merged.items():
        conn.execute("UPDATE docs SET gid = ? WHERE gid = ?", (new, old))
        conn.execute("DELETE FROM groups WHERE gid = ?", (old,))
    conn.executemany(
        "INSERT OR REPLACE INTO groups (gid, original, size) VALUES (?, ?, ?)",
        [(gid, s.original, s.size) for gid, s in grouped.groups.items()],
    )
    bump_counts(conn, b, grouped.group_delta)


# --------------------------------------------------------------------------------------------
# Removing
# --------------------------------------------------------------------------------------------


def remove_ids(matcher: Matcher, ids: list[str]) -> tuple[int, int]:
    """Remove the stored documents among ``ids`` in one transaction (:func:`write_removal`)
    and from the tables. Returns how many were stored and the sequence number of the last
    removal logged (0 when none was stored). O(b log n + Σ affected group sizes)."""
    conn = matcher.conn
    rows = conn.execute(
        "SELECT pos, gid FROM docs WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    ).fetchall()
    if not rows:
        return 0, 0
    positions = [r[0] for r in rows]
    with write_transaction(conn):
        tomb_seq = write_removal(conn, matcher.settings, positions, sorted({r[1] for r in rows}))
    matcher.tables.discard(np.array(positions, np.int64))
    return len(positions), tomb_seq


def regroup(conn: sqlite3.Connection, settings: Settings, gid: int) -> int:
    """Recompute the components of group ``gid`` after removals (inside the open write
    transaction): a new original, or a split into components each named by its smallest
    position. Returns the change in the number of groups. O(group size) reads, plus the
    pairs of its members (:func:`_member_components`)."""
    members = conn.execute(
        "SELECT pos, fingerprint, timestamp FROM docs WHERE gid = ? ORDER BY timestamp, pos",
        (gid,),
    ).fetchall()
    if not members:
        conn.execute("DELETE FROM groups WHERE gid = ?", (gid,))
        return -1
    arr = np.array(members, dtype=np.int64)
    pos = arr[:, 0]
    labels = _member_components(conn, settings, pos, arr[:, 1].view(np.uint64))
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
            (new_gid, json_list(part)),
        )
        conn.execute(
            "INSERT INTO groups (gid, original, size) VALUES (?, ?, ?)",
            (new_gid, int(pos[label_first]), int(count)),
        )
    return first.shape[0] - 1


def _member_components(
    conn: sqlite3.Connection, settings: Settings, pos: np.ndarray, fps: np.ndarray
) -> np.ndarray:
    """The component label of each of the documents ``pos`` (with fingerprints ``fps``) under
    the index's near-duplicate relation. SimHash: O(m²) comparisons of distinct fingerprints
    up to 2,048, tables above; MinHash: band pairs of the members, each verified on the stored
    texts."""
    if settings.method == "minhash":
        rows = conn.execute(
            "SELECT pos, keys, text FROM minhash WHERE pos IN (SELECT value FROM json_each(?))",
            (json_list(pos),),
        ).fetchall()
        by_pos = {r[0]: r for r in rows}
        members = [by_pos[int(p)] for p in pos]
        keys = keys_of_blobs([r[1] for r in members], settings.bands)
        a, b = band_pairs(keys)
        db = Path(conn.execute("PRAGMA database_list").fetchone()[2])
        texts = stored_texts([r[2] for r in members], [r[0] for r in members], db)
        data = verification_data(texts, settings)
        sim = pair_similarity(*data, a, b, settings)
        ok = sim >= verify_threshold(settings)
        return connected_components(pos.shape[0], a[ok], b[ok])
    values, inverse, _ = collapse_identical(fps)
    if values.shape[0] == 1:
        return np.zeros(pos.shape[0], np.int64)
    a, b, _ = close_pairs(values, settings.hamming_k)
    return connected_components(values.shape[0], a, b)[inverse]


def write_removal(
    conn: sqlite3.Connection, settings: Settings, positions: list[int], gids: list[int]
) -> int:
    """Remove the documents at ``positions`` from the groups ``gids`` (inside the open write
    transaction), log them for readers in other processes and re-check each group once
    (:func:`regroup`). Returns the sequence number of the last removal logged.
    O(b log n + Σ group sizes)."""
    for table in ("docs", "minhash") if settings.method == "minhash" else ("docs",):
        conn.execute(
            f"DELETE FROM {table} WHERE pos IN (SELECT value FROM json_each(?))",
            (json_list(positions),),
        )
    conn.executemany("INSERT INTO tombstones (pos) VALUES (?)", [(p,) for p in positions])
    group_delta = 0
    for gid in gids:
        group_delta += regroup(conn, settings, gid)
    bump_counts(conn, -len(positions), group_delta)
    tomb = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tombstones'").fetchone()
    return int(tomb[0])
