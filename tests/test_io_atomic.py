"""Atomic writes, output sets and the checks of outputs (neardup.io.atomic)."""

import doctest
import json

import pytest
from io_helpers import dead_pid

import neardup.io.atomic as io_atomic
from neardup.io import write_table


def test_docstring_examples():
    assert doctest.testmod(io_atomic).failed == 0


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    with io_atomic.atomic_write(target) as fh:
        fh.write(b"new, ")
        (temporary,) = [p for p in tmp_path.iterdir() if p != target]
        assert temporary.name.startswith(".t.bin.") and temporary.name.endswith(".tmp")
        assert target.read_bytes() == b"old"  # nothing is seen before the end
        fh.write(b"whole")
    assert target.read_bytes() == b"new, whole"
    with pytest.raises(KeyboardInterrupt):
        with io_atomic.atomic_write(target) as fh:
            fh.write(b"half")
            raise KeyboardInterrupt
    assert target.read_bytes() == b"new, whole"
    assert [p.name for p in tmp_path.iterdir()] == ["t.bin"]


def test_only_outputs_wait_for_their_output_set(tmp_path):
    with io_atomic.output_set():
        with io_atomic.atomic_write(tmp_path / "work.npy") as fh:
            fh.write(b"a work file")
        assert (tmp_path / "work.npy").exists()  # read back at once: not deferred
        write_table(tmp_path / "out.tsv", {"id": ["a"]})
        assert not (tmp_path / "out.tsv").exists()
    assert (tmp_path / "out.tsv").read_text() == "id\na\n"


KILLED_AFTER_FIRST_RENAME = """
import os, signal, sys
from neardup.io.atomic import atomic_output, output_set
rename = os.replace
def rename_then_die(source, target):
    rename(source, target)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = rename_then_die
with output_set():
    for target in sys.argv[1:]:
        with atomic_output(target) as fh:
            fh.write(("new " + os.path.basename(target)).encode())
"""


def test_a_set_split_across_folders_is_finished_from_any_of_them(tmp_path):
    """``-o A/groups.tsv --pairs-out B/pairs.tsv`` killed after its first rename: the next
    run that writes into B (only) finishes the set from B, instead of removing B's pending
    file as a dead run's debris; nothing of the commit is left in either folder."""
    import subprocess
    import sys

    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (b / "pairs.tsv").write_text("old pairs")
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_AFTER_FIRST_RENAME,
            str(a / "groups.tsv"),
            str(b / "pairs.tsv"),
        ]
    )
    assert killed.returncode == -9
    assert (a / "groups.tsv").read_text() == "new groups.tsv"
    io_atomic.finish_dead_writes(b)
    assert (b / "pairs.tsv").read_text() == "new pairs.tsv"
    io_atomic.finish_dead_writes(a)
    assert sorted(p.name for p in a.iterdir()) == ["groups.tsv"]
    assert sorted(p.name for p in b.iterdir()) == ["pairs.tsv"]


def test_a_set_whose_journal_was_cut_is_left_out_whole(tmp_path):
    """A run killed while writing the copies of its journal had renamed nothing; once another
    run has removed its pending file in B (no journal there), the copy in A removes the rest
    instead of renaming half the set."""

    pid = dead_pid()
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (a / "groups.tsv").write_text("old groups")
    pending = a / f".groups.tsv.{pid}-0123456789ab.tmp"
    pending.write_text("new groups")
    copy_a = a / f".neardup-commit.{pid}-00000000000a.json"
    copy_b = b / f".neardup-commit.{pid}-00000000000b.json"  # never written
    copy_a.write_text(
        json.dumps(
            {
                "renames": [
                    [str(pending), str(a / "groups.tsv")],
                    [str(b / f".pairs.tsv.{pid}-ba9876543210.tmp"), str(b / "pairs.tsv")],
                ],
                "journals": [str(copy_a), str(copy_b)],
            }
        )
    )
    io_atomic.finish_dead_writes(a)
    assert sorted(p.name for p in a.iterdir()) == ["groups.tsv"]
    assert (a / "groups.tsv").read_text() == "old groups"


def test_a_full_disk_names_the_file_being_written(tmp_path):
    """ENOSPC from a write says which output could not be written, and where."""
    import errno

    target = tmp_path / "groups.tsv"
    with pytest.raises(OSError, match=f"no space left on the device of {tmp_path}") as info:
        with io_atomic.atomic_write(target):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert info.value.errno == errno.ENOSPC and str(target) in str(info.value)
    assert list(tmp_path.iterdir()) == []
