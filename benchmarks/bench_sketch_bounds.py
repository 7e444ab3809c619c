"""Bounding pairs by count sketches in a spill file (``neardup.candidates.bounds``): the tiles
read whole or row by row, and ``possible_by_blocks`` before and now, in fresh processes.

Makes, in a temporary folder under ``--tmp`` (deleted afterwards), a sketch spill file of
``--rows`` rows of 128 bytes (0/1 counts, 10-60 units a row, as short texts give) and their
unit counts, then two sections:

1. ``tiles``: the second block of one tile (the rows of ``sketch_block_rows(sketches,
   --memory)``) read whole (``read_rows``) and only the rows that ``k`` random pairs name
   (``gather_rows``), from the page cache and from the disk (the block's pages dropped from
   the cache first with ``posix_fadvise``, or read once before): the medians of ``--repeat``
   tiles, the four ways on each, in milliseconds. Where the two cross sets ``SPARSE_SHARE``.
2. ``sweep``: ``possible_by_blocks`` over each case's pairs (uint32 ends) with that block size,
   the code of ``--before`` (``git show REV:src/neardup/candidates/bounds.py``) and the code
   now, each after the pass over the file that a run makes first (``unbounded_rows``, or
   ``scanned_sketches``, which also makes the coarse sketches bounded by first), each in a
   fresh process (the kernels compiled on a small input first): seconds, bytes
   read (a whole read counts its rows' bytes, a gather the distinct pages it touches), the
   process's ``rchar`` and ``read_bytes`` from ``/proc/self/io`` (bytes through read calls, not
   faults; bytes from the disk), its peak RSS (``VmHWM``) and what the call added to the RSS it
   entered with; both results must be equal. Cases ``uniform:P`` (P random pairs over every
   row) and ``dense:P:B`` (P random pairs within the first B blocks). The file is read once
   before each run, so that each starts with it in the page cache.

Usage::

    python benchmarks/bench_sketch_bounds.py                 # 20M rows, both sections
    python benchmarks/bench_sketch_bounds.py --sections sweep --runs 3 --tmp /big/disk \\
        --cases uniform:2000000,uniform:50000000,dense:50000000:3

About 2.6 GB of disk for 20M rows (check ``df`` first) and 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 128


def make_sketches(folder: Path, rows: int, seed: int) -> None:
    """``sketches.bin`` (rows × 128 uint8) and ``sizes.npy`` (int32, each row's units), a
    million rows at a time."""
    rng = np.random.default_rng(seed)
    sizes = np.empty(rows, dtype=np.int32)
    with open(folder / "sketches.bin", "wb") as out:
        for start in range(0, rows, 1 << 20):
            count = min(1 << 20, rows - start)
            share = rng.integers(10, 61, count).astype(np.float32) / WIDTH
            chunk = (rng.random((count, WIDTH), dtype=np.float32) < share[:, None]).astype(np.uint8)
            sizes[start : start + count] = chunk.sum(axis=1)
            chunk.tofile(out)
        # Written back now: the cache drops only clean pages (the cold tiles below).
        out.flush()
        os.fsync(out.fileno())
    np.save(folder / "sizes.npy", sizes)


def make_pairs(folder: Path, case: str, rows: int, block_rows: int, seed: int) -> Path:
    """The case's pairs as ``pairs_<case>.npy`` (2 × P uint32, in no order)."""
    kind, count, *rest = case.split(":")
    top = rows if kind == "uniform" else min(rows, int(rest[0]) * block_rows)
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, top, size=(2, int(count)), dtype=np.uint32)
    path = folder / f"pairs_{case.replace(':', '_')}.npy"
    np.save(path, pairs)
    return path


def _io() -> dict[str, int]:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return {k: int(v) for k, v in fields.items()}


def _status(field: str) -> int:
    """A size from ``/proc/self/status`` in bytes: ``VmRSS`` now, ``VmHWM`` at its peak (of
    this program alone: ``ru_maxrss`` would count the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _load(module_path: Path):
    """The module of that file, registered under its stem (numba's cache looks it up)."""
    spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_path.stem] = module
    spec.loader.exec_module(module)
    return module


