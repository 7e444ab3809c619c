"""The pieces every ``neardup`` command shares: the click context, progress and the summary
(:class:`Reporter`, :func:`summary_json`), one-line errors (:func:`handle_errors`), the options
of run settings (:func:`setting_option`: default, type and choices from
:class:`neardup.settings.Settings`; :class:`RenamedOption` for a flag's old spelling) and the
option sets several commands take (:func:`input_options`, :func:`summary_option`,
:func:`signature_options`). Imports no other module of :mod:`neardup.cli` but its context."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, NoReturn

import click
import numpy as np

from neardup import signals
from neardup._version import __version__
from neardup.cli import compiling
from neardup.cli.context import CONTEXT as CONTEXT  # the commands' modules take it from here
from neardup.engines.base import EngineMemoryError
from neardup.engines.spill import parse_size
from neardup.io import INPUT_FORMATS, ON_ERROR
from neardup.io.atomic import atomic_output
from neardup.settings import (
    CHOICES,
    DEFAULT_METHOD,
    DEFAULT_SHINGLES,
    METHODS,
    Settings,
    check_method_options,
    implied_method,
    setting_default,
)

if TYPE_CHECKING:
    from rich.console import Console

#: The help text of ``--scheme``, the MinHash signature scheme (:mod:`neardup.minhash`).
SCHEME_HELP = (
    "MinHash signature scheme: oph (one-permutation hashing with densification, one hash a "
    "shingle) or classic (num-perm hash functions a shingle, as before oph was the default)."
)


class Reporter:
    """Progress on stderr (only on a terminal, unless quiet) and the end-of-run summary.

    Each stage shows a bar when its total is known (bytes of the input files, documents to
    re-read, pairs to verify), with the share done, the rate and the time left; a spinner
    otherwise. With ``summary_out`` the summary is also written there as one JSON object
    (:meth:`summary`), quiet or not.
    """

    def __init__(self, quiet: bool, summary_out: str | None = None):
        self.quiet = quiet
        self.summary_out = summary_out
        self.started = time.perf_counter()
        self.docs = 0
        self.bytes = 0
        self._progress = None
        self._display_before = None  # the compile notice's display before this one
        self._task = None
        self._unit = "docs"
        self._reader = None
        self._read_bytes = 0
        #: Seconds spent in each stage shown (by name; a stage shown twice adds up).
        self.stage_seconds: dict[str, float] = {}
        self._stage_name: str | None = None
        self._stage_started = 0.0

    @functools.cached_property
    def console(self) -> Console:
        """The stderr console, made when first shown to (a quiet run may never import rich:
        12 ms)."""
        from rich.console import Console

        return Console(stderr=True, highlight=False)

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
                TextColumn("elapsed,"),
                TimeRemainingColumn(),
                TextColumn("left"),
                console=self.console,
                transient=True,
            )
            self._progress.start()
        if compiling.active is not None and not self.quiet:
            self._display_before = compiling.active.display
            compiling.active.display = self
        self.stage("reading")
        return self

    def __exit__(self, *exc) -> None:
        self._end_stage()
        if compiling.active is not None and compiling.active.display is self:
            compiling.active.display = self._display_before
        if self._progress is not None:
            self._progress.stop()

    def notice(self, text: str) -> None:
        """Print one line above the progress display (:mod:`neardup.cli.compiling`)."""
        self.console.print(text, soft_wrap=True)

    def compiling(self, on: bool) -> None:
        """Show "compiling" instead of the stage while numba compiles (first runs)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task, description="compiling" if on else self._stage_name, refresh=True
            )

    def _end_stage(self) -> None:
        if self._stage_name is not None:
            now = time.perf_counter()
            self.stage_seconds[self._stage_name] = (
                self.stage_seconds.get(self._stage_name, 0.0) + now - self._stage_started
            )
            self._stage_name = None

    def stage(self, name: str, total: int | None = None, unit: str = "docs") -> None:
        """Start showing stage ``name`` (``total`` in ``unit`` when known: "B", "docs" or
        "pairs"). A run that received a signal stops here (:mod:`neardup.signals`)."""
        signals.raise_if_received()
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
        ``spilled`` to the temp dir). A run that received a signal stops here."""
        signals.raise_if_received()
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
        # Drawn now, not at the next tick of the display's timer: a stage may end before it
        # (a batch is thousands of documents, so this draws a few times a second at most).
        self._progress.update(self._task, advance=amount, done=done, refresh=True)

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
        self.advance(
            sum(len(t.encode("utf-8", "surrogatepass")) for t in batch.texts)
            if self._unit == "B"
            else len(batch.ids),
            docs=docs,
        )

    def summary(
        self,
        rows: list[tuple[str, object]],
        settings: dict | None = None,
        outputs: dict | None = None,
    ) -> None:
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
            with atomic_output(self.summary_out) as fh:
                fh.write(
                    (
                        json.dumps(document, indent=2, ensure_ascii=False, default=_json_number)
                        + "\n"
                    ).encode("utf-8")
                )


# Options that name files a command writes: "outputs" of the --summary-out JSON.
_OUTPUT_KEYS = (
    "output",
    "pairs_out",
    "groups_out",
    "matches_out",
    "keep",
    "report",
    "idf_out",
    "summary_out",
)
# Summary labels whose JSON key is not their snake_case form.
_SUMMARY_KEYS = {
    "rejected by verification": "rejected",
    "linked already, not verified": "linked_untested",
}


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
    the LSH bands and rows worked out (MinHash), the verification resolved from ``auto``;
    ``only`` keeps those keys, in that order. O(1).

    >>> settings_fields(Settings(method="simhash"), ("method", "shingle", "hamming_k"))
    {'method': 'simhash', 'shingle': 'word:3', 'hamming_k': 3}
    """
    bands, rows = settings.banding() if settings.method == "minhash" else (None, None)
    fields = {
        "method": settings.method,
        "shingle": settings.shingle,
        "hash_name": settings.hash_name,
        "weights": settings.weights,
        "num_perm": settings.num_perm,
        "seed": settings.seed,
        "scheme": settings.scheme,
        "hamming_k": settings.hamming_k,
        "threshold": settings.threshold,
        "bands": bands,
        "rows": rows,
        "verify": "none" if settings.verify is None else settings.verify_measure,
        "verify_threshold": settings.verify,
        "grouping": settings.grouping,
        "pairs": settings.pairs,
    }
    return fields if only is None else {k: fields[k] for k in only}


