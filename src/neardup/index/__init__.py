"""A persistent near-duplicate index for crawlers: an embedded store (:mod:`neardup.index.store`)
and an HTTP service on top of it (:mod:`neardup.index.service`).

Example:
    >>> import tempfile
    >>> from neardup.index import NearDupIndex
    >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
    ...     index.add("a", "a page about cats and dogs").status
    'new'
"""

from neardup.index.store import (
    DEFAULT_LIMIT,
    MAX_ID_LENGTH,
    MAX_LIMIT,
    AddResult,
    DocumentExistsError,
    IndexLockedError,
    Match,
    NearDupIndex,
    PermutationTables,
    QueryResult,
    ReadOnlyIndexError,
    Record,
)

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_ID_LENGTH",
    "MAX_LIMIT",
    "AddResult",
    "DocumentExistsError",
    "IndexLockedError",
    "Match",
    "NearDupIndex",
    "PermutationTables",
    "QueryResult",
    "ReadOnlyIndexError",
    "Record",
]
