"""Readers and writers at the edge of the pipeline.

Reading documents (:mod:`neardup.io.documents`)
    :func:`read_documents` streams :class:`DocumentBatch` objects (ids, texts, timestamps,
    positions) from JSON Lines, CSV, TSV, Parquet, a directory of ``.txt`` files or stdin;
    :func:`read_table` from a table in memory. ``.gz`` / ``.zst`` / ``.zstd`` files are
    decompressed on the fly; each format's rows come from :mod:`neardup.io.sources`.

Reading fingerprints (:mod:`neardup.io.fingerprints`)
    :func:`read_fingerprints` loads ``id <TAB> fingerprint [<TAB> timestamp]`` rows (the seed
    map-reduce format) or the tables :func:`write_table` writes; :class:`FingerprintBatches`
    streams the same rows in batches (:mod:`neardup.io.fingerprint_batches`).

Writing (:mod:`neardup.io.write`, :mod:`neardup.io.files`)
    :func:`write_table` writes result columns as TSV, CSV, JSON Lines or Parquet, vectorised with
    pyarrow, atomically and byte-for-byte reproducibly. :func:`write_records` writes whole input
    rows back (for ``--keep``). :func:`output_set` commits a run's outputs as one set.

Values (:mod:`neardup.io.values`)
    Every document gets an int64 *ordering key* in microseconds since the Unix epoch (UTC):
    JSON numbers and numeric strings are seconds since the epoch (fractions allowed); other
    strings are ISO 8601 (``2024-01-02``, ``2024-01-02T03:04:05.5Z``, ``…+01:00``; a time without
    a zone is UTC); Parquet timestamp / date columns are converted exactly. Without a time field
    every key is 0 and callers break ties by input position. The value as it appeared in the
    input is kept in ``raw_timestamps`` so it can be written back unchanged.
    :func:`format_fingerprints` turns uint64 fingerprints into 16-digit lowercase hex.

Bad input (:mod:`neardup.io.rows`)
    Row-level problems raise :class:`InputError` (a ``ValueError``) naming the file, the line
    (1-based physical line; CSV/TSV count the header; Parquet counts rows) and the field. With
    ``on_error="skip"`` the row is dropped and counted in ``stats.skipped_reasons``. Problems that
    concern a whole file (a missing file, a header without the ID column, an unreadable Parquet
    file, corrupt compressed data) always raise.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "docs.jsonl").write_text('{"id": 1, "text": "a b c"}\\n{"id": 2, "text": "d"}\\n')
    >>> batch = read_documents([d / "docs.jsonl"]).read_all()
    >>> batch.ids, batch.texts, batch.positions.tolist()
    (['1', '2'], ['a b c', 'd'], [0, 1])
    >>> write_table(d / "out.tsv", {"id": batch.ids, "n": [3, 1]})
    >>> (d / "out.tsv").read_text()
    'id\\tn\\n1\\t3\\n2\\t1\\n'
"""

from neardup.io.atomic import check_outputs, output_set, process_gone
from neardup.io.documents import DocumentBatch, DocumentReader, read_documents
from neardup.io.files import INPUT_FORMATS, OUTPUT_FORMATS, local_paths
from neardup.io.fingerprint_batches import FingerprintBatches
from neardup.io.fingerprints import FingerprintTable, read_fingerprints
from neardup.io.rows import (
    DEFAULT_MAX_DOC_BYTES,
    ON_ERROR,
    InputError,
    ReadStats,
    check_max_doc_bytes,
    oversized_text,
)
from neardup.io.sources import read_tsv_table
from neardup.io.tables import TABLE_NAME, read_table
from neardup.io.values import (
    FINGERPRINT_FORMATS,
    format_fingerprints,
    parse_fingerprint,
    parse_timestamp,
    tsv_escape,
    tsv_unescape,
)
from neardup.io.write import TableWriter, write_records, write_table

__all__ = [
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "FINGERPRINT_FORMATS",
    "ON_ERROR",
    "TABLE_NAME",
    "InputError",
    "ReadStats",
    "DocumentBatch",
    "DocumentReader",
    "FingerprintTable",
    "FingerprintBatches",
    "read_documents",
    "read_table",
    "read_fingerprints",
    "parse_fingerprint",
    "parse_timestamp",
    "write_table",
    "TableWriter",
    "write_records",
    "output_set",
    "check_outputs",
    "local_paths",
    "process_gone",
    "read_tsv_table",
    "tsv_escape",
    "tsv_unescape",
    "format_fingerprints",
    "check_max_doc_bytes",
    "oversized_text",
    "DEFAULT_MAX_DOC_BYTES",
]
