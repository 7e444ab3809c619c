"""Sending a signal to one thread of a process, for the tests of how commands stop.

The kernel delivers a process's signal to any of its threads that does not block it; these
pick the thread, where ``/proc`` and glibc's ``tgkill`` allow it (the tests skip otherwise).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from pathlib import Path

import pytest


def other_threads(pid: int) -> list[int]:
    """The threads of process ``pid`` other than its main one that do not block SIGTERM."""
    found = []
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        blocked = int(status.split("SigBlk:")[1].split()[0], 16)
        if tid != pid and not blocked >> (signal.SIGTERM - 1) & 1:
            found.append(tid)
    return found


def sigterm_to_main_thread(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)  # the kernel's choice: the waiting main thread


def _sigterm_to(process: subprocess.Popen, pick) -> None:
    tids = other_threads(process.pid) if Path("/proc").is_dir() else []
    tgkill = getattr(ctypes.CDLL(None), "tgkill", None)
    if not tids or tgkill is None:
        pytest.skip("needs /proc, glibc's tgkill and a second thread that takes SIGTERM")
    assert tgkill(process.pid, pick(tids), signal.SIGTERM) == 0


def sigterm_to_another_thread(process: subprocess.Popen) -> None:
    _sigterm_to(process, lambda tids: tids[0])


def sigterm_to_the_last_thread(process: subprocess.Popen) -> None:
    _sigterm_to(process, lambda tids: tids[-1])
