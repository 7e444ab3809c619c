"""The band search's pass over a column for a subset of its rows (``BandColumn.blocks``, as
``prefix_counts`` and ``gathered`` make it) with the representatives in 4-byte and 8-byte
indices, at a large collection: no search may copy the subset (docs/memory.md, "The grouping in
4-byte indices").

A pass searches the ascending subset once per block of ``BLOCK_ROWS`` rows of the column for the
block's first and last rows. NumPy searches an int32 array for values of another type (an int64
array, a list, a Python int) by converting the whole array first: the search the code made
before (``np.searchsorted(subset, [start, stop])``) then copies the subset on every call, one
block in 2**20 rows; the code now passes values of the subset's own type. For each width this
prints, as medians of ``--repeat`` runs: one search as the code makes it and as it was made
before (microseconds), and one whole pass counting the subset's band-hash prefixes
(``prefix_counts``; seconds), with the largest allocation it made (``tracemalloc``, MB). The
column's hashes are random, the subset ``--share`` of the rows, random and ascending.

Usage::

    python benchmarks/bench_index_width.py                  # 50M rows, about 2 GB of memory
    python benchmarks/bench_index_width.py --rows 10000000 --repeat 7
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from neardup.candidates.band_parts import BLOCK_ROWS, BandColumn, prefix_counts


def median_seconds(call, repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``call()``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def largest_allocation(call) -> float:
    """The most bytes (MB) that NumPy held at once beyond what it held before ``call()``."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        call()
        return (tracemalloc.get_traced_memory()[1] - before) / 1e6
    finally:
        tracemalloc.stop()


def measure(column: BandColumn, subset: np.ndarray, start: int, repeat: int) -> tuple:
    """(search now µs, search before µs, pass s, largest allocation MB, prefix counts) of
    ``subset`` over ``column``, the searches for the block at row ``start``."""
    bounds = (start, start + BLOCK_ROWS)
    counts = []

    def now() -> None:
        np.searchsorted(subset, np.array(bounds, dtype=subset.dtype))

    def before() -> None:
        np.searchsorted(subset, list(bounds))

    def one_pass() -> None:
        counts[:] = [prefix_counts(column, subset)]

    return (
        median_seconds(now, 20 * repeat) * 1e6,
        median_seconds(before, repeat) * 1e6,
        median_seconds(one_pass, repeat),
        largest_allocation(one_pass),
        counts[0],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000_000, help="rows of the column")
    parser.add_argument("--share", type=float, default=0.9, help="share of rows in the subset")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measure")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    column = BandColumn.of(rng.integers(0, 2**63, size=args.rows, dtype=np.uint64))
    chosen = np.flatnonzero(rng.random(args.rows) < args.share)
    middle = args.rows // 2 // BLOCK_ROWS * BLOCK_ROWS
    print(f"{args.rows:,} rows, {chosen.shape[0]:,} in the subset, blocks of {BLOCK_ROWS:,} rows")
    print(f"{'subset':>8} {'search now':>13} {'search before':>15} {'pass':>8} {'largest':>9}")
    counted = []
    for dtype in (np.int32, np.int64):
        now, before, seconds, largest, counts = measure(
            column, chosen.astype(dtype), middle, args.repeat
        )
        counted.append(counts)
        name = np.dtype(dtype).name
        print(f"{name:>8} {now:>10.1f} µs {before:>12.1f} µs {seconds:>6.2f} s {largest:>6.1f} MB")
    if not np.array_equal(*counted):
        raise SystemExit("the two widths counted different prefixes")


if __name__ == "__main__":
    main()
