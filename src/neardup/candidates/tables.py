"""Manku permutation tables: every pair of 64-bit fingerprints within Hamming distance k.

The tables are those of a :class:`~neardup.candidates.plan.TablePlan` (see
:mod:`neardup.candidates.plan` for the method and its pigeonhole guarantee). For each table, the
fingerprints are permuted so that the table's prefix blocks lead, radix-sorted by that prefix,
and only fingerprints that share the prefix are compared (XOR + popcount). Every pair within
``k`` shares the prefix of at least one table, so the search is exact, not probabilistic.

Each pair is reported exactly once without a global de-duplication: table ``t`` keeps a pair
only if ``t`` is the *first* table on whose prefix the two fingerprints agree, i.e. it skips a
pair whose XOR is zero on the prefix mask of some earlier table ``t' < t``
(:func:`~neardup.candidates.plan.first_agreeing_mask`).

Skew (one prefix shared by a very large group) is handled by the recursive variant: the members
of a large group already agree on the table prefix, so only the bits on which they differ are
kept (gathered into a narrower word) and the same block-permutation method is applied to them.
The enclosing tables' "skip if it agrees on an earlier prefix" masks travel down with it
(gathered the same way), so a pair is still kept by exactly one table at every level, and a
group whose members all agree on an earlier prefix is skipped whole.

Tables are processed one after another, so extra memory is a few arrays of the input size
(about 40 bytes per distinct fingerprint), not one copy per table.
"""

from __future__ import annotations

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
    permute_bits_into,
    plan_tables,
    table_fields,
)

__all__ = [
    "collapse_identical",
    "distinct_hamming_pairs",
    "hamming_pairs",
    "popcount64",
]

_RADIX_DIGIT_BITS = 11
"""Largest digit of the prefix radix sort: 2048 counters stay in L1 cache."""


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


@njit(cache=True)
def popcount64(x: np.uint64) -> int:
    """Number of set bits of a uint64: one POPCNT instruction inside numba kernels. O(1).

    Example:
        >>> popcount64(np.uint64(0b1011))
        3
    """
    return np.int64(_ctpop(np.uint64(x)))


@njit(cache=True)
def _radix_sort_bits(keys, scratch, lo_bit, hi_bit, max_digit_bits):
    """Stable LSD radix sort of uint64 ``keys`` by bits ``lo_bit .. hi_bit - 1`` only.

    Sorts in place, using ``scratch`` (same length) as the second buffer; returns whichever
    of the two holds the result. ``O(n * passes)``, ``passes = ceil((hi_bit - lo_bit) /
    max_digit_bits)``; passes whose digit is the same for every key are skipped.
    """
    n = keys.shape[0]
    src = keys
    if n < 2 or hi_bit <= lo_bit:
        return src
    dst = scratch
    nbits = hi_bit - lo_bit
    passes = (nbits + max_digit_bits - 1) // max_digit_bits
    digit_bits = (nbits + passes - 1) // passes
    counts = np.zeros((1 << digit_bits) + 1, np.int64)
    shift = lo_bit
    while shift < hi_bit:
        width = min(digit_bits, hi_bit - shift)
        mask = np.uint64((1 << width) - 1)
        s = np.uint64(shift)
        nb = 1 << width
        counts[: nb + 1] = 0
        for i in range(n):
            counts[np.int64((src[i] >> s) & mask) + 1] += 1
        if counts[np.int64((src[0] >> s) & mask) + 1] != n:
            for b in range(nb):
                counts[b + 1] += counts[b]
            for i in range(n):
                d = np.int64((src[i] >> s) & mask)
                p = counts[d]
                counts[d] = p + 1
                dst[p] = src[i]
            src, dst = dst, src
        shift += width
    return src


@njit(cache=True)
def _count_within(values, s, e, hamming_k, excl):
    """Number of pairs in ``values[s:e]`` within ``hamming_k`` not excluded by an earlier
    table (`first_agreeing_mask`): exactly what `_emit_within` writes.

    Kept free of stores: this tight loop is where nearly all comparisons happen.
    """
    c = 0
    for i in range(s, e - 1):
        x = values[i]
        for j in range(i + 1, e):
            d = x ^ values[j]
            if popcount64(d) <= hamming_k and first_agreeing_mask(d, excl) < 0:
                c += 1
    return c


