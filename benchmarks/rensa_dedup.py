"""The deduplication script a user would write with rensa: the peer of ``bench_scale.py``.

Reads a JSONL corpus, builds a word 5-gram ``RMinHash`` (128 permutations) per document, puts them
in an ``RMinHashLSH`` (threshold 0.7, 16 bands of 8 rows: rensa needs a band count that divides
``num_perm``), links every pair the LSH returns with a union-find and writes one row per document:
``id <TAB> group representative``. No verification, no timestamps: the simplest honest script.

Run it with the peers' interpreter (``bash benchmarks/setup_peers.sh``)::

    benchmarks/.peers/venv/bin/python benchmarks/rensa_dedup.py CORPUS.jsonl -o groups.tsv
"""

from __future__ import annotations

import argparse
import json

from rensa import RMinHash, RMinHashLSH

NUM_PERM = 128
BANDS = 16
THRESHOLD = 0.7
SHINGLE = 5


def shingles(text: str) -> list[str]:
    words = text.lower().split()
    return [" ".join(words[i : i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    ids, minhashes = [], []
    with open(args.corpus, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            m = RMinHash(num_perm=NUM_PERM, seed=42)
            m.update(shingles(doc["text"]))
            ids.append(doc["id"])
            minhashes.append(m)

    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=BANDS)
    for i, m in enumerate(minhashes):
        lsh.insert(i, m)

    parent = list(range(len(ids)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, m in enumerate(minhashes):
        for j in lsh.query(m):
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)

    with open(args.output, "w", encoding="utf-8") as out:
        for i, ident in enumerate(ids):
            out.write(f"{ident}\t{ids[find(i)]}\n")


if __name__ == "__main__":
    main()
