"""SimHash permutation tables in memory, probed one fingerprint at a time: the online form of
Manku et al. 2007 (:mod:`neardup.candidates.tables` is the batch form;
:mod:`neardup.candidates.plan` is the source of the plans, the table keys and the first-table
rule).

:class:`PermutationTables` keeps, per table of a :func:`neardup.candidates.plan.plan_tables`
plan, the sorted keys (``uint32``: the top 32 bits of the fingerprint permuted so that the
table's prefix blocks come first, i.e. the prefix, or its top 32 bits if wider) and the
positions in that order (``uint32``), plus the fingerprint of every position (``uint64``) and an
alive flag. A probe binary-searches each table for the query's key, checks the fingerprints
found with XOR + popcount and keeps a match only in the first table whose whole prefix it shares
(so no match is reported twice). Recent adds go to a small unsorted **delta**, scanned linearly,
which is merged into the sorted tables when it grows past ``delta_limit`` (4,096 to 65,536
entries, 1/16 of the index). The plan is chosen for the number of live fingerprints; when that
number has doubled (or fallen to a quarter) since the plan was made and :func:`plan_tables` now
prefers another plan, the tables are rebuilt with the new plan at the next merge. Memory:
``8 × tables + 9`` bytes per fingerprint (89 bytes for ``hamming_k = 3`` at 10M fingerprints:
10 tables), plus the delta.

:func:`close_pairs` finds the pairs inside a batch (the documents of one add, or the members of
a group after a removal).

Example:
    >>> fps = np.array([0, 7, 15], np.uint64)
    >>> t = PermutationTables(3, positions=np.arange(3), fingerprints=fps)
    >>> sorted(t.probe(np.array([1], np.uint64))[1].tolist())
    [0, 1, 2]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.candidates.plan import (
    MAX_HAMMING_K,
    TablePlan,
    first_agreeing_mask,
    permute_bits_into,
    plan_tables,
    table_fields,
)
from neardup.candidates.tables import distinct_hamming_pairs, popcount64
from neardup.index.errors import check_int
from neardup.index.sorted_rows import MAX_POSITION, LiveRows, merge_rows, sort_rows

__all__ = ["PermutationTables", "close_pairs"]

_KEY_BITS = 32
"""A table key holds the top 32 bits of the table's permuted fingerprint."""
_SMALL_BATCH = 2048
"""Up to this many distinct values, pairs inside a batch are found by direct comparison."""


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _emit(out_a, out_b, out_d, m, a, b, d):
    """Write match number ``m`` as ``(a, b, d)`` if it fits in the buffers; returns ``m + 1``.
    Counting on past the buffers' end tells the caller what size to retry with."""
    if m < out_a.shape[0]:
        out_a[m] = a
        out_b[m] = b
        out_d[m] = d
    return m + 1


@njit(cache=True)
def _keys_kernel(values, src, dst, wmask, shift, out):
    """``out[t, i]``: the key of ``values[i]`` in table ``t``: the value permuted by the
    table's bit fields (the prefix blocks first), shifted right by ``shift[t]``."""
    permuted = np.empty(values.shape[0], np.uint64)
    for t in range(src.shape[0]):
        permute_bits_into(values, src[t], dst[t], wmask[t], permuted)
        for i in range(values.shape[0]):
            out[t, i] = permuted[i] >> shift[t]


