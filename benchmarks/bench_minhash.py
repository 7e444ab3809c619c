"""The MinHash kernel alone, by scheme: one thread, the same shingle hashes, in one run.

The shingle hashes (char:4, XXH64) of the first ``--docs`` documents are computed once; then each
scheme of :mod:`neardup.minhash` signs them ``--repeat`` times and the best time counts. Inputs
are batches of 2,000 documents, as the engines sign them (so the hashes of a batch are recent in
the cache, as in a run), and the whole set at once. MB/s are of the documents' UTF-8 text.

Usage::

    python benchmarks/corpus.py --docs 200000 --seed 21 --english-share 1 \\
        -o benchmarks/.data/english_200k.jsonl            # or bench_scale.py --make
    python benchmarks/bench_minhash.py --corpus benchmarks/.data/english_200k.jsonl

Appends to ``benchmarks/results/minhash.md`` and prints the table.
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

from neardup.minhash import SCHEMES, minhash_from_features
from neardup.text import hash_features

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "minhash.md"
BATCH = 2_000


def best_seconds(function, repeat: int) -> float:
    """The least wall time of ``repeat`` calls, after one call to warm up."""
    function()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def record(path: Path, lines: list[str]) -> None:
    """Append the table ``lines`` to the results file ``path`` (made if missing); print it."""
    text = "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)
    print(text)


def sign_all(inputs, num_perm: int, scheme: str) -> None:
    for features in inputs:
        minhash_from_features(features, num_perm, 1, scheme)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--num-perm", type=int, default=128)
    args = parser.parse_args()
    with args.corpus.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in itertools.islice(fh, args.docs)]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    batches = [hash_features(texts[i : i + BATCH], "char:4") for i in range(0, len(texts), BATCH)]
    whole = hash_features(texts, "char:4")
    shingles = whole.hashes.shape[0]
    lines = [
        f"\n## {time.strftime('%Y-%m-%d %H:%M')} — {platform.machine()}, {os.cpu_count()} cores; "
        f"{args.corpus.name}, {len(texts):,} documents, {mb:,.1f} MB, {shingles:,} char:4 "
        f"shingles, num_perm {args.num_perm}, 1 thread, best of {args.repeat}\n",
        "| scheme | input | seconds | MB/s | M shingles/s | ÷ classic |",
        "|---|---|---:|---:|---:|---:|",
    ]
    timings = {}
    for label, inputs in (("batches of 2,000", batches), ("all at once", [whole])):
        for scheme in SCHEMES:
            sign = functools.partial(sign_all, inputs, args.num_perm, scheme)
            timings[label, scheme] = best_seconds(sign, args.repeat)
        for scheme in SCHEMES:
            seconds = timings[label, scheme]
            lines.append(
                f"| {scheme} | {label} | {seconds:.3f} | {mb / seconds:,.0f} | "
                f"{shingles / seconds / 1e6:,.0f} | "
                f"{timings[label, 'classic'] / seconds:.1f}× |"
            )
    record(RESULTS, lines)


if __name__ == "__main__":
    main()
