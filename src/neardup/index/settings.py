"""The settings an index decides with, and how they are written down.

The method and its settings (:func:`index_settings`: ``dedup``'s options and defaults) are fixed
when the index is created and stored in its ``meta`` table (:func:`settings_meta`, read back by
:func:`settings_from_meta`); every text added or queried is signed with them
(:func:`neardup.pipeline.signatures`). A request that needs other settings is refused with a
ValueError naming the index's (:func:`describe_settings`). An index written before MinHash
indexes existed has no ``method`` in ``meta`` and opens as SimHash, unchanged; a MinHash index
written before signature schemes were recorded opens with the ``"classic"`` scheme it was built
with, so it answers exactly as before.

Example:
    >>> s = index_settings(hamming_k=4)
    >>> settings_from_meta(settings_meta(s)) == s
    True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from neardup.minhash import LEGACY_SCHEME
from neardup.settings import (
    DEFAULT_HASH_NAME,
    METHODS,
    Settings,
    check_method_options,
    implied_method,
)

__all__ = [
    "describe_settings",
    "index_settings",
    "keyword_settings",
    "settings_fields",
    "settings_from_meta",
    "settings_keywords",
    "settings_meta",
]


def index_settings(
    hamming_k: int | None = None,
    shingle: str | None = None,
    hash_name: str = DEFAULT_HASH_NAME,
    weights: str | None = None,
    *,
    method: str | None = None,
    num_perm: int | None = None,
    seed: int | None = None,
    scheme: str | None = None,
    threshold: float | None = None,
    bands: int | None = None,
    rows: int | None = None,
    verify: float | str | None = None,
    spell: Callable[[str], str] = str,
) -> Settings:
    """The run settings an index decides with: those of ``neardup dedup --method METHOD
    --grouping components`` with the same options. ``method`` None: the one the options given
    imply (:func:`neardup.settings.implied_method`: ``hamming_k`` SimHash, ``num_perm``
    MinHash …), else ``dedup``'s, MinHash. Options left None take ``dedup``'s
    defaults (shingles per method: :data:`neardup.pipeline.DEFAULT_SHINGLES`; MinHash:
    ``verify="auto"``, i.e. LCS resemblance at ``threshold``); an option of the other method
    raises ValueError. SimHash never verifies. MinHash settings come back with their
    effective ``bands`` and ``rows`` (:meth:`neardup.pipeline.Settings.banding`), so an index
    keeps its banding even if the tuning of the defaults changes. ``spell`` names an option in
    an error as the caller's user spells it (``--hamming-k`` on the command line). O(1).

    Example:
        >>> s = index_settings()
        >>> s.method, s.shingle, s.bands, s.rows, str(s.verification)
        ('minhash', 'char:4', 32, 4, 'lcs:0.8')
        >>> index_settings(hamming_k=4).method
        'simhash'
        >>> index_settings(method="minhash", hamming_k=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: hamming_k applies to method simhash, not minhash; drop it ...
    """
    options = {
        "hamming_k": hamming_k,
        "weights": weights,
        "num_perm": num_perm,
        "seed": seed,
        "scheme": scheme,
        "threshold": threshold,
        "bands": bands,
        "rows": rows,
    }
    given = {k: v for k, v in options.items() if v is not None}
    if method is None:
        method = implied_method(given)
    _check_method(method)
    check_method_options(method, list(given), spell=spell)
    if method == "simhash":
        if verify not in (None, "none", "auto"):
            raise ValueError(
                f"{spell('verify')} applies to method minhash in an index, not simhash; "
                f"got {verify!r}"
            )
        return Settings(
            method="simhash",
            shingle=shingle,
            hash_name=hash_name,
            verify=None,
            grouping="components",
            **given,
        )
    settings = Settings(
        method="minhash",
        shingle=shingle,
        hash_name=hash_name,
        verify="auto" if verify is None else verify,
        grouping="components",
        **given,
    )
    b, r = settings.banding()
    return settings.replace(bands=b, rows=r)


_SETTING_NAMES = frozenset(inspect.signature(index_settings).parameters) - {"spell"}


def keyword_settings(keywords: dict[str, Any], caller: str) -> Settings:
    """``index_settings(**keywords)`` for the settings keywords a method takes as ``**``
    (``NearDupIndex.create`` and ``build``), refusing any other as Python would refuse it
    for ``caller()``. O(1).

    Example:
        >>> keyword_settings({"hamming_k": 4}, "create").hamming_k
        4
        >>> keyword_settings({"k": 4}, "create")
        Traceback (most recent call last):
        ...
        TypeError: create() got an unexpected keyword argument 'k'
    """
    for name in keywords:
        if name not in _SETTING_NAMES:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    return index_settings(**keywords)


def _check_method(method: Any) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def settings_fields(settings: Settings) -> dict[str, Any]:
    """The settings that define an index, by name, in the order :meth:`NearDupIndex.stats`
    lists them: ``method``, ``shingle``, ``hash_name``, ``grouping``, then the method's own
    (SimHash: ``hamming_k``, ``weights``; MinHash: ``num_perm``, ``seed``, ``scheme``,
    ``threshold``, ``bands``, ``rows``, ``verify``). O(1).

    Example:
        >>> fields = settings_fields(index_settings(hamming_k=4))
        >>> list(fields), fields["hamming_k"]
        (['method', 'shingle', 'hash_name', 'grouping', 'hamming_k', 'weights'], 4)
    """
    out: dict[str, Any] = {
        "method": settings.method,
        "shingle": settings.shingle,
        "hash_name": settings.hash_name,
        "grouping": "components",
    }
    if settings.method == "simhash":
        out.update(hamming_k=settings.hamming_k, weights=settings.weights)
    else:
        verification = settings.verification
        out.update(
            num_perm=settings.num_perm,
            seed=settings.seed,
            scheme=settings.scheme,
            threshold=settings.threshold,
            bands=settings.bands,
            rows=settings.rows,
            verify="none" if verification is None else str(verification),
        )
    return out


def settings_meta(settings: Settings) -> dict[str, str]:
    """The ``meta`` rows that record an index's settings (read back by
    :func:`settings_from_meta`). O(1)."""
    return {name: str(value) for name, value in settings_fields(settings).items()}


def settings_keywords(settings: Settings) -> dict[str, Any]:
    """The keywords of :meth:`NearDupIndex.create` / :meth:`NearDupIndex.build` that give an
    index ``settings`` (e.g. to rebuild an index like another). O(1).

    Example:
        >>> kw = settings_keywords(index_settings(hamming_k=4))
        >>> kw["method"], kw["hamming_k"], kw["shingle"]
        ('simhash', 4, 'word:3')
    """
    out = settings_fields(settings)
    del out["grouping"]  # an index always groups by components
    return out


def settings_from_meta(meta: dict[str, str]) -> Settings:
    """An index's settings from its ``meta`` rows. An index written before MinHash indexes
    existed has no ``method`` row and is SimHash; a MinHash index written before signature
    schemes were recorded has no ``scheme`` row and keeps answering with the scheme it was
    built with, ``"classic"``."""
    method = meta.get("method", "simhash")
    if method == "simhash":
        return index_settings(
            int(meta["hamming_k"]), meta["shingle"], meta["hash_name"], meta["weights"]
        )
    return index_settings(
        None,
        meta["shingle"],
        meta["hash_name"],
        method=method,
        num_perm=int(meta["num_perm"]),
        seed=int(meta["seed"]),
        scheme=meta.get("scheme", LEGACY_SCHEME),
        threshold=float(meta["threshold"]),
        bands=int(meta["bands"]),
        rows=int(meta["rows"]),
        verify=meta["verify"],
    )


def describe_settings(settings: Settings) -> str:
    """The options of ``neardup index create`` that make ``settings``, for messages.

    Example:
        >>> describe_settings(index_settings(hamming_k=3))
        '--method simhash -k 3 --shingle word:3 --hash-name xxh --weights set'
    """
    if settings.method == "simhash":
        return (
            f"--method simhash -k {settings.hamming_k} --shingle {settings.shingle} "
            f"--hash-name {settings.hash_name} --weights {settings.weights}"
        )
    verification = settings.verification
    return (
        f"--method minhash --shingle {settings.shingle} --hash-name {settings.hash_name} "
        f"--num-perm {settings.num_perm} --seed {settings.seed} --scheme {settings.scheme} "
        f"--threshold {settings.threshold:g} --bands {settings.bands} --rows {settings.rows} "
        f"--verify {'none' if verification is None else verification}"
    )
