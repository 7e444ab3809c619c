"""The SimHash table stage on Spark (``neardup.engines.spark.tables``): its map and reduce
tasks run here without a Spark session, the shuffle played by routing each run to its
partition, and the pairs compared with every pair's distance counted bit by bit."""

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from neardup.candidates.plan import plan_tables  # noqa: E402
from neardup.engines.spark import runs  # noqa: E402
from neardup.engines.spark.tables import (  # noqa: E402
    TABLE_ROW,
    first_blocks,
    table_pairs_task,
    table_runs_task,
)


def _brute_pairs(fp: list[int], node: list[int], hamming_k: int) -> set[tuple[int, int, int]]:
    """Every pair of distinct fingerprints within ``hamming_k`` bits, by Python's bit count of
    each pair's XOR: no tables, no prefixes."""
    found = set()
    for i in range(len(fp)):
        for j in range(i + 1, len(fp)):
            dist = (fp[i] ^ fp[j]).bit_count()
            if dist <= hamming_k:
                a, b = sorted((node[i], node[j]))
                found.add((a, b, dist))
    return found


def _shuffled(out: list[pa.RecordBatch], keys: np.ndarray, seed: int) -> list[list[pa.RecordBatch]]:
    """The runs of ``out`` as Spark's shuffle hands them over: each partition gets the runs
    bound for it, from every map batch, in an order of its own."""
    rng = np.random.default_rng(seed)
    place = {int(key): p for p, key in enumerate(keys)}
    parts: list[list[pa.RecordBatch]] = [[] for _ in keys]
    for batch in out:
        for i, dest in enumerate(batch["dest"].to_pylist()):
            parts[place[dest]].append(batch.slice(i, 1))
    for runs_of_part in parts:
        rng.shuffle(runs_of_part)
    return parts


def _fingerprints(kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "random":
        base = rng.integers(0, 2**63, 300, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    elif kind == "hot prefix":
        # Half of them share the top 40 bits: one prefix key of every table over those bits
        # holds 150 fingerprints, as a template's near-copies do.
        top = np.uint64(rng.integers(0, 2**40)) << np.uint64(24)
        base = np.concatenate(
            [
                top | rng.integers(0, 2**24, 150, dtype=np.int64).astype(np.uint64),
                rng.integers(0, 2**63, 150, dtype=np.int64).astype(np.uint64),
            ]
        )
    else:  # "one cluster": every fingerprint within a few bits of one, most pairs within k
        centre = np.uint64(rng.integers(0, 2**63))
        flips = [
            sum(1 << int(b) for b in rng.choice(64, rng.integers(0, 4), replace=False))
            for _ in range(120)
        ]
        base = centre ^ np.array(flips, dtype=np.uint64)
    # Near copies at 1 to 4 bits of some of them, so that every distance up to k and past it
    # is present.
    near = [
        int(v) ^ sum(1 << int(b) for b in rng.choice(64, d, replace=False))
        for v, d in zip(rng.choice(base, 80), rng.integers(1, 5, 80))
    ]
    return np.unique(np.concatenate([base, np.array(near, dtype=np.uint64)]))


@pytest.mark.parametrize("kind", ["random", "hot prefix", "one cluster"])
@pytest.mark.parametrize("hamming_k", [0, 1, 3, 5])
@pytest.mark.parametrize("partitions", [1, 4, 11])
@pytest.mark.parametrize("planned_for", [None, 10_000_000])
def test_table_stage_finds_every_pair_within_k_once(
    monkeypatch, kind, hamming_k, partitions, planned_for
):
    # planned_for: the plan of a run of that many fingerprints (groups of several tables, each
    # of two blocks), else of these few.
    monkeypatch.setattr(runs, "RUN_ROWS", 7)  # many runs, split across batches and partitions
    rng = np.random.default_rng([hamming_k, partitions, len(kind)])
    fp = _fingerprints(kind, rng)
    rng.shuffle(fp)
    node = rng.permutation(10 * fp.shape[0])[: fp.shape[0]].astype(np.int64)
    plan = plan_tables(planned_for or fp.shape[0], hamming_k)
    keys = np.arange(50, 50 + partitions, dtype=np.int32)
    cuts = [0, 40, 40, 200, fp.shape[0]]  # an empty batch among them
    batches = [
        pa.record_batch({"fp": fp[a:b].view(np.int64), "node": node[a:b]})
        for a, b in zip(cuts[:-1], cuts[1:])
    ]
    out = list(table_runs_task(batches, plan, keys))
    rows = np.concatenate([runs.run_rows(b, TABLE_ROW) for b in out])
    # Each fingerprint once per group of tables (their first block), and each (group, value
    # of that block) in one partition only.
    groups = first_blocks(plan)
    assert rows.shape[0] == fp.shape[0] * groups.shape[0]
    assert set(np.unique(rows["t"]).tolist()) == set(groups.tolist())
    found = []
    partition_of: dict[tuple[int, int], int] = {}
    for p, part in enumerate(_shuffled(out, keys, seed=partitions)):
        for row in (r for b in part for r in runs.run_rows(b, TABLE_ROW)):
            start, width = plan.blocks[row["t"]]
            key = (int(row["t"]), (int(row["fp"]) >> start) & ((1 << width) - 1))
            assert partition_of.setdefault(key, p) == p
        found += [
            (min(r["a"], r["b"]), max(r["a"], r["b"]), r["dist"])
            for batch in table_pairs_task(part, plan, hamming_k)
            for r in batch.to_pylist()
        ]
    expected = _brute_pairs(fp.tolist(), node.tolist(), hamming_k)
    assert len(found) == len(set(found))  # each pair once, whatever table shares it
    assert set(found) == expected
    if kind != "random" and hamming_k >= 3:
        assert len(expected) > 50  # the adversarial sets do hold many pairs


def test_table_pairs_task_of_an_empty_partition_yields_nothing():
    plan = plan_tables(10, 3)
    assert list(table_pairs_task([], plan, 3)) == []
    empty = pa.record_batch({"dest": pa.array([], pa.int32()), "rows": pa.array([], pa.binary())})
    assert list(table_pairs_task([empty], plan, 3)) == []
