"""The Spark session: starting or joining one, and quieting the logs a user cannot act on.

pyspark is an optional dependency (``pip install 'neardup[spark]'``); this module is the one
place that imports it, so the engine's other modules (and the command line, which asks
:data:`HAVE_PYSPARK` before it runs on Spark) can be imported without it.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from neardup.engines.base import EngineMemoryError
from neardup.engines.spark.class_archive import JAVA_OPTION_VARIABLES as _JAVA_OPTION_VARIABLES
from neardup.engines.spark.class_archive import archive_options, spark_conf_dir
from neardup.engines.spark.pyspark_path import installed_pyspark_first

installed_pyspark_first(sys.path)
try:  # pyspark is an optional dependency: pip install 'neardup[spark]'
    from pyspark import Broadcast, StorageLevel
    from pyspark.errors import AnalysisException
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    HAVE_PYSPARK = True
except ImportError:  # pragma: no cover - exercised only without pyspark
    Broadcast = Column = DataFrame = SparkSession = F = Window = StorageLevel = None  # type: ignore[assignment,misc]
    AnalysisException = Exception  # type: ignore[assignment,misc]
    HAVE_PYSPARK = False

__all__ = [
    "CACHE_COMPRESSION_KEY",
    "CONNECT_HINT",
    "HAVE_PYSPARK",
    "INSTALL_HINT",
    "KRYO_SERIALIZER",
    "LOCAL_DRIVER_GC",
    "PYTHON_DAEMON",
    "QUICK_JIT",
    "QUICK_JIT_DOCUMENTS",
    "is_connect",
    "local_driver_memory",
    "local_java_options",
    "memory_hint",
    "require_pyspark",
    "spark_session",
]

INSTALL_HINT = "the Spark engine needs pyspark: pip install 'neardup[spark]'"
CONNECT_HINT = (
    "--spark-remote needs Spark Connect's client libraries (grpcio, grpcio-status, "
    "googleapis-common-protos): pip install 'neardup[spark]'"
)
PYTHON_DAEMON = "neardup.engines.spark.daemon"
"""The Python worker daemon of the sessions :func:`spark_session` starts
(``spark.python.daemon.module``): pyspark's daemon with the engine's task modules imported
once, before it forks the workers (:mod:`neardup.engines.spark.daemon`)."""
_DAEMON_KEY = "spark.python.daemon.module"
_DRIVER_MEMORY_KEY = "spark.driver.memory"
DRIVER_MEMORY_SHARE = 1 / 3
"""Share of the machine's RAM that the Java heap of a local session neardup starts may grow to
(``spark.driver.memory``, which in local mode holds the executors, their stored tables and
shuffles too), unless configured: see :func:`local_driver_memory`."""
_DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
LOCAL_DRIVER_GC = "-XX:+UseParallelGC"
"""The garbage collector of a local session's JVM that neardup starts, unless Java options are
configured (``spark.driver.extraJavaOptions``, ``--driver-java-options``, or a collector in the
environment's Java options). A local run is one batch job on the machine's cores: the
throughput collector's pauses cost less than the default G1's concurrent work beside the
tasks (docs/spark.md, Figures)."""
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""The JIT setting of a local session's JVM for a run of at most :data:`QUICK_JIT_DOCUMENTS`
documents (:func:`local_java_options`): Spark's code compiled by the quick compiler (C1)
alone. A short run spends most of the JVM's processor time compiling: the optimising
compiler (C2) took 16.2 processor-seconds of a 100,000-document run on ``local[2]``, beside
the tasks on the same two cores."""
QUICK_JIT_DOCUMENTS = 1_500_000
"""Most documents (estimated from the input files before the JVM starts) for which a local
session gets :data:`QUICK_JIT`. C1's code is slower than C2's, so the longer a run, the less
the saved compiling is worth: ``neardup dedup`` on ``local[2]`` took 23.2 s against 30.6 s at
100,000 English documents, 62.9-65.7 s against 65.7-69.8 s at 1M, and 127.9 s against 120.2 s
at 3M short documents (the tasks' JVM time 133 against 82 processor-seconds there)."""
_SERIALIZER_KEY = "spark.serializer"
KRYO_SERIALIZER = "org.apache.spark.serializer.KryoSerializer"
"""The serializer of a session that neardup starts, unless ``spark.serializer`` is configured:
a large run keeps the tables it stores serialised
(:data:`neardup.engines.spark.frames.SERIALISED_DOCUMENTS`), and Kryo writes and reads them
faster than Java's serialization (10M short documents on ``local[2]``: 407.0 s against 448.0 s
with Java's)."""
CACHE_COMPRESSION_KEY = "spark.sql.inMemoryColumnarStorage.compressed"
"""Spark's setting for compressing its in-memory columnar cache, ``false`` in a session that
neardup starts unless configured. The columns a run caches are texts, signatures and sketches
(binary values that no scheme compresses) and positions; to choose a scheme Spark hashes every
value of each batch into a dictionary and then stores the batch as it was (a fifth of the
reading's JVM samples at 1M documents). Uncompressed, `neardup dedup` on 1M English documents
on ``local[2]`` took 121.8 and 113.7 s against 135.6 and 124.6 s, alternated (docs/spark.md)."""
_CONSOLE_PROGRESS_KEY = "spark.ui.showConsoleProgress"
"""Spark's console progress bar, off in a session that neardup starts unless configured: the
command shows the run's stages and tasks itself (:mod:`neardup.engines.spark.monitor`), and
the bar, which pyspark's launcher turns on, wrote over that display and over ``--quiet``."""
_PANDAS_WARNING = "PySpark does not yet fully support pandas"

_LOG_CONFIG = Path(__file__).resolve().parents[2] / "data" / "spark-log4j2.properties"
"""The driver's log4j2 configuration when this module starts the JVM: Spark's default at WARN,
without the messages a user cannot act on (see the file)."""

_QUIET_LOGGERS = (
    "org.apache.hadoop.util.NativeCodeLoader",  # no native Hadoop library: Java classes are used
    "org.apache.spark.sql.execution.window.WindowExec",  # the window over the (small) input splits
    "org.apache.spark.rdd.MapPartitionsRDD",  # "locally checkpointed": freed on purpose
    # "Not enough space to cache ... in memory!", "Persisting block ... to disk instead": a
    # stored table larger than the storage memory goes to disk, as its storage level says.
    "org.apache.spark.storage.memory.MemoryStore",
    "org.apache.spark.storage.BlockManager",
    # A path that does not exist: "Assume no metadata directory", with a stack trace, before
    # the reader's own error (which the run reports in one line).
    "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
)
"""Loggers set to ERROR in every session :func:`spark_session` returns, unless configured."""

_LOG4J2_FILES = ("log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.yml", "log4j2.json")


def require_pyspark() -> None:
    """Raise ``ImportError`` with the install command if pyspark is missing. O(1).

    Example (raises only where pyspark is not installed, so not run as a doctest)::

        require_pyspark()
    """
    if not HAVE_PYSPARK:
        raise ImportError(INSTALL_HINT)


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a server, without a JVM in
    this process). O(1).

    Example:
        >>> is_connect(object())
        False
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")


