"""The fits from moments (``kind_moments``) against the residual vectors (``change_kind``'s
direct fits): the same figures to about 1e-8, and the direct ones where moments lose digits."""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import change_kind
from pilot_sys.stats.kind_moments import moment_fits


def _shapes(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    t = np.arange(n, dtype=np.float64)
    k = n // 3
    return {
        "noise": rng.normal(5.0, 1.0, n),
        "step": np.where(t < k, 10.0, 13.0) + rng.normal(0, 1, n),
        "kink": np.where(t < k, 0.0, 0.01 * (t - k)) + rng.normal(0, 0.5, n),
        "ramp": 0.05 * t + rng.normal(0, 2, n),
        "spread": np.where(t < k, 1.0, 4.0) * rng.normal(0, 1, n) + 100.0,
        "heavy tails": 1e6 + rng.standard_t(2, n),
        "autocorrelated": np.cumsum(rng.normal(0, 1, n)) * 0.1 + rng.normal(0, 1, n),
        "quantised": np.round(rng.normal(3.0, 0.4, n), 1),
    }


@pytest.mark.parametrize("n", [9, 40, 777, 6000])
def test_moment_fits_match_the_fitted_residuals(n: int) -> None:
    rng = np.random.default_rng(n)
    for name, x in _shapes(rng, n).items():
        for begin, index, end in [(0, n // 3, n), (0, 3, n), (n // 5, n - 3, n)]:
            outliers = change_kind._outliers_near(x, [index], min(200, max(n // 5, 2)))
            y, t, k = change_kind._around(x, begin, index, end, outliers)
            rounding = y.size * (64 * np.finfo(np.float64).eps * np.max(np.abs(y))) ** 2
            fast = moment_fits(y, t, k, rounding)
            assert fast is not None, name
            direct = change_kind._direct_fits(y, t, k)
            for got, want in zip(fast, direct, strict=True):
                assert np.allclose(got, want, rtol=1e-8, atol=1e-9 * np.std(y)), (name, got, want)


def test_the_kinds_are_those_of_the_direct_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ramp cut into a staircase, a step and a spread change: the drop loop ends on the same
    change points and kinds whichever way the fits are computed."""
    rng = np.random.default_rng(12)
    x = np.concatenate([np.linspace(0, 40, 3000), np.full(3000, 40.0), np.full(2000, 46.0)])
    x[6000:] += rng.normal(0, 3, 2000)
    x[:6000] += rng.normal(0, 1, 6000)
    cuts = [*range(150, 3000, 150), 6000]
    fast = change_kind.classify_changes(x, cuts)
    monkeypatch.setattr(change_kind, "moment_fits", lambda *a: None)
    direct = change_kind.classify_changes(x, cuts)
    assert [(k.index, k.kind) for k in fast] == [(k.index, k.kind) for k in direct]
    assert len(fast) <= 3 and (fast[-1].index, fast[-1].kind) == (6000, "level")
    for a, b in zip(fast, direct, strict=True):
        assert a.p_value == pytest.approx(b.p_value, rel=1e-6)


@pytest.mark.parametrize(
    "y",
    [
        np.arange(100, dtype=np.float64),  # a noiseless line: residuals are rounding error
        np.concatenate([np.zeros(50), np.full(50, 1e6)]) + np.tile([1e-4, -1e-4], 50),
    ],
)
def test_moments_decline_where_cancellation_would_show(y: np.ndarray) -> None:
    t = np.arange(y.size, dtype=np.float64) - 50
    rounding = y.size * (64 * np.finfo(np.float64).eps * np.max(np.abs(y))) ** 2
    assert moment_fits(y, t, 50, rounding) is None
