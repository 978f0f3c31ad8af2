"""Performance-index types: which average a PI's samples call for (the Pilot paper, §III-D).

* arithmetic: plain mean, e.g. latencies in seconds.
* harmonic: for rates (bytes/s, ops/s) of equal work units. The average rate is total work over
  total time, i.e. the harmonic mean of the rates; the arithmetic mean of rates overstates it.
  It is analysed on the reciprocal scale (time per unit of work), where the samples add up, and
  the interval is mapped back: 1/x is decreasing, so the endpoints swap.
* proportion: 0/1 outcomes (e.g. "request met its deadline"); the mean is the success fraction.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from pilot_sys.errors import BadInput


class PIType(StrEnum):
    """How a performance index's samples are averaged (the Pilot paper, §III-D).

    Defined here, with the statistics that depend on it, so that ``pilot_sys.stats`` needs no
    workload code; ``pilot_sys.workload.base`` re-exports it for workload authors.
    """

    ARITHMETIC = "arithmetic"  # e.g. latency in seconds
    HARMONIC = "harmonic"  # rates such as throughput: the mean of work over time
    PROPORTION = "proportion"  # binomial, samples are 0/1


def validate(samples: np.ndarray, pi_type: PIType, where: str = "samples") -> None:
    """Raise BadInput when the samples cannot be averaged as ``pi_type``."""
    if pi_type is PIType.HARMONIC and np.any(samples <= 0):
        bad = int(np.argmax(samples <= 0))
        raise BadInput(
            where,
            f"sample {bad + 1} is {samples[bad]:g}; a harmonic mean of rates needs values > 0",
        )
    if pi_type is PIType.PROPORTION and np.any((samples != 0) & (samples != 1)):
        bad = int(np.argmax((samples != 0) & (samples != 1)))
        raise BadInput(
            where, f"sample {bad + 1} is {samples[bad]:g}; a proportion needs 0/1 outcomes"
        )
    if samples.size and pi_type is not PIType.PROPORTION:
        _check_magnitude(samples, pi_type, where)


def _check_magnitude(samples: np.ndarray, pi_type: PIType, where: str) -> None:
    """Refuse magnitudes whose squares leave double precision.

    Variances sum n squared deviations: beyond sqrt(max / n) they overflow to inf, and below
    sqrt(tiny) they underflow to 0, so every later number would be nan or nonsense. Naming the
    sample beats printing such numbers. Both scales are checked: warm-up removal reads the raw
    samples, the interval their reciprocals (harmonic).
    """
    high = np.sqrt(np.finfo(np.float64).max / samples.size) / 4.0
    low = np.sqrt(np.finfo(np.float64).tiny) * 1e10
    with np.errstate(over="ignore", divide="ignore"):
        scales = [np.abs(samples)] + ([np.abs(1.0 / samples)] if pi_type is PIType.HARMONIC else [])
    for magnitude in scales:
        # two reductions decide; the mask that names the sample is formed only when one fails
        largest = float(np.max(magnitude))
        smallest = float(np.min(magnitude, where=magnitude > 0, initial=np.inf))
        if largest < high and not smallest < low:
            continue
        bad_mask = ~(magnitude < high) | ((magnitude > 0) & (magnitude < low))
        if np.any(bad_mask):
            bad = int(np.argmax(bad_mask))
            size = "large" if samples[bad] >= 1 else "small"
            raise BadInput(
                where,
                f"sample {bad + 1} is {samples[bad]:g}, too {size} for double-precision "
                "statistics (its square leaves the float range); rescale the data, "
                "e.g. GiB instead of bytes",
            )


#: Magnitudes a measured value may have: any number of them, their squares and reciprocals
#: stay within double precision (the checks above then never refuse a session's data).
MEASURABLE_MAX = 1e140
MEASURABLE_MIN = 1e-140


def unmeasurable(values: np.ndarray) -> np.ndarray:
    """Mask of the values no statistics here can use: NaN, infinities, and magnitudes beyond
    ``MEASURABLE_MAX`` or (non-zero) below ``MEASURABLE_MIN``. A workload's reading outside is
    a failed measurement, found when its round is parsed rather than when the session's
    statistics would refuse every round."""
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        return ~(magnitude <= MEASURABLE_MAX) | ((magnitude > 0) & (magnitude < MEASURABLE_MIN))


def to_analysis_scale(samples: np.ndarray, pi_type: PIType) -> np.ndarray:
    """The values whose arithmetic mean is analysed: reciprocals for harmonic, else the samples."""
    return 1.0 / samples if pi_type is PIType.HARMONIC else samples


def from_analysis_scale(value: float, pi_type: PIType) -> float:
    """Map a mean on the analysis scale back to the PI's own scale."""
    if pi_type is PIType.HARMONIC:
        return 1.0 / value if value > 0 else float("inf")
    return value


def interval_from_analysis_scale(low: float, high: float, pi_type: PIType) -> tuple[float, float]:
    """Map CI endpoints back; for harmonic the reciprocal swaps them (a non-positive low end is
    unbounded)."""
    if pi_type is PIType.HARMONIC:
        return 1.0 / high, (1.0 / low if low > 0 else float("inf"))
    return low, high


def point_estimate(samples: np.ndarray, pi_type: PIType) -> float:
    """The PI's average of all samples: arithmetic, harmonic or the success fraction."""
    return from_analysis_scale(float(np.mean(to_analysis_scale(samples, pi_type))), pi_type)
