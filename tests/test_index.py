"""Tests for neardup.index.store and the `neardup index` commands: exactness against brute force,
agreement with `dedup`, durability (SIGKILL), concurrent readers, caches, validation, CLI."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.api import dedup
from neardup.candidates.plan import plan_tables
from neardup.index.errors import DocumentExistsError, IndexLockedError, ReadOnlyIndexError
from neardup.index.results import MAX_LIMIT
from neardup.index.settings import describe_settings
from neardup.index.store import NearDupIndex
from neardup.index.tables import PermutationTables, close_pairs

_BYTE_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)
HYP = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 by byte look-up (independent of the code under test)."""
    x = np.ascontiguousarray(x, dtype=np.uint64)
    return _BYTE_POPCOUNT[x.view(np.uint8)].reshape(x.shape + (8,)).sum(axis=-1)


def brute_matches(stored: dict[int, int], query: int, k: int) -> set[tuple[int, int]]:
    """{(key, distance)} of the stored fingerprints within k bits of query."""
    if not stored:
        return set()
    keys = np.array(list(stored), dtype=np.int64)
    values = np.array(list(stored.values()), dtype=np.uint64)
    d = popcount(values ^ np.uint64(query))
    return {(int(a), int(b)) for a, b in zip(keys[d <= k], d[d <= k])}


def brute_groups(ids, fps, stamps, positions, k) -> dict[str, tuple[str, bool, int]]:
    """Connected components of the within-k relation; original = min (timestamp, position)."""
    n = len(ids)
    fps = np.asarray(fps, dtype=np.uint64)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    if n:
        d = popcount(fps[:, None] ^ fps[None, :])
        for i, j in zip(*np.nonzero(np.triu(d <= k, 1))):
            parent[find(int(i))] = find(int(j))
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    out = {}
    for group in members.values():
        orig = min(group, key=lambda i: (stamps[i], positions[i]))
        for i in group:
            out[ids[i]] = (ids[orig], i == orig, len(group))
    return out


def flip(value: int, bits) -> int:
    for b in bits:
        value ^= 1 << int(b)
    return value


def boundary_bits(k: int, n: int) -> list[int]:
    """Bits at the edges of the blocks of the plans the index may use."""
    bits = {0, 63}
    for c in (1, 2, 3):
        if k + c <= 64:
            for start, width in plan_tables(n, k, prefix_blocks=c).blocks:
                bits.update((start, start + width - 1))
    return sorted(bits)


# --------------------------------------------------------------------------------------------
# Permutation tables vs brute force
# --------------------------------------------------------------------------------------------


@st.composite
def adversarial(draw, max_k: int = 6):
    """(k, stored fingerprints, queries): random values, planted neighbours at distances
    0..k+1 with flips at block boundaries, identical copies."""
    k = draw(st.integers(0, max_k))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_random = draw(st.integers(0, 120))
    values = [int(v) for v in rng.integers(0, 2**64, n_random, dtype=np.uint64)]
    bases = [int(v) for v in rng.integers(0, 2**64, draw(st.integers(1, 6)), dtype=np.uint64)]
    edges = boundary_bits(k, 200)
    queries = list(bases)
    for base in bases:
        for d in range(0, k + 2):
            for _ in range(draw(st.integers(0, 3))):
                pool = edges if draw(st.booleans()) else list(range(64))
                bits = rng.choice(pool, size=min(d, len(pool)), replace=False)
                values.append(flip(base, bits))
        copies = draw(st.integers(0, 4))
        values.extend([base] * copies)
        queries.append(flip(base, rng.choice(edges, size=min(k + 1, len(edges)), replace=False)))
    if draw(st.booleans()):
        values.extend([values[0]] * 5 if values else [])
    queries.extend(int(v) for v in rng.integers(0, 2**64, 3, dtype=np.uint64))
    return k, values, queries


@settings(HYP, max_examples=60)
@given(case=adversarial(), prefix_blocks=st.sampled_from([None, 1, 2, 3]), split=st.floats(0, 1))
def test_tables_probe_equals_brute_force(case, prefix_blocks, split):
    k, values, queries = case
    plan = None
    if prefix_blocks is not None and k + prefix_blocks <= 64:
        plan = plan_tables(len(values), k, prefix_blocks=prefix_blocks)
    n = len(values)
    cut = int(n * split)
    positions = np.arange(n, dtype=np.int64) * 3 + 1  # gaps, as after removals
    fps = np.array(values, dtype=np.uint64)
    tables = PermutationTables(k, plan, positions=positions[:cut], fingerprints=fps[:cut])
    tables.add(positions[cut:], fps[cut:])  # recent adds: the delta
    stored = {int(p): int(v) for p, v in zip(positions, values)}

    def check(k_query):
        qi, pos, dist = tables.probe(np.array(queries, dtype=np.uint64), k_query)
        for i, q in enumerate(queries):
            got = [(int(p), int(d)) for p, d in zip(pos[qi == i], dist[qi == i])]
            assert len(got) == len(set(got)), "a match was reported twice"
            assert set(got) == brute_matches(stored, q, k_query)

    check(k)
    check(k // 2)
    tables.merge()
    check(k)
    gone = positions[::4]
    tables.discard(gone)
    for p in gone.tolist():
        stored.pop(p)
    check(k)
    tables.merge()
    assert tables.keys.shape[1] == len(stored)
    check(k)
    tables.rebuild(plan_tables(len(stored), k))
    check(k)


def test_tables_replan_when_growing():
    rng = np.random.default_rng(3)
    tables = PermutationTables(3)
    assert tables.plan.num_tables == plan_tables(0, 3).num_tables
    values = rng.integers(0, 2**64, 300_000, dtype=np.uint64)
    for start in range(0, values.size, 50_000):
        tables.add(np.arange(start, start + 50_000), values[start : start + 50_000])
    tables.merge()
    assert tables.planned_n >= 100_000
    assert tables.plan == plan_tables(tables.planned_n, 3)
    probe = values[::997].copy()
    qi, pos, dist = tables.probe(probe)
    assert np.array_equal(np.bincount(qi[dist == 0], minlength=probe.size), np.ones(probe.size))
    assert 8 * tables.plan.num_tables + 9 <= tables.nbytes / tables.live + 1


def test_tables_validation():
    with pytest.raises(ValueError, match="hamming_k must be in 0..32, got 40"):
        PermutationTables(40)
    t = PermutationTables(2, positions=np.array([5]), fingerprints=np.array([1], np.uint64))
    with pytest.raises(ValueError, match="hamming_k must be in 0..2, got 3"):
        t.probe(np.array([1], np.uint64), 3)
    with pytest.raises(ValueError, match="new positions must increase"):
        t.add(np.array([3]), np.array([1], np.uint64))


@settings(HYP, max_examples=40)
@given(values=st.lists(st.integers(0, 2**64 - 1), max_size=60, unique=True), k=st.integers(0, 8))
def test_close_pairs_equals_brute_force(values, k):
    v = np.array(values, dtype=np.uint64)
    a, b, d = close_pairs(v, k)
    got = sorted(zip(a.tolist(), b.tolist(), d.tolist()))
    want = []
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            dd = bin(values[i] ^ values[j]).count("1")
            if dd <= k:
                want.append((i, j, dd))
    assert got == want


# --------------------------------------------------------------------------------------------
# The index: queries vs brute force
# --------------------------------------------------------------------------------------------


@settings(HYP, max_examples=15)
@given(
    case=adversarial(max_k=4), split=st.floats(0, 1), limit=st.sampled_from([0, 1, 3, MAX_LIMIT])
)
def test_index_query_equals_brute_force(tmp_path_factory, case, split, limit):
    k, values, queries = case
    path = tmp_path_factory.mktemp("q") / "idx"
    n = len(values)
    cut = int(n * split)
    ids = [f"d{i:04d}" for i in range(n)]
    fps = np.array(values, dtype=np.uint64)
    with NearDupIndex.build(path, ids[:cut], fingerprints=fps[:cut], hamming_k=k) as index:
        index.add_many(ids[cut:], fingerprints=fps[cut:])
        stored = dict(enumerate(values))
        results = index.query_many(fingerprints=queries, limit=limit)
        groups = index.groups()
    for q, r in zip(queries, results):
        want = brute_matches(stored, q, k)
        ordered = sorted((d, ids[i]) for i, d in want)
        assert r.match_count == len(want)
        assert r.status == ("duplicate" if want else "new")
        assert [(m.distance, m.id) for m in r.matches] == ordered[:limit]
        for m in r.matches:
            assert m.duplicate_id == groups[m.id][0] == m.original_id
        if want:
            # The group it would join: the earliest original among its matches' groups.
            originals = {groups[ids[i]][0] for i, _ in want}
            assert r.duplicate_id == min(originals, key=lambda o: int(o[1:]))
        else:
            assert r.duplicate_id is None


def test_query_skewed_levels(tmp_path):
    """Distance levels larger than one fetch: identical copies (read per fingerprint through the
    (fingerprint, id) index) and many distinct values at one distance (read by position)."""
    rng = random.Random(5)
    q = 0x0123456789ABCDEF
    ids, values = [], []
    for i in range(600):  # a template stored 600 times
        ids.append(f"t{rng.randrange(10**9):09d}-{i}")
        values.append(q)
    pairs = [(a, b) for a in range(64) for b in range(a + 1, 64)][:700]
    for i, (a, b) in enumerate(pairs):  # 700 distinct values at distance 2
        ids.append(f"v{rng.randrange(10**9):09d}-{i}")
        values.append(flip(q, [a, b]))
    with NearDupIndex.build(
        tmp_path / "idx", ids, fingerprints=np.array(values, np.uint64)
    ) as index:
        for limit in (1, 7, 1000):
            r = index.query(fingerprint=q, limit=limit)
            want = sorted((0 if v == q else 2, i) for i, v in zip(ids, values))
            assert r.match_count == len(ids)
            assert [(m.distance, m.id) for m in r.matches] == want[:limit]
        r = index.query(fingerprint=flip(q, [0]), limit=5, hamming_k=1)
        assert r.match_count == 600 + 63  # and the 63 values that flipped bit 0 with another


# --------------------------------------------------------------------------------------------
# Groups: agreement with dedup and with brute-force components
# --------------------------------------------------------------------------------------------

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega"
).split()


