"""Ordinary least squares of a straight line, with the standard errors of its two coefficients.

What ``scipy.stats.linregress`` returns, from numpy alone: importing scipy.stats takes 1-2 s
(it builds every distribution's docstring), and the round loop fits lines (the WPS fit, the
round means' trend) long before anything else needs scipy.stats; paying that at the first fit
stalls a session, paying it before the first round delays every result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LineFit:
    slope: float
    intercept: float
    stderr: float  # of the slope
    intercept_stderr: float


def line_fit(x: np.ndarray, y: np.ndarray) -> LineFit:
    """y = intercept + slope x by least squares; needs at least 3 points and two distinct x."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    n = x.size
    if n != y.size or n < 3:
        raise ValueError("line_fit needs x and y of the same size, at least 3 points")
    mx, my = float(x.mean()), float(y.mean())
    dx, dy = x - mx, y - my
    sxx = float(dx @ dx)
    if sxx == 0.0:
        raise ValueError("line_fit needs at least two distinct x values")
    slope = float(dx @ dy) / sxx
    intercept = my - slope * mx
    resid = dy - slope * dx
    s2 = float(resid @ resid) / (n - 2)  # residual variance, n - 2 degrees of freedom
    stderr = math.sqrt(s2 / sxx)
    intercept_stderr = stderr * math.sqrt(float(x @ x) / n)
    return LineFit(slope, intercept, stderr, intercept_stderr)
