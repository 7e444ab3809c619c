"""The local engine: the same bytes whatever the number of workers, the memory limit, and whether
the corpus is a file read out of core or a table kept in memory."""

import json

import numpy as np
import pyarrow as pa
import pytest
from test_outofcore import make_corpus

from neardup.engines import GROUP_COLUMNS, Corpus, EngineOptions, Outputs, local, pair_columns
from neardup.engines.local import (
    LocalEngine,
    groups_columns,
    open_engine,
    pairs_columns,
)
from neardup.io import TableWriter, read_table, write_table
from neardup.pipeline import find_groups, signatures
from neardup.settings import Settings


@pytest.fixture(scope="module")
def rows():
    return make_corpus(400, seed=3)


@pytest.fixture(scope="module")
def corpus_file(rows, tmp_path_factory):
    path = tmp_path_factory.mktemp("local") / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SETTINGS = {
    "minhash": Settings(shingle="word:2", threshold=0.6, pairs="all"),
    "simhash": Settings(method="simhash", hamming_k=6, grouping="center"),
}


def written(engine, corpus, settings, tmp_path, tag):
    """GROUPS and PAIRS of a run of ``engine``, as bytes."""
    outputs = Outputs(
        groups=str(tmp_path / f"{tag}.groups.tsv"), pairs=str(tmp_path / f"{tag}.pairs.tsv")
    )
    engine.dedup(corpus, settings, outputs)
    return [(tmp_path / f"{tag}.{name}.tsv").read_bytes() for name in ("groups", "pairs")]


@pytest.mark.parametrize("method", sorted(SETTINGS))
def test_table_in_memory_and_file_out_of_core_write_the_same_bytes(
    rows, corpus_file, tmp_path, method
):
    settings = SETTINGS[method]
    table = {
        "id": [r["id"] for r in rows],
        "text": [r["text"] for r in rows],
        "ts": [r["ts"] for r in rows],
    }
    in_memory = written(
        LocalEngine(2),
        Corpus(table=table, reading={"time_field": "ts"}),
        settings,
        tmp_path,
        "memory",
    )
    out_of_core = written(
        LocalEngine(2, memory_limit="1M"),
        Corpus((str(corpus_file),), {"time_field": "ts"}),
        settings,
        tmp_path,
        "files",
    )
    assert in_memory == out_of_core
    assert in_memory[1].count(b"\n") > 20  # the corpus has near-duplicates to find


@pytest.mark.parametrize("method", sorted(SETTINGS))
def test_workers_and_memory_limit_do_not_change_the_output(corpus_file, tmp_path, method):
    corpus = Corpus((str(corpus_file),), {"time_field": "ts"})
    runs = {
        (workers, limit): written(
            LocalEngine(workers, memory_limit=limit),
            corpus,
            SETTINGS[method],
            tmp_path,
            f"{workers}-{limit}",
        )
        for workers in (1, 2)
        for limit in ("1M", "1G")
    }
    assert len(set(map(tuple, runs.values()))) == 1


def test_a_small_memory_limit_spills_and_the_run_says_so(tmp_path):
    # 4,000 documents: their band hashes (37 bands of 8 bytes each) outgrow half of 1M.
    path = tmp_path / "docs.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in make_corpus(4000, seed=3)), encoding="utf-8"
    )
    corpus = Corpus((str(path),), {"time_field": "ts"})
    runs = {
        limit: LocalEngine(1, memory_limit=limit).dedup(
            corpus, SETTINGS["minhash"], Outputs(groups=str(tmp_path / f"{limit}.tsv"))
        )
        for limit in ("1M", "1G")
    }
    small, large = runs["1M"], runs["1G"]
    assert small.figures["spilled MB"] > 0 and large.figures["spilled MB"] == 0
    assert small.resolved == {"memory_limit": 1 << 20}
    assert small.figures["memory limit MB"] == (1 << 20) / 1e6
    assert small.read_seconds is not None and small.read.documents == 4000
    # A run over files writes GROUPS piece by piece and keeps none of its columns.
    assert small.groups is None and large.groups is None
    assert (tmp_path / "1M.tsv").read_bytes() == (tmp_path / "1G.tsv").read_bytes()


