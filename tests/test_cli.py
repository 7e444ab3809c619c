"""End-to-end tests of the `neardup` command."""

import gzip
import json
import re

import pandas as pd
import pytest
import zstandard
from click.testing import CliRunner

from neardup.cli import main
from neardup.io import write_records
from neardup.simhash import simhash

KOREAN = (
    "고대 전쟁 실시간 전략 게임 짧게 말하면 게이머가 서구 문명의 역사를 재현하거나 다시 만들 수 있도록 "
    "하는 역사 기반의 전쟁 경제 게임입니다 이 프로젝트는 매우 야심찬 프로젝트로 최첨단 3D 그래픽 상세한 "
    "아트웍 사운드 유연하고 강력한 맞춤형 게임 엔진을 다루고 있습니다 이 패키지는 게임에 필요한 데이터 "
    "파일을 담고 있으며 설정 및 도구를 함께 제공합니다 자세한 내용은 프로젝트 누리집을 참고하십시오"
)
ENGLISH = (
    "neardup fingerprints every document and finds all near duplicate pairs without comparing "
    "every pair of documents then gives each group one duplicate id and names its original"
)
DOCS = [
    {"id": "en1", "text": ENGLISH, "ts": 20},
    {
        "id": "en2",
        "text": ENGLISH.upper().replace(" ", "\n", 3) + "!",
        "ts": 10,
    },  # re-wrapped copy, earlier
    {"id": "ko1", "text": KOREAN, "ts": 5},
    {"id": "ko2", "text": KOREAN + " 감사합니다", "ts": 6},  # one added word
    {"id": "other", "text": "a completely different short note about the weather", "ts": 1},
    {"id": "empty", "text": "  ...  ", "ts": 2},
]


def run(*args, input=None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
    return result


def write_jsonl(path, docs):
    path.write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8"
    )
    return path


@pytest.fixture
def corpus(tmp_path):
    return write_jsonl(tmp_path / "docs.jsonl", DOCS)


def read_tsv(path, header=True):
    return pd.read_csv(
        path, sep="\t", header=0 if header else None, dtype=str, keep_default_na=False
    )


@pytest.mark.parametrize("name", ["fps.tsv", "fps.tsv.gz"])
def test_fingerprint_tsv_is_the_seed_format(corpus, tmp_path, name):
    out = tmp_path / name
    seed = ["--method", "simhash"]  # the seed's batch rows: SimHash over word 3-grams
    result = run("fingerprint", corpus, "-o", out, "--time-field", "ts", "--workers", "1", *seed)
    assert result.exit_code == 0, result.output
    text = gzip.decompress(out.read_bytes()).decode() if name.endswith(".gz") else out.read_text()
    rows = [line.split("\t") for line in text.splitlines()]
    assert [r[0] for r in rows] == [d["id"] for d in DOCS]
    expected = simhash([d["text"] for d in DOCS])
    assert [int(r[1], 16) for r in rows] == expected.tolist()
    assert all(len(r[1]) == 16 for r in rows)
    assert [r[2] for r in rows] == [str(d["ts"]) for d in DOCS]
    assert "empty documents" in result.output and "documents" in result.output


