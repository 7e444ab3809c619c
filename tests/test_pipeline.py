import functools
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_helpers import mapped_resident_bytes
from synth_helpers import chain_corpus

from neardup import pipeline
from neardup.candidates.bands import candidate_pairs
from neardup.candidates.chunks import bound_possible, filter_slices
from neardup.engines.local import signatures_parallel
from neardup.groups import connected_components, document_order, originals_of
from neardup.lcs import lcs_pairs
from neardup.pipeline import Signatures, find_groups, signatures
from neardup.rank_directory import RowSet
from neardup.settings import Settings
from neardup.simhash import hamming_distance
from neardup.verify import jaccard_pairs


def fingerprint_signatures(fps, content=None):
    fps = np.asarray(fps, dtype=np.uint64)
    n = fps.shape[0]
    if content is None:  # every document distinct unless told otherwise
        content = np.stack([np.arange(n, dtype=np.uint64), np.ones(n, dtype=np.uint64)], axis=1)
    return Signatures(content, fps, np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))


def stamps(n):
    return np.zeros(n, dtype=np.int64)


def test_chain_components_versus_center():
    # A≈B (2 bits), B≈C (2 bits), A≉C (4 bits) with k = 2.
    sig = fingerprint_signatures([0b0000, 0b0011, 0b1111])
    components = find_groups(sig, stamps(3), Settings(method="simhash", hamming_k=2))
    assert components.original.tolist() == [0, 0, 0]
    center = find_groups(sig, stamps(3), Settings(method="simhash", hamming_k=2, grouping="center"))
    assert center.original.tolist() == [0, 0, 2]
    assert center.group_size.tolist() == [2, 2, 1]


def test_original_is_earliest_then_input_order():
    sig = fingerprint_signatures([7, 7, 7, 1 << 40])
    groups = find_groups(sig, np.array([50, 10, 10, 0]), Settings(method="simhash", hamming_k=0))
    assert groups.original.tolist() == [1, 1, 1, 3]
    assert groups.is_original.tolist() == [False, True, False, True]
    # Default pairs: an edge from the original to each other member.
    assert list(zip(groups.pair_a.tolist(), groups.pair_b.tolist())) == [(1, 0), (1, 2)]


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=60),
    st.integers(0, 6),
    st.randoms(use_true_random=False),
)
def test_all_pairs_equal_brute_force(values, k, rnd):
    # Plant near copies so that pairs exist at every distance.
    fps = list(values)
    for v in values[:10]:
        flipped = v
        for bit in rnd.sample(range(64), rnd.randint(0, k + 1)):
            flipped ^= 1 << bit
        fps.append(flipped)
    sig = fingerprint_signatures(fps)
    groups = find_groups(
        sig, stamps(len(fps)), Settings(method="simhash", hamming_k=k, pairs="all")
    )
    arr = np.asarray(fps, dtype=np.uint64)
    dist = hamming_distance(arr[:, None], arr[None, :])
    i, j = np.nonzero(np.triu(dist <= k, 1))
    assert sorted(zip(groups.pair_a.tolist(), groups.pair_b.tolist())) == sorted(
        zip(i.tolist(), j.tolist())
    )
    assert (groups.pair_value == dist[groups.pair_a, groups.pair_b]).all()
    # Components of the pairs are the groups.
    assert (groups.original[groups.pair_a] == groups.original[groups.pair_b]).all()


def test_every_document_once_and_group_sizes_consistent():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, size=50, dtype=np.int64).astype(np.uint64)
    fps = np.concatenate([base, base ^ np.uint64(1), base[:10]])
    groups = find_groups(
        fingerprint_signatures(fps), stamps(fps.shape[0]), Settings(method="simhash", hamming_k=1)
    )
    n = fps.shape[0]
    assert groups.original.shape == (n,)
    counts = np.bincount(groups.original, minlength=n)
    assert (groups.group_size == counts[groups.original]).all()
    assert groups.is_original.sum() == np.unique(groups.original).shape[0]


