"""The MinHash side of the index: band tables in memory, texts on disk, verification of candidates.

A MinHash index decides near-duplicates exactly as ``neardup dedup --method minhash`` does (the
same :class:`neardup.pipeline.Settings`): documents are candidates when their MinHash signatures
agree on a whole LSH band (:mod:`neardup.candidates.bands`), and a candidate pair is a
near-duplicate when it passes the run's verification (by default the LCS resemblance of
:mod:`neardup.lcs` at 0.8, :class:`neardup.verify.Verification`; with ``verify="none"`` the
MinHash estimate of Jaccard at ``threshold``).

In memory (:class:`BandTables`), per band, the sorted ``uint32`` band keys (the top 32 bits of
:func:`neardup.candidates.bands.band_hashes`) and the positions in that order:
``8 · bands + 2`` bytes per document (258 at the default 32 bands). Truncating the 64-bit band
hash to 32 bits only adds spurious candidates (about ``bands · n / 2**32`` per query, 0.007 at
1M documents), which verification removes; equal bands always have equal keys, so none is
lost. A cache of the verification data of candidates that recur (:class:`DataCache`, 32 MB)
spares the members of a popular template's cluster that its copies are compared with being read
and prepared for every copy; :class:`neardup.index.verifier.CandidateVerifier` reads as few
texts as it can.

On disk (SQLite table ``minhash(pos, keys, units, text)``): the band keys (``uint32[bands]``,
so the tables are rebuilt without recomputing signatures), the size of the document's
verification data and its UTF-8 text compressed with zstd, read only for candidates: the
verification data (LCS units or shingle sets, or the signature with ``verify="none"``) is
computed from the text with the index's settings, by the same functions ``dedup`` calls. The
sizes reject, exactly, the candidates whose lengths alone rule them out (:func:`size_bound`)
before their texts are decompressed.

Example:
    >>> keys = np.array([[1, 2], [1, 3], [4, 5]], np.uint32)
    >>> t = BandTables(2, positions=np.array([1, 2, 3]), keys=keys)
    >>> q, p = t.probe(np.array([[1, 9]], np.uint32))
    >>> sorted(p.tolist())
    [1, 2]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import zstandard
from numba import njit

from neardup.candidates.bands import band_hashes, pairs_from_band_columns
from neardup.index.lcs_bound import lcs_upper_bounds, unit_sketches
from neardup.index.sorted_rows import MAX_POSITION, LiveRows, merge_rows, sort_rows
from neardup.minhash import jaccard_estimate
from neardup.pipeline import signatures
from neardup.settings import Settings
from neardup.text.units import lcs_unit_counts
from neardup.verify import LCS_UNIT

__all__ = [
    "BandTables",
    "DataCache",
    "band_keys",
    "band_pairs",
    "concat_data",
    "data_sizes",
    "decode_text",
    "encode_texts",
    "has_checksum",
    "keys_of_band_hashes",
    "pair_similarity",
    "size_bound",
    "size_ratio",
    "take_data",
    "verification_data",
    "verify_threshold",
]

_ZSTD_LEVEL = 3
"""zstd level of the stored texts: about 3x smaller English text at several hundred MB/s."""


def band_keys(signature: np.ndarray, settings: Settings) -> np.ndarray:
    """The ``uint32[n, bands]`` band keys of MinHash signatures (``uint32[n, num_perm]``): the
    top 32 bits of each band's 64-bit hash, with the settings' banding. O(n · bands · rows).

    Example:
        >>> s = Settings(method="minhash", shingle="char:4")
        >>> sig = signatures(["one text", "one text"], s).signature
        >>> k = band_keys(sig, s)
        >>> k.shape, bool((k[0] == k[1]).all())
        ((2, 32), True)
    """
    bands, rows = settings.banding()
    return keys_of_band_hashes(band_hashes(np.ascontiguousarray(signature, np.uint32), bands, rows))


def keys_of_band_hashes(hashes: np.ndarray) -> np.ndarray:
    """The band keys (``uint32``, same shape) of 64-bit band hashes
    (:func:`neardup.candidates.bands.band_hashes`): their top 32 bits. O(size).

    Example:
        >>> keys_of_band_hashes(np.array([[(7 << 32) | 5]], np.uint64)).tolist()
        [[7]]
    """
    return (hashes >> np.uint64(32)).astype(np.uint32)


def band_pairs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``a < b`` of rows of ``keys`` (``uint32[n, bands]``) equal on at least one
    band, once (the ``"all"`` candidates of
    :func:`neardup.candidates.bands.pairs_from_band_columns`).
    Output-sized: a bucket of ``m`` rows gives ``m (m - 1) / 2`` pairs.

    Example:
        >>> [a.tolist() for a in band_pairs(np.array([[1, 2], [1, 3], [0, 3]], np.uint32))]
        [[0, 1], [1, 2]]
    """
    columns = (keys[:, t].astype(np.uint64) for t in range(keys.shape[1]))
    return pairs_from_band_columns(columns, "all")


