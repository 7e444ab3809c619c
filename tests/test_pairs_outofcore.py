"""`neardup pairs` out of core (neardup.engines.pairs_outofcore): PAIRS and GROUPS byte for byte
those of the in-memory pipeline, whatever the memory limit; a full temp disk is one clear error
that leaves nothing behind; a bad row is reported with its file, line and field."""

import builtins
import doctest
import filecmp
import os

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.candidates.radix as radix
import neardup.engines.local as local
import neardup.engines.pairs_outofcore as pairs_outofcore
import neardup.io.fingerprints as io_fingerprints
from neardup.cli.main import main
from neardup.engines import Corpus, Outputs, spill
from neardup.engines.base import Progress
from neardup.engines.local import LocalEngine, _write_outputs
from neardup.engines.pairs_outofcore import OutOfCorePairs
from neardup.io import FingerprintBatches, read_fingerprints
from neardup.pipeline import Signatures, find_groups
from neardup.settings import Settings


def in_memory(path, settings: Settings, pairs_out, groups_out) -> None:
    """The outputs as the in-memory pipeline writes them: every row read at once, the groups
    found by find_groups over the fingerprints (identical ones standing for identical
    contents), the columns written whole."""
    table = read_fingerprints([str(path)])
    fps = np.asarray(table.fingerprints, dtype=np.uint64)
    n = fps.shape[0]
    content = np.stack([fps, fps], axis=1)
    sig = Signatures(content, fps, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))
    groups = find_groups(sig, table.timestamps, settings)
    _write_outputs(
        Outputs(groups=groups_out, pairs=pairs_out), table.ids, groups, settings, Progress()
    )


def write_rows(path, fps, times, ids=None):
    ids = ids if ids is not None else [f"d{k:05d}" for k in range(len(fps))]
    text = "".join(f"{i}\t{int(f):016x}\t{int(t)}\n" for i, f, t in zip(ids, fps, times))
    path.write_text(text, encoding="utf-8")
    return path


def fingerprints(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**63, size=n).astype(np.uint64) * np.uint64(2)
    if kind == "near":
        copies = rng.random(n) < 0.5
        sources = (rng.random(n) * np.arange(n)).astype(np.int64)
        flips = np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
        fps[copies] = fps[sources[copies]] ^ flips[copies]
    elif kind == "equal":
        fps = fps[rng.integers(0, min(4, n), n)]
    elif kind == "within_k":
        fps = np.uint64(0xF0F0_0000_0000_0000) | rng.integers(0, 16, n).astype(np.uint64)
    elif kind == "hot_prefix":
        fps = (fps & np.uint64(0xFFFF)) | np.uint64(0xABCDEF012345 << 16)
    return fps


