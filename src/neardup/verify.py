"""Exact verification of candidate pairs: Jaccard of their shingle sets.

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

import numpy as np
from numba import njit

from neardup.similarity import intersection_size


@njit(cache=True)
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


def parse_verify(spec: str | None) -> float | None:
    """Parse a ``--verify`` value: ``"jaccard:0.8"`` → 0.8, ``"none"``/``None`` → None.

    Example:
        >>> parse_verify("jaccard:0.75"), parse_verify("none")
        (0.75, None)
    """
    if spec is None or str(spec).strip().lower() in ("", "none", "off"):
        return None
    kind, _, value = str(spec).partition(":")
    if kind.strip().lower() != "jaccard":
        raise ValueError(f"verify must be 'none' or 'jaccard:T' with T in (0, 1]; got {spec!r}")
    try:
        threshold = float(value)
    except ValueError:
        raise ValueError(f"verify must be 'none' or 'jaccard:T' with T in (0, 1]; got {spec!r}") from None
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"verify threshold must be in (0, 1]; got {threshold}")
    return threshold
