"""neardup: find near-duplicate documents at scale.

Text → shingles → SimHash / MinHash signatures → candidate pairs (Manku permutation tables, LSH
bands) → verified pairs → groups with a duplicate ID and an original (the earliest document).

Example:
    >>> import neardup
    >>> neardup.normalize("Hello, World!")
    'hello world'
    >>> int(neardup.hamming_distance(*neardup.simhash(["a b c d", "a b c d"])))
    0
"""

from neardup._version import __version__
from neardup.api import dedup, fingerprint, groups_from_pairs, pairs_from_fingerprints
from neardup.lsh import optimal_params
from neardup.minhash import jaccard_estimate, minhash
from neardup.settings import Settings
from neardup.simhash import hamming_distance, simhash
from neardup.similarity import compare
from neardup.text import hash_features, normalize, shingles

__all__ = [
    "Settings",
    "__version__",
    "compare",
    "dedup",
    "fingerprint",
    "groups_from_pairs",
    "hamming_distance",
    "hash_features",
    "jaccard_estimate",
    "minhash",
    "normalize",
    "optimal_params",
    "pairs_from_fingerprints",
    "shingles",
    "simhash",
]