def run_pairs(path, settings: Settings, limit, folder, tag):
    outputs = Outputs(pairs=str(folder / f"p{tag}.tsv"), groups=str(folder / f"g{tag}.tsv"))
    run = LocalEngine(1, memory_limit=limit, tmp_dir=str(folder)).pairs(
        Corpus((str(path),)), settings, outputs
    )
    return run, outputs


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["random", "near", "equal", "within_k", "hot_prefix"]),
    st.integers(1, 200),
    st.integers(0, 4),
    st.sampled_from(["components", "center"]),
    st.sampled_from(["all", "original"]),
    st.integers(0, 2**32),
)
def test_outputs_are_the_in_memory_bytes_at_a_tiny_limit(
    tmp_path_factory, kind, n, k, grouping, pairs_mode, seed
):
    folder = tmp_path_factory.mktemp("ooc")
    rng = np.random.default_rng(seed)
    times = rng.integers(0, 5, n)  # many ties: broken by input order
    path = write_rows(folder / "fps.tsv", fingerprints(kind, n, seed), times)
    s = Settings(method="simhash", hamming_k=k, grouping=grouping, pairs=pairs_mode)
    in_memory(path, s, str(folder / "p_mem.tsv"), str(folder / "g_mem.tsv"))
    run, outputs = run_pairs(path, s, "1M", folder, "ooc")
    assert filecmp.cmp(outputs.pairs, folder / "p_mem.tsv", shallow=False)
    assert filecmp.cmp(outputs.groups, folder / "g_mem.tsv", shallow=False)
    assert run.stats["pairs"] == sum(1 for _ in open(outputs.pairs)) - 1
    assert [p.name for p in folder.iterdir() if p.name.startswith("neardup-")] == []


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(["near", "equal", "within_k"]),
    st.integers(1, 300),
    st.sampled_from(["1M", "1G"]),
    st.integers(0, 2**32),
)
def test_outputs_are_the_in_memory_bytes_with_every_step_cut_in_pieces(
    tmp_path_factory, kind, n, limit, seed
):
    # Every kernel on two halves (a group of identical fingerprints across the middle), blocks
    # of a few rows read ahead, and pieces of a few rows written while the next is built.
    folder = tmp_path_factory.mktemp("cut")
    times = np.random.default_rng(seed).integers(0, 5, n)
    path = write_rows(folder / "fps.tsv", fingerprints(kind, n, seed), times)
    s = Settings(method="simhash", hamming_k=3, pairs="all")
    in_memory(path, s, str(folder / "p_mem.tsv"), str(folder / "g_mem.tsv"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        patch.setattr(io_fingerprints, "_BLOCK_BYTES", 300)
        patch.setattr(local, "WRITE_PIECE_ROWS", 7)
        _, outputs = run_pairs(path, s, limit, folder, "cut")
    assert filecmp.cmp(outputs.pairs, folder / "p_mem.tsv", shallow=False)
    assert filecmp.cmp(outputs.groups, folder / "g_mem.tsv", shallow=False)


def test_the_search_is_split_and_the_columns_spill_at_a_small_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(pairs_outofcore, "SEARCH_ROW_BYTES", 1 << 16)  # parts of 16 rows
    n = 3000
    rng = np.random.default_rng(5)
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", n, 5), rng.integers(0, 99, n))
    s = Settings(method="simhash", hamming_k=3)
    in_memory(path, s, str(tmp_path / "p_mem.tsv"), str(tmp_path / "g_mem.tsv"))
    run, outputs = run_pairs(path, s, "1M", tmp_path, "ooc")
    assert run.figures["search parts a table group"] > 1 and run.figures["spilled MB"] > 0
    assert filecmp.cmp(outputs.pairs, tmp_path / "p_mem.tsv", shallow=False)
    assert filecmp.cmp(outputs.groups, tmp_path / "g_mem.tsv", shallow=False)
    big, outputs = run_pairs(path, s, "1G", tmp_path, "big")
    assert big.figures["spilled MB"] == 0 and big.figures["search parts a table group"] == 1
    assert filecmp.cmp(outputs.pairs, tmp_path / "p_mem.tsv", shallow=False)
    assert big.stats | {"seconds": None} == run.stats | {"seconds": None}


def test_a_stream_that_starts_over_drops_what_it_kept(tmp_path, monkeypatch):
    """IDs out of order in the third block: the read starts over, after some IDs and columns
    went to the work folder."""
    monkeypatch.setattr(io_fingerprints, "_BLOCK_BYTES", 4096)
    n = 2000
    ids = [f"d{k:05d}" for k in range(n)]
    ids[300], ids[301] = ids[301], ids[300]
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", n, 9), np.zeros(n), ids)
    s = Settings(method="simhash", hamming_k=2, pairs="original")
    in_memory(path, s, str(tmp_path / "p_mem.tsv"), str(tmp_path / "g_mem.tsv"))
    run, outputs = run_pairs(path, s, "1M", tmp_path, "ooc")
    assert run.read.documents == n and run.stats["documents"] == n
    assert filecmp.cmp(outputs.pairs, tmp_path / "p_mem.tsv", shallow=False)
    assert filecmp.cmp(outputs.groups, tmp_path / "g_mem.tsv", shallow=False)


def test_the_linked_rows_directory_is_charged_while_it_is_held(tmp_path):
    n = 1000
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", n, 3), np.zeros(n))
    held = {}
    for mode in ("all", "original"):
        with spill.WorkDir(tmp_path, key=mode, name_hint="p.tsv") as work:
            s = Settings(method="simhash", hamming_k=3, pairs=mode)
            job = OutOfCorePairs(FingerprintBatches([path]), s, work, 1 << 20)
            job.run()
            held[mode] = job.budget.free, job._linked_rows.nbytes
    # Kept to write every pair (their ends' compact indices), let go after the grouping else.
    words = -(-n // 64)
    assert held["all"][1] == 8 * words + 8 * (words + 1) and held["original"][1] == 0
    assert held["original"][0] - held["all"][0] == held["all"][1]


def test_tiny_limit_and_default_write_the_same_bytes_through_the_cli(tmp_path):
    n = 4000
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", n, 2), np.arange(n) // 7)
    for limit, tag in ((["--memory-limit", "1M", "--tmp-dir", str(tmp_path)], "tiny"), ([], "d")):
        result = CliRunner().invoke(
            main,
            ["pairs", str(path), "-k", "3", "-o", str(tmp_path / f"p{tag}.parquet")]
            + ["--groups-out", str(tmp_path / f"g{tag}.csv"), "-q", *limit],
        )
        assert result.exit_code == 0, result.output
    assert filecmp.cmp(tmp_path / "ptiny.parquet", tmp_path / "pd.parquet", shallow=False)
    assert filecmp.cmp(tmp_path / "gtiny.csv", tmp_path / "gd.csv", shallow=False)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("neardup-")] == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_temp_disk_is_one_clear_error(tmp_path, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    monkeypatch.setattr(pairs_outofcore, "SEARCH_ROW_BYTES", 1 << 16)  # partition files
    n = 3000
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", n, 4), np.zeros(n))

    def full_disk_open(name, mode="r", *args, **kwargs):
        # /dev/full fails every write with ENOSPC, as a full disk does.
        if mode[0] in "wa" and str(name).endswith(".bin"):
            return builtins.open("/dev/full", mode, *args, **kwargs)
        return builtins.open(name, mode, *args, **kwargs)

    monkeypatch.setattr(spill, "open", full_disk_open, raising=False)
    result = CliRunner().invoke(
        main,
        ["pairs", str(path), "-k", "3", "-o", str(tmp_path / "p.tsv"), "--memory-limit", "1M"]
        + ["--tmp-dir", str(spill_dir), "--groups-out", str(tmp_path / "g.tsv")],
    )
    assert result.exit_code == 1
    assert "no space left" in result.output and str(spill_dir) in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert list(spill_dir.iterdir()) == []
    assert not (tmp_path / "p.tsv").exists() and not (tmp_path / "g.tsv").exists()


def test_a_bad_row_is_reported_with_file_line_and_field(tmp_path):
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", 50, 1), np.zeros(50))
    with open(path, "a") as fh:
        fh.write("d99999\t00000000000000ff\tyesterday\n")
    result = CliRunner().invoke(
        main,
        ["pairs", str(path), "-k", "3", "-o", str(tmp_path / "p.tsv"), "--memory-limit", "1M"]
        + ["--tmp-dir", str(tmp_path)],
    )
    assert result.exit_code == 1
    assert f"{path}, line 51, field 'timestamp'" in result.output, result.output
    assert not (tmp_path / "p.tsv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("neardup-")] == []


def test_bad_limit_and_resume_are_refused(tmp_path):
    path = write_rows(tmp_path / "fps.tsv", fingerprints("near", 5, 1), np.zeros(5))
    result = CliRunner().invoke(
        main, ["pairs", str(path), "-o", str(tmp_path / "p.tsv"), "--memory-limit", "lots"]
    )
    assert result.exit_code != 0 and "memory limit must be a size like 2G" in result.output
    with pytest.raises(ValueError, match="pairs cannot resume"):
        LocalEngine(1, resume=True).pairs(
            Corpus((str(path),)), Settings(method="simhash"), Outputs()
        )


def test_only_simhash_without_verification():
    with pytest.raises(ValueError, match="without verification; got method='minhash'"):
        pairs_outofcore.OutOfCorePairs(None, Settings(method="minhash"), None, 1 << 20)


def test_docstrings():
    assert doctest.testmod(pairs_outofcore).failed == 0
