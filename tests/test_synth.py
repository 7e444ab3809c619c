"""The labelled near-duplicate generator: labels follow the definition, edits do what they say."""

import json
import re

import pytest
from click.testing import CliRunner

from neardup.cli.labelling import generate as generate_command
from neardup.quality import synth
from neardup.similarity import lcs_resemblance
from neardup.text import normalize

ENGLISH = [
    "A small command line tool that converts tabular data files between CSV, TSV and JSON "
    "formats. It streams rows, so files larger than memory are handled, and it detects the "
    "delimiter and the encoding of the input automatically. Version 2.4 added support for "
    "compressed files.",
    "This package provides the documentation for the graphics library, including a tutorial, "
    "the reference manual and many examples. The library draws lines, curves, text and images "
    "on screens and printers with antialiasing. It was first released in 1998 and is still "
    "maintained.",
    "An interactive game in which the player guides a small boat through a maze of islands "
    "while collecting treasure and avoiding storms. The game has 40 levels, a level editor "
    "and online high score tables. Music and sound effects can be switched off.",
    "Server daemon that answers time requests from clients on the local network. It keeps the "
    "clock of the machine accurate by polling several upstream servers and filtering out "
    "outliers. The daemon uses very little memory and runs on embedded boards.",
    "Python bindings for the image processing library. They expose filters, color conversion, "
    "resizing and drawing functions to Python programs. The bindings are generated "
    "automatically and follow the C interface closely, with a few convenience wrappers.",
    "Fonts designed for reading long texts on screens, with wide letter spacing and open "
    "shapes. The family includes regular, italic, bold and bold italic styles and covers "
    "Latin, Greek and Cyrillic scripts in 12 weights.",
]
KOREAN = [
    "이 프로그램은 여러 형식의 표 데이터를 서로 변환하는 명령행 도구입니다. 입력 파일의 구분자와 인코딩을 "
    "자동으로 찾으며 메모리보다 큰 파일도 처리할 수 있습니다. 버전 2.4부터 압축 파일을 지원합니다. "
    "사용자는 설정 파일에서 기본값을 바꿀 수 있습니다.",
    "이 패키지는 그래픽 라이브러리의 문서를 담고 있습니다. 문서에는 안내서와 참조 설명서가 있고 예제도 "
    "많이 들어 있습니다. 라이브러리는 화면과 프린터에 선과 곡선을 그립니다. 이 라이브러리는 1998년에 "
    "처음 나왔으며 지금도 관리되고 있습니다.",
    "플레이어가 작은 배를 몰아 섬 사이의 미로를 지나가는 게임입니다. 플레이어는 보물을 모으고 폭풍을 "
    "피해야 합니다. 게임에는 40개의 레벨과 레벨 편집기가 있습니다. 음악과 효과음은 설정 화면에서 끌 수 "
    "있습니다.",
    "이 데몬은 지역 네트워크의 클라이언트에게 시간을 알려 줍니다. 데몬은 여러 서버에 시간을 물어보고 "
    "이상한 값을 걸러 내어 시계를 정확하게 유지합니다. 메모리를 적게 쓰므로 작은 보드에서도 잘 "
    "동작합니다.",
]
CONTENT_LIGHT = [e for e in synth.LIGHT_EDITS if e not in synth.FORMATTING_EDITS]


@pytest.fixture(scope="module")
def corpus():
    return synth.generate(
        ENGLISH + KOREAN, seed=7, per_base=len(synth.EDITS), edits="all", hot_template=25
    )


def by_id(c):
    return {d["id"]: d for d in c.docs}


def derived_pairs(c, edit):
    docs = by_id(c)
    rows = c.pairs[c.pairs.category == edit]
    return [(docs[r.id_a], docs[r.id_b]) for r in rows.itertuples()]


def test_same_seed_gives_the_same_corpus(corpus):
    again = synth.generate(
        ENGLISH + KOREAN, seed=7, per_base=len(synth.EDITS), edits="all", hot_template=25
    )
    assert again.docs == corpus.docs
    assert again.pairs.equals(corpus.pairs)
    other = synth.generate(
        ENGLISH + KOREAN, seed=8, per_base=len(synth.EDITS), edits="all", hot_template=25
    )
    assert other.docs != corpus.docs


