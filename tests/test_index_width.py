"""The grouping in 4-byte indices (below :data:`neardup.memory.INDEX32_BELOW` documents, the
default) decides what it decides in 8-byte ones: the same groups, pairs and output bytes, in
memory and out of core (the 8-byte path is forced by a limit of 0); and the hazards of 4-byte
indices that the audit of their consumers found, each at its own scale."""

from __future__ import annotations

import json
import random
import traceback
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner
from synth_helpers import chain_corpus

from neardup import memory, pipeline
from neardup.candidates import bounds, radix, repair
from neardup.candidates.band_parts import BLOCK_ROWS, BandColumn
from neardup.candidates.chunks import CandidatePairs
from neardup.cli.main import main
from neardup.pipeline import find_groups, signatures
from neardup.rank_directory import RowSet
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
    narrow = find_groups(sig, stamps, settings, texts)
    monkeypatch.setattr(memory, "INDEX32_BELOW", 0)
    wide = find_groups(sig, stamps, settings, texts)
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

    narrow = outputs("narrow")
    monkeypatch.setattr(memory, "INDEX32_BELOW", 0)
    assert outputs("wide") == narrow
    assert narrow[1].count(b"\n") > 10  # pairs were written


# --------------------------------------------------------------------------- the audit's hazards
# Each 4-byte hazard at its own scale: index values near 2**31 in small arrays (a file of rows
# past 2 GiB is sparse, an array of them untouched zero pages), searches spied on or their
# allocations traced.

BELOW = memory.INDEX32_BELOW


def test_the_bound_leaves_room_for_the_count_and_one_past_the_last_index():
    # Every index is below n, and code that writes n itself (a block's end searched in the
    # subset's dtype) or an index + 1 (a position counted from 1) stays within int32.
    assert BELOW == 2**31 - 1
    last = BELOW - 1  # the most documents held in 4 bytes
    assert memory.index_dtype(last) is np.int32 and memory.index_dtype(BELOW) is np.int64
    assert np.array([last, last + 1], dtype=memory.index_dtype(last)).tolist() == [last, last + 1]


def _sparse_rows(path, rows: int, width: int, filled: dict[int, int]) -> np.memmap:
    """A read-only map of ``rows`` rows of ``width`` bytes whose file is sparse but for the
    rows of ``filled`` (row: byte value)."""
    with open(path, "wb") as fh:
        fh.truncate(rows * width)
        for row, value in filled.items():
            fh.seek(row * width)
            fh.write(bytes([value]) * width)
    return np.memmap(path, dtype=np.uint8, mode="r", shape=(rows, width))


def test_sketch_rows_past_2_gib_are_read_at_their_place_from_4_byte_rows(tmp_path):
    # 128-byte rows pass 2**31 bytes from row 2**24 on: int32 rows times the row's bytes
    # overflowed there (NumPy 2 keeps int32 * int in int32).
    far, farther = (1 << 24) + 3, (1 << 24) + 5
    sketches = _sparse_rows(tmp_path / "sketches.bin", far + 8, 128, {3: 7, far: 1, farther: 2})
    out = np.zeros(sketches.shape, dtype=np.uint8)  # 2 GiB of zero pages, two touched
    rows = np.array([far, farther], dtype=np.int32)
    bounds.gather_rows(sketches, 0, rows, out)
    assert out[far].tolist() == [1] * 128 and out[farther].tolist() == [2] * 128
    assert out[3].tolist() == [0] * 128  # nothing written where the wrapped offset would be


def test_a_block_past_2_gib_is_read_from_a_4_byte_first_row(tmp_path):
    far = (1 << 24) + 5
    sketches = _sparse_rows(tmp_path / "sketches.bin", far + 2, 128, {far: 2, far + 1: 3})
    two = np.zeros((2, 128), dtype=np.uint8)
    bounds.read_rows(sketches, np.int32(far), two)  # a NumPy int32 row, as from an index array
    assert two.tolist() == [[2] * 128, [3] * 128]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_first_bytes_of_rows_are_64_bit_whatever_the_rows_dtype(dtype):
    rows = np.array([0, 1 << 24, (1 << 31) - 2], dtype=dtype)
    got = bounds._first_bytes(4096 + 3 * 128, rows, 128)
    assert got.dtype == np.int64
    assert got.tolist() == [4096 + (3 + int(r)) * 128 for r in rows.tolist()]


