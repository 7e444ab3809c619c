"""Labelled near-duplicates derived from real texts, one labelled edit type per derived document.

Every base text (a Debian description, a PAN13 passage, …) is kept as it is, and ``per_base``
edited copies of it are added; each copy is paired with its base and labelled with the definition
users mean (``NEAR_DUPLICATE.md``): **1** when about 80% or more of the longer text's words are
still there in the same order, formatting aside, **0** when clearly fewer are.

Light edits (label 1, the category is the edit's name)
    ``rewrap``       line breaks at another width; Korean texts are hard-wrapped at a number of
                     characters, so breaks also fall inside words (as in the Debian Korean texts).
    ``punctuation``  case, removed or changed punctuation, full-width forms, curly quotes, dashes,
                     no-break spaces; never a letter or digit changed (except case and width).
    ``boilerplate``  a short header or footer line (at most 15% of the words, at least 2 allowed).
    ``numbers``      1–3 digit runs of numbers, versions or dates changed, one word each (a
                     second from 40 words on, a third from 60).
    ``word_edits``   1–5% of the words (at least one) substituted by other words or typos,
                     inserted or deleted.
    ``sentence``     one short sentence (at most 15% of the words, at least 2 allowed) added or
                     removed.
    ``truncate``     a tail of 3–10% of the words dropped (at least one word; needs 10 words).
    ``spacing``      Korean only: spaces between eojeol removed (5–15% of the spaces) and spaces
                     added inside eojeol (2–6% of the eojeol), as real spacing errors; only
                     spaces change.
    ``particles``    Korean only: the final particle of 1–5% of the eojeol (at least one)
                     swapped: 은/는 ↔ 이/가, 을/를 → 은/는, 에 ↔ 에서 (allomorph chosen by the
                     final consonant of the stem); nothing else changes.

Heavy edits (label 0)
    ``heavy_words``  25–40% of the words substituted, inserted or deleted (20% would sit on the
                     80% line of the definition, so the range starts clearly below it).
    ``half``         only the first or the second half kept, or one half replaced by words of
                     another base text.
    ``insertion``    60–150% more words (from other base texts) inserted as one block.

Hard negatives (label 0)
    ``template``     two *derived* documents: the same long fixed paragraph (a made-up
                     distribution notice) as header or footer around two different base texts of
                     similar length, so they share a long paragraph and differ in the rest. The
                     paragraph has about 60–100% of the longer body's words, so the shared part
                     stays near or below half of the longer document. Pair:
                     ``<base>~template.a`` (body of this base) and ``<base>~template.b`` (body
                     of another base).

Hot template (label 1, category ``hot_template``)
    ``hot_template`` documents ``hot~00000``, ``hot~00001``, … of one built-in ~50-word text in
    which only a product name (three times) changes; every pair among them is a near-duplicate,
    and the pairs listed are the star from ``hot~00000`` to each other one. For skew tests.

Every derived text is checked after the edit with :func:`words_kept` (LCS of the normalised
words over the words of the longer text): at least 0.8 for content light edits, at most 0.75 for
heavy edits, at most 0.6 for ``template``; the formatting edits (``rewrap``, ``punctuation``,
``spacing``) must leave the letters and digits unchanged once case, width and separators are
ignored. An edit that cannot meet its bounds on a base is skipped for that base (counted in
``stats["not_applicable"]``) and the next least-used edit is tried.

Minimum sizes: bases with fewer than ``MIN_WORDS`` (8) whitespace-separated words get only the
formatting edits (``rewrap``, ``punctuation``, ``spacing``); content and heavy edits need 8 words
(``truncate`` 10), because below that a single changed word already breaks the 80% rule.

Bases are cleaned first: texts without a letter or digit, texts shorter than ``min_words`` and
(with ``distinct_bases``) texts that are near-duplicates of an earlier base (char:5 Jaccard ≥ 0.5,
or the same normalised text) are dropped, so that the unlabelled pairs between bases are not
near-duplicates and partner texts really differ; then at most ``max_bases`` are drawn at random.

Output: documents ``{"id", "text", "ts", "base_id", "edit", "lang"}`` in a seeded random order
(``edit`` is ``"base"`` for the bases; ``ts`` is seconds since the epoch, each base earlier than
its copies) and pairs ``id_a, id_b, label, category`` (``id_a`` is the base, except for
``template``). :func:`write` stores them as ``docs.jsonl`` + ``pairs.tsv``, the layout of the
labelled data sets. The same inputs and ``seed`` give the same corpus.

Example:
    >>> base = ("The quick brown fox jumps over the lazy dog near the river bank while "
    ...         "the farmer watches from the old wooden gate at the end of the field.")
    >>> corpus = generate([base, "Another text that has enough words to be edited safely here."],
    ...                   seed=1, per_base=2, edits="light")
    >>> corpus.pairs.columns.tolist()
    ['id_a', 'id_b', 'label', 'category']
    >>> set(corpus.pairs.label) == {1}
    True
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from neardup.io import write_records, write_table
from neardup.similarity import lcs_length_ids, to_units
from neardup.text import normalize

__all__ = [
    "MIN_WORDS",
    "LIGHT_EDITS",
    "HEAVY_EDITS",
    "NEGATIVE_EDITS",
    "FORMATTING_EDITS",
    "KOREAN_EDITS",
    "EDITS",
    "EDIT_GROUPS",
    "EDIT_LABELS",
    "HOT_CATEGORY",
    "LANGUAGES",
    "SynthCorpus",
    "detect_language",
    "generate",
    "parse_edits",
    "words_kept",
    "write",
]

MIN_WORDS = 8
"""Fewest words a base needs for any edit that changes words (``truncate`` needs 10)."""

LIGHT_EDITS = (
    "rewrap", "punctuation", "boilerplate", "numbers", "word_edits", "sentence", "truncate",
    "spacing", "particles",
)
HEAVY_EDITS = ("heavy_words", "half", "insertion")
NEGATIVE_EDITS = ("template",)
FORMATTING_EDITS = ("rewrap", "punctuation", "spacing")
KOREAN_EDITS = ("spacing", "particles")
EDITS = LIGHT_EDITS + HEAVY_EDITS + NEGATIVE_EDITS
EDIT_GROUPS = {
    "light": LIGHT_EDITS,
    "heavy": HEAVY_EDITS,
    "template": NEGATIVE_EDITS,
    "all": EDITS,
}
HOT_CATEGORY = "hot_template"
EDIT_LABELS = {**{e: 1 for e in LIGHT_EDITS}, **{e: 0 for e in HEAVY_EDITS + NEGATIVE_EDITS},
               HOT_CATEGORY: 1}
LANGUAGES = ("auto", "en", "ko")

LIGHT_MIN_KEPT = 0.8
HEAVY_MAX_KEPT = 0.75
TEMPLATE_MAX_KEPT = 0.6
DISTINCT_SHINGLE = "char:5"
DISTINCT_JACCARD = 0.5
MAX_HOT_TEMPLATE = 1_000_000
_TS0 = 1_700_000_000
_TRIES = 6

# --------------------------------------------------------------------------- text banks

_TEMPLATE = {
    "en": [
        "This description is part of the community software archive and is kept up to date by "
        "volunteer maintainers.",
        "Names of products and companies mentioned in this text are used only to identify the "
        "software and may be trademarks of their owners.",
        "The archive makes no promise that the software works as described, and nobody accepts "
        "liability for any damage that may result from using it.",
        "Please report problems through the issue tracker of the archive rather than by writing "
        "to individual maintainers.",
        "Before filing a report, check whether the same problem has already been described and "
        "add any new details to the existing entry.",
        "Security problems should be reported privately so that a fix can be prepared before the "
        "details become public.",
        "Translations of this text are provided by volunteers and may lag behind the original "
        "English version.",
        "Packages in the archive are built automatically from source and signed before they are "
        "published to the mirrors.",
        "Older versions remain available in the snapshot service for anyone who needs to "
        "reproduce an earlier installation.",
        "Questions about licensing should be directed to the legal team, whose answers are "
        "published in the public mailing list archive.",
        "By downloading any package you agree to follow the license terms that come with it.",
        "Thank you for using free software and for helping to improve it.",
    ],
    "ko": [
        "이 설명은 커뮤니티 소프트웨어 저장소의 일부이며 자원봉사 관리자들이 최신 상태로 유지합니다.",
        "이 글에 언급된 제품과 회사의 이름은 소프트웨어를 식별하기 위해서만 사용되며 각 소유자의 상표일 수 "
        "있습니다.",
        "저장소는 소프트웨어가 설명한 대로 동작한다고 보장하지 않으며 사용으로 인해 생길 수 있는 손해에 대해 "
        "책임지지 않습니다.",
        "문제가 있으면 개별 관리자에게 직접 연락하지 말고 저장소의 이슈 추적기를 통해 알려 주십시오.",
        "보고하기 전에 같은 문제가 이미 등록되어 있는지 확인하고 새로운 내용이 있으면 기존 항목에 덧붙여 "
        "주십시오.",
        "보안 문제는 수정이 준비될 때까지 공개되지 않도록 비공개로 알려 주시기 바랍니다.",
        "이 글의 번역은 자원봉사자가 제공하므로 영어 원문보다 늦게 갱신될 수 있습니다.",
        "저장소의 패키지는 소스에서 자동으로 빌드되고 서명된 뒤 미러에 배포됩니다.",
        "예전 버전은 스냅샷 서비스에 남아 있으므로 이전 설치 환경을 재현해야 하는 사람은 누구나 내려받을 수 "
        "있습니다.",
        "라이선스에 관한 질문은 법무 팀에 보내 주시면 답변이 공개 메일링 리스트 보관소에 게시됩니다.",
        "패키지를 내려받으면 함께 제공되는 라이선스 조건을 따르는 데 동의하는 것으로 봅니다.",
        "자유 소프트웨어를 사용하고 개선하는 데 도움을 주셔서 감사합니다.",
    ],
}

_HEADERS = {
    "en": [
        "[mirror copy]", "Archived page", "Posted by the editors", "Last updated: 2023-05-14",
        "Source: community package archive", "Printed from the online archive.",
        "Read more on the project page.", "Translated automatically; please report errors.",
        "Copyright 2021 the contributors.", "See also the related packages below.",
    ],
    "ko": [
        "[미러 사본]", "보관된 문서", "편집부 게시", "최종 수정: 2023-05-14",
        "출처: 커뮤니티 패키지 저장소", "온라인 보관소에서 인쇄함.",
        "자세한 내용은 프로젝트 누리집을 참고하세요.", "자동 번역된 글입니다. 오류를 알려 주세요.",
        "저작권 2021 기여자 일동.", "무단 전재 및 재배포 금지",
    ],
}

_SHORT_SENTENCES = {
    "en": [
        "It works well.", "It is fast.", "No configuration is needed.",
        "See the manual for details.", "Feedback is welcome.", "This is a short note.",
        "It has few dependencies.", "Bug reports are appreciated.",
    ],
    "ko": [
        "빠르게 동작합니다.", "설정은 필요 없습니다.", "자세한 내용은 설명서를 참고하세요.",
        "의견을 환영합니다.", "의존성이 적습니다.", "버그 보고를 환영합니다.",
    ],
}

_HOT_TEXT = {
    "en": "{name} is a small utility that keeps track of scheduled maintenance tasks on a single "
          "machine. This package contains the command line client for {name}, together with "
          "manual pages and example configuration files. Install it if you want to run {name} "
          "jobs from scripts or from a terminal, or to check their results later.",
    "ko": "{name} 프로그램은 한 대의 컴퓨터에서 예약된 유지 보수 작업을 관리하는 작은 도구입니다. 이 "
          "패키지는 {name} 명령행 클라이언트와 설명서, 예제 설정 파일을 담고 있습니다. 스크립트나 "
          "터미널에서 {name} 작업을 실행하거나 나중에 결과를 확인하려면 이 패키지를 설치하십시오.",
}

_NAME_SYLLABLES = ("ka", "ro", "mi", "te", "lu", "sa", "no", "vi", "de", "pa", "zu", "fi", "go",
                   "ha", "ri", "be", "ko", "ta", "ne", "xo")

# --------------------------------------------------------------------------- small helpers

_WORD = re.compile(r"\S+")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")
_DIGITS = re.compile(r"\d+")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_PARTICLE = re.compile(r"^(.*[\uac00-\ud7a3])(에서|은|는|이|가|을|를|에)$")
# Stems after which 는/은/이 is usually a verb or adjective ending, not a particle.
_VERB_STEMS = frozenset("하되있없않같많작좋적높낮")


def _is_hangul(ch: str) -> bool:
    return "\uac00" <= ch <= "\ud7a3"


def _has_batchim(syllable: str) -> bool:
    return _is_hangul(syllable) and (ord(syllable) - 0xAC00) % 28 != 0


def detect_language(text: str) -> str:
    """``"ko"`` when Hangul syllables are at least 30% of the letters of ``text``, else ``"en"``.

    ``"en"`` stands for any language written with spaces between words. O(len(text)).

    Example:
        >>> detect_language("OpenDocument 텍스트를 일반 텍스트로 변환"), detect_language("plain text")
        ('ko', 'en')
    """
    letters = hangul = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
            hangul += _is_hangul(ch)
    return "ko" if hangul and hangul >= 0.3 * letters else "en"


def words_kept(a: str, b: str) -> float:
    """Share of the longer text's words that the other text has in the same order, in 0..1.

    The measure of rule 2 of ``NEAR_DUPLICATE.md``: the length of a longest common subsequence of
    the normalised words (:func:`neardup.text.normalize`) divided by the word count of the longer
    text (1.0 for two texts without words). Time O(n·m) words, memory O(min(n, m)).

    Example:
        >>> words_kept("a b c d e f g h i j", "a b c d e f g h i x")
        0.9
        >>> words_kept("A, b c!", "a b\\nc")
        1.0
    """
    x, y = to_units(a, "word"), to_units(b, "word")
    longest = max(x.shape[0], y.shape[0])
    return 1.0 if longest == 0 else lcs_length_ids(x, y) / longest


def _letters(text: str) -> str:
    return normalize(text).replace(" ", "")


def _word_count(text: str) -> int:
    return len(text.split())


def _normalized_count(text: str) -> int:
    return len(normalize(text).split())


class _Words:
    """A text as words plus the whitespace after each, so edits keep the layout."""

    def __init__(self, text: str):
        matches = list(_WORD.finditer(text))
        self.lead = text[: matches[0].start()] if matches else text
        self.words = [m.group() for m in matches]
        self.seps = [
            text[m.end(): matches[i + 1].start()] if i + 1 < len(matches) else text[m.end():]
            for i, m in enumerate(matches)
        ]

    def __len__(self) -> int:
        return len(self.words)

    def text(self) -> str:
        return self.lead + "".join(w + s for w, s in zip(self.words, self.seps))

    def insert_after(self, i: int, word: str) -> None:
        """Insert ``word`` after word ``i`` (-1 = at the front)."""
        if i < 0:
            self.words.insert(0, word)
            self.seps.insert(0, " ")
            return
        self.words.insert(i + 1, word)
        self.seps.insert(i + 1, self.seps[i])
        self.seps[i] = " "

    def delete(self, i: int) -> None:
        if i == len(self.words) - 1 and i > 0:
            self.seps[i - 1] = self.seps[i]
        del self.words[i]
        del self.seps[i]


def _split_core(word: str) -> tuple[str, str, str]:
    pre, core, post = _CORE.match(word).groups()
    return pre, core, post


def _typo(core: str, rng: np.random.Generator) -> str | None:
    if len(core) < 4 or not core.isalpha():
        return None
    i = int(rng.integers(0, len(core) - 1))
    kind = int(rng.integers(0, 3))
    if kind == 0 and core[i] != core[i + 1]:
        return core[:i] + core[i + 1] + core[i] + core[i + 2:]
    if kind == 1:
        return core[:i] + core[i + 1:]
    return core[:i] + core[i] + core[i:]


def _sentences(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text``: ends at . ! ? followed by whitespace, at blank lines,
    and after the first line (a title or synopsis) when more lines follow."""
    cuts = {m.end() for m in _SENTENCE_END.finditer(text)}
    cuts |= {m.end() for m in _PARAGRAPHS.finditer(text)}
    first_line = text.find("\n")
    if 0 < first_line < len(text.rstrip()):
        cuts.add(first_line + 1)
    cuts = sorted(cuts)
    spans, start = [], 0
    for cut in cuts:
        if text[start:cut].strip():
            spans.append((start, cut))
        start = cut
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _hard_wrap(paragraph: str, width: int) -> str:
    """Break every ``width`` characters, inside words too; a break on a space replaces it."""
    lines, pos = [], 0
    while pos < len(paragraph):
        line = paragraph[pos: pos + width]
        pos += width
        if pos < len(paragraph) and paragraph[pos] == " ":
            pos += 1
        lines.append(line.rstrip(" "))
    return "\n".join(lines)