def input_variants(tmp_path):
    df = pd.DataFrame(DOCS)
    paths = {}
    paths["jsonl"] = write_jsonl(tmp_path / "d.jsonl", DOCS)
    df.to_csv(tmp_path / "d.csv", index=False)
    paths["csv"] = tmp_path / "d.csv"
    # TSV is literal with backslash escapes (not pandas' quoting): the package's own writer.
    write_records(tmp_path / "d.tsv", DOCS)
    paths["tsv"] = tmp_path / "d.tsv"
    df.to_parquet(tmp_path / "d.parquet")
    paths["parquet"] = tmp_path / "d.parquet"
    raw = paths["jsonl"].read_bytes()
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(raw))
    paths["gz"] = tmp_path / "d.jsonl.gz"
    (tmp_path / "d.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    paths["zst"] = tmp_path / "d.jsonl.zst"
    return paths


def test_every_input_format_gives_the_same_fingerprints(tmp_path):
    outputs = {}
    for name, path in input_variants(tmp_path).items():
        out = tmp_path / f"out_{name}.tsv"
        result = run("fingerprint", path, "-o", out, "--workers", "1", "-q")
        assert result.exit_code == 0, (name, result.output)
        outputs[name] = [line.split("\t")[:2] for line in out.read_text().splitlines()]
    first = outputs["jsonl"]
    assert all(rows == first for rows in outputs.values())


def test_stdin_and_stdout(corpus):
    result = run("fingerprint", "-", "-o", "-", "--workers", "1", "-q", input=corpus.read_text())
    assert result.exit_code == 0
    assert [line.split("\t")[0] for line in result.output.splitlines()] == [d["id"] for d in DOCS]


def test_text_directory(tmp_path):
    folder = tmp_path / "texts"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(ENGLISH)
    (folder / "sub" / "b.txt").write_text(ENGLISH + " extra")
    out = tmp_path / "g.tsv"
    assert run("dedup", folder, "-o", out, "--workers", "1", "-q").exit_code == 0
    groups = read_tsv(out)
    assert groups["id"].tolist() == ["a.txt", "sub/b.txt"]


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_fingerprint_output_formats(corpus, tmp_path, ext):
    out = tmp_path / f"fps.{ext}"
    args = ["--method", "simhash", "--workers", "1", "-q"]
    assert run("fingerprint", corpus, "-o", out, *args).exit_code == 0
    if ext == "parquet":
        table = pd.read_parquet(out)
    elif ext == "csv":
        table = pd.read_csv(out, dtype=str, keep_default_na=False)
    else:
        table = pd.read_json(out, lines=True, dtype=False)
    assert list(table.columns) == ["id", "fingerprint", "timestamp"]
    assert table["id"].astype(str).tolist() == [d["id"] for d in DOCS]


@pytest.mark.parametrize("ext", ["tsv", "parquet"])
def test_fingerprint_writes_batch_by_batch(corpus, tmp_path, monkeypatch, ext):
    # The rows are written as each batch is signed, never collected whole: with batches of
    # two documents and the collecting path refused, the output is that of one batch.
    import functools

    from neardup.cli import dedup as dedup_cli
    from neardup.engines.local import LocalEngine

    whole = tmp_path / f"whole.{ext}"
    assert run("fingerprint", corpus, "-o", whole, "--workers", "1", "-q").exit_code == 0

    def refuse(*args, **kwargs):
        raise AssertionError("fingerprint collected the whole corpus")

    monkeypatch.setattr(LocalEngine, "collect", refuse)
    small = functools.partial(dedup_cli.read_documents, batch_size=2)
    monkeypatch.setattr(dedup_cli, "read_documents", small)
    batched = tmp_path / f"batched.{ext}"
    assert run("fingerprint", corpus, "-o", batched, "--workers", "2", "-q").exit_code == 0
    assert len(DOCS) > 2 and batched.read_bytes() == whole.read_bytes()


def _many_documents(path, count, repeat_at_end=None):
    docs = [{"id": f"d{i}", "text": f"note {i} about item {i % 97}"} for i in range(count)]
    if repeat_at_end is not None:
        docs.append({"id": repeat_at_end, "text": "again"})
    return write_jsonl(path, docs)


@pytest.mark.parametrize("command", ["fingerprint", "dedup"])
def test_ids_past_the_check_s_share_of_the_limit_spill(tmp_path, command):
    # At --memory-limit 1M the check of repeated IDs holds 1,536 of them; the rest spill.
    spill = tmp_path / "spill"
    spill.mkdir()
    inputs = _many_documents(tmp_path / "in.jsonl", 6000)
    small, default = tmp_path / "small.tsv", tmp_path / "default.tsv"
    limited = ("--memory-limit", "1M", "--tmp-dir", spill)
    assert run(command, inputs, "-o", small, *limited, "-q").exit_code == 0
    assert run(command, inputs, "-o", default, "-q").exit_code == 0
    assert small.read_bytes() == default.read_bytes()
    # A repeat of a spilled ID is found when the reading ends, named by both rows.
    repeated = _many_documents(tmp_path / "repeated.jsonl", 6000, repeat_at_end="d5000")
    result = run(command, repeated, "-o", tmp_path / "out.tsv", *limited, "-q")
    assert result.exit_code == 1
    assert (
        f"{repeated}, line 6001, field 'id': duplicate id (first seen at {repeated}, line 5001)"
        in result.output
    )
    assert list(spill.iterdir()) == []


def test_minhash_signatures_written_as_hex(corpus, tmp_path):
    out = tmp_path / "sig.jsonl"
    assert (
        run(
            "fingerprint",
            corpus,
            "-o",
            out,
            "--method",
            "minhash",
            "--num-perm",
            "16",
            "--workers",
            "1",
            "-q",
        ).exit_code
        == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(len(r["signature"]) == 16 * 8 for r in rows)
    # Each row says which scheme made it: signatures of two schemes are not comparable.
    assert {r["scheme"] for r in rows} == {"oph"}
    classic = tmp_path / "classic.tsv"
    args = ["--method", "minhash", "--num-perm", "16", "--scheme", "classic", "-q"]
    assert run("fingerprint", corpus, "-o", classic, *args).exit_code == 0
    lines = [line.split("\t") for line in classic.read_text().splitlines()]
    assert {line[2] for line in lines} == {"classic"}
    assert [line[1] for line in lines] != [r["signature"] for r in rows]


def test_scheme_applies_to_minhash_only(corpus, tmp_path):
    result = run(
        "dedup", corpus, "-o", tmp_path / "g.tsv", "--method", "simhash", "--scheme", "oph"
    )
    assert result.exit_code != 0
    assert "--scheme applies to method minhash, not simhash" in result.output


def test_output_is_byte_identical_across_runs_and_workers(corpus, tmp_path):
    big = write_jsonl(
        tmp_path / "big.jsonl",
        [
            {"id": f"{d['id']}-{i}", "text": d["text"] + f" copy {i % 7}", "ts": i}
            for i in range(700)
            for d in DOCS
        ],
    )
    outs = []
    for workers in ("1", "2", "2"):
        out = tmp_path / f"groups{len(outs)}.tsv"
        pairs = tmp_path / f"pairs{len(outs)}.tsv"
        assert (
            run(
                "dedup",
                big,
                "-o",
                out,
                "--pairs-out",
                pairs,
                "--time-field",
                "ts",
                "--workers",
                workers,
                "-q",
            ).exit_code
            == 0
        )
        outs.append((out.read_bytes(), pairs.read_bytes()))
    assert outs[0] == outs[1] == outs[2]


def test_dedup_groups_and_originals(corpus, tmp_path):
    out, pairs, keep = tmp_path / "g.tsv", tmp_path / "p.tsv", tmp_path / "keep.jsonl"
    result = run(
        "dedup",
        corpus,
        "-o",
        out,
        "--time-field",
        "ts",
        "--pairs-out",
        pairs,
        "--keep",
        keep,
        "--workers",
        "1",
    )
    assert result.exit_code == 0, result.output
    groups = read_tsv(out)
    assert list(groups.columns) == [
        "id",
        "duplicate_id",
        "original_id",
        "is_original",
        "group_size",
    ]
    assert groups["id"].tolist() == [d["id"] for d in DOCS]
    by_id = dict(zip(groups["id"], groups["original_id"]))
    assert by_id["en1"] == by_id["en2"] == "en2"  # the earlier copy is the original
    assert by_id["ko1"] == by_id["ko2"] == "ko1"
    assert by_id["other"] == "other" and by_id["empty"] == "empty"
    assert (groups["duplicate_id"] == groups["original_id"]).all()
    pair_rows = read_tsv(pairs)
    assert list(pair_rows.columns) == ["id_a", "id_b", "similarity", "passed"]
    assert set(zip(pair_rows["id_a"], pair_rows["id_b"])) == {("en2", "en1"), ("ko1", "ko2")}
    assert set(pair_rows["passed"]) == {"true"}
    kept = [json.loads(line) for line in keep.read_text().splitlines()]
    assert [k["id"] for k in kept] == ["en2", "ko1", "other", "empty"]
    assert kept[0] == DOCS[1]  # every field of the original row
    assert "groups" in result.output and "largest group" in result.output


def test_dedup_minhash_and_center(corpus, tmp_path):
    out = tmp_path / "g.tsv"
    result = run(
        "dedup",
        corpus,
        "-o",
        out,
        "--method",
        "minhash",
        "--threshold",
        "0.5",
        "--grouping",
        "center",
        "--workers",
        "1",
        "-q",
    )
    assert result.exit_code == 0, result.output
    by_id = dict(zip(*read_tsv(out)[["id", "original_id"]].T.values))
    assert by_id["en2"] == "en1" and by_id["ko2"] == "ko1"


def test_pairs_command_from_fingerprint_rows(tmp_path):
    rows = [
        "a\t0000000000000000\t3",
        "b\t0000000000000003\t1",
        "c\tffffffffffffffff\t2",
        "d\t0000000000000000\t9",
        "e\t18446744073709551615\t0",
    ]  # e is c, in decimal
    (tmp_path / "fps.tsv").write_text("\n".join(rows) + "\n")
    out, groups = tmp_path / "pairs.tsv", tmp_path / "groups.tsv"
    result = run("pairs", tmp_path / "fps.tsv", "-k", "2", "-o", out, "--groups-out", groups)
    assert result.exit_code == 0, result.output
    pairs = read_tsv(out)
    assert list(pairs.columns) == ["id_a", "id_b", "distance", "passed"]
    assert sorted(zip(pairs["id_a"], pairs["id_b"], pairs["distance"], pairs["passed"])) == [
        ("a", "b", "2", "true"),
        ("a", "d", "0", "true"),
        ("b", "d", "2", "true"),
        ("c", "e", "0", "true"),
    ]
    g = read_tsv(groups)
    assert dict(zip(g["id"], g["original_id"])) == {
        "a": "b",
        "b": "b",
        "c": "e",
        "d": "b",
        "e": "e",
    }


# A ≈ B (LCS 17/20 = 0.85) and B ≈ C (0.85), but A and C keep only 14 of 20 words (0.7): under
# `components` C is in A's group, and its row from the original A does not pass the rule.
CHAIN_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
    "november oscar papa quebec romeo sierra tango"
).split()
CHAIN_DOCS = [
    {"id": "A", "text": " ".join(CHAIN_WORDS), "ts": 1},
    {"id": "B", "text": " ".join(["zulu", "yankee", "xray"] + CHAIN_WORDS[3:]), "ts": 2},
    {
        "id": "C",
        "text": " ".join(
            ["zulu", "yankee", "xray"] + CHAIN_WORDS[3:17] + ["uniform", "victor", "whiskey"]
        ),
        "ts": 3,
    },
    {"id": "D", "text": "an unrelated sentence about something else entirely", "ts": 0},
]


@pytest.mark.parametrize(
    "options, expected",
    [
        ((), [("A", "B", "0.85", "true"), ("A", "C", "0.7", "false")]),
        (("--pairs", "all"), [("A", "B", "0.85", "true"), ("B", "C", "0.85", "true")]),
        (("--grouping", "center"), [("A", "B", "0.85", "true")]),
        (("--verify", "lcs:0.7"), [("A", "B", "0.85", "true"), ("A", "C", "0.7", "true")]),
    ],
)
def test_pairs_say_whether_the_pair_itself_passed(tmp_path, options, expected):
    docs = write_jsonl(tmp_path / "chain.jsonl", CHAIN_DOCS)
    groups, pairs = tmp_path / "g.tsv", tmp_path / "p.tsv"
    result = run(
        "dedup",
        docs,
        "-o",
        groups,
        "--pairs-out",
        pairs,
        "--time-field",
        "ts",
        "-q",
        "--workers",
        "1",
        *options,
    )
    assert result.exit_code == 0, result.output
    rows = read_tsv(pairs)
    assert list(rows.columns) == ["id_a", "id_b", "similarity", "passed"]
    assert list(zip(rows["id_a"], rows["id_b"], rows["similarity"], rows["passed"])) == expected


def test_pairs_command_marks_links_through_the_original(tmp_path):
    # a-b and b-c are 2 bits apart, a-c 4: with k = 2, c joins a's group through b.
    rows = ["a\t0000000000000000\t1", "b\t0000000000000003\t2", "c\t000000000000000f\t3"]
    (tmp_path / "fps.tsv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "pairs.tsv"
    for mode, expected in (
        ("original", [("a", "b", "2", "true"), ("a", "c", "4", "false")]),
        ("all", [("a", "b", "2", "true"), ("b", "c", "2", "true")]),
    ):
        result = run("pairs", tmp_path / "fps.tsv", "-k", "2", "-o", out, "--pairs", mode, "-q")
        assert result.exit_code == 0, result.output
        pairs = read_tsv(out)
        assert (
            list(zip(pairs["id_a"], pairs["id_b"], pairs["distance"], pairs["passed"])) == expected
        )


BAD_CASES = [
    ('{"id": "x", "text": "fine"}\n{"id": "y", "text": "broken\n', "line 2", "malformed JSON"),
    ('{"id": "x", "text": "fine"}\n{"id": "y"}\n', "line 2", "text"),
    ('{"text": "no id"}\n', "line 1", "id"),
    ('{"id": "x", "text": "a"}\n{"id": "x", "text": "b"}\n', "line 2", "duplicate"),
]


@pytest.mark.parametrize("content, line, word", BAD_CASES)
def test_bad_input_names_file_line_and_field(tmp_path, content, line, word):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    result = run("dedup", path, "-o", tmp_path / "g.tsv", "--workers", "1")
    assert result.exit_code == 1
    assert "bad.jsonl" in result.output and line in result.output and word in result.output
    assert not (tmp_path / "g.tsv").exists()


def test_an_engine_out_of_memory_ends_with_its_one_line(tmp_path, corpus, monkeypatch):
    # The message an engine gives when its runtime's memory ran out (the Spark engine's says
    # what to configure) ends the command as bad input does: one line, status 1, no output.
    from neardup.engines import EngineMemoryError
    from neardup.engines.local import LocalEngine

    def out_of_memory(*args, **kwargs):
        raise EngineMemoryError("Spark ran out of memory (Java heap space): give Spark more")

    monkeypatch.setattr(LocalEngine, "dedup", out_of_memory)
    result = run("dedup", corpus, "-o", tmp_path / "g.tsv", "--workers", "1")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "neardup: error: Spark ran out of memory (Java heap space): give Spark more"
    )
    assert not (tmp_path / "g.tsv").exists()


def test_invalid_utf8_is_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "x", "text": "ok"}\n{"id": "y", "text": "\xff\xfe"}\n')
    result = run("fingerprint", path, "-o", tmp_path / "f.tsv", "--workers", "1")
    assert result.exit_code == 1 and "line 2" in result.output and "UTF-8" in result.output


