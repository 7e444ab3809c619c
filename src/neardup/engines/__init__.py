"""What runs the pipeline, found by name: ``local`` (this machine's cores; in memory, or out of
core under a memory budget) and ``spark`` (Apache Spark). Each stands behind the
:class:`~neardup.engines.base.Engine` protocol; :func:`engine_named` makes one.

Example:
    >>> from neardup.settings import Settings
    >>> engine = engine_named("local", workers=1)
    >>> engine.name, engine.fingerprint(["a b c d"], Settings(method="simhash")).shape
    ('local', (1,))
"""

from __future__ import annotations

import importlib

from neardup.engines.base import (
    GROUP_COLUMNS,
    Corpus,
    DedupRun,
    Engine,
    EngineMemoryError,
    EngineOptions,
    EngineUnavailable,
    Outputs,
    Progress,
    pair_columns,
    pair_value_column,
)

#: Each engine's module, by the engine's name. A module is imported only when its engine is
#: asked for: the Spark engine's imports pyspark, which takes seconds, and a run of the other
#: engine (or ``neardup --help``) should not wait for it.
ENGINES = {"local": "neardup.engines.local", "spark": "neardup.engines.spark"}


def engine_named(name: str, **options) -> Engine:
    """The engine called ``name`` (a key of :data:`ENGINES`), made with ``options``, the fields
    of :class:`~neardup.engines.base.EngineOptions` (``workers``, ``memory_limit``, ``tmp_dir``,
    ``resume``, ``spark_master``). Each engine's module makes it with its ``open_engine``,
    which refuses the options that contradict it (``ValueError``) and raises
    :class:`~neardup.engines.base.EngineUnavailable` when the engine cannot run here. O(1)
    besides the first import of the module.

    Example:
        >>> engine_named("local", workers=2).workers
        2
        >>> engine_named("gpu")
        Traceback (most recent call last):
        ...
        ValueError: engine must be one of local, spark; got 'gpu'
    """
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {name!r}")
    return importlib.import_module(ENGINES[name]).open_engine(EngineOptions(**options))


__all__ = [
    "ENGINES",
    "GROUP_COLUMNS",
    "Corpus",
    "DedupRun",
    "Engine",
    "EngineMemoryError",
    "EngineOptions",
    "EngineUnavailable",
    "Outputs",
    "Progress",
    "engine_named",
    "pair_columns",
    "pair_value_column",
]
