"""Files at the edge of the pipeline: formats, paths, opening inputs, writing outputs atomically.

Formats
    A file's format comes from its extension (:data:`FORMAT_OF_EXTENSION`, after a ``.gz`` /
    ``.zst`` / ``.zstd`` compression suffix is stripped: :func:`split_name`) unless the caller
    names one. :func:`resolve_input` and :func:`resolve_output` check a path and its format
    once, before any work.

Paths
    :func:`local_paths` expands ``file://`` URLs and globs; :func:`input_paths` does so for a
    list of inputs. :func:`open_input` gives a buffered binary stream of an input, decompressed.

Writing
    :func:`atomic_write` is the one way the package replaces a file: a temporary file beside
    the target, fsynced, then renamed over it, removed on any error. :func:`atomic_output`
    adds stdout (``-``) and the checks of an output path; :func:`output_set` commits several
    outputs as one set; :func:`check_outputs` checks outputs before a run and completes the
    sets that killed runs left half renamed.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(d / "a.bin") as fh:
    ...     _ = fh.write(b"whole or nothing")
    >>> (d / "a.bin").read_bytes(), split_name("docs.jsonl.gz")
    (b'whole or nothing', ('jsonl', 'gzip'))
"""

from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import io
import json
import os
import re
import secrets
import stat
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import zstandard

from neardup import signals
from neardup.io.write_back import WritingBack

#: Input formats of :func:`~neardup.io.read_documents` (``txt`` means a directory of ``*.txt``
#: files).
INPUT_FORMATS = ("jsonl", "csv", "tsv", "parquet", "txt")
#: Output formats of :func:`~neardup.io.write_table` and :func:`~neardup.io.write_records`.
OUTPUT_FORMATS = ("tsv", "csv", "jsonl", "parquet")
#: The format of each file extension (and format name) the package knows.
FORMAT_OF_EXTENSION = {
    "jsonl": "jsonl",
    "json": "jsonl",
    "ndjson": "jsonl",
    "csv": "csv",
    "tsv": "tsv",
    "parquet": "parquet",
    "txt": "txt",
}
# Each compression: its file extensions (the first is the one suggested) and the bytes its
# data starts with.
_COMPRESSIONS = {
    "gzip": (("gz",), b"\x1f\x8b"),
    "zstd": (("zst", "zstd"), b"\x28\xb5\x2f\xfd"),
}
#: The name of standard input (``-``) in messages.
STDIN_NAME = "<stdin>"
# Bytes of the buffer of an input read or an output written.
_BUFFER_BYTES = 1 << 20


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------


def split_name(name: str) -> tuple[str, str | None]:
    """(format extension, compression) of a file name, a path or a format spec like
    ``jsonl.gz``: the one rule that tells a format from a name, whose extensions
    :data:`FORMAT_OF_EXTENSION` maps to formats.

    The extension is lower case and "" when there is none (a dot in a folder's name is no
    extension); the compression is ``"gzip"``, ``"zstd"`` or None. O(len(name)).

    Example:
        >>> split_name("a/B.CSV.zst"), split_name("runs.v2/part-00000")
        (('csv', 'zstd'), ('', None))
    """
    lower = name.lower()
    compression = None
    for kind, (suffixes, _) in _COMPRESSIONS.items():
        suffix = next((s for s in suffixes if lower.endswith("." + s)), None)
        if suffix is not None:
            compression = kind
            lower = lower[: -len(suffix) - 1]
            break
    _, dot, ext = lower.rpartition(".")
    return (ext if dot and "/" not in ext else ""), compression


def _parse_format_spec(spec: str, param: str, allowed: Sequence[str]) -> tuple[str, str | None]:
    """(format, compression) of a format a caller names, like ``"csv"`` or ``"jsonl.gz"``;
    ``ValueError`` naming ``param`` unless the format is one of ``allowed``. O(len(spec)).

    Example:
        >>> _parse_format_spec("ndjson.zst", "input_format", INPUT_FORMATS)
        ('jsonl', 'zstd')
    """
    ext, compression = split_name("x." + spec)
    fmt = FORMAT_OF_EXTENSION.get(ext)
    if fmt not in allowed:
        raise ValueError(
            f"{param} must be one of {', '.join(allowed)} (optionally with .gz or .zst); "
            f"got {spec!r}"
        )
    return fmt, compression


