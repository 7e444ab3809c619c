"""What an index answers: a stored :class:`Record`, the :class:`Match` of a probe, and the answers
to a query (:class:`QueryResult`) and to an add (:class:`AddResult`).

Each class is also the schema of its JSON form (``to_dict``: what ``neardup index ... --json``
prints and the HTTP service sends). :func:`json_fields` reads that schema from the dataclass
fields, so the service's OpenAPI models are derived from these classes rather than written
again. A field's metadata says where the JSON differs from the Python value: ``json`` (the JSON
type: fingerprints travel as 16 hex digits), ``optional`` (the key is left out when the value is
None) and ``doc`` (its description).

Example:
    >>> m = Match("a", 2, "a", "a")
    >>> m.to_dict()
    {'id': 'a', 'distance': 2, 'duplicate_id': 'a', 'original_id': 'a'}
    >>> list(json_fields(Match))
    ['id', 'distance', 'duplicate_id', 'original_id', 'similarity']
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from neardup.index.errors import check_int
from neardup.io.values import us_to_iso

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "AddResult",
    "JsonField",
    "Match",
    "QueryResult",
    "Record",
    "check_limit",
    "json_fields",
]

DEFAULT_LIMIT = 10
"""Matches listed per result by default."""
MAX_LIMIT = 1000
"""Largest ``limit``: the number of matches listed per result."""

_HEX = {"json": str}
"""A fingerprint's JSON: 16 hex digits."""


def check_limit(limit: Any) -> int:
    """``limit`` (matches to list per result) checked to be an integer in ``0..1000``. O(1).

    Example:
        >>> check_limit(3)
        3
    """
    return check_int("limit", limit, 0, MAX_LIMIT)


def _hex(fp: int) -> str:
    return f"{int(fp):016x}"


