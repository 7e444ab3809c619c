import subprocess
import sys

import pytest

from neardup.memory import resident_bytes, return_freed_memory


def test_is_harmless_to_call_at_any_time():
    return_freed_memory()
    return_freed_memory()


def _anon_kb_given_back(frees: str) -> int:
    """In a fresh process: run ``frees`` (code that builds and drops memory), then
    ``return_freed_memory``; the anonymous resident kB that the call gave back."""
    script = f"""
import numpy as np
import pyarrow as pa

from neardup.memory import return_freed_memory

def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('RssAnon')][0].split()[1])

{frees}
before = rss()
return_freed_memory()
print(before - rss())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_gives_freed_heap_pages_back():
    # 200 MB of 64 KiB arrays come from the heap and stay resident once freed, until the trim.
    frees = """
parts = [np.ones(8192) for _ in range(3200)]
parts.reverse()  # freed from the top of the heap last: the heap cannot shrink by itself
del parts[1:]
"""
    assert _anon_kb_given_back(frees) > 100_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_gives_arrow_pool_pages_back():
    # Arrow's pool keeps the pages of freed buffers (here 64 MB of strings built piece by piece
    # and dropped) until asked to release them.
    frees = """
parts = [pa.array(["x" * 1000] * 64) for _ in range(1000)]
del parts
"""
    assert _anon_kb_given_back(frees) > 10_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_resident_bytes_grows_with_touched_memory():
    # In a fresh process: inside the test worker, threads left by earlier tests (Arrow's pool,
    # Spark's gateway) may give pages back while the block is touched, hiding its growth.
    script = """
import numpy as np
from neardup.memory import resident_bytes
before = resident_bytes()
block = np.ones(50_000_000 // 8)  # 50 MB, every page touched
print(resident_bytes() - before)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert int(done.stdout) > 40_000_000
    assert resident_bytes() > 0