def test_hot_template_is_linear_not_quadratic():
    n = 20_000
    texts = ["Congratulations on your new blog! Start writing today."] * n + [
        "a different text here"
    ]
    s = Settings(method="simhash")
    sig = signatures(texts, s)
    groups = find_groups(sig, stamps(n + 1), s)
    assert groups.stats["exact_duplicates"] == n - 1
    assert groups.group_size[0] == n and groups.group_size[-1] == 1
    assert groups.pair_a.shape[0] == n - 1  # edges to the original, not n² pairs


def near_duplicate_texts():
    words = [f"w{i}" for i in range(400)]
    a = " ".join(words[:120])
    b = a.replace("w60 ", "changed ")
    c = " ".join(words[200:320])
    d = "\n".join(c.split(" ")).upper()  # same text re-wrapped and re-cased
    return [a, b, c, d, " ".join(words[330:400])]


@pytest.mark.parametrize("method", ["simhash", "minhash"])
@pytest.mark.parametrize("grouping", ["components", "center"])
def test_text_dedup_both_methods(method, grouping):
    texts = near_duplicate_texts()
    s = Settings(method=method, shingle="word:3", grouping=grouping, hamming_k=6, threshold=0.8)
    groups = find_groups(signatures(texts, s), stamps(len(texts)), s)
    assert groups.original.tolist() == [0, 0, 2, 2, 4]


def test_minhash_verification_rejects_and_counts():
    texts = near_duplicate_texts()
    for verify, measure in (("jaccard", jaccard_pairs), ("auto", lcs_pairs)):
        s = Settings(
            method="minhash", shingle="word:3", threshold=0.8, bands=64, rows=1, verify=verify
        )  # loose bands
        groups = find_groups(signatures(texts, s), stamps(len(texts)), s)
        stats = groups.stats
        assert stats["candidates"] >= stats["rejected"] + stats["linked_untested"]
        assert stats["rejected"] >= 0 and stats["linked_untested"] >= 0
        sig = signatures(texts, s)
        assert (measure(sig.set_offsets, sig.set_hashes, groups.pair_a, groups.pair_b) >= 0.8).all()


def test_simhash_with_verification_is_stricter():
    texts = near_duplicate_texts()
    loose = Settings(method="simhash", hamming_k=20)
    strict = Settings(method="simhash", hamming_k=20, verify="jaccard:0.99")
    g_loose = find_groups(signatures(texts, loose), stamps(5), loose)
    g_strict = find_groups(signatures(texts, strict), stamps(5), strict)
    assert g_strict.stats["rejected"] > 0
    assert g_strict.original.tolist() == [0, 1, 2, 2, 4]  # the re-wrapped copy is identical
    assert g_loose.stats["groups"] <= g_strict.stats["groups"]


def test_workers_do_not_change_results():
    texts = near_duplicate_texts() * 900  # several batches
    for method in ("simhash", "minhash"):
        s = Settings(method=method)
        one = signatures_parallel(texts, s, workers=1)
        two = signatures_parallel(texts, s, workers=2)
        assert np.array_equal(one.signature, two.signature)
        assert np.array_equal(one.content, two.content)
        assert np.array_equal(one.set_offsets, two.set_offsets) if s.needs_sets else True


def test_shuffled_input_gives_the_same_groups():
    texts = near_duplicate_texts() * 3
    ids = [f"d{i}" for i in range(len(texts))]
    times = np.arange(len(texts)) * 7 % 11
    s = Settings(method="simhash", hamming_k=6)

    def groups_by_id(order):
        t = [texts[i] for i in order]
        g = find_groups(signatures(t, s), times[order], s)
        return {ids[order[i]]: ids[order[g.original[i]]] for i in range(len(order))}

    order = np.arange(len(texts))
    shuffled = np.random.default_rng(1).permutation(len(texts))
    assert groups_by_id(order) == groups_by_id(shuffled)


