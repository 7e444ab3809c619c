"""The engine's work inside Spark tasks: pure functions over Arrow record batches.

Every function here runs in an executor (``mapInArrow``) and calls the kernels the local engine
calls (:func:`neardup.pipeline.signatures`, :func:`neardup.candidates.bands.band_hashes`,
:class:`neardup.pipeline.Relation`, :func:`neardup.groups.center_groups`) on the numpy arrays
of a batch, so both engines decide alike. They are module-level functions because Spark
pickles a task by reference; a task's options are bound with :func:`functools.partial`. Spark
columns are signed, so uint64 values (fingerprints, hashes) travel as int64 bit patterns and
packed arrays (MinHash signatures, shingle sets) as binary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.candidates.bands import band_hashes
from neardup.candidates.bounds import coarse_sketches, length_possible
from neardup.groups import center_groups, connected_components
from neardup.lcs import COUNT_BUCKETS, possible_pairs
from neardup.pipeline import Relation, Signatures, signatures
from neardup.rank_directory import directory_of
from neardup.settings import Settings
from neardup.text.canonical import TextColumn

__all__ = [
    "BAND_ROW",
    "UNTIMED_BAND_ROW",
    "band_row_type",
    "band_rows",
    "band_rows_task",
    "bucket_pairs_task",
    "center_task",
    "components_task",
    "holds_band_hashes",
    "length_task",
    "record_batch",
    "refetched_sets_task",
    "relate_task",
    "round6_task",
    "sets_task",
    "shared_bound_task",
    "shared_bounds",
    "sign_task",
    "sign_task_schema",
    "signature_columns",
    "signature_names",
    "signature_schema",
]

_CHUNK_ROWS = 50_000
"""Rows a reduce task hands to a kernel at once (whole key groups, so sometimes more)."""


def _i64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 Arrow column (no nulls) as a numpy array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _bools(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow column (no nulls) as a numpy array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _u64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 Arrow column holding uint64 bit patterns, as uint64."""
    return _i64(column).view(np.uint64)


