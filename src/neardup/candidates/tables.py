"""Manku permutation tables: every pair of 64-bit fingerprints within Hamming distance k.

The tables are those of a :class:`~neardup.candidates.plan.TablePlan` (see
:mod:`neardup.candidates.plan` for the method and its pigeonhole guarantee). For each table, the
fingerprints are sorted by the table's prefix, and only fingerprints that share the prefix are
compared (XOR + popcount). Every pair within ``k`` shares the prefix of at least one table, so
the search is exact, not probabilistic. The prefix blocks are read where they are in the
fingerprint (no permuted copy): the tables that start with the same block share one
partition of the values by that block (a radix sort, :mod:`neardup.candidates.radix`), and
each bucket, small enough for the cache, is sorted by the table's other prefix blocks and
scanned while it is there. Sorted distinct values are partitioned by the leading block
already, and in the order of the table of the leading blocks.

Each pair is reported exactly once without a global de-duplication: table ``t`` keeps a pair
only if ``t`` is the *first* table on whose prefix the two fingerprints agree, i.e. it skips a
pair whose XOR is zero on the prefix mask of some earlier table ``t' < t``
(:func:`~neardup.candidates.plan.first_agreeing_mask`).

Skew (one prefix shared by a very large group) is handled by the recursive variant: the members
of a large group already agree on the table prefix, so only the bits on which they differ are
kept (gathered into a narrower word) and the same method is applied to them. The enclosing
tables' "skip if it agrees on an earlier prefix" masks travel down with it (gathered the same
way), so a pair is still kept by exactly one table at every level, and a group whose members
all agree on an earlier prefix is skipped whole.

Tables are independent: from :data:`_PARALLEL_MIN_VALUES` values on, the groups of tables
that share a first block run on all cores (compiled kernels release the GIL), each core with
two buffers of the input's size; the pairs are put together in table order, so the result does
not depend on the cores. Large arrays are allocated by numpy, which backs them with huge pages
where it can, and filled by the kernels.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from neardup.candidates.plan import (
    FINGERPRINT_BITS,
    TablePlan,
    cheapest_plan,
    check_hamming_k,
    estimated_cost,
    first_agreeing_mask,
    permute_bits,
    plan_tables,
)
from neardup.candidates.radix import (
    DIGIT_BITS,
    argsort64,
    digit_starts,
    digits,
    in_halves,
    sort_range,
    sorted_pairs,
)

__all__ = [
    "IdenticalBuckets",
    "collapse_identical",
    "distinct_hamming_pairs",
    "hamming_pairs",
    "popcount64",
]

_PARTITION_BITS = 16
"""Widest partition of a search's values by the leading bits of a table's first block:
65,536 buckets, their starts well within the cache."""

_PARALLEL_MIN_VALUES = 1 << 20
"""Searches over fewer values run their tables one after another: threads would not pay."""


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@intrinsic
def _ctpop(typingctx, x):
    # LLVM's ctpop compiles to one POPCNT instruction where the CPU has it.
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, args)

    return sig, codegen


@njit(cache=True, nogil=True)
def popcount64(x: np.uint64) -> int:
    """Number of set bits of a uint64: one POPCNT instruction inside numba kernels. O(1).

    Example:
        >>> popcount64(np.uint64(0b1011))
        3
    """
    return np.int64(_ctpop(np.uint64(x)))


@njit(cache=True, nogil=True)
def _scan_range(ordered, s, e, mask, hamming_k, excl, max_group, xa, xb, dist, m, large, nl):
    """Compare within every run of equal ``value & mask`` in ``ordered[s:e]``.

    Runs of at most ``max_group`` values are compared directly (XOR + popcount, skipping pairs
    of earlier tables, see `first_agreeing_mask`); their pairs go to ``xa/xb/dist[m:]`` while
    there is room, and are counted beyond it. A longer run is noted, as its start and end in
    ``large[nl]``, for the recursive search. Returns the new ``(m, nl)``.
    ``O(e - s + sum g^2)`` over runs ``g <= max_group``.
    """
    i = s
    while i < e - 1:
        if ((ordered[i] ^ ordered[i + 1]) & mask) != 0:
            i += 1  # the common case: a run of one
            continue
        prefix = ordered[i] & mask
        j = i + 2
        while j < e and (ordered[j] & mask) == prefix:
            j += 1
        if j - i > max_group:
            large[nl, 0] = i
            large[nl, 1] = j
            nl += 1
        else:
            for a in range(i, j - 1):
                x = ordered[a]
                for b in range(a + 1, j):
                    diff = x ^ ordered[b]
                    pc = popcount64(diff)
                    if pc <= hamming_k and first_agreeing_mask(diff, excl) < 0:
                        if m < xa.shape[0]:
                            xa[m] = x
                            xb[m] = ordered[b]
                            dist[m] = pc
                        m += 1
        i = j
    return m, nl


@njit(cache=True, nogil=True)
def _scan_all(ordered, mask, hamming_k, excl, max_group, xa, xb, dist, large):
    """:func:`_scan_range` over all of ``ordered``: returns ``(pairs, large runs)``."""
    return _scan_range(
        ordered, 0, ordered.shape[0], mask, hamming_k, excl, max_group, xa, xb, dist, 0, large, 0
    )


@njit(cache=True, nogil=True)
def _scan_buckets(
    part, scratch, starts, shifts, masks, mask, hamming_k, excl, max_group, xa, xb, dist, large
):
    """Sort each bucket ``part[starts[d] : starts[d + 1]]`` of a partition by the rest of a
    table's prefix (:func:`~neardup.candidates.radix.sort_range` by the digits ``shifts``,
    ``masks``; none: the buckets are its runs already) and scan its runs
    (:func:`_scan_range`) while it is in cache. Sorting sorted buckets keeps them as they
    are, so a second call gives what the first gave. Returns ``(pairs, large runs)``."""
    counts = np.zeros((1 << DIGIT_BITS) + 1, np.int64)
    m = 0
    nl = 0
    for d in range(starts.shape[0] - 1):
        s = starts[d]
        e = starts[d + 1]
        if e - s < 2:
            continue
        if shifts.shape[0]:
            sort_range(part, scratch, s, e, shifts, masks, counts)
        m, nl = _scan_range(
            part, s, e, mask, hamming_k, excl, max_group, xa, xb, dist, m, large, nl
        )
    return m, nl


@njit(cache=True, nogil=True)
def _merge_positions(sorted_values, sorted_needles, order, out):
    p = 0
    for q in range(sorted_needles.shape[0]):
        v = sorted_needles[q]
        while sorted_values[p] < v:
            p += 1
        out[order[q]] = p


def _locate(sorted_values: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Index of each needle in the strictly increasing ``sorted_values`` (needles must occur).

    Sorts the needles and merges, ``O(m + n)``: random binary searches into a large array
    would miss the cache at every level.
    """
    out = np.empty(needles.shape[0], np.int64)
    if needles.shape[0]:
        _merge_positions(sorted_values, *argsort64(needles), out)
    return out


