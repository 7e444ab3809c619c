"""The LCS units of a batch of texts alone (:mod:`neardup.text.units`), as the first pass of
``dedup`` makes them: their sketches (:func:`~neardup.text.units.lcs_unit_sketches`, every
document of an out-of-core run) and the units themselves
(:func:`~neardup.text.units.lcs_units`, the verification's data). One thread, the texts'
canonical form made once outside the timing, the best of ``--repeat`` calls.

Short texts show the cost a text (the kernels' calls and set-up); long ones the cost a byte.
Run it on two trees (``PYTHONPATH=one/src``, then the other) to compare code.

Usage::

    python benchmarks/short_corpus.py --docs 200000 -o /tmp/short.jsonl.zst
    python benchmarks/bench_units.py --corpus /tmp/short.jsonl.zst --docs 200000

Appends to ``benchmarks/results/units.md`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from bench_minhash import best_seconds, record
from neardup.io.files import open_input, resolve_input
from neardup.text.canonical import Canonical
from neardup.text.units import lcs_unit_sketches, lcs_units

RESULTS = Path(__file__).resolve().parent / "results" / "units.md"


def read_texts(corpus: str, docs: int) -> list[str]:
    """The ``text`` of the first ``docs`` lines of a JSON Lines corpus (compressed or not)."""
    texts = []
    with open_input(resolve_input(corpus, None, ("jsonl",))) as lines:
        for line in lines:
            texts.append(json.loads(line)["text"])
            if len(texts) == docs:
                break
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="JSON Lines with a text field")
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    texts = read_texts(args.corpus, args.docs)
    canonical = Canonical.of(texts)
    megabytes = canonical.data.shape[0] / 1e6
    rows = []
    for name, function in (
        ("lcs_unit_sketches", lambda: lcs_unit_sketches(canonical)),
        ("lcs_units (auto)", lambda: lcs_units(canonical, "auto")),
    ):
        seconds = best_seconds(function, args.repeat)
        rows.append(
            f"| {name} | {len(texts):,} | {megabytes:.1f} | {seconds * 1e3:.1f} | "
            f"{seconds / len(texts) * 1e9:.0f} | {megabytes / seconds:.0f} |"
        )
    header = [
        f"{os.path.basename(args.corpus)}, {platform.processor() or platform.machine()}, "
        f"one thread, best of {args.repeat}",
        "",
        "| kernel | texts | canonical MB | ms | ns a text | MB/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    record(RESULTS, header + rows)


if __name__ == "__main__":
    main()
