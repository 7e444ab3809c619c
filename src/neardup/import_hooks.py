"""A module's import with a hook around its execution: the finders of ``neardup.startup``
(the command's start-up) and ``neardup.kernel_cache`` (the kernels' cache keys) both find a
module as the other finders on ``sys.meta_path`` do and wrap its loader.

Example:
    >>> import sys
    >>> def noted(execute):
    ...     execute()
    ...     ran.append("colorsys")
    >>> class Finder:
    ...     def find_spec(self, name, path=None, target=None):
    ...         if name != "colorsys":
    ...             return None
    ...         return hooked_spec(self, name, path, target, noted)
    >>> ran, finder = [], Finder()
    >>> sys.meta_path.insert(0, finder)
    >>> _ = sys.modules.pop("colorsys", None)
    >>> import colorsys
    >>> sys.meta_path.remove(finder)
    >>> ran
    ['colorsys']
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Hook = Callable[[Callable[[], None]], None]
"""Runs a module's execution, which it is given, with what it adds before or after."""


def hooked_spec(finder: object, name: str, path, target, hook: Hook):
    """The spec of the module ``name`` that the finders on ``sys.meta_path`` other than
    ``finder`` give, its loader wrapped so that ``hook`` runs around the module's execution
    (:class:`HookedLoader`), or None when none finds it. O(finders)."""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(name, path, target)
        if spec is not None:
            if spec.loader is not None:
                spec.loader = HookedLoader(spec.loader, hook)
            return spec
    return None


class HookedLoader:
    """A module's own loader, its execution wrapped in a hook (which calls it)."""

    def __init__(self, loader, hook: Hook) -> None:
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._hook(lambda: self._loader.exec_module(module))

    def __getattr__(self, name):
        return getattr(self._loader, name)
