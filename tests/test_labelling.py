"""``neardup label`` on a terminal: run under a pseudo-terminal, with every key typed ahead."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest
from signal_helpers import sigterm_to_another_thread, sigterm_to_main_thread

from neardup.quality.sampling import read_sheet

termios = pytest.importorskip("termios")
pty = pytest.importorskip("pty")

TIMEOUT = 60.0  # seconds for a whole session; the run takes about one


class Terminal:
    """``neardup label`` running on the slave side of a new pseudo-terminal."""

    def __init__(self, *args: str) -> None:
        self.master, self.slave = pty.openpty()
        self.settings = termios.tcgetattr(self.slave)
        env = dict(os.environ, TERM="xterm", COLUMNS="100", LINES="40")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "neardup", "label", *args],
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            env=env,
            start_new_session=True,
        )
        self.output = b""
        self.seen = 0  # how much of the output read_until has matched

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode("utf-8"))

    def read_until(self, text: str | None = None) -> str:
        """What the program wrote, until ``text`` appears after the previous match (None: until
        the program exits) or the timeout."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            found = -1 if text is None else self.output.find(text.encode(), self.seen)
            if found >= 0:
                self.seen = found + len(text.encode())
                break
            exited = self.process.poll() is not None
            # The slave stays open here, so the master never reports an end: drain, then stop.
            if select.select([self.master], [], [], 0.05)[0]:
                self.output += os.read(self.master, 65536)
            elif exited:
                break
        return self.output.decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(TIMEOUT)
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal():
    started: list[Terminal] = []

    def start(*args: str) -> Terminal:
        started.append(Terminal(*args))
        return started[-1]

    yield start
    for term in started:
        term.close()


def test_terminal_keys_split_what_arrives_into_keys():
    from neardup.cli.labelling import _TerminalKeys

    read, write = os.pipe()
    try:
        keys = _TerminalKeys(read, "utf-8")
        os.write(write, b"y\xc3")  # a character split across two reads
        assert keys.read() == "y"
        os.write(write, b"\xa9\x1b[")  # and an escape sequence
        assert keys.read() == "é"
        os.write(write, b"1;5Bb\x1b")
        assert keys.read() == "\x1b[1;5B"
        assert keys.read() == "b"
        assert keys.read() == "\x1b"  # a lone Esc, once nothing follows it
        os.write(write, b"\x1bOAq\x03")
        assert [keys.read() for _ in range(3)] == ["\x1bOA", "q", None]  # Ctrl-C: stop
        os.close(write)
        write = -1
        assert keys.read() is None  # the end of input
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


def labels(path):
    return [r["label"] for r in read_sheet(path).rows]


def test_label_on_a_terminal_keeps_every_key_typed_ahead(labelling_sheet, terminal):
    path = labelling_sheet()
    term = terminal(str(path))
    # All keys in one write, before the program has even started: y, n, a down arrow and a
    # two-byte character (not answers: the arrow's B must not count as "back"), s, t (not an
    # answer), y, b (back to that pair), n, y.
    term.type("yn\x1b[Béstybny")
    out = term.read_until()
    assert term.process.returncode == 0, out
    assert labels(path) == [1, 0, None, 0, 1], out
    assert "got 'é'" in out and "got 't'" in out
    assert "5 pairs" in out and "4 of 5 pairs labelled (2 near-duplicates)" in out


def test_label_on_a_terminal_stops_on_ctrl_c_and_restores_the_terminal(labelling_sheet, terminal):
    path = labelling_sheet()
    term = terminal(str(path))
    # Once the session runs (before it, Ctrl-C is a signal of the cooked terminal), Ctrl-C
    # typed ahead stops after the keys typed before it, not those after.
    term.read_until(" > ")
    term.type("yn\x03y")
    out = term.read_until()
    assert term.process.returncode == 0, out
    assert labels(path) == [1, 0, None, None, None], out
    assert "2 of 5 pairs labelled (1 near-duplicates); saved to" in out
    assert termios.tcgetattr(term.slave) == term.settings


@pytest.mark.parametrize("send", [sigterm_to_main_thread, sigterm_to_another_thread])
def test_label_on_a_terminal_restores_the_terminal_on_sigterm(labelling_sheet, terminal, send):
    path = labelling_sheet()
    term = terminal(str(path))
    term.read_until(" > ")
    term.type("y")
    term.read_until("pair 2 of 5")
    assert " > " in term.read_until(" > ")  # the prompt of pair 2: waiting for a key
    send(term.process)
    out = term.read_until()
    assert term.process.returncode == 128 + signal.SIGTERM, out
    assert labels(path) == [1, None, None, None, None]
    assert termios.tcgetattr(term.slave) == term.settings
