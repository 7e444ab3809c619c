"""The 64-bit feature hashes: XXH64 (default) and MD5-64 (compatibility).

Fingerprints are stored and compared across runs and machines, so the hash of a feature is part of
neardup's file format and never changes between versions:

``xxh``
    XXH64 (the 64-bit xxHash, specification in the xxHash repository's ``doc/xxhash_spec.md``)
    with seed 0, over the UTF-8 bytes of the feature. ``hash_bytes(b"abc") == 0x44BC2CF5AD770999``,
    the same value as ``xxhash.xxh64_intdigest(b"abc")``.
``md5``
    The upper 64 bits of MD5 (RFC 1321): the first 8 digest bytes read as a big-endian integer,
    ``int.from_bytes(hashlib.md5(data).digest()[:8], "big")``, as seed 000's design does.

Both are implemented as numba kernels over one byte buffer and ``(start, end)`` slices, so a
batch of features is hashed without a Python loop. ``splitmix64`` derives reproducible constants
(MinHash coefficients, band keys) from a seed.

Example:
    >>> hex(hash_bytes(b"abc"))
    '0x44bc2cf5ad770999'
    >>> hex(hash_bytes(b"abc", "md5"))
    '0x900150983cd24fb0'
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

HASH_NAMES = ("xxh", "md5")
#: The feature hash when none is given: XXH64 (see the module docstring).
DEFAULT_HASH_NAME = "xxh"
XXH, MD5 = 0, 1

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


def hash_code(hash_name: str) -> int:
    """Return the kernel code of a hash name (``"xxh"`` → 0, ``"md5"`` → 1).

    Raises:
        ValueError: for any other name.
    """
    if hash_name not in HASH_NAMES:
        raise ValueError(f"hash must be one of {', '.join(HASH_NAMES)}; got {hash_name!r}")
    return HASH_NAMES.index(hash_name)


@njit(inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _unaligned_load(bits):
    """An intrinsic ``(buf, i) -> uint`` reading ``bits / 8`` bytes at ``buf[i]`` in one load.

    XXH64 reads its input as little-endian words at any byte offset; assembling them byte by
    byte costs 8 loads, shifts and ors per word, where the hardware does one unaligned load.
    Only used for C-contiguous uint8 arrays on little-endian hosts (see ``_read64``).
    """
    result = types.uint64 if bits == 64 else types.uint32

    @intrinsic
    def load(typingctx, buf, i):
        if not (isinstance(buf, types.Array) and buf.dtype == types.uint8 and buf.ndim == 1):
            return None
        if not isinstance(i, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            index = context.cast(builder, args[1], signature.args[1], types.intp)
            pointer = builder.bitcast(
                builder.gep(array.data, [index]), ir.IntType(bits).as_pointer()
            )
            return builder.load(pointer, align=1)

        return result(buf, i), codegen

    return load


_load64 = _unaligned_load(64)
_load32 = _unaligned_load(32)
_FAST_LOADS = sys.byteorder == "little"


def _read64(buf, i):  # pragma: no cover - replaced by the overload below inside numba
    raise NotImplementedError


def _read32(buf, i):  # pragma: no cover - replaced by the overload below inside numba
    raise NotImplementedError


def _bytewise64(buf, i):
    return (
        np.uint64(buf[i])
        | (np.uint64(buf[i + 1]) << np.uint64(8))
        | (np.uint64(buf[i + 2]) << np.uint64(16))
        | (np.uint64(buf[i + 3]) << np.uint64(24))
        | (np.uint64(buf[i + 4]) << np.uint64(32))
        | (np.uint64(buf[i + 5]) << np.uint64(40))
        | (np.uint64(buf[i + 6]) << np.uint64(48))
        | (np.uint64(buf[i + 7]) << np.uint64(56))
    )


def _bytewise32(buf, i):
    return (
        np.uint64(buf[i])
        | (np.uint64(buf[i + 1]) << np.uint64(8))
        | (np.uint64(buf[i + 2]) << np.uint64(16))
        | (np.uint64(buf[i + 3]) << np.uint64(24))
    )


def _fast_ok(buf):
    return _FAST_LOADS and isinstance(buf, types.Array) and buf.layout == "C"


@overload(_read64, inline="always")
def _read64_impl(buf, i):
    """Little-endian uint64 at buf[i:i + 8]."""
    if _fast_ok(buf):
        return lambda buf, i: _load64(buf, i)
    return _bytewise64


@overload(_read32, inline="always")
def _read32_impl(buf, i):
    """Little-endian uint32 at buf[i:i + 4], widened to uint64."""
    if _fast_ok(buf):
        return lambda buf, i: np.uint64(_load32(buf, i))
    return _bytewise32


@njit(inline="always")
def _xxh_round(acc, lane):
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


@njit(inline="always")
def _xxh_merge(acc, val):
    acc = acc ^ _xxh_round(np.uint64(0), val)
    return acc * _P1 + _P4


def _xxh64(buf, start, end, seed):
    """XXH64 of ``buf[start:end]`` with a uint64 ``seed`` (compiled below, to be inlined)."""
    length = end - start
    i = start
    if length >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        limit = end - 32
        while i <= limit:
            v1 = _xxh_round(v1, _read64(buf, i))
            v2 = _xxh_round(v2, _read64(buf, i + 8))
            v3 = _xxh_round(v3, _read64(buf, i + 16))
            v4 = _xxh_round(v4, _read64(buf, i + 24))
            i += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _xxh_merge(h, v1)
        h = _xxh_merge(h, v2)
        h = _xxh_merge(h, v3)
        h = _xxh_merge(h, v4)
    else:
        h = seed + _P5
    h = h + np.uint64(length)
    while i + 8 <= end:
        h = h ^ _xxh_round(np.uint64(0), _read64(buf, i))
        h = _rotl(h, 27) * _P1 + _P4
        i += 8
    if i + 4 <= end:
        h = h ^ (_read32(buf, i) * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        i += 4
    while i < end:
        h = h ^ (np.uint64(buf[i]) * _P5)
        h = _rotl(h, 11) * _P1
        i += 1
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    h = h ^ (h >> np.uint64(32))
    return h


# The kernels that hash many slices inline this copy into their loops.
_xxh64_inline = njit(inline="always")(_xxh64)


@njit(inline="always")
def _pick(cond, a, b):
    """``a if cond else b`` for uint64 values, without a branch."""
    mask = np.uint64(0) - np.uint64(cond)
    return (a & mask) | (b & ~mask)


@njit(inline="always")
def _xxh64_tail(h, buf, i, rest):
    """The XXH64 steps over the last ``rest`` (< 32) bytes at ``buf[i]``, without branches
    (reads 31 bytes from ``i`` whatever ``rest`` is)."""
    lanes = rest >> np.uint64(3)
    for r in range(3):
        step = _rotl(h ^ _xxh_round(np.uint64(0), _read64(buf, i + 8 * r)), 27) * _P1 + _P4
        h = _pick(np.uint64(r) < lanes, step, h)
    i = i + np.int64(lanes << np.uint64(3))
    has4 = (rest >> np.uint64(2)) & np.uint64(1)
    step = _rotl(h ^ (_read32(buf, i) * _P1), 23) * _P2 + _P3
    h = _pick(has4, step, h)
    i += np.int64(has4 << np.uint64(2))
    bytes_left = rest & np.uint64(3)
    for r in range(3):
        step = _rotl(h ^ (np.uint64(buf[np.uint64(i + r)]) * _P5), 11) * _P1
        h = _pick(np.uint64(r) < bytes_left, step, h)
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


@njit(inline="always")
def _xxh64_short(buf, start, end):
    """XXH64 (seed 0) of ``buf[start:end]`` for ``end - start < 32``, without branches.

    Requires ``start + 32 <= len(buf)``: it reads up to 32 bytes from ``start`` and keeps only
    the rounds that the length calls for. Feature slices are mostly 5–40 bytes of random
    length, so the branches of :func:`_xxh64`'s tail would be mispredicted on most calls; this
    form does a little more arithmetic and lets the CPU overlap consecutive hashes.
    """
    length = np.uint64(end - start)
    return _xxh64_tail(_P5 + length, buf, start, length)


@njit(inline="always")
def _xxh64_below16(low, high, length):
    """XXH64 (seed 0) of ``length`` (< 16, uint64) bytes held little-endian in the words
    ``low`` (bytes 0–7) and ``high`` (bytes 8–15; bytes past ``length`` are ignored).

    Every step is computed and kept or dropped by :func:`_pick`, and the bytes are taken from
    the two words by shifts, not loads: a loop over many short slices (words of a text) then
    vectorises, which :func:`_xxh64_short`, reading at offsets that depend on the length,
    does not."""
    h = _P5 + length
    lane = (length >> np.uint64(3)) != np.uint64(0)
    h = _pick(lane, _rotl(h ^ _xxh_round(np.uint64(0), low), 27) * _P1 + _P4, h)
    rest = _pick(lane, high, low)
    has4 = (length >> np.uint64(2)) & np.uint64(1)
    step = _rotl(h ^ ((rest & np.uint64(0xFFFFFFFF)) * _P1), 23) * _P2 + _P3
    h = _pick(has4 != np.uint64(0), step, h)
    rest = rest >> (has4 << np.uint64(5))
    bytes_left = length & np.uint64(3)
    for r in range(3):
        byte = (rest >> np.uint64(8 * r)) & np.uint64(0xFF)
        h = _pick(np.uint64(r) < bytes_left, _rotl(h ^ (byte * _P5), 11) * _P1, h)
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


@njit(inline="always")
def _xxh64_padded(buf, start, end):
    """XXH64 (seed 0) of ``buf[start:end]``: the branch-free form when there are 32 readable
    bytes from ``start`` and the slice is shorter than 32 bytes, else the general one."""
    if end - start < 32 and start + 32 <= buf.shape[0]:
        return _xxh64_short(buf, start, end)
    return _xxh64_inline(buf, start, end, np.uint64(0))


@njit(cache=True)
def xxh64_slice(buf, start, end, seed):
    """XXH64 of ``buf[start:end]`` (uint8 array) with a uint64 ``seed``. O(end - start)."""
    return _xxh64_inline(buf, start, end, seed)


# MD5 per-round shift amounts and sine-derived constants (RFC 1321, section 3.4).
_MD5_S = np.array(
    [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4,
    dtype=np.uint32,
)
_MD5_K = np.array(
    [int(abs(np.sin(np.float64(i + 1))) * 2**32) & 0xFFFFFFFF for i in range(64)],
    dtype=np.uint32,
)


@njit(cache=True)
def _md5_block(state, block, s_table, k_table):
    # numba widens 32-bit integer arithmetic to 64 bits, so words are kept in uint64 and masked.
    mask = np.uint64(0xFFFFFFFF)
    a, b, c, d = state[0], state[1], state[2], state[3]
    for i in range(64):
        if i < 16:
            f = (b & c) | (~b & d)
            g = i
        elif i < 32:
            f = (d & b) | (~d & c)
            g = (5 * i + 1) % 16
        elif i < 48:
            f = b ^ c ^ d
            g = (3 * i + 5) % 16
        else:
            f = c ^ (b | (~d & mask))
            g = (7 * i) % 16
        m = (
            np.uint64(block[4 * g])
            | (np.uint64(block[4 * g + 1]) << np.uint64(8))
            | (np.uint64(block[4 * g + 2]) << np.uint64(16))
            | (np.uint64(block[4 * g + 3]) << np.uint64(24))
        )
        f = (f + a + np.uint64(k_table[i]) + m) & mask
        a = d
        d = c
        c = b
        s = np.uint64(s_table[i])
        b = (b + (((f << s) | (f >> (np.uint64(32) - s))) & mask)) & mask
    state[0] = (state[0] + a) & mask
    state[1] = (state[1] + b) & mask
    state[2] = (state[2] + c) & mask
    state[3] = (state[3] + d) & mask


@njit(cache=True)
def md5_64_slice(buf, start, end, s_table, k_table):
    """Upper 64 bits (big-endian) of MD5 of ``buf[start:end]``. O(end - start)."""
    state = np.array([0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476], dtype=np.uint64)
    length = end - start
    block = np.zeros(64, dtype=np.uint8)
    i = start
    while i + 64 <= end:
        block[:] = buf[i : i + 64]
        _md5_block(state, block, s_table, k_table)
        i += 64
    rest = end - i
    block[:] = 0
    block[:rest] = buf[i:end]
    block[rest] = 0x80
    if rest >= 56:
        _md5_block(state, block, s_table, k_table)
        block[:] = 0
    bits = np.uint64(length) * np.uint64(8)
    for j in range(8):
        block[56 + j] = np.uint8((bits >> np.uint64(8 * j)) & np.uint64(0xFF))
    _md5_block(state, block, s_table, k_table)
    # Digest bytes are the state words in little-endian order; the first 8 of them, read
    # big-endian, make the upper 64 bits.
    out = np.uint64(0)
    for w in range(2):
        word = state[w]
        for j in range(4):
            out = (out << np.uint64(8)) | ((word >> np.uint64(8 * j)) & np.uint64(0xFF))
    return out


@njit(cache=True)
def hash_slice(buf, start, end, code, s_table, k_table):
    """Feature hash of ``buf[start:end]``: XXH64 seed 0 (``code`` 0) or MD5-64 (``code`` 1)."""
    if code == 0:
        return _xxh64_inline(buf, start, end, np.uint64(0))
    return md5_64_slice(buf, start, end, s_table, k_table)


@njit(cache=True, nogil=True)
def _hash_slices(buf, starts, ends, code, s_table, k_table):
    out = np.empty(starts.shape[0], dtype=np.uint64)
    if code == 0:
        for i in range(starts.shape[0]):
            out[i] = _xxh64_inline(buf, starts[i], ends[i], np.uint64(0))
    else:
        for i in range(starts.shape[0]):
            out[i] = md5_64_slice(buf, starts[i], ends[i], s_table, k_table)
    return out


def hash_bytes(data: bytes, hash_name: str = DEFAULT_HASH_NAME) -> int:
    """Feature hash of one byte string, as a Python int in ``0 .. 2**64 - 1``.

    Example:
        >>> hash_bytes("SimHash 계산 방법을".encode()) == int(hash_strings(["SimHash 계산 방법을"])[0])
        True
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    code = hash_code(hash_name)
    return int(_hash_slices(buf, np.array([0]), np.array([len(data)]), code, _MD5_S, _MD5_K)[0])


def hash_strings(strings: list[str], hash_name: str = DEFAULT_HASH_NAME) -> np.ndarray:
    """Feature hashes of many strings (their UTF-8 bytes) as a uint64 array.

    The strings are joined into one buffer and hashed by one kernel call: O(total bytes).

    Example:
        >>> hash_strings(["abc", ""]).tolist() == [hash_bytes(b"abc"), hash_bytes(b"")]
        True
    """
    encoded = [s.encode("utf-8") for s in strings]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return _hash_slices(buf, starts, ends, hash_code(hash_name), _MD5_S, _MD5_K)


@njit(cache=True)
def splitmix64(x):
    """The splitmix64 finaliser of ``x + 0x9E3779B97F4A7C15`` (uint64 → uint64, a bijection)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def splitmix64_stream(seed, count):
    """``count`` uint64 values: ``splitmix64(seed + i * 0x9E3779B97F4A7C15)`` for i = 0..count-1."""
    out = np.empty(count, dtype=np.uint64)
    for i in range(count):
        out[i] = splitmix64(seed + np.uint64(i) * np.uint64(0x9E3779B97F4A7C15))
    return out