def corpus(seed: int, n_base: int = 25, variants: int = 4):
    """Texts with near-duplicate variants (including chains of edits) and distinct timestamps."""
    rng = random.Random(seed)
    ids, texts, stamps = [], [], []
    for b in range(n_base):
        words = [rng.choice(WORDS) for _ in range(rng.randint(40, 80))]
        current = list(words)
        for v in range(variants + 1):
            ids.append(f"b{b}v{v}")
            texts.append(" ".join(current))
            stamps.append(rng.randrange(10**6))
            current = list(current)
            current[rng.randrange(len(current))] = rng.choice(WORDS)  # chain: edit the last one
    order = list(range(len(ids)))
    rng.shuffle(order)
    stamps = list(dict.fromkeys(stamps))  # distinct
    while len(stamps) < len(ids):
        stamps.append(10**6 + len(stamps))
    return [ids[i] for i in order], [texts[i] for i in order], [stamps[i] for i in range(len(ids))]


@pytest.mark.parametrize("k", [3, 6])
def test_build_and_incremental_adds_agree_with_dedup(tmp_path, k):
    import pandas as pd

    ids, texts, stamps = corpus(11)
    frame = pd.DataFrame({"id": ids, "text": texts, "ts": stamps})
    want = dedup(
        frame,
        time_field="ts",
        workers=1,
        method="simhash",
        shingle="word:3",
        verify=None,
        hamming_k=k,
        grouping="components",
    )
    want = {
        r.id: (r.duplicate_id, bool(r.is_original), int(r.group_size)) for r in want.itertuples()
    }
    assert any(size > 1 for _, _, size in want.values())
    us = np.array(stamps, dtype=np.int64) * 1_000_000
    with NearDupIndex.build(
        tmp_path / "bulk", ids, texts=texts, timestamps_us=us, hamming_k=k
    ) as index:
        assert index.groups() == want
    # The same corpus added one by one and in batches, in another order: the same groups.
    rng = random.Random(2)
    order = list(range(len(ids)))
    rng.shuffle(order)
    with NearDupIndex.create(tmp_path / "online", hamming_k=k, method="simhash") as index:
        i = 0
        while i < len(order):
            step = rng.choice([1, 1, 3, 17])
            chunk = order[i : i + step]
            index.add_many(
                [ids[j] for j in chunk],
                [texts[j] for j in chunk],
                timestamps=[stamps[j] for j in chunk],
            )
            i += step
        assert index.groups() == want


@st.composite
def clustered(draw):
    """Fingerprints in a few tight clusters (many near pairs and chains) plus strays."""
    k = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = []
    for _ in range(draw(st.integers(1, 4))):
        center = int(rng.integers(0, 2**64, dtype=np.uint64))
        current = center
        for _ in range(draw(st.integers(1, 12))):
            current = flip(current, rng.choice(64, size=int(rng.integers(0, k + 2)), replace=False))
            values.append(current)
    values += [int(v) for v in rng.integers(0, 2**64, draw(st.integers(0, 5)), dtype=np.uint64)]
    stamps = [int(t) for t in rng.integers(0, 50, len(values))]  # ties on purpose
    return k, values, stamps, draw(st.randoms(use_true_random=False))


