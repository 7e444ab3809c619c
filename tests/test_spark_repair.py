"""The repair round of MinHash star candidates on Spark: the local engine's groups, pairs and
counts on corpora where the earliest member of a bucket fails against members that pass
together (``neardup.engines.spark.repair``)."""

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from synth_helpers import chain_corpus
from test_spark import TEMPLATE, local_files, same_bytes, spark_dedup, spark_files

from neardup.candidates.bands import pairs_from_band_columns
from neardup.candidates.bucket_lists import BucketParts, listed_pairs, unpacked
from neardup.candidates.repair import BUCKET_MEMBERS
from neardup.engines.spark.positions import PositionRows
from neardup.engines.spark.repair import (
    LINK,
    PAIR,
    STAR,
    STARS,
    UNLISTED,
    bucket_links_task,
    distinct_links_task,
)
from neardup.engines.spark.rows import POS_BITS
from neardup.engines.spark.runs import packed_runs, run_rows
from neardup.engines.spark.tasks import (
    BAND_ROW,
    UNTIMED_BAND_ROW,
    _csr_binary,
)
from neardup.lcs import lcs_pairs, possible_pairs
from neardup.settings import Settings
from neardup.text.units import lcs_unit_sketches, lcs_units

REPAIR_COUNTS = (
    "repair_unlisted",
    "repair_listed",
    "repair_tested",
    "repair_accepted",
)


def repair_corpus():
    """(id, text, ts) rows: the edit chains of ``chain_corpus`` (buckets whose earliest member,
    a rotation of the base text, fails against members that pass together) and 30 variants
    of one template (buckets too large to repair)."""
    docs = [(d["id"], d["text"], k % 5) for k, d in enumerate(chain_corpus(bases=12))]
    return docs + [(f"v{i}", TEMPLATE.format(1000 + i), i % 3) for i in range(30)]


def repair_run_as_local(spark, tmp_path, settings, partitions=3):
    """Run :func:`repair_corpus` locally and on Spark: the files byte-identical and the repair
    counts equal (the local engine's repair round accepting links). Returns both stats."""
    docs = repair_corpus()
    groups = local_files(docs, settings, tmp_path)
    assert groups.stats["repair_accepted"] > 0
    result = spark_dedup(spark, docs, settings, partitions)
    stats = dict(result.stats)
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    assert {k: stats[k] for k in REPAIR_COUNTS} == {k: groups.stats[k] for k in REPAIR_COUNTS}
    return stats, groups.stats


@pytest.mark.spark
@pytest.mark.parametrize(
    "grouping, pairs, partitions", [("components", "original", 3), ("center", "all", 1)]
)
def test_repair_round_same_files_and_counts_as_local(spark, tmp_path, grouping, pairs, partitions):
    docs = repair_corpus()
    settings = Settings(grouping=grouping, pairs=pairs)  # MinHash char:4, LCS 0.8
    groups = local_files(docs, settings, tmp_path)
    assert groups.stats["repair_accepted"] > 0 and groups.stats["repair_unlisted"] > 0
    result = spark_dedup(spark, docs, settings, partitions)
    stats = dict(result.stats)
    spark_files(result, settings, tmp_path)
    same_bytes(tmp_path)
    assert {k: stats[k] for k in REPAIR_COUNTS} == {k: groups.stats[k] for k in REPAIR_COUNTS}
    assert stats["groups"] == groups.stats["groups"]


def test_untimed_band_rows_give_the_links_of_rows_of_one_time():
    # Documents all of one time: their band rows cross the shuffle without it (20 bytes, not
    # 28), and the reduce links them as it links the rows with that time.
    rng = np.random.default_rng(6)
    m = 2000
    rows = np.zeros(m, dtype=BAND_ROW)
    rows["band"], rows["h"] = rng.integers(0, 4, m), rng.integers(0, 40, m)
    rows["ts"], rows["pos"] = 7, rng.permutation(m)
    untimed = np.zeros(m, dtype=UNTIMED_BAND_ROW)
    for column in untimed.dtype.names:
        untimed[column] = rows[column]
    keys, one = np.array([10, 20]), np.zeros(m, int)

    def links(table, timed):
        runs = packed_runs(table, one, keys[:1])
        batches = list(bucket_links_task([runs], keys, timed))
        return sorted(tuple(r) for b in batches for r in run_rows(b, LINK).tolist())

    timed_links = links(rows, True)
    assert len(timed_links) > m // 2
    assert links(untimed, False) == timed_links


