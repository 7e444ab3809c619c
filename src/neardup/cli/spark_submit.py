"""The ``neardup`` command with ``--engine spark`` already set, for ``spark-submit``.

``python -m neardup.cli.spark_submit dedup …`` is ``neardup dedup … --engine spark`` (and the
same for ``pairs``); this file is also the application that ``spark-submit`` runs, so the master,
resources and configuration come from ``spark-submit``::

    spark-submit --master yarn \\
        "$(python -c 'import neardup.cli.spark_submit as m; print(m.__file__)')" \\
        dedup 'hdfs:///corpus/*.jsonl' -o hdfs:///out/groups --pairs-out hdfs:///out/pairs
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from neardup.cli import run
from neardup.cli.main import main as neardup

# The commands that run on an engine; the others are passed on unchanged.
_ENGINE_COMMANDS = ("dedup", "pairs")


def with_spark_engine(argv: Sequence[str] | None = None) -> list[str]:
    """``argv`` (default: this process's arguments) with ``--engine spark`` added to ``dedup``
    and ``pairs`` unless an engine is given. O(len(argv)).

    Example:
        >>> with_spark_engine(["dedup", "docs.jsonl", "-o", "groups.tsv"])[-2:]
        ['--engine', 'spark']
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in _ENGINE_COMMANDS and "--engine" not in args:
        args += ["--engine", "spark"]
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``neardup`` command line ``argv`` (default: this process's arguments) with
    ``--engine spark`` added (:func:`with_spark_engine`). Ends with ``SystemExit``, as click
    commands do; the application that ``spark-submit`` runs (this file as ``__main__``) ends
    the process as ``neardup`` does instead. O(1) besides the command.

    Example: ``main(["dedup", "docs.jsonl", "-o", "groups.tsv"])`` runs
    ``neardup dedup docs.jsonl -o groups.tsv --engine spark``.
    """
    neardup(with_spark_engine(argv), prog_name="neardup")


if __name__ == "__main__":
    run(with_spark_engine(), neardup)