def test_skip_bad_rows_when_asked(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"id": "x", "text": "one two three"}\n{oops\n{"id": "y"}\n'
        b'{"id": "z", "text": "\xff"}\n{"id": "x", "text": "dup"}\n{"id": "w", "text": "four"}\n'
    )
    out = tmp_path / "g.tsv"
    result = run("dedup", path, "-o", out, "--on-error", "skip", "--workers", "1")
    assert result.exit_code == 0, result.output
    assert read_tsv(out)["id"].tolist() == ["x", "w"]
    assert "skipped rows" in result.output and "4" in result.output


@pytest.mark.parametrize("command", ["dedup", "pairs", "fingerprint"])
def test_missing_input_file(command, tmp_path):
    # The documents' reader (dedup, fingerprint) and the rows' reader (pairs) say it alike.
    missing = tmp_path / "nope.jsonl"
    result = run(command, missing, "-o", tmp_path / "g.tsv")
    assert result.exit_code == 1, result.output
    assert result.output.strip().endswith(f"input not found: {missing}"), result.output


@pytest.mark.parametrize("command", ["dedup", "pairs"])
def test_missing_input_file_on_spark_stops_before_a_session_starts(command, tmp_path, monkeypatch):
    pytest.importorskip("pyspark")
    import neardup.engines.spark.job as spark_job

    def started(*args, **kwargs):
        raise AssertionError("a Spark session was started")

    monkeypatch.setattr(spark_job, "spark_session", started)
    missing = tmp_path / "nope.jsonl"
    result = run(command, missing, "-o", tmp_path / "g.tsv", "--engine", "spark")
    assert result.exit_code == 1, result.output
    assert result.output.strip().endswith(f"input not found: {missing}"), result.output
    result = run(command, "-", "-o", tmp_path / "g.tsv", "--engine", "spark", input="x\n")
    assert result.exit_code == 1, result.output
    assert result.output.strip().endswith("reads files, not stdin ('-')"), result.output