@settings(HYP, max_examples=25)
@given(case=clustered())
def test_online_groups_equal_components_with_removals(tmp_path_factory, case):
    """Adds in random order and batches, then removals: always the components of the current
    documents, original = earliest (timestamp, position)."""
    k, values, stamps, rnd = case
    n = len(values)
    ids = [f"x{i}" for i in range(n)]
    order = list(range(n))
    rnd.shuffle(order)
    path = tmp_path_factory.mktemp("g") / "idx"
    position = {}
    with NearDupIndex.create(path, hamming_k=k, method="simhash") as index:
        i = 0
        while i < n:
            chunk = order[i : i + rnd.choice([1, 2, 5])]
            results = index.add_many(
                [ids[j] for j in chunk],
                fingerprints=[values[j] for j in chunk],
                timestamps=[stamps[j] for j in chunk],
            )
            for j, r in zip(chunk, results):
                position[j] = len(position)
                added = [x for x in position]
                truth = brute_groups(
                    [ids[x] for x in added],
                    [values[x] for x in added],
                    [stamps[x] for x in added],
                    [position[x] for x in added],
                    k,
                )
                assert r.duplicate_id == truth[ids[j]][0]
                assert r.group_size == truth[ids[j]][2]
                assert r.status == ("duplicate" if r.match_count else "new")
            i += len(chunk)
        present = sorted(position, key=position.get)
        assert index.groups() == brute_groups(
            [ids[x] for x in present],
            [values[x] for x in present],
            [stamps[x] for x in present],
            [position[x] for x in present],
            k,
        )
        for _ in range(3):
            if not present:
                break
            gone = rnd.sample(present, min(len(present), rnd.choice([1, 2, 4])))
            assert index.remove_many([ids[x] for x in gone] + ["unknown"]) == len(gone)
            present = [x for x in present if x not in gone]
            truth = brute_groups(
                [ids[x] for x in present],
                [values[x] for x in present],
                [stamps[x] for x in present],
                [position[x] for x in present],
                k,
            )
            assert index.groups() == truth
            meta_groups = index._conn.execute(
                "SELECT value FROM meta WHERE key='groups'"
            ).fetchone()
            assert int(meta_groups[0]) == len({v[0] for v in truth.values()})
    with NearDupIndex(path, readonly=True) as reader:  # reopened from the cache: same answers
        assert reader.groups() == truth


def test_late_older_document_becomes_original(tmp_path):
    with NearDupIndex.create(tmp_path / "idx", hamming_k=2, method="simhash") as index:
        index.add("a", fingerprint=0b0000, timestamp=100)
        index.add("b", fingerprint=0b0001, timestamp=200)
        r = index.add("c", fingerprint=0b0011, timestamp=50)
        assert (r.status, r.is_original, r.duplicate_id, r.group_size) == (
            "duplicate",
            True,
            "c",
            3,
        )
        assert [(m.id, m.distance) for m in r.matches] == [("b", 1), ("a", 2)]
        assert all(m.duplicate_id == "c" for m in r.matches)
        assert index.get("a").duplicate_id == "c" and index.get("b").original_id == "c"
        # A bridge merges two groups; the earliest original wins.
        index.add("far", fingerprint=(0b111 << 8) | 0b11, timestamp=10)  # 3 bits from c
        index.add("bridge", fingerprint=(0b1 << 8) | 0b11, timestamp=300)  # 1 from c, 2 from far
        assert {v[0] for v in index.groups().values()} == {"far"}
        assert index.get("b").group_size == 5
        # Removing the bridge splits the group again; removing an original promotes the next.
        index.remove("bridge")
        assert index.get("a").duplicate_id == "c" and index.get("far").group_size == 1
        index.remove("c")
        assert index.get("b").duplicate_id == "a"


def test_add_statuses_and_batch_semantics(tmp_path):
    with NearDupIndex.create(tmp_path / "idx", hamming_k=3, method="simhash") as index:
        rs = index.add_many(
            ["a", "b", "c", "d"],
            fingerprints=[1, 1, 7, 0b1111 << 50],
            timestamps=[None, "1970-01-01T00:00:01Z", 3.5, "2024-05-01"],
        )
        assert [r.status for r in rs] == ["new", "duplicate", "duplicate", "new"]
        assert [r.match_count for r in rs] == [0, 1, 2, 0]
        assert [m.id for m in rs[2].matches] == ["a", "b"]
        assert index.get("c").timestamp_us == 3_500_000
        assert index.get("d").to_dict()["timestamp"] == "2024-05-01T00:00:00Z"
        again = index.add("a", fingerprint=99, if_exists="skip")
        assert (again.status, again.fingerprint, again.duplicate_id) == ("exists", 1, "a")
        assert len(index) == 4
        q = index.query(fingerprint="0000000000000003", limit=1)
        assert (q.status, q.match_count, [m.id for m in q.matches]) == ("duplicate", 3, ["a"])


def test_validation_changes_nothing(tmp_path):
    with NearDupIndex.create(tmp_path / "idx", hamming_k=3, method="simhash") as index:
        index.add("a", fingerprint=1)
        with pytest.raises(DocumentExistsError, match="'a' is already in the index"):
            index.add_many(["z", "a"], fingerprints=[5, 6])
        with pytest.raises(ValueError, match="'q' appears more than once"):
            index.add_many(["q", "q"], fingerprints=[5, 6])
        with pytest.raises(ValueError, match="fingerprint #1: fingerprint must be"):
            index.add_many(["q", "r"], fingerprints=[5, "zz"])
        with pytest.raises(ValueError, match="timestamp of 'r'"):
            index.add_many(["q", "r"], fingerprints=[5, 6], timestamps=[1, "yesterday"])
        with pytest.raises(ValueError, match="must have 1..1024 characters, got 0"):
            index.add("", fingerprint=1)
        with pytest.raises(ValueError, match="limit must be in 0..1000, got 1001"):
            index.query(fingerprint=1, limit=1001)
        with pytest.raises(ValueError, match="hamming_k must be in 0..3, got 4"):
            index.query(fingerprint=1, hamming_k=4)
        with pytest.raises(ValueError, match="exactly one of"):
            index.add("q", "text", fingerprint=1)
        with pytest.raises(ValueError, match="if_exists must be one of"):
            index.add("q", fingerprint=1, if_exists="replace")
        assert len(index) == 1 and index.get("z") is None and index.get("q") is None
        with pytest.raises(IndexLockedError, match="one writer at a time"):
            NearDupIndex(tmp_path / "idx")
        with NearDupIndex(tmp_path / "idx", readonly=True) as reader:
            with pytest.raises(ReadOnlyIndexError):
                reader.add("b", fingerprint=2)
            with pytest.raises(ReadOnlyIndexError):
                reader.remove("a")
    with pytest.raises(FileExistsError, match="already exists"):
        NearDupIndex.create(tmp_path / "idx", method="simhash")
    with pytest.raises(FileNotFoundError, match="no index at"):
        NearDupIndex(tmp_path / "nothing")
    with pytest.raises(ValueError, match="hamming_k must be in 0..32; got 40"):
        NearDupIndex.create(tmp_path / "bad", hamming_k=40, method="simhash")
    with pytest.raises(ValueError, match="synchronous must be one of normal, full"):
        NearDupIndex(tmp_path / "idx", synchronous="off")


def test_settings_are_stored(tmp_path):
    path = tmp_path / "idx"
    NearDupIndex.create(
        path, hamming_k=5, shingle="char:4", hash_name="md5", weights="tf", method="simhash"
    ).close()
    with NearDupIndex(path) as index:
        s = index.settings
        assert (s.hamming_k, s.shingle, s.hash_name, s.weights) == (5, "char:4", "md5", "tf")
        from neardup.simhash import simhash

        want = simhash(["ein text"], "char:4", "md5", "tf")[0]
        assert index.add("x", "ein text").fingerprint == int(want)


