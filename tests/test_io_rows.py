"""The row rules: bad rows raised or skipped, duplicate IDs, the size limit (neardup.io.rows)."""

import doctest
import json
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from io_helpers import jsonl, read_all

import neardup.io as nio
import neardup.io.rows as io_rows
from neardup.io import (
    InputError,
    read_documents,
)

BAD_JSONL = [
    # (line content, reason, field, time_field)
    (b'{"id": "x", "text": ', "malformed JSON", None, None),
    (b'["id", "text"]', "not a JSON object", None, None),
    (b'{"text": "t"}', "missing field 'id'", "id", None),
    (b'{"id": null, "text": "t"}', "missing field 'id'", "id", None),
    (b'{"id": "x"}', "missing field 'text'", "text", None),
    (b'{"id": "x", "text": null}', "missing field 'text'", "text", None),
    (b'{"id": "x", "text": 5}', "text not a string", "text", None),
    (b'{"id": "x", "text": "\\ud800"}', "invalid UTF-8", "text", None),
    (b'{"id": [1], "text": "t"}', "bad id", "id", None),
    (b'{"id": "", "text": "t"}', "empty id", "id", None),
    (b'{"id": "x", "text": "caf\xe9"}', "invalid UTF-8", None, None),
    (b'{"id": "x", "text": "t", "ts": "soon"}', "bad timestamp", "ts", "ts"),
    (b'{"id": "x", "text": "t"}', "missing field 'ts'", "ts", "ts"),
    (b'{"id": "good", "text": "dup"}', "duplicate id", "id", None),
]


def bad_file(tmp_path, content):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(
        b'{"id": "good", "text": "ok", "ts": 1}\n\n'
        + content
        + b'\n{"id": "after", "text": "z", "ts": 2}\n'
    )
    return p


@pytest.mark.parametrize("content, reason, field, time_field", BAD_JSONL)
def test_bad_jsonl_raises(tmp_path, content, reason, field, time_field):
    p = bad_file(tmp_path, content)
    with pytest.raises(InputError) as e:
        read_all([p], time_field=time_field)
    err = e.value
    assert (err.path, err.line, err.field, err.reason) == (str(p), 3, field, reason)
    message = str(err)
    assert str(p) in message and "line 3" in message and reason in message
    if field is not None:
        assert f"'{field}'" in message
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("content, reason, field, time_field", BAD_JSONL)
def test_bad_jsonl_skip(tmp_path, content, reason, field, time_field):
    p = bad_file(tmp_path, content)
    batch, stats = read_all([p], time_field=time_field, on_error="skip")
    assert batch.ids == ["good", "after"] and batch.positions.tolist() == [0, 1]
    assert stats.skipped == 1 and stats.skipped_reasons == {reason: 1}
    assert stats.documents == 2


def test_duplicate_ids_across_files(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", [{"id": 1, "text": "x"}, {"id": 2, "text": "y"}])
    b = tmp_path / "b.csv"
    b.write_text("id,text\n3,z\n2,w\n")
    with pytest.raises(InputError) as e:
        read_all([a, b])
    err = e.value
    assert (err.path, err.line, err.field, err.reason) == (str(b), 3, "id", "duplicate id")
    assert f"{a}, line 2" in str(err) and f"{b}, line 3" in str(err)
    batch, stats = read_all([a, b], on_error="skip")
    assert batch.ids == ["1", "2", "3"] and batch.texts[1] == "y"
    assert stats.skipped_reasons == {"duplicate id": 1}


def test_input_error_pickles():
    err = InputError("f.jsonl", 3, "text", "missing field 'text'")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.field, back.reason, str(back)) == (
        "f.jsonl",
        3,
        "text",
        "missing field 'text'",
        "f.jsonl, line 3: missing field 'text'",
    )


