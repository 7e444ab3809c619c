"""Whole-process benchmark of `neardup dedup` as users run it, on duplicate-heavy corpora.

Each row is one fresh process (interpreter start, reading, writing included) measured with
``/usr/bin/time -v``: wall seconds, peak resident memory, MB/s and docs/s of the input, and the
figures of neardup's own summary (seconds per stage, spill, documents re-read). The peer is the
plain rensa script of ``rensa_dedup.py`` (run with the peers' interpreter, see
``setup_peers.sh``), on the same file in the same run.

Corpora (``corpus.py``; ``--make`` writes the missing ones into ``benchmarks/.data``)::

    heavy_200k   200,000 docs (282 MB), 12 % exact copies, 31 % light edits (chains), one
                 template 3,548 times, 45 % of the originals real short Debian descriptions
                 (English and Korean), the rest synthetic English/Korean of 50–800 words
    heavy_1m     1,000,000 docs, 5 % exact copies, 19 % light edits (chains), 1 % template,
                 30 % of the originals real short descriptions
    heavy_10m    10,000,000 docs, as heavy_1m; generated in two shards in parallel and deleted
                 after the run unless --keep-data
    english_200k 200,000 / 1,000,000 synthetic English documents of 50–800 words (1.9 KB on
    english_1m   average), 10 % exact copies, 15 % light edits (chains): the first pass on
                 plain English text, where most of its time goes to the MinHash signatures

Usage::

    python benchmarks/bench_scale.py --corpus heavy_200k --peers          # vs rensa
    python benchmarks/bench_scale.py --corpus heavy_1m heavy_10m --make   # growth with N
    python benchmarks/bench_scale.py --corpus english_1m --make --peers \
        --baseline-args "--scheme classic"                               # before / after

Writes ``benchmarks/results/scale.md`` (appending a section per run) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
RESULTS = HERE / "results" / "scale.md"
PEER_PYTHON = HERE / ".peers" / "venv" / "bin" / "python"

CORPORA = {
    "heavy_200k": dict(
        docs=200_000, seed=11, exact=0.12, edits=0.35, template=0.02, shards=1, real=0.45
    ),
    "heavy_1m": dict(
        docs=1_000_000, seed=12, exact=0.05, edits=0.20, template=0.01, shards=1, real=0.3
    ),
    "heavy_10m": dict(
        docs=10_000_000, seed=13, exact=0.05, edits=0.20, template=0.01, shards=2, real=0.3
    ),
    "english_200k": dict(
        docs=200_000, seed=21, exact=0.10, edits=0.15, template=0.0, shards=1, real=0.0, en=1.0
    ),
    "english_1m": dict(
        docs=1_000_000, seed=22, exact=0.10, edits=0.15, template=0.0, shards=2, real=0.0, en=1.0
    ),
}


def make_corpus(name: str) -> Path:
    """Write corpus ``name`` (shards generated in parallel, then joined) unless it exists."""
    spec = CORPORA[name]
    target = DATA / f"{name}.jsonl"
    if target.exists():
        return target
    DATA.mkdir(parents=True, exist_ok=True)
    per = spec["docs"] // spec["shards"]
    procs, parts = [], []
    for k in range(spec["shards"]):
        part = DATA / f"{name}.part{k}.jsonl"
        parts.append(part)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(HERE / "corpus.py"),
                    "--docs",
                    str(per),
                    "--seed",
                    str(spec["seed"] if spec["shards"] == 1 else spec["seed"] * 100 + k),
                    "--start",
                    str(k * per),
                    "--exact-rate",
                    str(spec["exact"]),
                    "--near-dup-rate",
                    str(spec["edits"]),
                    "--template-rate",
                    str(spec["template"]),
                    "--real-rate",
                    str(spec["real"]),
                    "--english-share",
                    str(spec.get("en", 0.5)),
                    "--chains",
                    "-o",
                    str(part),
                ]
            )
        )
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"corpus.py failed for {name}")
    tmp = target.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as src:
                while chunk := src.read(1 << 24):
                    out.write(chunk)
            part.unlink()
    os.replace(tmp, target)
    return target


def warm(path: Path) -> None:
    """Read ``path`` once, so that each command starts with as much of it in the page cache as
    fits (a spilling neardup run advises the kernel to drop the input pages it re-read)."""
    buffer = bytearray(1 << 24)
    with open(path, "rb", buffering=0) as fh:
        while fh.readinto(buffer):
            pass


def timed(command: list[str]) -> dict:
    """Run ``command`` under /usr/bin/time -v; wall seconds, peak RSS and its stderr."""
    started = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)[1])
    return {"wall": wall, "rss_gb": rss_kb / 1e6, "stderr": proc.stderr}


def summary_figures(stderr: str) -> dict[str, str]:
    """The rows of neardup's end-of-run summary, by name."""
    rows = {}
    for line in stderr.splitlines():
        m = re.match(r"^([a-zA-Z][\w :+/,.-]*?)\s{2,}([\d,.]+)$", line.strip())
        if m:
            rows[m[1]] = m[2]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=["heavy_200k"], choices=sorted(CORPORA))
    parser.add_argument("--make", action="store_true", help="generate missing corpora")
    parser.add_argument("--peers", action="store_true", help="also run the rensa script")
    parser.add_argument("--runs", type=int, default=1, help="runs of each command (median)")
    parser.add_argument("--keep-data", action="store_true", help="keep heavy_10m after the run")
    parser.add_argument("--neardup-args", default="", help="extra options for neardup dedup")
    parser.add_argument(
        "--baseline-args",
        default=None,
        help="also run neardup dedup with these options in the same run (e.g. the settings "
        "before a change: --scheme classic)",
    )
    args = parser.parse_args()

    out_dir = DATA / "scale-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        f"\n## {time.strftime('%Y-%m-%d %H:%M')} — {platform.machine()}, "
        f"{os.cpu_count()} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB\n",
        "| corpus | command | docs | MB | wall s | peak RSS GB | MB/s | docs/s | stages |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    neardup = str(Path(sys.executable).with_name("neardup"))
    for name in args.corpus:
        corpus = make_corpus(name) if args.make else DATA / f"{name}.jsonl"
        if not corpus.exists():
            raise SystemExit(f"{corpus} is missing: run with --make")
        mb = corpus.stat().st_size / 1e6
        docs = sum(1 for _ in open(corpus, "rb"))
        dedup = [
            neardup,
            "dedup",
            str(corpus),
            "-o",
            str(out_dir / "groups.tsv"),
            "--pairs-out",
            str(out_dir / "pairs.tsv"),
            "--time-field",
            "ts",
            *args.neardup_args.split(),
        ]
        commands = {"neardup dedup (defaults)": dedup}
        if args.baseline_args is not None:
            commands[f"neardup dedup {args.baseline_args}"] = dedup + args.baseline_args.split()
        if args.peers:
            commands["rensa script"] = [
                str(PEER_PYTHON),
                str(HERE / "rensa_dedup.py"),
                str(corpus),
                "-o",
                str(out_dir / "rensa.tsv"),
            ]
        walls = {}
        for label, command in commands.items():
            runs = []
            for _ in range(args.runs):
                warm(corpus)
                runs.append(timed(command))
            runs.sort(key=lambda r: r["wall"])
            run = runs[len(runs) // 2]
            walls[label] = run["wall"]
            figures = summary_figures(run["stderr"]) if label.startswith("neardup") else {}
            stages = "; ".join(
                f"{k.removeprefix('seconds: ')} {v}"
                for k, v in figures.items()
                if k.startswith("seconds: ")
            ) + (
                f"; spilled {figures.get('spilled MB', '0')} MB; re-read "
                f"{figures.get('documents re-read', '0')} docs; verified in "
                f"{figures.get('verification chunks', '0')} chunks"
                if figures
                else ""
            )
            lines.append(
                f"| {name} | {label} | {docs:,} | {mb:,.0f} | {run['wall']:.1f} | "
                f"{run['rss_gb']:.2f} | {mb / run['wall']:.0f} | "
                f"{docs / run['wall']:,.0f} | {stages} |"
            )
            print(lines[-1], flush=True)
        for label, wall in walls.items():
            if label != "neardup dedup (defaults)":
                ratio = wall / walls["neardup dedup (defaults)"]
                lines.append(f"| {name} | {label} ÷ defaults | | | **{ratio:.2f}×** | | | | |")
        if name == "heavy_10m" and not args.keep_data:
            corpus.unlink()
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write(text)
    print(text)
    print(json.dumps({"results": str(RESULTS)}))


if __name__ == "__main__":
    main()
