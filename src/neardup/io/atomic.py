"""Replacing files whole: atomic writes, outputs committed as one set, and the checks of
outputs before a run.

:func:`atomic_write` is the one way the package replaces a file: a temporary file beside the
target, fsynced, then renamed over it, removed on any error. :func:`atomic_output` adds stdout
(``-``) and the checks of an output path; :func:`output_set` commits several outputs as one
set, through a journal that lets a later run finish the renames of a killed one
(:func:`finish_dead_writes`); :func:`check_outputs` checks outputs before a run and completes
the sets that killed runs left half renamed.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(d / "a.bin") as fh:
    ...     _ = fh.write(b"whole or nothing")
    >>> (d / "a.bin").read_bytes()
    b'whole or nothing'
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import secrets
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from neardup import signals
from neardup.io.files import BUFFER_BYTES, local_paths, resolve_output
from neardup.io.write_back import WritingBack

_OUTPUT_SET = threading.local()
_TEMP_OWNER = re.compile(r"\.(\d+)-[0-9a-f]{12}\.(?:tmp|json)$")


def _unique_temp(directory: str, stem: str, suffix: str) -> tuple[str, int]:
    """A new file ``<stem>.<pid>-<random>.<suffix>`` in ``directory``: (path, fd). The pid
    lets a later run tell the files of dead processes from those of live ones."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        path = os.path.join(directory, f"{stem}.{os.getpid()}-{secrets.token_hex(6)}{suffix}")
        try:
            return path, os.open(path, flags, 0o666)
        except FileExistsError:
            continue