@njit(cache=True)
def _emit_within(values, s, e, hamming_k, excl, xa, xb, dist, m):
    """Write the pairs of ``values[s:e]`` within ``hamming_k`` not excluded by an earlier table
    (`first_agreeing_mask`) at ``xa/xb/dist[m:]``; returns the new ``m``."""
    for i in range(s, e - 1):
        x = values[i]
        for j in range(i + 1, e):
            d = x ^ values[j]
            pc = popcount64(d)
            if pc <= hamming_k and first_agreeing_mask(d, excl) < 0:
                xa[m] = x
                xb[m] = values[j]
                dist[m] = pc
                m += 1
    return m


@njit(cache=True)
def _run_end(keys, i, shift):
    """End (exclusive) of the run of equal ``key >> shift`` starting at ``i``."""
    n = keys.shape[0]
    prefix = keys[i] >> shift
    e = i + 1
    while e < n and (keys[e] >> shift) == prefix:
        e += 1
    return e


@njit(cache=True)
def _scan_table(keys, shift, hamming_k, excl, max_group):
    """Compare within every run of equal ``key >> shift`` of the sorted ``keys``.

    Runs of at most ``max_group`` keys are compared directly (XOR + popcount, skipping pairs
    of earlier tables, see `first_agreeing_mask`); longer runs are only reported, as
    ``(start, end)``, for the recursive search. Returns ``(xa, xb, dist, large_starts,
    large_ends)``; ``O(n + sum g^2)`` over runs ``g <= max_group``.

    Two passes over the runs: the first counts the pairs (and marks the runs that have any),
    the second fills exactly-sized arrays; no array is reallocated inside a loop, which keeps
    numba's reference counting out of the per-run path.
    """
    n = keys.shape[0]
    sh = np.uint64(shift)
    has_pairs = np.zeros(n, np.bool_)
    total = 0
    nl = 0
    i = 0
    while i < n:
        e = _run_end(keys, i, sh)
        if e - i > max_group:
            nl += 1
        elif e - i > 1:
            c = _count_within(keys, i, e, hamming_k, excl)
            if c > 0:
                total += c
                has_pairs[i] = True
        i = e
    xa = np.empty(total, np.uint64)
    xb = np.empty(total, np.uint64)
    dist = np.empty(total, np.uint8)
    large_s = np.empty(nl, np.int64)
    large_e = np.empty(nl, np.int64)
    m = 0
    nl = 0
    i = 0
    while i < n:
        e = _run_end(keys, i, sh)
        if e - i > max_group:
            large_s[nl] = i
            large_e[nl] = e
            nl += 1
        elif has_pairs[i]:
            m = _emit_within(keys, i, e, hamming_k, excl, xa, xb, dist, m)
        i = e
    return xa, xb, dist, large_s, large_e


@njit(cache=True)
def _compare_all(values, hamming_k, excl):
    """All pairs of ``values`` within ``hamming_k`` not excluded by an earlier table."""
    n = values.shape[0]
    c = _count_within(values, 0, n, hamming_k, excl)
    xa = np.empty(c, np.uint64)
    xb = np.empty(c, np.uint64)
    dist = np.empty(c, np.uint8)
    _emit_within(values, 0, n, hamming_k, excl, xa, xb, dist, 0)
    return xa, xb, dist


@njit(cache=True)
def _locate(sorted_values, needles):
    """Index of each needle in the strictly increasing ``sorted_values`` (needles must occur).

    Sorts the needles and merges, ``O(m + n)``: random binary searches into a large array
    would miss the cache at every level. Needles repeat a lot (a value in many pairs), which
    rules out a plain quicksort.
    """
    m = needles.shape[0]
    out = np.empty(m, np.int64)
    if m == 0:
        return out
    if m < 65536:
        order = np.argsort(needles, kind="mergesort")
    else:
        order = _radix_argsort64(needles)[1]
    p = 0
    for q in range(m):
        v = needles[order[q]]
        while sorted_values[p] < v:
            p += 1
        out[order[q]] = p
    return out


