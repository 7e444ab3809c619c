"""Exact duplicates: documents of one content fingerprint (the 128-bit hash of the normalised
text) share a representative, the earliest of them (:func:`content_representatives`); the
later stages compare representatives only (:meth:`Duplicates.representative_rows`), and find a
duplicate's representative in :class:`Duplicates`, which holds the duplicates alone.

Fingerprints read back from disk (an out-of-core run past its budget) are split into parts by
the top bits of their hash, so that one part's fingerprints, indices and table fit the room:
one scan puts each document in its part's store (a file), and each part is then solved in turn
(:func:`representatives_by_parts`). Equal fingerprints share a part: the same representatives.

Every array of document indices here is of :func:`~neardup.memory.index_dtype` (4 bytes a
document below :data:`~neardup.memory.INDEX32_BELOW` documents, else 8).

Example:
    >>> c = np.array([[1, 1], [2, 2], [1, 1]], dtype=np.uint64)
    >>> rep_of = content_representatives(c, np.array([0, 1, 2]))
    >>> duplicates = Duplicates.of(rep_of)
    >>> own = duplicates.representative_rows()
    >>> rep_of.tolist(), duplicates.members.tolist(), own.rows().tolist()
    ([0, 1, 0], [2], [0, 1])
    >>> duplicates.representatives(np.array([2, 1])).tolist()
    [0, 1]
    >>> class Part(list):  # a part's rows in memory (a run puts them on disk)
    ...     def read(self):
    ...         return np.concatenate(self)
    ...     remove = list.clear
    >>> blocks = lambda start, end: c[start:end]
    >>> representatives_by_parts(blocks, 3, np.array([0, 1, 2]), 0, lambda p: Part()).tolist()
    [0, 1, 0]
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numba import njit

from neardup.candidates.radix import argsort64, in_halves
from neardup.memory import index_dtype
from neardup.rank_directory import RowSet, directory_of, holds, rank_of

__all__ = [
    "PARALLEL_MIN_DOCUMENTS",
    "Duplicates",
    "PartStore",
    "content_representatives",
    "representatives_by_parts",
]


def content_representatives(content: np.ndarray, rank: np.ndarray, workers: int = 1) -> np.ndarray:
    """For each document, the earliest document (smallest ``rank``, a permutation) with the
    same content fingerprint, of :func:`~neardup.memory.index_dtype`.

    One pass in rank order over a hash table of the 128-bit fingerprints whose slots hold one
    word: a document index and, in the bits it leaves, a tag of the fingerprint's hash, so that
    a probe reads ``content`` only when the tags agree. The two words are mixed into the hash,
    so fingerprints that are not uniform hashes (those of ``neardup pairs`` may be any 64 bits)
    fill the table evenly too. With ``workers`` > 1 (from :data:`PARALLEL_MIN_DOCUMENTS`
    documents on), the fingerprints are split by the top bits of that hash into a power of two
    of parts, each with its own table, filled by its own thread: the same result. Cost: O(n)
    expected; memory 8 bytes a slot, each table at most three quarters full. Example:
        >>> c = np.array([[1, 1], [2, 2], [1, 1]], dtype=np.uint64)
        >>> content_representatives(c, np.array([2, 0, 1])).tolist()
        [2, 1, 2]
    """
    n = content.shape[0]
    index = index_dtype(n)
    if n == 0:
        return np.zeros(0, dtype=index)
    rank = np.asarray(rank)
    if bool((rank[1:] > rank[:-1]).all()):
        order = rank  # an ascending permutation is the identity, as for documents in time order
    else:
        order = np.empty(n, dtype=index)
        order[rank] = np.arange(n, dtype=index)
    content = np.asarray(content, dtype=np.uint64)  # a view stays one (see LocalEngine.pairs)
    part_bits = (max(1, min(workers, 64)).bit_length() - 1) if n >= PARALLEL_MIN_DOCUMENTS else 0
    sizes = np.zeros(1 << part_bits, dtype=np.int64)
    _part_sizes(content, part_bits, sizes)
    # A slot holds document + 1 (0: empty) in its low bits, the hash's top bits above them.
    index_bits = max(32, n.bit_length())
    rep = np.empty(n, dtype=index)

    def fill(part: int) -> None:
        capacity = 1 << max(4, int(sizes[part] * 4 // 3 + 1).bit_length())
        table = np.zeros(capacity, dtype=np.uint64)
        _first_of_equal(content, order, table, part, part_bits, index_bits, rep)

    if part_bits == 0:
        fill(0)
        return rep
    with ThreadPoolExecutor(sizes.shape[0]) as pool:
        list(pool.map(fill, range(sizes.shape[0])))
    return rep


#: Documents from which :func:`content_representatives` fills its tables on several threads.
PARALLEL_MIN_DOCUMENTS = 1 << 20


@njit(cache=True, nogil=True, inline="always")
def _content_hash(x0, x1):
    # splitmix64's finaliser over both words: every bit of either moves every bit of the hash.
    h = x0 ^ (x1 * np.uint64(0x9E3779B97F4A7C15))
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _part_of(h, part_bits):
    return np.int64(h >> np.uint64(64 - part_bits)) if part_bits > 0 else np.int64(0)


@njit(cache=True, nogil=True)
def _part_sizes(content, part_bits, sizes):
    """``sizes[p]``: the documents whose content hash falls in part ``p``. O(n)."""
    for d in range(content.shape[0]):
        sizes[_part_of(_content_hash(content[d, 0], content[d, 1]), part_bits)] += 1


@njit(cache=True, nogil=True)
def _first_of_equal(content, order, table, part, part_bits, index_bits, rep):
    """``rep[d]`` for the documents of part ``part`` (:func:`_part_of`), through ``table`` (a
    power of two of slots, 0 when empty, at most three quarters full once done): a slot is
    ``tag << index_bits | (document + 1)``, the tag the top ``64 - index_bits`` bits of the
    hash."""
    mask = np.uint64(table.shape[0] - 1)
    low = np.uint64((1 << index_bits) - 1)
    shift = np.uint64(index_bits)
    for r in range(order.shape[0]):
        d = order[r]
        x0 = content[d, 0]
        x1 = content[d, 1]
        h = _content_hash(x0, x1)
        if _part_of(h, part_bits) != part:
            continue
        tag = (h >> shift) << shift
        slot = h & mask
        while True:
            entry = table[slot]
            if entry == 0:
                table[slot] = tag | np.uint64(d + 1)
                rep[d] = d
                break
            if (entry & ~low) == tag:
                e = np.int64(entry & low) - 1
                if content[e, 0] == x0 and content[e, 1] == x1:
                    rep[d] = e
                    break
            slot = (slot + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def _count_own(rep_of):
    count = 0
    for d in range(rep_of.shape[0]):
        count += rep_of[d] == d
    return count


@njit(cache=True, nogil=True)
def _others(rep_of, members):
    m = 0
    for d in range(rep_of.shape[0]):
        if rep_of[d] != d:
            members[m] = d
            m += 1


@dataclass(frozen=True)
class Duplicates:
    """The exact duplicates of ``n`` documents with their representatives, without an index a
    document: ``members``, the duplicates (ascending), ``reps``, the representative of each
    (both of :func:`~neardup.memory.index_dtype`), and a rank directory of the members
    (:mod:`neardup.rank_directory`: ``words``, ``before``), which finds whether a document is a
    duplicate, and its place in ``members``, in O(1), of ``n`` documents. Twice the index
    width a duplicate and a quarter of a byte a document: 0.12 GB for 100M documents of which
    12.5M are duplicates, where ``rep_of`` (:func:`content_representatives`) takes 0.38 GB
    from the candidates to the pairs.

    Example:
        >>> d = Duplicates.of(np.array([0, 0, 2, 2, 0]))
        >>> len(d), d.members.tolist(), d.representatives(np.array([4, 2, 3])).tolist()
        (3, [1, 3, 4], [0, 2, 2])
    """

    members: np.ndarray
    reps: np.ndarray
    words: np.ndarray
    before: np.ndarray
    n: int

    @classmethod
    def of(cls, rep_of: np.ndarray) -> Duplicates:
        """The documents of ``rep_of`` (:func:`content_representatives`) that are not their
        own representative. Two passes over ``rep_of`` (one counts, one fills: no index
        array of all the documents), O(n), a byte a document while the directory is built."""
        n = rep_of.shape[0]
        members = np.empty(n - _count_own(rep_of), dtype=rep_of.dtype)
        _others(rep_of, members)
        marks = np.zeros(n, dtype=bool)
        marks[members] = True
        words, before = directory_of(marks)
        return cls(members, rep_of[members], words, before, n)

    def representative_rows(self) -> RowSet:
        """The documents that are their own representative, ascending, as a bit a document
        (:class:`~neardup.rank_directory.RowSet`: ``take`` gives the document at a place
        among them, as an index array would), of the members' dtype. O(n / 64)."""
        return RowSet.complement(self.words, self.n, self.members.dtype)

    def __len__(self) -> int:
        return int(self.members.shape[0])

    def representatives(self, docs: np.ndarray) -> np.ndarray:
        """The representative of each of ``docs`` (document indices, any integer dtype; a
        representative is its own), of their dtype. O(len(docs)), on two cores."""
        docs = np.asarray(docs)
        out = np.empty(docs.shape[0], dtype=docs.dtype)
        in_halves(_representatives, docs.shape[0], docs, self.words, self.before, self.reps, out)
        return out


