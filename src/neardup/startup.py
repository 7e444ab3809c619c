"""Keep what no ``neardup`` process needs off its start-up: two imports, and a set-up.

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

Installed by the processes' entry points only: :func:`neardup.cli.run` (the command) and the
Spark engine's Python worker daemon (:mod:`neardup.engines.spark.daemon`, whose workers fork
from it: 0.2-0.3 s less before an executor's first task). A program that imports neardup, and
the tests that call the commands in process, keep their imports as they were. ``python -X
importtime -m neardup dedup ...`` shows the difference.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Callable

#: The finder of this process, once :func:`install` put it first on ``sys.meta_path``.
_finder: _Finder | None = None


class _Finder(importlib.abc.MetaPathFinder):
    """Refuses the modules in :attr:`hidden`, and runs a module's hook around its execution."""

    def __init__(self) -> None:
        self.hidden: set[str] = set()
        self.hooks: dict[str, Callable[[Callable[[], None]], None]] = {}

    def find_spec(self, name, path=None, target=None):
        if name in self.hidden:
            raise ModuleNotFoundError(f"{name} is not imported by the neardup command", name=name)
        hook = self.hooks.pop(name, None)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _HookedLoader(spec.loader, hook)
                return spec
        return None

    def hiding(self, names: tuple[str, ...], execute: Callable[[], None]) -> None:
        """Run ``execute`` with the modules ``names`` refused, but those imported already."""
        refused = {name for name in names if name not in sys.modules} - self.hidden
        self.hidden |= refused
        try:
            execute()
        finally:
            self.hidden -= refused


class _HookedLoader(importlib.abc.Loader):
    """A module's own loader, its execution wrapped in a hook (which calls it)."""

    def __init__(self, loader, hook: Callable[[Callable[[], None]], None]) -> None:
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._hook(lambda: self._loader.exec_module(module))

    def __getattr__(self, name):
        return getattr(self._loader, name)


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
        ("numba.np.arraymath", _numba_arraymath),
        ("pyarrow", _pyarrow),
    ):
        if name not in sys.modules:  # imported already: as it was, unchanged
            _finder.hooks[name] = hook
    sys.meta_path.insert(0, _finder)
