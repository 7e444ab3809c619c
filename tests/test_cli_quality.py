"""Tests of neardup.cli.quality: the `evaluate` and `sweep` commands end to end, on the
``labelled_families`` corpus (conftest.py)."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.quality import evaluate as evaluate_command
from neardup.cli.quality import sweep as sweep_command
from neardup.io import write_table


def invoke(command, *args):
    return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def files(tmp_path, labelled_families):
    texts, ids, pairs, clusters = labelled_families
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True))
    )
    # Categorical labels: same family "copy", other "other".
    pairs_file = tmp_path / "pairs.tsv"
    write_table(
        pairs_file,
        {
            "id_a": pairs.id_a,
            "id_b": pairs.id_b,
            "label": np.where(pairs.positive, "copy", "other"),
        },
    )
    clusters_file = tmp_path / "clusters.tsv"
    write_table(clusters_file, {"id": clusters.ids, "cluster": clusters.cluster})
    return tmp_path, docs, pairs_file, clusters_file


def test_evaluate_command(files, labelled_families):
    tmp, docs, pairs_file, clusters_file = files
    groups = tmp / "groups.tsv"
    pairs_out = tmp / "pred_pairs.tsv"
    result = CliRunner().invoke(
        main,
        [
            "dedup",
            str(docs),
            "-o",
            str(groups),
            "--pairs-out",
            str(pairs_out),
            "--workers",
            "1",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output

    result = invoke(evaluate_command, groups, "--truth", pairs_file, "--positive-labels", "copy")
    assert result.exit_code == 0, result.output
    assert "precision" in result.output and "per category" in result.output
    assert "unlabelled predicted pairs are not counted" in result.output.replace("\n", " ")

    result = invoke(
        evaluate_command, groups, "--truth", pairs_file, "--positive-labels", "copy", "--json"
    )
    data = json.loads(result.output)
    assert data["truth"] == "pairs" and data["prediction"] == "groups"
    assert data["labelled_pairs"] == len(labelled_families[2]) and [
        c["category"] for c in data["categories"]
    ] == ["copy", "other"]

    result = invoke(evaluate_command, groups, "--truth", clusters_file, "--json")
    data = json.loads(result.output)
    assert {"ari", "bcubed", "precision", "recall", "f1"} <= set(data)

    # The star pairs of dedup, with closure, give the same counts as the groups.
    closed = json.loads(
        invoke(evaluate_command, pairs_out, "--truth", clusters_file, "--closure", "--json").output
    )
    assert (closed["tp"], closed["fp"], closed["fn"]) == (data["tp"], data["fp"], data["fn"])

    bad = invoke(evaluate_command, groups, "--truth", pairs_file)
    assert bad.exit_code == 1 and "labels must be 1/0 or true/false; got 'copy'" in bad.output


def test_sweep_command(files, labelled_families):
    tmp, docs, pairs_file, clusters_file = files
    plot, table = tmp / "sweep.png", tmp / "sweep.tsv"
    args = [docs, "--truth", pairs_file, "--positive-labels", "copy", "--workers", "1", "-q"]
    args += ["--method", "simhash"]
    result = invoke(sweep_command, *args, "--plot", plot, "-o", table)
    assert result.exit_code == 0, result.output
    out = result.output.replace("\n", " ")
    assert "best F1: k = " in out and "precision ≥ 0.99" in out
    assert (
        f"Computed over {len(labelled_families[2])} labelled pairs; "
        "unlabelled predicted pairs are not counted." in out
    )
    first = plot.read_bytes()
    assert first[:4] == b"\x89PNG"
    lines = table.read_text().splitlines()
    assert lines[0].split("\t")[:4] == ["hamming_k", "tp", "fp", "fn"] and len(lines) == 10

    result = invoke(sweep_command, *args, "--plot", plot, "--json")
    assert plot.read_bytes() == first  # deterministic PNG
    data = json.loads(result.output)
    assert [r["hamming_k"] for r in data["rows"]] == list(range(9))
    assert data["best_f1"]["f1"] == max(r["f1"] for r in data["rows"])
    assert data["distances"]["measure"] == "hamming distance"

    result = invoke(
        sweep_command,
        docs,
        "--truth",
        clusters_file,
        "--method",
        "minhash",
        "--num-perm",
        "64",
        "--values",
        "0.6,0.8",
        "--plot",
        tmp / "m.png",
        "--json",
        "--workers",
        "1",
        "-q",
    )
    data = json.loads(result.output)
    assert [r["threshold"] for r in data["rows"]] == [0.6, 0.8]
    assert all("ari" in r and "bands" in r for r in data["rows"])
    assert (tmp / "m.png").read_bytes()[:4] == b"\x89PNG"

    other = tmp / "other.jsonl"
    other.write_text(
        "".join(json.dumps({"id": f"x{i}", "text": "a b c d"}) + "\n" for i in range(5))
    )
    wrong_ids = invoke(sweep_command, other, "--truth", clusters_file, "-q")
    assert wrong_ids.exit_code == 1 and "none of the 48 truth documents" in wrong_ids.output

    bad = invoke(sweep_command, docs, "--truth", clusters_file, "--values", "1,x", "-q")
    assert bad.exit_code == 1 and "comma-separated numbers (Jaccard thresholds)" in bad.output
    args = ["--values", "1,x", "--method", "simhash", "-q"]
    bad = invoke(sweep_command, docs, "--truth", clusters_file, *args)
    assert bad.exit_code == 1 and "values must be comma-separated integers" in bad.output