@pytest.mark.parametrize("grouping", ["components", "center"])
def test_the_document_order_waits_parked_and_is_not_held_when_in_time_order(grouping):
    texts = near_duplicate_texts() * 3
    s = Settings(grouping=grouping)
    sig = signatures(texts, s)
    parked = []

    def park(values):
        parked.append(values.copy())
        return lambda: parked[-1]

    for times in (np.arange(len(texts)) * 7 % 11, np.zeros(len(texts), dtype=np.int64)):
        parked.clear()
        held = find_groups(sig, times, s)
        away = find_groups(sig, times, s, park=park)
        for name in ("original", "is_original", "group_size", "pair_a", "pair_b"):
            np.testing.assert_array_equal(getattr(away, name), getattr(held, name))
        if times.any():  # out of time order: the order is parked, and it is the order
            assert len(parked) == 1
            np.testing.assert_array_equal(parked[0], document_order(times))
            assert held.original.tolist() != find_groups(sig, times * 0, s).original.tolist()
        else:  # the identity: nothing held
            assert parked == []


def test_sets_built_from_texts_equal_sets_kept_in_signatures():
    texts = near_duplicate_texts() * 2
    s = Settings(method="minhash", shingle="char:5", threshold=0.7)
    kept = find_groups(signatures(texts, s), stamps(len(texts)), s)
    lazy_sig = signatures(texts, s, keep_sets=False)
    assert lazy_sig.set_offsets is None
    lazy = find_groups(lazy_sig, stamps(len(texts)), s, texts)
    assert np.array_equal(kept.original, lazy.original)
    assert np.array_equal(kept.pair_value, lazy.pair_value)
    with pytest.raises(ValueError, match="texts"):
        find_groups(lazy_sig, stamps(len(texts)), s)


# ------------------------------------------------------------------------ feature options

REPEATED = [
    "buy now buy now buy now limited offer for our readers",
    "buy now limited offer for our readers",
    "a different page about gardening and the weather in spring",
]


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_multiset_verification_is_multiset_jaccard(method):
    # word:2 sets: document 1's 6 shingles are 6 of document 0's 7, Jaccard 6/7; as multisets
    # the repeats count ("buy now" 3 times, "now buy" twice): (1 + 5) / (3 + 2 + 5) = 0.6.
    from collections import Counter

    from neardup.text import shingles

    for spec, expected_pair in (("word:2", True), ("word:2:multiset", False)):
        s = Settings(
            method=method, shingle=spec, threshold=0.6, hamming_k=32, verify=0.8, pairs="all"
        )
        groups = find_groups(signatures(REPEATED, s), stamps(3), s, REPEATED)
        assert (groups.original[1] == 0) == expected_pair, spec
    ca, cb = Counter(shingles(REPEATED[0], "word:2")), Counter(shingles(REPEATED[1], "word:2"))
    brute = sum((ca & cb).values()) / sum((ca | cb).values())
    s = Settings(
        method=method,
        shingle="word:2:multiset",
        threshold=0.5,
        hamming_k=32,
        verify=0.5,
        pairs="all",
    )
    groups = find_groups(signatures(REPEATED, s), stamps(3), s, REPEATED)
    assert brute == pytest.approx(0.6) and groups.original[1] == 0
    if method == "minhash":  # MinHash reports the verified (exact) Jaccard
        (value,) = groups.pair_value[(groups.pair_a == 0) & (groups.pair_b == 1)]
        assert value == pytest.approx(brute)


def test_feature_options_flow_through_settings_and_workers():
    texts = near_duplicate_texts() * 3
    for spec in ("word:3:multiset", "stopword:2:en", "stopword:3:ko:multiset"):
        s = Settings(method="simhash", shingle=spec)
        assert s.shingle == spec
        one = signatures_parallel(texts, s, workers=1).signature
        two = signatures_parallel(texts, s, workers=2).signature
        assert one.tolist() == two.tolist()
    with pytest.raises(ValueError, match="stopword"):
        Settings(shingle="word:3:ko")


def edited_copies(n_bases=25, copies=12, seed=3):
    """Texts in families: each base text with copies that change 1-40 % of its words (some
    pass the 0.8 LCS threshold, some are candidates that fail it)."""
    rng = np.random.default_rng(seed)
    vocab = [f"v{i}" for i in range(3000)]
    texts = []
    for _ in range(n_bases):
        base = list(rng.choice(vocab, 80))
        texts.append(" ".join(base))
        for _ in range(copies):
            words = list(base)
            for i in rng.choice(80, int(rng.integers(1, 32)), replace=False):
                words[i] = str(rng.choice(vocab))
            texts.append(" ".join(words))
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


