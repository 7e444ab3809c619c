"""Benchmark the persistent index by method: MinHash (``dedup``'s default) beside SimHash, on texts.

For each size N and each method, on the documents of a benchmark corpus (``corpus.py``: English-
and Korean-like texts of 50-800 words with planted light edits and one hot template):

- build: ``NearDupIndex.build`` from the first N texts (signatures, groups, SQLite, tables);
- disk bytes per document (the whole index directory);
- open time and resident memory per document, in a fresh process (open, warm-up, 200 queries);
- query by text, one at a time in process: p50 / p99 / max over --queries probes, half light
  edits of stored documents (two words replaced), half unseen documents, and the p99 of the
  thread's CPU time per query (what the wall time is on idle cores); the share of the edits
  answered ``duplicate`` is the recall on light edits;
- adds: batches of 1,000 unseen documents (--batches, default 100 from 100,000 documents, else
  2), each batch one durable transaction
  (``synchronous=normal``), and 300 single adds (one transaction each);
- at the largest size, ``POST /v1/query`` by text against ``neardup serve`` over --http
  keep-alive connections (the client of ``load_service.py``).

    python benchmarks/bench_index_methods.py --sizes 20000,200000 --out results/index_methods.md

Writes a Markdown report (--out) and the raw figures as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_index import machine, percentiles, publish, rss_mb  # noqa: E402
from load_service import free_port, run_load, wait_ready  # noqa: E402

METHODS = ("simhash", "minhash")


def read_corpus(path: Path, count: int) -> tuple[list[str], list[str], np.ndarray]:
    """The first ``count`` documents of a corpus JSONL: ids, texts, timestamps (µs)."""
    ids, texts, stamps = [], [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            ids.append(doc["id"])
            texts.append(doc["text"])
            stamps.append(int(doc.get("ts", 0)) * 1_000_000)
            if len(ids) == count:
                break
    if len(ids) < count:
        raise ValueError(f"{path} holds {len(ids)} documents, {count} are needed")
    return ids, texts, np.array(stamps, np.int64)


def light_edit(text: str, rng: np.random.Generator) -> str:
    """Two words of ``text`` replaced by other words of it (a re-crawl with small changes)."""
    words = text.split()
    for _ in range(2):
        words[int(rng.integers(len(words)))] = words[int(rng.integers(len(words)))] + "x"
    return " ".join(words)


def open_probe(path: str, method: str, probe_texts: list[str]) -> dict:
    """Run in a fresh process: open time and resident memory after warm-up and queries (the
    baseline holds the compiled kernels, loaded first through a tiny index of the same
    kind)."""
    import neardup.index.store as store

    with tempfile.TemporaryDirectory() as tmp:
        with store.NearDupIndex.create(Path(tmp) / "tiny", method=method) as tiny:
            tiny.add_many(["a", "b"], probe_texts[:2])
            tiny.warm_up()
            tiny.query(probe_texts[2])
    base = rss_mb()
    t0 = time.perf_counter()
    index = store.NearDupIndex(path, readonly=True)
    opened = time.perf_counter() - t0
    index.warm_up()
    for text in probe_texts:
        index.query(text)
    return {
        "open_seconds": opened,
        "rss_bytes": (rss_mb() - base) * 1e6,
        "memory_bytes": index.stats()["memory_bytes"],
        "source": index.stats()["opened_from"],
    }


def add_batches(n: int, batches: int | None) -> int:
    """Batches of 1,000 adds at ``n`` stored documents: ``batches``, or by default 100 from
    100,000 documents on, else 2."""
    if batches is not None:
        return batches
    return 100 if n >= 100_000 else 2


def documents_needed(n: int, queries: int, batches: int) -> int:
    """Documents a run at ``n`` reads from the corpus: the stored ones, the unseen probes, the
    batched adds and the 300 single adds."""
    return n + queries - queries // 2 + 1000 * batches + 300


def bench(
    method: str,
    n: int,
    corpus: Path,
    queries: int,
    seed: int,
    workdir: Path,
    http: int = 0,
    batches: int = 100,
) -> dict:
    from neardup.index.store import NearDupIndex

    ids, texts, stamps = read_corpus(corpus, documents_needed(n, queries, batches))
    path = workdir / f"{method}-{n}"
    t0 = time.perf_counter()
    NearDupIndex.build(
        path, ids[:n], texts=texts[:n], timestamps_us=stamps[:n], method=method, workers=None
    ).close()
    build = time.perf_counter() - t0
    disk = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    rng = np.random.default_rng(seed)
    sources = rng.integers(0, n, queries // 2)
    edits = [light_edit(texts[i], rng) for i in sources]
    unseen = texts[n : n + queries - len(edits)]
    probes = edits + unseen
    order = rng.permutation(len(probes))
    # The fresh process needs the kernels compiled (cached on disk by numba) and the page cache
    # warm, as after a restart.
    opened = json.loads(
        subprocess.run(
            [sys.executable, __file__, "--open-probe", str(path)],
            input=json.dumps({"method": method, "texts": [probes[i] for i in order[:200]]}),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    out: dict = {
        "method": method,
        "n": n,
        "build_seconds": round(build, 1),
        "disk_bytes_per_document": round(disk / n, 1),
        "open_seconds": round(opened["open_seconds"], 3),
        "opened_from": opened["source"],
        "rss_bytes_per_document": round(opened["rss_bytes"] / n, 1),
        "array_bytes_per_document": round(opened["memory_bytes"] / n, 1),
    }
    with NearDupIndex(path) as index:
        out["settings"] = {
            k: v
            for k, v in index.stats().items()
            if k in ("shingle", "hamming_k", "bands", "rows", "verify")
        }
        index.warm_up()
        lat, cpu, found = [], [], 0
        for i in order:
            t1, c1 = time.perf_counter(), time.thread_time()
            r = index.query(probes[i])
            lat.append(time.perf_counter() - t1)
            cpu.append(time.thread_time() - c1)
            found += i < len(edits) and r.status == "duplicate"
        out["query_text"] = percentiles(lat)
        # On shared cores the wall time also counts waiting for a core; the thread's CPU time
        # does not.
        out["query_text_cpu"] = percentiles(cpu)
        out["light_edit_recall"] = round(found / len(edits), 4)
        start = n + len(unseen)
        t1 = time.perf_counter()
        for b in range(batches):
            s = start + 1000 * b
            index.add_many(
                ids[s : s + 1000],
                texts[s : s + 1000],
                timestamps=(stamps[s : s + 1000] // 1_000_000).tolist(),
            )
        out["adds_batched_per_second"] = round(batches * 1000 / (time.perf_counter() - t1))
        out["adds_batched"] = batches * 1000
        s = start + 1000 * batches
        lat = []
        t1 = time.perf_counter()
        for i in range(s, s + 300):
            t2 = time.perf_counter()
            index.add(ids[i], texts[i])
            lat.append(time.perf_counter() - t2)
        out["adds_single_per_second"] = round(300 / (time.perf_counter() - t1))
        out["add_single"] = percentiles(lat)
    if http:
        out["http_query"] = bench_http(path, [probes[i] for i in order], http)
    return out


def bench_http(path: Path, probes: list[str], concurrency: int) -> dict:
    """``POST /v1/query`` by text against ``neardup serve`` on loopback (a subprocess), over
    ``concurrency`` keep-alive connections (the client of ``load_service.py``): requests per
    second and latency percentiles."""
    import asyncio
    import signal

    port = free_port()
    code = (
        "import sys; from neardup.index.service import serve; "
        "serve(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]), log_level='error')"
    )
    server = subprocess.Popen([sys.executable, "-c", code, str(path), str(port)])
    bodies = [json.dumps({"text": t}).encode() for t in probes]
    try:
        wait_ready(port, server, timeout=120)
        deadline = time.monotonic() + 300
        asyncio.run(run_load(port, bodies[:200], "/v1/query", concurrency, None, deadline))
        t0 = time.perf_counter()
        lat, errors = asyncio.run(
            run_load(port, bodies[200:], "/v1/query", concurrency, None, deadline)
        )
        elapsed = time.perf_counter() - t0
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(60)
    return {
        "requests": len(lat),
        "errors": errors,
        "concurrency": concurrency,
        "per_second": round(len(lat) / elapsed, 1),
        **percentiles(lat),
    }


def markdown(results: dict) -> str:
    info = results["machine"]
    lines = [
        "# Index by method: MinHash beside SimHash",
        "",
        f"Machine: {info['cpu']}, {info['cpus']} CPUs, Python {info['python']}. Command: "
        f"`{results['command']}`. Corpus: `{results['corpus']}` (texts of 50-800 words).",
        "",
        "| method | N | build s | disk B/doc | RSS B/doc | arrays B/doc | open s | query p50 ms "
        "| p99 ms | max ms | p99 CPU ms | light-edit recall | batched adds/s | single adds/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        q = r["query_text"]
        lines.append(
            f"| {r['method']} | {r['n']:,} | {r['build_seconds']} | "
            f"{r['disk_bytes_per_document']} | {r['rss_bytes_per_document']} | "
            f"{r['array_bytes_per_document']} | {r['open_seconds']} | {q['p50_us'] / 1e3:.2f} | "
            f"{q['p99_us'] / 1e3:.2f} | {q['max_us'] / 1e3:.2f} | "
            f"{r['query_text_cpu']['p99_us'] / 1e3:.2f} | {r['light_edit_recall']} | "
            f"{r['adds_batched_per_second']:,} | {r['adds_single_per_second']:,} |"
        )
    http = [r for r in results["runs"] if r.get("http_query")]
    if http:
        lines += [
            "",
            "HTTP `POST /v1/query` by text, the same probes, client and server on the same cores:",
            "",
            "| method | N | connections | queries/s | p50 ms | p99 ms |",
            "|---|---|---|---|---|---|",
        ]
        for r in http:
            h = r["http_query"]
            lines.append(
                f"| {r['method']} | {r['n']:,} | {h['concurrency']} | {h['per_second']} "
                f"| {h['p50_us'] / 1e3:.2f} | {h['p99_us'] / 1e3:.2f} |"
            )
    lines += [
        "",
        "Settings: " + "; ".join(f"{r['method']} {r['settings']}" for r in results["runs"][:2]),
        "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="20000", help="Stored documents, comma-separated.")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument(
        "--corpus", default=None, help="Corpus JSONL (default: generated by corpus.py, --seed)."
    )
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument(
        "--http",
        type=int,
        default=16,
        metavar="CONNECTIONS",
        help="At the largest size, also query `neardup serve` over this many "
        "connections (0: skip).",
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=None,
        help="Batches of 1,000 adds (default: 100 from 100,000 documents on, else 2).",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=None, help="Markdown report.")
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--open-probe", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.open_probe:
        spec = json.loads(sys.stdin.read())
        print(json.dumps(open_probe(args.open_probe, spec["method"], spec["texts"])))
        return 0
    sizes = [int(x) for x in args.sizes.split(",") if x]
    tmp = tempfile.TemporaryDirectory(prefix="neardup-bench-") if args.workdir is None else None
    workdir = Path(args.workdir or tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = Path(args.corpus) if args.corpus else workdir / "corpus.jsonl"
    if not args.corpus:
        docs = max(documents_needed(n, args.queries, add_batches(n, args.batches)) for n in sizes)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "corpus.py"),
                "--docs",
                str(docs),
                "--seed",
                str(args.seed),
                "-o",
                str(corpus),
            ],
            check=True,
        )
    results: dict = {
        "machine": machine(),
        "corpus": args.corpus or "corpus.py (defaults)",
        "command": " ".join(
            ["python benchmarks/bench_index_methods.py"]
            + (argv if argv is not None else sys.argv[1:])
        ),
        "runs": [],
    }
    try:
        for n in sizes:
            for method in args.methods.split(","):
                r = bench(
                    method,
                    n,
                    corpus,
                    args.queries,
                    args.seed,
                    workdir,
                    args.http if n == max(sizes) else 0,
                    add_batches(n, args.batches),
                )
                print(json.dumps(r), file=sys.stderr)
                results["runs"].append(r)
    finally:
        if tmp is not None:
            tmp.cleanup()
    publish(markdown(results), results, args.out, args.json_out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
