"""Scores of a prediction against labelled truth (SPEC §8).

* **Labelled pairs**: precision, recall and F1 are computed **over the labelled pairs only**: a
  labelled pair counts as predicted a duplicate when the prediction puts both documents in one
  group (GROUPS prediction) or lists the pair (PAIRS prediction, optionally its transitive
  closure). Predicted pairs that carry no label are not counted: nobody judged them. With
  categories, each gets its own row (:class:`CategoryScores`).
* **Clusters**: pairwise precision / recall / F1 over all pairs of the truth documents, the
  adjusted Rand index and B-cubed precision / recall / F1, from the contingency table of truth
  clusters × predicted groups (:mod:`neardup.quality.metrics`), in O(n log n).

Truth IDs that the prediction does not mention are singletons (and counted). :class:`Scorer`
aligns the truth once to a list of documents, so that a sweep scores one labeling per setting
in O(n) each.

Example:
    >>> truth = ClusterTruth.from_arrays(["a", "b", "c", "d"], [1, 1, 2, 2])
    >>> pred = Prediction.from_groups(["a", "b", "c", "d"], ["a", "a", "a", "d"])
    >>> e = evaluate(pred, truth)
    >>> e.confusion.tp, e.confusion.fp, e.confusion.fn, round(e.f1, 3)
    (1, 2, 1, 0.4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from neardup.candidates.radix import sorted_distinct
from neardup.groups import connected_components
from neardup.quality.metrics import (
    BCubed,
    PairConfusion,
    contingency,
    dense_codes,
    labelled_pair_confusion,
    nan_to_none,
    pairs_within,
    ratio,
)
from neardup.quality.truth import (
    PREDICTION_KINDS,
    TRUTH_KINDS,
    ClusterTruth,
    PairTruth,
    Prediction,
    id_index,
)


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
        return ratio(self.predicted, self.pairs)

    def to_dict(self) -> dict:
        """Plain values (NaN → None)."""
        return {
            "category": self.category,
            "pairs": self.pairs,
            "positive": self.positive,
            "predicted": self.predicted,
            "predicted_rate": nan_to_none(self.predicted_rate),
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
            out["ari"] = nan_to_none(self.ari)
            out["bcubed"] = self.bcubed.to_dict() if self.bcubed is not None else None
        out["note"] = self.note
        return out


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


class Scorer:
    """Truth aligned once to a fixed list of predicted documents, so that many labelings of
    those documents (one per swept setting) are scored in O(n) each.

    Building it costs O(n + truth); :meth:`score` takes one int64 group code per document.

    Example:
        >>> scorer = Scorer(ClusterTruth.from_arrays(["a", "b", "c"], [0, 0, 1]), ["a", "b", "c"])
        >>> scorer.score([0, 0, 1]).f1, scorer.score([0, 1, 2]).f1
        (1.0, 0.0)
    """

    def __init__(self, truth: PairTruth | ClusterTruth, ids: Sequence):
        self.truth = truth
        index = id_index(np.asarray(ids, dtype=object))
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
                predicted, pairs_within(np.bincount(labels)) if labels.size else 0, kind, closure
            )
        table = contingency(truth.cluster, self.cluster_labels(labels))
        return self._evaluation(
            kind,
            table.pair_confusion(),
            closure,
            ignored_ids=self.ignored,
            ari=table.adjusted_rand_index(),
            bcubed=table.bcubed(),
            note=_cluster_note(self.truth_ids, self.truth_ids * (self.truth_ids - 1) // 2),
        )

    def _evaluation(
        self, kind: str, confusion: PairConfusion, closure: bool, **scores
    ) -> Evaluation:
        """An :class:`Evaluation` of this truth with the fields every prediction shares."""
        return Evaluation(
            truth_kind=self.truth.kind,
            prediction_kind=kind,
            confusion=confusion,
            truth_ids=self.truth_ids,
            missing_ids=self.missing,
            closure=closure,
            **scores,
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
        return self._evaluation(
            kind,
            confusion,
            closure,
            labelled_pairs=len(truth),
            unlabelled_predicted_pairs=unlabelled,
            categories=categories,
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
    keys = sorted_distinct(pa_ * v + pb_, in_place=True)
    pa_, pb_ = keys // v, keys % v
    scorer = Scorer(truth, np.asarray(vocab, dtype=object))
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
        fn = pairs_within(np.bincount(truth.cluster)) - tp
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
    labels = dense_codes(prediction.group, "group")
    return Scorer(truth, prediction.ids).score(labels, "groups")
