"""The LCS bounds of pairs on Spark (``neardup.engines.spark.verify.PairBounds``): the three ways
(sketches broadcast, coarse sketches broadcast then the sketches of the pairs' ends joined,
both joined) leave exactly the pairs :func:`neardup.lcs.possible_pairs` leaves; and a run past
the sketches' broadcast gives the local engine's files and repair counts."""

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import neardup.engines.spark.verify as spark_verify  # noqa: E402
from neardup.candidates.bounds import coarse_sketches  # noqa: E402
from neardup.engines.spark.frames import Frames  # noqa: E402
from neardup.engines.spark.rows import POS_BITS  # noqa: E402
from neardup.engines.spark.tasks import _rows_binary, coarse_task  # noqa: E402
from neardup.lcs import COUNT_BUCKETS, possible_pairs  # noqa: E402
from neardup.settings import Settings  # noqa: E402
from neardup.text.units import lcs_unit_sketches  # noqa: E402

WAYS = {
    "broadcast": {},
    "coarse": {"BROADCAST_SKETCHES": 0},
    "joined": {"BROADCAST_SKETCHES": 0, "BROADCAST_COARSE": 0},
}


def _edited_texts(seed: int, n: int = 120) -> list[str]:
    """Texts of one 40-word base with 4 to 12 of its words replaced: pairs on both sides of
    LCS 0.8, many of which the coarse sketches leave and the sketches rule out."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(400)]
    base = rng.choice(vocabulary, 40)
    texts = []
    for _ in range(n):
        words = base.copy()
        changed = rng.choice(40, rng.integers(4, 13), replace=False)
        words[changed] = rng.choice(vocabulary, changed.shape[0])
        texts.append(" ".join(words))
    return texts


def test_coarse_task_folds_each_sketch_as_the_local_engine():
    _, sketches = lcs_unit_sketches(_edited_texts(1, 5))
    rows = pa.record_batch(
        {"pos": [3, 4, 5, 6, 7], "size": [40] * 5, "sketch": _rows_binary(sketches)}
    )
    (out,) = coarse_task([rows])
    assert out.column("pos").to_pylist() == [3, 4, 5, 6, 7]
    folded = np.frombuffer(b"".join(out.column("sketch").to_pylist()), np.uint8)
    assert (folded.reshape(5, -1) == coarse_sketches(sketches)).all()
    assert folded.reshape(5, -1).shape[1] * 8 == COUNT_BUCKETS


@pytest.mark.spark
@pytest.mark.parametrize("way", list(WAYS))
def test_every_way_leaves_the_pairs_the_sketches_leave(spark, monkeypatch, way):
    for name, value in WAYS[way].items():
        monkeypatch.setattr(spark_verify, name, value)
    texts = _edited_texts(7)
    sizes, sketches = lcs_unit_sketches(texts)
    n = len(texts)
    rng = np.random.default_rng(3)
    a = rng.integers(0, n, 600)
    b = (a + rng.integers(1, n, 600)) % n
    exact = possible_pairs(sizes, sketches, a, b, 0.8)
    loose = possible_pairs(sizes, coarse_sketches(sketches), a, b, 0.8)
    # The coarse sketches leave every pair the sketches leave, and pairs they rule out.
    assert (loose >= exact).all() and 0 < exact.sum() < loose.sum() < n * 5
    positions = (np.arange(n) % 2 << POS_BITS) | np.arange(n)  # two inputs, as a run's
    table = spark.createDataFrame(
        pa.table({"pos": positions, "size": sizes, "sketch": _rows_binary(sketches)}).to_pandas()
    )
    pairs = spark.createDataFrame(
        pa.table({"a": positions[a], "b": positions[b], "tag": np.arange(600)}).to_pandas()
    )
    frames = Frames(spark, "local", partitions=3, skew_threshold=1000)
    frames.stats["documents"] = n
    try:
        bound = spark_verify.PairBounds(frames, table, 0.8)
        assert (bound.shared is None, bound.exact) == {
            "broadcast": (False, True),
            "coarse": (False, False),
            "joined": (True, True),
        }[way]
        left = {(r.a, r.b) for r in bound(pairs).collect()}
        assert left == set(zip(positions[a[exact]].tolist(), positions[b[exact]].tolist()))
        flagged = {r.tag: r.left for r in bound.flag(pairs, "left").collect()}
        assert flagged == dict(zip(range(600), exact.tolist()))
    finally:
        frames.release()


@pytest.mark.spark
def test_coarse_bounds_give_the_local_engines_files_and_repair_counts(spark, tmp_path, monkeypatch):
    # Past BROADCAST_SKETCHES the links are bounded where they are made by the coarse
    # sketches, and the candidates and listed pairs they leave cut to the sketches' by a
    # join: the repair round lists the same pairs as the local engine.
    from test_spark_repair import repair_run_as_local

    monkeypatch.setattr(spark_verify, "BROADCAST_SKETCHES", 0)
    stats, local = repair_run_as_local(spark, tmp_path, Settings())
    assert stats["candidates"] == local["candidates"]
