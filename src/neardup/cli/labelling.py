"""``neardup generate``, ``neardup sample`` and ``neardup label``: labelled data for measuring
quality — synthetic near-duplicates of real texts, stratified samples of candidate pairs, and an
interactive labelling session."""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator

import click

from neardup import signals
from neardup.cli.options import (
    CONTEXT,
    Reporter,
    handle_errors,
    input_options,
    resolve_method,
    signature_options,
)
from neardup.io import check_outputs, output_set, read_documents, write_table
from neardup.quality import synth
from neardup.quality.sampling import (
    ANSWERS,
    LabelSession,
    describe_value,
    diff_markup,
    read_sheet,
    same_after_normalisation,
    sample_signatures,
    sheet_columns,
    sheet_format,
    write_sheet,
)
from neardup.settings import Settings

__all__ = ["generate", "sample", "label"]


@click.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option(
    "-o", "--output", required=True, help="DOCS file: id, text, ts, base_id, edit, lang (.jsonl)."
)
@click.option("--pairs-out", required=True, help="PAIRS file: id_a, id_b, label, category (.tsv).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of every random choice.")
@click.option(
    "--per-base", type=int, default=2, show_default=True, help="Edited copies per base text."
)
@click.option(
    "--edits",
    default="light,heavy,template",
    show_default=True,
    help="Edits to make: groups light, heavy, template, all, or edit names "
    f"({', '.join(synth.EDITS)}), comma-separated.",
)
@click.option(
    "--max-bases", type=int, default=None, help="Use at most N base texts (a seeded random sample)."
)
@click.option(
    "--min-words", type=int, default=0, show_default=True, help="Skip base texts with fewer words."
)
@click.option(
    "--hot-template",
    type=int,
    default=0,
    show_default=True,
    help="Also add N copies of one template that differ only in a name (skew tests).",
)
@click.option(
    "--language",
    type=click.Choice(synth.LANGUAGES),
    default="auto",
    show_default=True,
    help="Language of the base texts (auto: per text; ko enables the Korean edits).",
)
@click.option(
    "--keep-similar-bases",
    is_flag=True,
    help="Keep base texts that are near-duplicates of an earlier one (default: drop them).",
)
@input_options
@handle_errors
def generate(
    inputs,
    output,
    pairs_out,
    seed,
    per_base,
    edits,
    max_bases,
    min_words,
    hot_template,
    language,
    keep_similar_bases,
    reading,
    workers,
    quiet,
):
    """Derive labelled near-duplicates from real texts.

    Every base text is kept and edited copies are added, each paired with its base and labelled
    with the definition of a near-duplicate (about 80% or more of the words kept in order,
    formatting aside): light edits (label 1) rewrap, punctuation, boilerplate, numbers,
    word_edits, sentence, truncate, and for Korean spacing and particles; heavy edits (label 0)
    heavy_words, half, insertion; hard negatives (label 0) template: two different texts in one
    long shared paragraph. Base texts under 8 words only get formatting edits.

    DOCS has id, text, ts, base_id, edit, lang; PAIRS has id_a, id_b, label, category (the layout
    of the labelled data sets), ready for `neardup dedup` and `neardup evaluate --truth`.

    \b
    Examples:
      neardup generate debian_en.jsonl -o docs.jsonl --pairs-out pairs.tsv --max-bases 1000
      neardup generate ko.jsonl -o docs.jsonl --pairs-out pairs.tsv --edits light --per-base 3
      neardup generate bases.jsonl -o docs.jsonl --pairs-out pairs.tsv --hot-template 2000
    """
    chosen = synth.parse_edits(edits)
    check_outputs([], inputs, tables=[output, pairs_out])
    with Reporter(quiet) as reporter:
        batch = read_documents(list(inputs), **reading).read_all()
        reporter.batch(batch)
        reporter.stage("editing")
        corpus = synth.generate(
            batch.texts,
            seed=seed,
            per_base=per_base,
            edits=chosen,
            language=language,
            base_ids=batch.ids,
            hot_template=hot_template,
            max_bases=max_bases,
            min_words=min_words,
            distinct_bases=not keep_similar_bases,
            workers=workers,
        )
        reporter.stage("writing")
        with output_set():
            synth.write(corpus, output, pairs_out)
    stats = corpus.stats
    rows: list[tuple[str, object]] = [
        ("bases read", stats["bases_read"]),
        ("  skipped: no words", stats["skipped_empty"]),
        ("  skipped: under --min-words", stats["skipped_short"]),
        ("  skipped: near-duplicate of another base", stats["skipped_duplicate"]),
        ("  skipped: not in the --max-bases sample", stats["skipped_sample"]),
        ("bases used", stats["bases_used"]),
        ("documents written", len(corpus.docs)),
        ("pairs written", len(corpus.pairs)),
    ]
    counts = Counter(corpus.pairs["category"].tolist())
    for category in list(synth.EDITS) + [synth.HOT_CATEGORY]:
        if counts[category] or stats["not_applicable"][category]:
            value = f"{counts[category]:,} pairs, label {synth.EDIT_LABELS[category]}"
            if stats["not_applicable"][category]:
                value += f" ({stats['not_applicable'][category]:,} bases could not take it)"
            rows.append((f"  {category}", value))
    rows.append(("seconds", time.perf_counter() - reporter.started))
    reporter.summary(rows)