def test_bucket_links_list_the_local_engines_bucket_pairs_and_star_links():
    # Random band columns: the reduce rows of every band, in any order (the task sorts them).
    rng = np.random.default_rng(4)
    n, bands = 300, 6
    columns = [rng.integers(0, 12, n).astype(np.uint64) for _ in range(bands)]
    ts = rng.integers(0, 5, n)
    rank = np.lexsort((np.arange(n), ts))
    positions = np.empty(n, dtype=np.int64)
    positions[rank] = np.arange(n)
    buckets = BucketParts()
    star_a, star_b = pairs_from_band_columns(columns, "star", positions, 1, buckets, BUCKET_MEMBERS)
    keys, stats = listed_pairs(buckets, np.arange(n), BUCKET_MEMBERS)
    pair_a, pair_b = unpacked(keys)

    band = np.repeat(np.arange(bands), n)
    h = np.concatenate(columns).astype(np.int64)
    pos = np.tile(np.arange(n), bands)
    order = rng.permutation(n * bands)
    rows = np.empty(n * bands, dtype=BAND_ROW)
    rows["band"], rows["h"], rows["ts"], rows["pos"] = (
        band[order],
        h[order],
        np.tile(ts, bands)[order],
        pos[order],
    )
    # Runs of uneven sizes, in two batches: the task reads them as one partition's rows.
    cuts = np.array([0, 1, 350, 700, 1111, n * bands])
    runs = pa.record_batch({"dest": np.zeros(5, np.int32), "rows": _csr_binary(cuts, rows)})
    keys = np.array([10, 20, 30])
    link_runs = pa.Table.from_batches(
        list(bucket_links_task([runs.slice(0, 3), runs.slice(3)], keys))
    )
    # Each partition's links made distinct on their own: every copy of a link is in one.
    dest = link_runs.column("dest").to_numpy()
    out = pa.Table.from_batches(
        [
            batch
            for key in keys
            for batch in distinct_links_task(link_runs.filter(pa.array(dest == key)).to_batches())
        ]
    )
    a, b, kind = (out.column(c).to_numpy() for c in ("a", "b", "kind"))
    star = [(x, y) for x, y, k in zip(a, b, kind) if k == STAR]
    assert sorted(star) == sorted(set(zip(star_a.tolist(), star_b.tolist())))
    listed = [(x, y) for x, y, k in zip(a, b, kind) if k == PAIR]
    assert sorted(listed) == sorted(set(zip(pair_a.tolist(), pair_b.tolist())))
    # A listed pair is marked when a star link joins the same documents, either way round.
    unordered = {(min(x, y), max(x, y)) for x, y in star}
    marked = out.column("star").to_numpy()
    assert [bool(m) for m, k in zip(marked, kind) if k == PAIR] == [p in unordered for p in listed]
    assert 0 < marked.sum() < len(listed) and not marked[kind != PAIR].any()
    assert b[kind == UNLISTED].sum() == stats["repair_unlisted"] > 0


