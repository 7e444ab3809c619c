"""Pair-counting quality metrics: pure functions over label arrays (SPEC §8).

A *pair* is an unordered pair of distinct documents; *positive* means "near-duplicate".
:class:`PairConfusion` holds the pair counts and their precision, recall and F1. Two clusterings
of the same n documents are compared through their contingency table (:func:`contingency`), in
O(n log n): the pair counts (:func:`pair_confusion`), the adjusted Rand index
(:func:`adjusted_rand_index`) and B-cubed precision / recall / F1 (:func:`bcubed`) all come from
its cells and margins, so the n² pairs are never enumerated. Labelled pairs are counted one by
one (:func:`labelled_pair_confusion`).

Undefined ratios (precision with nothing predicted, recall with no true duplicates) are NaN, and
None in the ``to_dict`` forms.

Example:
    >>> pair_confusion([1, 1, 2, 2], [0, 0, 0, 3])
    PairConfusion(tp=1, fp=2, fn=1, tn=2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


def ratio(num: int, den: int) -> float:
    """``num / den``, NaN when ``den`` is 0 (an undefined share, not a zero one). O(1).

    Example:
        >>> ratio(1, 4), math.isnan(ratio(0, 0))
        (0.25, True)
    """
    return num / den if den else math.nan


def nan_to_none(value):
    """``value`` with NaN replaced by None, for JSON (where NaN is not a number). O(1).

    Example:
        >>> nan_to_none(float("nan")), nan_to_none(0.5)
        (None, 0.5)
    """
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class PairConfusion:
    """Counts of pairs: true / false positives, false negatives and (when known) true negatives.

    A *pair* is an unordered pair of distinct documents; *positive* means "near-duplicate".

    Example:
        >>> c = PairConfusion(tp=3, fp=1, fn=2)
        >>> c.precision, c.recall, round(c.f1, 4)
        (0.75, 0.6, 0.6667)
    """

    tp: int
    fp: int
    fn: int
    tn: int | None = None

    @property
    def precision(self) -> float:
        """tp / (tp + fp); NaN when nothing is predicted."""
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        """tp / (tp + fn); NaN when there is no true duplicate pair."""
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        """2·tp / (2·tp + fp + fn), the harmonic mean of precision and recall (0 when either is
        0; NaN only when there is neither a predicted nor a true duplicate pair)."""
        return ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def to_dict(self) -> dict:
        """Counts and ratios as plain Python values (NaN → None)."""
        out = {"tp": self.tp, "fp": self.fp, "fn": self.fn}
        if self.tn is not None:
            out["tn"] = self.tn
        out.update(
            precision=nan_to_none(self.precision),
            recall=nan_to_none(self.recall),
            f1=nan_to_none(self.f1),
        )
        return out


@dataclass(frozen=True)
class BCubed:
    """B-cubed precision, recall and F1 (Bagga & Baldwin 1998), averaged over documents.

    For a document d with predicted group G(d) and truth cluster T(d):
    precision(d) = |G(d) ∩ T(d)| / |G(d)|, recall(d) = |G(d) ∩ T(d)| / |T(d)|.
    """

    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict:
        """The three scores (NaN → None)."""
        return {
            "precision": nan_to_none(self.precision),
            "recall": nan_to_none(self.recall),
            "f1": nan_to_none(self.f1),
        }


@dataclass(frozen=True)
class Contingency:
    """Non-empty cells of the truth × prediction contingency table.

    Attributes:
        n: documents.
        cell_truth, cell_pred: int64 truth cluster and predicted group (dense codes) of each
            non-empty cell.
        cell_size: int64 documents in each cell (n_ij).
        truth_sizes: int64 size of each truth cluster (a_i).
        pred_sizes: int64 size of each predicted group (b_j).
    """

    n: int
    cell_truth: np.ndarray
    cell_pred: np.ndarray
    cell_size: np.ndarray
    truth_sizes: np.ndarray
    pred_sizes: np.ndarray

    def pair_confusion(self) -> PairConfusion:
        """Pair counts over all n(n−1)/2 pairs: Σ C(n_ij, 2) and the margins. O(cells)."""
        tp = pairs_within(self.cell_size)
        fp = pairs_within(self.pred_sizes) - tp
        fn = pairs_within(self.truth_sizes) - tp
        tn = self.n * (self.n - 1) // 2 - tp - fp - fn
        return PairConfusion(tp, fp, fn, tn)

    def adjusted_rand_index(self) -> float:
        """Adjusted Rand index of the two labelings (see :func:`adjusted_rand_index`). O(cells)."""
        c = self.pair_confusion()
        # Python ints: the products overflow int64 beyond ~10⁵ documents.
        tp, fp, fn, tn = int(c.tp), int(c.fp), int(c.fn), int(c.tn)
        if fn == 0 and fp == 0:
            return 1.0
        return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))

    def bcubed(self) -> BCubed:
        """B-cubed scores of the prediction (see :func:`bcubed`). O(cells)."""
        if self.n == 0:
            return BCubed(math.nan, math.nan, math.nan)
        squares = self.cell_size.astype(np.float64) ** 2
        precision = float(np.sum(squares / self.pred_sizes[self.cell_pred]) / self.n)
        recall = float(np.sum(squares / self.truth_sizes[self.cell_truth]) / self.n)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return BCubed(precision, recall, f1)


def precision_recall_f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1 from pair counts (NaN where undefined, see :class:`PairConfusion`).

    Cost: O(1). Raises ``ValueError`` for a negative count.

    Example:
        >>> precision_recall_f1(8, 2, 8)
        (0.8, 0.5, 0.6153846153846154)
    """
    for name, value in (("tp", tp), ("fp", fp), ("fn", fn)):
        if value < 0:
            raise ValueError(f"{name} must be ≥ 0; got {value}")
    c = PairConfusion(int(tp), int(fp), int(fn))
    return c.precision, c.recall, c.f1