@njit(cache=True)
def _probe_kernel(
    queries,
    src,
    dst,
    wmask,
    shift,
    max_k,
    keys,
    rows,
    masks,
    fps,
    alive,
    delta,
    delta_len,
    out_q,
    out_p,
    out_d,
):
    """Every (query, position, distance) with distance <= max_k: tables, then the delta.

    ``src, dst, wmask, shift`` are the tables' key fields (:func:`_key_fields`). Writes the first
    ``len(out_q)`` matches into the buffers and returns how many there are in all (the caller
    retries with larger buffers if that is more). Output arrays are never reassigned inside
    the loops, which keeps reference counting out of them.
    """
    num_tables = keys.shape[0]
    n = keys.shape[1]
    qkeys = np.empty((num_tables, queries.shape[0]), np.uint32)
    _keys_kernel(queries, src, dst, wmask, shift, qkeys)
    k = np.uint64(max_k)
    m = 0
    for qi in range(queries.shape[0]):
        q = queries[qi]
        for t in range(num_tables):
            key = qkeys[t, qi]
            i = np.searchsorted(keys[t], key)
            while i < n and keys[t, i] == key:
                p = rows[t, i]
                i += 1
                if not alive[p]:
                    continue
                x = fps[p] ^ q
                d = popcount64(x)
                if d > k:
                    continue
                # Kept only by the first table whose whole prefix the pair shares (a key of
                # 32 bits may be shorter than the prefix, so check this table's too).
                if first_agreeing_mask(x, masks[: t + 1]) != t:
                    continue
                m = _emit(out_q, out_p, out_d, m, qi, p, d)
        for j in range(delta_len):
            p = delta[j]
            if not alive[p]:
                continue
            d = popcount64(fps[p] ^ q)
            if d <= k:
                m = _emit(out_q, out_p, out_d, m, qi, p, d)
    return m


@njit(cache=True)
def _close_pairs_direct(values, max_k, out_a, out_b, out_d):
    """Pairs a < b of ``values`` within ``max_k`` bits, by direct comparison (O(n^2)); writes
    what fits into the buffers and returns the total count (as `_probe_kernel`)."""
    n = values.shape[0]
    k = np.uint64(max_k)
    m = 0
    for a in range(n):
        va = values[a]
        for b in range(a + 1, n):
            d = popcount64(va ^ values[b])
            if d <= k:
                m = _emit(out_a, out_b, out_d, m, a, b, d)
    return m


def _buffers(cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint8)


