"""The ``neardup`` command: parses options, calls the API, shows progress and a summary."""

from __future__ import annotations

import functools
import importlib
import json
import re
import sys
import time
from pathlib import Path

import click
import numpy as np
import pyarrow as pa

from neardup._version import __version__
from neardup.engines.spill import parse_size
from neardup.hashing import HASH_NAMES
from neardup.io import (
    InputError,
    _atomic_output,
    check_outputs,
    output_set,
    format_fingerprints,
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
    METHODS,
    PAIR_MODES,
    Settings,
    check_method_options,
    Signatures,
    find_groups,
)
from neardup.simhash import WEIGHTS

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Reporter:
    """Progress on stderr (only on a terminal, unless quiet) and the end-of-run summary.

    Each stage shows a bar when its total is known (bytes of the input files, documents to
    re-read, pairs to verify), with the share done, the rate and the time left; a spinner
    otherwise. With ``summary_out`` the summary is also written there as one JSON object
    (:meth:`summary`), quiet or not.
    """

    def __init__(self, quiet: bool, summary_out: str | None = None):
        from rich.console import Console

        self.quiet = quiet
        self.summary_out = summary_out
        self.console = Console(stderr=True, highlight=False)
        self.started = time.perf_counter()
        self.docs = 0
        self.bytes = 0
        self._progress = None
        self._task = None
        self._unit = "docs"
        self._reader = None
        self._read_bytes = 0
        #: Seconds spent in each stage shown (by name; a stage shown twice adds up).
        self.stage_seconds: dict[str, float] = {}
        self._stage_name: str | None = None
        self._stage_started = 0.0

    def __enter__(self) -> Reporter:
        if not self.quiet and self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description:<14}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[done]}"),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
        self.stage("reading")
        return self

    def __exit__(self, *exc) -> None:
        self._end_stage()
        if self._progress is not None:
            self._progress.stop()

    def _end_stage(self) -> None:
        if self._stage_name is not None:
            now = time.perf_counter()
            self.stage_seconds[self._stage_name] = (self.stage_seconds.get(self._stage_name, 0.0)
                                                    + now - self._stage_started)
            self._stage_name = None

    def stage(self, name: str, total: int | None = None, unit: str = "docs") -> None:
        """Start showing stage ``name`` (``total`` in ``unit`` when known: "B", "docs" or
        "pairs")."""
        self._end_stage()
        self._stage_name, self._stage_started = name, time.perf_counter()
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._unit = unit
        self._task = self._progress.add_task(name, total=total, done="")

    def advance(self, amount: int, docs: int | None = None, spilled: int | None = None) -> None:
        """``amount`` more units of the current stage are done (``docs`` read so far, bytes
        ``spilled`` to the temp dir)."""
        unit_bytes = self._unit == "B"
        if unit_bytes:
            self.bytes += amount
        if docs is not None:
            self.docs = docs
        if self._progress is None:
            return
        task = self._progress.tasks[-1]
        elapsed = max(task.elapsed or 0.0, 1e-9)
        completed = task.completed + amount
        if unit_bytes:
            done = f"{self.docs:,} docs  {completed / 1e6:,.0f} MB  {completed / 1e6 / elapsed:,.0f} MB/s"
            if spilled:
                done += f"  spilled {spilled / 1e6:,.0f} MB"
        else:
            done = f"{completed:,.0f} {self._unit}  {completed / elapsed:,.0f}/s"
        self._progress.update(self._task, advance=amount, done=done)

    def reading(self, reader, name: str = "reading") -> None:
        """Start stage ``name``, the reading of ``reader`` through :meth:`batch`: a bar over the
        input bytes when their total is known (uncompressed JSON Lines files), else a count."""
        total = reader.total_bytes()
        self._reader = reader if total is not None else None
        self._read_bytes = 0
        self.docs = 0
        self.stage(name, total, "B" if total is not None else "docs")

    def batch(self, batch) -> None:
        """A batch of documents was read (commands that keep the texts)."""
        docs = self.docs + len(batch.ids)
        if self._reader is not None:
            now = self._reader.bytes_consumed
            self.advance(now - self._read_bytes, docs=docs)
            self._read_bytes = now
            return
        self.advance(sum(len(t.encode("utf-8", "surrogatepass")) for t in batch.texts)
                     if self._unit == "B" else len(batch.ids), docs=docs)

    def summary(self, rows: list[tuple[str, object]], settings: dict | None = None,
                outputs: dict | None = None) -> None:
        """Print the summary ``rows`` (label, number) unless quiet, and with ``summary_out``
        write it as JSON (:func:`summary_json`; ``settings``: the resolved values that the
        command's option values do not show, e.g. :func:`settings_fields`; ``outputs``: paths
        written that the options do not show)."""
        if not self.quiet:
            width = max(len(k) for k, _ in rows)
            for key, value in rows:
                if isinstance(value, float):
                    value = f"{value:,.3f}"
                elif isinstance(value, int):
                    value = f"{value:,}"
                self.console.print(f"{key:<{width}}  {value}", soft_wrap=True)
        if self.summary_out:
            self._end_stage()
            document = summary_json(rows, self.stage_seconds, settings, outputs)
            with _atomic_output(self.summary_out) as fh:
                fh.write((json.dumps(document, indent=2, ensure_ascii=False, default=_json_number)
                          + "\n").encode("utf-8"))


