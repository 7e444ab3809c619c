"""neardup.api: the Python entry points, held to the command line's rules."""

import numpy as np
import pandas as pd
import pytest

import neardup

TEXTS = [
    "the quick brown fox jumps over the lazy dog near the river",
    "the quick brown fox jumps over the lazy dog near the river!",
    "a completely different note about the weather in spring",
]


def test_dedup_groups_with_the_command_lines_defaults():
    df = pd.DataFrame({"id": ["a", "b", "c"], "text": TEXTS})
    groups = neardup.dedup(df)
    assert groups["original_id"].tolist() == ["a", "a", "c"]
    assert groups["group_size"].tolist() == [2, 2, 1]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"hamming_k": 3}, "hamming_k applies to method simhash"),
        ({"method": "simhash", "threshold": 0.5}, "threshold applies to method minhash"),
        ({"method": "simhash", "num_perm": 64}, "num_perm applies to method minhash"),
    ],
)
def test_options_of_the_other_method_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        neardup.dedup(pd.DataFrame({"id": ["a"], "text": ["x y z"]}), **options)


def test_simhash_options_apply_with_simhash():
    groups = neardup.dedup(TEXTS, method="simhash", hamming_k=3)
    assert groups["original_id"].tolist() == ["0", "0", "2"]
    assert np.asarray(groups["is_original"]).tolist() == [True, False, True]


# -- the table is read by the command line's rules ----------------------------------------------


def _frame(**columns):
    return pd.DataFrame({"id": ["a", "b", "c"], "text": TEXTS, **columns})


@pytest.mark.parametrize(
    "frame, options, message",
    [
        (
            pd.DataFrame({"id": ["a", "a", "c"], "text": TEXTS}),
            {},
            r"<table>, row 2, field 'id': duplicate id \('a' first seen at <table>, row 1\)",
        ),
        (pd.DataFrame({"id": [1, "1", 2], "text": TEXTS}), {}, r"row 2, field 'id': duplicate id"),
        (
            pd.DataFrame({"docid": ["a", "b", "c"], "text": TEXTS}),
            {"id_field": "id"},
            r"missing field 'id' \(no such column; columns are: docid, text",
        ),
        (_frame(), {"id_field": "docid"}, r"missing field 'docid'"),
        (pd.DataFrame({"text": TEXTS}), {}, r"missing field 'id'.*None to number the rows"),
        (_frame(ts=[1.0, np.nan, 3.0]), {"time_field": "ts"}, r"row 2: missing field 'ts'"),
        (
            _frame(ts=pd.to_datetime(["2020-01-01", None, "2020-01-03"])),
            {"time_field": "ts"},
            r"row 2: missing field 'ts'",
        ),
        (
            _frame(ts=[1.0, 1e30, 3.0]),
            {"time_field": "ts"},
            r"row 2, field 'ts': bad timestamp \(1e\+30 seconds is out of range",
        ),
        (
            _frame(ts=["2020-01-01", "yesterday", "2020-01-03"]),
            {"time_field": "ts"},
            r"row 2, field 'ts': bad timestamp \('yesterday' is neither",
        ),
        (pd.DataFrame({"id": ["a", "b"], "text": ["x", None]}), {}, r"row 2: missing field 'text'"),
        (
            pd.DataFrame({"id": ["a", "b"], "text": ["x", 5]}),
            {},
            r"row 2, field 'text': text not a string",
        ),
        (pd.DataFrame({"id": ["a", ""], "text": ["x", "y"]}), {}, r"row 2, field 'id': empty id"),
    ],
    ids=[
        "duplicate",
        "int-and-str",
        "missing-default",
        "missing-named",
        "no-id-column",
        "nan",
        "nat",
        "1e30",
        "garbage-time",
        "null-text",
        "number-text",
        "empty-id",
    ],
)
def test_bad_rows_are_refused_as_the_command_line_refuses_them(frame, options, message):
    with pytest.raises(neardup.io.InputError, match=message):
        neardup.dedup(frame, **options)


def test_bad_rows_are_skipped_and_counted_when_asked():
    frame = _frame(ts=[1.0, np.nan, 3.0])
    groups = neardup.dedup(frame, time_field="ts", on_error="skip")
    assert groups["id"].tolist() == ["a", "c"]
    assert groups.attrs["skipped_rows"] == 1


def _originals(frame, **options):
    return neardup.dedup(frame, time_field="ts", **options)["original_id"].tolist()


