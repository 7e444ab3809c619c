"""Outputs written to disk while they are written: a buffered file that asks the system to
start writing its bytes every :data:`WRITE_BACK_BYTES`, so that the fsync which makes an
output durable before its rename (:func:`neardup.io.atomic.atomic_write`) waits for the last
bytes only, not for the whole file at the end of the run.

Example:
    >>> import io, os, tempfile
    >>> fd, path = tempfile.mkstemp()
    >>> with WritingBack(io.FileIO(fd, "wb"), 1 << 20) as out:
    ...     _ = out.write(b"rows\\n")
    >>> open(path, "rb").read()
    b'rows\\n'
    >>> os.unlink(path)
"""

from __future__ import annotations

import ctypes
import io
from collections.abc import Callable

__all__ = ["WRITE_BACK_BYTES", "WritingBack", "start_write_back"]

#: Bytes written to an output between two requests that the system start writing them to
#: disk (:func:`start_write_back`).
WRITE_BACK_BYTES = 64 << 20
_SYNC_FILE_RANGE_WRITE = 2  # Linux's SYNC_FILE_RANGE_WRITE


def _sync_file_range() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None  # not Linux: the final fsync writes everything
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return function


_SYNC_RANGE = _sync_file_range()


def start_write_back(fd: int, offset: int, size: int) -> None:
    """Ask the system to start writing the bytes ``offset..offset+size-1`` of the file ``fd``
    to disk, without waiting for them (Linux ``sync_file_range(SYNC_FILE_RANGE_WRITE)``;
    nothing elsewhere). The output's closing fsync then waits only for its last bytes: a
    400 MB GROUPS file was otherwise written to disk all at once at the end of the run, the
    run's processors idle meanwhile. O(1)."""
    if _SYNC_RANGE is not None:
        _SYNC_RANGE(fd, offset, size, _SYNC_FILE_RANGE_WRITE)  # advisory: errors do not matter


class WritingBack(io.BufferedWriter):
    """A buffered output that starts writing its bytes to disk every :data:`WRITE_BACK_BYTES`
    (:func:`start_write_back`) while the run goes on."""

    def __init__(self, raw: io.FileIO, buffer_size: int) -> None:
        super().__init__(raw, buffer_size)
        self._written_back = 0
        self._pending = 0

    def write(self, data) -> int:
        """Write ``data`` (bytes-like) as :class:`io.BufferedWriter` does; once
        :data:`WRITE_BACK_BYTES` have come since the last request, flush and request the
        bytes since then. Returns the bytes taken. O(len(data))."""
        size = super().write(data)
        self._pending += size
        if self._pending >= WRITE_BACK_BYTES:
            self.flush()
            end = self.tell()
            start_write_back(self.fileno(), self._written_back, end - self._written_back)
            self._written_back = end
            self._pending = 0
        return size
