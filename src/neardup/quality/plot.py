"""A picture of a sweep: the precision–recall curve and the labelled pairs' distances.

Drawn with matplotlib, imported only when a plot is drawn.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neardup.quality.sweeps import PairDistances, SweepRow


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
        >>> from neardup.settings import Settings
        >>> from neardup.quality.scoring import Evaluation
        >>> from neardup.quality.metrics import BCubed, PairConfusion
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
                cut, text = chosen.value, f"chosen: {distances.measure} ≥ {chosen.value:.2f}"
            right.axvline(cut, color="tab:red", ls="--", label=text)
        right.set_xlabel(
            "Hamming distance of SimHash fingerprints"
            if simhash
            else {
                "lcs": "LCS resemblance of the texts",
                "jaccard": "exact Jaccard of shingle sets",
            }[distances.measure]
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
