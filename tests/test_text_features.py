"""The shingle kernels' fast paths against the plain statement of the shingles."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.hashing import hash_strings
from neardup.text import hash_features, shingles

# Code points of 1 to 4 UTF-8 bytes that are tokens, and spaces: runs of Hangul syllables
# (3 bytes) give the shingles of 3 x size bytes that take a specialised hash, the others
# every other length around them.
WIDTHS = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab09 ")),
        st.sampled_from(list("éßñ")),  # 2 bytes (ß folds to "ss")
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAC10),  # Hangul, 3 bytes
        st.sampled_from(list("中文")),  # CJK, 3 bytes
        st.sampled_from(["\U00020000", "\U00020001"]),  # CJK extension B, 4 bytes
    ),
    max_size=40,
)


def _assert_hashes_are_of_the_shingles(texts, spec, hash_name):
    features = hash_features(texts, spec, hash_name)
    per_text = [shingles(text, spec) for text in texts]
    assert features.offsets.tolist() == np.cumsum([0] + [len(s) for s in per_text]).tolist()
    everything = [shingle for text_shingles in per_text for shingle in text_shingles]
    assert features.hashes.tolist() == hash_strings(everything, hash_name).tolist()


@settings(deadline=None, max_examples=300)
@given(
    st.lists(WIDTHS, max_size=6),
    st.sampled_from(["char:1", "char:3", "char:4", "char:5", "char:6", "char:11", "char:12"]),
)
def test_texts_of_mixed_widths_hash_their_shingles(texts, spec):
    # char:4 and char:5 hash their 12- and 15-byte shingles with the length as a constant;
    # char:11 and char:12 reach shingles of 32 bytes and more.
    _assert_hashes_are_of_the_shingles(texts, spec, "xxh")


@settings(deadline=None, max_examples=100)
@given(st.lists(WIDTHS, max_size=4), st.sampled_from(["char:4", "char:5"]))
def test_texts_of_mixed_widths_hash_their_shingles_with_md5(texts, spec):
    _assert_hashes_are_of_the_shingles(texts, spec, "md5")


@settings(deadline=None, max_examples=300)
@given(
    st.lists(st.text(alphabet="aZ9 -", max_size=8), max_size=8),
    st.sampled_from(["char:1", "char:4", "char:5", "char:7"]),
)
def test_ascii_texts_shorter_than_a_shingle_hash_their_one_shingle(texts, spec):
    # ASCII texts are copied without code point starts; one with fewer characters than the
    # shingle size has one shingle, the whole text.
    _assert_hashes_are_of_the_shingles(texts, spec, "xxh")
