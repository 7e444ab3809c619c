"""Tests for neardup.cli.warm: ``neardup warm`` compiles what the commands compile, says so a
step at a time, and a fresh process finds every kernel of its job cached after it."""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from neardup.cli import main, warm


def test_warm_runs_every_step_and_reports_each():
    result = CliRunner().invoke(main, ["warm", "--kernels"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    steps = [line for line in lines if line.startswith("warm ")]
    total = len(warm._steps(warm.Path(".")))
    assert [line.split(":")[0] for line in steps] == [
        f"warm {n}/{total}" for n in range(1, total + 1)
    ]
    after = lines.index(steps[-1]) + 1
    assert lines.index(steps[0]) in (1, 2)  # after the heading, and the bytecode's line if any
    total_line = lines[after]
    assert total_line.startswith(("neardup: compiled ", "neardup: every kernel was cached"))
    listed = lines[after + 1 :]
    assert all(line.split()[1] == "s" and line.split()[2].startswith("neardup.") for line in listed)
    if total_line.startswith("neardup: compiled "):
        assert len(listed) == int(total_line.split()[2])
    else:
        assert listed == []


def test_compile_modules_writes_the_bytecode_that_is_missing_or_older_than_its_source(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (package / "sub" / "mod.py").write_text("def f():\n    return 2\n")
    (package / "broken.py").write_text("def (:\n")  # Python refuses it: skipped
    assert warm.compile_modules(package) == 2
    cached = [warm.Path(warm.importlib.util.cache_from_source(str(package / n))) for n in
              ("__init__.py", "sub/mod.py")]  # fmt: skip
    assert all(path.is_file() for path in cached)
    assert warm.compile_modules(package) == 0  # every bytecode as new as its source
    source = package / "sub" / "mod.py"
    source.write_text("def f():\n    return 3\n")
    later = cached[1].stat().st_mtime + 5
    os.utime(source, (later, later))
    assert warm.compile_modules(package) == 1
    # A source put back with an older time (an archive's, a copy keeping times): Python would
    # not load the bytecode, so it is written again.
    source.write_text("def f():\n    return 4\n")
    os.utime(source, (1_000_000, 1_000_000))
    assert warm.compile_modules(package) == 1
    assert warm.compile_modules(package) == 0


@pytest.mark.slow  # whole processes: warm, then a run that must load every kernel
def test_after_warm_a_fresh_process_compiles_nothing(tmp_path):
    assert CliRunner().invoke(main, ["warm"]).exit_code == 0
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(f'{{"id": "{i}", "text": "{text}"}}\n' for i, text in enumerate(
            ["the cat sat on the mat today", "the cat sat on a mat today", "비가 그친 뒤 산책로"]
        )),
        encoding="utf-8",
    )  # fmt: skip
    # Each job in a process of its own, with a listener of numba's compile events.
    code = (
        "import sys\n"
        "from numba.core import event\n"
        "from neardup.cli import compiling, main\n"
        "notice = compiling.CompileNotice()\n"
        "event.register('numba:compile', notice)\n"
        "try:\n"
        "    main(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    print('compiled', notice.compiled, [k for k, _ in notice.kernels], file=sys.stderr)\n"
    )
    # Past the sizes from which jobs take their paths for large inputs (the generated rows of
    # warm's last steps, written here again).
    large_docs, large_fps = warm._write_large_inputs(tmp_path)
    for arguments in (
        ["dedup", str(docs), "-o", str(tmp_path / "groups.tsv")],
        ["compare", "--text", "the cat sat on the mat", "the cat sat on a mat"],
        ["pairs", large_fps, "-o", str(tmp_path / "large_pairs.tsv")],
        [
            "dedup",
            large_docs,
            "-o",
            str(tmp_path / "large.tsv"),
            "--pairs-out",
            str(tmp_path / "lp.tsv"),
        ],
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, *arguments], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert "compiled 0 []" in done.stderr, done.stderr


def test_a_failing_step_stops_warm_with_its_output(monkeypatch):
    def bad_step(folder):
        return [("bad", ["dedup", str(folder / "none"), "-o", str(folder / "g.tsv")])]

    monkeypatch.setattr(warm, "_steps", bad_step)
    with pytest.raises(click.ClickException, match=r"warm: `neardup dedup .*` failed:\n.*none"):
        warm.warm_kernels(main, echo=lambda line: None)


def test_documents_hold_near_duplicates_in_both_languages():
    documents = warm._documents()
    texts = [d["text"] for d in documents]
    assert len(set(texts)) == len(texts) == 2 * (len(warm._ENGLISH) + len(warm._KOREAN))
    assert any("비" in text for text in texts) and any("river" in text for text in texts)
