"""Verifying band candidates against the stored documents while reading as few of their texts
as possible, with the same outcome as verifying every candidate.

A MinHash index's candidates (:class:`neardup.index.minhash.BandTables`) are mostly not
near-duplicates: long texts of one language share enough character 4-grams to share a band by
the thousand. Reading, decompressing and preparing each candidate's text costs tens of
microseconds; the size of its verification data (4 bytes) and its unit sketch (64 bytes,
:mod:`neardup.index.lcs_bound`) rule most of them out exactly, in well under one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neardup.index.lcs_bound import SKETCH_BITS, lcs_upper_bounds, unit_sketches
from neardup.index.minhash import (
    DataCache,
    concat_data,
    decode_text,
    pair_similarity,
    size_bound,
    take_data,
    verification_data,
    verify_threshold,
)
from neardup.lcs import lcs_pairs_one_to_many
from neardup.settings import Settings

__all__ = ["CandidateVerifier"]


class CandidateVerifier:
    """Verification of band candidates against the stored documents: the pairs that pass, and
    their values, are exactly those :func:`~neardup.index.minhash.pair_similarity` passes when
    every candidate's text is read.

    Per stored position, once known, it keeps the size of its verification data (4 bytes) and,
    with LCS verification, its unit sketch (64 bytes): candidates that
    :func:`~neardup.index.lcs_bound.lcs_upper_bounds` rules out with them are dropped before
    their texts are read (on the benchmark corpus, about 96 % of the long texts that a long
    text is a band candidate of and that the lengths leave). Sizes and sketches are learnt
    from :meth:`record` (documents added) and from every text read; a size not yet known is
    read with ``read_sizes``. The texts of the candidates left are read with ``read_texts``
    and prepared (:func:`~neardup.index.minhash.verification_data`), and kept in two
    :class:`~neardup.index.minhash.DataCache`: an eighth of ``max_values`` for positions
    compared once, the rest for those compared again (a candidate met once, as most are,
    would otherwise push out the ones that recur). A position's text never changes
    (positions are never reused), so nothing kept goes stale. Memory: 9 bytes per position up
    to the largest seen, 64 per sketch learnt, plus the cache.

    Args:
        settings: the index's settings.
        read_sizes: the stored sizes of positions (``int64`` array of their ``units``, in the
            order given).
        read_texts: the compressed texts of positions
            (:func:`~neardup.index.minhash.encode_texts` values, in the order given).
        max_values: bound of the data cache.
        workers: threads over which many pairs are compared (a popular template's cluster:
            thousands of pairs that pass); the outcome does not depend on it.

    Example:
        >>> from neardup.index.minhash import data_sizes, encode_texts
        >>> s = Settings(method="minhash")
        >>> texts = ["a b c d e f g h i j", "k l m n o p q r s t"]
        >>> blobs = encode_texts(texts)
        >>> v = CandidateVerifier(s, lambda ps: data_sizes([texts[p] for p in ps], s),
        ...                       lambda ps: [blobs[p] for p in ps])
        >>> probe = verification_data(["a b c d e f g h i x"], s)
        >>> [x.tolist() for x in v.matches(probe, np.array([0, 0]), np.array([0, 1]))]
        [[0], [0], [0.9]]
    """

    _UNKNOWN = np.iinfo(np.uint32).max

    def __init__(
        self,
        settings: Settings,
        read_sizes: Callable[[np.ndarray], np.ndarray],
        read_texts: Callable[[np.ndarray], list[bytes]],
        max_values: int = 4_000_000,
        workers: int = 1,
    ) -> None:
        self.settings = settings
        self.threshold = verify_threshold(settings)
        verification = settings.verification
        self.sketched = verification is not None and verification.measure == "lcs"
        self._read_sizes = read_sizes
        self._read_texts = read_texts
        # Positions compared once go to a small cache of their own, those compared again to
        # the main one: a candidate met once, as most are, does not push out those that recur.
        self.recent = DataCache(max_values // 8)
        self.cache = DataCache(max_values - max_values // 8)
        self.workers = workers
        self._sizes = np.full(0, self._UNKNOWN, np.uint32)
        # Row of each position's sketch in _sketch_rows, -1 while unknown (int32: 2**31 rows).
        self._sketch_of = np.full(0, -1, np.int32)
        self._sketch_rows = np.zeros((0, SKETCH_BITS // 64), np.uint64)
        self._sketch_count = 0
        self._compared = np.zeros(0, np.bool_)  # whose text was read for a comparison

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: sizes, sketches and the data cache's values."""
        return int(
            self._sizes.nbytes
            + self._sketch_of.nbytes
            + self._compared.nbytes
            + self._sketch_rows.nbytes
            + 8 * (self.cache.values + self.recent.values)
        )

    def record(self, positions: np.ndarray, data: tuple[np.ndarray, np.ndarray]) -> None:
        """Learn the sizes (and sketches) of stored documents from their verification data
        (CSR, rows in the order of ``positions``): call it once they are committed.
        O(their units).

        Example:
            >>> s = Settings(method="minhash")
            >>> v = CandidateVerifier(s, None, None)
            >>> v.record(np.array([4, 5]), verification_data(["a b", "c"], s))
            >>> v.nbytes > 0
            True
        """
        positions = np.asarray(positions, np.int64)
        if positions.size == 0:
            return
        self._grow(int(positions.max()) + 1)
        sizes = np.diff(data[0])
        fits = sizes < self._UNKNOWN
        self._sizes[positions[fits]] = sizes[fits]
        if self.sketched:
            start = self._sketch_count
            need = start + positions.shape[0]
            if need > self._sketch_rows.shape[0]:
                rows = max(need, 2 * self._sketch_rows.shape[0], 1024)
                grown = np.zeros((rows, SKETCH_BITS // 64), np.uint64)
                grown[:start] = self._sketch_rows[:start]
                self._sketch_rows = grown
            self._sketch_rows[start:need] = unit_sketches(*data)
            self._sketch_of[positions] = np.arange(start, need, dtype=np.int32)
            self._sketch_count = need

    def matches(
        self, probe_data: tuple[np.ndarray, np.ndarray], qi: np.ndarray, pos: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The candidate pairs (probe row ``qi[p]`` of ``probe_data``, stored position
        ``pos[p]``) that pass the verification, with their measure:
        ``(qi, pos, similarity)``, in the order given: the same pairs and values as
        :func:`~neardup.index.minhash.pair_similarity` over every candidate, keeping those at
        or above the verification threshold (see the class example). O(candidates) in
        memory, plus reading and preparing the texts of those the bounds leave (unless
        cached) and the measure of each.
        """
        qi = np.asarray(qi, np.int64)
        pos = np.asarray(pos, np.int64)
        sizes = self._sizes_of(pos)
        keep = self._may_pass(probe_data, qi, pos, sizes)
        qi, pos, sizes = qi[keep], pos[keep], sizes[keep]
        unsketched = np.flatnonzero(self._sketch_of[pos] < 0) if self.sketched else pos[:0]
        # Rows 0..n-1 are the probes' data, then one row per candidate left, each read and
        # prepared once (or found in the cache).
        used, at = np.unique(pos, return_inverse=True)
        stored, row_of = self._stored_data(used)
        at = row_of[at]
        if unsketched.size:
            # Their sketches were learnt on reading them: screen them before comparing.
            keep = np.ones(pos.shape[0], bool)
            keep[unsketched] = self._may_pass(
                probe_data, qi[unsketched], pos[unsketched], sizes[unsketched]
            )
            qi, pos, at = qi[keep], pos[keep], at[keep]
        if self.sketched and self.workers <= 1:
            # Each probe against its candidates: its masks built once (a popular template's
            # copy has thousands), no joined copy of the data.
            threshold = self.settings.verification.threshold
            sim = lcs_pairs_one_to_many(*probe_data, *stored, qi, at, threshold)
        else:
            n = probe_data[0].shape[0] - 1
            sim = pair_similarity(
                *concat_data([probe_data, stored]),
                qi,
                n + at,
                self.settings,
                screen=False,
                workers=self.workers,
            )
        ok = sim >= self.threshold
        return qi[ok], pos[ok], sim[ok]

    def _stored_data(self, used: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """The verification data of the distinct positions ``used`` and the row of each in it.
        Positions compared before come through the main cache and stay there; the others go
        to the cache of first comparisons: most candidates are compared once, and caching
        them with the others would push out those that recur (a popular template's cluster,
        whose scan would then miss every time once it outgrows the cache)."""
        again = self._compared[used]
        self._compared[used] = True
        if again.all():
            return self.cache.rows(used, self._promote), np.arange(used.shape[0])
        if not again.any():
            return self.recent.rows(used, self._load), np.arange(used.shape[0])
        row_of = np.empty(used.shape[0], np.int64)
        row_of[again] = np.arange(int(np.count_nonzero(again)))
        row_of[~again] = np.arange(int(np.count_nonzero(again)), used.shape[0])
        cached = self.cache.rows(used[again], self._promote)
        return concat_data([cached, self.recent.rows(used[~again], self._load)]), row_of

    def _promote(self, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The data of positions compared again, from the cache of first comparisons if it
        still holds them."""
        return self.recent.rows(positions, self._load)

    def _sizes_of(self, pos: np.ndarray) -> np.ndarray:
        """The sizes of stored positions (``int64``), reading those not known yet."""
        if pos.size:
            self._grow(int(pos.max()) + 1)
        sizes = self._sizes[pos].astype(np.int64)
        unknown = sizes == self._UNKNOWN
        if unknown.any():
            ask, where = np.unique(pos[unknown], return_inverse=True)
            read = np.asarray(self._read_sizes(ask), np.int64)
            sizes[unknown] = read[where]
            fits = read < self._UNKNOWN
            self._sizes[ask[fits]] = read[fits]
        return sizes

    def _may_pass(
        self,
        probe_data: tuple[np.ndarray, np.ndarray],
        qi: np.ndarray,
        pos: np.ndarray,
        sizes: np.ndarray,
    ) -> np.ndarray:
        """Which candidate pairs their sizes and the sketches known do not rule out."""
        if not self.sketched:
            return size_bound(np.diff(probe_data[0])[qi], sizes, self.settings)
        bound = lcs_upper_bounds(
            *probe_data, qi, sizes, self._sketch_rows, self._sketch_of[pos], self.threshold
        )
        return bound >= self.threshold

    def _load(self, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The verification data of stored positions, from their texts; learns their
        sketches on the way."""
        positions = np.array(positions, np.int64)
        texts = [decode_text(blob) for blob in self._read_texts(positions)]
        data = verification_data(texts, self.settings)
        if self.sketched:
            new = self._sketch_of[positions] < 0
            if new.all():
                self.record(positions, data)
            elif new.any():
                self.record(positions[new], take_data(data, np.flatnonzero(new)))
        return data

    def _grow(self, size: int) -> None:
        if size <= self._sizes.shape[0]:
            return
        size = max(size, int(self._sizes.shape[0] * 1.5) + 1024)
        sizes = np.full(size, self._UNKNOWN, np.uint32)
        sizes[: self._sizes.shape[0]] = self._sizes
        sketch_of = np.full(size, -1, np.int32)
        sketch_of[: self._sketch_of.shape[0]] = self._sketch_of
        compared = np.zeros(size, np.bool_)
        compared[: self._compared.shape[0]] = self._compared
        self._sizes, self._sketch_of, self._compared = sizes, sketch_of, compared
