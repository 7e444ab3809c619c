"""The LCS bounds of candidate pairs over count sketches too large for memory, block by block.

An out-of-core run keeps the count sketches of every document's LCS units (128 bytes a
document, :func:`neardup.lcs.count_sketches`) in a spill file once they pass its budget. Reading
the rows of scattered pairs through a map of the whole file, kept open, makes the whole file
resident (the kernel reads whole neighbourhoods of pages, and dropping them with ``madvise``
does not lower the peak), and a ``pread`` per row costs about 0.6 µs: 40 s for the 77M ends of
the 39M candidates of 10M short documents.

So the rows are cut into blocks of ``block_rows`` and the pairs grouped by the blocks of their
two ends (a *tile*): for each block ``i`` in turn (read once), the pairs whose smaller end lies
in it are taken tile by tile, the rows of block ``j ≥ i`` of their larger end placed beside it
in a buffer of two blocks kept for the whole call. Chance pairs of short texts join every
block to every other, so reading each such block ``j`` whole reads ``O(n² / block_rows)``
bytes. A tile with few pairs reads instead only the rows they name (:func:`gather_rows`): the
pages holding them are asked for at once (``posix_fadvise``, unless the page cache holds
those of a few of them), then each row is read with ``pread``, both from a compiled loop, so
that nothing of the file stays resident (each half of the rows on its own thread, as each half
of a block read whole: the sweep itself runs on one). Which way is
the cost rule :func:`reads_rows_only`, from the measurements of
``benchmarks/bench_sketch_bounds.py`` (blocks of 89 MB): from the disk a scattered page costs
about 9 µs (the reads queued together) against 2.3 µs a page of a block read whole; from the
page cache about 0.6 µs against 0.5–1.2. So a tile reads its rows alone when its pairs touch
at most a quarter of the block's pages (as fast as the block from the disk at that share,
twice as fast from the cache, and far faster below it: 500 pairs in 7 ms against 58 from the
disk, 1.8 against 12 from the cache), and the block whole otherwise. With the rows read by
``pread`` the rule still sits where the disk's two ways cross (blocks of 80 MB, 5,000 pairs:
39 ms against 33 from the disk, 3.6 against 8.0 from the cache).

A later block read whole is read as its coarse sketches first (:func:`scanned_sketches`: 16
bytes a row, each run of eight buckets summed), made by the one pass over the file that also
finds its unbounded rows: the coarse bound rules out no pair the sketches leave, and on short
texts nearly every pair they rule out, so only the few pairs left need the block's 128-byte
rows, read for those pairs alone. The block-against-block reads of chance pairs shrink about
eightfold.

Reads: each block with pairs once as a first block, and per tile of a later block the lesser
of that block and the pages its pairs touch: ``O(n + pairs)`` pages when the tiles are sparse
(uniform pairs: fewer than about ``n² / (64 × SPARSE_SHARE × block_rows)`` with 128-byte rows
and 4 KiB pages), ``O(n² / block_rows)`` bytes at most. Memory: two blocks of sketches, of
coarse sketches and of unit counts, plus 8 bytes a pair of block ``i``, the temporaries of one
tile (the pairs' ends may be any integer dtype: uint32 ends take half the memory, and are not
copied whole); no map of the file.

Example:
    >>> from neardup.text.units import lcs_unit_sketches
    >>> sizes, sketches = lcs_unit_sketches(["a b c d e", "a b c d x", "v w x y z"])
    >>> a, b = np.array([0, 0, 2]), np.array([1, 2, 1])
    >>> possible_by_blocks(sizes, sketches, a, b, 0.8, block_rows=1).tolist()
    [True, False, False]
"""

from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
from numba import njit

from neardup.borrowed import borrowed
from neardup.candidates.radix import PARALLEL_MIN_KEYS, in_halves, sorted_distinct
from neardup.lcs import possible_pairs
from neardup.memory import index_dtype
from neardup.rank_directory import holds

#: A pair's count bound (:func:`neardup.lcs.possible_pairs`, 120-150 ns) in keys of a sort,
#: the measure of :func:`~neardup.candidates.radix.in_halves`: the pairs of
#: :func:`possible_in_halves` go to two threads from 32,768 on (about 4 ms of work).
BOUND_WORK = 32


#: A pair's length test (:func:`length_possible`: two scattered reads of the unit counts,
#: about 25 ns) in keys of a sort, as :data:`BOUND_WORK`.
LENGTH_WORK = 6


