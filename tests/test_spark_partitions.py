"""Shuffle partitions sized from the input (``neardup.engines.spark.partitions``)."""

import numpy as np
import pytest
from test_spark import make_docs, run, write_jsonl

from neardup.engines.spark import job
from neardup.engines.spark import partitions as spark_partitions
from neardup.engines.spark.partitions import (
    BYTES_PER_PARTITION,
    DOCUMENTS_PER_PARTITION,
    SHUFFLE_PARTITIONS,
    _murmur3_int,
    input_bytes,
    partition_keys,
    partitions_for,
    shuffle_partitions_chosen,
    sized_shuffles,
)
from neardup.engines.spark.session import F


@pytest.mark.parametrize("cores", [1, 2, 8, 100])
def test_partitions_grow_with_the_input_and_stay_two_per_core_for_mid_sizes(cores):
    sizes = [0, 1, 10**5, 10**6, 10**7, 10**8, 10**9, 10**10, 10**11]
    counts = [partitions_for(size, cores) for size in sizes]
    assert counts == sorted(counts) and counts[0] == 1
    for size, count in zip(sizes, counts):
        assert count >= -(-size // BYTES_PER_PARTITION)  # never more than 512 MB a partition
        assert count <= max(1, size // (1 << 20), -(-size // BYTES_PER_PARTITION))
        if (1 << 20) * 2 * cores <= size <= BYTES_PER_PARTITION * 2 * cores:
            assert count == 2 * cores


@pytest.mark.parametrize("cores", [1, 2, 100])
def test_counted_documents_raise_the_partitions_to_one_per_documents_per_partition(cores):
    size = 10**9
    documents = [0, 1, DOCUMENTS_PER_PARTITION, DOCUMENTS_PER_PARTITION + 1, 10**7, 10**9]
    counts = [partitions_for(size, cores, n) for n in documents]
    assert counts == sorted(counts) and counts[0] == partitions_for(size, cores)
    for n, count in zip(documents, counts):
        assert count == max(partitions_for(size, cores), -(-n // DOCUMENTS_PER_PARTITION))


def test_partitions_for_refuses_a_negative_size_or_no_cores():
    with pytest.raises(ValueError, match="-1"):
        partitions_for(-1, 2)
    with pytest.raises(ValueError, match="cores >= 1"):
        partitions_for(10, 0)
    with pytest.raises(ValueError, match="documents >= 0, got 10, 2 and -5"):
        partitions_for(10, 2, -5)


@pytest.mark.spark
def test_input_bytes_of_files_directories_and_globs(spark, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_bytes(b"x" * 1000)
    (tmp_path / "d" / "b.jsonl").write_bytes(b"x" * 300)
    (tmp_path / "c.txt").write_bytes(b"x" * 7)
    assert input_bytes(spark, [str(tmp_path / "d" / "a.jsonl")]) == 1000
    assert input_bytes(spark, [str(tmp_path / "d"), str(tmp_path / "c.txt")]) == 1307
    assert input_bytes(spark, [f"file://{tmp_path}/d/*.jsonl"]) == 1300
    assert input_bytes(spark, [str(tmp_path / "missing.jsonl")]) == 0


@pytest.mark.spark
def test_sized_shuffles_set_the_session_and_restore_it(spark):
    assert shuffle_partitions_chosen(spark)  # the test session sets 2 at launch
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    with sized_shuffles(spark, 5):
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "5"
        counts = spark.range(100).groupBy((F.col("id") % 7).alias("k")).count()
        assert counts.rdd.getNumPartitions() == 5  # adaptive execution is off in the tests
    assert spark.conf.get(SHUFFLE_PARTITIONS) == before


@pytest.mark.spark
def test_a_run_on_files_sizes_its_shuffles_from_them_with_the_same_files(
    spark, tmp_path, monkeypatch
):
    # As if nobody had set spark.sql.shuffle.partitions (the test session sets it at launch).
    # 0.1 MB of input takes 1 partition by its bytes, and 300 documents 3 at 100 documents a
    # partition once counted: the stages after the read use those.
    monkeypatch.setattr(job, "shuffle_partitions_chosen", lambda session: False)
    monkeypatch.setattr(spark_partitions, "DOCUMENTS_PER_PARTITION", 100)
    read = job.read_documents_spark

    def reading(*args, **options):
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "1"  # by the bytes, while reading
        return read(*args, **options)

    monkeypatch.setattr(job, "read_documents_spark", reading)
    docs = make_docs(300, seed=3)
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": i, "text": t} for i, t, _ in docs])
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    files = {}
    for engine in ("local", "spark"):
        groups, pairs = tmp_path / f"groups_{engine}.tsv", tmp_path / f"pairs_{engine}.tsv"
        done = run("dedup", source, "-o", groups, "--pairs-out", pairs, "--engine", engine)
        assert done.exit_code == 0, done.output
        files[engine] = (groups.read_bytes(), pairs.read_bytes())
        if engine == "spark":
            shown = [line.split() for line in done.output.splitlines()]
            assert ["shuffle", "partitions", "3"] in shown
    assert files["spark"] == files["local"]
    assert files["local"][1].count(b"\n") > 20
    assert spark.conf.get(SHUFFLE_PARTITIONS) == before


@pytest.mark.parametrize("partitions", [1, 2, 7, 200, 3001])
def test_partition_keys_are_distinct_and_the_smallest_for_their_partition(partitions):
    keys = partition_keys(partitions).astype(np.int64)
    assert keys.shape == (partitions,) and np.unique(keys).shape == (partitions,)
    # Brute force over every key up to the largest chosen: each chosen key is the first
    # whose Spark place (Murmur3 of the int, seed 42, pmod) is its partition.
    upto = np.arange(keys.max() + 1)
    place = _murmur3_int(upto, 42).astype(np.int64) % partitions
    assert (place[keys] == np.arange(partitions)).all()
    for p in range(min(partitions, 50)):
        assert keys[p] == np.flatnonzero(place == p)[0]


def test_partition_keys_refuse_no_partitions():
    with pytest.raises(ValueError, match="partitions must be >= 1, got 0"):
        partition_keys(0)


@pytest.mark.spark
def test_partition_keys_route_rows_to_their_partition_and_hash_as_spark_does(spark):
    ints = np.concatenate([np.arange(-300, 300), [2**31 - 1, -(2**31), 123_456_789]])
    rows = spark.createDataFrame([(int(k),) for k in ints], "k int")
    got = {r.k: r.h for r in rows.select("k", F.hash("k").alias("h")).collect()}
    assert [got[int(k)] for k in ints] == _murmur3_int(ints, 42).tolist()
    partitions = 7
    keys = partition_keys(partitions)
    table = spark.createDataFrame([(int(k),) for k in keys for _ in range(3)], "dest int")
    placed = table.repartition(partitions, "dest").select("dest", F.spark_partition_id().alias("p"))
    assert sorted({(r.dest, r.p) for r in placed.collect()}) == sorted(
        (int(k), p) for p, k in enumerate(keys)
    )
