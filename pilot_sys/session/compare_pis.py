"""Every PI two results share, side by side, each with a verdict (as ``pyperf compare_to`` gives
one): A's and B's means with their intervals, the difference A - B with its Welch interval, the
relative change, Welch's p, and whether A is faster, B is faster, the data cannot separate them
yet (and about how many more rounds would), or they cannot decide at all (and why).

Used by ``compare DIR_A DIR_B`` (saved results) and ``compare --run`` (the workloads of one
interleaved session, each against the first), so both print the same table. Welch's test takes
each side as (mean, variance of one subsession mean, number of subsessions), which
``result.json`` keeps (the Pilot paper, §III-F).

"Separated" is the interleaved comparison's rule (``interleave.compare_results``): the two
intervals do not overlap, or Welch's p is below the threshold.

A rate's interval wider than the rate itself (``± 50 %`` or more) says nothing about where the
rate is: a rate's interval is computed on the reciprocal scale (harmonic mean; the WPS fit's
``v`` is one over a slope) and mapped back, and one that wide means the reciprocal's interval
nearly reached zero, where that mapping and the delta-method variance Welch's test uses break
down. A comparison with such an interval cannot decide, even when its p-value is small, and the
row says why instead of ranking on it. An arithmetic mean's interval stays valid however wide
it is relative to a mean near zero (its test just finds nothing); a proportion's (Wilson) too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pilot_sys import units
from pilot_sys.session.pi_table import PIRow, PITable, PIValue
from pilot_sys.workload.primary import primary_pi

if TYPE_CHECKING:
    from pilot_sys.session.result import PIResult, SessionResult
    from pilot_sys.stats.compare import SampleStats

IMPLAUSIBLE_HALF_WIDTH = 0.5  # ± 50 %: a rate's interval as wide as the rate itself


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label, its PI results and how many rounds it analysed."""

    label: str
    pis: Mapping[str, PIResult]
    rounds: int


def implausible(pi_type: str, relative_half_width: float | None) -> bool:
    """Whether a rate's interval is too wide to compare on (see the module docstring)."""
    return (
        pi_type == "harmonic"
        and relative_half_width is not None
        and relative_half_width >= IMPLAUSIBLE_HALF_WIDTH
    )


def shared_pis(a: Mapping[str, PIResult], b: Mapping[str, PIResult]) -> list[str]:
    """PIs both report, in A's order."""
    return [name for name in a if name in b]


def _has_ci(p: PIResult) -> bool:
    return p.mean is not None and p.ci_low is not None and p.ci_high is not None


def _value(p: PIResult, factor: float = 1.0) -> PIValue:
    scaled = [None if v is None else v * factor for v in (p.mean, p.ci_low, p.ci_high)]
    return PIValue(
        mean=scaled[0],
        ci_low=scaled[1],
        ci_high=scaled[2],
        relative_half_width=units.relative_half_width(*scaled),
    )


def sample_stats(p: PIResult, factor: float = 1.0) -> SampleStats | None:
    """Welch's inputs from a PI result on the PI's own scale, times ``factor`` (a unit
    conversion); None without subsession statistics.

    A harmonic PI's subsession variance is of reciprocals; the delta method maps it to the rate
    scale (Var(1/X) ~ Var(X) / m^4), as ``SampleStats.from_summary`` does for a live summary."""
    from pilot_sys.stats.compare import SampleStats

    if p.mean is None or p.subsession_variance is None or (p.subsession_count or 0) < 2:
        return None
    assert p.subsession_count is not None
    variance = p.subsession_variance
    if p.pi_type == "harmonic":
        variance = variance * p.mean**4
    return SampleStats(
        mean=p.mean * factor, variance=variance * factor**2, count=p.subsession_count
    )


def more_rounds(extra: int | None, p: PIResult, rounds: int) -> int | None:
    """Rounds that bring ``extra`` more independent values (subsessions) of ``p``.

    A subsession holds ``subsession_size`` samples; a PI read once per round (``readings``, the
    WPS fit, or an interval over round means) has one sample per round, a PI of unit readings
    ``sample_size / rounds`` of them."""
    if extra is None or extra == 0:
        return extra
    raw = extra * (p.subsession_size or 1)
    if (
        p.source != "unit_readings"
        or p.interval_basis == "rounds"
        or rounds <= 0
        or p.sample_size <= 0
    ):
        return raw
    return math.ceil(raw / max(p.sample_size / rounds, 1.0))


def _unit_factor(unit_a: str, unit_b: str) -> float | None:
    """The factor taking B's unit to A's; None when they measure different things."""
    if unit_a == unit_b:
        return 1.0
    from pilot_sys.quantity import conversion_factor, parse_unit

    qa, qb = parse_unit(unit_a), parse_unit(unit_b)
    return conversion_factor(qb, qa) if qa is not None and qb is not None else None


def _no_interval(label: str, p: PIResult) -> str:
    if p.mean is None:
        return f"{label} has no result ({p.sample_size} samples)"
    needed = f", about {p.required_sample_size} needed" if p.required_sample_size else ""
    return f"{label} has no interval yet ({p.sample_size} samples{needed})"


