"""``neardup fingerprint``, ``neardup dedup`` and ``neardup pairs``: signatures of a corpus, its
groups of near-duplicates, and the pairs of fingerprints within Hamming distance k."""

from __future__ import annotations

import time

import click
import numpy as np

from neardup.cli.options import (
    CONTEXT,
    Reporter,
    fail,
    fingerprint_spill_options,
    handle_errors,
    html_path,
    input_options,
    pairs_spill_options,
    resolve_method,
    setting_option,
    settings_fields,
    signature_options,
    spill_options,
    summary_option,
)
from neardup.engines import ENGINES, Corpus, Engine, EngineUnavailable, Outputs, engine_named
from neardup.io import (
    FINGERPRINT_FORMATS,
    ON_ERROR,
    TableWriter,
    check_outputs,
    format_fingerprints,
    read_documents,
)
from neardup.io.files import resolve_output
from neardup.settings import Settings


def idf_options(command):
    """--idf-in / --idf-out, for the commands that take --weights idf (``fingerprint``,
    ``dedup``), which hand them to :func:`_idf_table`.

    Example: ``@idf_options`` above a command function gives it ``idf_in`` and ``idf_out``."""
    options = [
        click.option(
            "--idf-in",
            default=None,
            help="With --weights idf: the IDF table to use (saved by an earlier run), "
            "instead of computing it from INPUTS.",
        ),
        click.option(
            "--idf-out",
            default=None,
            help="With --weights idf: where to save the IDF table computed from INPUTS "
            "[default: OUTPUT.idf.parquet].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs, reading, reporter):
    """The IDF table of ``--weights idf``: loaded from ``--idf-in``, or computed from the inputs
    in a first pass and saved (``--idf-out``, else next to the output) with the run."""
    if weights != "idf":
        if idf_in or idf_out:
            raise ValueError("--idf-in and --idf-out go with --weights idf")
        return None
    from neardup.idf import IdfTable  # here: a run without IDF weights does not import Parquet
    from neardup.text import hash_features

    if idf_in:
        table = IdfTable.load(idf_in)
        table.check(shingle, hash_name)
        return table
    if "-" in inputs:
        raise ValueError(
            "--weights idf reads the inputs twice (the IDF table first), which "
            "standard input cannot do: give files, or a table with --idf-in"
        )
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


def _raw_timestamp_column(raw: list) -> list[str]:
    return ["" if value is None else str(value) for value in raw]


def _signature_column(signature: np.ndarray) -> list[str]:
    if signature.ndim == 1:
        return format_fingerprints(signature)
    # A MinHash signature as one string: num_perm × 8 hex digits, values big-endian.
    return [row.tobytes().hex() for row in signature.astype(">u4")]


def _fingerprint_columns(batch, signatures, settings: Settings) -> dict[str, list]:
    """The output columns of one signed batch of `neardup fingerprint`."""
    signature = _signature_column(signatures.signature)
    if settings.method == "simhash":
        columns = {"id": batch.ids, "fingerprint": signature}
    else:
        # Signatures of the two schemes are not comparable: each row says which made it.
        columns = {
            "id": batch.ids,
            "signature": signature,
            "scheme": [settings.scheme] * len(signature),
        }
    columns["timestamp"] = _raw_timestamp_column(batch.raw_timestamps)
    return columns


def _read_summary(
    reporter: Reporter, stats, elapsed: float, empty: int
) -> list[tuple[str, object]]:
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
@click.option(
    "-o", "--output", required=True, help="Output file (.tsv .csv .jsonl .parquet, - = stdout)."
)
@signature_options
@idf_options
@input_options
@summary_option
@fingerprint_spill_options
@handle_errors
def fingerprint(
    inputs,
    output,
    method,
    shingle,
    hash_name,
    weights,
    num_perm,
    seed,
    scheme,
    idf_in,
    idf_out,
    reading,
    workers,
    quiet,
    summary_out,
    memory_limit,
    tmp_dir,
):
    """Fingerprint every document: one row per document, in input order.

    For SimHash a TSV output (.tsv, .tsv.gz, .tsv.zst, -) has exactly the rows of the batch
    job's input, `document ID <TAB> fingerprint (16 hex digits) <TAB> timestamp`, without a
    header.
    MinHash signatures are written as num_perm × 8 hex digits, followed by the scheme that
    made them (oph or classic: signatures of different schemes are not comparable).

    \b
    Examples:
      neardup fingerprint docs.jsonl -o fps.tsv --time-field ts --method simhash   # seed rows
      neardup fingerprint corpus/ -o fps.parquet --shingle char:5
      neardup fingerprint docs.jsonl.gz -o - --num-perm 64
      neardup fingerprint docs.jsonl -o fps.tsv --shingle word:1 --weights idf
    """
    from neardup.engines.local import ID_SHARE, LocalEngine
    from neardup.engines.spill import WorkDir

    method = resolve_method(method)
    check_outputs([output, idf_out, summary_out], inputs)
    # TSV (compressed or not, or standard output) is the seed's rows, without a header; a name
    # with no known extension is refused here, before any work.
    header = resolve_output(output, None)[1] != "tsv"
    engine = LocalEngine(workers, memory_limit=memory_limit, tmp_dir=tmp_dir)
    settings = Settings(
        method=method,
        shingle=shingle,
        hash_name=hash_name,
        num_perm=num_perm,
        seed=seed,
        scheme=scheme,
        verify=None,
    )
    # The IDs past the check's share of the limit wait in a folder of their own (not one that
    # would also take a copy of standard input).
    with (
        WorkDir(tmp_dir, "fingerprint", "-") as work,
        Reporter(quiet, summary_out) as reporter,
    ):
        reader = read_documents(
            list(inputs),
            **reading,
            id_memory=int(engine.memory_limit * ID_SHARE),
            id_spill_dir=str(work.path),
        )
        idf = _idf_table(
            weights, settings.shingle, hash_name, idf_in, idf_out, output, inputs, reading, reporter
        )
        settings = settings.replace(weights=weights, idf=idf)
        reporter.reading(reader)
        empty = 0
        # Each batch is written as soon as it is signed: memory stays that of a few batches
        # whatever the corpus size.
        with TableWriter(output, header=header) as writer:
            batches = engine.signed(reader, settings, on_batch=reporter.batch)
            for batch, signatures in batches:
                writer.write(_fingerprint_columns(batch, signatures, settings))
                empty += int(signatures.empty.sum())
    elapsed = time.perf_counter() - reporter.started
    reporter.summary(
        _read_summary(reporter, reader.stats, elapsed, empty),
        settings=settings_fields(
            settings, ("method", "shingle", "hash_name", "weights", "num_perm", "seed", "scheme")
        ),
        outputs={"idf_out": _idf_path(weights, idf_in, idf_out, output)},
    )


def _groups_summary(run) -> list[tuple[str, object]]:
    stats = run.stats
    rows = [
        ("exact duplicates", stats["exact_duplicates"]),
        ("candidate pairs", stats["candidates"]),
        ("rejected by verification", stats["rejected"]),
        ("linked already, not verified", stats["linked_untested"]),
    ]
    if "repair_accepted" in stats:  # MinHash: the bucket pairs star candidates leave out
        rows += [
            ("links found across star components", stats["repair_accepted"]),
            ("bucket pairs not examined (cap)", stats["repair_unlisted"]),
        ]
    rows += [
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
@signature_options
@setting_option(
    "hamming_k", "-k", help="SimHash: near-duplicates differ in at most this many of 64 bits."
)
@setting_option(
    "threshold",
    help="MinHash: the near-duplicate threshold: of the LCS resemblance with --verify auto or "
    "lcs, of the Jaccard with --verify jaccard or none; picks the LSH bands (see `neardup tune`).",
)
@setting_option("bands", type=int, help="MinHash: force the number of LSH bands (with --rows).")
@setting_option("rows", type=int, help="MinHash: force the rows per band (with --bands).")
@setting_option(
    "verify",
    help="Check candidates exactly: lcs[:T] (the share of the longer text's words kept in "
    "order, Korean in eojeol aligned by characters, Chinese/Japanese by characters: the "
    "definition's rule), jaccard[:T] (of "
    "the shingle sets) or none. auto = lcs:THRESHOLD for MinHash, none for SimHash.",
)
@setting_option(
    "grouping",
    help="components: transitive groups; center: each member is a near-duplicate of its original.",
)
@setting_option(
    "pairs",
    "pairs_mode",
    help="Pairs to write: an edge from each original to its members, or every near-duplicate pair.",
)
@click.option(
    "--pairs-out",
    default=None,
    help="Also write PAIRS: id_a, id_b, distance|similarity, passed (whether the pair "
    "itself meets the threshold: with --grouping components a member can reach its "
    "original only through other members).",
)
@click.option(
    "--keep",
    default=None,
    help="Also write the originals (the deduplicated corpus) with all their fields.",
)
@click.option(
    "--report",
    "report_out",
    default=None,
    callback=html_path,
    help="Also write a self-contained HTML report of the run (see `neardup report`).",
)
@click.option(
    "--engine",
    type=click.Choice(sorted(ENGINES)),
    default="local",
    show_default=True,
    help="local: the cores of this machine; spark: Apache Spark (pip install 'neardup[spark]'), "
    "same output. With spark, inputs may be directories or globs on any file system Spark "
    "reads, and an output that is not a .tsv/.csv/.jsonl/.parquet file is a Parquet directory.",
)
@click.option(
    "--spark-master",
    default=None,
    help="Spark master for --engine spark: local[*] (the default), spark://HOST:7077, yarn; "
    "under spark-submit, its --master.",
)
@click.option(
    "--spark-remote",
    default=None,
    help="For --engine spark, instead of a master: the Spark Connect server to run on, "
    "sc://HOST:PORT (it reads the inputs and runs the tasks; single-file outputs are "
    "written here).",
)
@spill_options
@click.option(
    "--resume",
    is_flag=True,
    help="Local engine: keep completed stages in --tmp-dir if the run fails or is "
    "interrupted, and continue from them when run again with --resume (refused if the "
    "inputs or options changed).",
)
@idf_options
@input_options
@summary_option
@handle_errors
def dedup(
    inputs,
    output,
    method,
    shingle,
    hash_name,
    weights,
    num_perm,
    seed,
    scheme,
    hamming_k,
    threshold,
    bands,
    rows,
    verify,
    grouping,
    pairs_mode,
    pairs_out,
    keep,
    report_out,
    engine,
    spark_master,
    spark_remote,
    memory_limit,
    tmp_dir,
    resume,
    idf_in,
    idf_out,
    reading,
    workers,
    quiet,
    summary_out,
):
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

    method = resolve_method(method, verify)
    # The IDF table's first pass reads the inputs on this machine; Spark's may be on any file
    # system Spark reaches, so it takes a table saved beforehand.
    if engine == "spark" and weights == "idf" and not idf_in:
        raise ValueError(
            "with --engine spark, --weights idf takes a saved table (--idf-in); "
            "make one with `neardup fingerprint ... --weights idf --idf-out FILE`"
        )
    settings = Settings(
        method=method,
        shingle=shingle,
        hash_name=hash_name,
        num_perm=num_perm,
        seed=seed,
        scheme=scheme,
        hamming_k=hamming_k,
        threshold=threshold,
        bands=bands,
        rows=rows,
        verify=verify,
        grouping=grouping,
        pairs=pairs_mode,
    )
    outputs = Outputs(
        groups=output, pairs=pairs_out, keep=keep, report=report_out, beside=(summary_out,)
    )
    if engine == "local":  # before the IDF table's pass over the inputs
        outputs.check(inputs)
    with Reporter(True) as silent:
        idf = _idf_table(
            weights, settings.shingle, hash_name, idf_in, idf_out, output, inputs, reading, silent
        )
    settings = settings.replace(weights=weights, idf=idf)
    runner = _engine(
        engine,
        workers=workers,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        resume=resume,
        spark_master=spark_master,
        spark_remote=spark_remote,
    )
    with Reporter(quiet, summary_out) as reporter:
        run = runner.dedup(Corpus(tuple(inputs), reading), settings, outputs, reporter)
    elapsed = time.perf_counter() - reporter.started
    summary = _read_summary(reporter, run.read, elapsed, run.stats["empty_documents"])
    if run.read_seconds is not None:
        summary[-2:-2] = [
            ("seconds: read + signatures", run.read_seconds),
            ("MB/s: read + signatures", run.read.bytes / 1e6 / max(run.read_seconds, 1e-9)),
        ]
    reporter.summary(
        summary + _groups_summary(run) + list(run.figures.items()),
        settings={**settings_fields(settings), **run.resolved},
        outputs={"idf_out": _idf_path(weights, idf_in, idf_out, output)},
    )


def _engine(name: str, **options) -> Engine:
    """The engine ``name`` with ``options`` (:func:`neardup.engines.engine_named`); one that
    cannot run here ends the command with what to install. The Spark options are refused
    with another engine: they would do nothing."""
    for option in ("spark_master", "spark_remote"):
        if options.get(option) is not None and name != "spark":
            flag = "--" + option.replace("_", "-")
            raise click.UsageError(f"{flag} applies to --engine spark (the engine is {name})")
    try:
        return engine_named(name, **options)
    except EngineUnavailable as missing:
        fail(str(missing))


@click.command(context_settings=CONTEXT)
@click.argument("fingerprints", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="PAIRS file: id_a, id_b, distance, passed.")
@setting_option("hamming_k", "-k", help="Maximum Hamming distance.")
@setting_option(
    "pairs",
    "pairs_mode",
    default="all",
    help="Every pair within k (default), or an edge from each group's original to its members.",
)
@setting_option("grouping", help="Grouping rule for --groups-out.")
@click.option("--groups-out", default=None, help="Also write GROUPS (one row per fingerprint).")
@click.option(
    "--fingerprint-format",
    type=click.Choice(FINGERPRINT_FORMATS),
    default="auto",
    show_default=True,
    help="How fingerprints are written in the input.",
)
@click.option(
    "--on-error",
    type=click.Choice(ON_ERROR),
    default="raise",
    show_default=True,
    help="On a bad row: stop with an error, or skip and count it.",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary.")
@click.option(
    "--engine",
    type=click.Choice(sorted(ENGINES)),
    default="local",
    show_default=True,
    help="local: this machine; spark: Apache Spark (pip install 'neardup[spark]'), same output.",
)
@click.option(
    "--spark-master",
    default=None,
    help="Spark master for --engine spark: local[*] (the default), spark://HOST:7077, yarn.",
)
@click.option(
    "--spark-remote",
    default=None,
    help="For --engine spark, instead of a master: the Spark Connect server, sc://HOST:PORT.",
)
@pairs_spill_options
@summary_option
@handle_errors
def pairs(
    fingerprints,
    output,
    hamming_k,
    pairs_mode,
    grouping,
    groups_out,
    fingerprint_format,
    on_error,
    quiet,
    engine,
    spark_master,
    spark_remote,
    memory_limit,
    tmp_dir,
    summary_out,
):
    """All pairs of fingerprints within Hamming distance k (the batch job's map-reduce step).

    Input rows: `document ID <TAB> fingerprint <TAB> timestamp` (fingerprints from any system,
    16 hex digits or decimal; the timestamp column is optional). Identical fingerprints are
    pairs at distance 0. The local engine runs out of core within --memory-limit.

    \b
    Examples:
      neardup pairs fps.tsv -k 3 -o pairs.tsv
      neardup pairs fps.tsv -k 4 -o pairs.tsv --groups-out groups.tsv
      neardup pairs part-* -k 3 -o pairs.tsv --memory-limit 1G --tmp-dir /scratch
    """
    settings = Settings(
        method="simhash", hamming_k=hamming_k, verify=None, grouping=grouping, pairs=pairs_mode
    )
    runner = _engine(
        engine,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        spark_master=spark_master,
        spark_remote=spark_remote,
    )
    corpus = Corpus(
        tuple(fingerprints), {"on_error": on_error, "fingerprint_format": fingerprint_format}
    )
    outputs = Outputs(groups=groups_out, pairs=output, beside=(summary_out,))
    with Reporter(quiet, summary_out) as reporter:
        run = runner.pairs(corpus, settings, outputs, reporter)
    elapsed = time.perf_counter() - reporter.started
    reporter.summary(
        [
            ("fingerprints", run.read.documents),
            ("skipped rows", run.read.skipped),
            ("seconds", elapsed),
        ]
        + _groups_summary(run)
        + list(run.figures.items()),
        settings={"method": "simhash", **run.resolved},
    )
