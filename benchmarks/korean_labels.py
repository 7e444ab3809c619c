"""Hand-labelled Korean pairs (``benchmarks/korean_labels/``): how they were sampled, and the
precision, recall and F1 of the verification rules on them.

Commands (from the repository root)::

    python benchmarks/korean_labels.py sample   # candidates.jsonl: the pairs to label
    python benchmarks/korean_labels.py show [--from K] [--count N]   # the pairs, to read
    python benchmarks/korean_labels.py score    # P/R/F1 of each rule on pairs.jsonl

``sample`` takes pairs from two corpora of ``shared/data`` and sorts them into strata by two
measures (``c``: the character LCS resemblance, spaces removed; ``e``: the eojeol resemblance
of :mod:`neardup.eojeol`), then draws a fixed number of each stratum (seed 30) and splits each
stratum in half, ``dev`` and ``heldout``:

* ``debian_descriptions_ko``: every pair of the 4,470 descriptions with ``c ≥ 0.6`` (the
  exhaustive search of ``oracle.py``), canonical texts not equal;
* ``korean_question_pair``: the pairs of ``pairs.tsv`` whose canonical texts differ.

Strata: ``both`` (c ≥ T, e ≥ T), ``char_only`` (c ≥ T > e: the pairs the character rule
accepts and the eojeol rule does not), ``eojeol_only`` (e ≥ T > c), ``near`` (c and e below T,
c ≥ 0.6 for Debian, 0.5 for the questions). The labels (``pairs.jsonl``) were given by reading
each pair against ``NEAR_DUPLICATE.md``, without the measures in view (see the README).

``score`` prints, per corpus and split, the precision, recall and F1 of ``character`` (the
rule before: character LCS ≥ T) and ``dedup`` (``--verify lcs:0.8`` now: Korean pairs by
their eojeol). The strata are not drawn in
proportion to the corpora: the figures describe these pairs, weighted toward the decisions
that changed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
from pathlib import Path

import numpy as np

from neardup.eojeol import eojeol_pairs
from neardup.lcs import lcs_lengths, lcs_pairs
from neardup.text import normalize
from neardup.text.units import lcs_units

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle import DATA, load, oracle_pairs  # noqa: E402

FOLDER = HERE / "korean_labels"
THRESHOLD = 0.8
DRAWS = {
    "debian": {"both": 40, "char_only": 50, "eojeol_only": 16, "near": 24},
    "questions": {"both": 20, "char_only": 30, "eojeol_only": 10, "near": 20},
}
SEED = 30


def measures(texts_a: list[str], texts_b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(c, e)`` per pair: the character LCS resemblance (spaces removed) and the eojeol
    resemblance (NaN unless both hold Hangul)."""
    n = len(texts_a)
    a, b = np.arange(n), np.arange(n, 2 * n)
    o, c = lcs_units(texts_a + texts_b, "auto")
    top = np.maximum(np.diff(o)[a], np.diff(o)[b])
    chars = lcs_lengths(o, c, a, b) / np.maximum(top, 1)
    return chars, eojeol_pairs(o, c, a, b)


def stratum(c: float, e: float) -> str:
    if c >= THRESHOLD:
        return "both" if e >= THRESHOLD else "char_only"
    return "eojeol_only" if e >= THRESHOLD else "near"


def _candidates_debian() -> list[dict]:
    ids, texts = load("ko")
    i, j, _, _ = oracle_pairs(texts, "syllable", 0.6)
    keep = [
        (x, y) for x, y in zip(i.tolist(), j.tolist()) if normalize(texts[x]) != normalize(texts[y])
    ]
    c, e = measures([texts[x] for x, _ in keep], [texts[y] for _, y in keep])
    return [
        {
            "source": "debian",
            "id_a": ids[x],
            "id_b": ids[y],
            "text_a": texts[x],
            "text_b": texts[y],
            "stratum": stratum(cv, ev),
        }
        for (x, y), cv, ev in zip(keep, c.tolist(), e.tolist())
    ]