# --------------------------------------------------------------------------- the corpus


@dataclass
class SynthCorpus:
    """Documents and labelled pairs made by :func:`generate`.

    Attributes:
        docs: one dict per document: ``id``, ``text``, ``ts`` (int seconds since the epoch),
            ``base_id``, ``edit`` (``"base"`` for a base), ``lang`` (``"en"`` or ``"ko"``).
        pairs: DataFrame ``id_a, id_b, label (int 1/0), category``.
        stats: ``bases_read``, ``bases_used``, ``skipped_empty``, ``skipped_short``,
            ``skipped_duplicate``, ``skipped_sample``, ``edits`` (Counter of edits made),
            ``not_applicable`` (Counter of edits that could not be made on a base).
    """

    docs: list[dict]
    pairs: pd.DataFrame
    stats: dict = field(default_factory=dict)


def parse_edits(edits: str | Sequence[str]) -> tuple[str, ...]:
    """Edit names from ``"light,heavy,template"``-style text or a list; groups expand in order.

    Groups: ``light``, ``heavy``, ``template``, ``all``; names: see ``EDITS``. Repeats are
    dropped. Raises ``ValueError`` naming an unknown name and the valid ones. O(number of names).

    Example:
        >>> parse_edits("heavy,rewrap")
        ('heavy_words', 'half', 'insertion', 'rewrap')
    """
    names = [e.strip() for e in edits.split(",")] if isinstance(edits, str) else list(edits)
    out: dict[str, None] = {}
    for name in names:
        if name in EDIT_GROUPS:
            out.update(dict.fromkeys(EDIT_GROUPS[name]))
        elif name in EDITS:
            out[name] = None
        else:
            valid = ", ".join(list(EDIT_GROUPS) + list(EDITS))
            raise ValueError(f"edits must name groups or edits among {valid}; got {name!r}")
    if not out:
        raise ValueError(f"edits must name at least one edit; got {edits!r}")
    return tuple(out)


