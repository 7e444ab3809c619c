"""Tests of neardup.quality (metrics, truth, scoring, sweeps) and the `evaluate` / `sweep` commands."""

import itertools
import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from neardup.cli import main
from neardup.cli.quality import evaluate as evaluate_command
from neardup.cli.quality import sweep as sweep_command
from neardup.io import write_table
from neardup.pipeline import find_groups, signatures
from neardup.quality import (
    ClusterTruth,
    PairConfusion,
    PairTruth,
    Prediction,
    adjusted_rand_index,
    bcubed,
    best_settings,
    evaluate,
    pair_confusion,
    pair_distances,
    parse_labels,
    precision_recall_f1,
    read_prediction,
    read_truth,
    sweep,
    sweep_signature_settings,
    swept_settings,
)
from neardup.settings import Settings

# ------------------------------------------------------------------------------------ helpers


def brute_pair_confusion(truth, pred):
    tp = fp = fn = tn = 0
    for i, j in itertools.combinations(range(len(truth)), 2):
        same_t, same_p = truth[i] == truth[j], pred[i] == pred[j]
        tp += same_t and same_p
        fp += same_p and not same_t
        fn += same_t and not same_p
        tn += not same_t and not same_p
    return PairConfusion(tp, fp, fn, tn)


def brute_bcubed(truth, pred):
    n = len(truth)
    p = r = 0.0
    for i in range(n):
        group = {j for j in range(n) if pred[j] == pred[i]}
        cluster = {j for j in range(n) if truth[j] == truth[i]}
        p += len(group & cluster) / len(group)
        r += len(group & cluster) / len(cluster)
    return p / n, r / n


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


# ------------------------------------------------------------------------- cluster metrics


def test_perfect_prediction_against_clusters():
    truth = ClusterTruth.from_arrays(list("abcdef"), [1, 1, 1, 2, 2, 3])
    e = evaluate(Prediction.from_groups(list("abcdef"), list("aaaddf")), truth)
    assert e.confusion == PairConfusion(tp=4, fp=0, fn=0, tn=11)
    assert (e.precision, e.recall, e.f1, e.ari) == (1.0, 1.0, 1.0, 1.0)
    assert (e.bcubed.precision, e.bcubed.recall, e.bcubed.f1) == (1.0, 1.0, 1.0)
    assert e.missing_ids == 0 and e.ignored_ids == 0


def test_all_false_positives():
    # Truth: all singletons; prediction: one group of 4 → 6 false positive pairs.
    truth = ClusterTruth.from_arrays(list("abcd"), [0, 1, 2, 3])
    e = evaluate(Prediction.from_groups(list("abcd"), ["g"] * 4), truth)
    assert e.confusion == PairConfusion(tp=0, fp=6, fn=0, tn=0)
    assert e.precision == 0.0 and math.isnan(e.recall) and e.f1 == 0.0
    assert e.to_dict()["recall"] is None
    assert e.bcubed.precision == 0.25 and e.bcubed.recall == 1.0


def test_all_false_negatives():
    truth = ClusterTruth.from_arrays(list("abcd"), [0] * 4)
    e = evaluate(Prediction.from_groups(list("abcd"), list("abcd")), truth)
    assert e.confusion == PairConfusion(tp=0, fp=0, fn=6, tn=0)
    assert math.isnan(e.precision) and e.recall == 0.0 and e.f1 == 0.0
    assert e.bcubed.precision == 1.0 and e.bcubed.recall == 0.25


def test_mixed_case_by_hand():
    # truth {a b c} {d e}; prediction {a b} {c d e}: cells 2, 1, 2 → tp = 1 + 0 + 1.
    truth = ClusterTruth.from_arrays(list("abcde"), list("xxxyy"))
    e = evaluate(Prediction.from_groups(list("abcde"), [0, 0, 1, 1, 1]), truth)
    assert e.confusion == PairConfusion(tp=2, fp=2, fn=2, tn=4)
    assert (e.precision, e.recall, e.f1) == (0.5, 0.5, 0.5)
    # ARI = 2(tp·tn − fn·fp) / ((tp+fn)(fn+tn) + (tp+fp)(fp+tn)) = 2(8 − 4) / (4·6 + 4·6)
    assert e.ari == pytest.approx(8 / 48)


