"""Input rows on Spark: the local reader's checks, run inside tasks, and the accepted rows.

Every row is checked by the rules of :func:`neardup.io.read_documents` and
:func:`neardup.io.read_fingerprints`, the very functions of :mod:`neardup.io.rows` (and the line
parsers of :mod:`neardup.io.sources` and :mod:`neardup.io.fingerprints`), so a bad input fails
or is counted the same on both engines: same reasons, fields and details.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.engines.spark.byte_ranges import LineBlock
from neardup.engines.spark.frames import BROADCAST_POSITIONS, Storage
from neardup.engines.spark.repeats import repeat_counts
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import (
    record_batch,
    signature_columns,
    signature_names,
    signature_schema,
)
from neardup.io.fingerprints import fingerprint_line
from neardup.io.jsonl_blocks import BlockParser, ParsedBlock, lines_block, scan_block
from neardup.io.rows import (
    BadRow,
    InputError,
    ReadStats,
    valid_fingerprint,
    valid_fingerprint_time,
    valid_id,
    valid_text,
    valid_time,
)
from neardup.io.seed_rows import seed_lines
from neardup.io.sources import json_object_line
from neardup.io.values import short_repr
from neardup.settings import Settings

__all__ = [
    "CHECKED_SCHEMA",
    "POS_BITS",
    "SIGNATURE_COLUMNS",
    "accept_rows",
    "rows_task",
    "signed_rows_schema",
    "signed_rows_task",
]

POS_BITS = 44
"""Global positions are ``input index << 44 | position inside the input``."""

CHECKED_SCHEMA = (
    "pos long, line long, src string, id string, text string, ts long, fp long, nbytes long, "
    "reason string, field string, detail string"
)
"""The rows :func:`rows_task` yields: a good row has ``reason`` null; a bad one, its reason."""

SIGNATURE_COLUMNS = signature_names(bounds=True)
"""The columns :func:`signed_rows_task` adds to the checked rows (``size`` and ``sketch`` only
with the LCS bounds), which the accepted rows carry on."""

LineOf = Callable[[int], int]
"""The 1-based line (or row) of a position, where the checked rows do not hold it."""

Fields = tuple[Any, Any, Any]
"""A row's values as read: its ID, its text (or fingerprint) and its time (None: none)."""


def _row_fields(
    batch: pa.RecordBatch, kind: str, names: tuple[str, str, str | None]
) -> list[Fields | BadRow | None]:
    """Each row's :data:`Fields`, the :class:`~neardup.io.rows.BadRow` of a line that cannot be
    read, or None for a blank line (or a header of fingerprint rows). O(rows)."""
    if kind in ("typed", "fp_typed"):
        ids = batch.column("_v_id").to_pylist()
        values = batch.column("_v_fp" if kind == "fp_typed" else "_v_text").to_pylist()
        if "_v_time" in batch.schema.names:
            return list(zip(ids, values, batch.column("_v_time").to_pylist()))
        return [(ident, value, None) for ident, value in zip(ids, values)]
    keys = ("id", "fingerprint", "timestamp") if kind == "fp_jsonl" else names
    out: list[Fields | BadRow | None] = []
    lines = batch.column("_nd_line").to_pylist()
    for line, s in zip(lines, batch.column("value").to_pylist()):
        s = s or ""
        if kind in ("jsonl", "fp_jsonl") and not s.strip():
            out.append(None)
            continue
        if line == 1 and s.startswith("\ufeff"):
            s = s[1:]  # the BOM, which the local readers drop as they decode the first line
        if kind in ("jsonl", "fp_jsonl"):
            obj = json_object_line(s, line)
            if type(obj) is BadRow:
                out.append(obj)
            else:
                time_value = obj.get(keys[2]) if keys[2] is not None else None
                out.append((obj.get(keys[0]), obj.get(keys[1]), time_value))
        else:  # fp_plain, fp_tsv
            out.append(fingerprint_line(s, escaped=kind == "fp_tsv"))
    return out


