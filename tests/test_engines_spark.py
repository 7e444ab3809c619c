"""The Spark engine through the engine protocol gives the local engine's results: signatures,
GROUPS and PAIRS byte for byte, and the same counters."""

import json

import numpy as np
import pytest

from neardup.engines import Corpus, Outputs
from neardup.engines.local import LocalEngine
from neardup.engines.spark import SparkEngine
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
