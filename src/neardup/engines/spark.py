"""The Spark engine: the whole dedup job as map-reduce stages on Apache Spark (PySpark).

For the same input and options it gives the same GROUPS and PAIRS as the local engine
(:mod:`neardup.engines.local`), for any number of partitions: every stage calls the same kernels
(:func:`neardup.pipeline.signatures`, :func:`neardup.candidates.tables.distinct_hamming_pairs`,
:func:`neardup.candidates.bands.band_hashes`, the run's near-duplicate relation,
:func:`neardup.groups.center_groups`) inside Spark tasks, and every reduction is a minimum or a set,
so the result does not depend on how rows are spread over tasks.

Stages (seed 000's map-reduce design; ``pos`` is a document's input position, and "earliest" always
means the smallest ``(timestamp, pos)``):

1. **signatures** — ``mapInArrow`` over the documents: content fingerprint, SimHash fingerprint or
   MinHash signature, and the sorted shingle set when verification needs it.
2. **exact duplicates** — group by content fingerprint; every document points to its group's
   earliest member, its *representative*. Only representatives go on: a text repeated 500,000
   times is one row from here on (the group is found by an aggregation, which Spark combines on
   the map side, so the hot key never lands whole in one task).
3. **candidates** among representatives —
   SimHash: representatives with the same fingerprint are linked to the earliest of them; each
   distinct fingerprint is emitted once per permutation table under the key
   ``(table, prefix)``; after the shuffle by key, the values of a key group are compared with
   :func:`~neardup.candidates.tables.distinct_hamming_pairs`, and a pair is kept only by the first
   table whose prefix the two values share (:func:`first_shared_table`, a pure function of the
   two values and the plan), so it is reported exactly once.
   MinHash: each representative emits ``(band, band hash)`` for every band; every bucket is linked
   as a star to its earliest member.
4. **verification** — candidate pairs are joined with both documents' shingle sets (or
   signatures) and checked by the run's relation (exact Jaccard, Hamming distance, MinHash
   estimate), exactly as :class:`neardup.pipeline._Relation` does.
5. **groups** — connected components of the accepted pairs by the iterative large-star /
   small-star algorithm on DataFrames (Kiveris et al., 2014), with each round checkpointed to cut
   the lineage. ``components``: the original is the component's earliest document. ``center``:
   :func:`neardup.groups.center_groups`' round rule; components up to ``center_local_max``
   representatives are solved inside one task each (the same function), larger ones by
   distributed rounds (per round: the earliest unassigned member of every component becomes a
   center, the other unassigned members are tested against it). Duplicates take their
   representative's group.
6. **pairs** — ``original``: original → member for every non-original; ``all``: every
   near-duplicate pair, expanded from representatives to their exact duplicates.

Skew. Exact duplicates (and, for SimHash, identical fingerprints) are collapsed by aggregations
first. A key holding more than ``skew_threshold`` rows is *hot*: a hot permutation-table prefix or
LSH bucket is split into sub-blocks of about ``skew_threshold / 2`` values, and every pair of
sub-blocks is compared in its own task (salting); joins whose key is hot (the original of a huge
group, the center of a star) take the hot keys' few rows from a broadcast table instead of
shuffling all the key's rows into one task. Nothing is collected to the driver except counts, the
first bad row of an input and the small table of hot keys.

Example (it needs Java and starts a Spark session, so it is not run as a doctest)::

    from neardup.engines.spark import spark_session, dedup_dataframe
    from neardup.pipeline import Settings

    spark = spark_session("local[2]")
    df = spark.createDataFrame([("a", "the cat sat on the mat today"),
                                ("b", "The cat sat on the mat, today!")], "id string, text string")
    result = dedup_dataframe(df, Settings(hamming_k=3))
    [r.duplicate_id for r in result.groups.orderBy("pos").collect()]     # ['a', 'a']

Command line: ``neardup dedup docs.jsonl -o groups.tsv --engine spark --spark-master local[*]``,
or through ``spark-submit`` (``python -m neardup.engines.spark`` is the same command line with
``--engine spark``)::

    spark-submit --master yarn $(python -c 'import neardup.engines.spark as m; print(m.__file__)') \\
        dedup hdfs:///corpus/*.jsonl -o hdfs:///out/groups --pairs-out hdfs:///out/pairs
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.candidates.bands import band_hashes
from neardup.candidates.tables import TablePlan, distinct_hamming_pairs, plan_tables
from neardup.groups import center_groups
from neardup.io import (
    DEFAULT_MAX_DOC_BYTES,
    InputError,
    ReadStats,
    _parse_json_line,
    _short,
    _time_to_us,
    _type_name,
    _utf8_len,
    check_max_doc_bytes,
    parse_fingerprint,
    write_records,
    write_table,
)
from neardup.pipeline import (
    DEFAULT_METHOD,
    DEFAULT_SHINGLE,
    DEFAULT_THRESHOLD,
    Settings,
    Signatures,
    _Relation,
    sets_for,
    signatures,
)

try:  # pyspark is an optional dependency: pip install 'neardup[spark]'
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    HAVE_PYSPARK = True
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = SparkSession = F = Window = None  # type: ignore[assignment,misc]
    HAVE_PYSPARK = False

__all__ = [
    "HAVE_PYSPARK",
    "SparkEngine",
    "SparkResult",
    "dedup_dataframe",
    "first_shared_table",
    "main",
    "pairs_dataframe",
    "read_documents_spark",
    "read_fingerprints_spark",
    "require_pyspark",
    "run_dedup",
    "run_pairs",
    "spark_session",
    "unpersist",
    "write_output",
    "write_result",
]

DEFAULT_SKEW_THRESHOLD = 20_000
"""Rows above which one key is treated as hot and split (see the module docstring)."""

DEFAULT_CENTER_LOCAL_MAX = 5_000
"""Components of at most this many representatives are solved by ``center`` inside one task."""

_CHUNK_ROWS = 50_000
"""Rows a reduce task hands to a kernel at once (whole key groups, so sometimes more)."""

_MAX_CC_ROUNDS = 200
_MAX_CENTER_ROUNDS = 1_000_000
_PANDAS_WARNING = "PySpark does not yet fully support pandas"
INSTALL_HINT = "the Spark engine needs pyspark: pip install 'neardup[spark]'"

_LOG_CONFIG = Path(__file__).resolve().parent.parent / "data" / "spark-log4j2.properties"
"""The driver's log4j2 configuration when this module starts the JVM: Spark's default at WARN,
without the messages a user cannot act on (see the file)."""

_QUIET_LOGGERS = (
    "org.apache.hadoop.util.NativeCodeLoader",  # no native Hadoop library: Java classes are used
    "org.apache.spark.sql.execution.window.WindowExec",  # the window over the (small) input splits
    "org.apache.spark.rdd.MapPartitionsRDD",  # "locally checkpointed": freed on purpose
)
"""Loggers set to ERROR in every session :func:`spark_session` returns, unless configured."""

_LOG4J2_FILES = ("log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.yml", "log4j2.json")


def require_pyspark() -> None:
    """Raise ``ImportError`` with the install command if pyspark is missing."""
    if not HAVE_PYSPARK:
        raise ImportError(INSTALL_HINT)


# =============================================================================================
# Session
# =============================================================================================


def spark_session(
    master: str | None = None,
    app_name: str = "neardup",
    config: dict[str, str] | None = None,
) -> SparkSession:
    """The active Spark session, or a new one on ``master`` (``local[*]``, ``spark://…``, ``yarn``).

    ``master=None`` keeps the master of an existing session or of ``spark-submit`` and means
    ``local[*]`` otherwise. For local masters, Python workers run this interpreter (unless
    ``PYSPARK_PYTHON`` says otherwise), so they see the same installed ``neardup``, and the
    driver binds to 127.0.0.1 (unless ``SPARK_LOCAL_IP`` or ``config`` say otherwise).
    Logs: a driver this call starts logs at WARN without Spark's banner (:data:`_LOG_CONFIG`,
    unless a log4j2 configuration of the user's is found), and :data:`_QUIET_LOGGERS`, whose
    warnings a user cannot act on, are set to ERROR in any session; other loggers are untouched.
    Cost: a few seconds to start the JVM the first time.

    Example (needs a Spark session, so not run as a doctest)::

        spark = spark_session("local[2]", config={"spark.ui.enabled": "false"})
    """
    require_pyspark()
    warnings.filterwarnings("ignore", message=_PANDAS_WARNING)
    launched_by_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not launched_by_submit and SparkSession.getActiveSession() is None:
        master = "local[*]"
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # A local run serves nobody else: its driver and UI listen on the loopback interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if local:
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1")
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    with _driver_log_config():
        spark = builder.getOrCreate()
    _quiet_loggers(spark)
    return spark


@contextmanager
def _driver_log_config() -> Iterator[None]:
    """While a session is created: the JVM that pyspark may launch reads :data:`_LOG_CONFIG`,
    given first in ``SPARK_SUBMIT_OPTS`` so a ``-Dlog4j2.configurationFile`` of the user's
    (there, or in ``spark.driver.extraJavaOptions``) still wins. Skipped when a log4j2 file is
    in Spark's configuration folder (it would be overridden) or the file is missing."""
    saved = os.environ.get("SPARK_SUBMIT_OPTS")
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    user_file = conf_dir is not None and any(
        os.path.exists(os.path.join(conf_dir, name)) for name in _LOG4J2_FILES)
    if not user_file and _LOG_CONFIG.is_file():
        ours = f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}"
        os.environ["SPARK_SUBMIT_OPTS"] = f"{ours} {saved}" if saved else ours
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = saved


def _quiet_loggers(spark: SparkSession) -> None:
    """Set :data:`_QUIET_LOGGERS` to ERROR in the driver, so that sessions whose JVM was started
    elsewhere (``spark-submit``, an earlier session) are quiet too; a logger the configuration
    names keeps its level. Nothing happens without a JVM at hand (Spark Connect) or log4j2."""
    try:
        jvm = spark.sparkContext._jvm
        log4j = jvm.org.apache.logging.log4j
        configured = log4j.LogManager.getContext(False).getConfiguration().getLoggers()
        error = log4j.Level.toLevel("ERROR")
        for name in _QUIET_LOGGERS:
            if not configured.containsKey(name):
                log4j.core.config.Configurator.setLevel(name, error)
    except Exception:  # noqa: BLE001 - logging is a convenience; never fail a run over it
        pass


# =============================================================================================
# Arrow <-> numpy helpers (run inside tasks)
# =============================================================================================


def _i64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 Arrow column (no nulls) as a numpy array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _u64(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 Arrow column holding uint64 bit patterns, as uint64."""
    return _i64(column).view(np.uint64)


def _binary_csr(column: pa.Array | pa.ChunkedArray, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """A binary column of packed ``dtype`` values as CSR (offsets in items, values)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    wide = pa.types.is_large_binary(column.type)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[column.offset : column.offset + n + 1].astype(np.int64)
    itemsize = np.dtype(dtype).itemsize
    if n == 0 or buffers[2] is None:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=dtype)
    data = np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    values = data.copy().view(dtype)  # the copy is aligned, as the kernels want
    return (offsets - offsets[0]) // itemsize, values


def _csr_binary(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """CSR (offsets in items, values) as a binary column, one packed value run per row."""
    values = np.ascontiguousarray(values)
    byte_offsets = (np.asarray(offsets, dtype=np.int64) * values.dtype.itemsize).astype(np.int32)
    n = byte_offsets.shape[0] - 1
    return pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(byte_offsets), pa.py_buffer(values.view(np.uint8))]
    )


