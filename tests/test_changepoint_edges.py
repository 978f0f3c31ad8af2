"""EDM's edge intervals: a short warm-up or cool-down at an end of a round is cut off, noise is not.

The typical case from the issue: 200 unit readings per round, the first 20 ramp linearly from
50% to 100% of the stable level. Before the edge intervals such a warm-up (shorter than
~2 sqrt(m) readings) was kept in the stable segment.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pilot_sys.session.statsapi import stable_segment
from pilot_sys.stats._changepoint_dependence import _SeriesDependence
from pilot_sys.stats._changepoint_edges import _scan_anchored
from pilot_sys.stats._changepoint_null import _edge_tail_table, edge_sf, kolmogorov_sf
from pilot_sys.stats._changepoint_statistic import _indicators, _LazyKeys
from pilot_sys.stats.changepoint import (
    IncrementalEDM,
    default_min_size,
    detect,
    edge_intervals,
)


def _round(m: int, warm: int, seed: int, cv: float = 0.05, phi: float = 0.0) -> np.ndarray:
    """One round: the first ``warm`` readings ramp from 50% to 100% of a level of 100."""
    rng = np.random.default_rng(seed)
    level = np.ones(m)
    level[:warm] = np.linspace(0.5, 1.0, warm, endpoint=False)
    if phi:
        shocks = rng.normal(0, math.sqrt(1 - phi**2), m)
        noise = np.empty(m)
        noise[0] = rng.normal()
        for i in range(1, m):
            noise[i] = phi * noise[i - 1] + shocks[i]
    else:
        noise = rng.normal(size=m)
    return 100.0 * level * (1.0 + cv * noise)


def _ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    shocks = rng.normal(size=n)
    x = np.empty(n)
    x[0] = shocks[0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + shocks[i]
    return x


# --- the exact null of the edge test ---------------------------------------------------------


def test_edge_null_matches_hand_counts_for_twenty_readings() -> None:
    # L = 20, min_size = 10: the only split is k = 10, and |2 C_10 - 10| >= h is a hypergeometric
    # tail: C_10 ones among the first 10 of 10 ones and 10 zeros.
    total = math.comb(20, 10)  # 184756
    assert edge_sf(10 / math.sqrt(20), 20, 10) == pytest.approx(
        2 / total, rel=1e-12
    )  # C_10 in {0, 10}
    assert edge_sf(8 / math.sqrt(20), 20, 10) == pytest.approx(2 * (1 + 10 * 10) / total, rel=1e-12)
    assert edge_sf(1 / math.sqrt(20), 20, 10) == pytest.approx(
        1 - math.comb(10, 5) ** 2 / total, rel=1e-12
    )
    assert edge_sf(9.5 / math.sqrt(20), 20, 10) == edge_sf(
        10 / math.sqrt(20), 20, 10
    )  # heights are integers


def test_edge_null_matches_enumeration_of_every_arrangement() -> None:
    # L = 12, min_size = 3: all C(12, 6) = 924 arrangements of six ones,
    # max |2 C_k - k| over k = 3..9.
    length, min_size = 12, 3
    heights = []
    for ones in itertools.combinations(range(length), length // 2):
        indicator = np.zeros(length, dtype=np.int64)
        indicator[list(ones)] = 1
        c = np.cumsum(indicator)
        k = np.arange(1, length + 1)
        heights.append(int(np.abs(2 * c - k)[min_size - 1 : length - min_size].max()))
    heights_arr = np.array(heights)
    table = _edge_tail_table(length, min_size)
    for h in range(table.size):
        assert table[h] == pytest.approx(np.mean(heights_arr >= h), abs=1e-12)


def test_kolmogorov_limit_overstates_short_edge_tails() -> None:
    # The reason for the exact table: at 20-40 readings the Brownian limit is several times too
    # wide in the tail (conservative), at 128 it is within ~25%.
    assert kolmogorov_sf(10 / math.sqrt(20)) / edge_sf(10 / math.sqrt(20), 20, 10) > 8
    for length, min_size in ((40, 10), (64, 16), (128, 16)):
        table = _edge_tail_table(length, min_size)
        for h in range(1, table.size):
            if 1e-9 < table[h] < 1e-2:
                assert table[h] <= kolmogorov_sf(h / math.sqrt(length))


def test_edge_intervals_are_anchored_at_both_ends() -> None:
    # min_size 10, n 200: lengths 20, 32, 40, 60, 80 (2 min_size * sqrt(2)^j rounded up to a
    # multiple of 4, at most n / 2 and 16 min_size).
    got = edge_intervals(200, 10).tolist()
    lengths = [20, 32, 40, 60, 80]
    assert got == [[0, L] for L in lengths] + [[200 - L, 200] for L in lengths]
    long = edge_intervals(10_000, 64)
    assert (long[:, 1] - long[:, 0]).max() == 1024 and (long[:, 1] - long[:, 0]).min() == 128
    assert edge_intervals(30, 10).size == 0  # n / 2 < 2 min_size: no room for an edge test


def test_all_at_once_edge_scans_equal_scanning_each_interval_alone() -> None:
    # Reference: each interval's own indicators (its median, its quartiles, ties broken by
    # position keys) and the first maximum of |2 C_k - k| over the allowed splits.
    rng = np.random.default_rng(23)
    for n, make in (
        (200, lambda: rng.normal(size=200)),
        (777, lambda: rng.poisson(2, 777).astype(float)),  # heavy ties
        (1500, lambda: np.round(rng.normal(size=1500), 1)),
    ):
        x = make()
        x[: n // 20] += 2.0
        size = default_min_size(n)
        lengths = tuple(hi for lo, hi in edge_intervals(n, size).tolist() if lo == 0)
        inner = n // 3  # a cut inside the series anchors intervals on both of its sides
        for scale in (True, False):
            scans = _scan_anchored(
                x,
                start=0,
                start_lengths=lengths,
                end=n,
                end_lengths=lengths,
                min_size=size,
                scale=scale,
            ) + _scan_anchored(
                x, start=inner, start_lengths=lengths[:3], min_size=size, scale=scale
            )
            scans += _scan_anchored(
                x, end=inner, end_lengths=lengths[:3], min_size=size, scale=scale
            )
            assert [(s.begin, s.end) for s in scans] == (
                [(0, L) for L in lengths]
                + [(n - L, n) for L in lengths]
                + [(inner, inner + L) for L in lengths[:3]]
                + [(inner - L, inner) for L in lengths[:3]]
            )
            for scan in scans:
                want = []
                for kind, indicator in _indicators(
                    x[scan.begin : scan.end], _LazyKeys(scan.begin, scan.end), scale
                ):
                    c = np.cumsum(indicator)
                    k = np.arange(size, c.size - size + 1)
                    heights = np.abs(2 * c[k - 1] - k)
                    best = int(np.argmax(heights))
                    want.append((kind, int(k[best]), float(heights[best]) / math.sqrt(c.size)))
                assert [
                    (kind, split, pytest.approx(stat)) for kind, split, stat, _ in scan.scans
                ] == want


# --- warm-ups and cool-downs are cut off ----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_twenty_reading_warm_up_in_a_200_reading_round_is_cut_off(seed: int) -> None:
    x = _round(200, 20, seed)
    result = detect(x)
    assert result.stable_segment is not None
    begin, end = result.stable_segment
    # Every ramp reading below 85% of the level (the first 14) is cut; at most 6 stable ones go.
    assert 14 <= begin <= 26 and end == 200
    assert all(d.p_value < 0.01 for d in result.details)  # significant after the correction
    assert detect(x, edges=False).stable_segment == (0, 200)  # the gap this closes


@pytest.mark.parametrize(("cv", "phi"), [(0.10, 0.0), (0.05, 0.5)], ids=["gauss-cv10", "ar1-0.5"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_warm_up_is_cut_off_in_noisier_and_autocorrelated_rounds(
    cv: float, phi: float, seed: int
) -> None:
    x = _round(200, 20, seed, cv=cv, phi=phi)
    begin, end = detect(x).stable_segment or (0, 0)
    assert 14 <= begin <= 30 and end == 200
    assert detect(x, edges=False).stable_segment == (0, 200)


def test_cool_down_at_the_end_is_cut_off() -> None:
    x = _round(200, 20, 0)[::-1].copy()  # the last 20 readings fall to half the level
    result = detect(x)
    assert result.stable_segment == (0, 184)
    assert detect(x, edges=False).stable_segment == (0, 200)


def test_short_warm_up_is_not_misplaced_into_the_stable_phase() -> None:
    # 1000 readings, 50-reading warm-up: the whole-series scan accepts a change but its argmax
    # wanders to 306; the edge test places it at the warm-up and keeps 95% of the round.
    x = _round(1000, 50, 2)
    assert detect(x, edges=False).stable_segment == (306, 1000)
    begin, end = detect(x).stable_segment or (0, 0)
    assert 40 <= begin <= 60 and end == 1000


def test_long_warm_ups_are_still_cut_at_their_end() -> None:
    # 20% warm-ups: long enough for the whole segment, the edge tests must not place them early.
    for m, seed in ((200, 0), (500, 1), (1000, 2)):
        w = m // 5
        begin, _ = detect(_round(m, w, seed)).stable_segment or (0, 0)
        assert w - w // 4 <= begin <= w + w // 4


def test_explicit_penalty_also_governs_the_edge_tests() -> None:
    x = _round(200, 20, 0)
    assert detect(x, penalty=1e9).changepoints == []
    assert detect(x, seeded=False).changepoints == []  # binary segmentation alone has no edge tests


def test_median_form_has_no_edge_tests() -> None:
    x = _round(200, 20, 0)
    assert (
        detect(x, statistic="median").changepoints
        == detect(x, statistic="median", edges=False).changepoints
    )


def test_segment_dependence_centred_at_the_warm_up_does_not_count_it_as_dependence() -> None:
    x = _round(200, 20, 0)
    dependence = _SeriesDependence(x, [(0, 200)], scale=True)
    # 20 readings in a row below the median read as a long run (1.37); centred at the warm-up's
    # end they do not (1.10), which is what lets the edge test see a warm-up in independent noise.
    assert dependence.base > 1.3 and dependence.with_cut(16) < 1.15
    # A segment that does not start at 0: cuts are absolute positions, counted from its start.
    inner = _SeriesDependence(x, [(16, 200)], scale=True)
    alone = _SeriesDependence(x[16:], [(0, 184)], scale=True)
    assert inner.with_cut(100) == pytest.approx(alone.with_cut(84))
    assert inner.base == pytest.approx(alone.base)


def test_incremental_updates_agree_with_detect_when_edges_matter() -> None:
    # Rounds appended one by one; the warm-up sits at the start and a cool-down at the current end.
    parts = [_round(200, 20, 5), _round(150, 0, 6), 100.0 * np.linspace(1.0, 0.6, 20)]
    x = np.concatenate(parts)
    inc = IncrementalEDM()
    pos = 0
    for step in (120, 90, 60, 100):
        got = inc.update(x[pos : pos + step])
        pos = min(x.size, pos + step)
        want = detect(x[:pos])
        assert got.changepoints == want.changepoints
        assert got.stable_segment == want.stable_segment


# --- no change: nothing is found ------------------------------------------------------------

_NULLS = {
    "gauss": lambda rng, n: rng.normal(100, 5, n),
    "student-t2": lambda rng, n: 100 + rng.standard_t(2, n),
    "poisson-ties": lambda rng, n: rng.poisson(3, n).astype(float),
    "ar1-0.6": lambda rng, n: 100 + _ar1(rng, n, 0.6),
}


@pytest.mark.parametrize("kind", ["gauss", "student-t2", "poisson-ties"])
def test_no_change_rounds_have_no_change_points(kind: str) -> None:
    for m in (100, 200, 500, 1000):
        for seed in range(3):
            x = _NULLS[kind](np.random.default_rng([31, m, seed]), m)
            result = detect(x)
            assert result.changepoints == [], (kind, m, seed)
            assert result.stable_segment == (0, m)


def test_autocorrelated_no_change_rounds_get_no_change_point_from_the_edges() -> None:
    # AR(1) phi = 0.6: the dependence factor under-corrects a little (about 5% of such rounds get
    # a split, with or without edge tests: here round (200, 2) at 138, in the middle). The edge
    # tests add none.
    alarms = 0
    for m in (100, 200, 500, 1000):
        for seed in range(3):
            x = _NULLS["ar1-0.6"](np.random.default_rng([31, m, seed]), m)
            found = detect(x).changepoints
            assert found == detect(x, edges=False).changepoints, (m, seed)
            alarms += bool(found)
    assert alarms <= 1


@pytest.mark.parametrize("kind", ["gauss", "student-t2", "poisson-ties"])
def test_false_alarm_rate_stays_within_the_significance(kind: str) -> None:
    # 300 rounds of 200 readings: binary segmentation at 1% plus the seeded/edge stage at 1%
    # bound the rate at 2% (6 rounds); independent readings give well under that.
    rng = np.random.default_rng([41, len(kind)])
    alarms = sum(bool(detect(_NULLS[kind](rng, 200)).changepoints) for _ in range(300))
    assert alarms <= 6


# --- the session engine's view --------------------------------------------------------------


def test_stable_segment_of_a_round_drops_the_warm_up() -> None:
    x = _round(200, 20, 0)
    assert stable_segment(x) == (16, 200, [16], True)


def test_stable_segment_positions_refer_to_the_round_as_given() -> None:
    # Non-finite readings are left out of the analysis, but the caller slices the original array.
    x = _round(200, 20, 0)
    with_gaps = np.insert(x, [5, 100], np.nan)  # one gap inside the warm-up, one in the stable part
    begin, end, cps, dominant = stable_segment(with_gaps)
    assert dominant and (begin, end) == (17, 202) and cps == [17]
    assert np.isfinite(with_gaps[begin:end]).sum() == 184
