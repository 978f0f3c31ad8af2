"""CROPS: PELT for many penalties at once, the path of optimal segmentations, and its elbow."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pilot_sys.stats.crops import CropsStep, crops, crops_elbow
from pilot_sys.stats.pelt import pelt_meanvar
from pilot_sys.stats.pelt_many import pelt_meanvar_many


def _series(seed: int, n: int = 300) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = n // 5
    parts = [rng.normal(3, 1, k), rng.normal(0, 1, k), rng.normal(0, 3, k), rng.normal(1, 0.5, k)]
    return np.concatenate([*parts, rng.lognormal(0, 0.5, n - 4 * k)])


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("min_size", [2, 7])
def test_many_penalties_in_one_pass_equal_one_pass_each(seed: int, min_size: int) -> None:
    x = _series(seed)
    penalties = [2.0, 5.0, 11.0, 30.0, 80.0, 400.0, 1e5]
    for one, many in zip(
        [pelt_meanvar(x, p, min_size) for p in penalties],
        pelt_meanvar_many(x, penalties, min_size),
        strict=True,
    ):
        assert many.changepoints == one.changepoints
        assert many.cost == pytest.approx(one.cost, rel=1e-12)


def test_the_path_holds_every_segmentation_a_penalty_scan_finds() -> None:
    x = _series(2, n=120)
    low, high = 4 * math.log(x.size), 1e5 * math.log(x.size)
    path = crops(x, low, high)
    counts = [len(s.changepoints) for s in path]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts)
    assert path[0].penalty == low and path[-1].changepoints == []
    # an independent scan of 400 penalties finds no segmentation the path lacks
    scan = {len(pelt_meanvar(x, p).changepoints) for p in np.geomspace(low, high, 400)}
    assert scan <= set(counts)
    # each step is optimal just above its penalty, the one before just below it
    for before, step in zip(path[:-1], path[1:], strict=True):
        assert pelt_meanvar(x, step.penalty * (1 + 1e-6)).changepoints == step.changepoints
        assert pelt_meanvar(x, step.penalty * (1 - 1e-6)).changepoints == before.changepoints


def _path(penalties: list[float], counts: list[int]) -> list[CropsStep]:
    return [
        CropsStep(penalty=p, changepoints=list(range(1, c + 1)), cost=0.0)
        for p, c in zip(penalties, counts, strict=True)
    ]


def test_elbow_by_hand() -> None:
    # from the highest penalty down: x = (pen - 1) / 99 = 1, .091, .020, .010, 0;
    # 1 - count / 10 = 1, .9, .7, .4, 0; difference 0, .809, .680, .390, 0. Its first local
    # maximum is at penalty 10 (threshold .809 - mean step .25 = .559); .680 stays above it,
    # .390 falls below: the elbow is penalty 10, one change point.
    path = _path([1.0, 2.0, 3.0, 10.0, 100.0], [10, 6, 3, 1, 0])
    assert crops_elbow(path) == 3
    # difference 0, .499, 0: the threshold .499 - .5 is below 0, nothing falls below it
    assert crops_elbow(_path([1.0, 2.0, 1000.0], [2, 1, 0])) is None
    # difference 0, -.809, 0: the first local maximum is the highest penalty itself
    assert crops_elbow(_path([1.0, 90.0, 100.0], [10, 9, 0])) is None
    assert crops_elbow(_path([1.0], [3])) is None
