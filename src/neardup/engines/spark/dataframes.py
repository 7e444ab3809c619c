"""The job on Spark DataFrames of yours, DataFrames in and DataFrames out:
:func:`dedup_dataframe` (documents) and :func:`pairs_dataframe` (fingerprints), each read and
checked as the file readers check their rows, then run by :class:`SparkEngine`."""

from __future__ import annotations

from neardup.engines.spark.frames import DEFAULT_SKEW_THRESHOLD, Storage
from neardup.engines.spark.job import DEFAULT_CENTER_LOCAL_MAX, SparkEngine
from neardup.engines.spark.read import check_columns, read_dataframe
from neardup.engines.spark.result import SparkResult
from neardup.engines.spark.session import DataFrame, require_pyspark
from neardup.io import DEFAULT_MAX_DOC_BYTES, check_max_doc_bytes
from neardup.settings import DEFAULT_GROUPING, DEFAULT_HAMMING_K, Settings, renamed_keywords

__all__ = ["dedup_dataframe", "pairs_dataframe"]


@renamed_keywords(
    id_col="id_field", text_col="text_field", time_col="time_field", position_col="position_field"
)
def dedup_dataframe(
    df: DataFrame,
    settings: Settings | None = None,
    id_field: str = "id",
    text_field: str = "text",
    time_field: str | None = None,
    *,
    position_field: str | None = None,
    partitions: int | None = None,
    on_error: str = "raise",
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
    skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
    center_local_max: int = DEFAULT_CENTER_LOCAL_MAX,
) -> SparkResult:
    """The whole job on a Spark DataFrame of documents; returns Spark DataFrames.

    Args:
        df: one row per document.
        settings: the run's options (default: ``Settings()``, those of ``neardup dedup``,
            MinHash over ``char:4`` shingles verified by LCS resemblance 0.8).
        id_field, text_field: columns holding the ID (string or integer) and the text, named
            as ``--id-field`` and ``--text-field`` name them (``id_col`` and ``text_col``, and
            the ``_col`` names of the other columns, are deprecated).
        time_field: column holding the time (seconds since the epoch, ISO 8601 strings, dates or
            timestamps, as the file readers accept them); None: all equal, so input order
            decides.
        position_field: a column giving the input order (unique integers); default: the
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
        settings = Settings()
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be one of raise, skip; got {on_error!r}")
    max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
    check_columns(df, [id_field, text_field, time_field, position_field])
    engine = SparkEngine(
        df.sparkSession,
        partitions=partitions,
        skew_threshold=skew_threshold,
        center_local_max=center_local_max,
    )
    read = read_dataframe(
        df,
        Storage(engine.spark, engine.checkpoint_mode),
        "typed",
        {"_v_id": id_field, "_v_text": text_field, "_v_time": time_field},
        (id_field, text_field, time_field),
        position_col=position_field,
        on_error=on_error,
        max_doc_bytes=max_doc_bytes,
    )
    return SparkResult.of_read(engine.dedup_documents, read, settings)


@renamed_keywords(
    id_col="id_field",
    fingerprint_col="fingerprint_field",
    time_col="time_field",
    position_col="position_field",
)
def pairs_dataframe(
    df: DataFrame,
    hamming_k: int = DEFAULT_HAMMING_K,
    *,
    id_field: str = "id",
    fingerprint_field: str = "fingerprint",
    time_field: str | None = None,
    position_field: str | None = None,
    pairs: str = "all",
    grouping: str = DEFAULT_GROUPING,
    partitions: int | None = None,
    on_error: str = "raise",
    skew_threshold: int = DEFAULT_SKEW_THRESHOLD,
) -> SparkResult:
    """Every pair of fingerprints within ``hamming_k`` bits, and their groups, on Spark.

    ``df`` holds one row per document: an ID, a fingerprint (a long holding the uint64 bits, as
    Spark and Java store them, or a hex / decimal string) and optionally a time. Identical
    fingerprints are pairs at distance 0. The same result as ``neardup pairs``. The columns are
    named by ``id_field``, ``fingerprint_field``, ``time_field`` and ``position_field`` (their
    ``_col`` names are deprecated).

    Example (needs a Spark session, so not run as a doctest)::

        df = spark.createDataFrame([("a", 5), ("b", 4)], "id string, fingerprint long")
        [(p.id_a, p.id_b, p.distance) for p in pairs_dataframe(df, 1).pairs.collect()]
        # [('a', 'b', 1)]
    """
    require_pyspark()
    settings = Settings(
        method="simhash", hamming_k=hamming_k, verify=None, grouping=grouping, pairs=pairs
    )
    check_columns(df, [id_field, fingerprint_field, time_field, position_field])
    engine = SparkEngine(df.sparkSession, partitions=partitions, skew_threshold=skew_threshold)
    read = read_dataframe(
        df,
        Storage(engine.spark, engine.checkpoint_mode),
        "fp_typed",
        {"_v_id": id_field, "_v_fp": fingerprint_field, "_v_time": time_field},
        ("id", "fingerprint", "timestamp"),
        position_col=position_field,
        on_error=on_error,
    )
    return SparkResult.of_read(engine.dedup_fingerprints, read, settings)