def close_pairs(values: np.ndarray, hamming_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``a < b`` of distinct ``uint64`` values within ``hamming_k`` bits, with distances.

    Direct comparison for up to 2,048 values (no planning overhead), the permutation tables
    (:func:`neardup.candidates.tables.distinct_hamming_pairs`) above.
    Complexity: O(n²) below the cut-off, about O(n log n) above it.

    Example:
        >>> a, b, d = close_pairs(np.array([0, 1, 7], dtype=np.uint64), 1)
        >>> a.tolist(), b.tolist(), d.tolist()
        ([0], [1], [1])
    """
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if values.shape[0] > _SMALL_BATCH:
        return distinct_hamming_pairs(values, int(hamming_k))
    a, b, d = _buffers(1024)
    m = _close_pairs_direct(values, np.int64(hamming_k), a, b, d)
    if m > a.shape[0]:
        a, b, d = _buffers(m)
        _close_pairs_direct(values, np.int64(hamming_k), a, b, d)
    return a[:m].copy(), b[:m].copy(), d[:m].copy()


# --------------------------------------------------------------------------------------------
# In-memory tables
# --------------------------------------------------------------------------------------------


def _key_fields(plan: TablePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per table (one row each), the bit fields of
    :func:`neardup.candidates.plan.table_fields`, which move the table's prefix blocks to the
    top, and the right shift that leaves the top ``min(prefix bits, 32)`` bits: the key."""
    fields = [table_fields(plan, t) for t in range(plan.num_tables)]
    src, dst, wmask = (np.stack([f[i] for f in fields]) for i in range(3))
    shift = np.array(
        [plan.bits - min(width, _KEY_BITS) for width in plan.table_prefix_bits], np.uint64
    )
    return src, dst, wmask, shift


class PermutationTables(LiveRows):
    """Manku permutation tables in memory, for probing one fingerprint at a time (online form).

    Fingerprints are addressed by *position* (a non-negative integer below 2**32, e.g. an
    insertion number). Per table of ``plan``: ``keys`` (``uint32[n]``, the table's prefix blocks,
    their top 32 bits if wider, sorted) and ``rows`` (``uint32[n]``, the positions in that
    order). Recent :meth:`add` calls go to an unsorted delta, scanned linearly and merged into
    the sorted arrays when it exceeds :attr:`delta_limit`. :meth:`discard` marks positions dead;
    they are dropped at the next merge.

    Args:
        hamming_k: largest distance the tables are exact for, ``0..32`` bits.
        plan: tables to use; default ``plan_tables(n, hamming_k)`` for the fingerprints given.
        positions, fingerprints: initial contents (``uint64`` fingerprints, distinct positions).

    Not thread-safe: :class:`NearDupIndex` serialises its calls (probes share result buffers).

    Complexity: building is ``O(T · n log n)`` (one sort per table); a probe costs
    ``O(T · (log n + g) + delta)`` for ``T`` tables and mean prefix group ``g``; memory is
    ``8·T + 9`` bytes per position.

    Example:
        >>> fps = np.array([0, 7, 15], np.uint64)
        >>> t = PermutationTables(3, positions=np.arange(3), fingerprints=fps)
        >>> q, p, d = t.probe(np.array([1], np.uint64))
        >>> sorted(zip(p.tolist(), d.tolist()))
        [(0, 1), (1, 2), (2, 3)]
    """

    def __init__(
        self,
        hamming_k: int,
        plan: TablePlan | None = None,
        *,
        positions: np.ndarray | None = None,
        fingerprints: np.ndarray | None = None,
    ) -> None:
        check_int("hamming_k", hamming_k, 0, MAX_HAMMING_K)
        self.hamming_k = int(hamming_k)
        positions = np.zeros(0, np.int64) if positions is None else np.asarray(positions)
        values = (
            np.zeros(0, np.uint64) if fingerprints is None else np.asarray(fingerprints, np.uint64)
        )
        if positions.shape != values.shape or positions.ndim != 1:
            raise ValueError(
                f"positions and fingerprints must be 1-D of equal length, got shapes "
                f"{positions.shape} and {values.shape}"
            )
        if positions.size and (positions.min() < 0 or positions.max() > MAX_POSITION):
            raise ValueError(
                f"positions must be in 0..{MAX_POSITION}, got {positions.min()}..{positions.max()}"
            )
        size = int(positions.max()) + 1 if positions.size else 0
        self.fps = np.zeros(max(size, 16), np.uint64)
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.fps[positions] = values
        self.alive[positions] = True
        self.size = size
        self.live = int(self.alive.sum())
        if self.live != positions.shape[0]:
            raise ValueError("positions must be distinct")
        self.delta = np.zeros(1024, np.uint32)
        self.delta_len = 0
        self._set_plan(plan if plan is not None else plan_tables(self.live, self.hamming_k))
        self.planned_n = self.live
        self.keys, self.rows = sort_rows(self.keys_of(values), positions.astype(np.uint32))
        self._main_max = int(positions.max()) if positions.size else -1
        self._main_dead = 0
        self.merges = 0
        self.replans = 0
        self._buffers = _buffers(4096)

    @classmethod
    def from_arrays(
        cls,
        hamming_k: int,
        plan: TablePlan,
        keys: np.ndarray,
        rows: np.ndarray,
        fps: np.ndarray,
        alive: np.ndarray,
        planned_n: int,
        main_dead: int | None = None,
    ) -> PermutationTables:
        """Tables from already sorted arrays (e.g. memory-mapped from a cache), holding every
        position below ``len(fps)``; ``main_dead`` is the number of their rows whose position
        is no longer alive (None: count them, O(n)). O(size) to copy ``fps`` and ``alive``
        into growable buffers.

        Example:
            >>> fps = np.arange(4, dtype=np.uint64)
            >>> t = PermutationTables(2, positions=np.arange(4), fingerprints=fps)
            >>> u = PermutationTables.from_arrays(2, t.plan, t.keys, t.rows, fps, t.alive[:4], 4)
            >>> len(u.probe(np.array([0], np.uint64))[1])
            4
        """
        self = cls.__new__(cls)
        self.hamming_k = int(hamming_k)
        self._set_plan(plan)
        if keys.shape != rows.shape or keys.ndim != 2 or keys.shape[0] != plan.num_tables:
            raise ValueError(
                f"keys and rows must both have shape ({plan.num_tables}, n), "
                f"got {keys.shape} and {rows.shape}"
            )
        if fps.shape != alive.shape:
            raise ValueError(f"fps and alive must match, got {fps.shape} and {alive.shape}")
        self.keys = np.asarray(keys)
        self.rows = np.asarray(rows)
        size = fps.shape[0]
        self.fps = np.zeros(max(size, 16), np.uint64)
        self.fps[:size] = fps
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.alive[:size] = alive
        self.size = size
        self.live = int(np.count_nonzero(self.alive[:size]))
        self.delta = np.zeros(1024, np.uint32)
        self.delta_len = 0
        self.planned_n = int(planned_n)
        self._main_max = size - 1
        if main_dead is None:
            main_dead = int(self.rows.shape[1] - np.count_nonzero(self.alive[self.rows[0]]))
        self._main_dead = int(main_dead)
        self.merges = 0
        self.replans = 0
        self._buffers = _buffers(4096)
        return self

    def _set_plan(self, plan: TablePlan) -> None:
        if plan.hamming_k != self.hamming_k or plan.bits != 64:
            raise ValueError(
                f"plan must be for hamming_k={self.hamming_k} over 64 bits, "
                f"got hamming_k={plan.hamming_k}, bits={plan.bits}"
            )
        self.plan = plan
        self._fields = _key_fields(plan)
        self._masks = plan.masks

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays (tables, fingerprints, alive flags, delta buffer)."""
        return int(
            self.keys.nbytes
            + self.rows.nbytes
            + self.fps.nbytes
            + self.alive.nbytes
            + self.delta.nbytes
        )

    def layout(self) -> dict[str, int]:
        """The plan the tables use and the live count it was made for (for statistics).

        Example:
            >>> PermutationTables(3).layout()
            {'tables': 4, 'blocks': 4, 'prefix_blocks': 1, 'prefix_bits': 16, 'planned_for': 0}
        """
        plan = self.plan
        return {
            "tables": plan.num_tables,
            "blocks": len(plan.blocks),
            "prefix_blocks": plan.prefix_blocks,
            "prefix_bits": plan.prefix_bits,
            "planned_for": self.planned_n,
        }

    def keys_of(self, values: np.ndarray) -> np.ndarray:
        """The ``uint32[T, n]`` keys of ``uint64`` fingerprints in every table of the plan (the
        top 32 bits of the fingerprint permuted with the table's prefix blocks first). O(T · n).

        Example:
            >>> t = PermutationTables(0)  # one table: the whole fingerprint is the prefix
            >>> t.keys_of(np.array([0xAB << 32 | 5], np.uint64)).tolist()
            [[171]]
        """
        keys = np.empty((self.plan.num_tables, values.shape[0]), np.uint32)
        _keys_kernel(np.ascontiguousarray(values, np.uint64), *self._fields, keys)
        return keys

    def _ensure_capacity(self, size: int) -> None:
        if size <= self.fps.shape[0]:
            return
        cap = max(size, int(self.fps.shape[0] * 1.5) + 16)
        fps = np.zeros(cap, np.uint64)
        fps[: self.size] = self.fps[: self.size]
        alive = np.zeros(cap, np.bool_)
        alive[: self.size] = self.alive[: self.size]
        self.fps, self.alive = fps, alive

    def add(self, positions: np.ndarray, fingerprints: np.ndarray) -> None:
        """Insert new positions (each above every position seen so far) into the delta;
        merges when the delta is full. Amortised O(T · n / delta_limit) per position.

        Example:
            >>> t = PermutationTables(1)
            >>> t.add(np.array([1, 2]), np.array([4, 5], np.uint64))
            >>> t.delta_len, sorted(t.probe(np.array([4], np.uint64))[1].tolist())
            (2, [1, 2])
        """
        positions = np.asarray(positions, np.int64)
        values = np.asarray(fingerprints, np.uint64)
        if positions.shape != values.shape:
            raise ValueError("positions and fingerprints must have equal length")
        if positions.size == 0:
            return
        top = self._check_new(positions)
        self._ensure_capacity(top)
        self.fps[positions] = values
        self.alive[positions] = True
        self.size = top
        self.live += positions.shape[0]
        self._append_delta(positions)
        if self.delta_len > self.delta_limit:
            self.merge()

    def merge(self, force_plan: TablePlan | None = None) -> None:
        """Merge the delta into the sorted tables (O(T · n)), re-planning when the number of
        live fingerprints has moved far from the one the plan was made for. The caller waits
        for it (about 0.05 s at 1M fingerprints and 2.5 s at 10M with 10 tables, measured on 2
        loaded cores); at most every ``delta_limit`` adds.

        Example:
            >>> t = PermutationTables(1)
            >>> t.add(np.array([1, 2]), np.array([4, 5], np.uint64))
            >>> t.merge()
            >>> t.delta_len, t.keys.shape
            (0, (2, 2))
        """
        desired = force_plan
        if desired is None and (
            self.live >= 2 * max(self.planned_n, 1024) or 4 * self.live <= self.planned_n
        ):
            candidate = plan_tables(self.live, self.hamming_k)
            if (candidate.blocks, candidate.prefix_blocks) != (
                self.plan.blocks,
                self.plan.prefix_blocks,
            ):
                desired = candidate
            else:
                self.planned_n = self.live
        if desired is not None:
            self.rebuild(desired)
            return
        delta = np.sort(self.delta[: self.delta_len])
        delta = delta[self.alive[delta]]
        dkeys, drows = sort_rows(self.keys_of(self.fps[delta]), delta)
        n_out = self.rows.shape[1] - self._main_dead + delta.shape[0]
        out_keys = np.empty((self.plan.num_tables, n_out), np.uint32)
        out_rows = np.empty((self.plan.num_tables, n_out), np.uint32)
        written = merge_rows(
            self.keys, self.rows, dkeys, drows, self.alive, self._main_dead > 0, out_keys, out_rows
        )
        if written != n_out:
            raise RuntimeError(f"merge wrote {written} rows per table, expected {n_out}")
        self.keys, self.rows = out_keys, out_rows
        if delta.size:
            self._main_max = max(self._main_max, int(delta[-1]))
        self._main_dead = 0
        self.delta_len = 0
        self.merges += 1

    def rebuild(self, plan: TablePlan | None = None) -> None:
        """Rebuild every table from the live positions, with ``plan`` (default: the plan
        :func:`plan_tables` picks for the live count). O(T · n log n).

        Example:
            >>> fps = np.arange(3, dtype=np.uint64)
            >>> t = PermutationTables(3, positions=np.arange(3), fingerprints=fps)
            >>> t.rebuild(plan_tables(3, 3, prefix_blocks=2))
            >>> t.plan.num_tables, len(t.probe(np.array([0], np.uint64))[1])
            (10, 3)
        """
        plan = plan if plan is not None else plan_tables(self.live, self.hamming_k)
        self._set_plan(plan)
        positions = np.flatnonzero(self.alive[: self.size]).astype(np.uint32)
        self.keys, self.rows = sort_rows(self.keys_of(self.fps[positions]), positions)
        self._main_max = int(positions[-1]) if positions.size else -1
        self._main_dead = 0
        self.delta_len = 0
        self.planned_n = self.live
        self.replans += 1

    def probe(
        self, queries: np.ndarray, hamming_k: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every live position within ``hamming_k`` bits of each query, each once.

        Args:
            queries: ``uint64`` fingerprints.
            hamming_k: ``0..self.hamming_k``; default ``self.hamming_k``.

        Returns:
            ``(query_index int64, position int64, distance uint8)``, unordered.

        Complexity: ``O(T · (log n + g) + delta)`` per query (see the class docstring).

        Example:
            >>> fps = np.array([0, 3, 7], np.uint64)
            >>> t = PermutationTables(2, positions=np.arange(3), fingerprints=fps)
            >>> q, p, d = t.probe(np.array([1, 15], np.uint64), hamming_k=1)
            >>> sorted(zip(q.tolist(), p.tolist(), d.tolist()))
            [(0, 0, 1), (0, 1, 1), (1, 2, 1)]
        """
        k = self.hamming_k if hamming_k is None else hamming_k
        check_int("hamming_k", k, 0, self.hamming_k)
        queries = np.ascontiguousarray(queries, dtype=np.uint64).reshape(-1)
        buffers = self._buffers
        while True:
            m = _probe_kernel(
                queries,
                *self._fields,
                np.int64(k),
                self.keys,
                self.rows,
                self._masks,
                self.fps,
                self.alive,
                self.delta,
                np.int64(self.delta_len),
                *buffers,
            )
            if m <= buffers[0].shape[0]:
                return buffers[0][:m].copy(), buffers[1][:m].copy(), buffers[2][:m].copy()
            buffers = _buffers(m)
