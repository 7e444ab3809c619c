"""Tests of neardup.engines.kept."""

import numpy as np

from neardup.engines.kept import KeptSets
from neardup.engines.spill import MemoryBudget


def test_kept_sets_stop_when_the_extrapolation_or_the_budget_says_no():
    budget = MemoryBudget(1000)
    kept = KeptSets(budget, total_bytes=10_000)
    kept.add(np.array([0, 5, 10]), np.arange(10, dtype=np.uint64), consumed=5_000)
    # 96 bytes (8 a value, 8 a document) after half the input: 192 at the end.
    assert kept.active and budget.free == 1000 - 96
    kept.add(np.array([0, 40]), np.arange(40, dtype=np.uint64), consumed=6_000)
    # 424 bytes after 60 %: 707 at the end.
    assert kept.active and budget.free == 1000 - 424
    kept.add(np.array([0, 200]), np.arange(200, dtype=np.uint64), consumed=7_000)
    assert not kept.active and budget.free == 1000  # the budget refused: all given back
    kept.add(np.array([0, 1]), np.arange(1, dtype=np.uint64), consumed=7_100)
    assert not kept.active and budget.free == 1000

    kept = KeptSets(budget, total_bytes=10_000)
    kept.add(np.array([0, 5, 11]), np.arange(11, dtype=np.uint64), consumed=1_000)
    # 104 bytes after a tenth of the input: 1,040 at the end, over the budget.
    assert not kept.active and budget.free == 1000


def test_kept_sets_give_every_document_in_order():
    budget = MemoryBudget(1 << 20)
    kept = KeptSets(budget, total_bytes=100)
    kept.add(np.array([0, 2, 2, 5]), np.arange(5, dtype=np.uint64), consumed=50)
    kept.add(np.array([0, 1, 4]), np.arange(10, 14, dtype=np.uint64), consumed=100)
    assert budget.free == budget.limit - 5 * 8 - 3 * 8 - 4 * 8 - 2 * 8
    offsets, values = kept.arrays()
    assert offsets.tolist() == [0, 2, 2, 5, 6, 9]
    assert values.tolist() == [0, 1, 2, 3, 4, 10, 11, 12, 13]
    assert budget.free == budget.limit