def test_every_edit_is_made_and_labelled_as_documented(corpus):
    categories = set(corpus.pairs.category)
    assert categories == set(synth.EDITS) | {synth.HOT_CATEGORY}
    for row in corpus.pairs.itertuples():
        assert row.label == synth.EDIT_LABELS[row.category]
    assert set(corpus.pairs.columns) == {"id_a", "id_b", "label", "category"}
    docs = by_id(corpus)
    assert len(docs) == len(corpus.docs)  # unique IDs
    for row in corpus.pairs.itertuples():
        a, b = docs[row.id_a], docs[row.id_b]
        if row.category in synth.EDITS and row.category != "template":
            assert a["edit"] == "base" and b["base_id"] == a["id"] and b["edit"] == row.category
            assert a["ts"] < b["ts"]
    # Korean-only edits only on Korean bases.
    for edit in synth.KOREAN_EDITS:
        assert all(a["lang"] == "ko" for a, _ in derived_pairs(corpus, edit))


def test_light_edits_keep_the_words_in_order(corpus):
    for edit in CONTENT_LIGHT:
        pairs = derived_pairs(corpus, edit)
        assert pairs, edit
        for base, copy in pairs:
            assert synth.words_kept(base["text"], copy["text"]) >= 0.8, (edit, copy["text"])
            assert lcs_resemblance(base["text"], copy["text"], unit="word") >= 0.75, edit
            assert copy["text"] != base["text"]


def test_formatting_edits_change_only_formatting(corpus):
    for edit in synth.FORMATTING_EDITS:
        for base, copy in derived_pairs(corpus, edit):
            assert copy["text"] != base["text"]
            squeeze = normalize(base["text"]).replace(" ", "")
            assert normalize(copy["text"]).replace(" ", "") == squeeze, edit
    for base, copy in derived_pairs(corpus, "punctuation"):
        assert normalize(copy["text"]) == normalize(base["text"])
    for base, copy in derived_pairs(corpus, "rewrap"):
        if base["lang"] == "en":
            assert copy["text"].split() == base["text"].split()
            assert lcs_resemblance(base["text"], copy["text"], unit="word") == 1.0
        else:  # hard-wrapped at a width: only whitespace moves, words may be split
            assert re.sub(r"\s", "", copy["text"]) == re.sub(r"\s", "", base["text"])
        assert "\n" in copy["text"]


def test_content_edits_change_what_they_say(corpus):
    for base, copy in derived_pairs(corpus, "numbers"):
        a, b = base["text"].split(), copy["text"].split()
        assert len(a) == len(b)
        changed = [(x, y) for x, y in zip(a, b) if x != y]
        assert 1 <= len(changed) <= 3
        assert all(re.search(r"\d", x) and re.search(r"\d", y) for x, y in changed)
        assert [re.sub(r"\d+", "#", x) for x in a] == [re.sub(r"\d+", "#", y) for y in b]
    for base, copy in derived_pairs(corpus, "boilerplate"):
        assert base["text"].strip() in copy["text"]
        assert len(copy["text"].split()) - len(base["text"].split()) <= max(
            2, 0.15 * len(base["text"].split())
        )
    for base, copy in derived_pairs(corpus, "truncate"):
        a, b = base["text"].split(), re.sub(r"(…|\.\.\.)$", "", copy["text"]).split()
        assert b == a[: len(b)] and 1 <= len(a) - len(b) <= 0.1 * len(a)
    for base, copy in derived_pairs(corpus, "sentence"):
        extra = abs(len(copy["text"].split()) - len(base["text"].split()))
        assert 1 <= extra <= max(2, 0.15 * len(base["text"].split()))


def test_heavy_edits_and_templates_fall_clearly_below(corpus):
    for edit in synth.HEAVY_EDITS:
        pairs = derived_pairs(corpus, edit)
        assert pairs, edit
        for base, copy in pairs:
            assert synth.words_kept(base["text"], copy["text"]) <= 0.75, edit
            assert lcs_resemblance(base["text"], copy["text"], unit="word") < 0.7, edit
    for a, b in derived_pairs(corpus, "template"):
        assert synth.words_kept(a["text"], b["text"]) <= 0.6
        assert a["base_id"] != b["base_id"] and a["lang"] == b["lang"]
        # They share one long paragraph, word for word.
        shared = set(a["text"].split("\n\n")) & set(b["text"].split("\n\n"))
        assert any(len(p.split()) >= 15 for p in shared)


def test_korean_spacing_changes_only_spaces(corpus):
    pairs = derived_pairs(corpus, "spacing")
    assert len(pairs) == len(KOREAN)
    for base, copy in pairs:
        assert copy["text"] != base["text"]
        assert copy["text"].replace(" ", "") == base["text"].replace(" ", "")


