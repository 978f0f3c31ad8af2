"""What every output parser returns, and the error it raises on output it cannot read.

Parsers are pure functions of a round's captured output, so they live apart from the runner:
the runner captures, a parser reads, and either can be tested alone against real fixtures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.errors import WorkloadFailed
from pilot_sys.workload.base import PISpec


class CapturedOutput(BaseModel):
    """One round's raw output as the runner kept it."""

    stdout: str = ""
    stderr: str = ""
    stdout_name: str = "stdout.txt"  # how error messages name the output (path or file name)
    stderr_name: str = "stderr.txt"
    round_dir: Path | None = None  # where log files the workload wrote are (fio's bw/lat logs)


class ParsedOutput(BaseModel):
    """Readings (one per PI), unit readings (time-ordered, per PI) and the PIs' specs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    specs: list[PISpec] = Field(default_factory=list)
    readings: dict[str, float] = Field(default_factory=dict)
    unit_readings: dict[str, np.ndarray] = Field(default_factory=dict)
    unit_timestamps: dict[str, np.ndarray] = Field(default_factory=dict)  # seconds since round start
    work_done: float | None = None  # bytes the workload reports it moved, for the WPS fit
    warnings: list[str] = Field(default_factory=list)

    def add(self, spec: PISpec, value: float) -> None:
        """Record one reading together with its spec (keeps specs and readings in step)."""
        if spec.name not in self.readings:
            self.specs.append(spec)
        self.readings[spec.name] = float(value)

    def add_units(self, name: str, values: np.ndarray, timestamps: np.ndarray | None = None) -> None:
        """Record a PI's unit readings; a PI with unit readings must also have a reading."""
        if values.size == 0:
            return
        self.unit_readings[name] = np.asarray(values, dtype=float)
        if timestamps is not None:
            self.unit_timestamps[name] = np.asarray(timestamps, dtype=float)


class MalformedOutput(WorkloadFailed):
    """The round's output is not what the parser expects: a failed round, reported in one line.

    ``where`` names the output file (with line:column when known), like ``BadInput`` does.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")
