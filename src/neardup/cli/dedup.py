"""``neardup fingerprint``, ``neardup dedup`` and ``neardup pairs``: signatures of a corpus, its
groups of near-duplicates, and the pairs of fingerprints within Hamming distance k."""

from __future__ import annotations

import time
from pathlib import Path

import click
import numpy as np
import pyarrow as pa

from neardup._version import __version__
from neardup.cli.options import (
    CONTEXT,
    Reporter,
    fail,
    handle_errors,
    input_options,
    settings_fields,
    signature_options,
    signature_options_for,
    summary_option,
)
from neardup.cli.report import texts_by_position, write_report
from neardup.io import (
    check_outputs,
    format_fingerprints,
    output_set,
    read_documents,
    read_fingerprints,
    write_records,
    write_table,
)
from neardup.pipeline import (
    DEFAULT_METHOD,
    DEFAULT_SHINGLES,
    DEFAULT_THRESHOLD,
    GROUPINGS,
    PAIR_MODES,
    Settings,
    Signatures,
    check_method_options,
    find_groups,
)


def idf_options(command):
    """--idf-in / --idf-out, for the commands that take --weights idf (``fingerprint``,
    ``dedup``), which hand them to :func:`_idf_table`.

    Example: ``@idf_options`` above a command function gives it ``idf_in`` and ``idf_out``."""
    options = [
        click.option("--idf-in", default=None,
                     help="With --weights idf: the IDF table to use (saved by an earlier run), "
                     "instead of computing it from INPUTS."),
        click.option("--idf-out", default=None,
                     help="With --weights idf: where to save the IDF table computed from INPUTS "
                     "[default: OUTPUT.idf.parquet]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs, reading,
               reporter):
    """The IDF table of ``--weights idf``: loaded from ``--idf-in``, or computed from the inputs
    in a first pass and saved (``--idf-out``, else next to the output) with the run."""
    from neardup.idf import IdfTable
    from neardup.text import hash_features

    if weights != "idf":
        if idf_in or idf_out:
            raise ValueError("--idf-in and --idf-out go with --weights idf")
        return None
    if idf_in:
        table = IdfTable.load(idf_in)
        table.check(shingle, hash_name)
        return table
    if "-" in inputs:
        raise ValueError("--weights idf reads the inputs twice (the IDF table first), which "
                         "standard input cannot do: give files, or a table with --idf-in")
    reader = read_documents(list(inputs), **reading)
    reporter.reading(reader, "IDF table (first pass)")

    def features():
        for batch in reader:
            yield hash_features(batch.texts, shingle, hash_name)
            reporter.batch(batch)

    table = IdfTable.from_features(features(), shingle, hash_name)
    path = _idf_path(weights, idf_in, idf_out, output)
    if path:
        table.save(path)
    return table


def _idf_path(weights, idf_in, idf_out, output) -> str | None:
    """Where a run saves the IDF table it computes (None: it computes none, or stdout)."""
    if weights != "idf" or idf_in:
        return None
    return idf_out or (None if output == "-" else f"{output}.idf.parquet")


def _check_method_options(method: str, verify: str = "auto") -> None:
    """Refuse the options the user gave on the command line that ``method`` does not use."""
    ctx = click.get_current_context()
    names = {"idf_in": "idf"}
    given = [names.get(p.name, p.name) for p in ctx.command.params
             if ctx.get_parameter_source(p.name) in (click.core.ParameterSource.COMMANDLINE,
                                                     click.core.ParameterSource.ENVIRONMENT)]
    flags = {"idf": "--idf-in"}
    check_method_options(method, given, verify,
                         lambda name: flags.get(name, "--" + name.replace("_", "-")))


def _raw_timestamp_column(raw: list) -> list[str]:
    return ["" if value is None else str(value) for value in raw]


def _signature_column(signature: np.ndarray) -> list[str]:
    if signature.ndim == 1:
        return format_fingerprints(signature)
    # A MinHash signature as one string: num_perm × 8 hex digits, values big-endian.
    return [row.tobytes().hex() for row in signature.astype(">u4")]


def _read_summary(reporter: Reporter, stats, elapsed: float, empty: int) -> list[tuple[str, object]]:
    mb = stats.bytes / 1e6
    rows = [
        ("documents", stats.documents),
        ("bytes", stats.bytes),
        ("empty documents", empty),
        ("skipped rows", stats.skipped),
    ]
    for reason, count in sorted(stats.skipped_reasons.items()):
        rows.append((f"  skipped: {reason}", count))
    rows += [("seconds", elapsed), ("MB/s", mb / elapsed if elapsed > 0 else 0.0)]
    return rows



@click.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="Output file (.tsv .csv .jsonl .parquet, - = stdout).")
@signature_options
@idf_options
@input_options
@summary_option
@handle_errors
def fingerprint(inputs, output, method, shingle, hash_name, weights, num_perm, seed, idf_in,
                idf_out, reading, workers, quiet, summary_out):
    """Fingerprint every document: one row per document, in input order.

    For SimHash a .tsv output has exactly the rows of the batch job's input,
    `document ID <TAB> fingerprint (16 hex digits) <TAB> timestamp`, without a header.
    MinHash signatures are written as num_perm × 8 hex digits.

    \b
    Examples:
      neardup fingerprint docs.jsonl -o fps.tsv --time-field ts
      neardup fingerprint corpus/ -o fps.parquet --shingle char:5
      neardup fingerprint docs.jsonl.gz -o - --method minhash --num-perm 64
      neardup fingerprint docs.jsonl -o fps.tsv --shingle word:1 --weights idf
    """
    from neardup.engines.local import LocalEngine

    _check_method_options(method)
    shingle = shingle or DEFAULT_SHINGLES[method]
    check_outputs([output, idf_out, summary_out], inputs)
    reader = read_documents(list(inputs), **reading)
    with Reporter(quiet, summary_out) as reporter:
        idf = _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs,
                         reading, reporter)
        settings = Settings(method=method, shingle=shingle, hash_name=hash_name, weights=weights,
                            num_perm=num_perm, seed=seed, verify=None, idf=idf)
        reporter.reading(reader)
        collection = LocalEngine(workers).collect(reader, settings, on_batch=reporter.batch)
        reporter.stage("writing")
        columns = {
            "id": collection.ids,
            "fingerprint" if method == "simhash" else "signature": _signature_column(
                collection.signatures.signature
            ),
            "timestamp": _raw_timestamp_column(collection.raw_timestamps),
        }
        is_seed_tsv = output != "-" and Path(output).suffix == ".tsv" or output == "-"
        write_table(output, columns, header=not is_seed_tsv)
    elapsed = time.perf_counter() - reporter.started
    reporter.summary(_read_summary(reporter, reader.stats, elapsed, int(collection.signatures.empty.sum())),
                     settings=settings_fields(settings, ("method", "shingle", "hash", "weights",
                                                         "num_perm", "seed")),
                     outputs={"idf_out": _idf_path(weights, idf_in, idf_out, output)})


