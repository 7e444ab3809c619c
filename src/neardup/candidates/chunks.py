"""Candidate pairs taken a slice at a time: held packed, each slice filtered as it is unpacked.

The MinHash candidates of a collection are its distinct star pairs
(:mod:`neardup.candidates.bands`), about four a document on short texts: 39M at 10M
documents. Unpacked into two arrays of document indices (:func:`~neardup.memory.index_dtype`)
they take 16 bytes a pair (0.6 GB), 8 in int32, and the map from positions to documents a
third array while it runs. Many of them
the LCS bounds then rule out (:func:`bounded_pairs`). :class:`CandidatePairs` keeps them
packed, 8 bytes a pair, and :func:`filter_slices` unpacks a slice at a time, keeping only
what the filter leaves: the pairs held whole are the packed ones and the survivors.

Example:
    >>> packed = np.array([1 << 32 | 2, 1 << 32 | 3], dtype=np.uint64)
    >>> pairs = CandidatePairs.of_packed(packed, np.array([10, 11, 12, 13]))
    >>> a, b = filter_slices(pairs, lambda a, b: b != 13, size=1)
    >>> len(pairs), a.tolist(), b.tolist()
    (2, [11], [12])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numba import njit

from neardup.candidates.bounds import (
    BlockSweep,
    first_block_order,
    length_possible,
    possible_in_halves,
    scanned_sketches,
)
from neardup.candidates.radix import merge_runs_carrying
from neardup.lcs import length_bounds
from neardup.memory import joined_parts, return_freed_memory
from neardup.rank_directory import RowSet

_LOW = np.uint64(0xFFFFFFFF)
#: :func:`bounded_pairs` keeps the places of at most this many candidates in 4 bytes (a place
#: is below it), of more in 8; 0 keeps them in 8 (tests cover both widths).
PLACES32_UP_TO = 1 << 32
#: :func:`bounded_pairs` bounds a block's pairs this many slices at a time: a slice is sized
#: for 48 bytes a pair (the caller's), a piece holds about 17 (two 4-byte ends, a place, the
#: sweep's 4-byte index of it and its flag).
BLOCK_PIECE_SLICES = 2


class CandidatePairs:
    """Candidate pairs of document indices, in a fixed order: either packed ``left << 32 |
    right`` (uint64) over places in ``documents`` (:meth:`of_packed`, 8 bytes a pair), or two
    integer arrays (:meth:`of_arrays`). The pairs are unpacked in the dtype of ``documents``
    (or of the arrays): :attr:`dtype`. ``documents`` is an index array or anything with its
    ``take`` and ``dtype``, as a :class:`~neardup.rank_directory.RowSet` (a bit a
    document)."""

    def __init__(
        self,
        packed: np.ndarray | None = None,
        documents: np.ndarray | RowSet | None = None,
        a: np.ndarray | None = None,
        b: np.ndarray | None = None,
    ):
        self._packed = packed
        self._documents = documents
        self._a, self._b = a, b

    @classmethod
    def of_packed(cls, packed: np.ndarray, documents: np.ndarray | RowSet) -> CandidatePairs:
        """Pairs ``(documents[p >> 32], documents[p & 0xFFFFFFFF])`` for each ``p`` of
        ``packed``."""
        if not isinstance(documents, RowSet):
            documents = np.asarray(documents)
        return cls(packed=packed, documents=documents)

    @classmethod
    def of_arrays(cls, a: np.ndarray, b: np.ndarray) -> CandidatePairs:
        """The pairs ``(a[p], b[p])``."""
        return cls(a=np.asarray(a), b=np.asarray(b))

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The two arrays of :meth:`of_arrays`, or None for packed pairs."""
        return None if self._a is None else (self._a, self._b)

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the pairs' document indices."""
        return (self._documents if self._packed is not None else self._a).dtype

    def __len__(self) -> int:
        return int((self._packed if self._packed is not None else self._a).shape[0])

    def release(self) -> None:
        """Let go of the pairs (their memory is freed once no one else holds them); the pairs
        are then empty."""
        empty = np.zeros(0, dtype=self.dtype)
        self._packed = self._documents = None
        self._a, self._b = empty, empty

    def slice(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Pairs ``start`` to ``stop`` as two arrays of document indices (:attr:`dtype`).
        O(stop - start)."""
        if self._packed is None:
            return self._a[start:stop], self._b[start:stop]
        part = self._packed[start:stop]
        a = self._documents.take((part >> np.uint64(32)).astype(np.int64))
        b = self._documents.take((part & _LOW).astype(np.int64))
        return a, b

    def slices(self, size: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """``(start, a, b)`` for each slice of ``size`` pairs, in order."""
        for start in range(0, len(self), size):
            yield (start, *self.slice(start, start + size))


def filter_slices(
    pairs: CandidatePairs,
    keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
    size: int,
    visit: Callable[[np.ndarray, np.ndarray], None] | None = None,
    dtype: type | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs that ``keep`` leaves, in order, as two arrays of ``dtype`` (default: that of
    the pairs, :attr:`CandidatePairs.dtype`): ``keep(a, b)`` is called on each slice of
    ``size`` pairs in turn and returns a bool per pair (None: every pair is kept);
    ``visit(a, b)``, when given, sees every slice first. Memory: the survivors plus one slice.
    O(pairs) plus the calls."""
    dtype = pairs.dtype if dtype is None else dtype
    if keep is None and pairs.arrays is not None and pairs.dtype == dtype:  # no copy
        for _, a, b in pairs.slices(size) if visit is not None else ():
            visit(a, b)
        return pairs.arrays
    if keep is None:
        whole_a = np.empty(len(pairs), dtype=dtype)
        whole_b = np.empty(len(pairs), dtype=dtype)
    kept_a: list[np.ndarray] = []
    kept_b: list[np.ndarray] = []
    for start, a, b in pairs.slices(size):
        if visit is not None:
            visit(a, b)
        if keep is None:
            whole_a[start : start + a.shape[0]] = a
            whole_b[start : start + b.shape[0]] = b
            continue
        mask = keep(a, b)
        kept_a.append(a[mask].astype(dtype, copy=False))
        kept_b.append(b[mask].astype(dtype, copy=False))
    if keep is None:
        return whole_a, whole_b
    if not kept_a:
        return np.zeros(0, dtype=dtype), np.zeros(0, dtype=dtype)
    # One side joined and its parts let go before the other: 1.5 times the survivors, not 2.
    a = np.concatenate(kept_a)
    kept_a.clear()
    return a, np.concatenate(kept_b)


def bound_possible(
    a: np.ndarray,
    b: np.ndarray,
    sizes: np.ndarray,
    sketches: np.ndarray | None,
    threshold: float,
    slice_size: int = 1 << 23,
) -> np.ndarray:
    """Which pairs' LCS resemblance may reach ``threshold`` by their unit counts ``sizes``
    and, when given, their count ``sketches`` alone
    (:func:`~neardup.candidates.bounds.possible_in_halves`; else
    :func:`neardup.lcs.length_bounds`): the LCS kernel's own first tests. Bool per pair.
    O(pairs), ``slice_size`` pairs at a time by the lengths alone (their temporaries are about
    40 bytes a pair).

    Example:
        >>> bound_possible(np.array([0]), np.array([1]), np.array([4, 5]), None, 0.9).tolist()
        [False]
    """
    if sketches is not None:
        return possible_in_halves(sizes, sketches, a, b, threshold)
    keep = np.empty(a.shape[0], dtype=bool)
    for start in range(0, a.shape[0], slice_size):
        part = slice(start, start + slice_size)
        keep[part] = length_bounds(sizes[a[part]], sizes[b[part]]) >= threshold
    return keep


class BlockParts:
    """Pairs held apart by the block of their smaller end, for :func:`bounded_pairs` to bound
    one block at a time: :meth:`add` puts each pair ``(a, b)`` and its place ``at`` in its
    block's part, :meth:`pieces` gives a block's pairs back a piece at a time, in the order
    they were added, and lets go of them. This one holds them in memory; an out-of-core run's
    writes them to disk past a bound
    (:class:`neardup.engines.spilled_buckets.SpilledBlockParts`). Memory: the pairs added and
    not taken (12 bytes a pair of 4-byte ends and places)."""

    def __init__(self, blocks: int):
        self.parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [
            [] for _ in range(blocks)
        ]

    def add(self, a: np.ndarray, b: np.ndarray, at: np.ndarray, block_rows: int) -> None:
        """Each pair ``(a[p], b[p])``, with its place ``at[p]``, into the part of the block of
        ``block_rows`` rows that holds its smaller end. O(pairs + blocks)."""
        order, starts = first_block_order(a, b, block_rows, len(self.parts))
        for block in np.flatnonzero(np.diff(starts)).tolist():
            picked = order[starts[block] : starts[block + 1]]
            self._keep(block, a[picked], b[picked], at[picked])

    def _keep(self, block: int, a: np.ndarray, b: np.ndarray, at: np.ndarray) -> None:
        self.parts[block].append((a, b, at))

    def pieces(self, block: int, size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The pairs of ``block`` and their places, in the order added, ``size`` pairs a piece
        (the last may be short); they are let go."""
        parts, self.parts[block] = self.parts[block], []
        a, b, at = joined_columns(parts)
        del parts
        for start in range(0, a.shape[0], size):
            yield a[start : start + size], b[start : start + size], at[start : start + size]


def joined_columns(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The columns of ``parts`` (each ``(a, b, at)``, as :class:`BlockParts` holds them),
    joined in order. O(pairs)."""
    if not parts:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint32), np.zeros(0, np.uint32)
    return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]


