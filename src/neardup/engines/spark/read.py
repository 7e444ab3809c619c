"""Reading inputs into Spark DataFrames: files of documents or fingerprints, and DataFrames.

Positions follow the local reader (inputs in the given order, then files by path, then rows as
in the file), and rows are checked inside tasks by the local reader's rules
(:mod:`neardup.engines.spark.rows`), so both engines accept, refuse and number the same rows.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from functools import partial

from neardup.engines.spark.byte_ranges import (
    fetched_texts_task,
    local_path,
    ranged_rows,
    reads_by_ranges,
)
from neardup.engines.spark.frames import Storage, default_checkpoint
from neardup.engines.spark.partitions import input_bytes
from neardup.engines.spark.rows import (
    CHECKED_SCHEMA,
    POS_BITS,
    accept_rows,
    rows_task,
    signed_rows_schema,
    signed_rows_task,
)
from neardup.engines.spark.session import (
    DataFrame,
    F,
    SparkSession,
    Window,
    is_connect,
    require_pyspark,
)
from neardup.engines.spark.tasks import holds_band_hashes
from neardup.io import DEFAULT_MAX_DOC_BYTES, InputError, ReadStats, check_max_doc_bytes
from neardup.io.files import FORMAT_OF_EXTENSION, input_not_found, split_name
from neardup.io.rows import check_field_names, check_on_error, missing_column
from neardup.io.values import check_fingerprint_format
from neardup.settings import Settings

__all__ = [
    "STDIN_REFUSED",
    "check_columns",
    "estimated_documents",
    "file_extension",
    "read_dataframe",
    "read_documents_spark",
    "read_fingerprints_spark",
    "signs_while_reading",
]

SIGNED_READ_DOCUMENTS = 4_000_000
"""Most documents (estimated by :func:`signs_while_reading`) whose rows ``dedup`` signs in the
task that reads them. Signed there, each text crosses from the JVM to Python once, but the
stored rows hold the signatures beside the texts (about 700 bytes a document when measured,
before a verified run stored band hashes instead: about 450): one table that
outgrows the executors' memory sooner than the two it replaces, and whose every narrow read
then takes whole spilled batches from disk. Measured on ``local[2]`` (8 GB heap) against the
run signing the stored rows: 1M English documents 0.89-0.91x (112.8 and 131.2 against 127.1
and 143.9 s), 3M short documents 0.87-0.93x (127.4 and 133.3 against 147.3 and 143.7 s), 10M
short documents 1.03x (539.6 against 525.0 s); the threshold lies between, where
:data:`SERIALISED_DOCUMENTS <neardup.engines.spark.frames.SERIALISED_DOCUMENTS>` finds the
stored rows crowding the heap."""

STDIN_REFUSED = "the Spark engine reads files, not stdin ('-')"
"""Why an input named ``-`` is refused."""

SAMPLE_LINES = 10_000
"""Lines of the input read to estimate its documents (:func:`signs_while_reading`)."""

ESTIMATE_SAMPLE_BYTES = 16 << 20
"""Bytes read from the start of each input file to estimate its lines before Spark starts
(:func:`estimated_documents`)."""

_DATAFRAME = "<DataFrame>"
"""The input name of a DataFrame's rows in messages."""


def check_columns(
    df: DataFrame, columns: Sequence[str | None], path: str = _DATAFRAME, unit: str = "row"
) -> None:
    """Raise the reader's ``InputError`` for the first named column ``df`` lacks (None: not
    used), naming the input ``path`` and its ``unit`` (``"line"`` or ``"row"``). O(columns).

    Example (needs a Spark session, so not run as a doctest)::

        check_columns(df, ["id", "text", None])
    """
    for col in columns:
        if col is not None and col not in df.columns:
            raise missing_column(path, col, df.columns, unit)


