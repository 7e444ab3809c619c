"""Formats, paths and opening inputs (neardup.io.files)."""

import doctest
import gzip

import pytest
import zstandard

import neardup.io.files as io_files
from neardup.io import (
    InputError,
    read_documents,
)


@pytest.mark.parametrize(
    "compress,suffix", [(gzip.compress, ".gz"), (lambda b: zstandard.compress(b), ".zst")]
)
def test_compressed_input_without_its_suffix_names_the_cause(tmp_path, compress, suffix):
    plain = b'{"id": "a", "text": "one two"}\n'
    path = tmp_path / "docs.jsonl"
    path.write_bytes(compress(plain))
    with pytest.raises(
        ValueError,
        match=f"compressed but its name does not say so.*docs.jsonl{suffix}.*--input-format "
        f"jsonl{suffix}",
    ):
        read_documents([path])
    assert read_documents([path], input_format=f"jsonl{suffix}").read_all().ids == ["a"]
    renamed = path.rename(tmp_path / f"docs.jsonl{suffix}")
    assert read_documents([renamed]).read_all().ids == ["a"]


def test_an_unknown_extension_names_the_flag_that_chooses_the_format(tmp_path):
    path = tmp_path / "docs.xml"
    path.write_text('{"id": "a", "text": "one two"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"cannot tell the format of .*docs.xml.*--input-format"):
        read_documents([path])


def test_docstring_examples():
    assert doctest.testmod(io_files).failed == 0


@pytest.mark.parametrize("frames", [1, 3])
def test_a_zstd_input_cut_short_is_unreadable_input_not_fewer_documents(tmp_path, frames):
    rows = b"".join(b'{"id": "%d", "text": "words of document %d"}\n' % (i, i) for i in range(3000))
    third = len(rows) // 3
    parts = [rows[:third], rows[third : 2 * third], rows[2 * third :]] if frames == 3 else [rows]
    whole = b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)
    path = tmp_path / "docs.jsonl.zst"
    path.write_bytes(whole)
    assert len(read_documents([path]).read_all().ids) == 3000  # every frame read
    path.write_bytes(whole[: len(whole) - 7])
    with pytest.raises(InputError, match=r"docs.jsonl.zst, line \d+: unreadable input.*cut short"):
        read_documents([path]).read_all()
