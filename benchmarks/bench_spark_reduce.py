"""The Spark engine's candidate reduce tasks alone, on a real corpus's band rows, without Spark:
``bucket_links_task`` (a partition's buckets found and linked) and ``distinct_links_task``
(the links made distinct), the code of ``--before`` (a git revision, checked out in a
temporary worktree) beside the code now.

The inputs are what a ``--engine spark`` run of ``dedup`` with the defaults gives these tasks
on ``--partitions`` shuffle partitions: every document's MinHash band hashes (no exact
duplicates taken out), packed in runs as the map tasks pack them; the first partition's band
runs, and the links bound for the first partition from every partition's reduce. They are
made once and kept in ``benchmarks/.data/spark_reduce_<corpus>_<docs>/``.

Each measurement is two fresh processes started at once, as two executor cores run two
tasks, each calling the task twice on the same input: the first call fills new memory (a
Spark task's Python worker gets arrays of tens of MB from the system every task), the second
reuses the memory of the first. The code before and the code now alternate ``--runs``
times; a process of each warms the kernels' cache first.

"values out" counts the rows the task yields: packed runs of links for the buckets' task, the
distinct links for the other. Appends to ``benchmarks/results/spark_reduce.md`` and prints the
table.

Usage::

    python benchmarks/bench_spark_reduce.py --before HEAD~1
    python benchmarks/bench_spark_reduce.py --corpus benchmarks/.data/heavy_200k.jsonl --docs 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / ".data"

#: The child: one task timed twice on its input; prints the seconds as JSON.
CHILD = """
import json, sys, time
import pyarrow as pa
from neardup.engines.spark.partitions import partition_keys
from neardup.engines.spark.repair import bucket_links_task, distinct_links_task
task, path, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
batches = pa.ipc.open_stream(pa.OSFile(path)).read_all().to_batches()
keys = partition_keys(partitions)
run = (lambda: bucket_links_task(iter(batches), keys, timed=False)) if task == "buckets" else (
    lambda: distinct_links_task(iter(batches)))
seconds = []
for _ in range(2):
    started = time.perf_counter()
    rows = sum(b.num_rows for b in run())
    seconds.append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "rows": rows}))
"""


def write_stream(path: Path, batches: list) -> None:
    import pyarrow as pa

    with pa.OSFile(str(path), "wb") as sink:
        writer = pa.ipc.new_stream(sink, batches[0].schema)
        for batch in batches:
            writer.write_batch(batch)
        writer.close()


def make_inputs(corpus: Path, docs: int, partitions: int, folder: Path) -> None:
    """The first partition's band runs and links (see the module docstring)."""
    import numpy as np
    import orjson
    import pyarrow as pa

    from neardup.api import fingerprint
    from neardup.candidates.bands import band_hash_columns
    from neardup.engines.spark.partitions import partition_keys
    from neardup.engines.spark.repair import bucket_links_task
    from neardup.engines.spark.runs import band_runs_task
    from neardup.settings import Settings

    settings = Settings(method="minhash")
    bands, rows = settings.banding()
    with open(corpus, "rb") as lines:
        texts = [orjson.loads(line)["text"] for i, line in enumerate(lines) if not docs or i < docs]
    hashes = band_hash_columns(fingerprint(texts, method="minhash"), bands, rows).T.copy()
    del texts
    keys = partition_keys(partitions)
    runs: dict[int, list] = {int(k): [] for k in keys}
    for start in range(0, hashes.shape[0], 10_000):
        part = hashes[start : start + 10_000]
        batch = pa.record_batch(
            {
                "pos": np.arange(start, start + part.shape[0]),
                "ts": np.zeros(part.shape[0], np.int64),
                "sig": pa.array([row.tobytes() for row in part], pa.binary()),
            }
        )
        for packed in band_runs_task([batch], settings, keys, timed=False):
            dest = packed.column("dest").to_numpy()
            for key in keys:
                chosen = dest == key
                if chosen.any():
                    runs[int(key)].append(packed.filter(pa.array(chosen)))
    write_stream(folder / "band_runs.arrow", runs[int(keys[0])])
    links = []
    for key in keys:
        for packed in bucket_links_task(iter(runs[int(key)]), keys, timed=False):
            chosen = packed.column("dest").to_numpy() == keys[0]
            if chosen.any():
                links.append(packed.filter(pa.array(chosen)))
    write_stream(folder / "links.arrow", links)


def timed_pair(src: Path, task: str, path: Path, partitions: int) -> list[dict]:
    """Two processes of CHILD started at once with ``src`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, "-c", CHILD, task, str(path), str(partitions)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a timed process failed ({src})")
    return [json.loads(out) for out in outs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DATA / "english_1m.jsonl")
    parser.add_argument("--docs", type=int, default=0, help="first documents only (0: all)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--before", default="HEAD~1", help="git revision of the code before")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    folder = DATA / f"spark_reduce_{args.corpus.stem}_{args.docs}_{args.partitions}"
    if not (folder / "links.arrow").exists():
        folder.mkdir(parents=True, exist_ok=True)
        make_inputs(args.corpus, args.docs, args.partitions, folder)
    inputs = {"buckets": folder / "band_runs.arrow", "distinct": folder / "links.arrow"}
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "before"
        git = ["git", "-C", str(ROOT)]
        subprocess.run([*git, "worktree", "add", "-q", "--detach", str(worktree), args.before])
        try:
            codes = {"before": worktree / "src", "now": ROOT / "src"}
            results: dict = {(c, t): [] for c in codes for t in inputs}
            for code in codes.values():  # the kernels compiled and cached, untimed
                for task, path in inputs.items():
                    timed_pair(code, task, path, args.partitions)
            for _ in range(args.runs):
                for name, code in codes.items():
                    for task, path in inputs.items():
                        results[name, task] += timed_pair(code, task, path, args.partitions)
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(worktree)])
    lines = [
        f"## {time.strftime('%Y-%m-%d %H:%M')} — {platform.machine()}, {os.cpu_count()} cores; "
        f"{args.corpus.name}, {args.docs or 'all'} documents, partition 1 of {args.partitions}, "
        f"before = {args.before}, {args.runs} runs of two processes",
        "",
        "| task | code | first call (new memory), s | second call, s | values out |",
        "|---|---|---:|---:|---:|",
    ]
    for (name, task), found in results.items():
        first = [r["seconds"][0] for r in found]
        second = [r["seconds"][1] for r in found]
        lines.append(
            f"| {task} | {name} | {statistics.median(first):.3f} ({min(first):.3f}–"
            f"{max(first):.3f}) | {statistics.median(second):.3f} ({min(second):.3f}–"
            f"{max(second):.3f}) | {found[0]['rows']:,} |"
        )
    text = "\n".join(lines) + "\n"
    with open(ROOT / "benchmarks" / "results" / "spark_reduce.md", "a") as out:
        out.write("\n" + text)
    print(text)


if __name__ == "__main__":
    main()
