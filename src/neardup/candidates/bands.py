"""MinHash LSH bands: candidate pairs of documents that agree on a whole band.

Signatures are ``uint32`` arrays of shape ``(n, num_perm)``, row ``i`` being the MinHash signature
of document ``i``. The first ``bands * rows`` columns are cut into ``bands`` bands of ``rows``
consecutive columns (band ``j`` is columns ``j*rows .. j*rows + rows - 1``); columns past
``bands * rows`` are unused. Two documents are *candidates* when they are equal on every row of at
least one band. A pair of Jaccard similarity ``s`` becomes a candidate with probability
``1 - (1 - s**rows)**bands`` (see :mod:`neardup.lsh`).

Band hash
    Each band of each document is reduced to one ``uint64`` so that a band's buckets come from one
    sort. With ``mix64`` the splitmix64 finaliser (a bijection of 64-bit integers)::

        mix64(z): z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
                  z *= 0x94D049BB133111EB; z ^= z >> 31          (all mod 2**64)

    band ``j`` with values ``v[0..rows-1]`` hashes to::

        h = mix64((j + 1) * 0x9E3779B97F4A7C15)                   # the band's key
        for each lane  v[2k] | v[2k+1] << 32  (the last lane is v[rows-1] alone if rows is odd):
            h = mix64(h ^ lane)

    Equal bands always give equal hashes, so no candidate is ever lost. For ``rows <= 2`` the map
    is a bijection, so equal hashes mean equal bands. For ``rows > 2`` two different bands collide
    with probability about ``2**-64``; bands are deliberately *not* re-compared value by value,
    because a collision can only add a spurious candidate, and every candidate is checked with the
    exact Jaccard similarity afterwards (:mod:`neardup.verify`), which removes it.

Modes of :func:`candidate_pairs`
    ``"all"`` lists every candidate pair ``(i, j)``, ``i < j``, once: a bucket of ``m`` documents
    gives ``m (m - 1) / 2`` pairs, so the output (and the cost) is quadratic in bucket size.
    ``"star"`` links every member of a bucket to the bucket's *representative* (the member with
    the smallest ``rank``, ties to the smaller index): ``m - 1`` edges per bucket, at most
    ``n * bands`` edges in all, even when one bucket holds 200,000 near-identical documents.

    The two edge sets have the same connected components, which is all that grouping needs:
    every star edge ``(rep, d)`` joins two members of one bucket, so it is also an "all" edge
    (star components are no coarser); and every "all" edge ``(u, v)`` lies in some bucket whose
    star joins both ``u`` and ``v`` to the same representative, so ``u`` and ``v`` are connected
    by star edges (star components are no finer). Hence the components are equal.

    That holds for the candidates, not for the pairs that pass verification: when a bucket's
    representative fails against two members that pass against each other, the verified star
    edges lose that pair. :func:`pairs_from_band_columns` can therefore also keep the buckets of
    3 or more documents without their representatives (``buckets=``), and
    :mod:`neardup.candidates.repair` verifies the pairs among them that the star round left in
    different components, which gives the components of verifying every "all" pair.

Output is a pure function of the inputs: sorts are stable, ties go to the smaller index, and the
edges are deduplicated and sorted, so the same arrays give byte-identical results.

Example:
    >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 3, 4], [5, 6, 7, 8]], dtype=np.uint32)
    >>> left, right = candidate_pairs(sig, bands=2, rows=2)
    >>> list(zip(left.tolist(), right.tolist()))
    [(0, 1), (0, 2)]
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from numba import njit

from neardup.candidates.band_parts import (
    MIN_PART_ROWS,
    PREFIX_BITS,
    ROW_BYTES,
    BandColumn,
    StagedBand,
    StagedPart,
    gathered,
    partitions,
    prefix_counts,
)
from neardup.candidates.radix import in_halves, sorted_distinct, stable_argsort
from neardup.rank_directory import RowSet

__all__ = [
    "BandBuckets",
    "DistinctUnion",
    "band_columns",
    "band_hash_columns",
    "band_hashes",
    "band_buckets",
    "candidate_pairs",
    "packed_pairs_from_band_columns",
    "pairs_from_band_columns",
    "rank_positions",
    "MODES",
]

#: The values of ``mode`` accepted by :func:`candidate_pairs`.
MODES = ("all", "star")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MAX_DOCS = 1 << 32  # document ids are packed as two 32-bit halves of a uint64


# --------------------------------------------------------------------------- kernels


@njit(inline="always")
def _mix64(z):
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _band_hash_kernel(sig, first_band, last_band, rows, out):
    """Hash bands first_band..last_band-1 of each row of ``sig`` into out[:, j - first_band]."""
    n = sig.shape[0]
    nb = last_band - first_band
    keys = np.empty(nb, dtype=np.uint64)
    for j in range(nb):
        keys[j] = _mix64(np.uint64(first_band + j + 1) * _GOLDEN)
    shift = np.uint64(32)
    for i in range(n):
        for j in range(nb):
            base = (first_band + j) * rows
            h = keys[j]
            k = 0
            while k + 1 < rows:
                lane = np.uint64(sig[i, base + k]) | (np.uint64(sig[i, base + k + 1]) << shift)
                h = _mix64(h ^ lane)
                k += 2
            if k < rows:
                h = _mix64(h ^ np.uint64(sig[i, base + k]))
            out[i, j] = h
    return out


@njit(cache=True, nogil=True)
def _all_pairs_kernel(order, starts, sizes, total):
    """Packed ``i << 32 | j`` for every pair inside each run; runs list ids in ascending order."""
    out = np.empty(total, dtype=np.uint64)
    shift = np.uint64(32)
    k = 0
    for q in range(starts.size):
        s = starts[q]
        m = sizes[q]
        for a in range(m):
            hi = np.uint64(order[s + a]) << shift
            for c in range(a + 1, m):
                out[k] = hi | np.uint64(order[s + c])
                k += 1
    return out


@njit(cache=True, nogil=True)
def _star_edges_kernel(order, starts, sizes, pos, total):
    """Packed ``rep << 32 | d`` for every non-representative member ``d`` of each run
    (``pos`` None: the documents' indices are their positions)."""
    out = np.empty(total, dtype=np.uint64)
    shift = np.uint64(32)
    k = 0
    for q in range(starts.size):
        s = starts[q]
        m = sizes[q]
        rep = order[s]
        best = np.int64(rep) if pos is None else pos[rep]
        for a in range(1, m):
            d = order[s + a]
            at = np.int64(d) if pos is None else pos[d]
            if at < best:
                best = at
                rep = d
        hi = np.uint64(rep) << shift
        for a in range(m):
            d = order[s + a]
            if d != rep:
                out[k] = hi | np.uint64(d)
                k += 1
    return out


@njit(cache=True, nogil=True)
def _rest_members_kernel(order, starts, sizes, pos, most, total):
    """The members of each run of 3 to ``most + 1`` but its representative (``pos`` as in
    :func:`_star_edges_kernel`), concatenated, and how many each run has (the pairs among them
    are not star edges): uint32 members (the indices of ``order``) and int32 counts, half the
    memory of int64 ones, as the buckets of every band are held until the search ends."""
    out = np.empty(total, dtype=np.uint32)
    counts = np.empty(starts.size, dtype=np.int32)
    k = 0
    runs = 0
    for q in range(starts.size):
        s = starts[q]
        m = sizes[q]
        if m < 3 or m > most + 1:
            continue
        rep = order[s]
        for a in range(1, m):
            if pos is None:
                if order[s + a] < rep:
                    rep = order[s + a]
            elif pos[order[s + a]] < pos[rep]:
                rep = order[s + a]
        for a in range(m):
            if order[s + a] != rep:
                out[k] = order[s + a]
                k += 1
        counts[runs] = m - 1
        runs += 1
    return out, counts[:runs]


# --------------------------------------------------------------------------- validation


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {int(value)}")
    return int(value)


def _check_inputs(signatures: object, bands: object, rows: object) -> tuple[np.ndarray, int, int]:
    if not isinstance(signatures, np.ndarray) or signatures.ndim != 2:
        shape = getattr(signatures, "shape", type(signatures).__name__)
        raise ValueError(f"signatures must be a 2-D uint32 array (n, num_perm), got {shape}")
    if signatures.dtype != np.uint32:
        raise ValueError(f"signatures must have dtype uint32, got {signatures.dtype}")
    n, num_perm = signatures.shape
    if n > _MAX_DOCS:
        raise ValueError(f"signatures must have at most {_MAX_DOCS} rows (documents), got {n}")
    b = _check_positive_int("bands", bands)
    r = _check_positive_int("rows", rows)
    if b * r > num_perm:
        raise ValueError(
            f"bands * rows must be in 1..{num_perm} (the signature length), got {b} * {r} = {b * r}"
        )
    return np.ascontiguousarray(signatures), b, r


def rank_positions(rank: object, n: int) -> np.ndarray:
    """Position of each document in (rank, index) order: a total order, ties to the smaller id.

    Validates ``rank`` (shape ``(n,)``, numeric, no NaN); None means the index. One stable
    radix sort: O(n × significant bytes of the ranks).
    """
    if rank is None:
        return np.arange(n, dtype=np.int64)
    arr = np.asarray(rank)
    if arr.shape != (n,):
        raise ValueError(f"rank must have shape ({n},) (one value per document), got {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"rank must be an integer or float array, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(
            f"rank must not contain NaN, got NaN at index {int(np.flatnonzero(np.isnan(arr))[0])}"
        )
    order = stable_argsort(arr)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n, dtype=np.int64)
    return pos


# --------------------------------------------------------------------------- public API


def band_hashes(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit hash per band per document.

    Band ``j`` of document ``i`` is ``signatures[i, j*rows : (j+1)*rows]``; its hash is the chain
    ``h = mix64(h ^ lane)`` over 64-bit lanes of two values each, started from the band's key
    ``mix64((j + 1) * 0x9E3779B97F4A7C15)`` (the module docstring gives the exact definition).
    Equal bands give equal hashes; different bands collide with probability about ``2**-64``
    (never for ``rows <= 2``, where the hash is a bijection of the band).

    Args:
        signatures: ``uint32`` array ``(n, num_perm)``, one MinHash signature per row.
        bands: number of bands ``b >= 1``.
        rows: values per band ``r >= 1``; ``b * r <= num_perm`` (the first ``b * r`` columns
            are used).

    Returns:
        ``uint64`` array ``(n, bands)``.

    Complexity: O(n · b · r) time, O(n · b) memory.

    Raises:
        ValueError: ``signatures`` not a 2-D uint32 array, or ``bands`` / ``rows`` not integers
            ``>= 1`` with ``bands * rows <= num_perm``.

    Example:
        >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9]], dtype=np.uint32)
        >>> h = band_hashes(sig, bands=2, rows=2)
        >>> h.shape, h.dtype.name, bool(h[0, 0] == h[1, 0]), bool(h[0, 1] == h[1, 1])
        ((2, 2), 'uint64', True, False)
    """
    sig, b, r = _check_inputs(signatures, bands, rows)
    out = np.empty((sig.shape[0], b), dtype=np.uint64)
    return _band_hash_kernel(sig, 0, b, r, out)


def band_hash_columns(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """:func:`band_hashes` laid out band by band: ``uint64`` array ``(bands, n)`` whose row
    ``j`` holds band ``j``'s hashes, contiguous, as a store of one column a band appends them
    (taking them from ``band_hashes``' rows copied 8 bytes every ``8 · bands``: 3 s of a run's
    main thread at 10M documents). The same values: ``band_hash_columns(s, b, r)`` equals
    ``band_hashes(s, b, r).T``. Arguments, errors and cost as :func:`band_hashes`.

    Example:
        >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9]], dtype=np.uint32)
        >>> cols = band_hash_columns(sig, bands=2, rows=2)
        >>> cols.shape, bool((cols == band_hashes(sig, 2, 2).T).all()), cols[0].flags.c_contiguous
        ((2, 2), True, True)
    """
    sig, b, r = _check_inputs(signatures, bands, rows)
    out = np.empty((b, sig.shape[0]), dtype=np.uint64)
    _band_hash_kernel(sig, 0, b, r, out.T)  # out.T[i, j] is band j of document i
    return out


def _grouped_by_hash(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted hashes, order)`` of the ``uint64`` ``column``: a stable sort, ``order``
    (uint32) the documents' indices, ascending among equal hashes; the band's documents as
    one partition of :mod:`neardup.candidates.band_parts`. Memory: 12 bytes a document.
    O(n × 8)."""
    band = BandColumn.of(column)
    return gathered(band, None, prefix_counts(band, None), 0, 1 << PREFIX_BITS)


