"""The out-of-core dedup job: same bytes as the in-memory pipeline, whatever the budget; temp
files gone after success, failure and interruption; disk-full errors; --resume."""

import builtins
import json
import os
import random

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from io_helpers import dead_pid
from memory_helpers import mapped_resident_bytes

from neardup import pipeline
from neardup.candidates import bands, bounds, bucket_lists, chunks
from neardup.cli import main
from neardup.engines import id_file, local, outofcore, spill
from neardup.engines.kept_columns import KeptColumns
from neardup.engines.outofcore import OutOfCoreDedup
from neardup.engines.pair_runs import PairRuns
from neardup.engines.spill import (
    MemoryBudget,
    SpillColumn,
    WorkDir,
    parse_memory_limit,
)
from neardup.engines.spilled_buckets import SpilledBlockParts
from neardup.engines.spilled_rows import SpilledRows
from neardup.io import read_documents
from neardup.pipeline import find_groups, signatures
from neardup.settings import Settings

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega 고대 전쟁 실시간 전략 게임 역사 기반 경제 프로젝트"
).split()


def make_corpus(n: int = 600, seed: int = 7) -> list[dict]:
    """Originals, exact copies, a hot template, chains of light edits and a few bad rows."""
    rng = random.Random(seed)
    docs: list[dict] = []
    for i in range(n):
        kind = rng.random()
        if docs and kind < 0.15:  # exact copy (different spacing and case)
            text = rng.choice(docs)["text"].upper().replace(" ", "  ")
        elif docs and kind < 0.4:  # light edit of an earlier document: chains form
            words = rng.choice(docs)["text"].split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            text = " ".join(words)
        elif kind < 0.55:  # one template, a slot filled
            text = f"notice {rng.choice(WORDS)} the package " + " ".join(WORDS[:20])
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
        docs.append({"id": f"d{i}", "text": text, "ts": rng.randint(0, 50)})
    return docs


