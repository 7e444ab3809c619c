"""The Spark engine gives exactly the local engine's results (groups, pairs, bytes of the files).

Every Spark test shares one local session (``spark`` fixture in conftest.py) and is skipped when
pyspark or Java is missing; the pure helpers are tested without Spark.
"""

import bz2
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from synth_helpers import chain_corpus

import neardup
import neardup.engines.spark as spark_engine
import neardup.engines.spark.frames as spark_frames
import neardup.engines.spark.job as spark_job
import neardup.engines.spark.read as spark_read
import neardup.engines.spark.verify as spark_verify
from neardup.cli import main, spark_submit
from neardup.engines.base import Corpus, EngineMemoryError, Outputs, Progress
from neardup.engines.local import groups_columns as _groups_columns
from neardup.engines.local import pairs_columns as _pairs_columns
from neardup.engines.spark import (
    SparkEngine,
    dedup_dataframe,
    read_documents_spark,
    write_result,
)
from neardup.engines.spark import rows as spark_rows
from neardup.engines.spark import write as spark_write
from neardup.engines.spark.frames import Storage
from neardup.engines.spark.groups import components
from neardup.engines.spark.job import _Job
from neardup.engines.spark.monitor import RunMonitor
from neardup.engines.spark.partitions import sized_shuffles
from neardup.engines.spark.rows import _plain_jsonl, _seed_rows, rows_task
from neardup.engines.spark.session import (
    _JAVA_OPTION_VARIABLES,
    _LOG_CONFIG,
    _QUIET_LOGGERS,
    CACHE_COMPRESSION_KEY,
    KRYO_SERIALIZER,
    LOCAL_DRIVER_GC,
    F,
    SparkSession,
    StorageLevel,
    _local_defaults,
    _serializer_default,
    local_driver_memory,
    memory_hint,
)
from neardup.engines.spark.tasks import (
    bound_task,
    components_task,
    length_task,
    shared_bound_task,
    sign_task,
    signature_names,
)
from neardup.engines.spark.write import sorted_pieces, write_output
from neardup.engines.spill import machine_memory
from neardup.groups import connected_components
from neardup.io import InputError, read_documents, read_fingerprints, read_table, write_table
from neardup.lcs import lcs_pairs
from neardup.pipeline import find_groups, signatures
from neardup.settings import Settings
from neardup.text.units import lcs_units
from neardup.verify import LCS_UNIT

pytestmark = pytest.mark.spark

VOCAB = [f"w{i}" for i in range(4000)]
TEMPLATE = (
    "dear customer thank you for your order number {} this message confirms that your "
    "subscription has been renewed and will remain active for the next twelve months if you "
    "did not request this renewal please contact our support team within fourteen days"
)