def _binary_csr(column: pa.Array | pa.ChunkedArray, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """A binary column of packed ``dtype`` values as CSR (offsets in items, values). The
    values are copied once, aligned as the kernels want, whatever the chunks (a combine of the
    chunks first was a second copy: 0.9 s for 1M count sketches)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    offsets, data, end = [np.zeros(1, dtype=np.int64)], [], 0
    for chunk in chunks:
        n = len(chunk)
        if n == 0:
            continue
        buffers = chunk.buffers()
        wide = pa.types.is_large_binary(chunk.type)
        at = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)
        at = at[chunk.offset : chunk.offset + n + 1].astype(np.int64)
        if buffers[2] is not None:
            data.append(np.frombuffer(buffers[2], dtype=np.uint8)[at[0] : at[-1]])
        offsets.append(at[1:] - at[0] + end)
        end += int(at[-1] - at[0])
    values = np.concatenate(data) if data else np.zeros(0, dtype=np.uint8)  # the one copy
    return np.concatenate(offsets) // np.dtype(dtype).itemsize, values.view(dtype)


def _csr_binary(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """CSR (offsets in items, values) as a binary column, one packed value run per row."""
    values = np.ascontiguousarray(values)
    byte_offsets = (np.asarray(offsets, dtype=np.int64) * values.dtype.itemsize).astype(np.int32)
    n = byte_offsets.shape[0] - 1
    return pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(byte_offsets), pa.py_buffer(values.view(np.uint8))]
    )


def _rows_binary(matrix: np.ndarray) -> pa.Array:
    """The rows of a 2-d array as a binary column, one packed row a value."""
    n, width = matrix.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return _csr_binary(offsets, np.ascontiguousarray(matrix).reshape(-1))


def _binary_rows(column: pa.Array | pa.ChunkedArray, dtype: type, width: int) -> np.ndarray:
    """Inverse of :func:`_rows_binary`: a binary column of packed rows of ``width`` ``dtype``
    values as a 2-d array (also when the column is empty)."""
    return _binary_csr(column, dtype)[1].reshape(len(column), width)


def _signature_column(signature: np.ndarray) -> pa.Array:
    """SimHash fingerprints as int64, MinHash signatures as packed uint32 binary."""
    if signature.ndim == 1:
        return pa.array(signature.view(np.int64), type=pa.int64())
    return _rows_binary(signature.astype(np.uint32, copy=False))


def _signature_values(column: pa.Array, settings: Settings) -> np.ndarray:
    """Inverse of :func:`_signature_column`."""
    if settings.method == "simhash":
        return _u64(column)
    _, values = _binary_csr(column, np.uint32)
    return values.reshape(-1, settings.num_perm)


def _batch_signatures(
    rows: pa.RecordBatch | pa.Table, column: str, settings: Settings
) -> np.ndarray:
    """The signatures in ``column`` of ``rows``; without that column (a verified MinHash run,
    whose relation reads only sets), an empty signature per row."""
    if column in rows.schema.names:
        return _signature_values(rows.column(column), settings)
    return np.zeros((rows.num_rows, 0), dtype=np.uint32)


def _concat_csr(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """CSR arrays ``(offsets, values)`` one after the other, as one CSR."""
    ends = np.cumsum([p[1].shape[0] for p in parts])
    starts = np.concatenate([[0], ends[:-1]])
    offsets = np.concatenate([p[0][:-1] + s for p, s in zip(parts, starts)] + [ends[-1:]])
    return offsets.astype(np.int64), np.concatenate([p[1] for p in parts])


def _local_signatures(
    signature: np.ndarray, sets: tuple[np.ndarray, np.ndarray] | None
) -> Signatures:
    """A :class:`~neardup.pipeline.Signatures` holding just what the relation reads."""
    n = signature.shape[0]
    return Signatures(
        content=np.zeros((n, 2), dtype=np.uint64),
        signature=signature,
        empty=np.zeros(n, dtype=bool),
        set_offsets=None if sets is None else sets[0],
        set_hashes=None if sets is None else sets[1],
    )


def record_batch(columns: dict[str, Any]) -> pa.RecordBatch:
    """A record batch of named Arrow columns, in the mapping's order: what a task yields. O(1):
    the columns are not copied.

    Example:
        >>> record_batch({"a": pa.array([1, 2]), "b": pa.array([True, False])}).schema.names
        ['a', 'b']
    """
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def _chunks_by_key(
    batches: Iterable[pa.RecordBatch], keys: Sequence[str], target_rows: int = _CHUNK_ROWS
) -> Iterator[pa.Table]:
    """Tables of whole key groups from batches sorted by ``keys`` (a reduce task's input)."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows < target_rows:
            continue
        table = pa.Table.from_batches(pending).combine_chunks()
        last = np.ones(table.num_rows, dtype=bool)
        for key in keys:
            col = table.column(key).to_numpy()
            last &= col == col[-1]
        cut = table.num_rows - int(last.sum())  # the sorted input keeps the last key at the end
        if cut == 0:
            pending, rows = table.to_batches(), table.num_rows
            continue
        yield table.slice(0, cut)
        rest = table.slice(cut)
        pending, rows = rest.to_batches(), rest.num_rows
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


def _run_starts(*columns: np.ndarray) -> np.ndarray:
    """Start index of every run of equal rows over ``columns`` (sorted input)."""
    n = columns[0].shape[0]
    head = np.zeros(n, dtype=bool)
    if n:
        head[0] = True
        for col in columns:
            head[1:] |= col[1:] != col[:-1]
    return np.flatnonzero(head)


def _pairs_within_runs(starts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of row indices inside each run (runs start at ``starts``)."""
    ends = np.append(starts[1:], n)
    run_end = np.repeat(ends, np.diff(np.append(starts, n)))
    idx = np.arange(n, dtype=np.int64)
    count = run_end - idx - 1
    total = int(count.sum())
    left = np.repeat(idx, count)
    first = np.cumsum(count) - count
    right = left + 1 + (np.arange(total, dtype=np.int64) - np.repeat(first, count))
    return left, right


def signature_names(bounds: bool = False) -> tuple[str, ...]:
    """The names of the columns :func:`signature_columns` gives, in order. O(1)."""
    return ("c0", "c1", "sig", "empty") + (("size", "sketch") if bounds else ())


def signature_schema(settings: Settings, bounds: bool = False) -> str:
    """The columns :func:`signature_columns` gives, as a Spark schema (the signature a long for
    SimHash, packed binary for MinHash; ``size`` and ``sketch`` with ``bounds``). O(1).

    Example:
        >>> signature_schema(Settings(method="simhash"))
        'c0 long, c1 long, sig long, empty boolean'
    """
    sig = "long" if settings.method == "simhash" else "binary"
    kinds = {"sig": sig, "empty": "boolean", "sketch": "binary"}  # the others: long
    return ", ".join(f"{name} {kinds.get(name, 'long')}" for name in signature_names(bounds))


def holds_band_hashes(settings: Settings) -> bool:
    """Whether the documents of a dedup run with ``settings`` hold their LSH band hashes
    (:func:`~neardup.candidates.bands.band_hashes`, packed uint64, ``bands × 8`` bytes) as
    ``sig`` instead of their MinHash signature (``num_perm × 4`` bytes): a verified MinHash run
    decides and values its pairs by their sets alone
    (:func:`~neardup.engines.spark.verify.data_columns`), so it reads signatures only to make
    those hashes. At the defaults, half the bytes a document stored and read. O(1).

    Example:
        >>> holds_band_hashes(Settings()), holds_band_hashes(Settings(verify=None))
        (True, False)
    """
    return settings.method == "minhash" and settings.verify is not None


def signature_columns(
    texts: pa.Array | pa.ChunkedArray,
    settings: Settings,
    bounds: bool = False,
    banded: bool = False,
) -> dict[str, pa.Array]:
    """Stage 1 on a column of texts (none null): the 128-bit content fingerprint as two int64
    halves ``c0``, ``c1``, the SimHash fingerprint (int64 bits) or the MinHash signature (packed
    uint32) ``sig``, and ``empty``, whether the text has no shingles; with ``bounds`` (LCS
    verification: :attr:`~neardup.settings.Settings.lcs_bounded`) also ``size`` and
    ``sketch``, the unit count and count sketch (128 bytes) by which :func:`bound_task` rules
    pairs out before any unit is built. ``banded`` (a dedup run where
    :func:`holds_band_hashes`): ``sig`` holds the signature's LSH band hashes. Cost: that of
    :func:`neardup.pipeline.signatures` on the texts.

    Example:
        >>> columns = signature_columns(pa.array(["a b c d", "A b, c d!"]), Settings(), bounds=True)
        >>> list(columns), columns["size"].to_pylist()
        (['c0', 'c1', 'sig', 'empty', 'size', 'sketch'], [4, 4])
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    # The texts reach the kernels as the Arrow column's bytes: as Python strs, each text was
    # made a str and encoded back to UTF-8 (a third of the task on short texts).
    sig = signatures(TextColumn(texts), settings, keep_sets=False, bounds=bounds)
    columns = {
        "c0": pa.array(sig.content[:, 0].view(np.int64)),
        "c1": pa.array(sig.content[:, 1].view(np.int64)),
        "sig": _rows_binary(band_hashes(sig.signature, *settings.banding()))
        if banded
        else _signature_column(sig.signature),
        "empty": pa.array(sig.empty),
    }
    if bounds:
        columns["size"] = pa.array(sig.sizes, type=pa.int64())
        columns["sketch"] = _rows_binary(sig.sketches)
    return columns


def sign_task_schema(settings: Settings, bounds: bool = False) -> str:
    """The rows :func:`sign_task` yields, as a Spark schema. O(1)."""
    return f"pos long, ts long, {signature_schema(settings, bounds)}"


def sign_task(
    batches: Iterable[pa.RecordBatch],
    settings: Settings,
    bounds: bool = False,
    banded: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Stage 1 on one partition: rows ``(pos, ts, text)`` -> ``(pos, ts)`` and the
    :func:`signature_columns` of the texts (with ``bounds`` and ``banded``). Cost: that of
    :func:`neardup.pipeline.signatures` on the batch's texts.

    Example:
        >>> rows = pa.record_batch({"pos": [0, 1], "ts": [0, 0], "text": ["a b c d", "A b, c d!"]})
        >>> out = pa.Table.from_batches(sign_task([rows], Settings(method="simhash")))
        >>> out.column_names, len(set(out["c0"].to_pylist()))  # one text once normalised
        (['pos', 'ts', 'c0', 'c1', 'sig', 'empty'], 1)
        >>> out = pa.Table.from_batches(sign_task([rows], Settings(), bounds=True))
        >>> out["size"].to_pylist(), len(out["sketch"][0].as_py())
        ([4, 4], 128)
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        signed = signature_columns(batch.column("text"), settings, bounds, banded)
        yield record_batch({"pos": batch.column("pos"), "ts": batch.column("ts"), **signed})


def sets_task(batches: Iterable[pa.RecordBatch], settings: Settings) -> Iterator[pa.RecordBatch]:
    """Rows ``(pos, text)`` -> ``(pos, sset)``: the data verification compares for each text
    (:meth:`neardup.verify.Verification.prepare`: the sorted distinct shingle hashes or the
    LCS units, packed as binary, 8 bytes each). Cost: shingling the batch.

    Example:
        >>> rows = pa.record_batch({"pos": [7], "text": ["a b c d a"]})
        >>> settings = Settings(method="minhash", shingle="word:1", verify=0.5)
        >>> [len(packed) // 8 for packed in next(sets_task([rows], settings))["sset"].to_pylist()]
        [4]
    """
    verification = settings.verification
    for batch in batches:
        if batch.num_rows == 0:
            continue
        # The texts reach the kernels as the Arrow column's bytes, never as Python strs.
        texts = TextColumn(batch.column("text"))
        offsets, hashes = verification.prepare(texts, settings.shingle, settings.hash_name)
        yield record_batch({"pos": batch.column("pos"), "sset": _csr_binary(offsets, hashes)})


def refetched_sets_task(
    batches: Iterable[pa.RecordBatch],
    settings: Settings,
    refetch: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]],
) -> Iterator[pa.RecordBatch]:
    """Rows ``(pos, loc, span)`` -> ``(pos, sset)``: ``refetch`` reads the texts back from
    their places (:func:`~neardup.engines.spark.byte_ranges.fetched_texts_task`),
    :func:`sets_task` makes their sets, in the same task. Cost: reading and shingling the
    texts."""
    return sets_task(refetch(batches), settings)


def length_task(batches: Iterable[pa.RecordBatch], threshold: float) -> Iterator[pa.RecordBatch]:
    """Rows ``(a, b, size_a, unbounded_a, size_b, unbounded_b)`` -> ``(a, b)`` of the pairs
    whose LCS resemblance may reach ``threshold`` by their unit counts alone
    (:func:`neardup.candidates.bounds.length_possible`; ``unbounded``: a sketch of every count
    255, which rules nothing out): the first test of :func:`bound_task`, on 9 bytes a
    document instead of 136. O(pairs).

    Example:
        >>> rows = pa.record_batch({"a": [0, 0], "b": [1, 2], "size_a": [5, 5],
        ...     "unbounded_a": [False, False], "size_b": [4, 3], "unbounded_b": [False, False]})
        >>> next(length_task([rows], 0.8))["b"].to_pylist()
        [1]
    """
    for batch in batches:
        m = batch.num_rows
        if m == 0:
            continue
        sizes = np.concatenate([_i64(batch.column("size_a")), _i64(batch.column("size_b"))])
        unbounded, _ = directory_of(
            np.concatenate(
                [_bools(batch.column("unbounded_a")), _bools(batch.column("unbounded_b"))]
            )
        )
        a = np.arange(m, dtype=np.int64)
        keep = length_possible(sizes, unbounded, a, a + m, threshold)
        if keep.any():
            yield record_batch(
                {"a": batch.column("a").filter(keep), "b": batch.column("b").filter(keep)}
            )


def bound_task(batches: Iterable[pa.RecordBatch], threshold: float) -> Iterator[pa.RecordBatch]:
    """Rows ``(a, b, …, size_a, sketch_a, size_b, sketch_b)`` -> ``(a, b, …)`` (the columns
    but the ends' sizes and sketches) of the pairs whose LCS resemblance may reach
    ``threshold`` (:func:`neardup.lcs.possible_pairs`): the others are exactly those the LCS
    kernel rejects by its length and count tests, so dropping them changes no decision.
    O(pairs × 128).

    Example:
        >>> sketch = lambda text: next(sign_task([pa.record_batch(
        ...     {"pos": [0], "ts": [0], "text": [text]})], Settings(), bounds=True))
        >>> x, y = sketch("one two three four five"), sketch("one two three four six")
        >>> rows = pa.record_batch({"a": [0, 0], "b": [1, 2],
        ...     "size_a": [5, 5], "sketch_a": [x["sketch"][0]] * 2,
        ...     "size_b": [5, 2], "sketch_b": [y["sketch"][0]] * 2})
        >>> next(bound_task([rows], 0.8))["b"].to_pylist()
        [1]
    """
    ends = ("size_a", "sketch_a", "size_b", "sketch_b")
    for batch in batches:
        m = batch.num_rows
        if m == 0:
            continue
        sizes = np.concatenate([_i64(batch.column("size_a")), _i64(batch.column("size_b"))])
        sketches = np.concatenate(
            [
                _binary_rows(batch.column(column), np.uint8, COUNT_BUCKETS)
                for column in ("sketch_a", "sketch_b")
            ]
        )
        a = np.arange(m, dtype=np.int64)
        keep = possible_pairs(sizes, sketches, a, a + m, threshold)
        if keep.any():
            yield batch.select([c for c in batch.schema.names if c not in ends]).filter(
                pa.array(keep)
            )


def coarse_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows ``(pos, size, sketch)`` -> the same rows with each count sketch replaced by its
    coarse sketch (:func:`neardup.candidates.bounds.coarse_sketches`: 16 bytes instead of
    128, each run of eight buckets summed), which bounds pairs as the sketches do but more
    loosely: it rules out no pair they leave. O(rows × 128).

    Example:
        >>> rows = pa.record_batch({"pos": [7], "size": [5], "sketch": [bytes(range(128))]})
        >>> row = next(coarse_task([rows])).to_pylist()[0]
        >>> row["pos"], row["size"], list(row["sketch"][:3])
        (7, 5, [28, 92, 156])
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        coarse = coarse_sketches(_binary_rows(batch.column("sketch"), np.uint8, COUNT_BUCKETS))
        yield record_batch(
            {
                "pos": batch.column("pos"),
                "size": batch.column("size"),
                "sketch": _rows_binary(coarse),
            }
        )


def shared_bounds(table: Any, a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
    """For each pair of positions ``(a[p], b[p])``, whether its LCS resemblance may reach
    ``threshold`` by both ends' unit counts and count sketches
    (:func:`neardup.lcs.possible_pairs`), read from ``table``, a broadcast of ``(rows, sizes,
    sketches)`` (``rows``: a :class:`~neardup.engines.spark.positions.PositionRows` of the
    documents' positions, the row of ``sizes`` and ``sketches`` of each). O(pairs × 128).
    Example: see :func:`shared_bound_task`."""
    rows, sizes, sketches = table.value
    return possible_pairs(sizes, sketches, rows.rows(a), rows.rows(b), threshold)


def shared_bound_task(
    batches: Iterable[pa.RecordBatch], table: Any, threshold: float, flag: str | None = None
) -> Iterator[pa.RecordBatch]:
    """Rows ``(a, b)`` -> those whose LCS resemblance may reach ``threshold``, as
    :func:`bound_task` decides them, reading both ends' unit counts and count sketches from
    ``table``, a broadcast of ``(rows, sizes, sketches)`` (``rows``: a
    :class:`~neardup.engines.spark.positions.PositionRows` of the documents' positions, the
    row of ``sizes`` and ``sketches`` of each): the pairs are bounded where they are, without
    a shuffle. With a ``flag`` name: every row, all its columns, and a boolean column of that
    name saying whether the bounds leave it. O(pairs × 128).

    Example:
        >>> sketch = lambda text: next(sign_task([pa.record_batch(
        ...     {"pos": [0], "ts": [0], "text": [text]})], Settings(), bounds=True))
        >>> x, y = sketch("one two three four five"), sketch("one two three four six")
        >>> sketches = np.frombuffer(x["sketch"][0].as_py() + y["sketch"][0].as_py(), np.uint8)
        >>> from types import SimpleNamespace  # a broadcast's stand-in: its value
        >>> from neardup.engines.spark.positions import PositionRows
        >>> rows = PositionRows(np.array([3, 8]), shift=44)
        >>> table = SimpleNamespace(value=(rows, np.array([5, 5]), sketches.reshape(2, -1)))
        >>> rows = pa.record_batch({"a": [3, 3], "b": [3, 8]})
        >>> next(shared_bound_task([rows], table, 0.8))["b"].to_pylist()
        [3, 8]
        >>> next(shared_bound_task([rows], table, 0.9))["b"].to_pylist()
        [3]
        >>> next(shared_bound_task([rows], table, 0.9, flag="left"))["left"].to_pylist()
        [True, False]
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keep = shared_bounds(table, _i64(batch.column("a")), _i64(batch.column("b")), threshold)
        if flag is not None:
            yield batch.append_column(flag, pa.array(keep, type=pa.bool_()))
        elif keep.any():
            yield batch.select(["a", "b"]).filter(pa.array(keep))


def relate_task(
    batches: Iterable[pa.RecordBatch],
    settings: Settings,
    keep: Sequence[str],
    exact: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The run's relation on row pairs: ``(keep…, sig_a, sig_b[, set_a, set_b])`` ->
    ``(keep…, ok, value)``.

    ``ok`` is the near-duplicate decision and ``value`` the reported similarity (SimHash: the
    Hamming distance in bits, int32; MinHash: float64), computed by
    :class:`neardup.pipeline.Relation` exactly as the local engine does; with ``exact=False``
    the value of a pair that is not a near-duplicate by the verification measure is only some
    value below its threshold (:meth:`~neardup.pipeline.Relation.similarity`), for a reader
    of the accepted pairs' values alone. Each pair is measured once, its decision taken from
    its value (:meth:`~neardup.pipeline.Relation.passes`). Cost: O(pairs) signature
    comparisons plus the verification of each pair.

    Example:
        >>> pairs = pa.record_batch({"a": [0, 0], "sig_a": [0b1111, 0b1111], "sig_b": [0b0111, 0]})
        >>> out = next(relate_task([pairs], Settings(method="simhash", hamming_k=3), keep=["a"]))
        >>> out["ok"].to_pylist(), out["value"].to_pylist()
        ([True, False], [1, 4])
    """
    for batch in batches:
        m = batch.num_rows
        if m == 0:
            continue
        signature = np.concatenate(
            [_batch_signatures(batch, column, settings) for column in ("sig_a", "sig_b")]
        )
        sets = None
        if settings.needs_sets:
            sets = _concat_csr(
                [
                    _binary_csr(batch.column("set_a"), np.uint64),
                    _binary_csr(batch.column("set_b"), np.uint64),
                ]
            )
        relation = Relation(_local_signatures(signature, sets), settings)
        a = np.arange(m, dtype=np.int64)
        b = a + m
        value = relation.similarity(a, b, exact)
        ok = np.asarray(relation.passes(a, b, value), dtype=bool)
        if settings.method == "simhash":
            value_col = pa.array(np.asarray(value, dtype=np.int32))
        else:
            value_col = pa.array(np.asarray(value, dtype=np.float64))
        columns = {name: batch.column(name) for name in keep}
        columns["ok"] = pa.array(ok)
        columns["value"] = value_col
        yield record_batch(columns)


BAND_ROW = np.dtype([("band", "<i4"), ("h", "<i8"), ("ts", "<i8"), ("pos", "<i8")])
"""One LSH band row (28 bytes): band, band hash (int64 bits), timestamp, position."""

UNTIMED_BAND_ROW = np.dtype([("band", "<i4"), ("h", "<i8"), ("pos", "<i8")])
"""One LSH band row of a run whose documents all have the same time (20 bytes): the
timestamp orders nothing there, so it does not cross the shuffle."""


def band_row_type(timed: bool) -> np.dtype:
    """:data:`BAND_ROW`, or :data:`UNTIMED_BAND_ROW` when the documents' times are all equal
    (not ``timed``). O(1)."""
    return BAND_ROW if timed else UNTIMED_BAND_ROW


def band_rows(batch: pa.RecordBatch, settings: Settings, timed: bool = True) -> np.ndarray:
    """The LSH band rows (:data:`BAND_ROW`; :data:`UNTIMED_BAND_ROW` when not ``timed``) of
    every MinHash signature of ``batch``'s rows ``(pos, ts, sig)``, a document's bands one
    after the other, ``h`` the band's hash (:func:`neardup.candidates.bands.band_hashes`;
    read from ``sig`` where :func:`holds_band_hashes`). O(rows × num_perm), O(rows × bands)
    from band hashes.

    Example:
        >>> settings = Settings(method="minhash", num_perm=4, bands=2, rows=2, verify=None)
        >>> sig = pa.array([np.arange(4, dtype=np.uint32).tobytes()], pa.binary())
        >>> band_rows(pa.record_batch({"pos": [5], "ts": [0], "sig": sig}), settings)["band"].tolist()
        [0, 1]
    """
    bands, rows_per_band = settings.banding()
    n = batch.num_rows
    if holds_band_hashes(settings):  # made where the documents were signed
        h = _binary_csr(batch.column("sig"), np.uint64)[1]
    else:
        sig = _signature_values(batch.column("sig"), settings)
        h = band_hashes(np.ascontiguousarray(sig), bands, rows_per_band)
    rows = np.empty(n * bands, dtype=band_row_type(timed))
    rows["band"] = np.tile(np.arange(bands, dtype=np.int32), n)
    rows["h"] = h.reshape(-1).view(np.int64)
    if timed:
        rows["ts"] = np.repeat(_i64(batch.column("ts")), bands)
    rows["pos"] = np.repeat(_i64(batch.column("pos")), bands)
    return rows


def band_rows_task(
    batches: Iterable[pa.RecordBatch], settings: Settings
) -> Iterator[pa.RecordBatch]:
    """Map side of the band stage as Spark rows: rows ``(pos, ts, sig)`` -> ``(band, h, pos,
    ts)`` (:func:`band_rows`). O(rows × num_perm).

    Example:
        >>> settings = Settings(method="minhash", num_perm=4, bands=2, rows=2, verify=None)
        >>> sig = pa.array([np.arange(4, dtype=np.uint32).tobytes()], pa.binary())
        >>> rows = pa.record_batch({"pos": [0], "ts": [0], "sig": sig})
        >>> next(band_rows_task([rows], settings))["band"].to_pylist()
        [0, 1]
    """
    for batch in batches:
        if batch.num_rows:
            rows = band_rows(batch, settings)
            yield record_batch({c: pa.array(rows[c]) for c in ("band", "h", "pos", "ts")})


def bucket_pairs_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Reduce side of the band stage: rows ``(band, h, lo, hi, blk, pos)`` sorted by
    ``(band, h, lo, hi)`` -> ``(a, b)``, every pair of documents inside each LSH bucket, ``a < b``
    (in a cell of a split bucket: the pairs across its two sub-blocks). O(pairs).

    Example:
        >>> rows = pa.record_batch({"band": [0, 0, 0], "h": [7, 7, 7], "lo": [0, 0, 0],
        ...                         "hi": [0, 0, 0], "blk": [0, 0, 0], "pos": [4, 2, 9]})
        >>> next(bucket_pairs_task([rows])).to_pydict()
        {'a': [2, 4, 2], 'b': [4, 9, 9]}
    """
    for chunk in _chunks_by_key(batches, ("band", "h", "lo", "hi")):
        band = _i64(chunk.column("band"))
        h = _i64(chunk.column("h"))
        lo = _i64(chunk.column("lo"))
        hi = _i64(chunk.column("hi"))
        blk = _i64(chunk.column("blk"))
        pos = _i64(chunk.column("pos"))
        n = pos.shape[0]
        starts = _run_starts(band, h, lo, hi)
        ia, ib = _pairs_within_runs(starts, n)
        keep = (lo[ia] == hi[ia]) | (blk[ia] != blk[ib])
        a, b = pos[ia[keep]], pos[ib[keep]]
        if a.shape[0]:
            yield record_batch({"a": pa.array(np.minimum(a, b)), "b": pa.array(np.maximum(a, b))})


def center_task(batches: Iterable[pa.RecordBatch], settings: Settings) -> Iterator[pa.RecordBatch]:
    """``center`` grouping inside whole components: rows ``(label, ts, pos, sig[, sset])``
    sorted by ``(label, ts, pos)`` -> ``(pos, center)``, by
    :func:`neardup.groups.center_groups` itself. Cost: that of ``center_groups`` on each chunk
    of components.

    Example:
        >>> rows = pa.record_batch({"label": [0, 0, 0], "pos": [0, 1, 2], "sig": [0, 1, 3]})
        >>> settings = Settings(method="simhash", hamming_k=1, grouping="center")
        >>> next(center_task([rows], settings)).to_pydict()
        {'pos': [0, 1, 2], 'center': [0, 0, 2]}
    """
    for chunk in _chunks_by_key(batches, ("label",)):
        label = _i64(chunk.column("label"))
        pos = _i64(chunk.column("pos"))
        signature = _batch_signatures(chunk, "sig", settings)
        sets = _binary_csr(chunk.column("sset"), np.uint64) if settings.needs_sets else None
        relation = Relation(_local_signatures(signature, sets), settings)
        # Rows come sorted by (label, ts, pos): their index is the (timestamp, position) rank.
        rank = np.arange(pos.shape[0], dtype=np.int64)
        center = center_groups(label, rank, relation)
        yield record_batch({"pos": pa.array(pos), "center": pa.array(pos[center])})


def components_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Connected components of all the edges ``(a, b)`` of one task (run on a single partition:
    every edge of the run) -> ``(pos, label)`` for every node of an edge, label = the smallest
    position of its component, by :func:`neardup.groups.connected_components` on the nodes
    renumbered in position order. The result does not depend on the order the edges arrive in.
    Cost: O(m log m) for m edges (one sort of the 2m ends), about 64 bytes an edge at the peak.

    Example:
        >>> rows = pa.record_batch({"a": [7, 3, 9], "b": [5, 5, 11]})
        >>> next(components_task([rows])).to_pydict()
        {'pos': [3, 5, 7, 9, 11], 'label': [3, 3, 3, 9, 9]}
    """
    parts = [batch for batch in batches if batch.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    a, b = _i64(table.column("a")), _i64(table.column("b"))
    del table, parts
    nodes, ends = np.unique(np.concatenate([a, b]), return_inverse=True)
    del a, b
    m = ends.shape[0] // 2
    labels = connected_components(nodes.shape[0], ends[:m], ends[m:])
    yield record_batch({"pos": pa.array(nodes), "label": pa.array(nodes[labels])})


def round6_task(batches: Iterable[pa.RecordBatch], column: str) -> Iterator[pa.RecordBatch]:
    """Rows with ``column`` (floats) rounded to 6 decimal digits, as the local command line
    writes MinHash similarities; the other columns unchanged. O(rows).

    Example:
        >>> rows = pa.record_batch({"similarity": [0.12345678]})
        >>> next(round6_task([rows], "similarity"))["similarity"].to_pylist()
        [0.123457]
    """
    for batch in batches:
        columns = {name: batch.column(name) for name in batch.schema.names}
        values = batch.column(column).to_numpy(zero_copy_only=False)
        columns[column] = pa.array(np.round(values.astype(np.float64), 6))
        yield record_batch(columns)
