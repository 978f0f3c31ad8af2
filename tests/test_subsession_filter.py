"""The candidate filter of ``subsession.search`` changes its speed, never its answer.

The reference visits every q: ``_next_candidate`` replaced by one that returns the q it is
given, so the search tests each q with the exact code alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from pilot_sys.stats import subsession


def _series(rng: np.random.Generator, kind: int) -> np.ndarray:
    n = int(rng.integers(40, 6000))
    if kind == 0:  # AR(1) of any strength
        phi = float(rng.choice([0.0, 0.3, 0.6, 0.9, 0.97]))
        return lfilter([1.0], [1.0, -phi], rng.standard_normal(n))
    if kind == 1:  # rounds at different levels, AR(1) inside (what sessions pool)
        length = int(rng.integers(50, 600))
        rounds = [
            rng.normal(0, 0.5) + lfilter([1.0], [1.0, -0.5], rng.standard_normal(length))
            for _ in range(max(2, n // length))
        ]
        return np.concatenate(rounds)
    if kind == 2:  # quantised values with ties and constant stretches
        x = np.round(lfilter([1.0], [1.0, -0.4], rng.standard_normal(n)))
        x[: n // 5] = 3.0
        return x
    return 1e9 * (1 + 0.01 * rng.standard_cauchy(n))  # heavy tails, large magnitude


def _every_q(x: np.ndarray) -> subsession.SubsessionBatch:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subsession, "_next_candidate", lambda cs, n, start, q_max, limit, **_: start)
        return subsession.search(x)


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_the_filter_returns_exactly_what_visiting_every_q_returns(kind: int) -> None:
    rng = np.random.default_rng(100 + kind)
    found = 0
    for _ in range(60):
        x = _series(rng, kind)
        fast = subsession.search(x)
        slow = _every_q(x)
        for field in (
            "q",
            "n_subsessions",
            "mean",
            "variance",
            "autocorrelation",
            "tail_dropped",
            "autocorrelation_time",
        ):
            a, b = np.asarray(getattr(fast, field)), np.asarray(getattr(slow, field))
            assert np.array_equal(a, b, equal_nan=True), (field, a, b)
        found += bool(fast.found)
    assert found >= 10  # the comparison covered series that pass, not only refusals


def test_the_filter_never_skips_a_passing_q() -> None:
    """Its own lag-1 agrees with the exact one to rounding, far inside the slack."""
    rng = np.random.default_rng(7)

    def one_round() -> np.ndarray:  # a level, then AR(1) noise around it
        level = rng.normal(0, 0.3)
        return level + lfilter([1.0], [1.0, -0.5], rng.standard_normal(400))

    x = np.concatenate([one_round() for _ in range(30)])
    x2 = (x - np.median(x)) / np.max(np.abs(x - np.median(x)))
    cs = np.concatenate([[0.0], np.cumsum(x2)])
    n = x2.size
    passing = 0
    for q in range(1, n // 8 + 1, 7):
        k = n // q
        means = np.diff(cs[n - k * q + q * np.arange(k + 1)]) / q
        exact = float(subsession.bias_corrected_lag1(subsession.lag1_autocorrelation(means), k))
        if abs(exact) <= 0.1:
            passing += 1
            assert subsession._next_candidate(cs, n, q, n // 8, 0.1) == q
        else:  # and a q that fails is never returned for itself
            assert subsession._next_candidate(cs, n, q, n // 8, 0.1) != q
    assert passing >= 3


def test_the_reference_really_visits_every_q(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without this the comparison above could compare the filter with itself."""
    x = np.concatenate([np.random.default_rng(3).normal(r % 2, 0.5, 300) for r in range(12)])
    jumps: list[tuple[int, int]] = []
    original = subsession._next_candidate

    def recording(
        cs: np.ndarray, n: int, start: int, q_max: int, limit: float, **kw: np.ndarray
    ) -> int:
        jumps.append((start, original(cs, n, start, q_max, limit, **kw)))
        return jumps[-1][1]

    monkeypatch.setattr(subsession, "_next_candidate", recording)
    filtered = subsession.search(x)
    assert any(to > start for start, to in jumps)  # the filter skipped q that cannot pass
    monkeypatch.undo()
    assert _every_q(x).q == filtered.q


