"""The dedup job as stages: pure functions over numpy arrays, shared by every engine.

    texts ──signatures()──▶ Signatures ──find_groups()──▶ Groups (+ pairs)

1. :func:`signatures` — per batch of texts: content fingerprints (exact duplicates), SimHash
   fingerprints or MinHash signatures, and, when verification needs them, the sorted shingle sets.
2. :func:`find_groups` — over the whole collection:

   a. **exact duplicates**: documents with the same normalised text (same 128-bit content
      fingerprint) collapse to one representative, the earliest of them;
   b. **candidates** among representatives: for SimHash every pair of distinct fingerprints within
      ``hamming_k`` bits (Manku permutation tables, exact) plus identical fingerprints; for MinHash
      documents equal on at least one LSH band. Buckets of identical keys are linked as a star to
      their earliest member, so a template repeated n times costs O(n), not O(n²);
   c. **verification**: candidate pairs are checked with the verification measure (``verify``:
      LCS resemblance or exact Jaccard); MinHash without verification accepts a candidate when
      its MinHash estimate reaches ``threshold``. Only the components of the accepted pairs
      matter, so a candidate whose documents accepted pairs already link is not checked
      (:func:`neardup.groups.accepted_links`). MinHash then verifies the pairs of each bucket's
      other members that the star edges left in different components
      (:mod:`neardup.candidates.repair`): the components of verifying every pair of a bucket;
   d. **groups** by the grouping rule (:mod:`neardup.groups`): ``components`` (transitive) or
      ``center`` (no chaining), the original of a group being its earliest document (ties: input
      order);
   e. **pairs** to report: an edge from each group's original to every other member
      (``pairs="original"``), or every near-duplicate pair (``pairs="all"``, output-sized).

Both take the run's options as one :class:`neardup.settings.Settings`.

Example:
    >>> s = Settings(method="simhash", hamming_k=3)
    >>> sig = signatures(["a b c d e", "A b, c d e!", "x y z"], s)
    >>> g = find_groups(sig, np.zeros(3, dtype=np.int64), s)
    >>> g.original.tolist(), g.group_size.tolist()
    ([0, 0, 2], [2, 2, 1])
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from neardup.candidates.bands import DistinctUnion, band_columns, packed_pairs_from_band_columns
from neardup.candidates.bounds import sketch_block_rows
from neardup.candidates.bucket_lists import BucketParts, listed_pairs, unpacked
from neardup.candidates.chunks import BlockParts, CandidatePairs, bounded_pairs, filter_slices
from neardup.candidates.hamming import HammingSearch
from neardup.candidates.radix import index_union, merged_runs, stable_argsort
from neardup.candidates.repair import BUCKET_MEMBERS, mark_among, repair_links
from neardup.candidates.tables import IdenticalBuckets
from neardup.exact_duplicates import Duplicates, content_representatives
from neardup.group_labels import group_sizes, not_own_labels, own_labels, with_duplicates
from neardup.groups import (
    LINK_ROUNDS,
    accepted_links,
    center_groups,
    connected_components,
    document_order,
    in_time_order,
    originals_of,
)
from neardup.lcs import count_sketches
from neardup.locality import locality_pair_order
from neardup.memory import drop_mapped_pages, index_dtype, map_pages, return_freed_memory
from neardup.minhash import jaccard_estimate, minhash_of_canonical
from neardup.rank_directory import RowSet
from neardup.settings import Settings
from neardup.simhash import hamming_distance, simhash_from_features
from neardup.text import Canonical, hash_features, shingle_sets
from neardup.text.units import lcs_unit_sketches
from neardup.verify import LCS_UNIT, Verification


@dataclass
class Signatures:
    """What stage 1 computes for a batch of documents (all arrays have n rows).

    Attributes:
        content: uint64[n, 2] content fingerprints of the normalised texts.
        signature: uint64[n] SimHash fingerprints or uint32[n, num_perm] MinHash signatures.
        empty: bool[n], documents without any letter or number.
        set_offsets, set_hashes: sorted distinct shingle hashes (CSR) when kept, else None.
        sizes: int64[n], an upper bound of each document's verification data, in values: its
            shingles, repeats included (for a shingle set), or its LCS units; or None.
        sketches: uint8[n, COUNT_BUCKETS], the count sketch of each document's LCS units
            (:func:`neardup.lcs.count_sketches`) with LCS verification, else None.
    """

    content: np.ndarray
    signature: np.ndarray
    empty: np.ndarray
    set_offsets: np.ndarray | None = None
    set_hashes: np.ndarray | None = None
    sizes: np.ndarray | None = None
    sketches: np.ndarray | None = None

    def __len__(self) -> int:
        return self.content.shape[0]

    @classmethod
    def concat(cls, parts: list[Signatures], settings: Settings) -> Signatures:
        """Join batches in order (one copy of every array). O(total size)."""
        if not parts:
            return signatures([], settings)
        sets = parts[0].set_offsets is not None
        set_offsets = set_hashes = None
        if sets:
            ends = np.cumsum([p.set_hashes.shape[0] for p in parts])
            starts = np.concatenate([[0], ends[:-1]])
            set_offsets = np.concatenate(
                [p.set_offsets[:-1] + s for p, s in zip(parts, starts)] + [ends[-1:]]
            ).astype(np.int64)
            set_hashes = np.concatenate([p.set_hashes for p in parts])
        return cls(
            content=np.concatenate([p.content for p in parts]),
            signature=np.concatenate([p.signature for p in parts]),
            empty=np.concatenate([p.empty for p in parts]),
            set_offsets=set_offsets,
            set_hashes=set_hashes,
            sizes=_joined([p.sizes for p in parts]),
            sketches=_joined([p.sketches for p in parts]),
        )


def signatures(
    texts: Sequence[str], settings: Settings, keep_sets: bool | None = None, bounds: bool = True
) -> Signatures:
    """Stage 1 for one batch: features, signatures, (``keep_sets``) shingle sets and
    (``bounds``) :attr:`Signatures.sizes` and :attr:`Signatures.sketches`, which
    :func:`find_groups` rules candidates out by (an engine that does not pass them on says
    False).

    ``texts`` is a list of strs or a :class:`~neardup.text.canonical.TextColumn` (the JSON
    Lines reader's Arrow column, read without Python strs); its canonical form is made once for
    every use.

    ``keep_sets`` defaults to ``settings.needs_sets``. An engine that keeps the texts passes
    False: :func:`find_groups` then builds the sets of the few documents that have candidates.
    Cost: O(total bytes) for the features, plus O(shingles × 64) for SimHash or
    O(shingles + num_perm) for MinHash (:mod:`neardup.minhash`), plus a per-document sort for
    the sets.
    """
    canonical = Canonical.of(texts)
    keep_sets = settings.needs_sets if keep_sets is None else keep_sets
    jaccard_sets = keep_sets and settings.verify_measure == "jaccard"
    if settings.method == "simhash":
        features = hash_features(canonical, settings.shingle, settings.hash_name)
        signature = simhash_from_features(features, settings.weights, settings.idf)
    else:  # the shingle hashes are kept only for the Jaccard sets
        features, signature = minhash_of_canonical(
            canonical, settings.shingle, settings.hash_name, settings.num_perm, settings.seed,
            settings.scheme, keep_hashes=jaccard_sets,
        )  # fmt: skip
    result = Signatures(features.content, signature, features.empty)
    if keep_sets:
        if jaccard_sets:
            result.set_offsets, result.set_hashes, _ = shingle_sets(
                features.offsets, features.hashes
            )
        else:
            result.set_offsets, result.set_hashes = settings.verification.prepare(
                canonical, settings.shingle, settings.hash_name
            )
    if not bounds:
        return result
    lcs = settings.verify is not None and settings.verify_measure == "lcs"
    if not lcs:
        result.sizes = np.diff(features.offsets)
    elif result.set_offsets is not None:  # the units are built: counted from them
        result.sizes = np.diff(result.set_offsets)
        result.sketches = count_sketches(result.set_offsets, result.set_hashes)
    else:
        result.sizes, result.sketches = lcs_unit_sketches(canonical, LCS_UNIT)
    return result


def _joined(parts: list[np.ndarray | None]) -> np.ndarray | None:
    """The parts concatenated, or None if one is None."""
    return None if any(p is None for p in parts) else np.concatenate(parts)


@dataclass
class Groups:
    """What stage 2 decides, per document (index = input position) and per reported pair.

    Attributes:
        original: int[n], index of the original of each document's group.
        is_original: bool[n].
        group_size: int[n], members of each document's group.
        pair_a, pair_b: int indices of reported pairs (``pair_a`` is the original in
            ``pairs="original"`` mode; ``pair_a < pair_b`` in ``pairs="all"`` mode).

    ``original`` and ``group_size`` are of :func:`~neardup.memory.index_dtype` (int32 below
    :data:`~neardup.memory.INDEX32_BELOW` = 2**31 - 1 documents, else int64); ``pair_a`` and
    ``pair_b`` int32 or int64.
        pair_value: uint8 Hamming distances (SimHash), else float64: the verification measure
            (LCS resemblance or exact Jaccard) when verified, the MinHash estimate of Jaccard
            without verification.
        pair_passed: bool, whether the pair itself is a near-duplicate by the run's relation
            (distance ≤ k, measure ≥ the threshold; both with SimHash and verification). Always
            true in ``pairs="all"`` mode and under ``grouping="center"``; a ``components`` group
            may link a member to its original only through other members, and that row is false.
        stats: counts and seconds per stage.
    """

    original: np.ndarray
    is_original: np.ndarray
    group_size: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_value: np.ndarray
    pair_passed: np.ndarray
    stats: dict = field(default_factory=dict)


def sets_for(
    texts: list[str], indices: np.ndarray, settings: Settings
) -> tuple[np.ndarray, np.ndarray]:
    """Verification data (CSR over all ``len(texts)`` documents: shingle sets, or LCS units with
    ``verify="lcs:T"``) holding only the documents ``indices``; every other document has an
    empty range. O(bytes of those documents).

    Example:
        >>> o, h = sets_for(["a b c d", "x y z w", "a b c e"], np.array([2, 0]), Settings(method="simhash"))
        >>> np.diff(o).tolist()
        [2, 0, 2]
    """
    n = len(texts)
    marked = np.zeros(n, dtype=bool)
    marked[np.asarray(indices, dtype=np.int64)] = True
    chosen = np.flatnonzero(marked)  # ascending and distinct, without a sort
    del marked
    set_offsets, set_hashes = _verification(settings).prepare(
        [texts[i] for i in chosen.tolist()], settings.shingle, settings.hash_name
    )
    sizes = np.zeros(n, dtype=np.int64)
    sizes[chosen] = np.diff(set_offsets)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    # ``chosen`` is ascending, so the sets are already in document order.
    return offsets, set_hashes


def _verification(settings: Settings) -> Verification:
    # Without a verify threshold, kept sets still serve exact Jaccard values (sweeps).
    return settings.verification or Verification("jaccard", 1.0)


PairSimilarity = Callable[..., np.ndarray]
"""``(a, b, exact=False)``: the verification measure of documents ``a[p]`` and ``b[p]`` (float64
per pair), see :meth:`neardup.verify.Verification.similarity` for ``exact``."""


class Relation:
    """The near-duplicate relation of a run, vectorised over index arrays: whether documents
    ``a[p]`` and ``b[p]`` are near-duplicates by the run's rule, and the similarity reported
    for them. Every engine decides pairs with it, the Spark engine inside its tasks.

    The rule: SimHash, Hamming distance ``<= hamming_k``; MinHash without ``verify``, estimated
    Jaccard ``>= threshold``; with ``verify``, also the verification measure ``>= verify``.
    ``verified`` gives the verification measure of pairs (exact Jaccard or LCS resemblance);
    default: from the verification data ``sig`` holds. Cost: O(pairs) signature comparisons
    plus the verification measure of each pair.

    Example:
        >>> s = Settings(method="simhash", hamming_k=3)
        >>> relation = Relation(signatures(["a b c d e", "A b, c d e!", "x y z"], s), s)
        >>> a, b = np.array([0, 0]), np.array([1, 2])
        >>> relation(a, b).tolist(), int(relation.similarity(a, b)[0])
        ([True, False], 0)
    """

    def __init__(self, sig: Signatures, settings: Settings, verified: PairSimilarity | None = None):
        self.sig = sig
        self.settings = settings
        if verified is None and sig.set_offsets is not None:
            verified = functools.partial(
                _verification(settings).similarity, sig.set_offsets, sig.set_hashes
            )
        self.verified = verified

    def similarity(self, a: np.ndarray, b: np.ndarray, exact: bool = True) -> np.ndarray:
        """Hamming distance (SimHash), or the verification measure when verified (exact
        Jaccard or LCS resemblance), else the MinHash estimate of Jaccard. ``exact=False``: an
        LCS value below the verification threshold is only some value below it, which
        :meth:`passes` decides alike, for a fraction of a rejected pair's exact measure."""
        if self.settings.method == "simhash":
            return hamming_distance(self.sig.signature[a], self.sig.signature[b])
        if self.verified is not None:
            return self.verified(a, b, exact=exact)
        return jaccard_estimate(self.sig.signature[a], self.sig.signature[b])

    def passes(self, a: np.ndarray, b: np.ndarray, values: np.ndarray) -> np.ndarray:
        """What :meth:`__call__` decides for the pairs ``(a[p], b[p])``, given their
        :meth:`similarity` ``values`` (exact or not): from the values alone where they are the
        rule's measure (SimHash without verification, MinHash with it), so that those pairs are
        not measured again. O(pairs)."""
        s = self.settings
        if a.shape[0] == 0:
            return np.zeros(0, dtype=bool)
        if s.method == "simhash" and s.verify is None:
            return values <= s.hamming_k
        if s.method == "minhash" and s.verify is not None:
            return values >= s.verify
        return np.asarray(self(a, b), dtype=bool)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether each pair ``(a[p], b[p])`` meets the run's rule (bool per pair)."""
        s = self.settings
        if s.method == "simhash":
            ok = hamming_distance(self.sig.signature[a], self.sig.signature[b]) <= s.hamming_k
        else:
            ok = np.ones(a.shape[0], dtype=bool)
            if s.verify is None:
                ok &= jaccard_estimate(self.sig.signature[a], self.sig.signature[b]) >= s.threshold
        if s.verify is not None:
            ok &= self.verified(a, b) >= s.verify
        return ok


#: Most pairs measured in one step of :class:`_MemoVerified` and of the verify stage by default:
#: its temporaries (about 100 bytes a pair) stay bounded however many candidates a run has.
#: An out-of-core run sizes its steps from its budget instead (``find_groups(candidate_slice=)``).
VERIFY_SLICE = 1 << 23
_MEMO_RUNS = 8


class _MemoVerified:
    """The verification measure of pairs through their exact-duplicate representatives,
    remembering the values at or above the threshold, so that an accepted pair is measured once
    per run (the pairs reported are mostly candidates already accepted; an out-of-core run
    reads verification data back for each pair it has to measure). Both measures are
    symmetric; a pair of one representative (identical normalised texts) is 1.0 without
    measuring. Pairs are taken ``step`` at a time: memory O(step + accepted)."""

    def __init__(
        self,
        measure: PairSimilarity,
        duplicates: Duplicates,
        threshold: float,
        step: int = VERIFY_SLICE,
    ):
        self.measure = measure
        self.step = step
        self.reads_spill = getattr(measure, "reads_spill", False)  # see SetSource
        self.duplicates = duplicates
        self.threshold = threshold
        #: Sorted pair keys and their values, one run per measured slice.
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray:
        out = np.empty(a.shape[0], dtype=np.float64)
        for start in range(0, a.shape[0], self.step):
            part = slice(start, start + self.step)
            out[part] = self._slice(a[part], b[part], exact)
        return out

    def _slice(self, a: np.ndarray, b: np.ndarray, exact: bool) -> np.ndarray:
        # Temporaries are dropped before measuring: an out-of-core run sizes its chunks of
        # verification data by the memory left beside them.
        ra, rb = self.duplicates.representatives(a), self.duplicates.representatives(b)
        out = np.ones(ra.shape[0], dtype=np.float64)
        key = (np.minimum(ra, rb).astype(np.uint64) << np.uint64(32)) | np.maximum(ra, rb).astype(
            np.uint64
        )
        need = ra != rb
        for keys, values in self.runs:
            at = np.minimum(np.searchsorted(keys, key), keys.shape[0] - 1)
            known = need & (keys[at] == key)
            out[known] = values[at[known]]
            need &= ~known
            del at, known
        need = np.flatnonzero(need)
        if need.shape[0]:
            buckets = IdenticalBuckets.of(key[need])
            del key
            new_keys, inverse = buckets.values, buckets.inverse()
            first = need[buckets.members[buckets.offsets[:-1]]]
            del buckets
            pa, pb = ra[first], rb[first]
            del ra, rb, first
            # Values below the threshold may be bounds (see Verification.similarity): measured
            # exactly when asked, and not remembered (the few such pairs a run writes again are
            # measured again, cheaply: the bound stops early).
            values = self.measure(pa, pb, exact=exact)
            del pa, pb
            out[need] = values[inverse]
            accepted = values >= self.threshold
            if accepted.any():
                self.runs.append((new_keys[accepted], values[accepted]))
            if len(self.runs) > _MEMO_RUNS:  # keep lookups cheap for callers of many small calls
                self.runs = [merged_runs(self.runs)]
        return out


BandKeys = Callable[[], Iterable[np.ndarray]]
"""A source of MinHash band hashes: called, it yields one ``uint64[n]`` column per band (over
all documents), e.g. read back from disk by an out-of-core run. When the iterable has a
``done()`` method, the band search calls it once every band is searched (an out-of-core run
then deletes the bands' files it will not read again)."""

SetSource = Callable[[np.ndarray], PairSimilarity]
"""Verification for an out-of-core run: called with the documents whose data may be compared
(ascending indices), it returns a :data:`PairSimilarity` over those documents. A measure that
reads its data back from disk on every call says so with a true attribute ``reads_spill``: it
then gets all the candidates at once (:data:`neardup.groups.LINK_ROUNDS` forest rounds would
each be one more pass over the spilled data)."""


def _band_search(
    sig: Signatures, settings: Settings, subset: RowSet | None, band_keys: BandKeys | None,
    pair_union: Callable[[], DistinctUnion] | None, room: int | None, mode: str, workers: int,
    positions: np.ndarray | None = None, buckets: BucketParts | None = None,
) -> np.ndarray:  # fmt: skip
    """:func:`~neardup.candidates.bands.packed_pairs_from_band_columns` among ``subset`` (None:
    all): its rows of ``band_keys``' columns, else its own band hashes; into a ``pair_union()``."""
    union = pair_union() if pair_union else None
    if band_keys is None:
        signature = sig.signature if subset is None else sig.signature[subset.rows()]
        columns, subset = band_columns(signature, *settings.banding()), None
    else:
        columns = band_keys()
    packed = packed_pairs_from_band_columns(
        columns, mode, positions, workers, buckets, BUCKET_MEMBERS, union, subset, room
    )
    if hasattr(columns, "done"):  # see BandKeys
        columns.done()
    return packed


def candidate_edges(
    sig: Signatures,
    reps: RowSet,
    rank: np.ndarray | None,
    settings: Settings,
    band_keys: BandKeys | None = None,
    workers: int = 1,
    hamming: HammingSearch | None = None,
    buckets: BucketParts | None = None,
    pair_union: Callable[[], DistinctUnion] | None = None,
    room: int | None = None,
) -> CandidatePairs:
    """Stage 2b: candidate pairs among the representatives ``reps`` (a bit a document,
    :meth:`~neardup.exact_duplicates.Duplicates.representative_rows`).
    With ``buckets`` (MinHash), the band search adds to it, band by band, the buckets the
    repair round lists without their representatives, members as positions in ``reps``
    (:mod:`neardup.candidates.bucket_lists`). ``rank``: the document order
    (:func:`~neardup.groups.document_order`), or None when the documents are in time order
    (the identity, not held).

    SimHash takes its pairs from ``hamming`` (default: searched here,
    :meth:`HammingSearch.star_edges`). MinHash reads its band hashes from ``band_keys`` when
    given, else computes them from ``sig.signature``, and sorts ``workers`` bands at a time,
    within ``room`` bytes (None: no bound); the pairs are the same either way, and held
    packed (8 bytes a pair) until taken in slices (in a ``pair_union()`` when given).
    """
    if len(reps) == 0:
        empty = np.zeros(0, dtype=reps.dtype)
        return CandidatePairs.of_arrays(empty, empty)
    if settings.method == "simhash":
        hamming = hamming or HammingSearch.of(sig.signature, settings.hamming_k)
        if rank is None:
            rank = np.arange(sig.signature.shape[0], dtype=reps.dtype)
        return CandidatePairs.of_arrays(*hamming.star_edges(reps.rows(), rank))
    # The star kernels only compare positions, and keep the earlier of equal ones (a run's
    # members ascend): the ranks serve, without the radix sort that numbered them (about 50
    # B a representative at once, more than the band search's partitions at 50M); in time
    # order their places among the representatives serve (the default, None).
    positions = None if rank is None else reps.compress(rank)
    packed = _band_search(
        sig, settings, reps, band_keys, pair_union, room, "star", workers, positions, buckets
    )
    return CandidatePairs.of_packed(packed, reps)


def all_pairs(
    sig: Signatures,
    settings: Settings,
    relation: Relation,
    band_keys: BandKeys | None = None,
    workers: int = 1,
    hamming: HammingSearch | None = None,
    pair_union: Callable[[], DistinctUnion] | None = None,
    candidate_slice: int = VERIFY_SLICE,
    room: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every near-duplicate pair (i < j) of the collection, each once, and, for SimHash
    without verification, their distances (else None: the relation measures them); SimHash's
    from ``hamming`` when given (the candidates' search). Candidates are decided
    ``candidate_slice`` at a time, MinHash's held packed (in a ``pair_union()`` when given),
    its bands searched within ``room`` as in :func:`candidate_edges`. Output-sized cost."""
    if settings.method == "simhash":
        a, b, dist = (hamming or HammingSearch.of(sig.signature, settings.hamming_k)).pairs()
        if settings.verify is None:  # the search's pairs are the relation's, distances and all
            return a, b, dist
        pairs = CandidatePairs.of_arrays(a, b)
    else:
        packed = _band_search(sig, settings, None, band_keys, pair_union, room, "all", workers)
        pairs = CandidatePairs.of_packed(packed, np.arange(len(sig), dtype=index_dtype(len(sig))))
    return (*filter_slices(pairs, relation, candidate_slice), None)


def _held(values: np.ndarray) -> Callable[[], np.ndarray]:
    """``find_groups``'s default ``park``: the values stay in memory."""
    return lambda: values


def _pair_values(
    relation: Relation, a: np.ndarray | None, b: np.ndarray, step: int, original=None
) -> np.ndarray:
    """``relation.similarity(a, b)`` (uint8 Hamming distances for SimHash, else float64),
    ``step`` pairs at a time; with ``original`` (and ``a`` None) of the pairs ``(original[b],
    b)``, whose left ends are not held. O(pairs) plus the measure."""
    out = np.empty(b.shape[0], np.uint8 if relation.settings.method == "simhash" else float)
    for start in range(0, b.shape[0], step):
        part = b[start : start + step]
        left = original[part] if a is None else a[start : start + step]
        out[start : start + part.shape[0]] = relation.similarity(left, part)
    return out


def find_groups(
    sig: Signatures,
    timestamps: np.ndarray,
    settings: Settings,
    texts: list[str] | None = None,
    *,
    band_keys: BandKeys | None = None,
    set_source: SetSource | None = None,
    on_stage: Callable[[str], None] | None = None,
    workers: int = 1,
    memory: int | Callable[[], int] | None = None,
    pair_union: Callable[[], DistinctUnion] | None = None,
    candidate_slice: int = VERIFY_SLICE,
    bucket_parts: Callable[[], BucketParts] = BucketParts,
    exact_duplicates: Callable[[np.ndarray], np.ndarray] | None = None,
    block_parts: Callable[[int], BlockParts] = BlockParts,
    park: Callable[[np.ndarray], Callable[[], np.ndarray]] | None = None,
) -> Groups:
    """Stage 2: exact duplicates, candidates, verification, groups and pairs (module docstring).

    ``timestamps`` is an int64 ordering key per document (smaller = earlier), read only before
    ``on_stage`` is told of the first stage (exact duplicates). When verification
    needs shingle sets that ``sig`` does not hold, only the documents that have a candidate
    need them, and an exact duplicate shares its representative's set: ``set_source`` provides
    them when given (an out-of-core run re-reads those texts), else they are built from
    ``texts``. ``band_keys`` supplies MinHash band hashes
    (default: computed from ``sig.signature``); ``on_stage`` is told the name of each step as
    it starts (for progress displays); ``workers`` threads find MinHash candidates (the
    groups do not depend on it). ``memory``: bytes that the band search's temporaries and the
    sketches read back from a spill file for the bounds (two blocks of rows at a time) may take,
    or a function asked for them as each of those steps starts (an out-of-core run's room
    shrinks as the grouping's arrays are made).
    ``pair_union`` makes the union that collects MinHash candidates (e.g. spilling to disk);
    they are bounded ``candidate_slice`` at a time, and verified that many at a time (the
    verification's temporaries, about 100 bytes a pair, do not grow with the candidates).
    ``bucket_parts`` makes where the band search keeps the buckets of the repair round (e.g.
    spilling to disk); their pairs are listed and bounded ``candidate_slice`` listings at a
    time into a ``pair_union()``. ``block_parts(blocks)`` makes where the candidates the
    lengths leave wait, by block of spilled sketches, to be bounded by them (e.g. spilling to
    disk; :func:`~neardup.candidates.chunks.bounded_pairs`).
    ``exact_duplicates(rank)`` gives each document's exact-duplicate representative (default:
    :func:`~neardup.exact_duplicates.content_representatives` of ``sig.content``; an out-of-core run reads
    the fingerprints back from disk instead, :func:`~neardup.exact_duplicates.representatives_by_parts`).
    ``park(values)`` keeps the document order from the candidates to the groups, which alone
    read it again, and returns the function that gives it back (default: held in memory; an
    out-of-core run puts it in its work folder, 0.4 GB at 100M documents). Documents already
    in time order (or of one timestamp) have the identity as their order: it is not held then.
    Cost: O(n log n) plus the candidate search (about O(n log n) for SimHash tables,
    O(n · bands) for LSH) plus verification O(Σ set sizes of candidate pairs).
    """
    n = len(sig)
    timestamps = np.asarray(timestamps, dtype=np.int64)
    if timestamps.shape[0] != n:
        raise ValueError(
            f"timestamps must have one value per document ({n}); got {timestamps.shape[0]}"
        )
    stats: dict = {"documents": n, "seconds": {}}
    empty_documents = int(sig.empty.sum())  # read once: mapped flags' pages are dropped after
    drop_mapped_pages(sig.empty)
    clock = time.perf_counter()

    def room() -> int | None:
        return memory() if callable(memory) else memory

    def lap(name: str, following: str | None = None) -> None:
        nonlocal clock
        now = time.perf_counter()
        stats["seconds"][name] = now - clock
        clock = now
        if on_stage is not None and following is not None:
            on_stage(following)

    # Only the order is used from here; the caller may let go of the timestamps once told
    # of the exact duplicates' stage.
    in_order = in_time_order(timestamps)
    rank = np.arange(n, dtype=index_dtype(n)) if in_order else document_order(timestamps)
    timestamps = None
    if on_stage is not None:
        on_stage("exact duplicates")
    if exact_duplicates is None:
        rep_of = content_representatives(sig.content, rank, workers)
    else:
        rep_of = exact_duplicates(rank)
    # The duplicates alone from here on, not an index a document (0.38 GB at 100M), and the
    # representatives as a bit a document (their indices: 0.35 GB at 100M).
    duplicates = Duplicates.of(rep_of)
    del rep_of
    reps = duplicates.representative_rows()
    if in_order:  # the identity: made again for the groups
        rank = None
    stats["exact_duplicates"] = len(duplicates)
    lap("exact_duplicates", "candidates")

    # SimHash: one search serves the candidates and, with pairs="all", the pairs reported.
    hamming = None
    if settings.method == "simhash" and len(reps):
        hamming = HammingSearch.of(sig.signature, settings.hamming_k)
    # The repair round's buckets (candidates.repair), when there is a band search.
    buckets = bucket_parts() if settings.method == "minhash" and len(reps) else None
    candidates = candidate_edges(
        sig, reps, rank, settings, band_keys, workers, hamming, buckets, pair_union, room()
    )
    # Nothing reads the order again until the groups: 4 bytes a document out of the way.
    order_back = None if rank is None else (park or _held)(rank)
    del rank
    return_freed_memory()  # the band search's temporaries, before the bounds' blocks
    # Sketches in a spill file are read two blocks of rows at a time, not through their map;
    # the unit counts whole, their map's pages resident before the room is measured, so that
    # the blocks leave them theirs (0.4 GB at 100M documents).
    block_rows = None
    if isinstance(sig.sketches, np.memmap):
        map_pages(sig.sizes)
        block_rows = sketch_block_rows(sig.sketches, room())
    visit = rest = None
    if buckets is not None:  # see candidates.repair; before the bounds below, which drop stars
        lcs = settings.verify_measure == "lcs" and sig.sketches is not None
        bound = (sig.sizes, sig.sketches, settings.verify) if lcs else (None, None, 0.0)
        union = pair_union() if pair_union else None
        rest_keys, repair = listed_pairs(
            buckets, reps, BUCKET_MEMBERS, *bound, block_rows, union, candidate_slice
        )
        buckets = union = bound = None
        star_listed = np.zeros(rest_keys.shape[0], dtype=bool)

        def visit(a: np.ndarray, b: np.ndarray) -> None:
            mark_among(rest_keys, a, b, star_listed)

        stats.update(repair)
    del reps  # the candidates hold what they need of it
    stats["candidates"] = len(candidates)
    # Packed candidates are unpacked a slice at a time, each slice bounded before the next.
    needs_data = settings.needs_sets and sig.set_offsets is None
    if (
        needs_data
        and settings.verify_measure == "lcs"
        and settings.pairs != "all"
        and sig.sizes is not None
    ):
        # Stage 1 counted every text's LCS units (LCS ≤ the shorter length) and sketches:
        # candidates they bound below the threshold are rejected before any text is read
        # again, as the LCS kernel would by the same tests (an out-of-core run re-reads a
        # fifth fewer at 1M). Not with pairs="all", which measures every candidate again.
        cand_a, cand_b = bounded_pairs(
            candidates, sig.sizes, sig.sketches, settings.verify, candidate_slice, block_rows, visit,
            block_parts,
        )  # fmt: skip
    else:
        cand_a, cand_b = filter_slices(candidates, None, candidate_slice, visit)
    del candidates
    drop_mapped_pages(sig.sizes)  # read again only for the compared documents, if at all
    if visit is not None:  # the listed pairs that no star candidate is
        rest = unpacked(rest_keys[~star_listed])
        del rest_keys, star_listed
    if settings.pairs != "all":
        hamming = None
    lap("candidates", "shingle sets" if needs_data else "verify")

    verified = None
    if needs_data:
        if set_source is None and texts is None:
            raise ValueError(
                "verification needs shingle sets: pass the texts, a set source, "
                "or signatures computed with keep_sets=True"
            )
        # Only representatives need sets (an exact duplicate has its representative's): the
        # candidates' ends, the representatives of exact duplicates, the ends of the repair
        # round's pairs. Marked, not found from the groups' labels and sizes (1.2 GB at 100M).
        compared = index_union(
            n, cand_a, cand_b, duplicates.reps, *(rest or ()), without=duplicates.members
        )
        many = cand_a.shape[0] > candidate_slice
        if set_source is None:
            rep_verified = functools.partial(
                settings.verification.similarity, *sets_for(texts, compared, settings)
            )
        else:
            rep_verified = set_source(compared)
        stats["documents_verified"] = int(compared.shape[0])
        del compared  # not beside the pairs' order (8 bytes a compared document)
        if many:
            # Pairs that share documents side by side: a slice of them then needs the data of
            # few documents (an out-of-core run reads them back for each slice). Data read back
            # from disk: in the locality order of the documents (one giant component of long
            # texts spans many slices; each read its documents anew), which changes nothing
            # there, as every candidate is measured (below); else by component.
            if getattr(rep_verified, "reads_spill", False):
                order = locality_pair_order(n, cand_a, cand_b)
            else:
                linked = with_duplicates(
                    connected_components(n, cand_a, cand_b), duplicates, overwrite_labels=True
                )
                order = stable_argsort(linked[cand_a])
                del linked
            cand_a = cand_a[order]
            cand_b = cand_b[order]
            del order

        verified = _MemoVerified(rep_verified, duplicates, settings.verify, candidate_slice)
        del rep_verified  # held by ``verified`` alone, and let go with it

        lap("shingle_sets", "verify")

    relation = Relation(sig, settings, verified)
    considered = tested = int(cand_a.shape[0])  # the candidates the length rule left
    if settings.method == "minhash" or settings.verify is not None:
        # Only the components of the accepted candidates matter (the pairs reported are
        # measured on their own): a candidate whose documents are linked already is not tested.
        # Data read back from disk cost a pass a call: then one round, every candidate.
        rounds = 0 if getattr(verified, "reads_spill", False) else LINK_ROUNDS
        kept, tested = accepted_links(n, cand_a, cand_b, relation, rounds, candidate_slice)
        cand_a, cand_b = cand_a[kept], cand_b[kept]
        del kept
    stats["rejected"] = stats["candidates"] - considered + tested - int(cand_a.shape[0])
    stats["linked_untested"] = considered - tested
    components = connected_components(n, cand_a, cand_b)
    if rest is not None:
        # The repair's union-find starts from the components themselves (no copy of 4 bytes
        # a document beside them), which are then made again, with the pairs it accepted.
        more_a, more_b, repair = repair_links(
            n, *rest, components, relation, rounds, candidate_slice, overwrite_labels=True
        )
        components = None
        if more_a.shape[0]:
            # In the candidates' width: the repair's int64 ends would widen every candidate.
            index = cand_a.dtype
            cand_a = np.concatenate([cand_a, more_a], dtype=index)
            cand_b = np.concatenate([cand_b, more_b], dtype=index)
        components = connected_components(n, cand_a, cand_b)
        stats.update(repair)
    lap("verify", "groups")

    # Each exact duplicate joins its representative's component (no list of their links).
    labels = with_duplicates(components, duplicates, overwrite_labels=True)
    del components, duplicates
    if settings.grouping == "components":  # in time order the labels serve (None: no order)
        rank = None if order_back is None else order_back()
        original = originals_of(labels, rank)
    else:
        rank = np.arange(n, dtype=index_dtype(n)) if order_back is None else order_back()
        original = center_groups(labels, rank, relation)
    del rank, labels, cand_a, cand_b, rest  # not read by the pairs' stage
    lap("groups", "pairs")

    if settings.pairs == "original":
        # The members' values a slice at a time, neither their originals nor the originals'
        # flags (made again after) beside the measure's temporaries: 0.2 GB at 100M.
        pair_b = not_own_labels(original, own_labels(original))
        pair_value = _pair_values(relation, None, pair_b, candidate_slice, original)
        pair_a = original[pair_b]
        # The decision that accepted candidates, from the values (no pair measured again).
        pair_passed = relation.passes(pair_a, pair_b, pair_value)
    else:  # all_pairs keeps the pairs the relation accepts
        pair_a, pair_b, pair_value = all_pairs(
            sig, settings, relation, band_keys, workers, hamming, pair_union, candidate_slice,
            room(),
        )  # fmt: skip
        if pair_value is None:
            pair_value = _pair_values(relation, pair_a, pair_b, candidate_slice)
        pair_passed = np.ones(pair_a.shape[0], dtype=bool)
    lap("pairs")

    # The flags and group sizes once the verification's data and remembered values are gone.
    del relation, verified, hamming
    is_original = own_labels(original)
    group_size = group_sizes(original, is_original)
    stats["seconds"]["groups"] += time.perf_counter() - clock
    groups = int(is_original.sum())
    stats.update(
        pairs=int(pair_a.shape[0]),
        groups=groups,
        duplicates_removed=n - groups,
        largest_group=int(group_size.max()) if n else 0,
        empty_documents=empty_documents,
    )
    return Groups(original, is_original, group_size, pair_a, pair_b, pair_value, pair_passed, stats)
