import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import radix, repair
from neardup.candidates.bands import pairs_from_band_columns
from neardup.candidates.bucket_lists import BucketParts, listed_pairs, unpacked
from neardup.candidates.repair import (
    bucket_pairs,
    bucket_stars,
    mark_among,
    repair_links,
    repair_links_decided,
)
from neardup.groups import accepted_links, connected_components


def _reference_components(n, columns, passes):
    """Components of every pair that shares a band value and passes, by plain Python: each
    pair of each band is looked at, no representative, no skipping."""
    parent = list(range(n))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for column in columns:
        for i in range(n):
            for j in range(i + 1, n):
                if column[i] == column[j] and (min(i, j), max(i, j)) in passes:
                    parent[root(i)] = root(j)
    roots = [root(x) for x in range(n)]
    # Labelled by the smallest member, as connected_components does.
    smallest = {}
    for x in range(n):
        smallest.setdefault(roots[x], x)
    return np.array([smallest[r] for r in roots])


def _listed_without_stars(n, columns, positions, most=1 << 15):
    """The star candidates of the columns, and the bucket pairs that no star candidate is."""
    rest = BucketParts()
    columns = [np.asarray(c, np.uint64) for c in columns]
    a, b = pairs_from_band_columns(columns, "star", positions, 1, rest, most)
    keys, listed = listed_pairs(rest, np.arange(n), most)
    star = np.zeros(keys.shape[0], dtype=bool)
    mark_among(keys, a, b, star)
    return a, b, *unpacked(keys[~star]), listed


def _star_then_repair(n, columns, positions, accept, most=1 << 15):
    a, b, rest_a, rest_b, listed = _listed_without_stars(n, columns, positions, most)
    kept, _ = accepted_links(n, a, b, accept)
    star_a, star_b = a[kept], b[kept]
    labels = connected_components(n, star_a, star_b)
    more_a, more_b, stats = repair_links(n, rest_a, rest_b, labels, accept)
    stats.update(listed)
    final = connected_components(
        n, np.concatenate([star_a, more_a]), np.concatenate([star_b, more_b])
    )
    return labels, final, stats


@st.composite
def adversarial_buckets(draw):
    """Few band values (big buckets), and a relation under which some documents (likely the
    representatives, which come first in time) fail against everything."""
    n = draw(st.integers(2, 24))
    bands = draw(st.integers(1, 3))
    columns = [draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) for _ in range(bands)]
    positions = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    # The earliest documents are "pariahs": they pass against nothing.
    pariahs = {int(d) for d in np.argsort(positions)[: draw(st.integers(0, n))]}
    seed = draw(st.integers(0, 2**32 - 1))
    rate = draw(st.sampled_from([0.2, 0.5, 0.9]))
    rng = np.random.default_rng(seed)
    passes = {
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if i not in pariahs and j not in pariahs and rng.random() < rate
    }
    return n, columns, positions, passes


@settings(max_examples=300, deadline=None)
@given(adversarial_buckets())
def test_repaired_components_are_those_of_verifying_every_bucket_pair(case):
    n, columns, positions, passes = case
    tested = []

    def accept(x, y):
        tested.extend(zip(x.tolist(), y.tolist()))
        return np.array([(min(i, j), max(i, j)) in passes for i, j in zip(x, y)], dtype=bool)

    _, final, stats = _star_then_repair(n, columns, positions, accept)
    np.testing.assert_array_equal(final, _reference_components(n, columns, passes))
    assert stats["repair_unlisted"] == 0
    # No pair is verified twice.
    keys = [(min(i, j), max(i, j)) for i, j in tested]
    assert len(keys) == len(set(keys))


@settings(max_examples=200, deadline=None)
@given(adversarial_buckets(), st.integers(0, 2), st.integers(1, 4))
def test_repair_decided_beforehand_keeps_the_pairs_and_counts_of_the_repair(case, rounds, step):
    # An engine that verifies every pair across components first, then replays the choice on
    # those pairs alone (their ends numbered anew), keeps what repair_links keeps.
    n, columns, positions, passes = case
    a, b, rest_a, rest_b, _ = _listed_without_stars(n, columns, positions)

    def accept(x, y):
        return np.array([(min(i, j), max(i, j)) in passes for i, j in zip(x, y)], dtype=bool)

    kept, _ = accepted_links(n, a, b, accept)
    labels = connected_components(n, a[kept], b[kept])
    expected = repair_links(n, rest_a, rest_b, labels, accept, rounds, step)
    across = labels[rest_a] != labels[rest_b]
    x, y = rest_a[across][::-1], rest_b[across][::-1]  # any order
    got = repair_links_decided(x, y, labels[x], labels[y], accept(x, y), rounds, step)
    assert got[0].tolist() == expected[0].tolist() and got[1].tolist() == expected[1].tolist()
    assert got[2] == expected[2]


