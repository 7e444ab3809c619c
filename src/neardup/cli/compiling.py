"""What a first run says while numba compiles neardup's kernels.

The kernels are compiled to machine code on their first use and cached on disk (beside the
package, or in ``NUMBA_CACHE_DIR``); a later run loads them in milliseconds each. The first run
of a command therefore spends up to a minute compiling, which without a word looks like a hang
at 0 %. :class:`CompileNotice` listens to numba's compile events (cache loads raise none) and,
on the first, says so in one line; while compiling, the progress display shows "compiling"
instead of its stage; at the end, how many kernels took how long. It only speaks to a terminal,
as the progress display does: logs and pipes get the outputs they always got.

Example (what a first ``neardup dedup`` prints before its progress bar)::

    neardup: compiling its kernels, first run only (about a minute; later runs load them)
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol

from numba.core import event as numba_event

NOTICE = "neardup: compiling its kernels, first run only (about a minute; later runs load them)"


class Display(Protocol):
    """Where the notice goes while a progress display is on screen (the command's reporter)."""

    def notice(self, text: str) -> None: ...

    def compiling(self, on: bool) -> None: ...


class _Stderr:
    def notice(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def compiling(self, on: bool) -> None:
        pass


def _kernel_name(event: numba_event.Event) -> str:
    """``module.function`` of the kernel an event compiles ("?" when numba gives none)."""
    function = getattr((event.data or {}).get("dispatcher"), "py_func", None)
    if function is None:
        return "?"
    return f"{function.__module__}.{function.__qualname__}"


class CompileNotice(numba_event.Listener):
    """Counts numba's compilations and tells the user about them (module docstring).

    A compilation may start others (a kernel's callees) and may run on worker threads: the
    display shows "compiling" from the first start to the last end. O(1) per event.

    Example:
        >>> notice = CompileNotice()
        >>> notice.compiled, notice.seconds
        (0, 0.0)
    """

    def __init__(self) -> None:
        self.display: Display = _Stderr()
        self.compiled = 0
        self.seconds = 0.0
        #: Each kernel compiled, as (module.function, processor seconds of its compiling, with
        #: the functions it calls): what it costs on any machine, unlike the wall time.
        self.kernels: list[tuple[str, float]] = []
        self._kernel = ""
        self._cpu_since = 0.0
        self._depth = 0
        self._since = 0.0
        self._lock = threading.Lock()

    def on_start(self, event: numba_event.Event) -> None:
        with self._lock:
            if self._depth == 0:
                if self.compiled == 0:
                    self.display.notice(NOTICE)
                self.display.compiling(True)
                self._since = time.perf_counter()
                self._kernel = _kernel_name(event)
                self._cpu_since = time.thread_time()  # numba compiles on the calling thread
            self._depth += 1

    def on_end(self, event: numba_event.Event) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:  # a kernel, with the functions it calls
                self.compiled += 1
                self.seconds += time.perf_counter() - self._since
                self.kernels.append((self._kernel, time.thread_time() - self._cpu_since))
                self.display.compiling(False)

    def closing_line(self) -> str | None:
        """The line to print at the end of the command, if anything was compiled."""
        if not self.compiled:
            return None
        return (
            f"neardup: compiled {self.compiled} kernels in {self.seconds:.0f} s; "
            "they are cached for later runs"
        )


#: The notice of this process, once :func:`listen` installed it.
active: CompileNotice | None = None


def listen() -> CompileNotice | None:
    """Install the notice for this process when standard error is a terminal, and return it
    (None otherwise, or when it is installed already). O(1)."""
    global active
    if active is not None or not sys.stderr.isatty():
        return None
    active = CompileNotice()
    numba_event.register("numba:compile", active)
    return active


def stop_listening() -> None:
    """Uninstall the notice and print its closing line, if it was installed. O(1)."""
    global active
    if active is None:
        return
    numba_event.unregister("numba:compile", active)
    line = active.closing_line()
    active.display = _Stderr()
    if line:
        active.display.notice(line)
    active = None
