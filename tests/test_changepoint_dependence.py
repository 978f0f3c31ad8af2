"""The dependence factor (overlapping batch means of an indicator) against a plain reference:
its sum of squares is formed without BLAS (whose threads cost more than the sum), so it may
differ from a BLAS dot in the last bits only."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from pilot_sys.stats.changepoint import dependence_factor


def _reference(indicator: np.ndarray, cuts: tuple[int, ...]) -> float:
    m = indicator.size
    batch = int(4.0 * (m / 100.0) ** (2.0 / 9.0))
    bounds = [0, *sorted(c for c in cuts if 0 < c < m), m]
    sums = sliding_window_view(indicator.astype(np.float64), batch).sum(axis=1)
    variance = 0.0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        p = indicator[a:b].mean()
        variance += (b - a) * p * (1.0 - p)
        sums[a : min(b, sums.size)] -= batch * p  # windows starting in this piece
    return max(1.0, float(np.sum(sums**2)) / (batch * sums.size) / (variance / m))


@pytest.mark.parametrize("m", [500, 12_000, 200_000])
def test_dependence_factor_is_overlapping_batch_means(m: int) -> None:
    rng = np.random.default_rng(m)
    independent = rng.random(m) < 0.3
    runs = np.repeat(rng.random(m // 50 + 1) < 0.5, 50)[:m]  # long runs: strongly dependent
    for indicator, cuts in [(independent, ()), (runs, (m // 3,)), (runs, (m // 4, m // 2))]:
        counts = np.cumsum(indicator, dtype=np.int32)
        got = dependence_factor(counts, cuts)
        assert got == pytest.approx(_reference(indicator, cuts), rel=1e-12)
    assert dependence_factor(np.cumsum(runs, dtype=np.int32), ()) > 4.0
