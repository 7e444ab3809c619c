"""Inverse document frequencies of features, for IDF-weighted SimHash (``--weights idf``).

Seed 000 weights single words by how rare they are: a feature shared by many documents (a
template's words, boilerplate) should move a fingerprint less than a rare one. The table holds,
for every feature hash of a corpus, its document frequency df (documents containing it), the
corpus size N, and the weight of each feature:

    idf(df) = ln((1 + N) / (1 + df)) + 1
    weight  = round(idf · 2^16)            (an integer: fixed point with 16 fraction bits)

The smoothing (+1 inside, +1 outside) gives a feature never seen (df = 0) the largest weight,
ln(1 + N) + 1, and no feature a weight of 0. ``ln`` is numpy's float64 logarithm and the rounding
is to the nearest integer (ties to even); the weights are computed once, when the table is built,
and stored in it, so a saved table gives byte-identical fingerprints on any machine, and the
integer sums of :mod:`neardup.simhash` do not depend on the order of the features. 2^-16 is far
finer than the gap between the weights of df and df + 1 for corpora of up to about 10^4
documents, and for larger corpora only features with nearly equal df share a weight.

The table is computed from the corpus in a first pass and saved with the run
(:meth:`IdfTable.save`, Parquet), so the same table fingerprints new documents later (the index,
a crawler) with the same weights.

Example:
    >>> from neardup.text import hash_features
    >>> table = IdfTable.from_features([hash_features(["a b", "a c"], "word:1")], "word:1", "xxh")
    >>> table.documents, table.df.tolist()
    (2, [1, 1, 2])
    >>> table.weight.tolist(), table.unseen
    ([92109, 92109, 65536], 137535)
    >>> round(92109 / WEIGHT_SCALE, 4) == round(float(np.log(3 / 2)) + 1, 4)
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.hashing import DEFAULT_HASH_NAME
from neardup.io.atomic import atomic_write
from neardup.text import Features, Shingling, hash_features, shingle_sets

FORMAT = "neardup-idf-2"
# Weights are integers in units of 1 / WEIGHT_SCALE.
WEIGHT_SCALE = 1 << 16
_BATCH = 10_000


def idf_weights(df: np.ndarray | int, documents: int) -> np.ndarray:
    """Fixed-point IDF weights, int64: ``round((ln((1 + N) / (1 + df)) + 1) · 2^16)``.

    Example:
        >>> idf_weights(np.array([0, 1, 9]), 9).tolist()
        [216438, 171012, 65536]
    """
    df = np.asarray(df, dtype=np.float64)
    idf = np.log((1.0 + documents) / (1.0 + df)) + 1.0
    return np.rint(idf * WEIGHT_SCALE).astype(np.int64)


class IdfTable:
    """Document frequencies and fixed-point weights of feature hashes (sorted ``hashes``
    uint64, ``df`` int64, ``weight`` int64), over ``documents`` documents, for features made with
    ``shingle`` and ``hash_name``; ``unseen`` is the weight of a feature not in the table.

    ``weight`` and ``unseen`` default to :func:`idf_weights` of ``df``; a loaded table passes its
    stored values, so it gives the same fingerprints wherever it is used.
    """

    def __init__(
        self,
        hashes: np.ndarray,
        df: np.ndarray,
        documents: int,
        shingle: str,
        hash_name: str,
        weight: np.ndarray | None = None,
        unseen: int | None = None,
    ):
        hashes = np.asarray(hashes, dtype=np.uint64)
        df = np.asarray(df, dtype=np.int64)
        if hashes.shape != df.shape or hashes.ndim != 1:
            raise ValueError(
                f"hashes and df must be 1-d of one length; got {hashes.shape} and {df.shape}"
            )
        if hashes.size and not (hashes[1:] > hashes[:-1]).all():
            raise ValueError("hashes must be sorted and distinct")
        if documents < 0 or (df.size and (df.min() < 1 or df.max() > documents)):
            raise ValueError(f"df must be in 1..documents ({documents})")
        weight = idf_weights(df, documents) if weight is None else np.asarray(weight, np.int64)
        unseen = int(idf_weights(0, documents)) if unseen is None else int(unseen)
        if weight.shape != df.shape or (weight.size and weight.min() < 1) or unseen < 1:
            raise ValueError("weights must be positive integers, one per hash")
        self.hashes, self.df, self.documents = hashes, df, int(documents)
        self.weight, self.unseen = weight, unseen
        self.shingle, self.hash_name = str(Shingling.parse(shingle)), hash_name

    def __repr__(self) -> str:
        return (
            f"IdfTable({self.hashes.size:,} features over {self.documents:,} documents, "
            f"shingle={self.shingle}, hash={self.hash_name})"
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, IdfTable)
            and self.documents == other.documents
            and self.shingle == other.shingle
            and self.hash_name == other.hash_name
            and self.unseen == other.unseen
            and np.array_equal(self.hashes, other.hashes)
            and np.array_equal(self.df, other.df)
            and np.array_equal(self.weight, other.weight)
        )

    __hash__ = None  # mutable arrays inside

    @classmethod
    def from_features(cls, batches: Iterable[Features], shingle: str, hash_name: str) -> IdfTable:
        """Count, over batches of hashed documents, how many documents hold each feature.

        Memory: O(distinct features of the corpus); time O(total features × log), batch by
        batch (each batch's distinct features are merged into the running counts).
        """
        hashes = np.zeros(0, dtype=np.uint64)
        df = np.zeros(0, dtype=np.int64)
        documents = 0
        for features in batches:
            documents += len(features)
            _, set_hashes, _ = shingle_sets(features.offsets, features.hashes)
            merged = np.concatenate([hashes, set_hashes])
            counts = np.concatenate([df, np.ones(set_hashes.shape[0], dtype=np.int64)])
            order = np.argsort(merged, kind="stable")
            merged, counts = merged[order], counts[order]
            head = np.ones(merged.shape[0], dtype=bool)
            head[1:] = merged[1:] != merged[:-1]
            starts = np.flatnonzero(head)
            hashes = merged[starts]
            df = np.add.reduceat(counts, starts) if starts.size else counts[:0]
        return cls(hashes, df, documents, shingle, hash_name)

    @classmethod
    def from_texts(
        cls, texts: Sequence[str], shingle: str = "word:1", hash_name: str = DEFAULT_HASH_NAME
    ) -> IdfTable:
        """The table of a list of texts (hashed in batches of 10,000).

        Example:
            >>> IdfTable.from_texts(["a b", "a c"]).df.tolist()
            [1, 1, 2]
        """
        texts = list(texts)
        batches = (
            hash_features(texts[i : i + _BATCH], shingle, hash_name)
            for i in range(0, len(texts), _BATCH)
        )
        return cls.from_features(batches, shingle, hash_name)

    def weights(self, feature_hashes: np.ndarray) -> np.ndarray:
        """int64 fixed-point weight of each hash (``unseen`` for hashes not in the table).
        O(len × log table size)."""
        feature_hashes = np.asarray(feature_hashes, dtype=np.uint64)
        if not self.hashes.size:
            return np.full(feature_hashes.shape, self.unseen, dtype=np.int64)
        where = np.minimum(np.searchsorted(self.hashes, feature_hashes), self.hashes.size - 1)
        return np.where(self.hashes[where] == feature_hashes, self.weight[where], self.unseen)

    def save(self, path: str | os.PathLike) -> None:
        """Write the table as Parquet (columns ``hash`` uint64, ``df`` int64, ``weight`` int64;
        the corpus size, the unseen weight, shingling and hash in the file's metadata),
        atomically."""
        table = pa.table(
            {
                "hash": pa.array(self.hashes, pa.uint64()),
                "df": pa.array(self.df, pa.int64()),
                "weight": pa.array(self.weight, pa.int64()),
            }
        )
        table = table.replace_schema_metadata(
            {
                "format": FORMAT,
                "documents": str(self.documents),
                "unseen": str(self.unseen),
                "weight_scale": str(WEIGHT_SCALE),
                "shingle": self.shingle,
                "hash_name": self.hash_name,
            }
        )
        with atomic_write(path) as fh:
            pq.write_table(table, fh)

    @classmethod
    def load(cls, path: str | os.PathLike) -> IdfTable:
        """Read a table written by :meth:`save`; ValueError naming the file if it is not one."""
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            raise ValueError(f"{os.fspath(path)}: not a readable IDF table ({error})") from None
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        if meta.get("format") != FORMAT or {"hash", "df", "weight"} - set(table.column_names):
            raise ValueError(
                f"{os.fspath(path)}: not an IDF table written by neardup "
                f"(format {meta.get('format')!r}, expected {FORMAT!r})"
            )
        return cls(
            table.column("hash").to_numpy(),
            table.column("df").to_numpy(),
            int(meta["documents"]),
            meta["shingle"],
            meta["hash_name"],
            table.column("weight").to_numpy(),
            int(meta["unseen"]),
        )

    def check(self, shingle: str, hash_name: str) -> None:
        """Raise ValueError unless the table was made with these features."""
        shingle = str(Shingling.parse(shingle))
        if (shingle, hash_name) != (self.shingle, self.hash_name):
            raise ValueError(
                f"the IDF table was computed for --shingle {self.shingle} --hash-name {self.hash_name}, "
                f"not --shingle {shingle} --hash-name {hash_name}"
            )