def bounded_pairs(
    pairs: CandidatePairs,
    sizes: np.ndarray,
    sketches: np.ndarray | None,
    threshold: float,
    slice_size: int,
    block_rows: int | None = None,
    visit: Callable[[np.ndarray, np.ndarray], None] | None = None,
    block_parts: Callable[[int], BlockParts] = BlockParts,
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs that :func:`bound_possible` leaves, in order, taken ``slice_size`` at a time
    (``visit`` seeing every slice). With ``block_rows`` (sketches in a spill file) each slice
    is bounded by its lengths alone (:func:`~neardup.candidates.bounds.length_possible`) and
    the pairs left go, 4-byte ends and places (below 2**32 pairs), to a
    ``block_parts(blocks)`` store (:class:`BlockParts`) by the block of their smaller end;
    ``pairs`` is released
    (:meth:`CandidatePairs.release`: the caller's object is then empty) and each block's pairs
    are then bounded by their coarse sketches and sketches in turn
    (:class:`~neardup.candidates.bounds.BlockSweep`, the same sweep as
    :func:`~neardup.candidates.bounds.possible_by_blocks`), :data:`BLOCK_PIECE_SLICES` slices
    of a block's pairs at a time, so that only those pairs and the survivors are held (the
    store may keep the others on disk). The pairs left are of
    the pairs' :attr:`~CandidatePairs.dtype`. O(pairs) plus a radix sort of the survivors."""
    if block_rows is None:

        def keep(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return bound_possible(a, b, sizes, sketches, threshold, slice_size)

        return filter_slices(pairs, keep, slice_size, visit)
    dtype = pairs.dtype
    # 4-byte ends already (int32 indices) are kept as they are.
    narrow = dtype if np.dtype(dtype).itemsize <= 4 or sizes.shape[0] > 1 << 32 else np.uint32
    place = np.uint32 if len(pairs) <= PLACES32_UP_TO else np.int64
    kept: tuple[list[np.ndarray], ...] = ([], [], [])  # each block's survivors: a, b, at
    with scanned_sketches(sketches, block_rows) as (unbounded, coarse):
        sweep = BlockSweep(sizes, sketches, threshold, block_rows, coarse)
        parts = block_parts(sweep.blocks)
        for start, a, b in pairs.slices(slice_size):
            if visit is not None:
                visit(a, b)
            left = np.flatnonzero(length_possible(sizes, unbounded, a, b, threshold))
            at = (left + start).astype(place)
            parts.add(a[left].astype(narrow), b[left].astype(narrow), at, block_rows)
            del a, b, left, at
        pairs.release()  # 8 bytes a candidate, not read again, beside the sketches' blocks
        # The blocks' parts held in memory came from the heap, small and many: the pages of
        # those spilled since are free but resident (0.4 GB at 100M documents) until trimmed.
        return_freed_memory()
        for block in range(sweep.blocks):
            # A block's pairs a piece at a time: the first blocks hold the stars' centres, the
            # buckets' first documents (56M pairs, 0.95 GB with the sweep's index of them, in
            # the first block at 100M short documents). Each piece reads block ``block`` again.
            for a, b, at in parts.pieces(block, BLOCK_PIECE_SLICES * slice_size):
                keep = np.empty(a.shape[0], dtype=bool)
                sweep.bound(block, a, b, keep, a.shape[0])
                for column, values in zip(kept, (a, b, at)):
                    column.append(values[keep])
                del a, b, at, keep
        del sweep  # its blocks
    # Back in the candidates' order: each block's survivors are in it already, so their runs
    # are merged, each column joined as its parts are let go (a radix argsort of the places,
    # its copies and scratch held about 64 bytes a survivor at once; now 20).
    runs = np.cumsum([0] + [part.shape[0] for part in kept[2]])
    at = joined_parts(kept[2], place, (0,))
    a, b = joined_parts(kept[0], narrow, (0,)), joined_parts(kept[1], narrow, (0,))
    out_a, out_b = np.empty(a.shape[0], dtype=dtype), np.empty(b.shape[0], dtype=dtype)
    merge_runs_carrying(at, runs, a, b, out_a, out_b)
    return out_a, out_b


@njit(cache=True, nogil=True)
def _chunks_kernel(a, b, cost, limit):
    # A bit a document: set while the current chunk holds it, cleared by walking the chunk's
    # pairs again when the next chunk starts (a chunk index a document took 8 bytes: 0.22 GB
    # at 27M compared documents, for every call however few its pairs).
    chunk_of = np.empty(a.shape[0], dtype=np.int64)
    held = np.zeros((cost.shape[0] + 63) >> 6, dtype=np.uint64)
    one = np.uint64(1)
    current, used, first = 0, 0.0, 0
    for p in range(a.shape[0]):
        x, y = a[p], b[p]
        extra = 0.0
        if not (held[x >> 6] >> np.uint64(x & 63)) & one:
            extra += float(cost[x])
        if y != x and not (held[y >> 6] >> np.uint64(y & 63)) & one:
            extra += float(cost[y])
        if used > 0 and used + extra > limit:
            for q in range(first, p):
                held[a[q] >> 6] &= ~(one << np.uint64(a[q] & 63))
                held[b[q] >> 6] &= ~(one << np.uint64(b[q] & 63))
            current += 1
            first = p
            used = 0.0
            extra = float(cost[x]) + (float(cost[y]) if y != x else 0.0)
        chunk_of[p] = current
        held[x >> 6] |= one << np.uint64(x & 63)
        held[y >> 6] |= one << np.uint64(y & 63)
        used += extra
    return chunk_of


def chunks_of_pairs(a: np.ndarray, b: np.ndarray, cost: np.ndarray, limit: float) -> np.ndarray:
    """Chunk number (int64) of each pair ``(a[p], b[p])`` when consecutive pairs are packed
    greedily so that the documents of a chunk cost at most ``limit`` together (``cost``: a
    number per document, integer or float, read in place), each counted once; a pair whose two
    documents alone exceed it makes a chunk alone. O(pairs + documents) time; memory a bit a
    document beside the result.

    Example:
        >>> chunks_of_pairs(np.array([0, 0, 2]), np.array([1, 2, 3]), np.ones(4), 3.0).tolist()
        [0, 0, 1]
    """
    cost = np.asarray(cost)
    if cost.dtype.kind not in "iuf":
        raise ValueError(f"cost must be integers or floats, got dtype {cost.dtype}")
    return _chunks_kernel(a, b, cost, float(limit))
