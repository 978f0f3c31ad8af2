"""The line fits that judge a change point's kind, from a few sums instead of residual vectors.

``change_kind`` tests each change point with five least-squares fits over the readings around
it (a line each side, one line through both, a kinked line, a parabola) and the lag-1
correlation of the residuals. Fitting each one and forming its residuals takes dozens of passes
over up to twice EVIDENCE_REACH readings, for every change point and again for each neighbour
a drop merges: the main cost of judging a ramp that the detector cut into hundreds of steps.
Every one of those figures is a quadratic form in the moments of (1, u, u^2, y) on each side
(u: the time from the change point, scaled to [-1, 1]) and of the same columns one reading
apart, so two small matrix products give them all.

A residual sum formed from moments loses to cancellation what the fit explains: when it is
below ``RELATIVE_FLOOR`` of the variation it is taken from (a noiseless line, a jump thousands
of times the noise), or within a million times floating-point rounding, ``moment_fits``
declines and the caller fits the residuals directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

# A residual sum under this share of the sum of squares it is computed from has lost more
# than about 1e-9 of its value to cancellation (the sums carry about 1e-15 of that total).
RELATIVE_FLOOR = 1e-6
# ... and one within this many times the caller's rounding bound is noise-free data, where
# the caller's own rule for rounding must see the exact residuals.
ROUNDING_MARGIN = 1e6
SMALLEST_SIDE = 3  # readings each side; fewer and the fits are the direct ones


class Fits(NamedTuple):
    """The line fits around one change point, as sums: what the tests read."""

    left: tuple[float, float]  # intercept at the change point and slope per reading
    right: tuple[float, float]
    sizes: tuple[int, int]
    rss: tuple[float, float]  # residual sums of squares of each side's line
    spreads: tuple[float, float]  # residual standard deviations (nan below three readings)
    lag1: tuple[float, float]  # sums of products of successive residuals
    rss_one: float  # one line through both sides
    rss_kink: float  # one kinked line: slopes differ, no jump
    rss_bend: float  # one parabola through both sides


def _lag_product(cols: np.ndarray, intercept: float, slope: float) -> float:
    """Sum of products of successive residuals of the line (intercept, slope) on ``cols``."""
    lag = cols[:, 1:] @ cols[:, :-1].T
    w = np.array([-intercept, -slope, 0.0, 1.0])
    return float(w @ lag @ w)


def moment_fits(y: np.ndarray, t: np.ndarray, k: int, rounding: float) -> Fits | None:
    """The fits of ``change_kind`` for readings ``y`` at times ``t`` from the change point
    (sorted; the first ``k`` before it), or None where the moments lose precision."""
    n = y.size
    if k < SMALLEST_SIDE or n - k < SMALLEST_SIDE:
        return None
    scale = max(-float(t[0]), float(t[-1]), 1.0)
    centre = float(y.mean())
    cols = np.empty((4, n))
    cols[0] = 1.0
    np.divide(t, scale, out=cols[1])
    np.multiply(cols[1], cols[1], out=cols[2])
    np.subtract(y, centre, out=cols[3])
    before, after = cols[:, :k], cols[:, k:]
    m_a, m_b = before @ before.T, after @ after.T
    m = m_a + m_b
    # the five fits' normal equations, solved together: a line on each side and through
    # both (2 x 2, padded with an identity row), a kinked line (1, u and u+ = max(u, 0),
    # whose sums are the right side's) and a parabola (1, u, u^2)
    gram = np.zeros((5, 3, 3))
    cross = np.zeros((5, 3))
    for row, sums in enumerate((m_a, m_b, m)):
        gram[row, :2, :2] = sums[:2, :2]
        gram[row, 2, 2] = 1.0
        cross[row, :2] = sums[:2, 3]
    gram[3] = [
        [m[0, 0], m[0, 1], m_b[0, 1]],
        [m[0, 1], m[1, 1], m_b[1, 1]],
        [m_b[0, 1], m_b[1, 1], m_b[1, 1]],
    ]
    cross[3] = m[0, 3], m[1, 3], m_b[1, 3]
    gram[4], cross[4] = m[:3, :3], m[:3, 3]
    try:
        coef = np.linalg.solve(gram, cross[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return None
    yy = np.array([m_a[3, 3], m_b[3, 3], m[3, 3], m[3, 3], m[3, 3]])
    rss = yy - np.einsum("ij,ij->i", coef, cross)
    if not (np.all(rss >= RELATIVE_FLOOR * yy) and np.all(rss > ROUNDING_MARGIN * rounding)):
        return None
    rss_a, rss_b, rss_one, rss_kink, rss_bend = rss.tolist()
    (a0, a1, _), (b0, b1, _) = coef[0].tolist(), coef[1].tolist()
    # sums of products of successive residuals: the residual is (-a, -b, 0, 1) . columns
    lag1_a = _lag_product(before, a0, a1)
    lag1_b = _lag_product(after, b0, b1)
    return Fits(
        left=(a0 + centre, a1 / scale),
        right=(b0 + centre, b1 / scale),
        sizes=(k, n - k),
        rss=(rss_a, rss_b),
        spreads=(float(np.sqrt(rss_a / k)), float(np.sqrt(rss_b / (n - k)))),
        lag1=(lag1_a, lag1_b),
        rss_one=rss_one,
        rss_kink=rss_kink,
        rss_bend=rss_bend,
    )


def _gather_plan() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where ``moment_fits`` takes each entry of its normal equations (gram, cross) and of
    the sums of squares, as indices into one row of a window's sums: the 4 x 4 moments of the
    left side, the right side and both (16 each), then a zero and a one."""

    def at(part: int, i: int, j: int) -> int:
        return 16 * part + 4 * i + j

    zero, one = 48, 49
    gram = np.full((5, 3, 3), zero)
    cross = np.full((5, 3), zero)
    for part in range(3):  # a line on the left side, the right side, both
        gram[part, :2, :2] = [[at(part, 0, 0), at(part, 0, 1)], [at(part, 1, 0), at(part, 1, 1)]]
        gram[part, 2, 2] = one
        cross[part, :2] = at(part, 0, 3), at(part, 1, 3)
    # the kinked line (1, u and u+, whose sums are the right side's), as written there
    gram[3] = [
        [at(2, 0, 0), at(2, 0, 1), at(1, 0, 1)],
        [at(2, 0, 1), at(2, 1, 1), at(1, 1, 1)],
        [at(1, 0, 1), at(1, 1, 1), at(1, 1, 1)],
    ]
    cross[3] = at(2, 0, 3), at(2, 1, 3), at(1, 1, 3)
    gram[4] = [[at(2, i, j) for j in range(3)] for i in range(3)]  # the parabola
    cross[4] = [at(2, i, 3) for i in range(3)]
    squares = np.array([at(0, 3, 3), at(1, 3, 3), at(2, 3, 3), at(2, 3, 3), at(2, 3, 3)])
    return gram, cross, squares


