"""The two ways of computing window outliers (sorted windows, rolling windows) give one mask."""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import outliers


@pytest.mark.parametrize(
    "kind", ["lognormal", "quantised", "ramp_then_heavy_tails", "spikes", "constant"]
)
def test_rolling_windows_flag_what_sorted_windows_flag(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    n = 40_000
    x = {
        "lognormal": rng.lognormal(0, 1, n),
        "quantised": np.round(rng.normal(0, 1, n), 1),
        "ramp_then_heavy_tails": np.concatenate(
            [np.linspace(0, 100, n // 4), 100 + rng.standard_t(2, n - n // 4)]
        ),
        "spikes": np.where(rng.random(n) < 0.002, 50.0, 1.0) + rng.normal(0, 0.1, n),
        "constant": np.ones(n),
    }[kind]
    monkeypatch.setattr(outliers, "ROLLING_MIN", 0)
    rolling = outliers.window_outliers(x)
    monkeypatch.setattr(outliers, "ROLLING_MIN", 10**9)
    sorted_ = outliers.window_outliers(x)
    assert np.array_equal(rolling, sorted_)
    if kind == "spikes":
        assert rolling.sum() >= 0.0015 * n  # the spikes are found, not just equal nothing


def test_outliers_near_change_points_are_those_of_the_whole_series() -> None:
    from pilot_sys.stats import change_kind

    rng = np.random.default_rng(4)
    reach = change_kind.EVIDENCE_REACH
    for n, cuts in [(6 * reach, [5, 3 * reach, 6 * reach - 10]), (3 * reach, [reach // 2])]:
        x = rng.standard_t(2, n)
        near = change_kind._outliers_near(x, cuts, 200)
        whole = outliers.window_outliers(x, 200)
        needed = np.zeros(n, dtype=bool)
        for c in cuts:
            needed[max(c - reach, 0) : c + reach] = True
        assert np.array_equal(near[needed], whole[needed]) and whole[needed].any()
        assert not near[~needed].any()


@pytest.mark.parametrize("window", [200, 57, 10])
def test_running_order_statistics_are_pandas_rolling_quantiles_bit_for_bit(window: int) -> None:
    """The long-series path (scipy's rank filter) against pandas' rolling median and quantiles,
    the path it replaced: the same floats, so a reading at a bound is judged as before."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(8)
    for x in (rng.normal(5.0, 1e3, 30_000), np.round(rng.normal(0, 1, 30_000), 2)):
        rolling = pd.Series(x).rolling(window)
        spread = outliers.DEFAULT_SPREAD
        med = rolling.median().to_numpy()[window - 1 :]
        p1 = rolling.quantile(0.01).to_numpy()[window - 1 :]
        p99 = rolling.quantile(0.99).to_numpy()[window - 1 :]
        lo, hi = outliers._bounds_rolling(x, window, spread)
        assert np.array_equal(lo, med - spread * (p99 - p1))
        assert np.array_equal(hi, med + spread * (p99 - p1))


@pytest.mark.parametrize("window", [200, 57, 10, 2])
def test_running_extremes_of_scipy_are_those_of_the_block_maxima(window: int) -> None:
    """The long-series path's highest lower bound and lowest upper bound over the windows that
    hold each reading, against the van Herk/Gil-Werman blocks of the short-series path."""
    rng = np.random.default_rng(window)
    bounds = np.round(rng.normal(size=5000), 1)  # ties too
    for highest in (True, False):
        want = outliers._rolling_extreme(bounds, window, highest)
        got = outliers._running_extreme(bounds, window, highest)
        assert np.array_equal(got, want)
    naive = [bounds[max(j - window + 1, 0) : j + 1].max() for j in range(bounds.size + window - 1)]
    assert np.array_equal(outliers._running_extreme(bounds, window, True), naive)


@pytest.mark.parametrize("window", [200, 57, 10, 2])
def test_running_order_statistics_in_numpys_arithmetic_are_the_sorted_windows_bit_for_bit(
    window: int,
) -> None:
    """A short stretch of a long series takes the rank filter in np.quantile's and np.median's
    arithmetic: the bounds of sorting every window (the short-series path), the same floats."""
    rng = np.random.default_rng(window + 1)
    spread = outliers.DEFAULT_SPREAD
    for x in (
        rng.normal(5.0, 1e3, 6000),
        np.round(rng.normal(0, 1, 6000), 2),
        rng.lognormal(0, 2, 6000),
        np.concatenate([np.linspace(0, 1e6, 3000), 1e6 + rng.standard_t(2, 3000)]),
    ):
        want = outliers._bounds_sorted(x, window, spread)
        got = outliers._bounds_rolling(x, window, spread, numpy_arithmetic=True)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # the pandas arithmetic differs from numpy's (p1's weight is above 1/2), so the test above
    # can tell the two apart
    if window in (200, 57):
        x = rng.normal(5.0, 1e3, 6000)
        got = outliers._quantile_of_windows(x, 0.01, window, numpy_arithmetic=True)
        assert np.array_equal(got, np.quantile(outliers.sliding_window_view(x, window), 0.01, 1))
        assert not np.array_equal(got, outliers._quantile_of_windows(x, 0.01, window))


def test_a_short_stretch_flags_the_same_readings_either_way() -> None:
    rng = np.random.default_rng(12)
    x = np.where(rng.random(9000) < 0.003, 40.0, 0.0) + rng.standard_t(3, 9000)
    assert x.size < outliers.ROLLING_MIN
    sorted_ = outliers.window_outliers(x)
    assert np.array_equal(outliers.window_outliers(x, rolling=True), sorted_)
    assert sorted_.sum() >= 20
