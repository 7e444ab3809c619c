"""The IDs of a run that went to disk in pass 1: an Arrow IPC file written part by part as
the documents are read (:class:`IdFile`), read back whole (:func:`read_ids`) or through a map
of the file whose pages the writers of the outputs drop as they go (:class:`MappedIds`).

Example:
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "ids.arrow"
    >>> write_ids(path, pa.chunked_array([["a", "b"], ["c"]], type=pa.large_string()))
    >>> read_ids(path).to_pylist(), MappedIds(path).slice(2, 1).to_pylist()
    (['a', 'b', 'c'], ['c'])
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pyarrow as pa

from neardup.io.atomic import atomic_write
from neardup.io.write import writing
from neardup.memory import drop_mapped_pages

__all__ = ["ID_BATCH_BYTES", "IdFile", "MappedIds", "read_ids", "take_ids", "write_ids"]

#: IDs are written to their file in record batches of about this many bytes: a batch per read
#: batch (2,000 IDs) made 50,000 chunks at 100M documents, each a separate take for the writers
#: and a page of metadata that a map of the file faults in with its neighbours.
ID_BATCH_BYTES = 16 << 20


class IdFile:
    """IDs (Arrow strings) written to an Arrow IPC file part by part, as they are read, in
    record batches of about :data:`ID_BATCH_BYTES`: :func:`read_ids` reads the parts back as
    one column. A full disk or an unwritable folder is one clear error (:func:`writing`).
    ``sink``: a file already open for writing (default: ``path`` is created). Memory: the IDs
    waiting for their batch (at most :data:`ID_BATCH_BYTES` and one part).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "ids.arrow"
        >>> ids = IdFile(path)
        >>> for part in (["a", "b"], ["c"]):
        ...     ids.write(pa.array(part, type=pa.large_string()))
        >>> ids.close()
        >>> read_ids(path).to_pylist(), read_ids(path).num_chunks
        (['a', 'b', 'c'], 1)
    """

    def __init__(self, path: Path, sink=None):
        self.path = path
        self._owns_sink = sink is None
        with writing(path):
            self._sink = pa.OSFile(str(path), "wb") if sink is None else sink
            self._writer = pa.ipc.new_file(self._sink, pa.schema([("id", pa.large_string())]))
        self._waiting: list[pa.Array] = []
        self._waiting_bytes = 0

    def write(self, ids: pa.Array | pa.ChunkedArray) -> None:
        """Append ``ids`` (``large_string``). O(len(ids))."""
        self._waiting.extend(ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids])
        self._waiting_bytes += ids.nbytes
        if self._waiting_bytes >= ID_BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._waiting:
            batch = pa.concat_arrays(self._waiting)
            self._waiting, self._waiting_bytes = [], 0
            with writing(self.path):
                self._writer.write_batch(pa.record_batch([batch], names=["id"]))

    def close(self) -> None:
        """Write the IDs still waiting and the file's footer, and close it."""
        self._flush()
        with writing(self.path):
            self._writer.close()
            if self._owns_sink:
                self._sink.close()


def write_ids(path: Path, ids: pa.ChunkedArray) -> None:
    """Store the IDs (Arrow ``large_string``) as :class:`IdFile` does, whole or none (an error
    leaves none, :func:`atomic_write`); a full disk is one clear error (:func:`writing`). O(n)."""
    with writing(path), atomic_write(path) as sink:
        ids_file = IdFile(path, sink)
        ids_file.write(ids)
        ids_file.close()


def read_ids(path: Path) -> pa.ChunkedArray:
    """The IDs of :func:`write_ids`'s file, read whole (not mapped: the file may be removed
    while they are in use). O(n)."""
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all().column("id")


