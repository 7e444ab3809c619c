"""Labelled truth and predictions, read from files or built from arrays (SPEC §8).

Truth comes in two kinds:

* **labelled pairs** (``id_a``, ``id_b``, ``label`` [, ``category``] …, :class:`PairTruth`),
  usually a *sample* of pairs judged by people; labels are 1/0, true/false, or categories of
  which some are named positive (``positive_labels``);
* **clusters** (``id``, ``cluster``, :class:`ClusterTruth`): every pair of documents in one
  cluster is a duplicate, every other pair of truth documents is not.

Predictions (:class:`Prediction`) are GROUPS files (``id``, ``duplicate_id`` …, as ``neardup
dedup`` writes) or PAIRS files (``id_a``, ``id_b`` …, as ``neardup pairs`` and ``--pairs-out``
write, or from any other system). Files are TSV, CSV, JSON Lines or Parquet (:func:`read_table`);
the kind is told by the columns.

Example:
    >>> t = PairTruth.from_arrays(["a", "a"], ["b", "c"], ["cut", "non"], "cut")
    >>> t.positive.tolist(), t.categories
    ([True, False], ['cut', 'non'])
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from neardup.io import OUTPUT_FORMATS, InputError, read_tsv_table
from neardup.io.files import FORMAT_OF_EXTENSION, split_name
from neardup.quality.metrics import dense_codes

#: Kinds of truth: labelled pairs or clusters.
TRUTH_KINDS = ("pairs", "clusters")
#: Kinds of prediction: one group label per document, or a list of duplicate pairs.
PREDICTION_KINDS = ("groups", "pairs")
#: Columns that hold a document's group in a GROUPS prediction, in order of preference.
GROUP_COLUMNS = ("duplicate_id", "original_id", "group", "cluster")

_TRUE_LABELS = ("1", "1.0", "true")
_FALSE_LABELS = ("0", "0.0", "false")


def _str_array(values, name: str) -> np.ndarray:
    """IDs / labels as an object array of ``str`` (numbers become their decimal text)."""
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got shape {arr.shape}")
    if arr.dtype.kind in "iuU":
        return arr.astype(str).astype(object)
    arr = arr.astype(object, copy=False)
    bad = np.flatnonzero(pd.isna(arr))
    if bad.size:
        raise ValueError(f"{name} must not hold missing values; row {int(bad[0])} is missing")
    if arr.size and pd.api.types.infer_dtype(arr, skipna=False) != "string":
        arr = np.asarray([v if isinstance(v, str) else str(v) for v in arr], dtype=object)
    return arr


def _parse_positive_labels(positive_labels: str | Iterable[str] | None) -> list[str] | None:
    if positive_labels is None:
        return None
    items = (
        positive_labels.split(",") if isinstance(positive_labels, str) else list(positive_labels)
    )
    parsed = [str(x).strip().lower() for x in items if str(x).strip()]
    if not parsed:
        raise ValueError(f"positive_labels must name at least one label; got {positive_labels!r}")
    return list(dict.fromkeys(parsed))


def parse_labels(labels, positive_labels: str | Iterable[str] | None = None) -> np.ndarray:
    """Labels → bool array (True = near-duplicate).

    Without ``positive_labels`` every label must be 1/0 or true/false (any case; 1.0/0.0 too).
    With ``positive_labels`` (a comma-separated string or a list, compared without case) those
    labels are positive and every other label negative; each named label must occur.
    Cost: O(m) plus a Python step per *distinct* label.

    Raises ``ValueError`` naming the bad label and the labels found.

    Example:
        >>> parse_labels(["1", "0", "true", "FALSE"]).tolist()
        [True, False, True, False]
        >>> parse_labels(["cut", "heavy", "light", "non"], "cut,light").tolist()
        [True, False, True, False]
    """
    series = pd.Series(np.asarray(labels, dtype=object), dtype=object)
    if series.isna().any():
        raise ValueError(
            f"labels must not be missing; row {int(np.flatnonzero(series.isna())[0])} is"
        )
    norm = series.astype(str).str.strip().str.lower().to_numpy(dtype=object)
    uniques, inverse = (
        np.unique(norm, return_inverse=True)
        if norm.size
        else (np.array([]), np.array([], dtype=np.int64))
    )
    found = ", ".join(map(str, uniques[:20])) + (" …" if len(uniques) > 20 else "")
    wanted = _parse_positive_labels(positive_labels)
    if wanted is None:
        value = np.zeros(len(uniques), dtype=bool)
        for i, u in enumerate(uniques):
            if u in _TRUE_LABELS:
                value[i] = True
            elif u not in _FALSE_LABELS:
                raise ValueError(
                    f"labels must be 1/0 or true/false; got {u!r} (labels found: {found}); "
                    "name the positive labels with positive_labels (--positive-labels), "
                    "e.g. cut,light"
                )
    else:
        missing = [w for w in wanted if w not in set(uniques.tolist())]
        if missing:
            raise ValueError(
                f"positive label {missing[0]!r} does not occur in the labels "
                f"(labels found: {found})"
            )
        value = np.isin(uniques, np.asarray(wanted, dtype=object))
    return value[inverse].astype(bool) if norm.size else np.zeros(0, dtype=bool)


@dataclass
class PairTruth:
    """Labelled pairs: the answers people gave for a sample of pairs.

    Attributes:
        id_a, id_b: object arrays of document IDs (str), one labelled pair per row, each
            unordered pair once, never a document with itself.
        positive: bool, True for a near-duplicate pair.
        category: object array of str (per-category breakdown), or None.
        categories: the category names in report order (positive-only categories first, in
            the order of ``positive_labels``, then the others in order of appearance).
        duplicate_rows: repeated rows of the same unordered pair that were dropped.
    """

    id_a: np.ndarray
    id_b: np.ndarray
    positive: np.ndarray
    category: np.ndarray | None = None
    categories: list[str] = field(default_factory=list)
    duplicate_rows: int = 0
    kind = "pairs"

    @classmethod
    def from_arrays(
        cls,
        id_a: Sequence,
        id_b: Sequence,
        labels: Sequence,
        positive_labels: str | Iterable[str] | None = None,
        category: Sequence | None = None,
    ) -> PairTruth:
        """Validate and build labelled pairs.

        ``labels`` are parsed by :func:`parse_labels`. The category of each pair is ``category``
        when given, else the label itself when ``positive_labels`` names categorical labels,
        else none. A pair labelled twice (either orientation) is kept once; twice with
        different labels raises ``ValueError``, as does a pair of a document with itself.
        Cost: O(m log m).

        Example:
            >>> labels = ["cut", "non", "cut"]
            >>> t = PairTruth.from_arrays(["a", "b", "c"], ["x", "x", "x"], labels, "cut")
            >>> t.positive.tolist(), t.categories
            ([True, False, True], ['cut', 'non'])
        """
        a = _str_array(id_a, "id_a")
        b = _str_array(id_b, "id_b")
        if not (a.shape == b.shape == (len(labels),)):
            raise ValueError(
                "id_a, id_b and labels must have the same length; "
                f"got {a.shape[0]}, {b.shape[0]}, {len(labels)}"
            )
        if a.size == 0:
            raise ValueError("labelled pairs must hold at least one pair; got 0")
        positive = parse_labels(labels, positive_labels)
        self_pairs = np.flatnonzero(a == b)
        if self_pairs.size:
            i = int(self_pairs[0])
            raise ValueError(
                "a labelled pair must join two different documents; "
                f"row {i} pairs {a[i]!r} with itself"
            )
        cat = None
        if category is not None:
            cat = _str_array(category, "category")
        elif positive_labels is not None:
            cat = (
                pd.Series(np.asarray(labels, dtype=object))
                .astype(str)
                .str.strip()
                .to_numpy(dtype=object)
            )
        lo = np.where(a < b, a, b)
        hi = np.where(a < b, b, a)
        frame = pd.DataFrame({"lo": lo, "hi": hi, "pos": positive})
        first = ~frame.duplicated(["lo", "hi"], keep="first").to_numpy()
        conflict = frame.drop_duplicates(["lo", "hi", "pos"]).duplicated(["lo", "hi"], keep=False)
        if conflict.any():
            row = frame.drop_duplicates(["lo", "hi", "pos"])[conflict.to_numpy()].iloc[0]
            raise ValueError(
                f"pair ({row['lo']!r}, {row['hi']!r}) is labelled both positive and negative"
            )
        dropped = int((~first).sum())
        a, b, positive = a[first], b[first], positive[first]
        categories: list[str] = []
        if cat is not None:
            cat = cat[first]
            codes, names = pd.factorize(cat)
            names = [str(x) for x in names]
            pos_count = np.bincount(codes, weights=positive, minlength=len(names))
            all_pos = pos_count == np.bincount(codes, minlength=len(names))
            wanted = _parse_positive_labels(positive_labels) or []
            rank = {w: i for i, w in enumerate(wanted)}
            categories = sorted(
                names,
                key=lambda c: (
                    0 if all_pos[names.index(c)] else 1,
                    rank.get(c.lower(), len(rank)),
                    names.index(c),
                ),
            )
        return cls(a, b, positive, cat, categories, dropped)

    @property
    def ids(self) -> np.ndarray:
        """The distinct document IDs of the labelled pairs."""
        return pd.unique(np.concatenate([self.id_a, self.id_b]))

    def __len__(self) -> int:
        return self.id_a.shape[0]


@dataclass
class ClusterTruth:
    """Truth clusters: every pair of documents in one cluster is a near-duplicate pair.

    Attributes:
        ids: object array of distinct document IDs (str).
        cluster: int64 dense cluster code of each document.
    """

    ids: np.ndarray
    cluster: np.ndarray
    kind = "clusters"

    @classmethod
    def from_arrays(cls, ids: Sequence, cluster: Sequence) -> ClusterTruth:
        """Validate and build truth clusters (any cluster labels; IDs must be distinct).

        Cost: O(n log n). Example:
            >>> ClusterTruth.from_arrays(["a", "b", "c"], ["x", "y", "x"]).cluster.tolist()
            [0, 1, 0]
        """
        i = _str_array(ids, "ids")
        if len(cluster) != i.shape[0]:
            raise ValueError(
                f"ids and cluster must have the same length; got {i.shape[0]} and {len(cluster)}"
            )
        if i.size == 0:
            raise ValueError("truth clusters must hold at least one document; got 0")
        dup = pd.Series(i).duplicated()
        if dup.any():
            bad = i[int(np.flatnonzero(dup.to_numpy())[0])]
            raise ValueError(
                f"truth clusters: id {bad!r} appears more than once (each id has one cluster)"
            )
        return cls(i, dense_codes(np.asarray(cluster, dtype=object), "cluster"))

    def __len__(self) -> int:
        return self.ids.shape[0]


@dataclass
class Prediction:
    """What a run predicted: a group per document (``kind="groups"``) or duplicate pairs
    (``kind="pairs"``).

    Attributes:
        kind: "groups" or "pairs".
        ids, group: documents and their group labels (groups), else None.
        id_a, id_b: the listed pairs (pairs), else None.
    """

    kind: str
    ids: np.ndarray | None = None
    group: np.ndarray | None = None
    id_a: np.ndarray | None = None
    id_b: np.ndarray | None = None

    @classmethod
    def from_groups(cls, ids: Sequence, group: Sequence) -> Prediction:
        """A GROUPS prediction: ``group[i]`` (any label, e.g. the duplicate ID) of ``ids[i]``.

        Example:
            >>> Prediction.from_groups(["a", "b"], ["a", "a"]).kind
            'groups'
        """
        i = _str_array(ids, "ids")
        if len(group) != i.shape[0]:
            raise ValueError(
                f"ids and group must have the same length; got {i.shape[0]} and {len(group)}"
            )
        dup = pd.Series(i).duplicated()
        if dup.any():
            bad = i[int(np.flatnonzero(dup.to_numpy())[0])]
            raise ValueError(f"prediction: id {bad!r} appears in more than one row")
        group = np.asarray(group)
        missing = np.flatnonzero(pd.isna(group))
        if missing.size:
            raise ValueError(
                f"group must not hold missing values; row {int(missing[0])} is missing"
            )
        return cls("groups", ids=i, group=group)

    @classmethod
    def from_pairs(cls, id_a: Sequence, id_b: Sequence) -> Prediction:
        """A PAIRS prediction: documents ``id_a[i]`` and ``id_b[i]`` are near-duplicates.

        Example:
            >>> Prediction.from_pairs(["a"], ["b"]).kind
            'pairs'
        """
        a = _str_array(id_a, "id_a")
        b = _str_array(id_b, "id_b")
        if a.shape != b.shape:
            raise ValueError(
                f"id_a and id_b must have the same length; got {a.shape[0]} and {b.shape[0]}"
            )
        return cls("pairs", id_a=a, id_b=b)


def _table_format(path: str) -> str:
    fmt = FORMAT_OF_EXTENSION.get(split_name(str(path))[0])
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(
            f"cannot tell the format of {path!r} from its extension; expected .tsv, .csv, .jsonl "
            "(.json, .ndjson) or .parquet, optionally followed by .gz or .zst"
        )
    return fmt


def _arrow_to_frame(table: pa.Table) -> pd.DataFrame:
    data = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.cast(t.value_type)
            t = column.type
        if pa.types.is_nested(t):
            data[name] = column.to_pandas().to_numpy(dtype=object)
            continue
        data[name] = pc.cast(column, pa.string()).to_numpy(zero_copy_only=False)
    return pd.DataFrame(data)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a TSV, CSV, JSON Lines or Parquet table (format from the extension, ``.gz`` / ``.zst``
    allowed) as a DataFrame whose scalar cells are ``str`` (nulls: None; empty TSV/CSV cells: "").

    TSV is read as :func:`neardup.io.write_table` writes it, by :func:`neardup.io.read_tsv_table`:
    never quoted, ``\\t`` ``\\n`` ``\\r`` ``\\\\`` unescaped, a row with the wrong number of
    fields an error naming its line. Numbers in JSON Lines / Parquet become their decimal text
    (``7`` → "7"), booleans "true" / "false". Cost: O(file size).

    Raises :class:`neardup.io.InputError` for an unreadable file, ``ValueError`` for an unknown
    extension, ``FileNotFoundError`` for a missing file.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
        >>> _ = p.write_text('{"id": 7, "cluster": "x"}\\n')
        >>> read_table(p).to_dict("list")
        {'id': ['7'], 'cluster': ['x']}
    """
    path = str(path)
    fmt = _table_format(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    if fmt == "tsv":
        return _arrow_to_frame(read_tsv_table(path))
    try:
        if fmt == "csv":
            frame = pd.read_csv(
                path,
                sep=",",
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                quoting=csv.QUOTE_MINIMAL,
                compression="infer",
                encoding="utf-8",
            )
            return pd.DataFrame({c: frame[c].to_numpy(dtype=object) for c in frame.columns})
        if fmt == "jsonl":
            with pa.input_stream(path, compression="detect") as stream:
                table = pa_json.read_json(stream)
        else:
            table = pq.read_table(path)
    except (
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        pa.ArrowException,
        UnicodeDecodeError,
    ) as e:
        raise InputError(path, None, None, f"cannot read the {fmt} table", str(e).strip()) from e
    return _arrow_to_frame(table)


def _require(frame: pd.DataFrame, path: str, names: Sequence[str]) -> None:
    for name in names:
        if name not in frame.columns:
            raise InputError(
                path,
                None,
                name,
                f"missing column '{name}'",
                "columns: " + ", ".join(map(str, frame.columns)),
            )


def _column(frame: pd.DataFrame, path: str, name: str, fmt: str) -> np.ndarray:
    values = frame[name].to_numpy(dtype=object)
    bad = np.flatnonzero(pd.isna(values) | (values == ""))
    if bad.size:
        first = int(bad[0])
        line = first + 2 if fmt in ("tsv", "csv") else first + 1
        unit = "row" if fmt == "parquet" else "line"
        raise InputError(path, line, name, f"empty '{name}'", unit=unit)
    return values


def read_truth(
    path: str | os.PathLike, positive_labels: str | Iterable[str] | None = None
) -> PairTruth | ClusterTruth:
    """Read truth: labelled pairs (columns ``id_a``, ``id_b``, ``label`` [, ``category``], others
    ignored) or clusters (``id``, ``cluster``), told apart by the columns.

    ``positive_labels`` (labelled pairs only) names the positive labels when labels are
    categories, e.g. ``"cut,light"``. Rows with an empty label (pairs of a labelling sheet not
    labelled yet, or skipped) are left out. See :meth:`PairTruth.from_arrays`.
    Cost: O(file size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
        >>> _ = p.write_text("id_a\\tid_b\\tlabel\\na\\tb\\tcut\\na\\tc\\tnon\\n")
        >>> read_truth(p, "cut").positive.tolist()
        [True, False]
    """
    path = str(path)
    fmt = _table_format(path)
    frame = read_table(path)
    columns = set(frame.columns)
    if {"id_a", "id_b"} <= columns:
        _require(frame, path, ["label"])
        # A labelling sheet keeps the pairs not labelled yet (or skipped) with an empty label.
        label_text = frame["label"].astype("string").str.strip()
        frame = frame[label_text.notna() & (label_text != "")].reset_index(drop=True)
        category = _column(frame, path, "category", fmt) if "category" in columns else None
        try:
            return PairTruth.from_arrays(
                _column(frame, path, "id_a", fmt),
                _column(frame, path, "id_b", fmt),
                _column(frame, path, "label", fmt),
                positive_labels,
                category,
            )
        except InputError:
            raise
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    if {"id", "cluster"} <= columns:
        if positive_labels is not None:
            raise ValueError(f"{path}: positive_labels applies to labelled pairs, not to clusters")
        try:
            return ClusterTruth.from_arrays(
                _column(frame, path, "id", fmt), _column(frame, path, "cluster", fmt)
            )
        except InputError:
            raise
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    raise ValueError(
        f"{path}: columns {', '.join(map(str, frame.columns))} are neither labelled pairs "
        "(id_a, id_b, label) nor clusters (id, cluster)"
    )


def read_prediction(path: str | os.PathLike) -> Prediction:
    """Read a prediction: PAIRS (columns ``id_a``, ``id_b`` …) or GROUPS (``id`` and one of
    ``duplicate_id``, ``original_id``, ``group``, ``cluster``), told apart by the columns.

    A PAIRS file with a ``label`` column keeps only its positive rows (1/true). Cost: O(file size).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "groups.csv"
        >>> _ = p.write_text("id,duplicate_id\\na,a\\nb,a\\n")
        >>> read_prediction(p).group.tolist()
        ['a', 'a']
    """
    path = str(path)
    fmt = _table_format(path)
    frame = read_table(path)
    columns = set(frame.columns)
    try:
        if {"id_a", "id_b"} <= columns:
            a = _column(frame, path, "id_a", fmt)
            b = _column(frame, path, "id_b", fmt)
            if "label" in columns:
                keep = parse_labels(_column(frame, path, "label", fmt))
                a, b = a[keep], b[keep]
            return Prediction.from_pairs(a, b)
        if "id" in columns:
            for name in GROUP_COLUMNS:
                if name in columns:
                    return Prediction.from_groups(
                        _column(frame, path, "id", fmt), _column(frame, path, name, fmt)
                    )
    except InputError:
        raise
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e
    raise ValueError(
        f"{path}: columns {', '.join(map(str, frame.columns))} are neither GROUPS "
        f"(id and one of {', '.join(GROUP_COLUMNS)}) nor PAIRS (id_a, id_b)"
    )


def id_index(ids, name: str = "ids") -> pd.Index:
    """A pandas Index over document IDs, to find each ID's position; ``ValueError`` naming
    ``name`` and the first repeated ID when they are not distinct. O(n).

    Example:
        >>> id_index(["a", "b"]).get_indexer(["b", "x"]).tolist()
        [1, -1]
    """
    index = pd.Index(np.asarray(ids, dtype=object))
    if not index.is_unique:
        bad = index[index.duplicated()][0]
        raise ValueError(f"{name} must be distinct; {bad!r} appears more than once")
    return index
