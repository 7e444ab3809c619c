"""Tests for neardup.index.minhash, neardup.index.lcs_bound and neardup.index.verifier: the LCS
upper bound against the exact measure (it must never drop a near-duplicate), the candidate
verifier against verifying every candidate, the stored texts, and the band tables against brute
force."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.index.lcs_bound import SKETCH_BITS, lcs_upper_bounds, unit_sketches
from neardup.index.minhash import (
    BandTables,
    concat_data,
    data_sizes,
    decode_text,
    encode_texts,
    pair_similarity,
    take_data,
    verification_data,
    verify_threshold,
)
from neardup.index.verifier import CandidateVerifier
from neardup.lcs import resemblance_reference
from neardup.settings import Settings

HYP = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])

_MUL = 0x9E3779B97F4A7C15


def bucket(unit: int) -> int:
    """The sketch bucket of a unit, computed in Python (independent of the kernel)."""
    return ((unit * _MUL) % 2**64) >> (64 - 9)


def csr(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum([len(s) for s in seqs], out=offsets[1:])
    return offsets, np.array([u for s in seqs for u in s], np.uint64)


def colliding_units(count: int, seed: int = 0) -> list[int]:
    """Distinct units that all fall in one sketch bucket: the sketch cannot tell them apart."""
    rng = np.random.default_rng(seed)
    target = None
    out: list[int] = []
    while len(out) < count:
        u = int(rng.integers(0, 2**63))
        if target is None:
            target = bucket(u)
        if bucket(u) == target:
            out.append(u)
    return out


# Sequences over a few units, some of which collide in the sketch, so that common units,
# repeats, reorderings and bucket collisions all occur.
# (No unit with the top two bits set: that marks the last character of a Korean word, whose
# texts the sketches do not bound; tests/test_eojeol.py covers those.)
_POOL = colliding_units(4) + [1, 2, 3, 2**63 + 7, 2**63 - 1]
sequences = st.lists(st.sampled_from(_POOL), max_size=14)
thresholds = st.one_of(
    st.sampled_from([0.5, 0.6, 2 / 3, 0.75, 0.8, 0.9, 1.0]), st.floats(0.01, 1.0)
)


def test_unit_sketches_set_the_bucket_of_every_unit():
    seqs = [[1, 2, 3, 2**63 - 1], [], colliding_units(5)]
    sketches = unit_sketches(*csr(seqs))
    assert sketches.shape == (3, SKETCH_BITS // 64)
    for seq, row in zip(seqs, sketches):
        bits = {w * 64 + b for w in range(row.shape[0]) for b in range(64) if int(row[w]) >> b & 1}
        assert bits == {bucket(u) for u in seq}
    assert unit_sketches(*csr(seqs), rows=np.array([2, 0])).tolist() == sketches[[2, 0]].tolist()


@HYP
@given(st.lists(sequences, min_size=2, max_size=6), thresholds, st.randoms())
def test_lcs_upper_bound_never_drops_a_pair_that_reaches_the_threshold(seqs, threshold, rnd):
    """Against the textbook LCS: a value below the threshold bounds the resemblance, so every
    pair at or above it is kept, whether the other document's sketch is known or not."""
    offsets, values = csr(seqs)
    n = len(seqs)
    a = np.array([rnd.randrange(n) for _ in range(12)], np.int64)
    b = np.array([rnd.randrange(n) for _ in range(12)], np.int64)
    known = np.array([rnd.random() < 0.8 for _ in range(12)])
    sketch_of = np.where(known, b, -1)
    bound = lcs_upper_bounds(
        offsets,
        values,
        a,
        np.diff(offsets)[b],
        unit_sketches(offsets, values),
        sketch_of,
        threshold,
    )
    for p in range(a.shape[0]):
        exact = resemblance_reference(seqs[a[p]], seqs[b[p]])
        if bound[p] < threshold:
            assert exact <= bound[p] + 1e-12 and exact < threshold
        if exact >= threshold:
            assert bound[p] >= threshold


