import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.hashing import hash_strings
from neardup.text import (
    Shingling,
    canonical,
    hash_features,
    normalize,
    normalize_many,
    shingle_sets,
    shingles,
    stop_words,
)

MIXED = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("abcXYZ 0129,.;!?'\"-\n\t\u00a0\u3000_/")),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAC20),  # Hangul syllables
        st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),  # kana
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4E20),  # CJK
        st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),  # full-width forms
        st.characters(min_codepoint=0x0300, max_codepoint=0x0310),  # combining marks
        st.characters(),
    ),
    max_size=60,
)


def test_normalisation_rules():
    assert normalize("  Ｈｅｌｌｏ,\n   WORLD — 안녕\t하세요!! ") == "hello world 안녕 하세요"
    assert normalize("Straße") == "strasse"
    assert normalize("“Quoted” – text…") == "quoted text"
    assert normalize("a\u00a0b\u3000c") == "a b c"
    assert normalize("") == "" and normalize(" !? ") == ""
    assert normalize("ｶﾀｶﾅ") == "カタカナ"
    assert normalize("①②") == "12"


@settings(deadline=None, max_examples=300)
@given(MIXED)
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once
    assert "  " not in once and once == once.strip()


@settings(deadline=None, max_examples=100)
@given(st.lists(MIXED, max_size=12))
def test_normalize_many_matches_single(texts):
    assert normalize_many(texts) == [normalize(t) for t in texts]


def test_seed_example_word_trigrams():
    assert shingles("SimHash 계산 방법을 간단히 정리하면", "word:3") == [
        "simhash 계산 방법을",
        "계산 방법을 간단히",
        "방법을 간단히 정리하면",
    ]


def test_short_and_empty_documents():
    assert shingles("only two", "word:3") == ["only two"]
    assert shingles("abc", "char:5") == ["abc"]
    assert shingles("!!! ...", "word:3") == []
    features = hash_features(["", "one", "a b c d"], "word:3")
    assert features.offsets.tolist() == [0, 0, 1, 3]
    assert features.empty.tolist() == [True, False, False]


def test_char_shingles_ignore_spacing():
    # Korean spacing errors and words broken across lines give the same char shingles.
    assert shingles("게임 엔진을 다루고", "char:3") == shingles("게임엔진을\n다루고", "char:3")


@settings(deadline=None, max_examples=200)
@given(
    st.lists(MIXED, max_size=8),
    st.sampled_from(["word:1", "word:3", "word:5", "char:1", "char:4"]),
    st.sampled_from(["xxh", "md5"]),
)
def test_kernel_hashes_the_stated_shingles(texts, spec, hash_name):
    features = hash_features(texts, spec, hash_name)
    for d, text in enumerate(texts):
        expected = hash_strings(shingles(text, spec), hash_name)
        got = features.hashes[features.offsets[d] : features.offsets[d + 1]]
        assert got.tolist() == expected.tolist()


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.text(alphabet="abcXYZ 0129,.;!-\n", max_size=80), max_size=6),
    st.sampled_from(["char:1", "char:3", "char:4", "char:8", "char:31", "char:32", "char:40"]),
)
def test_ascii_texts_take_the_fixed_length_hash_with_the_same_values(texts, spec):
    # Texts of ASCII only have every char shingle `size` bytes long: a path of their own.
    features = hash_features(texts, spec, "xxh")
    for d, text in enumerate(texts):
        expected = hash_strings(shingles(text, spec), "xxh")
        got = features.hashes[features.offsets[d] : features.offsets[d + 1]]
        assert got.tolist() == expected.tolist()


def test_content_fingerprint_equal_iff_same_normalised_text():
    f = hash_features(["Hello, World!", "hello world", "hello  world.", "hello worlds"])
    c = [tuple(row) for row in f.content.tolist()]
    assert c[0] == c[1] == c[2] != c[3]


def test_shingle_sets_sorted_unique_with_counts():
    f = hash_features(["a b a b a", "x"], "word:1")
    offsets, values, counts = shingle_sets(f.offsets, f.hashes)
    assert offsets.tolist() == [0, 2, 3]
    first = values[: offsets[1]]
    assert np.all(first[:-1] < first[1:])
    assert sorted(counts[:2].tolist()) == [2, 3]


