"""Tests of neardup.candidates.radix: each radix sort against numpy's stable sorts."""

from __future__ import annotations

import doctest
import os
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.candidates import radix
from neardup.candidates.radix import (
    DIGIT_BITS,
    argsort64,
    digit_starts,
    digits,
    in_halves,
    index_union,
    order_keys,
    sort_range,
    sorted_carrying,
    sorted_pairs,
    stable_argsort,
    stable_lexsort,
    stable_order_consuming,
)


@st.composite
def keys(draw: st.DrawFn, max_size: int = 300) -> np.ndarray:
    """uint64 keys: random, few distinct values, or varying in a few bits only (constant
    digits, whose passes are skipped)."""
    n = draw(st.integers(0, max_size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["random", "few", "bits"]))
    if kind == "random":
        return rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    if kind == "few":
        return rng.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)[
            rng.integers(0, 4, size=n)
        ]
    shift = np.uint64(draw(st.integers(0, 60)))
    return rng.integers(0, 16, size=n).astype(np.uint64) << shift


@settings(max_examples=100, deadline=None)
@given(keys())
def test_argsort64_is_a_stable_argsort(k: np.ndarray) -> None:
    sorted_keys, order = argsort64(k)
    assert order.tolist() == np.argsort(k, kind="stable").tolist()
    assert sorted_keys.tolist() == k[order].tolist()
    assert sorted_keys.dtype == np.uint64 and order.dtype == np.int64


