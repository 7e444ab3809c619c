"""The HTML report: selection rules, diffs, escaping, size bounds, determinism, commands."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.diff import tokens
from neardup.report import RunData, render, select
from neardup.report import diff_html as word_diff

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
    run = RunData.from_columns(
        ["a", "b", "c"], ["a", "a", "a"], (["a", "a"], ["b", "c"]), [1, 3], "distance", 3
    )
    assert select(run, max_pairs=1).pairs == [(0, 2, 3.0)]


def test_unknown_ids_and_bad_limits_are_errors():
    with pytest.raises(ValueError, match="'zz'"):
        RunData.from_columns(["a"], ["zz"])
    with pytest.raises(ValueError, match="value_name"):
        RunData.from_columns(["a"], ["a"], value_name="score")
    with pytest.raises(ValueError, match="max_pairs"):
        select(small_run(), max_pairs=-1)


def _sides(diff: str) -> tuple[str, str]:
    """The two texts a diff was made from, read back from its tags."""
    old = (
        re.sub(r"<ins>.*?</ins>", "", diff, flags=re.DOTALL)
        .replace("<del>", "")
        .replace("</del>", "")
    )
    new = (
        re.sub(r"<del>.*?</del>", "", diff, flags=re.DOTALL)
        .replace("<ins>", "")
        .replace("</ins>", "")
    )
    return old, new


def test_word_diff_marks_changes_and_reconstructs_both_texts():
    a = "the quick brown fox jumps over the lazy dog, twice."
    b = "the quick red fox\njumps over the dog twice. Then slept"
    diff = word_diff(a, b)
    assert "<del>brown</del><ins>red</ins>" in diff
    assert "the<del> lazy</del> dog<del>,</del> twice." in diff
    old, new = _sides(diff)
    assert new == b  # the member's own text, line breaks included
    assert old.split() == a.split()  # the original's words, in the member's layout


def test_word_diff_ignores_rewrapping_but_not_korean_spacing():
    assert word_diff("one two three\nfour", "one two\nthree four") == "one two\nthree four"
    diff = word_diff("확장 가능해야 하고", "확장가능해야 하고")
    assert diff == "<del>확장 가능해야</del><ins>확장가능해야</ins> 하고"


def test_cjk_is_diffed_per_character_and_korean_per_word():
    assert tokens("東京都 fox,") == [("東", ""), ("京", ""), ("都", " "), ("fox", ""), (",", "")]
    assert word_diff("東京は晴れ", "東京は雨") == "東京は<del>晴れ</del><ins>雨</ins>"
    assert word_diff("서울은 맑음", "서울은 흐림") == "서울은 <del>맑음</del><ins>흐림</ins>"


def test_texts_are_escaped():
    run = RunData.from_columns(["<b>", "x"], ["<b>", "<b>"], (["<b>"], ["x"]), [0.8])
    page = render(run, {0: "<script>alert(1)</script> a", 1: "<script>alert(2)</script> a"})
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'id="group-&lt;b&gt;"' in page


def test_ids_cannot_end_or_confuse_the_filter_data_script():
    # "<!--<script>" would put the HTML parser in a state where the real "</script>" does not
    # end the data element; "</script>" would end it early.
    bad = "<!--<script>x</script>"
    run = RunData.from_columns([bad, "y"], [bad, bad], ([bad], ["y"]), [0.8])
    page = render(run, {0: "a b c", 1: "a b d"})
    data = re.search(
        r'<script type="application/json" id="index-data">(.*?)</script>', page, re.DOTALL
    ).group(1)
    assert "<" not in data
    assert json.loads(data) == [[bad, 0, 2], ["y", 0, 2]]


def test_page_is_self_contained_and_deterministic():
    texts = {i: f"text number {i} 日本語のテキスト 한국어 문장" for i in range(6)}
    page = render(
        small_run(settings={"method": "minhash"}, stats={"seconds": {"verify": 0.5}}), texts
    )
    assert page == render(
        small_run(settings={"method": "minhash"}, stats={"seconds": {"verify": 0.5}}), texts
    )
    assert '<meta charset="utf-8">' in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "http://" not in page and "https://" not in page
    assert "日本語のテキスト" in page and "한국어 문장" in page
    assert page.count("<svg") == 2 and "threshold 0.7" in page


def test_pairs_beyond_the_threshold_are_flagged_and_members_show_their_value():
    # c joined a's group through b: its similarity to the original is below the threshold.
    run = RunData.from_columns(
        ["a", "b", "c"], ["a", "a", "a"], (["a", "a"], ["b", "c"]), [0.9, 0.55], "similarity", 0.7
    )
    page = render(run, {0: "x y z", 1: "x y z w", 2: "x y q w"})
    assert page.count('class="beyond"') == 1
    assert "a ↔ c: similarity 0.550 <span" in page
    assert "Pairs beyond the threshold in this run: 1 of 2." in page
    assert "member b (similarity 0.900 to the original)" in page
    # With --pairs all a pair is ordered by input position, so the original can be id_b.
    late = RunData.from_columns(["m", "o"], ["o", "o"], (["m"], ["o"]), [0.8], "similarity", 0.7)
    assert "member m (similarity 0.800 to the original)" in render(late, {})
    distances = RunData.from_columns(["a", "b"], ["a", "a"], (["a"], ["b"]), [2], "distance", 3)
    page = render(distances, {})
    assert "a ↔ b: 2 bits</h3>" in page and "k = 3" in page


def test_a_run_without_settings_or_pairs_says_so():
    page = render(RunData.from_columns(["a", "b"], ["a", "a"]), {})
    assert "Settings and seconds per stage are not known" in page
    assert "No pairs to show" in page
    assert "Settings and seconds per stage are not known" not in render(
        small_run(settings={"method": "minhash"}), {}
    )


def test_filter_index_lists_documents_with_duplicates():
    page = render(small_run(), {})
    data = re.search(r'<script type="application/json" id="index-data">(.*?)</script>', page).group(
        1
    )
    # Originals listed in the index are named by their row.
    assert json.loads(data) == [["a", 0, 3], ["b", 0, 3], ["c", 0, 3], ["d", 3, 2], ["e", 3, 2]]
    # ... and by their ID when the index stops before them; it stops at a count or a size.
    late = RunData.from_columns(["a", "b", "c"], ["c", "c", "c"])
    assert json.loads(
        re.search(r'id="index-data">(.*?)</script>', render(late, {}, max_index=2)).group(1)
    ) == [["a", "c", 3], ["b", "c", 3]]
    assert select(late, max_index_bytes=2).index == [0, 1]
    assert select(late, max_index_bytes=1).index == [0]


def test_page_size_stays_bounded_on_a_large_run():
    # A bad case for size: 200,000 documents with long IDs, one group of 60,000 and 40,000
    # pairs, and every shown text a different 5,000-character Korean text (3 bytes a character,
    # nothing in common for the diffs to share).
    n = 200_000
    rng = np.random.default_rng(1)
    ids = np.asarray(
        [f"https://example.org/archive/2024/{i:07d}/index.html" for i in range(n)], dtype=object
    )
    original = np.arange(n)
    original[1:60_000] = 0
    dup = np.arange(60_001, n, 2)[:40_000]
    original[dup] = dup - 1
    members = np.flatnonzero(original != np.arange(n))
    run = RunData(
        ids,
        original,
        original[members],
        members,
        rng.uniform(0.5, 1, members.size),
        "similarity",
        0.7,
    )
    chosen = select(run)
    syllables = rng.integers(0xAC00, 0xD7A4, size=(len(chosen.positions()), 5_000))
    texts = {p: "".join(map(chr, row)) for p, row in zip(chosen.positions(), syllables)}
    page = render(run, texts)
    assert len(page.encode()) < 6_000_000
    assert max(map(len, re.findall("[\uac00-\ud7a3]+", page))) == 3_000  # texts are cut
    index = json.loads(re.search(r'id="index-data">(.*?)</script>', page).group(1))
    assert sum(len(row[0].encode()) for row in index) <= 2_000_000
    assert f"the first {len(index):,} (input order) of the 140,000 documents" in page


def test_dedup_report_and_report_command_write_the_same_groups(tmp_path):
    runner = CliRunner()
    groups, pairs = tmp_path / "groups.tsv", tmp_path / "pairs.tsv"
    first, second = tmp_path / "run.html", tmp_path / "later.html"
    result = runner.invoke(
        main,
        [
            "dedup",
            str(SAMPLE),
            "-o",
            str(groups),
            "--pairs-out",
            str(pairs),
            "--report",
            str(first),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        main,
        [
            "report",
            str(SAMPLE),
            "--groups",
            str(groups),
            "--pairs-in",
            str(pairs),
            "-o",
            str(second),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    one, two = first.read_text(encoding="utf-8"), second.read_text(encoding="utf-8")
    again = tmp_path / "again.html"
    result = runner.invoke(
        main,
        [
            "report",
            str(SAMPLE),
            "--groups",
            str(groups),
            "--pairs-in",
            str(pairs),
            "-o",
            str(again),
            "-q",
        ],
    )
    assert result.exit_code == 0 and again.read_bytes() == second.read_bytes()
    headings = re.compile(r"<h3>group of [^<]*</h3>")
    assert headings.findall(one) == headings.findall(two) and headings.findall(one)
    # The run's own facts, which GROUPS and PAIRS files do not hold.
    assert "<caption>seconds per stage</caption>" in one and "<th>verify</th>" in one
    assert "<th>LSH bands × rows</th><td>32 × 4</td>" in one
    assert (
        "<th>verification</th><td>LCS resemblance ≥ 0.8 (words; Hangul, kana, Han by character)</td>"
        in one
    )
    assert "Settings and seconds per stage are not known" in two
    assert "<del>" in one and "<ins>" in one


def test_report_command_marks_dedups_default_k_for_simhash_distances(tmp_path):
    docs = tmp_path / "docs.jsonl"
    text = " ".join(f"word{i}" for i in range(200))  # one more word moves few of 64 bits
    docs.write_text(
        json.dumps({"id": "a", "text": text})
        + "\n"
        + json.dumps({"id": "b", "text": text + " again"})
        + "\n"
    )
    groups, pairs, page = tmp_path / "g.tsv", tmp_path / "p.tsv", tmp_path / "r.html"
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "dedup",
            str(docs),
            "-o",
            str(groups),
            "--method",
            "simhash",
            "--shingle",
            "word:3",
            "--pairs-out",
            str(pairs),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        main,
        [
            "report",
            str(docs),
            "--groups",
            str(groups),
            "--pairs-in",
            str(pairs),
            "-o",
            str(page),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert "reported pairs by distance" in html and ">k = 3</text>" in html
    assert "a ↔ b: " in html and "<ins>again</ins>" in html


def test_report_command_refuses_inputs_that_are_not_the_runs(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "x y z"}\n{"id": "b", "text": "x y z"}\n')
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "q", "text": "x y z"}\n')
    groups = tmp_path / "g.tsv"
    runner = CliRunner()
    assert runner.invoke(main, ["dedup", str(docs), "-o", str(groups), "-q"]).exit_code == 0
    result = runner.invoke(
        main, ["report", str(other), "--groups", str(groups), "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 1
    assert "do not match GROUPS" in result.output and "'q'" in result.output


def test_report_command_names_a_file_that_is_not_groups(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("x\ty\n1\t2\n")
    result = CliRunner().invoke(
        main, ["report", str(SAMPLE), "--groups", str(bad), "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 1 and "bad.tsv" in result.output and "original_id" in result.output


@pytest.mark.parametrize(
    ("verification", "axis"),
    [
        ("LCS resemblance ≥ 0.8 (words; Hangul, kana, Han by character)", "LCS resemblance"),
        ("exact Jaccard ≥ 0.7", "Jaccard similarity"),
        ("none", "MinHash estimate of Jaccard"),
    ],
)
def test_the_value_chart_names_the_measure_the_run_decided_by(verification, axis):
    page = render(small_run(settings={"verification": verification}), {})
    chart = page[page.index('id="charts"') :]
    assert axis in chart
    others = {"LCS resemblance", "Jaccard similarity", "MinHash estimate of Jaccard"} - {axis}
    assert not any(f">{other}<" in chart for other in others)


@pytest.mark.parametrize("command", ["report", "dedup"])
def test_a_report_path_that_is_not_html_is_refused_before_any_work(tmp_path, command):
    groups = tmp_path / "g.tsv"
    target = tmp_path / "report.txt"
    args = (
        ["report", str(SAMPLE), "--groups", str(groups), "-o", str(target)]
        if command == "report"
        else ["dedup", str(SAMPLE), "-o", str(groups), "--report", str(target)]
    )
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and not target.exists() and not groups.exists()
    assert result.output.strip().splitlines() == [
        f"neardup: error: {'--output' if command == 'report' else '--report'} {target}: "
        "a report is an HTML page; name it .html or .htm"
    ]
