"""Tests for neardup.startup: the ``neardup`` process and a Spark run's Python daemon load
neither pandas, scipy nor yaml for a job that needs none of them, a run of cached kernels
neither refreshes numba's target context, reads the packages' entry points nor parses the
kernels' bitcode (numba's answers about their symbols kept), pyarrow's pandas conversions,
numba's kernels (compiled ones too) and its configuration file work as before, and the garbage
collector is paused while the command's module is imported, only in the command's process."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_python(code: str, *arguments: str, cwd=None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def run_dedup(tmp_path, before_run: str, after_run: str) -> list[str]:
    """The lines a ``neardup dedup`` of two near-duplicates prints, run in a new process as
    the command runs (``before_run`` and ``after_run``: code around it), with PAIRS checked.
    GROUPS and PAIRS then hold integer and boolean cells, whose encoding must not go through
    Arrow's to_numpy of booleans (it imports pandas)."""
    docs = tmp_path / "docs.jsonl"
    text = "the cat sat on the mat " * 5
    docs.write_text(
        f'{{"id": "a", "text": "{text}"}}\n{{"id": "b", "text": "{text}too"}}\n',
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "from neardup.cli import main\n"
        "startup.install()\n"
        f"{before_run}"
        "main(sys.argv[1:], standalone_mode=False)\n"
        f"{after_run}"
    )
    groups, pairs = tmp_path / "groups.tsv", tmp_path / "pairs.tsv"
    arguments = ("dedup", str(docs), "-o", str(groups), "--pairs-out", str(pairs), "--quiet")
    lines = run_python(code, *arguments)
    assert groups.read_text().count("\n") == 3  # header and the documents
    assert pairs.read_text().splitlines()[1].split("\t")[:2] == ["a", "b"]
    return lines


def test_dedup_loads_neither_pandas_nor_scipy_nor_yaml(tmp_path):
    loaded = "loaded = ('pandas', 'scipy', 'scipy.linalg', 'yaml', 'numba', 'pyarrow')\n"
    lines = run_dedup(tmp_path, "", loaded + "print([m for m in loaded if m in sys.modules])\n")
    assert lines[-1] == "['numba', 'pyarrow']"


def test_pyarrow_converts_pandas_objects_once_pandas_is_imported():
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "startup.install()\n"
        "import numpy as np, pyarrow as pa\n"
        "pa.array(['x', 'y'], type=pa.large_string()), pa.array(np.arange(3))\n"
        "print('pandas' in sys.modules)\n"
        "import pandas as pd\n"
        "series = pd.Series([1.0, None, float('nan')])\n"
        "print(pa.array(series).null_count, pa.array(series, from_pandas=True).null_count)\n"
        "print(pa.array(pd.Categorical(['a', 'b', 'a'])).type.index_type)\n"
        "print(pa.table(pd.DataFrame({'a': [1, 2]})).num_rows)\n"
        "print(pa.table({'a': [1, None]}).to_pandas()['a'].isna().sum())\n"
    )
    # As pyarrow does without the finder: NaN is null only for pandas objects, a categorical
    # becomes a dictionary array, a data frame a table.
    assert run_python(code) == ["False", "2 2", "int8", "2", "1"]


def test_numba_kernels_and_scipy_work_after_the_hidden_set_up():
    code = (
        "import sys\n"
        "from neardup import startup\n"
        "startup.install()\n"
        "import numba, numpy as np\n"
        "total = numba.njit(lambda x: x.sum())\n"
        "print(total(np.arange(4)), 'scipy.linalg' in sys.modules)\n"
        "import scipy.linalg\n"
        "print(float(scipy.linalg.det(np.eye(2))))\n"
    )
    assert run_python(code) == ["6 False", "1.0"]


def test_a_run_of_cached_kernels_neither_refreshes_numba_nor_reads_entry_points(tmp_path):
    # Counted: the target context's refreshes and the reads of the packages' entry points.
    counting = (
        "import importlib.metadata\n"
        "from numba.core.base import BaseContext\n"
        "calls = []\n"
        "refresh, entry_points = BaseContext.refresh, importlib.metadata.entry_points\n"
        "BaseContext.refresh = lambda self: calls.append('refresh') or refresh(self)\n"
        "importlib.metadata.entry_points = lambda **k: calls.append('read') or entry_points(**k)\n"
    )
    run_dedup(tmp_path, counting, "")  # compiles the kernels missing from the cache, if any
    assert run_dedup(tmp_path, counting, "print(calls)\n")[-1] == "[]"


def test_kernels_compile_and_run_after_a_load_from_the_cache():
    # The load sets up the runtime only; compiling a new kernel then refreshes the context
    # itself, and the loaded kernel still runs. The first run puts the kernel in the cache.
    code = (
        "from neardup import startup\n"
        "startup.install()\n"
        "import numba, numpy as np\n"
        "from neardup.candidates.radix import compact_distinct\n"
        "values = np.array([3, 3, 5, 9])\n"
        "print(compact_distinct(values.copy()).tolist())\n"
        "print(numba.njit(lambda x: (x * x).sum())(values))\n"
        "print(compact_distinct(np.array([1, 1, 2])).tolist())\n"
    )
    expected = ["[3, 5, 9]", "124", "[1, 2]"]
    assert run_python(code) == expected
    assert run_python(code) == expected


def test_numba_still_reads_its_configuration_file_with_yaml(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / ".numba_config.yaml").write_text("opt: '1'\n", encoding="utf-8")
    code = "from neardup import startup\nstartup.install()\nimport numba\n"
    code += "print(int(numba.config.OPT))\n"
    assert run_python(code, cwd=tmp_path) == ["1"]  # numba's default is 3


