"""A self-contained HTML report of a dedup run, to look at what it decided before deleting.

One file, no network access needed to open it (styles, the script and the charts are inline):

- the summary: documents, groups, duplicates removed, largest group, seconds per stage and the
  settings of the run;
- two charts (inline SVG): group sizes, and the reported pairs' distances (SimHash) or
  similarities (MinHash) with the run's threshold marked;
- the largest groups, each member shown against its original with a word-level diff;
- borderline pairs: the reported pairs nearest the threshold, with the same diff;
- a filter box that finds a document ID among the documents that have a near-duplicate.

Big runs stay small, by rules the page states: at most ``max_groups`` groups (largest first,
ties by the original's input position) with ``max_members`` members each (first in input
order), ``max_pairs`` borderline pairs (weakest first), texts cut at ``max_chars`` characters,
and a filter index of the first documents (input order) that belong to a group of two or more:
at most ``max_index`` of them and ``max_index_bytes`` bytes of IDs. So the page stays a few MB
whatever the size of the run (measured in docs/report.md). The page is a pure function of the
run (no date, no randomness): the same run gives the same bytes.

Word diff: :func:`diff_html` marks up :func:`neardup.diff.word_diff`, which compares tokens,
words for scripts written with spaces (Latin, Hangul ...) and single characters for Chinese and
Japanese, which are written without spaces.

Example:
    >>> run = RunData.from_columns(
    ...     ids=["a", "b", "c"], original_ids=["a", "a", "c"], pair_ids=(["a"], ["b"]),
    ...     pair_values=[0.9], value_name="similarity", threshold=0.7)
    >>> html = render(run, {0: "the cat sat", 1: "the cat sat down", 2: "dogs"})
    >>> "the cat sat" in html and "sat <ins>down</ins>" in html
    True
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from neardup.diff import word_diff

MAX_GROUPS = 20
MAX_MEMBERS = 6
MAX_PAIRS = 20
MAX_CHARS = 3_000
MAX_INDEX = 200_000
MAX_INDEX_BYTES = 2_000_000


@dataclass
class RunData:
    """What the report shows of a run, indexed by input position.

    Attributes:
        ids: document IDs (object[n]), input order.
        original: int64[n], position of each document's original.
        pair_a, pair_b: int64 positions of the reported pairs (``pair_a`` the original for
            ``--pairs original``).
        pair_value: float64 distances (bits) or similarities (Jaccard) of the pairs.
        value_name: ``"distance"`` or ``"similarity"``.
        threshold: the run's Hamming k or Jaccard threshold (None if unknown).
        settings: the run's options, shown as given.
        stats: counts and ``seconds`` per stage, shown when present.
    """

    ids: np.ndarray
    original: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_value: np.ndarray
    value_name: str = "similarity"
    threshold: float | None = None
    settings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    @classmethod
    def from_columns(
        cls,
        ids: Sequence[str],
        original_ids: Sequence[str],
        pair_ids: tuple[Sequence[str], Sequence[str]] = ((), ()),
        pair_values: Sequence[float] = (),
        value_name: str = "similarity",
        threshold: float | None = None,
        settings: dict | None = None,
        stats: dict | None = None,
    ) -> RunData:
        """From the columns of GROUPS (``id``, ``original_id``) and PAIRS (``id_a``, ``id_b``,
        the value). Raises ValueError naming an ID that GROUPS does not hold. O(n + pairs)."""
        if value_name not in ("distance", "similarity"):
            raise ValueError(f"value_name must be 'distance' or 'similarity'; got {value_name!r}")
        id_array = np.asarray(list(ids), dtype=object)
        position = {ident: i for i, ident in enumerate(id_array.tolist())}

        def positions(names: Sequence[str], what: str) -> np.ndarray:
            out = np.empty(len(names), dtype=np.int64)
            for i, name in enumerate(names):
                try:
                    out[i] = position[name]
                except KeyError:
                    raise ValueError(f"{what} names {name!r}, which is not in GROUPS") from None
            return out

        return cls(
            ids=id_array,
            original=positions(list(original_ids), "original_id"),
            pair_a=positions(list(pair_ids[0]), "PAIRS id_a"),
            pair_b=positions(list(pair_ids[1]), "PAIRS id_b"),
            pair_value=np.asarray(list(pair_values), dtype=np.float64),
            value_name=value_name,
            threshold=threshold,
            settings=dict(settings or {}),
            stats=dict(stats or {}),
        )

    @property
    def group_size(self) -> np.ndarray:
        """int64[n], members of each document's group."""
        return np.bincount(self.original, minlength=len(self.ids))[self.original]