@pytest.mark.parametrize("threshold", [0.8, 0.5, 1.0])
def test_lcs_upper_bound_on_adversarial_pairs(threshold):
    shared = colliding_units(12, seed=1)
    other = colliding_units(12, seed=2)
    cases = [
        (shared, shared),  # identical: resemblance 1
        (shared, shared[::-1]),  # same units, reversed: LCS 1, bound keeps it
        (shared, other),  # no unit shared, every bucket shared
        (shared[:10], shared[:8]),  # at the length bound exactly (0.8)
        (shared[:5], shared[:4]),  # 4 / 5 = 0.8 exactly
        (shared[:4] + [1], shared[:4] + [2]),  # one unit apart, in different buckets
        ([], []),  # two empty texts are identical
        ([], [1]),
        ([1] * 10, [1] * 8 + [2] * 2),  # repeats
    ]
    offsets, values = csr([s for pair in cases for s in pair])
    a = np.arange(0, 2 * len(cases), 2)
    b = a + 1
    sketches = unit_sketches(offsets, values)
    bound = lcs_upper_bounds(offsets, values, a, np.diff(offsets)[b], sketches, b, threshold)
    for p, (x, y) in enumerate(cases):
        exact = resemblance_reference(x, y)
        assert bound[p] >= threshold or exact < threshold, (x, y)
        assert bound[p] >= threshold or exact <= bound[p]
    # Units absent from the other text and in buckets it does not hold are ruled out.
    x = [10**6 + i for i in range(10)]
    y = x[:7] + [u for u in range(10**7, 10**7 + 5000) if bucket(u) not in map(bucket, x)][:3]
    offsets, values = csr([x, y])
    far = lcs_upper_bounds(
        offsets,
        values,
        np.array([0]),
        np.array([10]),
        unit_sketches(offsets, values),
        np.array([1]),
        0.8,
    )
    assert far[0] == pytest.approx(0.7)


@HYP
@given(
    st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12), min_size=2, max_size=7),
    st.sampled_from(["lcs:0.8", "lcs:0.5", "jaccard:0.6", "none"]),
)
def test_screened_pair_similarity_passes_the_same_pairs(docs, verify):
    settings = Settings(
        method="minhash", shingle="word:1", verify=verify, threshold=0.5, num_perm=16
    )
    texts = [" ".join(d) for d in docs]
    offsets, values = verification_data(texts, settings)
    a, b = np.triu_indices(len(texts), 1)
    a, b = np.concatenate([a, b]), np.concatenate([b, a])
    screened = pair_similarity(offsets, values, a, b, settings)
    plain = pair_similarity(offsets, values, a, b, settings, screen=False)
    threshold = verify_threshold(settings)
    assert np.array_equal(screened >= threshold, plain >= threshold)
    passing = plain >= threshold
    assert np.array_equal(screened[passing], plain[passing])


def test_pair_similarity_over_threads_gives_the_same_values():
    settings = Settings(method="minhash")
    texts = _corpus(3, n=80)
    offsets, values = verification_data(texts, settings)
    a, b = np.triu_indices(len(texts), 1)  # 3,160 pairs: enough to be spread over threads
    one = pair_similarity(offsets, values, a, b, settings, screen=False)
    two = pair_similarity(offsets, values, a, b, settings, screen=False, workers=2)
    assert np.array_equal(one, two) and (one >= 0.8).sum() > 10
    passing = one >= 0.8
    screened = pair_similarity(offsets, values, a, b, settings, workers=2)
    assert np.array_equal(screened >= 0.8, passing)
    assert np.array_equal(screened[passing], one[passing])