# A kernel loaded from the cache: its bitcode parsed only when needed, numba's answers kept.

SYMBOLS = """
import sys
import numpy as np
from numba.core.registry import cpu_target
from neardup.candidates.radix import compact_distinct
from neardup.groups import _union_pairs, connected_components, find_root

compact_distinct(np.array([3, 3, 5]))
connected_components(4, np.array([0, 1]), np.array([1, 2]))  # _union_pairs calls find_root
engine = cpu_target.target_context.codegen()._engine
libraries = [
    result.library
    for kernel in (compact_distinct, _union_pairs, find_root)
    for result in kernel.overloads.values()
]
before = parses[0] if parses else 0
# Every name the kernels' bitcode holds, defined or only declared, and names no one defines.
names = {"no_such_symbol", "_ZN7neardup2no5such6kernelE"}
for library in libraries:
    module = library._get_module_for_linking()
    names |= {value.name for values in (module.functions, module.global_variables)
              for value in values}
print(before, len(libraries) > 1, len(names) > 20)
print(sorted(name for name in names if engine.is_symbol_defined(name)))
"""


def test_cached_kernels_answer_symbol_questions_as_numba_does_without_parsing_their_bitcode():
    counting = (
        "from neardup import startup\n"
        "startup.install()\n"
        "import llvmlite.binding as binding\n"
        "parses, parse = [0], binding.parse_bitcode\n"
        "binding.parse_bitcode = lambda code: parses.__setitem__(0, parses[0] + 1) or parse(code)\n"
    )
    run_python(counting + SYMBOLS)  # puts the kernels in the cache, if they are not there
    light = run_python(counting + SYMBOLS)
    plain = run_python("parses = None\n" + SYMBOLS)  # numba's own load
    assert light[0] == "0 True True"  # loaded, and run, with no bitcode parsed
    assert light[1] == plain[1]


def test_a_kernel_compiled_after_a_load_links_the_loaded_kernel():
    # The new kernel calls a cached one: linking parses the loaded kernel's bitcode then.
    code = (
        "from neardup import startup\n"
        "startup.install()\n"
        "import numba, numpy as np\n"
        "from neardup.hashing import splitmix64\n"
        "print(splitmix64(np.uint64(7)))\n"
        "twice = numba.njit(lambda x: splitmix64(splitmix64(x)))\n"
        "print(twice(np.uint64(7)) == splitmix64(np.uint64(splitmix64(np.uint64(7)))))\n"
    )
    first = run_python(code)
    assert run_python(code) == first and first[1] == "True"


def test_object_symbols_are_the_defined_global_and_weak_symbols_of_an_elf_object():
    import llvmlite.binding as binding

    from neardup.startup import object_symbols

    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    module = binding.parse_assembly(
        """
        @counter = global i64 0
        @hidden = private constant i64 1
        @outside = external global i64
        declare i64 @elsewhere(i64)
        define i64 @kept(i64 %x) { %y = call i64 @elsewhere(i64 %x) ret i64 %y }
        define linkonce_odr i64 @shared(i64 %x) { ret i64 %x }
        define internal i64 @own(i64 %x) { ret i64 %x }
        define i64 @uses(i64 %x) { %a = call i64 @own(i64 %x) %b = load i64, ptr @outside
        %c = add i64 %a, %b ret i64 %c }
        """
    )
    machine = binding.Target.from_triple(binding.get_process_triple()).create_target_machine()
    code = machine.emit_object(module)
    if code[:4] != b"\x7fELF":
        pytest.skip("this platform's objects are not ELF")
    assert object_symbols(code) == {"counter", "kept", "shared", "uses"}
    assert object_symbols(code[:40]) == frozenset()  # cut short: no answer, not a wrong one


def test_the_collector_is_paused_while_the_command_module_is_imported(tmp_path):
    """Through the command's entry (``neardup.cli.run``): the collector is off while the group
    imports the command's module, and on when the command runs, what was alive then set aside
    (frozen); the process ends with the command's status."""
    (tmp_path / "probe_command.py").write_text(
        "import gc\n"
        "import click\n"
        "IMPORTED_WITH = gc.isenabled()\n"
        "@click.command()\n"
        "def probe():\n"
        "    print('import', IMPORTED_WITH)\n"
        "    print('run', gc.isenabled(), gc.get_freeze_count() > 1000)\n"
    )
    code = (
        "import gc, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import neardup.cli\n"
        "from neardup.cli.main import _CommandGroup\n"
        "_CommandGroup.COMMANDS['probe'] = 'probe_command:probe'\n"
        "print('start', gc.isenabled(), gc.get_freeze_count())\n"
        "neardup.cli.run(['probe'])\n"
    )
    assert run_python(code) == ["start True 0", "import False", "run True True"]


def test_the_collector_is_paused_only_in_a_process_of_the_entry_points(monkeypatch):
    """Without :func:`install` (neardup used as a library) the block runs as it is, as it does
    with a collector that the program turned off; else the collector is off in the block and
    on after it, the objects alive frozen."""
    from neardup import startup

    frozen = []
    monkeypatch.setattr(startup.gc, "freeze", lambda: frozen.append(True))
    was_on = startup.gc.isenabled()
    try:
        startup.gc.enable()
        monkeypatch.setattr(startup, "_finder", None)
        with startup.collector_paused():
            assert startup.gc.isenabled()
        monkeypatch.setattr(startup, "_finder", object())
        startup.gc.disable()
        with startup.collector_paused():
            pass
        assert not startup.gc.isenabled() and frozen == []
        startup.gc.enable()
        with startup.collector_paused():
            assert not startup.gc.isenabled()
        assert startup.gc.isenabled() and frozen == [True]
    finally:
        (startup.gc.enable if was_on else startup.gc.disable)()
