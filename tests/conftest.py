"""Shared fixtures."""

import os
import shutil

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
