"""Inverse document frequencies of features, for IDF-weighted SimHash (``--weights idf``).

Seed 000 weights single words by how rare they are: a feature shared by many documents (a
template's words, boilerplate) should move a fingerprint less than a rare one. The table holds,
for every feature hash of a corpus, its document frequency df (documents containing it), and the
corpus size N. The weight of a feature is

    idf(h) = ln((1 + N) / (1 + df(h))) + 1

(smoothed: a feature never seen, df = 0, gets the largest weight, and no weight is 0). Weights are
computed in float64 from the stored integers, so a table gives the same fingerprints on any
machine. The table is computed from the corpus in a first pass and saved with the run
(:meth:`IdfTable.save`, Parquet), so the same table can fingerprint new documents later (the
index, a crawler) with the same weights.

Example:
    >>> from neardup.text import hash_features
    >>> table = IdfTable.from_features([hash_features(["a b", "a c"], "word:1")], "word:1", "xxh")
    >>> table.documents, table.df.tolist()
    (2, [1, 1, 2])
    >>> [round(float(w), 3) for w in table.weights(table.hashes)]
    [1.405, 1.405, 1.0]
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.text import Features, Shingling, shingle_sets

FORMAT = "neardup-idf-1"


class IdfTable:
    """Document frequencies of feature hashes (sorted ``hashes`` uint64, ``df`` int64), over
    ``documents`` documents, for features made with ``shingle`` and ``hash_name``."""

    def __init__(self, hashes: np.ndarray, df: np.ndarray, documents: int, shingle: str,
                 hash_name: str):
        hashes = np.asarray(hashes, dtype=np.uint64)
        df = np.asarray(df, dtype=np.int64)
        if hashes.shape != df.shape or hashes.ndim != 1:
            raise ValueError(f"hashes and df must be 1-d of one length; got {hashes.shape} and "
                             f"{df.shape}")
        if hashes.size and not (hashes[1:] > hashes[:-1]).all():
            raise ValueError("hashes must be sorted and distinct")
        if documents < 0 or (df.size and (df.min() < 1 or df.max() > documents)):
            raise ValueError(f"df must be in 1..documents ({documents})")
        self.hashes, self.df, self.documents = hashes, df, int(documents)
        self.shingle, self.hash_name = str(Shingling.parse(shingle)), hash_name

    def __repr__(self) -> str:
        return (f"IdfTable({self.hashes.size:,} features over {self.documents:,} documents, "
                f"shingle={self.shingle}, hash={self.hash_name})")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, IdfTable) and self.documents == other.documents
                and self.shingle == other.shingle and self.hash_name == other.hash_name
                and np.array_equal(self.hashes, other.hashes)
                and np.array_equal(self.df, other.df))

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

    def weights(self, feature_hashes: np.ndarray) -> np.ndarray:
        """float64 ``ln((1 + N) / (1 + df)) + 1`` of each hash (df = 0 for unknown ones)."""
        feature_hashes = np.asarray(feature_hashes, dtype=np.uint64)
        where = np.searchsorted(self.hashes, feature_hashes)
        where = np.minimum(where, max(self.hashes.size - 1, 0))
        known = (self.hashes.size > 0) & (self.hashes[where] == feature_hashes)
        df = np.where(known, self.df[where] if self.hashes.size else 0, 0)
        return np.log((1.0 + self.documents) / (1.0 + df)) + 1.0

    def save(self, path: str | os.PathLike) -> None:
        """Write the table as Parquet (columns ``hash`` uint64, ``df`` int64; the corpus size,
        shingling and hash in the file's metadata), atomically."""
        table = pa.table({"hash": pa.array(self.hashes, pa.uint64()),
                          "df": pa.array(self.df, pa.int64())})
        table = table.replace_schema_metadata({
            "format": FORMAT, "documents": str(self.documents), "shingle": self.shingle,
            "hash_name": self.hash_name})
        temporary = f"{os.fspath(path)}.tmp"
        pq.write_table(table, temporary)
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> IdfTable:
        """Read a table written by :meth:`save`; ValueError naming the file if it is not one."""
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            raise ValueError(f"{os.fspath(path)}: not a readable IDF table ({error})") from None
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        if meta.get("format") != FORMAT or {"hash", "df"} - set(table.column_names):
            raise ValueError(f"{os.fspath(path)}: not an IDF table written by neardup "
                             f"(format {meta.get('format')!r}, expected {FORMAT!r})")
        return cls(table.column("hash").to_numpy(), table.column("df").to_numpy(),
                   int(meta["documents"]), meta["shingle"], meta["hash_name"])

    def check(self, shingle: str, hash_name: str) -> None:
        """Raise ValueError unless the table was made with these features."""
        shingle = str(Shingling.parse(shingle))
        if (shingle, hash_name) != (self.shingle, self.hash_name):
            raise ValueError(
                f"the IDF table was computed for --shingle {self.shingle} --hash {self.hash_name}, "
                f"not --shingle {shingle} --hash {hash_name}")