@njit(cache=True, nogil=True)
def _runs_of(sorted_keys, min_size):
    """Starts and sizes (int64) of the runs of equal ``sorted_keys`` of at least
    ``min_size``. Two passes, no temporary of the keys' size."""
    n = sorted_keys.shape[0]
    count = 0
    s = 0
    for i in range(1, n + 1):
        if i == n or sorted_keys[i] != sorted_keys[s]:
            if i - s >= min_size:
                count += 1
            s = i
    starts = np.empty(count, np.int64)
    sizes = np.empty(count, np.int64)
    k = 0
    s = 0
    for i in range(1, n + 1):
        if i == n or sorted_keys[i] != sorted_keys[s]:
            if i - s >= min_size:
                starts[k] = s
                sizes[k] = i - s
                k += 1
            s = i
    return starts, sizes


def _band_runs(column: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable sort of one band's hashes; (order uint32, run starts, run sizes) for runs >=
    min_size."""
    n = column.size
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty.astype(np.uint32), empty, empty.copy()
    # Stable: within a run of equal hashes, document ids stay ascending.
    h, order = _grouped_by_hash(np.ascontiguousarray(column, dtype=np.uint64))
    starts, sizes = _runs_of(h, min_size)
    return order, starts, sizes


class BandBuckets(NamedTuple):
    """Buckets of documents with equal band hash, as CSR over all bands.

    Bucket ``q`` belongs to band ``band[q]`` and holds documents
    ``members[offsets[q]:offsets[q + 1]]`` (ascending ids). Buckets are ordered by band, then by
    band hash.
    """

    band: np.ndarray  # int64 (m,)
    offsets: np.ndarray  # int64 (m + 1,)
    members: np.ndarray  # int64 (offsets[-1],)


def band_buckets(
    signatures: np.ndarray, bands: int, rows: int, *, min_size: int = 2
) -> BandBuckets:
    """Group documents whose band hashes are equal, band by band.

    For each band ``j``, documents are sorted by their band hash (stable, so ties keep ascending
    ids) and each run of equal hashes of at least ``min_size`` documents is one bucket.

    Args:
        signatures: ``uint32`` array ``(n, num_perm)``.
        bands: number of bands ``b >= 1``.
        rows: values per band ``r >= 1``; ``b * r <= num_perm``.
        min_size: smallest bucket to report, ``>= 1``; the default 2 drops singletons, which make
            no candidates.

    Returns:
        A :class:`BandBuckets` ``(band, offsets, members)``.

    Complexity: O(n · b · (r + log n)) time; O(n · b) memory for the output at most.

    Raises:
        ValueError: as :func:`band_hashes`, or ``min_size < 1``.

    Example:
        >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 3, 4]], dtype=np.uint32)
        >>> bb = band_buckets(sig, bands=2, rows=2)
        >>> [(int(j), bb.members[a:z].tolist())
        ...  for j, a, z in zip(bb.band, bb.offsets[:-1], bb.offsets[1:])]
        [(0, [0, 1]), (1, [0, 2])]
    """
    sig, b, r = _check_inputs(signatures, bands, rows)
    min_size = _check_positive_int("min_size", min_size)
    n = sig.shape[0]
    col = np.empty((n, 1), dtype=np.uint64)
    band_ids, sizes_all, members = [], [], []
    for j in range(b):
        _band_hash_kernel(sig, j, j + 1, r, col)
        order, starts, sizes = _band_runs(col[:, 0], min_size)
        band_ids.append(np.full(starts.size, j, dtype=np.int64))
        sizes_all.append(sizes)
        # Sorted positions of the kept runs, concatenated: starts[q] + (0 .. sizes[q] - 1).
        # Output slot k of run q is k = out_start[q] + i, so its position is
        # k + (starts[q] - out_start[q]); one repeat and one arange, no Python loop over runs.
        out_start = np.cumsum(sizes) - sizes
        shift = np.repeat(starts - out_start, sizes)
        members.append(order[shift + np.arange(shift.size, dtype=np.int64)])
    sizes_cat = np.concatenate(sizes_all) if sizes_all else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(sizes_cat.size + 1, dtype=np.int64)
    np.cumsum(sizes_cat, out=offsets[1:])
    return BandBuckets(
        band=np.concatenate(band_ids),
        offsets=offsets,
        members=np.concatenate(members).astype(np.int64, copy=False),
    )


@njit(cache=True, nogil=True)
def _merge_distinct(x, y, out):
    """The sorted distinct union of ``x`` and ``y`` (both sorted and distinct) written to the
    front of ``out`` (room for ``len(x) + len(y)`` values); returns its length. O(len(x) +
    len(y)), one sequential pass: the pages of ``out`` past the union are never touched."""
    i = 0
    j = 0
    w = 0
    while i < x.shape[0] and j < y.shape[0]:
        if x[i] < y[j]:
            out[w] = x[i]
            i += 1
        elif y[j] < x[i]:
            out[w] = y[j]
            j += 1
        else:
            out[w] = x[i]
            i += 1
            j += 1
        w += 1
    while i < x.shape[0]:
        out[w] = x[i]
        i += 1
        w += 1
    while j < y.shape[0]:
        out[w] = y[j]
        j += 1
        w += 1
    return w


def _merged(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The sorted distinct union of ``x`` and ``y`` (both sorted and distinct), a view of an
    array of their total length. From :data:`~neardup.candidates.radix.PARALLEL_MIN_KEYS`
    values on, the values below and from the larger array's middle value are merged on two
    threads, the upper half into a buffer of its own copied after the lower (its place is
    known only once the lower half's duplicates are): the same union. O(len(x) + len(y))."""
    out = np.empty(x.shape[0] + y.shape[0], dtype=np.uint64)
    larger = x if x.shape[0] >= y.shape[0] else y
    middle = larger[larger.shape[0] // 2] if larger.shape[0] else np.uint64(0)
    cut_x, cut_y = (int(np.searchsorted(v, middle)) for v in (x, y))
    upper = np.empty(out.shape[0] - cut_x - cut_y, dtype=np.uint64)
    halves = ((x[:cut_x], y[:cut_y], out), (x[cut_x:], y[cut_y:], upper))
    # One call covers both halves (0..2): the whole union at once.
    sizes = in_halves(
        lambda half, lo, hi: _merge_distinct(*((x, y, out) if hi - lo == 2 else halves[half])),
        2,
        middle=1,
        size=out.shape[0],
    )
    if len(sizes) == 1:
        return out[: sizes[0]]
    lower, higher = sizes
    out[lower : lower + higher] = upper[:higher]
    return out[: lower + higher]


class DistinctUnion:
    """The sorted distinct union of sorted distinct ``uint64`` arrays added one at a time.

    The arrays are merged like the runs of a binary counter: a stack of unions, each more than
    twice the next; an added array merges with the top while the top is at most twice its
    size. A value is moved O(log(arrays)) times, not once per array added as when each array
    merges into one growing union (near-identical documents share most bands: the union is
    then many times a band's pairs, and would be moved whole for every band). Memory: the stack
    sums to less than twice its largest level, and :meth:`values` holds two levels and
    their merge at once (a merge on two threads also holds its upper half's values a second
    time while they are copied into place).
    """

    def __init__(self) -> None:
        self.levels: list[np.ndarray] = []

    def add(self, values: np.ndarray | None) -> None:
        """Merge ``values`` in. O(len(values) · log(arrays added)) amortised."""
        if values is None or values.shape[0] == 0:
            return
        levels = self.levels
        levels.append(values)
        while len(levels) > 1 and levels[-2].shape[0] <= 2 * levels[-1].shape[0]:
            top = levels.pop()
            levels.append(_merged(levels.pop(), top))

    def values(self) -> np.ndarray:
        """The union so far (smallest levels merged first)."""
        levels = self.levels
        while len(levels) > 1:
            top = levels.pop()
            levels.append(_merged(levels.pop(), top))
        return levels[0] if levels else np.zeros(0, dtype=np.uint64)


def candidate_pairs(
    signatures: np.ndarray,
    bands: int,
    rows: int,
    *,
    rank: np.ndarray | None = None,
    mode: str = "all",
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs: documents equal on all ``rows`` values of at least one of ``bands`` bands.

    A pair of Jaccard similarity ``s`` is returned (in ``"all"`` mode) with probability
    ``1 - (1 - s**rows)**bands``.

    ``mode="all"``
        Every candidate pair ``(i, j)`` with ``i < j`` exactly once, however many bands it shares,
        sorted by ``(i, j)``. Output-sized: a bucket of ``m`` documents gives ``m (m - 1) / 2``
        pairs.
    ``mode="star"``
        For every bucket, an edge ``(rep, d)`` from its representative ``rep`` (the member with the
        smallest ``rank``, ties to the smaller index) to each other member ``d``; edges
        deduplicated across bands and sorted by ``(rep, d)``. ``m - 1`` edges per bucket, at most
        ``n · bands`` in all. The connected components equal those of ``"all"`` (proof in the
        module docstring), so grouping can use this at linear cost even for huge buckets; after
        verification they need the repair of :mod:`neardup.candidates.repair`.

    Band hashes stand in for band values: a 64-bit collision (probability about ``2**-64`` per
    pair and band, impossible for ``rows <= 2``) can add a spurious candidate, never drop one, and
    exact verification removes it.

    Args:
        signatures: ``uint32`` array ``(n, num_perm)``, ``n <= 2**32``.
        bands: number of bands ``b >= 1``.
        rows: values per band ``r >= 1``; ``b * r <= num_perm``.
        rank: optional integer or float array ``(n,)``, e.g. the time order of the documents;
            lower rank is preferred as representative. Default: the document index. Ignored by
            ``"all"`` (but still validated).
        mode: ``"all"`` or ``"star"``.

    Returns:
        ``(left, right)``: two ``int64`` arrays of equal length; ``left < right`` in ``"all"``
        mode, ``left`` the representative in ``"star"`` mode.

    Complexity: O(n · b · (r + log n)) plus O(E log E) to deduplicate the E emitted pairs
    (E = Σ over buckets of m(m-1)/2 for ``"all"``, of m - 1 ≤ n · b for ``"star"``).

    Raises:
        ValueError: as :func:`band_hashes`; an unknown ``mode``; a ``rank`` of the wrong shape,
            a non-numeric dtype, or with NaN.

    Example:
        >>> sig = np.array([[1, 2], [1, 2], [1, 2], [3, 4]], dtype=np.uint32)
        >>> [a.tolist() for a in candidate_pairs(sig, bands=1, rows=2)]
        [[0, 0, 1], [1, 2, 2]]
        >>> star = candidate_pairs(sig, 1, 2, mode="star", rank=np.array([5, 1, 9, 0]))
        >>> [a.tolist() for a in star]
        [[1, 1], [0, 2]]
    """
    sig, b, r = _check_inputs(signatures, bands, rows)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    n = sig.shape[0]
    pos = rank_positions(rank, n)
    return pairs_from_band_columns(band_columns(sig, b, r), mode, pos)


def band_columns(signatures: np.ndarray, bands: int, rows: int) -> Iterator[np.ndarray]:
    """The band hashes of :func:`band_hashes`, one ``uint64[n]`` column per band, computed
    lazily so that only the columns a caller holds are in memory (each column is a new
    array: callers may keep several). O(n · rows) per column.

    Example:
        >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9]], dtype=np.uint32)
        >>> [bool(c[0] == c[1]) for c in band_columns(sig, 2, 2)]
        [True, False]
    """
    sig, b, r = _check_inputs(signatures, bands, rows)
    for j in range(b):
        col = np.empty((sig.shape[0], 1), dtype=np.uint64)
        _band_hash_kernel(sig, j, j + 1, r, col)
        yield col[:, 0]


def _band_parts(
    columns: Iterable[np.ndarray | BandColumn], subset: RowSet | None, most_rows: int | None
) -> Iterator[tuple[BandColumn | StagedPart, np.ndarray, int, int]]:
    """Every band's partitions (:mod:`neardup.candidates.band_parts`) of at most ``most_rows``
    documents (None: a band whole), band after band, as ``(column, prefix counts, lo, hi)``:
    a band's counting pass (and, on disk in several partitions, its staging pass) runs when
    its first partition is asked for."""
    for column in columns:
        band = BandColumn.of(column)
        n = band.rows if subset is None else len(subset)
        if n > _MAX_DOCS:
            raise ValueError(f"band columns must have at most {_MAX_DOCS} rows, got {n}")
        counts = prefix_counts(band, subset)
        ranges = list(partitions(counts, most_rows))
        if len(ranges) > 1 and band.staging is not None:  # one more read, not one a partition
            staged = StagedBand(band, subset, counts, ranges)
            for k, (lo, hi) in enumerate(ranges):
                yield StagedPart(staged, k), counts, lo, hi
        else:
            for lo, hi in ranges:
                yield band, counts, lo, hi


def _part_pairs(
    part: tuple[BandColumn | StagedPart, np.ndarray, int, int],
    subset: RowSet | None,
    mode: str,
    positions: np.ndarray | None,
    rest: list | None = None,
    most: int = 0,
) -> np.ndarray | None:
    """One partition's candidate pairs, packed ``i << 32 | j``, sorted and distinct (None:
    none). With ``rest`` (star mode), appends to it the partition's (members, counts) of
    :func:`_rest_members_kernel` and the number of pairs of its larger runs."""
    keys, order = gathered(part[0], subset, *part[1:])
    starts, sizes = _runs_of(keys, 2)
    del keys  # the runs hold what the pairs need of the hashes
    if starts.size == 0:
        return None
    if mode == "all":
        total = int(np.sum(sizes * (sizes - 1) // 2))
        band_pairs = _all_pairs_kernel(order, starts, sizes, total)
    else:
        total = int(np.sum(sizes - 1))
        band_pairs = _star_edges_kernel(order, starts, sizes, positions, total)
        if rest is not None:
            kept = (sizes >= 3) & (sizes <= most + 1)
            total = int(np.sum(sizes[kept] - 1))
            others = sizes[sizes > most + 1] - 1
            members, counts = _rest_members_kernel(order, starts, sizes, positions, most, total)
            rest.append((members, counts, int(np.sum(others * (others - 1) // 2))))
    del order, starts, sizes
    return sorted_distinct(band_pairs, in_place=True)


def _collect(task: tuple, buckets: list | None) -> np.ndarray | None:
    """The pairs of a partition's task, its kept buckets appended to ``buckets`` when asked."""
    future, part = task
    pairs = future.result()
    if buckets is not None:
        buckets.extend(part)
    return pairs