def child(args: argparse.Namespace) -> None:
    """One timed call in this process; prints a JSON line."""
    import mmap

    bounds = _load(Path(args.module))
    folder = Path(args.folder)
    sizes = np.load(folder / "sizes.npy")
    rows = sizes.shape[0]
    sketches = np.memmap(folder / "sketches.bin", np.uint8, "r", shape=(rows, WIDTH))
    pairs = np.load(args.pairs)
    a, b = pairs[0], pairs[1]
    read = {"bytes": 0}
    read_rows = bounds.read_rows

    def counted_read(array, start, out, **options):
        read["bytes"] += out.nbytes
        return read_rows(array, start, out, **options)

    bounds.read_rows = counted_read
    gather = getattr(bounds, "gather_rows", None)
    if gather is not None:

        def counted_gather(array, start, needed, out):
            first = int(array.offset) + (start + needed) * (out.nbytes // out.shape[0])
            read["bytes"] += np.unique(first // mmap.PAGESIZE).shape[0] * mmap.PAGESIZE
            return gather(array, start, needed, out)

        bounds.gather_rows = counted_gather
    # Compile the kernels (or load them from the cache) before the timing.
    small = np.arange(4, dtype=np.uint32)
    bounds.possible_by_blocks(sizes, sketches, small, small[::-1].copy(), 0.8, 2)
    read["bytes"] = 0
    before_io, before_rss = _io(), _status("VmRSS")
    started = time.perf_counter()
    scan = getattr(bounds, "scanned_sketches", None)
    if scan is None:  # the pass over the file for the unbounded rows, as a run makes it
        bounds.unbounded_rows(sketches, args.block_rows)
        keep = bounds.possible_by_blocks(sizes, sketches, a, b, 0.8, args.block_rows)
    else:  # that pass makes the coarse sketches too, bounded by first
        with scan(sketches, args.block_rows) as (_, coarse):
            keep = bounds.possible_by_blocks(sizes, sketches, a, b, 0.8, args.block_rows, coarse)
    seconds = time.perf_counter() - started
    after_io = _io()
    peak = _status("VmHWM")
    np.save(args.out, keep)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "read": read["bytes"],
                "rchar": after_io["rchar"] - before_io["rchar"],
                "storage": after_io["read_bytes"] - before_io["read_bytes"],
                "peak": peak,
                "added": peak - before_rss,
                "kept": int(keep.sum()),
            }
        )
    )


def tiles(folder: Path, block_rows: int, counts: list[int], repeat: int) -> list[str]:
    """Section 1: one block read whole against the rows of ``k`` pairs, warm and cold."""
    sys.path.insert(0, str(ROOT / "src"))
    from neardup.candidates.bounds import gather_rows, read_rows

    rows = np.load(folder / "sizes.npy").shape[0]
    sketches = np.memmap(folder / "sketches.bin", np.uint8, "r", shape=(rows, WIDTH))
    buffer = np.empty((block_rows, WIDTH), dtype=np.uint8)
    buffer[:] = 0  # touched once, as the sweep's buffer is after its first block
    rng = np.random.default_rng(7)
    blocks = rows // block_rows
    fd = os.open(folder / "sketches.bin", os.O_RDONLY)
    lines = [
        f"block of {block_rows:,} rows ({block_rows * WIDTH / 1e6:.0f} MB), median of {repeat}",
        "",
        "| pairs in the tile | whole, cached | rows, cached | whole, from disk | rows, from disk |",
        "|---:|---:|---:|---:|---:|",
    ]
    length = block_rows * WIDTH
    scratch = np.empty_like(buffer)
    for k in counts:
        # The four ways on the same tiles, one after the other (the machine's load moves).
        times: dict[tuple[bool, str], list[float]] = {}
        for _ in range(repeat):
            j = int(rng.integers(0, blocks))
            needed = np.unique(rng.integers(0, block_rows, k))
            for cold in (False, True):
                for way in ("whole", "rows"):
                    if cold:
                        os.posix_fadvise(fd, j * length, length, os.POSIX_FADV_DONTNEED)
                    else:  # every page of the block in the cache, whatever ran before
                        read_rows(sketches, j * block_rows, scratch)
                    started = time.perf_counter()
                    if way == "whole":
                        read_rows(sketches, j * block_rows, buffer)
                    else:
                        gather_rows(sketches, j * block_rows, needed, buffer)
                    times.setdefault((cold, way), []).append(time.perf_counter() - started)
        cells = [statistics.median(t) * 1e3 for t in times.values()]
        lines.append(f"| {k:,} | " + " | ".join(f"{t:.1f} ms" for t in cells) + " |")
    os.close(fd)
    return lines