def read_dataframe(
    df: DataFrame,
    storage: Storage,
    kind: str,
    columns: dict[str, str | None],
    names: tuple[str, str, str | None],
    *,
    position_col: str | None,
    on_error: str,
    max_doc_bytes: int | None = None,
) -> tuple[DataFrame, ReadStats]:
    """The accepted rows of a DataFrame and the read counters, as :func:`read_documents_spark`
    gives them for files (``kind`` and ``names`` as for
    :func:`~neardup.engines.spark.rows.rows_task`; ``columns`` maps the task's input columns,
    ``_v_id`` …, to ``df``'s columns, None where unused).

    Positions come from ``position_col``, or else the DataFrame's current row order, fixed by
    storing the checked rows; errors name the 1-based row in that order. The rows are held by
    ``storage``. Cost: one pass over ``df`` plus the checks of :func:`accept_rows`.

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats = read_dataframe(df, storage, "typed", {"_v_id": "id", "_v_text": "text"},
                                     ("id", "text", None), position_col=None, on_error="raise")
    """
    pos = F.col(position_col).cast("long") if position_col else F.monotonically_increasing_id()
    select = [
        pos.alias("_nd_pos"),
        F.lit(None).cast("long").alias("_nd_line"),
        F.lit(_DATAFRAME).alias("_nd_src"),
    ]
    select += [F.col(c).alias(alias) for alias, c in columns.items() if c is not None]
    # The checkpoint of the checked rows fixes the positions of monotonically_increasing_id.
    task = partial(rows_task, kind=kind, names=names, max_doc_bytes=max_doc_bytes)
    checked = storage.keep(df.select(*select).mapInArrow(task, CHECKED_SCHEMA))

    def line_of(p: int) -> int:
        return checked.where(F.col("pos") <= p).count()  # 1-based row in the current order

    return accept_rows(checked, on_error, {0: "row"}, storage, line_of)


def file_extension(path: str) -> str:
    """The format extension of a file or directory name, lower case, by the rule of
    :func:`neardup.io.files.split_name`, after a compression suffix Spark reads (``.gz``,
    ``.zst``, ``.zstd`` and also ``.bz2``, which the local reader does not); "" when there is
    none. O(len(path)).

    Example:
        >>> file_extension("hdfs:///in/Docs.JSONL.bz2"), file_extension("out/part-0/")
        ('jsonl', '')
    """
    return _split_name(path)[0]


def _split_name(path: str) -> tuple[str, bool]:
    """(:func:`file_extension`, whether the name ends in a compression suffix Spark reads)."""
    name = path.rstrip("/")
    if name.lower().endswith(".bz2"):
        return split_name(name[: -len(".bz2")])[0], True
    ext, compression = split_name(name)
    return ext, compression is not None


def _is_glob_or_dir(path: str) -> bool:
    return any(c in path for c in "*?[{") or path.endswith("/") or os.path.isdir(local_path(path))


def _directory_ext(path: str) -> str:
    """The most common extension of a local directory's data files ('' if unknown)."""
    local = local_path(path)
    if not os.path.isdir(local):
        return ""
    exts = Counter(file_extension(f) for f in os.listdir(local) if not f.startswith((".", "_")))
    exts.pop("", None)
    return exts.most_common(1)[0][0] if exts else ""


def _document_format(path: str, input_format: str | None) -> str:
    """Format of a document input: ``input_format``, else the extension of the path (or, for a
    local directory, of its files)."""
    if input_format is not None:
        fmt = FORMAT_OF_EXTENSION.get(input_format.lower().split(".")[0])
        if fmt is None:
            raise ValueError(
                f"input_format must be one of jsonl, csv, tsv, parquet; got {input_format!r}"
            )
    else:
        fmt = FORMAT_OF_EXTENSION.get(file_extension(path) or _directory_ext(path))
        if fmt is None:
            raise ValueError(
                f"cannot tell the format of {path}: supported extensions are .jsonl/.json/.ndjson, "
                ".csv, .tsv, .parquet (text formats optionally .gz or .bz2), also for the files of "
                "a directory; choose one with --input-format (input_format in Python)"
            )
    if fmt == "txt":
        raise ValueError(
            "directories of .txt files are read by the local engine only (--engine local)"
        )
    return fmt


