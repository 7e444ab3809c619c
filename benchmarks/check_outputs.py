"""Guard for kernel optimisations: every output must stay bit-identical.

``--save REF.npz`` records, for the first ``--docs`` documents of a corpus, the feature hashes
(CSR offsets + hashes + content fingerprints) and the SimHash fingerprints and MinHash signatures
under several options (word:1/3, char:5, xxh/md5, set/tf weights, a few num_perm and seeds), plus
edge cases (empty text, one token, fewer tokens than k, long tokens, mixed scripts). ``--compare
REF.npz`` recomputes them with the current code and fails on any difference.

Usage:
    python benchmarks/check_outputs.py --corpus benchmarks/.data/corpus_100k.jsonl --save /tmp/ref.npz
    # ... change a kernel ...
    python benchmarks/check_outputs.py --corpus benchmarks/.data/corpus_100k.jsonl --compare /tmp/ref.npz
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from neardup.minhash import SCHEMES, minhash_from_features
from neardup.simhash import simhash_from_features
from neardup.text import hash_features

EDGE_CASES = [
    "",
    "   \n\t  ",
    "!!! ... ---",
    "one",
    "two words",
    "exactly three words",
    "Ｈｅｌｌｏ,\n   WORLD — 안녕\t하세요!! ",
    "ß ﬁ Σίσυφος İstanbul ǅ",
    "x" * 300 + " " + "y" * 33 + " " + "z" * 7,
    "가" * 100 + " 나다 라마바사 " + "아" * 31,
    " ".join(["a"] * 500),
    " ".join(str(i) for i in range(1000)),
    "emoji 😀 🎉 and symbols ™ © ½ ① x²",
    "\u0301\u0301 combining marks only",
]

CONFIGS = [
    # (shingle, hash, weights, num_perm, seed)
    ("word:3", "xxh", "set", 128, 1),
    ("word:3", "xxh", "tf", 64, 7),
    ("word:1", "xxh", "set", 256, 1),
    ("word:5", "xxh", "set", 100, 3),
    ("char:5", "xxh", "set", 128, 1),
    ("char:3", "xxh", "tf", 17, 2),
    ("word:3", "md5", "set", 128, 1),
    ("char:5", "md5", "tf", 32, 1),
]


def load_texts(path: Path, docs: int) -> list[str]:
    texts = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if len(texts) >= docs:
                break
            texts.append(json.loads(line)["text"])
    return texts


def outputs(texts: list[str], md5_docs: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for shingle, hash_name, weights, num_perm, seed in CONFIGS:
        batch = texts if hash_name == "xxh" else texts[:md5_docs]
        key = f"{shingle}-{hash_name}-{weights}-{num_perm}-{seed}"
        feats = hash_features(batch, shingle, hash_name)
        out[f"{key}/offsets"] = feats.offsets
        out[f"{key}/hashes"] = feats.hashes
        out[f"{key}/content"] = feats.content
        out[f"{key}/text_bytes"] = feats.text_bytes
        out[f"{key}/simhash"] = simhash_from_features(feats, weights)
        # "minhash" is the classic scheme's key, as in snapshots saved before schemes existed.
        out[f"{key}/minhash"] = minhash_from_features(feats, num_perm, seed, "classic")
        for scheme in (s for s in SCHEMES if s != "classic"):
            out[f"{key}/minhash_{scheme}"] = minhash_from_features(feats, num_perm, seed, scheme)
        # Batch boundaries must not matter: the same docs one at a time, for a few of them.
        for i in range(0, len(batch), max(1, len(batch) // 7)):
            one = hash_features([batch[i]], shingle, hash_name)
            lo, hi = feats.offsets[i], feats.offsets[i + 1]
            if not np.array_equal(one.hashes, feats.hashes[lo:hi]):
                raise AssertionError(f"{key}: doc {i} hashed alone differs from its batch")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--md5-docs", type=int, default=500)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    args = ap.parse_args(argv)
    texts = EDGE_CASES + load_texts(args.corpus, args.docs)
    got = outputs(texts, args.md5_docs)
    if args.save:
        np.savez_compressed(args.save, **got)
        print(f"saved {len(got)} arrays for {len(texts)} texts to {args.save}")
        return 0
    ref = np.load(args.compare)
    bad = [
        k
        for k in ref.files
        if k not in got or not np.array_equal(ref[k], got[k]) or ref[k].dtype != got[k].dtype
    ]
    bad += [k for k in got if k not in ref.files]
    if bad:
        print(f"DIFFERENT: {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"identical: {len(ref.files)} arrays for {len(texts)} texts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
