"""Stratified samples of candidate pairs for hand labelling, and the labelling session.

Measuring precision and recall (``SPEC.md`` §8) needs labels on pairs spread over the *whole*
similarity range, not only on the pairs one setting accepts. :func:`sample_pairs`:

1. **candidates** over the range of interest: for SimHash every pair within ``max_distance``
   bits (exact, Manku permutation tables); for MinHash the LSH bands tuned for
   ``min_similarity``, then the exact Jaccard of the shingle sets, keeping pairs at or above
   ``min_similarity``. Documents with the same normalised text are collapsed first to their
   earliest member (in input order); pairs among them are trivially near-duplicates, so they are
   counted (``exact_duplicates``) but not sampled.
2. **strata**: one per Hamming distance (``d00``, ``d01``, …) or Jaccard bins of width 0.05
   (``j0.30-0.35``, …; the last bin ``j0.95-1.00`` includes 1).
3. **draw**: up to ``per_stratum`` pairs per stratum, uniformly without replacement (seeded); the
   drawn rows are shuffled so that the labeller does not see them grouped by stratum.

Every row carries its stratum's ``population`` (candidates in the stratum) and its ``weight``
(population / drawn, the inverse inclusion probability), so the precision of any rule over all
candidates is estimated as Σ weight·label / Σ weight over the labelled rows it accepts.

The **sheet** (JSON Lines or TSV) has the columns ``id_a, id_b, distance|similarity, stratum,
population, weight, text_a, text_b, label``; ``label`` is 1 (near-duplicate), 0 (not) or empty
(not labelled yet, or skipped). TSV text is escaped as :func:`neardup.io.write_table` does
(``\\t``, ``\\n``, ``\\r``, ``\\\\``), so each row is one line.

:class:`LabelSession` is the logic of ``neardup label``: it walks the unlabelled rows, records
``y`` / ``n`` answers, skips (``s``), goes back (``b``), quits (``q``), and rewrites the sheet
atomically after every label, so a session can stop at any time and resume at the first
unlabelled row. :func:`diff_markup` shows what differs between two texts.

Example:
    >>> texts = ["the cat sat on the mat today and then it went to sleep for the whole afternoon",
    ...          "the cat sat on the mat today and then it went to sleep for the whole evening",
    ...          "a completely different text about something else with other words in it"]
    >>> s = sample_pairs(texts, method="simhash", max_distance=32, per_stratum=5, workers=1)
    >>> s.method, int(s.population.sum()) >= 1, [name.startswith("d") for name in s.stratum]
    ('simhash', True, [True])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neardup.candidates.bands import candidate_pairs
from neardup.candidates.plan import MAX_HAMMING_K
from neardup.candidates.tables import hamming_pairs
from neardup.diff import word_diff
from neardup.exact_duplicates import content_representatives
from neardup.io import InputError, tsv_unescape, write_records, write_table
from neardup.io.files import FORMAT_OF_EXTENSION, split_name
from neardup.io.rows import BadRow
from neardup.io.sources import json_object_line
from neardup.pipeline import Signatures
from neardup.settings import (
    DEFAULT_HASH_NAME,
    DEFAULT_METHOD,
    DEFAULT_NUM_PERM,
    DEFAULT_SCHEME,
    DEFAULT_WEIGHTS,
    Settings,
)
from neardup.text import normalize
from neardup.verify import jaccard_pairs

__all__ = [
    "BIN_WIDTH",
    "SHEET_FORMATS",
    "ANSWERS",
    "Stratum",
    "PairSample",
    "Sheet",
    "LabelSession",
    "range_pairs",
    "strata_keys",
    "draw_stratified",
    "sample_signatures",
    "sample_pairs",
    "sheet_columns",
    "sheet_format",
    "read_sheet",
    "write_sheet",
    "diff_markup",
    "same_after_normalisation",
    "describe_value",
]

BIN_WIDTH = 0.05
"""Width of the Jaccard strata."""
SHEET_FORMATS = ("jsonl", "tsv")
ANSWERS = {
    "y": "near-duplicate",
    "n": "not a near-duplicate",
    "s": "skip",
    "b": "back",
    "q": "quit",
}
_ALIASES = {
    "yes": "y",
    "1": "y",
    "no": "n",
    "0": "n",
    "skip": "s",
    "back": "b",
    "quit": "q",
    "exit": "q",
}
_BINS = int(round(1 / BIN_WIDTH))


@dataclass(frozen=True)
class Stratum:
    """One stratum of the candidate pairs.

    Attributes:
        name: ``dNN`` (Hamming distance NN) or ``jL-H`` (Jaccard in [L, H)).
        low, high: the stratum's range (distance: low = high; Jaccard: [low, high), 1 included
            in the last bin).
        population: candidate pairs in the stratum.
        drawn: pairs sampled from it.
    """

    name: str
    low: float
    high: float
    population: int
    drawn: int

    @property
    def weight(self) -> float:
        """Population / drawn: how many candidates each sampled pair stands for."""
        return self.population / self.drawn if self.drawn else 0.0


@dataclass
class PairSample:
    """A stratified sample of candidate pairs (document indices into the input).

    Attributes:
        method: ``"simhash"`` (``value`` = Hamming distance, uint8) or ``"minhash"`` (``value`` =
            exact Jaccard, float64).
        a, b: int64 document indices of the drawn pairs (``a < b``), in the sheet's row order.
        value: distance or similarity of each drawn pair.
        stratum: stratum name of each drawn pair.
        population, weight: per drawn pair, its stratum's population and population / drawn.
        strata: every non-empty stratum, in order.
        candidates: candidate pairs in the range (the sum of the populations).
        exact_duplicates: documents collapsed into an earlier one with the same normalised text.
    """

    method: str
    a: np.ndarray
    b: np.ndarray
    value: np.ndarray
    stratum: list[str]
    population: np.ndarray
    weight: np.ndarray
    strata: list[Stratum] = field(default_factory=list)
    candidates: int = 0
    exact_duplicates: int = 0

    def __len__(self) -> int:
        return int(self.a.shape[0])


def _check_max_distance(max_distance: int) -> int:
    if (
        isinstance(max_distance, bool)
        or not isinstance(max_distance, (int, np.integer))
        or not (0 <= max_distance <= MAX_HAMMING_K)
    ):
        raise ValueError(
            f"max_distance must be an integer in 0..{MAX_HAMMING_K}; got {max_distance!r}"
        )
    return int(max_distance)


def _check_min_similarity(min_similarity: float) -> float:
    if not isinstance(min_similarity, (int, float)) or not 0.0 < min_similarity < 1.0:
        raise ValueError(f"min_similarity must be in (0, 1); got {min_similarity!r}")
    return float(min_similarity)


def _check_per_stratum(per_stratum: int) -> int:
    integer = isinstance(per_stratum, (int, np.integer)) and not isinstance(per_stratum, bool)
    if not integer or per_stratum < 1:
        raise ValueError(f"per_stratum must be an integer >= 1; got {per_stratum!r}")
    return int(per_stratum)


def range_pairs(
    sig: Signatures,
    settings: Settings,
    *,
    max_distance: int = 16,
    min_similarity: float = 0.3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every candidate pair in the range of interest, among documents of distinct content.

    SimHash (``settings.method``): all pairs within ``max_distance`` bits (0..32), exact.
    MinHash: pairs equal on one LSH band (bands tuned for ``min_similarity`` unless
    ``settings`` forces them) whose exact shingle-set Jaccard is ≥ ``min_similarity``; needs the
    sets (``settings.verify`` not None). Documents with the same content fingerprint are
    represented by the first of them.

    Returns ``(a, b, value, exact_duplicates)``: int64 document indices with ``a < b`` sorted
    by (a, b), the uint8 distance or float64 Jaccard, and the number of collapsed documents.
    Cost: output-sized (see :func:`neardup.candidates.tables.hamming_pairs`: m documents with
    one fingerprint give m(m − 1)/2 pairs) plus the table search or O(n · bands) for LSH and
    O(Σ set sizes) for the Jaccard checks.

    Example:
        >>> from neardup.pipeline import signatures
        >>> s = Settings(method="simhash", shingle="word:1")
        >>> texts = ["a b c d e f g h", "A b c d e f g h!", "a b c d e f g x"]
        >>> a, b, d, dups = range_pairs(signatures(texts, s), s, max_distance=32)
        >>> a.tolist(), b.tolist(), dups
        ([0], [2], 1)
    """
    n = len(sig)
    reps = np.flatnonzero(content_representatives(sig.content, np.arange(n)) == np.arange(n))
    dups = n - int(reps.shape[0])
    if settings.method == "simhash":
        k = _check_max_distance(max_distance)
        i, j, dist = hamming_pairs(np.ascontiguousarray(sig.signature[reps]), k)
        return reps[i].astype(np.int64), reps[j].astype(np.int64), dist.astype(np.uint8), dups
    threshold = _check_min_similarity(min_similarity)
    if sig.set_offsets is None:
        raise ValueError(
            "MinHash range pairs need the shingle sets: build the signatures with "
            "a verify threshold (Settings(verify=...))"
        )
    if settings.bands is not None:
        bands, rows = settings.bands, settings.rows
    else:
        bands, rows = settings.replace(threshold=threshold).banding()
    i, j = candidate_pairs(np.ascontiguousarray(sig.signature[reps]), bands, rows, mode="all")
    a, b = reps[i].astype(np.int64), reps[j].astype(np.int64)
    sim = jaccard_pairs(sig.set_offsets, sig.set_hashes, a, b) if a.shape[0] else np.zeros(0)
    keep = sim >= threshold
    return a[keep], b[keep], sim[keep].astype(np.float64), dups


