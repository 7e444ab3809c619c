"""What pass 1 keeps (neardup.engines.collected): timestamps held only once they differ."""

import doctest

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.engines.collected as collected
from neardup.engines.collected import TimestampParts, held_bytes
from neardup.groups import document_order


def test_docstring_examples():
    assert doctest.testmod(collected).failed == 0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), max_size=5), max_size=6))
def test_timestamps_join_to_every_batch_in_order_and_hold_nothing_while_equal(batches):
    stamps = TimestampParts()
    charged = sum(stamps.append(np.array(b, dtype=np.int64)) for b in batches)
    whole = [t for b in batches for t in b]
    joined = stamps.joined()
    assert len(stamps) == len(whole) and joined.tolist() == whole
    # Memory is charged only once two values differ, then for every value, once.
    equal = len(set(whole)) <= 1
    assert held_bytes(joined) == charged == (0 if equal else 8 * len(whole))
    # The document order of a broadcast is the input order, as for equal stored values.
    assert document_order(joined).tolist() == document_order(np.array(whole, np.int64)).tolist()
