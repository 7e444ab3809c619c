"""The LCS bounds of candidate pairs over count sketches too large for memory, block by block.

An out-of-core run keeps the count sketches of every document's LCS units (128 bytes a
document, :func:`neardup.lcs.count_sketches`) in a spill file once they pass its budget. Reading
the rows of scattered pairs through the file's memory map makes the whole file resident (the
kernel reads whole neighbourhoods of pages, and dropping them with ``madvise`` does not lower
the peak), and a ``pread`` per row costs about 0.6 µs: 40 s for the 77M ends of the 39M
candidates of 10M short documents.

So the rows are cut into blocks of ``block_rows`` and the pairs grouped by the blocks of their
two ends (a *tile*): for each block ``i`` in turn (read once), the pairs whose smaller end lies
in it are taken tile by tile, block ``j ≥ i`` of their larger end read beside it into a buffer
of two blocks kept for the whole call. Memory: two blocks of sketches and unit counts, plus
8 bytes a pair of block ``i`` and the temporaries of one tile (the pairs' ends may be any
integer dtype: uint32 ends take half the memory); reads: each block once as a first block,
and once per first block before it as a second one, ``O(n² / block_rows)`` bytes, all
sequential.

Example:
    >>> from neardup.text.units import lcs_unit_sketches
    >>> sizes, sketches = lcs_unit_sketches(["a b c d e", "a b c d x", "v w x y z"])
    >>> a, b = np.array([0, 0, 2]), np.array([1, 2, 1])
    >>> possible_by_blocks(sizes, sketches, a, b, 0.8, block_rows=1).tolist()
    [True, False, False]
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit

from neardup.lcs import possible_pairs


def sketch_block_rows(sketches: np.ndarray, memory: int | None) -> int:
    """Rows of ``sketches`` (n × width bytes) of which two blocks, with their unit counts
    (8 bytes a row), fit in ``memory`` bytes (at least one row); every row when ``memory`` is
    None."""
    n = int(sketches.shape[0])
    if memory is None:
        return max(n, 1)
    row_bytes = int(np.prod(sketches.shape[1:], dtype=np.int64)) * sketches.itemsize + 8
    return int(max(1, min(max(n, 1), memory // (2 * row_bytes))))


def read_rows(array: np.ndarray, start: int, out: np.ndarray) -> np.ndarray:
    """``array[start : start + len(out)]`` copied into ``out`` (same dtype and row shape) and
    returned. A memory-mapped array (``np.memmap``, as a spilled column or a stored checkpoint
    opened with ``mmap_mode``) is read from its file with ``pread``, not through the map, so
    that none of its pages stay resident. O(rows)."""
    rows = out.shape[0]
    filename = getattr(array, "filename", None)
    if not isinstance(array, np.memmap) or filename is None or rows == 0:
        out[:] = array[start : start + rows]
        return out
    row_bytes = out.nbytes // rows
    view = memoryview(out.reshape(-1).view(np.uint8))
    place = int(array.offset) + start * row_bytes
    fd = os.open(filename, os.O_RDONLY)
    try:
        done = 0
        while done < view.nbytes:
            got = os.preadv(fd, [view[done:]], place + done)
            if got <= 0:
                raise OSError(f"{filename} is shorter than its {array.shape[0]} rows")
            done += got
    finally:
        os.close(fd)
    return out


def possible_by_blocks(
    sizes: np.ndarray,
    sketches: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    threshold: float,
    block_rows: int,
) -> np.ndarray:
    """:func:`neardup.lcs.possible_pairs` (bool per pair: whether the pair may reach the LCS
    resemblance ``threshold`` by its unit counts and count sketches), with at most two blocks
    of ``block_rows`` rows of ``sketches`` in memory at once (module docstring).

    Cost: O(pairs × (COUNT_BUCKETS + blocks)) time, reads of O(n² / block_rows) rows;
    memory O(block_rows × width + pairs of one block).
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1; got {block_rows}")
    # Any integer dtype as it is (uint32 ends take half the memory of int64 ones: no copy).
    a, b = _as_rows(a), _as_rows(b)
    keep = np.empty(a.shape[0], dtype=bool)
    n = int(sketches.shape[0])
    if a.shape[0] == 0 or n == 0:
        return possible_pairs(sizes, sketches, a, b, threshold)
    blocks = -(-n // block_rows)
    per_block = np.zeros(blocks + 1, dtype=np.int64)
    _count_first_blocks(a, b, block_rows, per_block)
    width_shape = sketches.shape[1:]
    buffer = np.empty((2 * block_rows, *width_shape), dtype=sketches.dtype)
    counts = np.empty(2 * block_rows, dtype=sizes.dtype)
    tile_starts = np.empty(blocks + 1, dtype=np.int64)
    for i in range(blocks):
        if per_block[i] == 0:
            continue
        first = i * block_rows
        rows_i = min(block_rows, n - first)
        read_rows(sketches, first, buffer[:rows_i])
        counts[:rows_i] = sizes[first : first + rows_i]
        # The pairs of block i grouped by the block of their larger end (a counting sort:
        # 8 bytes a pair of the block, no argsort and its copies).
        chosen = np.empty(per_block[i], dtype=np.int64)
        _pairs_of_block(a, b, block_rows, i, chosen, tile_starts)
        for j in range(i, blocks):
            start, end = int(tile_starts[j]), int(tile_starts[j + 1])
            if start == end:
                continue
            if j != i:
                other = j * block_rows
                rows_j = min(block_rows, n - other)
                read_rows(sketches, other, buffer[block_rows : block_rows + rows_j])
                counts[block_rows : block_rows + rows_j] = sizes[other : other + rows_j]
            pairs = chosen[start:end]
            local_a = _local_rows(a[pairs], block_rows, i, j)
            local_b = _local_rows(b[pairs], block_rows, i, j)
            keep[pairs] = possible_pairs(counts, buffer, local_a, local_b, threshold)
        del chosen
    return keep


def _as_rows(rows: np.ndarray) -> np.ndarray:
    """``rows`` as a contiguous integer array, of its own dtype when it is one (no copy)."""
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        rows = rows.astype(np.int64)
    return np.ascontiguousarray(rows)


#: Rows :func:`unbounded_rows` reads at a time (8 MiB of sketches): a sequential read needs
#: no large block, and its comparison temporary is as large again.
SCAN_ROWS = 1 << 16


def unbounded_rows(sketches: np.ndarray, block_rows: int) -> np.ndarray:
    """Which rows of ``sketches`` hold 255 in every bucket (a long text counted in
    characters: two such sketches rule nothing out, not even by the lengths), read in order
    at most ``block_rows`` (and :data:`SCAN_ROWS`) rows at a time (:func:`read_rows`).
    bool[n]; O(n × width)."""
    n = int(sketches.shape[0])
    step = max(1, min(block_rows, SCAN_ROWS, n))
    out = np.empty(n, dtype=bool)
    buffer = np.empty((step, *sketches.shape[1:]), dtype=sketches.dtype)
    for start in range(0, n, step):
        rows = read_rows(sketches, start, buffer[: min(step, n - start)])
        out[start : start + rows.shape[0]] = (rows == 255).all(axis=1)
    return out


def length_possible(
    sizes: np.ndarray, unbounded: np.ndarray, a: np.ndarray, b: np.ndarray, threshold: float
) -> np.ndarray:
    """The first test of :func:`neardup.lcs.possible_pairs` alone, without the sketches: bool
    per pair, False where the length ratio min / max of two texts (``sizes``, their units)
    is below ``threshold``, unless both are :func:`unbounded_rows`. Every pair it rules out
    :func:`possible_by_blocks` rules out too. O(pairs).

    Example:
        >>> no = np.zeros(3, dtype=bool)
        >>> length_possible(np.array([4, 5, 9]), no, np.array([0, 0]), np.array([1, 2]), 0.8)
        array([ True, False])
    """
    out = np.empty(len(a), dtype=bool)
    _length_kernel(
        sizes,
        unbounded,
        np.ascontiguousarray(a, dtype=np.int64),
        np.ascontiguousarray(b, dtype=np.int64),
        float(threshold),
        out,
    )
    return out


@njit(cache=True, nogil=True)
def _length_kernel(sizes, unbounded, a, b, threshold, out):
    for p in range(a.shape[0]):
        x, y = a[p], b[p]
        low = min(np.int64(sizes[x]), np.int64(sizes[y]))
        top = max(np.int64(sizes[x]), np.int64(sizes[y]))
        out[p] = top == 0 or (unbounded[x] and unbounded[y]) or low / top >= threshold


@njit(cache=True, nogil=True)
def _count_first_blocks(a, b, block_rows, per_block):
    """``per_block[i]``: the pairs whose smaller end lies in block ``i``. O(pairs)."""
    for p in range(a.shape[0]):
        per_block[min(a[p], b[p]) // block_rows] += 1


@njit(cache=True, nogil=True)
def _pairs_of_block(a, b, block_rows, block, chosen, tile_starts):
    """The pairs whose smaller end lies in ``block`` (``chosen``), grouped by the block of
    their larger end, ascending within a group: the group of block ``j`` is
    ``chosen[tile_starts[j]:tile_starts[j + 1]]``. Two passes, O(pairs + blocks)."""
    tile_starts[:] = 0
    for p in range(a.shape[0]):
        if min(a[p], b[p]) // block_rows == block:
            tile_starts[max(a[p], b[p]) // block_rows + 1] += 1
    for j in range(tile_starts.shape[0] - 1):
        tile_starts[j + 1] += tile_starts[j]
    at = tile_starts[:-1].copy()
    for p in range(a.shape[0]):
        if min(a[p], b[p]) // block_rows == block:
            j = max(a[p], b[p]) // block_rows
            chosen[at[j]] = p
            at[j] += 1


def _local_rows(rows: np.ndarray, block_rows: int, first: int, second: int) -> np.ndarray:
    """Rows of block ``first`` or ``second`` as places in the two-block buffer (int64)."""
    rows = rows.astype(np.int64)
    block = rows // block_rows
    return np.where(block == first, 0, block_rows) + rows - block * block_rows
