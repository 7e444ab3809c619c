"""The ``neardup`` command: the top-level group that gathers the command modules of
:mod:`neardup.cli`, and its entry point :func:`main`."""

from __future__ import annotations

import importlib

import click

from neardup import startup
from neardup._version import __version__
from neardup.cli.context import CONTEXT


class _CommandGroup(click.Group):
    """The top-level group; each command's module loads when the command is first used.

    Only for start-up time: a run imports its own command's module, not the index, the service,
    the quality tools and the labelling session of the others (measured on 2 cores: importing
    the compare module 0.5-0.8 s, every command module 0.9-1.3 s). ``neardup --help`` and
    ``--version`` import none: the list of commands shows :data:`SUMMARIES`, which a test
    holds to the first words of each command's own help."""

    COMMANDS = {
        "fingerprint": "neardup.cli.dedup:fingerprint",
        "dedup": "neardup.cli.dedup:dedup",
        "pairs": "neardup.cli.dedup:pairs",
        "compare": "neardup.cli.compare:compare",
        "tune": "neardup.cli.compare:tune",
        "evaluate": "neardup.cli.quality:evaluate",
        "sweep": "neardup.cli.quality:sweep",
        "generate": "neardup.cli.labelling:generate",
        "sample": "neardup.cli.labelling:sample",
        "label": "neardup.cli.labelling:label",
        "report": "neardup.cli.report:report",
        "index": "neardup.cli.index:index",
        "serve": "neardup.cli.serve:serve",
        "warm": "neardup.cli.warm:warm",
    }
    SUMMARIES = {
        "compare": "Every similarity measure between two texts",
        "dedup": "Find every group of near-duplicates; give each a duplicate ID and name its "
        "original",
        "evaluate": "Precision, recall and F1 of a prediction against hand-labelled truth",
        "fingerprint": "Fingerprint every document: one row per document, in input order",
        "generate": "Derive labelled near-duplicates from real texts",
        "index": "A persistent near-duplicate index for crawlers",
        "label": "Label the pairs of a sheet interactively",
        "pairs": "All pairs of fingerprints within Hamming distance k",
        "report": "Write a self-contained HTML page showing what a dedup run decided",
        "sample": "Draw a stratified sample of candidate pairs and write a labelling sheet",
        "serve": "Serve an index over HTTP",
        "sweep": "Try every Hamming k (SimHash) or Jaccard threshold (MinHash) against "
        "hand-labelled truth",
        "tune": "The LSH bands b and rows r that `neardup dedup` uses",
        "warm": "Compile every kernel once (a first run's compiling, done ahead), then exit",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.COMMANDS:
            return None
        module, attribute = self.COMMANDS[name].split(":")
        # What the module's imports make lives until the end: the collector need not go over
        # it while it is made, nor after (neardup.startup).
        with startup.collector_paused():
            return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, self.SUMMARIES[name] + ".") for name in sorted(self.COMMANDS)]
            )


@click.group(cls=_CommandGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """neardup: find near-duplicate documents, give each group one duplicate ID and name its
    original (the earliest document).

    \b
    Start with:
      neardup dedup docs.jsonl -o groups.tsv        # groups of near-duplicates
      neardup fingerprint docs.jsonl -o sigs.tsv    # id, MinHash signature, scheme, timestamp
      neardup compare a.txt b.txt                   # every similarity measure for two texts
      neardup tune --threshold 0.8 --num-perm 128   # LSH bands and rows for a threshold
    """
    # A command (not --help or --version, which end before this) may compile kernels on its
    # first run: say so, rather than sit at 0 % for a minute.
    from neardup.cli import compiling

    if compiling.listen() is not None:
        click.get_current_context().call_on_close(compiling.stop_listening)
