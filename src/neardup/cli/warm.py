"""``neardup warm``: compile every kernel once, so that no later command waits for it.

numba compiles a kernel on its first call, for the types it is called with, and caches the
machine code on disk (:mod:`neardup.cli.compiling`). ``warm`` runs each command's job once, in
process, over a few built-in English and Korean documents with near-duplicates among them, in
a temporary folder: every kernel a command calls is then compiled for the types it calls it
with, which a list of kernels and hand-written signatures could not promise. Large inputs take
other paths (sorts, merges and scans on two cores, the exact duplicates' table in parts, spilled
columns, texts read again by their places), so the last steps run ``dedup`` and ``pairs`` again
over generated inputs past those sizes (:data:`LARGE_ROWS` short documents and fingerprint
rows, with copies and near-duplicates; the documents a second time within a budget they
overflow): seconds more, and a first run of millions of documents compiles nothing either. One
line a step says what it compiled; ``--kernels`` lists every kernel with its compile time. The
package's Python modules get their bytecode too where they have none (:func:`compile_modules`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import py_compile
import struct
import tempfile
import time
from pathlib import Path

import click

from neardup.cli import compiling
from neardup.cli.context import CONTEXT

_ENGLISH = [
    "The river rose through the night and by morning the lower fields were under water, "
    "so the farmers moved their animals to the ridge above the village.",
    "A small bakery on the corner sells bread that is still warm at six, and the queue "
    "outside reaches the bus stop before the first tram arrives.",
    "The committee met for three hours, agreed on a budget for the new library and asked "
    "the architects for drawings of a reading room with larger windows.",
    "Volunteers cleaned the beach on Saturday, filling forty bags with plastic, rope and "
    "glass, and counted the birds nesting in the dunes behind it.",
]
_KOREAN = [
    "오늘 아침 시장에는 사과와 배가 많이 나왔고 상인들은 추석을 앞두고 가격을 조금 올렸다.",
    "도서관은 다음 달부터 주말에도 문을 열며 어린이 열람실에 새 책 삼백 권을 들여놓는다.",
    "비가 그친 뒤 산책로를 따라 걷던 사람들은 물에 잠긴 다리를 피해 돌아가야 했다.",
    # Compatibility jamo (ㅋㅋ) take the canonical form's slower path, as in web text.
    "회의는 다음 주로 미뤄졌고 다들 조금 쉬어 갈 수 있다며 좋아했다 ㅋㅋ",
]


def _edited(text: str) -> str:
    """A near-duplicate of ``text``: one word dropped and one appended."""
    words = text.split()
    return " ".join(words[:2] + words[3:] + ["again"])


def _documents() -> list[dict]:
    """Every built-in text and a near-duplicate of each, with IDs and timestamps."""
    texts = [t for text in _ENGLISH + _KOREAN for t in (text, _edited(text))]
    return [{"id": f"d{i}", "text": text, "ts": 1_700_000_000 + i} for i, text in enumerate(texts)]


#: Rows of the generated inputs of the last steps: past every size from which a job takes its
#: paths for large inputs (:data:`neardup.candidates.radix.PARALLEL_MIN_KEYS` and
#: :data:`neardup.exact_duplicates.PARALLEL_MIN_DOCUMENTS` are 2**20).
LARGE_ROWS = (1 << 20) + (1 << 14)


def _write_large_inputs(folder: Path, rows: int = LARGE_ROWS) -> tuple[str, str]:
    """Write ``rows`` short documents (JSON Lines: 8 to 15 words of 4,096, a quarter of them
    copies or one-word edits of earlier ones) and ``rows`` fingerprint rows (ID, 64-bit
    fingerprint in hex, time; a tenth within a bit of an earlier one) into ``folder``; returns
    their paths. The same files every time. Every line is laid out in a byte matrix by numpy
    (words, IDs and digits of fixed width), not formatted one by one. O(rows)."""
    import numpy as np

    hex_bytes = np.frombuffer(b"0123456789abcdef", np.uint8)
    rng = np.random.default_rng(0)
    words = rng.integers(0, 1 << 12, size=(rows, 15))
    lengths = rng.integers(8, 16, size=rows)
    source = rng.integers(0, np.arange(rows) + 1)  # an earlier row (or itself)
    kind = rng.integers(0, 8, size=rows)  # 0: a copy of the source, 1: an edit of it
    taken = np.where(kind < 2, source, np.arange(rows))
    # Each word "w" and three hex digits, then a space; an edit's first word is "xedt".
    vocabulary = np.full((1 << 12, 4), ord("w"), np.uint8)
    vocabulary[:, 1:] = hex_bytes[(np.arange(1 << 12)[:, None] >> np.array([8, 4, 0])) & 15]
    text = np.full((rows, 15, 5), ord(" "), np.uint8)
    text[:, :, :4] = vocabulary[words[taken]]
    text[kind == 1, 0, :4] = np.frombuffer(b"xedt", np.uint8)
    text = text.reshape(rows, 75)
    head = _fixed_columns(rows, b'{"id": "d', b'", "text": "')
    tail = np.frombuffer(b'"}\n', np.uint8)
    lines = np.hstack([head, text, np.broadcast_to(tail, (rows, 3))])
    # A row's text ends before its last word's space: the bytes from there to the tail go.
    width = head.shape[1] + 5 * lengths[taken] - 1
    kept = np.arange(lines.shape[1]) < width[:, None]
    kept[:, -3:] = True
    docs = folder / "large.jsonl"
    docs.write_bytes(lines[kept].tobytes())
    fingerprints = rng.integers(0, 1 << 63, size=rows, dtype=np.uint64) << np.uint64(1)
    near = rng.random(rows) < 0.1
    flips = np.uint64(1) << rng.integers(0, 64, size=rows).astype(np.uint64)
    fingerprints[near] = fingerprints[source[near]] ^ flips[near]
    shifts = np.arange(60, -1, -4, dtype=np.uint64)
    hex_digits = hex_bytes[((fingerprints[:, None] >> shifts) & np.uint64(15)).astype(np.intp)]
    seconds = np.arange(rows)
    clock = np.stack([seconds // 600 % 6, seconds // 60 % 10, seconds // 10 % 6, seconds % 10], 1)
    digits = (clock + ord("0")).astype(np.uint8)
    fps = folder / "large_fingerprints.tsv"
    fps.write_bytes(
        np.hstack([
            _fixed_columns(rows, b"u", b"\t"), hex_digits, _repeated(b"\t2024-01-01T00:", rows),
            digits[:, :2], _repeated(b":", rows), digits[:, 2:], _repeated(b"Z\n", rows),
        ]).tobytes()
    )  # fmt: skip
    return str(docs), str(fps)


def _repeated(piece: bytes, rows: int):
    """``piece`` as a column block of ``rows`` identical rows (uint8[rows, len(piece)])."""
    import numpy as np

    return np.broadcast_to(np.frombuffer(piece, np.uint8), (rows, len(piece)))


def _fixed_columns(rows: int, before: bytes, after: bytes):
    """Each row's ``before``, its number in seven digits, then ``after`` (uint8 rows)."""
    import numpy as np

    number = np.arange(rows)[:, None] // 10 ** np.arange(6, -1, -1) % 10 + ord("0")
    return np.hstack([_repeated(before, rows), number.astype(np.uint8), _repeated(after, rows)])