def strata_keys(
    values: np.ndarray, method: str
) -> tuple[np.ndarray, dict[int, tuple[str, float, float]]]:
    """The stratum of each pair: its distance (SimHash) or its Jaccard bin of width 0.05.

    Returns ``(keys, names)``: int64 keys (ascending order = stratum order) and, for each key
    present, ``(name, low, high)``. O(n).

    Example:
        >>> keys, names = strata_keys(np.array([0.31, 0.35, 1.0]), "minhash")
        >>> keys.tolist(), [names[k][0] for k in sorted(names)]
        ([6, 7, 19], ['j0.30-0.35', 'j0.35-0.40', 'j0.95-1.00'])
    """
    values = np.asarray(values)
    if method == "simhash":
        keys = values.astype(np.int64)
        names = {int(k): (f"d{int(k):02d}", float(k), float(k)) for k in np.unique(keys)}
        return keys, names
    if method != "minhash":
        raise ValueError(f"method must be one of simhash, minhash; got {method!r}")
    # The epsilon keeps 0.3 (= 0.29999… in binary) in the bin that starts at 0.30.
    keys = np.minimum(np.floor(values.astype(np.float64) * _BINS + 1e-9), _BINS - 1).astype(
        np.int64
    )
    names = {}
    for k in np.unique(keys).tolist():
        low, high = k / _BINS, (k + 1) / _BINS
        names[k] = (f"j{low:.2f}-{high:.2f}", low, high)
    return keys, names


