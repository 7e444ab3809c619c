"""Writing a Spark run's outputs: GROUPS, PAIRS and the originals' input rows.

An output naming one file (``.tsv``, ``.csv``, ``.jsonl``, ``.parquet``) is written by the
local writers of :mod:`neardup.io`, byte for byte as the local engine writes it; any other path
becomes a directory of files written by Spark.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engines.base import GROUP_COLUMNS, pair_columns, pair_value_column
from neardup.engines.local import write_groups_and_pairs
from neardup.engines.spark.result import SparkResult
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import round6_task
from neardup.io import TableWriter, write_records
from neardup.io.files import FORMAT_OF_EXTENSION, split_name
from neardup.settings import Settings

__all__ = [
    "COLLECT_ROWS",
    "PIECE_BYTES",
    "PIECE_ROWS",
    "single_file_format",
    "sorted_pieces",
    "write_originals",
    "write_output",
    "write_result",
]

COLLECT_ROWS = 1_000_000
"""Most rows of a single-file output collected to the driver at once (one Spark job, as
Arrow) and sorted there; a larger output, or one whose rows are not known, is sorted by Spark
and fetched in pieces (:data:`PIECE_ROWS`)."""

PIECE_ROWS = 250_000
"""Rows of each piece a large single-file output is fetched in: the output is range-partitioned
into pieces of about this many rows, and the driver holds at most two at a time (the one being
written and the next, fetched meanwhile), whatever the output's size."""

PIECE_BYTES = 64 << 20
"""Bytes of the originals' input rows in each piece :func:`write_originals` fetches (their rows
vary in size, so their pieces are sized by bytes as well as rows)."""


def single_file_format(path: str) -> tuple[str, bool] | None:
    """(format, compressed) if ``path`` names one file the local writers can write, else None
    (a directory Spark writes). O(1).

    Example:
        >>> single_file_format("groups.tsv.gz"), single_file_format("out/groups")
        (('tsv', True), None)
    """
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
    piece_rows: int | None = None,
    rows: int | None = None,
) -> None:
    """Write ``df`` sorted by ``order`` (unique together, as the outputs' positions are): to one
    file when ``path`` names one (``.tsv``, ``.csv``, ``.jsonl``, ``.parquet``, optionally
    compressed; byte-identical to :func:`neardup.io.write_table`), else to a Parquet directory
    written by Spark.

    A single file of at most :data:`COLLECT_ROWS` rows (``rows``, the number of rows of ``df``
    when the caller knows it; else they are counted) is collected at once and sorted on the
    driver. A larger one is sorted by Spark into pieces of about ``piece_rows`` rows
    (:data:`PIECE_ROWS` unless given), fetched to the driver one after the other as Arrow and
    written as they come (:class:`~neardup.io.write.TableWriter`), so the driver's memory is
    bounded by two pieces whatever the output's size.

    Example (needs a Spark session, so not run as a doctest)::

        write_output(result.groups, "groups.tsv", ["pos"], ["id", "duplicate_id"])
    """
    if single_file_format(path) is None:
        df.orderBy(*order).select(*columns).write.mode("overwrite").parquet(path)
        return
    kinds = dict(df.dtypes)
    with TableWriter(path) as writer:
        # An empty first piece: the header, and the columns' types when there are no rows.
        writer.write(_typed(pa.table({c: pa.array([], pa.null()) for c in columns}), kinds))
        for piece in sorted_pieces(df, order, columns, rows=rows, piece_rows=piece_rows):
            writer.write(_typed(piece, kinds))


def _typed(table: pa.Table, kinds: dict[str, str]) -> dict[str, Any]:
    """Columns with the types the local command line writes: numpy's for exact integers,
    bools and floats, Arrow's ``string`` for text (kept in Arrow, not made Python strings)."""
    dtypes = {"boolean": bool, "bigint": np.int64, "int": np.int64, "double": np.float64}
    out: dict[str, Any] = {}
    for name, column in zip(table.column_names, table.columns):
        kind = kinds.get(name, "")
        dtype = dtypes.get(kind)
        if kind == "string":
            out[name] = column.cast(pa.string())
        elif dtype is None:
            out[name] = column.to_pylist()
        elif column.null_count or column.type == pa.null():
            out[name] = np.asarray(column.to_pylist(), dtype=dtype)
        else:
            out[name] = np.asarray(column.to_numpy(), dtype=dtype)
    return out


