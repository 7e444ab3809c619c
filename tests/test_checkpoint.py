"""``--resume`` (engines/checkpoint): a run interrupted at a stage after pass 1 continues with
the same bytes, at the tightest memory limit and the default; pass 1's checkpoint copies no
column, and a resumed run holds what the first held; a crash while checkpointing leaves none;
a damaged checkpoint is one clear error."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from test_outofcore import (
    _interrupt_at,
    dedup,
    dedup_args,
    make_corpus,
    outputs,
    write_jsonl,
)

from neardup.cli import main
from neardup.cli.options import Reporter
from neardup.engines import checkpoint, outofcore
from neardup.engines.collected import held_bytes
from neardup.engines.outofcore import OutOfCoreDedup
from neardup.engines.spill import WorkDir
from neardup.io import read_documents
from neardup.settings import Settings


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # 4,000 documents: enough for 1M of memory limit to spill every column.
    return write_jsonl(
        tmp_path_factory.mktemp("resume") / "docs.jsonl", make_corpus(4000), bad_rows=True
    )


@pytest.fixture(scope="module")
def clean(corpus, tmp_path_factory):
    """The outputs of a run without --resume, by its options."""
    made = {}

    def outputs_of(*options):
        if options not in made:
            made[options] = dedup(corpus, tmp_path_factory.mktemp("clean"), "clean", *options)
        return made[options]

    return outputs_of


def _command(corpus, out, spill_dir, *options):
    return dedup_args(corpus, out, "--resume", "--tmp-dir", spill_dir, *options)


def _interrupted(command, stage, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(Reporter, "stage", _interrupt_at(stage, Reporter))
        result = CliRunner().invoke(main, command)
    assert result.exit_code == 1 and "Aborted" in result.output, result.output


@pytest.mark.parametrize(
    "stage, options",
    [
        ("exact duplicates", ("--memory-limit", "1M")),
        ("candidates", ("--memory-limit", "1M")),
        ("verify", ("--memory-limit", "1M")),
        ("writing", ("--memory-limit", "1M")),
        ("candidates", ()),
        ("verify", ()),
        ("verify", ("--memory-limit", "1M", "--pairs", "all")),
        ("verify", ("--memory-limit", "1M", "--method", "simhash")),
        ("candidates", ("--method", "simhash", "--verify", "none")),
    ],
)
def test_resume_after_an_interrupt_at_any_stage_gives_the_same_bytes(
    corpus, clean, tmp_path, monkeypatch, stage, options
):
    """Interrupted after pass 1 (every column then spilled, at the tightest limit and the
    default), the run continues without reading the inputs again: the stages after pass 1
    must not have deleted a file that the checkpoint names."""
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    out = outputs(tmp_path, "resumed")
    command = _command(corpus, out, spill_dir, *options)
    _interrupted(command, stage, monkeypatch)
    (folder,) = spill_dir.iterdir()
    stages = json.loads((folder / "manifest.json").read_text())["stages"]
    assert stages == (["collect", "group"] if stage == "writing" else ["collect"])
    with monkeypatch.context() as m:
        m.setattr(outofcore, "_sign_batch", None)  # pass 1 is not run again
        result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    assert {name: p.read_bytes() for name, p in out.items()} == clean(*options)
    assert list(spill_dir.iterdir()) == []


def test_resume_refuses_changed_options(corpus, tmp_path, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    command = _command(corpus, outputs(tmp_path, "resumed"), spill_dir, "--memory-limit", "1M")
    _interrupted(command, "verify", monkeypatch)
    changed = CliRunner().invoke(main, command + ["--threshold", "0.75"])
    assert changed.exit_code == 1 and "other inputs or options" in changed.output


def _job(corpus, work, settings, memory_limit):
    def reopen(records):
        return read_documents([corpus], time_field="ts", on_error="skip", batch_size=200)

    return OutOfCoreDedup(reopen(False), reopen, settings, work, memory_limit, workers=2)


@pytest.mark.parametrize("memory_limit", [1 << 20, 256 << 20])
@pytest.mark.parametrize(
    "settings", [Settings(), Settings(verify="none"), Settings(method="simhash")], ids=repr
)
def test_the_checkpoint_copies_no_column_and_a_resumed_run_holds_none(
    corpus, tmp_path, memory_limit, settings
):
    """After pass 1 the work folder holds each column once, in the file the checkpoint names
    (only the timestamps and SimHash's fingerprints, held in memory whatever the budget, are
    written whole); a resumed run reopens those files and reads none of them whole."""
    with WorkDir(tmp_path, "key", "out", resume=True) as work:
        first = _job(corpus, work, settings, memory_limit)
        collected = first.collect()
        n = len(collected)
        info = work.load_json("collect")
        named = {work.file(name + ".bin"): spec for name, spec in info["columns"].items()}
        assert set(named) >= {work.file("content.bin"), work.file("sizes.bin")}
        for path, spec in named.items():
            assert (
                path.stat().st_size
                == spec["rows"] * spec["width"] * np.dtype(spec["dtype"]).itemsize
            )
        kept = {*named, work.file("ids.arrow"), work.file("locations.bin")}
        assert all(path.exists() for path in kept)
        whole = sum(p.stat().st_size for p in work.path.iterdir() if p not in kept)
        held = held_bytes(collected.timestamps)
        if settings.method == "simhash":  # MinHash's signatures (no verification): a map
            held += collected.signatures.signature.nbytes
        assert whole <= held + 3 * 4096  # and the record, the manifest, the array headers
        assert held < 20 * n

        resumed = _job(corpus, work, settings, memory_limit)
        again = resumed.collect()
        assert again.id_column is None and again.ids.to_pylist() == collected.ids.to_pylist()
        assert again.content_column.spilled and again.signatures.content.shape[1] == 0
        assert all(column.spilled for column in again.band_columns)
        assert resumed.charged == first.charged == held
        np.testing.assert_array_equal(again.timestamps, collected.timestamps)
        np.testing.assert_array_equal(again.signatures.sizes, collected.signatures.sizes)
        rows = np.arange(0, n, 97)
        np.testing.assert_array_equal(again.locations_at(rows), collected.locations_at(rows))
        groups, expected = resumed.group(), first.group()
        for name in checkpoint.GROUP_ARRAYS:
            np.testing.assert_array_equal(getattr(groups, name), getattr(expected, name))


def test_a_crash_while_checkpointing_leaves_no_checkpoint(corpus, clean, tmp_path, monkeypatch):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    out = outputs(tmp_path, "resumed")
    command = _command(corpus, out, spill_dir, "--memory-limit", "1M")

    def crash(paths):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(checkpoint, "_flush_to_disk", crash)
        result = CliRunner().invoke(main, command)
    assert result.exit_code == 1 and "Aborted" in result.output
    (folder,) = spill_dir.iterdir()
    assert json.loads((folder / "manifest.json").read_text())["stages"] == []
    assert not (folder / "collect.json").exists()
    result = CliRunner().invoke(main, command)  # pass 1 again, then the rest
    assert result.exit_code == 0, result.output
    assert {name: p.read_bytes() for name, p in out.items()} == clean("--memory-limit", "1M")


@pytest.mark.parametrize("name, cut", [("band-3.bin", 8), ("ids.arrow", None)])
def test_a_damaged_checkpoint_is_one_clear_error(corpus, tmp_path, monkeypatch, name, cut):
    """A recorded file cut short, or gone, is one error naming it and the folder to remove."""
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    command = _command(corpus, outputs(tmp_path, "resumed"), spill_dir, "--memory-limit", "1M")
    _interrupted(command, "verify", monkeypatch)
    (folder,) = spill_dir.iterdir()
    damaged = folder / name
    size = damaged.stat().st_size
    if cut is None:
        damaged.unlink()
    else:
        with open(damaged, "r+b") as fh:
            fh.truncate(size - cut)
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 1 and "Traceback" not in result.output
    left = 0 if cut is None else size - cut
    assert f"{damaged} holds {left} bytes, its checkpoint {size}" in result.output
    assert f"remove {folder} to start the run again" in result.output
