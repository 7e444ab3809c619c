"""Writing a Spark run's outputs: GROUPS, PAIRS and the originals' input rows.

An output naming one file (``.tsv``, ``.csv``, ``.jsonl``, ``.parquet``) is written by the
local writers of :mod:`neardup.io`, byte for byte as the local engine writes it; any other path
becomes a directory of files written by Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from neardup.engines.base import GROUP_COLUMNS, pair_columns, pair_value_column
from neardup.engines.spark.result import SparkResult
from neardup.engines.spark.session import DataFrame
from neardup.engines.spark.tasks import round6_task
from neardup.io import write_records, write_table
from neardup.io.files import FORMAT_OF_EXTENSION, atomic_write, split_name
from neardup.settings import Settings

__all__ = ["COLLECT_ROWS", "write_originals", "write_output", "write_result"]

COLLECT_ROWS = 1_000_000
"""Most rows of a single-file output collected to the driver at once (one Spark job, as
Arrow) and sorted there; a larger output, or one whose rows are not known, streams through
the driver sorted by Spark, a partition at a time (a sampling job, a sort and a job per
partition)."""


def _single_file_format(path: str) -> tuple[str, bool] | None:
    """(format, compressed) if ``path`` names one file the local writers can write, else None."""
    if path == "-":
        return "tsv", False
    ext, compression = split_name(path)
    fmt = FORMAT_OF_EXTENSION.get(ext)
    if fmt in (None, "txt") or path.endswith("/"):
        return None
    return fmt, compression is not None


def write_output(
    df: DataFrame,
    path: str,
    order: Sequence[str],
    columns: Sequence[str],
    chunk_rows: int = 200_000,
    rows: int | None = None,
) -> None:
    """Write ``df`` sorted by ``order`` (unique together, as the outputs' positions are): to one
    file when ``path`` names one (``.tsv``, ``.csv``, ``.jsonl``, ``.parquet``; byte-identical
    to :func:`neardup.io.write_table`), else to a Parquet directory written by Spark.

    A single file of at most :data:`COLLECT_ROWS` rows (``rows``, the number of rows of
    ``df`` when the caller knows it) is collected at once and sorted on the driver. Otherwise
    the rows stream to the driver partition by partition (uncompressed text formats keep only
    ``chunk_rows`` rows in memory at a time; Parquet and compressed files gather the whole
    table first).

    Example (needs a Spark session, so not run as a doctest)::

        write_output(result.groups, "groups.tsv", ["pos"], ["id", "duplicate_id"])
    """
    ordered = df.orderBy(*order).select(*columns)
    single = _single_file_format(path)
    if single is None:
        ordered.write.mode("overwrite").parquet(path)
        return
    fmt, compressed = single
    if rows is not None and rows <= COLLECT_ROWS:
        chunks = _collected_chunks(df, list(order), list(columns), chunk_rows)
    else:
        chunks = _local_chunks(ordered, list(columns), chunk_rows)
    if fmt == "parquet" or compressed or path == "-":
        parts = list(chunks)
        if parts:
            table = {c: [v for p in parts for v in p[c]] for c in columns}
        else:
            table = {c: [] for c in columns}
        write_table(path, _typed(table, df, columns))
        return
    # The file is assembled from pieces the local writer writes: first the header alone (an
    # empty table), then one piece per chunk of rows.
    header = {c: [] for c in columns}
    directory = os.path.dirname(os.path.abspath(path))
    with (
        tempfile.TemporaryDirectory(
            prefix=".neardup-", dir=directory, ignore_cleanup_errors=True
        ) as scratch,
        atomic_write(path) as out,
    ):
        piece = os.path.join(scratch, "piece" + Path(path).suffix)
        for chunk in chain([header], chunks):
            write_table(piece, _typed(chunk, df, columns), header=chunk is header)
            with open(piece, "rb") as fh:
                shutil.copyfileobj(fh, out)


def _typed(chunk: dict[str, list], df: DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """Columns with the numpy dtypes the local command line writes (exact integers, bools)."""
    kinds = dict(df.dtypes)
    out: dict[str, Any] = {}
    for c in columns:
        values = chunk[c]
        kind = kinds.get(c)
        if kind == "boolean":
            out[c] = np.asarray(values, dtype=bool)
        elif kind in ("bigint", "int"):
            out[c] = np.asarray(values, dtype=np.int64)
        elif kind == "double":
            out[c] = np.asarray(values, dtype=np.float64)
        else:
            out[c] = values
    return out


def _collected_chunks(
    df: DataFrame, order: list[str], columns: list[str], chunk_rows: int
) -> Iterator[dict[str, list]]:
    """The rows of ``df`` sorted by ``order`` on the driver, ``chunk_rows`` at a time, as lists
    per column: one Spark job brings them as Arrow (no sampling job, sort or job per partition,
    which cost more than the sort itself for small outputs)."""
    table = df.select(*dict.fromkeys([*order, *columns])).toArrow()
    table = table.sort_by([(c, "ascending") for c in order])
    for start in range(0, table.num_rows, chunk_rows):
        part = table.slice(start, chunk_rows)
        yield {c: part.column(c).to_pylist() for c in columns}


def _local_chunks(df: DataFrame, columns: list[str], chunk_rows: int) -> Iterator[dict[str, list]]:
    """The rows of ``df`` on the driver, ``chunk_rows`` at a time, as lists per column."""
    chunk: dict[str, list] = {c: [] for c in columns}
    count = 0
    for row in df.toLocalIterator(prefetchPartitions=True):
        for c, v in zip(columns, row):
            chunk[c].append(v)
        count += 1
        if count >= chunk_rows:
            yield chunk
            chunk, count = {c: [] for c in columns}, 0
    if count:
        yield chunk


def _rounded_pairs(pairs: DataFrame, method: str) -> DataFrame:
    """PAIRS with MinHash similarities rounded as the local command line writes them."""
    if method == "simhash":
        return pairs
    schema = ", ".join(f"`{n}` {t}" for n, t in pairs.dtypes)
    return pairs.mapInArrow(partial(round6_task, column=pair_value_column(method)), schema)


def write_result(
    result: SparkResult, settings: Settings, groups_out: str | None, pairs_out: str | None = None
) -> None:
    """Write GROUPS (input order) and PAIRS (the local engine's order; MinHash similarities
    rounded to 6 digits) as ``neardup dedup`` writes them; see :func:`write_output`.

    Example (needs a Spark session, so not run as a doctest)::

        write_result(result, settings, "groups.tsv", "pairs.tsv")
    """
    if groups_out:
        rows = result.stats.get("documents")
        write_output(result.groups, groups_out, ["pos"], GROUP_COLUMNS, rows=rows)
    if pairs_out:
        write_output(
            _rounded_pairs(result.pairs, settings.method),
            pairs_out,
            list(result.pairs_order),
            pair_columns(settings.method),
            rows=result.stats.get("pairs"),
        )


def write_originals(originals: DataFrame, path: str) -> None:
    """Write the originals' input rows (``pos, record``: each row as JSON text, as
    :func:`~neardup.engines.spark.read_documents_spark` returns them) in input order: to one
    file when ``path`` names one (as :func:`neardup.io.write_records`), else as JSON Lines text
    files written by Spark into a directory. One sort of ``originals``.

    Example (needs a Spark session, so not run as a doctest)::

        write_originals(records.join(originals, ["pos"], "left_semi"), "originals.jsonl")
    """
    ordered = originals.orderBy("pos")
    if _single_file_format(path) is None:
        ordered.select("record").write.mode("overwrite").text(path)
        return

    def records() -> Iterator[dict]:
        for row in ordered.select("record").toLocalIterator(prefetchPartitions=True):
            yield json.loads(row[0])

    write_records(path, records())
