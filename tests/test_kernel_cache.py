"""Kernels keyed by their package's sources (``neardup.kernel_cache``): a kernel that inlines a
function of another module is compiled again when only that module changes, where numba alone
kept loading the old code; neardup's own kernels carry the digest in their keys."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from neardup import kernel_cache


def _package(root: Path, helper_value: int) -> Path:
    package = root / "stalepkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text(
        textwrap.dedent(f"""
        from numba import njit

        @njit(inline="always")
        def value():
            return {helper_value}
        """)
    )
    (package / "kernel.py").write_text(
        textwrap.dedent("""
        from numba import njit
        from stalepkg.helper import value

        @njit(cache=True)
        def kernel():
            return value()
        """)
    )
    return package


def _kernel_value(root: Path, keyed: bool) -> int:
    """The kernel's value in a fresh process, its package registered (``keyed``) or not."""
    register = (
        f"import neardup.kernel_cache as k; k.PACKAGES['stalepkg'] = {str(root / 'stalepkg')!r}; "
        if keyed
        else ""
    )
    code = register + "from stalepkg.kernel import kernel; print(kernel())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_numba_alone_keeps_a_kernel_whose_inlined_module_changed(tmp_path):
    _package(tmp_path, 1)
    assert _kernel_value(tmp_path, keyed=False) == 1
    _package(tmp_path, 2)  # only the module whose function the kernel inlines changes
    assert _kernel_value(tmp_path, keyed=False) == 1  # the cached, old code


def test_a_kernel_keyed_by_its_package_follows_an_inlined_module(tmp_path):
    _package(tmp_path, 1)
    assert _kernel_value(tmp_path, keyed=True) == 1
    _package(tmp_path, 2)
    assert _kernel_value(tmp_path, keyed=True) == 2
    _package(tmp_path, 1)  # back to the first sources: their kernel is still cached
    assert _kernel_value(tmp_path, keyed=True) == 1


def test_neardup_kernels_carry_the_digest_of_its_sources():
    from neardup.lcs import lcs_pairs

    lcs_pairs(np.array([0, 2, 4]), np.array([1, 2, 1, 3], np.uint64), np.array([0]), np.array([1]))
    from neardup.lcs import _lcs_pairs_kernel as kernel

    key = kernel._cache._index_key(kernel.signatures[0], kernel.targetctx.codegen())
    assert key[-1] == kernel_cache.sources_digest(kernel_cache.PACKAGES["neardup"])
    assert kernel_cache.package_of(kernel.py_func.__module__) == "neardup"


def test_numba_imported_before_neardup_is_patched_as_neardup_is_imported():
    code = (
        "import numba.core.caching as c; assert not hasattr(c.Cache._index_key, 'neardup_keyed');"
        "import neardup; key = c.Cache._index_key; assert key.neardup_keyed;"
        "neardup.kernel_cache.install(); assert c.Cache._index_key is key"  # wrapped once
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_digest_follows_paths_and_contents(tmp_path):
    package = _package(tmp_path, 1)
    first = kernel_cache.sources_digest(str(package))
    (package / "kernel.py").rename(package / "renamed.py")
    kernel_cache._digests.clear()  # computed once a process: forget it
    assert kernel_cache.sources_digest(str(package)) != first
    (package / "renamed.py").rename(package / "kernel.py")
    kernel_cache._digests.clear()
    assert kernel_cache.sources_digest(str(package)) == first
