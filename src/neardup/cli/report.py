"""``neardup report``: the HTML report of a finished run, from its GROUPS and PAIRS files."""

from __future__ import annotations

import click

from neardup import report as html_report
from neardup.cli.options import (
    CONTEXT,
    RenamedOption,
    Reporter,
    handle_errors,
    html_path,
    input_options,
)
from neardup.io import InputError, check_outputs, read_documents
from neardup.io.atomic import atomic_write
from neardup.quality import read_table
from neardup.settings import DEFAULT_HAMMING_K, DEFAULT_THRESHOLD


def texts_by_position(
    inputs, positions: list[int], ids, *, reporter: Reporter | None = None, **reading
) -> dict[int, str]:
    """The texts at ``positions`` of the documents read from ``inputs`` (``reading``: the
    keywords of :func:`neardup.io.read_documents`), checked against the run's IDs (``ids`` in
    input order): a report of other inputs than the run's is an error. Streams the inputs once;
    keeps only the wanted texts. O(input size).

    Example: ``texts_by_position(["docs.jsonl"], [0, 5], ids, id_field="id")`` gives
    ``{0: "first text", 5: "sixth text"}``."""
    wanted = set(positions)
    found: dict[int, str] = {}
    reader = read_documents(list(inputs), **reading)
    for batch in reader:
        if reporter is not None:
            reporter.batch(batch)
        for position, ident, text in zip(batch.positions.tolist(), batch.ids, batch.texts):
            if position >= len(ids) or ids[position] != ident:
                expected = ids[position] if position < len(ids) else "nothing (GROUPS is shorter)"
                raise ValueError(
                    f"the inputs do not match GROUPS: document {position + 1} is {ident!r} in "
                    f"the inputs and {expected!r} in GROUPS; give the run's inputs and options"
                )
            if position in wanted:
                found[position] = text
    return found


def write_report(
    path: str, run: html_report.RunData, texts: dict[int, str], title: str, **limits
) -> int:
    """Render the page of ``run`` with ``texts`` (position -> text) and write it to ``path``
    (UTF-8, atomically); returns its size in bytes. ``limits``: ``max_groups``, ``max_pairs``
    of :func:`neardup.report.render`. O(page size).

    Example: ``write_report("report.html", run, texts, "neardup report")`` gives 48213."""
    page = html_report.render(run, texts, title, **limits).encode("utf-8")
    with atomic_write(path) as fh:
        fh.write(page)
    return len(page)


def _pairs(path: str | None):
    if path is None:
        return ((), ()), (), "similarity"
    frame = read_table(path)
    name = next((c for c in ("similarity", "distance") if c in frame.columns), None)
    missing = [c for c in ("id_a", "id_b") if c not in frame.columns]
    if name is None or missing:
        raise InputError(
            path,
            None,
            None,
            "not a PAIRS file",
            "expected columns id_a, id_b and similarity or distance",
        )
    return (
        (frame["id_a"].tolist(), frame["id_b"].tolist()),
        frame[name].astype(float).tolist(),
        name,
    )


@click.command("report", context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option("--groups", "groups_path", required=True, help="The run's GROUPS file.")
@click.option(
    "--pairs-in",
    "pairs_path",
    default=None,
    cls=RenamedOption,
    old="--pairs",
    help="The run's PAIRS file (--pairs-out).",
)
@click.option(
    "-o", "--output", required=True, callback=html_path, help="The HTML file to write (.html)."
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="The run's Jaccard threshold (similarities) or Hamming k (distances), marked "
    f"on the chart. Default: dedup's, {DEFAULT_THRESHOLD} or {DEFAULT_HAMMING_K}.",
)
@click.option(
    "--title", default="neardup report", show_default=True, help="The page's title and heading."
)
@click.option(
    "--max-groups",
    type=click.IntRange(0),
    default=html_report.MAX_GROUPS,
    show_default=True,
    help="Largest groups shown.",
)
@click.option(
    "--max-pairs",
    type=click.IntRange(0),
    default=html_report.MAX_PAIRS,
    show_default=True,
    help="Borderline pairs shown.",
)
@input_options
@handle_errors
def report(
    inputs,
    groups_path,
    pairs_path,
    output,
    threshold,
    title,
    max_groups,
    max_pairs,
    reading,
    workers,
    quiet,
):
    """Write a self-contained HTML page showing what a dedup run decided.

    INPUTS are the run's documents (read again for the texts that the page shows), with the
    run's input options. The page: summary, charts of group sizes and pair values, the largest
    groups and the borderline pairs with word diffs against the original, and a document
    finder. `neardup dedup ... --report report.html` writes the same page with the run's
    settings and seconds per stage, which GROUPS and PAIRS files do not record; here give the
    run's Jaccard threshold or Hamming k with --threshold when it was not the default.

    \b
    Example:
      neardup dedup docs.jsonl -o groups.tsv --pairs-out pairs.tsv
      neardup report docs.jsonl --groups groups.tsv --pairs-in pairs.tsv -o report.html
    """
    check_outputs([output], [*inputs, groups_path, *([pairs_path] if pairs_path else [])])
    groups = read_table(groups_path)
    missing = [c for c in ("id", "original_id") if c not in groups.columns]
    if missing:
        raise InputError(
            groups_path, None, None, "not a GROUPS file", f"missing column(s) {', '.join(missing)}"
        )
    pair_ids, values, name = _pairs(pairs_path)
    if threshold is None:
        threshold = DEFAULT_THRESHOLD if name == "similarity" else DEFAULT_HAMMING_K
    ids = groups["id"].tolist()
    run = html_report.RunData.from_columns(
        ids, groups["original_id"].tolist(), pair_ids, values, name, threshold
    )
    chosen = html_report.select(run, max_groups=max_groups, max_pairs=max_pairs)
    with Reporter(quiet) as reporter:
        texts = texts_by_position(inputs, chosen.positions(), ids, reporter=reporter, **reading)
        size = write_report(output, run, texts, title, max_groups=max_groups, max_pairs=max_pairs)
    if not quiet:
        click.echo(f"report written to {output} ({size / 1e6:.2f} MB)", err=True)