@njit(cache=True)
def _sort_pairs(a, b, dist, n):
    """Sort pairs by (a, b): counting sort on ``a`` in ``0..n-1``, then each ``a`` group by ``b``.

    ``O(m + n + sum g log g)`` over groups ``g`` of equal ``a``.
    """
    m = a.shape[0]
    off = np.zeros(n + 1, np.int64)
    for i in range(m):
        off[a[i] + 1] += 1
    for v in range(n):
        off[v + 1] += off[v]
    pos = off[:-1].copy()
    packed = np.empty(m, np.int64)
    for i in range(m):
        p = pos[a[i]]
        pos[a[i]] = p + 1
        packed[p] = (b[i] << 8) | np.int64(dist[i])
    oa = np.empty(m, np.int64)
    ob = np.empty(m, np.int64)
    od = np.empty(m, np.uint8)
    for v in range(n):
        s = off[v]
        e = off[v + 1]
        if e - s > 1:
            packed[s:e].sort()
        for p in range(s, e):
            oa[p] = v
            ob[p] = packed[p] >> 8
            od[p] = packed[p] & 255
    return oa, ob, od


@njit(cache=True)
def _radix_argsort64(keys):
    """Stable LSD radix argsort of uint64 keys (16-bit digits). Returns (sorted keys, order)."""
    n = keys.shape[0]
    src_k = keys  # only read; the first pass that moves anything writes to dst_k
    src_i = np.arange(n)
    if n < 2:
        return src_k.copy(), src_i
    dst_k = np.empty(n, np.uint64)
    dst_i = np.empty(n, np.int64)
    moved = False
    counts = np.zeros((4, 65537), np.int64)
    mask = np.uint64(0xFFFF)
    # One read pass builds all four histograms.
    for i in range(n):
        v = keys[i]
        counts[0, np.int64(v & mask) + 1] += 1
        counts[1, np.int64((v >> np.uint64(16)) & mask) + 1] += 1
        counts[2, np.int64((v >> np.uint64(32)) & mask) + 1] += 1
        counts[3, np.int64(v >> np.uint64(48)) + 1] += 1
    for d in range(4):
        s = np.uint64(16 * d)
        if counts[d, np.int64((keys[0] >> s) & mask) + 1] == n:
            continue  # every key has the same digit here
        for b in range(65536):
            counts[d, b + 1] += counts[d, b]
        for i in range(n):
            digit = np.int64((src_k[i] >> s) & mask)
            p = counts[d, digit]
            counts[d, digit] = p + 1
            dst_k[p] = src_k[i]
            dst_i[p] = src_i[i]
        if not moved:
            # Never write into the caller's array: the second buffer becomes fresh memory.
            src_k = np.empty(n, np.uint64)
            moved = True
        src_k, dst_k = dst_k, src_k
        src_i, dst_i = dst_i, src_i
    if not moved:
        return keys.copy(), src_i
    return src_k, src_i


@njit(cache=True)
def _distinct_runs(sorted_keys):
    """Distinct values of sorted keys and the offsets of their runs (length distinct + 1)."""
    n = sorted_keys.shape[0]
    nd = 0
    for p in range(n):
        if p == 0 or sorted_keys[p] != sorted_keys[p - 1]:
            nd += 1
    values = np.empty(nd, np.uint64)
    offsets = np.empty(nd + 1, np.int64)
    v = 0
    for p in range(n):
        if p == 0 or sorted_keys[p] != sorted_keys[p - 1]:
            values[v] = sorted_keys[p]
            offsets[v] = p
            v += 1
    offsets[nd] = n
    return values, offsets


@njit(cache=True)
def _inverse_from_members(offsets, members):
    """``inverse[i]`` = the distinct value held by input ``i``, from the bucket lists."""
    inverse = np.empty(members.shape[0], np.int64)
    for v in range(offsets.shape[0] - 1):
        for p in range(offsets[v], offsets[v + 1]):
            inverse[members[p]] = v
    return inverse


