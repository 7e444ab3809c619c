"""Tests of neardup.candidates.plan: the table plans (blocks, tables, masks) and their
validation, the pigeonhole guarantee of the tables, and the first-table rule."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from candidates_helpers import ALL_ONES, boundary_bits, mask_of, popcount
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates.plan import TablePlan, first_agreeing_mask, plan_tables

# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


def check_plan(plan: TablePlan, k: int) -> None:
    num_blocks = len(plan.blocks)
    c = plan.prefix_blocks
    assert plan.hamming_k == k
    assert num_blocks >= k + c
    # Blocks partition the 64 bits exactly, as evenly as possible.
    block_masks = [((1 << w) - 1) << s for s, w in plan.blocks]
    assert sum(w for _, w in plan.blocks) == 64
    assert sum(block_masks) == ALL_ONES
    assert all(a & b == 0 for a, b in combinations(block_masks, 2))
    widths = [w for _, w in plan.blocks]
    assert max(widths) - min(widths) <= 1
    # Tables: all C(B, c) combinations; masks and prefix widths agree.
    assert plan.num_tables == math.comb(num_blocks, c)
    assert plan.tables == tuple(combinations(range(num_blocks), c))
    masks = plan.masks
    assert masks.dtype == np.uint64 and masks.shape == (plan.num_tables,)
    for t, table in enumerate(plan.tables):
        assert int(masks[t]) == sum(block_masks[b] for b in table)
    assert plan.prefix_bits == min(popcount(masks).tolist())


@settings(deadline=None, max_examples=100)
@given(n=st.integers(0, 10**12), k=st.integers(0, 32))
def test_auto_plan_properties(n: int, k: int) -> None:
    plan = plan_tables(n, k)
    check_plan(plan, k)
    assert len(plan.blocks) == k + plan.prefix_blocks
    assert plan.num_tables <= 200


@settings(deadline=None, max_examples=100)
@given(k=st.integers(0, 12), c=st.integers(1, 4), extra=st.integers(0, 2), data=st.data())
def test_pigeonhole(k: int, c: int, extra: int, data: st.DataObject) -> None:
    """Any XOR of at most k bits leaves the whole prefix of some table untouched."""
    plan = plan_tables(10, k, prefix_blocks=c, blocks=k + c + extra)
    check_plan(plan, k)
    masks = [int(m) for m in plan.masks]
    edges = boundary_bits(plan)
    for _ in range(20):
        bits = data.draw(
            st.lists(st.integers(0, 63) | st.sampled_from(edges), max_size=k, unique=True)
        )
        diff = mask_of(bits)
        assert any(diff & m == 0 for m in masks)


def test_auto_plan_documented_choices() -> None:
    p6 = plan_tables(10**6, 3)
    assert (p6.prefix_blocks, len(p6.blocks), p6.num_tables, p6.prefix_bits) == (1, 4, 4, 16)
    p7 = plan_tables(10**7, 3)
    assert (p7.prefix_blocks, len(p7.blocks), p7.num_tables, p7.prefix_bits) == (2, 5, 10, 25)
    p9 = plan_tables(10**9, 3)
    assert (p9.prefix_blocks, p9.num_tables, p9.prefix_bits) == (2, 10, 25)
    p0 = plan_tables(10**9, 0)
    assert p0.blocks == ((0, 64),) and p0.tables == ((0,),)
    assert int(p0.masks[0]) == ALL_ONES
    assert plan_tables(10**6, 4, prefix_blocks=1).blocks == (
        (51, 13),
        (38, 13),
        (25, 13),
        (12, 13),
        (0, 12),
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((100, 33), {}, r"hamming_k must be in 0\.\.32, got 33"),
        ((100, -1), {}, r"hamming_k must be in 0\.\.32, got -1"),
        ((100, 2.5), {}, r"hamming_k must be an integer in 0\.\.32, got 2\.5"),
        ((100, True), {}, r"hamming_k must be an integer"),
        ((-1, 3), {}, r"n must be an integer >= 0, got -1"),
        ((100, 3), {"prefix_blocks": 0}, r"prefix_blocks must be in 1\.\.61 .*got 0"),
        ((100, 3), {"prefix_blocks": 62}, r"prefix_blocks must be in 1\.\.61 .*got 62"),
        ((100, 3), {"blocks": 3}, r"blocks must be in 4\.\.64 .*got 3"),
        ((100, 3), {"blocks": 65}, r"blocks must be in 4\.\.64 .*got 65"),
        ((100, 3), {"blocks": 4, "prefix_blocks": 2}, r"blocks must be in 5\.\.64 .*got 4"),
        ((100, 0), {"blocks": 64, "prefix_blocks": 32}, r"number of tables must be in 1\.\.10000"),
    ],
)
def test_plan_tables_validation(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plan_tables(*args, **kwargs)


def test_forced_plan_shapes() -> None:
    plan = plan_tables(100, 3, blocks=6)
    assert (len(plan.blocks), plan.prefix_blocks, plan.num_tables) == (6, 3, 20)
    plan = plan_tables(100, 3, blocks=7, prefix_blocks=2)
    assert (len(plan.blocks), plan.prefix_blocks, plan.num_tables) == (7, 2, 21)
    check_plan(plan, 3)


def test_table_plan_validation() -> None:
    good = plan_tables(100, 1, prefix_blocks=1)
    with pytest.raises(ValueError, match="blocks must"):
        TablePlan(1, ((32, 32), (0, 31)), 1, ((0,), (1,)))  # bit 31 missing
    with pytest.raises(ValueError, match="blocks must"):
        TablePlan(1, ((0, 32), (32, 32)), 1, ((0,), (1,)))  # least significant first
    with pytest.raises(ValueError, match="prefix_blocks must be in 1..1"):
        TablePlan(1, good.blocks, 2, ((0, 1),))
    with pytest.raises(ValueError, match="tables must be all C"):
        TablePlan(1, good.blocks, 1, ((0,),))
    assert TablePlan(1, good.blocks, 1, ((0,), (1,))) == good


# --------------------------------------------------------------------------------------------
# The first-table rule
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(0, 6),
    pairs=st.lists(
        st.tuples(st.integers(0, ALL_ONES), st.integers(0, ALL_ONES)), min_size=1, max_size=30
    ),
)
def test_first_agreeing_mask_is_the_first_shared_prefix(
    k: int, pairs: list[tuple[int, int]]
) -> None:
    plan = plan_tables(1000, k)
    for x, y in pairs:
        got = first_agreeing_mask(np.uint64(x ^ y), plan.masks)
        agree = [t for t, m in enumerate(plan.masks.tolist()) if (x ^ y) & m == 0]
        assert got == (agree[0] if agree else -1)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(0, 6),
    x=st.integers(0, ALL_ONES),
    flips=st.lists(st.integers(0, 63), max_size=6),
)
def test_every_pair_within_k_has_a_first_table(k: int, x: int, flips: list[int]) -> None:
    y = x
    for bit in flips[:k]:
        y ^= 1 << bit
    plan = plan_tables(10**6, k)
    assert 0 <= first_agreeing_mask(np.uint64(x ^ y), plan.masks) < plan.num_tables
