"""Tests for the command's entry point (``neardup_cli``): numpy's huge-page advice is off in the
``neardup`` process unless the user set it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# The command itself stands in for neardup.cli: it reports numpy's advice once imported.
CODE = (
    "import sys, types\n"
    "def command():\n"
    "    import numpy._core.multiarray as multiarray\n"
    "    print('numpy' in sys.modules and multiarray._get_madvise_hugepage())\n"
    "sys.modules['neardup.cli'] = types.SimpleNamespace(run=command)\n"
    "assert 'numpy' not in sys.modules\n"
    "if sys.argv[1] == 'python -m neardup':\n"
    "    import runpy\n"
    "    runpy.run_module('neardup', run_name='__main__')\n"
    "else:\n"
    "    import neardup_cli\n"
    "    neardup_cli.run()\n"
)


@pytest.mark.parametrize("module", ["neardup", "python -m neardup"])
@pytest.mark.parametrize("asked, advised", [(None, "False"), ("1", "True"), ("0", "False")])
def test_huge_page_advice_is_off_unless_the_user_set_it(module, asked, advised):
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if asked is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = asked
    done = subprocess.run(
        [sys.executable, "-c", CODE, module], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == advised
