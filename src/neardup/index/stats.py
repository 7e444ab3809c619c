"""What :meth:`neardup.index.store.NearDupIndex.stats` reports of an open index: counts,
settings, table plan, memory and open time."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from neardup.index.cache import OpenInfo
from neardup.index.settings import settings_fields
from neardup.index.storage import DB_NAME, FORMAT_VERSION
from neardup.settings import Settings


def index_stats(
    path: Path,
    conn: sqlite3.Connection,
    settings: Settings,
    tables: Any,
    verifier_bytes: int,
    open_info: OpenInfo,
    *,
    mode: str,
    synchronous: str,
    last_position: int,
    created: str,
) -> dict[str, Any]:
    """The stats of the index at ``path``: its records (``conn``), ``settings``, candidate
    ``tables`` and the bytes its MinHash verifier holds, how it was opened, and the writer's
    ``mode`` ("writer" or "readonly"), ``synchronous``, ``last_position`` and ``created``.
    O(groups) for the group counts (one SQLite scan)."""
    groups, largest = conn.execute("SELECT COUNT(*), COALESCE(MAX(size), 0) FROM groups").fetchone()
    memory = tables.nbytes + verifier_bytes
    db_bytes = sum(p.stat().st_size for p in path.glob(DB_NAME + "*") if p.is_file())
    return {
        "path": str(path),
        "mode": mode,
        "documents": tables.live,
        "groups": int(groups),
        "duplicates": tables.live - int(groups),
        "largest_group": int(largest),
        **settings_fields(settings),
        **(tables.layout() if settings.method == "simhash" else {}),
        "synchronous": synchronous,
        "delta": tables.delta_len,
        "delta_limit": tables.delta_limit,
        "memory_bytes": memory,
        "bytes_per_document": round(memory / tables.live, 1) if tables.live else None,
        "database_bytes": db_bytes,
        "last_position": last_position,
        **open_info.stats(),
        "created": created,
        "format_version": FORMAT_VERSION,
    }