def test_bad_option_values(corpus, tmp_path):
    result = run("dedup", corpus, "-o", tmp_path / "g.tsv", "--method", "simhash", "-k", "99")
    assert result.exit_code == 1 and "hamming_k" in result.output
    result = run("dedup", corpus, "-o", tmp_path / "g.tsv", "--shingle", "line:2")
    assert result.exit_code == 1 and "shingle" in result.output


def test_compare_command():
    result = run("compare", "the cat sat on the mat", "the cat sat on a mat", "--json")
    assert result.exit_code == 0
    values = json.loads(result.output)
    assert values["levenshtein"] == 1 and 0 < values["jaccard"] < 1
    table = run("compare", "한국어 문장입니다", "한국어 문장이다", "--unit", "jamo")
    assert table.exit_code == 0 and "levenshtein" in table.output


def test_compare_reads_files(tmp_path):
    (tmp_path / "a.txt").write_text(ENGLISH)
    result = run("compare", tmp_path / "a.txt", ENGLISH, "--json")
    assert json.loads(result.output)["jaccard"] == 1.0


@pytest.mark.parametrize(
    "args", [["missing.txt", "b"], ["a", "docs/missing"], ["--file", "a b", "b"]]
)
def test_compare_refuses_a_path_that_does_not_exist(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("compare", *args)
    # One line, as every input error of every command, not a usage message.
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith("neardup: error: no such file: ")


def test_compare_text_and_file_decide_explicitly(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text(ENGLISH)
    literal = json.loads(run("compare", "--text", "a.txt", "a.txt", "--json").output)
    assert literal["levenshtein"] == 0 and literal["near_duplicate"] == "yes"
    read = json.loads(run("compare", "--file", "a.txt", "a.txt", "--json").output)
    assert read["levenshtein"] == 0
    mixed = json.loads(run("compare", "--text", "a.txt", ENGLISH, "--json").output)
    assert mixed["near_duplicate"] == "no"  # the name, not the file's text
    assert json.loads(run("compare", "cat", "dog", "--json").output)["levenshtein"] == 1


def test_inputs_may_be_globs_and_file_urls(corpus, tmp_path):
    other = write_jsonl(tmp_path / "more.jsonl", [{"id": "z", "text": "zzz", "ts": 0}])
    out = tmp_path / "g.tsv"
    assert run("dedup", tmp_path / "*.jsonl", "-o", out, "-q").exit_code == 0
    ids = [line.split("\t")[0] for line in out.read_text().splitlines()[1:]]
    assert ids == [d["id"] for d in DOCS] + ["z"]  # sorted matches: docs.jsonl, more.jsonl
    assert run("dedup", f"file://{other}", "-o", out, "-q").exit_code == 0
    assert out.read_text().splitlines()[1].startswith("z\t")
    result = run("dedup", tmp_path / "*.none", "-o", out)
    assert result.exit_code == 1 and "no input matches the pattern" in result.output
    # An output that one of the matches names is refused like any input.
    result = run("dedup", tmp_path / "*.jsonl", "-o", other)
    assert result.exit_code == 1 and "refusing to overwrite" in result.output


def test_remote_paths_and_unknown_output_extensions_say_what_works(corpus, tmp_path):
    result = run("dedup", "s3://bucket/docs.jsonl", "-o", tmp_path / "g.tsv")
    assert result.exit_code == 1 and "--engine spark" in result.output
    result = run("dedup", corpus, "-o", tmp_path / "g.txt")
    assert result.exit_code == 1
    assert all(ext in result.output for ext in (".tsv", ".csv", ".jsonl", ".parquet"))


def test_tune_command(tmp_path):
    result = run("tune", "--threshold", "0.8", "--num-perm", "128", "--json")
    assert result.exit_code == 0
    values = json.loads(result.output)
    assert values["bands"] * values["rows"] <= 128
    plot = tmp_path / "curve.png"
    assert run("tune", "--plot", plot).exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_has_examples():
    for command in ("dedup", "fingerprint", "pairs", "compare", "tune"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Example" in result.output


def test_idf_weights_save_the_table_with_the_run_and_reuse_it(tmp_path):
    docs = tmp_path / "docs.jsonl"
    rows = [
        {"id": str(i), "text": f"common words everywhere plus rare{i} token{i % 3}"}
        for i in range(30)
    ]
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    options = ["--method", "simhash", "--shingle", "word:1", "--weights", "idf", "-q"]
    result = run("dedup", str(docs), "-o", str(first), *options)
    assert result.exit_code == 0, result.output
    table = tmp_path / "a.tsv.idf.parquet"
    assert table.exists()
    result = run("dedup", str(docs), "-o", str(second), *options, "--idf-in", str(table))
    assert result.exit_code == 0, result.output
    assert first.read_bytes() == second.read_bytes()
    fps = tmp_path / "fps.tsv"
    result = run(
        "fingerprint",
        str(docs),
        "-o",
        str(fps),
        "--shingle",
        "word:1",
        "--weights",
        "idf",
        "--idf-in",
        str(table),
        "-q",
    )
    assert result.exit_code == 0, result.output
    assert len(fps.read_text().splitlines()) == 30


def test_idf_errors(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "x y"}\n')
    out = str(tmp_path / "g.tsv")
    result = run(
        "dedup",
        "-",
        "-o",
        out,
        "--method",
        "simhash",
        "--weights",
        "idf",
        input='{"id": "a", "text": "x y"}\n',
    )
    assert result.exit_code == 1 and "standard input" in result.output
    result = run("dedup", str(docs), "-o", out, "--idf-in", "t.parquet", "--method", "minhash")
    assert result.exit_code == 1 and "--idf-in applies to method simhash" in result.output
    result = run("dedup", str(docs), "-o", out, "--idf-in", "t.parquet")  # implies SimHash
    assert result.exit_code == 1 and "--idf-in and --idf-out go with --weights idf" in result.output
    result = run(
        "dedup",
        str(docs),
        "-o",
        out,
        "--method",
        "simhash",
        "--weights",
        "idf",
        "--engine",
        "spark",
    )
    assert result.exit_code == 1 and "--idf-in" in result.output


@pytest.mark.parametrize(
    "spec, message",
    [
        ("word:3:ko", "stopword:3[:auto|en|ko|FILE]"),
        ("word:3:bag", "optionally with :multiset"),
        ("stopword:3:nowhere.txt", "auto, en, ko or a readable file"),
        ("stopword:0", "shingle size must be in 1..64"),
    ],
)
def test_bad_feature_options_fail_with_the_valid_forms(corpus, tmp_path, spec, message):
    result = run("dedup", corpus, "-o", tmp_path / "g.tsv", "--shingle", spec)
    assert result.exit_code == 1 and message in result.output, result.output


def test_feature_options_on_the_command_line_equal_the_api(corpus, tmp_path):
    from neardup.api import fingerprint as api_fingerprint

    stops = tmp_path / "stops.txt"
    stops.write_text("every\nthe\n이\n", encoding="utf-8")
    texts = [d["text"] for d in DOCS]
    for spec in ("word:3:multiset", "stopword:3:ko", f"stopword:2:{stops}:multiset"):
        out = tmp_path / "fps.tsv"
        args = ["--shingle", spec, "--method", "simhash", "-q"]
        result = run("fingerprint", corpus, "-o", out, *args)
        assert result.exit_code == 0, result.output
        got = [int(line.split("\t")[1], 16) for line in out.read_text().splitlines()]
        want = api_fingerprint(texts, method="simhash", shingle=spec, workers=1)
        assert got == want.tolist()


def test_an_idf_table_is_tied_to_its_shingling(tmp_path):
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    options = ["--method", "simhash", "--weights", "idf", "-q"]
    result = run(
        "fingerprint",
        docs,
        "-o",
        tmp_path / "a.tsv",
        "--shingle",
        "stopword:2:en",
        *options,
        "--idf-out",
        tmp_path / "t.parquet",
    )
    assert result.exit_code == 0, result.output
    result = run(
        "fingerprint",
        docs,
        "-o",
        tmp_path / "b.tsv",
        "--shingle",
        "stopword:2:ko",
        *options,
        "--idf-in",
        tmp_path / "t.parquet",
    )
    assert result.exit_code == 1 and "--shingle stopword:2:en" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["generate", "{docs}", "-o", "{tmp}/g.jsonl", "--pairs-out", "{tmp}/gp.tsv"],
        ["sample", "{docs}", "-o", "{tmp}/s.tsv"],
        ["sweep", "{docs}", "--truth", "{tmp}/truth.tsv"],
        ["report", "{docs}", "--groups", "{tmp}/groups.tsv", "-o", "{tmp}/r.html"],
    ],
)
def test_every_document_reader_honours_max_doc_bytes(tmp_path, command):
    docs = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "text": "hello there world"}, {"id": "b", "text": "long " * 400}]
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "truth.tsv").write_text("id_a\tid_b\tlabel\na\tb\t1\n")
    (tmp_path / "groups.tsv").write_text("id\toriginal_id\na\ta\nb\tb\n")
    args = [part.format(docs=docs, tmp=tmp_path) for part in command]
    result = CliRunner().invoke(main, [*args, "-q", "--max-doc-bytes", "1K"])
    assert result.exit_code == 1
    assert "line 2, field 'text': document too large (2,000 bytes" in result.output


