"""Fingerprinting throughput: neardup SimHash / MinHash against peer libraries, same documents.

Every measurement runs in its own subprocess (a fresh interpreter: clean peak RSS, and the peers'
``simhash`` packages cannot clash). A worker loads the documents, warms up on the first 200 (numba
kernels load from their cache; the peers' imports), then times text → signature for all of them,
best of ``--repeat`` runs. All timings include tokenising and normalisation.

* neardup: ``neardup.api.fingerprint(texts, method=method, shingle="word:3",
  num_perm=128, workers=N)`` — Unicode normalisation, word 3-gram XXH64 features, SimHash (64 bit,
  distinct shingles) or MinHash-128 (uint32), with 1 worker and with all cores.
* peers (``benchmarks/.peers``, see ``setup_peers.sh``) get the same word 3-grams, made in Python
  the simple fair way: ``words = text.lower().split()``, 3-grams joined by one space:

  - datasketch ``MinHash(num_perm=128)``: ``update_batch`` over the shingles' UTF-8 bytes; the
    permutations are built once and passed to every MinHash (building them per document would
    cost more than hashing);
  - rensa ``RMinHash(num_perm=128, seed=1)``: ``update`` with the shingle strings;
  - simhash (1e0ng) ``Simhash(shingles)`` (its default MD5-based feature hash);
  - simhash-pybind ``simhash.compute(hashes)``, with the 64-bit shingle hashes computed by
    ``xxhash.xxh64_intdigest`` per shingle (the same XXH64 neardup uses; Python's ``hash`` is
    salted per process, so it is no use for fingerprints that are stored).

Peers run on the first ``--peer-docs`` documents (default 20,000); neardup is measured on that
subset too, and the ratio column compares the two on the same documents (1 worker each).

Usage:
    python benchmarks/bench_fingerprint.py --corpus benchmarks/.data/corpus_100k.jsonl
Writes ``benchmarks/results/fingerprint.md`` (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / ".peers"
PEER_PYTHON = PEERS / "venv" / "bin" / "python"
PYBIND_DIR = PEERS / "simhash_pybind"
DEFAULT_CORPUS = HERE / ".data" / "corpus_100k.jsonl"
DEFAULT_OUT = HERE / "results" / "fingerprint.md"
WARM_DOCS = 200
LENGTH_BINS = ((50, 100), (100, 200), (200, 400), (400, 801))


# ---------------------------------------------------------------------------------------------
# Worker side: one tool, one method, one set of documents; prints one JSON line.


def load_texts(path: str, docs: int, words: tuple[int, int] | None = None) -> list[str]:
    """The first ``docs`` texts of a JSONL corpus (only those with a word count in ``words``)."""
    texts: list[str] = []
    seen = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if seen >= docs:
                break
            seen += 1
            text = json.loads(line)["text"]
            if words is None or words[0] <= len(text.split()) < words[1]:
                texts.append(text)
    return texts


def word_shingles(text: str) -> list[str]:
    """Word 3-grams as the peers get them: lowercase, split on whitespace, join by one space."""
    words = text.lower().split()
    if len(words) < 3:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]


def make_runner(tool: str, method: str, workers: int):
    """A function texts → signatures for one tool (imports happen here, before timing)."""
    if tool == "neardup":
        from neardup.api import fingerprint as fingerprint_texts

        def run(texts):
            return fingerprint_texts(
                texts, method=method, shingle="word:3", num_perm=128, workers=workers
            )

        return run
    if tool == "datasketch":
        from datasketch import MinHash

        permutations = MinHash(num_perm=128, seed=1).permutations

        def run(texts):
            out = []
            for text in texts:
                m = MinHash(num_perm=128, seed=1, permutations=permutations, scheme="affine32")
                m.update_batch([s.encode("utf-8") for s in word_shingles(text)])
                out.append(m.digest())
            return out

        return run
    if tool == "rensa":
        from rensa import RMinHash

        def run(texts):
            out = []
            for text in texts:
                m = RMinHash(num_perm=128, seed=1)
                m.update(word_shingles(text))
                out.append(m.digest())
            return out

        return run
    if tool == "simhash-1e0ng":
        from simhash import Simhash

        def run(texts):
            return [Simhash(word_shingles(text)).value for text in texts]

        return run
    if tool == "simhash-pybind":
        sys.path.insert(0, str(PYBIND_DIR))
        import simhash
        import xxhash

        if not hasattr(simhash, "compute"):
            raise RuntimeError(f"simhash-pybind not found in {PYBIND_DIR}; run setup_peers.sh")
        xxh = xxhash.xxh64_intdigest

        def run(texts):
            return [
                simhash.compute([xxh(s.encode("utf-8")) for s in word_shingles(text)])
                for text in texts
            ]

        return run
    raise ValueError(f"unknown tool {tool!r}")


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (pool workers), user + system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(spec: dict) -> dict:
    words = tuple(spec["words"]) if spec.get("words") else None
    texts = load_texts(spec["corpus"], spec["docs"], words)
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    run = make_runner(spec["tool"], spec["method"], spec["workers"])
    run(texts[:WARM_DOCS])
    rss_loaded = current_rss_mb()
    best = best_cpu = float("inf")
    runs = 0
    started = time.perf_counter()
    # Best of `repeat` runs, but stop repeating once `budget` seconds are spent.
    while runs < spec["repeat"] and (runs == 0 or time.perf_counter() - started < spec["budget"]):
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        run(texts)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, cpu_seconds() - c0)
        runs += 1
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        **spec,
        "n": len(texts),
        "bytes": nbytes,
        "seconds": best,
        "cpu_seconds": best_cpu,
        "runs": runs,
        "rss_loaded_mb": rss_loaded,
        "peak_rss_mb": self_peak,
        "child_peak_rss_mb": child_peak,
    }


# ---------------------------------------------------------------------------------------------
# Orchestrator side.


def measure(python: str, spec: dict, env: dict | None = None, timeout: float = 3600) -> dict | None:
    cmd = [python, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    label = f"{spec['tool']} {spec['method']} workers={spec['workers']} docs={spec['docs']}"
    if spec.get("words"):
        label += f" words={spec['words'][0]}-{spec['words'][1] - 1}"
    print(f"  running {label} ...", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        print(f"  FAILED {label}:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"    {result['n'] / result['seconds']:,.0f} docs/s "
        f"({result['runs']} run(s), best {result['seconds']:.2f} s)",
        file=sys.stderr,
    )
    return result


def rate(r: dict) -> float:
    return r["n"] / r["seconds"]


def cpu_rate(r: dict) -> float:
    return r["n"] / r["cpu_seconds"]


def mbps(r: dict) -> float:
    return r["bytes"] / r["seconds"] / 1e6


def rss_text(r: dict) -> str:
    if r["workers"] > 1 and r["child_peak_rss_mb"] > 0:
        return f"{r['peak_rss_mb']:.0f} + {r['workers']}×{r['child_peak_rss_mb']:.0f}"
    return f"{r['peak_rss_mb']:.0f}"


def versions(python: str, extra_path: Path | None = None) -> dict[str, str]:
    code = (
        "import importlib.metadata as md, json, sys\n"
        + (f"sys.path.insert(0, {str(extra_path)!r})\n" if extra_path else "")
        + "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = md.version(n)\n"
        "    except md.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    names = ["neardup", "numpy", "numba", "datasketch", "rensa", "simhash", "xxhash"]
    if extra_path:
        names = ["simhash-pybind"]
    proc = subprocess.run([python, "-c", code, *names], capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(results: dict, args: argparse.Namespace, info: dict) -> str:
    main, peers, bins, scaling = (results[k] for k in ("main", "peers", "bins", "scaling"))
    lines = [
        "# Fingerprint throughput",
        "",
        f"Corpus `{Path(args.corpus).name}`: {info['corpus_docs']:,} documents, "
        f"{info['corpus_mb']:.1f} MB of UTF-8 text (synthetic, half English-like, half "
        "Korean-like, 50–800 words; `benchmarks/corpus.py`). Word 3-gram shingles everywhere; "
        "every time includes tokenising and normalisation. Best of up to "
        f"{args.repeat} runs per row. Peak RSS is the measuring process's (documents loaded "
        "included; the workers are threads of that process).",
        "",
        f"Machine: {info['cpu']}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in sorted(info["versions"].items()))
        + f". Load average (1 min) {info['load'][0]:.1f} at the start, {info['load'][1]:.1f} at "
        "the end: above 0 means other processes shared the cores, and every rate is lower.",
        "",
        "## neardup and peers",
        "",
        "| tool | method | workers | docs | docs/s | MB/s | peak RSS MB | neardup ÷ peer "
        "| docs/CPU-s | ÷ peer (CPU) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    reference = {}
    for r in main:
        if r["docs"] == args.peer_docs and r["workers"] == 1:
            reference[r["method"]] = r
    for r in main + peers:
        ratio = cpu_ratio = "—"
        if r["tool"] != "neardup" and r["method"] in reference:
            ratio = f"{rate(reference[r['method']]) / rate(r):.1f}×"
            cpu_ratio = f"{cpu_rate(reference[r['method']]) / cpu_rate(r):.1f}×"
        name = r["tool"]
        method = "SimHash-64" if r["method"] == "simhash" else "MinHash-128"
        lines.append(
            f"| {name} | {method} | {r['workers']} | {r['n']:,} | {rate(r):,.0f} | "
            f"{mbps(r):.1f} | {rss_text(r)} | {ratio} | {cpu_rate(r):,.0f} | {cpu_ratio} |"
        )
    lines += [
        "",
        f"Peers ran on the first {args.peer_docs:,} documents; the ratio divides neardup's "
        "1-worker docs/s on those same documents by the peer's. docs/CPU-s counts CPU time "
        "(user + system, workers included) instead of wall time: on a shared machine it moves "
        "less with the other processes' load. simhash-pybind is given 64-bit shingle hashes "
        "from `xxhash.xxh64_intdigest` (one call per shingle).",
        "",
        "## neardup by document length (1 worker)",
        "",
        "| words | method | docs | docs/s | MB/s | µs/doc |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in bins:
        lo, hi = r["words"]
        method = "SimHash-64" if r["method"] == "simhash" else "MinHash-128"
        lines.append(
            f"| {lo}–{hi - 1} | {method} | {r['n']:,} | {rate(r):,.0f} | {mbps(r):.1f} | "
            f"{1e6 / rate(r):.0f} |"
        )
    lines += [
        "",
        "## neardup by workers",
        "",
        "| method | workers | docs | docs/s | MB/s | speed-up |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    single = {r["method"]: rate(r) for r in scaling if r["workers"] == 1}
    for r in scaling:
        method = "SimHash-64" if r["method"] == "simhash" else "MinHash-128"
        lines.append(
            f"| {method} | {r['workers']} | {r['n']:,} | {rate(r):,.0f} | {mbps(r):.1f} | "
            f"{rate(r) / single[r['method']]:.2f}× |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="JSONL corpus (corpus.py)")
    ap.add_argument("--docs", type=int, default=100_000, help="documents for neardup rows")
    ap.add_argument("--peer-docs", type=int, default=20_000, help="documents for peer rows")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument(
        "--budget", type=float, default=60.0, help="stop repeating a row after this many seconds"
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="the 'all cores' worker count (default: all cores); the scaling table "
        "has 1, 2 and this many",
    )
    ap.add_argument("--skip-peers", action="store_true", help="neardup rows only")
    ap.add_argument(
        "--peers",
        default="datasketch,rensa,simhash-1e0ng,simhash-pybind",
        help="comma-separated peers to run",
    )
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="markdown file to write")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if not Path(args.corpus).is_file():
        ap.error(f"corpus {args.corpus} not found; make it with benchmarks/corpus.py")

    def spec(tool, method, workers=1, docs=args.docs, words=None):
        return {
            "tool": tool,
            "method": method,
            "workers": workers,
            "docs": docs,
            "words": words,
            "corpus": args.corpus,
            "repeat": args.repeat,
            "budget": args.budget,
        }

    here = sys.executable
    load_start = os.getloadavg()[0]
    results: dict[str, list] = {"main": [], "peers": [], "bins": [], "scaling": []}
    print("neardup:", file=sys.stderr)
    counts = sorted({1, min(2, args.workers), args.workers})
    for method in ("simhash", "minhash"):
        for workers in counts:
            r = measure(here, spec("neardup", method, workers))
            if r:
                results["scaling"].append(r)
                if workers in (1, args.workers):
                    results["main"].append(r)
        if not args.skip_peers and args.peer_docs != args.docs:
            r = measure(here, spec("neardup", method, 1, args.peer_docs))
            if r:
                results["main"].append(r)
    if not args.skip_peers:
        if not PEER_PYTHON.exists():
            print(
                f"no peers environment at {PEERS}; run benchmarks/setup_peers.sh", file=sys.stderr
            )
        else:
            print("peers:", file=sys.stderr)
            methods = {
                "datasketch": "minhash",
                "rensa": "minhash",
                "simhash-1e0ng": "simhash",
                "simhash-pybind": "simhash",
            }
            for tool in args.peers.split(","):
                r = measure(str(PEER_PYTHON), spec(tool, methods[tool], 1, args.peer_docs))
                if r:
                    results["peers"].append(r)
    print("by document length:", file=sys.stderr)
    for method in ("simhash", "minhash"):
        for lo, hi in LENGTH_BINS:
            r = measure(here, spec("neardup", method, 1, args.docs, [lo, hi]))
            if r:
                results["bins"].append(r)

    texts = load_texts(args.corpus, args.docs)
    info = {
        "corpus_docs": len(texts),
        "corpus_mb": sum(len(t.encode("utf-8")) for t in texts) / 1e6,
        "cpu": cpu_model(),
        "versions": versions(here),
        "load": (load_start, os.getloadavg()[0]),
    }
    if not args.skip_peers and PEER_PYTHON.exists():
        info["versions"].update(
            {k: v for k, v in versions(str(PEER_PYTHON)).items() if k not in info["versions"]}
        )
        info["versions"].update(versions(str(PEER_PYTHON), PYBIND_DIR))
    del texts
    text = markdown(results, args, info)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