@njit(cache=True)
def _symmetric_adjacency(a, b, dist, n):
    """CSR neighbour lists (both directions) of the pairs (a, b) over nodes 0..n-1."""
    m = a.shape[0]
    off = np.zeros(n + 1, np.int64)
    for i in range(m):
        off[a[i] + 1] += 1
        off[b[i] + 1] += 1
    for v in range(n):
        off[v + 1] += off[v]
    pos = off[:-1].copy()
    nbr = np.empty(2 * m, np.int64)
    nd = np.empty(2 * m, np.uint8)
    for i in range(m):
        p = pos[a[i]]
        pos[a[i]] = p + 1
        nbr[p] = b[i]
        nd[p] = dist[i]
        p = pos[b[i]]
        pos[b[i]] = p + 1
        nbr[p] = a[i]
        nd[p] = dist[i]
    return off, nbr, nd


@njit(cache=True)
def _first_greater(members, s, e, i):
    """First position p in the sorted ``members[s:e]`` with ``members[p] > i``."""
    while s < e:
        mid = (s + e) >> 1
        if members[mid] <= i:
            s = mid + 1
        else:
            e = mid
    return s


@njit(cache=True)
def _row_lengths(bucket_off, members, active, nbr_off, nbr):
    """For each input index i, how many partners j > i it has; and the largest candidate
    list ``P(v)`` (own bucket plus neighbouring buckets) over distinct values ``v``."""
    n = members.shape[0]
    row_len = np.zeros(n + 1, np.int64)
    largest = 0
    for v in range(bucket_off.shape[0] - 1):
        if not active[v]:
            continue
        size = bucket_off[v + 1] - bucket_off[v]
        for q in range(nbr_off[v], nbr_off[v + 1]):
            u = nbr[q]
            size += bucket_off[u + 1] - bucket_off[u]
        largest = max(largest, size)
        for p in range(bucket_off[v], bucket_off[v + 1]):
            i = members[p]
            c = bucket_off[v + 1] - p - 1  # later copies of the same value
            for q in range(nbr_off[v], nbr_off[v + 1]):
                u = nbr[q]
                first = _first_greater(members, bucket_off[u], bucket_off[u + 1], i)
                c += bucket_off[u + 1] - first
            row_len[i + 1] = c
    return row_len, largest


@njit(cache=True)
def _expand(bucket_off, members, active, nbr_off, nbr, nbr_dist, row_off, largest):
    """Pairs of input indices (i, j), i < j, from buckets of identical values and the pairs
    of distinct values, in (i, j) order; row ``i`` goes to ``row_off[i]:row_off[i + 1]``.

    ``members[bucket_off[v]:bucket_off[v + 1]]`` are the input indices holding distinct value
    ``v``, ascending. All copies of ``v`` share one candidate list ``P(v)`` (own bucket at
    distance 0 plus the buckets of the neighbouring values), so it is gathered and sorted
    once per distinct value; each copy ``i`` then takes the part of it above ``i``.
    ``O(N + output + sum over v of |P(v)| log |P(v)|)``.
    """
    total = row_off[-1]
    oi = np.empty(total, np.int64)
    oj = np.empty(total, np.int64)
    od = np.empty(total, np.uint8)
    cand = np.empty(largest, np.int64)
    for v in range(bucket_off.shape[0] - 1):
        if not active[v]:
            continue
        m = 0
        for p in range(bucket_off[v], bucket_off[v + 1]):
            cand[m] = members[p] << 8
            m += 1
        for q in range(nbr_off[v], nbr_off[v + 1]):
            u = nbr[q]
            du = np.int64(nbr_dist[q])
            for p in range(bucket_off[u], bucket_off[u + 1]):
                cand[m] = (members[p] << 8) | du
                m += 1
        if nbr_off[v + 1] > nbr_off[v]:
            cand[:m].sort()  # (j << 8 | dist): sorts by j, each j appears once
        for p in range(bucket_off[v], bucket_off[v + 1]):
            i = members[p]
            w = row_off[i]
            start = m - (row_off[i + 1] - w)  # the row is the tail of P(v) above i
            for r in range(start, m):
                oi[w] = i
                oj[w] = cand[r] >> 8
                od[w] = cand[r] & 255
                w += 1
    return oi, oj, od


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