def make_docs(n, seed=0, templates=0, variants=0):
    """(id, text, ts) rows: originals, exact copies (case / punctuation changed), one-word edits of
    recent documents (so edits of edits form chains), and optionally a hot template."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        r = rng.random()
        if docs and r < 0.12:
            src = docs[int(rng.integers(len(docs)))][1]
            text = src.upper() if rng.random() < 0.5 else src + " !"
        elif docs and r < 0.40:
            words = docs[int(rng.integers(max(0, len(docs) - 30), len(docs)))][1].lower().split()
            words[int(rng.integers(len(words)))] = VOCAB[int(rng.integers(len(VOCAB)))]
            text = " ".join(words)
        else:
            size = int(rng.integers(60, 140))
            text = " ".join(VOCAB[k] for k in rng.integers(0, len(VOCAB), size=size))
        docs.append((f"d{i}", text, int(rng.integers(0, 40))))
    docs += [(f"t{i}", TEMPLATE.format(7), int(rng.integers(0, 40))) for i in range(templates)]
    docs += [
        (f"v{i}", TEMPLATE.format(1000 + i), int(rng.integers(0, 40))) for i in range(variants)
    ]
    order = rng.permutation(len(docs))
    return [docs[i] for i in order]


def local_files(docs, settings, tmp_path):
    """GROUPS and PAIRS of the local pipeline, written as `neardup dedup` writes them."""
    texts = [d[1] for d in docs]
    sig = signatures(texts, settings, keep_sets=False)
    groups = find_groups(sig, np.array([d[2] * 1_000_000 for d in docs]), settings, texts)
    ids = [d[0] for d in docs]
    write_table(tmp_path / "groups_local.tsv", _groups_columns(ids, groups))
    write_table(tmp_path / "pairs_local.tsv", _pairs_columns(ids, groups, settings.method))
    return groups


def spark_files(result, settings, tmp_path):
    try:
        write_result(
            result, settings, str(tmp_path / "groups_spark.tsv"), str(tmp_path / "pairs_spark.tsv")
        )
    finally:
        result.release()


def same_bytes(tmp_path):
    for name in ("groups", "pairs"):
        local = (tmp_path / f"{name}_local.tsv").read_bytes()
        spark = (tmp_path / f"{name}_spark.tsv").read_bytes()
        assert spark == local, f"{name} differs"


def docs_frame(spark, docs, partitions):
    rows = [(i, d[0], d[1], d[2]) for i, d in enumerate(docs)]
    return spark.createDataFrame(rows, "p long, id string, text string, ts long").repartition(
        partitions
    )


def spark_dedup(spark, docs, settings, partitions, **options):
    """``dedup_dataframe`` over ``docs`` in ``partitions`` partitions (columns of
    :func:`docs_frame`), with ``options`` passed on."""
    frame = docs_frame(spark, docs, partitions)
    return dedup_dataframe(
        frame, settings, "id", "text", "ts", position_field="p", partitions=partitions, **options
    )


@pytest.fixture(scope="module")
def corpus():
    return make_docs(1500, seed=7)


# ------------------------------------------------------------------------------------------
# parity with the local engine


@pytest.mark.parametrize(
    "method, grouping, pairs, partitions, adaptive",
    [
        ("simhash", "components", "original", 1, False),
        ("simhash", "center", "all", 3, False),
        ("minhash", "components", "all", 7, True),
        ("minhash", "center", "original", 2, False),
    ],
)
def test_same_groups_and_pairs_as_local(
    spark, corpus, tmp_path, method, grouping, pairs, partitions, adaptive
):
    # The input's partitions and the engine's shuffle partitions vary together; one case runs
    # with adaptive query execution, which re-plans joins and coalesces partitions at run time.
    settings = Settings(
        method=method, grouping=grouping, pairs=pairs, shingle="word:3", hamming_k=4, threshold=0.7
    )
    groups = local_files(corpus, settings, tmp_path)
    assert groups.stats["candidates"] > 50 and groups.stats["exact_duplicates"] > 50
    spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
    try:
        result = dedup_dataframe(
            docs_frame(spark, corpus, partitions),
            settings,
            "id",
            "text",
            "ts",
            position_field="p",
            partitions=partitions,
        )
        spark_files(result, settings, tmp_path)
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")
    same_bytes(tmp_path)
    # Not "rejected": the local engine does not verify candidates whose documents are linked
    # already (groups.accepted_links), Spark verifies them all; the groups are the same.
    for key in (
        "documents",
        "exact_duplicates",
        "candidates",
        "pairs",
        "groups",
        "largest_group",
        "duplicates_removed",
        "empty_documents",
    ):
        assert result.stats[key] == groups.stats[key], key
    # Only a components group links members to its original through other members.
    passed = pd.read_csv(tmp_path / "pairs_spark.tsv", sep="\t")["passed"]
    assert list(passed) == groups.pair_passed.tolist()
    assert passed.all() == (grouping == "center" or pairs == "all")


@pytest.mark.parametrize("broadcast", [True, False])
def test_every_pair_expanded_to_copies_and_shared_fingerprints_as_local(
    spark, tmp_path, monkeypatch, broadcast
):
    # PAIRS "all" expands each accepted pair to the copies of its ends, and SimHash's pairs of
    # fingerprints to the representatives sharing each one: cyclic texts of other lengths
    # have one word 3-gram set, so one fingerprint, and different contents; each has copies
    # (case changed) and a one-word edit. Both ways of the expansion: the rows of the
    # copies broadcast (a run past its skew threshold), or joined as past BROADCAST_ROWS.
    if not broadcast:
        monkeypatch.setattr(spark_frames, "BROADCAST_ROWS", 0)
    rng = np.random.default_rng(5)
    docs = []
    for family in range(12):
        words = [VOCAB[k] for k in rng.integers(0, len(VOCAB), size=3)]
        for length in (20, 23, 26):
            text = " ".join(words[i % 3] for i in range(length))
            docs += [(text, 0), (text.upper(), 1), (text.upper() + " !", 2)]
        edited = (words * 9)[:26]
        edited[5] = VOCAB[family]
        docs.append((" ".join(edited), 3))
    docs = [(f"d{i}", text, ts) for i, (text, ts) in enumerate(docs)]
    settings = Settings(method="simhash", pairs="all", shingle="word:3", threshold=0.6)
    fingerprints = neardup.fingerprint([d[1] for d in docs], method="simhash", shingle="word:3")
    assert np.unique(fingerprints).size == 12 * 2  # a fingerprint a family, and its edit's
    groups = local_files(docs, settings, tmp_path)
    assert groups.stats["exact_duplicates"] == 12 * 3 * 2 and groups.stats["pairs"] > 12 * 9
    result = spark_dedup(spark, docs, settings, 3, skew_threshold=20)
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)


@pytest.fixture(params=["broadcast", "coarse", "joined"])
def sketches_shared(request, monkeypatch):
    """The three ways of bounding pairs by their sketches: broadcast to the tasks, coarse
    sketches broadcast (the way of corpora past ``BROADCAST_SKETCHES`` documents), or joined
    to the pairs (past ``BROADCAST_COARSE``)."""
    if request.param != "broadcast":
        monkeypatch.setattr(spark_verify, "BROADCAST_SKETCHES", 0)
    if request.param == "joined":
        monkeypatch.setattr(spark_verify, "BROADCAST_COARSE", 0)
    return request.param


def test_lcs_bounds_stop_candidates_before_units_join(spark, tmp_path, sketches_shared):
    # Each base text and the same text with a third more words: LSH candidates (most shingles
    # shared) that the length bound alone rejects (LCS resemblance at most 0.75 < 0.8).
    rng = np.random.default_rng(5)
    docs = []
    for i in range(40):
        words = [VOCAB[k] for k in rng.integers(0, len(VOCAB), size=60)]
        extra = [VOCAB[k] for k in rng.integers(0, len(VOCAB), size=20)]
        docs += [(f"b{i}", " ".join(words), i), (f"l{i}", " ".join(words + extra), i)]
    settings = Settings(method="minhash", pairs="all")  # LCS 0.8, the default
    groups = local_files(docs, settings, tmp_path)
    result = dedup_dataframe(
        docs_frame(spark, docs, 2), settings, "id", "text", "ts", position_field="p", partitions=2
    )
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    assert groups.stats["candidates"] >= 30
    assert result.stats["bounded"] == result.stats["candidates"] >= 30


def test_korean_pairs_measured_in_eojeol_same_as_local(spark, tmp_path, sketches_shared):
    """Korean texts go through the same kernels on both engines: their sketches rule nothing
    out, not even by the lengths, and a long word changed of twenty (most characters lost)
    still passes by eojeol."""
    rng = np.random.default_rng(9)
    syllables = list("가나다라마바사아자차카타파하거너더러머버서어저")
    docs = []
    for i in range(30):
        words = ["".join(rng.choice(syllables, 2)) for _ in range(19)]
        # The last word, 16 of the 54 syllables, changed: about 0.76 by characters, 0.95 by eojeol.
        tail = "".join(rng.choice(syllables, 16))
        docs.append((f"k{i}", " ".join(words + [tail]), i))
        docs.append((f"w{i}", " ".join(words + ["".join(rng.choice(syllables, 16))]), i))
        docs.append((f"p{i}", " ".join(words[:5] + [words[5] + "를"] + words[6:] + [tail]), i))
    settings = Settings(method="minhash", pairs="all")  # LCS 0.8, the default
    groups = local_files(docs, settings, tmp_path)
    result = dedup_dataframe(
        docs_frame(spark, docs, 2), settings, "id", "text", "ts", position_field="p", partitions=2
    )
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    assert result.stats["pairs"] == groups.stats["pairs"]
    pairs = pd.read_csv(tmp_path / "pairs_spark.tsv", sep="\t")
    found = set(zip(pairs.iloc[:, 0], pairs.iloc[:, 1], strict=True))
    assert sum((f"k{i}", f"w{i}") in found or (f"w{i}", f"k{i}") in found for i in range(30)) >= 25


# A ≈ B (LCS 0.85) and B ≈ C (0.85), A and C only 0.7: C is in A's group (components), and the
# row A -> C does not pass the rule.
CHAIN_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
    "november oscar papa quebec romeo sierra tango"
).split()
CHAIN_DOCS = [
    ("A", " ".join(CHAIN_WORDS), 1),
    ("B", " ".join(["zulu", "yankee", "xray"] + CHAIN_WORDS[3:]), 2),
    (
        "C",
        " ".join(["zulu", "yankee", "xray"] + CHAIN_WORDS[3:17] + ["uniform", "victor", "whiskey"]),
        3,
    ),
    ("D", "an unrelated sentence about something else entirely", 0),
]


@pytest.mark.parametrize(
    "pairs, expected",
    [
        ("original", [("A", "B", 0.85, True), ("A", "C", 0.7, False)]),
        ("all", [("A", "B", 0.85, True), ("B", "C", 0.85, True)]),
    ],
)
def test_pairs_passed_through_the_original_same_as_local(spark, tmp_path, pairs, expected):
    settings = Settings(method="minhash", shingle="char:4", pairs=pairs)  # LCS 0.8, the default
    local_files(CHAIN_DOCS, settings, tmp_path)
    result = dedup_dataframe(
        docs_frame(spark, CHAIN_DOCS, 2),
        settings,
        "id",
        "text",
        "ts",
        position_field="p",
        partitions=2,
    )
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    rows = pd.read_csv(tmp_path / "pairs_spark.tsv", sep="\t")
    assert list(rows.columns) == ["id_a", "id_b", "similarity", "passed"]
    assert list(rows.itertuples(index=False, name=None)) == expected


@pytest.fixture(params=["broadcast", "salted", "salted-coarse"])
def lookups(request, monkeypatch):
    """Both ways of a skew-safe join with a table of documents: broadcast whole, or salted on
    its hot keys (the way of tables past ``BROADCAST_ROWS`` rows; the count sketches joined to
    the pairs too, as past ``BROADCAST_COARSE`` documents, or to the pairs their coarse
    sketches leave, as past ``BROADCAST_SKETCHES``)."""
    if request.param.startswith("salted"):
        monkeypatch.setattr(spark_frames, "BROADCAST_ROWS", 0)
        monkeypatch.setattr(spark_verify, "BROADCAST_SKETCHES", 0)
    if request.param == "salted":
        monkeypatch.setattr(spark_verify, "BROADCAST_COARSE", 0)
    return request.param


@pytest.mark.parametrize(
    "method, grouping, partitions", [("simhash", "center", 3), ("minhash", "components", 5)]
)
def test_skewed_corpus_same_as_local(spark, tmp_path, method, grouping, partitions, lookups):
    # 3,000 copies of one template and 200 one-slot variants of it: with a low skew threshold the
    # joins on the template's representative are salted, the variants' table prefixes and
    # LSH buckets meet in one task each, and the large center component goes through
    # distributed rounds.
    docs = make_docs(300, seed=3, templates=3000, variants=200)
    settings = Settings(
        method=method,
        grouping=grouping,
        pairs="original",
        shingle="word:3",
        hamming_k=6,
        threshold=0.7,
    )
    groups = local_files(docs, settings, tmp_path)
    assert groups.stats["largest_group"] >= 3000
    result = spark_dedup(spark, docs, settings, partitions, skew_threshold=100, center_local_max=40)
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    if grouping == "center":
        assert result.stats["center_rounds"] > 0


@pytest.mark.parametrize(
    ("skew_threshold", "serialised"), [(100, False), (None, False), (None, True)]
)
def test_untimed_corpus_same_as_local(spark, tmp_path, monkeypatch, skew_threshold, serialised):
    # One time for every document: each component's original is its smallest position, the
    # components' label; the copies and the members of larger groups alone are looked up (with
    # a low skew threshold by salted joins, the template's group being hot). Past
    # SERIALISED_DOCUMENTS, the run's stored tables are serialised: the same files.
    if serialised:
        monkeypatch.setattr(spark_frames, "SERIALISED_DOCUMENTS", 0)
    kept_deserialised = []
    keep = Storage.keep

    def spied_keep(storage, df, totals=(), columnar=False):
        stored = keep(storage, df, totals, columnar)
        if stored._neardup_stored is not stored:  # a checkpoint, not a columnar table
            kept_deserialised.append(stored._neardup_stored.getStorageLevel().deserialized())
        return stored

    monkeypatch.setattr(Storage, "keep", spied_keep)
    docs = [(d[0], d[1], 0) for d in make_docs(300, seed=4, templates=600, variants=60)]
    settings = Settings(method="minhash", pairs="original", shingle="word:3", threshold=0.7)
    groups = local_files(docs, settings, tmp_path)
    assert groups.stats["largest_group"] >= 600 and groups.stats["groups"] > 100
    options = {} if skew_threshold is None else {"skew_threshold": skew_threshold}
    result = spark_dedup(spark, docs, settings, 3, **options)
    assert (False in kept_deserialised) == serialised
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    for key in ("groups", "largest_group", "duplicates_removed"):
        assert result.stats[key] == groups.stats[key], key


def test_salted_lookup_and_split_cells(spark):
    job = _Job(SparkEngine(spark, partitions=3, skew_threshold=10), Settings())
    job.skewed = True
    left = spark.createDataFrame(
        [(i % 3 if i < 90 else i, i) for i in range(120)], "k long, v long"
    )
    right = spark.createDataFrame([(k, k * 10) for k in range(0, 120, 2)], "k long, w long")
    for how in ("inner", "left"):
        got = sorted(
            map(tuple, job.lookup(left, right, ["k"], how).select("k", "v", "w").collect())
        )
        want = sorted(map(tuple, left.join(right, ["k"], how).select("k", "v", "w").collect()))
        assert got == want
        # A right side known to be small is broadcast: the same rows.
        small = job.lookup(left, right, ["k"], how, right_rows=60).select("k", "v", "w")
        assert sorted(map(tuple, small.collect())) == want
    # Both ends of pairs, their hot keys counted by one query: the two plain joins' rows.
    pairs = left.select(F.col("k").alias("a"), F.col("v").alias("b"))
    end_a = right.select(F.col("k").alias("a"), F.col("w").alias("w_a"))
    end_b = right.select(F.col("k").alias("b"), F.col("w").alias("w_b"))
    both = job.lookup_ends(pairs, end_a, end_b).select("a", "b", "w_a", "w_b")
    plain = pairs.join(end_a, ["a"]).join(end_b, ["b"]).select("a", "b", "w_a", "w_b")
    assert sorted(map(tuple, both.collect())) == sorted(map(tuple, plain.collect()))
    # Pairs known to be few are broadcast to the ends' rows, which are not shuffled: the same.
    few = job.lookup_ends(pairs, end_a, end_b, pair_rows=120).select("a", "b", "w_a", "w_b")
    plan = few._jdf.queryExecution().executedPlan().toString()
    assert plan.count("BuildLeft") == 2 and "hashpartitioning" not in plan
    assert sorted(map(tuple, few.collect())) == sorted(map(tuple, plain.collect()))
    # Every pair of rows of a hot key meets in exactly one cell.
    rows = spark.createDataFrame([(0, i) for i in range(40)] + [(1, 100)], "key long, val long")
    cells = job.split_cells(rows, ["key"], "val").where("key = 0").collect()
    job.release()
    assert {c.S for c in cells} == {8} and job.stats["split_keys"] == 1
    by_cell: dict[tuple[int, int], list] = {}
    for c in cells:
        by_cell.setdefault((c.lo, c.hi), []).append(c)
    meet = Counter()
    for (lo, hi), cell in by_cell.items():
        for i, x in enumerate(cell):
            for y in cell[i + 1 :]:
                if lo == hi or x.blk != y.blk:
                    meet[min(x.val, y.val), max(x.val, y.val)] += 1
    assert len(meet) == 40 * 39 // 2 and set(meet.values()) == {1}


def test_stored_table_carries_its_count_and_totals(spark):
    # The job that stores the rows also computes the totals: none is run to read them back.
    storage = Storage(spark, "local")
    df = spark.range(100).select("id", (F.col("id") % 3).alias("m"))
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    sc.setLocalProperty("spark.jobGroup.id", "neardup-test-keep")
    try:
        kept = storage.keep(df, totals=[F.sum("m"), F.max("id"), F.min(F.when(F.col("id") < 0, 1))])
        jobs = len(tracker.getJobIdsForGroup("neardup-test-keep"))
        figures = (Storage.rows(kept), Storage.totals(kept))
        assert len(tracker.getJobIdsForGroup("neardup-test-keep")) == jobs == 1
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert figures == (100, (99, 99, None))
    assert sorted(r.id for r in kept.collect()) == list(range(100))
    storage.release()


@pytest.mark.parametrize("serialised", [False, True])
def test_stored_table_serialised_when_asked_and_spilled_to_disk(spark, serialised):
    # Serialised: a few byte arrays a partition, not an object a row for the collector to trace.
    storage = Storage(spark, "local")
    storage.serialised = serialised
    kept = storage.keep(spark.range(50).select("id", F.lit("text").alias("t")))
    level = kept._neardup_stored.getStorageLevel()
    assert (level.useMemory(), level.useDisk(), level.deserialized()) == (
        True,
        True,
        not serialised,
    )
    assert sorted(r.id for r in kept.where("id % 10 = 0").collect()) == [0, 10, 20, 30, 40]
    storage.release()


def test_columnar_table_read_from_its_cache_and_released(spark, monkeypatch):
    # Spark's in-memory columns (memory and disk), counted and totalled by the job that
    # stores them; a reader of one column reads it from the cache; release frees it.
    storage = Storage(spark, "local")
    storage.serialised = True  # no bearing on a columnar table
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    sc.setLocalProperty("spark.jobGroup.id", "neardup-test-columnar")
    try:
        df = spark.range(60).select("id", F.concat(F.lit("t"), F.col("id")).alias("t"))
        kept = storage.keep(df, totals=[F.max("id")], columnar=True)
        assert len(tracker.getJobIdsForGroup("neardup-test-columnar")) == 1
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert kept.is_cached and kept.storageLevel == StorageLevel.MEMORY_AND_DISK_DESER
    assert (Storage.rows(kept), Storage.totals(kept)) == (60, (59,))
    ids = kept.select("id").where("id % 20 = 0")
    assert "InMemoryTableScan" in ids._jdf.queryExecution().executedPlan().toString()
    assert sorted(r.id for r in ids.collect()) == [0, 20, 40]
    storage.release()
    assert not kept.is_cached
    # Under a reliable checkpoint (which survives the loss of an executor), a checkpoint.
    reliable = Storage(spark, "reliable")
    checkpointed = []
    monkeypatch.setattr(reliable, "_checkpointed", lambda d: checkpointed.append(d) or (d, d))
    assert Storage.rows(reliable.keep(df, columnar=True)) == 60
    assert checkpointed == [df] and not df.is_cached


@pytest.mark.parametrize("name", ["out.tsv", "out.csv.gz", "out.parquet"])
def test_written_output_same_collected_or_in_pieces(spark, tmp_path, monkeypatch, name):
    # A small output is collected in one job and sorted on the driver; a large one (or one of
    # unknown size) is sorted by Spark and fetched in pieces: the bytes of the local writer of
    # the whole sorted table either way.
    rng = np.random.default_rng(7)
    rows = [(int(i), f"d{i}", bool(i % 2), float(i) / 7) for i in rng.permutation(500)]
    df = spark.createDataFrame(rows, "pos long, id string, ok boolean, v double").repartition(3)
    columns = ["id", "ok", "v"]
    write_table(
        tmp_path / f"local_{name}",
        {
            "id": [f"d{i}" for i in range(500)],
            "ok": np.arange(500) % 2 == 1,
            "v": np.arange(500) / 7,
        },
    )
    expected = (tmp_path / f"local_{name}").read_bytes()
    for label, collect, rows in [
        ("collected", 500, 500),
        ("pieces", 499, 500),
        ("counted", 1, None),
    ]:
        monkeypatch.setattr(spark_write, "COLLECT_ROWS", collect)
        path = tmp_path / f"{label}_{name}"
        write_output(df, str(path), ["pos"], columns, piece_rows=64, rows=rows)
        assert path.read_bytes() == expected, label


SPARK_OUT_OF_MEMORY = (
    "An error occurred while calling o126.getResult.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 16 in stage 4.0 "
    "failed 1 times, most recent failure: Lost task 16.0 in stage 4.0 (TID 93) (localhost "
    "executor driver): org.apache.spark.memory.SparkOutOfMemoryError: [UNABLE_TO_ACQUIRE_MEMORY]"
    " Unable to acquire 262144 bytes of memory, got 0. SQLSTATE: 53200\n"
    "\tat org.apache.spark.memory.MemoryConsumer.throwOom(MemoryConsumer.java:157)\n"
)
"""A Spark job's failure as Py4J reports it (a 10M run's read, with a 1 GB local driver)."""


@pytest.mark.parametrize(
    "said", [SPARK_OUT_OF_MEMORY, "Job aborted\njava.lang.OutOfMemoryError: Java heap space\n"]
)
def test_memory_hint_turns_spark_out_of_memory_into_one_line(said):
    with pytest.raises(EngineMemoryError) as raised:
        with memory_hint():
            raise RuntimeError(said)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("Spark ran out of memory (")
    assert ("UNABLE_TO_ACQUIRE_MEMORY" in message) or ("Java heap space" in message)
    assert "--driver-memory" in message and "spark.executor.memory" in message
    # Any other error passes unchanged.
    with pytest.raises(RuntimeError, match="^Job aborted: bad row$"):
        with memory_hint():
            raise RuntimeError("Job aborted: bad row")


def test_written_output_empty(spark, tmp_path):
    df = spark.createDataFrame([], "pos long, id string, n long")
    for rows in (0, None):
        write_output(df, str(tmp_path / "out.tsv"), ["pos"], ["id", "n"], piece_rows=1, rows=rows)
        assert (tmp_path / "out.tsv").read_text() == "id\tn\n"


@pytest.mark.parametrize("pieces", [1, 2, 7])
def test_sorted_pieces_in_order_and_bounded(spark, pieces):
    # Range pieces: every row once, in order, each piece one partition of the range sort (so at
    # most the rows the driver is asked to hold at once, up to the sampling's imbalance).
    rng = np.random.default_rng(pieces)
    keys = rng.permutation(3000)
    df = spark.createDataFrame(
        [(int(k) // 10, int(k) % 10, f"r{k}") for k in keys], "a long, b long, name string"
    ).repartition(4)
    got = list(sorted_pieces(df, ["a", "b"], ["name"], pieces=pieces))
    assert all(piece.column_names == ["name"] for piece in got)
    names = [n for piece in got for n in piece["name"].to_pylist()]
    assert names == [f"r{k}" for k in range(3000)]
    assert 1 <= len(got) and sum(p.num_rows for p in got) == 3000
    if pieces > 1:
        assert max(p.num_rows for p in got) < 3000


def _brute_components(edges):
    """Smallest node of each node's component, by repeated relaxation over the edge list."""
    label = {x: x for e in edges for x in e}
    changed = True
    while changed:
        changed = False
        for x, y in edges:
            low = min(label[x], label[y])
            if label[x] != low or label[y] != low:
                label[x] = label[y] = low
                changed = True
    return label


