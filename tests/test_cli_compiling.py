"""Tests for neardup.cli.compiling (the first run's notice) and the command line's start-up:
the package and ``--help`` load none of the compiled machinery."""

from __future__ import annotations

import importlib
import subprocess
import sys

from click.testing import CliRunner
from numba.core.event import Event, EventStatus

from neardup.cli import compiling, main
from neardup.cli.main import _CommandGroup


class Recorder:
    def __init__(self):
        self.lines, self.states = [], []

    def notice(self, text):
        self.lines.append(text)

    def compiling(self, on):
        self.states.append(on)


def event(status):
    return Event("numba:compile", status, data={})


def test_notice_once_and_compiling_shown_from_first_start_to_last_end():
    notice, shown = compiling.CompileNotice(), Recorder()
    notice.display = shown
    # A kernel whose compilation compiles two callees, then a second kernel.
    for status in ["START", "START", "END", "START", "END", "END", "START", "END"]:
        notice.notify(event(getattr(EventStatus, status)))
    assert shown.lines == [compiling.NOTICE]
    assert shown.states == [True, False, True, False]
    assert notice.compiled == 2
    assert notice.closing_line().startswith("neardup: compiled 2 kernels in ")


def test_each_kernel_recorded_once_with_its_callees_under_its_name():
    import numba

    @numba.njit
    def kernel(x):
        return x + 1

    notice = compiling.CompileNotice()
    notice.display = Recorder()
    start, end = (
        Event("numba:compile", getattr(EventStatus, s), data={"dispatcher": kernel})
        for s in ("START", "END")
    )
    for status in [start, event(EventStatus.START), event(EventStatus.END), end]:
        notice.notify(status)
    (name, seconds), *others = notice.kernels
    assert others == [] and name.endswith(".kernel") and name.startswith(__name__)
    assert 0.0 <= seconds < 60.0


def test_nothing_compiled_nothing_said():
    assert compiling.CompileNotice().closing_line() is None


def test_listens_only_on_a_terminal(monkeypatch):
    # Tests, logs and pipes get the output they always got.
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert compiling.listen() is None and compiling.active is None


def test_help_and_version_import_no_kernel_machinery():
    code = (
        "import sys\n"
        "from neardup.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('numba', 'numpy', 'pyarrow', 'neardup.api') if m in sys.modules]\n"
        "print(heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.strip() == "[]"
    assert "dedup" in done.stdout and "Find every group of near-duplicates" in done.stdout


def test_import_neardup_is_light_and_its_names_resolve():
    code = (
        "import sys, neardup\n"
        "print('numba' in sys.modules)\n"
        "print(neardup.normalize('Hello, World!'), callable(neardup.minhash))\n"
        "import neardup.minhash, neardup.simhash\n"
        "print(callable(neardup.minhash), callable(neardup.simhash))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split("\n")[:3] == ["False", "hello world True", "True True"]


def test_command_summaries_are_the_commands_own_words():
    # --help lists SUMMARIES without importing the commands: each is how its command's help
    # begins, so the two cannot drift apart.
    assert set(_CommandGroup.SUMMARIES) == set(_CommandGroup.COMMANDS)
    for name, target in _CommandGroup.COMMANDS.items():
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert " ".join(command.help.split()).startswith(_CommandGroup.SUMMARIES[name]), name


def test_help_lists_every_command():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in _CommandGroup.COMMANDS:
        assert f"  {name} " in result.output