def _steps(folder: Path) -> list[tuple[str, list[str]]]:
    """The jobs that compile every kernel: (what, the command's arguments). The last ones read
    the inputs of :func:`_write_large_inputs`, written when they come."""
    docs = str(folder / "docs.jsonl")
    fps = str(folder / "fingerprints.tsv")
    query = _edited(_ENGLISH[0])
    return [
        ("dedup (MinHash, the default)", ["dedup", docs, "-o", str(folder / "groups.tsv"),
                                          "--pairs-out", str(folder / "pairs.tsv")]),
        ("dedup --method simhash", ["dedup", docs, "-o", str(folder / "groups2.tsv"),
                                    "--method", "simhash"]),
        ("fingerprint", ["fingerprint", docs, "-o", str(folder / "signatures.tsv")]),
        ("fingerprint --method simhash", ["fingerprint", docs, "-o", fps, "--method", "simhash"]),
        ("pairs", ["pairs", fps, "-k", "3", "-o", str(folder / "fp_pairs.tsv")]),
        ("compare (English)", ["compare", "--text", _ENGLISH[1], _edited(_ENGLISH[1])]),
        ("compare (Korean)", ["compare", "--text", _KOREAN[0], _edited(_KOREAN[0])]),
        ("index build (MinHash)", ["index", "build", docs, "-d", str(folder / "m.idx"),
                                   "--time-field", "ts"]),
        ("index query (MinHash)", ["index", "query", "-d", str(folder / "m.idx"), query]),
        ("index build --method simhash", ["index", "build", docs, "-d", str(folder / "s.idx"),
                                          "--time-field", "ts", "--method", "simhash"]),
        ("index query (SimHash)", ["index", "query", "-d", str(folder / "s.idx"), query]),
        (_LARGE + "dedup", ["dedup", str(folder / "large.jsonl"), "-o",
                            str(folder / "large_groups.tsv"), "--pairs-out",
                            str(folder / "large_pairs.tsv")]),
        # A budget too small for them: spilled columns, texts read again by their places.
        (_LARGE + "dedup --memory-limit 64M", ["dedup", str(folder / "large.jsonl"), "-o",
                                               str(folder / "large_groups2.tsv"), "--pairs-out",
                                               str(folder / "large_pairs2.tsv"),
                                               "--memory-limit", "64M"]),
        (_LARGE + "pairs", ["pairs", str(folder / "large_fingerprints.tsv"), "-k", "3", "-o",
                            str(folder / "large_fp_pairs.tsv")]),
    ]  # fmt: skip