@hypothesis_settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(st.text(st.sampled_from("ab cé한\u00a0\n.,가나 ")), min_size=1, max_size=9),
    skip=st.integers(0, 2),
    large=st.booleans(),
    method=st.sampled_from(["minhash", "simhash"]),
    bounds=st.booleans(),
)
def test_sign_task_reads_the_arrow_texts_as_the_local_signatures_read_strs(
    texts, skip, large, method, bounds
):
    # The task hands the column's bytes to the kernels; the local engine's batch of Python
    # strs is the reference. Sliced columns start inside their buffers.
    column = pa.array(["x y z"] * skip + texts, pa.large_string() if large else pa.string())
    n = len(texts)
    batch = pa.record_batch({"pos": list(range(n)), "ts": [0] * n, "text": column.slice(skip)})
    settings = Settings(method=method)
    bounds = bounds and settings.lcs_bounded  # the bounds of LCS verification only
    out = pa.Table.from_batches(sign_task([batch], settings, bounds=bounds))
    want = signatures(texts, settings, keep_sets=False, bounds=bounds)
    assert out["c0"].to_numpy().view(np.uint64).tolist() == want.content[:, 0].tolist()
    assert out["c1"].to_numpy().view(np.uint64).tolist() == want.content[:, 1].tolist()
    assert out["empty"].to_pylist() == want.empty.tolist()
    if method == "simhash":
        assert out["sig"].to_numpy().view(np.uint64).tolist() == want.signature.tolist()
    else:
        packed = [np.frombuffer(v, np.uint32).tolist() for v in out["sig"].to_pylist()]
        assert packed == want.signature.tolist()
    if bounds:
        assert out["size"].to_pylist() == want.sizes.tolist()
        assert [bytes(v) for v in out["sketch"].to_pylist()] == [bytes(r) for r in want.sketches]