@pytest.mark.parametrize("spec", ["word:0", "char:-1", "line:3", "word:x", "char:65"])
def test_bad_shingle_spec(spec):
    with pytest.raises(ValueError, match="shingle"):
        Shingling.parse(spec)


def test_shingle_spec_defaults():
    assert Shingling.parse("word") == Shingling("word", 3)
    assert Shingling.parse("char") == Shingling("char", 5)
    assert str(Shingling.parse(" char:7 ")) == "char:7"


def test_code_point_tables_cached_on_disk_equal_a_fresh_build(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    for table in (canonical.token_table, canonical._fold_table):
        fresh = table.__wrapped__.__wrapped__()  # below the process and disk caches
        table.cache_clear()
        built = table()  # no file yet: builds and writes it
        (path,) = tmp_path.glob(f"text.{table.__wrapped__.__name__}-*.npy")
        table.cache_clear()
        loaded = table()  # from the file
        path.write_bytes(b"not a table")
        table.cache_clear()
        rebuilt = table()  # a damaged file is built again
        table.cache_clear()
        for got in (built, loaded, rebuilt):
            np.testing.assert_array_equal(got, fresh)
            assert got.dtype == fresh.dtype


# ---------------------------------------------------------------- multiset and stop-word shingles

repeating_words = st.lists(
    st.sampled_from(
        ["the", "a", "cat", "sat", "on", "mat", "and", "dog", "그리고", "학교에", "집"]
    ),
    min_size=0,
    max_size=30,
).map(" ".join)


@settings(max_examples=120, deadline=None)
@given(
    repeating_words, repeating_words, st.sampled_from(["word:1", "word:2", "char:3", "stopword:2"])
)
def test_multiset_jaccard_equals_brute_force(a, b, base):
    from collections import Counter

    spec = base + ":multiset"
    ha, hb = hash_features([a], spec).hashes, hash_features([b], spec).hashes
    ca, cb = Counter(shingles(a, base)), Counter(shingles(b, base))
    assert len(set(ha.tolist())) == sum(ca.values())  # every repeat is a feature of its own
    union = np.union1d(ha, hb).shape[0]
    got = np.intersect1d(ha, hb).shape[0] / union if union else 1.0
    multiset_union = sum((ca | cb).values())
    expected = sum((ca & cb).values()) / multiset_union if multiset_union else 1.0
    assert got == pytest.approx(expected)


def test_multiset_keeps_first_occurrences_and_set_specs_are_unchanged():
    plain = hash_features(["a b a b a"], "word:1")
    multi = hash_features(["a b a b a"], "word:1:multiset")
    assert multi.hashes[:2].tolist() == plain.hashes[:2].tolist()
    assert len(set(multi.hashes.tolist())) == 5 and len(set(plain.hashes.tolist())) == 2
    assert str(Shingling.parse("word:3")) == "word:3"
    with pytest.raises(ValueError, match="multiset"):
        Shingling.parse("word:3:bag")


ENGLISH_WORDS = ["the", "of", "and", "cat", "runs", "fast", "The,", "OF"]
KOREAN_WORDS = ["그리고", "및", "것", "수", "학교에", "갔다", "집", "이", "등", "그런데"]


def brute_force_stopword_shingles(text, k, stops):
    """The definition of stopword:k, in plain Python."""
    words = normalize(text).split()
    if not words:
        return []
    if len(words) < k:
        return [" ".join(words)]
    grams = [(w, " ".join(words[i : i + k])) for i, w in enumerate(words[: len(words) - k + 1])]
    anchored = [g for w, g in grams if w in stops]
    return anchored or [g for _, g in grams]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.sampled_from(ENGLISH_WORDS + KOREAN_WORDS), max_size=25).map(" ".join),
    st.integers(1, 4),
    st.sampled_from(["auto", "en", "ko"]),
)
def test_stopword_shingles_equal_a_python_filter(text, k, source):
    stops = set(stop_words(source))
    expected = brute_force_stopword_shingles(text, k, stops)
    spec = f"stopword:{k}:{source}"
    assert shingles(text, spec) == expected
    assert hash_features([text], spec).hashes.tolist() == hash_strings(expected).tolist()
    # A batch gives every document the features it gets alone.
    batch = hash_features([text, "the cat", text], spec)
    assert batch.hashes[batch.offsets[2] :].tolist() == hash_strings(expected).tolist()


