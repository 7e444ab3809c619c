"""The canonical kernels' fast paths against the Python fold."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.text import canonical

ASCII = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=30)
NON_ASCII = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAC10),  # Hangul syllables
        st.sampled_from(list("ÉßＡ①\u0301")),  # folded, expanded, composed
    ),
    max_size=30,
)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.one_of(ASCII, NON_ASCII), max_size=10))
def test_ascii_texts_take_the_ascii_loop_with_the_python_bytes(texts):
    # ASCII texts, as strs or as Arrow (UTF-8) texts, take a loop of their own; the bytes,
    # offsets and folded sizes are those of the Python fold followed by the separator kernel.
    raw, raw_offsets = canonical._utf8_batch(texts)
    want, want_offsets = canonical._canonicalize(raw, raw_offsets, canonical.token_table())
    for given_texts in (texts, pa.array(texts, pa.string())):
        canon, offsets, folded = canonical.canonical_texts(given_texts)
        assert offsets.tolist() == want_offsets.tolist()
        assert canon[: offsets[-1]].tobytes() == want.tobytes()
        assert folded.tolist() == np.diff(raw_offsets).tolist()
        assert not canon[offsets[-1] :].any()
        assert canon.shape[0] - offsets[-1] == canonical.PADDING
