"""Radix sorts of 64-bit keys, the sorts under the permutation tables
(:mod:`neardup.candidates.tables`) and the buckets of identical fingerprints.

Least-significant-digit counting sorts, stable, of at most :data:`DIGIT_BITS` bits a pass, so
that the scattered writes of a pass go to 256 places that stay in cache: an argsort of whole
keys (:func:`argsort64`), a sort that moves a payload with the keys (:func:`sorted_carrying`),
pairs of indices sorted by both (:func:`sorted_pairs`), and the sort of a range by chosen bit
fields (:func:`sort_range`, digits from :func:`digits`) with the digit counts of a
partition (:func:`digit_starts`), the distinct values of an array (:func:`sorted_distinct`),
and, over integer or float keys of any dtype mapped to
``uint64`` in order (:func:`order_keys`), a stable argsort (:func:`stable_argsort`) and a sort
by several keys (:func:`stable_lexsort`). A pass whose digit is the same for every key is
skipped.
The large arrays are allocated by numpy, which backs them with huge pages where it can, and
filled by the compiled kernels, which release the GIL: a large sort runs on two cores.

Example:
    >>> keys, order = argsort64(np.array([30, 10, 20, 10], dtype=np.uint64))
    >>> keys.tolist(), order.tolist()
    ([10, 10, 20, 30], [1, 3, 2, 0])
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
from numba import njit

from neardup.memory import index_dtype, joined_parts

__all__ = [
    "DIGIT_BITS",
    "PARALLEL_MIN_KEYS",
    "RADIX_MIN_KEYS",
    "argsort64",
    "compact_distinct",
    "digit_starts",
    "digits",
    "in_halves",
    "index_union",
    "merge_runs_carrying",
    "merged_runs",
    "order_keys",
    "radix_sorts_faster",
    "sort_range",
    "sorted_carrying",
    "sorted_distinct",
    "sorted_pairs",
    "stable_argsort",
    "stable_lexsort",
    "stable_order_consuming",
]

DIGIT_BITS = 8
"""Bits of a radix digit: 256 destinations per pass keep the scattered writes in cache."""

PARALLEL_MIN_KEYS = 1 << 20
"""Sorts of fewer keys run on one core: a thread and a merge would not pay."""

_KEY_BITS = 64


@njit(cache=True, nogil=True)
def digit_starts(values, shift, width, starts):
    """Fill ``starts`` (``2**width + 1`` int64) so that ``starts[d] .. starts[d + 1]`` is where
    the ``uint64`` values of digit ``d`` (bits ``shift .. shift + width - 1``) lie once they
    are in digit order. Compiled; O(n + 2**width).

    Example:
        >>> starts = np.empty(5, np.int64)
        >>> digit_starts(np.array([3, 0, 3, 1], np.uint64), 0, 2, starts)
        >>> starts.tolist()
        [0, 1, 2, 2, 4]
    """
    digit_mask = np.uint64((1 << width) - 1)
    starts[:] = 0
    for i in range(values.shape[0]):
        starts[np.int64((values[i] >> np.uint64(shift)) & digit_mask) + 1] += 1
    for d in range(starts.shape[0] - 1):
        starts[d + 1] += starts[d]


@njit(cache=True, nogil=True)
def _count_digit(src, s, e, shift, digit_mask, counts):
    """Histogram (at ``counts[1:]``) of the digit ``(v >> shift) & digit_mask`` of ``src[s:e]``."""
    for i in range(s, e):
        counts[np.int64((src[i] >> shift) & digit_mask) + 1] += 1


@njit(cache=True, nogil=True)
def _move_digit(src, dst, s, e, shift, digit_mask, counts):
    """One counting-sort pass of ``src[s:e]`` into ``dst[s:e]``, ``counts`` the digit starts."""
    for i in range(s, e):
        v = src[i]
        digit = np.int64((v >> shift) & digit_mask)
        dst[s + counts[digit]] = v
        counts[digit] += 1


@njit(cache=True, nogil=True)
def _digits_less(a, b, shifts, masks):
    # Most significant digit last.
    for d in range(shifts.shape[0] - 1, -1, -1):
        x = (a >> shifts[d]) & masks[d]
        y = (b >> shifts[d]) & masks[d]
        if x != y:
            return x < y
    return False


@njit(cache=True, nogil=True)
def sort_range(keys, scratch, s, e, shifts, masks, counts):
    """Sort the ``uint64`` ``keys[s:e]`` in place, stably, by their digits ``(key >>
    shifts[d]) & masks[d]`` (as from :func:`digits`: least significant first, each of at
    most :data:`DIGIT_BITS` bits), with ``scratch[s:e]`` as the second buffer and ``counts``
    (``2**DIGIT_BITS + 1`` int64) as the histogram. Small ranges by insertion, others one
    pass per digit. Sorting sorted keys leaves them as they are. Compiled; O((e - s) ×
    digits), the ranges of a partition's buckets staying in cache.

    Example:
        >>> keys = np.array([0x21, 0x12, 0x11], np.uint64)
        >>> shifts, masks = digits([(0, 4)])  # by the low hex digit only
        >>> sort_range(keys, np.empty(3, np.uint64), 0, 3, shifts, masks, np.empty(257, np.int64))
        >>> [hex(k) for k in keys]
        ['0x21', '0x11', '0x12']
    """
    if e - s <= 16:
        for i in range(s + 1, e):
            v = keys[i]
            j = i - 1
            while j >= s and _digits_less(v, keys[j], shifts, masks):
                keys[j + 1] = keys[j]
                j -= 1
            keys[j + 1] = v
        return
    in_keys = True
    for d in range(shifts.shape[0]):
        shift = shifts[d]
        digit_mask = masks[d]
        size = np.int64(digit_mask) + 1
        counts[: size + 1] = 0
        if in_keys:
            _count_digit(keys, s, e, shift, digit_mask, counts)
        else:
            _count_digit(scratch, s, e, shift, digit_mask, counts)
        first = ((keys[s] if in_keys else scratch[s]) >> shift) & digit_mask
        if counts[np.int64(first) + 1] == e - s:
            continue
        for b in range(size):
            counts[b + 1] += counts[b]
        if in_keys:
            _move_digit(keys, scratch, s, e, shift, digit_mask, counts)
        else:
            _move_digit(scratch, keys, s, e, shift, digit_mask, counts)
        in_keys = not in_keys
    if not in_keys:
        keys[s:e] = scratch[s:e]


@njit(cache=True, nogil=True)
def _scatter_carrying(keys, payload, keys_out, payload_out, counts, shift):
    """One pass of an LSD radix sort: each key to its digit's next place in ``keys_out``, its
    payload beside it (``payload`` None: its index, the first pass of an order)."""
    for i in range(keys.shape[0]):
        v = keys[i]
        d = np.int64((v >> shift) & np.uint64((1 << DIGIT_BITS) - 1))
        p = counts[d]
        counts[d] = p + 1
        keys_out[p] = v
        payload_out[p] = i if payload is None else payload[i]


@njit(inline="always")
def _moving_passes(keys, bits):
    """The passes of an LSD radix sort of the uint64 ``keys`` by their low ``bits`` that move
    a key, in order: ``(starts, shifts)``, ``starts[k, v]`` where the keys whose digit (of
    :data:`DIGIT_BITS`, at bit ``shifts[k]``) is ``v`` start in pass k's output. A digit
    that every key shares moves nothing: its pass is left out. O(n × passes)."""
    n = keys.shape[0]
    size = 1 << DIGIT_BITS
    passes = max(1, (bits + DIGIT_BITS - 1) // DIGIT_BITS)
    counts = np.zeros((passes, size), np.int64)
    for i in range(n):
        v = keys[i]
        for d in range(passes):
            counts[d, np.int64((v >> np.uint64(d * DIGIT_BITS)) & np.uint64(size - 1))] += 1
    moving = np.zeros(passes, np.bool_)
    for d in range(passes):
        if n > 0:
            digit = (keys[0] >> np.uint64(d * DIGIT_BITS)) & np.uint64(size - 1)
            moving[d] = counts[d, np.int64(digit)] != n
    starts = counts[moving]
    shifts = np.empty(starts.shape[0], np.uint64)
    k = 0
    for d in range(passes):
        if moving[d]:
            shifts[k] = np.uint64(d * DIGIT_BITS)
            k += 1
    for k in range(starts.shape[0]):  # the counts' exclusive cumulative sums
        total = 0
        for b in range(size):
            x = starts[k, b]
            starts[k, b] = total
            total += x
    return starts, shifts


@njit(cache=True, nogil=True)
def _radix_sort_carrying(keys, payload, bits, keys_out, payload_out, keys_tmp, payload_tmp):
    """Stable LSD radix sort of the uint64 ``keys`` (no bit at or above ``bits`` set) into
    ``keys_out``, with ``payload`` moved alike into ``payload_out``; ``*_tmp`` are scratch and
    the inputs are only read. ``O(n × bits / DIGIT_BITS)``; a pass whose digit is the
    same for every key is skipped."""
    starts, shifts = _moving_passes(keys, bits)
    left = shifts.shape[0]
    if left == 0:
        keys_out[:] = keys
        payload_out[:] = payload
        return
    # The passes alternate between the buffers: start so that the last one lands in *_out.
    into_out = left % 2 == 1
    started = False
    for c, shift in zip(starts, shifts):
        if not started:
            if into_out:
                _scatter_carrying(keys, payload, keys_out, payload_out, c, shift)
            else:
                _scatter_carrying(keys, payload, keys_tmp, payload_tmp, c, shift)
            started = True
        elif into_out:
            _scatter_carrying(keys_tmp, payload_tmp, keys_out, payload_out, c, shift)
        else:
            _scatter_carrying(keys_out, payload_out, keys_tmp, payload_tmp, c, shift)
        into_out = not into_out


@njit(cache=True, nogil=True)
def _merge_split(keys, half, k):
    """How many of the first ``k`` outputs of merging the sorted ``keys[:half]`` and
    ``keys[half:]`` (equal keys: the first half first) come from the first half: a binary
    search for the smallest ``i`` whose ``keys[i]`` goes after ``keys[half + k - i - 1]``."""
    rest = keys.shape[0] - half
    lo = max(0, k - rest)
    hi = min(k, half)
    while lo < hi:
        i = (lo + hi) // 2
        if keys[i] <= keys[half + k - i - 1]:
            lo = i + 1
        else:
            hi = i
    return lo


@njit(cache=True, nogil=True)
def _merge_carrying(keys, payload, i, i_end, j, j_end, w, keys_out, payload_out):
    # Merge keys[i:i_end] and keys[j:j_end] (sorted) into *_out[w:]; equal keys: the first run
    # first.
    while i < i_end or j < j_end:
        if j == j_end or (i < i_end and keys[i] <= keys[j]):
            keys_out[w] = keys[i]
            payload_out[w] = payload[i]
            i += 1
        else:
            keys_out[w] = keys[j]
            payload_out[w] = payload[j]
            j += 1
        w += 1


def sorted_carrying(
    keys: np.ndarray, payload: np.ndarray, bits: int = _KEY_BITS
) -> tuple[np.ndarray, np.ndarray]:
    """The ``uint64`` ``keys`` sorted (stably) and the ``payload`` (any dtype, same length)
    in the same order; only bits ``0 .. bits - 1`` of the keys may be set. New arrays, the
    inputs are only read. O(n × bits / DIGIT_BITS); from :data:`PARALLEL_MIN_KEYS` keys on,
    the two halves are sorted on two cores and merged on two cores.

    Example:
        >>> keys, names = sorted_carrying(np.array([2, 1, 2], np.uint64), np.array([7, 8, 9]))
        >>> keys.tolist(), names.tolist()
        ([1, 2, 2], [8, 7, 9])
    """
    n = keys.shape[0]
    keys_out, keys_tmp = np.empty(n, np.uint64), np.empty(n, np.uint64)
    payload_out, payload_tmp = np.empty(n, payload.dtype), np.empty(n, payload.dtype)
    if n < PARALLEL_MIN_KEYS or (os.cpu_count() or 1) < 2:
        _radix_sort_carrying(keys, payload, bits, keys_out, payload_out, keys_tmp, payload_tmp)
        return keys_out, payload_out
    half = n // 2

    def sort(part: slice) -> None:
        # Each half sorted into its part of *_tmp, with its part of *_out as scratch.
        tmp, out = (keys_tmp[part], payload_tmp[part]), (keys_out[part], payload_out[part])
        _radix_sort_carrying(keys[part], payload[part], bits, *tmp, *out)

    # The merge is cut at its middle output too: each core writes half of it.
    middle = n // 2
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(sort, (slice(0, half), slice(half, n))))
        i = _merge_split(keys_tmp, half, middle)
        j = half + middle - i
        runs = ((0, i, half, j, 0), (i, half, j, n, middle))
        done = [
            pool.submit(_merge_carrying, keys_tmp, payload_tmp, *run, keys_out, payload_out)
            for run in runs
        ]
        for future in done:
            future.result()
    return keys_out, payload_out


@njit(cache=True, nogil=True)
def _stable_order(keys, bits, spare, order, spare_order):
    """The stable LSD radix order of ``keys`` (uint64, no bit at or above ``bits``), keys and
    order moving between the caller's arrays and ``spare`` / ``spare_order`` pass by pass:
    returns the order array that holds the result. The first pass writes the order itself
    (no index array beside the keys); a pass whose digit is the same for every key is
    skipped."""
    starts, shifts = _moving_passes(keys, bits)
    if shifts.shape[0] == 0:  # every key alike in every digit: the input order
        for i in range(keys.shape[0]):
            order[i] = i
        return order
    _scatter_carrying(keys, None, spare, order, starts[0], shifts[0])
    source, target = spare, keys
    source_order, target_order = order, spare_order
    for k in range(1, shifts.shape[0]):
        _scatter_carrying(source, source_order, target, target_order, starts[k], shifts[k])
        source, target = target, source
        source_order, target_order = target_order, source_order
    return source_order


def stable_order_consuming(keys: np.ndarray, bits: int = _KEY_BITS) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of the uint64 ``keys`` (no bit at or above ``bits``
    set), in :func:`~neardup.memory.index_dtype` of their count, by an LSD radix sort on one
    core that uses ``keys`` as one of its two key buffers: their values are lost. 24 bytes a
    key at its peak in 4-byte orders (the keys, one more key buffer and two order buffers),
    where :func:`sorted_carrying` holds 36 (its inputs are only read, and its two halves need
    buffers of their own). O(n × bits / DIGIT_BITS).

    Example:
        >>> stable_order_consuming(np.array([2, 1, 2, 0], np.uint64), bits=2).tolist()
        [3, 1, 0, 2]
    """
    if keys.dtype != np.uint64 or keys.ndim != 1:
        raise ValueError(f"keys must be a 1-D uint64 array; got {keys.dtype} of {keys.ndim} dims")
    if not 1 <= bits <= _KEY_BITS:
        raise ValueError(f"bits must be in 1..{_KEY_BITS}; got {bits}")
    n = keys.shape[0]
    index = index_dtype(n)
    spare = np.empty(n, np.uint64)
    order, spare_order = np.empty(n, index), np.empty(n, index)
    return _stable_order(keys, bits, spare, order, spare_order)