def pairs_from_band_columns(
    columns: Iterable[np.ndarray],
    mode: str = "star",
    positions: np.ndarray | None = None,
    workers: int = 1,
    buckets: list | None = None,
    most: int = 16,
    room: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs from band-hash columns (each ``uint64[n]``), as :func:`candidate_pairs`:
    :func:`packed_pairs_from_band_columns` (``room`` as there), unpacked (the packed array
    becomes the right ends, in place). O(E) more than it.

    Example:
        >>> cols = [np.array([7, 7, 5], dtype=np.uint64), np.array([1, 2, 2], dtype=np.uint64)]
        >>> [a.tolist() for a in pairs_from_band_columns(cols, "all")]
        [[0, 1], [1, 2]]
    """
    packed = packed_pairs_from_band_columns(
        columns, mode, positions, workers, buckets, most, room=room
    )
    left = (packed >> np.uint64(32)).astype(np.int64)
    right = packed.view(np.int64)  # the pairs' packed form becomes the right ends, in place
    right &= np.int64(0xFFFFFFFF)
    return left, right


def packed_pairs_from_band_columns(
    columns: Iterable[np.ndarray | BandColumn],
    mode: str = "star",
    positions: np.ndarray | None = None,
    workers: int = 1,
    buckets: list | None = None,
    most: int = 16,
    union: DistinctUnion | None = None,
    subset: RowSet | None = None,
    room: int | None = None,
) -> np.ndarray:
    """The distinct candidate pairs of :func:`pairs_from_band_columns`, packed and sorted:
    ``uint64`` ``left << 32 | right`` (8 bytes a pair, half the unpacked ends: a caller that
    takes them in slices holds no more).

    The columns may be arrays (:func:`band_columns`) or
    :class:`~neardup.candidates.band_parts.BandColumn` objects that an out-of-core run reads
    back from disk a block at a time; ``subset`` (rows of every column, None: all) are the
    documents searched, ``i`` and ``j`` positions among them. ``positions`` is the
    total order of the documents searched for ``"star"`` mode (int64, position of each in
    (rank, index) order; default: the index). ``workers`` threads search bands side by side
    (the kernels release the GIL); the pairs do not depend on it.

    ``room``: bytes the search's temporaries may take at once (None: no bound). A band
    whose documents would take more than its worker's share, at
    :data:`~neardup.candidates.band_parts.ROW_BYTES` a document (and more than
    :data:`~neardup.candidates.band_parts.MIN_PART_ROWS` documents), is searched a partition of
    its hashes' leading bits at a time (:mod:`neardup.candidates.band_parts`), each
    partition read, sorted and its pairs and buckets given before the next: the workers take
    partitions in turn, and the pairs and buckets do not depend on the partitions.

    With a list ``buckets`` (star mode), the buckets of 3 to ``most + 1`` documents are
    appended to it without their representatives, band by band (a band in partitions, a part
    a partition), as ``(members, counts, others)`` (uint32 and int32 arrays: run ``q`` of a
    part holds the next ``counts[q]`` members, ascending; ``others`` the number of such pairs
    in the part's larger buckets): the pairs among them are the "all" candidates that the
    star edges leave out (:mod:`neardup.candidates.repair`). O(n) per band more at most.

    ``union`` collects the bands' pairs (default: a :class:`DistinctUnion` in memory); an
    out-of-core run passes one that spills them past a bound
    (:class:`neardup.engines.pair_runs.PairRuns`): the result is then what its ``values()``
    returns.

    Complexity: O(n log n) per band (one pass over its column more than its partitions)
    plus O(E log E) for the E emitted pairs.

    Example:
        >>> cols = [np.array([7, 7, 5], dtype=np.uint64), np.array([1, 2, 2], dtype=np.uint64)]
        >>> packed_pairs_from_band_columns(cols, "all").tolist()
        [1, 4294967298]
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    workers = _check_positive_int("workers", workers)
    # Each partition's distinct pairs are merged into those so far: memory O(distinct pairs),
    # not O(pairs of all bands), which repeat one another for near-identical documents. A
    # union of sets: the order of the bands does not change it.
    union = DistinctUnion() if union is None else union
    merge = union.add

    if buckets is not None and mode != "star":
        raise ValueError(f"buckets are kept in star mode only; got mode {mode!r}")
    most_rows = None if room is None else max(int(room) // (workers * ROW_BYTES), MIN_PART_ROWS)
    parts = _band_parts(columns, subset, most_rows)
    if workers == 1:
        for part in parts:
            merge(_part_pairs(part, subset, mode, positions, buckets, most))
    else:
        with ThreadPoolExecutor(workers) as pool:
            pending: deque = deque()
            # The next band's counting pass runs here while the workers search.
            for part in parts:
                # Each task appends to its own list: the bands and partitions keep their order.
                kept: list = []
                pending.append(
                    (pool.submit(_part_pairs, part, subset, mode, positions, kept, most), kept)
                )
                # One task more than the workers waits its turn: while this thread merges a
                # partition's pairs and counts the next band, every worker has one to search
                # (with as many as the workers, one stood idle meanwhile: 1M documents'
                # bands, 1.30 -> 1.07 s, medians of 10). A finished partition's pairs wait at
                # most, 8 bytes a row against the 28 of its search.
                if len(pending) > workers:
                    merge(_collect(pending.popleft(), buckets))
            while pending:
                merge(_collect(pending.popleft(), buckets))
    return union.values()
