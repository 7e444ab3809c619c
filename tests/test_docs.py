"""The code in README.md and in the docs site runs as written.

A fenced block tagged ``bash``, ``sh``, ``shell``, ``console`` or ``python`` is code. Each one
either runs here, or carries the marker ``<!-- not run: REASON -->`` on the line just before its
fence (docs/contributing.md). The runnable blocks of a page run in the page's order, in one
fresh folder per page that holds a copy of ``examples/`` (so a block may read the files an
earlier block wrote), with the installed ``neardup`` on ``PATH``. Blocks tagged otherwise (or
untagged) show output or formats and are not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE_LANGUAGES = {"bash", "sh", "shell", "console", "python"}
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>.*\S.*) -->$")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def code_blocks(page: Path) -> list[tuple[int, str, str, str | None]]:
    """(line of the fence, language, code, reason it is not run or None) for each code block."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    start = None
    for number, line in enumerate(lines):
        if not line.startswith("```"):
            continue
        if start is None:
            start = number
            continue
        language = lines[start][3:].strip()
        if language in CODE_LANGUAGES:
            marker = NOT_RUN.match(lines[start - 1].strip()) if start else None
            code = "\n".join(lines[start + 1 : number]) + "\n"
            blocks.append((start + 1, language, code, marker.group("reason") if marker else None))
        start = None
    return blocks


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_pages_hold_code_and_every_marker_gives_a_reason():
    found = {_name(page): code_blocks(page) for page in PAGES}
    assert sum(len(blocks) for blocks in found.values()) >= 20
    runnable = [b for blocks in found.values() for b in blocks if b[3] is None]
    assert len(runnable) >= 8
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith("<!-- not run"):
                assert NOT_RUN.match(line.strip()), f"{_name(page)}:{number}: marker without reason"


def test_a_marker_only_counts_right_before_a_fence(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not run: needs a cluster -->\n```bash\nspark-submit x\n```\n\n"
        "<!-- not run: too far -->\n\n```python\nprint(1)\n```\n```json\n{}\n```\n",
        encoding="utf-8",
    )
    blocks = code_blocks(page)
    assert [(b[1], b[3]) for b in blocks] == [("bash", "needs a cluster"), ("python", None)]


def _run(language: str, code: str, folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if language == "python":
        command = [sys.executable, "-c", code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", code]
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize(
    "page",
    [
        # The README's blocks run every main command on the 2,500-document sample: seconds.
        pytest.param(p, marks=pytest.mark.slow) if p.name == "README.md" else p
        for p in PAGES
        if any(b[3] is None for b in code_blocks(p))
    ],
    ids=_name,
)
def test_the_runnable_blocks_run(page, tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for line, language, code, reason in code_blocks(page):
        if reason is not None:
            continue
        done = _run(language, code, tmp_path)
        assert done.returncode == 0, (
            f"{_name(page)}:{line} ({language}) exited {done.returncode}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


def test_the_summary_example_is_what_the_command_above_it_writes(tmp_path):
    # docs/inputs-outputs.md shows `neardup dedup examples/sample.jsonl ... --summary-out
    # run.json` and then the file it writes: the same fields, and the same counts.
    page = (ROOT / "docs" / "inputs-outputs.md").read_text(encoding="utf-8")
    shown = json.loads(page.split("```json\n", 1)[1].split("```", 1)[0])
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = _run(
        "bash",
        "neardup dedup examples/sample.jsonl -o groups.tsv --summary-out run.json -q",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert list(written) == list(shown)
    for part in ("outputs", "settings", "counts", "rates", "seconds"):
        assert list(written[part]) == list(shown[part]), part
    machine = {"memory_limit", "workers"}  # what the machine decides
    for part in ("inputs", "outputs", "command", "exit"):
        assert written[part] == shown[part]
    assert {k: v for k, v in written["settings"].items() if k not in machine} == {
        k: v for k, v in shown["settings"].items() if k not in machine
    }
    counts = {k: v for k, v in written["counts"].items() if k != "memory_limit_mb"}
    assert counts == {k: v for k, v in shown["counts"].items() if k != "memory_limit_mb"}
