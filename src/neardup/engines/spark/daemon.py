"""The Python worker daemon of a neardup run: pyspark's own daemon, started after the modules
the engine's tasks run have been imported and numba's compiler has been set up.

Each executor starts one Python daemon (Spark's ``spark.python.daemon.module``) and forks one
worker from it per Python task slot; a forked worker starts with everything its daemon
imported and set up. pyspark's daemon imports little, so each worker imported numpy, pyarrow,
numba and the kernels' modules at its first task (about 0.9 s of CPU per worker on an idle
core, ``python -X importtime``), and then set up numba's compiler at its first kernel (0.4-0.6
s more: the typing and code generation registries, numba's extension entry points, and, where
scipy is installed, scipy's BLAS, which numba looks for). This daemon pays both once per
executor (:func:`prepare`), without scipy's BLAS (0.2-0.3 s, kept off as
:mod:`neardup.startup` keeps it off the ``neardup`` command's start-up), and it imports
pandas, which pyspark's worker imports at its first Arrow task (0.4 s a worker before). The
kernels' compiled code stays lazy: a worker loads from numba's cache only the kernels its
tasks call, each in milliseconds.

What the daemon set up is frozen for the garbage collector before it forks (``gc.freeze``):
the workers' full collections no longer walk the 162,000 objects it imported, nor write to
their headers (which copied their pages into each worker). Unfrozen, each worker of a
1M-document run on ``local[2]`` made 78 full collections of 0.12-0.15 s: 9.2 and 9.6 s of
the two workers' processor time (0.2 s frozen), and the runs took 56.0 and 54.3 s against
52.1 and 50.3 s frozen (alternated; docs/spark.md, Figures).

:func:`~neardup.engines.spark.session.spark_session` sets it
(:data:`~neardup.engines.spark.session.PYTHON_DAEMON`) for the sessions it starts, unless the
configuration names another daemon module. On a cluster, the executors' Python
must have neardup installed, as every task of a run needs it anyway.
"""

from __future__ import annotations

import gc

from neardup import startup


def prepare() -> None:
    """Import the modules the run's tasks run and set up numba's compiler in this process by
    loading one small kernel (compiled into numba's cache first if it is not there): what
    every process pays at its first task and kernel, paid here once for the workers this
    process forks. About 1 s, once.

    Example:
        >>> prepare()  # the second call costs microseconds
    """
    import numpy as np

    # The kernels the run's tasks call, and through the package the engine's other modules
    # (imported for their side effect: loaded once here, inherited by every forked worker).
    import neardup.engines.spark.tasks  # noqa: F401
    from neardup.candidates.radix import compact_distinct

    compact_distinct(np.zeros(1, dtype=np.int64))
    # A kernel loaded from the cache under neardup.startup sets up numba's runtime only; the
    # registries, imported here once, are then in every worker forked after.
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()


if __name__ == "__main__":  # Spark runs ``python -m neardup.engines.spark.daemon``
    startup.install()  # before the imports whose set-up it trims (neardup.startup)
    from pyspark import daemon

    prepare()
    # pyspark's worker imports pandas at its first Arrow task (0.4 s), and each forked worker
    # its worker module: once here instead.
    import pandas  # noqa: F401
    import pyspark.worker  # noqa: F401

    gc.freeze()  # after the last import: the workers inherit every object frozen
    daemon.manager()
