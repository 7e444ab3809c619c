"""The feature options measured: multiset shingles, stop-word-anchored shingles, IDF weights.

For each labelled dataset of ``sweep_datasets.py``, one sweep per feature setting (signatures
once, every threshold or Hamming k), next to the plain setting it modifies; reports the best F1
(with its setting) and the F1 at the default threshold / k. IDF tables are computed from each
dataset's own documents, as ``--weights idf`` does.

    python benchmarks/sweep_features.py --out docs/features.md.tsv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from neardup import quality
from neardup.idf import IdfTable
from neardup.settings import Settings
from neardup.text import hash_features
from sweep_datasets import DATASETS, dataset

# (label, method, shingle, weights, the value read as "at the default")
VARIANTS = (
    ("MinHash char:5", "minhash", "char:5", "set", 0.7),
    ("MinHash char:5 multiset", "minhash", "char:5:multiset", "set", 0.7),
    ("MinHash word:3", "minhash", "word:3", "set", 0.7),
    ("MinHash word:3 multiset", "minhash", "word:3:multiset", "set", 0.7),
    ("MinHash stopword:3", "minhash", "stopword:3", "set", 0.7),
    ("SimHash word:3", "simhash", "word:3", "set", 3),
    ("SimHash stopword:3", "simhash", "stopword:3", "set", 3),
    ("SimHash word:1", "simhash", "word:1", "set", 3),
    ("SimHash word:1 tf", "simhash", "word:1", "tf", 3),
    ("SimHash word:1 idf", "simhash", "word:1", "idf", 3),
    ("SimHash word:3 idf", "simhash", "word:3", "idf", 3),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--out", type=Path, default=Path("docs/sweeps/features.md"))
    args = ap.parse_args()
    names = args.datasets.split(",")
    header = "| setting | " + " | ".join(names) + " |"
    results: dict[str, dict[str, str]] = {v[0]: {} for v in VARIANTS}
    for name in names:
        (ids, texts), truth = dataset(name, args.data_dir)
        for label, method, shingle, weights, default in VARIANTS:
            idf = None
            if weights == "idf":
                idf = IdfTable.from_features([hash_features(texts, shingle)], shingle, "xxh")
            base = Settings(method=method, shingle=shingle, weights=weights, idf=idf, verify=None)
            rows = quality.sweep(texts, ids, None, truth, base)
            best = max(rows, key=lambda r: (r.evaluation.f1, -abs(r.value - default)))
            at_default = next(r for r in rows if abs(r.value - default) < 1e-9)
            results[label][name] = (
                f"{at_default.evaluation.f1:.3f} (best {best.evaluation.f1:.3f} at {best.label})"
            )
            print(name, label, results[label][name], flush=True)
    lines = [
        "F1 at the default threshold (MinHash 0.7) or k (SimHash 3), and the best F1 over "
        "the sweep with its setting.",
        "",
        header,
        "|---|" + "---|" * len(names),
    ]
    for label, _, _, _, _ in VARIANTS:
        lines.append(f"| {label} | " + " | ".join(results[label][n] for n in names) + " |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