def _id_column(ids) -> pa.ChunkedArray:
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        return ids if isinstance(ids, pa.ChunkedArray) else pa.chunked_array([ids])
    return pa.chunked_array([pa.array(ids, type=pa.string())], type=pa.string())


def _groups_columns(ids, groups) -> dict:
    """GROUPS' columns; ``ids`` a list or an Arrow string column (taken by Arrow, not Python)."""
    ids = _id_column(ids)
    original_ids = ids.take(pa.array(groups.original))
    return {
        "id": ids,
        "duplicate_id": original_ids,
        "original_id": original_ids,
        "is_original": groups.is_original,
        "group_size": groups.group_size,
    }


def _pairs_columns(ids, groups, method: str) -> dict:
    """PAIRS' columns: id_a, id_b, distance|similarity (rounded to 6 digits) and ``passed``,
    whether the pair itself meets the run's rule (decided on the unrounded value)."""
    ids = _id_column(ids)
    name = "distance" if method == "simhash" else "similarity"
    values = groups.pair_value
    if method != "simhash":
        values = np.round(values.astype(np.float64), 6)
    return {"id_a": ids.take(pa.array(groups.pair_a)), "id_b": ids.take(pa.array(groups.pair_b)),
            name: values, "passed": np.asarray(groups.pair_passed, dtype=bool)}


