"""Keep two imports that no ``neardup`` process needs off its start-up.

- **pandas** (0.3-0.5 s): pyarrow imports it on its first conversion of a list or an array
  (``pa.array``), only to ask whether the object is a pandas one (its conversions that infer
  a type or meet a None import pandas in C++, and still do). In a ``neardup`` process
  pyarrow is told there is no pandas (its own fallback when pandas is not installed), and told
  again, by pyarrow's own retry, as soon as anything imports pandas: from then on its pandas
  conversions work as before.
- **scipy** (0.2-0.3 s, when it is installed): numba imports it while it sets up its
  first kernel, to find a BLAS for ``np.dot`` and ``np.linalg`` in compiled code, which no
  kernel of neardup uses. It is hidden during that set-up only.

Installed by the processes' entry points only: :func:`neardup.cli.run` (the command) and the
Spark engine's Python worker daemon (:mod:`neardup.engines.spark.daemon`, whose workers fork
from it: 0.2-0.3 s less before an executor's first task). A program that imports neardup, and
the tests that call the commands in process, keep their imports as they were. ``python -X
importtime -m neardup dedup ...`` shows the difference.
"""

from __future__ import annotations

import importlib.abc
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


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once a process). O(1); each later import
    costs one dictionary look-up more."""
    global _finder
    if _finder is not None:
        return
    _finder = _Finder()
    if "numba.np.arraymath" not in sys.modules:
        _finder.hooks["numba.np.arraymath"] = _numba_arraymath
    if "pyarrow" not in sys.modules:
        _finder.hooks["pyarrow"] = _pyarrow
    sys.meta_path.insert(0, _finder)
