"""The verification measure alone (:func:`neardup.lcs.lcs_pairs` with a threshold, as
verification calls it): one thread, over the pairs a ``dedup`` run reported and over random
pairs of the same documents, Korean texts (measured in eojeol, :mod:`neardup.eojeol`) apart
from the others.

The near-duplicate pairs are the rows of a PAIRS file that ``neardup dedup CORPUS
--pairs-out PAIRS`` wrote for the corpus (most of them pass the threshold, so each costs the
exact measure); the random pairs (``--random``, drawn with a fixed seed among the same
documents) mostly fail it, and show the tests that stop early. The units of every document
named are made once (:func:`neardup.text.units.lcs_units`), outside the timing; each group of
pairs is measured ``--repeat`` times, the best time counting.

Usage::

    neardup dedup benchmarks/.data/heavy_200k.jsonl -o /tmp/g.tsv --pairs-out /tmp/p.tsv
    python benchmarks/bench_lcs.py --corpus benchmarks/.data/heavy_200k.jsonl --pairs /tmp/p.tsv

Appends to ``benchmarks/results/lcs.md`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from bench_minhash import best_seconds, record
from neardup.eojeol import eojeol_rows
from neardup.lcs import lcs_pairs
from neardup.quality.truth import read_prediction
from neardup.text.units import lcs_units
from neardup.verify import LCS_UNIT

RESULTS = Path(__file__).resolve().parent / "results" / "lcs.md"


def texts_of(corpus: Path, wanted: set[str]) -> dict[str, str]:
    """The texts of the documents ``wanted``, by ID."""
    found = {}
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["id"] in wanted:
                found[row["id"]] = row["text"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--random", type=int, default=None, help="default: as many as PAIRS")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pairs = read_prediction(args.pairs)
    id_a, id_b = pairs.id_a.tolist(), pairs.id_b.tolist()
    texts = texts_of(args.corpus, set(id_a) | set(id_b))
    names = sorted(texts)
    row = {name: i for i, name in enumerate(names)}
    offsets, codes = lcs_units([texts[name] for name in names], LCS_UNIT)
    korean = eojeol_rows(offsets, codes)
    near_a = np.array([row[i] for i in id_a], dtype=np.int64)
    near_b = np.array([row[i] for i in id_b], dtype=np.int64)
    rng = np.random.default_rng(0)
    drawn = args.random if args.random is not None else near_a.shape[0]
    rand_a = rng.integers(0, len(names), drawn)
    rand_b = rng.integers(0, len(names), drawn)
    lcs_pairs(offsets, codes, near_a[:2], near_b[:2], args.threshold)  # compiled or loaded
    lines = [
        f"\n## {time.strftime('%Y-%m-%d %H:%M')} — {platform.machine()}, {os.cpu_count()} cores; "
        f"{args.corpus.name}, threshold {args.threshold}, 1 thread, best of {args.repeat}\n",
        "| pairs | texts | pairs | mean units | passing | seconds | µs a pair |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    sizes = np.diff(offsets)
    for kind, a, b in (("reported", near_a, near_b), ("random", rand_a, rand_b)):
        both = korean[a] & korean[b]
        for label, chosen in (("Korean", both), ("other", ~both)):
            x, y = a[chosen], b[chosen]
            if x.shape[0] == 0:
                continue
            values = lcs_pairs(offsets, codes, x, y, args.threshold)
            seconds = best_seconds(
                lambda x=x, y=y: lcs_pairs(offsets, codes, x, y, args.threshold), args.repeat
            )
            lines.append(
                f"| {kind} | {label} | {x.shape[0]:,} | {sizes[x].mean():.0f} | "
                f"{(values >= args.threshold).mean():.1%} | {seconds:.3f} | "
                f"{1e6 * seconds / x.shape[0]:.1f} |"
            )
    record(RESULTS, lines)


if __name__ == "__main__":
    main()
