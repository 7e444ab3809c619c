"""The driver JVM's class archive: named by what it was made with, mapped only when whole,
written at the exit of a JVM that had none, and out of the way of a user's own choice."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from neardup.engines.spark import class_archive
from neardup.engines.spark.class_archive import (
    ARCHIVE_VARIABLE,
    archive_options,
    archive_path,
    whole_archive,
)
from neardup.engines.spark.session import _JAVA_OPTION_VARIABLES, _driver_java_options

MAGIC = bytes.fromhex("a8ab0bf0")


@pytest.fixture
def fake_java(tmp_path, monkeypatch):
    """A Java home whose ``bin/java`` records its arguments in ``java.args`` beside it and
    exits with the status in ``java.status`` (0 when missing), and no class path variable
    or Java options in the environment."""
    pytest.importorskip("pyspark")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    here = java.parent
    java.write_text(
        f'#!/bin/sh\necho "$@" > {here}/java.args\n'
        f"exit $(cat {here}/java.status 2>/dev/null || echo 0)\n"
    )
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    for name in (
        *class_archive._CLASS_PATH_VARIABLES,
        *class_archive._OPTION_VARIABLES,
        ARCHIVE_VARIABLE,
    ):
        monkeypatch.delenv(name, raising=False)
    return java


def test_the_archive_is_named_by_the_java_and_spark_it_was_made_with(
    fake_java, tmp_path, monkeypatch
):
    first = archive_path(tmp_path)
    assert first.parent == tmp_path
    assert first.name.startswith("spark-classes-") and first.suffix == ".jsa"
    assert archive_path(tmp_path) == first  # the same inputs, the same name
    stat = fake_java.stat()
    os.utime(fake_java, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new Java build
    second = archive_path(tmp_path)
    assert second != first
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # another class path
    assert archive_path(tmp_path) not in (first, second)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert archive_path().parent == tmp_path / "cache"
    fake_java.unlink()  # JAVA_HOME without a java: nothing to share classes with
    assert archive_path(tmp_path) is None
    assert archive_options(folder=tmp_path) == ""


def test_only_a_file_that_starts_with_the_magic_number_is_whole(tmp_path):
    path = tmp_path / "a.jsa"
    assert not whole_archive(path)  # missing
    path.write_bytes(b"")
    assert not whole_archive(path)
    path.write_bytes(bytes(4096))  # Java writes the header last: a file being written
    assert not whole_archive(path)
    path.write_bytes(MAGIC[::-1] + bytes(100))
    assert not whole_archive(path)
    path.write_bytes(MAGIC + bytes(100))
    assert whole_archive(path)


def test_an_archive_is_mapped_when_whole_and_written_otherwise(fake_java, tmp_path):
    path = archive_path(tmp_path)
    written = f"-XX:ArchiveClassesAtExit={path} -Xlog:cds*=off"
    assert archive_options(folder=tmp_path) == written
    path.write_bytes(bytes(8192))  # cut short: written again, never mapped
    assert archive_options(folder=tmp_path) == written
    path.write_bytes(MAGIC + bytes(8192))
    assert archive_options(folder=tmp_path) == f"-XX:SharedArchiveFile={path} -Xlog:cds*=off"
    # A folder that cannot be made: nothing.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert archive_options(folder=blocked / "cache") == ""


def test_no_archive_is_written_for_a_class_path_folder_with_files(fake_java, tmp_path, monkeypatch):
    """Java refuses to write an archive when a folder on the class path holds files (and says
    so as the JVM exits): Spark's configuration folder with a spark-defaults.conf, say."""
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert archive_options(folder=tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    (conf / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    assert archive_options(folder=tmp_path) == ""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "missing"))
    assert archive_options(folder=tmp_path) != ""
    for name, value in [
        ("HADOOP_CONF_DIR", str(conf)),
        ("SPARK_DIST_CLASSPATH", f"/nowhere{os.pathsep}{conf}"),
    ]:
        monkeypatch.setenv(name, value)
        assert archive_options(folder=tmp_path) == "", name
        monkeypatch.delenv(name)
    monkeypatch.setenv("SPARK_DIST_CLASSPATH", f"{conf}/*")  # jars of a folder, not the folder
    assert archive_options(folder=tmp_path) != ""


def test_a_new_archive_leaves_the_two_others_written_or_used_last(fake_java, tmp_path):
    others = []
    for age in range(4):
        other = tmp_path / f"spark-classes-{age:016x}.jsa"
        other.write_bytes(MAGIC)
        os.utime(other, (1_000_000 - age, 1_000_000 - age))
        others.append(other)
    unrelated = tmp_path / "kernel.nbi"
    unrelated.write_bytes(b"")
    archive_options(folder=tmp_path)  # writes a new one: the oldest two others go
    assert [other.exists() for other in others] == [True, True, False, False]
    assert unrelated.exists()
    archive_path(tmp_path).write_bytes(MAGIC)
    archive_options(folder=tmp_path)  # maps it: nothing removed
    assert [other.exists() for other in others] == [True, True, False, False]
    # The archive in use goes last: mapping it marks it used.
    used = archive_path(tmp_path)
    os.utime(used, (1, 1))
    archive_options(folder=tmp_path)
    newest = tmp_path / "spark-classes-ffffffffffffffff.jsa"
    newest.write_bytes(MAGIC)
    fake_java.write_text(fake_java.read_text() + "\n")  # another Java build: a new archive
    assert archive_path(tmp_path) != used
    archive_options(folder=tmp_path)
    assert used.exists() and newest.exists()
    assert not others[0].exists() and not others[1].exists()


