"""The session's verdict as the pictures and report.html show it: one place that reads it.

Every picture title, the HTML banner and the greyed rounds of the plots take the verdict from
:func:`verdict_view` and from nowhere else, so they cannot disagree with one another. The view
is result.json's ``verdict`` (``pilot_sys.session.verdict.verdict_of``, which rebuilds one for
a result written before verdicts existed): its status, headline, lines, governing component,
hidden bottlenecks and excluded rounds, in the words the summary and report.md use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pilot_sys.session.result import Reason, SessionResult, Status
from pilot_sys.session.verdict import verdict_of

STATUS_WORDS: dict[str, str] = {
    Status.VALID: "valid",
    Status.INVALID: "INVALID",
    Status.LIMIT_REACHED: "limit reached",
    Status.WORKLOAD_FAILED: "workload failed",
    Status.INTERRUPTED: "interrupted",
    Status.INCOMPLETE: "incomplete",
}

#: how a round excluded by the verdict is named in every picture
EXCLUDED_WORDS = "excluded: hidden bottleneck"


@dataclass(frozen=True)
class VerdictView:
    """What a reader must see first."""

    status: str  # a ``Status`` value
    headline: str  # the verdict's headline, as the summary prints it
    details: tuple[str, ...]  # why / excluded / bottleneck check / which governs, in that order
    advice: str  # the verdict's one thing to do next ("" when nothing is needed)
    cut: str | None  # the component under test
    governing: str | None  # the component whose limit the number may be
    hidden: tuple[str, ...] = ()  # hidden bottleneck components (ids, no direction)
    excluded_rounds: frozenset[int] = field(default_factory=frozenset)  # left out by the verdict
    # rounds that saw a hidden bottleneck but were too short to be judged on their own
    flagged_rounds: frozenset[int] = field(default_factory=frozenset)

    @property
    def status_word(self) -> str:
        return STATUS_WORDS.get(self.status, str(self.status))


def component_of(signal: str) -> str:
    """``cpu:host (compute)`` -> ``cpu:host`` (the verdict names a direction too)."""
    return signal.split(" (", 1)[0]


def verdict_view(result: SessionResult) -> VerdictView:
    """The verdict of ``result`` as the pictures show it. Hidden bottlenecks are those over the
    included rounds taken together and those the excluded rounds were excluded for (the
    headline names both)."""
    v = verdict_of(result)
    labels = [*v.hidden_bottlenecks, *(c for e in v.excluded_rounds for c in e.components)]
    hidden = tuple(dict.fromkeys(component_of(h) for h in labels))
    if v.reason is Reason.TOO_MANY_EXCLUDED and v.governing and v.governing not in hidden:
        hidden = (v.governing, *hidden)
    details = (
        *([f"why: {v.why}"] if v.why else []),
        *([f"excluded: {v.excluded}"] if v.excluded else []),
        v.bottleneck,
        *([v.governs] if v.governs else []),
    )
    return VerdictView(
        status=str(v.status),
        headline=v.headline,
        details=details,
        advice=v.next_step or "",
        cut=v.cut,
        governing=v.governing,
        hidden=hidden,
        excluded_rounds=frozenset(e.index for e in v.excluded_rounds),
        flagged_rounds=frozenset(result.bottleneck.rounds_unjudged),
    )
