"""The fault matrix: damaged index files, kill -9 at every rename and fsync, bad input.

A long run, not a unit test. Each family prints one line per case and a summary
(cases, crashes, wrong answers, adds lost); the exit status is 1 if any crash, wrong answer
or lost add was seen.

    python benchmarks/faults.py damage  [--work DIR] [--limit N]
    python benchmarks/faults.py kill    [--work DIR] [--limit N]
    python benchmarks/faults.py killloop [--work DIR] [--rounds N]
    python benchmarks/faults.py disk    --mount TMPFS [--work DIR]
    python benchmarks/faults.py signal  [--work DIR] [--points N]
    python benchmarks/faults.py badinput [--work DIR]   (benchmarks/faults_badinput.py)
    python benchmarks/faults.py service [--work DIR] [--port P]

The commands run in this process (click's test runner), after the compiled kernels are
warm, so that a case costs milliseconds instead of a fresh start; ``kill`` forks one child
per case, which SIGKILLs itself at the N-th call of ``os.replace``, ``os.rename`` or
``os.fsync``; ``killloop`` forks a writer and SIGKILLs it at a random moment.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

import faults_badinput
from neardup.cli import main

# ------------------------------------------------------------------------------------------
# Shared helpers
# ------------------------------------------------------------------------------------------


def write_corpus(path: Path, n: int = 200, seed: int = 1, prefix: str = "") -> list[str]:
    """``n`` random documents plus a near copy of every other one, as JSONL (id, text, ts)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(500)]
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(n)]
    rows = [{"id": f"{prefix}d{i}", "text": t, "ts": i} for i, t in enumerate(texts)]
    for i in range(0, n, 2):
        near = texts[i].split()
        near[5] = "zz"
        rows.append({"id": f"{prefix}n{i}", "text": " ".join(near), "ts": n + i})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return texts