@njit(cache=True, nogil=True)
def _count_runs(half, lo, hi, sorted_keys):
    runs = 0
    for p in range(lo, hi):
        if p == 0 or sorted_keys[p] != sorted_keys[p - 1]:
            runs += 1
    return runs


@njit(cache=True, nogil=True)
def _distinct_runs(half, lo, hi, sorted_keys, values, offsets, runs_before):
    """Fill the distinct values of sorted keys and the offsets of their runs that start in
    ``lo..hi-1``, after the ``runs_before`` runs of the keys before ``lo`` in the second half."""
    v = 0 if half == 0 else runs_before
    for p in range(lo, hi):
        if p == 0 or sorted_keys[p] != sorted_keys[p - 1]:
            values[v] = sorted_keys[p]
            offsets[v] = p
            v += 1
    offsets[offsets.shape[0] - 1] = sorted_keys.shape[0]


@njit(cache=True, nogil=True)
def _inverse_from_members(offsets, members, inverse):
    """``inverse[i]`` = the distinct value held by input ``i``, from the bucket lists."""
    for v in range(offsets.shape[0] - 1):
        for p in range(offsets[v], offsets[v + 1]):
            inverse[members[p]] = v


@njit(cache=True, nogil=True)
def _earliest_members(half, lo, hi, offsets, members, rank, among, out):
    """``out[v]`` for the buckets ``lo <= v < hi``: the member of bucket ``v`` of smallest
    ``rank`` among those ``among`` allows, -1 if none; members ascend within a bucket, so the
    strict ``<`` keeps the smallest index among equal ranks."""
    for v in range(lo, hi):
        best = -1
        for p in range(offsets[v], offsets[v + 1]):
            i = members[p]
            if among[i] and (best < 0 or rank[i] < rank[best]):
                best = i
        out[v] = best