@dataclass
class Selection:
    """The documents the page shows: groups (original, members) and borderline pairs."""

    groups: list[tuple[int, list[int], int]]  # (original, shown members, group size)
    pairs: list[tuple[int, int, float]]
    index: list[int]  # positions listed in the filter index
    index_total: int  # documents in groups of two or more

    def positions(self) -> list[int]:
        """Every position whose text the page shows, ascending."""
        shown = {o for o, _, _ in self.groups}
        shown.update(m for _, members, _ in self.groups for m in members)
        shown.update(x for a, b, _ in self.pairs for x in (a, b))
        return sorted(shown)


def select(
    run: RunData,
    max_groups: int = MAX_GROUPS,
    max_members: int = MAX_MEMBERS,
    max_pairs: int = MAX_PAIRS,
    max_index: int = MAX_INDEX,
    max_index_bytes: int = MAX_INDEX_BYTES,
) -> Selection:
    """Choose what the page shows, by the rules of the module docstring. O(n log n + pairs)."""
    for name, value in (
        ("max_groups", max_groups),
        ("max_members", max_members),
        ("max_pairs", max_pairs),
        ("max_index", max_index),
        ("max_index_bytes", max_index_bytes),
    ):
        if value < 0:
            raise ValueError(f"{name} must be ≥ 0; got {value}")
    n = len(run.ids)
    sizes = np.bincount(run.original, minlength=n)
    originals = np.flatnonzero(sizes > 1)
    # Largest first; ties by the original's input position (lexsort: last key is primary).
    order = originals[np.lexsort((originals, -sizes[originals]))][:max_groups]
    members_of: dict[int, list[int]] = {int(o): [] for o in order}
    for position in np.flatnonzero(np.isin(run.original, order)).tolist():
        o = int(run.original[position])
        if position != o and len(members_of[o]) < max_members:
            members_of[o].append(position)
    groups = [(int(o), members_of[int(o)], int(sizes[o])) for o in order]

    pairs: list[tuple[int, int, float]] = []
    if len(run.pair_value):
        # Borderline = farthest from a certain duplicate: largest distance, lowest similarity.
        value = run.pair_value if run.value_name == "distance" else -run.pair_value
        nearest = np.lexsort((run.pair_b, run.pair_a, -value))[:max_pairs]
        pairs = [
            (int(run.pair_a[i]), int(run.pair_b[i]), float(run.pair_value[i])) for i in nearest
        ]

    in_groups = np.flatnonzero(sizes[run.original] > 1)
    listed = in_groups[:max_index]
    id_bytes = np.cumsum(
        [len(str(run.ids[p]).encode("utf-8")) for p in listed.tolist()], dtype=np.int64
    )
    listed = listed[: int(np.searchsorted(id_bytes, max_index_bytes, side="right"))]
    return Selection(groups, pairs, listed.tolist(), int(in_groups.shape[0]))


