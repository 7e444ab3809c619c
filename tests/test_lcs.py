"""The bit-parallel LCS kernel against the textbook dynamic program."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.lcs import (
    count_sketches,
    lcs_length_reference,
    lcs_lengths,
    lcs_pairs,
    lcs_pairs_one_to_many,
    length_bounds,
    possible_pairs,
    resemblance_reference,
)
from neardup.text.units import lcs_units


def _csr(seqs, dtype=np.uint64):
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=offsets[1:])
    codes = np.array([c for s in seqs for c in s], dtype=dtype)
    return offsets, codes


def _kernel(x, y, dtype=np.uint64):
    offsets, codes = _csr([x, y], dtype)
    length = int(lcs_lengths(offsets, codes, np.array([0]), np.array([1]))[0])
    value = float(lcs_pairs(offsets, codes, np.array([0]), np.array([1]))[0])
    back = float(lcs_pairs(offsets, codes, np.array([1]), np.array([0]))[0])
    return length, value, back


def _check(x, y, dtype=np.uint64):
    length, value, back = _kernel(x, y, dtype)
    assert length == lcs_length_reference(x, y)
    assert value == back  # symmetric
    assert value == pytest.approx(resemblance_reference(x, y))
    assert 0.0 <= value <= 1.0
    assert length <= min(len(x), len(y))


small = st.lists(st.integers(0, 3), max_size=200)
# LCS units: a word hash (top bit clear, any other bit) or a character (top bit set); the top
# two bits set mark the last character of a Korean word (neardup.eojeol), not tried here.
wide = st.lists(
    st.one_of(st.integers(0, 2**63 - 1), st.integers(0, 2**62 - 1).map(lambda c: c | 1 << 63)),
    max_size=150,
)
hangul = st.lists(st.integers(0xAC00, 0xAC00 + 30), max_size=200)


@settings(max_examples=300, deadline=None)
@given(small, small)
def test_small_alphabet(x, y):
    _check(x, y)


@settings(max_examples=200, deadline=None)
@given(wide, wide)
def test_huge_alphabet(x, y):
    _check(x, y)


@settings(max_examples=200, deadline=None)
@given(hangul, hangul)
def test_korean_syllables_uint32(x, y):
    _check(x, y, np.uint32)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=300), st.data())
def test_light_edits(base, data):
    """A sequence against an edited copy: the near-duplicate case, with long shared runs."""
    other = list(base)
    for _ in range(data.draw(st.integers(0, 6))):
        op = data.draw(st.sampled_from(["ins", "del", "sub"]))
        i = data.draw(st.integers(0, max(len(other) - 1, 0)))
        value = data.draw(st.integers(0, 9))
        if op == "ins":
            other.insert(i, value)
        elif other and op == "del":
            del other[i]
        elif other:
            other[i] = value
    _check(base, other)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 256, 300])
@pytest.mark.parametrize("kind", ["equal", "all_same", "disjoint", "repeats", "shifted"])
def test_word_boundaries(n, kind):
    rng = np.random.default_rng(n)
    if kind == "equal":
        x = rng.integers(0, 50, n).tolist()
        y = list(x)
    elif kind == "all_same":
        x, y = [7] * n, [7] * (n + 5)
    elif kind == "disjoint":
        x, y = list(range(n)), list(range(n, 2 * n + 3))
    elif kind == "repeats":
        x, y = [1, 2] * n, [2, 1, 1] * (n // 2 + 1)
    else:
        x = rng.integers(0, 3, n).tolist()
        y = [9] + x[1:] + [4]
    _check(x, y)
    _check(x[: n // 2], y)


def test_long_repeats_and_carries():
    # All-ones patterns make the addition carry across every 64-bit word.
    x = [0] * 1000
    y = [1] * 10 + [0] * 500 + [1] * 10 + [0] * 700
    _check(x, y)
    x = [0, 1] * 400
    y = [1, 0] * 300 + [0] * 100
    _check(x, y)


def test_empty_texts():
    offsets, codes = lcs_units(["", "a b", "!!", "a b"], "word")
    a = np.array([0, 0, 1, 1])
    b = np.array([2, 1, 3, 0])
    assert lcs_pairs(offsets, codes, a, b).tolist() == [1.0, 0.0, 1.0, 0.0]
    none = np.zeros(0, dtype=np.int64)
    assert lcs_pairs(offsets, codes, none, none).shape == (0,)


def test_definition_examples():
    ten = "one two three four five six seven eight nine ten"
    one = ten.replace("five", "5!").replace("seven", "8")
    three = ten.replace("two", "x").replace("four", "y").replace("six", "z")
    o, c = lcs_units([ten, one, three], "word")
    values = lcs_pairs(o, c, np.array([0, 0]), np.array([1, 2]))
    assert values.tolist() == [0.8, 0.7]  # two changed words in ten: kept; three: not


def test_many_pairs_match_one_by_one():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 6, rng.integers(0, 200)).tolist() for _ in range(30)]
    offsets, codes = _csr(seqs)
    a = rng.integers(0, 30, 200)
    b = rng.integers(0, 30, 200)
    got = lcs_pairs(offsets, codes, a, b)
    want = [resemblance_reference(seqs[i], seqs[j]) for i, j in zip(a.tolist(), b.tolist())]
    assert got == pytest.approx(want)


def test_bad_input():
    offsets, codes = _csr([[1, 2], [3]])
    with pytest.raises(ValueError):
        lcs_pairs(offsets, codes, np.array([0]), np.array([2]))
    with pytest.raises(ValueError):
        lcs_pairs(offsets, codes, np.array([0, 1]), np.array([1]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4), max_size=300),
    st.lists(st.integers(0, 4), max_size=300),
    st.sampled_from([0.3, 0.5, 0.7, 0.8, 0.9, 1.0]),
)
def test_threshold_mode_decides_like_the_reference(x, y, threshold):
    _decides_like_the_reference(x, y, threshold)


def _decides_like_the_reference(x, y, threshold):
    """With a threshold, a pair passes exactly when its resemblance does, with its exact value;
    a pair that fails gets an upper bound of it."""
    offsets, codes = _csr([x, y])
    value = float(lcs_pairs(offsets, codes, np.array([0]), np.array([1]), threshold=threshold)[0])
    exact = resemblance_reference(x, y)
    assert (value >= threshold) == (exact >= threshold)
    if exact >= threshold:
        assert value == pytest.approx(exact)
    else:
        assert exact <= value + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3000), min_size=1, max_size=200),
    st.lists(st.integers(0, 3000), max_size=60),
    st.lists(st.integers(0, 3000), max_size=60),
    st.sampled_from([0.5, 0.7, 0.8, 0.9]),
)
def test_threshold_mode_with_many_distinct_units(common, extra_x, extra_y, threshold):
    """Units from a large alphabet spread over the count sketches' buckets, so their bound
    (Σ of the smaller count per bucket) rules pairs out: it must still decide like the
    reference and bound the resemblance from above."""
    x = common + extra_x
    y = extra_y + common[::2] + common[1::2]  # shared units, partly out of order
    _decides_like_the_reference(x, y, threshold)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 600), max_size=80), min_size=1, max_size=6),
    st.data(),
    st.sampled_from([0.5, 0.8, 0.9]),
)
def test_threshold_mode_over_many_pairs_decides_like_the_reference(texts, data, threshold):
    """Texts named by several pairs, in any order, share one count sketch per call."""
    n = len(texts)
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12)
    )
    offsets, codes = _csr(texts)
    a = np.array([p for p, _ in pairs], np.int64)
    b = np.array([q for _, q in pairs], np.int64)
    values = lcs_pairs(offsets, codes, a, b, threshold=threshold)
    for (p, q), value in zip(pairs, values.tolist()):
        exact = resemblance_reference(texts[p], texts[q])
        assert (value >= threshold) == (exact >= threshold)
        assert exact <= value + 1e-12


def test_threshold_mode_with_a_bucket_past_the_sketch_count():
    """Past 255 units in one bucket a count sketch says only "255 or more": two long texts of
    one repeated unit are not ruled out by it, and they are near-duplicates."""
    x = [7] * 600
    y = [7] * 560 + [8] * 40
    offsets, codes = _csr([x, y, [7] * 300])
    values = lcs_pairs(offsets, codes, np.array([0, 0]), np.array([1, 2]), threshold=0.9)
    assert values[0] == pytest.approx(560 / 600)
    assert values[1] < 0.9 and resemblance_reference(x, [7] * 300) == 0.5


def test_threshold_mode_unrelated_texts_are_bounded_by_their_buckets():
    """Texts without a shared bucket: ruled out, and their exact LCS is 0."""
    from neardup.lcs import unit_bucket

    units = np.arange(1, 4000, dtype=np.uint64)
    buckets = np.array([unit_bucket(u) for u in units])
    x = units[buckets < 256][:100].tolist()
    y = units[buckets >= 256][:100].tolist()
    offsets, codes = _csr([x, y])
    assert lcs_pairs(offsets, codes, np.array([0]), np.array([1]), threshold=0.5)[0] < 0.5
    assert lcs_pairs(offsets, codes, np.array([0]), np.array([1]))[0] == 0.0


def test_threshold_mode_long_texts_stop_early():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 30, 1000).tolist()
    y = x[:500] + rng.integers(0, 30, 500).tolist()
    for threshold in (0.6, 0.8, 0.95):
        offsets, codes = _csr([x, y])
        value = float(lcs_pairs(offsets, codes, np.array([0]), np.array([1]), threshold)[0])
        assert (value >= threshold) == (resemblance_reference(x, y) >= threshold)
    with pytest.raises(ValueError):
        lcs_pairs(offsets, codes, np.array([0]), np.array([1]), threshold=0.0)


def test_threads_give_the_same_values():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    seqs = [rng.integers(0, 8, rng.integers(0, 400)).tolist() for _ in range(60)]
    offsets, codes = _csr(seqs, np.uint32)
    a = rng.integers(0, 60, 2000)
    b = rng.integers(0, 60, 2000)
    serial = lcs_pairs(offsets, codes, a, b)
    chunks = np.array_split(np.arange(a.shape[0]), 16)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda c: lcs_pairs(offsets, codes, a[c], b[c]), chunks))
    assert np.array_equal(np.concatenate(parts), serial)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 4), max_size=150), min_size=1, max_size=4),
    st.lists(st.lists(st.integers(0, 4), max_size=150), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=20),
    st.sampled_from([None, 0.5, 0.8, 1.0]),
    st.sampled_from([0, 70, 4096]),
)
def test_one_to_many_gives_the_values_of_lcs_pairs(queries, stored, pairs, threshold, masked):
    """Rows of two CSRs, pairs in any order (runs of one query, two pairs side by side, texts
    of any length, several 64-bit words, patterns over ``longest_masked`` units through the
    linear kernel): the values of lcs_pairs on the joined CSR, exact or, with a threshold, the
    same passing pairs with the same values."""
    pairs = [(q % len(queries), s % len(stored)) for q, s in pairs]
    a = np.array([q for q, _ in pairs], np.int64)
    b = np.array([s for _, s in pairs], np.int64)
    oa, ca = _csr(queries)
    ob, cb = _csr(stored, np.uint32)
    got = lcs_pairs_one_to_many(oa, ca, ob, cb, a, b, threshold, longest_masked=masked)
    offsets, codes = _csr(queries + stored)
    want = lcs_pairs(offsets, codes, a, len(queries) + b, threshold)
    if threshold is None:
        assert got.tolist() == want.tolist()
    else:
        assert (got >= threshold).tolist() == (want >= threshold).tolist()
        assert got[got >= threshold].tolist() == want[want >= threshold].tolist()
    for (q, s), value in zip(pairs, got):
        if threshold is None or value >= threshold:
            assert value == pytest.approx(resemblance_reference(queries[q], stored[s]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 4), max_size=12), min_size=2, max_size=6),
    st.floats(0.05, 1.0),
)
def test_length_bounds_bound_the_resemblance_and_are_what_the_kernel_gives_below(seqs, t):
    offsets, codes = _csr(seqs)
    a, b = np.meshgrid(np.arange(len(seqs)), np.arange(len(seqs)))
    a, b = a.ravel(), b.ravel()
    sizes = np.diff(offsets)
    bound = length_bounds(sizes[a], sizes[b])
    exact = lcs_pairs(offsets, codes, a, b)
    assert (exact <= bound + 1e-12).all()
    below = bound < t
    assert np.array_equal(lcs_pairs(offsets, codes, a, b, t)[below], bound[below])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.lists(st.integers(0, 600), max_size=80),
            # Long texts of 4 units, unit 3 the most common (5 bytes in 8): about half of them
            # hold more than 255 of it, a count past what a sketch's byte holds. Drawn as bytes,
            # one draw a text rather than one a unit (the draws took most of this test's time).
            st.binary(min_size=250, max_size=700).map(lambda raw: [min(b >> 5, 3) for b in raw]),
        ),
        min_size=2,
        max_size=6,
    ),
    st.sampled_from([0.3, 0.5, 0.8, 0.9, 1.0]),
)
def test_possible_pairs_rule_out_only_what_the_kernel_rejects_untested(texts, threshold):
    """Exactly the pairs the kernel rejects by lengths or count sketches, which the reference
    puts below the threshold too: a run may drop them before it reads any text."""
    offsets, codes = _csr(texts)
    a, b = np.meshgrid(np.arange(len(texts)), np.arange(len(texts)))
    a, b = a.ravel(), b.ravel()
    possible = possible_pairs(np.diff(offsets), count_sketches(offsets, codes), a, b, threshold)
    values = lcs_pairs(offsets, codes, a, b, threshold=threshold)
    exact = _resemblances_by_rows(texts, a, b)
    assert (exact[~possible] < threshold).all() and (values[~possible] < threshold).all()
    assert possible[exact >= threshold].all()


def _resemblances_by_rows(seqs, a, b):
    """LCS(seqs[a[p]], seqs[b[p]]) / the longer length (1.0 for two empty ones), every pair at
    once by the textbook dynamic program, a row of the table a step: with t[j] = max(L[i-1][j],
    L[i-1][j-1] + [x_i = y_j]), row i is the running maximum of t (L[i][j-1] ≤ L[i][j]). It
    shares nothing with the kernel (no bit vectors, trimming, bounds or sketches), and is what
    :func:`lcs_length_reference` computes, row by row in numpy (tested below). Each unordered
    pair is computed once, its shorter text as x (the rows)."""
    sizes = np.array([len(s) for s in seqs], dtype=np.int64)
    a, b = np.asarray(a), np.asarray(b)
    pairs = sorted({(min(i, j), max(i, j)) for i, j in zip(a.tolist(), b.tolist())})
    shorter = [i if sizes[i] <= sizes[j] else j for i, j in pairs]
    longer = [j if sizes[i] <= sizes[j] else i for i, j in pairs]
    rows, columns = int(sizes[shorter].max()), int(sizes[longer].max())
    # Padded with two values no text holds: a padded unit of x matches nothing, so the rows
    # after x's end repeat its last; the padding of y comes after the column read.
    x = np.full((len(pairs), rows), -1, dtype=np.int64)
    y = np.full((len(pairs), columns), -2, dtype=np.int64)
    for p, (i, j) in enumerate(zip(shorter, longer)):
        x[p, : sizes[i]] = seqs[i]
        y[p, : sizes[j]] = seqs[j]
    previous = np.zeros((len(pairs), columns + 1), dtype=np.int16)  # lengths ≤ 700
    t = np.empty((len(pairs), columns), dtype=np.int16)
    for step in range(rows):
        np.add(previous[:, :-1], x[:, step, None] == y, out=t)
        np.maximum(t, previous[:, 1:], out=t)
        np.maximum.accumulate(t, axis=1, out=previous[:, 1:])
    lengths = previous[np.arange(len(pairs)), sizes[longer]].astype(np.int64)
    top = sizes[longer]
    value = dict(zip(pairs, np.where(top == 0, 1.0, lengths / np.maximum(top, 1)).tolist()))
    return np.array([value[min(i, j), max(i, j)] for i, j in zip(a.tolist(), b.tolist())])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=40), min_size=1, max_size=5))
def test_the_row_by_row_reference_is_the_textbook_one(seqs):
    a, b = np.meshgrid(np.arange(len(seqs)), np.arange(len(seqs)))
    a, b = a.ravel(), b.ravel()
    expected = [resemblance_reference(seqs[i], seqs[j]) for i, j in zip(a.tolist(), b.tolist())]
    assert _resemblances_by_rows(seqs, a, b).tolist() == expected


def test_possible_pairs_check_the_threshold():
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\]; got 0"):
        possible_pairs(np.zeros(1, np.int64), np.zeros((1, 128), np.uint8), [0], [0], 0)


def test_one_to_many_takes_linear_memory_for_a_million_units():
    """A pattern of 1M units against a copy with 50 units replaced by units found nowhere else
    (LCS = 1M - 50 exactly), and a short pattern against the 1M-unit text: masks of
    ⌈m / 64⌉ words per distinct unit would take m² / 8 bytes (125 GB) here."""
    rng = np.random.default_rng(3)
    n = 1_000_000
    text = rng.integers(0, 50_000, n)
    copy = text.copy()
    replaced = rng.choice(np.arange(n // 2 - 500, n // 2 + 500), 50, replace=False)
    copy[replaced] = 1_000_000 + np.arange(50)
    oa, ca = _csr_arrays([text, text[:300]])
    ob, cb = _csr_arrays([copy])
    got = lcs_pairs_one_to_many(oa, ca, ob, cb, np.array([0]), np.array([0]), 0.8)
    assert got.tolist() == [(n - 50) / n]
    got = lcs_pairs_one_to_many(oa, ca, ob, cb, np.array([1]), np.array([0]))
    assert got.tolist() == [300 / n]  # the copy starts with the short text


def _csr_arrays(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum([len(s) for s in seqs], out=offsets[1:])
    return offsets, np.concatenate(seqs).astype(np.uint64)


def test_one_to_many_spends_at_most_its_budget_on_long_patterns():
    """Pairs of a pattern over ``longest_masked`` units cost ⌈m / 64⌉ · n word operations once
    the common prefix and suffix are removed: within the budget they get their exact value
    and pay it; beyond it they are not compared (NaN) and pay nothing."""
    rng = np.random.default_rng(12)
    text = rng.integers(0, 500, 6000)
    near = text.copy()
    near[3000] = 10_000  # one unit replaced: 1 unit left once trimmed, cost 1
    spread = text.copy()
    spread[::100] = 10_000  # 60 units replaced from the first to the last: nothing trimmed
    oa, ca = _csr_arrays([text])
    ob, cb = _csr_arrays([near, spread])
    a, b = np.array([0, 0]), np.array([0, 1])
    exact = lcs_pairs_one_to_many(oa, ca, ob, cb, a, b, 0.8)
    assert exact.tolist() == [5999 / 6000, 5940 / 6000]
    left = 6000 - 99  # units 0, 100, ..., 5900 replaced: a common suffix of 99 units only
    spread_cost = (left + 63) // 64 * left
    budget = np.array([spread_cost + 1], np.int64)
    assert lcs_pairs_one_to_many(oa, ca, ob, cb, a, b, 0.8, budget=budget).tolist() == [
        5999 / 6000,
        5940 / 6000,
    ]
    assert budget.tolist() == [0]
    budget = np.array([spread_cost], np.int64)
    got = lcs_pairs_one_to_many(oa, ca, ob, cb, a, b, 0.8, budget=budget)
    assert got[0] == 5999 / 6000 and np.isnan(got[1])
    assert budget.tolist() == [spread_cost - 1]  # the near copy paid 1, the other nothing
