"""Does the MinHash index answer every document with the duplicate ID that ``dedup`` gives it?

A corpus of light-edit chains built from real texts (English and Korean Debian package
descriptions, ``shared/data``): per base text, a chain of copies each made by one light edit of
the one before (``neardup.quality.edits.Editor``: word edits, numbers, a sentence, a tail cut,
re-wrapping, punctuation; for Korean also spacing and particles), so the ends of a chain drift
towards the threshold; plus the hot template (``hot~NNNNN``, one text whose product name
changes). Then, each as a fresh process:

    neardup dedup CORPUS -o groups.tsv
    neardup index build CORPUS -d IDX --method minhash
    neardup index query-batch CORPUS -d IDX -o answers.tsv

and the documents whose two duplicate IDs differ are counted and listed with ``neardup compare``'s
verdict of the pair that separates them (the first few). ``dedup`` finds every pair that shares
a band and passes verification (its repair round); the index verifies every band-mate of a
query, so the two agree when no bucket was beyond the repair round's cap.

Usage:
    python benchmarks/index_agreement.py                  # ~20,000 documents
    python benchmarks/index_agreement.py --bases 300      # smaller
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neardup.quality.edits import Editor
from neardup.quality.synth import generate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LIGHT = {
    "en": ("word_edits", "numbers", "sentence", "truncate", "rewrap", "punctuation"),
    "ko": ("word_edits", "numbers", "sentence", "rewrap", "spacing", "particles"),
}


def _bases(lang: str, count: int, rng: np.random.Generator) -> list[str]:
    rows = [json.loads(line) for line in open(DATA / f"debian_descriptions_{lang}" / "docs.jsonl")]
    texts = sorted({r["text"] for r in rows if len(r["text"].split()) >= 30})
    picked = rng.choice(len(texts), size=min(count, len(texts)), replace=False)
    return [texts[k] for k in np.sort(picked)]


def chain_corpus(bases: int, chain: int, hot: int, seed: int) -> list[dict]:
    """``bases`` English and ``bases // 2`` Korean bases, each followed by ``chain`` copies
    (each one light edit of the one before), then ``hot`` hot-template documents."""
    rng = np.random.default_rng(seed)
    texts, langs = [], []
    for lang, count in (("en", bases), ("ko", bases // 2)):
        picked = _bases(lang, count, rng)
        texts += picked
        langs += [lang] * len(picked)
    editor = Editor(texts, langs, rng)
    docs = []
    for i, (text, lang) in enumerate(zip(texts, langs)):
        docs.append({"id": f"{lang}{i:05d}-0", "text": text})
        current = text
        for step in range(1, chain + 1):
            for _ in range(5):
                edit = LIGHT[lang][int(rng.integers(len(LIGHT[lang])))]
                edited = getattr(editor, edit)(i, current, lang)
                if edited:
                    current = edited
                    break
            docs.append({"id": f"{lang}{i:05d}-{step}", "text": current})
    if hot:
        hot_docs = generate([texts[0]], hot_template=hot, per_base=1, edits="rewrap", seed=seed)
        docs += [d for d in hot_docs.docs if d["id"].startswith("hot~")]
    return docs


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "neardup", *args, "-q"], check=True)
    return time.perf_counter() - start


def _column(path: Path, name: str) -> dict[str, str]:
    lines = path.read_text().splitlines()
    header = lines[0].split("\t")
    return {row.split("\t")[0]: row.split("\t")[header.index(name)] for row in lines[1:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", type=int, default=2700, help="English bases (Korean: half)")
    ap.add_argument("--chain", type=int, default=4, help="copies per base, each of the last")
    ap.add_argument("--hot", type=int, default=2000, help="hot-template documents")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--show", type=int, default=5, help="differing documents to explain")
    opts = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="neardup-agreement-") as tmp:
        work = Path(tmp)
        corpus = work / "docs.jsonl"
        docs = chain_corpus(opts.bases, opts.chain, opts.hot, opts.seed)
        corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
        summary = work / "summary.json"
        seconds = {
            "dedup": _run(
                ["dedup", str(corpus), "-o", str(work / "g.tsv"), "--summary-out", str(summary)]
            ),
            "index build": _run(
                ["index", "build", str(corpus), "-d", str(work / "idx"), "--method", "minhash"]
            ),
            "query-batch": _run(
                ["index", "query-batch", str(corpus), "-d", str(work / "idx"), "-o",
                 str(work / "a.tsv")]
            ),
        }  # fmt: skip
        by_dedup = _column(work / "g.tsv", "duplicate_id")
        by_index = _column(work / "a.tsv", "duplicate_id")
        counts = json.loads(summary.read_text())["counts"]
        differ = sorted(k for k in by_dedup if by_dedup[k] != by_index.get(k))
        texts = {d["id"]: d["text"] for d in docs}
        print(f"documents {len(docs):,}; groups (dedup) {len(set(by_dedup.values())):,}")
        print("seconds " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
        print(
            "repair round: links found "
            f"{counts.get('links_found_across_star_components', 0):,}, bucket pairs not "
            f"examined (cap) {counts.get('bucket_pairs_not_examined_cap', 0):,}"
        )
        print(f"same duplicate ID: {len(docs) - len(differ):,} / {len(docs):,}")
        for doc in differ[: opts.show]:
            pair = []
            for other in (by_dedup[doc], by_index[doc]):
                if other != doc:
                    (work / "a.txt").write_text(texts[doc])
                    (work / "b.txt").write_text(texts[other])
                    out = subprocess.run(
                        [sys.executable, "-m", "neardup", "compare", str(work / "a.txt"),
                         str(work / "b.txt")],
                        capture_output=True, text=True, check=False,
                    ).stdout  # fmt: skip
                    verdict = [ln for ln in out.splitlines() if "near_duplicate" in ln]
                    pair.append(f"{other}: {verdict[0].split()[-1] if verdict else '?'}")
            print(f"  {doc}: dedup {by_dedup[doc]}, index {by_index[doc]}; {'; '.join(pair)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
