"""``neardup compare`` and ``neardup tune``: every similarity measure between two texts, and
the LSH bands and rows that ``neardup dedup`` uses for a threshold."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import numpy as np

from neardup.cli.options import CONTEXT, handle_errors, setting_option
from neardup.io.files import read_text
from neardup.settings import DEFAULT_METHOD, DEFAULT_SHINGLES, Settings

_PATH_LIKE = re.compile(r"\S*[/\\]\S*|\S+\.[A-Za-z0-9]{1,8}")


def _text_argument(value: str, source: str) -> str:
    """The text an argument of `compare` stands for: ``source`` "text" takes it literally,
    "file" reads the file it names; "auto" reads an existing file, refuses a missing one that
    looks like a path (a single word with a folder separator or an extension) and takes
    anything else literally."""
    path = Path(value)
    if source == "text":
        return value
    named = source == "file" or _PATH_LIKE.fullmatch(value)
    if path.is_file() or (named and path.is_dir()):
        return read_text(path)  # a directory: the error that says so
    if named:
        raise FileNotFoundError(
            f"no such file: {value}"
            + ("" if source == "file" else " (pass --text to compare it as a literal string)")
        )
    return value


def _definition_units(offsets: np.ndarray, values: np.ndarray) -> dict:
    """Which unit decided ``definition_lcs`` for two texts' units (``auto``): ``"word"``,
    ``"character"`` (Chinese, Japanese, or a Korean text against one without Hangul) or
    ``"eojeol"`` (two Korean texts), with the character value of a Korean pair beside it for
    comparison (``definition_characters``: the rule before Korean counted eojeol)."""
    from neardup.eojeol import CHARACTER, eojeol_pairs
    from neardup.lcs import lcs_lengths

    pair = (np.array([0]), np.array([1]))
    if np.isnan(eojeol_pairs(offsets, values, *pair)[0]):
        characters = values.size and bool((values.astype(np.uint64) & CHARACTER).all())
        return {"definition_unit": "character" if characters else "word"}
    top = int(np.diff(offsets).max())
    by_characters = float(lcs_lengths(offsets, values, *pair)[0]) / top
    return {"definition_characters": by_characters, "definition_unit": "eojeol"}


@click.command(context_settings=CONTEXT)
@click.argument("a")
@click.argument("b")
@click.option(
    "--unit",
    type=click.Choice(["char", "word", "jamo", "syllable"]),
    default="word",
    show_default=True,
    help="Unit of edit distance, LCS and cosine.",
)
@setting_option(
    "shingle",
    default=DEFAULT_SHINGLES[DEFAULT_METHOD],
    help="Shingles for Jaccard, SimHash, MinHash.",
)
@setting_option("num_perm", help="MinHash permutations.")
@setting_option("hash_name", old="--hash")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--text", "source", flag_value="text", help="A and B are texts, even where they name files."
)
@click.option(
    "--file",
    "source",
    flag_value="file",
    help="A and B are files (an error when one does not exist).",
)
@click.option("--auto", "source", flag_value="auto", default=True, hidden=True)
@handle_errors
def compare(a, b, unit, shingle, num_perm, hash_name, as_json, source):
    """Every similarity measure between two texts (files, or literal strings: an argument
    naming an existing file is read; one that looks like a path but does not exist is an
    error; --text and --file decide explicitly), and the
    verdict of the near-duplicate definition as `neardup dedup` applies it by default (LCS
    resemblance ≥ 0.8: words; characters in Chinese and Japanese text; eojeol, aligned by
    characters, in Korean text), and the unit that decided it.

    \b
    Examples:
      neardup compare a.txt b.txt
      neardup compare "the cat sat on the mat" "the cat sat on a mat" --unit char
    """
    from neardup.similarity import compare as compare_texts

    text_a, text_b = _text_argument(a, source), _text_argument(b, source)
    result = compare_texts(
        text_a, text_b, unit=unit, shingle=shingle, num_perm=num_perm, hash_name=hash_name
    )
    rule = Settings().verification  # dedup's: LCS resemblance at its default threshold
    offsets, values = rule.prepare([text_a, text_b], shingle, hash_name)
    resemblance = float(
        rule.similarity(offsets, values, np.array([0]), np.array([1]), exact=True)[0]
    )
    result["definition_lcs"] = resemblance
    result.update(_definition_units(offsets, values))
    result["near_duplicate"] = "yes" if resemblance >= rule.threshold else "no"
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"unit={unit}  shingle={shingle}  num_perm={num_perm}",
        caption=(
            f"definition_lcs: LCS / the longer text's units, what `neardup dedup` decides by "
            f"(near_duplicate: ≥ {rule.threshold:g}; definition_unit: words, characters, or eojeol "
            "for Korean); lcs_resemblance: LCS / (|A| + |B| − "
            "LCS) of --unit, for comparison"
        ),
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    Console().print(table)


@click.command(context_settings=CONTEXT)
@setting_option("threshold", help="The near-duplicate threshold, as `neardup dedup --threshold`.")
@setting_option("num_perm", help="MinHash permutations.")
@setting_option(
    "verify",
    help="The verification, as `neardup dedup --verify`: it decides which Jaccard the "
    "bands are tuned for (LCS at T: Jaccard T/2).",
)
@click.option(
    "--fp-weight",
    type=float,
    default=None,
    help="Tune for a Jaccard of --threshold with this weight of false positives "
    "(with --fn-weight) instead of as dedup does.",
)
@click.option(
    "--fn-weight", type=float, default=None, help="Weight of false negatives (see --fp-weight)."
)
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
        raise ValueError(
            "give --fp-weight and --fn-weight together (or neither: tune as dedup does)"
        )
    if fp_weight is None:
        settings = Settings(method="minhash", threshold=threshold, num_perm=num_perm, verify=verify)
        bands, rows = settings.banding()
        lcs = settings.verify is not None and settings.verify_measure == "lcs"
        tuned_for = settings.verify / 2 if lcs else threshold
        note = f" (half of --verify lcs:{settings.verify:g})" if lcs else ""
        params = LSHParams(
            bands,
            rows,
            tuned_for,
            num_perm,
            false_positive_area(tuned_for, bands, rows),
            false_negative_area(tuned_for, bands, rows),
        )
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
        click.echo(
            json.dumps(
                {
                    "threshold": threshold,
                    "num_perm": num_perm,
                    "bands": params.bands,
                    "rows": params.rows,
                    "approx_threshold": params.approx_threshold,
                    "fp_area": params.fp_area,
                    "fn_area": params.fn_area,
                    "candidate_probability": {str(s): float(p) for s, p in zip(sims, probs)},
                },
                indent=2,
            )
        )
        return
    click.echo(
        f"Jaccard {threshold:g}{note}, num_perm {num_perm}: bands b = {params.bands}, rows r = {params.rows} "
        f"(uses {params.bands * params.rows} values; (1/b)^(1/r) = {params.approx_threshold:.3f})"
    )
    click.echo(
        f"false-positive area {params.fp_area:.5f}, false-negative area {params.fn_area:.5f}"
    )
    click.echo(f"{'similarity':>10}  {'P(candidate)':>12}  {'P(missed)':>10}")
    for s, p in zip(sims, probs):
        marker = "  ← threshold" if s == threshold else ""
        click.echo(f"{s:>10.2f}  {p:>12.5f}  {1 - p:>10.5f}{marker}")
    if plot:
        click.echo(f"S-curve written to {plot}")
