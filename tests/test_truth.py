"""Tests of neardup.quality.truth: labels and their errors, truth and predictions read from
every table format, and the columns that tell their kind."""

import pytest

from neardup.io import write_table
from neardup.quality import (
    ClusterTruth,
    PairConfusion,
    PairTruth,
    evaluate,
    parse_labels,
    read_prediction,
    read_truth,
)


def test_label_errors_name_the_value():
    with pytest.raises(
        ValueError, match=r"labels must be 1/0 or true/false; got 'cut'.*positive_labels"
    ):
        parse_labels(["cut", "non"])
    with pytest.raises(ValueError, match=r"positive label 'cutt' does not occur.*cut, non"):
        parse_labels(["cut", "non"], "cutt")
    with pytest.raises(ValueError, match="labelled both positive and negative"):
        PairTruth.from_arrays(["a", "b"], ["b", "a"], [1, 0])
    with pytest.raises(ValueError, match="with itself"):
        PairTruth.from_arrays(["a"], ["a"], [1])
    with pytest.raises(ValueError, match="'a' appears more than once"):
        ClusterTruth.from_arrays(["a", "a"], [0, 1])
    dup = PairTruth.from_arrays(["a", "b"], ["b", "a"], [1, 1])
    assert len(dup) == 1 and dup.duplicate_rows == 1


@pytest.mark.parametrize("ext", ["tsv", "csv", "jsonl", "parquet", "tsv.gz"])
def test_prediction_and_truth_in_every_format(tmp_path, ext):
    groups = tmp_path / f"groups.{ext}"
    write_table(
        groups,
        {
            "id": ["a", "b", "c\tx"],
            "duplicate_id": ["a", "a", "c\tx"],
            "is_original": [True, False, True],
        },
    )
    pairs = tmp_path / f"pairs.{ext}"
    write_table(pairs, {"id_a": ["a", "b"], "id_b": ["b", "c\tx"], "distance": [1, 2]})
    truth = tmp_path / f"truth.{ext}"
    write_table(
        truth,
        {"id_a": ["a", "a"], "id_b": ["b", "c\tx"], "label": [True, False], "split": ["x", "y"]},
    )
    t = read_truth(truth)
    assert isinstance(t, PairTruth) and t.positive.tolist() == [True, False]
    g = read_prediction(groups)
    assert g.kind == "groups" and g.ids.tolist() == ["a", "b", "c\tx"]
    p = read_prediction(pairs)
    assert p.kind == "pairs" and p.id_b.tolist() == ["b", "c\tx"]
    assert evaluate(g, t).confusion == PairConfusion(1, 0, 0, 1)
    assert evaluate(p, t).confusion == PairConfusion(1, 0, 0, 1)


def test_unknown_columns_and_formats(tmp_path):
    bad = tmp_path / "x.tsv"
    bad.write_text("foo\tbar\n1\t2\n")
    with pytest.raises(ValueError, match="neither labelled pairs"):
        read_truth(bad)
    with pytest.raises(ValueError, match="neither GROUPS"):
        read_prediction(bad)
    with pytest.raises(ValueError, match="from its extension"):
        read_truth(tmp_path / "x.xlsx")
    nolabel = tmp_path / "p.tsv"
    nolabel.write_text("id_a\tid_b\na\tb\n")
    with pytest.raises(ValueError, match="missing column 'label'"):
        read_truth(nolabel)


def test_labelling_sheet_with_unlabelled_rows(tmp_path):
    from neardup.quality import read_truth

    sheet = tmp_path / "sheet.tsv"
    sheet.write_text("id_a\tid_b\tdistance\tlabel\na\tb\t3\t1\na\tc\t9\t\nb\tc\t4\t0\n")
    truth = read_truth(sheet)
    assert truth.id_a.tolist() == ["a", "b"] and truth.positive.tolist() == [True, False]