def describe_settings(settings) -> dict[str, str]:
    """The options that decided a run's groups, as the page shows them: those of its method
    only, with the LSH banding worked out. ``settings`` is a :class:`neardup.pipeline.Settings`.

    Example:
        >>> from neardup.settings import Settings
        >>> describe_settings(Settings(method="simhash"))["near-duplicates"]
        'Hamming distance ≤ 3 bits'
    """
    shown = {
        "method": settings.method,
        "shingles": settings.shingle,
        "feature hash": settings.hash_name,
    }
    if settings.method == "simhash":
        weights = settings.weights
        if settings.idf is not None:
            weights += f" ({settings.idf.documents:,}-document IDF table)"
        shown.update(
            {"weights": weights, "near-duplicates": f"Hamming distance ≤ {settings.hamming_k} bits"}
        )
    else:
        bands, rows = settings.banding()
        if settings.verify is None:
            decides = f"MinHash estimate of Jaccard ≥ {settings.threshold:g}"
        elif settings.verify_measure == "lcs":
            decides = f"LCS resemblance ≥ {settings.verify:g} (words kept in order)"
        else:
            decides = f"Jaccard ≥ {settings.verify:g}"
        shown.update(
            {
                "permutations": str(settings.num_perm),
                "seed": str(settings.seed),
                "scheme": settings.scheme,
                "near-duplicates": decides,
                "LSH bands × rows": f"{bands} × {rows}",
            }
        )
    if settings.verify is None:
        verification = "none"
    elif settings.verify_measure == "lcs":
        verification = (
            f"LCS resemblance ≥ {settings.verify:g} (words; Hangul, kana, Han by character)"
        )
    else:
        verification = f"exact Jaccard ≥ {settings.verify:g}"
    shown.update(
        {"verification": verification, "grouping": settings.grouping, "pairs": settings.pairs}
    )
    return shown


def _value_axis(run: RunData) -> str:
    """What the pairs' values measure, as the run decided them (the ``verification`` of its
    settings): the axis of their chart."""
    if run.value_name == "distance":
        return "Hamming distance (bits)"
    verification = str(run.settings.get("verification", ""))
    if verification.startswith("LCS"):
        return "LCS resemblance"
    if verification.startswith("exact Jaccard"):
        return "Jaccard similarity"
    if verification == "none":
        return "MinHash estimate of Jaccard"
    return "similarity"


def diff_html(original: str, other: str) -> str:
    """HTML of ``other`` against ``original`` (:func:`neardup.diff.word_diff`): removed tokens in
    ``<del>``, added in ``<ins>``.

    Re-wrapped lines are not changes; the result keeps the white space of ``other``, and removed
    tokens sit where they were. Stripping the ``<del>`` elements and the tags gives ``other``
    back, minus leading white space. Every token is escaped, so any text is safe to embed.
    O(t²) in the worst case for t tokens (difflib), bounded by the report's ``max_chars``.

    Example:
        >>> diff_html("the lazy cat sat", "the cat sat down")
        'the<del> lazy</del> cat sat <ins>down</ins>'
        >>> diff_html("the cat sat", "the dog sat")
        'the <del>cat</del><ins>dog</ins> sat'
    """
    tags = {"delete": "del", "insert": "ins"}
    out = []
    for op, text in word_diff(original, other):
        text = html.escape(text)
        out.append(text if op == "equal" else f"<{tags[op]}>{text}</{tags[op]}>")
    return "".join(out)


def _bins_group_sizes(sizes: np.ndarray) -> tuple[list[str], list[int]]:
    """Groups by size in powers of two: 1, 2, 3–4, 5–8, ..."""
    labels, counts = [], []
    top = int(sizes.max()) if sizes.size else 1
    lo, hi = 1, 1
    while lo <= top:
        labels.append(str(lo) if lo == hi else f"{lo}–{hi}")
        counts.append(int(np.count_nonzero((sizes >= lo) & (sizes <= hi))))
        lo, hi = hi + 1, hi * 2
    return labels, counts