def _document(
    fields: Fields, names: tuple[str, str, str | None], max_doc_bytes: int | None
) -> tuple[str, str, int, int] | BadRow:
    """``(id, text, ts, UTF-8 bytes)`` of a document row, or its first
    :class:`~neardup.io.rows.BadRow` in the local reader's order: ID, text, time."""
    ident, text, time_value = fields
    id_field, text_field, time_field = names
    ident = valid_id(ident, id_field)
    if type(ident) is BadRow:
        return ident
    nbytes = valid_text(text, text_field, max_doc_bytes)
    if type(nbytes) is BadRow:
        return nbytes
    us = 0 if time_field is None else valid_time(time_value, time_field)
    if type(us) is BadRow:
        return us
    return ident, text, us, nbytes


def _fingerprint(fields: Fields, fingerprint_format: str) -> tuple[str, int, int] | BadRow:
    """``(id, fp, ts)`` of a fingerprint row, or its first :class:`~neardup.io.rows.BadRow` in
    the local reader's order: ID, fingerprint, time."""
    ident, value, time_value = fields
    ident = valid_id(ident, "id")
    if type(ident) is BadRow:
        return ident
    fp = valid_fingerprint(value, fingerprint_format)
    if type(fp) is BadRow:
        return fp
    us = valid_fingerprint_time(time_value)
    if type(us) is BadRow:
        return us
    return ident, fp, 0 if us is None else us


def _seed_rows(batch: pa.RecordBatch) -> pa.RecordBatch | None:
    """The checked rows of a batch of tab-separated fingerprint lines (``value``) when every
    line is a seed row the local bulk reader takes (:func:`~neardup.io.seed_rows.seed_lines`:
    an ID, 16 hex digits, a timestamp or nothing), parsed at once by its compiled pass; None
    otherwise, and the batch is read line by line. Only for the ``hex`` and ``auto``
    fingerprint formats, which read 16 hex digits as hex. O(bytes)."""
    values = batch.column("value")
    if values.null_count or pc.any(pc.starts_with(values, "\ufeff")).as_py():
        return None  # a BOM: dropped from a file's first line by the line-by-line reading
    parsed = seed_lines(values)
    if parsed is None:
        return None
    ids, fps, times = parsed
    n = batch.num_rows
    missing = pa.nulls(n, pa.string())
    return record_batch(
        {
            "pos": batch.column("_nd_pos"),
            "line": batch.column("_nd_line"),
            "src": batch.column("_nd_src"),
            "id": ids,
            "text": pa.repeat(pa.scalar("", pa.string()), n),
            "ts": pa.array(times),
            "fp": pa.array(fps.view(np.int64)),
            "nbytes": pa.array(np.zeros(n, dtype=np.int64)),
            "reason": missing,
            "field": missing,
            "detail": missing,
        }
    )


def _plain_jsonl(
    batch: pa.RecordBatch, names: tuple[str, str, str | None], max_doc_bytes: int | None
) -> pa.RecordBatch | None:
    """The checked rows of a batch of JSON Lines (``value``) when every line is a good row,
    parsed at once by the local reader's :class:`~neardup.io.jsonl_blocks.BlockParser`, which
    answers only where its result is the line-by-line reading's; None otherwise (then the
    batch is read line by line). O(bytes), compiled and in Arrow."""
    values = batch.column("value")
    if values.null_count:
        return None
    block = lines_block(values)  # the lines back to back, each ended by "\n" as in the file
    parsed = _parsed(block, None, names, max_doc_bytes)
    if parsed is None or len(parsed.ids) != batch.num_rows:
        return None
    return _parsed_rows(parsed, *(batch.column(f"_nd_{c}") for c in ("pos", "line", "src")))