def summary_json(
    rows: list[tuple[str, object]],
    stage_seconds: dict[str, float] | None = None,
    settings: dict | None = None,
    outputs: dict | None = None,
) -> dict:
    """The ``--summary-out`` object of the running command (from click's context): its
    command, version, inputs (its arguments), outputs and settings (every option, defaults
    included, ``settings`` over them), the summary ``rows`` as counts (snake_case labels;
    ``skipped: REASON`` rows in ``skipped_reasons``, rates in ``rates``) and seconds (``total``,
    each stage shown, then the ``seconds: STAGE`` rows). O(options + rows).

    Example: inside ``neardup pairs fps.tsv -o pairs.tsv``, ``summary_json([("fingerprints",
    10), ("seconds", 0.2)])`` gives ``{"command": "pairs", ..., "inputs": ["fps.tsv"],
    "outputs": {"output": "pairs.tsv", ...}, "counts": {"fingerprints": 10}, "seconds":
    {"total": 0.2}, "exit": "ok"}``."""
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
        from neardup.engines.workers import default_workers

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
    return {
        "command": " ".join(names[1:] or names),
        "version": __version__,
        "inputs": [str(i) for i in inputs],
        "outputs": {**written, **(outputs or {})},
        "settings": options,
        "counts": counts,
        "rates": rates,
        "seconds": seconds,
        "exit": "ok",
    }


def fail(message: str) -> None:
    """Print ``neardup: error: MESSAGE`` on stderr and exit with status 1.

    Example: ``fail("--resume needs input files")`` ends the command with that one line."""
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(1)