@hypothesis_settings(max_examples=30, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "dd", "가나", "다라마", "e"]), max_size=12).map(
            " ".join
        ),
        min_size=2,
        max_size=8,
    ),
    threshold=st.sampled_from([0.3, 0.5, 0.8, 1.0]),
    data=st.data(),
)
def test_bounds_by_broadcast_by_lengths_and_by_joined_sketches_agree(texts, threshold, data):
    """The three tasks that bound pairs decide as the local engine's kernel: the broadcast one
    keeps exactly what the joined one keeps, and the lengths alone keep at least that."""
    n = len(texts)
    signed = next(
        sign_task(
            [pa.record_batch({"pos": list(range(n)), "ts": [0] * n, "text": texts})],
            Settings(),
            bounds=True,
        )
    )
    sizes = signed["size"].to_pylist()
    sketches = signed["sketch"].to_pylist()
    a = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=20))
    b = data.draw(st.lists(st.integers(0, n - 1), min_size=len(a), max_size=len(a)))
    # Positions out of order, laid out by input (the broadcast table's rows found by its
    # directory) or far apart (searched).
    step = data.draw(st.sampled_from([1 << 44, (1 << 40) + 1, 3]))
    positions = np.array(data.draw(st.permutations(range(0, step * n, step))))
    pairs = pa.record_batch({"a": positions[a].tolist(), "b": positions[b].tolist()})
    table = SimpleNamespace(
        value=spark_verify._sketch_arrays(
            pa.table({"pos": positions, "size": sizes, "sketch": pa.array(sketches, pa.binary())})
        )
    )
    joined = pa.record_batch(
        {
            "a": pairs["a"],
            "b": pairs["b"],
            "size_a": [sizes[i] for i in a],
            "sketch_a": [sketches[i] for i in a],
            "size_b": [sizes[i] for i in b],
            "sketch_b": [sketches[i] for i in b],
            "unbounded_a": [set(sketches[i]) == {255} for i in a],
            "unbounded_b": [set(sketches[i]) == {255} for i in b],
        }
    )

    def kept(task, batch, **options):
        return {
            (r["a"], r["b"])
            for out in task([batch], threshold=threshold, **options)
            for r in out.to_pylist()
        }

    by_sketches = kept(bound_task, joined)
    assert kept(shared_bound_task, pairs, table=table) == by_sketches
    flagged = pa.Table.from_batches(list(shared_bound_task([pairs], table, threshold, "left")))
    assert flagged.num_rows == pairs.num_rows
    assert {(r["a"], r["b"]) for r in flagged.to_pylist() if r["left"]} == by_sketches
    assert kept(length_task, joined) >= by_sketches
    # Every pair the LCS kernel accepts is kept.
    offsets, codes = lcs_units(texts, LCS_UNIT)
    values = lcs_pairs(offsets, codes, np.array(a), np.array(b), threshold)
    for i, j, value in zip(a, b, values, strict=True):
        if value >= threshold:
            assert (positions[i], positions[j]) in by_sketches


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    edges=st.lists(
        st.tuples(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))
        | st.tuples(st.integers(0, 12), st.integers(0, 12)),
        max_size=60,
    ),
    cuts=st.lists(st.integers(0, 60), max_size=4),
)
def test_components_task_labels_by_smallest_position(edges, cuts):
    # Any positions (not 0..n-1), any orientation, repeats, self-loops, any batching.
    bounds = sorted({0, len(edges), *[min(c, len(edges)) for c in cuts]})
    batches = [
        pa.record_batch(
            {
                "a": pa.array([e[0] for e in edges[lo:hi]], pa.int64()),
                "b": pa.array([e[1] for e in edges[lo:hi]], pa.int64()),
            }
        )
        for lo, hi in zip(bounds, bounds[1:])
    ]
    schema = pa.schema([("pos", pa.int64()), ("label", pa.int64())])
    out = pa.Table.from_batches(list(components_task(batches)), schema)
    assert dict(zip(out["pos"].to_pylist(), out["label"].to_pylist())) == _brute_components(edges)


@pytest.mark.parametrize("local_max", [0, 10_000], ids=["star-rounds", "one-task"])
def test_connected_components_match_union_find(spark, local_max):
    rng = np.random.default_rng(1)
    n = 400
    a = [int(x) for x in rng.integers(0, n, 150)]
    b = [int(x) for x in rng.integers(0, n, 150)]
    a += list(range(200, 260))  # a long chain
    b += list(range(201, 261))
    a += [5] * 80  # a hub with many neighbours (a hot key)
    b += [int(x) for x in rng.integers(0, n, 80)]
    expected = connected_components(n, np.array(a), np.array(b))
    job = _Job(SparkEngine(spark, partitions=3, skew_threshold=20), Settings())
    job.skewed = True
    edges = spark.createDataFrame(list(zip(a, b)), "a long, b long")
    nodes = spark.createDataFrame([(i, 0) for i in range(n)], "pos long, ts long")
    labels = components(job, edges.repartition(3), nodes, len(a), local_max)
    labels = [r.label for r in labels.orderBy("pos").collect()]
    assert (job.stats["component_rounds"] > 0) == (local_max == 0)
    job.release()
    assert labels == expected.tolist()


def test_dataframe_api_examples(spark):
    # The module docstring's example: exact duplicates after case folding and punctuation.
    df = spark.createDataFrame(
        [("a", "the cat sat on the mat today"), ("b", "The cat sat on the mat, today!")],
        "id string, text string",
    )
    result = dedup_dataframe(df.coalesce(1), Settings(method="simhash", hamming_k=3))
    assert [r.duplicate_id for r in result.groups.orderBy("pos").collect()] == ["a", "a"]
    result.release()
    # Fingerprints as longs (the uint64 bits, so the top bit makes a negative long) or hex text;
    # the earliest by time is the original.
    top = -(2**63)
    fps = spark.createDataFrame(
        [("p", top | 5, 3), ("q", top | 4, 1), ("r", 0xFF, 2), ("s", 0xFF, 5)],
        "id string, fingerprint long, ts long",
    )
    result = spark_engine.pairs_dataframe(fps.coalesce(1), 1, time_field="ts")
    pairs = sorted((p.id_a, p.id_b, p.distance, p.passed) for p in result.pairs.collect())
    groups = {g.id: g.original_id for g in result.groups.collect()}
    result.release()
    assert pairs == [("p", "q", 1, True), ("r", "s", 0, True)]
    assert groups == {"p": "q", "q": "q", "r": "r", "s": "r"}
    text_fps = spark.createDataFrame(
        [("x", "00000000000000ff"), ("y", "00000000000000fe")], "id string, fingerprint string"
    )
    result = spark_engine.pairs_dataframe(text_fps.coalesce(1), 1, pairs="original")
    assert [(p.id_a, p.id_b, p.distance) for p in result.pairs.collect()] == [("x", "y", 1)]
    result.release()


# ------------------------------------------------------------------------------------------
# the command line


def write_jsonl(path, rows):
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("reading", ["by ranges", "signed", "unsigned"])
def test_cli_dedup_spark_writes_the_local_files(spark, tmp_path, monkeypatch, reading):
    # Two inputs with a few bad rows among the good ones: skipped (and the rest deduplicated)
    # exactly as the local engine does with --on-error skip. The outputs are fetched in small
    # pieces, as a large run's are (the other runs of the command line collect theirs at once).
    # The local files are read by byte ranges and signed as read (their texts read back for
    # verification), or read by Spark's text source and signed by the task that reads them,
    # or (past the documents for that) from the stored rows.
    signed_while_read = reading != "unsigned"
    if reading != "by ranges":
        monkeypatch.setattr(spark_read, "reads_by_ranges", lambda path: False)
    if not signed_while_read:
        monkeypatch.setattr(spark_read, "SIGNED_READ_DOCUMENTS", 0)
    signs = []

    def reading(*args, sign=None, **options):
        signs.append(sign is not None)
        return read_documents_spark(*args, sign=sign, **options)

    monkeypatch.setattr(spark_job, "read_documents_spark", reading)
    monkeypatch.setattr(spark_write, "COLLECT_ROWS", 10)
    monkeypatch.setattr(spark_write, "PIECE_ROWS", 150)
    monkeypatch.setattr(spark_write, "PIECE_BYTES", 20_000)
    docs = make_docs(800, seed=11)
    rows = [{"id": d[0], "text": d[1], "ts": d[2]} for d in docs]
    rows[3]["ts"] = "1970-01-01T00:00:05Z"
    rows[10]["text"] = None
    rows[20]["ts"] = "yesterday"
    rows[600]["id"] = rows[5]["id"]
    first = write_jsonl(tmp_path / "a.jsonl", rows[:500])
    second = write_jsonl(tmp_path / "b.jsonl", rows[500:])
    outputs = {}
    for engine in ("local", "spark"):
        out = {
            k: tmp_path / f"{k}_{engine}.{ext}"
            for k, ext in (("groups", "tsv"), ("pairs", "tsv"), ("kept", "jsonl"))
        }
        result = run(
            "dedup",
            first,
            second,
            "-o",
            out["groups"],
            "--pairs-out",
            out["pairs"],
            "--keep",
            out["kept"],
            "--time-field",
            "ts",
            "--engine",
            engine,
            "--workers",
            "1",
            "--on-error",
            "skip",
        )
        assert result.exit_code == 0, result.output
        assert "groups" in result.output
        if engine == "spark":
            # The summary: seconds and shuffle bytes per stage, read and write included.
            summary = {
                key.strip(): float(value.replace(",", ""))
                for key, value in (
                    line.rsplit("  ", 1)
                    for line in result.output.splitlines()
                    if line.startswith(("seconds: ", "shuffle MB: "))
                )
            }
            for stage in ("read", "signatures", "candidates", "verify", "groups", "write"):
                assert summary[f"seconds: {stage}"] > 0
            shuffled = {
                key.removeprefix("shuffle MB: "): value
                for key, value in summary.items()
                if key.startswith("shuffle MB: ")
            }
            assert shuffled["candidates"] > 0 and shuffled["exact_duplicates"] > 0
        outputs[engine] = {k: p.read_bytes() for k, p in out.items()}
    assert signs == [signed_while_read]
    assert outputs["spark"] == outputs["local"]
    assert outputs["local"]["pairs"].count(b"\n") > 50
    assert outputs["local"]["groups"].count(b"\n") == 800 + 1 - 3  # header, 3 rows skipped