def test_the_pair_a_failing_representative_hides_is_found():
    # One bucket {0, 1, 2}: 0 (the representative) fails against 1 and 2, which pass together.
    columns = [np.array([5, 5, 5, 9], np.uint64)]
    passes = {(1, 2)}

    def accept(x, y):
        return np.array([(min(i, j), max(i, j)) in passes for i, j in zip(x, y)], dtype=bool)

    star, final, stats = _star_then_repair(4, columns, None, accept)
    assert star.tolist() == [0, 1, 2, 3]  # star candidates alone lose the pair
    assert final.tolist() == [0, 1, 1, 3]
    assert (stats["repair_listed"], stats["repair_tested"], stats["repair_accepted"]) == (1, 1, 1)


def test_a_bucket_too_large_is_counted_not_listed():
    # Band 0: one bucket of 1 + 5 members (10 pairs besides the representative), too large;
    # band 1: 1 + 3 members (3 pairs), listed.
    columns = [np.zeros(6, np.uint64), np.array([0, 0, 0, 0, 1, 2], np.uint64)]
    fail = lambda x, y: np.zeros(x.shape[0], bool)  # noqa: E731
    _, _, stats = _star_then_repair(6, columns, None, fail, 4)
    assert (stats["repair_listed"], stats["repair_unlisted"]) == (3, 10)


def test_bucket_pairs_are_distinct_and_the_repair_takes_those_across_components():
    offsets = np.array([0, 3, 6])
    members = np.array([4, 1, 2, 1, 4, 3])
    a, b, stats = bucket_pairs(offsets, members)
    assert list(zip(a.tolist(), b.tolist())) == [(1, 2), (1, 3), (1, 4), (2, 4), (3, 4)]
    assert stats == {"repair_unlisted": 0}
    labels = np.array([0, 1, 1, 3, 4])
    more_a, more_b, stats = repair_links(5, a, b, labels, lambda x, y: x == 1)
    assert list(zip(more_a.tolist(), more_b.tolist())) == [(1, 3), (1, 4)]
    assert stats == {"repair_listed": 4, "repair_tested": 2, "repair_accepted": 2}
    with pytest.raises(ValueError, match="most must be >= 2, got 1"):
        bucket_pairs(offsets, members, most=1)


def test_bucket_pairs_drop_the_pairs_the_lcs_bounds_rule_out():
    from neardup.lcs import possible_pairs
    from neardup.text.units import lcs_unit_sketches

    texts = [
        "a b c d e f g h i j",
        "a b c d e f g h i x",
        "a b c d e",  # too short for the first two
        "q r s t u v w x y z",  # as long, other words
        "이 패키지는 문서를 담고 있습니다",  # Korean: sketches rule nothing out
        "이 패키지는 문서를",
    ]
    sizes, sketches = lcs_unit_sketches(texts)
    offsets, members = np.array([0, 6]), np.arange(6)
    a, b, stats = bucket_pairs(offsets, members, 1 << 15, sizes, sketches, 0.8)
    everything_a, everything_b, _ = bucket_pairs(offsets, members)
    want = possible_pairs(sizes, sketches, everything_a, everything_b, 0.8)
    assert list(zip(a.tolist(), b.tolist())) == list(
        zip(everything_a[want].tolist(), everything_b[want].tolist())
    )
    assert (0, 1) in zip(a.tolist(), b.tolist()) and (4, 5) in zip(a.tolist(), b.tolist())
    assert stats["repair_unlisted"] == 0 and a.shape[0] < everything_a.shape[0]


def test_mark_among_finds_pairs_in_either_orientation():
    keys = np.array([0 << 32 | 1, 1 << 32 | 2, 2 << 32 | 3], dtype=np.uint64)
    found = np.zeros(3, dtype=bool)
    mark_among(keys, np.array([2]), np.array([1]), found)
    assert found.tolist() == [False, True, False]
    mark_among(keys, np.array([], dtype=np.int64), np.array([], dtype=np.int64), found)
    assert found.tolist() == [False, True, False]


