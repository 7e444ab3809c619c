"""The ``neardup`` command line: :func:`main` is the ``neardup`` command (``neardup.cli:main``).

Modules: :mod:`~neardup.cli.options` (what the commands share), :mod:`~neardup.cli.main` (the
group), one module per command group (:mod:`~neardup.cli.dedup`, :mod:`~neardup.cli.compare`,
:mod:`~neardup.cli.index`, :mod:`~neardup.cli.serve`, :mod:`~neardup.cli.quality`,
:mod:`~neardup.cli.labelling`, :mod:`~neardup.cli.report`) and
:mod:`~neardup.cli.spark_submit` (the command for ``spark-submit``)."""

from neardup.cli.main import main

__all__ = ["main"]