@njit(cache=True, nogil=True)
def merge_runs_carrying(keys, runs, a, b, out_a, out_b):
    """Write ``a`` and ``b`` into ``out_a`` and ``out_b`` in the order of their distinct
    ``keys``, which ascend within each run ``runs[r] .. runs[r + 1]`` (int64 bounds): a merge
    of the runs through a binary heap of their heads (``a`` may be ``keys`` themselves).
    Compiled; O(n log runs), no memory but the heap.

    Example:
        >>> keys = np.array([1, 4, 2, 3])
        >>> out_a, out_b = np.empty(4, np.int64), np.empty(4, np.int64)
        >>> merge_runs_carrying(keys, np.array([0, 2, 4]), keys, keys * 10, out_a, out_b)
        >>> out_a.tolist(), out_b.tolist()
        ([1, 2, 3, 4], [10, 20, 30, 40])
    """
    k = runs.shape[0] - 1
    head = runs[:-1].copy()
    heap = np.empty(k, dtype=np.int64)
    size = 0
    for r in range(k):
        if head[r] < runs[r + 1]:
            heap[size] = r
            size += 1
            i = size - 1
            while i > 0 and keys[head[heap[(i - 1) // 2]]] > keys[head[heap[i]]]:
                heap[i], heap[(i - 1) // 2] = heap[(i - 1) // 2], heap[i]
                i = (i - 1) // 2
    w = 0
    while size > 0:
        r = heap[0]
        out_a[w] = a[head[r]]
        out_b[w] = b[head[r]]
        w += 1
        head[r] += 1
        if head[r] == runs[r + 1]:
            size -= 1
            heap[0] = heap[size]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= size:
                break
            if child + 1 < size and keys[head[heap[child + 1]]] < keys[head[heap[child]]]:
                child += 1
            if keys[head[heap[child]]] >= keys[head[heap[i]]]:
                break
            heap[i], heap[child] = heap[child], heap[i]
            i = child


def merged_runs(runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The sorted runs ``(keys, values)`` of distinct keys merged into one sorted run; the list
    is emptied as its columns are joined, so that at most the joined columns and the merged
    ones are held (32 bytes a pair of 8-byte keys and values; a sort of the joined keys
    carrying their places held 72). O(n log runs).

    Example:
        >>> runs = [(np.array([1, 4]), np.array([0.1, 0.4])), (np.array([2]), np.array([0.2]))]
        >>> keys, values = merged_runs(runs)
        >>> keys.tolist(), values.tolist(), runs
        ([1, 2, 4], [0.1, 0.2, 0.4], [])
    """
    bounds = np.cumsum([0] + [keys.shape[0] for keys, _ in runs], dtype=np.int64)
    key_parts, value_parts = [keys for keys, _ in runs], [values for _, values in runs]
    runs.clear()
    keys = joined_parts(key_parts, np.uint64, (0,))
    values = joined_parts(value_parts, np.float64, (0,))
    out_keys, out_values = np.empty_like(keys), np.empty_like(values)
    merge_runs_carrying(keys, bounds, keys, values, out_keys, out_values)
    return out_keys, out_values


def in_halves(
    kernel, count: int, *args, middle: int | None = None, size: int | None = None
) -> list:
    """Call ``kernel(half, lo, hi, *args)`` over ``range(count)`` cut in two at ``middle``
    (default ``count // 2``), the two halves on two threads when ``size`` (the work, default
    ``count``) is :data:`PARALLEL_MIN_KEYS` or more (else one call over the whole range): the
    first half on the calling thread, the second on a thread kept for the process
    (:func:`_second_halves`). ``half`` is the call's index, 0 for the first half or the one
    call, 1 for the second: a kernel that keeps apart what each half gathers picks its part
    by ``half`` (not by ``lo``, which is 0 for both halves when ``middle`` is 0). For compiled
    kernels that release the GIL and write only at the indices of their own half: the result
    is then the same as one call's. Returns the kernel's results in order (one or two). O(1)
    beyond the kernel's cost.

    Example:
        >>> seen = []
        >>> in_halves(lambda half, lo, hi, out: out.append((half, lo, hi)), 5, seen)
        [None]
        >>> seen
        [(0, 0, 5)]
    """
    small = (count if size is None else size) < PARALLEL_MIN_KEYS
    # A call from the second halves' thread (a kernel that cuts its own work in halves) runs
    # whole there: that thread cannot wait for itself.
    if small or (os.cpu_count() or 1) < 2 or threading.current_thread().name.startswith(_HALF):
        return [kernel(0, 0, count, *args)]
    middle = count // 2 if middle is None else middle
    second = _second_halves().submit(kernel, 1, middle, count, *args)
    try:
        first = kernel(0, 0, middle, *args)
    except BaseException:
        wait([second])  # it may still write into what the caller is about to let go
        raise
    return [first, second.result()]


#: The name of the thread that runs the second halves of :func:`in_halves`.
_HALF = "neardup-second-half"
_half_pool: tuple[int, ThreadPoolExecutor] | None = None
_half_lock = threading.Lock()


def _second_halves() -> ThreadPoolExecutor:
    """The one thread of this process that runs second halves, started at the first call: a
    pool started and joined per call costs about 0.35 ms, which the sketches' sweep paid twice
    a tile (tens of thousands of tiles at 100M documents), against 0.03 ms for a submit. A
    forked child (a Spark Python worker) starts its own. O(1)."""
    global _half_pool
    with _half_lock:
        if _half_pool is None or _half_pool[0] != os.getpid():
            _half_pool = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix=_HALF))
        return _half_pool[1]


def index_union(n: int, *parts: np.ndarray, without: np.ndarray | None = None) -> np.ndarray:
    """The sorted distinct indices (int64) that any of ``parts`` holds, each an integer array
    of indices in ``0..n-1``, less those of ``without``: ``np.union1d`` of them (then
    ``np.setdiff1d``), by marking, not sorting. O(n + Σ parts), a byte an index.

    Example:
        >>> index_union(6, np.array([4, 1]), np.array([1, 5, 1])).tolist()
        [1, 4, 5]
        >>> index_union(6, np.array([4, 1]), np.array([1, 5]), without=np.array([4])).tolist()
        [1, 5]
    """
    marked = np.zeros(n, dtype=bool)
    for part in parts:
        marked[part] = True
    if without is not None:
        marked[without] = False
    return np.flatnonzero(marked)


@njit(cache=True, nogil=True)
def compact_distinct(values):
    """The distinct values of the sorted 1-D ``values``, moved to its front in place, as a
    view. Compiled; O(n), no temporary.

    Example:
        >>> compact_distinct(np.array([1, 1, 3, 3, 3, 7])).tolist()
        [1, 3, 7]
    """
    k = 0
    for i in range(values.shape[0]):
        if k == 0 or values[i] != values[k - 1]:
            values[k] = values[i]
            k += 1
    return values[:k]


def sorted_distinct(
    values: np.ndarray, in_place: bool = False, scratch: bool = False
) -> np.ndarray:
    """``np.unique(values)`` of a 1-D integer array: sorted, then one compacting pass;
    ``in_place`` sorts and compacts ``values`` itself and returns a view of its front (no
    copy). numpy's sort of 10M int64 took 0.06 s on a machine where it ran vectorised and
    0.63 s on one where it did not (numpy 2.3 and 2.4 alike; AMD Zen 4 with AVX-512 among
    them), where the LSD radix sort of :func:`sort_range` took 0.23 s with a scratch array as
    large. With ``scratch`` (the caller allows that array), 64-bit keys of at least
    :data:`RADIX_MIN_KEYS` are sorted by whichever of the two sorts a probe found faster on
    this machine (:func:`radix_sorts_faster`); the result is the same. numpy 2.x's
    ``np.unique`` without ``return_*`` takes a hash path for integers that took 11 s for the
    same 10M (5.8 s with half of them repeated). O(n log n) compares, or O(n × 8) by radix.

    Example:
        >>> sorted_distinct(np.array([5, 1, 5, 3])).tolist()
        [1, 3, 5]
        >>> sorted_distinct(np.array([2**63 - 1, -5, 7, -5]), scratch=True).tolist()
        [-5, 7, 9223372036854775807]
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    if not in_place:
        values = values.copy()
    if (
        scratch
        and values.shape[0] >= RADIX_MIN_KEYS
        and values.dtype.kind in "iu"
        and values.dtype.itemsize == 8
        and radix_sorts_faster()
    ):
        _radix_sort(values)
    else:
        values.sort()
    return compact_distinct(values)


RADIX_MIN_KEYS = 1 << 16
"""Fewest keys that :func:`sorted_distinct` may sort by radix: below, the sorts take well
under a millisecond either way."""

_PROBE_KEYS = 1 << 16
_radix_faster: bool | None = None


def radix_sorts_faster() -> bool:
    """Whether the LSD radix sort sorts 64-bit integers faster than numpy's sort on this
    machine, by timing both (best of three) on the same 65,536 random keys, once a process
    (about 10 ms where numpy's sort is not vectorised, 3 ms where it is). Which sort runs
    never changes a result."""
    global _radix_faster
    if _radix_faster is None:
        import time

        keys = np.random.default_rng(0).integers(0, 1 << 62, _PROBE_KEYS)
        best = {"numpy": np.inf, "radix": np.inf}
        for _ in range(3):
            for name, sort in (("numpy", np.ndarray.sort), ("radix", _radix_sort)):
                trial = keys.copy()
                started = time.perf_counter()
                sort(trial)
                best[name] = min(best[name], time.perf_counter() - started)
        _radix_faster = bool(best["radix"] < best["numpy"])
    return _radix_faster


def _radix_sort(values: np.ndarray) -> None:
    """Sort the 64-bit integers ``values`` in place by :func:`sort_range` over their 64 bits
    (signed ones with the sign bit flipped for the sort: the same order), with a scratch
    array as large. O(n × 8)."""
    keys = values.view(np.uint64)
    signed = values.dtype.kind == "i"
    if signed:
        keys ^= _SIGN_BIT
    shifts, masks = digits([(0, _KEY_BITS)])
    sort_range(keys, np.empty_like(keys), 0, keys.shape[0], shifts, masks, np.empty(257, np.int64))
    if signed:
        keys ^= _SIGN_BIT


def argsort64(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted keys, order)`` of ``uint64`` ``keys``: ``keys[order]`` is sorted, equal keys in
    input order (``np.argsort(kind="stable")``). O(n), at most eight passes. Example: see
    the module."""
    return sorted_carrying(keys, np.arange(keys.shape[0], dtype=np.int64))


_SIGN_BIT = np.uint64(1 << 63)


def order_keys(values: np.ndarray) -> np.ndarray:
    """``uint64`` keys in the order of ``values`` (1-D, any integer, bool or float dtype, no
    NaN): ``values[i] < values[j]`` exactly when ``keys[i] < keys[j]``, equal values (``-0.0``
    and ``0.0`` too) give equal keys. Signed integers have their sign bit flipped; floats,
    widened to float64, have it flipped when positive and every bit flipped when negative. A
    new array unless ``values`` is ``uint64`` already. O(n).

    Example:
        >>> order_keys(np.array([-1, 0, 1])).tolist()
        [9223372036854775807, 9223372036854775808, 9223372036854775809]
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind in "ub":
        return values.astype(np.uint64, copy=False)
    if kind == "i":
        return values.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN_BIT
    if kind == "f":
        bits = (values.astype(np.float64) + 0.0).view(np.uint64)  # + 0.0: -0.0 becomes 0.0
        negative = (bits >> np.uint64(63)).astype(bool)
        return np.where(negative, ~bits, bits ^ _SIGN_BIT)
    raise ValueError(f"values must have an integer, bool or float dtype, got {values.dtype}")


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of a 1-D integer, bool or float array (no NaN) by
    a radix sort of its :func:`order_keys`: int64 indices, equal values in input order.
    O(n × significant bytes), on two cores from :data:`PARALLEL_MIN_KEYS` values on.

    Example:
        >>> stable_argsort(np.array([3, -1, 3, 0])).tolist()
        [1, 3, 0, 2]
    """
    return argsort64(order_keys(values))[1]


def stable_lexsort(keys: tuple[np.ndarray, ...] | list[np.ndarray]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key primary, ties in input order) of 1-D integer, bool or
    float arrays of one length (no NaN), as one :func:`stable_argsort` a key from the first
    (least significant) to the last. int64 indices. O(n × keys × significant bytes).

    Example:
        >>> stable_lexsort((np.array([2, 1, 0]), np.array([1, 0, 1]))).tolist()
        [1, 2, 0]
    """
    if len(keys) == 0:
        raise ValueError("keys must hold at least one array, got none")
    n = np.asarray(keys[0]).shape[0]
    order = np.arange(n, dtype=np.int64)
    for key in keys:
        key = np.asarray(key)
        if key.shape != (n,):
            raise ValueError(f"keys must be 1-D arrays of length {n}, got shape {key.shape}")
        order = order[stable_argsort(key[order])]
    return order


def sorted_pairs(
    a: np.ndarray, b: np.ndarray, dist: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of indices ``(a[p], b[p])`` in ``0..n-1`` with a value ``dist[p]`` (any dtype: a
    Hamming distance, a pair's index), sorted stably by ``(a, b)``: one radix sort of ``a`` and
    ``b`` packed into one word (:func:`stable_lexsort` when ``n`` needs more than 32 bits).
    O(pairs × log2(n) / DIGIT_BITS).

    Example:
        >>> a, b, d = sorted_pairs(np.array([2, 0, 0]), np.array([3, 4, 1]),
        ...                        np.array([5, 6, 7], np.uint8), 5)
        >>> a.tolist(), b.tolist(), d.tolist()
        ([0, 0, 2], [1, 4, 3], [7, 6, 5])
    """
    width = max(1, int(n - 1).bit_length())
    if 2 * width > _KEY_BITS:
        order = stable_lexsort((b, a))
        return a[order], b[order], dist[order]
    keys = (a.astype(np.uint64) << np.uint64(width)) | b.astype(np.uint64)
    keys, dist = sorted_carrying(keys, dist, 2 * width)
    a = (keys >> np.uint64(width)).astype(np.int64)
    b = (keys & np.uint64((1 << width) - 1)).astype(np.int64)
    return a, b, dist


def digits(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Radix digits ``(shifts, masks)`` (``uint64``) for :func:`sort_range`, of the bit ranges
    ``(start, width)`` of a key listed most significant first: each range cut into digits of
    at most :data:`DIGIT_BITS` bits of nearly equal width, the least significant digit first.
    O(digits).

    Example:
        >>> [x.tolist() for x in digits([(40, 13), (0, 4)])]
        [[0, 40, 46], [15, 63, 127]]
    """
    shifts, masks = [], []
    for start, width in reversed(spans):
        passes = -(-width // DIGIT_BITS)
        for d in range(passes):
            low = d * width // passes
            high = (d + 1) * width // passes
            shifts.append(start + low)
            masks.append((1 << (high - low)) - 1)
    return np.array(shifts, np.uint64), np.array(masks, np.uint64)