def refuse_compressed_parquet(path: str, fmt: str, compression: str | None) -> None:
    """Raise ``ValueError`` for a Parquet file named as compressed (``.parquet.gz``): Parquet
    compresses inside the file.

    Example:
        >>> refuse_compressed_parquet("a.parquet", "parquet", None)
    """
    if fmt == "parquet" and compression is not None:
        raise ValueError(f"{path}: Parquet is compressed internally; .gz/.zst are not supported")


@dataclass
class Source:
    """One input to read, resolved.

    Attributes:
        path: as given (``-`` for stdin).
        display: its name in messages (:data:`STDIN_NAME` for stdin).
        fmt: ``jsonl``, ``csv``, ``tsv``, ``parquet``, ``txt`` (a directory), ``table`` (rows in
            memory) or, for fingerprints, ``plain`` (tab-separated rows without a header).
        compression: ``gzip``, ``zstd`` or None.
        columns: fmt ``table``: the rows in memory, one list of Python values per column.
    """

    path: str
    display: str
    fmt: str
    compression: str | None
    columns: Mapping[str, list] | None = None


def resolve_input(p: str | Path, input_format: str | None, allowed: Sequence[str]) -> Source:
    """The :class:`Source` of one input path, its format from ``input_format`` or else from
    its extension; a directory is ``txt``, ``-`` is stdin (JSON Lines by default).

    Raises ``FileNotFoundError`` for a missing path and ``ValueError`` for a format that is not
    in ``allowed``, cannot be told, or does not fit the path (a compressed file whose name says
    nothing of it included). O(1) but for reading 4 bytes of an uncompressed text file.

    Example:
        >>> resolve_input("-", "csv.gz", INPUT_FORMATS)
        Source(path='-', display='<stdin>', fmt='csv', compression='gzip', columns=None)
    """
    path = str(p)
    if path == "-":
        if input_format is None:
            return Source(path, STDIN_NAME, "jsonl", None)
        fmt, compression = _parse_format_spec(input_format, "input_format", allowed)
        if fmt == "txt":
            raise ValueError("input_format 'txt' needs a directory, not stdin")
        return Source(path, STDIN_NAME, fmt, compression)
    if not os.path.exists(path):
        raise FileNotFoundError(f"input not found: {path}")
    if os.path.isdir(path):
        if input_format is not None and FORMAT_OF_EXTENSION.get(input_format.lower()) != "txt":
            raise ValueError(
                f"{path} is a directory; directories are read as *.txt files "
                f"(input_format 'txt'), got input_format {input_format!r}"
            )
        return Source(path, path, "txt", None)
    if input_format is not None:
        fmt, compression = _parse_format_spec(input_format, "input_format", allowed)
        if compression is None:
            compression = split_name(path)[1]
    else:
        ext, compression = split_name(path)
        fmt = FORMAT_OF_EXTENSION.get(ext)
        if fmt is None or fmt == "txt" or fmt not in allowed:
            raise ValueError(
                f"cannot tell the format of {path}: supported extensions are .jsonl/.json/.ndjson, "
                f".csv, .tsv, .parquet (text formats optionally .gz/.zst/.zstd) and directories of "
                f"*.txt files; choose one with --input-format (input_format in Python)"
            )
    if fmt == "txt":
        raise ValueError(f"{path}: .txt documents are read from a directory; pass the directory")
    refuse_compressed_parquet(path, fmt, compression)
    if compression is None and fmt != "parquet":
        _refuse_unnamed_compression(path, fmt)
    return Source(path, path, fmt, compression)


