"""The plan of the Manku permutation tables: which blocks, which tables, and each table's key.

Method (Manku, Jain, Das Sarma 2007, "Detecting near-duplicates for web crawling"):
split the 64 bits into ``B = hamming_k + c`` contiguous blocks. Two fingerprints that differ
in at most ``k`` bits differ in at most ``k`` blocks, so they agree exactly on at least
``B - k = c`` blocks (pigeonhole). For each of the ``C(B, c)`` choices of ``c`` blocks there is
one *table*: its prefix mask selects the chosen blocks (`TablePlan.masks`), and its key is the
fingerprint with those blocks moved to the front (a block permutation: `table_fields`,
`permute_bits`), so sorting by key brings together the fingerprints that share the prefix.
Every pair within ``k`` shares the prefix of at least one table, so a search over the tables
is exact, not probabilistic.

The first-table rule reports each pair once without a global de-duplication: table ``t`` owns
a pair only if ``t`` is the *first* table on whose prefix mask the two fingerprints agree
(`first_agreeing_mask`, inside the compiled kernels). The batch search
(:mod:`neardup.candidates.tables`), which the Spark engine's tasks run too, and the live index
apply it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numba import njit

__all__ = [
    "FINGERPRINT_BITS",
    "MAX_HAMMING_K",
    "TablePlan",
    "check_hamming_k",
    "cheapest_plan",
    "estimated_cost",
    "first_agreeing_mask",
    "permute_bits",
    "permute_bits_into",
    "plan_tables",
    "table_fields",
]

MAX_HAMMING_K = 32
"""Largest supported ``hamming_k``; beyond half the width the tables stop pruning anything."""

FINGERPRINT_BITS = 64
"""Width of a fingerprint in bits."""

_AUTO_MAX_TABLES = 200
"""The automatic plan never uses more tables than this."""

_MAX_TABLES = 10_000
"""A forced plan may not exceed this many tables (C(B, c) grows very fast)."""


# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TablePlan:
    """Which blocks and which tables the permutation search uses.

    Attributes:
        hamming_k: largest Hamming distance reported (bits).
        blocks: ``(start, width)`` bit ranges, most significant block first, that partition the
            ``bits`` bits of a fingerprint exactly (bit 0 is the least significant bit).
        prefix_blocks: ``c``, the number of blocks forming each table's prefix.
        tables: for each table, the indices of its prefix blocks: all ``C(B, c)`` combinations
            in lexicographic order, ``B = len(blocks) >= hamming_k + c``.
        bits: width of the fingerprints in bits (64; fewer inside the recursive variant).

    Pigeonhole guarantee: two fingerprints at distance ``<= hamming_k`` differ in at most
    ``hamming_k`` blocks, so they agree on ``>= B - hamming_k >= c`` blocks and hence on the
    whole prefix of at least one table.

    Example:
        >>> plan = plan_tables(1_000_000, 3, prefix_blocks=2)
        >>> plan.blocks
        ((51, 13), (38, 13), (25, 13), (12, 13), (0, 12))
        >>> plan.num_tables, plan.prefix_bits
        (10, 25)
        >>> hex(int(plan.masks[0]))
        '0xffffffc000000000'
    """

    hamming_k: int
    blocks: tuple[tuple[int, int], ...]
    prefix_blocks: int
    tables: tuple[tuple[int, ...], ...]
    bits: int = FINGERPRINT_BITS

    def __post_init__(self) -> None:
        if not 1 <= self.bits <= FINGERPRINT_BITS:
            raise ValueError(f"bits must be in 1..{FINGERPRINT_BITS}, got {self.bits}")
        if not 0 <= self.hamming_k <= MAX_HAMMING_K:
            raise ValueError(f"hamming_k must be in 0..{MAX_HAMMING_K}, got {self.hamming_k}")
        end = self.bits
        for start, width in self.blocks:
            if width < 1 or start + width != end:
                raise ValueError(
                    "blocks must be contiguous bit ranges (start, width >= 1) covering bits "
                    f"{self.bits - 1}..0 from the most significant down, got {self.blocks}"
                )
            end = start
        if end != 0 or not self.blocks:
            raise ValueError(
                f"blocks must partition bits {self.bits - 1}..0 exactly, got {self.blocks}"
            )
        num_blocks = len(self.blocks)
        if not 1 <= self.prefix_blocks <= num_blocks - self.hamming_k:
            raise ValueError(
                f"prefix_blocks must be in 1..{num_blocks - self.hamming_k} "
                f"(blocks - hamming_k) for {num_blocks} blocks and hamming_k={self.hamming_k}, "
                f"got {self.prefix_blocks}"
            )
        expected = tuple(combinations(range(num_blocks), self.prefix_blocks))
        if tuple(tuple(t) for t in self.tables) != expected:
            raise ValueError(
                f"tables must be all C({num_blocks}, {self.prefix_blocks}) combinations of "
                "block indices in lexicographic order"
            )

    @property
    def num_tables(self) -> int:
        """Number of tables, ``C(B, c)``."""
        return len(self.tables)

    @property
    def table_prefix_bits(self) -> tuple[int, ...]:
        """Prefix width in bits of each table."""
        return tuple(sum(self.blocks[b][1] for b in table) for table in self.tables)

    @property
    def prefix_bits(self) -> int:
        """Shortest prefix over all tables, in bits (it bounds the expected group size)."""
        return min(self.table_prefix_bits)

    @property
    def masks(self) -> np.ndarray:
        """One ``uint64`` mask per table selecting the bits of its prefix."""
        block_masks = [((1 << w) - 1) << s for s, w in self.blocks]
        return np.array(
            [sum(block_masks[b] for b in table) for table in self.tables], dtype=np.uint64
        )


def _even_blocks(bits: int, num_blocks: int) -> tuple[tuple[int, int], ...]:
    """Split ``bits`` into ``num_blocks`` contiguous ranges whose widths differ by at most 1.

    The wider blocks come first (most significant), e.g. 64 bits in 5 blocks: 13,13,13,13,12.
    """
    base, extra = divmod(bits, num_blocks)
    blocks = []
    end = bits
    for i in range(num_blocks):
        width = base + (1 if i < extra else 0)
        blocks.append((end - width, width))
        end -= width
    return tuple(blocks)


def _make_plan(hamming_k: int, num_blocks: int, prefix_blocks: int, bits: int) -> TablePlan:
    return TablePlan(
        hamming_k=hamming_k,
        blocks=_even_blocks(bits, num_blocks),
        prefix_blocks=prefix_blocks,
        tables=tuple(combinations(range(num_blocks), prefix_blocks)),
        bits=bits,
    )


def estimated_cost(n: int, num_tables: int, prefix_bits: int) -> float:
    """Cost model of one search over ``n`` values, in units of roughly one comparison.

    ``num_tables * (n * log2(n) + n * n / 2**prefix_bits)``: per table, sorting ``n`` keys plus
    comparing each fingerprint with the others of its prefix group, whose expected size is
    ``n / 2**prefix_bits`` for uniformly spread fingerprints (``n`` counts as at least 2).
    O(1).

    Example:
        >>> round(estimated_cost(1_000_000, 4, 16) / 1e6)
        141
    """
    n = max(n, 2)
    return num_tables * (n * math.log2(n) + n * (n / 2.0**prefix_bits))


def cheapest_plan(n: int, hamming_k: int, bits: int) -> TablePlan:
    """The plan over ``bits``-bit values that `estimated_cost` rates cheapest for ``n`` values.

    ``c = prefix_blocks`` runs over ``1, 2, ...`` with ``B = hamming_k + c`` blocks of (nearly)
    equal width while ``C(B, c) <= 200`` tables and ``B <= bits``; on ties the smaller ``c``
    wins. `plan_tables` uses it over 64 bits, the recursive search over the ``bits`` in which
    the members of a large prefix group differ. Requires ``0 <= hamming_k < bits <= 64``.
    O(number of candidate plans), a few microseconds.

    Example:
        >>> plan = cheapest_plan(300, 3, 12)
        >>> plan.blocks, plan.num_tables
        (((9, 3), (6, 3), (3, 3), (0, 3)), 4)
    """
    best: TablePlan | None = None
    best_cost = math.inf
    c = 1
    while hamming_k + c <= bits:
        num_tables = math.comb(hamming_k + c, c)
        if num_tables > _AUTO_MAX_TABLES and best is not None:
            break
        plan = _make_plan(hamming_k, hamming_k + c, c, bits)
        cost = estimated_cost(n, num_tables, plan.prefix_bits)
        # Strict "<": on ties the smaller c (fewer tables) wins, e.g. k = 0 keeps one table.
        if cost < best_cost:
            best, best_cost = plan, cost
        c += 1
    assert best is not None, "caller guarantees bits > hamming_k"
    return best


def plan_tables(
    n: int,
    hamming_k: int,
    *,
    prefix_blocks: int | None = None,
    blocks: int | None = None,
) -> TablePlan:
    """Choose blocks and tables for finding all pairs within ``hamming_k`` among ``n`` values.

    With neither ``prefix_blocks`` nor ``blocks`` given, ``c = prefix_blocks`` is chosen from
    ``n`` and ``hamming_k`` by a cost model (units of about one comparison)::

        cost(c) = T * (n * log2(n) + n * n / 2**p)
        T = C(k + c, c) tables,   B = k + c blocks of (nearly) equal width,
        p = shortest table prefix in bits = the narrowest c blocks,

    i.e. per table a sort of ``n`` keys plus comparing each value with its prefix group, whose
    expected size is ``n / 2**p`` for uniformly spread fingerprints. ``c`` runs over
    ``1, 2, ...`` while ``T <= 200`` and ``B <= 64``; the cheapest wins (ties: smaller ``c``).
    For ``hamming_k = 3`` this picks::

        n = 1e6: c = 1, 4 tables, 16-bit prefixes, ~15 values a group
        n = 1e7: c = 2, 10 tables, 25-bit prefixes, ~0.3 values a group
        n = 1e9: c = 2, 10 tables, 25-bit prefixes, ~30 values a group (c = 3, 20 tables
                 of 31 bits, is within 2 % of it)

    ``hamming_k = 0`` gives one table whose prefix is the whole fingerprint (exact match).

    Forcing: ``prefix_blocks`` alone gives ``B = hamming_k + prefix_blocks``; ``blocks`` alone
    gives ``c = blocks - hamming_k``; both require ``blocks >= hamming_k + prefix_blocks``
    (more blocks than that stays exact but needs more tables).

    Args:
        n: number of (distinct) fingerprints the plan is for, ``>= 0``; only the cost model
            uses it.
        hamming_k: largest Hamming distance, in ``0..32`` bits.
        prefix_blocks: force ``c``, the number of blocks in each table's prefix (``>= 1``).
        blocks: force ``B``, the number of blocks, in ``hamming_k + 1 .. 64``.

    Returns:
        A validated `TablePlan`.

    Complexity: ``O(T)`` for the chosen plan, a few microseconds.

    Example:
        >>> plan = plan_tables(10_000_000, 3)
        >>> plan.prefix_blocks, len(plan.blocks), plan.num_tables, plan.prefix_bits
        (2, 5, 10, 25)
        >>> plan_tables(100, 0).tables
        ((0,),)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    check_hamming_k(hamming_k)
    k = int(hamming_k)
    if prefix_blocks is not None:
        if isinstance(prefix_blocks, bool) or not isinstance(prefix_blocks, (int, np.integer)):
            raise ValueError(f"prefix_blocks must be an integer >= 1, got {prefix_blocks!r}")
        if not 1 <= prefix_blocks <= FINGERPRINT_BITS - k:
            raise ValueError(
                f"prefix_blocks must be in 1..{FINGERPRINT_BITS - k} (64 - hamming_k), "
                f"got {prefix_blocks}"
            )
    if blocks is not None:
        if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)):
            raise ValueError(f"blocks must be an integer, got {blocks!r}")
        low = k + (prefix_blocks if prefix_blocks is not None else 1)
        if not low <= blocks <= FINGERPRINT_BITS:
            what = (
                f"hamming_k + prefix_blocks = {k} + {prefix_blocks}"
                if prefix_blocks is not None
                else f"hamming_k + 1 = {k} + 1"
            )
            raise ValueError(
                f"blocks must be in {low}..{FINGERPRINT_BITS} ({what} up to 64), got {blocks}"
            )
    if prefix_blocks is None and blocks is None:
        return cheapest_plan(int(n), k, FINGERPRINT_BITS)
    if blocks is None:
        c = int(prefix_blocks)  # type: ignore[arg-type]
        num_blocks = k + c
    else:
        num_blocks = int(blocks)
        c = int(prefix_blocks) if prefix_blocks is not None else num_blocks - k
    num_tables = math.comb(num_blocks, c)
    if num_tables > _MAX_TABLES:
        raise ValueError(
            f"blocks={num_blocks} with prefix_blocks={c} needs C({num_blocks}, {c}) = "
            f"{num_tables} tables; the number of tables must be in 1..{_MAX_TABLES}"
        )
    return _make_plan(k, num_blocks, c, FINGERPRINT_BITS)


