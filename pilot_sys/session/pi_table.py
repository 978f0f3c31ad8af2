"""The table of every PI two results share, as result.json and ``compare --json`` keep it: each
side's value, the difference with its Welch interval, the relative change, Welch's p and the
verdict. ``pilot_sys.session.compare_pis`` builds it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["a_faster", "b_faster", "not_significant", "cannot_decide"]


class PIValue(BaseModel):
    """A PI's value on one side of the comparison, in the row's unit."""

    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    relative_half_width: float | None = None  # the ± of the interval, a fraction of |mean|


class PIRow(BaseModel):
    """One PI of both sides compared."""

    pi: str
    unit: str
    higher_is_better: bool
    a: PIValue
    b: PIValue
    difference: float | None = None  # A - B
    difference_ci_low: float | None = None  # Welch interval of A - B
    difference_ci_high: float | None = None
    relative_difference: float | None = None  # (A - B) / |B|
    p_value: float | None = None  # Welch's two-sided p
    cis_overlap: bool | None = None
    verdict: Verdict
    more_rounds_a: int | None = (
        None  # not significant: rounds of A and B that would give p < threshold
    )
    more_rounds_b: int | None = None
    reason: str = ""  # why this verdict, in one line


class PITable(BaseModel):
    """Every PI both sides report, the ranked (or primary) one first."""

    a: str  # the sides' labels
    b: str
    confidence: float
    threshold: float
    primary: str | None = Field(None, description="the PI ranked by: --pi, else A's primary PI")
    rows: list[PIRow] = Field(default_factory=list)
    setup_differs: list[str] = Field(
        default_factory=list,
        description="what the two set-ups do not share (work amounts, kernel, ...): a "
        "difference in the table may be the set-up's",
    )
