import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.minhash import (
    EMPTY_VALUE,
    coefficients,
    jaccard_estimate,
    minhash,
    minhash_from_features,
)
from neardup.text import Features


def features_of(sets):
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in sets])
    hashes = np.array([h for s in sets for h in s], dtype=np.uint64)
    n = len(sets)
    return Features(offsets, hashes, np.zeros((n, 2), dtype=np.uint64), np.zeros(n, dtype=np.int64))


def test_signature_vectors_are_stable():
    sig = minhash(["The quick brown fox jumps over the lazy dog."], num_perm=4)
    assert sig[0].tolist() == [696108010, 363462291, 817044705, 1433419096]
    a, _ = coefficients(2, seed=1)
    assert bool((a % 2 == 1).all())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=13), min_size=1, max_size=6),
    st.integers(1, 40),
    st.integers(0, 1000),
)
def test_kernel_equals_the_formula(sets, num_perm, seed):
    # Every document length modulo the kernel's four-shingle step, against the module formula.
    sig = minhash_from_features(features_of(sets), num_perm, seed)
    a, b = coefficients(num_perm, seed)
    for row, hashes in zip(sig, sets):
        x = np.array(hashes, dtype=np.uint64)
        key = (x >> np.uint64(32)) ^ (x & np.uint64(0xFFFFFFFF))
        values = (a[None, :] * key[:, None] + b[None, :]) >> np.uint64(32)
        expected = values.min(axis=0) if len(hashes) else np.full(num_perm, EMPTY_VALUE)
        assert row.tolist() == expected.astype(np.uint32).tolist()


def test_empty_document_signature():
    assert (minhash([""], num_perm=8) == EMPTY_VALUE).all()


def test_sets_and_multisets_give_the_same_signature():
    assert (minhash(["a b a b a b"], 32, "word:1") == minhash(["a b"], 32, "word:1")).all()


@settings(deadline=None, max_examples=60)
@given(st.integers(0, 2**32), st.integers(5, 300), st.integers(5, 300), st.integers(0, 300))
def test_estimate_within_binomial_bound(seed, only_a, only_b, common):
    rng = np.random.default_rng(seed)
    universe = rng.choice(2**62, size=only_a + only_b + common, replace=False).astype(np.uint64)
    shared = universe[:common]
    a = np.concatenate([shared, universe[common : common + only_a]])
    b = np.concatenate([shared, universe[common + only_a :]])
    true_j = common / (common + only_a + only_b)
    num_perm = 256
    sig = minhash_from_features(features_of([a, b]), num_perm, seed=seed % 1000 + 1)
    estimate = float(jaccard_estimate(sig[0], sig[1]))
    # 5 standard errors of a binomial(num_perm, J) share, plus a small slack for the
    # 32-bit keys and values (collisions are about 2^-32 per value).
    bound = 5 * math.sqrt(max(true_j * (1 - true_j), 1e-3) / num_perm) + 0.02
    assert abs(estimate - true_j) <= bound


def test_estimate_is_unbiased_over_many_pairs():
    rng = np.random.default_rng(7)
    errors = []
    for trial in range(200):
        universe = rng.choice(2**62, size=150, replace=False).astype(np.uint64)
        a, b = universe[:100], universe[50:]
        sig = minhash_from_features(features_of([a, b]), 64, seed=trial + 1)
        errors.append(float(jaccard_estimate(sig[0], sig[1])) - 50 / 150)
    # Mean of 200 estimates: standard error sqrt(J(1-J)/64/200) ≈ 0.0042.
    assert abs(np.mean(errors)) < 0.02


@pytest.mark.parametrize("bad", [0, -1, 5000, 1.5, True])
def test_num_perm_validation(bad):
    with pytest.raises(ValueError, match="num_perm"):
        minhash(["x"], num_perm=bad)


def test_estimate_shape_mismatch():
    with pytest.raises(ValueError, match="num_perm"):
        jaccard_estimate(np.zeros(4), np.zeros(5))
