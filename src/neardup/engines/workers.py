"""The local engine's worker threads: how many there are, and a map over them that keeps order.

Stage 1 (:func:`neardup.pipeline.signatures`) runs batch by batch in a pool of worker threads:
its compiled kernels release the GIL, so threads use every core without copying texts and
signatures between processes (about 1.8× on 2 cores; processes gained nothing here because
pickling the texts cost as much as fingerprinting them). Results come back in input order, so
the output does not depend on the number of workers, and at most ``IN_FLIGHT_PER_WORKER ×
workers`` batches are in flight, which bounds memory on inputs of any size.

Example:
    >>> [result for _, result in ordered_map(len, ["ab", "c", ""], 2)]
    [2, 1, 0]
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

from neardup.pipeline import signatures
from neardup.settings import Settings

#: Documents a worker signs at a time: enough to keep the compiled kernels busy, small enough
#: that the batches in flight (texts and their shingle hashes, about 10 bytes a character)
#: stay far below any memory budget.
BATCH_SIZE = 2_000
#: Batches in flight per worker. The reader hands over a block's batches at once and then
#: parses the next block; with two a worker, the workers ran dry behind the block being read
#: (the first pass of 1M documents: 12.1-12.9 s with two, 11.1-11.7 s with four, 11.0 s with
#: eight, on 2 cores).
IN_FLIGHT_PER_WORKER = 4


def default_workers() -> int:
    """All the cores this process may use (its CPU affinity where the system has one). O(1).

    Example:
        >>> default_workers() >= 1
        True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_workers(workers: int | None) -> int:
    """The number of worker threads ``workers`` asks for: itself, or all cores for None or 0;
    a negative number is a ``ValueError``. O(1).

    Example:
        >>> check_workers(3), check_workers(0) == default_workers()
        (3, True)
    """
    if workers is None or workers == 0:
        return default_workers()
    if workers < 0:
        raise ValueError(f"workers must be ≥ 0 (0 = all cores); got {workers}")
    return int(workers)


def ordered_map(
    function: Callable, items: Iterable, workers: int, *args, in_flight: int | None = None
) -> Iterator[tuple[object, object]]:
    """Yield ``(item, function(item, *args))`` in input order, computed by ``workers`` threads.

    With one worker everything runs in this thread. At most ``in_flight`` items (default
    ``IN_FLIGHT_PER_WORKER × workers``) are pending, the one yielded included, so ``items``
    may be a stream of any length. Cost: that of the calls, spread over the threads.

    Example:
        >>> list(ordered_map(pow, [2, 3], 2, 2))
        [(2, 4), (3, 9)]
    """
    if workers <= 1:
        for item in items:
            yield item, function(item, *args)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append((item, pool.submit(function, item, *args)))
            if len(pending) >= (in_flight or IN_FLIGHT_PER_WORKER * workers):
                head, future = pending.popleft()
                yield head, future.result()
        while pending:
            head, future = pending.popleft()
            yield head, future.result()


def warm_up(settings: Settings) -> None:
    """Compile (or load from numba's cache) every stage 1 kernel that ``settings`` uses, once,
    before worker threads race to compile them. O(1) once cached.

    Example:
        >>> warm_up(Settings(method="simhash"))
    """
    signatures(["warm up text for the kernels"], settings)
