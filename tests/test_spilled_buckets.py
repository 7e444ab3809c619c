"""The repair round's buckets on disk past a bound, their pairs in sorted runs: the same pairs,
counts and output bytes as in memory (``neardup.engines.spilled_buckets``)."""

import builtins
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from synth_helpers import chain_corpus
from test_bucket_lists import SIZES, SKETCHES, THRESHOLD, _parts, bucket_sets

import neardup.engines.spilled_buckets as spilled_buckets
from neardup.candidates import chunks
from neardup.candidates.bounds import length_possible
from neardup.candidates.bucket_lists import listed_pairs
from neardup.candidates.chunks import BlockParts, CandidatePairs, bounded_pairs
from neardup.cli.main import main
from neardup.engines.pair_runs import PairRuns
from neardup.engines.spill import WorkDir
from neardup.engines.spilled_buckets import SpilledBlockParts, SpilledBuckets, SpillStores
from neardup.lcs import possible_pairs
from neardup.text.units import lcs_unit_sketches


def _spilled(work, bands, others, limit) -> SpilledBuckets:
    parts = SpilledBuckets(work, limit)
    for band in _parts(bands, others).parts:
        parts.append((*band, 0))
    parts.others = sum(others)
    return parts


def _buckets(slices) -> list[list[int]]:
    return [m[s:e].tolist() for o, m in slices for s, e in zip(o[:-1], o[1:])]


@settings(max_examples=100, deadline=None)
@given(
    bucket_sets(),
    st.integers(1, 400),
    st.integers(8, 600),
    st.integers(1, 200),
    st.sampled_from([0.0, THRESHOLD]),
)
def test_buckets_and_pairs_on_disk_list_what_memory_does(
    tmp_path_factory, case, limit, union_limit, slice_pairs, threshold
):
    documents, bands, others = case
    bounds = (SIZES, SKETCHES, threshold) if threshold else ()
    want = listed_pairs(_parts(bands, others), documents, 16, *bounds)
    with WorkDir(tmp_path_factory.mktemp("buckets"), "k", "out") as work:
        parts = _spilled(work, bands, others, limit)
        held = sum(len(bucket) + 1 for band in bands for bucket in band) * 4
        assert (parts.spilled_buckets > 0) == (held > limit) or not held
        # The buckets come back in order, however many went to disk.
        assert _buckets(parts.slices(16, 7)) == [b.tolist() for band in bands for b in band]
        union = PairRuns(work, union_limit, "repair")
        got = listed_pairs(parts, documents, 16, *bounds, union=union, slice_pairs=slice_pairs)
        assert got[0].tolist() == want[0].tolist() and got[1] == want[1]


