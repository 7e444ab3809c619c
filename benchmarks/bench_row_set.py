"""The select of a row set (``neardup.rank_directory.RowSet.take``): nanoseconds a place, the
code of ``--before`` (``git show REV:src/neardup/rank_directory.py``) and the code now.

A run holds its representatives as a :class:`~neardup.rank_directory.RowSet` (a bit a
document) and turns the candidate pairs' places among them into documents with ``take``:
the first ends in ascending order, the second ends scattered. Over ``--rows`` rows (100M: a
100M-document run's representatives, 87.5 % of its rows) the scattered places miss the cache
at each read, which sets the cost. Both codes get the same marks and the same ``--places``
places (ascending, and random), each call timed ``--repeat`` times (median), the results
compared.

Usage::

    python benchmarks/bench_row_set.py                    # 100M rows, against HEAD
    python benchmarks/bench_row_set.py --rows 10000000 --share 0.5 --before HEAD~3
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from neardup import rank_directory  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_sketch_bounds import source_at  # noqa: E402


def module_at(revision: str):
    """``neardup.rank_directory`` as it was at ``revision``, imported under another name."""
    source = source_at(revision, "src/neardup/rank_directory.py")
    path = Path(tempfile.mkdtemp()) / "rank_directory_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rank_directory_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(take, places: np.ndarray, repeat: int) -> tuple[float, np.ndarray]:
    """Median seconds of ``take(places)`` over ``repeat`` calls (after one to compile), and
    its result."""
    take(places[:100])
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        out = take(places)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--share", type=float, default=0.875, help="share of the rows set")
    parser.add_argument("--places", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="HEAD", help="git revision of the code before")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    marks = rng.random(args.rows) < args.share
    before = module_at(args.before)
    sets = {"before": before.RowSet.of_marks(marks), "now": rank_directory.RowSet.of_marks(marks)}
    size = len(sets["now"])
    scattered = rng.integers(0, size, args.places)
    print(f"{args.rows:,} rows, {size:,} set; {args.places:,} places; medians of {args.repeat}")
    print("| places | before (ns a place) | now (ns a place) | before ÷ now |")
    print("|---|---:|---:|---:|")
    for name, places in (("ascending", np.sort(scattered)), ("random", scattered)):
        (t_before, out_before), (t_now, out_now) = (
            timed(sets[code].take, places, args.repeat) for code in ("before", "now")
        )
        if not np.array_equal(out_before, out_now):
            raise SystemExit(f"the two codes disagree on the {name} places")
        per = [t / args.places * 1e9 for t in (t_before, t_now)]
        print(f"| {name} | {per[0]:.1f} | {per[1]:.1f} | {t_before / t_now:.2f} |")


if __name__ == "__main__":
    main()
