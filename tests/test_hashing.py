import hashlib

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from neardup.hashing import (
    _xxh64_below16,
    hash_bytes,
    hash_code,
    hash_strings,
    splitmix64,
    splitmix64_stream,
)


def md5_64(data: bytes) -> int:
    return int.from_bytes(hashlib.md5(data).digest()[:8], "big")


# Published values; they are part of the file format and must never change.
def test_fixed_vectors():
    assert hash_bytes(b"") == 0xEF46DB3751D8E999
    assert hash_bytes(b"abc") == 0x44BC2CF5AD770999
    assert hash_bytes(b"abc", "md5") == 0x900150983CD24FB0
    assert hash_bytes(b"", "md5") == 0xD41D8CD98F00B204


@pytest.mark.parametrize(
    "length", [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 31, 32, 33, 55, 56, 57, 63, 64, 65, 127, 1000]
)
def test_every_length_path_matches_reference(length):
    data = bytes((i * 37 + 11) % 256 for i in range(length))
    assert hash_bytes(data) == xxhash.xxh64_intdigest(data)
    assert hash_bytes(data, "md5") == md5_64(data)


@njit(cache=False)
def _below16(words, length):
    return _xxh64_below16(words[0], words[1], np.uint64(length))


@settings(deadline=None, max_examples=300)
@given(st.binary(min_size=16, max_size=16), st.integers(0, 15))
def test_hash_of_bytes_below_16_in_two_words_matches_reference(data, length):
    """The bytes past ``length`` in the two words change nothing."""
    words = np.frombuffer(data, dtype="<u8")
    assert _below16(words, length) == xxhash.xxh64_intdigest(data[:length])


@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(max_size=80), max_size=20))
def test_hash_strings_matches_reference(strings):
    got = hash_strings(strings).tolist()
    assert got == [xxhash.xxh64_intdigest(s.encode("utf-8", "surrogatepass")) for s in strings]
    got_md5 = hash_strings(strings, "md5").tolist()
    assert got_md5 == [md5_64(s.encode("utf-8", "surrogatepass")) for s in strings]


def test_unknown_hash_name():
    with pytest.raises(ValueError, match="xxh, md5"):
        hash_code("sha1")


def test_splitmix64_known_values():
    # splitmix64 with state 0: the first outputs of the reference generator.
    assert int(splitmix64(np.uint64(0))) == 0xE220A8397B1DCDAF
    stream = splitmix64_stream(np.uint64(0), 2)
    assert stream.tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