# --------------------------------------------------------------------------------------------
# Caches, crashes, concurrency
# --------------------------------------------------------------------------------------------


def test_cache_reopen_tail_and_corruption(tmp_path):
    path = tmp_path / "idx"
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    ids = [f"d{i}" for i in range(3000)]
    NearDupIndex.build(path, ids[:2000], fingerprints=fps[:2000]).close()
    with NearDupIndex(path) as index:
        assert index.stats()["opened_from"] == "cache"
        index.add_many(ids[2000:2500], fingerprints=fps[2000:2500])
        index.remove_many(ids[:10])
        index._release()  # as if the process died: no cache written at close
    with NearDupIndex(path, readonly=True) as index:
        s = index.stats()
        assert (s["opened_from"], s["documents"]) == ("cache", 2490)
        assert "500 rows since" in s["open_detail"]
        assert index.query(fingerprint=int(fps[2300])).matches[0].id == "d2300"
        assert index.query(fingerprint=int(fps[5])).status == "new"
    manifest = json.loads((path / "tables.json").read_text())
    gen = path / f"tables-{manifest['generation']}"
    for damage in ("truncate", "manifest", "newer"):
        if damage == "truncate":
            (gen / "keys.npy").write_bytes((gen / "keys.npy").read_bytes()[:100])
        elif damage == "manifest":
            (path / "tables.json").write_text("{not json")
        else:
            (path / "tables.json").write_text(json.dumps({**manifest, "max_pos": 10**6}))
        with NearDupIndex(path, readonly=True) as index:
            assert index.stats()["opened_from"] == "rebuilt"
            assert len(index) == 2490
            assert index.query(fingerprint=int(fps[2499])).matches[0].id == "d2499"
    with NearDupIndex(path) as index:  # the writer rebuilds and caches again
        assert index.stats()["opened_from"] == "rebuilt"
    with NearDupIndex(path) as index:
        assert index.stats()["opened_from"] == "cache"
        assert len(index) == 2490


WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from neardup.index.store import NearDupIndex
    path, start = sys.argv[1], int(sys.argv[2])
    index = NearDupIndex(path)
    rng = np.random.default_rng(start)
    i = start
    while True:
        batch = [f"w{i + j}" for j in range(1 + i % 3)]
        index.add_many(batch, fingerprints=rng.integers(0, 2**64, len(batch), dtype=np.uint64))
        for ident in batch:
            print(ident, flush=True)
        i += len(batch)
        if i % 50 < 3:
            index.checkpoint()  # so that some kills land while the cache is being written
    """
)


def _start_writer(path: Path, start: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkill_keeps_every_acknowledged_add(tmp_path, kill_writer_after):
    path = tmp_path / "idx"
    NearDupIndex.create(path, method="simhash").close()
    acknowledged: list[str] = []
    for round_, want in enumerate((150, 60)):
        acknowledged += kill_writer_after(WRITER, path, 10_000 * round_, want=want, timeout=30)
        with NearDupIndex(path) as index:  # opens (the lock died with the process)
            missing = [i for i in acknowledged if index.get(i) is None]
            assert missing == []
            assert len(index) >= len(acknowledged)
            record = index.get(acknowledged[-1])
            assert index.query(fingerprint=record.fingerprint).matches[0].distance == 0


def test_reader_process_sees_committed_adds(tmp_path):
    path = tmp_path / "idx"
    NearDupIndex.create(path, method="simhash").close()
    proc = _start_writer(path, 0)
    seen: list[str] = []
    reader = NearDupIndex(path, readonly=True)
    try:
        checked = 0
        deadline = time.monotonic() + 20
        while checked < 120 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line.strip())
            # Committed before it was printed: a reader must see it (query refreshes itself).
            record = reader.get(seen[-1])
            assert record is not None
            assert reader.query(fingerprint=record.fingerprint).matches[0].id == seen[-1]
            checked += 1
        assert checked == 120
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
        reader.close()


def test_threads_share_one_index(tmp_path):
    rng = np.random.default_rng(9)
    fps = rng.integers(0, 2**64, 2000, dtype=np.uint64)
    errors: list[BaseException] = []
    with NearDupIndex.create(tmp_path / "idx", method="simhash") as index:

        def write():
            try:
                for s in range(0, 2000, 100):
                    index.add_many(
                        [f"t{i}" for i in range(s, s + 100)], fingerprints=fps[s : s + 100]
                    )
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        def read():
            try:
                for i in range(300):
                    r = index.query(fingerprint=int(fps[i % 2000]))
                    assert r.match_count in (0, 1)
            except BaseException as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=write)] + [
            threading.Thread(target=read) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert len(index) == 2000


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _invoke(command, args):
    result = CliRunner().invoke(command, args, catch_exceptions=False)
    return result


def test_cli_build_add_query_remove_stats(tmp_path):
    from neardup.cli.index import index as index_cmd

    docs = tmp_path / "docs.jsonl"
    ids, texts, stamps = corpus(3, n_base=8, variants=2)
    with open(docs, "w") as fh:
        for i, t, s in zip(ids, texts, stamps):
            fh.write(json.dumps({"id": i, "text": t, "ts": s}) + "\n")
    more = tmp_path / "more.jsonl"
    more.write_text(
        json.dumps({"id": "late", "text": texts[0], "ts": -5})
        + "\n"
        + json.dumps({"id": "fresh", "text": "nothing like the others at all here", "ts": 9})
        + "\n"
    )
    d = str(tmp_path / "idx")
    build = ["build", str(docs), "-d", d, "-k", "3", "--time-field", "ts", "--workers", "1"]
    r = _invoke(index_cmd, [*build, "-q"])  # -k: SimHash
    assert r.exit_code == 0, r.output
    r = _invoke(index_cmd, ["build", str(docs), "-d", d, "--workers", "1", "-q"])
    assert r.exit_code == 1 and "already exists" in r.output and "--force" in r.output
    out = tmp_path / "dec.tsv"
    r = _invoke(
        index_cmd,
        ["add", str(more), "-d", d, "--time-field", "ts", "-o", str(out), "--workers", "1", "-q"],
    )
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:4] == ["id", "status", "duplicate_id", "original_id"]
    assert rows[1][:4] == ["late", "duplicate", "late", "late"] and rows[2][1] == "new"
    r = _invoke(index_cmd, ["add", str(more), "-d", d, "--workers", "1", "-q"])
    assert (
        r.exit_code == 1
        and "'late' is already in the index" in r.output
        and "--if-exists skip" in r.output
    )
    r = _invoke(index_cmd, ["query", "-d", d, "--json", texts[0]])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["status"] == "duplicate" and data["duplicate_id"] == "late"
    assert data["matches"][0]["distance"] == 0
    r = _invoke(index_cmd, ["query", "-d", d, "--fingerprint", data["fingerprint"], "-k", "1"])
    assert r.exit_code == 0 and r.output.startswith("duplicate")
    qb = tmp_path / "qb.tsv"
    mo = tmp_path / "m.tsv"
    r = _invoke(
        index_cmd,
        [
            "query-batch",
            str(more),
            "-d",
            d,
            "-o",
            str(qb),
            "--matches-out",
            str(mo),
            "--workers",
            "1",
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    assert qb.read_text().splitlines()[1].split("\t")[:3] == ["late", "duplicate", "late"]
    assert "match_id" in mo.read_text().splitlines()[0]
    r = _invoke(index_cmd, ["remove", "-d", d, "late", "nope"])
    assert r.exit_code == 0 and "removed 1 of 2" in r.output
    r = _invoke(index_cmd, ["stats", "-d", d, "--json"])
    stats = json.loads(r.output)
    assert stats["documents"] == len(ids) + 1 and stats["hamming_k"] == 3
    unmeasured = [k for k, v in stats.items() if v is None]
    assert unmeasured  # timings of checks this open did not run
    text = _invoke(index_cmd, ["stats", "-d", d]).output
    assert "None" not in text and not any(f"{k} " in text for k in unmeasured)
    assert "documents" in text.split()
    r = _invoke(index_cmd, ["query", "-d", d])
    assert r.exit_code == 1 and "exactly one of TEXT" in r.output


def test_cli_fingerprint_rows_and_create(tmp_path):
    from neardup.cli.index import index as index_cmd

    rows = tmp_path / "fps.tsv"
    rows.write_text("a\t00000000000000ff\t10\nb\t00000000000000fe\t5\nc\tffff000000000000\t1\n")
    d = str(tmp_path / "idx")
    r = _invoke(index_cmd, ["build", str(rows), "--from-fingerprints", "-d", d, "-k", "2", "-q"])
    assert r.exit_code == 0, r.output
    with NearDupIndex(d, readonly=True) as index:
        assert index.groups() == {"a": ("b", False, 2), "b": ("b", True, 2), "c": ("c", True, 1)}
    r = _invoke(index_cmd, ["create", "-d", str(tmp_path / "empty"), "-k", "4"])
    assert r.exit_code == 0
    with NearDupIndex(tmp_path / "empty", readonly=True) as index:
        assert (len(index), index.hamming_k) == (0, 4)
    with NearDupIndex(d):  # a writer holds the lock: writing commands say so
        r = _invoke(index_cmd, ["remove", "-d", d, "a"])
        assert r.exit_code == 1 and "open for writing elsewhere" in r.output


# --------------------------------------------------------------------------------------------
# MinHash indexes: agreement with `dedup`'s default method, grouping rules, settings, CLI
# --------------------------------------------------------------------------------------------


def dedup_groups(ids, texts, stamps, **options) -> dict[str, tuple[str, bool, int]]:
    """`dedup` (the batch job) on a corpus: each ID's (duplicate_id, is_original, size)."""
    import pandas as pd

    frame = pd.DataFrame({"id": ids, "text": texts, "ts": stamps})
    got = dedup(frame, time_field="ts", workers=1, grouping="components", **options)
    return {
        r.id: (r.duplicate_id, bool(r.is_original), int(r.group_size)) for r in got.itertuples()
    }


