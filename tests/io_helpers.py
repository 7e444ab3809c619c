"""Helpers of the io tests: input files and reading them whole."""

import json
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


def read_all(paths, **kw):
    """(every document as one batch, the read's stats) of :func:`read_documents`."""
    reader = read_documents(paths, **kw)
    return reader.read_all(), reader.stats


def us_of(dt):
    """Microseconds since the epoch of an aware datetime."""
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
