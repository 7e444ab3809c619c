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


#: numpy asks the kernel for transparent huge pages for every large array it allocates. On a
#: kernel whose ``transparent_hugepage/defrag`` is ``madvise`` (a common default) each such
#: first touch may compact memory synchronously: writing 522 MB into a fresh array took 1.39 s
#: with the advice and 0.26 s without, and whole runs spent 2-4 s more system time (docs/
#: operations.md). Set before numpy is imported; a value the user set is kept.
HUGEPAGE_ADVICE = ("NUMPY_MADVISE_HUGEPAGE", "0")

#: Arrow's allocator (mimalloc, pyarrow's default pool) asks for transparent huge pages for the
#: 1 GiB arenas it reserves, with the same synchronous compaction on first touch: joining the
#: IDs of 10M seed rows' linked documents (31 MB) took about 80 ms in 4 runs of 10 and 3-16 ms
#: in the others; without the advice 13-15 ms every time (docs/operations.md). Set before pyarrow
#: is imported; a value the user set is kept.
ARROW_HUGEPAGE_ADVICE = ("MIMALLOC_ALLOW_THP", "0")

#: numpy's bundled OpenBLAS starts a thread per core as numpy is imported, and each spins on
#: its core for a while before it sleeps: 0.05 s of CPU in a process that then only slept,
#: 0.15 s of a heavy_200k run's CPU (docs/operations.md), taken from the run's threads. No
#: kernel of neardup calls BLAS (the bands' choice multiplies a 256 × 65 matrix once). Set
#: before numpy is imported; a value the user set is kept.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "1")


def run() -> None:
    """Run the ``neardup`` command on this process's arguments (:func:`neardup.cli.run`)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _stop_during_start_up)
    for name, value in (HUGEPAGE_ADVICE, ARROW_HUGEPAGE_ADVICE, BLAS_THREADS):
        os.environ.setdefault(name, value)
    from neardup.cli import run as run_command

    run_command()
