"""The Spark engine through Spark Connect (``--spark-remote sc://…``): the same files as the
local engine, from client processes of a Spark Connect server on 127.0.0.1 (the
``spark_connect`` fixture); and the pieces that differ from a classic session."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from synth_helpers import chain_corpus

from neardup.cli import main
from neardup.engines.base import Progress
from neardup.engines.spark.frames import mark
from neardup.engines.spark.monitor import GROUP_PREFIX, RunMonitor

pytestmark = pytest.mark.spark

#: Runs through the server, by name: ``neardup`` arguments writing into ``{out}``. MinHash with
#: the defaults over edit chains (the repair round links documents there), SimHash with its
#: originals written back, and ``pairs``.
JOBS = {
    "minhash": ["dedup", "{corpus}/docs.jsonl", "{corpus}/chains.jsonl", "--time-field", "ts"],
    "simhash": [
        "dedup", "{corpus}/docs.jsonl", "--method", "simhash", "--shingle", "word:3", "-k", "3",
        "--keep", "{out}/kept.jsonl",
    ],
    "pairs": ["pairs", "{corpus}/fps.tsv", "-k", "4", "--groups-out", "{out}/groups.tsv"],
}  # fmt: skip


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """JSON Lines of 200 documents (families of edited copies, times in reverse order for a
    part), the edit chains of :func:`~synth_helpers.chain_corpus`, and SimHash rows of the
    documents."""
    folder = tmp_path_factory.mktemp("connect-corpus")
    chains = chain_corpus(bases=6)
    rows = [{**d, "ts": (k * 7919) % 500} for k, d in enumerate(chain_corpus(seed=5, bases=25))]
    chains = [{**d, "id": "chain-" + d["id"], "ts": 0} for d in chains]
    for name, docs in (("docs", rows[:200]), ("chains", chains)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    done = CliRunner().invoke(
        main,
        ["fingerprint", str(folder / "docs.jsonl"), "-o", str(folder / "fps.tsv"),
         "--time-field", "ts", "--method", "simhash", "--workers", "1"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return folder


def _args(name: str, corpus, out) -> list[str]:
    main_output = "{out}/pairs.tsv" if name == "pairs" else "{out}/groups.tsv"
    args = [*JOBS[name], "-o", main_output, "--summary-out", "{out}/summary.json"]
    if name != "pairs":
        args += ["--pairs-out", "{out}/pairs.tsv"]
    return [a.format(corpus=corpus, out=out) for a in args]


@pytest.fixture(scope="module")
def connect_runs(spark_connect, corpus, tmp_path_factory):
    """Every run of :data:`JOBS` through the server (a ``neardup`` process each, one after
    the other) and on the local engine: ``{name: {"local": folder, "spark": folder,
    "stderr": the client's stderr}}``."""
    runs = {}
    for name in JOBS:
        runs[name] = {e: tmp_path_factory.mktemp(f"{name}-{e}") for e in ("local", "spark")}
        local = CliRunner().invoke(main, [*_args(name, corpus, runs[name]["local"]), "-q"])
        assert local.exit_code == 0, local.output
        command = [sys.executable, "-m", "neardup", *_args(name, corpus, runs[name]["spark"])]
        command += ["--engine", "spark", "--spark-remote", spark_connect.url]
        done = subprocess.run(
            command, env=spark_connect.env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:] + "\n" + spark_connect.log_tail()
        runs[name]["stderr"] = done.stderr
    return runs


def _outputs(folder) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.suffix != ".json"}


@pytest.mark.parametrize("name", list(JOBS))
def test_connect_writes_the_local_engines_files(connect_runs, name):
    local, spark = connect_runs[name]["local"], connect_runs[name]["spark"]
    assert _outputs(spark) == _outputs(local)
    assert (local / "pairs.tsv").read_bytes().count(b"\n") > 20
    counts = [json.loads((f / "summary.json").read_text())["counts"] for f in (spark, local)]
    # What the runs decided (the engines count their own work differently).
    decided = ["pairs_written", "groups", "largest_group", "documents_removed"]
    if name == "minhash":
        decided.append("links_found_across_star_components")
    spark_decided, local_decided = ({k: c[k] for k in decided} for c in counts)
    assert spark_decided == local_decided
    if name == "minhash":
        assert counts[1]["links_found_across_star_components"] > 0


def test_connect_client_stderr_is_the_summary_alone(connect_runs):
    stderr = connect_runs["minhash"]["stderr"]
    assert "pairs written" in stderr
    # The client's warnings that a user cannot act on (pandas' version, the window over the
    # inputs' few splits) and no shuffle figures, which only a classic driver can see.
    for noise in ("Warning", "WindowExpression", "shuffle MB"):
        assert noise not in stderr, noise


SHIPPED_AT_MOST = """
import json
import sys
import neardup.engines.spark.frames as frames
from neardup.engines.spark import run_dedup, spark_session
from neardup.settings import Settings

frames.SHIPPED_BYTES = int(sys.argv[6])  # what rides in the tasks; the rest is joined
share, told = frames.Storage.share, {"shipped": 0, "refused": 0}


def counted(storage, value):
    shared = share(storage, value)
    told["refused" if shared is None else "shipped"] += 1
    return shared


frames.Storage.share = counted
spark = spark_session(remote=sys.argv[1])
run_dedup(spark, sys.argv[2:4], sys.argv[4], Settings(), pairs_out=sys.argv[5], time_field="ts")
print(json.dumps(told))
"""


@pytest.mark.parametrize("limit", [0, 12_000])
def test_connect_joins_what_it_cannot_ship(spark_connect, corpus, connect_runs, tmp_path, limit):
    # Values too large to send inside the tasks: with none sent, the bounds and the
    # verification take the joins a classic session takes past its broadcast limits; with
    # room for the coarse sketches alone (a few KB here), those bound the candidates and
    # joins the pairs they leave. The same files all the same.
    inputs = [str(corpus / "docs.jsonl"), str(corpus / "chains.jsonl")]
    groups, pairs = tmp_path / "groups.tsv", tmp_path / "pairs.tsv"
    script = [SHIPPED_AT_MOST, spark_connect.url, *inputs, groups, pairs, limit]
    done = subprocess.run(
        [sys.executable, "-c", *map(str, script)],
        env=spark_connect.env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    told = json.loads(done.stdout.splitlines()[-1])
    if limit == 0:  # the sketches, the coarse ones, each verification's places: all joined
        assert told["shipped"] == 0 and told["refused"] >= 3
    else:  # the sketches alone refused
        assert told["refused"] == 1 and told["shipped"] >= 2
    local = connect_runs["minhash"]["local"]
    assert groups.read_bytes() == (local / "groups.tsv").read_bytes()
    assert pairs.read_bytes() == (local / "pairs.tsv").read_bytes()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--spark-remote", "sc://127.0.0.1:1"], "--spark-remote applies to --engine spark"),
        (["--spark-master", "local[2]"], "--spark-master applies to --engine spark"),
        (
            ["--engine", "spark", "--spark-remote", "127.0.0.1:15002"],
            "a Spark Connect address starts with sc://",
        ),
        (
            ["--engine", "spark", "--spark-master", "local[2]", "--spark-remote", "sc://h:1"],
            "(--spark-master or --spark-remote), not both",
        ),
    ],
)
def test_connect_options_are_refused_where_they_would_do_nothing(tmp_path, args, message):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one two three four"}\n')
    done = CliRunner().invoke(main, ["dedup", str(docs), "-o", str(tmp_path / "g.tsv"), *args])
    assert done.exit_code != 0
    assert message in done.output


