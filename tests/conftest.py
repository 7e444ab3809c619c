"""Shared fixtures."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from spark_cluster import TEST_JVM_OPTIONS, SparkCluster
from spark_connect import SparkConnectServer
from synth_helpers import ENGLISH, KOREAN


def _needs_spark(tests: str) -> None:
    """Skip unless pyspark and a Java runtime are here."""
    pytest.importorskip("pyspark")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip(f"{tests} need a Java runtime")


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (2 cores) for every Spark test; skips without pyspark or Java.

    Small shuffles and no UI keep the tests quick; adaptive execution is off here (one test
    turns it on) because re-planning costs more than it saves on a few thousand rows, and so
    is whole-stage code generation, with the JVM's quick compiler alone
    (:data:`TEST_JVM_OPTIONS`): on a few rows compiling costs more than it saves.
    """
    _needs_spark("the Spark tests")
    from neardup.engines.spark import spark_session

    session = spark_session(
        "local[2]",
        app_name="neardup-tests",
        config={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.adaptive.enabled": "false",
            "spark.driver.memory": "2g",
            "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
            "spark.sql.codegen.wholeStage": "false",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster (a master and two workers, separate JVMs on 127.0.0.1; up to
    three applications at once, each with a 1-core executor on both workers) for the whole
    session, stopped and removed after; skips without pyspark or Java. Only the tests marked
    ``spark`` use it, and they reach it from other processes (drivers of their own), since this
    process holds the local session of the ``spark`` fixture."""
    _needs_spark("the Spark cluster tests")
    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory):
    """A Spark Connect server (a ``local[2]`` driver of its own, its service on 127.0.0.1) for
    the whole session, stopped after; skips without pyspark, Java or Spark Connect's client
    libraries. Its clients are processes of their own: a Spark Connect session switches
    pyspark to its client mode for the whole process, which this one's local session of the
    ``spark`` fixture must not see."""
    _needs_spark("the Spark Connect tests")
    pytest.importorskip("grpc")
    server = SparkConnectServer(tmp_path_factory.mktemp("spark-connect"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def labelling_sheet(tmp_path):
    """Writes a labelling sheet of ``n`` unlabelled pairs (as `neardup sample` does) into
    ``tmp_path``, as ``sheet.EXT``, and returns its path."""
    from neardup.quality.sampling import write_sheet

    def write(ext: str = "tsv", n: int = 5):
        rows = {
            "id_a": [f"a{i}" for i in range(n)],
            "id_b": [f"b{i}" for i in range(n)],
            "distance": list(range(n)),
            "stratum": [f"d{i:02d}" for i in range(n)],
            "text_a": [f"the quick brown fox number {i} jumps" for i in range(n)],
            "text_b": [f"the quick red fox number {i} jumps high" for i in range(n)],
            "label": [None] * n,
        }
        path = tmp_path / f"sheet.{ext}"
        write_sheet(path, rows)
        return path

    return write


@pytest.fixture
def kill_writer_after():
    """Runs a writer script (``python -c SCRIPT ARGS...``, one acknowledged ID per stdout
    line) until it has acknowledged ``want`` adds or ``timeout`` seconds pass, then kills it
    with SIGKILL; returns the acknowledged IDs. Fails if the writer stopped early."""

    def run(script: str, *args: str, want: int, timeout: float = 60.0) -> list[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + timeout
        acknowledged: list[str] = []
        try:
            while len(acknowledged) < want and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                acknowledged.append(line.strip())
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            proc.stdout.close()
            proc.stderr.close()
        assert len(acknowledged) == want, "the writer stopped early"
        return acknowledged

    return run


def synthetic_corpus(seed=7, families=12, copies=4):
    """Families of near-duplicates: a base text and copies with 0..3 changed words."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]
    texts, ids, cluster = [], [], []
    for f in range(families):
        base = [rng.choice(vocab) for _ in range(rng.randint(25, 60))]
        for c in range(copies):
            words = list(base)
            for _ in range(rng.randint(0, 3) if c else 0):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
            ids.append(f"f{f}c{c}")
            cluster.append(f)
    return texts, ids, cluster


@pytest.fixture(scope="module")
def labelled_families():
    """The texts and IDs of :func:`synthetic_corpus` (12 families of 4) with two truths of it:
    80 labelled pairs (about half within a family) and the families as clusters; returns
    ``(texts, ids, pair_truth, cluster_truth)``."""
    from neardup.quality import ClusterTruth, PairTruth

    texts, ids, cluster = synthetic_corpus()
    rng = random.Random(3)
    a, b, labels = [], [], []
    for _ in range(80):
        i, j = rng.sample(range(len(ids)), 2)
        if rng.random() < 0.5:  # oversample same-family pairs
            j = (i // 4) * 4 + (i + 1) % 4
        a.append(ids[i])
        b.append(ids[j])
        labels.append(int(cluster[i] == cluster[j]))
    pairs = PairTruth.from_arrays(a, b, labels)
    clusters = ClusterTruth.from_arrays(ids, cluster)
    return texts, ids, pairs, clusters


@pytest.fixture(scope="module")
def synth_corpus():
    """The labelled corpus that ``synth.generate`` derives from the English and Korean bases of
    synth_helpers.py: every edit once per base, and 25 documents of the hot template."""
    from neardup.quality import synth

    return synth.generate(
        ENGLISH + KOREAN, seed=7, per_base=len(synth.EDITS), edits="all", hot_template=25
    )


#: The JVMs a test may share, by the fixture that starts them: under pytest-xdist the tests that
#: use one run on one worker (pyproject.toml sets ``--dist loadgroup``), so that a run starts
#: each once, as without workers, not once a worker (each JVM wants a core and a GB). The
#: groups are independent (the cluster's and the Connect server's clients are processes of
#: their own), so they start at once, on the two workers, and the rest of the suite fills in
#: behind them.
SHARED_JVMS = {
    "spark": "spark-session",
    "spark_cluster": "spark-cluster",
    "spark_connect": "spark-connect",
}


def _join_group(item, group: str) -> None:
    """Put ``item`` in the xdist group ``group`` (as ``@pytest.mark.xdist_group(group)``
    would): ``--dist loadgroup`` reads the group from the test's ID, after an ``@``.

    Done here rather than by the mark because pytest-xdist 3.8 writes the suffix where
    pytest 9.2 no longer reads it (``Node._nodeid``; pytest-xdist issue 1386): with the mark
    alone the groups were silently ignored and each worker started its own JVMs."""
    suffixed = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):  # pytest >= 9.2: a structured ID
        item._id = type(item._id).parse(suffixed)
    else:
        item._nodeid = suffixed


#: The quick run (``--quick``) runs each property test on this fraction of its examples, and
#: at least :data:`QUICK_MIN_EXAMPLES`; the full run on all of them.
QUICK_EXAMPLES_FRACTION = 0.25
QUICK_MIN_EXAMPLES = 10


def pytest_addoption(parser):
    parser.addoption(
        "--quick",
        action="store_true",
        help="the quick run: leave out the tests marked slow (Spark, the browser, whole "
        f"processes of seconds) and run each property test on {QUICK_EXAMPLES_FRACTION:.0%} of "
        "its examples (docs/contributing.md)",
    )


def _fewer_examples(test) -> None:
    """Lower the examples of one hypothesis test to the quick run's share, once (parametrised
    tests share the function). The explicit ``@settings(max_examples=...)`` of a test wins
    over any profile, hence the test's own settings object is replaced."""
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if own is None or getattr(test, "_quick_examples", False):
        return
    from hypothesis import settings

    quick = max(QUICK_MIN_EXAMPLES, round(own.max_examples * QUICK_EXAMPLES_FRACTION))
    test._hypothesis_internal_use_settings = settings(
        own, max_examples=min(quick, own.max_examples)
    )
    test._quick_examples = True


def pytest_collection_modifyitems(config, items):
    """Groups the tests that share a JVM (:data:`SHARED_JVMS`), marks the Spark and browser
    tests slow, and in the quick run (``--quick``) leaves the slow tests out and runs each
    property test on fewer examples."""
    quick = config.getoption("--quick")
    grouping = bool(config.getoption("loadgroup", False))  # an xdist worker, --dist loadgroup
    kept, slow = [], []
    for item in items:
        groups = [SHARED_JVMS[name] for name in SHARED_JVMS if name in item.fixturenames]
        if groups and grouping:
            _join_group(item, groups[0])
        if item.get_closest_marker("spark") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
        if quick and item.get_closest_marker("slow"):
            slow.append(item)
            continue
        kept.append(item)
        if quick and getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            _fewer_examples(item.obj)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = kept


def _worker_processes(config) -> int:
    """How many pytest-xdist workers this run starts (0 without ``-n``, and in a worker)."""
    if hasattr(config, "workerinput"):
        return 0
    count = config.getoption("numprocesses", None)
    if count in ("auto", "logical"):
        return os.cpu_count() or 1
    return int(count or 0)


def pytest_sessionstart(session):
    """With pytest-xdist workers, compile every kernel not in numba's cache yet by ``neardup
    warm``, once, before they start (pytest-xdist's own hook, which starts them, comes last).
    Otherwise, with an empty cache (a fresh clone, CI), each worker and each command a test
    runs as a process compiles the kernels it meets first on its own, often the same kernels at
    the same time. With every kernel cached it takes about a second."""
    if _worker_processes(session.config) < 1:
        return
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "neardup", "warm"], capture_output=True, text=True, timeout=1800
    )
    lines = done.stdout.strip().splitlines()
    said = lines[-1] if done.returncode == 0 and lines else f"failed: {done.stderr.strip()}"
    session.config.pluginmanager.get_plugin("terminalreporter").write_line(
        f"before the tests, neardup warm: {said.removeprefix('neardup: ')} "
        f"({time.perf_counter() - started:.1f} s)"
    )


@pytest.fixture(autouse=True)
def _no_process_exit_inside_the_test_run(monkeypatch):
    """`neardup.signals.exit_process` ends the process at once (`os._exit`), right for the
    command, fatal for a test run: called in-process by mistake it would end pytest mid-run
    with the command's status, 0 included, and a suite that never finished would look green.
    Here it fails the test instead. Commands run as subprocesses are unaffected."""
    from neardup import signals

    def refuse(status):
        pytest.fail(f"exit_process({status!r}) called inside the test process")

    monkeypatch.setattr(signals, "exit_process", refuse)