@click.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="Labelling sheet to write (.jsonl or .tsv).")
@signature_options
@click.option(
    "--per-stratum", type=int, default=50, show_default=True, help="Pairs drawn per stratum."
)
@click.option(
    "--max-distance",
    type=int,
    default=None,
    help="SimHash: candidates within this many bits, one stratum per distance. [default: 16]",
)
@click.option(
    "--min-similarity",
    type=float,
    default=None,
    help="MinHash: candidates with exact Jaccard at least this, strata of 0.05. [default: 0.3]",
)
@click.option(
    "--strata-out",
    default=None,
    help="Also write the strata: stratum, low, high, population, drawn, weight.",
)
@input_options
@handle_errors
def sample(
    inputs,
    output,
    method,
    shingle,
    hash_name,
    weights,
    num_perm,
    seed,
    scheme,
    per_stratum,
    max_distance,
    min_similarity,
    strata_out,
    reading,
    workers,
    quiet,
):
    """Draw a stratified sample of candidate pairs and write a labelling sheet.

    Candidates cover the whole range of interest: for SimHash every pair within --max-distance
    bits (one stratum per distance), for MinHash every pair with exact Jaccard ≥ --min-similarity
    found by LSH (strata of width 0.05). Documents with the same normalised text count as one.
    Up to --per-stratum pairs are drawn from each stratum at random (--seed also seeds the
    draw), and the sheet records each stratum's population and each row's weight
    (population / drawn) so that precision can be re-weighted to all candidates.

    The sheet has id_a, id_b, distance|similarity, stratum, population, weight, text_a, text_b
    and an empty label column; fill it with `neardup label SHEET`.

    \b
    Examples:
      neardup sample docs.jsonl -o sheet.tsv --per-stratum 30
      neardup sample docs.jsonl -o sheet.jsonl --method minhash --min-similarity 0.2
      neardup sample docs.jsonl -o sheet.tsv --shingle char:5 --max-distance 20 --strata-out strata.tsv
    """
    from neardup.engines.local import signatures_parallel

    if method is None and max_distance is not None:
        method = "simhash"  # distances are SimHash's
    method = resolve_method(method)
    if sheet_format(output) is None:
        raise ValueError(f"output must be a .jsonl or .tsv sheet; got {output!r}")
    check_outputs([output], inputs, tables=[strata_out])
    if method == "simhash":
        if min_similarity is not None:
            raise ValueError(
                "--min-similarity applies to --method minhash; use --max-distance with simhash"
            )
        max_distance = 16 if max_distance is None else max_distance
        settings = Settings(
            method="simhash", shingle=shingle, hash_name=hash_name, weights=weights, verify=None
        )
    else:
        if max_distance is not None:
            raise ValueError(
                "--max-distance applies to --method simhash; use --min-similarity with minhash"
            )
        min_similarity = 0.3 if min_similarity is None else min_similarity
        if not 0.0 < min_similarity < 1.0:
            raise ValueError(f"min_similarity must be in (0, 1); got {min_similarity}")
        settings = Settings(
            method="minhash",
            shingle=shingle,
            hash_name=hash_name,
            num_perm=num_perm,
            seed=seed,
            scheme=scheme,
            threshold=min_similarity,
            verify=min_similarity,
        )
    with Reporter(quiet) as reporter:
        batch = read_documents(list(inputs), **reading).read_all()
        reporter.batch(batch)
        reporter.stage("signatures")
        sig = signatures_parallel(batch.texts, settings, workers)
        reporter.stage("candidates")
        result = sample_signatures(
            sig,
            settings,
            per_stratum=per_stratum,
            max_distance=max_distance if max_distance is not None else 16,
            min_similarity=min_similarity if min_similarity is not None else 0.3,
            seed=seed,
        )
        reporter.stage("writing")
        with output_set():
            write_sheet(output, sheet_columns(result, batch.ids, batch.texts))
            if strata_out:
                write_table(
                    strata_out,
                    {
                        "stratum": [s.name for s in result.strata],
                        "low": [s.low for s in result.strata],
                        "high": [s.high for s in result.strata],
                        "population": [s.population for s in result.strata],
                        "drawn": [s.drawn for s in result.strata],
                        "weight": [round(s.weight, 6) for s in result.strata],
                    },
                )
    rows: list[tuple[str, object]] = [
        ("documents", len(batch.ids)),
        ("same text as an earlier document", result.exact_duplicates),
        ("candidate pairs", result.candidates),
        ("pairs drawn", len(result)),
    ]
    rows += [
        (f"  stratum {s.name}", f"{s.population:,} candidates, {s.drawn:,} drawn")
        for s in result.strata
    ]
    rows.append(("seconds", time.perf_counter() - reporter.started))
    reporter.summary(rows)


