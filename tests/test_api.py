"""neardup.api: the Python entry points, held to the command line's rules."""

import numpy as np
import pandas as pd
import pytest

import neardup

TEXTS = ["the quick brown fox jumps over the lazy dog near the river",
         "the quick brown fox jumps over the lazy dog near the river!",
         "a completely different note about the weather in spring"]


def test_dedup_groups_with_the_command_lines_defaults():
    df = pd.DataFrame({"id": ["a", "b", "c"], "text": TEXTS})
    groups = neardup.dedup(df)
    assert groups["original_id"].tolist() == ["a", "a", "c"]
    assert groups["group_size"].tolist() == [2, 2, 1]


@pytest.mark.parametrize("options, message", [
    ({"hamming_k": 3}, "hamming_k applies to method simhash"),
    ({"method": "simhash", "threshold": 0.5}, "threshold applies to method minhash"),
    ({"method": "simhash", "num_perm": 64}, "num_perm applies to method minhash"),
])
def test_options_of_the_other_method_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        neardup.dedup(pd.DataFrame({"id": ["a"], "text": ["x y z"]}), **options)


def test_simhash_options_apply_with_simhash():
    groups = neardup.dedup(TEXTS, method="simhash", hamming_k=3)
    assert groups["original_id"].tolist() == ["0", "0", "2"]
    assert np.asarray(groups["is_original"]).tolist() == [True, False, True]
