"""Benchmark ``neardup index build`` as whole fresh processes: this checkout beside a baseline.

Each build runs under ``/usr/bin/time -v`` (wall seconds, peak RSS), the corpus read once before
each; the baseline is another checkout's ``src`` (e.g. ``git archive main src | tar -x -C
/tmp/base``), run with the same interpreter through ``PYTHONPATH``. The two indexes are then
compared record by record (every SQLite row but the creation time, every cached array): equal
contents give equal answers.

    python benchmarks/bench_index_build.py --corpus benchmarks/.data/english_1m.jsonl \\
        --baseline-src /tmp/base/src --method minhash
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import timed, warm  # noqa: E402


def contents(path: Path) -> dict[str, str]:
    """A digest of every record (but the creation time) and cached array of an index."""
    conn = sqlite3.connect(path / "index.sqlite")
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {}
    for table in sorted(tables):
        digest = hashlib.sha256()
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1"):
            if table != "meta" or row[0] != "created":
                digest.update(repr(row).encode())
        out[table] = digest.hexdigest()
    conn.close()
    generation = json.loads((path / "tables.json").read_text())["generation"]
    for array in sorted((path / f"tables-{generation}").glob("*.npy")):
        out[array.name] = hashlib.sha256(np.load(array, mmap_mode="r").tobytes()).hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--method", default="minhash", choices=["minhash", "simhash"])
    parser.add_argument("--extra", default="", help="more options for this checkout's build")
    parser.add_argument("--work", type=Path, default=None, help="folder for the two indexes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-index-build-", dir=args.work))
    command = [sys.executable, "-m", "neardup", "index", "build", str(args.corpus)]
    command += ["--method", args.method, "-q"]
    runs = {}
    try:
        for name, src in (("before", args.baseline_src), ("after", HERE.parent / "src")):
            warm(args.corpus)
            os.environ["PYTHONPATH"] = str(src.resolve())
            extra = args.extra.split() if name == "after" else []
            runs[name] = timed([*command, "-d", str(work / name), *extra])
            print(f"{name}: {runs[name]['wall']:.1f} s, {runs[name]['rss_gb']:.2f} GB", flush=True)
        same = contents(work / "before") == contents(work / "after")
        print(
            f"after / before: wall {runs['after']['wall'] / runs['before']['wall']:.2f}x, "
            f"peak RSS {runs['after']['rss_gb'] / runs['before']['rss_gb']:.2f}x; "
            f"indexes {'identical' if same else 'DIFFERENT'}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