_PROMPT = "  ".join(f"[{k}] {v}" for k, v in ANSWERS.items()) + " > "


def _show(console, session: LabelSession, show_diff: bool) -> None:
    from rich.markup import escape
    from rich.rule import Rule

    sheet = session.sheet
    row = sheet.rows[session.current]
    head = (
        f"pair {session.current + 1} of {len(sheet)}  ·  {sheet.labelled} of {len(sheet)} labelled"
    )
    console.print(Rule(head))
    facts = [f"[bold]{escape(str(row['id_a']))}[/bold] ↔ [bold]{escape(str(row['id_b']))}[/bold]"]
    value = describe_value(row)
    if value:
        facts.append(value)
    if row.get("stratum") not in (None, ""):
        facts.append(f"stratum {escape(str(row['stratum']))}")
    if row["label"] is not None:
        facts.append(f"current label {row['label']}")
    console.print("  ·  ".join(facts), soft_wrap=True)
    text_a, text_b = str(row.get("text_a") or ""), str(row.get("text_b") or "")
    kept = synth.words_kept(text_a, text_b)
    words = (
        f"words {len(text_a.split()):,} / {len(text_b.split()):,}  ·  "
        f"{kept:.0%} of the longer text's words kept in order"
    )
    if same_after_normalisation(text_a, text_b):
        words += "  ·  same text apart from formatting"
    console.print(f"[dim]{words}[/dim]")
    if show_diff:
        console.print(diff_markup(text_a, text_b, plain=console.color_system is None))
    else:
        console.print("[bold]A[/bold]")
        console.print(escape(text_a))
        console.print("[bold]B[/bold]")
        console.print(escape(text_b))


# An escape sequence (arrows, function keys, Alt+key) and what may be the start of one.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|[^\[O\x1b])", re.S)
_ESCAPE_START = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|O)?\Z")
_ESCAPE_WAIT = 0.05  # seconds to wait for the rest of an escape sequence; a lone Esc has none
_STOP_KEYS = ("\x03", "\x04")  # Ctrl-C and Ctrl-D stop the session like q


def _first_key(text: str, complete: bool) -> str | None:
    """The key at the start of ``text``: one character, or a whole escape sequence (so that its
    letters are not taken for answers: the down arrow ends in B). None if ``text`` is empty, or
    may be an escape sequence whose rest has not arrived yet and ``complete`` is False."""
    if not text:
        return None
    if text[0] != "\x1b":
        return text[0]
    match = _ESCAPE.match(text)
    if match:
        return match.group()
    if not complete and _ESCAPE_START.match(text):
        return None
    return "\x1b"


