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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from neardup.io import write_records, write_table
from neardup.quality.edits import TRIES, Editor, is_hangul, word_count
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
    "rewrap",
    "punctuation",
    "boilerplate",
    "numbers",
    "word_edits",
    "sentence",
    "truncate",
    "spacing",
    "particles",
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
EDIT_LABELS = {
    **{e: 1 for e in LIGHT_EDITS},
    **{e: 0 for e in HEAVY_EDITS + NEGATIVE_EDITS},
    HOT_CATEGORY: 1,
}
LANGUAGES = ("auto", "en", "ko")

LIGHT_MIN_KEPT = 0.8
HEAVY_MAX_KEPT = 0.75
TEMPLATE_MAX_KEPT = 0.6
DISTINCT_SHINGLE = "char:5"
DISTINCT_JACCARD = 0.5
MAX_HOT_TEMPLATE = 1_000_000
_TS0 = 1_700_000_000

# --------------------------------------------------------------------------- the hot template

_HOT_TEXT = {
    "en": "{name} is a small utility that keeps track of scheduled maintenance tasks on a single "
    "machine. This package contains the command line client for {name}, together with "
    "manual pages and example configuration files. Install it if you want to run {name} "
    "jobs from scripts or from a terminal, or to check their results later.",
    "ko": "{name} 프로그램은 한 대의 컴퓨터에서 예약된 유지 보수 작업을 관리하는 작은 도구입니다. 이 "
    "패키지는 {name} 명령행 클라이언트와 설명서, 예제 설정 파일을 담고 있습니다. 스크립트나 "
    "터미널에서 {name} 작업을 실행하거나 나중에 결과를 확인하려면 이 패키지를 설치하십시오.",
}

_NAME_SYLLABLES = (
    "ka",
    "ro",
    "mi",
    "te",
    "lu",
    "sa",
    "no",
    "vi",
    "de",
    "pa",
    "zu",
    "fi",
    "go",
    "ha",
    "ri",
    "be",
    "ko",
    "ta",
    "ne",
    "xo",
)

# --------------------------------------------------------------------------- the checks


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
            hangul += is_hangul(ch)
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
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < low
        or (high is not None and value > high)
    ):
        limit = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {limit}; got {value!r}")


def _distinct(texts: list[str], workers: int | None) -> np.ndarray:
    """bool mask: texts that are not a near-duplicate (char:5 Jaccard ≥ 0.5) of an earlier one."""
    from neardup.engines.local import signatures_parallel
    from neardup.pipeline import find_groups
    from neardup.settings import Settings

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
    long_enough = [word_count(t) >= min_words for t in texts]
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
    editor = Editor(bases, langs, rng_edit)
    docs: list[dict] = []
    pairs: list[tuple[str, str, int, str]] = []
    made: Counter = Counter()
    per_lang: Counter = Counter()
    missing: Counter = Counter()
    clock = 0

    def add(doc_id: str, text: str, base_id: str, edit: str, lang: str) -> None:
        nonlocal clock
        docs.append(
            {
                "id": doc_id,
                "text": text,
                "ts": _TS0 + clock,
                "base_id": base_id,
                "edit": edit,
                "lang": lang,
            }
        )
        clock += 1

    for i, (text, bid, lang) in enumerate(zip(bases, bids, langs)):
        add(bid, text, bid, "base", lang)
        short = word_count(text) < MIN_WORDS
        usable = [
            e
            for e in chosen_edits
            if (lang == "ko" or e not in KOREAN_EDITS) and not (short and e in _CONTENT_EDITS)
        ]
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
                for _ in range(TRIES):
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
                for _ in range(TRIES):
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
            raise ValueError(
                f"document ID {doc['id']!r} occurs twice: base IDs may not look like "
                f"'<id>~<edit>' or 'hot~NNNNN'"
            )
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
