"""Exhaustive near-duplicate oracle on the Debian descriptions, and scoring against it.

Rule 2 of ``NEAR_DUPLICATE.md``: a pair is a near-duplicate when at least ``T`` (0.8) of the
longer text's units are kept in order in the other, i.e. ``LCS / max(len) >= T``
(:func:`neardup.lcs.lcs_pairs`). The oracle decides *every* pair of a corpus by that rule:

* **length prefilter** (provably lossless): LCS ≤ min(len), so ``LCS / max ≤ min / max``; pairs
  with ``min / max < T`` cannot be accepted and are skipped. Documents are sorted by length, so
  each one meets only the longer documents within ``len / T``.
* **bag prefilter** (provably lossless): every common subsequence uses each unit at most as many
  times as the rarer side has it, so ``LCS ≤ Σ_u min(count_A(u), count_B(u))``; folding the
  units into 64 buckets (by a hash of the code) only raises the right side, so pairs whose
  bucketed bag intersection is below ``T · max`` are skipped.
* every other pair: the LCS (bit-parallel kernel, stopping early once ``T · max`` is out of
  reach), accepted when ``LCS / max ≥ T``; the resemblance written for accepted pairs is exact.

Corpora: ``ko`` = all 4,470 Korean descriptions, ``en`` = the first 20,000 English ones
(``shared/data/debian_descriptions_{ko,en}/docs.jsonl``). Length bands are by the word count of
the longer text of a pair (normalised words): <10, 10–30, 30–100, >100.

Commands (from the repository root)::

    python benchmarks/oracle.py build --lang ko     # the oracle TSV (+ the docs), about 5 s
    python benchmarks/oracle.py build --lang en     # about 30 s on 2 cores
    python benchmarks/oracle.py evaluate --lang ko PAIRS.tsv        # P/R per band of a method
    python benchmarks/oracle.py sweep --lang ko                     # LSH configs + LCS verification

``--unit`` is ``auto`` (default: the rule of ``neardup dedup --verify lcs``: words, characters
for texts holding kana or Han, and two Korean texts by their eojeol, ``docs/korean.md``; a
corpus holding Korean texts goes through :func:`eojeol_oracle_pairs`, its own search with its
own bounds, which measures every pair), ``eojeol`` (that search whatever the corpus),
``word``, ``syllable`` or ``word+syllable`` (a pair is accepted when either accepts it)
(:func:`neardup.text.units.lcs_units`; comparison in ``benchmarks/README.md``);
``--threshold`` is 0.8.

``build`` writes ``benchmarks/.data/oracle/{lang}_docs.jsonl`` (the corpus, to run
``neardup dedup`` on) and ``{lang}_{unit}_{T}.tsv`` (``id_a, id_b, resemblance, band``, one row
per accepted pair, ``id_a`` before ``id_b`` in corpus order). ``evaluate`` reads a PAIRS file of
``neardup dedup --pairs all --pairs-out`` (or any TSV whose first two columns are ids; a header
line is skipped) and prints precision and recall per band. ``sweep`` computes MinHash candidates
for several LSH configurations (optionally a second, length-restricted LSH for short documents),
verifies them with the LCS rule and prints candidate recall, final precision/recall per band,
the number of candidates and the seconds of each step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numba import njit

from neardup.eojeol import EOJEOL_END, by_eojeol, eojeol_rows, unit_key
from neardup.lcs import _lcs_bits, _lcs_scratch, lcs_pairs
from neardup.text.units import lcs_units

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("NEARDUP_SHARED", HERE.parent.parent / "shared")) / "data"
OUT = HERE / ".data" / "oracle"
CORPORA = {"ko": ("debian_descriptions_ko", None), "en": ("debian_descriptions_en", 20000)}
BANDS = ((0, 10, "<10"), (10, 30, "10-30"), (30, 100, "30-100"), (100, 1 << 62, ">100"))
BUCKETS = 64


def load(lang: str, data: Path = DATA) -> tuple[list[str], list[str]]:
    """(ids, texts) of a corpus, in file order."""
    folder, limit = CORPORA[lang]
    ids, texts = [], []
    with open(data / folder / "docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            ids.append(str(record["id"]))
            texts.append(record["text"])
            if limit is not None and len(ids) >= limit:
                break
    return ids, texts


def word_counts(texts: list[str]) -> np.ndarray:
    offsets, _ = lcs_units(texts, "word")
    return np.diff(offsets)


def band_of(words: np.ndarray) -> np.ndarray:
    """Band index (0..3) of a word count of the longer text."""
    return np.searchsorted(np.array([b[1] for b in BANDS[:-1]]), words, side="right")


@njit(cache=True)
def _bucket_counts(offsets, codes, buckets):
    n = offsets.shape[0] - 1
    out = np.zeros((n, buckets), dtype=np.int32)
    shift = np.uint64(64 - int(np.log2(buckets)))
    for d in range(n):
        for i in range(offsets[d], offsets[d + 1]):
            h = (unit_key(codes[i]) * np.uint64(0x9E3779B97F4A7C15)) >> shift
            out[d, h] += 1
    return out


@njit(cache=True, nogil=True)
def _oracle_chunk(order, lengths, offsets, codes, bags, lo, hi, threshold):
    """Accepted pairs (i, j, resemblance) for sorted positions lo..hi-1 against all later ones.

    Returns (i, j, value, length-filtered pair count, bag-filtered pair count)."""
    n = order.shape[0]
    cap = 1024
    out_i = np.empty(cap, dtype=np.int64)
    out_j = np.empty(cap, dtype=np.int64)
    out_v = np.empty(cap, dtype=np.float64)
    count = 0
    after_length = 0
    after_bag = 0
    longest = lengths.max() if lengths.shape[0] else 0
    scratch = _lcs_scratch(longest)
    buckets = bags.shape[1]
    for p in range(lo, hi):
        i = order[p]
        li = lengths[i]
        for q in range(p + 1, n):
            j = order[q]
            lj = lengths[j]  # lj >= li
            if lj == 0:
                value = 1.0
            else:
                if li / lj < threshold:
                    break
                after_length += 1
                bag = 0
                for k in range(buckets):
                    bag += min(bags[i, k], bags[j, k])
                if bag / lj < threshold:
                    continue
                after_bag += 1
                x = codes[offsets[i] : offsets[i + 1]]
                y = codes[offsets[j] : offsets[j + 1]]
                need = np.int64(np.ceil(threshold * lj - 1e-9))
                value = _lcs_bits(x, y, scratch, need) / lj
                if value < threshold:
                    continue
            if count == cap:
                cap *= 2
                grow_i = np.empty(cap, dtype=np.int64)
                grow_j = np.empty(cap, dtype=np.int64)
                grow_v = np.empty(cap, dtype=np.float64)
                grow_i[:count] = out_i[:count]
                grow_j[:count] = out_j[:count]
                grow_v[:count] = out_v[:count]
                out_i, out_j, out_v = grow_i, grow_j, grow_v
            out_i[count] = min(i, j)
            out_j[count] = max(i, j)
            out_v[count] = value
            count += 1
    return out_i[:count], out_j[:count], out_v[:count], after_length, after_bag


@njit(cache=True)
def _korean_floors(offsets, codes, threshold):
    """Per text: whether it is Korean (its characters mark eojeol ends), its eojeol, and the
    characters of its ``ceil(threshold · eojeol)`` shortest eojeol: a Korean text can keep
    that many of its words only in a text it shares at least that many characters with."""
    n = offsets.shape[0] - 1
    korean = np.zeros(n, dtype=np.bool_)
    words = np.zeros(n, dtype=np.int64)
    floors = np.zeros(n, dtype=np.int64)
    for d in range(n):
        x = codes[offsets[d] : offsets[d + 1]]
        if not by_eojeol(x):
            continue
        korean[d] = True
        lengths = []
        run = 0
        for i in range(x.shape[0]):
            run += 1
            if (np.uint64(x[i]) >> np.uint64(62)) & np.uint64(1):
                lengths.append(run)
                run = 0
        words[d] = len(lengths)
        need = np.int64(np.ceil(threshold * words[d] - 1e-9))
        floors[d] = np.sort(np.array(lengths))[:need].sum()
    return korean, words, floors


@njit(cache=True, nogil=True)
def kept_words(x, y):
    """The most eojeol of ``x`` whose characters, concatenated in order, are a subsequence of
    ``y`` (character units of ``lcs_units(..., "auto")``, each eojeol's last character marked).

    A plain dynamic program, written apart from ``neardup.eojeol.kept_eojeol`` and without
    its bounds, greedy pass or early stop: ``best[p]`` is the most words of x so far kept
    within ``y[:p]``; a word started at p is embedded at its earliest (``end[p]``, one
    character of x at a time through a next-occurrence table of y), which is the best place
    for it since what follows only needs y's rest. O(|x| · |y|) time, O(|y|) memory."""
    m = y.shape[0]
    dead = m + 1
    keys = np.empty(m, np.uint64)
    for p in range(m):
        keys[p] = unit_key(y[p])
    best = np.zeros(m + 1, np.int64)
    end = np.arange(m + 2, dtype=np.int64)
    nxt = np.empty(m + 2, np.int64)
    nxt[m] = dead
    nxt[m + 1] = dead
    for i in range(x.shape[0]):
        c = unit_key(x[i])
        for p in range(m - 1, -1, -1):
            nxt[p] = p + 1 if keys[p] == c else nxt[p + 1]
        for p in range(m + 1):
            end[p] = nxt[end[p]]
        if np.uint64(x[i]) & EOJEOL_END:
            grown = best.copy()
            for p in range(m + 1):
                if end[p] <= m and best[p] + 1 > grown[end[p]]:
                    grown[end[p]] = best[p] + 1
            for p in range(1, m + 1):
                grown[p] = max(grown[p], grown[p - 1])
            best = grown
            for p in range(m + 2):
                end[p] = p
    return best[m]


@njit(inline="always")
def _eojeol_direction(x, y, words, floor, bag, threshold):
    """kept(x, y) / words(x) of two Korean texts, or -1.0 when the floor of x's characters
    already rules it out (the characters x keeps are at most ``bag`` and at most |y|)."""
    if floor > min(bag, y.shape[0]):
        return -1.0
    return kept_words(x, y) / words


@njit(cache=True, nogil=True)
def _eojeol_chunk(offsets, codes, bags, korean, words, floors, lo, hi, threshold):
    """Accepted pairs (i, j, value) of texts lo..hi-1 against all later ones by the
    definition's rule: two Korean texts by eojeol alone (the words of the text of more
    characters kept in the other, the lower of both directions when they have as many), any
    other pair by the LCS of its units. Returns (i, j, value, pairs measured)."""
    n = offsets.shape[0] - 1
    out_i = []
    out_j = []
    out_v = []
    measured = 0
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    scratch = _lcs_scratch(longest)
    for i in range(lo, hi):
        x = codes[offsets[i] : offsets[i + 1]]
        for j in range(i + 1, n):
            y = codes[offsets[j] : offsets[j + 1]]
            bag = 0
            for k in range(bags.shape[1]):
                bag += min(bags[i, k], bags[j, k])
            if korean[i] and korean[j]:
                value = 2.0
                if x.shape[0] >= y.shape[0]:
                    value = _eojeol_direction(x, y, words[i], floors[i], bag, threshold)
                if y.shape[0] >= x.shape[0] and value >= threshold:
                    back = _eojeol_direction(y, x, words[j], floors[j], bag, threshold)
                    value = min(value, back)
                measured += 1
            else:
                top = max(x.shape[0], y.shape[0])
                if top == 0:
                    value = 1.0
                elif min(x.shape[0], y.shape[0]) / top < threshold or bag / top < threshold:
                    continue
                else:
                    measured += 1
                    need = np.int64(np.ceil(threshold * top - 1e-9))
                    value = _lcs_bits(x, y, scratch, need) / top
            if value >= threshold:
                out_i.append(i)
                out_j.append(j)
                out_v.append(value)
    return np.array(out_i), np.array(out_j), np.array(out_v), measured


def eojeol_oracle_pairs(texts: list[str], threshold: float = 0.8, workers: int | None = None):
    """Every pair (i < j) accepted by the definition's rule with Korean in eojeol (unit
    ``eojeol``): :func:`_eojeol_chunk` over all pairs. Its filters are its own, each a bound
    of the rule it applies: for two Korean texts, the characters of the longer text's
    ``ceil(T · words)`` shortest eojeol must fit in the other text and in their bucketed bag
    intersection (``neardup dedup``'s character-LCS gate is not used). Returns (i, j, value,
    stats)."""
    start = time.perf_counter()
    offsets, codes = lcs_units(texts, "auto")
    bags = _bucket_counts(offsets, codes, BUCKETS)
    korean, words, floors = _korean_floors(offsets, codes, threshold)
    n = len(texts)
    # Early texts meet more partners: chunks of equal pair counts.
    bounds = np.unique(np.round(n - n * np.sqrt(1 - np.linspace(0, 1, 129))).astype(np.int64))
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        parts = list(
            pool.map(
                lambda k: _eojeol_chunk(
                    offsets,
                    codes,
                    bags,
                    korean,
                    words,
                    floors,
                    bounds[k],
                    bounds[k + 1],
                    threshold,
                ),
                range(bounds.shape[0] - 1),
            )
        )
    i = np.concatenate([p[0] for p in parts]).astype(np.int64)
    j = np.concatenate([p[1] for p in parts]).astype(np.int64)
    v = np.concatenate([p[2] for p in parts]).astype(np.float64)
    key = np.lexsort((j, i))
    stats = {
        "documents": n,
        "korean": int(korean.sum()),
        "all_pairs": n * (n - 1) // 2,
        "measured": int(sum(p[3] for p in parts)),
        "accepted": int(i.shape[0]),
        "seconds": time.perf_counter() - start,
    }
    return i[key], j[key], v[key], stats


def oracle_pairs(texts: list[str], unit: str, threshold: float = 0.8, workers: int | None = None):
    """Every pair (i < j) with LCS / max(len) ≥ threshold, by exhaustive search with the two
    lossless prefilters. Returns (i, j, resemblance, stats).

    ``unit`` ``"word+syllable"``: a pair is accepted when either unit accepts it (the union of
    the two exhaustive searches), with the larger resemblance; ``"eojeol"``:
    :func:`eojeol_oracle_pairs`."""
    if unit == "eojeol" or (unit == "auto" and eojeol_rows(*lcs_units(texts, "auto")).any()):
        return eojeol_oracle_pairs(texts, threshold, workers)
    if "+" in unit:
        found = [oracle_pairs(texts, u, threshold, workers) for u in unit.split("+")]
        n = len(texts)
        keys = np.concatenate([pair_keys(f[0], f[1], n) for f in found])
        values = np.concatenate([f[2] for f in found])
        order = np.lexsort((-values, keys))
        keys, values = keys[order], values[order]
        first = np.ones(keys.shape[0], dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        stats = {
            "documents": n,
            "all_pairs": n * (n - 1) // 2,
            "accepted": int(first.sum()),
            "seconds": sum(f[3]["seconds"] for f in found),
            "lcs_computed": sum(f[3]["lcs_computed"] for f in found),
            "accepted_per_unit": [f[3]["accepted"] for f in found],
        }
        return keys[first] // n, keys[first] % n, values[first], stats
    start = time.perf_counter()
    offsets, codes = lcs_units(texts, unit)
    lengths = np.diff(offsets)
    order = np.argsort(lengths, kind="stable").astype(np.int64)
    bags = _bucket_counts(offsets, codes, BUCKETS)
    n = len(texts)
    # Chunks of sorted positions; the short documents meet fewer partners, so chunks shrink.
    bounds = np.unique(np.linspace(0, n, 257).astype(np.int64))
    workers = workers or os.cpu_count() or 1
    with ThreadPoolExecutor(workers) as pool:
        parts = list(
            pool.map(
                lambda k: _oracle_chunk(
                    order, lengths, offsets, codes, bags, bounds[k], bounds[k + 1], threshold
                ),
                range(bounds.shape[0] - 1),
            )
        )
    i = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    j = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    v = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    key = np.lexsort((j, i))
    stats = {
        "documents": n,
        "all_pairs": n * (n - 1) // 2,
        "after_length_filter": int(sum(p[3] for p in parts)),
        "lcs_computed": int(sum(p[4] for p in parts)),
        "accepted": int(i.shape[0]),
        "seconds": time.perf_counter() - start,
    }
    return i[key], j[key], v[key], stats


def pair_keys(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    lo = np.minimum(i, j).astype(np.int64)
    hi = np.maximum(i, j).astype(np.int64)
    return lo * n + hi


def per_band(
    truth_keys: np.ndarray, found_keys: np.ndarray, words: np.ndarray, n: int
) -> list[dict]:
    """Precision and recall per band of the longer text's word count (and over all)."""
    truth_keys = np.unique(truth_keys)
    found_keys = np.unique(found_keys)
    hit_found = np.isin(found_keys, truth_keys)
    hit_truth = np.isin(truth_keys, found_keys)

    def bands(keys):
        return band_of(np.maximum(words[keys // n], words[keys % n]))

    bt, bf = bands(truth_keys), bands(found_keys)
    rows = []
    for b, (_, _, name) in list(enumerate(BANDS)) + [(-1, (0, 0, "all"))]:
        st = np.ones_like(bt, dtype=bool) if b < 0 else bt == b
        sf = np.ones_like(bf, dtype=bool) if b < 0 else bf == b
        truth, found = int(st.sum()), int(sf.sum())
        rows.append(
            {
                "band": name,
                "truth": truth,
                "found": found,
                "recall": hit_truth[st].mean() if truth else float("nan"),
                "precision": hit_found[sf].mean() if found else float("nan"),
            }
        )
    return rows


def print_rows(title: str, rows: list[dict], extra: str = "") -> None:
    print(f"\n{title}{extra}")
    print("| band (words) | oracle pairs | found | precision | recall |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['band']} | {r['truth']:,} | {r['found']:,} | {r['precision']:.3f} "
            f"| {r['recall']:.3f} |"
        )


def oracle_path(lang: str, unit: str, threshold: float, out: Path = OUT) -> Path:
    return out / f"{lang}_{unit}_{threshold:g}.tsv"


def read_oracle(path: Path, index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    a, b = [], []
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            x, y = line.split("\t", 2)[:2]
            a.append(index[x])
            b.append(index[y])
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)


def cmd_build(args) -> None:
    ids, texts = load(args.lang)
    args.out.mkdir(parents=True, exist_ok=True)
    docs = args.out / f"{args.lang}_docs.jsonl"
    with open(docs, "w", encoding="utf-8") as fh:
        for k, (i, t) in enumerate(zip(ids, texts)):
            fh.write(json.dumps({"id": i, "text": t, "ts": k}, ensure_ascii=False) + "\n")
    words = word_counts(texts)
    for unit in args.unit.split(","):
        i, j, v, stats = oracle_pairs(texts, unit, args.threshold, args.workers)
        path = oracle_path(args.lang, unit, args.threshold, args.out)
        band = band_of(np.maximum(words[i], words[j]))
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("id_a\tid_b\tresemblance\tband\n")
            for x, y, r, bb in zip(i.tolist(), j.tolist(), v.tolist(), band.tolist()):
                fh.write(f"{ids[x]}\t{ids[y]}\t{r:.4f}\t{BANDS[bb][2]}\n")
        counts = np.bincount(band, minlength=4)
        print(f"{args.lang} {unit} T={args.threshold}: {stats}")
        print(
            "  accepted per band: "
            + ", ".join(f"{BANDS[k][2]}: {int(counts[k]):,}" for k in range(4))
        )
        print(
            f"  {stats['seconds']:.1f} s on {args.workers or os.cpu_count()} threads "
            f"(prefilters included) → {path}"
        )
    print(f"docs → {docs}")


def cmd_evaluate(args) -> None:
    ids, texts = load(args.lang)
    index = {x: k for k, x in enumerate(ids)}
    n = len(ids)
    words = word_counts(texts)
    ta, tb = read_oracle(oracle_path(args.lang, args.unit, args.threshold, args.out), index)
    fa, fb = [], []
    with open(args.pairs, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if parts[0] not in index or parts[1] not in index:
                continue  # a header, or a document outside the corpus
            fa.append(index[parts[0]])
            fb.append(index[parts[1]])
    rows = per_band(pair_keys(ta, tb, n), pair_keys(np.array(fa), np.array(fb), n), words, n)
    print_rows(
        f"{args.pairs} against the {args.lang} oracle ({args.unit}, T={args.threshold})", rows
    )


def _parse_config(text: str) -> dict:
    """``SHINGLE/PERM/BANDSxROWS[/MAXWORDS]``, several joined by ``+`` (union of candidates);
    MAXWORDS restricts that LSH to documents of at most that many words."""
    stages = []
    for part in text.split("+"):
        fields = part.split("/")
        bands, rows = map(int, fields[2].split("x"))
        stages.append(
            {
                "shingle": fields[0],
                "num_perm": int(fields[1]),
                "bands": bands,
                "rows": rows,
                "max_words": int(fields[3]) if len(fields) > 3 else None,
            }
        )
    return {"name": text, "stages": stages}


DEFAULT_CONFIGS = (
    "char:5/128/20x6",  # today's defaults' banding (tuned for Jaccard 0.7)
    "char:5/128/32x4",
    "char:4/128/32x4",
    "char:4/128/42x3",
    "char:3/128/42x3",
    "char:4/128/32x4+char:3/128/42x3/30",  # recommended: + a char:3 LSH over ≤ 30-word texts
)


def cmd_sweep(args) -> None:
    from neardup.api import fingerprint
    from neardup.candidates.bands import candidate_pairs

    ids, texts = load(args.lang)
    n = len(ids)
    index = {x: k for k, x in enumerate(ids)}
    words = word_counts(texts)
    ta, tb = read_oracle(oracle_path(args.lang, args.unit, args.threshold, args.out), index)
    truth = pair_keys(ta, tb, n)
    units = [(u, *lcs_units(texts, u)) for u in args.unit.split("+")]
    signatures = {}
    for config in map(_parse_config, args.configs or DEFAULT_CONFIGS):
        t0 = time.perf_counter()
        sign_s = 0.0
        keys = []
        for stage in config["stages"]:
            sig_key = (stage["shingle"], stage["num_perm"])
            if sig_key not in signatures:
                s0 = time.perf_counter()
                signatures[sig_key] = fingerprint(
                    texts,
                    method="minhash",
                    shingle=stage["shingle"],
                    num_perm=stage["num_perm"],
                    workers=args.workers,
                )
                signatures[sig_key + ("s",)] = time.perf_counter() - s0
            sign_s += signatures[sig_key + ("s",)]
            sig = signatures[sig_key]
            subset = (
                np.arange(n)
                if stage["max_words"] is None
                else np.flatnonzero(words <= stage["max_words"])
            )
            a, b = candidate_pairs(np.ascontiguousarray(sig[subset]), stage["bands"], stage["rows"])
            keys.append(pair_keys(subset[a], subset[b], n))
        cand = np.unique(np.concatenate(keys))
        cand_s = time.perf_counter() - t0
        a, b = cand // n, cand % n
        for _, offsets, codes in units:  # compile / load the kernels outside the timing
            _parallel_lcs(offsets, codes, a[:1], b[:1], 1, args.threshold)
        t1 = time.perf_counter()
        value = np.zeros(a.shape[0])
        for _, offsets, codes in units:  # word+syllable: accepted by either unit
            value = np.maximum(
                value, _parallel_lcs(offsets, codes, a, b, args.workers, args.threshold)
            )
        lcs_s = time.perf_counter() - t1
        found = cand[value >= args.threshold]
        cand_rows = per_band(truth, cand, words, n)
        rows = per_band(truth, found, words, n)
        print_rows(
            f"{args.lang} {config['name']} + lcs:{args.unit}:{args.threshold}",
            rows,
            f"  (candidates {cand.shape[0]:,}: candidate recall per band "
            + ", ".join(f"{r['band']} {r['recall']:.3f}" for r in cand_rows)
            + f"; signatures {sign_s:.1f} s (cached across configs), banding {cand_s:.1f} s,"
            f" LCS {lcs_s:.2f} s = {cand.shape[0] / max(lcs_s, 1e-9):,.0f} pairs/s)",
        )


def _parallel_lcs(offsets, codes, a, b, workers, threshold=None):
    """:func:`neardup.lcs.lcs_pairs` over chunks of pairs in threads (the kernel is nogil)."""
    workers = workers or os.cpu_count() or 1
    chunks = np.array_split(np.arange(a.shape[0]), max(1, workers * 8))
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda c: lcs_pairs(offsets, codes, a[c], b[c], threshold), chunks))
    return np.concatenate(parts) if parts else np.zeros(0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("build", "evaluate", "sweep"):
        p = sub.add_parser(name)
        p.add_argument("--lang", choices=sorted(CORPORA), required=True)
        p.add_argument(
            "--unit",
            default="auto",
            help="auto, syllable, word or word+syllable (accepted by either); "
            "build: a comma-separated list",
        )
        p.add_argument("--threshold", type=float, default=0.8)
        p.add_argument("--workers", type=int, default=None)
        p.add_argument("--out", type=Path, default=OUT, help="the oracle's folder")
        if name == "evaluate":
            p.add_argument("pairs", help="PAIRS TSV: id_a, id_b, ...")
        if name == "sweep":
            p.add_argument(
                "--configs", nargs="*", help="SHINGLE/PERM/BANDSxROWS[/MAXWORDS], '+' for a union"
            )
    args = ap.parse_args(argv)
    {"build": cmd_build, "evaluate": cmd_evaluate, "sweep": cmd_sweep}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
