import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.minhash import (
    EMPTY_VALUE,
    SCHEMES,
    coefficients,
    densification_tables,
    jaccard_estimate,
    minhash,
    minhash_from_features,
    minhash_of_canonical,
    oph_keys,
)
from neardup.text import Features, hash_features
from neardup.text.canonical import Canonical

MASK64 = 2**64 - 1


def features_of(sets):
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in sets])
    hashes = np.array([h for s in sets for h in s], dtype=np.uint64)
    n = len(sets)
    return Features(offsets, hashes, np.zeros((n, 2), dtype=np.uint64), np.zeros(n, dtype=np.int64))


def test_signature_vectors_are_stable():
    # Signatures are kept in indexes and files: these values must never change.
    fox = ["The quick brown fox jumps over the lazy dog."]
    sig = minhash(fox, num_perm=4, scheme="classic")
    assert sig[0].tolist() == [696108010, 363462291, 817044705, 1433419096]
    a, _ = coefficients(2, seed=1)
    assert bool((a % 2 == 1).all())
    assert minhash(fox, num_perm=4)[0].tolist() == [1010557913, 4197742576, 365336111, 3482707846]
    assert minhash(fox, num_perm=8, shingle="char:4")[0].tolist() == [
        620364187,
        237673562,
        1688340532,
        140003006,
        1935139307,
        644719031,
        1203654823,
        606168329,
    ]
    assert [int(k) for k in oph_keys(1)] == [10451216379200822465, 13757245211066428519]


def splitmix64_reference(x: int) -> int:
    """splitmix64 in Python integers, from its published constants."""
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def oph_reference(hashes: list[int], num_perm: int, seed: int) -> list[int]:
    """The "oph" scheme as the module docstring defines it, in Python integers: the general bin
    formula (no power-of-two shift), and for an empty bin the held bin of least key found by
    computing every key (no tables, no cut-off between the two ways)."""
    s = splitmix64_reference((seed + 0 * 0x9E3779B97F4A7C15) & MASK64)
    d = splitmix64_reference((seed + 1 * 0x9E3779B97F4A7C15) & MASK64)
    least: dict[int, int] = {}
    for x in hashes:
        h = ((x ^ s) * 0x9E3779B97F4A7C15) & MASK64
        b = ((h >> 32) * num_perm) >> 32
        least[b] = min(least.get(b, 2**32), h & 0xFFFFFFFF)
    if not least:
        return [int(EMPTY_VALUE)] * num_perm
    out = []
    for i in range(num_perm):
        if i in least:
            out.append(least[i])
            continue
        source = min(least, key=lambda j: (splitmix64_reference(d ^ ((i << 32) | j)), j))
        out.append(least[source])
    return out


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=300), min_size=1, max_size=5),
    st.sampled_from([1, 2, 3, 7, 8, 16, 100, 128, 130]),
    st.integers(0, 1000),
)
def test_oph_kernel_equals_the_definition(sets, num_perm, seed):
    # Sets from empty to several times num_perm: both ways of densifying (few held bins, many),
    # power-of-two and other bin counts, against the definition computed directly.
    sig = minhash_from_features(features_of(sets), num_perm, seed, "oph")
    for row, hashes in zip(sig, sets):
        assert row.tolist() == oph_reference(hashes, num_perm, seed)


def test_densification_tables_are_each_bins_keys_in_order():
    _, d = oph_keys(5)
    order, rank = densification_tables(12, 5)
    for i in range(12):
        keys = {j: splitmix64_reference(int(d) ^ ((i << 32) | j)) for j in range(12) if j != i}
        assert order[i].tolist() == sorted(keys, key=lambda j: (keys[j], j))
        assert [int(rank[i, j]) for j in order[i]] == list(range(11))
        assert rank[i, i] == -1