def _search_group(
    group: np.ndarray, hamming_k: int, excl: np.ndarray, max_group: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of one large prefix group (values in its table's bit order), minus the pairs
    that agree on a mask in ``excl`` (same coordinates), as value pairs with distances.

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


def _search_sorted(
    values: np.ndarray, hamming_k: int, plan: TablePlan, max_group: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair within ``hamming_k`` of strictly increasing ``values``, once, as index pairs
    ``a < b`` (unordered list) with distances."""
    xa, xb, dist = _search_values(values, hamming_k, plan, max_group, _EMPTY_U64)
    m = xa.shape[0]
    ab = _locate(values, np.concatenate([xa, xb]))
    a, b = ab[:m], ab[m:]
    return np.minimum(a, b), np.maximum(a, b), dist


def _search_values(
    values: np.ndarray,
    hamming_k: int,
    plan: TablePlan,
    max_group: int,
    excl: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair within ``hamming_k`` of the distinct ``values`` (< 2**plan.bits) that agrees
    on none of the masks ``excl``, once, as the two values and their distance.

    Table ``t`` skips pairs that agree on the prefix of a table ``t' < t`` (they are found by
    the first such table) or on a mask of ``excl`` (an enclosing level's earlier tables).
    """
    n = values.shape[0]
    bits = plan.bits
    all_masks = plan.masks
    prefix_bits = plan.table_prefix_bits
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    ds: list[np.ndarray] = []
    # Two buffers reused by every table: the permuted keys and the radix sort's scratch.
    keys = np.empty(n, np.uint64)
    scratch = np.empty(n, np.uint64)
    for t in range(plan.num_tables if n >= 2 else 0):
        if prefix_bits[t] == bits:
            continue  # distinct values never share a whole-width prefix
        fields = table_fields(plan, t)
        table_excl = permute_bits(np.concatenate([all_masks[:t], excl]), fields)
        permute_bits_into(values, *fields, keys)
        shift = bits - prefix_bits[t]
        ordered = _radix_sort_bits(keys, scratch, shift, bits, _RADIX_DIGIT_BITS)
        xa, xb, dist, large_s, large_e = _scan_table(
            ordered, shift, hamming_k, table_excl, max_group
        )
        parts = [(xa, xb, dist)]
        for s, e in zip(large_s.tolist(), large_e.tolist()):
            parts.append(_search_group(ordered[s:e], hamming_k, table_excl, max_group))
        if len(parts) > 1:
            xa = np.concatenate([p[0] for p in parts])
            xb = np.concatenate([p[1] for p in parts])
            dist = np.concatenate([p[2] for p in parts])
        # Back to the original bit order: the inverse moves each field back.
        inverse_fields = (fields[1], fields[0], fields[2])
        xs.append(permute_bits(xa, inverse_fields))
        ys.append(permute_bits(xb, inverse_fields))
        ds.append(dist)
    del keys, scratch
    if len(xs) == 1:
        return xs[0], ys[0], ds[0]
    xa = np.concatenate(xs) if xs else _EMPTY_U64
    xb = np.concatenate(ys) if ys else _EMPTY_U64
    dist = np.concatenate(ds) if ds else _EMPTY_U8
    return xa, xb, dist


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


def collapse_identical(fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct fingerprints, the position of each input among them, and their multiplicities.

    Same result as ``np.unique(fingerprints, return_inverse=True, return_counts=True)``,
    computed with a radix sort (several times faster for millions of values).

    Args:
        fingerprints: 1-D ``uint64`` array.

    Returns:
        ``values`` (``uint64``, strictly increasing), ``inverse`` (``int64``, with
        ``values[inverse] == fingerprints``) and ``counts`` (``int64``).

    Complexity: ``O(N)`` time (four radix passes), ``O(N)`` memory.

    Example:
        >>> import numpy as np
        >>> v, inv, cnt = collapse_identical(np.array([7, 3, 7], dtype=np.uint64))
        >>> v.tolist(), inv.tolist(), cnt.tolist()
        ([3, 7], [1, 0, 1], [1, 2])
    """
    values, offsets, members = _collapse(_as_fingerprints(fingerprints, "fingerprints"))
    return values, _inverse_from_members(offsets, members), np.diff(offsets)


def _collapse(fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct values, bucket offsets and ``members``: the input indices holding each value,
    bucket by bucket, ascending within a bucket (the radix sort is stable)."""
    sorted_keys, members = _radix_argsort64(fingerprints)
    values, offsets = _distinct_runs(sorted_keys)
    return values, offsets, members


def distinct_hamming_pairs(
    values: np.ndarray,
    hamming_k: int,
    plan: TablePlan | None = None,
    max_group: int = 4096,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of *distinct* fingerprints within Hamming distance ``hamming_k``, exactly once.

    Permutation tables (see the module docstring): for each table, permute the blocks so its
    prefix leads, radix-sort by the prefix, and compare (XOR + popcount) the values of each
    run of equal prefixes. A pair is kept only by the first table on whose prefix it agrees.
    Runs longer than ``max_group`` are searched recursively over the bits their members do not
    share (or directly, if that is cheaper by the `plan_tables` cost model).

    Args:
        values: 1-D ``uint64`` array of distinct fingerprints (any order).
        hamming_k: largest distance reported, ``0..32`` bits.
        plan: tables to use; default `plan_tables(len(values), hamming_k)`.
        max_group: largest prefix group compared directly (``>= 2``); larger groups recurse.

    Returns:
        ``(a, b, dist)``: ``int64`` indices into ``values`` with ``a < b``, sorted by
        ``(a, b)``, and ``uint8`` distances ``popcount(values[a] ^ values[b]) <= hamming_k``.

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
        sorted_values, order = _radix_argsort64(values)
        if n >= 2 and not bool(np.all(sorted_values[1:] > sorted_values[:-1])):
            dup = int(sorted_values[1:][sorted_values[1:] == sorted_values[:-1]][0])
            raise ValueError(
                f"values must be distinct, got {dup} more than once "
                "(use hamming_pairs, or collapse_identical first)"
            )
    if plan is None:
        plan = plan_tables(n, hamming_k)
    a, b, dist = _search_sorted(sorted_values, int(hamming_k), plan, int(max_group))
    if order is not None:
        a, b = order[a], order[b]
        a, b = np.minimum(a, b), np.maximum(a, b)
    return _sort_pairs(a, b, dist, n)


def hamming_pairs(
    fingerprints: np.ndarray,
    hamming_k: int,
    *,
    plan: TablePlan | None = None,
    max_group: int = 4096,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of fingerprints within Hamming distance ``hamming_k``, identical ones included.

    Identical values are collapsed first (`collapse_identical`), the distinct values are
    searched with `distinct_hamming_pairs`, and each pair of distinct values and each bucket of
    identical values is expanded back to all pairs of input indices.

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
    values, and ``O(N + P)`` to expand to the ``P`` output pairs. The expansion is inherently
    output-sized: ``m`` copies of one value alone give ``m * (m - 1) / 2`` pairs (200,000
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
    values, offsets, members = _collapse(fingerprints)
    nd = values.shape[0]
    if plan is None:
        plan = plan_tables(nd, hamming_k)
    a, b, dist = _search_sorted(values, int(hamming_k), plan, int(max_group))
    del values
    active = np.diff(offsets) > 1
    active[a] = True
    active[b] = True
    nbr_off, nbr, nbr_dist = _symmetric_adjacency(a, b, dist, nd)
    del a, b, dist
    row_off, largest = _row_lengths(offsets, members, active, nbr_off, nbr)
    np.cumsum(row_off, out=row_off)
    return _expand(offsets, members, active, nbr_off, nbr, nbr_dist, row_off, largest)