def _corpus(seed: int, n: int = 40) -> list[str]:
    """Texts with near-duplicates (a few words changed), exact copies, and unrelated texts
    sharing frequent words, so that candidates both pass and fail."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)] + ["the", "a", "of"] * 20
    texts = []
    for _ in range(n):
        base = texts[int(rng.integers(len(texts)))].split() if texts else []
        if base and rng.random() < 0.4:
            for _ in range(int(rng.integers(0, 4))):
                base[int(rng.integers(len(base)))] = str(rng.choice(words))
            texts.append(" ".join(base))
        else:
            texts.append(" ".join(rng.choice(words, int(rng.integers(0, 30)))))
    return texts


@pytest.mark.parametrize(
    "options",
    [{}, {"verify": "lcs:0.6"}, {"verify": "jaccard:0.5"}, {"verify": "none", "threshold": 0.5}],
)
def test_candidate_verifier_passes_what_verifying_every_candidate_passes(options):
    settings = Settings(method="minhash", shingle="word:1", num_perm=32, **options)
    stored = _corpus(1)
    reads: list[int] = []

    def read_texts(positions):
        reads.extend(positions.tolist())
        return [stored[p] for p in positions]

    # A small cache: rows are evicted and read again.
    verifier = CandidateVerifier(
        settings,
        lambda ps: data_sizes([stored[p] for p in ps], settings),
        read_texts,
        max_values=60,
        workers=2,
    )
    verifier.record(np.arange(10), verification_data(stored[:10], settings))
    threshold = verify_threshold(settings)
    rng = np.random.default_rng(2)
    for round_ in range(4):
        source = int(rng.integers(len(stored)))
        probes = _corpus(10 + round_, n=6) + [stored[source]]
        qi = np.repeat(np.arange(len(probes)), len(stored))
        pos = np.tile(np.arange(len(stored)), len(probes))
        pick = (rng.random(qi.shape[0]) < 0.7) | ((qi == len(probes) - 1) & (pos == source))
        qi, pos = qi[pick], pos[pick]
        probe_data = verification_data(probes, settings)
        *got, cut = verifier.matches(probe_data, qi, pos)
        assert not cut.any()
        offsets, values = verification_data(probes + stored, settings)
        sim = pair_similarity(offsets, values, qi, len(probes) + pos, settings, screen=False)
        ok = sim >= threshold
        assert ok.any() and not ok.all()
        assert [x.tolist() for x in got] == [qi[ok].tolist(), pos[ok].tolist(), sim[ok].tolist()]
    if verifier.sketched:
        # Texts are read only for candidates the sizes and sketches left.
        assert len(reads) < 4 * len(stored)
    assert verifier.nbytes > 0


@pytest.mark.parametrize("enough", [1, 2, 5])
def test_candidate_verifier_by_group_finds_every_matched_group_and_is_complete_unless_cut(enough):
    """With group labels, each (probe, group) gets min(enough, its true matches) matches at
    least, every pair returned is a true match with its exact value, and a probe not cut short
    gets all its true matches: against verifying every candidate, over random labels (one
    group, singletons, a few groups) and clusters of copies."""
    settings = Settings(method="minhash", shingle="word:1", num_perm=32)
    rng = np.random.default_rng(enough)
    base = _corpus(3, n=12)
    # Clusters of light edits (many true matches per group) beside unrelated texts.
    stored = [t.replace(t.split()[0], w, 1) if t.split() else t for t in base[:4] for w in "xyz"]
    stored += _corpus(4, n=30)
    probes = base[:4] + _corpus(5, n=3)
    threshold = verify_threshold(settings)
    offsets, values = verification_data(probes + stored, settings)
    for labels in (
        np.zeros(len(stored), np.int64),
        np.arange(len(stored)),
        rng.integers(0, 4, len(stored)),
    ):
        verifier = CandidateVerifier(
            settings,
            lambda ps: data_sizes([stored[p] for p in ps], settings),
            lambda ps: [stored[p] for p in ps],
        )
        qi = np.repeat(np.arange(len(probes)), len(stored))
        pos = np.tile(np.arange(len(stored)), len(probes))
        batch = verifier.matches(verification_data(probes, settings), qi, pos, labels[pos], enough)
        # One probe at a time takes the other path (grouping before the bounds).
        alone = [
            verifier.matches(
                verification_data([probe], settings),
                np.zeros(len(stored), np.int64),
                np.arange(len(stored)),
                labels,
                enough,
            )
            for probe in probes
        ]
        single = (
            np.concatenate([np.full(r[0].shape[0], q) for q, r in enumerate(alone)]),
            np.concatenate([r[1] for r in alone]),
            np.concatenate([r[2] for r in alone]),
            np.concatenate([r[3] for r in alone]),
        )
        sim = pair_similarity(offsets, values, qi, len(probes) + pos, settings, screen=False)
        true = {(int(q), int(p)): float(v) for q, p, v in zip(qi, pos, sim) if v >= threshold}
        for gq, gp, gs, cut in (batch, single):
            got = {(int(q), int(p)): float(v) for q, p, v in zip(gq, gp, gs)}
            assert all(true.get(k) == v for k, v in got.items())
            for q in range(len(probes)):
                mine = {p for (a, p) in true if a == q}
                if not cut[q]:
                    assert {p for (a, p) in got if a == q} == mine
                for label in set(labels[list(mine)].tolist()):
                    in_group = {p for p in mine if labels[p] == label}
                    found = {p for (a, p) in got if a == q and labels[p] == label}
                    assert len(found) >= min(enough, len(in_group))
        if enough == 1 and not labels.any():
            # One group holding several true matches of a probe: verification stopped early.
            assert batch[3].any() and single[3].any()


def test_candidate_verifier_with_cached_summaries_reads_only_what_the_count_bound_leaves(tmp_path):
    """With the summaries of a cache (sizes, sketches in memory, count sketches mapped from
    a file), the outcome equals verifying every candidate, and a text is read only for a
    candidate that passes the count bound (dedup's filter); documents added later have their
    count sketches in memory until :meth:`map_counts` reads them from a newer cache."""
    from neardup.index.cache import MappedRows
    from neardup.index.verifier import summarize
    from neardup.lcs import count_sketches, possible_pairs

    settings = Settings(method="minhash", shingle="word:1", num_perm=32)
    stored = [""] + _corpus(6, n=40)  # position 0 unused, as in an index
    reads: list[int] = []
    summaries = summarize(stored[1:], settings)
    np.save(tmp_path / "counts.npy", summaries["counts"])
    verifier = CandidateVerifier(
        settings,
        lambda ps: data_sizes([stored[p] for p in ps], settings),
        lambda ps: reads.extend(ps.tolist()) or [stored[p] for p in ps],
    )
    verifier.load_summaries(
        summaries["sizes"], summaries["sketches"], MappedRows(tmp_path / "counts.npy")
    )
    probes = [stored[3], stored[9] + " extra words here", *_corpus(7, n=4)]
    qi = np.repeat(np.arange(len(probes)), len(stored) - 1)
    pos = np.tile(np.arange(1, len(stored)), len(probes))
    *got, _ = verifier.matches(verification_data(probes, settings), qi, pos)
    offsets, values = verification_data(probes + stored, settings)
    sim = pair_similarity(offsets, values, qi, len(probes) + pos, settings, screen=False)
    ok = sim >= verify_threshold(settings)
    assert [x.tolist() for x in got] == [qi[ok].tolist(), pos[ok].tolist(), sim[ok].tolist()]
    counts = count_sketches(offsets, values)
    passes = possible_pairs(np.diff(offsets), counts, qi, len(probes) + pos, 0.8)
    assert set(reads) <= set(pos[passes].tolist()) and set(pos[ok].tolist()) <= set(reads)
    # A document added after the cache: its count sketch in memory, then from a newer cache.
    added = "one two three four five six seven eight nine ten"
    position = len(stored)
    stored.append(added)
    verifier.record(np.array([position]), verification_data([added], settings))
    assert verifier._late_known.tolist() == [True]
    newer = verifier.summaries(position + 1)
    assert (newer["counts"][:-1] == summaries["counts"]).all() and newer["counts"][-1].any()
    np.save(tmp_path / "newer.npy", newer["counts"])
    verifier.map_counts(MappedRows(tmp_path / "newer.npy"))
    assert verifier._late_known.size == 0
    probe = verification_data([added.replace("ten", "eleven")], settings)
    *got, _ = verifier.matches(probe, np.array([0]), np.array([position]))
    assert [x.tolist() for x in got] == [[0], [position], [0.9]]


def test_candidate_verifier_reads_a_size_once_and_no_text_of_a_ruled_out_candidate():
    settings = Settings(method="minhash")
    stored = [
        "one two three four five six seven eight nine ten",
        "one two",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa",
    ]
    asked: list[list[int]] = []
    read: list[list[int]] = []
    verifier = CandidateVerifier(
        settings,
        lambda ps: asked.append(ps.tolist()) or data_sizes([stored[p] for p in ps], settings),
        lambda ps: read.append(ps.tolist()) or [stored[p] for p in ps],
    )
    verifier.record(np.array([2]), verification_data(stored[2:], settings))
    probe = verification_data(["one two three four five six seven eight nine eleven"], settings)
    qi, pos = np.zeros(3, np.int64), np.arange(3)
    for _ in range(2):
        got = verifier.matches(probe, qi, pos)
        assert [x.tolist() for x in got] == [[0], [0], [0.9], [False]]
    assert asked == [[0, 1]]  # position 2 was recorded; sizes are kept
    assert read == [[0]]  # 1 is too short, 2's sketch rules it out; 0 is cached


def test_candidate_verifier_keeps_recurring_candidates_past_a_flood_of_new_ones():
    """A candidate compared in every call stays cached while each call brings many candidates
    met once (a popular template beside the long texts every probe meets once): it is read
    twice at most, and the outcome equals verifying every candidate."""
    settings = Settings(method="minhash")
    template = "dear customer thank you for your order number one two three of today"
    stored = [template] + [
        f"page {i} about topic {i % 7} with words {i} and {i + 1}" for i in range(400)
    ]
    reads: list[int] = []
    verifier = CandidateVerifier(
        settings,
        lambda ps: data_sizes([stored[p] for p in ps], settings),
        lambda ps: reads.extend(ps.tolist()) or [stored[p] for p in ps],
        max_values=400,
    )
    probe = [template.replace("today", "tomorrow")]
    probe_data = verification_data(probe, settings)
    for call in range(8):
        pos = np.concatenate([[0], np.arange(1 + 50 * call, 1 + 50 * (call + 1))])
        qi = np.zeros(pos.shape[0], np.int64)
        *got, _ = verifier.matches(probe_data, qi, pos)
        offsets, values = verification_data(probe + stored, settings)
        sim = pair_similarity(offsets, values, qi, 1 + pos, settings, screen=False)
        ok = sim >= verify_threshold(settings)
        assert [x.tolist() for x in got] == [qi[ok].tolist(), pos[ok].tolist(), sim[ok].tolist()]
    assert reads.count(0) <= 2 and verifier.cache.values + verifier.recent.values <= 400


@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=5), max_size=6), st.randoms())
def test_take_and_concat_data_rows(seqs, rnd):
    data = csr(seqs)
    rows = [rnd.randrange(len(seqs)) for _ in range(rnd.randrange(8))] if seqs else []
    offsets, values = take_data(data, rows)
    assert [values[offsets[i] : offsets[i + 1]].tolist() for i in range(len(rows))] == [
        seqs[r] for r in rows
    ]
    offsets, values = concat_data([data, (offsets, values)])
    got = [values[offsets[i] : offsets[i + 1]].tolist() for i in range(offsets.shape[0] - 1)]
    assert got == seqs + [seqs[r] for r in rows] and values.dtype == np.uint64


def test_every_flipped_bit_of_a_stored_text_is_caught_on_read():
    """Each text carries a checksum: a single flipped bit anywhere in its stored form gives
    the text unchanged or a ValueError, never another text."""
    rng = np.random.default_rng(4)
    words = [f"word{i}" for i in range(2000)]
    texts = [" ".join(rng.choice(words, 25)), "héllo wörld " * 30, "한국어 텍스트 하나"]
    for text, blob in zip(texts, encode_texts(texts)):
        for bit in range(len(blob) * 8):
            damaged = bytearray(blob)
            damaged[bit // 8] ^= 1 << (bit % 8)
            try:
                assert decode_text(bytes(damaged)) == text, (text, bit)
            except ValueError as error:
                assert "a stored text is damaged" in str(error)


def test_stored_texts_round_trip_and_damage_is_reported():
    texts = ["héllo wörld", "", "한국어 텍스트", "\ud800 lone surrogate"]
    assert [decode_text(b) for b in encode_texts(texts)] == texts
    with pytest.raises(ValueError, match="a stored text is damaged"):
        decode_text(b"not zstd")
    # One decompressor per thread: decoding from many threads at once stays correct.
    blobs = encode_texts([f"text {i} " * (i + 1) for i in range(50)])
    bad: list[int] = []

    def work():
        for i, blob in enumerate(blobs * 4):
            if decode_text(blob) != f"text {i % 50} " * (i % 50 + 1):
                bad.append(i)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


@settings(deadline=None, max_examples=60)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "discard", "merge", "probe"]), st.integers(0, 2**16)),
        max_size=30,
    )
)
def test_band_tables_probe_equals_brute_force(steps):
    """Adds, discards and merges in any order, over initial tables: a probe returns every live
    position sharing a band key with the query, once, whether it is in the tables, the
    delta's sorted part or its tail."""
    rng = np.random.default_rng(len(steps))
    bands = 3
    first = rng.integers(0, 4, (6, bands)).astype(np.uint32)
    tables = BandTables(bands, positions=np.arange(6), keys=first)
    tables.TAIL_LIMIT = 4  # sort the delta's tail in often
    keys: dict[int, np.ndarray] = dict(enumerate(first))
    live: set[int] = set(range(6))
    next_pos = 6
    for op, value in steps:
        if op == "add":
            count = value % 5 + 1
            new = np.arange(next_pos, next_pos + count)
            k = rng.integers(0, 4, (count, bands)).astype(np.uint32)
            tables.add(new, k)
            keys.update({int(p): row for p, row in zip(new, k)})
            live.update(new.tolist())
            next_pos += count
        elif op == "discard" and live:
            gone = sorted(live)[value % len(live)]
            assert tables.discard(np.array([gone])) == 1
            live.discard(gone)
        elif op == "merge":
            tables.merge()
        queries = rng.integers(0, 4, (2, bands)).astype(np.uint32)
        qi, pos = tables.probe(queries)
        want = sorted((q, p) for q in range(2) for p in live if np.any(keys[p] == queries[q]))
        assert list(zip(qi.tolist(), pos.tolist())) == want


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc")
def test_mapped_rows_give_their_pages_back_after_each_take(tmp_path):
    """Rows read from all over a mapped file leave none of its pages resident in the process
    (they stay in the page cache): the count sketches cost no resident memory."""
    import re

    from neardup.index.cache import MappedRows

    rows = np.arange(16 * 4096 * 64, dtype=np.uint64).reshape(-1, 64)  # 32 MB, 8,192 pages
    np.save(tmp_path / "rows.npy", rows)
    mapped = MappedRows(tmp_path / "rows.npy")
    every_page = np.arange(0, rows.shape[0], 8)
    assert (mapped.take(every_page) == rows[every_page]).all()

    def resident_kb() -> int:
        text = Path("/proc/self/smaps").read_text()
        at = text.index(str(tmp_path / "rows.npy"))
        return int(re.search(r"^Rss:\s+(\d+) kB", text[at:], re.M).group(1))

    assert resident_kb() <= 8  # 32,768 kB were touched


def test_sort_runs_sorts_each_run_as_lexsort_does():
    """Short runs by a comparison sort, long ones (over 512) by the radix sort: each run's
    positions in order, up to the largest position (2**32 - 1), the runs left in place."""
    from neardup.index.minhash import _sort_runs

    rng = np.random.default_rng(8)
    for size, runs, top in ((0, 1, 10), (700, 1, 2**32), (5000, 3, 2**32), (3000, 40, 1000)):
        keys = np.sort(rng.integers(0, runs, size))
        values = rng.integers(0, top, size).astype(np.int64)
        values[: min(size, 2)] = 2**32 - 1
        got = values.copy()
        _sort_runs(keys, got)
        assert got.tolist() == values[np.lexsort((values, keys))].tolist()


def test_a_million_word_document_is_verified_in_linear_memory(tmp_path):
    """A stored 1M-word text (about 7 MiB) queried with a copy whose 50 words in the middle are
    replaced by words found nowhere else: the copy's similarity is exactly (n - 50) / n. Masks
    of ⌈n / 64⌉ words per distinct word of the pattern would take n² / 8 bytes (125 GB)."""
    from neardup.index.store import NearDupIndex

    rng = np.random.default_rng(8)
    n = 1_000_000
    words = np.array([f"w{i}" for i in range(20_000)])[rng.integers(0, 20_000, n)]
    copy = words.copy()
    copy[n // 2 : n // 2 + 50] = [f"new{i}" for i in range(50)]
    with NearDupIndex.create(tmp_path / "mh", method="minhash") as index:
        index.add("long", " ".join(words))
        result = index.query_many([" ".join(copy)])[0]
    assert result.status == "duplicate"
    assert [(m.id, m.similarity) for m in result.matches] == [("long", (n - 50) / n)]


def test_candidate_verifier_of_korean_texts_equals_verifying_every_candidate(tmp_path):
    """Korean texts are measured in eojeol, which their sizes and sketches do not bound: with
    cached summaries the verifier still passes exactly the pairs that verifying every
    candidate passes, among them one long word changed of ten (9 of 23 characters kept)."""
    from neardup.index.cache import MappedRows
    from neardup.index.verifier import summarize

    settings = Settings(method="minhash")
    base = "가 나 다 라 마 바 사 아 자 차카타파하거너더러머"
    stored = ["", base, "가 나 다 라 마 바 사 아 자 호고노도로모보소오", "다른 문서", base + " 더"]
    summaries = summarize(stored[1:], settings)
    np.save(tmp_path / "counts.npy", summaries["counts"])
    verifier = CandidateVerifier(
        settings,
        lambda ps: data_sizes([stored[p] for p in ps], settings),
        lambda ps: [stored[p] for p in ps],
    )
    verifier.load_summaries(
        summaries["sizes"], summaries["sketches"], MappedRows(tmp_path / "counts.npy")
    )
    probes = [base, "가 나 다 라 마 바 사 아 자 카"]
    qi = np.repeat(np.arange(len(probes)), len(stored) - 1)
    pos = np.tile(np.arange(1, len(stored)), len(probes))
    *got, _ = verifier.matches(verification_data(probes, settings), qi, pos)
    offsets, values = verification_data(probes + stored, settings)
    sim = pair_similarity(offsets, values, qi, len(probes) + pos, settings, screen=False)
    ok = sim >= verify_threshold(settings)
    assert [x.tolist() for x in got] == [qi[ok].tolist(), pos[ok].tolist(), sim[ok].tolist()]
    assert (0, 2) in set(zip(*got[:2], strict=True)) and (1, 1) in set(zip(*got[:2], strict=True))


def test_a_probe_past_its_room_is_exact_and_probed_at_most_twice(monkeypatch):
    """A hot template: every stored copy shares every band with every query, so the first
    call overflows its room (4,096 rows). The count it returns must be exact (its marks
    cleared), so a second call fits; once the marks of overflowed queries stayed set, later
    queries counted too few and the batch was probed hundreds of times."""
    import neardup.index.minhash as index_minhash

    rng = np.random.default_rng(5)
    bands, stored, queries = 4, 1500, 40
    keys = np.repeat(rng.integers(0, 2**32, (1, bands), dtype=np.uint32), stored, axis=0)
    keys[::7, 1] += 1  # some copies differ on a band: still one candidate each
    tables = BandTables(bands, positions=np.arange(stored), keys=keys)
    tables.add(np.arange(stored, stored + 30), keys[:30])  # a delta, its tail scanned
    tables.discard(np.arange(0, stored, 11))
    calls = []
    kernel = index_minhash._band_probe_kernel

    def counted(*args):
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(index_minhash, "_band_probe_kernel", counted)
    probe = keys[rng.integers(0, stored, queries)]
    qi, pos = tables.probe(probe)
    assert len(calls) == 2
    alive = np.setdiff1d(np.arange(stored + 30), np.arange(0, stored, 11))
    all_keys = np.concatenate([keys, keys[:30]])
    want = [(q, p) for q in range(queries) for p in alive if (all_keys[p] == probe[q]).any()]
    assert list(zip(qi.tolist(), pos.tolist())) == want
    assert not tables._seen.any()
