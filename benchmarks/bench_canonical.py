"""The canonical form alone (:func:`neardup.text.canonical.canonical_texts`): one thread, the
texts as the JSON Lines reader hands them over (an Arrow string column), in one run.

Each corpus's first ``--docs`` texts are read once, then canonicalised in batches of 2,000
documents (as the engines do) ``--repeat`` times, the best time counting. ``--suffix`` also
times the same texts with a word appended to each (default ``" café"``): a text of English
with one character outside ASCII (a dash, a curly quote, an accent) no longer takes the loop
of pure-ASCII texts but the UTF-8 one. MB/s are of the texts' UTF-8 bytes.

Usage::

    python benchmarks/bench_canonical.py --corpus benchmarks/.data/english_200k.jsonl \\
        --corpus benchmarks/.data/heavy_200k.jsonl

Appends to ``benchmarks/results/canonical.md`` and prints the table.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import time
from pathlib import Path

import pyarrow as pa

from bench_minhash import BATCH, best_seconds, record
from neardup.text.canonical import canonical_texts

RESULTS = Path(__file__).resolve().parent / "results" / "canonical.md"


def canonical_all(batches: list[pa.Array]) -> None:
    for batch in batches:
        canonical_texts(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, action="append", required=True)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--suffix", default=" café")
    args = parser.parse_args()
    lines = [
        f"\n## {time.strftime('%Y-%m-%d %H:%M')} — {platform.machine()}, {os.cpu_count()} cores; "
        f"first {args.docs:,} documents, batches of {BATCH:,}, 1 thread, best of {args.repeat}\n",
        "| corpus | texts | MB | texts not ASCII | seconds | MB/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for corpus in args.corpus:
        with corpus.open(encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in itertools.islice(fh, args.docs)]
        variants = [("as they are", texts)]
        if args.suffix:
            variants.append((f"each + {args.suffix.strip()!r}", [t + args.suffix for t in texts]))
        for label, chosen in variants:
            column = pa.array(chosen, pa.string())
            batches = [column.slice(i, BATCH) for i in range(0, len(chosen), BATCH)]
            mb = column.buffers()[2].size / 1e6
            wide = sum(not t.isascii() for t in chosen) / max(len(chosen), 1)
            seconds = best_seconds(functools.partial(canonical_all, batches), args.repeat)
            lines.append(
                f"| {corpus.name} | {label} | {mb:,.1f} | {wide:.0%} | {seconds:.3f} | "
                f"{mb / seconds:,.0f} |"
            )
    record(RESULTS, lines)


if __name__ == "__main__":
    main()