def _refuse_unnamed_compression(path: str, fmt: str) -> None:
    """Raise if a file read as plain text starts with gzip's or zstd's magic bytes.

    Neither magic is valid UTF-8 at the start of a file, so no text input is refused; without
    this check the user would be told of "invalid UTF-8" on line 1.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return  # reading it will report the problem with its own message
    for name, (suffixes, magic) in _COMPRESSIONS.items():
        if head.startswith(magic):
            suffix = "." + suffixes[0]
            raise ValueError(
                f"{path} is {name}-compressed but its name does not say so: rename it to "
                f"{path}{suffix}, or pass --input-format {fmt}{suffix} (input_format in Python)"
            )


def resolve_output(path: str | Path, output_format: str | None) -> tuple[str, str, str | None]:
    """(target, format, compression) of an output path, the format from ``output_format`` or
    else from the extension; ``-`` (stdout) is TSV by default. ``ValueError`` for a format
    that cannot be told or is not one of :data:`OUTPUT_FORMATS`. O(len(path)).

    Example:
        >>> resolve_output("groups.tsv.gz", None), resolve_output("-", "jsonl")
        (('groups.tsv.gz', 'tsv', 'gzip'), ('-', 'jsonl', None))
    """
    target = str(path)
    if output_format is not None:
        fmt, compression = _parse_format_spec(output_format, "output_format", OUTPUT_FORMATS)
        if compression is None and target != "-":
            compression = split_name(target)[1]
    elif target == "-":
        fmt, compression = "tsv", None
    else:
        ext, compression = split_name(target)
        fmt = FORMAT_OF_EXTENSION.get(ext)
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(
                f"cannot tell the output format of {target} from its extension: name it "
                f".tsv, .csv, .jsonl (also .json/.ndjson) or .parquet; text formats may add "
                f".gz or .zst (in Python, output_format chooses one for any name)"
            )
    refuse_compressed_parquet(target, fmt, compression)  # type: ignore[arg-type]
    return target, fmt, compression  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Paths and streams
# --------------------------------------------------------------------------------------------

_URL_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)


def local_paths(path: str | Path) -> list[str]:
    """The local files a path names: itself, a ``file://`` URL's path, or the sorted matches
    of a glob (``*``, ``?``, ``[…]``, ``**`` across folders) when no file has that very name.

    Other URLs (``s3://``, ``hdfs://``, ``gs://`` …) raise ``ValueError``: the local engine
    reads local files and stdin, the Spark engine reads what the cluster's Hadoop file systems
    read. A glob that matches nothing raises ``FileNotFoundError``. O(matches).

    Example:
        >>> local_paths("file:///tmp/a.jsonl"), local_paths("-")
        (['/tmp/a.jsonl'], ['-'])
    """
    name = str(path)
    url = _URL_RE.fullmatch(name)
    if url is not None:
        scheme, rest = url.groups()
        if scheme.lower() != "file":
            raise ValueError(
                f"{name}: the local engine reads local files and stdin; {scheme}:// paths are "
                f"read by the Spark engine (--engine spark, through the cluster's Hadoop file "
                f"systems), or copy the files here first"
            )
        name = rest
    if name != "-" and not os.path.exists(name) and any(c in name for c in "*?["):
        matches = sorted(glob.glob(name, recursive=True))
        if not matches:
            raise FileNotFoundError(f"no input matches the pattern {name}")
        return matches
    return [name]


def input_paths(paths: Sequence[str | Path] | str | Path) -> list[str]:
    """The local files of a list of inputs (or of one path), each through :func:`local_paths`,
    in order. ``ValueError`` for an empty list or stdin (``-``) named twice. O(matches).

    Example:
        >>> input_paths("-"), input_paths(["file:///a.csv", "b.csv"])
        (['-'], ['/a.csv', 'b.csv'])
    """
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not given:
        raise ValueError("paths must name at least one input, got an empty list")
    out = [name for p in given for name in local_paths(p)]
    if out.count("-") > 1:
        raise ValueError("paths may name stdin ('-') only once")
    return out


def stdin_binary() -> IO[bytes]:
    """Standard input as bytes (its buffer; or, where a test replaced ``sys.stdin`` with a
    text stream, its text encoded again).

    Example:
        >>> saved, sys.stdin = sys.stdin, io.StringIO("text")
        >>> stdin_binary().read()
        b'text'
        >>> sys.stdin = saved
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer
    return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))


def read_text(source: str | Path) -> str:
    """The whole text of the file ``source`` (``-``: standard input), which must be UTF-8.
    O(its bytes).

    Raises:
        FileNotFoundError: no such file. IsADirectoryError: a directory.
        ValueError: invalid UTF-8, naming the file and the byte (from 1).

    Example:
        >>> import tempfile
        >>> bad = Path(tempfile.mkdtemp()) / "bad.txt"
        >>> _ = bad.write_bytes(bytes([99, 97, 102, 233]))  # "caf" and a Latin-1 é
        >>> try:
        ...     read_text(bad)
        ... except ValueError as error:
        ...     print(str(error).split(": ", 1)[1])
        invalid UTF-8 at byte 4 (a text must be UTF-8)
    """
    name = "standard input" if str(source) == "-" else str(source)
    if str(source) == "-":
        data = stdin_binary().read()
    elif Path(source).is_dir():
        raise IsADirectoryError(f"{name} is a directory, not a text file")
    elif not Path(source).exists():
        raise FileNotFoundError(f"no such file: {name}")
    else:
        data = Path(source).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{name}: invalid UTF-8 at byte {error.start + 1} (a text must be UTF-8)"
        ) from None


