"""The permutation-table search of ``neardup pairs`` in parts that fit a memory budget.

The in-memory search (:class:`~neardup.candidates.hamming.HammingSearch`) sorts all N
fingerprints and searches the tables over all of them. Here, when N fingerprints do not fit
the budget, the tables are taken in their groups by first block (the tables of
:class:`~neardup.candidates.plan.TablePlan` that start with the same block, as
:mod:`neardup.candidates.tables` groups them): for each group, the rows (fingerprint,
position) are split into ``2**b`` partition files by the leading ``b`` bits of that block.
Two fingerprints that a table of the group pairs agree on the table's whole prefix, so on
those bits: every pair the group finds lies in one partition, which is searched alone in
memory with the group's tables (:func:`~neardup.candidates.tables.distinct_hamming_pairs`
with ``first_block``). Identical fingerprints fall into one partition too. A pair is kept by
the first table whose prefix it shares, whatever the partition (the rule of
:mod:`neardup.candidates.plan`), so every pair of distinct fingerprints is found once over all
groups, and the pairs of identical ones are taken from the first group only.

What each part gives (:class:`UnitLinks`): the links that connect its documents (each
identical fingerprint's holders as a star to the first of them, and the first holders of
every two fingerprints within k, as the in-memory search's star edges do) and, when every
pair is reported, every pair of documents, packed ``i << 32 | j`` (``i < j``), sorted and
distinct.

Example:
    >>> import tempfile
    >>> from neardup.engines.spill import MemoryBudget, WorkDir
    >>> fps = np.array([5, 4, 5, 1 << 40], dtype=np.uint64)
    >>> with WorkDir(tempfile.mkdtemp(), key="k", name_hint="p.tsv") as work:
    ...     found = []
    ...     search = PartitionedSearch(work, fps.shape[0], 1, row_limit=2)
    ...     search.run(lambda start, stop: fps[start:stop], found.append, True)
    ...     sorted(p for unit in found for p in unit.pairs.tolist())
    [1, 2, 4294967298]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from neardup.candidates.plan import TablePlan, plan_tables
from neardup.candidates.radix import digit_starts, in_halves, sorted_distinct
from neardup.candidates.tables import IdenticalBuckets, distinct_hamming_pairs
from neardup.engines.spill import ColumnFile, WorkDir
from neardup.engines.workers import ordered_map

__all__ = ["MAX_ROWS", "PartitionedSearch", "UnitLinks", "partitioned"]

#: Rows a run may have: a document is 32 bits of a packed pair.
MAX_ROWS = 1 << 32

#: Largest prefix group compared directly, as in the in-memory search.
_MAX_GROUP = 4096

#: Rows read from the fingerprint column at a time while partitioning.
_CHUNK_ROWS = 1 << 22


@dataclass
class UnitLinks:
    """What the search of one part found.

    Attributes:
        links: uint64 packed ``a << 32 | b`` document pairs that connect the part's linked
            documents (stars over identical fingerprints, first holders of near ones).
        pairs: every pair of documents found, packed ``i << 32 | j`` with ``i < j``, sorted
            and distinct (None unless asked for).
        distinct: distinct fingerprints of the part (counted in the first group only, else 0).
        near: pairs of distinct fingerprints within k the part found.
    """

    links: np.ndarray
    pairs: np.ndarray | None
    distinct: int
    near: int


class PartitionedSearch:
    """Every pair of ``rows`` fingerprints within ``hamming_k``, a part at a time (module
    docstring): in one part when ``rows <= row_limit``, else in ``2**b`` partitions a group of
    tables, ``b`` the fewest bits for partitions of at most ``row_limit / threads`` rows of
    random fingerprints (a prefix shared by more rows makes its partition larger: it is
    searched whole all the same), ``threads`` of them searched at once on threads of their own
    and handed on in order. Partition files are written to ``work`` and removed once searched.

    Args:
        work: the run's work folder.
        rows: fingerprints (documents); less than 2**32.
        hamming_k: largest distance, 0..32 bits.
        row_limit: most rows the parts searched at once should hold.
        threads: partitions searched at once (default: two, or one on one core), each of at
            most ``row_limit / threads`` rows.
    """

    def __init__(
        self,
        work: WorkDir,
        rows: int,
        hamming_k: int,
        row_limit: int,
        threads: int = min(2, os.cpu_count() or 1),
    ):
        if not 0 <= rows < MAX_ROWS:
            raise ValueError(f"rows must be in 0..{MAX_ROWS - 1}; got {rows}")
        if row_limit < 1:
            raise ValueError(f"row_limit must be >= 1; got {row_limit}")
        self.work = work
        self.rows = int(rows)
        self.hamming_k = int(hamming_k)
        self.threads = max(1, int(threads))
        self.plan: TablePlan = plan_tables(max(self.rows, 2), self.hamming_k)
        # One part searches on every core itself; partitions share the limit.
        per_part = row_limit if self.rows <= row_limit else max(1, row_limit // self.threads)
        parts = -(-self.rows // int(per_part))
        narrowest = min(width for _, width in self.plan.blocks)
        #: Leading bits of a group's first block that split the rows (0: one part).
        self.bits = min(max(parts - 1, 0).bit_length(), narrowest)
        #: Bytes written to partition files.
        self.disk_bytes = 0

    def run(
        self,
        fingerprints: Callable[[int, int], np.ndarray],
        found: Callable[[UnitLinks], None],
        with_pairs: bool,
    ) -> None:
        """Search: ``fingerprints(start, stop)`` gives the uint64 fingerprints of the rows
        ``start..stop-1`` (read in chunks, once a group); ``found`` is called with each part's
        :class:`UnitLinks`; ``with_pairs``: list every pair too. O(N log N) per group, plus
        the pairs."""
        if self.bits == 0:
            values = fingerprints(0, self.rows)
            found(_unit_links(values, None, None, self.hamming_k, True, with_pairs))
            return
        groups = sorted({table[0] for table in self.plan.tables})

        def searched(column: ColumnFile, first: int) -> UnitLinks:
            rows = np.fromfile(column.path, dtype=np.uint64).reshape(-1, 2)
            column.path.unlink()
            values, positions = rows[:, 0].copy(), rows[:, 1].copy()
            del rows
            unit = (self.plan, first)
            identical = first == groups[0]
            return _unit_links(values, positions, unit, self.hamming_k, identical, with_pairs)

        for first in groups:
            files = self._partition(fingerprints, first)
            # While a partition's links are handed on, ``threads`` more are searched (and no
            # more: each holds its rows).
            for _, unit in ordered_map(
                searched, files, self.threads, first, in_flight=self.threads + 1
            ):
                found(unit)

    def _partition(self, fingerprints: Callable[[int, int], np.ndarray], first: int) -> list:
        """Split the rows into the partition files of the tables of first block ``first``:
        (fingerprint, position) rows, in input order within a file."""
        start, width = self.plan.blocks[first]
        shift = start + width - self.bits
        files = [
            ColumnFile(self.work, f"part-{first}-{p}", np.zeros((0, 2), np.uint64))
            for p in range(1 << self.bits)
        ]
        for lo in range(0, self.rows, _CHUNK_ROWS):
            hi = min(self.rows, lo + _CHUNK_ROWS)
            values = np.asarray(fingerprints(lo, hi), dtype=np.uint64)
            rows, bounds = partitioned(values, lo, shift, self.bits)
            for p, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
                if b > a:
                    files[p].append(rows[a:b])
            self.disk_bytes += rows.nbytes
        return files


def partitioned(values: np.ndarray, first: int, shift: int, width: int) -> tuple:
    """The rows ``(values[i], first + i)`` (uint64[n, 2]) ordered by the partition of each
    value, its bits ``shift .. shift + width - 1``, input order kept within a partition, and
    the ``2**width + 1`` bounds of the partitions in them: a counting sort, each half of the
    values counted and placed on its own core (a partition holds the first half's rows, then
    the second's). O(n + 2**width).

    Example:
        >>> rows, bounds = partitioned(np.array([3, 0, 2, 1], np.uint64), 10, 1, 1)
        >>> rows.tolist(), bounds.tolist()
        ([[0, 11], [1, 13], [3, 10], [2, 12]], [0, 2, 4])
    """
    n = values.shape[0]
    # Row 1 stays zero when one call takes every value (too few for two cores).
    starts = np.zeros((2, (1 << width) + 1), dtype=np.int64)
    in_halves(_counted, n, values, shift, width, starts)
    # Partition p: the first half's rows from at[0][p], the second half's after them.
    at = np.stack([starts[0, :-1] + starts[1, :-1], starts[0, 1:] + starts[1, :-1]])
    rows = np.empty((n, 2), dtype=np.uint64)
    in_halves(_placed, n, values, np.uint64(first), shift, width, at, rows)
    return rows, starts[0] + starts[1]


@njit(cache=True, nogil=True)
def _counted(half, lo, hi, values, shift, width, starts):
    digit_starts(values[lo:hi], shift, width, starts[half])


@njit(cache=True, nogil=True)
def _placed(half, lo, hi, values, first, shift, width, at, rows):
    mask = np.uint64((1 << width) - 1)
    to = at[half]
    for i in range(lo, hi):
        p = (values[i] >> np.uint64(shift)) & mask
        rows[to[p], 0] = values[i]
        rows[to[p], 1] = first + np.uint64(i)
        to[p] += 1


def _unit_links(
    values: np.ndarray,
    positions: np.ndarray | None,
    unit: tuple[TablePlan, int] | None,
    hamming_k: int,
    identical: bool,
    with_pairs: bool,
) -> UnitLinks:
    """Search one part: the fingerprints ``values`` of the documents ``positions`` (None: the
    rows 0..n-1, every table, ``identical`` then true), with the tables of the group
    ``unit = (plan, first block)``; ``identical``: also the pairs of identical
    fingerprints."""
    buckets = IdenticalBuckets.of(values)
    distinct = buckets.values
    if unit is None:
        plan, first = plan_tables(max(distinct.shape[0], 2), hamming_k), None
    else:
        plan, first = unit
    # The links and pairs need no order of the near pairs: their sort is skipped.
    a, b, _ = distinct_hamming_pairs(
        distinct, hamming_k, plan, _MAX_GROUP, first_block=first, ordered=False
    )
    members = buckets.members if positions is None else positions[buckets.members]
    links = np.empty(_links_size(buckets.offsets, a.shape[0], identical), np.uint64)
    pairs = None
    with ThreadPoolExecutor(1) as pool:
        # The links on a core of their own while the pairs are listed and sorted.
        linked = pool.submit(_fill_links, buckets.offsets, members, a, b, identical, links)
        if with_pairs:
            pairs = np.empty(_pairs_size(buckets.offsets, a, b, identical), np.uint64)
            _fill_pairs(buckets.offsets, members, a, b, identical, pairs)
            pairs = sorted_distinct(pairs, in_place=True)
        linked.result()
    return UnitLinks(links, pairs, int(distinct.shape[0]) if identical else 0, int(a.shape[0]))


def _links_size(offsets: np.ndarray, near: int, identical: bool) -> int:
    extra = int(offsets[-1]) - (offsets.shape[0] - 1) if identical else 0
    return extra + near


@njit(cache=True, nogil=True)
def _pack(i, j):
    i, j = np.uint64(i), np.uint64(j)  # positions as int64 or uint64
    return (min(i, j) << np.uint64(32)) | max(i, j)


@njit(cache=True, nogil=True)
def _fill_links(offsets, members, a, b, identical, out):
    """Each bucket's members after the first linked to its first (with ``identical``), then
    the first members of the buckets of each near pair ``(a[p], b[p])``, packed."""
    w = 0
    if identical:
        for v in range(offsets.shape[0] - 1):
            head = members[offsets[v]]
            for p in range(offsets[v] + 1, offsets[v + 1]):
                out[w] = _pack(head, members[p])
                w += 1
    for p in range(a.shape[0]):
        out[w] = _pack(members[offsets[a[p]]], members[offsets[b[p]]])
        w += 1


@njit(cache=True, nogil=True)
def _pairs_size(offsets, a, b, identical):
    total = 0
    if identical:
        for v in range(offsets.shape[0] - 1):
            c = offsets[v + 1] - offsets[v]
            total += c * (c - 1) // 2
    for p in range(a.shape[0]):
        total += (offsets[a[p] + 1] - offsets[a[p]]) * (offsets[b[p] + 1] - offsets[b[p]])
    return total


@njit(cache=True, nogil=True)
def _fill_pairs(offsets, members, a, b, identical, out):
    """Every pair of documents: two holders of one fingerprint (with ``identical``), a
    holder of ``a[p]``'s with one of ``b[p]``'s; packed, unordered."""
    w = 0
    if identical:
        for v in range(offsets.shape[0] - 1):
            for p in range(offsets[v], offsets[v + 1] - 1):
                for q in range(p + 1, offsets[v + 1]):
                    out[w] = _pack(members[p], members[q])
                    w += 1
    for p in range(a.shape[0]):
        for x in range(offsets[a[p]], offsets[a[p] + 1]):
            for y in range(offsets[b[p]], offsets[b[p] + 1]):
                out[w] = _pack(members[x], members[y])
                w += 1