def process_gone(pid: int) -> bool:
    """True if no process ``pid`` exists on this machine (a run killed without cleaning up);
    False if it runs, whoever owns it. O(1), one system call.

    Example:
        >>> process_gone(os.getpid())
        False
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, but another user's
    return False


def _no_output_directory(directory: str | Path, target: str | Path) -> FileNotFoundError:
    """The error for an output ``target`` whose ``directory`` does not exist."""
    return FileNotFoundError(f"output directory {directory} does not exist (writing {target})")


def _left_by_dead_process(name: str) -> bool:
    """True if the temp file ``name`` was made by a process that no longer exists here."""
    match = _TEMP_OWNER.search(name)
    return match is not None and process_gone(int(match[1]))


@contextmanager
def atomic_write(
    target: str | os.PathLike, *, join_output_set: bool = False
) -> Iterator[IO[bytes]]:
    """A binary file that appears under ``target`` only once completely written.

    The data goes to a hidden temporary file in the same directory
    (``.<name>.<pid>-<random>.tmp``: :func:`check_outputs` removes those of dead processes),
    which is flushed, fsynced and renamed over ``target`` on success, and removed on any error
    (Ctrl-C included). Readers see the old file or the new one, whole, even after a crash or
    a power loss. With ``join_output_set``, inside an :func:`output_set` block the rename waits
    for the block to end. Cost: one fsync and one rename beyond the writes.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.bin"
        >>> try:
        ...     with atomic_write(p) as fh:
        ...         _ = fh.write(b"half")
        ...         raise RuntimeError("interrupted")
        ... except RuntimeError:
        ...     pass
        >>> list(p.parent.iterdir())
        []
    """
    target = os.fspath(target)
    directory = os.path.dirname(os.path.abspath(target))
    tmp, fd = _unique_temp(directory, f".{os.path.basename(target)}", ".tmp")
    f = WritingBack(os.fdopen(fd, "wb", buffering=0), BUFFER_BYTES)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        pending = getattr(_OUTPUT_SET, "pending", None) if join_output_set else None
        if pending is None:
            signals.raise_if_received()  # a signalled run commits nothing
            os.replace(tmp, target)
        else:
            pending.append((tmp, target))
    except BaseException as error:
        # Closing can fail again (a full disk): the temporary file must go all the same.
        with contextlib.suppress(OSError):
            f.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            # A write's error names no file: say which output, and where.
            raise OSError(
                error.errno,
                f"no space left on the device of {directory} while writing {target} "
                f"({error.strerror}); nothing was written there",
            ) from error
        raise


@contextmanager
def atomic_output(target: str) -> Iterator[IO[bytes]]:
    """An output file, written by :func:`atomic_write` as a member of the current
    :func:`output_set`; ``-`` is stdout.

    Raises ``FileNotFoundError`` if the output's directory does not exist and
    ``IsADirectoryError`` if ``target`` is a directory, before anything is written.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
        >>> with atomic_output(str(p)) as fh:
        ...     _ = fh.write(b"done")
        >>> p.read_bytes()
        b'done'
    """
    if target == "-":
        out = getattr(sys.stdout, "buffer", None)
        if out is not None:
            yield out
            out.flush()
        else:
            sink = io.BytesIO()
            yield sink
            sys.stdout.write(sink.getvalue().decode("utf-8"))
            sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise _no_output_directory(directory, target)
    if os.path.isdir(target):
        raise IsADirectoryError(f"output {target} is a directory")
    with atomic_write(target, join_output_set=True) as f:
        yield f


@contextmanager
def output_set() -> Iterator[None]:
    """Commit the files written inside the block as one set.

    Each output is still written under a temporary name beside its target, but the renames
    into place wait until the block ends without error; on any error (or Ctrl-C) every
    temporary file is removed. A run therefore leaves all its outputs or none of them.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> try:
        ...     with output_set():
        ...         with atomic_output(str(d / "a.tsv")) as fh:
        ...             _ = fh.write(b"x\\n")
        ...         raise RuntimeError("the second output failed")
        ... except RuntimeError:
        ...     pass
        >>> sorted(p.name for p in d.iterdir())
        []
    """
    pending: list[tuple[str, str]] = []
    outer = getattr(_OUTPUT_SET, "pending", None)
    _OUTPUT_SET.pending = pending
    try:
        try:
            yield
        finally:
            _OUTPUT_SET.pending = outer
        # A signalled run commits nothing; a signal during the commit waits for its end.
        with signals.deferred():
            _commit(pending)
    except BaseException:
        # The block or the commit failed: no temporary file stays (renamed ones are gone).
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def _commit(pending: list[tuple[str, str]]) -> None:
    """Rename each temporary file of ``pending`` onto its target, as one set."""
    if len(pending) < 2:
        for tmp, target in pending:
            os.replace(tmp, target)
        return
    # A kill between two renames would leave part of the set: the journal, written before
    # the first rename into every folder the set writes to, lets the next run that writes
    # into any of them finish the renames (see finish_dead_writes), so the set ends complete.
    folders = list(dict.fromkeys(os.path.dirname(os.path.abspath(g)) for _, g in pending))
    journals = [_unique_temp(folder, ".neardup-commit", ".json") for folder in folders]
    record = {
        "renames": [[os.path.abspath(t), os.path.abspath(g)] for t, g in pending],
        "journals": [path for path, _ in journals],
    }
    for _, fd in journals:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
            fh.flush()
            os.fsync(fh.fileno())
    for tmp, target in pending:
        os.replace(tmp, target)
    for path, _ in reversed(journals):
        os.unlink(path)


def _finish_commit(journal: str) -> None:
    """Finish the commit of a dead process from its ``journal`` (one of its copies), then
    remove every copy. The renames had started, and are finished, when every temporary file
    is still there or every copy of the journal is (the renames start once all are written);
    otherwise the process died while writing them, another run may have removed some
    temporary files already, and the rest are removed too: the set is left out, never split."""
    try:
        with open(journal, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        record = None  # killed while writing the journal: no rename had started
    if isinstance(record, list):  # the journal of an older version: one copy, beside it
        record = {"renames": record, "journals": [journal]}
    if not isinstance(record, dict):
        with contextlib.suppress(OSError):
            os.unlink(journal)
        return
    renames, copies = record.get("renames", []), record.get("journals", [journal])
    whole = all(os.path.exists(tmp) for tmp, _ in renames) or all(map(os.path.exists, copies))
    for tmp, target in renames:
        if whole and os.path.exists(tmp):
            os.replace(tmp, target)
        elif not whole:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    for path in reversed(copies):
        with contextlib.suppress(OSError):
            os.unlink(path)


def finish_dead_writes(directory: str | os.PathLike) -> None:
    """Complete the output sets that killed processes were renaming, from the copy of their
    journal in ``directory`` (a set written into several folders has one in each, and is
    finished from whichever a later run writes into first), then remove the temporary files of
    :func:`atomic_write` that they left there; what live processes are writing is left alone.
    O(files in the directory).

    Example:
        >>> import tempfile
        >>> finish_dead_writes(tempfile.mkdtemp())
    """
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in sorted(names):
        if name.startswith(".neardup-commit.") and _left_by_dead_process(name):
            _finish_commit(os.path.join(directory, name))
    for name in names:
        if name.startswith(".") and name.endswith(".tmp") and _left_by_dead_process(name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def check_outputs(
    outputs: Iterable[str | Path | None], inputs: Iterable[str | Path], tables: Sequence = ()
) -> None:
    """Check, before any work, that each output (``tables`` too) is writable and no input.

    Raises ``ValueError`` for an output that is one of the inputs (same file, or same path
    before it exists), that two outputs share or, a table, whose name tells no format
    (:func:`resolve_output`); ``FileNotFoundError`` / ``NotADirectoryError`` /
    ``IsADirectoryError`` / ``PermissionError`` naming the path otherwise. ``-`` and None are
    skipped. In each output directory, the output sets that killed runs were committing are
    completed and their temporary files removed. O(number of paths + files in their folders).

    Example:
        >>> check_outputs(["out.tsv"], ["out.tsv"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: output out.tsv is the input ... refusing to overwrite it
    """
    sources = []
    for p in inputs:
        try:
            names = local_paths(p)
        except (ValueError, FileNotFoundError):  # reported by the reader, or read by Spark
            names = [str(p)]
        for name in names:
            if name != "-":
                path = Path(name)
                sources.append((path.resolve(), path.stat() if path.exists() else None))
    seen: dict[Path, str] = {}
    for out in (*outputs, *tables):
        if out is None or str(out) == "-":
            continue
        target = Path(out)
        resolved = target.resolve()
        if resolved in seen:
            raise ValueError(f"output {out} is given twice (also as {seen[resolved]})")
        seen[resolved] = str(out)
        st = target.stat() if target.exists() else None
        for path, src in sources:
            if resolved == path or (
                st is not None
                and src is not None
                and (st.st_dev, st.st_ino) == (src.st_dev, src.st_ino)
            ):
                raise ValueError(f"output {out} is the input {path}: refusing to overwrite it")
        if target.is_dir():
            raise IsADirectoryError(f"output {out} is a directory")
        parent = resolved.parent
        for ancestor in (parent, *parent.parents):
            if ancestor.exists():
                if not ancestor.is_dir():
                    raise NotADirectoryError(
                        f"cannot write {out}: {ancestor} is a file, not a directory"
                    )
                break
        if not parent.is_dir():
            raise _no_output_directory(parent, out)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PermissionError(f"output directory {parent} is not writable (writing {out})")
        finish_dead_writes(parent)
    for table in filter(None, tables):  # "-": standard output (TSV; kept rows: JSON Lines)
        resolve_output(table, None)