def _plain_block(
    block: LineBlock, names: tuple[str, str, str | None], max_doc_bytes: int | None
) -> pa.RecordBatch | None:
    """:func:`_plain_jsonl` of a block of lines as read from its file, parsed from its bytes
    as the local reader parses its blocks. O(bytes)."""
    parsed = _parsed(block.data, block.breaks, names, max_doc_bytes)
    if parsed is None or len(parsed.ids) != block.pos.shape[0]:
        return None
    src = pa.repeat(pa.scalar(block.src, pa.string()), block.pos.shape[0])
    return _parsed_rows(parsed, pa.array(block.pos, pa.int64()), pa.array(block.line), src)


def _parsed(
    block: np.ndarray,
    breaks: np.ndarray | None,
    names: tuple[str, str, str | None],
    max_doc_bytes: int | None,
) -> ParsedBlock | None:
    """The rows of a block of whole lines (its ``\\n`` at ``breaks``, None: not known) when
    every line is plain and a good row, else None. O(bytes)."""
    starts, plain = scan_block(block, breaks)
    if not plain:
        return None
    parser = BlockParser(*names, max_doc_bytes=max_doc_bytes)
    return parser.parse(block, starts) if parser.usable else None


def _parsed_rows(
    parsed: ParsedBlock, pos: pa.Array, line: pa.Array, src: pa.Array
) -> pa.RecordBatch:
    """The checked rows (:data:`CHECKED_SCHEMA`) of a parsed block's rows at ``pos``, ``line``
    in ``src``. O(rows)."""
    n = len(parsed.ids)
    missing = pa.nulls(n, pa.string())
    return record_batch(
        {
            "pos": pos,
            "line": line,
            "src": src,
            "id": parsed.ids.cast(pa.string()),
            "text": parsed.texts.cast(pa.string()),
            "ts": pa.array(parsed.timestamps, pa.int64()),
            "fp": pa.array(np.zeros(n, dtype=np.int64)),
            "nbytes": pa.array(parsed.text_bytes, pa.int64()),
            "reason": missing,
            "field": missing,
            "detail": missing,
        }
    )


