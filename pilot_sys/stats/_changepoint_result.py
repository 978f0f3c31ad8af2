"""What EDM change-point detection returns, and how it is assembled from decided tests.

The models are what every caller of ``changepoint.detect`` reads (``ChangePoints`` and its
segments); they sit below every part of the detector so that each part can name the kinds of
change and the outcome of one split test (``_Split``) without importing the detector.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

ChangeKind = Literal["location", "scale"]
Statistic = Literal["sign", "median"]


class ChangePoint(BaseModel):
    """One accepted split and the evidence for it."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="0-based index where the new segment starts")
    statistic: float = Field(
        description=(
            "dependence-adjusted statistic: Kuiper (sign form), Kolmogorov (median form,"
            " and the sign form's edge intervals, whose p-value is exact up to 128 readings)"
            " under no change"
        )
    )
    p_value: float = Field(description="Bonferroni-combined p-value of the split test")
    kind: ChangeKind = Field(description="location: the median moved; scale: the spread moved")


class Segment(BaseModel):
    """A run of readings between two change points, with its median in the data's units."""

    model_config = ConfigDict(frozen=True)

    begin: int
    end: int  # exclusive
    median: float

    @property
    def size(self) -> int:
        return self.end - self.begin


class ChangePoints(BaseModel):
    """The result of EDM on one series: change points, segments and the dominant stable segment."""

    model_config = ConfigDict(frozen=True)

    n: int
    changepoints: list[int] = Field(description="sorted 0-based indices where a new segment starts")
    stable_segment: tuple[int, int] | None = Field(
        description=(
            "[begin, end) of the longest segment, only when it holds more than 50% of samples"
        )
    )
    segments: list[Segment]
    details: list[ChangePoint]
    min_size: int
    significance: float
    penalty: float = Field(
        description="critical value of the adjusted statistic a split had to exceed"
    )
    statistic: Statistic

    @property
    def stable_reason(self) -> str:
        """Why there is or is not a stable segment, in words a reader can check."""
        if self.stable_segment is not None:
            begin, end = self.stable_segment
            share = 100.0 * (end - begin) / self.n
            return f"segment [{begin}, {end}) holds {share:.1f}% of the samples"
        longest = max((s.size for s in self.segments), default=0)
        share = 100.0 * longest / self.n if self.n else 0.0
        return (
            f"no stable phase: the longest segment holds {share:.1f}% of the samples"
            " (more than 50% needed)"
        )


class _Split(BaseModel):
    """The outcome of testing one segment [begin, end)."""

    model_config = ConfigDict(frozen=True)

    begin: int
    end: int
    index: int | None  # absolute index of the accepted split, None when rejected
    statistic: float
    p_value: float
    kind: ChangeKind


def _assemble(
    values: np.ndarray,
    tests: list[_Split],
    *,
    min_size: int,
    significance: float,
    penalty: float,
    statistic: Statistic,
    medians: dict[tuple[int, int], float] | None = None,
) -> ChangePoints:
    """The result from the decided tests; ``medians`` holds segments' medians already known."""
    n = values.size
    accepted = sorted((t for t in tests if t.index is not None), key=lambda t: t.index or 0)
    cps = [int(t.index) for t in accepted if t.index is not None]
    bounds = [0, *cps, n]
    known = medians or {}
    segments = [
        Segment(
            begin=b,
            end=e,
            median=known[(b, e)] if (b, e) in known else float(np.median(values[b:e])),
        )
        for b, e in zip(bounds[:-1], bounds[1:], strict=True)
        if e > b
    ]
    stable: tuple[int, int] | None = None
    if segments:
        longest = max(segments, key=lambda s: s.size)
        if 2 * longest.size > n:
            stable = (longest.begin, longest.end)
    details = [
        ChangePoint(index=int(t.index), statistic=t.statistic, p_value=t.p_value, kind=t.kind)
        for t in accepted
        if t.index is not None
    ]
    return ChangePoints(
        n=n,
        changepoints=cps,
        stable_segment=stable,
        segments=segments,
        details=details,
        min_size=min_size,
        significance=significance,
        penalty=penalty,
        statistic=statistic,
    )
