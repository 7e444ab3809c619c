"""A Spark Connect server on this machine for the tests: one JVM (a ``local[2]`` driver with the
Spark Connect service) started with pyspark's ``bin/spark-submit``, listening on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from spark_cluster import TEST_JVM_OPTIONS, _free_port, start_logged

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class SparkConnectServer:
    """A Spark Connect server: pyspark's ``SparkConnectServer`` on a ``local[2]`` master, its
    gRPC service on 127.0.0.1 only, its Python workers this interpreter (so that they import
    the same ``neardup``).

    ``url`` is the address a client gives (``sc://127.0.0.1:PORT``), ``env`` the environment of
    a client process on this machine.
    """

    START_TIMEOUT = 120.0  # seconds for the service to accept connections

    def __init__(self, base: Path):
        import pyspark

        self.base = base
        self.spark_home = Path(pyspark.__file__).parent
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")},
            "SPARK_HOME": str(self.spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_CONF_DIR": str(base / "conf"),
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server; return when it accepts connections. Raises RuntimeError (with
        its log's tail) if it exits or :attr:`START_TIMEOUT` seconds pass."""
        (self.base / "conf").mkdir(parents=True, exist_ok=True)
        (self.base / "conf" / "spark-defaults.conf").write_text("")
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": "1g",
            "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.codegen.wholeStage": "false",
        }
        command = [str(self.spark_home / "bin" / "spark-submit"), "--master", "local[2]"]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command += ["--class", SERVER_CLASS, "spark-internal"]
        self.process = start_logged(command, self.env, self.base / "server.log")
        deadline = time.monotonic() + self.START_TIMEOUT
        while not _listening(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start:\n{tail}")
            time.sleep(0.5)

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's log, for a failure message."""
        path = self.base / "server.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 20 s) and remove its folder."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None
        shutil.rmtree(self.base, ignore_errors=True)
