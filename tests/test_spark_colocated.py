"""Verification where pairs meet their documents' data (``neardup.engines.spark.colocated``):
the tasks composed as Spark runs them, against the relation over joined rows; and a run past
the broadcast, whose units are joined instead, against the local engine."""

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

import neardup.engines.spark.verify as spark_verify  # noqa: E402
from neardup.engines.spark.colocated import (  # noqa: E402
    colocated_relate_task,
    copies_task,
    pair_places_task,
    placed_pairs_task,
    wanted_by_place,
)
from neardup.engines.spark.tasks import _csr_binary, relate_task  # noqa: E402
from neardup.settings import Settings  # noqa: E402
from neardup.text.units import lcs_units  # noqa: E402
from neardup.verify import LCS_UNIT  # noqa: E402


def _units_rows(texts, positions):
    offsets, codes = lcs_units(texts, LCS_UNIT)
    return pa.record_batch({"pos": positions, "sset": _csr_binary(offsets, codes)})


@pytest.mark.parametrize("partitions", [1, 2, 5])
def test_pairs_meet_their_ends_data_and_are_related_as_over_joined_rows(partitions):
    rng = np.random.default_rng(partitions)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    base = [" ".join(rng.choice(words, 30)) for _ in range(8)]
    # Each base and edits of it: pairs that pass and pairs that fail.
    texts = [b if k == 0 else b.replace(words[k], "x" * k, 2) for b in base for k in range(4)]
    positions = np.arange(100, 100 + len(texts))  # positions are not row numbers
    data = _units_rows(texts, positions)
    a = rng.integers(0, len(texts), 120)
    b = rng.integers(0, len(texts), 120)
    hot = np.full(40, 3)  # a document in many pairs: its pairs spread over the partitions
    a, b = np.concatenate([a, hot]), np.concatenate([b, rng.integers(0, len(texts), 40)])
    pairs = pa.record_batch({"a": positions[a], "b": positions[b], "tag": np.arange(a.shape[0])})
    pairs = pairs.append_column("missing", pa.array(np.zeros(a.shape[0], bool)))
    # A pair with an end nobody has data for is dropped, as a join drops it.
    lost = pa.record_batch({"a": [positions[0]], "b": [999], "tag": [-1], "missing": [True]})
    settings = Settings()  # MinHash, LCS 0.8: decided by units alone
    keys = np.arange(50, 50 + partitions, dtype=np.int32)

    places = pa.Table.from_batches(list(pair_places_task([pairs, lost], partitions)))
    wanted = SimpleNamespace(value=wanted_by_place(places, partitions))
    copies = pa.Table.from_batches(
        list(copies_task([data.slice(0, 13), data.slice(13)], wanted, keys))
    )
    placed = pa.Table.from_batches(list(placed_pairs_task([pairs, lost], keys)))
    # Each document is copied once to each partition holding one of its pairs.
    for key in keys:
        mine = placed.filter(pc.equal(placed["dest"], key))
        ends = set(mine["a"].to_pylist()) | set(mine["b"].to_pylist())
        copied = copies.filter(pc.equal(copies["dest"], key))["pos"].to_pylist()
        assert sorted(copied) == sorted(ends - {999})
    # The pairs of the document in many pairs spread over every partition.
    hot_pairs = placed.filter(pc.equal(placed["a"], positions[3]))
    assert set(hot_pairs["dest"].to_pylist()) == set(keys.tolist())

    got, decided = {}, {}
    for key in keys:
        for exact, found in ((True, got), (False, decided)):
            out = colocated_relate_task(
                placed.filter(pc.equal(placed["dest"], key)),
                copies.filter(pc.equal(copies["dest"], key)),
                settings,
                ["tag", "a", "b"],
                exact=exact,
            )
            assert out.schema.names == ["tag", "a", "b", "ok", "value"]
            for row in out.to_pylist():
                found[row["tag"]] = (row["ok"], row["value"])
    sets = _csr_binary(*lcs_units(texts, LCS_UNIT))
    joined = pa.record_batch(
        {"tag": pairs["tag"], "set_a": sets.take(pa.array(a)), "set_b": sets.take(pa.array(b))}
    )
    expected = next(relate_task([joined], settings, ["tag"])).to_pylist()
    assert got == {row["tag"]: (row["ok"], row["value"]) for row in expected}
    assert 0 < sum(ok for ok, _ in got.values()) < len(got)
    # Values for a reader of the accepted pairs alone: the same decisions and accepted values;
    # a rejected pair's value is only below the threshold (not measured exactly).
    fast = next(relate_task([joined], settings, ["tag"], exact=False)).to_pylist()
    assert decided == {row["tag"]: (row["ok"], row["value"]) for row in fast}
    assert decided.keys() == got.keys()
    for tag, (ok, value) in got.items():
        assert decided[tag][0] == ok
        assert decided[tag][1] == value if ok else decided[tag][1] < settings.verify
    assert any(decided[t][1] != value for t, (ok, value) in got.items() if not ok)


def test_a_partition_without_pairs_or_data_yields_an_empty_table_of_the_schema():
    empty_pairs = pa.table({"dest": pa.array([], pa.int32()), "a": pa.array([], pa.int64()),
                            "b": pa.array([], pa.int64())})  # fmt: skip
    empty_data = pa.table({"dest": pa.array([], pa.int32()), "pos": pa.array([], pa.int64()),
                           "sset": pa.array([], pa.binary())})  # fmt: skip
    out = colocated_relate_task(empty_pairs, empty_data, Settings(), ["a", "b"])
    assert out.num_rows == 0 and out.schema.names == ["a", "b", "ok", "value"]
    data = _units_rows(["a b c", "a b d"], np.array([1, 2]))
    lone = pa.table({"dest": pa.array([0], pa.int32()), "pos": [1], "sset": data["sset"][:1]})
    assert colocated_relate_task(empty_pairs, lone, Settings(), ["a", "b"]).num_rows == 0
    # No pairs at all (every candidate bounded out): no document is copied anywhere.
    places = pa.table({"pos": pa.array([], pa.int64()), "place": pa.array([], pa.int32())})
    wanted = SimpleNamespace(value=wanted_by_place(places, 3))
    assert list(copies_task([data], wanted, np.array([1, 2, 3]))) == []


@pytest.mark.spark
def test_units_joined_past_the_broadcast_give_the_local_engines_files(spark, tmp_path, monkeypatch):
    # Past BROADCAST_POSITIONS the pairs' ends cannot be broadcast: the units are joined to
    # the pairs, one end after the other (and the texts to shingle are joined too).
    from test_spark_repair import repair_run_as_local

    monkeypatch.setattr(spark_verify, "BROADCAST_POSITIONS", 0)
    repair_run_as_local(spark, tmp_path, Settings(pairs="all"))
