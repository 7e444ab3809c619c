"""`neardup pairs` over the seed's batch rows, as a fresh process: reading, pairing, writing.

Generates ``--rows`` rows ``id <TAB> fingerprint (16 hex digits) <TAB> ISO 8601 timestamp``
(the format `neardup fingerprint -o x.tsv` writes): random 64-bit fingerprints, of which
``--near`` are copies of an earlier one with 1–3 bits flipped, so the output has pairs; the
rows are kept in ``benchmarks/.data`` and reused. Then times ``--runs`` fresh processes of
``neardup pairs ROWS -k 3 -o pairs.tsv`` with ``/usr/bin/time -v`` (wall seconds, CPU share,
peak RSS) and prints each run with its stage seconds (``--summary-out``) and the machine's load
average, then appends the median run (largest peak RSS) to ``benchmarks/results/pairs.md``,
unless ``--no-record`` (for figures from a loaded machine, which are not comparable).

``--rows-file`` times an existing rows file instead. ``--baseline VENV`` also times that
environment's ``neardup`` (e.g. one installed from the main branch), its runs alternating with
this one's so that both see the same load, and checks that both wrote the same bytes.

``--memory-limit`` and ``--tmp-dir`` are handed to this code's ``neardup pairs`` (not the
baseline's).

Usage::

    python benchmarks/bench_pairs.py --rows 10000000 --runs 3
    python benchmarks/bench_pairs.py --rows 100000000 --runs 1 --no-record
    python benchmarks/bench_pairs.py --rows-file benchmarks/.data/seed_rows_10000000.tsv \
        --baseline /path/to/main/.venv --runs 3 --no-record
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
RESULTS = HERE / "results" / "pairs.md"


def make_rows(rows: int, near: float, seed: int, path: Path) -> None:
    """Write the benchmark rows (deterministic for the same arguments). The fingerprints and
    times are drawn whole (16 B a row), the text written a million rows at a time, so that
    100M rows take about 2.5 GB to make (5.6 GB of rows)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**63, size=rows, dtype=np.int64).astype(np.uint64) * np.uint64(
        2
    ) + rng.integers(0, 2, size=rows).astype(np.uint64)
    copies = np.flatnonzero(rng.random(rows) < near)
    copies = copies[copies > 0]
    sources = (rng.random(copies.shape[0]) * copies).astype(np.int64)
    flips = np.zeros(copies.shape[0], dtype=np.uint64)
    for _ in range(3):
        bit = rng.integers(0, 64, size=copies.shape[0]).astype(np.uint64)
        flips ^= np.where(rng.random(copies.shape[0]) < 0.7, np.uint64(1) << bit, np.uint64(0))
    fps[copies] = fps[sources] ^ flips
    del copies, sources, flips
    seconds = 1_704_067_200 + np.cumsum(rng.integers(0, 30, size=rows))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for start in range(0, rows, 1_000_000):
            stop = min(rows, start + 1_000_000)
            stamps = pc.strftime(
                pa.array(seconds[start:stop] * 1_000_000, type=pa.timestamp("us", "UTC")),
                format="%Y-%m-%dT%H:%M:%SZ",
            )
            ids = pc.binary_join_element_wise(
                "u", pa.array(np.char.zfill(np.arange(start, stop).astype(str), 9)), ""
            )
            hexes = pa.array(np.char.zfill(np.char.mod("%x", fps[start:stop]), 16))
            lines = pc.binary_join_element_wise(ids, hexes, stamps, "\t")
            out.write(("\n".join(lines.to_pylist()) + "\n").encode())
    tmp.rename(path)


def timed_run(neardup: str, rows_path: Path, k: int, out: Path, extra: list[str]) -> dict:
    """One fresh process of ``neardup pairs`` (with the options ``extra``) under
    ``/usr/bin/time -v``: wall seconds, CPU share (%), peak RSS (GB), the load average before it
    and its stage seconds."""
    summary = out.with_suffix(".json")
    command = [neardup, "pairs", str(rows_path), "-k", str(k), "-o", str(out), *extra]
    command += ["--summary-out", str(summary), "-q"]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return {
        "wall": wall,
        "cpu": int(re.search(r"Percent of CPU this job got: (\d+)%", proc.stderr)[1]),
        "rss": int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)[1]) / 1e6,
        "load": load,
        "stages": json.loads(summary.read_text())["seconds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rows-file", type=Path, default=None, help="time this rows file")
    parser.add_argument("--near", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes; the median counts")
    parser.add_argument("--baseline", type=Path, default=None, help="a venv to time alongside")
    parser.add_argument("--no-record", action="store_true", help="print, do not append")
    parser.add_argument("--memory-limit", default=None, help="pairs' --memory-limit")
    parser.add_argument("--tmp-dir", default=None, help="pairs' --tmp-dir")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    rows_path = args.rows_file or DATA / f"seed_rows_{args.rows}.tsv"
    if not rows_path.exists():
        started = time.perf_counter()
        make_rows(args.rows, args.near, args.seed, rows_path)
        print(f"wrote {rows_path} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    subjects = {"this": str(Path(sys.executable).with_name("neardup"))}
    if args.baseline is not None:
        subjects["baseline"] = str(args.baseline / "bin" / "neardup")
    runs: dict[str, list[dict]] = {name: [] for name in subjects}
    extra = [
        f"--{name}={value}"
        for name, value in (("memory-limit", args.memory_limit), ("tmp-dir", args.tmp_dir))
        if value is not None
    ]
    for run in range(args.runs):
        for name, neardup in subjects.items():
            result = timed_run(
                neardup,
                rows_path,
                args.k,
                DATA / f"pairs-out-{name}.tsv",
                extra if name == "this" else [],
            )
            runs[name].append(result)
            print(
                f"{name} run {run + 1}: {result['wall']:.1f} s, {result['cpu']} % CPU, "
                f"{result['rss']:.2f} GB, load {result['load']:.1f} before; stages: "
                + ", ".join(f"{k} {v:.2f}" for k, v in result["stages"].items() if k != "total"),
                file=sys.stderr,
            )
    out = DATA / "pairs-out-this.tsv"
    if args.baseline is not None:
        same = filecmp.cmp(out, DATA / "pairs-out-baseline.tsv", shallow=False)
        print(f"outputs {'identical' if same else 'DIFFER'}", file=sys.stderr)
    walls = [r["wall"] for r in runs["this"]]
    wall, rss = statistics.median(walls), max(r["rss"] for r in runs["this"])
    mb = rows_path.stat().st_size / 1e6
    pairs = sum(1 for _ in open(out, "rb")) - 1  # PAIRS has a header line
    rows = args.rows if args.rows_file is None else sum(1 for _ in open(rows_path, "rb"))
    row = (
        f"| {rows:,} | {mb:,.0f} | {pairs:,} | {wall:.1f} | {rss:.2f} | "
        f"{mb / wall:.0f} | {time.strftime('%Y-%m-%d')} |"
    )
    print(row)
    if args.no_record:
        return
    if not RESULTS.exists():
        RESULTS.write_text(
            "# `neardup pairs` over seed rows (ISO timestamps), whole process\n\n"
            "| rows | MB | pairs | wall s | peak RSS GB | MB/s | date |\n"
            "|---:|---:|---:|---:|---:|---:|---|\n"
        )
    with open(RESULTS, "a") as fh:
        fh.write(row + "\n")


if __name__ == "__main__":
    main()
