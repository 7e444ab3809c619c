"""Tests for benchmarks/short_corpus.py: the documents it promises (JSON lines, 10-60 words,
the share of copies and edits), the same bytes from the same seed, and a file neardup reads."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from short_corpus import MAX_WORDS, MIN_WORDS, ShortCorpus, open_output  # noqa: E402

VOCAB = np.array([f"w{i}" for i in range(500)] + ["naïve", "카페"], dtype=object)


def lines(data) -> list[dict]:
    return [json.loads(line) for line in bytes(data).decode("utf-8").splitlines()]


def test_documents_are_short_json_lines_with_a_quarter_copies_and_edits():
    generator = ShortCorpus(VOCAB, seed=5, dup_rate=0.25)
    docs = lines(generator.block(100, 20_000))
    assert [d["id"] for d in docs] == [f"s{i:010d}" for i in range(100, 20_100)]
    lengths = np.array([len(d["text"].split()) for d in docs])
    assert lengths.min() >= MIN_WORDS and lengths.max() <= MAX_WORDS
    seen: set[str] = set()
    exact = 0
    for d in docs:
        exact += d["text"] in seen
        seen.add(d["text"])
    # Half the derived documents are exact copies (a few edits may also repeat a text).
    assert 0.11 < exact / len(docs) < 0.14


def test_same_seed_same_bytes_and_blocks_do_not_depend_on_buffers():
    a = ShortCorpus(VOCAB, seed=2)
    b = ShortCorpus(VOCAB, seed=2)
    first = bytes(a.block(0, 3_000, slot=0))
    assert bytes(b.block(0, 3_000, slot=1)) == first
    assert bytes(a.block(3_000, 10, slot=0)) != first
    assert bytes(ShortCorpus(VOCAB, seed=3).block(0, 3_000)) != first


def test_compressed_outputs_read_back(tmp_path):
    block = bytes(ShortCorpus(VOCAB, seed=1).block(0, 500))
    readers = {
        "c.jsonl.zst": lambda raw: zstandard.ZstdDecompressor().stream_reader(raw).read(),
        "c.jsonl.gz": gzip.decompress,
    }
    for name, read in readers.items():
        with open_output(tmp_path / name) as out:
            out.write(block)
        assert read((tmp_path / name).read_bytes()) == block
