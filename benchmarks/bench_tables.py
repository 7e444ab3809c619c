"""Time `neardup.candidates.tables.hamming_pairs` on random 64-bit fingerprints.

Random fingerprints plus planted near pairs (each a copy of a random fingerprint with 1..k bits
flipped), or with --skewed a heavily skewed set: a block of identical fingerprints, a cluster
of values within 2 bits of one base and (--dense) values that share all but their low 20 bits.
Deterministic (--seed). Prints N, k, the plan, pairs found, seconds and peak RSS.

The skewed default (200,000 identical fingerprints) has about 2e10 index pairs, which no one
can hold in memory, so by default only the search over distinct values is timed there
(`collapse_identical` + `distinct_hamming_pairs`); `hamming_pairs` runs when its output is at
most --max-output pairs.

    python benchmarks/bench_tables.py --n 10000000 --k 3 --planted 100000 --mode pairs
    python benchmarks/bench_tables.py --n 1000000 --k 3 --skewed
    python benchmarks/bench_tables.py --n 1000000 --k 3 --skewed --dense 100000
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from neardup.candidates.plan import TablePlan, plan_tables
from neardup.candidates.tables import (
    collapse_identical,
    distinct_hamming_pairs,
    hamming_pairs,
)


def _flip_bits(rng: np.random.Generator, values: np.ndarray, max_bits: int) -> np.ndarray:
    """Each value with 1..max_bits distinct random bits flipped."""
    out = values.copy()
    nbits = rng.integers(1, max_bits + 1, size=values.size)
    # Distinct positions per value: the first max_bits of a random permutation of 0..63.
    pos = np.argsort(rng.random((values.size, 64)), axis=1)[:, :max_bits].astype(np.uint64)
    for b in range(max_bits):
        sel = nbits > b
        out[sel] ^= np.uint64(1) << pos[sel, b]
    return out


def random_set(n: int, k: int, planted: int, seed: int) -> np.ndarray:
    """``n`` fingerprints: ``n - planted`` random ones and ``planted`` near copies of them."""
    rng = np.random.default_rng(seed)
    planted = min(planted, n // 2)
    base = rng.integers(0, 2**64, size=n - planted, dtype=np.uint64, endpoint=False)
    src = rng.integers(0, base.size, size=planted)
    near = _flip_bits(rng, base[src], max(k, 1))
    fp = np.concatenate([base, near])
    return fp[rng.permutation(fp.size)]


def skewed_set(n: int, identical: int, cluster: int, dense: int, seed: int) -> np.ndarray:
    """``identical`` copies of one value, ``cluster`` values within 2 bits of another base,
    ``dense`` values equal to a third base except in the low 20 bits, the rest random."""
    rng = np.random.default_rng(seed)
    rest = n - identical - cluster - dense
    base = rng.integers(0, 2**64, size=3, dtype=np.uint64, endpoint=False)
    low = np.uint64((1 << 20) - 1)
    dense_values = (base[2] & ~low) | rng.integers(0, 1 << 20, size=dense).astype(np.uint64)
    flips = rng.integers(0, 64, size=(cluster, 2)).astype(np.uint64)
    nflip = rng.integers(0, 3, size=cluster)
    near = np.full(cluster, base[1], dtype=np.uint64)
    for b in range(2):
        sel = nflip > b
        near[sel] ^= np.uint64(1) << flips[sel, b]
    fp = np.concatenate(
        [
            rng.integers(0, 2**64, size=rest, dtype=np.uint64, endpoint=False),
            np.full(identical, base[0], dtype=np.uint64),
            near,
            dense_values,
        ]
    )
    return fp[rng.permutation(fp.size)]


def peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0 if sys.platform != "darwin" else rss / 2**20


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="number of fingerprints")
    parser.add_argument("--k", type=int, default=3, help="hamming_k")
    parser.add_argument("--planted", type=int, default=10_000, help="planted near pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-group", type=int, default=4096)
    parser.add_argument("--prefix-blocks", type=int, default=None, help="force c")
    parser.add_argument(
        "--skewed",
        action="store_true",
        help="skewed set: --identical copies of one value plus --cluster values within 2 bits "
        "of one base, the rest random",
    )
    parser.add_argument("--identical", type=int, default=200_000)
    parser.add_argument("--cluster", type=int, default=50_000)
    parser.add_argument("--dense", type=int, default=0)
    parser.add_argument(
        "--mode",
        choices=("pairs", "distinct", "both"),
        default="both",
        help="pairs: hamming_pairs only (its peak RSS); distinct: collapse_identical + "
        "distinct_hamming_pairs only; both: distinct first, then pairs unless the output "
        "would exceed --max-output",
    )
    parser.add_argument("--max-output", type=int, default=300_000_000)
    args = parser.parse_args()

    # Compile (or load cached) kernels outside the timing.
    warm = random_set(2000, args.k, 100, 1)
    hamming_pairs(warm, args.k, max_group=64)
    distinct_hamming_pairs(np.unique(warm), args.k, max_group=64)

    if args.skewed:
        fp = skewed_set(args.n, args.identical, args.cluster, args.dense, args.seed)
        kind = (
            f"skewed ({args.identical} identical, {args.cluster} within 2 bits of a base, "
            f"{args.dense} sharing all but the low 20 bits)"
        )
    else:
        fp = random_set(args.n, args.k, args.planted, args.seed)
        kind = f"random + {min(args.planted, args.n // 2)} planted near copies"
    print(f"set          : {kind}")
    print(f"N            : {fp.size:,}")
    print(f"k            : {args.k}")
    print(f"RSS before   : {current_rss_mb():,.0f} MB (input {fp.nbytes / 2**20:,.0f} MB)")

    def describe(plan: TablePlan) -> str:
        return (
            f"c={plan.prefix_blocks}, B={len(plan.blocks)}, tables={plan.num_tables}, "
            f"prefix_bits={plan.prefix_bits}"
        )

    expanded = None
    if args.mode in ("distinct", "both"):
        t0 = time.perf_counter()
        values, _, counts = collapse_identical(fp)
        t1 = time.perf_counter()
        plan = plan_tables(values.size, args.k, prefix_blocks=args.prefix_blocks)
        a, b, _ = distinct_hamming_pairs(values, args.k, plan=plan, max_group=args.max_group)
        t2 = time.perf_counter()
        expanded = int((counts[a] * counts[b]).sum() + (counts * (counts - 1) // 2).sum())
        print(f"distinct     : {values.size:,} values")
        print(f"plan         : {describe(plan)}")
        print(f"collapse     : {t1 - t0:.2f} s")
        print(f"distinct pairs: {a.size:,} in {t2 - t1:.2f} s (collapse + search {t2 - t0:.2f} s)")
        print(f"index pairs  : {expanded:,} (what hamming_pairs returns)")
        print(f"peak RSS     : {peak_rss_mb():,.0f} MB")
        del values, counts, a, b
    if args.mode == "pairs" or (args.mode == "both" and expanded <= args.max_output):
        forced = (
            plan_tables(0, args.k, prefix_blocks=args.prefix_blocks)
            if args.prefix_blocks is not None
            else None
        )
        t3 = time.perf_counter()
        i, _, _ = hamming_pairs(fp, args.k, plan=forced, max_group=args.max_group)
        t4 = time.perf_counter()
        peak = peak_rss_mb()
        if args.mode == "pairs":
            # After the timing and the peak: collapsing again would add its own memory.
            plan = forced or plan_tables(collapse_identical(fp)[0].size, args.k)
            print(f"plan         : {describe(plan)}")
        print(f"hamming_pairs: {i.size:,} pairs in {t4 - t3:.2f} s")
        print(f"peak RSS     : {peak:,.0f} MB")
    elif args.mode == "both":
        print("hamming_pairs: skipped, output above --max-output")


if __name__ == "__main__":
    main()