def closed_pipe() -> NoReturn:
    """End the command quietly with status 141 (128 + SIGPIPE), as Unix tools do, when the
    reader of its standard output has gone (``neardup index stats | head -1``): nothing is
    left to say to it, and the writes still buffered go to /dev/null instead of failing
    again at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(141)


def handle_errors(command):
    """Turn bad input and bad options into one clear line and exit status 1.

    Wraps a command function: :class:`neardup.io.InputError` (a ``ValueError``), any other
    ``ValueError``, ``OSError`` and an engine's
    :class:`~neardup.engines.base.EngineMemoryError` (its message says what to configure) end
    the command through :func:`fail` instead of a traceback
    (unless a signal came first: the error is its consequence, and the run ends as
    :mod:`neardup.signals` says)."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            closed_pipe()
        except (ValueError, OSError, EngineMemoryError) as error:
            signals.raise_if_received()
            fail(str(error))

    return wrapper


def _byte_size(ctx, param, value):
    try:
        return parse_size(value, f"--{param.name.replace('_', '-')}")
    except ValueError as error:
        raise click.BadParameter(str(error).split("; ", 1)[-1]) from None


# The options of input_options that are keywords of neardup.io.read_documents, in its order.
READING_KEYS = ("id_field", "text_field", "time_field", "input_format", "on_error", "max_doc_bytes")


def html_path(ctx, param, value):
    """Click callback of an HTML report's path: one that does not end in ``.html`` or ``.htm``
    (``-o report.txt``, a slip for another output) ends the command with one line. O(1)."""
    if value is not None and not value.lower().endswith((".html", ".htm")):
        fail(f"{param.opts[-1]} {value}: a report is an HTML page; name it .html or .htm")
    return value


def input_options(command):
    """Options for reading documents, shared by the commands that read them: --id-field,
    --text-field, --time-field, --input-format, --on-error, --max-doc-bytes, --workers, -q.

    The command receives the first six as one keyword ``reading``, a dict of the keywords of
    :func:`neardup.io.read_documents` (:data:`READING_KEYS`), so that it reads its inputs with
    ``read_documents(list(inputs), **reading)``; ``workers`` and ``quiet`` come as themselves.

    Example::

        @click.command()
        @click.argument("inputs", nargs=-1)
        @input_options
        def count(inputs, reading, workers, quiet):
            click.echo(len(read_documents(list(inputs), **reading).read_all().ids))
    """

    @functools.wraps(command)
    def with_reading(*args, **kwargs):
        reading = {key: kwargs.pop(key) for key in READING_KEYS}
        return command(*args, reading=reading, **kwargs)

    options = [
        click.option(
            "--id-field", default="id", show_default=True, help="Field holding the document ID."
        ),
        click.option(
            "--text-field", default="text", show_default=True, help="Field holding the text."
        ),
        click.option(
            "--time-field",
            default=None,
            help="Field holding the timestamp (seconds since epoch or ISO 8601); the earliest "
            "document of a group is its original. Default: input order.",
        ),
        click.option(
            "--input-format",
            type=click.Choice(INPUT_FORMATS),
            default=None,
            help="Input format; default from each file's extension (JSONL for stdin).",
        ),
        click.option(
            "--on-error",
            type=click.Choice(ON_ERROR),
            default="raise",
            show_default=True,
            help="On a bad row: stop with an error naming file, line and field, or skip and count it.",
        ),
        click.option(
            "--max-doc-bytes",
            default="16M",
            show_default=True,
            callback=_byte_size,
            help="Largest text accepted, in UTF-8 bytes (K/M/G suffixes; 0 = no limit). A longer "
            "document is a bad row (see --on-error); it bounds the memory of one document.",
        ),
        click.option(
            "--workers",
            type=int,
            default=0,
            show_default=True,
            help="Worker threads (0 = all cores).",
        ),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary."),
    ]
    for option in reversed(options):
        with_reading = option(with_reading)
    return with_reading


