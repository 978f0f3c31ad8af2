"""The answer of ``pilot-sys analyze``: which samples the CI uses, and the ``--json`` object.

A module of its own so that importing the command (``--help``, a bad option) loads neither
numpy nor pydantic: ``pilot_sys.cli.analyze`` imports it only once it reads numbers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from pilot_sys.stats.ci import Summary  # the JSON model nests it

WarmupMethod = Literal["edm", "steady", "none"]


class StablePart(BaseModel):
    """Which samples the CI uses, and why."""

    model_config = ConfigDict(frozen=True)

    method: WarmupMethod
    begin: int  # inclusive, 0-based
    end: int  # exclusive
    removed: list[tuple[int, int]]  # removed index ranges, [begin, end)
    found: bool  # False: the method found no stable part and all samples are used
    # the changes of the steady state after its end, in words (never averaged into the mean)
    later_changes: list[str] = []


class AnalyzeOutput(Summary):
    """The ``--json`` object: the stable part's summary at the top level, the raw one nested."""

    source: str
    column: str | None
    unit: str | None
    stable_part: StablePart
    raw: Summary | None  # all samples; None when nothing was removed (then it equals the top level)
