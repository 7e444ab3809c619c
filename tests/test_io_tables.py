"""Documents of a table in memory (neardup.io.tables)."""

import doctest

import pyarrow as pa
import pytest

import neardup.io.tables as io_tables
from neardup.io import InputError, read_table


def test_arrow_table_and_mapping_read_alike():
    columns = {"id": [1, "b"], "text": ["x", "y"], "ts": [1, "1970-01-01T00:00:02Z"]}
    from_mapping = read_table(columns, time_field="ts").read_all()
    from_arrow = read_table(
        pa.table({k: pa.array(map(str, v)) for k, v in columns.items()}), time_field="ts"
    ).read_all()
    assert from_mapping.ids == from_arrow.ids == ["1", "b"]
    assert from_mapping.timestamps.tolist() == from_arrow.timestamps.tolist() == [1e6, 2e6]


def test_errors_name_the_table():
    with pytest.raises(InputError, match=r"^<table>, row 2: missing field 'text'"):
        read_table({"id": ["a", "b"], "text": ["x", None]}).read_all()
    with pytest.raises(InputError, match="name the ID column None"):
        read_table({"doc": ["a"], "text": ["x"]})


def test_doctests():
    assert doctest.testmod(io_tables).failed == 0
