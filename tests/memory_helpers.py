"""Helpers of the memory tests: what this process holds of a mapped file."""

from pathlib import Path


def mapped_resident_bytes(path: Path) -> int:
    """Resident bytes of this process's maps of the file ``path`` (``/proc/self/smaps``): the
    pages that reads through the maps brought in and that are still mapped."""
    target, total, inside = str(Path(path).resolve()), 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                inside = len(head) >= 6 and head[5] == target
            elif inside and head and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total