def _candidates_questions() -> list[dict]:
    folder = DATA / "korean_question_pair"
    texts = {}
    with open(folder / "docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            texts[record["id"]] = record["text"]
    pairs = []
    with open(folder / "pairs.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            x, y = line.split("\t")[:2]
            if normalize(texts[x]) != normalize(texts[y]) and normalize(texts[x]):
                pairs.append((x, y))
    c, e = measures([texts[x] for x, _ in pairs], [texts[y] for _, y in pairs])
    return [
        {
            "source": "questions",
            "id_a": x,
            "id_b": y,
            "text_a": texts[x],
            "text_b": texts[y],
            "stratum": stratum(cv, ev),
        }
        for (x, y), cv, ev in zip(pairs, c.tolist(), e.tolist())
        if cv >= 0.5 or ev >= THRESHOLD
    ]


def cmd_sample(_args) -> None:
    rng = random.Random(SEED)
    chosen = []
    for source, make in (("debian", _candidates_debian), ("questions", _candidates_questions)):
        pool = make()
        for name, count in DRAWS[source].items():
            members = [p for p in pool if p["stratum"] == name]
            drawn = rng.sample(members, min(count, len(members)))
            for k, pair in enumerate(drawn):
                pair["split"] = "dev" if k % 2 == 0 else "heldout"
            print(f"{source} {name}: {len(members):,} pairs, {len(drawn)} drawn")
            chosen.extend(drawn)
    rng.shuffle(chosen)  # labelled in this order, strata mixed
    FOLDER.mkdir(exist_ok=True)
    with open(FOLDER / "candidates.jsonl", "w", encoding="utf-8") as fh:
        for pair in chosen:
            fh.write(json.dumps(pair, ensure_ascii=False) + "\n")


def cmd_show(args) -> None:
    """The pairs to label: both texts and a diff of their words (no measure, no stratum)."""
    rows = [json.loads(line) for line in open(FOLDER / "candidates.jsonl", encoding="utf-8")]
    for k in range(args.start, min(args.start + args.count, len(rows))):
        a, b = normalize(rows[k]["text_a"]).split(), normalize(rows[k]["text_b"]).split()
        diff = [
            d
            for d in difflib.ndiff(a, b)
            if d[0] in "+-"  # the words one text has and the other lacks
        ]
        print(f"## {k}  words {len(a)} / {len(b)}")
        print("A:", rows[k]["text_a"].replace("\n", "⏎"))
        print("B:", rows[k]["text_b"].replace("\n", "⏎"))
        print("diff:", " ".join(diff))


def _f1(truth: np.ndarray, found: np.ndarray) -> tuple[float, float, float]:
    tp = int((truth & found).sum())
    precision = tp / max(int(found.sum()), 1)
    recall = tp / max(int(truth.sum()), 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    return precision, recall, f1


def cmd_score(_args) -> None:
    rows = [json.loads(line) for line in open(FOLDER / "pairs.jsonl", encoding="utf-8")]
    texts = [r["text_a"] for r in rows] + [r["text_b"] for r in rows]
    n = len(rows)
    a, b = np.arange(n), np.arange(n, 2 * n)
    o, c = lcs_units(texts, "syllable")
    rules = {"character": lcs_pairs(o, c, a, b)}
    o, c = lcs_units(texts, "auto")
    rules["dedup"] = lcs_pairs(o, c, a, b)
    label = np.array([r["label"] for r in rows], bool)
    print("| corpus | split | pairs | near-dup | rule | P | R | F1 |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for source in ("debian", "questions", "all"):
        for split in ("dev", "heldout"):
            sel = np.array([(source in ("all", r["source"])) and r["split"] == split for r in rows])
            for name, value in rules.items():
                p, r, f = _f1(label[sel], value[sel] >= THRESHOLD)
                print(
                    f"| {source} | {split} | {int(sel.sum())} | {int(label[sel].sum())} "
                    f"| {name} | {p:.3f} | {r:.3f} | {f:.3f} |"
                )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("sample")
    show = sub.add_parser("show")
    show.add_argument("--from", dest="start", type=int, default=0)
    show.add_argument("--count", type=int, default=20)
    sub.add_parser("score")
    args = ap.parse_args(argv)
    {"sample": cmd_sample, "show": cmd_show, "score": cmd_score}[args.command](args)


if __name__ == "__main__":
    main()
