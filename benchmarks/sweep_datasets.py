"""Best settings per labelled dataset: a sweep of every method and shingling, next to the defaults.

For each labelled set (the ones of ``bench_quality.py`` plus the PAN13 passages) and each of
MinHash char:5, MinHash word:3, SimHash char:5 and SimHash word:3, one ``neardup sweep``
(:func:`neardup.quality.sweep`: signatures once, every Jaccard threshold 0.50..0.95 or every
Hamming k 0..8) scores P/R/F1 over the labelled pairs. Writes a Markdown table (defaults, best
setting by F1, best with precision ≥ 0.99), one TSV per sweep and the plots named by ``--plots``
under ``--out-dir``.

PAN13 passages: the verbatim copies (``no-obfuscation``) are near-duplicates; random word
edits, machine-translation chains and summaries are not (rule 3 of NEAR_DUPLICATE.md), so they
are the negatives, with the sub-corpus as the category.

    python benchmarks/sweep_datasets.py                      # all sets, about 5 minutes
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_quality import SYNTH_DIR, load_truth, make_synth, read_docs
from neardup import quality
from neardup.engines.local import signatures_parallel
from neardup.io import write_table
from neardup.settings import DEFAULT_METHOD, DEFAULT_SHINGLE, DEFAULT_THRESHOLD, Settings

DATASETS = ("synth", "clough_stevenson", "pan13_passages", "korean_question_pair", "korsts", "mrpc")
CONFIGS = (
    ("minhash", "char:5"),
    ("minhash", "word:3"),
    ("simhash", "char:5"),
    ("simhash", "word:3"),
)


def pan13_truth(folder: Path):
    frame = quality.read_table(folder / "pairs.tsv")
    label = np.where(frame["label"].to_numpy() == "no-obfuscation", 1, 0)
    return quality.PairTruth.from_arrays(
        frame["id_a"], frame["id_b"], label, category=frame["label"].to_numpy()
    )


def dataset(name: str, data_dir: Path):
    if name == "pan13_passages":
        folder = data_dir / "pan13_text_alignment" / "passages"
        return read_docs(str(folder / "docs.jsonl")), pan13_truth(folder)
    if name == "synth":
        if not (SYNTH_DIR / "pairs.tsv").is_file():
            make_synth(data_dir, SYNTH_DIR)
        truth, _ = load_truth(name, data_dir, SYNTH_DIR / "pairs.tsv")
        return read_docs(str(SYNTH_DIR / "docs.jsonl")), truth
    truth, _ = load_truth(name, data_dir, None)
    return read_docs(str(data_dir / name / "docs.jsonl")), truth


def fmt(e) -> str:
    p = "–" if e.precision is None or np.isnan(e.precision) else f"{e.precision:.3f}"
    return f"{p} / {e.recall:.3f} / **{e.f1:.3f}**"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--out-dir", type=Path, default=Path("docs/sweeps"))
    ap.add_argument(
        "--plots",
        default="synth:minhash:char:5,synth:simhash:word:3,"
        "korean_question_pair:minhash:char:5,pan13_passages:minhash:char:5",
        help="dataset:method:unit:size of the sweeps to plot",
    )
    ap.add_argument("--out", type=Path, default=Path("docs/sweeps/README.md"))
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    plots = set(args.plots.split(","))
    lines = [
        "# Best settings per dataset",
        "",
        "`python benchmarks/sweep_datasets.py`: one sweep per dataset, method and shingling; "
        "P / R / F1 over the labelled pairs (neardup's groups, as `neardup evaluate`). "
        "Defaults: MinHash char:5 at Jaccard 0.7, verified.",
        "",
        "| dataset | defaults P / R / F1 | best setting by F1 | its P / R / F1 | best with P ≥ 0.99 |"
        " its P / R / F1 |",
        "|---|---|---|---|---|---|",
    ]
    for name in args.datasets.split(","):
        (ids, texts), truth = dataset(name, args.data_dir)
        results = []
        for method, shingle in CONFIGS:
            base = Settings(method=method, shingle=shingle, verify=None)
            rows = quality.sweep(texts, ids, None, truth, base)
            tag = f"{name}_{method}_{shingle.replace(':', '')}"
            table = [r.to_dict() for r in rows]
            keys = list(dict.fromkeys(k for r in table for k in r))
            write_table(args.out_dir / f"{tag}.tsv", {k: [r.get(k) for r in table] for k in keys})
            if f"{name}:{method}:{shingle}" in plots:
                distances = quality.pair_distances(
                    signatures_parallel(texts, base, keep_sets=True), ids, truth, method
                )
                best, _ = quality.best_settings(rows, 0.99)
                quality.plot_sweep(
                    rows,
                    args.out_dir / f"{tag}.png",
                    distances,
                    chosen=best,
                    title=f"{method} {shingle} on {name}",
                )
            results.extend((method, shingle, r) for r in rows)
            print(
                f"{name} {method} {shingle}: best F1 {max(r.evaluation.f1 for r in rows):.3f}",
                flush=True,
            )
        default = next(
            r
            for m, s, r in results
            if m == DEFAULT_METHOD
            and s == DEFAULT_SHINGLE
            and abs(r.value - DEFAULT_THRESHOLD) < 1e-9
        )
        best = max(results, key=lambda x: (x[2].evaluation.f1, x[2].evaluation.precision or 0))
        precise = [x for x in results if (x[2].evaluation.precision or 0) >= 0.99]
        top = max(precise, key=lambda x: x[2].evaluation.f1) if precise else None
        lines.append(
            f"| {name} | {fmt(default.evaluation)} | {best[0]} {best[1]} {best[2].label} | "
            f"{fmt(best[2].evaluation)} | "
            + (
                f"{top[0]} {top[1]} {top[2].label} | {fmt(top[2].evaluation)} |"
                if top
                else "– | – |"
            )
        )
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