def test_bcubed_by_hand():
    # truth {0 1 2} {3}; prediction {0 1} {2 3}
    # precision per item: 1, 1, 1/2, 1/2 → 3/4; recall: 2/3, 2/3, 1/3, 1 → 2/3.
    b = bcubed([0, 0, 0, 1], [0, 0, 1, 1])
    assert b.precision == pytest.approx(0.75)
    assert b.recall == pytest.approx(2 / 3)
    assert b.f1 == pytest.approx(12 / 17)


def test_missing_and_extra_ids():
    truth = ClusterTruth.from_arrays(list("abcd"), [0, 0, 1, 1])
    # "d" is missing (singleton), "z" is outside the truth (ignored).
    e = evaluate(Prediction.from_groups(list("abcz"), list("aaca")), truth)
    assert e.missing_ids == 1 and e.ignored_ids == 1
    assert e.confusion == PairConfusion(tp=1, fp=0, fn=1, tn=4)


def test_pairs_prediction_against_clusters():
    truth = ClusterTruth.from_arrays(list("abcd"), [0, 0, 0, 1])
    # Listed a-b, b-c (a star would miss a-c), x-y outside the truth.
    pred = Prediction.from_pairs(["a", "b", "x"], ["b", "c", "y"])
    listed = evaluate(pred, truth)
    assert listed.confusion == PairConfusion(tp=2, fp=0, fn=1, tn=3)
    closed = evaluate(pred, truth, closure=True)
    assert closed.confusion == PairConfusion(tp=3, fp=0, fn=0, tn=3)
    assert listed.ari == closed.ari == 1.0  # ARI uses the components either way
    assert listed.missing_ids == 1 and listed.ignored_ids == 2


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), max_size=40))
@settings(max_examples=150, deadline=None)
def test_ari_matches_sklearn_and_counts_match_brute_force(pairs):
    truth = [t for t, _ in pairs]
    pred = [p for _, p in pairs]
    assert adjusted_rand_index(truth, pred) == pytest.approx(
        adjusted_rand_score(truth, pred), abs=1e-12
    )
    assert pair_confusion(truth, pred) == brute_pair_confusion(truth, pred)
    if truth:
        b = bcubed(truth, [f"g{p}" for p in pred])
        p, r = brute_bcubed(truth, pred)
        assert b.precision == pytest.approx(p) and b.recall == pytest.approx(r)


def test_precision_recall_f1_rejects_negative_counts():
    assert precision_recall_f1(8, 2, 8) == (0.8, 0.5, pytest.approx(16 / 26))
    with pytest.raises(ValueError, match="fp must be ≥ 0; got -1"):
        precision_recall_f1(1, -1, 0)


# ------------------------------------------------------------------------- labelled pairs


def test_labelled_pairs_perfect_and_all_wrong():
    truth = PairTruth.from_arrays(["a", "c", "a"], ["b", "d", "c"], ["1", "true", "0"])
    perfect = evaluate(Prediction.from_groups(list("abcd"), [0, 0, 1, 1]), truth)
    assert perfect.confusion == PairConfusion(tp=2, fp=0, fn=0, tn=1)
    inverted = evaluate(Prediction.from_groups(list("abcd"), [0, 1, 0, 2]), truth)
    assert inverted.confusion == PairConfusion(tp=0, fp=1, fn=2, tn=0)
    assert inverted.precision == 0.0 and inverted.recall == 0.0