class _Editor:
    """The edits, sharing the base texts (for partners) and per-language vocabularies."""

    def __init__(self, texts: list[str], langs: list[str], rng: np.random.Generator):
        self.texts = texts
        self.langs = langs
        self.rng = rng
        self.by_lang: dict[str, list[int]] = {}
        self.counts = [_word_count(t) for t in texts]
        vocab: dict[str, dict[str, None]] = {}
        pool: dict[str, dict[str, None]] = {}
        for i, (text, lang) in enumerate(zip(texts, langs)):
            self.by_lang.setdefault(lang, []).append(i)
            words = vocab.setdefault(lang, {})
            for w in text.split():
                core = _split_core(w)[1]
                if len(core) >= 2 and any(c.isalpha() for c in core):
                    words[core] = None
            sentences = pool.setdefault(lang, {})
            for s, e in _sentences(text):
                sentence = " ".join(text[s:e].split())
                if 2 <= _normalized_count(sentence) <= 12 and sentence[-1] in ".!?":
                    sentences[sentence] = None
        self.vocab = {k: list(v) for k, v in vocab.items()}
        self.pool = {
            lang: list(pool.get(lang, {})) + _SHORT_SENTENCES[lang] for lang in ("en", "ko")
        }

    # ---------------------------------------------------------------- helpers

    def _pick(self, items: Sequence):
        return items[int(self.rng.integers(0, len(items)))]

    def _uniform(self, low: float, high: float) -> float:
        return float(self.rng.uniform(low, high))

    def _new_word(self, lang: str, old: str) -> str:
        words = self.vocab.get(lang) or self.vocab.get("en") or ["word"]
        for _ in range(10):
            word = self._pick(words)
            if word.casefold() != old.casefold():
                return word
        return old + "x"

    def _editable(self, w: _Words) -> list[int]:
        return [i for i, word in enumerate(w.words) if any(c.isalnum() for c in word)]

    def others(self, i: int, size: int, min_words: int = 1, same_language: bool = False) -> list[int]:
        """Up to ``size`` distinct random other bases with at least ``min_words`` words, of the
        same language when it has other bases (only those with ``same_language``)."""
        same = self.by_lang.get(self.langs[i], [])
        if len(same) < 2 and same_language:
            return []
        pool = same if len(same) > 1 else None
        total = len(same) if pool is not None else len(self.texts)
        out: list[int] = []
        for _ in range(20 * size):
            k = int(self.rng.integers(0, total))
            j = pool[k] if pool is not None else k
            if j != i and self.counts[j] >= min_words and j not in out:
                out.append(j)
                if len(out) == size:
                    break
        return out

    def partner(self, i: int, min_words: int = 1) -> int | None:
        """A random other base, of the same language when there is one (None if none fits)."""
        found = self.others(i, 1, min_words)
        return found[0] if found else None

    def _change_words(self, text: str, lang: str, count: int, mix: tuple[float, float, float],
                      typos: bool) -> str | None:
        """Apply ``count`` substitutions / insertions / deletions (shares ``mix``) at distinct
        words, keeping the layout."""
        w = _Words(text)
        positions = self._editable(w)
        if len(positions) < count or count < 1:
            return None
        chosen = sorted(self.rng.choice(positions, size=count, replace=False).tolist(), reverse=True)
        ops = self.rng.choice(3, size=count, p=mix)
        for i, op in zip(chosen, ops):
            if op == 2 and len(w) > 2:
                w.delete(i)
            elif op == 1:
                w.insert_after(i, self._new_word(lang, w.words[i]))
            else:
                pre, core, post = _split_core(w.words[i])
                new = _typo(core, self.rng) if typos and self.rng.random() < 0.3 else None
                if new is None or new.casefold() == core.casefold():
                    new = self._new_word(lang, core)
                w.words[i] = pre + new + post
        return w.text()

    # ---------------------------------------------------------------- light edits

    def rewrap(self, i: int, text: str, lang: str) -> str | None:
        paragraphs = [" ".join(p.split()) for p in _PARAGRAPHS.split(text) if p.strip()]
        for _ in range(_TRIES):
            if lang == "ko":
                width = int(self.rng.integers(25, 61))
                out = "\n\n".join(_hard_wrap(p, width) for p in paragraphs)
            else:
                width = int(self.rng.integers(30, 101))
                out = "\n\n".join(
                    textwrap.fill(p, width, break_long_words=False, break_on_hyphens=False)
                    for p in paragraphs
                )
            if out != text:
                return out
        return None

    def punctuation(self, i: int, text: str, lang: str) -> str | None:
        rng = self.rng
        out = text
        ops = [k for k in range(5) if rng.random() < 0.5] or [int(rng.integers(0, 5))]
        if 0 in ops:  # letter case
            out = out.lower() if rng.random() < 0.6 else out.upper()
        if 1 in ops:  # drop marks next to whitespace or the end (never joins two words)
            rate = self._uniform(0.3, 1.0)
            out = re.sub(
                r"[,.;:!?\"'()](?=\s|$)|(?<=\s)[\"'(]",
                lambda m: "" if rng.random() < rate else m.group(), out,
            )
        if 2 in ops:  # change marks
            swaps = {",": ";", ";": ",", ".": "!", "!": ".", "?": ".", ":": " -",
                     '"': "\u201c", "'": "\u2019", "-": "\u2013"}
            rate = self._uniform(0.3, 1.0)
            out = re.sub(r"[,;.!?:\"'-]",
                         lambda m: swaps[m.group()] if rng.random() < rate else m.group(), out)
        if 3 in ops:  # full-width forms for some words
            w = _Words(out)
            for j in range(len(w)):
                if rng.random() < 0.2:
                    w.words[j] = "".join(
                        chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in w.words[j]
                    )
            out = w.text()
        if 4 in ops:  # no-break spaces
            out = re.sub(" ", lambda m: "\u00a0" if rng.random() < 0.3 else " ", out)
        if out == text:
            out = text.rstrip() + ("!" if text.rstrip().endswith(".") else ".")
        return out

    def boilerplate(self, i: int, text: str, lang: str) -> str | None:
        budget = max(2, int(0.15 * _normalized_count(text)))
        lines = [h for h in _HEADERS[lang] if _normalized_count(h) <= budget]
        if not lines:
            return None
        line = self._pick(lines)
        gap = "\n\n" if self.rng.random() < 0.5 else "\n"
        return line + gap + text if self.rng.random() < 0.5 else text.rstrip() + gap + line

    def numbers(self, i: int, text: str, lang: str) -> str | None:
        runs = list(_DIGITS.finditer(text))
        n = _word_count(text)
        if not runs:
            return None
        count = min(len(runs), 3, 1 + int(0.05 * max(0, n - 20)))
        chosen = sorted(self.rng.choice(len(runs), size=count, replace=False).tolist())
        parts, last = [], 0
        for k in chosen:
            m = runs[k]
            parts += [text[last: m.start()], self._other_number(m.group())]
            last = m.end()
        parts.append(text[last:])
        return "".join(parts)

    def _other_number(self, digits: str) -> str:
        value = int(digits)
        for _ in range(20):
            if len(digits) == 4 and 1900 <= value <= 2099:
                new = value + int(self.rng.choice([-3, -2, -1, 1, 2, 3]))
            elif len(digits) <= 2:
                new = int(self.rng.integers(0, 100 if len(digits) == 2 else 10))
            else:
                step = max(1, value // 10)
                new = max(0, value + int(self.rng.integers(-step, step + 1)))
            out = str(new).zfill(len(digits)) if digits.startswith("0") else str(new)
            if out != digits:
                return out
        return digits + "1"

    def word_edits(self, i: int, text: str, lang: str) -> str | None:
        n = _word_count(text)
        count = max(1, int(self._uniform(0.01, 0.05) * n))
        return self._change_words(text, lang, count, (0.6, 0.2, 0.2), typos=True)

    def sentence(self, i: int, text: str, lang: str) -> str | None:
        n = _normalized_count(text)
        budget = max(2, int(0.15 * n))
        spans = _sentences(text)
        removable = [(s, e) for s, e in spans
                     if 1 <= _normalized_count(text[s:e]) <= budget] if len(spans) > 1 else []
        if removable and self.rng.random() < 0.5:
            s, e = self._pick(removable)
            return (text[:s] + text[e:]).rstrip() if e == len(text) else text[:s] + text[e:]
        fits = [s for s in self.pool[lang] if _normalized_count(s) <= budget]
        if not fits:
            return None
        new = self._pick(fits)
        ends = [e for _, e in spans[:-1]]
        if not ends or self.rng.random() < 0.3:
            return text.rstrip() + " " + new
        cut = self._pick(ends)
        return text[:cut] + new + " " + text[cut:]

    def truncate(self, i: int, text: str, lang: str) -> str | None:
        w = _Words(text)
        n = len(w)
        drop = max(1, int(self._uniform(0.03, 0.10) * n))
        if n < 10 or drop > 0.10 * n:
            return None
        for _ in range(drop):
            w.delete(len(w) - 1)
        out = w.text().rstrip()
        if self.rng.random() < 0.5:
            out += "…" if self.rng.random() < 0.5 else "..."
        return out

    def spacing(self, i: int, text: str, lang: str) -> str | None:
        if lang != "ko":
            return None
        chars = list(text)
        spaces = [k for k in range(1, len(chars) - 1)
                  if chars[k] == " " and not chars[k - 1].isspace() and not chars[k + 1].isspace()]
        inside = [k for k in range(1, len(chars))
                  if _is_hangul(chars[k - 1]) and _is_hangul(chars[k])]
        n_remove = min(len(spaces), max(1, int(self._uniform(0.05, 0.15) * len(spaces))))
        n_add = min(len(inside), int(round(self._uniform(0.02, 0.06) * _word_count(text))))
        if n_remove + n_add == 0:
            return None
        remove = set(self.rng.choice(spaces, size=n_remove, replace=False).tolist())
        add = set(self.rng.choice(inside, size=n_add, replace=False).tolist()) if n_add else set()
        out = []
        for k, ch in enumerate(chars):
            if k in add:
                out.append(" ")
            if k not in remove:
                out.append(ch)
        return "".join(out)

    def particles(self, i: int, text: str, lang: str) -> str | None:
        if lang != "ko":
            return None
        w = _Words(text)
        found = []
        for j, word in enumerate(w.words):
            pre, core, post = _split_core(word)
            m = _PARTICLE.match(core)
            if m and not (m.group(2) in "는은이" and m.group(1)[-1] in _VERB_STEMS):
                found.append(j)
        count = min(len(found), max(1, int(self._uniform(0.01, 0.05) * len(w))))
        if count == 0:
            return None
        for j in self.rng.choice(found, size=count, replace=False).tolist():
            pre, core, post = _split_core(w.words[j])
            stem, particle = _PARTICLE.match(core).groups()
            w.words[j] = pre + stem + _swap_particle(stem, particle) + post
        return w.text()

    # ---------------------------------------------------------------- heavy edits

    def heavy_words(self, i: int, text: str, lang: str) -> str | None:
        n = _word_count(text)
        count = max(2, int(round(self._uniform(0.25, 0.40) * n)))
        return self._change_words(text, lang, count, (0.6, 0.2, 0.2), typos=False)

    def half(self, i: int, text: str, lang: str) -> str | None:
        w = _Words(text)
        n = len(w)
        cut = n // 2
        first = self.rng.random() < 0.5
        keep_words = (w.words[:cut], w.seps[:cut]) if first else (w.words[cut:], w.seps[cut:])
        if self.rng.random() < 0.5:
            other = self.partner(i, min_words=n - cut)
            if other is not None:
                filler = " ".join(self.texts[other].split()[: n - cut])
                kept = "".join(a + b for a, b in zip(*keep_words)).strip()
                return kept + "\n" + filler if first else filler + "\n" + kept
        return "".join(a + b for a, b in zip(*keep_words)).strip()

    def insertion(self, i: int, text: str, lang: str) -> str | None:
        n = _word_count(text)
        want = int(math.ceil(self._uniform(0.6, 1.5) * n))
        words: list[str] = []
        for _ in range(20):
            other = self.partner(i)
            if other is None:
                return None
            words += self.texts[other].split()
            if len(words) >= want:
                break
        if len(words) < want:
            return None
        block = " ".join(words[:want])
        ends = [e for _, e in _sentences(text)[:-1]]
        if ends and self.rng.random() < 0.7:
            cut = self._pick(ends)
            return text[:cut].rstrip() + "\n\n" + block + "\n\n" + text[cut:].lstrip()
        return block + "\n\n" + text if self.rng.random() < 0.5 else text.rstrip() + "\n\n" + block

    # ---------------------------------------------------------------- hard negatives

    def template(self, i: int, text: str, lang: str) -> tuple[str, str, int] | None:
        n = _word_count(text)
        picks = self.others(i, 5, same_language=True)
        if not picks:
            return None
        other = min(picks, key=lambda j: (abs(math.log(max(1, self.counts[j]) / n)), j))
        body_b = self.texts[other]
        longest = max(n, self.counts[other])
        want = self._uniform(0.6, 1.0) * longest
        sentences, words = [], 0
        bank = _TEMPLATE[lang]
        while words < want:
            sentence = bank[len(sentences) % len(bank)]
            sentences.append(sentence)
            words += _word_count(sentence)
        paragraph = " ".join(sentences)
        if self.rng.random() < 0.5:
            return paragraph + "\n\n" + text, paragraph + "\n\n" + body_b, other
        return text.rstrip() + "\n\n" + paragraph, body_b.rstrip() + "\n\n" + paragraph, other


def _swap_particle(stem: str, particle: str) -> str:
    batchim = _has_batchim(stem[-1])
    if particle in ("은", "는"):
        return "이" if batchim else "가"
    if particle in ("이", "가", "을", "를"):
        return "은" if batchim else "는"
    return "에서" if particle == "에" else "에"


_CONTENT_EDITS = tuple(e for e in EDITS if e not in FORMATTING_EDITS)


def _acceptable(edit: str, base: str, out: str | None) -> bool:
    if out is None or out == base or not out.strip():
        return False
    if edit in FORMATTING_EDITS:
        return _letters(out) == _letters(base)
    kept = words_kept(base, out)
    if edit in LIGHT_EDITS:
        return kept >= LIGHT_MIN_KEPT
    return kept <= HEAVY_MAX_KEPT


def _hot_names(count: int, rng: np.random.Generator) -> list[str]:
    names: dict[str, None] = {}
    while len(names) < count:
        syllables = rng.choice(len(_NAME_SYLLABLES), size=int(rng.integers(2, 4)))
        name = "".join(_NAME_SYLLABLES[s] for s in syllables)
        if len(names) >= len(_NAME_SYLLABLES) ** 2:
            name += str(int(rng.integers(0, 1000)))
        names[name.capitalize()] = None
    return list(names)


def _check_int(name: str, value: int, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low or (
        high is not None and value > high
    ):
        limit = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {limit}; got {value!r}")


def _distinct(texts: list[str], workers: int | None) -> np.ndarray:
    """bool mask: texts that are not a near-duplicate (char:5 Jaccard ≥ 0.5) of an earlier one."""
    from neardup.engines.local import signatures_parallel
    from neardup.pipeline import Settings, find_groups

    if not texts:
        return np.zeros(0, dtype=bool)
    settings = Settings(method="minhash", shingle=DISTINCT_SHINGLE, threshold=DISTINCT_JACCARD)
    sig = signatures_parallel(texts, settings, workers)
    groups = find_groups(sig, np.zeros(len(texts), dtype=np.int64), settings)
    return groups.is_original


def generate(
    base_texts: Sequence[str],
    *,
    seed: int = 1,
    per_base: int = 2,
    edits: str | Sequence[str] = "light,heavy,template",
    language: str = "auto",
    base_ids: Sequence[str] | None = None,
    hot_template: int = 0,
    max_bases: int | None = None,
    min_words: int = 0,
    distinct_bases: bool = True,
    workers: int | None = 1,
) -> SynthCorpus:
    """Derive labelled near-duplicates and non-duplicates from real texts (module docstring).

    Args:
        base_texts: the real texts the copies are made from.
        seed: seed of the numpy Generator; the same inputs and seed give the same corpus.
        per_base: edited copies per base, 1..len(edits) (fewer when fewer edits apply; the
            edits least used so far in the base's language are chosen, ties at random, so the
            edits stay balanced within each language).
        edits: edit names or groups (``light``, ``heavy``, ``template``, ``all``), see
            :func:`parse_edits`.
        language: ``"auto"`` (per text, :func:`detect_language`), ``"en"`` or ``"ko"``.
        base_ids: IDs of the bases (default ``b000000``, ``b000001``, …); copies are
            ``<base id>~<edit>``.
        hot_template: number of ``hot~NNNNN`` documents of the hot template (0 = none).
        max_bases: use at most this many bases, drawn at random after cleaning (None = all).
        min_words: drop bases with fewer whitespace-separated words.
        distinct_bases: drop bases that are near-duplicates of an earlier base.
        workers: processes for the near-duplicate check of the bases (None = all cores).

    Returns a :class:`SynthCorpus`. Cost: O(total words) for the edits plus one LCS check per
    copy (O(n²) words) and, with ``distinct_bases``, one MinHash run over the bases.

    Example:
        >>> text = "one two three four five six seven eight nine ten eleven twelve"
        >>> c = generate([text], seed=3, per_base=1, edits=["truncate"])
        >>> c.pairs.category.tolist(), c.pairs.label.tolist()
        (['truncate'], [1])
    """
    chosen_edits = parse_edits(edits)
    _check_int("seed", seed, 0)
    _check_int("per_base", per_base, 1, len(chosen_edits))
    _check_int("hot_template", hot_template, 0, MAX_HOT_TEMPLATE)
    _check_int("min_words", min_words, 0)
    if max_bases is not None:
        _check_int("max_bases", max_bases, 1)
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}; got {language!r}")
    texts = list(base_texts)
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"base text #{k} must be a str; got {type(text).__name__}")
    ids = [f"b{k:06d}" for k in range(len(texts))] if base_ids is None else list(base_ids)
    if len(ids) != len(texts):
        raise ValueError(f"base_ids must have one ID per base text ({len(texts)}); got {len(ids)}")

    rng_sample, rng_edit, rng_order = np.random.default_rng(seed).spawn(3)
    stats: dict = {"bases_read": len(texts)}
    has_words = [bool(normalize(t)) for t in texts]
    long_enough = [_word_count(t) >= min_words for t in texts]
    stats["skipped_empty"] = int(len(texts) - sum(has_words))
    stats["skipped_short"] = int(sum(h and not s for h, s in zip(has_words, long_enough)))
    keep = [k for k in range(len(texts)) if has_words[k] and long_enough[k]]
    if distinct_bases and keep:
        mask = _distinct([texts[k] for k in keep], workers)
        stats["skipped_duplicate"] = int((~mask).sum())
        keep = [k for k, ok in zip(keep, mask) if ok]
    else:
        stats["skipped_duplicate"] = 0
    if max_bases is not None and len(keep) > max_bases:
        picked = np.sort(rng_sample.choice(len(keep), size=max_bases, replace=False))
        stats["skipped_sample"] = len(keep) - max_bases
        keep = [keep[k] for k in picked.tolist()]
    else:
        stats["skipped_sample"] = 0
    stats["bases_used"] = len(keep)

    bases = [texts[k] for k in keep]
    bids = [ids[k] for k in keep]
    langs = [detect_language(t) if language == "auto" else language for t in bases]
    editor = _Editor(bases, langs, rng_edit)
    docs: list[dict] = []
    pairs: list[tuple[str, str, int, str]] = []
    made: Counter = Counter()
    per_lang: Counter = Counter()
    missing: Counter = Counter()
    clock = 0

    def add(doc_id: str, text: str, base_id: str, edit: str, lang: str) -> None:
        nonlocal clock
        docs.append({"id": doc_id, "text": text, "ts": _TS0 + clock, "base_id": base_id,
                     "edit": edit, "lang": lang})
        clock += 1

    for i, (text, bid, lang) in enumerate(zip(bases, bids, langs)):
        add(bid, text, bid, "base", lang)
        short = _word_count(text) < MIN_WORDS
        usable = [e for e in chosen_edits
                  if (lang == "ko" or e not in KOREAN_EDITS)
                  and not (short and e in _CONTENT_EDITS)]
        tiebreak = rng_edit.random(len(usable))
        # Balanced per language, so every edit sees both languages in their proportions.
        order = sorted(range(len(usable)), key=lambda k: (per_lang[lang, usable[k]], tiebreak[k]))
        done = 0
        for k in order:
            if done == per_base:
                break
            edit = usable[k]
            if edit == "template":
                result = None
                for _ in range(_TRIES):
                    result = editor.template(i, text, lang)
                    if result is None or words_kept(result[0], result[1]) <= TEMPLATE_MAX_KEPT:
                        break
                    result = None
                if result is None:
                    missing[edit] += 1
                    continue
                text_a, text_b, other = result
                add(f"{bid}~template.a", text_a, bid, edit, lang)
                add(f"{bid}~template.b", text_b, bids[other], edit, lang)
                pairs.append((f"{bid}~template.a", f"{bid}~template.b", 0, edit))
            else:
                out = None
                for _ in range(_TRIES):
                    out = getattr(editor, edit)(i, text, lang)
                    if out is None or _acceptable(edit, text, out):
                        break
                    out = None
                if out is None:
                    missing[edit] += 1
                    continue
                add(f"{bid}~{edit}", out, bid, edit, lang)
                pairs.append((bid, f"{bid}~{edit}", EDIT_LABELS[edit], edit))
            made[edit] += 1
            per_lang[lang, edit] += 1
            done += 1

    if hot_template:
        hot_lang = Counter(langs).most_common(1)[0][0] if langs else "en"
        names = _hot_names(hot_template, rng_edit)
        first = "hot~00000"
        for k, name in enumerate(names):
            doc_id = f"hot~{k:05d}"
            add(doc_id, _HOT_TEXT[hot_lang].format(name=name), first, HOT_CATEGORY, hot_lang)
            if k:
                pairs.append((first, doc_id, 1, HOT_CATEGORY))
        made[HOT_CATEGORY] = hot_template

    seen: set[str] = set()
    for doc in docs:
        if doc["id"] in seen:
            raise ValueError(f"document ID {doc['id']!r} occurs twice: base IDs may not look like "
                             f"'<id>~<edit>' or 'hot~NNNNN'")
        seen.add(doc["id"])
    order = rng_order.permutation(len(docs))
    stats["edits"] = made
    stats["not_applicable"] = missing
    frame = pd.DataFrame(pairs, columns=["id_a", "id_b", "label", "category"])
    frame["label"] = frame["label"].astype(np.int64)
    return SynthCorpus([docs[k] for k in order.tolist()], frame, stats)


def write(corpus: SynthCorpus, docs_path: str | Path, pairs_path: str | Path) -> None:
    """Write the documents (JSON Lines, or any :func:`neardup.io.write_records` format) and the
    pairs (``id_a id_b label category`` table with a header, e.g. TSV), atomically.

    Cost: O(total text size).

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> c = generate(["one two three four five six seven eight nine ten"], per_base=1,
        ...              edits="rewrap")
        >>> write(c, d / "docs.jsonl", d / "pairs.tsv")
        >>> (d / "pairs.tsv").read_text().splitlines()[0]
        'id_a\\tid_b\\tlabel\\tcategory'
    """
    write_records(docs_path, corpus.docs)
    columns = ("id_a", "id_b", "label", "category")
    write_table(pairs_path, {c: corpus.pairs[c].tolist() for c in columns})
