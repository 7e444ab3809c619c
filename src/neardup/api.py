"""The Python API: the same operations as the command line, on strings, lists, numpy arrays and
pandas / Arrow tables.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": ["a", "b", "c"],
    ...                    "text": ["the cat sat on the mat today", "The cat sat on the mat, today!",
    ...                             "something else entirely here"]})
    >>> dedup(df, workers=1)[["id", "duplicate_id", "is_original"]].to_dict("list")
    {'id': ['a', 'b', 'c'], 'duplicate_id': ['a', 'a', 'c'], 'is_original': [True, False, True]}
    >>> fingerprint(["the cat sat on the mat"], workers=1).dtype
    dtype('uint64')
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from neardup.engines.local import fingerprint_texts, signatures_parallel
from neardup.groups import connected_components, document_order, originals_of
from neardup.io import DEFAULT_MAX_DOC_BYTES, read_table
from neardup.pipeline import (
    DEFAULT_METHOD,
    DEFAULT_SHINGLE,
    DEFAULT_SHINGLES,
    DEFAULT_THRESHOLD,
    Settings,
    check_method_options,
    find_groups,
)


def _texts(data, column: str | None) -> list[str]:
    """A list of str from a str, sequence, numpy array, pandas Series/DataFrame or Arrow data."""
    if isinstance(data, str):
        return [data]
    if hasattr(data, "column_names") and hasattr(data, "column"):  # pyarrow.Table
        return data.column(column or "text").to_pylist()
    if hasattr(data, "to_pylist"):  # pyarrow Array / ChunkedArray
        return data.to_pylist()
    if hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas.DataFrame
        return data[column or "text"].tolist()
    if hasattr(data, "tolist"):  # numpy array, pandas Series
        return list(data.tolist())
    return list(data)


def _check_texts(texts: list) -> list[str]:
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"text #{i} must be a str; got {type(text).__name__}: {text!r:.60}")
    return texts


def fingerprint(
    data,
    *,
    column: str | None = None,
    method: str = "simhash",
    shingle: str = "word:3",
    num_perm: int = 128,
    hash_name: str = "xxh",
    weights: str = "set",
    seed: int = 1,
    workers: int | None = None,
    idf=None,
) -> np.ndarray:
    """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]).

    ``data`` is a str, a sequence of str, a numpy array, a pandas Series, a DataFrame or Arrow
    table (``column``, default "text") or an Arrow array. ``workers`` None = all cores.
    ``shingle`` takes the feature options of :class:`neardup.text.Shingling` (``word:3:multiset``,
    ``stopword:3:ko`` …). ``weights="idf"`` needs ``idf``, a :class:`neardup.idf.IdfTable` made
    with the same ``shingle`` and ``hash_name`` (``IdfTable.from_texts(corpus, shingle)``, or
    ``IdfTable.load(path)`` to reuse a saved one).
    Cost: O(total bytes) plus O(shingles × 64) (SimHash) or O(shingles × num_perm) (MinHash).

    Example:
        >>> from neardup.idf import IdfTable
        >>> corpus = ["the cat sat on the mat", "the dog sat on the log"]
        >>> table = IdfTable.from_texts(corpus, "word:1")
        >>> fingerprint(corpus, shingle="word:1", weights="idf", idf=table, workers=1).shape
        (2,)
    """
    texts = _check_texts(_texts(data, column))
    return fingerprint_texts(texts, method=method, shingle=shingle, num_perm=num_perm,
                             hash_name=hash_name, weights=weights, seed=seed, workers=workers,
                             idf=idf)


def pairs_from_fingerprints(
    fingerprints: np.ndarray, hamming_k: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) of fingerprints within ``hamming_k`` bits, each once, with its distance.

    Identical fingerprints are pairs at distance 0. See :func:`neardup.candidates.tables.hamming_pairs`.

    Example:
        >>> a, b, d = pairs_from_fingerprints(np.array([0, 1, 0, 2**63], dtype=np.uint64), 1)
        >>> list(zip(a.tolist(), b.tolist(), d.tolist()))
        [(0, 1, 1), (0, 2, 0), (0, 3, 1), (1, 2, 1), (2, 3, 1)]
    """
    from neardup.candidates.tables import hamming_pairs

    return hamming_pairs(np.asarray(fingerprints, dtype=np.uint64), hamming_k)