class MappedIds:
    """The IDs of an Arrow IPC file (:class:`IdFile`, :func:`write_ids`) read through a
    read-only map of it, without a copy: :attr:`column` is the Arrow string column over the
    map. Every page of the file that a read touches stays in the process's resident memory
    until :meth:`release` drops them from it (``madvise(MADV_DONTNEED)``: the kernel's page
    cache keeps the data, a later read maps the page again), so writing the outputs of 100M
    documents holds the pages of one piece, not the 1.9 GB of their IDs. Memory: the pages
    read since the last release. Where ``madvise`` is missing the pages stay mapped (as many
    as a read whole would hold).

    The file may be removed while the map is in use (its pages stay readable until the map
    goes, with the last reference to the column).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "ids.arrow"
        >>> write_ids(path, pa.chunked_array([["a", "b", "c"]], type=pa.large_string()))
        >>> ids = MappedIds(path)
        >>> len(ids), ids.slice(1, 2).to_pylist()
        (3, ['b', 'c'])
        >>> ids.release()
        >>> ids.column.to_pylist()
        ['a', 'b', 'c']
    """

    #: Most IDs looked up between two releases by a caller that takes them at scattered rows:
    #: each may touch a page of offsets and one of characters, 8 kB, so at most 128 MB are held.
    TAKE_ROWS = 1 << 14

    def __init__(self, path: Path):
        with open(path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        reader = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(self._map)))
        self.column: pa.ChunkedArray = reader.read_all().column("id")
        # Opening reads every batch's metadata, and the map brings their neighbouring pages in
        # too (181 MB of a 191 MB file of 2,000-ID batches at 10M IDs; little in batches of
        # ID_BATCH_BYTES).
        self.release()

    def __len__(self) -> int:
        return len(self.column)

    def slice(self, start: int, length: int) -> pa.ChunkedArray:
        """The IDs of rows ``start..start+length-1``, a view of the map. O(chunks)."""
        return self.column.slice(start, length)

    def take(self, positions: np.ndarray) -> pa.Array:
        """The IDs at ``positions`` (any order), :data:`TAKE_ROWS` at a time, the pages read
        dropped after each (scattered rows touch a page each). O(positions + chunks × takes)."""
        positions = np.asarray(positions, dtype=np.int64)
        parts = []
        for start in range(0, max(positions.shape[0], 1), self.TAKE_ROWS):
            parts.append(take_ids(self.column, positions[start : start + self.TAKE_ROWS]))
            self.release()
        return pa.concat_arrays(parts)

    def to_numpy(self) -> np.ndarray:
        """Every ID, read whole into Python strings (for the HTML report, which takes them
        all). O(n)."""
        return self.column.to_numpy()

    def release(self) -> None:
        """Drop the pages read so far from the process's resident memory. O(mapped pages)."""
        drop_mapped_pages(self._map)


def take_ids(ids: pa.ChunkedArray | MappedIds, positions: np.ndarray) -> pa.Array:
    """``ids[positions]``, taken chunk by chunk: Arrow's ``take`` of a column of several
    chunks first joins them all, a copy of the whole column for every piece written; IDs
    read through a map are taken by :meth:`MappedIds.take`.
    O(positions × log(positions) + chunks).

    Example:
        >>> take_ids(pa.chunked_array([["a", "b"], ["c"]]), np.array([2, 0, 2])).to_pylist()
        ['c', 'a', 'c']
    """
    if isinstance(ids, MappedIds):
        return ids.take(positions)
    positions = np.asarray(positions, dtype=np.int64)
    if ids.num_chunks <= 1:
        return ids.combine_chunks().take(pa.array(positions))
    starts = np.cumsum([0, *(len(chunk) for chunk in ids.chunks)])
    chunk_of = np.searchsorted(starts, positions, side="right") - 1
    order = np.argsort(chunk_of, kind="stable")
    bounds = np.searchsorted(chunk_of[order], np.arange(ids.num_chunks + 1))
    parts = [
        ids.chunk(k).take(pa.array(positions[order[lo:hi]] - starts[k]))
        for k, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        if hi > lo
    ]
    if not parts:
        return pa.array([], type=ids.type)
    back = np.empty_like(order)
    back[order] = np.arange(order.shape[0])
    return pa.concat_arrays(parts).take(pa.array(back))