def spill_options(command):
    """--memory-limit and --tmp-dir: the memory budget and spill folder of the commands that run
    out of core (``dedup``'s local engine, ``index build``)."""
    return _spill_options(
        command,
        "Local engine: memory for the run's data, e.g. 4G, 512M or 40% (of RAM); band "
        "hashes beyond half of it spill to --tmp-dir and shingle sets are built in blocks "
        "that fit. Default: 1/16 of this machine's RAM, at least 256M.",
    )


def fingerprint_spill_options(command):
    """--memory-limit and --tmp-dir of ``neardup fingerprint``, whose one memory that grows
    with the documents is the check of repeated IDs."""
    return _spill_options(
        command,
        "Memory for the run's data, e.g. 4G, 512M or 40% (of RAM): the check of repeated "
        "IDs holds at most an eighth of it, and the IDs past that go to --tmp-dir (a repeat "
        "among them is reported when the reading ends). Default: 1/16 of this machine's "
        "RAM, at least 256M.",
    )


def pairs_spill_options(command):
    """--memory-limit and --tmp-dir of ``neardup pairs``, which runs out of core (its local
    engine) and has no --resume."""
    return _spill_options(
        command,
        "Local engine: memory for the run's data, e.g. 4G, 512M or 40% (of RAM): IDs, "
        "fingerprints and timestamps beyond it go to --tmp-dir, the tables are searched in "
        "parts that fit it and the pairs found are merged from sorted runs on disk; the "
        "outputs are the same whatever the limit. Default: 1/16 of this machine's RAM, at "
        "least 256M. There is no --resume: a failed run starts over.",
    )


def _spill_options(command, memory_help: str):
    command = click.option(
        "--tmp-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Local engine: folder for spill files (default: the system's temp dir, "
        "$TMPDIR). Removed when the run ends, fails or is interrupted.",
    )(command)
    return click.option("--memory-limit", default=None, help=memory_help)(command)


def summary_option(command):
    """--summary-out FILE, for the commands that end with a summary (:meth:`Reporter.summary`);
    the command passes it to its Reporter and checks it with its other outputs."""
    return click.option(
        "--summary-out",
        default=None,
        metavar="FILE",
        help="Also write the run's summary as one JSON object: command, version, inputs, "
        "outputs, settings (every option, defaults resolved), counts, rates, seconds per stage "
        "(written atomically at the end of a successful run; also with --quiet).",
    )(command)


def resolve_method(method: str | None, verify: str = "auto") -> str:
    """The method of a command run: ``--method`` if given, else the one the options given on
    the command line imply (:func:`neardup.settings.implied_method`: ``-k`` SimHash,
    ``--num-perm`` MinHash …), else ``dedup``'s. Refuses an option the method does not use, in
    its command-line spelling. O(options).

    Example: ``neardup fingerprint docs.jsonl -o fps.tsv --weights tf`` runs SimHash."""
    ctx = click.get_current_context()
    names = {"idf_in": "idf"}
    given = [
        names.get(p.name, p.name)
        for p in ctx.command.params
        if ctx.get_parameter_source(p.name)
        in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    ]
    if method is None:
        method = implied_method(given)
    flags = {"idf": "--idf-in"}
    check_method_options(
        method, given, verify, lambda name: flags.get(name, "--" + name.replace("_", "-"))
    )
    return method