@njit(cache=True, nogil=True)
def _representatives(half, lo, hi, docs, words, before, reps, out):
    for i in range(lo, hi):
        d = np.uint64(docs[i])
        out[i] = reps[rank_of(d, words, before)] if holds(d, words) else docs[i]


#: Bytes a document of a part holds while :func:`representatives_by_parts` solves the part:
#: its row as stored (fingerprint and index, 24), the fingerprint and index apart (24), its
#: rank and the radix sort of the ranks (keys, order and the sort's buffers, 40), the part's
#: order and representatives (8 each) and its slot of the hash table (8, at most three
#: quarters full).
PART_DOCUMENT_BYTES = 120
#: Most parts (files written at once): 256 parts of ``room`` bytes each.
MAX_PART_BITS = 8


class PartStore(Protocol):
    """Where :func:`representatives_by_parts` puts one part's rows (uint64[m, 3]: the two
    words of the fingerprint and the document's index) until it solves the part, e.g. a
    :class:`~neardup.engines.spill.SpillColumn` of width 3 on disk."""

    def append(self, values: np.ndarray) -> None: ...

    def read(self) -> np.ndarray: ...

    def remove(self) -> None: ...


def representatives_by_parts(
    read_rows: Callable[[int, int], np.ndarray],
    n: int,
    rank: np.ndarray,
    room: int,
    part_store: Callable[[int], PartStore],
    workers: int = 1,
) -> np.ndarray:
    """:func:`content_representatives` of ``n`` fingerprints that are read ``read_rows(start,
    end)`` (uint64[end - start, 2]) a block at a time instead of held whole.

    The documents are split into a power of two of parts by the top bits of their
    fingerprint's hash, as few as let a part (:data:`PART_DOCUMENT_BYTES` a document, parts
    about even for hashed fingerprints) fit ``room`` bytes: one scan of the fingerprints puts
    each document's fingerprint and index in its part's store (``part_store(p)``), then each
    part is read back, solved with :func:`content_representatives` among its documents (equal
    fingerprints share a part), and removed. One part: read and solved whole. Cost: O(n) reading
    and writing, O(n) expected otherwise (plus a radix sort of each part's ranks); memory:
    the result (4 or 8 bytes a document), one part and one block. Example: see the module.
    """
    rank = np.asarray(rank)
    if rank.shape[0] != n:
        raise ValueError(f"rank must have one value per document ({n}); got {rank.shape[0]}")
    part_bits = 0
    while part_bits < MAX_PART_BITS and (n >> part_bits) * PART_DOCUMENT_BYTES > room:
        part_bits += 1
    if part_bits == 0:
        return content_representatives(np.asarray(read_rows(0, n), np.uint64), rank, workers)
    rep = np.empty(n, dtype=index_dtype(n))
    stores = [part_store(part) for part in range(1 << part_bits)]
    sizes = np.zeros(len(stores), dtype=np.int64)
    block_rows = max(1 << 16, int(room) // (4 * PART_DOCUMENT_BYTES))
    for start in range(0, n, block_rows):
        block = np.asarray(read_rows(start, min(n, start + block_rows)), dtype=np.uint64)
        parts = content_parts(block, part_bits).astype(np.uint16)
        order = np.argsort(parts, kind="stable")  # a radix sort of 16-bit keys
        rows = np.empty((block.shape[0], 3), dtype=np.uint64)
        rows[:, :2] = block[order]
        rows[:, 2] = order + start
        counts = np.bincount(parts, minlength=len(stores))
        sizes += counts
        ends = np.cumsum(counts)
        for part, (begin, end) in enumerate(zip(ends - counts, ends)):
            if end > begin:
                stores[part].append(rows[begin:end])
        del block, parts, order, rows
    for store, size in zip(stores, sizes):
        rows = store.read() if size else None
        store.remove()
        if rows is None:
            continue
        members = rows[:, 2].astype(rep.dtype)
        content = np.ascontiguousarray(rows[:, :2])
        del rows
        # The part's ranks, 0 to m - 1 in the documents' order of time (rank is a permutation).
        local = np.empty(members.shape[0], dtype=rep.dtype)
        order = argsort64(rank[members].astype(np.uint64))[1]
        local[order] = np.arange(members.shape[0], dtype=rep.dtype)
        del order
        rep[members] = members[content_representatives(content, local, workers)]
    return rep


def content_parts(content: np.ndarray, part_bits: int) -> np.ndarray:
    """The part (top ``part_bits`` bits of the fingerprint's hash, as the tables of
    :func:`content_representatives` split them) of each uint64[n, 2] fingerprint: int64[n].
    O(n)."""
    parts = np.empty(content.shape[0], dtype=np.int64)
    _parts_of(np.ascontiguousarray(content, dtype=np.uint64), part_bits, parts)
    return parts


@njit(cache=True, nogil=True)
def _parts_of(content, part_bits, parts):
    for d in range(content.shape[0]):
        parts[d] = _part_of(_content_hash(content[d, 0], content[d, 1]), part_bits)
