"""Quality of neardup against peer libraries: precision, recall and F1 on labelled pairs.

Datasets (``--data-dir``, default ``shared/data``; every one run with every tool, same run):

* ``synth``: neardup's own generator (``neardup generate``) over real texts: 1,000 English and 500
  Korean Debian package descriptions of at least 30 words (``--per-base 3``, seed 1), written to
  ``benchmarks/.data/synth/``. Light edits are positives; heavy edits and the shared-template
  pairs are negatives; per-edit-type recall (and false-positive rate) is reported.
* ``clough_stevenson``: answers vs. their source; positives ``cut`` and ``light``.
* ``pan13_passages``: PAN13 text-alignment plagiarism cases cut out at their offsets; verbatim
  copies (1) against random word edits, translation chains and summaries (0), per sub-corpus.
* ``pan13_documents``: the whole PAN13 documents, labelled for *containment* (a suspicious
  document holding a plagiarised passage of the source = 1, topically related pairs = 0); by
  ``NEAR_DUPLICATE.md`` none of them is a near-duplicate, so it shows what each tool merges,
  and a sample of each tool's (unlabelled) pairs is checked against rule 2.
* ``korean_question_pair``: same question (1) or not (0).
* ``mrpc``: paraphrase (1) or not (0); negatives chosen for lexical overlap.
* ``korsts``: graded similarity 0–5 mapped to labels: score ≥ 4.5 → 1, score ≤ 2 → 0, others
  left out (the dataset's README gives no mapping; this one is the benchmark's choice).
* ``debian_descriptions_en`` and ``debian_descriptions_ko`` (no labels): predicted pairs and groups
  per tool, and the share of a random sample of each tool's pairs that meet rule 2 of
  ``NEAR_DUPLICATE.md`` (at least 80 % of the longer text's words kept in order,
  :func:`neardup.quality.synth.words_kept`). For the Korean set also word 3-grams against
  char 5-grams on the pool of every tool's pairs: rule 2 by words and with spaces and line
  breaks ignored, and examples of pairs the shingling decides.
* ``synth`` is also broken down for its Korean half alone (hard wrapping inside words, spacing).

Tools, each run in its own subprocess (peers in ``benchmarks/.peers``, see ``setup_peers.sh``):

* neardup defaults (``neardup dedup``: MinHash-128 over ``char:4``, LSH 32 × 4, candidates
  verified by the LCS resemblance ≥ 0.8 by words or syllables), the earlier defaults (``char:5``,
  verified at exact Jaccard ≥ 0.7), neardup SimHash ``word:3`` k = 3, neardup SimHash ``char:5`` k = 8, neardup
  MinHash ``word:3`` at 0.7 (the defaults with word shingles) and at 0.8 (the peers' settings).
  Groups = neardup's connected components.
* datasketch ``MinHashLSH`` and rensa ``RMinHashLSH`` (threshold 0.8, 128 permutations; rensa 16
  bands of 8 rows), 1e0ng ``SimhashIndex`` (k = 3, ``Simhash(shingles)``), simhash-pybind
  ``find_all`` (k = 3, 5 blocks, fingerprints ``compute`` of the XXH64 of each shingle, as in
  ``bench_fingerprint.py``). Peers get the word 3-grams of neardup's normalised text
  (``neardup.text.normalize``: NFKC, case folding, punctuation as separators), so they see the
  same features; a pair is predicted when the library returns it, and the pairs are closed
  transitively (``evaluate(..., closure=True)``), as neardup's groups are.

Precision, recall and F1 are computed by ``neardup.quality`` over the labelled pairs only.

Usage:
    python benchmarks/bench_quality.py                 # about 4 minutes on 2 cores
    python benchmarks/bench_quality.py --datasets synth,mrpc --skip-peers
    python benchmarks/bench_quality.py --rule2-sweeps   # short texts, about 3 minutes
Writes ``benchmarks/results/quality.md`` (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_fingerprint import PEER_PYTHON, PYBIND_DIR, cpu_model, versions
from corpus import DEFAULT_DATA

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = HERE / "results" / "quality.md"
SYNTH_DIR = HERE / ".data" / "synth"
NEARDUP_CLI = Path(sys.executable).with_name("neardup")
DATASETS = (
    "synth",
    "clough_stevenson",
    "pan13_passages",
    "pan13_documents",
    "korean_question_pair",
    "mrpc",
    "korsts",
    "debian_descriptions_en",
    "debian_descriptions_ko",
)
PAN13_DOCUMENTS = Path("pan13_text_alignment")
PAN13_PASSAGES = PAN13_DOCUMENTS / "passages"
CATEGORY_TABLES = (
    "synth",
    "clough_stevenson",
    "pan13_passages",
    "pan13_documents",
    "korean_question_pair",
)
KOREAN_EXAMPLES = 3
# --rule2-sweeps: short texts, MinHash sweeps against the labelled pairs relabelled by rule 2.
RULE2_SWEEP_SETS = ("korean_question_pair", "korsts", "mrpc")
RULE2_SWEEP_SHINGLES = ("char:3", "char:4", "char:5", "word:1")
RULE2_THRESHOLDS = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))
RULE2_SWEEP_DIR = REPO / "docs" / "sweeps"
NUM_PERM = 128
PEER_THRESHOLD = 0.8
RENSA_BANDS = 16
PEER_K = 3
PYBIND_BLOCKS = 5
KORSTS_POSITIVE = 4.5
KORSTS_NEGATIVE = 2.0
AUDIT_SAMPLE = 300
SYNTH_BASES = (("en", "debian_descriptions_en", 1000), ("ko", "debian_descriptions_ko", 500))
SYNTH_MIN_WORDS = 30
SYNTH_PER_BASE = 3

# name → (python, settings); neardup settings are keyword arguments of neardup.settings.Settings.
TOOLS = {
    "neardup defaults (MinHash char:4, LCS 0.8)": ("neardup", {}),
    "neardup MinHash char:5, Jaccard 0.7 (earlier defaults)": (
        "neardup",
        {"method": "minhash", "shingle": "char:5", "threshold": 0.7, "verify": "jaccard"},
    ),
    "neardup SimHash word:3, k=3": (
        "neardup",
        {"method": "simhash", "shingle": "word:3", "hamming_k": 3},
    ),
    "neardup SimHash char:5, k=8": (
        "neardup",
        {"method": "simhash", "shingle": "char:5", "hamming_k": 8},
    ),
    "neardup MinHash word:3, 0.7": (
        "neardup",
        {"method": "minhash", "shingle": "word:3", "threshold": 0.7, "verify": "jaccard"},
    ),
    "neardup MinHash word:3, 0.8": (
        "neardup",
        {"method": "minhash", "shingle": "word:3", "threshold": 0.8, "verify": "jaccard"},
    ),
    "datasketch MinHashLSH": ("datasketch", {}),
    "rensa RMinHashLSH": ("rensa", {}),
    "simhash (1e0ng) SimhashIndex": ("simhash-1e0ng", {}),
    "simhash-pybind find_all": ("simhash-pybind", {}),
}
DEFAULT_TOOL = "neardup defaults (MinHash char:4, LCS 0.8)"
WORD3_SAME_THRESHOLD = "neardup MinHash word:3, 0.7"
PYBIND_PLUS = "simhash-pybind find_all + identical fps"
BASELINE = "baseline: identical normalised text"


# ---------------------------------------------------------------------------------------------
# Worker side: one tool on one document file; writes predicted pairs (document indices).


def read_docs(path: str) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            ids.append(str(d["id"]))
            texts.append(d["text"])
    return ids, texts


def normalised_word3(texts: list[str]) -> list[list[str]]:
    """Word 3-gram shingles of neardup's normalised text, as strings (the features neardup
    hashes for ``word:3``; a text of 1–2 words is one shingle, an empty one has none)."""
    from neardup.text import normalize_many

    out = []
    for canon in normalize_many(texts):
        words = canon.split()
        if len(words) < 3:
            out.append([" ".join(words)] if words else [])
        else:
            out.append([" ".join(words[i : i + 3]) for i in range(len(words) - 2)])
    return out


def _pairs(lists, n: int) -> tuple[np.ndarray, np.ndarray]:
    keys = set()
    for i, found in enumerate(lists):
        for j in found:
            j = int(j)
            if j != i:
                keys.add(i * n + j if i < j else j * n + i)
    k = np.fromiter(keys, dtype=np.int64, count=len(keys))
    k.sort()
    return k // n, k % n


def run_tool(kind: str, settings: dict, texts: list[str]) -> dict[str, np.ndarray]:
    n = len(texts)
    if kind == "neardup":
        from neardup.engines.local import signatures_parallel
        from neardup.pipeline import find_groups
        from neardup.settings import DEFAULT_METHOD, DEFAULT_SHINGLE, DEFAULT_THRESHOLD, Settings

        options = {
            "method": DEFAULT_METHOD,
            "shingle": DEFAULT_SHINGLE,
            "threshold": DEFAULT_THRESHOLD,
            **settings,
            "pairs": "all",
        }
        s = Settings(**options)
        # What neardup.dedup runs; pairs="all" also lists every near-duplicate pair (the groups
        # do not depend on it).
        sig = signatures_parallel(texts, s, 1, keep_sets=False)
        g = find_groups(sig, np.zeros(n, dtype=np.int64), s, texts)
        return {"a": g.pair_a, "b": g.pair_b, "original": g.original}
    shingles = normalised_word3(texts)
    if kind == "datasketch":
        from datasketch import MinHash, MinHashLSH

        permutations = MinHash(num_perm=NUM_PERM, seed=1).permutations
        sigs = []
        for sh in shingles:
            m = MinHash(num_perm=NUM_PERM, seed=1, permutations=permutations, scheme="affine32")
            m.update_batch([x.encode("utf-8") for x in sh])
            sigs.append(m)
        lsh = MinHashLSH(threshold=PEER_THRESHOLD, num_perm=NUM_PERM)
        with lsh.insertion_session() as session:
            for i, m in enumerate(sigs):
                session.insert(i, m)
        a, b = _pairs((lsh.query(m) for m in sigs), n)
        return {"a": a, "b": b}
    if kind == "rensa":
        from rensa import RMinHash, RMinHashLSH

        sigs = []
        for sh in shingles:
            m = RMinHash(num_perm=NUM_PERM, seed=1)
            m.update(sh)
            sigs.append(m)
        lsh = RMinHashLSH(threshold=PEER_THRESHOLD, num_perm=NUM_PERM, num_bands=RENSA_BANDS)
        lsh.insert_many(sigs, 0)
        a, b = _pairs(lsh.query_all(sigs), n)
        return {"a": a, "b": b}
    if kind == "simhash-1e0ng":
        import logging

        from simhash import Simhash, SimhashIndex

        logging.getLogger("simhash").setLevel(logging.ERROR)  # "big bucket" warnings
        hashes = [Simhash(sh) for sh in shingles]
        index = SimhashIndex([(str(i), h) for i, h in enumerate(hashes)], k=PEER_K)
        a, b = _pairs(([int(x) for x in index.get_near_dups(h)] for h in hashes), n)
        return {"a": a, "b": b}
    if kind == "simhash-pybind":
        sys.path.insert(0, str(PYBIND_DIR))
        import simhash
        import xxhash

        if not hasattr(simhash, "find_all"):
            raise RuntimeError(f"simhash-pybind not found in {PYBIND_DIR}; run setup_peers.sh")
        xxh = xxhash.xxh64_intdigest
        fps = [simhash.compute([xxh(x.encode("utf-8")) for x in sh]) for sh in shingles]
        found = simhash.find_all(set(fps), PYBIND_BLOCKS, PEER_K)
        holders: dict[int, list[int]] = {}
        for i, v in enumerate(fps):
            holders.setdefault(v, []).append(i)
        a, b = [], []
        for u, v in found:
            for i in holders[u]:
                for j in holders[v]:
                    a.append(min(i, j))
                    b.append(max(i, j))
        # What the library cannot report: documents with the same fingerprint.
        ia, ib = [], []
        for members in holders.values():
            for j in members[1:]:
                ia.append(members[0])
                ib.append(j)
        return {
            "a": np.array(a, dtype=np.int64),
            "b": np.array(b, dtype=np.int64),
            "ident_a": np.array(ia, dtype=np.int64),
            "ident_b": np.array(ib, dtype=np.int64),
        }
    raise ValueError(f"unknown tool {kind!r}")


def worker(spec: dict) -> dict:
    _, texts = read_docs(spec["docs"])
    run_tool(spec["kind"], spec["settings"], texts[:50])  # imports, cached kernels
    t0 = time.perf_counter()
    arrays = run_tool(spec["kind"], spec["settings"], texts)
    seconds = time.perf_counter() - t0
    np.savez(spec["out"], **arrays)
    return {"seconds": seconds, "n": len(texts), "pairs": int(arrays["a"].shape[0])}


# ---------------------------------------------------------------------------------------------
# Orchestrator side.


def run_worker(python: Path | str, spec: dict, label: str) -> dict | None:
    print(f"    {label} ...", file=sys.stderr, flush=True)
    cmd = [str(python), str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        print(f"    FAILED {label}:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make_synth(data_dir: Path, out_dir: Path) -> tuple[Path, Path]:
    """The synthetic labelled corpus: ``neardup generate`` over English and Korean bases, the
    two outputs concatenated (Korean IDs get a ``ko/`` prefix: Debian's description IDs hash the
    English text, so a package has the same ID in both languages)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    docs, pairs = out_dir / "docs.jsonl", out_dir / "pairs.tsv"
    doc_lines, pair_lines = [], []
    for lang, name, bases in SYNTH_BASES:
        source = out_dir / f"{lang}_bases.jsonl"
        with (
            open(data_dir / name / "docs.jsonl", encoding="utf-8") as fh,
            open(source, "w", encoding="utf-8") as out,
        ):
            for line in fh:
                d = json.loads(line)
                out.write(
                    json.dumps({"id": f"{lang}/{d['id']}", "text": d["text"]}, ensure_ascii=False)
                    + "\n"
                )
        part_docs, part_pairs = out_dir / f"{lang}_docs.jsonl", out_dir / f"{lang}_pairs.tsv"
        cmd = [
            str(NEARDUP_CLI),
            "generate",
            str(source),
            "-o",
            str(part_docs),
            "--pairs-out",
            str(part_pairs),
            "--max-bases",
            str(bases),
            "--min-words",
            str(SYNTH_MIN_WORDS),
            "--per-base",
            str(SYNTH_PER_BASE),
            "--seed",
            "1",
            "--language",
            lang,
            "--workers",
            "1",
            "-q",
        ]
        print(f"    {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, cwd=REPO)
        doc_lines += part_docs.read_text(encoding="utf-8").splitlines()
        lines = part_pairs.read_text(encoding="utf-8").splitlines()
        pair_lines += lines if not pair_lines else lines[1:]
        source.unlink()
    docs.write_text("\n".join(doc_lines) + "\n", encoding="utf-8")
    pairs.write_text("\n".join(pair_lines) + "\n", encoding="utf-8")
    return docs, pairs


def load_truth(name: str, data_dir: Path, synth_pairs: Path | None):
    """Labelled pairs of one dataset (None for the unlabelled audit) and a note on them."""
    import pandas as pd

    from neardup.quality import PairTruth, read_table, read_truth
    from neardup.text import normalize

    if name == "synth":
        return read_truth(synth_pairs), "light edits = 1; heavy edits, shared template = 0"
    folder = data_dir / name
    if name == "clough_stevenson":
        return read_truth(folder / "pairs.tsv", "cut,light"), "cut, light = 1; heavy, non = 0"
    if name == "mrpc":
        return read_truth(folder / "pairs.tsv"), "paraphrase = 1, not = 0"
    if name == "pan13_passages":
        frame = read_table(data_dir / PAN13_PASSAGES / "pairs.tsv")
        kind = frame["label"].to_numpy()
        label = np.where(kind == "no-obfuscation", 1, 0)
        return (
            PairTruth.from_arrays(frame["id_a"], frame["id_b"], label, category=kind),
            "verbatim copy (no-obfuscation) = 1; random edits, translation, summary = 0",
        )
    if name == "pan13_documents":
        frame = read_table(data_dir / PAN13_DOCUMENTS / "pairs.tsv")
        kind = frame["label"].to_numpy()
        label = np.where(kind == "no-plagiarism", 0, 1)
        return (
            PairTruth.from_arrays(frame["id_a"], frame["id_b"], label, category=kind),
            (
                "CONTAINMENT: a suspicious document with a plagiarised passage of the source "
                "(any obfuscation) = 1; topically related pair without plagiarism = 0"
            ),
        )
    if name == "korean_question_pair":
        frame = read_table(folder / "pairs.tsv")
        docs = dict(zip(*read_docs(str(folder / "docs.jsonl"))))
        same = np.array(
            [normalize(docs[a]) == normalize(docs[b]) for a, b in zip(frame["id_a"], frame["id_b"])]
        )
        label = frame["label"].to_numpy()
        category = np.where(
            label == "1", np.where(same, "1: same normalised text", "1: different text"), "0"
        )
        return (
            PairTruth.from_arrays(frame["id_a"], frame["id_b"], label, category=category),
            "same question = 1, not = 0",
        )
    if name == "korsts":
        frame = pd.read_csv(folder / "pairs.tsv", sep="\t", dtype={"id_a": str, "id_b": str})
        score = frame["label"].astype(float)
        keep = (score >= KORSTS_POSITIVE) | (score <= KORSTS_NEGATIVE)
        frame = frame[keep]
        label = np.where(frame["label"].astype(float) >= KORSTS_POSITIVE, 1, 0)
        category = np.where(label == 1, f"score ≥ {KORSTS_POSITIVE}", f"score ≤ {KORSTS_NEGATIVE}")
        return (
            PairTruth.from_arrays(frame["id_a"], frame["id_b"], label, category=category),
            (
                f"score ≥ {KORSTS_POSITIVE} = 1, score ≤ {KORSTS_NEGATIVE} = 0, "
                f"{int((~keep).sum()):,} pairs in between left out"
            ),
        )
    return None, "no labels (audit)"


def identical_text_pairs(texts: list[str]) -> dict[str, np.ndarray]:
    """The baseline: documents whose normalised texts are equal, linked to the first of them."""
    from neardup.text import normalize_many

    first: dict[str, int] = {}
    a, b = [], []
    for i, canon in enumerate(normalize_many(texts)):
        j = first.setdefault(canon, i)
        if j != i:
            a.append(j)
            b.append(i)
    return {"a": np.array(a, dtype=np.int64), "b": np.array(b, dtype=np.int64)}


def rule2_truth(truth, ids: list[str], texts: list[str]):
    """The same labelled pairs relabelled by rule 2 of ``NEAR_DUPLICATE.md``: 1 when at least
    80 % of the longer text's words are kept in order in the other (``words_kept``)."""
    from neardup.quality import PairTruth
    from neardup.quality.synth import words_kept
    from neardup.text import normalize

    text_of = dict(zip(ids, texts))
    words: dict[str, int] = {}

    def count(i: str) -> int:
        if i not in words:
            words[i] = len(normalize(text_of[i]).split())
        return words[i]

    def kept_of(a: str, b: str) -> float:
        # The LCS is at most the shorter text's words: below 80 % of the longer one's, rule 2
        # cannot hold, and the O(n·m) LCS of long documents (PAN13: up to 92k words) is skipped.
        shorter, longer = sorted((count(a), count(b)))
        if longer and shorter < 0.8 * longer:
            return shorter / longer
        return words_kept(text_of[a], text_of[b])

    kept = np.array([kept_of(a, b) for a, b in zip(truth.id_a.tolist(), truth.id_b.tolist())])
    rule = kept >= 0.8
    counts = {
        "pos_rule": int(np.count_nonzero(rule & truth.positive)),
        "neg_rule": int(np.count_nonzero(rule & ~truth.positive)),
    }
    return PairTruth.from_arrays(truth.id_a, truth.id_b, rule.astype(np.int64)), counts


def score(tool: str, arrays, ids: np.ndarray, truth, rule_truth=None) -> dict:
    from neardup.quality import Prediction, evaluate

    def run(t):
        if "original" in arrays:
            return evaluate(Prediction.from_groups(ids, ids[arrays["original"]]), t)
        return evaluate(Prediction.from_pairs(ids[arrays["a"]], ids[arrays["b"]]), t, closure=True)

    e = run(truth)
    out = {
        "precision": e.precision,
        "recall": e.recall,
        "f1": e.f1,
        "tp": e.confusion.tp,
        "fp": e.confusion.fp,
        "fn": e.confusion.fn,
        "categories": [(c.category, c.pairs, c.positive, c.predicted) for c in e.categories],
    }
    if rule_truth is not None:
        out["f1_rule"] = run(rule_truth).f1
    return out


AUDIT_MAX_WORDS = 20_000


def kept_bounded(a: str, b: str) -> float:
    """``words_kept``, skipping the O(n·m) LCS where it cannot matter or cannot be afforded: the
    shorter text's share of the longer one's words when that is below 0.8 (rule 2 cannot hold),
    NaN when both texts exceed ``AUDIT_MAX_WORDS`` words (left out of the sample)."""
    from neardup.quality.synth import words_kept
    from neardup.text import normalize

    shorter, longer = sorted((len(normalize(a).split()), len(normalize(b).split())))
    if longer and shorter < 0.8 * longer:
        return shorter / longer
    if shorter > AUDIT_MAX_WORDS:
        return math.nan
    return words_kept(a, b)


def audit(arrays, texts: list[str], seed: int = 1) -> dict:
    """Pairs, groups and the share of a sample of pairs meeting the 80 % words-kept rule."""
    from neardup.groups import connected_components

    n = len(texts)
    a, b = arrays["a"], arrays["b"]
    labels = (
        np.asarray(arrays["original"]) if "original" in arrays else connected_components(n, a, b)
    )
    sizes = np.bincount(labels, minlength=n)
    groups = int(np.count_nonzero(sizes > 1))
    rng = np.random.default_rng(seed)
    pick = rng.choice(a.shape[0], size=min(AUDIT_SAMPLE, a.shape[0]), replace=False)
    kept = np.array([kept_bounded(texts[a[i]], texts[b[i]]) for i in pick.tolist()])
    kept = kept[~np.isnan(kept)]
    return {
        "pairs": int(a.shape[0]),
        "groups": groups,
        "in_groups": int(sizes[sizes > 1].sum()),
        "sample": int(kept.size),
        "rule_ok": float(np.mean(kept >= 0.8)) if kept.size else math.nan,
        "median_kept": float(np.median(kept)) if kept.size else math.nan,
    }


def letters_kept(a: str, b: str) -> float:
    """Rule 2 with rule 1 applied to spaces and line breaks: the longest common subsequence of
    the two normalised texts' characters with every separator removed, over the longer one's
    character count (1.0 for two texts without letters). A line break inside a word, a missing
    or an extra space change nothing; a changed word costs its letters, not a whole word, so
    this is a little more lenient than :func:`neardup.quality.synth.words_kept` on substitutions."""
    from neardup.similarity import lcs_length_ids
    from neardup.text import normalize

    x, y = (
        np.frombuffer(normalize(t).replace(" ", "").encode("utf-32-le"), dtype=np.uint32).astype(
            np.int64
        )
        for t in (a, b)
    )
    longest = max(x.shape[0], y.shape[0])
    return 1.0 if longest == 0 else lcs_length_ids(x, y) / longest


def snippet(a: str, b: str, width: int = 22) -> tuple[str, str]:
    """Where two texts differ, for the report: the first difference that is only spaces or line
    breaks (else the first difference), with ``width`` characters around it, ⏎ for a line
    break."""
    import difflib

    ops = [
        op
        for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not ops:
        return "", ""
    blank = [op for op in ops if not (a[op[1] : op[2]] + b[op[3] : op[4]]).strip()]
    _, i1, i2, j1, j2 = (blank or ops)[0]

    def cut(t: str, lo: int, hi: int) -> str:
        s = t[max(0, lo - width) : hi + width]
        s = s.replace("\n", "⏎").replace("|", "\\|")
        return ("…" if lo > width else "") + s + ("…" if hi + width < len(t) else "")

    return cut(a, i1, i2), cut(b, j1, j2)


def korean_pool(tool_pairs: dict, texts: list[str], ids: list[str]) -> dict:
    """word:3 against char:5 on real Korean text: every pair any tool reports (the pool), each
    checked for rule 2 by words (``words_kept``) and with spacing ignored (``letters_kept``);
    *spacing variants* are pairs whose normalised texts differ only in spaces and line breaks
    (identical letters), near-duplicates by rule 1 whatever else. Per tool: what it finds of
    them. Recall here is relative to the pool (pairs no tool reports are not counted)."""
    from neardup.quality.synth import words_kept
    from neardup.text import normalize_many

    canon = normalize_many(texts)
    letters = [c.replace(" ", "") for c in canon]
    found = {
        t: {(min(i, j), max(i, j)) for i, j in zip(a.tolist(), b.tolist()) if i != j}
        for t, (a, b) in tool_pairs.items()
    }
    pool = set().union(*found.values()) if found else set()
    info = {}
    for i, j in pool:
        if canon[i] == canon[j]:
            continue  # identical after normalisation: every tool finds them (or none can)
        same = letters[i] == letters[j]
        info[(i, j)] = {
            "spacing": same,
            "words": words_kept(texts[i], texts[j]),
            "letters": 1.0 if same else letters_kept(texts[i], texts[j]),
        }
    spacing = {p for p, v in info.items() if v["spacing"]}
    rule_letters = {p for p, v in info.items() if v["letters"] >= 0.8}
    rows = {}
    for t, pairs in found.items():
        diff = [p for p in pairs if p in info]
        rows[t] = {
            "pairs": len(pairs),
            "different": len(diff),
            "spacing": len(spacing & pairs),
            "words_ok": (
                float(np.mean([info[p]["words"] >= 0.8 for p in diff])) if diff else math.nan
            ),
            "letters_ok": (
                float(np.mean([info[p]["letters"] >= 0.8 for p in diff])) if diff else math.nan
            ),
            "recall": len(rule_letters & pairs) / len(rule_letters) if rule_letters else math.nan,
        }
    examples = []
    if DEFAULT_TOOL in found and WORD3_SAME_THRESHOLD in found:
        missed = sorted(p for p in found[DEFAULT_TOOL] - found[WORD3_SAME_THRESHOLD] if p in info)
        # the cases word 3-grams break on: rule 2 holds once spacing is ignored, not by words
        missed.sort(
            key=lambda p: (
                not info[p]["spacing"],
                info[p]["words"] >= 0.8 or info[p]["letters"] < 0.8,
            )
        )
        seen_text = set()
        for i, j in missed:
            sa, sb = snippet(texts[i], texts[j])
            if sa in seen_text or sb in seen_text:
                continue
            seen_text.update((sa, sb))
            examples.append(
                {
                    "a": ids[i],
                    "b": ids[j],
                    "words": info[(i, j)]["words"],
                    "letters": info[(i, j)]["letters"],
                    "snip_a": sa,
                    "snip_b": sb,
                }
            )
            if len(examples) == KOREAN_EXAMPLES:
                break
        only_default = [p for p in found[DEFAULT_TOOL] - found[WORD3_SAME_THRESHOLD] if p in info]
        only_word = [p for p in found[WORD3_SAME_THRESHOLD] - found[DEFAULT_TOOL] if p in info]
    else:
        only_default, only_word = [], []
    return {
        "pool": len(info),
        "spacing": len(spacing),
        "rule_letters": len(rule_letters),
        "rule_words": sum(v["words"] >= 0.8 for v in info.values()),
        "rows": rows,
        "examples": examples,
        "only_default": len(only_default),
        "only_default_ok": sum(info[p]["letters"] >= 0.8 for p in only_default),
        "only_default_words_ok": sum(info[p]["words"] >= 0.8 for p in only_default),
        "only_word": len(only_word),
        "only_word_ok": sum(info[p]["letters"] >= 0.8 for p in only_word),
    }


def secs(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.1f}"


def f3(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


ABOUT = {
    "synth": "generated by `neardup generate` with the definition of `NEAR_DUPLICATE.md` (light "
    "edits keep ≥ 80 % of the words in order; heavy ones ≤ 75 %; template pairs share "
    "one long paragraph): the only set here whose labels are near-duplication as users "
    "mean it. It is also neardup's own generator, and the SimHash char:5 k = 8 setting "
    "was read off a sweep on it, so it favours neardup's tuned rows.",
    "clough_stevenson": "plagiarism instructions, not near-duplication: a `cut` or `light` answer "
    "(200–300 words) copies parts of a longer Wikipedia source, so most "
    "labelled positives are *containment* (rule 3 of `NEAR_DUPLICATE.md`: "
    "one text containing the other plus much new text is not a "
    "near-duplicate); the mean Jaccard of positives is 0.25–0.41.",
    "korean_question_pair": "same *question* (paraphrase) labels on very short texts; 946 of the "
    "positives are identical strings and most other positives share no "
    "word 3-gram at all: only the identical ones are near-duplicates.",
    "mrpc": "sentence *paraphrase* labels; negatives were chosen for lexical overlap. A "
    "paraphrase in other words is not a near-duplicate (rule 3), so recall here is not a "
    "goal; precision shows how often lexically close non-paraphrases are merged.",
    "pan13_passages": "plagiarism cases cut out of PAN13 text-alignment documents at their "
    "offsets: the passage pairs of the verbatim sub-corpus are copies (word "
    "3-gram Jaccard 1.0); random word edits (0.17), machine-translation chains "
    "(0.17) and human summaries (0.05) are rewritten texts, not near-duplicates "
    "(rule 3), so here they are the negatives.",
    "pan13_documents": "CONTAINMENT, not near-duplication: the whole PAN13 documents; a "
    "labelled positive is a suspicious document into which a passage of the "
    "source was copied (verbatim or obfuscated), inside an otherwise "
    "unrelated text, so the copied part is a few per cent of the document "
    "(median 3 %; word 3-gram Jaccard of the verbatim pairs 0.04). By rule 3 "
    "(one text containing part of another plus much new text) none of these "
    "is a near-duplicate: a near-duplicate detector should find none, and the "
    "labels' recall is not a goal. The table shows that no tool merges them "
    "(or what it merges).",
    "korsts": "graded *semantic* similarity of machine-translated sentence pairs; even score-5 "
    "pairs are mostly rewordings (mean char-5 Jaccard 0.30), so recall is not a goal.",
}


def short_name(tool: str) -> str:
    return (
        tool.replace("neardup ", "nd ")
        .replace(" (MinHash char:4, LCS 0.8)", "")
        .replace(", Jaccard 0.7 (earlier defaults)", " J0.7")
        .replace(" SimhashIndex", "")
        .replace(" find_all", "")
        .replace("RMinHashLSH", "")
        .replace("MinHashLSH", "")
        .replace(": identical normalised text", "")
        .strip()
    )


def category_table(rows: dict, title: str) -> list[str]:
    """Per category, the share of the labelled pairs each tool predicts near-duplicate."""
    cats = list(rows[next(iter(rows))]["categories"])
    if not cats:
        return []
    L = [
        title + ":",
        "",
        "| category | label | pairs | " + " | ".join(short_name(t) for t in rows) + " |",
        "|---|---:|---:|" + "---:|" * len(rows),
    ]
    for k, (cat, pairs, pos, _) in enumerate(cats):
        label = "1" if pos == pairs else ("0" if pos == 0 else "mixed")
        cells = []
        for t in rows:
            c = rows[t]["categories"][k]
            cells.append(f"{c[3] / c[1]:.2f}" if c[1] else "–")
        L.append(f"| {cat} | {label} | {pairs:,} | " + " | ".join(cells) + " |")
    return L + [""]


def markdown(res: dict, info: dict, args) -> str:
    L = [
        "# Quality: neardup and peers on labelled pairs",
        "",
        f"Machine: {info['cpu']}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in sorted(info["versions"].items()))
        + ". "
        f"Load (`uptime`) at the start `{info['uptime_start']}`, at the end "
        f"`{info['uptime_end']}` (it changes only the seconds column).",
        "",
        (
            "Precision (P), recall (R) and F1 over the labelled pairs only, by `neardup.quality` "
            "(a labelled pair is predicted when both documents are in one group; the peers' pairs "
            "are closed transitively, as neardup's groups are). `pairs` = the pairs the tool "
            "itself reports over the whole dataset (neardup: every verified near-duplicate pair, "
            "`--pairs all`; peers: every pair their index returns), most of them unlabelled. "
            "`s` = seconds from texts to pairs in one process, after a warm-up on 50 texts "
            "(imports, cached kernels); one run, a rough guide only."
        ),
        "",
        (
            "Tools: **neardup defaults** = `neardup dedup` as shipped (MinHash-128 over char:4 "
            "shingles, LSH 32 × 4, candidates verified by the LCS resemblance ≥ 0.8 of words, or "
            "of characters for Korean, Chinese and Japanese text); the earlier defaults (char:5, "
            "LSH tuned for 0.7, exact Jaccard ≥ 0.7); neardup "
            "SimHash word:3 k = 3 (the peers' SimHash setting); neardup SimHash char:5 k = 8 (the "
            "setting with precision ≥ 0.99 in a sweep on `synth`); neardup MinHash word:3 at 0.7 "
            "and at 0.8 (the peers' MinHash setting), both verified by exact Jaccard. "
            "Peers get the word 3-grams of neardup's "
            "normalised text: datasketch `MinHashLSH` (0.8, 128 permutations, its bands 9 × 13) and "
            "rensa `RMinHashLSH` (0.8, 128, 16 bands × 8 rows: bands must divide 128), a pair "
            "predicted whenever LSH returns it; 1e0ng `SimhashIndex` (k = 3, `Simhash` of the "
            "shingles, its MD5 feature hash); simhash-pybind `find_all` (k = 3, 5 blocks) over "
            "`compute` of the XXH64 shingle hashes. `find_all` takes a set of fingerprints, so "
            "documents with identical fingerprints never come out as a pair; the row "
            "`+ identical fps` adds those pairs (added here; not the library's behaviour). The "
            "`baseline` row links only documents whose normalised texts are equal: what any "
            "exact-duplicate filter finds, a floor for a near-duplicate detector and, on sets "
            "labelled with paraphrases, close to the ceiling of one."
        ),
        "",
    ]
    verdicts = []
    for name, d in res.items():
        if not d["truth"]:
            continue
        rows = d["rows"]
        L += [
            f"## {name}",
            "",
            (
                f"{d['docs']:,} documents, {d['labelled']:,} labelled pairs "
                f"({d['positives']:,} positive); labels: {d['label_note']}."
            ),
            "",
            (
                f"What the labels measure: {ABOUT.get(name, '')} Rule 2 of `NEAR_DUPLICATE.md` "
                "(≥ 80 % of the longer text's words kept in order, "
                "`neardup.quality.synth.words_kept`) "
                f"holds for {d['pos_rule']:,} of the {d['positives']:,} positives and "
                f"{d['neg_rule']:,} of the {d['labelled'] - d['positives']:,} negatives; "
                "`F1 rule 2` scores the same pairs relabelled by it."
            ),
            "",
            "| tool | P | R | F1 | TP | FP | FN | pairs | F1 rule 2 | s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for tool, r in rows.items():
            bold = "**" if tool == DEFAULT_TOOL else ""
            L.append(
                f"| {bold}{tool}{bold} | {f3(r['precision'])} | {f3(r['recall'])} | "
                f"{bold}{f3(r['f1'])}{bold} | {r['tp']:,} | {r['fp']:,} | {r['fn']:,} | "
                f"{r['pairs']:,} | {f3(r.get('f1_rule'))} | {secs(r['seconds'])} |"
            )
        L.append("")
        audited = {t: r["audit"] for t, r in rows.items() if "audit" in r}
        if audited:
            L += [
                (
                    "The pairs the tools report are none of the labelled ones; what are they? "
                    f"Of a random sample of up to {AUDIT_SAMPLE} of each tool's pairs, the share "
                    "meeting rule 2 (pairs of two documents over "
                    f"{AUDIT_MAX_WORDS:,} words each are left out of the sample):"
                ),
                "",
                (
                    "| tool | pairs | groups | documents in groups | sample | rule 2 met | "
                    "median words kept |"
                ),
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for t, r in audited.items():
                L.append(
                    f"| {t} | {r['pairs']:,} | {r['groups']:,} | {r['in_groups']:,} | "
                    f"{r['sample']} | {f3(r['rule_ok'])} | {f3(r['median_kept'])} |"
                )
            L.append("")
        if name in CATEGORY_TABLES:
            title = (
                "Per edit type: share of the pairs predicted near-duplicate (recall for "
                "label-1 edits, false-positive rate for label-0 ones)"
                if name == "synth"
                else "Per category: share of the pairs predicted near-duplicate"
            )
            L += category_table(rows, title)
        if d.get("ko_rows"):
            L += category_table(
                d["ko_rows"],
                (
                    "The Korean half alone (500 Korean bases; here `rewrap` hard-wraps at a number "
                    "of characters, so line breaks fall inside words, and `spacing` removes and "
                    "adds spaces): share of the pairs predicted near-duplicate"
                ),
            )
        ours = rows[DEFAULT_TOOL]["f1"]
        peer_rows = {t: r for t, r in rows.items() if not t.startswith("neardup") and t != BASELINE}
        if peer_rows:
            best_peer = max(peer_rows, key=lambda t: peer_rows[t]["f1"])
            bp = peer_rows[best_peer]["f1"]
            if bp > 0.95:
                need, rule = bp, "peers above 0.95: never below any peer"
            else:
                need, rule = bp + 0.05, "≥ best peer + 0.05"
            oracle = (
                2
                * d["pos_rule"]
                / (2 * d["pos_rule"] + d["neg_rule"] + d["positives"] - d["pos_rule"])
            )
            holds = "yes" if ours >= need - 1e-12 else "**no**"
            if d["pos_rule"] == 0:
                rule = "no labelled positive is a near-duplicate (containment): not applicable"
                holds = "n/a"
            verdicts.append((name, ours, best_peer, bp, ours - bp, rule, holds, oracle))
    if verdicts:
        L += [
            "## Target: neardup defaults against the best peer",
            "",
            (
                "`rule-2 oracle F1`: the F1 that predicting exactly the labelled pairs meeting "
                "rule 2 would score against the dataset's labels, i.e. a detector that follows "
                "the definition of a near-duplicate perfectly. Where a peer or the target lies "
                "above it, reaching it takes merging pairs the definition calls different texts "
                "(paraphrases, containment)."
            ),
            "",
            (
                "| dataset | neardup defaults F1 | best peer | its F1 | margin | rule | holds | "
                "rule-2 oracle F1 |"
            ),
            "|---|---:|---|---:|---:|---|---|---:|",
        ]
        for name, ours, peer, bp, margin, rule, ok, oracle in verdicts:
            L.append(
                f"| {name} | {ours:.3f} | {peer} | {bp:.3f} | {margin:+.3f} | {rule} | "
                f"{ok} | {oracle:.3f} |"
            )
        L.append("")
    for name, d in res.items():
        if d["truth"]:
            continue
        language = "Korean" if name.endswith("_ko") else "English"
        L += [
            f"## Precision audit: {name} (no labels)",
            "",
            (
                f"{d['docs']:,} real {language} Debian package descriptions. `pairs`: pairs each "
                "tool "
                "reports; `groups`: groups of more than one document (connected components of the "
                "pairs) and the documents in them. `rule 2 met`: of a random sample of up to "
                f"{AUDIT_SAMPLE} of the tool's pairs, the share in which at least 80 % of the "
                "longer text's words are kept in order in the other "
                "(`neardup.quality.synth.words_kept`, the measurable half of the definition; "
                "templated descriptions that differ in a "
                "package name pass it, which users may or may not want merged)."
            ),
            "",
            (
                "| tool | pairs | groups | documents in groups | sample | rule 2 met | "
                "median words kept | s |"
            ),
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for tool, r in d["rows"].items():
            L.append(
                f"| {tool} | {r['pairs']:,} | {r['groups']:,} | {r['in_groups']:,} | "
                f"{r['sample']} | {f3(r['rule_ok'])} | {f3(r['median_kept'])} | "
                f"{r['seconds']:.1f} |"
            )
        L.append("")
        if d.get("korean"):
            L += korean_section(d["korean"])
    return "\n".join(L)


def korean_section(k: dict) -> list[str]:
    L = [
        "### Korean: word 3-grams against char 5-grams on real text",
        "",
        (
            "The Debian Korean descriptions are hard-wrapped by their translators at a fixed "
            "width, so many line breaks fall inside a word (`전⏎쟁`), and binary packages of one "
            "source often carry the same paragraph wrapped differently or on one line. After "
            "normalisation a line break is a separator, so a word broken across lines becomes "
            "two words and changes every word 3-gram around it; `char:5` removes the separators "
            "before shingling. The pool below is every pair that at least one tool reports, "
            f"without the pairs whose normalised texts are identical: {k['pool']:,} pairs, of "
            f"which {k['spacing']:,} are *spacing variants* (the same letters, only spaces and "
            "line breaks differ: near-duplicates by rule 1), "
            f"{k['rule_letters']:,} meet rule 2 once spacing is ignored (`letters kept` ≥ 0.8: "
            "LCS of the letters without separators over the longer text's) and "
            f"{k['rule_words']:,} meet it by words (`words_kept` ≥ 0.8, which counts a word "
            "broken by a line break as changed)."
        ),
        "",
        (
            "| tool | pairs | of them not identical | "
            + ("spacing variants found | " if k["spacing"] else "")
            + "rule 2 by words | rule 2, spacing ignored | pool recall (spacing ignored) |"
        ),
        "|---|---:|---:|" + ("---:|" if k["spacing"] else "") + "---:|---:|---:|",
    ]
    for t, r in k["rows"].items():
        bold = "**" if t == DEFAULT_TOOL else ""
        found = f"{r['spacing']:,} of {k['spacing']:,} | " if k["spacing"] else ""
        L.append(
            f"| {bold}{t}{bold} | {r['pairs']:,} | {r['different']:,} | {found}"
            f"{f3(r['words_ok'])} | {f3(r['letters_ok'])} | "
            f"{bold}{f3(r['recall'])}{bold} |"
        )
    L += [
        "",
        (
            f"Pairs (not identical) that the defaults find and MinHash word:3 at the same "
            f"threshold 0.7 misses: {k['only_default']:,}, of which {k['only_default_ok']:,} "
            f"meet rule 2 with spacing ignored ({k['only_default_words_ok']:,} by words); the "
            f"other way round: {k['only_word']:,} ({k['only_word_ok']:,} meet it)."
        ),
        "",
    ]
    if k["examples"]:
        L += [
            (
                "Examples the defaults find and word:3 at 0.7 misses (the first place the raw "
                "texts differ only in spaces or line breaks, else the first difference; ⏎ = line "
                "break):"
            ),
            "",
            "| pair | words kept | letters kept | text A | text B |",
            "|---|---:|---:|---|---|",
        ]
        for e in k["examples"]:
            L.append(
                f"| `{e['a']}` – `{e['b']}` | {e['words']:.2f} | {e['letters']:.2f} | "
                f"{e['snip_a']} | {e['snip_b']} |"
            )
        L.append("")
    return L


def rule2_sweeps(data_dir: Path, out_dir: Path, names) -> str:
    """Short texts: for each sentence-level set, MinHash sweeps (thresholds 0.30..0.95) of
    several shinglings scored against its labelled pairs *relabelled by rule 2* (≥ 80 % of the
    longer text's words kept in order), the definition's answer rather than the dataset's
    paraphrase or similarity labels. One TSV per sweep in ``out_dir``; returns a Markdown
    summary (also written to ``out_dir/short_texts.md``)."""
    from neardup import quality
    from neardup.io import write_table
    from neardup.settings import Settings

    def cell(e) -> str:
        return f"{f3(e.precision)} / {e.recall:.3f} / **{e.f1:.3f}**"

    L = [
        "# Short texts: thresholds against rule 2",
        "",
        (
            "`python benchmarks/bench_quality.py --rule2-sweeps`: MinHash-128, LSH and exact-Jaccard "
            "verification at each threshold (0.30..0.95), scored against each set's labelled pairs "
            "relabelled by rule 2 of `NEAR_DUPLICATE.md` (`words_kept` ≥ 0.8), not by the set's "
            "own paraphrase or similarity labels. P / R / F1 over the labelled pairs (groups, "
            "as `neardup evaluate`). Caveat: `words_kept` compares normalised *words*, so a "
            "spacing variant (`하고싶은데` / `하고 싶은데`) or `U.S.` / `US` counts as changed "
            "words although rule 1 says formatting does not count; this favours word shingles, "
            "most on Korean. "
            f"Load at the start: `{uptime()}`."
        ),
        "",
        (
            "| dataset | median words | rule-2 pairs | shingles | at 0.7 | best F1 (threshold) | "
            "best with P ≥ 0.95 (threshold) |"
        ),
        "|---|---:|---:|---|---|---|---|",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        ids, texts = read_docs(str(data_dir / name / "docs.jsonl"))
        truth, _ = load_truth(name, data_dir, None)
        rule, counts = rule2_truth(truth, ids, texts)
        words = int(np.median([len(t.split()) for t in texts]))
        for sh in RULE2_SWEEP_SHINGLES:
            print(f"  {name} {sh} ...", file=sys.stderr, flush=True)
            rows = quality.sweep(
                texts,
                ids,
                None,
                rule,
                Settings(method="minhash", shingle=sh, verify=None),
                RULE2_THRESHOLDS,
                workers=1,
            )
            table = [r.to_dict() for r in rows]
            keys = list(dict.fromkeys(k for r in table for k in r))
            write_table(
                out_dir / f"{name}_rule2_minhash_{sh.replace(':', '')}.tsv",
                {k: [r.get(k) for r in table] for k in keys},
            )
            at = next(r for r in rows if abs(r.value - 0.7) < 1e-9)
            best = max(rows, key=lambda r: r.evaluation.f1)
            sure = [r for r in rows if (r.evaluation.precision or 0) >= 0.95]
            top = max(sure, key=lambda r: r.evaluation.f1) if sure else None
            L.append(
                f"| {name} | {words} | {counts['pos_rule'] + counts['neg_rule']:,} | {sh} | "
                f"{cell(at.evaluation)} | {cell(best.evaluation)} ({best.value:.2f}) | "
                + (f"{cell(top.evaluation)} ({top.value:.2f}) |" if top else "– |")
            )
    L.append("")
    text = "\n".join(L)
    (out_dir / "short_texts.md").write_text(text, encoding="utf-8")
    return text


def uptime() -> str:
    try:
        out = subprocess.run(["uptime"], check=False, capture_output=True, text=True)
        return out.stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA,
        help=f"the shared data sets (default {DEFAULT_DATA})",
    )
    ap.add_argument(
        "--datasets", default=",".join(DATASETS), help="comma-separated: " + ", ".join(DATASETS)
    )
    ap.add_argument(
        "--regenerate",
        action="store_true",
        help="make the synthetic corpus again even if it exists",
    )
    ap.add_argument("--skip-peers", action="store_true", help="neardup rows only")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file to write")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    ap.add_argument(
        "--rule2-sweeps",
        action="store_true",
        help=(
            "instead: short texts, MinHash sweeps of "
            + ", ".join(RULE2_SWEEP_SETS)
            + " against their pairs relabelled by rule 2, into docs/sweeps/"
        ),
    )
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.rule2_sweeps:
        print(rule2_sweeps(args.data_dir, RULE2_SWEEP_DIR, RULE2_SWEEP_SETS))
        return 0
    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    for s in names:
        if s not in DATASETS:
            ap.error(f"--datasets: unknown dataset {s!r}; choose from {', '.join(DATASETS)}")
    peers = not args.skip_peers and PEER_PYTHON.exists()
    if not args.skip_peers and not peers:
        print(
            f"no peers environment at {PEER_PYTHON.parent.parent}; run "
            "benchmarks/setup_peers.sh (peer rows skipped)",
            file=sys.stderr,
        )
    info = {"uptime_start": uptime(), "cpu": cpu_model()}
    print(f"start: {info['uptime_start']}", file=sys.stderr)
    synth_pairs = None
    if "synth" in names:
        docs, synth_pairs = SYNTH_DIR / "docs.jsonl", SYNTH_DIR / "pairs.tsv"
        if args.regenerate or not (docs.is_file() and synth_pairs.is_file()):
            print("making the synthetic corpus:", file=sys.stderr)
            make_synth(args.data_dir, SYNTH_DIR)
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_quality_") as tmp:
        for name in names:
            print(f"{name}:", file=sys.stderr, flush=True)
            folder = {
                "synth": SYNTH_DIR,
                "pan13_passages": args.data_dir / PAN13_PASSAGES,
                "pan13_documents": args.data_dir / PAN13_DOCUMENTS,
            }.get(name, args.data_dir / name)
            docs_path = folder / "docs.jsonl"
            ids_list, texts = read_docs(str(docs_path))
            ids = np.asarray(ids_list, dtype=object)
            truth, note = load_truth(name, args.data_dir, synth_pairs)
            d = {"docs": len(ids), "truth": truth is not None, "label_note": note, "rows": {}}
            rule_truth = ko_truth = None
            tool_pairs: dict = {}
            if name == "synth":
                # The Korean half alone, per edit type: where spacing and hard wrapping hit.
                from neardup.quality import PairTruth

                korean = np.char.startswith(truth.id_a.astype(str), "ko/")
                ko_truth = PairTruth.from_arrays(
                    truth.id_a[korean],
                    truth.id_b[korean],
                    truth.positive[korean].astype(np.int64),
                    category=truth.category[korean],
                )
                d["ko_rows"] = {}
            if truth is not None:
                d.update(labelled=len(truth), positives=int(truth.positive.sum()))
                rule_truth, counts = rule2_truth(truth, ids_list, texts)
                d.update(counts)
            baseline = identical_text_pairs(texts)
            if truth is not None:
                row = score(BASELINE, baseline, ids, truth, rule_truth)
                row.update(seconds=math.nan, pairs=int(baseline["a"].shape[0]))
                d["rows"][BASELINE] = row
            for tool, (kind, settings) in TOOLS.items():
                if kind != "neardup" and not peers:
                    continue
                python = sys.executable if kind == "neardup" else PEER_PYTHON
                out = Path(tmp) / f"{name}_{len(d['rows'])}.npz"
                r = run_worker(
                    python,
                    {"kind": kind, "settings": settings, "docs": str(docs_path), "out": str(out)},
                    tool,
                )
                if r is None:
                    continue
                arrays = dict(np.load(out))
                variants = [(tool, arrays)]
                if "ident_a" in arrays:
                    plus = {
                        "a": np.concatenate([arrays["a"], arrays["ident_a"]]),
                        "b": np.concatenate([arrays["b"], arrays["ident_b"]]),
                    }
                    variants.append((PYBIND_PLUS, plus))
                for label, arr in variants:
                    row = (
                        score(label, arr, ids, truth, rule_truth)
                        if truth is not None
                        else audit(arr, texts)
                    )
                    if ko_truth is not None:
                        d["ko_rows"][label] = score(label, arr, ids, ko_truth)
                    if name == "pan13_documents":
                        row["audit"] = audit(arr, texts)
                    if name == "debian_descriptions_ko":
                        tool_pairs[label] = (arr["a"], arr["b"])
                    row.update(seconds=r["seconds"], pairs=int(arr["a"].shape[0]))
                    d["rows"][label] = row
                    if truth is not None:
                        print(
                            f"      {label}: P {f3(row['precision'])} R {f3(row['recall'])} "
                            f"F1 {f3(row['f1'])}",
                            file=sys.stderr,
                            flush=True,
                        )
                    else:
                        print(
                            f"      {label}: pairs {row['pairs']:,}, groups {row['groups']:,}, "
                            f"rule 2 met {f3(row['rule_ok'])}",
                            file=sys.stderr,
                            flush=True,
                        )
            if tool_pairs:
                print("    Korean pool (word:3 against char:5) ...", file=sys.stderr, flush=True)
                d["korean"] = korean_pool(tool_pairs, texts, ids_list)
            res[name] = d
    info["uptime_end"] = uptime()
    info["versions"] = versions(sys.executable)
    if peers:
        info["versions"].update(
            {k: v for k, v in versions(str(PEER_PYTHON)).items() if k not in info["versions"]}
        )
        info["versions"].update(versions(str(PEER_PYTHON), PYBIND_DIR))
    text = markdown(res, info, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(
            json.dumps({"results": res, "info": info}, indent=1, default=str), encoding="utf-8"
        )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