# Options that name files a command writes: "outputs" of the --summary-out JSON.
_OUTPUT_KEYS = ("output", "pairs_out", "groups_out", "matches_out", "keep", "report", "idf_out",
                "summary_out")
# Summary labels whose JSON key is not their snake_case form.
_SUMMARY_KEYS = {"rejected by verification": "rejected"}


def _snake(label: str) -> str:
    """``"MB/s: read + signatures"`` -> ``"mb_per_s_read_signatures"``."""
    return re.sub(r"[^0-9a-z]+", "_", label.lower().replace("/", " per ")).strip("_")


def _option_key(param: click.Parameter) -> str:
    """An option's JSON key: its long name in snake_case (``--num-perm`` -> ``num_perm``)."""
    longs = [o for o in param.opts if o.startswith("--")]
    return _snake(max(longs, key=len)[2:]) if longs else param.name


def _json_number(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def settings_fields(settings: Settings, only: tuple[str, ...] | None = None) -> dict:
    """The values a run used, from its :class:`Settings`: the default shingles of its method,
    the LSH bands and rows worked out (MinHash), the verification resolved from ``auto``."""
    bands, rows = settings.banding() if settings.method == "minhash" else (None, None)
    fields = {
        "method": settings.method, "shingle": settings.shingle, "hash": settings.hash_name,
        "weights": settings.weights, "num_perm": settings.num_perm, "seed": settings.seed,
        "hamming_k": settings.hamming_k, "threshold": settings.threshold, "bands": bands,
        "rows": rows, "verify": "none" if settings.verify is None else settings.verify_measure,
        "verify_threshold": settings.verify, "grouping": settings.grouping,
        "pairs": settings.pairs,
    }
    return fields if only is None else {k: fields[k] for k in only}


def summary_json(rows: list[tuple[str, object]], stage_seconds: dict[str, float] | None = None,
                 settings: dict | None = None, outputs: dict | None = None) -> dict:
    """The ``--summary-out`` object of the running command (from click's context): its
    command, version, inputs (its arguments), outputs and settings (every option, defaults
    included, ``settings`` over them), the summary ``rows`` as counts (snake_case labels;
    ``skipped: REASON`` rows in ``skipped_reasons``, rates in ``rates``) and seconds (``total``,
    each stage shown, then the ``seconds: STAGE`` rows)."""
    ctx = click.get_current_context()
    names, outer = [], ctx
    while outer is not None:
        names.insert(0, outer.info_name)
        outer = outer.parent
    inputs, written, options = [], {}, {}
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if isinstance(param, click.Argument):
            inputs.extend(value if isinstance(value, (list, tuple)) else [value])
            continue
        key = _option_key(param)
        if key in _OUTPUT_KEYS:
            written[key] = value
        elif key not in ("quiet", "help"):
            options[key] = value
    if options.get("workers") == 0:
        from neardup.engines.local import default_workers

        options["workers"] = default_workers()
    resolved = settings or {}
    options = {**resolved, **{k: v for k, v in options.items() if k not in resolved}}
    counts, rates = {}, {}
    seconds = {_snake(name): value for name, value in (stage_seconds or {}).items()}
    for label, value in rows:
        name = label.strip()
        head, colon, rest = name.partition(": ")
        if name == "seconds":
            seconds["total"] = value
        elif colon and head == "seconds":
            seconds[_snake(rest)] = value
        elif colon and head == "skipped":
            counts.setdefault("skipped_reasons", {})[rest] = value
        elif re.search(r"/\s*s\b", head):
            rates[_snake(name)] = value
        else:
            key = _SUMMARY_KEYS.get(name, _snake(name))
            counts[key] = value
            if key == "skipped_rows":
                counts.setdefault("skipped_reasons", {})
    if "total" in seconds:
        seconds = {"total": seconds.pop("total"), **seconds}
    return {"command": " ".join(names[1:] or names), "version": __version__,
            "inputs": [str(i) for i in inputs], "outputs": {**written, **(outputs or {})},
            "settings": options, "counts": counts, "rates": rates, "seconds": seconds,
            "exit": "ok"}


def _fail(message: str) -> None:
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(1)


def handle_errors(command):
    """Turn bad input and bad options into one clear line and exit status 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except InputError as error:
            _fail(str(error))
        except (ValueError, OSError) as error:
            _fail(str(error))

    return wrapper


def _byte_size(ctx, param, value):
    try:
        return parse_size(value, f"--{param.name.replace('_', '-')}")
    except ValueError as error:
        raise click.BadParameter(str(error).split("; ", 1)[-1]) from None


def input_options(command):
    """Options for reading documents, shared by the commands that read them."""
    options = [
        click.option("--id-field", default="id", show_default=True, help="Field holding the document ID."),
        click.option("--text-field", default="text", show_default=True, help="Field holding the text."),
        click.option(
            "--time-field", default=None,
            help="Field holding the timestamp (seconds since epoch or ISO 8601); the earliest "
            "document of a group is its original. Default: input order.",
        ),
        click.option(
            "--input-format", type=click.Choice(["jsonl", "csv", "tsv", "parquet", "txt"]), default=None,
            help="Input format; default from each file's extension (JSONL for stdin).",
        ),
        click.option(
            "--on-error", type=click.Choice(["raise", "skip"]), default="raise", show_default=True,
            help="On a bad row: stop with an error naming file, line and field, or skip and count it.",
        ),
        click.option(
            "--max-doc-bytes", default="16M", show_default=True, callback=_byte_size,
            help="Largest text accepted, in UTF-8 bytes (K/M/G suffixes; 0 = no limit). A longer "
            "document is a bad row (see --on-error); it bounds the memory of one document.",
        ),
        click.option("--workers", type=int, default=0, show_default=True, help="Worker threads (0 = all cores)."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def summary_option(command):
    """--summary-out FILE, for the commands that end with a summary (:meth:`Reporter.summary`);
    the command passes it to its Reporter and checks it with its other outputs."""
    return click.option(
        "--summary-out", default=None, metavar="FILE",
        help="Also write the run's summary as one JSON object: command, version, inputs, "
        "outputs, settings (every option, defaults resolved), counts, rates, seconds per stage "
        "(written atomically at the end of a successful run; also with --quiet).",
    )(command)


def signature_options_for(method: str = "simhash"):
    """Options that define features and signatures, with a command's own default method (the
    shingles default per method: :data:`neardup.pipeline.DEFAULT_SHINGLES`)."""

    def decorate(command):
        options = [
            click.option("--method", type=click.Choice(METHODS), default=method, show_default=True,
                         help="MinHash signatures (Jaccard, LSH bands) or SimHash fingerprints "
                         "(Hamming distance, permutation tables)."),
            click.option("--shingle", default=None,
                         help="Features [default: word:3 with --method simhash, char:4 with minhash]: "
                         "word:K (K-word shingles), char:K (K characters, spaces removed) or "
                         "stopword:K[:LIST] (word K-grams starting with a stop word of LIST: auto = "
                         "English and Korean, en, ko, or a file with one word a line); add :multiset "
                         "to count repeats (word:3:multiset)."),
            click.option("--hash", "hash_name", type=click.Choice(HASH_NAMES), default="xxh", show_default=True,
                         help="Feature hash: XXH64, or the upper 64 bits of MD5."),
            click.option("--weights", type=click.Choice(WEIGHTS), default="set", show_default=True,
                         help="SimHash weights: 1 per distinct shingle, term frequency, or inverse document "
                         "frequency in the corpus (idf: with fingerprint and dedup; --idf-in/--idf-out)."),
            click.option("--num-perm", type=int, default=128, show_default=True, help="MinHash permutations."),
            click.option("--seed", type=int, default=1, show_default=True, help="MinHash seed."),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


# The seed's fingerprint rows: SimHash over word trigrams.
signature_options = signature_options_for("simhash")


def idf_options(command):
    """--idf-in / --idf-out, for the commands that take --weights idf."""
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


def _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs, reader_args,
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
    reader = _reader(inputs, **reader_args)
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


def _reader(inputs, id_field, text_field, time_field, input_format, on_error, max_doc_bytes,
            keep_records=False, spill_dir=None, batch_size=10_000):
    return read_documents(
        list(inputs), id_field=id_field, text_field=text_field, time_field=time_field,
        input_format=input_format, on_error=on_error, keep_records=keep_records,
        batch_size=batch_size, spill_dir=spill_dir, max_doc_bytes=max_doc_bytes,
    )


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


class _CommandGroup(click.Group):
    """The top-level group; commands kept in :mod:`neardup.commands` load when first used.

    Those modules import this one's helpers, so importing them here would be circular; loading
    on use also keeps ``neardup --help`` and the small commands quick to start.
    """

    LAZY = {
        "evaluate": "neardup.commands.quality:evaluate",
        "sweep": "neardup.commands.quality:sweep",
        "generate": "neardup.commands.labelling:generate",
        "sample": "neardup.commands.labelling:sample",
        "label": "neardup.commands.labelling:label",
        "index": "neardup.commands.index:index",
        "report": "neardup.commands.report:report",
        "serve": "neardup.commands.index:serve",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY:
            module, attribute = self.LAZY[name].split(":")
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=_CommandGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """neardup: find near-duplicate documents, give each group one duplicate ID and name its
    original (the earliest document).

    \b
    Start with:
      neardup dedup docs.jsonl -o groups.tsv        # groups of near-duplicates
      neardup fingerprint docs.jsonl -o fps.tsv     # id, SimHash, timestamp rows
      neardup compare a.txt b.txt                   # every similarity measure for two texts
      neardup tune --threshold 0.8 --num-perm 128   # LSH bands and rows for a threshold
    """
    _exit_cleanly_on_sigterm()


def _exit_cleanly_on_sigterm() -> None:
    # A terminated run unwinds like Ctrl-C does, so temp files and partial outputs are removed.
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


@main.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="Output file (.tsv .csv .jsonl .parquet, - = stdout).")
@signature_options
@idf_options
@input_options
@summary_option
@handle_errors
def fingerprint(inputs, output, method, shingle, hash_name, weights, num_perm, seed, idf_in,
                idf_out, id_field, text_field, time_field, input_format, on_error, max_doc_bytes, workers, quiet,
                summary_out):
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
    reader_args = {"id_field": id_field, "text_field": text_field, "time_field": time_field,
                   "input_format": input_format, "on_error": on_error,
                   "max_doc_bytes": max_doc_bytes}
    check_outputs([output, idf_out, summary_out], inputs)
    reader = _reader(inputs, **reader_args)
    with Reporter(quiet, summary_out) as reporter:
        idf = _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs,
                         reader_args, reporter)
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


@main.command(context_settings=CONTEXT)
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
          spark_master, memory_limit, tmp_dir, resume, idf_in, idf_out, id_field, text_field,
          time_field, input_format, on_error, max_doc_bytes, workers, quiet, summary_out):
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
    from neardup.engines.local import LocalEngine

    _check_method_options(method, verify)
    shingle = shingle or DEFAULT_SHINGLES[method]
    reader_args = {"id_field": id_field, "text_field": text_field, "time_field": time_field,
                   "input_format": input_format, "on_error": on_error,
                   "max_doc_bytes": max_doc_bytes}
    if engine == "spark" and weights == "idf" and not idf_in:
        raise ValueError("with --engine spark, --weights idf takes a saved table (--idf-in); "
                         "make one with `neardup fingerprint ... --weights idf --idf-out FILE`")
    with Reporter(True) as silent:
        idf = _idf_table(weights, shingle, hash_name, idf_in, idf_out, output, inputs,
                         reader_args, silent)
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
            _fail(spark_engine.INSTALL_HINT)
        if report_out:
            raise ValueError("--report works with the local engine; with --engine spark, run "
                             "`neardup report` on the written GROUPS and PAIRS files")
        check_outputs([summary_out], inputs)  # Spark checks its own outputs (any file system)
        with Reporter(quiet, summary_out) as reporter:
            reporter.stage("running on Spark")
            result, stats = spark_engine.run_dedup(
                spark_engine.spark_session(spark_master), inputs, output, settings,
                pairs_out=pairs_out, keep=keep, id_field=id_field, text_field=text_field,
                time_field=time_field, input_format=input_format, on_error=on_error,
                max_doc_bytes=max_doc_bytes)
        elapsed = time.perf_counter() - reporter.started
        reporter.summary(_read_summary(reporter, stats, elapsed, result.stats["empty_documents"])
                         + _groups_summary(result), settings=settings_fields(settings))
        return
    _run_local_dedup(inputs, output, pairs_out, keep, report_out, settings, reader_args,
                     workers=workers, quiet=quiet, memory_limit=memory_limit, tmp_dir=tmp_dir,
                     resume=resume, summary_out=summary_out,
                     outputs={"idf_out": _idf_path(weights, idf_in, idf_out, output)})


def _run_local_dedup(inputs, output, pairs_out, keep, report_out, settings, reader_args, *,
                     workers, quiet, memory_limit, tmp_dir, resume, summary_out=None,
                     outputs=None):
    """``neardup dedup`` on the local engine: out of core, under ``memory_limit``."""
    from neardup._version import __version__
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
    key = run_key(version=__version__, settings=repr(settings), reader=reader_args,
                  inputs=input_identity(list(inputs)) if resume else list(inputs))
    with WorkDir(tmp_dir, key, output, resume=resume) as work, \
            Reporter(quiet, summary_out) as reporter:

        def reopen(records: bool):
            return _reader(inputs, **reader_args, keep_records=records, batch_size=BATCH_SIZE)

        reader = _reader(inputs, **reader_args, spill_dir=str(work.path), batch_size=BATCH_SIZE)
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
                              reader_options=reader_args, inputs=inputs)
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


def _write_run_report(path, collection, groups, settings, read_seconds, reader_options, inputs):
    """``dedup --report``: the page of :mod:`neardup.report` from the run in memory. Texts come
    from the collection when it kept them, else from a second read of the inputs."""
    from neardup import report as html_report
    from neardup.commands.report import texts_by_position, write_report

    simhash = settings.method == "simhash"
    stats = {k: v for k, v in groups.stats.items() if not isinstance(v, dict)}
    stats["seconds"] = {"read + signatures": read_seconds, **groups.stats.get("seconds", {})}
    ids = collection.ids
    run = html_report.RunData(
        ids=(ids.to_numpy() if isinstance(ids, pa.ChunkedArray) else np.asarray(ids, dtype=object)), original=groups.original,
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
        texts = texts_by_position(inputs, positions, run.ids, **reader_options)
    write_report(path, run, texts, "neardup report")


@main.command(context_settings=CONTEXT)
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
            _fail(spark_engine.INSTALL_HINT)
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


_PATH_LIKE = re.compile(r"\S*[/\\]\S*|\S+\.[A-Za-z0-9]{1,8}")


def _text_argument(value: str, source: str) -> str:
    """The text an argument of `compare` stands for: ``source`` "text" takes it literally,
    "file" reads the file it names; "auto" reads an existing file, refuses a missing one that
    looks like a path (a single word with a folder separator or an extension) and takes
    anything else literally."""
    path = Path(value)
    if source == "text":
        return value
    if path.is_file():
        return path.read_text(encoding="utf-8")
    if source == "file" or _PATH_LIKE.fullmatch(value):
        raise click.BadParameter(
            f"no such file: {value}" + ("" if source == "file" else
                                        " (pass --text to compare it as a literal string)"))
    return value


@main.command(context_settings=CONTEXT)
@click.argument("a")
@click.argument("b")
@click.option("--unit", type=click.Choice(["char", "word", "jamo", "syllable"]), default="word",
              show_default=True, help="Unit of edit distance, LCS and cosine.")
@click.option("--shingle", default="word:3", show_default=True, help="Shingles for Jaccard, SimHash, MinHash.")
@click.option("--num-perm", type=int, default=128, show_default=True, help="MinHash permutations.")
@click.option("--hash", "hash_name", type=click.Choice(HASH_NAMES), default="xxh", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--text", "source", flag_value="text",
              help="A and B are texts, even where they name files.")
@click.option("--file", "source", flag_value="file",
              help="A and B are files (an error when one does not exist).")
@click.option("--auto", "source", flag_value="auto", default=True, hidden=True)
@handle_errors
def compare(a, b, unit, shingle, num_perm, hash_name, as_json, source):
    """Every similarity measure between two texts (files, or literal strings: an argument
    naming an existing file is read; one that looks like a path but does not exist is an
    error; --text and --file decide explicitly), and the
    verdict of the near-duplicate definition as `neardup dedup` applies it by default (LCS
    resemblance ≥ 0.8: words, and characters in Korean, Chinese and Japanese text).

    \b
    Examples:
      neardup compare a.txt b.txt
      neardup compare "the cat sat on the mat" "the cat sat on a mat" --unit char
    """
    from neardup.similarity import compare as compare_texts
    from neardup.verify import Verification

    text_a, text_b = _text_argument(a, source), _text_argument(b, source)
    result = compare_texts(text_a, text_b, unit=unit, shingle=shingle, num_perm=num_perm,
                           hash_name=hash_name)
    rule = Verification("lcs", DEFAULT_THRESHOLD)
    offsets, values = rule.prepare([text_a, text_b], shingle, hash_name)
    resemblance = float(rule.similarity(offsets, values, np.array([0]), np.array([1]),
                                        exact=True)[0])
    result["definition_lcs"] = resemblance
    result["near_duplicate"] = "yes" if resemblance >= rule.threshold else "no"
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"unit={unit}  shingle={shingle}  num_perm={num_perm}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    Console().print(table)


@main.command(context_settings=CONTEXT)
@click.option("--threshold", type=float, default=DEFAULT_THRESHOLD, show_default=True,
              help="The near-duplicate threshold, as `neardup dedup --threshold`.")
@click.option("--num-perm", type=int, default=128, show_default=True, help="MinHash permutations.")
@click.option("--verify", default="auto", show_default=True,
              help="The verification, as `neardup dedup --verify`: it decides which Jaccard the "
              "bands are tuned for (LCS at T: Jaccard T/2).")
@click.option("--fp-weight", type=float, default=None,
              help="Tune for a Jaccard of --threshold with this weight of false positives "
              "(with --fn-weight) instead of as dedup does.")
@click.option("--fn-weight", type=float, default=None, help="Weight of false negatives (see --fp-weight).")
@click.option("--plot", default=None, help="Write the S-curve p(s) = 1 − (1 − s^r)^b as a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def tune(threshold, num_perm, verify, fp_weight, fn_weight, plot, as_json):
    """The LSH bands b and rows r that `neardup dedup` uses for a threshold and num_perm.

    Bands are chosen by minimising fp_weight · ∫₀ˢ p(t) dt + fn_weight · ∫ₛ¹ (1 − p(t)) dt
    with p(t) = 1 − (1 − t^r)^b at a Jaccard s that the verification sets (see `--verify`);
    prints the candidate probability at several Jaccard similarities.

    \b
    Examples:
      neardup tune                                   # the bands of dedup's defaults
      neardup tune --threshold 0.7 --verify jaccard
      neardup tune --threshold 0.5 --num-perm 256 --fp-weight 0.5 --fn-weight 0.5 --plot curve.png
    """
    from neardup.lsh import (
        LSHParams,
        candidate_probability,
        false_negative_area,
        false_positive_area,
        optimal_params,
        plot_s_curve,
    )

    if (fp_weight is None) != (fn_weight is None):
        raise ValueError("give --fp-weight and --fn-weight together (or neither: tune as dedup does)")
    if fp_weight is None:
        settings = Settings(method="minhash", threshold=threshold, num_perm=num_perm, verify=verify)
        bands, rows = settings.banding()
        lcs = settings.verify is not None and settings.verify_measure == "lcs"
        tuned_for = settings.verify / 2 if lcs else threshold
        note = f" (half of --verify lcs:{settings.verify:g})" if lcs else ""
        params = LSHParams(bands, rows, tuned_for, num_perm,
                           false_positive_area(tuned_for, bands, rows),
                           false_negative_area(tuned_for, bands, rows))
    else:
        params = optimal_params(threshold, num_perm, fp_weight=fp_weight, fn_weight=fn_weight)
        tuned_for, note = threshold, ""
    threshold = tuned_for
    sims = [round(x, 2) for x in np.arange(0.1, 1.0, 0.1)] + [threshold]
    sims = sorted(set(sims))
    probs = candidate_probability(np.asarray(sims), params.bands, params.rows)
    if plot:
        plot_s_curve(params.bands, params.rows, plot, threshold=threshold)
    if as_json:
        click.echo(json.dumps({
            "threshold": threshold, "num_perm": num_perm, "bands": params.bands, "rows": params.rows,
            "approx_threshold": params.approx_threshold, "fp_area": params.fp_area,
            "fn_area": params.fn_area,
            "candidate_probability": {str(s): float(p) for s, p in zip(sims, probs)},
        }, indent=2))
        return
    click.echo(f"Jaccard {threshold:g}{note}, num_perm {num_perm}: bands b = {params.bands}, rows r = {params.rows} "
               f"(uses {params.bands * params.rows} values; (1/b)^(1/r) = {params.approx_threshold:.3f})")
    click.echo(f"false-positive area {params.fp_area:.5f}, false-negative area {params.fn_area:.5f}")
    click.echo(f"{'similarity':>10}  {'P(candidate)':>12}  {'P(missed)':>10}")
    for s, p in zip(sims, probs):
        marker = "  ← threshold" if s == threshold else ""
        click.echo(f"{s:>10.2f}  {p:>12.5f}  {1 - p:>10.5f}{marker}")
    if plot:
        click.echo(f"S-curve written to {plot}")


if __name__ == "__main__":
    main()
