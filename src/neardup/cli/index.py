"""``neardup index ...`` (a persistent near-duplicate index on disk) and ``neardup serve`` (its
HTTP service). See :mod:`neardup.index.store` for the grouping rules and durability."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from neardup import signals
from neardup.cli.index_options import (
    create_keywords,
    directory_option,
    index_fields,
    match_value,
    measure_column,
    method_option,
    probe_options,
    result_columns,
    settings_options,
    source_batches,
    source_options,
    synchronous_option,
)
from neardup.cli.options import (
    CONTEXT,
    Reporter,
    handle_errors,
    input_options,
    spill_options,
    summary_option,
)
from neardup.index import (
    NearDupIndex,
    describe_settings,
    index_settings,
)
from neardup.index.build import build_from_files, build_index
from neardup.io import (
    check_outputs,
    output_set,
    parse_fingerprint,
    read_fingerprints,
    write_table,
)
from neardup.io.files import read_text


@click.group("index", context_settings=CONTEXT)
def index() -> None:
    """A persistent near-duplicate index for crawlers: add pages and learn at once whether a
    near-duplicate is already stored.

    The index keeps the groups of `neardup dedup --method M --grouping components` with the
    same settings over the documents it holds (duplicate ID = the ID of the group's earliest
    document): --method simhash (fingerprints within -k bits; Manku tables in memory) or
    --method minhash (`dedup`'s default: LSH band candidates verified on the texts, which the
    index keeps compressed; band tables in memory). Records are in SQLite (a crash never loses
    an acknowledged add).

    \b
    Start with:
      neardup index build docs.jsonl -d crawl.idx --time-field ts
      neardup index build docs.jsonl -d crawl-mh.idx --time-field ts --method minhash
      neardup index add new.jsonl -d crawl.idx -o decisions.tsv
      neardup index query -d crawl.idx "text of a page"
      neardup serve -d crawl.idx --port 8000
    """


@index.command(context_settings=CONTEXT)
@directory_option
@settings_options
@handle_errors
def create(directory, **options):
    """Create an empty index (settings fixed from now on).

    \b
    Examples:
      neardup index create -d crawl.idx -k 3 --shingle word:3
      neardup index create -d crawl.idx --method minhash
    """
    idx = NearDupIndex.create(directory, **create_keywords(**options))
    idx.close()
    click.echo(f"created {directory} ({describe_settings(idx.settings)})", err=True)


@index.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@directory_option
@source_options
@settings_options
@click.option("--force", is_flag=True, help="Replace an existing index at DIR.")
@spill_options
@input_options
@summary_option
@handle_errors
def build(
    inputs,
    directory,
    from_fingerprints,
    fingerprint_format,
    method,
    hamming_k,
    shingle,
    hash_name,
    weights,
    num_perm,
    seed,
    scheme,
    threshold,
    bands,
    rows,
    verify,
    force,
    memory_limit,
    tmp_dir,
    reading,
    workers,
    quiet,
    summary_out,
):
    """Build an index from a corpus in one pass (the groups of `neardup dedup` with the same
    --method and settings).

    INPUTS are documents (JSONL, CSV, TSV, Parquet, a directory of .txt files) or, with
    --from-fingerprints, fingerprint rows (SimHash only: a MinHash index keeps the texts to verify
    candidates). The index is written beside DIR and renamed into place when complete.
    Documents are streamed as `neardup dedup` streams them: memory stays within --memory-limit
    plus the index's tables, and what exceeds it spills to --tmp-dir.

    \b
    Examples:
      neardup index build docs.jsonl -d crawl.idx --time-field ts -k 3
      neardup index build docs.jsonl -d crawl.idx --time-field ts --method minhash
      neardup index build fps.tsv --from-fingerprints -d crawl.idx
    """
    keywords = create_keywords(
        method,
        hamming_k,
        shingle,
        hash_name,
        weights,
        num_perm,
        seed,
        scheme,
        threshold,
        bands,
        rows,
        verify,
    )
    if from_fingerprints and method is None:
        keywords["method"] = "simhash"  # fingerprint rows are SimHash's
    settings = index_settings(**keywords)
    method = keywords["method"] = settings.method
    if from_fingerprints and method == "minhash":
        raise ValueError(
            "--from-fingerprints builds a SimHash index: a MinHash index is built from "
            "documents (it keeps their texts to verify candidates)"
        )
    check_outputs([summary_out], inputs)
    with Reporter(quiet, summary_out) as reporter:
        if from_fingerprints:
            table = read_fingerprints(
                list(inputs), on_error=reading["on_error"], fingerprint_format=fingerprint_format
            )
            skipped = table.stats.skipped
            reporter.stage("building")
            build_index(
                Path(directory),
                settings,
                table.ids.to_pylist(),
                fingerprints=table.fingerprints,
                timestamps_us=table.timestamps,
                overwrite=force,
            )
        else:
            from neardup.engines.base import Corpus
            from neardup.engines.local import LocalEngine

            engine = LocalEngine(workers, memory_limit=memory_limit, tmp_dir=tmp_dir)
            read = build_from_files(
                Path(directory),
                settings,
                Corpus(tuple(inputs), reading),
                engine,
                overwrite=force,
                progress=reporter,
            )
            skipped = read.skipped
        # The index is in place: a signal now lets its counts be read and the index closed as
        # a clean build leaves it, then stops the command.
        with signals.deferred(), NearDupIndex(directory) as idx:
            stats = idx.stats()
    elapsed = time.perf_counter() - reporter.started
    reporter.summary(
        [
            ("documents", stats["documents"]),
            ("skipped rows", skipped),
            ("groups", stats["groups"]),
            ("duplicates", stats["duplicates"]),
            ("largest group", stats["largest_group"]),
            *(
                [("bands", stats["bands"]), ("rows per band", stats["rows"])]
                if method == "minhash"
                else [("tables", stats["tables"]), ("prefix bits", stats["prefix_bits"])]
            ),
            ("memory bytes / document", stats["bytes_per_document"] or 0.0),
            ("seconds", elapsed),
        ],
        settings=index_fields(settings),
    )


@index.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@directory_option
@source_options
@click.option(
    "-o",
    "--output",
    default=None,
    help="Also write one row per document: id, status, duplicate_id, original_id, "
    "match_count, nearest_id, distance (SimHash) or similarity (MinHash).",
)
@click.option(
    "--if-exists",
    type=click.Choice(["error", "skip"]),
    default="error",
    show_default=True,
    help="An ID already in the index: stop with an error, or skip it.",
)
@synchronous_option(
    "normal: an add survives a crash of the process; full: also power loss (fsync)."
)
@method_option
@input_options
@summary_option
@handle_errors
def add(
    inputs,
    directory,
    from_fingerprints,
    fingerprint_format,
    output,
    if_exists,
    synchronous,
    method,
    reading,
    workers,
    quiet,
    summary_out,
):
    """Add documents to an index, incrementally (no rebuild); each one is new or a duplicate.

    Documents are added in input order, each batch of up to 10,000 in one transaction; a
    document older than its group's original becomes the new original (the group's
    duplicate ID changes with it).

    \b
    Examples:
      neardup index add today.jsonl -d crawl.idx --time-field fetched -o decisions.tsv
      neardup index add more-fps.tsv --from-fingerprints -d crawl.idx --if-exists skip
    """
    check_outputs([summary_out], inputs, tables=[output])  # before any document is added
    results = []
    counts = {"new": 0, "duplicate": 0, "exists": 0}
    read_counts = {"skipped rows": 0}
    # The adds are committed batch by batch: any error, to the tables cached when the index
    # closes, says how many documents the index received before it.
    try:
        with (
            Reporter(quiet, summary_out) as reporter,
            NearDupIndex(directory, synchronous=synchronous) as idx,
        ):
            idx.check_method(method)
            for ids, probe, stamps in source_batches(
                idx,
                inputs,
                from_fingerprints,
                fingerprint_format,
                reading,
                workers,
                reporter,
                read_counts,
            ):
                batch_results = idx.add_arrays(
                    ids, timestamps_us=stamps, if_exists=if_exists, limit=1, **probe
                )
                for r in batch_results:
                    counts[r.status] += 1
                if output:
                    results.extend(batch_results)
            reporter.stage("writing")
            if output:
                write_table(output, result_columns(results, idx.method))
            total = len(idx)
            used = index_fields(idx.settings)
    except (ValueError, OSError) as error:
        done = counts["new"] + counts["duplicate"]
        note = f"{error} ({done:,} documents were added before it)"
        # Re-raised as the base class the CLI reports: the error's own class may take other
        # constructor arguments (InputError does), which turned every bad row into a
        # TypeError traceback.
        raise (OSError(note) if isinstance(error, OSError) else ValueError(note)) from None
    elapsed = time.perf_counter() - reporter.started
    added = counts["new"] + counts["duplicate"]
    reporter.summary(
        [
            ("added", added),
            ("  new", counts["new"]),
            ("  duplicates", counts["duplicate"]),
            ("skipped (already stored)", counts["exists"]),
            ("skipped rows", read_counts["skipped rows"]),
            ("documents in index", total),
            ("seconds", elapsed),
            ("documents / s", added / elapsed if elapsed > 0 else 0.0),
        ],
        settings=used,
    )


def _print_query(result, method: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    count = f"{result.match_count}{'' if result.match_count_exact else '+'}"  # + : at least
    # A MinHash index has no fingerprint to show: its probe is a signature of 128 values.
    probe = f"  fingerprint {result.fingerprint:016x}" if method == "simhash" else ""
    head = f"{result.status}{probe}  matches {count}"
    if result.duplicate_id is not None:
        head += f"  duplicate_id {result.duplicate_id}  original_id {result.original_id}"
    click.echo(head)
    if result.matches:
        click.echo(f"{measure_column(method)}\tid\tduplicate_id\toriginal_id")
        for m in result.matches:
            value = m.distance if m.similarity is None else f"{m.similarity:.4f}"
            click.echo(f"{value}\t{m.id}\t{m.duplicate_id}\t{m.original_id}")


@index.command(context_settings=CONTEXT)
@click.argument("text", required=False)
@directory_option
@click.option(
    "--fingerprint", default=None, help="Query a fingerprint (16 hex digits, 0x-hex or decimal)."
)
@click.option(
    "--file",
    "text_file",
    default=None,
    help="Query the text of a file (UTF-8).",
)
@probe_options("Matches to list.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def query(text, directory, fingerprint, text_file, method, hamming_k, limit, count_all, as_json):
    """Stored near-duplicates of one text (TEXT, --file, or - for stdin) or fingerprint
    (SimHash index).

    Matches are ordered by distance (SimHash) or descending similarity (MinHash), then ID,
    each with its group's duplicate ID and original. Opens the index read-only, so it works
    while a writer (e.g. `neardup serve`) has it open.

    \b
    Examples:
      neardup index query -d crawl.idx "the text of a fetched page"
      neardup index query -d crawl.idx --fingerprint 3fa2c0d19b7e4410 -k 2 --json
      curl -s https://example.org | neardup index query -d crawl.idx -
    """
    given = [x is not None for x in (text, fingerprint, text_file)]
    if sum(given) != 1:
        raise ValueError("give exactly one of TEXT, --fingerprint and --file")
    if text == "-" or text_file is not None:
        text = read_text(text_file or "-")
    if fingerprint is not None:
        try:
            fingerprint = parse_fingerprint(fingerprint)
        except ValueError as error:
            raise ValueError(f"--fingerprint: {error}") from None
    with NearDupIndex(directory, readonly=True) as idx:
        idx.check_method(method)
        result = idx.query(
            text, fingerprint=fingerprint, hamming_k=hamming_k, limit=limit, count_all=count_all
        )
    _print_query(result, idx.method, as_json)


@index.command("query-batch", context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@directory_option
@click.option(
    "-o",
    "--output",
    required=True,
    help="One row per probe: id, status, duplicate_id, original_id, match_count, nearest_id, "
    "distance (SimHash) or similarity and match_count_exact (MinHash).",
)
@click.option(
    "--matches-out",
    default=None,
    help="Also write one row per listed match: id, match_id, distance (or similarity), "
    "duplicate_id, original_id.",
)
@source_options
@probe_options("Matches listed per probe (for --matches-out).")
@input_options
@summary_option
@handle_errors
def query_batch(
    inputs,
    directory,
    output,
    matches_out,
    from_fingerprints,
    fingerprint_format,
    method,
    hamming_k,
    limit,
    count_all,
    reading,
    workers,
    quiet,
    summary_out,
):
    """Check many documents (or fingerprints) against the index at once; nothing is stored.

    \b
    Examples:
      neardup index query-batch fetched.jsonl -d crawl.idx -o decisions.tsv
      neardup index query-batch fps.tsv --from-fingerprints -d crawl.idx -o out.tsv --matches-out m.tsv
    """
    check_outputs([summary_out], inputs, tables=[output, matches_out])
    results = []
    read_counts = {"skipped rows": 0}
    with Reporter(quiet, summary_out) as reporter, NearDupIndex(directory, readonly=True) as idx:
        idx.check_method(method)
        used = index_fields(idx.settings)
        if idx.method == "simhash":
            used["hamming_k"] = idx.settings.hamming_k if hamming_k is None else hamming_k
        for ids, probe, _ in source_batches(
            idx,
            inputs,
            from_fingerprints,
            fingerprint_format,
            reading,
            workers,
            reporter,
            read_counts,
        ):
            results.extend(
                idx.query_many(
                    ids=ids, hamming_k=hamming_k, limit=limit, count_all=count_all, **probe
                )
            )
        reporter.stage("writing")
        with output_set():
            write_table(output, result_columns(results, idx.method))
            if matches_out:
                rows = [(r.id, m) for r in results for m in r.matches]
                write_table(
                    matches_out,
                    {
                        "id": [q for q, _ in rows],
                        "match_id": [m.id for _, m in rows],
                        measure_column(idx.method): [match_value(m) for _, m in rows],
                        "duplicate_id": [m.duplicate_id for _, m in rows],
                        "original_id": [m.original_id for _, m in rows],
                    },
                )
    elapsed = time.perf_counter() - reporter.started
    dups = sum(r.status == "duplicate" for r in results)
    reporter.summary(
        [
            ("probes", len(results)),
            ("with a near-duplicate", dups),
            ("new", len(results) - dups),
            ("skipped rows", read_counts["skipped rows"]),
            ("seconds", elapsed),
        ],
        settings=used,
    )


@index.command(context_settings=CONTEXT)
@click.argument("ids", nargs=-1)
@directory_option
@click.option(
    "--ids-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Also remove the IDs listed in this file, one per line.",
)
@handle_errors
def remove(ids, directory, ids_file):
    """Remove documents by ID (one transaction). Groups are re-checked: a new original where
    the original left, a split where the removed document was the only link.

    \b
    Examples:
      neardup index remove -d crawl.idx page-17 page-42
      neardup index remove -d crawl.idx --ids-file gone.txt
    """
    wanted = list(ids)
    if ids_file:
        with open(ids_file, encoding="utf-8") as fh:
            wanted += [line.rstrip("\r\n") for line in fh if line.strip()]
    if not wanted:
        raise ValueError("give the IDs to remove (arguments or --ids-file)")
    with NearDupIndex(directory) as idx:
        removed = idx.remove_many(wanted)
    click.echo(f"removed {removed} of {len(wanted)} documents", err=True)


@index.command(context_settings=CONTEXT)
@directory_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def stats(directory, as_json):
    """Documents, groups, settings, table plan, memory and open time of an index.

    \b
    Example:
      neardup index stats -d crawl.idx --json
    """
    with NearDupIndex(directory, readonly=True) as idx:
        data = idx.stats()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    # Timings of checks this open did not run are null in JSON; in text they are left out.
    data = {k: v for k, v in data.items() if v is not None}
    width = max(len(k) for k in data)
    for key, value in data.items():
        click.echo(
            f"{key:<{width}}  {value:,}"
            if isinstance(value, int) and not isinstance(value, bool)
            else f"{key:<{width}}  {value}"
        )


@index.command(context_settings=CONTEXT)
@directory_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@handle_errors
def check(directory, as_json):
    """Check an index fully: SQLite's integrity check, the records' own consistency, and the
    tables against the records. Exit status 1 when a problem is found.

    
    Example:
      neardup index check -d crawl.idx
    """
    from neardup.index.integrity import check_index

    report = check_index(directory)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for problem in report["problems"]:
            click.echo(f"problem: {problem}")
        if report["documents"] is None:
            click.echo(f"damaged: the records could not be read ({report['seconds']:.2f} s)")
        else:
            click.echo(
                f"{'ok' if report['ok'] else 'damaged'}: {report['documents']} documents, "
                f"{report['groups']} groups, tables {report['tables']}, "
                f"{report['seconds']:.2f} s"
            )
    if not report["ok"]:
        sys.exit(1)


@index.command(context_settings=CONTEXT)
@directory_option
@click.option("--to", "target", required=True, help="Directory of the new, recovered index.")
@handle_errors
def recover(directory, target):
    """Build a new index from every record SQLite can still read in a damaged one (which is
    only read). Groups and originals are recomputed; unreadable rows are counted as lost.

    
    Example:
      neardup index recover -d crawl.idx --to crawl-recovered.idx
    """
    from neardup.index.integrity import recover_index

    result = recover_index(directory, target)
    expected = result["expected"]
    of = "" if expected is None else f" of {expected:,}"
    missing = "" if expected is None else f"{result['missing']:,} missing, "
    click.echo(
        f"recovered {result['recovered']:,}{of} documents into {result['target']}; "
        f"{missing}{result['lost_positions']:,} unreadable, {result['dropped_rows']:,} dropped "
        f"({result['garbled_rows']:,} garbled)",
        err=True,
    )
    if result["unchecked_indexes"]:
        click.echo(
            f"not compared with their copies (unreadable indexes): "
            f"{', '.join(result['unchecked_indexes'])}",
            err=True,
        )