def encode_texts(texts: Sequence[str]) -> list[bytes]:
    """Each text as zstd-compressed UTF-8 (the ``text`` column), its frame carrying the
    checksum of the text (XXH64, 4 bytes) that :func:`decode_text` checks. O(total bytes).

    Example:
        >>> decode_text(encode_texts(["héllo"])[0])
        'héllo'
    """
    compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_checksum=True)
    return [compressor.compress(t.encode("utf-8", "surrogatepass")) for t in texts]


def has_checksum(blob: bytes) -> bool:
    """Whether an :func:`encode_texts` value carries its text's checksum: False for the texts
    stored before checksums were (and for a blob too damaged to say). O(1).

    Example:
        >>> has_checksum(encode_texts(["abc"])[0]), has_checksum(b"not zstd")
        (True, False)
    """
    try:
        return bool(zstandard.get_frame_parameters(blob).has_checksum)
    except zstandard.ZstdError:
        return False


_decompressors = threading.local()


def decode_text(blob: bytes) -> str:
    """The text of an :func:`encode_texts` value; ValueError if it is damaged: its checksum
    fails, or it does not decompress. O(bytes).

    Example:
        >>> decode_text(encode_texts(["abc"])[0])
        'abc'
    """
    # Creating a decompressor costs more than decompressing a short text; one per thread,
    # as a decompressor is not safe to share between threads.
    decompressor = getattr(_decompressors, "zstd", None)
    if decompressor is None:
        decompressor = _decompressors.zstd = zstandard.ZstdDecompressor()
    try:
        # Streamed, not decompress(): that trusts the size in the frame header (a flipped bit
        # there gives an empty text, or asks for terabytes) and stops before the checksum.
        stream = decompressor.decompressobj()
        data = stream.decompress(blob)
        if not stream.eof or stream.unused_data:
            raise zstandard.ZstdError("the frame's length is not the stored length")
        return data.decode("utf-8", "surrogatepass")
    except (zstandard.ZstdError, TypeError, UnicodeDecodeError) as error:
        raise ValueError(f"a stored text is damaged ({error})") from None


def verify_threshold(settings: Settings) -> float:
    """The value a candidate pair's :func:`pair_similarity` must reach: the verification
    threshold, or ``threshold`` (of the MinHash estimate) without verification."""
    return settings.threshold if settings.verify is None else float(settings.verify)


