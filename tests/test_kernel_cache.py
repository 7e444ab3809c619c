"""The tests' guard against stale kernels (``tests/kernel_cache.py``): a kernel that inlines a
function of another module keeps numba's cached code when only that module changes, and the
guard drops the package's cached kernels whenever any of its sources changed."""

import subprocess
import sys
import textwrap
from pathlib import Path

from kernel_cache import DIGEST_FILE, drop_stale_kernels, numba_cache_folder, sources_digest


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


def _kernel_value(root: Path) -> int:
    code = "from stalepkg.kernel import kernel; print(kernel())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_a_changed_inlined_module_is_compiled_again_once_the_cache_is_dropped(tmp_path):
    package = _package(tmp_path, 1)
    assert drop_stale_kernels(package) == 0  # nothing cached yet: the digest is recorded
    assert _kernel_value(tmp_path) == 1
    _package(tmp_path, 2)  # only the module whose function the kernel inlines changes
    assert _kernel_value(tmp_path) == 1  # numba's cache: the code as it was
    assert drop_stale_kernels(package) >= 2  # the kernel's index and its code
    assert _kernel_value(tmp_path) == 2
    # Sources unchanged since: the cache stays.
    assert drop_stale_kernels(package) == 0
    assert _kernel_value(tmp_path) == 2


def test_the_digest_follows_paths_and_contents(tmp_path):
    package = _package(tmp_path, 1)
    first = sources_digest(package)
    assert sources_digest(package) == first
    (package / "kernel.py").rename(package / "renamed.py")
    assert sources_digest(package) != first
    record = numba_cache_folder(package / "__init__.py") / DIGEST_FILE
    drop_stale_kernels(package)
    assert record.read_text().strip() == sources_digest(package)
