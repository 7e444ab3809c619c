"""The engines behind one protocol: found by name, each with the protocol's operations, the Spark
one imported only when asked for (the Spark engine's results are compared in test_spark.py and
test_engines_spark.py)."""

import inspect
import subprocess
import sys

import pytest

from neardup.engines import ENGINES, EngineUnavailable, Outputs, engine_named
from neardup.engines.base import Engine


def test_an_unknown_engine_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="engine must be one of local, spark; got 'gpu'"):
        engine_named("gpu")


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_engine_has_the_protocols_operations(name):
    module = __import__(ENGINES[name], fromlist=["open_engine"])
    engine_class = inspect.signature(module.open_engine).return_annotation
    engine_class = getattr(module, engine_class) if isinstance(engine_class, str) else engine_class
    assert engine_class.name == name
    for operation in ("fingerprint", "dedup", "pairs"):
        expected = list(inspect.signature(getattr(Engine, operation)).parameters)
        assert list(inspect.signature(getattr(engine_class, operation)).parameters) == expected


def test_the_spark_engine_is_imported_only_when_asked_for():
    # pyspark takes seconds to import: the command line and the local engine never wait for it.
    code = (
        "import sys, neardup, neardup.cli.dedup, neardup.engines; "
        "neardup.engines.engine_named('local', workers=1); "
        "print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'neardup.engines.spark'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_spark_refuses_the_local_engines_memory_options():
    with pytest.raises(ValueError, match="--memory-limit, --resume apply to the local engine"):
        engine_named("spark", memory_limit="2G", resume=True)


def test_spark_without_pyspark_says_how_to_install_it(monkeypatch):
    import neardup.engines.spark as spark_engine

    monkeypatch.setattr(spark_engine, "HAVE_PYSPARK", False)
    with pytest.raises(EngineUnavailable, match=r"pip install 'neardup\[spark\]'"):
        engine_named("spark")


def test_spark_refuses_a_report_and_a_table_before_starting_a_session():
    pytest.importorskip("pyspark")
    from neardup.engines import Corpus
    from neardup.settings import Settings

    engine = engine_named("spark", spark_master="local[1]")
    with pytest.raises(ValueError, match="--report works with the local engine"):
        engine.dedup(Corpus(("docs.jsonl",)), Settings(), Outputs(report="r.html"))
    with pytest.raises(ValueError, match="reads files"):
        engine.dedup(Corpus(table={"id": ["a"], "text": ["x"]}), Settings(), Outputs())
    assert engine._spark is None  # no session was started for a refused run