def spark_session(
    master: str | None = None,
    app_name: str = "neardup",
    config: dict[str, str] | None = None,
    remote: str | None = None,
    documents: int | None = None,
) -> SparkSession:
    """The active Spark session, or a new one on ``master`` (``local[*]``, ``spark://…``, ``yarn``).

    With ``remote`` (``sc://host:port``, Spark Connect's address), a client session of that
    Spark Connect server instead (its master is the server's; ``master`` must be None):
    nothing starts in this process but the client, and ``config`` is handed to the server as
    the session's settings. ``ImportError`` with the install command when Spark Connect's
    client libraries are missing.

    ``master=None`` keeps the master of an existing session or of ``spark-submit`` and means
    ``local[*]`` otherwise. For local masters, Python workers run this interpreter (unless
    ``PYSPARK_PYTHON`` says otherwise), so they see the same installed ``neardup``, and the
    driver binds to 127.0.0.1 (unless ``SPARK_LOCAL_IP`` or ``config`` say otherwise).
    Logs: a driver this call starts logs at WARN without Spark's banner (:data:`_LOG_CONFIG`,
    unless a log4j2 configuration of the user's is found), and :data:`_QUIET_LOGGERS`, whose
    warnings a user cannot act on, are set to ERROR in any session; other loggers are untouched.
    A session this call starts forks its Python workers from :data:`PYTHON_DAEMON`, which
    imports the engine's task modules once per executor instead of once per worker (unless the
    configuration names another ``spark.python.daemon.module``) and serialises with
    :data:`KRYO_SERIALIZER` unless ``spark.serializer`` is configured (``config``,
    ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``), and keeps its columnar cache
    uncompressed unless :data:`CACHE_COMPRESSION_KEY` is configured, and shows no console
    progress bar of Spark's unless configured (:data:`_CONSOLE_PROGRESS_KEY`). A local session
    this call starts gets a Java heap of :func:`local_driver_memory` unless
    ``spark.driver.memory`` is configured (``config``, ``PYSPARK_SUBMIT_ARGS``,
    ``SPARK_DRIVER_MEMORY`` or ``spark-defaults.conf``): Spark's own default, 1 GB, holds a
    local run's executors too; and the Java options of :func:`local_java_options` for
    ``documents`` (the run's documents, estimated, or None when unknown) unless Java options
    are configured. A JVM this call launches (any master) maps the archive of Spark's classes
    that an earlier one wrote, or writes it as it exits
    (:mod:`neardup.engines.spark.class_archive`); while it starts, a thread sets up numba's
    compiler for the driver's own kernels (:func:`~neardup.engines.spark.daemon.prepare`).
    Cost: a few seconds to start the JVM the first time.

    Example (needs a Spark session, so not run as a doctest)::

        spark = spark_session("local[2]", config={"spark.ui.enabled": "false"})
    """
    require_pyspark()
    warnings.filterwarnings("ignore", message=_PANDAS_WARNING)
    if remote is not None:
        return _connect_session(remote, master, app_name, config)
    launched_by_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not launched_by_submit and SparkSession.getActiveSession() is None:
        master = "local[*]"
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # A local run serves nobody else: its driver and UI listen on the loopback interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if local:
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    launches = not launched_by_submit and _no_jvm()
    if launches:
        # The driver runs kernels too (the bounds' table, the writers): numba's set-up, which
        # the first one pays (0.3-0.5 s), is paid while the JVM starts and the driver waits.
        threading.Thread(target=_prepare, name="neardup-numba-setup", daemon=True).start()
    with _driver_java_options(builder._options if launches else None):
        if not launched_by_submit:
            builder = _serializer_default(builder)
            if not _configured(_CONSOLE_PROGRESS_KEY, _CONSOLE_PROGRESS_KEY, builder._options):
                builder = builder.config(_CONSOLE_PROGRESS_KEY, "false")
            if local:
                builder = _local_defaults(builder, documents)
        if _DAEMON_KEY not in (config or {}):
            builder = _launch_jvm(builder)
        spark = builder.getOrCreate()
    _quiet_loggers(spark)
    return spark


