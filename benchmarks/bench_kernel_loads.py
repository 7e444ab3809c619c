"""Loading the cached kernels of a command: how many, how long, with numba's own load and with
the one ``neardup.startup`` installs (the bitcode beside each kernel's machine code left
unparsed until a link asks for it).

Each run is a fresh process that starts as the ``neardup`` command does
(``neardup.startup.install``), times every ``Cache.load_overload`` (numba's load of one kernel
from its cache) and counts the bitcode parses, then runs the command; ``--numba`` runs drop
the start-up's codegen hook first, so that numba loads each kernel its own way. The two kinds
of run alternate (``--runs`` each); the wall times printed are the whole processes'. The kernels
must be in the cache already (run the command once, or ``neardup warm``).

Usage::

    python benchmarks/bench_kernel_loads.py -- dedup benchmarks/.data/heavy_200k.jsonl -o /tmp/g.tsv
    python benchmarks/bench_kernel_loads.py --runs 5 -- pairs seeds.tsv -o /tmp/p.tsv
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

#: The child: the command's start, a clock around each kernel load, then the command itself.
CHILD = """
import json, os, sys, time
from neardup import startup
startup.install()
if sys.argv[1] == "numba":
    startup._finder.hooks.pop("numba.core.codegen")
import llvmlite.binding as binding
import numba.core.caching as caching
loads, parses = [], [0]
parse, load = binding.parse_bitcode, caching.Cache.load_overload
def counted_parse(code):
    parses[0] += 1
    return parse(code)
def timed_load(self, sig, context):
    start = time.perf_counter()
    result = load(self, sig, context)
    loads.append(time.perf_counter() - start)
    return result
binding.parse_bitcode, caching.Cache.load_overload = counted_parse, timed_load
from neardup.cli import main
try:
    main(sys.argv[2:], prog_name="neardup")
except SystemExit:
    pass
print(json.dumps({"loads": len(loads), "seconds": sum(loads), "parses": parses[0]}))
sys.stdout.flush()
os._exit(0)
"""


def run(kind: str, command: list[str]) -> dict:
    """One fresh process of ``command`` with ``kind``'s load: its figures and wall seconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, *command, "-q"],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout.splitlines()[-1])
    figures["wall"] = time.perf_counter() - start
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (alternated)")
    parser.add_argument("command", nargs="+", help="the neardup command and its arguments")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {"numba": [], "neardup": []}
    for _ in range(args.runs):
        for kind in results:
            results[kind].append(run(kind, args.command))
    print("| load | kernels | seconds loading (median, range) | bitcode parses | wall s |")
    print("|---|---:|---:|---:|---:|")
    for kind, runs in results.items():
        seconds = sorted(r["seconds"] for r in runs)
        walls = sorted(r["wall"] for r in runs)
        print(
            f"| {kind} | {runs[0]['loads']} | {statistics.median(seconds):.3f} "
            f"({seconds[0]:.3f}–{seconds[-1]:.3f}) | {runs[0]['parses']} | "
            f"{statistics.median(walls):.2f} ({walls[0]:.2f}–{walls[-1]:.2f}) |"
        )


if __name__ == "__main__":
    main()