@pytest.mark.parametrize(
    "stamps",
    [
        ["2020-01-02", "2020-01-02T00:30:00+01:00", "2020-01-03"],  # ISO 8601, a zone
        pd.to_datetime(["2020-01-02", "2020-01-01", "2020-01-03"]).tz_localize("Asia/Seoul"),
        pd.to_datetime(["2020-01-02", "2020-01-01", "2020-01-03"]),  # naive = UTC
        [1577923200, 1577836800.5, 1578009600],  # seconds
    ],
    ids=["iso-strings", "tz-aware", "naive", "seconds"],
)
def test_times_are_read_as_the_command_line_reads_them(stamps, tmp_path):
    # "b" is the earlier of the two near-duplicates in every form, so it is the original.
    assert _originals(_frame(ts=stamps)) == ["b", "b", "c"]
    # The same column through the command line's reader gives the same keys.
    path = tmp_path / "docs.jsonl"
    frame = _frame(ts=stamps)
    frame["ts"] = [str(v) if not isinstance(v, (int, float)) else v for v in stamps]
    frame.to_json(path, orient="records", lines=True, force_ascii=False)
    from_file = neardup.io.read_documents([path], time_field="ts").read_all().timestamps
    from_table = neardup.io.read_table(_frame(ts=stamps), time_field="ts").read_all().timestamps
    assert from_table.tolist() == from_file.tolist()


def test_integer_ids_become_strings_and_arrow_tables_are_read_alike():
    import pyarrow as pa

    table = pa.table({"id": [10, 11, 12], "text": TEXTS})
    assert neardup.dedup(table)["original_id"].tolist() == ["10", "10", "12"]
    assert neardup.dedup(table.to_pandas())["original_id"].tolist() == ["10", "10", "12"]
    assert neardup.dedup(pd.DataFrame({"text": TEXTS}), id_field=None)["id"].tolist() == [
        "0",
        "1",
        "2",
    ]


def test_the_readmes_python_example_runs(monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    scope: dict = {}
    exec(compile(code, "README.md (Python API)", "exec"), scope)
    groups = scope["groups"]
    assert len(groups) == len(scope["df"]) and set(groups["original_id"]) <= set(groups["id"])
    assert scope["originals"].shape == scope["fps"].shape


@pytest.mark.parametrize(
    "old, new, value",
    [
        ("id_column", "id_field", "docid"),
        ("text_column", "text_field", "body"),
        ("time_column", "time_field", "ts"),
    ],
)
def test_the_old_field_keywords_still_work_with_a_deprecation_warning(old, new, value):
    frame = pd.DataFrame(
        {
            "docid": ["a", "b", "c"],
            "body": TEXTS,
            "ts": [3, 2, 1],
            "id": ["x", "y", "z"],
            "text": TEXTS,
        }
    )
    expected = neardup.dedup(frame, **{new: value})
    with pytest.warns(
        DeprecationWarning, match=rf"dedup\({old}=\.\.\.\) is deprecated; use {new}="
    ):
        got = neardup.dedup(frame, **{old: value})
    assert got.equals(expected)
    with pytest.raises(TypeError, match=f"give {new} alone"):
        neardup.dedup(frame, **{old: value, new: value})


def test_fingerprint_names_its_text_column_as_dedup_does():
    frame = pd.DataFrame({"body": TEXTS})
    expected = neardup.fingerprint(frame, text_field="body", workers=1)
    with pytest.warns(DeprecationWarning, match="use text_field="):
        assert neardup.fingerprint(frame, column="body", workers=1).tolist() == expected.tolist()


def test_fingerprint_takes_each_methods_default_shingles_as_the_command_line_does():
    texts = ["the quick brown fox jumps", "the quick brown fox jumped", "lorem ipsum dolor"]
    minhash = neardup.fingerprint(texts, method="minhash", workers=1)
    assert np.array_equal(
        minhash, neardup.fingerprint(texts, method="minhash", shingle="char:4", workers=1)
    )
    assert not np.array_equal(
        minhash, neardup.fingerprint(texts, method="minhash", shingle="word:3", workers=1)
    )
    assert np.array_equal(minhash, neardup.fingerprint(texts, workers=1))  # dedup's default
    simhash = neardup.fingerprint(texts, method="simhash", workers=1)
    assert np.array_equal(
        simhash, neardup.fingerprint(texts, method="simhash", shingle="word:3", workers=1)
    )
