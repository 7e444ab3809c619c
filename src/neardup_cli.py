"""The ``neardup`` command's entry point (``neardup_cli:run``).

A module of its own, outside the ``neardup`` package, because importing the package takes up
to a second (numpy, numba, pandas): a signal during that time ends the run here, with the one
line and exit status of :mod:`neardup.signals`, where there is nothing yet to clean up. Once
the package is imported, :func:`neardup.cli.run` takes over the signals.
"""

from __future__ import annotations

import os
import signal


def _stop_during_start_up(signum: int, frame: object) -> None:
    os.write(2, f"neardup: stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def run() -> None:
    """Run the ``neardup`` command on this process's arguments (:func:`neardup.cli.run`)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _stop_during_start_up)
    from neardup.cli import run as run_command

    run_command()
