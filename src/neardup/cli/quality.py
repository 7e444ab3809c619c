"""``neardup evaluate`` and ``neardup sweep``: measure a run against labelled answers and choose
its thresholds from the measurements (SPEC §8)."""

from __future__ import annotations

import json
import math
import sys

import click

from neardup import quality
from neardup.cli.options import (
    CONTEXT,
    Reporter,
    handle_errors,
    input_options,
    resolve_method,
    setting_option,
    signature_options,
)
from neardup.io import check_outputs, read_documents, write_table
from neardup.settings import Settings


def _console():
    from rich.console import Console

    # Off a terminal (pipes, files, tests) rich would squeeze wide tables into 80 columns.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _num(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}"


def _dump(data: dict) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def _scores(e: quality.Evaluation) -> list[tuple[str, object]]:
    """The headline columns of an evaluation: precision, recall, F1, TP, FP, FN."""
    return [
        ("precision", e.precision),
        ("recall", e.recall),
        ("F1", e.f1),
        ("TP", e.confusion.tp),
        ("FP", e.confusion.fp),
        ("FN", e.confusion.fn),
    ]


def _cluster_scores(e: quality.Evaluation) -> list[tuple[str, object]]:
    """The columns of an evaluation against cluster truth: ARI and the B-cubed scores."""
    return [
        ("ARI", e.ari),
        ("B³ precision", e.bcubed.precision),
        ("B³ recall", e.bcubed.recall),
        ("B³ F1", e.bcubed.f1),
    ]


def _score_table(evaluation: quality.Evaluation, title: str):
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    e = evaluation
    columns = _scores(e)
    if e.confusion.tn is not None and e.truth_kind == "pairs":
        columns.append(("TN", e.confusion.tn))
    if e.truth_kind == "clusters":
        columns += _cluster_scores(e)
    for name, _ in columns:
        table.add_column(name, justify="right")
    table.add_row(*[_num(v) for _, v in columns])
    return table


def _category_table(evaluation: quality.Evaluation):
    from rich.table import Table

    table = Table(title="per category", title_justify="left")
    for name in (
        "category",
        "pairs",
        "labelled positive",
        "predicted duplicate",
        "share predicted",
        "TP",
        "FP",
        "FN",
        "precision",
        "recall",
        "F1",
    ):
        table.add_column(name, justify="left" if name == "category" else "right")
    for c in evaluation.categories:
        table.add_row(
            c.category,
            _num(c.pairs),
            _num(c.positive),
            _num(c.predicted),
            _num(c.predicted_rate),
            _num(c.confusion.tp),
            _num(c.confusion.fp),
            _num(c.confusion.fn),
            _num(c.confusion.precision),
            _num(c.confusion.recall),
            _num(c.confusion.f1),
        )
    return table


def _facts(evaluation: quality.Evaluation) -> list[str]:
    e = evaluation
    lines = []
    if e.truth_kind == "pairs":
        lines.append(
            f"labelled pairs: {e.labelled_pairs:,} over {e.truth_ids:,} documents; "
            f"unlabelled predicted pairs (not counted): {e.unlabelled_predicted_pairs:,}"
        )
    else:
        lines.append(
            f"truth documents: {e.truth_ids:,}; predicted documents outside the truth "
            f"(ignored): {e.ignored_ids:,}"
        )
    if e.prediction_kind == "groups":
        lines.append(
            "truth documents missing from the prediction (counted as singletons): "
            f"{e.missing_ids:,}"
        )
    else:
        lines.append(f"truth documents in no predicted pair (singletons): {e.missing_ids:,}")
    lines.append(e.note[0].upper() + e.note[1:] + ".")
    return lines