def _warm(path: Path) -> None:
    """Read the file once, so that every run starts with it in the page cache (the cold
    tiles drop pages of it)."""
    with open(path, "rb", buffering=0) as file:
        chunk = bytearray(1 << 24)
        while file.readinto(chunk):
            pass


def source_at(revision: str, path: str) -> str:
    """The text of this repository's file ``path`` at git ``revision``."""
    command = ["git", "show", f"{revision}:{path}"]
    return subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout


def sweep(
    folder: Path, cases: list[str], block_rows: int, before: str, seed: int, runs: int
) -> list[str]:
    """Section 2: the code before and now, alternating, in fresh processes."""
    old = folder / "bounds_before.py"
    old.write_text(source_at(before, "src/neardup/candidates/bounds.py"))
    new = ROOT / "src" / "neardup" / "candidates" / "bounds.py"
    rows = np.load(folder / "sizes.npy").shape[0]
    # The children load bounds.py as a module of its own name: numba's cache of its kernels
    # then names that module, which the package could not import, so it is kept apart.
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "NUMBA_CACHE_DIR": str(folder / "numba-cache"),
    }
    lines = [
        f"{rows:,} rows, blocks of {block_rows:,}; one line a run",
        "",
        "| case | code | seconds | read | rchar | from disk | peak RSS | added by the call |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        pairs = make_pairs(folder, case, rows, block_rows, seed)
        results = {}
        for _ in range(runs):
            for name, module in (("before", old), ("now", new)):
                _warm(folder / "sketches.bin")
                out = folder / f"keep_{name}.npy"
                command = [sys.executable, __file__, "--child", "--module", str(module)]
                command += ["--folder", str(folder), "--pairs", str(pairs), "--out", str(out)]
                command += ["--block-rows", str(block_rows)]
                done = subprocess.run(command, env=env, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"{case} {name}: {done.stderr}")
                got = json.loads(done.stdout.strip().splitlines()[-1])
                results[name] = np.load(out)
                lines.append(
                    f"| {case} | {name} | {got['seconds']:.2f} | {got['read'] / 1e9:.2f} GB "
                    f"| {got['rchar'] / 1e9:.2f} GB | {got['storage'] / 1e9:.2f} GB "
                    f"| {got['peak'] / 1e9:.2f} GB | {got['added'] / 1e9:.2f} GB |"
                )
                print(lines[-1], flush=True)
            if not np.array_equal(results["before"], results["now"]):
                raise SystemExit(f"{case}: the two codes disagree")
        pairs.unlink()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--memory", type=int, default=190_000_000)
    parser.add_argument("--tmp", default=str(ROOT / "benchmarks" / ".data"))
    parser.add_argument("--cases", default="uniform:2000000,uniform:50000000,dense:50000000:3")
    parser.add_argument("--tile-pairs", default="1000,3000,5000,10000,20000,40000")
    parser.add_argument("--sections", default="tiles,sweep")
    parser.add_argument("--before", default="main")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--module", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--pairs", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--block-rows", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(ROOT / "src"))
    from neardup.candidates.bounds import sketch_block_rows

    Path(args.tmp).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="sketch_bounds_", dir=args.tmp))
    try:
        started = time.perf_counter()
        make_sketches(folder, args.rows, args.seed)
        print(f"made {args.rows:,} rows in {time.perf_counter() - started:.0f} s", flush=True)
        mapped = np.memmap(folder / "sketches.bin", np.uint8, "r", shape=(args.rows, WIDTH))
        block_rows = sketch_block_rows(mapped, args.memory)
        del mapped
        sections = args.sections.split(",")
        out = []
        if "tiles" in sections:
            counts = [int(k) for k in args.tile_pairs.split(",")]
            out += tiles(folder, block_rows, counts, args.repeat) + [""]
            print("\n".join(out), flush=True)
        if "sweep" in sections:
            out += sweep(
                folder, args.cases.split(","), block_rows, args.before, args.seed, args.runs
            )
        print("\n".join(out))
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
