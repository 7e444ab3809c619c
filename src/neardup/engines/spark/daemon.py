"""The Python worker daemon of a neardup run: pyspark's own daemon, started after the modules
the engine's tasks run have been imported.

Each executor starts one Python daemon (Spark's ``spark.python.daemon.module``) and forks one
worker from it per Python task slot; a forked worker starts with everything its daemon
imported. pyspark's daemon imports little, so each worker imported numpy, pyarrow, numba and
the kernels' modules at its first task: about 0.9 s of CPU per worker on an idle core
(``python -X importtime``), paid by every worker of every executor. This daemon pays it once
per executor. The kernels' compiled code stays lazy: a worker loads from numba's cache only
the kernels its tasks call.

:func:`~neardup.engines.spark.session.spark_session` sets it
(:data:`~neardup.engines.spark.session.PYTHON_DAEMON`) for the sessions it starts, unless the
configuration names another daemon module. On a cluster, the executors' Python
must have neardup installed, as every task of a run needs it anyway.
"""

from __future__ import annotations

# The kernels the run's tasks call, and through the package the engine's other modules
# (imported for their side effect: loaded once here, inherited by every forked worker).
import neardup.engines.spark.tasks  # noqa: F401

if __name__ == "__main__":  # Spark runs ``python -m neardup.engines.spark.daemon``
    from pyspark import daemon

    daemon.manager()
