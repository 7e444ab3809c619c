"""What an index refuses, and why: its exceptions, and the checks of what its API is given.

Every refusal of the index is one of these exceptions or a ``ValueError`` naming the parameter,
the bad value and the valid range, raised before anything is written, so that the command line
prints one line and the HTTP service answers with one status: :class:`DocumentExistsError` 409,
:class:`ReadOnlyIndexError` 403, a ``ValueError`` 422.

Example:
    >>> check_int("limit", 5, 0, 1000)
    5
    >>> check_int("limit", 5000, 0, 1000)
    Traceback (most recent call last):
    ...
    ValueError: limit must be in 0..1000, got 5000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.ids import MAX_ID_LENGTH, check_id
from neardup.io import parse_timestamp

__all__ = [
    "IF_EXISTS",
    "DocumentExistsError",
    "IndexDamagedError",
    "IndexLockedError",
    "IndexWriteError",
    "ReadOnlyIndexError",
    "VerificationTooLongError",
    "batch_inputs",
    "check_if_exists",
    "check_int",
    "lookup_id",
    "timestamp_us",
    "unique_ids",
]

IF_EXISTS = ("error", "skip")
"""What adding a stored ID does: raise :class:`DocumentExistsError`, or skip it."""


class DocumentExistsError(ValueError):
    """A document ID to add is already in the index (nothing was written)."""


class VerificationTooLongError(ValueError):
    """Verifying a probe against its candidates would take longer than the limit set
    (:meth:`~neardup.index.store.NearDupIndex.limit_verification`); nothing was decided."""


class IndexLockedError(OSError):
    """Another process (or another open instance) holds the index's writer lock."""


class ReadOnlyIndexError(PermissionError):
    """A write was attempted on an index opened with ``readonly=True``."""


class IndexDamagedError(OSError):
    """The index's SQLite file is damaged (corrupt pages, not a database, failed check)."""


class IndexWriteError(OSError):
    """A write to the index failed (``errno`` says why: ENOSPC for a full disk, EIO); the
    transaction was rolled back, so nothing of it is stored."""


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int if it is an integer (not a bool) in ``low..high``, else ValueError
    naming ``name``, the value and the range. O(1).

    Example:
        >>> check_int("hamming_k", np.int64(3), 0, 32)
        3
        >>> check_int("hamming_k", 2.0, 0, 32)
        Traceback (most recent call last):
        ...
        ValueError: hamming_k must be an integer in 0..32, got 2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value}")
    return int(value)


def check_if_exists(if_exists: str) -> None:
    """Raise ValueError unless ``if_exists`` is one of :data:`IF_EXISTS`. O(1).

    Example:
        >>> check_if_exists("replace")
        Traceback (most recent call last):
        ...
        ValueError: if_exists must be one of error, skip; got 'replace'
    """
    if if_exists not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {', '.join(IF_EXISTS)}; got {if_exists!r}")


def unique_ids(ids: Sequence[str], scope: str = "") -> list[str]:
    """``ids`` as a list, each checked by the rules of :mod:`neardup.ids` and none repeated
    (``scope`` says where, for the message). O(n).

    Example:
        >>> unique_ids(["a", "a"], " in a batch")
        Traceback (most recent call last):
        ...
        ValueError: ids must be unique in a batch; 'a' appears more than once
    """
    ids = list(ids)
    seen: set[str] = set()
    for i, ident in enumerate(ids):
        check_id(ident, f"ids[{i}]")
        if ident in seen:
            raise ValueError(f"ids must be unique{scope}; {ident!r} appears more than once")
        seen.add(ident)
    return ids


def lookup_id(value: Any, where: str = "id") -> str:
    """An ID to look up or remove: only the type and length are checked, so that records stored
    before the character rules of :mod:`neardup.ids` existed can still be read and removed.
    O(1).

    Example:
        >>> lookup_id("page\\t1")  # a tab breaks the rules for new IDs, not for look-ups
        'page\\t1'
    """
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH:
        return check_id(value, where)  # raises with the rule's message
    return value


def timestamp_us(value: Any, where: str) -> int:
    """A timestamp as given to an add (seconds since the epoch, ISO 8601, a datetime; None is
    0) in microseconds since the epoch; a ValueError names ``where``. O(1).

    Example:
        >>> timestamp_us("1970-01-01T00:00:01Z", "timestamp of 'a'")
        1000000
    """
    if value is None:
        return 0
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}: {error}") from None


def batch_inputs(
    ids: list[str], texts: Sequence[str] | None, fingerprints: Any, timestamps: Sequence[Any] | None
) -> tuple[list[str] | None, Any, np.ndarray]:
    """The texts (as a list), fingerprints (a list unless an array) and timestamps (``int64``
    microseconds, :func:`timestamp_us`; None: all 0) of a batch to add, each checked to have
    one entry per ID. O(n).

    Example:
        >>> texts, fps, stamps = batch_inputs(["a", "b"], None, (1, 2), [None, 2])
        >>> fps, stamps.tolist()
        ([1, 2], [0, 2000000])
    """
    n = len(ids)
    if timestamps is None:
        stamps = np.zeros(n, np.int64)
    else:
        timestamps = list(timestamps)
        if len(timestamps) != n:
            raise ValueError(f"timestamps must have one entry per id ({n}), got {len(timestamps)}")
        stamps = np.array(
            [timestamp_us(v, f"timestamp of {ids[i]!r}") for i, v in enumerate(timestamps)],
            dtype=np.int64,
        )
    if texts is not None:
        texts = list(texts)
        if len(texts) != n:
            raise ValueError(f"texts must have one entry per id ({n}), got {len(texts)}")
    elif fingerprints is not None and not isinstance(fingerprints, np.ndarray):
        fingerprints = list(fingerprints)
    if fingerprints is not None and len(fingerprints) != n:
        raise ValueError(f"fingerprints must have one entry per id ({n}), got {len(fingerprints)}")
    return texts, fingerprints, stamps