def test_signs_while_reading_estimates_the_documents_from_the_first_lines(
    spark, tmp_path, monkeypatch
):
    # 300 lines of 3 lengths in turn; the first 30 hold the mean of all, so the estimate is
    # the true count; any other input is read and signed apart.
    path = tmp_path / "d.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"{i:03}", "text": "ab " * (i % 3)}) + "\n" for i in range(300))
    )
    monkeypatch.setattr(spark_read, "SAMPLE_LINES", 30)
    monkeypatch.setattr(spark_read, "SIGNED_READ_DOCUMENTS", 0)
    # A local file read by byte ranges is signed whatever its size: its rows keep no text.
    assert spark_read.signs_while_reading(spark, [str(path)])
    monkeypatch.setattr(spark_read, "reads_by_ranges", lambda path: False)
    for most, signs in ((300, True), (299, False)):
        monkeypatch.setattr(spark_read, "SIGNED_READ_DOCUMENTS", most)
        assert spark_read.signs_while_reading(spark, [str(path)]) is signs
    monkeypatch.setattr(spark_read, "SIGNED_READ_DOCUMENTS", 10_000)
    assert spark_read.signs_while_reading(spark, [str(path), str(path)])
    # Compressed files whose bytes, read as text, would make the estimate tiny.
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    (tmp_path / "d.jsonl.bz2").write_bytes(bz2.compress(path.read_bytes()))
    (tmp_path / "d.csv").write_text("id,text\n1,a\n")
    cases = ["d.jsonl.gz"], ["d.jsonl.bz2"], ["d.csv"], ["."], ["*.jsonl"], ["missing.jsonl"]
    for others in cases:
        inputs = [str(path), *(str(tmp_path / name) for name in others)]
        assert not spark_read.signs_while_reading(spark, inputs), others
    assert not spark_read.signs_while_reading(spark, [str(path), "-"])


class _Recorder(Progress):
    """A progress display that records what it is told."""

    def __init__(self):
        self.stages, self.done = [], 0

    def stage(self, name, total=None, unit="docs"):
        self.stages.append((name, total, unit))

    def advance(self, amount, docs=None, spilled=None):
        self.done += amount


def test_run_monitor_shows_tasks_and_counts_shuffles_by_stage(spark):
    recorder = _Recorder()
    slow = F.udf(lambda x: time.sleep(0.05) or x, "long")
    with RunMonitor(spark, recorder, interval=0.02) as monitor:
        monitor.tag("slow")
        spark.range(0, 40, numPartitions=8).select(slow("id").alias("x")).collect()
        monitor.tag("shuffled")
        spark.range(0, 20_000, numPartitions=4).repartition(3, "id").count()
        monitor.tag(None)  # between a run's stages and the caller's next: the last one shown
        spark.range(0, 40, numPartitions=8).select(slow("id").alias("x")).collect()
    assert ("slow", 8, "tasks") in recorder.stages
    assert {name for name, _, _ in recorder.stages} == {"slow", "shuffled"}
    assert 0 < recorder.done
    written = monitor.shuffle_written()
    assert list(written) == ["slow", "shuffled"]
    assert written["slow"] == 0 and written["shuffled"] > 0
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_cli_dedup_bad_row_stops_both_engines_with_one_message(spark, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_ROWS) + "\n", encoding="utf-8")
    messages = {}
    for engine in ("local", "spark"):
        result = CliRunner().invoke(
            main,
            [
                "dedup",
                str(path),
                "-o",
                str(tmp_path / f"{engine}.tsv"),
                "--time-field",
                "ts",
                "--engine",
                engine,
            ],
        )
        assert result.exit_code == 1
        messages[engine] = [line for line in result.output.splitlines() if "error" in line]
    assert messages["spark"] == messages["local"]
    assert "line 2" in messages["local"][0]


def test_cli_pairs_spark_matches_local(spark, tmp_path):
    docs = make_docs(600, seed=5)
    write_jsonl(tmp_path / "docs.jsonl", [{"id": d[0], "text": d[1], "ts": d[2]} for d in docs])
    assert (
        run(
            "fingerprint",
            tmp_path / "docs.jsonl",
            "-o",
            tmp_path / "fps.tsv",
            "--time-field",
            "ts",
            "--method",
            "simhash",
            "--workers",
            "1",
        ).exit_code
        == 0
    )
    outputs = {}
    for engine in ("local", "spark"):
        pairs_out, groups_out = tmp_path / f"pairs_{engine}.tsv", tmp_path / f"groups_{engine}.tsv"
        result = run(
            "pairs",
            tmp_path / "fps.tsv",
            "-k",
            "4",
            "-o",
            pairs_out,
            "--groups-out",
            groups_out,
            "--grouping",
            "center",
            "--engine",
            engine,
            "-q",
        )
        assert result.exit_code == 0, result.output
        outputs[engine] = (pairs_out.read_bytes(), groups_out.read_bytes())
    assert outputs["spark"] == outputs["local"]
    assert outputs["local"][0].count(b"\n") > 20


def test_options_read_at_the_jvm_launch_reach_it(tmp_path):
    """A session ``spark_session`` starts hands its options to the JVM's launch: the driver's
    memory, read only then, is the one asked for (not Spark's default of 1 GB)."""
    script = (
        "from neardup.engines.spark import spark_session\n"
        "spark = spark_session('local[1]', config={'spark.driver.memory': '600m', "
        "'spark.ui.enabled': 'false'})\n"
        "print(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())\n"
        "spark.stop()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) <= 600 * 2**20


@pytest.mark.parametrize(
    ("ram_gib", "expected"),
    [(0.5, "1g"), (4, "1g"), (8, "3g"), (23.4, "8g"), (40, "13g"), (512, "16g")],
)
def test_local_driver_memory_is_a_third_of_the_machine_within_bounds(ram_gib, expected):
    assert local_driver_memory(int(ram_gib * 2**30)) == expected


@pytest.fixture
def no_spark_settings(tmp_path, monkeypatch):
    """An environment that configures no Spark or Java setting; ``SPARK_CONF_DIR`` is an empty
    folder (the test may write a ``spark-defaults.conf`` there)."""
    for name in ("PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_MEMORY", *_JAVA_OPTION_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    # No JVM running in this process (another test's session may be).
    monkeypatch.setattr(pytest.importorskip("pyspark").SparkContext, "_active_spark_context", None)
    return tmp_path


def _local_settings(
    options: dict[str, str] | None = None, defaults=_local_defaults
) -> dict[str, str]:
    """The settings ``defaults`` leaves on a builder given ``options``."""
    builder = SparkSession.Builder()
    for key, value in (options or {}).items():
        builder = builder.config(key, value)
    return dict(defaults(builder)._options)


def test_local_defaults_where_nothing_is_configured(no_spark_settings):
    assert _local_settings() == {
        "spark.driver.memory": local_driver_memory(machine_memory()),
        "spark.driver.extraJavaOptions": LOCAL_DRIVER_GC,
    }
    # The caller's own settings are kept as they are.
    mine = {"spark.driver.memory": "2g", "spark.driver.extraJavaOptions": "-Dx=1"}
    assert _local_settings(mine) == mine


def _serializer_settings(options: dict[str, str] | None = None) -> dict[str, str]:
    return _local_settings(options, _serializer_default)


def test_kryo_unless_a_serializer_is_configured(no_spark_settings, monkeypatch):
    key = "spark.serializer"
    assert _serializer_settings() == {key: KRYO_SERIALIZER}
    java = {key: "org.apache.spark.serializer.JavaSerializer"}
    assert _serializer_settings(java) == java
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--conf {key}={java[key]} pyspark-shell")
    assert _serializer_settings() == {}
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    (no_spark_settings / "spark-defaults.conf").write_text(f"{key} {java[key]}\n")
    assert _serializer_settings() == {}
    (no_spark_settings / "spark-defaults.conf").unlink()
    monkeypatch.setattr(
        pytest.importorskip("pyspark").SparkContext, "_active_spark_context", object()
    )
    assert _serializer_settings() == {}


def test_local_defaults_leave_a_running_jvm_alone(no_spark_settings, monkeypatch):
    monkeypatch.setattr(
        pytest.importorskip("pyspark").SparkContext, "_active_spark_context", object()
    )
    assert _local_settings() == {}


def test_local_defaults_yield_to_settings_wherever_the_launch_reads_them(
    no_spark_settings, monkeypatch
):
    memory, java = "spark.driver.memory", "spark.driver.extraJavaOptions"
    # spark-defaults.conf: the key at the start of a line, not in a comment or another key.
    defaults = no_spark_settings / "spark-defaults.conf"
    defaults.write_text("# spark.driver.memory 2g\nspark.driver.memoryOverhead 1g\n")
    assert set(_local_settings()) == {memory, java}
    defaults.write_text("spark.driver.memory   3g\nspark.driver.extraJavaOptions -Dx=1\n")
    assert _local_settings() == {}
    defaults.unlink()
    for submit_args, left in [
        ("--driver-memory 3g pyspark-shell", {java}),
        ("--conf spark.driver.memory=3g pyspark-shell", {java}),
        ("--driver-java-options -Dx=1 pyspark-shell", {memory}),
    ]:
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", submit_args)
        assert set(_local_settings()) == left, submit_args
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "3g")
    assert set(_local_settings()) == {java}
    monkeypatch.delenv("SPARK_DRIVER_MEMORY")
    # A collector chosen by the environment's Java options: a second one would stop the JVM.
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseZGC")
    assert set(_local_settings()) == {memory}
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Dfile.encoding=UTF-8")
    assert set(_local_settings()) == {memory, java}


def test_a_local_session_gets_a_share_of_the_machine_unless_configured(tmp_path):
    """Without any setting of the driver's memory or Java options, the JVM of a local session
    that ``spark_session`` starts has :func:`local_driver_memory` as its heap, not Spark's 1 GB,
    the parallel collector and Kryo."""
    script = (
        "from neardup.engines.spark import spark_session\n"
        "spark = spark_session('local[1]', config={'spark.ui.enabled': 'false'})\n"
        "print(spark.sparkContext.getConf().get('spark.driver.memory'))\n"
        "jvm = spark.sparkContext._jvm\n"
        "beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()\n"
        "print('|'.join(b.getName().replace(' ', '_') for b in beans))\n"
        "print(jvm.java.lang.Runtime.getRuntime().maxMemory())\n"
        "print(spark.sparkContext.getConf().get('spark.serializer'))\n"
        f"print(spark.conf.get('{CACHE_COMPRESSION_KEY}'))\n"
        "spark.stop()\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYSPARK_")
        and k not in ("SPARK_DRIVER_MEMORY", "SPARK_CONF_DIR", *_JAVA_OPTION_VARIABLES)
    }
    env["SPARK_CONF_DIR"] = str(tmp_path)  # no spark-defaults.conf of the machine's
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    asked, collectors, max_memory, serializer, compressed = done.stdout.split()[-5:]
    assert serializer == KRYO_SERIALIZER
    assert compressed == "false"
    expected = local_driver_memory(machine_memory())
    assert asked == expected
    assert set(collectors.split("|")) == {"PS_Scavenge", "PS_MarkSweep"}  # the parallel GC
    # The heap the JVM reports is the -Xmx less a survivor space.
    assert int(max_memory) > 0.8 * int(expected[:-1]) * 2**30