def _bins_values(run: RunData) -> tuple[list[str], list[int], float | None]:
    """Pair values binned: one bin per bit (distance) or per 0.05 of similarity, and where the
    threshold lies, in bins from the left edge (None if unknown): after bin k for a Hamming k,
    at threshold / 0.05 for a Jaccard threshold."""
    values = run.pair_value
    if run.value_name == "distance":
        top = max(int(values.max()) if values.size else 0, int(run.threshold or 0))
        counts = np.bincount(values.astype(np.int64), minlength=top + 1)
        mark = None if run.threshold is None else int(run.threshold) + 1.0
        return [str(i) for i in range(top + 1)], counts.tolist(), mark
    edges = np.round(np.arange(0, 1.0001, 0.05), 2)
    # The epsilon keeps values on an edge (0.7 = 14 × 0.05 in floating point) in the upper bin.
    idx = np.clip(np.floor(values / 0.05 + 1e-9).astype(np.int64), 0, len(edges) - 2)
    counts = np.bincount(idx, minlength=len(edges) - 1)
    mark = None if run.threshold is None else float(run.threshold) / 0.05
    return [f"{edges[i]:.2f}" for i in range(len(edges) - 1)], counts.tolist(), mark


def svg_bars(
    labels: Sequence[str],
    counts: Sequence[int],
    title: str,
    x_label: str,
    mark: float | None = None,
    mark_label: str = "",
    beyond: str | None = None,
) -> str:
    """A bar chart as inline SVG (log-scaled bar heights, exact counts in tooltips).

    ``mark`` draws a dashed line that many bars from the left edge, labelled ``mark_label``;
    ``beyond`` ("left" or "right") greys the bars wholly on that side of it. O(len(labels)).

    Example:
        >>> "<svg" in svg_bars(["1", "2"], [5, 1], "t", "x")
        True
    """
    if beyond not in (None, "left", "right"):
        raise ValueError(f"beyond must be 'left', 'right' or None; got {beyond!r}")
    width, height, left, bottom, top = 640, 250, 50, 40, 40
    n = max(1, len(labels))
    bar = (width - left - 10) / n
    peak = math.log10(max(max(counts, default=1), 1) + 1)
    parts = [
        (
            f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{html.escape(title)}">'
        ),
        f'<text x="{width / 2}" y="16" class="title">{html.escape(title)}</text>',
    ]
    for i, (label, count) in enumerate(zip(labels, counts)):
        h = 0 if count == 0 else (height - bottom - top) * math.log10(count + 1) / peak
        x = left + i * bar
        y = height - bottom - h
        greyed = mark is not None and (
            beyond == "left" and i + 1 <= mark or beyond == "right" and i >= mark
        )
        parts.append(
            f'<rect class="{"bar beyond" if greyed else "bar"}" x="{x + 1:.1f}" '
            f'y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}">'
            f"<title>{html.escape(label)}: {count:,}</title></rect>"
        )
        if n <= 12 or i % math.ceil(n / 12) == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 14}" class="tick">'
                f"{html.escape(label)}</text>"
            )
    if mark is not None:
        x = left + mark * bar
        # The label sits above the plot, left of the line when the line is far right.
        anchor, dx = ("end", -4) if x > width * 0.75 else ("start", 4)
        parts.append(
            f'<line class="threshold" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 10}" '
            f'y2="{height - bottom}"/><text x="{x + dx:.1f}" y="{top - 2}" '
            f'class="mark" text-anchor="{anchor}">{html.escape(mark_label)}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 6}" class="axis">{html.escape(x_label)}</text></svg>'
    )
    return "".join(parts)


def _beyond_threshold(run: RunData, values: np.ndarray) -> np.ndarray:
    """bool per value: on the far side of the run's threshold (never, when it is unknown)."""
    if run.threshold is None:
        return np.zeros(values.shape[0], dtype=bool)
    if run.value_name == "distance":
        return values > run.threshold
    return values < run.threshold


def _value_text(run: RunData, value: float) -> str:
    return f"{int(value)} bits" if run.value_name == "distance" else f"similarity {value:.3f}"