def test_bucket_pairs_by_blocks_of_sketches_list_the_same(tmp_path):
    from neardup.text.units import lcs_unit_sketches

    rng = np.random.default_rng(3)
    words = "a b c d e f".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(2, 9)))) for _ in range(60)]
    # Sketches of every count 255 on both sides: not even the lengths rule the pair out.
    texts[:3] = ["이 패키지는 문서를 담고 있습니다 " * 60, "문서 " * 300, "a b c d e f"]
    sizes, sketches = lcs_unit_sketches(texts)
    path = tmp_path / "sketches.bin"
    sketches.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r", shape=sketches.shape)
    # Buckets that share members, so that a pair is listed by several of them.
    members = np.concatenate([rng.permutation(60)[:12] for _ in range(8)]).astype(np.int64)
    offsets = np.arange(0, members.shape[0] + 1, 12, dtype=np.int64)
    members[:12] = np.concatenate([[0, 1, 2], 3 + rng.permutation(57)[:9]])  # 0, 1, 2 together
    want = bucket_pairs(offsets, members, 16, sizes, sketches, 0.6)
    assert (0, 1) in zip(*(x.tolist() for x in want[:2]))
    assert 0 < want[0].shape[0] < bucket_pairs(offsets, members, 16)[0].shape[0]
    for block_rows in (1, 7, 60):
        got = bucket_pairs(offsets, members, 16, sizes, mapped, 0.6, block_rows=block_rows)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert got[2] == want[2]


def test_bucket_pairs_past_the_first_output_block_are_all_listed():
    """More pairs than the kernel's first output block (65,536): the output grows and every
    pair of every bucket is listed once, sorted."""
    rng = np.random.default_rng(2)
    buckets = [
        rng.choice(20_000, size=int(rng.integers(2, 17)), replace=False) for _ in range(9_000)
    ]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in buckets])])
    members = np.concatenate(buckets)
    a, b, stats = bucket_pairs(offsets, members, 16)
    want = sorted(
        {(min(x, y), max(x, y)) for m in buckets for i, x in enumerate(m) for y in m[i + 1 :]}
    )
    assert len(want) > 65_536
    assert list(zip(a.tolist(), b.tolist())) == want
    assert stats == {"repair_unlisted": 0}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=25),
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=25),
    st.booleans(),
)
def test_mark_among_matches_a_set_of_unordered_pairs(pairs, others, two_cores):
    listed = sorted({(min(p), max(p)) for p in pairs})
    keys = np.array([x << 32 | y for x, y in listed], dtype=np.uint64)
    other_a = np.array([p[0] for p in others], dtype=np.int64)
    other_b = np.array([p[1] for p in others], dtype=np.int64)
    found = np.zeros(keys.shape[0], dtype=bool)
    with pytest.MonkeyPatch.context() as patch:
        if two_cores:  # the pairs in two halves on two threads
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
            patch.setattr(radix.os, "cpu_count", lambda: 2)
        mark_among(keys, other_a, other_b, found)
    taken = {(min(p), max(p)) for p in others}
    assert found.tolist() == [pair in taken for pair in listed]


def test_bucket_pairs_on_two_threads_list_and_count_what_one_call_does(monkeypatch):
    from neardup.text.units import lcs_unit_sketches

    rng = np.random.default_rng(5)
    words = "a b c d e f g".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(3, 12)))) for _ in range(80)]
    sizes, sketches = lcs_unit_sketches(texts)
    members = np.concatenate([rng.permutation(80)[: rng.integers(2, 20)] for _ in range(30)])
    lengths = np.diff(np.flatnonzero(np.r_[True, np.diff(np.arange(members.shape[0]) % 7) < 0]))
    offsets = np.r_[0, np.cumsum(lengths), members.shape[0]].astype(np.int64)
    offsets = np.unique(offsets)
    for threshold in (0.0, 0.6):
        bounds = (sizes, sketches, threshold) if threshold else ()
        one = bucket_pairs(offsets, members.astype(np.int64), 16, *bounds)
        monkeypatch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        two = bucket_pairs(offsets, members.astype(np.int64), 16, *bounds)
        monkeypatch.undo()
        assert one[0].tolist() == two[0].tolist() and one[1].tolist() == two[1].tolist()
        assert one[2] == two[2] and one[0].shape[0] > 0


def _brute_stars(band, h, ts, pos):
    """Each bucket of two rows or more by a dictionary: (band, head, sorted members)."""
    buckets: dict = {}
    for row in range(len(pos)):
        buckets.setdefault((int(band[row]), int(h[row])), []).append(row)
    stars = []
    for (b, _), rows in buckets.items():
        if len(rows) > 1:
            head = min(rows, key=lambda r: (int(ts[r]), int(pos[r])))
            stars.append((b, int(pos[head]), sorted(int(pos[r]) for r in rows if r != head)))
    return sorted(stars)


