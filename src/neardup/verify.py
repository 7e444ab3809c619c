"""Exact verification of candidate pairs: Jaccard of their shingle sets, or the order-aware LCS
resemblance of :mod:`neardup.lcs` (the definition's rule 2).

A :class:`Verification` names the measure and its threshold (``--verify jaccard:0.7``,
``--verify lcs:0.8``); it builds each document's verification data as CSR (sorted distinct
shingle hashes for Jaccard, unit sequences for LCS) and scores pairs over it.

Candidate generation (permutation tables, LSH bands) is cheap but approximate; seed 000 pairs it
with an expensive exact comparison on the candidates only. Each document's shingles are kept as a
sorted array of distinct 64-bit hashes (CSR: ``set_offsets``, ``set_hashes``), so the Jaccard
index |A ∩ B| / |A ∪ B| of a pair is one linear merge: O(|A| + |B|).

Two empty sets have Jaccard 1 (both documents are empty, hence identical after normalisation).

Example:
    >>> import numpy as np
    >>> offsets = np.array([0, 3, 6]); hashes = np.array([1, 2, 3, 2, 3, 4], dtype=np.uint64)
    >>> jaccard_pairs(offsets, hashes, np.array([0]), np.array([1])).tolist()
    [0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from neardup.lcs import lcs_pairs
from neardup.similarity import intersection_size
from neardup.text import Canonical, hash_features, shingle_sets
from neardup.text.units import lcs_units


@njit(cache=True, nogil=True)
def _jaccard_pairs_kernel(offsets, hashes, a, b):
    out = np.empty(a.shape[0], dtype=np.float64)
    for p in range(a.shape[0]):
        x = hashes[offsets[a[p]] : offsets[a[p] + 1]]
        y = hashes[offsets[b[p]] : offsets[b[p] + 1]]
        common = intersection_size(x, y)
        union = x.shape[0] + y.shape[0] - common
        out[p] = 1.0 if union == 0 else common / union
    return out


def jaccard_pairs(
    set_offsets: np.ndarray, set_hashes: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Exact Jaccard index of documents ``a[p]`` and ``b[p]`` for every pair p (float64).

    ``set_hashes`` holds each document's distinct shingle hashes in ascending order
    (see :func:`neardup.text.shingle_sets`). Cost: O(Σ (|A_p| + |B_p|)).
    """
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length; got {a.shape[0]} and {b.shape[0]}")
    return _jaccard_pairs_kernel(set_offsets, set_hashes, a, b)


# Fewer LCS pairs than this are measured on the calling thread.
_PARALLEL_PAIRS = 2048

#: The measures of ``--verify``.
VERIFY_MEASURES = ("jaccard", "lcs")
#: The unit of ``lcs:T`` (see :mod:`neardup.lcs`): words; characters for texts in Chinese or
#: Japanese; for two Korean texts, their eojeol, aligned by characters so that spacing errors
#: and lines wrapped inside a word do not count (:mod:`neardup.eojeol`, ``docs/korean.md``).
LCS_UNIT = "auto"


@dataclass(frozen=True)
class Verification:
    """How candidate pairs are verified: ``measure`` ("jaccard" or "lcs") at ``threshold``.

    Example:
        >>> v = parse_verify("lcs:0.8")
        >>> o, units = v.prepare(["a b c d e", "a b c d x"], "char:5", "xxh")
        >>> v.similarity(o, units, np.array([0]), np.array([1])).tolist()
        [0.8]
    """

    measure: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.measure}:{self.threshold:g}"

    @property
    def itemsize(self) -> int:
        """Bytes per value of the verification data (for memory budgets)."""
        return 8

    def prepare(
        self, texts: Sequence[str] | Canonical, shingle: str, hash_name: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each text's verification data, CSR ``(offsets int64[n + 1], values uint64)``: its
        sorted distinct shingle hashes (Jaccard) or its :data:`LCS_UNIT` units (at most one per
        UTF-8 byte of the canonical text). The texts may be given as their
        :class:`~neardup.text.Canonical` form, made once for this and the signatures.
        O(total bytes)."""
        if self.measure == "lcs":
            return lcs_units(texts, LCS_UNIT)
        features = hash_features(texts, shingle, hash_name)
        offsets, hashes, _ = shingle_sets(features.offsets, features.hashes)
        return offsets, hashes

    def similarity(
        self,
        offsets: np.ndarray,
        values: np.ndarray,
        a: np.ndarray,
        b: np.ndarray,
        exact: bool = False,
        workers: int = 1,
    ) -> np.ndarray:
        """The measure of documents ``a[p]`` and ``b[p]`` over data from :meth:`prepare`.

        LCS values below the threshold are only some value below it (the kernel stops once the
        threshold is out of reach, several times faster on rejected pairs) unless ``exact``;
        values at or above it, and Jaccard values, are always exact. LCS pairs are spread over
        ``workers`` threads (the kernel releases the GIL); the values do not depend on it.
        """
        if self.measure == "jaccard":
            return jaccard_pairs(offsets, values, a, b)
        threshold = None if exact else self.threshold
        if workers <= 1 or a.shape[0] < _PARALLEL_PAIRS:
            return lcs_pairs(offsets, values, a, b, threshold)
        chunks = np.array_split(np.arange(a.shape[0]), 4 * workers)
        with ThreadPoolExecutor(workers) as pool:
            parts = pool.map(lambda c: lcs_pairs(offsets, values, a[c], b[c], threshold), chunks)
            return np.concatenate(list(parts))


def parse_verify(spec: str | None) -> Verification | None:
    """Parse a ``--verify`` value: ``"jaccard:T"`` or ``"lcs:T"`` with T in (0, 1], or
    ``"none"``/``None`` (no verification).

    Example:
        >>> print(parse_verify("jaccard:0.75"), parse_verify("lcs:0.8"), parse_verify("none"))
        jaccard:0.75 lcs:0.8 None
    """
    if spec is None or str(spec).strip().lower() in ("", "none", "off"):
        return None
    kind, _, value = str(spec).partition(":")
    kind = kind.strip().lower()
    usage = f"verify must be 'none', 'jaccard:T' or 'lcs:T' with T in (0, 1]; got {spec!r}"
    if kind not in VERIFY_MEASURES:
        raise ValueError(usage)
    try:
        threshold = float(value)
    except ValueError:
        raise ValueError(usage) from None
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"verify threshold must be in (0, 1]; got {threshold}")
    return Verification(kind, threshold)