@pytest.mark.parametrize("suffix", ["tsv", "csv.gz", "jsonl.zst", "parquet"])
@pytest.mark.parametrize("method", sorted(SETTINGS))
def test_outputs_written_in_pieces_are_the_bytes_of_the_whole_table(
    rows, corpus_file, tmp_path, monkeypatch, suffix, method
):
    settings = SETTINGS[method]
    corpus = Corpus((str(corpus_file),), {"time_field": "ts"})

    def written_as(tag: str, limit: str) -> list[bytes]:
        outputs = Outputs(
            groups=str(tmp_path / f"{tag}.groups.{suffix}"),
            pairs=str(tmp_path / f"{tag}.pairs.{suffix}"),
        )
        LocalEngine(1, memory_limit=limit).dedup(corpus, settings, outputs)
        return [open(path, "rb").read() for path in (outputs.groups, outputs.pairs)]

    # The whole table at once, as before the pieces: the 400 rows of the corpus's groups.
    table = {"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}
    groups = find_groups(
        signatures(table["text"], settings),
        np.array([r["ts"] for r in rows], np.int64),
        settings,
        table["text"],
    )
    ids = pa.array(table["id"], pa.large_string())  # as the JSON Lines reader gives them
    whole = [tmp_path / f"whole.{name}.{suffix}" for name in ("groups", "pairs")]
    write_table(whole[0], groups_columns(ids, groups))
    write_table(whole[1], pairs_columns(ids, groups, settings.method))
    assert written_as("default", "1G") == [path.read_bytes() for path in whole]

    pieces = []
    monkeypatch.setattr(local, "WRITE_PIECE_ROWS", 37)
    write_piece = TableWriter.write
    monkeypatch.setattr(
        TableWriter,
        "write",
        lambda writer, columns: (
            pieces.append(len(columns["id" if "id" in columns else "id_a"]))
            or write_piece(writer, columns)
        ),
    )
    for limit in ("1M", "1G"):
        pieces.clear()
        assert written_as(f"pieces-{limit}", limit) == [path.read_bytes() for path in whole]
        # PAIRS' pieces, then GROUPS' 400 rows in pieces of 37.
        assert pieces[-11:] == [37] * 10 + [30]
        assert sum(pieces) == 400 + groups.pair_a.shape[0] and len(pieces) > 12


def test_a_table_run_equals_the_pipeline_in_memory(rows):
    settings = SETTINGS["minhash"]
    table = {"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}
    run = LocalEngine(2).dedup(Corpus(table=table), settings, Outputs())
    texts = table["text"]
    expected = find_groups(
        signatures(texts, settings), np.zeros(len(texts), np.int64), settings, texts
    )
    assert list(run.groups) == list(GROUP_COLUMNS)
    np.testing.assert_array_equal(run.groups["is_original"], expected.is_original)
    assert run.groups["original_id"].to_pylist() == [table["id"][i] for i in expected.original]
    assert run.stats["pairs"] == expected.stats["pairs"]


def test_fingerprint_is_the_same_for_any_number_of_workers(rows):
    texts = [r["text"] for r in rows] * 6  # more than one batch of BATCH_SIZE
    for settings in SETTINGS.values():
        one = LocalEngine(1).fingerprint(texts, settings)
        two = LocalEngine(2).fingerprint(texts, settings)
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(one, signatures(texts, settings).signature)


def test_the_columns_are_the_ones_every_engine_writes(rows):
    settings = SETTINGS["minhash"]
    batch = read_table(
        {"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}
    ).read_all()
    groups = find_groups(signatures(batch.texts, settings), batch.timestamps, settings, batch.texts)
    assert tuple(groups_columns(batch.ids, groups)) == GROUP_COLUMNS
    assert tuple(pairs_columns(batch.ids, groups, "minhash")) == pair_columns("minhash")
    assert tuple(pairs_columns(batch.ids, groups, "simhash"))[2] == "distance"


def test_a_table_has_no_input_rows_to_keep(tmp_path):
    with pytest.raises(ValueError, match="keep writes the input rows of files"):
        LocalEngine(1).dedup(
            Corpus(table={"id": ["a"], "text": ["x y"]}),
            Settings(),
            Outputs(keep=str(tmp_path / "kept.jsonl")),
        )


def test_outputs_are_checked_before_any_reading(corpus_file):
    with pytest.raises(ValueError, match="refusing to overwrite it"):
        LocalEngine(1).dedup(
            Corpus((str(corpus_file),)),
            Settings(),
            Outputs(groups="g.tsv", beside=(str(corpus_file),)),
        )


def test_the_report_of_a_table_run_shows_its_texts(tmp_path):
    table = {"id": ["a", "b", "c"], "text": ["the cat sat on the mat today"] * 2 + ["other"]}
    report = tmp_path / "report.html"
    LocalEngine(1).dedup(
        Corpus(table=table), Settings(method="simhash"), Outputs(report=str(report))
    )
    assert "the cat sat on the mat today" in report.read_text(encoding="utf-8")


def test_open_engine_takes_the_local_options():
    engine = open_engine(
        EngineOptions(
            workers=3, memory_limit="64M", tmp_dir="/tmp", resume=True, spark_master="local[2]"
        )
    )
    assert (engine.name, engine.workers, engine.memory_limit, engine.tmp_dir, engine.resume) == (
        "local",
        3,
        64 << 20,
        "/tmp",
        True,
    )
    with pytest.raises(ValueError, match="workers must be"):
        LocalEngine(-1)


def seed_rows(fingerprints, tmp_path):
    """A seed rows file of ``fingerprints``, row ``i`` ID ``d<i>``, times running backwards for
    the first half of the rows (so originals are not simply the first rows)."""
    n = len(fingerprints)
    path = tmp_path / "rows.tsv"
    lines = [
        f"d{i}\t{int(fp):016x}\t2024-01-{1 + abs(n // 2 - i) % 28:02d}T00:00:00Z\n"
        for i, fp in enumerate(fingerprints)
    ]
    path.write_text("".join(lines))
    return path


ADVERSARIAL = {
    "one fingerprint": [0xDEADBEEF] * 40,
    "exactly k apart and k + 1": [0, 0b111, 0b1110000, 0b1111 << 60, 7 << 61, 0b111, 1 << 63],
    "copies of two fingerprints within k": [0, 0b10101] * 15 + [0b1111],
    "chain within k, ends beyond": [(1 << (3 * i)) - 1 for i in range(12)] * 2,
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
@pytest.mark.parametrize("grouping", ["components", "center"])
@pytest.mark.parametrize("pairs_mode", ["all", "original"])
def test_pairs_are_every_pair_within_k_and_the_same_bytes_on_any_workers(
    case, grouping, pairs_mode, tmp_path, monkeypatch
):
    """`pairs` over adversarial fingerprints writes every pair within k (brute force over all
    pairs of rows; ``--pairs all``) and the same GROUPS and PAIRS bytes on one worker and on
    two, with every per-document pass cut in two halves on two threads and the outputs written
    in pieces of 4 rows."""
    import neardup.candidates.radix as radix

    fingerprints = ADVERSARIAL[case]
    rows = seed_rows(fingerprints, tmp_path)
    settings = Settings(method="simhash", hamming_k=3, grouping=grouping, pairs=pairs_mode)
    runs = []
    for workers, min_keys in ((1, radix.PARALLEL_MIN_KEYS), (2, 1)):
        monkeypatch.setattr(radix, "PARALLEL_MIN_KEYS", min_keys)
        monkeypatch.setattr(local, "WRITE_PIECE_ROWS", 4 if workers == 2 else 1 << 19)
        outputs = Outputs(
            pairs=str(tmp_path / f"{workers}.pairs.tsv"),
            groups=str(tmp_path / f"{workers}.groups.tsv"),
        )
        LocalEngine(workers).pairs(Corpus((str(rows),)), settings, outputs)
        runs.append([open(path, "rb").read() for path in (outputs.pairs, outputs.groups)])
    assert runs[0] == runs[1]
    if pairs_mode != "all":
        return
    want = [
        f"d{i}\td{j}\t{(a ^ b).bit_count()}"
        for i, a in enumerate(fingerprints)
        for j, b in enumerate(fingerprints)
        if i < j and (a ^ b).bit_count() <= 3
    ]
    got = [line.rsplit("\t", 1)[0] for line in runs[0][0].decode().splitlines()[1:]]
    assert got == want


def test_pairs_refuses_duplicate_ids(tmp_path):
    rows = tmp_path / "rows.tsv"
    rows.write_text("a\t00000000000000ff\nb\t00000000000000fe\na\t00000000000000ff\n")
    with pytest.raises(ValueError, match="line 3.*duplicate id"):
        LocalEngine(1).pairs(Corpus((str(rows),)), Settings(method="simhash"), Outputs())