def test_max_doc_bytes_takes_sizes_and_refuses_others(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": "x" * 3000}) + "\n")
    out = tmp_path / "g.tsv"
    for limit, code in (("2K", 1), ("3000", 0), ("0", 0), ("2.5k", 1)):
        result = CliRunner().invoke(
            main, ["dedup", str(docs), "-o", str(out), "-q", "--max-doc-bytes", limit]
        )
        assert result.exit_code == code, (limit, result.output)
    result = CliRunner().invoke(
        main, ["dedup", str(docs), "-o", str(out), "--max-doc-bytes", "big"]
    )
    assert result.exit_code == 2 and "--max-doc-bytes" in result.output and "'big'" in result.output


def test_compare_gives_the_definitions_verdict():
    spaced = run("compare", "오늘 나는 학교에 갔다", "오늘 나는학교에 갔다", "--json")
    result = json.loads(spaced.output)
    assert result["jaccard"] == 1.0  # dedup's char 4-grams ignore spacing, as the definition
    assert (result["definition_lcs"], result["near_duplicate"]) == (1.0, "yes")
    other = json.loads(
        run("compare", "one two three four five", "one two six seven eight", "--json").output
    )
    assert (other["definition_lcs"], other["near_duplicate"]) == (0.4, "no")  # 2 of 5 words
    assert other["definition_unit"] == "word"


def test_compare_says_which_unit_decided_a_korean_pair():
    base = "이 패키지는 데비안 시스템에서 오디오 파일을 쉽게 변환하는 도구를 제공합니다"
    three = "이 패키지가 데비안 시스템의 오디오 파일로 쉽게 변환하는 도구를 제공합니다"
    result = json.loads(run("compare", base, three, "--json").output)
    # Three changed particles: 29 of 33 syllables, 7 of 10 eojeol.
    assert result["definition_characters"] == pytest.approx(29 / 33)
    assert result["definition_lcs"] == pytest.approx(0.7)
    assert (result["definition_unit"], result["near_duplicate"]) == ("eojeol", "no")
    long_word = json.loads(
        run(
            "compare",
            "가 나 다 라 마 바 사 아 자 차카타파하",
            "가 나 다 라 마 바 사 아 자 호",
            "--json",
        ).output
    )
    # One long word changed of ten: 9 of 14 syllables, 9 of 10 eojeol.
    assert long_word["definition_characters"] == pytest.approx(9 / 14)
    assert long_word["definition_lcs"] == pytest.approx(0.9)
    assert (long_word["definition_unit"], long_word["near_duplicate"]) == ("eojeol", "yes")
    chinese = json.loads(run("compare", "我们今天学习", "我们明天学习", "--json").output)
    assert chinese["definition_unit"] == "character" and "definition_eojeol" not in chinese


@pytest.mark.parametrize(
    "args, flag, owner",
    [
        (["--method", "minhash", "-k", "4"], "--hamming-k", "simhash"),
        (["--method", "minhash", "--weights", "tf"], "--weights", "simhash"),
        (["--method", "simhash", "--threshold", "0.5"], "--threshold", "minhash"),
        (["--method", "simhash", "--num-perm", "64"], "--num-perm", "minhash"),
        (["--method", "simhash", "--bands", "8", "--rows", "4"], "--bands", "minhash"),
    ],
)
def test_options_of_the_other_method_are_refused(tmp_path, args, flag, owner):
    docs = write_jsonl(tmp_path / "d.jsonl", DOCS)
    result = run("dedup", docs, "-o", tmp_path / "g.tsv", *args)
    assert result.exit_code == 1
    assert f"{flag} applies to method {owner}" in result.output
    assert not (tmp_path / "g.tsv").exists()


def test_threshold_with_simhash_counts_when_it_sets_the_verification(tmp_path):
    docs = write_jsonl(tmp_path / "d.jsonl", DOCS)
    result = run(
        "dedup",
        docs,
        "-o",
        tmp_path / "g.tsv",
        "--method",
        "simhash",
        "--verify",
        "jaccard",
        "--threshold",
        "0.5",
        "-q",
    )
    assert result.exit_code == 0, result.output


def test_defaults_are_one_per_method_everywhere(corpus, tmp_path):
    """README: the index follows `dedup`, so with every option left at its default an index
    built from a corpus and dedup agree on every group, and so do -k with `dedup -k`; --help
    says which shingles each method uses by default."""
    from neardup.index.store import NearDupIndex
    from neardup.settings import DEFAULT_SHINGLES, Settings

    for method, options in (("minhash", []), ("simhash", ["-k", "3"])):
        out, directory = tmp_path / f"{method}.tsv", tmp_path / f"{method}.idx"
        assert run("dedup", corpus, "-o", out, *options, "-q").exit_code == 0
        assert run("index", "build", corpus, "-d", directory, *options, "-q").exit_code == 0
        groups = read_tsv(out)
        with NearDupIndex(directory, readonly=True) as index:
            assert index.settings.method == method
            assert index.settings.shingle == DEFAULT_SHINGLES[method]
            assert {i: g[0] for i, g in index.groups().items()} == dict(
                zip(groups["id"], groups["duplicate_id"])
            )
    help_text = " ".join(run("dedup", "--help").output.split())
    assert "word:3 with --method simhash, char:4 with minhash" in help_text
    tuned = run("tune", "--json").output
    assert (json.loads(tuned)["bands"], json.loads(tuned)["rows"]) == Settings(
        method="minhash", shingle=DEFAULT_SHINGLES["minhash"]
    ).banding()


def test_renamed_flags_take_their_new_names_and_the_old_ones_for_one_release(corpus, tmp_path):
    """--hash is --hash-name, `report --pairs` is --pairs-in, `index --fingerprints` is
    --from-fingerprints: the old spellings still give the same outputs, with a note."""
    fps = tmp_path / "fps.tsv"
    args = ["--hash-name", "md5", "--method", "simhash", "-q"]
    assert run("fingerprint", corpus, "-o", fps, *args).exit_code == 0

    def same_with_either(new, old, make):
        outputs = []
        for flag in (new, old):
            result, written = make(flag)
            assert result.exit_code == 0, result.output
            outputs.append(written.read_bytes())
            note = f"neardup: warning: {old} is deprecated; use {new}\n"
            assert (note in result.stderr) == (flag == old)
        assert outputs[0] == outputs[1]

    def report(flag):
        groups, pairs, page = (tmp_path / f"{flag}.{n}" for n in ("g.tsv", "p.tsv", "html"))
        run("dedup", corpus, "-o", groups, "--pairs-out", pairs, "-q")
        return run("report", corpus, "--groups", groups, flag, pairs, "-o", page, "-q"), page

    def index(flag):
        out = tmp_path / f"{flag}.groups.tsv"
        directory = tmp_path / f"{flag}.idx"
        assert run("index", "build", fps, flag, "-d", directory, "-q").exit_code == 0
        return run("index", "query-batch", fps, flag, "-d", directory, "-o", out, "-q"), out

    same_with_either("--pairs-in", "--pairs", report)
    same_with_either("--from-fingerprints", "--fingerprints", index)


BAD_IDS = ["a\tb", "two\nlines", "cr\rhere", "nul\x00id", "x" * 1025, "sep\u2028line"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=["tab", "newline", "cr", "nul", "long", "u2028"])
def test_one_id_rule_for_every_command(tmp_path, bad):
    """An ID the rules of neardup.ids refuse is a bad row for every command that reads
    documents: an error naming the file, line and field, or skipped and counted with
    --on-error skip, and never written into an output."""
    good = tmp_path / "good.jsonl"
    write_jsonl(good, [{"id": "g1", "text": ENGLISH}])
    assert run("index", "build", good, "-d", tmp_path / "idx", "-q").exit_code == 0
    rows = tmp_path / "rows.jsonl"
    write_jsonl(
        rows,
        [{"id": "a", "text": ENGLISH}, {"id": bad, "text": "x y z"}, {"id": "c", "text": "other"}],
    )
    commands = {
        "dedup": ("dedup", rows, "-o", tmp_path / "out.tsv", "--workers", "1"),
        "fingerprint": ("fingerprint", rows, "-o", tmp_path / "out.tsv", "--workers", "1"),
        "build": ("index", "build", rows, "-d", tmp_path / "new.idx", "--force"),
        "add": ("index", "add", rows, "-d", tmp_path / "idx", "-o", tmp_path / "out.tsv"),
        "query-batch": (
            "index",
            "query-batch",
            rows,
            "-d",
            tmp_path / "idx",
            "-o",
            tmp_path / "out.tsv",
        ),
    }
    for name, args in commands.items():
        refused = run(*args)
        assert refused.exit_code == 1, (name, refused.output)
        assert f"{rows}, line 2, field 'id'" in refused.output, (name, refused.output)
        assert len(refused.output.strip().splitlines()) == 1, (name, refused.output)
        skipped = run(*args, "--on-error", "skip")
        assert skipped.exit_code == 0, (name, skipped.output)
        assert re.search(r"skipped rows +1\n", skipped.output), (name, skipped.output)
        if name == "build":
            from neardup.index import NearDupIndex

            with NearDupIndex(tmp_path / "new.idx", readonly=True) as index:
                assert len(index) == 2
        else:
            out = (tmp_path / "out.tsv").read_bytes()
            assert b"\x00" not in out and bad.encode("utf-8", "surrogatepass") not in out, name
            assert [row.split(b"\t")[0] for row in out.splitlines()][-2:] == [b"a", b"c"], name


def test_a_file_name_the_id_rule_refuses_is_a_bad_row(tmp_path):
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "fine.txt").write_text(ENGLISH)
    (folder / "tab\there.txt").write_text("another page entirely")
    for args in (
        ("dedup", folder, "-o", tmp_path / "g.tsv", "--workers", "1"),
        ("index", "build", folder, "-d", tmp_path / "idx", "--force", "-q"),
    ):
        refused = run(*args)
        assert refused.exit_code == 1 and "tab\\there.txt" in refused.output, refused.output
        assert run(*args, "--on-error", "skip").exit_code == 0


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``neardup index stats | head -0``: the reader is gone before the first write; the
    command stops without a message, with status 141 (128 + SIGPIPE), as Unix tools do."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from neardup.index import NearDupIndex

    NearDupIndex.create(tmp_path / "idx", method="simhash").close()
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "neardup"),
                "index",
                "stats",
                "-d",
                str(tmp_path / "idx"),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")


