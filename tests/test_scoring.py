"""Tests of neardup.quality.scoring: a prediction (groups or pairs) scored against truth
clusters and against labelled pairs, with their categories."""

import math

import pytest

from neardup.quality import ClusterTruth, PairConfusion, PairTruth, Prediction, evaluate

# ---------------------------------------------------------------------------- cluster truth


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
