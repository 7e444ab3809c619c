"""Peak resident memory of each stage of a local ``neardup dedup`` run, and the size of the
per-document columns that pass 1 keeps (docs/memory.md).

A thread samples the process's resident set (``VmRSS``) every 50 ms and charges it to the stage
the run last announced to its progress display; at the end of pass 1 the bytes of each column
kept for every document are printed. The arguments are those of ``neardup`` itself:

    python benchmarks/memory_stages.py dedup benchmarks/.data/short_1m.jsonl.zst -o out.tsv -q

Run it under ``/usr/bin/time -v`` for the whole process's peak and wall time.
"""

from __future__ import annotations

import sys
import threading
import time

import neardup.engines.outofcore as outofcore
from neardup.cli.main import main
from neardup.engines.collected import Collected
from neardup.engines.spill import ColumnFile

SAMPLE_SECONDS = 0.05


RSS_FIELDS = ("VmRSS", "RssAnon", "RssFile")
"""The resident set and its two parts: private memory, and pages of mapped files (the
libraries, and spill files read through a map), which the kernel can drop but which count in
the peak."""


def resident_bytes() -> dict[str, int]:
    """This process's resident set size and its parts, in bytes (Linux ``/proc/self/status``)."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name = line.split(":", 1)[0]
            if name in RSS_FIELDS:
                found[name] = int(line.split()[1]) * 1024
    if "VmRSS" not in found:
        raise RuntimeError("no VmRSS line in /proc/self/status (Linux only)")
    return found


class StagePeaks:
    """Peak resident bytes per stage name (of the whole set and of each part, each its own
    maximum), in the order the stages began."""

    def __init__(self) -> None:
        self.current = "start"
        self.peaks: dict[str, dict[str, int]] = {"start": {}}

    def enter(self, name: str) -> None:
        self.current = name
        self.peaks.setdefault(name, {})
        print(f"enter {name:20s} {_megabytes(resident_bytes())}", file=sys.stderr)

    def sample_forever(self) -> None:
        while True:
            peak = self.peaks.setdefault(self.current, {})
            for field, value in resident_bytes().items():
                peak[field] = max(peak.get(field, 0), value)
            time.sleep(SAMPLE_SECONDS)


def _megabytes(sizes: dict[str, int]) -> str:
    return "  ".join(f"{field} {sizes.get(field, 0) / 1e6:9.1f} MB" for field in RSS_FIELDS)


def column_bytes(collected: Collected) -> dict[str, int]:
    """Bytes of each per-document column of pass 1 (spill columns counted whole; the IDs and
    locations put in the work folder counted as such)."""
    sig = collected.signatures
    locations = collected.locations
    on_disk = isinstance(locations, ColumnFile)
    optional = {"locations": None if on_disk else locations, "sketches": sig.sketches}
    ids = collected.id_column
    sizes = {
        "ids": ids.nbytes if ids is not None else 0,
        "timestamps": collected.timestamps.nbytes,
        "content keys": sig.content.nbytes,
        "sizes": sig.sizes.nbytes,
        "empty": sig.empty.nbytes,
        "signatures": sig.signature.nbytes,
    }
    sizes.update({name: a.nbytes for name, a in optional.items() if a is not None})
    sizes["band hashes spilled"] = sum(c.disk_bytes for c in collected.band_columns)
    if collected.content_column is not None and collected.content_column.spilled:
        sizes["content keys spilled"] = collected.content_column.disk_bytes
    if ids is None:
        sizes["ids spilled"] = collected.ids_path.stat().st_size
    if on_disk:
        sizes["locations spilled"] = locations.disk_bytes
    return sizes


def instrument(peaks: StagePeaks) -> None:
    """Route the out-of-core engine's stage announcements and pass 1's result to ``peaks``."""
    original_init, original_collect = (
        outofcore.OutOfCoreDedup.__init__,
        outofcore.OutOfCoreDedup.collect,
    )

    def init(self, *args, **kwargs) -> None:
        original_init(self, *args, **kwargs)
        announce = self.progress.stage

        def stage(name: str, total: int | None = None, unit: str = "docs") -> None:
            peaks.enter(name)
            announce(name, total, unit)

        self.progress.stage = stage

    def collect(self, *args, **kwargs) -> Collected:
        collected = original_collect(self, *args, **kwargs)
        n = max(len(collected), 1)
        for name, size in column_bytes(collected).items():
            print(f"column {name:20s} {size / 1e6:9.1f} MB {size / n:7.1f} B/doc", file=sys.stderr)
        return collected

    outofcore.OutOfCoreDedup.__init__ = init
    outofcore.OutOfCoreDedup.collect = collect


if __name__ == "__main__":
    peaks = StagePeaks()
    instrument(peaks)
    threading.Thread(target=peaks.sample_forever, daemon=True).start()
    try:
        main(sys.argv[1:], standalone_mode=False)
    finally:
        for stage_name, peak in peaks.peaks.items():
            print(f"stage {stage_name:20s} peak {_megabytes(peak)}", file=sys.stderr)