@contextmanager
def open_input(src: Source) -> Iterator[IO[bytes]]:
    """A buffered binary stream of the (decompressed) input; stdin is not closed.

    Decompression streams through a 1 MiB buffer: memory O(1) whatever the size of the input.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
        >>> _ = p.write_text("{}\\n")
        >>> with open_input(resolve_input(p, None, INPUT_FORMATS)) as fh:
        ...     fh.read()
        b'{}\\n'
    """
    with contextlib.ExitStack() as stack:
        if src.path == "-":
            raw: IO[bytes] = _waking_stdin(stack)
        else:
            raw = stack.enter_context(open(src.path, "rb", buffering=_BUFFER_BYTES))
        yield stack.enter_context(_decompressed(raw, src.compression))


def _waking_stdin(stack: contextlib.ExitStack) -> IO[bytes]:
    """Standard input; when it is a pipe, a socket or a terminal, read through
    :func:`neardup.signals.wait_readable`, so that a signal stops a run waiting for input
    even when the kernel delivers it to another thread (the wakeup lives as long as
    ``stack``)."""
    raw = stdin_binary()
    try:
        mode = os.fstat(raw.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no descriptor: a test's stream
        return raw
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return raw
    woken = stack.enter_context(signals.wakeup())
    if woken is None:
        return raw
    return io.BufferedReader(signals.WakingReader(raw.fileno(), woken), _BUFFER_BYTES)


@contextlib.contextmanager
def _decompressed(raw: IO[bytes], compression: str | None) -> Iterator[IO[bytes]]:
    if compression == "gzip":
        with gzip.GzipFile(fileobj=raw, mode="rb") as g:
            yield g
    elif compression == "zstd":
        with io.BufferedReader(_ZstdFrames(raw), _BUFFER_BYTES) as buffered:
            yield buffered
    else:
        yield raw


class _ZstdFrames(io.RawIOBase):
    """The zstd frames of ``raw``, decompressed one after the other. Data that end inside a
    frame raise ``EOFError``: zstandard's ``stream_reader`` takes them for the end of the input,
    so a file cut short (an interrupted copy or download) would lose its last documents without
    a word. Memory: one compressed chunk and what it decompresses to."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self._decompressor = zstandard.ZstdDecompressor()
        self._frame = None  # the frame being decompressed; None before the first
        self._out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out:
            chunk = self._raw.read(_BUFFER_BYTES)
            if not chunk:
                if self._frame is not None and not self._frame.eof:
                    raise EOFError("the zstd data end inside a frame: the file was cut short")
                return 0
            self._out = memoryview(self._decompress(chunk))
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _decompress(self, chunk: bytes) -> bytes:
        parts = []
        while chunk:
            if self._frame is None or self._frame.eof:
                self._frame = self._decompressor.decompressobj()
            parts.append(self._frame.decompress(chunk))
            chunk = self._frame.unused_data if self._frame.eof else b""
        return b"".join(parts)


@contextmanager
def compressing(fh: IO[bytes], compression: str | None) -> Iterator[IO[bytes]]:
    """A stream that writes ``compression`` (``gzip``, ``zstd`` or None) into ``fh``, the same
    bytes for the same data (gzip without file name and mtime); ``fh`` stays open.

    Example:
        >>> sink = io.BytesIO()
        >>> with compressing(sink, "gzip") as out:
        ...     _ = out.write(b"x")
        >>> gzip.decompress(sink.getvalue())
        b'x'
    """
    if compression is None:
        yield fh
    elif compression == "gzip":
        # No file name and mtime 0 in the header, so equal data gives equal bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, compresslevel=6, mtime=0) as g:
            yield g  # type: ignore[misc]
    else:
        writer = zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=False)
        try:
            yield writer  # type: ignore[misc]
        finally:
            writer.close()


# --------------------------------------------------------------------------------------------
# Writing atomically
# --------------------------------------------------------------------------------------------

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
    f = WritingBack(os.fdopen(fd, "wb", buffering=0), _BUFFER_BYTES)
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
        raise FileNotFoundError(f"output directory {directory} does not exist (writing {target})")
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
        yield
    except BaseException:
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _OUTPUT_SET.pending = outer
    try:
        # A signalled run commits nothing; a signal during the commit waits for its end.
        with signals.deferred():
            _commit(pending)
    except BaseException:
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
            raise FileNotFoundError(f"output directory {parent} does not exist (writing {out})")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PermissionError(f"output directory {parent} is not writable (writing {out})")
        finish_dead_writes(parent)
    for table in filter(None, tables):  # "-": standard output (TSV; kept rows: JSON Lines)
        resolve_output(table, None)