def _read_raw(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    """Spark's reader for one input; a path that does not exist is a ``FileNotFoundError``."""
    try:
        if fmt in ("jsonl", "plain"):
            return _analysed(spark.read.text(path))
        if fmt in ("csv", "tsv"):
            # RFC 4180 as Python's csv module reads it; empty fields stay empty strings.
            return _analysed(
                spark.read.option("header", True)
                .option("multiLine", True)
                .option("escape", '"')
                .option("sep", "\t" if fmt == "tsv" else ",")
                .option("nullValue", _NULL_SENTINEL)
                .csv(path)
            )
        try:
            return _analysed(spark.read.parquet(path))
        except Exception as error:
            if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
                raise
            raise InputError(
                path, None, None, "not a readable Parquet file", str(error).splitlines()[0]
            ) from None
    except InputError:
        raise
    except Exception as error:
        if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
            raise input_not_found(path) from None
        raise


def _analysed(frame: DataFrame) -> DataFrame:
    """``frame``, its plan analysed now (its files listed) as a classic session's reader does
    at once: through Spark Connect a reader is a plan sent with the first query, which would
    meet a missing path only there."""
    if is_connect(frame.sparkSession):
        _ = frame.schema
    return frame


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
        F.min("_nd_mono").alias("_nd_first"), F.count(F.lit(1)).alias("_nd_rows")
    )
    before = Window.unboundedPreceding
    in_file = Window.partitionBy("_nd_file").orderBy("_nd_block").rowsBetween(before, -1)
    in_input = Window.orderBy("_nd_file", "_nd_block").rowsBetween(before, -1)
    splits = splits.select(
        "_nd_file",
        "_nd_block",
        "_nd_first",
        F.coalesce(F.sum("_nd_rows").over(in_file), F.lit(0)).alias("_nd_file_before"),
        F.coalesce(F.sum("_nd_rows").over(in_input), F.lit(0)).alias("_nd_input_before"),
    )
    offset = F.col("_nd_mono") - F.col("_nd_first")
    src = (
        F.lit(path)
        if not _is_glob_or_dir(path)
        else F.regexp_replace(F.col("_nd_file"), "^file:", "")
    )
    return marked.join(F.broadcast(splits), ["_nd_file", "_nd_block"]).select(
        *[F.col(f"`{c}`") for c in data_cols],
        (F.lit(index << POS_BITS).cast("long") + F.col("_nd_input_before") + offset).alias(
            "_nd_pos"
        ),
        (F.col("_nd_file_before") + offset + 1 + header_lines).alias("_nd_line"),
        src.alias("_nd_src"),
    )


def estimated_documents(paths: Sequence[str]) -> int | None:
    """The lines of the input files ``paths``, estimated without Spark, before a session
    starts: their bytes divided by the mean bytes of a line among the first
    :data:`ESTIMATE_SAMPLE_BYTES` of them (in the order given; counted exactly when the files
    are that short). None when a path is not an uncompressed file on a local path (a glob, a
    directory, another file system: Spark lists those) or cannot be read (the reader reports
    it). O(paths) ``stat`` calls and at most :data:`ESTIMATE_SAMPLE_BYTES` read.

    Example:
        >>> estimated_documents(["hdfs:///corpus/docs.jsonl"]) is None
        True
    """
    paths = list(map(str, paths))
    if any(path == "-" or _split_name(path)[1] or not reads_by_ranges(path) for path in paths):
        return None
    total = sampled = lines = 0
    try:
        for path in paths:
            with open(local_path(path), "rb") as file:
                size = os.fstat(file.fileno()).st_size
                total += size
                sample = file.read(ESTIMATE_SAMPLE_BYTES - sampled)  # nothing once sampled
            # A file read whole may end without a line end after its last line.
            whole = len(sample) == size and not sample.endswith(b"\n")
            lines += sample.count(b"\n") + (size > 0 and whole)
            sampled += len(sample)
    except OSError:
        return None
    # A sample without a line end lies inside one line: at most one a sample's bytes.
    return round(total * max(lines, 1) / sampled) if sampled else 0


