"""Helpers of the io tests: input files and reading them whole."""

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

from neardup.io import read_documents

#: Microseconds in a second.
US = 1_000_000


def jsonl(path, rows):
    """Write ``rows`` (dicts) as JSON Lines to ``path``; returns ``path``."""
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def dead_pid() -> int:
    """The process ID of a process that has exited (a run killed with ``kill -9`` leaves files
    named after such an ID)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def read_all(paths, **kw):
    """(every document as one batch, the read's stats) of :func:`read_documents`."""
    reader = read_documents(paths, **kw)
    return reader.read_all(), reader.stats


def us_of(dt):
    """Microseconds since the epoch of an aware datetime."""
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