def _signature_column(signature: np.ndarray) -> pa.Array:
    """SimHash fingerprints as int64, MinHash signatures as packed uint32 binary."""
    if signature.ndim == 1:
        return pa.array(signature.view(np.int64), type=pa.int64())
    n, num_perm = signature.shape
    offsets = np.arange(n + 1, dtype=np.int64) * num_perm
    return _csr_binary(offsets, np.ascontiguousarray(signature, dtype=np.uint32).reshape(-1))


def _signature_values(column: pa.Array, settings: Settings) -> np.ndarray:
    """Inverse of :func:`_signature_column`."""
    if settings.method == "simhash":
        return _u64(column)
    _, values = _binary_csr(column, np.uint32)
    return values.reshape(-1, settings.num_perm)


def _concat_csr(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
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
        text_bytes=np.zeros(n, dtype=np.int64),
        set_offsets=None if sets is None else sets[0],
        set_hashes=None if sets is None else sets[1],
    )


def _batch(columns: dict[str, Any]) -> pa.RecordBatch:
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


# =============================================================================================
# Kernels as Spark tasks (module-level functions: Spark pickles them by reference)
# =============================================================================================


def _sign_task(batches: Iterable[pa.RecordBatch], settings: Settings) -> Iterator[pa.RecordBatch]:
    """Stage 1 on one partition: (pos, ts, text) -> (pos, ts, c0, c1, sig, empty)."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        sig = signatures(batch.column("text").to_pylist(), settings, keep_sets=False)
        yield _batch({
            "pos": batch.column("pos"),
            "ts": batch.column("ts"),
            "c0": pa.array(sig.content[:, 0].view(np.int64)),
            "c1": pa.array(sig.content[:, 1].view(np.int64)),
            "sig": _signature_column(sig.signature),
            "empty": pa.array(sig.empty),
        })


def _sets_task(batches: Iterable[pa.RecordBatch], settings: Settings) -> Iterator[pa.RecordBatch]:
    """Shingle sets (sorted distinct hashes, packed) of (pos, text) rows."""
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        offsets, hashes = sets_for(batch.column("text").to_pylist(), np.arange(n), settings)
        yield _batch({"pos": batch.column("pos"), "sset": _csr_binary(offsets, hashes)})


def _relate_task(
    batches: Iterable[pa.RecordBatch], settings: Settings, keep: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The run's relation on row pairs: (keep…, sig_a, sig_b[, set_a, set_b]) -> keep…, ok, value.

    ``ok`` is the near-duplicate decision and ``value`` the reported similarity, computed by
    :class:`neardup.pipeline._Relation` exactly as the local engine does.
    """
    for batch in batches:
        m = batch.num_rows
        if m == 0:
            continue
        signature = np.concatenate(
            [
                _signature_values(batch.column("sig_a"), settings),
                _signature_values(batch.column("sig_b"), settings),
            ]
        )
        sets = None
        if settings.needs_sets:
            sets = _concat_csr(
                [
                    _binary_csr(batch.column("set_a"), np.uint64),
                    _binary_csr(batch.column("set_b"), np.uint64),
                ]
            )
        relation = _Relation(_local_signatures(signature, sets), settings)
        a = np.arange(m, dtype=np.int64)
        b = a + m
        ok = np.asarray(relation(a, b), dtype=bool)
        value = relation.similarity(a, b)
        if settings.method == "simhash":
            value_col = pa.array(np.asarray(value, dtype=np.int32))
        else:
            value_col = pa.array(np.asarray(value, dtype=np.float64))
        columns = {name: batch.column(name) for name in keep}
        columns["ok"] = pa.array(ok)
        columns["value"] = value_col
        yield _batch(columns)


