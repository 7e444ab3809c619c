"""Formats, paths and atomic writes (neardup.io.files)."""

import doctest
import gzip

import pytest
import zstandard

import neardup.io.files as io_files
from neardup.io import (
    read_documents,
    write_table,
)


@pytest.mark.parametrize(
    "compress,suffix", [(gzip.compress, ".gz"), (lambda b: zstandard.compress(b), ".zst")]
)
def test_compressed_input_without_its_suffix_names_the_cause(tmp_path, compress, suffix):
    plain = b'{"id": "a", "text": "one two"}\n'
    path = tmp_path / "docs.jsonl"
    path.write_bytes(compress(plain))
    with pytest.raises(
        ValueError, match=f"compressed but its name does not say so.*docs.jsonl{suffix}"
    ):
        read_documents([path])
    assert read_documents([path], input_format=f"jsonl{suffix}").read_all().ids == ["a"]
    renamed = path.rename(tmp_path / f"docs.jsonl{suffix}")
    assert read_documents([renamed]).read_all().ids == ["a"]


def test_docstring_examples():
    assert doctest.testmod(io_files).failed == 0


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    with io_files.atomic_write(target) as fh:
        fh.write(b"new, ")
        (temporary,) = [p for p in tmp_path.iterdir() if p != target]
        assert temporary.name.startswith(".t.bin.") and temporary.name.endswith(".tmp")
        assert target.read_bytes() == b"old"  # nothing is seen before the end
        fh.write(b"whole")
    assert target.read_bytes() == b"new, whole"
    with pytest.raises(KeyboardInterrupt):
        with io_files.atomic_write(target) as fh:
            fh.write(b"half")
            raise KeyboardInterrupt
    assert target.read_bytes() == b"new, whole"
    assert [p.name for p in tmp_path.iterdir()] == ["t.bin"]


def test_only_outputs_wait_for_their_output_set(tmp_path):
    with io_files.output_set():
        with io_files.atomic_write(tmp_path / "work.npy") as fh:
            fh.write(b"a work file")
        assert (tmp_path / "work.npy").exists()  # read back at once: not deferred
        write_table(tmp_path / "out.tsv", {"id": ["a"]})
        assert not (tmp_path / "out.tsv").exists()
    assert (tmp_path / "out.tsv").read_text() == "id\na\n"
