"""Keep what no ``neardup`` process needs off its start-up: two imports, a set-up, a parse,
and the garbage collector's passes over what the imports make.

- **pandas** (0.3-0.5 s): pyarrow imports it on its first conversion of a list or an array
  (``pa.array``), only to ask whether the object is a pandas one (its conversions that infer
  a type or meet a None import pandas in C++, and still do). In a ``neardup`` process
  pyarrow is told there is no pandas (its own fallback when pandas is not installed), and told
  again, by pyarrow's own retry, as soon as anything imports pandas: from then on its pandas
  conversions work as before.
- **scipy** (0.2-0.3 s, when it is installed): numba imports it while it sets up its
  first kernel, to find a BLAS for ``np.dot`` and ``np.linalg`` in compiled code, which no
  kernel of neardup uses. It is hidden during that set-up only, and during numba's own
  import, which imports it only to check its version (8 ms), as it imports yaml only to read
  a ``.numba_config.yaml`` (11 ms; not hidden where the working folder holds one).

And one set-up that no kernel loaded from numba's cache needs: before loading a kernel's
machine code from its cache, numba refreshes its whole target context, which on the first
kernel imports and registers every typing and code-generation registry it has (about 70
modules, and the entry points of numba's extensions: 0.1 s, on one core, before the first
kernel runs). Code loaded from the cache runs on numba's runtime alone, which is all a load sets up
here (:func:`_load_overload`); the modules a kernel's code refers to are still imported as it
is loaded, and a kernel compiled later (a cache miss, a new signature) refreshes the context
itself, as numba's compiler always does. Nor does a kernel of neardup use numba's extensions
(packages that add types and functions to compiled code), which numba looks for in every
installed package's metadata on the first call of any kernel (15-25 ms with the ``email``
package that reading imports): they are taken as looked for.

Loading a kernel from the cache also parses, on one core, the LLVM bitcode stored beside its
machine code, and lists every function and global that bitcode defines (2-3 ms a kernel: the 67
kernels that a ``dedup`` loads took 0.34 s with both, 0.15 s without). The bitcode serves only to
link the kernel into one being compiled, and the list only to answer "is this symbol defined?",
asked of a loaded kernel for its own entry points. Here the bitcode is parsed when a link first
asks for it (:func:`_shared_module`), and the symbols are first taken from the machine code's
own ELF symbol table (:func:`object_symbols`: the global and weak symbols it defines, all
of which the bitcode defines too); a symbol not found there parses the bitcode of every
kernel loaded so far and is answered from their full lists, as numba answers it
(:func:`_is_symbol_defined`).

Python's cyclic garbage collector is paused while the command group imports the module of the
command it runs (:func:`collector_paused`): numpy, numba and pyarrow make a few hundred
thousand objects (modules, classes, functions) that live until the process ends, and the
collector went over them again and again as they were made, on the one core that the start-up
has: about 40 ms of a ``dedup`` or ``pairs`` run (one full collection of 21-25 ms among them).
Once that module and its imports are loaded, the objects alive are set aside for good
(``gc.freeze``) and the collector runs again, over what the run makes.

Installed by the processes' entry points only: :func:`neardup.cli.run` (the command) and the
Spark engine's Python worker daemon (:mod:`neardup.engines.spark.daemon`, whose workers fork
from it: 0.2-0.3 s less before an executor's first task). A program that imports neardup, and
the tests that call the commands in process, keep their imports as they were. ``python -X
importtime -m neardup dedup ...`` shows the difference.
"""

from __future__ import annotations

import gc
import importlib.abc
import os
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from neardup.import_hooks import Hook, hooked_spec

#: The finder of this process, once :func:`install` put it first on ``sys.meta_path``.
_finder: _Finder | None = None