@settings(max_examples=60, deadline=None)
@given(keys())
def test_two_cores_sort_as_one(k: np.ndarray) -> None:
    """Halves sorted on two cores (forced here for small inputs) and merged: the same order."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        sorted_keys, order = argsort64(k)
    assert order.tolist() == np.argsort(k, kind="stable").tolist()
    assert sorted_keys.tolist() == k[order].tolist()


@settings(max_examples=60, deadline=None)
@given(keys(), st.integers(1, 64))
def test_sorted_carrying_sorts_by_the_low_bits_only(k: np.ndarray, bits: int) -> None:
    k = k & np.uint64((1 << bits) - 1) if bits < 64 else k
    payload = np.arange(k.size, dtype=np.int32)
    sorted_keys, moved = sorted_carrying(k, payload, bits)
    assert moved.tolist() == np.argsort(k, kind="stable").tolist()
    assert sorted_keys.tolist() == np.sort(k).tolist()
    assert moved.dtype == np.int32


@settings(max_examples=100, deadline=None)
@given(keys(), st.integers(1, 64))
def test_stable_order_consuming_is_numpys_stable_argsort(k: np.ndarray, bits: int) -> None:
    """Any number of passes moving (an odd or even count, or none: the order then lands in
    either buffer, or is the input order), by the low ``bits`` only."""
    k = k & np.uint64((1 << bits) - 1) if bits < 64 else k
    expected = np.argsort(k, kind="stable")
    order = stable_order_consuming(k.copy(), bits)
    assert order.tolist() == expected.tolist()
    assert order.dtype == (np.int32 if k.size < 2**31 else np.int64)


def test_stable_order_consuming_refuses_other_keys() -> None:
    with pytest.raises(ValueError, match="1-D uint64 array; got int64 of 1 dims"):
        stable_order_consuming(np.arange(3))
    with pytest.raises(ValueError, match="bits must be in 1..64; got 0"):
        stable_order_consuming(np.zeros(3, np.uint64), bits=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 1000), st.lists(st.tuples(st.integers(0, 999), st.integers(0, 999))))
def test_sorted_pairs_is_a_lexsort(n: int, pairs: list[tuple[int, int]]) -> None:
    a = np.array([x % n for x, _ in pairs], dtype=np.int64)
    b = np.array([y % n for _, y in pairs], dtype=np.int64)
    d = np.arange(len(pairs), dtype=np.uint8)
    order = np.lexsort((b, a))
    got = sorted_pairs(a, b, d, n)
    assert [x.tolist() for x in got] == [a[order].tolist(), b[order].tolist(), d[order].tolist()]


@settings(max_examples=100, deadline=None)
@given(
    keys(),
    st.lists(st.tuples(st.integers(0, 63), st.integers(1, 20)), min_size=1, max_size=3),
    st.data(),
)
def test_sort_range_sorts_a_range_by_bit_fields(k: np.ndarray, fields, data) -> None:
    spans = [(start, min(width, 64 - start)) for start, width in fields]
    shifts, masks = digits(spans)
    assert all(int(m).bit_length() <= DIGIT_BITS for m in masks)
    s = data.draw(st.integers(0, k.size))
    e = data.draw(st.integers(s, k.size))

    def key(v: int) -> tuple[int, ...]:
        return tuple((v >> start) & ((1 << width) - 1) for start, width in spans)

    want = k.tolist()
    want[s:e] = sorted(want[s:e], key=key)  # stable, as sort_range
    got = k.copy()
    sort_range(got, np.empty_like(got), s, e, shifts, masks, np.empty(257, np.int64))
    assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(keys(), st.integers(0, 60), st.integers(1, 4))
def test_digit_starts_are_the_cumulative_counts(k: np.ndarray, shift: int, width: int) -> None:
    starts = np.empty((1 << width) + 1, np.int64)
    digit_starts(k, shift, width, starts)
    counts = np.bincount(
        ((k >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64),
        minlength=1 << width,
    )
    assert starts.tolist() == [0] + np.cumsum(counts).tolist()


_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32"]
_DTYPES += ["float64"]


@st.composite
def typed_values(draw: st.DrawFn, n: int | None = None, max_size: int = 200) -> np.ndarray:
    """1-D arrays of any sortable dtype, in the shapes that break radix sorts: empty, one
    value, all equal, already sorted, reverse sorted, only the highest bits varying (so the
    low digits are constant), random, few distinct values; floats with signed zeros,
    infinities and subnormals."""
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    if n is None:
        n = draw(st.sampled_from([0, 1, draw(st.integers(0, max_size))]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = draw(st.sampled_from(["random", "few", "equal", "sorted", "reversed", "high"]))
    if dtype.kind == "f":
        info = np.finfo(dtype)
        tiny, huge = info.smallest_subnormal, info.max
        pool = np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, tiny, -tiny, huge, -huge, 3.0])
        pool = pool.astype(dtype)
        values = np.concatenate([pool, rng.standard_normal(8).astype(dtype)])[
            rng.integers(0, 19, size=n)
        ]
    elif dtype.kind == "b":
        values = rng.integers(0, 2, size=n).astype(bool)
    else:
        info = np.iinfo(dtype)
        if shape == "high":
            # Only the top 3 bits vary: all lower digits are constant.
            top = rng.integers(0, 8, size=n).astype(np.uint64) << np.uint64(info.bits - 3)
            values = top.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)
        else:
            values = rng.integers(int(info.min), int(info.max), size=n, dtype=dtype, endpoint=True)
    if shape == "few" and n:
        values = values[rng.integers(0, min(n, 3), size=n)]
    elif shape == "equal" and n:
        values = np.full(n, values[0], dtype=dtype)
    elif shape == "sorted":
        values = np.sort(values, kind="stable")
    elif shape == "reversed":
        values = np.sort(values, kind="stable")[::-1].copy()
    return values


@settings(max_examples=200, deadline=None)
@given(typed_values(max_size=40))
def test_order_keys_keep_the_order_and_ties(v: np.ndarray) -> None:
    k = order_keys(v)
    assert k.dtype == np.uint64
    assert ((k[:, None] < k[None, :]) == (v[:, None] < v[None, :])).all()
    assert ((k[:, None] == k[None, :]) == (v[:, None] == v[None, :])).all()


@settings(max_examples=200, deadline=None)
@given(typed_values(), st.booleans())
def test_stable_argsort_is_numpys_stable_argsort(v: np.ndarray, two_cores: bool) -> None:
    with pytest.MonkeyPatch.context() as patch:
        if two_cores:
            patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        got = stable_argsort(v)
    assert got.dtype == np.int64
    assert got.tolist() == np.argsort(v, kind="stable").tolist()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 120), st.integers(1, 3), st.data())
def test_stable_lexsort_is_numpys_lexsort(n: int, count: int, data: st.DataObject) -> None:
    keys = tuple(data.draw(typed_values(n=n)) for _ in range(count))
    assert stable_lexsort(keys).tolist() == np.lexsort(keys).tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), max_size=80))
def test_sorted_pairs_of_wide_indices_is_a_lexsort(pairs: list[tuple[int, int]]) -> None:
    """Indices of more than 32 bits: two sorts, one a key, instead of one packed word."""
    a = np.array([x for x, _ in pairs], dtype=np.int64)
    b = np.array([y for _, y in pairs], dtype=np.int64)
    d = np.arange(len(pairs), dtype=np.int64)
    order = np.lexsort((b, a))
    got = sorted_pairs(a, b, d, 2**40 + 1)
    assert [x.tolist() for x in got] == [a[order].tolist(), b[order].tolist(), d[order].tolist()]


@settings(deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60)
    | st.lists(st.integers(0, 5), max_size=60),
    st.sampled_from([np.int64, np.uint64, np.int32, np.uint32]),
    st.booleans(),
    st.sampled_from([None, False, True]),
)
def test_sorted_distinct_is_numpys_unique(values, dtype, in_place: bool, radix_wins) -> None:
    # radix_wins: no scratch allowed (None), or what the machine's probe found, forced both
    # ways; every length sorts by radix then.
    if dtype is not np.int64:  # every value in the dtype's range
        info = np.iinfo(dtype)
        values = [v % (int(info.max) + 1) if info.min == 0 else v % (1 << 31) for v in values]
    array = np.array(values, dtype=dtype)
    before = array.copy()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "RADIX_MIN_KEYS", 0)
        patch.setattr(radix, "_radix_faster", radix_wins)
        out = radix.sorted_distinct(array, in_place=in_place, scratch=radix_wins is not None)
    assert out.dtype == array.dtype
    assert np.array_equal(out, np.unique(before))
    if in_place:  # the front of the array itself
        assert out.shape[0] == 0 or np.shares_memory(out, array)
    else:
        assert np.array_equal(array, before)


def test_radix_sort_orders_64_bit_integers_as_numpy_does() -> None:
    rng = np.random.default_rng(5)
    extremes = [0, 1, -1, 2**62, -(2**62), 2**63 - 1, -(2**63)]
    signed = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 50_000), extremes * 3])
    for values in (signed, signed.view(np.uint64)):
        trial = values.copy()
        radix._radix_sort(trial)
        assert np.array_equal(trial, np.sort(values))


def test_the_sort_probe_runs_once_a_process(monkeypatch) -> None:
    monkeypatch.setattr(radix, "_radix_faster", None)
    first = radix.radix_sorts_faster()
    assert isinstance(first, bool) and radix._radix_faster is first
    monkeypatch.setattr(radix, "_radix_sort", None)  # a second timing would call it
    assert radix.radix_sorts_faster() is first


def test_sorted_distinct_refuses_2d() -> None:
    with pytest.raises(ValueError, match=r"1-D, got shape \(2, 2\)"):
        radix.sorted_distinct(np.zeros((2, 2), np.int64))


def test_bad_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="integer, bool or float dtype, got complex128"):
        order_keys(np.array([1j]))
    with pytest.raises(ValueError, match="at least one array"):
        stable_lexsort(())
    with pytest.raises(ValueError, match="length 2, got shape \\(3,\\)"):
        stable_lexsort((np.arange(2), np.arange(3)))


def test_docstring_examples() -> None:
    assert doctest.testmod(radix).failed == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 50), st.sampled_from([0, 1 << 30]))
def test_in_halves_covers_the_range_once(count: int, least: int) -> None:
    """Each index in exactly one call, the calls' ranges consecutive and each told its index:
    one call below ``PARALLEL_MIN_KEYS``, two halves on two threads from it on."""
    calls: list[tuple[int, int, int]] = []
    covered = np.zeros(count, np.int64)

    def kernel(half: int, lo: int, hi: int, out: np.ndarray) -> None:
        calls.append((half, lo, hi))
        out[lo:hi] += 1

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", least)
        in_halves(kernel, count, covered)
    assert covered.tolist() == [1] * count
    one_call = least or (os.cpu_count() or 1) < 2
    halves = [(0, 0, count // 2), (1, count // 2, count)]
    assert sorted(calls) == ([(0, 0, count)] if one_call else halves)


def test_in_halves_cuts_at_middle_by_size_and_returns_the_results() -> None:
    def kernel(half: int, lo: int, hi: int) -> tuple[int, int, int]:
        return half, lo, hi

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 100)
        assert in_halves(kernel, 10, middle=3, size=99) == [(0, 0, 10)]
        two = in_halves(kernel, 10, middle=3, size=100)
        # An empty first half: both calls start at 0, their indices tell them apart.
        empty_first = in_halves(kernel, 10, middle=0, size=100)
    one_call = (os.cpu_count() or 1) < 2
    assert two == ([(0, 0, 10)] if one_call else [(0, 0, 3), (1, 3, 10)])
    assert empty_first == ([(0, 0, 10)] if one_call else [(0, 0, 0), (1, 0, 10)])


def test_in_halves_keeps_one_thread_for_second_halves_and_nests() -> None:
    """The second halves run on one thread kept from call to call; a kernel that cuts its own
    work in halves from that thread runs it whole there (it cannot wait for itself)."""
    threads: list[tuple[int, str]] = []

    def inner(half: int, lo: int, hi: int) -> tuple[int, int, int]:
        return half, lo, hi

    def kernel(half: int, lo: int, hi: int) -> list:
        threads.append((half, threading.current_thread().name))
        return in_halves(inner, 10)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        patch.setattr(radix.os, "cpu_count", lambda: 2)
        first = in_halves(kernel, 10)
        again = in_halves(kernel, 10)
    assert first == again == [[(0, 0, 5), (1, 5, 10)], [(0, 0, 10)]]
    main = threading.current_thread().name
    second = [name for half, name in threads if half == 1]
    assert [name for half, name in threads if half == 0] == [main, main]
    assert len(set(second)) == 1 and second[0].startswith("neardup-second-half")


def test_in_halves_waits_for_the_second_half_when_the_first_fails() -> None:
    done = threading.Event()

    def kernel(half: int, lo: int, hi: int) -> None:
        if half == 0:
            raise ValueError("the first half failed")
        time.sleep(0.05)
        done.set()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(radix, "PARALLEL_MIN_KEYS", 0)
        patch.setattr(radix.os, "cpu_count", lambda: 2)
        with pytest.raises(ValueError, match="the first half failed"):
            in_halves(kernel, 10)
    assert done.is_set()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60), st.data())
def test_index_union_is_numpys_union1d(n: int, data: st.DataObject) -> None:
    parts = [
        np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=40)), dtype=np.int64)
        for _ in range(data.draw(st.integers(0, 3)))
    ]
    want = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    got = index_union(n, *parts)
    assert got.dtype == np.int64
    assert got.tolist() == want.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.integers(0, 2**64 - 1)), max_size=10), st.data())
def test_merged_runs_are_the_sorted_union_carrying_each_keys_value(key_sets, data):
    # Runs of distinct keys (as the remembered verified values hold): each its own sorted run,
    # with a value per key; the merge is the union sorted, each value still beside its key.
    seen: set[int] = set()
    runs = []
    for keys in key_sets:
        keys = sorted(keys - seen)
        seen |= set(keys)
        values = data.draw(st.lists(st.floats(0, 1), min_size=len(keys), max_size=len(keys)))
        runs.append((np.array(keys, dtype=np.uint64), np.array(values, dtype=np.float64)))
    expected = sorted((int(k), float(v)) for keys, values in runs for k, v in zip(keys, values))
    given_runs = list(runs)
    keys, values = radix.merged_runs(given_runs)
    assert given_runs == []
    assert keys.dtype == np.uint64 and values.dtype == np.float64
    assert list(zip(keys.tolist(), values.tolist())) == expected