@pytest.mark.parametrize("grouping", ["components", "center"])
@pytest.mark.parametrize("pairs", ["original", "all"])
def test_verification_in_slices_gives_the_same_groups(monkeypatch, grouping, pairs):
    texts = edited_copies()
    s = Settings(grouping=grouping, pairs=pairs, bands=40, rows=2)  # loose bands: rejections
    calls = []
    similarity = pipeline.Verification.similarity
    monkeypatch.setattr(
        pipeline.Verification,
        "similarity",
        lambda self, offsets, values, a, b, *rest, **options: (
            calls.append(a.shape[0]) or similarity(self, offsets, values, a, b, *rest, **options)
        ),
    )
    # Verification data built from the texts, measured through the memo of accepted pairs.
    sig = signatures(texts, s, keep_sets=False)
    whole = find_groups(sig, stamps(len(texts)), s, texts)
    assert whole.stats["rejected"] > 0 and whole.stats["candidates"] > 400
    assert max(calls) > 37
    calls.clear()
    # The candidates bounded, ordered and verified 37 at a time.
    sliced = find_groups(sig, stamps(len(texts)), s, texts, candidate_slice=37)
    assert max(calls) <= 37 and len(calls) > 1
    for name in ("original", "is_original", "group_size", "pair_a", "pair_b", "pair_passed"):
        assert np.array_equal(getattr(whole, name), getattr(sliced, name)), name
    np.testing.assert_array_equal(whole.pair_value, sliced.pair_value)
    assert {**whole.stats, "seconds": None} == {**sliced.stats, "seconds": None}


@pytest.mark.parametrize("grouping", ["components", "center"])
def test_candidates_ruled_out_by_length_and_sketches_change_nothing(monkeypatch, grouping):
    rng = np.random.default_rng(5)
    texts = [" ".join(t.split()[: int(rng.integers(20, 81))]) for t in edited_copies(seed=9)]
    s = Settings(grouping=grouping, bands=40, rows=2)
    lazy = signatures(texts, s, keep_sets=False)  # sets built from the texts, as out of core
    fast = find_groups(lazy, stamps(len(texts)), s, texts)
    candidates = _star_candidates(texts, s)
    by_length = bound_possible(*candidates, lazy.sizes, None, 0.8)
    by_sketch = bound_possible(*candidates, lazy.sizes, lazy.sketches, 0.8)
    assert not (by_sketch & ~by_length).any()
    assert fast.stats["candidates"] > by_length.sum() > by_sketch.sum()
    monkeypatch.setattr(
        pipeline,
        "bounded_pairs",
        lambda pairs, sizes, sketches, threshold, size, rows, visit, parts: filter_slices(
            pairs, None, size, visit
        ),
    )
    slow = find_groups(lazy, stamps(len(texts)), s, texts)
    for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    # The same counts, but fewer documents' data needed (those of the pairs ruled out alone).
    # Which candidates are tested depends on what the accepted pairs had linked before their
    # turn: a candidate the bounds reject is rejected at once, while without them it may come
    # later and be found linked already, and so may candidates after it; the groups and pairs
    # (above) are the same either way.
    ignored = {"seconds": None, "documents_verified": None, "linked_untested": None}
    ignored["rejected"] = None
    # The repair round (candidates.repair) bounds its pairs by the same rule: without it, it
    # tests the pairs the bounds would rule out.
    ignored.update(repair_tested=None)
    assert {**fast.stats, **ignored} == {**slow.stats, **ignored}
    assert fast.stats["documents_verified"] < slow.stats["documents_verified"]


def _star_candidates(texts, s):
    sig = signatures(texts, s)
    n = len(texts)
    reps = RowSet.of_marks(np.ones(n, dtype=bool))
    candidates = pipeline.candidate_edges(sig, reps, np.arange(n), s)
    return candidates.slice(0, len(candidates))


