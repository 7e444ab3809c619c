"""A persistent near-duplicate index for crawlers: an embedded store (:mod:`neardup.index.store`)
and an HTTP service on top of it (:mod:`neardup.index.service`).

Two kinds of index, chosen when it is created (``method``), decide near-duplicates exactly as
``neardup dedup --method M --grouping components`` with the same settings does:

``simhash``
    64-bit SimHash fingerprints within ``hamming_k`` bits, found with permutation tables
    (:mod:`~neardup.index.tables`). Small (about 90 bytes per document in memory, 150 on disk)
    and fast, but it catches only about a third of light word-level edits (README, "Quality").
``minhash`` (``dedup``'s default)
    MinHash LSH band candidates, each verified on the texts by the run's verification (by
    default the LCS resemblance at 0.8): the groups of ``dedup``'s defaults, which find
    nearly every light edit. Band tables in memory (:mod:`neardup.index.minhash`, 8 bytes per
    band per document: 258 at the default 32 bands), the texts zstd-compressed in SQLite, read
    only for the candidates that the bounds of :mod:`~neardup.index.verifier` leave (sizes and
    512-bit sketches in memory, count sketches mapped from the cache), each group's candidates
    only until enough of them match.

The modules, each one concept, bottom first (a module imports only those above it in this list):

- :mod:`~neardup.index.errors`: what an index refuses (exceptions, checks of its inputs).
- :mod:`~neardup.index.results`: what it answers (records, matches, query and add results).
- :mod:`~neardup.index.settings`: the settings it decides with (``dedup``'s).
- :mod:`~neardup.index.sorted_rows`, :mod:`~neardup.index.tables`,
  :mod:`~neardup.index.lcs_bound`, :mod:`~neardup.index.minhash`: the in-memory tables (SimHash
  permutation tables, MinHash band tables and verification).
- :mod:`~neardup.index.storage`: the records in SQLite, the writer lock, durability.
- :mod:`~neardup.index.cache`: the tables' cache on disk, and loading them.
- :mod:`~neardup.index.verifier`: verifying MinHash candidates while reading as few texts as
  possible.
- :mod:`~neardup.index.matches`: what a probe matches (queries; the read half of adds).
- :mod:`~neardup.index.grouping`: the grouping rules, kept through adds and removals.
- :mod:`~neardup.index.build`: a new index from a whole corpus.
- :mod:`~neardup.index.store`: :class:`NearDupIndex`, the public operations.
- :mod:`~neardup.index.integrity`: ``neardup index check`` and ``recover``.
- :mod:`~neardup.index.service`: the HTTP service (needs the ``service`` extra).

Example:
    >>> import tempfile
    >>> from neardup.index import NearDupIndex
    >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
    ...     index.add("a", "a page about cats and dogs").status
    'new'
"""

from neardup.ids import MAX_ID_LENGTH
from neardup.index.errors import (
    DocumentExistsError,
    IndexDamagedError,
    IndexLockedError,
    IndexWriteError,
    ReadOnlyIndexError,
)
from neardup.index.results import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    AddResult,
    Match,
    QueryResult,
    Record,
)
from neardup.index.settings import describe_settings, index_settings
from neardup.index.store import NearDupIndex
from neardup.index.tables import PermutationTables

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_ID_LENGTH",
    "MAX_LIMIT",
    "AddResult",
    "DocumentExistsError",
    "IndexDamagedError",
    "IndexLockedError",
    "IndexWriteError",
    "Match",
    "NearDupIndex",
    "PermutationTables",
    "QueryResult",
    "ReadOnlyIndexError",
    "Record",
    "describe_settings",
    "index_settings",
]