def test_duplicate_in_parquet_names_rows(tmp_path):
    for name in ("a", "b"):
        pq.write_table(
            pa.table({"id": ["x", name], "text": ["t", "u"]}), tmp_path / f"{name}.parquet"
        )
    with pytest.raises(InputError) as e:
        read_all([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert (
        e.value.line == 1
        and "a.parquet, row 1" in str(e.value)
        and "b.parquet, row 1" in str(e.value)
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(["a", "b", "c", "é", "a b", "7"]), st.just("BAD")),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 7),
)
def test_duplicate_ids_found_in_batches_as_row_by_row(tmp_path_factory, ids, batch_size):
    """The batched duplicate check reports what a row-by-row check of a dict reports: the first
    bad row in input order raises; skipping keeps each ID's first row."""
    path = tmp_path_factory.mktemp("dups") / "d.jsonl"
    lines = [
        '{"id": 1, "text": 5}' if i == "BAD" else json.dumps({"id": i, "text": "t"}) for i in ids
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen, expected, first_error = {}, [], None
    for n, ident in enumerate(ids, 1):
        if ident == "BAD":
            first_error = first_error or (n, "text not a string")
        elif ident in seen:
            first_error = first_error or (n, f"first seen at {path}, line {seen[ident]}")
        else:
            seen[ident] = n
            expected.append(ident)
    reader = read_documents([path], on_error="skip", batch_size=batch_size)
    batches = list(reader)
    assert [i for b in batches for i in b.ids] == expected
    assert [p for b in batches for p in b.positions.tolist()] == list(range(len(expected)))
    assert reader.stats.documents == len(expected)
    assert reader.stats.skipped == len(ids) - len(expected)
    if first_error is None:
        return
    with pytest.raises(InputError) as info:
        list(read_documents([path], batch_size=batch_size))
    assert f"line {first_error[0]}," in str(info.value)
    assert first_error[1] in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=8))
def test_utf8_bytes_counts_what_encoding_counts(texts):
    assert io_rows.utf8_bytes(texts) == sum(len(t.encode("utf-8")) for t in texts)


def _oversized_inputs(tmp_path):
    """The same three documents (the middle one 40 bytes of UTF-8) in every input format."""
    rows = [("a", "short one"), ("b", "é" * 20), ("c", "short two")]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), "utf-8")
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in rows), "utf-8")
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows]}), parquet)
    folder = tmp_path / "txt"
    folder.mkdir()
    for i, t in rows:
        (folder / f"{i}.txt").write_text(t, "utf-8")
    return [jsonl, csv_path, parquet, folder]


@pytest.mark.parametrize("kind", range(4))
def test_max_doc_bytes_refuses_or_skips_long_texts(tmp_path, kind):
    path = _oversized_inputs(tmp_path)[kind]
    with pytest.raises(InputError) as error:
        read_documents([path], max_doc_bytes=39).read_all()
    message = str(error.value)
    assert "document too large" in message and "40 bytes" in message and "39" in message
    assert ["line 2", "line 3", "row 2", "b.txt"][kind] in message
    reader = read_documents([path], max_doc_bytes=39, on_error="skip")
    assert [i.removesuffix(".txt") for i in reader.read_all().ids] == ["a", "c"]
    assert reader.stats.skipped_reasons == {"document too large": 1}
    assert reader.stats.documents + reader.stats.skipped == 3
    for limit in (40, 0, None):  # at the limit, or no limit
        assert len(read_documents([path], max_doc_bytes=limit).read_all()) == 3


def test_max_doc_bytes_default_and_bad_values(tmp_path):
    path = tmp_path / "d.jsonl"
    big = "word " * (nio.DEFAULT_MAX_DOC_BYTES // 5 + 1)
    path.write_text(json.dumps({"id": "x", "text": big}) + "\n", "utf-8")
    with pytest.raises(InputError, match="document too large"):
        read_documents([path]).read_all()
    for bad in (-1, 1.5, "16M", True):
        with pytest.raises(ValueError, match="max_doc_bytes must be"):
            read_documents([path], max_doc_bytes=bad)


def test_docstring_examples():
    assert doctest.testmod(io_rows).failed == 0
