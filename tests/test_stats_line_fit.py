"""line_fit against scipy.stats.linregress (the reference it replaces on the session's path)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import linregress

from pilot_sys.stats.line_fit import line_fit


@pytest.mark.parametrize("n", [3, 7, 200])
def test_matches_linregress(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.uniform(1, 100, n)
    y = 0.02 + x / 350.0 + rng.normal(0, 0.01, n)
    ours, ref = line_fit(x, y), linregress(x, y)
    assert ours.slope == pytest.approx(ref.slope, rel=1e-9)
    assert ours.intercept == pytest.approx(ref.intercept, rel=1e-9, abs=1e-12)
    assert ours.stderr == pytest.approx(ref.stderr, rel=1e-9)
    assert ours.intercept_stderr == pytest.approx(ref.intercept_stderr, rel=1e-9)


def test_hand_computed_exact_line() -> None:
    fit = line_fit(np.array([1.0, 2.0, 3.0]), np.array([3.0, 5.0, 7.0]))
    assert (fit.slope, fit.intercept, fit.stderr) == (2.0, 1.0, 0.0)


def test_needs_distinct_x() -> None:
    with pytest.raises(ValueError, match="distinct"):
        line_fit(np.ones(4), np.arange(4.0))