def test_sampled_truth_counts_labelled_pairs_only():
    # Prediction: {a b c} {d e} {f}; only some pairs are labelled, z is not in the prediction.
    pred = Prediction.from_groups(list("abcdef"), list("aaadds"))
    truth = PairTruth.from_arrays(
        ["a", "a", "d", "e", "a", "z"], ["b", "c", "f", "f", "d", "a"], [1, 0, 1, 0, 0, 1]
    )
    e = evaluate(pred, truth)
    assert e.confusion == PairConfusion(tp=1, fp=1, fn=2, tn=2)
    assert e.labelled_pairs == 6 and e.missing_ids == 1
    # 4 predicted pairs (ab ac bc de), 2 of them labelled.
    assert e.unlabelled_predicted_pairs == 2
    assert "computed over 6 labelled pairs; unlabelled predicted pairs are not counted" in e.note
    assert e.to_dict()["labelled_pairs"] == 6


def test_pairs_prediction_against_labelled_pairs():
    truth = PairTruth.from_arrays(["a", "a", "c"], ["b", "c", "d"], [1, 1, 0])
    pred = Prediction.from_pairs(["b", "b"], ["a", "c"])  # either orientation
    listed = evaluate(pred, truth)
    assert listed.confusion == PairConfusion(tp=1, fp=0, fn=1, tn=1)
    assert listed.missing_ids == 1  # d is in no predicted pair
    closed = evaluate(pred, truth, closure=True)
    assert closed.confusion == PairConfusion(tp=2, fp=0, fn=0, tn=1)
    with pytest.raises(ValueError, match="closure applies to PAIRS"):
        evaluate(Prediction.from_groups(["a"], ["a"]), truth, closure=True)


def test_categorical_labels_with_positive_labels():
    truth = PairTruth.from_arrays(
        ["s1", "s2", "s3", "s4", "s5", "s6"],
        ["o"] * 6,
        ["cut", "light", "heavy", "non", "cut", "light"],
        positive_labels="cut,light",
    )
    assert truth.positive.tolist() == [True, True, False, False, True, True]
    assert truth.categories == ["cut", "light", "heavy", "non"]
    # Predicted group of the original "o": s1, s2, s3.
    pred = Prediction.from_groups(
        ["o", "s1", "s2", "s3", "s4", "s5", "s6"], ["o", "o", "o", "o", "x", "y", "z"]
    )
    e = evaluate(pred, truth)
    assert e.confusion == PairConfusion(tp=2, fp=1, fn=2, tn=1)
    by = {c.category: c for c in e.categories}
    assert [c.category for c in e.categories] == ["cut", "light", "heavy", "non"]
    assert (by["cut"].pairs, by["cut"].positive, by["cut"].predicted) == (2, 2, 1)
    assert by["cut"].confusion.recall == 0.5 and by["heavy"].predicted_rate == 1.0
    assert by["non"].predicted_rate == 0.0
    assert e.to_dict()["categories"][0]["category"] == "cut"


def test_category_column_drives_breakdown():
    truth = PairTruth.from_arrays(["a", "c"], ["b", "d"], [1, 0], category=["en", "ko"])
    e = evaluate(Prediction.from_groups(list("abcd"), list("aacc")), truth)
    assert [(c.category, c.predicted) for c in e.categories] == [("en", 1), ("ko", 1)]


def test_label_errors_name_the_value():
    with pytest.raises(
        ValueError, match=r"labels must be 1/0 or true/false; got 'cut'.*positive_labels"
    ):
        parse_labels(["cut", "non"])
    with pytest.raises(ValueError, match=r"positive label 'cutt' does not occur.*cut, non"):
        parse_labels(["cut", "non"], "cutt")
    with pytest.raises(ValueError, match="labelled both positive and negative"):
        PairTruth.from_arrays(["a", "b"], ["b", "a"], [1, 0])
    with pytest.raises(ValueError, match="with itself"):
        PairTruth.from_arrays(["a"], ["a"], [1])
    with pytest.raises(ValueError, match="'a' appears more than once"):
        ClusterTruth.from_arrays(["a", "a"], [0, 1])
    dup = PairTruth.from_arrays(["a", "b"], ["b", "a"], [1, 1])
    assert len(dup) == 1 and dup.duplicate_rows == 1


