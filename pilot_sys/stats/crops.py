"""Every optimal PELT segmentation over a range of penalties (CROPS), and the elbow of that curve.

CROPS (Haynes, Eckley and Fearnhead, "Computationally efficient changepoint detection for a
range of penalties", 2017) finds every segmentation that is optimal for some penalty in
``[low, high]`` without trying penalties blindly: two optimal segmentations with m0 > m1 change
points cost the same at penalty ``(cost1 - cost0) / (m0 - m1)``; PELT at that penalty either
returns one of the two (nothing lies between them) or a new segmentation between them, and the
search goes on in both halves. Here every round's new penalties run in one pass of
``pilot_sys.stats.pelt_many.MeanVarPelt``, which keeps the segment costs for the later rounds.

The elbow is where Traini et al. 2022 ("Towards effective assessment of steady state
performance in Java software: Are we there yet?") took each series' penalty: the Kneedle rule
(Satopaa et al., "Finding a 'Kneedle' in a haystack", 2011; sensitivity 1, curve convex and
decreasing) applied to the number of change points against the penalty, listed from the
highest penalty down. The study called the ``kneed`` package; ``crops_elbow`` is written from
that rule and reproduces the package's answer on that call, including where it finds none.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.stats.pelt import DEFAULT_MIN_SIZE, PeltResult
from pilot_sys.stats.pelt_many import MeanVarPelt


class CropsStep(BaseModel):
    """One optimal segmentation of the path and the lowest penalty at which it is optimal."""

    model_config = ConfigDict(frozen=True)

    penalty: float = Field(description="lowest penalty in the range at which it is optimal")
    changepoints: list[int]
    cost: float = Field(description="unpenalised cost of the segmentation")


def crops(
    values: np.ndarray, low: float, high: float, min_size: int = DEFAULT_MIN_SIZE
) -> list[CropsStep]:
    """Every segmentation optimal for a penalty in [low, high], most change points first."""
    x = np.asarray(values, dtype=np.float64)
    solver = MeanVarPelt(x, min_size)  # one series: its segment costs serve every round
    runs: dict[float, PeltResult] = {}
    todo = [low, high] if high > low else [low]
    while todo:
        runs.update(zip(todo, solver.solve(todo), strict=True))
        tried = sorted(runs)
        todo = []
        for b0, b1 in zip(tried[:-1], tried[1:], strict=True):
            r0, r1 = runs[b0], runs[b1]
            m0, m1 = len(r0.changepoints), len(r1.changepoints)
            if m0 <= m1 + 1:
                continue
            tie = (r1.cost - r0.cost) / (m0 - m1)
            if b0 < tie < b1 and min(tie - b0, b1 - tie) > 1e-8 * abs(tie):
                todo.append(tie)
    steps: list[tuple[int, PeltResult]] = []
    for beta in sorted(runs):  # each segmentation once, as found at its lowest penalty
        r = runs[beta]
        if not steps or len(r.changepoints) < steps[-1][0]:
            steps.append((len(r.changepoints), r))
    out = [CropsStep(penalty=low, changepoints=steps[0][1].changepoints, cost=steps[0][1].cost)]
    for (m0, r0), (m1, r1) in zip(steps[:-1], steps[1:], strict=True):
        out.append(
            CropsStep(
                penalty=(r1.cost - r0.cost) / (m0 - m1),
                changepoints=r1.changepoints,
                cost=r1.cost,
            )
        )
    return out


def crops_elbow(path: list[CropsStep], sensitivity: float = 1.0) -> int | None:
    """Index into ``path`` of the elbow of "change points against penalty", or None.

    Both axes are scaled to [0, 1] and the count is flipped (1 - count), so the difference
    curve (flipped count - penalty) is 0 at both ends and rises where the count falls faster
    than the penalty grows. Walking from the highest penalty down, the threshold is set at each
    local maximum of the difference curve to its value less ``sensitivity`` times the mean
    penalty step (and to 0 at each local minimum); the first point that falls below the
    threshold makes the penalty of the last maximum the elbow. No elbow when the first local
    maximum is the highest penalty itself, or when the walk ends without a fall.
    """
    if len(path) < 2:
        return None
    pen = np.array([s.penalty for s in reversed(path)])
    count = np.array([len(s.changepoints) for s in reversed(path)], dtype=np.float64)
    if pen.max() == pen.min() or count.max() == count.min():
        return None
    x = (pen - pen.min()) / (pen.max() - pen.min())
    y = (count - count.min()) / (count.max() - count.min())
    diff = (1.0 - y) - x
    before = np.concatenate(([diff[0]], diff[:-1]))
    after = np.concatenate((diff[1:], [diff[-1]]))
    is_max = (diff >= before) & (diff >= after)
    is_min = (diff <= before) & (diff <= after)
    step = sensitivity * float(np.abs(np.diff(x)).mean())
    first = int(np.argmax(is_max))
    threshold, peak = 0.0, first
    for i in range(first, diff.size - 1):
        if x[i] == 1.0:
            return None
        if is_max[i]:
            threshold, peak = diff[i] - step, i
        if is_min[i]:
            threshold = 0.0
        if diff[i + 1] < threshold:
            return len(path) - 1 - peak
    return None