def test_a_full_disk_during_index_add_says_how_many_were_added(tmp_path, monkeypatch):
    """The adds are committed batch by batch; a full disk when the tables are cached at the
    end still says how many documents the index received."""
    import errno

    from neardup.index import NearDupIndex
    from neardup.index.errors import IndexWriteError

    NearDupIndex.create(tmp_path / "idx", method="simhash").close()
    docs = write_jsonl(
        tmp_path / "d.jsonl", [{"id": f"d{i}", "text": f"page {i}"} for i in range(3)]
    )

    def full(self):
        raise IndexWriteError(errno.ENOSPC, f"no space left on the device of {tmp_path}")

    monkeypatch.setattr(NearDupIndex, "checkpoint", full)
    result = run("index", "add", docs, "-d", tmp_path / "idx", "-q")
    assert result.exit_code == 1
    assert "no space left" in result.output and "3 documents were added" in result.output


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"caf\xe9 au lait", "{path}: invalid UTF-8 at byte 4"),
        (b"\xff\xfec\x00a\x00", "{path}: invalid UTF-8 at byte 1"),  # UTF-16
        (None, "{path} is a directory"),
    ],
)
def test_a_text_that_is_not_utf8_is_one_line_naming_its_file(tmp_path, data, message):
    """`compare` and `index query` (--file, and stdin) refuse a text that is not UTF-8, or a
    directory, in one line naming the file, not Python's codec error (no file) or click's
    three-line usage error."""
    from neardup.index import NearDupIndex

    path = tmp_path / "t.txt"
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)
    idx = tmp_path / "idx"
    NearDupIndex.create(idx, method="minhash").close()
    valid = tmp_path / "v.txt"
    valid.write_text("a valid text")
    for args in (
        ["compare", "--file", path, valid],
        ["compare", valid, path],
        ["index", "query", "-d", idx, "--file", path],
    ):
        result = run(*args)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1, result.output
        assert lines[0].startswith("neardup: error: " + message.format(path=path)), lines
    if data is not None:
        result = run("index", "query", "-d", idx, "-", input=data)
        assert result.exit_code == 1
        assert "standard input: invalid UTF-8" in result.output


def test_a_bad_query_fingerprint_names_the_option(tmp_path):
    from neardup.index import NearDupIndex

    idx = tmp_path / "idx"
    NearDupIndex.create(idx, method="simhash").close()
    result = run("index", "query", "-d", idx, "--fingerprint", "zz")
    assert result.exit_code == 1
    assert result.output.startswith("neardup: error: --fingerprint: fingerprint must be 16 hex")
    assert len(result.output.strip().splitlines()) == 1