def add_in_random_batches(index: NearDupIndex, ids, texts, stamps, seed: int) -> None:
    rng = random.Random(seed)
    order = list(range(len(ids)))
    rng.shuffle(order)
    i = 0
    while i < len(order):
        chunk = order[i : i + rng.choice([1, 1, 3, 17])]
        index.add_many(
            [ids[j] for j in chunk],
            [texts[j] for j in chunk],
            timestamps=[stamps[j] for j in chunk],
        )
        i += len(chunk)


@pytest.mark.parametrize(
    "options",
    [{}, {"verify": "jaccard:0.6", "shingle": "word:2"}, {"verify": "none", "threshold": 0.5}],
)
def test_minhash_build_and_adds_agree_with_dedup(tmp_path, options):
    ids, texts, stamps = corpus(11)
    # Exact duplicates (after normalisation) and documents without any word join in too.
    ids += ["dup-a", "dup-b", "empty-1", "empty-2"]
    texts += [texts[0].upper() + "!", texts[0], "", "!!! ..."]
    stamps += [5, 10**7, 3, 4]
    want = dedup_groups(ids, texts, stamps, method="minhash", **options)
    assert any(size > 2 for _, _, size in want.values())
    assert len({v[0] for v in want.values()}) > 10
    us = np.array(stamps, dtype=np.int64) * 1_000_000
    with NearDupIndex.build(
        tmp_path / "bulk", ids, texts=texts, timestamps_us=us, method="minhash", **options
    ) as index:
        assert index.groups() == want
        assert index.settings.method == "minhash"
    # Added one by one and in batches, in another order: the same groups.
    with NearDupIndex.create(tmp_path / "online", method="minhash", **options) as index:
        add_in_random_batches(index, ids, texts, stamps, seed=2)
        assert index.groups() == want
    # Reopened from its cache, and with its tables rebuilt from SQLite: the same answers.
    for cache in ("kept", "dropped"):
        if cache == "dropped":
            (tmp_path / "online" / "tables.json").unlink()
        with NearDupIndex(tmp_path / "online", readonly=True) as index:
            assert index.groups() == want
            r = index.query(texts[1])
            assert r.matches and r.matches[0].similarity == pytest.approx(1.0)
            assert r.duplicate_id == want[ids[1]][0]


def test_minhash_simhash_agreement_on_light_edits(tmp_path):
    """Synthetic light edits (neardup.synth): the MinHash index finds the groups `dedup` finds
    with its defaults, and the SimHash index those of `dedup --method simhash`."""
    from neardup.quality.synth import generate

    bases = []
    for b in range(40):
        words = _text(100 + b, 60)
        bases.append(". ".join(" ".join(words[i : i + 12]).capitalize() for i in range(0, 60, 12)))
    synth = generate(bases, seed=5, per_base=3, edits="all")
    ids = [d["id"] for d in synth.docs]
    texts = [d["text"] for d in synth.docs]
    stamps = list(range(len(ids), 0, -1))  # later rows are older: originals move
    for method, options in (("minhash", {}), ("simhash", {"verify": None})):
        want = dedup_groups(ids, texts, stamps, method=method, **options)
        assert sum(size > 1 for _, _, size in want.values()) > 10
        with NearDupIndex.create(tmp_path / method, method=method) as index:
            add_in_random_batches(index, ids, texts, stamps, seed=3)
            assert index.groups() == want, method


WORDS2 = [f"w{i}" for i in range(400)]


def _text(seed: int, n: int = 30) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS2) for _ in range(n)]


