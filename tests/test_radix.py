"""Tests of neardup.candidates.radix: each radix sort against numpy's stable sorts."""

from __future__ import annotations

import doctest

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
    sort_range,
    sorted_carrying,
    sorted_pairs,
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


def test_docstring_examples() -> None:
    assert doctest.testmod(radix).failed == 0
