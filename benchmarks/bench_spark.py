"""The Spark engine on local[2]: time per stage, shuffle sizes, skew, and the local engine.

For each corpus size and method, four runs of ``neardup dedup`` (GROUPS and PAIRS written to
single TSV files), on the first ``--docs`` documents of the corpus (``plain``) and on a skewed
copy of the same size (``skewed``):

``local``    the local engine (the CLI in a subprocess, all cores), wall seconds;
``spark``    ``--engine spark`` through :func:`neardup.engines.spark.run_dedup` in one local[2]
             session: wall seconds, seconds per stage (the run's own clock, reading and
             writing included), shuffle bytes written per stage (the run's summary, summed over
             the jobs the run tags ``neardup:<stage>``), the longest single task (Spark's
             monitoring REST API), and whether GROUPS and PAIRS are byte-identical to the local
             run's.

The skewed copy replaces one document in every ``1 / --skew-share`` by, alternately, one fixed
text (an exact-duplicate group: one hot content key) and a copy of one notice template with its
slots (a name, a number, a date) filled at random (distinct texts that are near-duplicates of
each other: a hot SimHash table prefix and hot LSH buckets that exact-duplicate collapsing does
not remove). At 1M documents and the default share of 0.3, each holds 150,000 documents. The
skew target: the skewed copy runs within 2x of the plain one.

Spark binds to 127.0.0.1 only (``SPARK_LOCAL_IP``), its UI included, which the script reads
for the task times.

``--standalone`` runs on a real cluster instead of ``--master``: a Spark standalone master and
two workers on 127.0.0.1, separate JVMs started with pyspark's ``spark-class``
(``tests/spark_cluster.py``, as the tests' cluster), each worker giving the run one 1-core
executor of ``--executor-memory-mb`` (the same two cores as ``local[2]``), stopped after.
Executors in processes of their own, their own Python workers, every closure and broadcast
serialised: what ``local[N]`` hides.

    python benchmarks/bench_spark.py --corpus benchmarks/.data/corpus_1m.jsonl \\
        --docs 100000,1000000
    python benchmarks/bench_spark.py --corpus benchmarks/.data/english_1m.jsonl \\
        --docs 1000000 --methods minhash --variants plain --standalone
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

METHODS = {
    "simhash": ["--method", "simhash", "--shingle", "word:3", "-k", "3"],
    "minhash": [],  # the defaults: MinHash char:4, 32x4 bands, LCS 0.8 verified
}
STAGES = (
    "read",
    "signatures",
    "exact_duplicates",
    "candidates",
    "verify",
    "groups",
    "pairs",
    "write",
)


def write_inputs(corpus: Path, docs: int, skew_share: float, folder: Path) -> dict[str, Path]:
    """The first ``docs`` documents as is, and the skewed copy (module docstring): same IDs,
    timestamps and count. Raises ValueError if the corpus is shorter than ``docs``."""
    from corpus import DEFAULT_DATA, Generator

    templates = Generator(DEFAULT_DATA, seed=2)
    plain, skewed = folder / f"plain_{docs}.jsonl", folder / f"skewed_{docs}.jsonl"
    step = max(1, round(1 / skew_share))
    hot_text = None
    written = 0
    with (
        open(corpus, encoding="utf-8") as src,
        open(plain, "w", encoding="utf-8") as p,
        open(skewed, "w", encoding="utf-8") as s,
    ):
        for i, line in enumerate(src):
            if i == docs:
                break
            p.write(line)
            row = json.loads(line)
            if hot_text is None:
                hot_text = row["text"]
            if i % step == 0:
                row["text"] = hot_text if (i // step) % 2 == 0 else templates.template("en")
            s.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    if written < docs:
        raise ValueError(f"--docs {docs} is more than the {written} documents of {corpus}")
    return {"plain": plain, "skewed": skewed}


def local_run(path: Path, method: str, out: Path) -> float:
    """Wall seconds of ``neardup dedup`` with the local engine (GROUPS and PAIRS to ``out``)."""
    cmd = [
        sys.executable,
        "-m",
        "neardup",
        "dedup",
        str(path),
        "-o",
        str(out / "groups.tsv"),
        "--pairs-out",
        str(out / "pairs.tsv"),
        "--time-field",
        "ts",
        "-q",
        *METHODS[method],
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def _rest(ui: str, app: str, path: str):
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{path}", timeout=60) as r:
        return json.load(r)


def longest_task(ui: str, app: str, since_job: int) -> tuple[float, int]:
    """For the jobs after ``since_job``: the longest single task in seconds, and the last job
    id."""
    stages = {s["stageId"]: s for s in _rest(ui, app, "stages?status=complete")}
    longest = 0.0
    last = since_job
    seen: set[int] = set()
    for job in _rest(ui, app, "jobs"):
        last = max(last, job["jobId"])
        if job["jobId"] <= since_job:
            continue
        for stage_id in job["stageIds"]:
            if stage_id not in stages or stage_id in seen:  # skipped stages are not listed
                continue
            seen.add(stage_id)
            stage = stages[stage_id]
            summary = _rest(
                ui, app, f"stages/{stage_id}/{stage['attemptId']}/taskSummary?quantiles=1.0"
            )
            longest = max(longest, summary["executorRunTime"][0] / 1000)
    return longest, last


def spark_run(spark, path: Path, method: str, out: Path, state: dict) -> dict:
    """One ``run_dedup`` on ``path``: wall and stage seconds, shuffle bytes, longest task."""
    from neardup.engines.spark import run_dedup
    from neardup.settings import DEFAULT_METHOD, DEFAULT_SHINGLE, DEFAULT_THRESHOLD, Settings

    if method == "simhash":
        settings = Settings(method="simhash", shingle="word:3", hamming_k=3, verify=None)
    else:
        settings = Settings(
            method=DEFAULT_METHOD, shingle=DEFAULT_SHINGLE, threshold=DEFAULT_THRESHOLD
        )
    start = time.perf_counter()
    result, _ = run_dedup(
        spark,
        [str(path)],
        str(out / "groups.tsv"),
        settings,
        pairs_out=str(out / "pairs.tsv"),
        time_field="ts",
    )
    wall = time.perf_counter() - start
    sc = spark.sparkContext
    longest, state["last_job"] = longest_task(sc.uiWebUrl, sc.applicationId, state["last_job"])
    shuffles = {
        label.removeprefix("shuffle MB: "): mb * 1e6
        for label, mb in result.figures.items()
        if label.startswith("shuffle MB: ")
    }
    return {
        "wall": wall,
        "seconds": result.stats["seconds"],
        "shuffle": shuffles,
        "longest_task": longest,
        "candidates": result.stats["candidates"],
        "groups": result.stats["groups"],
        "largest_group": result.stats["largest_group"],
        "split_keys": result.stats.get("split_keys", 0),
    }


def same_files(a: Path, b: Path) -> bool:
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in ("groups.tsv", "pairs.tsv"))


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="JSONL corpus (corpus.py)")
    parser.add_argument(
        "--docs", default="100000", help="comma-separated corpus sizes, each the first N documents"
    )
    parser.add_argument("--methods", default="simhash,minhash")
    parser.add_argument(
        "--skew-share",
        type=float,
        default=0.3,
        help="share of documents replaced in the skewed copy, in (0, 1)",
    )
    parser.add_argument(
        "--variants",
        default="plain,skewed",
        help="comma-separated: plain (the corpus as is), skewed (the skewed copy)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="start a standalone cluster on 127.0.0.1 (a master, two 1-core workers) and run there",
    )
    parser.add_argument("--executor-memory-mb", type=int, default=4096)
    parser.add_argument("--partitions", type=int, default=8, help="shuffle partitions")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/spark.md"))
    args = parser.parse_args()
    if not 0 < args.skew_share < 1:
        parser.error(f"--skew-share must be in (0, 1); got {args.skew_share}")
    sizes = [int(d) for d in args.docs.split(",")]
    methods = args.methods.split(",")

    from neardup.engines.spark import spark_session

    config = {
        "spark.sql.shuffle.partitions": str(args.partitions),
        "spark.driver.memory": args.driver_memory,
        "spark.ui.showConsoleProgress": "false",
    }
    cluster = None
    if args.standalone:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from spark_cluster import SparkCluster

        cluster = SparkCluster(
            Path(tempfile.mkdtemp(prefix="neardup-cluster-")),
            workers=2,
            apps=1,
            executor_memory_mb=args.executor_memory_mb,
            jvm_options="-XX:+UseParallelGC",  # as a local session neardup starts
        )
        cluster.start()
        # The executors' Python workers run this interpreter (PySpark reads it from here).
        os.environ["PYSPARK_PYTHON"] = sys.executable
        args.master = f"a standalone cluster ({cluster.url}, two workers)"
        config.update(
            {
                "spark.executor.memory": f"{args.executor_memory_mb}m",
                "spark.executor.cores": "1",
                "spark.cores.max": "2",
                "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
            }
        )
    try:
        spark = spark_session(
            cluster.url if cluster else args.master, app_name="neardup-bench", config=config
        )
        spark.sparkContext.setLogLevel("ERROR")
        run_all(args, spark, sizes, methods)
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()


def run_all(args, spark, sizes: list[int], methods: list[str]) -> None:
    """The warm-up runs, then every size, method and variant; the report after each size."""
    state = {"last_job": -1}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # One untimed run per method first: the JVM, the Python workers and the kernels start cold.
        warm = tmp / "warm.jsonl"
        with open(args.corpus, encoding="utf-8") as src, open(warm, "w", encoding="utf-8") as w:
            w.writelines(line for _, line in zip(range(2_000), src))
        for method in methods:
            (tmp / f"warm-{method}").mkdir()
            spark_run(spark, warm, method, tmp / f"warm-{method}", state)
        for docs in sizes:
            inputs = write_inputs(args.corpus, docs, args.skew_share, tmp)
            size_mb = inputs["plain"].stat().st_size / 1e6
            for method in methods:
                for variant in args.variants.split(","):
                    path = inputs[variant]
                    outs = {k: tmp / f"{docs}-{method}-{variant}-{k}" for k in ("local", "spark")}
                    for o in outs.values():
                        o.mkdir()
                    local_s = local_run(path, method, outs["local"])
                    r = spark_run(spark, path, method, outs["spark"], state)
                    r.update(
                        docs=docs,
                        mb=size_mb,
                        method=method,
                        variant=variant,
                        local=local_s,
                        identical=same_files(outs["local"], outs["spark"]),
                    )
                    print(
                        f"{docs:,} {method} {variant}: local {local_s:.1f} s, spark "
                        f"{r['wall']:.1f} s, identical {r['identical']}",
                        flush=True,
                    )
                    rows.append(r)
                    for o in outs.values():
                        for f in o.iterdir():
                            f.unlink()
            for p in inputs.values():
                p.unlink()
            write_report(args, rows)  # after every size, so a long run keeps what it measured


def write_report(args, rows: list[dict]) -> None:
    share = args.skew_share
    lines = [
        f"# Spark engine on {args.master}",
        "",
        (
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; load average at the end {os.getloadavg()[0]:.1f}. "
            f"Corpus: the first N documents of `{args.corpus.name}` (benchmarks/corpus.py). "
            f"Skewed copy, same size: one document in every {round(1 / share)} replaced, "
            "alternately, by one fixed text (one exact-duplicate group) and by a copy of one notice "
            f"template with random slots (one cluster of distinct near-duplicates); {share / 2:.0%} "
            f"of the documents each. One untimed warm-up run per method first. {args.partitions} "
            f"shuffle partitions, driver memory {args.driver_memory}. "
            "simhash = `--method simhash --shingle word:3 -k 3`; minhash = the defaults "
            "(MinHash-128 char:4, 32×4 bands, LCS 0.8 verified). Wall times include reading the JSONL "
            "input and writing GROUPS and PAIRS as single TSV files."
        ),
        "",
        "| documents | method | corpus | local s | spark s | spark ÷ local | identical output | "
        + " | ".join(f"{s} s" for s in STAGES)
        + " | shuffle MB (written) | longest task s | candidates | groups | largest group |",
        "|---:|---|---|---:|---:|---:|---|" + "---:|" * len(STAGES) + "---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        stage_s = " | ".join(f"{r['seconds'].get(s, 0):.1f}" for s in STAGES)
        lines.append(
            f"| {r['docs']:,} | {r['method']} | {r['variant']} | {r['local']:.1f} | "
            f"{r['wall']:.1f} | {r['wall'] / r['local']:.1f}× | "
            f"{'yes' if r['identical'] else '**no**'} | {stage_s} | "
            f"{mb(sum(r['shuffle'].values()))} | {r['longest_task']:.1f} | {r['candidates']:,} | "
            f"{r['groups']:,} | {r['largest_group']:,} |"
        )
    lines += [
        "",
        (
            "Shuffle MB written per stage (the run's summary: Spark's status store, jobs "
            "tagged by stage; `read` = reading and checking the input, `write` = the outputs):"
        ),
        "",
        "| documents | method | corpus | " + " | ".join(STAGES) + " |",
        "|---:|---|---|" + "---:|" * len(STAGES),
    ]
    for r in rows:
        lines.append(
            f"| {r['docs']:,} | {r['method']} | {r['variant']} | "
            + " | ".join(mb(r["shuffle"].get(s, 0)) for s in STAGES)
            + " |"
        )
    if {"plain", "skewed"} <= {r["variant"] for r in rows}:
        lines += ["", "Skew: skewed ÷ plain Spark wall time (target ≤ 2×):", ""]
    for docs in dict.fromkeys(r["docs"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows):
            by = {r["variant"]: r for r in rows if r["method"] == method and r["docs"] == docs}
            if {"plain", "skewed"} <= by.keys():
                ratio = by["skewed"]["wall"] / by["plain"]["wall"]
                lines.append(
                    f"- {docs:,} {method}: {ratio:.2f}× ({'holds' if ratio <= 2 else '**fails**'}); "
                    f"longest task {by['plain']['longest_task']:.1f} s plain, "
                    f"{by['skewed']['longest_task']:.1f} s skewed; hot keys split: "
                    f"{by['skewed']['split_keys']:,}"
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