@njit(cache=True, nogil=True)
def _expanded_size(half, lo, hi, offsets, a, b):
    """Index pairs of the halves ``lo <= h < hi`` (of 2) of :func:`_expand`'s two lists."""
    buckets = offsets.shape[0] - 1
    # A loop from 0 over a slice vectorises; one from a variable start ran 6 times slower.
    ends = offsets[buckets * lo // 2 : buckets * hi // 2 + 1]
    total = 0
    for v in range(ends.shape[0] - 1):
        c = ends[v + 1] - ends[v]
        total += c * (c - 1) // 2
    for p in range(a.shape[0] * lo // 2, a.shape[0] * hi // 2):
        total += (offsets[a[p] + 1] - offsets[a[p]]) * (offsets[b[p] + 1] - offsets[b[p]])
    return total


@njit(cache=True, nogil=True)
def _expand(half, lo, hi, offsets, members, a, b, dist, first_size, oi, oj, od):
    """Index pairs ``(i, j)``, ``i < j``, unordered, of the halves ``lo <= h < hi`` (of 2) of
    the buckets and of the value pairs: two copies of a bucket's value (distance 0), a copy of
    ``a[p]`` with one of ``b[p]``; from 0 in the first ``half``, else after ``first_size``."""
    buckets = offsets.shape[0] - 1
    w = 0 if half == 0 else first_size
    for v in range(buckets * lo // 2, buckets * hi // 2):
        for p in range(offsets[v], offsets[v + 1] - 1):
            for q in range(p + 1, offsets[v + 1]):  # members ascend within a bucket
                oi[w] = members[p]
                oj[w] = members[q]
                od[w] = 0
                w += 1
    for p in range(a.shape[0] * lo // 2, a.shape[0] * hi // 2):
        for x in range(offsets[a[p]], offsets[a[p] + 1]):
            for y in range(offsets[b[p]], offsets[b[p] + 1]):
                i, j = members[x], members[y]
                oi[w] = min(i, j)
                oj[w] = max(i, j)
                od[w] = dist[p]
                w += 1


# --------------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------------


def _free_bit_fields(free: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bit fields for `permute_bits` gathering the set bits of ``free`` into the low bits,
    order kept (PEXT)."""
    src, dst, wmask = [], [], []
    pos = 0
    out = 0
    while free >> pos:
        if (free >> pos) & 1:
            width = 0
            while (free >> (pos + width)) & 1:
                width += 1
            src.append(pos)
            dst.append(out)
            wmask.append((1 << width) - 1)
            out += width
            pos += width
        else:
            pos += 1
    return np.array(src, np.uint64), np.array(dst, np.uint64), np.array(wmask, np.uint64)


_EMPTY_U64 = np.empty(0, np.uint64)
_EMPTY_U8 = np.empty(0, np.uint8)


def _scanned(
    scan: Callable[..., tuple[int, int]], n: int, max_group: int, *args: object
) -> tuple[np.ndarray, ...]:
    """Run a scan kernel (:func:`_scan_all`, :func:`_scan_buckets`) over ``n`` values with
    ``args`` and room for as many pairs as values, or, if it found more, again with room for
    all of them. Returns ``(xa, xb, dist, large)``, ``large`` the ``(start, end)`` rows of the
    runs left to the recursive search."""
    large = np.empty((n // (max_group + 1) + 1, 2), np.int64)
    room = n
    while True:
        xa, xb, dist = (
            np.empty(room, np.uint64),
            np.empty(room, np.uint64),
            np.empty(room, np.uint8),
        )
        m, nl = scan(*args, xa, xb, dist, large)
        if m <= room:
            return xa[:m].copy(), xb[:m].copy(), dist[:m].copy(), large[:nl]
        room = m


def _compare_all(
    values: np.ndarray, hamming_k: int, excl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs of ``values`` within ``hamming_k`` not excluded by an earlier table."""
    n = values.shape[0]
    return _scanned(_scan_all, n, n, values, np.uint64(0), hamming_k, excl, n)[:3]


def _search_group(
    group: np.ndarray, hamming_k: int, excl: np.ndarray, max_group: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of one large prefix group, minus the pairs that agree on a mask in ``excl``, as
    value pairs with distances.

    The members agree on the table prefix, usually on more; only the bits where they differ
    (``free``) can contribute to a distance. Those bits are gathered into an ``f``-bit word
    (order-preserving, injective on the group) and searched with a fresh plan over ``f``
    bits and the same ``k``; ``f`` shrinks strictly at every level, so the recursion ends.
    The exclusion masks are gathered the same way and passed down, so each pair is still
    kept by exactly one table at every level.
    """
    size = group.shape[0]
    free = np.bitwise_or.reduce(group ^ group[0])
    if bool(np.any((excl & free) == 0)):
        # Every member agrees on an earlier table's whole prefix: all pairs belong there.
        return _EMPTY_U64, _EMPTY_U64, _EMPTY_U8
    f = int(free).bit_count()
    if f <= hamming_k:
        # Every pair is within k: the answer is all pairs, so direct comparison is optimal.
        return _compare_all(group, hamming_k, excl)
    sub_plan = cheapest_plan(size, hamming_k, f)
    direct_cost = size * (size - 1) / 2.0
    if estimated_cost(size, sub_plan.num_tables, sub_plan.prefix_bits) >= direct_cost:
        # The narrower tables would not split this group enough to pay for themselves.
        return _compare_all(group, hamming_k, excl)
    fields = _free_bit_fields(int(free))
    xa, xb, dist = _search_values(
        permute_bits(group, fields), hamming_k, sub_plan, max_group, permute_bits(excl, fields)
    )
    # Back from the narrow word: deposit the free bits, add the bits all members share.
    deposit = (fields[1], fields[0], fields[2])
    common = group[0] & ~free
    return permute_bits(xa, deposit) | common, permute_bits(xb, deposit) | common, dist


class _Buffers:
    """The arrays one worker of a search reuses from table to table: a partition of the
    values and the second buffer of its sorts, each the values' size."""

    def __init__(self, n: int) -> None:
        self.part = np.empty(n, np.uint64)
        self.scratch = np.empty(n, np.uint64)


def _first_block_pairs(
    values: np.ndarray,
    ascending: bool,
    plan: TablePlan,
    first: int,
    hamming_k: int,
    max_group: int,
    excl: np.ndarray,
    buffers: _Buffers,
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The pairs (as values) of the tables whose prefix starts with block ``first``, by table.

    The values are partitioned once by the leading bits of that block (up to
    :data:`_PARTITION_BITS` of them, a radix sort; ascending values, led by block 0, are so
    already); for each table, every bucket is then sorted by the rest of the table's prefix
    and its runs compared (:func:`_scan_buckets`), and the runs too large for that are
    searched recursively. Ascending values are in the order of the table of the leading
    blocks as they are."""
    start, width = plan.blocks[first]
    digit = min(width, _PARTITION_BITS)
    shift = start + width - digit
    leading = tuple(range(plan.prefix_blocks))
    tables = [
        t
        for t in range(plan.num_tables)
        # (a whole-width prefix is never shared by distinct values)
        if plan.tables[t][0] == first and plan.table_prefix_bits[t] < plan.bits
    ]
    part = buffers.part
    starts = np.empty((1 << digit) + 1, np.int64)
    if any(not ascending or plan.tables[t] != leading for t in tables):
        digit_starts(values, shift, digit, starts)
        part[:] = values
        if not (ascending and first == 0):
            counts = np.zeros((1 << DIGIT_BITS) + 1, np.int64)
            sort_range(part, buffers.scratch, 0, len(part), *digits([(shift, digit)]), counts)
    n = values.shape[0]
    found = {}
    for t in tables:
        table_excl = np.concatenate([plan.masks[:t], excl])
        scan = (plan.masks[t], hamming_k, table_excl, max_group)
        if ascending and plan.tables[t] == leading:
            ordered = values
            xa, xb, dist, large = _scanned(_scan_all, n, max_group, values, *scan)
        else:
            ordered = part
            rest = [(start, width - digit)] if width > digit else []
            rest += [plan.blocks[b] for b in plan.tables[t][1:]]
            xa, xb, dist, large = _scanned(
                _scan_buckets, n, max_group, part, buffers.scratch, starts, *digits(rest), *scan
            )
        if large.shape[0]:
            parts = [(xa, xb, dist)]
            for s, e in large.tolist():
                parts.append(_search_group(ordered[s:e].copy(), hamming_k, table_excl, max_group))
            xa, xb, dist = (np.concatenate([p[i] for p in parts]) for i in range(3))
        found[t] = (xa, xb, dist)
    return found


def _search_values(
    values: np.ndarray,
    hamming_k: int,
    plan: TablePlan,
    max_group: int,
    excl: np.ndarray,
    first_block: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair within ``hamming_k`` of the distinct ``values`` (< 2**plan.bits) that agrees
    on none of the masks ``excl``, once, as the two values and their distance (those of the
    tables that start with block ``first_block`` alone, when given).

    Table ``t`` skips pairs that agree on the prefix of a table ``t' < t`` (they are found by
    the first such table) or on a mask of ``excl`` (an enclosing level's earlier tables).
    The tables that start with the same block share one partition of the values
    (:func:`_first_block_pairs`); from :data:`_PARALLEL_MIN_VALUES` values on, the groups of
    such tables run on all cores, the most tables first.
    """
    n = values.shape[0]
    if n < 2:
        return _EMPTY_U64, _EMPTY_U64, _EMPTY_U8
    ascending = bool(np.all(values[1:] > values[:-1]))
    blocks = {table[0] for table in plan.tables} if first_block is None else {first_block}
    firsts = sorted(blocks, key=lambda b: -sum(t[0] == b for t in plan.tables))
    workers = min(len(firsts), os.cpu_count() or 1) if n >= _PARALLEL_MIN_VALUES else 1
    spare: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(workers):
        spare.put(_Buffers(n))

    def group(first: int) -> dict:
        buffers = spare.get()
        try:
            return _first_block_pairs(
                values, ascending, plan, first, hamming_k, max_group, excl, buffers
            )
        finally:
            spare.put(buffers)

    found: dict = {}
    if workers == 1:
        for first in firsts:
            found.update(group(first))
    else:
        with ThreadPoolExecutor(workers) as pool:
            for part in pool.map(group, firsts):
                found.update(part)
    if not found:
        return _EMPTY_U64, _EMPTY_U64, _EMPTY_U8
    tables = sorted(found)
    return tuple(np.concatenate([found[t][i] for t in tables]) for i in range(3))


def _search_sorted(
    values: np.ndarray, hamming_k: int, plan: TablePlan, max_group: int, first_block=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair within ``hamming_k`` of strictly increasing ``values`` (that the tables
    starting with ``first_block`` keep), once, as index pairs ``a < b`` (unordered list) with
    distances."""
    xa, xb, dist = _search_values(values, hamming_k, plan, max_group, _EMPTY_U64, first_block)
    m = xa.shape[0]
    ab = _locate(values, np.concatenate([xa, xb]))
    a, b = ab[:m], ab[m:]
    return np.minimum(a, b), np.maximum(a, b), dist


def _as_fingerprints(fingerprints: np.ndarray, name: str) -> np.ndarray:
    if not isinstance(fingerprints, np.ndarray):
        fingerprints = np.asarray(fingerprints, dtype=np.uint64)
    if fingerprints.dtype != np.uint64:
        raise ValueError(f"{name} must have dtype uint64, got {fingerprints.dtype}")
    if fingerprints.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {fingerprints.shape}")
    return np.ascontiguousarray(fingerprints)


def _check_search_args(hamming_k: int, plan: TablePlan | None, max_group: int) -> None:
    check_hamming_k(hamming_k)
    if isinstance(max_group, bool) or not isinstance(max_group, (int, np.integer)):
        raise ValueError(f"max_group must be an integer >= 2, got {max_group!r}")
    if max_group < 2:
        raise ValueError(f"max_group must be >= 2, got {max_group}")
    if plan is not None:
        if not isinstance(plan, TablePlan):
            raise ValueError(f"plan must be a TablePlan or None, got {type(plan).__name__}")
        if plan.hamming_k != hamming_k:
            raise ValueError(
                f"plan.hamming_k must equal hamming_k={hamming_k}, got {plan.hamming_k}"
            )
        if plan.bits != FINGERPRINT_BITS:
            raise ValueError(f"plan.bits must be {FINGERPRINT_BITS}, got {plan.bits}")


@dataclass(frozen=True)
class IdenticalBuckets:
    """The inputs holding each distinct fingerprint: bucket ``v`` holds ``values[v]``, at the
    input indices ``members[offsets[v] : offsets[v + 1]]`` (ascending).

    A search over distinct fingerprints (`distinct_hamming_pairs` on ``values``) and
    :meth:`expand` give every pair of inputs within ``k``, which is what `hamming_pairs`
    does; the buckets also give each input its value (:meth:`inverse`).

    Attributes:
        values: ``uint64`` distinct fingerprints, strictly increasing.
        offsets: ``int64``, ``len(values) + 1`` bucket boundaries into ``members``.
        members: ``int64`` input indices, bucket by bucket.

    Example:
        >>> b = IdenticalBuckets.of(np.array([7, 3, 7], dtype=np.uint64))
        >>> b.values.tolist(), b.offsets.tolist(), b.members.tolist()
        ([3, 7], [0, 1, 3], [1, 0, 2])
    """

    values: np.ndarray
    offsets: np.ndarray
    members: np.ndarray

    @classmethod
    def of(cls, fingerprints: np.ndarray) -> IdenticalBuckets:
        """The buckets of a 1-D ``uint64`` array: one stable radix sort (at most eight
        passes), its runs on two cores, ``O(N)`` time and memory. Example: see the class."""
        keys, members = argsort64(_as_fingerprints(fingerprints, "fingerprints"))
        runs = in_halves(_count_runs, keys.shape[0], keys)
        values, offsets = np.empty(sum(runs), np.uint64), np.empty(sum(runs) + 1, np.int64)
        in_halves(_distinct_runs, keys.shape[0], keys, values, offsets, runs[0])
        return cls(values, offsets, members)

    def inverse(self) -> np.ndarray:
        """``int64`` per input, the index of its value in ``values``. ``O(N)``.

        Example:
            >>> IdenticalBuckets.of(np.array([7, 3, 7], dtype=np.uint64)).inverse().tolist()
            [1, 0, 1]
        """
        inverse = np.empty(self.members.shape[0], np.int64)
        _inverse_from_members(self.offsets, self.members, inverse)
        return inverse

    def earliest(self, rank: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        """``int64`` per value: the input holding it of smallest ``rank`` (one integer per
        input), ties broken by the smaller index; only inputs where the bool ``among`` is true
        count (default: all), and a value that none of them holds gets -1. One pass over the
        buckets (two halves on two threads, :func:`in_halves`), no sort: ``O(N)``.

        Example:
            >>> b = IdenticalBuckets.of(np.array([7, 3, 7, 7], dtype=np.uint64))
            >>> b.earliest(np.array([2, 0, 1, 1])).tolist()
            [1, 2]
            >>> b.earliest(np.array([2, 0, 1, 1]), np.array([1, 0, 0, 1], bool)).tolist()
            [-1, 3]
        """
        rank = np.asarray(rank)
        n = self.members.shape[0]
        if rank.shape != (n,):
            raise ValueError(f"rank must have one value per input, shape ({n},), got {rank.shape}")
        if rank.size and rank.dtype.kind not in "iu":
            raise ValueError(f"rank must have an integer dtype, got {rank.dtype}")
        if among is None:
            among = np.ones(n, dtype=bool)
        elif np.shape(among) != (n,) or np.asarray(among).dtype != np.bool_:
            raise ValueError(
                f"among must be a bool array of shape ({n},), got {np.asarray(among).dtype} "
                f"of shape {np.shape(among)}"
            )
        out = np.empty(self.values.shape[0], np.int64)
        in_halves(_earliest_members, out.shape[0], self.offsets, self.members, rank, among, out)
        return out

    def expand(
        self, a: np.ndarray, b: np.ndarray, dist: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair of inputs ``(i, j)``, ``i < j``, sorted by ``(i, j)``, with its
        ``uint8`` distance: two copies of one value (distance 0), and a copy of ``values[a[p]]``
        with a copy of ``values[b[p]]`` (distance ``dist[p]``) for each pair of distinct
        values given, e.g. by `distinct_hamming_pairs`. ``O(N + P)`` for ``P`` output pairs,
        listed on two threads (two halves of the buckets and value pairs) and sorted by one
        radix sort.

        Example:
            >>> b = IdenticalBuckets.of(np.array([5, 5, 4], dtype=np.uint64))
            >>> a, z, d = np.array([0]), np.array([1]), np.array([1], np.uint8)
            >>> [x.tolist() for x in b.expand(a, z, d)]
            [[0, 0, 1], [1, 2, 2], [0, 1, 1]]
        """
        n = self.members.shape[0]
        if self.values.shape[0] == n:
            # No value repeats: each value pair is one index pair.
            i, j = self.members[a], self.members[b]
            i, j = np.minimum(i, j), np.maximum(i, j)
        else:
            # Each thread takes half of the buckets and half of the value pairs.
            work = self.values.shape[0] + a.shape[0]
            sizes = in_halves(_expanded_size, 2, self.offsets, a, b, size=work)
            total = sum(sizes)
            i, j = np.empty(total, np.int64), np.empty(total, np.int64)
            d = np.empty(total, np.uint8)
            args = (self.offsets, self.members, a, b, dist, sizes[0], i, j, d)
            in_halves(_expand, 2, *args, size=work)
            dist = d
        return sorted_pairs(i, j, dist, n)


def collapse_identical(fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct fingerprints, the position of each input among them, and their multiplicities.

    Same result as ``np.unique(fingerprints, return_inverse=True, return_counts=True)``,
    computed with a radix sort (several times faster for millions of values), through
    :class:`IdenticalBuckets`.

    Args:
        fingerprints: 1-D ``uint64`` array.

    Returns:
        ``values`` (``uint64``, strictly increasing), ``inverse`` (``int64``, with
        ``values[inverse] == fingerprints``) and ``counts`` (``int64``).

    Complexity: ``O(N)`` time (at most eight radix passes), ``O(N)`` memory.

    Example:
        >>> import numpy as np
        >>> v, inv, cnt = collapse_identical(np.array([7, 3, 7], dtype=np.uint64))
        >>> v.tolist(), inv.tolist(), cnt.tolist()
        ([3, 7], [1, 0, 1], [1, 2])
    """
    buckets = IdenticalBuckets.of(fingerprints)
    return buckets.values, buckets.inverse(), np.diff(buckets.offsets)


def distinct_hamming_pairs(
    values: np.ndarray,
    hamming_k: int,
    plan: TablePlan | None = None,
    max_group: int = 4096,
    *,
    first_block: int | None = None,
    ordered: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of *distinct* fingerprints within Hamming distance ``hamming_k``, exactly once.

    Permutation tables (see the module docstring): for each table, radix-sort the values by
    the table's prefix, and compare (XOR + popcount) the values of each run of equal
    prefixes. A pair is kept only by the first table on whose prefix it agrees.
    Runs longer than ``max_group`` are searched recursively over the bits their members do not
    share (or directly, if that is cheaper by the `plan_tables` cost model).

    Args:
        values: 1-D ``uint64`` array of distinct fingerprints (any order).
        hamming_k: largest distance reported, ``0..32`` bits.
        plan: tables to use; default `plan_tables(len(values), hamming_k)`.
        max_group: largest prefix group compared directly (``>= 2``); larger groups recurse.
        first_block: only the pairs of the tables whose prefix starts with this block of the
            plan, to search a group of tables at a time (over all groups, each pair once).
        ordered: False skips the sort by ``(a, b)``: the pairs come in no particular order.

    Returns:
        ``(a, b, dist)``: ``int64`` indices into ``values`` with ``a < b``, sorted by
        ``(a, b)`` (with ``ordered``), and ``uint8`` distances
        ``popcount(values[a] ^ values[b]) <= hamming_k``.

    Raises:
        ValueError: on a bad argument or if ``values`` has duplicates.

    Complexity: per table ``O(N)`` radix sort plus ``O(N * g)`` comparisons for mean prefix
    group size ``g`` (about ``N / 2**plan.prefix_bits`` for spread-out values), for
    ``plan.num_tables`` tables; extra memory ``O(N)`` (a few ``N``-length arrays) plus output.

    Example:
        >>> import numpy as np
        >>> v = np.array([0b1011, 0, 0b1000, 1 << 40], dtype=np.uint64)
        >>> a, b, d = distinct_hamming_pairs(v, 2)
        >>> list(zip(a.tolist(), b.tolist(), d.tolist()))
        [(0, 2, 2), (1, 2, 1), (1, 3, 1), (2, 3, 2)]
    """
    values = _as_fingerprints(values, "values")
    _check_search_args(hamming_k, plan, max_group)
    n = values.shape[0]
    if n >= 2 and bool(np.all(values[1:] > values[:-1])):
        order = None
        sorted_values = values
    else:
        sorted_values, order = argsort64(values)
        if n >= 2 and not bool(np.all(sorted_values[1:] > sorted_values[:-1])):
            dup = int(sorted_values[1:][sorted_values[1:] == sorted_values[:-1]][0])
            raise ValueError(
                f"values must be distinct, got {dup} more than once "
                "(use hamming_pairs, or collapse_identical first)"
            )
    if plan is None:
        plan = plan_tables(n, hamming_k)
    firsts = sorted({table[0] for table in plan.tables})
    if first_block is not None and first_block not in firsts:
        raise ValueError(f"first_block must be one of {firsts}, got {first_block}")
    a, b, dist = _search_sorted(sorted_values, int(hamming_k), plan, int(max_group), first_block)
    if order is not None:
        a, b = order[a], order[b]
        a, b = np.minimum(a, b), np.maximum(a, b)
    return sorted_pairs(a, b, dist, n) if ordered else (a, b, dist)


def hamming_pairs(
    fingerprints: np.ndarray,
    hamming_k: int,
    *,
    plan: TablePlan | None = None,
    max_group: int = 4096,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of fingerprints within Hamming distance ``hamming_k``, identical ones included.

    Identical values are collapsed first (`IdenticalBuckets`), the distinct values are
    searched as `distinct_hamming_pairs` does, and each pair of distinct values and each bucket
    of identical values is expanded back to all pairs of input indices
    (`IdenticalBuckets.expand`).

    Args:
        fingerprints: 1-D ``uint64`` array.
        hamming_k: largest distance reported, ``0..32`` bits.
        plan: tables to use; default `plan_tables(number of distinct values, hamming_k)`.
        max_group: largest prefix group compared directly (``>= 2``); larger groups recurse.

    Returns:
        ``(i, j, dist)``: ``int64`` input indices with ``i < j``, sorted by ``(i, j)``, and the
        ``uint8`` distance ``popcount(fingerprints[i] ^ fingerprints[j]) <= hamming_k``. Every
        such pair appears exactly once.

    Complexity: ``O(N)`` to collapse, the cost of `distinct_hamming_pairs` on the ``D`` distinct
    values, and ``O(N + P)`` to expand to the ``P`` output pairs and radix-sort them. The
    expansion is inherently output-sized: ``m`` copies of one value alone give ``m * (m - 1) / 2`` pairs (200,000
    copies: 2e10 pairs, 340 GB), so with heavy exact duplication prefer `collapse_identical` +
    `distinct_hamming_pairs` and keep the counts.

    Example:
        >>> import numpy as np
        >>> fp = np.array([5, 5, 4, 1 << 40], dtype=np.uint64)
        >>> i, j, d = hamming_pairs(fp, 1)
        >>> list(zip(i.tolist(), j.tolist(), d.tolist()))
        [(0, 1, 0), (0, 2, 1), (1, 2, 1)]
    """
    fingerprints = _as_fingerprints(fingerprints, "fingerprints")
    _check_search_args(hamming_k, plan, max_group)
    buckets = IdenticalBuckets.of(fingerprints)
    if plan is None:
        plan = plan_tables(buckets.values.shape[0], hamming_k)
    a, b, dist = _search_sorted(buckets.values, int(hamming_k), plan, int(max_group))
    return buckets.expand(a, b, dist)
