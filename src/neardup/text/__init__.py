"""Text → canonical text → hashed features: the first stage of the pipeline.

:mod:`neardup.text.canonical` normalises (NFKC, case folding, separators → one space) and
:mod:`neardup.text.features` takes the shingles of the canonical text and hashes them. This
package hands on the public names of both.

Example:
    >>> normalize("SimHash 계산 방법을, 간단히 정리하면!")
    'simhash 계산 방법을 간단히 정리하면'
    >>> shingles("SimHash 계산 방법을, 간단히 정리하면!", "word:3")[:2]
    ['simhash 계산 방법을', '계산 방법을 간단히']
"""

from neardup.text.canonical import (
    Canonical,
    canonical_batch,
    fold,
    normalize,
    normalize_many,
    token_table,
)
from neardup.text.features import (
    CONTENT_SEEDS,
    DEFAULT_TEXT_SHINGLE,
    MAX_SHINGLE_SIZE,
    SHINGLE_UNITS,
    STOP_WORD_LISTS,
    Features,
    Shingling,
    hash_features,
    multiset_hashes,
    shingle_sets,
    shingles,
    stop_word_hashes,
    stop_words,
)

__all__ = [
    "CONTENT_SEEDS",
    "DEFAULT_TEXT_SHINGLE",
    "MAX_SHINGLE_SIZE",
    "SHINGLE_UNITS",
    "STOP_WORD_LISTS",
    "Canonical",
    "Features",
    "Shingling",
    "canonical_batch",
    "fold",
    "hash_features",
    "multiset_hashes",
    "normalize",
    "normalize_many",
    "shingle_sets",
    "shingles",
    "stop_word_hashes",
    "stop_words",
    "token_table",
]
