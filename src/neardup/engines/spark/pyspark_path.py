"""Where pyspark is imported from: the installed package before the zip of it that Spark puts
first on its Python workers' path (and on a ``spark-submit`` driver's).

Python compiles a module imported from a zip from its source at every import, as no bytecode is
cached there: ``import pyspark.daemon`` took 0.55 s from pip's ``pyspark/python/lib/pyspark.zip``
against 0.11 s from the package beside it, and each forked worker paid it again for every
module it imported first. :mod:`neardup.engines.spark.session` applies
:func:`installed_pyspark_first` before it imports pyspark.
"""

from __future__ import annotations

import os

__all__ = ["installed_pyspark_first"]


def installed_pyspark_first(path: list[str]) -> None:
    """Move the ``pyspark.zip`` on ``path`` (``sys.path``) behind the installed pyspark package
    it ships in, when that package is on ``path`` after it (``<site>/pyspark/python/lib/
    pyspark.zip`` and ``<site>``: one installation, as pip installs pyspark), so its modules are
    imported with their cached bytecode. A zip of another installation (a Spark home of its
    own, as on a cluster) stays where it is: its pyspark is the JVM's. O(len(path)).

    Example:
        >>> path = ["/spark/python/lib/pyspark.zip", "/site"]
        >>> installed_pyspark_first(path); path  # no pyspark installed in /site
        ['/spark/python/lib/pyspark.zip', '/site']
    """
    for index, entry in enumerate(path):
        if os.path.basename(entry) != "pyspark.zip":
            continue
        package = os.path.dirname(os.path.dirname(os.path.dirname(entry)))
        if (
            os.path.basename(package) == "pyspark"
            and os.path.isfile(os.path.join(package, "__init__.py"))
            and os.path.dirname(package) in path[index + 1 :]
        ):
            path.append(path.pop(index))
        return
