"""The Spark engine on local[2]: time per stage, shuffle sizes, skew, and the local engine.

For each corpus size and method, three runs of ``neardup dedup`` on the same documents:

``local``    the local engine (the CLI, all cores), wall seconds;
``spark``    ``--engine spark`` through :func:`neardup.engines.spark.run_dedup` in one local[2]
             session: seconds per stage (the run's own clock), shuffle bytes written per stage
             (summed from Spark's monitoring REST API over the jobs the run tags
             ``neardup:<stage>``), wall seconds, and whether GROUPS and PAIRS are
             byte-identical to the local run's;
``skewed``   the same on a skewed copy of the corpus of the same size: ``--skew-share`` of the
             documents replaced by one text (one exact-duplicate group and, before the collapse,
             one hot content key), plus the corpus's own hot template (one hot LSH bucket /
             table prefix). The skew target: skewed wall time within 2x of the plain one.

Spark binds to 127.0.0.1 only (``SPARK_LOCAL_IP``), its UI included, which the script reads
for the shuffle sizes.

    python benchmarks/bench_spark.py --corpus benchmarks/.data/corpus_100k.jsonl --docs 100000
    python benchmarks/bench_spark.py --corpus benchmarks/.data/corpus_1m.jsonl --docs 1000000 \\
        --methods simhash --out benchmarks/results/spark_1m.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

METHODS = {
    "simhash": ["--method", "simhash", "--shingle", "word:3", "-k", "3"],
    "minhash": [],  # the defaults: MinHash char:5, Jaccard 0.7, verified
}
STAGES = ("signatures", "exact_duplicates", "candidates", "verify", "groups", "pairs")


def write_inputs(corpus: Path, docs: int, skew_share: float, folder: Path) -> dict[str, Path]:
    """The first ``docs`` documents as is, and a skewed copy: every ``1 / skew_share``-th
    document's text replaced by one fixed text (same IDs, same count)."""
    plain, skewed = folder / "plain.jsonl", folder / "skewed.jsonl"
    step = max(1, round(1 / skew_share)) if skew_share > 0 else 0
    hot_text = None
    with open(corpus, encoding="utf-8") as src, open(plain, "w", encoding="utf-8") as p, \
            open(skewed, "w", encoding="utf-8") as s:
        for i, line in enumerate(src):
            if i == docs:
                break
            p.write(line)
            row = json.loads(line)
            if hot_text is None:
                hot_text = row["text"]
            if step and i % step == 0:
                row["text"] = hot_text
            s.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"plain": plain, "skewed": skewed}


def local_run(path: Path, method: str, out: Path) -> float:
    cmd = [sys.executable, "-m", "neardup", "dedup", str(path), "-o", str(out / "groups.tsv"),
           "--pairs-out", str(out / "pairs.tsv"), "--time-field", "ts", "-q", *METHODS[method]]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def shuffle_bytes(ui: str, app: str, since_job: int) -> tuple[dict[str, int], int]:
    """Shuffle bytes written per ``neardup:<stage>`` job group, for jobs after ``since_job``."""
    def get(path: str):
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{path}", timeout=30) as r:
            return json.load(r)

    stages = {s["stageId"]: s for s in get("stages?status=complete")}
    per_group: dict[str, int] = {}
    last = since_job
    seen: set[int] = set()
    for job in get("jobs"):
        last = max(last, job["jobId"])
        if job["jobId"] <= since_job:
            continue
        group = (job.get("jobGroup") or "").removeprefix("neardup:") or "read"
        for stage_id in job["stageIds"]:
            if stage_id in stages and stage_id not in seen:  # skipped stages are not listed
                seen.add(stage_id)
                per_group[group] = per_group.get(group, 0) + stages[stage_id]["shuffleWriteBytes"]
    return per_group, last


def spark_run(spark, path: Path, method: str, out: Path, state: dict) -> dict:
    from neardup.engines.spark import run_dedup
    from neardup.pipeline import DEFAULT_METHOD, DEFAULT_SHINGLE, DEFAULT_THRESHOLD, Settings

    if method == "simhash":
        settings = Settings(method="simhash", shingle="word:3", hamming_k=3, verify=None)
    else:
        settings = Settings(method=DEFAULT_METHOD, shingle=DEFAULT_SHINGLE,
                            threshold=DEFAULT_THRESHOLD)
    start = time.perf_counter()
    result, _ = run_dedup(spark, [str(path)], str(out / "groups.tsv"), settings,
                          pairs_out=str(out / "pairs.tsv"), time_field="ts")
    wall = time.perf_counter() - start
    sc = spark.sparkContext
    shuffles, state["last_job"] = shuffle_bytes(sc.uiWebUrl, sc.applicationId, state["last_job"])
    return {"wall": wall, "seconds": result.stats["seconds"], "shuffle": shuffles,
            "candidates": result.stats["candidates"], "groups": result.stats["groups"],
            "largest_group": result.stats["largest_group"]}


