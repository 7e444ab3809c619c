"""The SimHash candidate search: every pair of a collection's fingerprints within ``hamming_k``,
found once (:class:`HammingSearch`) and served both as the stars of candidate pairs among the
representatives of exact duplicates and as the pairs ``dedup --pairs all`` reports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from neardup.candidates.radix import in_halves
from neardup.candidates.tables import IdenticalBuckets, distinct_hamming_pairs

__all__ = ["HammingSearch"]


@dataclass(frozen=True)
class HammingSearch:
    """Every pair of a collection's SimHash fingerprints within ``hamming_k``, as found once
    for both the candidates and the pairs reported: the ``buckets`` of identical fingerprints
    (:class:`~neardup.candidates.tables.IdenticalBuckets`, over all documents) and the pairs
    ``(a[p], b[p])`` of distinct fingerprints (indices into ``buckets.values``) at distance
    ``dist[p]`` (:func:`~neardup.candidates.tables.distinct_hamming_pairs`).

    Example:
        >>> h = HammingSearch.of(np.array([5, 4, 5], dtype=np.uint64), 1)
        >>> h.buckets.values.tolist(), h.a.tolist(), h.b.tolist()
        ([4, 5], [0], [1])
    """

    buckets: IdenticalBuckets
    a: np.ndarray
    b: np.ndarray
    dist: np.ndarray

    @classmethod
    def of(cls, fingerprints: np.ndarray, hamming_k: int) -> HammingSearch:
        """The search over ``uint64`` ``fingerprints``: one radix sort, then the permutation
        tables over the distinct values. O(n) plus the tables' cost."""
        buckets = IdenticalBuckets.of(fingerprints)
        return cls(buckets, *distinct_hamming_pairs(buckets.values, hamming_k))

    def star_edges(self, reps: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs (document indices) among the representatives ``reps`` (ascending):
        each fingerprint's holders among them linked as a star to the earliest (smallest
        ``rank``, ties by index), and those earliest ones of every two fingerprints within
        ``hamming_k``, both held by representatives. A bucket of ``m`` copies costs ``m - 1``
        pairs, not ``m²``. The pairs are of the dtype of ``reps``. O(n + pairs), no sort."""
        among = np.zeros(self.buckets.members.shape[0], dtype=bool)
        among[reps] = True
        head = self.buckets.earliest(rank, among)
        del among
        star_a, star_b = _bucket_stars(self.buckets.offsets, self.buckets.members, head, reps)
        held = head >= 0
        near = held[self.a] & held[self.b]
        a = np.concatenate([star_a, head[self.a[near]]], dtype=reps.dtype)
        b = np.concatenate([star_b, head[self.b[near]]], dtype=reps.dtype)
        return a, b

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair of documents ``i < j`` within ``hamming_k``, sorted, and its ``uint8``
        distance: as :func:`~neardup.candidates.tables.hamming_pairs` gives. Output-sized."""
        return self.buckets.expand(self.a, self.b, self.dist)


def _bucket_stars(offsets, members, head, reps):
    """The pairs ``(head of r's bucket, r)`` of the representatives ``reps`` (ascending) that
    are not their bucket's head, in the order of ``reps``: each input told its bucket's head
    (the buckets in two halves on two threads, :func:`~neardup.candidates.radix.in_halves`),
    then two passes over ``reps`` (count, fill), of the dtype of ``reps``. O(n), no
    temporaries beyond the heads."""
    head_of = np.empty(members.shape[0], reps.dtype)
    in_halves(_heads_of_members, offsets.shape[0] - 1, offsets, members, head, head_of)
    return _stars_of(reps, head_of)


@njit(cache=True, nogil=True)
def _heads_of_members(half, lo, hi, offsets, members, head, head_of):
    """``head_of[i] = head[v]`` for each member ``i`` of the buckets ``lo <= v < hi``."""
    for v in range(lo, hi):
        for p in range(offsets[v], offsets[v + 1]):
            head_of[members[p]] = head[v]


@njit(cache=True, nogil=True)
def _stars_of(reps, head_of):
    """The pairs ``(head_of[r], r)`` of the ``reps`` that are not their own head, in order."""
    count = 0
    for r in reps:
        if head_of[r] != r:
            count += 1
    a = np.empty(count, reps.dtype)
    b = np.empty(count, reps.dtype)
    k = 0
    for r in reps:
        if head_of[r] != r:
            a[k] = head_of[r]
            b[k] = r
            k += 1
    return a, b
