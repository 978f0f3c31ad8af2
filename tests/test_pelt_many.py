"""The many-penalty PELT (blocks of steps, shared segment costs) against the plain one-penalty
loop and against brute-force optimal partitioning: the same change points and the same cost
floats, ties included, so CROPS and settle decide exactly as with one PELT per penalty."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pilot_sys.stats.crops as crops_module
import pilot_sys.stats.pelt_many as pelt_many
from pilot_sys.stats.crops import crops
from pilot_sys.stats.pelt import (
    PeltResult,
    pelt_meanvar,
    prefix_sums,
    variance_floor,
)
from pilot_sys.stats.pelt_many import MeanVarPelt, pelt_meanvar_many
from tests.optimal_partition import optimal_partition


def _series(seed: int) -> np.ndarray:
    """Seeded series of the shapes that stress the search: ties, constant stretches, steps."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 260))
    shape = seed % 7
    if shape == 0:
        return rng.normal(0.0, 1.0, n)
    if shape == 1:  # four tied values: many segmentations of exactly equal cost
        return rng.integers(0, 4, n).astype(np.float64)
    if shape == 2:
        return _stretches(rng)[:n]
    if shape == 3:
        return np.cumsum(rng.normal(0.0, 1.0, n))
    if shape == 4:  # a repeating pattern: mirrored segmentations cost the same
        return np.tile([0.0, 1.0, 0.0, 2.0], n // 4 + 1)[:n]
    if shape == 5:
        level = np.repeat(rng.normal(0.0, 5.0, 8), n // 8 + 1)[:n]
        return level + rng.normal(0.0, 1.0, n) * np.repeat(rng.uniform(0.1, 3.0, 8), n // 8 + 1)[:n]
    return np.round(rng.lognormal(0.0, 0.5, n), 1)


def _stretches(rng: np.random.Generator) -> np.ndarray:
    """Constant stretches (zero variance, floored) between runs of small integers: the floored
    cost is not subadditive there, so PELT's pruning can drop the true optimum."""
    parts = [
        np.full(int(rng.integers(2, 15)), float(rng.integers(0, 3)))
        if rng.random() < 0.6
        else rng.integers(0, 5, int(rng.integers(2, 10))).astype(np.float64)
        for _ in range(12)
    ]
    return np.concatenate(parts)


def _penalties(n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    log_n = math.log(max(n, 2))
    return [
        4 * log_n,
        1e5 * log_n,
        *np.geomspace(0.5, 5e3, 12).tolist(),
        *rng.uniform(1.0, 200.0, 6).tolist(),
    ]


@pytest.mark.parametrize("min_size", [2, 5, 12])
def test_many_penalties_equal_one_pelt_each_float_for_float(min_size: int) -> None:
    compared = 0
    for seed in range(28):
        x = _series(seed)
        penalties = _penalties(x.size, seed)
        many = MeanVarPelt(x, min_size).solve(penalties)
        for p, got in zip(penalties, many, strict=True):
            one = pelt_meanvar(x, p, min_size)
            assert got.changepoints == one.changepoints, (seed, p)
            assert got.cost == one.cost, (seed, p)  # the same float, not just close
            compared += 1
    assert compared == 28 * 20


def test_a_solver_reused_across_calls_answers_as_a_fresh_one() -> None:
    # its segment costs are kept between calls; later calls need wider ranges of them
    x = _series(3)
    solver = MeanVarPelt(x)
    for penalties in ([30.0], [1e6, 2.0], [7.0, 400.0, 15.0]):
        assert solver.solve(penalties) == [pelt_meanvar(x, p) for p in penalties]
    assert pelt_meanvar_many(x, [9.0, 90.0]) == [pelt_meanvar(x, p) for p in [9.0, 90.0]]


def test_more_penalties_than_one_chunk() -> None:
    x = _series(5)
    penalties = np.geomspace(1.0, 1e4, 150).tolist()
    assert MeanVarPelt(x).solve(penalties) == [pelt_meanvar(x, p) for p in penalties]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_size", [2, 4])
def test_many_penalties_equal_brute_force_optimal_partitioning(seed: int, min_size: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x = np.concatenate([rng.normal(0, 1, 30), rng.normal(3, 1, 25), rng.normal(3, 4, 35)])
    penalties = [3.0, 8.0, 20.0, 60.0]
    for p, got in zip(penalties, MeanVarPelt(x, min_size).solve(penalties), strict=True):
        assert got.changepoints == optimal_partition(x, p, min_size)


def _unpruned(x: np.ndarray, penalty: float) -> list[int]:
    """Optimal partitioning with pelt_meanvar's float costs and no pruning (min_size 2)."""
    n, floor = x.size, variance_floor(x)
    s1, s2 = prefix_sums(x)
    best, prev = np.empty(n + 1), np.zeros(n + 1, dtype=np.intp)
    best[0] = -penalty
    for t in range(2, n + 1):
        c = np.array([0, *range(2, t - 1)])
        m = t - c
        d1 = (s1[t] - s1[c]) / m
        cost = m * np.log(np.maximum((s2[t] - s2[c]) / m - d1 * d1, floor)) + best[c]
        best[t], prev[t] = cost.min() + penalty, c[cost.argmin()]
    cuts, t = [], n
    while t > 0:
        t = int(prev[t])
        if t > 0:
            cuts.append(t)
    return cuts[::-1]


@pytest.mark.parametrize("min_size", [2, 3])
def test_where_pruning_changes_the_answer_the_same_pruning_is_kept(min_size: int) -> None:
    # PELT prunes as if the cost were subadditive; over constant stretches the floored cost is
    # not, and the plain loop's answer can differ from the unpruned optimum. The fast path must
    # give the plain loop's answer (the one settle has always used), not a better one.
    penalties = [1.0, 2.0, 3.0, 5.0, 10.0]
    pruned_away = 0
    for seed in range(80):
        x = _stretches(np.random.default_rng(seed))
        many = MeanVarPelt(x, min_size).solve(penalties)
        for p, got in zip(penalties, many, strict=True):
            one = pelt_meanvar(x, p, min_size)
            assert (got.changepoints, got.cost) == (one.changepoints, one.cost), (seed, p)
            if min_size == 2 and seed % 4 == 0:
                pruned_away += one.changepoints != _unpruned(x, p)
    assert min_size != 2 or pruned_away >= 5  # the cases do exercise pruning


class _OnePeltEach:
    """The reference solver: one plain PELT per penalty."""

    def __init__(self, values: np.ndarray, min_size: int) -> None:
        self.values, self.min_size = values, min_size

    def solve(self, penalties: list[float]) -> list[PeltResult]:
        return [pelt_meanvar(self.values, p, self.min_size) for p in penalties]


@pytest.mark.parametrize("seed", [0, 1, 2, 4, 5, 6, 8, 12])
def test_the_crops_path_is_the_one_of_one_pelt_per_penalty(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = _series(seed)
    if x.size < 8:
        x = np.concatenate([x, _series(seed + 7)])
    log_n = math.log(x.size)
    fast = crops(x, 4 * log_n, 1e5 * log_n)
    monkeypatch.setattr(crops_module, "MeanVarPelt", _OnePeltEach)
    assert fast == crops(x, 4 * log_n, 1e5 * log_n)


@pytest.mark.parametrize("seed", [0, 1, 3, 5, 6])
def test_a_penalty_no_change_point_can_pay_for_is_answered_without_the_search(seed: int) -> None:
    # CROPS's top penalty, 1e5 log n: the proof that the start stays the strict minimum holds,
    # and its answer is the plain loop's, float for float; a low penalty is left to the search
    x = np.concatenate([_series(seed), _series(seed + 7)])
    solver = MeanVarPelt(x)
    top = 1e5 * math.log(x.size)
    assert solver._unsegmented(top) == pelt_meanvar(x, top)
    assert solver._unsegmented(4 * math.log(x.size)) is None


def test_a_series_too_long_to_keep_its_costs_gets_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pelt_many, "KEEP_COSTS_UP_TO", 50)
    x = _series(5)
    assert x.size > 50
    solver = MeanVarPelt(x)
    for penalties in ([3.0, 40.0], [1e4, 12.0]):
        assert solver.solve(penalties) == [pelt_meanvar(x, p) for p in penalties]
    assert not solver._costs
