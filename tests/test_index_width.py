"""The grouping in 4-byte indices (below :data:`neardup.memory.INDEX32_BELOW` documents, off by
default) decides what it decides in 8-byte ones: the same groups, pairs and output bytes, in
memory and out of core. The 4-byte path is turned on by raising the limit to 2**31."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from synth_helpers import chain_corpus

from neardup import memory
from neardup.cli.main import main
from neardup.pipeline import find_groups, signatures
from neardup.settings import Settings

GROUP_FIELDS = ("original", "is_original", "group_size", "pair_a", "pair_b")


def corpus(seed: int = 5) -> tuple[list[str], np.ndarray]:
    """Edit chains, exact copies of some of their texts, and timestamps out of input order
    (so that the document order is a sort and an original need not be the smallest index)."""
    rng = random.Random(seed)
    texts = [d["text"] for d in chain_corpus(seed, bases=8)]
    texts += [rng.choice(texts).upper() for _ in range(len(texts) // 3)]
    stamps = np.array([rng.randint(0, 20) for _ in texts], dtype=np.int64)
    return texts, stamps


SETTINGS = {
    "minhash, lcs": Settings(),
    "minhash, jaccard, center": Settings(verify="jaccard:0.7", grouping="center"),
    "minhash, pairs all": Settings(pairs="all"),
    "simhash": Settings(method="simhash", hamming_k=4),
    "simhash, center, pairs all": Settings(
        method="simhash", hamming_k=4, grouping="center", pairs="all"
    ),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_find_groups_decides_the_same_in_4_and_8_byte_indices(name, monkeypatch):
    settings = SETTINGS[name]
    texts, stamps = corpus()
    sig = signatures(texts, settings, keep_sets=False)
    wide = find_groups(sig, stamps, settings, texts)
    monkeypatch.setattr(memory, "INDEX32_BELOW", 1 << 31)
    narrow = find_groups(sig, stamps, settings, texts)
    assert narrow.original.dtype == np.int32 and wide.original.dtype == np.int64
    assert narrow.group_size.dtype == np.int32 and wide.group_size.dtype == np.int64
    assert narrow.stats["groups"] < len(texts)  # there are groups to decide
    for field in GROUP_FIELDS:
        assert getattr(narrow, field).tolist() == getattr(wide, field).tolist(), field
    assert np.array_equal(narrow.pair_value, wide.pair_value)
    assert np.array_equal(narrow.pair_passed, wide.pair_passed)


@pytest.mark.parametrize("options", [(), ("--pairs", "all"), ("--grouping", "center")])
def test_out_of_core_outputs_are_the_same_bytes_in_4_and_8_byte_indices(
    tmp_path, options, monkeypatch
):
    """A run whose band hashes, sketches and verification data spill (1M of memory)."""
    texts, stamps = corpus()
    rows = [{"id": f"d{i}", "text": t, "ts": int(s)} for i, (t, s) in enumerate(zip(texts, stamps))]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def outputs(tag: str) -> tuple[bytes, bytes]:
        groups, pairs, work = (tmp_path / f"{tag}.{x}" for x in ("groups.tsv", "pairs.tsv", "tmp"))
        work.mkdir()
        args = [source, "-o", groups, "--pairs-out", pairs, "--time-field", "ts", "-q"]
        args += [*options, "--memory-limit", "1M", "--tmp-dir", work, "--workers", "1"]
        result = CliRunner().invoke(main, ["dedup", *map(str, args)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return groups.read_bytes(), pairs.read_bytes()

    wide = outputs("wide")
    monkeypatch.setattr(memory, "INDEX32_BELOW", 1 << 31)
    assert outputs("narrow") == wide
    assert wide[1].count(b"\n") > 10  # pairs were written