@pytest.mark.parametrize(
    "options",
    [
        "-Xshare:off",
        "-XX:SharedArchiveFile=/opt/app.jsa",
        "-Dx=1 -XX:ArchiveClassesAtExit=/tmp/a.jsa",
        "-XX:+AutoCreateSharedArchive",
    ],
)
def test_a_users_own_class_sharing_is_left_alone(fake_java, tmp_path, options):
    assert archive_options(options, folder=tmp_path) == ""
    assert archive_options("-Dx=1 -XX:+UseParallelGC", folder=tmp_path) != ""


def test_no_archive_is_written_by_a_jvm_that_would_not_start(fake_java, tmp_path, monkeypatch):
    """Java 17 refuses to start when asked to write an archive without its own base archive
    mapped (a JDK without one, -Xshare:off): a probe with the session's and the environment's
    Java options decides first."""
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dfrom.submit=1")
    assert archive_options("-Dmine='a b'", folder=tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    probed = (fake_java.parent / "java.args").read_text().split()
    assert probed[0].startswith("-XX:ArchiveClassesAtExit=") and probed[-1] == "-version"
    assert "-Dmine=a" in probed and "-Dfrom.submit=1" in probed  # quoted as a shell would
    assert archive_options("-Dmine='a b", folder=tmp_path) == ""  # unbalanced quotes
    (fake_java.parent / "java.status").write_text("1")
    assert archive_options(folder=tmp_path) == ""
    archive_path(tmp_path).write_bytes(MAGIC)  # mapping one needs no probe
    assert archive_options(folder=tmp_path).startswith("-XX:SharedArchiveFile=")


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_the_archive_can_be_turned_off(fake_java, tmp_path, monkeypatch, value):
    monkeypatch.setenv(ARCHIVE_VARIABLE, value)
    assert archive_options(folder=tmp_path) == ""
    monkeypatch.setenv(ARCHIVE_VARIABLE, "1")
    assert archive_options(folder=tmp_path) != ""


def test_the_launch_gets_the_archive_before_the_users_java_options(
    fake_java, tmp_path, monkeypatch
):
    for name in _JAVA_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    path = archive_path()
    with _driver_java_options({}):
        options = os.environ["SPARK_SUBMIT_OPTS"].split()
        assert f"-XX:ArchiveClassesAtExit={path}" in options
        assert options.index(f"-XX:ArchiveClassesAtExit={path}") < options.index("-Dmine=1")
        assert options[-1] == "-Dmine=1"
    assert os.environ["SPARK_SUBMIT_OPTS"] == "-Dmine=1"
    # No launch (a JVM is running), or the session's own options choose: nothing added.
    with _driver_java_options(None):
        assert "Archive" not in os.environ["SPARK_SUBMIT_OPTS"]
    with _driver_java_options({"spark.driver.extraJavaOptions": "-Xshare:off"}):
        assert "Archive" not in os.environ["SPARK_SUBMIT_OPTS"]
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:SharedArchiveFile=/opt/app.jsa")
    with _driver_java_options({}):
        assert "Archive" not in os.environ["SPARK_SUBMIT_OPTS"]
    monkeypatch.delenv("JAVA_TOOL_OPTIONS")
    # The session's Java options from spark-defaults.conf when the builder has none.
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    archive_path().write_bytes(MAGIC)
    (conf / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Dx=1\n")
    with _driver_java_options({}):
        assert f"-XX:SharedArchiveFile={archive_path()}" in os.environ["SPARK_SUBMIT_OPTS"]
    (conf / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Xshare:off\n")
    with _driver_java_options({}):
        assert "Archive" not in os.environ["SPARK_SUBMIT_OPTS"]
    with _driver_java_options({"spark.driver.extraJavaOptions": "-Dx=1"}):  # the builder's win
        assert "Archive" in os.environ["SPARK_SUBMIT_OPTS"]


_SESSION_SCRIPT = """
import sys
from neardup.engines.spark import spark_session
from pyspark import SparkContext

spark = spark_session("local[1]", config={"spark.ui.enabled": "false"})
assert spark.range(100).count() == 100
jvm = spark.sparkContext._jvm
arguments = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
print("ARGS", " ".join(str(a) for a in arguments))
with open(f"/proc/{SparkContext._gateway.proc.pid}/maps") as maps:
    print("MAPPED", sys.argv[1] in maps.read())
"""


@pytest.mark.spark
def test_a_session_writes_the_archive_once_and_the_next_one_maps_it(tmp_path):
    """A real driver JVM: the first session's JVM, which had no archive, writes one as it
    exits, after the Python process has ended; the next session's JVM maps that file."""
    pytest.importorskip("pyspark")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("needs a Java runtime")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("reads the JVM's memory maps from /proc")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    for name in (*_JAVA_OPTION_VARIABLES, ARCHIVE_VARIABLE):
        env.pop(name, None)
    env["NUMBA_CACHE_DIR"] = str(tmp_path)  # this test's archive only
    saved = os.environ.get("NUMBA_CACHE_DIR")
    os.environ["NUMBA_CACHE_DIR"] = str(tmp_path)
    try:
        path = archive_path()
    finally:
        if saved is None:
            del os.environ["NUMBA_CACHE_DIR"]
        else:
            os.environ["NUMBA_CACHE_DIR"] = saved

    def session() -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", _SESSION_SCRIPT, str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        assert "[cds]" not in done.stdout + done.stderr  # the archive's log lines are off
        return lines["ARGS"], lines["MAPPED"]

    arguments, mapped = session()
    assert f"-XX:ArchiveClassesAtExit={path}" in arguments.split()
    assert mapped == "False"
    deadline = time.monotonic() + 180  # the JVM writes it after the process ended
    while not whole_archive(path) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert whole_archive(path)
    arguments, mapped = session()
    assert f"-XX:SharedArchiveFile={path}" in arguments.split()
    assert mapped == "True"