# ------------------------------------------------------------------------------ file reading


@pytest.mark.parametrize("ext", ["tsv", "csv", "jsonl", "parquet", "tsv.gz"])
def test_prediction_and_truth_in_every_format(tmp_path, ext):
    groups = tmp_path / f"groups.{ext}"
    write_table(
        groups,
        {
            "id": ["a", "b", "c\tx"],
            "duplicate_id": ["a", "a", "c\tx"],
            "is_original": [True, False, True],
        },
    )
    pairs = tmp_path / f"pairs.{ext}"
    write_table(pairs, {"id_a": ["a", "b"], "id_b": ["b", "c\tx"], "distance": [1, 2]})
    truth = tmp_path / f"truth.{ext}"
    write_table(
        truth,
        {"id_a": ["a", "a"], "id_b": ["b", "c\tx"], "label": [True, False], "split": ["x", "y"]},
    )
    t = read_truth(truth)
    assert isinstance(t, PairTruth) and t.positive.tolist() == [True, False]
    g = read_prediction(groups)
    assert g.kind == "groups" and g.ids.tolist() == ["a", "b", "c\tx"]
    p = read_prediction(pairs)
    assert p.kind == "pairs" and p.id_b.tolist() == ["b", "c\tx"]
    assert evaluate(g, t).confusion == PairConfusion(1, 0, 0, 1)
    assert evaluate(p, t).confusion == PairConfusion(1, 0, 0, 1)


def test_unknown_columns_and_formats(tmp_path):
    bad = tmp_path / "x.tsv"
    bad.write_text("foo\tbar\n1\t2\n")
    with pytest.raises(ValueError, match="neither labelled pairs"):
        read_truth(bad)
    with pytest.raises(ValueError, match="neither GROUPS"):
        read_prediction(bad)
    with pytest.raises(ValueError, match="from its extension"):
        read_truth(tmp_path / "x.xlsx")
    nolabel = tmp_path / "p.tsv"
    nolabel.write_text("id_a\tid_b\na\tb\n")
    with pytest.raises(ValueError, match="missing column 'label'"):
        read_truth(nolabel)


# ---------------------------------------------------------------------------------- sweeps