class _Finder(importlib.abc.MetaPathFinder):
    """Refuses the modules in :attr:`hidden`, and runs a module's hook around its execution."""

    def __init__(self) -> None:
        self.hidden: set[str] = set()
        self.hooks: dict[str, Hook] = {}

    def find_spec(self, name, path=None, target=None):
        if name in self.hidden:
            raise ModuleNotFoundError(f"{name} is not imported by the neardup command", name=name)
        hook = self.hooks.pop(name, None)
        return None if hook is None else hooked_spec(self, name, path, target, hook)

    def hiding(self, names: tuple[str, ...], execute: Callable[[], None]) -> None:
        """Run ``execute`` with the modules ``names`` refused, but those imported already."""
        refused = {name for name in names if name not in sys.modules} - self.hidden
        self.hidden |= refused
        try:
            execute()
        finally:
            self.hidden -= refused


def _numba_arraymath(execute: Callable[[], None]) -> None:
    _finder.hiding(("scipy", "scipy.linalg"), execute)


def _pyarrow(execute: Callable[[], None]) -> None:
    execute()
    if "pandas" in sys.modules:
        return
    shim = sys.modules["pyarrow"].lib._pandas_api
    _finder.hiding(("pandas",), lambda: shim.have_pandas)  # pyarrow notes: no pandas
    _finder.hooks["pandas"] = _pandas


def _pandas(execute: Callable[[], None]) -> None:
    execute()
    try:
        _ = sys.modules["pyarrow"].lib._pandas_api.compat  # pyarrow imports pandas again: found
    except (ImportError, AttributeError, KeyError):
        pass  # pyarrow refuses this pandas, as it would have without the finder


def _numba(execute: Callable[[], None]) -> None:
    hidden = ("scipy",) if os.path.isfile(_NUMBA_CONFIG) else ("scipy", "yaml")
    _finder.hiding(hidden, execute)


#: The configuration file numba reads from the working folder, with yaml.
_NUMBA_CONFIG = ".numba_config.yaml"


def _numba_entrypoints(execute: Callable[[], None]) -> None:
    execute()
    entrypoints = sys.modules["numba.core.entrypoints"]
    if hasattr(entrypoints, "_already_initialized"):
        entrypoints._already_initialized = True


def _numba_caching(execute: Callable[[], None]) -> None:
    execute()
    cache = sys.modules["numba.core.caching"].Cache
    if all(hasattr(cache, name) for name in ("load_overload", *_CACHE_STEPS)):
        cache.load_overload = _load_overload  # else numba changed: its own load, as before


#: The methods of numba's ``Cache`` that :func:`_load_overload` calls.
_CACHE_STEPS = ("_load_overload", "_guard_against_spurious_io_errors")


def _load_overload(self, sig, target_context):
    """numba's ``Cache.load_overload`` with the runtime set up instead of the whole target
    context refreshed (module docstring): the runtime is what machine code from the cache
    calls (its allocator and reference counts). Called under numba's compiler lock."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)
    return None  # the guard swallowed an error of the cache's files: compiled instead


def _numba_codegen(execute: Callable[[], None]) -> None:
    execute()
    codegen = sys.modules["numba.core.codegen"]
    library, engine = codegen.CPUCodeLibrary, codegen.JitEngine
    unserialize = library.__dict__.get("_unserialize")
    if (
        isinstance(unserialize, classmethod)
        and all(hasattr(library, name) for name in _LIBRARY_STEPS)
        and all(hasattr(engine, name) for name in _ENGINE_STEPS)
    ):  # else numba changed: its own load, as before
        global _numba_unserialize
        _numba_unserialize = unserialize.__func__
        library._unserialize = classmethod(_unserialize)
        library._shared_module = property(_shared_module, _set_shared_module)
        engine.is_symbol_defined = _is_symbol_defined


#: The methods of numba's ``CPUCodeLibrary`` and ``JitEngine`` that the load below calls.
_LIBRARY_STEPS = ("enable_object_caching", "_set_compiled_object", "_finalize_final_module")
_ENGINE_STEPS = ("_load_defined_symbols", "is_symbol_defined")

#: numba's own ``CPUCodeLibrary._unserialize``, for the libraries not cached as machine code.
_numba_unserialize: Callable | None = None

#: Where a library and the engine keep the bitcode not parsed yet (in their ``__dict__``).
_BITCODE, _SHARED, _PENDING = "_neardup_bitcode", "_neardup_shared", "_neardup_pending"


def _unserialize(cls, codegen, state):
    """numba's load of a cached library with its bitcode left unparsed (module docstring):
    the same steps in the same order, the symbols read from the machine code."""
    name, kind, data = state
    if kind != "object":
        return _numba_unserialize(cls, codegen, state)
    object_code, shared_bitcode = data
    library = codegen.create_library(name)
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library.__dict__[_BITCODE] = shared_bitcode
    library._finalize_final_module()
    engine = codegen._engine
    engine._defined_symbols |= object_symbols(object_code)
    engine.__dict__.setdefault(_PENDING, []).append(library)
    return library


def _shared_module(library):
    """A library's module for linking; a loaded one's bitcode is parsed on the first ask."""
    module = library.__dict__.get(_SHARED)
    if module is None and _BITCODE in library.__dict__:
        import llvmlite.binding

        module = library.__dict__[_SHARED] = llvmlite.binding.parse_bitcode(
            library.__dict__[_BITCODE]
        )
        del library.__dict__[_BITCODE]
    return module


def _set_shared_module(library, module) -> None:
    library.__dict__[_SHARED] = module


def _is_symbol_defined(engine, name: str) -> bool:
    """numba's answer: is ``name`` defined by a module or a library loaded into ``engine``?
    The loaded libraries' machine code names most of them; any other name lists the symbols
    of their bitcode, once, as numba's own load does. O(1) after that."""
    if name in engine._defined_symbols:
        return True
    pending = engine.__dict__.get(_PENDING)
    if not pending:
        return False
    for library in pending:
        engine._load_defined_symbols(library._shared_module)
    pending.clear()
    return name in engine._defined_symbols


