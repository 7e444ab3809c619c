"""Finding pairs and groups: speed and memory of neardup against peer libraries, same data.

Four sections, one run, every measurement in its own subprocess (a fresh interpreter: clean peak
RSS; the peers run in ``benchmarks/.peers``, see ``setup_peers.sh``), best of ``--repeat`` runs:

1. ``tables``: every pair within ``k`` = 3 bits among N random 64-bit fingerprints (N = 1M, 10M
   and 100M by default) with planted near copies (1 % of N, 1..k bits flipped) and exact copies
   (0.1 % of N), timed as ``neardup.candidates.tables.hamming_pairs`` (every pair of input
   indices, identical fingerprints included); and over a skewed set of the same size (one
   fingerprint 200,000 times, 50,000 within 2 bits of another, the rest random), timed as
   ``collapse_identical`` + ``distinct_hamming_pairs``, because the 2e10 index pairs of the
   repeated value cannot be written out by anyone. The sets are made by ``bench_tables.py``'s
   generators in a separate process and stored as ``.npy``, so generation costs no memory in the
   measuring process.
2. ``pybind``: simhash-pybind ``find_all(set_of_fingerprints, number_of_blocks, k)`` on the same
   1M fingerprints (the set built before the timing), against neardup's collapse + distinct
   search on the same values; its pairs are checked against neardup's, and the identical
   fingerprints it cannot report are counted.
3. ``lsh``: MinHash LSH on the 100k-document corpus (``corpus.py``): neardup
   (``signatures_parallel`` + ``find_groups``, what ``neardup.dedup`` runs; 1 worker) against
   datasketch ``MinHashLSH`` (threshold 0.8, 128 permutations; insert all, query all) and rensa
   ``RMinHashLSH`` (threshold 0.8, 128 permutations, 16 bands of 8 rows: its bands must divide
   ``num_perm``). The peers get word 3-grams made the simple fair way of ``bench_fingerprint.py``;
   every time includes shingling and MinHash. Each tool's pairs are closed into groups and scored
   against the corpus's planted truth (``corpus.py --truth``).
4. ``cli``: ``neardup dedup`` end to end (read JSONL, write GROUPS) on the corpus, defaults and
   ``--method simhash --shingle word:3 -k 3``, 1 and 2 workers; peak RSS of the process tree
   polled from ``/proc``.

Usage:
    python benchmarks/bench_dedup.py            # all sections, about 30 minutes on 2 cores
    python benchmarks/bench_dedup.py --sizes 1000000,10000000 --sections tables,pybind
Writes ``benchmarks/results/dedup.md`` (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench_fingerprint import (
    PEER_PYTHON,
    PYBIND_DIR,
    cpu_model,
    current_rss_mb,
    load_texts,
    versions,
    word_shingles,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_CORPUS = HERE / ".data" / "corpus_100k.jsonl"
DEFAULT_OUT = HERE / "results" / "dedup.md"
DEFAULT_WORKDIR = HERE / ".data" / "bench_dedup"
SECTIONS = ("tables", "pybind", "lsh", "cli")
NUM_PERM = 128
PEER_THRESHOLD = 0.8
RENSA_BANDS = 16
SKEW_IDENTICAL = 200_000
SKEW_CLUSTER = 50_000
# Bytes per fingerprint the search needs at most (input, radix sort, plan, output), measured at
# 10M and 100M (50-65) with margin; a size that would not fit in the available memory is skipped.
BYTES_PER_FINGERPRINT = 80
NEARDUP_CLI = Path(sys.executable).with_name("neardup")


# ---------------------------------------------------------------------------------------------
# Worker side: one measurement per process; prints one JSON line.


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM). Not ``ru_maxrss``: Linux carries that over
    from the parent through fork and exec, so a small worker of a big parent reports the
    parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(run, repeat: int, budget: float) -> tuple[float, int, object]:
    """Best wall time of up to ``repeat`` runs (no new run once ``budget`` seconds are spent)."""
    best, runs, out = float("inf"), 0, None
    started = time.perf_counter()
    while runs < repeat and (runs == 0 or time.perf_counter() - started < budget):
        t0 = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best, runs, out


def make_set(spec: dict) -> dict:
    """Write the fingerprints of one set to ``spec['path']`` (.npy)."""
    from bench_tables import random_set, skewed_set

    n, k, seed = spec["n"], spec["k"], spec["seed"]
    if spec["set"] == "random":
        exact = n // 1000
        base = random_set(n - exact, k, n // 100, seed)
        rng = np.random.default_rng(seed + 1)
        copies = base[rng.integers(0, base.size, size=exact)]
        fp = np.concatenate([base, copies])
        del base, copies
        fp = fp[rng.permutation(fp.size)]
    else:
        fp = skewed_set(n, SKEW_IDENTICAL, SKEW_CLUSTER, 0, seed)
    np.save(spec["path"], fp)
    return {"n": int(fp.size), "distinct": int(np.unique(fp).size)}


def tables_worker(spec: dict) -> dict:
    from neardup.candidates.plan import plan_tables
    from neardup.candidates.tables import (
        collapse_identical,
        distinct_hamming_pairs,
        hamming_pairs,
    )

    k = spec["k"]
    warm = np.random.default_rng(1).integers(0, 2**64, size=4000, dtype=np.uint64)
    hamming_pairs(warm, k, max_group=64)
    distinct_hamming_pairs(np.unique(warm), k, max_group=64)
    fp = np.load(spec["path"])
    rss_before = current_rss_mb()

    if spec["mode"] == "pairs":

        def run():
            return hamming_pairs(fp, k)
    else:

        def run():
            values, _, counts = collapse_identical(fp)
            a, b, _ = distinct_hamming_pairs(values, k)
            return values, counts, a, b

    seconds, runs, out = best_of(run, spec["repeat"], spec["budget"])
    peak = peak_rss_mb()
    result = {
        **spec,
        "seconds": seconds,
        "runs": runs,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak,
        "input_mb": fp.nbytes / 2**20,
    }
    if spec["mode"] == "pairs":
        i, _j, dist = out
        result.update(pairs=int(i.size), identical_pairs=int(np.count_nonzero(dist == 0)))
        distinct = np.unique(fp).size
    else:
        values, counts, a, b = out
        distinct = values.size
        result.update(
            distinct_pairs=int(a.size),
            index_pairs=int((counts[a] * counts[b]).sum() + (counts * (counts - 1) // 2).sum()),
            largest_bucket=int(counts.max()),
        )
    plan = plan_tables(int(distinct), k)
    result.update(
        distinct=int(distinct),
        plan=f"B={len(plan.blocks)}, c={plan.prefix_blocks}, "
        f"{plan.num_tables} tables, {plan.prefix_bits}-bit prefixes",
    )
    return result


def pybind_worker(spec: dict) -> dict:
    sys.path.insert(0, str(PYBIND_DIR))
    import simhash

    if not hasattr(simhash, "find_all"):
        raise RuntimeError(f"simhash-pybind not found in {PYBIND_DIR}; run setup_peers.sh")
    fp = np.load(spec["path"])
    values = set(fp.tolist())  # its input type; built before the timing
    del fp
    rss_before = current_rss_mb()
    warm = set(range(1000))
    simhash.find_all(warm, spec["blocks"], spec["k"])

    def run():
        return simhash.find_all(values, spec["blocks"], spec["k"])

    seconds, runs, out = best_of(run, spec["repeat"], spec["budget"])
    peak = peak_rss_mb()
    pairs = np.array(sorted((min(a, b), max(a, b)) for a, b in out), dtype=np.uint64).reshape(-1, 2)
    np.save(spec["pairs_out"], pairs)
    return {
        **spec,
        "seconds": seconds,
        "runs": runs,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak,
        "values": len(values),
        "pairs": int(pairs.shape[0]),
        "self_pairs": int(np.count_nonzero(pairs[:, 0] == pairs[:, 1])) if pairs.size else 0,
    }


def _pairs_from_lists(lists, n: int) -> np.ndarray:
    """Distinct unordered pairs (as i·n + j, i < j) from per-document candidate lists."""
    keys = set()
    for i, found in enumerate(lists):
        for j in found:
            if j != i:
                keys.add(i * n + j if i < j else j * n + i)
    return np.fromiter(keys, dtype=np.int64, count=len(keys))


def lsh_worker(spec: dict) -> dict:
    """texts → candidate pairs / groups for one tool; saves the group label of every document."""
    texts = load_texts(spec["corpus"], spec["docs"])
    n = len(texts)
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    tool = spec["tool"]
    stages: dict[str, float] = {}
    extra: dict = {}

    if tool.startswith("neardup"):
        from neardup.engines.local import signatures_parallel
        from neardup.pipeline import find_groups
        from neardup.settings import Settings

        settings = Settings(
            method="minhash",
            shingle=spec["shingle"],
            threshold=spec["threshold"],
            num_perm=NUM_PERM,
        )
        stamps = np.zeros(n, dtype=np.int64)
        signatures_parallel(texts[:200], settings, 1, keep_sets=False)
        extra["bands"], extra["rows"] = settings.banding()

        def run():
            t0 = time.perf_counter()
            sig = signatures_parallel(texts, settings, 1, keep_sets=False)
            t1 = time.perf_counter()
            groups = find_groups(sig, stamps, settings, texts)
            stages["signatures"], stages["lsh"] = t1 - t0, time.perf_counter() - t1
            return groups

        def finish(groups):
            s = groups.stats
            return groups.original, {
                "candidates": s["candidates"],
                "rejected": s["rejected"],
                "exact_duplicates": s["exact_duplicates"],
            }

    elif tool == "datasketch":
        from datasketch import MinHash, MinHashLSH

        permutations = MinHash(num_perm=NUM_PERM, seed=1).permutations
        probe = MinHashLSH(threshold=PEER_THRESHOLD, num_perm=NUM_PERM)
        extra["bands"], extra["rows"] = probe.b, probe.r

        def run():
            t0 = time.perf_counter()
            sigs = []
            for text in texts:
                m = MinHash(num_perm=NUM_PERM, seed=1, permutations=permutations, scheme="affine32")
                m.update_batch([s.encode("utf-8") for s in word_shingles(text)])
                sigs.append(m)
            t1 = time.perf_counter()
            lsh = MinHashLSH(threshold=PEER_THRESHOLD, num_perm=NUM_PERM)
            with lsh.insertion_session() as session:
                for i, m in enumerate(sigs):
                    session.insert(i, m)
            keys = _pairs_from_lists((lsh.query(m) for m in sigs), n)
            stages["signatures"], stages["lsh"] = t1 - t0, time.perf_counter() - t1
            return keys

    elif tool == "rensa":
        from rensa import RMinHash, RMinHashLSH

        extra["bands"], extra["rows"] = RENSA_BANDS, NUM_PERM // RENSA_BANDS

        def run():
            t0 = time.perf_counter()
            sigs = []
            for text in texts:
                m = RMinHash(num_perm=NUM_PERM, seed=1)
                m.update(word_shingles(text))
                sigs.append(m)
            t1 = time.perf_counter()
            lsh = RMinHashLSH(threshold=PEER_THRESHOLD, num_perm=NUM_PERM, num_bands=RENSA_BANDS)
            lsh.insert_many(sigs, 0)
            keys = _pairs_from_lists(lsh.query_all(sigs), n)
            stages["signatures"], stages["lsh"] = t1 - t0, time.perf_counter() - t1
            return keys
    else:
        raise ValueError(f"unknown tool {tool!r}")

    if not tool.startswith("neardup"):

        def finish(keys):
            from neardup.groups import connected_components

            a, b = keys // n, keys % n
            return connected_components(n, a, b), {"candidates": int(keys.size)}

    rss_loaded = current_rss_mb()
    best, runs, best_stages = float("inf"), 0, {}
    started = time.perf_counter()
    out = None
    while runs < spec["repeat"] and (runs == 0 or time.perf_counter() - started < spec["budget"]):
        t0 = time.perf_counter()
        out = run()
        took = time.perf_counter() - t0
        if took < best:
            best, best_stages = took, dict(stages)
        runs += 1
    peak = peak_rss_mb()
    labels, counts = finish(out)
    labels = np.asarray(labels, dtype=np.int64)
    np.save(spec["labels_out"], labels)
    groups = int(np.unique(labels).size)
    return {
        **spec,
        **extra,
        **counts,
        "n": n,
        "bytes": nbytes,
        "seconds": best,
        "runs": runs,
        "stages": best_stages,
        "rss_loaded_mb": rss_loaded,
        "peak_rss_mb": peak,
        "groups": groups,
        "removed": n - groups,
    }


def worker(spec: dict) -> dict:
    kind = spec["kind"]
    if kind == "make_set":
        return make_set(spec)
    if kind == "tables":
        return tables_worker(spec)
    if kind == "pybind":
        return pybind_worker(spec)
    if kind == "lsh":
        return lsh_worker(spec)
    raise ValueError(f"unknown worker kind {kind!r}")


# ---------------------------------------------------------------------------------------------
# Orchestrator side.


def run_worker(python: str | Path, spec: dict, label: str, timeout: float = 7200) -> dict | None:
    """Run one worker in a fresh interpreter; its last stdout line is the JSON result."""
    print(f"  {label} ...", file=sys.stderr, flush=True)
    cmd = [str(python), str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    if proc.returncode != 0:
        print(f"  FAILED {label}:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "seconds" in result:
        print(
            f"    best {result['seconds']:.2f} s of {result['runs']} run(s), "
            f"peak RSS {result['peak_rss_mb']:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    return result


def uptime() -> str:
    try:
        out = subprocess.run(["uptime"], check=False, capture_output=True, text=True)
        return out.stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def mem_available_mb() -> float:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("inf")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            kids = [int(x) for x in fh.read().split()]
    except OSError:
        return []
    out = list(kids)
    for kid in kids:
        out.extend(_children(kid))
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


def run_cli(args: list[str], poll: float = 0.01) -> dict:
    """Run the CLI once: wall seconds, peak RSS of the process tree (sum) and of its largest
    process, polled from /proc every ``poll`` seconds, and the run summary it prints."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    peak_sum = peak_one = 0.0
    while proc.poll() is None:
        sizes = [_rss_mb(p) for p in [proc.pid, *_children(proc.pid)]]
        peak_sum = max(peak_sum, sum(sizes))
        peak_one = max(peak_one, max(sizes))
        time.sleep(poll)
    seconds = time.perf_counter() - t0
    _stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{stderr[-2000:]}")
    summary = {}
    for line in stderr.splitlines():
        m = re.match(r"\s*([a-z][a-z :_+]*?)\s{2,}([\d,.]+)\s*$", line)
        if m:
            summary[m.group(1).strip()] = float(m.group(2).replace(",", ""))
    return {
        "seconds": seconds,
        "peak_sum_mb": peak_sum,
        "peak_one_mb": peak_one,
        "summary": summary,
    }


