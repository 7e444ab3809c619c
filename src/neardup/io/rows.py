"""The rules of an input row, shared by every reader: what a bad row is and how it is reported.

A row is bad when its ID is missing, empty, not a string or integer, refused by the rules of
:mod:`neardup.ids` (the same for every command and the index), or repeated; when its
text is missing, not a string, not UTF-8 or longer than ``max_doc_bytes``; when its time or
fingerprint cannot be read. Each rule is a pure function over one value (:func:`valid_id`,
:func:`valid_text`, :func:`valid_time`, :func:`valid_fingerprint`,
:func:`valid_fingerprint_time`) that answers the value read or the :class:`BadRow` it makes, so
every engine runs the same rules (the Spark engine inside its tasks). :class:`RowChecks`
reports bad rows with a read's error policy: ``on_error="raise"`` raises :class:`InputError`
naming the file, the line (or row) and the field; ``"skip"`` drops the row and counts it in
:class:`ReadStats`. :class:`~neardup.io.id_table.IdTable` finds repeated IDs in bounded
memory.

Example:
    >>> valid_id(7, "id"), valid_id("", "id")
    ('7', BadRow(field='id', reason='empty id', detail=None))
    >>> checks = RowChecks("skip")
    >>> checks.start_file("a.jsonl")
    >>> checks.checked(valid_id("", "id"), "a.jsonl", 1), checks.checked("7", "a.jsonl", 2)
    (None, '7')
    >>> dict(checks.stats.skipped_reasons)
    {'empty id': 1}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np
import pyarrow as pa

from neardup.ids import id_problem
from neardup.io.id_table import IdTable
from neardup.io.values import fingerprint_value, json_type_name, short_repr, time_to_us, utf8_length

#: What a reader does with a bad row: raise :class:`InputError`, or skip (drop and count) it.
ON_ERROR = ("raise", "skip")
#: Default of ``max_doc_bytes`` / ``--max-doc-bytes``: a document's text may hold at most this
#: many bytes of UTF-8. Shingling costs about 10-20 bytes of memory per text byte, so one
#: 16 MiB document needs a few hundred MB; web pages and articles are far below it.
DEFAULT_MAX_DOC_BYTES = 16 << 20

_Value = TypeVar("_Value")

# A row key packs (index of the file in the read, line) into one int: 40 bits of line.
_LINE_BITS = 40
_LINE_MASK = (1 << _LINE_BITS) - 1


class InputError(ValueError):
    """A bad input row (or file), located by file, line and field.

    Attributes:
        path: the file as given (``<stdin>`` for stdin).
        line: 1-based physical line (CSV/TSV include the header; Parquet: 1-based row), or None.
        field: the field involved, or None (e.g. malformed JSON).
        reason: a short category, the key used in ``ReadStats.skipped_reasons``
            (``"malformed JSON"``, ``"missing field 'text'"``, ``"duplicate id"``, …).
        detail: more information, or None.
        unit: what ``line`` counts: ``"line"`` or ``"row"``.

    Example:
        >>> str(InputError("a.jsonl", 3, "text", "text not a string", "got number"))
        "a.jsonl, line 3, field 'text': text not a string (got number)"
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        field: str | None,
        reason: str,
        detail: str | None = None,
        unit: str = "line",
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.reason = reason
        self.detail = detail
        self.unit = unit
        # A control character in a file name (a tab, a newline) would split the one line.
        shown = self.path if self.path.isprintable() else repr(self.path)
        where = shown if line is None else f"{shown}, {unit} {line}"
        if field is not None and f"'{field}'" not in reason:
            where += f", field '{field}'"
        message = f"{where}: {reason}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)

    def __reduce__(self):  # keeps the attributes when pickled across processes
        return (
            type(self),
            (self.path, self.line, self.field, self.reason, self.detail, self.unit),
        )


@dataclass
class ReadStats:
    """Counters of a read.

    Attributes:
        documents: rows accepted.
        bytes: UTF-8 bytes of the accepted texts (0 for fingerprint tables).
        skipped: rows dropped with ``on_error="skip"``.
        skipped_reasons: skipped rows per :attr:`InputError.reason`.
        files: files opened (each ``.txt`` file of a directory counts).
    """

    documents: int = 0
    bytes: int = 0
    skipped: int = 0
    skipped_reasons: Counter[str] = field(default_factory=Counter)
    files: int = 0


