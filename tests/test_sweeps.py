"""Tests of neardup.quality.sweeps: a sweep scores every setting as separate runs would, and
the labelled pairs' distances. The corpus is the ``labelled_families`` fixture (conftest.py)."""

import numpy as np
import pytest

from neardup.lcs import resemblance_reference
from neardup.pipeline import find_groups, signatures
from neardup.quality import (
    Prediction,
    best_settings,
    evaluate,
    pair_distances,
    sweep,
    sweep_signature_settings,
    swept_settings,
)
from neardup.settings import Settings


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
def test_sweep_equals_separate_runs(labelled_families, method, values, verify, grouping):
    texts, ids, pair_truth, cluster_truth = labelled_families
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


def test_sweep_finds_the_families(labelled_families):
    texts, ids, _, clusters = labelled_families
    rows = sweep(texts, ids, None, clusters, Settings(method="simhash"), workers=1)
    assert [r.value for r in rows] == list(range(9))
    best, precise = best_settings(rows)
    assert best.evaluation.f1 > 0.5
    assert precise is None or precise.evaluation.precision >= 0.99
    assert rows[-1].to_dict()["hamming_k"] == 8 and "ari" in rows[-1].to_dict()


def test_pair_distances(labelled_families):
    texts, ids, pairs, _ = labelled_families
    base = Settings(method="minhash", num_perm=64)
    sig = signatures(texts, sweep_signature_settings(base, swept_settings(base), pairs))
    # The swept settings decide by dedup's LCS rule, so the labelled pairs are measured by it.
    d = pair_distances(sig, ids, pairs, "minhash", "lcs")
    assert d.values.shape == (len(pairs),) and d.missing == 0 and d.measure == "lcs"
    assert d.values[d.positive].mean() > d.values[~d.positive].mean()
    summary = d.summary()
    assert summary["positive"]["pairs"] == int(pairs.positive.sum())
    assert summary["measure"] == "lcs"
    position = {ident: i for i, ident in enumerate(ids)}
    units = [
        sig.set_hashes[sig.set_offsets[i] : sig.set_offsets[i + 1]].tolist()
        for i in range(len(ids))
    ]
    for value, a, b in list(zip(d.values, pairs.id_a, pairs.id_b))[:40]:
        expected = resemblance_reference(units[position[a]], units[position[b]])
        assert value == pytest.approx(expected)


def test_sweep_rejects_bad_values(labelled_families):
    texts, ids, _, clusters = labelled_families
    with pytest.raises(ValueError, match="hamming_k must be in 0..32; got 40"):
        sweep(texts, ids, None, clusters, Settings(method="simhash"), [40], workers=1)
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\); got 1.5"):
        sweep(texts, ids, None, clusters, Settings(method="minhash"), [1.5], workers=1)