def write_jsonl(path, docs, bad_rows=False):
    lines = [json.dumps(d, ensure_ascii=False) for d in docs]
    if bad_rows:
        lines.insert(5, '{"id": "broken", "text": ')
        lines.insert(50, json.dumps({"id": "d3", "text": "a duplicate id"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # 4,000 documents: enough for 1M of memory limit to spill band hashes and shingle sets.
    return write_jsonl(
        tmp_path_factory.mktemp("ooc") / "docs.jsonl", make_corpus(4000), bad_rows=True
    )


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def tight_dedup_command(corpus, output, tmp_dir, *options) -> list[str]:
    """``neardup dedup`` as a separate process, 1M of memory and one worker, spilling into
    ``tmp_dir``."""
    import sys

    return [
        sys.executable,
        "-m",
        "neardup",
        "dedup",
        str(corpus),
        "-o",
        str(output),
        *map(str, options),
        "--memory-limit",
        "1M",
        "--tmp-dir",
        str(tmp_dir),
        "--workers",
        "1",
    ]


def outputs(tmp_path, tag):
    return {name: tmp_path / f"{tag}.{name}" for name in ("groups.tsv", "pairs.tsv", "keep.jsonl")}


def dedup_args(corpus, out, *extra) -> list[str]:
    """``neardup dedup`` of ``corpus`` into the files of :func:`outputs` ``out``."""
    return [
        "dedup",
        str(corpus),
        "-o",
        str(out["groups.tsv"]),
        "--pairs-out",
        str(out["pairs.tsv"]),
        "--keep",
        str(out["keep.jsonl"]),
        "--time-field",
        "ts",
        "--on-error",
        "skip",
        "-q",
        *map(str, extra),
    ]


def dedup(corpus, tmp_path, tag, *extra):
    out = outputs(tmp_path, tag)
    result = run(*dedup_args(corpus, out, *extra))
    assert result.exit_code == 0, result.output
    return {name: path.read_bytes() for name, path in out.items()}


def record_block_rows(monkeypatch, coarse: list | None = None) -> list[int]:
    """The rows of a block of each sweep of spilled count sketches (candidates.bounds), in a
    list filled as the run goes; into ``coarse``, whether each sweep had coarse sketches."""
    blocks: list[int] = []
    seen = [] if coarse is None else coarse
    by_blocks = bucket_lists.possible_by_blocks

    def recorded(sizes, sketches, a, b, threshold, block_rows, coarse=None):
        blocks.append(block_rows)
        seen.append(coarse is not None)
        return by_blocks(sizes, sketches, a, b, threshold, block_rows, coarse)

    monkeypatch.setattr(bucket_lists, "possible_by_blocks", recorded)

    class RecordedSweep(chunks.BlockSweep):
        def __init__(self, sizes, sketches, threshold, block_rows, coarse=None):
            blocks.append(block_rows)
            seen.append(coarse is not None)
            super().__init__(sizes, sketches, threshold, block_rows, coarse)

    monkeypatch.setattr(chunks, "BlockSweep", RecordedSweep)
    return blocks


OPTION_SETS = [
    (),
    ("--grouping", "center"),
    ("--pairs", "all"),
    ("--verify", "none"),
    ("--method", "simhash"),
    ("--method", "simhash", "--grouping", "center", "--pairs", "all"),
    ("--method", "simhash", "--verify", "jaccard:0.6"),
    ("--verify", "lcs:0.8"),
    ("--verify", "jaccard:0.6"),
    ("--method", "simhash", "--verify", "lcs:0.9", "--pairs", "all", "--grouping", "center"),
]

#: Also run at a limit between the tight one and the default.
LIMIT_OPTION_SETS = [(), ("--pairs", "all"), OPTION_SETS[5]]


@pytest.mark.parametrize(
    "options",
    # --pairs all at four limits: seconds, the others a second or less.
    [
        pytest.param(o, marks=pytest.mark.slow) if o == ("--pairs", "all") else o
        for o in OPTION_SETS
    ],
    ids=lambda o: " ".join(o) or "defaults",
)
def test_spilling_gives_the_same_bytes_as_memory(corpus, tmp_path, options, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    spilled_files = []
    finish = SpillColumn.finish

    def record_spill(self):
        if self.spilled:
            spilled_files.append(self.path.name)
        return finish(self)

    monkeypatch.setattr(SpillColumn, "finish", record_spill)
    finish_rows = SpilledRows.finish

    def record_rows(self):
        spilled_files.append(self.path.name)
        return finish_rows(self)

    monkeypatch.setattr(SpilledRows, "finish", record_rows)
    set_blocks = []
    build_sets = OutOfCoreDedup._sets

    def record_block(self, docs, spill=False, lengths=None):
        set_blocks.append(docs.shape[0])
        return build_sets(self, docs, spill, lengths)

    monkeypatch.setattr(OutOfCoreDedup, "_sets", record_block)
    roomy = dedup(corpus, tmp_path, "roomy", *options, "--workers", "1")
    verified = "--verify none" not in " ".join(options) and (
        "simhash" not in options or "--verify" in options
    )
    # Pass 1 kept the verification data: no text is read again.
    assert set_blocks == []
    with monkeypatch.context() as m:
        m.setattr(outofcore.KeptSets, "add", lambda kept, *batch: kept.drop())
        reread = dedup(corpus, tmp_path, "reread", *options, "--workers", "2")
    # Not kept: each text is read again once, its data in memory.
    assert len(set_blocks) == verified
    assert reread == roomy
    if options in LIMIT_OPTION_SETS:  # between the tight limit below and the default
        assert dedup(corpus, tmp_path, "middle", *options, "--memory-limit", "3M") == roomy
    set_blocks.clear()
    with monkeypatch.context() as m:
        # Candidates verified in slices of the budget's size, ordered for reading the spill
        # (pipeline.find_groups, candidate_slice).
        # Spilled count sketches read in blocks of rows (candidates.bounds); the tiles of an
        # odd number of pairs read only the rows their pairs name, the others whole.
        coarse = []
        blocks = record_block_rows(m, coarse)
        tiles = []
        m.setattr(
            bounds, "reads_rows_only", lambda pairs, *_: tiles.append(pairs) or pairs % 2 == 1
        )
        ordered = []
        locality = pipeline.locality_pair_order
        m.setattr(
            pipeline,
            "locality_pair_order",
            lambda n, a, b: ordered.append(a.shape[0]) or locality(n, a, b),
        )
        # MinHash candidates past an eighth of the budget: sorted runs on disk, merged back.
        candidate_runs = []
        spill_runs = PairRuns._spill
        m.setattr(PairRuns, "_spill", lambda runs: candidate_runs.append(1) or spill_runs(runs))
        # The candidates the lengths leave, past the least room: to files by block of sketches.
        block_spills = []
        spill_blocks = SpilledBlockParts._spill
        m.setattr(
            SpilledBlockParts, "_spill", lambda parts: block_spills.append(1) or spill_blocks(parts)
        )
        # Past the budget the IDs and locations go to the work folder as they are read.
        moved = []
        to_disk = KeptColumns._to_disk
        m.setattr(KeptColumns, "_to_disk", lambda kept: moved.append(1) or to_disk(kept))
        # GROUPS and PAIRS written in pieces of 97 rows, each piece's IDs taken alone.
        m.setattr(local, "WRITE_PIECE_ROWS", 97)
        pieces = []
        groups_columns = local.groups_columns
        m.setattr(
            local,
            "groups_columns",
            lambda ids, groups, start, stop: (
                pieces.append((start, stop)) or groups_columns(ids, groups, start, stop)
            ),
        )
        tight = dedup(
            corpus,
            tmp_path,
            "tight",
            *options,
            "--memory-limit",
            "1M",
            "--workers",
            "2",
            "--tmp-dir",
            spill_dir,
        )
    assert tight == roomy
    documents = roomy["groups.tsv"].count(b"\n") - 1
    assert pieces == [(a, min(a + 97, documents)) for a in range(0, documents, 97)]
    # LCS: the sketches spill, and bound the candidates (not with SimHash and --pairs all).
    lcs = verified and "jaccard" not in " ".join(options)
    # MinHash's band hashes or the LCS sketches fill the budget while reading: the IDs then
    # move to disk, once. SimHash otherwise keeps only fixed-width columns: they stay.
    spills = "simhash" not in options or lcs
    assert moved == ([1] if spills else []), "IDs moved to disk while reading"
    if lcs and ("simhash" not in options or "all" not in options):
        assert blocks and max(blocks) < 4000, "the sketches read a few blocks of rows at a time"
        assert {p % 2 for p in tiles} == {0, 1}, "tiles read whole and row by row"
        assert all(coarse), "blocks read whole are read as coarse sketches first"
    # SimHash without verification keeps only fixed-width columns: nothing to spill.
    if "simhash" not in options:
        assert spilled_files, "the tight run must spill its band hashes"
        # The bands of a Jaccard of 0.8 or 0.6 (verification none or Jaccard) find fewer.
        if lcs:
            assert len(candidate_runs) > 1, "the tight run must spill its candidates in runs"
            if "all" not in options:  # --pairs all is not bounded
                assert block_spills, "the tight run must put its bounded candidates on disk"
    if verified:
        # Each text is read again once, whatever the budget: its data spill, not the reads.
        assert len(set_blocks) == 1
        if "simhash" not in options:  # beside the band hashes, they exceed the budget
            assert "verification.bin" in spilled_files, "the verification data must spill"
            assert ordered and ordered[0] > 37, "slices of candidates in the locality order"
    assert list(spill_dir.iterdir()) == []
    assert roomy["pairs.tsv"].count(b"\n") > 20  # the corpus really has near-duplicates


@pytest.mark.parametrize(
    "method, verify", [("minhash", "auto"), ("simhash", "none"), ("minhash", "lcs:0.8")]
)
@pytest.mark.parametrize("batch_size", [1, 7, 10_000])
def test_job_equals_find_groups_in_memory(
    corpus, tmp_path, method, verify, batch_size, monkeypatch
):
    settings = Settings(method=method, shingle="char:5", threshold=0.7, verify=verify)
    reader_args = dict(time_field="ts", on_error="skip")
    everything = read_documents([corpus], **reader_args).read_all()
    expected = find_groups(
        signatures(everything.texts, settings, keep_sets=True), everything.timestamps, settings
    )

    def reopen(records):
        return read_documents([corpus], batch_size=batch_size, keep_records=records, **reader_args)

    by_parts = []
    solve = outofcore.representatives_by_parts
    monkeypatch.setattr(
        outofcore, "representatives_by_parts", lambda *a: by_parts.append(a[1]) or solve(*a)
    )
    with WorkDir(tmp_path, "key", "out") as work:
        job = OutOfCoreDedup(reopen(False), reopen, settings, work, memory_limit=1 << 16, workers=2)
        job.collect()
        # Spilled while read (their files go once the band search is done).
        assert any(c.spilled for c in job.collected.band_columns) == (method == "minhash")
        # The empty flags and unit counts of every document in one batch fit the budget;
        # appended batch by batch, the budget fills first and they go to disk.
        flags = job.collected.flag_columns.values()
        assert all(c.spilled for c in flags) == (batch_size < 10_000)
        groups = job.group()
        # The empty flags and unit counts went to disk too (once the budget was full, or for
        # the grouping), read through maps whose pages were dropped after the candidates'
        # bounds and the re-read's costs.
        for name in ("empty", "sizes"):
            column = getattr(job.collected.signatures, name)
            assert isinstance(column, np.memmap)
            assert mapped_resident_bytes(column.filename) == 0
        assert groups.stats["empty_documents"] == expected.stats["empty_documents"]
        # The content fingerprints went to disk: the exact duplicates were found by parts.
        assert by_parts == [len(everything.ids)]
        # Past the budget the IDs wait in the work folder: read back while it exists.
        assert job.collected.id_column is None
        assert job.collected.ids.to_pylist() == everything.ids
    for name in (
        "original",
        "is_original",
        "group_size",
        "pair_a",
        "pair_b",
        "pair_value",
        "pair_passed",
    ):
        np.testing.assert_array_equal(getattr(groups, name), getattr(expected, name), err_msg=name)


@pytest.mark.parametrize("memory_limit", [1 << 16, 1 << 30])
def test_fixed_columns_are_charged_and_the_ids_spill_when_they_leave_too_little(
    corpus, tmp_path, memory_limit
):
    reader = read_documents([corpus], time_field="ts", on_error="skip", batch_size=100)
    with WorkDir(tmp_path, "key", "out") as work:
        job = OutOfCoreDedup(reader, None, Settings(), work, memory_limit, workers=2)
        collected = job.collect()
        roomy = job.budget.free >= job.budget.limit * outofcore.LEAST_ROOM
        assert roomy == (memory_limit == 1 << 30)
        # The IDs stay in memory only when the budget keeps its least room beside them.
        assert (collected.id_column is not None) == roomy
        assert job.charged == _held_column_bytes(collected, Settings())
        # Below the fixed columns' size the band hashes all go to disk.
        assert all(column.spilled for column in collected.band_columns) == (not roomy)


def _job_groups(corpus, tmp_path, settings, memory_limit, resume=False, total_share=1.0):
    """A job's groups, figures and collected columns; ``total_share`` scales the input size
    the reader reports (below 1: pass 1's estimate of the kept data comes out too small)."""

    def reopen(records):
        reader = read_documents([corpus], time_field="ts", on_error="skip", batch_size=200)
        total = reader.total_bytes()
        reader.total_bytes = lambda: int(total * total_share)
        return reader

    with WorkDir(tmp_path, "key", "out", resume=resume) as work:
        job = OutOfCoreDedup(reopen(False), reopen, settings, work, memory_limit, workers=2)
        collected = job.collect()
        kept = collected.kept
        parked, checkpointed = [], work.completed("group")
        park = work.park
        work.park = lambda name, values: parked.append(values.copy()) or park(name, values)
        groups = job.group()
        # The document order (timestamps out of order) waited in the work folder, and is gone.
        assert len(parked) == (0 if checkpointed else 1)
        assert not work.file("document-order.npy").exists()
        # Everything kept was given back; the columns still held in memory stay charged, and
        # the empty flags and unit counts still in memory keep what they took.
        flags = sum(column.held for column in collected.flag_columns.values())
        assert job.budget.free == job.budget.limit - job.charged - flags
        assert job.charged == _held_column_bytes(collected, settings)
    return groups, job.figures, kept


def _held_column_bytes(collected, settings) -> int:
    sig = collected.signatures
    held = [collected.timestamps]
    # The content fingerprints of a run that lets them go are their spill column's, taken from
    # the budget (not a charge); those kept whole are charged.
    if collected.content_column is None or collected.content_column.held == 0:
        held.append(sig.content)
    if settings.method == "simhash":
        held.append(sig.signature)
    if isinstance(collected.locations, np.ndarray):
        held.append(collected.locations)
    ids = collected.id_column.nbytes if collected.id_column is not None else 0
    # The columns the dedup no longer reads are views of no memory (stride 0) once let go.
    return ids + sum(array.nbytes for array in held if array.ndim and array.strides[0] != 0)


def _same_groups(groups, expected):
    for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
        np.testing.assert_array_equal(getattr(groups, name), getattr(expected, name), err_msg=name)


@pytest.mark.parametrize("options", [{}, {"pairs": "all"}], ids=["defaults", "pairs all"])
def test_bands_searched_in_partitions_give_the_groups_of_whole_bands(
    corpus, tmp_path, options, monkeypatch
):
    """With partitions of a few documents (the room of a 1 MB limit), every band of the
    candidates' search (and of the pairs', with pairs="all") is read from its spill file in
    many partitions of its hashes, staged by partition in a file of its own: the same groups,
    pairs and counts as whole bands."""
    settings = Settings(**options)
    (tmp_path / "whole").mkdir()
    whole, _, _ = _job_groups(corpus, tmp_path / "whole", settings, memory_limit=1 << 20)
    parts_of_bands = []
    partitions = bands.partitions

    def counted(counts, most):
        parts = list(partitions(counts, most))
        parts_of_bands.append(len(parts))
        return parts

    staged_files = []
    staged_band = bands.StagedBand

    def staged(column, *args):
        staged_files.append(column.staging)
        return staged_band(column, *args)

    monkeypatch.setattr(bands, "MIN_PART_ROWS", 1)
    monkeypatch.setattr(bands, "partitions", counted)
    monkeypatch.setattr(bands, "StagedBand", staged)
    (tmp_path / "parts").mkdir()
    split, _, _ = _job_groups(corpus, tmp_path / "parts", settings, memory_limit=1 << 20)
    assert min(parts_of_bands) > 1
    # The bands on disk were staged (those left in memory are gathered from it), and each
    # staging file went with its band.
    assert 0 < len(staged_files) <= len(parts_of_bands)
    assert not any(path.exists() for path in staged_files)
    _same_groups(split, whole)
    assert {**split.stats, "seconds": None} == {**whole.stats, "seconds": None}


def test_a_stage_room_leaves_what_the_process_holds_outside_the_budget(
    corpus, tmp_path, monkeypatch
):
    """The band search, the bounds' blocks and the verification data take the budget's room
    only while the process's resident memory leaves it under the limit: a process holding
    the limit already gets the least room, and the groups do not change."""
    settings = Settings(pairs="all")
    limit = 1 << 30
    (tmp_path / "free").mkdir()
    expected, _, _ = _job_groups(corpus, tmp_path / "free", settings, limit)
    resident = [0]
    monkeypatch.setattr(outofcore, "resident_bytes", lambda: resident[0])
    rooms: list[int] = []
    for name in ("candidate_edges", "all_pairs"):
        stage = getattr(pipeline, name)
        monkeypatch.setattr(
            pipeline, name, lambda *args, stage=stage: rooms.append(args[-1]) or stage(*args)
        )
    reader = read_documents([corpus], time_field="ts", on_error="skip", batch_size=200)
    with WorkDir(tmp_path, "key", "out") as work:
        job = OutOfCoreDedup(reader, None, settings, work, limit, workers=2)
        job.collect()
        least, free = job._least_room, job.budget.free
        assert free > 2 * least
        assert job._room() == free
        resident[0] = limit - free // 2
        assert job._room() == free // 2
        resident[0] = limit
        assert job._room() == least
        groups = job.group()
    assert rooms == [least, least]
    _same_groups(groups, expected)


@pytest.mark.parametrize("verify", ["lcs:0.8", "jaccard:0.6"])
def test_verification_data_kept_from_pass_1_when_they_fit(corpus, tmp_path, verify):
    settings = Settings(verify=verify)
    kept, figures, held = _job_groups(corpus, tmp_path, settings, memory_limit=64 << 20)
    assert held is not None and figures["documents re-read"] == 0
    # 1M: half of it holds the band hashes but not every document's data as well.
    reread, figures, held = _job_groups(corpus, tmp_path, settings, memory_limit=1 << 20)
    assert held is None and figures["documents re-read"] > 0
    _same_groups(kept, reread)
    # A resumed run builds them from a re-read (they are not checkpointed).
    resumed, figures, held = _job_groups(corpus, tmp_path, settings, 64 << 20, resume=True)
    assert held is None and figures["documents re-read"] > 0
    _same_groups(resumed, reread)


def test_keeping_falls_back_to_a_re_read_when_the_estimate_was_too_small(corpus, tmp_path):
    settings = Settings(verify="lcs:0.8")
    expected, _, _ = _job_groups(corpus, tmp_path, settings, memory_limit=64 << 20)
    # The reader says the input is a tenth of its size: the first batches look like fitting
    # 1.5M, but the whole does not.
    got, figures, held = _job_groups(corpus, tmp_path, settings, 3 << 19, total_share=0.1)
    assert held is None and figures["documents re-read"] > 0
    _same_groups(got, expected)


@pytest.mark.parametrize("spilled", [False, True])
def test_a_re_read_that_finds_other_texts_is_an_error(corpus, tmp_path, monkeypatch, spilled):
    """Whether the re-read data are spilled or kept in memory (the process then seeming to
    hold nothing of a large limit), texts whose LCS units differ from pass 1's counts stop
    the run."""
    made, puts = [], []
    init, put = SpilledRows.__init__, SpilledRows.put
    monkeypatch.setattr(SpilledRows, "__init__", lambda *args: made.append(1) or init(*args))
    monkeypatch.setattr(SpilledRows, "put", lambda *args: puts.append(1) or put(*args))
    changed = tmp_path / "docs.jsonl"
    changed.write_bytes(corpus.read_bytes())
    reader = read_documents([changed], time_field="ts", on_error="skip")
    with WorkDir(tmp_path, "key", "out") as work:
        job = OutOfCoreDedup(reader, None, Settings(), work, memory_limit=1 << 20, workers=2)
        job.collect()
        assert job.collected.kept is None
        if not spilled:
            monkeypatch.setattr(outofcore, "resident_bytes", lambda: 0)
            job.memory_limit = 1 << 40
        # Same size and offsets, fewer LCS units: "alpha beta" becomes one word.
        changed.write_bytes(changed.read_bytes().replace(b"alpha beta", b"alphazbeta"))
        with pytest.raises(ValueError, match="inputs changed"):
            job.group()
    assert len(made) == spilled and not puts  # the batch that changed was the first


def test_temp_dir_is_empty_after_a_failed_run(corpus, tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    result = CliRunner().invoke(
        main,
        [
            "dedup",
            str(corpus),
            "-o",
            str(tmp_path / "g.tsv"),
            "--tmp-dir",
            str(spill_dir),
            "--memory-limit",
            "1M",
        ],
    )
    assert result.exit_code == 1
    assert "line 6" in result.output  # the broken row, reported as before
    assert list(spill_dir.iterdir()) == []
    assert not (tmp_path / "g.tsv").exists()


class _Interrupt(Exception):
    pass


def _interrupt_at(stage_name, cls=outofcore.Progress):
    original = cls.stage

    def stage(self, name, total=None, unit="docs"):
        if name == stage_name:
            raise KeyboardInterrupt
        return original(self, name, total, unit)

    return stage


def test_temp_dir_is_empty_after_an_interrupt(corpus, tmp_path, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setattr(outofcore.Progress, "stage", _interrupt_at("verify"))
    settings = Settings(method="minhash", shingle="char:5", threshold=0.7)

    def reopen(records):
        return read_documents([corpus], time_field="ts", on_error="skip", keep_records=records)

    with pytest.raises(KeyboardInterrupt):
        with WorkDir(spill_dir, "key", "out") as work:
            job = OutOfCoreDedup(reopen(False), reopen, settings, work, memory_limit=1 << 16)
            job.collect()
            job.group()
    assert list(spill_dir.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_is_one_clear_error(corpus, tmp_path, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()

    def full_disk_open(path, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        if "w" in mode and str(path).endswith(".bin"):
            return builtins.open("/dev/full", mode, *args, **kwargs)
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(spill, "open", full_disk_open, raising=False)
    result = CliRunner().invoke(
        main,
        [
            "dedup",
            str(corpus),
            "-o",
            str(tmp_path / "g.tsv"),
            "--on-error",
            "skip",
            "--memory-limit",
            "1M",
            "--tmp-dir",
            str(spill_dir),
        ],
    )
    assert result.exit_code == 1
    assert "no space left" in result.output and str(spill_dir) in result.output
    assert "Traceback" not in result.output
    assert list(spill_dir.iterdir()) == []
    assert not (tmp_path / "g.tsv").exists()


def _descriptors_open_to(*prefixes: str) -> set[tuple[str, str]]:
    """This process's open descriptors (number, target) whose target starts with one of
    ``prefixes``."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(prefixes):
            found.add((fd, target))
    return found


def test_full_temp_disk_while_putting_ids_away_is_one_clear_error_and_leaves_no_file(
    tmp_path, monkeypatch
):
    # More than a write buffer of IDs: the disk fills in the middle of the table.
    ids = pa.chunked_array([pa.array(["x" * 1000] * 3000, pa.large_string())])
    before = _descriptors_open_to("/dev/full", str(tmp_path))

    def full_disk_fdopen(fd, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        os.close(fd)
        return builtins.open("/dev/full", mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", full_disk_fdopen)
    with pytest.raises(OSError, match="no space left") as caught:
        id_file.write_ids(tmp_path / "ids.arrow", ids)
    monkeypatch.undo()
    assert str(tmp_path / "ids.arrow") in str(caught.value)
    assert list(tmp_path.iterdir()) == []
    # No descriptor left on the full disk nor the folder (a count of all of them would also
    # see those that threads of earlier tests in this process close meanwhile).
    assert _descriptors_open_to("/dev/full", str(tmp_path)) <= before
    id_file.write_ids(tmp_path / "ids.arrow", ids)  # whole, once the disk has room
    assert id_file.read_ids(tmp_path / "ids.arrow").equals(ids)
    assert [p.name for p in tmp_path.iterdir()] == ["ids.arrow"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_column_file_gives_the_rows_at_any_ascending_positions(tmp_path_factory, data):
    rows = data.draw(st.integers(0, 40))
    array = np.arange(rows * 2, dtype=np.int64).reshape(rows, 2) * 7
    positions = np.array(
        sorted(data.draw(st.lists(st.integers(0, max(rows - 1, 0)), max_size=30)) if rows else []),
        dtype=np.int64,
    )
    block_rows = data.draw(st.integers(1, 9))
    with WorkDir(tmp_path_factory.mktemp("columns"), "k", "x") as work:
        column = spill.ColumnFile(work, "where", array)
        column.BLOCK_ROWS = block_rows
        assert column.take(positions).tolist() == array[positions].tolist()
        assert len(column) == rows


def test_a_work_folder_cut_short_while_opening_is_removed(tmp_path, monkeypatch):
    """A signal that lands after the folder and its manifest exist, before the ``with`` block
    starts (``__exit__`` then never runs), still leaves no folder; a resumed one is kept."""
    from neardup.signals import Interrupted

    opened = WorkDir._open

    def open_then_stop(self) -> None:
        opened(self)
        raise Interrupted(15)

    monkeypatch.setattr(WorkDir, "_open", open_then_stop)
    with pytest.raises(Interrupted):
        with WorkDir(tmp_path, "key", "out"):
            pass
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(Interrupted):
        with WorkDir(tmp_path, "key", "out", resume=True):
            pass
    assert len(list(tmp_path.iterdir())) == 1


def test_unwritable_or_missing_temp_dir(corpus, tmp_path):
    result = run(
        "dedup",
        corpus,
        "-o",
        tmp_path / "g.tsv",
        "--on-error",
        "skip",
        "--tmp-dir",
        tmp_path / "missing",
    )
    assert result.exit_code != 0
    assert "missing" in result.output


def test_memory_limit_parsing():
    assert parse_memory_limit("2G") == 2 << 30
    assert parse_memory_limit("1.5m") == int(1.5 * (1 << 20))
    assert parse_memory_limit("2Gi") == 2 << 30
    assert 0 < parse_memory_limit("1%") < parse_memory_limit("40%")
    for bad in ("lots", "0%", "200%", "1K", "-5G"):
        with pytest.raises(ValueError, match="memory limit"):
            parse_memory_limit(bad)


def test_spill_column_keeps_order_across_memory_and_disk(tmp_path):
    with WorkDir(tmp_path, "k", "x") as work:
        budget = MemoryBudget(100)
        column = SpillColumn(work, "c", np.uint64, budget, width=2)
        parts = [np.arange(i * 10, i * 10 + 10, dtype=np.uint64).reshape(5, 2) for i in range(4)]
        for part in parts:
            column.append(part)
        assert column.spilled
        np.testing.assert_array_equal(column.array(), np.concatenate(parts))
        np.testing.assert_array_equal(column.read(), np.concatenate(parts))
        assert budget.free == 100  # the in-memory part went back when the column spilled


def test_a_column_in_memory_holds_no_view_of_a_larger_array(tmp_path):
    """Its parts own their bytes: a row of a batch's band hashes kept as a view would keep the
    whole batch alive, charged for the row alone."""
    with WorkDir(tmp_path, "k", "x") as work:
        columns = [SpillColumn(work, f"c{j}", np.uint64, MemoryBudget(1 << 20)) for j in range(3)]
        batch = np.arange(300, dtype=np.uint64).reshape(3, 100)
        for j, column in enumerate(columns):
            column.append(batch[j])
        del batch
        for j, column in enumerate(columns):
            part = column.array()
            assert part.base is None or part.base.nbytes == part.nbytes == 800
            np.testing.assert_array_equal(part, np.arange(100 * j, 100 * j + 100))


def test_a_column_spilled_on_demand_reads_the_same_and_takes_more_rows(tmp_path):
    """``spill`` moves a finished column's memory to its file (a stale file of the same name
    is replaced, not appended to), gives the bytes back, and later rows follow on disk."""
    with WorkDir(tmp_path, "k", "x") as work:
        budget = MemoryBudget(1 << 20)
        column = SpillColumn(work, "c", np.uint64, budget)
        column.path.write_bytes(b"stale bytes of an earlier run")
        first = np.arange(100, dtype=np.uint64)
        column.append(first)
        column.finish()
        assert not column.spilled and budget.free == (1 << 20) - first.nbytes
        assert column.spill() == first.nbytes
        assert column.spilled and budget.free == 1 << 20 and column.spill() == 0
        np.testing.assert_array_equal(column.read(), first)
        column.append(first + 100)
        np.testing.assert_array_equal(column.read(), np.arange(200, dtype=np.uint64))
        assert column.path.stat().st_size == 200 * 8


def test_band_columns_left_in_memory_spill_when_the_grouping_is_charged(
    corpus, tmp_path, monkeypatch
):
    """The grouping's arrays are charged beside the band hash columns pass 1 kept: columns go
    to disk, the last to be read first, until the budget has its least room free again; the
    groups do not change."""
    settings = Settings(pairs="all")
    limit = 1 << 26
    (tmp_path / "whole").mkdir()
    expected, _, _ = _job_groups(corpus, tmp_path / "whole", settings, limit)
    reader = read_documents([corpus], time_field="ts", on_error="skip", batch_size=200)
    with WorkDir(tmp_path, "key", "out") as work:
        job = OutOfCoreDedup(reader, None, settings, work, limit, workers=2)
        columns = job.collect().band_columns
        assert not any(column.spilled for column in columns)
        column_bytes = columns[0].held
        # A grouping that takes all but two and a half columns' worth of the least room.
        monkeypatch.setattr(
            outofcore,
            "GROUPING_BYTES",
            (job.budget.free - job._least_room + column_bytes * 5 // 2) // len(job.collected),
        )
        spilled_at_grouping = []
        stage = job._spill_for_grouping

        def spill_and_note() -> None:
            stage()
            spilled_at_grouping.extend(column.spilled for column in columns)
            assert job.budget.free >= job._least_room

        monkeypatch.setattr(job, "_spill_for_grouping", spill_and_note)
        groups = job.group()
    assert spilled_at_grouping == [False] * (len(columns) - 3) + [True] * 3
    _same_groups(groups, expected)


@pytest.mark.parametrize("budget_bytes", [1 << 20, 64], ids=["in memory", "spilled"])
def test_take_ranges_packs_the_ranges_of_a_column(tmp_path, budget_bytes):
    rng = np.random.default_rng(7)
    values = rng.integers(0, 1 << 63, 20_000, dtype=np.uint64)
    with WorkDir(tmp_path, "k", "x") as work:
        column = SpillColumn(work, "v", np.uint64, MemoryBudget(budget_bytes))
        for part in np.array_split(values, 7):
            column.append(part)
        assert column.spilled == (budget_bytes == 64)
        for trial in range(20):
            # Ascending, disjoint ranges: adjacent, far apart, empty, the first and last value.
            cuts = np.sort(rng.choice(values.shape[0] + 1, 2 * (trial + 1), replace=False))
            starts, ends = cuts[0::2], cuts[1::2]
            if trial == 0:
                starts, ends = np.array([0, 5, 5, 19_990]), np.array([5, 5, 9, 20_000])
            if trial == 1:
                starts, ends = np.zeros(0, np.int64), np.zeros(0, np.int64)
            offsets, packed = column.take_ranges(starts, ends)
            expected = [values[lo:hi] for lo, hi in zip(starts, ends)]
            assert offsets.tolist() == [0, *np.cumsum([len(e) for e in expected]).tolist()]
            np.testing.assert_array_equal(packed, np.concatenate([values[:0], *expected]))


def test_take_ranges_of_a_truncated_spill_is_an_error(tmp_path):
    with WorkDir(tmp_path, "k", "x") as work:
        column = SpillColumn(work, "v", np.uint64, MemoryBudget(8))
        column.append(np.arange(1000, dtype=np.uint64))
        column.finish()
        os.truncate(column.path, 800)
        with pytest.raises(OSError, match="shorter than written"):
            column.take_ranges(np.array([10, 900]), np.array([20, 1000]))


def test_spark_refuses_local_only_options(corpus, tmp_path):
    result = run(
        "dedup", corpus, "-o", tmp_path / "g.tsv", "--engine", "spark", "--memory-limit", "2G"
    )
    assert result.exit_code == 1
    assert "--memory-limit" in result.output and "local engine" in result.output


def test_work_folders_of_killed_runs_are_removed_by_the_next_run(corpus, tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    stale = spill_dir / f"neardup-tmp-{dead_pid()}-0123456789abcdef"
    stale.mkdir()  # killed right after creating it: empty but for a spill file
    (stale / "band-0.bin").write_bytes(b"x" * 100)
    live = spill_dir / f"neardup-tmp-{os.getpid()}-fedcba9876543210"
    live.mkdir()
    dedup(corpus, tmp_path, "after", "--tmp-dir", spill_dir)
    assert [p.name for p in spill_dir.iterdir()] == [live.name]


def test_sigterm_removes_temp_files_and_partial_outputs(corpus, tmp_path):
    import signal
    import subprocess
    import time

    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    big = write_jsonl(tmp_path / "big.jsonl", make_corpus(20000, seed=3))
    process = subprocess.Popen(
        tight_dedup_command(big, tmp_path / "g.tsv", spill_dir, "-q"), stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while not list(spill_dir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert process.returncode != 0
    assert list(spill_dir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl", "spill"]


def test_progress_bar_on_a_terminal(tmp_path):
    """On a terminal the run shows its stages with a bar, the share done and the spill."""
    import pty
    import subprocess

    big = write_jsonl(tmp_path / "big.jsonl", make_corpus(20000, seed=5))
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        tight_dedup_command(big, tmp_path / "g.tsv", tmp_path),
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "COLUMNS": "150"},
    )
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        screen += chunk
    assert process.wait(timeout=120) == 0
    text = screen.decode("utf-8", "replace")
    assert "reading" in text and "%" in text and "docs" in text
    assert "spilled" in text  # the band hashes went to disk under the 1M limit
    assert "groups" in text  # the summary follows


@pytest.mark.slow  # whole processes, each killed at another point
def test_kill_9_at_any_point_leaves_all_outputs_or_none_and_the_next_run_cleans_up(tmp_path):
    """kill -9 at several points of a run (starting, spilling, writing its outputs): the set
    GROUPS + PAIRS + KEEP is complete and right, or absent; the next run leaves no debris."""
    import signal
    import subprocess
    import time

    big = write_jsonl(tmp_path / "big.jsonl", make_corpus(20000, seed=5))
    spill_dir, out = tmp_path / "spill", tmp_path / "out"
    spill_dir.mkdir()
    out.mkdir()
    names = ["g.tsv", "p.tsv", "k.jsonl"]
    command = tight_dedup_command(
        big,
        out / names[0],
        spill_dir,
        "--pairs-out",
        out / names[1],
        "--keep",
        out / names[2],
        "-q",
    )
    reference = tmp_path / "reference"
    reference.mkdir()
    expected_args = [a.replace(str(out), str(reference)) for a in command[3:]]
    assert CliRunner().invoke(main, expected_args).exit_code == 0
    expected = {n: (reference / n).read_bytes() for n in names}

    def work_folder_exists():
        return any(spill_dir.iterdir())

    def writing_outputs():
        return any(p.name.endswith(".tmp") for p in out.iterdir())

    trials = [work_folder_exists, writing_outputs, 0.5, 1.5, 3.0]
    for when in trials:
        for name in names:
            (out / name).unlink(missing_ok=True)
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + (when if isinstance(when, float) else 60)
        while process.poll() is None and time.monotonic() < deadline:
            if callable(when) and when():
                break
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        present = [n for n in names if (out / n).exists()]
        journal = [p for p in out.iterdir() if p.name.startswith(".neardup-commit.")]
        assert present in ([], names) or journal, (when, present)
        for n in present:
            if not journal:
                assert (out / n).read_bytes() == expected[n], (when, n)
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    assert {n: (out / n).read_bytes() for n in names} == expected
    assert list(spill_dir.iterdir()) == []


def test_a_run_without_resume_removes_the_resume_folder_of_its_output(tmp_path):
    """A run with --resume that failed keeps its folder; a later run of the same output
    without --resume that succeeds makes it useless, and removes it."""
    out = str(tmp_path / "groups.tsv")
    with pytest.raises(RuntimeError):
        with WorkDir(tmp_path, "key", out, resume=True) as work:
            work.save("a", np.arange(10))
            raise RuntimeError("the run failed")
    assert [p.name for p in tmp_path.glob("neardup-run-*")] == [work.path.name]
    with WorkDir(tmp_path, "other key", out):
        pass
    assert list(tmp_path.glob("neardup-*")) == []


def test_two_runs_cannot_resume_one_folder_at_once(tmp_path):
    """A second ``--resume`` of a run still going is refused with one clear error naming the
    folder, and the first run's folder and files are left alone."""
    out = str(tmp_path / "groups.tsv")
    with WorkDir(tmp_path, "key", out, resume=True) as first:
        first.save("a", np.arange(10))
        with pytest.raises(ValueError, match=f"another run is using {first.path}"):
            with WorkDir(tmp_path, "key", out, resume=True):
                pass
        assert first.load("a").tolist() == list(range(10))
        with WorkDir(tmp_path, "other key", out):  # no --resume: leaves a live run's folder
            pass
        assert first.path.exists()


@pytest.mark.parametrize(
    "options",
    [{}, {"pairs": "all"}, {"method": "simhash", "verify": "lcs:0.9", "pairs": "all"}],
    ids=["defaults", "pairs all", "simhash lcs pairs all"],
)
def test_counts_and_arrays_are_the_same_at_every_memory_limit(
    corpus, tmp_path, options, monkeypatch
):
    """From a limit that spills everything (the count sketches read a block of a few rows at
    a time) to one that holds everything: the same groups, pairs and summary counts."""
    settings = Settings(**options)
    blocks = record_block_rows(monkeypatch)
    runs = []
    for limit in (1 << 16, 1 << 20, 64 << 20):
        (tmp_path / str(limit)).mkdir()
        groups, figures, _ = _job_groups(
            corpus, tmp_path / str(limit), settings, memory_limit=limit
        )
        runs.append(groups)
        minhash = options.get("method") != "simhash"
        if limit == 1 << 16 and minhash:
            assert blocks and max(blocks) < 1000, "the sketches spill: blocks of few rows"
        # MinHash candidates past an eighth of the budget go to runs on disk, merged back.
        # (--pairs all lists every pair of every bucket: those spill at 64M too.)
        if limit == 1 << 16 or (limit == 64 << 20 and options.get("pairs") != "all"):
            spilled_runs = figures["candidate pair runs"]
            assert (spilled_runs > 1) == (minhash and limit == 1 << 16), (limit, spilled_runs)
    first = runs[0]
    assert first.stats["candidates"] > 0 and first.pair_a.shape[0] > 0
    for other in runs[1:]:
        for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
            np.testing.assert_array_equal(getattr(first, name), getattr(other, name), name)
        # Which candidates are tested depends on whether the verification data spilled (then
        # every candidate is, in one round: pipeline.find_groups); what they decide does not.
        varies = dict.fromkeys(("seconds", "rejected", "linked_untested"), None)
        varies.update(repair_tested=None, repair_accepted=None)
        assert {**first.stats, **varies} == {**other.stats, **varies}


@pytest.mark.parametrize("pairs", ["original", "all"])
def test_band_files_are_deleted_once_the_band_search_is_done(corpus, tmp_path, monkeypatch, pairs):
    """Spilled band hashes are read by the band search alone (and the pairs of --pairs all):
    their files go once it is done, before the candidates are bounded."""
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    after_search = []
    verify = pipeline.Relation.__init__

    def record(self, *args, **kwargs):  # made once the candidates are found and bounded
        after_search.append(sorted(p.name for p in spill_dir.rglob("band-*.bin")))
        verify(self, *args, **kwargs)

    monkeypatch.setattr(pipeline.Relation, "__init__", record)
    tight = dedup(corpus, tmp_path, "tight", "--memory-limit", "1M", "--pairs", pairs)
    assert tight == dedup(corpus, tmp_path, "roomy", "--pairs", pairs)
    spilled = dedup(corpus, tmp_path, "spilled", "--memory-limit", "1M", "--pairs", pairs,
                    "--tmp-dir", str(spill_dir))  # fmt: skip
    assert spilled == tight
    assert len(after_search) == 3
    # --pairs all searches the bands again for the pairs reported: the files stay till then.
    assert (after_search[-1] == []) == (pairs == "original")