def check_hamming_k(hamming_k: int) -> None:
    """Raise ValueError unless ``hamming_k`` is an integer in ``0..MAX_HAMMING_K`` bits. O(1).

    Example:
        >>> check_hamming_k(3)
        >>> check_hamming_k(40)
        Traceback (most recent call last):
        ...
        ValueError: hamming_k must be in 0..32, got 40
    """
    if isinstance(hamming_k, bool) or not isinstance(hamming_k, (int, np.integer)):
        raise ValueError(f"hamming_k must be an integer in 0..{MAX_HAMMING_K}, got {hamming_k!r}")
    if not 0 <= hamming_k <= MAX_HAMMING_K:
        raise ValueError(f"hamming_k must be in 0..{MAX_HAMMING_K}, got {hamming_k}")


# --------------------------------------------------------------------------------------------
# Table keys and the first-table rule
# --------------------------------------------------------------------------------------------


def table_fields(plan: TablePlan, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bit fields moving table ``t``'s prefix blocks to the top, the other blocks after them.

    Returns ``(src_shift, dst_shift, width_mask)``, ``uint64`` arrays with one entry per block
    in the key's order (the prefix blocks in plan order, then the others), for
    `permute_bits_into`; swapping ``src_shift`` and ``dst_shift`` gives the inverse
    permutation. The key of a value in table ``t`` is ``permute_bits(value, fields)``: its top
    ``plan.table_prefix_bits[t]`` bits are the prefix. O(blocks).

    Example:
        >>> plan = plan_tables(100, 1, prefix_blocks=1)  # two 32-bit blocks, two tables
        >>> [f.tolist() for f in table_fields(plan, 1)]
        [[0, 32], [32, 0], [4294967295, 4294967295]]
    """
    prefix = plan.tables[t]
    order = list(prefix) + [b for b in range(len(plan.blocks)) if b not in prefix]
    src, dst, wmask = [], [], []
    top = plan.bits
    for b in order:
        start, width = plan.blocks[b]
        top -= width
        src.append(start)
        dst.append(top)
        wmask.append((1 << width) - 1)
    return (
        np.array(src, np.uint64),
        np.array(dst, np.uint64),
        np.array(wmask, np.uint64),
    )


@njit(cache=True, nogil=True)
def permute_bits_into(values, src_shift, dst_shift, width_mask, out):
    """Move bit fields: ``out[i] = OR_f ((values[i] >> src_shift[f]) & width_mask[f]) <<
    dst_shift[f]``, all ``uint64``; compiled, callable from numba kernels.

    Serves the block permutation of a table (`table_fields`) and its inverse, and the gathering
    of chosen bits into a narrow word (a software PEXT). O(len(values) × fields).

    Example:
        >>> fields = table_fields(plan_tables(100, 1, prefix_blocks=1), 1)
        >>> out = np.empty(1, np.uint64)
        >>> permute_bits_into(np.array([0x1111_2222_3333_4444], np.uint64), *fields, out)
        >>> hex(int(out[0]))
        '0x3333444411112222'
    """
    nf = src_shift.shape[0]
    for i in range(values.shape[0]):
        v = values[i]
        r = np.uint64(0)
        for f in range(nf):
            r |= ((v >> src_shift[f]) & width_mask[f]) << dst_shift[f]
        out[i] = r


def permute_bits(
    values: np.ndarray, fields: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """`permute_bits_into` a new ``uint64`` array: ``values`` with the bit ``fields`` moved.
    O(len(values) × fields).

    Example:
        >>> fields = table_fields(plan_tables(100, 1, prefix_blocks=1), 1)
        >>> hex(int(permute_bits(np.array([0xAB << 32 | 0xCD], np.uint64), fields)[0]))
        '0xcd000000ab'
    """
    out = np.empty(values.shape[0], np.uint64)
    permute_bits_into(values, fields[0], fields[1], fields[2], out)
    return out


@njit(cache=True, nogil=True)
def first_agreeing_mask(diff, masks):
    """Index of the first of ``masks`` on whose bits ``diff`` is all zero, or -1 if none.

    With ``diff = a ^ b`` and the tables' prefix masks (`TablePlan.masks`) this is the table
    that owns the pair ``(a, b)``; with the masks of the tables searched before the current
    one, ``>= 0`` means an earlier table owns the pair and the current one must skip it.
    Compiled (``uint64`` scalar, ``uint64`` array), callable from numba kernels; O(tables),
    stopping at the first agreement.

    Example:
        >>> first_agreeing_mask(np.uint64(0x0F), np.array([0xFF, 0xF0, 0xF00], np.uint64))
        1
    """
    for u in range(masks.shape[0]):
        if (diff & masks[u]) == 0:
            return u
    return -1
