"""The driver JVM's class archive: Java's class data sharing for the sessions neardup starts.

A Spark driver spends seconds of every run loading, parsing and verifying classes from Spark's
jars: at its start, and again at each new kind of job (the SQL planner, code generation, Arrow,
the shuffle). Java 13 and later can write the classes a run loaded to an archive when the JVM
exits (``-XX:ArchiveClassesAtExit``) and map that archive, already parsed and verified, at the
next start (``-XX:SharedArchiveFile``). The driver JVM that :func:`spark_session
<neardup.engines.spark.session.spark_session>` launches gets :func:`archive_options`:

- when a whole archive exists, the JVM maps it;
- when none does, the JVM writes one as it exits, after the neardup process has ended (about
  14 s of one core on the machine of the figures below, once), so no run waits for it.

Java writes an archive's header last, so a file still being written, or cut short by a
crash, starts with zeros instead of the archive's magic number: :func:`archive_options` maps
only whole archives (:func:`whole_archive`), and a JVM handed anything else starts without
it (``-Xshare:auto``), as it would have without the option. A writer first removes the file
it replaces, so processes that mapped the old one keep it and two writers each write their own.

The archive lives beside numba's cache (``NUMBA_CACHE_DIR``, else the package's
``__pycache__``), 100–200 MB, named by a digest of what the JVM checks it against
(pyspark's version and Spark home, the Java executable, the variables that make up the
class path): a new Java or Spark gets a new archive, never a stale one, and writing one
removes all but the two of other installations written or used last. Its log lines are off.
Nothing is added when the Java options of the environment or of the session mention class
sharing, or when ``NEARDUP_SPARK_CLASS_ARCHIVE=0``; none is written for a class path with a folder that
holds files (Java refuses: Spark's configuration folder with a ``spark-defaults.conf``, say),
nor by a JVM that a ``java -version`` probe with the same options shows would not start
(Java 17 refuses to start one that should write an archive without its own base archive).
Executors of a cluster are other JVMs on other machines and start as they did.

Measured (docs/spark.md, Figures), whole commands on ``local[2]``: 100,000 English documents
38.4 s without the archive and 31.0 s with it, 1M 137.6 and 125.1 s; a plain session's start
7.1 → 4.3 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "ARCHIVE_VARIABLE",
    "JAVA_OPTION_VARIABLES",
    "archive_options",
    "archive_path",
    "spark_conf_dir",
    "whole_archive",
]

ARCHIVE_VARIABLE = "NEARDUP_SPARK_CLASS_ARCHIVE"
"""Set to ``0`` (or ``off``, ``false``, ``no``) to start the driver JVM without the archive."""

_SHARING_MARKS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare", "AutoCreateSharedArchive")
"""Java options by which a user already chose how classes are shared."""

_CLASS_PATH_VARIABLES = (
    "SPARK_CONF_DIR",
    "SPARK_DIST_CLASSPATH",
    "SPARK_CLASSPATH",
    "HADOOP_CONF_DIR",
    "YARN_CONF_DIR",
)
"""Variables from which Spark's launcher builds the driver's class path, which an archive
must match."""

KEPT_ARCHIVES = 2
"""Archives of other Java and Spark installations (or class paths) kept beside a new one: the
most recently written or used; older ones are removed, so the folder holds at most three."""

_MAGIC = bytes.fromhex("a8ab0bf0")
"""The first bytes of a whole dynamic archive (HotSpot's ``0xf00baba8``, little-endian)."""

_QUIET = "-Xlog:cds*=off"
"""The archive's own log lines (classes skipped while writing, a mismatch while reading) off."""


def _java() -> Path | None:
    """The Java executable Spark's launcher runs: ``$JAVA_HOME/bin/java``, else ``java`` on
    the ``PATH``; None when neither exists."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        return None
    return Path(os.path.realpath(found))


def archive_path(folder: str | os.PathLike | None = None) -> Path | None:
    """Where the archive for this pyspark and this Java is kept: ``spark-classes-<digest>.jsa``
    in ``folder`` (default: ``NUMBA_CACHE_DIR``, else the package's ``__pycache__``). The
    digest covers pyspark's version and home, the Java executable's path, size and modification
    time, and :data:`_CLASS_PATH_VARIABLES`. None without pyspark or Java. O(1): a few
    ``stat`` calls.
    """
    try:
        import pyspark
        from pyspark.find_spark_home import _find_spark_home
    except ImportError:
        return None
    java = _java()
    if java is None:
        return None
    stat = java.stat()
    parts = [
        pyspark.__version__,
        os.path.realpath(_find_spark_home()),
        str(java),
        str(stat.st_size),
        str(stat.st_mtime_ns),
        *(f"{name}={os.environ.get(name, '')}" for name in _CLASS_PATH_VARIABLES),
    ]
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    if folder is None:
        folder = os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).parent / "__pycache__"
    return Path(folder) / f"spark-classes-{digest}.jsa"


def whole_archive(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a whole dynamic archive: it starts with the magic number, which
    Java writes last. A file being written, cut short or missing: False. O(1)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def spark_conf_dir() -> str:
    """Spark's configuration folder for a JVM that pyspark launches: ``SPARK_CONF_DIR``, else
    ``conf`` in pyspark's Spark home."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir is None:
        from pyspark.find_spark_home import _find_spark_home

        conf_dir = os.path.join(_find_spark_home(), "conf")
    return conf_dir


def _class_path_folders() -> list[str]:
    """The folders Spark's launcher puts on the driver's class path: its configuration folder
    (:func:`spark_conf_dir`), Hadoop's and YARN's, and the folders named in
    ``SPARK_DIST_CLASSPATH`` and ``SPARK_CLASSPATH``."""
    folders = [spark_conf_dir()]
    folders += [os.environ.get(name, "") for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")]
    for name in ("SPARK_DIST_CLASSPATH", "SPARK_CLASSPATH"):
        folders += os.environ.get(name, "").split(os.pathsep)
    return [folder for folder in folders if folder and not folder.endswith("*")]


def _writable_class_path() -> bool:
    """Whether Java can write an archive for the driver's class path: it refuses one with a
    folder that holds files (a ``spark-defaults.conf`` in Spark's configuration folder), and
    says so as the JVM exits."""
    for folder in _class_path_folders():
        try:
            with os.scandir(folder) as entries:
                if any(True for _ in entries):
                    return False
        except (NotADirectoryError, FileNotFoundError):
            continue
        except OSError:
            return False
    return True


JAVA_OPTION_VARIABLES = (
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "SPARK_SUBMIT_OPTS",
)
"""The environment variables whose Java options every JVM (or spark-submit's) reads."""

_OPTION_VARIABLES = (*JAVA_OPTION_VARIABLES, "PYSPARK_SUBMIT_ARGS")
"""The environment's variables that hold the driver JVM's options (or spark-submit's)."""


def _disabled(java_options: str) -> bool:
    if os.environ.get(ARCHIVE_VARIABLE, "").strip().lower() in ("0", "off", "false", "no"):
        return True
    options = [java_options, *(os.environ.get(name, "") for name in _OPTION_VARIABLES)]
    return any(mark in option for option in options for mark in _SHARING_MARKS)


def _writer_starts(java: Path, java_options: str) -> bool:
    """Whether a JVM given ``java_options`` (and the environment's) starts when asked to write
    an archive at exit: Java 17 refuses to start at all when its own base archive is not
    mapped (a JDK without one, ``-Xshare:off``). A probe of ``java -version``, about 0.3 s,
    made only by a run that would write the archive."""
    try:
        options = shlex.split(f"{java_options} {os.environ.get('SPARK_SUBMIT_OPTS', '')}")
    except ValueError:  # unbalanced quotes: the launch would fail on them anyway
        return False
    with tempfile.TemporaryDirectory(prefix="neardup-cds-") as folder:
        probe = [str(java), f"-XX:ArchiveClassesAtExit={folder}/probe.jsa", _QUIET, *options]
        try:
            done = subprocess.run(
                [*probe, "-version"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            return False
    return done.returncode == 0


def archive_options(java_options: str = "", folder: str | os.PathLike | None = None) -> str:
    """The Java options that give a driver JVM about to be launched the class archive of
    :func:`archive_path` (in ``folder``): map it when it is whole, else write it at the JVM's
    exit. ``java_options``: the Java options the session sets for that JVM
    (``spark.driver.extraJavaOptions``); any mention of class sharing there or in the
    environment's (:data:`_OPTION_VARIABLES`), or :data:`ARCHIVE_VARIABLE` set to 0, means
    ``""``, as do a folder where nothing can be written (with no archive in it), a class path
    that holds a folder with files in it (Java writes no archive for it), a JVM that would not
    start with the option (:func:`_writer_starts`) and a machine without pyspark or Java.
    O(1): a few ``stat`` calls and folder listings, and a probe before a JVM writes.

    Example:
        >>> import tempfile
        >>> archive_options("-Xshare:off", folder=tempfile.mkdtemp())  # the user's choice
        ''
    """
    if _disabled(java_options):
        return ""
    path = archive_path(folder)
    if path is None:
        return ""
    if whole_archive(path):
        with contextlib.suppress(OSError):  # marked as used, so pruning keeps it longest
            os.utime(path)
        return f"-XX:SharedArchiveFile={path} {_QUIET}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    if not os.access(path.parent, os.W_OK) or not _writable_class_path():
        return ""
    if not _writer_starts(_java(), java_options):
        return ""
    _prune(path)
    return f"-XX:ArchiveClassesAtExit={path} {_QUIET}"


def _prune(path: Path) -> None:
    """Remove all but the :data:`KEPT_ARCHIVES` archives other than ``path`` that were
    written or used last (a JVM given one marks it used: its modification time)."""
    others = []
    for other in path.parent.glob("spark-classes-*.jsa"):
        if other != path:
            with contextlib.suppress(OSError):
                others.append((other.stat().st_mtime_ns, other))
    for _, old in sorted(others, reverse=True)[KEPT_ARCHIVES:]:
        with contextlib.suppress(OSError):
            old.unlink()