def test_korean_particles_swap_only_particles(corpus):
    pairs = derived_pairs(corpus, "particles")
    assert len(pairs) == len(KOREAN)
    allowed = {
        ("은", "이"),
        ("는", "가"),
        ("이", "은"),
        ("가", "는"),
        ("을", "은"),
        ("를", "는"),
        ("에", "에서"),
        ("에서", "에"),
    }
    for base, copy in pairs:
        a, b = base["text"].split(), copy["text"].split()
        assert len(a) == len(b)
        changed = [(x, y) for x, y in zip(a, b) if x != y]
        assert 1 <= len(changed) <= max(1, 0.05 * len(a))
        for x, y in changed:
            x, y = x.rstrip(".,"), y.rstrip(".,")
            stem = x[:-2] if x.endswith("에서") else x[:-1]
            assert y.startswith(stem) and (x[len(stem) :], y[len(stem) :]) in allowed, (x, y)


def test_hot_template(corpus):
    hot = [d for d in corpus.docs if d["edit"] == synth.HOT_CATEGORY]
    assert len(hot) == 25
    rows = corpus.pairs[corpus.pairs.category == synth.HOT_CATEGORY]
    assert len(rows) == 24 and set(rows.id_a) == {"hot~00000"} and set(rows.label) == {1}
    texts = {d["id"]: d["text"] for d in hot}
    first = texts["hot~00000"].split()
    for doc_id in rows.id_b:
        other = texts[doc_id].split()
        assert len(other) == len(first)
        assert 1 <= sum(x != y for x, y in zip(first, other)) <= 3


def test_short_bases_get_only_formatting_edits():
    c = synth.generate(["Tiny text of five words.", ENGLISH[0]], seed=1, per_base=3, edits="all")
    docs = by_id(c)
    edits = {docs[r.id_b]["edit"] for r in c.pairs.itertuples() if r.id_a == "b000000"}
    assert edits and edits <= set(synth.FORMATTING_EDITS)


def test_bases_are_cleaned():
    texts = [ENGLISH[0], ENGLISH[0].upper() + "!", "  ...  ", ENGLISH[1], ENGLISH[2]]
    c = synth.generate(texts, seed=1, per_base=1, edits="rewrap", max_bases=1)
    s = c.stats
    assert (s["bases_read"], s["skipped_duplicate"], s["skipped_empty"]) == (5, 1, 1)
    assert s["bases_used"] == 1 and s["skipped_sample"] == 2
    kept = synth.generate(
        texts, seed=1, per_base=1, edits="rewrap", distinct_bases=False, min_words=20
    )
    assert kept.stats["bases_used"] == 4


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"per_base": 0}, f"per_base must be an integer 1..{len(synth.EDITS)}; got 0"),
        ({"edits": "light,nope"}, "got 'nope'"),
        ({"language": "fr"}, "language must be one of auto, en, ko; got 'fr'"),
        ({"hot_template": -1}, "hot_template must be an integer"),
        ({"max_bases": 0}, "max_bases must be an integer >= 1; got 0"),
    ],
)
def test_bad_arguments_name_the_value_and_the_range(kwargs, message):
    options = {"edits": "all", **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        synth.generate(ENGLISH, **options)


def test_generate_command_end_to_end(tmp_path):
    bases = tmp_path / "bases.jsonl"
    bases.write_text(
        "".join(
            json.dumps({"id": f"doc{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(ENGLISH + KOREAN)
        ),
        encoding="utf-8",
    )
    outputs = []
    for run in range(2):
        docs, pairs = tmp_path / f"docs{run}.jsonl", tmp_path / f"pairs{run}.tsv"
        result = CliRunner().invoke(
            generate_command,
            [
                str(bases),
                "-o",
                str(docs),
                "--pairs-out",
                str(pairs),
                "--seed",
                "3",
                "--per-base",
                "2",
                "--edits",
                "light,heavy,template",
                "--hot-template",
                "10",
                "--workers",
                "1",
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        outputs.append((docs.read_bytes(), pairs.read_bytes()))
    assert outputs[0] == outputs[1]
    assert "bases used" in result.output and "hot_template" in result.output
    lines = pairs.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id_a\tid_b\tlabel\tcategory"
    rows = [line.split("\t") for line in lines[1:]]
    records = [json.loads(line) for line in docs.read_text(encoding="utf-8").splitlines()]
    ids = {r["id"] for r in records}
    assert all(a in ids and b in ids for a, b, _, _ in rows)
    assert {r["edit"] for r in records} >= {"base", "hot_template"}
    assert len(rows) == 2 * len(ENGLISH + KOREAN) + 9
    assert set(records[0]) == {"id", "text", "ts", "base_id", "edit", "lang"}
    # Bad options are one clear line and exit status 1.
    bad = CliRunner().invoke(
        generate_command,
        [str(bases), "-o", str(docs), "--pairs-out", str(pairs), "--per-base", "0"],
    )
    assert bad.exit_code == 1 and "per_base must be an integer" in bad.output