#: ELF64, little-endian: the symbol table's section type; a symbol's global and weak bindings.
_SHT_SYMTAB, _STB_GLOBAL, _STB_WEAK = 2, 1, 2


def object_symbols(object_code: bytes) -> frozenset[str]:
    """The global and weak symbols that an ELF64 little-endian object file defines; empty for
    any other object format (then every question goes to the bitcode). O(symbols).

    Example:
        >>> object_symbols(b"MZ not an ELF file")
        frozenset()
    """
    if object_code[:6] != b"\x7fELF\x02\x01":
        return frozenset()
    names = set()
    try:
        (table_at,) = struct.unpack_from("<Q", object_code, 0x28)
        entry_size, entries = struct.unpack_from("<HH", object_code, 0x3A)
        for index in range(entries):
            header = table_at + index * entry_size
            kind, start, size, strings = struct.unpack_from("<4xI16xQQI", object_code, header)
            if kind != _SHT_SYMTAB:
                continue
            (strings_at,) = struct.unpack_from(
                "<Q", object_code, table_at + strings * entry_size + 24
            )
            for name, info, section in struct.iter_unpack(
                "<IBxH16x", object_code[start : start + size]
            ):
                if section != 0 and info >> 4 in (_STB_GLOBAL, _STB_WEAK):
                    at = strings_at + name
                    names.add(object_code[at : object_code.index(b"\0", at)].decode())
    except (struct.error, ValueError, UnicodeDecodeError):
        return frozenset()  # not an object file numba wrote: the bitcode answers
    return frozenset(names)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once a process). O(1); each later import
    costs one dictionary look-up more."""
    global _finder
    if _finder is not None:
        return
    _finder = _Finder()
    for name, hook in (
        ("numba", _numba),
        ("numba.core.entrypoints", _numba_entrypoints),
        ("numba.core.caching", _numba_caching),
        ("numba.core.codegen", _numba_codegen),
        ("numba.np.arraymath", _numba_arraymath),
        ("pyarrow", _pyarrow),
    ):
        if name not in sys.modules:  # imported already: as it was, unchanged
            _finder.hooks[name] = hook
    sys.meta_path.insert(0, _finder)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (a command module's import, module
    docstring), then every object alive set aside (``gc.freeze``: no collection goes over them
    again) and the collector on again. Only in a process whose entry point called
    :func:`install`, and with the collector on: else the block runs as it is. O(1)."""
    if _finder is None or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