def test_minhash_late_original_bridge_and_removals(tmp_path):
    """The grouping rules of the SimHash index hold for MinHash: a late older document becomes
    the original, a bridge merges groups, removals promote and split."""
    a = _text(1)
    b = a[:27] + ["x1", "x2", "x3"]  # 27 of 30 words kept: LCS resemblance 0.9
    old = a[:28] + ["z1", "z2"]
    c = [f"c{i}" for i in range(8)] + a[8:]  # 22 of 30 words of a: not a near-duplicate
    bridge = c[:4] + a[4:]  # 26 of 30 words of a, and of c
    with NearDupIndex.create(tmp_path / "idx", method="minhash") as index:
        assert index.add("a", " ".join(a), timestamp=100).status == "new"
        r = index.add("b", " ".join(b), timestamp=200)
        assert (r.status, r.duplicate_id, r.matches[0].id) == ("duplicate", "a", "a")
        assert r.matches[0].similarity == pytest.approx(0.9) and r.matches[0].distance is None
        assert r.to_dict()["matches"][0] == {
            "id": "a",
            "similarity": pytest.approx(0.9),
            "duplicate_id": "a",
            "original_id": "a",
        }
        r = index.add("old", " ".join(old), timestamp=50)
        assert (r.status, r.is_original, r.group_size) == ("duplicate", True, 3)
        assert index.get("a").duplicate_id == "old" and index.get("b").original_id == "old"
        assert index.add("c", " ".join(c), timestamp=10).status == "new"
        q = index.query(" ".join(bridge))
        assert (q.status, q.duplicate_id) == ("duplicate", "c")  # the earliest original
        r = index.add("bridge", " ".join(bridge), timestamp=300)
        assert (r.duplicate_id, r.group_size) == ("c", 5)
        assert {v[0] for v in index.groups().values()} == {"c"}
        index.remove("bridge")
        assert index.get("c").group_size == 1 and index.get("a").duplicate_id == "old"
        index.remove("old")
        assert index.get("b").duplicate_id == "a" and index.get("a").group_size == 2


def test_minhash_settings_are_stored_and_other_requests_refused(tmp_path):
    path = tmp_path / "idx"
    with NearDupIndex.create(path, method="minhash", threshold=0.7, num_perm=64) as index:
        index.add("a", "some text about an index that stores texts")
    with NearDupIndex(path) as index:
        s = index.settings
        assert (s.method, s.shingle, s.num_perm, s.threshold, s.verify_measure, s.verify) == (
            "minhash",
            "char:4",
            64,
            0.7,
            "lcs",
            0.7,
        )
        assert index.hamming_k is None and index.stats()["bands"] == s.bands
        with pytest.raises(ValueError, match="MinHash index: probe it with texts"):
            index.query(fingerprint=5)
        with pytest.raises(ValueError, match="hamming_k applies to SimHash"):
            index.query("some text", hamming_k=2)
        with pytest.raises(ValueError, match="is a minhash index .*--method minhash"):
            index.check_method("simhash")
        with pytest.raises(ValueError, match="MinHash index: probe it with texts"):
            index.add("b", fingerprint=7)
        assert len(index) == 1
    with pytest.raises(ValueError, match="hamming_k applies to method simhash"):
        NearDupIndex.create(tmp_path / "bad", method="minhash", hamming_k=3)
    with pytest.raises(ValueError, match="num_perm applies to method minhash"):
        NearDupIndex.create(tmp_path / "bad2", num_perm=64, method="simhash")
    with pytest.raises(ValueError, match="MinHash index is built from texts"):
        NearDupIndex.build(
            tmp_path / "bad3", ["a"], fingerprints=np.array([1], np.uint64), method="minhash"
        )


def test_minhash_index_records_its_scheme(tmp_path):
    with NearDupIndex.create(tmp_path / "new", method="minhash") as index:
        assert index.settings.scheme == "oph" and index.stats()["scheme"] == "oph"
    with NearDupIndex(tmp_path / "new") as index:
        assert index.settings.scheme == "oph"
    with NearDupIndex.create(tmp_path / "classic", method="minhash", scheme="classic") as index:
        assert "--scheme classic" in describe_settings(index.settings)
    with NearDupIndex(tmp_path / "classic") as index:
        assert index.settings.scheme == "classic"
    with pytest.raises(ValueError, match="scheme applies to method minhash"):
        NearDupIndex.create(tmp_path / "bad", scheme="classic", method="simhash")


def test_minhash_index_without_scheme_record_answers_as_before(tmp_path):
    """MinHash indexes written before schemes were recorded have no `scheme` in meta: their
    band tables hold classic signatures' keys, and they keep answering with that scheme."""
    import sqlite3

    ids, texts, stamps = corpus(11)
    path = tmp_path / "idx"
    us = np.array(stamps, dtype=np.int64) * 1_000_000
    with NearDupIndex.build(
        path, ids, texts=texts, timestamps_us=us, method="minhash", scheme="classic"
    ) as index:
        before = [index.query(t).to_dict() for t in texts]
    conn = sqlite3.connect(path / "index.sqlite")
    conn.execute("DELETE FROM meta WHERE key = 'scheme'")
    conn.commit()
    conn.close()
    with NearDupIndex(path, readonly=True) as index:
        assert index.settings.scheme == "classic"
        assert [index.query(t).to_dict() for t in texts] == before
    assert sum(r["status"] == "duplicate" for r in before) > len(texts) // 2


def test_index_without_method_record_is_simhash(tmp_path):
    """Indexes written before MinHash indexes existed have no `method` in meta: SimHash."""
    import sqlite3

    path = tmp_path / "idx"
    with NearDupIndex.create(path, hamming_k=2, method="simhash") as index:
        index.add("a", fingerprint=3)
    conn = sqlite3.connect(path / "index.sqlite")
    conn.execute("DELETE FROM meta WHERE key = 'method'")
    conn.commit()
    conn.close()
    with NearDupIndex(path) as index:
        assert index.method == "simhash" and index.hamming_k == 2
        assert index.query(fingerprint=1).matches[0].id == "a"