#: How the names of the steps over generated large inputs begin.
_LARGE = f"{LARGE_ROWS:,} generated rows: "


def _run_step(group: click.Command, arguments: list[str]) -> None:
    """Run one command of ``group`` (``neardup``) in this process, its output kept unless it
    fails."""
    output = io.StringIO()
    status: int | str | None = 0
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            status = group.main(arguments, prog_name="neardup", standalone_mode=False)
        except SystemExit as end:
            status = end.code
        except click.ClickException as error:
            print(error.format_message(), file=output)
            status = error.exit_code
    if status not in (0, None):
        raise click.ClickException(
            f"warm: `neardup {' '.join(arguments[:2])} …` failed:\n{output.getvalue().strip()}"
        )


def warm_kernels(group: click.Command, echo=click.echo) -> compiling.CompileNotice:
    """Compile every kernel of neardup that is not in numba's cache yet, by running each step of
    :func:`_steps` once with ``group``, the ``neardup`` command; ``echo`` gets one line a step.
    Returns the record of what was compiled (``kernels``: (name, seconds) in compile order).
    With every kernel cached: a few seconds."""
    notice = compiling.CompileNotice()
    notice.display = _Silent()
    # The command's own notice would announce the compiling a second time.
    compiling.stop_listening()
    from numba.core import event as numba_event

    numba_event.register("numba:compile", notice)
    try:
        with tempfile.TemporaryDirectory(prefix="neardup-warm-") as name:
            folder = Path(name)
            with open(folder / "docs.jsonl", "w", encoding="utf-8") as out:
                for document in _documents():
                    out.write(json.dumps(document, ensure_ascii=False) + "\n")
            steps = _steps(folder)
            for number, (what, arguments) in enumerate(steps, 1):
                before, since = notice.compiled, time.perf_counter()
                if what.startswith(_LARGE) and not (folder / "large.jsonl").exists():
                    _write_large_inputs(folder)
                _run_step(group, arguments)
                compiled = notice.compiled - before
                echo(
                    f"warm {number}/{len(steps)}: {what}: "
                    + (f"compiled {compiled} kernels" if compiled else "cached")
                    + f", {time.perf_counter() - since:.1f} s"
                )
    finally:
        numba_event.unregister("numba:compile", notice)
    return notice


