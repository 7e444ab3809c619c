"""Shared fixtures."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest


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