def _groups_summary(groups) -> list[tuple[str, object]]:
    stats = groups.stats
    rows = [
        ("exact duplicates", stats["exact_duplicates"]),
        ("candidate pairs", stats["candidates"]),
        ("rejected by verification", stats["rejected"]),
        ("pairs written", stats["pairs"]),
        ("groups", stats["groups"]),
        ("largest group", stats["largest_group"]),
        ("documents removed", stats["duplicates_removed"]),
    ]
    rows += [(f"seconds: {stage}", seconds) for stage, seconds in stats["seconds"].items()]
    return rows


@click.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="GROUPS file: one row per input document.")
@signature_options_for(DEFAULT_METHOD)
@click.option("-k", "--hamming-k", type=int, default=3, show_default=True,
              help="SimHash: near-duplicates differ in at most this many of 64 bits.")
@click.option("--threshold", type=float, default=DEFAULT_THRESHOLD, show_default=True,
              help="MinHash: the near-duplicate threshold: of the LCS resemblance with --verify auto or "
              "lcs, of the Jaccard with --verify jaccard or none; picks the LSH bands (see `neardup tune`).")
@click.option("--bands", type=int, default=None, help="MinHash: force the number of LSH bands (with --rows).")
@click.option("--rows", type=int, default=None, help="MinHash: force the rows per band (with --bands).")
@click.option("--verify", default="auto", show_default=True,
              help="Check candidates exactly: lcs[:T] (the share of the longer text's words kept in "
              "order, Korean/Chinese/Japanese by characters: the definition's rule), jaccard[:T] (of "
              "the shingle sets) or none. auto = lcs:THRESHOLD for MinHash, none for SimHash.")
@click.option("--grouping", type=click.Choice(GROUPINGS), default="components", show_default=True,
              help="components: transitive groups; center: each member is a near-duplicate of its original.")
@click.option("--pairs", "pairs_mode", type=click.Choice(PAIR_MODES), default="original", show_default=True,
              help="Pairs to write: an edge from each original to its members, or every near-duplicate pair.")
@click.option("--pairs-out", default=None,
              help="Also write PAIRS: id_a, id_b, distance|similarity, passed (whether the pair "
              "itself meets the threshold: with --grouping components a member can reach its "
              "original only through other members).")
@click.option("--keep", default=None, help="Also write the originals (the deduplicated corpus) with all their fields.")
@click.option("--report", "report_out", default=None,
              help="Also write a self-contained HTML report of the run (see `neardup report`).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: the cores of this machine; spark: Apache Spark (pip install 'neardup[spark]'), "
              "same output. With spark, inputs may be directories or globs on any file system Spark "
              "reads, and an output that is not a .tsv/.csv/.jsonl/.parquet file is a Parquet directory.")
@click.option("--spark-master", default=None,
              help="Spark master for --engine spark: local[*] (the default), spark://HOST:7077, yarn; "
              "under spark-submit, its --master.")
@click.option("--memory-limit", default=None,
              help="Local engine: memory for the run's data, e.g. 4G, 512M or 40% (of RAM); band "
              "hashes beyond half of it spill to --tmp-dir and shingle sets are built in blocks "
              "that fit. Default: 1/16 of this machine's RAM, at least 256M.")
@click.option("--tmp-dir", type=click.Path(file_okay=False), default=None,
              help="Local engine: folder for spill files (default: the system's temp dir, "
              "$TMPDIR). Removed when the run ends, fails or is interrupted.")