@contextlib.contextmanager
def _cbreak(fd: int) -> Iterator[None]:
    """Hold the terminal ``fd`` in cbreak mode (keys one by one, no echo) until the end of the
    block, then restore its settings, also on an exception or SIGTERM (which the ``neardup``
    group turns into SystemExit).

    The mode is set once for the whole session and without flushing input (TCSANOW, not the
    TCSAFLUSH of ``tty.setraw`` that ``click.getchar`` applies per key), so keys typed while a
    pair is drawn wait in the terminal's buffer instead of being discarded.
    """
    import termios  # POSIX only; imported here so that generate and sample do not need it

    saved = termios.tcgetattr(fd)
    mode = termios.tcgetattr(fd)
    # No ISIG: Ctrl-C arrives as a key after those typed before it (a signal would flush them).
    mode[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _TerminalKeys:
    """Keys read from the terminal ``fd`` (in cbreak mode, see :func:`_cbreak`), every byte
    kept: all that is available is read at once and decoded incrementally, so keys typed ahead
    and multi-byte characters split across reads come out one key at a time, in order."""

    def __init__(self, fd: int, encoding: str | None, wakeup: int | None = None) -> None:
        self.fd = fd
        self.wakeup = wakeup  # see neardup.signals.wakeup
        self._decoder = codecs.getincrementaldecoder(encoding or "utf-8")(errors="replace")
        self._pending = ""

    def read(self) -> str | None:
        """The next key; None on Ctrl-C, Ctrl-D or the end of the terminal's input."""
        while True:
            key = _first_key(self._pending, complete=False)
            if key is not None:
                break
            if not self._pending:
                if not self._fill(None):
                    return None
            elif not self._fill(_ESCAPE_WAIT):
                key = _first_key(self._pending, complete=True)
                break
        self._pending = self._pending[len(key) :]
        return None if key in _STOP_KEYS else key

    def _fill(self, timeout: float | None) -> bool:
        """Add what the terminal has to the pending keys, waiting at most ``timeout`` seconds
        (None: until something comes); False at the end of input or the timeout."""
        if not signals.wait_readable(self.fd, self.wakeup, timeout):
            return False
        data = os.read(self.fd, 4096)
        self._pending += self._decoder.decode(data, final=not data)
        return bool(data)


def _read_answer(keys: _TerminalKeys | None) -> str | None:
    """One answer: a key press on a terminal, else one line of stdin (None at the end)."""
    if keys is not None:
        key = keys.read()
        # Echo the key (the terminal does not in cbreak mode), not the controls of a sequence.
        click.echo(key if key is not None and key.isprintable() else "")
        return key
    line = sys.stdin.readline()
    if not line:
        return None
    return line


@click.command(context_settings=CONTEXT)
@click.argument("sheet")
@click.option(
    "--show-diff/--no-diff",
    default=True,
    show_default=True,
    help="Show a word-level diff of the two texts, or both texts in full.",
)
@handle_errors
def label(sheet, show_diff):
    """Label the pairs of a sheet interactively: y = near-duplicate, n = not, s = skip,
    b = back to the previous pair, q = quit.

    Each pair shows the IDs, the distance or similarity, and a word-level diff (removed words
    red and struck through, added words green). The sheet is rewritten after every answer, so a
    session can stop at any time; the next one starts at the first unlabelled pair. Labels are
    written as 1 / 0, unlabelled and skipped pairs stay empty. Answers are single keys on a
    terminal (keys typed ahead are kept and applied in order; Ctrl-C stops like q), and lines
    when stdin is not a terminal (one answer per line).

    \b
    Examples:
      neardup label sheet.tsv
      neardup label sheet.jsonl --no-diff
      printf 'y\\nn\\nq\\n' | neardup label sheet.tsv
    """
    from rich.console import Console

    data = read_sheet(sheet)
    session = LabelSession(data)
    console = Console(highlight=False)
    if session.done:
        state = (
            f"all {len(data):,} pairs of {sheet} are labelled"
            if len(data)
            else f"{sheet} has no pairs"
        )
        console.print(state, soft_wrap=True)
        return
    with contextlib.ExitStack() as stack:
        keys = None
        if sys.stdin.isatty():
            wakeup = stack.enter_context(signals.wakeup())
            keys = _TerminalKeys(sys.stdin.fileno(), sys.stdin.encoding, wakeup)
            stack.enter_context(_cbreak(keys.fd))
        while not session.done:
            _show(console, session, show_diff)
            while True:
                click.echo(_PROMPT, nl=False)
                answer = _read_answer(keys)
                if answer is None:
                    answer = "q"
                if keys is None:
                    click.echo(answer.strip())
                going = session.answer(answer)
                if session.message:
                    console.print(f"[yellow]{session.message}[/yellow]")
                    continue
                break
            if not going:
                break
    positive = sum(row["label"] == 1 for row in data.rows)
    console.print(
        f"{data.labelled:,} of {len(data):,} pairs labelled ({positive:,} near-duplicates); "
        f"saved to {sheet}"
        + ("" if session.done else f"; run `neardup label {sheet}` again to continue"),
        soft_wrap=True,
    )