class _ConnectSession:
    """What a Spark Connect session offers a run's monitor: tags and progress handlers."""

    __module__ = "pyspark.sql.connect.session"

    def __init__(self):
        self.tags: list[str] = []
        self.handlers: list = []

    def addTag(self, tag):
        self.tags.append(tag)

    def removeTag(self, tag):
        self.tags.remove(tag)

    def registerProgressHandler(self, handler):
        self.handlers.append(handler)

    def removeProgressHandler(self, handler):
        self.handlers.remove(handler)


class _Shown(Progress):
    def __init__(self):
        self.events: list[tuple] = []

    def stage(self, name, total=None, unit="docs"):
        self.events.append(("stage", name, total, unit))

    def advance(self, amount, docs=None, spilled=None):
        self.events.append(("advance", amount))


def test_monitor_of_a_connect_session_tags_stages_and_shows_the_servers_reports():
    session, shown = _ConnectSession(), _Shown()
    stage = SimpleNamespace
    with RunMonitor(session, shown) as monitor:
        assert len(session.handlers) == 1
        report = session.handlers[0]
        monitor.tag("read")
        assert session.tags == [GROUP_PREFIX + "read"]
        report([stage(stage_id=3, num_tasks=4, num_completed_tasks=1, done=False)], 3, "op", False)
        report([stage(stage_id=3, num_tasks=4, num_completed_tasks=3, done=False)], 1, "op", False)
        monitor.tag("candidates")
        assert session.tags == [GROUP_PREFIX + "candidates"]
        report([stage(stage_id=3, num_tasks=4, num_completed_tasks=4, done=True)], 0, "op", True)
        report([stage(stage_id=5, num_tasks=2, num_completed_tasks=2, done=False)], 0, "op", False)
    assert session.tags == [] and session.handlers == []
    assert shown.events == [
        ("stage", "read", 4, "tasks"),
        ("advance", 1),
        ("advance", 2),
        ("stage", "candidates", None, "tasks"),
        ("stage", "candidates", 2, "tasks"),
        ("advance", 2),
    ]
    assert monitor.shuffle_written() == {}
    assert monitor.figures(4) == {"shuffle partitions": 4}