def verification_data(
    texts: Sequence[str], settings: Settings, signature: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`pair_similarity` compares, as CSR ``(offsets int64[n + 1], values uint64)``:
    the data of the settings' verification (:meth:`neardup.verify.Verification.prepare`: LCS
    units or sorted distinct shingle hashes, the functions ``dedup`` calls), or without
    verification the MinHash signatures (``num_perm`` values per text; ``signature`` if
    already computed). The row sizes (``np.diff(offsets)``) are what :func:`size_bound` takes.
    O(total bytes).

    Example:
        >>> o, v = verification_data(["a b c d", "a b"], Settings(method="minhash"))
        >>> np.diff(o).tolist()   # LCS units: words
        [4, 2]
    """
    texts = list(texts)
    verification = settings.verification
    if verification is not None:
        return verification.prepare(texts, settings.shingle, settings.hash_name)
    if signature is None:
        signature = signatures(texts, settings, keep_sets=False).signature
    offsets = np.arange(len(texts) + 1, dtype=np.int64) * settings.num_perm
    return offsets, np.ascontiguousarray(signature, np.uint32).astype(np.uint64).reshape(-1)


def data_sizes(texts: Sequence[str], settings: Settings) -> np.ndarray:
    """The row sizes of :func:`verification_data` (``int64[n]``) without building the rows
    where a count suffices (LCS units). O(total bytes).

    Example:
        >>> data_sizes(["a b c d", "a b"], Settings(method="minhash")).tolist()
        [4, 2]
    """
    texts = list(texts)
    verification = settings.verification
    if verification is None:
        return np.full(len(texts), settings.num_perm, np.int64)
    if verification.measure == "lcs":
        return np.asarray(lcs_unit_counts(texts, LCS_UNIT), np.int64)
    return np.diff(verification_data(texts, settings)[0])


def take_data(
    data: tuple[np.ndarray, np.ndarray], rows: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The CSR rows ``rows`` of ``data``, in that order. O(their values).

    Example:
        >>> d = (np.array([0, 1, 3]), np.array([7, 8, 9], np.uint64))
        >>> [x.tolist() for x in take_data(d, [1, 0])]
        [[0, 2, 3], [8, 9, 7]]
    """
    offsets, values = data
    offsets = np.asarray(offsets, np.int64)
    rows = np.asarray(rows, np.int64)
    starts = offsets[rows]
    sizes = offsets[rows + 1] - starts
    out = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    # Each value's place in ``values``: its row's start plus its place in the row.
    index = np.repeat(starts - out[:-1], sizes) + np.arange(out[-1])
    return out, values[index].astype(np.uint64, copy=False)


