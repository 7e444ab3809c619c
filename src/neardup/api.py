"""The Python API: the same operations as the command line, on strings, lists, numpy arrays and
pandas / Arrow tables.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": ["a", "b", "c"],
    ...                    "text": ["the cat sat on the mat today", "The cat sat on the mat, today!",
    ...                             "something else entirely here"]})
    >>> dedup(df, workers=1)[["id", "duplicate_id", "is_original"]].to_dict("list")
    {'id': ['a', 'b', 'c'], 'duplicate_id': ['a', 'a', 'c'], 'is_original': [True, False, True]}
    >>> fingerprint(["the cat sat on the mat"], workers=1).shape   # MinHash-128, as dedup signs
    (1, 128)
    >>> fingerprint(["the cat sat on the mat"], method="simhash", workers=1).dtype
    dtype('uint64')
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from neardup.engines import Corpus, Outputs, engine_named
from neardup.groups import connected_components, document_order, originals_of
from neardup.io import DEFAULT_MAX_DOC_BYTES
from neardup.settings import (
    DEFAULT_HAMMING_K,
    DEFAULT_HASH_NAME,
    DEFAULT_METHOD,
    DEFAULT_NUM_PERM,
    DEFAULT_SCHEME,
    DEFAULT_SEED,
    DEFAULT_VERIFY,
    DEFAULT_WEIGHTS,
    Settings,
    check_method_options,
    renamed_keywords,
)


def _texts(data, text_field: str) -> list[str]:
    """A list of str from a str, sequence, numpy array, pandas Series/DataFrame or Arrow data."""
    if isinstance(data, str):
        return [data]
    if hasattr(data, "column_names") and hasattr(data, "column"):  # pyarrow.Table
        return data.column(text_field).to_pylist()
    if hasattr(data, "to_pylist"):  # pyarrow Array / ChunkedArray
        return data.to_pylist()
    if hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas.DataFrame
        return data[text_field].tolist()
    if hasattr(data, "tolist"):  # numpy array, pandas Series
        return list(data.tolist())
    return list(data)


def _check_texts(texts: list) -> list[str]:
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"text #{i} must be a str; got {type(text).__name__}: {text!r:.60}")
    return texts


@renamed_keywords(column="text_field")
def fingerprint(
    data,
    *,
    text_field: str = "text",
    method: str = DEFAULT_METHOD,
    shingle: str | None = None,
    num_perm: int = DEFAULT_NUM_PERM,
    hash_name: str = DEFAULT_HASH_NAME,
    weights: str = DEFAULT_WEIGHTS,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    idf=None,
    scheme: str = DEFAULT_SCHEME,
) -> np.ndarray:
    """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]).

    ``data`` is a str, a sequence of str, a numpy array, a pandas Series, a DataFrame or Arrow
    table (its column ``text_field``) or an Arrow array. ``workers`` None = all cores.
    ``shingle`` None takes the method's default, as ``neardup fingerprint`` does (SimHash
    word:3, MinHash char:4: :data:`neardup.settings.DEFAULT_SHINGLES`); it takes the feature
    options of :class:`neardup.text.Shingling` (``word:3:multiset``,
    ``stopword:3:ko`` …). ``weights="idf"`` needs ``idf``, a :class:`neardup.idf.IdfTable` made
    with the same ``shingle`` and ``hash_name`` (``IdfTable.from_texts(corpus, shingle)``, or
    ``IdfTable.load(path)`` to reuse a saved one).
    ``scheme`` is the MinHash signature scheme (:mod:`neardup.minhash`).
    Cost: O(total bytes) plus O(shingles × 64) (SimHash) or O(shingles + num_perm) (MinHash,
    ``scheme="oph"``; O(shingles × num_perm) with ``"classic"``).

    Example:
        >>> from neardup.idf import IdfTable
        >>> corpus = ["the cat sat on the mat", "the dog sat on the log"]
        >>> table = IdfTable.from_texts(corpus, "word:1")
        >>> fingerprint(corpus, method="simhash", shingle="word:1", weights="idf", idf=table,
        ...             workers=1).shape
        (2,)
    """
    texts = _check_texts(_texts(data, text_field))
    settings = Settings(
        method=method,
        shingle=shingle,
        num_perm=num_perm,
        hash_name=hash_name,
        weights=weights,
        seed=seed,
        scheme=scheme,
        verify=None,
        idf=idf,
    )
    return engine_named("local", workers=workers).fingerprint(texts, settings)


def pairs_from_fingerprints(
    fingerprints: np.ndarray, hamming_k: int = DEFAULT_HAMMING_K
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
    """The original (int64 index) of every document's group: connected components of the pairs,
    the earliest document (smallest timestamp, then index) being the original. O(n + pairs).

    Example:
        >>> groups_from_pairs(4, np.array([0, 2]), np.array([1, 3]), np.array([5, 1, 0, 0])).tolist()
        [1, 1, 2, 2]
    """
    stamps = np.zeros(n, dtype=np.int64) if timestamps is None else np.asarray(timestamps, np.int64)
    labels = connected_components(n, np.asarray(a, np.int64), np.asarray(b, np.int64))
    return originals_of(labels, document_order(stamps)).astype(np.int64, copy=False)


@renamed_keywords(text_column="text_field", id_column="id_field", time_column="time_field")
def dedup(
    data,
    *,
    text_field: str = "text",
    id_field: str | None = "id",
    time_field: str | None = None,
    workers: int | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    **options,
):
    """The whole job on a table: one row per document with its group.

    ``data``: a pandas DataFrame, an Arrow table or a mapping of columns, read by the rules of
    ``neardup dedup`` (:func:`neardup.io.read_table`): IDs unique strings or integers (``1`` and
    ``"1"`` are the same ID), texts strings, ``time_field`` seconds since the epoch, ISO 8601
    strings or datetimes (naive = UTC), the earliest document of a group being its original; a
    missing or unreadable value is an :class:`neardup.io.InputError` naming the row, or the row
    is dropped with ``on_error="skip"`` (their count in ``result.attrs["skipped_rows"]``).
    ``id_field=None`` numbers the rows from 0; so does a sequence of texts. The fields are named
    as ``neardup dedup --id-field/--text-field/--time-field`` names them (``id_column``,
    ``text_column`` and ``time_column`` are their deprecated names).
    ``options``: any :class:`neardup.settings.Settings` field (``method``, ``hamming_k``,
    ``threshold``, ``shingle``, ``grouping``, ``verify`` …), with its defaults, which are those
    of ``neardup dedup``: MinHash over ``char:4`` shingles, candidates verified by the
    definition's rule (LCS resemblance ≥ 0.8, see :mod:`neardup.lcs`).

    Returns a pandas DataFrame with columns ``id, duplicate_id, original_id, is_original,
    group_size``, one row per document read, in input order. Cost: that of ``neardup dedup``
    on the same documents, in memory.

    Example:
        >>> import pandas as pd
        >>> table = pd.DataFrame({"doc": ["a", "b"], "body": ["x y z w", "x y z w!"]})
        >>> dedup(table, id_field="doc", text_field="body", workers=1)["original_id"].tolist()
        ['a', 'a']
    """
    import pandas as pd

    settings = Settings(**options)
    check_method_options(settings.method, options, options.get("verify", DEFAULT_VERIFY))
    if not (hasattr(data, "column_names") or hasattr(data, "iloc") or isinstance(data, Mapping)):
        data, id_field = {text_field: _texts(data, text_field)}, None
    corpus = Corpus(
        table=data,
        reading={
            "id_field": id_field,
            "text_field": text_field,
            "time_field": time_field,
            "on_error": on_error,
            "max_doc_bytes": max_doc_bytes,
        },
    )
    run = engine_named("local", workers=workers).dedup(corpus, settings, Outputs())
    # The IDs come as Arrow columns; pandas takes them as arrays of Python strings.
    result = pd.DataFrame(
        {
            name: column.to_numpy() if isinstance(column, pa.ChunkedArray) else column
            for name, column in run.groups.items()
        }
    )
    result.attrs["skipped_rows"] = run.read.skipped
    return result