def _member_values(run: RunData, chosen: Selection) -> dict[tuple[int, int], float]:
    """The reported value of each shown (original, member) pair, where PAIRS holds it (either
    way round: ``--pairs all`` orders a pair by input position). O(pairs)."""
    shown = {(o, m) for o, members, _ in chosen.groups for m in members}
    if not shown:
        return {}
    members = [m for _, m in shown]
    values = {}
    for i in np.flatnonzero(np.isin(run.pair_a, members) | np.isin(run.pair_b, members)):
        a, b = int(run.pair_a[i]), int(run.pair_b[i])
        for key in ((a, b), (b, a)):
            if key in shown:
                values[key] = float(run.pair_value[i])
    return values


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + " …"


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return str(value)


# Labels of the run's counters (``Groups.stats``) in the summary table.
_STAT_NAMES = {
    "candidates": "candidate pairs",
    "rejected": "rejected by verification",
    "linked_untested": "linked already, not verified",
    "exact_duplicates": "exact duplicates",
    "empty_documents": "empty documents",
}

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans","Noto Sans CJK KR","Noto Sans CJK JP",sans-serif;
margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.facts,.charts{display:flex;flex-wrap:wrap;gap:1em 2.5em;align-items:flex-start}
caption{text-align:left;font-weight:bold;padding:.2em .8em}
.chart{flex:1 1 440px;max-width:540px;height:auto;display:block;margin:1em 0}
.chart .bar{fill:#4a7fb5}.chart .bar.beyond{fill:#b9b9b9}
.chart .threshold{stroke:#c0392b;stroke-width:2;stroke-dasharray:4 3}
.chart text{font-size:11px;text-anchor:middle;fill:#333}.chart .title{font-size:14px}
.chart .mark{fill:#c0392b}
.group{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}
.doc{white-space:pre-wrap;word-break:break-word;background:#fafafa;padding:.5em;border-radius:4px;font-size:.9em}
.meta{color:#666;font-size:.85em}
del{background:#fdd;text-decoration:line-through}ins{background:#dfd;text-decoration:none}
#filter{font-size:1em;padding:.3em;width:24em}#matches li{font-family:monospace}
.note{color:#555;font-size:.9em}
.beyond{color:#c0392b;font-size:.75em;font-weight:normal}
"""

_SCRIPT = """
(function(){
  var index = JSON.parse(document.getElementById('index-data').textContent);
  var box = document.getElementById('filter'), list = document.getElementById('matches');
  var count = document.getElementById('match-count');
  box.addEventListener('input', function(){
    var q = box.value.trim(); list.innerHTML = '';
    if (!q) { count.textContent = ''; return; }
    var found = 0;
    for (var i = 0; i < index.length; i++) {
      var row = index[i];
      if (row[0].indexOf(q) < 0) continue;
      found++;
      if (found > 50) continue;
      // row: [ID, its original (a row number in this list, or the ID), group size]
      var original = typeof row[1] === 'number' ? index[row[1]][0] : row[1];
      var li = document.createElement('li');
      li.textContent = row[0] + (original === row[0] ? ' \\u2192 the original'
        : ' \\u2192 duplicate of ' + original) + ' (group of ' + row[2].toLocaleString('en-US') + ') ';
      li.setAttribute('data-id', row[0]);
      if (document.getElementById('group-' + original)) {
        var link = document.createElement('a');
        link.href = '#group-' + encodeURIComponent(original);
        link.textContent = 'show the group';
        li.appendChild(link);
      }
      list.appendChild(li);
    }
    count.textContent = found + ' document(s) found' + (found > 50 ? ', first 50 shown' : '');
  });
})();
"""


def render(
    run: RunData,
    texts: Mapping[int, str],
    title: str = "neardup report",
    *,
    max_groups: int = MAX_GROUPS,
    max_members: int = MAX_MEMBERS,
    max_pairs: int = MAX_PAIRS,
    max_chars: int = MAX_CHARS,
    max_index: int = MAX_INDEX,
    max_index_bytes: int = MAX_INDEX_BYTES,
) -> str:
    """The report page as one HTML string.

    ``texts`` maps input positions to texts; it needs the positions of
    :meth:`Selection.positions` (missing ones are shown as unavailable). Cost: O(n log n) for the
    selection plus the diffs of the shown texts (each at most ``max_chars`` characters).
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be ≥ 1; got {max_chars}")
    chosen = select(run, max_groups, max_members, max_pairs, max_index, max_index_bytes)
    ids = run.ids
    sizes = run.group_size
    n = len(ids)
    originals = np.flatnonzero(run.original == np.arange(n))
    group_sizes = np.bincount(run.original, minlength=n)[originals]

    def text(position: int) -> str:
        value = texts.get(position)
        return "(text not available)" if value is None else _cut(value, max_chars)

    def doc_id(position: int) -> str:
        return html.escape(str(ids[position]))

    out = [
        '<!DOCTYPE html><html lang="und"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]

    out.append(
        '<nav class="meta"><a href="#summary">summary</a> · <a href="#charts">charts</a> · '
        '<a href="#find">find a document</a> · <a href="#groups">largest groups</a> · '
        '<a href="#borderline">borderline pairs</a></nav>'
    )

    summary = [
        ("documents", n),
        ("groups", int(originals.shape[0])),
        ("documents removed (duplicates)", n - int(originals.shape[0])),
        ("largest group", int(group_sizes.max()) if group_sizes.size else 0),
        (f"pairs reported ({run.value_name})", int(run.pair_value.shape[0])),
    ]
    already = {"documents", "groups", "duplicates_removed", "largest_group", "pairs", "seconds"}
    summary += [
        (_STAT_NAMES.get(k, k.replace("_", " ")), v)
        for k, v in run.stats.items()
        if k not in already and not isinstance(v, dict)
    ]
    out.append('<h2 id="summary">Summary</h2><div class="facts"><table class="summary">')
    out += [
        f'<tr><th>{html.escape(k)}</th><td class="num">{_format(v)}</td></tr>' for k, v in summary
    ]
    out.append("</table>")
    seconds = run.stats.get("seconds") or {}
    if seconds:
        out.append('<table class="stages"><caption>seconds per stage</caption>')
        out += [
            f'<tr><th>{html.escape(k.replace("_", " "))}</th><td class="num">{v:,.3f}</td></tr>'
            for k, v in seconds.items()
        ]
        out.append("</table>")
    if run.settings:
        out.append('<table class="settings"><caption>settings</caption>')
        out += [
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in run.settings.items()
        ]
        out.append("</table>")
    out.append("</div>")
    if not seconds and not run.settings:
        out.append(
            '<p class="note">Settings and seconds per stage are not known: GROUPS and '
            "PAIRS files do not record them (a report written by the run itself, "
            "<code>neardup dedup --report</code>, shows them).</p>"
        )

    out.append('<h2 id="charts">Charts</h2><div class="charts">')
    labels, counts = _bins_group_sizes(group_sizes)
    out.append(svg_bars(labels, counts, "groups by size", "group size (documents)"))
    labels, counts, mark = _bins_values(run)
    unit = _value_axis(run)
    mark_label = (
        ""
        if run.threshold is None
        else (
            f"k = {int(run.threshold)}"
            if run.value_name == "distance"
            else f"threshold {run.threshold:g}"
        )
    )
    out.append(
        svg_bars(
            labels,
            counts,
            f"reported pairs by {run.value_name}",
            unit,
            mark,
            mark_label,
            "right" if run.value_name == "distance" else "left",
        )
    )
    out.append("</div>")
    out.append(
        '<p class="note">Bar heights are on a log scale; hover a bar for its count. '
        "Grey bars: pairs beyond the threshold (see borderline pairs)."
        + (
            ""
            if run.pair_value.shape[0]
            else " No pairs to show (none reported, or no PAIRS file given)."
        )
        + "</p>"
    )

    # An original listed in the index is named by its row number: each ID is written once.
    row_of = {p: row for row, p in enumerate(chosen.index)}
    index = [
        [str(ids[p]), row_of.get(int(run.original[p]), str(ids[run.original[p]])), int(sizes[p])]
        for p in chosen.index
    ]
    if len(index) == chosen.index_total:
        note = (
            f"all {chosen.index_total:,} documents that have a near-duplicate; a document "
            "not found is unique (a group of one)"
        )
    else:
        note = (
            f"the first {len(index):,} (input order) of the {chosen.index_total:,} "
            "documents that have a near-duplicate (the page holds at most "
            f"{max_index:,} of their IDs and {max_index_bytes / 1e6:g} MB); a document "
            "not found is unique or beyond those"
        )
    out.append(
        '<h2 id="find">Find a document</h2>'
        f'<p class="note">Searches {note}. A match whose group is shown below links to '
        "it.</p>"
        '<input id="filter" type="search" placeholder="document ID (or part of it)" '
        'autocomplete="off"><p id="match-count" class="meta"></p><ul id="matches"></ul>'
    )

    value_of = _member_values(run, chosen)
    out.append('<h2 id="groups">Largest groups</h2>')
    out.append(
        f'<p class="note">The {len(chosen.groups)} largest groups of two or more '
        f"(ties: the original earlier in the input), each with its first {max_members} "
        f"members in input order, shown against the original; texts are cut at "
        f"{max_chars:,} characters. Deleted words are <del>struck</del>, added ones "
        "<ins>highlighted</ins>.</p>"
    )
    for original, members, size in chosen.groups:
        out.append(
            f'<div class="group" id="group-{doc_id(original)}">'
            f"<h3>group of {size:,}: original {doc_id(original)}</h3>"
            f'<div class="doc original">{html.escape(text(original))}</div>'
        )
        for m in members:
            value = value_of.get((original, m))
            measured = "" if value is None else f" ({_value_text(run, value)} to the original)"
            out.append(
                f'<p class="meta">member {doc_id(m)}{measured}</p>'
                f'<div class="doc diff">{diff_html(text(original), text(m))}</div>'
            )
        if size - 1 > len(members):
            out.append(f'<p class="meta">… and {size - 1 - len(members):,} more members</p>')
        out.append("</div>")

    out.append('<h2 id="borderline">Borderline pairs</h2>')
    direction = "largest distances" if run.value_name == "distance" else "lowest similarities"
    beyond = _beyond_threshold(run, run.pair_value)
    out.append(
        f'<p class="note">The {len(chosen.pairs)} reported pairs with the {direction} '
        "(ties by input position): the weakest links, the ones to check first. When "
        "every near-duplicate pair is reported (<code>--pairs all</code>), these are the "
        "pairs nearest the threshold. When one pair per duplicate is reported, from its "
        "original (<code>--pairs original</code>, the default), a pair can lie beyond "
        "the threshold: the duplicate joined its group through another member. "
        f"Pairs beyond the threshold in this run: {int(beyond.sum()):,} of "
        f"{beyond.shape[0]:,}.</p>"
    )
    for a, b, value in chosen.pairs:
        flag = ""
        if _beyond_threshold(run, np.asarray([value]))[0]:
            flag = (
                ' <span class="beyond">beyond the threshold: joined through another member</span>'
            )
        out.append(
            f'<div class="group pair"><h3>{doc_id(a)} ↔ {doc_id(b)}: '
            f"{_value_text(run, value)}{flag}</h3>"
            f'<div class="doc original">{html.escape(text(a))}</div>'
            f'<div class="doc diff">{diff_html(text(a), text(b))}</div></div>'
        )

    # No "<" may reach the script element: "</script>" would end it and "<!--" would change
    # how the HTML parser looks for its end. In JSON strings, \u003c is the same character.
    payload = json.dumps(index, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    out.append(f'<script type="application/json" id="index-data">{payload}</script>')
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"