def test_stores_sum_what_they_wrote(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        stores = SpillStores(work, limit=16)
        parts = stores.bucket_parts()
        parts.append((np.arange(6, dtype=np.uint32), np.array([3, 3], np.int32), 0))
        union = stores.pair_union()
        for values in ([1, 2, 3], [4, 5], [6]):
            union.add(np.array(values, dtype=np.uint64))
        union.values()
        runs, written = stores.figures()
        assert parts.disk_bytes == 4 * (6 + 2) and runs == union.spilled_runs >= 2
        assert written == parts.disk_bytes + union.disk_bytes
        assert stores.figures() == (0, 0)  # let go once counted


def test_a_truncated_bucket_file_is_an_error(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        parts = SpilledBuckets(work, limit=4)
        parts.append((np.arange(6, dtype=np.uint32), np.array([3, 3], np.int32), 0))
        with open(parts.members_path, "r+b") as fh:
            fh.truncate(8)
        with pytest.raises(ValueError, match="ends before value"):
            list(parts.slices(16, 100))


def _corpus(path):
    """The edit chains of ``chain_corpus`` (buckets whose earliest member fails against
    members that pass together: the repair round links them) and 1,500 families of four
    short texts of 30 words that differ in their last (a bucket of every family in most
    bands: more members than a tight budget's bound), with times."""
    rng = np.random.default_rng(5)
    docs = chain_corpus(bases=24)
    for family in range(1500):
        words = " ".join(f"f{w}" for w in rng.integers(0, 5000, 29))
        docs += [{"id": f"f{family}-{k}", "text": f"{words} last{k}"} for k in range(4)]
    path.write_text("".join(json.dumps({**d, "ts": k % 5}) + "\n" for k, d in enumerate(docs)))
    return path


def _dedup(corpus, out, *options):
    files = [out / name for name in ("groups.tsv", "pairs.tsv", "summary.json")]
    result = CliRunner().invoke(
        main,
        ["dedup", str(corpus), "-o", str(files[0]), "--pairs-out", str(files[1])]
        + ["--summary-out", str(files[2]), "--time-field", "ts", "-q", *options],
    )
    return result, files


def test_a_tiny_memory_limit_spills_the_buckets_and_writes_the_same_bytes(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "chains.jsonl")
    spills = []
    spill = SpilledBuckets._spill
    monkeypatch.setattr(SpilledBuckets, "_spill", lambda self: spills.append(1) or spill(self))
    (tmp_path / "roomy").mkdir()
    (tmp_path / "tight").mkdir()
    roomy, want = _dedup(corpus, tmp_path / "roomy")
    assert roomy.exit_code == 0, roomy.output
    assert not spills
    tight, got = _dedup(corpus, tmp_path / "tight", "--memory-limit", "1M", "--workers", "1")
    assert tight.exit_code == 0, tight.output
    assert spills, "the buckets went to disk"
    assert [p.read_bytes() for p in got[:2]] == [p.read_bytes() for p in want[:2]]
    roomy, tight = (json.loads(p.read_text())["counts"] for p in (want[2], got[2]))
    # How many links the repair round finds depends on whether the verification data spilled
    # (then every pair is tested in one round: pipeline.find_groups), not the groups.
    assert roomy["links_found_across_star_components"] > 0
    assert tight["links_found_across_star_components"] > 0
    assert roomy["bucket_pairs_not_examined_cap"] == tight["bucket_pairs_not_examined_cap"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_while_putting_buckets_away_is_one_clear_error(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "chains.jsonl")
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()

    def full_disk_open(path, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        return builtins.open("/dev/full" if "a" in mode else path, mode, *args, **kwargs)

    monkeypatch.setattr(spilled_buckets, "open", full_disk_open, raising=False)
    result, files = _dedup(corpus, tmp_path, "--memory-limit", "1M", "--tmp-dir", str(spill_dir))
    assert result.exit_code == 1
    assert "no space left" in result.output and "repair-buckets" in result.output
    assert "Traceback" not in result.output
    assert list(spill_dir.iterdir()) == []
    assert not files[0].exists()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)), max_size=120),
    st.integers(1, 40),
    st.integers(1, 50),
    st.integers(0, 2000),
    st.sampled_from([chunks.PLACES32_UP_TO, 0]),
)
def test_pairs_by_block_on_disk_are_bounded_as_in_memory(
    tmp_path_factory, ends, slice_size, block_rows, limit, places32_up_to
):
    """The candidates the lengths leave wait by block of sketches, on disk past ``limit``
    bytes: the same pairs left, in the candidates' order, and the block files gone after;
    their places in 4 bytes or, past :data:`~neardup.candidates.chunks.PLACES32_UP_TO`
    candidates, in 8."""
    rng = np.random.default_rng(len(ends))
    texts = [" ".join(rng.choice(list("abcdef"), int(rng.integers(1, 12)))) for _ in range(40)]
    sizes, sketches = lcs_unit_sketches(texts)
    folder = tmp_path_factory.mktemp("blocks")
    path = folder / "sketches.bin"
    sketches.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", shape=sketches.shape)
    packed = np.array([x << 32 | y for x, y in ends], dtype=np.uint64)
    documents = np.arange(40, dtype=np.int32)
    a = np.array([x for x, _ in ends], dtype=np.int32)
    b = np.array([y for _, y in ends], dtype=np.int32)
    keep = possible_pairs(sizes, sketches, a, b, 0.5)
    with WorkDir(folder, "k", "out") as work:
        stores = SpillStores(work, limit)
        pairs = CandidatePairs.of_packed(packed, documents)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(chunks, "PLACES32_UP_TO", places32_up_to)
            got = bounded_pairs(
                pairs, sizes, mapped, 0.5, slice_size, block_rows, block_parts=stores.block_parts
            )
        assert got[0].tolist() == a[keep].tolist() and got[1].tolist() == b[keep].tolist()
        assert got[0].dtype == np.int32
        spilled = stores.stores[0].disk_bytes
        assert stores.figures()[1] == spilled
        # Written once the pairs the lengths leave pass the limit, 12 bytes each (4-byte
        # ends and places; 16 with 8-byte places) at most once.
        record = 12 if places32_up_to else 16
        by_length = length_possible(sizes, np.zeros(1, dtype=np.uint64), a, b, 0.5).sum()
        assert (spilled > 0) == (record * by_length > limit)
        assert spilled % record == 0 and spilled <= record * by_length
        assert [p.name for p in work.path.iterdir() if p.name.startswith("bounds")] == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_while_putting_bounded_pairs_away_is_one_clear_error(tmp_path, monkeypatch):
    def full_disk_open(path, mode="r", *args, **kwargs):
        return builtins.open("/dev/full" if "a" in mode else path, mode, *args, **kwargs)

    monkeypatch.setattr(spilled_buckets, "open", full_disk_open, raising=False)
    with WorkDir(tmp_path, "k", "out") as work:
        parts = SpilledBlockParts(work, blocks=2, limit=0)
        ends = np.array([0, 3], dtype=np.uint32)
        with pytest.raises(OSError, match="no space left") as error:
            parts.add(ends, ends + 1, np.arange(2, dtype=np.int64), block_rows=2)
        assert "bounds-1.bin" in str(error.value) or "bounds-0.bin" in str(error.value)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=20), max_size=8),
    st.integers(0, 400),
    st.sampled_from([np.uint32, np.int64]),
    st.integers(1, 7),
    st.integers(1, 30),
)
def test_block_parts_on_disk_give_back_what_memory_does(
    tmp_path_factory, adds, limit, place_dtype, take_records, piece
):
    """Pairs added in several calls, some written past ``limit`` bytes and some held, come
    back by block in the order added, ``piece`` pairs a piece, read a few records at a time
    into their own columns; nothing stays held or on disk."""
    want = BlockParts(blocks=3)
    with WorkDir(tmp_path_factory.mktemp("parts"), "k", "out") as work:
        parts = SpilledBlockParts(work, blocks=3, limit=limit)
        place = 0
        for pairs in adds:
            a = np.array([x for x, _ in pairs], dtype=np.uint32)
            b = np.array([y for _, y in pairs], dtype=np.uint32)
            at = np.arange(place, place + a.shape[0]).astype(place_dtype)
            place += a.shape[0]
            for store in (want, parts):
                store.add(a, b, at, block_rows=10)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(spilled_buckets, "TAKE_RECORDS", take_records)
            for block in range(3):
                got, expected = list(parts.pieces(block, piece)), list(want.pieces(block, piece))
                assert [len(a) for a, _, _ in got] == [len(a) for a, _, _ in expected]
                assert all(0 < len(a) <= piece for a, _, _ in got)
                for got_piece, expected_piece in zip(got, expected):
                    for column, wanted in zip(got_piece, expected_piece):
                        assert column.tolist() == wanted.tolist()
                        # Not a view of the file's records, which would keep them all.
                        assert column.base is None or column.base.dtype.names is None
        assert parts.held == 0
        assert [p.name for p in work.path.iterdir() if p.name.startswith("bounds")] == []


def test_a_truncated_block_file_is_an_error(tmp_path):
    with WorkDir(tmp_path, "k", "out") as work:
        parts = SpilledBlockParts(work, blocks=1, limit=0)
        ends = np.array([0, 1, 2], dtype=np.uint32)
        parts.add(ends, ends + 1, np.arange(3, dtype=np.uint32), block_rows=10)
        path = work.file("bounds-0.bin")
        path.write_bytes(path.read_bytes()[:-5])  # a record cut short
        with pytest.raises(ValueError, match="bounds-0.bin ends before row 3"):
            list(parts.pieces(0, 2))
        assert not path.exists()
