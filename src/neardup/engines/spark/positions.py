"""The row of a document's position in a table of positions, in O(1) a position.

Spark's positions are ``input index << POS_BITS | row in the input``
(:data:`~neardup.engines.spark.rows.POS_BITS`): dense within each input, far apart across
inputs. Laid end to end (each input's rows after the rows of the inputs before it), they
number at most the documents read, and a rank directory over that range
(:class:`~neardup.engines.linked_rows.LinkedRows`, a quarter of a byte a position) gives the
row of any position of the table by two reads, where a binary search took about 20 cache
misses. Positions that are not laid out so (a DataFrame's own, or negative ones) are searched.

Example:
    >>> table = PositionRows(np.array([5, 9, 1 << 44 | 2, 1 << 44 | 3]), shift=44)
    >>> table.rows(np.array([1 << 44 | 3, 5, 9])).tolist()
    [3, 0, 1]
"""

from __future__ import annotations

import numpy as np

from neardup.engines.linked_rows import LinkedRows

__all__ = ["PositionRows"]

SPARSE_FACTOR = 8
"""Most positions laid end to end for each position of the table (plus a million): beyond,
the table's positions are searched instead (a directory of that range would outweigh them)."""


class PositionRows:
    """The rows ``0..n-1`` of the sorted, distinct positions ``positions`` (int64), looked up
    by :meth:`rows` in O(1) a position when they are dense within their high parts
    (``position >> shift``, non-negative and small), else by binary search.

    Memory: a quarter of a byte per position of the range they are laid end to end in, and
    8 B per distinct high part (or the positions themselves, 8 B each, when searched).
    """

    def __init__(self, positions: np.ndarray, shift: int):
        positions = np.asarray(positions, dtype=np.int64)
        self.shift = int(shift)
        self._sorted: np.ndarray | None = None
        self._directory: LinkedRows | None = None
        n = positions.shape[0]
        parts = positions >> self.shift if n else positions
        low = positions & ((1 << self.shift) - 1)
        # The high parts bound the extents' array before it is made, then the extents the range.
        dense = n and positions[0] >= 0 and int(parts[-1]) < SPARSE_FACTOR * n + (1 << 20)
        if dense:
            extent = np.zeros(int(parts[-1]) + 1, dtype=np.int64)
            np.maximum.at(extent, parts, low + 1)
            dense = int(extent.sum()) <= SPARSE_FACTOR * n + (1 << 20)
        if not dense:
            self._sorted = positions
            return
        self._base = np.concatenate([[0], np.cumsum(extent)[:-1]])
        self._directory = LinkedRows.of_rows(int(extent.sum()), self._base[parts] + low)

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The row (int64) of each of ``positions``, every one a position of the table (any
        other gives an undefined row). O(positions)."""
        positions = np.asarray(positions, dtype=np.int64)
        if self._directory is None:
            return np.searchsorted(self._sorted, positions)
        laid = self._base[positions >> self.shift] + (positions & ((1 << self.shift) - 1))
        return self._directory.places(laid).astype(np.int64, copy=False)
