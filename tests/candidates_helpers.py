"""Helpers of the candidates tests (tables, plan): bit counts and masks of 64-bit fingerprints,
written independently of the code under test."""

from __future__ import annotations

import numpy as np

from neardup.candidates.plan import TablePlan

ALL_ONES = (1 << 64) - 1
_BYTE_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64, by byte look-up (independent of the code under test)."""
    x = np.ascontiguousarray(x, dtype=np.uint64)
    return _BYTE_POPCOUNT[x.view(np.uint8)].reshape(x.shape + (8,)).sum(axis=-1)


def mask_of(bits: list[int] | tuple[int, ...] | set[int]) -> int:
    """The 64-bit mask with ``bits`` set (each counted once)."""
    return sum(1 << int(b) for b in set(int(b) for b in bits))


def boundary_bits(plan: TablePlan) -> list[int]:
    """First and last bit of every block, and bits 0 and 63."""
    bits = {0, 63}
    for start, width in plan.blocks:
        bits.update((start, start + width - 1))
    return sorted(bits)
