"""Deterministic synthetic corpus for the benchmarks: English-like and Korean-like documents.

The vocabularies are real words read (at generation time) from the Debian package descriptions in
``shared/data/debian_descriptions_en`` and ``shared/data/debian_descriptions_ko``, ranked by their
frequency there; words are drawn with a Zipf-like law (p ∝ 1 / (rank + 2.7)^1.07) so that common
words repeat as in real text. Each document is:

* English-like or Korean-like, English with probability `--english-share` (default 0.5; Korean
  eojeol keep their particles);
* 50–800 words, log-uniform, so the length bins 50–100, 100–200, 200–400 and 400–800 words each
  hold about a quarter of the documents;
* sentences of 4–24 words (capitalised, ending in ``.``, ``!`` or ``?``, some commas), wrapped into
  lines of a per-document width, sometimes split into paragraphs.

Planted duplicates (the rest are independent):

* ``--near-dup-rate`` (default 4 %) of the documents are light edits of an earlier document: a few
  words replaced, inserted or deleted, lines re-wrapped at another width, some punctuation or
  letter case changed;
* ``--template-rate`` (default 2 %) are one hot template (a notice of about 120 words) with a few
  slots filled in (a name, a number, a date), i.e. one large cluster of near-duplicates;
* ``--exact-rate`` (default 0) are verbatim copies of a recent document of any kind;
* ``--real-rate`` (default 0) of the originals are real short texts: Debian package descriptions
  (English or Korean, 5–200 words) taken verbatim from the source files;
* with ``--chains``, edits and exact copies join the recent documents, so later edits can edit an
  edit (chains of near-duplicates, as re-crawled pages drift).

The duplicate-heavy corpora of the out-of-core benchmark (``bench_scale.py``) use, at 200k
documents, ``--exact-rate 0.12 --near-dup-rate 0.35 --template-rate 0.02 --real-rate 0.45
--chains``; ``--start`` shifts ids and timestamps so that shards generated in parallel
concatenate into one corpus.

Each JSONL line is ``{"id": "d0000000", "text": ..., "ts": <Unix seconds, int>}``; ``ts`` grows with
the id (random gaps), so an edit is always newer than its source. ``--truth PATH`` also writes a TSV
``id, kind, source`` (kind ``orig``, ``edit`` or ``template``; source is the edited document's id).

Same ``--docs``, ``--seed`` and source files give a byte-identical file.

Usage:
    python benchmarks/corpus.py --docs 100000 --seed 1 -o benchmarks/.data/corpus_100k.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
SOURCES = {
    "en": "debian_descriptions_en/docs.jsonl",
    "ko": "debian_descriptions_ko/docs.jsonl",
}
MIN_WORDS, MAX_WORDS = 50, 800
ZIPF_S, ZIPF_Q = 1.07, 2.7
VOCAB_SIZE = 40_000
BASE_TS = 1_704_067_200  # 2024-01-01T00:00:00Z
RECENT = 20_000  # edits copy one of the last RECENT documents

_WORD = re.compile(r"\w+")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9]*")

TEMPLATE = {
    "en": (
        "Dear {name}, thank you for your order number {num}. This message confirms that your "
        "subscription has been renewed on {date} and will remain active for the next twelve "
        "months. If you did not request this renewal, please contact our support team within "
        "fourteen days so that we can cancel the order and refund the full amount to your "
        "original payment method. You can review your account settings, download invoices and "
        "change your notification preferences at any time from the customer portal. For your "
        "security we will never ask for your password by email or by phone. This is an automated "
        "message sent to {name}; replies to this address are not monitored. Kind regards, the "
        "customer care team. Reference {num}, issued {date}."
    ),
    "ko": (
        "{name} 고객님, 주문 번호 {num} 주문해 주셔서 감사합니다. 이 메시지는 고객님의 구독이 "
        "{date}에 갱신되었으며 앞으로 열두 달 동안 유지된다는 것을 확인합니다. 이 갱신을 요청하지 "
        "않으셨다면 십사 일 이내에 고객 지원팀에 연락해 주십시오. 주문을 취소하고 전액을 원래 결제 "
        "수단으로 환불해 드리겠습니다. 고객 포털에서 언제든지 계정 설정을 확인하고 청구서를 내려받고 "
        "알림 설정을 바꿀 수 있습니다. 보안을 위해 이메일이나 전화로 비밀번호를 묻지 않습니다. 이 "
        "메시지는 {name} 고객님께 자동으로 보낸 것이며 이 주소로 보낸 회신은 확인하지 않습니다. "
        "고객 관리팀 드림. 참조 번호 {num}, 발행일 {date}."
    ),
}


def build_vocab(path: Path, lang: str, size: int = VOCAB_SIZE) -> np.ndarray:
    """The ``size`` most frequent words of one source, most frequent first (ties by word)."""
    # English: Latin letters (and digits after the first); Korean: any word with a syllable.
    keep = _LATIN.fullmatch if lang == "en" else _HANGUL.search
    counts: Counter[str] = Counter()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            for word in _WORD.findall(json.loads(line)["text"]):
                if keep(word):
                    counts[word] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]
    return np.array([w for w, _ in ranked], dtype=object)


def zipf_cdf(size: int) -> np.ndarray:
    p = 1.0 / (np.arange(size) + ZIPF_Q) ** ZIPF_S
    cdf = np.cumsum(p)
    return cdf / cdf[-1]


class Generator:
    def __init__(self, data_dir: Path, seed: int, english_share: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.english_share = english_share
        self.vocab = {lang: build_vocab(data_dir / rel, lang) for lang, rel in SOURCES.items()}
        self.cdf = {lang: zipf_cdf(len(v)) for lang, v in self.vocab.items()}
        self.data_dir = data_dir
        self._real: list[tuple[str, str]] | None = None

    def real(self) -> tuple[str, str]:
        """A real Debian package description, verbatim (English or Korean)."""
        if self._real is None:
            self._real = []
            for lang, rel in SOURCES.items():
                with (self.data_dir / rel).open(encoding="utf-8") as fh:
                    for line in fh:
                        text = json.loads(line)["text"]
                        if 5 <= len(text.split()) <= 200:
                            self._real.append((lang, text))
        return self._real[int(self.rng.integers(0, len(self._real)))]

    def words(self, lang: str, count: int) -> list[str]:
        idx = np.searchsorted(self.cdf[lang], self.rng.random(count), side="right")
        return self.vocab[lang][np.minimum(idx, len(self.vocab[lang]) - 1)].tolist()

    def sentences(self, lang: str, words: list[str]) -> list[str]:
        """Words → sentences with capitals, commas and end marks (still space separated)."""
        rng = self.rng
        out: list[str] = []
        i = 0
        n = len(words)
        lengths = rng.integers(4, 25, size=n // 4 + 2)
        marks = rng.random(lengths.shape[0])
        k = 0
        while i < n:
            sent = words[i : i + int(lengths[k])]
            i += len(sent)
            if lang == "en":
                sent[0] = sent[0][:1].upper() + sent[0][1:]
            if len(sent) > 8:
                c = int(rng.integers(2, len(sent) - 2))
                sent[c] = sent[c] + ","
            end = "." if marks[k] < 0.85 else ("?" if marks[k] < 0.93 else "!")
            sent[-1] = sent[-1] + end
            out.extend(sent)
            k += 1
        return out

    def wrap(self, tokens: list[str], width: int) -> str:
        """Join tokens with spaces, breaking lines near ``width`` characters; some blank lines."""
        lines: list[str] = []
        line: list[str] = []
        used = 0
        para = self.rng.random(len(tokens)) < 0.01
        for t, new_para in zip(tokens, para):
            if line and (used + len(t) > width or new_para):
                lines.append(" ".join(line))
                if new_para:
                    lines.append("")
                line, used = [], 0
            line.append(t)
            used += len(t) + 1
        if line:
            lines.append(" ".join(line))
        return "\n".join(lines)

    def language(self) -> str:
        """English or Korean, English with probability ``english_share``."""
        return "en" if self.rng.random() < self.english_share else "ko"

    def width(self, lang: str) -> int:
        return int(self.rng.integers(60, 100) if lang == "en" else self.rng.integers(36, 60))

    def original(self) -> tuple[str, str]:
        lang = self.language()
        count = int(np.exp(self.rng.uniform(np.log(MIN_WORDS), np.log(MAX_WORDS + 1))))
        count = min(max(count, MIN_WORDS), MAX_WORDS)
        tokens = self.sentences(lang, self.words(lang, count))
        return lang, self.wrap(tokens, self.width(lang))

    def edit(self, lang: str, text: str) -> str:
        """A light edit: a few words changed, re-wrapped lines, some punctuation / case changes."""
        rng = self.rng
        tokens = text.split()
        n = len(tokens)
        changes = int(rng.integers(1, 3 + n // 100))
        for _ in range(changes):
            pos = int(rng.integers(0, len(tokens)))
            op = rng.random()
            if op < 0.6:
                tokens[pos] = self.words(lang, 1)[0]
            elif op < 0.8:
                tokens.insert(pos, self.words(lang, 1)[0])
            elif len(tokens) > MIN_WORDS:
                del tokens[pos]
        for _ in range(int(rng.integers(0, 4))):
            pos = int(rng.integers(0, len(tokens)))
            t = tokens[pos]
            op = rng.random()
            if op < 0.4:
                tokens[pos] = t.rstrip(".,!?") if t[-1:] in ".,!?" else t + ","
            elif op < 0.7:
                tokens[pos] = t + ";"
            elif lang == "en":
                tokens[pos] = t.upper() if op < 0.85 else t.capitalize()
            else:
                tokens[pos] = "(" + t + ")"
        return self.wrap(tokens, self.width(lang))

    def template(self, lang: str) -> str:
        rng = self.rng
        name = " ".join(self.words(lang, 2))
        num = f"{int(rng.integers(10_000, 999_999)):06d}"
        day = int(rng.integers(0, 730))
        date = time.strftime("%Y-%m-%d", time.gmtime(BASE_TS + day * 86_400))
        text = TEMPLATE[lang].format(name=name, num=num, date=date)
        return self.wrap(text.split(), self.width(lang))


def generate(
    docs: int,
    seed: int,
    out: Path,
    data_dir: Path = DEFAULT_DATA,
    near_dup_rate: float = 0.04,
    template_rate: float = 0.02,
    truth: Path | None = None,
    exact_rate: float = 0.0,
    real_rate: float = 0.0,
    chains: bool = False,
    start: int = 0,
    english_share: float = 0.5,
) -> dict[str, int]:
    """Write ``docs`` JSONL documents to ``out``; return counts of each kind."""
    gen = Generator(data_dir, seed, english_share)
    rng = gen.rng
    kinds = rng.random(docs)
    gaps = rng.integers(1, 120, size=docs)
    ts = BASE_TS + 60 * start + np.cumsum(gaps)
    template_lang = gen.language()
    recent: list[tuple[str, str, str]] = []  # (id, lang, text) of recent originals
    counts = {"orig": 0, "edit": 0, "template": 0, "exact": 0}
    # Drawn apart from ``kinds`` so that the default corpus stays byte-identical.
    extra = rng.random(docs) if exact_rate or real_rate else np.ones(docs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    truth_fh = truth.open("w", encoding="utf-8") if truth else None
    if truth_fh:
        truth_fh.write("id\tkind\tsource\n")
    with tmp.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            doc_id = f"d{start + i:07d}"
            source = ""
            if extra[i] < exact_rate and recent:
                kind = "exact"
                source, lang, text = recent[int(rng.integers(0, len(recent)))]
                if chains:
                    recent.append((doc_id, lang, text))
            elif kinds[i] < template_rate:
                kind = "template"
                text = gen.template(template_lang)
            elif kinds[i] < template_rate + near_dup_rate and recent:
                kind = "edit"
                source, lang, base = recent[int(rng.integers(0, len(recent)))]
                text = gen.edit(lang, base)
                if chains:
                    recent.append((doc_id, lang, text))
            else:
                kind = "orig"
                if extra[i] < exact_rate + real_rate * (1 - exact_rate):
                    lang, text = gen.real()
                else:
                    lang, text = gen.original()
                recent.append((doc_id, lang, text))
            if len(recent) > RECENT:
                recent.pop(0)
            counts[kind] += 1
            fh.write(json.dumps({"id": doc_id, "text": text, "ts": int(ts[i])}, ensure_ascii=False))
            fh.write("\n")
            if truth_fh:
                truth_fh.write(f"{doc_id}\t{kind}\t{source}\n")
    if truth_fh:
        truth_fh.close()
    os.replace(tmp, out)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--docs", type=int, default=100_000, help="number of documents (default 100000)"
    )
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write")
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA,
        help=f"folder holding the Debian description data sets (default {DEFAULT_DATA})",
    )
    ap.add_argument("--near-dup-rate", type=float, default=0.04, help="share of edited copies")
    ap.add_argument("--template-rate", type=float, default=0.02, help="share of hot-template docs")
    ap.add_argument("--truth", type=Path, default=None, help="also write id/kind/source TSV here")
    ap.add_argument("--exact-rate", type=float, default=0.0, help="share of verbatim copies")
    ap.add_argument(
        "--real-rate",
        type=float,
        default=0.0,
        help="share of originals that are real Debian descriptions (short texts)",
    )
    ap.add_argument("--chains", action="store_true", help="edits and copies can be edited again")
    ap.add_argument("--start", type=int, default=0, help="first document number (for shards)")
    ap.add_argument(
        "--english-share",
        type=float,
        default=0.5,
        help="share of English-like originals and template (default 0.5; 1 = pure English)",
    )
    args = ap.parse_args(argv)
    if args.docs < 1:
        ap.error(f"--docs must be >= 1, got {args.docs}")
    if not 0 <= args.english_share <= 1:
        ap.error(f"--english-share must be in 0..1, got {args.english_share}")
    if not 0 <= args.near_dup_rate + args.template_rate <= 1:
        ap.error("--near-dup-rate + --template-rate must be in 0..1")
    for rel in SOURCES.values():
        if not (args.data_dir / rel).is_file():
            ap.error(f"missing source file {args.data_dir / rel} (set --data-dir)")
    t0 = time.perf_counter()
    counts = generate(
        args.docs,
        args.seed,
        args.output,
        args.data_dir,
        args.near_dup_rate,
        args.template_rate,
        args.truth,
        args.exact_rate,
        args.real_rate,
        args.chains,
        args.start,
        args.english_share,
    )
    size = args.output.stat().st_size
    print(
        f"wrote {args.docs} docs ({counts['orig']} originals, {counts['edit']} edits, "
        f"{counts['template']} template copies, {counts['exact']} exact copies), "
        f"{size / 1e6:.1f} MB, to {args.output} "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