@pytest.mark.parametrize("offset", [1 << 32, 3 << POS_BITS])
def test_bucket_links_of_positions_past_32_bits_are_those_of_small_positions(offset):
    # Positions that fit 32 bits are listed as they are; larger ones (a later input's, or an
    # input past 4G lines) are numbered within the partition first: the same links result.
    rng = np.random.default_rng(11)
    m = 3000
    rows = np.zeros(m, dtype=BAND_ROW)
    rows["band"], rows["h"] = rng.integers(0, 5, m), rng.integers(0, 60, m)
    rows["ts"], rows["pos"] = rng.integers(0, 9, m), rng.permutation(m) * 5
    far = rows.copy()
    far["pos"] += offset
    keys, one = np.array([10, 20]), np.zeros(m, int)

    def links(table):
        runs = packed_runs(table, one, keys[:1])
        return [r for b in bucket_links_task([runs], keys) for r in run_rows(b, LINK).tolist()]

    near = links(rows)
    assert {kind for _, _, kind in near} == {STAR, PAIR, UNLISTED}
    moved = [(a + offset, b + offset, k) if k != UNLISTED else (a, b, k) for a, b, k in near]
    assert sorted(links(far)) == sorted(moved)


def test_distinct_links_bounded_where_made_keep_what_the_verification_would_test():
    # Texts of one base with 0-6 of its 10 words changed: pairs on both sides of LCS 0.8.
    rng = np.random.default_rng(9)
    texts = edited_texts(rng, 60)
    sizes, sketches = lcs_unit_sketches(texts)
    positions = np.arange(len(texts)) * 7 + 3  # sparse positions, as a run's
    table = SimpleNamespace(value=(PositionRows(positions, POS_BITS), sizes, sketches))
    # Star links, listed pairs (some the same documents as a star link, either way round),
    # each link in several copies, and counts of pairs not listed.
    a = rng.integers(0, len(texts), 400)
    b = (a + rng.integers(1, len(texts), 400)) % len(texts)
    kind = np.where(np.arange(400) < 200, STAR, PAIR)
    a[300:320], b[300:320], kind[300:320] = b[:20], a[:20], PAIR
    links = np.zeros(400 * 2 + 2, dtype=LINK)
    links["a"][:800], links["b"][:800] = np.tile(positions[a], 2), np.tile(positions[b], 2)
    links["kind"][:800] = np.tile(kind, 2)
    links["a"][800:], links["b"][800:], links["kind"][800:] = -1, [5, 6], UNLISTED
    runs = packed_runs(links, np.zeros(links.shape[0], int), np.array([0]))

    whole = pa.Table.from_batches(list(distinct_links_task([runs])))
    bounded = pa.Table.from_batches(list(distinct_links_task([runs], table, 0.8)))
    rows = {(r["a"], r["b"], r["kind"]): r["star"] for r in whole.to_pylist()}
    kept = {(r["a"], r["b"], r["kind"]): r["star"] for r in bounded.to_pylist()}
    counts = {k: b for (a_, b, k), _ in kept.items() if a_ == -1}
    assert counts == {UNLISTED: 11, STARS: sum(k == STAR for _, _, k in rows)}
    looked = [
        (x, y, k) for (x, y, k), star in rows.items() if k == STAR or (k == PAIR and not star)
    ]
    row_of = {p: i for i, p in enumerate(positions)}
    x = np.array([row_of[x] for x, _, _ in looked])
    y = np.array([row_of[y] for _, y, _ in looked])
    left = possible_pairs(sizes, sketches, x, y, 0.8)
    assert 0 < left.sum() < len(looked)
    assert {k: False for k, ok in zip(looked, left) if ok} == {
        k: star for k, star in kept.items() if k[0] != -1
    }
    # No pair the verification accepts is dropped: exact LCS against the texts themselves.
    offsets, codes = lcs_units(texts, "word")
    value = lcs_pairs(offsets, codes, x, y)
    assert (value[~left] < 0.8).all() and (value >= 0.8).any()


def edited_texts(rng: np.random.Generator, count: int) -> list[str]:
    """Texts of one 10-word base with 0-6 of its words changed: pairs on both sides of LCS
    0.8."""
    words = [f"w{i}" for i in range(40)]
    texts = []
    for _ in range(count):
        text = list(words[:10])
        for i in rng.choice(10, rng.integers(0, 7), replace=False):
            text[i] = words[rng.integers(10, 40)]
        texts.append(" ".join(text))
    return texts


