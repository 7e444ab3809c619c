"""Borrowed views (``neardup.borrowed``): the same data, shape and strides as the array they
view, reads and writes reaching its memory, and no reference counted when a kernel binds them."""

import numpy as np
import pytest
from numba import njit

from neardup.borrowed import borrowed


@njit(cache=True)
def _copied(values):
    view = borrowed(values)
    out = np.empty(view.shape, view.dtype)
    for i in np.ndindex(view.shape):
        out[i] = view[i]
    return out, view.strides


@njit(cache=True)
def _doubled_in_place(values):
    view = borrowed(values)
    for i in range(view.shape[0]):
        view[i] *= 2


@njit(inline="always")
def _run_sum(values, lo, hi, weights, out, q):
    """The weighted sum of ``values[lo:hi]`` into ``out[q]``, -1 at a negative value: a helper
    with a loop and two exits, whose array parameters numba binds with a counted reference
    at every call."""
    total = 0
    for i in range(lo, hi):
        if values[i] < 0:
            out[q] = -1
            return
        total += values[i] * weights[i & 3]
    out[q] = total


def _sums_kernel(borrow: bool):
    """A kernel that sums each run of ``values`` through :func:`_run_sum`, once a run, with
    its arrays borrowed or not."""

    def sums(values, offsets, weights, out):
        if borrow:  # the arguments alone: the caller holds them for the call
            values, weights, out = borrowed(values), borrowed(weights), borrowed(out)
        for q in range(offsets.shape[0] - 1):
            _run_sum(values, offsets[q], offsets[q + 1], weights, out, q)

    return njit(sums)


_SUMS = {borrow: _sums_kernel(borrow) for borrow in (True, False)}


@pytest.mark.parametrize(
    "values",
    [
        np.arange(7, dtype=np.uint8),
        np.arange(12, dtype=np.int64).reshape(3, 4),
        np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::2, 1:],  # not contiguous
        np.zeros(0, dtype=np.uint64),
    ],
)
def test_a_borrowed_view_reads_the_same_values_with_the_same_strides(values):
    copied, strides = _copied(values)
    assert copied.dtype == values.dtype and copied.shape == values.shape
    assert np.array_equal(copied, values)
    assert strides == values.strides


def test_writes_through_a_borrowed_view_reach_the_array():
    values = np.arange(5, dtype=np.int32)
    _doubled_in_place(values)
    assert values.tolist() == [0, 2, 4, 6, 8]


def test_a_kernel_gives_the_same_answers_with_its_arrays_borrowed():
    rng = np.random.default_rng(3)
    values = rng.integers(-1, 50, 2_000)
    offsets = np.unique(np.r_[0, rng.integers(0, 2_000, 300), 2_000])
    weights = np.arange(1, 5)
    sums, plain = (np.zeros(offsets.shape[0] - 1, np.int64) for _ in range(2))
    _SUMS[True](values, offsets, weights, sums)
    _SUMS[False](values, offsets, weights, plain)
    assert np.array_equal(sums, plain)
    assert sums[0] == sum(int(v) * int(weights[i & 3]) for i, v in enumerate(values[: offsets[1]]))


@njit(cache=True)
def _filled_pair(pair):
    small, large = borrowed(pair)
    small[:] = 7
    large[0, 1] = small.shape[0]


def test_a_tuple_of_arrays_is_borrowed_array_by_array():
    pair = (np.zeros(3, np.uint8), np.zeros((2, 2), np.int64))
    _filled_pair(pair)
    assert pair[0].tolist() == [7, 7, 7] and pair[1].tolist() == [[0, 3], [0, 0]]


def test_only_arrays_are_borrowed():
    with pytest.raises(Exception, match="borrowed"):
        njit(lambda x: borrowed(x))(3)
    with pytest.raises(Exception, match="borrowed"):
        njit(lambda x: borrowed(x))((np.zeros(2), 3))