def _connect_session(
    remote: str, master: str | None, app_name: str, config: dict[str, str] | None
) -> SparkSession:
    """A Spark Connect client session of the server at ``remote`` (see :func:`spark_session`)."""
    if master is not None:
        raise ValueError(
            f"a Spark Connect session runs on its server's master: give a master or a server "
            f"(--spark-master or --spark-remote), not both; got master={master!r}, "
            f"remote={remote!r}"
        )
    if not remote.startswith("sc://"):
        raise ValueError(f"a Spark Connect address starts with sc://; got {remote!r}")
    try:  # what pyspark's client needs beyond pyspark (its "connect" extra)
        import google.rpc.status_pb2  # noqa: F401
        import grpc  # noqa: F401
        import grpc_status  # noqa: F401
    except ImportError as missing:
        raise ImportError(f"{CONNECT_HINT} ({missing})") from missing
    # The client's own notice of what the classic driver logs at WARN (and the session quiets,
    # :data:`_QUIET_LOGGERS`): the window numbering the inputs' splits, which are few.
    warnings.filterwarnings("ignore", message="WARN WindowExpression: No Partition Defined")
    builder = SparkSession.builder.remote(remote).appName(app_name)
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _prepare() -> None:
    # Imported here: a module that the package imports is found in sys.modules when Spark runs
    # it as the daemon (python -m), and runpy warns.
    from neardup.engines.spark.daemon import prepare

    try:
        prepare()
    except Exception:
        pass  # a head start only: the driver's first kernel meets the same error and reports it


def local_driver_memory(ram: int) -> str:
    """``spark.driver.memory`` for a local session on a machine of ``ram`` bytes:
    :data:`DRIVER_MEMORY_SHARE` of it to the nearest GiB, at least Spark's default (1g) and
    at most 16g. The heap grows to it only as the run needs: at 1M English documents (1.8 GB) on
    ``local[2]``, 8g instead of Spark's 1g kept every stored table in memory, and with
    :data:`LOCAL_DRIVER_GC` the run took 0.86 times as long (docs/spark.md, Figures); 10M
    short documents do not complete with 1g. O(1).

    Example:
        >>> local_driver_memory(24 << 30), local_driver_memory(2 << 30), local_driver_memory(1 << 40)
        ('8g', '1g', '16g')
    """
    return f"{min(max(round(ram * DRIVER_MEMORY_SHARE / 2**30), 1), 16)}g"


