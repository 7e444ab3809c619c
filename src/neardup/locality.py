"""Orders that keep linked documents close: the reverse Cuthill–McKee order of a graph's
vertices (:func:`locality_order`) and its pairs by their ends' places (:func:`locality_pair_order`).

An out-of-core run verifies candidate pairs in chunks, each reading back the verification data
of its documents: taken in these orders, the pairs read each document's data in few chunks.
The orders change which chunk reads what, never a result.

Example:
    >>> locality_order(4, np.array([0, 3, 1]), np.array([3, 1, 2])).tolist()
    [2, 1, 3, 0]
    >>> locality_pair_order(5, np.array([0, 4, 1]), np.array([4, 2, 2])).tolist()
    [2, 1, 0]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import sorted_pairs, stable_order_consuming
from neardup.groups import _checked_pairs
from neardup.memory import index_dtype
from neardup.rank_directory import directory_of, ranks_of

__all__ = ["locality_order", "locality_pair_order"]


@njit(inline="always")
def _degree(indptr, v):
    """The degree of vertex ``v`` of a CSR adjacency: read from its offsets, not kept in an
    array of its own (4 bytes a vertex more at the graph's peak)."""
    return np.int64(indptr[v + 1]) - np.int64(indptr[v])


@njit(cache=True, nogil=True)
def _by_degree(indptr, order):
    """The vertices of the CSR adjacency ``indptr`` by increasing degree, ties by index, into
    ``order``: a counting sort, O(n + largest degree)."""
    n = indptr.shape[0] - 1
    largest = 0
    for v in range(n):
        largest = max(largest, _degree(indptr, v))
    starts = np.zeros(largest + 2, dtype=np.int64)
    for v in range(n):
        starts[_degree(indptr, v) + 1] += 1
    for d in range(largest + 1):
        starts[d + 1] += starts[d]
    for v in range(n):
        d = _degree(indptr, v)
        order[starts[d]] = v
        starts[d] += 1


@njit(cache=True, nogil=True)
def _cuthill_mckee(indptr, neighbours, order):
    n = indptr.shape[0] - 1
    seen = np.zeros(n, dtype=np.bool_)
    by_degree = np.empty_like(order)
    _by_degree(indptr, by_degree)
    k = 0
    for start in by_degree:  # each component from its vertex of least degree
        if seen[start]:
            continue
        seen[start] = True
        order[k] = start
        head = k
        k += 1
        while head < k:
            v = order[head]
            head += 1
            first = k
            for j in range(indptr[v], indptr[v + 1]):
                w = neighbours[j]
                if not seen[w]:
                    seen[w] = True
                    order[k] = w
                    k += 1
            if k - first > 1:  # the new vertices by increasing degree, ties by index
                keys = np.empty(k - first, dtype=np.int64)
                for j in range(first, k):
                    keys[j - first] = _degree(indptr, order[j]) * n + order[j]
                keys.sort()
                order[first:k] = keys % n
    for i in range(n // 2):  # reversed in place: no copy of n beside the graph
        order[i], order[n - 1 - i] = order[n - 1 - i], order[i]


def locality_order(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An order of the ``n`` vertices that keeps the two ends of each edge ``(a[p], b[p])``
    close: the reverse Cuthill–McKee order (breadth first from a vertex of least degree in each
    component, the neighbours of a vertex by increasing degree, the whole reversed), which keeps
    the adjacency matrix near its diagonal. A permutation of :func:`~neardup.memory.index_dtype`
    ``(n)``: ``order[i]`` is the vertex at place ``i``. Deterministic. O(n log n + edges); the
    graph in 4-byte vertices and offsets while they fit (at its peak 13 bytes a vertex and 8 an
    edge, not twice that: the offsets, the order, the start order by degree and a flag; the
    degrees are read from the offsets).

    An out-of-core run measures candidate pairs in chunks that each read their documents' data:
    pairs taken in this order read each document's data in fewer chunks.

    Example:
        >>> locality_order(4, np.array([0, 3, 1]), np.array([3, 1, 2])).tolist()
        [2, 1, 3, 0]
    """
    n, a, b = _checked_pairs(n, a, b)
    return _ordered(*_graph(n, a, b))


def _graph(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR adjacency ``(indptr, neighbours)`` of the undirected edges ``(a[p], b[p])``
    over ``n`` vertices, in 4-byte offsets and vertices while they fit. O(n + edges)."""
    indptr = np.zeros(n + 1, dtype=index_dtype(2 * a.shape[0]))
    neighbours = np.empty(2 * a.shape[0], dtype=index_dtype(n))
    _adjacency(a, b, indptr, neighbours)
    return indptr, neighbours


def _ordered(indptr: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """The reverse Cuthill–McKee order of the graph of :func:`_graph` (see
    :func:`locality_order`)."""
    order = np.empty(indptr.shape[0] - 1, dtype=neighbours.dtype)
    _cuthill_mckee(indptr, neighbours, order)
    return order


def locality_pair_order(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An order of the pairs ``(a[p], b[p])`` of vertices in ``0..n-1`` that keeps each
    vertex's pairs close: by the places of their two ends (the nearer first) in the
    :func:`locality_order` of the graph they make, over the vertices they name. A permutation
    of the pairs (:func:`~neardup.memory.index_dtype` of their count); stable. O(n + pairs),
    a radix sort of the pairs. Memory beside the inputs: a flag a vertex of ``n``, then, in
    4-byte indices, the graph of the named vertices (13 bytes a vertex named and 8 a pair,
    the pairs' ranks among them let go meanwhile), then 24 bytes a pair for the sort.

    Work taken pair by pair in this order, in pieces that each need their vertices' data,
    needs each vertex's data in few pieces.

    Example:
        >>> locality_pair_order(5, np.array([0, 4, 1]), np.array([4, 2, 2])).tolist()
        [2, 1, 0]
    """
    n, a, b = _checked_pairs(n, a, b)
    if a.shape[0] == 0:
        return np.zeros(0, dtype=index_dtype(0))
    # Over the vertices named only: marks, then their ranks by a directory of a quarter of a
    # byte a vertex (a cumulative count of the marks took 4 bytes a vertex: 0.4 GB at 100M).
    mark = np.zeros(n, dtype=bool)
    mark[a] = True
    mark[b] = True
    words, before = directory_of(mark)
    del mark
    named = int(before[-1])
    index = index_dtype(named)
    graph = _graph(named, ranks_of(a, words, before, index), ranks_of(b, words, before, index))
    # The order first, then the places: neither the places nor the numbers scattered into
    # them (4 bytes a vertex each), nor the pairs' ranks (8 bytes a pair, found again from
    # the directory after), stand beside the graph at its peak.
    order = _ordered(*graph)
    del graph
    place = np.empty(named, dtype=index)
    place[order] = np.arange(named, dtype=index)
    del order
    pa, pb = place[ranks_of(a, words, before, index)], place[ranks_of(b, words, before, index)]
    del words, before, place
    # The nearer end and the farther one, the latter in place: two arrays of the pairs, not four.
    near = np.minimum(pa, pb)
    far = np.maximum(pa, pb, out=pb)
    del pa, pb
    width = max(1, int(named - 1).bit_length())
    if 2 * width > 64:  # beyond 2**32 vertices named
        order = np.arange(a.shape[0], dtype=index_dtype(a.shape[0]))
        return sorted_pairs(near, far, order, named)[2]
    # Both ends in one key, let go before the sort, which sorts in the keys' own array: 24
    # bytes a pair in 4-byte orders (36 with the keys kept, 56 with both ends and an int64
    # order held).
    keys = near.astype(np.uint64)
    del near
    keys <<= np.uint64(width)
    keys |= far.astype(np.uint64)
    del far
    return stable_order_consuming(keys, 2 * width)


@njit(cache=True, nogil=True)
def _adjacency(a, b, indptr, neighbours):
    """CSR adjacency (``indptr``, zeros of n + 1, and ``neighbours``, of twice the edges) of
    the undirected edges ``(a[p], b[p])``: a counting sort by vertex, O(n + edges). The order
    of a vertex's neighbours does not matter to :func:`_cuthill_mckee`, which orders the
    vertices it reaches by degree and index."""
    n = indptr.shape[0] - 1
    for p in range(a.shape[0]):
        indptr[a[p] + 1] += 1
        indptr[b[p] + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    fill = indptr[:-1].copy()
    for p in range(a.shape[0]):
        neighbours[fill[a[p]]] = b[p]
        fill[a[p]] += 1
        neighbours[fill[b[p]]] = a[p]
        fill[b[p]] += 1
