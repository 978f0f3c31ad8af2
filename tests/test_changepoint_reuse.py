"""Work ``detect`` reuses on a long series changes nothing: the sorted values of a segment for
its larger piece, the unsplit segments' indicators for the dependence floor, and the bridge's
extremes formed chunk by chunk. Each is switched off (or made extreme) for the reference."""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_plan as cp_plan
from pilot_sys.stats import _changepoint_search as cp_search
from pilot_sys.stats import _changepoint_segment as cp_segment
from pilot_sys.stats import _changepoint_statistic as cp_statistic
from pilot_sys.stats import changepoint as cp


def series(seed: int) -> np.ndarray:
    """A warm-up, a level step late in the series, ties (three decimals) and a spread change."""
    rng = np.random.default_rng(seed)
    n = 150_000
    x = rng.lognormal(0.0, 0.3, n) * (1.0 + 2.0 * np.exp(-np.arange(n) / 3000.0))
    x[120_000:] += 0.4
    x[60_000:80_000] = 5.0 + (x[60_000:80_000] - 5.0) * 2.0
    return np.round(x, 3)


@pytest.mark.parametrize("seed", [1, 2])
def test_sorted_pieces_are_the_sort_of_the_piece(seed: int) -> None:
    x = series(seed)
    derived: list[int] = []
    original = cp_search._Scans._sorted

    def recording(self: cp_search._Scans, begin: int, end: int) -> np.ndarray | None:
        kept = self._kept_sorted
        got = original(self, begin, end)
        if got is not None:
            assert np.array_equal(got, np.sort(x[begin:end]))
            derived.append(int(kept is not None and kept[0] <= begin and end <= kept[1]))
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp_search._Scans, "_sorted", recording)
        got = cp.detect(x)
    assert sum(derived) >= 1, "no piece reused its segment's sort"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp_search, "_SORT_REUSE_MIN", 10**12)  # every scan selects its own cuts
        want = cp.detect(x)
    assert got == want and got.changepoints


def test_kept_indicators_give_the_same_floor() -> None:
    x = series(3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp_search._Detection, "bisect", _bisect_without_keeping)
        want = cp.detect(x)
    assert cp.detect(x) == want


_ORIGINAL_BISECT = cp_search._Detection.bisect


def _bisect_without_keeping(
    self: cp_search._Detection, begin: int, end: int, keep: bool = False
) -> list[tuple[int, int]]:
    return _ORIGINAL_BISECT(self, begin, end, keep=False)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_bridge_extremes_chunked_match_one_pass(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(chunk)
    monkeypatch.setattr(cp_statistic, "_BRIDGE_CHUNK", chunk)
    for m, min_size in [(50, 5), (1000, 16), (3001, 64)]:
        ones = rng.random(m) < 0.4
        ones[m // 3 : m // 2] = True  # a run: ties among extremes are likely
        counts = np.cumsum(ones)
        p = float(counts[-1]) / m
        bridge = np.arange(m - min_size + 1, dtype=np.float64)[min_size:] * -p
        bridge += counts[min_size - 1 : m - min_size]
        top, peak, bottom, trough = cp_statistic._bridge_extremes(counts, min_size, p)
        assert (top, bottom) == (int(np.argmax(bridge)), int(np.argmin(bridge)))
        assert (peak, trough) == (float(bridge.max()), float(bridge.min()))


def test_a_partial_scan_is_made_whole_where_its_location_does_not_decide() -> None:
    """A segment whose location split was accepted on its own keeps no scale statistic; decided
    again at a penalty its location does not pass, it is scanned whole, as a fresh scan would."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20_000)
    x[10_000:] += 0.25  # a location change of moderate evidence
    x[15_000:] *= 2.0  # and a change of spread
    plan = cp_plan._plan(
        x.size,
        min_size=None,
        penalty=None,
        significance=0.01,
        scale=True,
        dependence=True,
        statistic="sign",
        median_scan=None,
        seeded=True,
        edges=True,
    )
    cache: dict[tuple[int, int], cp_segment._ScanResult] = {}
    first = cp_search._Scans(x, plan, cache)
    low = first.test(0, x.size, plan.threshold)
    assert low.index is not None and first._used[(0, x.size)].partial
    assert cp_segment._may_accept(
        first._used[(0, x.size)], 1e9
    )  # unknown scale: never filtered out
    stat = first._used[(0, x.size)].scans[0][2]
    high = 0.999 * stat  # the location's raw statistic no longer passes once deflated
    first.save()
    second = cp_search._Scans(x, plan, cache)
    again = second.test(0, x.size, high, floor=1.0)
    assert not second._used[(0, x.size)].partial  # it was scanned whole
    fresh = cp_segment._decide(
        x,
        cp_segment._scan_segment(
            x,
            0,
            x.size,
            min_size=plan.min_size,
            base_penalty=plan.threshold,
            scale=True,
            dependence=True,
            median_scan=None,
        ),
        penalty=high,
        floor=1.0,
        min_size=plan.min_size,
    )
    assert again == fresh
