"""Sorted (key, position) rows: the layout shared by the SimHash permutation tables and the
MinHash band tables of the index.

A *table* is two ``uint32`` arrays of equal length, ``keys`` and ``rows`` (positions), sorted by
(key, position), so that the positions holding one key are one run found by binary search.
Several tables of equal length are stacked as ``(T, n)`` arrays. Recent additions are kept
apart (a delta) and merged in with :func:`merge_rows`, which is linear.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.radix import sorted_distinct

__all__ = ["LiveRows", "MAX_POSITION", "merge_rows", "sort_rows"]

#: The largest position a table row holds (rows are uint32).
MAX_POSITION = (1 << 32) - 1


def sort_rows(keys: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each table of ``keys`` (``uint32[T, n]``) with the ``positions`` (``uint32[n]``,
    the same for every table) by (key, position). Returns ``(keys, rows)``, both
    ``uint32[T, n]``. O(T · n log n): one sort of packed 64-bit values per table.

    Example:
        >>> k, r = sort_rows(np.array([[5, 1, 5]], np.uint32), np.array([9, 8, 7], np.uint32))
        >>> k.tolist(), r.tolist()
        ([[1, 5, 5]], [[8, 7, 9]])
    """
    num_tables, n = keys.shape
    out_keys = np.empty((num_tables, n), np.uint32)
    out_rows = np.empty((num_tables, n), np.uint32)
    pos64 = np.asarray(positions).astype(np.uint64)
    for t in range(num_tables):
        combined = keys[t].astype(np.uint64) << np.uint64(32)
        combined |= pos64
        combined.sort()
        out_keys[t] = (combined >> np.uint64(32)).astype(np.uint32)
        out_rows[t] = (combined & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return out_keys, out_rows


@njit(cache=True)
def merge_rows(keys, rows, dkeys, drows, alive, check_main, out_keys, out_rows):
    """Per table, merge the sorted main rows with the sorted (live) delta rows by (key,
    position). Main rows are copied in runs between the delta rows' insertion points (found by
    binary search); with ``check_main`` the dead ones are dropped on the way, which costs one
    random ``alive`` look-up per row, so it is skipped when the main rows hold no dead one.
    Returns the number of rows written per table."""
    n = keys.shape[1]
    nd = dkeys.shape[1]
    w = 0
    for t in range(keys.shape[0]):
        i = 0
        w = 0
        for j in range(nd + 1):
            stop = n
            if j < nd:
                dk = dkeys[t, j]
                dr = drows[t, j]
                lo = i
                hi = n
                while lo < hi:
                    mid = (lo + hi) >> 1
                    km = keys[t, mid]
                    if km < dk or (km == dk and rows[t, mid] < dr):
                        lo = mid + 1
                    else:
                        hi = mid
                stop = lo
            if check_main:
                for x in range(i, stop):
                    p = rows[t, x]
                    if alive[p]:
                        out_keys[t, w] = keys[t, x]
                        out_rows[t, w] = p
                        w += 1
            else:
                for x in range(i, stop):
                    out_keys[t, w] = keys[t, x]
                    out_rows[t, w] = rows[t, x]
                    w += 1
            i = stop
            if j < nd:
                out_keys[t, w] = dk
                out_rows[t, w] = dr
                w += 1
    return w


class LiveRows:
    """Which positions of a set of sorted tables are alive: the bookkeeping that the SimHash
    permutation tables and the MinHash band tables share.

    Attributes (set by the subclass): ``size`` (one past the largest position seen),
    ``alive`` (bool per position, longer than ``size``), ``live`` (alive positions),
    ``delta[:delta_len]`` (the positions added since the last merge, in order),
    ``_main_max`` (the largest position in the merged tables) and ``_main_dead`` (dead rows
    still in the merged tables, dropped at the next merge).
    """

    size: int
    alive: np.ndarray
    live: int
    delta: np.ndarray
    delta_len: int
    _main_max: int
    _main_dead: int

    @property
    def delta_limit(self) -> int:
        """Delta size that triggers a merge: 1/16 of the live positions, in 4096..65536 (a
        merge rewrites every table: O(T · n))."""
        return int(min(max(4096, self.live // 16), 65536))

    def _check_new(self, positions: np.ndarray) -> int:
        """Validate positions to add (increasing, above every position seen, at most
        :data:`MAX_POSITION`) and return the new ``size``. O(len(positions))."""
        if positions.min() < self.size or np.any(np.diff(positions) <= 0):
            raise ValueError(
                f"new positions must increase and exceed every position seen (>= {self.size})"
            )
        if positions.max() > MAX_POSITION:
            raise ValueError(f"positions must be at most {MAX_POSITION}, got {positions.max()}")
        return int(positions[-1]) + 1

    def _append_delta(self, positions: np.ndarray) -> None:
        """Append new positions to ``delta``, grown by doubling. Amortised O(len(positions))."""
        need = self.delta_len + positions.shape[0]
        if need > self.delta.shape[0]:
            grown = np.zeros(max(need, 2 * self.delta.shape[0]), np.uint32)
            grown[: self.delta_len] = self.delta[: self.delta_len]
            self.delta = grown
        self.delta[self.delta_len : need] = positions
        self.delta_len = need

    def discard(self, positions: np.ndarray) -> int:
        """Mark positions dead (ignored by probes, dropped at the next merge). Returns how many
        were alive. O(len(positions))."""
        positions = np.asarray(positions, np.int64)
        positions = sorted_distinct(
            positions[(positions >= 0) & (positions < self.size)], in_place=True
        )
        was = self.alive[positions]
        count = int(np.count_nonzero(was))
        # Delta positions all exceed the main tables' largest, so this counts main rows.
        self._main_dead += int(np.count_nonzero(was & (positions <= self._main_max)))
        self.alive[positions] = False
        self.live -= count
        return count