def sorted_pieces(
    df: DataFrame,
    order: Sequence[str],
    columns: Sequence[str],
    *,
    rows: int | None = None,
    piece_rows: int | None = None,
    pieces: int | None = None,
) -> Iterator[pa.Table]:
    """The rows of ``df`` sorted by ``order`` (unique together), as Arrow tables of ``columns``
    in order: pieces of about ``piece_rows`` rows (:data:`PIECE_ROWS` unless given), or
    ``pieces`` pieces when given.

    ``rows`` is the number of rows of ``df`` when known (else one job counts them). Unless
    ``pieces`` is given, at most :data:`COLLECT_ROWS` rows are collected in one job and sorted
    on the driver. Otherwise they are range-partitioned and sorted by Spark, and each partition
    is fetched in its own job as one Arrow IPC stream (the next one while the current is used):
    the driver holds two pieces at most. Cost: one sort of ``df`` (a sampling job and a
    shuffle) plus a job per piece.

    Example (needs a Spark session, so not run as a doctest)::

        for piece in sorted_pieces(result.groups, ["pos"], ["id"], rows=n):
            print(piece.num_rows)
    """
    for name, value in (("piece_rows", piece_rows), ("pieces", pieces)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    fields = list(dict.fromkeys([*order, *columns]))
    if piece_rows is None:
        piece_rows = PIECE_ROWS
    if rows is None:
        rows = df.count()
    if pieces is None:
        if rows <= COLLECT_ROWS:
            table = df.select(*fields).toArrow().sort_by([(c, "ascending") for c in order])
            for start in range(0, table.num_rows, piece_rows):
                yield table.slice(start, piece_rows).select(list(columns))
            return
        pieces = -(-rows // piece_rows)
    ranged = df.select(*fields).repartitionByRange(pieces, *order).sortWithinPartitions(*order)
    encoded = ranged.select(*columns).mapInArrow(_ipc_task, "ipc binary")
    for row in encoded.toLocalIterator(prefetchPartitions=True):
        with pa.ipc.open_stream(row[0]) as reader:
            yield reader.read_all()


def _ipc_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A partition's batches as one Arrow IPC stream in one binary value: a piece crosses to
    the driver whole, rather than as a Python row object a row."""
    sink, writer = pa.BufferOutputStream(), None
    for batch in batches:
        if writer is None:
            writer = pa.ipc.new_stream(sink, batch.schema)
        writer.write_batch(batch)
    if writer is not None:
        writer.close()
        stream = sink.getvalue()
        offsets = pa.py_buffer(np.array([0, stream.size], dtype=np.int32))
        value = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, stream])
        yield pa.record_batch([value], names=["ipc"])


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
    if result.collected is not None:  # made on the driver: written as the local engine writes
        ids, groups = result.collected
        write_groups_and_pairs(ids, groups, settings.method, groups_out, pairs_out)
        return
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
    file when ``path`` names one (as :func:`neardup.io.write_records`), fetched to the driver in
    pieces of at most about :data:`PIECE_ROWS` rows and :data:`PIECE_BYTES` bytes; else as JSON
    Lines text files written by Spark into a directory. One sort of ``originals``, after one
    job that counts their rows and bytes.

    Example (needs a Spark session, so not run as a doctest)::

        write_originals(records.join(originals, ["pos"], "left_semi"), "originals.jsonl")
    """
    if single_file_format(path) is None:
        originals.orderBy("pos").select("record").write.mode("overwrite").text(path)
        return
    rows, nbytes = originals.agg(F.count(F.lit(1)), F.sum(F.octet_length("record"))).first()
    pieces = max(-(-rows // PIECE_ROWS), -(-(nbytes or 0) // PIECE_BYTES))
    fetched = sorted_pieces(
        originals, ["pos"], ["record"], rows=rows, pieces=pieces if pieces > 1 else None
    )
    write_records(
        path, (json.loads(record) for piece in fetched for record in piece["record"].to_pylist())
    )
