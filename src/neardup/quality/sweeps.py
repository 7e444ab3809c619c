"""Sweeps: one setting after another scored against labelled truth (SPEC §8).

:func:`sweep` computes signatures once and runs the grouping stage for every Hamming ``k``
(SimHash) or Jaccard threshold (MinHash), scoring each setting as
:func:`~neardup.quality.scoring.evaluate` does; :func:`best_settings` names the best by F1 and
the best at high precision; :func:`pair_distances` gives the Hamming distances or Jaccard
similarities of the labelled pairs. :func:`sweep_corpus` is all of it over a stream of documents,
what ``neardup sweep`` runs: it returns a :class:`SweepTable`.

Example:
    >>> texts = ["the cat sat on the mat", "the cat sat on the mat!", "dogs bark at night"]
    >>> truth = ClusterTruth.from_arrays(["a", "b", "c"], [0, 0, 1])
    >>> rows = sweep(texts, ["a", "b", "c"], None, truth, Settings(method="simhash"), [0, 3], workers=1)
    >>> best_settings(rows)[0].label
    'k=0'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from neardup.engines.local import LocalEngine, signatures_parallel
from neardup.pipeline import Signatures, find_groups
from neardup.quality.metrics import nan_to_none
from neardup.quality.scoring import Evaluation, Scorer
from neardup.quality.truth import ClusterTruth, PairTruth, id_index
from neardup.settings import Settings
from neardup.simhash import hamming_distance
from neardup.verify import Verification

#: Hamming distances a SimHash sweep tries by default.
HAMMING_SWEEP = tuple(range(9))
#: Jaccard thresholds a MinHash sweep tries by default (0.50, 0.55, …, 0.95).
THRESHOLD_SWEEP = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


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
        >>> [s.hamming_k for s in swept_settings(Settings(method="simhash"), [3, 1])]
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
            out["ari"] = nan_to_none(e.ari)
            out.update({f"bcubed_{k}": v for k, v in e.bcubed.to_dict().items()})
        else:
            out["unlabelled_predicted_pairs"] = e.unlabelled_predicted_pairs
            for c in e.categories:
                out[f"predicted:{c.category}"] = nan_to_none(c.predicted_rate)
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
    :func:`~neardup.pipeline.find_groups` with that setting and
    :func:`~neardup.quality.scoring.evaluate` on its groups.

    Cost: one signature pass, then per setting the grouping stage (O(n log n) plus candidates)
    and O(n + truth) scoring.

    Example:
        >>> texts = ["the cat sat on the mat", "the cat sat on the mat!", "dogs bark at night"]
        >>> truth = ClusterTruth.from_arrays(["a", "b", "c"], [0, 0, 1])
        >>> rows = sweep(texts, ["a", "b", "c"], None, truth, Settings(method="simhash"), [0, 3], workers=1)
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
    scorer = Scorer(truth, id_array)
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
    """The Hamming distance (SimHash) of labelled pairs, or (MinHash) the measure the swept
    settings decide by: LCS resemblance (``dedup``'s default) or exact Jaccard.

    Attributes:
        method: "simhash" or "minhash".
        values: one value per labelled pair whose two documents are in the corpus.
        positive: their labels.
        category: their categories (or None).
        missing: labelled pairs with a document outside the corpus (skipped).
        measure: "hamming distance", "lcs" or "jaccard".
    """

    method: str
    values: np.ndarray
    positive: np.ndarray
    category: np.ndarray | None
    missing: int
    measure: str = "jaccard"

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
    signatures: Signatures, ids: Sequence, truth: PairTruth, method: str, measure: str = "jaccard"
) -> PairDistances:
    """Distances of the labelled pairs: Hamming distance of SimHash fingerprints, or (MinHash)
    the verification ``measure`` on the data ``signatures`` keep: "lcs" (LCS resemblance of
    the LCS units) or "jaccard" (exact Jaccard of the shingle sets).

    Cost: O(m) for SimHash, O(Σ set sizes of the pairs) for Jaccard, O(Σ |A|·|B| / 64) for LCS.

    Example:
        >>> from neardup.pipeline import signatures as sign
        >>> sig = sign(["a b c d", "a b c e"], Settings(method="simhash", verify=None))
        >>> t = PairTruth.from_arrays(["x"], ["y"], [1])
        >>> int(pair_distances(sig, ["x", "y"], t, "simhash").values[0]) >= 0
        True
    """
    if truth.kind != "pairs":
        raise ValueError("pair_distances needs labelled pairs (PairTruth)")
    index = id_index(np.asarray(list(ids), dtype=object))
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
                f"{measure} needs the texts' verification data; compute signatures with "
                "verification on"
            )
        values = Verification(measure, 1.0).similarity(
            signatures.set_offsets, signatures.set_hashes, a, b, exact=True
        )
    else:
        raise ValueError(f"method must be one of simhash, minhash; got {method!r}")
    category = truth.category[ok] if truth.category is not None else None
    missing = int(np.count_nonzero(~ok))
    kind = "hamming distance" if method == "simhash" else measure
    return PairDistances(method, values, truth.positive[ok], category, missing, kind)


@dataclass
class SweepTable:
    """A sweep over a corpus (:func:`sweep_corpus`): its rows and what they recommend.

    Attributes:
        rows: one :class:`SweepRow` per setting, ascending by value.
        best: the best row by F1 (see :func:`best_settings`), or None.
        precise: the row with the best recall at precision ≥ ``min_precision``, or None.
        min_precision: that precision bound.
        distances: the labelled pairs' distances (labelled-pair truth), else None.
        documents: documents in the corpus.
        settings: the base settings (method, shingles, hashing, grouping …).
        verify: verification as asked ("auto", "none", "jaccard:T" …).
        truth_kind: "pairs" or "clusters".
    """

    rows: list[SweepRow]
    best: SweepRow | None
    precise: SweepRow | None
    min_precision: float
    distances: PairDistances | None
    documents: int
    settings: Settings
    verify: float | str | None
    truth_kind: str

    def columns(self) -> dict[str, list]:
        """The table as columns (the keys of :meth:`SweepRow.to_dict` in first-seen order; a row
        without a key has None there), ready for :func:`neardup.io.write_table`. O(rows)."""
        table_rows = [r.to_dict() for r in self.rows]
        names = list(dict.fromkeys(k for row in table_rows for k in row))
        return {k: [row.get(k) for row in table_rows] for k in names}

    def to_dict(self) -> dict:
        """Plain JSON-ready values: what was swept, every row, the two recommended settings and
        the distance summary (NaN → None). O(rows + pairs)."""
        first = self.rows[0].evaluation
        return {
            "truth": self.truth_kind,
            "method": self.settings.method,
            "shingle": self.settings.shingle,
            "grouping": self.settings.grouping,
            "verify": self.verify,
            "parameter": self.rows[0].parameter,
            "documents": self.documents,
            "note": first.note.split(" (")[0] if self.truth_kind == "pairs" else first.note,
            "missing_ids": first.missing_ids,
            "rows": [r.to_dict() for r in self.rows],
            "best_f1": self.best.to_dict() if self.best else None,
            "min_precision": self.min_precision,
            "best_at_min_precision": self.precise.to_dict() if self.precise else None,
            "distances": self.distances.summary() if self.distances is not None else None,
        }


def sweep_corpus(
    documents: Iterable,
    truth: PairTruth | ClusterTruth,
    settings_base: Settings,
    values: Sequence | None = None,
    *,
    verify: float | str | None = "auto",
    min_precision: float = 0.99,
    workers: int | None = None,
    on_batch: Callable[[object], None] | None = None,
    on_setting: Callable[[Settings], None] | None = None,
) -> SweepTable:
    """Sweep a corpus against the truth: what ``neardup sweep`` computes, without the printing.

    Args:
        documents: batches of documents, as :func:`neardup.io.read_documents` gives them.
        truth: :class:`PairTruth` or :class:`ClusterTruth`, naming documents by their IDs.
        settings_base, values, verify: as in :func:`sweep`.
        min_precision: the precision bound of the second recommended setting, in [0, 1].
        workers: processes for the signatures (None = all cores).
        on_batch: called with each batch once it is signed (progress).
        on_setting: called with each setting before it runs (progress).

    Returns a :class:`SweepTable`: the rows of :func:`sweep`, the settings
    :func:`best_settings` recommends and, for labelled pairs, :func:`pair_distances`.

    Cost: one signature pass keeping the shingle sets, then :func:`sweep` per setting.

    Example:
        >>> import json, pathlib, tempfile
        >>> from neardup.io import read_documents
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "docs.jsonl"
        >>> texts = {"a": "the cat sat on the mat", "b": "the cat sat on the mat!", "c": "dogs"}
        >>> _ = path.write_text("".join(json.dumps({"id": i, "text": t}) + "\\n"
        ...                             for i, t in texts.items()))
        >>> truth = ClusterTruth.from_arrays(["a", "b", "c"], [0, 0, 1])
        >>> table = sweep_corpus(read_documents([path]), truth, Settings(method="simhash"), [0, 3], workers=1)
        >>> [row.label for row in table.rows], table.best.label, table.documents
        (['k=0', 'k=3'], 'k=0', 3)
    """
    swept = swept_settings(settings_base, values, verify)
    if not 0.0 <= min_precision <= 1.0:
        raise ValueError(f"min_precision must be in [0, 1]; got {min_precision}")
    signed = sweep_signature_settings(settings_base, swept, truth)
    collection = LocalEngine(workers).collect(
        documents,
        signed,
        on_batch=on_batch,
        keep_sets=True,
    )
    rows = sweep(
        None,
        collection.ids,
        collection.timestamps,
        truth,
        settings_base,
        values,
        verify=verify,
        signatures=collection.signatures,
        on_setting=on_setting,
    )
    best, precise = best_settings(rows, min_precision)
    distances = None
    if truth.kind == "pairs":
        distances = pair_distances(
            collection.signatures,
            collection.ids,
            truth,
            settings_base.method,
            signed.verify_measure if signed.needs_sets else "jaccard",
        )
    return SweepTable(
        rows,
        best,
        precise,
        min_precision,
        distances,
        len(collection.ids),
        settings_base,
        verify,
        truth.kind,
    )
