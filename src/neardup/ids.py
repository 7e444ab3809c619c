"""Document ID rules, in one place for the readers, the CLI, the index and the HTTP service.

A valid document ID is a ``str`` of 1 to :data:`MAX_ID_LENGTH` (1,024) characters, valid
Unicode (no lone surrogates, so it encodes to UTF-8), with no control character (Unicode
category ``Cc``: tab, newline, carriage return, NUL, DEL, C1 controls) and no line or paragraph
separator (U+2028, U+2029).

Why: IDs travel through line-based files (TSV and JSONL outputs, ``--ids-file``), URL paths
(``GET /v1/documents/{id}``) and SQLite; a newline or a tab in an ID splits a row, and a path
segment with a newline never matches the route, so such a document could be stored but never
fetched or removed. Everything else (spaces, slashes, any script, emoji) is allowed.

Example:
    >>> check_id("page-17/a b")
    'page-17/a b'
    >>> id_problem("two\\nlines")
    "must not contain control characters (found '\\\\n' at index 3)"
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_ID_LENGTH", "check_id", "id_problem"]

MAX_ID_LENGTH = 1024
"""Longest document ID, in characters (code points)."""

# Cc (C0, DEL, C1) plus the two Unicode line breaks that are not Cc.
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def id_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid document ID (a phrase that follows the word "ID"), or None
    if it is one. O(len(value)).

    Example:
        >>> id_problem(""), id_problem("ok")
        ('must have 1..1024 characters, got 0', None)
    """
    if not isinstance(value, str):
        return f"must be a string of 1..{MAX_ID_LENGTH} characters, got {type(value).__name__}"
    if not 1 <= len(value) <= MAX_ID_LENGTH:
        return f"must have 1..{MAX_ID_LENGTH} characters, got {len(value)}"
    bad = _FORBIDDEN.search(value)
    if bad is not None:
        return f"must not contain control characters (found {bad.group()!r} at index {bad.start()})"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"must be valid Unicode (lone surrogate at index {error.start})"
    return None


def check_id(value: Any, where: str = "id") -> str:
    """``value`` if it is a valid document ID, else ValueError naming ``where`` and the rule.
    O(len(value)).

    Example:
        >>> check_id("a\\tb", "ids[0]")
        Traceback (most recent call last):
        ...
        ValueError: ids[0] must not contain control characters (found '\\t' at index 1): 'a\\tb'
    """
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(f"{where} {problem}: {value!r:.80}")
    return value