@pytest.mark.parametrize("regimes", ["as shipped", "grids"])
@pytest.mark.parametrize("kind", ["trend", "rounds", "ar1", "warmup"])
def test_long_series_cross_the_filter_regimes(
    kind: str, regimes: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer is the one visiting every q gives, whichever way the filter takes the q. On
    60,000 readings q up to 29 are filtered one at a time (2048 subsessions or more) and larger
    q in gathered blocks (grids of strided slices only where 256 q share their counts); made to
    group as few as 2 q, the larger q are taken in grids."""
    calls = {"_grouped_lag1": 0, "_gathered_lag1": 0}
    for name in calls:

        def counted(*args: object, _name: str = name, _f: object = getattr(subsession, name)):
            calls[_name] += 1
            return _f(*args)  # type: ignore[operator]

        monkeypatch.setattr(subsession, name, counted)
    if regimes == "grids":
        monkeypatch.setattr(subsession, "_GROUP_MIN", 2)
    rng = np.random.default_rng(len(kind))
    n = 60_000
    noise = lfilter([1.0], [1.0, -0.5], rng.standard_normal(n))
    x = {
        "trend": noise + np.linspace(0.0, 0.5, n),  # passes only at a large q
        "rounds": noise + np.repeat(rng.normal(0.0, 1.0, 40), n // 40),
        "ar1": lfilter([1.0], [1.0, -0.9], rng.standard_normal(n)),
        "warmup": noise + 8.0 * np.exp(-np.arange(n) / 2000.0),
    }[kind]
    assert n // subsession._FILTER_ONE_BY_ONE > 20
    fast = subsession.search(x)
    used = dict(calls)
    slow = _every_q(x)
    for field in ("q", "n_subsessions", "mean", "variance", "autocorrelation", "tail_dropped"):
        assert np.array_equal(getattr(fast, field), getattr(slow, field), equal_nan=True), field
    assert fast.found
    if fast.q > 2 * n // subsession._FILTER_ONE_BY_ONE:  # the search went past the first block
        assert used["_grouped_lag1" if regimes == "grids" else "_gathered_lag1"] > 0, used


def test_grouped_lag1_is_the_lag1_of_each_q() -> None:
    rng = np.random.default_rng(9)
    x = lfilter([1.0], [1.0, -0.7], rng.standard_normal(20_011)) + np.linspace(0, 2, 20_011)
    cs = np.concatenate([[0.0], np.cumsum(x)])
    n = x.size
    r, qs = subsession._grouped_lag1(cs, n, 400, 470)  # 50 down to 42 subsessions
    assert qs.tolist() == list(range(400, 471))
    for q, got in zip(qs.tolist(), r.tolist(), strict=True):
        k = n // q
        means = np.diff(cs[n - k * q + q * np.arange(k + 1)]) / q
        assert got == pytest.approx(float(subsession.lag1_autocorrelation(means)), abs=1e-12)


def test_gathered_lag1_is_the_lag1_of_each_q() -> None:
    """Rows padded to the first q's count: 40 q from 500 (40 subsessions) to 539 (37)."""
    rng = np.random.default_rng(11)
    x = lfilter([1.0], [1.0, -0.7], rng.standard_normal(20_011)) + np.linspace(0, 2, 20_011)
    cs = np.concatenate([[0.0], np.cumsum(x)])
    n = x.size
    r, qs = subsession._gathered_lag1(cs, n, 500, 539)
    assert qs.tolist() == list(range(500, 540))
    assert len({n // q for q in qs.tolist()}) > 1  # the block mixes subsession counts
    for q, got in zip(qs.tolist(), r.tolist(), strict=True):
        k = n // q
        means = np.diff(cs[n - k * q + q * np.arange(k + 1)]) / q
        assert got == pytest.approx(float(subsession.lag1_autocorrelation(means)), abs=1e-12)
