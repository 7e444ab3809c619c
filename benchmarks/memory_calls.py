"""Peak resident memory of each call of the grouping's steps in a local ``neardup dedup`` run,
seen by the kernel (docs/memory.md).

A sampling thread misses a peak reached while another thread holds the interpreter (a compiled
kernel without ``nogil``). The kernel's high-water mark (``VmHWM``) does not: it is reset
(``/proc/self/clear_refs``) as each probed call begins and read as it ends, and a call's peak is
carried up to the call that made it. Each line is the seconds since the start, ``>`` or ``<``
(a call begins, ends), the call's name and depth, the resident MB at that moment, on ``>``
the high-water mark since the last call began or ended (before the first call: the first
pass's peak) and, on ``<``, the call's peak MB; ``STAGE`` lines mark the run's stages, and
``END`` the high-water mark after the last call. The writing of each output
(``write_in_pieces``) is probed too. The arguments are those of ``neardup`` itself:

    python benchmarks/memory_calls.py dedup benchmarks/.data/short_10m.jsonl.zst -o g.tsv -q

The resets lower what ``/usr/bin/time -v`` reports as the whole process's peak: run without the
probe for that figure.
"""

from __future__ import annotations

import functools
import sys
import time
from types import ModuleType

import neardup.candidates.repair as repair
import neardup.engines.local as local
import neardup.engines.outofcore as outofcore
import neardup.pipeline as pipeline
from neardup.cli.main import main

PIPELINE_CALLS = (
    "candidate_edges", "listed_pairs", "bounded_pairs", "index_union", "locality_pair_order",
    "accepted_links", "connected_components", "repair_links", "with_duplicates",
    "originals_of", "_pair_values", "all_pairs", "own_labels", "group_sizes",
)  # fmt: skip
"""The steps of :func:`neardup.pipeline.find_groups`, probed where it calls them."""

_started = time.perf_counter()
_calls: list[list] = []  # [name, highest MB seen so far] of each call under way


def _memory() -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of this process, in MB (Linux ``/proc/self/status``)."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name = line.split(":", 1)[0]
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(line.split()[1]) // 1024
    return found


def _reset_high_water_mark() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _say(text: str) -> None:
    print(f"{time.perf_counter() - _started:9.1f} {text}", file=sys.stderr, flush=True)


def probe(owner: ModuleType | type, name: str) -> None:
    """Replace ``owner.name`` by a function that reports the call's peak resident memory."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def probed(*args, **kwargs):
        now = _memory()
        if _calls:  # the peak of the enclosing call up to here
            _calls[-1][1] = max(_calls[-1][1], now["VmHWM"])
        _reset_high_water_mark()
        _calls.append([name, now["VmRSS"]])
        shapes = [getattr(arg, "shape", None) for arg in args[:4]]
        # hwm: the peak since the last call's start or end (the first pass's, before the first).
        _say(f"> {'  ' * len(_calls)}{name} rss={now['VmRSS']} hwm={now['VmHWM']} {shapes}")
        try:
            return function(*args, **kwargs)
        finally:
            end = _memory()
            _, peak = _calls.pop()
            peak = max(peak, end["VmHWM"])
            _say(f"< {'  ' * (len(_calls) + 1)}{name} peak={peak} rss={end['VmRSS']}")
            _reset_high_water_mark()
            if _calls:
                _calls[-1][1] = max(_calls[-1][1], peak)

    setattr(owner, name, probed)


def _stage_probe(on_stage):
    @functools.wraps(on_stage)
    def announced(self, name: str) -> None:
        now = _memory()
        _say(f"STAGE {name} rss={now['VmRSS']} hwm={now['VmHWM']}")
        on_stage(self, name)

    return announced


if __name__ == "__main__":
    for step in PIPELINE_CALLS:
        probe(pipeline, step)
    probe(repair, "accepted_links")
    for step in ("locality_pair_order", "chunks_of_pairs"):
        probe(outofcore, step)
    for step in ("group", "set_source", "_sets"):
        probe(outofcore.OutOfCoreDedup, step)
    probe(local, "write_in_pieces")  # GROUPS and PAIRS, each written in pieces
    outofcore.OutOfCoreDedup._on_stage = _stage_probe(outofcore.OutOfCoreDedup._on_stage)
    sys.argv = ["neardup", *sys.argv[1:]]
    try:
        main()
    finally:  # the peak since the last call: the outputs' end, the report
        last = _memory()
        _say(f"END rss={last['VmRSS']} hwm={last['VmHWM']}")
