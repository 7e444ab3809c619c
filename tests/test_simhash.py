import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.hashing import hash_strings
from neardup.simhash import EMPTY_FINGERPRINT, hamming_distance, simhash, simhash_from_features
from neardup.text import hash_features, shingles

# Stored fingerprints are compared across versions: these values must never change.
VECTORS = [
    (
        "SimHash 계산 방법을 간단히 정리하면 다음과 같다.",
        0x80804D34B1A4AAE1,
        0xBCD21F7D91D73DF1,
        0x9A5E26F00040CA0F,
    ),
    (
        "The quick brown fox jumps over the lazy dog.",
        0x39EDBF7F29B4B877,
        0x51591F05F3D327AD,
        0x8BAC2707D1FBDCCA,
    ),
    ("日本語の文章です。", 0x7423CB83402FF686, 0xE7EAFEFFDB4BF797, 0xE5B59FFC65E9D4EF),
]


@pytest.mark.parametrize("text, word3, char5, md5", VECTORS)
def test_fingerprint_vectors(text, word3, char5, md5):
    assert int(simhash([text])[0]) == word3
    assert int(simhash([text], "char:5")[0]) == char5
    assert int(simhash([text], hash_name="md5")[0]) == md5


def reference_simhash(text, spec="word:3", weights="set"):
    feats = shingles(text, spec)
    if weights == "set":
        feats = sorted(set(feats))
    counters = [0] * 64
    for h in hash_strings(feats).tolist():
        for bit in range(64):
            counters[bit] += 1 if (h >> bit) & 1 else -1
    return sum(1 << bit for bit in range(64) if counters[bit] >= 0)


@settings(deadline=None, max_examples=150)
@given(st.text(alphabet="ab cdé가나\n,", max_size=60), st.sampled_from(["set", "tf"]))
def test_matches_plain_definition(text, weights):
    assert int(simhash([text], weights=weights)[0]) == reference_simhash(text, weights=weights)


@settings(deadline=None, max_examples=100)
@given(st.text(max_size=80), st.text(max_size=80))
def test_identical_texts_equal_and_distance_symmetric(a, b):
    fa, fb, fa2 = simhash([a, b, a])
    assert fa == fa2
    assert hamming_distance(fa, fb) == hamming_distance(fb, fa)
    assert int(hamming_distance(fa, fa)) == 0


def test_empty_document_has_documented_fingerprint():
    assert simhash(["", "!!!"]).tolist() == [int(EMPTY_FINGERPRINT)] * 2


def test_near_duplicates_are_closer_than_unrelated_texts():
    base = " ".join(f"word{i}" for i in range(200))
    edited = base.replace("word50 ", "changed ")
    other = " ".join(f"other{i}" for i in range(200))
    a, b, c = simhash([base, edited, other])
    assert hamming_distance(a, b) < hamming_distance(a, c)
    assert int(hamming_distance(a, b)) <= 6


def test_hamming_distance_vectorised():
    a = np.array([0, 0xFF, 2**64 - 1], dtype=np.uint64)
    b = np.array([0, 0x0F, 0], dtype=np.uint64)
    assert hamming_distance(a, b).tolist() == [0, 4, 64]


def test_bad_weights():
    with pytest.raises(ValueError, match="weights"):
        simhash_from_features(hash_features(["x"]), "idf")


@settings(deadline=None, max_examples=60)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "가", "나", "the", "of"]), max_size=12).map(
            " ".join
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["word:1", "word:2", "stopword:1"]),
)
def test_idf_weighted_simhash_equals_the_plain_definition(corpus, spec):
    import math

    from neardup.idf import IdfTable

    table = IdfTable.from_texts(corpus, spec)
    docs = [set(shingles(text, spec)) for text in corpus]
    got = simhash(corpus, spec, weights="idf", idf=table).tolist()
    for d, features in enumerate(docs):
        counters = [0] * 64
        for feature in features:
            df = sum(feature in other for other in docs)
            w = round((math.log((1 + len(corpus)) / (1 + df)) + 1) * 2**16)
            (h,) = hash_strings([feature]).tolist()
            for bit in range(64):
                counters[bit] += w if (h >> bit) & 1 else -w
        assert got[d] == sum(1 << bit for bit in range(64) if counters[bit] >= 0)


def test_multiset_simhash_sees_repeats():
    once, thrice = "alpha beta gamma", "alpha beta gamma alpha beta gamma alpha beta gamma"
    plain = simhash([once, thrice], "word:1")
    multi = simhash([once, thrice], "word:1:multiset")
    assert plain[0] == plain[1] and multi[0] != multi[1]
    assert multi[0] == plain[0]  # first occurrences keep their hash


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), max_size=300), min_size=1, max_size=6),
    st.integers(0, 64),
)
def test_long_documents_sorted_path_equals_hash_set(docs, long_document):
    # Few distinct values force many repeats, which the two ways of de-duplicating must agree on.
    from neardup.simhash import _BYTE_LANES, _simhash_kernel

    values = np.array(
        [(0x9E3779B97F4A7C15 * (v + 1)) % 2**64 for doc in docs for v in doc], np.uint64
    )
    offsets = np.cumsum([0] + [len(doc) for doc in docs]).astype(np.int64)
    by_set = _simhash_kernel(offsets, values, True, _BYTE_LANES, 1 << 30)
    by_sorting = _simhash_kernel(offsets, values, True, _BYTE_LANES, long_document)
    assert by_set.tolist() == by_sorting.tolist()
