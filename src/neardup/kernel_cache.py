"""neardup's compiled kernels cached under a key that names the package's sources.

numba caches a kernel's machine code under a key made of the kernel's signature, the machine
and a hash of the kernel function's own bytecode, and drops the cache of a module whose source
file changed. A kernel also holds the code of the functions it inlines from *other* modules
(``lcs.py``'s LCS kernel holds ``eojeol.py``'s functions): when only such a module changes (an
upgrade that changed ``eojeol.py`` alone, or an edit of it), numba kept loading the kernel
with the old code (pip leaves numba's cache files where they are), so one version could run
another's code. Here the key of every kernel of a package registered in :data:`PACKAGES`
(neardup itself) also holds a digest of all the package's source files
(:func:`sources_digest`): a kernel compiled from other sources is never loaded, and is
compiled again on first use. A package whose sources did not change keeps its cache.

:func:`install` (called when ``neardup`` is imported) wraps numba's ``Cache._index_key`` as
soon as numba's caching module is imported, or at once if it is already: before any kernel of
the package is loaded or saved. Cost: the digest, once a process, at its first kernel
(reading the package's ``*.py`` files: about 6 ms for neardup's 142).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from neardup.import_hooks import hooked_spec

#: The packages whose kernels' keys hold their sources' digest: name -> folder.
PACKAGES: dict[str, str] = {"neardup": os.path.dirname(os.path.abspath(__file__))}

_CACHING = "numba.core.caching"
_digests: dict[str, str] = {}


def sources_digest(folder: str) -> str:
    """SHA-256 (hex) over the relative paths and the contents of the ``*.py`` files under
    ``folder``, in path order; computed once a process per folder (two threads may both
    compute it: the same value). O(bytes of the sources).

    Example:
        >>> sources_digest(PACKAGES["neardup"]) == sources_digest(PACKAGES["neardup"])
        True
    """
    if folder not in _digests:
        import hashlib  # here: importing neardup stays light

        digest = hashlib.sha256()
        for path in sorted(_sources(folder)):
            digest.update(os.path.relpath(path, folder).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as fh:
                digest.update(fh.read() + b"\0")
        _digests[folder] = digest.hexdigest()
    return _digests[folder]


def _sources(folder: str) -> list[str]:
    return [
        os.path.join(root, name)
        for root, _, names in os.walk(folder)
        for name in names
        if name.endswith(".py")
    ]


def package_of(module: str) -> str | None:
    """The registered package (:data:`PACKAGES`) that the module named ``module`` belongs to,
    or None. O(packages).

    Example:
        >>> package_of("neardup.lcs"), package_of("numpy")
        ('neardup', None)
    """
    for name in PACKAGES:
        if module == name or module.startswith(name + "."):
            return name
    return None


def _keyed(index_key):
    def key(self, sig, codegen):
        base = index_key(self, sig, codegen)
        package = package_of(getattr(self._py_func, "__module__", None) or "")
        if package is None:
            return base
        return (*base, sources_digest(PACKAGES[package]))

    key.neardup_keyed = True
    return key


def _patch(caching) -> None:
    cache = caching.Cache
    if not getattr(cache._index_key, "neardup_keyed", False):
        cache._index_key = _keyed(cache._index_key)


class _Finder:
    """Finds numba's caching module as the other finders do, and patches it once executed."""

    def find_spec(self, name, path=None, target=None):
        return None if name != _CACHING else hooked_spec(self, name, path, target, _patching)


def _patching(execute: Callable[[], None]) -> None:
    execute()
    _patch(sys.modules[_CACHING])


def install() -> None:
    """Key the registered packages' kernels by their sources (module docstring): at once if
    numba's caching module is imported, else as soon as it is. Once a process. O(1)."""
    if _CACHING in sys.modules:
        _patch(sys.modules[_CACHING])
    elif not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