def check_on_error(on_error: str) -> None:
    """Raise ``ValueError`` unless ``on_error`` is one of :data:`ON_ERROR`.

    Example:
        >>> check_on_error("skip")
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}; got {on_error!r}")


def check_field_names(id_field: str, text_field: str, time_field: str | None) -> None:
    """Raise ``ValueError`` unless the ID and text fields are two different non-empty strings
    and the time field is one or None: the fields every document reader takes. O(1).

    Example:
        >>> check_field_names("id", "text", None)
    """
    for name, value in (("id_field", id_field), ("text_field", text_field)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if time_field is not None and (not isinstance(time_field, str) or not time_field):
        raise ValueError(f"time_field must be a non-empty string or None, got {time_field!r}")
    if id_field == text_field:
        raise ValueError(f"id_field and text_field must differ, both are {id_field!r}")


def check_reading_options(
    id_field: str, text_field: str, time_field: str | None, on_error: str, batch_size: int
) -> None:
    """Raise ``ValueError`` unless the options every document reader takes are valid: the
    fields (:func:`check_field_names`), ``on_error`` and a ``batch_size`` of at least 1. O(1).

    Example:
        >>> check_reading_options("id", "text", None, "skip", 100)
    """
    check_field_names(id_field, text_field, time_field)
    check_on_error(on_error)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def check_max_doc_bytes(max_doc_bytes: int | None) -> int | None:
    """``max_doc_bytes`` validated: a positive integer, or None (or 0) for no limit.

    Example:
        >>> check_max_doc_bytes(0), check_max_doc_bytes(1024)
        (None, 1024)
    """
    if max_doc_bytes is None or max_doc_bytes == 0:
        return None
    if isinstance(max_doc_bytes, bool) or not isinstance(max_doc_bytes, int) or max_doc_bytes < 0:
        raise ValueError(
            f"max_doc_bytes must be a positive integer, or 0/None for no limit; got {max_doc_bytes!r}"
        )
    return max_doc_bytes


def oversized_text(nbytes: int, max_doc_bytes: int | None) -> str | None:
    """The detail of a "document too large" row when a text of ``nbytes`` UTF-8 bytes
    exceeds ``max_doc_bytes`` (None: no limit), else None. Shared by every reader.

    Example:
        >>> oversized_text(10, 100) is None, oversized_text(2000, 1000)
        (True, '2,000 bytes of text, over the limit of 1,000; --max-doc-bytes raises it, 0 = no limit')
    """
    if max_doc_bytes is None or nbytes <= max_doc_bytes:
        return None
    return (
        f"{nbytes:,} bytes of text, over the limit of {max_doc_bytes:,}; "
        "--max-doc-bytes raises it, 0 = no limit"
    )


def missing_column(
    path: str, name: str, columns: Sequence[str], unit: str, hint: str = ""
) -> InputError:
    """The error of a table without the column ``name``, listing its ``columns`` (a problem of
    the whole file: readers raise it whatever ``on_error`` says).

    Example:
        >>> str(missing_column("a.csv", "text", ["id", "body"], "line"))
        "a.csv, line 1: missing field 'text' (no such column; columns are: id, body)"
    """
    return InputError(
        path,
        1 if unit == "line" else None,
        name,
        f"missing field '{name}'",
        f"no such column; columns are: {', '.join(map(str, columns))}{hint}",
        unit,
    )


# --------------------------------------------------------------------------------------------
# The rules of one value
# --------------------------------------------------------------------------------------------


class BadRow(NamedTuple):
    """Why a row is bad, without its place: what :meth:`RowChecks.bad` and :class:`InputError`
    take after the file and the line.

    Attributes:
        field: the field involved, or None (e.g. malformed JSON).
        reason: a short category, the key of ``ReadStats.skipped_reasons``.
        detail: more information, or None.

    Example:
        >>> str(InputError("a.jsonl", 2, *BadRow("id", "empty id")))
        "a.jsonl, line 2, field 'id': empty id"
    """

    field: str | None
    reason: str
    detail: str | None = None


def valid_id(value: Any, field: str) -> str | BadRow:
    """The ID of the field ``field`` as a string (an integer 5 is ``"5"``), or the
    :class:`BadRow` of a missing, empty or unpaired-surrogate ID, of one that is neither a
    string nor an integer, or of one the other rules of :mod:`neardup.ids` refuse (over 1,024
    characters, a control character or line separator). O(len(value)).

    Example:
        >>> valid_id(5, "id"), valid_id(None, "doc").reason
        ('5', "missing field 'doc'")
    """
    if type(value) is str:
        ident = value
    elif value is None:
        return BadRow(field, f"missing field '{field}'")
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        ident = str(int(value))
    else:
        detail = f"expected a string or integer, got {json_type_name(value)}"
        return BadRow(field, "bad id", detail)
    if not ident:
        return BadRow(field, "empty id")
    if not ident.isascii() and utf8_length(ident) is None:
        return BadRow(field, "invalid UTF-8", "unpaired surrogate in the id")
    problem = id_problem(ident)
    if problem is not None:
        return BadRow(field, "bad id", f"an ID {problem}")
    return ident


def valid_text(value: Any, field: str, max_doc_bytes: int | None) -> int | BadRow:
    """The UTF-8 length in bytes of the text of the field ``field``, or the :class:`BadRow` of
    a missing text, one that is not a string, holds an unpaired surrogate or is longer than
    ``max_doc_bytes`` (None: no limit). O(len(value)).

    Example:
        >>> valid_text("héllo", "text", None), valid_text("héllo", "text", 5).reason
        (6, 'document too large')
    """
    if type(value) is not str:
        if value is None:
            return BadRow(field, f"missing field '{field}'")
        return BadRow(field, "text not a string", f"got {json_type_name(value)}")
    nbytes = len(value) if value.isascii() else utf8_length(value)
    if nbytes is None:
        return BadRow(field, "invalid UTF-8", "unpaired surrogate in the text")
    too_large = oversized_text(nbytes, max_doc_bytes)
    if too_large is not None:
        return BadRow(field, "document too large", too_large)
    return nbytes


def utf8_bytes(texts: list[str]) -> int:
    """Total UTF-8 bytes of ``texts``, which must hold no unpaired surrogate (a parser that
    refuses them made them): what ``sum(utf8_length(t) for t in texts)`` gives, counted on the
    UTF-16 code units of all the texts at once (a unit under U+0080 is one byte, under U+0800
    two, a surrogate half of a four-byte pair two, any other three), about 2.5 times quicker
    than encoding each text. O(total length).

    Example:
        >>> utf8_bytes(["héllo", "한", "😀", ""])
        13
    """
    units = np.frombuffer("".join(texts).encode("utf-16-le"), dtype=np.uint16)
    return int(
        units.size
        + np.count_nonzero(units >= 0x80)
        + np.count_nonzero(units >= 0x800)
        - np.count_nonzero((units >= 0xD800) & (units < 0xE000))
    )


def valid_time(value: Any, field: str) -> int | BadRow:
    """The ordering key in microseconds since the epoch of the time in the field ``field``, or
    the :class:`BadRow` of a missing value or of one that is neither seconds since the epoch
    nor ISO 8601 (or out of range). O(len(value)).

    Example:
        >>> valid_time("1970-01-02", "ts"), valid_time("", "ts").reason
        (86400000000, "missing field 'ts'")
    """
    if value is None or value == "":
        return BadRow(field, f"missing field '{field}'")
    us = time_to_us(value)
    if us is not None:
        return us
    digits = isinstance(value, str) and value.strip().lstrip("+-").isdigit()
    # An int of any size is a number of seconds (math.isfinite cannot take one past a float);
    # a bool is not a time.
    number = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    real = isinstance(value, (float, np.floating)) and math.isfinite(value)
    if digits or number or real:
        detail = (
            f"{short_repr(value)} seconds is out of range: int64 microseconds span "
            f"about ±292,000 years"
        )
    else:
        detail = f"{short_repr(value)} is neither seconds since the epoch nor ISO 8601"
    return BadRow(field, "bad timestamp", detail)


def valid_fingerprint_time(value: Any, field: str = "timestamp") -> int | None | BadRow:
    """The ordering key in microseconds since the epoch of a fingerprint row's optional time,
    None when it is absent (None or blank), else as :func:`valid_time` reads it. O(len(value)).

    Example:
        >>> valid_fingerprint_time("2"), valid_fingerprint_time("  "), valid_fingerprint_time("x").reason
        (2000000, None, 'bad timestamp')
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return valid_time(value, field)


