"""neardup.verify: the --verify spec, and the measures over prepared data."""

import numpy as np
import pytest

from neardup.lcs import lcs_pairs
from neardup.text.units import lcs_units
from neardup.verify import Verification, parse_verify


def test_parse_verify():
    assert parse_verify("lcs:0.8") == Verification("lcs", 0.8)
    assert parse_verify(" Jaccard:0.5 ") == Verification("jaccard", 0.5)
    assert parse_verify("none") is None and parse_verify(None) is None
    for bad in ("lcs", "cosine:0.8", "lcs:0", "lcs:1.5", "jaccard:x"):
        with pytest.raises(ValueError, match="verify"):
            parse_verify(bad)


def _texts(n=600, seed=3):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "학교", "나는", "x", "yz"]
    return [" ".join(rng.choice(words, rng.integers(5, 40))) for _ in range(n)]


def test_lcs_values_at_or_above_the_threshold_are_exact_and_threads_change_nothing():
    texts = _texts()
    v = Verification("lcs", 0.8)
    offsets, values = v.prepare(texts, "char:4", "xxh")
    a, b = np.triu_indices(len(texts), 1)
    a, b = a[:20_000], b[:20_000]
    exact = lcs_pairs(*lcs_units(texts, "auto"), a, b)
    fast = v.similarity(offsets, values, a, b)
    assert ((fast >= 0.8) == (exact >= 0.8)).all()
    assert (fast[exact >= 0.8] == exact[exact >= 0.8]).all()
    assert (fast[exact < 0.8] < 0.8).all()
    assert v.similarity(offsets, values, a, b, exact=True).tolist() == exact.tolist()
    for workers in (2, 3):
        assert v.similarity(offsets, values, a, b, workers=workers).tolist() == fast.tolist()
