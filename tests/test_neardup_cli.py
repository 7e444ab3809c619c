"""Tests for the command's entry point (``neardup_cli``): numpy's and Arrow's huge-page advice
are off, and numpy's OpenBLAS starts no threads, in the ``neardup`` process unless the user set
them."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

# The command itself stands in for neardup.cli: it reports numpy's advice once imported, the
# threads of the process (numpy's BLAS starts its own as it is imported), and how many of its
# mappings are advised huge pages (``hg`` in /proc/self/smaps) once Arrow's pool has allocated.
CODE = (
    "import os, sys, types\n"
    "def command():\n"
    "    import numpy._core.multiarray as multiarray\n"
    "    print('numpy' in sys.modules and multiarray._get_madvise_hugepage())\n"
    "    print(len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else -1)\n"
    "    import pyarrow as pa\n"
    "    buffer = pa.allocate_buffer(64 << 20)\n"
    "    smaps = '/proc/self/smaps'\n"
    "    flags = open(smaps).read().split('VmFlags:')[1:] if os.path.exists(smaps) else []\n"
    "    print(sum(' hg' in f.split(chr(10))[0] for f in flags))\n"
    "    del buffer\n"
    "sys.modules['neardup.cli'] = types.SimpleNamespace(run=command)\n"
    "assert 'numpy' not in sys.modules\n"
    "if sys.argv[1] == 'python -m neardup':\n"
    "    import runpy\n"
    "    runpy.run_module('neardup', run_name='__main__')\n"
    "else:\n"
    "    import neardup_cli\n"
    "    neardup_cli.run()\n"
)


def _command(module: str, **asked: str | None) -> list[str]:
    """The lines :data:`CODE` prints, run as ``module`` with the environment variables
    ``asked`` set (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in asked}
    env.update({k: v for k, v in asked.items() if v is not None})
    done = subprocess.run(
        [sys.executable, "-c", CODE, module], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-3:]


@pytest.mark.parametrize("module", ["neardup", "python -m neardup"])
@pytest.mark.parametrize("asked, advised", [(None, "False"), ("1", "True"), ("0", "False")])
def test_huge_page_advice_is_off_unless_the_user_set_it(module, asked, advised):
    assert _command(module, NUMPY_MADVISE_HUGEPAGE=asked)[0] == advised


def _openblas() -> bool:
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return "openblas" in str(blas.get("name", "")).lower()


@pytest.mark.skipif(
    not (os.path.isdir("/proc/self/task") and _openblas() and (os.cpu_count() or 1) >= 2),
    reason="counts the threads of numpy's OpenBLAS, on Linux with two cores or more",
)
@pytest.mark.parametrize("module", ["neardup", "python -m neardup"])
def test_numpys_blas_starts_no_threads_unless_the_user_asked(module):
    assert _command(module, OPENBLAS_NUM_THREADS=None)[1] == "1"
    assert int(_command(module, OPENBLAS_NUM_THREADS="2")[1]) == 2


def _mimalloc_on_linux() -> bool:
    import pyarrow as pa

    backend = pa.default_memory_pool().backend_name
    return os.path.exists("/proc/self/smaps") and backend == "mimalloc"


@pytest.mark.skipif(
    not _mimalloc_on_linux(), reason="reads the mappings' flags of Arrow's mimalloc pool on Linux"
)
@pytest.mark.parametrize("module", ["neardup", "python -m neardup"])
def test_arrows_huge_page_advice_is_off_unless_the_user_set_it(module):
    advised = int(_command(module, MIMALLOC_ALLOW_THP="1")[2])
    if advised == 0:
        pytest.skip("mimalloc advises no huge pages here even when asked (no THP in the kernel)")
    assert _command(module, MIMALLOC_ALLOW_THP=None)[2] == "0"
    assert _command(module, MIMALLOC_ALLOW_THP="0")[2] == "0"