def signature_options(command):
    """Options that define features and signatures: ``method``, ``shingle``, ``hash_name``,
    ``weights``, ``num_perm``, ``seed`` and ``scheme``, with ``dedup``'s defaults (the method
    by :func:`resolve_method`, the shingles per method by
    :data:`neardup.settings.DEFAULT_SHINGLES`)."""
    options = [
        setting_option(
            "method",
            default=None,
            help="MinHash signatures (Jaccard, LSH bands) or SimHash fingerprints "
            "(Hamming distance, permutation tables) [default: the method the options given "
            f"imply (-k, --weights: simhash; --num-perm, --scheme: minhash), else {DEFAULT_METHOD}].",
        ),
        setting_option(
            "shingle",
            help=f"Features [default: {shingle_defaults()}]: "
            "word:K (K-word shingles), char:K (K characters, spaces removed) or "
            "stopword:K[:LIST] (word K-grams starting with a stop word of LIST: auto = "
            "English and Korean, en, ko, or a file with one word a line); add :multiset "
            "to count repeats (word:3:multiset).",
        ),
        setting_option(
            "hash_name", old="--hash", help="Feature hash: XXH64, or the upper 64 bits of MD5."
        ),
        setting_option(
            "weights",
            help="SimHash weights: 1 per distinct shingle, term frequency, or inverse document "
            "frequency in the corpus (idf: with fingerprint and dedup; --idf-in/--idf-out).",
        ),
        setting_option("num_perm", help="MinHash permutations."),
        setting_option("seed", help="MinHash seed."),
        setting_option("scheme", help=SCHEME_HELP),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def shingle_defaults() -> str:
    """The default shingles of each method, as help texts give them. O(methods).

    Example:
        >>> shingle_defaults()
        'word:3 with --method simhash, char:4 with minhash'
    """
    first, *others = METHODS
    return ", ".join(
        [f"{DEFAULT_SHINGLES[first]} with --method {first}"]
        + [f"{DEFAULT_SHINGLES[m]} with {m}" for m in others]
    )


def setting_option(name: str, *decls: str, old: str | None = None, **attrs):
    """A click option for the :class:`~neardup.settings.Settings` field ``name``, spelled
    ``--name-with-dashes`` (``decls`` adds spellings, e.g. ``-k``, or a Python name of its
    own), with the field's default, type and choices (:data:`neardup.settings.CHOICES`), shown
    in --help; ``attrs`` are click's and override them (a command's own default, ``help``).
    ``old``: the flag's former spelling, still accepted (:class:`RenamedOption`). O(fields).

    Example: ``@setting_option("hamming_k", "-k", help="Largest Hamming distance.")`` gives
    ``-k, --hamming-k INTEGER  Largest Hamming distance.  [default: 3]``."""
    field_default = setting_default(name)
    attrs.setdefault("default", field_default)
    if name in CHOICES:
        attrs.setdefault("type", click.Choice(CHOICES[name]))
    elif field_default is not None:
        attrs.setdefault("type", type(field_default))
    attrs.setdefault("show_default", attrs["default"] is not None)
    if old is not None:
        attrs.update(cls=RenamedOption, old=old)
    names = [f"--{name.replace('_', '-')}", *decls]
    if not any(d.isidentifier() for d in decls):
        names.append(name)
    return click.option(*names, **attrs)


class RenamedOption(click.Option):
    """An option whose flag was renamed: the ``old`` spelling is still accepted for one
    release, hidden from --help, and using it prints a one-line deprecation note on stderr.
    Both spellings at once is a usage error. For options that take a value, and flags.

    Example: ``click.option("--from-fingerprints", is_flag=True, cls=RenamedOption,
    old="--fingerprints")``: ``--fingerprints`` works, with ``neardup: warning: --fingerprints
    is deprecated; use --from-fingerprints``."""

    def __init__(self, *args, old: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.old = old

    @property
    def _old_key(self) -> str:
        # Where the parser puts a value given with the old spelling (no parameter has a space).
        return f"{self.name} {self.old}"

    @property
    def _new(self) -> str:
        return max(self.opts, key=len)

    def add_to_parser(self, parser, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        if self.is_flag:
            parser.add_option(
                obj=self, opts=[self.old], dest=self._old_key, action="store_const", const=True
            )
        else:
            parser.add_option(obj=self, opts=[self.old], dest=self._old_key, nargs=self.nargs)

    def handle_parse_result(self, ctx: click.Context, opts, args):
        if self._old_key in opts:
            if self.name in opts:
                raise click.UsageError(
                    f"{self.old} is the old name of {self._new}; give {self._new} alone", ctx
                )
            click.echo(f"neardup: warning: {self.old} is deprecated; use {self._new}", err=True)
            opts = {**opts, self.name: opts[self._old_key]}
        return super().handle_parse_result(ctx, opts, args)