def rows_task(
    batches: Iterable[pa.RecordBatch | LineBlock],
    kind: str,
    names: tuple[str, str, str | None],
    fingerprint_format: str = "auto",
    max_doc_bytes: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Raw input rows -> checked rows (:data:`CHECKED_SCHEMA`); blank lines are dropped.
    Texts over ``max_doc_bytes`` are bad rows, as in the local reader.

    ``kind``: ``typed`` (columns ``_v_id``, ``_v_text``[, ``_v_time``]), ``jsonl`` (the line in
    ``value``), ``fp_typed`` (``_v_id``, ``_v_fp``[, ``_v_time``]), ``fp_jsonl``, ``fp_plain``
    and ``fp_tsv`` (tab-separated lines; ``.tsv`` IDs are unescaped). Every row also carries
    ``_nd_pos``, ``_nd_line`` and ``_nd_src`` (its position, line and file). Lines of kind
    ``jsonl`` may also come as a :class:`~neardup.engines.spark.byte_ranges.LineBlock` of
    lines read from a file. Cost: a batch or block of
    JSON Lines whose every line is a good row is parsed at once in Arrow (as the local reader
    parses such a block); any other batch costs O(rows) Python work (each row is parsed and
    checked on its own).

    Example:
        >>> raw = pa.record_batch({
        ...     "_nd_pos": [0, 1], "_nd_line": [1, 2], "_nd_src": ["d.jsonl", "d.jsonl"],
        ...     "value": ['{"id": "a", "text": "x"}', '{"id": "b"}']})
        >>> out = next(rows_task([raw], "jsonl", ("id", "text", None)))
        >>> out["id"].to_pylist(), out["reason"].to_pylist()
        (['a', None], [None, "missing field 'text'"])
    """
    fingerprints = kind.startswith("fp_")
    for batch in batches:
        if isinstance(batch, LineBlock):
            fast = _plain_block(batch, names, max_doc_bytes) if kind == "jsonl" else None
            if fast is not None:
                yield fast
                continue
            batch = batch.batch()
        n = batch.num_rows
        if n == 0:
            continue
        fast = None
        if kind == "jsonl":
            fast = _plain_jsonl(batch, names, max_doc_bytes)
        elif kind in ("fp_tsv", "fp_plain") and fingerprint_format != "dec":
            fast = _seed_rows(batch)
        if fast is not None:
            yield fast
            continue
        out_id: list[str | None] = [None] * n
        out_text: list[str | None] = [None] * n
        out_ts = np.zeros(n, dtype=np.int64)
        out_fp = np.zeros(n, dtype=np.uint64)
        out_bytes = np.zeros(n, dtype=np.int64)
        reason: list[str | None] = [None] * n
        where: list[str | None] = [None] * n
        detail: list[str | None] = [None] * n
        blank = np.zeros(n, dtype=bool)
        for i, fields in enumerate(_row_fields(batch, kind, names)):
            if fields is None:
                blank[i] = True
                continue
            if type(fields) is not BadRow:
                fields = (
                    _fingerprint(fields, fingerprint_format)
                    if fingerprints
                    else _document(fields, names, max_doc_bytes)
                )
            if type(fields) is BadRow:
                where[i], reason[i], detail[i] = fields
            elif fingerprints:
                out_id[i], out_fp[i], out_ts[i] = fields
                out_text[i] = ""
            else:
                out_id[i], out_text[i], out_ts[i], out_bytes[i] = fields
        out = record_batch(
            {
                "pos": batch.column("_nd_pos"),
                "line": batch.column("_nd_line"),
                "src": batch.column("_nd_src"),
                "id": pa.array(out_id, pa.string()),
                "text": pa.array(out_text, pa.string()),
                "ts": pa.array(out_ts),
                "fp": pa.array(out_fp.view(np.int64)),
                "nbytes": pa.array(out_bytes),
                "reason": pa.array(reason, pa.string()),
                "field": pa.array(where, pa.string()),
                "detail": pa.array(detail, pa.string()),
            }
        )
        yield out if not blank.any() else out.filter(pa.array(~blank))


def signed_rows_schema(settings: Settings, bounds: bool = False) -> str:
    """The rows :func:`signed_rows_task` yields, as a Spark schema: :data:`CHECKED_SCHEMA` and
    the signature columns of :func:`~neardup.engines.spark.tasks.signature_schema`. O(1)."""
    return f"{CHECKED_SCHEMA}, {signature_schema(settings, bounds)}"


def signed_rows_task(
    batches: Iterable[pa.RecordBatch | LineBlock],
    settings: Settings,
    bounds: bool = False,
    banded: bool = False,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """:func:`rows_task` (``options`` are its ``kind``, ``names`` and ``max_doc_bytes``) and
    stage 1 in the same task: each good row also gets the
    :func:`~neardup.engines.spark.tasks.signature_columns` of its text (with ``bounds`` and
    ``banded``), a bad row nulls. So each text crosses from the JVM to Python once, as read,
    instead of again from the stored rows for its signature. Cost: that of :func:`rows_task`
    plus the signing of the good rows.

    Example:
        >>> raw = pa.record_batch({
        ...     "_nd_pos": [0, 1], "_nd_line": [1, 2], "_nd_src": ["d.jsonl", "d.jsonl"],
        ...     "value": ['{"id": "a", "text": "x y"}', '{"id": "b"}']})
        >>> out = next(signed_rows_task([raw], Settings(method="simhash"), kind="jsonl",
        ...                             names=("id", "text", None)))
        >>> out["reason"].to_pylist(), out["sig"].is_null().to_pylist()
        ([None, "missing field 'text'"], [False, True])
    """
    for checked in rows_task(batches, **options):
        good = checked.column("reason").is_null()
        if good.false_count == 0:
            signed = signature_columns(checked.column("text"), settings, bounds, banded)
        else:
            rows = np.flatnonzero(good.to_numpy(zero_copy_only=False))
            # Each good row takes its signature's place among the good ones; a bad row, a null.
            place = np.full(checked.num_rows, -1, dtype=np.int64)
            place[rows] = np.arange(len(rows))
            at = pa.array(place, mask=place < 0)
            texts = checked.column("text").take(pa.array(rows))
            signed = {
                name: column.take(at)
                for name, column in signature_columns(texts, settings, bounds, banded).items()
            }
        yield record_batch({**dict(zip(checked.schema.names, checked.columns)), **signed})


def accept_rows(
    checked: DataFrame,
    on_error: str,
    units: dict[int, str],
    storage: Storage,
    line_of: LineOf | None = None,
) -> tuple[DataFrame, ReadStats]:
    """Good rows minus later repeats of an ID; the first bad row raises (``on_error="raise"``)
    or bad rows are counted by reason (``"skip"``), as in the local reader, where a row is
    checked before its ID is claimed, so a bad row never makes a later row a duplicate.

    ``checked`` (rows of :data:`CHECKED_SCHEMA`) must be stored by ``storage``; it is released
    here, or, when no ID repeats, it backs the accepted rows (freed with them by
    :func:`~neardup.engines.spark.frames.unpersist`). ``units`` names the unit of each input
    (``"line"`` or ``"row"``) by input index.
    Returns the accepted rows (``pos, id, text, ts, fp, nbytes``, and the
    :data:`SIGNATURE_COLUMNS` of rows :func:`signed_rows_task` checked; held by ``storage``) and
    the counters. Cost: one query of aggregations over ``checked`` (:func:`_summary`); a join
    more when an ID repeats.

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats = accept_rows(storage.keep(checked), "skip", {0: "line"}, storage)
    """
    try:
        good = checked.where("reason is null")
        summary = _summary(checked, good)
        repeated = summary.repeated
        stats = ReadStats()
        # Only positions and IDs cross the shuffles that find repeats, never the texts.
        keys = good.select("pos", "id", "line", "src")
        first = keys.groupBy("id").agg(F.min("pos").alias("first_pos"))
        dups = keys.join(first, ["id"]).where("pos > first_pos")
        if on_error == "raise":
            if repeated:
                _raise_first_bad(checked, dups, units, line_of)
            elif summary.first_bad is not None:
                bad = checked.where(F.col("pos") == summary.first_bad)
                _raise_bad(checked, bad.select(*_BAD_ROW).first(), units, line_of)
        else:
            stats.skipped_reasons.update(summary.reasons)
            if repeated:
                stats.skipped_reasons["duplicate id"] += repeated
            stats.skipped = sum(stats.skipped_reasons.values())
        stats.files = summary.files
        if repeated:
            drop = dups.select("pos")
            if repeated <= BROADCAST_POSITIONS:
                drop = F.broadcast(drop)
            good = good.join(drop, ["pos"], "left_anti")
        signed = [c for c in (*SIGNATURE_COLUMNS, "loc", "span") if c in checked.columns]
        accepted = good.select("pos", "id", "text", "ts", "fp", "nbytes", *signed)
        if repeated:
            # Counted and summed by the job that stores them, not by one of its own.
            accepted = storage.keep(accepted, totals=[F.sum("nbytes")], columnar=True)
            stats.documents = Storage.rows(accepted)
            stats.bytes = int(Storage.totals(accepted)[0] or 0)
        else:
            # Only bad rows to leave out: the stored rows back the accepted ones (a filter
            # on a short plan) instead of a second stored copy of every text.
            accepted._neardup_stored = checked._neardup_stored
            stats.documents, stats.bytes = summary.documents, summary.bytes
    except BaseException:
        storage.release()
        raise
    if repeated:
        storage.release(checked)
    # Counted: the run then knows its documents' number without a job of its own.
    return Storage.counted(accepted, stats.documents), stats


class _Summary(NamedTuple):
    """The counters of the checked rows, from one query (:func:`_summary`)."""

    documents: int  # good rows, later repeats of an ID included
    bytes: int  # their UTF-8 bytes
    files: int  # files holding a row
    reasons: dict[str, int]  # bad rows by reason
    repeated: int  # good rows repeating an earlier good row's ID
    first_bad: int | None  # the smallest position of a bad row, or None


_BAD_ROW = ("pos", "line", "src", "reason", "field", "detail")
"""The columns of a bad row that :func:`_raise_bad` reads."""


def _summary(checked: DataFrame, good: DataFrame) -> _Summary:
    """The counters of ``checked`` (rows of :data:`CHECKED_SCHEMA`; ``good``: those with no
    reason) in one query, so one Spark action: the rows by reason and file, and the repeats
    of the good rows' IDs. Cost: one aggregation of ``checked`` by keys and sums alone (a
    set of the files or the least bad row as a struct would make Spark aggregate an object a
    row) and one shuffle of the good rows' ID hashes
    (:func:`~neardup.engines.spark.repeats.repeat_counts`); the driver gets a row per reason
    and file."""
    rows = checked.select(
        F.lit(False).alias("repeat"),
        "reason",
        "src",
        F.lit(1).cast("long").alias("n"),
        "nbytes",
        F.when(F.col("reason").isNotNull(), F.col("pos")).alias("bad"),
    )
    repeats = repeat_counts(good).select(
        F.lit(True).alias("repeat"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(None).cast("string").alias("src"),
        F.col("n").cast("long"),
        F.lit(0).cast("long").alias("nbytes"),
        F.lit(None).cast("long").alias("bad"),
    )
    found = (
        rows.unionByName(repeats)
        .groupBy("repeat", "reason", "src")
        .agg(F.sum("n").alias("n"), F.sum("nbytes").alias("bytes"), F.min("bad").alias("bad"))
        .collect()
    )
    read = [r for r in found if not r.repeat]
    good_rows = [r for r in read if r.reason is None]
    reasons: Counter[str] = Counter()
    for r in read:
        if r.reason is not None:
            reasons[r.reason] += int(r.n)
    firsts = [int(r.bad) for r in read if r.bad is not None]
    return _Summary(
        documents=sum(int(r.n) for r in good_rows),
        bytes=sum(int(r.bytes or 0) for r in good_rows),
        files=len({r.src for r in read if r.src is not None}),
        reasons=dict(reasons),
        repeated=sum(int(r.n) for r in found if r.repeat),
        first_bad=min(firsts) if firsts else None,
    )


def _raise_first_bad(
    checked: DataFrame, dups: DataFrame, units: dict[int, str], line_of: LineOf | None
) -> None:
    """Raise the :class:`~neardup.io.InputError` of the first bad row in input order, if any."""
    bad = checked.where("reason is not null").select(
        "pos",
        "line",
        "src",
        "reason",
        "field",
        "detail",
        F.lit(None).cast("long").alias("first_pos"),
        F.lit(None).cast("string").alias("dup"),
    )
    bad = bad.unionByName(
        dups.select(
            "pos",
            "line",
            "src",
            F.lit("duplicate id").alias("reason"),
            F.lit("id").alias("field"),
            F.lit(None).cast("string").alias("detail"),
            "first_pos",
            F.col("id").alias("dup"),
        )
    )
    found = bad.orderBy("pos").limit(1).collect()
    if found:
        _raise_bad(checked, found[0], units, line_of)


def _raise_bad(checked: DataFrame, r: Any, units: dict[int, str], line_of: LineOf | None) -> None:
    """Raise the :class:`~neardup.io.InputError` of the bad row ``r`` (``pos, line, src,
    reason, field, detail``, and for a repeated ID ``first_pos`` and the ID ``dup``)."""
    unit = units[int(r.pos) >> POS_BITS]
    line = line_of(r.pos) if line_of is not None else r.line
    detail = r.detail
    if r.reason == "duplicate id":
        f = checked.where(F.col("pos") == r.first_pos).select("pos", "line", "src").first()
        f_line = line_of(f.pos) if line_of is not None else f.line
        place = f.src if f_line is None else f"{f.src}, {units[int(f.pos) >> POS_BITS]} {f_line}"
        detail = f"{short_repr(r.dup)} first seen at {place}"
    raise InputError(r.src, line, r.field, r.reason, detail, unit)