def measure_cli(
    name: str, options: list[str], workers: int, args, workdir: Path, corpus: Path | None = None
) -> dict:
    out = workdir / "groups.tsv"
    corpus = corpus or args.corpus
    cmd = [
        str(NEARDUP_CLI),
        "dedup",
        str(corpus),
        "-o",
        str(out),
        *options,
        "--workers",
        str(workers),
    ]
    print(
        f"  neardup dedup {' '.join(options) or '(defaults)'} --workers {workers} ...",
        file=sys.stderr,
        flush=True,
    )
    run_cli(cmd)  # warm: page cache, numba cache files
    runs = [run_cli(cmd) for _ in range(args.repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    print(f"    best {best['seconds']:.2f} s of {len(runs)}", file=sys.stderr, flush=True)
    out.unlink(missing_ok=True)
    return {
        "name": name,
        "workers": workers,
        "options": options,
        "seconds": best["seconds"],
        "all_seconds": [r["seconds"] for r in runs],
        "summary": best["summary"],
        "peak_sum_mb": max(r["peak_sum_mb"] for r in runs),
        "peak_one_mb": max(r["peak_one_mb"] for r in runs),
        "file_bytes": Path(corpus).stat().st_size,
    }


def corpus_truth(corpus: Path, docs: int):
    """The planted truth of a corpus.py corpus as clusters: an original and its edits share a
    cluster, all template copies share one."""
    import pandas as pd

    from neardup.quality import ClusterTruth

    path = corpus.with_name(corpus.name.replace(".jsonl", ".truth.tsv"))
    if not path.is_file():
        return None
    t = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False).iloc[:docs]
    cluster = np.where(
        t["kind"] == "edit", t["source"], np.where(t["kind"] == "template", "template", t["id"])
    )
    return ClusterTruth.from_arrays(t["id"].to_numpy(), cluster)


def score_labels(labels_path: Path, truth) -> dict | None:
    from neardup.quality import Prediction, evaluate

    if truth is None:
        return None
    labels = np.load(labels_path)
    ids = truth.ids[: labels.size]
    e = evaluate(Prediction.from_groups(ids, labels), truth)
    return {
        "precision": e.precision,
        "recall": e.recall,
        "f1": e.f1,
        "b3_precision": e.bcubed.precision,
        "b3_recall": e.bcubed.recall,
        "b3_f1": e.bcubed.f1,
    }


def check_pybind(fp_path: Path, pairs_path: Path, k: int) -> dict:
    """Compare simhash-pybind's value pairs with neardup's distinct-value pairs."""
    from neardup.candidates.tables import collapse_identical, distinct_hamming_pairs

    fp = np.load(fp_path)
    values, _, counts = collapse_identical(fp)
    a, b, _ = distinct_hamming_pairs(values, k)
    ours = np.stack([np.minimum(values[a], values[b]), np.maximum(values[a], values[b])], axis=1)
    theirs = np.load(pairs_path)
    as_set = {tuple(p) for p in ours.tolist()}
    got = {tuple(p) for p in theirs.tolist()}
    identical = int((counts * (counts - 1) // 2).sum())
    return {
        "neardup_value_pairs": len(as_set),
        "pybind_value_pairs": len(got),
        "common": len(as_set & got),
        "only_pybind": len(got - as_set),
        "only_neardup": len(as_set - got),
        "identical_index_pairs": identical,
        "identical_values": int((counts > 1).sum()),
    }


def fmt_n(n: int) -> str:
    for unit, div in (("100M", 10**8), ("10M", 10**7), ("1M", 10**6)):
        if n == div:
            return unit
    return f"{n:,}"


def markdown(res: dict, args, info: dict) -> str:
    L = [
        "# Finding pairs and groups",
        "",
        f"Machine: {info['cpu']}, {os.cpu_count()} cores, {info['mem_gb']:.0f} GB RAM, Python "
        f"{platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in sorted(info["versions"].items()))
        + ".",
        "",
        (
            f"Load while measuring (`uptime`): at the start `{info['uptime_start']}`; at the end "
            f"`{info['uptime_end']}`. Other jobs (tests, other benchmarks) shared the 2 cores, so "
            "every time here is an upper bound; compare rows of one run, not across runs."
        ),
        "",
        (
            f"Every row is the best of up to {args.repeat} runs in a fresh process (a row stops "
            f"repeating once {args.budget:.0f} s are spent; `runs` says how many ran). Peak RSS is "
            "the measuring process's maximum resident memory, interpreter, numba and the loaded "
            "input included."
        ),
        "",
    ]
    tables = res.get("tables", [])
    if tables or res.get("skipped_sizes"):
        L += [
            f"## 1. All pairs within k = {args.k} bits (permutation tables)",
            "",
            (
                "`random`: N random 64-bit fingerprints, of which 1 % are near copies of another "
                f"(1..{args.k} random bits flipped) and 0.1 % exact copies; timed: `hamming_pairs` "
                "(every pair of input indices, identical fingerprints included, each once). "
                f"`skewed`: one fingerprint {SKEW_IDENTICAL:,} times, {SKEW_CLUSTER:,} within 2 bits "
                "of another base, the rest random; timed: `collapse_identical` + "
                "`distinct_hamming_pairs` (pairs of distinct values plus each value's count), "
                "because the index pairs of the repeated value alone are "
                f"{SKEW_IDENTICAL * (SKEW_IDENTICAL - 1) // 2:,} (about 340 GB as int64 pairs): no "
                "tool can write them, and neardup's pipeline never does (a bucket of identical "
                "values is linked as a star, O(n)). `distinct` rows on the random set time the "
                "same collapse + distinct search, the like-for-like comparison with simhash-pybind."
            ),
            "",
            (
                "| set | N | distinct | timed | plan | runs | seconds | M fingerprints/s | "
                "RSS before MB | peak RSS MB | extra MB | bytes/fp | pairs found |"
            ),
            "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in tables:
            extra = r["peak_rss_mb"] - r["rss_before_mb"] + r["input_mb"]
            if r["mode"] == "pairs":
                timed = "hamming_pairs"
                found = f"{r['pairs']:,} index pairs ({r['identical_pairs']:,} identical)"
            else:
                timed = "collapse + distinct"
                found = (
                    f"{r['distinct_pairs']:,} value pairs = {r['index_pairs']:,} index "
                    f"pairs (largest bucket {r['largest_bucket']:,})"
                )
            L.append(
                f"| {r['set']} | {fmt_n(r['n'])} | {r['distinct']:,} | {timed} | {r['plan']} | "
                f"{r['runs']} | {r['seconds']:.2f} | {r['n'] / r['seconds'] / 1e6:.1f} | "
                f"{r['rss_before_mb']:.0f} | {r['peak_rss_mb']:.0f} | {extra:.0f} | "
                f"{extra * 2**20 / r['n']:.0f} | {found} |"
            )
        L += [
            "",
            (
                "`extra MB` = peak − RSS before + the input array: the memory of the input and the "
                "search together (the interpreter and numba, about 170 MB, left out); `bytes/fp` "
                "divides it by N (the input alone is 8 bytes/fp)."
            ),
            "",
        ]
        growth = []
        for kind, mode in (("random", "pairs"), ("skewed", "distinct")):
            rows = sorted(
                (r for r in tables if r["set"] == kind and r["mode"] == mode), key=lambda r: r["n"]
            )
            for lo, hi in itertools.pairwise(rows):
                e_lo = lo["peak_rss_mb"] - lo["rss_before_mb"] + lo["input_mb"]
                e_hi = hi["peak_rss_mb"] - hi["rss_before_mb"] + hi["input_mb"]
                growth.append(
                    f"| {kind} | {fmt_n(lo['n'])} → {fmt_n(hi['n'])} | "
                    f"{hi['n'] / lo['n']:.0f}× | {hi['seconds'] / lo['seconds']:.1f}× | "
                    f"{e_hi / e_lo:.1f}× | {lo['plan']} → {hi['plan']} |"
                )
        if growth:
            L += [
                "### Growth",
                "",
                "| set | N | N grows | time grows | extra memory grows | plan |",
                "|---|---|---:|---:|---:|---|",
                *growth,
                "",
                (
                    "Time grows faster than N: where the plan switches to more blocks (more "
                    "tables, longer prefixes: the cost model of `plan_tables` keeps the prefix "
                    "groups small), each of the extra tables costs a radix sort of N; with the "
                    "same plan, the prefix groups grow with N (N / 2^prefix_bits values share a "
                    "prefix on average), and at 100M the arrays are far beyond any cache. Memory "
                    "grows linearly: the tables are processed one after another, so the extra "
                    "memory is a few arrays of N, never one copy per table."
                ),
                "",
            ]
        for n, why in res.get("skipped_sizes", []):
            L += [f"N = {fmt_n(n)} skipped: {why}", ""]

    pyb = res.get("pybind", [])
    if pyb:
        ref = next(
            (
                r
                for r in tables
                if r["set"] == "random" and r["mode"] == "distinct" and r["n"] == args.pybind_n
            ),
            None,
        )
        refp = next(
            (
                r
                for r in tables
                if r["set"] == "random" and r["mode"] == "pairs" and r["n"] == args.pybind_n
            ),
            None,
        )
        chk = res.get("pybind_check", {})
        L += [
            (
                f"## 2. simhash-pybind `find_all` on the same {fmt_n(args.pybind_n)} fingerprints, "
                f"k = {args.k}"
            ),
            "",
            (
                "`find_all(hashes, number_of_blocks, different_bits)` takes a Python *set* of "
                "fingerprints (built before the timing) and returns a set of (value, value) pairs. "
                "A set holds each value once, so two documents with the same fingerprint can never "
                "come out as a pair."
            ),
            "",
            (
                "| tool | timed | runs | seconds | peak RSS MB | pairs found | pybind ÷ neardup "
                "time |"
            ),
            "|---|---|---:|---:|---:|---|---:|",
        ]
        if ref:
            L.append(
                f"| neardup | collapse + distinct_hamming_pairs | {ref['runs']} | "
                f"{ref['seconds']:.2f} | {ref['peak_rss_mb']:.0f} | "
                f"{ref['distinct_pairs']:,} value pairs | — |"
            )
        if refp:
            L.append(
                f"| neardup | hamming_pairs (index pairs) | {refp['runs']} | "
                f"{refp['seconds']:.2f} | {refp['peak_rss_mb']:.0f} | "
                f"{refp['pairs']:,} index pairs ({refp['identical_pairs']:,} identical) | "
                "— |"
            )
        for r in pyb:
            ratio = f"{r['seconds'] / ref['seconds']:.1f}×" if ref else "—"
            L.append(
                f"| simhash-pybind | find_all, {r['blocks']} blocks | {r['runs']} | "
                f"{r['seconds']:.2f} | {r['peak_rss_mb']:.0f} | {r['pairs']:,} value pairs "
                f"| {ratio} |"
            )
        if chk:
            L += [
                "",
                (
                    f"Check: simhash-pybind's value pairs equal neardup's distinct-value pairs: "
                    f"{chk['common']:,} in common, {chk['only_pybind']:,} only in simhash-pybind, "
                    f"{chk['only_neardup']:,} only in neardup. The set holds "
                    f"{chk['identical_values']:,} fingerprints that occur more than once; the "
                    f"{chk['identical_index_pairs']:,} pairs of documents with identical "
                    "fingerprints are missing from simhash-pybind's output (and from its pair count) "
                    "and found by `hamming_pairs`."
                ),
            ]
        L.append("")

    nan = float("nan")
    lsh = res.get("lsh", [])
    if lsh:
        ref = next((r for r in lsh if r["tool"] == "neardup" and r["shingle"] == "word:3"), None)
        L += [
            f"## 3. MinHash LSH on `{Path(args.corpus).name}`",
            "",
            (
                f"{lsh[0]['n']:,} documents, {lsh[0]['bytes'] / 1e6:.1f} MB of text; 128 "
                "permutations everywhere. Time = texts in, candidate pairs (peers) or groups "
                "(neardup) out, shingling included; `MinHash s` and `LSH s` split it. Peers: word "
                "3-grams of `text.lower().split()` (as in `bench_fingerprint.py`), LSH at threshold "
                "0.8, every document inserted and queried, every returned pair kept (no "
                "verification). neardup: what `neardup.dedup` runs, 1 worker, candidates verified "
                "with the exact Jaccard of the shingle sets; its LSH links the members of a bucket "
                "as a star, so its candidate count is not the all-pairs count of the peers. "
                "`removed` = documents minus groups (connected components of the pairs). Quality "
                "against the corpus's planted truth (an original and its light edits form a "
                "cluster; all copies of the hot template form one): B-cubed precision / recall / F1 "
                "(per document, `neardup.quality`) and the pairwise F1, which the one template "
                "cluster (about 2,000 documents, 2 million of the pairs) dominates."
            ),
            "",
            (
                "| tool | shingles | threshold | bands × rows | runs | seconds | MinHash s | LSH s | "
                "docs/s | candidate pairs | verified | removed | B³ P | B³ R | B³ F1 | pair F1 | "
                "peak RSS MB | neardup ÷ peer |"
            ),
            (
                "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                "---:|"
            ),
        ]
        for r in lsh:
            st = r["stages"]
            q = r.get("quality") or {}
            verified = f"{r['candidates'] - r['rejected']:,}" if "rejected" in r else "—"
            ratio = "—"
            if r["tool"] != "neardup" and ref and ref["n"] == r["n"]:
                ratio = f"{r['seconds'] / ref['seconds']:.1f}×"
            L.append(
                f"| {r['tool']} | {r['shingle']} | {r['threshold']} | {r['bands']} × {r['rows']} "
                f"| {r['runs']} | {r['seconds']:.2f} | {st.get('signatures', 0):.2f} | "
                f"{st.get('lsh', 0):.2f} | {r['n'] / r['seconds']:,.0f} | {r['candidates']:,} | "
                f"{verified} | {r['removed']:,} | {q.get('b3_precision', nan):.3f} | "
                f"{q.get('b3_recall', nan):.3f} | {q.get('b3_f1', nan):.3f} | "
                f"{q.get('f1', nan):.3f} | {r['peak_rss_mb']:.0f} | {ratio} |"
            )
        L += [
            "",
            (
                "`neardup ÷ peer`: the peer's seconds over neardup's (word:3, threshold 0.8 row) on "
                "the same documents. rensa's bands must divide 128: 16 bands of 8 rows "
                "(datasketch chooses 9 × 13 for 0.8)."
            ),
            "",
        ]

    cli = res.get("cli", [])
    if cli:
        L += [
            f"## 4. `neardup dedup` end to end on `{Path(args.corpus).name}`",
            "",
            (
                f"Read the JSONL file ({cli[0]['file_bytes'] / 1e6:.0f} MB), write GROUPS (TSV); "
                f"one warm-up run, then best of {args.repeat}. MB/s = MB of UTF-8 text (the run "
                "summary's `bytes`) per wall second. Peak RSS: the process tree polled every 10 ms "
                "(sum of its processes) and its largest process. `of which pipeline s`: the run summary's own "
                "`seconds` (reading, signatures, grouping); the rest of the wall time is starting "
                "the interpreter, importing numpy / numba / pandas / pyarrow, loading the cached "
                "kernels and writing the output. Target: ≤ 5 s for the SimHash run."
            ),
            "",
            (
                "| run | workers | wall s (runs) | of which pipeline s | docs/s | MB/s | "
                "peak RSS MB (sum / largest) | candidates | pairs | groups | largest group |"
            ),
            "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
        for r in cli:
            s = r["summary"]
            docs = s.get("documents", 0)
            mb = s.get("bytes", 0) / 1e6
            runs = ", ".join(f"{x:.2f}" for x in r["all_seconds"])
            L.append(
                f"| {r['name']} | {r['workers']} | **{r['seconds']:.2f}** ({runs}) | "
                f"{s.get('seconds', nan):.2f} | {docs / r['seconds']:,.0f} | "
                f"{mb / r['seconds']:.1f} | "
                f"{r['peak_sum_mb']:.0f} / {r['peak_one_mb']:.0f} | "
                f"{int(s.get('candidate pairs', 0)):,} | {int(s.get('pairs written', 0)):,} | "
                f"{int(s.get('groups', 0)):,} | {int(s.get('largest group', 0)):,} |"
            )
        fixed = res.get("cli_fixed")
        if fixed:
            L += [
                "",
                (
                    f"Fixed cost of a run: the SimHash command on a one-document file takes "
                    f"{fixed['seconds']:.2f} s wall (best of {len(fixed['all_seconds'])}): "
                    "interpreter start, imports, loading the cached kernels, reading and "
                    "writing."
                ),
            ]
        sim = [r for r in cli if "simhash" in r["options"]]
        if sim:
            best = min(sim, key=lambda r: r["seconds"])
            verdict = "met" if best["seconds"] <= 5 else "not met"
            L += [
                "",
                (
                    f"SimHash target ≤ 5 s: {verdict} (best wall time "
                    f"{best['seconds']:.2f} s, "
                    f"{best['workers']} worker(s), of which "
                    f"{best['summary'].get('seconds', nan):.2f} s in the pipeline; load average "
                    f"{info['load_cli'][0]:.1f} when the section started, "
                    f"{info['load_cli'][1]:.1f} when it ended, on {os.cpu_count()} cores)."
                ),
            ]
        L.append("")
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="JSONL corpus (corpus.py)")
    ap.add_argument(
        "--sizes",
        default="1000000,10000000,100000000",
        help="fingerprint counts for section 1 (a size that would not fit in the "
        "available memory is skipped)",
    )
    ap.add_argument("--k", type=int, default=3, help="hamming_k")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pybind-n", type=int, default=1_000_000, help="set size for section 2")
    ap.add_argument("--blocks", default="4,5,6", help="simhash-pybind number_of_blocks to try")
    ap.add_argument("--docs", type=int, default=100_000, help="documents for section 3")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument(
        "--budget", type=float, default=150.0, help="a row stops repeating after this many seconds"
    )
    ap.add_argument(
        "--sections", default=",".join(SECTIONS), help="comma-separated: " + ", ".join(SECTIONS)
    )
    ap.add_argument("--skip-peers", action="store_true", help="neardup rows only")
    ap.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help="scratch folder for the fingerprint sets (deleted at the end)",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file to write")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    for s in sections:
        if s not in SECTIONS:
            ap.error(f"--sections: unknown section {s!r}; choose from {', '.join(SECTIONS)}")
    if {"lsh", "cli"} & set(sections) and not args.corpus.is_file():
        ap.error(
            f"corpus {args.corpus} not found; make it with benchmarks/corpus.py --docs "
            "100000 --seed 1 --truth ... -o ..."
        )
    peers = not args.skip_peers and PEER_PYTHON.exists()
    if not args.skip_peers and not peers:
        print(
            f"no peers environment at {PEER_PYTHON.parent.parent}; run "
            "benchmarks/setup_peers.sh (peer rows skipped)",
            file=sys.stderr,
        )
    here = sys.executable
    args.workdir.mkdir(parents=True, exist_ok=True)
    info = {
        "uptime_start": uptime(),
        "cpu": cpu_model(),
        "mem_gb": os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30,
    }
    print(f"start: {info['uptime_start']}", file=sys.stderr)
    res: dict = {"tables": [], "skipped_sizes": [], "pybind": [], "lsh": [], "cli": []}
    common = {"repeat": args.repeat, "budget": args.budget, "k": args.k}

    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    if "tables" not in sections:
        sizes = []
    if "pybind" in sections and args.pybind_n not in sizes:
        sizes = sorted(set(sizes) | {args.pybind_n})
    keep_for_pybind = None
    if "tables" in sections or "pybind" in sections:
        print("section 1: permutation tables", file=sys.stderr)
        for n in sizes:
            need = n * BYTES_PER_FINGERPRINT / 2**20 + 500
            avail = mem_available_mb()
            if need > 0.8 * avail:
                why = (
                    f"needs about {need / 1024:.1f} GB, {avail / 1024:.1f} GB available "
                    "(the search needs about 60 bytes per fingerprint, input included)"
                )
                res["skipped_sizes"].append((n, why))
                print(f"  N = {n:,} skipped: {why}", file=sys.stderr)
                continue
            paths = {}
            for kind in ("random", "skewed"):
                path = args.workdir / f"{kind}_{n}.npy"
                made = run_worker(
                    here,
                    {
                        "kind": "make_set",
                        "set": kind,
                        "n": n,
                        "k": args.k,
                        "seed": args.seed,
                        "path": str(path),
                    },
                    f"make {kind} set N={n:,}",
                )
                if made:
                    paths[kind] = path
            if "tables" in sections or n == args.pybind_n:
                modes = [("random", "pairs"), ("skewed", "distinct")]
                if n == args.pybind_n:
                    modes.insert(1, ("random", "distinct"))
                if "tables" not in sections:
                    modes = [("random", "distinct"), ("random", "pairs")]
                for kind, mode in modes:
                    if kind not in paths:
                        continue
                    r = run_worker(
                        here,
                        {
                            "kind": "tables",
                            "set": kind,
                            "mode": mode,
                            "n": n,
                            "path": str(paths[kind]),
                            **common,
                        },
                        f"neardup {mode} on {kind} N={n:,}",
                    )
                    if r:
                        res["tables"].append(r)
            for kind, path in paths.items():
                if kind == "random" and n == args.pybind_n:
                    keep_for_pybind = path
                else:
                    path.unlink(missing_ok=True)

    if "pybind" in sections and peers and keep_for_pybind is not None:
        print("section 2: simhash-pybind find_all", file=sys.stderr)
        for blocks in [int(b) for b in args.blocks.split(",")]:
            pairs_out = args.workdir / f"pybind_pairs_{blocks}.npy"
            r = run_worker(
                PEER_PYTHON,
                {
                    "kind": "pybind",
                    "path": str(keep_for_pybind),
                    "blocks": blocks,
                    "pairs_out": str(pairs_out),
                    **common,
                },
                f"simhash-pybind find_all blocks={blocks}",
            )
            if r:
                res["pybind"].append(r)
                if "pybind_check" not in res:
                    res["pybind_check"] = check_pybind(keep_for_pybind, pairs_out, args.k)
            pairs_out.unlink(missing_ok=True)
    if keep_for_pybind is not None:
        keep_for_pybind.unlink(missing_ok=True)

    if "lsh" in sections:
        print("section 3: MinHash LSH", file=sys.stderr)
        truth = corpus_truth(args.corpus, args.docs)
        rows = [
            (here, {"tool": "neardup", "shingle": "word:3", "threshold": PEER_THRESHOLD}),
            (here, {"tool": "neardup", "shingle": "char:5", "threshold": 0.7}),
        ]
        if peers:
            rows += [
                (PEER_PYTHON, {"tool": t, "shingle": "word:3", "threshold": PEER_THRESHOLD})
                for t in ("datasketch", "rensa")
            ]
        for python, spec in rows:
            labels_out = args.workdir / f"labels_{spec['tool']}_{spec['shingle']}.npy"
            r = run_worker(
                python,
                {
                    "kind": "lsh",
                    "corpus": str(args.corpus),
                    "docs": args.docs,
                    "labels_out": str(labels_out),
                    **spec,
                    **common,
                },
                f"{spec['tool']} MinHash LSH {spec['shingle']} docs={args.docs:,}",
            )
            if r:
                r["quality"] = score_labels(labels_out, truth)
                res["lsh"].append(r)
            labels_out.unlink(missing_ok=True)

    if "cli" in sections:
        print("section 4: neardup dedup end to end", file=sys.stderr)
        load_cli = os.getloadavg()[0]
        configs = [
            ("defaults (MinHash char:5, 0.7, verified)", []),
            ("SimHash word:3, k = 3", ["--method", "simhash", "--shingle", "word:3", "-k", "3"]),
        ]
        for name, options in configs:
            for workers in (1, 2):
                res["cli"].append(measure_cli(name, options, workers, args, args.workdir))
        # The fixed cost of a run: the same command on a one-document file.
        tiny = args.workdir / "one_document.jsonl"
        with open(args.corpus, encoding="utf-8") as fh:
            tiny.write_text(fh.readline(), encoding="utf-8")
        res["cli_fixed"] = measure_cli("fixed cost", configs[1][1], 1, args, args.workdir, tiny)
        info["load_cli"] = (load_cli, os.getloadavg()[0])

    info["uptime_end"] = uptime()
    info["versions"] = versions(here)
    if peers:
        info["versions"].update(
            {k: v for k, v in versions(str(PEER_PYTHON)).items() if k not in info["versions"]}
        )
        info["versions"].update(versions(str(PEER_PYTHON), PYBIND_DIR))
    shutil.rmtree(args.workdir, ignore_errors=True)
    text = markdown(res, args, info)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"results": res, "info": info}, indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
