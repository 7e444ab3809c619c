"""Tests for neardup.lsh: band arithmetic, areas, the (bands, rows) choice and the plot."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from neardup import lsh
from neardup.lsh import (
    LSHParams,
    candidate_probability,
    false_negative_area,
    false_negative_probability,
    false_positive_area,
    false_positive_probability,
    optimal_params,
    plot_s_curve,
    probability_table,
)


def _truncate(x: float, decimals: int) -> float:
    return math.floor(x * 10**decimals) / 10**decimals


# --------------------------------------------------------------------------- the seed's example


def test_seed_example_b20_r5():
    # 0.8**5 = 0.32768 agrees per band; (1 - 0.32768)**20 misses every band.
    miss = false_negative_probability(0.8, 20, 5)
    assert miss == pytest.approx((1 - 0.8**5) ** 20, rel=1e-12)
    # The seed prints 0.00035 and 0.0474: the exact values truncated to 2 significant digits.
    assert _truncate(miss, 5) == 0.00035
    assert f"{miss:.2g}" == "0.00036"  # 0.000356...
    fp = false_positive_probability(0.3, 20, 5)
    assert fp == pytest.approx(1 - (1 - 0.3**5) ** 20, rel=1e-12)
    assert _truncate(fp, 4) == 0.0474
    assert 1 - (1 - 0.3**5) ** 20 == pytest.approx(0.0474, abs=1e-4)
    assert candidate_probability(0.8, 20, 5) == pytest.approx(0.99965, abs=1e-5)


def test_scalar_and_array_forms():
    assert isinstance(candidate_probability(0.5, 4, 3), float)
    s = np.linspace(0, 1, 11).reshape(11, 1)
    p = candidate_probability(s, 4, 3)
    assert isinstance(p, np.ndarray) and p.shape == s.shape
    np.testing.assert_allclose(p, 1 - (1 - s**3) ** 4, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(p + false_negative_probability(s, 4, 3), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(false_positive_probability(s, 4, 3), p)
    assert candidate_probability(0.0, 4, 3) == 0.0
    assert candidate_probability(1.0, 4, 3) == 1.0
    assert false_negative_probability(1.0, 4, 3) == 0.0
    assert np.all(np.diff(candidate_probability(np.linspace(0, 1, 101), 7, 3)) >= 0)


def test_tiny_probabilities_keep_precision():
    # 1 - (1 - 1e-20)**b computed naively is 0.
    assert candidate_probability(1e-4, 3, 5) == pytest.approx(3e-20, rel=1e-9)


@pytest.mark.parametrize(
    "bands, rows, s",
    [
        (20, 5, 0.5),
        (20, 5, 0.6),
        (10, 3, 0.4),
        (4, 8, 0.9),
        (50, 2, 0.15),
        (1, 1, 0.3),
        (9, 13, 0.8),
    ],
)
def test_candidate_probability_matches_monte_carlo(bands, rows, s):
    trials = 20_000
    rng = np.random.default_rng(1000 * bands + rows)
    agree = rng.random((trials, bands, rows)) < s  # each position agrees independently w.p. s
    observed = np.mean(agree.all(axis=2).any(axis=1))
    p = candidate_probability(s, bands, rows)
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(observed - p) <= 4 * se, (observed, p, se)


# --------------------------------------------------------------------------- areas


def test_gauss_legendre_nodes_match_numpy():
    for n in (1, 2, 3, 7, 65, 200):
        x, w = lsh._gauss_legendre(n)
        xr, wr = np.polynomial.legendre.leggauss(n)
        np.testing.assert_allclose(x, xr, atol=1e-14)
        np.testing.assert_allclose(w, wr, atol=1e-13)


@pytest.mark.parametrize("bands, rows, s", [(20, 5, 0.8), (9, 13, 0.8), (3, 2, 0.3), (1, 40, 0.95)])
def test_areas_match_fine_grid(bands, rows, s):
    def trapezoid(lo, hi, f):
        t = np.linspace(lo, hi, 400_001)
        y = f(t)
        return float(np.sum((y[1:] + y[:-1]) * 0.5 * np.diff(t)))

    fp = trapezoid(0, s, lambda t: 1 - (1 - t**rows) ** bands)
    fn = trapezoid(s, 1, lambda t: (1 - t**rows) ** bands)
    assert false_positive_area(s, bands, rows) == pytest.approx(fp, abs=1e-9)
    assert false_negative_area(s, bands, rows) == pytest.approx(fn, abs=1e-9)


def test_areas_closed_forms():
    for s in (0.1, 0.5, 0.8):
        for r in (1, 5, 128):  # b = 1: ∫₀^s t^r dt
            assert false_positive_area(s, 1, r) == pytest.approx(s ** (r + 1) / (r + 1), rel=1e-10)
        for b in (1, 5, 128):  # r = 1: ∫_s^1 (1 - t)^b dt
            expected = (1 - s) ** (b + 1) / (b + 1)
            assert false_negative_area(s, b, 1) == pytest.approx(expected, rel=1e-10)
    assert false_positive_area(0.0, 3, 3) == 0.0
    assert false_negative_area(1.0, 3, 3) == 0.0
    # Above the threshold, the area under p and the false-negative area fill [s, 1] x [0, 1].
    s, b, r = 0.6, 7, 4
    t, w = np.polynomial.legendre.leggauss(40)  # exact for degree b * r = 28
    under = 0.5 * (1 - s) * np.dot(w, candidate_probability(s + 0.5 * (1 - s) * (t + 1), b, r))
    assert under + false_negative_area(s, b, r) == pytest.approx(1 - s, rel=1e-12)


# --------------------------------------------------------------------------- optimal_params


def _brute_force_errors(threshold, num_perm, fpw, fnw):
    out = {}
    for r in range(1, num_perm + 1):
        for b in range(1, num_perm // r + 1):
            out[(b, r)] = fpw * false_positive_area(threshold, b, r) + fnw * false_negative_area(
                threshold, b, r
            )
    return out


@pytest.mark.parametrize(
    "threshold, num_perm, fpw, fnw",
    [
        (0.8, 128, 0.5, 0.5),
        (0.5, 64, 0.5, 0.5),
        (0.9, 100, 0.5, 0.5),
        (0.3, 40, 0.5, 0.5),
        (0.7, 64, 0.2, 0.8),
        (0.7, 64, 0.9, 0.1),
        (0.6, 17, 1.0, 0.0),
        (0.6, 17, 0.0, 3.0),
        (0.5, 1, 0.5, 0.5),
    ],
)
def test_optimal_params_is_brute_force_minimum(threshold, num_perm, fpw, fnw):
    p = optimal_params(threshold, num_perm, fp_weight=fpw, fn_weight=fnw)
    assert p.bands * p.rows <= num_perm
    assert (p.threshold, p.num_perm) == (threshold, num_perm)
    assert p.fp_area == false_positive_area(threshold, p.bands, p.rows)
    assert p.fn_area == false_negative_area(threshold, p.bands, p.rows)
    errors = _brute_force_errors(threshold, num_perm, fpw, fnw)
    best = min(errors.values())
    chosen = fpw * p.fp_area + fnw * p.fn_area
    assert chosen <= best * (1 + 1e-9) + 1e-300
    # Among (near-)ties the rule is: larger b*r, then smaller r.
    tied = [k for k, e in errors.items() if e <= best * (1 + 1e-9)]
    assert (p.bands, p.rows) == min(tied, key=lambda br: (-br[0] * br[1], br[1]))


def test_optimal_params_extreme_weights():
    only_fn = optimal_params(0.5, 128, fp_weight=0.0, fn_weight=1.0)
    assert (only_fn.bands, only_fn.rows) == (128, 1)  # as many one-row bands as possible
    only_fp = optimal_params(0.5, 128, fp_weight=1.0, fn_weight=0.0)
    assert (only_fp.bands, only_fp.rows) == (1, 128)  # one band of every row
    assert optimal_params(0.5, 1).bands == optimal_params(0.5, 1).rows == 1


def test_optimal_params_weights_shift_the_tradeoff():
    fewer_misses = optimal_params(0.7, 128, fp_weight=0.1, fn_weight=0.9)
    balanced = optimal_params(0.7, 128)
    fewer_false = optimal_params(0.7, 128, fp_weight=0.9, fn_weight=0.1)
    assert fewer_misses.fn_area <= balanced.fn_area <= fewer_false.fn_area
    assert fewer_misses.fp_area >= balanced.fp_area >= fewer_false.fp_area


def test_optimal_params_threshold_08_num_perm_128(capsys):
    picks = {}
    for t in (0.5, 0.7, 0.8, 0.9):
        p = optimal_params(t, 128)
        picks[t] = p
        with capsys.disabled():
            print(
                f"\noptimal_params({t}, 128): bands={p.bands} rows={p.rows} "
                f"approx_threshold={p.approx_threshold:.4f} fp_area={p.fp_area:.5f} "
                f"fn_area={p.fn_area:.5f}"
            )
    p = picks[0.8]
    assert abs(p.approx_threshold - 0.8) < 0.05
    assert p.approx_threshold == pytest.approx((1 / p.bands) ** (1 / p.rows))
    # The curve is steep around the threshold: rare misses well above it, rare candidates below.
    assert false_negative_probability(0.95, p.bands, p.rows) < 0.01
    assert false_positive_probability(0.6, p.bands, p.rows) < 0.02
    for t, q in picks.items():
        assert abs(q.approx_threshold - t) < 0.06
    # Higher thresholds pick longer bands.
    rows = [picks[t].rows for t in (0.5, 0.7, 0.8, 0.9)]
    assert rows == sorted(rows)


def test_optimal_params_is_deterministic_and_frozen():
    a, b = optimal_params(0.8, 128), optimal_params(0.8, 128)
    assert a == b
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.bands = 3  # type: ignore[misc]
    assert a.candidate_probability(0.8) == candidate_probability(0.8, a.bands, a.rows)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("threshold", [0, 0.0, 1, 1.0, -0.2, 1.5, float("nan"), "0.5", True, None])
def test_optimal_params_rejects_threshold(threshold):
    with pytest.raises(ValueError, match=r"threshold .*\(0, 1\)"):
        optimal_params(threshold, 128)


@pytest.mark.parametrize("num_perm", [0, -1, 4097, 1.5, True, "128", None])
def test_optimal_params_rejects_num_perm(num_perm):
    with pytest.raises(ValueError, match=r"num_perm .*1\.\.4096"):
        optimal_params(0.8, num_perm)


def test_optimal_params_accepts_numpy_scalars():
    assert optimal_params(np.float64(0.8), np.int64(128)) == optimal_params(0.8, 128)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"fp_weight": -0.1}, "fp_weight must be a finite number >= 0, got -0.1"),
        ({"fn_weight": float("inf")}, "fn_weight must be a finite number >= 0, got inf"),
        ({"fn_weight": float("nan")}, "fn_weight"),
        ({"fp_weight": 0, "fn_weight": 0}, "must not both be 0"),
        ({"fp_weight": "1"}, "fp_weight"),
    ],
)
def test_optimal_params_rejects_weights(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        optimal_params(0.8, 128, **kwargs)


def test_probability_functions_validate():
    for f in (candidate_probability, false_negative_probability, false_positive_probability):
        with pytest.raises(ValueError, match=r"similarity must be in \[0, 1\], got 1.5"):
            f(1.5, 20, 5)
        with pytest.raises(ValueError, match=r"similarity must be in \[0, 1\], got -0.1"):
            f(np.array([0.5, -0.1]), 20, 5)
        with pytest.raises(ValueError, match="similarity"):
            f(float("nan"), 20, 5)
        with pytest.raises(ValueError, match="bands must be an integer >= 1, got 0"):
            f(0.5, 0, 5)
        with pytest.raises(ValueError, match="rows"):
            f(0.5, 20, 2.5)
    with pytest.raises(ValueError, match="threshold must be in"):
        false_positive_area(1.2, 20, 5)
    with pytest.raises(ValueError, match=r"bands \* rows must be in 1..16384, got 20000"):
        false_negative_area(0.5, 200, 100)


# --------------------------------------------------------------------------- reporting


def test_probability_table():
    table = probability_table(20, 5)
    sims = [s for s, _ in table]
    assert sims[:9] == pytest.approx([0.1 * k for k in range(1, 10)])
    probs = [p for _, p in table]
    assert probs == sorted(probs)
    assert dict(probability_table(20, 5, [0.3]))[0.3] == pytest.approx(0.04749, abs=1e-5)


def test_plot_s_curve_writes_deterministic_png(tmp_path):
    a = plot_s_curve(20, 5, tmp_path / "a.png", threshold=0.8)
    b = plot_s_curve(20, 5, str(tmp_path / "b.png"), threshold=0.8)
    assert a == tmp_path / "a.png"
    data = a.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert data == b.read_bytes()
    c = plot_s_curve(9, 13, tmp_path / "c.png")
    assert c.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="threshold"):
        plot_s_curve(20, 5, tmp_path / "d.png", threshold=2.0)
    assert isinstance(LSHParams(20, 5, 0.8, 100, 0.0, 0.0).approx_threshold, float)