def test_cli_minhash_build_add_query_and_refusals(tmp_path):
    import pandas as pd

    from neardup.cli.index import index as index_cmd

    ids, texts, stamps = corpus(3, n_base=8, variants=2)
    docs = tmp_path / "docs.jsonl"
    with open(docs, "w") as fh:
        for i, t, s in zip(ids, texts, stamps):
            fh.write(json.dumps({"id": i, "text": t, "ts": s}) + "\n")
    more = tmp_path / "more.jsonl"
    more.write_text(
        json.dumps({"id": "late", "text": texts[0] + " again", "ts": -5})
        + "\n"
        + json.dumps({"id": "fresh", "text": "nothing like the others", "ts": 9})
        + "\n"
    )
    d = str(tmp_path / "idx")
    r = _invoke(
        index_cmd,
        [
            "build",
            str(docs),
            "-d",
            d,
            "--time-field",
            "ts",
            "--method",
            "minhash",
            "--workers",
            "1",
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    with NearDupIndex(d, readonly=True) as index:
        assert index.groups() == dedup_groups(ids, texts, stamps, method="minhash")
    out = tmp_path / "dec.tsv"
    r = _invoke(
        index_cmd,
        [
            "add",
            str(more),
            "-d",
            d,
            "--time-field",
            "ts",
            "-o",
            str(out),
            "--method",
            "minhash",
            "--workers",
            "1",
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    dec = pd.read_csv(out, sep="\t")
    assert dec.status.tolist() == ["duplicate", "new"] and "similarity" in dec.columns
    assert dec.similarity[0] > 0.8
    r = _invoke(index_cmd, ["query", "-d", d, texts[0]])
    assert r.exit_code == 0 and "similarity\tid" in r.output and "duplicate_id late" in r.output
    assert "fingerprint" not in r.output  # a MinHash probe is a signature, not a fingerprint
    # The decisions write similarities to 6 decimals, as PAIRS does.
    header, first = out.read_text().splitlines()[:2]
    similarity = dict(zip(header.split("\t"), first.split("\t")))["similarity"]
    assert 0.8 < float(similarity) < 1 and len(similarity.split(".")[1]) <= 6
    r = _invoke(index_cmd, ["query", "-d", d, "--json", texts[0]])
    assert json.loads(r.output)["matches"][0]["similarity"] == 1.0
    batch_out = tmp_path / "q.tsv"
    r = _invoke(
        index_cmd, ["query-batch", str(more), "-d", d, "-o", str(batch_out), "--workers", "1", "-q"]
    )
    assert r.exit_code == 0, r.output
    assert pd.read_csv(batch_out, sep="\t").match_count.tolist()[0] >= 2
    # Other settings or another method are refused, with the index's settings named.
    r = _invoke(index_cmd, ["query", "-d", d, "--method", "simhash", "x"])
    assert r.exit_code == 1 and "--method minhash --shingle char:4" in r.output
    r = _invoke(index_cmd, ["query", "-d", d, "--fingerprint", "00000000000000ff"])
    assert r.exit_code == 1 and "probe it with texts" in r.output
    r = _invoke(index_cmd, ["create", "-d", str(tmp_path / "x"), "--method", "minhash", "-k", "3"])
    assert r.exit_code == 1 and "--hamming-k applies to method simhash" in r.output
    simhash = ["--method", "simhash"]
    r = _invoke(index_cmd, ["create", "-d", str(tmp_path / "y"), *simhash, "--num-perm", "64"])
    assert r.exit_code == 1 and "--num-perm applies to method minhash" in r.output
    r = _invoke(index_cmd, ["create", "-d", str(tmp_path / "z"), *simhash, "--verify", "lcs:0.8"])
    assert r.exit_code == 1 and "--verify applies to method minhash" in r.output
    assert not (tmp_path / "z").exists()
    r = _invoke(
        index_cmd,
        [
            "create",
            "-d",
            str(tmp_path / "z"),
            "--method",
            "minhash",
            "--verify",
            "jaccard:0.7",
            "--bands",
            "16",
            "--rows",
            "8",
        ],
    )
    assert r.exit_code == 0 and "--bands 16 --rows 8 --verify jaccard:0.7" in r.output


def test_minhash_reader_sees_writer_adds_and_removals(tmp_path):
    path = tmp_path / "idx"
    page = "a page about the index and the crawler that asks it questions all day long"
    with (
        NearDupIndex.create(path, method="minhash") as writer,
        NearDupIndex(path, readonly=True) as reader,
    ):
        assert reader.query(page).status == "new"
        writer.add("a", page, timestamp=5)
        writer.add_many(
            [f"n{i}" for i in range(300)], [f"note {i} of {i % 13}" for i in range(300)]
        )
        r = reader.query(page + "!")
        assert (r.status, r.duplicate_id, r.matches[0].similarity) == ("duplicate", "a", 1.0)
        assert len(reader) == 301
        writer.remove("a")
        assert reader.query(page).status == "new" and len(reader) == 300
        with pytest.raises(ReadOnlyIndexError):
            reader.add("b", page)


@HYP
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), max_size=12), min_size=2, max_size=8),
    st.sampled_from(["lcs:0.8", "lcs:0.5", "jaccard:0.6"]),
)
def test_minhash_size_bound_never_drops_a_near_duplicate(docs, verify):
    from neardup.index.minhash import pair_similarity, size_bound, verification_data
    from neardup.settings import Settings

    settings = Settings(method="minhash", shingle="word:1", verify=verify)
    texts = [" ".join(d) for d in docs]
    offsets, values = verification_data(texts, settings)
    a, b = np.triu_indices(len(texts), 1)
    sizes = np.diff(offsets)
    sim = pair_similarity(offsets, values, a, b, settings)
    ruled_out = ~size_bound(sizes[a], sizes[b], settings)
    assert not np.any(sim[ruled_out] >= settings.verify)


def test_minhash_data_cache_is_bounded_and_least_recently_used():
    from neardup.index.minhash import DataCache

    loads: list[list[int]] = []

    def load(positions):
        loads.append(positions)
        sizes = [p % 3 + 1 for p in positions]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return offsets, np.concatenate([np.full(s, p, np.uint64) for p, s in zip(positions, sizes)])

    cache = DataCache(max_values=6)
    offsets, values = cache.rows([1, 2], load)  # 2 + 3 values
    assert values.tolist() == [1, 1, 2, 2, 2] and offsets.tolist() == [0, 2, 5]
    cache.rows([2, 1], load)
    assert loads == [[1, 2]]  # both cached
    cache.rows([3], load)  # 1 value: 6 in all
    cache.rows([4], load)  # 2 more: the least recently used (2) goes
    assert len(cache) == 3 and cache.rows([2], load)[1].tolist() == [2, 2, 2]
    assert loads[-1] == [2]


def _bridged_clusters(rng: np.random.Generator) -> tuple[list[str], list[str], np.ndarray]:
    """Two clusters of 300 template copies (X, Y: LCS resemblance at most 0.79, under the 0.8
    threshold) and a bridge Z near both (about 0.86 to X, 0.88 to Y): one group of 601 while
    Z is stored.
    Y's documents are the earliest, so a probe like Z would join Y's original."""
    # Words of disjoint alphabets, so that a replaced word shares no character with the
    # original (the LCS counts characters here): X and Y 330 of 420 characters apart.
    letters = np.array(list("abcdefghijklm")), np.array(list("nopqrstuvwxyz"))
    a = ["".join(rng.choice(letters[0], 6)) for _ in range(60)]
    y = a[:]
    y[:15] = ["".join(rng.choice(letters[1], 6)) for _ in range(15)]
    z = y[:8] + a[8:]
    texts, ids = [], []
    for name, base in (("x", a), ("y", y)):
        for i in range(300):
            t = base[:]
            t[int(rng.integers(15, 60))] = f"{i:06d}"
            texts.append(" ".join(t))
            ids.append(f"{name}{i:03d}")
    texts.append(" ".join(z))
    ids.append("z")
    stamps = np.concatenate([np.arange(300) + 1000, np.arange(300), [5000]]) * 1_000_000
    return ids, texts, stamps


