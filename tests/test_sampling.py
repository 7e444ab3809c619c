"""Stratified samples of candidate pairs, the labelling sheet and the labelling session."""

import json
from itertools import combinations

import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli.labelling import label, sample
from neardup.io import InputError
from neardup.quality.sampling import (
    LabelSession,
    Sheet,
    diff_markup,
    draw_stratified,
    read_sheet,
    sample_pairs,
    sheet_columns,
    strata_keys,
    write_sheet,
)
from neardup.settings import DEFAULT_SHINGLES
from neardup.simhash import simhash
from neardup.similarity import jaccard
from neardup.text import normalize

VOCAB = np.array([f"w{i}" for i in range(400)])


def make_texts(seed=0):
    """Bases of 40 random words plus copies with 1, 2, 4, 8 and 14 words changed."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(10):
        words = rng.choice(VOCAB, 40)
        texts.append(" ".join(words))
        for k in (1, 2, 4, 8, 14):
            copy = words.copy()
            copy[rng.choice(40, k, replace=False)] = rng.choice(VOCAB, k)
            texts.append(" ".join(copy))
    texts.append(texts[0].upper() + "!")  # the same text as document 0 once normalised
    return texts


TEXTS = make_texts()
IDS = [f"doc{i:03d}" for i in range(len(TEXTS))]


def distinct_indices(texts):
    seen, out = set(), []
    for i, t in enumerate(texts):
        if normalize(t) not in seen:
            seen.add(normalize(t))
            out.append(i)
    return out


def test_simhash_strata_cover_the_range_and_respect_the_caps():
    s = sample_pairs(TEXTS, method="simhash", per_stratum=2, max_distance=16, seed=5, workers=1)
    fps = simhash(TEXTS)
    reps = distinct_indices(TEXTS)
    truth = {}
    for i, j in combinations(reps, 2):
        d = bin(int(fps[i]) ^ int(fps[j])).count("1")
        if d <= 16:
            truth[d] = truth.get(d, 0) + 1
    assert s.method == "simhash" and s.exact_duplicates == 1
    assert {st.name: st.population for st in s.strata} == {f"d{d:02d}": n for d, n in truth.items()}
    assert s.candidates == sum(truth.values())
    assert len(s.strata) > 3
    for st in s.strata:
        assert st.drawn == min(2, st.population)
    assert len(s) == sum(st.drawn for st in s.strata)
    drawn = {}
    for a, b, value, name, pop, weight in zip(s.a, s.b, s.value, s.stratum, s.population, s.weight):
        assert a < b and a in reps and b in reps
        assert bin(int(fps[a]) ^ int(fps[b])).count("1") == value
        assert name == f"d{int(value):02d}" and pop == truth[int(value)]
        assert weight == pytest.approx(pop / min(2, pop))
        drawn[name] = drawn.get(name, 0) + 1
    assert drawn == {st.name: st.drawn for st in s.strata}
    # Deterministic for a seed; another seed draws other pairs from the capped strata.
    again = sample_pairs(TEXTS, method="simhash", per_stratum=2, max_distance=16, seed=5, workers=1)
    assert again.a.tolist() == s.a.tolist() and again.b.tolist() == s.b.tolist()
    other = sample_pairs(TEXTS, method="simhash", per_stratum=2, max_distance=16, seed=6, workers=1)
    assert sorted(zip(other.a.tolist(), other.b.tolist())) != sorted(
        zip(s.a.tolist(), s.b.tolist())
    )


def test_minhash_strata_are_jaccard_bins():
    s = sample_pairs(TEXTS, method="minhash", per_stratum=3, min_similarity=0.3, seed=2, workers=1)
    reps = distinct_indices(TEXTS)
    shingle = DEFAULT_SHINGLES["minhash"]  # what sample_pairs takes when none is given
    exact = {(i, j): jaccard(TEXTS[i], TEXTS[j], shingle) for i, j in combinations(reps, 2)}
    assert s.method == "minhash" and len(s) > 0
    for a, b, value, name in zip(s.a, s.b, s.value, s.stratum):
        assert value == pytest.approx(exact[(a, b)])
        low = float(name[1:5])
        assert low <= value + 1e-12 and (value < low + 0.05 or low == 0.95)
    for st in s.strata:
        in_bin = sum(st.low <= v < st.high or (st.high == 1.0 and v == 1.0) for v in exact.values())
        assert st.drawn == min(3, st.population) and st.population <= in_bin
        assert st.low >= 0.3 - 1e-9


def test_strata_keys_and_draw():
    keys, names = strata_keys(np.array([0.3, 0.349, 0.35, 0.999, 1.0]), "minhash")
    assert keys.tolist() == [6, 6, 7, 19, 19]
    assert names[6] == ("j0.30-0.35", 0.3, 0.35)
    chosen, population = draw_stratified(np.array([2, 2, 2, 2, 5, 5]), 3, 1)
    assert population == {2: 4, 5: 2} and len(chosen) == 5
    assert set(chosen[:3].tolist()) <= {0, 1, 2, 3} and chosen[3:].tolist() == [4, 5]
    with pytest.raises(ValueError, match="per_stratum must be an integer >= 1; got 0"):
        draw_stratified(keys, 0, 1)
    with pytest.raises(ValueError, match="max_distance must be an integer in 0..32; got 40"):
        sample_pairs(TEXTS, method="simhash", max_distance=40, workers=1)
    with pytest.raises(ValueError, match=r"min_similarity must be in \(0, 1\); got 1.5"):
        sample_pairs(TEXTS, method="minhash", min_similarity=1.5, workers=1)


@pytest.mark.parametrize("ext", ["tsv", "jsonl"])
def test_sheet_round_trip(tmp_path, ext):
    s = sample_pairs(TEXTS, method="simhash", per_stratum=2, max_distance=12, seed=1, workers=1)
    texts = list(TEXTS)
    texts[s.a[0]] = "tab\there, new\nline, back\\slash \\n, 한국어 “quotes”"
    columns = sheet_columns(s, IDS, texts)
    path = tmp_path / f"sheet.{ext}"
    write_sheet(path, columns)
    sheet = read_sheet(path)
    assert sheet.columns == list(columns)
    assert sheet.columns == [
        "id_a",
        "id_b",
        "distance",
        "stratum",
        "population",
        "weight",
        "text_a",
        "text_b",
        "label",
    ]
    assert [r["text_a"] for r in sheet.rows] == columns["text_a"]
    assert [r["id_b"] for r in sheet.rows] == columns["id_b"]
    assert all(r["label"] is None for r in sheet.rows) and sheet.labelled == 0
    before = path.read_bytes()
    sheet.save()
    assert path.read_bytes() == before  # unchanged columns are written back byte for byte
    sheet.rows[0]["label"] = 1
    sheet.rows[1]["label"] = 0
    sheet.save()
    again = read_sheet(path)
    assert [r["label"] for r in again.rows[:3]] == [1, 0, None]
    if ext == "tsv":
        line = path.read_text(encoding="utf-8").splitlines()[1]
        assert line.endswith("\t1") and len(line.split("\t")) == len(columns)


def test_bad_sheets(tmp_path):
    path = tmp_path / "s.tsv"
    path.write_text("id_a\tid_b\tlabel\na\tb\tmaybe\n")
    with pytest.raises(InputError, match="line 2, field 'label'.*'maybe'"):
        read_sheet(path)
    path.write_text("id_a\tlabel\na\t1\n")
    with pytest.raises(InputError, match="lacks column"):
        read_sheet(path)
    with pytest.raises(ValueError, match="sheet must be a .jsonl or .tsv file"):
        read_sheet(tmp_path / "s.csv")
    path.write_text("id_a\tid_b\ttext_a\tlabel\na\tb\tx\nc\td\ty\t0\n")  # trailing tab dropped
    assert [r["label"] for r in read_sheet(path).rows] == [None, 0]


@pytest.mark.parametrize("ext", ["tsv", "jsonl"])
def test_label_session_saves_every_answer_and_resumes(labelling_sheet, tmp_path, ext):
    path = labelling_sheet(ext)
    runner = CliRunner()
    first = runner.invoke(label, [str(path)], input="y\nn\nb\ny\ns\nq\n", catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert [r["label"] for r in read_sheet(path).rows] == [1, 1, None, None, None]
    out = first.output
    assert "pair 1 of 5" in out and "0 of 5 labelled" in out and "2 of 5 labelled" in out
    assert "current label 0" in out  # going back shows the answer given before
    assert "a0 ↔ b0" in out and "distance 0" in out
    assert "[-brown-] {+red+}" in out  # the word diff, without colours off a terminal
    assert "run `neardup label" in out
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary files left

    second = runner.invoke(label, [str(path)], input="n\ny\nq\n", catch_exceptions=False)
    assert second.exit_code == 0
    assert second.output.index("a2 ↔ b2") < second.output.index("a3 ↔ b3")
    assert "a0 ↔ b0" not in second.output and "a1 ↔ b1" not in second.output
    assert [r["label"] for r in read_sheet(path).rows] == [1, 1, 0, 1, None]

    # End of input saves and stops; a finished sheet says so.
    third = runner.invoke(label, [str(path), "--no-diff"], input="y\n", catch_exceptions=False)
    assert third.exit_code == 0 and "5 of 5 pairs labelled (4 near-duplicates)" in third.output
    assert "the quick brown fox number 4 jumps" in third.output  # the whole texts
    done = runner.invoke(label, [str(path)], input="", catch_exceptions=False)
    assert "all 5 pairs" in done.output


def test_label_session_answers():
    sheet = Sheet(
        "mem.tsv",
        ["id_a", "id_b", "label"],
        [{"id_a": str(i), "id_b": "x", "label": None} for i in range(4)],
    )
    saves = []
    session = LabelSession(sheet, save=lambda s: saves.append([r["label"] for r in s.rows]))
    assert session.current == 0
    assert session.answer("b") and session.message == "already at the first pair"
    assert session.answer("maybe") and "answer one of" in session.message and session.current == 0
    session.answer("s")
    session.answer("yes")
    assert session.current == 2 and saves == [[None, 1, None, None]]
    session.answer("b")
    assert session.current == 1  # back to the last pair shown, not to the skipped one
    session.answer("0")
    assert session.current == 2  # the skipped pair is not shown again in this session
    assert not session.answer("q")
    assert [r["label"] for r in sheet.rows] == [None, 0, None, None]
    resumed = LabelSession(sheet, save=lambda s: None)
    assert resumed.current == 0
    for key in "yyy":
        resumed.answer(key)
    assert not resumed.answer("y") and resumed.done


def test_diff_markup():
    assert diff_markup("a b", "a c") == "a [red strike]b[/red strike] [green]c[/green]"
    assert diff_markup("x [bold]", "x [bold] y", plain=True) == "x \\[bold] {+y+}"
    # The diff of neardup.diff: case and punctuation count, line breaks of B are kept.
    assert diff_markup("The cat sat on the mat.", "the cat sat\non a mat", plain=True) == (
        "[-The-] {+the+} cat sat\non [-the-] {+a+} mat[-.-]"
    )


def test_sample_command(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(IDS, TEXTS)))
    sheet, strata = tmp_path / "sheet.tsv", tmp_path / "strata.tsv"
    args = [
        str(docs),
        "-o",
        str(sheet),
        "--per-stratum",
        "3",
        "--seed",
        "4",
        "--workers",
        "1",
        "--strata-out",
        str(strata),
    ]
    result = CliRunner().invoke(sample, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "candidate pairs" in result.output and "stratum j" in result.output  # dedup's MinHash
    rows = read_sheet(sheet).rows
    assert rows and all(r["label"] is None for r in rows)
    lines = strata.read_text().splitlines()
    assert lines[0] == "stratum\tlow\thigh\tpopulation\tdrawn\tweight"
    drawn = {line.split("\t")[0]: int(line.split("\t")[4]) for line in lines[1:]}
    assert sum(drawn.values()) == len(rows)
    first = sheet.read_bytes()
    CliRunner().invoke(sample, args, catch_exceptions=False)
    assert sheet.read_bytes() == first

    jsonl = tmp_path / "sheet.jsonl"
    result = CliRunner().invoke(
        sample,
        [
            str(docs),
            "-o",
            str(jsonl),
            "--method",
            "minhash",
            "--min-similarity",
            "0.4",
            "--workers",
            "1",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert rows and all(r["similarity"] >= 0.4 and r["label"] is None for r in rows)
    assert all(r["stratum"].startswith("j") for r in rows)

    simhash = ["--method", "simhash", "--min-similarity", "0.5"]
    bad = CliRunner().invoke(sample, [str(docs), "-o", str(sheet), *simhash])
    assert bad.exit_code == 1 and "--min-similarity applies to --method minhash" in bad.output
    # --max-distance implies SimHash, whose distances it bounds.
    distances = CliRunner().invoke(sample, [str(docs), "-o", str(sheet), "--max-distance", "9"])
    assert distances.exit_code == 0 and read_sheet(sheet).columns[2] == "distance"
    bad = CliRunner().invoke(sample, [str(docs), "-o", str(tmp_path / "sheet.csv")])
    assert bad.exit_code == 1 and "output must be a .jsonl or .tsv sheet" in bad.output
