"""The JVM a local session starts, set for the run's size (``neardup.engines.spark.session``),
and the estimate of that size made before Spark starts (``neardup.engines.spark.read``)."""

import gzip

import pytest
from test_spark import _local_settings, no_spark_settings  # noqa: F401 - a fixture

from neardup.engines.base import Corpus, Outputs
from neardup.engines.spark import SparkEngine
from neardup.engines.spark import job as spark_job
from neardup.engines.spark import read as spark_read
from neardup.engines.spark.read import estimated_documents
from neardup.engines.spark.session import (
    LOCAL_DRIVER_GC,
    QUICK_JIT,
    QUICK_JIT_DOCUMENTS,
    _local_defaults,
    local_java_options,
)
from neardup.settings import Settings

JAVA = "spark.driver.extraJavaOptions"


@pytest.mark.parametrize(
    "documents, quick",
    [
        (0, True),
        (100_000, True),
        (QUICK_JIT_DOCUMENTS, True),
        (QUICK_JIT_DOCUMENTS + 1, False),
        (10**9, False),
        (None, False),
    ],
)
def test_a_run_known_to_be_short_gets_the_quick_compiler_beside_the_collector(
    documents,
    quick,
    no_spark_settings,  # noqa: F811
):
    expected = f"{LOCAL_DRIVER_GC} {QUICK_JIT}" if quick else LOCAL_DRIVER_GC
    assert local_java_options(documents) == expected
    assert _local_settings(defaults=lambda b: _local_defaults(b, documents))[JAVA] == expected


def test_java_options_of_the_users_replace_the_quick_compiler(no_spark_settings):  # noqa: F811
    mine = {JAVA: "-Dx=1"}
    assert _local_settings(mine, defaults=lambda b: _local_defaults(b, 10))[JAVA] == "-Dx=1"
    (no_spark_settings / "spark-defaults.conf").write_text(f"{JAVA} -XX:+UseG1GC\n")
    assert JAVA not in _local_settings(defaults=lambda b: _local_defaults(b, 10))


def _lines(count: int, width: int) -> bytes:
    return b"".join(b'{"id": %06d, "text": "%s"}\n' % (i, b"w" * width) for i in range(count))


def test_the_documents_of_a_file_read_whole_are_its_lines(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(_lines(250, 40))
    assert estimated_documents([str(path)]) == 250
    path.write_bytes(_lines(250, 40)[:-1])  # no line end after the last line
    assert estimated_documents([str(path)]) == 250
    path.write_bytes(b"")
    assert estimated_documents([str(path), "file://" + str(path)]) == 0
    other = tmp_path / "e.jsonl"
    other.write_bytes(_lines(7, 3))
    assert estimated_documents([str(path), str(other), str(other)]) == 14


def test_a_long_file_is_estimated_from_the_mean_line_of_its_start(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_read, "ESTIMATE_SAMPLE_BYTES", 4096)
    path = tmp_path / "d.jsonl"
    path.write_bytes(_lines(20_000, 50))
    assert abs(estimated_documents([str(path)]) - 20_000) <= 200
    # Lines longer than the sample: at most one line a sample's bytes.
    path.write_bytes(b"x" * 10_000 + b"\n" + b"y" * 10_000 + b"\n")
    assert estimated_documents([str(path)]) == 5


class _Counted:
    """A file whose reads are counted in ``reads``."""

    def __init__(self, file, reads):
        self.file, self.reads = file, reads

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def fileno(self):
        return self.file.fileno()

    def read(self, size):
        data = self.file.read(size)
        self.reads.append(len(data))
        return data


def test_many_files_are_estimated_from_a_sample_of_the_first(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_read, "ESTIMATE_SAMPLE_BYTES", 4096)
    reads = []
    monkeypatch.setattr(
        spark_read, "open", lambda path, mode: _Counted(open(path, mode), reads), raising=False
    )
    paths = []
    for name in "abcde":
        paths.append(str(tmp_path / f"{name}.jsonl"))
        (tmp_path / f"{name}.jsonl").write_bytes(_lines(3_000, 50))
    assert abs(estimated_documents(paths) - 15_000) <= 150
    assert sum(reads) == 4096


def test_inputs_spark_lists_have_no_estimate(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(_lines(10, 5))
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(_lines(10, 5)))
    for inputs in (
        [str(packed)],
        [str(tmp_path / "*.jsonl")],
        [str(tmp_path)],
        [str(tmp_path / "missing.jsonl")],
        ["hdfs:///corpus/d.jsonl"],
        ["-"],
        [str(path), str(packed)],
    ):
        assert estimated_documents(inputs) is None, inputs


class _Started(Exception):
    """Raised by a stand-in session start, to end the run there."""


@pytest.mark.parametrize("command", ["dedup", "pairs"])
@pytest.mark.parametrize("remote", [None, "sc://127.0.0.1:1"])
def test_a_run_starts_its_session_with_its_inputs_estimate(command, remote, tmp_path, monkeypatch):
    started = []

    def session(master=None, remote=None, documents=None):
        started.append((master, remote, documents))
        raise _Started

    monkeypatch.setattr(spark_job, "spark_session", session)
    path = tmp_path / "d.tsv"
    path.write_bytes(b"".join(b"%d\t%d\n" % (i, i) for i in range(123)))
    master = None if remote else "local[2]"
    engine = SparkEngine(master=master, remote=remote)
    settings = Settings(method="simhash") if command == "pairs" else Settings()
    with pytest.raises(_Started):
        outputs = Outputs(groups=str(tmp_path / "g.tsv"), pairs=str(tmp_path / "p.tsv"))
        getattr(engine, command)(Corpus((str(path),)), settings, outputs)
    assert started == [(master, remote, None if remote else 123)]
