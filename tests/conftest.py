"""Shared fixtures."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from synth_helpers import ENGLISH, KOREAN


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (2 cores) for every Spark test; skips without pyspark or Java.

    Small shuffles and no UI keep the tests quick; adaptive execution is off here (one test
    turns it on) because re-planning costs more than it saves on a few thousand rows.
    """
    pytest.importorskip("pyspark")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("the Spark tests need a Java runtime")
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
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


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