def signs_while_reading(
    spark: SparkSession, paths: Sequence[str], input_format: str | None = None
) -> bool:
    """Whether ``dedup`` signs the rows of ``paths`` in the task that reads them
    (:func:`read_documents_spark`'s ``sign``): always for local files read by byte ranges
    (their stored rows then hold the lines' places, not the texts); for other uncompressed JSON
    Lines files (not directories or globs) of at most :data:`SIGNED_READ_DOCUMENTS` lines in
    all, estimated as their bytes divided by the mean bytes of a line among the first
    :data:`SAMPLE_LINES` of them. Cost: the files' listing and a Spark job reading those lines
    (their lengths sent to the driver).

    Example (needs a Spark session, so not run as a doctest)::

        signs_while_reading(spark, ["docs.jsonl"])  # True for a million documents
    """
    for path in map(str, paths):
        if path == "-":
            return False  # the reader says why it cannot
        compressed = _split_name(path)[1]
        if _is_glob_or_dir(path) or compressed or _document_format(path, input_format) != "jsonl":
            return False
    sizes = [input_bytes(spark, [path]) for path in paths]
    if 0 in sizes:
        return False  # an empty input, or a missing one the reader reports
    if all(_by_ranges(spark, str(path), input_format) for path in paths):
        return True  # signed as read by ranges, the stored rows hold places, not texts
    total = sum(sizes)
    # A limit collected reads the first partitions only (an aggregate over it reads them all).
    lengths = spark.read.text([str(p) for p in paths]).select(F.octet_length("value"))
    sample = [row[0] + 1 for row in lengths.limit(SAMPLE_LINES).collect()]
    return bool(sample) and total * len(sample) <= SIGNED_READ_DOCUMENTS * sum(sample)


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
    sign: Settings | None = None,
    records: bool = True,
) -> tuple[DataFrame, ReadStats, DataFrame | None]:
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
    row as JSON text, computed lazily, for writing originals back), or None with
    ``records=False``, which also leaves Spark's text source out of the files read by byte
    ranges (below): a run that writes no originals back spares the driver the source's and the
    line numbering's plans (1.1 s of a 100,000-document run's start on ``local[2]``).

    An uncompressed JSON Lines file on a local path (which every executor reads, as Spark's
    ``file:`` reader needs) is read by byte ranges inside the tasks, the local engine's way
    (:mod:`~neardup.engines.spark.byte_ranges`), not through Spark's text source; its lines end
    at ``\\n`` as the local reader's do. When every input is read so and ``sign`` is given, the
    stored rows hold each line's place (``loc``, ``span``) and an empty text: the few texts
    compared are read back from the files (the DataFrame's ``_neardup_refetch`` task, which
    the tasks relating pairs run: :func:`~neardup.engines.spark.verify.relate`).

    With ``sign`` (the run's settings), the task that checks a row also signs its text
    (:func:`~neardup.engines.spark.rows.signed_rows_task`): ``docs`` then also hold the
    signature columns (``c0, c1, sig, empty``, and ``size, sketch`` when
    :attr:`~neardup.settings.Settings.lcs_bounded`; ``sig`` the band hashes where
    :func:`~neardup.engines.spark.tasks.holds_band_hashes`), and the texts cross from the
    JVM to the Python workers once instead of twice (read, then signed from the stored rows).

    Example (needs a Spark session, so not run as a doctest)::

        docs, stats, _ = read_documents_spark(spark, ["docs.jsonl"], time_field="ts")
    """
    require_pyspark()
    check_field_names(id_field, text_field, time_field)
    check_on_error(on_error)
    if not paths:
        raise ValueError("paths must name at least one input, got an empty list")
    max_doc_bytes = check_max_doc_bytes(max_doc_bytes)
    names = (id_field, text_field, time_field)
    checked_parts, record_parts, units = [], [], {}
    ranged = [_by_ranges(spark, str(path), input_format) for path in paths]
    # Signed as they are read, rows read by ranges need not keep their texts: their places do.
    placed = sign is not None and all(ranged)
    for index, path in enumerate(map(str, paths)):
        if path == "-":
            raise ValueError(STDIN_REFUSED)
        fmt = _document_format(path, input_format)
        units[index] = "row" if fmt == "parquet" else "line"
        kind = "jsonl" if fmt == "jsonl" else "typed"
        task = partial(rows_task, kind=kind, names=names, max_doc_bytes=max_doc_bytes)
        schema = CHECKED_SCHEMA
        if sign is not None:
            bounds = sign.lcs_bounded
            banded = holds_band_hashes(sign)
            task = partial(
                signed_rows_task, settings=sign, bounds=bounds, banded=banded, **task.keywords
            )
            schema = signed_rows_schema(sign, bounds)
        if ranged[index]:
            checked_parts.append(ranged_rows(spark, path, index << POS_BITS, task, schema, placed))
            if not records:
                continue
        raw = _read_raw(spark, path, fmt)
        if fmt != "jsonl":
            check_columns(raw, [n for n in names if n], path, units[index])
        data_cols = list(raw.columns)
        rows = _positioned(raw, index, path, 1 if fmt in ("csv", "tsv") else 0)
        base = [F.col("_nd_pos"), F.col("_nd_line"), F.col("_nd_src")]
        if fmt == "jsonl":
            task_input = rows.select(*base, "value")
            record = F.col("value")
        else:
            values = [
                F.col(f"`{id_field}`").alias("_v_id"),
                F.col(f"`{text_field}`").alias("_v_text"),
            ]
            if time_field:
                values.append(F.col(f"`{time_field}`").alias("_v_time"))
            task_input = rows.select(*base, *values)
            record = F.to_json(
                F.struct(*[F.col(f"`{c}`") for c in data_cols]), {"ignoreNullFields": "false"}
            )
        if not ranged[index]:
            checked_parts.append(task_input.mapInArrow(task, schema))
        if records:
            kept = rows if fmt != "jsonl" else rows.where(F.length(F.trim("value")) > 0)
            record_parts.append(kept.select(F.col("_nd_pos").alias("pos"), record.alias("record")))
    reader = Storage(spark, default_checkpoint(spark))
    checked = reader.keep(_union(checked_parts), columnar=True)
    docs, stats = accept_rows(checked, on_error, units, reader)
    records = _union(record_parts) if records else None
    if placed:
        reread = partial(rows_task, kind="jsonl", names=names, max_doc_bytes=max_doc_bytes)
        # Absolute: an executor's working folder is not the driver's.
        files = [os.path.abspath(local_path(str(path))) for path in paths]
        docs._neardup_refetch = partial(
            fetched_texts_task, paths=files, pos_bits=POS_BITS, task=reread
        )
    return docs, stats, records


def _by_ranges(spark: SparkSession, path: str, input_format: str | None) -> bool:
    """Whether the input ``path`` of documents is read by byte ranges
    (:mod:`~neardup.engines.spark.byte_ranges`): an uncompressed JSON Lines file on a local
    path."""
    if not _plain_local_file(spark, path):
        return False
    try:
        fmt = _document_format(path, input_format)
    except ValueError:
        return False  # the reader says why
    return fmt == "jsonl"


def _plain_local_file(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` names one uncompressed file on a local path, which the tasks can read
    by byte ranges (:func:`~neardup.engines.spark.byte_ranges.reads_by_ranges`, which leaves
    out globs and directories). Never through Spark Connect: a path is then the server's, and
    a file of the client's may not be there."""
    if is_connect(spark):
        return False
    return path != "-" and not _split_name(path)[1] and reads_by_ranges(path)


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _fingerprint_format_of(path: str) -> str:
    ext = file_extension(path) or _directory_ext(path)
    return {"jsonl": "fp_jsonl", "csv": "csv", "parquet": "parquet", "tsv": "fp_tsv"}.get(
        FORMAT_OF_EXTENSION.get(ext), "fp_plain"
    )


def read_fingerprints_spark(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    on_error: str = "raise",
    fingerprint_format: str = "auto",
) -> tuple[DataFrame, ReadStats]:
    """Read ``id <TAB> fingerprint [<TAB> timestamp]`` rows (or JSON Lines / CSV / Parquet
    tables with those columns) with Spark, checked as :func:`neardup.io.read_fingerprints`
    checks them. Paths may be files, directories (e.g. Hadoop ``part-*`` output) or globs;
    an uncompressed file of lines on a local path is read by byte ranges inside the tasks
    (:func:`~neardup.engines.spark.byte_ranges.ranged_rows`), as the documents' JSON Lines are.

    Returns ``(rows, stats)``: ``pos, id, fp`` (a long holding the uint64 bits) ``, ts`` (and
    unused columns), stored in the executors: :func:`unpersist` ``(rows)`` when done.

    Example (needs a Spark session, so not run as a doctest)::

        rows, stats = read_fingerprints_spark(spark, ["fps.tsv"])
    """
    require_pyspark()
    check_fingerprint_format(fingerprint_format)
    check_on_error(on_error)
    parts, units = [], {}
    for index, path in enumerate(map(str, paths)):
        if path == "-":
            raise ValueError(STDIN_REFUSED)
        fmt = _fingerprint_format_of(path)
        units[index] = "row" if fmt == "parquet" else "line"
        task = partial(
            rows_task,
            kind=fmt if fmt.startswith("fp_") else "fp_typed",
            names=("id", "fingerprint", "timestamp"),
            fingerprint_format=fingerprint_format,
        )
        if fmt.startswith("fp_") and _plain_local_file(spark, path):
            # Read by byte ranges in the tasks: no pass of Spark's to number the lines.
            parts.append(ranged_rows(spark, path, index << POS_BITS, task, CHECKED_SCHEMA))
            continue
        raw = _read_raw(spark, path, "plain" if fmt.startswith("fp_") else fmt)
        if fmt in ("csv", "parquet"):
            check_columns(raw, ["id", "fingerprint"], path, units[index])
        rows = _positioned(raw, index, path, 1 if fmt == "csv" else 0)
        base = [F.col("_nd_pos"), F.col("_nd_line"), F.col("_nd_src")]
        if fmt.startswith("fp_"):
            task_input = rows.select(*base, "value")
        else:
            values = [F.col("id").alias("_v_id"), F.col("fingerprint").alias("_v_fp")]
            if "timestamp" in raw.columns:
                values.append(F.col("timestamp").alias("_v_time"))
            task_input = rows.select(*base, *values)
        parts.append(task_input.mapInArrow(task, CHECKED_SCHEMA))
    reader = Storage(spark, default_checkpoint(spark))
    checked = reader.keep(_union(parts), columnar=True)
    rows, stats = accept_rows(checked, on_error, units, reader)
    stats.bytes = 0
    return rows, stats