def test_a_configured_cache_compression_is_kept(tmp_path):
    # Set where the launched JVM reads it (spark-defaults.conf), not in the call's config.
    (tmp_path / "spark-defaults.conf").write_text(f"{CACHE_COMPRESSION_KEY} true\n")
    script = (
        "from neardup.engines.spark import spark_session\n"
        "spark = spark_session('local[1]', config={'spark.ui.enabled': 'false'})\n"
        f"print(spark.conf.get('{CACHE_COMPRESSION_KEY}'))\n"
        "spark.stop()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_CONF_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "true"


def test_only_the_noise_loggers_are_quieted(spark):
    # Other loggers keep the root's level: their WARN and ERROR messages still show.
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    spark.sparkContext.setLogLevel("WARN")
    try:
        for name in _QUIET_LOGGERS:
            assert log4j.LogManager.getLogger(name).getLevel().toString() == "ERROR", name
        for name in (
            "org.apache.spark.scheduler.TaskSetManager",
            "org.apache.spark.SparkContext",
            "org.apache.spark.sql.execution.datasources.FileScanRDD",
        ):
            assert log4j.LogManager.getLogger(name).getLevel().toString() == "WARN", name
    finally:
        spark.sparkContext.setLogLevel("ERROR")
    config = _LOG_CONFIG.read_text()
    assert "rootLogger.level = warn" in config
    assert all(f".name = {name}\n" in config for name in _QUIET_LOGGERS)


def test_cli_reports_missing_pyspark(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_engine, "HAVE_PYSPARK", False)
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "text": "x y z"}])
    result = CliRunner().invoke(
        main, ["dedup", str(path), "-o", str(tmp_path / "g.tsv"), "--engine", "spark"]
    )
    assert result.exit_code == 1
    assert "pip install 'neardup[spark]'" in result.output


def test_module_entry_point_is_the_cli_with_the_spark_engine(capsys):
    with pytest.raises(SystemExit) as exit_info:
        spark_submit.main(["dedup", "--help"])
    assert exit_info.value.code == 0
    assert "--spark-master" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------
# bad input: the local reader's messages and counts


BAD_ROWS = [
    '{"id": "a", "text": "one two three four", "ts": 1}',
    '{"id": "b", "text": null, "ts": 2}',
    '{"id": "c", "text": "five six seven", "ts": 3}',
    '{"id": "a", "text": "a repeated id", "ts": 4}',
    '{"id": "e", "text": "eight nine", "ts": "yesterday"}',
    '{"id": "f", "text": "ten eleven',
    "[1, 2]",
    "",
    '{"id": "g", "text": 12, "ts": 5}',
    '{"id": 7, "text": "an integer id", "ts": 6}',
    '{"text": "no id", "ts": 7}',
    '{"id": "b", "text": "b again, now valid", "ts": 8}',
    '{"id": "h", "text": "' + "é" * 20 + '", "ts": 9}',
]
# 40 bytes of UTF-8: over the limit the skip test sets, under the default.
LONGEST_GOOD_TEXT = 30


def raised_alike(spark, path) -> str:
    """The message of the InputError both readers raise on ``path`` (the same)."""
    with pytest.raises(InputError) as local:
        read_documents([str(path)], time_field="ts").read_all()
    with pytest.raises(InputError) as remote:
        read_documents_spark(spark, [str(path)], time_field="ts")
    assert str(remote.value) == str(local.value)
    return str(local.value)


def test_bad_rows_raise_the_local_readers_error(spark, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_ROWS) + "\n", encoding="utf-8")
    message = raised_alike(spark, path)
    assert "line 2" in message and "'text'" in message


def test_first_bad_row_raised_without_repeated_ids_is_the_local_readers(spark, tmp_path):
    # No ID repeats: the first bad row is the least position the counting query found.
    path = tmp_path / "bad.jsonl"
    good = [{"id": f"g{k}", "text": f"good text {k}", "ts": k} for k in range(40)]
    bad = [{"id": "late", "text": "x", "ts": "yesterday"}, {"id": "early", "text": None}]
    write_jsonl(path, good[:25] + bad[1:] + good[25:] + bad[:1])
    message = raised_alike(spark, path)
    assert "line 26" in message and "'text'" in message


def test_bad_rows_skipped_and_counted_as_the_local_reader_does(spark, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD_ROWS) + "\n", encoding="utf-8")
    reader = read_documents(
        [str(path)], time_field="ts", on_error="skip", max_doc_bytes=LONGEST_GOOD_TEXT
    )
    batch = reader.read_all()
    docs, stats, _ = read_documents_spark(
        spark, [str(path)], time_field="ts", on_error="skip", max_doc_bytes=LONGEST_GOOD_TEXT
    )
    got = docs.orderBy("pos").select("id", "ts").collect()
    spark_engine.unpersist(docs)
    assert [r.id for r in got] == batch.ids
    assert [r.ts for r in got] == batch.timestamps.tolist()
    assert Counter(stats.skipped_reasons) == Counter(reader.stats.skipped_reasons)
    assert stats.skipped_reasons["document too large"] == 1
    assert (stats.documents, stats.skipped, stats.bytes) == (
        reader.stats.documents,
        reader.stats.skipped,
        reader.stats.bytes,
    )


def test_duplicate_id_names_both_places(spark, tmp_path):
    path = tmp_path / "dup.jsonl"
    write_jsonl(
        path, [{"id": "x", "text": "a b c"}, {"id": "y", "text": "d e f"}, {"id": "x", "text": "g"}]
    )
    with pytest.raises(InputError) as local:
        read_documents([str(path)]).read_all()
    with pytest.raises(InputError) as remote:
        read_documents_spark(spark, [str(path)])
    assert str(remote.value) == str(local.value)
    assert "first seen at" in str(remote.value)


def test_repeated_ids_across_partitions_are_counted_and_skipped_as_locally(spark, tmp_path):
    # 30 IDs over 210 rows, split over several input files and shuffle partitions; a row
    # without text in two of them (a reason counted over files), none in the third.
    paths = []
    for part in range(3):
        path = tmp_path / f"ids{part}.jsonl"
        start = part * 70
        rows = [{"id": f"i{k % 30}", "text": f"t {k}"} for k in range(start, start + 70)]
        write_jsonl(path, rows + [{"id": f"n{part}", "text": None}] * (part < 2))
        paths.append(str(path))
    reader = read_documents(paths, on_error="skip")
    batch = reader.read_all()
    with sized_shuffles(spark, 3):
        docs, stats, _ = read_documents_spark(spark, paths, on_error="skip")
    got = docs.orderBy("pos").select("id").collect()
    spark_engine.unpersist(docs)
    assert [r.id for r in got] == batch.ids == [f"i{k}" for k in range(30)]
    assert Counter(stats.skipped_reasons) == Counter(reader.stats.skipped_reasons)
    assert stats.skipped_reasons["duplicate id"] == 210 - 30
    assert sum(stats.skipped_reasons.values()) == stats.skipped == 210 - 30 + 2
    assert stats.files == reader.stats.files == 3


# Values of typed columns (Parquet, DataFrames) that the rules refuse, one row each: the task
# reports each as the local reader does, with the first problem in its order (ID, text, time).
TYPED_BAD_ROWS = [
    (None, "x y", 1.0),
    ("", "x y", 1.0),
    ("a", None, 1.0),
    ("a", "x y", None),
    ("a", "x y", float("nan")),
    ("a", "x y", 1e300),  # seconds past the range of int64 microseconds
    ("a", "too long a text", 1e300),  # too large and a bad time: the text is checked first
]


@pytest.mark.parametrize("ident, text, ts", TYPED_BAD_ROWS)
def test_rows_task_reports_a_bad_row_as_the_local_reader(ident, text, ts):
    columns = {
        "id": pa.array([ident], pa.string()),
        "text": pa.array([text], pa.string()),
        "ts": pa.array([ts], pa.float64()),
    }
    with pytest.raises(InputError) as local:
        read_table(pa.table(columns), time_field="ts", max_doc_bytes=5).read_all()
    raw = pa.record_batch(
        {
            "_nd_pos": [0],
            "_nd_line": [1],
            "_nd_src": ["<table>"],
            "_v_id": columns["id"],
            "_v_text": columns["text"],
            "_v_time": columns["ts"],
        }
    )
    row = next(rows_task([raw], "typed", ("id", "text", "ts"), max_doc_bytes=5)).to_pylist()[0]
    assert (row["reason"], row["field"], row["detail"]) == (
        local.value.reason,
        local.value.field,
        local.value.detail,
    )


CHECKED_NAMES = [field.split()[0] for field in spark_rows.CHECKED_SCHEMA.split(", ")]


def raw_lines(values: list[str], src: str = "d.jsonl") -> pa.RecordBatch:
    """A batch of input lines as the reader hands them to its tasks: positions from 0, lines
    from 1."""
    n = len(values)
    return pa.record_batch(
        {
            "_nd_pos": list(range(n)),
            "_nd_line": list(range(1, n + 1)),
            "_nd_src": [src] * n,
            "value": values,
        }
    )


@pytest.mark.parametrize(
    "lines, at_once",
    [
        ([{"id": "a", "text": "x y", "ts": 5}, {"id": "b", "text": "é\u2028z", "ts": 7}], True),
        ([{"id": 1, "text": "tab\tin", "ts": "2024-01-02T03:04:05Z"}, {"id": 2, "ts": 3}], False),
        (
            [
                {"id": 1, "text": "tab\tin", "ts": "2024-01-02T03:04:05Z"},
                {"id": 22, "text": "", "ts": "2024-01-02"},
            ],
            True,
        ),
        ([{"id": "a", "text": "x", "ts": 1}, {"id": "a", "text": "far too long", "ts": 2}], False),
        ([{"id": "a", "text": "x", "ts": 1.5}, {"text": "no id"}], False),
    ],
)
def test_rows_task_reads_a_plain_jsonl_batch_as_line_by_line(lines, at_once):
    # Good lines are parsed at once; a blank line sends the same lines one by one.
    values = [json.dumps(line, ensure_ascii=bool(i % 2)) for i, line in enumerate(lines)]
    batch = raw_lines
    names = ("id", "text", "ts")
    assert (_plain_jsonl(batch(values), names, 8) is not None) == at_once
    fast = next(rows_task([batch(values)], "jsonl", names, max_doc_bytes=8)).to_pylist()
    one_by_one = next(rows_task([batch([*values, ""])], "jsonl", names, max_doc_bytes=8))
    assert fast == one_by_one.to_pylist()