def concat_data(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Several CSR ``(offsets, values)`` as one, rows in order. O(total values).

    Example:
        >>> one = (np.array([0, 2]), np.array([5, 6], np.uint64))
        >>> [x.tolist() for x in concat_data([one, one])]
        [[0, 2, 4], [5, 6, 5, 6]]
    """
    ends = np.cumsum([p[1].shape[0] for p in parts])
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    offsets = np.concatenate(
        [p[0][:-1] + s for p, s in zip(parts, starts)] + [ends[-1:].astype(np.int64)]
    )
    return (
        offsets.astype(np.int64, copy=False),
        np.concatenate([p[1] for p in parts]).astype(np.uint64, copy=False),
    )


def size_ratio(size_a: np.ndarray, size_b: np.ndarray, settings: Settings) -> np.ndarray:
    """An upper bound of each pair's measure from the sizes of their verification data alone
    (``float64`` per pair): an LCS is at most the shorter sequence and an intersection at most
    the smaller set, so both measures are at most ``min / max`` of the sizes (two empty
    texts: 1). Without verification (the MinHash estimate), 1. O(pairs).

    Example:
        >>> size_ratio(np.array([10, 10, 0]), np.array([8, 7, 0]), Settings(method="minhash"))
        array([0.8, 0.7, 1. ])
    """
    size_a = np.asarray(size_a, np.int64)
    size_b = np.asarray(size_b, np.int64)
    if settings.verification is None:
        return np.ones(size_a.shape[0])
    low, high = np.minimum(size_a, size_b), np.maximum(size_a, size_b)
    return np.where(high > 0, low / np.maximum(high, 1), 1.0)


def size_bound(size_a: np.ndarray, size_b: np.ndarray, settings: Settings) -> np.ndarray:
    """Which pairs may reach :func:`verify_threshold` from their sizes alone (``bool`` per
    pair, :func:`size_ratio` at or above it): exact, never dropping a near-duplicate.
    O(pairs).

    Example:
        >>> size_bound(np.array([10, 10, 0]), np.array([8, 7, 0]), Settings(method="minhash"))
        array([ True, False,  True])
    """
    return size_ratio(size_a, size_b, settings) >= verify_threshold(settings)


def pair_similarity(
    offsets: np.ndarray,
    values: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    settings: Settings,
    *,
    screen: bool = True,
    workers: int = 1,
) -> np.ndarray:
    """The near-duplicate measure of rows ``a[p]`` and ``b[p]`` of :func:`verification_data`
    (float64 per pair), as ``dedup`` verifies its candidates: the verification measure of the
    settings, or the MinHash estimate of Jaccard when ``verify`` is None. Values at or above
    :func:`verify_threshold` are exact; below it, LCS values may be any value below it: with
    ``screen``, the pairs that :func:`~neardup.index.lcs_bound.lcs_upper_bounds` rules out
    are not compared (``screen=False`` when the caller has screened them already), and the
    kernel stops early. Many LCS pairs are spread over ``workers`` threads (the values do not
    depend on it). O(the measure per pair).

    Example:
        >>> s = Settings(method="minhash", shingle="char:4")
        >>> o, v = verification_data(["a b c d e f g h i j", "a b c d e f g h i x"], s)
        >>> pair_similarity(o, v, np.array([0]), np.array([1]), s).tolist()
        [0.9]
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    if a.shape[0] == 0:
        return np.zeros(0, np.float64)
    verification = settings.verification
    if verification is None:
        rows = values.astype(np.uint32).reshape(-1, settings.num_perm)
        return np.asarray(jaccard_estimate(rows[a], rows[b]), np.float64)
    if verification.measure != "lcs" or not screen:
        return verification.similarity(offsets, values, a, b, workers=workers)
    used, at = np.unique(b, return_inverse=True)
    sim = lcs_upper_bounds(
        offsets,
        values,
        a,
        np.diff(offsets)[b],
        unit_sketches(offsets, values, used),
        at,
        verification.threshold,
    )
    compare = sim >= verification.threshold
    sim[compare] = verification.similarity(offsets, values, a[compare], b[compare], workers=workers)
    return sim


class DataCache:
    """The verification data of recently compared stored documents, by position: a
    least-recently-used cache of at most ``max_values`` values (8 bytes each; the default 4M
    is 32 MB). A position's text never changes (positions are never reused), so an entry never
    goes stale. It spares the repeated candidates (a popular template is a candidate of every
    copy) decompressing and preparing their text again.

    Example:
        >>> cache = DataCache(max_values=3)
        >>> load = lambda ps: (np.arange(len(ps) + 1), np.array(ps, np.uint64))
        >>> [x.tolist() for x in cache.rows([5, 6], load)], len(cache)
        ([[0, 1, 2], [5, 6]], 2)
    """

    def __init__(self, max_values: int = 4_000_000) -> None:
        if max_values < 0:
            raise ValueError(f"max_values must be >= 0, got {max_values}")
        self.max_values = int(max_values)
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self._values = 0

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def values(self) -> int:
        """Values held (8 bytes each)."""
        return self._values

    def rows(
        self,
        positions: Sequence[int] | np.ndarray,
        load: Callable[[list[int]], tuple[np.ndarray, np.ndarray]],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The CSR data of ``positions``, in that order; the positions not cached are read with
        one call of ``load`` (which returns their CSR data in the order given) and kept.
        O(values returned) plus ``load``."""
        positions = np.asarray(positions, np.int64).tolist()
        get = self._rows.get
        found = [get(p) for p in positions]
        missing = [p for p, row in zip(positions, found) if row is None]
        touch = self._rows.move_to_end
        for p, row in zip(positions, found):
            if row is not None:
                touch(p)
        if missing:
            offsets, values = load(missing)
            fresh = {p: values[offsets[i] : offsets[i + 1]].copy() for i, p in enumerate(missing)}
            found = [fresh[p] if row is None else row for p, row in zip(positions, found)]
            for p, row in fresh.items():
                self._put(p, row)
        out = np.zeros(len(found) + 1, np.int64)
        np.cumsum(np.fromiter((row.shape[0] for row in found), np.int64, len(found)), out=out[1:])
        return out, (np.concatenate(found) if found else np.zeros(0)).astype(np.uint64, copy=False)

    def _put(self, position: int, row: np.ndarray) -> None:
        if row.shape[0] > self.max_values:
            return
        self._rows[position] = row
        self._values += row.shape[0]
        while self._values > self.max_values:
            _, old = self._rows.popitem(last=False)
            self._values -= old.shape[0]


# --------------------------------------------------------------------------------------------
# Band tables
# --------------------------------------------------------------------------------------------


@njit(inline="always")
def _run_start(keys, t, key):
    """The first index of ``key`` in the sorted row ``t`` of ``keys`` (a binary search)."""
    lo = 0
    hi = keys.shape[1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[t, mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always")
def _probe_run(keys, rows, t, key, alive, seen, qi, m, out_q, out_p):
    """Write the live positions not seen yet of the run of ``key`` in sorted table ``t``;
    returns the new count."""
    n = keys.shape[1]
    cap = out_q.shape[0]
    i = _run_start(keys, t, key)
    while i < n and keys[t, i] == key:
        p = rows[t, i]
        i += 1
        if alive[p] and not seen[p]:
            seen[p] = True
            if m < cap:
                out_q[m] = qi
                out_p[m] = p
            m += 1
    return m


@njit(inline="always")
def _clear_run(keys, rows, t, key, seen):
    """Clear the marks of every position of the run of ``key`` in sorted table ``t``."""
    i = _run_start(keys, t, key)
    while i < keys.shape[1] and keys[t, i] == key:
        seen[rows[t, i]] = False
        i += 1


@njit(cache=True)
def _band_probe_kernel(
    qkeys, keys, rows, fkeys, frows, alive, tail, tkeys, tail_len, seen, out_q, out_p
):
    """Every (query, live position) equal on a band, once: binary search per band of the
    sorted tables and of the sorted part of the delta, then a scan of the delta's unsorted
    tail. ``seen`` (all False on entry and on return) marks the positions already written for
    the current query, so a position sharing many bands (a near-duplicate shares most) is
    written once. Writes what fits and returns the total, exact even when it does not fit
    (the marks of a query whose positions overflowed are cleared run by run), so one more
    call with that room always suffices."""
    nq = qkeys.shape[0]
    num_bands = keys.shape[0]
    cap = out_q.shape[0]
    m = 0
    for qi in range(nq):
        first = m
        for t in range(num_bands):
            key = qkeys[qi, t]
            m = _probe_run(keys, rows, t, key, alive, seen, qi, m, out_q, out_p)
            m = _probe_run(fkeys, frows, t, key, alive, seen, qi, m, out_q, out_p)
        for j in range(tail_len):
            p = tail[j]
            if not alive[p]:
                continue
            for t in range(num_bands):
                if tkeys[j, t] == qkeys[qi, t]:
                    if m < cap:
                        out_q[m] = qi
                        out_p[m] = p
                    m += 1
                    break
        if m <= cap:
            for i in range(first, m):
                seen[out_p[i]] = False
        else:
            for t in range(num_bands):
                _clear_run(keys, rows, t, qkeys[qi, t], seen)
                _clear_run(fkeys, frows, t, qkeys[qi, t], seen)
    return m


class BandTables(LiveRows):
    """MinHash LSH band tables in memory, for probing documents one batch at a time.

    Documents are addressed by *position* (below 2**32). Per band: ``keys`` (``uint32[n]``,
    sorted) and ``rows`` (``uint32[n]``, the positions in that order), stacked as
    ``(bands, n)`` arrays (:mod:`neardup.index.sorted_rows`); an ``alive`` flag per position.
    New positions go to a delta (``delta[:delta_len]``, in the order added), merged into the
    tables when it exceeds :attr:`delta_limit`; :meth:`discard` marks positions dead, dropped
    at the next merge. The delta is itself sorted tables, binary-searched as the main ones,
    but for its last rows (fewer than :attr:`TAIL_LIMIT`), which are scanned: a probe's cost
    does not grow with the delta, and adding a row costs O(bands · delta / TAIL_LIMIT)
    amortised instead of a merge of the whole tables.

    Args:
        bands: number of bands (the index's banding).
        positions, keys: initial contents: distinct positions and their ``uint32[n, bands]``
            band keys (:func:`band_keys`).

    Complexity: building O(bands · n log n); a probe O(bands · (log n + bucket)) plus the
    delta's tail; memory ``8 · bands + 2`` bytes per position, plus the delta
    (``8 · bands + 4`` bytes per row).

    Example:
        >>> t = BandTables(1)
        >>> t.add(np.array([1, 2]), np.array([[7], [7]], np.uint32))
        >>> t.discard(np.array([1]))
        1
        >>> t.probe(np.array([[7]], np.uint32))[1].tolist()
        [2]
    """

    def __init__(
        self, bands: int, *, positions: np.ndarray | None = None, keys: np.ndarray | None = None
    ) -> None:
        if isinstance(bands, bool) or not isinstance(bands, (int, np.integer)) or bands < 1:
            raise ValueError(f"bands must be an integer >= 1, got {bands!r}")
        self.bands = int(bands)
        positions = np.zeros(0, np.int64) if positions is None else np.asarray(positions, np.int64)
        keys = (
            np.zeros((0, self.bands), np.uint32)
            if keys is None
            else np.ascontiguousarray(keys, np.uint32)
        )
        if keys.shape != (positions.shape[0], self.bands):
            raise ValueError(
                f"keys must have shape ({positions.shape[0]}, {self.bands}), got {keys.shape}"
            )
        if positions.size and (positions.min() < 0 or positions.max() > MAX_POSITION):
            raise ValueError(
                f"positions must be in 0..{MAX_POSITION}, got {positions.min()}..{positions.max()}"
            )
        size = int(positions.max()) + 1 if positions.size else 0
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.alive[positions] = True
        self.size = size
        self.live = int(np.count_nonzero(self.alive))
        if self.live != positions.shape[0]:
            raise ValueError("positions must be distinct")
        self.keys, self.rows = sort_rows(keys.T, positions.astype(np.uint32))
        self._main_max = size - 1
        self._main_dead = 0
        self._reset_delta()
        self.merges = 0
        # The probe's scratch flags, one per position (see _band_probe_kernel), grown lazily.
        self._seen = np.zeros(0, np.bool_)
        self._per_query = 0.0

    @classmethod
    def from_arrays(
        cls, keys: np.ndarray, rows: np.ndarray, alive: np.ndarray, main_dead: int | None = None
    ) -> BandTables:
        """Tables from already sorted ``(bands, n)`` arrays (e.g. memory-mapped from a cache)
        holding positions below ``len(alive)``; ``main_dead`` counts their rows no longer
        alive (None: count them, O(n)). O(size) to copy ``alive``.

        Example:
            >>> t = BandTables(1, positions=np.array([0, 1]), keys=np.array([[3], [3]], np.uint32))
            >>> u = BandTables.from_arrays(t.keys, t.rows, t.alive[:2])
            >>> len(u.probe(np.array([[3]], np.uint32))[1])
            2
        """
        if keys.shape != rows.shape or keys.ndim != 2:
            raise ValueError(
                f"keys and rows must have one shape (bands, n), got {keys.shape} and {rows.shape}"
            )
        self = cls.__new__(cls)
        self.bands = int(keys.shape[0])
        self.keys, self.rows = keys, rows
        size = alive.shape[0]
        self.alive = np.zeros(max(size, 16), np.bool_)
        self.alive[:size] = alive
        self.size = size
        self.live = int(np.count_nonzero(self.alive[:size]))
        self._main_max = size - 1
        if main_dead is None:
            main_dead = int(rows.shape[1] - np.count_nonzero(self.alive[rows[0]]))
        self._main_dead = int(main_dead)
        self._reset_delta()
        self.merges = 0
        # The probe's scratch flags, one per position (see _band_probe_kernel), grown lazily.
        self._seen = np.zeros(0, np.bool_)
        self._per_query = 0.0
        return self

    TAIL_LIMIT = 512
    """Rows of the delta left unsorted (scanned by every probe) before they are sorted in."""

    def _reset_delta(self) -> None:
        self.delta = np.zeros(1024, np.uint32)
        self.delta_len = 0
        # delta[:_folded] as sorted (bands, _folded) tables; the keys of the rest (the tail).
        self._folded = 0
        self._fold_keys = np.zeros((self.bands, 0), np.uint32)
        self._fold_rows = np.zeros((self.bands, 0), np.uint32)
        self._tail_keys = np.zeros((self.TAIL_LIMIT, self.bands), np.uint32)

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays (tables, alive and scratch flags, delta)."""
        return int(
            self.keys.nbytes
            + self.rows.nbytes
            + self.alive.nbytes
            + self._seen.nbytes
            + self.delta.nbytes
            + self._fold_keys.nbytes
            + self._fold_rows.nbytes
            + self._tail_keys.nbytes
        )

    def add(self, positions: np.ndarray, keys: np.ndarray) -> None:
        """Insert new positions (increasing, above every position seen) with their band keys
        (``uint32[m, bands]``) into the delta; sorts the delta's tail in when it reaches
        :attr:`TAIL_LIMIT` rows and merges when the delta exceeds :attr:`delta_limit`.
        Amortised O(bands · (delta / TAIL_LIMIT + n / delta_limit)) per position."""
        positions = np.asarray(positions, np.int64)
        keys = np.asarray(keys, np.uint32)
        if keys.shape != (positions.shape[0], self.bands):
            raise ValueError(
                f"keys must have shape ({positions.shape[0]}, {self.bands}), got {keys.shape}"
            )
        if positions.size == 0:
            return
        top = self._check_new(positions)
        if top > self.alive.shape[0]:
            grown = np.zeros(max(top, int(self.alive.shape[0] * 1.5) + 16), np.bool_)
            grown[: self.size] = self.alive[: self.size]
            self.alive = grown
        self.alive[positions] = True
        self.size = top
        self.live += positions.shape[0]
        held = self.delta_len - self._folded
        tail = held + positions.shape[0]
        if tail > self._tail_keys.shape[0]:
            tail_keys = np.zeros((tail, self.bands), np.uint32)
            tail_keys[:held] = self._tail_keys[:held]
            self._tail_keys = tail_keys
        self._tail_keys[held:tail] = keys
        self._append_delta(positions)
        if self.delta_len > self.delta_limit:
            self.merge()
        elif tail >= self.TAIL_LIMIT:
            self._fold()

    def _fold(self) -> None:
        """Sort the delta's tail into the delta's sorted tables. O(bands · delta)."""
        tail = self.delta_len - self._folded
        tkeys, trows = sort_rows(
            np.ascontiguousarray(self._tail_keys[:tail].T),
            self.delta[self._folded : self.delta_len],
        )
        n_out = self._fold_keys.shape[1] + tail
        out_keys = np.empty((self.bands, n_out), np.uint32)
        out_rows = np.empty((self.bands, n_out), np.uint32)
        merge_rows(
            self._fold_keys, self._fold_rows, tkeys, trows, self.alive, False, out_keys, out_rows
        )
        self._fold_keys, self._fold_rows = out_keys, out_rows
        self._folded = self.delta_len
        if self._tail_keys.shape[0] > self.TAIL_LIMIT:
            self._tail_keys = np.zeros((self.TAIL_LIMIT, self.bands), np.uint32)

    def merge(self) -> None:
        """Merge the live delta rows into the sorted tables and drop dead rows. O(bands · n)."""
        if self.delta_len > self._folded:
            self._fold()
        live = self.alive[self._fold_rows]
        count = int(np.count_nonzero(live[0])) if self.bands and live.shape[1] else 0
        dkeys = np.empty((self.bands, count), np.uint32)
        drows = np.empty((self.bands, count), np.uint32)
        for t in range(self.bands):
            dkeys[t] = self._fold_keys[t][live[t]]
            drows[t] = self._fold_rows[t][live[t]]
        n_out = self.rows.shape[1] - self._main_dead + count
        out_keys = np.empty((self.bands, n_out), np.uint32)
        out_rows = np.empty((self.bands, n_out), np.uint32)
        written = merge_rows(
            self.keys, self.rows, dkeys, drows, self.alive, self._main_dead > 0, out_keys, out_rows
        )
        if written != n_out:
            raise RuntimeError(f"merge wrote {written} rows per band, expected {n_out}")
        self.keys, self.rows = out_keys, out_rows
        if count:
            self._main_max = max(self._main_max, int(drows[0].max()))
        self._main_dead = 0
        self._reset_delta()
        self.merges += 1

    def probe(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every live position sharing at least one band key with each query
        (``uint32[q, bands]``), once per (query, position). Returns ``(query_index int64,
        position int64)`` sorted by query, then position. O(bands · (log n + bucket) + delta)
        per query.

        Example:
            >>> t = BandTables(2, positions=np.array([0, 1]),
            ...                keys=np.array([[1, 2], [1, 2]], np.uint32))
            >>> [a.tolist() for a in t.probe(np.array([[1, 2], [5, 5]], np.uint32))]
            [[0, 0], [0, 1]]
        """
        queries = np.ascontiguousarray(queries, np.uint32)
        if queries.ndim != 2 or queries.shape[1] != self.bands:
            raise ValueError(f"queries must have shape (q, {self.bands}), got {queries.shape}")
        if self._seen.shape[0] < self.alive.shape[0]:
            self._seen = np.zeros(self.alive.shape[0], np.bool_)
        # Room for as many candidates per query as the last probe found, so that a batch is
        # rarely probed twice.
        cap = max(4096, int(queries.shape[0] * self._per_query * 1.25))
        while True:
            out_q = np.empty(cap, np.int64)
            out_p = np.empty(cap, np.int64)
            m = _band_probe_kernel(
                queries,
                self.keys,
                self.rows,
                self._fold_keys,
                self._fold_rows,
                self.alive,
                self.delta[self._folded :],
                self._tail_keys,
                np.int64(self.delta_len - self._folded),
                self._seen,
                out_q,
                out_p,
            )
            if m <= cap:
                break
            cap = m  # the count is exact: the second call fits
        self._per_query = m / max(queries.shape[0], 1)
        # Written query by query, each in band order: sort each query's positions.
        _sort_runs(out_q[:m], out_p[:m])
        return out_q[:m], out_p[:m]


@njit(cache=True, nogil=True)
def _sort_runs(keys, values):
    """Sort ``values`` (positions, ``0 <= v < 2**33``) within each run of equal ``keys``, in
    place: a long run (a popular template's 20,000 candidates) by three passes of an 11-bit
    radix sort, twice as fast as a comparison sort there. O(n log run) at most."""
    scratch = np.empty(0, values.dtype)
    start = 0
    for i in range(1, keys.shape[0] + 1):
        if i == keys.shape[0] or keys[i] != keys[start]:
            run = values[start:i]
            if run.shape[0] <= 512:
                run.sort()
            else:
                if scratch.shape[0] < run.shape[0]:
                    scratch = np.empty(run.shape[0], values.dtype)
                _radix_sort(run, scratch[: run.shape[0]])
            start = i


@njit(inline="always")
def _radix_pass(src, dst, shift):
    count = np.zeros(2049, np.int64)
    for i in range(src.shape[0]):
        count[((src[i] >> shift) & 2047) + 1] += 1
    for d in range(2048):
        count[d + 1] += count[d]
    for i in range(src.shape[0]):
        d = (src[i] >> shift) & 2047
        dst[count[d]] = src[i]
        count[d] += 1


@njit(cache=True, nogil=True)
def _radix_sort(values, scratch):
    # Three stable passes over 11-bit digits, least significant first.
    _radix_pass(values, scratch, 0)
    _radix_pass(scratch, values, 11)
    _radix_pass(values, scratch, 22)
    values[:] = scratch
