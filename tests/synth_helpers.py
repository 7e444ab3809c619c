"""Helpers of the labelled-data tests (synth, edits): base texts in English and Korean, and
look-ups into a generated corpus, and a corpus of edit chains. The labelled corpus itself is the
``synth_corpus`` fixture (conftest.py)."""

import numpy as np

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


def by_id(c):
    """The documents of corpus ``c`` by ID."""
    return {d["id"]: d for d in c.docs}


def derived_pairs(c, edit):
    """The (first, second) documents of every pair of category ``edit`` in corpus ``c``."""
    docs = by_id(c)
    rows = c.pairs[c.pairs.category == edit]
    return [(docs[r.id_a], docs[r.id_b]) for r in rows.itertuples()]


def chain_corpus(seed: int = 3, bases: int = 24) -> list[dict]:
    """Per base text of 240 words: first a rotation of it (the same shingles but two, so it
    shares nearly every band, yet keeps about half its words in order: not a near-duplicate),
    then the text, then a copy with 1 word in 10 changed and one with 2 in 10 (the threshold),
    then a chain of copies each changing 2 more words of the one before."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{k}x{rng.integers(1000)}" for k in range(3000)]
    docs = []
    for base in range(bases):
        words = [vocabulary[k] for k in rng.integers(0, len(vocabulary), 240)]
        cut = int(rng.integers(100, 140))
        texts = [words[cut:] + words[:cut], words]
        for changed in (24, 48):  # 10 % and 20 % of the words
            edited = list(words)
            for at in rng.choice(240, changed, replace=False):
                edited[at] = vocabulary[int(rng.integers(len(vocabulary)))]
            texts.append(edited)
        edited = list(words)
        for _ in range(4):
            edited = list(edited)
            for at in rng.choice(240, 2, replace=False):
                edited[at] = vocabulary[int(rng.integers(len(vocabulary)))]
            texts.append(edited)
        for k, text in enumerate(texts):
            docs.append({"id": f"b{base:02d}-{k}", "text": " ".join(text)})
    return docs
