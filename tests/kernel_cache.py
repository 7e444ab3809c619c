"""neardup's cached kernels dropped when its sources changed since they were cached.

numba keys a kernel's cache by the source of the kernel's own module: a kernel that inlines a
function of another module (``lcs.py``'s LCS kernel inlines ``eojeol.py``'s functions) keeps
its cached machine code after that other module changes, and a test would run the code as it
was. The tests' session start calls :func:`drop_stale_kernels`, which keeps a digest of every
source file of the package beside the cache and, when the sources differ from it, deletes
every kernel of the package that numba cached, so that they are compiled from the sources as
they are. A fresh clone (CI) has no cache: nothing to drop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

DIGEST_FILE = "neardup-sources.sha256"
"""The digest of the sources the cache was filled from, in the package's own cache folder."""


def sources_digest(package: Path) -> str:
    """SHA-256 over the relative paths and contents of the ``*.py`` files under ``package``,
    in path order. O(bytes of the sources)."""
    digest = hashlib.sha256()
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0")
        digest.update(source.read_bytes() + b"\0")
    return digest.hexdigest()


def numba_cache_folder(source: Path) -> Path | None:
    """The folder where numba caches the kernels of the module ``source`` (the first of its
    cache locators that takes the file, as numba chooses one), or None."""
    from numba.core.caching import CacheImpl

    for locator_class in CacheImpl._locator_classes:
        locator = locator_class.from_function(numba_cache_folder, str(source))
        if locator is not None:
            return Path(locator.get_cache_path())
    return None


def drop_stale_kernels(
    package: Path, cache_folder: Callable[[Path], Path | None] = numba_cache_folder
) -> int:
    """Delete every cached kernel of the modules under ``package`` when their sources differ
    from those the cache was filled from, then record the sources' digest. Returns how many
    cache files were deleted. O(bytes of the sources)."""
    record = cache_folder(package / "__init__.py")
    if record is None:
        return 0
    record = record / DIGEST_FILE
    digest = sources_digest(package)
    if record.exists() and record.read_text().strip() == digest:
        return 0
    dropped = 0
    for source in sorted(package.rglob("*.py")):
        folder = cache_folder(source)
        if folder is None or not folder.is_dir():
            continue
        for pattern in (f"{source.stem}.*.nbi", f"{source.stem}.*.nbc"):
            for cached in folder.glob(pattern):
                cached.unlink(missing_ok=True)
                dropped += 1
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(digest + "\n")
    return dropped