def test_band_blocks_hold_a_blocks_rows_not_the_subsets():
    # The representatives searched are a bit a document: each block of every band's
    # partitions takes its rows' offsets from them, never an index array of all of them (16
    # MB here in int32, 0.35 GB at 100M documents).
    n = 1 << 22
    subset = RowSet.of_marks(np.arange(2 * n) % 2 == 0)
    column = BandColumn.of(np.zeros(2 * n, dtype=np.uint64))
    tracemalloc.start()
    try:
        rows = [r for _, r in column.blocks(subset)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 2 * n // BLOCK_ROWS and sum(r.shape[0] for r in rows) == n
    assert all(r.dtype == np.int32 and (r == np.arange(0, BLOCK_ROWS, 2)).all() for r in rows)
    # The blocks' offsets kept here, and one block's with its temporaries.
    assert peak < 4 * n + 3 * 4 * BLOCK_ROWS, peak


def test_no_search_converts_a_4_byte_array(tmp_path, monkeypatch):
    """Every ``np.searchsorted`` of the grouping, in memory and out of core, searches an array
    by values of its own dtype: none copies the array it searches (Python ints and lists
    count as int64, as NumPy takes them)."""

    def run(tag: str) -> None:
        texts, stamps = corpus()
        for name in ("minhash, lcs", "simhash, center, pairs all"):
            settings = SETTINGS[name]
            find_groups(signatures(texts, settings, keep_sets=False), stamps, settings, texts)
        source = tmp_path / "docs.jsonl"
        source.write_text(
            "".join(
                json.dumps({"id": f"d{i}", "text": t, "ts": int(s)}) + "\n"
                for i, (t, s) in enumerate(zip(texts, stamps))
            ),
            encoding="utf-8",
        )
        for options in [(), ("--pairs", "all")]:
            work = tmp_path / f"{tag}{len(options)}"
            work.mkdir()
            args = [source, "-o", work / "g.tsv", "--pairs-out", work / "p.tsv", "-q", *options]
            args += ["--time-field", "ts", "--memory-limit", "1M", "--tmp-dir", work]
            result = CliRunner().invoke(main, ["dedup", *map(str, args), "--workers", "1"])
            assert result.exit_code == 0, result.output

    monkeypatch.setattr(memory, "INDEX32_BELOW", BELOW)
    # Once before the spy: a kernel compiled meanwhile would see it in place of NumPy's.
    run("warm")
    real = np.searchsorted
    searched: list[tuple[np.dtype, np.dtype, str]] = []

    def spy(a, v, *args, **kwargs):
        caller = traceback.extract_stack(limit=2)[0]
        searched.append((np.asarray(a).dtype, np.asarray(v).dtype, f"{caller.name}"))
        return real(a, v, *args, **kwargs)

    monkeypatch.setattr(np, "searchsorted", spy)
    run("spied")
    assert [s for s in searched if s[0] != s[1]] == []


def test_repaired_links_keep_the_candidates_4_byte_ends(monkeypatch):
    # The repair round's pairs are int64: joined to the candidates as they are, they widened
    # every candidate to 8 bytes before the components were found again.
    seen = []
    components = pipeline.connected_components

    def spied(n, a, b):
        seen.append((a.dtype, b.dtype))
        return components(n, a, b)

    monkeypatch.setattr(memory, "INDEX32_BELOW", BELOW)
    monkeypatch.setattr(pipeline, "connected_components", spied)
    texts, stamps = corpus()
    settings = SETTINGS["minhash, lcs"]
    groups = find_groups(signatures(texts, settings, keep_sets=False), stamps, settings, texts)
    assert groups.stats["repair_accepted"] > 0  # the repair joined links
    assert seen and all(dtypes == (np.int32, np.int32) for dtypes in seen), seen


def test_pair_keys_of_4_byte_indices_near_2_31():
    # Pairs packed min << 32 | max from int32 ends, by NumPy and by compiled code, and sorted.
    a = np.array([BELOW - 2, 7, BELOW - 3], dtype=np.int32)
    b = np.array([3, BELOW - 2, BELOW - 2], dtype=np.int32)
    keys = repair._keys(a, b)
    assert [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in keys] == [
        (3, BELOW - 2), (7, BELOW - 2), (BELOW - 3, BELOW - 2),
    ]  # fmt: skip
    found = np.zeros(3, dtype=bool)
    repair.mark_among(np.sort(keys), b, a, found)  # either orientation
    assert found.all()
    left, right, order = radix.sorted_pairs(a, b, np.arange(3), BELOW - 1)
    assert list(zip(left.tolist(), right.tolist())) == [
        (7, BELOW - 2), (BELOW - 3, BELOW - 2), (BELOW - 2, 3),
    ]  # fmt: skip
    assert order.tolist() == [1, 2, 0]
    # Candidates unpacked from positions (< 2**32) into int32 document indices.
    packed = np.array([0 << 32 | 1, 2 << 32 | 0], dtype=np.uint64)
    pair_a, pair_b = CandidatePairs.of_packed(packed, a).slice(0, 2)
    assert pair_a.dtype == pair_b.dtype == np.int32
    assert list(zip(pair_a.tolist(), pair_b.tolist())) == [(BELOW - 2, 7), (BELOW - 3, BELOW - 2)]