def first_shared_table(a: np.ndarray, b: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """For each pair, the first table whose prefix mask the two fingerprints agree on, or -1.

    A pair found in table ``t`` is kept only if this is ``t``: every pair within the tables'
    Hamming distance shares at least one prefix (pigeonhole), so it is kept exactly once, and
    the decision needs nothing but the two values and the plan. O(pairs × tables).

    Example:
        >>> masks = np.array([0xFF00, 0x00FF], dtype=np.uint64)
        >>> a = np.array([0x1234, 0x1234, 0x1234], dtype=np.uint64)
        >>> b = np.array([0x1299, 0x9934, 0x9999], dtype=np.uint64)
        >>> first_shared_table(a, b, masks).tolist()
        [0, 1, -1]
    """
    x = np.asarray(a, dtype=np.uint64) ^ np.asarray(b, dtype=np.uint64)
    first = np.full(x.shape[0], -1, dtype=np.int64)
    for t, mask in enumerate(np.asarray(masks, dtype=np.uint64)):
        first[(first < 0) & ((x & mask) == 0)] = t
    return first


def _table_rows_task(
    batches: Iterable[pa.RecordBatch], masks: np.ndarray
) -> Iterator[pa.RecordBatch]:
    """Map side of the table stage: each distinct fingerprint once per table, keyed by prefix."""
    tables = masks.shape[0]
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        fp = _u64(batch.column("fp"))
        node = _i64(batch.column("node"))
        fps = np.tile(fp, tables)
        yield _batch(
            {
                "t": pa.array(np.repeat(np.arange(tables, dtype=np.int32), n)),
                "key": pa.array((fps & np.repeat(masks, n)).view(np.int64)),
                "fp": pa.array(fps.view(np.int64)),
                "node": pa.array(np.tile(node, tables)),
            }
        )


def _prefix_group_pairs(
    fp: np.ndarray, rows: np.ndarray, table: int, masks: np.ndarray, hamming_k: int,
    cross: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``(i, j)`` of ``rows`` (indices into ``fp``) within ``hamming_k`` bits that table
    ``table`` owns (:func:`first_shared_table`); with ``cross``, only pairs whose ``cross``
    values differ (two sub-blocks of a split key). Returns (i, j, distance)."""
    values = fp[rows]
    ia, ib, dist = distinct_hamming_pairs(values, hamming_k)
    keep = first_shared_table(values[ia], values[ib], masks) == table
    if cross is not None:
        keep &= cross[ia] != cross[ib]
    return rows[ia[keep]], rows[ib[keep]], dist[keep].astype(np.int32)


def _table_pairs_task(
    batches: Iterable[pa.RecordBatch], masks: np.ndarray, hamming_k: int
) -> Iterator[pa.RecordBatch]:
    """Reduce side of the table stage: pairs within ``hamming_k`` inside each prefix group.

    Input sorted by (t, key, lo, hi). Ordinary groups of one table are searched together with
    one :func:`distinct_hamming_pairs` call (a pair of two groups never passes the first-table
    filter, since it does not share that table's prefix); a cell (lo, hi) of a split hot group
    keeps the pairs between its two sub-blocks (or inside its one sub-block when lo == hi).
    """
    for chunk in _chunks_by_key(batches, ("t", "key", "lo", "hi")):
        t = _i64(chunk.column("t"))
        key = _i64(chunk.column("key"))
        lo = _i64(chunk.column("lo"))
        hi = _i64(chunk.column("hi"))
        split = _i64(chunk.column("S")) > 1
        blk = _i64(chunk.column("blk"))
        fp = _u64(chunk.column("fp"))
        node = _i64(chunk.column("node"))
        groups: list[tuple[np.ndarray, int, np.ndarray | None]] = []
        plain = np.flatnonzero(~split)
        for table in np.unique(t[plain]).tolist():
            groups.append((plain[t[plain] == table], table, None))
        hot = np.flatnonzero(split)
        if hot.shape[0]:
            starts = _run_starts(t[hot], key[hot], lo[hot], hi[hot])
            for s, e in zip(starts.tolist(), np.append(starts[1:], hot.shape[0]).tolist()):
                rows = hot[s:e]
                r0 = rows[0]
                groups.append((rows, int(t[r0]), None if lo[r0] == hi[r0] else blk[rows]))
        found = [_prefix_group_pairs(fp, rows, table, masks, hamming_k, cross)
                 for rows, table, cross in groups if rows.shape[0] >= 2]
        if found:
            yield _batch(
                {
                    "a": pa.array(node[np.concatenate([f[0] for f in found])]),
                    "b": pa.array(node[np.concatenate([f[1] for f in found])]),
                    "dist": pa.array(np.concatenate([f[2] for f in found])),
                }
            )


def _band_rows_task(
    batches: Iterable[pa.RecordBatch], settings: Settings
) -> Iterator[pa.RecordBatch]:
    """Map side of the band stage: (band, band hash, pos, ts) for every band of every document."""
    bands, rows = settings.banding()
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        sig = _signature_values(batch.column("sig"), settings)
        h = band_hashes(np.ascontiguousarray(sig), bands, rows)
        yield _batch(
            {
                "band": pa.array(np.tile(np.arange(bands, dtype=np.int32), n)),
                "h": pa.array(h.reshape(-1).view(np.int64)),
                "pos": pa.array(np.repeat(_i64(batch.column("pos")), bands)),
                "ts": pa.array(np.repeat(_i64(batch.column("ts")), bands)),
            }
        )


def _bucket_pairs_task(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every pair inside each LSH bucket (cells of split buckets: pairs across the two blocks)."""
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
            yield _batch({"a": pa.array(np.minimum(a, b)), "b": pa.array(np.maximum(a, b))})


def _center_task(
    batches: Iterable[pa.RecordBatch], settings: Settings
) -> Iterator[pa.RecordBatch]:
    """``center`` inside whole components: input sorted by (label, ts, pos)."""
    for chunk in _chunks_by_key(batches, ("label",)):
        label = _i64(chunk.column("label"))
        pos = _i64(chunk.column("pos"))
        signature = _signature_values(chunk.column("sig"), settings)
        sets = _binary_csr(chunk.column("sset"), np.uint64) if settings.needs_sets else None
        relation = _Relation(_local_signatures(signature, sets), settings)
        # Rows come sorted by (label, ts, pos): their index is the (timestamp, position) rank.
        rank = np.arange(pos.shape[0], dtype=np.int64)
        center = center_groups(label, rank, relation)
        yield _batch({"pos": pa.array(pos), "center": pa.array(pos[center])})


def _round6_task(batches: Iterable[pa.RecordBatch], column: str) -> Iterator[pa.RecordBatch]:
    """MinHash similarities rounded to 6 digits as the local command line writes them."""
    for batch in batches:
        columns = {name: batch.column(name) for name in batch.schema.names}
        values = batch.column(column).to_numpy(zero_copy_only=False)
        columns[column] = pa.array(np.round(values.astype(np.float64), 6))
        yield _batch(columns)


def unpersist(df: DataFrame) -> None:
    """Free the executors' storage of ``df``, a table this module returned (e.g. the documents
    of :func:`read_documents_spark`) or any persisted DataFrame. Tables this module stores are
    checkpoints, which ``DataFrame.unpersist`` does not free. O(1) on the driver; ``df`` (and
    anything computed from it) must not be read afterwards."""
    stored = getattr(df, "_neardup_stored", None)
    if stored is not None:
        stored.unpersist(False)
        df._neardup_stored = None
    else:
        df.unpersist()


# =============================================================================================
# Results
# =============================================================================================


class SparkResult:
    """What a Spark run returns: DataFrames defined over stage outputs the run keeps stored
    (in the executors' storage); :meth:`release` frees them once the results are written.

    Attributes:
        groups: one row per document: ``pos, id, duplicate_id, original_id, is_original,
            group_size`` (sort by ``pos`` for input order).
        pairs: ``pos_a, pos_b, id_a, id_b``, ``distance`` (SimHash, int) or ``similarity``
            (MinHash, float) and ``passed`` (whether the pair itself meets the run's rule, as
            the local engine's ``Groups.pair_passed``): original → member for
            ``pairs="original"``, every near-duplicate pair (``pos_a < pos_b``) for
            ``pairs="all"``.
        stats: counts and seconds per stage, the keys of the local engine's ``Groups.stats``.
        pairs_order: the columns PAIRS is sorted by in the local engine's output.
    """

    def __init__(
        self,
        groups: DataFrame,
        pairs: DataFrame,
        stats: dict | None = None,
        pairs_order: Sequence[str] = ("pos_b",),
        release: Callable[[], None] | None = None,
    ):
        self.groups, self.pairs = groups, pairs
        self.stats = stats if stats is not None else {}
        self.pairs_order = tuple(pairs_order)
        self._releases = [release] if release is not None else []

    def hold(self, frames: Iterable[DataFrame]) -> None:
        """Also release ``frames`` (e.g. the input tables) in :meth:`release`."""
        frames = list(frames)
        self._releases.append(lambda: [unpersist(df) for df in frames])

    def release(self) -> None:
        """Free the storage the results read; use ``groups`` and ``pairs`` before, not after."""
        for release in self._releases:
            release()
        self._releases = []


# =============================================================================================
# The engine
# =============================================================================================


class SparkEngine:
    """Runs the dedup stages on a Spark session (see the module docstring).

    Args:
        spark: the session.
        partitions: partitions of every shuffle (default ``spark.sql.shuffle.partitions``);
            results do not depend on it.
        skew_threshold: rows above which a key is hot and is split (>= 2).
        center_local_max: largest component ``center`` solves inside one task; larger ones go
            through distributed rounds (>= 1).
        checkpoint: ``"local"`` (executors' storage; fast, not fault tolerant), ``"reliable"``
            (the checkpoint directory) or None (reliable when a checkpoint directory is set).

    Example (needs a Spark session, so not run as a doctest)::

        engine = SparkEngine(spark_session("local[2]"), partitions=4)
    """

    name = "spark"

    def __init__(
        self,
        spark: SparkSession,
        *,
        partitions: int | None = None,
        skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
        center_local_max: int = DEFAULT_CENTER_LOCAL_MAX,
        checkpoint: str | None = None,
    ):
        require_pyspark()
        if partitions is None:
            partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if skew_threshold < 2:
            raise ValueError(f"skew_threshold must be >= 2, got {skew_threshold}")
        if center_local_max < 1:
            raise ValueError(f"center_local_max must be >= 1, got {center_local_max}")
        if checkpoint not in (None, "local", "reliable"):
            raise ValueError(f"checkpoint must be 'local', 'reliable' or None, got {checkpoint!r}")
        if checkpoint is None:
            checkpoint = "reliable" if spark.sparkContext.getCheckpointDir() else "local"
        self.spark = spark
        self.partitions = int(partitions)
        self.skew_threshold = int(skew_threshold)
        self.center_local_max = int(center_local_max)
        self.checkpoint_mode = checkpoint

    # ------------------------------------------------------------------ entry points

    def dedup(self, docs: DataFrame, settings: Settings) -> SparkResult:
        """The whole job on ``docs`` (columns ``pos`` long unique, ``text`` string, ``ts`` long
        ordering key, ``id`` string)."""
        job = _Job(self, settings)
        try:
            return job.run_texts(docs)
        finally:
            job.tag(None)

    def dedup_fingerprints(self, rows: DataFrame, settings: Settings) -> SparkResult:
        """The job on precomputed SimHash fingerprints (``pos``, ``id``, ``fp`` long holding the
        uint64 bits, ``ts``): identical fingerprints play the part of identical contents, as in
        ``neardup pairs``."""
        if settings.method != "simhash" or settings.verify is not None:
            raise ValueError("fingerprint rows need method='simhash' and verify=None")
        job = _Job(self, settings)
        try:
            return job.run_fingerprints(rows)
        finally:
            job.tag(None)


class _Job:
    """One run: the stages as methods, sharing the settings, counters and tuning."""

    def __init__(self, engine: SparkEngine, settings: Settings):
        self.engine = engine
        self.spark = engine.spark
        self.settings = settings
        self.P = engine.partitions
        self.threshold = engine.skew_threshold
        self.stats: dict = {"seconds": {}}
        self._clock = time.perf_counter()
        self.skewed = False  # set once the number of documents is known
        self._held: list[DataFrame] = []  # persisted or checkpointed tables of this run

    # ------------------------------------------------------------------ plumbing

    def lap(self, name: str) -> None:
        """Record the seconds of stage ``name``; tag the next Spark jobs with the next stage."""
        now = time.perf_counter()
        self.stats["seconds"][name] = now - self._clock
        self._clock = now
        following = {"signatures": "exact_duplicates", "exact_duplicates": "candidates",
                     "candidates": "verify", "verify": "groups", "groups": "pairs"}.get(name)
        self.tag(following)

    def tag(self, stage: str | None) -> None:
        """Spark jobs started from now on belong to job group ``neardup:<stage>`` (None: the
        caller's group again), so the UI and REST API show the work and shuffles per stage."""
        sc = self.spark.sparkContext
        if not hasattr(self, "_caller_group"):
            self._caller_group = sc.getLocalProperty("spark.jobGroup.id")
        sc.setLocalProperty("spark.jobGroup.id", None if stage is None else f"neardup:{stage}")
        if stage is None and self._caller_group is not None:
            sc.setLocalProperty("spark.jobGroup.id", self._caller_group)

    def keep(self, df: DataFrame) -> DataFrame:
        """Materialise ``df`` for the stages that read it again, as a table with a short plan
        (:meth:`cp`). Persisting alone would keep each stored table's whole plan inside the
        plans that read it; tables read twice by the next stage then make plans grow
        exponentially with the stages, and printing them for the UI exhausts the driver."""
        return self.cp(df)

    def release(self, *frames: DataFrame, keep: Sequence[DataFrame] = ()) -> None:
        """Free the storage of ``frames`` (all held tables if none are named) except ``keep``.
        A released checkpoint cannot be read again, so only tables whose readers have been
        materialised are released."""
        targets = list(frames) if frames else list(self._held)
        spared = {id(df) for df in keep}
        for df in targets:
            if id(df) in spared or not any(df is held for held in self._held):
                continue
            unpersist(df)
            self._held = [held for held in self._held if held is not df]

    def cp(self, df: DataFrame) -> DataFrame:
        """Materialise ``df`` and cut its lineage.

        The checkpointed rows are wrapped in a fresh DataFrame: a checkpoint keeps the size
        *estimate* of the plan it came from, and Spark estimates a join as the product of its
        inputs, so in iterative stages (components, center rounds) the estimate would square
        every round until its arithmetic alone exhausts the driver's memory.
        """
        if self.engine.checkpoint_mode == "reliable":
            done = df.checkpoint(eager=True)
        else:
            done = df.localCheckpoint(eager=True)
        jdf = done._jdf
        fresh = DataFrame(self.spark._jsparkSession.createDataFrame(jdf.javaRDD(), jdf.schema()),
                          self.spark)
        # DataFrame.unpersist cannot reach the checkpointed rows under the fresh plan:
        # unpersist() frees them through this handle.
        fresh._neardup_stored = jdf.queryExecution().logical().rdd()
        self._held.append(fresh)
        return fresh

    def hot_keys(self, rows: DataFrame, keys: list[str], per_block: int) -> DataFrame:
        """Keys of ``rows`` holding more than ``skew_threshold`` rows, with ``_S``, the number of
        blocks of about ``per_block`` rows to cut each into.

        The table is small (at most rows / ``skew_threshold`` keys), so it is brought to the
        driver and handed back as a local table: a join with it then does not carry ``rows``'
        plan a second time. Kept as a plan, every skew-safe join would double the plan of its
        input, and plans nested through the stages would grow exponentially.
        """
        counts = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("_n"))
        hot = counts.where(F.col("_n") > self.threshold).select(
            *keys, F.ceil(F.col("_n") / F.lit(per_block)).cast("int").alias("_S"))
        return self.spark.createDataFrame(hot.collect(), hot.schema)

    def lookup(self, left: DataFrame, right: DataFrame, keys: list[str], how: str = "inner") -> DataFrame:
        """``left`` joined with ``right`` (at most one row per key) on ``keys``, skew-safe.

        A key holding more than ``skew_threshold`` rows of ``left`` is salted: its rows get a
        salt in ``0..S-1`` (a hash of the row) and its right-hand row is repeated S times, so
        the key's rows spread over S tasks instead of one. No key can be hot below
        ``skew_threshold`` rows in all, so small inputs take a plain join.
        """
        if not self.skewed:
            return left.join(right, keys, how)
        hot = F.broadcast(self.hot_keys(left, keys, self.threshold))
        salt = F.pmod(F.xxhash64(*[F.col(f"`{c}`") for c in left.columns]), F.col("_S"))
        salted_left = left.join(hot, keys, "left").withColumn(
            "_salt", F.when(F.col("_S").isNull(), F.lit(0)).otherwise(salt).cast("int")).drop("_S")
        salted_right = right.join(hot, keys, "left").withColumn(
            "_salt", F.explode(F.sequence(F.lit(0), F.coalesce(F.col("_S"), F.lit(1)) - 1))
        ).drop("_S")
        return salted_left.join(salted_right, [*keys, "_salt"], how).drop("_salt")

    def earliest(self, df: DataFrame, keys: list[str], name: str) -> DataFrame:
        """Per key: the earliest row's ``pos`` (as ``name``) and the row count ``n``."""
        return df.groupBy(*keys).agg(
            F.min(F.struct("ts", "pos")).getField("pos").alias(name), F.count(F.lit(1)).alias("n")
        )

    def split_cells(self, rows: DataFrame, keys: list[str], salt_col: str) -> DataFrame:
        """Cells (lo, hi) of each key: one cell for ordinary keys; a hot key of m rows is cut
        into S = ceil(2m / skew_threshold) sub-blocks ``blk`` (by a hash of ``salt_col``) and each
        row goes to the S cells (min(blk, c), max(blk, c)), c = 0..S-1, so every pair of
        sub-blocks meets in exactly one cell of about ``skew_threshold`` rows."""
        if self.skewed:
            hot = self.hot_keys(rows, keys, max(1, self.threshold // 2))
            self.stats["split_keys"] = self.stats.get("split_keys", 0) + hot.count()
            rows = rows.join(F.broadcast(hot), keys, "left").withColumn("S", F.coalesce(F.col("_S"), F.lit(1)))
            rows = rows.drop("_S")
        else:
            rows = rows.withColumn("S", F.lit(1))
        salt = F.pmod(F.xxhash64(salt_col), F.col("S"))
        rows = rows.withColumn("blk", F.when(F.col("S") > 1, salt).otherwise(F.lit(0)).cast("int"))
        rows = rows.withColumn("c", F.explode(F.sequence(F.lit(0), F.col("S") - 1)))
        return (
            rows.withColumn("lo", F.least("blk", "c"))
            .withColumn("hi", F.greatest("blk", "c"))
            .drop("c")
        )

    def reduce(self, df: DataFrame, keys: list[str], order: list[str], task, schema: str) -> DataFrame:
        """Shuffle by ``keys``, sort each partition by keys and ``order``, run ``task`` on it."""
        return (
            df.repartition(self.P, *keys)
            .sortWithinPartitions(*keys, *order)
            .mapInArrow(task, schema)
        )

    def data_columns(self) -> list[str]:
        return ["sig", "sset"] if self.settings.needs_sets else ["sig"]

    def with_sets(self, reps: DataFrame, cand: DataFrame, content: DataFrame) -> DataFrame:
        """(pos, sig, sset) of every representative, with the shingle set of those that can
        ever be compared: the ends of candidate pairs and the heads of exact-duplicate groups
        (others get an empty set, never read), as the local engine builds them."""
        needed = (cand.select(F.col("a").alias("pos"))
                  .unionByName(cand.select(F.col("b").alias("pos")))
                  .unionByName(content.select(F.col("rep").alias("pos"))).distinct())
        texts = self.texts.join(needed, ["pos"], "left_semi")
        sets = texts.mapInArrow(partial(_sets_task, settings=self.settings), "pos long, sset binary")
        empty = F.lit(b"").cast("binary")
        return self.keep(reps.select("pos", "sig").join(sets, ["pos"], "left")
                       .select("pos", "sig", F.coalesce("sset", empty).alias("sset")))

    def relate(self, pairs: DataFrame, keep: list[str]) -> DataFrame:
        """Adds ``ok`` and ``value`` to pairs ``(a, b, …)`` by joining both documents' data."""
        data = self.data
        cols = self.data_columns()
        left = data.select(F.col("pos").alias("a"), *[F.col(c).alias(c + "_a") for c in cols])
        right = data.select(F.col("pos").alias("b"), *[F.col(c).alias(c + "_b") for c in cols])
        joined = self.lookup(self.lookup(pairs, left, ["a"]), right, ["b"])
        joined = joined.withColumnsRenamed({"sset_a": "set_a", "sset_b": "set_b"})
        return self.related(joined, keep)

    def related(self, joined: DataFrame, keep: list[str]) -> DataFrame:
        """Runs :func:`_relate_task` on rows holding both sides' data."""
        kinds = dict(joined.dtypes)
        value_type = "int" if self.settings.method == "simhash" else "double"
        schema = ", ".join([f"{c} {kinds[c]}" for c in keep] + ["ok boolean", f"value {value_type}"])
        return joined.mapInArrow(partial(_relate_task, settings=self.settings, keep=keep), schema)

    # ------------------------------------------------------------------ runs

    def run_texts(self, docs: DataFrame) -> SparkResult:
        s = self.settings
        self.tag("signatures")
        docs = docs.select(F.col("pos").cast("long"), F.col("id").cast("string"),
                           F.col("text").cast("string"), F.col("ts").cast("long"))
        sig_schema = "pos long, ts long, c0 long, c1 long, sig " + (
            "long" if s.method == "simhash" else "binary") + ", empty boolean"
        sig = self.keep(docs.select("pos", "ts", "text").mapInArrow(
            partial(_sign_task, settings=s), sig_schema))
        counts = sig.agg(F.count(F.lit(1)), F.sum(F.col("empty").cast("long"))).first()
        self.stats["documents"] = n = int(counts[0])
        self.stats["empty_documents"] = int(counts[1] or 0)
        self.skewed = n > self.threshold
        self.lap("signatures")
        self.texts = docs.select("pos", "text")
        return self.run(docs.select("pos", "id"), sig)

    def run_fingerprints(self, rows: DataFrame) -> SparkResult:
        self.tag("signatures")
        rows = rows.select(F.col("pos").cast("long"), F.col("id").cast("string"),
                           F.col("fp").cast("long"), F.col("ts").cast("long"))
        n = rows.count()
        self.stats["documents"] = n
        self.skewed = n > self.threshold
        sig = rows.select("pos", "ts", F.col("fp").alias("c0"), F.lit(0).cast("long").alias("c1"),
                          F.col("fp").alias("sig"), F.lit(False).alias("empty"))
        self.stats["empty_documents"] = 0
        self.lap("signatures")
        return self.run(rows.select("pos", "id"), sig)

    def run(self, ids: DataFrame, sig: DataFrame) -> SparkResult:
        s = self.settings

        # -- a. exact duplicates: every document -> earliest document with its content
        content = self.earliest(sig, ["c0", "c1"], "rep").where("n > 1").select("c0", "c1", "rep")
        docrep = self.keep(
            self.lookup(sig.select("pos", "ts", "c0", "c1"), content, ["c0", "c1"], "left")
            .select("pos", "ts", F.coalesce("rep", "pos").alias("rep"))
        )
        reps = self.keep(sig.join(docrep.where("rep = pos").select("pos"), ["pos"], "left_semi")
                       .select("pos", "ts", "c0", "c1", "sig"))
        self.data = reps.select("pos", "sig")
        self.stats["exact_duplicates"] = docrep.where("rep != pos").count()
        self.lap("exact_duplicates")

        # -- b. candidates among representatives
        if s.method == "simhash":
            cand, fp_pairs, fp_rep = self.simhash_candidates(reps)
        else:
            cand, fp_pairs, fp_rep = self.minhash_candidates(reps), None, None
        self.stats["candidates"] = cand.count()
        self.lap("candidates")
        if s.needs_sets:
            self.data = self.with_sets(reps, cand, content)

        # -- c. verification
        if s.method == "minhash" or s.verify is not None:
            checked = self.keep(self.relate(cand, ["a", "b"]))
            edges = checked.where("ok").select("a", "b")
            n_edges = edges.count()
        else:
            edges, n_edges = cand, self.stats["candidates"]
        self.stats["rejected"] = self.stats["candidates"] - n_edges
        self.lap("verify")

        # -- d. groups over representatives, then every document
        rep_nodes = reps.select("pos", "ts")
        labels = self.components(edges, rep_nodes, n_edges)
        if s.grouping == "components":
            first = self.earliest(labels, ["label"], "orig").select("label", "orig")
            rep_orig = self.lookup(labels, first, ["label"]).select(F.col("pos").alias("rep"), "orig")
        else:
            rep_orig = self.center(labels, reps).select(F.col("pos").alias("rep"),
                                                       F.col("center").alias("orig"))
        doc_orig = self.keep(self.lookup(docrep.select("pos", "rep"), rep_orig, ["rep"])
                           .select("pos", "rep", "orig"))
        sizes = doc_orig.groupBy("orig").agg(F.count(F.lit(1)).alias("group_size"))
        orig_ids = ids.select(F.col("pos").alias("orig"), F.col("id").alias("original_id"))
        per_orig = self.keep(sizes.join(orig_ids, ["orig"]))
        groups = self.lookup(doc_orig, per_orig, ["orig"]).join(ids, ["pos"]).select(
            "pos", "id", F.col("original_id").alias("duplicate_id"), "original_id",
            (F.col("pos") == F.col("orig")).alias("is_original"), "group_size",
        )
        counts = per_orig.agg(F.count(F.lit(1)), F.max("group_size")).first()
        self.stats["groups"] = int(counts[0])
        self.stats["largest_group"] = int(counts[1] or 0)
        self.stats["duplicates_removed"] = self.stats["documents"] - self.stats["groups"]
        self.lap("groups")

        # -- e. pairs
        name = "distance" if s.method == "simhash" else "similarity"
        if s.pairs == "original":
            pairs, order = self.original_pairs(doc_orig), ("pos_b",)
        else:
            pairs, order = self.all_pairs(docrep, reps, fp_pairs, fp_rep), ("pos_a", "pos_b")
        pairs = pairs_base = self.keep(pairs)
        self.stats["pairs"] = pairs.count()
        id_a = ids.select(F.col("pos").alias("pos_a"), F.col("id").alias("id_a"))
        id_b = ids.select(F.col("pos").alias("pos_b"), F.col("id").alias("id_b"))
        pairs = self.lookup(self.lookup(pairs, id_a, ["pos_a"]), id_b, ["pos_b"]).select(
            "pos_a", "pos_b", "id_a", "id_b", F.col("value").alias(name), "passed")
        self.lap("pairs")
        # Everything but the tables the results read has been consumed.
        self.release(keep=(doc_orig, per_orig, pairs_base))
        return SparkResult(groups, pairs, self.stats, order, self.release)

    # ------------------------------------------------------------------ candidates

    def simhash_candidates(self, reps: DataFrame):
        k = self.settings.hamming_k
        r = reps.select("pos", "ts", F.col("sig").alias("fp"))
        heads = self.earliest(r, ["fp"], "node")
        fp_rep = self.keep(self.lookup(r, heads.where("n > 1").select("fp", "node"), ["fp"], "left")
                         .select("pos", "fp", F.coalesce("node", "pos").alias("node")))
        star = fp_rep.where("node != pos").select(F.col("node").alias("a"), F.col("pos").alias("b"))
        distinct = fp_rep.where("node = pos").select("fp", "node")
        n_distinct = distinct.count()
        plan: TablePlan = plan_tables(max(n_distinct, 2), k)
        masks = plan.masks
        rows = distinct.mapInArrow(partial(_table_rows_task, masks=masks),
                                   "t int, key long, fp long, node long")
        cells = self.split_cells(rows, ["t", "key"], "fp")
        self.stats["tables"] = plan.num_tables
        fp_pairs = self.keep(self.reduce(
            cells, ["t", "key", "lo", "hi"], [],
            partial(_table_pairs_task, masks=masks, hamming_k=k), "a long, b long, dist int",
        ))
        return star.unionByName(fp_pairs.select("a", "b")), fp_pairs, fp_rep

    def band_rows(self, reps: DataFrame) -> DataFrame:
        return reps.select("pos", "ts", "sig").mapInArrow(
            partial(_band_rows_task, settings=self.settings), "band int, h long, pos long, ts long")

    def minhash_candidates(self, reps: DataFrame) -> DataFrame:
        rows = self.keep(self.band_rows(reps))
        heads = self.earliest(rows, ["band", "h"], "head").where("n > 1").select("band", "h", "head")
        star = self.lookup(rows, heads, ["band", "h"]).where("head != pos")
        return self.keep(star.select(F.col("head").alias("a"), F.col("pos").alias("b")).distinct())

    # ------------------------------------------------------------------ groups

    def components(self, edges: DataFrame, nodes: DataFrame, n_edges: int) -> DataFrame:
        """(pos, ts, label) for every node: label = smallest pos of its connected component.

        Large-star / small-star (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii 2014) over
        edges stored as (hi, lo), hi > lo, until every component is a star around its smallest
        node: every node is the ``hi`` of at most one edge, and no ``lo`` is a ``hi``. Each round
        is checkpointed, so the plan does not grow with the rounds.
        """
        rounds = 0
        if n_edges:
            e = edges.select(F.greatest("a", "b").alias("hi"), F.least("a", "b").alias("lo"))
            e = self.cp(e.where("hi != lo").distinct())  # a short plan for the rounds
            while True:
                rounds += 1
                if rounds > _MAX_CC_ROUNDS:
                    raise RuntimeError(
                        f"connected components did not converge in {_MAX_CC_ROUNDS} rounds")
                # large-star: node u links every larger neighbour to m(u) = min(u, neighbours)
                both = e.select(F.col("hi").alias("u"), F.col("lo").alias("v")).unionByName(
                    e.select(F.col("lo").alias("u"), F.col("hi").alias("v")))
                m = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
                large = self.lookup(both.where("v > u"), m, ["u"]).select(
                    F.col("v").alias("hi"), F.col("m").alias("lo")).distinct()
                # small-star: node u links itself and its smaller neighbours to their minimum
                m2 = large.groupBy("hi").agg(F.min("lo").alias("m"))
                moved = self.lookup(large, m2, ["hi"]).where("lo != m").select(
                    F.col("lo").alias("hi"), F.col("m").alias("lo"))
                previous = e
                e = self.cp(moved.unionByName(m2.select("hi", F.col("m").alias("lo"))).distinct())
                self.release(previous)
                if not self._has_non_star(e):
                    break
            labels = e.select(F.col("hi").alias("pos"), F.col("lo").alias("label"))
            nodes = nodes.join(labels, ["pos"], "left")
        else:
            nodes = nodes.withColumn("label", F.lit(None).cast("long"))
        self.stats["component_rounds"] = rounds
        return nodes.select("pos", "ts", F.coalesce("label", "pos").alias("label"))

    @staticmethod
    def _has_non_star(e: DataFrame) -> bool:
        """Whether some node is the ``hi`` of two edges, or both a ``hi`` and a ``lo``."""
        ends = e.select(F.col("hi").alias("node"), F.lit(1).alias("as_hi"), F.lit(0).alias("as_lo"))
        ends = ends.unionByName(
            e.select(F.col("lo").alias("node"), F.lit(0).alias("as_hi"), F.lit(1).alias("as_lo")))
        per_node = ends.groupBy("node").agg(F.sum("as_hi").alias("h"), F.max("as_lo").alias("l"))
        return per_node.where("h > 1 or (h > 0 and l > 0)").limit(1).count() > 0

    def center(self, labels: DataFrame, reps: DataFrame) -> DataFrame:
        """(pos, center) for every representative, by the rule of
        :func:`neardup.groups.center_groups`.

        Components (or what is left of them) with at most ``center_local_max`` unassigned
        members are solved inside one task by ``center_groups`` itself. Larger ones go through
        distributed rounds: the earliest unassigned member of each becomes a center, the other
        unassigned members are tested against it, those that pass join it. After any round the
        rest of a component is decided by its unassigned members alone (``center_groups``'
        invariant), so a component handed to a task mid-way ends as the rounds would end it.
        """
        s = self.settings
        local_max = self.engine.center_local_max
        cols = self.data_columns()
        size = labels.groupBy("label").agg(F.count(F.lit(1)).alias("size"))
        sized = self.keep(self.lookup(labels, size, ["label"]))
        parts = [sized.where("size = 1").select("pos", F.col("pos").alias("center"))]
        data = self.data
        pending = self.keep(sized.where("size > 1").join(data, ["pos"])
                          .select("label", "ts", "pos", "size", *cols))
        rounds = 0
        while True:
            small = pending.where(f"size <= {local_max}").select("label", "ts", "pos", *cols)
            # Eager: the part must not depend on ``pending`` once that is released.
            parts.append(self.cp(self.reduce(small, ["label"], ["ts", "pos"],
                                             partial(_center_task, settings=s),
                                             "pos long, center long")))
            big = pending.where(f"size > {local_max}").drop("size")
            if big.limit(1).count() == 0:
                break
            rounds += 1
            if rounds > _MAX_CENTER_ROUNDS:
                raise RuntimeError("center grouping did not finish")
            heads = self.earliest(big, ["label"], "center").select("label", "center")
            center_data = heads.join(
                big.select(F.col("pos").alias("center"), *[F.col(c).alias(c + "_b") for c in cols]),
                ["center"])
            tested = self.lookup(big.withColumnsRenamed({"sig": "sig_a", "sset": "set_a"}),
                                 center_data, ["label"])
            tested = tested.withColumnsRenamed({"sset_b": "set_b", "pos": "a"})
            checked = self.keep(self.related(tested, ["label", "ts", "a", "center"]))
            parts.append(checked.where("ok or a = center").select(F.col("a").alias("pos"), "center"))
            failed = checked.where("not ok and a != center").select("label", "ts", F.col("a").alias("pos"))
            left = failed.groupBy("label").agg(F.count(F.lit(1)).alias("size"))
            previous = pending
            pending = self.cp(self.lookup(failed, left, ["label"]).join(data, ["pos"])
                              .select("label", "ts", "pos", "size", *cols))
            self.release(previous)
        self.stats["center_rounds"] = rounds
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part)
        return result

    # ------------------------------------------------------------------ pairs

    def original_pairs(self, doc_orig: DataFrame) -> DataFrame:
        """Original -> member for every non-original, valued on (original, member's rep)."""
        members = doc_orig.where("pos != orig")
        rep_pairs = members.select(F.col("orig").alias("a"), F.col("rep").alias("b")).distinct()
        valued = self.relate(rep_pairs, ["a", "b"]).select(
            F.col("a").alias("orig"), F.col("b").alias("rep"), "value", F.col("ok").alias("passed"))
        return members.join(valued, ["orig", "rep"]).select(
            F.col("orig").alias("pos_a"), F.col("pos").alias("pos_b"), "value", "passed")

    def all_pairs(self, docrep: DataFrame, reps: DataFrame, fp_pairs, fp_rep) -> DataFrame:
        """Every near-duplicate pair of documents (pos_a < pos_b), from representative pairs."""
        s = self.settings
        if s.method == "simhash":
            # representatives with equal fingerprints, and the reps of fingerprint pairs
            same = fp_rep.alias("x").join(fp_rep.alias("y"), "node").where("x.pos < y.pos").select(
                F.col("x.pos").alias("a"), F.col("y.pos").alias("b"), F.lit(0).alias("dist"))
            ra = fp_rep.select(F.col("node").alias("a"), F.col("pos").alias("ra"))
            rb = fp_rep.select(F.col("node").alias("b"), F.col("pos").alias("rb"))
            cross = fp_pairs.join(ra, ["a"]).join(rb, ["b"]).select(
                F.least("ra", "rb").alias("a"), F.greatest("ra", "rb").alias("b"), "dist")
            rep_pairs = self.keep(same.unionByName(cross))
            if s.verify is not None:
                accepted = self.relate(rep_pairs.select("a", "b"), ["a", "b"]).where("ok")
                accepted = accepted.select("a", "b", "value")
            else:
                accepted = rep_pairs.select("a", "b", F.col("dist").alias("value"))
        else:
            rows = self.keep(self.band_rows(reps))
            shared = rows.groupBy("band", "h").agg(F.count(F.lit(1)).alias("n")).where("n > 1")
            rows = self.lookup(rows, shared, ["band", "h"]).select("band", "h", "pos")
            cells = self.split_cells(rows, ["band", "h"], "pos")
            cand = self.reduce(cells, ["band", "h", "lo", "hi"], ["pos"], _bucket_pairs_task,
                               "a long, b long").distinct()
            accepted = self.relate(self.keep(cand), ["a", "b"]).where("ok").select("a", "b", "value")
        accepted = self.keep(accepted)
        same_value = 0 if s.method == "simhash" else 1.0
        members = docrep.select("pos", "rep")
        within = members.alias("x").join(members.alias("y"), "rep").where("x.pos < y.pos").select(
            F.col("x.pos").alias("pos_a"), F.col("y.pos").alias("pos_b"),
            F.lit(same_value).cast("int" if s.method == "simhash" else "double").alias("value"))
        ma = members.select(F.col("rep").alias("a"), F.col("pos").alias("pa"))
        mb = members.select(F.col("rep").alias("b"), F.col("pos").alias("pb"))
        across = accepted.join(ma, ["a"]).join(mb, ["b"]).select(
            F.least("pa", "pb").alias("pos_a"), F.greatest("pa", "pb").alias("pos_b"), "value")
        # Every pair written here was accepted by the relation.
        return within.unionByName(across).withColumn("passed", F.lit(True))


# =============================================================================================
# Input rows: the local reader's checks, as Spark tasks
# =============================================================================================

_POS_BITS = 44
"""Global positions are ``input index << 44 | position inside the input``."""

_CHECKED_SCHEMA = (
    "pos long, line long, src string, id string, text string, ts long, fp long, nbytes long, "
    "reason string, field string, detail string"
)


def _check_document(ident, text, time_value, names):
    """``(True, id, text, ts)`` for a good row, ``(False, reason, field, detail)`` for a bad
    one, by the rules (reasons, fields, details) of :func:`neardup.io.read_documents`."""
    id_field, text_field, time_field = names
    if type(ident) is not str or not ident or not ident.isascii():
        if ident is None:
            return False, f"missing field '{id_field}'", id_field, None
        if isinstance(ident, (int, np.integer)) and not isinstance(ident, bool):
            ident = str(int(ident))
        elif type(ident) is not str:
            return False, "bad id", id_field, f"expected a string or integer, got {_type_name(ident)}"
        if not ident:
            return False, "empty id", id_field, None
        if not ident.isascii() and _utf8_len(ident) is None:
            return False, "invalid UTF-8", id_field, "unpaired surrogate in the id"
    if type(text) is not str:
        if text is None:
            return False, f"missing field '{text_field}'", text_field, None
        return False, "text not a string", text_field, f"got {_type_name(text)}"
    if not text.isascii() and _utf8_len(text) is None:
        return False, "invalid UTF-8", text_field, "unpaired surrogate in the text"
    if time_field is None:
        return True, ident, text, 0
    us = _time_to_us(time_value) if time_value is not None else None
    if us is None:
        if time_value is None or time_value == "":
            return False, f"missing field '{time_field}'", time_field, None
        detail = f"{_short(time_value)} is neither seconds since the epoch nor ISO 8601"
        return False, "bad timestamp", time_field, detail
    return True, ident, text, int(us)


def _check_fingerprint(ident, value, time_value, fingerprint_format):
    """``(True, id, fp, ts)`` or ``(False, reason, field, detail)``, by the rules of
    :func:`neardup.io.read_fingerprints`."""
    if type(ident) is not str or not ident or not ident.isascii():
        checked = _check_document(ident, "", None, ("id", "text", None))
        if not checked[0]:
            return checked
        ident = checked[1]
    if value is None or value == "":
        return False, "missing field 'fingerprint'", "fingerprint", None
    try:
        fp = parse_fingerprint(value, fingerprint_format)
    except ValueError:
        detail = f"{_short(value)} is not a 64-bit fingerprint (format {fingerprint_format!r})"
        return False, "bad fingerprint", "fingerprint", detail
    if time_value is None or (isinstance(time_value, str) and not time_value.strip()):
        return True, ident, fp, 0
    us = _time_to_us(time_value)
    if us is None:
        detail = f"{_short(time_value)} is neither seconds since the epoch nor ISO 8601"
        return False, "bad timestamp", "timestamp", detail
    return True, ident, fp, int(us)


def _parse_json_object(s: str, line: int):
    """The JSON object of one line, or ``(reason, detail)`` as the local reader reports it."""
    if line == 1 and s.startswith("\ufeff"):
        s = s[1:]
    try:
        obj = _parse_json_line(s)
    except (ValueError, RecursionError) as e:
        detail = str(e)
        if line == 1 and s.lstrip().startswith("["):
            detail += "; JSON input must be JSON Lines: one object per line, not an array"
        return None, ("malformed JSON", detail)
    if type(obj) is not dict:
        return None, ("not a JSON object", f"got {_type_name(obj)}")
    return obj, None


def _rows_task(
    batches: Iterable[pa.RecordBatch],
    kind: str,
    names: tuple[str, str, str | None],
    fingerprint_format: str = "auto",
    max_doc_bytes: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Raw input rows -> checked rows (:data:`_CHECKED_SCHEMA`); blank lines are dropped.
    Texts over ``max_doc_bytes`` are bad rows, as in the local reader.

    ``kind``: ``typed`` (columns ``_v_id``, ``_v_text``[, ``_v_time``]), ``jsonl`` (the line in
    ``value``), ``fp_typed`` (``_v_id``, ``_v_fp``[, ``_v_time``]), ``fp_jsonl``, ``fp_plain``
    and ``fp_tsv`` (tab-separated lines; ``.tsv`` IDs are unescaped).
    """
    from neardup.io import _tsv_unescape, oversized_text

    fingerprints = kind.startswith("fp_")
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        lines = batch.column("_nd_line").to_numpy(zero_copy_only=False)
        ids: list[Any] = [None] * n
        values: list[Any] = [None] * n
        times: list[Any] = [None] * n
        early: dict[int, tuple[str, str | None]] = {}
        blank = np.zeros(n, dtype=bool)
        if kind in ("typed", "fp_typed"):
            ids = batch.column("_v_id").to_pylist()
            values = batch.column("_v_fp" if fingerprints else "_v_text").to_pylist()
            if "_v_time" in batch.schema.names:
                times = batch.column("_v_time").to_pylist()
        elif kind in ("jsonl", "fp_jsonl"):
            keys = ("id", "fingerprint", "timestamp") if fingerprints else names
            for i, s in enumerate(batch.column("value").to_pylist()):
                if s is None or not s.strip():
                    blank[i] = True
                    continue
                obj, problem = _parse_json_object(s, int(lines[i]))
                if problem is not None:
                    early[i] = problem
                    continue
                ids[i] = obj.get(keys[0])
                values[i] = obj.get(keys[1])
                times[i] = obj.get(keys[2]) if keys[2] is not None else None
        else:  # fp_plain, fp_tsv
            for i, s in enumerate(batch.column("value").to_pylist()):
                s = (s or "").rstrip("\r\n")
                if lines[i] == 1 and s.startswith("\ufeff"):
                    s = s[1:]
                if not s or s.isspace():
                    blank[i] = True
                    continue
                parts = s.split("\t")
                if len(parts) not in (2, 3):
                    early[i] = ("malformed row", (
                        f"expected id<TAB>fingerprint[<TAB>timestamp], got {len(parts)} fields"))
                    continue
                if parts[1].strip() == "fingerprint":
                    blank[i] = True  # a header line
                    continue
                ident = parts[0]
                if kind == "fp_tsv" and "\\" in ident:
                    ident = _tsv_unescape(ident)
                ids[i], values[i] = ident, parts[1]
                times[i] = parts[2] if len(parts) == 3 else None
        out_id: list[str | None] = [None] * n
        out_text: list[str | None] = [None] * n
        out_ts = np.zeros(n, dtype=np.int64)
        out_fp = np.zeros(n, dtype=np.uint64)
        out_bytes = np.zeros(n, dtype=np.int64)
        reason: list[str | None] = [None] * n
        where: list[str | None] = [None] * n
        detail: list[str | None] = [None] * n
        for i in range(n):
            if blank[i]:
                continue
            if i in early:
                reason[i], detail[i] = early[i]
                continue
            if fingerprints:
                r = _check_fingerprint(ids[i], values[i], times[i], fingerprint_format)
            else:
                r = _check_document(ids[i], values[i], times[i], names)
            if not r[0]:
                reason[i], where[i], detail[i] = r[1], r[2], r[3]
                continue
            out_id[i], out_ts[i] = r[1], r[3]
            if fingerprints:
                out_fp[i], out_text[i] = r[2], ""
            else:
                text = r[2]
                nbytes = len(text) if text.isascii() else _utf8_len(text)
                too_large = oversized_text(nbytes, max_doc_bytes)
                if too_large is not None:
                    out_id[i] = None
                    reason[i], where[i], detail[i] = "document too large", names[1], too_large
                    continue
                out_text[i] = text
                out_bytes[i] = nbytes
        out = _batch({
            "pos": batch.column("_nd_pos"),
            "line": batch.column("_nd_line"),
            "src": batch.column("_nd_src"),
            "id": pa.array(out_id, pa.string()),
            "text": pa.array(out_text, pa.string()),
            "ts": pa.array(out_ts),
            "fp": pa.array(out_fp.view(np.int64)),
            "nbytes": pa.array(out_bytes),
            "reason": pa.array(reason, pa.string()),
            "field": pa.array(where, pa.string()),
            "detail": pa.array(detail, pa.string()),
        })
        yield out if not blank.any() else out.filter(pa.array(~blank))


def _accept_rows(
    checked: DataFrame, on_error: str, units: dict[int, str], job: _Job, line_of=None
) -> tuple[DataFrame, ReadStats]:
    """Good rows minus later repeats of an ID; the first bad row raises (``on_error="raise"``)
    or bad rows are counted by reason (``"skip"``), as in the local reader, where a row is
    checked before its ID is claimed, so a bad row never makes a later row a duplicate.

    ``checked`` must be stored (``job.keep`` or ``job.cp``); it is released here. Returns the
    accepted rows (``pos, id, text, ts, fp, nbytes``, held by ``job``) and the counters.
    """
    try:
        good = checked.where("reason is null")
        first = good.groupBy("id").agg(F.min("pos").alias("first_pos"))
        dups = good.join(first, ["id"]).where("pos > first_pos")
        stats = ReadStats()
        if on_error == "raise":
            _raise_first_bad(checked, dups, units, line_of)
        else:
            reasons = checked.where("reason is not null").groupBy("reason").count().collect()
            for r in reasons:
                stats.skipped_reasons[r["reason"]] += int(r["count"])
            repeated = dups.count()
            if repeated:
                stats.skipped_reasons["duplicate id"] += repeated
            stats.skipped = sum(stats.skipped_reasons.values())
        accepted = job.keep(good.join(dups.select("pos"), ["pos"], "left_anti")
                            .select("pos", "id", "text", "ts", "fp", "nbytes"))
        totals = accepted.agg(F.count(F.lit(1)), F.sum("nbytes")).first()
        stats.documents = int(totals[0])
        stats.bytes = int(totals[1] or 0)
        stats.files = checked.select("src").distinct().count()
    except BaseException:
        job.release()
        raise
    job.release(checked)
    return accepted, stats


def _raise_first_bad(checked: DataFrame, dups: DataFrame, units: dict[int, str], line_of) -> None:
    """Raise the :class:`~neardup.io.InputError` of the first bad row in input order, if any."""
    bad = checked.where("reason is not null").select(
        "pos", "line", "src", "reason", "field", "detail",
        F.lit(None).cast("long").alias("first_pos"), F.lit(None).cast("string").alias("dup"))
    bad = bad.unionByName(dups.select(
        "pos", "line", "src", F.lit("duplicate id").alias("reason"), F.lit("id").alias("field"),
        F.lit(None).cast("string").alias("detail"), "first_pos", F.col("id").alias("dup")))
    found = bad.orderBy("pos").limit(1).collect()
    if not found:
        return
    r = found[0]
    unit = units[int(r.pos) >> _POS_BITS]
    line = line_of(r.pos) if line_of is not None else r.line
    detail = r.detail
    if r.reason == "duplicate id":
        f = checked.where(F.col("pos") == r.first_pos).select("pos", "line", "src").first()
        f_line = line_of(f.pos) if line_of is not None else f.line
        place = f.src if f_line is None else f"{f.src}, {units[int(f.pos) >> _POS_BITS]} {f_line}"
        detail = f"{_short(r.dup)} first seen at {place}"
    raise InputError(r.src, line, r.field, r.reason, detail, unit)


# =============================================================================================
# DataFrame API
# =============================================================================================


def _check_columns(df: DataFrame, columns: Sequence[str | None]) -> None:
    """Raise the reader's ``InputError`` for a named column ``df`` lacks (None: not used)."""
    for col in columns:
        if col is not None and col not in df.columns:
            raise InputError("<DataFrame>", None, col, f"missing field '{col}'",
                             f"no such column; columns are: {', '.join(df.columns)}", "row")


def _dataframe_rows(df: DataFrame, kind: str, cols: dict[str, str | None],
                    position_col: str | None, names, cp,
                    max_doc_bytes: int | None = None) -> tuple[DataFrame, Any]:
    """Checked rows of a DataFrame (positions from ``position_col`` or the current row order)."""
    pos = (F.col(position_col).cast("long") if position_col else F.monotonically_increasing_id())
    select = [pos.alias("_nd_pos"), F.lit(None).cast("long").alias("_nd_line"),
              F.lit("<DataFrame>").alias("_nd_src")]
    select += [F.col(c).alias(alias) for alias, c in cols.items() if c is not None]
    # The checkpoint of the checked rows fixes the positions of monotonically_increasing_id.
    task = partial(_rows_task, kind=kind, names=names, max_doc_bytes=max_doc_bytes)
    checked = cp(df.select(*select).mapInArrow(task, _CHECKED_SCHEMA))

    def line_of(p: int) -> int:
        return checked.where(F.col("pos") <= p).count()  # 1-based row in the current order

    return checked, line_of


def dedup_dataframe(
    df: DataFrame,
    settings: Settings | None = None,
    id_col: str = "id",
    text_col: str = "text",
    time_col: str | None = None,
    *,
    position_col: str | None = None,
    partitions: int | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
    center_local_max: int = DEFAULT_CENTER_LOCAL_MAX,
) -> SparkResult:
    """The whole job on a Spark DataFrame of documents; returns Spark DataFrames.

    Args:
        df: one row per document.
        settings: the run's options (default: those of ``neardup dedup``, MinHash over
            ``char:4`` shingles verified by LCS resemblance 0.8).
        id_col, text_col: columns holding the ID (string or integer) and the text.
        time_col: column holding the time (seconds since the epoch, ISO 8601 strings, dates or
            timestamps, as the file readers accept them); None: all equal, so input order
            decides.
        position_col: a column giving the input order (unique integers); default: the
            DataFrame's current row order (partition by partition), fixed at the start.
        partitions: shuffle partitions (results do not depend on it).
        on_error: ``"raise"`` (``InputError`` for the first bad row: missing or non-string text,
            missing or bad ID, bad time, repeated ID) or ``"skip"`` (drop and count it).
        max_doc_bytes: the largest text accepted, in UTF-8 bytes (None or 0: no limit); a
            longer one is a bad row, as in :func:`neardup.io.read_documents`.
        skew_threshold, center_local_max: see :class:`SparkEngine`.

    Returns:
        :class:`SparkResult`: ``groups`` (``pos, id, duplicate_id, original_id, is_original,
        group_size``), ``pairs`` (``pos_a, pos_b, id_a, id_b, distance|similarity, passed``) and
        ``stats`` (``stats["read"]`` holds the read counters).

    Cost: the local engine's work spread over the cluster, plus shuffles of
    O(documents × tables) rows (SimHash) or O(documents × bands) rows (MinHash).

    Example (needs a Spark session, so not run as a doctest)::

        df = spark.createDataFrame([("a", "x y z w"), ("b", "x y z w")], "id string, text string")
        r = dedup_dataframe(df, Settings())
        [(g.id, g.original_id) for g in r.groups.orderBy("pos").collect()]
        # [('a', 'a'), ('b', 'a')]
    """
    require_pyspark()
    if settings is None:
        settings = Settings(method=DEFAULT_METHOD, shingle=DEFAULT_SHINGLE, threshold=DEFAULT_THRESHOLD)
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be one of raise, skip; got {on_error!r}")
    max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
    _check_columns(df, [id_col, text_col, time_col, position_col])
    engine = SparkEngine(df.sparkSession, partitions=partitions, skew_threshold=skew_threshold,
                         center_local_max=center_local_max)
    reader = _Job(engine, settings)
    checked, line_of = _dataframe_rows(
        df, "typed", {"_v_id": id_col, "_v_text": text_col, "_v_time": time_col}, position_col,
        (id_col, text_col, time_col), reader.cp, max_doc_bytes)
    docs, stats = _accept_rows(checked, on_error, {0: "row"}, reader, line_of)
    result = engine.dedup(docs, settings)
    result.stats["read"] = stats
    result.hold([docs])
    return result


def pairs_dataframe(
    df: DataFrame,
    hamming_k: int = 3,
    *,
    id_col: str = "id",
    fingerprint_col: str = "fingerprint",
    time_col: str | None = None,
    position_col: str | None = None,
    pairs: str = "all",
    grouping: str = "components",
    partitions: int | None = None,
    on_error: str = "raise",
    skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
) -> SparkResult:
    """Every pair of fingerprints within ``hamming_k`` bits, and their groups, on Spark.

    ``df`` holds one row per document: an ID, a fingerprint (a long holding the uint64 bits, as
    Spark and Java store them, or a hex / decimal string) and optionally a time. Identical
    fingerprints are pairs at distance 0. The same result as ``neardup pairs``.

    Example (needs a Spark session, so not run as a doctest)::

        df = spark.createDataFrame([("a", 5), ("b", 4)], "id string, fingerprint long")
        [(p.id_a, p.id_b, p.distance) for p in pairs_dataframe(df, 1).pairs.collect()]
        # [('a', 'b', 1)]
    """
    require_pyspark()
    settings = Settings(method="simhash", hamming_k=hamming_k, verify=None, grouping=grouping,
                        pairs=pairs)
    _check_columns(df, [id_col, fingerprint_col, time_col, position_col])
    engine = SparkEngine(df.sparkSession, partitions=partitions, skew_threshold=skew_threshold)
    reader = _Job(engine, settings)
    checked, line_of = _dataframe_rows(
        df, "fp_typed", {"_v_id": id_col, "_v_fp": fingerprint_col, "_v_time": time_col},
        position_col, ("id", "fingerprint", "timestamp"), reader.cp)
    rows, stats = _accept_rows(checked, on_error, {0: "row"}, reader, line_of)
    result = engine.dedup_fingerprints(rows, settings)
    result.stats["read"] = stats
    result.hold([rows])
    return result


# =============================================================================================
# Reading files with Spark
# =============================================================================================


_FORMAT_OF_EXT = {"jsonl": "jsonl", "json": "jsonl", "ndjson": "jsonl", "csv": "csv",
                  "tsv": "tsv", "parquet": "parquet", "txt": "txt"}


def _local_path(uri: str) -> str:
    return uri.removeprefix("file:")


def _ext(name: str) -> str:
    lower = name.lower().rstrip("/")
    for suffix in (".gz", ".bz2", ".zst", ".zstd"):
        lower = lower.removesuffix(suffix)
    _, dot, ext = lower.rpartition(".")
    return ext if dot and "/" not in ext else ""


def _is_glob_or_dir(path: str) -> bool:
    return any(c in path for c in "*?[{") or path.endswith("/") or os.path.isdir(_local_path(path))


def _directory_ext(path: str) -> str:
    """The most common extension of a local directory's data files ('' if unknown)."""
    local = _local_path(path)
    if not os.path.isdir(local):
        return ""
    exts = Counter(_ext(f) for f in os.listdir(local) if not f.startswith((".", "_")))
    exts.pop("", None)
    return exts.most_common(1)[0][0] if exts else ""


def _document_format(path: str, input_format: str | None) -> str:
    """Format of a document input: ``input_format``, else the extension of the path (or, for a
    local directory, of its files)."""
    if input_format is not None:
        fmt = _FORMAT_OF_EXT.get(input_format.lower().split(".")[0])
        if fmt is None:
            raise ValueError(f"input_format must be one of jsonl, csv, tsv, parquet; got {input_format!r}")
    else:
        fmt = _FORMAT_OF_EXT.get(_ext(path) or _directory_ext(path))
        if fmt is None:
            raise ValueError(
                f"cannot tell the format of {path}: supported extensions are .jsonl/.json/.ndjson, "
                ".csv, .tsv, .parquet (text formats optionally .gz or .bz2), also for the files of "
                "a directory; pass input_format to choose one")
    if fmt == "txt":
        raise ValueError("directories of .txt files are read by the local engine only (--engine local)")
    return fmt


def _read_raw(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    """Spark's reader for one input; a path that does not exist is a ``FileNotFoundError``."""
    try:
        if fmt in ("jsonl", "plain"):
            return spark.read.text(path)
        if fmt in ("csv", "tsv"):
            # RFC 4180 as Python's csv module reads it; empty fields stay empty strings.
            return (spark.read.option("header", True).option("multiLine", True)
                    .option("escape", '"').option("sep", "\t" if fmt == "tsv" else ",")
                    .option("nullValue", _NULL_SENTINEL).csv(path))
        try:
            return spark.read.parquet(path)
        except Exception as error:
            if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
                raise
            raise InputError(path, None, None, "not a readable Parquet file",
                             str(error).splitlines()[0]) from None
    except InputError:
        raise
    except Exception as error:
        if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
            raise FileNotFoundError(f"input not found: {path}") from None
        raise


_NULL_SENTINEL = "\u0000neardup-no-null\u0000"


def _positioned(raw: DataFrame, index: int, path: str, header_lines: int) -> DataFrame:
    """``raw`` plus ``_nd_pos`` (global input order), ``_nd_line`` (1-based line or row within
    its file) and ``_nd_src`` (the file, as the user named it when it is a single file).

    Order: inputs as given, files by path, rows as in the file. Rows of one file split are
    consecutive inside one scan partition, so a row's offset in its split is its
    ``monotonically_increasing_id`` minus the split's first one; split sizes (a small table)
    give each split's offset in its file and in the input. File scans are deterministic, so
    the two passes over the input see the same ids.
    """
    data_cols = raw.columns
    marked = raw.select(
        "*",
        F.col("_metadata.file_path").alias("_nd_file"),
        F.col("_metadata.file_block_start").alias("_nd_block"),
        F.monotonically_increasing_id().alias("_nd_mono"),
    )
    splits = marked.groupBy("_nd_file", "_nd_block").agg(
        F.min("_nd_mono").alias("_nd_first"), F.count(F.lit(1)).alias("_nd_rows"))
    before = Window.unboundedPreceding
    in_file = Window.partitionBy("_nd_file").orderBy("_nd_block").rowsBetween(before, -1)
    in_input = Window.orderBy("_nd_file", "_nd_block").rowsBetween(before, -1)
    splits = splits.select(
        "_nd_file", "_nd_block", "_nd_first",
        F.coalesce(F.sum("_nd_rows").over(in_file), F.lit(0)).alias("_nd_file_before"),
        F.coalesce(F.sum("_nd_rows").over(in_input), F.lit(0)).alias("_nd_input_before"),
    )
    offset = F.col("_nd_mono") - F.col("_nd_first")
    src = (F.lit(path) if not _is_glob_or_dir(path)
           else F.regexp_replace(F.col("_nd_file"), "^file:", ""))
    return marked.join(F.broadcast(splits), ["_nd_file", "_nd_block"]).select(
        *[F.col(f"`{c}`") for c in data_cols],
        (F.lit(index << _POS_BITS).cast("long") + F.col("_nd_input_before") + offset).alias("_nd_pos"),
        (F.col("_nd_file_before") + offset + 1 + header_lines).alias("_nd_line"),
        src.alias("_nd_src"),
    )


def _missing_columns(path: str, raw: DataFrame, wanted: Sequence[str], unit: str) -> None:
    for name in wanted:
        if name not in raw.columns:
            raise InputError(path, 1 if unit == "line" else None, name, f"missing field '{name}'",
                             f"no such column; columns are: {', '.join(raw.columns)}", unit)


def read_documents_spark(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    id_field: str = "id",
    text_field: str = "text",
    time_field: str | None = None,
    input_format: str | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
) -> tuple[DataFrame, ReadStats, DataFrame]:
    """Read documents with Spark's readers: JSON Lines, CSV / TSV (with a header) or Parquet.

    Each path may be a file, a directory of files or a glob, on any file system Spark reads
    (``hdfs://``, ``s3a://``, …); ``.gz`` and ``.bz2`` text files are decompressed. Positions
    follow the local reader: inputs in the given order, then files by path, then rows as in
    the file. Rows are checked as :func:`neardup.io.read_documents` checks them (same reasons
    and fields); errors name the file and the line (JSON Lines: physical line; CSV / TSV:
    the record's first line when no record spans lines; Parquet: row). Spark's readers replace
    invalid UTF-8 and pad short CSV rows, so those two problems are not reported.

    Returns ``(docs, stats, records)``: ``docs`` with ``pos, id, text, ts, fp, nbytes``
    (stored in the executors: :func:`unpersist` ``(docs)`` when done); ``records`` with ``pos, record`` (each input
    row as JSON text, computed lazily, for writing originals back).

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats, _ = read_documents_spark(spark, ["docs.jsonl"], time_field="ts")
    """
    require_pyspark()
    for name, value in (("id_field", id_field), ("text_field", text_field)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if id_field == text_field:
        raise ValueError(f"id_field and text_field must differ, both are {id_field!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be one of raise, skip; got {on_error!r}")
    if not paths:
        raise ValueError("paths must name at least one input, got an empty list")
    max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
    names = (id_field, text_field, time_field)
    checked_parts, record_parts, units = [], [], {}
    for index, path in enumerate(map(str, paths)):
        if path == "-":
            raise ValueError("the Spark engine reads files, not stdin ('-')")
        fmt = _document_format(path, input_format)
        raw = _read_raw(spark, path, fmt)
        units[index] = "row" if fmt == "parquet" else "line"
        if fmt != "jsonl":
            _missing_columns(path, raw, [n for n in names if n], units[index])
        data_cols = list(raw.columns)
        rows = _positioned(raw, index, path, 1 if fmt in ("csv", "tsv") else 0)
        base = [F.col("_nd_pos"), F.col("_nd_line"), F.col("_nd_src")]
        if fmt == "jsonl":
            task_input = rows.select(*base, "value")
            kind = "jsonl"
            record = F.col("value")
        else:
            values = [F.col(f"`{id_field}`").alias("_v_id"), F.col(f"`{text_field}`").alias("_v_text")]
            if time_field:
                values.append(F.col(f"`{time_field}`").alias("_v_time"))
            task_input = rows.select(*base, *values)
            kind = "typed"
            record = F.to_json(F.struct(*[F.col(f"`{c}`") for c in data_cols]),
                               {"ignoreNullFields": "false"})
        checked_parts.append(task_input.mapInArrow(
            partial(_rows_task, kind=kind, names=names, max_doc_bytes=max_doc_bytes),
            _CHECKED_SCHEMA))
        kept = rows if fmt != "jsonl" else rows.where(F.length(F.trim("value")) > 0)
        record_parts.append(kept.select(F.col("_nd_pos").alias("pos"), record.alias("record")))
    reader = _Job(SparkEngine(spark), Settings())
    checked = reader.keep(_union(checked_parts))
    records = _union(record_parts)
    docs, stats = _accept_rows(checked, on_error, units, reader)
    return docs, stats, records


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _fingerprint_format_of(path: str) -> str:
    ext = _ext(path) or _directory_ext(path)
    return {"jsonl": "fp_jsonl", "json": "fp_jsonl", "ndjson": "fp_jsonl", "csv": "csv",
            "parquet": "parquet", "tsv": "fp_tsv"}.get(ext, "fp_plain")


def read_fingerprints_spark(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    on_error: str = "raise",
    fingerprint_format: str = "auto",
) -> tuple[DataFrame, ReadStats]:
    """Read ``id <TAB> fingerprint [<TAB> timestamp]`` rows (or JSON Lines / CSV / Parquet
    tables with those columns) with Spark, checked as :func:`neardup.io.read_fingerprints`
    checks them. Paths may be files, directories (e.g. Hadoop ``part-*`` output) or globs.

    Returns ``(rows, stats)``: ``pos, id, fp`` (a long holding the uint64 bits) ``, ts`` (and
    unused columns), stored in the executors: :func:`unpersist` ``(rows)`` when done.

    Example (needs a Spark session, so not run as a doctest)::

        rows, stats = read_fingerprints_spark(spark, ["fps.tsv"])
    """
    require_pyspark()
    if fingerprint_format not in ("auto", "hex", "dec"):
        raise ValueError(f"fingerprint_format must be one of auto, hex, dec; got {fingerprint_format!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be one of raise, skip; got {on_error!r}")
    parts, units = [], {}
    for index, path in enumerate(map(str, paths)):
        if path == "-":
            raise ValueError("the Spark engine reads files, not stdin ('-')")
        fmt = _fingerprint_format_of(path)
        raw = _read_raw(spark, path, "plain" if fmt.startswith("fp_") else fmt)
        units[index] = "row" if fmt == "parquet" else "line"
        if fmt in ("csv", "parquet"):
            _missing_columns(path, raw, ["id", "fingerprint"], units[index])
        rows = _positioned(raw, index, path, 1 if fmt == "csv" else 0)
        base = [F.col("_nd_pos"), F.col("_nd_line"), F.col("_nd_src")]
        if fmt.startswith("fp_"):
            task_input, kind = rows.select(*base, "value"), fmt
        else:
            values = [F.col("id").alias("_v_id"), F.col("fingerprint").alias("_v_fp")]
            if "timestamp" in raw.columns:
                values.append(F.col("timestamp").alias("_v_time"))
            task_input, kind = rows.select(*base, *values), "fp_typed"
        parts.append(task_input.mapInArrow(
            partial(_rows_task, kind=kind, names=("id", "fingerprint", "timestamp"),
                    fingerprint_format=fingerprint_format), _CHECKED_SCHEMA))
    reader = _Job(SparkEngine(spark), Settings())
    checked = reader.keep(_union(parts))
    rows, stats = _accept_rows(checked, on_error, units, reader)
    stats.bytes = 0
    return rows, stats


# =============================================================================================
# Writing
# =============================================================================================

_TEXT_FORMATS = ("tsv", "csv", "jsonl")


def _single_file_format(path: str) -> tuple[str, bool] | None:
    """(format, compressed) if ``path`` names one file the local writers can write, else None."""
    if path == "-":
        return "tsv", False
    lower = path.lower()
    compressed = lower.endswith((".gz", ".zst"))
    ext = _ext(lower)
    fmt = {"tsv": "tsv", "csv": "csv", "jsonl": "jsonl", "json": "jsonl", "ndjson": "jsonl",
           "parquet": "parquet"}.get(ext)
    if fmt is None or path.endswith("/"):
        return None
    return fmt, compressed


def write_output(df: DataFrame, path: str, order: Sequence[str], columns: Sequence[str],
                 chunk_rows: int = 200_000) -> None:
    """Write ``df`` sorted by ``order``: to one file when ``path`` names one (``.tsv``, ``.csv``,
    ``.jsonl``, ``.parquet``; byte-identical to :func:`neardup.io.write_table`), else to a
    Parquet directory written by Spark.

    A single file streams the rows to the driver partition by partition (uncompressed text
    formats keep only ``chunk_rows`` rows in memory at a time; Parquet and compressed files
    gather the whole table first).

    Example (needs a Spark session, so not run as a doctest)::

        write_output(result.groups, "groups.tsv", ["pos"], ["id", "duplicate_id"])
    """
    ordered = df.orderBy(*order).select(*columns)
    single = _single_file_format(path)
    if single is None:
        ordered.write.mode("overwrite").parquet(path)
        return
    fmt, compressed = single
    chunks = _local_chunks(ordered, list(columns), chunk_rows)
    if fmt == "parquet" or compressed or path == "-":
        parts = list(chunks)
        if parts:
            table = {c: [v for p in parts for v in p[c]] for c in columns}
        else:
            table = {c: [] for c in columns}
        write_table(path, _typed(table, df, columns))
        return
    target = os.path.abspath(path)
    directory = os.path.dirname(target)
    scratch = tempfile.mkdtemp(prefix=".neardup-", dir=directory)
    try:
        assembled = os.path.join(scratch, "all" + Path(path).suffix)
        head = os.path.join(scratch, "head" + Path(path).suffix)
        write_table(head, _typed({c: [] for c in columns}, df, columns))
        with open(assembled, "wb") as out:
            with open(head, "rb") as fh:
                shutil.copyfileobj(fh, out)
            piece = os.path.join(scratch, "piece" + Path(path).suffix)
            for chunk in chunks:
                write_table(piece, _typed(chunk, df, columns), header=False)
                with open(piece, "rb") as fh:
                    shutil.copyfileobj(fh, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(assembled, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _typed(chunk: dict[str, list], df: DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """Columns with the numpy dtypes the local command line writes (exact integers, bools)."""
    kinds = dict(df.dtypes)
    out: dict[str, Any] = {}
    for c in columns:
        values = chunk[c]
        kind = kinds.get(c)
        if kind == "boolean":
            out[c] = np.asarray(values, dtype=bool)
        elif kind in ("bigint", "int"):
            out[c] = np.asarray(values, dtype=np.int64)
        elif kind == "double":
            out[c] = np.asarray(values, dtype=np.float64)
        else:
            out[c] = values
    return out


def _local_chunks(df: DataFrame, columns: list[str], chunk_rows: int) -> Iterator[dict[str, list]]:
    chunk: dict[str, list] = {c: [] for c in columns}
    count = 0
    for row in df.toLocalIterator(prefetchPartitions=True):
        for c, v in zip(columns, row):
            chunk[c].append(v)
        count += 1
        if count >= chunk_rows:
            yield chunk
            chunk, count = {c: [] for c in columns}, 0
    if count:
        yield chunk


def _rounded_pairs(pairs: DataFrame, method: str) -> DataFrame:
    if method == "simhash":
        return pairs
    schema = ", ".join(f"`{n}` {t}" for n, t in pairs.dtypes)
    return pairs.mapInArrow(partial(_round6_task, column="similarity"), schema)


GROUP_COLUMNS = ["id", "duplicate_id", "original_id", "is_original", "group_size"]


def write_result(result: SparkResult, settings: Settings, groups_out: str | None,
                 pairs_out: str | None = None) -> None:
    """Write GROUPS (input order) and PAIRS (the local engine's order; MinHash similarities
    rounded to 6 digits) as ``neardup dedup`` writes them; see :func:`write_output`.

    Example (needs a Spark session, so not run as a doctest)::

        write_result(result, settings, "groups.tsv", "pairs.tsv")
    """
    if groups_out:
        write_output(result.groups, groups_out, ["pos"], GROUP_COLUMNS)
    if pairs_out:
        name = "distance" if settings.method == "simhash" else "similarity"
        write_output(_rounded_pairs(result.pairs, settings.method), pairs_out,
                     list(result.pairs_order), ["id_a", "id_b", name, "passed"])


def run_dedup(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    settings: Settings,
    *,
    pairs_out: str | None = None,
    keep: str | None = None,
    id_field: str = "id",
    text_field: str = "text",
    time_field: str | None = None,
    input_format: str | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    partitions: int | None = None,
) -> tuple[SparkResult, ReadStats]:
    """``neardup dedup --engine spark``: read, dedup and write GROUPS (and PAIRS, originals).

    Outputs naming a file (``.tsv``, ``.csv``, ``.jsonl``, ``.parquet``) are written as the
    local engine writes them; any other path becomes a Parquet directory written by Spark.

    Example (needs a Spark session, so not run as a doctest)::

        run_dedup(spark, ["docs.jsonl"], "groups.tsv", Settings())
    """
    docs, read_stats, raw = read_documents_spark(
        spark, inputs, id_field=id_field, text_field=text_field, time_field=time_field,
        input_format=input_format, on_error=on_error, max_doc_bytes=max_doc_bytes)
    engine = SparkEngine(spark, partitions=partitions)
    result = engine.dedup(docs, settings)
    result.hold([docs])
    try:
        write_result(result, settings, output, pairs_out)
        if keep:
            originals = raw.join(result.groups.where("is_original").select("pos"), ["pos"], "left_semi")
            _write_records(originals, keep)
    finally:
        result.release()
    return result, read_stats


def _write_records(originals: DataFrame, path: str) -> None:
    """The originals' input rows: one file (as :func:`neardup.io.write_records`), or JSON Lines
    text files written by Spark into a directory."""
    ordered = originals.orderBy("pos")
    if _single_file_format(path) is None:
        ordered.select("record").write.mode("overwrite").text(path)
        return
    import json

    def records() -> Iterator[dict]:
        for row in ordered.select("record").toLocalIterator(prefetchPartitions=True):
            yield json.loads(row[0])

    write_records(path, records())


def run_pairs(
    spark: SparkSession,
    inputs: Sequence[str],
    output: str,
    settings: Settings,
    *,
    groups_out: str | None = None,
    fingerprint_format: str = "auto",
    on_error: str = "raise",
    partitions: int | None = None,
) -> tuple[SparkResult, ReadStats]:
    """``neardup pairs --engine spark``: PAIRS (and GROUPS) of precomputed fingerprints.

    Example (needs a Spark session, so not run as a doctest)::

        run_pairs(spark, ["fps.tsv"], "pairs.tsv", Settings(hamming_k=3, pairs="all"))
    """
    rows, stats = read_fingerprints_spark(spark, inputs, on_error=on_error,
                                          fingerprint_format=fingerprint_format)
    result = SparkEngine(spark, partitions=partitions).dedup_fingerprints(rows, settings)
    result.hold([rows])
    try:
        write_result(result, settings, groups_out, output)
    finally:
        result.release()
    return result, stats


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m neardup.engines.spark`` (and ``spark-submit …/spark.py``): the ``neardup``
    command with ``--engine spark`` for ``dedup`` and ``pairs``."""
    from neardup import cli  # the command line sits above the engines; only this entry needs it

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("dedup", "pairs") and "--engine" not in args:
        args += ["--engine", "spark"]
    cli.main(args, prog_name="neardup")


if __name__ == "__main__":
    main()
