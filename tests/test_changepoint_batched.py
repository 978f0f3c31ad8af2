"""The batched seeded-interval scan of EDM returns exactly what scanning one interval at a time
does.

The reference is ``detect`` with the batched pre-scan switched off (``_Scans.hopeful`` returns
every interval), so each seeded interval is scanned by ``_scan_segment`` on its own, as binary
segmentation scans its segments. Results are compared whole (change points, segments, statistics
and p-values bit for bit). The batched rows are also checked against the sign statistic computed
naively, in Python, from its definition.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_batch as batch
from pilot_sys.stats import _changepoint_search as cp_search
from pilot_sys.stats import _changepoint_segment as cp_segment
from pilot_sys.stats import _changepoint_statistic as cp_statistic
from pilot_sys.stats import changepoint as cp
from pilot_sys.stats._changepoint_ranks import keys_at, position_keys


@contextlib.contextmanager
def one_interval_at_a_time() -> Iterator[None]:
    """Within the block, ``detect`` scans every seeded interval alone (no batch, no pruning)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp_search._Scans, "hopeful", lambda self, keys, penalty, floor=1.0: keys)
        yield


def reference(x: np.ndarray, **kw: object) -> cp.ChangePoints:
    """``detect`` scanning the seeded intervals one at a time."""
    with one_interval_at_a_time():
        return cp.detect(x, **kw)  # type: ignore[arg-type]


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
        assert got == want, (
            f"series {i} (n = {x.size}, edges = {edges}): {got.changepoints} != {want.changepoints}"
        )
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
    original = cp_segment._scan_intervals

    def counting(*args: object, **kwargs: object) -> tuple[list[cp_segment._ScanResult], list[int]]:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cp_search, "_scan_intervals", counting)
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
    monkeypatch.setattr(cp_segment, "_BATCH_READINGS", 100)  # one row per call, or two
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
        single = cp_statistic._top_masks(
            values[s : s + length], cp_statistic._LazyKeys(s, s + length), counts
        )
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
        want_split, want_stat, want_cuts = cp_statistic._cusum_scan(counts[row], min_size)
        cuts = (int(low[row]),) if low[row] == high[row] else (int(low[row]), int(high[row]))
        assert (int(split[row]), float(stat[row]), cuts) == (want_split, want_stat, want_cuts)
    assert (int(split[0]), float(stat[0])) == (48, 0.0)
    assert int(split[2]) == 48 and (int(low[3]), int(high[3])) == (30, 60)


def naive_sign_scan(
    values: list[float], keys: list[int], min_size: int, kind: str
) -> tuple[int, float]:
    """The sign statistic of one interval from its definition, in plain Python.

    Rank the readings by (value, tie-break key); the location indicator is "in the upper half"
    (rank >= m - m // 2), the scale indicator "in the top or bottom quarter". With C_k the
    indicator count among the first k readings and p its overall share, the bridge is
    B_k = C_k - k p for min_size <= k <= m - min_size; the statistic is the range
    (max(0, max B) - min(0, min B)) / sqrt(m p (1 - p)), the split the extreme farther from 0.
    """
    m = len(values)
    order = sorted(range(m), key=lambda i: (values[i], keys[i]))
    rank = [0] * m
    for r, i in enumerate(order):
        rank[i] = r
    if kind == "location":
        ind = [r >= m - m // 2 for r in rank]
    else:
        ind = [r >= m - m // 4 or r < m // 4 for r in rank]
    p = sum(ind) / m
    if p <= 0.0 or p >= 1.0:
        return m // 2, 0.0
    bridge = {k: sum(ind[:k]) - k * p for k in range(min_size, m - min_size + 1)}
    top = max(bridge, key=lambda k: (bridge[k], -k))  # the first maximum
    bottom = min(bridge, key=lambda k: (bridge[k], k))  # the first minimum
    high, low = max(0.0, bridge[top]), min(0.0, bridge[bottom])
    return (top if high >= -low else bottom), (high - low) / math.sqrt(m * p * (1.0 - p))


def test_batched_rows_equal_the_naive_sign_statistic_and_the_one_interval_scan() -> None:
    rng = np.random.default_rng(8)
    for trial in range(6):
        n = int(rng.integers(300, 1500))
        values = mixture(rng)[:n] if trial % 2 else np.round(rng.standard_normal(n) * 2)  # ties
        n = values.size
        min_size = 10 + trial
        length = 4 * min_size + 2 * trial
        if length > n:
            continue
        starts = list(range(0, n - length + 1, length // 2))
        scans, skipped = cp_segment._scan_intervals(
            values, starts, length, min_size=min_size, base_penalty=1.0, scale=True, dependence=True
        )
        assert skipped == [] and [s.begin for s in scans] == starts
        for scan in scans:
            alone = cp_segment._scan_segment(
                values, scan.begin, scan.end, min_size=min_size, base_penalty=1.0, scale=True,
                dependence=True, median_scan=None,
            )  # fmt: skip
            assert scan == alone
            window = values[scan.begin : scan.end].tolist()
            keys = position_keys(scan.begin, scan.end).tolist()
            for kind, split, stat, _ in scan.scans:
                want_split, want_stat = naive_sign_scan(window, keys, min_size, kind)
                assert split == want_split
                assert stat == pytest.approx(want_stat, rel=1e-12, abs=1e-12)
