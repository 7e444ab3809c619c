import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_helpers import mapped_resident_bytes

from neardup.memory import (
    drop_mapped_pages,
    map_pages,
    resident_bytes,
    return_freed_memory,
    take_mapped,
)


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps")
def test_drop_mapped_pages_gives_back_what_reads_of_a_map_brought_in(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(2_000_000, dtype=np.int32).tofile(path)  # 8 MB
    values = np.memmap(path, dtype=np.int32, mode="r")
    assert int(values[::1024].sum()) == sum(range(0, 2_000_000, 1024))  # a value a page
    assert mapped_resident_bytes(path) > 7_000_000
    drop_mapped_pages(values[10:])  # through a view as well
    assert mapped_resident_bytes(path) == 0
    assert values[1_999_999] == 1_999_999  # read again: mapped again
    in_memory = np.arange(5)
    drop_mapped_pages(in_memory)  # nothing to drop
    assert in_memory.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps")
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64])
def test_map_pages_makes_every_page_of_a_map_resident(tmp_path, dtype):
    path = tmp_path / "values.bin"
    values = np.arange((1 << 23) // np.dtype(dtype).itemsize).astype(dtype)  # whole pages
    values.tofile(path)
    mapped = np.memmap(path, dtype=dtype, mode="r")
    assert mapped_resident_bytes(path) == 0
    map_pages(mapped)
    assert mapped_resident_bytes(path) == path.stat().st_size
    drop_mapped_pages(mapped)
    map_pages(mapped[: mapped.shape[0] // 2])  # a view maps its own pages only
    assert mapped_resident_bytes(path) == path.stat().st_size // 2
    map_pages(np.zeros(0, dtype))  # nothing to read


@given(
    st.lists(st.integers(0, 999), max_size=300).map(sorted),
    st.integers(1, 1200),
)
def test_take_mapped_is_the_take_whatever_the_span(rows, span):
    values = np.arange(1000, dtype=np.int64) * 7
    rows = np.array(rows, dtype=np.int32)
    np.testing.assert_array_equal(take_mapped(values, rows, span), values[rows])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps")
def test_take_mapped_leaves_no_page_of_the_map_resident(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(2_000_000, dtype=np.int32).tofile(path)
    values = np.memmap(path, dtype=np.int32, mode="r")
    rows = np.arange(0, 2_000_000, 999, dtype=np.int32)
    taken = take_mapped(values, rows, span=1 << 18)
    np.testing.assert_array_equal(taken, rows)
    assert mapped_resident_bytes(path) == 0
