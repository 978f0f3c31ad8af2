"""The session's verdict as the pictures and report.html show it: one place that reads it.

Every picture title, the HTML banner and the greyed rounds of the plots take the verdict from
:func:`verdict_view` and from nowhere else, so they cannot disagree with one another. Today it
is assembled from result.json's ``status``, ``stop_reason`` and ``bottleneck``; when result.json
carries a verdict of its own (status, reason, headline, governing component, excluded rounds),
:func:`verdict_view` is the one function to point at it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pilot_sys import units
from pilot_sys.session.result import SessionResult, Status

STATUS_WORDS: dict[str, str] = {
    Status.VALID: "valid",
    Status.INVALID: "INVALID",
    Status.LIMIT_REACHED: "limit reached",
    Status.WORKLOAD_FAILED: "workload failed",
    Status.INTERRUPTED: "interrupted",
    Status.INCOMPLETE: "incomplete",
}


@dataclass(frozen=True)
class VerdictView:
    """What a reader must see first."""

    status: str  # a ``Status`` value
    headline: str  # one line: the status and the result in words
    reason: str  # why the session ended this way
    advice: str  # the one thing to do next ("" when nothing is needed)
    cut: str | None  # the component under test
    governing: str | None  # the component that limited the result (the CUT when valid)
    hidden: tuple[str, ...] = ()  # hidden bottleneck components (ids, no direction)
    excluded_rounds: frozenset[int] = field(default_factory=frozenset)  # left out by the verdict
    flagged_rounds: frozenset[int] = field(default_factory=frozenset)  # own verdict: invalid

    @property
    def status_word(self) -> str:
        return STATUS_WORDS.get(self.status, str(self.status))


def component_of(signal: str) -> str:
    """``cpu:host (compute)`` -> ``cpu:host`` (the bottleneck section names a direction too)."""
    return signal.split(" (", 1)[0]


def _primary_estimate(result: SessionResult) -> str:
    """``write_bw 2.17 GiB/s ± 3.2 %`` of the first PI with a mean, or ``no result``."""
    for w in result.workloads:
        network = units.network_traffic(w.command, result.bottleneck.cut)
        for p in w.pis.values():
            if p.mean is None:
                continue
            shown = units.estimate(p.mean, p.ci_low, p.ci_high, p.unit, network)
            return f"{p.name} {shown}" + ("" if p.ci_low is not None else " (no interval)")
    return "no result"


def verdict_view(result: SessionResult) -> VerdictView:
    """The verdict of ``result`` (see the module docstring: the one place to change when
    result.json carries its own verdict)."""
    b = result.bottleneck
    hidden = tuple(dict.fromkeys(component_of(h) for h in b.hidden_bottlenecks))
    status = str(result.status)
    estimate = _primary_estimate(result)
    cut = b.cut
    governing: str | None = cut if b.valid else None
    advice = ""
    if result.status is Status.INVALID:
        where = ", ".join(hidden) or "another component"
        governing = hidden[0] if hidden else None
        headline = f"INVALID: {where} limited the benchmark, not {cut or 'the CUT'}"
        reason = f"hidden bottleneck at {', '.join(b.hidden_bottlenecks) or '?'}"
        advice = (
            f"Free {where} (other processes, a quieter host) and run again, or benchmark "
            f"{where} itself with --cut."
        )
    elif result.status is Status.VALID:
        headline = f"valid: {estimate}"
        reason = result.stop_reason
    elif result.status in (Status.LIMIT_REACHED, Status.INCOMPLETE):
        headline = f"{STATUS_WORDS[result.status]}: {estimate}"
        reason = result.stop_reason
        advice = (
            "Give it more time (a longer -s, or --preset normal) or a quieter host; "
            f"`pilot-sys run --resume {result.result_dir}` continues this session."
        )
    else:
        headline = f"{STATUS_WORDS.get(result.status, status)}: {estimate}"
        reason = result.stop_reason
        if result.status is Status.INTERRUPTED:
            advice = f"`pilot-sys run --resume {result.result_dir}` continues this session."
        elif result.status is Status.WORKLOAD_FAILED:
            advice = "See the notes for the workload's failure; the rounds before it are kept."
    return VerdictView(
        status=status,
        headline=headline,
        reason=reason,
        advice=advice,
        cut=cut,
        governing=governing,
        hidden=hidden,
        excluded_rounds=frozenset(),  # today no verdict leaves rounds out of the analysis
        flagged_rounds=frozenset(b.rounds_invalid),
    )
