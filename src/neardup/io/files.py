"""Files at the edge of the pipeline: formats, paths, opening inputs (writing them whole:
:mod:`neardup.io.atomic`).

Formats
    A file's format comes from its extension (:data:`FORMAT_OF_EXTENSION`, after a ``.gz`` /
    ``.zst`` / ``.zstd`` compression suffix is stripped: :func:`split_name`) unless the caller
    names one. :func:`resolve_input` and :func:`resolve_output` check a path and its format
    once, before any work.

Paths
    :func:`local_paths` expands ``file://`` URLs and globs; :func:`input_paths` does so for a
    list of inputs. :func:`open_input` gives a buffered binary stream of an input, decompressed.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.jsonl").write_text('{"id": "a", "text": "x"}\\n')
    >>> resolve_input(d / "a.jsonl", None, INPUT_FORMATS).fmt, split_name("docs.jsonl.gz")
    ('jsonl', ('jsonl', 'gzip'))
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import zstandard

from neardup import signals

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
#: Bytes of the buffer of an input read or an output written.
BUFFER_BYTES = 1 << 20


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------


def input_not_found(path: str | Path) -> FileNotFoundError:
    """The error every reader raises for an input ``path`` that does not exist (the local and
    the Spark engine's, documents or rows alike), for the caller to raise.

    Example:
        >>> input_not_found("docs.jsonl")
        FileNotFoundError('input not found: docs.jsonl')
    """
    return FileNotFoundError(f"input not found: {path}")


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
        raise input_not_found(path)
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
            raw = stack.enter_context(open(src.path, "rb", buffering=BUFFER_BYTES))
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
    return io.BufferedReader(signals.WakingReader(raw.fileno(), woken), BUFFER_BYTES)


@contextlib.contextmanager
def _decompressed(raw: IO[bytes], compression: str | None) -> Iterator[IO[bytes]]:
    if compression == "gzip":
        with gzip.GzipFile(fileobj=raw, mode="rb") as g:
            yield g
    elif compression == "zstd":
        with io.BufferedReader(_ZstdFrames(raw), BUFFER_BYTES) as buffered:
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
            chunk = self._raw.read(BUFFER_BYTES)
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