@hypothesis_settings(max_examples=25, deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            st.builds(
                lambda i, text: json.dumps({"id": f"d{i}", "text": text}),
                st.integers(0, 9),
                st.text(st.sampled_from("ab cé한\u00a0.가 ")),
            ),
            st.sampled_from(['{"id": "x"}', '{"id": 1, "text": 2}', "not json", "", "  "]),
        ),
        min_size=1,
        max_size=8,
    ),
    method=st.sampled_from(["minhash", "simhash"]),
    bounds=st.booleans(),
)
def test_signed_rows_task_is_rows_task_and_sign_task_on_the_good_rows(lines, method, bounds):
    # Bad rows (a missing field, a wrong type, a broken line) and blank lines among the good
    # ones, or none: the checked rows as rows_task gives them, each good one signed as
    # sign_task signs its text, each bad one with null signature columns.
    raw = raw_lines(lines)
    settings = Settings(method=method)
    bounds = bounds and settings.lcs_bounded
    options = {"kind": "jsonl", "names": ("id", "text", None), "max_doc_bytes": None}
    checked = [row for b in rows_task([raw], **options) for row in b.to_pylist()]
    got = [
        row
        for b in spark_rows.signed_rows_task([raw], settings, bounds, **options)
        for row in b.to_pylist()
    ]
    assert [{k: row[k] for k in CHECKED_NAMES} for row in got] == checked
    good = [row for row in checked if row["reason"] is None]
    texts = pa.record_batch(
        {
            "pos": pa.array([row["pos"] for row in good], pa.int64()),
            "ts": pa.array([row["ts"] for row in good], pa.int64()),
            "text": pa.array([row["text"] for row in good], pa.string()),
        }
    )
    want = [row for b in sign_task([texts], settings, bounds) for row in b.to_pylist()]
    names = signature_names(bounds)
    assert all(list(row) == [*CHECKED_NAMES, *names] for row in got)
    signed = [{k: row[k] for k in names} for row in got if row["reason"] is None]
    assert signed == [{k: row[k] for k in names} for row in want]
    assert all(row[k] is None for row in got if row["reason"] is not None for k in names)


@pytest.mark.parametrize(
    "lines, at_once",
    [
        (
            [
                "a\t00000000000000ff\t2024-01-02T03:04:05Z",
                "b\tFFFFFFFFFFFFFFFF\t",
                "c\t0123456789abcdef\t17",
            ],
            True,
        ),
        (["é\t00000000000000ff\t2024-01-02T03:04:05.123456Z", "z\t0000000000000001\t"], True),
        (["\ufeffa\t00000000000000ff\t1", "b\t00000000000000fe\t2"], False),  # a BOM
        (["id\tfingerprint\ttimestamp", "a\t00000000000000ff\t1"], False),  # a header
        (["a\\tb\t00000000000000ff\t1"], False),  # an escaped tab in the ID
        (["a\t00000000000000ff", "b\t00000000000000fe\t"], False),  # two fields
        (["a\t00000000000000fg\t1"], False),  # not hex
        (["a\t00000000000000ff\tsoon"], False),
        (["a\t00000000000000ff\t2024-01-02"], False),  # a date the rows read one by one
        (["a\t00000000000000ff\t1", ""], False),  # a blank line
        (["a\t00000000000000ff\t1", "\t00000000000000fe\t2"], False),  # an empty ID
        (["a\u0085b\t00000000000000ff\t1"], False),  # a C1 control character
        (["x" * 1025 + "\t00000000000000ff\t1"], False),  # too long an ID
    ],
)
@pytest.mark.parametrize("kind", ["fp_tsv", "fp_plain"])
def test_rows_task_reads_seed_rows_at_once_as_line_by_line(monkeypatch, lines, at_once, kind):
    # Seed rows the local bulk reader takes are parsed at once by its compiled pass; any
    # other batch is read line by line: the same checked rows either way.
    n, batch = len(lines), raw_lines(lines, "s.tsv")
    names = ("id", "fingerprint", "timestamp")
    assert (_seed_rows(batch) is not None) == at_once
    fast = [row for b in rows_task([batch], kind, names) for row in b.to_pylist()]
    monkeypatch.setattr(spark_rows, "_seed_rows", lambda batch: None)
    one_by_one = [row for b in rows_task([batch], kind, names) for row in b.to_pylist()]
    assert fast == one_by_one
    if at_once:
        assert [row["reason"] for row in fast] == [None] * n


def test_fingerprint_lines_read_by_ranges_as_by_spark_and_locally(spark, tmp_path):
    # A local .tsv file is read by byte ranges in the tasks; the same lines gzipped go through
    # Spark's text source. Both must give the local reader's rows, and the same positions.
    lines = ["\ufeffid\tfingerprint\ttimestamp"]  # a BOM, then a header line
    lines += [f"d{i}\t{i * 0x9E3779B97F4A7C15 % 2**64:016x}\t{1000 + i}" for i in range(300)]
    lines[40] = ""  # a blank line
    lines[41] = "d41\tnot-hex\t5"  # a bad row, skipped
    lines[42] += "\r"  # a CRLF line
    lines[43] = lines[43].rsplit("\t", 1)[0]  # no timestamp
    text = "\n".join(lines)  # no break after the last line
    plain, packed = tmp_path / "fps.tsv", tmp_path / "fps.tsv.gz"
    plain.write_text(text, encoding="utf-8")
    packed.write_bytes(gzip.compress(text.encode()))
    assert spark_read._plain_local_file(spark, str(plain))
    assert not spark_read._plain_local_file(spark, str(packed))
    local = read_fingerprints([plain], on_error="skip")
    got = {}
    for path in (plain, packed):
        rows, stats = spark_engine.read_fingerprints_spark(spark, [str(path)], on_error="skip")
        got[path.name] = rows.orderBy("pos").select("pos", "id", "fp", "ts").collect()
        spark_engine.unpersist(rows)
        assert stats.skipped_reasons == local.stats.skipped_reasons
        assert stats.documents == local.stats.documents
    assert got["fps.tsv"] == got["fps.tsv.gz"]
    rows = got["fps.tsv"]
    assert [r.id for r in rows] == local.ids.to_pylist()
    assert np.array([r.fp for r in rows], np.int64).view(np.uint64).tolist() == (
        local.fingerprints.tolist()
    )
    assert [r.ts for r in rows] == local.timestamps.tolist()


FINGERPRINT_BAD_LINES = [
    "[1, 2]",
    '[{"id": "a", "fingerprint": "00000000000000ff"},',  # a JSON array, not JSON Lines
    '{"id": "a", "fingerprint": "zz"}',
    '{"id": "a", "fingerprint": "00000000000000ff", "timestamp": "soon"}',
    '{"fingerprint": "00000000000000ff"}',
]


@pytest.mark.parametrize("line", FINGERPRINT_BAD_LINES)
def test_rows_task_reports_a_bad_fingerprint_line_as_the_local_reader(tmp_path, line):
    path = tmp_path / "fps.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as local:
        read_fingerprints([path])
    raw = pa.record_batch(
        {"_nd_pos": [0], "_nd_line": [1], "_nd_src": [str(path)], "value": [line]}
    )
    names = ("id", "fingerprint", "timestamp")
    row = next(rows_task([raw], "fp_jsonl", names)).to_pylist()[0]
    assert (row["reason"], row["field"], row["detail"]) == (
        local.value.reason,
        local.value.field,
        local.value.detail,
    )


def test_missing_column_and_missing_file(spark, tmp_path):
    path = tmp_path / "docs.csv"
    pd.DataFrame({"key": ["a"], "text": ["x y z"]}).to_csv(path, index=False)
    with pytest.raises(InputError) as local:
        read_documents([str(path)]).read_all()
    with pytest.raises(InputError) as remote:
        read_documents_spark(spark, [str(path)])
    assert str(remote.value) == str(local.value)
    with pytest.raises(FileNotFoundError):
        read_documents_spark(spark, [str(tmp_path / "nope.jsonl")])


def test_dataframe_null_text_is_reported(spark):
    df = spark.createDataFrame([("a", "x y z"), ("b", None)], "id string, text string")
    with pytest.raises(InputError, match="<DataFrame>, row 2: missing field 'text'"):
        dedup_dataframe(df.coalesce(1), Settings())


def test_globs_of_parquet_and_csv_in_a_parquet_directory_out(spark, tmp_path):
    # Spark reads a glob of Parquet parts and a CSV file; the local engine reads the same files
    # named one by one, in the order the glob gives them (sorted paths). GROUPS go to a Parquet
    # directory (a path without a file extension) and must hold the local rows.
    docs = make_docs(600, seed=3)
    frame = pd.DataFrame(
        {"id": [d[0] for d in docs], "text": [d[1] for d in docs], "ts": [d[2] for d in docs]}
    )
    parts = tmp_path / "parts"
    parts.mkdir()
    frame.iloc[:250].to_parquet(parts / "part-0.parquet", index=False)
    frame.iloc[250:400].to_parquet(parts / "part-1.parquet", index=False)
    frame.iloc[400:].to_csv(tmp_path / "rest.csv", index=False)
    local_out, spark_out = tmp_path / "local.tsv", tmp_path / "groups_dir"
    files = [parts / "part-0.parquet", parts / "part-1.parquet", tmp_path / "rest.csv"]
    assert (
        run(
            "dedup",
            *files,
            "-o",
            local_out,
            "--time-field",
            "ts",
            "--method",
            "simhash",
            "-k",
            "4",
            "-q",
        ).exit_code
        == 0
    )
    result = run(
        "dedup",
        parts / "*.parquet",
        tmp_path / "rest.csv",
        "-o",
        spark_out,
        "--time-field",
        "ts",
        "--method",
        "simhash",
        "-k",
        "4",
        "--engine",
        "spark",
        "-q",
    )
    assert result.exit_code == 0, result.output
    got = pd.read_parquet(spark_out)  # part files in name order hold the rows in input order
    expected = pd.read_csv(local_out, sep="\t", dtype=str, keep_default_na=False)
    assert got["id"].tolist() == expected["id"].tolist()
    assert got["duplicate_id"].tolist() == expected["duplicate_id"].tolist()
    assert got["group_size"].astype(str).tolist() == expected["group_size"].tolist()
    assert (got["group_size"] > 1).sum() > 20