def run(args: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    """Run the CLI in this process: (exit code, output, 'crash' or '' )."""
    result = CliRunner().invoke(main, [str(a) for a in args], input=stdin)
    crash = ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        crash = f"{type(result.exception).__name__}: {result.exception}"
    if "Traceback" in result.output:
        crash = crash or "traceback in output"
    return result.exit_code, result.output, crash


class Tally:
    """Counts of outcomes per family."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.outcomes: Counter[str] = Counter()
        self.adds_lost = 0

    def record(self, case: str, outcome: str, detail: str = "") -> None:
        self.outcomes[outcome] += 1
        print(f"{self.family}\t{case}\t{outcome}\t{detail[:160]!r}", flush=True)

    def summary(self) -> bool:
        cases = sum(self.outcomes.values())
        bad = self.outcomes["crash"] + self.outcomes["WRONG"]
        print(
            f"# {self.family}: {cases} cases; crashes {self.outcomes['crash']}, wrong answers "
            f"{self.outcomes['WRONG']}, adds lost {self.adds_lost}; {dict(self.outcomes)}",
            flush=True,
        )
        return bad == 0 and self.adds_lost == 0


# ------------------------------------------------------------------------------------------
# Family 1: damaged index files
# ------------------------------------------------------------------------------------------


def damages(size: int) -> list[tuple[str, object]]:
    """(name, how) for one file of ``size`` bytes; how is a callable(path, other_path)."""

    def delete(p, _o):
        p.unlink()

    def truncate(n):
        return lambda p, _o: os.truncate(p, n)

    def flip(offset):
        def apply(p, _o):
            data = bytearray(p.read_bytes())
            data[offset] ^= 0x10
            p.write_bytes(bytes(data))

        return apply

    def zero_page(p, _o):
        data = bytearray(p.read_bytes())
        start = (len(data) // 2) // 4096 * 4096
        data[start : start + 4096] = bytes(len(data[start : start + 4096]))
        p.write_bytes(bytes(data))

    def swap(p, other):
        shutil.copyfile(other, p)

    found = [("delete", delete), ("truncate-0", truncate(0))]
    if size > 1:
        found += [("truncate-half", truncate(size // 2)), ("truncate-1", truncate(size - 1))]
    if size:
        for name, offset in (("head", min(10, size - 1)), ("mid", size // 2), ("end", size - 1)):
            found.append((f"flip-{name}", flip(offset)))
    if size >= 8192:
        found.append(("zero-page", zero_page))
    found.append(("swap", swap))
    return found


def snapshot_open_index(clean: Path, target: Path, texts: list[str]) -> None:
    """A copy of ``clean`` taken while a writer holds it open with adds in its WAL (the state a
    kill -9 leaves): 20 adds, a checkpoint of the cached tables, 20 more."""
    from neardup.index.store import NearDupIndex

    shutil.copytree(clean, target)
    live = target.with_name(target.name + "-live")
    shutil.copytree(clean, live)
    index = NearDupIndex(live)
    index.add_many([f"x{i}" for i in range(20)], [t + " tail" for t in texts[:20]])
    index.checkpoint()
    index.add_many([f"y{i}" for i in range(20)], [t + " end" for t in texts[20:40]])
    shutil.rmtree(target)
    shutil.copytree(live, target)
    index.close()
    shutil.rmtree(live)


def damage_family(work: Path, limit: int | None) -> bool:
    tally = Tally("damage")
    corpus = work / "docs.jsonl"
    texts = write_corpus(corpus)
    extra = work / "extra.jsonl"
    extra.write_text(
        "".join(json.dumps({"id": f"e{i}", "text": texts[i] + " e"}) + "\n" for i in range(5))
    )
    probe = texts[0]
    indexes: dict[str, Path] = {}
    for method in ("simhash", "minhash"):
        clean = work / f"{method}.idx"
        code, out, crash = run(["index", "build", corpus, "-d", clean, "--method", method])
        assert code == 0 and not crash, out
        indexes[method] = clean
        open_copy = work / f"{method}-open.idx"
        snapshot_open_index(clean, open_copy, texts)
        indexes[f"{method}-open"] = open_copy
    cases = 0
    for state, clean in indexes.items():
        other = indexes["minhash" if state.startswith("simhash") else "simhash"]
        _, baseline, _ = run(["index", "query", "-d", clean, "--json", probe])
        files = sorted(p for p in clean.rglob("*") if p.is_file())
        for file in files:
            rel = file.relative_to(clean)
            other_file = other / rel if (other / rel).exists() else next(other.glob("*.sqlite"))
            for name, how in damages(file.stat().st_size):
                cases += 1
                if limit is not None and cases > limit:
                    return tally.summary()
                case = f"{state}/{rel}/{name}"
                damaged = work / "case.idx"
                shutil.rmtree(damaged, ignore_errors=True)
                shutil.copytree(clean, damaged)
                how(damaged / rel, other_file)
                classify_damage(tally, case, damaged, baseline, probe, extra, work)
    return tally.summary()


def classify_damage(tally, case, damaged, baseline, probe, extra, work) -> None:
    check_code, check_out, crash = run(["index", "check", "-d", damaged])
    if crash:
        tally.record(case + ":check", "crash", crash)
    code, out, crash = run(["index", "query", "-d", damaged, "--json", probe])
    if crash:
        tally.record(case + ":query", "crash", crash)
    elif code != 0:
        tally.record(
            case + ":query", "clear error", out.strip().splitlines()[-1:][0] if out else ""
        )
    elif out == baseline:
        tally.record(case + ":query", "correct")
    elif check_code != 0:
        tally.record(case + ":query", "detected by check", check_out.strip()[:120])
    else:
        tally.record(case + ":query", "WRONG", out[:120])
    code, out, crash = run(["index", "add", extra, "-d", damaged])
    tally.record(
        case + ":add",
        "crash" if crash else ("ok" if code == 0 else "clear error"),
        crash or out.strip()[-120:],
    )
    recovered = work / "recovered.idx"
    shutil.rmtree(recovered, ignore_errors=True)
    code, out, crash = run(["index", "recover", "-d", damaged, "--to", recovered])
    tally.record(
        case + ":recover",
        "crash" if crash else ("ok" if code == 0 else "clear error"),
        crash or out.strip()[-120:],
    )


# ------------------------------------------------------------------------------------------
# Family 2: kill -9 at every rename and fsync
# ------------------------------------------------------------------------------------------

HOOKED = ("replace", "rename", "fsync")


def fork_run(args: list[str], kill_at: int | None, counter_file: Path | None = None) -> int:
    """Run the CLI in a forked child; with ``kill_at``, the child SIGKILLs itself just before
    its ``kill_at``-th call of os.replace/os.rename/os.fsync. Returns the wait status's
    signal (negative) or exit code. ``counter_file`` receives the number of calls made."""
    pid = os.fork()
    if pid == 0:
        calls = [0]
        originals = {name: getattr(os, name) for name in HOOKED}

        def hook(name):
            def call(*a, **k):
                calls[0] += 1
                if counter_file is not None:
                    counter_file.write_text(str(calls[0]))
                if kill_at is not None and calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return originals[name](*a, **k)

            return call

        for name in HOOKED:
            setattr(os, name, hook(name))
        try:
            code, out, crash = run(args)
            sys.stdout.write(out if code else "")
            os._exit(3 if crash else code)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def scratch(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


def kill_family(work: Path, limit: int | None, only: list[str]) -> bool:
    tally = Tally("kill")
    corpus = work / "docs.jsonl"
    texts = write_corpus(corpus)
    extra = work / "extra.jsonl"
    extra.write_text(
        "".join(json.dumps({"id": f"e{i}", "text": texts[i] + " e"}) + "\n" for i in range(40))
    )
    fingerprints = work / "fps.tsv"
    assert run(["fingerprint", corpus, "-o", fingerprints, "--method", "simhash"])[0] == 0
    commands = {
        "dedup": lambda out: [
            "dedup",
            corpus,
            "-o",
            out / "groups.tsv",
            "--pairs-out",
            out / "pairs.tsv",
        ],
        "dedup-resume": lambda out: [
            "dedup",
            corpus,
            "-o",
            out / "groups.tsv",
            "--resume",
            "--tmp-dir",
            scratch(out / "work"),
        ],
        "fingerprint": lambda out: ["fingerprint", corpus, "-o", out / "fps.tsv"],
        "pairs": lambda out: ["pairs", fingerprints, "-o", out / "pairs.tsv"],
        "index-add": None,
        "index-build": lambda out: [
            "index",
            "build",
            corpus,
            "-d",
            out / "x.idx",
            "--method",
            "minhash",
        ],
    }
    for name, make in commands.items():
        if make is None or (only and name not in only):
            continue
        clean = work / f"clean-{name}"
        shutil.rmtree(clean, ignore_errors=True)
        clean.mkdir()
        warm = scratch(work / f"warm-{name}")
        run(make(warm))  # compiles the kernels in this process, so that every child has them
        counter = work / "calls"
        counter.write_text("0")
        code = fork_run(make(clean), None, counter)
        total = int(counter.read_text())
        if code != 0:
            tally.record(name, "crash", f"clean run exit {code}")
            continue
        expected = tree(clean)
        for n in range(1, total + 1):
            if limit is not None and n > limit:
                break
            case = f"{name}/call-{n}-of-{total}"
            out = work / "case"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            first = fork_run(make(out), n)
            again = fork_run(make(out), None)
            got = tree(out)
            stray = [k for k in got if k not in expected]
            if again != 0:
                tally.record(
                    case,
                    "crash" if again in (3, 4) or again < 0 else "clear error",
                    f"kill {first}, rerun exit {again}",
                )
            elif stray:
                tally.record(case, "stray files", ", ".join(stray))
            elif name != "index-build" and got != expected:
                diff = [k for k in set(got) | set(expected) if got.get(k) != expected.get(k)]
                tally.record(case, "WRONG", f"differs: {diff}")
            else:
                tally.record(case, "correct", f"kill {first}")
    if only and "index-add" not in only:
        return tally.summary()
    return kill_adds(work, extra, tally)


def kill_adds(work: Path, extra: Path, tally: Tally) -> bool:
    """``index add`` killed at every rename/fsync: every document it said it added is kept."""
    base = work / "clean-index-build" / "x.idx"
    counter = work / "calls"
    target = work / "add.idx"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    fork_run(["index", "add", extra, "-d", target], None, counter)
    total = int(counter.read_text())
    for n in range(1, total + 1):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(base, target)
        fork_run(["index", "add", extra, "-d", target], n)
        code, out, crash = run(["index", "add", extra, "-d", target, "--if-exists", "skip"])
        if crash:
            tally.record(f"index-add/call-{n}", "crash", crash)
            continue
        from neardup.index.store import NearDupIndex

        with NearDupIndex(target, readonly=True) as index:
            missing = [f"e{i}" for i in range(40) if index.get(f"e{i}") is None]
        tally.adds_lost += len(missing)
        tally.record(
            f"index-add/call-{n}-of-{total}",
            "WRONG" if missing else "correct",
            f"missing {missing[:5]}; rerun exit {code}",
        )
    return tally.summary()


def _add_in_batches(target: Path, ids: list[str], texts: list[str], size: int, ack: int | None):
    """Add ``ids``/``texts`` to the index at ``target`` in batches of ``size`` (a transaction
    each); with ``ack`` (a file descriptor), write each batch's IDs there once its add
    returned: the adds the index acknowledged."""
    from neardup.index.store import NearDupIndex

    with NearDupIndex(target) as index:
        for start in range(0, len(ids), size):
            batch = ids[start : start + size]
            index.add_many(batch, texts[start : start + size], timestamps=range(len(batch)))
            if ack is not None:
                os.write(ack, ("\n".join(batch) + "\n").encode())


def kill_loop_family(work: Path, rounds: int, seed: int = 7) -> bool:
    """``index add`` in batches (the library's ``add_many``: a transaction each, as the CLI
    commits a batch) SIGKILLed at random moments of its run (SQLite's own writes and fsyncs
    included): every batch acknowledged before the kill is stored, the index stores whole
    batches only, ``index check`` passes and its records equal those of an index that added
    the same batches without a kill."""
    import time

    tally = Tally("killloop")
    corpus = work / "docs.jsonl"
    write_corpus(corpus, n=2400)
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    base_rows, extra = rows[:600], rows[600:]
    base_file = work / "base.jsonl"
    base_file.write_text("".join(json.dumps(r) + "\n" for r in base_rows))
    base = work / "base.idx"
    assert run(["index", "build", base_file, "-d", base, "--method", "minhash", "-q"])[0] == 0
    ids, texts = [r["id"] for r in extra], [r["text"] for r in extra]
    size = 100
    batches = [ids[i : i + size] for i in range(0, len(ids), size)]
    target = work / "target.idx"
    references: dict[int, bytes] = {}

    def reference(k: int) -> bytes:
        if k not in references:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(base, target)
            _add_in_batches(target, ids[: k * size], texts[: k * size], size, None)
            references[k] = faults_badinput.index_rows(target)[1]
        return references[k]

    started = time.monotonic()
    reference(len(batches))  # also compiles the kernels before the forks
    duration = time.monotonic() - started
    rng = random.Random(seed)
    for round_ in range(rounds):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(base, target)
        acks = work / "acks"
        ack = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        pid = os.fork()
        if pid == 0:
            try:
                _add_in_batches(target, ids, texts, size, ack)
            finally:
                os._exit(0)
        os.close(ack)
        delay = rng.uniform(0, duration * 1.1)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acked = set(acks.read_text().split())
        stored = faults_badinput.index_rows(target)
        lost = sorted(acked - stored[0])
        tally.adds_lost += len(lost)
        added = len(stored[0]) - len(base_rows)
        check = run(["index", "check", "-d", target])
        case = f"round-{round_}/kill-at-{delay:.2f}s/{len(acked)}-acked"
        if check[2]:
            tally.record(case, "crash", check[2])
        elif lost:
            tally.record(case, "WRONG", f"acknowledged adds lost: {lost[:5]}")
        elif added % size or check[0] != 0:
            tally.record(case, "WRONG", f"{added} added; check exit {check[0]}: {check[1][-120:]}")
        elif faults_badinput.index_rows(target)[1] != reference(added // size):
            tally.record(case, "WRONG", f"records differ from {added // size} batches added")
        else:
            tally.record(case, "correct", f"{added // size} batches stored")
    return tally.summary()


# ------------------------------------------------------------------------------------------
# Family 3: full disks (a small tmpfs, filled but for a few bytes)
# ------------------------------------------------------------------------------------------


def disk_family(work: Path, mount: Path) -> bool:
    """Each command writes onto ``mount`` (a tmpfs of a few MB, mounted by the caller) left
    with 0 B to 1 MB free: it either ends as a clean run does, or with one line naming a path
    on the mount, a non-zero exit and nothing of its own left there."""
    tally = Tally("disk")
    corpus = work / "docs.jsonl"
    write_corpus(corpus, n=2000)
    fingerprints = work / "fps.tsv"
    assert run(["fingerprint", corpus, "-o", fingerprints, "--method", "simhash"])[0] == 0
    base = work / "base.idx"
    assert run(["index", "build", corpus, "-d", base, "--method", "minhash"])[0] == 0
    extra = work / "extra.jsonl"
    write_corpus(extra, n=400, seed=2, prefix="x")
    commands = {
        "dedup": lambda d: ["dedup", corpus, "-o", d / "g.tsv", "--pairs-out", d / "p.tsv"],
        "dedup-tmp": lambda d: [
            "dedup",
            corpus,
            "-o",
            work / "g.tsv",
            "--tmp-dir",
            d,
            "--memory-limit",
            "1MB",
        ],
        "fingerprint": lambda d: ["fingerprint", corpus, "-o", d / "f.tsv"],
        "pairs": lambda d: ["pairs", fingerprints, "-o", d / "p.tsv"],
        "index-build": lambda d: ["index", "build", corpus, "-d", d / "b.idx"],
        "index-add": lambda d: ["index", "add", extra, "-d", d / "a.idx"],
    }
    filler = mount / "filler"
    for name, make in commands.items():
        for free in (0, 4096, 65536, 262144, 1 << 20):
            for p in mount.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            if name == "index-add":
                shutil.copytree(base, mount / "a.idx")
            before = set(tree(mount))
            stat = os.statvfs(mount)
            room = stat.f_bavail * stat.f_frsize - free
            with open(filler, "wb") as fh:
                fh.truncate(0)
                fh.write(bytes(max(room, 0)))
            code, out, crash = run(make(mount))
            filler.unlink()
            left = sorted(set(tree(mount)) - before - {"filler"})
            case = f"{name}/free-{free}"
            last = out.strip().splitlines()[-1] if out.strip() else ""
            whole = _added_whole(mount / "a.idx", extra, tally) if name == "index-add" else ""
            if crash:
                tally.record(case, "crash", crash)
            elif whole:
                tally.record(case, "WRONG", whole)
            elif code == 0:
                tally.record(case, "ok", last)
            elif (
                str(mount) not in last
                or "no space" not in last
                or len(out.strip().splitlines()) > 2
                or (name == "index-add" and "documents were added" not in last)
            ):
                tally.record(case, "unclear error", out[-200:])
            elif left and name != "index-add":
                tally.record(case, "half-written", ", ".join(left))
            else:
                tally.record(case, "clear error", last)
    return tally.summary()


def _added_whole(index: Path, extra: Path, tally: Tally) -> str:
    """After an ``index add`` of ``extra`` on a full disk, with the space back: what is wrong
    with the index ('' if nothing): ``index check`` must pass and adding ``extra`` again
    (``--if-exists skip``) must leave every document of it stored."""
    code, out, crash = run(["index", "check", "-d", index])
    if code != 0 or crash:
        return f"check exit {code} after the full disk: {(crash or out)[-150:]}"
    code, out, crash = run(["index", "add", extra, "-d", index, "--if-exists", "skip", "-q"])
    if code != 0 or crash:
        return f"add again exit {code}: {(crash or out)[-150:]}"
    wanted = {json.loads(line)["id"] for line in extra.read_text().splitlines()}
    missing = wanted - faults_badinput.index_rows(index)[0]
    tally.adds_lost += len(missing)
    return f"missing after adding again: {sorted(missing)[:5]}" if missing else ""


# ------------------------------------------------------------------------------------------
# Family 4: SIGINT and SIGTERM at many points
# ------------------------------------------------------------------------------------------


def fork_entry(args: list, out: Path) -> int:
    """Start ``neardup.cli.run(args)`` (the console entry: its signal handling included) in a
    forked child whose stdout and stderr go to ``out/stdout`` and ``out/stderr``; its pid."""
    import neardup_cli
    from neardup.cli import run as entry

    stopping = {signal.SIGINT, signal.SIGTERM}
    # Blocked until the child has the handlers the console script sets first (neardup_cli:
    # one line and 128 + the signal until neardup.cli.run installs its own).
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    with open(out / "stdout", "wb") as so, open(out / "stderr", "wb") as se:
        pid = os.fork()
        if pid == 0:
            os.dup2(so.fileno(), 1)
            os.dup2(se.fileno(), 2)
            try:
                for number in stopping:
                    signal.signal(number, neardup_cli._stop_during_start_up)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                entry([str(a) for a in args])
            finally:
                os._exit(99)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return pid


def signal_family(work: Path, points: int) -> bool:
    """Each command is signalled at ``points`` moments spread over a clean run's duration;
    it must end with exit 128 + the signal and one line (or finish as the clean run did), no
    traceback, and leave no output or temporary file."""
    import time

    tally = Tally("signal")
    corpus = work / "docs.jsonl"
    write_corpus(corpus, n=3000)
    fingerprints = work / "fps.tsv"
    assert run(["fingerprint", corpus, "-o", fingerprints, "--method", "simhash"])[0] == 0
    commands = {
        "dedup-spill": lambda d: [
            "dedup",
            corpus,
            "-o",
            d / "g.tsv",
            "--pairs-out",
            d / "p.tsv",
            "--memory-limit",
            "1MB",
            "--tmp-dir",
            scratch(d / "tmp"),
        ],
        "index-build": lambda d: ["index", "build", corpus, "-d", d / "b.idx"],
        "pairs": lambda d: ["pairs", fingerprints, "-o", d / "p.tsv"],
    }
    for name, make in commands.items():
        clean = scratch(work / f"clean-{name}")
        run(make(scratch(work / f"warm-{name}")))  # the kernels compiled before the forks
        started = time.monotonic()
        _, status = os.waitpid(fork_entry(make(clean), clean), 0)
        duration = time.monotonic() - started
        expected = {k: v for k, v in tree(clean).items() if k not in ("stdout", "stderr")}
        for sig in (signal.SIGINT, signal.SIGTERM):
            for i in range(points):
                case = f"{name}/{sig.name}/{i}"
                out = work / "case"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                pid = fork_entry(make(out), out)
                time.sleep(duration * i / points)
                os.kill(pid, sig)
                _, status = os.waitpid(pid, 0)
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
                err = (out / "stderr").read_text(errors="replace")
                left = {k: v for k, v in tree(out).items() if k not in ("stdout", "stderr")}
                # An index's bytes differ between runs (times); its outputs are compared by name.
                same = left.keys() == expected.keys() if name == "index-build" else left == expected
                last = err.strip().splitlines()[-1] if err.strip() else ""
                if "Traceback" in err or code < 0 or code == 99:
                    tally.record(case, "crash", f"exit {code}: {err[-200:]}")
                elif code == 0:
                    tally.record(case, "finished" if same else "WRONG", last)
                elif code != 128 + sig or "stopped" not in last.lower():
                    tally.record(case, "wrong exit", f"exit {code}: {err[-200:]}")
                elif left and not same:
                    tally.record(case, "WRONG", "partial output: " + ", ".join(sorted(left)))
                elif (
                    name == "index-build"
                    and left
                    and run(["index", "check", "-d", out / "b.idx"])[0]
                ):
                    tally.record(case, "WRONG", "the index left fails index check")
                elif left:
                    tally.record(case, "stopped after complete outputs", last)
                elif len(err.strip().splitlines()) != 1:
                    tally.record(case, "not one line", err[-200:])
                else:
                    tally.record(case, "clean stop", last)
    return tally.summary()


# ------------------------------------------------------------------------------------------
# Family 5b: bad requests to the HTTP service
# ------------------------------------------------------------------------------------------

BAD_BODIES = {
    "not-json": b'{"id": "a", "text": ',
    "array": b"[1, 2]",
    "huge-int": b'{"id": "a", "text": "a b c", "timestamp": ' + b"9" * 5000 + b"}",
    "huge-int-id": b'{"id": ' + b"9" * 5000 + b', "text": "a b c"}',
    "text-number": b'{"id": "a", "text": 5}',
    "text-null": b'{"id": "a", "text": null}',
    "missing-text": b'{"id": "a"}',
    "missing-id": b'{"text": "a b c"}',
    "id-tab": b'{"id": "a\\tb", "text": "a b c"}',
    "id-nul": b'{"id": "a\\u0000b", "text": "a b c"}',
    "id-long": b'{"id": "' + b"i" * 2000 + b'", "text": "a b c"}',
    "timestamp-bool": b'{"id": "a", "text": "a b c", "timestamp": true}',
    "timestamp-string": b'{"id": "a", "text": "a b c", "timestamp": "soon"}',
    "invalid-utf8": b'{"id": "a", "text": "\xff\xfe"}',
    "bom": b'\xef\xbb\xbf{"id": "a", "text": "a b c"}',
    "limit-string": b'{"text": "a b c", "limit": "5"}',
    "limit-bool": b'{"text": "a b c", "limit": true}',
    "limit-negative": b'{"text": "a b c", "limit": -1}',
    "empty": b"",
}


def service_family(work: Path, port: int) -> bool:
    """``neardup serve`` on 127.0.0.1 (ended after the run): every bad body to /v1/documents
    and /v1/query must get a 4xx naming the problem, never a 5xx."""
    import subprocess
    import time
    import urllib.error
    import urllib.request

    tally = Tally("service")
    corpus = work / "docs.jsonl"
    write_corpus(corpus, n=50)
    idx = work / "svc.idx"
    assert run(["index", "build", corpus, "-d", idx, "--method", "minhash"])[0] == 0
    neardup = Path(sys.executable).with_name("neardup")
    server = subprocess.Popen(
        [
            "timeout",
            "600",
            neardup,
            "serve",
            "-d",
            idx,
            "--port",
            str(port),
            "--log-level",
            "error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "serve.log", "wb"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        for endpoint in ("/v1/documents", "/v1/query"):
            for name, body in BAD_BODIES.items():
                request = urllib.request.Request(
                    base + endpoint, data=body, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, text = response.status, response.read().decode(errors="replace")
                except urllib.error.HTTPError as error:
                    status, text = error.code, error.read().decode(errors="replace")
                case = f"{endpoint}/{name}"
                if status >= 500:
                    tally.record(case, "crash", f"{status} {text[:150]}")
                elif status >= 400:
                    tally.record(case, "clear error", f"{status} {text[:150]}")
                else:
                    tally.record(case, "accepted", f"{status} {text[:150]}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    return tally.summary()


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "family",
        choices=["damage", "kill", "killloop", "disk", "signal", "badinput", "service"],
    )
    parser.add_argument("--rounds", type=int, default=40, help="killloop: kills")
    parser.add_argument("--port", type=int, default=18731, help="service: loopback port")
    parser.add_argument("--points", type=int, default=16, help="signal: moments per command")
    parser.add_argument("--mount", type=Path, help="disk: a small tmpfs to fill")
    parser.add_argument("--work", type=Path, default=Path("/tmp/neardup-faults"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", nargs="*", default=[], help="kill: these commands only")
    options = parser.parse_args()
    shutil.rmtree(options.work, ignore_errors=True)
    options.work.mkdir(parents=True)
    if options.family == "damage":
        ok = damage_family(options.work, options.limit)
    elif options.family == "kill":
        ok = kill_family(options.work, options.limit, options.only)
    elif options.family == "killloop":
        ok = kill_loop_family(options.work, options.rounds)
    elif options.family == "service":
        ok = service_family(options.work, options.port)
    elif options.family == "signal":
        ok = signal_family(options.work, options.points)
    elif options.family == "disk":
        ok = disk_family(options.work, options.mount)
    else:
        ok = faults_badinput.badinput_family(options.work, run, Tally("badinput"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main_cli()