def compare_pi(name: str, a: Side, b: Side, confidence: float, threshold: float) -> PIRow:
    """One PI of both sides: values, Welch's test and the verdict."""
    from pilot_sys.stats.compare import welch

    pa, pb = a.pis[name], b.pis[name]
    factor = _unit_factor(pa.unit, pb.unit)
    row = PIRow(
        pi=name,
        unit=pa.unit,
        higher_is_better=pa.higher_is_better,
        a=_value(pa),
        b=_value(pb, factor or 1.0),
        verdict="cannot_decide",
    )
    if factor is None:
        row.reason = (
            f"{a.label} reports {name} in {pa.unit or 'no unit'}, {b.label} in "
            f"{pb.unit or 'no unit'}: they measure different things"
        )
        return row
    if row.a.mean is not None and row.b.mean is not None:
        row.difference = row.a.mean - row.b.mean
        row.relative_difference = row.difference / abs(row.b.mean) if row.b.mean else None
    missing = [_no_interval(side.label, p) for side, p in ((a, pa), (b, pb)) if not _has_ci(p)]
    if missing:
        row.reason = "; ".join(missing)
        return row
    assert row.a.ci_low is not None and row.a.ci_high is not None
    assert row.b.ci_low is not None and row.b.ci_high is not None
    row.cis_overlap = row.a.ci_low <= row.b.ci_high and row.b.ci_low <= row.a.ci_high
    sa, sb = sample_stats(pa), sample_stats(pb, factor)
    extra: tuple[int | None, int | None] = (None, None)
    if sa is not None and sb is not None:
        w = welch(sa, sb, confidence=confidence, threshold=threshold)
        row.p_value, row.difference_ci_low, row.difference_ci_high = w.p_value, w.ci.low, w.ci.high
        extra = (w.additional_a, w.additional_b)
    wide = [
        f"{side.label}'s interval ({units.plus_minus(v.relative_half_width)}) is wider than the "
        "rate itself"
        for side, p, v in ((a, pa, row.a), (b, pb, row.b))
        if implausible(p.pi_type, v.relative_half_width)
    ]
    if wide:
        row.reason = f"{' and '.join(wide)}: it says nothing about where the rate is"
        return row
    separated = not row.cis_overlap or (row.p_value is not None and row.p_value < threshold)
    if separated:
        assert row.difference is not None
        a_faster = (row.difference > 0) == row.higher_is_better
        row.verdict = "a_faster" if a_faster else "b_faster"
        row.reason = (
            "the intervals do not overlap" if not row.cis_overlap else f"Welch p < {threshold:g}"
        )
        return row
    row.verdict = "not_significant"
    row.more_rounds_a = more_rounds(extra[0], pa, a.rounds)
    row.more_rounds_b = more_rounds(extra[1], pb, b.rounds)
    if row.p_value is None:
        row.reason = f"the intervals overlap (no subsession statistics for Welch's test on {name})"
    elif row.more_rounds_a is None:
        row.reason = "the means are practically equal: more rounds will not separate them"
    else:
        row.reason = f"Welch p = {row.p_value:.3g} is not below {threshold:g}"
    return row


def build_table(
    a: Side, b: Side, confidence: float, threshold: float, first: str | None = None
) -> PITable:
    """Every shared PI compared, ``first`` (else A's primary PI) at the top."""
    names = shared_pis(a.pis, b.pis)
    lead = first if first in names else primary_pi(a.pis[n] for n in names)
    ordered = ([lead] if lead is not None else []) + [n for n in names if n != lead]
    return PITable(
        a=a.label,
        b=b.label,
        confidence=confidence,
        threshold=threshold,
        primary=lead,
        rows=[compare_pi(n, a, b, confidence, threshold) for n in ordered],
    )


def session_warning(label: str, result: SessionResult) -> str | None:
    """What a comparison inherits from a session that is not valid; None for a valid one."""
    status = str(result.status)
    if status == "valid":
        return None
    stop = result.stop_reason
    hidden = ", ".join(result.bottleneck.hidden_bottlenecks) or "an unnamed component"
    what, consequence = {
        "invalid": (
            f"is invalid: hidden bottleneck at {hidden} (component under test: "
            f"{result.bottleneck.cut or 'unknown'}; stopped: {stop})",
            "a difference may be that bottleneck's rather than the workload's",
        ),
        "limit_reached": (
            f"reached its limit before every CI target ({stop})",
            "its intervals are wider than asked for",
        ),
        "interrupted": (f"was interrupted ({stop})", "it rests on the rounds measured before that"),
        "workload_failed": (
            f"ended with a workload failure ({stop})",
            "it rests on the rounds before the failure",
        ),
        "incomplete": (f"is incomplete ({stop})", "too few rounds for any result"),
    }.get(status, (f"ended with status {status} ({stop})", "read its report first"))
    return f"{label} {what}; the comparison inherits it: {consequence}"