@dataclass(frozen=True)
class Match:
    """A stored near-duplicate of a probe.

    Attributes:
        id: the stored document's ID.
        distance: SimHash index: Hamming distance in bits between the two fingerprints;
            MinHash index: None.
        duplicate_id: the duplicate ID of the stored document's group (its original's ID).
        original_id: the original of that group (same as ``duplicate_id``).
        similarity: MinHash index: the verification measure of the pair (LCS resemblance or
            Jaccard, in 0..1; the MinHash estimate of Jaccard with ``verify="none"``);
            SimHash index: None.
    """

    id: str
    distance: int | None = field(
        metadata={
            "optional": True,
            "doc": "SimHash index: Hamming distance in bits (absent for MinHash).",
        }
    )
    duplicate_id: str
    original_id: str
    similarity: float | None = field(
        default=None,
        metadata={
            "optional": True,
            "doc": "MinHash index: the verification measure in 0..1 (absent for SimHash).",
        },
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``distance`` (SimHash) or ``similarity`` (MinHash)."""
        out: dict[str, Any] = {"id": self.id}
        if self.similarity is None:
            out["distance"] = self.distance
        else:
            out["similarity"] = self.similarity
        out.update(duplicate_id=self.duplicate_id, original_id=self.original_id)
        return out


_MATCHES = {"json": list[Match]}

_EXACT = {
    "doc": "Whether match_count counts every stored match (else it is a lower bound: a MinHash "
    "index stops verifying a group's candidates once enough of them match)."
}


@dataclass(frozen=True)
class AddResult:
    """What adding one document decided, as of right after it was added.

    Attributes:
        id: the document's ID.
        status: ``"new"`` (no stored near-duplicate: it starts a group),
            ``"duplicate"`` (it matched stored documents and joined their group) or
            ``"exists"`` (the ID was already stored and ``if_exists="skip"``: nothing changed;
            the other fields describe the stored record).
        fingerprint: its SimHash (``uint64`` value as a Python int); in a MinHash index the
            64-bit content fingerprint of its normalised text (equal for exact duplicates).
        duplicate_id, original_id: its group's original's ID (itself if it is the original).
        is_original: whether it is its group's original.
        group_size: members of its group.
        match_count: stored near-duplicates (``matches`` lists at most ``limit``): all of them
            when ``match_count_exact``, else at least this many (see :class:`QueryResult`).
        matches: the nearest matches, by distance (or descending similarity) then ID; all are
            in its group now.
        match_count_exact: whether ``match_count`` counts every stored match.
    """

    id: str
    status: Literal["new", "duplicate", "exists"]
    fingerprint: int = field(metadata=_HEX)
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int
    match_count: int
    matches: tuple[Match, ...] = field(default=(), metadata=_MATCHES)
    match_count_exact: bool = field(default=True, metadata=_EXACT)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as 16 hex digits)."""
        return {
            "id": self.id,
            "status": self.status,
            "fingerprint": _hex(self.fingerprint),
            "duplicate_id": self.duplicate_id,
            "original_id": self.original_id,
            "is_original": self.is_original,
            "group_size": self.group_size,
            "match_count": self.match_count,
            "matches": [m.to_dict() for m in self.matches],
            "match_count_exact": self.match_count_exact,
        }


@dataclass(frozen=True)
class QueryResult:
    """The stored near-duplicates of a probe (nothing is stored).

    Attributes:
        fingerprint: the probe's SimHash (MinHash index: its content fingerprint).
        status: ``"duplicate"`` if at least one stored document is a near-duplicate,
            else ``"new"``.
        duplicate_id, original_id: the group the probe would join if it were added now: the
            earliest original (timestamp, then position) among its matches' groups; None if
            it has no match. (A probe bridging several groups would merge them.)
        match_count: near-duplicates stored. SimHash: all of them. MinHash: all of them
            when ``match_count_exact``; else at least this many, as a probe with many
            candidates has each group's verified only until ``limit`` of them (at least one)
            match: the groups it matches, and so ``duplicate_id`` and ``original_id``, are
            exact, while a popular template's thousands of copies are not all compared
            (``count_all=True`` compares them all).
        matches: the nearest ``limit`` matches (of those verified), by distance (or
            descending similarity) then ID, each with its own group.
        id: the probe's ID when one was given (batch queries), else None.
        match_count_exact: whether ``match_count`` counts every stored match.
    """

    fingerprint: int = field(metadata=_HEX)
    status: Literal["new", "duplicate"]
    duplicate_id: str | None
    original_id: str | None
    match_count: int
    matches: tuple[Match, ...] = field(default=(), metadata=_MATCHES)
    id: str | None = field(default=None, metadata={"optional": True})
    match_count_exact: bool = field(default=True, metadata=_EXACT)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as 16 hex digits)."""
        out: dict[str, Any] = {} if self.id is None else {"id": self.id}
        out.update(
            status=self.status,
            fingerprint=_hex(self.fingerprint),
            duplicate_id=self.duplicate_id,
            original_id=self.original_id,
            match_count=self.match_count,
            matches=[m.to_dict() for m in self.matches],
            match_count_exact=self.match_count_exact,
        )
        return out


@dataclass(frozen=True)
class Record:
    """One stored document.

    Attributes:
        id: its ID.
        fingerprint: its SimHash (MinHash index: its content fingerprint).
        timestamp: ``timestamp_us`` in ISO 8601, UTC (None beyond the year 9999); derived.
        timestamp_us: microseconds since the Unix epoch (0 if none was given).
        position: insertion number (1, 2, ...), the tie-break between equal timestamps.
        duplicate_id, original_id: its group's original's ID.
        is_original: whether it is its group's original.
        group_size: members of its group.

    Example:
        >>> Record("a", 255, 0, 1, "a", "a", True, 1).timestamp
        '1970-01-01T00:00:00Z'
    """

    id: str
    fingerprint: int = field(metadata=_HEX)
    timestamp: str | None = field(init=False)
    timestamp_us: int
    position: int
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int

    def __post_init__(self) -> None:
        try:
            # The fraction only when there is one: the record's JSON form in the HTTP API.
            stamp = us_to_iso(self.timestamp_us, timespec="auto")
        except OverflowError:  # beyond the year 9999: ISO 8601 has no form for it
            stamp = None
        object.__setattr__(self, "timestamp", stamp)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (fingerprint as hex, timestamp also as ISO 8601 UTC)."""
        return {
            "id": self.id,
            "fingerprint": _hex(self.fingerprint),
            "timestamp": self.timestamp,
            "timestamp_us": self.timestamp_us,
            "position": self.position,
            "duplicate_id": self.duplicate_id,
            "original_id": self.original_id,
            "is_original": self.is_original,
            "group_size": self.group_size,
        }


@dataclass(frozen=True)
class JsonField:
    """One key of a result's JSON form: its JSON ``type`` (a result class inside stands for
    its own JSON form), whether the key is always ``required``, and its ``doc``."""

    type: Any
    required: bool
    doc: str | None


def json_fields(cls: type) -> dict[str, JsonField]:
    """The keys of ``cls.to_dict()`` for a result class of this module, in field order. O(fields).

    Example:
        >>> json_fields(Record)["fingerprint"]
        JsonField(type=<class 'str'>, required=True, doc=None)
        >>> json_fields(QueryResult)["id"].required
        False
    """
    hints = typing.get_type_hints(cls)
    return {
        f.name: JsonField(
            f.metadata.get("json", hints[f.name]),
            not f.metadata.get("optional", False),
            f.metadata.get("doc"),
        )
        for f in dataclasses.fields(cls)
    }
