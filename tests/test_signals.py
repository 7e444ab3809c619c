"""Tests for neardup.signals: the neardup command, run as its own process, ends on SIGINT or
SIGTERM at any point (start-up, reading, compiled kernels, spilling, writing) with one line,
exit status 128 + the signal's number and no partial output."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signal_helpers import (
    sigterm_to_another_thread,
    sigterm_to_main_thread,
    sigterm_to_the_last_thread,
)

from neardup import signals
from neardup.io.atomic import atomic_output, output_set

WORDS = [f"w{i}" for i in range(3000)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(2)
    path = tmp_path_factory.mktemp("signals") / "docs.jsonl"
    lines = []
    for i in range(10_000):
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 80))]
        if i % 5 == 1:  # near copies of the previous document, for pairs to verify
            words = lines[-1]["text"].split()[:-1] + ["edited"]
        lines.append({"id": f"d{i}", "text": " ".join(words)})
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


def _dedup(corpus, folder, spill) -> list[str]:
    """``neardup dedup`` with two outputs, spilling into ``spill`` (1M of memory)."""
    return [
        str(Path(sys.executable).parent / "neardup"),  # the entry point, from its first import
        "dedup",
        str(corpus),
        "-o",
        str(folder / "groups.tsv"),
        "--pairs-out",
        str(folder / "pairs.tsv"),
        "--memory-limit",
        "1M",
        "--tmp-dir",
        str(spill),
        "--workers",
        "1",
        "-q",
    ]


def _wait_for_handlers(process: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait until ``process`` catches SIGTERM (``SigCgt`` in ``/proc/PID/status``), i.e. it has
    reached the entry point's first line. Before that the interpreter itself is starting (the
    installed script's own imports), where no program can catch a signal. No wait without
    ``/proc``."""
    status = Path(f"/proc/{process.pid}/status")
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up and process.poll() is None:
        try:
            caught = next(
                int(line.split()[1], 16)
                for line in status.read_text().splitlines()
                if line.startswith("SigCgt:")
            )
        except (OSError, StopIteration):
            return
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.002)


@pytest.mark.slow  # a dozen whole processes, each stopped at another point
def test_signals_at_many_points_end_with_one_line_and_no_partial_output(corpus, tmp_path):
    """SIGINT and SIGTERM in turn, sent from the first milliseconds after the entry point
    takes the signals (imports) to the last part of the run (12 runs): every run still going
    when the signal comes ends with exit status 128 + signal and the one line, leaves no
    temporary file, and its outputs are absent or whole; a run that had ended has its
    outputs."""
    reference = tmp_path / "reference"
    reference.mkdir()
    started = time.monotonic()
    done = subprocess.run(_dedup(corpus, reference, tmp_path), capture_output=True, timeout=120)
    duration = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    whole = {p.name: p.read_bytes() for p in reference.iterdir()}
    runs = 12
    for k in range(runs):
        number = (signal.SIGINT, signal.SIGTERM)[k % 2]
        folder = tmp_path / f"run{k}"
        spill = tmp_path / f"spill{k}"
        folder.mkdir()
        spill.mkdir()
        process = subprocess.Popen(
            _dedup(corpus, folder, spill), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        launched = time.monotonic()
        _wait_for_handlers(process)
        # Up to 0.8 of the reference run: later, a run on a loaded machine may end between
        # the check below and the signal, which no test can tell from an ignored signal.
        time.sleep(max(0.0, 0.8 * duration * (k + 0.5) / runs - (time.monotonic() - launched)))
        ended = process.poll() is not None
        process.send_signal(number)
        out, err = process.communicate(timeout=60)
        written = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert list(spill.iterdir()) == [], k
        if ended:
            assert process.returncode == 0 and written == whole, (k, err)
            continue
        assert process.returncode == 128 + number, (k, err)
        assert err.decode().splitlines() == [f"neardup: stopped by {number.name}"], (k, err)
        assert written in ({}, whole), (k, sorted(written))


def test_a_signal_whose_exception_was_swallowed_still_stops_the_commit(tmp_path, monkeypatch):
    """A signal received (its exception lost on the way, as in a compiled kernel's return)
    stops an output set before its first rename: nothing is written."""
    monkeypatch.setattr(signals, "_received", signal.SIGINT)
    with pytest.raises(signals.Interrupted):
        with output_set():
            for name in ("a.tsv", "b.tsv"):
                with atomic_output(str(tmp_path / name)) as fh:
                    fh.write(b"x\n")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_inside_numba_or_llvmlite_is_recorded_not_raised(monkeypatch):
    """Raised inside their code (a finaliser freeing an LLVM object), the exception left their
    state broken and the process crashed on its way out: there the signal is only recorded,
    and the run stops at its next check."""
    monkeypatch.setattr(signals, "_received", None)
    monkeypatch.setattr(signals, "_deferring", 0)
    scope = {"__name__": "llvmlite.binding.ffi", "signals": signals, "sys": sys}
    exec("def finaliser():\n    signals._on_signal(2, sys._getframe())\n", scope)
    scope["finaliser"]()  # no exception
    assert signals.received() == signal.SIGINT
    with pytest.raises(signals.Interrupted):
        signals.raise_if_received()
    monkeypatch.setattr(signals, "_received", None)
    with pytest.raises(signals.Interrupted):
        signals._on_signal(signal.SIGTERM, sys._getframe())


def test_an_interrupted_finaliser_reports_nothing_and_other_errors_still_do(monkeypatch):
    """The signal raised in a finaliser or a weak reference's callback (where the import
    system's module locks are freed) is not reported as ignored: the record ends the run
    with its one line. Any other exception there is still reported."""
    reported = []
    monkeypatch.setattr(signal, "signal", lambda number, handler: None)
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: reported.append(unraisable))
    signals.install()

    class Raises:
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def __del__(self) -> None:
            raise self.error

    Raises(signals.Interrupted(signal.SIGTERM))
    Raises(ValueError("kept"))
    assert [type(u.exc_value) for u in reported] == [ValueError]


