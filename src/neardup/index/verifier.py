"""Verifying band candidates against the stored documents while reading as few of their texts
as possible, with the same outcome as verifying every candidate.

A MinHash index's candidates (:class:`neardup.index.minhash.BandTables`) are mostly not
near-duplicates: long texts of one language share enough character 4-grams to share a band by
the thousand. Reading, decompressing and preparing each candidate's text costs tens of
microseconds; the size of its verification data (4 bytes) and its unit sketch (64 bytes,
:mod:`neardup.index.lcs_bound`) rule most of them out exactly, in well under one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from neardup.index.cache import MappedRows
from neardup.index.errors import VerificationTooLongError
from neardup.index.lcs_bound import SKETCH_BITS, lcs_upper_bounds, unit_sketches
from neardup.index.minhash import (
    DataCache,
    concat_data,
    data_sizes,
    pair_similarity,
    size_ratio,
    take_data,
    verification_data,
    verify_threshold,
)
from neardup.lcs import COUNT_BUCKETS, count_sketches, lcs_pairs_one_to_many, possible_pairs
from neardup.settings import Settings
from neardup.text.units import lcs_unit_summaries
from neardup.verify import LCS_UNIT

__all__ = ["CandidateVerifier", "summarize"]

_WORDS = SKETCH_BITS // 64
"""64-bit words of a unit sketch."""


def summarize(
    texts: Sequence[str], settings: Settings, chunk: int = 16_384
) -> dict[str, np.ndarray]:
    """The :meth:`CandidateVerifier.summaries` of documents at positions ``1..len(texts)``:
    their sizes and, with LCS verification, unit and count sketches (row 0 unknown), in one
    pass over each text that keeps none of its units
    (:func:`neardup.text.units.lcs_unit_summaries`), ``chunk`` texts at a time so that their
    canonical forms are never all held at once. O(total text).

    Example:
        >>> out = summarize(["a b c", "d"], Settings(method="minhash"))
        >>> out["sizes"].tolist(), out["sketches"].shape
        ([4294967295, 3, 1], (3, 8))
    """
    n = len(texts)
    sizes = np.full(n + 1, CandidateVerifier._UNKNOWN, np.uint32)
    verification = settings.verification
    if verification is None or verification.measure != "lcs":
        sizes[1:] = data_sizes(texts, settings)
        return {"sizes": sizes}
    sketches = np.zeros((n + 1, _WORDS), np.uint64)
    counts = np.zeros((n + 1, COUNT_BUCKETS), np.uint8)
    for start in range(0, n, chunk):
        rows = slice(1 + start, 1 + start + chunk)
        sizes[rows], counts[rows], sketches[rows] = lcs_unit_summaries(
            texts[start : start + chunk], LCS_UNIT
        )
    return {"sizes": sizes, "sketches": sketches, "counts": counts}


class CandidateVerifier:
    """Verification of band candidates against the stored documents: the pairs that pass, and
    their values, are exactly those :func:`~neardup.index.minhash.pair_similarity` passes when
    every candidate's text is read.

    Per stored position, once known, it keeps the size of its verification data (4 bytes) and,
    with LCS verification, its unit sketch (64 bytes): candidates that
    :func:`~neardup.index.lcs_bound.lcs_upper_bounds` rules out with them are dropped before
    their texts are read (on the benchmark corpus, about 96 % of the long texts that a long
    text is a band candidate of and that the lengths leave). Sizes and sketches come from the
    index's cache (:meth:`load_summaries`, written with the tables: :meth:`summaries`), from
    :meth:`record` (documents added) and from every text read; a size not yet known is read
    with ``read_sizes``. The texts of the candidates left are read with ``read_texts``
    and prepared (:func:`~neardup.index.minhash.verification_data`), and kept in two
    :class:`~neardup.index.minhash.DataCache`: an eighth of ``max_values`` for positions
    compared once, the rest for those compared again (a candidate met once, as most are,
    would otherwise push out the ones that recur). A position's text never changes
    (positions are never reused), so nothing kept goes stale. Memory: 70 bytes per position
    up to the largest seen (5 without LCS verification), plus the cache.

    Args:
        settings: the index's settings.
        read_sizes: the stored sizes of positions (``int64`` array of their ``units``, in the
            order given).
        read_texts: the stored texts of positions (in the order given), checked against
            their checksums.
        max_values: bound of the data cache.
        workers: threads over which many pairs are compared (a popular template's cluster:
            thousands of pairs that pass); the outcome does not depend on it.

    Example:
        >>> from neardup.index.minhash import data_sizes
        >>> s = Settings(method="minhash")
        >>> texts = ["a b c d e f g h i j", "k l m n o p q r s t"]
        >>> v = CandidateVerifier(s, lambda ps: data_sizes([texts[p] for p in ps], s),
        ...                       lambda ps: [texts[p] for p in ps])
        >>> probe = verification_data(["a b c d e f g h i x"], s)
        >>> [x.tolist() for x in v.matches(probe, np.array([0, 0]), np.array([0, 1]))]
        [[0], [0], [0.9], [False]]
    """

    _UNKNOWN = np.iinfo(np.uint32).max

    def __init__(
        self,
        settings: Settings,
        read_sizes: Callable[[np.ndarray], np.ndarray],
        read_texts: Callable[[np.ndarray], list[str]],
        max_values: int = 4_000_000,
        workers: int = 1,
    ) -> None:
        self.work_limit: int | None = None
        """The LCS work one call of :meth:`matches` may spend on long probes (word
        operations, see :func:`~neardup.lcs.lcs_pairs_one_to_many`), or None: no limit."""
        self._budget = np.full(1, -1, np.int64)
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
        # By position: the size of its verification data, its sketch and whether that is
        # known, and whether its text was read for a comparison. Grown with np.zeros, whose
        # pages stay unmapped until written, so room beyond the positions costs nothing.
        self._sizes = np.full(0, self._UNKNOWN, np.uint32)
        self._sketches = np.zeros((0, _WORDS), np.uint64)
        self._sketched = np.zeros(0, np.bool_)
        self._compared = np.zeros(0, np.bool_)
        # Count sketches (LCS): of the positions below len(_mapped) in the cache's file, read
        # for the candidates the sketches leave; of those after it, once learnt, in memory
        # until the next cache (128 bytes each).
        self._mapped: MappedRows | None = None
        self._late_counts = np.zeros((0, COUNT_BUCKETS), np.uint8)
        self._late_known = np.zeros(0, np.bool_)

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: sizes, sketches and the data cache's values."""
        return int(
            self._sizes.nbytes
            + self._sketches.nbytes
            + self._sketched.nbytes
            + self._compared.nbytes
            + self._late_counts.nbytes
            + 8 * (self.cache.values + self.recent.values)
        )

    @property
    def _base(self) -> int:
        """The first position whose count sketch is not in the mapped file."""
        return 0 if self._mapped is None else len(self._mapped)

    def summaries(self, size: int) -> dict[str, np.ndarray]:
        """What is known of positions ``0..size-1``, to cache with the tables: ``sizes``
        (``uint32``, :data:`_UNKNOWN` where unknown) and, with LCS verification, ``sketches``
        (``uint64[size, 8]``) and ``counts`` (:func:`neardup.lcs.count_sketches`,
        ``uint8[size, 128]``), all zero where unknown (a text with units has some). O(size).
        """
        self._grow(size)
        out = {"sizes": self._sizes[:size]}
        if self.sketched:
            out["sketches"] = np.where(self._sketched[:size, None], self._sketches[:size], 0)
            counts = np.zeros((size, COUNT_BUCKETS), np.uint8)
            known, rows = self._counts_of(np.arange(size), self._sizes[:size].astype(np.int64))
            counts[known] = rows[known]
            out["counts"] = counts
        return out

    def load_summaries(
        self, sizes: np.ndarray, sketches: np.ndarray | None, counts: MappedRows | None = None
    ) -> None:
        """Take the :meth:`summaries` of a cache (positions ``0..len(sizes)-1``; the count
        sketches mapped, not loaded), so that candidates are ruled out without reading their
        texts from the start. O(len)."""
        n = sizes.shape[0]
        self._grow(n)
        self._sizes[:n] = sizes
        if self.sketched and sketches is not None:
            self._sketches[:n] = sketches
            empty = sizes == 0
            self._sketched[:n] = empty | sketches.any(axis=1)
        if self.sketched:
            self.map_counts(counts)

    def map_counts(self, counts: MappedRows | None) -> None:
        """Read the count sketches of the positions below ``len(counts)`` from ``counts`` (a
        newer cache holds those learnt since: they are dropped from memory). O(1)."""
        if counts is None or len(counts) < self._base:
            return
        keep = max(self._base + self._late_known.shape[0] - len(counts), 0)
        start = len(counts) - self._base
        self._late_counts = self._late_counts[start : start + keep].copy()
        self._late_known = self._late_known[start : start + keep].copy()
        self._mapped = counts

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
            self._sketches[positions] = unit_sketches(*data)
            self._sketched[positions] = True
            late = positions >= self._base
            if late.any():
                at = positions[late] - self._base
                if int(at.max()) >= self._late_known.shape[0]:
                    size = max(int(at.max()) + 1, int(self._late_known.shape[0] * 1.5))
                    self._late_counts = _grown(self._late_counts, size)
                    self._late_known = _grown(self._late_known, size)
                self._late_counts[at] = count_sketches(*data)[late]
                self._late_known[at] = True

    def disagreements(self, positions: np.ndarray, texts: list[str]) -> np.ndarray:
        """The positions whose known size, unit sketch or count sketch differs from what
        their texts give (``texts`` in the order of ``positions``): a cached summary that
        would rule a true match out. What ``neardup index check`` reports. O(their units).

        Example:
            >>> s = Settings(method="minhash")
            >>> v = CandidateVerifier(s, None, None)
            >>> v.record(np.array([1, 2]), verification_data(["a b", "c d"], s))
            >>> v.disagreements(np.array([1, 2]), ["a b", "c d e"]).tolist()
            [2]
        """
        positions = np.asarray(positions, np.int64)
        truth = summarize(texts, self.settings)
        sizes = truth["sizes"][1:].astype(np.int64)
        self._grow(int(positions.max(initial=0)) + 1)
        known = self._sizes[positions].astype(np.int64)
        bad = (known != self._UNKNOWN) & (known != sizes)
        if self.sketched:
            sketches = self._sketches[positions]
            bad |= self._sketched[positions] & (sketches != truth["sketches"][1:]).any(axis=1)
            has, counts = self._counts_of(positions, sizes)
            bad |= has & (counts != truth["counts"][1:]).any(axis=1)
        return positions[bad]

    def matches(
        self,
        probe_data: tuple[np.ndarray, np.ndarray],
        qi: np.ndarray,
        pos: np.ndarray,
        groups: np.ndarray | None = None,
        enough: int = 1,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The candidate pairs (probe row ``qi[p]`` of ``probe_data``, stored position
        ``pos[p]``) that pass the verification, with their measure, and which probes were
        cut short: ``(qi, pos, similarity, cut)``, ``cut`` a ``bool`` per probe row.

        Without ``groups``, every candidate the bounds leave is compared: the same pairs and
        values as :func:`~neardup.index.minhash.pair_similarity` over every candidate, keeping
        those at or above the verification threshold (see the class example), and ``cut`` is
        all False. With ``groups`` (a group label per candidate, each label's positions in one
        group of the index), each probe's candidates in one group are compared nearest in
        size first, and only until ``enough`` of them pass (``cut`` is True for a probe that kept
        candidates unverified): every group holding a match still gets one, so what a probe
        would join is exact, while a popular template's thousands of copies cost ``enough``
        comparisons instead of thousands. The candidates per group taken double each round,
        so a group whose candidates fail costs O(log) rounds.

        O(candidates) in memory, plus reading and preparing the texts of those compared
        (unless cached) and the measure of each.
        """
        qi = np.asarray(qi, np.int64)
        pos = np.asarray(pos, np.int64)
        self._budget[0] = -1 if self.work_limit is None else self.work_limit
        cut = np.zeros(probe_data[0].shape[0] - 1, bool)
        sizes = self._sizes_of(pos)
        probe_counts = count_sketches(*probe_data) if self.sketched else None
        if groups is None or cut.shape[0] > 1:
            # A batch's candidates are mostly ruled out by the bounds: drop them before
            # grouping. A single probe groups first: a popular template's copy has thousands
            # of candidates in one group, of which only the first few need bounds.
            keep = np.flatnonzero(self._bounds(probe_data, qi, pos, sizes) >= self.threshold)
            qi, pos, sizes = qi[keep], pos[keep], sizes[keep]
            if groups is None:
                sim = self._compare(probe_data, probe_counts, qi, pos, sizes)
                ok = sim >= self.threshold
                return qi[ok], pos[ok], sim[ok], cut
            groups = np.asarray(groups)[keep]
        # Each probe's candidates by group, the nearest in size first (then by position, the
        # order given): two stable integer sorts, where sorting by the bounds would first
        # need the bounds of every candidate.
        gap = np.abs(sizes - np.diff(probe_data[0])[qi])
        order = np.argsort(np.minimum(gap, 65535).astype(np.uint16), kind="stable")
        key = (qi[order] << 32) | np.asarray(groups, np.int64)[order]
        by_key = np.argsort(key, kind="stable")
        order, key = order[by_key], key[by_key]
        qi, pos, sizes = qi[order], pos[order], sizes[order]
        m = qi.shape[0]
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        run = np.repeat(np.arange(starts.shape[0]), np.diff(np.append(starts, m)))
        rank = np.arange(m) - starts[run]
        length = np.diff(np.append(starts, m))
        tried = np.zeros(starts.shape[0], np.int64)
        passed = np.zeros(starts.shape[0], np.int64)
        sim = np.full(m, -1.0)
        while True:
            need = np.where(passed < enough, np.maximum(enough - passed, tried), 0)
            upto = np.minimum(tried + need, length)
            pick = np.flatnonzero((rank >= tried[run]) & (rank < upto[run]))
            if pick.size == 0:
                break
            sim[pick] = 0.0
            pick = pick[
                self._bounds(probe_data, qi[pick], pos[pick], sizes[pick]) >= self.threshold
            ]
            sim[pick] = self._compare(probe_data, probe_counts, qi[pick], pos[pick], sizes[pick])
            passed += np.bincount(run[pick], sim[pick] >= self.threshold, starts.shape[0]).astype(
                np.int64
            )
            tried = upto
        cut[qi[starts[tried < length]]] = True
        ok = sim >= self.threshold
        return qi[ok], pos[ok], sim[ok], cut

    def _counts_of(self, pos: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``pos`` (sizes ``sizes``) have a known count sketch, and the sketches
        (``uint8[len(pos), 128]``, zero where unknown)."""
        base = self._base
        counts = np.zeros((pos.shape[0], COUNT_BUCKETS), np.uint8)
        known = np.zeros(pos.shape[0], bool)
        early = np.flatnonzero(pos < base)
        if early.size:
            counts[early] = self._mapped.take(pos[early])
            known[early] = counts[early].any(axis=1) | (sizes[early] == 0)
        late = np.flatnonzero(pos >= base)
        late = late[pos[late] - base < self._late_known.shape[0]]
        counts[late] = self._late_counts[pos[late] - base]
        known[late] = self._late_known[pos[late] - base]
        return known, counts

    def _count_screen(
        self,
        probe_data: tuple[np.ndarray, np.ndarray],
        probe_counts: np.ndarray,
        qi: np.ndarray,
        sizes: np.ndarray,
        counts: np.ndarray,
    ) -> np.ndarray:
        """Which candidate pairs (probe row ``qi[p]``, whose count sketch is
        ``probe_counts[qi[p]]``, and a document of ``sizes[p]`` units and count sketch
        ``counts[p]``) the count bound of the LCS kernels does not rule out
        (:func:`neardup.lcs.possible_pairs`, ``dedup``'s filter): ``bool`` per pair."""
        if qi.size == 0:
            return np.ones(0, bool)
        n = probe_data[0].shape[0] - 1
        return possible_pairs(
            np.concatenate([np.diff(probe_data[0]), sizes]),
            np.concatenate([probe_counts, counts]),
            qi,
            n + np.arange(qi.shape[0]),
            self.settings.verification.threshold,
        )

    def _compare(
        self,
        probe_data: tuple[np.ndarray, np.ndarray],
        probe_counts: np.ndarray | None,
        qi: np.ndarray,
        pos: np.ndarray,
        sizes: np.ndarray,
    ) -> np.ndarray:
        """The measure of candidate pairs the bounds left (``float64`` each, exact at or
        above the threshold), reading and preparing the texts not cached.

        LCS: the count bound of the LCS kernels rules out first, about 15 times fewer than
        the 512-bit sketches leave of long texts of one language: before the texts are read
        for the candidates whose count sketch is known (cached with the tables, or learnt),
        after for the others."""
        sim = np.zeros(qi.shape[0])
        todo = np.arange(qi.shape[0])
        if self.sketched:
            known, counts = self._counts_of(pos, sizes)
            ok = self._count_screen(
                probe_data, probe_counts, qi[known], sizes[known], counts[known]
            )
            todo = np.flatnonzero(~known)
            todo = np.sort(np.concatenate([todo, np.flatnonzero(known)[ok]]))
        # Rows 0..n-1 are the probes' data, then one row per candidate, each read and
        # prepared once (or found in the cache).
        used, at = np.unique(pos[todo], return_inverse=True)
        stored, row_of = self._stored_data(used)
        at = row_of[at]
        if self.sketched:
            fresh = np.flatnonzero(~known[todo])
            keep = np.ones(todo.shape[0], bool)
            keep[fresh] = self._count_screen(
                probe_data,
                probe_counts,
                qi[todo[fresh]],
                np.diff(stored[0])[at[fresh]],
                count_sketches(*take_data(stored, at[fresh])),
            )
            todo, at = todo[keep], at[keep]
        if self.sketched and self.workers <= 1:
            # Each probe against its candidates: its masks built once (a popular template's
            # copy has thousands), no joined copy of the data.
            threshold = self.settings.verification.threshold
            sim[todo] = lcs_pairs_one_to_many(
                *probe_data, *stored, qi[todo], at, threshold, budget=self._budget
            )
            if np.isnan(sim[todo]).any():
                raise VerificationTooLongError(
                    f"verifying a text of {int(np.diff(probe_data[0]).max()):,} words against its "
                    f"candidates would take more than {self.work_limit:,} word operations (about "
                    f"{self.work_limit / 1e9:.1f} s), the limit of a request; nothing was stored"
                )
        else:
            n = probe_data[0].shape[0] - 1
            sim[todo] = pair_similarity(
                *concat_data([probe_data, stored]),
                qi[todo],
                n + at,
                self.settings,
                screen=False,
                workers=self.workers,
            )
        return sim

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

    def _bounds(
        self,
        probe_data: tuple[np.ndarray, np.ndarray],
        qi: np.ndarray,
        pos: np.ndarray,
        sizes: np.ndarray,
    ) -> np.ndarray:
        """An upper bound of each candidate pair's measure from the sizes and the sketches
        known (``float64``): below the threshold, the pair cannot pass."""
        if not self.sketched:
            return size_ratio(np.diff(probe_data[0])[qi], sizes, self.settings)
        rows = np.where(self._sketched[pos], pos, -1)
        return lcs_upper_bounds(*probe_data, qi, sizes, self._sketches, rows, self.threshold)

    def _load(self, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The verification data of stored positions, from their texts; learns their
        sketches on the way."""
        positions = np.array(positions, np.int64)
        texts = self._read_texts(positions)
        data = verification_data(texts, self.settings)
        if self.sketched:
            new = ~self._sketched[positions]
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
        self._sizes = sizes
        self._compared = _grown(self._compared, size)
        if self.sketched:
            self._sketches = _grown(self._sketches, size)
            self._sketched = _grown(self._sketched, size)


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with ``size`` rows, the new ones zero."""
    out = np.zeros((size, *array.shape[1:]), array.dtype)
    out[: array.shape[0]] = array
    return out
