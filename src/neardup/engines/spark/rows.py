"""Input rows on Spark: the local reader's checks, run inside tasks, and the accepted rows.

Every row is checked by the rules of :func:`neardup.io.read_documents` and
:func:`neardup.io.read_fingerprints` (same reasons, fields and details), so a bad input fails
or is counted the same on both engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engines.spark.frames import Storage
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import record_batch
from neardup.io import InputError, ReadStats, oversized_text, parse_fingerprint, tsv_unescape
from neardup.io.sources import parse_json_line
from neardup.io.values import json_type_name, short_repr, time_to_us, utf8_length

__all__ = ["CHECKED_SCHEMA", "POS_BITS", "accept_rows", "rows_task"]

POS_BITS = 44
"""Global positions are ``input index << 44 | position inside the input``."""

CHECKED_SCHEMA = (
    "pos long, line long, src string, id string, text string, ts long, fp long, nbytes long, "
    "reason string, field string, detail string"
)
"""The rows :func:`rows_task` yields: a good row has ``reason`` null; a bad one, its reason."""

LineOf = Callable[[int], int]
"""The 1-based line (or row) of a position, where the checked rows do not hold it."""


def _check_document(ident, text, time_value, names):
    """``(True, id, text, ts)`` for a good row, ``(False, reason, field, detail)`` for a bad
    one, by the rules (reasons, fields, details) of :func:`neardup.io.read_documents`."""
    id_field, text_field, time_field = names
    if type(ident) is not str or not ident or not ident.isascii():
        if ident is None:
            return False, f"missing field '{id_field}'", id_field, None
        if isinstance(ident, (int, np.integer)) and not isinstance(ident, bool):
            ident = str(int(ident))
        elif type(ident) is not str:
            return False, "bad id", id_field, f"expected a string or integer, got {json_type_name(ident)}"
        if not ident:
            return False, "empty id", id_field, None
        if not ident.isascii() and utf8_length(ident) is None:
            return False, "invalid UTF-8", id_field, "unpaired surrogate in the id"
    if type(text) is not str:
        if text is None:
            return False, f"missing field '{text_field}'", text_field, None
        return False, "text not a string", text_field, f"got {json_type_name(text)}"
    if not text.isascii() and utf8_length(text) is None:
        return False, "invalid UTF-8", text_field, "unpaired surrogate in the text"
    if time_field is None:
        return True, ident, text, 0
    us = time_to_us(time_value) if time_value is not None else None
    if us is None:
        if time_value is None or time_value == "":
            return False, f"missing field '{time_field}'", time_field, None
        detail = f"{short_repr(time_value)} is neither seconds since the epoch nor ISO 8601"
        return False, "bad timestamp", time_field, detail
    return True, ident, text, int(us)


def _check_fingerprint(ident, value, time_value, fingerprint_format):
    """``(True, id, fp, ts)`` or ``(False, reason, field, detail)``, by the rules of
    :func:`neardup.io.read_fingerprints`."""
    if type(ident) is not str or not ident or not ident.isascii():
        checked = _check_document(ident, "", None, ("id", "text", None))
        if not checked[0]:
            return checked
        ident = checked[1]
    if value is None or value == "":
        return False, "missing field 'fingerprint'", "fingerprint", None
    try:
        fp = parse_fingerprint(value, fingerprint_format)
    except ValueError:
        detail = f"{short_repr(value)} is not a 64-bit fingerprint (format {fingerprint_format!r})"
        return False, "bad fingerprint", "fingerprint", detail
    if time_value is None or (isinstance(time_value, str) and not time_value.strip()):
        return True, ident, fp, 0
    us = time_to_us(time_value)
    if us is None:
        detail = f"{short_repr(time_value)} is neither seconds since the epoch nor ISO 8601"
        return False, "bad timestamp", "timestamp", detail
    return True, ident, fp, int(us)


def _parse_json_object(s: str, line: int):
    """The JSON object of one line, or ``(reason, detail)`` as the local reader reports it."""
    if line == 1 and s.startswith("\ufeff"):
        s = s[1:]
    try:
        obj = parse_json_line(s)
    except (ValueError, RecursionError) as e:
        detail = str(e)
        if line == 1 and s.lstrip().startswith("["):
            detail += "; JSON input must be JSON Lines: one object per line, not an array"
        return None, ("malformed JSON", detail)
    if type(obj) is not dict:
        return None, ("not a JSON object", f"got {json_type_name(obj)}")
    return obj, None


def rows_task(
    batches: Iterable[pa.RecordBatch],
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
    ``_nd_pos``, ``_nd_line`` and ``_nd_src`` (its position, line and file). Cost: O(rows)
    Python work (each row is parsed and checked on its own).

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
        n = batch.num_rows
        if n == 0:
            continue
        lines = batch.column("_nd_line").to_numpy(zero_copy_only=False)
        ids: list[Any] = [None] * n
        values: list[Any] = [None] * n
        times: list[Any] = [None] * n
        early: dict[int, tuple[str, str | None]] = {}
        blank = np.zeros(n, dtype=bool)
        if kind in ("typed", "fp_typed"):
            ids = batch.column("_v_id").to_pylist()
            values = batch.column("_v_fp" if fingerprints else "_v_text").to_pylist()
            if "_v_time" in batch.schema.names:
                times = batch.column("_v_time").to_pylist()
        elif kind in ("jsonl", "fp_jsonl"):
            keys = ("id", "fingerprint", "timestamp") if fingerprints else names
            for i, s in enumerate(batch.column("value").to_pylist()):
                if s is None or not s.strip():
                    blank[i] = True
                    continue
                obj, problem = _parse_json_object(s, int(lines[i]))
                if problem is not None:
                    early[i] = problem
                    continue
                ids[i] = obj.get(keys[0])
                values[i] = obj.get(keys[1])
                times[i] = obj.get(keys[2]) if keys[2] is not None else None
        else:  # fp_plain, fp_tsv
            for i, s in enumerate(batch.column("value").to_pylist()):
                s = (s or "").rstrip("\r\n")
                if lines[i] == 1 and s.startswith("\ufeff"):
                    s = s[1:]
                if not s or s.isspace():
                    blank[i] = True
                    continue
                parts = s.split("\t")
                if len(parts) not in (2, 3):
                    early[i] = ("malformed row", (
                        f"expected id<TAB>fingerprint[<TAB>timestamp], got {len(parts)} fields"))
                    continue
                if parts[1].strip() == "fingerprint":
                    blank[i] = True  # a header line
                    continue
                ident = parts[0]
                if kind == "fp_tsv" and "\\" in ident:
                    ident = tsv_unescape(ident)
                ids[i], values[i] = ident, parts[1]
                times[i] = parts[2] if len(parts) == 3 else None
        out_id: list[str | None] = [None] * n
        out_text: list[str | None] = [None] * n
        out_ts = np.zeros(n, dtype=np.int64)
        out_fp = np.zeros(n, dtype=np.uint64)
        out_bytes = np.zeros(n, dtype=np.int64)
        reason: list[str | None] = [None] * n
        where: list[str | None] = [None] * n
        detail: list[str | None] = [None] * n
        for i in range(n):
            if blank[i]:
                continue
            if i in early:
                reason[i], detail[i] = early[i]
                continue
            if fingerprints:
                r = _check_fingerprint(ids[i], values[i], times[i], fingerprint_format)
            else:
                r = _check_document(ids[i], values[i], times[i], names)
            if not r[0]:
                reason[i], where[i], detail[i] = r[1], r[2], r[3]
                continue
            out_id[i], out_ts[i] = r[1], r[3]
            if fingerprints:
                out_fp[i], out_text[i] = r[2], ""
            else:
                text = r[2]
                nbytes = len(text) if text.isascii() else utf8_length(text)
                too_large = oversized_text(nbytes, max_doc_bytes)
                if too_large is not None:
                    out_id[i] = None
                    reason[i], where[i], detail[i] = "document too large", names[1], too_large
                    continue
                out_text[i] = text
                out_bytes[i] = nbytes
        out = record_batch({
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
        })
        yield out if not blank.any() else out.filter(pa.array(~blank))


def accept_rows(
    checked: DataFrame, on_error: str, units: dict[int, str], storage: Storage,
    line_of: LineOf | None = None,
) -> tuple[DataFrame, ReadStats]:
    """Good rows minus later repeats of an ID; the first bad row raises (``on_error="raise"``)
    or bad rows are counted by reason (``"skip"``), as in the local reader, where a row is
    checked before its ID is claimed, so a bad row never makes a later row a duplicate.

    ``checked`` (rows of :data:`CHECKED_SCHEMA`) must be stored by ``storage``; it is released
    here. ``units`` names the unit of each input (``"line"`` or ``"row"``) by input index.
    Returns the accepted rows (``pos, id, text, ts, fp, nbytes``, held by ``storage``) and the
    counters. Cost: a few aggregations and one join over ``checked``.

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats = accept_rows(storage.keep(checked), "skip", {0: "line"}, storage)
    """
    try:
        good = checked.where("reason is null")
        first = good.groupBy("id").agg(F.min("pos").alias("first_pos"))
        dups = good.join(first, ["id"]).where("pos > first_pos")
        stats = ReadStats()
        if on_error == "raise":
            _raise_first_bad(checked, dups, units, line_of)
        else:
            reasons = checked.where("reason is not null").groupBy("reason").count().collect()
            for r in reasons:
                stats.skipped_reasons[r["reason"]] += int(r["count"])
            repeated = dups.count()
            if repeated:
                stats.skipped_reasons["duplicate id"] += repeated
            stats.skipped = sum(stats.skipped_reasons.values())
        accepted = storage.keep(good.join(dups.select("pos"), ["pos"], "left_anti")
                            .select("pos", "id", "text", "ts", "fp", "nbytes"))
        totals = accepted.agg(F.count(F.lit(1)), F.sum("nbytes")).first()
        stats.documents = int(totals[0])
        stats.bytes = int(totals[1] or 0)
        stats.files = checked.select("src").distinct().count()
    except BaseException:
        storage.release()
        raise
    storage.release(checked)
    return accepted, stats


def _raise_first_bad(checked: DataFrame, dups: DataFrame, units: dict[int, str],
                     line_of: LineOf | None) -> None:
    """Raise the :class:`~neardup.io.InputError` of the first bad row in input order, if any."""
    bad = checked.where("reason is not null").select(
        "pos", "line", "src", "reason", "field", "detail",
        F.lit(None).cast("long").alias("first_pos"), F.lit(None).cast("string").alias("dup"))
    bad = bad.unionByName(dups.select(
        "pos", "line", "src", F.lit("duplicate id").alias("reason"), F.lit("id").alias("field"),
        F.lit(None).cast("string").alias("detail"), "first_pos", F.col("id").alias("dup")))
    found = bad.orderBy("pos").limit(1).collect()
    if not found:
        return
    r = found[0]
    unit = units[int(r.pos) >> POS_BITS]
    line = line_of(r.pos) if line_of is not None else r.line
    detail = r.detail
    if r.reason == "duplicate id":
        f = checked.where(F.col("pos") == r.first_pos).select("pos", "line", "src").first()
        f_line = line_of(f.pos) if line_of is not None else f.line
        place = f.src if f_line is None else f"{f.src}, {units[int(f.pos) >> POS_BITS]} {f_line}"
        detail = f"{short_repr(r.dup)} first seen at {place}"
    raise InputError(r.src, line, r.field, r.reason, detail, unit)