# ------------------------------------------------------------------------------------------
# a standalone cluster: master and two workers in JVMs of their own (``spark_cluster``)


def cluster_command(cluster, args, submit=False):
    """The command line that runs ``neardup ARGS`` as a driver process of its own on
    ``cluster``: with ``--spark-master``, or through pyspark's ``bin/spark-submit`` with the
    :mod:`neardup.cli.spark_submit` application (the README's command)."""
    if submit:
        return [
            str(cluster.spark_home / "bin" / "spark-submit"),
            "--master",
            cluster.url,
            spark_submit.__file__,
            *map(str, args),
        ]
    return [
        sys.executable,
        "-m",
        "neardup",
        *map(str, args),
        "--engine",
        "spark",
        "--spark-master",
        cluster.url,
    ]


@pytest.fixture(scope="module")
def cluster_corpus(tmp_path_factory):
    """400 documents as JSON Lines (in two files) and their fingerprint rows, and 64 documents of
    edit chains (``chains.jsonl``) on which MinHash's repair round links documents."""
    folder = tmp_path_factory.mktemp("cluster-corpus")
    docs = make_docs(400, seed=13, templates=15, variants=15)
    rows = [{"id": d[0], "text": d[1], "ts": d[2]} for d in docs]
    write_jsonl(folder / "a.jsonl", rows[:200])
    write_jsonl(folder / "b.jsonl", rows[200:])
    write_jsonl(folder / "chains.jsonl", [{**d, "ts": 0} for d in chain_corpus(bases=8)])
    done = run(
        "fingerprint", folder / "a.jsonl", folder / "b.jsonl", "-o", folder / "fps.tsv",
        "--time-field", "ts", "--method", "simhash", "--workers", "1",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return folder


def _cluster_jobs(corpus):
    """The runs on the cluster, by name: (``neardup`` arguments, writing into ``{out}``;
    through spark-submit?). ``dedup`` with both methods (MinHash over the edit chains too,
    where the repair round links documents) and ``pairs``; the README's spark-submit path
    carries the SimHash run."""
    inputs = [corpus / "a.jsonl", corpus / "b.jsonl"]
    dedup = ["dedup", "-o", "{out}/groups.tsv", "--pairs-out", "{out}/pairs.tsv"]
    dedup += ["--summary-out", "{out}/summary.json", "--time-field", "ts"]
    pairs = ["pairs", corpus / "fps.tsv", "-k", "4", "-o", "{out}/pairs.tsv"]
    return {
        "minhash": ([*dedup, *inputs, corpus / "chains.jsonl", "--method", "minhash"], False),
        "simhash-spark-submit": (
            [*dedup, *inputs, "--method", "simhash", "-k", "4", "--grouping", "center"],
            True,
        ),
        "pairs": ([*pairs, "--groups-out", "{out}/groups.tsv"], False),
    }


@pytest.fixture(scope="module")
def cluster_runs(spark_cluster, cluster_corpus, tmp_path_factory):
    """Every run of :func:`_cluster_jobs` on the cluster and on the local engine, by name:
    ``{"local": folder, "spark": folder, "stderr": the driver's stderr}``.

    The drivers run at once (the cluster gives each application one executor on each worker),
    so their JVMs' start and Spark's fixed costs overlap instead of adding up; the local runs
    go meanwhile in this process."""
    runs, drivers = {}, {}
    for name, (args, submit) in _cluster_jobs(cluster_corpus).items():
        runs[name] = {e: tmp_path_factory.mktemp(f"{name}-{e}") for e in ("local", "spark")}
        out = runs[name]["spark"]
        with open(out / "stderr.txt", "w") as stderr:
            # A group of its own: a driver stopped early is stopped with its JVM, which
            # would otherwise outlive it, waiting for a cluster that is gone.
            drivers[name] = subprocess.Popen(
                cluster_command(spark_cluster, [str(a).format(out=out) for a in args], submit),
                env=spark_cluster.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
    try:
        for name, (args, _) in _cluster_jobs(cluster_corpus).items():
            done = run(*[str(a).format(out=runs[name]["local"]) for a in args], "-q")
            assert done.exit_code == 0, done.output
        deadline = time.monotonic() + 600
        for driver in drivers.values():
            driver.wait(max(1.0, deadline - time.monotonic()))
    finally:
        for driver in drivers.values():
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
    for name, driver in drivers.items():
        runs[name]["stderr"] = (runs[name]["spark"] / "stderr.txt").read_text()
        assert driver.returncode == 0, (
            f"{name}:\n" + runs[name]["stderr"][-3000:] + "\n" + spark_cluster.log_tails()
        )
    return runs


def _outputs(folder):
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.suffix == ".tsv"}


def _repair_counts(folder):
    counts = json.loads((folder / "summary.json").read_text())["counts"]
    return {k: v for k, v in counts.items() if "star_components" in k or "cap" in k}


@pytest.mark.parametrize("name", ["minhash", "simhash-spark-submit"])
def test_cluster_dedup_same_files_as_local(cluster_runs, cluster_corpus, name):
    local, spark = cluster_runs[name]["local"], cluster_runs[name]["spark"]
    assert _outputs(spark) == _outputs(local)
    assert _repair_counts(spark) == _repair_counts(local)
    inputs = ["a.jsonl", "b.jsonl"] + (["chains.jsonl"] if name == "minhash" else [])
    lines = 1 + sum((cluster_corpus / f).read_bytes().count(b"\n") for f in inputs)
    assert (local / "groups.tsv").read_bytes().count(b"\n") == lines
    assert (local / "pairs.tsv").read_bytes().count(b"\n") > 50
    if name == "minhash":
        assert _repair_counts(local)["links_found_across_star_components"] > 0


def test_cluster_pairs_same_files_as_local(cluster_runs):
    local, spark = cluster_runs["pairs"]["local"], cluster_runs["pairs"]["spark"]
    assert _outputs(spark) == _outputs(local)
    assert (local / "pairs.tsv").read_bytes().count(b"\n") > 50


def test_cluster_cli_stderr_has_no_log_noise(cluster_runs):
    # The drivers neardup starts itself (a new JVM, as a user gets it): before, stderr held
    # Spark's banner, a NativeCodeLoader warning and WindowExec warnings from the window over
    # the input splits.
    for name in ("minhash", "pairs"):
        stderr = cluster_runs[name]["stderr"]
        assert "pairs written" in stderr, name  # the summary is still there
        for noise in (
            "WindowExec",
            "NativeCodeLoader",
            "log4j profile",
            "Setting default log level",
            "locally checkpointed",
        ):
            assert noise not in stderr, (name, noise)


# The Spark jobs of a run of 300 documents per stage (adaptive execution off, as a run on
# files plans it): each job and the planning before it cost 0.2 to 0.8 s, so a count, a sum
# or a check that takes a job of its own where a query the stage runs anyway could answer it
# shows here.
JOBS_AT_MOST = {
    "read": 2,  # the rows, and their summary (a local master's driver counts the lines)
    "signatures": 2,  # the signatures, and the IDs stored apart from the texts
    "exact_duplicates": 3,
    "candidates": 4,
    "verify": 13,
    "groups": 3,
    "pairs": 4,
    "write": 2,
}

# On the driver (groups_local_max): the groups collect the documents' rows, the accepted
# pairs and the repair round's (and relate those across components: two jobs), the pairs the
# values measured and the IDs (and relate the others), and the local writers write with no job.
JOBS_AT_MOST_ON_THE_DRIVER = JOBS_AT_MOST | {"groups": 5, "pairs": 3, "write": 0}


@pytest.mark.parametrize("on_the_driver", [True, False], ids=["driver", "spark"])
def test_dedup_on_spark_takes_few_jobs_per_stage(spark, tmp_path, on_the_driver):
    docs = make_docs(300, seed=5, templates=20, variants=4)
    path = write_jsonl(tmp_path / "docs.jsonl", [{"id": d[0], "text": d[1]} for d in docs])
    tracker = spark.sparkContext.statusTracker()
    most = JOBS_AT_MOST_ON_THE_DRIVER if on_the_driver else JOBS_AT_MOST

    def jobs():
        return {stage: set(tracker.getJobIdsForGroup(f"neardup:{stage}")) for stage in most}

    before = jobs()
    outputs = Outputs(groups=str(tmp_path / "groups.tsv"), pairs=str(tmp_path / "pairs.tsv"))
    engine = SparkEngine(spark, partitions=2, groups_local_max=len(docs) if on_the_driver else 0)
    engine.dedup(Corpus((str(path),), {}), Settings(), outputs)
    taken = {stage: len(ids - before[stage]) for stage, ids in jobs().items()}
    assert all(taken[stage] >= min(most[stage], 1) for stage in most), taken
    assert all(taken[stage] <= most[stage] for stage in most), taken


@pytest.mark.spark
def test_a_read_without_records_leaves_sparks_text_source_out_of_ranged_files(
    spark, tmp_path, monkeypatch
):
    rows = [{"id": d[0], "text": d[1], "ts": d[2]} for d in make_docs(60, seed=3)]
    ranged = write_jsonl(tmp_path / "a.jsonl", rows[:40])
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(write_jsonl(tmp_path / "b.jsonl", rows[40:]).read_bytes()))
    inputs, options = [str(ranged), str(packed)], {"time_field": "ts", "sign": Settings()}
    docs, stats, records = read_documents_spark(spark, inputs, **options)
    expected = docs.orderBy("pos").collect()
    assert records.count() == 60
    spark_engine.unpersist(docs)
    sourced = []
    real = spark_read._read_raw
    monkeypatch.setattr(
        spark_read, "_read_raw", lambda *args: sourced.append(args[1]) or real(*args)
    )
    docs, stats_without, records = read_documents_spark(spark, inputs, records=False, **options)
    assert records is None and sourced == [str(packed)]  # the ranged file: its tasks' alone
    assert docs.orderBy("pos").collect() == expected and stats_without == stats
    spark_engine.unpersist(docs)
