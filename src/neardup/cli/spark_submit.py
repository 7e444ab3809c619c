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


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``neardup`` command line ``argv`` (default: this process's arguments) with
    ``--engine spark`` added to ``dedup`` and ``pairs`` unless an engine is given. Exits the
    process as ``neardup`` does. O(1) besides the command.

    Example: ``main(["dedup", "docs.jsonl", "-o", "groups.tsv"])`` runs
    ``neardup dedup docs.jsonl -o groups.tsv --engine spark``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in _ENGINE_COMMANDS and "--engine" not in args:
        args += ["--engine", "spark"]
    run(args, neardup)


if __name__ == "__main__":
    main()