def valid_fingerprint(
    value: Any, fingerprint_format: str, field: str = "fingerprint"
) -> int | BadRow:
    """The fingerprint as an int in 0..2**64-1 (read as :func:`~neardup.io.parse_fingerprint`
    reads it, in a ``fingerprint_format`` already checked), or the :class:`BadRow` of a missing
    or bad one. O(len(value)).

    Example:
        >>> valid_fingerprint("00000000000000ff", "auto"), valid_fingerprint("x", "auto").reason
        (255, 'bad fingerprint')
    """
    if (
        type(value) is str
        and len(value) == 16
        and fingerprint_format != "dec"
        and value.isalnum()
        and value.isascii()
    ):
        try:
            return int(value, 16)
        except ValueError:
            pass
    if value is None or value == "":
        return BadRow(field, f"missing field '{field}'")
    fp = fingerprint_value(value, fingerprint_format)
    if fp is None:
        detail = f"{short_repr(value)} is not a 64-bit fingerprint (format {fingerprint_format!r})"
        return BadRow(field, "bad fingerprint", detail)
    return fp


# --------------------------------------------------------------------------------------------
# The checks of one read
# --------------------------------------------------------------------------------------------


class RowChecks:
    """The row rules of one read, with its error policy and counters.

    A reader calls :meth:`start_file` for each file, then for each row the rules it needs
    (:func:`valid_id`, :func:`valid_text`, …) through :meth:`checked`, which hands on the value
    read, or reports the :class:`BadRow` through :meth:`bad` and answers None: :meth:`bad`
    raises :class:`InputError` with ``on_error="raise"`` and counts the row in :attr:`stats`
    with ``"skip"`` (the reader then drops it). A reader finds repeated IDs its own way (an
    :class:`IdTable`, a dict) by :meth:`row_key` and reports each with :meth:`duplicate`, which
    names where the ID was first seen.

    Args:
        on_error: ``"raise"`` or ``"skip"``.
        max_doc_bytes: the largest text the read accepts, in UTF-8 bytes (None or 0: no
            limit).

    Attributes:
        stats: the read's :class:`ReadStats`.
        files: the files started, in order (their names in messages).
        max_doc_bytes: the limit, None for none.
        before_raise: called before an error is raised (the document reader checks the IDs
            still waiting for their duplicate check, so that the first bad row raises).

    Example:
        >>> checks = RowChecks("raise", max_doc_bytes=4)
        >>> checks.start_file("a.csv")
        >>> checks.checked(valid_text("abcd", "text", 4), "a.csv", 2)
        4
        >>> checks.checked(valid_text("abcde", "text", 4), "a.csv", 3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        neardup.io.rows.InputError: a.csv, line 3, field 'text': document too large (5 bytes ...)
    """

    def __init__(self, on_error: str, max_doc_bytes: int | None = None) -> None:
        self.max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
        check_on_error(on_error)
        self.raise_errors = on_error == "raise"
        self.stats = ReadStats()
        self.files: list[str] = []
        self.units: list[str] = []
        self.file_key = 0
        self.unit = "line"
        self.before_raise: Callable[[], None] | None = None

    def start_file(self, display: str, unit: str = "line") -> None:
        """Rows from now on are in the file ``display``, counted in ``unit`` (``"line"`` or
        ``"row"``)."""
        self.file_key = len(self.files) << _LINE_BITS
        self.files.append(display)
        self.units.append(unit)
        self.stats.files += 1
        self.unit = unit

    def row_key(self, line: int | None) -> int:
        """One int for the row at ``line`` (None: the whole file) of the current file: the
        file's index in the read and the line, for :meth:`duplicate`."""
        return self.file_key | (line or 0)

    def bad(
        self, path: str, line: int | None, field: str | None, reason: str, detail: str | None = None
    ) -> None:
        """Report a bad row: raise its :class:`InputError`, or count it as skipped."""
        if self.raise_errors:
            if self.before_raise is not None:
                # Earlier rows still waiting for their duplicate-ID check are reported first.
                self.before_raise()
            raise InputError(path, line, field, reason, detail, self.unit)
        self.stats.skipped += 1
        self.stats.skipped_reasons[reason] += 1

    def checked(self, value: _Value | BadRow, path: str, line: int | None) -> _Value | None:
        """The value a rule read, or None once the :class:`BadRow` it answered instead has been
        reported (:meth:`bad`) for the row at ``line`` of ``path``.

        Example:
            >>> checks = RowChecks("skip")
            >>> checks.start_file("a.csv")
            >>> checks.checked(valid_time("soon", "ts"), "a.csv", 2), checks.stats.skipped
            (None, 1)
        """
        if type(value) is BadRow:
            self.bad(path, line, *value)
            return None
        return value  # type: ignore[return-value]

    def repeated_ids(
        self, seen: IdTable, ids: list[str] | pa.Array, keys: list[int], field: str
    ) -> list[int]:
        """Check ``ids`` (rows ``keys``, :meth:`row_key` values) in order against ``seen``, the
        IDs of every earlier row, adding the new ones; report each repeated one
        (:meth:`duplicate`: the first raises with ``on_error="raise"``) and return their places
        in ``ids`` (strs, or an Arrow string array). A repeat among the IDs ``seen`` spilled
        (:meth:`report_spilled`) that comes before the first one found here is reported before
        it. :attr:`before_raise` is not called meanwhile (it is what calls this). O(len(ids))
        expected.

        Example:
            >>> checks = RowChecks("skip")
            >>> checks.start_file("a.tsv")
            >>> checks.repeated_ids(IdTable(), ["a", "b", "a"], [1, 2, 3], "id")
            [2]
        """
        with self._hook_off():
            at = np.array(keys, dtype=np.int64)
            firsts = seen.check(ids, at)
            repeated = np.flatnonzero(firsts >= 0).tolist()
            if repeated:
                self.report_spilled(seen, field, before=int(at[repeated[0]]))
            arrow = isinstance(ids, pa.Array)
            for i in repeated:
                ident = ids[i].as_py() if arrow else ids[i]
                self.duplicate(ident, int(firsts[i]), int(at[i]), field)
            return repeated

    def report_spilled(self, seen: IdTable, field: str, before: int | None = None) -> None:
        """Report the repeats among the IDs that ``seen`` spilled
        (:meth:`~neardup.io.id_table.IdTable.spilled_repeats`) at rows before the row key
        ``before`` (None: all), in input order (the first raises with ``on_error="raise"``).
        Their IDs are not held: the report names both rows. O(IDs spilled) when any were."""
        if not seen.spilled:
            return
        repeats, firsts = seen.spilled_repeats()
        with self._hook_off():
            for key, first in zip(repeats.tolist(), firsts.tolist()):
                if before is not None and key >= before:
                    break
                self.duplicate(None, first, key, field)

    @contextmanager
    def _hook_off(self) -> Iterator[None]:
        """:attr:`before_raise` unset meanwhile: the reports inside may raise, and the hook
        is what calls them."""
        hook, self.before_raise = self.before_raise, None
        try:
            yield
        finally:
            self.before_raise = hook

    def duplicate(self, ident: str | None, first: int, key: int, field: str) -> None:
        """Report ``ident`` (None: not known) at the row ``key``, first seen at the row
        ``first`` (both :meth:`row_key` values)."""
        path, line = self.files[key >> _LINE_BITS], (key & _LINE_MASK) or None
        if not self.raise_errors:
            self.bad(path, line, field, "duplicate id")
            return
        index, first_line = first >> _LINE_BITS, first & _LINE_MASK
        where = self.files[index]
        if first_line:
            where += f", {self.units[index]} {first_line}"
        value = "" if ident is None else f"{short_repr(ident)} "
        self.bad(path, line, field, "duplicate id", f"{value}first seen at {where}")
