"""The session configuration: what a session must achieve and how it may spend its time.

It is written to ``session.json`` in the result directory when a session starts, so that
``pilot-sys run --resume DIR`` continues with exactly the same targets and
``pilot-sys report DIR`` can say what was asked for.

Presets (``--preset``): ``PRESETS`` below; every value can be overridden by its own option,
and ``pilot-sys run --help`` prints the table from it (``preset_rows``), so the two cannot
disagree. ``quick`` keeps rounds short: an interval needs about 50 independent samples, and
when the rounds differ from each other (a shared or throttled machine) the rounds, not the unit
readings within them, are what is independent; short rounds give many of them.

``ci_perc`` is the *full* width of the confidence interval (``ci_high - ci_low``) as a
fraction of the mean, Pilot's ``--ci-perc`` (the Pilot paper, §IV: "desired width of CI, default
to 10% of mean"); people see it as the half width it allows (10 % -> ± 5 %). ``min_rounds`` keeps
a few lucky rounds from ending a session: the CI of unit readings from a few rounds says little
about the round-to-round variation. It is at least 8, the fewest subsessions an interval is
trusted from (``stats.subsession.MIN_SUBSESSIONS``): only then can every subsession span a whole
round, so that rounds that differ show up in the interval.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pilot_sys.topology.prometheus_fleet import PrometheusFleet


class Preset(StrEnum):
    QUICK = "quick"
    NORMAL = "normal"
    STRICT = "strict"


PRESETS: dict[Preset, dict[str, Any]] = {
    # a first number in about a minute, within ± 10 %: on a shared host consecutive rounds are
    # correlated (the host's state changes over seconds), so session time, not the number of
    # rounds, buys independent samples; ± 5 % took minutes there, which is the normal preset's
    # job (benchmarks/results/quick_preset.md)
    Preset.QUICK: dict(
        ci_perc=0.20,
        confidence=0.95,
        autocorr_limit=0.1,
        session_limit=60.0,
        first_result_seconds=20.0,
        min_round_seconds=0.1,
        max_round_seconds=0.5,
        min_rounds=8,
    ),
    Preset.NORMAL: dict(
        ci_perc=0.10,
        confidence=0.95,
        autocorr_limit=0.1,
        session_limit=600.0,
        first_result_seconds=60.0,
        min_round_seconds=0.5,
        max_round_seconds=20.0,
        min_rounds=8,
    ),
    Preset.STRICT: dict(
        ci_perc=0.05,
        confidence=0.99,
        autocorr_limit=0.1,
        session_limit=3600.0,
        first_result_seconds=60.0,
        min_round_seconds=1.0,
        max_round_seconds=60.0,
        min_rounds=10,
    ),
}


class SessionConfig(BaseModel):
    """Targets and limits of one session (one or several interleaved workloads)."""

    model_config = ConfigDict(extra="forbid")

    preset: Preset = Preset.NORMAL
    ci_perc: float = Field(
        0.10, gt=0, lt=10, description="target full CI width as a fraction of |mean|"
    )
    confidence: float = Field(0.95, gt=0.5, lt=1)
    autocorr_limit: float = Field(
        0.1, gt=0, lt=1, description="|lag-1 autocorrelation| accepted after subsession merging"
    )
    session_limit: float | None = Field(600.0, gt=0, description="seconds; None: no limit")
    first_result_seconds: float = Field(
        60.0, gt=0, description="t of the k heuristic (Pilot docs, warm-up detection)"
    )
    k_rounds: int = Field(50, ge=2, description="n of the k heuristic: rounds expected within t")
    min_round_seconds: float = Field(
        0.5, ge=0, description="rounds shorter than this are stored, not analysed"
    )
    max_round_seconds: float = Field(
        20.0, gt=0, description="cap on one round's predicted duration"
    )
    min_rounds: int = Field(
        5, ge=1, description="analysed rounds needed before the session may stop"
    )
    max_rounds: int | None = Field(None, ge=1)
    work_min: float = Field(0.0, ge=0, description="a: the smallest valid work amount")
    work_max: float = Field(0.0, ge=0, description="b: the largest valid work amount")
    work_unit: str = ""
    integer_work: bool = True  # work amounts are whole numbers (Pilot's convention, %WORK_AMOUNT%)
    monitor: bool = True
    sample_rate_hz: float = Field(10.0, gt=0)
    sample_rate_source: str = "default"  # "default", "--sample-rate", "tuner"
    bottleneck_threshold: float = Field(0.8, gt=0, le=1)
    cut: str | None = None  # component id of the component under test, if the user names one
    hosts: list[str] = Field(default_factory=list)  # --host NAME=URL: remote hosts monitored too
    # --prometheus URL: each fleet's selector and its hosts' names and instances, as resolved
    prometheus: list[PrometheusFleet] = Field(default_factory=list)
    compare_p_threshold: float = Field(0.01, gt=0, lt=1)
    compare_pi: str | None = (
        None  # the PI an interleaved comparison ranks by (None: the first shared)
    )
    remove_nonstable: bool = True

    @model_validator(mode="after")
    def _range_ordered(self) -> SessionConfig:
        if self.work_max and self.work_max < self.work_min:
            raise ValueError(
                f"work amount range {self.work_min:g},{self.work_max:g}: MAX is below MIN"
            )
        if self.max_round_seconds < self.min_round_seconds:
            raise ValueError("max_round_seconds is below min_round_seconds")
        return self

    @property
    def fixed_work(self) -> bool:
        """True when every round does the same work (no usable range): WPS cannot be fitted."""
        return self.work_max <= self.work_min

    @classmethod
    def from_preset(cls, preset: Preset | str = Preset.NORMAL, **overrides: Any) -> SessionConfig:
        """A configuration from a preset; ``None`` overrides keep the preset's value."""
        p = Preset(preset)
        values: dict[str, Any] = {"preset": p, **PRESETS[p]}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def preset_rows() -> list[tuple[str, list[str]]]:
    """(what, one value per preset, in ``Preset`` order): the table ``run --help`` prints."""
    from pilot_sys import units

    def row(label: str, show: Any) -> tuple[str, list[str]]:
        return label, [show(PRESETS[p]) for p in Preset]

    return [
        row(
            "CI target (--ci-perc)",
            lambda p: f"{units.percent(p['ci_perc'], None)} ({units.target(p['ci_perc'])})",
        ),
        row("confidence", lambda p: units.percent(p["confidence"], None)),
        row("session limit (-s)", lambda p: f"{p['session_limit']:g} s"),
        row("min rounds", lambda p: str(p["min_rounds"])),
        row("round length", lambda p: f"{p['min_round_seconds']:g}-{p['max_round_seconds']:g} s"),
        row("first result within", lambda p: f"{p['first_result_seconds']:g} s"),
    ]