@click.command(context_settings=CONTEXT)
@click.argument("prediction")
@click.option(
    "--truth",
    required=True,
    help="Labelled pairs (id_a, id_b, label [, category]) or clusters (id, cluster): "
    ".tsv .csv .jsonl .parquet.",
)
@click.option(
    "--positive-labels",
    default=None,
    help="Labels that mean near-duplicate, comma-separated, when labels are categories "
    "(e.g. cut,light); default: labels are 1/0 or true/false.",
)
@click.option(
    "--closure",
    is_flag=True,
    help="PAIRS prediction: a pair counts as predicted when its documents are connected "
    "through listed pairs, not only when it is listed.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@handle_errors
def evaluate(prediction, truth, positive_labels, closure, as_json):
    """Precision, recall and F1 of a prediction against hand-labelled truth.

    PREDICTION is a GROUPS file (id, duplicate_id, … as `neardup dedup` writes) or a PAIRS file
    (id_a, id_b, …). With labelled-pair truth the scores are computed over the labelled pairs
    only (a labelled pair is predicted a duplicate when both documents share a group, or the pair
    is listed), with a row per category; with cluster truth over all pairs of the truth's
    documents, plus the adjusted Rand index and B-cubed scores.

    \b
    Examples:
      neardup evaluate groups.tsv --truth pairs.tsv --positive-labels cut,light
      neardup evaluate groups.tsv --truth clusters.tsv --json
      neardup evaluate pairs.tsv --truth labelled.tsv --closure
    """
    truth_data = quality.read_truth(truth, positive_labels)
    pred = quality.read_prediction(prediction)
    result = quality.evaluate(pred, truth_data, closure=closure)
    if pred.kind == "groups" and result.missing_ids == result.truth_ids:
        raise ValueError(
            f"none of the {result.truth_ids:,} truth documents is in {prediction}; "
            "do the two files use the same IDs?"
        )
    if as_json:
        _dump({"prediction_file": prediction, "truth_file": truth, **result.to_dict()})
        return
    console = _console()
    title = (
        f"{pred.kind.upper()} prediction {prediction} vs "
        f"{'labelled pairs' if result.truth_kind == 'pairs' else 'clusters'} {truth}"
    )
    console.print(_score_table(result, title))
    if result.categories:
        console.print(_category_table(result))
    for line in _facts(result):
        console.print(line, soft_wrap=True)


def _parse_values(text: str | None, method: str) -> list | None:
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ValueError(f"values must list at least one setting; got {text!r}")
    try:
        return [int(x) for x in items] if method == "simhash" else [float(x) for x in items]
    except ValueError:
        what = "integers (Hamming k)" if method == "simhash" else "numbers (Jaccard thresholds)"
        raise ValueError(f"values must be comma-separated {what}; got {text!r}") from None


def _sweep_table(rows: list[quality.SweepRow], best, precise, verify: str):
    from rich.table import Table

    first = rows[0]
    simhash = first.parameter == "hamming_k"
    e0 = first.evaluation
    table = Table(
        title=f"sweep of {'Hamming k' if simhash else 'Jaccard threshold'} "
        f"({first.settings.method}, {first.settings.shingle}, grouping {first.settings.grouping}, "
        f"verify {verify})",
        title_justify="left",
    )
    heads = ["k" if simhash else "threshold"] + ([] if simhash else ["bands×rows"])
    heads += [name for name, _ in _scores(e0)]
    if e0.truth_kind == "clusters":
        heads += ["ARI", "B³ P", "B³ R", "B³ F1"]
    else:
        heads += [f"{c.category} %dup" for c in e0.categories]
    heads += ["groups", ""]
    for h in heads:
        table.add_column(h, justify="right")
    for r in rows:
        e = r.evaluation
        cells = [str(r.value) if simhash else f"{r.value:.2f}"]
        if not simhash:
            cells.append(f"{r.bands}×{r.rows}")
        cells += [_num(value) for _, value in _scores(e)]
        if e.truth_kind == "clusters":
            cells += [_num(value) for _, value in _cluster_scores(e)]
        else:
            cells += [
                _num(c.predicted_rate * 100 if c.pairs else math.nan, 1) for c in e.categories
            ]
        marks = []
        if r is best:
            marks.append("best F1")
        if r is precise:
            marks.append("best at high precision")
        cells += [_num(r.groups), ", ".join(marks)]
        table.add_row(*cells)
    return table


def _describe(row: quality.SweepRow | None) -> str:
    e = row.evaluation
    name = f"k = {row.value}" if row.parameter == "hamming_k" else f"threshold = {row.value:.2f}"
    return (
        f"{name} (precision {_num(e.precision, 3)}, recall {_num(e.recall, 3)}, F1 {_num(e.f1, 3)})"
    )


@click.command(context_settings=CONTEXT)
@click.argument("inputs", nargs=-1, required=True)
@click.option(
    "--truth",
    required=True,
    help="Labelled pairs (id_a, id_b, label [, category]) or clusters (id, cluster).",
)
@click.option(
    "--positive-labels",
    default=None,
    help="Labels that mean near-duplicate, comma-separated (e.g. cut,light).",
)
@signature_options
@click.option(
    "--values",
    "values_text",
    default=None,
    help="Settings to try, comma-separated. Default: Hamming k 0..8 (SimHash), "
    "Jaccard thresholds 0.50..0.95 step 0.05 (MinHash).",
)
@setting_option(
    "verify",
    help="As in dedup: lcs, jaccard (each at the swept threshold), lcs:T, jaccard:T or none; "
    "auto = as dedup decides: LCS resemblance at each swept threshold for MinHash, none for "
    "SimHash.",
)
@setting_option("grouping", help="Grouping rule, as in dedup.")
@click.option(
    "--min-precision",
    type=float,
    default=0.99,
    show_default=True,
    help="Also name the setting with the best recall at this precision or above.",
)
@click.option(
    "--plot",
    default=None,
    help="Write a PNG: precision–recall curve, and (labelled pairs) the distances of "
    "positive vs negative pairs.",
)
@click.option(
    "-o", "--output", default=None, help="Also write the table (.tsv .csv .jsonl .parquet)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@input_options
@handle_errors
def sweep(
    inputs,
    truth,
    positive_labels,
    method,
    shingle,
    hash_name,
    weights,
    num_perm,
    seed,
    scheme,
    values_text,
    verify,
    grouping,
    min_precision,
    plot,
    output,
    as_json,
    reading,
    workers,
    quiet,
):
    """Try every Hamming k (SimHash) or Jaccard threshold (MinHash) against hand-labelled truth.

    Signatures are computed once; then each setting runs the grouping stage, as `neardup dedup`
    would (MinHash re-tunes its LSH bands per threshold), and is scored against the truth. Prints
    precision, recall and F1 per setting (plus ARI and B-cubed with cluster truth), the best
    setting by F1 and the best with precision ≥ --min-precision.

    \b
    Examples:
      neardup sweep docs.jsonl --truth pairs.tsv --positive-labels cut,light --plot sweep.png
      neardup sweep docs.jsonl --truth clusters.tsv --method minhash --shingle char:5
      neardup sweep docs.jsonl --truth pairs.tsv --values 2,3,4 --json -o sweep.tsv
    """
    method = resolve_method(method)
    check_outputs([], [*inputs, truth], tables=[output])
    truth_data = quality.read_truth(truth, positive_labels)
    base = Settings(
        method=method,
        shingle=shingle,
        hash_name=hash_name,
        weights=weights,
        num_perm=num_perm,
        seed=seed,
        scheme=scheme,
        grouping=grouping,
        verify=None,
    )
    values = _parse_values(values_text, method)
    if not 0.0 <= min_precision <= 1.0:
        raise ValueError(f"min-precision must be in [0, 1]; got {min_precision}")
    reader = read_documents(list(inputs), **reading)
    with Reporter(quiet) as reporter:

        def progress(s: Settings) -> None:
            reporter.stage(
                f"k = {s.hamming_k}" if method == "simhash" else f"threshold = {s.threshold}"
            )

        table = quality.sweep_corpus(
            reader,
            truth_data,
            base,
            values,
            verify=verify,
            min_precision=min_precision,
            workers=workers,
            on_batch=reporter.batch,
            on_setting=progress,
        )
        rows, best, precise, distances = table.rows, table.best, table.precise, table.distances
        if rows[0].evaluation.missing_ids == rows[0].evaluation.truth_ids:
            raise ValueError(
                f"none of the {rows[0].evaluation.truth_ids:,} truth documents is in the corpus; "
                "check --id-field"
            )
        if plot:
            reporter.stage("plotting")
            quality.plot_sweep(
                rows,
                plot,
                distances,
                chosen=best,
                title=f"{method} {base.shingle} on {', '.join(inputs)}",
            )
        if output:
            write_table(output, table.columns())

    if as_json:
        _dump({"inputs": list(inputs), "truth_file": truth, **table.to_dict(), "plot": plot})
        return
    console = _console()
    console.print(_sweep_table(rows, best, precise, verify))
    e0 = rows[0].evaluation
    if truth_data.kind == "pairs":
        console.print(
            f"Computed over {e0.labelled_pairs:,} labelled pairs; unlabelled predicted pairs "
            "are not counted.",
            soft_wrap=True,
        )
    else:
        console.print(e0.note[0].upper() + e0.note[1:] + ".", soft_wrap=True)
    if e0.missing_ids:
        console.print(f"{e0.missing_ids:,} truth documents are not in the corpus (singletons).")
    console.print(
        "best F1: "
        + (_describe(best) if best else "none (no setting predicts a labelled duplicate)")
    )
    if precise is not None:
        console.print(f"best with precision ≥ {min_precision:g}: {_describe(precise)}")
    else:
        console.print(f"no setting reaches precision ≥ {min_precision:g}")
    if distances is not None:
        summary = distances.summary()
        for label in ("positive", "negative"):
            s = summary[label]
            if s["pairs"]:
                console.print(
                    f"{summary['measure']} of {label} pairs: median {s['median']:g}, "
                    f"quartiles {s['q1']:g}–{s['q3']:g} ({s['pairs']:,} pairs)"
                )
        if distances.missing:
            console.print(
                f"{distances.missing:,} labelled pairs have a document outside the corpus."
            )
    if plot:
        console.print(f"plot written to {plot}")
    if output:
        console.print(f"table written to {output}")