def test_stop_word_lists():
    en, ko, both = set(stop_words("en")), set(stop_words("ko")), set(stop_words("auto"))
    assert {"the", "of", "and"} <= en and {"그리고", "및", "것"} <= ko
    assert both == en | ko and not en & ko
    assert all(w == normalize(w) and " " not in w for w in both)


def test_stop_word_file(tmp_path):
    path = tmp_path / "stops.txt"
    path.write_text("# my list\nCAT\n\nrun\n", encoding="utf-8")
    spec = f"stopword:2:{path}"
    assert str(Shingling.parse(spec)) == spec
    assert shingles("the cat runs fast the dog", spec) == ["cat runs"]
    path.write_text("dog\n", encoding="utf-8")  # an edited file is read again
    assert shingles("the cat runs fast, dog bites", spec) == ["dog bites"]
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no word"):
        hash_features(["a b"], spec)
    path.write_text("two words\n", encoding="utf-8")
    with pytest.raises(ValueError, match="more than one word"):
        hash_features(["a b"], spec)
    with pytest.raises(ValueError, match="auto, en, ko or a readable file"):
        hash_features(["a b"], f"stopword:2:{tmp_path / 'missing.txt'}")


def test_without_an_anchor_a_document_keeps_all_its_shingles():
    assert shingles("alpha beta gamma delta", "stopword:2") == shingles(
        "alpha beta gamma delta", "word:2"
    )
    f = hash_features(["alpha beta gamma", "the alpha beta", ""], "stopword:2")
    assert np.diff(f.offsets).tolist() == [2, 1, 0]


@pytest.mark.parametrize(
    "spec, parsed",
    [
        ("stopword:3", Shingling("stopword", 3, False, "auto")),
        ("stopword:3:ko", Shingling("stopword", 3, False, "ko")),
        ("stopword:2:en:multiset", Shingling("stopword", 2, True, "en")),
        ("stopword:4:set", Shingling("stopword", 4, False, "auto")),
        ("word:3:set", Shingling("word", 3)),
        ("char:4:multiset", Shingling("char", 4, True)),
    ],
)
def test_feature_option_specs(spec, parsed):
    assert Shingling.parse(spec) == parsed
    assert Shingling.parse(str(parsed)) == parsed


@pytest.mark.parametrize(
    "spec",
    ["word:3:en", "char:5:ko", "word:3:bag", "stopword:3:set:multiset", "word:3:multiset:set"],
)
def test_bad_feature_option_specs(spec):
    with pytest.raises(ValueError, match="stopword:3"):
        Shingling.parse(spec)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(
                st.integers(0, 2**64 - 1),
                st.integers(0, 7),  # tiny values: one bucket, many repeats
                st.integers(2**64 - 8, 2**64 - 1),  # the top bucket
                st.sampled_from([2**63, 2**63 + 1, 2**32]),
            ),
            max_size=300,
        ),
        max_size=8,
    )
)
def test_shingle_sets_equal_numpy_unique(docs):
    hashes = np.array([h for doc in docs for h in doc], dtype=np.uint64)
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(doc) for doc in docs], out=offsets[1:])
    set_offsets, set_hashes, counts = shingle_sets(offsets, hashes)
    for d in range(len(docs)):
        values, times = np.unique(hashes[offsets[d] : offsets[d + 1]], return_counts=True)
        part = slice(set_offsets[d], set_offsets[d + 1])
        np.testing.assert_array_equal(set_hashes[part], values)
        np.testing.assert_array_equal(counts[part], times)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(MIXED, st.text(st.sampled_from("aé한😀\x00\u1100\u3131İßﬁ"), max_size=8)),
        max_size=8,
    ).map(lambda texts: [t.encode("utf-8", "replace").decode() for t in texts]),  # UTF-8 only
    st.integers(0, 3),
    st.booleans(),
)
def test_canonical_texts_of_an_arrow_column(texts, start, large):
    # The Arrow route (UTF-8 transcoded in compiled code) gives the bytes of the str route,
    # also for a sliced array and 64-bit offsets.
    array = pa.array(["skipped"] * start + texts, pa.large_string() if large else pa.string())
    column = canonical.TextColumn(array.slice(start))
    for got, want in zip(
        canonical.canonical_texts(column), canonical.canonical_texts(texts), strict=True
    ):
        assert np.array_equal(got, want)
    of_column, of_strs = canonical.Canonical.of(column), canonical.Canonical.of(texts)
    assert np.array_equal(of_column.data, of_strs.data)
