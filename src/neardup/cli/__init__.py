"""The ``neardup`` command line: :func:`run` runs the ``neardup`` command (after
``neardup_cli:run``, its entry point, has imported the package), :func:`main` is its click
group.

Modules: :mod:`~neardup.cli.options` (what the commands share), :mod:`~neardup.cli.main` (the
group), one module per command group (:mod:`~neardup.cli.dedup`, :mod:`~neardup.cli.compare`,
:mod:`~neardup.cli.index`, :mod:`~neardup.cli.serve`, :mod:`~neardup.cli.quality`,
:mod:`~neardup.cli.labelling`, :mod:`~neardup.cli.report`) and
:mod:`~neardup.cli.spark_submit` (the command for ``spark-submit``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from neardup import signals, startup
from neardup.cli.main import main

__all__ = ["main", "run"]


def run(args: Sequence[str] | None = None, command: Callable[..., Any] | None = None) -> NoReturn:
    """Run the ``neardup`` command (``command``: the group :func:`main`, by default) on
    ``args`` (default: this process's arguments) and end the process with its status; SIGINT
    and SIGTERM make it end with one line and status 128 + the signal's number
    (:mod:`neardup.signals`; before this, ``neardup_cli:run`` handles them). Imports that no
    command needs stay off the run's start-up (:mod:`neardup.startup`). Never returns."""
    try:
        # Inside the try: a signal that lands while the handlers are being installed ends
        # the run with its one line, not a traceback.
        signals.install()
        startup.install()
        (command or main)(args, prog_name="neardup")  # standalone: ends with SystemExit
        status: int | str | None = 0
    except SystemExit as end:
        status = end.code
    except BaseException:
        if signals.received() is None:
            raise  # a bug: its traceback
        status = None
    signals.exit_process(status)
