"""The package keeps its shape: imports run one way, down the floors, no module grows too big,
and every module has its test module.

Every module under ``src/neardup`` is read with :mod:`ast`, not imported, so the test needs none
of the optional extras. An import counts wherever it stands (inside a function too, where one is
put to load a module late) and in every form: ``import a.b``, ``from a import b``, relative
imports, and a module named by a string as ``importlib`` loads it (``"neardup.cli.dedup:dedup"``).
The rules are the tables below; docs/architecture.md explains the floors.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent
ROOT = "neardup"
MAX_LINES = 800
# Modules that need no test module of their own: what a package hands on, the entry point of
# `python -m neardup` and the version string.
NO_TEST_MODULE = ("__init__", "__main__", "_version")

# The ground floor: the pipeline's stages as pure functions over arrays, which every engine
# shares. The version comes from neardup._version, not from the package root.
KERNELS = (
    "neardup.borrowed",
    "neardup.hashing",
    "neardup.text",
    "neardup.idf",
    "neardup.simhash",
    "neardup.minhash",
    "neardup.lsh",
    "neardup.similarity",
    "neardup.candidates",
    "neardup.lcs",
    "neardup.eojeol",
    "neardup.verify",
    "neardup.locality",
    "neardup.groups",
    "neardup.exact_duplicates",
    "neardup.rank_directory",
    "neardup.group_labels",
    "neardup.pipeline",
    "neardup.settings",
    "neardup.ids",
    "neardup.diff",
    "neardup._version",
)
# The edge of the pipeline: readers and writers, and the HTML report of a run.
IO = ("neardup.io", "neardup.report")

# (who imports, what it must never import, why). A name stands for the module or package and
# everything under it; the root, ROOT, stands for its own __init__.py alone.
NEVER_IMPORTS = (
    (
        KERNELS + IO,
        ("neardup.engines", "neardup.index", "neardup.quality", "neardup.cli", "neardup.api", ROOT),
        "kernels and io are the ground floor: they know no engine, index, quality tool, API, "
        "command, nor the package root (the version is neardup._version)",
    ),
    (
        ("neardup.engines",),
        ("neardup.cli", "neardup.index", "neardup.quality"),
        "engines run the kernels; the index, the quality tools and the commands stand above them",
    ),
)

# (what is imported, the only others that may import it, why). What stands inside a guarded
# package may import it too.
ONLY_IMPORTED_BY = (
    (
        "neardup.cli",
        ("neardup.__main__",),
        "the command line is the top floor: nothing under it knows it",
    ),
    (
        "neardup.index.service",
        ("neardup.cli",),
        "the HTTP service needs the service extra (fastapi) and only `neardup serve` starts it",
    ),
)


@dataclass(frozen=True)
class Import:
    """One import of a neardup module: who, of what, where (``path:line``)."""

    importer: str
    imported: str
    where: str


def module_name(path: Path) -> str:
    """The dotted name of a source file: ``src/neardup/index/__init__.py`` → ``neardup.index``."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    """Every module under src/neardup, by dotted name."""
    return {module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def known_names() -> set[str]:
    """Every module and package folder under src/neardup, by dotted name."""
    return set(package_modules()) | package_folders()


def within(module: str, name: str) -> bool:
    """True when ``module`` is ``name`` or stands under it; the root stands for itself only,
    since every module stands under it."""
    return module == name or (name != ROOT and module.startswith(name + "."))


def package_folders() -> set[str]:
    """Every folder under src/neardup that holds modules, by dotted name (with or without an
    ``__init__.py``)."""
    return {
        module_name(p / "__init__.py")
        for p in (SRC / ROOT).rglob("*")
        if p.is_dir() and any(p.glob("*.py"))
    }


def _resolve(name: str, known: set[str]) -> str | None:
    """The module or package that ``name`` loads: itself, or the nearest one above it that
    exists (``neardup.io.InputError`` → ``neardup.io``); None outside the package."""
    if name != ROOT and not name.startswith(ROOT + "."):
        return None
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in known else None


def imports_in(source: str, module: str, is_package: bool, known: set[str]) -> set[tuple[str, int]]:
    """The neardup modules and packages (names from ``known``) that the source of ``module``
    imports, at any depth, as (name, line) pairs; O(size of the source).

    >>> known = {"neardup", "neardup.io", "neardup.cli"}
    >>> imports_in("def f():\\n    from ..io import read", "neardup.cli.x", False, known)
    {('neardup.io', 2)}
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[tuple[str | None, int]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {(_resolve(alias.name, known), node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: package.count(".") + 2 - node.level]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                # `from a import b` loads the submodule a.b when there is one, else a's name b.
                submodule = f"{base}.{alias.name}"
                name = submodule if submodule in known else base
                found.add((_resolve(name, known), node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # A module loaded by name, as "neardup.x" or as an entry point "neardup.x:attr"
            # (the bare "neardup" is the program's name, not an import).
            named = node.value.split(":", 1)[0]
            if named != ROOT and named in known:
                found.add((named, node.lineno))
    return {(name, line) for name, line in found if name is not None and name != module}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of a directed graph, O(nodes + edges).

    >>> sorted(map(sorted, strongly_connected({"a": {"b"}, "b": {"a", "c"}, "c": set()})))
    [['a', 'b'], ['c']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    """Every import of a neardup module by a module under src/neardup, in path and line order."""
    modules = package_modules()
    known = known_names()
    found = []
    for module, path in modules.items():
        where = path.relative_to(SRC.parent).as_posix()
        source = path.read_text(encoding="utf-8")
        found += [
            Import(module, imported, f"{where}:{line}")
            for imported, line in sorted(
                imports_in(source, module, path.name == "__init__.py", known)
            )
        ]
    return found


def test_every_form_of_import_is_read():
    known = {
        "neardup",
        "neardup._version",
        "neardup.io",
        "neardup.cli",
        "neardup.cli.dedup",
        "neardup.cli.options",
        "neardup.engines",
        "neardup.engines.local",
    }
    source = """
import numpy
import neardup.engines.local
from neardup.io import read_table, InputError
from neardup import _version
from . import options
from .. import io
from ..engines.local import LocalEngine

def late():
    from neardup.cli import dedup
    return "neardup.cli.dedup:dedup", "neardup"
"""
    assert sorted(imports_in(source, "neardup.cli.main", False, known)) == [
        ("neardup._version", 5),
        ("neardup.cli.dedup", 11),
        ("neardup.cli.dedup", 12),
        ("neardup.cli.options", 6),
        ("neardup.engines.local", 3),
        ("neardup.engines.local", 8),
        ("neardup.io", 4),
        ("neardup.io", 7),
    ]
    # In a package's __init__.py, "." is the package itself.
    assert imports_in("from .dedup import x", "neardup.cli", True, known) == {
        ("neardup.cli.dedup", 1)
    }


def test_the_rules_name_modules_that_exist():
    known = known_names()
    named = {name for importers, imported, _ in NEVER_IMPORTS for name in importers + imported}
    named |= {name for guarded, allowed, _ in ONLY_IMPORTED_BY for name in (guarded, *allowed)}
    missing = sorted(n for n in named if not any(within(m, n) for m in known))
    assert not missing, f"the layout rules name modules that are not in src/: {missing}"


def test_no_import_cycles(imports):
    graph: dict[str, set[str]] = {}
    for i in imports:
        graph.setdefault(i.importer, set()).add(i.imported)
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    report = []
    for cycle in cycles:
        members = set(cycle)
        ties = sorted(
            f"  {i.where}: {i.importer} -> {i.imported}"
            for i in imports
            if i.importer in members and i.imported in members
        )
        report.append(f"cycle between {', '.join(sorted(cycle))}:\n" + "\n".join(ties))
    assert not cycles, "modules import each other in a loop:\n" + "\n".join(report)


def test_imports_run_down_the_floors(imports):
    broken = []
    for i in imports:
        for importers, forbidden, why in NEVER_IMPORTS:
            if any(within(i.importer, n) for n in importers) and any(
                within(i.imported, n) for n in forbidden
            ):
                broken.append(f"{i.where}: {i.importer} imports {i.imported} ({why})")
        for guarded, allowed, why in ONLY_IMPORTED_BY:
            if within(i.imported, guarded) and not any(
                within(i.importer, a) for a in (guarded, *allowed)
            ):
                broken.append(f"{i.where}: {i.importer} imports {i.imported} ({why})")
    assert not broken, "imports that run against the floors:\n" + "\n".join(sorted(broken))


def test_no_module_is_over_the_size_limit():
    big = []
    for path in package_modules().values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            big.append(f"  {path.relative_to(SRC.parent).as_posix()}: {lines}")
    assert not big, f"modules over {MAX_LINES} lines (split them by concept):\n" + "\n".join(big)


def mirror_names(path: Path) -> tuple[str, ...]:
    """The names a module's test module may have: ``test_<module>.py`` or, for a module in a
    subpackage, ``test_<package>_<module>.py`` (``io/rows.py`` → ``test_io_rows.py``) or
    ``test_<package>.py``: a subpackage tested through its public face (the index through
    ``NearDupIndex``, the Spark engine through its runs, the commands through the CLI) keeps
    its tests together, named after it."""
    if path.parent == SRC / ROOT:
        return (f"test_{path.stem}.py",)
    package = path.parent.name
    return (f"test_{path.stem}.py", f"test_{package}_{path.stem}.py", f"test_{package}.py")


def test_every_module_has_a_test_module():
    tests = {p.name for p in TESTS.glob("test_*.py")}
    missing = [
        f"  {path.relative_to(SRC.parent).as_posix()}: " + " or ".join(mirror_names(path))
        for path in package_modules().values()
        if path.stem not in NO_TEST_MODULE and not tests.intersection(mirror_names(path))
    ]
    assert not missing, (
        "modules without a test module (tests mirror modules, in tests/):\n" + "\n".join(missing)
    )