_GRAM, _CROSS, _SQUARES = _gather_plan()
# the weights (-intercept, -slope, 0, 1) of each side's residual, from its negated coefficients
_WEIGHTS = np.array([[0, 1, 4, 5], [2, 3, 4, 5]])


def moment_fits_many(
    windows: Sequence[tuple[np.ndarray, np.ndarray, int, float]],
) -> list[Fits | None]:
    """``moment_fits`` of each (y, t, k, rounding), the same floats bit for bit, at a fraction
    of the cost per window.

    The sums over each window's readings are taken by the same calls as ``moment_fits`` (so
    the same summation order); what is batched is the work on the few sums that follow - the
    normal equations of every window are gathered from its sums and solved by one stacked
    ``np.linalg.solve``, which runs the same LAPACK routine on each matrix, and the residual
    sums and lag products are the same contractions over a stacked axis. On a series cut
    every thousand readings that small work, paid once per window, cost more than the sums.
    """
    out: list[Fits | None] = [None] * len(windows)
    todo: list[int] = []
    sums: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    meta: list[tuple[float, float, int, int]] = []
    for w, (y, t, k, _) in enumerate(windows):
        n = y.size
        if k < SMALLEST_SIDE or n - k < SMALLEST_SIDE:
            continue
        scale = max(-float(t[0]), float(t[-1]), 1.0)
        centre = float(np.add.reduce(y)) / n  # y.mean(), without its wrapper
        cols = np.empty((4, n))
        cols[0] = 1.0
        np.divide(t, scale, out=cols[1])
        np.multiply(cols[1], cols[1], out=cols[2])
        np.subtract(y, centre, out=cols[3])
        before, after = cols[:, :k], cols[:, k:]
        sums.append(
            (
                before @ before.T,
                after @ after.T,
                before[:, 1:] @ before[:, :-1].T,
                after[:, 1:] @ after[:, :-1].T,
            )
        )
        meta.append((scale, centre, k, n))
        todo.append(w)
    if not todo:
        return out
    size = len(todo)
    stacked = np.array(sums)  # (window, left / right / left lag / right lag, 4, 4)
    flat = np.empty((size, 50))
    flat[:, :32] = stacked[:, :2].reshape(size, 32)
    flat[:, 32:48] = (stacked[:, 0] + stacked[:, 1]).reshape(size, 16)
    flat[:, 48], flat[:, 49] = 0.0, 1.0
    # C order throughout: numpy picks its inner loops (and so the order of a sum's terms)
    # by the layout of the operands, and these are the layouts of moment_fits' own arrays
    gram, cross, yy = (np.ascontiguousarray(flat[:, i]) for i in (_GRAM, _CROSS, _SQUARES))
    try:
        coef = np.linalg.solve(gram, cross[:, :, :, None])[:, :, :, 0]
    except np.linalg.LinAlgError:  # some window's equations are singular: each on its own
        for w in todo:
            out[w] = moment_fits(*windows[w])
        return out
    rss = yy - np.einsum("wij,wij->wi", coef, cross)
    rounding = np.array([windows[w][3] for w in todo])
    good = ((rss >= RELATIVE_FLOOR * yy) & (rss > ROUNDING_MARGIN * rounding[:, None])).all(1)
    # sums of products of successive residuals, as in _lag_product
    negated = np.empty((size, 6))
    np.negative(coef[:, :2, :2].reshape(size, 4), out=negated[:, :4])
    negated[:, 4], negated[:, 5] = 0.0, 1.0
    weights = np.ascontiguousarray(negated[:, _WEIGHTS])
    lag = np.ascontiguousarray(stacked[:, 2:])
    lag1 = (weights[:, :, None, :] @ lag @ weights[:, :, :, None])[:, :, 0, 0]
    for j, (rss_j, coef_j, lag1_j) in enumerate(
        zip(rss.tolist(), coef[:, :2, :2].tolist(), lag1.tolist(), strict=True)
    ):
        if not good[j]:
            continue
        scale, centre, k, n = meta[j]
        rss_a, rss_b, rss_one, rss_kink, rss_bend = rss_j
        (a0, a1), (b0, b1) = coef_j
        out[todo[j]] = Fits(
            left=(a0 + centre, a1 / scale),
            right=(b0 + centre, b1 / scale),
            sizes=(k, n - k),
            rss=(rss_a, rss_b),
            spreads=(float(np.sqrt(rss_a / k)), float(np.sqrt(rss_b / (n - k)))),
            lag1=(lag1_j[0], lag1_j[1]),
            rss_one=rss_one,
            rss_kink=rss_kink,
            rss_bend=rss_bend,
        )
    return out
