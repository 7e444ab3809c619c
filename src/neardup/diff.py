"""What differs between two texts, word by word: the one word diff that every view renders.

Texts are cut into tokens (:func:`tokens`): words for scripts written with spaces (Latin,
Hangul ...), single characters for Chinese and Japanese, which are written without spaces, and
single punctuation marks, so that "fox," against "fox" shows the comma, not the whole word, as
changed. Tokens are compared without the white space around them, so re-wrapped lines are not
changes. :func:`word_diff` gives the result as plain segments; the HTML report
(:func:`neardup.report.diff_html`) and the labelling terminal
(:func:`neardup.quality.sampling.diff_markup`) each mark them up their own way.

Example:
    >>> word_diff("the lazy cat", "the cat!")
    [('equal', 'the'), ('delete', ' lazy'), ('equal', ' cat'), ('insert', '!')]
"""

from __future__ import annotations

import difflib
import re

__all__ = ["tokens", "word_diff"]

# Han, kana and CJK punctuation/compatibility blocks: one token per character, because Chinese
# and Japanese are written without spaces. Hangul is not here: Korean separates words by spaces.
_CJK = "\u2e80-\u2fdf\u3000-\u30ff\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
# ASCII and Latin-1 punctuation and symbols, and the General Punctuation block: one token per
# character, so that "fox," against "fox" shows the comma, not the whole word, as changed.
_PUNCT = "!-/:-@\\[-`{-~\u00a1-\u00bf\u00d7\u00f7\u2010-\u205e"
_TOKEN = re.compile(rf"([{_CJK}{_PUNCT}]|[^\s{_CJK}{_PUNCT}]+)(\s*)")


def tokens(text: str) -> list[tuple[str, str]]:
    """Diff tokens, each with the white space that follows it: words (runs of letters and
    digits), single CJK characters and single punctuation marks. Leading white space is dropped.
    O(len(text)).

    Example:
        >>> tokens("東京は 晴れ, fine")
        [('東', ''), ('京', ''), ('は', ' '), ('晴', ''), ('れ', ''), (',', ' '), ('fine', '')]
    """
    return _TOKEN.findall(text)


def _joined(parts: list[tuple[str, str]]) -> str:
    """The tokens with the white space between them, without the last one's."""
    return "".join(token + space for token, space in parts[:-1]) + (parts[-1][0] if parts else "")


def word_diff(original: str, other: str) -> list[tuple[str, str]]:
    """``other`` against ``original`` as segments ``(op, text)``: op ``"equal"`` (in both),
    ``"delete"`` (only in ``original``) or ``"insert"`` (only in ``other``).

    The segments keep the white space of ``other``: joining the equal and inserted texts gives
    ``other`` back, minus leading white space. Removed tokens sit where they were, with the space
    before them in ``original`` (or after them, at the start). A changed run is a delete followed
    by an insert. Tokens: :func:`tokens`. difflib's matcher, O(t²) in the worst case for t
    tokens.

    Example:
        >>> word_diff("the cat sat", "the dog sat")
        [('equal', 'the '), ('delete', 'cat'), ('insert', 'dog'), ('equal', ' sat')]
    """
    a, b = tokens(original), tokens(other)
    out: list[tuple[str, str]] = []

    def add(op: str, text: str) -> None:
        if out and op == "equal" and out[-1][0] == "equal":
            out[-1] = ("equal", out[-1][1] + text)
        elif text:
            out.append((op, text))

    # The space after the last token written: it goes after a removal at that place, and
    # before whatever comes next from ``other``.
    pending = ""
    matcher = difflib.SequenceMatcher(None, [t for t, _ in a], [t for t, _ in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "delete":
            removed = _joined(a[i1:i2])
            add("delete", a[i1 - 1][1] + removed if i1 > 0 else removed + a[i2 - 1][1])
            continue
        add("equal", pending)
        if op == "replace":
            add("delete", _joined(a[i1:i2]))
        add("equal" if op == "equal" else "insert", _joined(b[j1:j2]))
        pending = b[j2 - 1][1]
    add("equal", pending)
    return out
