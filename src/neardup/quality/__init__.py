"""Quality against labelled answers (SPEC §8): metrics, truth, evaluation, sweeps, labelled data.

Modules, bottom first:

- :mod:`~neardup.quality.metrics`: precision / recall / F1, the adjusted Rand index and B-cubed
  scores, pure functions over label arrays;
- :mod:`~neardup.quality.truth`: labelled pairs, truth clusters and predictions, read from TSV,
  CSV, JSON Lines or Parquet;
- :mod:`~neardup.quality.scoring`: a prediction scored against the truth;
- :mod:`~neardup.quality.sweeps`: every Hamming k or Jaccard threshold scored, signatures
  computed once, and the settings to choose; :mod:`~neardup.quality.plot` draws a sweep;
- :mod:`~neardup.quality.sampling`: stratified samples of candidate pairs for hand labelling,
  the labelling sheet and session;
- :mod:`~neardup.quality.synth` (with its edits in :mod:`~neardup.quality.edits`): labelled
  near-duplicates derived from real texts.

This package hands on the names of the first five (the modules are named ``scoring`` and
``sweeps`` so that the functions :func:`evaluate` and :func:`sweep` do not hide them); the makers
of labelled data are used as modules (``from neardup.quality import synth``;
``synth.generate(...)``).
"""

from neardup.quality.metrics import (
    BCubed,
    Contingency,
    PairConfusion,
    adjusted_rand_index,
    bcubed,
    contingency,
    labelled_pair_confusion,
    pair_confusion,
    precision_recall_f1,
)
from neardup.quality.plot import plot_sweep
from neardup.quality.scoring import CategoryScores, Evaluation, Scorer, evaluate
from neardup.quality.sweeps import (
    HAMMING_SWEEP,
    THRESHOLD_SWEEP,
    PairDistances,
    SweepRow,
    SweepTable,
    best_settings,
    pair_distances,
    sweep,
    sweep_corpus,
    sweep_signature_settings,
    sweep_values,
    swept_settings,
)
from neardup.quality.truth import (
    GROUP_COLUMNS,
    PREDICTION_KINDS,
    TRUTH_KINDS,
    ClusterTruth,
    PairTruth,
    Prediction,
    parse_labels,
    read_prediction,
    read_table,
    read_truth,
)

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
    "Scorer",
    "PairTruth",
    "ClusterTruth",
    "Prediction",
    "PairDistances",
    "SweepRow",
    "SweepTable",
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
    "sweep_corpus",
    "best_settings",
    "pair_distances",
    "plot_sweep",
]