def _configured(key: str, flag: str, options: dict[str, str]) -> bool:
    """Whether Spark setting ``key`` is set where a JVM that pyspark launches reads it: the
    builder's ``options``, ``PYSPARK_SUBMIT_ARGS`` (as the key or as spark-submit's ``flag``)
    or ``spark-defaults.conf`` (in ``SPARK_CONF_DIR``, else pyspark's Spark home)."""
    if key in options:
        return True
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if flag in submit_args or key in submit_args:
        return True
    return _default(key) is not None


def _default(key: str) -> str | None:
    """The value of Spark setting ``key`` in ``spark-defaults.conf`` (in ``SPARK_CONF_DIR``,
    else pyspark's Spark home): the rest of the line that starts with it, or None."""
    try:
        lines = (Path(spark_conf_dir()) / "spark-defaults.conf").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split(maxsplit=1)
        if words[:1] == [key]:
            return words[1].strip() if len(words) > 1 else ""
    return None


def _collector_chosen() -> bool:
    """Whether the environment's Java options (:data:`_JAVA_OPTION_VARIABLES`) choose a
    garbage collector: a second choice would stop the JVM from starting."""
    options = [os.environ.get(name, "") for name in _JAVA_OPTION_VARIABLES]
    return any("-XX:+Use" in value and "GC" in value for value in options)


