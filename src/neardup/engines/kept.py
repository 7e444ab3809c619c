"""Every document's verification data, kept from the first pass while they look like fitting
the run's budget (:class:`KeptSets`), so that a run that fits reads no text twice.

Example:
    >>> from neardup.engines.spill import MemoryBudget
    >>> kept = KeptSets(MemoryBudget(1 << 20), total_bytes=100)
    >>> kept.add(np.array([0, 1]), np.arange(1, dtype=np.uint64), consumed=100)
    >>> kept.arrays()[1].tolist()
    [0]
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from neardup.engines.spill import MemoryBudget


class KeptSets:
    """The verification data (CSR: shingle sets or LCS units) of every document, built by the
    workers of pass 1 batch by batch and held in memory against the run's budget, as long as
    they look like fitting it: what the budget holds (these data and the spillable columns in
    memory), extrapolated from the input bytes read so far to the input's total, must stay
    within it. Once it does not (or the budget refuses a batch), everything kept is freed and
    :attr:`active` turns False: the verification data are then built from a re-read, as
    without keeping.

    The values go into one array reserved at the budget's size (its pages are only touched as
    they are written, so memory grows with the data), each batch copied into its place by a
    thread of its own while pass 1 goes on. Memory: 8 bytes a value plus 8 a document.

    Example:
        >>> kept = KeptSets(MemoryBudget(1 << 20), total_bytes=100)
        >>> kept.add(np.array([0, 2, 3]), np.arange(3, dtype=np.uint64), consumed=50)
        >>> offsets, values = kept.arrays()
        >>> offsets.tolist(), values.tolist()
        ([0, 2, 3], [0, 1, 2])
    """

    def __init__(self, budget: MemoryBudget, total_bytes: int):
        self.budget = budget
        self.total_bytes = total_bytes
        #: Read by each worker as it starts a batch: whether to build the batch's data.
        self.active = True
        self._values = np.empty(budget.limit // np.dtype(np.uint64).itemsize, dtype=np.uint64)
        self._lengths: list[np.ndarray] = []
        self._end = 0
        self._held = 0
        self._copier = ThreadPoolExecutor(1)
        self._copies: deque[Future] = deque()

    def add(self, offsets: np.ndarray, values: np.ndarray, consumed: int) -> None:
        """Keep the next batch's data (CSR), ``consumed`` input bytes having been read. O(1)
        here, the copy O(values) on the copying thread."""
        if not self.active:
            return
        nbytes = values.nbytes + offsets.nbytes - 8
        if not self.budget.take(nbytes):
            self.drop()
            return
        self._held += nbytes
        held = self.budget.limit - self.budget.free
        if held * self.total_bytes > self.budget.limit * max(consumed, 1):
            self.drop()
            return
        self._lengths.append(np.diff(offsets))
        self._copies.append(self._copier.submit(copy_into, self._values, self._end, values))
        self._end += values.shape[0]
        while self._copies and self._copies[0].done():
            self._copies.popleft().result()  # raises what the copy raised

    def _wait(self) -> None:
        while self._copies:
            self._copies.popleft().result()
        self._copier.shutdown()

    def drop(self) -> None:
        """Stop keeping: free what was kept and give its bytes back to the budget."""
        self.active = False
        self._wait()
        self._release()

    def _release(self) -> None:
        """Let go of the kept arrays and give their bytes back to the budget."""
        self._values, self._lengths = np.zeros(0, np.uint64), []
        self.budget.give_back(self._held)
        self._held = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every document's data, CSR ``(offsets int64[n + 1], values)``, once copied; their
        bytes go back to the budget (the caller holds them from now on)."""
        self._wait()
        offsets = np.zeros(sum(part.shape[0] for part in self._lengths) + 1, dtype=np.int64)
        if self._lengths:
            np.cumsum(np.concatenate(self._lengths), out=offsets[1:])
        values = self._values[: self._end]
        self._release()
        return offsets, values


def copy_into(target: np.ndarray, start: int, values: np.ndarray) -> None:
    """``target[start : start + len(values)] = values``, without holding the GIL."""
    # numpy copies without the GIL: the other threads go on meanwhile.
    target[start : start + values.shape[0]] = values
