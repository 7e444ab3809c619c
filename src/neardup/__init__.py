"""neardup: find near-duplicate documents at scale.

Text → shingles → SimHash / MinHash signatures → candidate pairs (Manku permutation tables, LSH
bands) → verified pairs → groups with a duplicate ID and an original (the earliest document).

Example:
    >>> import neardup
    >>> neardup.normalize("Hello, World!")
    'hello world'
    >>> int(neardup.hamming_distance(*neardup.simhash(["a b c d", "a b c d"])))
    0
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from neardup import kernel_cache
from neardup._version import __version__

# Before any kernel of the package is loaded from numba's cache (neardup.kernel_cache).
kernel_cache.install()

# The public names and the modules that define them. They are imported on first use (PEP 562):
# importing neardup, or a light module of it such as the command line's entry point, then does
# not load numba, numpy and pyarrow (0.3-0.4 s) until something needs them.
_EXPORTS = {
    "Settings": "neardup.settings",
    "compare": "neardup.similarity",
    "dedup": "neardup.api",
    "fingerprint": "neardup.api",
    "groups_from_pairs": "neardup.api",
    "hamming_distance": "neardup.simhash",
    "hash_features": "neardup.text",
    "jaccard_estimate": "neardup.minhash",
    "minhash": "neardup.minhash",
    "normalize": "neardup.text",
    "optimal_params": "neardup.lsh",
    "pairs_from_fingerprints": "neardup.api",
    "shingles": "neardup.text",
    "simhash": "neardup.simhash",
}

__all__ = [
    "Settings",
    "__version__",
    "compare",
    "dedup",
    "fingerprint",
    "groups_from_pairs",
    "hamming_distance",
    "hash_features",
    "jaccard_estimate",
    "minhash",
    "normalize",
    "optimal_params",
    "pairs_from_fingerprints",
    "shingles",
    "simhash",
]

if TYPE_CHECKING:
    from neardup.api import dedup, fingerprint, groups_from_pairs, pairs_from_fingerprints
    from neardup.lsh import optimal_params
    from neardup.minhash import jaccard_estimate, minhash
    from neardup.settings import Settings
    from neardup.simhash import hamming_distance, simhash
    from neardup.similarity import compare
    from neardup.text import hash_features, normalize, shingles


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package's module type: the functions ``minhash`` and ``simhash`` keep their names.

    Importing a submodule sets it as an attribute of its package, and ``neardup.minhash`` and
    ``neardup.simhash`` are also modules; without eager imports nothing would set the
    functions back over them."""

    def __setattr__(self, name: str, value) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
