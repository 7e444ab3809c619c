"""A Spark standalone cluster on this machine for the tests and the benchmarks: a master and
workers, each a JVM of its own started with pyspark's ``bin/spark-class``, on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: The JVM options of the tests' Spark processes: the tests' corpora are a few hundred rows, so
#: the JVMs spend most of their processor time compiling Spark's own code with the optimising
#: JIT compiler (C2) for work that ends before it pays off. The quick compiler alone (C1) and
#: the serial collector cut that; neither changes what any query computes.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_logged(command: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """Start ``command`` in a process group of its own (stopped with its JVM's children),
    its output to ``log_path``, its input closed."""
    log = open(log_path, "wb")  # noqa: SIM115 - the process holds it; closed here after
    process = subprocess.Popen(
        command,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    log.close()
    return process


def _alive_workers(ui_port: int) -> int:
    """The number of ALIVE workers in the master's JSON status page; 0 while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as reply:
            status = json.load(reply)
    except (OSError, ValueError):
        return 0
    return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")


class SparkCluster:
    """A Spark standalone cluster on this machine: a master and ``workers`` workers, each a JVM
    of its own started with pyspark's ``bin/spark-class``, listening on 127.0.0.1 only.

    ``url`` is the master (``spark://127.0.0.1:PORT``), ``env`` the environment a driver needs
    to use it from this machine (loopback, this interpreter for the executors' Python workers),
    ``spark_home`` the pyspark install (its ``bin/spark-submit``).
    """

    START_TIMEOUT = 120.0  # seconds for the master and every worker to come up and register

    def __init__(
        self,
        base: Path,
        workers: int = 2,
        apps: int = 3,
        executor_memory_mb: int = 512,
        jvm_options: str = TEST_JVM_OPTIONS,
        defaults: dict[str, str] | None = None,
    ):
        import pyspark

        #: Workers, and the drivers that can run at once (each with a 1-core executor of
        #: ``executor_memory_mb`` on every worker).
        self.workers, self.apps = workers, apps
        self.executor_memory_mb = executor_memory_mb
        self.jvm_options = jvm_options
        #: Settings every driver started with :attr:`env` reads (``spark-defaults.conf``): by
        #: default few shuffle partitions, for tiny corpora.
        self.defaults = {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
            **(defaults or {}),
        }

        self.spark_home = Path(pyspark.__file__).parent
        self.base = base
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")},
            "SPARK_HOME": str(self.spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOG_DIR": str(base / "logs"),
            "SPARK_LOCAL_DIRS": str(base / "local"),
            "SPARK_CONF_DIR": str(base / "conf"),
            # The daemons themselves need little; executors get their own JVMs.
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_DAEMON_JAVA_OPTS": jvm_options,
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }
        self.port, self.ui_port = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def _start(self, name: str, main_class: str, *args: str) -> None:
        command = [str(self.spark_home / "bin" / "spark-class"), main_class, *args]
        self.processes.append(start_logged(command, self.env, self.base / f"{name}.log"))

    def start(self) -> None:
        """Start the master and the workers; return when every worker is registered ALIVE.
        Raises RuntimeError (with the logs' tails) after :attr:`START_TIMEOUT` seconds."""
        for folder in ("logs", "local", "conf"):
            (self.base / folder).mkdir(parents=True, exist_ok=True)
        # Every driver started with :attr:`env` reads these: an application takes a 1-core
        # executor on each worker (the master spreads them), each worker offers ``apps`` of
        # them, so that many drivers run at once; no driver UI.
        settings = {
            **self.defaults,
            "spark.executor.memory": f"{self.executor_memory_mb}m",
            "spark.executor.cores": "1",
            "spark.cores.max": str(self.workers),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.extraJavaOptions": self.jvm_options,
            "spark.executor.extraJavaOptions": self.jvm_options,
        }
        (self.base / "conf" / "spark-defaults.conf").write_text(
            "".join(f"{key} {value}\n" for key, value in settings.items())
        )
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--webui-port", str(self.ui_port),
        )  # fmt: skip
        for i in range(self.workers):
            work_dir = self.base / f"worker{i}"
            work_dir.mkdir()
            self._start(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--host", "127.0.0.1",
                "--port", str(_free_port()),
                "--webui-port", str(_free_port()),
                "--cores", str(self.apps),
                "--memory", f"{self.executor_memory_mb * self.apps}m",
                "--work-dir", str(work_dir),
            )  # fmt: skip
        deadline = time.monotonic() + self.START_TIMEOUT
        while _alive_workers(self.ui_port) < self.workers:
            dead = [p.args[1] for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the Spark cluster did not start ({', '.join(dead) or 'timed out'}):\n"
                    + self.log_tails()
                )
            time.sleep(0.5)

    def log_tails(self, lines: int = 15) -> str:
        """The last ``lines`` lines of every daemon's log, for a failure message."""
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in sorted(self.base.glob("*.log"))
        )

    def stop(self) -> None:
        """Stop the workers, then the master (SIGTERM, then SIGKILL after 20 s), and remove
        their folders."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        self.processes.clear()
        shutil.rmtree(self.base, ignore_errors=True)