def test_mark_reads_what_the_run_set_not_a_column_of_that_name():
    class Frame:  # answers every missing name, as a Spark Connect DataFrame does
        def __getattr__(self, name):
            return f"column {name}"

    frame = Frame()
    assert mark(frame, "_neardup_rows") is None
    frame._neardup_rows = 12
    assert mark(frame, "_neardup_rows") == 12


DATAFRAME = """
import json, sys
from neardup.engines.spark import dedup_dataframe, spark_session

spark = spark_session(remote=sys.argv[1])
rows = [json.loads(line) for line in open(sys.argv[2])]
values = [(r["id"], r["text"], r["ts"]) for r in rows]
df = spark.createDataFrame(values, "id string, text string, ts long")
result = dedup_dataframe(df, time_field="ts")
columns = ["id", "duplicate_id", "original_id", "is_original", "group_size"]
for row in result.groups.orderBy("pos").select(*columns).collect():
    print("\\t".join(str(v).lower() if isinstance(v, bool) else str(v) for v in row))
result.release()
"""


def test_connect_dataframe_in_groups_out(spark_connect, corpus, tmp_path):
    # The DataFrame API on a client session: the same GROUPS as the local engine's file.
    done = subprocess.run(
        [sys.executable, "-c", DATAFRAME, spark_connect.url, str(corpus / "docs.jsonl")],
        env=spark_connect.env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    local = CliRunner().invoke(
        main,
        ["dedup", str(corpus / "docs.jsonl"), "-o", str(tmp_path / "g.tsv"), "--time-field", "ts"],
    )
    assert local.exit_code == 0, local.output
    expected = (tmp_path / "g.tsv").read_text().splitlines()[1:]
    assert done.stdout.splitlines() == expected
    assert sum(line.split("\t")[3] == "false" for line in expected) > 20


def test_connect_missing_input_is_one_clear_error(spark_connect, tmp_path):
    missing = tmp_path / "no-such.jsonl"
    command = [sys.executable, "-m", "neardup", "dedup", str(missing), "-o", str(tmp_path / "g")]
    command += ["--engine", "spark", "--spark-remote", spark_connect.url]
    done = subprocess.run(command, env=spark_connect.env, capture_output=True, text=True)
    assert done.returncode != 0
    assert str(missing) in done.stderr
    assert "Traceback" not in done.stderr
