"""IDF tables: counts, the weight formula, persistence, and IDF-weighted SimHash."""

import math

import numpy as np
import pytest

from neardup.idf import IdfTable
from neardup.pipeline import signatures
from neardup.settings import Settings
from neardup.simhash import simhash_from_features
from neardup.text import hash_features, shingle_sets

TEXTS = ["the cat sat on the mat", "the dog sat on the log", "a bird", "the cat ran", ""]


def table(texts=TEXTS, shingle="word:1", batches=2):
    parts = [texts[i::batches] for i in range(batches)]
    return IdfTable.from_features([hash_features(p, shingle) for p in parts], shingle, "xxh")


def test_document_frequencies_and_weights_match_a_direct_count():
    t = table()
    docs = [set(text.split()) for text in TEXTS]
    words = sorted({w for d in docs for w in d})
    features = hash_features([" ".join(words)], "word:1").hashes
    expected_df = [sum(w in d for d in docs) for w in words]
    where = np.searchsorted(t.hashes, features)
    assert t.df[where].tolist() == expected_df
    assert t.documents == len(TEXTS)
    # The documented formula, computed directly (Python floats, round half to even).
    expected = [round((math.log((1 + len(TEXTS)) / (1 + df)) + 1) * 2**16) for df in expected_df]
    assert t.weights(features).tolist() == expected
    assert t.weights(features).dtype == np.int64
    unseen = hash_features(["zebra"], "word:1").hashes
    assert t.weights(unseen).tolist() == [round((math.log(1 + len(TEXTS)) + 1) * 2**16)]
    assert t.unseen == round((math.log(1 + len(TEXTS)) + 1) * 2**16)


def test_batching_does_not_change_the_table(tmp_path):
    assert table(batches=1) == table(batches=3)
    assert IdfTable.from_texts(TEXTS) == table()
    path = tmp_path / "idf.parquet"
    table().save(path)
    assert IdfTable.load(path) == table()
    again = tmp_path / "again.parquet"
    IdfTable.load(path).save(again)
    assert again.read_bytes() == path.read_bytes()


def test_a_loaded_table_uses_its_stored_weights(tmp_path):
    # The stored integers, not a recomputation, weigh the features: a table moved to another
    # machine gives the same fingerprints whatever that machine's logarithm rounds to.
    t = table()
    bumped = IdfTable(t.hashes, t.df, t.documents, t.shingle, t.hash_name, t.weight * 3, 7)
    path = tmp_path / "idf.parquet"
    bumped.save(path)
    loaded = IdfTable.load(path)
    assert loaded.weight.tolist() == (t.weight * 3).tolist() and loaded.unseen == 7
    assert loaded == bumped and loaded != t


def test_weighted_simhash_equals_a_numpy_reference():
    t = table()
    features = hash_features(TEXTS, "word:1")
    got = simhash_from_features(features, "idf", t)
    offsets, hashes, _ = shingle_sets(features.offsets, features.hashes)
    for d in range(len(TEXTS)):
        h = hashes[offsets[d] : offsets[d + 1]]
        w = t.weights(h)
        bits = ((h[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(bool)
        v = np.where(bits, w[:, None], -w[:, None]).sum(axis=0)
        expected = sum(1 << i for i in range(64) if v[i] >= 0)
        assert int(got[d]) == expected


def test_same_table_same_fingerprints_for_new_documents(tmp_path):
    path = tmp_path / "idf.parquet"
    table().save(path)
    settings = Settings(method="simhash", shingle="word:1", weights="idf", idf=IdfTable.load(path))
    new = ["the cat sat on a mat", "completely new words here"]
    first = signatures(new, settings).signature
    again = signatures(
        new, Settings(method="simhash", shingle="word:1", weights="idf", idf=table())
    ).signature
    assert first.tolist() == again.tolist()


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="needs an IDF table"):
        Settings(method="simhash", weights="idf")
    with pytest.raises(ValueError, match="SimHash"):
        Settings(method="minhash", weights="idf", idf=table())
    with pytest.raises(ValueError, match="shingle word:1"):
        Settings(method="simhash", shingle="word:3", weights="idf", idf=table())
    with pytest.raises(ValueError, match="only with weights='idf'"):
        Settings(method="simhash", idf=table())
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"nope")
    with pytest.raises(ValueError, match="x.parquet"):
        IdfTable.load(bad)
    with pytest.raises(ValueError, match="sorted"):
        IdfTable(np.array([3, 1], dtype=np.uint64), np.array([1, 1]), 2, "word:1", "xxh")