def same_files(a: Path, b: Path) -> bool:
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in ("groups.tsv", "pairs.tsv"))


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="JSONL corpus (corpus.py)")
    parser.add_argument("--docs", type=int, default=100_000, help="documents to take from it")
    parser.add_argument("--methods", default="simhash,minhash")
    parser.add_argument("--skew-share", type=float, default=0.3,
                        help="share of documents replaced by one text in the skewed copy")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=8, help="shuffle partitions")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/spark.md"))
    args = parser.parse_args()

    from neardup.engines.spark import spark_session

    spark = spark_session(args.master, app_name="neardup-bench", config={
        "spark.sql.shuffle.partitions": str(args.partitions),
        "spark.driver.memory": args.driver_memory,
        "spark.ui.showConsoleProgress": "false",
    })
    spark.sparkContext.setLogLevel("ERROR")
    state = {"last_job": -1}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        inputs = write_inputs(args.corpus, args.docs, args.skew_share, tmp)
        size_mb = inputs["plain"].stat().st_size / 1e6
        # One untimed run first: the JVM, the Python workers and the kernels start cold.
        warm = tmp / "warm.jsonl"
        with open(inputs["plain"], encoding="utf-8") as src, open(warm, "w", encoding="utf-8") as w:
            w.writelines(line for _, line in zip(range(2_000), src))
        for method in args.methods.split(","):
            (tmp / f"warm-{method}").mkdir()
            spark_run(spark, warm, method, tmp / f"warm-{method}", state)
        for method in args.methods.split(","):
            for variant, path in inputs.items():
                outs = {k: tmp / f"{method}-{variant}-{k}" for k in ("local", "spark")}
                for o in outs.values():
                    o.mkdir()
                local_s = local_run(path, method, outs["local"])
                print(f"{method} {variant}: local {local_s:.1f} s", flush=True)
                r = spark_run(spark, path, method, outs["spark"], state)
                r.update(method=method, variant=variant, local=local_s,
                         identical=same_files(outs["local"], outs["spark"]))
                print(f"{method} {variant}: spark {r['wall']:.1f} s, identical {r['identical']}",
                      flush=True)
                rows.append(r)
    spark.stop()
    write_report(args, rows, size_mb)


def write_report(args, rows: list[dict], size_mb: float) -> None:
    lines = [
        f"# Spark engine on {args.master}: {args.docs:,} documents",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average at the end "
        f"{os.getloadavg()[0]:.1f}. Corpus: the first {args.docs:,} documents of "
        f"`{args.corpus.name}` ({size_mb:,.0f} MB of JSONL); skewed copy: one text in every "
        f"{round(1 / args.skew_share)} replaced by the same text ({args.skew_share:.0%} of the "
        f"documents in one exact-duplicate group). One untimed warm-up run per method first. {args.partitions} shuffle partitions, driver "
        f"memory {args.driver_memory}. simhash = `--method simhash --shingle word:3 -k 3`; "
        "minhash = the defaults (MinHash-128 char:5, Jaccard 0.7, verified).",
        "",
        (
            "| method | corpus | local s | spark s | spark ÷ local | identical output | "
            + " | ".join(f"{s} s" for s in STAGES)
            + " | shuffle MB (written) | candidates | groups | largest group |"
        ),
        "|---|---|---:|---:|---:|---|" + "---:|" * len(STAGES) + "---:|---:|---:|---:|",
    ]
    for r in rows:
        stage_s = " | ".join(f"{r['seconds'].get(s, 0):.1f}" for s in STAGES)
        lines.append(
            f"| {r['method']} | {r['variant']} | {r['local']:.1f} | {r['wall']:.1f} | "
            f"{r['wall'] / r['local']:.1f}× | {'yes' if r['identical'] else '**no**'} | "
            f"{stage_s} | {mb(sum(r['shuffle'].values()))} | {r['candidates']:,} | "
            f"{r['groups']:,} | {r['largest_group']:,} |")
    lines += ["", ("Shuffle MB written per stage (Spark's REST API, jobs tagged by stage; `read` "
                   "= reading and checking the input):"), "",
              "| method | corpus | " + " | ".join(("read", *STAGES)) + " |",
              "|---|---|" + "---:|" * (len(STAGES) + 1)]
    for r in rows:
        lines.append(f"| {r['method']} | {r['variant']} | "
                     + " | ".join(mb(r["shuffle"].get(s, 0)) for s in ("read", *STAGES)) + " |")
    lines += ["", "Skew: skewed ÷ plain Spark wall time (target ≤ 2×):", ""]
    for method in dict.fromkeys(r["method"] for r in rows):
        by = {r["variant"]: r for r in rows if r["method"] == method}
        if {"plain", "skewed"} <= by.keys():
            ratio = by["skewed"]["wall"] / by["plain"]["wall"]
            lines.append(f"- {method}: {ratio:.2f}× ({'holds' if ratio <= 2 else '**fails**'})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
