"""LSH band arithmetic: candidate probabilities and the choice of (bands, rows).

A MinHash signature of ``num_perm`` values is cut into ``bands`` bands of ``rows`` values each
(``bands * rows <= num_perm``; the remaining columns are unused). Each signature position of two
documents with Jaccard similarity ``s`` agrees with probability ``s``, independently across
positions, so

* a band agrees on all of its rows with probability ``s**rows``;
* the pair agrees on no band with probability ``(1 - s**rows)**bands``;
* the pair becomes a *candidate* (agrees on at least one whole band) with probability

  ``p(s) = 1 - (1 - s**rows)**bands``,

an S-shaped curve that rises steeply around ``s ≈ (1/bands)**(1/rows)``.

Worked example (``bands = 20``, ``rows = 5``, ``num_perm = 100``):

* a pair at ``s = 0.8``: one band agrees with probability ``0.8**5 = 0.32768``; no band agrees
  with probability ``(1 - 0.32768)**20 ≈ 0.00035`` (0.000356...), so the pair is missed (false
  negative) with probability about 0.00035 and found with probability about 99.965 %;
* a pair at ``s = 0.3``: no band agrees with probability ``(1 - 0.3**5)**20 ≈ 0.9526``, so the
  pair becomes a (false) candidate with probability ``≈ 0.0474`` (0.047494...).

For a similarity ``threshold``, the area under ``p`` on ``[0, threshold]`` measures false
positives and the area above ``p`` on ``[threshold, 1]`` measures false negatives;
:func:`optimal_params` picks ``(bands, rows)`` minimising a weighted sum of the two. Raising
``rows`` (fewer, longer bands) lowers false positives and raises false negatives; raising
``bands`` does the opposite.

Every probability here is a unitless number in ``[0, 1]``; the areas are in (similarity ×
probability) units and lie in ``[0, threshold]`` and ``[0, 1 - threshold]``.

Example (the exact values are 0.000356... and 0.047494..., which the figures above truncate):
    >>> f"{false_negative_probability(0.8, 20, 5):.6f}"
    '0.000356'
    >>> f"{candidate_probability(0.3, 20, 5):.5f}"
    '0.04749'
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import overload

import numpy as np

__all__ = [
    "MAX_NUM_PERM",
    "LSHParams",
    "candidate_probability",
    "false_negative_probability",
    "false_positive_probability",
    "false_positive_area",
    "false_negative_area",
    "optimal_params",
    "probability_table",
    "plot_s_curve",
]

#: Largest signature length :func:`optimal_params` accepts.
MAX_NUM_PERM = 4096

# The area integrals use Gauss-Legendre with bands * rows // 2 + 1 nodes; this bounds that work.
_MAX_AREA_DEGREE = 16384

# Weighted errors this close (relative) to the minimum are equal up to quadrature rounding, so
# they are settled by the documented tie-break rather than by the last few bits of a float sum.
_TIE_RTOL = 1e-9

_DEFAULT_SIMILARITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


# --------------------------------------------------------------------------- validation


def _check_positive_int(name: str, value: object, upper: int | None = None) -> int:
    valid = f"an integer in 1..{upper}" if upper is not None else "an integer >= 1"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    v = int(value)
    if v < 1 or (upper is not None and v > upper):
        raise ValueError(f"{name} must be {valid}, got {v}")
    return v


def _check_bands_rows(bands: object, rows: object) -> tuple[int, int]:
    return _check_positive_int("bands", bands), _check_positive_int("rows", rows)


def _check_area_args(threshold: object, bands: object, rows: object) -> tuple[float, int, int]:
    b, r = _check_bands_rows(bands, rows)
    if b * r > _MAX_AREA_DEGREE:
        raise ValueError(f"bands * rows must be in 1..{_MAX_AREA_DEGREE}, got {b * r}")
    return _check_unit_interval("threshold", threshold), b, r


def _check_unit_interval(name: str, value: object, *, open_interval: bool = False) -> float:
    valid = "(0, 1) exclusive" if open_interval else "[0, 1]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in {valid}, got {value!r}")
    v = float(value)
    ok = 0.0 < v < 1.0 if open_interval else 0.0 <= v <= 1.0
    if not ok:  # also rejects NaN
        raise ValueError(f"{name} must be in {valid}, got {v!r}")
    return v


def _as_similarity(similarity: object) -> tuple[np.ndarray, bool]:
    """Return ``similarity`` as a float64 array and whether the input was a scalar."""
    if isinstance(similarity, (bool, np.bool_)):
        raise ValueError(f"similarity must be a number in [0, 1], got {similarity!r}")
    try:
        s = np.asarray(similarity, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"similarity must be a number in [0, 1], got {similarity!r}") from None
    bad = ~((s >= 0.0) & (s <= 1.0))  # NaN fails both comparisons
    if bad.any():
        first = s[bad].flat[0]
        raise ValueError(f"similarity must be in [0, 1], got {float(first)!r}")
    return s, s.ndim == 0


# --------------------------------------------------------------------------- probabilities


def _log_miss(s: np.ndarray, rows: int) -> np.ndarray:
    """``log(1 - s**rows)``: the log-probability that one band disagrees (``-inf`` at s = 1)."""
    with np.errstate(divide="ignore"):
        return np.log1p(-(s**rows))


@overload
def candidate_probability(similarity: float, bands: int, rows: int) -> float: ...
@overload
def candidate_probability(similarity: np.ndarray, bands: int, rows: int) -> np.ndarray: ...


def candidate_probability(similarity, bands, rows):
    """Probability that a pair of this Jaccard similarity becomes an LSH candidate.

    ``p(s) = 1 - (1 - s**rows)**bands``: the probability that at least one of ``bands`` bands
    agrees on all of its ``rows`` signature positions, each position agreeing with probability
    ``s``. Evaluated as ``-expm1(bands * log1p(-s**rows))`` so that tiny probabilities keep
    their relative precision.

    Args:
        similarity: Jaccard similarity in ``[0, 1]``; a float or an array of any shape.
        bands: number of bands, ``>= 1``.
        rows: rows (signature positions) per band, ``>= 1``.

    Returns:
        A float for a scalar ``similarity``, else a float64 array of the same shape; values in
        ``[0, 1]``.

    Complexity: O(len(similarity)).

    Raises:
        ValueError: a similarity outside ``[0, 1]`` (or NaN), or ``bands`` / ``rows`` not an
            integer ``>= 1``.

    Example:
        >>> f"{candidate_probability(0.3, bands=20, rows=5):.5f}"  # ≈ 0.0474
        '0.04749'
        >>> candidate_probability(np.array([0.0, 1.0]), 20, 5).tolist()
        [0.0, 1.0]
    """
    b, r = _check_bands_rows(bands, rows)
    s, scalar = _as_similarity(similarity)
    p = -np.expm1(b * _log_miss(s, r))
    return float(p) if scalar else p


@overload
def false_negative_probability(similarity: float, bands: int, rows: int) -> float: ...
@overload
def false_negative_probability(similarity: np.ndarray, bands: int, rows: int) -> np.ndarray: ...


def false_negative_probability(similarity, bands, rows):
    """Probability that a pair of this similarity is *missed*: ``(1 - s**rows)**bands = 1 - p``.

    Meant for a pair at or above the threshold, for which missing it is an error. Evaluated as
    ``exp(bands * log1p(-s**rows))``, accurate for tiny values.

    Args:
        similarity: Jaccard similarity in ``[0, 1]``; a float or an array.
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``.

    Returns:
        A float for a scalar input, else a float64 array; values in ``[0, 1]``.

    Complexity: O(len(similarity)).

    Raises:
        ValueError: as :func:`candidate_probability`.

    Example:
        b = 20, r = 5: a pair at 0.8 agrees on one band with probability 0.8**5 = 0.32768 and on
        none of the 20 with probability (1 - 0.32768)**20 ≈ 0.00035 (0.000356...).

        >>> f"{false_negative_probability(0.8, bands=20, rows=5):.6f}"
        '0.000356'
    """
    b, r = _check_bands_rows(bands, rows)
    s, scalar = _as_similarity(similarity)
    q = np.exp(b * _log_miss(s, r))
    return float(q) if scalar else q


@overload
def false_positive_probability(similarity: float, bands: int, rows: int) -> float: ...
@overload
def false_positive_probability(similarity: np.ndarray, bands: int, rows: int) -> np.ndarray: ...


def false_positive_probability(similarity, bands, rows):
    """Probability that a pair of this similarity becomes a candidate: ``p = 1 - (1 - s**r)**b``.

    The same number as :func:`candidate_probability`, named for a pair *below* the threshold,
    for which becoming a candidate is an error (removed later by exact verification, at a cost).

    Args:
        similarity: Jaccard similarity in ``[0, 1]``; a float or an array.
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``.

    Returns:
        A float for a scalar input, else a float64 array; values in ``[0, 1]``.

    Complexity: O(len(similarity)).

    Raises:
        ValueError: as :func:`candidate_probability`.

    Example:
        b = 20, r = 5: a pair at 0.3 misses all bands with probability (1 - 0.3**5)**20 ≈ 0.9526,
        so it is a false candidate with probability ≈ 0.0474 (0.047494...).

        >>> f"{false_positive_probability(0.3, bands=20, rows=5):.5f}"
        '0.04749'
    """
    return candidate_probability(similarity, bands, rows)


# --------------------------------------------------------------------------- areas


@lru_cache(maxsize=32)
def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (ascending) and weights of the n-point Gauss-Legendre rule on [-1, 1].

    Newton's method on P_n from the asymptotic guesses cos(pi (k - 1/4) / (n + 1/2)), with P_n
    and P_{n-1} from the three-term recurrence; O(n^2) per iteration, a handful of iterations.
    The rule integrates every polynomial of degree <= 2n - 1 exactly.
    """
    k = np.arange(1, n + 1, dtype=np.float64)
    x = np.cos(np.pi * (k - 0.25) / (n + 0.5))

    def legendre(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p_prev, p = np.ones_like(x), x.copy()
        for j in range(2, n + 1):
            p_prev, p = p, ((2 * j - 1) * x * p - (j - 1) * p_prev) / j
        # P_n'(x) = n (x P_n - P_{n-1}) / (x^2 - 1); nodes are strictly inside (-1, 1).
        dp = n * (x * p - p_prev) / (x * x - 1.0) if n > 1 else np.ones_like(x)
        return p, dp

    for _ in range(100):
        p, dp = legendre(x)
        dx = p / dp
        x = x - dx
        if np.max(np.abs(dx)) < 1e-15:
            break
    _, dp = legendre(x)
    w = 2.0 / ((1.0 - x * x) * dp * dp)
    return x[::-1].copy(), w[::-1].copy()


def _nodes(lo: float, hi: float, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [lo, hi], exact for polynomials of this degree."""
    x, w = _gauss_legendre(degree // 2 + 1)
    half = 0.5 * (hi - lo)
    return half * x + (hi + lo) * 0.5, half * w


def false_positive_area(threshold: float, bands: int, rows: int) -> float:
    """Area under the candidate curve below the threshold: ``∫₀^threshold p(t) dt``.

    ``p(t) = 1 - (1 - t**rows)**bands`` is a polynomial of degree ``bands * rows``, so a
    Gauss-Legendre rule with ``bands * rows // 2 + 1`` nodes integrates it exactly; the result is
    accurate to floating-point rounding (about 1e-13 relative). It weighs every similarity
    below the threshold equally: the expected false-candidate rate for a pair whose similarity is
    uniform on ``[0, threshold]``, times ``threshold``.

    Args:
        threshold: similarity threshold in ``[0, 1]``.
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``; ``bands * rows <= 16384``.

    Returns:
        The area, in ``[0, threshold]`` (similarity × probability units).

    Complexity: O(bands * rows) after the nodes for that degree are cached (O((b r)^2) once).

    Raises:
        ValueError: a threshold outside ``[0, 1]``, or bad ``bands`` / ``rows``.

    Example:
        >>> round(false_positive_area(0.8, bands=20, rows=5), 4)
        0.2987
        >>> round(false_positive_area(0.5, bands=1, rows=1), 12)  # ∫₀^0.5 t dt
        0.125
    """
    s, b, r = _check_area_args(threshold, bands, rows)
    if s == 0.0:
        return 0.0
    t, w = _nodes(0.0, s, b * r)
    return float(np.dot(w, -np.expm1(b * _log_miss(t, r))))


def false_negative_area(threshold: float, bands: int, rows: int) -> float:
    """Area above the candidate curve above the threshold: ``∫_threshold^1 (1 - p(t)) dt``.

    ``1 - p(t) = (1 - t**rows)**bands`` is a polynomial of degree ``bands * rows``, integrated
    exactly by Gauss-Legendre with ``bands * rows // 2 + 1`` nodes (accurate to rounding).

    Args:
        threshold: similarity threshold in ``[0, 1]``.
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``; ``bands * rows <= 16384``.

    Returns:
        The area, in ``[0, 1 - threshold]``.

    Complexity: O(bands * rows) after the nodes are cached.

    Raises:
        ValueError: a threshold outside ``[0, 1]``, or bad ``bands`` / ``rows``.

    Example:
        >>> f"{false_negative_area(0.8, bands=20, rows=5):.2e}"
        '5.21e-06'
        >>> round(false_negative_area(0.5, bands=1, rows=1), 12)  # ∫_0.5^1 (1 - t) dt
        0.125
    """
    s, b, r = _check_area_args(threshold, bands, rows)
    if s == 1.0:
        return 0.0
    t, w = _nodes(s, 1.0, b * r)
    return float(np.dot(w, np.exp(b * _log_miss(t, r))))


# --------------------------------------------------------------------------- choosing (b, r)


@dataclass(frozen=True)
class LSHParams:
    """A choice of LSH banding for a similarity threshold.

    Attributes:
        bands: number of bands ``b``.
        rows: rows per band ``r``; ``b * r <= num_perm`` (columns past ``b * r`` are unused).
        threshold: the Jaccard similarity threshold the choice was made for.
        num_perm: the signature length it was made for.
        fp_area: :func:`false_positive_area` ``(threshold, b, r)``.
        fn_area: :func:`false_negative_area` ``(threshold, b, r)``.

    Example:
        >>> p = LSHParams(bands=20, rows=5, threshold=0.8, num_perm=100,
        ...               fp_area=0.2987, fn_area=5.21e-06)
        >>> round(p.approx_threshold, 3)
        0.549
    """

    bands: int
    rows: int
    threshold: float
    num_perm: int
    fp_area: float
    fn_area: float

    @property
    def approx_threshold(self) -> float:
        """``(1/bands)**(1/rows)``: roughly where the candidate curve is steepest."""
        return (1.0 / self.bands) ** (1.0 / self.rows)

    def candidate_probability(self, similarity: float | np.ndarray) -> float | np.ndarray:
        """:func:`candidate_probability` with this choice's ``bands`` and ``rows``.

        Example:
            >>> f"{optimal_params(0.8, 128).candidate_probability(0.8):.3f}"
            '0.399'
        """
        return candidate_probability(similarity, self.bands, self.rows)


def _check_weight(name: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    v = float(value)
    if not (v >= 0.0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    return v


def _all_weighted_errors(
    s: float, num_perm: int, fp_weight: float, fn_weight: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted error of every (b, r) with b * r <= num_perm, as flat arrays (b, r, error)."""
    # One node set, exact for the largest degree num_perm, serves every (b, r).
    x, w = _gauss_legendre(num_perm // 2 + 1)
    t_fp, w_fp = 0.5 * s * (x + 1.0), 0.5 * s * w
    t_fn, w_fn = s + 0.5 * (1.0 - s) * (x + 1.0), 0.5 * (1.0 - s) * w
    all_b, all_r, all_err = [], [], []
    for r in range(1, num_perm + 1):
        b = np.arange(1, num_perm // r + 1, dtype=np.float64)
        lm_fp, lm_fn = _log_miss(t_fp, r), _log_miss(t_fn, r)
        err = np.empty(b.size)
        # Chunks of bands bound the (bands x nodes) temporaries for large num_perm.
        for lo in range(0, b.size, 256):
            bb = b[lo : lo + 256, None]
            fp = (-np.expm1(bb * lm_fp)) @ w_fp
            fn = np.exp(bb * lm_fn) @ w_fn
            err[lo : lo + 256] = fp_weight * fp + fn_weight * fn
        all_b.append(b.astype(np.int64))
        all_r.append(np.full(b.size, r, dtype=np.int64))
        all_err.append(err)
    return np.concatenate(all_b), np.concatenate(all_r), np.concatenate(all_err)


def optimal_params(
    threshold: float,
    num_perm: int,
    *,
    fp_weight: float = 0.5,
    fn_weight: float = 0.5,
) -> LSHParams:
    """Choose ``(bands, rows)`` with ``bands * rows <= num_perm`` for a similarity threshold.

    Minimises ``fp_weight * false_positive_area + fn_weight * false_negative_area`` over every
    ``b >= 1, r >= 1, b * r <= num_perm``, i.e.

    ``fp_weight * ∫₀^s p(t) dt + fn_weight * ∫_s^1 (1 - p(t)) dt``, with
    ``p(t) = 1 - (1 - t^r)^b``.

    ``threshold`` is the Jaccard itself. ``neardup dedup`` and ``neardup tune`` call this with
    the Jaccard their verification implies (half the LCS threshold by default: 32 × 4 at
    LCS 0.8, where ``optimal_params(0.8, 128)`` gives 9 × 13); in Python,
    :meth:`neardup.settings.Settings.banding` gives dedup's bands.

    Ties are broken deterministically: smaller weighted error first, then larger ``b * r`` (use
    more of the signature), then smaller ``r``. Errors within a relative 1e-9 of the minimum
    count as equal, since they are equal up to quadrature rounding. Raise ``fn_weight`` when
    missed duplicates are costly, ``fp_weight`` when verifying candidates is.

    Args:
        threshold: Jaccard similarity threshold, in ``(0, 1)`` exclusive.
        num_perm: signature length, an integer in ``1..4096``.
        fp_weight: weight of the false-positive area, ``>= 0``.
        fn_weight: weight of the false-negative area, ``>= 0``; not both weights 0.

    Returns:
        An :class:`LSHParams` with the chosen bands and rows and their two areas.

    Complexity: O(num_perm² · log num_perm) arithmetic (num_perm · H(num_perm) pairs times
    num_perm / 2 quadrature nodes); about a millisecond per call for num_perm = 128 and a
    couple of seconds for 4096.

    Raises:
        ValueError: a threshold outside ``(0, 1)``, ``num_perm`` outside ``1..4096``, a negative
            or non-finite weight, or both weights 0.

    Example:
        >>> p = optimal_params(0.8, 128)
        >>> (p.bands, p.rows, p.bands * p.rows <= 128)
        (9, 13, True)
        >>> round(p.approx_threshold, 2)
        0.84
    """
    s = _check_unit_interval("threshold", threshold, open_interval=True)
    n = _check_positive_int("num_perm", num_perm, MAX_NUM_PERM)
    fpw = _check_weight("fp_weight", fp_weight)
    fnw = _check_weight("fn_weight", fn_weight)
    if fpw == 0.0 and fnw == 0.0:
        raise ValueError("fp_weight and fn_weight must not both be 0, got 0 and 0")
    return _optimal(s, n, fpw, fnw)


@lru_cache(maxsize=64)
def _optimal(s: float, n: int, fpw: float, fnw: float) -> LSHParams:
    """:func:`optimal_params` of checked arguments, remembered: a run's tasks ask for their
    banding once a batch, and each answer costs about 2 ms."""
    b, r, err = _all_weighted_errors(s, n, fpw, fnw)
    tied = err <= err.min() * (1.0 + _TIE_RTOL)
    b, r = b[tied], r[tied]
    # lexsort: last key is primary -> larger b*r first, then smaller r.
    best = np.lexsort((r, -(b * r)))[0]
    bands, rows = int(b[best]), int(r[best])
    return LSHParams(
        bands=bands,
        rows=rows,
        threshold=s,
        num_perm=n,
        fp_area=false_positive_area(s, bands, rows),
        fn_area=false_negative_area(s, bands, rows),
    )


# --------------------------------------------------------------------------- reporting


def probability_table(
    bands: int,
    rows: int,
    similarities: tuple[float, ...] | list[float] | np.ndarray = _DEFAULT_SIMILARITIES,
) -> list[tuple[float, float]]:
    """``(s, p(s))`` rows for printing how a banding treats a few similarities.

    Args:
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``.
        similarities: the similarities to tabulate, each in ``[0, 1]``.

    Returns:
        A list of ``(similarity, candidate probability)`` float tuples, in input order.

    Complexity: O(len(similarities)).

    Raises:
        ValueError: as :func:`candidate_probability`.

    Example:
        >>> [(s, round(p, 4)) for s, p in probability_table(20, 5, (0.3, 0.8))]
        [(0.3, 0.0475), (0.8, 0.9996)]
    """
    s = np.atleast_1d(np.asarray(similarities, dtype=np.float64)).ravel()
    p = candidate_probability(s, bands, rows)
    return [(float(a), float(c)) for a, c in zip(s, p)]


def plot_s_curve(
    bands: int,
    rows: int,
    path: str | os.PathLike[str],
    threshold: float | None = None,
) -> Path:
    """Write a PNG of the candidate curve ``p(s) = 1 - (1 - s^rows)^bands`` over ``s ∈ [0, 1]``.

    Marks ``(1/bands)^(1/rows)`` and, if given, ``threshold`` (with its false-positive area
    shaded below the threshold and its false-negative area shaded above). Uses matplotlib's Agg
    canvas directly (no pyplot state, no display) and writes the PNG without the software /
    timestamp metadata, so the same arguments give a byte-identical file.

    Args:
        bands: number of bands, ``>= 1``.
        rows: rows per band, ``>= 1``.
        path: output file; parent directories must exist.
        threshold: optional similarity threshold in ``[0, 1]`` to mark.

    Returns:
        ``path`` as a :class:`pathlib.Path`.

    Complexity: O(1) (a fixed 1001-point curve).

    Raises:
        ValueError: bad ``bands`` / ``rows`` / ``threshold``.

    Example:
        >>> import tempfile, pathlib
        >>> out = plot_s_curve(20, 5, pathlib.Path(tempfile.mkdtemp()) / "s.png", threshold=0.8)
        >>> out.read_bytes()[:4]
        b'\\x89PNG'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    b, r = _check_bands_rows(bands, rows)
    thr = None if threshold is None else _check_unit_interval("threshold", threshold)
    s = np.linspace(0.0, 1.0, 1001)
    p = candidate_probability(s, b, r)
    approx = (1.0 / b) ** (1.0 / r)

    fig = Figure(figsize=(6.4, 4.4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(s, p, color="tab:blue", lw=2, label=r"$p(s) = 1-(1-s^r)^b$")
    ax.axvline(approx, color="tab:gray", ls=":", label=f"$(1/b)^{{1/r}}$ = {approx:.3f}")
    if thr is not None:
        below, above = s <= thr, s >= thr
        ax.fill_between(s[below], 0.0, p[below], color="tab:red", alpha=0.25, label="FP area")
        ax.fill_between(s[above], p[above], 1.0, color="tab:orange", alpha=0.25, label="FN area")
        ax.axvline(thr, color="tab:red", ls="--", label=f"threshold = {thr:g}")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("Jaccard similarity s")
    ax.set_ylabel("probability of becoming a candidate")
    ax.set_title(f"LSH candidate curve: b = {b} bands, r = {r} rows")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    out = Path(path)
    fig.savefig(out, format="png", metadata={"Software": None})
    return out
