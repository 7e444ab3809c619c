"""Quality against labelled answers (SPEC §8): metrics, truth and prediction files, sweeps.

Truth comes in two kinds:

* **labelled pairs** (``id_a``, ``id_b``, ``label`` [, ``category``] …), usually a *sample* of
  pairs judged by people. Precision, recall and F1 are computed **over the labelled pairs only**:
  a labelled pair counts as predicted a duplicate when the prediction puts both documents in one
  group (GROUPS prediction) or lists the pair (PAIRS prediction, optionally its transitive
  closure). Predicted pairs that carry no label are not counted: nobody judged them.
* **clusters** (``id``, ``cluster``): every pair of documents in one cluster is a duplicate, every
  other pair of truth documents is not. Pairwise precision / recall / F1 over all these pairs, the
  adjusted Rand index and B-cubed precision / recall / F1 come from the contingency table of truth
  clusters × predicted groups, in O(n log n); the n² pairs are never enumerated.

Predictions are GROUPS files (``id``, ``duplicate_id`` …, as ``neardup dedup`` writes) or PAIRS
files (``id_a``, ``id_b`` …, as ``neardup pairs`` and ``--pairs-out`` write, or from any other
system), in TSV, CSV, JSON Lines or Parquet; the kind is told by the columns. Truth IDs that the
prediction does not mention are singletons (and counted).

:func:`sweep` computes signatures once and runs the grouping stage for every Hamming ``k``
(SimHash) or Jaccard threshold (MinHash), scoring each setting; :func:`best_settings` names the
best by F1 and the best at high precision; :func:`plot_sweep` draws the precision–recall curve and
the distances of the labelled pairs.

Undefined ratios (precision with nothing predicted, recall with no true duplicates) are NaN in
Python and null in :meth:`Evaluation.to_dict`.

Example:
    >>> truth = ClusterTruth.from_arrays(["a", "b", "c", "d"], [1, 1, 2, 2])
    >>> pred = Prediction.from_groups(["a", "b", "c", "d"], ["a", "a", "a", "d"])
    >>> e = evaluate(pred, truth)
    >>> e.confusion.tp, e.confusion.fp, e.confusion.fn, round(e.f1, 3)
    (1, 2, 1, 0.4)
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from neardup.engines.local import signatures_parallel
from neardup.groups import connected_components
from neardup.io import InputError, read_tsv_table
from neardup.pipeline import Settings, Signatures, find_groups
from neardup.simhash import hamming_distance
from neardup.verify import jaccard_pairs

__all__ = [
    "TRUTH_KINDS",
    "PREDICTION_KINDS",
    "GROUP_COLUMNS",
    "HAMMING_SWEEP",
    "THRESHOLD_SWEEP",
    "PairConfusion",
    "BCubed",
    "Contingency",
    "CategoryScores",
    "Evaluation",
    "PairTruth",
    "ClusterTruth",
    "Prediction",
    "PairDistances",
    "SweepRow",
    "precision_recall_f1",
    "contingency",
    "pair_confusion",
    "adjusted_rand_index",
    "bcubed",
    "labelled_pair_confusion",
    "parse_labels",
    "read_table",
    "read_truth",
    "read_prediction",
    "evaluate",
    "sweep_values",
    "swept_settings",
    "sweep_signature_settings",
    "sweep",
    "best_settings",
    "pair_distances",
    "plot_sweep",
]

#: Kinds of truth: labelled pairs or clusters.
TRUTH_KINDS = ("pairs", "clusters")
#: Kinds of prediction: one group label per document, or a list of duplicate pairs.
PREDICTION_KINDS = ("groups", "pairs")
#: Columns that hold a document's group in a GROUPS prediction, in order of preference.
GROUP_COLUMNS = ("duplicate_id", "original_id", "group", "cluster")
#: Hamming distances a SimHash sweep tries by default.
HAMMING_SWEEP = tuple(range(9))
#: Jaccard thresholds a MinHash sweep tries by default (0.50, 0.55, …, 0.95).
THRESHOLD_SWEEP = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))

_TRUE_LABELS = ("1", "1.0", "true")
_FALSE_LABELS = ("0", "0.0", "false")
_TABLE_FORMATS = {
    "tsv": "tsv",
    "csv": "csv",
    "jsonl": "jsonl",
    "json": "jsonl",
    "ndjson": "jsonl",
    "parquet": "parquet",
}
_COMPRESSIONS = ("gz", "zst", "zstd")


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


# --------------------------------------------------------------------------------------------
# Metrics: pure functions over arrays
# --------------------------------------------------------------------------------------------


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
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        """tp / (tp + fn); NaN when there is no true duplicate pair."""
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        """2·tp / (2·tp + fp + fn), the harmonic mean of precision and recall (0 when either is
        0; NaN only when there is neither a predicted nor a true duplicate pair)."""
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def to_dict(self) -> dict:
        """Counts and ratios as plain Python values (NaN → None)."""
        out = {"tp": self.tp, "fp": self.fp, "fn": self.fn}
        if self.tn is not None:
            out["tn"] = self.tn
        out.update(
            precision=_nan_to_none(self.precision),
            recall=_nan_to_none(self.recall),
            f1=_nan_to_none(self.f1),
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
            "precision": _nan_to_none(self.precision),
            "recall": _nan_to_none(self.recall),
            "f1": _nan_to_none(self.f1),
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


def _codes(labels, name: str) -> np.ndarray:
    """Dense int64 codes 0..m-1 of any labels (equal labels ↔ equal codes). O(n) or O(n log n)."""
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
    t = _codes(truth_labels, "truth_labels")
    p = _codes(pred_labels, "pred_labels")
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


def _pairs_within(sizes: np.ndarray) -> int:
    s = np.asarray(sizes, dtype=np.int64)
    return int(np.sum(s * (s - 1) // 2, dtype=np.int64))


def _confusion_of(c: Contingency) -> PairConfusion:
    tp = _pairs_within(c.cell_size)
    fp = _pairs_within(c.pred_sizes) - tp
    fn = _pairs_within(c.truth_sizes) - tp
    tn = c.n * (c.n - 1) // 2 - tp - fp - fn
    return PairConfusion(tp, fp, fn, tn)


def pair_confusion(truth_labels, pred_labels) -> PairConfusion:
    """Pair counts of a predicted clustering against a truth clustering, over all n(n−1)/2 pairs.

    A pair is a true positive when both labelings put its two documents together. The counts come
    from the contingency table (Σ C(n_ij, 2) and the row / column sums), never from the pairs.
    Cost: O(n log n).

    Example:
        >>> pair_confusion([0, 0, 0, 1], [0, 0, 1, 1])
        PairConfusion(tp=1, fp=1, fn=2, tn=2)
    """
    return _confusion_of(contingency(truth_labels, pred_labels))


def _ari_of(c: PairConfusion) -> float:
    # Python ints: the products overflow int64 beyond ~10⁵ documents.
    tp, fp, fn, tn = int(c.tp), int(c.fp), int(c.fn), int(c.tn)
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


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
    return _ari_of(pair_confusion(truth_labels, pred_labels))


def _bcubed_of(c: Contingency) -> BCubed:
    if c.n == 0:
        return BCubed(math.nan, math.nan, math.nan)
    squares = c.cell_size.astype(np.float64) ** 2
    precision = float(np.sum(squares / c.pred_sizes[c.cell_pred]) / c.n)
    recall = float(np.sum(squares / c.truth_sizes[c.cell_truth]) / c.n)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BCubed(precision, recall, f1)


def bcubed(truth_labels, pred_labels) -> BCubed:
    """B-cubed precision, recall and F1 of a predicted clustering (see :class:`BCubed`).

    Each document in cell (i, j) has precision n_ij / b_j and recall n_ij / a_i, so the averages
    are Σ n_ij² / b_j / n and Σ n_ij² / a_i / n. Cost: O(n log n).

    Example:
        >>> b = bcubed([0, 0, 1], [0, 0, 0])
        >>> round(b.precision, 4), b.recall
        (0.5556, 1.0)
    """
    return _bcubed_of(contingency(truth_labels, pred_labels))


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


# --------------------------------------------------------------------------------------------
# Truth and predictions
# --------------------------------------------------------------------------------------------


def _str_array(values, name: str) -> np.ndarray:
    """IDs / labels as an object array of ``str`` (numbers become their decimal text)."""
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got shape {arr.shape}")
    if arr.dtype.kind in "iuU":
        return arr.astype(str).astype(object)
    arr = arr.astype(object, copy=False)
    bad = np.flatnonzero(pd.isna(arr))
    if bad.size:
        raise ValueError(f"{name} must not hold missing values; row {int(bad[0])} is missing")
    if arr.size and pd.api.types.infer_dtype(arr, skipna=False) != "string":
        arr = np.asarray([v if isinstance(v, str) else str(v) for v in arr], dtype=object)
    return arr


def _parse_positive_labels(positive_labels: str | Iterable[str] | None) -> list[str] | None:
    if positive_labels is None:
        return None
    items = (
        positive_labels.split(",") if isinstance(positive_labels, str) else list(positive_labels)
    )
    parsed = [str(x).strip().lower() for x in items if str(x).strip()]
    if not parsed:
        raise ValueError(f"positive_labels must name at least one label; got {positive_labels!r}")
    return list(dict.fromkeys(parsed))


def parse_labels(labels, positive_labels: str | Iterable[str] | None = None) -> np.ndarray:
    """Labels → bool array (True = near-duplicate).

    Without ``positive_labels`` every label must be 1/0 or true/false (any case; 1.0/0.0 too).
    With ``positive_labels`` (a comma-separated string or a list, compared without case) those
    labels are positive and every other label negative; each named label must occur.
    Cost: O(m) plus a Python step per *distinct* label.

    Raises ``ValueError`` naming the bad label and the labels found.

    Example:
        >>> parse_labels(["1", "0", "true", "FALSE"]).tolist()
        [True, False, True, False]
        >>> parse_labels(["cut", "heavy", "light", "non"], "cut,light").tolist()
        [True, False, True, False]
    """
    series = pd.Series(np.asarray(labels, dtype=object), dtype=object)
    if series.isna().any():
        raise ValueError(
            f"labels must not be missing; row {int(np.flatnonzero(series.isna())[0])} is"
        )
    norm = series.astype(str).str.strip().str.lower().to_numpy(dtype=object)
    uniques, inverse = (
        np.unique(norm, return_inverse=True)
        if norm.size
        else (np.array([]), np.array([], dtype=np.int64))
    )
    found = ", ".join(map(str, uniques[:20])) + (" …" if len(uniques) > 20 else "")
    wanted = _parse_positive_labels(positive_labels)
    if wanted is None:
        value = np.zeros(len(uniques), dtype=bool)
        for i, u in enumerate(uniques):
            if u in _TRUE_LABELS:
                value[i] = True
            elif u not in _FALSE_LABELS:
                raise ValueError(
                    f"labels must be 1/0 or true/false; got {u!r} (labels found: {found}); "
                    "name the positive labels with positive_labels (--positive-labels), "
                    "e.g. cut,light"
                )
    else:
        missing = [w for w in wanted if w not in set(uniques.tolist())]
        if missing:
            raise ValueError(
                f"positive label {missing[0]!r} does not occur in the labels "
                f"(labels found: {found})"
            )
        value = np.isin(uniques, np.asarray(wanted, dtype=object))
    return value[inverse].astype(bool) if norm.size else np.zeros(0, dtype=bool)


@dataclass
class PairTruth:
    """Labelled pairs: the answers people gave for a sample of pairs.

    Attributes:
        id_a, id_b: object arrays of document IDs (str), one labelled pair per row, each
            unordered pair once, never a document with itself.
        positive: bool, True for a near-duplicate pair.
        category: object array of str (per-category breakdown), or None.
        categories: the category names in report order (positive-only categories first, in
            the order of ``positive_labels``, then the others in order of appearance).
        duplicate_rows: repeated rows of the same unordered pair that were dropped.
    """

    id_a: np.ndarray
    id_b: np.ndarray
    positive: np.ndarray
    category: np.ndarray | None = None
    categories: list[str] = field(default_factory=list)
    duplicate_rows: int = 0
    kind = "pairs"

    @classmethod
    def from_arrays(
        cls,
        id_a: Sequence,
        id_b: Sequence,
        labels: Sequence,
        positive_labels: str | Iterable[str] | None = None,
        category: Sequence | None = None,
    ) -> PairTruth:
        """Validate and build labelled pairs.

        ``labels`` are parsed by :func:`parse_labels`. The category of each pair is ``category``
        when given, else the label itself when ``positive_labels`` names categorical labels,
        else none. A pair labelled twice (either orientation) is kept once; twice with
        different labels raises ``ValueError``, as does a pair of a document with itself.
        Cost: O(m log m).

        Example:
            >>> labels = ["cut", "non", "cut"]
            >>> t = PairTruth.from_arrays(["a", "b", "c"], ["x", "x", "x"], labels, "cut")
            >>> t.positive.tolist(), t.categories
            ([True, False, True], ['cut', 'non'])
        """
        a = _str_array(id_a, "id_a")
        b = _str_array(id_b, "id_b")
        if not (a.shape == b.shape == (len(labels),)):
            raise ValueError(
                "id_a, id_b and labels must have the same length; "
                f"got {a.shape[0]}, {b.shape[0]}, {len(labels)}"
            )
        if a.size == 0:
            raise ValueError("labelled pairs must hold at least one pair; got 0")
        positive = parse_labels(labels, positive_labels)
        self_pairs = np.flatnonzero(a == b)
        if self_pairs.size:
            i = int(self_pairs[0])
            raise ValueError(
                "a labelled pair must join two different documents; "
                f"row {i} pairs {a[i]!r} with itself"
            )
        cat = None
        if category is not None:
            cat = _str_array(category, "category")
        elif positive_labels is not None:
            cat = (
                pd.Series(np.asarray(labels, dtype=object))
                .astype(str)
                .str.strip()
                .to_numpy(dtype=object)
            )
        lo = np.where(a < b, a, b)
        hi = np.where(a < b, b, a)
        frame = pd.DataFrame({"lo": lo, "hi": hi, "pos": positive})
        first = ~frame.duplicated(["lo", "hi"], keep="first").to_numpy()
        conflict = frame.drop_duplicates(["lo", "hi", "pos"]).duplicated(["lo", "hi"], keep=False)
        if conflict.any():
            row = frame.drop_duplicates(["lo", "hi", "pos"])[conflict.to_numpy()].iloc[0]
            raise ValueError(
                f"pair ({row['lo']!r}, {row['hi']!r}) is labelled both positive and negative"
            )
        dropped = int((~first).sum())
        a, b, positive = a[first], b[first], positive[first]
        categories: list[str] = []
        if cat is not None:
            cat = cat[first]
            codes, names = pd.factorize(cat)
            names = [str(x) for x in names]
            pos_count = np.bincount(codes, weights=positive, minlength=len(names))
            all_pos = pos_count == np.bincount(codes, minlength=len(names))
            wanted = _parse_positive_labels(positive_labels) or []
            rank = {w: i for i, w in enumerate(wanted)}
            categories = sorted(
                names,
                key=lambda c: (
                    0 if all_pos[names.index(c)] else 1,
                    rank.get(c.lower(), len(rank)),
                    names.index(c),
                ),
            )
        return cls(a, b, positive, cat, categories, dropped)

    @property
    def ids(self) -> np.ndarray:
        """The distinct document IDs of the labelled pairs."""
        return pd.unique(np.concatenate([self.id_a, self.id_b]))

    def __len__(self) -> int:
        return self.id_a.shape[0]


@dataclass
class ClusterTruth:
    """Truth clusters: every pair of documents in one cluster is a near-duplicate pair.

    Attributes:
        ids: object array of distinct document IDs (str).
        cluster: int64 dense cluster code of each document.
    """

    ids: np.ndarray
    cluster: np.ndarray
    kind = "clusters"

    @classmethod
    def from_arrays(cls, ids: Sequence, cluster: Sequence) -> ClusterTruth:
        """Validate and build truth clusters (any cluster labels; IDs must be distinct).

        Cost: O(n log n). Example:
            >>> ClusterTruth.from_arrays(["a", "b", "c"], ["x", "y", "x"]).cluster.tolist()
            [0, 1, 0]
        """
        i = _str_array(ids, "ids")
        if len(cluster) != i.shape[0]:
            raise ValueError(
                f"ids and cluster must have the same length; got {i.shape[0]} and {len(cluster)}"
            )
        if i.size == 0:
            raise ValueError("truth clusters must hold at least one document; got 0")
        dup = pd.Series(i).duplicated()
        if dup.any():
            bad = i[int(np.flatnonzero(dup.to_numpy())[0])]
            raise ValueError(
                f"truth clusters: id {bad!r} appears more than once (each id has one cluster)"
            )
        return cls(i, _codes(np.asarray(cluster, dtype=object), "cluster"))

    def __len__(self) -> int:
        return self.ids.shape[0]


@dataclass
class Prediction:
    """What a run predicted: a group per document (``kind="groups"``) or duplicate pairs
    (``kind="pairs"``).

    Attributes:
        kind: "groups" or "pairs".
        ids, group: documents and their group labels (groups), else None.
        id_a, id_b: the listed pairs (pairs), else None.
    """

    kind: str
    ids: np.ndarray | None = None
    group: np.ndarray | None = None
    id_a: np.ndarray | None = None
    id_b: np.ndarray | None = None

    @classmethod
    def from_groups(cls, ids: Sequence, group: Sequence) -> Prediction:
        """A GROUPS prediction: ``group[i]`` (any label, e.g. the duplicate ID) of ``ids[i]``.

        Example:
            >>> Prediction.from_groups(["a", "b"], ["a", "a"]).kind
            'groups'
        """
        i = _str_array(ids, "ids")
        if len(group) != i.shape[0]:
            raise ValueError(
                f"ids and group must have the same length; got {i.shape[0]} and {len(group)}"
            )
        dup = pd.Series(i).duplicated()
        if dup.any():
            bad = i[int(np.flatnonzero(dup.to_numpy())[0])]
            raise ValueError(f"prediction: id {bad!r} appears in more than one row")
        group = np.asarray(group)
        missing = np.flatnonzero(pd.isna(group))
        if missing.size:
            raise ValueError(
                f"group must not hold missing values; row {int(missing[0])} is missing"
            )
        return cls("groups", ids=i, group=group)

    @classmethod
    def from_pairs(cls, id_a: Sequence, id_b: Sequence) -> Prediction:
        """A PAIRS prediction: documents ``id_a[i]`` and ``id_b[i]`` are near-duplicates.

        Example:
            >>> Prediction.from_pairs(["a"], ["b"]).kind
            'pairs'
        """
        a = _str_array(id_a, "id_a")
        b = _str_array(id_b, "id_b")
        if a.shape != b.shape:
            raise ValueError(
                f"id_a and id_b must have the same length; got {a.shape[0]} and {b.shape[0]}"
            )
        return cls("pairs", id_a=a, id_b=b)


def _table_format(path: str) -> str:
    name = os.path.basename(str(path)).lower()
    for suffix in _COMPRESSIONS:
        if name.endswith("." + suffix):
            name = name[: -len(suffix) - 1]
    ext = name.rpartition(".")[2] if "." in name else ""
    if ext not in _TABLE_FORMATS:
        raise ValueError(
            f"cannot tell the format of {path!r} from its extension; expected .tsv, .csv, .jsonl "
            "(.json, .ndjson) or .parquet, optionally followed by .gz or .zst"
        )
    return _TABLE_FORMATS[ext]


def _arrow_to_frame(table: pa.Table, path: str) -> pd.DataFrame:
    data = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.cast(t.value_type)
            t = column.type
        if pa.types.is_nested(t):
            data[name] = column.to_pandas().to_numpy(dtype=object)
            continue
        data[name] = pc.cast(column, pa.string()).to_numpy(zero_copy_only=False)
    return pd.DataFrame(data)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a TSV, CSV, JSON Lines or Parquet table (format from the extension, ``.gz`` / ``.zst``
    allowed) as a DataFrame whose scalar cells are ``str`` (nulls: None; empty TSV/CSV cells: "").

    TSV is read as :func:`neardup.io.write_table` writes it, by :func:`neardup.io.read_tsv_table`:
    never quoted, ``\\t`` ``\\n`` ``\\r`` ``\\\\`` unescaped, a row with the wrong number of
    fields an error naming its line. Numbers in JSON Lines / Parquet become their decimal text
    (``7`` → "7"), booleans "true" / "false". Cost: O(file size).

    Raises :class:`neardup.io.InputError` for an unreadable file, ``ValueError`` for an unknown
    extension, ``FileNotFoundError`` for a missing file.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
        >>> _ = p.write_text('{"id": 7, "cluster": "x"}\\n')
        >>> read_table(p).to_dict("list")
        {'id': ['7'], 'cluster': ['x']}
    """
    path = str(path)
    fmt = _table_format(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    if fmt == "tsv":
        return _arrow_to_frame(read_tsv_table(path), path)
    try:
        if fmt == "csv":
            frame = pd.read_csv(
                path,
                sep=",",
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                quoting=csv.QUOTE_MINIMAL,
                compression="infer",
                encoding="utf-8",
            )
            return pd.DataFrame({c: frame[c].to_numpy(dtype=object) for c in frame.columns})
        if fmt == "jsonl":
            with pa.input_stream(path, compression="detect") as stream:
                table = pa_json.read_json(stream)
        else:
            table = pq.read_table(path)
    except (
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        pa.ArrowException,
        UnicodeDecodeError,
    ) as e:
        raise InputError(path, None, None, f"cannot read the {fmt} table", str(e).strip()) from e
    return _arrow_to_frame(table, path)


def _require(frame: pd.DataFrame, path: str, names: Sequence[str]) -> None:
    for name in names:
        if name not in frame.columns:
            raise InputError(
                path,
                None,
                name,
                f"missing column '{name}'",
                "columns: " + ", ".join(map(str, frame.columns)),
            )


def _column(frame: pd.DataFrame, path: str, name: str, fmt: str) -> np.ndarray:
    values = frame[name].to_numpy(dtype=object)
    bad = np.flatnonzero(pd.isna(values) | (values == ""))
    if bad.size:
        first = int(bad[0])
        line = first + 2 if fmt in ("tsv", "csv") else first + 1
        unit = "row" if fmt == "parquet" else "line"
        raise InputError(path, line, name, f"empty '{name}'", unit=unit)
    return values


def read_truth(
    path: str | os.PathLike, positive_labels: str | Iterable[str] | None = None
) -> PairTruth | ClusterTruth:
    """Read truth: labelled pairs (columns ``id_a``, ``id_b``, ``label`` [, ``category``], others
    ignored) or clusters (``id``, ``cluster``), told apart by the columns.

    ``positive_labels`` (labelled pairs only) names the positive labels when labels are
    categories, e.g. ``"cut,light"``. Rows with an empty label (pairs of a labelling sheet not
    labelled yet, or skipped) are left out. See :meth:`PairTruth.from_arrays`.
    Cost: O(file size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
        >>> _ = p.write_text("id_a\\tid_b\\tlabel\\na\\tb\\tcut\\na\\tc\\tnon\\n")
        >>> read_truth(p, "cut").positive.tolist()
        [True, False]
    """
    path = str(path)
    fmt = _table_format(path)
    frame = read_table(path)
    columns = set(frame.columns)
    if {"id_a", "id_b"} <= columns:
        _require(frame, path, ["label"])
        # A labelling sheet keeps the pairs not labelled yet (or skipped) with an empty label.
        label_text = frame["label"].astype("string").str.strip()
        frame = frame[label_text.notna() & (label_text != "")].reset_index(drop=True)
        category = _column(frame, path, "category", fmt) if "category" in columns else None
        try:
            return PairTruth.from_arrays(
                _column(frame, path, "id_a", fmt),
                _column(frame, path, "id_b", fmt),
                _column(frame, path, "label", fmt),
                positive_labels,
                category,
            )
        except InputError:
            raise
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    if {"id", "cluster"} <= columns:
        if positive_labels is not None:
            raise ValueError(f"{path}: positive_labels applies to labelled pairs, not to clusters")
        try:
            return ClusterTruth.from_arrays(
                _column(frame, path, "id", fmt), _column(frame, path, "cluster", fmt)
            )
        except InputError:
            raise
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    raise ValueError(
        f"{path}: columns {', '.join(map(str, frame.columns))} are neither labelled pairs "
        "(id_a, id_b, label) nor clusters (id, cluster)"
    )


def read_prediction(path: str | os.PathLike) -> Prediction:
    """Read a prediction: PAIRS (columns ``id_a``, ``id_b`` …) or GROUPS (``id`` and one of
    ``duplicate_id``, ``original_id``, ``group``, ``cluster``), told apart by the columns.

    A PAIRS file with a ``label`` column keeps only its positive rows (1/true). Cost: O(file size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "groups.csv"
        >>> _ = p.write_text("id,duplicate_id\\na,a\\nb,a\\n")
        >>> read_prediction(p).group.tolist()
        ['a', 'a']
    """
    path = str(path)
    fmt = _table_format(path)
    frame = read_table(path)
    columns = set(frame.columns)
    try:
        if {"id_a", "id_b"} <= columns:
            a = _column(frame, path, "id_a", fmt)
            b = _column(frame, path, "id_b", fmt)
            if "label" in columns:
                keep = parse_labels(_column(frame, path, "label", fmt))
                a, b = a[keep], b[keep]
            return Prediction.from_pairs(a, b)
        if "id" in columns:
            for name in GROUP_COLUMNS:
                if name in columns:
                    return Prediction.from_groups(
                        _column(frame, path, "id", fmt), _column(frame, path, name, fmt)
                    )
    except InputError:
        raise
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e
    raise ValueError(
        f"{path}: columns {', '.join(map(str, frame.columns))} are neither GROUPS "
        f"(id and one of {', '.join(GROUP_COLUMNS)}) nor PAIRS (id_a, id_b)"
    )


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CategoryScores:
    """Scores of the labelled pairs of one category.

    Attributes:
        category: its name.
        pairs: labelled pairs in it.
        positive: of which labelled near-duplicate.
        predicted: of which the prediction calls near-duplicates.
        confusion: the counts (precision is NaN-free only when the category holds negatives).
    """

    category: str
    pairs: int
    positive: int
    predicted: int
    confusion: PairConfusion

    @property
    def predicted_rate(self) -> float:
        """Share of the category's pairs predicted near-duplicate: the recall of an all-positive
        category, the false-positive rate of an all-negative one."""
        return _ratio(self.predicted, self.pairs)

    def to_dict(self) -> dict:
        """Plain values (NaN → None)."""
        return {
            "category": self.category,
            "pairs": self.pairs,
            "positive": self.positive,
            "predicted": self.predicted,
            "predicted_rate": _nan_to_none(self.predicted_rate),
            **self.confusion.to_dict(),
        }


@dataclass
class Evaluation:
    """Scores of one prediction against one truth.

    Attributes:
        truth_kind: "pairs" (labelled pairs) or "clusters".
        prediction_kind: "groups" or "pairs".
        confusion: pair counts (labelled pairs only, or all pairs of the truth's documents).
        truth_ids: distinct documents in the truth.
        missing_ids: truth documents the prediction does not mention (GROUPS) or that are in no
            predicted pair (PAIRS); they count as singletons.
        labelled_pairs: number of labelled pairs (pair truth), else None.
        unlabelled_predicted_pairs: predicted near-duplicate pairs without a label, not counted
            (pair truth), else None.
        ignored_ids: predicted documents outside the truth, ignored (cluster truth), else None.
        ari: adjusted Rand index (cluster truth), else None.
        bcubed: B-cubed scores (cluster truth), else None.
        categories: per-category scores (pair truth with categories).
        closure: whether a PAIRS prediction was taken with its transitive closure.
        note: what the numbers are computed over, in one sentence.
    """

    truth_kind: str
    prediction_kind: str
    confusion: PairConfusion
    truth_ids: int
    missing_ids: int
    labelled_pairs: int | None = None
    unlabelled_predicted_pairs: int | None = None
    ignored_ids: int | None = None
    ari: float | None = None
    bcubed: BCubed | None = None
    categories: list[CategoryScores] = field(default_factory=list)
    closure: bool = False
    note: str = ""

    @property
    def precision(self) -> float:
        """Pairwise precision (NaN when nothing is predicted)."""
        return self.confusion.precision

    @property
    def recall(self) -> float:
        """Pairwise recall (NaN without true duplicate pairs)."""
        return self.confusion.recall

    @property
    def f1(self) -> float:
        """Pairwise F1."""
        return self.confusion.f1

    def to_dict(self) -> dict:
        """Plain JSON-ready values (NaN → None)."""
        out = {
            "truth": self.truth_kind,
            "prediction": self.prediction_kind,
            "closure": self.closure,
            **self.confusion.to_dict(),
            "truth_ids": self.truth_ids,
            "missing_ids": self.missing_ids,
        }
        if self.truth_kind == "pairs":
            out["labelled_pairs"] = self.labelled_pairs
            out["unlabelled_predicted_pairs"] = self.unlabelled_predicted_pairs
            out["categories"] = [c.to_dict() for c in self.categories]
        else:
            out["ignored_ids"] = self.ignored_ids
            out["ari"] = _nan_to_none(self.ari)
            out["bcubed"] = self.bcubed.to_dict() if self.bcubed is not None else None
        out["note"] = self.note
        return out


def _id_index(ids: np.ndarray, name: str = "ids") -> pd.Index:
    index = pd.Index(np.asarray(ids, dtype=object))
    if not index.is_unique:
        bad = index[index.duplicated()][0]
        raise ValueError(f"{name} must be distinct; {bad!r} appears more than once")
    return index


def _pair_note(labelled: int, unlabelled: int) -> str:
    return (
        f"computed over {labelled:,} labelled pairs; unlabelled predicted pairs are not counted "
        f"(unlabelled predicted pairs: {unlabelled:,})"
    )


def _cluster_note(n: int, pairs: int) -> str:
    return (
        f"computed over all {pairs:,} pairs of the {n:,} truth documents (pair counts from the "
        "contingency table); predicted documents outside the truth are ignored"
    )


class _Scorer:
    """Truth aligned once to a fixed list of predicted documents, so that many labelings of
    those documents (one per swept setting) are scored in O(n) each."""

    def __init__(self, truth: PairTruth | ClusterTruth, ids: Sequence):
        self.truth = truth
        index = _id_index(np.asarray(ids, dtype=object))
        self.n = len(index)
        if truth.kind == "pairs":
            self.ia = index.get_indexer(truth.id_a)
            self.ib = index.get_indexer(truth.id_b)
            absent = np.concatenate([truth.id_a[self.ia < 0], truth.id_b[self.ib < 0]])
            self.missing = int(pd.unique(absent).shape[0])
            self.truth_ids = int(truth.ids.shape[0])
            if truth.category is not None:
                self.cat_codes, names = pd.factorize(truth.category)
                self.cat_order = [list(map(str, names)).index(c) for c in truth.categories]
                self.cat_names = list(map(str, names))
        else:
            self.idx = index.get_indexer(truth.ids)
            self.found = self.idx >= 0
            self.missing = int(np.count_nonzero(~self.found))
            self.truth_ids = len(truth)
            self.ignored = self.n - (len(truth) - self.missing)

    def predicted_pairs(self, labels: np.ndarray) -> np.ndarray:
        """bool per labelled pair: both documents present and in one group."""
        ok = (self.ia >= 0) & (self.ib >= 0)
        same = np.zeros(self.ia.shape[0], dtype=bool)
        same[ok] = labels[self.ia[ok]] == labels[self.ib[ok]]
        return same

    def cluster_labels(self, labels: np.ndarray) -> np.ndarray:
        """Predicted group code of every truth document (absent ones: fresh singletons)."""
        out = np.empty(len(self.truth), dtype=np.int64)
        out[self.found] = labels[self.idx[self.found]]
        start = int(labels.max()) + 1 if labels.size else 0
        out[~self.found] = start + np.arange(self.missing, dtype=np.int64)
        return out

    def score(self, labels: np.ndarray, kind: str = "groups", closure: bool = False) -> Evaluation:
        """Score a labeling (int64 group code per document, codes ≥ 0) of the aligned ids."""
        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (self.n,):
            raise ValueError(
                f"labels must have one value per document ({self.n}); got shape {labels.shape}"
            )
        truth = self.truth
        if truth.kind == "pairs":
            predicted = self.predicted_pairs(labels)
            return self._pair_evaluation(
                predicted, _pairs_within(np.bincount(labels)) if labels.size else 0, kind, closure
            )
        c = _contingency_codes(truth.cluster, _codes(self.cluster_labels(labels), "labels"))
        confusion = _confusion_of(c)
        return Evaluation(
            truth_kind="clusters",
            prediction_kind=kind,
            confusion=confusion,
            truth_ids=self.truth_ids,
            missing_ids=self.missing,
            ignored_ids=self.ignored,
            ari=_ari_of(confusion),
            bcubed=_bcubed_of(c),
            closure=closure,
            note=_cluster_note(self.truth_ids, self.truth_ids * (self.truth_ids - 1) // 2),
        )

    def _pair_evaluation(
        self, predicted: np.ndarray, total_predicted: int, kind: str, closure: bool
    ) -> Evaluation:
        truth = self.truth
        confusion = labelled_pair_confusion(truth.positive, predicted)
        categories = []
        if truth.category is not None:
            m = len(self.cat_names)
            count = np.bincount(self.cat_codes, minlength=m)
            pos = np.bincount(self.cat_codes, weights=truth.positive, minlength=m).astype(np.int64)
            pred = np.bincount(self.cat_codes, weights=predicted, minlength=m).astype(np.int64)
            tp = np.bincount(
                self.cat_codes, weights=truth.positive & predicted, minlength=m
            ).astype(np.int64)
            for j in self.cat_order:
                fp, fn = int(pred[j] - tp[j]), int(pos[j] - tp[j])
                categories.append(
                    CategoryScores(
                        self.cat_names[j],
                        int(count[j]),
                        int(pos[j]),
                        int(pred[j]),
                        PairConfusion(int(tp[j]), fp, fn, int(count[j]) - int(tp[j]) - fp - fn),
                    )
                )
        labelled_predicted = confusion.tp + confusion.fp
        unlabelled = max(0, total_predicted - labelled_predicted)
        return Evaluation(
            truth_kind="pairs",
            prediction_kind=kind,
            confusion=confusion,
            truth_ids=self.truth_ids,
            missing_ids=self.missing,
            labelled_pairs=len(truth),
            unlabelled_predicted_pairs=unlabelled,
            categories=categories,
            closure=closure,
            note=_pair_note(len(truth), unlabelled),
        )


def _evaluate_pairs(
    prediction: Prediction, truth: PairTruth | ClusterTruth, closure: bool
) -> Evaluation:
    # Cluster truth: its (distinct) documents come first, so they get the codes 0..n-1.
    head = [truth.ids] if truth.kind == "clusters" else []
    tail = [truth.id_a, truth.id_b] if truth.kind == "pairs" else []
    codes, vocab = pd.factorize(np.concatenate(head + [prediction.id_a, prediction.id_b] + tail))
    codes = codes.astype(np.int64)
    v = len(vocab)
    m = prediction.id_a.shape[0]
    start = len(truth) if truth.kind == "clusters" else 0
    pa_, pb_ = codes[start : start + m], codes[start + m : start + 2 * m]
    distinct = pa_ != pb_
    pa_, pb_ = np.minimum(pa_, pb_)[distinct], np.maximum(pa_, pb_)[distinct]
    keys = np.unique(pa_ * v + pb_)
    pa_, pb_ = keys // v, keys % v
    scorer = _Scorer(truth, np.asarray(vocab, dtype=object))
    components = connected_components(v, pa_, pb_)
    in_pairs = np.zeros(v, dtype=bool)
    in_pairs[pa_] = True
    in_pairs[pb_] = True
    if truth.kind == "pairs":
        if closure:
            evaluation = scorer.score(components, "pairs", closure=True)
        else:
            ta = np.minimum(scorer.ia, scorer.ib)
            tb = np.maximum(scorer.ia, scorer.ib)
            predicted = np.isin(ta * v + tb, keys)
            evaluation = scorer._pair_evaluation(predicted, int(keys.shape[0]), "pairs", False)
        missing_ids = np.concatenate([scorer.ia, scorer.ib])
        evaluation.missing_ids = int(np.unique(missing_ids[~in_pairs[missing_ids]]).shape[0])
        return evaluation
    n = len(truth)
    evaluation = scorer.score(components, "pairs", closure=closure)
    evaluation.missing_ids = int(np.count_nonzero(~in_pairs[:n]))
    evaluation.ignored_ids = int(np.count_nonzero(in_pairs[n:]))
    if not closure:
        inside = pb_ < n  # pa_ < pb_, so both ends are truth documents
        same = truth.cluster[pa_[inside]] == truth.cluster[pb_[inside]]
        tp = int(np.count_nonzero(same))
        fp = int(same.shape[0]) - tp
        fn = _pairs_within(np.bincount(truth.cluster)) - tp
        evaluation.confusion = PairConfusion(tp, fp, fn, n * (n - 1) // 2 - tp - fp - fn)
        evaluation.note += (
            "; pairwise counts use the listed pairs only, ARI and B-cubed the "
            "connected components of the listed pairs"
        )
    return evaluation


def evaluate(
    prediction: Prediction, truth: PairTruth | ClusterTruth, closure: bool = False
) -> Evaluation:
    """Score a prediction against truth (see the module docstring for what is counted).

    Args:
        prediction: a GROUPS or PAIRS :class:`Prediction`.
        truth: :class:`PairTruth` (labelled pairs) or :class:`ClusterTruth`.
        closure: PAIRS predictions only: a pair counts as predicted when its documents are
            connected through listed pairs (transitive closure), not only when it is listed.
            ARI and B-cubed always use the connected components of a PAIRS prediction.

    Cost: O((n + m) log(n + m)) for n predicted documents / m pairs and the truth's size; no
    pair enumeration.

    Example:
        >>> t = PairTruth.from_arrays(["a", "a", "c"], ["b", "c", "d"], [1, 0, 1])
        >>> e = evaluate(Prediction.from_pairs(["a", "b"], ["b", "c"]), t)
        >>> e.confusion, e.unlabelled_predicted_pairs
        (PairConfusion(tp=1, fp=0, fn=1, tn=1), 1)
        >>> e.note.split(";")[0]
        'computed over 3 labelled pairs'
        >>> evaluate(Prediction.from_pairs(["a", "b"], ["b", "c"]), t, closure=True).confusion
        PairConfusion(tp=1, fp=1, fn=1, tn=0)
    """
    if prediction.kind not in PREDICTION_KINDS:
        raise ValueError(
            f"prediction.kind must be one of {', '.join(PREDICTION_KINDS)}; got {prediction.kind!r}"
        )
    if truth.kind not in TRUTH_KINDS:
        raise ValueError(f"truth.kind must be one of {', '.join(TRUTH_KINDS)}; got {truth.kind!r}")
    if prediction.kind == "pairs":
        return _evaluate_pairs(prediction, truth, bool(closure))
    if closure:
        raise ValueError("closure applies to PAIRS predictions; GROUPS are already closed")
    labels = _codes(prediction.group, "group")
    return _Scorer(truth, prediction.ids).score(labels, "groups")


# --------------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------------


def sweep_values(method: str) -> tuple:
    """The settings a sweep tries by default: Hamming k 0..8 (SimHash) or Jaccard thresholds
    0.50, 0.55, …, 0.95 (MinHash).

    Example:
        >>> sweep_values("simhash")[-1], sweep_values("minhash")[:3]
        (8, (0.5, 0.55, 0.6))
    """
    if method == "simhash":
        return HAMMING_SWEEP
    if method == "minhash":
        return THRESHOLD_SWEEP
    raise ValueError(f"method must be one of simhash, minhash; got {method!r}")


def swept_settings(
    settings_base: Settings, values: Sequence | None = None, verify: float | str | None = "auto"
) -> list[Settings]:
    """One :class:`~neardup.pipeline.Settings` per swept value (values de-duplicated, ascending).

    Each is ``settings_base`` with ``hamming_k`` (SimHash) or ``threshold`` (MinHash) set to the
    value, ``verify`` set to ``verify`` ("auto" resolves per setting, as ``neardup dedup`` does:
    exact Jaccard at the swept threshold for MinHash, none for SimHash) and ``pairs="original"``
    (the pair mode does not change the groups). For MinHash the LSH bands are re-tuned for every
    threshold unless ``settings_base`` forces ``bands`` / ``rows``. Validated by ``Settings``.

    Example:
        >>> [s.hamming_k for s in swept_settings(Settings(), [3, 1])]
        [1, 3]
        >>> s = swept_settings(Settings(method="minhash"), [0.6])[0]
        >>> s.threshold, s.verify, s.banding() != Settings(method="minhash").banding()
        (0.6, 0.6, True)
    """
    method = settings_base.method
    if values is None:
        values = sweep_values(method)
    values = list(values)
    if not values:
        raise ValueError("values must hold at least one setting; got none")
    if method == "simhash":
        for v in values:
            if isinstance(v, float) and not float(v).is_integer():
                raise ValueError(f"hamming_k values must be integers in 0..32; got {v}")
        clean = sorted({int(v) for v in values})
        return [settings_base.replace(hamming_k=v, verify=verify, pairs="original") for v in clean]
    clean = sorted({round(float(v), 6) for v in values})
    return [settings_base.replace(threshold=v, verify=verify, pairs="original") for v in clean]


def sweep_signature_settings(
    settings_base: Settings, swept: Sequence[Settings], truth: PairTruth | ClusterTruth
) -> Settings:
    """The settings to compute the sweep's signatures with: those of ``settings_base``, keeping
    the shingle sets when a swept setting verifies or when MinHash distances of labelled pairs
    (exact Jaccard) are wanted.

    Example:
        >>> base = Settings(method="minhash")
        >>> truth = ClusterTruth.from_arrays(["a"], [0])
        >>> sweep_signature_settings(base, swept_settings(base), truth).needs_sets
        True
    """
    keep_sets = any(s.needs_sets for s in swept) or (
        settings_base.method == "minhash" and truth.kind == "pairs"
    )
    # Signatures depend on verify only through "keep the sets or not"; 1.0 is any valid value.
    # The data of the measure the swept settings verify with (all share one ``verify``).
    measure = next((s.verify_measure for s in swept if s.needs_sets), "jaccard")
    return settings_base.replace(verify=f"{measure}:1" if keep_sets else None, pairs="original")


@dataclass
class SweepRow:
    """One setting of a sweep and its scores.

    Attributes:
        parameter: "hamming_k" (SimHash) or "threshold" (MinHash).
        value: the swept value.
        settings: the full settings of the run.
        evaluation: its scores.
        groups: groups found over the whole corpus.
        bands, rows: the LSH banding used (MinHash), else None.
    """

    parameter: str
    value: int | float
    settings: Settings
    evaluation: Evaluation
    groups: int
    bands: int | None = None
    rows: int | None = None

    @property
    def label(self) -> str:
        """Short name of the setting: ``k=3`` or ``t=0.80``."""
        return f"k={self.value}" if self.parameter == "hamming_k" else f"t={self.value:.2f}"

    def to_dict(self) -> dict:
        """A flat row: the value, banding, pair counts, scores, and per-category predicted rates
        (``predicted:<category>``) or ARI / B-cubed (NaN → None)."""
        e = self.evaluation
        out: dict = {self.parameter: self.value}
        if self.parameter == "threshold":
            out.update(bands=self.bands, rows=self.rows)
        out.update(e.confusion.to_dict())
        if e.truth_kind == "clusters":
            out["ari"] = _nan_to_none(e.ari)
            out.update({f"bcubed_{k}": v for k, v in e.bcubed.to_dict().items()})
        else:
            out["unlabelled_predicted_pairs"] = e.unlabelled_predicted_pairs
            for c in e.categories:
                out[f"predicted:{c.category}"] = _nan_to_none(c.predicted_rate)
        out["groups"] = self.groups
        return out


def sweep(
    texts: Sequence[str] | None,
    ids: Sequence,
    timestamps: np.ndarray | None,
    truth: PairTruth | ClusterTruth,
    settings_base: Settings,
    values: Sequence | None = None,
    *,
    verify: float | str | None = "auto",
    workers: int | None = None,
    signatures: Signatures | None = None,
    on_setting: Callable[[Settings], None] | None = None,
) -> list[SweepRow]:
    """Score every swept setting against the truth, computing signatures once.

    Args:
        texts: the documents (ignored when ``signatures`` is given, may then be None).
        ids: their distinct IDs, as the truth names them.
        timestamps: int64 ordering key per document (None = input order).
        truth: :class:`PairTruth` or :class:`ClusterTruth`.
        settings_base: method, shingles, hashing, grouping …; the swept parameter is replaced.
        values: Hamming k values (SimHash) or Jaccard thresholds (MinHash); default
            :func:`sweep_values`.
        verify: see :func:`swept_settings` ("auto" = as ``neardup dedup`` at each setting).
        workers: processes for the signatures (None = all cores).
        signatures: precomputed signatures of ``texts`` (computed with
            :func:`sweep_signature_settings` if shingle sets are needed).
        on_setting: called with each setting before it runs (progress).

    Returns one :class:`SweepRow` per setting, ascending by value. Each row equals running
    :func:`~neardup.pipeline.find_groups` with that setting and :func:`evaluate` on its groups.

    Cost: one signature pass, then per setting the grouping stage (O(n log n) plus candidates)
    and O(n + truth) scoring.

    Example:
        >>> texts = ["the cat sat on the mat", "the cat sat on the mat!", "dogs bark at night"]
        >>> truth = ClusterTruth.from_arrays(["a", "b", "c"], [0, 0, 1])
        >>> rows = sweep(texts, ["a", "b", "c"], None, truth, Settings(), [0, 3], workers=1)
        >>> [(r.value, r.evaluation.f1) for r in rows]
        [(0, 1.0), (3, 1.0)]
    """
    swept = swept_settings(settings_base, values, verify)
    id_array = np.asarray(list(ids), dtype=object)
    n = id_array.shape[0]
    stamps = (
        np.zeros(n, dtype=np.int64)
        if timestamps is None
        else np.asarray(timestamps, dtype=np.int64)
    )
    if stamps.shape != (n,):
        raise ValueError(
            f"timestamps must have one value per document ({n}); got shape {stamps.shape}"
        )
    if signatures is None:
        if texts is None:
            raise ValueError("texts are needed when no signatures are given")
        texts = list(texts)
        if len(texts) != n:
            raise ValueError(f"texts and ids must have the same length; got {len(texts)} and {n}")
        signatures = signatures_parallel(
            texts, sweep_signature_settings(settings_base, swept, truth), workers
        )
    elif len(signatures) != n:
        raise ValueError(f"signatures must have one row per document ({n}); got {len(signatures)}")
    if signatures.set_offsets is None and any(s.needs_sets for s in swept):
        raise ValueError(
            "verification needs shingle sets; "
            "compute the signatures with sweep_signature_settings()"
        )
    scorer = _Scorer(truth, id_array)
    rows = []
    for s in swept:
        if on_setting is not None:
            on_setting(s)
        groups = find_groups(signatures, stamps, s)
        bands, rows_ = s.banding() if s.method == "minhash" else (None, None)
        value = s.hamming_k if s.method == "simhash" else s.threshold
        rows.append(
            SweepRow(
                parameter="hamming_k" if s.method == "simhash" else "threshold",
                value=value,
                settings=s,
                evaluation=scorer.score(groups.original),
                groups=int(groups.stats["groups"]),
                bands=bands,
                rows=rows_,
            )
        )
    return rows


def _strictness(row: SweepRow) -> float:
    return -row.value if row.parameter == "hamming_k" else row.value


def best_settings(
    rows: Sequence[SweepRow], min_precision: float = 0.99
) -> tuple[SweepRow | None, SweepRow | None]:
    """(best row by F1, best row with precision ≥ ``min_precision``).

    The first maximises F1 (ties: higher precision, then the stricter setting); the second,
    among rows with precision ≥ ``min_precision`` and at least one true positive, maximises
    recall (ties: F1, then the stricter setting). Either is None when no row qualifies.
    Cost: O(rows).

    Example:
        >>> best_settings([])
        (None, None)
    """
    if not 0.0 <= min_precision <= 1.0:
        raise ValueError(f"min_precision must be in [0, 1]; got {min_precision}")

    def key(*values):
        return tuple(-math.inf if math.isnan(v) else v for v in values)

    scored = [r for r in rows if not math.isnan(r.evaluation.f1)]
    best = max(
        scored,
        key=lambda r: key(r.evaluation.f1, r.evaluation.precision, _strictness(r)),
        default=None,
    )
    precise = [
        r for r in rows if r.evaluation.precision >= min_precision and r.evaluation.confusion.tp > 0
    ]
    best_precise = max(
        precise,
        key=lambda r: key(r.evaluation.recall, r.evaluation.f1, _strictness(r)),
        default=None,
    )
    return best, best_precise


@dataclass
class PairDistances:
    """The Hamming distance (SimHash) or exact Jaccard similarity (MinHash) of labelled pairs.

    Attributes:
        method: "simhash" or "minhash".
        values: one value per labelled pair whose two documents are in the corpus.
        positive: their labels.
        category: their categories (or None).
        missing: labelled pairs with a document outside the corpus (skipped).
    """

    method: str
    values: np.ndarray
    positive: np.ndarray
    category: np.ndarray | None
    missing: int

    @property
    def measure(self) -> str:
        """ "hamming distance" or "jaccard"."""
        return "hamming distance" if self.method == "simhash" else "jaccard"

    def summary(self) -> dict:
        """Count, mean and quartiles of the values per label and per category (JSON-ready)."""

        def stats(x: np.ndarray) -> dict:
            if x.size == 0:
                return {"pairs": 0}
            q = np.quantile(x.astype(np.float64), [0.0, 0.25, 0.5, 0.75, 1.0])
            return {
                "pairs": int(x.size),
                "mean": round(float(x.mean()), 4),
                "min": round(float(q[0]), 4),
                "q1": round(float(q[1]), 4),
                "median": round(float(q[2]), 4),
                "q3": round(float(q[3]), 4),
                "max": round(float(q[4]), 4),
            }

        out = {
            "measure": self.measure,
            "missing_pairs": self.missing,
            "positive": stats(self.values[self.positive]),
            "negative": stats(self.values[~self.positive]),
        }
        if self.category is not None:
            out["categories"] = {
                str(c): stats(self.values[self.category == c]) for c in pd.unique(self.category)
            }
        return out


def pair_distances(
    signatures: Signatures, ids: Sequence, truth: PairTruth, method: str
) -> PairDistances:
    """Distances of the labelled pairs: Hamming distance of SimHash fingerprints, or exact Jaccard
    of the shingle sets (MinHash; needs ``signatures`` with sets).

    Cost: O(m) for SimHash, O(Σ set sizes of the pairs) for Jaccard.

    Example:
        >>> from neardup.pipeline import signatures as sign
        >>> sig = sign(["a b c d", "a b c e"], Settings(verify=None))
        >>> t = PairTruth.from_arrays(["x"], ["y"], [1])
        >>> int(pair_distances(sig, ["x", "y"], t, "simhash").values[0]) >= 0
        True
    """
    if truth.kind != "pairs":
        raise ValueError("pair_distances needs labelled pairs (PairTruth)")
    index = _id_index(np.asarray(list(ids), dtype=object))
    if len(index) != len(signatures):
        raise ValueError(
            f"ids and signatures must have the same length; got {len(index)} and {len(signatures)}"
        )
    ia = index.get_indexer(truth.id_a)
    ib = index.get_indexer(truth.id_b)
    ok = (ia >= 0) & (ib >= 0)
    a, b = ia[ok].astype(np.int64), ib[ok].astype(np.int64)
    if method == "simhash":
        values = hamming_distance(signatures.signature[a], signatures.signature[b]).astype(np.int64)
    elif method == "minhash":
        if signatures.set_offsets is None:
            raise ValueError(
                "exact Jaccard needs shingle sets; compute signatures with verification on"
            )
        values = jaccard_pairs(signatures.set_offsets, signatures.set_hashes, a, b)
    else:
        raise ValueError(f"method must be one of simhash, minhash; got {method!r}")
    category = truth.category[ok] if truth.category is not None else None
    return PairDistances(method, values, truth.positive[ok], category, int(np.count_nonzero(~ok)))


def plot_sweep(
    rows: Sequence[SweepRow],
    path: str | os.PathLike,
    distances: PairDistances | None = None,
    chosen: SweepRow | None = None,
    title: str | None = None,
) -> Path:
    """Write a two-panel PNG of a sweep.

    Left: the precision–recall curve over the settings, each point labelled by its k or
    threshold, the ``chosen`` one circled. Right: with ``distances``, histograms of the labelled
    pairs' Hamming distances / Jaccard similarities, positives against negatives, with the chosen
    setting's cut marked; otherwise (cluster truth) pairwise F1, ARI and B-cubed F1 against the
    setting. Drawn on matplotlib's Agg canvas without pyplot state, saved without software /
    time metadata, so the same inputs give a byte-identical file. Cost: O(rows + pairs).

    Example:
        >>> import tempfile, pathlib
        >>> e = Evaluation("clusters", "groups", PairConfusion(1, 0, 1, 4), 4, 0, ari=0.5,
        ...                bcubed=BCubed(1.0, 0.75, 0.86))
        >>> row = SweepRow("hamming_k", 3, Settings(), e, 3)
        >>> plot_sweep([row], pathlib.Path(tempfile.mkdtemp()) / "s.png").read_bytes()[:4]
        b'\\x89PNG'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one sweep row; got none")
    fig = Figure(figsize=(12.8, 5.0), dpi=100)
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    recall = np.array([r.evaluation.recall for r in rows], dtype=np.float64)
    precision = np.array([r.evaluation.precision for r in rows], dtype=np.float64)
    ok = ~(np.isnan(recall) | np.isnan(precision))
    left.plot(recall[ok], precision[ok], "-o", color="tab:blue", ms=5)
    # Settings that land on the same point share one label ("k=0…4"), so labels do not overprint.
    spots: dict[tuple[float, float], list[SweepRow]] = {}
    for r, x, y, good in zip(rows, recall, precision, ok, strict=True):
        if good:
            spots.setdefault((float(x), float(y)), []).append(r)
    for i, ((x, y), same) in enumerate(spots.items()):
        text = same[0].label
        if len(same) == 2:
            text += "," + same[1].label.split("=")[1]
        elif len(same) > 2:
            text += "…" + same[-1].label.split("=")[1]
        # Alternate above / below so neighbouring points keep readable labels.
        left.annotate(
            text,
            (x, y),
            textcoords="offset points",
            xytext=(5, 4 if i % 2 == 0 else -11),
            fontsize=8,
        )
    if chosen is not None and not math.isnan(chosen.evaluation.precision):
        left.scatter(
            [chosen.evaluation.recall],
            [chosen.evaluation.precision],
            s=220,
            facecolors="none",
            edgecolors="tab:red",
            linewidths=2,
            label=f"chosen: {chosen.label} (F1 {chosen.evaluation.f1:.3f})",
            zorder=3,
        )
        left.legend(loc="lower left", fontsize="small")
    left.set_xlim(-0.02, 1.02)
    left.set_ylim(-0.02, 1.02)
    left.set_xlabel("recall")
    left.set_ylabel("precision")
    kind = rows[0].evaluation.truth_kind
    left.set_title(
        "precision–recall over " + ("labelled pairs" if kind == "pairs" else "all truth pairs")
    )
    left.grid(True, alpha=0.3)

    simhash = rows[0].parameter == "hamming_k"
    if distances is not None:
        values = distances.values.astype(np.float64)
        if simhash:
            top = int(values.max()) + 1 if values.size else 10
            bins = np.arange(-0.5, top + 1.0, 1.0)
        else:
            bins = np.linspace(0.0, 1.0, 41)
        pos, neg = values[distances.positive], values[~distances.positive]
        right.hist(
            neg, bins=bins, color="tab:gray", alpha=0.6, label=f"negative pairs ({neg.size:,})"
        )
        right.hist(
            pos, bins=bins, color="tab:green", alpha=0.6, label=f"positive pairs ({pos.size:,})"
        )
        if chosen is not None:
            if simhash:
                cut, text = chosen.value + 0.5, f"chosen: distance ≤ {chosen.value}"
            else:
                cut, text = chosen.value, f"chosen: jaccard ≥ {chosen.value:.2f}"
            right.axvline(cut, color="tab:red", ls="--", label=text)
        right.set_xlabel(
            "Hamming distance of SimHash fingerprints"
            if simhash
            else "exact Jaccard of shingle sets"
        )
        right.set_ylabel("labelled pairs")
        right.set_title("labelled pairs: positive vs negative")
        right.legend(loc="upper right" if simhash else "upper left", fontsize="small")
    else:
        x = np.array([r.value for r in rows], dtype=np.float64)
        right.plot(x, [r.evaluation.f1 for r in rows], "-o", label="pairwise F1")
        right.plot(
            x,
            [np.nan if r.evaluation.ari is None else r.evaluation.ari for r in rows],
            "-s",
            label="ARI",
        )
        right.plot(
            x,
            [np.nan if r.evaluation.bcubed is None else r.evaluation.bcubed.f1 for r in rows],
            "-^",
            label="B-cubed F1",
        )
        if chosen is not None:
            right.axvline(chosen.value, color="tab:red", ls="--", label=f"chosen: {chosen.label}")
        right.set_xlabel("Hamming k" if simhash else "Jaccard threshold")
        right.set_ylabel("score")
        right.set_ylim(-0.02, 1.02)
        right.set_title("scores against the truth clusters")
        right.legend(loc="lower right", fontsize="small")
    right.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, format="png", metadata={"Software": None})
    return out