@click.option("--resume", is_flag=True,
              help="Local engine: keep completed stages in --tmp-dir if the run fails or is "
              "interrupted, and continue from them when run again with --resume (refused if the "
              "inputs or options changed).")
@idf_options
@input_options
@summary_option
@handle_errors
def dedup(inputs, output, method, shingle, hash_name, weights, num_perm, seed, hamming_k, threshold,
          bands, rows, verify, grouping, pairs_mode, pairs_out, keep, report_out, engine,
          spark_master, memory_limit, tmp_dir, resume, idf_in, idf_out, reading, workers, quiet,
          summary_out):
    """Find every group of near-duplicates; give each a duplicate ID and name its original.

    GROUPS has one row per input document, in input order:
    id, duplicate_id, original_id, is_original, group_size (duplicate_id = original_id, the ID of
    the group's earliest document).

    \b
    Examples:
      neardup dedup docs.jsonl -o groups.tsv --time-field ts
      neardup dedup docs.jsonl -o groups.tsv -k 4 --pairs-out pairs.tsv --keep unique.jsonl
      neardup dedup docs.jsonl -o groups.parquet --verify jaccard:0.7 --shingle char:5
      neardup dedup docs.jsonl -o groups.tsv --report report.html
      neardup dedup 'corpus/*.jsonl' -o groups.tsv --engine spark --spark-master 'local[*]'
    """

    _check_method_options(method, verify)
    shingle = shingle or DEFAULT_SHINGLES[method]
    if engine == "spark" and weights == "idf" and not idf_in:
        raise ValueError("with --engine spark, --weights idf takes a saved table (--idf-in); "
                         "make one with `neardup fingerprint ... --weights idf --idf-out FILE`")
    with Reporter(True) as silent:
        idf = _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs,
                         reading, silent)
    settings = Settings(
        method=method, shingle=shingle, hash_name=hash_name, weights=weights, num_perm=num_perm,
        seed=seed, hamming_k=hamming_k, threshold=threshold, bands=bands, rows=rows,
        verify=verify, grouping=grouping, pairs=pairs_mode, idf=idf,
    )
    if engine == "spark":
        from neardup.engines import spark as spark_engine

        local_only = [flag for flag, value in (("--memory-limit", memory_limit),
                      ("--tmp-dir", tmp_dir), ("--resume", resume)) if value]
        if local_only:
            raise ValueError(f"{', '.join(local_only)} apply to the local engine; Spark manages "
                             "its own memory and spill (spark.executor.memory, spark.local.dir)")
        if not spark_engine.HAVE_PYSPARK:
            fail(spark_engine.INSTALL_HINT)
        if report_out:
            raise ValueError("--report works with the local engine; with --engine spark, run "
                             "`neardup report` on the written GROUPS and PAIRS files")
        check_outputs([summary_out], inputs)  # Spark checks its own outputs (any file system)
        with Reporter(quiet, summary_out) as reporter:
            reporter.stage("running on Spark")
            result, stats = spark_engine.run_dedup(
                spark_engine.spark_session(spark_master), inputs, output, settings,
                pairs_out=pairs_out, keep=keep, **reading)
        elapsed = time.perf_counter() - reporter.started
        reporter.summary(_read_summary(reporter, stats, elapsed, result.stats["empty_documents"])
                         + _groups_summary(result), settings=settings_fields(settings))
        return
    _run_local_dedup(inputs, output, pairs_out, keep, report_out, settings, reading,
                     workers=workers, quiet=quiet, memory_limit=memory_limit, tmp_dir=tmp_dir,
                     resume=resume, summary_out=summary_out,
                     outputs={"idf_out": _idf_path(weights, idf_in, idf_out, output)})


