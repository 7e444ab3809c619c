"""How a ``neardup`` run stops on SIGINT (Ctrl-C) and SIGTERM, wherever it is.

The command's entry point (:func:`neardup.cli.run`) calls :func:`install` before it imports
anything heavy. The first signal is recorded and raised in the main thread as
:class:`Interrupted` (a ``BaseException``, as ``KeyboardInterrupt`` is), so the run unwinds:
temporary files are removed and no output set is committed. Later signals are only recorded,
so that the clean-up runs to its end.

The record, not the exception, decides how the run ends, because the exception can be lost or
changed on its way: raised while a compiled kernel returns, it comes out as a ``SystemError``
(numba's dispatcher), a library may swallow it, and raised in a finaliser or a weak
reference's callback (the import system's module locks have one) Python can only report it as
ignored (that report is left out: the record stops the run). So :func:`raise_if_received`
runs before every commit of outputs (:mod:`neardup.io.files`), a commit already under way
finishes first (:func:`deferred`: no output set is left half renamed), and the entry point
ends any run that received a signal with the one line of :func:`stopped_message` and exit
status 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), whatever the exception.

Nothing is installed when neardup is used as a library: :func:`received` stays None and
:func:`raise_if_received` does nothing.

Example:
    >>> received() is None
    True
    >>> stopped_message(signal.SIGTERM)
    'neardup: stopped by SIGTERM'
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

__all__ = [
    "HANDLED",
    "Interrupted",
    "WakingReader",
    "deferred",
    "exit_process",
    "install",
    "raise_if_received",
    "received",
    "stopped_message",
    "wait_readable",
    "wakeup",
]

HANDLED = (signal.SIGINT, signal.SIGTERM)
"""The signals a run stops on by unwinding."""

_received: int | None = None
_deferring = 0


class Interrupted(BaseException):
    """The run received ``signum`` (SIGINT or SIGTERM) and unwinds."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _in_compiler(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs in numba's or llvmlite's code, or is called from it."""
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(("numba", "llvmlite")):
            return True
        frame = frame.f_back
    return False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is not None:
        return  # already unwinding: let the clean-up finish
    _received = signum
    # Raised inside numba or llvmlite (a kernel being loaded, an LLVM object freed by its
    # finaliser) the exception leaves their state half changed, and the process crashed with
    # SIGSEGV on its way out; there the record alone stops the run, at its next check
    # (raise_if_received: each stage and batch of the progress display, every commit).
    if not _deferring and not _in_compiler(frame):
        raise Interrupted(signum)


def install() -> None:
    """Stop on SIGINT and SIGTERM as the module says. Main thread only (where Python runs
    signal handlers); elsewhere it does nothing. O(1)."""
    if threading.current_thread() is threading.main_thread():
        sys.unraisablehook = _without_interrupted(sys.unraisablehook)
        for number in HANDLED:
            signal.signal(number, _on_signal)


def _without_interrupted(report):
    """``sys.unraisablehook`` that passes every exception on to ``report`` except
    :class:`Interrupted`: raised where Python cannot raise (a finaliser, a callback), it would
    print a traceback before the run's one line, and the record already stops the run."""

    def hook(unraisable) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            report(unraisable)

    return hook


def received() -> int | None:
    """The first signal received since :func:`install`, or None."""
    return _received


def raise_if_received() -> None:
    """Raise :class:`Interrupted` if a signal was received, even if its exception was lost:
    what a run calls before it commits anything. O(1)."""
    if _received is not None:
        raise Interrupted(_received)


@contextmanager
def deferred() -> Iterator[None]:
    """A block that a signal does not cut short (a commit of several renames): the signal is
    recorded, and raised once the block ends. A signal received before the block raises at
    once."""
    global _deferring
    raise_if_received()
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    raise_if_received()


@contextmanager
def wakeup() -> Iterator[int | None]:
    """A descriptor that turns readable when a signal arrives (``signal.set_wakeup_fd``), for
    a wait on a pipe or a terminal to select on beside its own (:func:`wait_readable`); None
    outside the main thread, where it cannot be set.

    Why: the kernel may deliver a signal to any thread that does not block it (the compiled
    libraries start some), and the handler may only record it (above): a main thread asleep
    in ``read`` of an idle pipe would then never see it."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    try:
        yield read
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)


def wait_readable(fd: int, woken: int | None, timeout: float | None = None) -> bool:
    """Wait until ``fd`` is readable (True) or ``timeout`` seconds pass (False; None: no
    limit), raising :class:`Interrupted` as soon as a signal comes through ``woken`` (from
    :func:`wakeup`; None: wait on ``fd`` alone)."""
    waits = [fd] if woken is None else [fd, woken]
    while True:
        ready = select.select(waits, [], [], timeout)[0]
        if woken is not None and woken in ready:
            _woken_by(_read_all(woken))
        if fd in ready:
            return True
        if not ready:
            return False


class WakingReader(io.RawIOBase):
    """The descriptor ``fd`` (a pipe, a socket, a terminal) as a raw stream whose every read
    waits by :func:`wait_readable` on ``fd`` and ``woken``; ``fd`` is not closed."""

    def __init__(self, fd: int, woken: int) -> None:
        self._fd = fd
        self._woken = woken

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        wait_readable(self._fd, self._woken)
        return os.readv(self._fd, [buffer])


def _woken_by(numbers: bytes) -> None:
    """Act on the signal numbers read from the wakeup descriptor."""
    raise_if_received()  # the handler may only have recorded the signal
    handled = [n for n in numbers if n in HANDLED]
    if handled and threading.current_thread() is not threading.main_thread():
        # Python runs handlers in the main thread only, and that thread may be asleep in a
        # wait that only a signal of its own ends (a lock, a join): send it one, and end this
        # thread's wait too.
        signal.pthread_kill(threading.main_thread().ident, handled[0])
        raise Interrupted(handled[0])


def _read_all(fd: int) -> bytes:
    """What the non-blocking ``fd`` holds."""
    parts = []
    with contextlib.suppress(BlockingIOError):
        while part := os.read(fd, 512):
            parts.append(part)
    return b"".join(parts)


def stopped_message(signum: int) -> str:
    """The one line a run stopped by ``signum`` ends with."""
    return f"neardup: stopped by {signal.Signals(signum).name}"


def exit_process(status: int | str | None) -> NoReturn:
    """End the process with ``status`` (as ``SystemExit`` takes it: None is 0, a string is
    printed and is 1), or, if a signal came at any time since :func:`install`, with the line
    of :func:`stopped_message` and 128 + the signal's number.

    The ``atexit`` functions run and the standard streams are flushed, then the process ends
    at once: the interpreter's teardown of its modules (about a second after a run that used
    the compiled kernels) is skipped, so that no signal can come between the decision and the
    end, and none is ignored. From the call on, a signal is recorded, never raised."""
    global _deferring
    _deferring += 1
    atexit._run_exitfuncs()
    if _received is not None:
        print(stopped_message(_received), file=sys.stderr)
        status = 128 + _received
    elif status is None:
        status = 0
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream
            stream.flush()
    os._exit(status)
