"""The HTML report: selection rules, diffs, escaping, size bounds, determinism, commands."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.report import RunData, render, select, tokens, word_diff

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.jsonl"


def small_run(**kwargs) -> RunData:
    # Groups: {a, b, c} (original a), {d, e} (original d), {f}.
    return RunData.from_columns(
        ids=["a", "b", "c", "d", "e", "f"],
        original_ids=["a", "a", "a", "d", "d", "f"],
        pair_ids=(["a", "a", "d"], ["b", "c", "e"]),
        pair_values=[0.9, 0.75, 0.8],
        value_name="similarity",
        threshold=0.7,
        **kwargs,
    )


def test_selection_takes_the_largest_groups_and_the_pairs_nearest_the_threshold():
    chosen = select(small_run(), max_groups=1, max_members=1, max_pairs=2)
    assert chosen.groups == [(0, [1], 3)]
    assert chosen.pairs == [(0, 2, 0.75), (3, 4, 0.8)]
    assert chosen.index == [0, 1, 2, 3, 4] and chosen.index_total == 5
    assert chosen.positions() == [0, 1, 2, 3, 4]


def test_ties_between_groups_go_to_the_original_earlier_in_the_input():
    run = RunData.from_columns(["x", "y", "z", "w"], ["z", "w", "z", "w"])
    assert [g[0] for g in select(run).groups] == [2, 3]


def test_distances_borderline_is_the_largest_distance():
    run = RunData.from_columns(["a", "b", "c"], ["a", "a", "a"], (["a", "a"], ["b", "c"]),
                               [1, 3], "distance", 3)
    assert select(run, max_pairs=1).pairs == [(0, 2, 3.0)]


def test_unknown_ids_and_bad_limits_are_errors():
    with pytest.raises(ValueError, match="'zz'"):
        RunData.from_columns(["a"], ["zz"])
    with pytest.raises(ValueError, match="value_name"):
        RunData.from_columns(["a"], ["a"], value_name="score")
    with pytest.raises(ValueError, match="max_pairs"):
        select(small_run(), max_pairs=-1)


def test_word_diff_marks_changes_and_reconstructs_both_texts():
    a, b = "the quick brown fox jumps", "the quick red fox jumps high"
    diff = word_diff(a, b)
    assert "<del>brown</del><ins>red</ins>" in diff
    old = re.sub(r"<ins>.*?</ins>", "", diff).replace("<del>", "").replace("</del>", "")
    new = re.sub(r"<del>.*?</del>", "", diff).replace("<ins>", "").replace("</ins>", "")
    assert (old, new) == (a, b)


def test_cjk_is_diffed_per_character_and_korean_per_word():
    assert tokens("東京都") == ["東", "京", "都"]
    assert word_diff("東京は晴れ", "東京は雨") == "東京は<del>晴れ</del><ins>雨</ins>"
    assert word_diff("서울은 맑음", "서울은 흐림") == "서울은 <del>맑음</del><ins>흐림</ins>"


def test_texts_are_escaped():
    run = RunData.from_columns(["<b>", "x"], ["<b>", "<b>"], (["<b>"], ["x"]), [0.8])
    page = render(run, {0: "<script>alert(1)</script> a", 1: "<script>alert(2)</script> a"})
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'id="group-&lt;b&gt;"' in page


def test_page_is_self_contained_and_deterministic():
    texts = {i: f"text number {i} 日本語のテキスト 한국어 문장" for i in range(6)}
    page = render(small_run(settings={"method": "minhash"}, stats={"seconds": {"verify": 0.5}}),
                  texts)
    assert page == render(small_run(settings={"method": "minhash"},
                                    stats={"seconds": {"verify": 0.5}}), texts)
    assert '<meta charset="utf-8">' in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "http://" not in page and "https://" not in page
    assert "日本語のテキスト" in page and "한국어 문장" in page
    assert page.count("<svg") == 2 and "threshold 0.7" in page


def test_filter_index_lists_documents_with_duplicates():
    page = render(small_run(), {})
    data = re.search(r'<script type="application/json" id="index-data">(.*?)</script>', page).group(1)
    assert json.loads(data) == [["a", "a", 3], ["b", "a", 3], ["c", "a", 3], ["d", "d", 2],
                                ["e", "d", 2]]


def test_page_size_stays_bounded_on_a_large_run():
    n = 200_000
    rng = np.random.default_rng(1)
    ids = [f"doc-{i:07d}" for i in range(n)]
    original = np.arange(n)
    original[1:60_000] = 0  # one big group
    dup = rng.choice(np.arange(60_000, n), 40_000, replace=False)
    original[dup] = dup - 1
    original[dup - 1] = dup - 1
    run = RunData(np.asarray(ids, dtype=object), original, np.zeros(0, np.int64),
                  np.zeros(0, np.int64), np.zeros(0), "similarity", 0.7)
    long_text = "word " * 5_000
    chosen = select(run)
    page = render(run, {p: long_text for p in chosen.positions()})
    assert len(page.encode()) < 4_000_000
    assert "the first 50,000 (input order) of" in page


def test_dedup_report_and_report_command_write_the_same_groups(tmp_path):
    runner = CliRunner()
    groups, pairs = tmp_path / "groups.tsv", tmp_path / "pairs.tsv"
    first, second = tmp_path / "run.html", tmp_path / "later.html"
    result = runner.invoke(main, ["dedup", str(SAMPLE), "-o", str(groups), "--pairs-out",
                                  str(pairs), "--report", str(first), "-q"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["report", str(SAMPLE), "--groups", str(groups), "--pairs",
                                  str(pairs), "-o", str(second), "-q"])
    assert result.exit_code == 0, result.output
    one, two = first.read_text(encoding="utf-8"), second.read_text(encoding="utf-8")
    headings = re.compile(r"<h3>group of [^<]*</h3>")
    assert headings.findall(one) == headings.findall(two) and headings.findall(one)
    assert "Seconds per stage" in one and "Settings" in one  # the run's own facts
    assert "<del>" in one and "<ins>" in one


def test_report_command_refuses_inputs_that_are_not_the_runs(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "x y z"}\n{"id": "b", "text": "x y z"}\n')
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "q", "text": "x y z"}\n')
    groups = tmp_path / "g.tsv"
    runner = CliRunner()
    assert runner.invoke(main, ["dedup", str(docs), "-o", str(groups), "-q"]).exit_code == 0
    result = runner.invoke(main, ["report", str(other), "--groups", str(groups), "-o",
                                  str(tmp_path / "r.html")])
    assert result.exit_code == 1
    assert "do not match GROUPS" in result.output and "'q'" in result.output


def test_report_command_names_a_file_that_is_not_groups(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("x\ty\n1\t2\n")
    result = CliRunner().invoke(main, ["report", str(SAMPLE), "--groups", str(bad), "-o",
                                       str(tmp_path / "r.html")])
    assert result.exit_code == 1 and "bad.tsv" in result.output and "original_id" in result.output
