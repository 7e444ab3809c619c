"""What the ``neardup index`` commands and ``neardup serve`` share: their options (the index
folder, the sources, the settings, the probes) and the columns of their answers."""

from __future__ import annotations

import click

from neardup.cli.options import (
    SCHEME_HELP,
    RenamedOption,
    setting_option,
    settings_fields,
    shingle_defaults,
)
from neardup.index import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    NearDupIndex,
    index_settings,
)
from neardup.io import (
    FINGERPRINT_FORMATS,
    read_documents,
    read_fingerprints,
)
from neardup.pipeline import signatures
from neardup.settings import (
    CHOICES,
    DEFAULT_HAMMING_K,
    DEFAULT_METHOD,
    DEFAULT_NUM_PERM,
    DEFAULT_SCHEME,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_VERIFY,
    DEFAULT_WEIGHTS,
    Settings,
)


def directory_option(command):
    """-d/--dir DIR, the index directory, for the commands that open an index (``directory``).

    Example: ``@directory_option`` above a command function gives it ``directory``."""
    return click.option(
        "-d", "--dir", "directory", required=True, metavar="DIR", help="The index directory."
    )(command)


def source_options(command):
    """The options that say what a command reads: texts (the reader's options) or, with
    ``--from-fingerprints``, SimHash fingerprint rows."""
    options = [
        click.option(
            "--from-fingerprints",
            is_flag=True,
            cls=RenamedOption,
            old="--fingerprints",
            help="INPUTS hold fingerprint rows (`id <TAB> fingerprint <TAB> timestamp`, as "
            "`neardup fingerprint` writes them) instead of documents.",
        ),
        click.option(
            "--fingerprint-format",
            type=click.Choice(FINGERPRINT_FORMATS),
            default="auto",
            show_default=True,
            help="With --from-fingerprints: how fingerprints are written.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def synchronous_option(description: str):
    """--synchronous normal|full, the durability of the adds of the commands that write an
    index (``synchronous``, as :class:`NearDupIndex` takes it), with the command's own help
    text ``description``.

    Example: ``@synchronous_option("normal: survives a crash; full: also power loss.")``."""
    return click.option(
        "--synchronous",
        type=click.Choice(["normal", "full"]),
        default="normal",
        show_default=True,
        help=description,
    )


def settings_options(command):
    """The settings of a new index: ``dedup``'s options and defaults for its method."""
    options = [
        setting_option(
            "method",
            default=None,
            help="SimHash fingerprints (Hamming distance, permutation tables) or MinHash "
            "signatures (LSH bands, candidates verified as `neardup dedup` verifies them; the "
            "index then keeps the texts, compressed) [default: the method the options given "
            f"imply (-k: simhash, --num-perm: minhash …), else {DEFAULT_METHOD}; simhash with "
            "--from-fingerprints].",
        ),
        # The method's own options default to None, so that the other method's are refused
        # only when given; --help shows the defaults they take.
        setting_option(
            "hamming_k",
            "-k",
            default=None,
            help="SimHash: near-duplicates differ in at most this many of 64 bits "
            f"[default: {DEFAULT_HAMMING_K}].",
        ),
        setting_option(
            "shingle",
            help=f"Features: word:K or char:K [default: {shingle_defaults()}].",
        ),
        setting_option("hash_name", old="--hash", help="Feature hash."),
        setting_option(
            "weights",
            # An index stores no IDF table, so its fingerprints use fixed weights.
            type=click.Choice([w for w in CHOICES["weights"] if w != "idf"]),
            default=None,
            help=f"SimHash weights [default: {DEFAULT_WEIGHTS}].",
        ),
        setting_option(
            "num_perm", default=None, help=f"MinHash permutations [default: {DEFAULT_NUM_PERM}]."
        ),
        setting_option("seed", default=None, help=f"MinHash seed [default: {DEFAULT_SEED}]."),
        setting_option("scheme", default=None, help=f"{SCHEME_HELP} [default: {DEFAULT_SCHEME}]"),
        setting_option(
            "threshold",
            default=None,
            help=f"MinHash: near-duplicate threshold of the verification (or of the "
            f"MinHash estimate with --verify none) [default: {DEFAULT_THRESHOLD}].",
        ),
        setting_option(
            "bands",
            type=int,
            help="MinHash: force the number of LSH bands (with --rows) [default: tuned "
            "as `neardup dedup` tunes them].",
        ),
        setting_option("rows", type=int, help="MinHash: force the rows per band (with --bands)."),
        setting_option(
            "verify",
            default=None,
            help="MinHash: how candidates are verified, as `neardup dedup --verify`: "
            "auto (LCS resemblance at --threshold), lcs:T, jaccard:T or none "
            f"[default: {DEFAULT_VERIFY}].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def create_keywords(
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
) -> dict:
    """The settings keywords of :meth:`NearDupIndex.create` from the command-line options,
    checked by :func:`~neardup.index.settings.index_settings` before anything is read (an
    option of the other method is refused in its command-line spelling)."""
    keywords = {
        "method": method,
        "hamming_k": hamming_k,
        "shingle": shingle,
        "hash_name": hash_name,
        "weights": weights,
        "num_perm": num_perm,
        "seed": seed,
        "scheme": scheme,
        "threshold": threshold,
        "bands": bands,
        "rows": rows,
        "verify": verify,
    }
    index_settings(**keywords, spell=lambda name: "--" + name.replace("_", "-"))
    return keywords


def method_option(command):
    """``--method`` of the commands that open an existing index: the method it must have."""
    return setting_option(
        "method",
        default=None,
        help="Expect an index of this method (default: any); another is refused.",
    )(command)


def probe_options(limit_help: str):
    """--method, -k, --limit and --count-all of the commands that probe the index."""

    def decorate(command):
        command = click.option(
            "--count-all",
            is_flag=True,
            help="MinHash index: verify every candidate, so that match_count counts every "
            "match (by default a probe with many candidates has each group's verified only "
            "until --limit match: match_count is then a lower bound, match_count_exact false).",
        )(command)
        command = click.option(
            "--limit",
            type=click.IntRange(0, MAX_LIMIT),
            default=DEFAULT_LIMIT,
            show_default=True,
            help=limit_help,
        )(command)
        command = setting_option(
            "hamming_k",
            "-k",
            default=None,
            help="SimHash index: largest distance, at most the index's (default: the index's).",
        )(command)
        return method_option(command)

    return decorate


# The settings fixed for an index, per method (in the --summary-out JSON of its commands).
_INDEX_SETTINGS = {
    "simhash": ("method", "shingle", "hash_name", "weights", "hamming_k"),
    "minhash": (
        "method",
        "shingle",
        "hash_name",
        "num_perm",
        "seed",
        "scheme",
        "threshold",
        "bands",
        "rows",
        "verify",
        "verify_threshold",
    ),
}


def index_fields(settings: Settings) -> dict:
    """The --summary-out settings of an index."""
    return settings_fields(settings, _INDEX_SETTINGS[settings.method])


def fingerprint_batch(batch, settings: Settings) -> dict:
    """The probe keywords of a batch: SimHash fingerprints computed here (in the reader's
    worker threads), or the texts for a MinHash index (signed and verified under its lock)."""
    if settings.method == "minhash":
        return {"texts": batch.texts}
    return {"fingerprints": signatures(batch.texts, settings).signature}


def source_batches(
    index: NearDupIndex,
    inputs,
    from_fingerprints,
    fingerprint_format,
    reading,
    workers,
    reporter,
    read_counts: dict[str, int],
):
    """(ids, probe keywords, int64 µs timestamps) per input batch, in input order; the
    keywords are ``fingerprints`` (SimHash) or ``texts`` (MinHash). ``read_counts["skipped
    rows"]`` counts the bad rows skipped (``--on-error skip``) as they are read."""
    if from_fingerprints:
        table = read_fingerprints(
            list(inputs), on_error=reading["on_error"], fingerprint_format=fingerprint_format
        )
        read_counts["skipped rows"] = table.stats.skipped
        step = 10_000
        for start in range(0, len(table), step):
            stop = min(len(table), start + step)
            yield (
                table.ids[start:stop].to_pylist(),
                {"fingerprints": table.fingerprints[start:stop]},
                table.timestamps[start:stop],
            )
        return
    from neardup.engines.workers import check_workers, ordered_map

    reader = read_documents(list(inputs), **reading)
    reporter.reading(reader)
    for batch, probe in ordered_map(
        fingerprint_batch, reader, check_workers(workers), index.settings
    ):
        reporter.batch(batch)
        read_counts["skipped rows"] = reader.stats.skipped
        yield batch.ids, probe, batch.timestamps
    read_counts["skipped rows"] = reader.stats.skipped


def measure_column(method: str) -> str:
    """The name of a match's value: ``distance`` (SimHash) or ``similarity`` (MinHash)."""
    return "similarity" if method == "minhash" else "distance"


def match_value(match) -> float | int | None:
    """A match's measure as the output files write it: its Hamming distance (SimHash) or its
    similarity (MinHash) to 6 decimals, as PAIRS writes similarities."""
    return match.distance if match.similarity is None else round(match.similarity, 6)


def result_columns(results, method: str) -> dict:
    """The columns of a decisions file: one row per added or queried document, with its
    nearest match (:func:`measure_column` names the measure's column) and, MinHash, whether
    its match count is exact. O(len(results))."""
    return {
        "id": [r.id for r in results],
        "status": [r.status for r in results],
        "duplicate_id": [r.duplicate_id for r in results],
        "original_id": [r.original_id for r in results],
        "match_count": [r.match_count for r in results],
        "nearest_id": [r.matches[0].id if r.matches else None for r in results],
        measure_column(method): [match_value(r.matches[0]) if r.matches else None for r in results],
        **(
            {"match_count_exact": [r.match_count_exact for r in results]}
            if method == "minhash"
            else {}
        ),
    }