def test_minhash_large_candidate_sets_verify_each_group_until_limit_matches(tmp_path):
    """A probe with hundreds of candidates in one group verifies only until ``limit`` match:
    the status, duplicate ID and original are those of verifying every candidate
    (``count_all``), the count is a lower bound said to be one, and every listed match is a
    true match with its exact similarity."""
    ids, texts, stamps = _bridged_clusters(np.random.default_rng(3))
    with NearDupIndex.build(
        tmp_path / "idx", ids, texts=texts, timestamps_us=stamps, method="minhash"
    ) as index:
        for probe in (texts[-1], texts[5], texts[305]):
            full = index.query(probe, count_all=True)
            assert full.match_count_exact and full.match_count >= 301  # X or Y, and Z
            every = {
                m.id: m.similarity for m in index.query(probe, count_all=True, limit=1000).matches
            }
            for limit in (0, 1, 10):
                r = index.query(probe, limit=limit)
                assert (r.status, r.duplicate_id, r.original_id) == (
                    full.status,
                    full.duplicate_id,
                    full.original_id,
                )
                assert not r.match_count_exact and max(limit, 1) <= r.match_count < full.match_count
                assert len(r.matches) == limit
                assert all(every.get(m.id) == m.similarity for m in r.matches)
        # Adds decide as the full relation does: a copy of the bridge joins Y's original.
        added = index.add("z2", texts[-1], timestamp=6000)
        assert (added.status, added.duplicate_id) == ("duplicate", "y000")
        assert not added.match_count_exact and added.group_size == 602


def test_count_all_through_the_cli_and_the_service(tmp_path):
    """``index query --count-all`` and the service's ``count_all`` verify every candidate; by
    default a large cluster's count is a lower bound, said so in the JSON, the text output
    ("+") and the query-batch table."""
    from fastapi.testclient import TestClient

    from neardup.cli.index import index as index_cmd
    from neardup.index.service import create_app

    ids, texts, stamps = _bridged_clusters(np.random.default_rng(5))
    path = tmp_path / "idx"
    NearDupIndex.build(path, ids, texts=texts, timestamps_us=stamps, method="minhash").close()
    probe = texts[5]  # an X copy: 301 matches in one group
    counts = {}
    for extra in ([], ["--count-all"]):
        out = _invoke(index_cmd, ["query", "-d", str(path), "--json", probe, *extra]).output
        counts[bool(extra)] = (json.loads(out)["match_count"], json.loads(out)["match_count_exact"])
    assert (
        counts == {True: (301, True), False: (counts[False][0], False)} and counts[False][0] < 301
    )
    assert (
        " matches 301  "
        in _invoke(index_cmd, ["query", "-d", str(path), "--count-all", probe]).output
    )
    first = _invoke(index_cmd, ["query", "-d", str(path), probe]).output.splitlines()[0]
    assert f" matches {counts[False][0]}+  " in first
    probes = tmp_path / "probes.jsonl"
    probes.write_text(json.dumps({"id": "p", "text": probe}) + "\n")
    for extra, want in (([], "False"), (["--count-all"], "True")):
        _invoke(
            index_cmd,
            [
                "query-batch",
                str(probes),
                "-d",
                str(path),
                "-o",
                str(tmp_path / "o.tsv"),
                "-q",
                *extra,
            ],
        )
        header, row = (tmp_path / "o.tsv").read_text().splitlines()
        assert (
            dict(zip(header.split("\t"), row.split("\t")))["match_count_exact"].lower()
            == want.lower()
        )
    with NearDupIndex(path, readonly=True) as index:
        client = TestClient(create_app(index))
        for body, want in (({"text": probe}, False), ({"text": probe, "count_all": True}, True)):
            got = client.post("/v1/query", json=body).json()
            assert got["match_count_exact"] is want and (got["match_count"] == 301) is want


def test_minhash_group_labels_are_read_again_after_a_removal_splits_a_group(tmp_path):
    """Removing the bridge splits the group in two: the writer and a reader that read the
    labels before then answer as an index built without it (without reading the labels
    again, both clusters would count as one group and only X's, ranked first, be verified)."""
    ids, texts, stamps = _bridged_clusters(np.random.default_rng(4))
    probe = texts[-1]
    path = tmp_path / "idx"
    NearDupIndex.build(path, ids, texts=texts, timestamps_us=stamps, method="minhash").close()
    with NearDupIndex(path) as writer, NearDupIndex(path, readonly=True) as reader:
        for index in (writer, reader):
            index.warm_up()
            assert index.query(probe).duplicate_id == "y000"
        writer.remove("z")
        writer.add("late", "an unrelated page", timestamp=1)  # the reader sees a new row too
        with NearDupIndex.build(
            tmp_path / "fresh",
            ids[:-1],
            texts=texts[:-1],
            timestamps_us=stamps[:-1],
            method="minhash",
        ) as fresh:
            want = fresh.query(probe, count_all=True)
        assert want.status == "duplicate" and want.duplicate_id in ("x000", "y000")
        for index in (writer, reader):
            got = index.query(probe)
            assert (got.duplicate_id, got.original_id) == (want.duplicate_id, want.original_id)


def test_minhash_large_match_sets_list_as_the_one_round_trip_does(tmp_path):
    """More than 512 matches (a popular template, ties included) are described from each
    group read once and the IDs of the best-ranked only: the same original and the same
    first matches, at every limit, as reading every match's row."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)]
    template = [str(w) for w in rng.choice(words, 60)]
    texts = []
    for i in range(700):
        t = list(template)
        if i % 3:  # a third are exact copies: many ties at similarity 1
            t[int(rng.integers(60))] = f"slot{i}"
        texts.append(" ".join(t))
    ids = [f"t{(i * 37) % 700:03d}" for i in range(700)]  # IDs out of position order
    stamps = rng.integers(0, 10**9, 700) * 1_000_000
    with NearDupIndex.build(
        tmp_path / "idx", ids, texts=texts, timestamps_us=stamps, method="minhash"
    ) as index:
        matcher = index._matcher
        probes = matcher.prepare([" ".join(template), texts[5]], None)
        parts, complete = matcher.stored(probes)
        assert complete.all()
        for p, d in parts:
            assert p.size > 512
            groups = matcher.group_info(p)
            best = min(((g[3], g[1]), g[2]) for g in groups.values())[1]
            for limit in (0, 1, 10, 300, 1000):
                assert (best, matcher.ranked_top(p, d, limit)) == matcher.small_match_set(
                    p, d, limit
                )


def test_cached_summaries_of_older_lcs_units_are_not_used(tmp_path):
    """A cache whose summaries predate the eojeol units (Korean sketches then counted
    characters, which do not bound an eojeol measure) is rebuilt, not used."""
    base = "이 패키지는 데비안 시스템에서 오디오 파일을 쉽게 변환하는 도구를 제공합니다"
    texts = [base, base.replace("오디오", "비디오"), "전혀 다른 내용의 문서 하나"]
    path = tmp_path / "idx"
    NearDupIndex.build(path, ["a", "b", "c"], texts=texts, method="minhash")
    with NearDupIndex(path, readonly=True) as index:
        assert index.stats()["opened_from"] == "cache"
        assert index.get("b").duplicate_id == "a"
    manifest = json.loads((path / "tables.json").read_text())
    assert manifest["units"] == 2 and manifest["summaries"]
    del manifest["units"]  # as an index cached before Korean counted eojeol
    (path / "tables.json").write_text(json.dumps(manifest))
    with NearDupIndex(path, readonly=True) as index:
        assert index.stats()["opened_from"] == "rebuilt"
        assert "older LCS units" in index.stats()["open_detail"]
        assert index.query(base.replace("쉽게", "빠르게")).matches[0].id == "a"
