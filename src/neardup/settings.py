"""The options of a run: :class:`Settings`, the values each option may take (:data:`CHOICES`)
and their defaults, which are those of ``neardup dedup`` everywhere: the command line, the Python
API, the Spark engine and the index take their defaults from here.

The defaults were chosen by measurement (README, "Defaults, and why"): MinHash over character
4-grams, candidates verified by the definition's rule, LCS resemblance at 0.8. Only the shingles
depend on the method (:data:`DEFAULT_SHINGLES`); ``Settings(shingle=None)`` takes the method's,
so ``Settings(method="simhash")`` is ``neardup dedup --method simhash`` with every other option
left alone.

Example:
    >>> Settings().method, Settings().shingle, str(Settings().verification)
    ('minhash', 'char:4', 'lcs:0.8')
    >>> Settings(method="simhash").shingle, Settings(method="simhash").verification is None
    ('word:3', True)
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from neardup.candidates.plan import MAX_HAMMING_K
from neardup.groups import GROUPINGS
from neardup.hashing import DEFAULT_HASH_NAME, HASH_NAMES
from neardup.lsh import optimal_params
from neardup.minhash import DEFAULT_NUM_PERM, DEFAULT_SCHEME, DEFAULT_SEED, SCHEMES, check_num_perm
from neardup.simhash import WEIGHTS
from neardup.text import DEFAULT_TEXT_SHINGLE, Shingling
from neardup.verify import VERIFY_MEASURES, Verification, parse_verify

METHODS = ("simhash", "minhash")
PAIR_MODES = ("original", "all")

#: The valid values of the options that take one of a few names, by :class:`Settings` field.
#: The kernels that implement the names define them (``hashing``, ``simhash``, ``groups``,
#: ``verify``); this table is where the command line and the API take them from.
CHOICES: dict[str, tuple[str, ...]] = {
    "method": METHODS,
    "scheme": SCHEMES,
    "hash_name": HASH_NAMES,
    "weights": WEIGHTS,
    "grouping": GROUPINGS,
    "pairs": PAIR_MODES,
    "verify_measure": VERIFY_MEASURES,
}

DEFAULT_METHOD = "minhash"
#: The features of each method when none are given: SimHash over word 3-grams (the seed
#: design, and the index's), MinHash over character 4-grams (README, "Defaults, and why").
DEFAULT_SHINGLES = {"simhash": DEFAULT_TEXT_SHINGLE, "minhash": "char:4"}
#: The shingles of ``Settings()``: those of :data:`DEFAULT_METHOD`.
DEFAULT_SHINGLE = DEFAULT_SHINGLES[DEFAULT_METHOD]
DEFAULT_WEIGHTS = "set"
DEFAULT_HAMMING_K = 3
DEFAULT_THRESHOLD = 0.8
DEFAULT_VERIFY = "auto"
DEFAULT_GROUPING = "components"
DEFAULT_PAIRS = "original"
#: The weight of a missed pair against a false candidate when the LSH bands are tuned for
#: Jaccard verification (:meth:`Settings.banding`).
FN_WEIGHT = 0.9

#: The options that only one method uses: Settings field → that method.
METHOD_OPTIONS = {
    "hamming_k": "simhash",
    "weights": "simhash",
    "idf": "simhash",
    "num_perm": "minhash",
    "seed": "minhash",
    "scheme": "minhash",
    "threshold": "minhash",
    "bands": "minhash",
    "rows": "minhash",
}


def implied_method(given: Iterable[str]) -> str:
    """The method that the options the user set (by Settings field name) imply: SimHash for
    ``hamming_k``, ``weights`` or ``idf``; MinHash for ``num_perm``, ``seed``, ``scheme``,
    ``bands`` or ``rows``; else :data:`DEFAULT_METHOD`. Options of both methods imply the
    default, which :func:`check_method_options` then refuses. O(len(given)).

    Example:
        >>> implied_method(["hamming_k", "shingle"]), implied_method([])
        ('simhash', 'minhash')
    """
    # threshold is MinHash's, but SimHash verified by a bare measure takes it too: no hint.
    owners = {METHOD_OPTIONS[name] for name in given if name in METHOD_OPTIONS} - {None}
    hints = {METHOD_OPTIONS[n] for n in given if n in METHOD_OPTIONS and n != "threshold"}
    return hints.pop() if len(hints) == 1 and len(owners) <= 1 else DEFAULT_METHOD


def check_method_options(
    method: str,
    given: Iterable[str],
    verify: Any = DEFAULT_VERIFY,
    spell: Callable[[str], str] = str,
) -> None:
    """Raise ``ValueError`` if an option in ``given`` (the options the user set, by Settings
    field name) does not apply to ``method``, rather than run as if it were absent. ``spell``
    turns a field name into the user's spelling (e.g. ``--hamming-k``). SimHash uses
    ``threshold`` when ``verify`` is a bare measure ("jaccard", "lcs") that takes it.
    O(len(given)).

    Example:
        >>> check_method_options("minhash", ["threshold", "shingle"])
        >>> check_method_options("minhash", ["hamming_k"])
        Traceback (most recent call last):
        ...
        ValueError: hamming_k applies to method simhash, not minhash; drop it or choose method simhash
    """
    for name in given:
        owner = METHOD_OPTIONS.get(name)
        if owner is None or owner == method:
            continue
        if name == "threshold" and str(verify).strip().lower() in VERIFY_MEASURES:
            continue
        raise ValueError(
            f"{spell(name)} applies to method {owner}, not {method}; drop it or "
            f"choose method {owner}"
        )


@dataclass(frozen=True)
class Settings:
    """Every option of a dedup run; validated on creation. The defaults are ``neardup
    dedup``'s; ``shingle=None`` takes the method's (:data:`DEFAULT_SHINGLES`).

    Attributes:
        method: "minhash" (LSH bands) or "simhash" (64-bit fingerprints, Hamming distance).
        shingle: "word:k" or "char:k" (see :mod:`neardup.text`); None: the method's default.
        hash_name: feature hash, "xxh" (XXH64) or "md5" (upper 64 bits of MD5).
        weights: SimHash feature weights, "set", "tf" or "idf" (with ``idf``).
        idf: the :class:`neardup.idf.IdfTable` of ``weights="idf"`` (made with the same
            ``shingle`` and ``hash_name``), else None.
        num_perm: MinHash permutations.
        seed: MinHash seed.
        scheme: MinHash signature scheme, "oph" (one-permutation hashing with densification,
            O(shingles + num_perm)) or "classic" (num_perm hash functions); see
            :mod:`neardup.minhash`.
        hamming_k: SimHash near-duplicate distance, in bits (0..32).
        threshold: MinHash near-duplicate threshold in (0, 1): of the verification measure
            when ``verify`` is "auto", "lcs" or "jaccard", of the MinHash Jaccard estimate
            without verification; also picks the LSH bands (see :meth:`banding`).
        bands, rows: force the LSH banding (both or neither); default: :meth:`banding`.
        verify: how candidates are verified, or None: a spec "lcs:T" / "jaccard:T"
            (:func:`neardup.verify.parse_verify`), "lcs" or "jaccard" (at ``threshold``), or a
            number (exact Jaccard). "auto" = ``"lcs"`` for MinHash (the definition's rule: LCS
            resemblance by words or syllables), None for SimHash.
        verify_measure: "jaccard" or "lcs", set from the ``verify`` spec.
        grouping: "components" or "center".
        pairs: "original" or "all".

    Example:
        >>> s = Settings(method="simhash", hamming_k=4)
        >>> s.shingle, s.hamming_k, s.verify
        ('word:3', 4, None)
    """

    method: str = DEFAULT_METHOD
    shingle: str | None = None
    hash_name: str = DEFAULT_HASH_NAME
    weights: str = DEFAULT_WEIGHTS
    num_perm: int = DEFAULT_NUM_PERM
    seed: int = DEFAULT_SEED
    scheme: str = DEFAULT_SCHEME
    hamming_k: int = DEFAULT_HAMMING_K
    threshold: float = DEFAULT_THRESHOLD
    bands: int | None = None
    rows: int | None = None
    verify: float | str | None = DEFAULT_VERIFY
    grouping: str = DEFAULT_GROUPING
    pairs: str = DEFAULT_PAIRS
    idf: Any = field(default=None, compare=False, repr=False)
    verify_measure: str = "jaccard"

    def __post_init__(self) -> None:
        for name in ("method", "scheme", "grouping", "pairs", "weights", "hash_name"):
            _choice(name, getattr(self, name))
        shingle = DEFAULT_SHINGLES[self.method] if self.shingle is None else self.shingle
        object.__setattr__(self, "shingle", str(Shingling.parse(shingle)))
        check_num_perm(self.num_perm)
        if not 0 <= self.hamming_k <= MAX_HAMMING_K:
            raise ValueError(f"hamming_k must be in 0..{MAX_HAMMING_K}; got {self.hamming_k}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1); got {self.threshold}")
        if (self.bands is None) != (self.rows is None):
            raise ValueError("bands and rows must be given together")
        if self.bands is not None and not (
            self.bands >= 1 and self.rows >= 1 and self.bands * self.rows <= self.num_perm
        ):
            raise ValueError(
                f"bands × rows must be in 1..num_perm ({self.num_perm}); "
                f"got bands={self.bands}, rows={self.rows}"
            )
        self._resolve_verify()
        _choice("verify_measure", self.verify_measure)
        if self.weights == "idf":
            if self.method != "simhash":
                raise ValueError("weights='idf' applies to SimHash (method='simhash')")
            if self.idf is None:
                raise ValueError(
                    "weights='idf' needs an IDF table: idf=IdfTable(...) "
                    "(neardup.idf), or --idf-in FILE on the command line"
                )
            self.idf.check(self.shingle, self.hash_name)
        elif self.idf is not None:
            raise ValueError(f"an IDF table is used only with weights='idf'; got {self.weights!r}")

    def _resolve_verify(self) -> None:
        """Turn ``verify`` into its threshold (or None) and set ``verify_measure``."""
        if self.verify == "auto":
            verify = None
            if self.method == "minhash":
                verify = self.threshold
                object.__setattr__(self, "verify_measure", "lcs")
        elif isinstance(self.verify, str) and self.verify.strip().lower() in VERIFY_MEASURES:
            verify = self.threshold
            object.__setattr__(self, "verify_measure", self.verify.strip().lower())
        elif isinstance(self.verify, str) or self.verify is None:
            parsed = parse_verify(self.verify)
            verify = None if parsed is None else parsed.threshold
            if parsed is not None:
                object.__setattr__(self, "verify_measure", parsed.measure)
        else:
            verify = float(self.verify)
            if not 0.0 < verify <= 1.0:
                raise ValueError(f"verify threshold must be in (0, 1]; got {verify}")
        object.__setattr__(self, "verify", verify)

    @property
    def needs_sets(self) -> bool:
        """Whether the run needs verification data (shingle sets or LCS units)."""
        return self.verify is not None

    @property
    def lcs_bounded(self) -> bool:
        """Whether candidates are verified by LCS resemblance, so that each document's unit
        count and count sketch (:func:`neardup.lcs.possible_pairs`) can rule pairs out before
        their units are built."""
        return self.verify is not None and self.verify_measure == "lcs"

    @property
    def verification(self) -> Verification | None:
        """The verification measure and threshold, or None."""
        return None if self.verify is None else Verification(self.verify_measure, self.verify)

    def banding(self) -> tuple[int, int]:
        """The (bands, rows) of the MinHash LSH: forced, or tuned by
        :func:`neardup.lsh.optimal_params` for the Jaccard that candidates must reach. O(1).

        - LCS verification at T: Jaccard T / 2, errors weighed equally. One changed word in
          five (an LCS of 0.8) breaks about twice its share of char 4-grams, and short texts
          lose more; the margin is in the target, so weighing misses more only adds
          candidates. At T = 0.8 this is 32 bands × 4 rows: 0.977 (Korean, mean of 20 seeds)
          and 1.000 (English) of the pairs of the exhaustive Debian oracle become
          candidates; 42 × 3 (misses weighed 9 times) added 0.001 for 3 times the
          candidates (README, "Defaults, and why").
        - Jaccard verification at T: Jaccard T, a missed pair weighing 9 times a false
          candidate (``FN_WEIGHT``: the check removes false candidates, nothing brings a
          missed pair back).
        - Without verification: ``threshold``, errors weighed equally.

        Example:
            >>> Settings().banding()
            (32, 4)
        """
        if self.bands is not None:
            return self.bands, self.rows
        if self.verify is None:
            params = optimal_params(self.threshold, self.num_perm)
        elif self.verify_measure == "lcs":
            params = optimal_params(self.verify / 2, self.num_perm)
        else:
            params = optimal_params(
                self.threshold, self.num_perm, fp_weight=1 - FN_WEIGHT, fn_weight=FN_WEIGHT
            )
        return params.bands, params.rows

    def replace(self, **changes) -> Settings:
        """A copy with some options changed (validated again). O(1).

        Example:
            >>> Settings(method="simhash").replace(hamming_k=5).hamming_k
            5
        """
        return replace(self, **changes)


def setting_default(name: str) -> Any:
    """The default of :class:`Settings` field ``name`` (None for ``shingle``: the method's,
    see :data:`DEFAULT_SHINGLES`). O(fields).

    Example:
        >>> setting_default("num_perm"), setting_default("grouping")
        (128, 'components')
    """
    for f in fields(Settings):
        if f.name == name:
            return f.default
    raise KeyError(f"Settings has no field {name!r}")


def _choice(name: str, value: str) -> None:
    valid = CHOICES[name]
    if value not in valid:
        raise ValueError(f"{name} must be one of {', '.join(valid)}; got {value!r}")


def renamed_keywords(**renames: str) -> Callable[[Callable], Callable]:
    """Decorate a function whose keyword arguments were renamed (``old="new"``): for one
    release the old name still works, with a ``DeprecationWarning`` naming the new one; both
    at once is a ``TypeError``. O(renames) per call.

    Example:
        >>> @renamed_keywords(id_column="id_field")
        ... def read(*, id_field="id"):
        ...     return id_field
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     read(id_column="doc")
        'doc'
        >>> str(caught[0].message)
        'read(id_column=...) is deprecated; use id_field=...'
    """

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def with_old_names(*args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{function.__name__}() got {old}= and {new}=; {old} is the "
                        f"deprecated name of {new}: give {new} alone"
                    )
                warnings.warn(
                    f"{function.__name__}({old}=...) is deprecated; use {new}=...",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return with_old_names

    return decorate