def random_pair(rng, size_a: int, size_b: int, common: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of random 64-bit hashes sharing ``common`` elements."""
    universe = rng.choice(2**62, size=size_a + size_b - common, replace=False).astype(np.uint64)
    a = universe[:size_a]
    b = np.concatenate([universe[:common], universe[size_a:]])
    return a, b


# (|A|, |B|, |A ∩ B|): sets much smaller than the 128 bins, about as large, much larger;
# identical and disjoint sets.
COLLISION_CASES = [
    (10, 10, 5),
    (20, 30, 15),
    (60, 60, 40),
    (128, 128, 100),
    (500, 400, 300),
    (3000, 3000, 2000),
    (40, 40, 40),
    (1000, 1000, 1000),
    (50, 70, 0),
    (2000, 2000, 0),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(("size_a", "size_b", "common"), COLLISION_CASES)
def test_each_position_collides_with_probability_jaccard(scheme, size_a, size_b, common):
    # Over many independent draws (sets and seeds), the mean share of equal positions is J:
    # the collision law, for sets with fewer shingles than bins (densified) and more.
    rng = np.random.default_rng(size_a * 7919 + common)
    true_j = common / (size_a + size_b - common)
    trials, num_perm = 300, 128
    shares = []
    for trial in range(trials):
        a, b = random_pair(rng, size_a, size_b, common)
        sig = minhash_from_features(features_of([a, b]), num_perm, trial + 1, scheme)
        shares.append(float(jaccard_estimate(sig[0], sig[1])))
    # Positions of one signature are correlated (most for small sets, whose copies move
    # together), so the standard error of the mean is bounded by that of one share per trial,
    # sqrt(J(1 − J) / trials), plus the 2^-32 value collisions.
    bound = 4 * math.sqrt(true_j * (1 - true_j) / trials) + 1e-3
    assert abs(np.mean(shares) - true_j) <= bound


def band_collision_rate(rng, sizes, bands, rows, trials, scheme):
    size_a, size_b, common = sizes
    hits = 0
    for trial in range(trials):
        a, b = random_pair(rng, size_a, size_b, common)
        sig = minhash_from_features(features_of([a, b]), bands * rows, trial + 1, scheme)
        equal = (sig[0] == sig[1]).reshape(bands, rows).all(axis=1)
        hits += bool(equal.any())
    return hits / trials


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "sizes", [(40, 40, 12), (40, 40, 20), (40, 40, 30), (800, 800, 250), (800, 800, 450)]
)
def test_band_collisions_follow_the_lsh_curve(scheme, sizes):
    # 32 bands × 4 rows (dedup's default): the share of pairs that share a band is
    # 1 − (1 − J^r)^b, the curve the bands are tuned by; for sets of 40 shingles too, whose
    # signatures are two-thirds copies under "oph".
    rng = np.random.default_rng(sizes[2])
    true_j = sizes[2] / (sizes[0] + sizes[1] - sizes[2])
    expected = 1 - (1 - true_j**4) ** 32
    trials = 400
    rate = band_collision_rate(rng, sizes, 32, 4, trials, scheme)
    assert abs(rate - expected) <= 4 * math.sqrt(expected * (1 - expected) / trials) + 0.02


def test_signatures_do_not_depend_on_batching():
    # Workers sign different batches: a document's signature is the same in any batch.
    rng = np.random.default_rng(3)
    sets = [rng.integers(0, 2**63, size=n).astype(np.uint64) for n in (0, 1, 5, 50, 127, 128, 900)]
    whole = minhash_from_features(features_of(sets), 128, 9)
    for i, one in enumerate(sets):
        assert (minhash_from_features(features_of([one]), 128, 9)[0] == whole[i]).all()


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="scheme must be one of oph, classic; got 'perm'"):
        minhash(["x"], scheme="perm")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=13), min_size=1, max_size=6),
    st.integers(1, 40),
    st.integers(0, 1000),
)
def test_classic_kernel_equals_the_formula(sets, num_perm, seed):
    # Every document length modulo the kernel's four-shingle step, against the module formula.
    sig = minhash_from_features(features_of(sets), num_perm, seed, "classic")
    a, b = coefficients(num_perm, seed)
    for row, hashes in zip(sig, sets):
        x = np.array(hashes, dtype=np.uint64)
        key = (x >> np.uint64(32)) ^ (x & np.uint64(0xFFFFFFFF))
        values = (a[None, :] * key[:, None] + b[None, :]) >> np.uint64(32)
        expected = values.min(axis=0) if len(hashes) else np.full(num_perm, EMPTY_VALUE)
        assert row.tolist() == expected.astype(np.uint32).tolist()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_empty_document_signature(scheme):
    assert (minhash([""], num_perm=8, scheme=scheme) == EMPTY_VALUE).all()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sets_and_multisets_give_the_same_signature(scheme):
    repeated = minhash(["a b a b a b"], 32, "word:1", scheme=scheme)
    assert (repeated == minhash(["a b"], 32, "word:1", scheme=scheme)).all()


@settings(deadline=None, max_examples=60)
@given(
    st.integers(0, 2**32),
    st.integers(5, 300),
    st.integers(5, 300),
    st.integers(0, 300),
    st.sampled_from(SCHEMES),
)
def test_estimate_within_binomial_bound(seed, only_a, only_b, common, scheme):
    rng = np.random.default_rng(seed)
    universe = rng.choice(2**62, size=only_a + only_b + common, replace=False).astype(np.uint64)
    shared = universe[:common]
    a = np.concatenate([shared, universe[common : common + only_a]])
    b = np.concatenate([shared, universe[common + only_a :]])
    true_j = common / (common + only_a + only_b)
    num_perm = 256
    sig = minhash_from_features(features_of([a, b]), num_perm, seed % 1000 + 1, scheme)
    estimate = float(jaccard_estimate(sig[0], sig[1]))
    # 5 standard errors of a binomial(num_perm, J) share, plus a small slack for the
    # 32-bit keys and values (collisions are about 2^-32 per value). OPH positions are
    # negatively correlated for sets larger than the bins (a partition), and no more than
    # about binomially spread for smaller ones (test_each_position_collides_...).
    bound = 5 * math.sqrt(max(true_j * (1 - true_j), 1e-3) / num_perm) + 0.02
    assert abs(estimate - true_j) <= bound


@pytest.mark.parametrize("scheme", SCHEMES)
def test_estimate_is_unbiased_over_many_pairs(scheme):
    rng = np.random.default_rng(7)
    errors = []
    for trial in range(200):
        universe = rng.choice(2**62, size=150, replace=False).astype(np.uint64)
        a, b = universe[:100], universe[50:]
        sig = minhash_from_features(features_of([a, b]), 64, trial + 1, scheme)
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


_TEXTS = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
        st.text(alphabet=st.sampled_from("가나다라마바사 한국어문장 "), max_size=40),
        st.text(alphabet=st.sampled_from("ab c 가각 Ｆ é ß 1.!"), max_size=40),
        st.sampled_from(["", " ", "ab", "가", "  x  "]),
    ),
    max_size=12,
)


def _assert_fused_equals_two_passes(texts, size, hash_name, num_perm, seed):
    canonical = Canonical.of(texts)
    shingle = f"char:{size}"
    expected = hash_features(canonical, shingle, hash_name)
    signature = minhash_from_features(expected, num_perm, seed, "oph")
    features, fused = minhash_of_canonical(
        canonical, shingle, hash_name, num_perm, seed, "oph", keep_hashes=False
    )
    assert features.hashes is None
    assert np.array_equal(features.offsets, expected.offsets)
    assert np.array_equal(features.content, expected.content)
    assert np.array_equal(features.text_bytes, expected.text_bytes)
    assert fused.dtype == signature.dtype
    assert np.array_equal(fused, signature)


@settings(max_examples=80, deadline=None)
@given(
    _TEXTS,
    st.sampled_from([1, 3, 4, 5, 7]),
    st.sampled_from(["xxh", "md5"]),
    st.sampled_from([1, 16, 100, 128]),
    st.integers(0, 2**32),
)
def test_fused_char_oph_equals_the_two_passes(texts, size, hash_name, num_perm, seed):
    _assert_fused_equals_two_passes(texts, size, hash_name, num_perm, seed)


@pytest.mark.parametrize("hash_name", ["xxh", "md5"])
def test_fused_char_oph_equals_the_two_passes_across_blocks(hash_name):
    rng = np.random.default_rng(7)
    words = ["near", "duplicate", "문서", "중복", "x"]
    texts = [" ".join(rng.choice(words, size=int(k))) for k in rng.integers(0, 3000, size=40)]
    texts.insert(5, "가나다 abc " * 4000)  # one document with more shingles than a block
    _assert_fused_equals_two_passes(texts, 4, hash_name, 128, 1)


def test_hashes_are_kept_when_asked_or_not_fusable():
    canonical = Canonical.of(["abcdef ghi", "가나다라마"])
    assert minhash_of_canonical(canonical, "char:4")[0].hashes is not None
    for shingle, scheme in (("word:3", "oph"), ("char:4:multiset", "oph"), ("char:4", "classic")):
        features, _ = minhash_of_canonical(canonical, shingle, scheme=scheme, keep_hashes=False)
        assert features.hashes is not None