@pytest.mark.parametrize("seed", range(5))
def test_star_candidates_take_the_earliest_ranked_member_of_each_bucket(seed):
    """The representatives' ranks serve as their positions: each bucket's star is centred on
    its member of the smallest rank, as candidate_pairs' star mode does over the same ranks."""
    rng = np.random.default_rng(seed)
    s = Settings(bands=8, rows=2)
    n = 300
    sig = signatures([f"doc {i}" for i in range(n)], s)
    sig.signature = rng.integers(0, 3, size=(n, s.num_perm), dtype=np.uint32)
    marks = rng.random(n) < 0.8
    reps = np.flatnonzero(marks)
    rank = rng.permutation(n).astype(np.int64)
    candidates = pipeline.candidate_edges(sig, RowSet.of_marks(marks), rank, s)
    a, b = candidates.slice(0, len(candidates))
    left, right = candidate_pairs(sig.signature[reps], 8, 2, rank=rank[reps], mode="star")
    assert sorted(zip(a.tolist(), b.tolist())) == sorted(
        zip(reps[left].tolist(), reps[right].tolist())
    )


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_no_rank_is_the_identity_order(method):
    """Documents in time order pass no rank: the candidates of the identity order."""
    rng = np.random.default_rng(3)
    s = Settings(method=method, bands=8, rows=2, hamming_k=3)
    n = 300
    sig = signatures([f"doc {i}" for i in range(n)], s)
    if method == "minhash":
        sig.signature = rng.integers(0, 3, size=(n, s.num_perm), dtype=np.uint32)
    else:  # fingerprints a few low bits apart
        sig.signature = rng.integers(0, 64, size=sig.signature.shape).astype(sig.signature.dtype)
    reps = RowSet.of_marks(rng.random(n) < 0.8)
    found = [pipeline.candidate_edges(sig, reps, rank, s) for rank in (None, np.arange(n))]
    a, b = (sorted(zip(*c.slice(0, len(c)))) for c in found)
    assert a == b and len(a) > 0


@pytest.mark.parametrize("reads_spill", [False, True])
def test_a_measure_reading_spilled_data_gets_every_candidate_at_once(reads_spill):
    """A forest round first spares candidates that accepted pairs link already; a measure that
    reads its data back from disk on each call gets every candidate in one call instead. The
    groups and pairs are the same."""
    texts = edited_copies()
    s = Settings(bands=40, rows=2)
    sig = signatures(texts, s, keep_sets=False)
    calls = []

    def source(docs):
        offsets, values = pipeline.sets_for(texts, docs, s)

        def measure(a, b, exact=False):
            calls.append(exact)
            return s.verification.similarity(offsets, values, a, b, exact)

        measure.reads_spill = reads_spill
        return measure

    got = find_groups(sig, stamps(len(texts)), s, set_source=source)
    want = find_groups(sig, stamps(len(texts)), s, texts)
    for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    verify_calls = calls[: calls.index(True)] if True in calls else calls
    # The repair round (candidates.repair) decides its pairs in the same way, after them.
    star_calls = 1 if reads_spill else 2
    repair_calls = len(verify_calls) - star_calls
    assert repair_calls == (star_calls if got.stats["repair_tested"] else 0)
    assert (got.stats["linked_untested"] == 0) == reads_spill


@pytest.mark.parametrize("reads_spill", [False, True])
def test_repair_finds_the_pairs_star_candidates_lose_in_memory_and_from_spilled_data(reads_spill):
    """Each base's rotation comes first and shares nearly every band with its copies but fails
    against them: the copies' pairs are found by the repair round, with data read back from
    disk too (its documents' data are read with the star candidates')."""
    texts = [d["text"] for d in chain_corpus(bases=6)]
    s = Settings()
    sig = signatures(texts, s, keep_sets=False)

    def source(docs):
        offsets, values = pipeline.sets_for(texts, docs, s)
        measure = functools.partial(s.verification.similarity, offsets, values)
        measure.reads_spill = reads_spill
        return measure

    got = find_groups(sig, stamps(len(texts)), s, set_source=source)
    want = find_groups(sig, stamps(len(texts)), s, texts)
    for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert got.stats["repair_accepted"] > 0 and got.stats["repair_unlisted"] == 0
    # Every pair that shares a band and passes is linked (the "all" candidates, verified).
    a, b, _ = pipeline.all_pairs(
        signatures(texts, s), s, pipeline.Relation(signatures(texts, s), s)
    )
    labels = connected_components(len(texts), a, b)
    np.testing.assert_array_equal(got.original, originals_of(labels, np.arange(len(texts))))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps")