def dense_codes(labels, name: str = "labels") -> np.ndarray:
    """Dense int64 codes 0..m-1 of any labels (equal labels ↔ equal codes): integers keep their
    order, other labels are numbered by first appearance. ``name`` names ``labels`` in the
    ``ValueError`` for a labeling that is not 1-dimensional. O(n log n) for integers, else O(n).

    Example:
        >>> dense_codes([7, 3, 7]).tolist(), dense_codes(["x", "y", "x"]).tolist()
        ([1, 0, 1], [0, 1, 0])
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iub":
        return np.unique(arr, return_inverse=True)[1].astype(np.int64).reshape(-1)
    codes, _ = pd.factorize(arr, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64)


def _labelings(truth_labels, pred_labels) -> tuple[np.ndarray, np.ndarray]:
    t = dense_codes(truth_labels, "truth_labels")
    p = dense_codes(pred_labels, "pred_labels")
    if t.shape != p.shape:
        raise ValueError(
            "truth_labels and pred_labels must have the same length; "
            f"got {t.shape[0]} and {p.shape[0]}"
        )
    return t, p


def _contingency_codes(t: np.ndarray, p: np.ndarray) -> Contingency:
    n = t.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Contingency(0, empty, empty, empty, empty, empty)
    width = int(p.max()) + 1
    # Codes are < n, so the key stays below n² (exact in int64 up to ~3·10⁹ documents).
    keys, sizes = np.unique(t * width + p, return_counts=True)
    return Contingency(
        n=n,
        cell_truth=(keys // width).astype(np.int64),
        cell_pred=(keys % width).astype(np.int64),
        cell_size=sizes.astype(np.int64),
        truth_sizes=np.bincount(t).astype(np.int64),
        pred_sizes=np.bincount(p).astype(np.int64),
    )


def contingency(truth_labels, pred_labels) -> Contingency:
    """The non-empty cells of the contingency table of two labelings of the same n documents.

    Labels may be any integers or strings (equal labels = same cluster). Cost: O(n log n) time,
    O(n) memory.

    Example:
        >>> c = contingency([0, 0, 1, 1], ["x", "y", "y", "y"])
        >>> c.cell_size.tolist(), c.truth_sizes.tolist(), c.pred_sizes.tolist()
        ([1, 1, 2], [2, 2], [1, 3])
    """
    return _contingency_codes(*_labelings(truth_labels, pred_labels))


def pairs_within(sizes) -> int:
    """Unordered pairs inside groups of the given sizes: Σ s(s − 1)/2. O(groups).

    Example:
        >>> pairs_within([3, 1, 2])
        4
    """
    s = np.asarray(sizes, dtype=np.int64)
    return int(np.sum(s * (s - 1) // 2, dtype=np.int64))


def pair_confusion(truth_labels, pred_labels) -> PairConfusion:
    """Pair counts of a predicted clustering against a truth clustering, over all n(n−1)/2 pairs.

    A pair is a true positive when both labelings put its two documents together. The counts come
    from the contingency table (Σ C(n_ij, 2) and the row / column sums), never from the pairs.
    Cost: O(n log n).

    Example:
        >>> pair_confusion([0, 0, 0, 1], [0, 0, 1, 1])
        PairConfusion(tp=1, fp=1, fn=2, tn=2)
    """
    return contingency(truth_labels, pred_labels).pair_confusion()


def adjusted_rand_index(truth_labels, pred_labels) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) of two clusterings of the same documents.

    1.0 for identical partitions, about 0 for independent ones, negative below chance. Computed
    from the pair counts as 2(tp·tn − fn·fp) / ((tp+fn)(fn+tn) + (tp+fp)(fp+tn)), 1.0 when the
    partitions agree on every pair (including n < 2). Cost: O(n log n).

    Example:
        >>> adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0])
        1.0
        >>> adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1])
        -0.5
    """
    return contingency(truth_labels, pred_labels).adjusted_rand_index()


def bcubed(truth_labels, pred_labels) -> BCubed:
    """B-cubed precision, recall and F1 of a predicted clustering (see :class:`BCubed`).

    Each document in cell (i, j) has precision n_ij / b_j and recall n_ij / a_i, so the averages
    are Σ n_ij² / b_j / n and Σ n_ij² / a_i / n. Cost: O(n log n).

    Example:
        >>> b = bcubed([0, 0, 1], [0, 0, 0])
        >>> round(b.precision, 4), b.recall
        (0.5556, 1.0)
    """
    return contingency(truth_labels, pred_labels).bcubed()


def labelled_pair_confusion(positive, predicted) -> PairConfusion:
    """Pair counts over labelled pairs: ``positive[i]`` is the label, ``predicted[i]`` whether
    the prediction calls pair i a duplicate. Includes true negatives. Cost: O(m).

    Example:
        >>> labelled_pair_confusion([True, True, False, False], [True, False, True, False])
        PairConfusion(tp=1, fp=1, fn=1, tn=1)
    """
    pos = np.asarray(positive, dtype=bool)
    pred = np.asarray(predicted, dtype=bool)
    if pos.shape != pred.shape or pos.ndim != 1:
        raise ValueError(
            "positive and predicted must be 1-D of the same length; "
            f"got shapes {pos.shape} and {pred.shape}"
        )
    tp = int(np.count_nonzero(pos & pred))
    fp = int(np.count_nonzero(~pos & pred))
    fn = int(np.count_nonzero(pos & ~pred))
    return PairConfusion(tp, fp, fn, pos.shape[0] - tp - fp - fn)
