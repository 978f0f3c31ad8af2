"""The batched seeded-interval scan of EDM returns exactly what the one-interval path returned.

``_run(..., batched=False)`` is the original scan (one selection, cumulative sum and decision per
seeded interval), kept as the reference; ``detect`` and ``IncrementalEDM`` use the batched one.
Results are compared whole (change points, segments, statistics and p-values bit for bit).
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_batch as batch
from pilot_sys.stats import changepoint as cp
from pilot_sys.stats._changepoint_ranks import keys_at, position_keys


def reference(x: np.ndarray, **kw: object) -> cp.ChangePoints:
    """The one-interval-at-a-time path with ``detect``'s defaults."""
    args: dict[str, object] = {
        "min_size": None,
        "penalty": None,
        "significance": cp.DEFAULT_SIGNIFICANCE,
        "scale": True,
        "dependence": True,
        "statistic": "sign",
        "median_scan": None,
        "seeded": True,
        "edges": True,
    }
    args.update(kw)
    return cp._run(x, batched=False, **args)  # type: ignore[arg-type]


def mixture(rng: np.random.Generator) -> np.ndarray:
    """A random series: noise family, then level shifts, ramps, spread changes, bursts, constant
    stretches and quantisation (ties), each with some probability; n from 20 to 3000."""
    n = int(np.exp(rng.uniform(np.log(20), np.log(3000))))
    noise = rng.choice(["normal", "t2", "cauchy", "lognormal", "ar1"])
    if noise == "normal":
        x = rng.standard_normal(n)
    elif noise == "t2":
        x = rng.standard_t(2, n)
    elif noise == "cauchy":
        x = rng.standard_cauchy(n)
    elif noise == "lognormal":
        x = rng.lognormal(0.0, 0.7, n)
    else:
        e = rng.standard_normal(n)
        x = np.empty(n)
        x[0] = e[0]
        for i in range(1, n):
            x[i] = 0.6 * x[i - 1] + e[i]
    level = 0.1 + rng.exponential(1.0)
    for _ in range(int(rng.integers(0, 4))):  # level shifts
        x[int(rng.integers(0, n)) :] += rng.normal(0.0, level)
    if rng.random() < 0.4:  # warm-up ramp
        w = int(rng.integers(1, max(2, n // 5)))
        x[:w] += np.linspace(rng.normal(0.0, 3 * level), 0.0, w)
    if rng.random() < 0.3:  # cool-down
        w = int(rng.integers(1, max(2, n // 10)))
        x[n - w :] += rng.normal(0.0, 2 * level)
    if rng.random() < 0.3:  # spread change
        x[int(rng.integers(0, n)) :] *= rng.choice([0.3, 2.0, 4.0])
    if rng.random() < 0.2:  # burst
        a = int(rng.integers(0, n))
        x[a : a + int(rng.integers(1, n // 4 + 2))] += 2 * level
    if rng.random() < 0.25:  # constant stretch (all tied)
        a = int(rng.integers(0, n))
        x[a : a + int(rng.integers(1, n // 3 + 2))] = x[a]
    if rng.random() < 0.35:  # quantised readings: ties everywhere
        x = np.round(x / rng.choice([0.05, 0.5, 1.0]))
    return x


def test_batched_detect_matches_reference_on_random_mixtures() -> None:
    rng = np.random.default_rng(20261121)
    sizes, with_ties = [], 0
    for i in range(320):
        x = mixture(rng)
        sizes.append(x.size)
        with_ties += int(np.unique(x).size < x.size)
        edges = i % 4 != 3  # a quarter without the edge intervals
        got = cp.detect(x, edges=edges)
        want = reference(x, edges=edges)
        assert got == want, f"series {i} (n = {x.size}, edges = {edges}): {got.changepoints} != {want.changepoints}"
    # The mixture really covers what it claims: short and long series, many with ties.
    assert min(sizes) < 40 and max(sizes) > 2000 and with_ties > 80


def test_batched_matches_reference_with_other_parameters() -> None:
    rng = np.random.default_rng(7)
    for i in range(40):
        x = mixture(rng)
        kw = [
            {"scale": False},
            {"dependence": False},
            {"min_size": 12},
            {"penalty": 1.6},
            {"significance": 0.05},
        ][i % 5]
        assert cp.detect(x, **kw) == reference(x, **kw), (i, kw)


def test_reference_switch_takes_the_old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without this the comparisons above could compare the batched path with itself."""
    calls: list[int] = []
    original = cp._scan_intervals

    def counting(*args: object, **kwargs: object) -> list[cp._ScanResult]:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cp, "_scan_intervals", counting)
    x = np.random.default_rng(3).standard_normal(1000)
    reference(x)
    assert calls == []
    cp.detect(x)
    assert len(calls) == 3  # seeded lengths 64, 128 and 256 at n = 1000 (min_size 16)


def test_small_chunks_give_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row chunking that bounds memory for large n changes nothing."""
    rng = np.random.default_rng(11)
    series = [mixture(rng) for _ in range(12)]
    wanted = [cp.detect(x) for x in series]
    monkeypatch.setattr(cp, "_BATCH_READINGS", 100)  # one row per call, or two
    assert [cp.detect(x) for x in series] == wanted


def test_incremental_matches_reference() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(10.0 + (r == 2), 1.0, 300) for r in range(6)])
    x[::300] += 4.0  # one hot reading per round
    inc = cp.IncrementalEDM()
    for r in range(6):
        got = inc.update(x[300 * r : 300 * (r + 1)])
        assert got == reference(x[: 300 * (r + 1)])
    assert got.changepoints  # the level step of round 3 is found


def test_signed_zero_and_constant_series() -> None:
    x = np.zeros(1500)
    x[::2] = -0.0  # equal to 0.0: one long tie
    x[900:] = 1.0
    assert cp.detect(x) == reference(x)
    assert cp.detect(x).changepoints == [900]
    flat = np.full(800, 3.5)
    assert cp.detect(flat) == reference(flat)
    assert cp.detect(flat).changepoints == []


def test_keys_at_matches_position_keys() -> None:
    where = np.array([[5, 6, 7], [1000, 1001, 1002]])
    assert np.array_equal(keys_at(where)[0], position_keys(5, 8))
    assert np.array_equal(keys_at(where)[1], position_keys(1000, 1003))
    # position_keys is now keys_at of a range: check both against the formula in Python integers
    from pilot_sys.stats._changepoint_ranks import _GOLDEN

    by_hand = [(((p + 1) * int(_GOLDEN)) % 2**64) >> 11 for p in (5, 6, 7, 1000, 1001, 1002)]
    assert keys_at(where).ravel().tolist() == by_hand


def test_top_masks_rows_match_one_interval_selection() -> None:
    """Each row of the batched selection equals ``_top_masks`` on that interval, ties included."""
    rng = np.random.default_rng(2)
    values = np.round(rng.standard_normal(4000) * 1.5)  # about ten distinct values: heavy ties
    values[100:300] = 0.0
    length, starts = 64, np.arange(0, 3900, 32)
    where = starts[:, None] + np.arange(length)
    counts = [length // 2, length // 4, length - length // 4, 0, length]
    rows = batch.top_masks(values[where], counts, lambda r: keys_at(where[r]))
    for i, s in enumerate(starts.tolist()):
        single = cp._top_masks(values[s : s + length], cp._LazyKeys(s, s + length), counts)
        for got, want, count in zip([r[i] for r in rows], single, counts, strict=True):
            assert np.array_equal(got, want)
            assert int(got.sum()) == count


def test_cusum_scan_rows_match_one_interval_scan() -> None:
    rng = np.random.default_rng(4)
    m, min_size = 96, 12
    indicators = rng.random((50, m)) < 0.5
    indicators[0] = False  # p = 0: the degenerate answer
    indicators[1] = True  # p = 1
    indicators[2, :48] = True  # one clean change
    indicators[2, 48:] = False
    indicators[3, 30:60] = True  # an epidemic change: two cuts
    indicators[3, :30] = indicators[3, 60:] = False
    counts = np.cumsum(indicators, axis=1)
    positions = np.arange(m - min_size + 1, dtype=np.float64)[min_size:]
    split, stat, low, high = batch.cusum_scan(counts, min_size, positions)
    for row in range(counts.shape[0]):
        want_split, want_stat, want_cuts = cp._cusum_scan(counts[row], min_size)
        cuts = (int(low[row]),) if low[row] == high[row] else (int(low[row]), int(high[row]))
        assert (int(split[row]), float(stat[row]), cuts) == (want_split, want_stat, want_cuts)
    assert (int(split[0]), float(stat[0])) == (48, 0.0)
    assert int(split[2]) == 48 and (int(low[3]), int(high[3])) == (30, 60)
