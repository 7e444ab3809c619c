"""The edits that derive a labelled copy from a base text, one method per edit.

:class:`Editor` holds the base texts (some edits borrow words or sentences from another base,
a *partner*) and a vocabulary and a pool of short sentences per language. What each edit does,
and the bounds its result must meet, are in :mod:`neardup.quality.synth`, which checks the
result and labels the pair. The edits keep the layout: a text is cut into its words and the
white space after each (``_Words``), and only the words an edit touches change.

Example:
    >>> import numpy as np
    >>> editor = Editor(["one two three four five six seven eight nine ten"], ["en"],
    ...                 np.random.default_rng(1))
    >>> editor.truncate(0, editor.texts[0], "en").split()[:3]
    ['one', 'two', 'three']
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence

import numpy as np

from neardup.text import normalize

__all__ = ["TRIES", "Editor", "is_hangul", "word_count"]

TRIES = 6
"""Attempts at an edit whose result misses its bounds, before it counts as not applicable."""

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
        "[mirror copy]",
        "Archived page",
        "Posted by the editors",
        "Last updated: 2023-05-14",
        "Source: community package archive",
        "Printed from the online archive.",
        "Read more on the project page.",
        "Translated automatically; please report errors.",
        "Copyright 2021 the contributors.",
        "See also the related packages below.",
    ],
    "ko": [
        "[미러 사본]",
        "보관된 문서",
        "편집부 게시",
        "최종 수정: 2023-05-14",
        "출처: 커뮤니티 패키지 저장소",
        "온라인 보관소에서 인쇄함.",
        "자세한 내용은 프로젝트 누리집을 참고하세요.",
        "자동 번역된 글입니다. 오류를 알려 주세요.",
        "저작권 2021 기여자 일동.",
        "무단 전재 및 재배포 금지",
    ],
}

_SHORT_SENTENCES = {
    "en": [
        "It works well.",
        "It is fast.",
        "No configuration is needed.",
        "See the manual for details.",
        "Feedback is welcome.",
        "This is a short note.",
        "It has few dependencies.",
        "Bug reports are appreciated.",
    ],
    "ko": [
        "빠르게 동작합니다.",
        "설정은 필요 없습니다.",
        "자세한 내용은 설명서를 참고하세요.",
        "의견을 환영합니다.",
        "의존성이 적습니다.",
        "버그 보고를 환영합니다.",
    ],
}

# --------------------------------------------------------------------------- small helpers

_WORD = re.compile(r"\S+")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")
_DIGITS = re.compile(r"\d+")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_PARTICLE = re.compile(r"^(.*[\uac00-\ud7a3])(에서|은|는|이|가|을|를|에)$")
# Stems after which 는/은/이 is usually a verb or adjective ending, not a particle.
_VERB_STEMS = frozenset("하되있없않같많작좋적높낮")


def is_hangul(ch: str) -> bool:
    """Whether ``ch`` is a precomposed Hangul syllable (U+AC00..U+D7A3). O(1).

    Example:
        >>> is_hangul("한"), is_hangul("a")
        (True, False)
    """
    return "\uac00" <= ch <= "\ud7a3"


def _has_batchim(syllable: str) -> bool:
    return is_hangul(syllable) and (ord(syllable) - 0xAC00) % 28 != 0


def word_count(text: str) -> int:
    """Whitespace-separated words of ``text`` (for Korean, eojeol). O(len(text)).

    Example:
        >>> word_count(" a b\\n c ")
        3
    """
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
            text[m.end() : matches[i + 1].start()] if i + 1 < len(matches) else text[m.end() :]
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
        return core[:i] + core[i + 1] + core[i] + core[i + 2 :]
    if kind == 1:
        return core[:i] + core[i + 1 :]
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
        line = paragraph[pos : pos + width]
        pos += width
        if pos < len(paragraph) and paragraph[pos] == " ":
            pos += 1
        lines.append(line.rstrip(" "))
    return "\n".join(lines)


class Editor:
    """The edits, sharing the base texts (for partners) and per-language vocabularies.

    Each edit is a method named after it (``rewrap``, ``punctuation`` …, see
    :data:`neardup.quality.synth.EDITS`) that takes the base's position ``i``, its ``text`` and
    ``lang`` ("en" or "ko") and returns the edited text, or None when the edit does not apply to
    that base; ``template`` returns both documents of its pair and the partner base. Every random
    choice comes from ``rng``. Building it costs O(total words).
    """

    def __init__(self, texts: list[str], langs: list[str], rng: np.random.Generator):
        self.texts = texts
        self.langs = langs
        self.rng = rng
        self.by_lang: dict[str, list[int]] = {}
        self.counts = [word_count(t) for t in texts]
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

    def others(
        self, i: int, size: int, min_words: int = 1, same_language: bool = False
    ) -> list[int]:
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

    def _change_words(
        self, text: str, lang: str, count: int, mix: tuple[float, float, float], typos: bool
    ) -> str | None:
        """Apply ``count`` substitutions / insertions / deletions (shares ``mix``) at distinct
        words, keeping the layout."""
        w = _Words(text)
        positions = self._editable(w)
        if len(positions) < count or count < 1:
            return None
        chosen = sorted(
            self.rng.choice(positions, size=count, replace=False).tolist(), reverse=True
        )
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
        """Line breaks at another width (Korean: hard breaks every 25–60 characters)."""
        paragraphs = [" ".join(p.split()) for p in _PARAGRAPHS.split(text) if p.strip()]
        for _ in range(TRIES):
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
        """Case, removed or changed punctuation, full-width forms, no-break spaces."""
        rng = self.rng
        out = text
        ops = [k for k in range(5) if rng.random() < 0.5] or [int(rng.integers(0, 5))]
        if 0 in ops:  # letter case
            out = out.lower() if rng.random() < 0.6 else out.upper()
        if 1 in ops:  # drop marks next to whitespace or the end (never joins two words)
            rate = self._uniform(0.3, 1.0)
            out = re.sub(
                r"[,.;:!?\"'()](?=\s|$)|(?<=\s)[\"'(]",
                lambda m: "" if rng.random() < rate else m.group(),
                out,
            )
        if 2 in ops:  # change marks
            swaps = {
                ",": ";",
                ";": ",",
                ".": "!",
                "!": ".",
                "?": ".",
                ":": " -",
                '"': "\u201c",
                "'": "\u2019",
                "-": "\u2013",
            }
            rate = self._uniform(0.3, 1.0)
            out = re.sub(
                r"[,;.!?:\"'-]",
                lambda m: swaps[m.group()] if rng.random() < rate else m.group(),
                out,
            )
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
        """A short header or footer line (at most 15% of the words, at least 2)."""
        budget = max(2, int(0.15 * _normalized_count(text)))
        lines = [h for h in _HEADERS[lang] if _normalized_count(h) <= budget]
        if not lines:
            return None
        line = self._pick(lines)
        gap = "\n\n" if self.rng.random() < 0.5 else "\n"
        return line + gap + text if self.rng.random() < 0.5 else text.rstrip() + gap + line

    def numbers(self, i: int, text: str, lang: str) -> str | None:
        """1–3 digit runs changed, one word each (a second from 40 words, a third from 60)."""
        runs = list(_DIGITS.finditer(text))
        n = word_count(text)
        if not runs:
            return None
        count = min(len(runs), 3, 1 + int(0.05 * max(0, n - 20)))
        chosen = sorted(self.rng.choice(len(runs), size=count, replace=False).tolist())
        parts, last = [], 0
        for k in chosen:
            m = runs[k]
            parts += [text[last : m.start()], self._other_number(m.group())]
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
        """1–5% of the words (at least one) substituted (or typos), inserted or deleted."""
        n = word_count(text)
        count = max(1, int(self._uniform(0.01, 0.05) * n))
        return self._change_words(text, lang, count, (0.6, 0.2, 0.2), typos=True)

    def sentence(self, i: int, text: str, lang: str) -> str | None:
        """One short sentence (at most 15% of the words, at least 2) added or removed."""
        n = _normalized_count(text)
        budget = max(2, int(0.15 * n))
        spans = _sentences(text)
        removable = (
            [(s, e) for s, e in spans if 1 <= _normalized_count(text[s:e]) <= budget]
            if len(spans) > 1
            else []
        )
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
        """A tail of 3–10% of the words dropped (needs 10 words)."""
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
        """Korean only: spaces between eojeol removed and spaces inside eojeol added."""
        if lang != "ko":
            return None
        chars = list(text)
        spaces = [
            k
            for k in range(1, len(chars) - 1)
            if chars[k] == " " and not chars[k - 1].isspace() and not chars[k + 1].isspace()
        ]
        inside = [
            k for k in range(1, len(chars)) if is_hangul(chars[k - 1]) and is_hangul(chars[k])
        ]
        n_remove = min(len(spaces), max(1, int(self._uniform(0.05, 0.15) * len(spaces))))
        n_add = min(len(inside), int(round(self._uniform(0.02, 0.06) * word_count(text))))
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
        """Korean only: the final particle of 1–5% of the eojeol swapped."""
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
        """25–40% of the words substituted, inserted or deleted."""
        n = word_count(text)
        count = max(2, int(round(self._uniform(0.25, 0.40) * n)))
        return self._change_words(text, lang, count, (0.6, 0.2, 0.2), typos=False)

    def half(self, i: int, text: str, lang: str) -> str | None:
        """Only one half kept, or one half replaced by words of a partner."""
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
        """60–150% more words, from partners, inserted as one block."""
        n = word_count(text)
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
        """The two documents of a template pair and the partner: one long made-up paragraph around
        this base and around a partner of similar length."""
        n = word_count(text)
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
            words += word_count(sentence)
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