def draw_stratified(
    keys: np.ndarray, per_stratum: int, rng: np.random.Generator | int
) -> tuple[np.ndarray, dict[int, int]]:
    """Up to ``per_stratum`` positions per key, uniformly without replacement.

    Returns ``(chosen, population)``: the chosen positions (sorted by key, then position) and the
    number of positions per key. ``rng`` is a numpy Generator or a seed. O(n log n).

    Example:
        >>> chosen, pop = draw_stratified(np.array([0, 0, 0, 1]), 2, 7)
        >>> len(chosen), pop
        (3, {0: 3, 1: 1})
    """
    per_stratum = _check_per_stratum(per_stratum)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    keys = np.asarray(keys, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    values, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
    chosen, population = [], {}
    for key, start, count in zip(values.tolist(), starts.tolist(), counts.tolist()):
        members = order[start : start + count]
        if count > per_stratum:
            members = np.sort(rng.choice(members, size=per_stratum, replace=False))
        chosen.append(members)
        population[key] = count
    out = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    return out.astype(np.int64), population


def sample_signatures(
    sig: Signatures,
    settings: Settings,
    *,
    per_stratum: int = 50,
    max_distance: int = 16,
    min_similarity: float = 0.3,
    seed: int = 1,
) -> PairSample:
    """Steps 1–3 of the module docstring on computed signatures.

    Cost: :func:`range_pairs` plus O(P log P) for the P candidate pairs.

    Example:
        >>> from neardup.pipeline import signatures
        >>> s = Settings(method="minhash", verify=0.2, shingle="word:1")
        >>> sig = signatures(["a b c d e", "a b c d f", "x y z"], s)
        >>> sample = sample_signatures(sig, s, min_similarity=0.2)
        >>> sample.stratum, sample.value.round(3).tolist()
        (['j0.65-0.70'], [0.667])
    """
    per_stratum = _check_per_stratum(per_stratum)
    a, b, value, dups = range_pairs(
        sig, settings, max_distance=max_distance, min_similarity=min_similarity
    )
    keys, names = strata_keys(value, settings.method)
    rng = np.random.default_rng(seed)
    chosen, population = draw_stratified(keys, per_stratum, rng)
    drawn = {k: min(p, per_stratum) for k, p in population.items()}
    chosen = chosen[rng.permutation(chosen.shape[0])]
    strata = [
        Stratum(names[k][0], names[k][1], names[k][2], population[k], drawn[k])
        for k in sorted(population)
    ]
    chosen_keys = keys[chosen].tolist()
    return PairSample(
        method=settings.method,
        a=a[chosen],
        b=b[chosen],
        value=value[chosen],
        stratum=[names[k][0] for k in chosen_keys],
        population=np.asarray([population[k] for k in chosen_keys], dtype=np.int64),
        weight=np.asarray([population[k] / drawn[k] for k in chosen_keys], dtype=np.float64),
        strata=strata,
        candidates=int(a.shape[0]),
        exact_duplicates=dups,
    )


def sample_pairs(
    texts: Sequence[str],
    *,
    method: str = DEFAULT_METHOD,
    shingle: str | None = None,
    per_stratum: int = 50,
    max_distance: int = 16,
    min_similarity: float = 0.3,
    seed: int = 1,
    num_perm: int = DEFAULT_NUM_PERM,
    hash_name: str = DEFAULT_HASH_NAME,
    weights: str = DEFAULT_WEIGHTS,
    workers: int | None = None,
    scheme: str = DEFAULT_SCHEME,
) -> PairSample:
    """A stratified sample of the candidate pairs of ``texts`` (module docstring).

    ``seed`` seeds both the MinHash permutations and the draw. ``workers`` processes compute
    the signatures (None = all cores). Cost: signatures O(total bytes) plus
    :func:`sample_signatures`.

    Example:
        >>> s = sample_pairs(["a b c d e f", "a b c d e g", "p q r s t u"], method="minhash",
        ...                  shingle="word:1", min_similarity=0.5, workers=1)
        >>> s.a.tolist(), s.b.tolist(), s.strata[0].name, s.strata[0].population
        ([0], [1], 'j0.70-0.75', 1)
    """
    from neardup.engines.local import signatures_parallel

    if method == "minhash":
        threshold = _check_min_similarity(min_similarity)
        settings = Settings(
            method="minhash",
            shingle=shingle,
            num_perm=num_perm,
            seed=seed,
            scheme=scheme,
            hash_name=hash_name,
            threshold=threshold,
            verify=threshold,
        )
    else:
        settings = Settings(
            method=method, shingle=shingle, hash_name=hash_name, weights=weights, verify=None
        )
        _check_max_distance(max_distance)
    sig = signatures_parallel(list(texts), settings, workers)
    return sample_signatures(
        sig,
        settings,
        per_stratum=per_stratum,
        max_distance=max_distance,
        min_similarity=min_similarity,
        seed=seed,
    )


# --------------------------------------------------------------------------- the sheet


def sheet_columns(sample: PairSample, ids: Sequence[str], texts: Sequence[str]) -> dict[str, list]:
    """The labelling sheet's columns for a sample of the documents ``ids`` / ``texts``.

    Example:
        >>> s = PairSample("simhash", np.array([0]), np.array([1]), np.array([2], np.uint8),
        ...                ["d02"], np.array([7]), np.array([7.0]))
        >>> cols = sheet_columns(s, ["x", "y"], ["text x", "text y"])
        >>> list(cols)[:4], cols["label"]
        (['id_a', 'id_b', 'distance', 'stratum'], [None])
    """
    value_name = "distance" if sample.method == "simhash" else "similarity"
    values = (
        sample.value.astype(np.int64).tolist()
        if sample.method == "simhash"
        else [round(float(v), 6) for v in sample.value]
    )
    a, b = sample.a.tolist(), sample.b.tolist()
    return {
        "id_a": [ids[i] for i in a],
        "id_b": [ids[j] for j in b],
        value_name: values,
        "stratum": list(sample.stratum),
        "population": sample.population.astype(np.int64).tolist(),
        "weight": [round(float(w), 6) for w in sample.weight],
        "text_a": [texts[i] for i in a],
        "text_b": [texts[j] for j in b],
        "label": [None] * len(a),
    }


def sheet_format(path: str | Path) -> str | None:
    """The format of the labelling sheet ``path`` names, ``jsonl`` or ``tsv``, told from its
    extension as the package tells every file's (:func:`neardup.io.files.split_name`), or None
    if it names no sheet: another format, or a compressed file (sheets are edited by hand).
    O(len(path)).

    Example:
        >>> sheet_format("s.TSV"), sheet_format("s.ndjson"), sheet_format("s.tsv.gz")
        ('tsv', 'jsonl', None)
    """
    ext, compression = split_name(str(path))
    fmt = FORMAT_OF_EXTENSION.get(ext)
    return fmt if fmt in SHEET_FORMATS and compression is None else None


def _sheet_format(path: str | Path) -> str:
    fmt = sheet_format(path)
    if fmt is None:
        raise ValueError(f"sheet must be a .jsonl or .tsv file; got {str(path)!r}")
    return fmt


def _parse_label(value, path: str, line: int) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1", "0.0", "1.0"):
        return int(float(value))
    raise InputError(path, line, "label", "label must be 1, 0 or empty", f"got {value!r}")


@dataclass
class Sheet:
    """A labelling sheet in memory: its columns in order and its rows (dicts).

    ``label`` values are 1, 0 or None; other values are kept as read (strings for TSV), so
    :meth:`save` writes back the other columns unchanged.
    """

    path: str
    columns: list[str]
    rows: list[dict]

    @property
    def format(self) -> str:
        return _sheet_format(self.path)

    @property
    def labelled(self) -> int:
        """Rows with a label."""
        return sum(row["label"] is not None for row in self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def save(self) -> None:
        """Rewrite the sheet atomically (a temporary file renamed over it). O(sheet size)."""
        write_sheet(self.path, {c: [row.get(c) for row in self.rows] for c in self.columns})


def write_sheet(path: str | Path, columns: dict[str, list]) -> None:
    """Write sheet columns as JSON Lines (``label`` null when empty) or TSV (escaped text, label
    empty), atomically. The column ``label`` must be present. O(sheet size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.tsv"
        >>> write_sheet(p, {"id_a": ["x"], "id_b": ["y"], "text_a": ["a\\tb"], "label": [None]})
        >>> p.read_text()
        'id_a\\tid_b\\ttext_a\\tlabel\\nx\\ty\\ta\\\\tb\\t\\n'
    """
    fmt = _sheet_format(path)
    if "label" not in columns:
        raise ValueError(f"a sheet needs a label column; got columns {', '.join(columns)}")
    if fmt == "tsv":
        write_table(
            path,
            {
                c: ["" if v is None else str(v) for v in values] if c == "label" else values
                for c, values in columns.items()
            },
        )
        return
    names = list(columns)
    n = len(columns["label"])
    write_records(path, ({c: columns[c][i] for c in names} for i in range(n)))


def read_sheet(path: str | Path) -> Sheet:
    """Read a sheet written by :func:`write_sheet` (or by hand: TSV with a header, or JSON
    Lines). Needs the columns ``id_a``, ``id_b`` and ``label``. Raises :class:`InputError`
    naming the line of a bad row. O(sheet size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
        >>> write_sheet(p, {"id_a": ["x"], "id_b": ["y"], "label": [1]})
        >>> read_sheet(p).rows
        [{'id_a': 'x', 'id_b': 'y', 'label': 1}]
    """
    fmt = _sheet_format(path)
    name = str(path)
    rows: list[dict] = []
    lines: list[int] = []
    columns: list[str] = []
    with open(name, encoding="utf-8") as fh:
        if fmt == "tsv":
            header = fh.readline().rstrip("\r\n")
            columns = [tsv_unescape(c) for c in header.split("\t")] if header else []
            for line_no, line in enumerate(fh, start=2):
                line = line.rstrip("\r\n")
                if not line:
                    continue
                cells = line.split("\t")
                if len(cells) > len(columns):
                    raise InputError(
                        name,
                        line_no,
                        None,
                        "more cells than columns",
                        f"expected {len(columns)}, got {len(cells)}",
                    )
                # Editors may drop the empty cells at the end of a row.
                cells += [""] * (len(columns) - len(cells))
                rows.append(dict(zip(columns, (tsv_unescape(c) for c in cells))))
                lines.append(line_no)
        else:
            seen: dict[str, None] = {}
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                row = json_object_line(line, line_no)
                if type(row) is BadRow:
                    raise InputError(name, line_no, *row)
                seen.update(dict.fromkeys(row))
                rows.append(row)
                lines.append(line_no)
            columns = list(seen)
    missing = [c for c in ("id_a", "id_b", "label") if c not in columns]
    if missing and not (fmt == "jsonl" and not rows):  # an empty JSON Lines sheet has no columns
        raise InputError(
            name,
            None,
            None,
            f"sheet lacks column(s) {', '.join(missing)}",
            f"has {', '.join(columns) or 'none'}",
        )
    for row, line_no in zip(rows, lines):
        row["label"] = _parse_label(row.get("label"), name, line_no)
    return Sheet(name, columns, rows)


# --------------------------------------------------------------------------- the session


class LabelSession:
    """Walks the unlabelled rows of a sheet and records the answers.

    ``current`` is the row shown (None when no unlabelled row is left). Answers
    (:meth:`answer`): ``y`` label 1, ``n`` label 0 (the sheet is saved after each), ``s`` skip
    (the row stays unlabelled, and is not shown again in this session), ``b`` back to the row
    shown before (before any answer of this session: the row above), ``q`` quit. After a label
    the session goes on at the next row below that is neither labelled nor skipped, so a new
    session starts at the first unlabelled row.

    Example:
        >>> sheet = Sheet("mem.tsv", ["id_a", "id_b", "label"],
        ...               [{"id_a": str(i), "id_b": "x", "label": None} for i in range(3)])
        >>> session = LabelSession(sheet, save=lambda s: None)
        >>> [session.answer(k) for k in "ynby"]
        [True, True, True, True]
        >>> [r["label"] for r in sheet.rows], session.current
        ([1, 1, None], 2)
    """

    def __init__(self, sheet: Sheet, save: Callable[[Sheet], None] | None = None):
        self.sheet = sheet
        self.save = save if save is not None else Sheet.save
        self.history: list[int] = []
        self.skipped: set[int] = set()
        self.message = ""
        self.current: int | None = self._next(-1)

    def _next(self, after: int) -> int | None:
        for k in range(after + 1, len(self.sheet.rows)):
            if self.sheet.rows[k]["label"] is None and k not in self.skipped:
                return k
        return None

    @property
    def done(self) -> bool:
        """No row left to show."""
        return self.current is None

    def answer(self, key: str) -> bool:
        """Apply one answer (``y n s b q`` or yes/no/skip/back/quit/1/0); False when the
        session is over (quit, or no row left). An unknown answer changes nothing and sets
        ``message``."""
        key = key.strip().lower()
        key = _ALIASES.get(key, key)
        self.message = ""
        if key == "q":
            return False
        if self.current is None:
            return False
        if key in ("y", "n"):
            self.sheet.rows[self.current]["label"] = 1 if key == "y" else 0
            self.save(self.sheet)
            self.skipped.discard(self.current)
            self.history.append(self.current)
            self.current = self._next(self.current)
        elif key == "s":
            if self.sheet.rows[self.current]["label"] is None:
                self.skipped.add(self.current)
            self.history.append(self.current)
            self.current = self._next(self.current)
        elif key == "b":
            if self.history:
                self.current = self.history.pop()
            elif self.current > 0:
                self.current -= 1
            else:
                self.message = "already at the first pair"
        else:
            choices = ", ".join(f"{k} = {v}" for k, v in ANSWERS.items())
            self.message = f"answer one of {choices}; got {key!r}"
        return self.current is not None


# --------------------------------------------------------------------------- diffs


def diff_markup(a: str, b: str, plain: bool = False) -> str:
    """:func:`neardup.diff.word_diff` as rich console markup: removed tokens red and struck
    through, added ones green; with ``plain`` (for output without colours) ``[-removed-]`` and
    ``{+added+}`` instead. O(t²) tokens at worst.

    Example:
        >>> diff_markup("a b [c]", "a x [c]")
        'a [red strike]b[/red strike] [green]x[/green] \\\\[c]'
        >>> diff_markup("a b c", "a x c", plain=True)
        'a [-b-] {+x+} c'
    """
    from rich.markup import escape

    parts = []
    previous = "equal"
    for op, text in word_diff(a, b):
        if op == "insert" and previous == "delete":
            # A space keeps the struck and the added run apart, so that they read as two.
            parts.append(" ")
        previous = op
        if plain:
            parts.append(escape({"delete": f"[-{text}-]", "insert": f"{{+{text}+}}"}.get(op, text)))
        elif op == "delete":
            parts.append(f"[red strike]{escape(text)}[/red strike]")
        elif op == "insert":
            parts.append(f"[green]{escape(text)}[/green]")
        else:
            parts.append(escape(text))
    return "".join(parts)


def same_after_normalisation(a: str, b: str) -> bool:
    """Whether two texts differ only in formatting (equal normalised texts, spaces ignored).

    Example:
        >>> same_after_normalisation("Hello,\\nWORLD", "hello world!")
        True
    """
    return normalize(a).replace(" ", "") == normalize(b).replace(" ", "")


def describe_value(row: dict) -> str:
    """``distance 3`` / ``similarity 0.812`` for a sheet row, or empty without either column.

    Example:
        >>> describe_value({"distance": "3"}), describe_value({"similarity": 0.8123})
        ('distance 3', 'similarity 0.812')
    """
    if row.get("distance") not in (None, ""):
        return f"distance {row['distance']}"
    if row.get("similarity") not in (None, ""):
        try:
            return f"similarity {float(row['similarity']):.3f}"
        except ValueError:
            return f"similarity {row['similarity']}"
    return ""
