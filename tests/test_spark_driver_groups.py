"""Groups and PAIRS made on the driver: the positions' order and the pairs' lookup against
plain Python, and runs of the Spark engine that group on the driver against runs that group in
Spark and against the local engine, byte for byte."""

import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from synth_helpers import chain_corpus

import neardup.engines.spark.job as spark_job
from neardup.engines import Corpus, Outputs
from neardup.engines.local import LocalEngine
from neardup.engines.spark.driver_groups import Positions, pair_lookup
from neardup.engines.spark.job import collects_groups
from neardup.settings import Settings


@hypothesis_settings(deadline=None)  # the first example loads the compiled sort
@given(st.lists(st.integers(0, 2**62), unique=True, max_size=60), st.randoms())
def test_positions_order_and_index_as_sorting(values, rng):
    rng.shuffle(values)
    pos = np.array(values, dtype=np.int64)
    where = Positions(pos)
    ordered = sorted(values)
    assert where.sorted.tolist() == ordered
    assert where.in_order(pos).tolist() == ordered
    assert where.index(pos).tolist() == [ordered.index(v) for v in values]


def test_positions_refuse_a_position_that_is_no_documents():
    where = Positions(np.array([5, 1, 9]))
    with pytest.raises(ValueError, match="not among its documents"):
        where.index(np.array([1, 6]))
    with pytest.raises(ValueError, match="not among its documents"):
        where.index(np.array([10]))


@hypothesis_settings(deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
        )
    )
)
def test_pair_lookup_finds_the_unordered_pair_as_a_dictionary(case):
    n, queries, known = case
    index = {}
    for i, (a, b) in enumerate(known):
        index.setdefault(frozenset((a, b)), i)
    known = [known[i] for i in sorted(index.values())]  # distinct unordered pairs
    index = {frozenset(p): i for i, p in enumerate(known)}
    a, b = (np.array([q[k] for q in queries], dtype=np.int64) for k in (0, 1))
    known_a, known_b = (np.array([p[k] for p in known], dtype=np.int64) for k in (0, 1))
    found = pair_lookup(n, a, b, known_a, known_b)
    assert found.tolist() == [index.get(frozenset(q), -1) for q in queries]


@pytest.mark.parametrize(
    "settings, outputs, expected",
    [
        (Settings(), Outputs(groups="g.tsv", pairs="p.parquet"), True),
        (Settings(), Outputs(groups="g.tsv", keep="kept.jsonl"), False),
        (Settings(), Outputs(groups="out/groups"), False),
        (Settings(pairs="all"), Outputs(groups="g.tsv"), False),
    ],
)
def test_collects_groups_only_for_files_the_local_writers_write(settings, outputs, expected):
    assert collects_groups(settings, outputs) is expected


WORDS = [f"w{k}" for k in range(400)]


def _docs(n: int, seed: int, timed: bool) -> list[dict]:
    """Originals, exact copies, two-word edits of recent documents (chains of edits, so groups
    joined through members that are not the original's near-duplicates), empty documents, and
    documents whose times run against the input order."""
    rng = random.Random(seed)
    docs: list[dict] = []
    for i in range(n):
        kind = rng.random()
        if docs and kind < 0.15:
            text = rng.choice(docs)["text"]
        elif docs and kind < 0.5:
            words = docs[rng.randrange(max(0, len(docs) - 20), len(docs))]["text"].split()
            for _ in range(2 if words else 0):
                words[rng.randrange(len(words))] = rng.choice(WORDS)
            text = " ".join(words)
        elif kind < 0.52:
            text = rng.choice(["", "  "])  # empty: copies of each other
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(16, 30)))
        docs.append({"id": f"d{i}", "text": text, "ts": rng.randint(0, 40) if timed else 0})
    return docs


def _three_runs(spark, tmp_path, corpus, settings, counters) -> dict:
    """GROUPS, PAIRS and the ``counters`` of ``dedup`` on the local engine, on Spark grouping
    on the driver (the default) and on Spark grouping in Spark, by name."""
    from neardup.engines.spark import SparkEngine

    runs = {}
    for name, engine in (
        ("local", LocalEngine(1)),
        ("driver", SparkEngine(spark)),
        ("spark", SparkEngine(spark, groups_local_max=0)),
    ):
        out = Outputs(groups=str(tmp_path / f"{name}.g.tsv"), pairs=str(tmp_path / f"{name}.p.tsv"))
        run = engine.dedup(corpus, settings, out)
        runs[name] = (
            open(out.groups, "rb").read(),
            open(out.pairs, "rb").read(),
            [run.stats[c] for c in counters],
        )
    return runs


@pytest.mark.spark
@pytest.mark.parametrize(
    "settings, timed",
    [
        (Settings(), True),
        (Settings(), False),
        (Settings(method="simhash", hamming_k=14), True),
        (Settings(grouping="center"), True),
        (Settings(verify=None), True),
    ],
    ids=["minhash", "minhash-untimed", "simhash", "center", "minhash-unverified"],
)
def test_groups_on_the_driver_write_what_spark_and_the_local_engine_write(
    spark, tmp_path, monkeypatch, settings, timed
):
    # Two inputs (positions carry the file's index in their high bits) with a bad row skipped
    # in the first (a gap in the positions).

    docs = _docs(400, seed=5, timed=timed)
    lines = [json.dumps(d) for d in docs]
    lines[7] = '{"id": "bad", "text": 5}'
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join(lines[:250]) + "\n", encoding="utf-8")
    second.write_text("\n".join(lines[250:]) + "\n", encoding="utf-8")
    corpus = Corpus((str(first), str(second)), {"time_field": "ts", "on_error": "skip"})
    collected = []
    grouped = spark_job.driver_groups

    def counted(*args, **kwargs):
        collected.append(True)
        return grouped(*args, **kwargs)

    monkeypatch.setattr(spark_job, "driver_groups", counted)
    counters = ("groups", "largest_group", "duplicates_removed", "pairs", "exact_duplicates")
    runs = _three_runs(spark, tmp_path, corpus, settings, counters)
    assert collected == [True]  # the default engine grouped on the driver, the other not
    assert runs["driver"] == runs["spark"] == runs["local"]
    groups, largest, removed, pairs, exact = runs["local"][2]
    assert groups + removed == 399 and pairs == removed and exact > 0 and largest > 2
    # Members reached through others: pairs that do not pass themselves (not under center).
    assert (runs["local"][1].count(b"\tfalse\n") > 0) is (settings.grouping != "center")


@pytest.mark.spark
def test_repair_round_on_the_driver_links_what_the_local_engine_links(spark, tmp_path):
    # Edit chains whose members share bands with others they are not near-duplicates of: the
    # repair round links star components across them (chain_corpus).

    path = tmp_path / "chains.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in chain_corpus(bases=6)), "utf-8")
    counters = ("repair_listed", "repair_tested", "repair_accepted", "groups", "pairs")
    runs = _three_runs(spark, tmp_path, Corpus((str(path),), {}), Settings(), counters)
    assert runs["driver"] == runs["spark"] == runs["local"]
    listed, tested, accepted, _, _ = runs["local"][2]
    assert listed >= tested >= accepted > 0
