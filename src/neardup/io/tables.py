"""Documents of a table in memory: a pandas DataFrame, an Arrow table or a mapping of columns.

:func:`read_table` reads one as :func:`~neardup.io.documents.read_documents` reads files: the
same :class:`~neardup.io.documents.DocumentReader`, the same row checks; errors name the table
:data:`TABLE_NAME`.

Example:
    >>> read_table({"id": [1, 2], "text": ["a", "b"]}).read_all().ids
    ['1', '2']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from neardup.io.documents import DocumentReader
from neardup.io.files import Source
from neardup.io.rows import DEFAULT_MAX_DOC_BYTES, check_reading_options, missing_column

#: The name of a table in memory in :class:`~neardup.io.rows.InputError` messages.
TABLE_NAME = "<table>"


def _python_values(column: Any) -> list:
    """A pandas / Arrow column as Python values, missing values (None, NaN, NaT) as None."""
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column.to_pylist()
    try:
        return pa.array(column, from_pandas=True).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        # Values of several types in one object column (1 and "1"): kept as they are, so the
        # row checks see them as the file readers would.
        return column.astype(object).where(column.notna(), None).tolist()


def read_table(
    data: Any,
    *,
    id_field: str | None = "id",
    text_field: str = "text",
    time_field: str | None = None,
    on_error: str = "raise",
    batch_size: int = 10_000,
    max_doc_bytes: int | None = DEFAULT_MAX_DOC_BYTES,
) -> DocumentReader:
    """Documents of a table in memory, checked by the rules of :func:`read_documents`.

    ``data`` is a pandas DataFrame, a pyarrow Table or a mapping of column name to sequence.
    Every row is validated as a row of a file would be: IDs are non-empty strings or integers and
    unique (``1`` and ``"1"`` are the same ID), texts are strings, times are seconds since the
    epoch, ISO 8601 strings or datetimes (naive ones are UTC, aware ones converted), and a
    missing value (None, NaN, NaT) or an out-of-range time is a bad row. Errors name the table as
    ``<table>`` and the row counting from 1 (row k is ``df.iloc[k - 1]``). ``id_field=None``
    numbers the rows from 0 instead of reading IDs. A column named by a field but absent from
    the table is an error that lists the columns.

    Returns a single-use :class:`DocumentReader`. Cost: O(rows), one Python value per cell.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"],
        ...                    "ts": ["2024-01-02", "2024-01-01T00:00:00+01:00"]})
        >>> read_table(df, time_field="ts").read_all().timestamps.tolist()
        [1704153600000000, 1704063600000000]
        >>> from neardup.io.rows import InputError
        >>> try:
        ...     read_table(pd.DataFrame({"id": [1, "1"], "text": ["x", "y"]})).read_all()
        ... except InputError as error:
        ...     print(error)
        <table>, row 2, field 'id': duplicate id ('1' first seen at <table>, row 1)
    """
    columns: dict[str, list] = {}
    if hasattr(data, "column_names") and hasattr(data, "column"):  # pyarrow.Table
        names = list(data.column_names)
        get = data.column
    elif hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas.DataFrame
        names = [str(c) for c in data.columns]
        get = data.__getitem__
    elif isinstance(data, Mapping):
        names = [str(c) for c in data]
        get = data.__getitem__
    else:
        raise TypeError(
            f"data must be a pandas DataFrame, a pyarrow Table or a mapping of columns; "
            f"got {type(data).__name__}"
        )
    row_numbers = id_field is None
    if row_numbers:
        id_field = "\0row"  # a name no table holds: IDs are the row positions
    check_reading_options(id_field, text_field, time_field, on_error, batch_size)  # type: ignore[arg-type]
    if not row_numbers and id_field not in names:
        raise missing_column(
            TABLE_NAME,
            id_field,
            names,
            "row",  # type: ignore[arg-type]
            "; name the ID column None to number the rows",
        )
    for name in (id_field, text_field, time_field):
        if name is not None and name in names:
            values = get(name)
            columns[name] = values if isinstance(values, list) else _python_values(values)
    if row_numbers and text_field in columns:
        columns[id_field] = [str(i) for i in range(len(columns[text_field]))]  # type: ignore[index]
    return DocumentReader(
        [Source(TABLE_NAME, TABLE_NAME, "table", None, columns)],
        id_field=id_field,  # type: ignore[arg-type]
        text_field=text_field,
        time_field=time_field,
        on_error=on_error,
        batch_size=batch_size,
        keep_records=False,
        max_doc_bytes=max_doc_bytes,
    )