def _assert_stars(stars, band, h, ts, pos):
    """``stars`` of ``bucket_stars`` are those of :func:`_brute_stars`, by band, a head each."""
    found = [
        (
            int(stars.bands[q]),
            int(stars.heads[q]),
            sorted(stars.members[stars.offsets[q] : stars.offsets[q + 1]].tolist()),
        )
        for q in range(stars.bands.shape[0])
    ]
    assert np.all(np.diff(stars.bands) >= 0)  # by band, as the per-band listing reads them
    assert stars.heads.shape == stars.bands.shape  # one head a bucket
    assert sorted(found) == _brute_stars(band, h, ts, pos)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # band
            st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63), 77]),  # hash: many collisions
            st.integers(0, 2),  # time
        ),
        max_size=60,
    ),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_bucket_stars_link_each_bucket_to_its_earliest_row(rows, timed, rnd):
    n = len(rows)
    positions = rnd.sample(range(1000), n)  # distinct positions in any order
    band = np.array([r[0] for r in rows], dtype=np.int32)
    h = np.array([r[1] for r in rows], dtype=np.int64)
    ts = np.array([r[2] for r in rows], dtype=np.int64) if timed else np.zeros(n, np.int64)
    pos = np.array(positions, dtype=np.int64)
    _assert_stars(bucket_stars(band, h, ts if timed else None, pos), band, h, ts, pos)
    # The fields of packed band rows, as a Spark reduce task unpacks them: read in place.
    packed = np.zeros(n, dtype=[("band", "<i4"), ("h", "<i8"), ("ts", "<i8"), ("pos", "<i8")])
    packed["band"], packed["h"], packed["ts"], packed["pos"] = band, h, ts, pos
    in_place = bucket_stars(
        packed["band"], packed["h"], packed["ts"] if timed else None, packed["pos"]
    )
    _assert_stars(in_place, band, h, ts, pos)


def test_bucket_stars_of_bands_cut_in_parts():
    # Bands of more than the kernel's part size (4,096 rows) are cut by hash: every bucket
    # must still meet whole in one part, the extreme hashes and the hot ones included.
    rng = np.random.default_rng(7)
    n = 3 * 12_000
    pool = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 6_000), [0, -1, 2**63 - 1, -(2**63)]])
    band = rng.integers(0, 3, n).astype(np.int32)
    h = pool[rng.integers(0, pool.shape[0], n)]
    h[rng.random(n) < 0.05] = 2**63 - 1  # a hot bucket in every band
    ts = rng.integers(0, 4, n).astype(np.int64)
    pos = rng.permutation(10 * n)[:n].astype(np.int64)
    _assert_stars(bucket_stars(band, h, ts, pos), band, h, ts, pos)
    _assert_stars(bucket_stars(band, h, None, pos), band, h, np.zeros(n, np.int64), pos)


@pytest.mark.parametrize("narrow", [True, False])
@pytest.mark.parametrize("n", [2, 9, 10_000, 10_001])
def test_bucket_stars_of_buckets_of_two_rows(n, narrow, monkeypatch):
    if not narrow:  # the slots of a task of 2^29 rows or more, in 8 bytes
        monkeypatch.setattr(repair, "_NARROW_ROWS", 0)
    # As many buckets as rows allow (n // 2): the results fill the room reserved for them.
    pos = np.arange(n, dtype=np.int64)[::-1].copy()
    h = np.arange(n, dtype=np.int64) // 2
    stars = bucket_stars(np.zeros(n, np.int64), h, None, pos)
    assert stars.offsets.tolist() == list(range(n // 2 + 1))
    _assert_stars(stars, np.zeros(n, np.int64), h, np.zeros(n, np.int64), pos)


def test_bucket_stars_of_a_hot_bucket_and_no_rows():
    n = 50_000
    rng = np.random.default_rng(3)
    pos = rng.permutation(n).astype(np.int64) + 10
    stars = bucket_stars(np.zeros(n, np.int32), np.full(n, 5, np.int64), None, pos)
    assert stars.offsets.tolist() == [0, n - 1] and stars.heads.tolist() == [10]
    assert sorted(stars.members.tolist()) == list(range(11, n + 10))
    empty = bucket_stars(np.zeros(0, np.int32), np.zeros(0, np.int64), None, np.zeros(0, np.int64))
    assert empty.offsets.tolist() == [0] and empty.members.shape == (0,)
