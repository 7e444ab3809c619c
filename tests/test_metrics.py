"""Tests of neardup.quality.metrics: pair counts, the adjusted Rand index and B-cubed scores,
by hand and against brute force over all pairs (and scikit-learn's ARI)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from neardup.quality import (
    PairConfusion,
    adjusted_rand_index,
    bcubed,
    pair_confusion,
    precision_recall_f1,
)


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


def test_bcubed_by_hand():
    # truth {0 1 2} {3}; prediction {0 1} {2 3}
    # precision per item: 1, 1, 1/2, 1/2 → 3/4; recall: 2/3, 2/3, 1/3, 1 → 2/3.
    b = bcubed([0, 0, 0, 1], [0, 0, 1, 1])
    assert b.precision == pytest.approx(0.75)
    assert b.recall == pytest.approx(2 / 3)
    assert b.f1 == pytest.approx(12 / 17)


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
