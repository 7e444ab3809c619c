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

__all__ = ["FORBIDDEN_RE2", "MAX_ID_LENGTH", "check_id", "id_problem", "plain_id"]

MAX_ID_LENGTH = 1024
"""Longest document ID, in characters (code points)."""

# Cc (C0, DEL, C1) plus the two Unicode line breaks that are not Cc.
_FORBIDDEN_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x2028, 0x2029))
_FORBIDDEN = re.compile("[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in _FORBIDDEN_RANGES) + "]")
FORBIDDEN_RE2 = "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in _FORBIDDEN_RANGES) + "]"
"""The characters no ID may hold, as an RE2 class (for Arrow's ``match_substring_regex``)."""


def plain_id(value: Any) -> bool:
    """Whether ``value`` is a valid ID of the common kind, told without the full rules: a str
    of 1..:data:`MAX_ID_LENGTH` printable ASCII characters. False says nothing: check it with
    :func:`id_problem`. O(len(value)), in C.

    Example:
        >>> plain_id("page-17/a b"), plain_id("a\\tb"), plain_id("é")
        (True, False, False)
    """
    return (
        type(value) is str
        and 0 < len(value) <= MAX_ID_LENGTH
        and value.isascii()
        and value.isprintable()
    )


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