@pytest.mark.parametrize(
    "send", [sigterm_to_main_thread, sigterm_to_another_thread, sigterm_to_the_last_thread]
)
def test_a_run_waiting_on_an_idle_stdin_pipe_stops_on_sigterm(tmp_path, send):
    """`dedup -` waiting for input that does not come: the signal stops it wherever the
    kernel delivers it. Delivered to a thread other than the main one, Python's handler
    never ran while the main thread slept in ``read`` of the pipe (or joined the thread
    reading it), and the run waited for the pipe to close."""
    out = tmp_path / "groups.tsv"
    process = subprocess.Popen(
        [sys.executable, "-m", "neardup", "dedup", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_handlers(process)
        give_up = time.monotonic() + 60
        while not _waits_on_the_pipe(process.pid) and time.monotonic() < give_up:
            time.sleep(0.05)
        send(process)
        process.wait(timeout=30)  # stdin stays open: closing it would end the wait by itself
        err = process.stderr.read()
    finally:
        process.kill()
        process.stdin.close()
        process.stderr.close()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.decode().strip().endswith("neardup: stopped by SIGTERM")
    assert not out.exists()


def _waits_on_the_pipe(pid: int) -> bool:
    """Whether a thread of ``pid`` sleeps in a read of a pipe or in select/poll."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if any(word in (task / "wchan").read_text() for word in ("pipe", "poll", "select")):
                return True
    return False


def test_wait_readable_answers_data_timeout_and_a_recorded_signal(monkeypatch):
    read, write = os.pipe()
    try:
        with signals.wakeup() as woken:
            assert woken is not None
            assert signals.wait_readable(read, woken, timeout=0.05) is False
            os.write(write, b"x")
            assert signals.wait_readable(read, woken, timeout=0.05) is True
            assert signals.WakingReader(read, woken).read(10) == b"x"
            # A signal whose handler only recorded it still ends the wait.
            monkeypatch.setattr(signals, "_received", signal.SIGTERM)
            os.write(signal.set_wakeup_fd(-1), bytes([signal.SIGTERM]))
            with pytest.raises(signals.Interrupted):
                signals.wait_readable(read, woken)
        assert signal.set_wakeup_fd(-1) == -1  # the previous wakeup (none) is back
    finally:
        os.close(read)
        os.close(write)