def compile_modules(package: Path | None = None) -> int:
    """Write the bytecode of every module of ``package`` (a folder; default: neardup's own)
    whose ``__pycache__`` holds none that Python would load for its source. Python writes it
    at a module's first import, except where ``PYTHONDONTWRITEBYTECODE`` is set (as in many
    containers) or the folder is not writable: there every process compiled the modules it
    imported, about 0.3 s of each command's start here. Returns how many were written; a module whose bytecode
    cannot be written is skipped. O(modules).

    Example:
        >>> compile_modules(Path(tempfile.mkdtemp()))  # a folder without modules
        0
    """
    root = Path(__file__).resolve().parents[1] if package is None else Path(package)
    written = 0
    for source in sorted(root.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if _current(cached, source):
            continue
        try:
            py_compile.compile(str(source), cfile=str(cached), doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue  # a read-only install, or a module Python itself would refuse
        written += 1
    return written


def _current(cached: Path, source: Path) -> bool:
    """Whether the bytecode file ``cached`` is the one Python would load for ``source``: this
    interpreter's magic number, and the source's modification time and size in its header, as
    Python checks them at import (a source put back with an older time is not current).
    Bytecode checked by the source's hash (written so under ``SOURCE_DATE_EPOCH``) is left to
    Python's own check."""
    try:
        with open(cached, "rb") as fh:
            header = fh.read(16)
    except OSError:
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags, mtime, size = struct.unpack("<LLL", header[4:])
    stat = source.stat()
    return bool(flags & 1) or (mtime, size) == (
        int(stat.st_mtime) & 0xFFFFFFFF,
        stat.st_size & 0xFFFFFFFF,
    )


class _Silent:
    def notice(self, text: str) -> None:
        pass

    def compiling(self, on: bool) -> None:
        pass


@click.command(context_settings=CONTEXT)
@click.option(
    "--kernels",
    "list_kernels",
    is_flag=True,
    help="Also list every kernel compiled, slowest first, with the processor seconds its "
    "compiling took.",
)
def warm(list_kernels: bool) -> None:
    """Compile every kernel once (a first run's compiling, done ahead), then exit.

    Runs each command's job over a few built-in documents in a temporary folder, one line a
    step. The kernels are cached beside the package (or in NUMBA_CACHE_DIR): later runs load
    them. The package's modules get their bytecode where they have none (an install that
    Python did not write it to). Run it after installing; a second run finds everything cached
    and takes seconds.

    \b
    Examples:
      neardup warm
      neardup warm --kernels
    """
    click.echo(
        "neardup: compiling every kernel not cached yet (about 2 processor minutes the first "
        "time; later runs load them)"
    )
    written = compile_modules()
    if written:
        click.echo(f"neardup: wrote the bytecode of {written} Python modules")
    # The group this command belongs to, from the context: importing it would be a cycle.
    notice = warm_kernels(click.get_current_context().find_root().command)
    click.echo(
        f"neardup: compiled {notice.compiled} kernels in {notice.seconds:.0f} s"
        if notice.compiled
        else "neardup: every kernel was cached already"
    )
    if list_kernels:
        for name, seconds in sorted(notice.kernels, key=lambda kernel: -kernel[1]):
            click.echo(f"{seconds:8.2f} s  {name}")  # processor seconds