def synthetic_corpus(seed=7, families=12, copies=4):
    """Families of near-duplicates: a base text and copies with 0..3 changed words."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]
    texts, ids, cluster = [], [], []
    for f in range(families):
        base = [rng.choice(vocab) for _ in range(rng.randint(25, 60))]
        for c in range(copies):
            words = list(base)
            for _ in range(rng.randint(0, 3) if c else 0):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
            ids.append(f"f{f}c{c}")
            cluster.append(f)
    return texts, ids, cluster


@pytest.fixture(scope="module")
def corpus():
    texts, ids, cluster = synthetic_corpus()
    rng = random.Random(3)
    a, b, labels = [], [], []
    for _ in range(80):
        i, j = rng.sample(range(len(ids)), 2)
        if rng.random() < 0.5:  # oversample same-family pairs
            j = (i // 4) * 4 + (i + 1) % 4
        a.append(ids[i])
        b.append(ids[j])
        labels.append(int(cluster[i] == cluster[j]))
    pairs = PairTruth.from_arrays(a, b, labels)
    clusters = ClusterTruth.from_arrays(ids, cluster)
    return texts, ids, pairs, clusters


@pytest.mark.parametrize(
    "method,values,verify",
    [
        ("simhash", [0, 2, 4, 6, 8], "auto"),
        ("simhash", [3, 6], "jaccard:0.4"),
        ("minhash", [0.5, 0.7, 0.9], "auto"),
        ("minhash", [0.6], "none"),
    ],
)
@pytest.mark.parametrize("grouping", ["components", "center"])
def test_sweep_equals_separate_runs(corpus, method, values, verify, grouping):
    texts, ids, pair_truth, cluster_truth = corpus
    base = Settings(method=method, num_perm=64, grouping=grouping)
    timestamps = np.arange(len(ids))[::-1].copy()
    id_array = np.asarray(ids, dtype=object)
    for truth in (pair_truth, cluster_truth):
        rows = sweep(texts, ids, timestamps, truth, base, values, verify=verify, workers=1)
        assert [r.value for r in rows] == sorted(values)
        for row, value in zip(rows, sorted(values), strict=True):
            key = "hamming_k" if method == "simhash" else "threshold"
            s = Settings(
                method=method, num_perm=64, grouping=grouping, verify=verify, **{key: value}
            )
            groups = find_groups(signatures(texts, s), timestamps, s)
            expected = evaluate(Prediction.from_groups(ids, id_array[groups.original]), truth)
            assert row.evaluation.to_dict() == expected.to_dict()
            assert row.groups == groups.stats["groups"]
            if method == "minhash":
                assert (row.bands, row.rows) == s.banding()


def test_sweep_finds_the_families(corpus):
    texts, ids, _, clusters = corpus
    rows = sweep(texts, ids, None, clusters, Settings(method="simhash"), workers=1)
    assert [r.value for r in rows] == list(range(9))
    best, precise = best_settings(rows)
    assert best.evaluation.f1 > 0.5
    assert precise is None or precise.evaluation.precision >= 0.99
    assert rows[-1].to_dict()["hamming_k"] == 8 and "ari" in rows[-1].to_dict()


def test_pair_distances(corpus):
    texts, ids, pairs, _ = corpus
    base = Settings(method="minhash", num_perm=64)
    sig = signatures(texts, sweep_signature_settings(base, swept_settings(base), pairs))
    d = pair_distances(sig, ids, pairs, "minhash")
    assert d.values.shape == (len(pairs),) and d.missing == 0
    assert d.values[d.positive].mean() > d.values[~d.positive].mean()
    summary = d.summary()
    assert summary["positive"]["pairs"] == int(pairs.positive.sum())


def test_sweep_rejects_bad_values(corpus):
    texts, ids, _, clusters = corpus
    with pytest.raises(ValueError, match="hamming_k must be in 0..32; got 40"):
        sweep(texts, ids, None, clusters, Settings(method="simhash"), [40], workers=1)
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\); got 1.5"):
        sweep(texts, ids, None, clusters, Settings(method="minhash"), [1.5], workers=1)


# ------------------------------------------------------------------------------- commands


def invoke(command, *args):
    return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def files(tmp_path, corpus):
    texts, ids, pairs, clusters = corpus
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


def test_evaluate_command(files, corpus):
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
    assert data["labelled_pairs"] == len(corpus[2]) and [
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


def test_sweep_command(files, corpus):
    tmp, docs, pairs_file, clusters_file = files
    plot, table = tmp / "sweep.png", tmp / "sweep.tsv"
    args = [docs, "--truth", pairs_file, "--positive-labels", "copy", "--workers", "1", "-q"]
    result = invoke(sweep_command, *args, "--plot", plot, "-o", table)
    assert result.exit_code == 0, result.output
    out = result.output.replace("\n", " ")
    assert "best F1: k = " in out and "precision ≥ 0.99" in out
    assert (
        f"Computed over {len(corpus[2])} labelled pairs; "
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
    assert bad.exit_code == 1 and "values must be comma-separated integers" in bad.output


def test_labelling_sheet_with_unlabelled_rows(tmp_path):
    from neardup.quality import read_truth

    sheet = tmp_path / "sheet.tsv"
    sheet.write_text("id_a\tid_b\tdistance\tlabel\na\tb\t3\t1\na\tc\t9\t\nb\tc\t4\t0\n")
    truth = read_truth(sheet)
    assert truth.id_a.tolist() == ["a", "b"] and truth.positive.tolist() == [True, False]