def _serializer_default(builder: SparkSession.Builder) -> SparkSession.Builder:
    """``builder`` with :data:`KRYO_SERIALIZER` unless ``spark.serializer`` is configured where
    a JVM that pyspark launches reads it; unchanged when a SparkContext is running."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None or _configured(
        _SERIALIZER_KEY, _SERIALIZER_KEY, builder._options
    ):
        return builder
    return builder.config(_SERIALIZER_KEY, KRYO_SERIALIZER)


def local_java_options(documents: int | None) -> str:
    """The Java options of a local session's JVM that nothing configures, for a run of
    ``documents`` (estimated; None when unknown): the :data:`LOCAL_DRIVER_GC` collector, and
    :data:`QUICK_JIT` for a run known to hold at most :data:`QUICK_JIT_DOCUMENTS`. O(1).

    Example:
        >>> local_java_options(100_000)
        '-XX:+UseParallelGC -XX:TieredStopAtLevel=1'
        >>> local_java_options(10_000_000) == local_java_options(None) == LOCAL_DRIVER_GC
        True
    """
    if documents is not None and documents <= QUICK_JIT_DOCUMENTS:
        return f"{LOCAL_DRIVER_GC} {QUICK_JIT}"
    return LOCAL_DRIVER_GC


def _local_defaults(
    builder: SparkSession.Builder, documents: int | None = None
) -> SparkSession.Builder:
    """``builder`` with the JVM settings of a local session that nothing configures: the heap
    of :func:`local_driver_memory`, and the Java options of :func:`local_java_options` for
    ``documents``; unchanged when a SparkContext is running (its JVM's settings are fixed)."""
    from pyspark import SparkContext

    from neardup.engines.spill import machine_memory

    if SparkContext._active_spark_context is not None:
        return builder
    options = builder._options
    memory_set = os.environ.get("SPARK_DRIVER_MEMORY") or _configured(
        _DRIVER_MEMORY_KEY, "--driver-memory", options
    )
    if not memory_set:
        builder = builder.config(_DRIVER_MEMORY_KEY, local_driver_memory(machine_memory()))
    java_options_set = _collector_chosen() or _configured(
        _DRIVER_JAVA_OPTIONS_KEY, "--driver-java-options", options
    )
    if not java_options_set:
        builder = builder.config(_DRIVER_JAVA_OPTIONS_KEY, local_java_options(documents))
    return builder


def _launch_jvm(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Start the JVM with ``builder``'s options unless a SparkContext is running; return
    ``builder`` with :data:`PYTHON_DAEMON` as the Python daemon and Spark's columnar cache
    uncompressed (:data:`CACHE_COMPRESSION_KEY`), unless a SparkContext was running (its
    daemon is fixed, its session's settings the user's) or Spark's configuration
    (``spark-defaults.conf``, ``spark-submit --conf``, ``config``) sets them."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._active_spark_context is not None:
        return builder
    # The JVM (which holds spark-submit's configuration) starts here, before the builder's
    # options apply: they are handed to its launch, so that those read only then (the driver's
    # memory and Java options) are not lost.
    options = SparkConf(loadDefaults=False)
    options.setAll([(key, str(value)) for key, value in builder._options.items()])
    SparkContext._ensure_initialized(conf=options)
    configured = SparkConf()  # the launched JVM's: spark-submit's, spark-defaults.conf's, ours
    if not configured.contains(CACHE_COMPRESSION_KEY):
        builder = builder.config(CACHE_COMPRESSION_KEY, "false")
    if configured.contains(_DAEMON_KEY):
        return builder
    return builder.config(_DAEMON_KEY, PYTHON_DAEMON)


def _no_jvm() -> bool:
    """Whether this process has no JVM yet, so that creating a session launches one."""
    from pyspark import SparkContext

    return SparkContext._gateway is None and SparkContext._active_spark_context is None


@contextmanager
def _driver_java_options(launch_options: dict[str, str] | None) -> Iterator[None]:
    """While a session is created: the JVM that pyspark may launch reads :data:`_LOG_CONFIG`,
    and, when ``launch_options`` (the builder's settings) say a JVM is launched, the class
    archive's options (:func:`~neardup.engines.spark.class_archive.archive_options`), both
    given first in ``SPARK_SUBMIT_OPTS`` so that Java options of the user's (there, or in
    ``spark.driver.extraJavaOptions``) still win. The log configuration is skipped when a
    log4j2 file is in Spark's configuration folder (it would be overridden) or the file is
    missing."""
    saved = os.environ.get("SPARK_SUBMIT_OPTS")
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    user_file = conf_dir is not None and any(
        os.path.exists(os.path.join(conf_dir, name)) for name in _LOG4J2_FILES
    )
    ours = []
    if not user_file and _LOG_CONFIG.is_file():
        ours.append(f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}")
    if launch_options is not None:
        java_options = launch_options.get(_DRIVER_JAVA_OPTIONS_KEY)
        if java_options is None:
            java_options = _default(_DRIVER_JAVA_OPTIONS_KEY) or ""
        ours.append(archive_options(java_options))
    ours = [option for option in ours if option]
    if ours:
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join([*ours, saved] if saved else ours)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = saved


def _quiet_loggers(spark: SparkSession) -> None:
    """Set :data:`_QUIET_LOGGERS` to ERROR in the driver, so that sessions whose JVM was started
    elsewhere (``spark-submit``, an earlier session) are quiet too; a logger the configuration
    names keeps its level. Nothing happens without a JVM at hand (Spark Connect) or log4j2."""
    try:
        jvm = spark.sparkContext._jvm
        log4j = jvm.org.apache.logging.log4j
        configured = log4j.LogManager.getContext(False).getConfiguration().getLoggers()
        error = log4j.Level.toLevel("ERROR")
        for name in _QUIET_LOGGERS:
            if not configured.containsKey(name):
                log4j.core.config.Configurator.setLevel(name, error)
    except Exception:  # noqa: BLE001 - logging is a convenience; never fail a run over it
        pass


_OUT_OF_MEMORY = ("OutOfMemoryError", "UNABLE_TO_ACQUIRE_MEMORY")
"""Marks of Spark's errors when a JVM's heap or an executor's execution memory ran out."""

MEMORY_ADVICE = (
    "give Spark more memory: spark-submit --driver-memory / --executor-memory, "
    "spark.driver.memory / spark.executor.memory in spark-defaults.conf, or for a run that "
    'starts its own local session PYSPARK_SUBMIT_ARGS="--driver-memory 8g pyspark-shell" '
    "(a local session's driver holds the executors too; neardup gives it a third of the "
    "machine's memory unless configured); more shuffle partitions "
    "(spark.sql.shuffle.partitions) make each task smaller"
)
"""What :func:`memory_hint` tells a user whose run ran out of memory on Spark."""


@contextmanager
def memory_hint() -> Iterator[None]:
    """Re-raise an error of the block whose text shows that a Spark JVM ran out of memory (a
    Java ``OutOfMemoryError``, or Spark's ``UNABLE_TO_ACQUIRE_MEMORY``) as one
    :class:`~neardup.engines.base.EngineMemoryError`: the first line of Spark's that says so
    and :data:`MEMORY_ADVICE`, instead of pages of Java stack. Other errors pass unchanged.

    Example:
        >>> with memory_hint():  # doctest: +ELLIPSIS
        ...     raise RuntimeError("Job aborted\\njava.lang.OutOfMemoryError: Java heap space")
        Traceback (most recent call last):
        ...
        neardup.engines.base.EngineMemoryError: Spark ran out of memory (java.lang.OutOfMemoryError: ...
    """
    try:
        yield
    except Exception as error:
        text = str(error)
        lines = [line.strip() for line in text.splitlines()]
        said = next((line for line in lines if any(m in line for m in _OUT_OF_MEMORY)), None)
        if said is None:
            raise
        raise EngineMemoryError(
            f"Spark ran out of memory ({said[:300]}): {MEMORY_ADVICE}"
        ) from error