@pytest.mark.parametrize("high", [0, 3 << POS_BITS])  # one input, or a later input's rows
def test_listed_pairs_bounded_where_listed_leave_the_same_distinct_links(high):
    # Band rows of texts on both sides of the bounds, in buckets of up to a dozen members:
    # bounded as they are listed, the listed pairs the bounds rule out never leave the
    # reduce, the star links and counts do, and the distinct links stored are the same.
    rng = np.random.default_rng(12)
    n, m = 80, 2400
    sizes, sketches = lcs_unit_sketches(edited_texts(rng, n))
    positions = np.arange(n) * 7 + 3 + high
    table = SimpleNamespace(value=(PositionRows(positions, POS_BITS), sizes, sketches))
    rows = np.zeros(m, dtype=BAND_ROW)
    rows["band"], rows["h"] = rng.integers(0, 6, m), rng.integers(0, 40, m)
    rows["ts"], rows["pos"] = rng.integers(0, 3, m), positions[rng.integers(0, n, m)]
    keys = np.array([10, 20, 30])
    runs = packed_runs(rows, np.zeros(m, int), keys[:1])

    def links(**bounds):
        found = pa.Table.from_batches(list(bucket_links_task([runs], keys, **bounds)))
        return found, run_rows(found, LINK)

    every, every_rows = links()
    bounded, bounded_rows = links(bounds=table, threshold=0.8)
    listed = every_rows[every_rows["kind"] == PAIR]
    row_of = {p: i for i, p in enumerate(positions)}
    left = possible_pairs(
        sizes,
        sketches,
        np.array([row_of[x] for x in listed["a"]]),
        np.array([row_of[y] for y in listed["b"]]),
        0.8,
    )
    assert 0 < left.sum() < left.shape[0]

    def rows_of(links, kind):
        return sorted(map(tuple, links[links["kind"] == kind].tolist()))

    assert rows_of(bounded_rows, PAIR) == sorted(map(tuple, listed[left].tolist()))
    for kind in (STAR, UNLISTED):
        assert rows_of(bounded_rows, kind) == rows_of(every_rows, kind)

    def stored(found):
        dest = found.column("dest").to_numpy()
        return sorted(
            tuple(r.values())
            for key in keys
            for batch in distinct_links_task(
                found.filter(pa.array(dest == key)).to_batches(), table, 0.8
            )
            for r in batch.to_pylist()
        )

    kept = stored(bounded)
    assert kept == stored(every)
    assert {kind for _, _, kind, _ in kept} == {STAR, PAIR, UNLISTED, STARS}


@pytest.mark.parametrize("high", [0, 1 << 44])  # one input, or positions of a second input
# Star links from their smaller end, as when every star's center is its earliest position (no
# time field), or in both orientations.
@pytest.mark.parametrize("oriented", [False, True])
def test_distinct_links_match_a_set_of_tuples(high, oriented):
    rng = np.random.default_rng(high % 97)
    n = 3000
    links = np.zeros(n, dtype=LINK)
    ends = rng.integers(0, 60, (n, 2)) + rng.choice([0, high], (n, 2))
    links["a"], links["b"] = ends[:, 0], ends[:, 1]
    links["kind"] = rng.choice([STAR, PAIR], n)
    if oriented:
        star = links["kind"] == STAR
        links["a"][star], links["b"][star] = ends[star].min(axis=1), ends[star].max(axis=1)
    runs = packed_runs(links, np.zeros(n, int), np.array([0]))
    rows = [tuple(r.values()) for b in distinct_links_task([runs]) for r in b.to_pylist()]

    distinct = sorted({(int(k), int(a), int(b)) for a, b, k in links[["a", "b", "kind"]]})
    starred = {(min(a, b), max(a, b)) for k, a, b in distinct if k == STAR}
    expected = [(a, b, k, k == PAIR and (min(a, b), max(a, b)) in starred) for k, a, b in distinct]
    assert rows[:-1] == expected and rows[-1] == (-1, 0, UNLISTED, False)
    assert 0 < sum(star for *_, star in expected) < len(expected)