def _run_local_dedup(inputs, output, pairs_out, keep, report_out, settings, reading, *,
                     workers, quiet, memory_limit, tmp_dir, resume, summary_out=None,
                     outputs=None):
    """``neardup dedup`` on the local engine: out of core, under ``memory_limit``."""
    from neardup.engines.outofcore import BATCH_SIZE, OutOfCoreDedup
    from neardup.engines.spill import (
        WorkDir,
        input_identity,
        parse_memory_limit,
        run_key,
    )

    limit = parse_memory_limit(memory_limit)
    check_outputs([output, pairs_out, keep, report_out, summary_out], inputs)
    if resume and "-" in inputs:
        raise ValueError("--resume needs input files: standard input cannot be read again")
    key = run_key(version=__version__, settings=repr(settings), reader=reading,
                  inputs=input_identity(list(inputs)) if resume else list(inputs))
    with WorkDir(tmp_dir, key, output, resume=resume) as work, \
            Reporter(quiet, summary_out) as reporter:

        def reopen(records: bool):
            return read_documents(list(inputs), **reading, keep_records=records,
                                  batch_size=BATCH_SIZE)

        reader = read_documents(list(inputs), **reading, spill_dir=str(work.path),
                                batch_size=BATCH_SIZE)
        job = OutOfCoreDedup(reader, reopen, settings, work, limit, workers, progress=reporter)
        collected = job.collect()
        groups = job.group()
        reporter.stage("writing")
        with output_set():
            write_table(output, _groups_columns(collected.ids, groups))
            if pairs_out:
                write_table(pairs_out, _pairs_columns(collected.ids, groups, settings.method))
            if keep:
                originals = np.flatnonzero(groups.is_original)
                reporter.stage("writing originals", int(originals.shape[0]))
                write_records(keep, _progress_records(
                    job.refetch(originals, records=True), reporter))
        if report_out:
            reporter.stage("report")
            _write_run_report(report_out, collected, groups, settings, collected.seconds,
                              reading=reading, inputs=inputs)
    elapsed = time.perf_counter() - reporter.started
    rows_out = _read_summary(reporter, collected.stats, elapsed, groups.stats["empty_documents"])
    rows_out.insert(-2, ("seconds: read + signatures", collected.seconds))
    rows_out.insert(-2, ("MB/s: read + signatures", collected.stats.bytes / 1e6 / max(collected.seconds, 1e-9)))
    figures = dict(job.figures)
    figures["spilled MB"] = figures.pop("spilled bytes") / 1e6
    reporter.summary(rows_out + _groups_summary(groups) + list(figures.items())
                     + [("memory limit MB", limit / 1e6)],
                     settings={**settings_fields(settings), "memory_limit": limit},
                     outputs=outputs)


def _progress_records(batches, reporter):
    for batch in batches:
        yield from batch.records
        reporter.advance(len(batch.records))


def _write_run_report(path, collection, groups, settings, read_seconds, reading, inputs):
    """``dedup --report``: the page of :mod:`neardup.report` from the run in memory. Texts come
    from the collection when it kept them, else from a second read of the inputs."""
    from neardup import report as html_report

    simhash = settings.method == "simhash"
    stats = {k: v for k, v in groups.stats.items() if not isinstance(v, dict)}
    stats["seconds"] = {"read + signatures": read_seconds, **groups.stats.get("seconds", {})}
    ids = collection.ids
    run = html_report.RunData(
        ids=(ids.to_numpy() if isinstance(ids, pa.ChunkedArray)
             else np.asarray(ids, dtype=object)),
        original=groups.original,
        pair_a=groups.pair_a, pair_b=groups.pair_b,
        pair_value=np.asarray(groups.pair_value, dtype=np.float64),
        value_name="distance" if simhash else "similarity",
        # MinHash pairs are accepted by their verified Jaccard when verification is on.
        threshold=settings.hamming_k if simhash else (settings.verify or settings.threshold),
        settings=html_report.describe_settings(settings), stats=stats,
    )
    positions = html_report.select(run).positions()
    if getattr(collection, "texts", None) is not None:
        texts = {p: collection.texts[p] for p in positions}
    else:
        texts = texts_by_position(inputs, positions, run.ids, **reading)
    write_report(path, run, texts, "neardup report")


