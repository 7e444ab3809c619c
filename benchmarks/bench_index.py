"""Benchmark the persistent index: probe latency, adds, memory, open time, and peers.

Sections (each bounded in count; all data is synthetic and deterministic, --seed):

``tables``  the in-memory Manku tables alone (`PermutationTables`) at each --tables size:
            build seconds, bytes per fingerprint, single-probe latency p50/p99/max over
            --queries probes (half near-duplicates of stored fingerprints, half random), the
            pause of one delta merge.
``index``   the whole `NearDupIndex` (SQLite + tables) at --index N: build seconds, open time
            and resident memory per fingerprint measured in a fresh process, query latency by
            fingerprint and by text, add throughput (one transaction per add, synchronous
            normal and full; and batches of 1,000).
``peers``   at --peers N, insert and query of datasketch `MinHashLSH` and 1e0ng `simhash`
            `SimhashIndex`, run in their own virtualenv (benchmarks/.peers/venv, made by
            benchmarks/setup_peers.sh) in a subprocess, next to ours on the same data.

    python benchmarks/bench_index.py --tables 1000000,10000000 --index 1000000 --peers 100000
    python benchmarks/bench_index.py --index 10000000 --sections index

Writes a Markdown report (--out) and the raw figures as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PEERS_PYTHON = HERE / ".peers" / "venv" / "bin" / "python"


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def workload(n: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random fingerprints and ``queries`` probes: half copies of stored ones with 0..3
    bits flipped, half random."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    near = fps[rng.integers(0, n, queries // 2)].copy()
    for _ in range(3):
        flip = rng.random(near.size) < 0.6
        near[flip] ^= np.uint64(1) << rng.integers(0, 64, int(flip.sum())).astype(np.uint64)
    probes = np.concatenate([near, rng.integers(0, 2**64, queries - near.size, dtype=np.uint64)])
    rng.shuffle(probes)
    return fps, probes


def percentiles(seconds: list[float] | np.ndarray) -> dict:
    us = np.asarray(seconds) * 1e6
    return {
        "p50_us": round(float(np.percentile(us, 50)), 1),
        "p99_us": round(float(np.percentile(us, 99)), 1),
        "max_us": round(float(us.max()), 1),
    }


def words(rng: np.random.Generator, count: int) -> str:
    vocab = [f"w{i}" for i in range(5000)]
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), count))


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


def bench_tables(n: int, queries: int, seed: int, k: int) -> dict:
    from neardup.index.tables import PermutationTables

    fps, probes = workload(n, queries, seed)
    before = rss_mb()
    started = time.perf_counter()
    tables = PermutationTables(k, positions=np.arange(1, n + 1), fingerprints=fps)
    build = time.perf_counter() - started
    after = rss_mb()
    tables.probe(probes[:1])
    lat = []
    found = 0
    for q in probes:
        one = q.reshape(1)
        t0 = time.perf_counter()
        _, pos, _ = tables.probe(one)
        lat.append(time.perf_counter() - t0)
        found += pos.size > 0
    # One merge at this size: the delta at its limit.
    rng = np.random.default_rng(seed + 7)
    extra = rng.integers(0, 2**64, tables.delta_limit, dtype=np.uint64)
    tables.add(np.arange(n + 1, n + 1 + extra.size), extra)
    t0 = time.perf_counter()
    tables.merge()
    merge = time.perf_counter() - t0
    # Amortised single adds (delta appends plus the merges they trigger).
    adds = min(200_000, 4 * tables.delta_limit)
    more = rng.integers(0, 2**64, adds, dtype=np.uint64)
    base = n + 1 + extra.size
    t0 = time.perf_counter()
    for i in range(adds):
        tables.add(np.array([base + i]), more[i : i + 1])
    add_seconds = time.perf_counter() - t0
    return {
        "n": n,
        "hamming_k": k,
        "tables": tables.plan.num_tables,
        "prefix_bits": tables.plan.prefix_bits,
        "build_seconds": round(build, 2),
        "bytes_per_fingerprint": round(8 * tables.plan.num_tables + 9, 1),
        "array_bytes_per_fingerprint": round(tables.nbytes / tables.live, 1),
        "rss_bytes_per_fingerprint": round((after - before) * 1e6 / n, 1),
        "queries": len(lat),
        "queries_with_match": int(found),
        **percentiles(lat),
        "merge_seconds": round(merge, 3),
        "delta_limit": tables.delta_limit,
        "single_adds": adds,
        "adds_per_second": round(adds / add_seconds),
    }


def open_probe(path: str) -> dict:
    """Run in a fresh process: open time, first query, warm-up and resident memory."""
    import neardup.index as store

    # Load the compiled kernels first, so that the baseline holds them.
    store.PermutationTables(3).probe(np.zeros(1, np.uint64))
    base = rss_mb()
    t0 = time.perf_counter()
    index = store.NearDupIndex(path, readonly=True)
    opened = time.perf_counter() - t0
    t1 = time.perf_counter()
    index.query(fingerprint=1)
    first = time.perf_counter() - t1
    warm = index.warm_up()
    for q in range(2000):
        index.query(fingerprint=q * 0x9E3779B97F4A7C15 % 2**64)
    return {
        "open_seconds": opened,
        "first_query_seconds": first,
        "warm_up_seconds": warm,
        "rss_bytes": (rss_mb() - base) * 1e6,
        "documents": len(index),
        "source": index.stats()["opened_from"],
    }


def bench_index(n: int, queries: int, seed: int, k: int, workdir: Path) -> dict:
    from neardup.index.store import NearDupIndex

    fps, probes = workload(n, queries, seed)
    ids = [f"doc{i}" for i in range(n)]
    path = workdir / f"index-{n}"
    started = time.perf_counter()
    NearDupIndex.build(path, ids, fingerprints=fps, hamming_k=k).close()
    build = time.perf_counter() - started
    del ids
    disk = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    # Open time and memory in a fresh process (page cache warm, as after a restart).
    opened = json.loads(
        subprocess.run(
            [sys.executable, __file__, "--open-probe", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    out: dict = {
        "n": n,
        "hamming_k": k,
        "build_seconds": round(build, 1),
        "disk_bytes_per_fingerprint": round(disk / n, 1),
        "open_seconds": round(opened["open_seconds"], 3),
        "first_query_seconds": round(opened["first_query_seconds"], 3),
        "warm_up_seconds": round(opened["warm_up_seconds"], 3),
        "rss_bytes_per_fingerprint": round(opened["rss_bytes"] / n, 1),
        "opened_from": opened["source"],
    }
    with NearDupIndex(path) as index:
        index.warm_up()
        lat = []
        for q in probes:
            t0 = time.perf_counter()
            index.query(fingerprint=int(q))
            lat.append(time.perf_counter() - t0)
        out["query"] = percentiles(lat)
        rng = np.random.default_rng(seed + 3)
        texts = [words(rng, int(rng.integers(200, 600))) for _ in range(2000)]
        lat = []
        for t in texts:
            t0 = time.perf_counter()
            index.query(t)
            lat.append(time.perf_counter() - t0)
        out["query_text"] = percentiles(lat)
        out["text_words"] = "200..600"
        # Adds: one transaction each (the crawler's case), then batches of 1,000.
        new = rng.integers(0, 2**64, 200_000, dtype=np.uint64)
        single = 3000
        lat = []
        t0 = time.perf_counter()
        for i in range(single):
            t1 = time.perf_counter()
            index.add(f"new{i}", fingerprint=int(new[i]))
            lat.append(time.perf_counter() - t1)
        out["add_single"] = {
            "adds": single,
            "per_second": round(single / (time.perf_counter() - t0)),
            **percentiles(lat),
        }
        batches = 100
        t0 = time.perf_counter()
        for b in range(batches):
            s = single + b * 1000
            index.add_arrays([f"new{i}" for i in range(s, s + 1000)], new[s : s + 1000])
        out["add_batch_1000"] = {
            "documents": batches * 1000,
            "per_second": round(batches * 1000 / (time.perf_counter() - t0)),
        }
    with NearDupIndex(path, synchronous="full") as index:
        lat = []
        t0 = time.perf_counter()
        for i in range(500):
            t1 = time.perf_counter()
            index.add(f"full{i}", fingerprint=int(new[-1 - i]))
            lat.append(time.perf_counter() - t1)
        out["add_single_full_sync"] = {
            "adds": 500,
            "per_second": round(500 / (time.perf_counter() - t0)),
            **percentiles(lat),
        }
    return out


def peer_worker(spec: dict) -> dict:
    """Run in the peers' virtualenv: insert ``n`` items one by one into a peer index, then time
    single queries (half near-duplicates, half random)."""
    import importlib.metadata as md
    import logging

    logging.disable(logging.CRITICAL)
    n, nq, seed, k = spec["n"], spec["queries"], spec["seed"], spec["k"]
    rng = np.random.default_rng(seed)
    if spec["tool"] == "simhash":
        from simhash import Simhash, SimhashIndex

        fps = rng.integers(0, 2**64, n, dtype=np.uint64).tolist()
        items = [(str(i), Simhash(v)) for i, v in enumerate(fps)]
        rows = rng.integers(0, n, nq // 2)
        bits = rng.integers(0, 64, nq // 2)
        near = [fps[i] ^ (1 << int(b)) for i, b in zip(rows, bits)]
        far = rng.integers(0, 2**64, nq - nq // 2, dtype=np.uint64).tolist()
        probes = [Simhash(v) for v in near + far]
        name = f"simhash {md.version('simhash')} SimhashIndex (k={k})"
        index = SimhashIndex([], f=64, k=k)
        insert, query = index.add, index.get_near_dups
    else:
        from datasketch import MinHash, MinHashLSH

        num_perm = 128
        scheme = MinHash(num_perm=num_perm).scheme  # the scheme fresh MinHashes use

        def minhash(values: np.ndarray) -> MinHash:
            return MinHash(num_perm=num_perm, hashvalues=values.astype(np.uint32), scheme=scheme)

        hv = rng.integers(0, 2**32, (n, num_perm), dtype=np.uint64)
        items = [(str(i), minhash(hv[i])) for i in range(n)]
        probes = []
        for i in rng.integers(0, n, nq // 2):
            h = hv[i].copy()
            h[rng.integers(0, num_perm, 8)] = rng.integers(0, 2**32, 8, dtype=np.uint64)
            probes.append(minhash(h))
        probes += [
            minhash(rng.integers(0, 2**32, num_perm, dtype=np.uint64)) for _ in range(nq - nq // 2)
        ]
        name = f"datasketch {md.version('datasketch')} MinHashLSH (128 perm, threshold 0.8)"
        index = MinHashLSH(threshold=0.8, num_perm=num_perm)
        insert, query = index.insert, index.query
    base = rss_mb()
    t0 = time.perf_counter()
    for key, item in items:
        insert(key, item)
    seconds = time.perf_counter() - t0
    mem = (rss_mb() - base) * 1e6
    lat = []
    for probe in probes:
        t1 = time.perf_counter()
        query(probe)
        lat.append(time.perf_counter() - t1)
    return {
        "tool": name,
        "insert_per_second": round(n / seconds),
        "rss_bytes_per_item": round(mem / n, 1),
        **percentiles(lat),
    }


def ensure_peers() -> None:
    if not PEERS_PYTHON.exists():
        subprocess.run(["bash", str(HERE / "setup_peers.sh")], check=True)


def bench_peers(n: int, queries: int, seed: int, k: int, workdir: Path) -> list[dict]:
    from neardup.index import NearDupIndex, PermutationTables

    ensure_peers()
    rows = []
    for tool in ("simhash", "datasketch"):
        spec = json.dumps({"tool": tool, "n": n, "queries": queries, "seed": seed, "k": k})
        proc = subprocess.run(
            [str(PEERS_PYTHON), __file__, "--peer-worker", spec],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            rows.append({"tool": tool, "error": proc.stderr.strip().splitlines()[-1:]})
        else:
            rows.append(json.loads(proc.stdout))
    fps, probes = workload(n, queries, seed)
    # Ours, in memory only (like the peers): one add call per fingerprint. Every kernel is
    # loaded first, so that the timing counts adds only.
    warm = PermutationTables(k)
    warm.add(np.arange(1, 5001), fps[:5000])
    warm.merge()
    warm.probe(probes[:1])
    del warm
    tables = PermutationTables(k)
    tables.probe(probes[:1])
    t0 = time.perf_counter()
    for i in range(n):
        tables.add(np.array([i + 1]), fps[i : i + 1])
    insert = time.perf_counter() - t0
    lat = []
    for q in probes:
        t1 = time.perf_counter()
        tables.probe(q.reshape(1))
        lat.append(time.perf_counter() - t1)
    rows.append(
        {
            "tool": f"neardup PermutationTables (in memory, k={k})",
            "insert_per_second": round(n / insert),
            "rss_bytes_per_item": None,  # allocator reuse hides it: see array bytes
            "array_bytes_per_item": round(tables.nbytes / n, 1),
            **percentiles(lat),
        }
    )
    # Ours, durable: every add committed to SQLite before it returns.
    path = workdir / f"peers-{n}"
    with NearDupIndex.create(path, hamming_k=k) as index:
        t0 = time.perf_counter()
        single = min(n, 5000)
        for i in range(single):
            index.add(f"d{i}", fingerprint=int(fps[i]))
        per_single = single / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for s in range(single, n, 1000):
            index.add_arrays([f"d{i}" for i in range(s, min(n, s + 1000))], fps[s : s + 1000])
        per_batch = (n - single) / max(time.perf_counter() - t0, 1e-9)
        lat = []
        for q in probes:
            t1 = time.perf_counter()
            index.query(fingerprint=int(q))
            lat.append(time.perf_counter() - t1)
        rows.append(
            {
                "tool": f"neardup NearDupIndex (SQLite, durable adds, k={k})",
                "insert_per_second": round(per_single),
                "insert_batch_per_second": round(per_batch),
                "rss_bytes_per_item": None,
                **percentiles(lat),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def markdown(results: dict) -> str:
    info = results["machine"]
    lines = [
        "# Persistent index benchmark",
        "",
        f"Machine: {info['cpu']}, {info['cpus']} CPUs, Python {info['python']}, "
        f"numpy {info['numpy']}. Command: `{results['command']}`. Random 64-bit fingerprints; "
        "probes are half near-duplicates of stored fingerprints (0..3 bits flipped), half random.",
        "",
    ]
    if results.get("tables"):
        lines += [
            "## In-memory tables (one probe at a time)",
            "",
            "| N | k | tables | prefix bits | build s | bytes/fp (arrays) | RSS bytes/fp | "
            "probe p50 µs | p99 µs | max µs | merge pause s | single adds/s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in results["tables"]:
            lines.append(
                f"| {r['n']:,} | {r['hamming_k']} | {r['tables']} | {r['prefix_bits']} | "
                f"{r['build_seconds']} | {r['array_bytes_per_fingerprint']} | "
                f"{r['rss_bytes_per_fingerprint']} | {r['p50_us']} | {r['p99_us']} | "
                f"{r['max_us']} | "
                f"{r['merge_seconds']} | {r['adds_per_second']:,} |"
            )
        lines.append("")
    for r in results.get("index", []):
        q, qt = r["query"], r["query_text"]
        one, full, batch = r["add_single"], r["add_single_full_sync"], r["add_batch_1000"]
        rows = [
            ("build (SQLite + groups + tables)", f"{r['build_seconds']} s"),
            ("on disk", f"{r['disk_bytes_per_fingerprint']} bytes / fingerprint"),
            ("open (fresh process)", f"{r['open_seconds']} s ({r['opened_from']})"),
            ("first query after open", f"{r['first_query_seconds']} s"),
            ("warm-up (read the tables once)", f"{r['warm_up_seconds']} s"),
            ("resident memory after warm-up", f"{r['rss_bytes_per_fingerprint']} bytes / fp"),
            (
                "query by fingerprint p50 / p99 / max",
                f"{q['p50_us']} / {q['p99_us']} / {q['max_us']} µs",
            ),
            (
                f"query by text ({r['text_words']} words) p50 / p99",
                f"{qt['p50_us']} / {qt['p99_us']} µs",
            ),
            (
                "add, one transaction each (synchronous=normal)",
                f"{one['per_second']:,} / s (p50 {one['p50_us']} µs, p99 {one['p99_us']} µs)",
            ),
            (
                "add, one transaction each (synchronous=full)",
                f"{full['per_second']:,} / s (p50 {full['p50_us']} µs, p99 {full['p99_us']} µs)",
            ),
            ("add, batches of 1,000", f"{batch['per_second']:,} documents / s"),
        ]
        lines += [
            f"## NearDupIndex at {r['n']:,} fingerprints (k = {r['hamming_k']})",
            "",
            "| measure | value |",
            "|---|---|",
        ]
        lines += [f"| {name} | {value} |" for name, value in rows] + [""]
    if results.get("peers"):
        n = results["peers_n"]
        lines += [
            f"## Peers at {n:,} items (same run)",
            "",
            "| tool | inserts / s | batch inserts / s | query p50 µs | p99 µs "
            "| RSS bytes / item | array bytes / item |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in results["peers"]:
            if "error" in r:
                lines.append(f"| {r['tool']} | error: {r['error']} | | | | | |")
                continue
            lines.append(
                f"| {r['tool']} | {r['insert_per_second']:,} | "
                f"{r.get('insert_batch_per_second') or '–'} | "
                f"{r['p50_us']} | {r['p99_us']} | {r.get('rss_bytes_per_item') or '–'} | "
                f"{r.get('array_bytes_per_item') or '–'} |"
            )
        lines += [
            "",
            "MinHashLSH works on 128 MinHash values (a different, Jaccard-based signature);"
            " it is listed for its insert/query costs, not for equal answers.",
            "",
        ]
    return "\n".join(lines) + "\n"


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def publish(report: str, results: dict, out: str | None, json_out: str | None) -> None:
    """Print the Markdown report and write it (``--out``) and the raw figures (``--json``)."""
    print(report)
    if out:
        Path(out).write_text(report)
    if json_out:
        Path(json_out).write_text(json.dumps(results, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sections", default="tables,index,peers")
    parser.add_argument(
        "--tables", default="1000000,10000000", help="Sizes for the tables section."
    )
    parser.add_argument("--index", default="1000000", help="Sizes for the index section.")
    parser.add_argument("--peers", type=int, default=100_000, help="Items for the peers section.")
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("-k", "--hamming-k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--workdir", default=None, help="Where indexes are built (default: a temp dir)."
    )
    parser.add_argument("--out", default=None, help="Markdown report.")
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--peer-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--open-probe", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer_worker:
        print(json.dumps(peer_worker(json.loads(args.peer_worker))))
        return 0
    if args.open_probe:
        print(json.dumps(open_probe(args.open_probe)))
        return 0
    sections = set(args.sections.split(","))
    tmp = tempfile.TemporaryDirectory(prefix="neardup-bench-") if args.workdir is None else None
    workdir = Path(args.workdir or tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "machine": machine(),
        "command": " ".join(["python benchmarks/bench_index.py"] + (argv or sys.argv[1:])),
    }
    try:
        if "tables" in sections:
            results["tables"] = []
            for n in (int(x) for x in args.tables.split(",") if x):
                r = bench_tables(n, args.queries, args.seed, args.hamming_k)
                print(json.dumps(r), file=sys.stderr)
                results["tables"].append(r)
        if "index" in sections:
            results["index"] = []
            for n in (int(x) for x in args.index.split(",") if x):
                r = bench_index(n, args.queries, args.seed, args.hamming_k, workdir)
                print(json.dumps(r), file=sys.stderr)
                results["index"].append(r)
        if "peers" in sections:
            results["peers_n"] = args.peers
            results["peers"] = bench_peers(
                args.peers, min(args.queries, 5000), args.seed, args.hamming_k, workdir
            )
            print(json.dumps(results["peers"]), file=sys.stderr)
    finally:
        if tmp is not None:
            tmp.cleanup()
    publish(markdown(results), results, args.out, args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