def possible_in_halves(
    sizes: np.ndarray, sketches: np.ndarray, a: np.ndarray, b: np.ndarray, threshold: float
) -> np.ndarray:
    """:func:`neardup.lcs.possible_pairs` over the two halves of the pairs on two threads
    (each pair is decided alone: the same answers). O(pairs × COUNT_BUCKETS).

    Example:
        >>> from neardup.text.units import lcs_unit_sketches
        >>> sizes, sketches = lcs_unit_sketches(["a b c d e", "a b c d x", "v w x y z"])
        >>> possible_in_halves(sizes, sketches, np.array([0, 0]), np.array([1, 2]), 0.8).tolist()
        [True, False]
    """
    parts = in_halves(
        lambda half, lo, hi: possible_pairs(sizes, sketches, a[lo:hi], b[lo:hi], threshold),
        len(a),
        size=len(a) * BOUND_WORK,
    )
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def sketch_block_rows(sketches: np.ndarray, memory: int | None) -> int:
    """Rows of ``sketches`` (n × width bytes) of which two blocks, with their coarse sketches
    (:func:`scanned_sketches`) and unit counts (8 bytes a row), fit in ``memory`` bytes (at
    least one row); every row when ``memory`` is None."""
    n = int(sketches.shape[0])
    if memory is None:
        return max(n, 1)
    width = int(np.prod(sketches.shape[1:], dtype=np.int64))
    row_bytes = width * sketches.itemsize + coarse_width(width) + 8
    return int(max(1, min(max(n, 1), memory // (2 * row_bytes))))


def read_rows(array: np.ndarray, start: int, out: np.ndarray, halves: bool = False) -> np.ndarray:
    """``array[start : start + len(out)]`` copied into ``out`` (same dtype and row shape) and
    returned. A memory-mapped array (``np.memmap``, as a spilled column or a stored checkpoint
    opened with ``mmap_mode``) is read from its file with ``pread``, not through the map, so
    that none of its pages stay resident; with ``halves``, from :data:`READ_HALVES_BYTES` bytes
    on, each half of the rows on its own thread (:func:`in_halves`: for a caller on one
    thread, as the sketches' sweep). O(rows)."""
    rows = out.shape[0]
    filename = _mapped_file(array)
    if filename is None or rows == 0:
        out[:] = array[start : start + rows]
        return out
    row_bytes = out.nbytes // rows
    view = memoryview(out.reshape(-1).view(np.uint8))
    # A Python int: a NumPy int32 ``start`` times the row's bytes would stay in 32 bits.
    place = int(array.offset) + int(start) * row_bytes
    work = view.nbytes * PARALLEL_MIN_KEYS // READ_HALVES_BYTES if halves else 0
    fd = os.open(filename, os.O_RDONLY)
    try:
        in_halves(_read_part, rows, fd, view, place, row_bytes, array, size=work)
    finally:
        os.close(fd)
    return out


#: Bytes from which :func:`read_rows` with ``halves`` reads on two threads. From the page cache
#: a block is a copy at about 20 GB/s, and handing a half to the second thread and back takes
#: 60-100 µs when that thread slept since its last half: two halves of 8 MiB took 0.96 of one
#: read's time, of 16 MiB 0.83, of 64 MiB 0.75.
READ_HALVES_BYTES = 1 << 24


def _read_part(half, lo, hi, fd, view, place, row_bytes, array) -> None:
    """The rows ``lo..hi-1`` of :func:`read_rows` (``view``: its output's bytes)."""
    done, end = lo * row_bytes, hi * row_bytes
    while done < end:
        got = os.preadv(fd, [view[done:end]], place + done)
        if got <= 0:
            raise _shorter(array)
        done += got


def _shorter(array: np.ndarray) -> OSError:
    """The error of a read past the end of the file under the memory-mapped ``array``."""
    return OSError(f"{_mapped_file(array)} is shorter than its {array.shape[0]} rows")


#: A tile reads only the rows its pairs name when they touch at most ``1 / SPARSE_SHARE`` of
#: the pages of its block (:func:`reads_rows_only`).
SPARSE_SHARE = 4


def _mapped_file(array: np.ndarray) -> str | None:
    """The file of a memory-mapped ``array`` (``np.memmap`` of a file), else None."""
    return getattr(array, "filename", None) if isinstance(array, np.memmap) else None


def reads_rows_only(pairs: int, rows: int, row_bytes: int) -> bool:
    """Whether a tile of ``pairs`` pairs whose larger ends lie in a block of ``rows`` rows of
    ``row_bytes`` bytes each reads only their rows (:func:`gather_rows`) rather than the block
    whole (:func:`read_rows`): when the pages they may touch, one a pair, are at most
    ``1 / SPARSE_SHARE`` of the block's: then the rows cost at most what the block costs from
    the disk, and less from the page cache (module docstring). O(1).

    Example:
        >>> reads_rows_only(1_000, 698_529, 128), reads_rows_only(100_000, 698_529, 128)
        (True, False)
    """
    page = max(mmap.PAGESIZE, row_bytes)
    return pairs * page * SPARSE_SHARE <= rows * row_bytes


def _c_function(name: str, restype, argtypes: list) -> ctypes._CFuncPtr | None:
    """The C library's function ``name`` typed for a compiled call, or None where the library
    or the function is missing."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):
        return None
    function.restype, function.argtypes = restype, argtypes
    return function


#: The C library's ``pread`` and ``posix_fadvise``, which :func:`gather_rows` calls from a
#: compiled loop (None where missing: then it copies the rows through the file's map).
_PREAD = _c_function(
    "pread", ctypes.c_ssize_t, [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
)
_FADVISE = _c_function(
    "posix_fadvise", ctypes.c_int, [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
)
_WILL_NEED = getattr(os, "POSIX_FADV_WILLNEED", 3)
#: The C library's ``mincore``: whether the page cache holds a page of a file's map.
_MINCORE = _c_function("mincore", ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p])
#: Rows whose pages :func:`gather_rows` looks up in the page cache before it reads.
_PROBES = 8


def gather_rows(array: np.ndarray, start: int, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[rows] = array[start + rows]`` for ``rows`` ascending and distinct (any integer
    dtype, places in ``out``), other rows of ``out`` left as they were; ``out`` returned. A
    memory-mapped array (as :func:`read_rows` takes) is read from its file by a compiled loop:
    the pages holding the rows are asked for at once (``posix_fadvise``, one call a run of
    consecutive pages, so that the disk reads them together) unless the page cache holds the
    pages of a few of them (:data:`_PROBES`, looked up by ``mincore`` through the array's
    map), then each row is read with ``pread`` into its place (each half of the rows on its
    own thread from 512 rows on, :data:`GATHER_WORK`); no page of the file is mapped, so none
    stays resident, and no file descriptor is left open. O(rows): about 0.7 µs a row
    from the page cache (0.45 without the asking), against 2.6 µs through a map of the file
    (a fault a page and a call a run of pages from Python). Where
    the C library lacks either call, or ``out`` is not contiguous, the rows are copied through
    the array's map.

    Example:
        >>> out = np.zeros((5, 2), dtype=np.uint8)
        >>> gather_rows(np.arange(20, dtype=np.uint8).reshape(10, 2), 4, np.array([1, 3]), out)
        array([[ 0,  0],
               [10, 11],
               [ 0,  0],
               [14, 15],
               [ 0,  0]], dtype=uint8)
    """
    filename = _mapped_file(array)
    compiled = _PREAD is not None and _FADVISE is not None and out.flags.c_contiguous
    if filename is None or rows.shape[0] == 0 or not compiled:
        out[rows] = array[np.add(rows, int(start), dtype=np.int64)]
        return out
    row_bytes = out.nbytes // out.shape[0]
    first = _first_bytes(int(array.offset) + int(start) * row_bytes, rows, row_bytes)
    flat = out.reshape(-1).view(np.uint8)
    fd = os.open(filename, os.O_RDONLY)
    try:
        if os.fstat(fd).st_size < int(first[-1]) + row_bytes:
            raise _shorter(array)
        # The pages asked for only when the page cache lacks those of a few of the rows (a
        # third of the time a row took from the cache went to asking).
        ask = not _in_page_cache(array, first[:: max(1, first.shape[0] // _PROBES)])
        n = rows.shape[0]
        args = (fd, first, rows, flat, row_bytes, ask, array)
        in_halves(_gather_part, n, *args, size=n * GATHER_WORK)
    finally:
        os.close(fd)
    return out


#: What a row that :func:`gather_rows` reads counts toward the threshold of :func:`in_halves`:
#: gathers of 512 rows or more go to two threads. A row takes about 0.5 µs from the page cache
#: (a system call); two halves of 512 rows took 0.89 of one gather's time, of 2,000 rows 0.63,
#: of 256 rows 1.31 (the hand-over above).
GATHER_WORK = PARALLEL_MIN_KEYS // 512


def _gather_part(half, lo, hi, fd, first, rows, flat, row_bytes, ask, array) -> None:
    """The reads of :func:`gather_rows`'s rows ``lo..hi-1`` (``flat``: its output's bytes)."""
    done = lo
    while done < hi:
        done += _read_rows_at(
            _PREAD, _FADVISE, _WILL_NEED, ask, fd, first[done:hi], row_bytes, mmap.PAGESIZE,
            rows[done:hi], flat,
        )  # fmt: skip
        if done < hi:
            # A read failed in the loop, which cannot see errno: Python's own read of that row
            # raises the system's error, or reads it, and the loop goes on after it.
            place = int(rows[done]) * row_bytes
            got = os.pread(fd, row_bytes, int(first[done]))
            if len(got) < row_bytes:
                raise _shorter(array)
            flat[place : place + row_bytes] = np.frombuffer(got, dtype=np.uint8)
            done += 1


def _first_bytes(base: int, rows: np.ndarray, row_bytes: int) -> np.ndarray:
    """The first byte (int64) of each of the ``rows`` of ``row_bytes`` bytes of a file whose
    row 0 starts at byte ``base``: ``base + rows * row_bytes``, in 64 bits whatever the rows'
    dtype (int32 rows times a Python int stay int32 under NumPy 2, and 128-byte rows pass 2**31
    bytes from row 16,777,216 on). O(rows).

    Example:
        >>> _first_bytes(0, np.array([1 << 24], dtype=np.int32), 128).tolist()
        [2147483648]
    """
    return np.int64(base) + np.asarray(rows).astype(np.int64) * np.int64(row_bytes)


def _in_page_cache(array: np.ndarray, first: np.ndarray) -> bool:
    """Whether the page cache holds the pages of the file under the map ``array`` (a
    ``np.memmap``) at its bytes ``first`` (one ``mincore`` call each, through the array's map:
    no page is read). False where that cannot be told. O(len(first))."""
    if _MINCORE is None:
        return False
    # The file's byte 0 in the address space: the array's first byte is its ``offset``
    # (a failed call, for an address outside the map, answers False).
    zero, page = array.ctypes.data - int(array.offset), mmap.PAGESIZE
    held = np.zeros(1, dtype=np.uint8)
    for at in first.tolist():
        if _MINCORE((zero + at) // page * page, page, held.ctypes.data) or not held[0] & 1:
            return False
    return True


@njit(nogil=True, cache=True)
def _read_rows_at(pread, fadvise, will_need, ask, fd, first, row_bytes, page, rows, out):
    """Rows of ``row_bytes`` bytes starting at the bytes ``first`` (ascending) of the file
    ``fd`` into ``out`` (bytes) at ``rows[i] * row_bytes``: (with ``ask``) the pages asked
    for, one ``fadvise`` a run of consecutive pages, then a ``pread`` a row. Returns how many
    rows were read whole: all of them, or the index of the first whose read failed. O(rows)."""
    out = borrowed(out)  # a slice of it a row (neardup.borrowed)
    n = first.shape[0]
    low = first[0] // page
    top = (first[0] + row_bytes - 1) // page
    if ask:
        for i in range(1, n):
            row_low = first[i] // page
            if row_low > top + 1:
                fadvise(fd, low * page, (top + 1 - low) * page, will_need)
                low = row_low
            top = (first[i] + row_bytes - 1) // page
        fadvise(fd, low * page, (top + 1 - low) * page, will_need)
    for i in range(n):
        place = np.int64(rows[i]) * row_bytes
        done = 0
        while done < row_bytes:
            got = pread(fd, out[place + done :].ctypes, row_bytes - done, first[i] + done)
            if got <= 0:
                return i
            done += got
    return n


def possible_by_blocks(
    sizes: np.ndarray,
    sketches: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    threshold: float,
    block_rows: int,
    coarse: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`neardup.lcs.possible_pairs` (bool per pair: whether the pair may reach the LCS
    resemblance ``threshold`` by its unit counts and count sketches), with at most two blocks
    of ``block_rows`` rows of ``sketches`` in memory at once (module docstring). Sketches in
    memory (not an ``np.memmap`` of a file) are read in place, a slice of pairs at a time.
    With the ``coarse`` sketches of the rows (:func:`scanned_sketches`) a tile that would read
    its later block whole is bounded by them first (:class:`BlockSweep`): the same answers
    from fewer bytes read.

    Cost: O(pairs × (COUNT_BUCKETS + blocks)) time, and a sort of the ends of each tile read
    row by row; reads of each block with pairs once, and per tile of a later block the lesser
    of that block and the pages its pairs touch (:func:`reads_rows_only`): between O(n +
    pairs) pages and O(n² / block_rows) bytes; memory O(block_rows × width + pairs of one
    block), no map of the file. In memory: O(pairs ×
    COUNT_BUCKETS), no reads.

    Example:
        >>> from neardup.text.units import lcs_unit_sketches
        >>> sizes, sketches = lcs_unit_sketches(["a b c d e", "a b c d x", "v w x y z"])
        >>> a, b = np.array([0, 1, 2]), np.array([1, 1, 1])
        >>> possible_by_blocks(sizes, sketches, a, b, 0.8, block_rows=2).tolist()
        [True, True, False]
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1; got {block_rows}")
    # Any integer dtype as it is (uint32 ends take half the memory of int64 ones: no copy).
    a, b = _as_rows(a), _as_rows(b)
    n = int(sketches.shape[0])
    if a.shape[0] == 0 or n == 0:
        return possible_pairs(sizes, sketches, a, b, threshold)
    if _mapped_file(sketches) is None:
        return _possible_in_memory(sizes, sketches, a, b, threshold)
    sweep = BlockSweep(sizes, sketches, threshold, block_rows, coarse)
    keep = np.empty(a.shape[0], dtype=bool)
    per_block = np.zeros(sweep.blocks + 1, dtype=np.int64)
    _count_first_blocks(a, b, block_rows, per_block)
    for i in range(sweep.blocks):
        if per_block[i]:
            sweep.bound(i, a, b, keep, int(per_block[i]))
    return keep


class BlockSweep:
    """The blocks of a sweep of :func:`possible_by_blocks` over spilled ``sketches``: a buffer
    of two blocks of ``block_rows`` rows and their unit counts (``sizes``), kept for the whole
    sweep, which :meth:`bound` fills for the pairs of one first block at a time. A caller that
    holds the pairs of each first block apart (:func:`first_block_order`) bounds them block by
    block without holding all pairs at once.

    With the ``coarse`` sketches of the rows (:func:`scanned_sketches`), a tile that would read
    its later block whole is bounded by them first, from a buffer of two blocks of coarse
    rows: that block is read an eighth as large, and only the pairs they leave are bounded by
    the sketches, whose rows are read for those pairs alone while they are few
    (:func:`reads_rows_only`), while that keeps paying (:meth:`_coarse_first`). A tile that
    reads only its pairs' rows, or lies within block ``i``, is bounded by the sketches alone.
    The answers are the same: the coarse bound rules out no pair the sketches leave. Memory
    O(block_rows × (width + coarse width) + blocks)."""

    def __init__(
        self,
        sizes: np.ndarray,
        sketches: np.ndarray,
        threshold: float,
        block_rows: int,
        coarse: np.ndarray | None = None,
    ):
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1; got {block_rows}")
        self.sizes, self.sketches, self.threshold = sizes, sketches, threshold
        self.coarse = coarse
        self.block_rows = block_rows
        n = int(sketches.shape[0])
        #: Blocks of rows (the last may be short).
        self.blocks = -(-n // block_rows)
        self.buffer = np.empty((2 * block_rows, *sketches.shape[1:]), dtype=sketches.dtype)
        self.row_bytes = self.buffer[0].nbytes
        self.coarse_buffer = (
            None if coarse is None else np.empty((2 * block_rows, *coarse.shape[1:]), np.uint8)
        )
        self.counts = np.empty(2 * block_rows, dtype=sizes.dtype)
        self.tile_starts = np.empty(self.blocks + 1, dtype=np.int64)
        # Tiles that would read their later block whole; of them, those bounded by the coarse
        # sketches, and those where the coarse sketches saved that read.
        self._dense_tiles = self._tried = self._paid = 0

    def bound(self, i: int, a: np.ndarray, b: np.ndarray, keep: np.ndarray, count: int) -> None:
        """``keep[p]`` for the ``count`` pairs ``(a[p], b[p])`` whose smaller end lies in
        block ``i`` (other places of ``keep`` are left as they were): block ``i`` read whole,
        and for each later block ``j`` its tile's rows or the block whole
        (:func:`reads_rows_only`), of the coarse sketches first when the sweep has them.
        O(pairs + count × COUNT_BUCKETS)."""
        n, block_rows = int(self.sketches.shape[0]), self.block_rows
        first = i * block_rows
        rows_i = min(block_rows, n - first)
        read_rows(self.sketches, first, self.buffer[:rows_i], halves=True)
        if self.coarse is not None:
            read_rows(self.coarse, first, self.coarse_buffer[:rows_i], halves=True)
        self.counts[:rows_i] = self.sizes[first : first + rows_i]
        # The pairs of block i grouped by the block of their larger end (a counting sort:
        # 4 bytes a pair of the block below 2**31 - 1 pairs, no argsort and its copies).
        chosen = np.empty(count, dtype=index_dtype(a.shape[0]))
        _pairs_of_block(a, b, block_rows, i, chosen, self.tile_starts)
        for j in range(i, self.blocks):
            start, end = int(self.tile_starts[j]), int(self.tile_starts[j + 1])
            if start == end:
                continue
            pairs = chosen[start:end]
            if self._coarse_first(pairs.shape[0], i, j):
                self._read_second(self.coarse, self.coarse_buffer, j, a, b, pairs)
                maybe = self._possible(self.coarse_buffer, a, b, pairs, i, j)
                keep[pairs[~maybe]] = False
                pairs = pairs[maybe]
                self._tried += 1
                self._paid += pairs.shape[0] == 0 or self._sparse(pairs.shape[0], j)
                if pairs.shape[0] == 0:
                    continue
            if j != i:
                self._read_second(self.sketches, self.buffer, j, a, b, pairs)
            keep[pairs] = self._possible(self.buffer, a, b, pairs, i, j)

    def _possible(
        self, buffer: np.ndarray, a: np.ndarray, b: np.ndarray, pairs: np.ndarray, i: int, j: int
    ) -> np.ndarray:
        """:func:`~neardup.lcs.possible_pairs` of the ``pairs`` (places in ``a`` and ``b``) of
        the tile of blocks ``i`` and ``j``, from the rows of both blocks in ``buffer`` and
        :attr:`counts`: :data:`SCAN_ROWS` pairs at a time, so that their places in the buffer
        and the temporaries that find them (about 60 bytes a pair) are held for one slice, not
        for a tile (pairs of nearby documents, as chains of edits make, put most of a block's
        pairs in its tile with itself). O(pairs × COUNT_BUCKETS)."""
        out = np.empty(pairs.shape[0], dtype=bool)
        for start in range(0, pairs.shape[0], SCAN_ROWS):
            part = pairs[start : start + SCAN_ROWS]
            local_a = _local_rows(a[part], self.block_rows, i, j)
            local_b = _local_rows(b[part], self.block_rows, i, j)
            out[start : start + SCAN_ROWS] = possible_in_halves(
                self.counts, buffer, local_a, local_b, self.threshold
            )
        return out

    def _coarse_first(self, pairs: int, i: int, j: int) -> bool:
        """Whether the tile of ``pairs`` pairs of blocks ``i`` and ``j`` is bounded by the
        coarse sketches first: block ``j`` would be read whole, and so far the coarse sketches
        left few enough pairs to read their rows alone (or none) in at least half of the tiles
        they bounded (their first eight tiles, and every sixteenth tile after, are bounded by
        them whatever the count: texts change along a corpus). Where they leave most pairs
        (long texts), block ``j`` is then read once, not twice."""
        if self.coarse is None or j == i or self._sparse(pairs, j):
            return False
        self._dense_tiles += 1
        return self._tried < 8 or 2 * self._paid >= self._tried or self._dense_tiles % 16 == 0

    def _sparse(self, pairs: int, j: int) -> bool:
        """Whether ``pairs`` pairs of a tile read only their rows of block ``j``'s sketches
        (:func:`reads_rows_only`)."""
        rows_j = min(self.block_rows, int(self.sketches.shape[0]) - j * self.block_rows)
        return reads_rows_only(pairs, rows_j, self.row_bytes)

    def _read_second(
        self, source: np.ndarray, buffer: np.ndarray, j: int, a: np.ndarray, b: np.ndarray,
        pairs: np.ndarray,
    ) -> None:  # fmt: skip
        """Block ``j``'s rows of ``source`` that the ``pairs`` name, or the block whole
        (:func:`reads_rows_only`), into the second half of ``buffer``, their unit counts into
        the second half of the counts."""
        block_rows, counts, sizes = self.block_rows, self.counts, self.sizes
        other = j * block_rows
        rows_j = min(block_rows, int(source.shape[0]) - other)
        second = buffer[block_rows : block_rows + rows_j]
        if reads_rows_only(pairs.shape[0], rows_j, buffer[0].nbytes):
            # Each row at its place in block j's half; the others are not looked at.
            needed = sorted_distinct(np.maximum(a[pairs], b[pairs]).astype(np.int64)) - other
            gather_rows(source, other, needed, second)
            counts[block_rows + needed] = sizes[other + needed]
        else:
            read_rows(source, other, second, halves=True)
            counts[block_rows : block_rows + rows_j] = sizes[other : other + rows_j]


def _possible_in_memory(
    sizes: np.ndarray, sketches: np.ndarray, a: np.ndarray, b: np.ndarray, threshold: float
) -> np.ndarray:
    """:func:`neardup.lcs.possible_pairs` over sketches held in memory, :data:`SCAN_ROWS`
    pairs at a time: nothing to read, and the int64 copies of one slice's ends at most.
    O(pairs × COUNT_BUCKETS)."""
    keep = np.empty(a.shape[0], dtype=bool)
    for start in range(0, a.shape[0], SCAN_ROWS):
        stop = start + SCAN_ROWS
        keep[start:stop] = possible_in_halves(
            sizes, sketches, a[start:stop], b[start:stop], threshold
        )
    return keep


def _as_rows(rows: np.ndarray) -> np.ndarray:
    """``rows`` as a contiguous integer array, of its own dtype when it is one (no copy)."""
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        rows = rows.astype(np.int64)
    return np.ascontiguousarray(rows)


#: Rows :func:`scanned_sketches` reads at a time (8 MiB of sketches): a sequential read needs
#: no large block.
SCAN_ROWS = 1 << 16

#: Buckets of a count sketch summed into one bucket of its coarse sketch
#: (:func:`scanned_sketches`): one 64-bit word of the sketch, 16 bytes a row for its 128.
FOLD = 8


def coarse_width(width: int) -> int:
    """Buckets of the coarse sketch of a count sketch of ``width`` buckets. O(1)."""
    return -(-int(width) // FOLD)


def coarse_sketches(sketches: np.ndarray) -> np.ndarray:
    """The coarse sketch of each row of the count ``sketches`` (uint8[n, width], in memory):
    uint8[n, :func:`coarse_width`], each run of :data:`FOLD` buckets summed, 255 standing for
    255 or more.

    For two texts the coarse bound Σ_g min(Σ_{k∈g} x[k], Σ_{k∈g} y[k]) over the runs ``g``
    is never below the sketches' Σ_k min(x[k], y[k]), and a bucket of 255 on both sides
    leaves both bounds unknown, so :func:`neardup.lcs.possible_pairs` over coarse sketches
    rules out only pairs that the sketches rule out too, from an eighth of the bytes.
    Measured on the candidates the lengths leave: of 1M short documents (10–60 words) the
    coarse sketches leave 1.06 times the pairs the sketches leave; of long English
    documents, 8.5 times (heavy_200k: 1.28). O(n × width).

    Example:
        >>> coarse_sketches(np.array([[1, 2] * 8, [255] * 16], dtype=np.uint8)).tolist()
        [[12, 12], [255, 255]]
    """
    sketches = np.ascontiguousarray(sketches, dtype=np.uint8).reshape(sketches.shape[0], -1)
    coarse = np.empty((sketches.shape[0], coarse_width(sketches.shape[1])), dtype=np.uint8)
    _fold_rows(sketches, coarse)
    return coarse


@contextmanager
def scanned_sketches(
    sketches: np.ndarray, block_rows: int
) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """One pass over the count ``sketches`` (uint8[n, width]) in order, at most
    ``block_rows`` (and :data:`SCAN_ROWS`) rows at a time (:func:`read_rows`), giving
    ``(unbounded, coarse)``: which rows hold 255 in every bucket (a bit a row, uint64 words as
    :func:`~neardup.rank_directory.directory_of` makes them, an eighth of a byte a row: a
    long text counted in characters, two of which rule nothing out, not even by the
    lengths), and, for sketches
    in a spill file of more than one block of ``block_rows``, their :func:`coarse_sketches`
    for a :class:`BlockSweep` to bound by first, in a file beside it (an eighth of its size,
    ``np.memmap``) removed when the context ends; else None (sketches in memory or in one
    block are read once whatever the pairs). O(n × width) time, memory O(:data:`SCAN_ROWS` ×
    width).

    Example:
        >>> sketches = np.array([[1, 2] * 8, [255] * 16], dtype=np.uint8)
        >>> with scanned_sketches(sketches, block_rows=1) as (unbounded, coarse):
        ...     bin(int(unbounded[0])), coarse
        ('0b10', None)
    """
    n, width = int(sketches.shape[0]), int(np.prod(sketches.shape[1:], dtype=np.int64))
    step = max(1, min(block_rows, SCAN_ROWS, n))
    unbounded = np.zeros(-(-n // 64), dtype=np.uint64)
    buffer = np.empty((step, width), dtype=np.uint8)
    filename = _mapped_file(sketches)
    path = file = None
    if filename is not None and n > block_rows:
        handle, path = tempfile.mkstemp(
            prefix=f"{Path(filename).name}.coarse-", dir=Path(filename).parent
        )
        # Through Python's write: a full disk raises OSError with its errno (ENOSPC).
        file = os.fdopen(handle, "wb")
    try:
        out = None if file is None else np.empty((step, coarse_width(width)), dtype=np.uint8)
        with file or nullcontext():
            for start in range(0, n, step):
                rows = read_rows(sketches, start, buffer[: min(step, n - start)])
                _set_bits(unbounded, start, (rows == 255).all(axis=1))
                if file is not None:
                    _fold_rows(rows, out)
                    file.write(memoryview(out[: rows.shape[0]]).cast("B"))
        del buffer, out
        coarse = (
            None if path is None else np.memmap(path, np.uint8, "r", shape=(n, coarse_width(width)))
        )
        yield unbounded, coarse
    finally:
        if path is not None:
            Path(path).unlink(missing_ok=True)


@njit(cache=True, nogil=True)
def _set_bits(words, start, flags):
    """Sets the bit of row ``start + i`` in ``words`` for each set ``flags[i]``."""
    for i in range(flags.shape[0]):
        if flags[i]:
            row = start + i
            words[row >> 6] |= np.uint64(1) << np.uint64(row & 63)


def _fold_rows(rows: np.ndarray, coarse: np.ndarray) -> None:
    """The coarse sketch of each row of ``rows`` (uint8 count sketches, C-contiguous) into
    ``coarse``. O(rows × width)."""
    m, width = rows.shape
    if width % FOLD:  # a run of FOLD buckets is a 64-bit word: the last one padded with 0s
        padded = np.zeros((m, coarse_width(width) * FOLD), dtype=np.uint8)
        padded[:, :width] = rows
        rows = padded
    _fold_words(rows.view(np.uint64), coarse)


_BYTE_LANES = np.uint64(0x00FF00FF00FF00FF)
_SUM_LANES = np.uint64(0x0001000100010001)


@njit(cache=True, nogil=True)
def _fold_words(words, coarse):
    """``coarse[r, c]``: the sum of the eight bytes of ``words[r, c]``, at most 255: the odd
    and even bytes added as four 16-bit lanes (each at most 510), the lanes summed by a
    multiplication into the top 16 bits (at most 2,040). O(words)."""
    for r in range(words.shape[0]):
        for c in range(words.shape[1]):
            x = words[r, c]
            pairs = (x & _BYTE_LANES) + ((x >> np.uint64(8)) & _BYTE_LANES)
            total = (pairs * _SUM_LANES) >> np.uint64(48)
            coarse[r, c] = np.uint8(min(total, np.uint64(255)))


def length_possible(
    sizes: np.ndarray, unbounded: np.ndarray, a: np.ndarray, b: np.ndarray, threshold: float
) -> np.ndarray:
    """The first test of :func:`neardup.lcs.possible_pairs` alone, without the sketches: bool
    per pair, False where the length ratio min / max of two texts (``sizes``, their units)
    is below ``threshold``, unless both are ``unbounded`` (a bit a row, as
    :func:`scanned_sketches` gives them), the two halves of the pairs on two threads. Every
    pair it rules out :func:`possible_by_blocks` rules out too. O(pairs).

    Example:
        >>> no = np.zeros(1, dtype=np.uint64)
        >>> length_possible(np.array([4, 5, 9]), no, np.array([0, 0]), np.array([1, 2]), 0.8)
        array([ True, False])
    """
    out = np.empty(len(a), dtype=bool)
    # The ends in their own integer dtype: int64 copies took 16 bytes a pair more.
    a, b, threshold = np.ascontiguousarray(a), np.ascontiguousarray(b), float(threshold)
    in_halves(
        lambda half, lo, hi: _length_kernel(
            sizes, unbounded, a[lo:hi], b[lo:hi], threshold, out[lo:hi]
        ),
        len(a),
        size=len(a) * LENGTH_WORK,
    )
    return out


@njit(cache=True, nogil=True)
def _length_kernel(sizes, unbounded, a, b, threshold, out):
    for p in range(a.shape[0]):
        x, y = a[p], b[p]
        low = min(np.int64(sizes[x]), np.int64(sizes[y]))
        top = max(np.int64(sizes[x]), np.int64(sizes[y]))
        both = holds(np.uint64(x), unbounded) and holds(np.uint64(y), unbounded)
        out[p] = top == 0 or both or low / top >= threshold


@njit(cache=True, nogil=True)
def _count_first_blocks(a, b, block_rows, per_block):
    """``per_block[i]``: the pairs whose smaller end lies in block ``i``. O(pairs)."""
    for p in range(a.shape[0]):
        per_block[min(a[p], b[p]) // block_rows] += 1


def first_block_order(
    a: np.ndarray, b: np.ndarray, block_rows: int, blocks: int
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(a[p], b[p])`` grouped by the block of ``block_rows`` rows of their smaller
    end, in input order within a group: ``(order, starts)``, the group of block ``i`` being
    ``order[starts[i]:starts[i + 1]]`` (int64 both). A counting sort, O(pairs + blocks).

    Example:
        >>> order, starts = first_block_order(np.array([5, 0, 4]), np.array([1, 3, 2]), 2, 3)
        >>> order.tolist(), starts.tolist()
        ([0, 1, 2], [0, 2, 3, 3])
    """
    order = np.empty(a.shape[0], dtype=np.int64)
    starts = np.zeros(blocks + 1, dtype=np.int64)
    _first_block_kernel(a, b, block_rows, order, starts)
    return order, starts


@njit(cache=True, nogil=True)
def _first_block_kernel(a, b, block_rows, order, starts):
    for p in range(a.shape[0]):
        starts[min(a[p], b[p]) // block_rows + 1] += 1
    for i in range(starts.shape[0] - 1):
        starts[i + 1] += starts[i]
    at = starts[:-1].copy()
    for p in range(a.shape[0]):
        i = min(a[p], b[p]) // block_rows
        order[at[i]] = p
        at[i] += 1


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
