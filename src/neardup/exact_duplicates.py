"""Exact duplicates: documents of one content fingerprint (the 128-bit hash of the normalised
text) share a representative, the earliest of them (:func:`content_representatives`); the
later stages compare representatives only (:func:`representatives_and_members`).

Every array of document indices here is of :func:`~neardup.memory.index_dtype`: 4 bytes a
document below 2**31 documents.

Example:
    >>> c = np.array([[1, 1], [2, 2], [1, 1]], dtype=np.uint64)
    >>> rep_of = content_representatives(c, np.array([0, 1, 2]))
    >>> [x.tolist() for x in (rep_of, *representatives_and_members(rep_of))]
    [[0, 1, 0], [0, 1], [2]]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from neardup.memory import index_dtype

__all__ = ["PARALLEL_MIN_DOCUMENTS", "content_representatives", "representatives_and_members"]


def content_representatives(content: np.ndarray, rank: np.ndarray, workers: int = 1) -> np.ndarray:
    """For each document, the earliest document (smallest ``rank``, a permutation) with the
    same content fingerprint, of :func:`~neardup.memory.index_dtype` (4 bytes a document
    below 2**31 documents).

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


def representatives_and_members(rep_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, members)``: the ascending indices of the documents that are their own
    representative in ``rep_of`` (:func:`content_representatives`), and of the others (the
    exact duplicates), both of the dtype of ``rep_of``. One pass to count and one to fill:
    no mask nor array of all the indices beside them. O(n).

    Example:
        >>> [x.tolist() for x in representatives_and_members(np.array([0, 0, 2, 2]))]
        [[0, 2], [1, 3]]
    """
    reps = np.empty(_count_own(rep_of), dtype=rep_of.dtype)
    members = np.empty(rep_of.shape[0] - reps.shape[0], dtype=rep_of.dtype)
    _split_own(rep_of, reps, members)
    return reps, members


@njit(cache=True, nogil=True)
def _count_own(rep_of):
    count = 0
    for d in range(rep_of.shape[0]):
        count += rep_of[d] == d
    return count


@njit(cache=True, nogil=True)
def _split_own(rep_of, reps, members):
    r = m = 0
    for d in range(rep_of.shape[0]):
        if rep_of[d] == d:
            reps[r] = d
            r += 1
        else:
            members[m] = d
            m += 1
