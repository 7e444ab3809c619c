"""The Spark engine through the engine protocol gives the local engine's results: signatures,
GROUPS and PAIRS byte for byte, and the same counters."""

import json

import numpy as np
import pytest

from neardup.engines import Corpus, Outputs
from neardup.engines.local import LocalEngine
from neardup.engines.spark import SparkEngine
from neardup.io.write import TableWriter
from neardup.settings import Settings

pytestmark = pytest.mark.spark

TEXTS = [
    "the cat sat on the mat today",
    "The cat sat on the mat, today!",
    "a note about the weather in spring",
    "a note about the weather in the spring",
    "",
    "something else entirely",
]


@pytest.mark.parametrize("settings", [Settings(method="simhash"), Settings(num_perm=32)])
def test_fingerprint_equals_the_local_engines(spark, settings):
    np.testing.assert_array_equal(
        SparkEngine(spark).fingerprint(TEXTS, settings), LocalEngine(1).fingerprint(TEXTS, settings)
    )


def test_dedup_and_pairs_write_what_the_local_engine_writes(spark, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": t, "ts": i % 3}) + "\n"
            for i, t in enumerate(TEXTS * 3)
        ),
        encoding="utf-8",
    )
    fps = tmp_path / "fps.tsv"
    fps.write_text("a\t00000000000000ff\t1\nb\t00000000000000fe\t0\nc\tffff000000000000\t2\n")
    settings = Settings(method="simhash", hamming_k=4, pairs="all")
    counters = (
        "exact_duplicates",
        "candidates",
        "rejected",
        "pairs",
        "groups",
        "largest_group",
        "duplicates_removed",
        "empty_documents",
    )
    runs = {}
    for engine in (LocalEngine(1), SparkEngine(spark)):
        out = {
            name: tmp_path / f"{engine.name}.{name}.tsv"
            for name in ("groups", "pairs", "fingerprint-pairs")
        }
        dedup = engine.dedup(
            Corpus((str(docs),), {"time_field": "ts"}),
            settings,
            Outputs(groups=str(out["groups"]), pairs=str(out["pairs"])),
        )
        pairs = engine.pairs(
            Corpus((str(fps),)), settings, Outputs(pairs=str(out["fingerprint-pairs"]))
        )
        runs[engine.name] = (
            [p.read_bytes() for p in out.values()],
            [dedup.stats[name] for name in counters],
            dedup.read.documents,
            pairs.read.documents,
            pairs.stats["pairs"],
        )
    assert runs["spark"] == runs["local"]
    assert runs["local"][0][1].count(b"\n") > 3


@pytest.mark.parametrize("groups_local_max, failing", [(None, "groups"), (0, "pairs")])
def test_a_failed_output_leaves_none_of_the_runs_files(
    spark, tmp_path, monkeypatch, groups_local_max, failing
):
    """GROUPS and PAIRS are one set, as the local engine writes them: the second of them
    failing (GROUPS when the driver makes them, after PAIRS; PAIRS when Spark does, after
    GROUPS) leaves neither file, nor a temporary one."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS * 3)),
        encoding="utf-8",
    )
    opened = TableWriter.__enter__

    def full_disk(writer):
        if failing in str(writer._target):
            raise OSError(28, "No space left on device")
        return opened(writer)

    monkeypatch.setattr(TableWriter, "__enter__", full_disk)
    given = {} if groups_local_max is None else {"groups_local_max": groups_local_max}
    engine = SparkEngine(spark, **given)
    out = Outputs(groups=str(tmp_path / "groups.tsv"), pairs=str(tmp_path / "pairs.tsv"))
    with pytest.raises(OSError, match="No space left"):
        engine.dedup(Corpus((str(docs),)), Settings(), out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl"]


def _fingerprint_rows(n: int, seed: int) -> str:
    """``id, fingerprint, time`` lines: chains of fingerprints a bit or two apart (groups
    joined through their members), repeated fingerprints (exact duplicates, some of a chain's
    members), times out of input order, and lone fingerprints."""
    rng = np.random.default_rng(seed)
    fps: list[int] = []
    while len(fps) < n:
        base = int(rng.integers(0, 1 << 63))
        for _ in range(int(rng.integers(1, 6))):  # a chain: each step flips two bits
            fps.append(base)
            base ^= (1 << int(rng.integers(0, 64))) | (1 << int(rng.integers(0, 64)))
        for _ in range(int(rng.integers(0, 3))):  # copies of fingerprints seen before
            fps.append(fps[int(rng.integers(0, len(fps)))])
    times = rng.permutation(n)
    return "".join(f"u{i}\t{fp:016x}\t{times[i]}\n" for i, fp in enumerate(fps[:n]))


@pytest.mark.parametrize(
    "skew_threshold, components_local_max, hamming_k",
    [(100_000, 16_000_000, 3), (2, 16_000_000, 3), (2, 0, 3), (2, 16_000_000, 0)],
    ids=["plain", "skewed", "star-rounds", "copies-only"],
)
def test_pairs_without_groups_counts_the_groups_as_local(
    spark, tmp_path, skew_threshold, components_local_max, hamming_k
):
    # Without GROUPS to write, PAIRS "all" needs no group: the run only counts them, from the
    # edges and the copies. The counts must be those of the local engine and of a run that
    # writes GROUPS.
    fps = tmp_path / "fps.tsv"
    fps.write_text(_fingerprint_rows(400, seed=3))
    settings = Settings(method="simhash", hamming_k=hamming_k, pairs="all")
    counters = ("exact_duplicates", "pairs", "groups", "largest_group", "duplicates_removed")
    spark_engine = SparkEngine(
        spark, skew_threshold=skew_threshold, components_local_max=components_local_max
    )
    runs = {}
    for name, engine, groups in [
        ("local", LocalEngine(1), None),
        ("spark", spark_engine, None),
        ("spark with GROUPS", spark_engine, str(tmp_path / "groups.tsv")),
    ]:
        out = tmp_path / f"{name}.tsv"
        run = engine.pairs(Corpus((str(fps),)), settings, Outputs(pairs=str(out), groups=groups))
        runs[name] = (out.read_bytes(), [run.stats[c] for c in counters])
    assert runs["spark"] == runs["local"] == runs["spark with GROUPS"]
    exact, _, groups, largest, removed = runs["local"][1]
    assert exact > 0 and groups + removed == 400
    assert largest > 2 and removed > exact if hamming_k else largest > 1 and removed == exact
