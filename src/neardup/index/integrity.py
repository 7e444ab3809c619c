"""``neardup index check`` and ``neardup index recover``: the full check of an index directory,
and a new index from the records of a damaged one.

What the index guards on its own is described where it is done: the cached tables are
checksummed and verified before use (:mod:`neardup.index.cache`), the database gets a quick
check at every open unless it is as a writer left it on a clean close, and SQLite errors
become one-line errors (:mod:`neardup.index.storage`).
This module goes further, on demand: :func:`check_index` runs SQLite's full
``PRAGMA integrity_check`` (which also finds a changed byte inside a record, since every column
of ``docs`` is also in one of its indexes) and compares the records' own consistency and the
in-memory tables with the records; :func:`recover_index` builds a new index from every row
SQLite can still read.

Example:
    >>> import tempfile
    >>> import numpy as np
    >>> from neardup.index.store import NearDupIndex
    >>> path = tempfile.mkdtemp() + "/idx"
    >>> NearDupIndex.build(path, ["a", "b"], fingerprints=np.array([1, 2], np.uint64)).close()
    >>> report = check_index(path)
    >>> report["ok"], report["documents"], report["groups"]
    (True, 2, 1)
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from neardup.candidates.radix import sorted_distinct
from neardup.ids import id_problem
from neardup.index.cache import MANIFEST_NAME, lost_writes, verify_files
from neardup.index.errors import IndexDamagedError
from neardup.index.minhash import decode_text, has_checksum
from neardup.index.settings import settings_from_meta, settings_keywords
from neardup.index.storage import DB_NAME, keys_of_blobs, repair_hint, sql_state, sqlite_error
from neardup.index.store import NearDupIndex

__all__ = ["check_index", "recover_index"]


def _readonly_connection(db: Path) -> sqlite3.Connection:
    # Barer than storage.connect: no pragma that reads the file, so that a damaged database
    # still opens and each check reports what it finds.
    if not db.is_file():
        raise FileNotFoundError(f"no index database at {db}")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def check_index(path: str | os.PathLike, *, max_problems: int = 100) -> dict[str, Any]:
    """The full check of ``neardup index check``: SQLite's ``integrity_check``, then (if it
    passes) the records' own consistency and the in-memory tables against the records.

    Checks, in order:
        1. ``PRAGMA integrity_check``: pages, b-trees, and every index entry against its row.
        2. Counters: ``meta.documents`` / ``meta.groups`` against the rows.
        3. Groups: every group's size is its member count, its original is a member and the
           earliest one (timestamp, then position); every document's group exists.
        4. Tables: the index opened read-only (cache checksums verified, or rebuilt): its live
           positions and fingerprints (MinHash: stored band keys and texts) equal the
           records', and every sorted table holds exactly the live positions under their
           keys, in order; MinHash: the cached sizes and sketches agree with the texts.

    Returns:
        ``{"ok": bool, "problems": [str, ...], "documents": int, "groups": int, "tables": str,
        "seconds": float}``; ``tables`` says whether the cached tables were used or had to be
        rebuilt (and why).

    Complexity: O(database size) for step 1, O(n log n) SQLite work for 2-3, O(T · n) for 4.
    """
    started = time.perf_counter()
    path = Path(path)
    db = path / DB_NAME
    report: dict[str, Any] = {
        "ok": False,
        "problems": [],
        "documents": None,
        "groups": None,
        "tables": None,
        "seconds": 0.0,
    }
    problems: list[str] = report["problems"]
    try:
        conn = _readonly_connection(db)
    except sqlite3.Error as error:
        problems.append(str(sqlite_error(error, db)))
        return report
    try:
        _check_records(conn, db, report, max_problems)
    except sqlite3.Error as error:
        # A file SQLite reads without complaint can still lack the index's tables (an empty
        # or foreign database): a problem to report, not a crash.
        problems.append(f"{db}: {error}")
    finally:
        conn.close()
    if "_records" in report:  # the records could be read: compare the tables with them
        try:
            _check_tables(path, report)
        except IndexDamagedError as error:  # the records lack writes the tables hold
            problems.append(str(error))
    report["ok"] = not problems
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def _check_records(conn, db: Path, report: dict[str, Any], max_problems: int) -> None:
    """Steps 1-3 of :func:`check_index`; stores the records' positions and fingerprints in
    ``report`` (under private keys) for step 4."""
    problems: list[str] = report["problems"]
    try:
        rows = conn.execute(f"PRAGMA integrity_check({int(max_problems)})").fetchall()
        problems.extend(f"integrity_check: {r[0]}" for r in rows if r[0] != "ok")
    except sqlite3.DatabaseError as error:
        problems.append(f"integrity_check failed: {error}")
    if problems:
        problems.append(repair_hint(db))
        return
    documents = conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    groups = conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0]
    report["documents"], report["groups"] = documents, groups
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    for key, actual in (("documents", documents), ("groups", groups)):
        if str(meta.get(key)) != str(actual):
            problems.append(f"meta.{key} is {meta.get(key)!r}, the records have {actual}")
    for sql, what in (
        (
            "SELECT g.gid, g.size, COUNT(d.pos) FROM groups g LEFT JOIN docs d "
            "ON d.gid = g.gid GROUP BY g.gid HAVING COUNT(d.pos) != g.size LIMIT 10",
            "group {0} has size {1} but {2} members",
        ),
        (
            "SELECT d.pos, d.gid, 0 FROM docs d LEFT JOIN groups g ON g.gid = d.gid "
            "WHERE g.gid IS NULL LIMIT 10",
            "document at position {0} names group {1}, which does not exist",
        ),
        (
            "SELECT g.gid, g.original, 0 FROM groups g LEFT JOIN docs o ON o.pos = "
            "g.original WHERE o.pos IS NULL OR o.gid != g.gid LIMIT 10",
            "group {0}: its original (position {1}) is not one of its members",
        ),
        (
            "SELECT g.gid, g.original, (SELECT d.pos FROM docs d WHERE d.gid = g.gid "
            "ORDER BY d.timestamp, d.pos LIMIT 1) AS first FROM groups g "
            "WHERE first != g.original LIMIT 10",
            "group {0}: original is position {1} but the earliest member is {2}",
        ),
    ):
        problems.extend(what.format(*r) for r in conn.execute(sql).fetchall())
    positions, fps = [], []
    cur = conn.execute("SELECT pos, fingerprint FROM docs ORDER BY pos")
    while chunk := cur.fetchmany(262_144):
        arr = np.array(chunk, dtype=np.int64)
        positions.append(arr[:, 0])
        fps.append(arr[:, 1].view(np.uint64))
    report["_records"] = (
        np.concatenate(positions) if positions else np.zeros(0, np.int64),
        np.concatenate(fps) if fps else np.zeros(0, np.uint64),
    )


def _check_tables(path: Path, report: dict[str, Any]) -> None:
    """Step 4 of :func:`check_index`: the tables, as an index opened read-only holds them,
    against the records read in steps 1-3."""
    problems: list[str] = report["problems"]
    pos, values = report.pop("_records")
    with NearDupIndex(path, readonly=True) as index:
        info = index._open_info
        report["tables"] = f"{info.source} ({info.detail})"
        if info.source == "rebuilt" and not _rebuilt_by_design(path, info.detail):
            problems.append(
                f"the cached tables could not be used ({info.detail}); they were rebuilt "
                "from the records for this check, and a writer caches them again"
            )
        t = index._tables
        live = np.flatnonzero(t.alive[: t.size])
        if not np.array_equal(live, pos):
            missing = np.setdiff1d(pos, live)[:5].tolist()
            extra = np.setdiff1d(live, pos)[:5].tolist()
            problems.append(
                f"tables and records hold different positions (records only: "
                f"{missing}, tables only: {extra})"
            )
        elif index.method == "minhash":
            _check_band_tables(index, pos, problems)
        elif not np.array_equal(t.fps[pos], values):
            bad = pos[t.fps[pos] != values][:5].tolist()
            problems.append(f"tables and records differ in the fingerprints of positions {bad}")
        else:
            main = np.flatnonzero(t.alive[: t.size])
            # Both distinct: np.setdiff1d would otherwise make them so by numpy 2's slow
            # np.unique (seconds at millions of positions).
            in_delta = sorted_distinct(t.delta[: t.delta_len].astype(np.int64), in_place=True)
            main = np.setdiff1d(main, in_delta, assume_unique=True)
            main_keys = t.keys_of(t.fps[main])
            for k in range(t.plan.num_tables):
                rows = t.rows[k].astype(np.int64)
                rows = rows[t.alive[rows]]
                keys = t.keys[k][t.alive[t.rows[k]]]
                if not np.array_equal(np.sort(rows), main):
                    problems.append(f"table {k} does not hold exactly the live positions")
                    break
                order = np.lexsort((rows, keys))
                want = main_keys[k][np.searchsorted(main, rows)]
                if not (np.array_equal(order, np.arange(rows.size)) and np.array_equal(keys, want)):
                    problems.append(f"table {k} is not sorted by the keys of its fingerprints")
                    break


def _rebuilt_by_design(path: Path, detail: str) -> bool:
    """Whether tables rebuilt for the reason ``detail`` were so without damage: never cached
    (no manifest and no generation: a writer killed before its first close), or cached by
    another version of the format. Any other reason (a file missing, cut short or failing its
    checksum; a manifest gone beside its generation) is a problem of the cache."""
    if detail == "no cached tables":
        return not any(path.glob("tables-*"))
    return detail == "cache format differs"


def _check_band_tables(index, pos: np.ndarray, problems: list[str]) -> None:
    """Step 4 for a MinHash index: every live document has its stored band keys and text, and
    every band table holds exactly the live positions (outside the delta) under those keys,
    sorted. O(bands · n) plus reading the keys."""
    t = index._tables
    rows = index._conn.execute("SELECT pos, keys FROM minhash ORDER BY pos").fetchall()
    stored = np.array([r[0] for r in rows], np.int64)
    if not np.array_equal(stored, pos):
        missing = np.setdiff1d(pos, stored)[:5].tolist()
        problems.append(f"documents without stored band keys and text: positions {missing}")
        return
    keys = keys_of_blobs([r[1] for r in rows], index.settings.bands)
    in_delta = sorted_distinct(t.delta[: t.delta_len].astype(np.int64), in_place=True)
    main = np.setdiff1d(pos, in_delta, assume_unique=True)  # the stored positions: distinct
    in_main = np.isin(pos, main)
    for band in range(t.bands):
        table_rows = t.rows[band].astype(np.int64)
        keep = t.alive[table_rows]
        table_rows, table_keys = table_rows[keep], t.keys[band][keep]
        if not np.array_equal(np.sort(table_rows), main):
            problems.append(f"band table {band} does not hold exactly the live positions")
            return
        order = np.lexsort((table_rows, table_keys))
        want = keys[in_main, band][np.searchsorted(main, table_rows)]
        if not (
            np.array_equal(order, np.arange(table_rows.size)) and np.array_equal(table_keys, want)
        ):
            problems.append(f"band table {band} is not sorted by the stored band keys")
            return
    _check_summaries(index, pos, problems)


def _check_summaries(index, pos: np.ndarray, problems: list[str], chunk: int = 16_384) -> None:
    """Step 4 for a MinHash index, last: every stored text against its checksum, then the
    cached verification summaries (sizes, sketches, count sketches) against the texts, which
    they must never contradict (a wrong one could rule a true match out). O(total text)."""
    matcher = index._matcher
    bad: list[int] = []
    damaged: list[int] = []
    unchecked = 0
    for start in range(0, pos.shape[0], chunk):
        part = pos[start : start + chunk]
        blobs = matcher._minhash_column("text", part)
        texts: list[str] = []
        whole = np.ones(part.shape[0], bool)
        for i, blob in enumerate(blobs):
            unchecked += not has_checksum(blob)
            try:
                texts.append(decode_text(blob))
            except ValueError:
                whole[i] = False
                damaged.append(int(part[i]))
        if len(bad) < 5:
            bad += matcher.verifier.disagreements(part[whole], texts)[:5].tolist()
    if damaged:
        problems.append(
            f"the stored texts of positions {damaged[:5]}"
            f"{f' and {len(damaged) - 5} more' if len(damaged) > 5 else ''} are damaged "
            f"(their checksum fails, or they do not decompress); {repair_hint(index.path / DB_NAME)}"
        )
    if unchecked:
        problems.append(
            f"{unchecked} stored texts carry no checksum (they were stored before texts had "
            "one), so damage inside them cannot be detected; `neardup index recover -d "
            f"{index.path} --to NEW_DIR` builds an index whose texts all have one"
        )
    if bad:
        problems.append(
            f"the cached verification summaries of positions {bad[:5]} differ from their texts; "
            f"the cache is derived data: delete {index.path / 'tables.json'} to rebuild it"
        )


# --------------------------------------------------------------------------------------------
# Recovery
# --------------------------------------------------------------------------------------------


_RECOVER_SQL = {
    "simhash": "SELECT pos, id, fingerprint, timestamp FROM docs WHERE pos BETWEEN ? AND ? "
    "ORDER BY pos",
    # A MinHash index is rebuilt from the texts it kept (the fingerprint column is derived).
    "minhash": "SELECT d.pos, d.id, m.text, d.timestamp FROM docs d JOIN minhash m "
    "ON m.pos = d.pos WHERE d.pos BETWEEN ? AND ? ORDER BY d.pos",
}


def _read_range(conn, sql: str, lo: int, hi: int, out: list, lost: list[int]) -> None:
    """Append the readable rows of ``sql`` with positions in ``lo..hi`` to ``out``, halving a
    range that SQLite cannot read until single positions are left; those are counted in
    ``lost[0]``."""
    try:
        out.extend(conn.execute(sql, (lo, hi)).fetchall())
    except sqlite3.DatabaseError:
        if lo == hi:
            lost[0] += 1
            return
        mid = (lo + hi) // 2
        _read_range(conn, sql, lo, mid, out, lost)
        _read_range(conn, sql, mid + 1, hi, out, lost)


def _upper_position(conn) -> int:
    """The largest position that may hold a row, from the first source SQLite can read."""
    for sql in (
        "SELECT seq FROM sqlite_sequence WHERE name = 'docs'",
        "SELECT MAX(pos) FROM docs",
    ):
        try:
            row = conn.execute(sql).fetchone()
            if row and row[0] is not None:
                return int(row[0])
        except sqlite3.DatabaseError:
            continue
    # Every row takes at least a few bytes of a page: a bound on how many there can be.
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(size) // 8


def _readable_rows(db: Path) -> tuple[dict[str, Any], str | None, list[tuple], int]:
    """What :func:`recover_index` reads of the database ``db``: the settings (as keywords of
    ``NearDupIndex.build``), ``meta.documents`` (None if unreadable), every readable row
    ``(pos, id, fingerprint or compressed text, timestamp)`` in position order, and how many
    positions could not be read."""
    conn = _readonly_connection(db)
    try:
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            settings = settings_keywords(settings_from_meta(meta))
        except (sqlite3.DatabaseError, KeyError, ValueError) as error:
            raise IndexDamagedError(
                f"{db}: the index settings cannot be read ({error}); nothing to recover with"
            ) from None
        upper = _upper_position(conn)
        rows: list[tuple] = []
        lost = [0]
        step = 4096
        sql = _RECOVER_SQL[settings["method"]]
        for lo in range(1, upper + 1, step):
            _read_range(conn, sql, lo, min(upper, lo + step - 1), rows, lost)
    finally:
        conn.close()
    return settings, meta.get("documents"), rows, lost[0]


_INDEX_COPIES = {
    # Column of a recovered row -> the covering scan of the index holding a second copy of it.
    1: "SELECT pos, id FROM docs INDEXED BY docs_id",
    2: "SELECT pos, fingerprint FROM docs INDEXED BY docs_fingerprint",
    3: "SELECT pos, timestamp FROM docs INDEXED BY docs_gid",
}


def _index_copies(db: Path, minhash: bool) -> tuple[list[tuple[int, dict]], list[str]]:
    """The second copy of each column of the recovered rows that SQLite keeps in an index
    (ID, fingerprint unless MinHash, timestamp): ``[(column, {pos: value})]``; and the indexes
    that could not be read whole, whose column goes unchecked. O(n) memory."""
    copies: list[tuple[int, dict]] = []
    unreadable: list[str] = []
    conn = _readonly_connection(db)
    try:
        for column, sql in _INDEX_COPIES.items():
            if minhash and column == 2:  # recovered from the text, not the stored column
                continue
            try:
                copies.append((column, dict(conn.execute(sql).fetchall())))
            except sqlite3.DatabaseError:
                unreadable.append(sql.split()[-1])
    finally:
        conn.close()
    return copies, unreadable


def _usable_rows(
    rows: list[tuple], minhash: bool, copies: list[tuple[int, dict]]
) -> tuple[list[str], list, list[int], int, int]:
    """The IDs, values (fingerprints, or MinHash texts) and timestamps of the rows that damage
    left whole: a valid ID seen for the first time, a value and timestamp of the right type
    (a MinHash text that passes its checksum), each column equal to its copy in ``copies``;
    and how many rows were dropped, and of them how many were garbled (a column differing from
    its copy: one of the two was changed, and which one cannot be told)."""
    ids: list[str] = []
    values: list = []
    stamps: list[int] = []
    seen: set[str] = set()
    dropped = 0
    garbled = 0
    for row in rows:
        if any(copy.get(row[0]) != row[column] for column, copy in copies):
            dropped += 1
            garbled += 1
            continue
        _pos, ident, value, ts = row
        if minhash:
            try:
                value = decode_text(value)
            except ValueError:  # a damaged compressed text: the row is unreadable
                value = None
        if (
            id_problem(ident) is not None
            or ident in seen
            or not isinstance(value, str if minhash else int)
            or not isinstance(ts, int)
        ):
            dropped += 1
            continue
        seen.add(ident)
        ids.append(ident)
        values.append(value)
        stamps.append(ts)
    return ids, values, stamps, dropped, garbled


def recover_index(
    path: str | os.PathLike, target: str | os.PathLike, *, overwrite: bool = False
) -> dict[str, Any]:
    """Build a new index at ``target`` from every record of the index at ``path`` that SQLite
    can still read (the damaged index is only read, never changed).

    The settings come from the damaged index's ``meta`` table. Rows are read by position in
    ranges of 4,096; a range SQLite cannot read is halved until the unreadable positions are
    isolated, and those are lost. A row whose ID breaks the rules of :mod:`neardup.ids`, or
    repeats an earlier row's ID, whose MinHash text fails its checksum, or whose ID,
    fingerprint or timestamp differs from its copy in an index, is dropped (all can only
    come from damage). Groups and
    originals are recomputed from the recovered rows (they are derived from fingerprints, or
    the kept texts of a MinHash index, and timestamps), in position order, so ties break as
    before.

    Returns:
        ``{"recovered": int, "expected": int | None, "missing": int | None,
        "lost_positions": int, "dropped_rows": int, "garbled_rows": int,
        "unchecked_indexes": [str], "target": str}``: ``expected`` is what the index's
        counters say it held (:func:`_expected_documents`), ``missing`` the expected documents
        not recovered, ``garbled_rows`` the dropped rows whose ID, fingerprint or timestamp
        differ from their copy in one of SQLite's indexes (``unchecked_indexes``: the
        indexes that could not be read, whose column was not compared).

    Raises:
        IndexDamagedError: the settings cannot be read (nothing to rebuild with).

    Complexity: O(n) reads plus a build, O(n log n); O(log n) extra queries per unreadable
    position.
    """
    db = Path(path) / DB_NAME
    settings, counted, rows, lost = _readable_rows(db)
    minhash = settings["method"] == "minhash"
    copies, unchecked = _index_copies(db, minhash)
    ids, values, stamps, dropped, garbled = _usable_rows(rows, minhash, copies)
    expected = _expected_documents(Path(path), counted)
    if minhash:
        source: dict[str, Any] = {"texts": values}
    else:
        source = {"fingerprints": np.array(values, dtype=np.int64).view(np.uint64)}
    NearDupIndex.build(
        target,
        ids,
        timestamps_us=np.array(stamps, dtype=np.int64),
        overwrite=overwrite,
        **source,
        **settings,
    ).close()
    return {
        "recovered": len(ids),
        "expected": expected,
        "missing": None if expected is None else max(expected - len(ids), 0),
        "lost_positions": lost,
        "dropped_rows": dropped,
        "garbled_rows": garbled,
        "unchecked_indexes": unchecked,
        "target": str(target),
    }


def _expected_documents(path: Path, counted: str | None) -> int | None:
    """How many documents the index held when last written: the last cached generation's
    live count when the records lack writes it holds (:func:`~neardup.index.cache.lost_writes`,
    its flags checked against their checksum), else ``meta.documents`` (``counted``); None
    when neither can be read."""
    expected = int(counted) if counted is not None and str(counted).isdigit() else None
    try:
        manifest = json.loads((path / MANIFEST_NAME).read_text())
        generation = path / f"tables-{int(manifest['generation'])}"
        verify_files(generation, manifest.get("files"), ["alive.npy"])
        alive = np.load(generation / "alive.npy")
        max_pos = int(manifest["max_pos"])
        conn = _readonly_connection(path / DB_NAME)
        try:
            lost = lost_writes(conn, sql_state(conn), max_pos, alive)
        finally:
            conn.close()
    except (OSError, ValueError, KeyError, TypeError, IndexError, sqlite3.Error):
        return expected  # no generation to compare with
    return int(np.count_nonzero(alive)) if lost is not None else expected