@click.command(context_settings=CONTEXT)
@click.argument("fingerprints", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="PAIRS file: id_a, id_b, distance, passed.")
@click.option("-k", "--hamming-k", type=int, default=3, show_default=True, help="Maximum Hamming distance.")
@click.option("--pairs", "pairs_mode", type=click.Choice(PAIR_MODES), default="all", show_default=True,
              help="Every pair within k (default), or an edge from each group's original to its members.")
@click.option("--grouping", type=click.Choice(GROUPINGS), default="components", show_default=True,
              help="Grouping rule for --groups-out.")
@click.option("--groups-out", default=None, help="Also write GROUPS (one row per fingerprint).")
@click.option("--fingerprint-format", type=click.Choice(["auto", "hex", "dec"]), default="auto",
              show_default=True, help="How fingerprints are written in the input.")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True,
              help="On a bad row: stop with an error, or skip and count it.")
@click.option("-q", "--quiet", is_flag=True, help="No summary.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: this machine; spark: Apache Spark (pip install 'neardup[spark]'), same output.")
@click.option("--spark-master", default=None,
              help="Spark master for --engine spark: local[*] (the default), spark://HOST:7077, yarn.")
@summary_option
@handle_errors
def pairs(fingerprints, output, hamming_k, pairs_mode, grouping, groups_out, fingerprint_format,
          on_error, quiet, engine, spark_master, summary_out):
    """All pairs of fingerprints within Hamming distance k (the batch job's map-reduce step).

    Input rows: `document ID <TAB> fingerprint <TAB> timestamp` (fingerprints from any system,
    16 hex digits or decimal; the timestamp column is optional). Identical fingerprints are
    pairs at distance 0.

    \b
    Examples:
      neardup pairs fps.tsv -k 3 -o pairs.tsv
      neardup pairs fps.tsv -k 4 -o pairs.tsv --groups-out groups.tsv
    """
    settings = Settings(method="simhash", hamming_k=hamming_k, verify=None, grouping=grouping,
                        pairs=pairs_mode)
    check_outputs([output, groups_out, summary_out], fingerprints)
    used = {"method": "simhash"}
    if engine == "spark":
        from neardup.engines import spark as spark_engine

        if not spark_engine.HAVE_PYSPARK:
            fail(spark_engine.INSTALL_HINT)
        with Reporter(quiet, summary_out) as reporter:
            result, stats = spark_engine.run_pairs(
                spark_engine.spark_session(spark_master), fingerprints, output, settings,
                groups_out=groups_out, fingerprint_format=fingerprint_format, on_error=on_error)
        elapsed = time.perf_counter() - reporter.started
        reporter.summary([("fingerprints", stats.documents), ("skipped rows", stats.skipped),
                          ("seconds", elapsed)] + _groups_summary(result), settings=used)
        return
    with Reporter(quiet, summary_out) as reporter:
        table = read_fingerprints(list(fingerprints), on_error=on_error,
                                  fingerprint_format=fingerprint_format)
        fps = np.asarray(table.fingerprints, dtype=np.uint64)
        n = fps.shape[0]
        # Without texts, identical fingerprints play the part of identical contents.
        content = np.stack([fps, np.zeros(n, dtype=np.uint64)], axis=1)
        sig = Signatures(content, fps, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))
        groups = find_groups(sig, table.timestamps, settings, on_stage=reporter.stage)
        reporter.stage("writing")
        with output_set():
            write_table(output, _pairs_columns(table.ids, groups, "simhash"))
            if groups_out:
                write_table(groups_out, _groups_columns(table.ids, groups))
    elapsed = time.perf_counter() - reporter.started
    reporter.summary([("fingerprints", n), ("skipped rows", table.stats.skipped), ("seconds", elapsed)]
                     + _groups_summary(groups), settings=used)