def groups_from_pairs(
    n: int, a: np.ndarray, b: np.ndarray, timestamps: np.ndarray | None = None
) -> np.ndarray:
    """The original (index) of every document's group: connected components of the pairs, the
    earliest document (smallest timestamp, then index) being the original. O(n + pairs).

    Example:
        >>> groups_from_pairs(4, np.array([0, 2]), np.array([1, 3]), np.array([5, 1, 0, 0])).tolist()
        [1, 1, 2, 2]
    """
    stamps = np.zeros(n, dtype=np.int64) if timestamps is None else np.asarray(timestamps, np.int64)
    labels = connected_components(n, np.asarray(a, np.int64), np.asarray(b, np.int64))
    return originals_of(labels, document_order(stamps))


def dedup(
    data,
    *,
    text_column: str = "text",
    id_column: str | None = "id",
    time_column: str | None = None,
    workers: int | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    **options,
):
    """The whole job on a table: one row per document with its group.

    ``data``: a pandas DataFrame, an Arrow table or a mapping of columns, read by the rules of
    ``neardup dedup`` (:func:`neardup.io.read_table`): IDs unique strings or integers (``1`` and
    ``"1"`` are the same ID), texts strings, ``time_column`` seconds since the epoch, ISO 8601
    strings or datetimes (naive = UTC), the earliest document of a group being its original; a
    missing or unreadable value is an :class:`neardup.io.InputError` naming the row, or the row
    is dropped with ``on_error="skip"`` (their count in ``result.attrs["skipped_rows"]``).
    ``id_column=None`` numbers the rows from 0; so does a sequence of texts.
    ``options``: any :class:`neardup.pipeline.Settings` field (``method``, ``hamming_k``,
    ``threshold``, ``shingle``, ``grouping``, ``verify`` …); the defaults are those of
    ``neardup dedup``: MinHash over ``char:4`` shingles, candidates verified by the
    definition's rule (LCS resemblance ≥ 0.8, see :mod:`neardup.lcs`).

    Returns a pandas DataFrame with columns ``id, duplicate_id, original_id, is_original,
    group_size``, one row per document read, in input order.
    """
    import pandas as pd

    method = options.get("method", DEFAULT_METHOD)
    defaults = {"method": method, "shingle": DEFAULT_SHINGLES.get(method, DEFAULT_SHINGLE),
                "threshold": DEFAULT_THRESHOLD}
    settings = Settings(**{**defaults, **options})
    check_method_options(settings.method, options, options.get("verify", "auto"))
    if not (hasattr(data, "column_names") or hasattr(data, "iloc") or isinstance(data, Mapping)):
        data, id_column = {text_column: _texts(data, None)}, None
    reader = read_table(data, id_field=id_column, text_field=text_column, time_field=time_column,
                        on_error=on_error, max_doc_bytes=max_doc_bytes)
    batch = reader.read_all()
    texts, ids, stamps = batch.texts, batch.ids, batch.timestamps
    sig = signatures_parallel(texts, settings, workers, keep_sets=False)
    groups = find_groups(sig, stamps, settings, texts)
    id_array = np.asarray(ids, dtype=object)
    original_ids = id_array[groups.original]
    result = pd.DataFrame({
        "id": id_array,
        "duplicate_id": original_ids,
        "original_id": original_ids,
        "is_original": groups.is_original,
        "group_size": groups.group_size,
    })
    result.attrs["skipped_rows"] = reader.stats.skipped
    return result
