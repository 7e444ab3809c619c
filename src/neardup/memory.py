"""The process's memory: heap pages of freed arrays given back to the system, the pages of
mapped columns dropped between reads (:func:`drop_mapped_pages`, :func:`take_mapped`), and the
width of arrays of document indices (:func:`index_dtype`).

Example:
    >>> import numpy as np
    >>> parts = [np.ones(8192) for _ in range(100)]   # small blocks: served from the heap
    >>> del parts
    >>> return_freed_memory()                          # their pages go back (glibc)
"""

from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np
import pyarrow as pa

__all__ = [
    "drop_mapped_pages",
    "index_dtype",
    "joined_parts",
    "resident_bytes",
    "return_freed_memory",
    "take_mapped",
]

#: Collections of fewer documents than this hold document indices (and counts of documents) in
#: 4 bytes (the grouping's arrays are one or two a document, 0.4 GB each at 50M in 8 bytes);
#: from it on, in 8. 2**31 - 1: every index (< n), n itself (a block's end searched in the
#: indices' dtype) and an index + 1 (positions counted from 1) fit in int32. The consumers of
#: such arrays are audited for the two 4-byte hazards (docs/memory.md, "The grouping in 4-byte
#: indices"): NumPy searches an int32 array for values of another type by copying the whole
#: array each call, so searches pass values of the array's own type; and int32 times a Python
#: int stays int32 under NumPy 2, so byte offsets and packed pairs are computed in 64 bits.
#: 0 turns the 4-byte path off (tests compare both widths: the same decisions, byte for byte).
INDEX32_BELOW = 2**31 - 1


def index_dtype(n: int) -> type:
    """The dtype of arrays of indices of (or counts of at most) ``n`` documents: ``np.int32``
    when ``n`` < :data:`INDEX32_BELOW` (2**31 - 1), else ``np.int64``. O(1).

    Example:
        >>> index_dtype(10**6).__name__, index_dtype(2**31).__name__
        ('int32', 'int64')
    """
    return np.int32 if n < INDEX32_BELOW else np.int64


def return_freed_memory() -> None:
    """Give the heap pages of freed arrays back to the system (glibc ``malloc_trim``; a no-op
    elsewhere).

    glibc serves large blocks by ``mmap`` but raises that threshold as they are freed (up to
    32 MiB), so temporaries of a few MiB come from the heap, and once freed their pages stay
    with the process: measured at 1M documents, 0.5 GB more resident from the dedup's candidate
    stage on, and 30-75 MB after an index verified tens of thousands of candidates. A trim at
    stage boundaries (and after large index probes) returns them, while the signing stage keeps
    reusing its heap (a fixed threshold instead cost 12 % of a run in page faults).
    O(heap size): about 0.5 ms at 1M documents.

    Arrow's memory pool (the IDs, the JSON reader's blocks) keeps the pages it freed likewise
    until asked: 0.03 GB at 1M short documents whose IDs went to disk, 0.3 GB at 10M. They go
    back too.
    """
    pa.default_memory_pool().release_unused()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def drop_mapped_pages(values: np.ndarray | mmap.mmap) -> None:
    """Drop the pages that reads of ``values`` brought into this process's resident memory,
    when ``values`` is a file map or (a view of) an array over one (``np.memmap``); nothing
    for an array in memory. A column read whole at one stage and rarely after (the unit counts
    of 100M documents, 0.4 GB) then stays out of the later stages' peak:
    ``madvise(MADV_DONTNEED)`` unmaps the pages, the kernel's page cache keeps the data and a
    later read maps them again. O(mapped pages).

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/v.bin"
        >>> np.arange(4, dtype=np.int32).tofile(path)
        >>> values = np.memmap(path, dtype=np.int32, mode="r")
        >>> int(values.sum())
        6
        >>> drop_mapped_pages(values)
        >>> values[1:].tolist()
        [1, 2, 3]
    """
    mapped = values
    while isinstance(mapped, np.ndarray):  # a view's base, up to the map of a np.memmap
        mapped = getattr(mapped, "_mmap", None) or mapped.base
    if isinstance(mapped, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        mapped.madvise(mmap.MADV_DONTNEED)


def map_pages(values: np.ndarray) -> None:
    """Bring every page of ``values`` into this process's resident memory, a read of one
    value a page: a column of a file map (``np.memmap``) that a stage is about to read whole
    then counts in the resident memory by which the stage's room is measured, instead of
    arriving beside buffers sized without it. O(pages).

    Example:
        >>> map_pages(np.arange(3))
    """
    flat = np.asarray(values).reshape(-1)
    if flat.shape[0]:
        step = max(mmap.PAGESIZE // flat.itemsize, 1)
        int(np.add.reduce(flat[::step], dtype=np.int64))


#: Values of a mapped column that :func:`take_mapped` reads between two drops of its pages
#: (16M rows: 64 MB of 4-byte values at most resident).
TAKE_MAPPED_ROWS = 1 << 24


def take_mapped(values: np.ndarray, rows: np.ndarray, span: int = TAKE_MAPPED_ROWS) -> np.ndarray:
    """``values[rows]`` for ascending ``rows``, read ``span`` rows of ``values`` at a time with
    their pages dropped after each (:func:`drop_mapped_pages`): a mapped column is never held
    whole however many of its rows are taken. O(rows + len(values) / span).

    Example:
        >>> take_mapped(np.arange(10) * 10, np.array([1, 4, 9]), span=4).tolist()
        [10, 40, 90]
    """
    rows = np.asarray(rows)
    cuts = np.searchsorted(rows, np.arange(span, values.shape[0], span, dtype=rows.dtype))
    out = np.empty(rows.shape[0], dtype=values.dtype)
    for start, end in zip([0, *cuts.tolist()], [*cuts.tolist(), rows.shape[0]]):
        out[start:end] = values[rows[start:end]]
        drop_mapped_pages(values)
    return out


def resident_bytes() -> int | None:
    """This process's resident memory in bytes (Linux ``/proc/self/statm``), or None where it
    cannot be read. O(1)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def joined_parts(parts: list[np.ndarray], dtype, empty_shape: tuple[int, ...]) -> np.ndarray:
    """The arrays ``parts`` concatenated (zeros of ``empty_shape`` and ``dtype`` when there are
    none); the list is emptied and the heap pages of the freed parts given back
    (:func:`return_freed_memory`): parts of a few kB are blocks of the heap, whose pages would
    stay with the process beside the whole. O(total size).

    Example:
        >>> parts = [np.arange(2), np.arange(3)]
        >>> joined_parts(parts, np.int64, (0,)).tolist(), parts
        ([0, 1, 0, 1, 2], [])
    """
    if not parts:
        return np.zeros(empty_shape, dtype=dtype)
    whole = np.concatenate(parts) if len(parts) > 1 else parts[0]
    parts.clear()
    return_freed_memory()
    return whole