def test_mapped_flags_and_unit_counts_hold_no_pages_once_the_candidates_are_bounded(tmp_path):
    """An out-of-core run's empty flags and unit counts may be file maps: the empty flags are
    read once at the start and the unit counts by the candidates' bounds; from the shingle
    sets on (the stages of the peak) neither holds a page. The groups are those of arrays."""
    texts = edited_copies()
    s = Settings(bands=40, rows=2)
    sig = signatures(texts, s, keep_sets=False)
    mapped = {}
    for name in ("empty", "sizes"):
        path = tmp_path / f"{name}.bin"
        getattr(sig, name).tofile(path)
        mapped[name] = np.memmap(path, dtype=getattr(sig, name).dtype, mode="r")
    on_map = Signatures(**{**vars(sig), **mapped})
    held_when_compared = []

    def source(docs):
        held_when_compared.extend(mapped_resident_bytes(m.filename) for m in mapped.values())
        return functools.partial(s.verification.similarity, *pipeline.sets_for(texts, docs, s))

    got = find_groups(on_map, stamps(len(texts)), s, set_source=source)
    want = find_groups(sig, stamps(len(texts)), s, texts)
    assert got.stats["candidates"] > 0 and held_when_compared == [0, 0]
    for name in ("original", "group_size", "pair_a", "pair_b", "pair_value", "pair_passed"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


RULES = [
    Settings(method="simhash", hamming_k=12),
    Settings(method="simhash", hamming_k=12, verify="jaccard:0.5"),
    Settings(method="minhash", threshold=0.5, verify="none"),
    Settings(method="minhash", threshold=0.5, verify="jaccard:0.7"),
    Settings(method="minhash", threshold=0.5, verify="lcs:0.7"),
]


@pytest.mark.parametrize("s", RULES, ids=lambda s: f"{s.method}-{s.verify}")
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=12, max_size=12), st.data())
def test_passes_from_the_values_is_the_relations_decision(s, words, data):
    """The pairs' decision taken from their reported values equals the relation measuring them
    again, for every rule: SimHash (with and without verification), MinHash (estimate,
    Jaccard, LCS); texts drawn to sit on either side of the threshold."""
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    vocabulary = ("nu", "xi", "omicron", "pi")
    texts = [" ".join(base)]
    for k in range(1, 12):  # the first k words replaced: from near copies to strangers
        texts.append(" ".join([vocabulary[w] for w in words[:k]] + base[k:]))
    sig = signatures(texts, s, keep_sets=s.verify is not None)
    relation = pipeline.Relation(sig, s)
    n = len(texts)
    every_a, every_b = np.triu_indices(n, 1)
    drawn = st.lists(st.integers(0, n - 1), min_size=5, max_size=5)
    # Every pair once, then pairs drawn in any order (repeats, a document with itself).
    a = np.concatenate([every_a, data.draw(drawn)])
    b = np.concatenate([every_b, data.draw(drawn)])
    values = relation.similarity(a, b)
    want = np.asarray(relation(a, b), dtype=bool)
    assert want.any() and not want.all()  # pairs on both sides of the rule
    assert relation.passes(a, b, values).tolist() == want.tolist()
    assert relation.passes(a[:0], b[:0], values[:0]).shape == (0,)
    # Values exact only where the pair passes decide alike, and are exact there.
    bounded = relation.similarity(a, b, exact=False)
    assert relation.passes(a, b, bounded).tolist() == want.tolist()
    np.testing.assert_array_equal(bounded[want], values[want])
