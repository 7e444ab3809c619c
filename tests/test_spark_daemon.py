"""The Python worker daemon of Spark runs: the engine's modules are loaded, and numba's compiler
set up, before workers fork."""

import os
import struct
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc"),
]


def test_the_daemon_loads_the_task_modules_before_it_serves():
    """Started as Spark starts it, the daemon announces its port only after it has imported the
    task modules (pyarrow's library is mapped into the process that will fork the workers) and
    set up numba's compiler (its registries import Python's ``cmath`` extension, which nothing
    imported before) without scipy's linear algebra, with pandas, and it stops when its standard
    input closes, as when the executor stops."""
    pytest.importorskip("pyspark")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "neardup.engines.spark.daemon"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        (port,) = struct.unpack("!i", daemon.stdout.read(4))
        assert 0 < port < 65536
        with open(f"/proc/{daemon.pid}/maps") as maps:
            mapped = maps.read()
        assert "libarrow" in mapped
        if "cmath" not in sys.builtin_module_names:
            assert "/cmath." in mapped
        # Numba's set-up looks for scipy's BLAS, which no kernel uses: kept out (neardup.startup).
        assert "scipy/linalg" not in mapped
        assert "pandas/_libs" in mapped  # which pyspark's workers import at their first task
    finally:
        daemon.stdin.close()
        assert daemon.wait(timeout=60) is not None


def test_prepare_sets_up_numba_that_the_task_modules_leave_unset():
    """The task modules alone leave numba's compiler unset (the set-up is what the daemon adds
    for its workers); :func:`prepare` sets it up."""
    code = (
        "import sys, neardup.engines.spark.tasks;"
        "before = 'numba.np.arraymath' in sys.modules;"
        "from neardup.engines.spark.daemon import prepare; prepare();"
        "print(before, 'numba.np.arraymath' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_a_session_that_launches_its_jvm_sets_numba_up_meanwhile():
    """The driver's numba set-up runs on a thread of its own while the JVM starts: once the
    session is up, the thread has set it up, where starting a session alone would not."""
    code = (
        "import sys, threading\n"
        "from neardup.engines.spark.session import spark_session\n"
        "before = 'numba.np.arraymath' in sys.modules\n"
        "spark = spark_session('local[1]', config={'spark.ui.enabled': 'false'})\n"
        "[t.join(120) for t in threading.enumerate() if t.name == 'neardup-numba-setup']\n"
        "print(before, 'numba.np.arraymath' in sys.modules)\n"
        "spark.stop()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.split()[-2:] == ["False", "True"]


def test_workers_of_a_session_fork_from_the_preloading_daemon(spark):
    from neardup.engines.spark.session import PYTHON_DAEMON

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == PYTHON_DAEMON

    def parent_command(batches):
        import pyarrow as pa

        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode()
        for batch in batches:
            yield pa.record_batch([pa.array([command] * batch.num_rows)], names=["command"])

    rows = spark.range(4).repartition(2).mapInArrow(parent_command, "command string").collect()
    assert {PYTHON_DAEMON in r.command for r in rows} == {True}


def test_workers_inherit_the_daemons_objects_frozen(spark):
    """A worker forked from the daemon starts with what the daemon imported frozen for the
    garbage collector (``gc.freeze``), so its full collections do not walk those objects."""

    def frozen_count(batches):
        import gc

        import pyarrow as pa

        for batch in batches:
            yield pa.record_batch([pa.array([gc.get_freeze_count()] * batch.num_rows)], ["n"])

    rows = spark.range(4).repartition(2).mapInArrow(frozen_count, "n long").collect()
    # The daemon had imported pyarrow, numba, pandas and the engine's modules: many thousands.
    assert min(r.n for r in rows) > 10_000
